"""The schemas payloads name: registered versions, their history, and where they come from.

Schema Registry (and Karapace) keep one global id space: a schema id names one schema text
(with its type and references) and may be registered under several subjects, each as one of
that subject's versions. What a deserializer needs is the id's text; what an investigator
needs is the history (when a subject got a version, which were deleted). :class:`Schemas` is
that history, as the ``_schemas`` log or a directory of files gives it, and
:class:`SchemaLookup` is what the decoders ask: an id's schema, a reference's schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from segtools.errors import SegtoolsError

#: The registry's schema types (``schemaType``; absent means AVRO, the registry's default).
AVRO, PROTOBUF, JSON = "AVRO", "PROTOBUF", "JSON"
SCHEMA_TYPES = (AVRO, PROTOBUF, JSON)
#: A reference's version meaning the subject's latest (the registry's REST API reads -1 as
#: ``latest``); what a reference found by name in a directory of files points at.
LATEST = -1


@dataclass(frozen=True, slots=True)
class SchemaReference:
    """A named import: ``name`` is what the schema text uses (an Avro full name, a ``.proto``
    import path, a JSON Schema ``$ref`` URL), ``subject``/``version`` where it is registered."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """One subject version: the registry's ``SchemaValue`` plus when it was written (the
    ``_schemas`` record's timestamp and offset, when it came from there)."""

    id: int
    subject: str
    version: int
    schema_type: str
    schema: str
    references: tuple[SchemaReference, ...] = ()
    deleted: bool = False
    registered_ms: int | None = None
    offset: int | None = None
    #: When the version was soft-deleted (the first ``_schemas`` record saying so).
    deleted_ms: int | None = None
    #: When it was hard-deleted (its null value's record), for the versions that are gone.
    removed_ms: int | None = None

    def to_json(self) -> dict:
        return {"type": "schema", "id": self.id, "subject": self.subject,
                "version": self.version, "schema_type": self.schema_type,
                "deleted": self.deleted,
                "references": [r.to_json() for r in self.references],
                "registered": self.registered_ms, "offset": self.offset,
                "deleted_at": self.deleted_ms, "removed_at": self.removed_ms}


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """A ``CONFIG`` or ``MODE`` record: a subject's (or, subject None, the global)
    compatibility level or mode from that moment on; ``value`` None when it was cleared."""

    kind: str  # "compatibility" or "mode"
    subject: str | None
    value: str | None
    at_ms: int | None
    offset: int | None

    def to_json(self) -> dict:
        return {"type": "schema_config", "kind": self.kind, "subject": self.subject,
                "value": self.value, "at": self.at_ms, "offset": self.offset}


class SchemaLookup(Protocol):
    """What a decoder asks of a source of schemas."""

    def by_id(self, schema_id: int) -> RegisteredSchema | None: ...

    def by_subject_version(self, subject: str, version: int) -> RegisteredSchema | None: ...

    def registrations(self, schema_id: int) -> list[RegisteredSchema]: ...

    def hard_deleted(self, schema_id: int) -> bool: ...


