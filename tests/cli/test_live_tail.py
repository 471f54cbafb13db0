"""A running broker's active segment ends, as often as not, in a batch it is still writing: the
size segtools sees at open falls between the first and the last byte of an append. Kafka's
``FileLogInputStream`` reads such a tail as the end of data, so every command must too (a
note, exit 0), and all of them alike; the same bytes in a copy (no broker holds it), or at the
end of a sealed segment, are a torn tail Kafka's recovery truncates (a warning, exit 1).

Found by an SRE's review: ``verify`` of a healthy live broker's log dir exited 1 about every
other run, and which commands reported the tail changed from run to run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures_manifest import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = FIXTURES / "logdirs" / "sample"
#: The broker: hold the ``.lock`` given as Kafka's ``FileChannel.tryLock`` does (a POSIX record
#: lock over the whole file), say so, hold until stdin closes.
BROKER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
sys.stdin.read()
"""
#: Every command in one child process (gentle mode lowers the priority of the process it runs
#: in, which must not be the test runner), stdout caught at the descriptor (``dump`` writes
#: there itself): each command's exit code and findings (on a line of their own, or inside the
#: one object ``retention`` and ``compaction`` write).
COMMANDS = """
import json, os, sys, tempfile
from segtools.cli.main import main

def findings(value):
    if isinstance(value, dict):
        if value.get("type") == "finding":
            yield value
        else:
            for item in value.values():
                yield from findings(item)
    elif isinstance(value, list):
        for item in value:
            yield from findings(item)

answers = []
for argv in json.loads(sys.argv[1]):
    with tempfile.TemporaryFile("w+") as out:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(out.fileno(), 1)
        try:
            code = main(argv)
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        found = [f for line in out if line.strip() for f in findings(json.loads(line))]
    answers.append([code, [[f["code"], f["severity"], os.path.basename(os.path.dirname(f["path"])),
                            os.path.basename(f["path"])] for f in found]])
print(json.dumps(answers))
"""

#: Partition -> how its segment is cut: the active segment mid-batch and before a whole
#: header, and a sealed one (the broker never appends there: still damage).
ACTIVE_HALF = ("orders.v2-eu-0", "00000000000000000205.log")
ACTIVE_SHORT = ("orders.v2-eu-1", "00000000000000000000.log")
SEALED = ("payments-compact-0", "00000000000000000000.log")


def _append_cut(path: Path, keep: int | None) -> None:
    """Append the start of the file's own first batch: ``keep`` bytes of it (None: half)."""
    data = path.read_bytes()
    size = 12 + int.from_bytes(data[8:12], "big")
    with path.open("ab") as f:
        f.write(data[:size // 2 if keep is None else keep])


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("live-tail") / "kafka-logs"
    root.mkdir()
    shutil.copy(SAMPLE / "meta.properties", root)
    for partition in (ACTIVE_HALF, ACTIVE_SHORT, SEALED):
        shutil.copytree(SAMPLE / partition[0], root / partition[0])
    _append_cut(root.joinpath(*ACTIVE_HALF), None)
    _append_cut(root.joinpath(*ACTIVE_SHORT), 20)
    _append_cut(root.joinpath(*SEALED), None)
    (root / ".lock").touch()
    return root


def commands(log_dir: Path) -> list[list[str]]:
    return [[*argv, "--format", "jsonl"] for argv in (
        ["scan", str(log_dir)], ["verify", str(log_dir)], ["retention", str(log_dir)],
        ["compaction", str(log_dir)], ["transactions", str(log_dir)],
        ["producers", str(log_dir)], ["dump", str(log_dir.joinpath(*ACTIVE_HALF))],
        ["dump", str(log_dir.joinpath(*SEALED))])]


def run_all(log_dir: Path) -> list[tuple[list[str], int, set[tuple[str, str, str, str]]]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "spark")])}
    argvs = commands(log_dir)
    proc = subprocess.run([sys.executable, "-c", COMMANDS, json.dumps(argvs)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    answers = json.loads(proc.stdout.splitlines()[-1])
    return [(argv, code, {tuple(f) for f in found}) for argv, (code, found)
            in zip(argvs, answers, strict=True)]


def tails(found: set[tuple[str, str, str, str]]) -> set[tuple[str, str, str, str]]:
    return {f for f in found if f[0] in ("truncated_tail", "append_in_flight")}


def test_a_running_broker_s_append_in_flight_is_the_end_of_data(log_dir: Path):
    broker = subprocess.Popen([sys.executable, "-c", BROKER, str(log_dir / ".lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert broker.stdout.readline().strip() == "locked"
        answers = run_all(log_dir)
    finally:
        broker.stdin.close()
        broker.wait(timeout=30)
    in_flight = {("append_in_flight", "info", *ACTIVE_HALF),
                 ("append_in_flight", "info", *ACTIVE_SHORT)}
    torn = ("truncated_tail", "warning", *SEALED)
    for argv, code, found in answers:
        if argv[0] != "dump":  # every tree command sees all three tails, alike
            assert tails(found) == {*in_flight, torn}, argv
            assert code == 1, argv
        elif argv[1].endswith(os.path.join(*ACTIVE_HALF)):
            assert tails(found) == {("append_in_flight", "info", *ACTIVE_HALF)}
            assert code == 0, found
        else:
            assert tails(found) == {torn} and code == 1


def test_the_same_tail_in_a_copy_is_a_torn_write(log_dir: Path):
    answers = run_all(log_dir)  # the .lock there but free: a stopped broker's, or a copy
    torn = {("truncated_tail", "warning", *p) for p in (ACTIVE_HALF, ACTIVE_SHORT, SEALED)}
    for argv, code, found in answers:
        assert code == 1, argv
        if argv[0] != "dump":
            assert tails(found) == torn, argv
