"""A small segment summarised in C: its ``.log`` and ``.timeindex`` read and folded with a few
system calls and no Python object per batch or per file.

A broker's tree holds tens of thousands of small segments; read the ordinary way (a
``Segment``, a walk into table chunks, a fold of the columns, a ``TimeIndex``) each costs a
few hundred Python calls, far more than reading it. Here the common case, a regular file that
fits :data:`segtools.storage.segment.SMALL_FILE` and walks cleanly to its end next to a time
index whose every entry is valid, costs ``stat``, ``open``, ``fstat``, one ``pread`` and
``close`` per file and one compiled fold (:func:`segtools.decode._walk.fold_batches`). Anything
else (a file of another type, a short read, a torn tail, a bad CRC, a damaged index) returns
None, or says the index needs the ordinary reader, so that every finding still comes from the
code that names it. A compressed legacy wrapper is inflated by the walk's own code
(:func:`segtools.decode.legacy.wrapper_base_offset`) to learn its base offset, and a
preallocated index's zero tail is skipped where it is a hole (``SEEK_DATA``), read where not.
"""

from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport calloc, free, malloc
from posix.fcntl cimport O_CLOEXEC, O_NOCTTY, O_NONBLOCK, O_RDONLY, POSIX_FADV_RANDOM, posix_fadvise
from posix.fcntl cimport open as c_open
from posix.stat cimport S_ISREG, fstat, stat, struct_stat
from posix.unistd cimport close, pread

import numpy as np

from segtools.decode._walk cimport Checks, Fold, fold_batches
from segtools.decode.bytes cimport be_i32, be_i64

from segtools.decode.legacy import wrapper_base_offset
from segtools.errors import SegtoolsError


cdef extern from "<unistd.h>" nogil:
    enum: SEEK_DATA
    enum: SEEK_HOLE
    long lseek(int fd, long offset, int whence)

cdef extern from "<errno.h>" nogil:
    int errno
    enum: ENXIO

cdef enum:
    TIME_ENTRY = 12  # TimeIndex.ENTRY_SIZE: timestamp int64, relative offset int32
    ZERO_READ_CAP = 1024 * 1024  # bytes of a preallocated tail's zero blocks read, at most

#: What :func:`timeindex_state` says about a ``.timeindex``.
cpdef enum:
    INDEX_ABSENT = 0   # no file was named
    INDEX_EMPTY = 1    # a regular, empty file: no entries, nothing to report
    INDEX_LAST = 2     # every entry valid: the last one is the answer
    INDEX_SLOW = 3     # anything else: the ordinary reader decides (and reports)


cdef int64_t _mtime_ns(struct_stat *st) noexcept nogil:
    return <int64_t>st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec


cdef int _extent(int fd, int64_t pos, int64_t size, int64_t *data,
                 int64_t *hole) noexcept nogil:
    """The next data extent ``[data, hole)`` of the file at or after ``pos``, cut at
    ``size`` (``SEEK_DATA``/``SEEK_HOLE``): 1 when there is one, 0 when only holes are left
    before ``size``, -1 when the file system cannot say."""
    data[0] = lseek(fd, pos, SEEK_DATA)
    if data[0] == -1:
        return 0 if errno == ENXIO else -1
    if data[0] >= size:
        return 0
    hole[0] = lseek(fd, data[0], SEEK_HOLE)
    if hole[0] == -1 or hole[0] > size:
        hole[0] = size
    return 1


cdef bint _zeros_from(int fd, int64_t start, int64_t size) noexcept nogil:
    """Whether the file holds only zeros from ``start`` to ``size``: its holes skipped with
    ``SEEK_DATA``/``SEEK_HOLE``, its data read, up to ``ZERO_READ_CAP`` bytes (more data than
    that is not a preallocated tail: the ordinary reader decides)."""
    cdef uint8_t chunk[4096]
    cdef int64_t pos = start, data, hole, budget = ZERO_READ_CAP, i
    cdef long r
    cdef int found
    while pos < size:
        found = _extent(fd, pos, size, &data, &hole)
        if found <= 0:
            return found == 0
        while data < hole:
            if budget <= 0:
                return False
            r = pread(fd, chunk, min(<int64_t>sizeof(chunk), hole - data), data)
            if r <= 0:
                return False
            for i in range(r):
                if chunk[i]:
                    return False
            data += r
            budget -= r
        pos = hole
    return True


