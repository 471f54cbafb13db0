"""Where schemas come from, in the order they are asked: the ``_schemas`` topic on the disk
being read (or named by ``--schemas``), a directory of schema files, a registry URL.

Each source is a :class:`~segtools.payloads.schemas.SchemaLookup`; :class:`SchemaChain` asks
them in order. :func:`gather` builds the chain the faces use and tells ``say`` once per source
what it found (the CLI prints that on stderr; data stays on stdout).
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import lazy_loader

from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.payloads.schema_files import read_directory
from segtools.payloads.schemas import (
    AVRO,
    LATEST,
    RegisteredSchema,
    SchemaLookup,
    SchemaReference,
    Schemas,
)
from segtools.payloads.schemas_topic import SCHEMAS_TOPIC, beside, read_schemas, schemas_partitions
from segtools.sensitive import without_credentials
from segtools.storage.location import as_path
from segtools.storage.logdirs import LogDir, walk_topic

#: The registry client's HTTP stack loads on its first request: ``urllib.request`` brings
#: ``http.client``, ``ssl`` and ``email`` (20-40 ms), and every command that can decode
#: imports this module, most of them never asking a registry.
http = lazy_loader.load("urllib.request", suppress_warning=True)

#: The environment variable holding ``user:password`` for a registry (Confluent's
#: ``basic.auth.user.info``); read, never printed.
AUTH_VARIABLE = "SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO"
#: Seconds a registry request may take.
REGISTRY_TIMEOUT = 10
#: The largest registry answer read (a schema is kilobytes; a larger answer is not one).
MAX_ANSWER_BYTES = 16 << 20


@dataclass(slots=True)
class SchemaChain:
    """Sources asked in order: the first that knows an id or a subject version answers."""

    sources: list[SchemaLookup] = field(default_factory=list)

    def by_id(self, schema_id: int) -> RegisteredSchema | None:
        for s in self.sources:
            found = s.by_id(schema_id)
            if found is not None:
                return found
        return None

    def registrations(self, schema_id: int) -> list[RegisteredSchema]:
        for s in self.sources:
            found = s.registrations(schema_id)
            if found:
                return found
        return []

    def by_subject_version(self, subject: str, version: int) -> RegisteredSchema | None:
        for s in self.sources:
            found = s.by_subject_version(subject, version)
            if found is not None:
                return found
        return None

    def hard_deleted(self, schema_id: int) -> bool:
        return self.by_id(schema_id) is None and any(s.hard_deleted(schema_id)
                                                     for s in self.sources)

    def histories(self) -> list[Schemas]:
        """The sources that hold a history (the topic, the files), for ``segtools schemas``."""
        return [s for s in self.sources if isinstance(s, Schemas)]


# --------------------------------------------------------------------------- a registry


def _references(obj) -> tuple[SchemaReference, ...]:
    refs = obj.get("references") or []
    return tuple(SchemaReference(r["name"], r["subject"], int(r["version"]))
                 for r in refs if isinstance(r, dict))


@dataclass(slots=True)
class RegistryClient:
    """A Schema Registry (or Karapace) read with GETs only (its REST API's ``/schemas/ids``
    and ``/subjects`` resources), every answer kept for the run. Credentials come from
    :data:`AUTH_VARIABLE`, else from the URL's user part (the clients'
    ``basic.auth.credentials.source`` ``USER_INFO`` and ``URL``); they never appear in a
    message, and the URL is shown without them."""

    url: str = field(repr=False)  # may carry user:password itself: taken out in __post_init__
    auth: str | None = field(default=None, repr=False)
    cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        try:
            parts = urllib.parse.urlsplit(self.url)
            _ = parts.port  # a port that is not a number raises here
        except ValueError as e:
            raise SegtoolsError(f"not a schema registry URL: {e}", path=self.shown) from None
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            # urllib would also open file:// and ftp:// URLs: a registry is a REST service
            raise SegtoolsError("a schema registry URL is http://HOST[:PORT] or https://...",
                                path=self.shown)
        if "@" in parts.netloc:
            user, _, _ = parts.netloc.rpartition("@")
            if self.auth is None and ":" in user:
                self.auth = urllib.parse.unquote(user)
            self.url = parts._replace(netloc=self._host(parts)).geturl()

    def __repr__(self) -> str:
        return f"RegistryClient({self.shown})"

    @classmethod
    def from_environment(cls, url: str, environ=os.environ) -> RegistryClient:
        return cls(url.rstrip("/"), environ.get(AUTH_VARIABLE) or None)

    @staticmethod
    def _host(parts: urllib.parse.SplitResult) -> str:
        """The URL's host and port, without its user part (an IPv6 host in brackets)."""
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        return host + (f":{parts.port}" if parts.port else "")

    @property
    def shown(self) -> str:
        """The URL without its user part, and with a credential in its query
        (``?api_key=...``) shown as ``***``, as every path is."""
        try:
            parts = urllib.parse.urlsplit(self.url)
            bare = parts._replace(netloc=self._host(parts)).geturl() if parts.hostname \
                else self.url
        except ValueError:  # a port that is not a number
            bare = self.url
        return without_credentials(bare)

    def _get(self, path: str):
        if path in self.cache:
            return self.cache[path]
        request = http.Request(self.url + path, method="GET", headers={
            "Accept": "application/vnd.schemaregistry.v1+json, application/json"})
        if self.auth:
            token = base64.b64encode(self.auth.encode()).decode("ascii")
            # not sent again if the registry redirects: a redirect may name another host
            # (urllib copies ordinary headers onto the redirected request)
            request.add_unredirected_header("Authorization", f"Basic {token}")
        try:
            with http.urlopen(request, timeout=REGISTRY_TIMEOUT) as answer:
                data = answer.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise SegtoolsError(f"schema registry answered {e.code} to GET {path}",
                                    path=self.shown) from None
            data = b"null"
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise SegtoolsError(f"schema registry unreachable: {reason}", path=self.shown
                                ) from None
        if len(data) > MAX_ANSWER_BYTES:
            raise SegtoolsError(f"schema registry answered GET {path} with more than "
                                f"{MAX_ANSWER_BYTES >> 20} MiB: not a schema", path=self.shown)
        try:
            found = json.loads(data)
        except (ValueError, RecursionError) as e:  # a proxy's HTML page, a torn answer
            raise SegtoolsError(f"schema registry answered GET {path} with what is not JSON "
                                f"({e})", path=self.shown) from None
        self.cache[path] = found
        return found

    def by_id(self, schema_id: int) -> RegisteredSchema | None:
        found = self.registrations(schema_id)
        return found[0] if found else None

    def registrations(self, schema_id: int) -> list[RegisteredSchema]:
        body = self._get(f"/schemas/ids/{schema_id}")
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            return []
        kind = body.get("schemaType") or AVRO
        where = self._get(f"/schemas/ids/{schema_id}/versions?deleted=true") or []
        pairs = [(w["subject"], int(w["version"])) for w in where if isinstance(w, dict)]
        return [RegisteredSchema(schema_id, s, v, kind, body["schema"], _references(body))
                for s, v in pairs or [(f"(id {schema_id})", 0)]]

    def by_subject_version(self, subject: str, version: int) -> RegisteredSchema | None:
        quoted = urllib.parse.quote(subject, safe="")
        which = "latest" if version == LATEST else str(version)
        body = self._get(f"/subjects/{quoted}/versions/{which}?deleted=true")
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            return None
        if version == LATEST:
            version = int(body.get("version", LATEST))
        return RegisteredSchema(int(body.get("id", -1)), subject, version,
                                body.get("schemaType") or AVRO, body["schema"],
                                _references(body), bool(body.get("deleted")))

    def hard_deleted(self, schema_id: int) -> bool:
        return False