@dataclass(slots=True)
class Schemas:
    """Registered schemas with their history, in the order they were written.

    ``versions`` holds what the registry still serves (soft-deleted versions included: the
    registry keeps serving them by id); ``removed`` the versions a hard delete (a null value)
    took away, so a payload naming one can be told apart from an id never seen."""

    versions: list[RegisteredSchema] = field(default_factory=list)
    removed: list[RegisteredSchema] = field(default_factory=list)
    configs: list[ConfigChange] = field(default_factory=list)
    source: str = ""

    def by_id(self, schema_id: int) -> RegisteredSchema | None:
        """The id's schema; where several subjects share it, the first registration."""
        for v in self.versions:
            if v.id == schema_id:
                return v
        return None

    def registrations(self, schema_id: int) -> list[RegisteredSchema]:
        return [v for v in self.versions if v.id == schema_id]

    def by_subject_version(self, subject: str, version: int) -> RegisteredSchema | None:
        if version == LATEST:
            return self.latest(subject) or self.latest(subject, include_deleted=True)
        for v in self.versions:
            if v.subject == subject and v.version == version:
                return v
        return None

    def referenced(self, schema: RegisteredSchema) -> list[RegisteredSchema]:
        """The versions ``schema`` references, transitively, each before those that use it
        (the order a reader must learn their named types in)."""
        out: list[RegisteredSchema] = []
        pending = list(schema.references)
        while pending:
            ref = pending.pop()
            found = self.by_subject_version(ref.subject, ref.version)
            if found is None:
                raise SegtoolsError(f"reference {ref.name!r} ({ref.subject} v{ref.version}) "
                                    "missing")
            if found not in out:
                out.insert(0, found)
                pending.extend(found.references)
        return out

    def latest(self, subject: str, *, include_deleted: bool = False) -> RegisteredSchema | None:
        """The subject's highest version (what ``/subjects/{s}/versions/latest`` serves)."""
        found = [v for v in self.versions
                 if v.subject == subject and (include_deleted or not v.deleted)]
        return max(found, key=lambda v: v.version) if found else None

    def hard_deleted(self, schema_id: int) -> bool:
        return self.by_id(schema_id) is None and any(v.id == schema_id for v in self.removed)

    def subjects(self) -> list[str]:
        return sorted({v.subject for v in self.versions})

    def compatibility(self, subject: str | None) -> str | None:
        """The level in force for ``subject`` (its own, else the global one), last write wins."""
        own = [c for c in self.configs if c.kind == "compatibility" and c.subject == subject]
        if own and own[-1].value is not None:
            return own[-1].value
        return None if subject is None else self.compatibility(None)

    def for_topics(self, topics: Iterable[str], ids: Iterable[int] = ()) -> Schemas:
        """The part of this history a set of topics needs: their subjects by Confluent's
        default ``TopicNameStrategy`` (``<topic>-key``, ``<topic>-value``), the subjects
        ``ids`` (the schema ids their records carry) are registered under, whatever those
        reference (a reader of the topic needs it), and the compatibility and mode settings
        of those subjects and the global ones."""
        subjects = {f"{t}-{side}" for t in topics for side in ("key", "value")}
        ids = set(ids)
        subjects |= {v.subject for v in self.versions if v.id in ids}
        pending = [v for v in self.versions if v.subject in subjects]
        while pending:
            for ref in pending.pop().references:
                found = self.by_subject_version(ref.subject, ref.version)
                if found is not None and found.subject not in subjects:
                    subjects.add(found.subject)
                    pending.append(found)
        return Schemas(versions=[v for v in self.versions if v.subject in subjects],
                       removed=[v for v in self.removed if v.subject in subjects or v.id in ids],
                       configs=[c for c in self.configs
                                if c.subject is None or c.subject in subjects],
                       source=self.source)

    def extend(self, other: Schemas) -> None:
        """Add what ``other`` knows that this does not (by id, subject and version)."""
        have = {(v.id, v.subject, v.version) for v in self.versions}
        self.versions.extend(v for v in other.versions if (v.id, v.subject, v.version) not in have)
        self.removed.extend(other.removed)
        self.configs.extend(other.configs)

    def __len__(self) -> int:
        return len(self.versions)

    def __iter__(self) -> Iterator[RegisteredSchema]:
        return iter(self.versions)


def avro_named(name: str, named: dict, namespace: str | None) -> dict:
    """The definition of the Avro named type ``name`` met so far (``named``: full name ->
    definition), looked up as Avro's spec resolves a name: qualified by the enclosing
    namespace unless it has a dot, else as written."""
    full = name if "." in name or not namespace else f"{namespace}.{name}"
    found = named.get(full, named.get(name))
    if found is None:
        raise SegtoolsError(f"Avro type {name!r} is not defined")
    return found


def subject_topic(subject: str) -> tuple[str, str] | None:
    """``<topic>-key`` / ``<topic>-value`` (``TopicNameStrategy``) as (topic, suffix); None for
    a subject of another naming strategy. Redaction hides the topic part as it hides topics."""
    for suffix in ("-key", "-value"):
        if subject.endswith(suffix) and len(subject) > len(suffix):
            return subject[: -len(suffix)], suffix
    return None


def subject_for(candidates: Iterable[RegisteredSchema], topic: str | None,
                is_key: bool) -> RegisteredSchema | None:
    """Which registration of an id to name: the one under the topic's subject by Confluent's
    default ``TopicNameStrategy`` (``<topic>-key`` / ``<topic>-value``), else the first."""
    found = list(candidates)
    if not found:
        return None
    if topic is not None:
        wanted = f"{topic}-{'key' if is_key else 'value'}"
        for v in found:
            if v.subject == wanted:
                return v
    return found[0]
