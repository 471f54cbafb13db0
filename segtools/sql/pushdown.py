"""What a query needs from a view, read from its SQL before anything is decoded.

DuckDB reads an Arrow stream whole: it pushes neither filters nor projections into a
``RecordBatchReader``. The selection has to be narrowed before the stream exists, so the
query is parsed first, by DuckDB's own parser (``json_serialize_sql``: the statement's parse
tree as JSON, the grammar the query then runs under, at no import cost), and the conditions
that bound the rows of a view are turned into the library's selectors (docs/query.md, "How
the plan is read").

Only what cannot change the answer is pushed: a conjunct of the ``WHERE`` of the one
``SELECT`` whose ``FROM`` (or its joins) names the view, comparing one of its columns with a
literal. DuckDB still applies the whole ``WHERE`` afterwards; the pushdown only spares the
reading of rows the query would drop. Anything else (the view named twice, a CTE of the same
name, ``OR``, a column of another table) reads the view whole.
"""

from __future__ import annotations

import glob
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from segtools.timestamps import to_millis

#: the columns a condition can be pushed on, as the views name them (lower case: SQL
#: identifiers match case-insensitively)
TOPIC, PARTITION, OFFSET, TIMESTAMP = "topic", "partition", "offset", "timestamp"


@dataclass(frozen=True, slots=True)
class Pushdown:
    """What a view must hold for one query. ``None`` everywhere: the view whole."""

    references: int = 1  # how often the query names the view: 0, it is not read
    topics: tuple[str, ...] | None = None  # exact names
    partitions: tuple[int, ...] | None = None
    offset_min: int | None = None  # inclusive
    offset_max: int | None = None  # exclusive
    timestamp_min_ms: int | None = None  # no row before it can pass
    timestamp_max_ms: int | None = None  # exclusive: no row at or after it can pass
    columns: frozenset[str] | None = None  # lower-case names the query uses; None: all

    @property
    def topic_globs(self) -> tuple[str, ...]:
        """The topics as the selection's globs (escaped, so a name is only itself)."""
        return ("*",) if self.topics is None else tuple(glob.escape(t) for t in self.topics)

    def empty(self) -> bool:
        """True when the conditions contradict each other (``offset > 5 and offset < 3``)."""
        return ((self.topics is not None and not self.topics)
                or (self.partitions is not None and not self.partitions)
                or (self.offset_min is not None and self.offset_max is not None
                    and self.offset_min >= self.offset_max))


WHOLE = Pushdown()
UNUSED = Pushdown(references=0)


@dataclass(frozen=True, slots=True)
class Parsed:
    """One statement's parse tree (DuckDB's JSON nodes), or the parser's refusal: a query
    DuckDB cannot parse reads no view (its error, with the position, is the answer)."""

    tree: dict | None
    syntax_error: bool = False


def parse(con, sql: str) -> Parsed:
    """The query's parse tree by DuckDB's parser on ``con``. A statement the serializer does
    not take (``DESCRIBE``, several statements) has no tree: every view is then read whole;
    a syntax error has none either, and no view is read."""
    try:
        # fetchall: a result left unfinished makes DuckDB refuse the next query on ``con``
        text = con.execute("SELECT json_serialize_sql($1)", [sql]).fetchall()[0][0]
    except Exception:  # the engine's own error class (duckdb.Error): the views read whole
        return Parsed(None)
    answer = json.loads(text)
    if answer.get("error"):
        return Parsed(None, syntax_error=answer.get("error_type") == "parser")
    statements = answer.get("statements") or []
    return Parsed(statements[0] if len(statements) == 1 else None)


def _nodes(value) -> Iterator[dict]:
    """Every node (JSON object) of a parse tree, depth first."""
    if isinstance(value, dict):
        yield value
        for child in value.values():
            yield from _nodes(child)
    elif isinstance(value, list):
        for child in value:
            yield from _nodes(child)


def _tables(tree: dict) -> list[dict]:
    """The query's references to plain tables (``FROM x``, ``JOIN x``), unqualified."""
    return [n for n in _nodes(tree) if n.get("type") == "BASE_TABLE"
            and not n.get("schema_name") and not n.get("catalog_name")]


def _ctes(tree: dict) -> set[str]:
    names = set()
    for node in _nodes(tree):
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            names.update(str(e.get("key", "")).lower() for e in cte_map.get("map", []))
    return names


