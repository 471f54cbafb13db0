"""The ``offsets`` command's regression and deletion lines of one block, written in C.

A story-telling ``__consumer_offsets`` log makes about 1.4 M anomaly lines per GiB; written by
f-strings row by row they cost about a microsecond each, a quarter to a third of the replay.
Here one call writes a block's lines into one growing buffer: the fixed parts, the names'
bytes (each group and topic-partition made terminal-safe once, by the caller's callbacks,
which reuse the one escaping function, and cached in the caller's dicts), the moments'
bytes (each distinct moment written once by the caller, the rows taking theirs by index) and
the integers, formatted here. Whatever is not a plain 64-bit integer (a ``None``, a
difference past 64 bits) is written as Python's ``str`` writes it, so the bytes are those of
the f-strings they replace.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy


cdef struct Buffer:
    char *data
    Py_ssize_t size
    Py_ssize_t capacity


cdef int _reserve(Buffer *buf, Py_ssize_t more) except -1:
    cdef Py_ssize_t want = buf.size + more
    cdef Py_ssize_t capacity = buf.capacity
    cdef char *grown
    if want <= capacity:
        return 0
    while capacity < want:
        capacity = capacity * 2 if capacity else 65536
    grown = <char *> realloc(buf.data, capacity)
    if grown == NULL:
        raise MemoryError()
    buf.data = grown
    buf.capacity = capacity
    return 0


cdef inline int _put(Buffer *buf, const char *text, Py_ssize_t n) except -1:
    _reserve(buf, n)
    memcpy(buf.data + buf.size, text, n)
    buf.size += n
    return 0


cdef inline int _put_bytes(Buffer *buf, bytes text) except -1:
    return _put(buf, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text))


cdef int _put_int64(Buffer *buf, int64_t value) except -1:
    """A 64-bit integer in decimal, as ``str`` writes it."""
    cdef char digits[24]
    cdef int n = 0
    cdef uint64_t magnitude = (<uint64_t> 0 - <uint64_t> value) if value < 0 else <uint64_t> value
    while True:
        digits[23 - n] = <char> (48 + magnitude % 10)
        magnitude //= 10
        n += 1
        if magnitude == 0:
            break
    if value < 0:
        digits[23 - n] = b'-'
        n += 1
    return _put(buf, &digits[24 - n], n)


cdef int _put_number(Buffer *buf, object value) except -1:
    """An integer column's entry: in C when it is a plain 64-bit int, else ``str(value)``."""
    cdef int overflow = 0
    cdef long long number
    if PyLong_CheckExact(value):
        number = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            return _put_int64(buf, number)
    return _put_bytes(buf, str(value).encode("utf-8"))


cdef int _put_difference(Buffer *buf, object after, object before) except -1:
    """``after - before``, in C unless either is not a plain 64-bit int or it overflows."""
    cdef int overflow_a = 0, overflow_b = 0
    cdef long long a, b, d
    if PyLong_CheckExact(after) and PyLong_CheckExact(before):
        a = PyLong_AsLongLongAndOverflow(after, &overflow_a)
        b = PyLong_AsLongLongAndOverflow(before, &overflow_b)
        if not overflow_a and not overflow_b and not __builtin_ssubll_overflow(a, b, &d):
            return _put_int64(buf, d)
    return _put_bytes(buf, str(after - before).encode("utf-8"))


cdef extern from *:
    bint __builtin_ssubll_overflow(long long a, long long b, long long *out) nogil


cdef bytes _name(dict cache, object key, object make):
    """The cached bytes of a name (``make(key)`` the first time it is met)."""
    cdef PyObject *found = PyDict_GetItem(cache, key)
    if found != NULL:
        return <bytes> found
    return make(key)


cdef bytes _partition_name(dict cache, object topic, object partition, object make):
    """The cached bytes of a topic-partition (``make(topic, partition)`` the first time)."""
    cdef PyObject *per_topic = PyDict_GetItem(cache, topic)
    cdef PyObject *found
    if per_topic != NULL:
        found = PyDict_GetItem(<dict> per_topic, partition)
        if found != NULL:
            return <bytes> found
    return make(topic, partition)


cdef bytes _finish(Buffer *buf):
    """The buffer's lines as bytes (the last newline left out), and the buffer freed."""
    try:
        return PyBytes_FromStringAndSize(buf.data, buf.size - 1 if buf.size else 0)
    finally:
        free(buf.data)
        buf.data = NULL


cdef int _put_head(Buffer *buf, bytes moment, bytes group, bytes partition) except -1:
    """A text line's start, shared by regressions and deletions: ``  <moment>  <group>
    <topic-partition>``."""
    _put(buf, b"  ", 2)
    _put_bytes(buf, moment)
    _put(buf, b"  ", 2)
    _put_bytes(buf, group)
    _put(buf, b"  ", 2)
    _put_bytes(buf, partition)
    return 0


