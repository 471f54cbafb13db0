"""Field programs: the internal topics' schema declarations, compiled for the compiled decoder.

The declarations in :mod:`segtools.formats.internal` stay the one source of truth. For each
(schema, version) this module lays out a *program* (one row per field, in wire order, for the
interpreter in ``_programs.pyx``) and a *slot layout*: where each top-level field's value lands
in a record's row of int64 columns. A change to a declaration changes both the reference
(:mod:`segtools.formats.internal.generated`) and the program, so the two cannot drift;
an analysis names the fields it reads (:meth:`Family.slot`), and a name or type the
declarations no longer have fails there, when the family is built.

Four families frame records the way their topics do: ``__consumer_offsets``
(``GroupCoordinatorRecordSerde``), ``__transaction_state`` (``TransactionLog``),
``__cluster_metadata`` and ``__remote_log_metadata`` (both ``AbstractApiMessageSerde``). A
:class:`Decoder` runs one over a window of records (key and value spans, as
:class:`~segtools.decode.chunks.RecordColumns` hold them) and returns a :class:`Block`: per
record a status, the record type and versions, and its slots; strings chosen by the family
come out as dense codes of the decoder's interners. A :class:`Block` can rebuild any record's
value exactly as the reference reads it (``value``, ``key``), which the differential tests
hold it to.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from segtools.decode import _programs as K
from segtools.decode.chunks import Chunk
from segtools.formats.internal import (
    cluster_metadata,
    consumer_offsets,
    remote_log_metadata,
    transaction_state,
)
from segtools.formats.internal.generated import (
    UNKNOWN_TAGGED_FIELDS,
    ArrayOf,
    Field,
    Message,
    Primitive,
    Reader,
    StructDef,
)

_CODES = {"int8": K.OP_INT8, "int16": K.OP_INT16, "int32": K.OP_INT32, "int64": K.OP_INT64,
          "uint16": K.OP_UINT16, "uint32": K.OP_UINT32, "float64": K.OP_FLOAT64,
          "bool": K.OP_BOOL, "uuid": K.OP_UUID, "string": K.OP_STRING, "bytes": K.OP_BYTES}
_FLOAT = struct.Struct(">d")
_BITS = struct.Struct(">q")
#: Records decoded per kernel call (bounds the slot matrix: rows x slots x 8 bytes).
BLOCK_ROWS = 65536

SCALAR, UUID, SPAN = "scalar", "uuid", "span"

#: A block's row status (``Block.status``): decoded, passed over (a record of no interest),
#: refused (the reference decoder says why).
ST_OK, ST_SKIP, ST_ERROR = K.ST_OK, K.ST_SKIP, K.ST_ERROR
#: A slot flag: the field's text is interned (its slot holds a code, ``Decoder.texts``).
F_INTERN = K.F_INTERN
#: The compiled helpers the replays call on a block's bytes: spans (key or value bytes of
#: many rows), blob (one field's bytes), versioned and versioned_fields (the members of a
#: group's versioned arrays).
spans, blob, versioned, versioned_fields = K.spans, K.blob, K.versioned, K.versioned_fields


class SchemaBindingError(AssertionError):
    """An analysis reads a field the declarations do not have (renamed, retyped, removed)."""


def _kind(type_) -> str:
    if isinstance(type_, Primitive):
        if type_.name == "uuid":
            return UUID
        return SPAN if type_.name in ("string", "bytes") else SCALAR
    return SPAN


def _width(kind: str) -> int:
    return 2 if kind == SPAN else 1


def _scalar_default(f: Field) -> int:
    value = f.default_value()
    if f.type.name == "float64":
        return _BITS.unpack(_FLOAT.pack(float(value)))[0]
    return int(value)


#: A field's value from its two slot values (a span: position and length or count; ``b``
#: -1 null, -2 absent from the record: the declared default), the block's bytes and the
#: decoder (its interned strings).
Reader_ = Callable[[int, int, np.ndarray, Any], Any]


@dataclass(frozen=True, slots=True)
class Slot:
    """Where one field of a struct lands: ``slot`` (and ``slot + 1`` for a span) of the row,
    and how its value is read back from there (``read``, made once per field)."""

    field: Field
    kind: str
    slot: int
    code: int  # the type code (for an array, its element's)
    flags: int
    sub: Program | None  # the element / struct program of an array of structs, a struct
    read: Reader_
    second: int  # the slot holding a span's length (a scalar's own slot: read, not used)


@dataclass(slots=True, eq=False)
class Program:
    """One struct at one version: its rows in the family's ``ops`` and its slot layout."""

    sdef: StructDef
    version: int
    flexible: bool
    first: int = 0
    count: int = 0
    width: int = 0  # slots this struct's layout spans (from ``base``)
    base: int = 0
    slots: dict[str, Slot] = field(default_factory=dict)
    tags_slot: int | None = None
    defaults: np.ndarray | None = None  # the layout's default row (relative to ``base``)

    def materialize(self, buf: np.ndarray, row, ctx: Block | Decoder) -> dict:
        """The struct as the reference reads it: every declared field in order (defaults for
        those the version lacks), then any unknown tagged fields."""
        out = {key: s.read(row[s.slot], row[s.second], buf, ctx)
               for key, s in self.slots.items()}
        if self.tags_slot is not None and row[self.tags_slot + 1] > 0:
            out[UNKNOWN_TAGGED_FIELDS] = _unknown_tags(buf, int(row[self.tags_slot]), self.sdef)
        return out


