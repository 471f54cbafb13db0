"""Fuzz targets: one function per parser entry point, each taking the fuzzer's bytes.

The contract every target enforces is the one in issue 8: hostile bytes end in a value, a
:class:`~segtools.findings.Finding`, or a typed :class:`~segtools.errors.SegtoolsError`.
Anything else (``struct.error``, ``IndexError``, ``ValueError``, a fault in a compiled
kernel, an output larger than the decompression cap, a kernel that disagrees with the
construct reference) escapes the target and is a crash for libFuzzer.

This module does not import atheris: the harness scripts (``fuzz/fuzz_<target>.py``) wrap these
functions for coverage-guided runs, and the regression tests replay the committed corpora
(``fuzz/corpus/<target>/``) through the same functions without atheris.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import json
import os
import shutil
import struct
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import cramjam
import lz4.block
import lz4.frame
import numpy as np
import zstandard

from segtools import codecs
from segtools.decode import legacy as legacy_format
from segtools.decode.chunks import RecordColumns, batch_records, decode
from segtools.decode.salvage import salvage as salvage_walk
from segtools.decode.source import BufferSource
from segtools.decode.table import BatchTable
from segtools.decode.walk import walk as walk_table
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.formats import batch as v2
from segtools.formats import checkpoints
from segtools.formats.snapshot import parse_producer_snapshot
from segtools.model import Batch
from segtools.storage import files as storage_files
from segtools.storage import partition, small_files
from segtools.storage.index import OffsetIndex, TimeIndex, TransactionIndex
from segtools.storage.logdirs import walk
from segtools.storage.seek import seek_offset, seek_timestamp
from segtools.storage.segment import Segment, base_offset_from_name

try:  # imported here, not in the target, so that atheris instruments them
    from segtools.decode import _programs, programs
    from segtools.formats.internal import (
        cluster_metadata,
        consumer_offsets,
        control,
        remote_log_metadata,
        transaction_state,
    )
except ImportError:  # pragma: no cover - a build without the internal-topic decoders
    cluster_metadata = consumer_offsets = control = transaction_state = None
    remote_log_metadata = None
    _programs = programs = None

#: The cap every target decodes under: small, so a bomb is found in microseconds.
LIMIT = 1 << 16
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logdirs"
#: Scratch files live on tmpfs when there is one: index targets write a file per input.
#: ``fuzz.run`` names the directory (and removes it: libFuzzer exits without atexit hooks).
SCRATCH = Path(os.environ.get("SEGTOOLS_FUZZ_SCRATCH") or tempfile.mkdtemp(
    prefix="segtools-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
SCRATCH.mkdir(parents=True, exist_ok=True)
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


class Provider:
    """A tiny deterministic byte consumer (atheris' FuzzedDataProvider, without atheris)."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def int(self, nbytes: int) -> int:
        chunk = self.data[self.pos:self.pos + nbytes]
        self.pos += len(chunk)
        return int.from_bytes(chunk.ljust(nbytes, b"\0"), "big")

    def pick(self, options):
        return options[self.int(1) % len(options)]

    def bytes(self, n: int) -> bytes:
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk

    def rest(self) -> bytes:
        chunk = self.data[self.pos:]
        self.pos = len(self.data)
        return chunk


# ---------------------------------------------------------------------------- helpers


def fix_crcs(data: bytes) -> bytes:
    """Rewrite every framed entry's CRC so the fuzzer's mutations get past the checksum and
    into the payload parsers (and the salvage resync, which only trusts valid CRCs)."""
    buf = bytearray(data)
    pos = 0
    while pos + v2.HEADER_SIZE_UP_TO_MAGIC <= len(buf):
        length = struct.unpack_from(">i", buf, pos + 8)[0]
        size = v2.LOG_OVERHEAD + length
        if length < v2.MIN_LENGTH or pos + size > len(buf):
            break
        magic = buf[pos + 16]
        if magic == 2 and size >= v2.RECORD_BATCH_OVERHEAD:
            crc = codecs.crc32c(bytes(buf[pos + v2.CRC_COVERAGE_START:pos + size]))
            struct.pack_into(">I", buf, pos + 17, crc)
        elif magic in (0, 1):
            struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16:pos + size])))
        pos += size
    return bytes(buf)


