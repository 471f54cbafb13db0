"""Commands that answer the same question give the same answer, on every fixture tree and on a
two-broker bundle: ``tiered`` on a partition and on its tree, the report and ``diverge``,
``find`` and ``dump``, ``retention`` and ``tiered``. An operator acts on whichever they ran;
two answers that disagree leave one of them wrong."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from segtools.cli.main import main
from segtools.report.model import build
from segtools.timestamps import to_millis
from segtools.units import format_duration, format_time
from tests.fixtures_manifest import FIXTURES

LOGDIRS = FIXTURES / "logdirs"
SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
TREES = sorted(p.name for p in LOGDIRS.iterdir() if p.is_dir())
#: One moment for every command of a comparison: answers measured against two clocks differ.
AT = "2024-06-01T12:00:00Z"


def cli(*argv: str) -> tuple[int, str]:
    """A command run in this process: its exit code and stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue()


def lines(*argv: str) -> tuple[int, list[dict]]:
    code, text = cli(*argv)
    return code, [json.loads(x) for x in text.splitlines() if x.strip()]


def console(*argv: str) -> tuple[int, list[dict]]:
    """The console script in a child process: ``dump`` writes its lines to the stdout file
    itself, which an in-process run cannot capture."""
    proc = subprocess.run([SEGTOOLS, *argv], capture_output=True, text=True, timeout=120)
    return proc.returncode, [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """Two brokers' log dirs in one support bundle, each kept as ``kafka-logs`` (as they are
    on the brokers), packed as a ``.tar.gz``."""
    path = tmp_path_factory.mktemp("bundle") / "support-bundle.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for n in (1, 2):
            tar.add(LOGDIRS / "replicas" / f"broker{n}", f"broker-{n}/kafka-logs")
    return path


#: Every fixture tree, and the two-broker bundle (``"bundle"``: the fixture above).
INPUTS = [*TREES, "bundle"]


def input_path(name: str, bundle: Path) -> str:
    return str(bundle) if name == "bundle" else str(LOGDIRS / name)


# --------------------------------------------------------------------------- tiered


@pytest.mark.parametrize("tree", INPUTS)
def test_tiered_on_a_partition_says_what_tiered_on_its_tree_says(tree, bundle):
    """The partition's own run lists that partition only, with the same local tier, highest
    remote offset, verdicts and findings as the run over its whole log dir."""
    code, (whole,) = lines("tiered", input_path(tree, bundle), "--at", AT, "--format", "json")
    for p in whole["partitions"]:
        if p["local"] is None:
            continue
        one_code, (alone,) = lines("tiered", p["local"]["path"], "--at", AT, "--format", "json")
        assert [x["partition"] for x in alone["partitions"]] == [p["partition"]]
        assert alone["partitions"][0] == p
        assert one_code == (1 if p["findings"] else 0)
    if not whole["partitions"]:
        assert code == 0, "a tree with no tiered partition is not a finding"


def test_the_highest_remote_offset_is_the_one_the_lineage_counts():
    """clicks.tiered-1's segment 100..199 (epochs 0@100, 1@150) is outside the local lineage
    (0@0, 2@150): Kafka's findHighestRemoteOffset still counts its epoch-0 part, up to 149,
    and the finding says so rather than that none of it counts."""
    _, (alone,) = lines("tiered", str(LOGDIRS / "tiered" / "clicks.tiered-1"), "--at", AT,
                        "--format", "json")
    (p,) = alone["partitions"]
    assert p["highest_offset_in_remote_storage"] == 149
    (mismatch,) = [f for f in p["findings"] if f["code"] == "remote_leader_epoch_mismatch"]
    assert "up to 149" in mismatch["message"]
    assert "nor treats its offsets as copied" not in mismatch["message"]


# --------------------------------------------------------------------------- replicas


def test_the_report_finds_what_diverge_finds(bundle):
    """Every finding ``diverge`` reports is in the report of the same input, and both exit
    with findings; on the bundle, each copy is named by its broker, not by the archive."""
    for path in [str(LOGDIRS / "replicas"), str(bundle)]:
        code, out = lines("diverge", path, "--format", "jsonl")
        assert code == 1
        said = {(f["code"], f["offset"]) for f in out if f["type"] == "finding"}
        assert ("replica_diverged", 40) in said
        model = build([path], at=1717243200000)
        assert said <= {(f.code, f.offset) for f in model.findings}
        replicas = [x["replica"] for x in out if x["type"] == "replica"]
        assert all(".tar.gz" not in r for r in replicas), replicas
        brokers = [row["broker"] for row in model.data["partitions"]]
        assert len(set(brokers)) == 2 and all(".tar.gz" not in b for b in brokers), brokers
        sources = {s["source"] for s in model.data["finding_sources"]}
        assert "segtools diverge" in sources


@pytest.mark.parametrize("tree", INPUTS)
def test_diverge_and_the_report_agree_on_every_tree(tree, bundle):
    """The same divergences from both; on a tree without two copies of a partition, none."""
    path = input_path(tree, bundle)
    _, out = lines("diverge", path, "--format", "jsonl")
    said = {(f["code"], f["offset"]) for f in out if f["type"] == "finding"
            and f["code"] == "replica_diverged"}
    model = build([path], at=1717243200000)
    shown = {(f.code, f.offset) for f in model.findings if f.code == "replica_diverged"}
    assert said == shown


# --------------------------------------------------------------------------- one clock


@pytest.mark.parametrize("tree", ["hostile", "forensics"])
def test_one_transaction_has_one_age(tree):
    """The hanging producer and its transactional id are one transaction: both ages are
    measured at ``--at``, not each at its own log's last timestamp."""
    at = "2023-12-08T03:00:00Z"
    at_ms = to_millis(at)
    _, out = lines("transactions", str(LOGDIRS / tree), "--at", at, "--format", "jsonl")
    (hanging,) = [x for x in out if x["type"] == "hanging_transaction"]
    assert hanging["age_ms"] == at_ms - hanging["first_timestamp"]
    (coordinator,) = [f for f in out if f["type"] == "finding"
                      and f["code"].startswith("transactional_id_")]
    changes = [x for x in out if x["type"] == "transaction_state"
               and x["transactional_id"] == hanging["transactional_id"]]
    start = changes[-1]["start_timestamp"]
    began = f"begun by the coordinator {format_duration(at_ms - start)} ago,"
    assert began in coordinator["message"]
    _, text = cli("transactions", str(LOGDIRS / tree), "--at", at)
    assert text.splitlines()[0] == f"transactions at {format_time(at_ms)} (--at)"
    model = build([str(LOGDIRS / tree)], at=at_ms)
    assert [(h["producer_id"], h["age_ms"]) for h in model.data["hanging"]] == \
        [(hanging["producer_id"], hanging["age_ms"])]


def test_without_at_the_clock_is_now_and_said_once():
    _, text = cli("transactions", str(LOGDIRS / "forensics"))
    first, *rest = text.splitlines()
    assert first.startswith("transactions at ") and first.endswith(" (now)")
    assert not any(line.startswith("transactions at ") for line in rest)


# --------------------------------------------------------------------------- find and dump


def _live_partitions(tree: str) -> list[Path]:
    return sorted(p for p in (LOGDIRS / tree).rglob("*") if p.is_dir()
                  and any(p.glob("*.log")) and "-delete" not in p.name
                  and not p.name.startswith("__cluster_metadata"))


@pytest.mark.parametrize("tree", TREES)
def test_find_returns_the_record_dump_shows(tree):
    """For offsets at the start, middle and end of each partition, ``find`` returns the record
    ``dump --deep`` shows at that offset, from a batch in the same state (a batch whose CRC
    fails is said to, with a finding, by both)."""
    compared = 0
    for pdir in _live_partitions(tree):
        _, dumped = console("dump", "--deep", "--format", "jsonl",
                            *map(str, sorted(pdir.glob("*.log"))))
        records, batch_of = {}, {}
        batch = None
        for x in dumped:
            if x["type"] == "batch":
                batch = x
            elif x["type"] == "record" and batch is not None:
                records.setdefault(x["offset"], x)
                batch_of.setdefault(x["offset"], batch)
        if not records:
            continue
        offsets = sorted(records)
        for offset in {offsets[0], offsets[len(offsets) // 2], offsets[-1]}:
            code, found = lines("find", str(pdir), "--offset", str(offset), "--format", "jsonl")
            (hit,) = [x for x in found if x["type"] == "found"]
            want = records[offset]
            assert {k: hit["record"][k] for k in ("offset", "timestamp", "key", "value")} == \
                {k: want[k] for k in ("offset", "timestamp", "key", "value")}, (pdir, offset)
            assert hit["batch"]["crc_valid"] == batch_of[offset]["crc_valid"], (pdir, offset)
            crc = [x for x in found if x["type"] == "finding" and x["code"] == "crc_mismatch"]
            assert bool(crc) == (batch_of[offset]["crc_valid"] is False), (pdir, offset)
            assert code == (1 if crc else 0), (pdir, offset)
            compared += 1
    assert compared

def test_find_below_the_local_log_of_a_tiered_partition():
    """Offset 50 of clicks.tiered-0: its remote segment was deleted; the first record after
    it is 100, in remote storage. Read there with --remote-store; without it, a hint and no
    false "no record" line."""
    pdir = str(LOGDIRS / "tiered" / "clicks.tiered-0")
    store = str(FIXTURES / "remote" / "tiered")
    code, found = lines("find", pdir, "--offset", "50", "--remote-store", store,
                        "--format", "jsonl")
    (hit,) = [x for x in found if x["type"] == "found"]
    assert (code, hit["record"]["offset"]) == (0, 100)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["find", pdir, "--offset", "150"])
    assert code == 1
    assert "pass --remote-store" in err.getvalue() and "no record" not in err.getvalue()


# --------------------------------------------------------------------------- transactions


def test_transactions_on_a_segment_answer_for_its_partition():
    """A transaction's marker may be in a later segment: naming one segment file answers for
    the partition it belongs to (as retention does), never as if the segment were all of
    it (a COMMITted transaction reported OPEN, a last stable offset of 15)."""
    pdir = LOGDIRS / "sample" / "payments.txn-0"
    at = "2023-11-16T00:00:00Z"
    _, whole = lines("transactions", str(pdir), "--at", at, "--format", "jsonl")
    _, one = lines("transactions", str(pdir / "00000000000000000000.log"), "--at", at,
                   "--format", "jsonl")
    assert one == whole
    (summary,) = [x for x in one if x["type"] == "partition_transactions"]
    assert summary["open"] == 0 and summary["last_stable_offset"] == 28


# --------------------------------------------------------------------------- retention


@pytest.mark.parametrize("tree", INPUTS)
def test_retention_and_tiered_give_the_remote_tier_one_verdict(tree, bundle):
    """Per remote segment, the same verdict and reason from ``retention`` and ``tiered``; and
    both commands show, in text, every warning their exit code counts."""
    path = input_path(tree, bundle)
    r_code, (ret,) = lines("retention", path, "--at", AT, "--format", "json")
    _, (tie,) = lines("tiered", path, "--at", AT, "--format", "json")
    by_retention = {(p["topic"], p["partition"], s["segment_id"]): (s["deletable"], s["reason"])
                    for p in ret["partitions"] for s in p.get("remote_segments", ())}
    by_tiered = {(p["topic"], p["partition"], s["segment_id"]): (s["deletable"], s["reason"])
                 for p in tie["partitions"] if p["local"] is not None
                 for s in p["remote_segments"] if "reason" in s}
    assert by_retention == by_tiered
    for command, code in (("retention", r_code), ("tiered", None)):
        text_code, text = cli(command, path, "--at", AT)
        shown = [line for line in text.splitlines() if line.startswith(("WARNING ", "ERROR "))]
        assert bool(shown) == (text_code == 1), (command, text[-1500:])
        if code is not None:
            assert text_code == code


# --------------------------------------------------------------------------- one clock


#: The text commands whose answer is measured at a moment, and the label their first line
#: starts with.
TIMED = {"retention": "retention", "compaction": "compaction", "tiered": "tiered storage",
         "transactions": "transactions"}


@pytest.mark.parametrize("tree", ["tiered", "forensics"])
def test_every_timed_command_says_its_one_clock_alike(tree):
    """With ``--at``, every timed command's first line names that moment the same way, and the
    report is built at it; without, each says "now" once, with what that means once."""
    path = str(LOGDIRS / tree)
    for command, label in TIMED.items():
        _, text = cli(command, path, "--at", AT)
        first = text.splitlines()[0]
        assert first.startswith(f"{label} at {format_time(to_millis(AT))} (--at)"), first
        assert "this machine's clock" not in text
        _, text = cli(command, path)
        first, second = text.splitlines()[:2]
        assert first.startswith(f"{label} at ") and " (now)" in first, first
        assert second.startswith('"now" is this machine\'s clock'), second
        assert text.count("this machine's clock") == 1
    assert build([path], at=to_millis(AT)).data["meta"]["at"] == to_millis(AT)


def test_tiered_at_a_moment_knows_only_the_events_before_it():
    """The remote tier at ``--at`` is what ``__remote_log_metadata`` said by then: a delete or a
    copy that started later is not shown (segment 0..99 of clicks.tiered-0 was deleted on
    2024-06-01; on 2024-05-30 it is still a finished copy)."""
    at = "2024-05-30T00:05:00Z"
    _, out = lines("tiered", str(LOGDIRS / "tiered" / "clicks.tiered-0"), "--at", at,
                   "--format", "jsonl")
    (doc,) = [x for x in out if x["type"] == "tiered"]
    segments = [s for p in doc["partitions"] for s in p["remote_segments"]]
    assert segments and all(s["state_changed_ms"] <= to_millis(at) for s in segments)
    first = next(s for s in segments if s["start_offset"] == 0)
    assert first["state"] == "COPY_SEGMENT_FINISHED"


def test_tiered_before_every_event_does_not_deny_the_records_it_counted():
    """Before the first event of ``__remote_log_metadata``, ``tiered`` counts the records it
    read in its first line; its next said there was "no remote log metadata here"."""
    _, text = cli("tiered", str(LOGDIRS / "tiered"), "--at", "2023-11-17T05:46:40Z")
    first, second = text.splitlines()[:2]
    assert " 28 __remote_log_metadata record(s) " in first
    assert "no remote log metadata here" not in text
    assert second == ("no tiered partition (remote.storage.enable), and no "
                      "__remote_log_metadata record names one by 2023-11-17T05:46:40Z (--at)")


def test_retention_and_compaction_assume_one_cleanup_policy():
    """With no topic config both commands take Kafka's default, delete, and say so; the
    cleaner's replay of a partition named anyway says the cleaner never runs on it."""
    pdir = str(LOGDIRS / "sample" / "orders.v2-eu-0")
    _, (retention,) = lines("retention", pdir, "--at", AT, "--format", "json")
    _, (compaction,) = lines("compaction", pdir, "--at", AT, "--format", "json")
    (kept,), (cleaned,) = retention["partitions"], compaction["partitions"]
    assert kept["config"]["cleanup.policy"] == cleaned["config"]["cleanup.policy"]
    assert cleaned["config"]["cleanup.policy"]["value"] == "delete"
    assert "never compacts" in cleaned["not_compacted"]
    for command in ("retention", "compaction"):
        assert "cleanup.policy=delete [default]" in cli(command, pdir, "--at", AT)[1]
    assert "the log cleaner never compacts this partition" in cli("compaction", pdir,
                                                                  "--at", AT)[1]


def test_a_key_no_record_has_is_a_selection_that_selects_nothing():
    """As ``--topic`` matching no topic: one line naming what is there, exit 2, on the CLI
    and in the Python API alike; a key that is there still gets its history."""
    import segtools
    from segtools.fetch.arguments import ArgumentError

    pdir = str(LOGDIRS / "sample" / "payments-compact-0")
    proc = subprocess.run([SEGTOOLS, "compaction", pdir, "--at", AT, "--key", "k2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("segtools: error: ") and "no record has key 'k2'" in line
    assert "nearest keys: 'k18', 'k19', 'k20', 'k21'" in line
    with pytest.raises(ArgumentError, match="key: no record has key 'k2'"):
        segtools.open(pdir).explain_compaction(at=AT, key="k2")
    code, text = cli("compaction", pdir, "--at", AT, "--key", "k02")
    assert code == 0 and "history of key k02: 2 version(s)" in text


@pytest.mark.parametrize("junk", [b"this is not a Kafka segment\n" * 200, bytes(range(256)) * 20])
def test_find_reports_the_damage_verify_reports(tmp_path, junk):
    """A segment that is not Kafka bytes: ``find`` reads it on its way and must say what
    ``verify`` says of it, not only that no record was found."""
    pdir = tmp_path / "logs" / "junk-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(junk)
    _, checked = lines("verify", str(pdir), "--format", "jsonl")
    code, found = lines("find", str(pdir), "--offset", "0", "--format", "jsonl")
    damage = {(f["code"], f["path"]) for f in checked
              if f["type"] == "finding" and f["severity"] != "info"}
    assert damage
    assert damage <= {(f["code"], f["path"]) for f in found if f["type"] == "finding"}
    assert code == 1


@pytest.mark.parametrize("tree", ["sample", "legacy"])
def test_scan_counts_bad_crcs_only_when_it_checks_them(tree):
    """Without ``--crc`` no CRC is checked, so ``crc_errors`` is null (empty in csv, and the
    table says so), not a 0 that reads as "all good"; with it, each segment's count is what
    ``verify`` finds in that segment."""
    path = str(LOGDIRS / tree)
    _, plain = lines("scan", "-q", path, "--format", "jsonl")
    assert {r["crc_errors"] for r in plain if r["type"] == "segment"} == {None}
    _, checked = lines("scan", "-q", "--crc", path, "--format", "jsonl")
    _, verified = lines("verify", "-q", path, "--format", "jsonl")
    bad: dict[str, int] = {}
    for f in verified:
        if f["type"] == "finding" and f["code"] == "crc_mismatch":
            bad[f["path"]] = bad.get(f["path"], 0) + 1
    assert {r["path"]: r["crc_errors"] for r in checked if r["type"] == "segment"} == \
        {r["path"]: bad.get(r["path"], 0) for r in checked if r["type"] == "segment"}
    rows = list(csv.DictReader(io.StringIO(cli("scan", "-q", path, "--format", "csv")[1])))
    assert rows and {row["crc_errors"] for row in rows} == {""}
    assert "batch CRCs not checked (--crc checks them)" in cli("scan", "-q", path)[1]
    assert "batch CRCs checked" in cli("scan", "-q", "--crc", path)[1]


@pytest.mark.parametrize(("topic", "subjects"), [
    ("orders", {"orders-value", "money"}),  # money: what orders-value references
    ("events", {"events-value"}),
    ("payloads.hostile", {"orders-value", "money", "legacy-value", "customers-value",
                          "address", "events-value", "scratch-value"}),
])
def test_schemas_of_a_topic_are_those_it_uses(topic, subjects):
    """``schemas --usage --topic T`` lists T's subjects, those its records' ids are
    registered under and what they reference, not every subject of the registry; its usage
    rows are the whole run's rows for T."""
    tree = str(LOGDIRS / "payloads")
    _, whole = lines("schemas", "--usage", "--format", "jsonl", tree)
    _, mine = lines("schemas", "--usage", "--topic", topic, "--format", "jsonl", tree)
    listed = {x["subject"] for x in mine if x["type"] in ("schema", "schema_removed")}
    assert listed == subjects
    configs = {x.get("subject") for x in mine if x["type"] not in (
        "schema", "schema_removed", "schema_usage", "finding")}
    assert configs <= subjects | {None}
    usage_rows = [x for x in whole if x["type"] == "schema_usage" and x["topic"] == topic]
    assert usage_rows == [x for x in mine if x["type"] == "schema_usage"]


def test_notes_alone_exit_0_as_the_contract_says():
    """docs/json-contract.md's exit codes say plainly that notes (info findings) never make
    a command exit 1; ``verify`` printing only notes exits 0, a warning makes it 1."""
    contract = (Path(__file__).resolve().parents[2] / "docs" / "json-contract.md").read_text()
    codes = " ".join(contract.split("\n\n")[1].split())
    assert "notes (`info` findings:" in codes and "never change the exit code" in codes
    assert "`verify` on a healthy log dir that prints only notes exits `0`" in codes
    code, found = lines("verify", "-q", "--format", "jsonl",
                        str(LOGDIRS / "sample" / "payments-compact-0"))
    severities = {x["severity"] for x in found if x["type"] == "finding"}
    assert severities == {"info"} and code == 0
    code, found = lines("verify", "-q", "--format", "jsonl", str(LOGDIRS / "sample"))
    assert {"warning", "error"} & {x["severity"] for x in found if x["type"] == "finding"}
    assert code == 1


def test_the_report_and_compaction_agree_on_a_partition_without_config():
    """The report of a partition named without a topic config shows its policy as
    ``retention`` and ``compaction`` do (Kafka's default, delete), not as compacted, and
    says why the cleaner's replay is shown anyway."""
    pdir = str(LOGDIRS / "sample" / "orders.v2-eu-0")
    _, (compaction,) = lines("compaction", pdir, "--at", AT, "--format", "json")
    (cleaned,) = compaction["partitions"]
    model = build([pdir], at=to_millis(AT))
    (row,) = model.data["partitions"]
    assert row["compacted"] is False and row["dirty_ratio"] is None
    shown = model.detail(row["id"])["compaction"]
    assert shown["policy"] == [cleaned["config"]["cleanup.policy"]["value"]] == ["delete"]
    assert shown["not_compacted"] == cleaned["not_compacted"]


# --------------------------------------------------------------------------- a mixed tree


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, monkeypatch_module) -> Path:
    """A log dir holding a partition of every fixture shape (``bench_tree``'s, one topic of
    one partition per shape and weight: 34 partitions), as a broker's tree mixes them."""
    from benchmarks import bench_tree

    monkeypatch_module.setattr(bench_tree, "TREES", tmp_path_factory.mktemp("mixed"))
    monkeypatch_module.setattr(bench_tree, "PARTITIONS_PER_TOPIC", 1)
    return bench_tree.build_tree(sum(s.weight for s in bench_tree.SHAPES))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _per_partition(rows, count) -> dict[tuple[str, int], Counter]:
    out: dict[tuple[str, int], Counter] = {}
    for r in rows:
        out.setdefault((r["topic"], int(r["partition"])), Counter()).update(count(r))
    return out


def test_the_counts_are_one_whatever_face_reads_them(mixed):
    """Segments, bytes, batches and records of each partition, and the tree's totals: as
    ``scan --crc`` lists them, ``verify`` counts them, the report sums them and the Python
    API reads them (its records with the control records, which scan counts)."""
    import segtools

    _, scanned = lines("scan", "-q", "--crc", "--format", "jsonl", str(mixed))
    segments = [x for x in scanned if x["type"] == "segment"]
    by_scan = _per_partition(segments, lambda s: {
        "segments": 1, "bytes": s["size"], "batches": s["batch_count"] or 0,
        "records": s["record_count"] or 0})
    logs = segtools.open(mixed)
    by_api = _per_partition(logs.segments(), lambda s: {
        "segments": 1, "bytes": s["size"], "batches": s["batch_count"] or 0,
        "records": s["record_count"] or 0})
    assert by_api == by_scan
    batches = _per_partition(logs.batches(columns=["topic", "partition"]),
                             lambda _: {"batches": 1})
    records = logs.to_arrow(columns=["topic", "partition"], include_control=True).read_all()
    rows = _per_partition(records.to_pylist(), lambda _: {"records": 1})
    for k, c in by_scan.items():
        assert batches.get(k, Counter())["batches"] == c["batches"], k
        assert rows.get(k, Counter())["records"] == c["records"], k
    _, verified = lines("verify", "-q", "--format", "jsonl", str(mixed))
    (summary,) = [x for x in verified if x["type"] == "summary"]
    assert (summary["partitions"], summary["segments"]) == (len(by_scan), len(segments))
    model = build([str(mixed)], at=to_millis(AT), logs=segtools.open(mixed))
    shown = {(r["topic"], r["partition"]): Counter(segments=r["segments"], bytes=r["size"],
                                                   records=r["records"])
             for r in model.data["partitions"]}
    assert shown == {k: Counter(segments=c["segments"], bytes=c["bytes"], records=c["records"])
                     for k, c in by_scan.items()}
    total = sum(by_scan.values(), Counter())
    assert {k: model.data["summary"][k] for k in ("partitions", "segments", "bytes", "records")} \
        == {"partitions": len(by_scan), "segments": total["segments"], "bytes": total["bytes"],
            "records": total["records"]}


def test_the_what_if_of_no_change_starts_where_retention_is(mixed):
    """``retention`` and the what-if with no change, at one moment: each partition starts
    from the bytes retention sees, its first check leaves what retention keeps, and today's
    config and the "proposed" one (no change) run alike. The what-if aged a segment of
    magic 0 messages (no record timestamps) as if it were from 1970 and deleted it at once,
    where retention ages it by its file's mtime (``LogSegment.largestTimestamp``) and keeps
    it."""
    import segtools

    (doc,) = lines("retention", "-q", "--at", AT, "--format", "json", str(mixed))[1]
    kept = {(p["topic"], p["partition"]): (p["size"], p["size"] - p["deletable_bytes"])
            for p in doc["partitions"]}
    report = segtools.open(mixed).what_if(None, at=AT).to_json()
    runs = {(w["topic"], w["partition"]): w for w in report["what_if"]
            if w["partition"] is not None}
    assert set(runs) == set(kept)
    assert any(size != left for size, left in kept.values())  # not all deleted at once
    for k, (size, left) in kept.items():
        run = runs[k]
        assert run["current"] == run["proposed"], k
        assert (run["current"]["start_bytes"], run["current"]["series"][0][1]) == \
            (size, left), k


def test_producers_and_transactions_are_the_report_s_sections(mixed):
    """Each partition's producers (the report's detail) and transactions (its row, its
    detail, the hanging list) are what ``producers`` and ``transactions`` print."""
    import segtools

    model = build([str(mixed)], at=to_millis(AT), logs=segtools.open(mixed))
    rows = {r["path"]: {**r, "detail": model.detail(r["id"])} for r in model.data["partitions"]}
    _, printed = lines("producers", "-q", "--format", "json", str(mixed))
    batching = {}
    for x in printed:
        if x["type"] == "producer_batching":
            batching.setdefault((x["topic"], x["partition"]), []).append(x)
    def order(producers: list[dict]) -> list[dict]:
        return sorted(producers, key=lambda p: (p["producer_id"], p["producer_epoch"]))

    assert batching
    for r in rows.values():
        shown = order((r["detail"]["producers"] or {"producers": []})["producers"])
        said = order(batching.get((r["topic"], r["partition"]), []))
        assert [{k: p[k] for k in q} for p, q in zip(said, shown, strict=True)] == shown, \
            r["path"]
    _, printed = lines("transactions", "-q", "--now", AT, "--format", "json", str(mixed))
    told = [x for x in printed if x["type"] == "partition_transactions"]
    assert told
    for x in told:
        r = rows[x["path"]]
        detail = r["detail"]["transactions"]
        assert (r["transactions"], r["hanging"]) == (x["transactions"], x["open"]), x
        assert {k: detail[k] for k in ("log_start_offset", "log_end_offset",
                                       "last_stable_offset", "committed", "aborted", "open")} \
            == {k: x[k] for k in ("log_start_offset", "log_end_offset", "last_stable_offset",
                                  "committed", "aborted", "open")}, x
    hanging = [(x["partition"], x["producer_id"], x["first_offset"]) for x in printed
               if x["type"] == "hanging_transaction"]
    assert hanging and sorted(hanging) == sorted(
        (h["partition"], h["producer_id"], h["first_offset"]) for h in model.data["hanging"])