def _reader(f: Field, kind: str, code: int, flags: int, sub: Program | None) -> Reader_:
    """How a field's value is read back from its slots, chosen once per field (the replays
    read millions of fields)."""
    default = f.default_value
    absent = K.ABSENT
    if kind == SCALAR:
        if code == K.OP_BOOL:
            return lambda a, b, buf, ctx: a != 0
        if code == K.OP_FLOAT64:
            return lambda a, b, buf, ctx: _FLOAT.unpack(_BITS.pack(a))[0]
        return lambda a, b, buf, ctx: a
    if kind == UUID:
        if flags & K.F_INTERN:
            return lambda a, b, buf, ctx: default() if a == absent else ctx.uuid_texts[a]
        return lambda a, b, buf, ctx: default() if a == absent else K.uuid(buf, a)
    if isinstance(f.type, ArrayOf):
        if sub is None:
            def read(a, b, buf, ctx):
                return default() if b == absent else None if b < 0 else \
                    K.values(code, flags, buf, a, b, len(buf))
            return read

        def read_structs(a, b, buf, ctx):
            if b < 0:
                return default() if b == absent else None
            return [sub.materialize(buf, r, ctx) for r in expand(sub, buf, a, b, ctx)]
        return read_structs
    if isinstance(f.type, StructDef):
        def read_struct(a, b, buf, ctx):
            if b < 0:
                return default() if b == absent else None
            (r,) = expand(sub, buf, a, 1, ctx)
            return sub.materialize(buf, r, ctx)
        return read_struct
    if code == K.OP_STRING and flags & K.F_INTERN:
        return lambda a, b, buf, ctx: default() if b == absent else None if b < 0 else \
            ctx.texts[a]
    span = K.text if code == K.OP_STRING else K.blob
    return lambda a, b, buf, ctx: default() if b == absent else None if b < 0 else \
        span(buf, a, b)


def expand(program: Program, buf: np.ndarray, pos: int, n: int, ctx) -> list[list[int]]:
    """The slot rows of ``n`` consecutive structs read by ``program`` from ``pos``."""
    out = np.empty((n, program.width), np.int64)
    end = K.expand(ctx.family.ops, program.first, program.count, program.defaults, buf, pos,
                   len(buf), ctx.strings, ctx.uuids, out)
    if end < 0:
        raise ValueError(f"{program.sdef.name} at {pos} does not decode (checked before)")
    return out.tolist()


def _unknown_tags(buf: np.ndarray, pos: int, sdef: StructDef) -> list[dict]:
    """Tagged fields no declaration names (``readUnknownTaggedField``), as the reference keeps
    them; only read when the decoder counted some."""
    r = Reader(memoryview(buf), pos, len(buf))
    out = []
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        data = bytes(r.take(size))
        if sdef.by_tag(tag) is None:
            out.append({"tag": tag, "data": data})
    return out


