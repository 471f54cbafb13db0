"""Internal-topic partitions at production size, made from the Kafka-written fixtures.

Every segment of a partition of ``fixtures/logdirs/forensics`` is read batch by batch and the
whole partition is repeated: each copy's batches get the next base offsets and timestamps moved
on by the fixture's time span, and their CRC-32C is recomputed (it covers the timestamps), so
the copies are valid Kafka bytes (``segtools verify`` reads them without a finding). Two shapes:

- ``fixture``: the batches as Kafka wrote them (1 to 7 records each);
- ``one``: every data record re-framed as its own batch, as coordinators and controllers that
  append records one at a time leave them (control batches stay as they are).

For ``__consumer_offsets`` the copies can also *move on*: each copy's committed offsets (the
first field of every ``OffsetCommitValue`` version, an int64 right after the value's version)
are raised by the copy number times the fixture's largest offset, so the groups keep consuming
instead of rewinding at every copy (as a long-lived cluster's log reads); only the stories the
fixture tells (a reset to earliest, expired offsets) repeat.

A *steady* log repeats, after the first copy, only the batches without a tombstone, a
transaction or a marker (offset commits, groups' metadata, KIP-848 members' parts and
epochs), each commit's offset rising with every commit written (the fixture's reset to
earliest is told once, in the first copy): what a fleet of consumers committing every few
seconds and rebalancing now and then leaves, the bulk of a compaction-lagged partition.

The copies land in a log dir (``meta.properties``, checkpoints), one segment per partition,
rolled (an empty active segment follows it) so it is sealed and read through the mapping.
"""

from __future__ import annotations

import struct
from pathlib import Path

from benchmarks.common import OUT
from segtools.codecs import crc32c
from segtools.decode import chunks as deep
from segtools.decode.source import BufferSource
from segtools.decode.walk import table as walk_table
from segtools.formats import batch as v2
from segtools.formats.internal.consumer_offsets import OFFSET_COMMIT_TYPES
from segtools.storage.partition import load_partition_dir
from segtools.storage.segment import Segment

ROOT = Path(__file__).resolve().parent.parent
FORENSICS = ROOT / "fixtures" / "logdirs" / "forensics"
SHAPES = ("fixture", "one")
#: The fixture's ``__consumer_offsets`` partitions.
TOPICS_OFFSETS = tuple(f"__consumer_offsets-{p}" for p in (5, 6, 9, 10, 39))

_OFFSET = struct.Struct(">q")


def fixture_batches(partition: Path) -> list[bytes]:
    """The raw bytes of every batch of a fixture partition, oldest first."""
    out = []
    for files in load_partition_dir(partition).segments:
        with Segment.open(files) as seg:
            table, findings = seg.table()
            assert not findings, findings
            raw = Path(files.log).read_bytes()
            out += [raw[p:e] for p, e in zip(table.position.tolist(), table.end.tolist(),
                                             strict=True)]
    return out


def one_per_batch(batch: bytes) -> list[bytes]:
    """A v2 data batch re-framed as one batch per record (same offsets, timestamps, producer
    fields and attributes); control batches and single-record batches are returned as they
    are."""
    h = v2.RecordBatchHeader.parse(batch)
    if h.records_count <= 1 or h.attributes & v2.CONTROL_FLAG:
        return [batch]
    assert h.attributes & v2.COMPRESSION_MASK == 0, "the fixtures' internal topics are plain"
    out = []
    for r in v2.parse_records(batch[v2.RECORD_BATCH_OVERHEAD:], h.records_count):
        ts = h.base_timestamp + r.timestamp_delta
        payload = v2.Record.build(dict(attributes=0, timestamp_delta=0, offset_delta=0,
                                       key=r.key, value=r.value,
                                       headers=[dict(key=x.key, value=x.value)
                                                for x in r.headers]))
        seq = -1 if h.base_sequence < 0 else h.base_sequence + r.offset_delta
        out.append(v2.build_batch(
            base_offset=h.base_offset + r.offset_delta, records_payload=payload,
            records_count=1, last_offset_delta=0, attributes=h.attributes,
            partition_leader_epoch=h.partition_leader_epoch, base_timestamp=ts,
            max_timestamp=ts, producer_id=h.producer_id, producer_epoch=h.producer_epoch,
            base_sequence=seq))
    return out


def commit_offsets(batch: bytes) -> list[tuple[int, int]]:
    """Where the committed offsets of a ``__consumer_offsets`` batch's offset commits are:
    (byte position in the batch, offset)."""
    h = v2.RecordBatchHeader.parse(batch)
    if h.attributes & v2.CONTROL_FLAG:
        return []
    source = BufferSource(batch)
    table, _ = walk_table(source)
    out = []
    for chunk in deep.decode(source, table):
        cols = chunk.columns
        for i in range(len(cols)):
            key, value = cols.key(i), cols.value(i)
            if key and value and len(key) >= 2 and len(value) >= 10 and \
                    struct.unpack_from(">h", key)[0] in OFFSET_COMMIT_TYPES:
                at = int(cols.value_pos[i]) + 2
                out.append((at, _OFFSET.unpack_from(batch, at)[0]))
    return out


