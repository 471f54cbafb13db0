"""``verify --salvage``: past a corrupt batch, resynchronise on the next header whose CRC
validates, and report exactly which bytes and offsets were lost (``salvage_skipped``).

Kafka's reader gives up on a segment at the first batch whose framing it cannot follow; an
operator recovering data from a damaged copy wants every batch the damage did not touch. A
batch whose CRC fails but whose length leads to a valid next batch is kept (flagged
``crc_mismatch``: only its payload is suspect). When the length itself leads nowhere, the batch
is counted as lost and the search goes on from the byte after its start.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode import _walk
from segtools.decode.source import Source
from segtools.decode.table import BatchTable
from segtools.decode.walk import WINDOW_BYTES, Walked, walk
from segtools.findings import Finding, finding
from segtools.formats import batch as v2

#: Findings after which the walk no longer knows where the next batch starts.
RESYNC_CODES = frozenset({"corrupt_batch_length", "invalid_magic", "batch_too_small",
                          "truncated_tail", "invalid_compression"})


def _finding_rank(findings: tuple[Finding, ...], i: int) -> tuple[int, int]:
    """Order of a finding among the items at its position: a batch's CRC finding comes right
    after the batch, its other findings after that."""
    f = findings[i]
    return (f.position or 0, 1 if f.code == "crc_mismatch" else 2)


def _stop(chunk: Walked, source: Source, end: int) -> tuple[int, bool] | None:
    """Where this chunk's batches stop being trustworthy: ``(position, row kept)``, or None.

    A framing finding stops the walk after the batch it belongs to (that batch was read); a
    batch whose CRC fails and whose length does not lead to a valid batch stops it before."""
    t = chunk.table
    stops: list[tuple[int, int, bool]] = []  # (position, rank, keep the row at position)
    for i, f in enumerate(chunk.findings):
        if f.code in RESYNC_CODES:
            stops.append((*_finding_rank(chunk.findings, i), True))
            break
    for r in np.flatnonzero(t.crc_valid == 0):
        after = int(t.end[r])
        if after < end and not _valid_at(source, after, end):
            stops.append((int(t.position[r]), 0, False))
            break
    if not stops:
        return None
    position, _, keep = min(stops)
    return position, keep


def _valid_at(source: Source, pos: int, end: int) -> bool:
    data, base, avail = source.window(pos, min(end, pos + v2.RECORD_BATCH_OVERHEAD), keep=True)
    if pos + v2.LOG_OVERHEAD <= avail:
        length = int(data[pos - base + 8:pos - base + 12].view(">i4")[0])
        data, base, avail = source.window(pos, min(end, pos + v2.LOG_OVERHEAD + max(length, 0)),
                                          keep=True)
    return bool(_walk.batch_at(data, base, pos, avail))


def next_batch(source: Source, start: int, end: int) -> int | None:
    """The first position >= ``start`` where a whole batch with a valid CRC starts."""
    lo = start
    while lo < end:
        data, base, avail = source.window(lo, min(end, lo + 2 * WINDOW_BYTES), keep=True)
        stop = min(avail, lo + WINDOW_BYTES)
        found = _walk.next_batch(data, base, lo, stop, avail)
        if found >= 0:
            return int(found)
        if avail <= lo:
            return None
        lo = stop
    return None


def salvage(source: Source, start: int = 0, end: int | None = None, *, path: str = "",
            limit: int = DEFAULT_DECOMPRESS_LIMIT) -> Iterator[Walked]:
    """The walk of :func:`segtools.decode.walk.walk` with resynchronisation (CRCs checked)."""
    end = source.size if end is None else min(end, source.size)
    pos = start
    last_good: int | None = None
    while pos < end:
        resync_at: int | None = None
        for chunk in walk(source, pos, end, path=path, verify_crc=True, limit=limit):
            cut = _stop(chunk, source, end)
            if cut is None:
                if len(chunk.table):
                    last_good = int(chunk.table.last_offset[-1])
                yield chunk
                continue
            at, keep_row = cut
            t = chunk.table
            rows = int(np.searchsorted(t.position, at, side="right" if keep_row else "left"))
            kept = [f for i, f in enumerate(chunk.findings)
                    if _finding_rank(chunk.findings, i) < (at, 2 if keep_row else 0)]
            if rows:
                last_good = int(t.last_offset[rows - 1])
            yield Walked(t.take(slice(0, rows)), tuple(kept), at)
            resync_at = at
            break
        if resync_at is None:
            return
        nxt = next_batch(source, resync_at + 1, end)
        stop = end if nxt is None else nxt
        lost = ""
        if nxt is not None:
            data, base, _ = source.window(nxt, nxt + 8, keep=True)
            next_base = int(data[nxt - base:nxt - base + 8].view(">i8")[0])
            first_lost = 0 if last_good is None else last_good + 1
            if next_base > first_lost:
                lost = f"; offsets {first_lost}..{next_base - 1} lost"
        elif last_good is not None:
            lost = f"; every offset after {last_good} in this segment lost"
        if nxt is None and source.zero_from(resync_at, end) is None:
            yield Walked(BatchTable.empty(), (finding(
                "zero_filled_tail", path,
                f"{end - resync_at} zero bytes after the last batch", position=resync_at),),
                end)
            return
        yield Walked(BatchTable.empty(), (finding(
            "salvage_skipped", path,
            f"bytes {resync_at}..{stop - 1} ({stop - resync_at} bytes) hold no valid "
            f"batch{lost}", position=resync_at,
            offset=None if last_good is None else last_good + 1),), stop)
        if nxt is None:
            return
        pos = nxt
