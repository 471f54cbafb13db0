"""Replicas compared: the divergent follower of orders.v2-eu-9 (fixtures/logdirs/replicas), and
identical, lagging and inconsistent copies built from it."""

from __future__ import annotations

import shutil

from segtools.analysis.diverge import compare, load_replica
from segtools.analysis.partition_log import as_partition, iter_tables
from tests.forensics import REPLICAS

B1 = REPLICAS / "broker1" / "orders.v2-eu-9"
B2 = REPLICAS / "broker2" / "orders.v2-eu-9"


def replicas(*paths):
    findings = []
    out = [load_replica(f"r{i}", as_partition(p), findings) for i, p in enumerate(paths, 1)]
    assert findings == []
    return out


def test_divergent_follower():
    d = compare(replicas(B1, B2))
    assert (d.status, d.agreed_until, d.first_difference) == ("diverged", 40, 40)
    assert [(label, b.base_offset, b.last_offset, b.leader_epoch) for label, b in d.differing] \
        == [("r1", 40, 44, 1), ("r2", 40, 47, 2)]
    assert [(u.replica, u.start_offset, u.end_offset, u.leader_epoch, u.checkpoint_epoch,
             u.records) for u in d.unique] == [("r1", 40, 44, 1, 1, 5), ("r2", 40, 59, 2, 2, 20)]
    assert d.leader.label == "r2"
    (t,) = d.truncations
    assert (t.replica, t.epoch, t.leader_end_offset, t.truncate_to, t.discarded) == (
        "r1", 1, 40, 40, 5)
    assert [(f.code, f.offset, f.path) for f in d.findings] == [
        ("replica_diverged", 40, str(d.replicas[0].partition.path))]


def test_leader_epochs_of_the_agreed_part():
    r1, r2 = replicas(B1, B2)
    assert [(e.epoch, e.start_offset) for e in r1.epochs] == [(0, 0), (1, 30)]
    assert [(e.epoch, e.start_offset) for e in r2.epochs] == [(0, 0), (1, 30), (2, 40)]
    assert [b.leader_epoch for b in r1.batches[:4]] == [0, 0, 0, 1]
    assert r2.end_offset_for(1) == (1, 40) and r2.end_offset_for(2) == (2, 60)


def test_identical_and_prefix_copies(tmp_path):
    same = tmp_path / "copy" / "orders.v2-eu-9"
    shutil.copytree(B2, same)
    d = compare(replicas(B2, same))
    assert (d.status, d.first_difference, d.agreed_until, d.unique) == (
        "identical", None, 60, ())
    assert [t.discarded for t in d.truncations] == [0]
    short = tmp_path / "short" / "orders.v2-eu-9"
    shutil.copytree(B2, short)
    log = short / "00000000000000000000.log"
    data = log.read_bytes()
    last = load_replica("x", as_partition(B2), []).batches[-1]
    cut = next(b.position for b in _batches(B2) if b.base_offset == last.base_offset)
    log.write_bytes(data[:cut])
    d = compare(replicas(B2, short))
    assert (d.status, d.first_difference, d.agreed_until) == ("prefix", None, 48)
    assert [(u.replica, u.start_offset, u.end_offset) for u in d.unique] == [("r1", 48, 59)]


def _batches(path):
    return [b for _, _, t in iter_tables(as_partition(path), []) for b in t.batches()]


def test_checkpoint_that_disagrees_with_the_batches(tmp_path):
    bad = tmp_path / "bad" / "orders.v2-eu-9"
    shutil.copytree(B1, bad)
    (bad / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 20\n")
    d = compare(replicas(bad, B2))
    assert [(f.code, f.offset) for f in d.findings] == [("leader_epoch_checkpoint_mismatch", 20),
                                                        ("replica_diverged", 40)]


def test_three_replicas_one_behind(tmp_path):
    short = tmp_path / "b3" / "orders.v2-eu-9"
    shutil.copytree(B2, short)
    log = short / "00000000000000000000.log"
    first_three = sum(b.size for b in _batches(B2)[:3])
    log.write_bytes(log.read_bytes()[:first_three])
    (short / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    d = compare(replicas(B1, B2, short))
    assert (d.status, d.agreed_until, d.first_difference) == ("diverged", 30, 40)
    assert {(t.replica, t.truncate_to, t.discarded) for t in d.truncations} == {
        ("r1", 40, 5), ("r3", 30, 0)}
