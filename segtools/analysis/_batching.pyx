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
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint64_t

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


cdef int64_t COMPRESSION_MASK = 0x07  # attribute bits 0-2
cdef int64_t TIMESTAMP_TYPE_MASK = 0x08  # attribute bit 3: LogAppendTime
cdef int64_t DELETE_HORIZON_FLAG = 0x40  # v2 attribute bit 6


cdef inline int64_t wrapping_sub(int64_t a, int64_t b):
    """``a - b`` wrapping at 64 bits, as numpy's int64 subtraction does (C's signed overflow
    is undefined; a damaged header can hold any timestamp or offset)."""
    return <int64_t>(<uint64_t>a - <uint64_t>b)


def fold_table(object group, tuple labels, bint rates,
               const int8_t[:] magic, const int16_t[:] attributes, const int32_t[:] count_,
               const int64_t[:] base_offset, const int64_t[:] last_offset,
               const int64_t[:] size, const int64_t[:] base_ts, const int64_t[:] max_ts,
               const int64_t[:] producer_id, const int16_t[:] producer_epoch):
    """Fold a table's data batches into the producers' figures, reading the table's own
    columns (:class:`~segtools.decode.table.BatchTable`, its dtypes) and deriving per row
    what the vectorised fold derives with numpy (the id -1 and epoch -1 of a
    non-idempotent producer, the record count, codec, first timestamp, and whether the
    batch's open window counts): on a table of tens of rows those derived columns were
    most of the cost. ``group((pid, epoch))`` gives a producer's
    :class:`~segtools.analysis.producers.ProducerBatching`; ``labels[codec]`` a codec's name;
    ``rates``: count the rate buckets. Returns, per producer key, the rate buckets counted
    at the width its rate had before this table: ``{key: (batches per bucket, records per
    bucket)}`` (empty without ``rates``)."""
    cdef Py_ssize_t n = magic.shape[0], i = 0, j
    cdef int64_t first, last, width = 0, ts, pid, epoch, records, first_row, attrs
    # sums wrap at 64 bits as numpy's int64 sums do (unsigned: defined in C)
    cdef uint64_t batches, recs, nbytes
    cdef bint v2, horizon, create
    cdef dict out = {}, rate_b = None, rate_r = None, rpb, sizes, windows, codecs, per_minute
    cdef object g, key, pair
    while i < n:
        pid = producer_id[i]
        epoch = producer_epoch[i] if pid >= 0 else -1
        if pid < 0:
            pid = -1
        key = (pid, epoch)
        g = group(key)
        rpb, sizes, windows = g.records_per_batch, g.sizes, g.windows
        codecs, per_minute = g.codecs, g.per_minute
        if rates:
            width = g.rate.width_ms
            pair = out.get(key)
            if pair is None:
                pair = out[key] = ({}, {})
            rate_b, rate_r = pair
        batches = recs = nbytes = 0
        first = last = 0
        j = i
        while j < n:  # one producer's run
            if producer_id[j] >= 0:
                if producer_id[j] != pid or producer_epoch[j] != epoch:
                    break
            elif pid != -1 or epoch != -1:
                break
            attrs = attributes[j]
            v2 = magic[j] == 2
            horizon = v2 and (attrs & DELETE_HORIZON_FLAG) != 0
            records = count_[j] if count_[j] >= 0 else \
                <int64_t>(<uint64_t>last_offset[j] - <uint64_t>base_offset[j] + 1)
            first_row = base_ts[j] if v2 and not horizon else max_ts[j]
            create = (magic[j] != 0 and (attrs & TIMESTAMP_TYPE_MASK) == 0
                      and not horizon and records > 1)
            batches += 1
            recs += <uint64_t>records
            nbytes += <uint64_t>size[j]
            count(rpb, records, 1)
            count(sizes, floor_div(size[j], 16) * 16, 1)
            if create:
                count(windows, wrapping_sub(max_ts[j], base_ts[j]), 1)
            count(codecs, labels[attrs & COMPRESSION_MASK], 1)
            ts = max_ts[j]
            count(per_minute, floor_div(ts, MINUTE_MS), 1)
            if rates and ts >= 0:
                count(rate_b, floor_div(ts, width) * width, 1)
                count(rate_r, floor_div(ts, width) * width, records)
            if j == i or first_row < first:
                first = first_row
            if j == i or ts > last:
                last = ts
            j += 1
        g.batches += <int64_t>batches
        g.records += <int64_t>recs
        g.bytes += <int64_t>nbytes
        g.first_timestamp = first if g.first_timestamp is None else min(g.first_timestamp,
                                                                        first)
        g.last_timestamp = last if g.last_timestamp is None else max(g.last_timestamp, last)
        i = j
    return out
