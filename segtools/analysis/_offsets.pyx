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
replaces the group's metadata, a member's part, an epoch). While the loop holds the
transactional commits, it applies them itself, in log order, to :class:`ClassicGroups` and
:class:`ModernGroups` (per group and per member part: what is present, which row set it, the
epochs, the group's removal), and says for each row it hands to Python the state and
generation its group had at that row (what a regression reports); Python takes the bytes of
the latest values after each block and decodes them once, at the end. Otherwise (a history
is kept, or Python applies a record only the reference reads) the loop marks those of a
group it may fold with a *run*: the rows of a group between two of its rows Python sees (a row left to
it, or a regression or deletion of one of its keys, which reads the group's state). Python
applies, of a run, only the rows whose effect no later row of the same key in the run
overwrites (and the first of each key, which fixes the order a member's parts were added in),
in log order among the rows it sees, so every state it reads is the one of its moment.

A transactional offset commit (``TxnOffsetCommit``, in a transactional batch) is held per
producer until that producer's COMMIT or ABORT marker in the same partition
(``OffsetMetadataManager.replayEndTransactionMarker``): :class:`HeldCommits` keeps the held
commits in arrays, a list per producer in log order, and the loop applies them (COMMIT) or
drops them (ABORT) at the marker's row, each regression or deletion a COMMIT makes handed to
Python as a row at the marker, ending its group's run like any other.
"""

import numpy as np

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

# What an anomaly's row says of the commit that made it (``current``): its key's group, topic
# (interned codes), partition and key code, then the commit's state columns.
cpdef enum:
    C_GROUP = 0
    C_TOPIC = 1
    C_PARTITION = 2
    C_KEY = 3
    C_STATE = 4
    C_WIDTH = 4 + S_WIDTH

cdef int64_t MISSING = -9223372036854775807 - 1
#: "None" in a state column (no producer id, no marker).
NONE = MISSING


cpdef enum:
    # What the loop did with a row it hands to Python.
    PYTHON = 0      # nothing: Python applies it
    REGRESSED = 1   # applied; it moved the offset backwards: Python reports it
    DELETED = 2     # applied (a tombstone): Python reports the deletion
    REMOVED = 3     # applied (a group's tombstone: a classic group's, or a KIP-848 /
                    # KIP-932 group's epoch): Python reports the group's removal
    SUSPECT = 4     # applied (a classic group's metadata whose members' consumer-protocol
                    # bytes do not all read cleanly): Python says what is wrong with them


cpdef enum:
    # What a row is to the loop (``kinds``).
    OTHER_GROUP = 0  # a group not asked about: passed over
    PLAIN = 1        # a plain commit or tombstone: applied here when its key may be
    LEFT = 2         # anything else Python applies
    FOLDABLE = 3     # a group's own record whose effect a later one of its key overwrites
    HELD = 4         # a transactional commit or tombstone: held for its producer's marker
    ABORT = 5        # a producer's ABORT marker: its held commits dropped
    COMMIT = 6       # a producer's COMMIT marker: its held commits applied
    MODERN = 7       # a KIP-848 / KIP-932 group's record: applied to ``ModernGroups``
    CLASSIC = 8      # a classic group's ``GroupMetadataValue``: applied to ``ClassicGroups``


cpdef enum:
    # A group's state at a row (``GroupState.state`` of the classic protocol's groups).
    G_OTHER = 0   # not a classic group (None)
    G_EMPTY = 1
    G_STABLE = 2
    G_DEAD = 3


cpdef enum:
    # What a KIP-848 / KIP-932 record type sets (``GroupCoordinatorShard.replay``
    # dispatches on the type; a share group's records set what a consumer group's do).
    R_NONE = 0              # nothing but the group's kind
    R_EPOCH = 1             # the group epoch (its tombstone removes the group)
    R_TOPICS = 2            # the topic id -> name map (partition metadata)
    R_ASSIGNMENT_EPOCH = 3  # the target assignment's epoch
    R_METADATA = 4          # a member's parts, from here on: its metadata,
    R_TARGET = 5            # its target assignment,
    R_CURRENT = 6           # its current assignment
    PARTS = 3               # a member's parts


cdef class HeldCommits:
    """The transactional commits of one partition waiting for their producers' markers.
    Entries sit in arrays (reused once their marker has come: a free list), chained per
    producer code in log order (``head``/``tail``/``after``); ``row`` is where each was
    written in the whole replay, so the producers still open at the end are listed in the
    order their first held commit came (the order a dict of producers would keep)."""

    cdef public object key  # entry -> int64 [key code, group, topic, partition]
    cdef public object state  # entry -> the commit as a state row (``S_*`` columns)
    cdef public list metadata  # entry -> its metadata string
    cdef public object after  # entry -> the producer's next entry (-1: its last)
    cdef public object row  # entry -> its row in the whole replay
    cdef public object free  # a stack of free entries
    cdef public object head  # producer code -> its first entry (-1: none held)
    cdef public object tail
    cdef public object count  # producer code -> how many it holds
    cdef public int64_t free_top
    cdef public int64_t live

    def __init__(self):
        self.key = np.zeros((0, 4), np.int64)
        self.state = np.zeros((0, S_WIDTH), np.int64)
        self.metadata = []
        self.after = np.zeros(0, np.int64)
        self.row = np.zeros(0, np.int64)
        self.free = np.zeros(0, np.int64)
        self.head = np.zeros(0, np.int64)
        self.tail = np.zeros(0, np.int64)
        self.count = np.zeros(0, np.int64)
        self.free_top = 0
        self.live = 0

    def ensure(self, int64_t entries, int64_t producers):
        """Room for ``entries`` held commits at once and ``producers`` producer codes."""
        cdef int64_t have = len(self.after), grow
        if entries > have:
            grow = max(256, 2 * entries) - have
            self.key = np.concatenate([self.key, np.zeros((grow, 4), np.int64)])
            self.state = np.concatenate([self.state, np.zeros((grow, S_WIDTH), np.int64)])
            self.metadata += [None] * grow
            self.after = np.concatenate([self.after, np.full(grow, -1, np.int64)])
            self.row = np.concatenate([self.row, np.zeros(grow, np.int64)])
            # the new entries go under the free ones left, last first
            self.free = np.concatenate([self.free[:self.free_top],
                                        np.arange(have + grow - 1, have - 1, -1, dtype=np.int64)])
            self.free_top += grow
        have = len(self.head)
        if producers > have:
            grow = max(64, 2 * producers) - have
            self.head = np.concatenate([self.head, np.full(grow, -1, np.int64)])
            self.tail = np.concatenate([self.tail, np.full(grow, -1, np.int64)])
            self.count = np.concatenate([self.count, np.zeros(grow, np.int64)])

    def entries(self, int64_t producer):
        """A producer's held entries, in log order."""
        out = []
        cdef int64_t e = self.head[producer]
        while e >= 0:
            out.append(e)
            e = self.after[e]
        return out

    def open_producers(self):
        """The producer codes holding commits, in the order their first held commit came."""
        codes = np.flatnonzero(np.asarray(self.count) > 0)
        return codes[np.argsort(np.asarray(self.row)[np.asarray(self.head)[codes]],
                                kind="stable")].tolist()

    def clear(self):
        """Every entry freed (a partition's end)."""
        self.__init__()


cdef class ModernGroups:
    """The KIP-848 / KIP-932 groups of one replay as the coordinator's replay leaves them
    (``GroupMetadataManager.replay``: each record replaces the part of the group its key and
    type name, a tombstone removes it), applied in log order by the compiled loop instead of
    a Python object per record. Per group code: its last such record (the row and type:
    whether the group is a consumer or share group, and whether a later classic
    ``GroupMetadataValue`` made it classic again), its epochs (``MISSING``: none), its
    removal by an epoch tombstone, and the row of its latest partition metadata (the topic
    names). Per member (a group and member id, numbered by the replay) and part (metadata,
    target, current): whether present, the row that last added it (a member's parts keep the
    order they were added in, as a dict would), the row, type and version of its latest
    value, and the partition metadata row of that moment (an assignment names topics as
    they were named then); a member's ``live`` parts and the row that added its first (the
    members' order). The values' bytes are taken after each block, once per part the block
    set (``touched``), by the caller, which keeps them (``raw``)."""

    cdef public object last_row  # group -> its last record's row (-1: none)
    cdef public object last_type  # group -> that record's type
    cdef public object epoch
    cdef public object assignment_epoch
    cdef public object removed  # group -> [offset, timestamp, partition] of its epoch
    #                            tombstone, when that is its last record's doing (MISSING)
    cdef public object topics  # group -> its latest partition metadata's row (-1: none)
    cdef public object group_of  # member -> its group code
    cdef public object live  # member -> how many of its parts are present
    cdef public object created  # member -> the row that added its first present part
    cdef public object present  # member, part -> present
    cdef public object added  # member, part -> the row that last added it
    cdef public object value_row  # member, part -> its latest value's row
    cdef public object value_type
    cdef public object value_version
    cdef public object value_topics  # member, part -> the partition metadata row then
    cdef public list raw  # member * PARTS + part -> its latest value's bytes (the caller's)
    cdef public object touched  # the member parts the block set a value of
    cdef public object mark  # member * PARTS + part -> the block that last touched it
    cdef public int64_t n_touched
    cdef public int64_t members

    def __init__(self):
        self.last_row = np.zeros(0, np.int64)
        self.last_type = np.zeros(0, np.int64)
        self.epoch = np.zeros(0, np.int64)
        self.assignment_epoch = np.zeros(0, np.int64)
        self.removed = np.zeros((0, 3), np.int64)
        self.topics = np.zeros(0, np.int64)
        self.group_of = np.zeros(0, np.int64)
        self.live = np.zeros(0, np.int64)
        self.created = np.zeros(0, np.int64)
        self.present = np.zeros((0, PARTS), np.int8)
        self.added = np.zeros((0, PARTS), np.int64)
        self.value_row = np.zeros((0, PARTS), np.int64)
        self.value_type = np.zeros((0, PARTS), np.int64)
        self.value_version = np.zeros((0, PARTS), np.int64)
        self.value_topics = np.zeros((0, PARTS), np.int64)
        self.raw = []
        self.touched = np.zeros(0, np.int64)
        self.mark = np.zeros(0, np.int64)
        self.n_touched = 0
        self.members = 0

    def ensure(self, int64_t groups, int64_t members, int64_t rows):
        """Room for ``groups`` group codes, ``members`` members and a block of ``rows``."""
        cdef int64_t have = len(self.last_row), grow
        if groups > have:
            grow = max(1024, 2 * groups) - have
            self.last_row = np.concatenate([self.last_row, np.full(grow, -1, np.int64)])
            self.last_type = np.concatenate([self.last_type, np.zeros(grow, np.int64)])
            self.epoch = np.concatenate([self.epoch, np.full(grow, MISSING, np.int64)])
            self.assignment_epoch = np.concatenate([self.assignment_epoch,
                                                    np.full(grow, MISSING, np.int64)])
            self.removed = np.concatenate([self.removed, np.full((grow, 3), MISSING, np.int64)])
            self.topics = np.concatenate([self.topics, np.full(grow, -1, np.int64)])
        have = len(self.live)
        if members > have:
            grow = max(1024, 2 * members) - have
            self.group_of = np.concatenate([self.group_of, np.full(grow, -1, np.int64)])
            self.live = np.concatenate([self.live, np.zeros(grow, np.int64)])
            self.created = np.concatenate([self.created, np.zeros(grow, np.int64)])
            self.present = np.concatenate([self.present, np.zeros((grow, PARTS), np.int8)])
            for name in ("added", "value_row", "value_type", "value_version"):
                setattr(self, name, np.concatenate([getattr(self, name),
                                                    np.zeros((grow, PARTS), np.int64)]))
            self.value_topics = np.concatenate([self.value_topics,
                                                np.full((grow, PARTS), -1, np.int64)])
            self.raw += [None] * (grow * PARTS)
            self.mark = np.concatenate([self.mark, np.full(grow * PARTS, -1, np.int64)])
        if rows > len(self.touched):
            self.touched = np.zeros(max(1024, rows), np.int64)

    def member(self, int64_t group):
        """A new member of ``group``: its number."""
        self.ensure(0, self.members + 1, 0)
        self.group_of[self.members] = group
        self.members += 1
        return self.members - 1

    def clear(self):
        """Nothing held (handed to Python)."""
        self.__init__()


cdef class ClassicGroups:
    """The classic protocol's groups of one replay as ``GroupMetadataManager.replay`` leaves
    them (each ``GroupMetadataValue`` replaces the group's metadata, its tombstone removes
    the group), applied in log order by the compiled loop. Per group code: the row of its
    last record and of its last value (which made it a classic group: a KIP-848 record after
    it makes it a consumer or share group again), its generation (``MISSING``: none), its
    members' count, its removal (``MISSING``: none) and the version of its last value, whose
    bytes (protocol, leader, members) the caller takes after each block, once per group the
    block set (``touched``), and keeps (``raw``)."""

    cdef public object last_row  # group -> its last record's row (-1: none)
    cdef public object value_row  # group -> its last value's row (-1: none)
    cdef public object version
    cdef public object generation
    cdef public object members
    cdef public object removed  # group -> [offset, timestamp, partition] of its tombstone
    cdef public list raw  # group -> its last value's bytes (the caller's)
    cdef public object touched
    cdef public object mark  # group -> the block that last touched it
    cdef public int64_t n_touched

    def __init__(self):
        self.last_row = np.zeros(0, np.int64)
        self.value_row = np.zeros(0, np.int64)
        self.version = np.zeros(0, np.int64)
        self.generation = np.zeros(0, np.int64)
        self.members = np.zeros(0, np.int64)
        self.removed = np.zeros((0, 3), np.int64)
        self.raw = []
        self.touched = np.zeros(0, np.int64)
        self.mark = np.zeros(0, np.int64)
        self.n_touched = 0

    def ensure(self, int64_t groups, int64_t rows):
        """Room for ``groups`` group codes and a block of ``rows``."""
        cdef int64_t have = len(self.last_row), grow
        if groups > have:
            grow = max(1024, 2 * groups) - have
            self.last_row = np.concatenate([self.last_row, np.full(grow, -1, np.int64)])
            self.value_row = np.concatenate([self.value_row, np.full(grow, -1, np.int64)])
            self.version = np.concatenate([self.version, np.zeros(grow, np.int64)])
            self.generation = np.concatenate([self.generation,
                                              np.full(grow, MISSING, np.int64)])
            self.members = np.concatenate([self.members, np.zeros(grow, np.int64)])
            self.removed = np.concatenate([self.removed, np.full((grow, 3), MISSING, np.int64)])
            self.raw += [None] * grow
            self.mark = np.concatenate([self.mark, np.full(grow, -1, np.int64)])
        if rows > len(self.touched):
            self.touched = np.zeros(max(1024, rows), np.int64)

    def clear(self):
        """Nothing held (handed to Python)."""
        self.__init__()


cdef class _Moment:
    """What a group's state at a row is read from (both kinds of groups' arrays), and where
    it goes (``state``, ``generation``: one per row of the answer)."""

    cdef int64_t groups
    cdef int64_t[::1] modern_last
    cdef int64_t[::1] classic_value
    cdef int64_t[::1] members
    cdef int64_t[:, ::1] removed
    cdef int64_t[::1] generation
    cdef int8_t[::1] state_out
    cdef int64_t[::1] generation_out

    def __init__(self, ModernGroups modern, ClassicGroups classic, int8_t[::1] state_out,
                 int64_t[::1] generation_out):
        self.modern_last = modern.last_row
        self.classic_value = classic.value_row
        self.members = classic.members
        self.removed = classic.removed
        self.generation = classic.generation
        self.groups = min(self.modern_last.shape[0], self.classic_value.shape[0])
        self.state_out = state_out
        self.generation_out = generation_out


cdef inline void _group_moment(_Moment m, int64_t out, int64_t g) noexcept:
    """Row ``out`` of the answer gets group ``g``'s state and generation now (a classic
    group's state while no KIP-848 record came after its last value: ``GroupState.state``)."""
    cdef int64_t value
    if not 0 <= g < m.groups:
        m.state_out[out] = G_OTHER
        m.generation_out[out] = MISSING
        return
    m.generation_out[out] = m.generation[g]
    value = m.classic_value[g]
    if value < 0 or value < m.modern_last[g]:
        m.state_out[out] = G_OTHER
    elif m.removed[g, 0] != MISSING:
        m.state_out[out] = G_DEAD
    elif m.members[g] != 0:
        m.state_out[out] = G_STABLE
    else:
        m.state_out[out] = G_EMPTY


cdef inline int _event(int64_t out, int64_t i, int8_t event, int64_t k, int64_t group,
                        int64_t topic, int64_t partition, int64_t[::1] rows,
                        int8_t[::1] events, int64_t[:, ::1] previous, int8_t[::1] was_present,
                        list previous_metadata, const int8_t[::1] present,
                        const int64_t[:, ::1] state, list metadata,
                        int64_t[:, ::1] current, _Moment moment) except -1:
    """Row ``out`` of the answer: row ``i`` made a regression or deletion of key ``k``, whose
    state before it is copied; ``current`` gets the key (its state after, by the caller),
    ``moment`` the group's state and generation then."""
    cdef int64_t f
    _group_moment(moment, out, group)
    rows[out] = i
    events[out] = event
    was_present[out] = present[k]
    for f in range(S_WIDTH):
        previous[out, f] = state[k, f]
    previous_metadata.append(metadata[k])
    current[out, C_GROUP] = group
    current[out, C_TOPIC] = topic
    current[out, C_PARTITION] = partition
    current[out, C_KEY] = k
    return 0


cdef inline void _tombstone(int64_t[:, ::1] current, int64_t out, int64_t log_partition,
                            int64_t log_offset, int64_t log_timestamp,
                            int64_t producer_id) noexcept:
    """``current`` of a deletion: a tombstone as the replay holds one (no offset, no value
    version, epochs and timestamps -1), written at ``log_offset``."""
    current[out, C_STATE + S_OFFSET] = MISSING
    current[out, C_STATE + S_LEADER_EPOCH] = -1
    current[out, C_STATE + S_COMMIT_TIMESTAMP] = -1
    current[out, C_STATE + S_EXPIRE_TIMESTAMP] = -1
    current[out, C_STATE + S_VALUE_VERSION] = MISSING
    current[out, C_STATE + S_LOG_PARTITION] = log_partition
    current[out, C_STATE + S_LOG_OFFSET] = log_offset
    current[out, C_STATE + S_LOG_TIMESTAMP] = log_timestamp
    current[out, C_STATE + S_PRODUCER_ID] = producer_id
    current[out, C_STATE + S_MARKER_OFFSET] = MISSING
    current[out, C_STATE + S_MARKER_TIMESTAMP] = MISSING


def apply_commits(const int8_t[::1] kinds, const int32_t[::1] key_code,
                  const int16_t[::1] vver, const int64_t[:, ::1] vals, int offset_slot,
                  int epoch_slot, int metadata_slot, int commit_slot, int expire_slot,
                  int topic_slot, int partition_slot,
                  const int64_t[::1] log_offset, const int64_t[::1] log_timestamp,
                  int64_t log_partition, int64_t first_row, const uint8_t[::1] data,
                  const int8_t[::1] fast, int64_t[::1] blocked, int8_t[::1] present,
                  int64_t[::1] order, int64_t[:, ::1] state, list metadata,
                  int64_t[::1] rows, int8_t[::1] events, int64_t[:, ::1] previous,
                  int8_t[::1] was_present, list previous_metadata,
                  int64_t[:, ::1] current, list current_metadata,
                  int8_t[::1] group_state, int64_t[::1] generation,
                  const int16_t[::1] rtype, const int8_t[::1] roles,
                  const int64_t[::1] scalar_slot, const int64_t[::1] member_of,
                  ModernGroups modern, ClassicGroups classic, const int8_t[::1] suspect,
                  int generation_slot, int members_slot, const int64_t[::1] group_code, const int8_t[::1] group_fast,
                  int64_t[::1] group_runs, int64_t[::1] run,
                  const int64_t[::1] producer_code, const int64_t[::1] producer_id,
                  HeldCommits held):
    """Apply the block's plain commits and tombstones (``kinds`` 1) of keys the loop may
    apply (``fast``), hold its transactional ones (``HELD``) in ``held`` per producer
    (``producer_code``; ``producer_id`` is kept in the commit) and apply or drop them at their
    producer's marker (``COMMIT``, ``ABORT``), pass over rows of groups not asked about
    (``kinds`` 0), and list in ``rows`` (in log order) every row Python must see, with
    ``events`` saying why: a row it must apply itself, or a regression or deletion the loop
    applied, whose key's state before it is in ``previous`` / ``was_present`` /
    ``previous_metadata`` and whose key and commit are in ``current`` (and, for a
    regression, ``current_metadata``): a marker's row lists one for each commit it applied
    that regressed or deleted. Returns how many rows (at most the block's rows and the
    commits ``held`` holds at the start).

    ``first_row`` numbers the block's rows in the whole replay: a key that becomes present is
    ordered by its row (the state's insertion order); ``blocked[k] == first_row`` marks a key
    with a row left to Python in this block: its later rows are left to Python too. A
    ``HELD`` row's key is one the loop may apply, and no row of it is left to Python while
    it is held (the caller's to see to).

    ``MODERN`` rows (a KIP-848 / KIP-932 record of a known group: ``rtype``, what its type
    sets in ``roles``, the slot of the epoch it sets in ``scalar_slot``, its member's number
    by key code in ``member_of``) are applied to ``modern`` in log order (see
    :class:`ModernGroups`); an epoch tombstone is listed (``REMOVED``). ``CLASSIC`` rows (a
    classic group's metadata, its generation and members' count in ``generation_slot`` and
    ``members_slot``) are applied to ``classic``; a tombstone is listed (``REMOVED``), and a
    value whose members' consumer-protocol bytes do not all read cleanly (``suspect``)
    too (``SUSPECT``). ``group_state`` and ``generation`` get, for each row listed, its
    group's (or its anomaly's group's) state and generation at that row (``G_*``).

    ``FOLDABLE`` rows of a group the loop may fold (``group_fast``, by the row's
    ``group_code``; -1: none) are not listed: ``run`` gives each its group's run (-1 for the
    other rows); ``group_runs[g]`` counts the rows of group ``g`` Python sees, which end a
    run."""
    cdef int64_t n = kinds.shape[0]
    cdef int64_t cap = fast.shape[0]
    cdef int64_t groups = group_fast.shape[0]
    cdef int64_t size = data.shape[0]
    cdef int64_t i, k, m, p, f, g, e, pc
    cdef int64_t out = 0
    cdef int8_t kind, event
    cdef int64_t[:, ::1] hkey = held.key
    cdef int64_t[:, ::1] hstate = held.state
    cdef list hmeta = held.metadata
    cdef int64_t[::1] hafter = held.after
    cdef int64_t[::1] hrow = held.row
    cdef int64_t[::1] hfree = held.free
    cdef int64_t[::1] hhead = held.head
    cdef int64_t[::1] htail = held.tail
    cdef int64_t[::1] hcount = held.count
    cdef int64_t[::1] last_row = modern.last_row
    cdef int64_t[::1] last_type = modern.last_type
    cdef int64_t[::1] epoch = modern.epoch
    cdef int64_t[::1] assignment_epoch = modern.assignment_epoch
    cdef int64_t[:, ::1] removed = modern.removed
    cdef int64_t[::1] topics = modern.topics
    cdef int64_t[::1] live = modern.live
    cdef int64_t[::1] created = modern.created
    cdef int8_t[:, ::1] part_present = modern.present
    cdef int64_t[:, ::1] added = modern.added
    cdef int64_t[:, ::1] value_row = modern.value_row
    cdef int64_t[:, ::1] value_type = modern.value_type
    cdef int64_t[:, ::1] value_version = modern.value_version
    cdef int64_t[:, ::1] value_topics = modern.value_topics
    cdef int64_t[::1] touched = modern.touched
    cdef list raw = modern.raw
    cdef int64_t[::1] mark = modern.mark
    cdef int64_t modern_groups = last_row.shape[0]
    cdef int64_t members = live.shape[0]
    cdef int64_t keys = member_of.shape[0]
    cdef int64_t types = roles.shape[0]
    cdef int64_t row, t, r
    cdef int8_t role
    cdef int64_t[::1] c_last = classic.last_row
    cdef int64_t[::1] c_value = classic.value_row
    cdef int64_t[::1] c_version = classic.version
    cdef int64_t[::1] c_generation = classic.generation
    cdef int64_t[::1] c_members = classic.members
    cdef int64_t[:, ::1] c_removed = classic.removed
    cdef int64_t[::1] c_touched = classic.touched
    cdef int64_t[::1] c_mark = classic.mark
    cdef int64_t classic_groups = c_last.shape[0]
    cdef _Moment moment = _Moment(modern, classic, group_state, generation)
    modern.n_touched = 0
    classic.n_touched = 0
    for i in range(n):
        run[i] = -1
        kind = kinds[i]
        if kind == OTHER_GROUP:
            continue
        if kind == CLASSIC:
            g = group_code[i]
            if not 0 <= g < classic_groups:
                raise IndexError(i)  # the caller hands over known groups only
            row = first_row + i
            c_last[g] = row
            if vver[i] < 0:
                c_members[g] = 0
                c_removed[g, 0] = log_offset[i]
                c_removed[g, 1] = log_timestamp[i]
                c_removed[g, 2] = log_partition
                event = REMOVED
            else:
                c_value[g] = row
                c_version[g] = vver[i]
                c_generation[g] = vals[i, generation_slot]
                c_members[g] = vals[i, members_slot + 1]
                c_removed[g, 0] = MISSING
                if c_mark[g] != first_row:
                    c_mark[g] = first_row
                    c_touched[classic.n_touched] = g
                    classic.n_touched += 1
                if not suspect[i]:
                    continue
                event = SUSPECT
            _group_moment(moment, out, g)
            rows[out] = i
            events[out] = event
            current[out, C_GROUP] = g
            out += 1
            continue
        if kind == MODERN:
            g = group_code[i]
            t = rtype[i]
            if not (0 <= g < modern_groups and 0 <= t < types):
                raise IndexError(i)  # the caller hands over known groups and types only
            row = first_row + i
            role = roles[t]
            last_row[g] = row
            last_type[g] = t
            removed[g, 0] = MISSING
            if role == R_EPOCH:
                if vver[i] >= 0:
                    epoch[g] = vals[i, scalar_slot[t]]
                else:
                    epoch[g] = MISSING
                    removed[g, 0] = log_offset[i]
                    removed[g, 1] = log_timestamp[i]
                    removed[g, 2] = log_partition
                    _group_moment(moment, out, g)
                    rows[out] = i
                    events[out] = REMOVED
                    current[out, C_GROUP] = g
                    out += 1
            elif role == R_TOPICS:
                if vver[i] >= 0:
                    topics[g] = row
            elif role == R_ASSIGNMENT_EPOCH:
                assignment_epoch[g] = vals[i, scalar_slot[t]] if vver[i] >= 0 else MISSING
            elif role >= R_METADATA:
                k = key_code[i]
                m = member_of[k] if 0 <= k < keys else -1
                if m < 0:
                    continue  # no member id (the rule skips the part)
                if m >= members:
                    raise IndexError(i)
                r = role - R_METADATA
                if vver[i] >= 0:
                    if not part_present[m, r]:
                        part_present[m, r] = 1
                        added[m, r] = row
                        if live[m] == 0:
                            created[m] = row
                        live[m] += 1
                    value_row[m, r] = row
                    value_type[m, r] = t
                    value_version[m, r] = vver[i]
                    value_topics[m, r] = topics[g]
                    f = m * PARTS + r
                    if mark[f] != first_row:
                        mark[f] = first_row
                        touched[modern.n_touched] = f
                        modern.n_touched += 1
                elif part_present[m, r]:
                    part_present[m, r] = 0
                    live[m] -= 1
                    raw[m * PARTS + r] = None  # only what is present is kept
            continue
        if kind == ABORT or kind == COMMIT:
            pc = producer_code[i]
            e = hhead[pc]
            while e >= 0:
                k = hkey[e, 0]
                if kind == COMMIT:
                    g = hkey[e, 1]
                    if hstate[e, S_VALUE_VERSION] == MISSING:
                        _event(out, i, DELETED, k, g, hkey[e, 2], hkey[e, 3], rows, events,
                               previous, was_present, previous_metadata, present, state,
                               metadata, current, moment)
                        for f in range(S_WIDTH):
                            current[out, C_STATE + f] = hstate[e, f]
                        current[out, C_STATE + S_MARKER_OFFSET] = log_offset[i]
                        current[out, C_STATE + S_MARKER_TIMESTAMP] = log_timestamp[i]
                        out += 1
                        if 0 <= g < groups:
                            group_runs[g] += 1
                        present[k] = 0
                        metadata[k] = None
                    else:
                        if present[k] and hstate[e, S_OFFSET] < state[k, S_OFFSET]:
                            _event(out, i, REGRESSED, k, g, hkey[e, 2], hkey[e, 3], rows,
                                   events, previous, was_present, previous_metadata, present,
                                   state, metadata, current, moment)
                            for f in range(S_WIDTH):
                                current[out, C_STATE + f] = hstate[e, f]
                            current[out, C_STATE + S_MARKER_OFFSET] = log_offset[i]
                            current[out, C_STATE + S_MARKER_TIMESTAMP] = log_timestamp[i]
                            current_metadata.append(hmeta[e])
                            out += 1
                            if 0 <= g < groups:
                                group_runs[g] += 1
                        if not present[k]:
                            present[k] = 1
                            order[k] = first_row + i
                        for f in range(S_WIDTH):
                            state[k, f] = hstate[e, f]
                        state[k, S_MARKER_OFFSET] = log_offset[i]
                        state[k, S_MARKER_TIMESTAMP] = log_timestamp[i]
                        metadata[k] = hmeta[e]
                hmeta[e] = None
                hfree[held.free_top] = e
                held.free_top += 1
                held.live -= 1
                f = hafter[e]
                hafter[e] = -1
                e = f
            hhead[pc] = -1
            htail[pc] = -1
            hcount[pc] = 0
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
        if kind == HELD:
            held.free_top -= 1
            e = hfree[held.free_top]
            held.live += 1
            pc = producer_code[i]
            hkey[e, 0] = k
            hkey[e, 1] = g
            hkey[e, 2] = vals[i, topic_slot]
            hkey[e, 3] = vals[i, partition_slot]
            hrow[e] = first_row + i
            if vver[i] < 0:  # a tombstone: what the Python rule holds for one
                hstate[e, S_OFFSET] = MISSING
                hstate[e, S_LEADER_EPOCH] = -1
                hstate[e, S_COMMIT_TIMESTAMP] = -1
                hstate[e, S_EXPIRE_TIMESTAMP] = -1
                hstate[e, S_VALUE_VERSION] = MISSING
                hmeta[e] = ""
            else:
                hstate[e, S_OFFSET] = vals[i, offset_slot]
                hstate[e, S_LEADER_EPOCH] = vals[i, epoch_slot]
                hstate[e, S_COMMIT_TIMESTAMP] = vals[i, commit_slot]
                hstate[e, S_EXPIRE_TIMESTAMP] = vals[i, expire_slot]
                hstate[e, S_VALUE_VERSION] = vver[i]
                # the caller hands over no held row whose metadata lies outside the data
                hmeta[e] = PyUnicode_DecodeUTF8(<char *>&data[p], m, NULL) \
                    if 0 < m and 0 <= p and p + m <= size else ""
            hstate[e, S_LOG_PARTITION] = log_partition
            hstate[e, S_LOG_OFFSET] = log_offset[i]
            hstate[e, S_LOG_TIMESTAMP] = log_timestamp[i]
            hstate[e, S_PRODUCER_ID] = producer_id[i]
            hstate[e, S_MARKER_OFFSET] = MISSING
            hstate[e, S_MARKER_TIMESTAMP] = MISSING
            hafter[e] = -1
            if htail[pc] >= 0:
                hafter[htail[pc]] = e
            else:
                hhead[pc] = e
            htail[pc] = e
            hcount[pc] += 1
            continue
        if kind != PLAIN or not (0 <= k < cap and fast[k] and blocked[k] != first_row) or \
                (vver[i] >= 0 and not (0 <= m and 0 <= p and p + m <= size)):
            if 0 <= k < cap:
                blocked[k] = first_row
            if g >= 0:
                group_runs[g] += 1
            _group_moment(moment, out, g)
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
            _event(out, i, event, k, vals[i, 0], vals[i, topic_slot], vals[i, partition_slot],
                   rows, events, previous, was_present, previous_metadata, present, state,
                   metadata, current, moment)
        if event == DELETED:
            _tombstone(current, out, log_partition, log_offset[i], log_timestamp[i], MISSING)
            out += 1
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
        if event == REGRESSED:
            for f in range(S_WIDTH):
                current[out, C_STATE + f] = state[k, f]
            current_metadata.append(metadata[k])
            out += 1
    return out