cdef int _put_where(Buffer *buf, bytes where_head, object log_partition,
                    object log_offset) except -1:
    """A text line's end: where in ``__consumer_offsets`` the record lies, ``[<where_head>
    <partition> @<offset>]``, and the newline."""
    _put_bytes(buf, where_head)
    _put_number(buf, log_partition)
    _put(buf, b" @", 2)
    _put_number(buf, log_offset)
    _put(buf, b"]\n", 2)
    return 0


cdef int _check_lengths(Py_ssize_t rows, tuple columns, Py_ssize_t moments,
                        object keep) except -1:
    """Every column of a block, its moments' index and ``keep`` one item per row: the loops
    index them without bounds checks."""
    for column in columns:
        if len(column) != rows:
            raise ValueError("the columns differ in length")
    if moments != rows or (keep is not None and len(keep) != rows):
        raise ValueError("the columns differ in length")
    return 0


cdef int _put_json_where(Buffer *buf, object log_partition, object log_offset,
                         object log_timestamp) except -1:
    """A JSON line's end: where in ``__consumer_offsets`` the record lies, and the newline."""
    _put(buf, b',"log_partition":', 17)
    _put_number(buf, log_partition)
    _put(buf, b',"log_offset":', 14)
    _put_number(buf, log_offset)
    _put(buf, b',"log_timestamp":', 17)
    _put_number(buf, log_timestamp)
    _put(buf, b"}\n", 2)
    return 0


def regression_text(list moments, const int64_t[:] moment_of, list group, list topic,
                    list partition, list previous_offset, list offset, list group_state,
                    list generation, list log_partition, list log_offset, object keep,
                    dict groups, object make_group, dict partitions, object make_partition,
                    bytes where_head):
    """The regression lines of a block (those ``keep`` marks, all when None), each ended by
    a newline but the last, and how many: ``  <moment>  <group>  <topic-partition>:
    <before> -> <offset> (<delta>)[; group <state>, generation <generation>]  [<where_head><log
    partition> @<log offset>]``. ``moments`` are the distinct moments' bytes, ``moment_of``
    each row's index into them; ``groups`` and ``partitions`` (topic -> partition -> bytes)
    cache the names' terminal-safe bytes, ``make_group``/``make_partition`` make (and cache)
    a missing one."""
    cdef Buffer buf = Buffer(NULL, 0, 0)
    cdef Py_ssize_t i, rows = len(group), count = 0
    cdef dict states = {}
    cdef object state
    cdef PyObject *state_bytes
    _check_lengths(rows, (topic, partition, previous_offset, offset, group_state, generation,
                   log_partition, log_offset), moment_of.shape[0], keep)
    try:
        for i in range(rows):
            if keep is not None and not keep[i]:
                continue
            count += 1
            _put_head(&buf, <bytes> moments[moment_of[i]],
                      _name(groups, group[i], make_group),
                      _partition_name(partitions, topic[i], partition[i], make_partition))
            _put(&buf, b": ", 2)
            _put_number(&buf, previous_offset[i])
            _put(&buf, b" -> ", 4)
            _put_number(&buf, offset[i])
            _put(&buf, b" (", 2)
            _put_difference(&buf, offset[i], previous_offset[i])
            _put(&buf, b")", 1)
            state = group_state[i]
            if state:
                state_bytes = PyDict_GetItem(states, state)
                if state_bytes == NULL:
                    states[state] = str(state).encode("utf-8")
                    state_bytes = PyDict_GetItem(states, state)
                _put(&buf, b"; group ", 8)
                _put_bytes(&buf, <bytes> state_bytes)
                _put(&buf, b", generation ", 13)
                _put_number(&buf, generation[i])
            _put(&buf, b"  ", 2)
            _put_where(&buf, where_head, log_partition[i], log_offset[i])
        return _finish(&buf), count
    finally:
        free(buf.data)


def deletion_text(list moments, const int64_t[:] moment_of, list group, list topic,
                  list partition, list last_offset, list log_partition, list log_offset,
                  object keep, dict groups, object make_group, dict partitions,
                  object make_partition, bytes where_head):
    """The deletion lines of a block, as :func:`regression_text` writes its own: ``
    <moment>  <group>  <topic-partition> (was <last offset>)  [<where_head><log partition>
    @<log offset>]``."""
    cdef Buffer buf = Buffer(NULL, 0, 0)
    cdef Py_ssize_t i, rows = len(group), count = 0
    _check_lengths(rows, (topic, partition, last_offset, log_partition, log_offset),
                   moment_of.shape[0], keep)
    try:
        for i in range(rows):
            if keep is not None and not keep[i]:
                continue
            count += 1
            _put_head(&buf, <bytes> moments[moment_of[i]],
                      _name(groups, group[i], make_group),
                      _partition_name(partitions, topic[i], partition[i], make_partition))
            _put(&buf, b" (was ", 6)
            _put_number(&buf, last_offset[i])
            _put(&buf, b")  ", 3)
            _put_where(&buf, where_head, log_partition[i], log_offset[i])
        return _finish(&buf), count
    finally:
        free(buf.data)