def _walk_everything(buf, *, salvage: bool = True) -> list[Batch]:
    """Shallow walk (with and without CRCs), deep walk, columnar chunks, salvage walk."""
    source = BufferSource(buf)
    chunks = list(walk_table(source, limit=LIMIT))
    list(walk_table(source, verify_crc=False, limit=LIMIT))
    table = BatchTable.concat([c.table for c in chunks])
    for f in (f for c in chunks for f in c.findings):
        assert isinstance(f, Finding), f
    assert np.all(table.position >= 0) and np.all(table.end <= len(buf))
    for br in batch_records(decode(source, table, limit=LIMIT)):
        assert br.finding is None or isinstance(br.finding, Finding)
    for chunk in decode(source, table, limit=LIMIT):
        _check_spans(chunk.columns)
    if salvage:
        previous = -1
        for part in salvage_walk(source, limit=LIMIT):
            for position in part.table.position.tolist():
                assert position > previous, "salvage walked backwards"
                previous = position
    return table.batches()


def _check_spans(cols: RecordColumns) -> None:
    """Every key/value span the kernel hands out lies inside the buffer it points into."""
    size = cols.data.shape[0]
    for pos, length in ((cols.key_pos, cols.key_len), (cols.value_pos, cols.value_len)):
        present = length >= 0
        assert np.all(pos[present] >= 0) and np.all(pos[present] + length[present] <= size)
    for i in range(len(cols)):
        cols.headers(i)


# ---------------------------------------------------------------------------- targets


def batch_walk(data: bytes) -> None:
    """Raw bytes as a segment: the shallow walk, deep decode, kernel chunks and salvage.

    The first byte chooses whether CRCs are repaired first, so both the CRC-failure paths and
    everything behind a valid checksum are explored."""
    if not data:
        return
    body = data[1:]
    if data[0] & 1:
        body = fix_crcs(body)
    _walk_everything(body)


_CODEC_WRITERS: dict[str, Callable[[bytes], bytes]] = {
    "none": lambda b: b,
    "gzip": lambda b: zlib.compress(b, wbits=31),
    "snappy": lambda b: bytes(cramjam.snappy.compress_raw(b)),
    "lz4": lambda b: lz4.frame.compress(b, block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                        block_linked=False, content_checksum=False),
    "zstd": lambda b: zstandard.ZstdCompressor().compress(b),
}


def _wrap64(v: int) -> int:
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)


def _reference(payload: bytes, count: int, base_offset: int, base_ts: int, lat: bool,
               max_ts: int) -> list | None:
    """The construct reference's records, or None when it rejects the payload."""
    try:
        parsed = v2.parse_records(payload, count)
    except Exception:  # construct raises a zoo of its own errors; any of them is "rejects"
        return None
    return [(_wrap64(base_offset + r.offset_delta),
             max_ts if lat else _wrap64(base_ts + r.timestamp_delta), r.key, r.value,
             tuple((h.key.decode("utf-8", "replace"), h.value) for h in r.headers))
            for r in parsed]


def v2_records(data: bytes) -> None:
    """A well-framed v2 batch (valid length and CRC) around a hostile records payload, in
    every codec; the kernel must agree with the construct reference record for record."""
    p = Provider(data)
    codec = p.pick(tuple(_CODEC_WRITERS))
    count = p.pick((0, 1, 2, 3, 5, 17, 2**31 - 1, -1)) if p.int(1) & 1 else p.int(1) % 8
    lat = bool(p.int(1) & 1)
    base_offset = p.int(8) >> 1
    base_ts = p.int(8) >> 1
    payload = p.rest()
    attributes = codecs.Compression[codec.upper()] | (v2.TIMESTAMP_TYPE_MASK if lat else 0)
    buf = v2.build_batch(base_offset=base_offset, records_payload=_CODEC_WRITERS[codec](payload),
                         records_count=count, last_offset_delta=max(count - 1, 0),
                         attributes=attributes, base_timestamp=base_ts, max_timestamp=base_ts)
    batches = _walk_everything(buf, salvage=False)
    assert len(batches) == 1 and batches[0].crc_valid
    (br,) = list(batch_records(decode(BufferSource(buf), BatchTable.from_batches(batches),
                                      limit=LIMIT)))
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in br.records]
    if len(payload) > LIMIT:
        return
    want = _reference(payload, count, base_offset, base_ts, lat, base_ts) if count >= 0 else None
    if want is None:
        assert br.finding is not None, ("kernel accepted what the reference rejects", got)
    else:
        assert br.finding is None, (br.finding, want)
        assert got == want, (got, want)


