"""The compiled record kernel: the records of many v2 batches -> column arrays, in one call.

It produces *positions*, not objects: key/value/header spans into the source buffer (a window
of the segment for uncompressed batches, an inflated buffer otherwise), which renderers slice
and Arrow builders gather without per-record Python work.

It validates exactly what ``DefaultRecord.readFrom`` and ``DefaultRecordBatch.RecordIterator``
validate, and must agree with the construct reference (:mod:`segtools.formats.batch`): the
differential tests hold it to that.
"""

from libc.stdint cimport INT64_MIN, int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from segtools.decode.bytes cimport read_varint


cdef extern from *:
    void __builtin_prefetch(const void *addr) nogil

cdef extern from "checksum.h":
    uint32_t segtools_crc32c_raw(uint32_t crc, const uint8_t *p, size_t n) nogil
    void segtools_crc_init(int allow_hw)

segtools_crc_init(1)

# Error codes, stable: decode/chunks.py maps them to messages (ERROR_MESSAGES).
cpdef enum:
    OK = 0
    ERR_TRUNCATED = 1
    ERR_VARINT_TOO_LONG = 2
    ERR_RECORD_LENGTH = 3
    ERR_NEGATIVE_HEADER_COUNT = 4
    ERR_NEGATIVE_HEADER_KEY = 5
    ERR_TRAILING_BYTES = 6
    ERR_NEGATIVE_COUNT = 7

#: The smallest possible v2 record: length, attributes, timestamp delta, offset delta, key
#: length, value length, header count: one byte each.
MIN_RECORD_SIZE = 7


cdef inline int64_t quick_varint(const uint8_t *data, int64_t pos, int64_t end, int max_bytes,
                           int64_t *value) noexcept nogil:
    """:func:`read_varint`, with the one- and two-byte varints that make up nearly every field
    of a record (lengths below 8 KiB, small deltas) decoded inline."""
    cdef uint64_t raw
    if pos < end:
        raw = data[pos]
        if raw < 0x80:
            value[0] = <int64_t>(raw >> 1) ^ -<int64_t>(raw & 1)
            return pos + 1
        if pos + 1 < end and data[pos + 1] < 0x80:
            raw = (raw & 0x7F) | (<uint64_t>data[pos + 1] << 7)
            value[0] = <int64_t>(raw >> 1) ^ -<int64_t>(raw & 1)
            return pos + 2
    return read_varint(data, pos, end, max_bytes, value)


cdef struct Rec:
    int64_t ts_delta
    int64_t off_delta
    int64_t key_pos
    int64_t key_len
    int64_t value_pos
    int64_t value_len
    int64_t headers_pos
    int64_t header_count


cdef inline int64_t nullable_bytes(const uint8_t *data, int64_t p, int64_t body_end,
                                   int64_t *pos, int64_t *length) noexcept nogil:
    """A record's key, value or header value: a varint length, then that many bytes, or none
    for a negative length (null, ``length`` set to -1). Returns where the field ends, or -1
    when the length is not a varint or the bytes run past the record's end."""
    p = quick_varint(data, p, body_end, 5, length)
    if p < 0:
        return -1
    pos[0] = p
    if length[0] >= 0:
        p += length[0]
    else:
        length[0] = -1
    if p > body_end:
        return -1
    return p