cdef int64_t _read_extents(int fd, uint8_t *buf, int64_t size) noexcept nogil:
    """Read the first ``size`` bytes of the file into ``buf`` (zeroed), the data only: a hole
    reads as zeros, and reading one would fill the page cache with zero pages (a preallocated
    index's tail, which gentle mode never hands back on a broker's active segment). How many
    bytes it accounts for: ``size``, or where it failed (the caller reads the rest plainly)."""
    cdef int64_t pos = 0, data, hole
    cdef long r
    cdef int found
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM)  # no read-ahead into the holes either
    while pos < size:
        found = _extent(fd, pos, size, &data, &hole)
        if found <= 0:
            return size if found == 0 else pos
        while data < hole:
            r = pread(fd, buf + data, hole - data, data)
            if r <= 0:
                return data
            data += r
        pos = hole
    return size


cdef uint8_t *_read_regular(const char *path, int64_t cap, struct_stat *st,
                            int *ok, bint head=False) noexcept nogil:
    """The whole file at ``path`` in a fresh buffer (free it), when it is a regular file of at
    most ``cap`` bytes read in full; ``ok`` 0 otherwise (and NULL). An empty file gives NULL
    with ``ok`` 1. Checked as ``segtools.storage.files.open_regular`` does: by name before the
    open (a FIFO must not be opened), then by descriptor.

    ``head``: a larger file is read up to ``cap`` when only zeros follow (a preallocated
    index: holes, skipped with ``SEEK_DATA``, and the few zero blocks a file system may still
    hold, read), ``ok`` then 2."""
    cdef int fd
    cdef int64_t size, got = 0
    cdef long r
    cdef uint8_t *buf = NULL
    cdef int answer = 1
    cdef bint sparse
    cdef struct_stat now
    ok[0] = 0
    if stat(path, st) != 0 or not S_ISREG(st.st_mode):
        return NULL
    fd = c_open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
    if fd < 0:
        return NULL
    if fstat(fd, st) != 0 or not S_ISREG(st.st_mode):
        close(fd)
        return NULL
    size = st.st_size
    if size > cap:
        if not head or not _zeros_from(fd, cap, size):
            close(fd)
            return NULL
        size = cap
        answer = 2
    if size:
        # a file whose blocks cover its size has no hole to skip: read plainly, as a
        # ``.log`` is (the extents' four more system calls were a third of a small
        # segment's reading)
        sparse = head and (answer == 2 or <int64_t>st.st_blocks * 512 < size)
        buf = <uint8_t *>(calloc(size, 1) if sparse else malloc(size))
        if buf == NULL:
            close(fd)
            return NULL
        if sparse:
            got = _read_extents(fd, buf, size)
            if fstat(fd, &now) != 0 or now.st_size < size:
                got = -1  # shrank since it was measured: the ordinary reader says so
        while 0 <= got < size:
            r = pread(fd, buf + got, size - got, got)
            if r <= 0:
                break
            got += r
        if got != size:  # the file shrank since fstat: the ordinary reader says so
            free(buf)
            close(fd)
            return NULL
    close(fd)
    ok[0] = answer
    return buf


