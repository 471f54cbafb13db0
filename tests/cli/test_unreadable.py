"""One unreadable file never stops an answer: every command, on a copy of the sample tree with
one file (or directory) at mode 000, answers for the rest and reports the unreadable one as a
finding (exit 1), never exits 2 with nothing.

segtools runs as root in CI, and root reads a file at mode 000; the commands are run without
the two capabilities that let it (``setpriv --bounding-set -dac_override,-dac_read_search``),
which is what an unprivileged user sees."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures_manifest import FIXTURES

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
SETPRIV = shutil.which("setpriv")

#: Each kind of file a log dir holds, one of each in the sample tree.
KINDS = {
    "segment": "orders.v2-eu-0/00000000000000000005.log",
    "offset index": "orders.v2-eu-0/00000000000000000005.index",
    "time index": "orders.v2-eu-0/00000000000000000005.timeindex",
    "transaction index": "payments.txn-0/00000000000000000000.txnindex",
    "producer snapshot": "payments.txn-0/00000000000000000020.snapshot",
    "leader-epoch-checkpoint": "orders.v2-eu-0/leader-epoch-checkpoint",
    "partition.metadata": "orders.v2-eu-0/partition.metadata",
    "offset checkpoint": "replication-offset-checkpoint",
    "meta.properties": "meta.properties",
    "partition directory": "orders.v2-eu-0",
}

#: Every command that reads a tree, with what it needs besides the path, and a line that
#: shows it answered for the rest of the tree (a partition no chmod touches).
COMMANDS = {
    "scan": ((), "orders.v2-eu-3"),
    "verify": ((), "verified 13 partition(s)"),
    "retention": (("--at", "2023-11-16T00:00:00Z"), "orders.v2-eu-3"),
    "compaction": (("--at", "2023-11-16T00:00:00Z"), "payments-compact-1"),
    "transactions": (("--at", "2023-11-16T00:00:00Z"), "payments.txn-0"),
    "producers": ((), "payments.txn-0"),
    "find": (("--offset", "100"), "orders.v2-eu-3: offset 100"),
}


def as_unprivileged(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    if SETPRIV is None:
        pytest.skip("running as root without setpriv: mode 000 cannot be tested")
    return [SETPRIV, "--bounding-set", "-dac_override,-dac_read_search", "--", *argv]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return copy_of(tmp_path_factory, "sample")


def copy_of(tmp_path_factory, name: str) -> Path:
    """A copy of the fixture tree ``name``, for a test to chmod, in a directory the
    unprivileged run can reach."""
    root = tmp_path_factory.mktemp(name)
    root.chmod(0o755)
    copy = root / name
    shutil.copytree(FIXTURES / "logdirs" / name, copy)
    return copy


def run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(as_unprivileged([SEGTOOLS, *argv]), capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "200"})


def run_without(target: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """``argv`` run with ``target`` at mode 000, its mode given back after."""
    mode = target.stat().st_mode
    target.chmod(0)
    try:
        return run(argv)
    finally:
        target.chmod(mode & 0o7777)


@pytest.fixture
def unreadable(tree, request):
    """``tree`` with the file of ``request.param`` at mode 000 for the test's duration."""
    target = tree / KINDS[request.param]
    mode = target.stat().st_mode
    target.chmod(0)
    try:
        yield tree, target
    finally:
        target.chmod(mode & 0o7777)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("unreadable", sorted(KINDS), indirect=True)
def test_one_unreadable_file_is_a_finding_and_the_rest_is_answered(unreadable, command):
    tree, target = unreadable
    extra, answered = COMMANDS[command]
    proc = run([command, str(tree), *extra])
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    unread = [line for line in proc.stdout.splitlines()
              if target.name in line and "ermission denied" in line]
    assert unread, proc.stdout[-2000:]
    assert answered in proc.stdout, "the rest of the tree is answered"


@pytest.mark.parametrize("name", ["clicks.tiered-0/00000000000000000300.log",
                                  "__remote_log_metadata-22/00000000000000000000.log",
                                  "clicks.tiered-0", "log-start-offset-checkpoint",
                                  "clicks.tiered-0/leader-epoch-checkpoint"])
