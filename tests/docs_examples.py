"""Run a document's fenced Python blocks as a notebook runs its cells: in order, in one
namespace, each top-level expression displayed (its ``repr`` and ``_repr_html_``; a Spark
DataFrame's first rows collected), so an example that does not run, or whose result cannot
be shown, fails the suite.

The docs name the paths a reader has (``/var/kafka-logs``, ``/var/lib/kafka/data``); each
doc says once that the suite reads them as the bundled ``fixtures/logdirs/sample`` tree, and
:func:`blocks` makes that substitution.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "fixtures" / "logdirs" / "sample"

#: The broker paths the docs use, and the bundled trees the suite reads in their place.
PATHS = {
    "/var/kafka-logs": str(SAMPLE),
    "/var/lib/kafka/data": str(SAMPLE),
    "/data/kafka-logs": str(SAMPLE),
    "/mnt/broker-1": str(REPO / "fixtures" / "logdirs" / "replicas" / "broker1"),
    "/mnt/broker-2": str(REPO / "fixtures" / "logdirs" / "replicas" / "broker2"),
    "fixtures/logdirs/": str(REPO / "fixtures" / "logdirs") + "/",
}

_FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(doc: Path, extra: Mapping[str, str] | None = None) -> list[str]:
    """The doc's Python blocks in order, the broker paths replaced (in one pass, longest
    first)."""
    text = doc.read_text(encoding="utf-8")
    swaps = {**PATHS, **(extra or {})}
    pattern = re.compile("|".join(re.escape(k) for k in sorted(swaps, key=len, reverse=True)))
    out = []
    for match in _FENCE.finditer(text):
        code = pattern.sub(lambda m: swaps[m.group(0)], match.group(1))
        out.append(code + "\n")
    return out


def display(value: object) -> None:
    """What a notebook does with a cell's value: show it."""
    if value is None:
        return
    if hasattr(value, "limit") and hasattr(value, "collect"):  # a Spark DataFrame
        value.limit(3).collect()
        return
    repr(value)
    html = getattr(value, "_repr_html_", None)
    if callable(html):
        html()


def run(code: str, namespace: dict, name: str) -> None:
    """One cell: statements executed, each top-level expression's value displayed."""
    tree = ast.parse(code, filename=name)
    for node in tree.body:
        if isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), name, "eval"), namespace)
            display(value)
        else:
            exec(compile(ast.Module([node], type_ignores=[]), name, "exec"), namespace)