cdef int _time_index(const uint8_t *buf, int64_t got, int64_t size, bint padded,
                     int64_t *ts, int64_t *rel, int64_t *valid_out,
                     int64_t *first_ts) noexcept nogil:
    """``INDEX_EMPTY``, ``INDEX_LAST`` with the last entry, or ``INDEX_SLOW`` unless every slot
    is an entry ``TimeIndex.maybeAppend`` could have written (so its sanity checks have nothing
    to say): a whole number of entries, the first not all zero with an offset at or above the
    base, timestamps strictly rising, offsets never falling. ``buf`` holds the first ``got``
    of the file's ``size`` bytes (the rest: holes). ``valid_out``: how many entries there
    are; ``first_ts``: the first slot's timestamp.

    ``padded``: the entries may also be followed by zeros to the end (the preallocated index
    of an active segment: its sanity checks only note the padding, and its last entry is the
    last valid one)."""
    cdef int64_t n = got // TIME_ENTRY
    cdef int64_t i, t, r, prev_t = 0, prev_r = 0, valid = n
    valid_out[0] = 0
    first_ts[0] = 0
    if size % TIME_ENTRY or got % TIME_ENTRY or (got < size and not padded):
        return INDEX_SLOW
    for i in range(n):
        t = be_i64(buf + i * TIME_ENTRY)
        r = be_i32(buf + i * TIME_ENTRY + 8)
        if i == 0:
            if t == 0 and r == 0:
                valid = 0
                break
            if r < 0:
                return INDEX_SLOW
            first_ts[0] = t
        elif t <= prev_t:
            valid = i
            break
        elif r < prev_r:
            return INDEX_SLOW
        prev_t, prev_r = t, r
    if valid < n or got < size:
        if not padded:
            return INDEX_SLOW
        for i in range(valid * TIME_ENTRY, got):
            if buf[i]:
                return INDEX_SLOW
    valid_out[0] = valid
    if valid == 0:
        return INDEX_EMPTY
    ts[0] = prev_t
    rel[0] = prev_r
    return INDEX_LAST


cdef int64_t _plain_offset_index(const uint8_t *buf, int64_t got, int64_t size) noexcept nogil:
    """How many entries a ``.index`` holds when every slot is an entry ``OffsetIndex.append``
    could have written, or zeros after them (a preallocated index; ``buf`` holds the first
    ``got`` of its ``size`` bytes, the rest holes), so its sanity checks have nothing to say:
    a whole number of entries, the first not all zero with an offset at or above the base,
    offsets and positions strictly rising. -1 for anything else."""
    cdef int64_t n = got // 8
    cdef int64_t i, r, q, prev_r = 0, prev_q = 0, valid = n
    if size % 8 or got % 8:
        return -1
    for i in range(n):
        r = be_i32(buf + i * 8)
        q = be_i32(buf + i * 8 + 4)
        if r == 0 and q == 0:
            valid = i
            break
        if (i == 0 and (r < 0 or q < 0)) or (i > 0 and (r <= prev_r or q <= prev_q)):
            return -1
        prev_r, prev_q = r, q
    for i in range(valid * 8, got):
        if buf[i]:
            return -1
    return valid


cdef void _fresh_fold(Fold *f, const int64_t *bases, int64_t known) noexcept nogil:
    f.batches = f.valid_bytes = f.records = f.txn = f.control = 0
    f.first_offset = f.last_offset = f.first_ts = f.max_ts_offset = 0
    f.max_ts = -1
    f.has_first_offset = f.has_first_ts = f.has_max_ts_offset = False
    f.codecs = f.magics = 0
    f.producer_count = 0
    f.wrapper_bases = bases
    f.wrapper_known = known
    f.wrappers = 0
    f.needs_bases = False


cdef void _fresh_checks(Checks *c, int64_t base_offset, object previous_last,
                        int64_t last_epoch):
    c.base_offset = base_offset
    c.has_previous = previous_last is not None
    c.previous_last = previous_last if previous_last is not None else 0
    c.last_epoch = last_epoch
    c.cleaned = False
    c.epoch_count = 0
    c.inside = 0
    c.step_count = 0


cdef object _wrapper_bases(const uint8_t *buf, int64_t size, Fold *f, object limit):
    """The base offsets of the compressed wrappers the fold listed, inflated as the walk
    inflates them (``walk._fix_legacy_wrappers``); None when one does not inflate, which the
    walk reports."""
    data = np.asarray(<const uint8_t[:size]> buf)
    bases = np.empty(f.wrappers, np.int64)
    try:
        for i in range(f.wrappers):
            bases[i] = wrapper_base_offset(data, f.wrapper_at[i], f.wrapper_size[i],
                                           limit=limit)
    except SegtoolsError:
        return None
    return bases


