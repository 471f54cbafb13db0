"""The compiled batch walk: a window of a log's bytes -> one row per batch in a columnar table.

This is ``FileLogInputStream.nextBatch`` + the header accessors of ``DefaultRecordBatch`` and
``AbstractLegacyRecordBatch`` + ``isValid()``, run in C over a whole window per call, so a segment
of a million one-record batches costs no Python object and no Python call per batch. Where Kafka
throws, the walk records an *event* (a finding to be) and carries on wherever the length field
still says where the next batch starts; where the framing is lost it stops and says why.

Field positions are compiled in as constants; :mod:`segtools.decode.walk` checks them at import
against the construct declarations (:mod:`segtools.formats.batch`, :mod:`segtools.formats.legacy`)
they come from. The table's columns are ``segtools.decode.table.COLUMNS``; a test holds the
typed views below to that declaration.
"""

from libc.stdint cimport INT64_MIN, int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t

from segtools.decode.bytes cimport be_i16, be_i32, be_i64, be_u32

cdef extern from "sys/mman.h" nogil:
    int madvise(void *addr, size_t length, int advice)

cdef extern from "errno.h" nogil:
    int errno


cdef extern from "checksum.h":
    uint32_t segtools_crc32c_raw(uint32_t crc, const uint8_t *p, size_t n) nogil
    uint32_t segtools_crc32_raw(uint32_t crc, const uint8_t *p, size_t n) nogil
    void segtools_crc_init(int allow_hw)

segtools_crc_init(1)

# ---- layout: Records / DefaultRecordBatch / LegacyRecord (checked by decode/walk.py)
cdef enum:
    LOG_OVERHEAD = 12            # baseOffset int64 + length int32
    HEADER_SIZE_UP_TO_MAGIC = 17
    MIN_LENGTH = 14              # LegacyRecord.RECORD_OVERHEAD_V0
    V2_OVERHEAD = 61             # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
    LENGTH_AT = 8
    LEADER_EPOCH_AT = 12
    MAGIC_AT = 16
    CRC_AT = 17
    ATTRIBUTES_AT = 21           # also where the v2 CRC coverage starts
    LAST_OFFSET_DELTA_AT = 23
    BASE_TIMESTAMP_AT = 27
    MAX_TIMESTAMP_AT = 35
    PRODUCER_ID_AT = 43
    PRODUCER_EPOCH_AT = 51
    BASE_SEQUENCE_AT = 53
    RECORDS_COUNT_AT = 57
    LEGACY_CRC_AT = 12           # message crc uint32 (CRC-32 over [magic, end))
    LEGACY_ATTRIBUTES_AT = 17
    LEGACY_TIMESTAMP_AT = 18     # v1 only
    LEGACY_V0_KEY_AT = 18
    LEGACY_V1_KEY_AT = 26
    MAX_V2_CODEC = 4             # zstd
    MAX_LEGACY_CODEC = 3         # lz4

LAYOUT = {
    "log_overhead": LOG_OVERHEAD, "header_size_up_to_magic": HEADER_SIZE_UP_TO_MAGIC,
    "min_length": MIN_LENGTH, "v2_overhead": V2_OVERHEAD, "length": LENGTH_AT,
    "partition_leader_epoch": LEADER_EPOCH_AT, "magic": MAGIC_AT, "crc": CRC_AT,
    "attributes": ATTRIBUTES_AT, "last_offset_delta": LAST_OFFSET_DELTA_AT,
    "base_timestamp": BASE_TIMESTAMP_AT, "max_timestamp": MAX_TIMESTAMP_AT,
    "producer_id": PRODUCER_ID_AT, "producer_epoch": PRODUCER_EPOCH_AT,
    "base_sequence": BASE_SEQUENCE_AT, "records_count": RECORDS_COUNT_AT,
    "legacy_crc": LEGACY_CRC_AT, "legacy_attributes": LEGACY_ATTRIBUTES_AT,
    "legacy_timestamp": LEGACY_TIMESTAMP_AT, "legacy_v0_key": LEGACY_V0_KEY_AT,
    "legacy_v1_key": LEGACY_V1_KEY_AT,
}

