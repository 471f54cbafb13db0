"""The partitions' details past the listed ones are made by forked workers while the parent
makes the listed ones (with their records): the page is the one a single process makes, the
byte budget cutting where it cut, redacted or not."""

from __future__ import annotations

import pytest

from segtools import fanout
from segtools.redact import redactor
from segtools.report import model
from segtools.report.model import Budget
from segtools.report.whatif import Ask
from tests.fixtures_manifest import FIXTURES

AT = 1_700_604_840_000
TREES = [FIXTURES / "logdirs" / "sample", FIXTURES / "logdirs" / "forensics"]


def _page(tree, budget: Budget, redacting: bool, what_if: Ask | None = None) -> tuple:
    shown = redactor(["keys", "values", "headers", "topics"], "k1") if redacting else None
    built = model.build([str(tree)], at=AT, budget=budget, redactor=shown, what_if=what_if)
    built.data["meta"]["generated_at"] = 0
    return built.data, built.details


def _in_one_process(monkeypatch, tree, budget: Budget, redacting: bool,
                    what_if: Ask | None = None) -> tuple:
    with monkeypatch.context() as m:
        m.setattr(fanout, "workers", lambda: 1)
        return _page(tree, budget, redacting, what_if)


def _forked(monkeypatch) -> list[int]:
    """Two workers whatever the tree's size; the processes each call for the details
    forks (:func:`segtools.fanout.planned`)."""
    monkeypatch.setattr(fanout, "MIN_SEGMENTS", 0)
    monkeypatch.setattr(fanout, "workers", lambda: 2)
    forks: list[int] = []
    real = fanout.ordered

    def ordered(fn, items, *, segments, processes=None):
        if getattr(fn, "__func__", None) is model._DetailMaker.unlisted:
            forks.append(fanout.planned(len(items), segments=segments, processes=processes))
        return real(fn, items, segments=segments, processes=processes)

    monkeypatch.setattr(fanout, "ordered", ordered)
    return forks


@pytest.mark.parametrize("redacting", [False, True], ids=["plain", "redacted"])
@pytest.mark.parametrize("tree", TREES, ids=lambda t: t.name)
def test_details_made_by_workers_are_the_parents(monkeypatch, tree, redacting):
    budget = Budget(listed_partitions=2)
    alone = _in_one_process(monkeypatch, tree, budget, redacting)
    forks = _forked(monkeypatch)
    assert _page(tree, budget, redacting) == alone
    assert forks == [2]  # the details past the listed ones were made by two workers
    assert sum(t is not None for t in alone[1]) > budget.listed_partitions


def test_the_budget_cuts_the_workers_details_where_it_cut_one_by_one(monkeypatch):
    """A budget spent halfway through the workers' details: the same details kept, the
    same count left out, and the workers still making details are ended."""
    tree = TREES[0]
    whole = _in_one_process(monkeypatch, tree, Budget(listed_partitions=1), False)
    rows = sorted(whole[0]["partitions"], key=model._interest)
    sizes = [len(whole[1][r["id"]]) for r in rows]
    assert len(sizes) > 4
    budget = Budget(listed_partitions=1, detail_bytes=sum(sizes[:3]) + 1)
    cut = _in_one_process(monkeypatch, tree, budget, False)
    assert sum(t is not None for t in cut[1]) == 3
    _forked(monkeypatch)
    assert _page(tree, budget, False) == cut


def test_the_rest_of_the_document_is_made_while_the_workers_make_details(monkeypatch):
    """The what-if section and the schemas' usage (each read here, and forking workers of
    their own) are made while the details' workers run: the same page."""
    ask = Ask({"segment.bytes": 1 << 20}, recommend=True)
    for tree in (FIXTURES / "logdirs" / "whatif", FIXTURES / "logdirs" / "payloads"):
        alone = _in_one_process(monkeypatch, tree, Budget(listed_partitions=1), False, ask)
        assert alone[0]["what_if"] and (tree.name != "payloads" or alone[0]["schemas"])
        forks = _forked(monkeypatch)
        assert _page(tree, Budget(listed_partitions=1), False, ask) == alone
        assert forks == [2]
        monkeypatch.undo()