def _legacy_message(magic: int, attributes: int, key: bytes | None, value: bytes | None,
                    offset: int, timestamp: int = 0) -> bytes:
    body = bytes([magic, attributes])
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body


def legacy(data: bytes) -> None:
    """v0/v1 entries: raw (CRC repaired or not), and compressed wrappers around a hostile
    inner message set, nested to any depth the input asks for."""
    p = Provider(data)
    mode = p.int(1)
    if mode & 3 == 0:
        _shallow_agrees_with_deep(fix_crcs(p.rest()))
        return
    magic = p.int(1) & 1
    codec = p.pick(("gzip", "snappy", "lz4"))
    offset = p.int(4)
    depth = 1 + p.int(1) % 4
    inner = p.rest()
    if mode & 4:  # a well-formed inner set whose messages are themselves wrappers
        inner = _legacy_message(magic, 0, None, inner, 0)
    for level in range(depth):
        attrs = codecs.Compression[codec.upper()]
        value = _legacy_writer(codec, inner)
        inner = _legacy_message(magic, attrs, None, value, offset + level)
    _shallow_agrees_with_deep(inner)


def _shallow_agrees_with_deep(buf: bytes) -> None:
    """The shallow walk's base offset of a wrapper (which never materialises the records) is
    the first record's offset of the deep decode."""
    data = np.frombuffer(buf, np.uint8)
    for b in _walk_everything(buf):
        if b.magic < 2 and b.compression != "none":
            try:
                first = int(legacy_format.wrapper_messages(data, b.position, b.size,
                                                    limit=LIMIT).offset[0])
            except SegtoolsError:
                continue
            assert first == b.base_offset, (first, b)


def _legacy_writer(codec: str, data: bytes) -> bytes:
    if codec == "snappy":
        return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(
            ">i", len(raw := bytes(cramjam.snappy.compress_raw(data)))) + raw
    return _CODEC_WRITERS[codec](data)


def codec_paths(data: bytes) -> None:
    """Each decompressor on hostile bytes with a small cap: bytes no longer than the cap, or
    a typed error. Odd selector values round-trip real compressed data instead."""
    p = Provider(data)
    selector = p.int(1)
    codec = (codecs.Compression.GZIP, codecs.Compression.SNAPPY, codecs.Compression.LZ4,
             codecs.Compression.ZSTD)[selector % 4]
    magic = (selector >> 2) % 3
    limit = 1 + p.int(2) * 4
    payload = p.rest()
    if selector & 0x80:
        writer = _legacy_writer if codec is not codecs.Compression.ZSTD else None
        compressed = (writer(codec.label, payload) if writer
                      else _CODEC_WRITERS["zstd"](payload))
        try:
            out = codecs.decompress(codec, compressed, magic=magic, limit=limit)
        except codecs.DecompressionLimitError as e:
            assert len(payload) > limit and f"the {limit}-byte cap" in e.message, e
            return
        assert out == payload
        return
    try:
        out = codecs.decompress(codec, payload, magic=magic, limit=limit)
    except codecs.DecompressionLimitError as e:
        assert f"the {limit}-byte cap" in e.message, e  # the finding names the real cap
        return
    except SegtoolsError:
        return
    assert len(out) <= limit, (codec, len(out), limit)
    with contextlib.suppress(SegtoolsError):
        codecs.compression_from_attributes(selector, magic=magic)


def _scratch(name: str, data: bytes) -> Path:
    path = SCRATCH / name
    path.write_bytes(data)
    return path


def _probe_values(p: Provider) -> list[int]:
    return [p.int(8) - (1 << 63) for _ in range(3)] + [0, -1, 2**31, 2**63 - 1]