cdef inline int64_t parse_record(const uint8_t *data, int64_t pos, int64_t end, Rec *r,
                                 int8_t *code) noexcept nogil:
    """One record at ``pos`` (``DefaultRecord.readFrom``): fills ``r`` and returns where the
    record ends, or -1 with ``code`` set when it breaks a rule (the fault is the record's
    first byte). Both kernels below decode through it, so they validate alike."""
    cdef int64_t p, body_end, length, h, hk, hv, hvp
    p = quick_varint(data, pos, end, 5, &length)
    if p < 0:
        code[0] = ERR_TRUNCATED if p == -1 else ERR_VARINT_TOO_LONG
        return -1
    body_end = p + length
    if length < 0 or body_end > end:
        code[0] = ERR_TRUNCATED
        return -1
    p += 1  # attributes (unused)
    p = quick_varint(data, p, body_end, 10, &r.ts_delta)
    if p < 0:
        code[0] = ERR_RECORD_LENGTH
        return -1
    p = quick_varint(data, p, body_end, 5, &r.off_delta)
    if p < 0:
        code[0] = ERR_RECORD_LENGTH
        return -1
    p = nullable_bytes(data, p, body_end, &r.key_pos, &r.key_len)
    if p < 0:
        code[0] = ERR_RECORD_LENGTH
        return -1
    p = nullable_bytes(data, p, body_end, &r.value_pos, &r.value_len)
    if p < 0:
        code[0] = ERR_RECORD_LENGTH
        return -1
    p = quick_varint(data, p, body_end, 5, &r.header_count)
    if p < 0:
        code[0] = ERR_RECORD_LENGTH
        return -1
    if r.header_count < 0:
        code[0] = ERR_NEGATIVE_HEADER_COUNT
        return -1
    r.headers_pos = p
    for h in range(r.header_count):
        p = quick_varint(data, p, body_end, 5, &hk)
        if p < 0:
            code[0] = ERR_RECORD_LENGTH
            return -1
        if hk < 0:
            code[0] = ERR_NEGATIVE_HEADER_KEY
            return -1
        p += hk
        if p > body_end:
            code[0] = ERR_RECORD_LENGTH
            return -1
        p = nullable_bytes(data, p, body_end, &hvp, &hv)
        if p < 0:
            code[0] = ERR_RECORD_LENGTH
            return -1
    if p != body_end:
        code[0] = ERR_RECORD_LENGTH
        return -1
    return body_end


def decode_v2(const uint8_t[::1] buf, const int64_t[::1] starts, const int64_t[::1] ends,
              const int64_t[::1] counts, const int64_t[::1] base_offsets,
              const int64_t[::1] base_timestamps, const int8_t[::1] log_append_time,
              const int64_t[::1] max_timestamps, int64_t[::1] out_offset,
              int64_t[::1] out_timestamp, int64_t[::1] out_key_pos, int64_t[::1] out_key_len,
              int64_t[::1] out_value_pos, int64_t[::1] out_value_len,
              int64_t[::1] out_headers_pos, int32_t[::1] out_headers_count,
              int32_t[::1] out_batch, int32_t[::1] out_offset_delta, int8_t[::1] err_code,
              int64_t[::1] err_pos):
    """Decode the records of every batch ``b`` found in ``buf[starts[b]:ends[b]]``.

    Writes one row per record into the ``out_*`` arrays (sized by ``record_capacity``) and
    returns the number of rows. A batch that breaks a rule gets ``err_code[b]`` and the byte at
    fault in ``err_pos[b]``; the records before the fault are kept, as Kafka's iterator would
    have returned them before throwing.
    """
    cdef const uint8_t *data = &buf[0] if buf.shape[0] else NULL
    cdef int64_t n = 0
    cdef int64_t b, r, pos, end, nxt
    cdef int8_t code
    cdef Rec rec
    with nogil:
        for b in range(starts.shape[0]):
            pos = starts[b]
            end = ends[b]
            err_code[b] = OK
            err_pos[b] = -1
            if counts[b] < 0:  # DefaultRecordBatch: "Found invalid record count"
                err_code[b] = ERR_NEGATIVE_COUNT
                err_pos[b] = pos
                continue
            code = OK
            for r in range(counts[b]):
                nxt = parse_record(data, pos, end, &rec, &code)
                if nxt < 0:
                    break
                out_offset[n] = base_offsets[b] + rec.off_delta
                if log_append_time[b]:
                    out_timestamp[n] = max_timestamps[b]
                else:
                    out_timestamp[n] = base_timestamps[b] + rec.ts_delta
                out_key_pos[n] = rec.key_pos
                out_key_len[n] = rec.key_len
                out_value_pos[n] = rec.value_pos
                out_value_len[n] = rec.value_len
                out_headers_pos[n] = rec.headers_pos
                out_headers_count[n] = <int32_t>rec.header_count
                out_batch[n] = <int32_t>b
                out_offset_delta[n] = <int32_t>rec.off_delta
                n += 1
                pos = nxt
            if code != OK:
                err_code[b] = code
                err_pos[b] = pos
            elif pos != end:
                err_code[b] = ERR_TRAILING_BYTES
                err_pos[b] = pos
    return n


