"""``to_arrow()`` hands out keys and values as Arrow binary views over the segment's own bytes.

A sealed segment's values are views of its read-only mapping (no payload copied); a compressed
batch's, views of the buffer it was inflated into. The arrays hold those bytes alive after the
dataset, its segments and their descriptors are gone; ``binary="binary"`` copies instead (what
Spark reads). Streaming a segment much larger than memory's budget keeps the peak flat.
"""

from __future__ import annotations

import gc
import os
import shutil
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import segtools
from segtools.fetch import arrow
from segtools.storage import segment as segment_room
from tests.fixtures_manifest import FIXTURES, SAMPLE

SEALED = SAMPLE / "orders.v2-eu-0"  # segments 0 and 5 are below both checkpoints: sealed
BATCH = SEALED / "00000000000000000005.log"  # one uncompressed batch of 200 records


@pytest.fixture
def mapped_small_files(monkeypatch):
    """The fixture segments are below the size read whole with one ``pread``: map them."""
    monkeypatch.setattr(segment_room, "SMALL_FILE", 0)


def test_values_are_views_of_the_mapping_and_outlive_the_dataset(mapped_small_files):
    ds = segtools.open(SEALED)
    views = ds.to_arrow(columns=["offset", "key", "value"]).read_all()
    copies = ds.to_arrow(columns=["offset", "key", "value"], binary="binary").read_all()
    assert views.schema.field("value").type == pa.binary_view()
    assert copies.schema.field("value").type == pa.binary()
    data_sizes = {chunk.buffers()[2].size for chunk in views.column("value").chunks}
    assert BATCH.stat().st_size in data_sizes  # the whole mapped file, not a copy of values
    del ds
    gc.collect()
    assert views.num_rows == copies.num_rows == 252
    assert views.column("value").to_pylist() == copies.column("value").to_pylist()
    assert views.column("key").to_pylist() == copies.column("key").to_pylist()


@pytest.mark.parametrize("partition", ["orders.v2-eu-1", "orders.v2-eu-2", "orders.v2-eu-3",
                                       "orders.v2-eu-4", "payments.txn-0", "edge-cases-0"])
def test_views_over_inflated_buffers_equal_the_copies(partition):
    ds = segtools.open(SAMPLE / partition)
    views = ds.to_arrow(include_headers=True, include_control=True).read_all()
    copies = ds.to_arrow(include_headers=True, include_control=True,
                         binary="binary").read_all()
    del ds
    gc.collect()
    for name in ("key", "value"):
        column = views.column(name)
        column.validate(full=True)
        assert column.to_pylist() == copies.column(name).to_pylist()
    assert views.drop_columns(["key", "value"]).equals(copies.drop_columns(["key", "value"]))


def test_binary_option_is_checked():
    with pytest.raises(ValueError, match="binary: must be"):
        segtools.open(SEALED).to_arrow(binary="str")


def _shifted(batch: bytes, shift: int) -> bytes:
    """The batch with its base offset moved (the CRC starts after it, so it stays valid)."""
    return struct.pack(">q", struct.unpack_from(">q", batch)[0] + shift) + batch[8:]


