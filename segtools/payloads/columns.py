"""Decoded payloads as Arrow columns: what ``to_arrow(decode=True)``, ``records(decode=True)``,
``segtools.decode_table`` and the Spark source's ``decode`` option add to a record table.

Per side (``key_`` and ``value_``): ``*_decoded`` (the value as JSON text), ``*_schema_id``,
``*_schema_subject``, ``*_schema_version``, ``*_schema_type``, ``*_schema_message`` (for
Protobuf the full name of the message the frame's indexes chose, as the CLI's ``"message"``)
and ``*_payload_error`` (the ``payload_*`` finding code when the payload did not decode; its
bytes stay in ``key``/``value``). The SQL views of the query face are built on these names:
they do not change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import lazy_loader
import numpy as np
import pyarrow as pa

from segtools.payloads import framing
from segtools.payloads.decoded import SchemaUse
from segtools.payloads.errors import BodyMismatch, PayloadError

if TYPE_CHECKING:  # the decoder is handed in: reading these columns' names loads none
    from segtools.payloads.decoder import PayloadDecoder

#: pyarrow's compute module (0.1 s to import) only when values are decoded: a query that
#: decodes nothing never pays for it.
pc = lazy_loader.load("pyarrow.compute", suppress_warning=True)

SIDE_FIELDS = (("decoded", pa.string()), ("schema_id", pa.int32()),
               ("schema_subject", pa.string()), ("schema_version", pa.int32()),
               ("schema_type", pa.string()), ("schema_message", pa.string()),
               ("payload_error", pa.string()))
#: What the Avro texts of one side's column may fill together (the compiled transcoder refuses
#: the values past it): a ``string`` array's int32 offsets hold 2 GiB, and the column also
#: holds each value's last text (capped at 64 MiB) and what the other formats decoded.
MAX_COLUMN_JSON = 1 << 30
#: Each side's column names, without the side's prefix.
NAMES = tuple(name for name, _ in SIDE_FIELDS)
#: The columns added, in order.
FIELDS = tuple(pa.field(f"{side}_{name}", kind) for side in ("key", "value")
               for name, kind in SIDE_FIELDS)
SCHEMA = pa.schema(FIELDS)
FIELD_NAMES = frozenset(f.name for f in FIELDS)


@dataclass(frozen=True, slots=True)
class Side:
    """One side's payloads, decoded: the columns, and for each value that did not decode
    the reason (what a finding says; the column holds only the code)."""

    columns: list[pa.Array]
    messages: list[str | None]
    schemas: np.ndarray  # per value its SchemaUse or None

    @property
    def decoded(self) -> pa.Array:
        """The ``*_decoded`` column (JSON text)."""
        return self.columns[NAMES.index("decoded")]

    @property
    def errors(self) -> pa.Array:
        """The ``*_payload_error`` column (finding codes)."""
        return self.columns[NAMES.index("payload_error")]


@dataclass(frozen=True, slots=True)
class Payloads:
    """Values as spans of one buffer: ``data[starts[i]:starts[i] + lengths[i]]``, length -1
    for null (the record decoder's columns, or an Arrow binary column's buffers)."""

    data: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of_column(cls, column: pa.Array) -> Payloads:
        """A binary column's buffers (views copied once into plain ``binary``)."""
        column = column.cast(pa.binary()) if column.type != pa.binary() else column
        n = len(column)
        buffers = column.buffers()
        offsets = (np.frombuffer(buffers[1], np.int32)[column.offset:column.offset + n + 1]
                   .astype(np.int64) if buffers[1] is not None else np.zeros(n + 1, np.int64))
        data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None and \
            buffers[2].size else np.zeros(0, np.uint8)
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        return cls(data, offsets[:-1], np.where(valid, offsets[1:] - offsets[:-1], -1))

    def __len__(self) -> int:
        return len(self.starts)

    def get(self, i: int) -> bytes | None:
        n = int(self.lengths[i])
        return None if n < 0 else self.data[self.starts[i]:self.starts[i] + n].tobytes()

    def schema_ids(self) -> np.ndarray:
        """Each value's frame schema id, -1 without a frame (null, short, no magic byte).
        Five byte gathers over the framed rows only (no per-row Python, no n x 5 matrix)."""
        out = np.full(len(self), -1, np.int32)
        rows = np.flatnonzero(self.lengths >= framing.HEADER_SIZE)
        rows = rows[self.data[self.starts[rows]] == framing.MAGIC_BYTE]
        at = self.starts[rows]
        data = self.data
        ids = ((data[at + 1].astype(np.uint32) << 24) | (data[at + 2].astype(np.uint32) << 16)
               | (data[at + 3].astype(np.uint32) << 8) | data[at + 4])
        out[rows] = ids.view(np.int32)
        return out


