# The part of the compiled walk other kernels call from C: a whole segment's batch headers
# folded into running totals (segtools.storage._summary reads small segments and folds them
# here without building a table).

from libc.stdint cimport int64_t, uint8_t

#: Distinct producer ids a fold keeps; past that it gives up and the table walk takes over.
cdef enum:
    FOLD_PRODUCERS = 256
    FOLD_WRAPPERS = 1024  # compressed legacy wrappers a fold lists for inflating


cdef struct Fold:
    int64_t batches
    int64_t valid_bytes
    int64_t records
    int64_t first_offset
    int64_t last_offset
    int64_t first_ts
    int64_t max_ts
    int64_t max_ts_offset
    int64_t txn
    int64_t control
    bint has_first_offset
    bint has_first_ts
    bint has_max_ts_offset
    int codecs   # bit per compression id seen
    int magics   # bit per magic seen
    int64_t producer_count
    int64_t producers[FOLD_PRODUCERS]
    # compressed legacy wrappers: a wrapper's base offset is its first inner offset, known
    # only inflated. In: the bases of the first ``wrapper_known`` wrappers (the caller
    # inflated them); out: where each wrapper lies, and whether one had no base yet (the
    # fold's figures are then provisional: the caller inflates and folds again)
    const int64_t *wrapper_bases
    int64_t wrapper_known
    int64_t wrappers
    int64_t wrapper_at[FOLD_WRAPPERS]
    int64_t wrapper_size[FOLD_WRAPPERS]
    bint needs_bases

#: Leader epochs a check records the start of; past that the table walk takes over.
cdef enum:
    CHECK_EPOCHS = 64
    CHECK_STEPS = 64  # offset gaps and overlaps likewise
    CHECK_AHEAD = 64  # .index entries naming a later batch, waiting for it, likewise

cdef struct Checks:
    # in: a segment's plain indexes (every slot an entry, positions and offsets rising) and
    # what the partition's earlier segments left
    const uint8_t *index       # .index entries: relative offset int32, position int32
    int64_t index_entries
    const uint8_t *timeindex   # .timeindex entries: timestamp int64, relative offset int32
    int64_t time_entries
    int64_t base_offset        # the segment's (its file name)
    bint has_previous          # previous_last is known
    int64_t previous_last      # the largest offset of the earlier segments
    int64_t last_epoch         # the largest leader epoch of the earlier segments (-1: none)
    # out
    bint cleaned               # a batch only the log cleaner writes
    int64_t epoch_count        # new epochs met, with the base offset of each one's first batch
    int64_t epochs[CHECK_EPOCHS]
    int64_t epoch_offsets[CHECK_EPOCHS]
    int64_t inside             # time index entries naming a record inside its batch
    int64_t step_count         # where offsets do not run on: previous last, base, position,
    int64_t steps[CHECK_STEPS][4]  # and 1 for the segment's first batch

cdef bint fold_batches(const uint8_t *data, int64_t size, bint verify_crc,
                       Fold *f, Checks *c) noexcept nogil
