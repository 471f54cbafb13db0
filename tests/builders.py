"""Test-side builders: v2 batches from plain dicts through the construct spec.

Compression here uses the codec libraries directly (and snappy-java's xerial framing written
out by hand), never segtools.codecs, so a decoder bug cannot hide behind a matching encoder.
"""

from __future__ import annotations

import gzip
import struct

import cramjam
import lz4.frame
import zstandard

from segtools.formats import batch as v2

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def xerial_snappy(data: bytes, block: int = 32 * 1024) -> bytes:
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), block):
        chunk = bytes(cramjam.snappy.compress_raw(data[i:i + block]))
        out += struct.pack(">i", len(chunk)) + chunk
    return bytes(out)


def compress(codec: str, data: bytes) -> bytes:
    if codec == "none":
        return data
    if codec == "gzip":
        return gzip.compress(data, mtime=0)
    if codec == "snappy":
        return xerial_snappy(data)
    if codec == "lz4":
        return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                  block_linked=False, content_checksum=False)
    if codec == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(codec)


def encode_records(records: list[dict]) -> bytes:
    """records: dicts with timestamp_delta, offset_delta, key, value, headers [(bytes, bytes)]"""
    return b"".join(
        v2.Record.build(dict(attributes=0, timestamp_delta=r["timestamp_delta"],
                             offset_delta=r["offset_delta"], key=r["key"], value=r["value"],
                             headers=[dict(key=k, value=v) for k, v in r["headers"]]))
        for r in records)


def make_batch(records: list[dict], *, base_offset: int = 0, base_timestamp: int = 0,
               codec: str = "none", log_append_time: bool = False, max_timestamp=None,
               **header) -> bytes:
    attributes = CODEC_IDS[codec] | (v2.TIMESTAMP_TYPE_MASK if log_append_time else 0)
    attributes |= header.pop("extra_attributes", 0)
    payload = compress(codec, encode_records(records))
    last_delta = max((r["offset_delta"] for r in records), default=0)
    if max_timestamp is None:
        max_timestamp = max((base_timestamp + r["timestamp_delta"] for r in records),
                            default=base_timestamp)
    return v2.build_batch(base_offset=base_offset, records_payload=payload,
                          records_count=len(records), last_offset_delta=last_delta,
                          attributes=attributes, base_timestamp=base_timestamp,
                          max_timestamp=max_timestamp, **header)
