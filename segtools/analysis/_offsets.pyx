"""The ``__consumer_offsets`` replay's inner loop, in C: plain offset commits applied to state.

Most records of a real ``__consumer_offsets`` partition are offset commits that move a group's
offset forward (``OffsetMetadataManager.replay`` sets the group's offset for the partition);
the replay only keeps the latest per (group, topic, partition). One call takes a block's
decoded columns, writes those commits into the state arrays (one row per key code), and returns
the rows Python must see, in log order: those it applies (other record types, transaction
markers, transactional commits, keys seen for the first time, keys whose history is kept) and
the regressions and deletions the loop applied but Python reports (with the group's state at
that moment). Once one row of a key is left to Python, every later row of that key in the
block is too, so each key's rows are applied in log order.

A group's own records (a classic group's ``GroupMetadataValue``, the KIP-848 / KIP-932 parts)
each overwrite what an earlier record of the same key set (``GroupMetadataManager.replay``
replaces the group's metadata, a member's part, an epoch). The loop marks those of a group it
may fold with a *run*: the rows of a group between two of its rows Python sees (a row left to
it, or a regression or deletion of one of its keys, which reads the group's state). Python
applies, of a run, only the rows whose effect no later row of the same key in the run
overwrites (and the first of each key, which fixes the order a member's parts were added in),
in log order among the rows it sees, so every state it reads is the one of its moment.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t

# The integer columns of a key's state (its metadata string is kept beside them).
cpdef enum:
    S_OFFSET = 0
    S_LEADER_EPOCH = 1
    S_COMMIT_TIMESTAMP = 2
    S_EXPIRE_TIMESTAMP = 3
    S_VALUE_VERSION = 4
    S_LOG_PARTITION = 5
    S_LOG_OFFSET = 6
    S_LOG_TIMESTAMP = 7
    S_PRODUCER_ID = 8
    S_MARKER_OFFSET = 9
    S_MARKER_TIMESTAMP = 10
    S_WIDTH = 11

cdef int64_t MISSING = -9223372036854775807 - 1
#: "None" in a state column (no producer id, no marker).
NONE = MISSING


cpdef enum:
    # What the loop did with a row it hands to Python.
    PYTHON = 0      # nothing: Python applies it
    REGRESSED = 1   # applied; it moved the offset backwards: Python reports it
    DELETED = 2     # applied (a tombstone): Python reports the deletion


cpdef enum:
    # What a row is to the loop (``kinds``).
    OTHER_GROUP = 0  # a group not asked about: passed over
    PLAIN = 1        # a plain commit or tombstone: applied here when its key may be
    LEFT = 2         # anything else Python applies
    FOLDABLE = 3     # a group's own record whose effect a later one of its key overwrites


def apply_commits(const int8_t[::1] kinds, const int32_t[::1] key_code,
                  const int16_t[::1] vver, const int64_t[:, ::1] vals, int offset_slot,
                  int epoch_slot, int metadata_slot, int commit_slot, int expire_slot,
                  const int64_t[::1] log_offset, const int64_t[::1] log_timestamp,
                  int64_t log_partition, int64_t first_row, const uint8_t[::1] data,
                  const int8_t[::1] fast, int64_t[::1] blocked, int8_t[::1] present,
                  int64_t[::1] order, int64_t[:, ::1] state, list metadata,
                  int64_t[::1] rows, int8_t[::1] events, int64_t[:, ::1] previous,
                  int8_t[::1] was_present, list previous_metadata,
                  const int64_t[::1] group_code, const int8_t[::1] group_fast,
                  int64_t[::1] group_runs, int64_t[::1] run):
    """Apply the block's plain commits and tombstones (``kinds`` 1) of keys the loop may
    apply (``fast``), pass over rows of groups not asked about (``kinds`` 0), and list in
    ``rows`` (in log order) every row Python must see, with ``events`` saying why: a row it
    must apply itself, or a regression or deletion the loop applied, whose key's state before
    it is in ``previous`` / ``was_present`` / ``previous_metadata``. Returns how many rows.

    ``first_row`` numbers the block's rows in the whole replay: a key that becomes present is
    ordered by its row (the state's insertion order); ``blocked[k] == first_row`` marks a key
    with a row left to Python in this block: its later rows are left to Python too.

    ``FOLDABLE`` rows of a group the loop may fold (``group_fast``, by the row's
    ``group_code``; -1: none) are not listed: ``run`` gives each its group's run (-1 for the
    other rows); ``group_runs[g]`` counts the rows of group ``g`` Python sees, which end a
    run."""
    cdef int64_t n = kinds.shape[0]
    cdef int64_t cap = fast.shape[0]
    cdef int64_t groups = group_fast.shape[0]
    cdef int64_t size = data.shape[0]
    cdef int64_t i, k, m, p, f, g
    cdef int64_t out = 0
    cdef int8_t kind, event
    for i in range(n):
        run[i] = -1
        kind = kinds[i]
        if kind == OTHER_GROUP:
            continue
        g = group_code[i]
        if not 0 <= g < groups:
            g = -1
        if kind == FOLDABLE and g >= 0 and group_fast[g]:
            run[i] = group_runs[g]
            continue
        k = key_code[i]
        m = vals[i, metadata_slot + 1]
        p = vals[i, metadata_slot]
        if kind != PLAIN or not (0 <= k < cap and fast[k] and blocked[k] != first_row) or \
                (vver[i] >= 0 and not (0 <= m and 0 <= p and p + m <= size)):
            if 0 <= k < cap:
                blocked[k] = first_row
            if g >= 0:
                group_runs[g] += 1
            rows[out] = i
            events[out] = PYTHON
            out += 1
            continue
        if vver[i] < 0:
            event = DELETED
        elif present[k] and vals[i, offset_slot] < state[k, S_OFFSET]:
            event = REGRESSED
        else:
            event = PYTHON
        if event != PYTHON:
            if g >= 0:
                group_runs[g] += 1
            rows[out] = i
            events[out] = event
            was_present[out] = present[k]
            for f in range(S_WIDTH):
                previous[out, f] = state[k, f]
            previous_metadata.append(metadata[k])
            out += 1
        if event == DELETED:
            present[k] = 0
            metadata[k] = None
            continue
        if not present[k]:
            present[k] = 1
            order[k] = first_row + i
        state[k, S_OFFSET] = vals[i, offset_slot]
        state[k, S_LEADER_EPOCH] = vals[i, epoch_slot]
        state[k, S_COMMIT_TIMESTAMP] = vals[i, commit_slot]
        state[k, S_EXPIRE_TIMESTAMP] = vals[i, expire_slot]
        state[k, S_VALUE_VERSION] = vver[i]
        state[k, S_LOG_PARTITION] = log_partition
        state[k, S_LOG_OFFSET] = log_offset[i]
        state[k, S_LOG_TIMESTAMP] = log_timestamp[i]
        state[k, S_PRODUCER_ID] = MISSING
        state[k, S_MARKER_OFFSET] = MISSING
        state[k, S_MARKER_TIMESTAMP] = MISSING
        metadata[k] = PyUnicode_DecodeUTF8(<char *>&data[p], m, NULL) if m else ""
    return out
