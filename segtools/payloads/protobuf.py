"""Protobuf bodies: the registry's ``.proto`` text compiled at run time, the message chosen by
the frame's message indexes, rendered by the proto3 JSON mapping.

No system ``protoc`` is needed: grpcio-tools ships protoc as a Python extension together with
the well-known types' ``.proto`` files (``google/protobuf/*.proto``). Schema Registry compiles
a schema that imports one of its built-in dependencies without a reference; so does segtools:
Google's well-known types, Google's common types (``google/type/*.proto``, shipped by
googleapis-common-protos) and Confluent's own (``confluent/meta.proto``,
``confluent/type/decimal.proto``, ``confluent/type/variant.proto``, declared in ``proto/``
beside this module). A reference of the same name wins: it is the registry's record.

protoc reads files, so the schema and its references (each reference's ``name`` is the import
path it satisfies) are written to a private temporary directory (never under a log dir),
compiled in a child process (a hostile schema cannot crash or hang segtools: it has a time
limit) into a ``FileDescriptorSet``, and the directory is removed. The descriptors go into a
pool of their own per schema id (two ids may define the same message names differently).

JSON (docs/payloads.md "Protobuf to JSON"): Google's ``json_format`` with the field names as
written in the ``.proto`` (``preserving_proto_field_name``) and in its order, every field
without presence shown (proto3 defaults included), int64/uint64/fixed64 as decimal strings
and enums by name (the proto3 JSON mapping's choices), bytes as base64, well-known types in
their JSON forms.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import grpc_tools
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError

from segtools.payloads.errors import BodyMismatch, SchemaInvalid

#: Where grpcio-tools keeps the well-known types' .proto files.
WELL_KNOWN = Path(grpc_tools.__file__).parent / "_proto"
#: Confluent's built-in .proto files (``confluent/...``), shipped with segtools.
CONFLUENT = Path(__file__).parent / "proto" / "confluent"


def _google_types() -> Path | None:
    """Where googleapis-common-protos keeps ``google/type/*.proto`` (None: not installed, and
    a schema importing one does not compile, saying which file protoc did not find)."""
    spec = importlib.util.find_spec("google.type.date_pb2")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def include_paths(root: Path) -> list[str]:
    """protoc's import paths: the schema and its references first, then the built-ins, each
    mapped to its own virtual directory (``confluent=...``) so no other file of an installed
    package can be imported by a schema."""
    paths = [f"-I{root}", f"-I{WELL_KNOWN}", f"-Iconfluent={CONFLUENT}"]
    google_types = _google_types()
    if google_types is not None:
        paths.append(f"-Igoogle/type={google_types}")
    return paths
#: How long protoc may take over one schema.
COMPILE_SECONDS = 30
#: The file name the main schema is compiled under (its imports use their own names).
MAIN_FILE = "segtools_schema.proto"


def _safe_name(name: str) -> str:
    """An import path as a relative path inside the temporary directory, or an error (a
    reference named ``../../etc/x`` must not reach outside it)."""
    parts = Path(name).parts
    if not name or Path(name).is_absolute() or ".." in parts or not name.endswith(".proto"):
        raise SchemaInvalid(f"reference name {name!r} is not a relative .proto path")
    return name


def compile_proto(text: str, imports: Mapping[str, str]) -> descriptor_pb2.FileDescriptorSet:
    """The descriptors of ``text`` and what it imports (``imports``: import path -> text),
    dependencies first."""
    with tempfile.TemporaryDirectory(prefix="segtools-proto-") as tmp:
        root = Path(tmp)
        for name, body in {MAIN_FILE: text, **imports}.items():
            target = root / _safe_name(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
        out = root / "descriptors.pb"
        command = [sys.executable, "-m", "grpc_tools.protoc", *include_paths(root),
                   f"--descriptor_set_out={out}", "--include_imports", str(root / MAIN_FILE)]
        try:
            done = subprocess.run(command, capture_output=True, timeout=COMPILE_SECONDS,
                                  env={k: v for k, v in os.environ.items()
                                       if k in ("PATH", "PYTHONPATH", "HOME")}, check=False)
        except subprocess.TimeoutExpired:
            raise SchemaInvalid(f"protoc took more than {COMPILE_SECONDS}s") from None
        if done.returncode != 0 or not out.exists():
            why = done.stderr.decode("utf-8", "replace").replace(str(root) + "/", "").strip()
            first = why.splitlines()[0] if why else f"protoc exited {done.returncode}"
            raise SchemaInvalid(f"the .proto does not compile: {first}")
        return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


def message_name(file: descriptor_pb2.FileDescriptorProto, indexes: tuple[int, ...]) -> str:
    """The full name of the message the indexes point at: the first index among the file's
    top-level messages, each next one among the previous message's nested ones."""
    scope = file.package
    messages = file.message_type
    name = ""
    for index in indexes:
        if index >= len(messages):
            raise BodyMismatch(f"message index {index} past the {len(messages)} message(s) "
                               f"declared {'in the file' if not name else 'in ' + name}")
        m = messages[index]
        name = f"{scope}.{m.name}" if scope else m.name
        scope, messages = name, m.nested_type
    return name


class ProtoSchema:
    """One compiled schema: its pool, and a decoder per message (built on first use)."""

    def __init__(self, files: descriptor_pb2.FileDescriptorSet):
        self.pool = descriptor_pool.DescriptorPool()
        main = None
        for f in files.file:
            try:
                self.pool.Add(f)
            except Exception as e:  # the pool refuses inconsistent files
                raise SchemaInvalid(f"descriptors refused: {e}") from None
            if f.name == MAIN_FILE:
                main = f
        if main is None:
            raise SchemaInvalid("protoc returned no descriptor for the schema")
        self.main = main
        self.classes: dict[tuple[int, ...], tuple[str, type]] = {}

    def message(self, indexes: tuple[int, ...]) -> tuple[str, type]:
        found = self.classes.get(indexes)
        if found is None:
            name = message_name(self.main, indexes)
            descriptor = self.pool.FindMessageTypeByName(name)
            found = (name, message_factory.GetMessageClass(descriptor))
            self.classes[indexes] = found
        return found

    def decoder(self, indexes: tuple[int, ...]) -> tuple[str, Callable[[bytes], object]]:
        name, cls = self.message(indexes)

        def decode(body: bytes) -> object:
            msg = cls()
            try:
                msg.ParseFromString(body)
            except (DecodeError, RuntimeError, ValueError) as e:
                raise BodyMismatch(f"Protobuf body does not decode as {name}: {e}") from None
            return declared_order(
                json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                          always_print_fields_with_no_presence=True),
                cls.DESCRIPTOR)

        return name, decode


def declared_order(obj: dict, descriptor) -> dict:
    """``json_format``'s object with its fields in the ``.proto``'s order. It writes the
    fields a message set first, then the defaults it fills in, so two values of one message
    came out in different orders (``tier`` before or after ``emails``): the JSON text of a
    message is now one shape whatever was set. Well-known types keep their JSON forms; what
    the descriptor does not name (an extension, ``[pkg.ext]``) follows."""
    out = {}
    for field in descriptor.fields:
        if field.name not in obj:
            continue
        value = obj[field.name]
        inner = field.message_type
        if inner is not None and inner.full_name not in _JSON_FORMS and value is not None:
            if inner.GetOptions().map_entry:
                entry = inner.fields_by_name["value"].message_type
                if entry is not None and entry.full_name not in _JSON_FORMS:
                    value = {k: declared_order(v, entry) for k, v in value.items()}
            elif isinstance(value, list):
                value = [declared_order(v, inner) for v in value]
            else:
                value = declared_order(value, inner)
        out[field.name] = value
    out.update((k, v) for k, v in obj.items() if k not in out)
    return out


#: Messages the proto3 JSON mapping writes in a form of their own (not an object of fields).
_JSON_FORMS = frozenset(f"google.protobuf.{name}" for name in (
    "Any", "Timestamp", "Duration", "FieldMask", "Struct", "Value", "ListValue", "NullValue",
    "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value",
    "BoolValue", "StringValue", "BytesValue", "Empty"))