#: Largest |ms| whose microseconds still fit an int64 (Arrow timestamps are microseconds).
cdef int64_t MAX_MS = 9223372036854775
cdef int64_t NO_TIMESTAMP = -1
#: Bytes the record kernel asks the CPU to fetch ahead of the record it decodes.
cdef int64_t PREFETCH_AHEAD = 4096
#: Timestamp attribute bit (``TimestampType.LOG_APPEND_TIME`` when set).
cdef int16_t LOG_APPEND_TIME_FLAG = 0x08
#: ``crc_valid`` of a batch whose CRC the walk left to the record kernel
#: (``segtools.decode.walk.CRC_PENDING``).
cdef int8_t CRC_PENDING = -2
#: Bytes from a v2 batch's CRC coverage (its attributes) to its first record: the CRC covers
#: ``[records start - CRC_BEFORE_RECORDS, batch end)`` (``DefaultRecordBatch``).
cdef int64_t CRC_BEFORE_RECORDS = 40
#: Bytes of one Arrow binary view.
cdef int64_t VIEW_SIZE = 16
#: Bytes of a batch the CRC checks at a time, kept ahead of the records being decoded: the
#: decode then reads from the nearest cache what the CRC has just read, instead of a whole
#: 16-60 KiB batch being checked first and its first records fetched again from further out.
#: A multiple of the CRC's three 256-byte lanes (``checksum.h``), and past the 512-bit
#: folding's shortest range. Measured on the benchmark machine (CPU per 256 MiB, one core):
#: 16 x 1 KiB 19.5 ms against 21.3 for the whole batch first, 500 x 100 B alike (45); slices
#: of 12 KiB were no better, and prefetching the next slice while the records decode was
#: slower (25 and 54 ms). With the folding CRC (27 Nov, late), 1,536 bytes rather than 3,072:
#: 500 x 100 B 35.7-36.6 ms against 38.5-38.7 (768: 39.4-40.8; 6,144: 40.1-41.5).
cdef int64_t CRC_SLICE = 1536


cdef inline void write_view(uint8_t *dst, const uint8_t *src, int64_t size, int64_t pos,
                            int64_t ln, int64_t view_base) noexcept nogil:
    """One Arrow binary view (16 bytes): the int32 length, then the bytes when they fit in
    12, else their first 4 bytes, buffer index 0 and the int32 offset into the buffer that
    starts at ``view_base``; a null or empty span is all zero. Written as two 8-byte words
    (little-endian, as Arrow's layout is on every CPU this runs on); a short value is read
    as 12 bytes and masked when the buffer has them, so no copy has a variable length."""
    cdef uint64_t lo, hi
    cdef uint32_t word
    if ln <= 0:
        memset(dst, 0, 16)
        return
    if ln > 12:
        memcpy(&word, src + pos, 4)
        lo = <uint64_t>ln | (<uint64_t>word << 32)
        hi = <uint64_t><uint32_t>(pos - view_base) << 32
    elif pos + 12 <= size:
        memcpy(&lo, src + pos, 8)
        memcpy(&word, src + pos + 8, 4)
        hi = word
        if ln < 8:
            lo &= (<uint64_t>1 << (8 * ln)) - 1
            hi = 0
        else:
            hi &= (<uint64_t>1 << (8 * (ln - 8))) - 1
        hi = (lo >> 32) | (hi << 32)
        lo = <uint64_t>ln | (lo << 32)
    else:  # the last bytes of the buffer: copied as they are
        memset(dst, 0, 16)
        word = <uint32_t>ln
        memcpy(dst, &word, 4)
        memcpy(dst + 4, src + pos, ln)
        return
    memcpy(dst, &lo, 8)
    memcpy(dst + 8, &hi, 8)


