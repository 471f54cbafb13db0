"""The read selectors, declared once for both faces that take them: the Python API's keyword
arguments and the Spark source's options.

A notebook user passes Python values (``partitions=0``, ``read_committed=False``, a
``datetime``) and sometimes strings copied from elsewhere (``partitions="0"``,
``read_committed="false"``, Spark's JSON offsets); Spark hands a Python source only strings
(``.option("minPartitions", 4)`` arrives as ``"4"``). Each :class:`Selector` below names the
argument in both faces and parses every accepted form into one value, so the two faces accept
the same forms, and an error names the argument as the caller spelled it (``start_offset`` in
Python, ``startingOffsets`` in Spark). Parsing is pure: nothing here looks at the tree, and
this module imports no reader, so the Spark source's options parse without loading the planner
(Spark imports the source in every fresh Python worker that creates it).

Offsets follow Spark's Kafka source (``KafkaSourceProvider.validateBatchOptions``): ``-2`` is
earliest and ``-1`` latest in a map, and a batch read may neither start at latest nor end at
earliest. Times are epoch milliseconds, ISO-8601 text (UTC when it names no zone, as the CLI's
``--at``) or an aware ``datetime``; a naive ``datetime`` is refused, since Python reads it as
local time and Kafka's timestamps are UTC.
"""

from __future__ import annotations

import difflib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import lazy_loader

from segtools.errors import SegtoolsError
from segtools.fetch.columns import Level
from segtools.timestamps import to_millis
from segtools.units import parse_duration

#: The payload decoder (its modes, the formats behind them) loads when something is
#: decoded: a read or a command line without ``--decode`` does not pay for it.
_decoder = lazy_loader.load("segtools.payloads.decoder", suppress_warning=True)

__all__ = [
    "EARLIEST",
    "LATEST",
    "PARTITION_STATES",
    "SELECTORS",
    "ArgumentError",
    "Bound",
    "PartitionMap",
    "Selector",
    "by_field",
    "by_python_name",
    "by_spark_name",
    "unknown_names",
]


#: ``-2`` / ``-1`` in the offset maps, as in Spark's Kafka source (``KafkaOffsetRangeLimit``).
EARLIEST = -2
LATEST = -1

#: Partition directory states a read may include (``PartitionState`` values).
PARTITION_STATES = ("live", "delete", "future", "stray")

#: Per topic, per partition: an offset or a timestamp.
PartitionMap = Mapping[str, Mapping[int, int]]


class ArgumentError(SegtoolsError, ValueError):
    """An argument or option value that cannot be used; the message starts with its name."""


@dataclass(frozen=True, slots=True)
class Bound:
    """An offset or time bound: per topic and partition, and one for every other partition."""

    per_partition: PartitionMap
    every: int | None = None


#: ``(value, name) -> parsed``: ``name`` is the caller's spelling, for the error.
Parser = Callable[[Any, str], Any]


@dataclass(frozen=True, slots=True)
class Selector:
    """One read selector: its Python keyword, its Spark option, how a value is parsed."""

    python: str
    spark: str
    field: str  # the segtools.fetch.plan.Selection field it fills (errors name it)
    parse: Parser
    meaning: str


def _fail(name: str, what: str) -> ArgumentError:
    return ArgumentError(f"{name}: {what}")


