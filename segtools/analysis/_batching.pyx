"""The producers analysis's batching fold over a table's rows, in C.

A broker's partitions are mostly a few small segments, each handing the producers analysis
tens of batches: per partition, numpy's per-call cost (a dozen calls per producer) is more
than the rows' work, and a Python loop costs microseconds a row. Here each row updates its
producer's histograms (plain dicts, the same ones the vectorised fold fills) at C speed;
counters are summed over each run of one producer's rows and added to its object once per
run. ``segtools.analysis.producers.PartitionProducers._batching_columns`` is the rule
written with numpy; tests hold the two to the same figures on every fixture partition.
"""

from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint8_t

#: The per-minute histogram's bucket (ms).
cdef int64_t MINUTE_MS = 60000


cdef inline int64_t floor_div(int64_t a, int64_t b):
    """Python's ``a // b`` (rounds down, C's division truncates)."""
    cdef int64_t q = a / b
    if (a % b != 0) and ((a < 0) != (b < 0)):
        q -= 1
    return q


cdef inline void count(dict into, object key, int64_t by):
    cdef PyObject* had = PyDict_GetItem(into, key)
    if had == NULL:
        into[key] = by
    else:
        into[key] = <object>had + by


def fold_rows(object group, tuple labels, const int64_t[:] pid, const int64_t[:] epoch,
              const int64_t[:] records, const int64_t[:] size, const int64_t[:] codec,
              const int64_t[:] max_ts, const int64_t[:] first_ts, const uint8_t[:] windowed,
              const int64_t[:] window):
    """Fold rows into the producers' figures: ``group((pid, epoch))`` gives a producer's
    :class:`~segtools.analysis.producers.ProducerBatching`; ``labels[codec]`` a codec's name.
    Returns, per producer key, the rate buckets counted at the width its rate had before
    this table: ``{key: (batches per bucket, records per bucket)}``."""
    cdef Py_ssize_t n = pid.shape[0], i = 0, j
    cdef int64_t batches, recs, nbytes, first, last, width, ts
    cdef dict rates = {}, rate_b, rate_r, rpb, sizes, windows, codecs, per_minute
    cdef object g, key
    while i < n:
        key = (pid[i], epoch[i])
        g = group(key)
        rpb, sizes, windows = g.records_per_batch, g.sizes, g.windows
        codecs, per_minute = g.codecs, g.per_minute
        width = g.rate.width_ms
        pair = rates.get(key)
        if pair is None:
            pair = rates[key] = ({}, {})
        rate_b, rate_r = pair
        batches = recs = nbytes = 0
        first, last = first_ts[i], max_ts[i]
        j = i
        while j < n and pid[j] == pid[i] and epoch[j] == epoch[i]:  # one producer's run
            batches += 1
            recs += records[j]
            nbytes += size[j]
            count(rpb, records[j], 1)
            count(sizes, floor_div(size[j], 16) * 16, 1)
            if windowed[j]:
                count(windows, window[j], 1)
            count(codecs, labels[codec[j]], 1)
            ts = max_ts[j]
            count(per_minute, floor_div(ts, MINUTE_MS), 1)
            if ts >= 0:
                count(rate_b, floor_div(ts, width) * width, 1)
                count(rate_r, floor_div(ts, width) * width, records[j])
            if first_ts[j] < first:
                first = first_ts[j]
            if ts > last:
                last = ts
            j += 1
        g.batches += batches
        g.records += recs
        g.bytes += nbytes
        g.first_timestamp = first if g.first_timestamp is None else min(g.first_timestamp,
                                                                        first)
        g.last_timestamp = last if g.last_timestamp is None else max(g.last_timestamp, last)
        i = j
    return rates