# ---- why a walk stopped (stable; decode/walk.py turns them into findings)
cpdef enum:
    STOP_END = 0         # reached the end asked for
    STOP_SHORT_TAIL = 1  # 17 or fewer bytes left: a torn or zero tail
    STOP_BAD_LENGTH = 2  # length below 14: zeros (preallocated) or lost framing
    STOP_TORN = 3        # the batch runs past the end: a torn write or a partial copy
    STOP_WINDOW = 4      # the next batch runs past the bytes in hand: read more, walk on from here
    STOP_FULL = 5        # the output table is full
    STOP_EVENTS_FULL = 6 # the event list is full

# ---- per-batch events (stable; decode/walk.py turns them into findings)
cpdef enum:
    EV_INVALID_MAGIC = 1        # arg: magic byte; arg2: base offset
    EV_BATCH_TOO_SMALL = 2      # v2 batch shorter than its 61-byte header
    EV_INVALID_COMPRESSION = 3  # arg: codec id; arg2: (base) offset; arg3: magic
    EV_CORRUPT_MESSAGE = 4      # arg: reason (below); arg2: offset; arg3: declared length
    EV_LEGACY_NEEDS_BASE = 5    # arg: table row of a compressed wrapper (base offset needs inflating)
    EV_CRC_LATER = 6            # arg: table row of a v2 batch too big to checksum in one call

# ---- what the walk does with CRCs (its ``verify_crc``); a bool is the first two
cpdef enum:
    CRC_SKIP = 0   # none checked (crc_valid -1)
    CRC_CHECK = 1  # every batch checked
    CRC_LEAVE = 2  # v2 batches left to the record kernel (crc_valid CRC_PENDING), legacy checked

#: ``crc_valid`` of a v2 batch whose CRC the walk left to the record kernel (``CRC_LEAVE``).
CRC_PENDING = -2

# ---- why a legacy message is corrupt (LegacyRecord.key()/value() would throw)
cpdef enum:
    MSG_SHORT_TIMESTAMP = 1
    MSG_SHORT_KEY_LENGTH = 2
    MSG_KEY_PAST_END = 3
    MSG_SHORT_VALUE_LENGTH = 4
    MSG_VALUE_PAST_END = 5


cdef class Columns:
    """Typed views of a table's columns, for the kernel to write into (one row per batch)."""

    cdef int64_t[::1] position
    cdef int64_t[::1] size
    cdef int8_t[::1] magic
    cdef int16_t[::1] attributes
    cdef int64_t[::1] base_offset
    cdef int64_t[::1] last_offset
    cdef int32_t[::1] count
    cdef int64_t[::1] base_timestamp
    cdef int64_t[::1] max_timestamp
    cdef int64_t[::1] producer_id
    cdef int16_t[::1] producer_epoch
    cdef int32_t[::1] base_sequence
    cdef int32_t[::1] leader_epoch
    cdef uint32_t[::1] crc
    cdef int8_t[::1] crc_valid
    cdef int64_t capacity

    def __init__(self, dict arrays):
        self.position = arrays["position"]
        self.size = arrays["size"]
        self.magic = arrays["magic"]
        self.attributes = arrays["attributes"]
        self.base_offset = arrays["base_offset"]
        self.last_offset = arrays["last_offset"]
        self.count = arrays["count"]
        self.base_timestamp = arrays["base_timestamp"]
        self.max_timestamp = arrays["max_timestamp"]
        self.producer_id = arrays["producer_id"]
        self.producer_epoch = arrays["producer_epoch"]
        self.base_sequence = arrays["base_sequence"]
        self.leader_epoch = arrays["leader_epoch"]
        self.crc = arrays["crc"]
        self.crc_valid = arrays["crc_valid"]
        self.capacity = self.position.shape[0]


cdef class Events:
    """Per-batch problems met on the way, in file order: position, code and three arguments."""

    cdef int64_t[::1] position
    cdef int8_t[::1] code
    cdef int64_t[::1] arg
    cdef int64_t[::1] arg2
    cdef int64_t[::1] arg3
    cdef int64_t capacity

    def __init__(self, dict arrays):
        self.position = arrays["position"]
        self.code = arrays["code"]
        self.arg = arrays["arg"]
        self.arg2 = arrays["arg2"]
        self.arg3 = arrays["arg3"]
        self.capacity = self.position.shape[0]


