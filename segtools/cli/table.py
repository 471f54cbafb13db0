"""Text tables that stream: rows are printed as they come, in flat memory, whatever the tree.

A broker holds thousands of partitions and tens of thousands of segments; laying out a whole
table before printing its first line (what a general table library does: it measures every
cell to share the width out) costs more than reading the segments did, and holds every row in
memory. Here column widths are decided once, up front, from each column's known width (dates,
sizes) and a bounded sample of the first rows; every later row is printed at once.

Two layouts, one rule each (docs/cli.md, "Text tables"):

* **one line per row** (in a pipe, or on a terminal wide enough): cells padded to their
  column's width and separated by two spaces, never cut and never wrapped; a cell wider than
  its column pushes the rest of its line right. ``grep``, ``sort`` and ``awk`` see every row
  whole.
* **wrapped** (a terminal narrower than that line): each row takes several lines; the columns
  are packed in order into lines that fit, continuation lines indented by four spaces, and a
  long cell that ends a line is wrapped at word boundaries under itself. Every cell's content
  is shown: nothing is cut to ``…``, and no column is dropped.

Text is escaped for the terminal by the caller (:func:`segtools.cli.render.terminal_safe`).
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from segtools.cli.render import terminal_safe

#: Rows whose widths decide the layout: enough to see the usual cells, bounded so the first
#: line of a 50,000-row table is printed at once.
SAMPLE_ROWS = 200
GAP = "  "
INDENT = "    "
#: Below this the wrapped layout has no room left to be readable; the terminal wraps instead.
MIN_WIDTH = 40


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its header, right-aligned (numbers) or not, and its width when every
    value has one known length (an ISO time), so the sample need not find it."""

    name: str
    right: bool = False
    width: int = 0


