"""The topic configuration that retention and the cleaner obey, and where each value came from.

A broker resolves a topic setting from the topic's own override, then the broker's dynamic and
static settings under their ``log.``-prefixed synonyms (``ServerTopicConfigSynonyms``), then
``LogConfig``'s defaults. Offline there is no broker to ask, so the sources are, in priority
order:

1. ``flag``: a command-line flag (``--retention-ms`` ...);
2. ``config_file``: a file given with ``--config`` (Java properties, or what
   ``kafka-configs --describe [--all]`` prints: ``Dynamic configs for topic X are:`` headers and
   ``key=value sensitive=false synonyms={...}`` lines; a ``server.properties`` works too, through
   the broker synonyms);
3. ``cluster_metadata``: topic ``ConfigRecord``\\ s replayed from a ``__cluster_metadata-0``
   partition found in the same tree;
4. ``internal_topic``: what a broker sets when it creates one of its own topics (the group and
   transaction coordinators create ``__consumer_offsets`` and ``__transaction_state`` with
   ``cleanup.policy=compact``, whatever the broker defaults say);
5. ``default``: ``LogConfig``'s defaults (``docs/kafka-storage.md`` §9).

Every resolved value keeps its source, because "retention.ms is 7 days" means something very
different when it is a guess than when the cluster said so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from segtools.errors import SegtoolsError

LONG_MAX = 2**63 - 1
HOUR_MS = 3_600_000
MINUTE_MS = 60_000

SOURCE_FLAG = "flag"
SOURCE_CONFIG_FILE = "config_file"
SOURCE_CLUSTER_METADATA = "cluster_metadata"
SOURCE_INTERNAL = "internal_topic"
SOURCE_DEFAULT = "default"
SOURCE_ASSUMED = "assumed"  # no source said; a command chose a value and says why
SOURCES = (SOURCE_FLAG, SOURCE_CONFIG_FILE, SOURCE_CLUSTER_METADATA, SOURCE_INTERNAL,
           SOURCE_DEFAULT,
           SOURCE_ASSUMED)


def _policy(text: str) -> tuple[str, ...]:
    """``cleanup.policy`` is a list (``compact,delete``); Kafka lower-cases and validates it."""
    items = tuple(sorted({p.strip().lower() for p in text.split(",") if p.strip()}))
    bad = [p for p in items if p not in ("compact", "delete")]
    if bad:
        raise ValueError(f"cleanup.policy {bad[0]!r} is not compact or delete")
    return items


def _long(text: str) -> int:
    """A Java long, as ``ConfigDef.Type.LONG`` parses it; the error in words, not Python's."""
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError("not a whole number") from None


