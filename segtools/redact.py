"""Redaction for sharing: keys, values, headers and topic names replaced by keyed tokens.

A dump or a report often leaves the team that owns the data (a vendor, another team, a
ticket). What they need is the *shape*: which records share a key, which values repeat, how
big things are, where the damage is; not the bytes. So each redacted item becomes a token from
HMAC-SHA256 over the bytes, under a key that is random per run (tokens then mean nothing
outside this one output) or given (``--redact-key``: the same bytes give the same token in
every dump and report made with that key, so outputs can be compared). The same input always
gives the same token within one output, so key reuse, duplicates and tombstones stay visible;
``null`` stays ``null`` (a tombstone is not a secret). Tokens are ASCII, so they read the same
in every ``--bytes`` mode.

Topic names are redacted only when asked (``topics``): the name itself, every path component
that is a partition directory of it, and every mention of it in free text (finding messages,
verdict reasons), as a whole word. Internal topics (``__consumer_offsets`` ...) keep their
names: they are Kafka's, not the owner's. Group ids and transactional ids are not redacted.

One module for every face (``segtools dump``, ``segtools report``), so a token means the same
thing wherever it appears.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.model import Record
from segtools.storage.partition import parse_partition_dir_name

KINDS = ("keys", "values", "headers", "topics")

#: Hex digits of the HMAC kept in a token: 64 bits, so two different inputs sharing a token in
#: one output is a one-in-10^19 event per pair.
TOKEN_HEX = 16

_PREFIX = {"keys": "key", "values": "value", "headers": "header", "topics": "topic"}
_NAME_CHARS = "A-Za-z0-9._"
#: Where a topic name starts as a word: after a character that cannot be part of a name, or
#: right after a ``\\xNN`` escape (a binary key shown as text: ``__consumer_offsets`` keys
#: put a length byte just before the topic name).
_WORD_START = f"(?:(?<![{_NAME_CHARS}])|(?<=\\\\x[0-9a-f]{{2}}))"
#: Topics whose records spell other topics' names in their bytes: offset commits
#: (``__consumer_offsets`` keys), transactions' partitions (``__transaction_state`` values),
#: ``TopicRecord``s (``__cluster_metadata``), tiered segments' partitions
#: (``__remote_log_metadata``), and subjects (``_schemas`` keys, ``orders-value``).
NAMING_TOPICS = frozenset(("__consumer_offsets", "__transaction_state", "__cluster_metadata",
                           "__remote_log_metadata", "_schemas"))


def parse_kinds(text: str) -> frozenset[str]:
    """``keys,values,headers[,topics]`` (any subset, any order) as a set; a ValueError names
    what is not a kind."""
    kinds = {k.strip() for k in text.split(",") if k.strip()}
    bad = sorted(kinds - set(KINDS))
    if bad or not kinds:
        raise ValueError(f"not a redaction kind: {', '.join(bad) or repr(text)} "
                         f"(choose from {', '.join(KINDS)})")
    return frozenset(kinds)


@dataclass
class Redactor:
    """Replaces the chosen kinds of data by tokens; build it with :func:`redactor`."""

    kinds: frozenset[str]
    secret: bytes = field(repr=False)
    stable: bool  # the key was given, so tokens match across outputs made with it
    _topics: dict[str, str] = field(default_factory=dict, repr=False)
    _pattern: re.Pattern | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ tokens

    def token(self, kind: str, data: bytes) -> str:
        """``<kind>.<16 hex>``: HMAC-SHA256 under the run's key, separated by kind (a key and
        a value with the same bytes get different tokens)."""
        mac = hmac.new(self.secret, kind.encode() + b"\0" + data, hashlib.sha256)
        return f"{_PREFIX[kind]}.{mac.hexdigest()[:TOKEN_HEX]}"

    def _bytes(self, kind: str, data: bytes | None) -> bytes | None:
        if data is None or kind not in self.kinds:
            return data
        return self.token(kind, data).encode("ascii")

    def key(self, data: bytes | None) -> bytes | None:
        return self._bytes("keys", data)

    def value(self, data: bytes | None) -> bytes | None:
        return self._bytes("values", data)

    def header_key(self, name: str) -> str:
        if "headers" not in self.kinds:
            return name
        return self.token("headers", name.encode("utf-8", "surrogateescape"))

    def header_value(self, data: bytes | None) -> bytes | None:
        return self._bytes("headers", data)

    def headers(self, headers: Iterable[tuple[str, bytes | None]]
                ) -> tuple[tuple[str, bytes | None], ...]:
        return tuple((self.header_key(k), self.header_value(v)) for k, v in headers)

    def record(self, r: Record, topic: str | None = None) -> Record:
        """A record with its key, value and headers redacted; control records are Kafka's
        (markers), not the producer's, and stay as they are. A record of ``topic`` in
        :data:`NAMING_TOPICS` spells topic names in its key and value, as bytes a name's
        pattern cannot find (a length byte before each name, shown as ``\\r`` or ``\\x0c``
        in a dump), so with ``topics`` redacted its key and value are tokens too."""
        if r.control is not None:
            return r
        if "topics" in self.kinds and topic in NAMING_TOPICS:
            return dataclasses.replace(
                r, key=None if r.key is None else self.token("keys", r.key).encode("ascii"),
                value=None if r.value is None else self.token("values", r.value).encode("ascii"),
                headers=self.headers(r.headers))
        return dataclasses.replace(r, key=self.key(r.key), value=self.value(r.value),
                                   headers=self.headers(r.headers))

    # ------------------------------------------------------------------ topic names

    def topic(self, name: str) -> str:
        if "topics" not in self.kinds or name.startswith("__"):
            return name
        if name not in self._topics:
            self._topics[name] = self.token("topics", name.encode("utf-8", "surrogateescape"))
            self._pattern = None
        return self._topics[name]

    def learn(self, topics: Iterable[str]) -> None:
        """Topics whose mentions in free text :meth:`text` replaces."""
        for t in topics:
            self.topic(t)

    def partition_dir(self, name: str) -> str:
        """A directory name with its topic redacted (``orders-3`` -> ``topic.…-3``; the
        ``.<uuid>-delete`` suffixes kept); other names unchanged."""
        parsed = parse_partition_dir_name(name)
        if parsed is None or "topics" not in self.kinds:
            return name
        return self.topic(parsed.topic) + name[len(parsed.topic):]

    def path(self, path: str | os.PathLike[str]) -> str:
        """Every component of ``path`` that names a partition directory, redacted."""
        text = os.fspath(path)
        if "topics" not in self.kinds:
            return text
        return "/".join(self.partition_dir(part) for part in text.split("/"))

    def text(self, text: str) -> str:
        """Free text with every known topic name, as a whole word, replaced by its token."""
        if "topics" not in self.kinds or not self._topics:
            return text
        if self._pattern is None:
            names = sorted((n for n in self._topics if n != self._topics[n]), key=len,
                           reverse=True)
            if not names:
                return text
            self._pattern = re.compile(
                f"{_WORD_START}(?:{'|'.join(map(re.escape, names))})(?![{_NAME_CHARS}])")
        return self._pattern.sub(lambda m: self._topics[m.group(0)], text)

    def finding(self, f: Finding) -> Finding:
        if "topics" not in self.kinds:
            return f
        return dataclasses.replace(f, path=self.path(f.path), message=self.text(f.message))

    # ------------------------------------------------------------------ saying so

    def describe(self) -> str:
        """One sentence for the output itself: what was redacted and how."""
        what = ", ".join(k for k in KINDS if k in self.kinds)
        how = ("HMAC-SHA256 under a key given with --redact-key: the same bytes give the same "
               "token in every output made with that key" if self.stable else
               "HMAC-SHA256 under a random key made for this output and then forgotten: the "
               "same bytes give the same token within it, and nothing outside it")
        return f"redacted: {what}, each replaced by a token ({how})"


def redactor(kinds: str | Iterable[str] | None, key: str | bytes | None = None
             ) -> Redactor | None:
    """The redactor for ``--redact KINDS [--redact-key KEY]``; None when nothing is redacted."""
    if kinds is None:
        if key is not None:
            raise SegtoolsError("--redact-key needs --redact")
        return None
    try:
        chosen = parse_kinds(kinds) if isinstance(kinds, str) else parse_kinds(",".join(kinds))
    except ValueError as e:
        raise SegtoolsError(str(e)) from None
    if key is None:
        return Redactor(chosen, secrets.token_bytes(32), stable=False)
    secret = key.encode("utf-8") if isinstance(key, str) else key
    if not secret:
        raise SegtoolsError("--redact-key must not be empty")
    return Redactor(chosen, secret, stable=True)