class Compiler:
    """Lays out programs in one table of rows; each (struct, version, flexible, base,
    interned fields) is compiled once."""

    def __init__(self) -> None:
        self.rows: list[list[int]] = []
        self._cache: dict[tuple, Program] = {}

    def program(self, sdef: StructDef, version: int, flexible: bool, *, base: int = 0,
                intern: frozenset[str] = frozenset()) -> Program:
        key = (id(sdef), version, flexible, base, intern)
        cached = self._cache.get(key)
        if cached is not None and cached.sdef is sdef:
            return cached
        prog = Program(sdef, version, flexible, base=base)
        at = base
        defaults: list[int] = []
        for f in sdef.fields:
            kind = _kind(f.type)
            code, flags, sub = self._type(f.type, version, flexible, f.key in intern)
            prog.slots[f.key] = Slot(f, kind, at, code, flags, sub,
                                     _reader(f, kind, code, flags, sub),
                                     at + 1 if kind == SPAN else at)
            if kind == SCALAR:
                defaults.append(_scalar_default(f))
            elif kind == UUID:
                defaults.append(K.ABSENT)
            else:
                defaults += [0, K.ABSENT]
            at += _width(kind)
        field_rows = [self._row(prog.slots[f.key], version, flexible, f)
                      for f in sdef.fields if f.mandatory_in(version)]
        if flexible:
            tagged = [f for f in sdef.fields if f.tag is not None]
            tag_rows = []
            for f in tagged:
                s = prog.slots[f.key]
                code, flags, sub = self._type(f.type, version, True, f.key in intern)
                row = self._row(Slot(f, s.kind, s.slot, code, flags, sub, s.read, s.second),
                                version, True, f)
                row[K.COL_TAG] = f.tag
                if f.tagged_in(version):
                    row[K.COL_FLAGS] |= K.F_TAG_VALID
                if isinstance(f.type, StructDef) and version in f.nullable:
                    row[K.COL_FLAGS] |= K.F_PRESENCE_VARINT
                tag_rows.append(row)
            tag_first = len(self.rows)
            self.rows += tag_rows
            prog.tags_slot = at
            field_rows.append([K.OP_TAGS, 0, at, 0, tag_first, len(tag_rows), 0, 0])
            defaults += [0, 0]
            at += 2
        prog.first, prog.count = len(self.rows), len(field_rows)
        self.rows += field_rows
        prog.width = at - base
        prog.defaults = np.array(defaults, np.int64)
        self._cache[key] = prog
        return prog

    def _type(self, type_, version: int, flexible: bool, interned: bool
              ) -> tuple[int, int, Program | None]:
        """(type code, flags, sub-program) of a value of ``type_``; for an array, of its
        element (the flags are the array's)."""
        flags = K.F_COMPACT if flexible else 0
        if isinstance(type_, ArrayOf):
            element = type_.element
            if isinstance(element, ArrayOf):
                raise NotImplementedError("arrays of arrays are in no Kafka schema")
            if isinstance(element, StructDef):
                return K.OP_STRUCT, flags, self.program(element, version, flexible)
            return _CODES[element.name], flags, None
        if isinstance(type_, StructDef):
            return K.OP_STRUCT, flags, self.program(type_, version, flexible)
        if interned and type_.name in ("string", "uuid"):
            flags |= K.F_INTERN
        return _CODES[type_.name], flags, None

    def _row(self, s: Slot, version: int, flexible: bool, f: Field) -> list[int]:
        flags = s.flags | (K.F_NULLABLE if version in f.nullable else 0)
        sub_first, sub_count = (s.sub.first, s.sub.count) if s.sub is not None else (0, 0)
        if s.sub is not None and all(row[K.COL_OP] in _FLAT_CODES
                                     for row in self.rows[sub_first:sub_first + sub_count]):
            flags |= K.F_FLAT_SUB
        if isinstance(f.type, ArrayOf):
            return [K.OP_ARRAY, flags, s.slot, s.code, sub_first, sub_count, -1, 0]
        return [s.code, flags, s.slot, 0, sub_first, sub_count, -1, 0]

    def ops(self) -> np.ndarray:
        return np.array(self.rows or [[0] * K.WIDTH], np.int32).reshape(-1, K.WIDTH)


# ---------------------------------------------------------------------------- families


@dataclass(eq=False)
class Family:
    """How one topic's records are framed, and the programs of every (type, version)."""

    name: str
    mode: int
    ops: np.ndarray
    key_width: int
    width: int
    key_programs: dict[int, tuple[str, Program]]  # type (or key version) -> (name, program)
    value_programs: dict[tuple[int, int], tuple[str, Program]]  # (type, version) -> ...
    programs: np.ndarray  # [top-level program, (first, count, flat)]
    defaults: np.ndarray  # [top-level program, slot]
    key_table: np.ndarray
    value_table: np.ndarray
    identity: np.ndarray
    extra: dict[str, Program]

    def slot(self, message: str, key: str, kind: str, *, value: bool = True) -> int:
        """The slot of field ``key`` of ``message``'s values (or keys), the same for every
        version that declares it; fails when the declarations have no such field of that
        kind, so an analysis cannot read a column the schema no longer means."""
        table = self.value_programs if value else self.key_programs
        found = None
        for name, prog in table.values():
            if name != message:
                continue
            s = prog.slots.get(key)
            if s is None or s.kind != kind:
                raise SchemaBindingError(f"{message} declares no {kind} field {key!r}")
            if found is not None and found != s.slot:
                raise SchemaBindingError(f"{message}.{key} moves between versions")
            found = s.slot
        if found is None:
            raise SchemaBindingError(f"{self.name} has no {message}")
        return found


