"""Kafka's "generated message" encoding, as one small engine driven by schemas declared as data.

Kafka describes every internal record (``__consumer_offsets``, ``__transaction_state``,
``__cluster_metadata``, KRaft control records) in JSON files that its build turns into Java
classes (``generator/.../MessageDataGenerator.java``). The rules those classes follow are few,
so segtools declares each schema once, as a value, and this module reads and writes any of
them for any version:

- **Versions** gate fields (``"versions": "3+"``); a field absent from a version reads as its
  default, as the generated ``read`` resets it.
- **Non-flexible versions**: string = int16 length, bytes = int32 length, array = int32 count;
  -1 is null where ``nullableVersions`` allows it.
- **Flexible versions** (``flexibleVersions``): the *compact* forms, an unsigned varint of
  length + 1 (0 = null), and every struct ends with a tagged-field section (count, then tag,
  size, data for each). Tagged fields are written only when they differ from their default.
- A nullable struct carries an int8 marker (-1 null); a nullable *tagged* struct a varint.
- Unknown tags are kept, not rejected (``readUnknownTaggedField``); a known tag in a version
  that does not allow it is an error, as in the generated reader.

Decoded values are plain dicts keyed by the field name with its first letter lowered, which is
the name Kafka's generated JSON converters (and so ``kafka-dump-log.sh``) print. UUIDs are
Kafka's ``Uuid.toString()`` (22 characters of base64url).
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from segtools.errors import CorruptDataError, UnsupportedFormatError

MAX_VERSION = 0x7FFF
#: ``Readable.readString``: longer strings are rejected (a string length is an int16).
MAX_STRING_LENGTH = 0x7FFF
UNKNOWN_TAGGED_FIELDS = "_unknownTaggedFields"
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


class SchemaError(CorruptDataError):
    """Bytes that do not follow the schema (cut short, bad length, bad tag, ...)."""


class UnsupportedVersionError(UnsupportedFormatError):
    """A version outside the schema's ``validVersions`` (a newer or a damaged writer)."""


# ---------------------------------------------------------------------------- versions


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range, as ``Versions.parse`` reads ``"0+"``, ``"1-3"``, ``"2"``."""

    low: int
    high: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    @classmethod
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        low, sep, high = text.partition("-")
        return cls(int(low), int(high) if sep else int(low))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == MAX_VERSION:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


NO_VERSIONS = Versions(0, -1)


# ---------------------------------------------------------------------------- types


@dataclass(frozen=True, slots=True)
class Primitive:
    """A fixed-width type (``int8`` ... ``float64``, ``bool``, ``uuid``) or ``string``/``bytes``."""

    name: str
    fmt: str | None = None  # struct format for the fixed-width numbers

    @property
    def default(self) -> Any:
        return {"bool": False, "uuid": ZERO_UUID, "string": "", "bytes": b"",
                "float64": 0.0}.get(self.name, 0)


@dataclass(frozen=True, slots=True)
class ArrayOf:
    element: Type


@dataclass(frozen=True, slots=True)
class StructDef:
    """A (possibly nested) struct: its fields in wire order."""

    name: str
    fields: tuple[Field, ...]

    def by_tag(self, tag: int) -> Field | None:
        return next((f for f in self.fields if f.tag == tag), None)


Type = Primitive | ArrayOf | StructDef

INT8 = Primitive("int8", ">b")
INT16 = Primitive("int16", ">h")
INT32 = Primitive("int32", ">i")
INT64 = Primitive("int64", ">q")
UINT16 = Primitive("uint16", ">H")
UINT32 = Primitive("uint32", ">I")
FLOAT64 = Primitive("float64", ">d")
BOOL = Primitive("bool")
UUID = Primitive("uuid")
STRING = Primitive("string")
BYTES = Primitive("bytes")

_STRUCTS = {p.name: struct.Struct(p.fmt) for p in (INT8, INT16, INT32, INT64, UINT16, UINT32,
                                                   FLOAT64)}


class _TypeDefault:
    """Marker: the field has no explicit ``default``; the type's own default applies."""

    def __repr__(self) -> str:
        return "TYPE_DEFAULT"


TYPE_DEFAULT: Any = _TypeDefault()


