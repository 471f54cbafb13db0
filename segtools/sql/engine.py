"""The embedded engine (DuckDB): a session with bounded memory and temporary files, the views
registered over one tree, and a query's rows as Arrow or written by the engine's writer.

Nothing is written under the locations read: the engine's spill files go to a temporary
directory of its own, capped in size, removed when the session ends.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import lazy_loader
import pyarrow as pa

from segtools.errors import SegtoolsError
from segtools.payloads.schemas import Schemas
from segtools.sql import pushdown, typed
from segtools.sql.trees import Trees
from segtools.sql.views import READING_SCHEMA, RECORD_VIEWS, VIEWS, Options, reading, records

if TYPE_CHECKING:  # the API hands its tree in; the room never reaches back up to it
    from segtools.api import LogDirs
    from segtools.payloads.shapes import Struct

#: The typed views' mapping and the schema sources (a registry client: urllib, http.client)
#: load when a query decodes: a query that decodes nothing does not pay their imports.
shapes = lazy_loader.load("segtools.payloads.shapes", suppress_warning=True)
sources = lazy_loader.load("segtools.payloads.sources", suppress_warning=True)

#: DuckDB's own default is 80% of the machine's memory, too much beside a running broker
DEFAULT_MEMORY = "1GB"
#: what the spill files may grow to before the query fails (DuckDB's ``max_temp_directory_size``)
DEFAULT_TEMP_LIMIT = "20GB"
ROWS_PER_BATCH = 65_536
#: the views without decoding
PLAIN = Options()

#: ``-o`` file suffixes and the engine's ``COPY ... (FORMAT ...)`` that writes each
EXPORT_FORMATS = {".parquet": "PARQUET", ".csv": "CSV", ".jsonl": "JSON", ".json": "JSON"}


class QueryError(SegtoolsError):
    """A query the engine refused: its message, one line, with the position in the query."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one session may use: memory (DuckDB sizes: ``"1GB"``, ``"512MiB"``) and the
    temporary files' total size."""

    memory: str = DEFAULT_MEMORY
    temp_limit: str = DEFAULT_TEMP_LIMIT


DEFAULT_LIMITS = Limits()


def limits(memory: str | None = None, temp_limit: str | None = None) -> Limits:
    """The session's limits, each one the default when not given."""
    return Limits(DEFAULT_MEMORY if memory is None else memory,
                  DEFAULT_TEMP_LIMIT if temp_limit is None else temp_limit)


def duckdb_module() -> ModuleType:
    """DuckDB, the optional ``query`` extra: a command that queries nothing must not need it."""
    try:
        return importlib.import_module("duckdb")
    except ImportError as e:
        raise SegtoolsError(f"segtools query needs the query extra "
                            f"(pip install 'segtools[query]'): {e}") from None


def connect(limits: Limits = DEFAULT_LIMITS, *, sealed: bool = False,
            output: str | os.PathLike[str] | None = None):
    """A DuckDB connection in memory whose spill files go to a fresh temporary directory
    (bounded by ``limits.temp_limit``), removed once the connection is gone; times compare in
    UTC, as Kafka's timestamps and the pushdown's reading of time literals are.

    ``sealed``: the query's SQL may touch no file at all (no ``COPY ... TO`` into a log dir,
    no ``read_csv``, ``ATTACH`` or extension download): DuckDB's external access is turned
    off for good, leaving only its spill directory and ``output`` (the ``-o`` file)."""
    duckdb = duckdb_module()
    spill = tempfile.mkdtemp(prefix="segtools-query-")
    try:
        con = duckdb.connect(":memory:", config={
            "memory_limit": limits.memory, "temp_directory": spill,
            "max_temp_directory_size": limits.temp_limit,
            "preserve_insertion_order": False})
    except duckdb.Error as e:
        shutil.rmtree(spill, ignore_errors=True)
        raise QueryError(f"engine settings: {one_line(e)}") from None
    weakref.finalize(con, shutil.rmtree, spill, True)
    con.execute("SET TimeZone = 'UTC'")
    if sealed:
        allowed = [] if output is None else [os.path.abspath(output)]
        con.execute("SET allowed_paths = $1", [allowed])
        con.execute("SET allowed_directories = $1", [[spill + os.sep]])
        con.execute("SET enable_external_access = false")
    return con


@contextmanager
def session(limits: Limits = DEFAULT_LIMITS, *,
            output: str | os.PathLike[str] | None = None) -> Iterator:
    """A sealed :func:`connect` (only ``output`` may be written), closed (and its spill
    directory removed) on exit."""
    con = connect(limits, sealed=True, output=output)
    try:
        yield con
    finally:
        con.close()
        del con


