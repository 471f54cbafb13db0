"""Text for a person, whatever the bytes: strings that cannot drive a terminal, paths as typed.

Topic names, keys, values and file names come from producers and from disk; shown raw they could
carry escape sequences or lone surrogates. Every face that shows text (the CLI's tables and
lines, the HTML report's page) escapes it with these functions, so they live below the faces,
where each can import them without importing another face.
"""

from __future__ import annotations

import os
from pathlib import PurePath

_CONTROL_ESCAPES = {i: f"\\x{i:02x}" for i in range(32)} | {127: "\\x7f"}
_CONTROL_ESCAPES |= {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}
_CONTROL_ESCAPES |= {i: f"\\u{i:04x}" for i in range(0x80, 0xA0)}  # C1 controls (CSI ...)
_CONTROL_ESCAPES |= {0x2028: "\\u2028", 0x2029: "\\u2029"}  # line ends to str.splitlines


def _no_surrogates(text: str) -> str:
    """File names that are not UTF-8 reach us as lone surrogates (``surrogateescape``); show
    their bytes as ``\\xNN`` so output stays valid UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def terminal_safe(text: str) -> str:
    """Escape C0/C1 control characters so no byte sequence can drive the terminal."""
    return _no_surrogates(text).translate(_CONTROL_ESCAPES)


def shown_path(path) -> str:
    """A path as an operator typed it: relative to the working directory when under it (a
    URI of an object store or an archive member stays as it is)."""
    if "://" in str(path):
        return str(path)
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative


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