# --------------------------------------------------------------------------- the chain


def _topic_partitions(places: Sequence[LogDir | Path]):
    """The store topic's partitions among log dirs walked (or beside them: a tree given as
    some of its partitions), or in the log dirs of paths."""
    walked = [d for d in places if isinstance(d, LogDir)]
    found = schemas_partitions(p for d in walked for p in d.partitions)
    if found:
        return _once_each(found)
    seen: set = set()
    for place in places:
        path = place.path if isinstance(place, LogDir) else place
        if path in seen:
            continue
        seen.add(path)
        where = as_path(path)  # wherever it lives: its location lists it
        if where.name.startswith(f"{SCHEMAS_TOPIC}-"):
            found.extend(beside(where.parent))
        elif where.is_dir():
            found.extend(beside(where))
    return _once_each(found)


def _once_each(partitions: Sequence) -> list:
    """Each store partition once, where it was first reached: a log dir named by its path
    and by a link to it walks as two log dirs, and their one ``_schemas-0`` read as two
    replicas doubled every config, mode and hard-delete record (the report's "2
    hard-deleted" of one). Copies in other log dirs are other places, and stay."""
    unique: dict = {}
    for p in partitions:
        unique.setdefault(_place(p.path), p)
    return list(unique.values())


def _store(partitions: Sequence, location: str) -> tuple[str, ...]:
    """What one schema store is, however it was named: the places of its ``_schemas``
    partitions (a log dir, one of its partitions, a link to either, the same directory
    spelled twice), else the place of the schema-file directory."""
    if partitions:
        return tuple(sorted({_place(p.path) for p in partitions}))
    return (_place(location),)


