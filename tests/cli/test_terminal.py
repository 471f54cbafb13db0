"""Text output on an 80-column terminal and in a pipe (docs/cli.md, "Text tables").

The terminal is a real pseudo-terminal (``pty``), so the commands decide by themselves that
they print to one; ``COLUMNS`` gives its width, as a shell does. On the terminal every line
fits and every column's content is still there (no ``…``, no dropped verdict, size or
reason); in a pipe every row is one line that names its partition, with the header once.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures_manifest import FIXTURES, SAMPLE

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
AT = "2023-11-22T03:00:00Z"  # between the sample's eligibility times: both verdicts occur


def on_terminal(*args: str, columns: int = 80) -> str:
    """Run ``segtools ARGS`` with stdout on a pseudo-terminal ``columns`` wide."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([SEGTOOLS, *args], stdout=slave, stderr=subprocess.DEVNULL,
                            env={**os.environ, "COLUMNS": str(columns), "TERM": "dumb"})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.wait(timeout=120)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def in_pipe(*args: str) -> str:
    return subprocess.run([SEGTOOLS, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "80"}).stdout


def assert_fits(text: str, columns: int = 80) -> None:
    assert text.strip()
    long = [line for line in text.splitlines() if len(line) > columns]
    assert not long, long[:3]
    assert "…" not in text


# --------------------------------------------------------------------------- scan


def test_scan_at_80_columns_keeps_every_cell():
    text = on_terminal("scan", "-q", str(SAMPLE))
    assert_fits(text)
    piped = in_pipe("scan", "-q", str(SAMPLE))
    rows = [line.split() for line in piped.splitlines()[1:] if line.startswith(
        ("orders", "payments", "big", "edge", "torn", "corrupt"))]
    assert len(rows) == 23
    words = text.split()
    for row in rows:  # every cell of every pipe row is somewhere on the terminal
        for cell in row:
            assert cell in words, cell
    # full partition names: the five orders.v2-eu partitions are told apart
    assert {f"orders.v2-eu-{p}" for p in range(5)} <= set(words)
    assert "max timestamp (UTC)" in text or "max timestamp" in text


def test_scan_in_a_pipe_is_one_line_per_segment():
    piped = in_pipe("scan", "-q", str(SAMPLE))
    lines = piped.splitlines()
    assert lines[0].split()[:3] == ["partition", "base", "offset"]
    segment_lines = [line for line in lines if re.match(r"\S+\s+\d+\s+(\d+|-)\s+\d", line)]
    assert len(segment_lines) == 23
    assert "23 segment(s)" in lines
    # grep-able: a partition's rows are found by its name, each whole
    mine = [line for line in lines if line.startswith("payments-compact-0 ")]
    assert len(mine) == 5 and all("timeindex" in m or "mtime" in m for m in mine)


# --------------------------------------------------------------------------- retention


def test_retention_at_80_columns_keeps_verdict_size_and_reason():
    text = on_terminal("retention", "-q", "--at", AT, str(SAMPLE))
    assert_fits(text)
    assert "DELETE" in text and "keep" in text
    assert "retention_ms_breached" in text and "within_retention_ms" in text
    # the sizes and the reason text are whole (wrapped words, not cut ones)
    piped = in_pipe("retention", "-q", "--at", AT, str(SAMPLE))
    sizes = set(re.findall(r"\d+(?:\.\d)? (?:B|KiB|MiB)", piped))
    for size in sizes:
        assert size.split()[0] in text.split()
    assert not [line for line in text.splitlines() if line.strip() == "…"]


def test_retention_in_a_pipe_is_one_line_per_segment():
    piped = in_pipe("retention", "-q", "--at", AT, str(SAMPLE))
    rows = [line for line in piped.splitlines() if re.search(r"  (DELETE|keep)  ", line)]
    assert len(rows) == 22  # the live partitions' segments (-delete skipped)
    for row in rows:  # each row is whole: partition, segment, size, verdict and reason
        assert re.match(r"\S+-\d+\s+@\d+\.\.", row), row
        assert re.search(r"  \w+: \S", re.split(r"  (?:DELETE|keep)  ", row)[-1]), row
    deleted = [r for r in rows if "  DELETE  " in r]
    assert deleted and all("retention_ms_breached" in r for r in deleted)


