"""Every command × every kind of file × every hostile shape ends in bounded time with a finding
or a one-line error (exit 0, 1 or 2), never a hang, a traceback or an internal error.

Shapes a tree can hold under a name Kafka uses: a FIFO (opening one blocks until a writer
comes), a UNIX socket, a link to a device, a directory, a dangling link, a huge sparse file
(reading every zero page would take minutes), and a file cut mid-entry. Each command runs
in-process under two alarms, so a hang fails the test instead of the suite: one on the CPU time
it spends (a run that reads what it should not), one on the time it waits (a run blocked on a
FIFO or a device).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import socket
from pathlib import Path

import pytest

from segtools.cli.main import main
from tests.fixtures_manifest import FIXTURES

SOURCE = FIXTURES / "logdirs" / "sample"
PARTITION = "payments-compact-0"
#: The CPU seconds a command may spend: reading the 50 GiB of holes of a ``sparse`` file takes
#: far more, a command that seeks past them far less. CPU time, not the clock's: on a machine
#: loaded by other jobs a command that needs 3 s of CPU took over 20 s to run.
SECONDS = 20
#: The seconds a command may wait, blocked (a FIFO with no writer uses no CPU at all).
WAIT_SECONDS = 120

#: Where each kind of file lives, relative to the log dir.
KINDS = {
    "log": f"{PARTITION}/00000000000000000040.log",
    "index": f"{PARTITION}/00000000000000000025.index",
    "timeindex": f"{PARTITION}/00000000000000000025.timeindex",
    "txnindex": f"{PARTITION}/00000000000000000025.txnindex",
    "snapshot": f"{PARTITION}/00000000000000000040.snapshot",
    "leader-epoch-checkpoint": f"{PARTITION}/leader-epoch-checkpoint",
    "partition.metadata": f"{PARTITION}/partition.metadata",
    "meta.properties": "meta.properties",
    "replication-offset-checkpoint": "replication-offset-checkpoint",
}

COMMANDS = (["scan"], ["verify"], ["verify", "--deep"], ["retention", "--no-deep"],
            ["compaction"], ["transactions"], ["producers"], ["find", "--offset", "30"])
#: Shapes that leave a segment unreadable: every command reading the partition must say so
#: (nothing hidden), not only scan and verify.
UNREADABLE = ("fifo", "socket", "device", "dangling")


def _replace(path: Path, shape: str, sockets: list) -> None:
    """Put ``shape`` where ``path`` is (or would be)."""
    before = path.read_bytes() if path.is_file() and not path.is_symlink() else b"\x00\x01\x02"
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    if shape == "fifo":
        os.mkfifo(path)
    elif shape == "socket":
        s = socket.socket(socket.AF_UNIX)
        with contextlib.chdir(path.parent):  # AF_UNIX paths are limited to 108 bytes
            s.bind(path.name)
        sockets.append(s)
    elif shape == "device":
        path.symlink_to("/dev/zero")
    elif shape == "directory":
        path.mkdir()
    elif shape == "dangling":
        path.symlink_to(path.with_name("gone-for-good"))
    elif shape == "sparse":
        with open(path, "wb") as f:
            f.truncate(50 * 2**30)  # 50 GiB of holes
    elif shape == "partial":  # cut mid-entry (or mid-line)
        path.write_bytes(before[: max(1, len(before) - 3)])


@contextlib.contextmanager
def _deadline(cpu_seconds: float, wait_seconds: float):
    """A ``TimeoutError`` once the process has spent ``cpu_seconds`` of CPU time
    (``ITIMER_PROF``) or ``wait_seconds`` have passed (``ITIMER_REAL``), whichever is first."""
    def spent(signum, frame):
        raise TimeoutError(f"still running after {cpu_seconds} s of CPU time")

    def waited(signum, frame):
        raise TimeoutError(f"still running after {wait_seconds} s")

    old = signal.signal(signal.SIGPROF, spent), signal.signal(signal.SIGALRM, waited)
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    signal.setitimer(signal.ITIMER_REAL, wait_seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, old[1])
        signal.signal(signal.SIGPROF, old[0])


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err), \
            _deadline(SECONDS, WAIT_SECONDS):
        code = main(argv)
    return code, err.getvalue()


def _check(code: int, err: str, what: str) -> None:
    assert code in (0, 1, 2), what
    assert "Traceback" not in err and "internal error" not in err, f"{what}: {err}"
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("segtools: error: "), f"{what}: {err}"


def test_the_deadline_ends_a_run_that_spins_and_one_that_waits():
    """Both alarms fire: CPU spent in a loop, and a wait that spends none."""
    with pytest.raises(TimeoutError, match="of CPU time"), _deadline(0.3, 60):
        while True:
            pass
    with pytest.raises(TimeoutError, match=r"after 0\.3 s$"), _deadline(60, 0.3):
        signal.pause()


@pytest.mark.parametrize("shape", ["fifo", "socket", "device", "directory", "dangling",
                                   "sparse", "partial"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_command_on_a_hostile_file_ends_cleanly(tmp_path, kind, shape):
    if shape == "sparse" and kind not in ("log", "index", "timeindex", "txnindex", "snapshot"):
        pytest.skip("text files are capped before they are read")
    tree = tmp_path / "logs"
    shutil.copytree(SOURCE, tree, symlinks=True,
                    ignore=lambda d, names: [n for n in names if Path(d) == SOURCE and
                                             n != PARTITION and (SOURCE / n).is_dir()])
    target = tree / KINDS[kind]
    sockets: list = []
    try:
        _replace(target, shape, sockets)
        for argv in COMMANDS:
            code, err = _run([*argv, str(tree), "-q"] if argv[0] != "find" else
                             [*argv, str(tree / PARTITION)])
            _check(code, err, f"{argv} with {kind} as {shape}")
            if kind == "log" and shape in UNREADABLE and argv[0] != "find":
                assert code != 0, f"{argv} hid an unreadable {kind} ({shape})"
        code, err = _run(["dump", str(target)])
        _check(code, err, f"dump of {kind} as {shape}")
    finally:
        for s in sockets:
            s.close()
