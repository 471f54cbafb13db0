"""The compiled record kernel: the records of many v2 batches -> column arrays, in one call.

It produces *positions*, not objects: key/value/header spans into the source buffer (a window
of the segment for uncompressed batches, an inflated buffer otherwise), which renderers slice
and Arrow builders gather without per-record Python work.

It validates exactly what ``DefaultRecord.readFrom`` and ``DefaultRecordBatch.RecordIterator``
validate, and must agree with the construct reference (:mod:`segtools.formats.batch`): the
differential tests hold it to that.
"""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t
from libc.string cimport memcpy, memset

from segtools.decode.bytes cimport read_varint

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
    cdef int64_t b, r, h, pos, end, rec_start, p, body_end
    cdef int64_t length, ts_delta, off_delta, key_len, value_len, header_count, hk, hv
    cdef int64_t key_pos, value_pos, headers_pos
    cdef int8_t code
    cdef bint broken
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
                rec_start = pos
                p = read_varint(data, pos, end, 5, &length)
                if p < 0:
                    code = ERR_TRUNCATED if p == -1 else ERR_VARINT_TOO_LONG
                    break
                body_end = p + length
                if length < 0 or body_end > end:
                    code = ERR_TRUNCATED
                    break
                p += 1  # attributes (unused)
                broken = True
                while True:  # one pass; `break` = a varint inside the body ran out or overran
                    p = read_varint(data, p, body_end, 10, &ts_delta)
                    if p < 0:
                        break
                    p = read_varint(data, p, body_end, 5, &off_delta)
                    if p < 0:
                        break
                    p = read_varint(data, p, body_end, 5, &key_len)
                    if p < 0:
                        break
                    key_pos = p
                    if key_len >= 0:
                        p += key_len
                    else:
                        key_len = -1
                    if p > body_end:
                        break
                    p = read_varint(data, p, body_end, 5, &value_len)
                    if p < 0:
                        break
                    value_pos = p
                    if value_len >= 0:
                        p += value_len
                    else:
                        value_len = -1
                    if p > body_end:
                        break
                    p = read_varint(data, p, body_end, 5, &header_count)
                    if p < 0:
                        break
                    if header_count < 0:
                        code = ERR_NEGATIVE_HEADER_COUNT
                        break
                    headers_pos = p
                    for h in range(header_count):
                        p = read_varint(data, p, body_end, 5, &hk)
                        if p < 0:
                            break
                        if hk < 0:
                            code = ERR_NEGATIVE_HEADER_KEY
                            break
                        p += hk
                        if p > body_end:
                            p = -1
                            break
                        p = read_varint(data, p, body_end, 5, &hv)
                        if p < 0:
                            break
                        if hv > 0:
                            p += hv
                        if p > body_end:
                            p = -1
                            break
                    if code != OK or p < 0:
                        break
                    broken = False
                    break
                if broken:
                    if code == OK:
                        code = ERR_RECORD_LENGTH
                    break
                if p != body_end:
                    code = ERR_RECORD_LENGTH
                    break
                out_offset[n] = base_offsets[b] + off_delta
                if log_append_time[b]:
                    out_timestamp[n] = max_timestamps[b]
                else:
                    out_timestamp[n] = base_timestamps[b] + ts_delta
                out_key_pos[n] = key_pos
                out_key_len[n] = key_len
                out_value_pos[n] = value_pos
                out_value_len[n] = value_len
                out_headers_pos[n] = headers_pos
                out_headers_count[n] = <int32_t>header_count
                out_batch[n] = <int32_t>b
                out_offset_delta[n] = <int32_t>off_delta
                n += 1
                pos = body_end
            if code != OK:
                err_code[b] = code
                err_pos[b] = rec_start
            elif pos != end:
                err_code[b] = ERR_TRAILING_BYTES
                err_pos[b] = pos
    return n


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
          uint8_t[:, ::1] out):
    """Arrow binary views of the spans ``buf[pos[i]:pos[i]+lengths[i]]``, 16 bytes each into
    ``out``: the int32 length, then the bytes themselves when they fit in 12, else their first
    4 bytes, buffer index 0 and the int32 offset ``pos[i]`` (``buf`` is the array's one data
    buffer, below 2 GiB); a null or empty span is all zero. No value byte is copied beyond the
    12 of a short one."""
    cdef const uint8_t *src = &buf[0] if buf.shape[0] else NULL
    cdef uint8_t *dst
    cdef int64_t i, ln, p
    cdef int32_t word
    with nogil:
        for i in range(pos.shape[0]):
            dst = &out[i, 0]
            memset(dst, 0, 16)
            ln = lengths[i]
            if ln <= 0:
                continue
            p = pos[i]
            word = <int32_t>ln
            memcpy(dst, &word, 4)
            if ln <= 12:
                memcpy(dst + 4, src + p, ln)
            else:
                memcpy(dst + 4, src + p, 4)
                word = <int32_t>p
                memcpy(dst + 12, &word, 4)


def varint(const uint8_t[::1] buf, int64_t pos, int64_t end, int max_bytes):
    """``(value, next position)`` of the varint at ``pos`` (5 bytes: an int, 10: a long); the
    position is -1 when the bytes run out and -2 when the varint is too long (tests)."""
    cdef int64_t value = 0
    cdef int64_t nxt = read_varint(&buf[0] if buf.shape[0] else NULL, pos, end, max_bytes,
                                   &value)
    return value, nxt
