"""Avro binary to JSON text, many values per call: the payload room's compiled transcoder.

A schema is compiled once (``segtools/payloads/avro.py``) into a table of nodes; this loop walks
each value's bytes by that table and writes the JSON that ``avro.plain`` renders from fastavro's
datum, byte for byte (a differential test holds the two together), with no Python object per
value: the Arrow column's buffer is written directly. Every read is bounds-checked against the
value's own end, nesting is capped, and so is what one value may expand to, so hostile bytes
end as an error for that value and the next value is read.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.math cimport isinf, isnan
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

import numpy as np

cimport numpy as cnp

cnp.import_array()

cdef extern from "Python.h":
    char* PyOS_double_to_string(double val, char format_code, int precision, int flags,
                                int *ptype) except NULL
    void PyMem_Free(void *p)
    int Py_DTSF_ADD_DOT_0

# node kinds (segtools/payloads/avro.py declares the same numbers)
cdef enum:
    K_NULL = 0
    K_BOOLEAN = 1
    K_INT = 2
    K_LONG = 3
    K_FLOAT = 4
    K_DOUBLE = 5
    K_BYTES = 6
    K_STRING = 7
    K_FIXED = 8
    K_ENUM = 9
    K_RECORD = 10
    K_ARRAY = 11
    K_MAP = 12
    K_UNION = 13
    K_DECIMAL_BYTES = 14
    K_DECIMAL_FIXED = 15
    K_DATE = 16
    K_TIME_MILLIS = 17
    K_TIME_MICROS = 18
    K_TS_MILLIS = 19
    K_TS_MICROS = 20
    K_LTS_MILLIS = 21
    K_LTS_MICROS = 22
    K_UUID = 23

#: Nesting deeper than this is refused (a recursive schema's data could nest without end).
cdef int MAX_DEPTH = 128

# why a value failed (the messages are in avro.py)
cdef enum:
    E_OK = 0
    E_SHORT = 1
    E_VARINT = 2
    E_UTF8 = 3
    E_INDEX = 4
    E_DEPTH = 5
    E_SIZE = 6
    E_RANGE = 7
    E_TRAILING = 8
    E_PYTHON = 9
    E_COUNT = 10
    E_BUDGET = 11

cdef const char* HEX = b"0123456789abcdef"
cdef const char* B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


cdef struct Out:
    char* buf
    Py_ssize_t length
    Py_ssize_t cap


cdef struct In:
    const uint8_t* data
    Py_ssize_t pos
    Py_ssize_t end
    int err
    Py_ssize_t value_start_out   # where the current value's text began in the output
    Py_ssize_t max_out           # the most one value may expand to


cdef class Program:
    """A compiled schema: ``nodes`` (kind, a, b) rows, ``children`` (node per record field or
    union branch), ``names`` (the const of each record field), ``consts`` (pre-rendered JSON
    fragments: field names with their colon, enum symbols as strings), and Python helpers for
    the rare conversions (decimals, UUIDs)."""

    cdef int64_t[:, ::1] nodes
    cdef int64_t[::1] children
    cdef int64_t[::1] names
    cdef bytes consts
    cdef int64_t[::1] const_offsets
    cdef object decimal_text
    cdef object uuid_text
    cdef public int root

    def __init__(self, nodes, children, names, bytes consts, const_offsets, int root,
                 decimal_text, uuid_text):
        self.nodes = np.ascontiguousarray(nodes, np.int64)
        self.children = np.ascontiguousarray(children, np.int64)
        self.names = np.ascontiguousarray(names, np.int64)
        self.consts = consts
        self.const_offsets = np.ascontiguousarray(const_offsets, np.int64)
        self.root = root
        self.decimal_text = decimal_text
        self.uuid_text = uuid_text


cdef inline int grow(Out* out, In* src, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap
    cdef char* fresh
    if out.length + need <= out.cap:
        return 0
    if out.length + need - src.value_start_out > src.max_out:
        src.err = E_SIZE
        return 1
    cap = out.cap * 2
    while cap < out.length + need:
        cap *= 2
    fresh = <char*>realloc(out.buf, cap)
    if fresh == NULL:
        raise MemoryError()
    out.buf = fresh
    out.cap = cap
    return 0


cdef inline int put(Out* out, In* src, const char* text, Py_ssize_t n) except -1:
    if grow(out, src, n):
        return 1
    memcpy(out.buf + out.length, text, n)
    out.length += n
    return 0


cdef inline int put_char(Out* out, In* src, char c) except -1:
    if grow(out, src, 1):
        return 1
    out.buf[out.length] = c
    out.length += 1
    return 0


cdef inline int read_long(In* src, int64_t* value) noexcept:
    """A zigzag varint of at most 10 bytes (Avro's int and long)."""
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if src.pos >= src.end:
            src.err = E_SHORT
            return 1
        b = src.data[src.pos]
        src.pos += 1
        raw |= (<uint64_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
        if shift > 63:
            src.err = E_VARINT
            return 1
    value[0] = <int64_t>(raw >> 1) ^ -(<int64_t>(raw & 1))
    return 0


cdef int put_long(Out* out, In* src, int64_t v) except -1:
    cdef char tmp[24]
    cdef int n = 0
    cdef uint64_t u
    cdef int i
    if v < 0:
        u = <uint64_t>0 - <uint64_t>v
    else:
        u = <uint64_t>v
    while True:
        tmp[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    if grow(out, src, n + 1):
        return 1
    if v < 0:
        out.buf[out.length] = 45
        out.length += 1
    for i in range(n):
        out.buf[out.length + i] = tmp[n - 1 - i]
    out.length += n
    return 0


cdef int put_padded(Out* out, In* src, int64_t v, int width) except -1:
    cdef char tmp[24]
    cdef int i
    for i in range(width):
        tmp[width - 1 - i] = <char>(48 + v % 10)
        v //= 10
    return put(out, src, tmp, width)


cdef int put_double(Out* out, In* src, double v) except -1:
    """Python's ``repr`` of a float (what ``json.dumps`` writes), NaN and infinities as the
    strings the Python rendering gives them."""
    cdef char* text
    cdef Py_ssize_t n
    if isnan(v):
        return put(out, src, b'"NaN"', 5)
    if isinf(v):
        return put(out, src, b'"Infinity"', 10) if v > 0 else put(out, src, b'"-Infinity"', 11)
    text = PyOS_double_to_string(v, b'r', 0, Py_DTSF_ADD_DOT_0, NULL)
    n = 0
    while text[n] != 0:
        n += 1
    try:
        return put(out, src, text, n)
    finally:
        PyMem_Free(text)


cdef inline int utf8_ok(const uint8_t* s, Py_ssize_t n) noexcept:
    """Well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF), as Python's
    decoder demands."""
    cdef Py_ssize_t i = 0
    cdef uint8_t c
    cdef uint32_t cp
    cdef int more, j
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        if 0xC2 <= c <= 0xDF:
            more = 1
            cp = c & 0x1F
        elif 0xE0 <= c <= 0xEF:
            more = 2
            cp = c & 0x0F
        elif 0xF0 <= c <= 0xF4:
            more = 3
            cp = c & 0x07
        else:
            return 0
        if i + more >= n:
            return 0
        for j in range(more):
            i += 1
            if i >= n or (s[i] & 0xC0) != 0x80:
                return 0
            cp = (cp << 6) | (s[i] & 0x3F)
        i += 1
        if (more == 2 and (cp < 0x800 or 0xD800 <= cp <= 0xDFFF)) or \
                (more == 3 and (cp < 0x10000 or cp > 0x10FFFF)):
            return 0
    return 1


cdef inline char short_escape(uint8_t c) noexcept:
    """The letter after the backslash of ``json.dumps``' two-character escapes; 0 for the
    control characters it writes as ``\\u00XX``."""
    if c == 34 or c == 92:  # " and \
        return <char>c
    if c == 10:
        return 110  # n
    if c == 13:
        return 114  # r
    if c == 9:
        return 116  # t
    if c == 8:
        return 98  # b
    if c == 12:
        return 102  # f
    return 0


cdef int put_json_string(Out* out, In* src, const uint8_t* s, Py_ssize_t n) except -1:
    """A JSON string as ``json.dumps(ensure_ascii=False)`` writes it."""
    cdef Py_ssize_t i
    cdef uint8_t c
    cdef char e
    if not utf8_ok(s, n):
        src.err = E_UTF8
        return 1
    if grow(out, src, n + 2):
        return 1
    out.buf[out.length] = 34
    out.length += 1
    for i in range(n):
        c = s[i]
        if c >= 0x20 and c != 34 and c != 92:
            if grow(out, src, 1):
                return 1
            out.buf[out.length] = <char>c
            out.length += 1
            continue
        e = short_escape(c)
        if e:
            if put_char(out, src, 92) or put_char(out, src, e):
                return 1
        elif put(out, src, b'\\u00', 4) or put_char(out, src, HEX[c >> 4]) or \
                put_char(out, src, HEX[c & 15]):
            return 1
    return put_char(out, src, 34)


cdef int put_base64(Out* out, In* src, const uint8_t* s, Py_ssize_t n) except -1:
    cdef Py_ssize_t i = 0
    cdef uint32_t v
    if grow(out, src, 4 * ((n + 2) // 3) + 2):
        return 1
    out.buf[out.length] = 34
    out.length += 1
    while i + 3 <= n:
        v = (<uint32_t>s[i] << 16) | (<uint32_t>s[i + 1] << 8) | s[i + 2]
        out.buf[out.length] = B64[(v >> 18) & 63]
        out.buf[out.length + 1] = B64[(v >> 12) & 63]
        out.buf[out.length + 2] = B64[(v >> 6) & 63]
        out.buf[out.length + 3] = B64[v & 63]
        out.length += 4
        i += 3
    if n - i:  # one or two bytes left: padded with "="
        v = <uint32_t>s[i] << 16
        if n - i == 2:
            v |= <uint32_t>s[i + 1] << 8
        out.buf[out.length] = B64[(v >> 18) & 63]
        out.buf[out.length + 1] = B64[(v >> 12) & 63]
        out.buf[out.length + 2] = B64[(v >> 6) & 63] if n - i == 2 else 61
        out.buf[out.length + 3] = 61
        out.length += 4
    out.buf[out.length] = 34
    out.length += 1
    return 0


cdef inline int64_t floor_div(int64_t a, int64_t b) noexcept:
    cdef int64_t q = a // b
    if (a % b != 0) and ((a < 0) != (b < 0)):
        q -= 1
    return q


cdef int put_year(Out* out, In* src, int64_t y) except -1:
    """A year as ISO-8601 writes it, and Java's ``LocalDate``/``Instant`` print it: four
    digits for 0..9999, else signed (``+10000``, ``-0001``; year 0 is 1 BC)."""
    if 0 <= y <= 9999:
        return put_padded(out, src, y, 4)
    if y > 9999:
        return put_char(out, src, 43) or put_long(out, src, y)
    if y >= -9999:
        return put_char(out, src, 45) or put_padded(out, src, -y, 4)
    return put_long(out, src, y)


cdef int put_date(Out* out, In* src, int64_t days) except -1:
    """``date.isoformat()`` of days since 1970-01-01, the proleptic Gregorian calendar of any
    year (a date past Python's 1..9999 is still a datum: a sentinel such as Integer.MAX_VALUE
    is shown as the date it names, ``+5881580-07-11``, as Java's ``LocalDate`` prints it)."""
    cdef int64_t z, era, doe, yoe, y, doy, mp, d, m
    z = days + 719468
    era = floor_div(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    if m <= 2:
        y += 1
    return put_year(out, src, y) or put_char(out, src, 45) or \
        put_padded(out, src, m, 2) or put_char(out, src, 45) or put_padded(out, src, d, 2)


cdef int put_clock(Out* out, In* src, int64_t micros_of_day) except -1:
    """``time.isoformat()``: HH:MM:SS, then .ffffff when there are microseconds."""
    cdef int64_t seconds = micros_of_day // 1000000
    cdef int64_t micros = micros_of_day % 1000000
    if put_padded(out, src, seconds // 3600, 2) or put_char(out, src, 58) or \
            put_padded(out, src, (seconds // 60) % 60, 2) or put_char(out, src, 58) or \
            put_padded(out, src, seconds % 60, 2):
        return 1
    if micros:
        return put_char(out, src, 46) or put_padded(out, src, micros, 6)
    return 0


cdef int put_timestamp(Out* out, In* src, int64_t v, int64_t per_day, bint utc) except -1:
    """An ISO-8601 timestamp as ``datetime.isoformat()`` (``Z`` after a UTC one) of ``v``
    units since the epoch, ``per_day`` of them a day (milliseconds or microseconds), over the
    whole long's range (Long.MIN_VALUE included: no product here can overflow)."""
    cdef int64_t days = v / per_day  # C division: toward zero
    cdef int64_t rest = v % per_day
    if rest < 0:
        rest += per_day
        days -= 1
    if per_day == 86400000:
        rest *= 1000
    if put_char(out, src, 34) or put_date(out, src, days) or put_char(out, src, 84) or \
            put_clock(out, src, rest):
        return 1
    if utc and put_char(out, src, 90):
        return 1
    return put_char(out, src, 34)


cdef int put_python_text(Out* out, In* src, object text) except -1:
    cdef bytes raw = (<str>text).encode("utf-8")
    return put_json_string(out, src, <const uint8_t*>raw, len(raw))


cdef int value(Program p, int64_t node, In* src, Out* out, int depth) except -1:
    cdef int64_t kind = p.nodes[node, 0]
    cdef int64_t a = p.nodes[node, 1]
    cdef int64_t b = p.nodes[node, 2]
    cdef int64_t v, count, i, size, k, scaled
    cdef Py_ssize_t start
    cdef float f
    cdef double dbl
    cdef uint32_t u32
    cdef uint64_t u64
    if depth > MAX_DEPTH:
        src.err = E_DEPTH
        return 1
    if kind == K_NULL:
        return put(out, src, b"null", 4)
    if kind == K_BOOLEAN:
        if src.pos >= src.end:
            src.err = E_SHORT
            return 1
        v = src.data[src.pos]
        src.pos += 1
        if v > 1:
            src.err = E_RANGE
            return 1
        return put(out, src, b"true", 4) if v else put(out, src, b"false", 5)
    if kind == K_INT or kind == K_LONG:
        if read_long(src, &v):
            return 1
        if kind == K_INT and (v < -2147483648 or v > 2147483647):
            src.err = E_RANGE
            return 1
        return put_long(out, src, v)
    if kind == K_FLOAT:
        if src.end - src.pos < 4:
            src.err = E_SHORT
            return 1
        u32 = (<uint32_t>src.data[src.pos]) | (<uint32_t>src.data[src.pos + 1] << 8) | \
            (<uint32_t>src.data[src.pos + 2] << 16) | (<uint32_t>src.data[src.pos + 3] << 24)
        memcpy(&f, &u32, 4)
        src.pos += 4
        return put_double(out, src, <double>f)
    if kind == K_DOUBLE:
        if src.end - src.pos < 8:
            src.err = E_SHORT
            return 1
        u64 = 0
        for i in range(8):
            u64 |= (<uint64_t>src.data[src.pos + i]) << (8 * i)
        memcpy(&dbl, &u64, 8)
        src.pos += 8
        return put_double(out, src, dbl)
    if kind == K_BYTES or kind == K_STRING or kind == K_DECIMAL_BYTES or kind == K_UUID:
        if read_long(src, &size):
            return 1
        if size < 0 or size > src.end - src.pos:
            src.err = E_SHORT
            return 1
        start = src.pos
        src.pos += size
        if kind == K_STRING:
            return put_json_string(out, src, src.data + start, size)
        if kind == K_BYTES:
            return put_base64(out, src, src.data + start, size)
        return python_value(p, kind, b, src.data + start, size, src, out)
    if kind == K_FIXED or kind == K_DECIMAL_FIXED:
        if a > src.end - src.pos:
            src.err = E_SHORT
            return 1
        start = src.pos
        src.pos += a
        if kind == K_FIXED:
            return put_base64(out, src, src.data + start, a)
        return python_value(p, kind, b, src.data + start, a, src, out)
    if kind == K_ENUM:
        if read_long(src, &v):
            return 1
        if v < 0 or v >= b:
            src.err = E_INDEX
            return 1
        return put_const(p, a + v, src, out)
    if kind == K_RECORD:
        if put_char(out, src, 123):
            return 1
        for i in range(b):
            if i and put_char(out, src, 44):
                return 1
            if put_const(p, p.names[a + i], src, out) or \
                    value(p, p.children[a + i], src, out, depth + 1):
                return 1
        return put_char(out, src, 125)
    if kind == K_ARRAY or kind == K_MAP:
        if put_char(out, src, 91 if kind == K_ARRAY else 123):
            return 1
        k = 0
        while True:
            if read_long(src, &count):
                return 1
            if count == 0:
                break
            if count < 0:  # a block with its byte size after the count
                count = -count
                if read_long(src, &size):
                    return 1
            if count > src.end - src.pos + 1 and (kind == K_MAP or p.nodes[a, 0] != K_NULL):
                src.err = E_COUNT  # every item but null takes at least one byte
                return 1
            for i in range(count):
                if k and put_char(out, src, 44):
                    return 1
                k += 1
                if kind == K_MAP:
                    if read_long(src, &size):
                        return 1
                    if size < 0 or size > src.end - src.pos:
                        src.err = E_SHORT
                        return 1
                    start = src.pos
                    src.pos += size
                    if put_json_string(out, src, src.data + start, size) or \
                            put_char(out, src, 58):
                        return 1
                if value(p, a, src, out, depth + 1):
                    return 1
        return put_char(out, src, 93 if kind == K_ARRAY else 125)
    if kind == K_UNION:
        if read_long(src, &v):
            return 1
        if v < 0 or v >= b:
            src.err = E_INDEX
            return 1
        return value(p, p.children[a + v], src, out, depth + 1)
    # Every int or long is a valid datum of a date, time or timestamp (a sentinel such as
    # Long.MAX_VALUE for "never" is common), so none loses its record to a finding: a date or
    # timestamp of any year is written in ISO-8601's expanded form (put_year); a time that is
    # not a time of day as its number, as Avro's JSON encoding writes a logical type's value.
    if kind == K_DATE:
        if read_long(src, &v):
            return 1
        if v < -2147483648 or v > 2147483647:
            src.err = E_RANGE
            return 1
        return put_char(out, src, 34) or put_date(out, src, v) or put_char(out, src, 34)
    if kind == K_TIME_MILLIS or kind == K_TIME_MICROS:
        if read_long(src, &v):
            return 1
        if kind == K_TIME_MILLIS and (v < -2147483648 or v > 2147483647):
            src.err = E_RANGE  # an int's encoding holds no more
            return 1
        scaled = v * 1000 if kind == K_TIME_MILLIS else v
        if scaled < 0 or scaled >= 86400000000:
            return put_long(out, src, v)
        return put_char(out, src, 34) or put_clock(out, src, scaled) or put_char(out, src, 34)
    if kind == K_TS_MILLIS or kind == K_TS_MICROS or kind == K_LTS_MILLIS or \
            kind == K_LTS_MICROS:
        if read_long(src, &v):
            return 1
        return put_timestamp(out, src, v, 86400000 if kind == K_TS_MILLIS or
                             kind == K_LTS_MILLIS else 86400000000,
                             kind == K_TS_MILLIS or kind == K_TS_MICROS)
    src.err = E_INDEX
    return 1


cdef int put_const(Program p, int64_t index, In* src, Out* out) except -1:
    cdef int64_t lo = p.const_offsets[index]
    cdef int64_t hi = p.const_offsets[index + 1]
    cdef const char* base = p.consts
    return put(out, src, base + lo, hi - lo)


cdef int python_value(Program p, int64_t kind, int64_t arg, const uint8_t* s, Py_ssize_t n,
                      In* src, Out* out) except -1:
    """The rare conversions done by Python: a decimal's digits, a UUID's normal form."""
    cdef bytes raw = PyBytes_FromStringAndSize(<const char*>s, n)
    try:
        if kind == K_UUID:
            text = p.uuid_text(raw)
        else:
            text = p.decimal_text(raw, arg)
    except (ValueError, UnicodeDecodeError):
        src.err = E_PYTHON
        return 1
    return put_python_text(out, src, text)


def transcode(Program program, const uint8_t[::1] data, const int64_t[::1] starts,
              const int64_t[::1] ends, Py_ssize_t max_value_bytes, Py_ssize_t max_total_bytes):
    """JSON text of each value ``data[starts[i]:ends[i]]``: (the texts' bytes, their offsets
    (n + 1, int32 as Arrow's string arrays hold them), and each value's error code, 0 for
    none; a failed value's text is empty). Once the texts reach ``max_total_bytes`` the values
    left are refused (``E_BUDGET``): each value is capped at ``max_value_bytes``, so the texts
    stay below what an Arrow string array's int32 offsets can hold (32 hostile values of 64
    MiB each raised OverflowError out of the whole read)."""
    cdef Py_ssize_t n = starts.shape[0]
    cdef Out out
    cdef In src
    cdef Py_ssize_t i
    offsets = np.zeros(n + 1, np.int32)
    errors = np.zeros(n, np.int8)
    cdef int32_t[::1] offs = offsets
    cdef int8_t[::1] errs = errors
    out.cap = 1 << 16
    out.length = 0
    out.buf = <char*>malloc(out.cap)
    if out.buf == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            if out.length >= max_total_bytes:
                errs[i] = E_BUDGET
                offs[i + 1] = <int32_t>out.length
                continue
            src.data = &data[0] if data.shape[0] else NULL
            src.pos = starts[i]
            src.end = ends[i]
            src.err = E_OK
            src.value_start_out = out.length
            src.max_out = max_value_bytes
            if src.end > data.shape[0] or src.pos > src.end or src.pos < 0:
                src.err = E_SHORT
            elif value(program, program.root, &src, &out, 0) == 0 and src.pos != src.end:
                src.err = E_TRAILING
            if src.err != E_OK:
                out.length = src.value_start_out
                errs[i] = src.err
            if out.length > 2147483647:
                raise OverflowError("more than 2 GiB of JSON in one call")
            offs[i + 1] = <int32_t>out.length
        return PyBytes_FromStringAndSize(out.buf, out.length), offsets, errors
    finally:
        free(out.buf)