def test_retention_says_once_that_now_is_the_clock():
    without = in_pipe("retention", "-q", str(SAMPLE / "orders.v2-eu-1"))
    assert without.count("this machine's clock") == 1
    assert "--at" in without.split("\n\n")[0]  # up front, with how to pick a moment
    with_at = in_pipe("retention", "-q", "--at", AT, str(SAMPLE / "orders.v2-eu-1"))
    assert "clock" not in with_at


# --------------------------------------------------------------------------- verify


@pytest.mark.parametrize("tree", [SAMPLE, FIXTURES / "logdirs" / "legacy"])
def test_verify_at_80_columns_and_in_a_pipe(tree):
    text = on_terminal("verify", "-q", str(tree))
    assert_fits(text)
    piped = in_pipe("verify", "-q", str(tree))
    findings = [line for line in piped.splitlines()
                if line.startswith(("ERROR", "WARNING", "INFO"))]
    assert findings and len(findings) == len(piped.splitlines()) - 1  # + the summary line
    joined = "".join(text.split())
    for line in findings:  # every finding's characters are on the terminal, in order
        assert "".join(line.split()) in joined


# --------------------------------------------------------------------------- every command

LOGDIRS = FIXTURES / "logdirs"
#: Every command that prints text, on an input where it has a table or long lines to print.
TEXT_COMMANDS = {
    "scan": ("scan", "-q", str(SAMPLE)),
    "verify": ("verify", "-q", str(SAMPLE)),
    "retention": ("retention", "-q", "--at", AT, str(SAMPLE)),
    "compaction": ("compaction", "-q", "--at", AT, str(SAMPLE / "payments-compact-0")),
    "compaction --key": ("compaction", "-q", "--at", AT, "--key", "k11",
                         str(SAMPLE / "payments-compact-0")),
    "tiered": ("tiered", "-q", "--at", "2024-06-01T12:00:00Z", str(LOGDIRS / "tiered")),
    "tiered --remote-store": ("tiered", "-q", "--at", "2024-06-01T12:00:00Z",
                              str(LOGDIRS / "tiered"), "--remote-store",
                              str(FIXTURES / "remote" / "tiered")),
    "transactions": ("transactions", "-q", "--at", AT, str(LOGDIRS / "forensics")),
    "producers": ("producers", "-q", str(LOGDIRS / "producers")),
    "find": ("find", "--offset", "5", str(SAMPLE / "orders.v2-eu-1")),
    "diverge": ("diverge", str(LOGDIRS / "replicas")),
    "offsets": ("offsets", str(LOGDIRS / "forensics")),
    "metadata": ("metadata", str(LOGDIRS / "forensics")),
}


@pytest.mark.parametrize("name", sorted(TEXT_COMMANDS))
def test_every_text_command_at_80_columns_and_in_a_pipe(name):
    """The table rules hold for every command: on an 80-column terminal every line fits and
    nothing is cut to ``…``; in a pipe the output does not depend on any width (no fixed
    width, no wrapped cells, no cut reason codes), and nothing is cut either."""
    args = TEXT_COMMANDS[name]
    assert_fits(on_terminal(*args))
    narrow = in_pipe(*args)
    wide = subprocess.run([SEGTOOLS, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "300"}).stdout
    assert narrow.strip() and narrow == wide
    assert "…" not in narrow
    if name.startswith("tiered"):  # a remote segment is one line, its reason code whole
        rows = [line for line in narrow.splitlines() if re.match(r"\d+\.\.\d+  ", line)]
        assert rows and all(re.search(r"(keep|DELETE) remote_[a-z_]+(  |$)|  -(  |$)", r)
                            for r in rows), rows