def terminal_width(out: TextIO) -> int | None:
    """The width to fit, or None for one line per row: a terminal's columns (``COLUMNS``
    first, as shells export it), None when ``out`` is not a terminal."""
    try:
        if not out.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(out.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 80


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each column goes: ``lines[k]`` lists the column indexes printed on the row's
    k-th line, each padded to ``widths[i]``."""

    widths: tuple[int, ...]
    lines: tuple[tuple[int, ...], ...]
    width: int | None  # the terminal's width, None in a pipe

    def render(self, cells: Sequence[str], right: Sequence[bool]) -> str:
        if self.width is None and len(self.lines) == 1:  # one line per row (a pipe)
            return self._line(cells, right)
        out = []
        for k, cols in enumerate(self.lines):
            lead = INDENT if k else ""
            parts = []
            for j, i in enumerate(cols):
                text = cells[i]
                if j == len(cols) - 1:
                    parts.append(text.rjust(self.widths[i]) if right[i] else text)
                else:
                    parts.append(text.rjust(self.widths[i]) if right[i]
                                 else text.ljust(self.widths[i]))
            line = lead + GAP.join(parts)
            if self.width is not None and len(line) > self.width and cols:
                line = self._wrap_last(lead, parts)
            out.append(line.rstrip())
        return "\n".join(out)

    def _line(self, cells: Sequence[str], right: Sequence[bool]) -> str:
        """The row on one line, every column in order: what :meth:`render` does for one line
        of all the columns with no width to fit, in one pass (tables of 50,000 rows)."""
        widths = self.widths
        last = len(cells) - 1
        parts = [text.rjust(widths[i]) if right[i] else
                 (text if i == last else text.ljust(widths[i]))
                 for i, text in enumerate(cells)]
        return GAP.join(parts).rstrip()

    def _wrap_last(self, lead: str, parts: list[str]) -> str:
        """The line's last cell wrapped at word boundaries under its own start (or under the
        continuation indent, when it starts too far right to be readable there)."""
        head = lead + GAP.join(parts[:-1]) + (GAP if len(parts) > 1 else "")
        start = len(head) if self.width - len(head) >= 20 else len(INDENT)
        room = max(self.width - start, 20)
        pieces = textwrap.wrap(parts[-1], room, break_on_hyphens=False) or [""]
        if start != len(head):
            return head.rstrip() + "\n" + "\n".join(" " * start + p for p in pieces)
        return head + ("\n" + " " * start).join(pieces)


def layout(columns: Sequence[Column], sample: Sequence[Sequence[str]],
           width: int | None) -> Layout:
    """Widths from the headers, the known widths and the sample; then the lines: all columns
    on one when there is no width to fit (or they fit), packed in order otherwise."""
    widths = tuple(max(len(c.name), c.width, *(len(r[i]) for r in sample))
                   for i, c in enumerate(columns))
    every = tuple(range(len(columns)))
    if width is None or len(GAP.join(" " * w for w in widths)) <= width:
        return Layout(widths, (every,), width)
    width = max(width, MIN_WIDTH)
    # one long name in the sample must not take half of every row: it pushes its own line
    widths = tuple(min(w, max(len(c.name), c.width, width // 2))
                   for w, c in zip(widths, columns, strict=True))
    lines: list[tuple[int, ...]] = []
    current: list[int] = []
    used = 0
    for i, w in enumerate(widths):
        need = w if not current else used + len(GAP) + w
        lead = len(INDENT) if lines else 0
        if current and lead + need > width:
            lines.append(tuple(current))
            current, used = [i], w
        else:
            current.append(i)
            used = need
    lines.append(tuple(current))
    return Layout(widths, tuple(lines), width)


class TextTable:
    """Rows printed as they come. The first :data:`SAMPLE_ROWS` rows are held to fix the
    widths, then printed with the header; every later row is printed at once. Call
    :meth:`close` (or use ``with``) to print what is still held."""

    def __init__(self, columns: Sequence[Column], out: TextIO | None = None, *,
                 width: int | bool | None = True, header: bool = True,
                 sample: int = SAMPLE_ROWS):
        self.columns = tuple(columns)
        self.out = out if out is not None else sys.stdout
        self.width = terminal_width(self.out) if width is True else (width or None)
        self.header = header
        self.sample = sample
        self._right = tuple(c.right for c in self.columns)
        self._held: list[tuple[str, ...]] = []
        self._layout: Layout | None = None
        self.rows = 0

    def __enter__(self) -> TextTable:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, *cells: str) -> None:
        self.rows += 1
        if self._layout is not None:
            self.out.write(self._layout.render(cells, self._right) + "\n")
            return
        self._held.append(cells)
        if len(self._held) >= self.sample:
            self._flush()

    def _flush(self) -> None:
        self._layout = layout(self.columns, self._held, self.width)
        if self.header:
            names = [c.name for c in self.columns]
            self.out.write(self._layout.render(names, self._right) + "\n")
        for cells in self._held:
            self.out.write(self._layout.render(cells, self._right) + "\n")
        self._held = []

    def close(self) -> None:
        if self._layout is None and self._held:
            self._flush()


def wrap_line(line: str, width: int | None) -> str:
    """One line as :class:`Lines` lays it out: whole in a pipe; on a terminal wrapped at its
    width, the continuation lines indented under the line's own indent."""
    if width is None or len(line) <= width:
        return line
    lead = line[:len(line) - len(line.lstrip(" "))]
    return textwrap.fill(line, width, subsequent_indent=lead + INDENT, break_on_hyphens=False,
                         drop_whitespace=True)


class Wrapping:
    """A text stream for the commands that print lines rather than tables (``diverge``,
    ``transactions``, ``find``, ...): each whole line is laid out by :func:`wrap_line`, so on
    a terminal nothing runs past its width and in a pipe every line passes whole, whatever
    ``COLUMNS`` says. Text is escaped by the caller."""

    def __init__(self, out: TextIO):
        self.out = out
        self.width = terminal_width(out)
        self._pending = ""

    def write(self, text: str) -> int:
        if self.width is None:
            return self.out.write(text)
        *done, self._pending = (self._pending + text).split("\n")
        for line in done:
            self.out.write(wrap_line(line, self.width) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.out.write(wrap_line(self._pending, self.width))
            self._pending = ""
        self.out.flush()


class Lines:
    """Plain lines, escaped for the terminal; on a terminal, wrapped at its width with the
    continuation lines indented (a pipe gets each line whole)."""

    def __init__(self, out, width: int | None):
        self.out, self.width = out, width

    def __call__(self, text: str = "", indent: str = "") -> None:
        text = indent + terminal_safe(text)
        if self.width is not None and len(text) > self.width:
            text = textwrap.fill(text, self.width, subsequent_indent=indent + INDENT,
                                 break_on_hyphens=False)
        self.out.write(text + "\n")

    def table(self, columns) -> TextTable:
        return TextTable(columns, self.out, width=self.width)
