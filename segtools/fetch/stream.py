"""A planned read as an Arrow stream that can be read more than once, and payloads as text.

A :class:`pyarrow.RecordBatchReader` is spent after one pass, and a second ``read_all()`` on it
returns an empty table without a word: in a notebook, re-running the cell that reads it gives
zero rows. :class:`ArrowRead` keeps the plan instead (the byte ranges, the scan and where
findings go) and starts a fresh pass at every use, including the Arrow C stream interface
that DuckDB, polars and ``pyarrow.table`` consume, so each of them sees every row each time.

Kafka keys and values are bytes; SQL engines need text to run JSON functions on them.
:func:`payloads_as_text` turns ``key``/``value`` into UTF-8 ``string`` columns with Arrow's
validating cast, falling back to a replacing decode (U+FFFD) only for a batch that holds
bytes which are not UTF-8, so a stray binary payload cannot fail the whole read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

#: The payload columns ``strings=True`` turns into text.
PAYLOADS = ("key", "value")


class ArrowRead:
    """A read that starts again at each use; everything a ``RecordBatchReader`` offers for
    reading (``schema``, iteration, ``read_all``, ``read_pandas``) plus ``to_pandas``,
    ``to_polars`` and the Arrow PyCapsule stream, each a new pass over the same plan."""

    def __init__(self, schema: pa.Schema, start: Callable[[], Iterator[pa.RecordBatch]]):
        self._schema = schema
        self._start = start

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def reader(self) -> pa.RecordBatchReader:
        """A fresh one-pass reader over the planned ranges."""
        return pa.RecordBatchReader.from_batches(self._schema, self._start())

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return iter(self.reader())

    def read_all(self) -> pa.Table:
        return self.reader().read_all()

    def read_pandas(self, **options: Any):
        return self.reader().read_pandas(**options)

    to_pandas = read_pandas

    def to_polars(self):
        """A ``polars.DataFrame`` of every row (``pl.from_arrow`` of the stream itself gives a
        Series of structs: polars reads a bare stream as one column). polars, an optional
        dependency (the ``frames`` extra), is imported here, when asked for: a lazy module in
        ``sys.modules`` would make DuckDB, which checks for polars there, import it on every
        query (0.1 s)."""
        import polars

        return polars.from_arrow(self.read_all())

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.reader().__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        names = ", ".join(self._schema.names)
        return (f"<segtools.ArrowRead ({names}); read_all(), to_pandas(), to_polars() or SQL "
                "read it afresh>")


def payloads_as_text_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its payload columns as UTF-8 text."""
    for name in PAYLOADS:
        if name in schema.names:
            i = schema.get_field_index(name)
            schema = schema.set(i, schema.field(i).with_type(pa.string()))
    return schema


def payloads_as_text(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its payload columns as UTF-8 text (see the module doc)."""
    for name in PAYLOADS:
        if name in batch.schema.names:
            i = batch.schema.get_field_index(name)
            batch = batch.set_column(i, batch.schema.field(i).with_type(pa.string()),
                                     _text(batch.column(i)))
    return batch


def _text(column: pa.Array) -> pa.Array:
    try:
        return column.cast(pa.string())
    except pa.ArrowInvalid:  # some bytes are not UTF-8: decode this batch value by value
        return pa.array([None if v is None else v.decode("utf-8", "replace")
                         for v in column.to_pylist()], pa.string())
