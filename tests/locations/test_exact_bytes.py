"""Bytes read from an object store are exactly the object's bytes, whatever the range sizes.

A reader of an object store stitches its windows from ranges fetched for different reasons
(a small range for a seek, large aligned ranges ahead of a sequential walk). These tests hold
every window, batch and record read through :class:`~segtools.storage.objectstore.RangeSource`
to the bytes of the local file, with range sizes from a few KiB (every window is stitched
from many ranges) to 16 MiB, over the Kafka-written fixtures (``large-values``: batches of
100 KiB to 1 MiB crossing every MiB boundary) and over generated segments.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.decode.chunks import batch_records, decode
from segtools.decode.source import BufferSource
from segtools.decode.walk import walk
from segtools.storage.extents import Extents
from segtools.storage.objectstore import ObjectStoreLocation
from tests.builders import make_batch
from tests.fixtures_manifest import LOGS, log_path
from tests.robustness.commands import run_cli
from tests.robustness.strategies import SEGMENT_SETTINGS, codec

BUCKET = "exact-bytes"
KIB = 1024
MIB = 1024 * KIB
#: (block_bytes, seek_bytes): tiny, mixed, and the largest a user would choose.
SIZES = [(4 * KIB, 4 * KIB), (4 * KIB, 64 * KIB), (64 * KIB, 4 * KIB), (1 * MIB, 1 * MIB),
         (16 * MIB, 16 * MIB)]
LARGE = [e for e in LOGS if e["path"].startswith("logdirs/large-values/")]


# -- the structure itself -------------------------------------------------------------------

def test_extents_never_overlap():
    held: Extents[str] = Extents()
    held.add(0, 10, "a")
    held.add(20, 30, "b")
    assert held.gaps(0, 40) == [(10, 20), (30, 40)]
    assert held.gaps(5, 25) == [(10, 20)]
    for lo, hi in ((0, 1), (5, 15), (9, 21), (25, 35), (0, 40), (3, 3)):
        with pytest.raises(ValueError):
            held.add(lo, hi, "x")
    held.add(10, 20, "c")
    assert [(s, e) for s, e, _ in held] == [(0, 10), (10, 20), (20, 30)]
    assert held.holding(19) == (10, 20, "c") and held.holding(30) is None
    assert held.drop((15, 25)) == ["a"] and held.gaps(0, 30) == [(0, 10)]


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 50)), max_size=40))
def test_extents_hold_each_byte_once(spans):
    """Whatever is asked, in any order: only gaps are added, and each byte is held once."""
    held: Extents[int] = Extents()
    for lo, n in spans:
        for a, b in held.gaps(lo, lo + n):
            held.add(a, b, a)
    owners = np.zeros(300, np.int64)
    for s, e, _ in held:
        owners[s:e] += 1
    assert owners.max(initial=0) <= 1
    covered = {i for lo, n in spans for i in range(lo, lo + n)}
    assert set(np.flatnonzero(owners)) == covered


# -- the store ------------------------------------------------------------------------------

@pytest.fixture
def store(object_store):
    object_store.create_bucket(BUCKET)
    return object_store


def _location(store, block: int, seek: int) -> ObjectStoreLocation:
    return ObjectStoreLocation(store.uri(BUCKET), {**store.options, "block_bytes": block,
                                                   "seek_bytes": seek, "small_file_bytes": 0})


def _put(store, name: str, data: bytes) -> str:
    store.put(BUCKET, name, data)
    return "/" + name


def _source(loc: ObjectStoreLocation, key: str):
    loc.ensure_listed(key)
    return loc.source(key, loc.entries[key])


def _walk_windows(source, data: bytes, start: int, stride: int) -> None:
    """The walk's way: windows without ``keep``, each from where the last one's bytes end."""
    pos = start
    while pos < len(data):
        array, base, avail = source.window(pos, pos + stride)
        assert avail == min(pos + stride, len(data)), (pos, avail)
        assert bytes(array[pos - base:avail - base]) == data[pos:avail], pos
        pos = avail


@pytest.mark.parametrize("entry", LARGE, ids=[e["case"] + ":" + e["path"][-24:] for e in LARGE])
def test_default_sizes_whole_object(store, entry):
    """The reported bug: a walk from byte 0 of a segment larger than one seek range, with the
    sizes a user gets (on the old reader the second MiB repeated the first)."""
    data = log_path(entry).read_bytes()
    loc = ObjectStoreLocation(store.uri(BUCKET), store.options)
    try:
        source = _source(loc, _put(store, "default/" + entry["path"].rsplit("/", 1)[1], data))
        _walk_windows(source, data, 0, source.stride)
        source.close()
    finally:
        loc.close()


def _table_and_records(source) -> tuple[list, list]:
    batches, records = [], []
    for chunk in walk(source, verify_crc=True):
        batches.extend(chunk.table.batches())
        records.extend((br.batch, br.records, br.finding)
                       for br in batch_records(decode(source, chunk.table)))
    return batches, records


@pytest.mark.parametrize(("block", "seek"), SIZES)
def test_fixture_segments_batches_and_records(store, block, seek):
    """Every batch and record of every Kafka-written fixture segment, read from the store
    with these range sizes, is the one read from the bytes in hand."""
    loc = _location(store, block, seek)
    try:
        for i, entry in enumerate(LOGS):
            data = log_path(entry).read_bytes()
            if not data:
                continue
            # named by number: the hostile tree's names hold terminal escapes, which not
            # every store's client takes (pyarrow's Azure writer aborts on Azurite's answer)
            key = _put(store, f"fixtures/{i}.log", data)
            source = _source(loc, key)
            try:
                assert _table_and_records(source) == _table_and_records(BufferSource(data)), \
                    entry["path"]
            finally:
                source.close()
    finally:
        loc.close()


# -- generated segments, random sizes and access patterns ------------------------------------

@st.composite
def large_segments(draw) -> bytes:
    """Batches whose values are 1 byte to 3 MiB, compressed or not: batch edges anywhere."""
    out = b""
    for offset in range(draw(st.integers(1, 6))):
        size = draw(st.one_of(st.integers(1, 300), st.integers(1, 3 * MIB)))
        seed = draw(st.integers(0, 2**32 - 1))
        value = np.random.default_rng(seed).integers(0, 256 if draw(st.booleans()) else 4,
                                                     size, dtype=np.uint8).tobytes()
        records = [{"timestamp_delta": 0, "offset_delta": 0, "key": b"k", "value": value,
                    "headers": []}]
        out += make_batch(records, base_offset=offset, codec=draw(codec))
    return out


#: How a reader moves through the object: (kind, fraction of the size) steps.
access = st.lists(st.tuples(st.sampled_from(["walk", "seek", "peek"]), st.floats(0, 1)),
                  min_size=1, max_size=6)


@settings(SEGMENT_SETTINGS, max_examples=40)
@given(data=large_segments(), block=st.integers(4 * KIB, 16 * MIB),
       seek=st.integers(4 * KIB, 16 * MIB), stride=st.integers(97, 2 * MIB), steps=access)
def test_random_sizes_and_access(store, data, block, seek, stride, steps):
    """A seek then a walk, a walk from byte 0, peeks with ``keep`` (a second reader, or an
    index lookup) between the walk's windows: each window is the object's bytes."""
    loc = _location(store, block, seek)
    try:
        source = _source(loc, _put(store, "generated/segment.log", data))
        source.stride = stride
        for kind, where in steps:
            pos = int(where * (len(data) - 1))
            if kind == "peek":
                hi = min(len(data), pos + max(1, stride // 3))
                array, base, avail = source.window(pos, hi, keep=True)
                assert bytes(array[pos - base:avail - base]) == data[pos:avail] and avail == hi
                continue
            _walk_windows(source, data, 0 if kind == "walk" else pos, stride)
        want = _table_and_records(BufferSource(data))
        assert _table_and_records(source) == want
        source.close()
    finally:
        loc.close()


# -- through the commands -------------------------------------------------------------------

@pytest.mark.parametrize("sizes", [None, (4 * KIB, 4 * KIB), (16 * MIB, 4 * KIB)])
def test_commands_on_large_values_same_as_local(copies, sizes):
    """``verify``, ``scan --crc`` and ``dump --deep`` of the large-values tree from the store
    print what they print from local disk (the issue's report: CRC mismatches and a
    truncated tail that were not in the object)."""
    tree = str(copies.local.root / "large-values")
    flags = [] if sizes is None else [f"--storage-option=block_bytes={sizes[0]}",
                                      f"--storage-option=seek_bytes={sizes[1]}",
                                      "--storage-option=small_file_bytes=0"]
    for argv in (["verify", "--format", "jsonl", tree],
                 ["scan", "-q", "--crc", "--format", "jsonl", tree],
                 ["dump", "--deep", "--print-data", "--format", "jsonl",
                  *sorted(str(p) for p in (copies.local.root / "large-values").rglob("*.log"))]):
        local, remote = run_cli(argv), run_cli(copies.remote_argv(argv) + flags)
        assert local.code == remote.code == 0, remote.stderr
        assert copies.normalise(remote.stdout.decode(), True) == local.stdout.decode(), argv
