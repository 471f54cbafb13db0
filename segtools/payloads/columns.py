"""Decoded payloads as Arrow columns: what ``to_arrow(decode=True)``, ``records(decode=True)``,
``segtools.decode_table`` and the Spark source's ``decode`` option add to a record table.

Per side (``key_`` and ``value_``): ``*_decoded`` (the value as JSON text), ``*_schema_id``,
``*_schema_subject``, ``*_schema_version``, ``*_schema_type`` and ``*_payload_error`` (the
``payload_*`` finding code when the payload did not decode; its bytes stay in ``key``/``value``).
The SQL views of the query face are built on these names: they do not change.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from segtools.payloads.decoder import PayloadDecoder
from segtools.payloads.errors import PayloadError

SIDE_FIELDS = (("decoded", pa.string()), ("schema_id", pa.int32()),
               ("schema_subject", pa.string()), ("schema_version", pa.int32()),
               ("schema_type", pa.string()), ("payload_error", pa.string()))
#: The columns added, in order.
FIELDS = tuple(pa.field(f"{side}_{name}", kind) for side in ("key", "value")
               for name, kind in SIDE_FIELDS)
SCHEMA = pa.schema(FIELDS)


def _side(decoder: PayloadDecoder, payloads: list, topics: list, is_key: bool
          ) -> Iterator[list]:
    decoded, ids, subjects, versions, types, errors = [], [], [], [], [], []
    for data, topic in zip(payloads, topics, strict=True):
        try:
            found = decoder.decode(data, topic=topic, is_key=is_key)
        except PayloadError as e:
            found, error = None, e.code
        else:
            error = None
        if found is None:
            decoded.append(None)
            ids.append(None)
            subjects.append(None)
            versions.append(None)
            types.append(None)
        else:
            decoded.append(found.json_text())
            ids.append(found.schema.id)
            subjects.append(found.schema.subject)
            versions.append(found.schema.version)
            types.append(found.schema.type)
        errors.append(error)
    return iter((decoded, ids, subjects, versions, types, errors))


def decoded_columns(decoder: PayloadDecoder, table: pa.Table | pa.RecordBatch
                    ) -> list[pa.Array]:
    """The decode columns of a table with binary ``key`` and ``value`` columns (and
    ``topic``, when it has one: the subject named for an id follows the topic)."""
    n = table.num_rows
    topics = table.column("topic").to_pylist() if "topic" in table.schema.names else [None] * n
    out = []
    for side, is_key in (("key", True), ("value", False)):
        payloads = table.column(side).to_pylist() if side in table.schema.names else [None] * n
        for (_, kind), values in zip(SIDE_FIELDS, _side(decoder, payloads, topics, is_key),
                                     strict=True):
            out.append(pa.array(values, kind))
    return out


def with_decoded(decoder: PayloadDecoder, batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with the decode columns appended."""
    columns = decoded_columns(decoder, batch)
    return pa.RecordBatch.from_arrays(list(batch.columns) + columns,
                                      schema=extend_schema(batch.schema))


def extend_schema(schema: pa.Schema) -> pa.Schema:
    for f in FIELDS:
        schema = schema.append(f)
    return schema


def decode_table(table: pa.Table, decoder: PayloadDecoder) -> pa.Table:
    """``table`` with the decode columns appended (Arrow the user already has)."""
    columns = decoded_columns(decoder, table)
    for f, column in zip(FIELDS, columns, strict=True):
        table = table.append_column(f, column)
    return table