@dataclass(frozen=True, slots=True)
class Field:
    """One schema field: ``versions``, ``nullableVersions``, ``tag`` + ``taggedVersions``."""

    name: str
    type: Type
    versions: Versions
    nullable: Versions = NO_VERSIONS
    tag: int | None = None
    tagged: Versions = NO_VERSIONS
    default: Any = TYPE_DEFAULT

    @property
    def key(self) -> str:
        """The JSON converter's name: ``FieldSpec.camelCaseName`` (first letter lowered)."""
        return self.name[:1].lower() + self.name[1:]

    def default_value(self) -> Any:
        """``FieldSpec.fieldDefault``: the explicit default, else the type's zero value."""
        if self.default is not TYPE_DEFAULT:
            return self.default
        if isinstance(self.type, ArrayOf):
            return []
        if isinstance(self.type, StructDef):
            return None if not self.nullable.empty else _defaults(self.type)
        return self.type.default

    def mandatory_in(self, version: int) -> bool:
        return version in self.versions and version not in self.tagged

    def tagged_in(self, version: int) -> bool:
        return version in self.versions and version in self.tagged


def _defaults(sdef: StructDef) -> dict:
    return {f.key: f.default_value() for f in sdef.fields}


@dataclass(frozen=True, slots=True)
class Message:
    """A top-level schema: ``validVersions``, ``flexibleVersions``, fields (and an apiKey)."""

    name: str
    valid: Versions
    flexible: Versions
    body: StructDef
    api_key: int | None = None

    def check_version(self, version: int) -> None:
        if version not in self.valid:
            raise UnsupportedVersionError(
                f"{self.name} version {version} is not one this reader knows "
                f"(valid versions: {self.valid})")

    def read(self, data: bytes | memoryview, version: int, *, start: int = 0,
             end: int | None = None) -> tuple[dict, int]:
        """Decode one message of ``version`` from ``data[start:end]``; returns the value and
        the position after it (callers decide whether trailing bytes are an error)."""
        self.check_version(version)
        reader = Reader(memoryview(data), start, len(data) if end is None else end)
        value = _read_struct(reader, self.body, version, version in self.flexible)
        return value, reader.pos

    def read_exact(self, data: bytes | memoryview, version: int) -> dict:
        """Decode a whole buffer; bytes left over are an error (``AbstractApiMessageSerde``)."""
        value, end = self.read(data, version)
        if end != len(data):
            raise SchemaError(f"{len(data) - end} byte(s) left after {self.name} "
                              f"version {version}", position=end)
        return value

    def write(self, value: Mapping[str, Any], version: int) -> bytes:
        """Encode ``value`` at ``version``; fields the version lacks are dropped, missing
        fields take their defaults (the generated ``write`` of a fresh object)."""
        self.check_version(version)
        out = bytearray()
        _write_struct(out, self.body, value, version, version in self.flexible)
        return bytes(out)


# ---------------------------------------------------------------------------- declaring schemas


def field(name: str, type_: Type, versions: str = "0+", *, nullable: str = "none",
          default: Any = TYPE_DEFAULT) -> Field:
    """A mandatory field (JSON ``versions``, ``nullableVersions``, ``default``)."""
    return Field(name, type_, Versions.parse(versions), Versions.parse(nullable),
                 default=default)


def tagged(name: str, type_: Type, tag: int, tagged_versions: str, *,
           versions: str | None = None, nullable: str = "none",
           default: Any = TYPE_DEFAULT) -> Field:
    """A tagged field; ``versions`` defaults to ``taggedVersions`` as in ``FieldSpec``."""
    return Field(name, type_, Versions.parse(versions or tagged_versions),
                 Versions.parse(nullable), tag, Versions.parse(tagged_versions), default)


def struct_of(name: str, *fields: Field) -> StructDef:
    return StructDef(name, tuple(fields))


def array(element: Type) -> ArrayOf:
    return ArrayOf(element)


def message(name: str, valid: str, flexible: str, *fields: Field,
            api_key: int | None = None) -> Message:
    return Message(name, Versions.parse(valid), Versions.parse(flexible),
                   StructDef(name, tuple(fields)), api_key)


# ---------------------------------------------------------------------------- reading


def uuid_to_str(raw: bytes) -> str:
    """``Uuid.toString``: unpadded base64url of the 16 bytes."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a Kafka Uuid")
    return raw


class Reader:
    """A bounded cursor over a buffer; every read checks the bytes are there."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: memoryview, pos: int, end: int):
        self.buf = buf
        self.pos = pos
        self.end = end

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > self.end:
            raise SchemaError(f"needs {n} bytes but only {self.end - self.pos} remain",
                              position=self.pos)
        view = self.buf[self.pos:self.pos + n]
        self.pos += n
        return view

    def fixed(self, name: str) -> Any:
        s = _STRUCTS[name]
        (value,) = s.unpack(self.take(s.size))
        return value

    def uvarint(self) -> int:
        """``ByteUtils.readUnsignedVarint``: at most 5 bytes, an int32 (may come out negative)."""
        value = 0
        for i in range(5):
            (byte,) = self.take(1)
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                value &= 0xFFFFFFFF
                return value - (1 << 32) if value >= 1 << 31 else value
        raise SchemaError("unsigned varint longer than 5 bytes", position=self.pos - 5)