def _constant(value, kind: pa.DataType, ok: np.ndarray) -> pa.Array:
    """``value`` on every row where ``ok``, null elsewhere: one schema's subject, type or
    code for a run of rows, without a Python object per row."""
    if value is None:
        return pa.nulls(len(ok), kind)
    if ok.all():
        return pa.repeat(pa.scalar(value, kind), len(ok))
    return pc.if_else(pa.array(ok), pa.scalar(value, kind), pa.scalar(None, kind))


def _slow(decoder: PayloadDecoder, values: list, topics: list, is_key: bool
          ) -> tuple[list[pa.Array], list[str | None], list[SchemaUse | None]]:
    """Value by value (what the column path leaves: other formats, unknown ids, no frame)."""
    decoded, ids, subjects, versions, types, names, errors, messages = ([] for _ in range(8))
    uses: list[SchemaUse | None] = []
    for data, topic in zip(values, topics, strict=True):
        try:
            found = decoder.decode(data, topic=topic, is_key=is_key)
        except PayloadError as e:
            found, error, message = None, e.code, str(e)
        else:
            error = message = None
        if found is None:
            decoded.append(None)
            ids.append(None)
            subjects.append(None)
            versions.append(None)
            types.append(None)
            names.append(None)
        else:
            decoded.append(found.json_text())
            ids.append(found.schema.id)
            subjects.append(found.schema.subject)
            versions.append(found.schema.version)
            types.append(found.schema.type)
            names.append(found.schema.message)
        errors.append(error)
        messages.append(message)
        uses.append(None if found is None else found.schema)
    lists = (decoded, ids, subjects, versions, types, names, errors)
    return ([pa.array(v, kind) for v, (_, kind) in zip(lists, SIDE_FIELDS, strict=True)],
            messages, uses)


@dataclass(frozen=True, slots=True)
class Topics:
    """Each row's topic as a code into ``names`` (-1: none): the subject an id is named by
    follows the topic, and a column of one topic is one code, not a string per row."""

    codes: np.ndarray
    names: list[str]

    @classmethod
    def of_column(cls, column: pa.Array | None, n: int) -> Topics:
        if column is None:
            return cls(np.full(n, -1, np.int64), [])
        encoded = column.dictionary_encode()
        return cls(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
                   .astype(np.int64), encoded.dictionary.to_pylist())

    @classmethod
    def one(cls, topic: str | None, n: int) -> Topics:
        return cls(np.full(n, -1 if topic is None else 0, np.int64),
                   [] if topic is None else [topic])

    def name(self, i: int) -> str | None:
        code = int(self.codes[i])
        return None if code < 0 else self.names[code]