def _family(name: str, mode: int, keys: dict[int, tuple[str, Message, int]],
            values: dict[tuple[int, int], tuple[str, Message]], *,
            intern: frozenset[str] = frozenset(), identity: frozenset[int] = frozenset(),
            extra: dict[str, tuple[Message, int]] | None = None) -> Family:
    """Compile every (type, version) of a topic: key programs at slot 0, values after them."""
    c = Compiler()
    key_programs = {t: (nm, c.program(m.body, v, v in m.flexible, intern=intern))
                    for t, (nm, m, v) in keys.items()}
    key_width = max((p.width for _, p in key_programs.values()), default=0)
    value_programs = {tv: (nm, c.program(m.body, tv[1], tv[1] in m.flexible, base=key_width,
                                         intern=intern))
                      for tv, (nm, m) in values.items()}
    width = max([key_width + 1, *(p.base + p.width for _, p in value_programs.values())])
    extras = {nm: c.program(m.body, v, v in m.flexible) for nm, (m, v) in (extra or {}).items()}
    tops = [p for _, p in key_programs.values()] + [p for _, p in value_programs.values()]
    index = {id(p): i for i, p in enumerate(tops)}
    ops = c.ops()
    programs = np.array([[p.first, p.count, _flat(ops, p)] for p in tops] or [[0, 0, 0]],
                        np.int32)
    defaults = np.full((max(len(tops), 1), width), K.ABSENT, np.int64)
    for i, p in enumerate(tops):
        defaults[i, p.base:p.base + p.width] = p.defaults
    key_table = np.full(max(keys, default=-1) + 1 or 1, -1, np.int32)
    for t, (_, p) in key_programs.items():
        key_table[t] = index[id(p)]
    types = max((t for t, _ in values), default=0) + 1
    versions = max((v for _, v in values), default=0) + 1
    value_table = np.full((types, versions), -1, np.int32)
    for tv, (_, p) in value_programs.items():
        value_table[tv] = index[id(p)]
    ident = np.zeros(len(key_table), np.int8)
    for t in identity:
        ident[t] = 1
    return Family(name, mode, ops, key_width, width, key_programs, value_programs,
                  programs, defaults, key_table, value_table, ident, extras)


#: The type codes a flat program holds (``_programs.run_flat``): numbers, strings, bytes and
#: the tagged fields of a flexible version (whose own rows the general interpreter reads).
_FLAT_CODES = frozenset(_CODES.values()) | {K.OP_TAGS}


def _flat(ops: np.ndarray, program: Program) -> bool:
    """Whether a top-level program is flat: no struct or array (the compiled
    decoder then runs it without its general dispatch; a struct or array row whose struct is
    flat says so in its flags, ``F_FLAT_SUB``)."""
    rows = ops[program.first:program.first + program.count]
    return bool(np.isin(rows[:, K.COL_OP], list(_FLAT_CODES)).all())


def _versions(m: Message) -> range:
    return range(m.valid.low, m.valid.high + 1)


@cache
def consumer_offsets_family() -> Family:
    """``GroupCoordinatorRecordSerde``: the record type is the key's version; group ids and
    topics are interned, and the keys of offset commits and of the KIP-848 / KIP-932 records get
    an identity code (the replay keeps a commit's state by it, and folds a group's records that
    a later one of the same key overwrites)."""
    keys = {t: (nm, k, t) for t, (nm, k, _) in consumer_offsets.RECORD_TYPES.items()}
    values = {(t, v): (nm, m) for t, (nm, _, m) in consumer_offsets.RECORD_TYPES.items()
              for v in _versions(m)}
    extra = {f"{m.name}-v{v}": (m, v)
             for m in (consumer_offsets.CONSUMER_PROTOCOL_SUBSCRIPTION,
                       consumer_offsets.CONSUMER_PROTOCOL_ASSIGNMENT) for v in _versions(m)}
    return _family("__consumer_offsets", K.MODE_COORDINATOR, keys, values,
                   intern=frozenset({"group", "groupId", "topic"}),
                   identity=frozenset(consumer_offsets.OFFSET_COMMIT_TYPES)
                   | frozenset(consumer_offsets.CONSUMER_GROUP_TYPES)
                   | frozenset(consumer_offsets.SHARE_GROUP_TYPES), extra=extra)


