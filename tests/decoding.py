"""Test helpers: the compiled walk and record decoder over bytes in hand, as Python objects.

Tests compare decoded batches and records with expectations one object at a time; these
helpers build those objects from the batch table (never used on a bulk path).
"""

from __future__ import annotations

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.decode.chunks import BatchRecords, batch_records, decode
from segtools.decode.salvage import salvage
from segtools.decode.source import BufferSource
from segtools.decode.table import BatchTable
from segtools.decode.walk import Walked, walk
from segtools.findings import Finding
from segtools.model import Batch


def _items(chunks) -> list[Batch | Finding]:
    """Batches and findings in file order, each batch before the findings at its position."""
    out: list[tuple[int, int, object]] = []
    for chunk in chunks:
        for b in chunk.table.batches():
            out.append((b.position, 0, b))
        for k, f in enumerate(chunk.findings):
            out.append((-1 if f.position is None else f.position, 1 + k, f))
    return [item for _, _, item in sorted(out, key=lambda x: (x[0], x[1]))]


def walk_items(data, *, verify_crc: bool = True, limit: int = DEFAULT_DECOMPRESS_LIMIT,
               start: int = 0, end: int | None = None) -> list[Batch | Finding]:
    return _items(walk(BufferSource(data), start, end, verify_crc=verify_crc, limit=limit))


def salvage_items(data, *, limit: int = DEFAULT_DECOMPRESS_LIMIT) -> list[Batch | Finding]:
    return _items(salvage(BufferSource(data), limit=limit))


def batches_of(data, **kw) -> list[Batch]:
    return [b for b in walk_items(data, **kw) if isinstance(b, Batch)]


def walked(data, **kw) -> list[Walked]:
    return list(walk(BufferSource(data), **kw))


def records_of(data, batches: list[Batch] | None = None, *,
               limit: int = DEFAULT_DECOMPRESS_LIMIT) -> list[BatchRecords]:
    """Each batch (all of the file's by default) with its decoded records and finding."""
    if batches is None:
        batches = batches_of(data, limit=limit)
    return list(batch_records(decode(BufferSource(data), BatchTable.from_batches(batches),
                                     limit=limit)))
