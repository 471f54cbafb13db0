"""Kafka's zigzag varints (``ByteUtils.readVarint`` / ``readVarlong``) as construct types.

construct's own ``VarInt`` is unbounded; Kafka stops a varint at 5 bytes and a varlong at 10
and calls anything longer malformed, so a hostile run of 0x80 bytes cannot make the reader loop.
"""

from __future__ import annotations

from construct import Construct, ConstructError, StreamError, stream_read, stream_write


def zigzag_decode(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def zigzag_encode(v: int, bits: int) -> int:
    return ((v << 1) ^ (v >> (bits - 1))) & ((1 << bits) - 1)


class ZigZagVarint(Construct):
    """A protobuf-style LEB128 varint, zigzag-encoded, at most ``max_bytes`` long."""

    def __init__(self, bits: int):
        super().__init__()
        self.bits = bits
        self.max_bytes = (bits + 6) // 7

    def _parse(self, stream, context, path):
        value = 0
        for i in range(self.max_bytes):
            try:
                byte = stream_read(stream, 1, path)[0]
            except StreamError:
                raise ConstructError("varint cut short", path=path) from None
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                # Java's int/long arithmetic drops bits past the type's width before the zigzag
                return zigzag_decode(value & ((1 << self.bits) - 1))
        raise ConstructError(f"varint longer than {self.max_bytes} bytes", path=path)

    def _build(self, obj, stream, context, path):
        limit = 1 << (self.bits - 1)
        if not -limit <= obj < limit:
            raise ConstructError(f"{obj} does not fit a {self.bits}-bit varint", path=path)
        n = zigzag_encode(obj, self.bits)
        out = bytearray()
        while True:
            if n < 0x80:
                out.append(n)
                break
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        stream_write(stream, bytes(out), len(out), path)
        return obj

    def _sizeof(self, context, path):
        raise ConstructError("a varint has no fixed size", path=path)


#: ``ByteUtils.readVarint``: 32-bit, at most 5 bytes.
Varint = ZigZagVarint(32)
#: ``ByteUtils.readVarlong``: 64-bit, at most 10 bytes.
Varlong = ZigZagVarint(64)


class NullableBytes(Construct):
    """A length (``length``: any integer construct) then that many bytes; a negative length is
    null, and builders write -1.

    ``DefaultRecord.readFrom`` tests ``size >= 0`` for keys, values and header values (a varint
    length), and ``LegacyRecord.key()``/``value()`` do the same with an int32 length, so any
    negative length (not only -1) reads as null.
    """

    def __init__(self, length: Construct = Varint):
        super().__init__()
        self.length = length

    def _parse(self, stream, context, path):
        length = self.length._parse(stream, context, path)
        if length < 0:
            return None
        return stream_read(stream, length, path)

    def _build(self, obj, stream, context, path):
        self.length._build(-1 if obj is None else len(obj), stream, context, path)
        if obj is not None:
            stream_write(stream, bytes(obj), len(obj), path)
        return obj

    def _sizeof(self, context, path):
        raise ConstructError("variable-length bytes have no fixed size", path=path)


class VarBytes(NullableBytes):
    """A header key: a varint length that must not be negative (``DefaultRecord.readHeaders``)."""

    def _parse(self, stream, context, path):
        length = Varint._parse(stream, context, path)
        if length < 0:
            raise ConstructError(f"invalid negative header key size {length}", path=path)
        return stream_read(stream, length, path)
