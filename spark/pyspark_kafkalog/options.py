"""The reader's options: Spark's strings in, one frozen value out.

Spark hands a Python source its options as a case-insensitive map of strings
(``.option("minPartitions", 4)`` arrives as ``{"minpartitions": "4"}``), so every option is
parsed here, once, into :class:`ReadOptions`, and a bad value fails at ``load()`` with a message
that names the option. Names follow Spark's own Kafka source where the meaning is the same
(``startingOffsets``, ``endingOffsets``, ``startingOffsetsByTimestamp``, ``startingTimestamp``,
``includeHeaders``, ``minPartitions``; ``KafkaSourceProvider`` validates them the same way: no
``latest`` start and no ``earliest`` end for a batch query), the rest in the same camelCase.

Options named ``storage.<name>`` configure where the paths live (an object store's endpoint,
region, credentials: the library's storage options, docs/locations.md). They are split here:
the public ones travel with every task, the secret ones (credentials) only inside the reader,
so nothing secret is in a task, a plan or a ``repr``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.fetch.columns import Level
from segtools.fetch.plan import EARLIEST, LATEST, PARTITION_STATES, PartitionMap, Selection
from segtools.storage.gentle import PageCacheMode
from segtools.storage.throttle import parse_rate

__all__ = ["EARLIEST", "LATEST", "Level", "OptionError", "ReadOptions", "parse_options"]

DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024  # spark.sql.files.maxPartitionBytes' default

#: ``.option("storage.endpoint_url", ...)``: the prefix of the storage options.
STORAGE_PREFIX = "storage."
#: Storage option names that hold credentials (access keys, secrets, tokens, passwords, SAS
#: and account keys, whatever the store calls them): never in a task nor printed.
SECRET_NAME = re.compile(r"key|secret|token|password|credential|sas", re.IGNORECASE)
#: Storage options that are numbers (the CLI's ``--storage-option`` converts the same ones).
_INT_STORAGE_OPTIONS = ("tmp_limit", "concurrency", "block_size", "max_attempts")


class OptionError(ValueError):
    """An option value the source cannot use; the message names the option."""


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Every option, parsed. Plain data: it is pickled to the planner and the executors."""

    paths: tuple[str, ...]
    level: Level = Level.RECORDS
    topics: tuple[str, ...] = ("*",)
    partition_states: tuple[str, ...] = ("live",)
    starting_offsets: PartitionMap = field(default_factory=dict)
    ending_offsets: PartitionMap = field(default_factory=dict)
    starting_timestamps: PartitionMap = field(default_factory=dict)
    ending_timestamps: PartitionMap = field(default_factory=dict)
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    include_headers: bool = False
    include_control: bool = False
    read_committed: bool = False
    fail_on_corruption: bool = False
    verify_crc: bool = True
    min_partitions: int | None = None
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    pushdown: bool = False
    max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT
    storage_options: Mapping[str, Any] = field(default_factory=dict)  # public ones only
    storage_secrets: Mapping[str, Any] = field(default_factory=dict, repr=False)
    remote_store: str | None = None  # a LocalTieredStorage dir: the remote tier too
    #: On a broker's host (docs/robustness.md): None lets the lock decide, as the CLI does.
    page_cache: PageCacheMode | None = None
    max_read_rate: int | None = None  # bytes per second, per reading task

    @property
    def all_storage_options(self) -> dict[str, Any] | None:
        """What the driver opens the stores with (None: none given, the store's own chain)."""
        merged = {**self.storage_options, **self.storage_secrets}
        return merged or None

    def selection(self) -> Selection:
        """What to read, in the library's terms (the Python API takes the same)."""
        return Selection(
            paths=self.paths, level=self.level, topics=self.topics,
            partition_states=self.partition_states, starting_offsets=self.starting_offsets,
            ending_offsets=self.ending_offsets, starting_timestamps=self.starting_timestamps,
            ending_timestamps=self.ending_timestamps,
            starting_timestamp=self.starting_timestamp, ending_timestamp=self.ending_timestamp,
            include_control=self.include_control, read_committed=self.read_committed,
            verify_crc=self.verify_crc, max_decompressed_bytes=self.max_decompressed_bytes,
            storage_options=self.all_storage_options, remote_store=self.remote_store)