cdef inline void _event(Events ev, int64_t *n, int64_t position, int8_t code, int64_t arg,
                        int64_t arg2, int64_t arg3) noexcept nogil:
    cdef int64_t i = n[0]
    ev.position[i] = position
    ev.code[i] = code
    ev.arg[i] = arg
    ev.arg2[i] = arg2
    ev.arg3[i] = arg3
    n[0] = i + 1


cdef int _legacy_layout(const uint8_t *p, int64_t size, int8_t magic, int64_t *key_at,
                               int64_t *key_len, int64_t *value_at, int64_t *value_len,
                               int64_t *bad_length) noexcept nogil:
    """Locate the key and value of one v0/v1 entry of ``size`` bytes at ``p`` (offsets from the
    entry start); 0, or a ``MSG_*`` reason where ``LegacyRecord.key()/value()`` would throw."""
    cdef int64_t q = LEGACY_V0_KEY_AT
    cdef int64_t n
    if magic == 1:
        if LEGACY_TIMESTAMP_AT + 8 > size:
            return MSG_SHORT_TIMESTAMP
        q = LEGACY_V1_KEY_AT
    if q + 4 > size:
        return MSG_SHORT_KEY_LENGTH
    n = be_i32(p + q)
    q += 4
    key_at[0] = q
    key_len[0] = -1
    if n >= 0:
        if q + n > size:
            bad_length[0] = n
            return MSG_KEY_PAST_END
        key_len[0] = n
        q += n
    if q + 4 > size:
        return MSG_SHORT_VALUE_LENGTH
    n = be_i32(p + q)
    q += 4
    value_at[0] = q
    value_len[0] = -1
    if n >= 0:
        if q + n > size:
            bad_length[0] = n
            return MSG_VALUE_PAST_END
        value_len[0] = n
    return 0