def offset_index(data: bytes) -> None:
    """An ``.index`` file: counting, sanity checks, entries, lookups at hostile targets."""
    p = Provider(data)
    base = p.int(4)
    log_size = p.int(4) if p.int(1) & 1 else None
    probes = _probe_values(p)
    path = _scratch(f"{base:020d}.index", p.rest())
    with OffsetIndex(path, base, log_size=log_size) as index:
        _index_common(index, probes)
        for target in probes:
            index.lookup(target)
            index.fetch_upper_bound_offset(target)
        assert all(e.position >= 0 for e in index.entries())


def time_index(data: bytes) -> None:
    """A ``.timeindex`` file: counting, sanity checks, entries, lookups."""
    p = Provider(data)
    base = p.int(4)
    probes = _probe_values(p)
    path = _scratch(f"{base:020d}.timeindex", p.rest())
    with TimeIndex(path, base) as index:
        _index_common(index, probes)
        for target in probes:
            index.lookup(target)


def _index_common(index, probes: list[int]) -> None:
    findings = index.sanity_check()
    assert all(isinstance(f, Finding) for f in findings)
    assert 0 <= index.valid_entries <= index.kafka_entries
    _ = index.trusted, index.is_preallocated, index.padding_bytes, index.last_entry
    list(index.entries())
    repr(index)


def txn_index(data: bytes) -> None:
    """A ``.txnindex`` file: entries, sanity checks, the aborted-transaction search."""
    p = Provider(data)
    base = p.int(4)
    fetch, upper = p.int(8) - (1 << 63), p.int(8) - (1 << 63)
    path = _scratch(f"{base:020d}.txnindex", p.rest())
    with TransactionIndex(path, base) as index:
        index.sanity_check()
        list(index.entries())
        index.collect_aborted_txns(fetch, upper)


_SEEK_LOGS = sorted(FIXTURES.glob("sample/*/*.log"))


def seek(data: bytes) -> None:
    """Hostile ``.index`` / ``.timeindex`` beside a real segment: the broker-style seek must
    land on a record or on nothing, however the index lies about positions."""
    p = Provider(data)
    log = _SEEK_LOGS[p.int(1) % len(_SEEK_LOGS)]
    target = p.int(4) - (1 << 31) if p.int(1) & 1 else p.int(2)
    n = p.int(2) % 2048
    index_bytes = p.bytes(n)
    time_bytes = p.rest()
    base = base_offset_from_name(log) or 0
    ipath = _scratch(f"{base:020d}.index", index_bytes)
    tpath = _scratch(f"{base:020d}.timeindex", time_bytes)
    with Segment(log) as segment, OffsetIndex(ipath, base, log_size=segment.size) as oi, \
            TimeIndex(tpath, base) as ti:
        for result in (seek_offset(segment, oi, target),
                       seek_timestamp(segment, oi, ti, target)):
            assert result.record is None or result.batch is not None
            assert 0 <= result.start_position <= segment.size


def snapshot(data: bytes) -> None:
    """A producer-state ``.snapshot``, from bytes and through the file reader."""
    value, findings = parse_producer_snapshot(data, "x.snapshot")
    assert value is not None or findings
    path = _scratch("00000000000000000000.snapshot", data)
    small_files.read_producer_snapshot(path)


_TEXT_PARSERS = (checkpoints.parse_offset_checkpoint, checkpoints.parse_leader_epoch_checkpoint,
                 checkpoints.parse_partition_metadata, checkpoints.parse_meta_properties,
                 checkpoints.parse_clean_shutdown)


def text_files(data: bytes) -> None:
    """Checkpoints, ``partition.metadata``, ``meta.properties``, ``.kafka_cleanshutdown``:
    these parsers promise ``(value, findings)`` and never raise, so any exception counts."""
    text = data.decode("utf-8", "replace")
    for parse in _TEXT_PARSERS:
        _, findings = parse(text, "checkpoint")
        assert all(isinstance(f, Finding) for f in findings)
    checkpoints.parse_java_properties(text)
    with contextlib.suppress(ValueError):
        checkpoints.uuid_bytes(text)
    path = _scratch("recovery-point-offset-checkpoint", data)
    small_files.read_text_capped(path, cap=4096)


