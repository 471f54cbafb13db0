"""Text for a person, whatever the bytes: strings that cannot drive a terminal, paths as typed.

Topic names, keys, values and file names come from producers and from disk; shown raw they could
carry escape sequences or lone surrogates. Every face that shows text (the CLI's tables and
lines, the HTML report's page) escapes it with these functions, so they live below the faces,
where each can import them without importing another face.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import PurePath

from segtools.sensitive import without_credentials

_CONTROL_ESCAPES = {i: f"\\x{i:02x}" for i in range(32)} | {127: "\\x7f"}
_CONTROL_ESCAPES |= {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}
_CONTROL_ESCAPES |= {i: f"\\u{i:04x}" for i in range(0x80, 0xA0)}  # C1 controls (CSI ...)
_CONTROL_ESCAPES |= {0x2028: "\\u2028", 0x2029: "\\u2029"}  # line ends to str.splitlines

#: Characters that reorder or hide the text around them: the bidirectional embeddings,
#: overrides and isolates (U+202A-U+202E, U+2066-U+2069; "Trojan Source", CVE-2021-42574),
#: the direction marks, and the zero-width characters. Shown raw, a file name or a key could
#: display as something it is not; they are marked as ``\uXXXX`` in text and JSON alike.
INVISIBLE = frozenset((0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0xFEFF,
                       *range(0x202A, 0x202F), *range(0x2066, 0x206A)))
_CONTROL_ESCAPES |= {i: f"\\u{i:04x}" for i in INVISIBLE}

#: What JSON text must escape beyond ``json.dumps(ensure_ascii=False)``: C1 controls (U+009B
#: is a CSI on many terminals), the invisible characters, and U+2028/U+2029 (line ends to
#: ``str.splitlines`` and to JavaScript): a JSON line piped to a terminal or split into lines
#: stays one inert line.
JSON_ESCAPES = {i: f"\\u{i:04x}" for i in (*range(0x80, 0xA0), *INVISIBLE, 0x2028, 0x2029)}


def _no_surrogates(text: str) -> str:
    """File names that are not UTF-8 reach us as lone surrogates (``surrogateescape``); show
    their bytes as ``\\xNN`` so output stays valid UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def terminal_safe(text: str) -> str:
    """Escape C0/C1 control characters so no byte sequence can drive the terminal, and mark
    the invisible ones (:data:`INVISIBLE`) so none can disguise a name. Text that is all
    printable holds none of them (each is a control, format, separator or surrogate
    character, none printable), so it is returned as it is: most of what a table shows."""
    if text.isprintable():
        return text
    return _no_surrogates(text).translate(_CONTROL_ESCAPES)


_INVISIBLE_MARKS = {i: f"\\u{i:04x}" for i in INVISIBLE}


def mark_invisible(text: str) -> str:
    """``text`` with only its invisible characters (:data:`INVISIBLE`) shown as ``\\uXXXX``:
    for a page that displays text as text (the report), where controls are inert but a bidi
    override still reorders what a reader sees."""
    return text.translate(_INVISIBLE_MARKS)


def json_safe(json_text: str) -> str:
    """JSON text (as ``json.dumps(ensure_ascii=False)`` writes it) with :data:`JSON_ESCAPES`
    applied: they only ever occur inside its strings, where ``\\uXXXX`` means the same."""
    return json_text.translate(JSON_ESCAPES)


def shown_path(path) -> str:
    """A path as an operator typed it: relative to the working directory when under it (a
    URI of an object store or an archive member stays as it is, less any credential)."""
    if "://" in str(path):
        return without_credentials(str(path))
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative


#: Characters of a file's content a message quotes: enough to recognise a damaged line, too
#: few to carry a file's secret (a symlink swapped in for a checkpoint must not turn a
#: finding into a copy of the file it points at).
QUOTE_CHARS = 32


def quoted(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` as a message quotes file content: ``repr``-escaped (no control, bidi or
    invisible character survives) and cut at ``limit`` characters, saying how many more."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text) - limit} more characters)"


def distinct_names(paths) -> list[str]:
    """A short name per path that tells them apart: the last part (``broker-1``) when those
    differ, else the fewest trailing parts that do (``broker-1/kafka-logs`` for a bundle of
    brokers that each keep ``kafka-logs``), never a whole archive path when less will do."""
    paths = [str(p) for p in paths]
    parts = [PurePath(p).parts for p in paths]
    for n in range(1, max((len(p) for p in parts), default=0) + 1):
        names = ["/".join(p[-n:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return paths


def unmatched(globs: Iterable[str], topics: Iterable[str]) -> str | None:
    """What a face says when a topic glob selects nothing (the first such glob, and the
    topics there are), or None when each matches: the words of the API and the CLI alike."""
    names = sorted(set(topics))
    for glob in globs:
        if not any(fnmatch.fnmatchcase(t, glob) for t in names):
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            return f"no topic matches {glob!r} (topics here: {shown or 'none'})"
    return None