def register(con, tree: LogDirs | Trees, sql: str | None, options: Options = PLAIN) -> None:
    """The views ``sql`` names, each narrowed by what its conditions allow (``sql=None``:
    every view, whole); with decoding, also a typed view per topic whose values have an Avro
    subject. A view named once is streamed into the query; one named more often is loaded
    once into a temporary table (which spills under the memory limit). ``tree``: a tree
    walked already, or the locations as :class:`Trees`, walked only as far as the views
    read (the partitions a record view's conditions name)."""
    trees = tree if isinstance(tree, Trees) else Trees.of(tree)
    trees.require()
    if sql is not None:
        one_statement(con, sql)
    parsed = pushdown.parse(con, sql) if sql is not None else None
    every = pushdown.Pushdown(references=2)
    for name, view in VIEWS.items():
        push = pushdown.for_view(parsed, name) if sql is not None else every
        if push.references:
            source = (trees.for_records(push, with_schemas=bool(options.decode),
                                            live_only=options.states == ("live",))
                      if name in RECORD_VIEWS else trees.whole())
            _install(con, name, view(source, push, options), push.references,
                     _JSON_DECODED if options.decode and name == "records" else "*")
    if options.decode and (sql is None or pushdown.other_tables(parsed, VIEWS)):
        _typed_views(con, trees.whole(), parsed if sql is not None else None, every, options)


def explain(con, tree: LogDirs | Trees, sql: str, options: Options = PLAIN) -> pa.Table:
    """What the query's record views would read, one ``views.READING_SCHEMA`` row per view
    it names (nothing is read but the indexes): the plan after the pushdown, to check that a
    condition narrows the read as meant (``segtools query --explain``)."""
    trees = tree if isinstance(tree, Trees) else Trees.of(tree)
    trees.require()
    one_statement(con, sql)
    parsed = pushdown.parse(con, sql)
    rows = []
    for name in VIEWS:
        push = pushdown.for_view(parsed, name)
        if name in RECORD_VIEWS and push.references:
            source = trees.for_records(push, with_schemas=bool(options.decode),
                                       live_only=options.states == ("live",))
            rows.append(reading(name, source, push, options))
    return pa.Table.from_pylist(rows, schema=READING_SCHEMA)


def one_statement(con, sql: str) -> None:
    """Refuse a query of no statement or of several before any view is read: the engine
    would run them all and hand back only the last one's rows (the others' lost, their
    views read for nothing), and nothing at all for none. A syntax error is left to the
    run, which reports it with its position."""
    duckdb = duckdb_module()
    try:
        count = len(con.extract_statements(sql))
    except duckdb.Error:
        return
    if count == 0:
        raise QueryError("the query is empty: it holds no SQL statement")
    if count > 1:
        raise QueryError(f"one SQL statement per query, not {count} (separated by ';'): "
                         f"run each on its own")


#: the decoded payloads as DuckDB's JSON type (``value_decoded->>'$.id'``)
_JSON_DECODED = ("* REPLACE (key_decoded::JSON AS key_decoded, "
                 "value_decoded::JSON AS value_decoded)")


def _install(con, name: str, reader: pa.RecordBatchReader, references: int,
             projection: str, parsed: str | None = None) -> None:
    """``name`` as a view of ``projection`` over the stream, which is registered under a
    hidden name (or loaded into a temporary table when the query reads it more than once);
    ``parsed``: an expression the projection reads as ``typed.PARSED``."""
    hidden = f"_segtools_{len(name)}_{name}"
    con.execute(f"DROP VIEW IF EXISTS {typed.quoted(name)}")
    con.execute(f"DROP TABLE IF EXISTS {typed.quoted(hidden)}")
    con.unregister(hidden)
    if references == 1:
        con.register(hidden, reader)
    else:
        con.register(f"{hidden}_stream", reader)
        con.execute(f"CREATE TEMP TABLE {typed.quoted(hidden)} AS "
                    f"SELECT * FROM {typed.quoted(hidden + '_stream')}")
        con.unregister(f"{hidden}_stream")
    source = typed.quoted(hidden) if parsed is None else \
        f"(SELECT *, {parsed} AS {typed.PARSED} FROM {typed.quoted(hidden)})"
    con.execute(f"CREATE TEMP VIEW {typed.quoted(name)} AS SELECT {projection} FROM {source}")