def walk(const uint8_t[::1] buf, int64_t base, int64_t start, int64_t until, int64_t end,
         int64_t avail, int verify_crc, int64_t big, Columns out, int64_t row0, Events ev,
         int64_t ev0, int64_t leave_from=0):
    """Walk the batches from file position ``start``: every batch that starts before ``until``,
    in data that ends at ``end`` (a batch running past ``end`` is a torn tail).

    ``buf[0]`` is the byte at file position ``base``; the bytes in hand end at file position
    ``avail`` (<= ``end``). Rows go to ``out`` from ``row0``, events to ``ev`` from ``ev0``.
    A v2 batch longer than ``big`` bytes needs only its header in hand: its CRC is left to
    the caller (``EV_CRC_LATER``), who sums it in windows, so no call ever holds all of a
    batch that claims gigabytes.
    ``verify_crc`` is a ``CRC_*`` mode: with ``CRC_LEAVE`` a v2 batch of ``leave_from``
    bytes or more (and not longer than ``big``) is left unchecked, ``crc_valid`` -2, for the
    record kernel to check while it decodes the batch's records (its bytes are then read
    once).
    Returns ``(rows, events, stop position, stop code)``: the counts written so far, where the
    walk stopped (the start of the batch it did not take), and why (``STOP_*``).
    """
    cdef const uint8_t *data = &buf[0] if buf.shape[0] else NULL
    cdef int64_t pos = start
    cdef int64_t row = row0
    cdef int64_t nev = ev0
    cdef int64_t length, size, offset, codec
    cdef int64_t key_at = 0, key_len = 0, value_at = 0, value_len = 0, bad = 0
    cdef int8_t magic
    cdef int16_t attrs
    cdef int reason
    cdef uint32_t stored
    cdef const uint8_t *p
    cdef int stop = STOP_END
    with nogil:
        while True:
            if pos >= end or pos >= until:
                stop = STOP_END
                break
            if end - pos <= HEADER_SIZE_UP_TO_MAGIC:
                stop = STOP_SHORT_TAIL
                break
            if pos + HEADER_SIZE_UP_TO_MAGIC > avail:
                stop = STOP_WINDOW
                break
            if row >= out.capacity:
                stop = STOP_FULL
                break
            if nev + 3 > ev.capacity:
                stop = STOP_EVENTS_FULL
                break
            p = data + (pos - base)
            length = be_i32(p + LENGTH_AT)
            if length < MIN_LENGTH:
                stop = STOP_BAD_LENGTH
                break
            size = LOG_OVERHEAD + length
            if size > end - pos:
                stop = STOP_TORN
                break
            magic = <int8_t>p[MAGIC_AT]
            if pos + size > avail and not (magic == 2 and size > big and
                                           pos + V2_OVERHEAD <= avail):
                stop = STOP_WINDOW
                break
            offset = be_i64(p)
            if magic == 2:
                if size < V2_OVERHEAD:
                    _event(ev, &nev, pos, EV_BATCH_TOO_SMALL, size, offset, 0)
                    pos += size
                    continue
                attrs = be_i16(p + ATTRIBUTES_AT) & 0xFF  # (byte) getShort(21)
                stored = be_u32(p + CRC_AT)
                out.position[row] = pos
                out.size[row] = size
                out.magic[row] = 2
                out.attributes[row] = attrs
                out.base_offset[row] = offset
                out.last_offset[row] = offset + be_i32(p + LAST_OFFSET_DELTA_AT)
                out.count[row] = be_i32(p + RECORDS_COUNT_AT)
                out.base_timestamp[row] = be_i64(p + BASE_TIMESTAMP_AT)
                out.max_timestamp[row] = be_i64(p + MAX_TIMESTAMP_AT)
                out.producer_id[row] = be_i64(p + PRODUCER_ID_AT)
                out.producer_epoch[row] = be_i16(p + PRODUCER_EPOCH_AT)
                out.base_sequence[row] = be_i32(p + BASE_SEQUENCE_AT)
                out.leader_epoch[row] = be_i32(p + LEADER_EPOCH_AT)
                out.crc[row] = stored
                if verify_crc == CRC_SKIP:
                    out.crc_valid[row] = -1
                elif size > big:
                    out.crc_valid[row] = -1
                    _event(ev, &nev, pos, EV_CRC_LATER, row, offset, 0)
                elif verify_crc == CRC_LEAVE and size >= leave_from:
                    out.crc_valid[row] = -2
                else:
                    out.crc_valid[row] = (segtools_crc32c_raw(
                        0xFFFFFFFFu, p + ATTRIBUTES_AT, size - ATTRIBUTES_AT) ^ 0xFFFFFFFFu
                        ) == stored
                row += 1
                codec = attrs & 0x07
                if codec > MAX_V2_CODEC:
                    _event(ev, &nev, pos, EV_INVALID_COMPRESSION, codec, offset, 2)
            elif magic == 0 or magic == 1:
                attrs = <int8_t>p[LEGACY_ATTRIBUTES_AT]  # LegacyRecord: a signed byte
                codec = attrs & 0x07
                if codec > MAX_LEGACY_CODEC:
                    _event(ev, &nev, pos, EV_INVALID_COMPRESSION, codec, offset, magic)
                    pos += size
                    continue
                reason = _legacy_layout(p, size, magic, &key_at, &key_len, &value_at,
                                        &value_len, &bad)
                if reason:
                    _event(ev, &nev, pos, EV_CORRUPT_MESSAGE, reason, offset, bad)
                    pos += size
                    continue
                stored = be_u32(p + LEGACY_CRC_AT)
                out.position[row] = pos
                out.size[row] = size
                out.magic[row] = magic
                out.attributes[row] = attrs
                out.base_offset[row] = offset
                out.last_offset[row] = offset
                out.count[row] = -1
                out.base_timestamp[row] = -1
                out.max_timestamp[row] = be_i64(p + LEGACY_TIMESTAMP_AT) if magic == 1 else -1
                out.producer_id[row] = -1
                out.producer_epoch[row] = -1
                out.base_sequence[row] = -1
                out.leader_epoch[row] = -1
                out.crc[row] = stored
                if verify_crc != CRC_SKIP:
                    out.crc_valid[row] = (segtools_crc32_raw(
                        0xFFFFFFFFu, p + MAGIC_AT, size - MAGIC_AT) ^ 0xFFFFFFFFu) == stored
                else:
                    out.crc_valid[row] = -1
                if codec:
                    _event(ev, &nev, pos, EV_LEGACY_NEEDS_BASE, row, offset, 0)
                row += 1
            else:
                _event(ev, &nev, pos, EV_INVALID_MAGIC, magic, offset, size)
            pos += size
    return row, nev, pos, stop