def test_memory_stays_flat_in_the_segment_size(tmp_path):
    """A 49 MB sealed segment of Kafka-written batches, streamed: the peak grows by far less
    than the segment. Pages behind the reader's window are handed back (``MADV_DONTNEED``),
    views or not; the window is made 4 MiB here (64 MiB in use) to see it on a small file."""
    copies = 500
    pdir, _ = _sealed_copies(tmp_path / "logs", copies)
    script = textwrap.dedent(f"""
        import segtools
        from segtools.decode import walk
        from segtools.fetch import rows as fetch_rows
        from segtools.storage import source

        # windows of 4 MiB instead of 64, so a 49 MB segment is many windows long
        source.MappedSource.stride = source._RELEASE_MIN = walk.WINDOW_BYTES = 4 << 20
        fetch_rows.WINDOW_BYTES = fetch_rows.WALK_BYTES = 4 << 20

        def hwm():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024

        reader = segtools.open({str(pdir)!r}).to_arrow(columns=["offset", "value"]).reader()
        rows = reader.read_next_batch().num_rows
        before = hwm()
        for batch in reader:
            rows += batch.num_rows
        print(rows, before, hwm())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.returncode == 0, out.stderr
    rows, before, after = (int(x) for x in out.stdout.split())
    assert rows == 200 * (copies + 1)
    size = (pdir / "00000000000000000005.log").stat().st_size
    assert after - before < size // 3, (before, after, size)


def _sealed_copies(root, copies: int):
    """A log dir whose segment is ``copies`` shifted copies of the fixture batch, below both
    checkpoints (so sealed, and mapped), followed by an active segment."""
    batch = BATCH.read_bytes()
    pdir = root / "big-0"
    pdir.mkdir(parents=True)
    shutil.copy(SAMPLE / "meta.properties", root / "meta.properties")
    with open(pdir / "00000000000000000005.log", "wb") as f:
        for k in range(copies):
            f.write(_shifted(batch, 200 * k))
    end = 5 + 200 * copies
    (pdir / f"{end:020d}.log").write_bytes(_shifted(batch, 200 * copies))
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        (root / name).write_text(f"0\n1\nbig 0 {end + 200}\n")
    return pdir, len(batch)


def test_batches_kept_keep_their_values_while_later_ones_are_decoded(tmp_path, monkeypatch):
    """Record columns are cut from blocks that are reused once no array refers to them: a
    consumer that keeps some batches and lets others go finds the kept ones unchanged after
    the rest of the segment is read (compared with each batch's values read as it came)."""
    from segtools.fetch import rows as fetch_rows

    pdir, size = _sealed_copies(tmp_path / "logs", 40)
    monkeypatch.setattr(fetch_rows, "WALK_BYTES", 2 * size)
    monkeypatch.setattr(fetch_rows, "ARROW_BLOCK", 1 << 16)
    for binary in ("view", "binary"):
        kept, expected = [], []
        for i, b in enumerate(segtools.open(pdir).to_arrow(columns=["offset", "key", "value"],
                                                           binary=binary)):
            if i % 2 == 0:
                kept.append(b)
                expected.append(b.to_pylist())
        assert len(kept) == 11  # 20 chunks of the big segment, then the active one
        assert [b.to_pylist() for b in kept] == expected
        assert expected[1][0]["offset"] == 5 + 200 * 4


def test_walk_ahead_thread_reads_what_the_inline_walk_reads(tmp_path, monkeypatch):
    """A mapped segment is walked one chunk ahead on a thread of its own: the rows and
    findings are the inline walk's, and a consumer that stops early leaves no thread behind."""
    import threading

    from segtools import fanout
    from segtools.fetch import rows as fetch_rows

    pdir, size = _sealed_copies(tmp_path / "logs", 40)
    with open(pdir / "00000000000000000005.log", "r+b") as f:  # one bad CRC, mid-segment
        f.seek(size * 17 + 100)
        f.write(b"\xff")
    monkeypatch.setattr(fetch_rows, "WALK_BYTES", 3 * size)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")  # two cores, whatever the machine has
    started = []
    real = fanout.ahead
    monkeypatch.setattr(fanout, "ahead",
                        lambda items, **kw: (started.append(1), real(items, **kw))[1])

    def read() -> tuple[list, list]:
        findings = []
        table = segtools.open(pdir).to_arrow(on_finding=findings.append).read_all()
        return table.to_pylist(), [(f.code, f.position) for f in findings]

    threaded = read()
    assert started
    monkeypatch.setattr(fanout, "ahead", lambda items, **kw: items)
    assert threaded == read()
    assert ("crc_mismatch", size * 17) in threaded[1]
    monkeypatch.setattr(fanout, "ahead", real)
    reader = segtools.open(pdir).to_arrow().reader()
    reader.read_next_batch()
    reader.close()
    del reader
    gc.collect()
    assert not [t for t in threading.enumerate() if t.name == "segtools-walk-ahead"]




def test_windows_are_walked_ahead_on_a_thread_as_the_mapping_is(tmp_path, monkeypatch):
    """A segment read through ``pread`` windows (here: sealed, under a restored page cache,
    as under a running broker) is walked ahead on a thread of its own when the run may use
    two cores, windows of a walk chunk each: the rows and findings are the inline walk's,
    a bad CRC is found where it is, and the reader's window buffers come from one pool kept
    across the segments of the read."""
    from segtools import fanout
    from segtools.fetch import rows as fetch_rows
    from segtools.storage.source import WindowSource

    pdir, size = _sealed_copies(tmp_path / "logs", 24)
    with open(pdir / "00000000000000000005.log", "r+b") as f:  # one bad CRC, mid-segment
        f.seek(size * 17 + 100)
        f.write(b"\xff")
    monkeypatch.setattr(segment_room, "SMALL_FILE", 0)  # the active segment too: a window
    monkeypatch.setattr(fetch_rows, "WALK_BYTES", 3 * size)
    monkeypatch.setattr(WindowSource, "stride", size)
    monkeypatch.setattr(WindowSource, "chunk_stride", 3 * size + 10)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    started, windows, made = [], [], []
    real, real_window, real_memory = fanout.ahead, WindowSource.window, arrow.memory
    monkeypatch.setattr(fanout, "ahead",
                        lambda items, **kw: (started.append(1), real(items, **kw))[1])

    def window(self, lo, hi, *, keep=False):
        if not keep:
            windows.append(hi - lo)
        return real_window(self, lo, hi, keep=keep)

    monkeypatch.setattr(WindowSource, "window", window)
    monkeypatch.setattr(arrow, "memory", lambda n: (made.append(n), real_memory(n))[1])

    def read() -> tuple[list, list]:
        """Each batch let go once read, as a stream's consumer does."""
        findings, rows = [], []
        for batch in segtools.open(pdir, page_cache="restore").to_arrow(
                on_finding=findings.append):
            rows += batch.to_pylist()
        return rows, [(f.code, f.position) for f in findings]

    threaded = read()
    assert started, "the windows were not walked ahead"
    assert max(windows) == 3 * size  # a walk chunk per window, not the stride
    windows_made = [n for n in made if n >= fetch_rows.WINDOW_BUFFER]  # not column blocks
    assert 0 < len(windows_made) <= fetch_rows.WINDOW_BUFFERS + fetch_rows.WALK_AHEAD + 2
    monkeypatch.setattr(fanout, "ahead", lambda items, **kw: items)
    assert threaded == read()
    assert ("crc_mismatch", size * 17) in threaded[1]
    assert len(threaded[0]) == 200 * 25


def test_a_file_truncated_under_windows_walked_ahead_ends_with_a_finding(tmp_path,
                                                                          monkeypatch):
    """A follower truncates the segment while the walk, on its own thread, reads windows
    ahead of the reader: the read ends where the file now ends, with the finding the
    inline walk gives at the same byte, the rows before it kept; nothing is raised."""
    from segtools import fanout
    from segtools.fetch import rows as fetch_rows
    from segtools.storage.source import WindowSource

    pdir, size = _sealed_copies(tmp_path / "logs", 40)
    log = pdir / "00000000000000000005.log"
    monkeypatch.setattr(fetch_rows, "WALK_BYTES", 3 * size)
    monkeypatch.setattr(WindowSource, "stride", size)
    monkeypatch.setattr(WindowSource, "chunk_stride", 3 * size)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    cut = 10 * size + 100  # inside the 11th batch
    real_window = WindowSource.window

    def window(self, lo, hi, *, keep=False):
        if not keep and lo >= 6 * size and self.size > cut and os.path.getsize(log) > cut:
            os.truncate(log, cut)  # the follower's LogSegment.truncateTo, mid-read
        return real_window(self, lo, hi, keep=keep)

    monkeypatch.setattr(WindowSource, "window", window)

    def read() -> tuple[list, list]:
        shutil.copy(tmp_path / "whole.log", log)
        findings, offsets = [], []
        for batch in segtools.open(pdir, page_cache="restore").to_arrow(
                columns=["offset", "value"], on_finding=findings.append):
            offsets += batch.column("offset").to_pylist()
        return offsets, [(f.code, f.position) for f in findings]

    shutil.copy(log, tmp_path / "whole.log")
    threaded = read()
    assert ("segment_truncated_while_reading", 10 * size) in threaded[1]
    assert threaded[0][:2000] == list(range(5, 2005))  # the ten whole batches
    monkeypatch.setattr(fanout, "ahead", lambda items, **kw: items)
    assert read() == threaded


def test_a_window_kept_for_the_reader_is_the_bytes_it_was_read_from(tmp_path):
    """The walk on its own thread reads on while the reader asks for the bytes of a chunk
    it walked earlier: they come from the last windows read while those are kept
    (``walk_ahead``), and are read again, never taken from a reused buffer, once they are
    not."""
    from segtools.decode.buffers import BufferPool
    from segtools.storage.source import WINDOW_SLACK, WindowSource

    data = bytes(range(256)) * 64  # 16 KiB, every window's bytes told apart by position
    path = tmp_path / "f.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        source = WindowSource(fd, len(data), windows=BufferPool(4096, size=4))
        source.walk_ahead(3)
        step = 4096
        for lo in range(0, len(data), step):
            source.window(lo, lo + step)
        reads = []
        real = source._windows.get
        source._windows.get = lambda n: (reads.append(n), real(n))[1]
        newest, _, _ = source.window(3 * step + 10, 3 * step + 20, keep=True)
        oldest, _, _ = source.window(10, 20, keep=True)
        kept_middle, _, _ = source.window(step + 5, 2 * step - 5, keep=True)
        # the window of 0..4096 fell out: read again, into a buffer a page larger (the
        # bytes go at the position's place in a page: storage.source.phase)
        assert reads == [10 + WINDOW_SLACK]
        assert newest.tobytes() == data[3 * step + 10:3 * step + 20]
        assert oldest.tobytes() == data[10:20]
        assert kept_middle.tobytes() == data[step + 5:2 * step - 5]
        source.close()
    finally:
        os.close(fd)


def test_the_consumer_works_for_the_producer_only_while_it_would_wait():
    """``fanout.ahead``'s ``idle`` runs while the next item is not ready (here the producer
    waits for it), stops being called once it says it has nothing left to do, and the items
    still come in order."""
    import threading

    from segtools import fanout

    go = threading.Event()
    steps = []

    def items():
        go.wait(timeout=10)
        yield from range(3)

    def idle() -> bool:
        steps.append(go.is_set())
        go.set()  # the producer may go on once the consumer has done its share
        return len(steps) < 2

    assert list(fanout.ahead(items(), idle=idle)) == [0, 1, 2]
    assert steps[:2] == [False, True]


def test_pages_mapped_ahead_by_the_reader_change_nothing(tmp_path, monkeypatch):
    """While the reader waits for the walk it maps the pages of the chunk after the one being
    walked: the rows and findings are the inline walk's, and the pages it maps lie in the
    segment, past its first chunk (the walk maps that one itself)."""
    from segtools import fanout
    from segtools.fetch import rows as fetch_rows
    from segtools.storage.source import MappedSource

    pdir, size = _sealed_copies(tmp_path / "logs", 40)
    with open(pdir / "00000000000000000005.log", "r+b") as f:  # one bad CRC, mid-segment
        f.seek(size * 17 + 100)
        f.write(b"\xff")
    monkeypatch.setattr(fetch_rows, "WALK_BYTES", 3 * size)
    monkeypatch.setattr(fetch_rows, "PREFAULT_STEP", 4096)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    mapped = []
    real = MappedSource.prefault

    def prefault(self, lo: int, hi: int) -> None:
        mapped.append((lo, hi, self.size))
        real(self, lo, hi)

    monkeypatch.setattr(MappedSource, "prefault", prefault)

    def read() -> tuple[list, list]:
        findings = []
        table = segtools.open(pdir).to_arrow(on_finding=findings.append).read_all()
        return table.to_pylist(), [(f.code, f.position) for f in findings]

    threaded = read()
    monkeypatch.setattr(fanout, "ahead", lambda items, **kw: items)
    assert threaded == read()
    assert ("crc_mismatch", size * 17) in threaded[1]
    assert all(3 * size <= lo < hi <= total for lo, hi, total in mapped)

    def always_waiting(items, idle=None, **kw):
        """A reader that waits for every chunk: it takes every step ``idle`` offers, so the
        pages ahead are mapped whatever the threads' timing."""
        for item in items:
            while idle is not None and idle():
                pass
            yield item

    mapped.clear()
    monkeypatch.setattr(fanout, "ahead", always_waiting)
    assert read() == threaded
    assert mapped, "the waiting reader mapped no page ahead"
    assert all(3 * size <= lo < hi <= total for lo, hi, total in mapped)
    assert max(hi for _, hi, _ in mapped) > 3 * size + fetch_rows.PREFAULT_STEP


def test_windows_copied_ahead_by_the_reader_change_nothing(tmp_path, monkeypatch):
    """Read through ``pread`` windows (as under a running broker), the reader copies the
    window after the walk's while it waits (``WindowSource.copy_ahead``), on its own thread:
    no third thread runs. The rows and findings are the inline walk's, the bad CRC found
    where it is, and a follower's truncation after the copy ends the read where the file
    now ends, with the inline walk's finding at the same byte."""
    import threading

    from segtools import fanout
    from segtools.fetch import rows as fetch_rows
    from segtools.storage.source import WindowSource

    pdir, size = _sealed_copies(tmp_path / "logs", 24)
    log = pdir / "00000000000000000005.log"
    with open(log, "r+b") as f:  # one bad CRC, mid-segment
        f.seek(size * 17 + 100)
        f.write(b"\xff")
    shutil.copy(log, tmp_path / "whole.log")
    monkeypatch.setattr(segment_room, "SMALL_FILE", 0)  # the active segment too: a window
    monkeypatch.setattr(fetch_rows, "WALK_BYTES", 3 * size)
    monkeypatch.setattr(WindowSource, "stride", size)
    monkeypatch.setattr(WindowSource, "chunk_stride", 3 * size)
    monkeypatch.setenv("SEGTOOLS_WORKERS", "2")
    copied, threads = [], set()
    real_copy, real_window = WindowSource.copy_ahead, WindowSource.window
    cut = None

    def copy_ahead(self) -> bool:
        before = self.copied_ahead
        more = real_copy(self)
        copied.append((threading.current_thread().name, self.copied_ahead - before))
        return more

    def window(self, lo, hi, *, keep=False):
        threads.update(t.name for t in threading.enumerate())
        if not keep and cut is not None and lo >= 6 * size and os.path.getsize(log) > cut:
            os.truncate(log, cut)  # after the reader copied this window ahead
        return real_window(self, lo, hi, keep=keep)

    monkeypatch.setattr(WindowSource, "copy_ahead", copy_ahead)
    monkeypatch.setattr(WindowSource, "window", window)

    def read() -> tuple[list, list]:
        shutil.copy(tmp_path / "whole.log", log)
        findings = []
        table = segtools.open(pdir, page_cache="restore").to_arrow(
            on_finding=findings.append).read_all()
        return table.to_pylist(), [(f.code, f.position) for f in findings]

    def always_waiting(items, idle=None, **kw):
        """A reader that waits for every chunk: it copies all it is offered, so the walk
        takes over windows copied ahead whatever the threads' timing."""
        for item in items:
            while idle is not None and idle():
                pass
            yield item

    before = {t.name for t in threading.enumerate()}  # other tests' threads (asyncio's) may live on
    threaded = read()
    assert threads - before <= {"segtools-walk-ahead"}, threads - before
    assert {name for name, _ in copied} <= {threading.current_thread().name}
    monkeypatch.setattr(fanout, "ahead", lambda items, **kw: items)
    inline = read()
    assert threaded == inline
    assert ("crc_mismatch", size * 17) in inline[1]
    copied.clear()
    monkeypatch.setattr(fanout, "ahead", always_waiting)
    assert read() == inline
    assert sum(n for _, n in copied) > 10 * size, "the waiting reader copied nothing ahead"

    cut = 10 * size + 100  # inside the 11th batch
    truncated = read()
    assert ("segment_truncated_while_reading", 10 * size) in truncated[1]
    # the ten whole batches, then the active segment's
    assert [r["offset"] for r in truncated[0]] == [*range(5, 2005), *range(4805, 5005)]
    monkeypatch.setattr(fanout, "ahead", lambda items, **kw: items)
    assert read() == truncated


def _spans(batch: pa.RecordBatch) -> list[tuple[int, int]]:
    """The memory each buffer of the batch's arrays covers (address, end)."""
    spans = []
    for column in batch.columns:
        for buffer in column.buffers():
            if buffer is not None and buffer.size:
                spans.append((buffer.address, buffer.address + buffer.size))
    return spans


@pytest.mark.parametrize("binary", ["view", "binary"])
def test_a_dataset_reuses_its_buffers_but_never_under_a_batch_still_held(tmp_path,
                                                                        monkeypatch, binary):
    """A dataset keeps the buffers of its reads (``rows.ReadBuffers``): a second
    ``to_arrow()`` writes into the first's column blocks and windows instead of fresh
    ones, except those a batch the consumer still holds points into. The held batch is
    unchanged after the second read, and no array of the second read shares a byte of
    memory with it."""
    from segtools.decode import buffers as buffers_room
    from segtools.fetch import rows as fetch_rows
    from segtools.storage.source import WindowSource

    pdir, size = _sealed_copies(tmp_path / "logs", 24)
    monkeypatch.setattr(segment_room, "SMALL_FILE", 0)  # the active segment too: a window
    monkeypatch.setattr(fetch_rows, "WALK_BYTES", 3 * size)
    monkeypatch.setattr(fetch_rows, "ARROW_BLOCK", 1 << 16)
    monkeypatch.setattr(WindowSource, "stride", size)
    monkeypatch.setattr(WindowSource, "chunk_stride", 3 * size)
    made = []
    real_aligned, real_memory = buffers_room.aligned, arrow.memory
    monkeypatch.setattr(fetch_rows, "aligned", lambda n: (made.append(n), real_aligned(n))[1])
    monkeypatch.setattr(arrow, "memory", lambda n: (made.append(n), real_memory(n))[1])
    columns = ["offset", "key", "value", "timestamp", "position"]
    with segtools.open(pdir, page_cache="restore", jobs=1) as ds:
        first = iter(ds.to_arrow(columns=columns, binary=binary))
        held = next(first)
        expected = held.to_pylist()
        rest = sum(b.num_rows for b in first)  # each let go once counted
        made_first = len(made)
        assert made_first > 0
        del made[:]
        second = 0
        for batch in ds.to_arrow(columns=columns, binary=binary):
            for lo, hi in _spans(batch):
                assert all(hi <= held_lo or held_hi <= lo
                           for held_lo, held_hi in _spans(held)), "a held batch's memory reused"
            second += batch.num_rows
        assert second == held.num_rows + rest == 200 * 25
        assert held.to_pylist() == expected
        # only the buffers the held batch keeps out of reuse are new
        assert len(made) < made_first, (len(made), made_first)


def test_a_first_read_of_records_does_not_import_pandas():
    """``pa.array`` imports pandas on its first call (1.4-2.5 s here, most of a Spark
    executor's first task): the records level builds every column from buffers, the mixed
    ``compression`` labels of a chunk included, so a fresh process reads without it."""
    script = textwrap.dedent(f"""
        import sys
        import segtools
        logs = segtools.open({str(FIXTURES / "logdirs")!r})
        table = logs.to_arrow(columns=["topic", "offset", "key", "value", "compression"])
        print(table.read_all().num_rows, "pandas" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    rows, pandas = out.stdout.split()
    assert int(rows) > 0 and pandas == "False"


def test_a_column_of_labels_from_buffers_keeps_nulls():
    labels = np.array(["gzip", "x", None, "zstd", ""], dtype=object)
    valid = np.array([True, False, True, True, True])
    assert arrow.column(labels, pa.string(), valid).to_pylist() == ["gzip", None, None, "zstd",
                                                                     ""]
    assert arrow.column(labels[:0], pa.string()).to_pylist() == []


@pytest.mark.parametrize("level", ["records", "batches", "segments"])
def test_place_names_as_dictionaries_hold_the_same_values(level):
    """``dictionary=True`` (what the SQL face reads, so an engine groups by an index): the
    topic and log dir of every row, read over the whole sample tree with its several
    partitions per log dir, are those of the plain read; only their type differs."""
    ds = segtools.open(SAMPLE)
    plain = ds.to_arrow(level).read_all()
    coded = ds.to_arrow(level, dictionary=True).read_all()
    assert coded.num_rows == plain.num_rows > 0
    place = [n for n in ("topic", "log_dir", "partition_dir") if n in plain.schema.names]
    assert "topic" in place and "log_dir" in place
    for name in coded.schema.names:
        expected = pa.dictionary(pa.int32(), pa.string()) if name in place \
            else plain.schema.field(name).type
        assert coded.schema.field(name).type == expected, name
        assert coded.column(name).to_pylist() == plain.column(name).to_pylist(), name
    if level != "segments":  # one dictionary entry per Arrow batch, not a name per row
        assert all(len(chunk.dictionary) == 1 for chunk in coded.column("topic").chunks)


def test_dictionary_is_a_boolean_argument():
    with pytest.raises(segtools.ArgumentError, match=r"^dictionary: must be true or false"):
        segtools.open(SAMPLE).to_arrow(dictionary="maybe")