cdef bint _fold_inflating(const uint8_t *buf, int64_t size, bint verify_crc, Fold *f,
                          Checks *c, object limit, int64_t base_offset, object previous_last,
                          int64_t last_epoch) except? False:
    """:func:`fold_batches` over a whole segment in hand; when it met compressed legacy
    wrappers, their base offsets learnt by inflating them (:func:`_wrapper_bases`) and the
    fold run again with them (``c``'s outputs, when given, started afresh from
    ``base_offset``, ``previous_last`` and ``last_epoch``). True when the fold is clean."""
    cdef bint clean
    cdef int64_t[::1] known
    with nogil:
        clean = fold_batches(buf, size, verify_crc, f, c)
    if not (clean and f.needs_bases):
        return clean
    bases = _wrapper_bases(buf, size, f, limit)
    if bases is None:
        return False
    known = bases
    _fresh_fold(f, &known[0], len(bases))
    if c != NULL:
        _fresh_checks(c, base_offset, previous_last, last_epoch)
    with nogil:
        clean = fold_batches(buf, size, verify_crc, f, c)
    return clean


def verify_small(bytes log_path, object index_path, object timeindex_path, int64_t base_offset,
                 object previous_last, int64_t last_epoch, int64_t cap, int64_t index_cap,
                 object limit, bint keep=False):
    """``verify``'s reading of one small segment (see the module doc) when none of its rules
    has anything to say about it: the ``.log`` walked with every CRC checked, its ``.index``
    and ``.timeindex`` (None: absent) plain (or plain and then zero-filled: a preallocated
    index) and matching the batches, offsets running on from ``previous_last`` (None: the
    first segment), leader epochs not below ``last_epoch``. None otherwise (the ordinary
    reader then names what it finds). ``limit`` caps the inflating of a legacy wrapper.

    Returns ``(files read as (size, mtime_ns) for the log, index and time index (None where
    absent), the segment's largest offset (None: no batch), whether a batch shows the
    cleaner's work, new leader epochs as (epoch, first offset) pairs, time index entries in
    the older record-offset convention, offset steps as (previous last, base, position,
    first batch of the segment), the zero tail of a preallocated time index as (valid
    entries, first timestamp) or None, what was read)``: the steps and the convention are
    not findings yet (the partition's compaction evidence classifies the steps), nor is the
    tail (Kafka's ``TimeIndex.sanityCheck`` trips on it:
    :func:`segtools.storage.index.padded_active`).

    ``keep``: what was read is handed back, so that nothing reads the segment again: the
    fold as :func:`summarize_small` gives it (the same fold, whose CRCs all matched) and the
    ``.log``'s bytes; None otherwise."""
    cdef struct_stat st, ist, tst
    cdef Fold f
    cdef Checks c
    cdef int ok = 1, iok = 1, tok = 1
    cdef bint clean = False
    cdef const char *cpath = log_path
    cdef const char *ipath = NULL
    cdef const char *tpath = NULL
    cdef uint8_t *buf = NULL
    cdef uint8_t *ibuf = NULL
    cdef uint8_t *tbuf = NULL
    cdef int64_t ts = 0, rel = 0, igot = 0, tgot = 0, tvalid = 0, tfirst = 0
    cdef int tstate = INDEX_ABSENT
    kept = None
    if index_path is not None:
        ipath = <bytes>index_path
    if timeindex_path is not None:
        tpath = <bytes>timeindex_path
    _fresh_fold(&f, NULL, 0)
    _fresh_checks(&c, base_offset, previous_last, last_epoch)
    c.index = c.timeindex = NULL
    c.index_entries = c.time_entries = 0
    try:
        with nogil:
            buf = _read_regular(cpath, cap, &st, &ok)
            if ok and ipath != NULL:
                ibuf = _read_regular(ipath, index_cap, &ist, &iok, True)
                if iok:
                    igot = min(<int64_t>ist.st_size, index_cap)
                    c.index_entries = _plain_offset_index(ibuf, igot, ist.st_size)
                    iok = c.index_entries >= 0
                c.index = ibuf
            if ok and iok and tpath != NULL:
                tbuf = _read_regular(tpath, index_cap - index_cap % TIME_ENTRY, &tst, &tok, True)
                tgot = min(<int64_t>tst.st_size, index_cap - index_cap % TIME_ENTRY)
                if tok:
                    tstate = _time_index(tbuf, tgot, tst.st_size, True, &ts, &rel, &tvalid,
                                         &tfirst)
                    tok = tstate != INDEX_SLOW
                c.timeindex = tbuf
                c.time_entries = tvalid
        if ok and iok and tok:
            clean = _fold_inflating(buf, st.st_size, True, &f, &c, limit, base_offset,
                                    previous_last, last_epoch)
        if clean and keep:
            kept = (_folded(&st, &f, None if tpath == NULL else
                            (tstate, ts, rel, tst.st_size, _mtime_ns(&tst))),
                    buf[:st.st_size] if st.st_size else b"")
    finally:
        free(buf)
        free(ibuf)
        free(tbuf)
    if not (ok and iok and tok and clean):
        return None
    padded = (tvalid, tfirst) if tpath != NULL and tvalid * TIME_ENTRY < tst.st_size else None
    return ((st.st_size, _mtime_ns(&st)),
            (ist.st_size, _mtime_ns(&ist)) if ipath != NULL else None,
            (tst.st_size, _mtime_ns(&tst)) if tpath != NULL else None,
            f.last_offset if f.has_first_offset else None, c.cleaned,
            tuple([(c.epochs[i], c.epoch_offsets[i]) for i in range(c.epoch_count)]),
            c.inside,
            tuple([(c.steps[i][0], c.steps[i][1], c.steps[i][2], c.steps[i][3])
                   for i in range(c.step_count)]), padded, kept)