def check_left(const uint8_t[::1] buf, int64_t base, const int64_t[::1] position,
               const int64_t[::1] size, const uint32_t[::1] crc, int8_t[::1] crc_valid):
    """Check every v2 batch whose CRC a ``CRC_LEAVE`` walk left (``crc_valid`` -2) and that
    the record kernel did not check (a batch no consumer decodes: a control batch, one
    outside the offset bounds): 1 when it matches, else 0. ``buf[0]`` is the byte at file
    position ``base``; a batch ``buf`` does not hold whole stays -2. Returns how many it
    left so."""
    cdef const uint8_t *data = &buf[0] if buf.shape[0] else NULL
    cdef int64_t n = buf.shape[0]
    cdef int64_t i, lo, hi
    cdef int64_t left = 0
    with nogil:
        for i in range(position.shape[0]):
            if crc_valid[i] != -2:
                continue
            lo = position[i] - base + ATTRIBUTES_AT
            hi = position[i] - base + size[i]
            if lo < 0 or hi > n or hi < lo:
                left += 1
                continue
            crc_valid[i] = (segtools_crc32c_raw(0xFFFFFFFFu, data + lo, hi - lo)
                            ^ 0xFFFFFFFFu) == crc[i]
    return left


def legacy_layout(const uint8_t[::1] buf, int64_t pos, int64_t size):
    """``(key_at, key_len, value_at, value_len, 0)`` of the v0/v1 entry of ``size`` bytes at
    ``buf[pos]`` (positions from the entry start; length -1 = null), or ``(.., reason, bad)``
    with a ``MSG_*`` reason when the message is corrupt."""
    cdef int64_t key_at = 0, key_len = -1, value_at = 0, value_len = -1, bad = 0
    cdef int reason
    if pos < 0 or size < MIN_LENGTH or pos + size > buf.shape[0]:
        return 0, -1, 0, -1, MSG_SHORT_KEY_LENGTH, 0
    reason = _legacy_layout(&buf[pos], size, <int8_t>buf[pos + MAGIC_AT], &key_at, &key_len,
                            &value_at, &value_len, &bad)
    return key_at, key_len, value_at, value_len, reason, bad


def legacy_messages(const uint8_t[::1] buf, int64_t start, int64_t end, int64_t[::1] entry,
                    int64_t[::1] offset, int8_t[::1] magic, int8_t[::1] attributes,
                    int64_t[::1] timestamp, int64_t[::1] key_pos, int64_t[::1] key_len,
                    int64_t[::1] value_pos, int64_t[::1] value_len):
    """Lay out the messages of a v0/v1 message set in ``buf[start:end]`` (a compressed
    wrapper's inflated value), one row each, as ``AbstractLegacyRecordBatch``'s inner iterator
    reads them: a short tail ends the set. Returns ``(rows, error, error position)``; error 0 =
    fine, -1 = a length out of range, -2 = a nested compressed message, or a ``MSG_*`` reason.
    """
    cdef const uint8_t *data = &buf[0] if buf.shape[0] else NULL
    cdef int64_t pos = start
    cdef int64_t n = 0
    cdef int64_t length, size, ka = 0, kl = 0, va = 0, vl = 0, bad = 0
    cdef int reason
    cdef int8_t m
    cdef int64_t error = 0
    with nogil:
        while pos < end:
            if pos + LOG_OVERHEAD > end:
                break
            if n >= entry.shape[0]:
                break
            length = be_i32(data + pos + LENGTH_AT)
            if length < MIN_LENGTH or pos + LOG_OVERHEAD + length > end:
                error = -1
                break
            size = LOG_OVERHEAD + length
            m = <int8_t>data[pos + MAGIC_AT]
            reason = _legacy_layout(data + pos, size, m, &ka, &kl, &va, &vl, &bad)
            if reason:
                error = reason
                break
            if data[pos + LEGACY_ATTRIBUTES_AT] & 0x07:
                error = -2
                break
            entry[n] = pos
            offset[n] = be_i64(data + pos)
            magic[n] = m
            attributes[n] = <int8_t>data[pos + LEGACY_ATTRIBUTES_AT]
            timestamp[n] = be_i64(data + pos + LEGACY_TIMESTAMP_AT) if m == 1 else -1
            key_pos[n] = pos + ka
            key_len[n] = kl
            value_pos[n] = pos + va
            value_len[n] = vl
            n += 1
            pos += size
    return n, error, pos, bad