cdef inline int _put_null_or_number(Buffer *buf, object value) except -1:
    if value is None:
        return _put(buf, b"null", 4)
    return _put_number(buf, value)


cdef int _put_json_names(Buffer *buf, dict cache, object make, object group, object topic,
                         const char *between, Py_ssize_t between_size) except -1:
    """A group and a topic as JSON strings, as ``render.dumps`` writes one object holding
    both: as UTF-8, or both in ASCII escapes when either holds a lone surrogate (its entry's
    UTF-8 form None). ``cache`` maps a name to its (UTF-8 or None, ASCII) bytes."""
    cdef PyObject *found = PyDict_GetItem(cache, group)
    cdef tuple g = <tuple> found if found != NULL else make(group)
    found = PyDict_GetItem(cache, topic)
    cdef tuple t = <tuple> found if found != NULL else make(topic)
    cdef int form = 0 if g[0] is not None and t[0] is not None else 1
    _put_bytes(buf, <bytes> g[form])
    _put(buf, between, between_size)
    _put_bytes(buf, <bytes> t[form])
    return 0


def regression_json(list group, list topic, list partition, list previous_offset, list offset,
                    list timestamp, list previous_timestamp, list commit_timestamp,
                    list group_state, list generation, list log_partition, list log_offset,
                    list log_timestamp, object keep, dict names, object make_name):
    """The regressions' JSON lines of a block (those ``keep`` marks), each ended by a newline
    but the last, and how many: :meth:`OffsetRegression.to_json` as ``render.dumps`` writes
    it. ``names`` caches each name's JSON string bytes (UTF-8 or None, ASCII); ``make_name``
    makes (and caches) a missing one."""
    cdef Buffer buf = Buffer(NULL, 0, 0)
    cdef Py_ssize_t i, rows = len(group), count = 0
    cdef object state
    cdef PyObject *found
    _check_lengths(rows, (topic, partition, previous_offset, offset, timestamp,
                   previous_timestamp, commit_timestamp, group_state, generation,
                   log_partition, log_offset, log_timestamp), rows, keep)
    try:
        for i in range(rows):
            if keep is not None and not keep[i]:
                continue
            count += 1
            _put(&buf, b'{"type":"offset_regression","group":', 36)
            _put_json_names(&buf, names, make_name, group[i], topic[i], b',"topic":', 9)
            _put(&buf, b',"partition":', 13)
            _put_number(&buf, partition[i])
            _put(&buf, b',"previous_offset":', 19)
            _put_number(&buf, previous_offset[i])
            _put(&buf, b',"offset":', 10)
            _put_number(&buf, offset[i])
            _put(&buf, b',"delta":', 9)
            _put_difference(&buf, offset[i], previous_offset[i])
            _put(&buf, b',"timestamp":', 13)
            _put_number(&buf, timestamp[i])
            _put(&buf, b',"previous_timestamp":', 22)
            _put_number(&buf, previous_timestamp[i])
            _put(&buf, b',"commit_timestamp":', 20)
            _put_number(&buf, commit_timestamp[i])
            _put(&buf, b',"group_state":', 15)
            state = group_state[i]
            if state is None:
                _put(&buf, b"null", 4)
            else:
                found = PyDict_GetItem(names, state)
                _put_bytes(&buf, <bytes> ((<tuple> found) if found != NULL
                                          else make_name(state))[1])
            _put(&buf, b',"generation":', 14)
            _put_null_or_number(&buf, generation[i])
            _put_json_where(&buf, log_partition[i], log_offset[i], log_timestamp[i])
        return _finish(&buf), count
    finally:
        free(buf.data)


def deletion_json(list group, list topic, list partition, list last_offset, list log_partition,
                  list log_offset, list log_timestamp, object keep, dict names,
                  object make_name):
    """The deletions' JSON lines of a block, as :func:`regression_json` writes its own
    (:meth:`OffsetDeletion.to_json`)."""
    cdef Buffer buf = Buffer(NULL, 0, 0)
    cdef Py_ssize_t i, rows = len(group), count = 0
    _check_lengths(rows, (topic, partition, last_offset, log_partition, log_offset,
                   log_timestamp), rows, keep)
    try:
        for i in range(rows):
            if keep is not None and not keep[i]:
                continue
            count += 1
            _put(&buf, b'{"type":"offset_deleted","group":', 33)
            _put_json_names(&buf, names, make_name, group[i], topic[i], b',"topic":', 9)
            _put(&buf, b',"partition":', 13)
            _put_number(&buf, partition[i])
            _put(&buf, b',"last_offset":', 15)
            _put_null_or_number(&buf, last_offset[i])
            _put(&buf, b',"timestamp":', 13)
            _put_number(&buf, log_timestamp[i])
            _put_json_where(&buf, log_partition[i], log_offset[i], log_timestamp[i])
        return _finish(&buf), count
    finally:
        free(buf.data)