#: the record columns a typed topic view keeps beside its schema's fields
TYPED_RECORD_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "key_decoded",
                        "value_schema_id", "value_schema_version", "value_schema_message",
                        "value_payload_error")


def kept_columns(columns: Struct) -> tuple[str, ...]:
    """The record columns a typed view keeps: those no field of the schema is named like
    (both engines' names are case-insensitive)."""
    fields = {f.name.lower() for f in columns.fields}
    return tuple(c for c in TYPED_RECORD_COLUMNS if c not in fields)


def _typed_views(con, tree: LogDirs, parsed, every: pushdown.Pushdown,
                 options: Options) -> None:
    """One view per topic with a value subject, named after the topic: the record's place
    and key, then the latest schema's fields as typed columns (``typed``)."""
    history = schema_history(tree, options)
    if history is None:
        return
    for topic in tree.topics:
        if topic.lower() in VIEWS:
            continue
        push = pushdown.for_view(parsed, topic) if parsed is not None else every
        if not push.references:
            continue
        shape = shapes.topic_shape(history, topic)
        if shape is None:
            continue
        push = replace(push, columns=None, topics=(topic,) if push.topics is None
                       or topic in push.topics else ())
        kept = ", ".join(typed.quoted(c) for c in kept_columns(shape.columns))
        _install(con, topic, records(tree, push, options), push.references,
                 f"{kept}, {typed.typed_columns(shape)}", typed.parsed(shape))


def schema_history(tree: LogDirs, options: Options) -> Schemas | None:
    """The schemas the decoding reads: the tree's ``_schemas``, or the ``schemas`` given."""
    if not options.schemas:
        return tree.schema_history()
    out = Schemas()
    for history in sources.gather([], [], schemas=list(options.schemas)).histories():
        out.extend(history)
    return out


@dataclass(frozen=True, slots=True)
class Result:
    """A query's rows, streamed, and which columns are DuckDB ``JSON`` (Arrow carries them as
    plain text; a JSON Lines face nests them as JSON instead of quoting them)."""

    reader: pa.RecordBatchReader
    json_columns: frozenset[str]


def run(con, sql: str) -> pa.RecordBatchReader:
    """The query's rows, streamed as the engine produces them."""
    return result(con, sql).reader


def result(con, sql: str) -> Result:
    """:func:`run`, with the names of the columns whose type is ``JSON``."""
    duckdb = duckdb_module()
    try:
        relation = con.sql(sql)
        kinds = dict(zip(relation.columns, (str(t) for t in relation.types), strict=True))
        return Result(relation.to_arrow_reader(ROWS_PER_BATCH),
                      frozenset(n for n, kind in kinds.items() if kind == "JSON"))
    except duckdb.Error as e:
        raise QueryError(one_line(*_positioned(con, sql, e))) from None


#: What :func:`_positioned` puts before the query on its first line.
_PREPARED = "PREPARE _segtools_where AS "


def _positioned(con, sql: str, error: Exception) -> tuple[Exception, int]:
    """The error as the statement API words it: DuckDB's relation API drops the ``LINE n:``
    excerpt that says where in the query the error is, so the query is prepared (bound, not
    run) once more to have it. Also returned: how many characters the statement adds before
    the query on its first line, which a column there counts too."""
    duckdb = duckdb_module()
    query = strip(sql)
    try:
        con.execute(f"{_PREPARED}{query}")
    except duckdb.Error as again:
        if type(again) is type(error):  # the query sits after the prefix, less its indent
            return again, len(_PREPARED) - (len(sql) - len(sql.lstrip()))
        return error, 0
    con.execute("DEALLOCATE _segtools_where")
    return error, 0


def export(con, sql: str, target: str | os.PathLike[str], bytes_mode: str = "base64") -> None:
    """The query's rows written by the engine's own writer, in the format the suffix names.
    A text format (CSV, JSON Lines) gets bytes as ``bytes_mode`` renders them (``--bytes``),
    as the rows printed on stdout have them; Parquet keeps them binary."""
    duckdb = duckdb_module()
    suffix = Path(target).suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise QueryError(f"{target}: the output's suffix must be one of "
                         f"{', '.join(EXPORT_FORMATS)}")
    quoted = os.path.abspath(target).replace("'", "''")
    kind = EXPORT_FORMATS[suffix]
    try:
        rows = strip(sql)
        if kind != "PARQUET":
            rows = _bytes_as_text(con, rows, bytes_mode)
        con.execute(f"COPY ({rows}) TO '{quoted}' (FORMAT {kind})")
    except duckdb.Error as e:
        raise QueryError(one_line(e)) from None