def _ratio(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError("not a number") from None
    if not 0 <= value <= 1:
        raise ValueError("must be between 0 and 1")
    return value


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError("must be true or false")
    return value == "true"


@dataclass(frozen=True, slots=True)
class _Def:
    """One topic config: its attribute, parser, default, and broker synonyms in priority order
    (``ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS``) with their unit multipliers."""

    attr: str
    parse: Callable[[str], object]
    default: object
    synonyms: tuple[tuple[str, int], ...] = ()


#: The topic configs retention and compaction read, with ``LogConfig`` / ``ServerLogConfigs``
#: defaults.
DEFINITIONS: dict[str, _Def] = {
    "cleanup.policy": _Def("cleanup_policy", _policy, ("delete",), (("log.cleanup.policy", 1),)),
    "retention.ms": _Def("retention_ms", _long, 7 * 24 * HOUR_MS, (
        ("log.retention.ms", 1), ("log.retention.minutes", MINUTE_MS),
        ("log.retention.hours", HOUR_MS))),
    "retention.bytes": _Def("retention_bytes", _long, -1, (("log.retention.bytes", 1),)),
    "segment.bytes": _Def("segment_bytes", _long, 1024**3, (("log.segment.bytes", 1),)),
    "segment.ms": _Def("segment_ms", _long, 7 * 24 * HOUR_MS, (
        ("log.roll.ms", 1), ("log.roll.hours", HOUR_MS))),
    "segment.jitter.ms": _Def("segment_jitter_ms", _long, 0, (
        ("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", HOUR_MS))),
    "segment.index.bytes": _Def("segment_index_bytes", _long, 10 * 1024 * 1024,
                                (("log.index.size.max.bytes", 1),)),
    "delete.retention.ms": _Def("delete_retention_ms", _long, 24 * HOUR_MS,
                                (("log.cleaner.delete.retention.ms", 1),)),
    "min.cleanable.dirty.ratio": _Def("min_cleanable_dirty_ratio", _ratio, 0.5,
                                      (("log.cleaner.min.cleanable.ratio", 1),)),
    "min.compaction.lag.ms": _Def("min_compaction_lag_ms", _long, 0,
                                  (("log.cleaner.min.compaction.lag.ms", 1),)),
    "max.compaction.lag.ms": _Def("max_compaction_lag_ms", _long, LONG_MAX,
                                  (("log.cleaner.max.compaction.lag.ms", 1),)),
    "file.delete.delay.ms": _Def("file_delete_delay_ms", _long, 60_000,
                                 (("log.segment.delete.delay.ms", 1),)),
    "remote.storage.enable": _Def("remote_storage_enable", _bool, False),
    "local.retention.ms": _Def("local_retention_ms", _long, -2,
                               (("log.local.retention.ms", 1),)),
    "local.retention.bytes": _Def("local_retention_bytes", _long, -2,
                                  (("log.local.retention.bytes", 1),)),
    "remote.log.copy.disable": _Def("remote_log_copy_disable", _bool, False),
}


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """Where one value came from: a source code (:data:`SOURCES`) and a human detail
    (``file.txt:4 DYNAMIC_TOPIC_CONFIG``, ``log.retention.hours=168``)."""

    source: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """The effective settings of one topic. Plain values, so it pickles to Spark executors."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    retention_ms: int = 7 * 24 * HOUR_MS
    retention_bytes: int = -1
    segment_bytes: int = 1024**3
    segment_ms: int = 7 * 24 * HOUR_MS
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    delete_retention_ms: int = 24 * HOUR_MS
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60_000
    remote_storage_enable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_log_copy_disable: bool = False
    provenance: tuple[tuple[str, ConfigValue], ...] = field(default=())

    @property
    def delete(self) -> bool:
        """``LogConfig.delete``: the policy list contains ``delete``."""
        return "delete" in self.cleanup_policy

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def remote_copy_enabled(self) -> bool:
        """``UnifiedLog.remoteLogEnabledAndRemoteCopyEnabled``: tiered, and copies not turned
        off (``remote.log.copy.disable``, Kafka 3.9): only then do local.retention.* apply and
        local segments wait for their copy."""
        return self.remote_storage_enable and not self.remote_log_copy_disable

    @property
    def local_retention_ms_effective(self) -> int:
        """``UnifiedLog.localRetentionMs``: with tiered storage (copies on), ``local.retention.ms``
        unless it is -2 (inherit); otherwise ``retention.ms``."""
        if self.remote_copy_enabled and self.local_retention_ms != -2:
            return self.local_retention_ms
        return self.retention_ms

    @property
    def local_retention_bytes_effective(self) -> int:
        """``UnifiedLog.localRetentionSize``, the same rule for bytes."""
        if self.remote_copy_enabled and self.local_retention_bytes != -2:
            return self.local_retention_bytes
        return self.retention_bytes

    def source(self, name: str) -> ConfigValue:
        return dict(self.provenance).get(name, ConfigValue(SOURCE_DEFAULT, "LogConfig default"))

    def value(self, name: str) -> object:
        return getattr(self, DEFINITIONS[name].attr)

    def to_json(self) -> dict:
        """``{config name: {"value", "source", "detail"}}`` for every config this model knows."""
        out = {}
        for name in DEFINITIONS:
            value = self.value(name)
            src = self.source(name)
            out[name] = {"value": ",".join(value) if name == "cleanup.policy" else value,
                         "source": src.source, "detail": src.detail}
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Mapping]) -> TopicConfig:
        """Inverse of :meth:`to_json` (the Spark side ships configs as JSON)."""
        values: dict[str, object] = {}
        prov = []
        for name, entry in obj.items():
            d = DEFINITIONS.get(name)
            if d is None:
                continue
            raw = entry["value"]
            values[d.attr] = d.parse(str(raw).lower() if isinstance(raw, bool) else str(raw))
            if entry.get("source", SOURCE_DEFAULT) != SOURCE_DEFAULT:
                prov.append((name, ConfigValue(entry["source"], entry.get("detail", ""))))
        return cls(**values, provenance=tuple(prov))


def parse_value(name: str, text: str) -> object:
    """Parse ``text`` as config ``name``; a ValueError says what is wrong with it."""
    d = DEFINITIONS.get(name)
    if d is None:
        raise ValueError(f"unknown config {name!r} (known: {', '.join(DEFINITIONS)})")
    try:
        return d.parse(text)
    except ValueError as e:
        raise ValueError(f"{name}={text!r}: {e}") from None


# --------------------------------------------------------------------- the --config file


@dataclass(frozen=True, slots=True)
class _Entry:
    value: str
    detail: str


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A parsed ``--config`` file: lines outside any section apply to every topic; sections
    under ``... configs for topic X are:`` apply to X; broker sections give broker-level
    (``log.*``) settings that stand behind every topic's own."""

    path: str
    common: Mapping[str, _Entry]
    topics: Mapping[str, Mapping[str, _Entry]]
    broker: Mapping[str, _Entry]

    def lookup(self, topic: str, name: str) -> tuple[object, str] | None:
        """The value for ``name`` as the broker would resolve it from this file, with a
        detail string, or None when the file does not set it."""
        d = DEFINITIONS[name]
        section = self.topics.get(topic, {})
        for table in (section, self.common):
            if name in table:
                return _parse_entry(self.path, name, table[name], 1)
        for synonym, factor in d.synonyms:
            for table in (section, self.common, self.broker):
                if synonym in table:
                    return _parse_entry(self.path, name, table[synonym], factor, synonym)
        return None


def _parse_entry(path: str, name: str, entry: _Entry, factor: int,
                 synonym: str | None = None) -> tuple[object, str]:
    text = entry.value
    try:
        value = parse_value(name, text)
        if factor != 1:
            value = int(text.strip()) * factor
    except ValueError as e:
        raise SegtoolsError(f"{entry.detail}: {synonym or name}: {e}", path=path) from None
    detail = entry.detail + (f" via {synonym}={text}" if synonym else "")
    return value, detail


_HEADER = re.compile(r"^(?:Dynamic|All|Static)?\s*configs for (topic|broker|broker-logger)"
                     r"\s+(\S*)\s+are:\s*$", re.IGNORECASE)
_DEFAULT_HEADER = re.compile(r"^Default configs for brokers? in the cluster are:\s*$",
                             re.IGNORECASE)
_DESCRIBE_TAIL = re.compile(r"\s+sensitive=(true|false)(\s+synonyms=\{(.*)\})?\s*$")


def parse_config_text(text: str, path: str) -> ConfigFile:
    """Read Java-properties lines and ``kafka-configs --describe`` output (both shapes).

    A described value is everything between ``key=`` and `` sensitive=``, so a list such as
    ``cleanup.policy=compact,delete`` survives; the first synonym's source
    (``DYNAMIC_TOPIC_CONFIG``, ``STATIC_BROKER_CONFIG``, ``DEFAULT_CONFIG`` ...) is kept as
    the detail. Sensitive entries (``value=null sensitive=true``) are skipped.
    """
    common: dict[str, _Entry] = {}
    topics: dict[str, dict[str, _Entry]] = {}
    broker: dict[str, _Entry] = {}
    current: dict[str, _Entry] = common
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        header = _HEADER.match(line)
        if header:
            kind, entity = header.group(1).lower(), header.group(2)
            current = topics.setdefault(entity, {}) if kind == "topic" else broker
            continue
        if _DEFAULT_HEADER.match(line):
            current = broker
            continue
        m = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)$", line) or re.match(r"(\S+)\s+(.*)$", line)
        if not m:
            raise SegtoolsError(f"line {lineno}: not key=value: {line[:60]!r}", path=path)
        key, value = m.group(1), m.group(2).strip()
        detail = f"{path}:{lineno}"
        tail = _DESCRIBE_TAIL.search(value)
        if tail:
            value = value[:tail.start()]
            if tail.group(1) == "true":
                continue
            synonyms = (tail.group(3) or "").strip()
            if synonyms:
                detail += " " + synonyms.split(":", 1)[0]
        current[key] = _Entry(value, detail)
    return ConfigFile(path, common, topics, broker)