def test_tiered_says_what_it_could_not_read(tmp_path, name):
    """A partition directory that cannot be listed is said to be unread, not absent ("not in
    this log dir"); a log dir's checkpoint it went on without is named; without its leader
    epoch lineage no remote segment is judged against an empty one."""
    copy = tmp_path / "tiered"
    shutil.copytree(FIXTURES / "logdirs" / "tiered", copy)
    tmp_path.chmod(0o755)
    (copy / name).chmod(0)
    proc = run(["tiered", str(copy), "--at", "2024-06-01T12:00:00Z"])
    assert proc.returncode == 1, proc.stderr
    assert any(Path(name).name in line and "ermission denied" in line
               for line in proc.stdout.splitlines()), proc.stdout
    assert "clicks.tiered-1" in proc.stdout
    block = proc.stdout.split("clicks.tiered-0  topic id", 1)[1].split("topic id", 1)[0]
    assert "not in this log dir" not in block.splitlines()[1], block
    assert "remote_not_in_leader_epoch_lineage" not in block, block


def test_the_report_says_what_it_could_not_read(tree, tmp_path):
    target = tree / KINDS["segment"]
    target.chmod(0)
    try:
        out = tmp_path / "r.html"
        proc = run(["report", str(tree), "-o", str(out), "--at", "2023-11-16T00:00:00Z"])
    finally:
        target.chmod(0o644)
    assert proc.returncode == 1, proc.stderr
    page = out.read_text()
    assert "segment_unreadable" in page and "orders.v2-eu-3" in page


#: Every command that reads a tree, with what it needs besides the path.
EVERY_COMMAND = {**{c: extra for c, (extra, _) in COMMANDS.items()}, "tiered": (),
                 "diverge": (), "metadata": (), "offsets": (), "schemas": (),
                 "report": ("-o", "{tmp}/r.html"), "query": ("-c", "select 1 from segments")}


def test_every_command_says_which_log_dir_it_cannot_list(tree, tmp_path):
    """A log dir at mode 000: every command gives the same one line, naming it and why, not
    "no Kafka partitions found here" (there are some; they cannot be read) nor a traceback."""
    tmp_path.chmod(0o777)
    tree.chmod(0)
    try:
        said = {command: run([command, str(tree), *(a.format(tmp=tmp_path) for a in extra)])
                for command, extra in sorted(EVERY_COMMAND.items())}
    finally:
        tree.chmod(0o755)
    want = f"segtools: error: {tree}: cannot list: Permission denied\n"
    assert {c: (p.returncode, p.stderr) for c, p in said.items()} == \
        {c: (2, want) for c in said}


def test_every_command_says_it_cannot_reach_a_path_below_a_locked_directory(tree, tmp_path):
    """A partition named below a directory that cannot be searched: the same one line from
    every command (it was an internal error from the container search)."""
    tmp_path.chmod(0o777)
    partition = tree / "orders.v2-eu-3"
    tree.chmod(0o600)  # readable names, no search: nothing below can be reached
    try:
        said = {command: run([command, str(partition),
                              *(a.format(tmp=tmp_path) for a in extra)])
                for command, extra in sorted(EVERY_COMMAND.items()) if command != "diverge"}
    finally:
        tree.chmod(0o755)
    want = f"segtools: error: {partition}: cannot read: Permission denied\n"
    assert {c: (p.returncode, p.stderr) for c, p in said.items()} == \
        {c: (2, want) for c in said}


#: The internal topics' readers, each with a file or directory of its topic made unreadable
#: in a copy of the forensics tree.
INTERNAL = [("metadata", "__cluster_metadata-0"),
            ("metadata", "__cluster_metadata-0/00000000000000000073.log"),
            ("offsets", "__consumer_offsets-9"),
            ("offsets", "__consumer_offsets-9/00000000000000000000.log"),
            ("report", "__cluster_metadata-0")]


@pytest.fixture(scope="module")
def forensics(tmp_path_factory) -> Path:
    return copy_of(tmp_path_factory, "forensics")


@pytest.mark.parametrize(("command", "name"), INTERNAL)
def test_the_internal_topics_say_what_they_could_not_read(forensics, command, name):
    """A ``__cluster_metadata`` or ``__consumer_offsets`` directory or segment at mode 000 is
    an error finding (exit 1) naming it, and the rest is answered: not a replay of nothing
    that exits 0, nor an internal error."""
    target = forensics / name
    out = forensics.parent / "r.html"
    proc = run_without(target, [command, str(forensics),
                                *(("-o", str(out)) if command == "report" else ())])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    if command == "report":
        page = out.read_text()
        assert "partition_dir_unreadable" in page and "payments.hanging" in page
        return
    assert any(f"{name}): " in line and "Permission denied" in line
               for line in proc.stdout.splitlines()), proc.stdout[-2000:]
    if command == "offsets" or name.endswith(".log"):  # the metadata log is one partition
        answered = {"metadata": "topic payments.txn", "offsets": "group legacy-app"}[command]
        assert answered in proc.stdout