def parse_options(options: Mapping[str, str]) -> ReadOptions:
    """Parse Spark's option map (keys in any case) into :class:`ReadOptions`."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    known = {name.lower() for name in OPTION_NAMES}
    unknown = sorted(k for k in opts if k not in known and not k.startswith(STORAGE_PREFIX))
    if unknown:
        raise OptionError(f"kafkalog: unknown option(s) {', '.join(unknown)}; known options: "
                          f"{', '.join(OPTION_NAMES)}")
    level = _choice(opts, "level", [lv.value for lv in Level], Level.RECORDS.value)
    storage, secrets = _storage(opts)
    starting = _offsets(opts, "startingOffsets", default="earliest")
    ending = _offsets(opts, "endingOffsets", default="latest")
    return ReadOptions(
        paths=_paths(opts),
        level=Level(level),
        topics=_list(opts, "topics") or ("*",),
        partition_states=_states(opts),
        starting_offsets=starting,
        ending_offsets=ending,
        starting_timestamps=_timestamp_map(opts, "startingOffsetsByTimestamp"),
        ending_timestamps=_timestamp_map(opts, "endingOffsetsByTimestamp"),
        starting_timestamp=_int(opts, "startingTimestamp", minimum=0),
        ending_timestamp=_int(opts, "endingTimestamp", minimum=0),
        include_headers=_bool(opts, "includeHeaders", False),
        include_control=_bool(opts, "includeControl", False),
        read_committed=_bool(opts, "readCommitted", False),
        fail_on_corruption=_bool(opts, "failOnCorruption", False),
        verify_crc=_bool(opts, "verifyCrc", True),
        min_partitions=_int(opts, "minPartitions", minimum=1),
        max_partition_bytes=_int(opts, "maxPartitionBytes", minimum=1)
        or DEFAULT_MAX_PARTITION_BYTES,
        pushdown=_bool(opts, "pushdown", False),
        max_decompressed_bytes=_int(opts, "maxDecompressedBytes", minimum=1)
        or DEFAULT_DECOMPRESS_LIMIT,
        storage_options=storage,
        storage_secrets=secrets,
        remote_store=opts.get("remotestore") or None,
        page_cache=_page_cache(opts),
        max_read_rate=_rate(opts, "maxReadRate"),
    )


#: Every option the source accepts (documented in docs/spark.md).
OPTION_NAMES = (
    "path", "paths", "level", "topics", "partitionStates", "startingOffsets", "endingOffsets",
    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp", "startingTimestamp",
    "endingTimestamp", "includeHeaders", "includeControl", "readCommitted", "failOnCorruption",
    "verifyCrc", "minPartitions", "maxPartitionBytes", "pushdown", "maxDecompressedBytes",
    "remoteStore", "pageCache", "maxReadRate",
)


def _page_cache(opts: dict[str, str]) -> PageCacheMode | None:
    if "pagecache" not in opts:
        return None
    return PageCacheMode(_choice(opts, "pageCache", [m.value for m in PageCacheMode], ""))


def _rate(opts: dict[str, str], name: str) -> int | None:
    raw = opts.get(name.lower())
    if raw is None or raw.strip() == "":
        return None
    try:
        return parse_rate(raw)
    except ValueError as e:
        raise OptionError(f"kafkalog: option {name}: {e}") from None


def _paths(opts: dict[str, str]) -> tuple[str, ...]:
    """``load(p)`` gives ``path``; ``load([p1, p2])`` gives ``paths`` as a JSON list."""
    paths: list[str] = []
    if "paths" in opts:
        try:
            value = json.loads(opts["paths"])
        except json.JSONDecodeError:
            value = [p.strip() for p in opts["paths"].split(",")]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise OptionError("kafkalog: option paths must be a JSON list of strings")
        paths.extend(value)
    if opts.get("path"):
        paths.append(opts["path"])
    paths = [p for p in paths if p]
    for p in paths:  # a URI's user part (s3://KEY:SECRET@bucket) would travel in every plan
        scheme, sep, rest = p.partition("://")
        if sep and "@" in rest.split("/", 1)[0]:
            raise OptionError(f"kafkalog: a {scheme}:// path must not hold credentials; give "
                              "them as storage.access_key and storage.secret_key (or let the "
                              "store's standard chain find them)")
    if not paths:
        raise OptionError("kafkalog: no path given; use .load(path) or .load([path, ...]) "
                          "with log dirs, partition dirs or .log segment files")
    return tuple(dict.fromkeys(paths))


def _storage(opts: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``storage.<name>`` options: (public, secret). Spark lower-cases option names, which is
    the spelling of every store's options (``endpoint_url``, ``secret_key``)."""
    public: dict[str, Any] = {}
    secret: dict[str, Any] = {}
    for key, raw in opts.items():
        if not key.startswith(STORAGE_PREFIX):
            continue
        name = key[len(STORAGE_PREFIX):]
        if not name:
            raise OptionError("kafkalog: option storage. needs a name, e.g. "
                              "storage.endpoint_url")
        value: Any = raw
        if name in _INT_STORAGE_OPTIONS:
            value = _int(opts, key, minimum=1)
        (secret if SECRET_NAME.search(name) else public)[name] = value
    return public, secret


