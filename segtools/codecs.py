"""Compression codecs and checksums exactly as Kafka's writers framed them.

Each decompressor takes a bound (``limit``) on the bytes it may produce, because a batch's
payload is attacker-shaped input: a 1 KiB zstd frame can claim gigabytes. Hitting the bound is a
:class:`DecompressionLimitError`, never an allocation of the claimed size.

Which library does what:
- gzip: the standard library's ``zlib`` (Kafka writes plain gzip members, ``GzipCompression``).
- snappy: ``cramjam`` for raw snappy blocks; the xerial framing that snappy-java's
  ``SnappyOutputStream`` wraps them in is parsed here (``SnappyCompression`` uses it for every
  magic), with the raw-block fallback ``SnappyInputStream`` applies to non-Java producers' data.
- lz4: ``lz4.block`` for blocks; the LZ4 frame header is parsed here so that magic 0's broken
  header checksum (KAFKA-3160, ``Lz4BlockInputStream.ignoreFlagDescriptorChecksum``) can be
  tolerated the way Kafka does.
- zstd: ``zstandard`` streaming reader (Kafka's zstd-jni frames carry no content size).
- CRC-32C and CRC-32: compiled with the batch walk (:mod:`segtools._checksum`: folding by
  carry-less multiplication or the CPU's CRC instruction where the CPU has them, slicing-by-8
  tables otherwise), so the walk checks every
  batch without a Python call; ``crcmod``'s table implementation is the reference the tests
  hold them to.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable
from enum import IntEnum

import cramjam
import crcmod.predefined
import lz4.block
import zstandard

from segtools._checksum import crc32c as _crc32c
from segtools.errors import CorruptDataError, DecompressionLimitError, UnsupportedFormatError

#: Default cap on the bytes one batch may decompress to. Kafka's own default
#: ``max.message.bytes`` is 1 MiB; brokers raise it, rarely past tens of MiB.
DEFAULT_DECOMPRESS_LIMIT = 256 * 1024 * 1024


class Compression(IntEnum):
    """Attribute bits 0-2 (``CompressionType.forId``)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        return self.name.lower()


def compression_from_attributes(attributes: int, *, magic: int) -> Compression:
    """Kafka throws on ids 5-7 and on zstd in a v0/v1 wrapper; so do we."""
    codec_id = attributes & 0x07
    try:
        codec = Compression(codec_id)
    except ValueError:
        raise UnsupportedFormatError(f"unknown compression id {codec_id}") from None
    if codec is Compression.ZSTD and magic < 2:
        raise CorruptDataError("zstd is not valid in a v0/v1 message")
    return codec


# --------------------------------------------------------------------------- checksums

_crcmod_crc32c = crcmod.predefined.mkCrcFun("crc-32c")


def crc32c_reference(data, value: int = 0) -> int:
    """CRC-32C (Castagnoli) through crcmod: the slow, obviously-correct reference."""
    return _crcmod_crc32c(bytes(data), value)


def crc32c(data, value: int = 0) -> int:
    """CRC-32C used by v2 batches (``DefaultRecordBatch.computeChecksum``) and snapshots.

    Accepts any buffer (an mmap slice's memoryview included) without copying. ``value`` is
    the CRC of the bytes before ``data``, so a long range can be checksummed in pieces.
    """
    return _crc32c(data, value)


def crc32(data, value: int = 0) -> int:
    """CRC-32 (IEEE, ``java.util.zip.CRC32``) used by v0/v1 messages (``LegacyRecord``);
    ``value`` continues a CRC over earlier bytes."""
    return zlib.crc32(data, value) & 0xFFFFFFFF


# --------------------------------------------------------------------------- decompressors


def _limit_error(codec: str, limit: int) -> DecompressionLimitError:
    return DecompressionLimitError(f"{codec} payload inflates past the {limit}-byte cap")


#: Bytes of input a gzip member is first fed with. ``zlib`` hands back what follows a member's
#: end as a fresh copy (``unused_data``), so feeding it the whole rest of the payload would copy
#: that rest once per member: quadratic in a batch of many small concatenated members.
#: Feeding a member small, doubling pieces bounds each copy by the member's own size.
_GZIP_FIRST_FEED = 256
_GZIP_MAX_FEED = 1 << 20


