"""Compiled JSON Lines for ``dump --deep --format jsonl``: batch and record lines, in order.

The output is byte-identical to ``render.dumps(batch.to_json())`` and
``render.dumps(render.record_json(record, mode))`` (``json.dumps(ensure_ascii=False,
separators=(",", ":"))``); a test holds the two to that on every fixture and on generated
hostile records. A record the renderer cannot write byte-identically (a header key, or a
utf8-mode key/value, that is not plain ASCII) is handed back to Python, in its place.

One call renders many batches, each batch line followed by its records' lines, and stops when
the output buffer is full, when a record needs Python, or after a batch the caller flagged
(findings to print after it); the caller writes the bytes and calls again with the same state.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from segtools.decode.bytes cimport be_i16, be_i32, read_varint

cpdef enum:
    MODE_BASE64 = 0
    MODE_HEX = 1
    MODE_UTF8 = 2

cpdef enum:
    DONE = 0           # every batch rendered
    FULL = 1           # the output buffer cannot take the next line
    PYTHON_RECORD = 2  # state[1] is a record Python must render (then continue at state[1]+1)
    BATCH_END = 3      # the flagged batch state[0]-1 is complete (print its findings)

cdef const char *B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
cdef const char *HEXD = b"0123456789abcdef"

cdef enum:
    FIXED_BYTES = 256       # a record's line beyond 6 per data byte: text, numbers, control
    PER_HEADER_BYTES = 40
    BATCH_LINE_BYTES = 640


cdef inline const char *_codec_name(int codec) noexcept nogil:
    """``CompressionType`` names (callers write ``unknown-<id>`` past zstd)."""
    if codec == 0:
        return b"none"
    if codec == 1:
        return b"gzip"
    if codec == 2:
        return b"snappy"
    if codec == 3:
        return b"lz4"
    return b"zstd"


cdef inline const char *_control_name(int ctype) noexcept nogil:
    """``ControlRecordType`` names for ids 0-6."""
    if ctype == 0:
        return b"ABORT"
    if ctype == 1:
        return b"COMMIT"
    if ctype == 2:
        return b"LEADER_CHANGE"
    if ctype == 3:
        return b"SNAPSHOT_HEADER"
    if ctype == 4:
        return b"SNAPSHOT_FOOTER"
    if ctype == 5:
        return b"KRAFT_VERSION"
    return b"KRAFT_VOTERS"


cdef inline int64_t _put(uint8_t *out, int64_t o, const char *s) noexcept nogil:
    cdef int64_t i = 0
    while s[i]:
        out[o + i] = <uint8_t>s[i]
        i += 1
    return o + i


cdef inline int64_t _put_int(uint8_t *out, int64_t o, int64_t v) noexcept nogil:
    cdef uint64_t m
    cdef char tmp[24]
    cdef int n = 0
    if v == 0:
        out[o] = 48
        return o + 1
    if v < 0:
        out[o] = 45
        o += 1
        m = <uint64_t>(-(v + 1)) + 1  # the magnitude without overflowing int64's minimum
    else:
        m = <uint64_t>v
    while m > 0:
        tmp[n] = <char>(48 + m % 10)
        m //= 10
        n += 1
    while n > 0:
        n -= 1
        out[o] = <uint8_t>tmp[n]
        o += 1
    return o


cdef inline int64_t _put_bool(uint8_t *out, int64_t o, bint v) noexcept nogil:
    return _put(out, o, b"true" if v else b"false")


cdef inline bint _ascii(const uint8_t *p, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if p[i] >= 128:
            return False
    return True


cdef inline int64_t _put_json_ascii(uint8_t *out, int64_t o, const uint8_t *p,
                                    int64_t n) noexcept nogil:
    """A JSON string of ASCII bytes, escaped as ``json.dumps(ensure_ascii=False)`` does."""
    cdef int64_t i
    cdef uint8_t c
    out[o] = 34
    o += 1
    for i in range(n):
        c = p[i]
        if c < 32 or c == 34 or c == 92:
            out[o] = 92
            if c == 8:
                out[o + 1] = 98
            elif c == 9:
                out[o + 1] = 116
            elif c == 10:
                out[o + 1] = 110
            elif c == 12:
                out[o + 1] = 102
            elif c == 13:
                out[o + 1] = 114
            elif c == 34 or c == 92:
                out[o + 1] = c
            else:
                out[o + 1] = 117  # \u00XX
                out[o + 2] = 48
                out[o + 3] = 48
                out[o + 4] = <uint8_t>HEXD[c >> 4]
                out[o + 5] = <uint8_t>HEXD[c & 15]
                o += 4
            o += 2
        else:
            out[o] = c
            o += 1
    out[o] = 34
    return o + 1


cdef inline int64_t _put_bytes(uint8_t *out, int64_t o, const uint8_t *p, int64_t n,
                               int mode) noexcept nogil:
    cdef int64_t i = 0
    cdef uint32_t v
    if n < 0:
        return _put(out, o, b"null")
    if mode == MODE_UTF8:
        return _put_json_ascii(out, o, p, n)
    out[o] = 34
    o += 1
    if mode == MODE_HEX:
        for i in range(n):
            out[o] = <uint8_t>HEXD[p[i] >> 4]
            out[o + 1] = <uint8_t>HEXD[p[i] & 15]
            o += 2
    else:
        while i + 3 <= n:
            v = (<uint32_t>p[i] << 16) | (<uint32_t>p[i + 1] << 8) | p[i + 2]
            out[o] = <uint8_t>B64[(v >> 18) & 63]
            out[o + 1] = <uint8_t>B64[(v >> 12) & 63]
            out[o + 2] = <uint8_t>B64[(v >> 6) & 63]
            out[o + 3] = <uint8_t>B64[v & 63]
            o += 4
            i += 3
        if n - i == 1:
            v = <uint32_t>p[i] << 16
            out[o] = <uint8_t>B64[(v >> 18) & 63]
            out[o + 1] = <uint8_t>B64[(v >> 12) & 63]
            out[o + 2] = 61
            out[o + 3] = 61
            o += 4
        elif n - i == 2:
            v = (<uint32_t>p[i] << 16) | (<uint32_t>p[i + 1] << 8)
            out[o] = <uint8_t>B64[(v >> 18) & 63]
            out[o + 1] = <uint8_t>B64[(v >> 12) & 63]
            out[o + 2] = <uint8_t>B64[(v >> 6) & 63]
            out[o + 3] = 61
            o += 4
    out[o] = 34
    return o + 1


cdef class Batches:
    """Typed views of the batch-table columns the batch line needs."""

    cdef const int64_t[::1] position
    cdef const int64_t[::1] size
    cdef const int8_t[::1] magic
    cdef const int16_t[::1] attributes
    cdef const int64_t[::1] base_offset
    cdef const int64_t[::1] last_offset
    cdef const int32_t[::1] count
    cdef const int64_t[::1] base_timestamp
    cdef const int64_t[::1] max_timestamp
    cdef const int64_t[::1] producer_id
    cdef const int16_t[::1] producer_epoch
    cdef const int32_t[::1] base_sequence
    cdef const int32_t[::1] leader_epoch
    cdef const uint32_t[::1] crc
    cdef const int8_t[::1] crc_valid

    def __init__(self, table):
        self.position = table.position
        self.size = table.size
        self.magic = table.magic
        self.attributes = table.attributes
        self.base_offset = table.base_offset
        self.last_offset = table.last_offset
        self.count = table.count
        self.base_timestamp = table.base_timestamp
        self.max_timestamp = table.max_timestamp
        self.producer_id = table.producer_id
        self.producer_epoch = table.producer_epoch
        self.base_sequence = table.base_sequence
        self.leader_epoch = table.leader_epoch
        self.crc = table.crc
        self.crc_valid = table.crc_valid


cdef class Records:
    """Typed views of a chunk's record columns (spans into ``data``)."""

    cdef const uint8_t[::1] data
    cdef const int64_t[::1] offset
    cdef const int64_t[::1] timestamp
    cdef const int64_t[::1] key_pos
    cdef const int64_t[::1] key_len
    cdef const int64_t[::1] value_pos
    cdef const int64_t[::1] value_len
    cdef const int64_t[::1] headers_pos
    cdef const int32_t[::1] headers_count
    cdef const int32_t[::1] batch
    cdef const int32_t[::1] offset_delta

    def __init__(self, columns):
        self.data = columns.data
        self.offset = columns.offset
        self.timestamp = columns.timestamp
        self.key_pos = columns.key_pos
        self.key_len = columns.key_len
        self.value_pos = columns.value_pos
        self.value_len = columns.value_len
        self.headers_pos = columns.headers_pos
        self.headers_count = columns.headers_count
        self.batch = columns.batch
        self.offset_delta = columns.offset_delta