def arrow_v2(const uint8_t[::1] buf, const int64_t[::1] starts, const int64_t[::1] ends,
             const int32_t[::1] counts, const int64_t[::1] base_offsets,
             const int64_t[::1] base_timestamps, const int16_t[::1] attributes,
             const int64_t[::1] max_timestamps, int64_t view_base,
             int64_t[::1] out_offset, int64_t[::1] out_micros, uint8_t[::1] micros_valid,
             uint8_t[:, ::1] key_views, uint8_t[::1] key_valid,
             uint8_t[:, ::1] value_views, uint8_t[::1] value_valid,
             int64_t[::1] out_headers_pos, int32_t[::1] out_headers_count,
             int32_t[::1] out_records, int8_t[::1] err_code, int64_t[::1] err_pos,
             int64_t[::1] stats, const uint32_t[::1] crc=None, int8_t[::1] crc_valid=None,
             int64_t first=0, int64_t stop=-1, int64_t n0=0):
    """The records of every batch ``b`` in ``buf[starts[b]:ends[b]]``, written straight into
    Arrow buffers in one pass: offsets, timestamps in microseconds with their validity bits
    (``-1`` and values beyond int64 microseconds are null), and keys and values as binary
    views (validity bits alongside) whose long values point into ``buf[view_base:]``: no
    payload byte is copied beyond a view's 12 inline ones.

    Validity arrays must come zeroed. ``out_records[b]`` is how many records of batch ``b``
    were decoded; errors as :func:`decode_v2`. Header sections are located only when
    ``out_headers_pos`` has room. ``stats`` receives (adds to what it holds) the null counts
    of timestamps, keys and values and the key and value bytes. Returns the number of
    records.

    ``first``, ``stop`` and ``n0`` decode only the batches ``[first, stop)`` (``stop`` -1:
    to the last) as records ``n0`` on: a chunk decoded in steps, on two threads one after
    the other, gives what one call gives (validity bytes are shared across the cut: the
    steps must not overlap in time).

    With ``crc`` and ``crc_valid`` (the batches' stored CRCs and their check, one per batch),
    a batch whose check is ``CRC_PENDING`` is checked here, a slice (``CRC_SLICE``) ahead of
    the records being decoded, then to its end: its bytes are read from memory once, for
    both (``ensureValid``'s CRC-32C from the attributes to the end: the 40 bytes before
    ``starts[b]`` and the records, whatever the records turn out to be). 1 when it matches,
    else 0."""
    cdef const uint8_t *data = &buf[0] if buf.shape[0] else NULL
    cdef int64_t size = buf.shape[0]
    cdef bint headers = out_headers_pos.shape[0] > 0
    cdef bint check = crc is not None and crc_valid is not None
    cdef int64_t n = n0
    cdef int64_t last = starts.shape[0] if stop < 0 or stop > starts.shape[0] else stop
    cdef int64_t b, r, pos, end, nxt, ms
    cdef int64_t ahead = 0
    cdef int64_t ts_nulls = 0, key_nulls = 0, value_nulls = 0, key_bytes = 0, value_bytes = 0
    cdef int8_t code
    cdef bint lat, ok, cached
    cdef int64_t crc_at = 0, crc_end = 0, step
    cdef uint32_t crc_register = 0
    # Validity bits gather in a register and reach memory once per eight records: a store
    # per record to the same byte made each record wait for the one before.
    cdef uint32_t bit, micros_bits = 0, key_bits = 0, value_bits = 0
    # Raw pointers, held in registers: the compiler cannot keep a memoryview's data pointer
    # across a store through another pointer (with -fno-strict-aliasing any store may alias
    # it), so indexing the views reloaded each pointer after every store.
    cdef int64_t *offset_out = &out_offset[0]
    cdef int64_t *micros_out = &out_micros[0]
    cdef uint8_t *key_out = &key_views[0, 0]
    cdef uint8_t *value_out = &value_views[0, 0]
    cdef Rec rec
    if key_views.shape[1] != VIEW_SIZE or value_views.shape[1] != VIEW_SIZE:
        raise ValueError("binary views are 16 bytes each")
    with nogil:
        for b in range(first, last):
            pos = starts[b]
            end = ends[b]
            err_code[b] = OK
            err_pos[b] = -1
            out_records[b] = 0
            cached = False
            if check and crc_valid[b] == CRC_PENDING and pos >= CRC_BEFORE_RECORDS and \
                    end <= size and end >= pos:
                cached = True
                crc_register = 0xFFFFFFFFu
                crc_at = pos - CRC_BEFORE_RECORDS
                crc_end = end
            lat = (attributes[b] & LOG_APPEND_TIME_FLAG) != 0
            code = OK
            # DefaultRecordBatch: "Found invalid record count" (no record decoded)
            for r in range(counts[b] if counts[b] > 0 else 0):
                if cached and crc_at < crc_end and crc_at - pos < CRC_SLICE // 2:
                    step = crc_end - crc_at if crc_end - crc_at < CRC_SLICE else CRC_SLICE
                    crc_register = segtools_crc32c_raw(crc_register, data + crc_at, step)
                    crc_at += step
                # Each record's place depends on the previous one's length: one cache miss
                # after another where records are long. Asking for the lines ahead lets the
                # misses overlap (16 x 1 KiB from a 16 MiB chunk out of the caches: 52
                # instead of 92 ns a record; one-record batches 36 instead of 48). Not after
                # the CRC has read the batch: its records are in cache, and prefetches there
                # slow the fused pass (16 x 1 KiB: 0.020 s per 256 MiB without, 0.025 with).
                if not cached:
                    if ahead < pos:
                        ahead = pos
                    while ahead < pos + PREFETCH_AHEAD and ahead < size:
                        __builtin_prefetch(data + ahead)
                        ahead += 64
                nxt = parse_record(data, pos, end, &rec, &code)
                if nxt < 0:
                    break
                offset_out[n] = base_offsets[b] + rec.off_delta
                if lat:
                    ms = max_timestamps[b]
                else:
                    ms = <int64_t>(<uint64_t>base_timestamps[b] + <uint64_t>rec.ts_delta)
                ok = ms != NO_TIMESTAMP and (ms == INT64_MIN or (-MAX_MS <= ms <= MAX_MS))
                bit = 1u << (n & 7)
                if ok:
                    micros_out[n] = <int64_t>(<uint64_t>ms * 1000u)
                    micros_bits |= bit
                else:
                    micros_out[n] = 0
                    ts_nulls += 1
                write_view(key_out + VIEW_SIZE * n, data, size, rec.key_pos, rec.key_len,
                           view_base)
                if rec.key_len >= 0:
                    key_bits |= bit
                    key_bytes += rec.key_len
                else:
                    key_nulls += 1
                write_view(value_out + VIEW_SIZE * n, data, size, rec.value_pos,
                           rec.value_len, view_base)
                if rec.value_len >= 0:
                    value_bits |= bit
                    value_bytes += rec.value_len
                else:
                    value_nulls += 1
                if headers:
                    out_headers_pos[n] = rec.headers_pos
                    out_headers_count[n] = <int32_t>rec.header_count
                n += 1
                pos = nxt
                if n & 7 == 0:  # a byte of each validity array is complete
                    micros_valid[(n - 1) >> 3] |= <uint8_t>micros_bits
                    key_valid[(n - 1) >> 3] |= <uint8_t>key_bits
                    value_valid[(n - 1) >> 3] |= <uint8_t>value_bits
                    micros_bits = key_bits = value_bits = 0
            if cached:  # the bytes past a faulty record, or all of them without records
                crc_register = segtools_crc32c_raw(crc_register, data + crc_at, crc_end - crc_at)
                crc_valid[b] = (crc_register ^ 0xFFFFFFFFu) == crc[b]
            if counts[b] < 0:
                err_code[b] = ERR_NEGATIVE_COUNT
                err_pos[b] = pos
                continue
            out_records[b] = <int32_t>r if code != OK else <int32_t>counts[b]
            if code != OK:
                err_code[b] = code
                err_pos[b] = pos
            elif pos != end:
                err_code[b] = ERR_TRAILING_BYTES
                err_pos[b] = pos
        if n & 7:  # the last, partial byte (the next step's records OR theirs into it)
            micros_valid[n >> 3] |= <uint8_t>micros_bits
            key_valid[n >> 3] |= <uint8_t>key_bits
            value_valid[n >> 3] |= <uint8_t>value_bits
    stats[0] += ts_nulls
    stats[1] += key_nulls
    stats[2] += value_nulls
    stats[3] += key_bytes
    stats[4] += value_bytes
    return n