# --------------------------------------------------------------------- resolution

#: The configs a broker gives the topics it creates itself, where they differ from
#: ``LogConfig``'s defaults: ``GroupCoordinatorService.groupMetadataTopicConfigs``
#: (``offsets.topic.segment.bytes``, 100 MiB), ``TransactionStateManager``'s topic configs
#: (``transaction.state.log.segment.bytes``, 100 MiB), and the tiered-storage metadata topic
#: (``remote.log.metadata.topic.retention.ms`` -1: kept forever).
INTERNAL_TOPIC_CONFIGS: Mapping[str, Mapping[str, str]] = {
    "__consumer_offsets": {"cleanup.policy": "compact", "segment.bytes": "104857600"},
    "__transaction_state": {"cleanup.policy": "compact", "segment.bytes": "104857600"},
    "__remote_log_metadata": {"cleanup.policy": "delete", "retention.ms": "-1"},
}

#: Topics the broker always compacts: their offsets have gaps and their time indexes name
#: removed offsets as a matter of course.
ALWAYS_COMPACTED = frozenset(t for t, c in INTERNAL_TOPIC_CONFIGS.items()
                             if "compact" in c["cleanup.policy"])


def resolve(topic: str, *, flags: Mapping[str, str] | None = None,
            config_file: ConfigFile | None = None,
            metadata: Mapping[str, Mapping[str, str]] | None = None,
            metadata_detail: str = "") -> TopicConfig:
    """The effective config of ``topic``: flags > config file > cluster metadata > defaults.

    ``flags`` map config names to text (already validated by :func:`parse_value`);
    ``metadata`` is what ``cluster_metadata.topic_configs`` returned (topic -> name -> value).
    """
    values: dict[str, object] = {}
    prov: list[tuple[str, ConfigValue]] = []
    topic_meta = (metadata or {}).get(topic, {})
    for name, d in DEFINITIONS.items():
        if flags and name in flags:
            values[d.attr] = parse_value(name, flags[name])
            prov.append((name, ConfigValue(SOURCE_FLAG, f"--{name.replace('.', '-')}")))
            continue
        found = config_file.lookup(topic, name) if config_file else None
        if found is not None:
            values[d.attr] = found[0]
            prov.append((name, ConfigValue(SOURCE_CONFIG_FILE, found[1])))
            continue
        if name in topic_meta and topic_meta[name] is not None:
            try:
                values[d.attr] = parse_value(name, topic_meta[name])
            except ValueError as e:
                raise SegtoolsError(f"topic {topic}: {e}", path=metadata_detail or None) \
                    from None
            prov.append((name, ConfigValue(SOURCE_CLUSTER_METADATA,
                                           f"ConfigRecord in {metadata_detail}".strip())))
            continue
        internal = INTERNAL_TOPIC_CONFIGS.get(topic, {})
        if name in internal and internal[name] is not None:
            values[d.attr] = parse_value(name, internal[name])
            prov.append((name, ConfigValue(SOURCE_INTERNAL,
                                           f"as the broker creates {topic}")))
    return TopicConfig(**values, provenance=tuple(prov))
