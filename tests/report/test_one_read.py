"""The report reads each small segment once: ``verify``'s compiled reading hands what it read
to the inputs' summaries and to the producers' and transactions' walk."""

from __future__ import annotations

from collections import Counter

from segtools.analysis import partition_log
from segtools.report import model
from segtools.storage import summary
from tests.fixtures_manifest import FIXTURES

AT = 1_700_604_840_000


def test_each_small_segment_is_read_once(monkeypatch):
    """Every segment ``verify`` checked in compiled code (a small one with nothing to report)
    is read by that reading alone; the others are read as before (by each analysis)."""
    reads: Counter = Counter()
    checked: set[str] = set()
    compiled = summary._summary

    class Counting:
        """The compiled summary module, each read of a ``.log`` counted."""

        def __getattr__(self, name):
            return getattr(compiled, name)

        def summarize_small(self, log, *args):
            reads[log.decode()] += 1
            return compiled.summarize_small(log, *args)

        def verify_small(self, log, *args):
            reads[log.decode()] += 1
            fast = compiled.verify_small(log, *args)
            if fast is not None:
                checked.add(log.decode())
            return fast

    def read_small(files):
        reads[str(files.log)] += 1
        return real_read_small(files)

    real_read_small = partition_log.read_small
    monkeypatch.setattr(summary, "_summary", Counting())
    monkeypatch.setattr(partition_log, "read_small", read_small)
    for tree in ("sample", "producers", "legacy"):
        reads.clear()
        checked.clear()
        model.build([str(FIXTURES / "logdirs" / tree)], at=AT)
        assert len(checked) >= 3, tree
        assert {reads[log] for log in checked} == {1}, (tree, reads.most_common(3))