def boolean(value: Any, name: str) -> bool:
    """``True``/``False``, or the words Spark options and environment files use."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "1", "yes"):
            return True
        if word in ("false", "0", "no"):
            return False
    raise _fail(name, f"must be true or false, not {value!r}")


def places(values: Iterable[Any], name: str = "paths") -> tuple[str, ...]:
    """The locations a call was given: each a path, a URI or a list of them (as Spark's
    ``load([...])`` takes), ``~`` expanded on local paths; an empty one is refused (it would
    otherwise name the working directory and read whatever is there)."""
    found: list[str] = []
    for value in values:
        many = isinstance(value, list | tuple)
        for item in (value if many else (value,)):
            if not isinstance(item, str | os.PathLike):
                raise _fail(name, f"must be paths or URIs, not {item!r}")
            text = os.fspath(item)
            if not isinstance(text, str) or not text.strip():
                raise _fail(name, f"an empty path names no location, not {item!r}")
            found.append(text if "://" in text else os.path.expanduser(text))
    return tuple(found)


def decode_mode(value: Any, name: str = "decode") -> str | None:
    """A payload decode mode (docs/payloads.md), None for no decoding: ``True``/``"true"``
    (Confluent frames: ``schema``), ``False``/``"false"``/``""``, or a mode of ``dump
    --decode`` (``"auto"``, ``"string:schema"``). One parser for the Python argument and the
    Spark option, so a value copied from one face means the same in the other."""
    if value is None or isinstance(value, bool):
        return "schema" if value else None
    if isinstance(value, str):
        word = value.strip()
        if word.lower() in ("false", "0", "no", ""):
            return None
        mode = "schema" if word.lower() in ("true", "1", "yes") else word
        try:
            _decoder.Modes.parse(mode)
        except ValueError as e:
            raise _fail(name, str(e)) from None
        return mode
    raise _fail(name, f"must be true, false or a decode mode such as 'auto', not {value!r}")


def count(minimum: int) -> Parser:
    """A whole number of at least ``minimum`` (an int, or its digits as text)."""

    def parse(value: Any, name: str) -> int:
        number = _integer(value, name, "a whole number")
        if number < minimum:
            raise _fail(name, f"must be >= {minimum}, not {number}")
        return number

    return parse


def number(minimum: float, *, above: bool = False) -> Parser:
    """A number (int, float or its text) of at least ``minimum`` (more than it: ``above``)."""

    def parse(value: Any, name: str) -> float:
        if isinstance(value, bool):
            raise _fail(name, f"must be a number, not {value!r}")
        try:
            found = float(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            raise _fail(name, f"must be a number, not {value!r}") from None
        if found != found or (found <= minimum if above else found < minimum):
            raise _fail(name, f"must be {'more than' if above else 'at least'} {minimum:g}, "
                              f"not {value!r}")
        return found

    return parse


def duration_ms(value: Any, name: str) -> int:
    """A duration: milliseconds as a number, or text with a unit (``"90s"``, ``"5m"``)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as e:
            raise _fail(name, str(e)) from None
    raise _fail(name, f"must be milliseconds or text such as '5m', not {value!r}")