cdef int64_t _batch_line(uint8_t *out, int64_t o, Batches t, int64_t j) noexcept nogil:
    """``render.dumps(Batch.to_json())`` for row ``j``."""
    cdef int magic = t.magic[j]
    cdef int attrs = t.attributes[j]
    cdef int codec = attrs & 7
    cdef int64_t seq, span
    o = _put(out, o, b'{"type":"batch","base_offset":')
    o = _put_int(out, o, t.base_offset[j])
    o = _put(out, o, b',"last_offset":')
    o = _put_int(out, o, t.last_offset[j])
    o = _put(out, o, b',"count":')
    if magic == 2:
        o = _put_int(out, o, t.count[j])
    else:
        o = _put(out, o, b"null")
    o = _put(out, o, b',"position":')
    o = _put_int(out, o, t.position[j])
    o = _put(out, o, b',"size":')
    o = _put_int(out, o, t.size[j])
    o = _put(out, o, b',"magic":')
    o = _put_int(out, o, magic)
    o = _put(out, o, b',"compression":"')
    if codec <= 4:
        o = _put(out, o, _codec_name(codec))
    else:
        o = _put(out, o, b"unknown-")
        o = _put_int(out, o, codec)
    o = _put(out, o, b'","crc":')
    o = _put_int(out, o, t.crc[j])
    o = _put(out, o, b',"crc_valid":')
    if t.crc_valid[j] < 0:
        o = _put(out, o, b"null")
    else:
        o = _put_bool(out, o, t.crc_valid[j] == 1)
    o = _put(out, o, b',"timestamp_type":"')
    if magic == 0:
        o = _put(out, o, b"NoTimestampType")
    elif attrs & 0x08:
        o = _put(out, o, b"LogAppendTime")
    else:
        o = _put(out, o, b"CreateTime")
    o = _put(out, o, b'","max_timestamp":')
    o = _put_int(out, o, t.max_timestamp[j])
    o = _put(out, o, b',"producer_id":')
    o = _put_int(out, o, t.producer_id[j])
    o = _put(out, o, b',"producer_epoch":')
    o = _put_int(out, o, t.producer_epoch[j])
    o = _put(out, o, b',"base_sequence":')
    o = _put_int(out, o, t.base_sequence[j])
    o = _put(out, o, b',"last_sequence":')
    if t.base_sequence[j] < 0:
        o = _put_int(out, o, -1)
    else:
        span = t.last_offset[j] - t.base_offset[j]
        seq = (<int64_t>t.base_sequence[j] + span) % (<int64_t>1 << 31)
        if seq < 0:
            seq += <int64_t>1 << 31
        o = _put_int(out, o, seq)
    o = _put(out, o, b',"partition_leader_epoch":')
    o = _put_int(out, o, t.leader_epoch[j])
    o = _put(out, o, b',"is_transactional":')
    o = _put_bool(out, o, magic == 2 and (attrs & 0x10) != 0)
    o = _put(out, o, b',"is_control":')
    o = _put_bool(out, o, magic == 2 and (attrs & 0x20) != 0)
    o = _put(out, o, b',"delete_horizon_ms":')
    if magic == 2 and (attrs & 0x40):
        o = _put_int(out, o, t.base_timestamp[j])
    else:
        o = _put(out, o, b"null")
    out[o] = 125
    out[o + 1] = 10
    return o + 2