def _bool(opts: dict[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise OptionError(f"kafkalog: option {name} must be true or false, not {raw!r}")


def _int(opts: dict[str, str], name: str, *, minimum: int) -> int | None:
    raw = opts.get(name.lower())
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise OptionError(f"kafkalog: option {name} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise OptionError(f"kafkalog: option {name} must be >= {minimum}, not {value}")
    return value


def _choice(opts: dict[str, str], name: str, choices: list[str], default: str) -> str:
    value = opts.get(name.lower(), default).strip().lower()
    if value not in choices:
        raise OptionError(f"kafkalog: option {name} must be one of {', '.join(choices)}, "
                          f"not {value!r}")
    return value


def _list(opts: dict[str, str], name: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in opts.get(name.lower(), "").split(",") if p.strip())


def _states(opts: dict[str, str]) -> tuple[str, ...]:
    states = _list(opts, "partitionStates") or ("live",)
    if "all" in states:
        return PARTITION_STATES
    bad = [s for s in states if s not in PARTITION_STATES]
    if bad:
        raise OptionError(f"kafkalog: option partitionStates: unknown state(s) {', '.join(bad)}; "
                          f"use all or a list of {', '.join(PARTITION_STATES)}")
    return states


def _partition_map(text: str, name: str) -> dict[str, dict[int, int]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise OptionError(f"kafkalog: option {name} is not valid JSON ({e.msg}); expected "
                          f'e.g. {{"topic": {{"0": 23, "1": -2}}}}') from None
    if not isinstance(value, dict):
        raise OptionError(f"kafkalog: option {name} must be a JSON object of topics")
    out: dict[str, dict[int, int]] = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            raise OptionError(f"kafkalog: option {name}: topic {topic!r} must map partition "
                              f"numbers to numbers")
        for part, number in parts.items():
            try:
                p = int(part)
            except ValueError:
                raise OptionError(f"kafkalog: option {name}: partition {part!r} of topic "
                                  f"{topic!r} is not a number") from None
            if not isinstance(number, int) or isinstance(number, bool):
                raise OptionError(f"kafkalog: option {name}: {topic}-{p} must map to an "
                                  f"integer, not {number!r}")
            out.setdefault(topic, {})[p] = number
    return out


def _offsets(opts: dict[str, str], name: str, *, default: str) -> dict[str, dict[int, int]]:
    """``earliest`` / ``latest`` or the JSON map; ``{}`` means "no bound from this option".

    A batch query may not start at ``latest`` nor end at ``earliest``, in Spark's Kafka source
    (``KafkaSourceProvider.validateBatchOptions``) as here.
    """
    raw = opts.get(name.lower(), default).strip()
    starting = name == "startingOffsets"
    forbidden_word, forbidden_number = ("latest", LATEST) if starting else ("earliest", EARLIEST)
    if raw.lower() in ("earliest", "latest"):
        if raw.lower() == forbidden_word:
            raise OptionError(f"kafkalog: option {name}={forbidden_word} is not allowed for a "
                              f"batch read (as in Spark's Kafka source)")
        return {}
    parsed = _partition_map(raw, name)
    for topic, parts in parsed.items():
        for part, offset in parts.items():
            if offset == forbidden_number:
                raise OptionError(f"kafkalog: option {name}: {topic}-{part} = {offset} "
                                  f"({forbidden_word}) is not allowed for a batch read")
            if offset < EARLIEST:
                raise OptionError(f"kafkalog: option {name}: {topic}-{part} = {offset} is not "
                                  f"an offset, -2 (earliest) or -1 (latest)")
    return parsed


def _timestamp_map(opts: dict[str, str], name: str) -> dict[str, dict[int, int]]:
    raw = opts.get(name.lower())
    if raw is None:
        return {}
    parsed = _partition_map(raw, name)
    for topic, parts in parsed.items():
        for part, ts in parts.items():
            if ts < 0:
                raise OptionError(f"kafkalog: option {name}: {topic}-{part} timestamp {ts} is "
                                  f"negative")
    return parsed