def _read_length(r: Reader, flexible: bool, wide: bool) -> int:
    """A length or count: compact uvarint - 1 when flexible, else int16 (strings) / int32."""
    if flexible:
        return r.uvarint() - 1
    return r.fixed("int32" if wide else "int16")


def _null_or_fail(field_: Field, nullable: bool, at: int) -> None:
    if not nullable:
        raise SchemaError(f"non-nullable field {field_.name} was serialized as null",
                          position=at)


def _read_value(r: Reader, type_: Type, field_: Field, version: int, flexible: bool,
                nullable: bool) -> Any:
    at = r.pos
    if isinstance(type_, StructDef):
        if nullable and r.fixed("int8") < 0:
            return None
        return _read_struct(r, type_, version, flexible)
    if isinstance(type_, ArrayOf):
        count = _read_length(r, flexible, wide=True)
        if count < 0:
            _null_or_fail(field_, nullable, at)
            return None
        if count > r.end - r.pos:  # the generated reader's guard against absurd counts
            raise SchemaError(f"{field_.name}: tried to read {count} elements but only "
                              f"{r.end - r.pos} bytes remain", position=at)
        return [_read_value(r, type_.element, field_, version, flexible, False)
                for _ in range(count)]
    name = type_.name
    if name == "string":
        length = _read_length(r, flexible, wide=False)
        if length < 0:
            _null_or_fail(field_, nullable, at)
            return None
        if length > MAX_STRING_LENGTH:
            raise SchemaError(f"string field {field_.name} had invalid length {length}",
                              position=at)
        try:
            return str(r.take(length), "utf-8")
        except UnicodeDecodeError:
            raise SchemaError(f"string field {field_.name} is not UTF-8", position=at) from None
    if name == "bytes":
        length = _read_length(r, flexible, wide=True)
        if length < 0:
            _null_or_fail(field_, nullable, at)
            return None
        return bytes(r.take(length))
    if name == "bool":
        return r.take(1)[0] != 0
    if name == "uuid":
        return uuid_to_str(bytes(r.take(16)))
    return r.fixed(name)


#: How a field is read at one version: left at its default, a fixed-width number, or parsed.
_DEFAULT, _FIXED, _PARSE = 0, 1, 2
#: One struct at one version: (how, key, field, nullable, struct format) in wire order.
_Plan = tuple[tuple[int, str, Field, bool, struct.Struct | None], ...]
_PLANS: dict[tuple[int, int, bool], tuple[StructDef, _Plan]] = {}


def _plan(sdef: StructDef, version: int, flexible: bool) -> _Plan:
    """Which fields a version carries, worked out once per struct and version: decoding a
    large ``__consumer_offsets`` partition reads the same few layouts millions of times."""
    cached = _PLANS.get((id(sdef), version, flexible))
    if cached is not None and cached[0] is sdef:
        return cached[1]
    entries = []
    for f in sdef.fields:
        packer = _STRUCTS.get(f.type.name) if isinstance(f.type, Primitive) else None
        how = (_DEFAULT if not f.mandatory_in(version)
               else _FIXED if packer is not None else _PARSE)
        entries.append((how, f.key, f, version in f.nullable, packer))
    plan = tuple(entries)
    _PLANS[(id(sdef), version, flexible)] = (sdef, plan)
    return plan


def _read_struct(r: Reader, sdef: StructDef, version: int, flexible: bool) -> dict:
    out: dict[str, Any] = {}
    for how, key, f, nullable, packer in _plan(sdef, version, flexible):
        if how == _FIXED:
            pos = r.pos
            end = pos + packer.size
            if end > r.end:
                raise SchemaError(f"needs {packer.size} bytes but only {r.end - pos} remain",
                                  position=pos)
            out[key] = packer.unpack_from(r.buf, pos)[0]
            r.pos = end
        elif how == _PARSE:
            out[key] = _read_value(r, f.type, f, version, flexible, nullable)
        else:
            out[key] = f.default_value()
    if not flexible:
        return out
    unknown = []
    for _ in range(_count(r, "tagged fields")):
        tag_at = r.pos
        tag = r.uvarint()
        size = r.uvarint()
        f = sdef.by_tag(tag)
        if f is None:
            if size < 0:
                raise SchemaError(f"unknown tag {tag} has negative size {size}", position=tag_at)
            unknown.append({"tag": tag, "data": bytes(r.take(size))})
            continue
        if not f.tagged_in(version):
            raise SchemaError(f"tag {tag} ({f.name}) is not valid for version {version}",
                              position=tag_at)
        sub = Reader(r.buf, r.pos, r.pos + size)
        if sub.end > r.end or size < 0:
            raise SchemaError(f"tagged field {f.name} declares {size} bytes but only "
                              f"{r.end - r.pos} remain", position=tag_at)
        out[f.key] = _read_tagged(sub, f, version)
        if sub.pos != sub.end:
            raise SchemaError(f"tagged field {f.name} declares {size} bytes but its value "
                              f"takes {sub.pos - r.pos}", position=tag_at)
        r.pos = sub.end
    if unknown:
        out[UNKNOWN_TAGGED_FIELDS] = unknown
    return out