def for_view(parsed: Parsed, view: str) -> Pushdown:
    """The pushdown for ``view`` in the parsed query (:func:`parse`)."""
    if parsed.tree is None:
        return UNUSED if parsed.syntax_error else WHOLE
    tree = parsed.tree
    name = view.lower()
    if name in _ctes(tree):
        return WHOLE
    refs = [t for t in _tables(tree) if t["table_name"].lower() == name]
    if not refs:
        return UNUSED
    columns = _columns(tree, refs)
    if len(refs) > 1:
        return Pushdown(references=len(refs), columns=columns)
    table = refs[0]
    select = next((n for n in _nodes(tree) if n.get("type") == "SELECT_NODE"
                   and any(t is table for t in _joined(n.get("from_table")))), None)
    if select is None or select.get("where_clause") is None:
        return Pushdown(columns=columns)
    alone = select.get("from_table") is table
    alias = (table.get("alias") or table["table_name"]).lower()
    bounds = _Bounds()
    for conjunct in _conjuncts(select["where_clause"]):
        bounds.add(conjunct, alias, alone)
    return bounds.pushdown(columns)


def _joined(ref: dict | None) -> Iterator[dict]:
    """The table references a ``FROM`` joins, through nested joins (not into subqueries)."""
    if not isinstance(ref, dict):
        return
    if ref.get("type") == "JOIN":
        yield from _joined(ref.get("left"))
        yield from _joined(ref.get("right"))
    else:
        yield ref


def _conjuncts(condition: dict) -> Iterator[dict]:
    if condition.get("type") == "CONJUNCTION_AND":
        for child in condition.get("children", []):
            yield from _conjuncts(child)
    else:
        yield condition


def other_tables(parsed: Parsed, views: Iterable[str]) -> bool:
    """Whether the query names a table that is none of ``views`` (a typed topic view, or a
    table DuckDB will say does not exist); True when the query has no tree."""
    if parsed.tree is None:
        return not parsed.syntax_error
    known = {v.lower() for v in views} | _ctes(parsed.tree)
    return any(t["table_name"].lower() not in known for t in _tables(parsed.tree))


def _columns(tree: dict, refs: list[dict]) -> frozenset[str] | None:
    """The column names the query uses, or None when it may use every column of the view
    (``*``, ``records.*`` or ``COLUMNS(...)``; the row itself by its alias). ``count(*)`` is
    DuckDB's ``count_star()``, no star."""
    aliases = {(t.get("alias") or t["table_name"]).lower() for t in refs}
    names: set[str] = set()
    for node in _nodes(tree):
        kind = node.get("type")
        if kind == "STAR":
            return None
        if kind == "COLUMN_REF":
            parts = [str(p).lower() for p in node.get("column_names", [])]
            if len(parts) == 1 and parts[0] in aliases:
                return None
            names.update(parts)
        names.update(str(c).lower() for c in node.get("using_columns") or ())
    return frozenset(names)