@cache
def transaction_log_family() -> Family:
    """``TransactionLog``: key version 0, value versions 0 and 1; transactional ids interned."""
    k, v = transaction_state.TRANSACTION_LOG_KEY, transaction_state.TRANSACTION_LOG_VALUE
    return _family("__transaction_state", K.MODE_TRANSACTION_LOG,
                   {kv: (k.name, k, kv) for kv in _versions(k)},
                   {(0, vv): (v.name, v) for vv in _versions(v)},
                   intern=frozenset({"transactionalId"}))


@cache
def cluster_metadata_family() -> Family:
    """``AbstractApiMessageSerde`` frames: every metadata record type and version; topic ids
    interned."""
    values = {(m.api_key, v): (m.name, m) for m in cluster_metadata.RECORDS
              for v in _versions(m)}
    return _family("__cluster_metadata", K.MODE_METADATA, {}, values,
                   intern=frozenset({"topicId"}))


@cache
def remote_log_metadata_family() -> Family:
    """``RemoteLogMetadataSerde``: the ``AbstractApiMessageSerde`` frame of ``__cluster_metadata``
    over the four remote log metadata record types."""
    values = {(m.api_key, v): (m.name, m) for m in remote_log_metadata.RECORDS
              for v in _versions(m)}
    return _family(remote_log_metadata.TOPIC, K.MODE_METADATA, {}, values)


# ---------------------------------------------------------------------------- decoding


class Decoder:
    """Decodes one family's records, a window at a time. Its interners live as long as it
    does (one replay), so codes are stable across windows and partitions."""

    def __init__(self, family: Family) -> None:
        self.family = family
        seed = int.from_bytes(os.urandom(8), "little")
        self.strings = K.Interner(seed)
        self.uuids = K.Interner(seed ^ 0x5A5A5A5A5A5A5A5A)
        self.keys = K.Interner(seed ^ 0x3C3C3C3C3C3C3C3C)
        self.texts: list[str] = []
        self.uuid_texts: list[str] = []

    def decode(self, data: np.ndarray, key_pos: np.ndarray, key_len: np.ndarray,
               value_pos: np.ndarray, value_len: np.ndarray, skip: np.ndarray) -> Block:
        """The records whose spans into ``data`` are given (``skip`` marks those not to
        decode, e.g. control records)."""
        f = self.family
        n = len(key_pos)
        status = np.empty(n, np.int8)
        rtype, kver, vver = (np.empty(n, np.int16) for _ in range(3))
        vals = np.empty((n, f.width), np.int64)
        key_code = np.empty(n, np.int32)
        K.decode(f.mode, data, _i64(key_pos), _i64(key_len), _i64(value_pos),
                 _i64(value_len), np.ascontiguousarray(skip, np.int8), f.ops, f.programs,
                 f.defaults, f.key_table, f.value_table, f.identity, f.key_width,
                 self.strings, self.uuids, self.keys, status, rtype, kver, vver, vals,
                 key_code)
        self._sync()
        return Block(self, data, status, rtype, kver, vver, vals, key_code, key_pos, key_len,
                     value_pos, value_len)

    def _sync(self) -> None:
        if len(self.strings) > len(self.texts):
            self.texts += self.strings.texts(len(self.texts))
        if len(self.uuids) > len(self.uuid_texts):
            self.uuid_texts += [K.uuid(b, 0) for b in self.uuids.blobs(len(self.uuid_texts))]

    def code(self, text: str) -> int:
        """The interned code of a string (records only the reference decoder read join the
        others under the same codes)."""
        code = self.strings.intern(text.encode("utf-8"))
        self._sync()
        return code

    def key_code(self, key: bytes) -> int:
        """The identity code of a key's bytes after its type (see ``_programs.decode``)."""
        return self.keys.intern(key)

    def values(self, pairs: list[tuple[bytes | None, bytes | None]],
               reference: Callable[[bytes | None, bytes | None], dict | None]
               ) -> list[dict | None]:
        """The values of records given as (key, value) bytes, decoded together, a block at a
        time (records kept as bytes by a replay, decoded once at its end); one the programs
        refuse is read by ``reference`` (the replay kept it on the reference's word)."""
        out: list[dict | None] = []
        for lo in range(0, len(pairs), BLOCK_ROWS):
            part = pairs[lo:lo + BLOCK_ROWS]
            lengths = np.array([[-1 if x is None else len(x) for x in pair] for pair in part],
                               np.int64).reshape(-1, 2)
            sizes = np.maximum(lengths, 0).ravel()
            starts = (np.cumsum(sizes) - sizes).reshape(-1, 2)
            data = np.frombuffer(b"".join(x or b"" for pair in part for x in pair), np.uint8)
            block = self.decode(data, starts[:, 0], lengths[:, 0], starts[:, 1],
                                lengths[:, 1], np.zeros(len(part), np.int8))
            out += [block.value(i) if block.status[i] == K.ST_OK else reference(*part[i])
                    for i in range(len(block))]
        return out

    def blocks(self, chunk: Chunk, rows: int = BLOCK_ROWS) -> Iterator[tuple[int, Block]]:
        """A chunk's records in blocks of at most ``rows``: ``(first row, block)``. Control
        records are not decoded (status ``ST_SKIP``)."""
        cols = chunk.columns
        control = chunk.table.is_control[cols.batch]
        for lo in range(0, len(cols), rows):
            hi = min(lo + rows, len(cols))
            yield lo, self.decode(cols.data, cols.key_pos[lo:hi], cols.key_len[lo:hi],
                                  cols.value_pos[lo:hi], cols.value_len[lo:hi],
                                  control[lo:hi])


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.int64)


