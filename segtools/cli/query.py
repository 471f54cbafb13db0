"""``segtools query``: SQL over log dirs, on the embedded DuckDB engine.

The views (``records``, ``batches``, ``segments``, ``findings``, ``retention``,
``producers``, ``transactions``, ``offsets``, ``schemas``, and with ``--decode`` one typed
view per Avro topic) are segtools' own reads and analyses; conditions on topic, partition,
offset and a lower time bound choose the partitions, segments and byte positions before
anything is decoded, and only the columns the query names are decoded. ``offset`` is a
keyword in DuckDB: write it ``"offset"``.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import decimal
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pyarrow as pa

from segtools.api import LogDirs
from segtools.cli import common, render
from segtools.cli.decoding import add_decode, decode_modes
from segtools.cli.table import Column, TextTable, layout
from segtools.errors import SegtoolsError
from segtools.fetch import arguments
from segtools.findings import Finding
from segtools.sql import engine
from segtools.sql.trees import Trees
from segtools.sql.views import Options

EXAMPLES = """examples:
  segtools query /data/kafka -c "select topic, count(*) from records group by 1"
  segtools query /data/kafka --format jsonl -c "select * from records
      where topic = 'orders' and partition = 3 and \\"offset\\" = 1000"
  segtools query bundle.tar.gz -o gone.parquet \\
      -c "select * from records where topic = 'gone'"
  segtools query /data/kafka -c "select code, count(*) from findings group by 1"
  segtools query /data/kafka --decode -c "select order_id, total from orders"
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = common.add_command(sub, "query", "SQL over log dirs: records, batches, segments, findings",
                           __doc__, EXAMPLES)
    common.add_paths(p, "log dirs, partition dirs, segment files, archives or s3:// locations")
    common.add_at(p, "the moment the retention and transactions views answer for, as those "
                     "commands' --at (default: now, read once for the whole query)")
    p.add_argument("-c", "--command", required=True, metavar="SQL", dest="sql",
                   help="the query (DuckDB's SQL) over the views records, batches, segments, "
                        "findings, retention, producers, transactions, offsets, schemas")
    common.add_format(p, extra=("csv",))
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the rows with the engine's writer: .parquet, .csv or .jsonl")
    p.add_argument("--bytes", choices=render.BYTES_MODES, default="base64",
                   help="how keys, values and header values are shown (default base64)")
    p.add_argument("--memory", default=engine.DEFAULT_MEMORY, metavar="SIZE",
                   help=f"the engine's memory limit; beyond it, it spills to a temporary "
                        f"directory (default {engine.DEFAULT_MEMORY})")
    p.add_argument("--temp-limit", default=engine.DEFAULT_TEMP_LIMIT, metavar="SIZE",
                   help=f"cap on the spill files (default {engine.DEFAULT_TEMP_LIMIT})")
    p.add_argument("--time-index", action="store_true",
                   help="read an upper time bound as Kafka reads a time range (ListOffsets: "
                        "up to the first record at or after it, through the time index), "
                        "so a range in the middle of a long log reads its own segments; a "
                        "later record with an earlier time is then not read. Without it, "
                        "the read goes on to the end of each partition")
    p.add_argument("--states", default="live", metavar="STATES",
                   help="which partition directories the records, batches and segments "
                        "views read: live (default), delete (what a deleted topic left, "
                        "<topic>-<n>.<id>-delete), future, stray, comma-separated, or all")
    p.add_argument("--include-control", action="store_true",
                   help="keep control records (transaction markers) in records, as dump "
                        "prints them; by default the view holds what a consumer is handed")
    p.add_argument("--explain", action="store_true",
                   help="print what the record views would read instead of the rows: the "
                        "partitions walked, the segments and bytes chosen by the pushed "
                        "conditions against those of the selected partitions, the bounds")
    add_decode(p)
    common.add_decompress_limit(p)
    common.add_quiet(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    def open_tree(paths: tuple[str, ...]) -> LogDirs:
        # the command's own --page-cache, --max-read-rate and --jobs: each tree decides its
        # gentle settings from them as the command did (the same lock, the same choices)
        return LogDirs(paths, max_decompressed_bytes=args.max_decompressed_bytes,
                       page_cache=getattr(args, "page_cache", None),
                       max_read_rate=getattr(args, "max_read_rate", None),
                       jobs=getattr(args, "jobs", None), relist=False)

    decode_modes(args)  # a mode that is not one is said even when no view decodes
    if args.output is not None:
        _refuse_inside(args.output, args.paths)
    read: list[Finding] = []
    with common.collector_paused():
        # everything loaded so far (pyarrow, numpy, segtools' reading stack) and DuckDB, which
        # loads here, lives until the process ends: frozen, no collection during the walk
        # walks it again, and the exit leaves it to the operating system instead of tearing
        # down its objects one by one (0.04-0.1 s of CPU a command: docs/performance.md).
        # Only the imports: registering may read a view whole (a view named twice), and a
        # read's cycles must stay collectable
        engine.duckdb_module()
    with ExitStack() as progress, \
            engine.session(engine.Limits(args.memory, args.temp_limit),
                           output=args.output) as con:
        advance = progress.enter_context(common.rows_progress("reading", quiet=args.quiet))
        # rows printed on the terminal the bar is drawn on would be glued to it: the bar
        # goes once the first rows (or the end) arrive, which are then progress enough
        before_rows = progress.close if sys.stdout.isatty() else None
        options = Options(decode=args.decode or False, schemas=tuple(args.schemas),
                          schema_registry=args.schema_registry, on_rows=advance,
                          on_finding=read.append, time_index=args.time_index,
                          at_ms=common.moment(args),
                          states=arguments.states(args.states, "--states"),
                          include_control=args.include_control)
        trees = Trees(args.paths, open_tree)
        if args.explain:
            _print(engine.Result(engine.explain(con, trees, args.sql, options).to_reader(),
                                 frozenset()), args, before_rows)
            return common.exit_code(read)
        engine.register(con, trees, args.sql, options)
        if args.output is not None:
            engine.export(con, args.sql, args.output, args.bytes)
        else:
            _print(engine.result(con, args.sql), args, before_rows)
    if read:
        print(f"segtools: query: {len(read)} finding(s) met while reading "
              f"(the findings view lists them)", file=sys.stderr)
    return common.exit_code(read)


def _refuse_inside(output: str, paths: list[str]) -> None:
    """Nothing under the locations read is ever written: not even the user's own export."""
    target = Path(output).resolve()
    for place in paths:
        if "://" in place:
            continue
        root = Path(place).resolve()
        if target == root or root in target.parents:
            raise SegtoolsError(f"refusing to write under a location read ({place})",
                                path=output)


def _print(result: engine.Result, args: argparse.Namespace,
           before_rows: Callable[[], None] | None = None) -> None:
    """The rows on stdout in ``args.format``; ``before_rows`` is called once the first rows
    (or the end of none) are at hand, before anything is written."""
    reader = _announced(result.reader, before_rows)
    names = unique(reader.schema.names)
    out = sys.stdout
    if args.format == "jsonl":
        nested = [name in result.json_columns for name in reader.schema.names]
        for values in _rows(reader, args.bytes):
            row = {name: json.loads(v) if is_json and v is not None else v
                   for name, v, is_json in zip(names, values, nested, strict=True)}
            out.write(render.dumps(row) + "\n")
    elif args.format == "csv":
        writer = csv.writer(out)
        writer.writerow(names)
        for values in _rows(reader, args.bytes):
            writer.writerow(["" if v is None else _cell(v) for v in values])
    else:
        numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
                   or pa.types.is_decimal(f.type) for f in reader.schema]
        columns = [Column(render.terminal_safe(n), right=r)
                   for n, r in zip(names, numeric, strict=True)]
        with TextTable(columns, out) as table:
            for values in _rows(reader, args.bytes):
                table.add(*(render.terminal_safe("null" if v is None else _cell(v))
                            for v in values))
        if table.rows == 0:  # no rows still names the columns: the query ran, and matched none
            out.write(layout(columns, (), table.width).render(
                [c.name for c in columns], [c.right for c in columns]) + "\n")


