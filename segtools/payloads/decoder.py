"""One payload at a time: what its frame says, which schema, and its value as JSON.

:class:`PayloadDecoder` is the one function every face calls (the CLI's ``--decode``, the API's
``decode=True``, the Spark source's ``decode`` option, the report, ``verify``). It keeps the
compiled schemas for the run (a schema id is compiled once), and answers a key or a value with
a :class:`Decoded` (the value as JSON, the schema it was read with), ``None`` (nothing to
decode: a null, or bytes the mode does not claim), or raises a
:class:`~segtools.payloads.errors.PayloadError` whose ``code`` is the finding to report.

Modes, chosen per side (key, value):

- ``schema``: Confluent frames only. A value without the magic byte is a
  ``payload_unknown_magic`` finding (Confluent's deserializer fails the same way); a key
  without it, or whose "frame" names an id no source knows or is cut short, is left
  undecoded: most framed topics key by ``StringSerializer`` or ``LongSerializer``, whose
  bytes may start with a zero;
- ``auto``: a frame when there is one, otherwise what Kafka's own serializers and plain JSON
  write, recognised and named (``"type": "JSON_TEXT"`` or ``"STRING"``), never silently; a
  key it does not recognise is left undecoded, as in ``schema`` mode;
- ``string``, ``int``, ``long``, ``uuid``, ``json``: Kafka's ``StringSerializer``,
  ``IntegerSerializer``, ``LongSerializer``, ``UUIDSerializer`` or a JSON serializer for
  every payload of that side.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

from segtools.errors import SegtoolsError
from segtools.payloads import framing, plain
from segtools.payloads.decoded import Decoded, SchemaUse
from segtools.payloads.errors import (
    FrameTruncated,
    PayloadError,
    ReferenceMissing,
    SchemaHardDeleted,
    SchemaInvalid,
    UnknownMagic,
    UnknownSchemaId,
)
from segtools.payloads.schemas import (
    AVRO,
    JSON,
    LATEST,
    PROTOBUF,
    RegisteredSchema,
    SchemaLookup,
    subject_for,
)

#: The modes a side can be decoded in.
MODES = ("schema", "auto", *plain.KINDS)

#: References nest no deeper than this (a chain longer is treated as a cycle).
MAX_REFERENCE_DEPTH = 32


def format_module(name: str) -> ModuleType:
    """The module of one schema format (``avro``, ``protobuf``), imported when a payload of
    that format is first met: their libraries are the optional ``payloads`` extra, and a
    command that decodes nothing must not need them."""
    try:
        return importlib.import_module(f"segtools.payloads.{name}")
    except ImportError as e:
        raise SegtoolsError(f"decoding {name} payloads needs the payloads extra "
                            f"(pip install 'segtools[payloads]'): {e}") from None


def payloads_installed() -> bool:
    """Whether the ``payloads`` extra's libraries are importable."""
    try:
        return all(importlib.util.find_spec(name) is not None
                   for name in ("fastavro", "google.protobuf", "grpc_tools"))
    except ModuleNotFoundError:  # "google" itself is missing
        return False


@dataclass(frozen=True, slots=True)
class Modes:
    """The mode of each side; parsed from ``MODE`` or ``KEYMODE:VALUEMODE``."""

    key: str = "schema"
    value: str = "schema"

    @classmethod
    def parse(cls, text: str) -> Modes:
        key, colon, value = text.partition(":")
        if colon and not (key and value):  # "string:" is not "string:string"
            raise ValueError(f"{text!r} names no mode for the "
                             f"{'value' if key else 'key'} (KEYMODE:VALUEMODE)")
        value = value or key
        for m in (key, value):
            if m not in MODES:
                raise ValueError(f"unknown decode mode {m!r} (one of {', '.join(MODES)}, or "
                                 "KEYMODE:VALUEMODE)")
        return cls(key, value)