def views_to_binary(const uint8_t[::1] buf, int64_t view_base, const uint8_t[:, ::1] views,
                    uint8_t[::1] out, int32_t[::1] offsets):
    """Copy the values of binary views (written by :func:`arrow_v2` or :func:`views`) back to
    back into ``out`` with Arrow's int32 ``offsets``: a plain ``binary`` column in one pass
    (a null's view is all zero, so it is empty)."""
    cdef const uint8_t *src = &buf[0] if buf.shape[0] else NULL
    cdef uint8_t *dst = &out[0] if out.shape[0] else NULL
    cdef int64_t o = 0
    cdef int64_t i
    cdef int32_t ln, at
    with nogil:
        offsets[0] = 0
        for i in range(views.shape[0]):
            memcpy(&ln, &views[i, 0], 4)
            if ln > 12:
                memcpy(&at, &views[i, 12], 4)
                memcpy(dst + o, src + view_base + at, ln)
                o += ln
            elif ln > 0:
                memcpy(dst + o, &views[i, 4], ln)
                o += ln
            offsets[i + 1] = <int32_t>o
    return o


def capacity(const int64_t[::1] starts, const int64_t[::1] ends, const int32_t[::1] counts,
             int64_t min_record):
    """Rows to allocate for a chunk: each batch's declared count, but never more records than
    its bytes can hold (``min_record`` bytes each), so a lying count cannot size a buffer."""
    cdef int64_t total = 0
    cdef int64_t b, c, room
    with nogil:
        for b in range(starts.shape[0]):
            c = counts[b] if counts[b] > 0 else 0
            room = (ends[b] - starts[b]) // min_record
            total += c if c < room else room
    return total