cdef int64_t _record_need(Records r, int64_t i, int mode, bint *plain) noexcept nogil:
    """Bytes record ``i`` may need, and whether it renders byte-identically here."""
    cdef const uint8_t *data = &r.data[0] if r.data.shape[0] else NULL
    cdef int64_t size = r.data.shape[0]
    cdef int64_t need = FIXED_BYTES
    cdef int64_t p, k_len, v_len
    cdef int32_t h
    plain[0] = True
    if mode == MODE_UTF8:
        if r.key_len[i] > 0 and not _ascii(data + r.key_pos[i], r.key_len[i]):
            plain[0] = False
        if r.value_len[i] > 0 and not _ascii(data + r.value_pos[i], r.value_len[i]):
            plain[0] = False
    if r.key_len[i] > 0:
        need += 6 * r.key_len[i]
    if r.value_len[i] > 0:
        need += 6 * r.value_len[i]
    p = r.headers_pos[i]
    for h in range(r.headers_count[i]):
        p = read_varint(data, p, size, 5, &k_len)
        if not _ascii(data + p, k_len):
            plain[0] = False
        need += PER_HEADER_BYTES + 6 * k_len
        p += k_len
        p = read_varint(data, p, size, 5, &v_len)
        if v_len > 0:
            if mode == MODE_UTF8 and not _ascii(data + p, v_len):
                plain[0] = False
            need += 6 * v_len
            p += v_len
    return need