def decode_side(decoder: PayloadDecoder, payloads: Payloads, topics: Topics,
                is_key: bool) -> Side:
    """One side's columns. Avro values of one id and topic are transcoded together (one
    compiled call writing the column's text buffer); the rest go value by value; the pieces
    are put back in row order with one ``take``."""
    n = len(payloads)
    ids = payloads.schema_ids()
    codes, names = topics.codes, topics.names
    fast = np.zeros(n, bool)
    messages: list[str | None] = [None] * n
    uses = np.full(n, None, object)
    pieces: list[tuple[np.ndarray, list[pa.Array]]] = []
    framed = ids >= 0
    budget = MAX_COLUMN_JSON  # what the column's Avro texts may fill together
    # one key per (schema id, topic): the id in the high bits, the topic code + 1 below
    keys = np.unique((ids[framed].astype(np.int64) << 32) | (codes[framed] + 1))
    for schema_id, code in ((int(k >> 32), int(k & 0xFFFFFFFF) - 1) for k in keys):
        found = decoder.transcoder(schema_id, names[code] if code >= 0 else None, is_key)
        if found is None:
            continue
        transcode, use = found
        rows = np.flatnonzero((ids == schema_id) & (codes == code))
        starts = payloads.starts[rows]
        texts, text_offsets, failed = transcode.many(
            payloads.data, starts + framing.HEADER_SIZE, starts + payloads.lengths[rows],
            budget)
        budget -= len(texts)
        ok = failed == 0
        for j in np.flatnonzero(~ok):
            messages[rows[j]] = f"Avro body does not decode: {transcode.why(failed[j])}"
        uses[rows[ok]] = use
        k = len(rows)
        pieces.append((rows, [
            pa.StringArray.from_buffers(k, pa.py_buffer(text_offsets), pa.py_buffer(texts),
                                        pa.py_buffer(np.packbits(ok, bitorder="little"))),
            _constant(use.id, pa.int32(), ok),
            _constant(use.subject, pa.string(), ok),
            _constant(use.version, pa.int32(), ok),
            _constant(use.type, pa.string(), ok),
            pa.nulls(k, pa.string()),  # Avro: no message
            _constant(BodyMismatch.code, pa.string(), ~ok)]))
        fast[rows] = True
    # nothing to decode, without asking value by value: nulls, and keys without a frame in
    # schema mode (the decoder leaves those undecoded)
    skip = payloads.lengths < 0
    if is_key and decoder.modes.key == "schema":
        skip |= ids < 0
    skip &= ~fast
    if skip.any():
        rows = np.flatnonzero(skip)
        pieces.append((rows, [pa.nulls(len(rows), kind) for _, kind in SIDE_FIELDS]))
        fast |= skip
    rest = np.flatnonzero(~fast)
    if len(rest):
        columns, slow_messages, slow_uses = _slow(decoder, [payloads.get(i) for i in rest],
                                                  [topics.name(i) for i in rest], is_key)
        for i, message, use in zip(rest, slow_messages, slow_uses, strict=True):
            messages[i] = message
            uses[i] = use
        pieces.append((rest, columns))
    if len(pieces) == 1:
        return Side(pieces[0][1], messages, uses)
    if not pieces:
        return Side([pa.nulls(0, kind) for _, kind in SIDE_FIELDS], messages, uses)
    order = np.argsort(np.concatenate([rows for rows, _ in pieces]), kind="stable")
    return Side([pa.concat_arrays([p[1][j] for p in pieces]).take(pa.array(order))
                 for j in range(len(SIDE_FIELDS))], messages, uses)


def decoded_columns(decoder: PayloadDecoder, table: pa.Table | pa.RecordBatch,
                    wanted: Sequence[str] | None = None) -> list[pa.Array]:
    """The decode columns of a table with binary ``key`` and ``value`` columns (and
    ``topic``, when it has one: the subject named for an id follows the topic): all of
    :data:`FIELDS`, or the ones named in ``wanted``, in that order. A side none of whose
    columns is wanted is not decoded at all (a Spark schema naming only ``value_decoded``
    decodes no key)."""
    names = [f.name for f in FIELDS] if wanted is None else list(wanted)
    unknown = [name for name in names if name not in FIELD_NAMES]
    if unknown:
        raise ValueError(f"not decode columns: {', '.join(unknown)}")
    n = table.num_rows
    topic = table.column("topic") if "topic" in table.schema.names else None
    if isinstance(topic, pa.ChunkedArray):
        topic = topic.combine_chunks()
    topics = Topics.of_column(topic, n)
    found: dict[str, pa.Array] = {}
    for side, is_key in (("key", True), ("value", False)):
        if not any(name.startswith(f"{side}_") for name in names):
            continue
        if side in table.schema.names:
            column = table.column(side)
            if isinstance(column, pa.ChunkedArray):
                column = column.combine_chunks()
        else:
            column = pa.nulls(n, pa.binary())
        columns = decode_side(decoder, Payloads.of_column(column), topics, is_key).columns
        found.update(zip((f"{side}_{name}" for name in NAMES), columns, strict=True))
    return [found[name] for name in names]


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
