"""Hypothesis strategies for every parser entry point: structured, nearly-valid inputs.

Random bytes rarely get past a length check; these build the real thing (through the construct
spec, or the fuzz harness' own layouts) and then damage it a little, which is where parsers
break. The oracles are the fuzz targets themselves (:mod:`fuzz.targets`), so the property
tests and the fuzzers hold the code to one contract.
"""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from segtools.formats.indexes import build_offset_index, build_time_index
from segtools.formats.snapshot import build_producer_snapshot
from tests.builders import make_batch

#: Generated segments checked against the reference walk: examples enough to meet the odd
#: cut, no deadline (a segment is big), and a temporary directory per test function.
SEGMENT_SETTINGS = settings(max_examples=150, deadline=None,
                            suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                   HealthCheck.too_slow])

maybe_bytes = st.one_of(st.none(), st.binary(max_size=24))
record = st.fixed_dictionaries({
    "timestamp_delta": st.integers(-(2**40), 2**40),
    "offset_delta": st.integers(0, 2**31 - 1),
    "key": maybe_bytes,
    "value": maybe_bytes,
    "headers": st.lists(st.tuples(st.binary(max_size=6), maybe_bytes), max_size=2),
})
codec = st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"])


@st.composite
def damaged(draw, data: bytes) -> bytes:
    """``data`` with a few bytes overwritten, inserted or cut (or untouched)."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        if not buf:
            break
        pos = draw(st.integers(0, len(buf) - 1))
        action = draw(st.sampled_from(["set", "insert", "cut", "flip"]))
        if action == "set":
            buf[pos] = draw(st.integers(0, 255))
        elif action == "flip":
            buf[pos] ^= 1 << draw(st.integers(0, 7))
        elif action == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        else:
            del buf[pos:pos + draw(st.integers(1, 16))]
    return bytes(buf)


@st.composite
def v2_segments(draw) -> bytes:
    """One to three Kafka-shaped batches (any codec, any header values), then damage."""
    out = b""
    offset = draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 3))):
        records = draw(st.lists(record, max_size=6))
        out += make_batch(records, base_offset=offset, codec=draw(codec),
                          log_append_time=draw(st.booleans()),
                          base_timestamp=draw(st.integers(-1, 2**42)),
                          producer_id=draw(st.integers(-1, 2**40)),
                          extra_attributes=draw(st.sampled_from([0, 0x10, 0x20, 0x30, 0x40])))
        offset += len(records) + 1
    return draw(damaged(out))


def _legacy_message(magic: int, attributes: int, key, value, offset: int) -> bytes:
    import zlib

    body = bytes([magic, attributes]) + (struct.pack(">q", 0) if magic == 1 else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


@st.composite
def legacy_segments(draw) -> bytes:
    """v0/v1 messages and gzip wrappers (sometimes nested, sometimes lying about offsets)."""
    import zlib

    magic = draw(st.sampled_from([0, 1]))
    out = b""
    for i in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            inner = b"".join(_legacy_message(magic, 0, draw(maybe_bytes), draw(maybe_bytes), j)
                             for j in range(draw(st.integers(0, 4))))
            for _ in range(draw(st.integers(1, 2))):
                inner = _legacy_message(magic, 1, None, zlib.compress(inner, wbits=31),
                                        draw(st.integers(0, 2**33)))
            out += inner
        else:
            out += _legacy_message(magic, 0, draw(maybe_bytes), draw(maybe_bytes), i)
    return draw(damaged(out))


@st.composite
def index_files(draw, time: bool) -> bytes:
    """A provider header (as :func:`fuzz.targets.offset_index` reads it) then entries that
    mostly increase, a zero-filled tail, and damage."""
    n = draw(st.integers(0, 40))
    keys = sorted(draw(st.lists(st.integers(-5, 2**31 - 1), min_size=n, max_size=n)))
    values = sorted(draw(st.lists(st.integers(-5, 2**31 - 1), min_size=n, max_size=n)))
    if time:
        body = build_time_index([(k * 1000, v) for k, v in zip(keys, values, strict=True)])
        head = draw(st.binary(min_size=28, max_size=28))
    else:
        body = build_offset_index(list(zip(keys, values, strict=True)))
        head = draw(st.binary(min_size=33, max_size=33))
    body += bytes(draw(st.sampled_from([0, 8, 12, 24, 4096])))
    return head + draw(damaged(body))


snapshot_entry = st.fixed_dictionaries({
    "producer_id": st.integers(-1, 2**62), "epoch": st.integers(-1, 2**15 - 1),
    "last_sequence": st.integers(-1, 2**31 - 1), "last_offset": st.integers(-1, 2**62),
    "offset_delta": st.integers(-(2**31), 2**31 - 1), "timestamp": st.integers(-1, 2**62),
    "coordinator_epoch": st.integers(-1, 2**31 - 1),
    "current_txn_first_offset": st.integers(-1, 2**62)})


@st.composite
def snapshots(draw) -> bytes:
    data = build_producer_snapshot(draw(st.lists(snapshot_entry, max_size=5)),
                                   version=draw(st.sampled_from([1, 1, 0, 2])))
    return draw(damaged(data))


topic = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=12)
line_junk = st.text(alphabet=" \t\r\x0b\f+-0123456789abc\u00a0\u2003=:#!\\", max_size=12)


@st.composite
def checkpoint_texts(draw) -> bytes:
    """Checkpoint-like text: version and count lines, entries, and junk between them."""
    entries = draw(st.lists(st.tuples(topic, st.integers(-1, 2**31), st.integers(-1, 2**63)),
                            max_size=5))
    lines = [draw(st.sampled_from(["0", "1", "-0", "+0", " 0", "x"])),
             str(draw(st.integers(-1, 7)))]
    lines += [f"{t} {p} {o}" for t, p, o in entries]
    lines += draw(st.lists(line_junk, max_size=3))
    lines += ["version: 0", "topic_id: " + draw(st.text("AZaz09_-=", max_size=24)),
              "node.id=" + draw(st.text("0123456789x", max_size=4)), "directory.id=\\u0041"]
    sep = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    return sep.join(draw(st.permutations(lines))).encode()


@st.composite
def dir_name_inputs(draw) -> bytes:
    """Provider layout of :func:`fuzz.targets.dir_names`: partition dir and file names."""
    suffix = draw(st.sampled_from(["", "-delete", "-future", "-stray"]))
    uuid = draw(st.sampled_from(["", ".0123456789abcdef0123456789abcdef", ".zz"]))
    pname = (draw(topic) + "-" + draw(st.sampled_from(["0", "+1", "-1", "2147483648", "x"]))
             + uuid + suffix).encode()
    pname += draw(st.binary(max_size=3))
    files = [(draw(st.sampled_from(["00000000000000000000", "1", "9" * 25, "٣"]))
              + draw(st.sampled_from([".log", ".index", ".log.deleted", ".snapshot", ".tmp",
                                      ".timeindex.swap", "", ".x"]))).encode()
             for _ in range(draw(st.integers(0, 3)))]
    return (bytes([len(pname) % 256, len(files)]) + pname
            + b"".join(bytes([len(f)]) + f for f in files))