cdef int64_t _record_line(uint8_t *out, int64_t o, Records r, int64_t i, Batches t,
                          int mode) noexcept nogil:
    """``render.dumps(render.record_json(record, mode))`` for record ``i``."""
    cdef const uint8_t *data = &r.data[0] if r.data.shape[0] else NULL
    cdef int64_t size = r.data.shape[0]
    cdef int64_t j = r.batch[i]
    cdef int64_t p, k_len, v_len, seq
    cdef int32_t h
    o = _put(out, o, b'{"type":"record","offset":')
    o = _put_int(out, o, r.offset[i])
    o = _put(out, o, b',"timestamp":')
    o = _put_int(out, o, r.timestamp[i])
    o = _put(out, o, b',"key":')
    o = _put_bytes(out, o, data + r.key_pos[i], r.key_len[i], mode)
    o = _put(out, o, b',"value":')
    o = _put_bytes(out, o, data + r.value_pos[i], r.value_len[i], mode)
    o = _put(out, o, b',"headers":[')
    p = r.headers_pos[i]
    for h in range(r.headers_count[i]):
        if h:
            out[o] = 44
            o += 1
        p = read_varint(data, p, size, 5, &k_len)
        o = _put(out, o, b'{"key":')
        o = _put_json_ascii(out, o, data + p, k_len)
        p += k_len
        p = read_varint(data, p, size, 5, &v_len)
        o = _put(out, o, b',"value":')
        o = _put_bytes(out, o, data + p, v_len, mode)
        if v_len > 0:
            p += v_len
        out[o] = 125
        o += 1
    o = _put(out, o, b'],"sequence":')
    if t.base_sequence[j] < 0:
        seq = -1
    else:
        seq = (<int64_t>t.base_sequence[j] + r.offset_delta[i]) % (<int64_t>1 << 31)
        if seq < 0:
            seq += <int64_t>1 << 31
    o = _put_int(out, o, seq)
    if t.magic[j] == 2 and (t.attributes[j] & 0x20):
        o = _control(out, o, data, r, i)
    out[o] = 125
    out[o + 1] = 10
    return o + 2


cdef int64_t _control(uint8_t *out, int64_t o, const uint8_t *data, Records r,
                      int64_t i) noexcept nogil:
    """``,"control":{...}``: ``ControlRecordType.parse`` (keys under 4 bytes or with a negative
    version are INVALID; unknown types UNKNOWN) and ``EndTransactionMarker`` (COMMIT/ABORT with
    a value of at least 6 bytes carry the coordinator epoch)."""
    cdef int64_t kl = r.key_len[i]
    cdef int64_t vl = r.value_len[i]
    cdef int ctype
    o = _put(out, o, b',"control":{"type":"')
    if kl < 4 or be_i16(data + r.key_pos[i]) < 0:
        o = _put(out, o, b'INVALID"}')
        return o
    ctype = be_i16(data + r.key_pos[i] + 2)
    if ctype < 0 or ctype > 6:
        o = _put(out, o, b'UNKNOWN"}')
        return o
    o = _put(out, o, _control_name(ctype))
    out[o] = 34
    o += 1
    if ctype <= 1 and vl >= 6:
        o = _put(out, o, b',"coordinator_epoch":')
        o = _put_int(out, o, be_i32(data + r.value_pos[i] + 2))
    out[o] = 125
    return o + 1


def render(Batches t, Records r, const uint8_t[::1] keep, const uint8_t[::1] stop_after,
           int mode, uint8_t[::1] out, int64_t[::1] state):
    """Render batches ``state[0]..`` (each batch line, then its kept records from
    ``state[1]``) into ``out``. ``state[2]`` is 1 once the current batch's line is written.
    ``keep[i]`` selects records; ``stop_after[j]`` makes the call return after batch ``j``.
    Returns ``(bytes written, DONE | FULL | PYTHON_RECORD | BATCH_END)`` and updates ``state``.
    """
    cdef uint8_t *o_ptr = &out[0]
    cdef int64_t cap = out.shape[0]
    cdef int64_t o = 0
    cdef int64_t j = state[0]
    cdef int64_t i = state[1]
    cdef int64_t line_done = state[2]
    cdef int64_t nb = t.position.shape[0]
    cdef int64_t nr = r.offset.shape[0]
    cdef int64_t need
    cdef bint plain
    cdef int why = DONE
    with nogil:
        while j < nb:
            if not line_done:
                if o + BATCH_LINE_BYTES > cap:
                    why = FULL
                    break
                o = _batch_line(o_ptr, o, t, j)
                line_done = 1
            while i < nr and r.batch[i] == j:
                if not keep[i]:
                    i += 1
                    continue
                need = _record_need(r, i, mode, &plain)
                if not plain:
                    why = PYTHON_RECORD
                    break
                if o + need > cap:
                    why = FULL
                    break
                o = _record_line(o_ptr, o, r, i, t, mode)
                i += 1
            if why != DONE:
                break
            j += 1
            line_done = 0
            if stop_after[j - 1]:
                why = BATCH_END
                break
    state[0] = j
    state[1] = i
    state[2] = line_done
    return o, why


def need_bytes(Records r, int64_t i, int mode) -> int:
    """Bytes record ``i`` needs (for sizing a buffer that must hold one large record)."""
    cdef bint plain
    return _record_need(r, i, mode, &plain)