def gunzip(data, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> bytes:
    """Plain gzip (``GzipCompression``); concatenated members are read as ``GZIPInputStream``
    does, in time linear in the payload whatever the number of members."""
    out = bytearray()
    view = memoryview(data).cast("B")
    pos, end = 0, len(view)
    while pos < end:
        d = zlib.decompressobj(wbits=31)
        feed = _GZIP_FIRST_FEED
        while not d.eof:
            if pos >= end:
                raise CorruptDataError("gzip: stream ends before its trailer")
            piece = view[pos:pos + feed]
            pos += len(piece)
            feed = min(feed * 2, _GZIP_MAX_FEED)
            try:
                out += d.decompress(piece, limit - len(out) + 1)
            except zlib.error as e:
                raise CorruptDataError(f"gzip: {e}") from None
            if len(out) > limit or d.unconsumed_tail:
                raise _limit_error("gzip", limit)
        pos -= len(d.unused_data)
    return bytes(out)


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")


def _snappy_block(block, budget: int, limit: int) -> bytes:
    """One raw block, refused before allocation when its preamble claims more than the
    ``budget`` left under the ``limit`` (the cap the error message names)."""
    try:
        size = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as e:
        raise CorruptDataError(f"snappy: {e}") from None
    if size > budget:
        raise _limit_error("snappy", limit)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as e:
        raise CorruptDataError(f"snappy: {e}") from None


def unsnappy(data, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> bytes:
    """snappy-java's xerial stream: a 16-byte header, then ``int32 length`` + raw block chunks.

    ``SnappyInputStream`` decodes the whole buffer as one raw block when the header is absent,
    which is how some non-Java producers' batches still read; we do the same.
    """
    view = memoryview(data)
    if len(view) < _XERIAL_HEADER.size or bytes(view[:8]) != _XERIAL_MAGIC:
        return _snappy_block(view, limit, limit)
    pos = _XERIAL_HEADER.size
    out = bytearray()
    while pos < len(view):
        if pos + 4 > len(view):
            raise CorruptDataError("snappy: chunk length cut short")
        (chunk,) = struct.unpack_from(">i", view, pos)
        pos += 4
        if chunk < 0 or pos + chunk > len(view):
            raise CorruptDataError(f"snappy: chunk of {chunk} bytes runs past the payload")
        out += _snappy_block(view[pos:pos + chunk], limit - len(out), limit)
        pos += chunk
    return bytes(out)


# LZ4 frame format (lz4/lz4 doc/lz4_Frame_format.md), as Lz4BlockInputStream reads it.
_LZ4_MAGIC = 0x184D2204
_LZ4_BLOCK_SIZES = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, only ever applied to the few bytes of an LZ4 frame descriptor."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + p1 + p2) & mask, (seed + p2) & mask, seed & mask, (seed - p1) & mask]
        while i + 16 <= n:
            for j in range(4):
                (lane,) = struct.unpack_from("<I", data, i + 4 * j)
                v[j] = (rotl((v[j] + lane * p2) & mask, 13) * p1) & mask
            i += 16
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & mask
    else:
        h = (seed + p5) & mask
    h = (h + n) & mask
    while i + 4 <= n:
        (word,) = struct.unpack_from("<I", data, i)
        h = (rotl((h + word * p3) & mask, 17) * p4) & mask
        i += 4
    while i < n:
        h = (rotl((h + data[i] * p5) & mask, 11) * p1) & mask
        i += 1
    h ^= h >> 15
    h = (h * p2) & mask
    h ^= h >> 13
    h = (h * p3) & mask
    h ^= h >> 16
    return h


def unlz4(data, limit: int = DEFAULT_DECOMPRESS_LIMIT, *, magic: int = 2) -> bytes:
    """Kafka's LZ4 frame (``Lz4BlockInputStream``): FLG/BD descriptor, blocks, end mark.

    For magic 0 the header checksum is skipped, because Kafka 0.8/0.9 hashed the magic number
    into it (KAFKA-3160) and Kafka itself never checks it there; for magic 1 and 2 a wrong
    header checksum is corruption, as in Kafka. The content checksum is never verified,
    matching ``Lz4BlockInputStream`` (it reads past it).
    """
    view = memoryview(data)
    if len(view) < 7:
        raise CorruptDataError("lz4: frame shorter than its header")
    frame_magic, flg, bd = struct.unpack_from("<IBB", view, 0)
    if frame_magic != _LZ4_MAGIC:
        raise CorruptDataError(f"lz4: bad frame magic {frame_magic:#x}")
    if (flg >> 6) != 1:
        raise CorruptDataError(f"lz4: unsupported frame version {flg >> 6}")
    has_block_checksum = bool(flg & 0x10)
    has_content_size = bool(flg & 0x08)
    has_content_checksum = bool(flg & 0x04)
    if flg & 0x01:
        raise UnsupportedFormatError("lz4: frames with a dictionary id are not Kafka's")
    block_max = _LZ4_BLOCK_SIZES.get((bd >> 4) & 0x07)
    if block_max is None:
        raise CorruptDataError(f"lz4: bad block-size code in BD byte {bd:#x}")
    pos = 6 + (8 if has_content_size else 0)
    if pos >= len(view):
        raise CorruptDataError("lz4: frame header cut short")
    if magic >= 1:
        expected = (xxh32(bytes(view[4:pos])) >> 8) & 0xFF
        if view[pos] != expected:
            raise CorruptDataError(
                f"lz4: header checksum {view[pos]:#x}, descriptor hashes to {expected:#x}")
    pos += 1
    blocks: list[bytes] = []  # joined once at the end: one copy, none for a one-block frame
    total = 0
    while True:
        if pos + 4 > len(view):
            raise CorruptDataError("lz4: frame ends without an end mark")
        (word,) = struct.unpack_from("<I", view, pos)
        pos += 4
        if word == 0:
            break
        size = word & 0x7FFFFFFF
        if size > block_max or pos + size > len(view):
            raise CorruptDataError(f"lz4: block of {size} bytes exceeds the frame")
        block = view[pos:pos + size]
        pos += size + (4 if has_block_checksum else 0)
        if word & 0x80000000:
            data = bytes(block)
        else:
            try:
                data = lz4.block.decompress(block, uncompressed_size=block_max)
            except lz4.block.LZ4BlockError as e:
                raise CorruptDataError(f"lz4: {e}") from None
        total += len(data)
        if total > limit:
            raise _limit_error("lz4", limit)
        blocks.append(data)
    if has_content_checksum and pos + 4 > len(view):
        raise CorruptDataError("lz4: content checksum cut short")
    return blocks[0] if len(blocks) == 1 else b"".join(blocks)


_zstd_local = threading.local()
_ZSTD_READ = 1 << 20


def _zstd_context() -> zstandard.ZstdDecompressor:
    """One decompression context per thread: creating one per batch costs more than small
    batches take to inflate, and a context must not be shared between threads."""
    ctx = getattr(_zstd_local, "ctx", None)
    if ctx is None:
        ctx = _zstd_local.ctx = zstandard.ZstdDecompressor()
    return ctx


def unzstd(data, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> bytes:
    """zstd as zstd-jni streams it, read across concatenated frames, with a bound.

    Streamed in 1 MiB reads: a frame header's content size is the writer's claim, not a
    promise, so the one-shot API (which trusts it) is not used.
    """
    reader = _zstd_context().stream_reader(data, read_across_frames=True)
    try:
        out = reader.read(_ZSTD_READ)
        if len(out) < _ZSTD_READ:
            tail = reader.read(_ZSTD_READ)
            if not tail and len(out) <= limit:
                return out
            out += tail
        buf = bytearray(out)
        while chunk := reader.read(_ZSTD_READ):
            buf += chunk
            if len(buf) > limit:
                raise _limit_error("zstd", limit)
    except zstandard.ZstdError as e:
        raise CorruptDataError(f"zstd: {e}") from None
    if len(buf) > limit:
        raise _limit_error("zstd", limit)
    return bytes(buf)


def _unzstd_into(data, out: memoryview, limit: int) -> int | None:
    room = min(len(out), limit + 1)
    reader = _zstd_context().stream_reader(data, read_across_frames=True)
    n = 0
    try:
        while n < room:
            got = reader.readinto(out[n:room])
            if not got:
                return n
            n += got
        if n > limit:
            raise _limit_error("zstd", limit)
        return None if reader.read(1) else n
    except zstandard.ZstdError as e:
        raise CorruptDataError(f"zstd: {e}") from None


def decompress_into(codec: Compression, data, out: memoryview, *, magic: int = 2,
                    limit: int = DEFAULT_DECOMPRESS_LIMIT) -> int | None:
    """Decompress into ``out`` (writable): the bytes written, or None when ``out`` is too small
    (the caller retries with a larger buffer). zstd streams straight into it; the other codecs
    inflate and are copied. The cap and the errors are :func:`decompress`'s."""
    if codec is Compression.ZSTD:
        return _unzstd_into(data, out, limit)
    payload = decompress(codec, data, magic=magic, limit=limit)
    if len(payload) > len(out):
        return None
    out[:len(payload)] = payload
    return len(payload)


_DECOMPRESSORS: dict[Compression, Callable[..., bytes]] = {
    Compression.GZIP: gunzip,
    Compression.SNAPPY: unsnappy,
    Compression.ZSTD: unzstd,
}


def decompress(codec: Compression, data, *, magic: int = 2,
               limit: int = DEFAULT_DECOMPRESS_LIMIT) -> bytes:
    """Decompress one batch payload (v2) or wrapper value (v0/v1) with Kafka's framing."""
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.LZ4:
        return unlz4(data, limit, magic=magic)
    return _DECOMPRESSORS[codec](data, limit)
