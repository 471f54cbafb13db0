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

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import lazy_loader

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.fetch import arguments
from segtools.fetch.arguments import EARLIEST, LATEST, ArgumentError, PartitionMap
from segtools.fetch.columns import Level
from segtools.sensitive import uri_credentials, without_credentials

if TYPE_CHECKING:
    from segtools.storage.gentle import PageCacheMode

#: The gentle settings' modules (with ``multiprocessing`` and ``ctypes`` behind them) load
#: when ``pageCache`` or ``maxReadRate`` is given: the planner that runs ``schema()`` at
#: ``load()`` parses every option and needs them for nothing else (docs/spark.md, "The
#: first query").
gentle = lazy_loader.load("segtools.storage.gentle", suppress_warning=True)
throttle = lazy_loader.load("segtools.storage.throttle", suppress_warning=True)

__all__ = ["EARLIEST", "LATEST", "Level", "OptionError", "ReadOptions", "parse_options"]

DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024  # spark.sql.files.maxPartitionBytes' default

#: ``.option("storage.endpoint_url", ...)``: the prefix of the storage options.
STORAGE_PREFIX = "storage."
#: Storage option names that hold credentials (access keys, secrets, tokens, passwords, SAS
#: and account keys, whatever the store calls them): never in a task nor printed.
SECRET_NAME = re.compile(r"key|secret|token|password|credential|sas", re.IGNORECASE)


def is_secret_option(name: str, value: Any) -> bool:
    """Whether a storage option holds a credential: by its name, or by a value that is a URI
    with credentials written into it (``storage.endpoint_url=http://KEY:SECRET@minio:9000``,
    a proxy's ``http://user:password@proxy``), which a public option would carry into every
    task and plan."""
    return SECRET_NAME.search(name) is not None \
        or (isinstance(value, str) and uri_credentials(value) is not None)
#: Storage options that are numbers (the CLI's ``--storage-option`` converts the same ones).
_INT_STORAGE_OPTIONS = ("tmp_limit", "concurrency", "block_size", "block_bytes", "seek_bytes",
                        "small_file_bytes", "max_attempts")


