# Big-endian field reads and Kafka's varints, shared by the compiled kernels.
#
# Every multi-byte integer in a Kafka log is big-endian (Java's ByteBuffer default). Callers
# check bounds before reading: these helpers trust their pointer.

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t


cdef inline uint16_t be_u16(const uint8_t *p) noexcept nogil:
    return (<uint16_t>p[0] << 8) | p[1]


cdef inline uint32_t be_u32(const uint8_t *p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline uint64_t be_u64(const uint8_t *p) noexcept nogil:
    return (<uint64_t>be_u32(p) << 32) | be_u32(p + 4)


cdef inline int16_t be_i16(const uint8_t *p) noexcept nogil:
    return <int16_t>be_u16(p)


cdef inline int32_t be_i32(const uint8_t *p) noexcept nogil:
    return <int32_t>be_u32(p)


cdef inline int64_t be_i64(const uint8_t *p) noexcept nogil:
    return <int64_t>be_u64(p)


cdef inline int64_t read_varint(const uint8_t *buf, int64_t pos, int64_t end, int max_bytes,
                                int64_t *value) noexcept nogil:
    """Zigzag LEB128 (``ByteUtils.readVarint`` for max_bytes 5, ``readVarlong`` for 10).

    Stores the value and returns the next position; -1 when the bytes run out, -2 when the
    varint is longer than ``max_bytes``. A 5-byte varint keeps Java's int semantics: bits past
    31 are dropped before the zigzag."""
    cdef uint64_t raw = 0
    cdef uint64_t b
    cdef uint32_t v32
    cdef int i
    for i in range(max_bytes):
        if pos + i >= end:
            value[0] = 0
            return -1
        b = buf[pos + i]
        raw |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if max_bytes == 5:
                v32 = <uint32_t>raw
                value[0] = <int32_t>((v32 >> 1) ^ (0u - (v32 & 1u)))
            else:
                value[0] = <int64_t>((raw >> 1) ^ (0u - (raw & 1u)))
            return pos + i + 1
    value[0] = 0
    return -2