def _place(path: str | os.PathLike[str]) -> str:
    where = as_path(path)
    return where.location.place(where)


def gather(log_dirs: Sequence[LogDir | Path], findings: list[Finding], *,
           schemas: Iterable[str] = (), registry: str | None = None,
           say: Callable[[str], None] = lambda _: None) -> SchemaChain:
    """The schema sources for reading ``log_dirs`` (walked, or paths of log dirs): each
    ``schemas`` location (a log dir, a
    ``_schemas`` partition, an archive, ``s3://...``: whatever holds the topic; or a directory
    of schema files), else the ``_schemas`` topic among the log dirs, then the registry.
    A store named twice (the same directory spelled two ways, a log dir and its own
    ``_schemas`` partition) is one source, in the place of its first mention."""
    chain = SchemaChain()
    named = list(schemas)
    stores: set[tuple[str, ...]] = set()
    for location in named:
        if not location:  # an unset variable, never the current directory
            raise SegtoolsError("an empty schemas location: name a log dir, a _schemas "
                                "partition, an archive or a directory of schema files")
        if (_place(location),) in stores:  # named again: not even listed again
            continue
        dirs, loose = walk_topic([location], SCHEMAS_TOPIC)
        if any(f.code == "path_not_found" for f in loose):
            raise SegtoolsError("no such file or directory", path=location)
        partitions = _topic_partitions(dirs)
        store = _store(partitions, location)
        if store in stores:  # named again: read, said and asked once, where first named
            continue
        stores.update((store, (_place(location),)))
        if partitions:
            history = read_schemas(partitions, findings)
            say(f"schemas: {len(history)} version(s) from {SCHEMAS_TOPIC} in {location}")
        elif Path(location).is_dir():
            history = read_directory(Path(location))
            say(f"schemas: {len(history)} file(s) from {location}")
        else:
            raise SegtoolsError(f"holds neither a {SCHEMAS_TOPIC} topic nor schema files",
                                path=location)
        chain.sources.append(history)
    if not named:
        partitions = _topic_partitions(log_dirs)
        if partitions:
            history = read_schemas(partitions, findings)
            say(f"schemas: {len(history)} version(s) from "
                f"{', '.join(str(p.path) for p in partitions)}")
            chain.sources.append(history)
    if registry is not None:
        client = RegistryClient.from_environment(registry)
        say(f"schemas: asking the registry at {client.shown} for what the disk does not hold")
        chain.sources.append(client)
    if not chain.sources:
        say(f"schemas: no {SCHEMAS_TOPIC} topic found and none named (--schemas, "
            "--schema-registry): framed payloads will not decode")
    return chain