def _name(raw: bytes) -> str:
    """A possible file name: no '/' or NUL, at most 255 bytes, decoded as the OS does."""
    raw = raw.replace(b"/", b"_").replace(b"\0", b"_")[:255]
    return os.fsdecode(raw) if raw not in (b"", b".", b"..") else "x"


def dir_names(data: bytes) -> None:
    """Partition directory and segment file names: the pure parsers on any string, then a real
    tree with those names walked by the log-dir walker (which must never raise)."""
    p = Provider(data)
    names = [_name(p.bytes(p.int(1))) for _ in range(1 + p.int(1) % 4)]
    text = data.decode("utf-8", "surrogateescape")
    for name in (text, *names):
        parsed = partition.parse_partition_dir_name(name)
        assert parsed is None or isinstance(parsed.partition, int)
        partition.classify_partition_file(name)
        with contextlib.suppress(SegtoolsError):
            storage_files.offset_from_file_name(name)
        base_offset_from_name(name)
    root = SCRATCH / "tree"
    shutil.rmtree(root, ignore_errors=True)
    pdir = root / names[0]
    pdir.mkdir(parents=True)
    for name in names[1:]:
        target = pdir / name
        if not target.exists():
            target.write_bytes(p.bytes(64))
    for paths in ([root], [pdir], [pdir / n for n in names[1:]]):
        log_dirs, loose = walk(paths)
        assert all(isinstance(f, Finding) for f in loose)
        for d in log_dirs:
            for f in d.all_findings:
                json.dumps(f.to_json())


def internal(data: bytes) -> None:
    """The internal-topic decoders (``__consumer_offsets``, ``__transaction_state``,
    ``__cluster_metadata``, KRaft control records, ``__remote_log_metadata``): a decoded value
    or a typed error."""
    if cluster_metadata is None:  # pragma: no cover - a build without the decoders
        return
    p = Provider(data)
    which = p.int(1) % 7
    split = p.int(2)
    body = p.rest()
    key, value = body[:split % (len(body) + 1)], body[split % (len(body) + 1):]
    if split & 0x8000:
        value = None
    calls = (
        lambda: consumer_offsets.decode_record(key, value),
        lambda: transaction_state.decode_record(key, value),
        lambda: cluster_metadata.decode_frame(value),
        lambda: control.decode_kraft_control(
            p.pick(tuple(control.CONTROL_SCHEMAS)), value),
        lambda: consumer_offsets.decode_subscription(body),
        lambda: consumer_offsets.decode_assignment(body),
        lambda: remote_log_metadata.decode_frame(value),
    )
    with contextlib.suppress(SegtoolsError):
        json.dumps(repr(calls[which]()))


def _compiled(family, key: bytes, value: bytes | None):
    """One record through the compiled decoder: its key and value as the reference would
    return them, or None when it refuses the record."""
    decoder = programs.Decoder(family)
    buf = np.frombuffer(key + (value or b""), np.uint8)
    block = decoder.decode(buf, np.array([0]), np.array([len(key)]), np.array([len(key)]),
                           np.array([-1 if value is None else len(value)]),
                           np.zeros(1, np.int8))
    if block.status[0] != _programs.ST_OK:
        return None
    return (None if family.mode == _programs.MODE_METADATA else block.key(0)), block.value(0)


def internal_programs(data: bytes) -> None:
    """Hostile keys and values through the compiled field programs of each internal topic:
    bounds-checked (no fault, no read past the record), and agreeing with the reference
    decoder: both refuse the record, or both read the same values."""
    if programs is None:  # pragma: no cover - a build without the decoders
        return
    p = Provider(data)
    which = p.int(1) % 4
    split = p.int(2)
    body = p.rest()
    key, value = body[:split % (len(body) + 1)], body[split % (len(body) + 1):]
    if split & 0x8000:
        value = None

    def reference():
        if which == 0:
            rec = consumer_offsets.decode_record(key, value)
            return rec.key, rec.value
        if which == 1:
            rec = transaction_state.decode_record(key, value)
            return {"transactionalId": rec.transactional_id}, rec.value
        if which == 2:
            return None, cluster_metadata.decode_frame(value).data
        return None, remote_log_metadata.decode_frame(value).data

    family = (programs.consumer_offsets_family, programs.transaction_log_family,
              programs.cluster_metadata_family, programs.remote_log_metadata_family)[which]()
    try:
        want = reference()
    except SegtoolsError:
        want = None
    got = _compiled(family, key, value)
    assert got == want, (got, want)