cdef bint _batch_at(const uint8_t[::1] buf, int64_t base, int64_t pos,
                    int64_t end) noexcept nogil:
    cdef const uint8_t *p
    cdef int64_t length, size, count
    cdef int attrs
    cdef int8_t magic
    if pos < base or pos + HEADER_SIZE_UP_TO_MAGIC >= end:
        return False
    p = &buf[pos - base]
    length = be_i32(p + LENGTH_AT)
    size = LOG_OVERHEAD + length
    if length < MIN_LENGTH or pos + size > end:
        return False
    magic = <int8_t>p[MAGIC_AT]
    if magic == 2:
        if size < V2_OVERHEAD:
            return False
        attrs = be_i16(p + ATTRIBUTES_AT)
        count = be_i32(p + RECORDS_COUNT_AT)
        if attrs & ~0x7F or (attrs & 0x07) > MAX_V2_CODEC or count < 0 or \
                count > length // 7 + 1:
            return False
        return (segtools_crc32c_raw(0xFFFFFFFFu, p + ATTRIBUTES_AT, size - ATTRIBUTES_AT)
                ^ 0xFFFFFFFFu) == be_u32(p + CRC_AT)
    if magic == 0 or magic == 1:
        attrs = p[LEGACY_ATTRIBUTES_AT]
        if attrs & 0xF0 or (attrs & 0x07) > MAX_LEGACY_CODEC:
            return False
        return (segtools_crc32_raw(0xFFFFFFFFu, p + MAGIC_AT, size - MAGIC_AT)
                ^ 0xFFFFFFFFu) == be_u32(p + LEGACY_CRC_AT)
    return False


def batch_at(const uint8_t[::1] buf, int64_t base, int64_t pos, int64_t end):
    """Whether a whole batch with a matching CRC starts at file position ``pos`` (``buf[0]`` is
    at ``base``; the bytes end at ``end``): the test salvage resynchronises on. Cheap header
    sanity comes first (magic, length within the data, compression id, a record count the bytes
    could hold), so random bytes rarely cost a CRC over a long claimed length."""
    return _batch_at(buf, base, pos, end)

def next_batch(const uint8_t[::1] buf, int64_t base, int64_t start, int64_t stop,
               int64_t end):
    """The first file position in ``[start, stop)`` where :func:`batch_at` holds (the bytes
    in hand end at ``end``), or -1. Candidates are positions whose magic byte is 0, 1 or 2."""
    cdef int64_t pos
    cdef int64_t found = -1
    with nogil:
        for pos in range(start, stop):
            if pos + MAGIC_AT >= end:
                break
            if buf[pos - base + MAGIC_AT] <= 2 and _batch_at(buf, base, pos, end):
                found = pos
                break
    return found


def advise(const uint8_t[::1] buf, int64_t lo, int64_t hi, int advice):
    """``madvise(2)`` on the pages of ``buf[lo:hi]`` (``buf`` a mapping, ``lo`` on a page
    boundary), without holding the GIL: mapping or dropping 64 MiB of pages takes
    milliseconds, during which the reader's other thread must be able to run Python. Returns
    0, or the call's errno (nothing is done for a range outside ``buf``)."""
    cdef int rc = 0
    if lo < 0 or hi > buf.shape[0] or hi <= lo:
        return 0
    with nogil:
        if madvise(<void *>&buf[lo], <size_t>(hi - lo), advice) != 0:
            rc = errno
    return rc


def first_nonzero(const uint8_t[::1] buf, int64_t lo, int64_t hi):
    """Index of the first non-zero byte in ``buf[lo:hi]``, or -1 (zero-filled tails)."""
    cdef int64_t i
    cdef int64_t found = -1
    with nogil:
        for i in range(lo, hi):
            if buf[i]:
                found = i
                break
    return found