def steady(batch: bytes) -> bool:
    """Whether a batch holds no tombstone and is neither transactional nor a marker."""
    h = v2.RecordBatchHeader.parse(batch)
    if h.attributes & (v2.CONTROL_FLAG | v2.TRANSACTIONAL_FLAG):
        return False
    source = BufferSource(batch)
    table, _ = walk_table(source)
    return all((chunk.columns.value_len >= 0).all() for chunk in deep.decode(source, table))


def shifted(batch: bytes, offset_shift: int, time_shift: int,
            commits: list[tuple[int, int]] = (), commit_shift: int = 0) -> bytes:
    """The batch ``offset_shift`` offsets and ``time_shift`` ms later, its ``commits`` moved
    on by ``commit_shift``, its CRC recomputed."""
    raw = bytearray(batch)
    _OFFSET.pack_into(raw, 0, _OFFSET.unpack_from(raw, 0)[0] + offset_shift)
    for at in (27, 35):  # base and max timestamp
        _OFFSET.pack_into(raw, at, _OFFSET.unpack_from(raw, at)[0] + time_shift)
    for at, offset in commits:
        _OFFSET.pack_into(raw, at, offset + commit_shift)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[v2.CRC_COVERAGE_START:])))
    return bytes(raw)


def repeat(partition: Path, dest: Path, target_bytes: int, shape: str = "fixture",
           move_on: bool = False, steady_only: bool = False) -> Path:
    """``dest``/<partition name>/ holding copies of ``partition`` adding up to about
    ``target_bytes`` (written once, then reused); ``move_on``: committed offsets rise from
    copy to copy; ``steady_only``: copies after the first hold its steady batches only."""
    pdir = dest / partition.name
    log = pdir / "00000000000000000000.log"
    if log.exists() and log.stat().st_size >= target_bytes * 0.9:
        return pdir
    batches = fixture_batches(partition)
    if shape == "one":
        batches = [b for batch in batches for b in one_per_batch(batch)]
    headers = [v2.RecordBatchHeader.parse(b) for b in batches]
    first = headers[0].base_offset
    span_offsets = max(h.base_offset + h.last_offset_delta for h in headers) + 1 - first
    times = [t for h in headers for t in (h.base_timestamp, h.max_timestamp) if t >= 0]
    span_ms = max(times) - min(times) + 1000
    again = [b for b in batches if steady(b)] if steady_only else batches
    size = sum(map(len, again)) if steady_only and again else sum(map(len, batches))
    copies = max(1, target_bytes // size)
    commits = {b: commit_offsets(b) if move_on else [] for b in batches}
    step = max((o for c in commits.values() for _, o in c), default=0) + 1
    pdir.mkdir(parents=True, exist_ok=True)
    per_copy = 0
    if steady_only:  # after the first copy, every commit above the one before it
        for b in again:
            commits[b] = [(at, per_copy + j) for j, (at, _) in enumerate(commits[b])]
            per_copy += len(commits[b])
    header = dict(zip(batches, headers, strict=True))
    end = 0
    with open(log, "wb") as f:
        for i in range(copies):
            for b in again if i else batches:
                h = header[b]
                # a steady copy's batches follow on without holes (only kept batches count)
                at = end if steady_only and i else h.base_offset - first + i * span_offsets
                f.write(shifted(b, at - h.base_offset, i * span_ms,
                                commits[b] if i or not steady_only else [],
                                step + (i - 1) * per_copy if steady_only else i * step))
                end = max(end, at + h.last_offset_delta + 1)
    (pdir / f"{end:020d}.log").write_bytes(b"")
    return pdir


def log_dir(name: str, partitions: list[str], total_bytes: int, shape: str = "fixture",
            move_on: bool = False, steady_only: bool = False) -> Path:
    """A log dir under the benchmark cache holding copies of the named fixture partitions,
    ``total_bytes`` shared between them in proportion to their size."""
    root = OUT / "internal" / (f"{name}-{shape}{'-on' if move_on else ''}"
                               f"{'-steady' if steady_only else ''}-{total_bytes >> 20}m")
    sizes = {p: sum(f.stat().st_size for f in (FORENSICS / p).glob("*.log")) for p in partitions}
    for p, s in sizes.items():
        repeat(FORENSICS / p, root, total_bytes * s // sum(sizes.values()), shape, move_on,
               steady_only)
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=bench\n")
    return root