class _Bounds:
    """The bounds collected from one ``WHERE``'s conjuncts, intersected as they come."""

    def __init__(self) -> None:
        self.topics: set[str] | None = None
        self.partitions: set[int] | None = None
        self.offset_min: int | None = None
        self.offset_max: int | None = None
        self.timestamp_min_ms: int | None = None
        self.timestamp_max_ms: int | None = None

    def add(self, condition: dict, alias: str, alone: bool) -> None:
        kind = condition.get("type")
        if kind == "COMPARE_IN":
            first, *rest = condition.get("children", [None])
            name = _column(first, alias, alone)
            values = [_literal(v) for v in rest]
            if name is not None and values and None not in values:
                self._values(name, values)
            return
        if kind == "COMPARE_BETWEEN":
            name = _column(condition.get("input"), alias, alone)
            low, high = _literal(condition.get("lower")), _literal(condition.get("upper"))
            if name is not None and low is not None and high is not None:
                self._compare(name, ">=", low)
                self._compare(name, "<=", high)
            return
        op = _OPS.get(kind)
        if op is None:
            return
        left, right = condition.get("left"), condition.get("right")
        name, value = _column(left, alias, alone), _literal(right)
        if name is None or value is None:
            name, value, op = _column(right, alias, alone), _literal(left), _FLIPPED[op]
        if name is None or value is None:
            return
        if op == "=":
            self._values(name, [value])
        else:
            self._compare(name, op, value)

    def _values(self, name: str, values: list) -> None:
        if name == TOPIC:
            given = {v for v in values if isinstance(v, str)}
            self.topics = given if self.topics is None else self.topics & given
        elif name == PARTITION:
            given = {int(v) for v in values if _integral(v)}
            self.partitions = given if self.partitions is None else self.partitions & given
        elif name == OFFSET and all(_integral(v) for v in values):
            self._compare(name, ">=", min(values))
            self._compare(name, "<=", max(values))
        elif name == TIMESTAMP and all(_time_key(v) is not None for v in values):
            self._compare(name, ">=", min(values, key=_time_key))
            self._compare(name, "<=", max(values, key=_time_key))

    def _compare(self, name: str, op: str, value) -> None:
        if name == OFFSET and isinstance(value, int | Decimal) and not isinstance(value, bool):
            if op in (">", ">="):  # offsets are whole: > 3.5 and >= 3.5 are both >= 4
                low = math.floor(value) + 1 if op == ">" else math.ceil(value)
                self.offset_min = low if self.offset_min is None else max(self.offset_min, low)
            elif op in ("<", "<="):  # as an exclusive end: < 3.5 and <= 3 are both < 4
                high = math.ceil(value) if op == "<" else math.floor(value) + 1
                self.offset_max = high if self.offset_max is None else min(self.offset_max, high)
        elif name == TIMESTAMP and op in (">", ">="):
            ms = _time_key(value)
            if ms is not None:
                self.timestamp_min_ms = ms if self.timestamp_min_ms is None else max(
                    self.timestamp_min_ms, ms)
        elif name == TIMESTAMP and op in ("<", "<="):
            ms = _time_key(value)
            if ms is not None:  # the literal's ms floored, so the next ms bounds either op
                self.timestamp_max_ms = ms + 1 if self.timestamp_max_ms is None else min(
                    self.timestamp_max_ms, ms + 1)

    def pushdown(self, columns: frozenset[str] | None) -> Pushdown:
        return Pushdown(
            topics=None if self.topics is None else tuple(sorted(self.topics)),
            partitions=None if self.partitions is None else tuple(sorted(self.partitions)),
            offset_min=self.offset_min, offset_max=self.offset_max,
            timestamp_min_ms=self.timestamp_min_ms, timestamp_max_ms=self.timestamp_max_ms,
            columns=columns)


_OPS = {"COMPARE_EQUAL": "=", "COMPARE_GREATERTHAN": ">",
        "COMPARE_GREATERTHANOREQUALTO": ">=", "COMPARE_LESSTHAN": "<",
        "COMPARE_LESSTHANOREQUALTO": "<="}
_FLIPPED = {"=": "=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}
#: the casts of a string literal that DuckDB reads as a point in time
_TIME_TYPES = frozenset(("timestamp", "timestamptz", "timestamp with time zone", "datetime",
                         "date", "timestamp_s", "timestamp_ms", "timestamp_us",
                         "timestamp_ns"))


def _column(node: dict | None, alias: str, alone: bool) -> str | None:
    """The pushable column a node names, when it is surely the view's."""
    if not isinstance(node, dict) or node.get("type") != "COLUMN_REF":
        return None
    parts = [str(p).lower() for p in node.get("column_names", [])]
    if len(parts) == 1 and alone:
        name = parts[0]
    elif len(parts) == 2 and parts[0] == alias:
        name = parts[1]
    else:
        return None
    return name if name in (TOPIC, PARTITION, OFFSET, TIMESTAMP) else None


def _literal(node: dict | None):
    """A literal's value: an integer, a decimal, a string, or a string cast to a time as its
    text (None for anything else, which is then not pushed)."""
    if not isinstance(node, dict):
        return None
    if node.get("type") == "OPERATOR_CAST" and not node.get("try_cast"):
        target = str((node.get("type_expr") or {}).get("type_name", "")).lower()
        inner = _literal(node.get("child"))
        return inner if target in _TIME_TYPES and isinstance(inner, str) else None
    if node.get("type") != "VALUE_CONSTANT":
        return None
    literal = node.get("literal") or {}
    kind, text = literal.get("kind"), literal.get("text")
    if kind == "STRING":
        return text
    if kind == "INTEGER":
        return int(text)
    if kind == "NUMERIC":
        try:
            return Decimal(text)
        except InvalidOperation:
            return None
    return None


def _integral(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _time_key(value) -> int | None:
    """Epoch ms (floored) of a timestamp literal; None when it is not a time segtools reads
    the way DuckDB does (then nothing is pushed). Plain numbers are not times in DuckDB."""
    if not isinstance(value, str):
        return None
    try:
        return to_millis(value)
    except (ValueError, TypeError):
        return None


def names(columns: Iterable[str]) -> frozenset[str]:
    """Lower-case column names, as :attr:`Pushdown.columns` holds them."""
    return frozenset(c.lower() for c in columns)
