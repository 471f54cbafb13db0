"""Producers seen from the disk, on the Kafka-written "producers" tree (MemoryRecordsBuilder):
batching verdicts, sequence events and retried duplicates; the CLI and the Python API give
the same figures."""

from __future__ import annotations

import contextlib
import io
import itertools
import json

import numpy as np
import pytest

import segtools
from segtools.analysis import producers as prod
from segtools.analysis.partition_log import iter_records, iter_tables
from segtools.cli.main import main
from segtools.fetch.columns import batch_table
from segtools.storage.segment import Segment
from tests.fixtures_manifest import FIXTURES

TREE = FIXTURES / "logdirs" / "producers"


@pytest.fixture(scope="module")
def results():
    return {(r.topic, r.partition): r for r in segtools.producers(TREE, duplicates_window=120_000)}


def _group(results, topic, pid, epoch):
    return results[(topic, 0)].producers[(pid, epoch)]


def test_batching_verdicts(results):
    lingered = _group(results, "clicks", 4001, 0)
    assert lingered.verdict == "lingered" and lingered.linger_ms == 5
    full = _group(results, "orders", 4002, 0)
    assert full.verdict == "full" and 15_000 < full.ceiling < 16_384
    unbatched = _group(results, "metrics", prod.NON_IDEMPOTENT, -1)
    assert unbatched.verdict == "unbatched" and unbatched.records == unbatched.batches
    assert unbatched.recompressed is not None and unbatched.recompressed < 1
    codes = {f.code for r in results.values() for f in r.findings}
    assert {"producer_unbatched", "producer_batch_size_bound", "compression_ineffective"} <= codes


def test_sequences(results):
    events = [(e.kind, e.producer_id, e.producer_epoch, e.offset, e.base_sequence)
              for e in results[("payments", 0)].events]
    assert ("gap", 5001, 0, 20, 25) in events
    assert ("duplicate", 5001, 0, 30, 30) in events
    assert ("epoch_bump", 5001, 1, 40, 0) in events
    assert any(k == "wrap" and p == 5002 for k, p, *_ in events)
    assert not any(k in ("gap", "duplicate") and p == 5002 for k, p, *_ in events)


def test_retried_duplicates(results):
    dups = results[("metrics", 0)].duplicates
    assert [(d.first_offset, d.offset) for d in dups] == [(50, 52), (201, 204), (335, 339)]
    assert all(100 <= d.delay_ms <= 300 for d in dups)


def test_cli_and_api_agree(results):
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out):
        assert main(["producers", str(TREE), "--format", "jsonl", "-q", "--duplicates"]) == 1
    lines = [json.loads(x) for x in raw.getvalue().decode().splitlines()]
    cli = sorted((x["topic"], x["producer_id"], x["producer_epoch"], x["batches"], x["verdict"])
                 for x in lines if x["type"] == "producer_batching")
    api = sorted((r.topic, g.producer_id, g.producer_epoch, g.batches, g.verdict)
                 for r in results.values() for g in r.producers.values())
    assert cli == api
    assert sum(x["type"] == "likely_duplicate" for x in lines) == 3


def test_arrow_rows_fold_like_the_batch_table():
    """The Spark face folds level=batches rows; built from to_arrow() here, the verdicts equal
    the library's on the batch table."""
    logs = segtools.open(TREE / "payments-0")
    table = logs.to_arrow(level="batches").read_all()
    folded = prod.PartitionProducers("payments", 0, "x")
    for batch in table.to_batches():
        folded.add(batch_table(batch))
    folded.finish()
    direct = logs.producers()[0]
    assert [(e.kind, e.offset) for e in folded.events] == [(e.kind, e.offset)
                                                           for e in direct.events]
    assert {k: g.batches for k, g in folded.producers.items()} == \
        {k: g.batches for k, g in direct.producers.items()}


def test_an_epoch_bump_says_what_became_of_the_open_transaction(results):
    """Producer 7001 was fenced with a transaction open since offset 31: the coordinator's
    marker at 41 (written with the bumped epoch 1) ended it before the new instance wrote."""
    [bump] = [e for e in results[("transfers", 0)].events if e.kind == "epoch_bump"]
    assert (bump.producer_id, bump.producer_epoch, bump.offset) == (7001, 1, 42)
    assert (bump.open_transaction, bump.closed_by, bump.closed_epoch) == (31, 41, 1)
    assert bump.timestamp is not None and bump.timestamp > 0
    quiet = [e for e in results[("payments", 0)].events if e.kind == "epoch_bump"]
    assert [e.open_transaction for e in quiet] == [None]  # idempotent, not transactional


