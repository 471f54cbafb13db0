"""The read-ahead's burst (:class:`segtools.storage.source.ReadAhead`) as one call that holds
no GIL from its first piece to its last.

The burst brings a cold file's range ahead of the walk into the page cache a piece at a time
(``sendfile`` to ``/dev/null``: the kernel's own readahead, no copy). Written in Python, each
piece ended with the thread taking the GIL back to ask for the next one; while the walk's
thread held it (its Python work between chunks, or a numpy read of a page not yet cached),
the burst waited up to the interpreter's switch interval, 5 ms, with the device idle: a cold
``verify`` of 500 x 100 B spent 0.4-1.4 s of its 2-3 s between pieces with bytes still to ask
for. Here the pieces follow each other in C; the GIL is taken back only once the burst has
caught up with what the walk asked for.

The walk and the burst share two positions in a small array (``state``): how far the device
was asked for (:data:`ASKED`, written by the walk under the read-ahead's lock) and how far the
pieces were sent (:data:`ISSUED`, written here before each piece, and moved on by the walk past
what it has already walked). Each is one aligned 8-byte word, read and written whole; a piece
sent twice because the two wrote at once costs a call over cached pages, nothing more.
"""

from libc.errno cimport EINVAL, ENOSYS, EOPNOTSUPP, errno
from libc.stdint cimport int64_t
from posix.types cimport off_t

cdef extern from "<sys/sendfile.h>" nogil:
    ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)

cdef extern from *:
    """
    static inline long long segtools_ra_load(const long long *p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    static inline void segtools_ra_store(long long *p, long long v) {
        __atomic_store_n(p, v, __ATOMIC_RELEASE);
    }
    """
    long long segtools_ra_load(const long long *p) nogil
    void segtools_ra_store(long long *p, long long v) nogil

cdef enum:
    ASKED_SLOT = 0
    ISSUED_SLOT = 1
    NO_SPLICE_STATUS = -1

#: Slots of the shared ``state`` array.
ASKED = ASKED_SLOT
ISSUED = ISSUED_SLOT
#: What :func:`burst` returns when the file system cannot splice (the caller asks with advice).
NO_SPLICE = NO_SPLICE_STATUS


def burst(long long[::1] state, int sink, int fd, int64_t origin, int64_t size, int next_fd,
          int64_t end, int64_t piece) -> int:
    """Send the bytes from ``state[ISSUED]`` up to ``state[ASKED]`` (read again before every
    piece: the walk moves it on meanwhile) to ``sink``, ``piece`` bytes a call, never across
    ``end``. Positions below ``size`` are ``fd``'s from ``origin`` on, positions past it are
    ``next_fd``'s from its start (the segment walked next; -1: none, and ``end`` is ``size``).
    Returns 0 once nothing is left, or :data:`NO_SPLICE` with ``state[ISSUED]`` back at the
    piece that could not be sent. A piece that fails otherwise (the file ended early, an I/O
    error the walk will meet and name itself) is passed over: asking ahead is a hint."""
    cdef long long lo, hi, n
    cdef off_t at
    cdef int f
    cdef ssize_t got
    cdef int status = 0
    with nogil:
        while True:
            lo = segtools_ra_load(&state[ISSUED_SLOT])
            hi = min(segtools_ra_load(&state[ASKED_SLOT]), end)
            if lo >= hi:
                break
            if lo < size:
                n = min(piece, hi - lo, size - lo)
                f, at = fd, origin + lo
            elif next_fd >= 0:
                n = min(piece, hi - lo)
                f, at = next_fd, lo - size
            else:
                break
            segtools_ra_store(&state[ISSUED_SLOT], lo + n)
            got = sendfile(sink, f, &at, <size_t>n)
            if got < 0 and (errno == EINVAL or errno == ENOSYS or errno == EOPNOTSUPP):
                segtools_ra_store(&state[ISSUED_SLOT], lo)
                status = NO_SPLICE_STATUS
                break
    return status