class OptionError(ArgumentError):
    """An option value the source cannot use; the message names the option."""


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Every option, parsed. Plain data: it is pickled to the planner and the executors."""

    paths: tuple[str, ...]
    level: Level = Level.RECORDS
    topics: tuple[str, ...] = ("*",)
    partitions: tuple[int, ...] | None = None
    partition_states: tuple[str, ...] = ("live",)
    starting_offsets: PartitionMap = field(default_factory=dict)
    ending_offsets: PartitionMap = field(default_factory=dict)
    starting_offset: int | None = None  # for every partition the maps do not name
    ending_offset: int | None = None
    starting_timestamps: PartitionMap = field(default_factory=dict)
    ending_timestamps: PartitionMap = field(default_factory=dict)
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    include_headers: bool = False
    include_control: bool = False
    read_committed: bool = False
    reveal_sensitive: bool = False  # __cluster_metadata values as stored, secrets included
    fail_on_corruption: bool = False
    verify_crc: bool = True
    min_partitions: int | None = None
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    pushdown: bool = False
    strings: bool = False  # key and value as UTF-8 text in the default schema
    max_decompressed_bytes: int = DEFAULT_DECOMPRESS_LIMIT
    storage_options: Mapping[str, Any] = field(default_factory=dict)  # public ones only
    storage_secrets: Mapping[str, Any] = field(default_factory=dict, repr=False)
    remote_store: str | None = None  # a LocalTieredStorage dir: the remote tier too
    decode: str | None = None  # a payload decode mode (docs/payloads.md); None: no decoding
    schemas: tuple[str, ...] = ()  # where the _schemas topic or schema files are
    schema_registry: str | None = None
    #: On a broker's host (docs/robustness.md): None lets the lock decide, as the CLI does.
    page_cache: PageCacheMode | None = None
    max_read_rate: int | None = None  # bytes per second, per executor (its tasks share it)

    @property
    def all_storage_options(self) -> dict[str, Any] | None:
        """What the driver opens the stores with (None: none given, the store's own chain)."""
        merged = {**self.storage_options, **self.storage_secrets}
        return merged or None


def parse_options(options: Mapping[str, str]) -> ReadOptions:
    """Parse Spark's option map (keys in any case) into :class:`ReadOptions`. The options the
    Python API also takes are parsed by the same selectors (:mod:`segtools.fetch.arguments`),
    so both faces accept the same forms; an error names the Spark option."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    known = {name.lower() for name in OPTION_NAMES}
    unknown = sorted(k for k in opts if k not in known and not k.startswith(STORAGE_PREFIX))
    if unknown:
        near = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f" (did you mean {_spelling(near[0])}?)" if near else ""
        raise OptionError(f"kafkalog: unknown option(s) {', '.join(unknown)}{hint}; known "
                          f"options: {', '.join(OPTION_NAMES)}")
    storage, secrets = _storage(opts)
    starting = _shared(opts, "startingOffsets")
    ending = _shared(opts, "endingOffsets")
    starting_time = _shared(opts, "startingTimestamp")
    ending_time = _shared(opts, "endingTimestamp")
    return ReadOptions(
        paths=_paths(opts),
        level=_shared(opts, "level", Level.RECORDS),
        topics=_shared(opts, "topics", ("*",)),
        partitions=_shared(opts, "partitions"),
        partition_states=_shared(opts, "partitionStates", ("live",)),
        starting_offsets=starting.per_partition,
        ending_offsets=ending.per_partition,
        starting_offset=starting.every,
        ending_offset=ending.every,
        starting_timestamps={**starting_time.per_partition,
                             **_timestamp_map(opts, "startingOffsetsByTimestamp")},
        ending_timestamps={**ending_time.per_partition,
                           **_timestamp_map(opts, "endingOffsetsByTimestamp")},
        starting_timestamp=starting_time.every,
        ending_timestamp=ending_time.every,
        include_headers=_shared(opts, "includeHeaders", False),
        include_control=_shared(opts, "includeControl", False),
        read_committed=_shared(opts, "readCommitted", False),
        reveal_sensitive=_shared(opts, "revealSensitive", False),
        fail_on_corruption=_bool(opts, "failOnCorruption", False),
        verify_crc=_shared(opts, "verifyCrc", True),
        min_partitions=_int(opts, "minPartitions", minimum=1),
        max_partition_bytes=_int(opts, "maxPartitionBytes", minimum=1)
        or DEFAULT_MAX_PARTITION_BYTES,
        pushdown=_bool(opts, "pushdown", False),
        strings=_bool(opts, "strings", False),
        max_decompressed_bytes=_shared(opts, "maxDecompressedBytes", DEFAULT_DECOMPRESS_LIMIT),
        storage_options=storage,
        storage_secrets=secrets,
        remote_store=_shared(opts, "remoteStore"),
        decode=_decode(opts),
        schemas=_list(opts, "schemas"),
        schema_registry=opts.get("schemaregistry") or None,
        page_cache=_page_cache(opts),
        max_read_rate=_rate(opts, "maxReadRate"),
    )


_SHARED = arguments.by_spark_name()


def _shared(opts: dict[str, str], name: str, default: Any = None) -> Any:
    """An option the Python API also takes, through its one parser; absent: ``default``
    (what the parser makes of "no value" when ``default`` is None)."""
    selector = _SHARED[name.lower()]
    raw = opts.get(name.lower())
    if raw is None or (raw.strip() == "" and default is not None):
        return default if default is not None else selector.parse(None, name)
    try:
        return selector.parse(raw, name)
    except arguments.ArgumentError as e:
        raise OptionError(f"kafkalog: option {e}") from None


def _spelling(lower: str) -> str:
    return next(n for n in OPTION_NAMES if n.lower() == lower)


def _decode(opts: Mapping[str, str]) -> str | None:
    """``decode``: ``true`` (Confluent frames), ``false``, or a mode of ``dump --decode``."""
    try:
        return arguments.decode_mode(opts.get("decode", "false"))
    except arguments.ArgumentError as e:
        raise OptionError(f"kafkalog: {e}") from None


def _list(opts: dict[str, str], name: str) -> tuple[str, ...]:
    """A comma-separated option (``schemas``): its non-empty items, in order."""
    return tuple(p.strip() for p in opts.get(name.lower(), "").split(",") if p.strip())


#: Every option the source accepts (documented in docs/spark.md).
OPTION_NAMES = (
    "path", "paths", "level", "topics", "partitions", "partitionStates", "startingOffsets",
    "endingOffsets",
    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp", "startingTimestamp",
    "endingTimestamp", "includeHeaders", "includeControl", "readCommitted", "failOnCorruption",
    "verifyCrc", "revealSensitive", "minPartitions", "maxPartitionBytes", "pushdown", "strings",
    "maxDecompressedBytes", "remoteStore", "decode", "schemas", "schemaRegistry", "pageCache",
    "maxReadRate",
)


def _page_cache(opts: dict[str, str]) -> PageCacheMode | None:
    """``pageCache``: ``restore`` or ``keep``; absent, the broker's lock decides."""
    if "pagecache" not in opts:
        return None
    value = opts["pagecache"].strip().lower()
    choices = [m.value for m in gentle.PageCacheMode]
    if value not in choices:
        raise OptionError(f"kafkalog: option pageCache must be one of {', '.join(choices)}, "
                          f"not {value!r}")
    return gentle.PageCacheMode(value)


def _rate(opts: dict[str, str], name: str) -> int | None:
    raw = opts.get(name.lower())
    if raw is None or raw.strip() == "":
        return None
    try:
        return throttle.parse_rate(raw)
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
    for p in paths:  # credentials in a URI (KEY:SECRET@, ?secret_key=) travel in every plan
        why = uri_credentials(p)
        if why is not None:
            raise OptionError(f"kafkalog: {without_credentials(p)}: {why}: refused; give "
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
        (secret if is_secret_option(name, value) else public)[name] = value
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


def _timestamp_map(opts: dict[str, str], name: str) -> PartitionMap:
    """Spark's per-partition timestamp options: a JSON map only (``startingTimestamp`` takes
    one time for every partition, or a map too)."""
    raw = opts.get(name.lower())
    if raw is None:
        return {}
    try:
        bound = arguments.times(raw, name)
    except arguments.ArgumentError as e:
        raise OptionError(f"kafkalog: option {e}") from None
    if bound.every is not None:
        raise OptionError(f'kafkalog: option {name} must be a JSON map, e.g. '
                          f'{{"topic": {{"0": 1700000000000}}}}; for every partition use '
                          f'{name.replace("OffsetsBy", "")}')
    return bound.per_partition