def decode_headers(const uint8_t[::1] buf, const int64_t[::1] headers_pos,
                   const int32_t[::1] headers_count, int64_t[::1] out_key_pos,
                   int64_t[::1] out_key_len, int64_t[::1] out_value_pos,
                   int64_t[::1] out_value_len, int32_t[::1] out_record):
    """Second pass over already-validated header sections: one row per header."""
    cdef const uint8_t *data = &buf[0] if buf.shape[0] else NULL
    cdef int64_t size = buf.shape[0]
    cdef int64_t n = 0
    cdef int64_t r, h, p, k_len, v_len
    with nogil:
        for r in range(headers_pos.shape[0]):
            p = headers_pos[r]
            for h in range(headers_count[r]):
                p = read_varint(data, p, size, 5, &k_len)
                out_key_pos[n] = p
                out_key_len[n] = k_len
                p += k_len
                p = read_varint(data, p, size, 5, &v_len)
                out_value_pos[n] = p
                if v_len >= 0:
                    out_value_len[n] = v_len
                    p += v_len
                else:
                    out_value_len[n] = -1
                out_record[n] = <int32_t>r
                n += 1
    return n


def gather(const uint8_t[::1] buf, const int64_t[::1] pos, const int64_t[::1] lengths,
           uint8_t[::1] out, int32_t[::1] offsets):
    """Copy the spans ``buf[pos[i]:pos[i]+lengths[i]]`` back to back into ``out`` (nulls are
    empty) and write Arrow-style int32 ``offsets``; used to build binary columns."""
    cdef const uint8_t *src = &buf[0] if buf.shape[0] else NULL
    cdef uint8_t *dst = &out[0] if out.shape[0] else NULL
    cdef int64_t o = 0
    cdef int64_t i, ln
    with nogil:
        offsets[0] = 0
        for i in range(pos.shape[0]):
            ln = lengths[i]
            if ln > 0:
                memcpy(dst + o, src + pos[i], ln)
                o += ln
            offsets[i + 1] = <int32_t>o
    return o


def views(const uint8_t[::1] buf, const int64_t[::1] pos, const int64_t[::1] lengths,
          int64_t view_base, uint8_t[:, ::1] out):
    """Arrow binary views of the spans ``buf[pos[i]:pos[i]+lengths[i]]``, 16 bytes each into
    ``out`` (:func:`write_view`; long values point into ``buf[view_base:]``, which must be
    under 2 GiB long). No value byte is copied beyond the 12 of a short one."""
    cdef const uint8_t *src = &buf[0] if buf.shape[0] else NULL
    cdef int64_t i
    with nogil:
        for i in range(pos.shape[0]):
            write_view(&out[i, 0], src, buf.shape[0], pos[i], lengths[i], view_base)


def varint(const uint8_t[::1] buf, int64_t pos, int64_t end, int max_bytes):
    """``(value, next position)`` of the varint at ``pos`` (5 bytes: an int, 10: a long); the
    position is -1 when the bytes run out and -2 when the varint is too long (tests)."""
    cdef int64_t value = 0
    cdef int64_t nxt = read_varint(&buf[0] if buf.shape[0] else NULL, pos, end, max_bytes,
                                   &value)
    return value, nxt
