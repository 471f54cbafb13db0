"""Seed inputs for every target, cut from the Kafka-written fixtures.

A fuzzer that starts from real batches (every codec, v0/v1 wrappers, control batches, real
indexes and snapshots) reaches the deep paths in seconds instead of hours. Seeds are made on
demand into ``.cache/fuzz/seeds/<key>/<target>/`` (not committed: the fixtures are), once for
each state of what they are cut from (:func:`sources_key`): cutting them runs every fixture
batch through the decoders, seconds that every test run would otherwise spend again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from segtools.codecs import Compression, decompress
from segtools.decode.source import BufferSource
from segtools.decode.walk import table as walk_table
from segtools.formats import batch as v2
from segtools.formats.legacy import LegacyLogEntry
from segtools.model import Batch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logdirs"
#: Seeds above this size slow every mutation down for little new coverage.
MAX_SEED = 16 * 1024


def _logs() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and ".log" in p.name)


def _batches() -> Iterator[tuple[bytes, Batch]]:
    for log in _logs():
        data = log.read_bytes()
        for b in walk_table(BufferSource(data))[0].batches():
            if b.size <= MAX_SEED:
                yield data[b.position:b.end], b


def _v2_payloads() -> Iterator[tuple[bytes, Batch]]:
    for raw, b in _batches():
        if b.magic == 2 and not b.compression.startswith("unknown"):
            body = raw[v2.RECORD_BATCH_OVERHEAD:]
            yield body, b


def _provider_header(*fields: tuple[int, int]) -> bytes:
    return b"".join(v.to_bytes(n, "big") for v, n in fields)


def batch_walk() -> Iterator[bytes]:
    for raw, _ in _batches():
        yield b"\x00" + raw
    for log in _logs():
        data = log.read_bytes()
        if len(data) <= MAX_SEED:
            yield b"\x01" + data


def v2_records() -> Iterator[bytes]:
    names = ("none", "gzip", "snappy", "lz4", "zstd")
    for body, b in _v2_payloads():
        codec = Compression[b.compression.upper()]
        try:
            payload = decompress(codec, body)
        except Exception:
            continue
        lat = b.timestamp_type == "LogAppendTime"
        yield _provider_header((names.index(codec.label), 1), (0, 1), (b.count % 256, 1),
                               (lat, 1), (b.base_offset << 1, 8),
                               (max(b.base_timestamp, 0) << 1, 8)) + payload


def legacy() -> Iterator[bytes]:
    order = ("gzip", "snappy", "lz4")
    for raw, b in _batches():
        if b.magic < 2:
            yield b"\x00" + raw
            if b.compression in order:
                message = LegacyLogEntry.parse(raw).message
                inner = decompress(Compression[b.compression.upper()], message.value,
                                   magic=b.magic)
                yield bytes([1, b.magic, order.index(b.compression), 0, 0, 0, 0, 0]) + inner


def codecs() -> Iterator[bytes]:
    order = ("gzip", "snappy", "lz4", "zstd")
    for body, b in _v2_payloads():
        if b.compression in order:
            yield bytes([order.index(b.compression) | (2 << 2), 0xFF, 0xFF]) + body


def _index_files(suffix: str) -> Iterator[bytes]:
    for path in sorted(FIXTURES.rglob(f"*{suffix}")):
        data = path.read_bytes().rstrip(b"\0")[:MAX_SEED]
        base = int(path.name.split(".")[0])
        yield base.to_bytes(4, "big") + data


def offset_index() -> Iterator[bytes]:
    for seed in _index_files(".index"):
        yield seed[:4] + (100000).to_bytes(4, "big") + b"\x01" + bytes(24) + seed[4:]


def time_index() -> Iterator[bytes]:
    for seed in _index_files(".timeindex"):
        yield seed[:4] + bytes(24) + seed[4:]


def txn_index() -> Iterator[bytes]:
    for seed in _index_files(".txnindex"):
        yield seed[:4] + bytes(16) + seed[4:]


def seek() -> Iterator[bytes]:
    for path in sorted(FIXTURES.glob("sample/*/*.index"))[:8]:
        data = path.read_bytes().rstrip(b"\0")[:1024]
        yield b"\x00\x00\x00\x00\x05\x00" + len(data).to_bytes(2, "big") + data


def snapshot() -> Iterator[bytes]:
    for path in sorted(FIXTURES.rglob("*.snapshot")):
        yield path.read_bytes()[:MAX_SEED]


def text_files() -> Iterator[bytes]:
    names = ("checkpoint", "partition.metadata", "meta.properties", ".kafka_cleanshutdown")
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and (path.name.endswith(names) or path.name in names):
            yield path.read_bytes()[:MAX_SEED]


def dir_names() -> Iterator[bytes]:
    for path in sorted(FIXTURES.glob("*/*")):
        if path.is_dir():
            files = [p.name.encode() for p in sorted(path.iterdir())][:3]
            name = path.name.encode()
            yield (bytes([len(name), len(files)]) + name
                   + b"".join(bytes([len(f)]) + f for f in files))


def internal() -> Iterator[bytes]:
    for which in range(6):
        yield bytes([which, 0, 4]) + b"\x00\x01\x00\x02ab\x00\x03\x00\x00\x00\x00"


def internal_programs() -> Iterator[bytes]:
    """Every record of the internal-topic fixtures, framed for its family (0 offsets, 1
    transaction state, 2 metadata): family byte, key length (bit 15: a null value), key, value."""
    from segtools.analysis.partition_log import iter_records
    from segtools.storage.partition import load_partition_dir

    families = {"__consumer_offsets": 0, "__transaction_state": 1, "__cluster_metadata": 2}
    for pdir in sorted((FIXTURES / "forensics").iterdir()):
        which = families.get(pdir.name.rsplit("-", 1)[0])
        if which is None or not pdir.is_dir():
            continue
        for lr in iter_records(load_partition_dir(pdir), []):
            if lr.batch.is_control:
                continue
            key, value = lr.record.key or b"", lr.record.value
            split = len(key) | (0x8000 if value is None else 0)
            yield bytes([which]) + split.to_bytes(2, "big") + key + (value or b"")


def cli_dump() -> Iterator[bytes]:
    for log in _logs():
        data = log.read_bytes()
        if len(data) <= 4096:
            yield b"\x00" + data


def payloads() -> Iterator[bytes]:
    """The payloads fixture's framed values, as :func:`fuzz.targets.payloads` reads them: a
    head byte naming the schema id (high bit: framed), then the bytes after the 5-byte header."""
    from fuzz.targets import PAYLOAD_IDS

    for line in (ROOT / "fixtures" / "payloads" / "records.tsv").read_text().splitlines():
        fields = line.split("\t")
        if line.startswith("#") or fields[0] == "_schemas" or fields[5] == "-":
            continue
        value = bytes.fromhex(fields[5])
        schema_id = int.from_bytes(value[1:5], "big") if len(value) >= 5 and value[0] == 0 \
            else None
        if schema_id in PAYLOAD_IDS:
            yield bytes([0x80 | PAYLOAD_IDS.index(schema_id)]) + value[5:]
        else:
            yield b"\x00" + value


SEEDS = {name: fn for name, fn in globals().items()
         if callable(fn) and not name.startswith("_") and fn.__module__ == __name__
         and name not in ("write_seeds", "sources_key", "fixture_seeds")}


def write_seeds(target: str, directory: Path) -> int:
    """Write ``target``'s seeds into ``directory`` (content-addressed); returns how many."""
    directory.mkdir(parents=True, exist_ok=True)
    n = 0
    for seed in SEEDS[target]():
        (directory / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        n += 1
    return n


#: What the seeds are cut from (the fixtures) and with (this module, the targets' framing, and
#: the segtools readers that walk the fixtures' batches).
_SOURCES = (ROOT / "fixtures" / "logdirs", ROOT / "fixtures" / "payloads", ROOT / "fuzz",
            ROOT / "segtools")
_SOURCE_SUFFIXES = (".py", ".pyx", ".pxd", ".h")


def sources_key() -> str:
    """A digest of every input of the seeds: each fixture file's name and bytes (the
    ``dir_names`` seeds are names), and the source of the code that cuts them. Any change to
    one makes new seeds; nothing else does."""
    digest = hashlib.sha256()
    for top in _SOURCES:
        code = top.name in ("fuzz", "segtools")
        for path in sorted(top.rglob("*")):
            if not path.is_file() or (code and path.suffix not in _SOURCE_SUFFIXES):
                continue
            digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:20]