def test_folding_in_any_chunks_gives_the_same_events():
    """The fold carries per-producer state across chunks: cutting the batch table anywhere
    gives the same sequence events, epoch-bump context included."""
    for name in ("transfers-0", "payments-0"):
        table = segtools.open(TREE / name).to_arrow(level="batches").read_all()
        whole = batch_table(table.combine_chunks().to_batches()[0])

        def events(cuts, whole=whole):
            folded = prod.PartitionProducers("t", 0, "x")
            bounds = [0, *cuts, len(whole)]
            for lo, hi in itertools.pairwise(bounds):
                folded.add(whole.take(np.arange(lo, hi)))
            return folded.events

        expected = events([])
        for cut in range(1, len(whole)):
            assert events([cut]) == expected, (name, cut)
        assert events(list(range(1, len(whole)))) == expected


def test_no_batching_advice_on_topics_only_brokers_write():
    """The forensics tree's ``__transaction_state`` batches are the transaction coordinator's,
    one state change each: the verdict says so (unbatched), but advice for a producer's
    ``linger.ms`` applies to no one there. Control batches never count as a producer's."""
    tree = FIXTURES / "logdirs" / "forensics"
    results = segtools.producers(tree)
    internal = [r for r in results if r.topic in ("__consumer_offsets", "__transaction_state")]
    assert any(g.verdict == "unbatched" for r in internal for g in r.producers.values())
    advice = {"producer_unbatched", "producer_batch_size_bound", "compression_ineffective"}
    assert not [f for r in internal for f in r.findings if f.code in advice]
    data_batches = sum(g.batches for r in results for g in r.producers.values())
    batches = segtools.open(tree).batches()
    assert data_batches == sum(not b["is_control"] and b["topic"] != "__cluster_metadata"
                               for b in batches)


@pytest.mark.parametrize("tree", sorted(p.name for p in (FIXTURES / "logdirs").iterdir()
                                        if p.is_dir()))
def test_recompression_sample_is_the_records_values(tree):
    """The recompression trial's values, read as record columns, are those the record-by-record
    reader gives (non-empty values of the producer's data batches, in log order), on every
    fixture partition and producer, cut short or not."""
    for pdir in (p.directory for p in segtools.open(FIXTURES / "logdirs" / tree).partitions()):
        pids = {int(x) for _, _, t in iter_tables(pdir, []) for x in t.producer_id.tolist()}
        for pid in sorted(pids):
            want = [lr.record.value for lr in iter_records(
                pdir, [], want=lambda t, pid=pid: ~t.is_control & (t.producer_id == pid))
                if lr.record.value]
            for sample in (3, 2000):
                assert prod._sampled_values(pdir, pid, sample) == want[:sample], (pdir, pid)
                assert prod._sampled_values(pdir, pid, sample, _held(pdir)) == \
                    want[:sample], (pdir, pid)


def _held(pdir) -> dict[str, bytes]:
    """Every segment's bytes, as verify's reading hands them over."""
    return {str(files.log): files.log.read_bytes() for files in pdir.segments}


def test_recompression_reads_no_held_segment_again(monkeypatch):
    """The report's worker hands the producers analysis the bytes verify read: sampling the
    values of a producer decodes them where they are, and opens no segment."""
    pdir = next(p.directory for p in segtools.open(FIXTURES / "logdirs" / "sample").partitions()
                if prod.recompression_gain(p.directory, -1) is not None)
    want = prod.recompression_gain(pdir, -1)
    opened = []
    real = Segment.open.__func__
    monkeypatch.setattr(Segment, "open",
                        classmethod(lambda cls, *a, **k: opened.append(a) or real(cls, *a, **k)))
    assert prod.recompression_gain(pdir, -1, held=_held(pdir)) == want
    assert opened == []
    assert prod.recompression_gain(pdir, -1) == want
    assert opened


def test_figures_without_the_rate_are_the_figures_less_the_rate():
    """The report's page leaves out the rate over time: asked without it, a producer's JSON
    is the whole JSON less that key, in the same order."""
    results = segtools.producers(FIXTURES / "logdirs" / "producers")
    groups = [g for r in results for g in r.producers.values()]
    assert groups
    for g in groups:
        whole = g.to_json()
        assert "rate" in whole
        shown = g.to_json(rate=False)
        assert list(shown.items()) == [(k, v) for k, v in whole.items() if k != "rate"]
