"""What a query needs from a view, read from its SQL before anything is decoded.

DuckDB reads an Arrow stream whole: it pushes neither filters nor projections into a
``RecordBatchReader``. The selection has to be narrowed before the stream exists, so the
query is parsed here with ``sqlglot`` (DuckDB dialect) and the conditions that bound the rows
of a view are turned into the library's selectors (docs/query.md, "How the plan is read").

Only what cannot change the answer is pushed: a conjunct of the ``WHERE`` of the one
``SELECT`` whose ``FROM`` or ``JOIN`` names the view, comparing one of its columns with a
literal. DuckDB still applies the whole ``WHERE`` afterwards; the pushdown only spares the
reading of rows the query would drop. Anything else (the view named twice, a CTE of the same
name, ``OR``, a column of another table) reads the view whole.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

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


def parse(sql: str) -> exp.Expression | None:
    """The query's syntax tree, or None when sqlglot cannot read it (DuckDB then reads the
    views whole and reports its own error, which is the one the user sees)."""
    try:
        trees = sqlglot.parse(sql, dialect="duckdb")
    except SqlglotError:
        return None
    trees = [t for t in trees if t is not None]
    return trees[0] if len(trees) == 1 else None


def for_view(tree: exp.Expression | None, view: str) -> Pushdown:
    """The pushdown for ``view`` in the parsed query (``parse``)."""
    if tree is None:
        return WHOLE
    name = view.lower()
    if any(cte.alias_or_name.lower() == name for cte in tree.find_all(exp.CTE)):
        return WHOLE
    refs = [t for t in tree.find_all(exp.Table)
            if t.name.lower() == name and not t.args.get("db")]
    if not refs:
        return UNUSED
    columns = _columns(tree, refs)
    if len(refs) > 1:
        return Pushdown(references=len(refs), columns=columns)
    table = refs[0]
    select = table.parent.parent if isinstance(table.parent, exp.From | exp.Join) else None
    if not isinstance(select, exp.Select) or select.args.get("where") is None:
        return Pushdown(columns=columns)
    alone = not select.args.get("joins")
    bounds = _Bounds()
    for conjunct in select.args["where"].this.flatten() if isinstance(
            select.args["where"].this, exp.And) else [select.args["where"].this]:
        bounds.add(conjunct, table.alias_or_name.lower(), alone)
    return bounds.pushdown(columns)


def other_tables(tree: exp.Expression | None, views: Iterable[str]) -> bool:
    """Whether the query names a table that is none of ``views`` (a typed topic view, or a
    table DuckDB will say does not exist); True when the query could not be parsed."""
    if tree is None:
        return True
    known = {v.lower() for v in views}
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return any(t.name.lower() not in known | ctes for t in tree.find_all(exp.Table))


def _columns(tree: exp.Expression, refs: list[exp.Table]) -> frozenset[str] | None:
    """The column names the query uses, or None when it may use every column of the view
    (``*`` outside ``count(*)``, ``records.*``, or the row itself by its alias)."""
    for star in tree.find_all(exp.Star):
        if not isinstance(star.parent, exp.Count):
            return None
    aliases = {t.alias_or_name.lower() for t in refs}
    for column in tree.find_all(exp.Column):
        if column.name.lower() in aliases and not column.table:
            return None
    # every identifier, not only columns: USING (topic, ...) names columns as identifiers;
    # table names and aliases among them only widen the read
    names = {ident.name.lower() for ident in tree.find_all(exp.Identifier)}
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

    def add(self, condition: exp.Expression, alias: str, alone: bool) -> None:
        if isinstance(condition, exp.Paren):
            condition = condition.this
        if isinstance(condition, exp.In):
            name = _column(condition.this, alias, alone)
            values = [_literal(v) for v in condition.expressions]
            if name is not None and values and None not in values and not condition.args.get(
                    "query"):
                self._values(name, values)
            return
        if isinstance(condition, exp.Between):
            name = _column(condition.this, alias, alone)
            low, high = _literal(condition.args["low"]), _literal(condition.args["high"])
            if name is not None and low is not None and high is not None:
                self._compare(name, ">=", low)
                self._compare(name, "<=", high)
            return
        op = _OPS.get(type(condition))
        if op is None:
            return
        left, right = condition.this, condition.expression
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
        elif name == OFFSET and len(values) == 1 and _integral(values[0]):
            self._compare(name, ">=", values[0])
            self._compare(name, "<=", values[0])
        elif name == OFFSET and all(_integral(v) for v in values):
            self._compare(name, ">=", min(values))
            self._compare(name, "<=", max(values))
        elif name == TIMESTAMP and all(_time_key(v) is not None for v in values):
            self._compare(name, ">=", min(values, key=_time_key))
            self._compare(name, "<=", max(values, key=_time_key))

    def _compare(self, name: str, op: str, value) -> None:
        if name == OFFSET and isinstance(value, int | float) and not isinstance(value, bool):
            if op in (">", ">="):
                low = int(value) + 1 if op == ">" and value == int(value) else -(-value // 1)
                self.offset_min = int(low) if self.offset_min is None else max(
                    self.offset_min, int(low))
            elif op in ("<", "<="):
                high = int(value) + 1 if op == "<=" or value != int(value) else int(value)
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


_OPS = {exp.EQ: "=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_FLIPPED = {"=": "=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


def _column(node: exp.Expression, alias: str, alone: bool) -> str | None:
    """The pushable column a node names, when it is surely the view's."""
    if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
        return None
    name = node.name.lower()
    if name not in (TOPIC, PARTITION, OFFSET, TIMESTAMP):
        return None
    qualifier = node.table.lower()
    if qualifier == alias or (not qualifier and alone):
        return name
    return None


def _literal(node: exp.Expression):
    """A literal's value: a number, a string, or a ``TIMESTAMP '...'`` as its text (None for
    anything else, which is then not pushed)."""
    if isinstance(node, exp.Neg):
        inner = _literal(node.this)
        return -inner if isinstance(inner, int | float) else None
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEMPORAL_TYPES):
        return _literal(node.this) if isinstance(node.this, exp.Literal) else None
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            try:
                return float(text)
            except ValueError:
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