def cli_dump(data: bytes) -> None:
    """Hostile bytes as a ``.log`` through ``segtools dump`` and ``verify`` in-process: the
    exit code is 0, 1 or 2, stderr never says "internal error", every JSON line parses, and
    text output carries no control character but newline."""
    from segtools.cli.main import main

    if not data:
        return
    body = fix_crcs(data[1:]) if data[0] & 1 else data[1:]
    pdir = SCRATCH / "cli" / "topic-0"
    pdir.mkdir(parents=True, exist_ok=True)
    log = pdir / "00000000000000000000.log"
    log.write_bytes(body)
    runs = (["dump", "--deep", "--print-data", "--format", "jsonl", str(log)],
            ["dump", "--deep", "--print-data", str(log)],
            ["verify", "--deep", "--salvage", "--format", "jsonl", "-q", str(pdir)])
    for argv in runs:
        raw = io.BytesIO()
        out = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
        err = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        out.flush()
        assert code in (0, 1, 2), (argv, code)
        assert "internal error" not in err.getvalue(), err.getvalue()
        text = raw.getvalue().decode("utf-8")
        if "jsonl" in argv:
            for line in text.splitlines():
                json.loads(line)
        else:
            assert not any((ord(c) < 32 and c != "\n") or 0x7f <= ord(c) < 0xa0 for c in text)


#: Schema ids of the payloads fixture a fuzzed frame names (999: one no source knows).
PAYLOAD_IDS = (2, 3, 5, 6, 7, 8, 999)


@functools.lru_cache(maxsize=1)
def _payload_decoders() -> tuple:
    """The payloads fixture's ``_schemas``, read once, in both framed modes (compiled schemas
    are kept by the decoders across inputs, as in a run)."""
    from segtools.payloads.decoder import Modes, PayloadDecoder
    from segtools.payloads.sources import gather

    chain = gather([FIXTURES / "payloads"], [])
    return tuple(PayloadDecoder(chain, Modes.parse(m)) for m in ("schema", "auto"))


def payloads(data: bytes) -> None:
    """Hostile bytes as a value of the payloads fixture's ``orders`` topic: the first byte's
    high bit frames the rest with one of :data:`PAYLOAD_IDS` (Avro, Protobuf with its message
    indexes, JSON Schema, soft- and hard-deleted, unknown). Each decoder gives valid JSON or a
    ``PayloadError``, never another exception; the column path (the compiled transcoder for
    Avro) gives the same text as the value path."""
    import pyarrow as pa

    from segtools.payloads import framing
    from segtools.payloads.columns import Payloads, Topics, decode_side
    from segtools.payloads.errors import PayloadError

    if not data:
        return
    head, body = data[0], data[1:]
    value = framing.frame(PAYLOAD_IDS[head % len(PAYLOAD_IDS)], body) if head & 0x80 else body
    for decoder in _payload_decoders():
        try:
            found = decoder.decode(value, topic="orders", is_key=False)
        except PayloadError:
            found = None
        if found is not None:
            json.loads(found.json_text())
        side = decode_side(decoder, Payloads.of_column(pa.array([value], pa.binary())),
                           Topics.one("orders", 1), False)
        assert side.columns[0][0].as_py() == (None if found is None else found.json_text())


TARGETS: dict[str, Callable[[bytes], None]] = {
    "batch_walk": batch_walk,
    "v2_records": v2_records,
    "legacy": legacy,
    "codecs": codec_paths,
    "offset_index": offset_index,
    "time_index": time_index,
    "txn_index": txn_index,
    "seek": seek,
    "snapshot": snapshot,
    "text_files": text_files,
    "dir_names": dir_names,
    "internal": internal,
    "internal_programs": internal_programs,
    "cli_dump": cli_dump,
    "payloads": payloads,
}
