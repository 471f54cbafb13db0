"""How ``segtools <command> --help`` reads: plain text, wrapped to the terminal it is shown in.

Each command's description is its module docstring, so the text a developer reads in the
source and the text a user reads in the terminal cannot drift apart. Docstrings carry light
reST (````literal````, ``**strong**``, ``:func:`name```), which means nothing on a terminal:
the formatter drops the markup and keeps the words. Prose paragraphs and ``- `` list items
are re-wrapped to the terminal width (``argparse`` reads ``COLUMNS``, else the terminal, else
80 columns); indented blocks (the ``examples:`` lines) are kept as written, one example a line,
so they can be copied whole.
"""

from __future__ import annotations

import argparse
import re
import textwrap

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)
_STRONG = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_LIST_ITEM = re.compile(r"^- ", re.MULTILINE)


def plain(text: str) -> str:
    """``text`` without reST markup: roles, literals and strong emphasis become their words."""
    return _STRONG.sub(r"\1", _LITERAL.sub(r"\1", _ROLE.sub(r"\1", text)))


def _is_verbatim(lines: list[str]) -> bool:
    """An indented block, or a heading line (``examples:``) followed by one: kept as written."""
    body = lines[1:] if lines[0].rstrip().endswith(":") and len(lines) > 1 else lines
    return all(line.startswith("  ") for line in body)


def _fill(words: str, width: int, first: str, rest: str) -> str:
    return textwrap.fill(words, width, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False)


def fill_paragraphs(text: str, width: int, indent: str = "") -> str:
    """Plain ``text`` re-wrapped to ``width``: prose and list items flowed, indented blocks
    kept line for line."""
    out = []
    for block in _PARAGRAPH_BREAK.split(plain(text).strip("\n")):
        lines = block.splitlines()
        if not lines:
            continue
        if _is_verbatim(lines):
            out.append("\n".join(indent + line.rstrip() for line in lines))
        elif _LIST_ITEM.match(block.lstrip()):
            items = _LIST_ITEM.split(block.lstrip())[1:]
            out.append("\n".join(_fill(" ".join(item.split()), width, indent + "- ",
                                       indent + "  ") for item in items))
        else:
            out.append(_fill(" ".join(block.split()), width, indent, indent))
    return "\n\n".join(out)


class HelpFormatter(argparse.HelpFormatter):
    """``argparse``'s formatter with descriptions and epilogs wrapped paragraph by paragraph
    (its default joins every paragraph into one; ``RawDescriptionHelpFormatter`` wraps none),
    and option help without reST markup."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return fill_paragraphs(text, width, indent)

    def _format_usage(self, usage, actions, groups, prefix) -> str:
        """The full usage line when it fits; else ``[options]`` and the positionals (an
        exclusive group is never broken across lines, and would overflow the terminal)."""
        text = super()._format_usage(usage, actions, groups, prefix)
        if usage is None and any(len(line) > self._width for line in text.splitlines()):
            positionals = [a for a in actions if not a.option_strings]
            usage = "%(prog)s [options] " + self._format_actions_usage(positionals, [])
            text = super()._format_usage(usage, actions, groups, prefix)
        return text

    def _split_lines(self, text: str, width: int) -> list[str]:
        return super()._split_lines(plain(text), width)