#: a BLOB as text, per ``--bytes`` (``render.render_bytes``'s modes): DuckDB's text writers
#: would cast it to DuckDB's own escaped text (``\x00\x01``, every byte past ASCII escaped,
#: valid UTF-8 too), which no other face prints and few readers undo. ``utf8`` decodes
#: valid UTF-8; a value that is not keeps DuckDB's escapes, whole
_BYTES_AS_TEXT = {"base64": "base64({0})", "hex": "lower(hex({0}))",
                  "utf8": "coalesce(try(decode({0})), {0}::VARCHAR)"}


def _bytes_as_text(con, sql: str, bytes_mode: str) -> str:
    """``sql`` with every BLOB of its rows (in lists, structs and maps too) as text, or
    ``sql`` itself when it has none. Its columns are taken by position (a join may repeat a
    name) and keep their names."""
    relation = con.sql(sql)
    names = [f"_segtools_{i}" for i in range(len(relation.columns))]
    columns = [_as_text(typed.quoted(alias), kind, bytes_mode, 0) for alias, kind
               in zip(names, relation.types, strict=True)]
    if all(c is None for c in columns):
        return sql
    rows = f"({sql}) AS _segtools_rows({', '.join(typed.quoted(n) for n in names)})"
    chosen = ", ".join(f"{c or typed.quoted(alias)} AS {typed.quoted(name)}" for c, alias, name
                       in zip(columns, names, relation.columns, strict=True))
    return f"SELECT {chosen} FROM {rows}"


def _as_text(expr: str, kind, bytes_mode: str, depth: int) -> str | None:
    """``expr`` (of DuckDB type ``kind``) with its BLOBs as text, or None when it holds
    none (it is written as it is)."""
    if kind.id == "blob":
        return _BYTES_AS_TEXT[bytes_mode].format(expr)
    if kind.id == "list":
        item = f"_segtools_item{depth}"
        inner = _as_text(item, kind.children[0][1], bytes_mode, depth + 1)
        return None if inner is None else f"list_transform({expr}, lambda {item}: {inner})"
    if kind.id == "map":
        entry = f"_segtools_entry{depth}"
        inner = _as_text(entry, duckdb_module().struct_type(dict(kind.children)), bytes_mode,
                         depth + 1)
        return None if inner is None else \
            f"map_from_entries(list_transform(map_entries({expr}), lambda {entry}: {inner}))"
    if kind.id == "struct":
        fields = [(name, _as_text(f"{expr}.{typed.quoted(name)}", child, bytes_mode, depth))
                  for name, child in kind.children]
        if all(field is None for _, field in fields):
            return None
        packed = ", ".join(f"{typed.quoted(name)} := {field or f'{expr}.{typed.quoted(name)}'}"
                           for name, field in fields)
        return f"CASE WHEN {expr} IS NULL THEN NULL ELSE struct_pack({packed}) END"
    return None


def strip(sql: str) -> str:
    """The query without its closing semicolons, to sit inside ``COPY (...)``."""
    return sql.strip().rstrip(";").rstrip()


_MISSING_TABLE = re.compile(r"^Catalog Error: Table with name (.+) does not exist!")
_CARET = re.compile(r"^LINE (\d+): (.*)\n(\s*)\^", re.MULTILINE)


def one_line(error: Exception, shift: int = 0) -> str:
    """DuckDB's message on one line: its first line and its "Did you mean" hint, then the
    line and column of the query it points at (DuckDB draws them as a ``LINE n:`` excerpt
    and a caret; ``shift``: characters before the query on the excerpt's first line)."""
    text = str(error)
    lines = text.strip().splitlines()
    first = lines[0] if lines else type(error).__name__
    hint = next((line.strip() for line in lines[1:3] if line.startswith("Did you mean")), "")
    missing = _MISSING_TABLE.match(first)
    if missing is not None:  # only the views a query names exist: DuckDB's guess is not ours
        close = difflib.get_close_matches(missing.group(1).lower(), list(VIEWS), n=1)
        hint = f'Did you mean "{close[0]}"?' if close else \
            f"(the views: {', '.join(VIEWS)}, and with decoding one per topic)"
    if hint:
        first = f"{first} {hint}"
    found = _CARET.search(text)
    if found is None:
        return first
    line = int(found.group(1))
    column = len(found.group(3)) - len(f"LINE {found.group(1)}: ") + 1
    if line == 1:
        column -= shift
    return f"{first} (line {line}, column {column})"
