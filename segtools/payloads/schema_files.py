"""A directory of schema files: the offline alternative to the ``_schemas`` topic.

Layouts read (docs/payloads.md, "Where schemas come from"):

- ``<id>.avsc|.proto|.json``: a schema found by its id (a registry export by id);
- ``<subject>/<version>.avsc|.proto|.json``: a subject's version (a subject version whose text
  is an id file's is that id's registration);
- any other ``.proto`` or ``.avsc`` file: a file other schemas import. A ``.proto`` is known
  by its path under the directory (protoc's own layout: ``shop/common/address.proto``); an
  ``.avsc`` by the full name of its top-level type (``shop.Money``). Both are the subject names
  Confluent's serializers register references under by default
  (``DefaultReferenceSubjectNameStrategy``: the reference's name).

Files carry no ``references`` list, so the references are found by name, as protoc and Avro's
own tools find them: a ``.proto``'s ``import`` paths, an ``.avsc``'s named types it uses but does
not define. Each name is looked for as a subject (its latest version), then, for Avro, as the
one text that defines it (top-level definitions first); a name found nowhere, or defined by
several different texts, is a reference to the subject of that name's latest version, which
another source (a registry) may hold, and is otherwise ``payload_reference_missing``: segtools
does not choose between two definitions.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from segtools.errors import SegtoolsError
from segtools.payloads.schemas import (
    AVRO,
    JSON,
    LATEST,
    PROTOBUF,
    RegisteredSchema,
    SchemaReference,
    Schemas,
)
from segtools.storage.scope import note_read

#: Schema file extensions and the schema type each holds.
EXTENSIONS = {".avsc": AVRO, ".proto": PROTOBUF, ".json": JSON}
#: Avro's primitive type names (never a reference).
AVRO_PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes",
                             "string"))
#: Avro's named types (what a file can define for another to use).
AVRO_NAMED = frozenset(("record", "error", "enum", "fixed"))
#: Import paths Schema Registry resolves without a reference (docs/payloads.md), which a
#: directory therefore need not hold.
BUILTIN_IMPORTS = ("google/protobuf/", "google/type/", "confluent/")
#: The most nodes of one Avro schema walked for its names (a schema is thousands at most).
MAX_AVRO_NODES = 1_000_000
#: The largest schema file read: a schema is kilobytes (the registry keeps each in one record
#: of ``_schemas``, 1 MB by Kafka's default); a larger file is not one, and reading it whole
#: would hold it all in memory.
MAX_SCHEMA_FILE_BYTES = 16 << 20

_PROTO_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PROTO_IMPORT = re.compile(r'\bimport\s+(?:public\s+|weak\s+)?"([^"\n]+)"\s*;')


@dataclass(frozen=True, slots=True)
class AvroNames:
    """The named types an Avro schema text defines and the ones it uses (full names)."""

    top: str | None
    defined: frozenset[str]
    used: tuple[str, ...]  # full names, in the order first met

    def missing(self) -> tuple[str, ...]:
        return tuple(n for n in self.used if n not in self.defined)


def _full(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def avro_names(text: str) -> AvroNames | None:
    """The names of an Avro schema text, or None when the text is not JSON (the decoder
    reports that schema as invalid when a payload needs it)."""
    try:
        root = json.loads(text)
    except (ValueError, RecursionError):
        return None
    defined: dict[str, None] = {}
    used: dict[str, None] = {}
    top: str | None = None
    pending: list[tuple[object, str | None]] = [(root, None)]
    walked = 0
    while pending and walked < MAX_AVRO_NODES:
        node, namespace = pending.pop()
        walked += 1
        if isinstance(node, str):
            if node not in AVRO_PRIMITIVES:
                used.setdefault(_full(node, namespace))
        elif isinstance(node, list):
            pending.extend((n, namespace) for n in reversed(node))
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind in AVRO_NAMED and isinstance(node.get("name"), str):
                space = node.get("namespace")
                name = node["name"]
                full = _full(name, space if isinstance(space, str) and space else namespace)
                defined.setdefault(full)
                top = top or full
                namespace = full.rpartition(".")[0] or None
            children: list[object] = []
            if kind in ("record", "error") and isinstance(node.get("fields"), list):
                children = [f.get("type") for f in node["fields"] if isinstance(f, dict)]
            elif kind == "array":
                children = [node.get("items")]
            elif kind == "map":
                children = [node.get("values")]
            elif isinstance(kind, dict | list) or (isinstance(kind, str) and kind not in AVRO_NAMED
                                                   and kind not in ("array", "map")):
                children = [kind]  # {"type": "shop.Money"}, {"type": {...}}, {"type": [...]}
            pending.extend((c, namespace) for c in reversed(children) if c is not None)
    return AvroNames(top, frozenset(defined), tuple(used))


def proto_imports(text: str) -> tuple[str, ...]:
    """The import paths of ``.proto`` text that Schema Registry does not provide itself."""
    found = _PROTO_IMPORT.findall(_PROTO_COMMENT.sub(" ", text))
    return tuple(dict.fromkeys(p for p in found if not p.startswith(BUILTIN_IMPORTS)))


@dataclass(frozen=True, slots=True)
class SchemaFile:
    """One schema file: what it registers (id, subject, version) and its text."""

    schema_id: int
    subject: str
    version: int
    kind: str
    text: str


def _text(path: Path) -> str:
    """A schema file's text. One that is too large, or not UTF-8 (what the registry stores and
    its REST API serves), is a one-line error naming it, not a guess with replaced bytes."""
    try:
        with path.open("rb") as f:
            st = os.fstat(f.fileno())
            data = f.read(MAX_SCHEMA_FILE_BYTES + 1)
        note_read(str(path), st.st_size, st.st_mtime_ns)  # a run's chain of custody
    except OSError as e:
        raise SegtoolsError(f"cannot read: {e.strerror or e}", path=str(path)) from None
    if len(data) > MAX_SCHEMA_FILE_BYTES:
        raise SegtoolsError(f"more than {MAX_SCHEMA_FILE_BYTES >> 20} MiB: not a schema file",
                            path=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SegtoolsError(f"not UTF-8 text (byte {data[e.start]:#04x} at {e.start})",
                            path=str(path)) from None


def _files(root: Path) -> Iterator[tuple[Path, str, str]]:
    """The schema files under ``root`` with their texts: numbered ones of every kind, and the
    ``.proto``/``.avsc`` files schemas may import (another ``.json`` is not a schema's)."""
    for path in sorted(root.rglob("*")):
        kind = EXTENSIONS.get(path.suffix)
        if kind is None or (kind == JSON and not path.stem.isdigit()) or not path.is_file():
            continue
        yield path.relative_to(root), kind, _text(path)


def schema_files(root: Path) -> list[SchemaFile]:
    """Every schema file under ``root``, as registrations, in a stable order: subject
    versions, then id files no subject version names, then imported files."""
    by_id: dict[int, tuple[str, str]] = {}
    versions: list[tuple[str, int, str, str]] = []
    imported: list[tuple[str, str | None, str, str]] = []  # path, Avro top name, kind, text
    for rel, kind, text in _files(root):
        if rel.stem.isdigit() and len(rel.parts) == 1:
            by_id[int(rel.stem)] = (kind, text)
        elif rel.stem.isdigit():
            versions.append(("/".join(rel.parts[:-1]), int(rel.stem), kind, text))
        elif kind in (PROTOBUF, AVRO):
            names = avro_names(text) if kind == AVRO else None
            imported.append((rel.as_posix(), names.top if names else None, kind, text))
    # an .avsc is known by its type's name only when no other file claims that subject (two
    # definitions of shop.Money are not chosen between: each is then known by its path)
    claims = Counter([top for _, top, _, _ in imported if top] + [s for s, _, _, _ in versions])
    out: list[SchemaFile] = []
    linked: set[int] = set()
    for subject, version, kind, text in versions:
        schema_id = next((i for i, (k, t) in by_id.items() if k == kind and t == text), None)
        if schema_id is not None:
            linked.add(schema_id)
        out.append(SchemaFile(-1 if schema_id is None else schema_id, subject, version, kind,
                              text))
    out.extend(SchemaFile(i, f"(id {i})", 0, kind, text)
               for i, (kind, text) in sorted(by_id.items()) if i not in linked)
    out.extend(SchemaFile(-1, top if top and claims[top] == 1 else path, 1, kind, text)
               for path, top, kind, text in imported)
    return out


@dataclass(frozen=True, slots=True)
class _Names:
    """What the directory's files are known by: subjects, and Avro names and their texts."""

    latest: dict[str, SchemaFile]
    avro: dict[int, AvroNames]  # by index into the files

    @classmethod
    def of(cls, files: list[SchemaFile]) -> _Names:
        latest: dict[str, SchemaFile] = {}
        for f in files:
            if f.subject not in latest or f.version > latest[f.subject].version:
                latest[f.subject] = f
        avro = {i: names for i, f in enumerate(files) if f.kind == AVRO
                for names in (avro_names(f.text),) if names is not None}
        return cls(latest, avro)


def _reference(name: str, found: SchemaFile | None) -> SchemaReference:
    if found is None:
        return SchemaReference(name, name, LATEST)
    return SchemaReference(name, found.subject, found.version)


def _avro_definer(name: str, here: int, files: list[SchemaFile], names: _Names
                  ) -> SchemaFile | None:
    """The one text defining ``name`` (its top-level type first), else None."""
    for top_only in (True, False):
        texts = {files[i].text: files[i] for i, n in names.avro.items() if i != here
                 and (n.top == name if top_only else name in n.defined)}
        if len(texts) == 1:
            return next(iter(texts.values()))
        if texts:
            return None  # several definitions: not chosen between
    return None


def _references(index: int, files: list[SchemaFile], names: _Names
                ) -> tuple[SchemaReference, ...]:
    f = files[index]
    refs: list[SchemaReference] = []
    if f.kind == PROTOBUF:
        for path in proto_imports(f.text):
            found = names.latest.get(path)
            refs.append(_reference(path, found if found is not f else None))
    elif f.kind == AVRO and index in names.avro:
        for name in names.avro[index].missing():
            found = names.latest.get(name)
            if found is None or found is f or found.kind != AVRO:
                found = _avro_definer(name, index, files, names)
            refs.append(_reference(name, found))
    return tuple(refs)


def read_directory(root: Path) -> Schemas:
    """The schemas of a directory of schema files, references found by name."""
    files = schema_files(root)
    names = _Names.of(files)
    out = Schemas(source=str(root))
    for i, f in enumerate(files):
        out.versions.append(RegisteredSchema(f.schema_id, f.subject, f.version, f.kind, f.text,
                                             _references(i, files, names)))
    return out
