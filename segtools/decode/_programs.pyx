"""The compiled decoder of Kafka's generated messages: field programs run over many records.

:mod:`segtools.decode.programs` compiles each (schema, version) declared in
:mod:`segtools.formats.internal` into a *field program*: one row of int32 per field, in wire
order (a type code, flags, where its value goes, and for structs and arrays which rows read
their contents). This module interprets those rows in C, a whole window of records per call, and
writes each record's top-level fields into a row of int64 *slots*: numbers as they are, strings,
bytes and arrays as (position, length) spans into the window, so bulk consumers read columns
and build no object per record.

The rules are those of :mod:`segtools.formats.internal.generated` (the reference, itself
mirroring Kafka's ``MessageDataGenerator``), and every read is bounds-checked: a record that
breaks one gets status ``ST_ERROR`` and the caller asks the reference for the message.
Strings are checked to be UTF-8 as the reference's ``str(..., "utf-8")`` checks them.
Interners turn chosen strings (group ids, topics, transactional ids, topic ids) into dense int32
codes; their hash is seeded per process, so crafted collisions cannot be planned.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

from segtools.decode.bytes cimport be_i16, be_i32, be_i64, be_u16, be_u32

# Type codes of a program row (stable: decode/programs.py names them).
cpdef enum:
    OP_INT8 = 1
    OP_INT16 = 2
    OP_INT32 = 3
    OP_INT64 = 4
    OP_UINT16 = 5
    OP_UINT32 = 6
    OP_FLOAT64 = 7
    OP_BOOL = 8
    OP_UUID = 9
    OP_STRING = 10
    OP_BYTES = 11
    OP_ARRAY = 12
    OP_STRUCT = 13
    OP_TAGS = 14

# The columns of a program row.
cpdef enum:
    COL_OP = 0     # type code
    COL_FLAGS = 1
    COL_SLOT = 2   # first output slot (-1: none)
    COL_ELEM = 3   # ARRAY: the element's type code
    COL_SUB = 4    # STRUCT, ARRAY of STRUCT: first row of the sub-program; TAGS: of the tag table
    COL_COUNT = 5  # ... and its number of rows
    COL_TAG = 6    # a tag table row: the field's tag
    WIDTH = 8

cpdef enum:
    F_NULLABLE = 1         # a negative length / count / marker is null
    F_COMPACT = 2          # flexible version: uvarint length + 1
    F_INTERN = 4           # store the string's (or uuid's) interned code, not its position
    F_TAG_VALID = 8        # a tag table row: the tag is valid in this version
    F_PRESENCE_VARINT = 16  # a nullable tagged struct: a uvarint presence marker
    F_FLAT_SUB = 32        # a struct or array of structs whose struct is flat (run_flat)

# How each record's keys and values are framed.
cpdef enum:
    MODE_COORDINATOR = 0      # __consumer_offsets: int16 record type + key, int16 version + value
    MODE_TRANSACTION_LOG = 1  # __transaction_state: int16 version + key, int16 version + value
    MODE_METADATA = 2         # __cluster_metadata: null key; uvarint frame, apiKey, version + value

cpdef enum:
    ST_OK = 0
    ST_ERROR = 1
    ST_SKIP = 2

cpdef enum:
    # The length/count half of a span when the field is not in the record's version (or a
    # tagged field that was not written): the declaration's default applies.
    ABSENT = -2
cdef enum:
    MAX_STRING_LENGTH = 0x7FFF  # ``Readable.readString``: a string's length is an int16


# ---------------------------------------------------------------------------- interning

cdef struct Table:
    int32_t *slots       # open addressing: code + 1, 0 = empty
    uint64_t *hashes     # by code
    int64_t mask
    int64_t count
    uint8_t *arena
    int64_t arena_len
    int64_t arena_cap
    int64_t *starts      # by code: where its bytes start in the arena (starts[count] = end)
    int64_t starts_cap
    uint64_t seed
    bint failed


cdef inline uint64_t hash_bytes(const uint8_t *p, int64_t n, uint64_t seed) noexcept nogil:
    cdef uint64_t h = seed ^ (<uint64_t>n * 0x9E3779B97F4A7C15ULL)
    cdef uint64_t w
    while n >= 8:
        memcpy(&w, p, 8)
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL
        h ^= h >> 31
        p += 8
        n -= 8
    w = 0
    if n:
        memcpy(&w, p, <size_t>n)
    h = (h ^ w) * 0x94D049BB133111EBULL
    h ^= h >> 29
    return h


cdef bint table_grow(Table *t) noexcept nogil:
    cdef int64_t size = (t.mask + 1) * 2
    cdef int32_t *slots = <int32_t *>malloc(size * sizeof(int32_t))
    cdef int64_t i, j
    if slots == NULL:
        return False
    memset(slots, 0, size * sizeof(int32_t))
    for i in range(t.count):
        j = <int64_t>(t.hashes[i] & <uint64_t>(size - 1))
        while slots[j]:
            j = (j + 1) & (size - 1)
        slots[j] = <int32_t>(i + 1)
    free(t.slots)
    t.slots = slots
    t.mask = size - 1
    return True


cdef int32_t intern(Table *t, const uint8_t *p, int64_t n) noexcept nogil:
    """The code of these bytes, adding them if new; -1 when memory ran out."""
    cdef uint64_t h = hash_bytes(p, n, t.seed)
    cdef int64_t j = <int64_t>(h & <uint64_t>t.mask)
    cdef int32_t code
    cdef int64_t start, cap
    cdef void *grown
    while t.slots[j]:
        code = t.slots[j] - 1
        start = t.starts[code]
        if t.hashes[code] == h and t.starts[code + 1] - start == n and \
                memcmp(t.arena + start, p, <size_t>n) == 0:
            return code
        j = (j + 1) & t.mask
    if t.count >= 0x7FFFFFFE:
        t.failed = True
        return -1
    if t.arena_len + n > t.arena_cap:
        cap = t.arena_cap * 2
        while cap < t.arena_len + n:
            cap *= 2
        grown = realloc(t.arena, <size_t>cap)
        if grown == NULL:
            t.failed = True
            return -1
        t.arena = <uint8_t *>grown
        t.arena_cap = cap
    if t.count + 2 > t.starts_cap:
        grown = realloc(t.starts, <size_t>(t.starts_cap * 2) * sizeof(int64_t))
        if grown == NULL:
            t.failed = True
            return -1
        t.starts = <int64_t *>grown
        grown = realloc(t.hashes, <size_t>(t.starts_cap * 2) * sizeof(uint64_t))
        if grown == NULL:
            t.failed = True
            return -1
        t.hashes = <uint64_t *>grown
        t.starts_cap *= 2
    code = <int32_t>t.count
    if n:
        memcpy(t.arena + t.arena_len, p, <size_t>n)
    t.arena_len += n
    t.hashes[code] = h
    t.starts[code + 1] = t.arena_len
    t.slots[j] = code + 1
    t.count += 1
    if t.count * 2 > t.mask + 1 and not table_grow(t):
        t.failed = True
        return -1
    return code


cdef class Interner:
    """Byte strings -> dense codes (0, 1, 2, ... in order of first appearance). Holds each
    distinct string once: as many as the log names, however many records name them."""

    cdef Table t

    def __cinit__(self, uint64_t seed=0):
        self.t.mask = 1023
        self.t.slots = <int32_t *>malloc(1024 * sizeof(int32_t))
        self.t.starts_cap = 1024
        self.t.starts = <int64_t *>malloc(1024 * sizeof(int64_t))
        self.t.hashes = <uint64_t *>malloc(1024 * sizeof(uint64_t))
        self.t.arena_cap = 65536
        self.t.arena = <uint8_t *>malloc(65536)
        if not (self.t.slots and self.t.starts and self.t.hashes and self.t.arena):
            raise MemoryError()
        memset(self.t.slots, 0, 1024 * sizeof(int32_t))
        self.t.starts[0] = 0
        self.t.seed = seed

    def __dealloc__(self):
        free(self.t.slots)
        free(self.t.starts)
        free(self.t.hashes)
        free(self.t.arena)

    def __len__(self):
        return self.t.count

    @property
    def failed(self):
        return bool(self.t.failed)

    def intern(self, const uint8_t[::1] data):
        code = intern(&self.t, &data[0] if data.shape[0] else NULL, data.shape[0])
        if code < 0:
            raise MemoryError("interner")
        return code

    def blobs(self, int64_t first=0):
        """The byte strings of codes ``first``, ``first + 1``, ... as bytes."""
        return [PyBytes_FromStringAndSize(<char *>self.t.arena + self.t.starts[i],
                                          self.t.starts[i + 1] - self.t.starts[i])
                for i in range(first, self.t.count)]

    def texts(self, int64_t first=0):
        """The same, decoded (the decoder only interns strings it checked to be UTF-8)."""
        return [PyUnicode_DecodeUTF8(<char *>self.t.arena + self.t.starts[i],
                                     self.t.starts[i + 1] - self.t.starts[i], NULL)
                for i in range(first, self.t.count)]


# ---------------------------------------------------------------------------- reading

cdef struct Ctx:
    const int32_t *ops
    const uint8_t *d
    Table *strings
    Table *uuids


cdef inline bint utf8_valid(const uint8_t *s, int64_t n) noexcept nogil:
    """Well-formed UTF-8 (Unicode table 3-7), what Python's strict decoder accepts."""
    cdef int64_t i = 0, k
    cdef uint64_t w
    cdef uint8_t c, c1
    while i < n:
        while i + 8 <= n:
            memcpy(&w, s + i, 8)
            if w & 0x8080808080808080ULL:
                break
            i += 8
        if i >= n:
            break
        c = s[i]
        if c < 0x80:
            i += 1
        elif c < 0xC2:
            return False
        elif c < 0xE0:
            if i + 1 >= n or (s[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
        elif c < 0xF5:
            # three bytes below F0, four from it; the second byte's range is narrower after
            # E0 and F0 (no overlong forms), ED (no surrogates) and F4 (nothing past U+10FFFF)
            k = 3 if c < 0xF0 else 4
            if i + k > n:
                return False
            c1 = s[i + 1]
            if (c1 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80 or \
                    (k == 4 and (s[i + 3] & 0xC0) != 0x80):
                return False
            if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 >= 0xA0) or \
                    (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 >= 0x90):
                return False
            i += k
        else:
            return False
    return True


cdef inline int64_t read_uvarint(const uint8_t *d, int64_t pos, int64_t end,
                                 int64_t *out) noexcept nogil:
    """``Reader.uvarint``: at most 5 bytes, kept as an int32 (so it may come out negative);
    returns the next position, -1 when the bytes run out or the varint is too long."""
    cdef uint64_t v = 0
    cdef uint8_t b
    cdef int i
    for i in range(5):
        if pos >= end:
            return -1
        b = d[pos]
        pos += 1
        v |= (<uint64_t>(b & 0x7F)) << (7 * i)
        if not (b & 0x80):
            out[0] = <int64_t><int32_t><uint32_t>(v & 0xFFFFFFFFULL)
            return pos
    return -1


cdef inline int64_t read_length(const uint8_t *d, int64_t pos, int64_t end, bint compact,
                                bint wide, int64_t *n) noexcept nogil:
    """A length or count: uvarint - 1 when compact, else int16 (strings) or int32."""
    cdef int64_t v
    if compact:
        pos = read_uvarint(d, pos, end, &v)
        n[0] = v - 1
        return pos
    if wide:
        if pos + 4 > end:
            return -1
        n[0] = be_i32(d + pos)
        return pos + 4
    if pos + 2 > end:
        return -1
    n[0] = be_i16(d + pos)
    return pos + 2


cdef inline void store2(int64_t *out, int32_t slot, int64_t a, int64_t b) noexcept nogil:
    if out != NULL and slot >= 0:
        out[slot] = a
        out[slot + 1] = b


cdef inline int fixed_width(int32_t code) noexcept nogil:
    if code == OP_INT8 or code == OP_BOOL:
        return 1
    if code == OP_INT16 or code == OP_UINT16:
        return 2
    if code == OP_INT32 or code == OP_UINT32:
        return 4
    if code == OP_INT64 or code == OP_FLOAT64:
        return 8
    if code == OP_UUID:
        return 16
    return 0


cdef inline int64_t read_fixed(int32_t code, const uint8_t *p) noexcept nogil:
    """A fixed-width number of type ``code`` at ``p`` (a FLOAT64 as its bits; not a UUID)."""
    if code == OP_INT8:
        return <int8_t>p[0]
    if code == OP_BOOL:
        return p[0] != 0
    if code == OP_INT16:
        return be_i16(p)
    if code == OP_UINT16:
        return be_u16(p)
    if code == OP_INT32:
        return be_i32(p)
    if code == OP_UINT32:
        return be_u32(p)
    return be_i64(p)  # INT64, FLOAT64


cdef int64_t run_ops(Ctx *c, int64_t first, int64_t count, int64_t pos, int64_t end,
                     int64_t *out) noexcept nogil:
    """Rows ``first .. first + count`` of the program over ``d[pos:end]``: the next position,
    or -1 when the bytes break a rule."""
    cdef int64_t i
    for i in range(first, first + count):
        pos = run_op(c, c.ops + i * WIDTH, pos, end, out)
        if pos < 0:
            return -1
    return pos


cdef inline int64_t read_sized(const uint8_t *d, int64_t pos, int64_t end, int32_t flags,
                               bint wide, int64_t *n) noexcept nogil:
    """The length of a string, bytes or array (``n[0]``, -1 for null) and the position after
    it; -1 when the length breaks a rule: null where the field is not nullable, or longer than
    the bytes left (the reference's guard against absurd counts)."""
    cdef int64_t p = read_length(d, pos, end, flags & F_COMPACT, wide, n)
    if p < 0:
        return -1
    if n[0] < 0:
        return p if flags & F_NULLABLE else -1
    if n[0] > end - p:
        return -1
    return p


cdef int64_t run_scalar(Ctx *c, int32_t code, int32_t flags, int32_t slot, int64_t pos,
                        int64_t end, int64_t *out) noexcept nogil:
    """One value of a non-composite type (also an array element, with ``slot`` -1)."""
    cdef const uint8_t *d = c.d
    cdef int64_t n, p, v
    cdef int w = fixed_width(code)
    cdef int32_t interned
    if w:
        if pos + w > end:
            return -1
        if out != NULL and slot >= 0:
            if code != OP_UUID:
                v = read_fixed(code, d + pos)
            elif flags & F_INTERN:
                v = intern(c.uuids, d + pos, 16)
                if v < 0:
                    return -1
            else:
                v = pos
            out[slot] = v
        return pos + w
    if code == OP_STRING or code == OP_BYTES:
        p = read_sized(d, pos, end, flags, code == OP_BYTES, &n)
        if p < 0:
            return -1
        if n < 0:
            store2(out, slot, p, -1)
            return p
        if code == OP_STRING:
            if n > MAX_STRING_LENGTH or not utf8_valid(d + p, n):
                return -1
            if flags & F_INTERN and out != NULL and slot >= 0:
                interned = intern(c.strings, d + p, n)
                if interned < 0:
                    return -1
                store2(out, slot, interned, n)
                return p + n
        store2(out, slot, p, n)
        return p + n
    return -1


cdef int64_t run_op(Ctx *c, const int32_t *op, int64_t pos, int64_t end,
                    int64_t *out) noexcept nogil:
    cdef int32_t code = op[COL_OP]
    cdef int32_t flags = op[COL_FLAGS]
    cdef int32_t slot = op[COL_SLOT]
    cdef int32_t elem
    cdef const uint8_t *d = c.d
    cdef int64_t p, n, k, start, v, w
    if code == OP_STRUCT:
        p = pos
        if flags & F_NULLABLE:
            if flags & F_PRESENCE_VARINT:
                p = read_uvarint(d, pos, end, &v)
                if p < 0:
                    return -1
                if v <= 0:
                    store2(out, slot, p, -1)
                    return p
            else:
                if pos >= end:
                    return -1
                if <int8_t>d[pos] < 0:
                    store2(out, slot, pos + 1, -1)
                    return pos + 1
                p = pos + 1
        start = p
        p = run_sub(c, op, p, end)
        if p < 0:
            return -1
        store2(out, slot, start, 1)
        return p
    if code == OP_ARRAY:
        p = read_sized(d, pos, end, flags, True, &n)
        if p < 0:
            return -1
        if n < 0:
            store2(out, slot, p, -1)
            return p
        start = p
        elem = op[COL_ELEM]
        w = fixed_width(elem)
        if w:
            if n * w > end - p:
                return -1
            p += n * w
        elif elem == OP_STRUCT:
            for k in range(n):
                p = run_sub(c, op, p, end)
                if p < 0:
                    return -1
        else:
            for k in range(n):
                p = run_scalar(c, elem, flags & F_COMPACT, -1, p, end, NULL)
                if p < 0:
                    return -1
        store2(out, slot, start, n)
        return p
    if code == OP_TAGS:
        return run_tags(c, op, pos, end, out)
    return run_scalar(c, code, flags, slot, pos, end, out)


cdef int64_t run_tags(Ctx *c, const int32_t *op, int64_t pos, int64_t end,
                      int64_t *out) noexcept nogil:
    """A flexible struct's tagged fields: known tags valid in this version are read (their
    value must fill its declared size exactly), unknown ones skipped and counted."""
    cdef const uint8_t *d = c.d
    cdef const int32_t *entry
    cdef int64_t n, k, e, tag, size, q
    cdef int64_t unknown = 0
    cdef int64_t p = read_uvarint(d, pos, end, &n)
    if p < 0 or n < 0 or n > end - p:
        return -1
    for k in range(n):
        p = read_uvarint(d, p, end, &tag)
        if p < 0:
            return -1
        p = read_uvarint(d, p, end, &size)
        if p < 0:
            return -1
        entry = NULL
        for e in range(op[COL_SUB], op[COL_SUB] + op[COL_COUNT]):
            if c.ops[e * WIDTH + COL_TAG] == tag:
                entry = c.ops + e * WIDTH
                break
        if size < 0 or size > end - p:
            return -1
        if entry == NULL:
            unknown += 1
            p += size
            continue
        if not (entry[COL_FLAGS] & F_TAG_VALID):
            return -1
        q = run_op(c, entry, p, p + size, out)
        if q != p + size:
            return -1
        p = q
    store2(out, op[COL_SLOT], pos, unknown)
    return p


# ---------------------------------------------------------------------------- entry points


cdef inline int64_t frame_number(const uint8_t *d, int64_t pos, int64_t end,
                                 int64_t *v) noexcept nogil:
    """``AbstractApiMessageSerde.unsignedIntToShort``: a uvarint that must fit an int16."""
    pos = read_uvarint(d, pos, end, v)
    if pos < 0 or v[0] < 0 or v[0] > 0x7FFF:
        return -1
    return pos


cdef inline void open_ctx(Ctx *c, const int32_t[:, ::1] ops, const uint8_t[::1] buf,
                          Interner strings, Interner uuids):
    """A run's context: the ops, the bytes, and where names are interned (None: nowhere, a
    validity check that stores nothing)."""
    c.ops = &ops[0, 0]
    c.d = &buf[0] if buf.shape[0] else NULL
    c.strings = &strings.t if strings is not None else NULL
    c.uuids = &uuids.t if uuids is not None else NULL


cdef inline int32_t value_program(const int32_t *value_table, int64_t ntypes,
                                  int64_t nversions, int64_t t, int64_t v) noexcept nogil:
    """The program of value type ``t`` at version ``v`` in the ``ntypes`` x ``nversions``
    table; -1 where the schema knows none."""
    if t < 0 or v < 0 or t >= ntypes or v >= nversions:
        return -1
    return value_table[t * nversions + v]


cdef int64_t run_flat(Ctx *c, int64_t first, int64_t count, int64_t pos, int64_t end,
                      int64_t *out) noexcept nogil:
    """:func:`run_ops` for a *flat* program, one of numbers, strings and bytes and its tagged
    fields (no struct or array: an offset commit's key and value, a group's key, a classic
    group's member), ``out`` NULL or not. The same reads and checks, without the dispatch through
    :func:`run_op` and :func:`run_scalar` for the fields most records hold: a non-compact
    string or bytes and the big-endian integers (anything else goes to
    :func:`run_scalar`)."""
    cdef const int32_t *op
    cdef const uint8_t *d = c.d
    cdef int32_t code, flags, slot, interned
    cdef int64_t i, n
    for i in range(first, first + count):
        op = c.ops + i * WIDTH
        code = op[COL_OP]
        flags = op[COL_FLAGS]
        slot = op[COL_SLOT] if out != NULL else -1
        if code == OP_INT64:
            if pos + 8 > end:
                return -1
            if slot >= 0:
                out[slot] = be_i64(d + pos)
            pos += 8
        elif code == OP_INT32:
            if pos + 4 > end:
                return -1
            if slot >= 0:
                out[slot] = be_i32(d + pos)
            pos += 4
        elif code == OP_INT16:
            if pos + 2 > end:
                return -1
            if slot >= 0:
                out[slot] = be_i16(d + pos)
            pos += 2
        elif (code == OP_STRING or code == OP_BYTES) and not (flags & F_COMPACT):
            # ``Readable.readString`` / ``readBytes``: an int16 (string) or int32 (bytes)
            # length, -1 for null where the field may be null, never past the bytes left
            if code == OP_STRING:
                if pos + 2 > end:
                    return -1
                n = be_i16(d + pos)
                pos += 2
            else:
                if pos + 4 > end:
                    return -1
                n = be_i32(d + pos)
                pos += 4
            if n < 0:
                if not (flags & F_NULLABLE):
                    return -1
                store2(out, slot, pos, -1)
                continue
            if n > end - pos:
                return -1
            if code == OP_STRING:
                if n > MAX_STRING_LENGTH or not utf8_valid(d + pos, n):
                    return -1
                if flags & F_INTERN and slot >= 0:
                    interned = intern(c.strings, d + pos, n)
                    if interned < 0:
                        return -1
                    store2(out, slot, interned, n)
                    pos += n
                    continue
            store2(out, slot, pos, n)
            pos += n
        elif code == OP_TAGS:
            pos = run_tags(c, op, pos, end, out)
            if pos < 0:
                return -1
        else:
            pos = run_scalar(c, code, flags, slot, pos, end, out)
            if pos < 0:
                return -1
    return pos


cdef inline int64_t run_sub(Ctx *c, const int32_t *op, int64_t pos,
                            int64_t end) noexcept nogil:
    """The struct a STRUCT or ARRAY row reads (one element of an array), stored nowhere."""
    if op[COL_FLAGS] & F_FLAT_SUB:
        return run_flat(c, op[COL_SUB], op[COL_COUNT], pos, end, NULL)
    return run_ops(c, op[COL_SUB], op[COL_COUNT], pos, end, NULL)


cdef inline bint run_program(Ctx *c, const int32_t *program, const int64_t *defaults,
                             int64_t first, int64_t last, int64_t pos, int64_t end,
                             int64_t *row) noexcept nogil:
    """Prefill slots ``[first, last)`` of ``row`` from the program's defaults, then run it
    (``program`` = first op row, op count, whether it is flat: :func:`run_flat`) over
    ``[pos, end)``: whether it read exactly to ``end``, as a record's key or value must."""
    memcpy(row + first, defaults + first, (last - first) * sizeof(int64_t))
    if program[2]:
        return run_flat(c, program[0], program[1], pos, end, row) == end
    return run_ops(c, program[0], program[1], pos, end, row) == end


def decode(int mode, const uint8_t[::1] buf, const int64_t[::1] key_pos,
           const int64_t[::1] key_len, const int64_t[::1] value_pos,
           const int64_t[::1] value_len, const int8_t[::1] skip, const int32_t[:, ::1] ops,
           const int32_t[:, ::1] programs, const int64_t[:, ::1] defaults,
           const int32_t[::1] key_table, const int32_t[:, ::1] value_table,
           const int8_t[::1] identity, int key_slots, Interner strings, Interner uuids,
           Interner keys, int8_t[::1] status, int16_t[::1] rtype, int16_t[::1] kver,
           int16_t[::1] vver, int64_t[:, ::1] vals, int32_t[::1] key_code):
    """Decode record ``r`` of ``key/value_pos/len`` (spans into ``buf``, length -1 = null)
    for every ``r`` not marked in ``skip``, framed as ``mode`` says.

    ``programs[p]`` = (first row, row count, flat) of program ``p`` in ``ops``; ``key_table[t]`` the
    key program of key type (or version) ``t``, ``value_table[t, v]`` the value program of
    version ``v``, -1 where the reference knows none. Slots ``[0, key_slots)`` of a record's row
    in ``vals`` hold its key's fields, the rest its value's, each prefilled from the program's
    ``defaults`` row; ``kver`` is the key's version, ``vver`` the value's (-1: a null value, a
    tombstone). Key types with ``identity`` get ``key_code``: the code of the key's bytes after
    the type (a non-flexible key encodes each value one way, so equal bytes mean equal keys).
    """
    cdef Ctx c
    cdef int64_t n = key_pos.shape[0]
    cdef int64_t width = vals.shape[1]
    cdef int64_t r, s, p, kp, kl, vp, vl, end, v, fv, t, first
    cdef int32_t prog
    cdef int64_t *row
    cdef int64_t ntypes = key_table.shape[0]
    cdef int64_t vtypes = value_table.shape[0]
    cdef int64_t nversions = value_table.shape[1]
    cdef const int32_t *values = &value_table[0, 0] if vtypes and nversions else NULL
    open_ctx(&c, ops, buf, strings, uuids)
    with nogil:
        for r in range(n):
            key_code[r] = -1
            rtype[r] = -1
            kver[r] = -1
            vver[r] = -1
            if skip[r]:
                status[r] = ST_SKIP
                continue
            status[r] = ST_ERROR
            row = &vals[r, 0]
            kp = key_pos[r]
            kl = key_len[r]
            vp = value_pos[r]
            vl = value_len[r]
            if mode == MODE_METADATA:
                # a metadata record: frame version, type, version (uvarints), then the value
                if vl < 0:
                    continue
                end = vp + vl
                p = frame_number(c.d, vp, end, &fv)
                if p < 0 or fv != 1:
                    continue
                p = frame_number(c.d, p, end, &t)
                if p < 0:
                    continue
                p = frame_number(c.d, p, end, &v)
                if p < 0:
                    continue
                rtype[r] = <int16_t>t
                first = 0
            else:
                # coordinator and transaction log records: an int16-prefixed key, then the
                # value, int16-prefixed too
                if kl < 2:
                    continue
                t = be_i16(c.d + kp)
                kver[r] = <int16_t>t
                if mode == MODE_COORDINATOR:
                    rtype[r] = <int16_t>t
                else:
                    rtype[r] = 0
                if t < 0 or t >= ntypes or key_table[t] < 0:
                    continue
                prog = key_table[t]
                if not run_program(&c, &programs[prog, 0], &defaults[prog, 0], 0, key_slots,
                                   kp + 2, kp + kl, row):
                    continue
                if identity[t]:
                    key_code[r] = intern(&keys.t, c.d + kp + 2, kl - 2)
                    if key_code[r] < 0:
                        continue
                if vl < 0:
                    for s in range(key_slots, width):
                        row[s] = ABSENT
                    status[r] = ST_OK
                    continue
                if vl < 2:
                    continue
                v = be_i16(c.d + vp)
                p, end = vp + 2, vp + vl
                first = key_slots
                if mode != MODE_COORDINATOR:
                    t = 0  # the transaction log has one value type
            vver[r] = <int16_t>v
            prog = value_program(values, vtypes, nversions, t, v)
            if prog >= 0 and run_program(&c, &programs[prog, 0], &defaults[prog, 0], first,
                                         width, p, end, row):
                status[r] = ST_OK
    if strings.t.failed or uuids.t.failed or keys.t.failed:
        raise MemoryError("interning the internal topics' names")


def expand(const int32_t[:, ::1] ops, int64_t first, int64_t count,
           const int64_t[::1] defaults, const uint8_t[::1] buf, int64_t pos, int64_t end,
           Interner strings, Interner uuids, int64_t[:, ::1] out):
    """Read ``out.shape[0]`` consecutive structs (an array's elements, or one nested struct)
    with the program at ``first``, each into a row of ``out``; returns the position after the
    last, -1 if the bytes break a rule."""
    cdef Ctx c
    cdef int64_t k
    cdef int64_t width = out.shape[1]
    open_ctx(&c, ops, buf, strings, uuids)
    with nogil:
        for k in range(out.shape[0]):
            if width:
                memcpy(&out[k, 0], &defaults[0], width * sizeof(int64_t))
                pos = run_ops(&c, first, count, pos, end, &out[k, 0])
            else:
                pos = run_ops(&c, first, count, pos, end, NULL)
            if pos < 0:
                break
    return pos


def check(const int32_t[:, ::1] ops, int64_t first, int64_t count, const uint8_t[::1] buf,
          int64_t pos, int64_t end):
    """Run a program over ``buf[pos:end]`` without storing anything: the position after it,
    or -1 when the bytes break a rule (a validity check)."""
    cdef Ctx c
    open_ctx(&c, ops, buf, None, None)
    with nogil:
        pos = run_ops(&c, first, count, pos, end, NULL)
    return pos


# ---------------------------------------------------------------------------- materialising

cdef const char *B64URL = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


cdef str uuid_text(const uint8_t *p):
    """``Uuid.toString``: unpadded base64url of the 16 bytes (22 characters)."""
    cdef char out[22]
    cdef int i, j = 0
    cdef uint32_t v
    for i in range(0, 15, 3):
        v = (<uint32_t>p[i] << 16) | (<uint32_t>p[i + 1] << 8) | p[i + 2]
        out[j] = B64URL[(v >> 18) & 63]
        out[j + 1] = B64URL[(v >> 12) & 63]
        out[j + 2] = B64URL[(v >> 6) & 63]
        out[j + 3] = B64URL[v & 63]
        j += 4
    v = <uint32_t>p[15] << 16
    out[20] = B64URL[(v >> 18) & 63]
    out[21] = B64URL[(v >> 12) & 63]
    return PyUnicode_DecodeUTF8(out, 22, NULL)


def uuid(const uint8_t[::1] buf, int64_t pos):
    if pos < 0 or pos + 16 > buf.shape[0]:
        raise IndexError(pos)
    return uuid_text(&buf[pos])


def text(const uint8_t[::1] buf, int64_t pos, int64_t n):
    """A string the decoder checked, from its span."""
    if pos < 0 or n < 0 or pos + n > buf.shape[0]:
        raise IndexError(pos)
    if n == 0:
        return ""
    return PyUnicode_DecodeUTF8(<char *>&buf[pos], n, NULL)


def blob(const uint8_t[::1] buf, int64_t pos, int64_t n):
    if pos < 0 or n < 0 or pos + n > buf.shape[0]:
        raise IndexError(pos)
    if n == 0:
        return b""
    return PyBytes_FromStringAndSize(<char *>&buf[pos], n)


def values(int32_t code, int32_t flags, const uint8_t[::1] buf, int64_t pos, int64_t n,
           int64_t end):
    """The ``n`` elements of an array of a non-composite type starting at ``pos`` (already
    checked by the decoder), as a list of Python values."""
    cdef const uint8_t *d = &buf[0] if buf.shape[0] else NULL
    cdef int w = fixed_width(code)
    cdef int64_t k, p = pos, length
    cdef list out = []
    if pos < 0 or end > buf.shape[0] or (w and pos + n * w > end):
        raise IndexError(pos)
    for k in range(n):
        if code == OP_BOOL:
            out.append(d[p] != 0)
        elif w and code != OP_UUID and code != OP_FLOAT64:
            out.append(read_fixed(code, d + p))
        elif code == OP_UUID:
            out.append(uuid_text(d + p))
        elif code == OP_STRING or code == OP_BYTES:
            p = read_length(d, p, end, flags & F_COMPACT, code == OP_BYTES, &length)
            if p < 0 or length < 0 or length > end - p:
                raise IndexError(p)
            if code == OP_STRING:
                out.append(PyUnicode_DecodeUTF8(<char *>d + p, length, NULL))
            else:
                out.append(PyBytes_FromStringAndSize(<char *>d + p, length))
            p += length
            continue
        else:
            raise ValueError(f"no list of type code {code}")
        p += w
    return out


def spans(const uint8_t[::1] buf, const int64_t[::1] pos, const int64_t[::1] lengths,
          bint as_text):
    """Many spans of ``buf`` at once, as bytes (or, ``as_text``, strings the decoder
    checked), None where the length is negative (a null, or a field not read)."""
    cdef int64_t i, p, n
    cdef int64_t size = buf.shape[0]
    cdef list out = []
    for i in range(pos.shape[0]):
        p = pos[i]
        n = lengths[i]
        if n < 0:
            out.append(None)
            continue
        if p < 0 or p + n > size:
            raise IndexError(p)
        if as_text:
            out.append(PyUnicode_DecodeUTF8(<char *>&buf[p], n, NULL) if n else "")
        else:
            out.append(PyBytes_FromStringAndSize(<char *>&buf[p], n) if n else b"")
    return out


cdef bint versioned_ok(Ctx *c, const int32_t[:, ::1] programs, int64_t pos, int64_t n,
                       bint exact) noexcept nogil:
    """``ConsumerProtocol.deserialize*``: an int16 version (a negative one is refused), then
    the body read with that version's program (the newest known for a newer version); with
    ``exact``, it must fill the ``n`` bytes."""
    cdef int64_t v, end
    if n < 2 or pos < 0:
        return False
    v = be_i16(c.d + pos)
    if v < 0:
        return False
    if v >= programs.shape[0]:
        v = programs.shape[0] - 1
    end = run_ops(c, programs[v, 0], programs[v, 1], pos + 2, pos + n, NULL)
    return end == pos + n if exact else end >= 0


def versioned(const int32_t[:, ::1] ops, const int32_t[:, ::1] programs,
              const uint8_t[::1] buf, int64_t pos, int64_t n, bint exact):
    """:func:`versioned_ok` for one span of ``buf``."""
    cdef Ctx c
    c.ops = &ops[0, 0]
    c.d = &buf[0] if buf.shape[0] else NULL
    c.strings = NULL
    c.uuids = NULL
    if pos + n > buf.shape[0]:
        return False
    return versioned_ok(&c, programs, pos, n, exact)


def versioned_fields(const int32_t[:, ::1] ops, const int32_t[:, ::1] elements,
                     const int64_t[::1] defaults, const uint8_t[::1] buf,
                     const int64_t[::1] pos, const int64_t[::1] counts, int a_slot,
                     const int32_t[:, ::1] a_programs, bint a_exact, int b_slot,
                     const int32_t[:, ::1] b_programs, bint b_exact):
    """For each record ``r``: ``counts[r]`` consecutive structs read from ``pos[r]`` by the
    program ``elements[r]`` (first row, count; an array's elements). Returns the
    ``(r, index)`` of the structs whose version-prefixed bytes fields (slots ``a_slot`` and
    ``b_slot``) do not read with :func:`versioned_ok` (every index of a record whose structs
    themselves do not read)."""
    cdef Ctx c
    cdef int64_t width = defaults.shape[0]
    cdef int64_t end = buf.shape[0]
    cdef int64_t r, k, p
    cdef int64_t *row
    cdef list bad = []
    c.ops = &ops[0, 0]
    c.d = &buf[0] if buf.shape[0] else NULL
    c.strings = NULL
    c.uuids = NULL
    row = <int64_t *>malloc(max(width, 1) * sizeof(int64_t))
    if row == NULL:
        raise MemoryError()
    try:
        for r in range(pos.shape[0]):
            p = pos[r]
            for k in range(counts[r]):
                if width:
                    memcpy(row, &defaults[0], width * sizeof(int64_t))
                p = run_ops(&c, elements[r, 0], elements[r, 1], p, end, row)
                if p < 0:
                    bad += [(r, j) for j in range(counts[r])]
                    break
                if not (versioned_ok(&c, a_programs, row[a_slot], row[a_slot + 1], a_exact) and
                        versioned_ok(&c, b_programs, row[b_slot], row[b_slot + 1], b_exact)):
                    bad.append((r, k))
    finally:
        free(row)
    return bad
