"""Read-only proof (issue 8 §4): every command over a copy of every fixture tree leaves every
file's bytes, size, mtime, ctime and inode as they were, creates and removes nothing, and
opens nothing under the tree for writing (an audit hook sees every open and mmap)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.robustness.audited_run import CANARY
from tests.robustness.commands import (
    ARGUMENT_SETS,
    SPARK,
    argument_sets,
    command_names,
    run_cli,
)

ROOT = Path(__file__).resolve().parents[2]


def fingerprint(root: Path) -> dict[str, tuple]:
    """Everything a write, rename, truncate, chmod, touch or create would change."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        st = os.lstat(dirpath)
        out[dirpath] = ("dir", tuple(sorted(dirnames + filenames)), st.st_mtime_ns,
                        st.st_ctime_ns, st.st_ino, st.st_mode)
        for name in filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            out[path] = ("file", digest, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                         st.st_ino, st.st_mode)
    return out


def test_every_command_has_an_argument_set():
    missing = [c for c in command_names() if c not in ARGUMENT_SETS]
    assert not missing, (
        f"segtools commands {missing} have no argument set in tests/robustness/commands.py: "
        "add one, so the read-only proof and the live-broker tests run them")


def audited(root: Path, argvs: list[list[str]]) -> dict:
    result = subprocess.run([sys.executable, "-m", "tests.robustness.audited_run", str(root)],
                            input=json.dumps(argvs), capture_output=True, text=True, cwd=ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def test_no_command_changes_or_creates_anything(tree):
    argvs = argument_sets(tree)
    assert {a[0] for a in argvs} - {SPARK} == set(command_names()) & set(ARGUMENT_SETS)
    before = fingerprint(tree.root)
    report = audited(tree.root, argvs)
    after = fingerprint(tree.root)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    assert not changed, [(p, before.get(p), after.get(p)) for p in changed[:5]]
    for run in report["runs"]:
        assert run["code"] in (0, 1), run
        assert "internal error" not in run["stderr"] and "Traceback" not in run["stderr"], run
        assert run["stdout_bytes"] > 0, run
    assert report["violations"] == []
    logs = {os.path.realpath(p) for p in tree.logs()}
    assert logs <= set(report["opened"]), "the audit hook did not see the .log files opened"


def test_audit_hook_catches_a_write(tmp_path):
    """The hook itself works: an append and a touch under the root are both reported, so an
    empty violation list above means something."""
    target = tmp_path / "00000000000000000000.log"
    target.write_bytes(b"")
    report = audited(tmp_path, [[CANARY, str(target)]])
    assert [v["event"] for v in report["violations"]] == ["open", "os.utime"]


def test_in_process_runs_leave_the_tree_alone(tree):
    """The same proof without the subprocess, so a failure shows the offending command."""
    before = fingerprint(tree.root)
    for argv in argument_sets(tree)[:4]:
        run_cli(argv)
        assert fingerprint(tree.root) == before, argv
