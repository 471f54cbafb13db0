"""A run of compressed v2 batches is decoded in time linear in its length: each batch's end
and codec are read from lists made once, not from the table's derived columns asked again
per batch (which made a table chunk of 65,536 one-record gzip batches quadratic)."""

from __future__ import annotations

from segtools.decode import chunks
from segtools.decode.source import BufferSource
from segtools.decode.table import BatchTable
from segtools.decode.walk import table as walk_table
from tests.fixtures_manifest import FIXTURES


def _many_gzip_batches(copies: int) -> bytes:
    """A Kafka-written segment of idempotent gzip batches, its batches repeated (the decode
    reads each batch from its position; offsets repeating do not matter to it)."""
    data = (FIXTURES / "logdirs" / "producers" / "metrics-0"
            / "00000000000000000000.log").read_bytes()
    table, _ = walk_table(BufferSource(data), verify_crc=False)
    assert set(table.codec.tolist()) == {1}
    return data[:int(table.end[-1])] * copies


def test_derived_columns_are_asked_once_per_run(monkeypatch):
    data = _many_gzip_batches(20)
    source = BufferSource(data)
    table, _ = walk_table(source, verify_crc=False)
    want = [(c.columns.offset.tolist(), [c.columns.value(i) for i in range(len(c.columns))])
            for c in chunks.decode(source, table)]
    asked = {"end": 0, "codec": 0}
    for name in asked:
        real = getattr(BatchTable, name)

        def counted(self, real=real, name=name):
            asked[name] += 1
            return real.fget(self)
        monkeypatch.setattr(BatchTable, name, property(counted))
    got = [(c.columns.offset.tolist(), [c.columns.value(i) for i in range(len(c.columns))])
           for c in chunks.decode(source, table)]
    assert got == want
    assert len(table) > 100
    assert asked["end"] <= 4 and asked["codec"] <= 4, asked