@dataclass(slots=True)
class PayloadDecoder:
    """Decodes keys and values with the schemas of ``lookup``; compiled schemas are kept for
    the decoder's life (per id, and per message for Protobuf)."""

    lookup: SchemaLookup
    modes: Modes = field(default_factory=Modes)
    _compiled: dict = field(default_factory=dict)
    _uses: dict = field(default_factory=dict)
    _ids: dict = field(default_factory=dict)  # schema id -> its schema (or None), asked once

    def decode(self, data: bytes | None, *, topic: str | None, is_key: bool) -> Decoded | None:
        if data is None:
            return None
        mode = self.modes.key if is_key else self.modes.value
        if mode in plain.KINDS:
            return Decoded(plain.decode(mode, data), SchemaUse(None, None, None,
                                                                plain.TYPE_NAMES[mode]))
        if framing.is_framed(data) and (len(data) >= framing.HEADER_SIZE or mode == "schema"):
            try:
                return self._framed(bytes(data), topic, is_key)
            except (UnknownSchemaId, FrameTruncated):
                # bytes that only look framed (a LongSerializer key below 2^56 starts with a
                # zero byte): auto still recognises text or JSON; a key is left undecoded, as
                # keys without a frame are (auto claims no less of a key than schema does);
                # otherwise the frame's error stands
                recognised = plain.recognise(data) if mode == "auto" else None
                if recognised is not None:
                    return recognised
                if is_key:
                    return None
                raise
        if mode == "auto":
            return plain.recognise(data)
        if is_key:
            return None
        if not data:
            raise UnknownMagic("an empty value has no frame")
        if data[0] == framing.GUID_MAGIC_BYTE:
            raise UnknownMagic("magic byte 1: a schema GUID frame, which segtools does not read")
        raise UnknownMagic(f"first byte {data[0]:#04x} is not Confluent's magic byte 0")

    def transcoder(self, schema_id: int, topic: str | None, is_key: bool):
        """For the column path: the id's compiled Avro transcoder and the schema use to name,
        or None (not Avro, unknown, or not compiling: those payloads take :meth:`decode`,
        which reports why)."""
        if (self.modes.key if is_key else self.modes.value) not in ("schema", "auto"):
            return None
        schema = self._by_id(schema_id)
        if schema is None or schema.schema_type != AVRO:
            return None
        try:
            _, transcode = self._decoder(schema, None)
        except PayloadError:
            return None
        return transcode, self._use(schema, topic, is_key, None)

    def _framed(self, data: bytes, topic: str | None, is_key: bool) -> Decoded:
        try:
            frame = framing.read_frame(data)
        except framing.FrameError as e:
            raise FrameTruncated(str(e)) from None
        schema = self._schema(frame.schema_id)
        pos = frame.body_start
        indexes: tuple[int, ...] | None = None
        if schema.schema_type == PROTOBUF:
            try:
                indexes, pos = framing.read_message_indexes(data, pos)
            except framing.FrameError as e:
                raise FrameTruncated(str(e)) from None
        message, decode = self._decoder(schema, indexes)
        return Decoded(decode(data[pos:]), self._use(schema, topic, is_key, message))

    def _by_id(self, schema_id: int) -> RegisteredSchema | None:
        if schema_id not in self._ids:
            self._ids[schema_id] = self.lookup.by_id(schema_id)
        return self._ids[schema_id]

    def _schema(self, schema_id: int) -> RegisteredSchema:
        found = self._by_id(schema_id)
        if found is not None:
            return found
        if self.lookup.hard_deleted(schema_id):
            raise SchemaHardDeleted(f"schema id {schema_id} was hard-deleted from the registry")
        raise UnknownSchemaId(f"no schema source knows schema id {schema_id}")

    def _use(self, schema: RegisteredSchema, topic: str | None, is_key: bool,
             message: str | None) -> SchemaUse:
        key = (schema.id, topic, is_key, message)
        use = self._uses.get(key)
        if use is None:
            named = subject_for(self.lookup.registrations(schema.id), topic, is_key) or schema
            use = SchemaUse(schema.id, named.subject, named.version, schema.schema_type, message)
            self._uses[key] = use
        return use

    def _kept(self, key: tuple, build: Callable[[], object]):
        """What ``build`` gives, or the error it raised, both kept under ``key``: a schema
        is compiled once per run, and one that does not compile is tried once."""
        found = self._compiled.get(key)
        if found is None:
            try:
                found = build()
            except PayloadError as e:
                found = e
            self._compiled[key] = found
        if isinstance(found, PayloadError):
            raise type(found)(str(found))
        return found

    def _decoder(self, schema: RegisteredSchema, indexes: tuple[int, ...] | None
                 ) -> tuple[str | None, Callable[[bytes], object]]:
        """The compiled body decoder of a schema (and, for Protobuf, a message)."""
        return self._kept((schema.id, indexes), lambda: self._compile(schema, indexes))

    def _compile(self, schema: RegisteredSchema, indexes: tuple[int, ...] | None
                 ) -> tuple[str | None, Callable[[bytes], object]]:
        references = self._references(schema)
        if schema.schema_type == AVRO:
            avro = format_module("avro")
            named: dict = {}
            for _, ref in references:  # fastavro checks the texts (the reference reader)
                avro.compile_schema(ref.schema, named)
            avro.compile_schema(schema.schema, named)
            return None, avro.Transcoder(schema.schema, [ref.schema for _, ref in references])
        if schema.schema_type == PROTOBUF:
            compiled = self._proto(schema, {name: ref.schema for name, ref in references})
            return compiled.decoder(indexes or (0,))
        if schema.schema_type == JSON:
            return None, plain.json_body
        raise SchemaInvalid(f"unknown schema type {schema.schema_type}")

    def _proto(self, schema: RegisteredSchema, imports: dict[str, str]):
        """One compiled ``.proto`` per schema id, whichever messages of it are read."""
        protobuf = format_module("protobuf")
        return self._kept(("proto", schema.id), lambda: protobuf.ProtoSchema(
            protobuf.compile_proto(schema.schema, imports)))

    def _references(self, schema: RegisteredSchema) -> list[tuple[str, RegisteredSchema]]:
        """Every schema ``schema`` references, transitively, dependencies first, each once,
        with the name it is imported by; a cycle or a missing one is an error."""
        found: list[tuple[str, RegisteredSchema]] = []
        self._walk(schema, found, ())
        return found

    def _walk(self, schema: RegisteredSchema, found: list[tuple[str, RegisteredSchema]],
              stack: tuple[tuple[str, int], ...]) -> None:
        if len(stack) > MAX_REFERENCE_DEPTH:
            raise SchemaInvalid(f"references nest deeper than {MAX_REFERENCE_DEPTH}")
        here = (schema.subject, schema.version)
        for ref in schema.references:
            target = self.lookup.by_subject_version(ref.subject, ref.version)
            # a reference to a subject's latest version is the version found
            there = (ref.subject, ref.version) if target is None else \
                (target.subject, target.version)
            if there == here or there in stack:
                raise SchemaInvalid(f"{schema.subject} v{schema.version} references itself "
                                    f"through {target.subject} v{target.version}"
                                    if target is not None else
                                    f"{schema.subject} v{schema.version} references itself")
            if target is None:
                which = "latest" if ref.version == LATEST else f"v{ref.version}"
                raise ReferenceMissing(f"reference {ref.name!r} ({ref.subject} {which}) "
                                       "is in no schema source")
            self._walk(target, found, (*stack, here))
            if all(name != ref.name for name, _ in found):
                found.append((ref.name, target))