cdef bint fold_batches(const uint8_t *data, int64_t size, bint verify_crc,
                       Fold *f, Checks *c) noexcept nogil:
    """Fold every batch of ``data[0:size]`` (a whole segment in hand) into ``f``, as
    ``segtools.storage.summary``'s table fold would, without a table: True when the walk
    reads the data to its end with nothing to report. False at the first thing the table walk
    would turn into a finding or must finish in Python (a torn or zero tail, a bad length,
    magic, compression id, message or CRC; more distinct producers than ``FOLD_PRODUCERS``
    or wrappers than ``FOLD_WRAPPERS``): the caller then walks the segment the ordinary way,
    so every finding is the walk's own. A compressed legacy wrapper whose base offset is not
    in ``f.wrapper_bases`` sets ``f.needs_bases`` (its position listed in ``f.wrapper_at``):
    the caller inflates those wrappers, as the walk does, and folds again with their bases.

    With ``c`` (not NULL), also ``verify``'s rules (``segtools.analysis.integrity``), held to
    the same standard: True only when none of them has anything to say. Offsets run on from
    batch to batch and from the earlier segments, no batch lies below the segment's base;
    leader epochs never fall (the first offset of each new one is recorded); every ``.index``
    entry names the batch that starts at its position; every ``.timeindex`` entry names the
    last offset of a batch whose max timestamp, and the running max up to it, is its own."""
    cdef int64_t pos = 0
    cdef int64_t length, n, offset, last, count, raw_count, ts, first_ts, max_ts, pid, i
    cdef int64_t epoch, running = INT64_MIN, prev_last = 0, ki = 0, kt = 0
    cdef int64_t reached = INT64_MIN, ahead_count = 0  # the segment's largest offset so far
    cdef int64_t ahead[CHECK_AHEAD]
    cdef bint known = False
    if c != NULL:
        known = c.has_previous
        prev_last = c.previous_last
    cdef int64_t key_at = 0, key_len = 0, value_at = 0, value_len = 0, bad = 0
    cdef int8_t magic
    cdef int attrs, codec
    cdef const uint8_t *p
    while pos < size:
        if size - pos <= HEADER_SIZE_UP_TO_MAGIC:
            return False
        p = data + pos
        length = be_i32(p + LENGTH_AT)
        if length < MIN_LENGTH:
            return False
        n = LOG_OVERHEAD + length
        if n > size - pos:
            return False
        magic = <int8_t>p[MAGIC_AT]
        offset = be_i64(p)
        if magic == 2:
            if n < V2_OVERHEAD:
                return False
            attrs = be_i16(p + ATTRIBUTES_AT) & 0xFF
            codec = attrs & 0x07
            if codec > MAX_V2_CODEC:
                return False
            if verify_crc and (segtools_crc32c_raw(0xFFFFFFFFu, p + ATTRIBUTES_AT,
                                                   n - ATTRIBUTES_AT) ^ 0xFFFFFFFFu
                               ) != be_u32(p + CRC_AT):
                return False
            last = offset + be_i32(p + LAST_OFFSET_DELTA_AT)
            raw_count = count = be_i32(p + RECORDS_COUNT_AT)
            max_ts = be_i64(p + MAX_TIMESTAMP_AT)
            first_ts = max_ts if attrs & 0x40 else be_i64(p + BASE_TIMESTAMP_AT)
            if count < 0:
                count = last - offset + 1
            if c != NULL:
                if attrs & 0x40 or raw_count == 0 or raw_count < last - offset + 1:
                    c.cleaned = True
                epoch = be_i32(p + LEADER_EPOCH_AT)
                if epoch >= 0:
                    if epoch < c.last_epoch:
                        return False
                    if epoch > c.last_epoch:
                        if c.epoch_count >= CHECK_EPOCHS:
                            return False
                        c.epochs[c.epoch_count] = epoch
                        c.epoch_offsets[c.epoch_count] = offset
                        c.epoch_count += 1
                        c.last_epoch = epoch
            pid = be_i64(p + PRODUCER_ID_AT)
            if attrs & 0x10:
                f.txn += 1
            if attrs & 0x20:
                f.control += 1
            if pid >= 0:
                i = f.producer_count - 1
                while i >= 0 and f.producers[i] != pid:
                    i -= 1
                if i < 0:
                    if f.producer_count >= FOLD_PRODUCERS:
                        return False
                    f.producers[f.producer_count] = pid
                    f.producer_count += 1
        elif magic == 0 or magic == 1:
            attrs = <int8_t>p[LEGACY_ATTRIBUTES_AT]
            codec = attrs & 0x07
            if codec > MAX_LEGACY_CODEC:
                return False
            if _legacy_layout(p, n, magic, &key_at, &key_len, &value_at, &value_len, &bad):
                return False
            if verify_crc and (segtools_crc32_raw(0xFFFFFFFFu, p + MAGIC_AT, n - MAGIC_AT)
                               ^ 0xFFFFFFFFu) != be_u32(p + LEGACY_CRC_AT):
                return False
            last = offset
            if codec:  # a wrapper: its offset is its last inner offset, its base inflated
                if f.wrappers >= FOLD_WRAPPERS:
                    return False
                f.wrapper_at[f.wrappers] = pos
                f.wrapper_size[f.wrappers] = n
                if f.wrappers < f.wrapper_known:
                    offset = f.wrapper_bases[f.wrappers]
                else:
                    f.needs_bases = True
                f.wrappers += 1
            count = last - offset + 1
            max_ts = be_i64(p + LEGACY_TIMESTAMP_AT) if magic == 1 else -1
            first_ts = max_ts
        else:
            return False
        if c != NULL:
            if offset < c.base_offset:
                return False
            if known and offset != prev_last + 1:
                if c.step_count >= CHECK_STEPS:
                    return False
                c.steps[c.step_count][0] = prev_last
                c.steps[c.step_count][1] = offset
                c.steps[c.step_count][2] = pos
                c.steps[c.step_count][3] = f.batches == 0
                c.step_count += 1
            if not known or last > prev_last:
                prev_last = last
            known = True
            # entries waiting for a later batch: the first batch reaching the offset holds it
            i = 0
            while i < ahead_count:
                if last >= ahead[i]:
                    if offset > ahead[i]:
                        return False
                    ahead_count -= 1
                    ahead[i] = ahead[ahead_count]
                else:
                    i += 1
            # .index entries in position order: the next one must be here or further on, and
            # name an offset of this batch or of a later one (an append of several batches:
            # a follower's fetch, the cleaner), which no batch so far reaches
            while ki < c.index_entries and be_i32(c.index + ki * 8 + 4) <= pos:
                if be_i32(c.index + ki * 8 + 4) != pos:
                    return False
                i = c.base_offset + be_i32(c.index + ki * 8)
                if i < offset:
                    return False
                if i > last:
                    if ahead_count >= CHECK_AHEAD or i <= reached:
                        return False
                    ahead[ahead_count] = i
                    ahead_count += 1
                ki += 1
            if last > reached:
                reached = last
            if max_ts > running:
                running = max_ts
            while kt < c.time_entries and c.base_offset + be_i32(c.timeindex + kt * 12 + 8) <= last:
                i = c.base_offset + be_i32(c.timeindex + kt * 12 + 8)
                ts = be_i64(c.timeindex + kt * 12)
                if i == last:
                    if ts != max_ts or ts != running:
                        return False
                elif i >= offset and ts == max_ts:
                    c.inside += 1  # the record holding the max, as brokers before 3.7 wrote
                else:
                    return False
                kt += 1
        f.batches += 1
        f.valid_bytes += n
        f.records += count
        if not f.has_first_offset:
            f.first_offset = offset
            f.has_first_offset = True
            f.last_offset = last
        elif last > f.last_offset:
            f.last_offset = last
        if not f.has_first_ts and first_ts >= 0:
            f.first_ts = first_ts
            f.has_first_ts = True
        if max_ts > f.max_ts:
            f.max_ts = max_ts
            f.max_ts_offset = last
            f.has_max_ts_offset = True
        f.codecs |= 1 << codec
        f.magics |= 1 << magic
        pos += n
    if c != NULL and (ki < c.index_entries or kt < c.time_entries or ahead_count):
        return False  # entries past the last batch
    return True