#: Files and directories of one broker's copy in a copy of the replicas tree.
REPLICA_KINDS = ["orders.v2-eu-9/00000000000000000000.log",
                 "orders.v2-eu-9/leader-epoch-checkpoint", "meta.properties",
                 "replication-offset-checkpoint"]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory) -> Path:
    return copy_of(tmp_path_factory, "replicas")


@pytest.mark.parametrize("name", REPLICA_KINDS)
def test_diverge_says_what_it_could_not_read(replicas, name):
    target = replicas / "broker1" / name
    proc = run_without(target, ["diverge", str(replicas)])
    assert proc.returncode == 1, proc.stderr
    assert any(target.name in line and "ermission denied" in line
               for line in proc.stdout.splitlines()), proc.stdout
    assert "presumed leader: broker2" in proc.stdout


@pytest.mark.parametrize("name", ["orders.v2-eu-9", ""])
def test_diverge_does_not_compare_a_copy_it_cannot_list(replicas, name):
    """A broker's copy (or whole log dir) at mode 000 is not an empty log that "lacks offsets
    0..59": with one copy left there is nothing to compare, and the error says why."""
    target = replicas / "broker1" / name
    proc = run_without(target, ["diverge", str(replicas)])
    assert proc.returncode == 2
    assert proc.stderr.endswith(f"; {target.resolve()}: cannot list: Permission denied\n"), \
        proc.stderr


def test_scan_does_not_call_an_unreadable_partition_a_leftover(tree):
    target = tree / KINDS["partition directory"]
    target.chmod(0)
    try:
        proc = run(["scan", str(tree)])
    finally:
        target.chmod(0o755)
    leftovers = proc.stdout.split("leftovers (evidence a broker left behind):")
    assert len(leftovers) == 1 or "partition_dir_unreadable" not in leftovers[1].split(
        "finding(s):")[0]
    assert "partition_dir_unreadable" in proc.stdout


def test_a_truncated_bundle_answers_for_the_members_before_the_damage(tmp_path):
    """A support bundle cut in the middle of its second broker: the first is read whole (as
    ``gzip -dc`` recovers it), the damage is a finding."""
    import tarfile

    whole = tmp_path / "bundle.tar.gz"
    with tarfile.open(whole, "w:gz") as tar:
        tar.add(FIXTURES / "logdirs" / "replicas" / "broker1", "broker-1/kafka-logs")
        tar.add(FIXTURES / "logdirs" / "sample", "broker-2/kafka-logs")
    data = whole.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[:len(data) // 2])
    proc = subprocess.run([SEGTOOLS, "scan", str(cut)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 1, proc.stderr
    assert "orders.v2-eu-9" in proc.stdout
    assert "archive_damaged" in proc.stdout and "breaks off" in proc.stdout


def test_dump_of_several_files_goes_past_an_unreadable_one(tree):
    pdir = tree / "orders.v2-eu-0"
    target = pdir / "00000000000000000005.log"
    target.chmod(0)
    try:
        proc = run(["dump", *(str(p) for p in sorted(pdir.glob("*.log")))])
    finally:
        target.chmod(0o644)
    assert proc.returncode == 1, proc.stderr
    assert "Dumping " + str(pdir / "00000000000000000205.log") in proc.stdout
    (line,) = [x for x in proc.stdout.splitlines() if "segment_unreadable" in x]
    assert target.name in line and "ermission denied" in line


@pytest.fixture(scope="module")
def payloads(tmp_path_factory) -> Path:
    return copy_of(tmp_path_factory, "payloads")


@pytest.mark.parametrize("name", ["_schemas-0", "_schemas-0/00000000000000000000.log"])
def test_schemas_says_what_it_could_not_read(payloads, name):
    """The registry's log (or its directory) at mode 000 is not a registry with no schema."""
    proc = run_without(payloads / name, ["schemas", str(payloads)])
    assert proc.returncode == 1, proc.stderr
    assert any(f"{name}): " in line and "Permission denied" in line
               for line in proc.stdout.splitlines()), proc.stdout


@pytest.mark.parametrize("view", ["records", "batches", "segments"])
def test_query_reads_past_an_unreadable_segment(payloads, view):
    """The rows the API, Spark and ``query`` read come from one reader: a segment at mode 000
    is a ``segment_unreadable`` finding in the findings view, the other segments' rows are
    read, and nothing leaks a Python traceback."""
    target = payloads / "orders-0" / "00000000000000000000.log"
    proc = run_without(target, ["query", str(payloads), "--format", "jsonl", "-c",
                                f"select (select count(*) from {view}) as n, (select "
                                "list(path) from findings where code = 'segment_unreadable') "
                                "as unread"])
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr, proc.stderr
    (row,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert row["n"] > 0 and row["unread"] == [str(target)]