def timeindex_state(bytes path, int64_t cap):
    """``(state, last timestamp, last relative offset, size, mtime_ns)`` of a ``.timeindex``
    whose entries lie in its first ``cap`` bytes, followed by nothing or by zeros to the end
    (``INDEX_SLOW`` for anything else)."""
    cdef struct_stat st
    cdef int ok = 0, state = INDEX_SLOW
    cdef int64_t ts = -1, rel = 0, valid = 0, first = 0
    cdef const char *cpath = path
    cdef uint8_t *buf
    cap -= cap % TIME_ENTRY
    with nogil:
        buf = _read_regular(cpath, cap, &st, &ok, True)
        if ok:
            state = _time_index(buf, min(st.st_size, cap), st.st_size, True, &ts, &rel,
                                &valid, &first)
        free(buf)
    if not ok:
        return INDEX_SLOW, -1, 0, 0, 0
    return state, ts, rel, st.st_size, _mtime_ns(&st)


def summarize_small(bytes log_path, object timeindex_path, bint verify_crc, int64_t cap,
                    int64_t index_cap, object limit):
    """The fold of a small ``.log`` (see the module doc) and the state of its ``.timeindex``
    (``timeindex_path`` None: it has none), or None when the log needs the ordinary walk.
    ``limit`` caps the inflating of a legacy wrapper.

    Returns ``(size, mtime_ns, batches, valid_bytes, records, first_offset, last_offset,
    first_timestamp, max_timestamp, offset_of_max_timestamp, codec bits, magic bits,
    producer ids, transactional batches, control batches, index)``, ``index`` being
    :func:`timeindex_state`'s answer (None without a time index)."""
    cdef struct_stat st
    cdef Fold f
    cdef int ok = 0
    cdef bint clean = False
    cdef const char *cpath = log_path
    cdef uint8_t *buf = NULL
    _fresh_fold(&f, NULL, 0)
    try:
        with nogil:
            buf = _read_regular(cpath, cap, &st, &ok)
        if ok:
            clean = _fold_inflating(buf, st.st_size, verify_crc, &f, NULL, limit, 0, None, -1)
    finally:
        free(buf)
    if not ok or not clean:
        return None
    index = None if timeindex_path is None else timeindex_state(timeindex_path, index_cap)
    return _folded(&st, &f, index)


cdef tuple _folded(struct_stat *st, Fold *f, object index):
    """:func:`summarize_small`'s answer from a clean fold and its time index's state."""
    return (st.st_size, _mtime_ns(st), f.batches, f.valid_bytes, f.records,
            f.first_offset if f.has_first_offset else None,
            f.last_offset if f.has_first_offset else None,
            f.first_ts if f.has_first_ts else None, f.max_ts,
            f.max_ts_offset if f.has_max_ts_offset else None, f.codecs, f.magics,
            tuple([f.producers[i] for i in range(f.producer_count)]), f.txn, f.control, index)