def _integer(value: Any, name: str, what: str) -> int:
    if isinstance(value, bool):
        raise _fail(name, f"must be {what}, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise _fail(name, f"must be {what}, not {value!r}")


def _items(value: Any, name: str, what: str) -> list[Any]:
    """A list from one value, a comma-separated string (Kafka names hold no commas) or an
    iterable of values."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, int | bool):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, Mapping | bytes):
        return list(value)
    raise _fail(name, f"must be {what}, not {value!r}")


def globs(value: Any, name: str) -> tuple[str, ...]:
    """Topic globs: ``"orders*"``, ``"orders*,payments"`` or a list of them."""
    patterns = _items(value, name, "a topic glob or a list of them")
    for p in patterns:
        if not isinstance(p, str) or not p:
            raise _fail(name, f"must be topic globs (strings), not {p!r}")
    return tuple(patterns) or ("*",)


def partition_numbers(value: Any, name: str) -> tuple[int, ...] | None:
    """``3``, ``"3"``, ``"0,2"`` or a list of numbers; None: every partition."""
    if value is None:
        return None
    numbers = tuple(_integer(p, name, "a partition number or a list of them")
                    for p in _items(value, name, "a partition number or a list of them"))
    negative = [n for n in numbers if n < 0]
    if negative:
        raise _fail(name, f"partition numbers are >= 0, not {negative[0]}")
    return numbers


def states(value: Any, name: str) -> tuple[str, ...]:
    """Partition directory states: ``live``, ``delete``, ``future``, ``stray`` or ``all``."""
    given = tuple(str(s).strip().lower() for s in _items(
        value, name, f"one of {', '.join(PARTITION_STATES)} or all, or a list"))
    if "all" in given:
        return PARTITION_STATES
    bad = [s for s in given if s not in PARTITION_STATES]
    if bad:
        raise _fail(name, f"unknown state {bad[0]!r}; use all or any of "
                          f"{', '.join(PARTITION_STATES)}")
    return given or ("live",)


def level(value: Any, name: str) -> Level:
    """``records``, ``batches`` or ``segments`` (what one row is)."""
    word = value.value if isinstance(value, Level) else str(value).strip().lower()
    try:
        return Level(word)
    except ValueError:
        raise _fail(name, f"must be one of {', '.join(lv.value for lv in Level)}, "
                          f"not {value!r}") from None


#: Epoch ms in this range are 1970-01-12 .. 1973-03-03 as ms, and 2001 .. 5138 as seconds:
#: no Kafka record carries such a time in ms (Kafka began in 2011), so a number there is a
#: time written in seconds, which read as ms would select everything, silently.
SECONDS_LIKE = (1_000_000_000, 100_000_000_000)


def moment(value: Any, name: str) -> int:
    """Epoch ms from epoch ms, ISO-8601 text or an aware ``datetime``."""
    if isinstance(value, datetime) and value.tzinfo is None:
        raise _fail(name, f"{value!r} has no time zone (Python reads it as local time); "
                          "give tzinfo, e.g. datetime(..., tzinfo=UTC), or ISO text")
    if isinstance(value, bool) or not isinstance(value, int | float | str | datetime):
        raise _fail(name, f"must be epoch ms, ISO-8601 or a datetime, not {value!r}")
    try:
        ms = to_millis(value)
    except ValueError:
        raise _fail(name, f"must be epoch ms, ISO-8601 or a datetime, not {value!r}") from None
    if ms < 0:
        raise _fail(name, f"must not be before 1970, not {value!r}")
    if SECONDS_LIKE[0] <= ms < SECONDS_LIKE[1] and not isinstance(value, datetime):
        raise _fail(name, f"{value!r} looks like epoch seconds (as ms it is "
                          f"{datetime.fromtimestamp(ms / 1000, UTC):%Y-%m-%d}); Kafka's "
                          f"timestamps are epoch ms: {ms * 1000}")
    return ms


def moment_or_now(value: Any, name: str = "at") -> int:
    """:func:`moment`, or the wall clock (read once, here) when ``value`` is None: the one
    clock of a call whose ages default to now."""
    return int(time.time() * 1000) if value is None else moment(value, name)


def _partition_map(value: Any, name: str, each: Callable[[Any, str], int]) -> PartitionMap:
    """``{topic: {partition: x}}`` with partitions as numbers or as Spark's JSON keys
    (``"0"``), from a mapping or its JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise _fail(name, f"is not valid JSON ({e.msg}); expected e.g. "
                              '{"topic": {"0": 23, "1": -2}}') from None
    if not isinstance(value, Mapping):
        raise _fail(name, "must map topics to {partition: value}")
    out: dict[str, dict[int, int]] = {}
    for topic, parts in value.items():
        if not isinstance(topic, str):
            raise _fail(name, f"topic {topic!r} is not a topic name")
        if not isinstance(parts, Mapping):
            raise _fail(name, f"topic {topic!r} must map partition numbers to values, "
                              f"not {parts!r}")
        for part, x in parts.items():
            number = _integer(part, f"{name}: topic {topic!r}", "keyed by partition numbers")
            out.setdefault(topic, {})[number] = each(x, f"{name}: {topic}-{number}")
    return out


def _offset(value: Any, name: str) -> int:
    number = _integer(value, name, "an offset (or -2 earliest, -1 latest)")
    if number < EARLIEST:
        raise _fail(name, f"{number} is not an offset, -2 (earliest) or -1 (latest)")
    return number


def _looks_like_map(value: Any) -> bool:
    return isinstance(value, Mapping) or (isinstance(value, str)
                                          and value.lstrip().startswith("{"))


def offsets(starting: bool) -> Parser:
    """A starting (inclusive) or ending (exclusive) offset: ``earliest``/``latest``, one
    offset for every partition, or ``{topic: {partition: offset}}``."""
    forbidden_word, forbidden = ("latest", LATEST) if starting else ("earliest", EARLIEST)

    def parse(value: Any, name: str) -> Bound:
        if value is None:
            return Bound({})
        if isinstance(value, str) and value.strip().lower() in ("earliest", "latest"):
            if value.strip().lower() == forbidden_word:
                raise _fail(name, f"{forbidden_word} is not allowed for a batch read (as in "
                                  "Spark's Kafka source)")
            return Bound({})
        if _looks_like_map(value):
            bound = Bound(_partition_map(value, name, _offset))
            for topic, parts in bound.per_partition.items():
                for part, number in parts.items():
                    if number == forbidden:
                        raise _fail(name, f"{topic}-{part} = {number} ({forbidden_word}) is "
                                          "not allowed for a batch read")
            return bound
        number = _integer(value, name, "an offset, earliest/latest or {topic: {partition: "
                                       "offset}}")
        if number < 0:
            raise _fail(name, f"one offset for every partition must be >= 0, not {number}")
        return Bound({}, number)

    return parse


def times(value: Any, name: str) -> Bound:
    """A time for every partition, or ``{topic: {partition: time}}``."""
    if value is None:
        return Bound({})
    if _looks_like_map(value):
        return Bound(_partition_map(value, name, moment))
    return Bound({}, moment(value, name))


def _path(value: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str | os.PathLike):
        return os.fspath(value)
    raise _fail(name, f"must be a path, not {value!r}")


#: Every selector of a read, in both faces (docs/python-api.md and docs/spark.md list them).
SELECTORS = (
    Selector("level", "level", "level", level, "what one row is"),
    Selector("topics", "topics", "topics", globs, "topic globs"),
    Selector("partitions", "partitions", "partitions", partition_numbers, "partition numbers"),
    Selector("states", "partitionStates", "partition_states", states,
             "partition directory states"),
    Selector("start_offset", "startingOffsets", "starting_offsets", offsets(starting=True),
             "first offset"),
    Selector("end_offset", "endingOffsets", "ending_offsets", offsets(starting=False),
             "offset to stop before"),
    Selector("start_time", "startingTimestamp", "starting_timestamps", times,
             "first record at or after"),
    Selector("end_time", "endingTimestamp", "ending_timestamps", times,
             "stop before the first record at or after"),
    Selector("read_committed", "readCommitted", "read_committed", boolean,
             "hide aborted transactions"),
    Selector("include_control", "includeControl", "include_control", boolean,
             "keep control records"),
    Selector("reveal_sensitive", "revealSensitive", "reveal_sensitive", boolean,
             "__cluster_metadata values with their secrets (docs/security.md)"),
    Selector("include_headers", "includeHeaders", "include_headers", boolean,
             "add the headers column"),
    Selector("verify_crc", "verifyCrc", "verify_crc", boolean, "check each batch's CRC"),
    Selector("max_decompressed_bytes", "maxDecompressedBytes", "max_decompressed_bytes",
             count(1), "cap on one batch's inflated size"),
    Selector("remote_store", "remoteStore", "remote_store", _path,
             "LocalTieredStorage directory"),
)


def by_field(field_name: str) -> Selector | None:
    """The selector filling a :class:`~segtools.fetch.plan.Selection` field."""
    return next((s for s in SELECTORS if s.field == field_name), None)


def by_python_name() -> dict[str, Selector]:
    return {s.python: s for s in SELECTORS}


def by_spark_name() -> dict[str, Selector]:
    """Spark lower-cases option names: the keys are lower case."""
    return {s.spark.lower(): s for s in SELECTORS}


def unknown_names(given: Iterable[str], known: Iterable[str], where: str,
                  hints: Iterable[str] = ()) -> None:
    """Refuse names that are not ``known`` arguments, suggesting the nearest of them or of
    ``hints`` (the caller's other keywords): a typo such as ``topic`` for ``topics``."""
    known = list(known)
    for name in given:
        if name in known:
            continue
        near = difflib.get_close_matches(name, [*known, *hints], n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise ArgumentError(f"{where} got an unexpected argument {name!r}{hint} "
                            f"(selectors: {', '.join(known)})")
