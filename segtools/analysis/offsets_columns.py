"""A ``__consumer_offsets`` replay's anomalies as columns, one block of records at a time.

A story-telling offsets log (resets, rewinds, expirations) holds hundreds of thousands of
regressions and deletions per GiB. Most are found by the compiled loop, which already holds
each one's fields in arrays; made into an object and a line one at a time they cost more than
the rest of the replay. A sink that takes columns (:class:`ColumnSink`: the CLI's spools) is
handed each block's anomalies per kind, in the order they were found, and renders them in
bulk; any other sink, and the API's answer, still gets the objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(slots=True)
class RegressionColumns:
    """Offset regressions: what :meth:`OffsetRegression.to_json` says of each, column by
    column (``timestamp`` is when the commit took effect: its marker's for a transactional
    one)."""

    group: list[str] = field(default_factory=list)
    topic: list[str] = field(default_factory=list)
    partition: list[int] = field(default_factory=list)
    previous_offset: list[int] = field(default_factory=list)
    offset: list[int] = field(default_factory=list)
    timestamp: list[int] = field(default_factory=list)
    previous_timestamp: list[int] = field(default_factory=list)
    commit_timestamp: list[int] = field(default_factory=list)
    group_state: list[str | None] = field(default_factory=list)
    generation: list[int | None] = field(default_factory=list)
    log_partition: list[int] = field(default_factory=list)
    log_offset: list[int] = field(default_factory=list)
    log_timestamp: list[int] = field(default_factory=list)


@dataclass(slots=True)
class DeletionColumns:
    """Offset deletions (tombstones), column by column (``last_offset`` None: nothing was
    committed before)."""

    group: list[str] = field(default_factory=list)
    topic: list[str] = field(default_factory=list)
    partition: list[int] = field(default_factory=list)
    last_offset: list[int | None] = field(default_factory=list)
    log_partition: list[int] = field(default_factory=list)
    log_offset: list[int] = field(default_factory=list)
    log_timestamp: list[int] = field(default_factory=list)


@dataclass(slots=True)
class GroupDeletionColumns:
    """Removed groups (a group's tombstone), column by column."""

    group: list[str] = field(default_factory=list)
    log_partition: list[int] = field(default_factory=list)
    log_offset: list[int] = field(default_factory=list)
    log_timestamp: list[int] = field(default_factory=list)


@dataclass(slots=True)
class FoundColumns:
    """One block's anomalies, each kind in the order found."""

    regressions: RegressionColumns
    deletions: DeletionColumns
    group_deletions: GroupDeletionColumns

    def __len__(self) -> int:
        return (len(self.regressions.group) + len(self.deletions.group)
                + len(self.group_deletions.group))


@runtime_checkable
class ColumnSink(Protocol):
    """A sink that renders a block's anomalies at once (instead of one call per object)."""

    def take(self, found: FoundColumns) -> None: ...


def spliced(compiled: np.ndarray, first: list, rest: list) -> list:
    """A column whose entries come from two sources: where ``compiled`` (a mask in the
    order found) is set, the next of ``first``, elsewhere the next of ``rest``."""
    if not len(rest):
        return first
    if not len(first):
        return rest
    out: list = [None] * len(compiled)
    where = np.flatnonzero(compiled).tolist()
    elsewhere = np.flatnonzero(~compiled).tolist()
    for i, v in zip(where, first, strict=True):
        out[i] = v
    for i, v in zip(elsewhere, rest, strict=True):
        out[i] = v
    return out