@dataclass(eq=False)
class Block:
    """Decoded records as columns: ``status`` (``ST_OK``, ``ST_ERROR``: ask the reference why,
    ``ST_SKIP``), ``rtype`` (record type or apiKey), ``kver``/``vver`` (key and value
    versions; ``vver`` -1 with status OK is a null value) and the slots in ``vals``."""

    decoder: Decoder
    data: np.ndarray
    status: np.ndarray
    rtype: np.ndarray
    kver: np.ndarray
    vver: np.ndarray
    vals: np.ndarray
    key_code: np.ndarray
    key_pos: np.ndarray
    key_len: np.ndarray
    value_pos: np.ndarray
    value_len: np.ndarray

    def __len__(self) -> int:
        return int(self.status.shape[0])

    @property
    def family(self) -> Family:
        return self.decoder.family

    @property
    def texts(self) -> list[str]:
        return self.decoder.texts

    @property
    def uuid_texts(self) -> list[str]:
        return self.decoder.uuid_texts

    @property
    def strings(self):
        return self.decoder.strings

    @property
    def uuids(self):
        return self.decoder.uuids

    def key_program(self, i: int) -> tuple[str, Program]:
        return self.family.key_programs[int(self.kver[i])]

    def value_program(self, i: int) -> tuple[str, Program]:
        t = int(self.rtype[i]) if self.family.mode != K.MODE_TRANSACTION_LOG else 0
        return self.family.value_programs[(t, int(self.vver[i]))]

    def key(self, i: int) -> dict:
        """Record ``i``'s key fields, as the reference reads them."""
        return self.key_program(i)[1].materialize(self.data, self.vals[i].tolist(), self)

    def value(self, i: int) -> dict | None:
        """Record ``i``'s value, as the reference reads it (None: a null value)."""
        if self.vver[i] < 0 and self.family.mode != K.MODE_METADATA:
            return None
        return self.value_program(i)[1].materialize(self.data, self.vals[i].tolist(), self)

    def raw_value(self, i: int) -> bytes | None:
        n = int(self.value_len[i])
        return None if n < 0 else K.blob(self.data, int(self.value_pos[i]), n)

    def raw_key(self, i: int) -> bytes | None:
        n = int(self.key_len[i])
        return None if n < 0 else K.blob(self.data, int(self.key_pos[i]), n)

    def text(self, row, slot: int) -> str | None:
        """A string field's value from a row of slots (None: null)."""
        n = row[slot + 1]
        if n < 0:
            return None
        return K.text(self.data, row[slot], n)

    def elements(self, program: Program, key: str, row) -> list[list[int]]:
        """The slot rows of the elements of the array of structs ``key`` (a top-level field
        of ``program``) in a record's row."""
        s = program.slots[key]
        n = row[s.slot + 1]
        return [] if n <= 0 else expand(s.sub, self.data, row[s.slot], n, self)