@contextlib.contextmanager
def _cutting(cache: Path) -> Iterator[None]:
    """Held while a set is cut: the suite's two workers (pytest-xdist) and a ``make fuzz``
    beside them find the seeds missing at the same moment, and one cuts while the others
    wait for its set instead of spending the same seconds of CPU on their own."""
    fd = os.open(cache / ".cutting.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def fixture_seeds(cache: Path) -> Path:
    """The directory holding every target's seeds (``<dir>/<target>/``) for the sources as
    they are now: cut on the first call and kept under ``cache``, keyed by
    :func:`sources_key`, by one process at a time (:func:`_cutting`). Written beside and
    renamed into place, so a run never sees half a set; seeds of earlier sources are
    removed."""
    key = sources_key()
    done = cache / key
    if done.is_dir():
        return done
    cache.mkdir(parents=True, exist_ok=True)
    with _cutting(cache):
        if done.is_dir():  # cut by another process while this one waited
            return done
        return _cut(cache, key)


def _cut(cache: Path, key: str) -> Path:
    done = cache / key
    partial = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache))
    try:
        for target in SEEDS:
            write_seeds(target, partial / target)
        partial.rename(done)
    except OSError:
        if not done.is_dir():  # not another run's rename that won the race
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    for stale in cache.iterdir():
        if stale.name != key and not stale.name.startswith("."):
            shutil.rmtree(stale, ignore_errors=True)
    return done