def _announced(reader: pa.RecordBatchReader, before_rows: Callable[[], None] | None
               ) -> pa.RecordBatchReader:
    """The stream, calling ``before_rows`` when its first batch or its end arrives."""
    if before_rows is None:
        return reader

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            for batch in reader:
                before_rows()
                yield batch
        finally:
            before_rows()

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def unique(names: list[str]) -> list[str]:
    """Column names made unique for a JSON object's keys (a join's two ``path`` columns:
    ``path``, ``path_2``), in order."""
    seen: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate in seen:
            n += 1
            candidate = f"{name}_{n}"
        seen.add(candidate)
        out.append(candidate)
    return out


def _rows(reader: pa.RecordBatchReader, bytes_mode: str) -> Iterator[list]:
    """Rows as lists of JSON-ready values, by position (names may repeat), streamed batch by
    batch."""
    for batch in reader:
        columns = [_values(column) for column in batch.columns]
        for values in zip(*columns, strict=True):
            yield [_plain(v, bytes_mode) for v in values]


def _values(column: pa.Array) -> list:
    """A column as Python values. A time zone's column (every time of the views, which are
    ``TIMESTAMP WITH TIME ZONE``) is read as the UTC instants it holds (the same buffers
    viewed without the zone), then given UTC: pyarrow resolves a zone name through pandas
    when it converts, and importing pandas (0.4 s) or pyarrow's compute functions (a cast,
    0.1 s) is slower than the rest of a point query's work together. A map is an object (a
    typed view's Avro map or Protobuf ``map<K, V>``, shown as ``value_decoded`` shows it),
    not pyarrow's list of key-value pairs."""
    kind = column.type
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        instants = column.view(pa.timestamp(kind.unit))
        return [None if v is None else v.replace(tzinfo=datetime.UTC)
                for v in instants.to_pylist()]
    return column.to_pylist(maps_as_pydicts="lossy")


def _plain(value, bytes_mode: str):
    """A value as JSON has it: bytes by ``--bytes``, times as ISO-8601, decimals as text."""
    if isinstance(value, bytes):
        return render.render_bytes(value, bytes_mode)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v, bytes_mode) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, bytes_mode) for v in value]
    return value


def _cell(value) -> str:
    """One table or CSV cell: text as it is, anything nested as its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return render.dumps({"v": value})[5:-1]
    return str(value).lower() if isinstance(value, bool) else str(value)