def _count(r: Reader, what: str) -> int:
    at = r.pos
    n = r.uvarint()
    if n < 0 or n > r.end - r.pos:
        raise SchemaError(f"{what}: invalid count {n}", position=at)
    return n


def _read_tagged(r: Reader, f: Field, version: int) -> Any:
    """Tagged values always use the flexible encoding; a nullable tagged struct is preceded
    by a varint presence marker (``generateStructReader(tagged=true)``)."""
    nullable = version in f.nullable
    if isinstance(f.type, StructDef):
        if nullable and r.uvarint() <= 0:
            return None
        return _read_struct(r, f.type, version, True)
    return _read_value(r, f.type, f, version, True, nullable)


# ---------------------------------------------------------------------------- writing


def write_uvarint(out: bytearray, value: int) -> None:
    value &= 0xFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _write_length(out: bytearray, n: int, flexible: bool, wide: bool) -> None:
    if flexible:
        write_uvarint(out, n + 1)
    else:
        out += struct.pack(">i" if wide else ">h", n)


def _write_value(out: bytearray, type_: Type, value: Any, version: int, flexible: bool,
                 nullable: bool) -> None:
    if isinstance(type_, StructDef):
        if nullable:
            out += b"\xff" if value is None else b"\x01"
            if value is None:
                return
        _write_struct(out, type_, value, version, flexible)
        return
    if value is None:
        if not nullable:
            raise ValueError(f"null {type_} in a non-nullable field")
        _write_length(out, -1, flexible, wide=not (isinstance(type_, Primitive)
                                                    and type_.name == "string"))
        return
    if isinstance(type_, ArrayOf):
        _write_length(out, len(value), flexible, wide=True)
        for item in value:
            _write_value(out, type_.element, item, version, flexible, False)
        return
    name = type_.name
    if name == "string":
        raw = value.encode("utf-8")
        _write_length(out, len(raw), flexible, wide=False)
        out += raw
    elif name == "bytes":
        _write_length(out, len(value), flexible, wide=True)
        out += value
    elif name == "bool":
        out.append(1 if value else 0)
    elif name == "uuid":
        out += uuid_from_str(value)
    else:
        out += _STRUCTS[name].pack(value)


def _write_struct(out: bytearray, sdef: StructDef, value: Mapping[str, Any] | None,
                  version: int, flexible: bool) -> None:
    value = value or {}
    tags: list[tuple[int, bytes]] = []
    for f in sdef.fields:
        v = value.get(f.key, f.default_value())
        if f.mandatory_in(version):
            _write_value(out, f.type, v, version, flexible, version in f.nullable)
        elif f.tagged_in(version) and v != f.default_value():
            tags.append((f.tag, _tagged_bytes(f, v, version)))
    if not flexible:
        return
    tags += [(u["tag"], u["data"]) for u in value.get(UNKNOWN_TAGGED_FIELDS, ())]
    tags.sort(key=lambda t: t[0])
    write_uvarint(out, len(tags))
    for tag, data in tags:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


def _tagged_bytes(f: Field, value: Any, version: int) -> bytes:
    out = bytearray()
    nullable = version in f.nullable
    if isinstance(f.type, StructDef):
        if nullable:
            if value is None:
                return b"\x00"
            out.append(1)
        _write_struct(out, f.type, value, version, True)
    else:
        _write_value(out, f.type, value, version, True, nullable)
    return bytes(out)


_VERSION_PREFIX = struct.Struct(">h")


def version_prefix(data: bytes, what: str) -> int:
    """The int16 version every coordinator key and value starts with
    (``MessageUtil.toVersionPrefixedBytes``)."""
    if data is None or len(data) < 2:
        size = 0 if data is None else len(data)
        raise SchemaError(f"{what} of {size} bytes has no int16 version", position=0)
    return _VERSION_PREFIX.unpack_from(data, 0)[0]
