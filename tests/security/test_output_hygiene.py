"""Output hygiene (issue 41): one escape for every terminal line, errors included; JSON
lines with C1, bidi and zero-width characters escaped; the report's mode from the umask; no
output file written inside a log dir."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile

import pytest

from segtools.cli import render
from segtools.text import INVISIBLE, terminal_safe
from tests.fixtures_manifest import FIXTURES
from tests.robustness.commands import run_cli

HOSTILE = "a\x1b]0;owned\x07b\u009b31m\u202eevil\u2066x\u2069\u200bz\u2028"


def test_jsonl_escapes_c1_bidi_and_zero_width_characters():
    line = render.dumps({"type": "record", "key": HOSTILE})
    assert json.loads(line) == {"type": "record", "key": HOSTILE}
    assert line.isascii() or all(ord(c) < 0x80 or ord(c) >= 0xA0 for c in line)
    assert not any(ord(c) in INVISIBLE or 0x80 <= ord(c) < 0xA0 or c in "\u2028\u2029"
                   for c in line)
    assert render.dumps({"name": "é Ω 漢"}) == '{"name":"é Ω 漢"}'  # other text stays as is


def test_text_marks_bidi_and_zero_width_characters():
    shown = terminal_safe(HOSTILE)
    assert shown.isprintable()
    assert "\\u202e" in shown and "\\u200b" in shown and "\\x1b" in shown


def test_every_character_terminal_safe_escapes_is_unprintable():
    """``terminal_safe`` passes printable text through untouched (its fast path), which is
    right only while every character it escapes, and every lone surrogate, is one
    ``str.isprintable`` refuses: checked over every code point."""
    from segtools.text import _CONTROL_ESCAPES, _no_surrogates

    for code in range(0x110000):
        c = chr(code)
        if c.isprintable():
            assert code not in _CONTROL_ESCAPES and _no_surrogates(c) == c, hex(code)
    assert terminal_safe("topic-1 \u00e9 \u2003") == "topic-1 \u00e9 \u2003"
    assert terminal_safe("a\u202eb\udcff") == "a\\u202eb\\xff"


def test_an_error_line_is_one_escaped_line(tmp_path):
    """A FIFO whose name carries an OSC sequence: the error names it, escaped."""
    fifo = tmp_path / "00000000000000000000\x1b]0;owned\x07\u202e.log"
    os.mkfifo(fifo)
    run = run_cli(["dump", str(fifo)])
    assert run.code == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("segtools: error: ")
    assert "\x1b" not in run.stderr and "\x07" not in run.stderr and "\u202e" not in run.stderr
    assert "\\x1b]0;owned\\x07\\u202e" in run.stderr


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o027])
def test_the_report_mode_follows_the_umask(tmp_path, umask):
    out = tmp_path / "r.html"
    old = os.umask(umask)
    try:
        run = run_cli(["report", "-q", "-o", str(out), str(FIXTURES / "logdirs" / "legacy")])
    finally:
        os.umask(old)
    assert run.code in (0, 1), run.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary file left


@pytest.mark.parametrize("argv", [
    ["retention", "-q", "--plot"], ["retention", "-q", "--recommend", "--plot"],
    ["producers", "-q", "--plot"]])
def test_no_plot_is_written_inside_a_log_dir(tmp_path, argv):
    pytest.importorskip("matplotlib")
    tree = tmp_path / "sample"
    shutil.copytree(FIXTURES / "logdirs" / "sample", tree)
    before = sorted(p.name for p in tree.rglob("*"))
    for target in (tree / "plot.png", tree / "orders.v2-eu-0" / "plot.png"):
        run = run_cli([*argv, str(target), str(tree)])
        assert run.code == 2 and "never writes under a log dir" in run.stderr, run.stderr
        assert not target.exists()
    assert sorted(p.name for p in tree.rglob("*")) == before
    run = run_cli([*argv, str(tmp_path / "plot.png"), str(tree)])
    assert run.code in (0, 1) and (tmp_path / "plot.png").exists()


def test_the_report_marks_invisible_characters(tmp_path):
    """A topic name and record bytes holding a bidi override and zero-width characters: the
    page holds none of them raw, nor as a JSON escape its script would turn back into one."""
    import re

    from tests.robustness.test_output_safety import add_hostile_partition

    tree = tmp_path / "sample"
    shutil.copytree(FIXTURES / "logdirs" / "sample", tree)
    add_hostile_partition(tree, topic="bidi\u202eevil\u200b.topic")
    out = tmp_path / "r.html"
    run = run_cli(["report", "-q", "-o", str(out), str(tree)])
    assert run.code in (0, 1), run.stderr
    page = out.read_text()
    assert not any(ord(c) in INVISIBLE for c in page)
    live = [m.group(0) for m in re.finditer(r"(?<!\\)(?:\\\\)*\\u(202[a-e]|200[b-f]|206[6-9])",
                                            page)]
    assert live == [], live[:5]
    assert "\\\\u202e" in page  # shown, as text


def test_notes_on_stderr_are_escaped_too(tmp_path):
    """The notes said before a run's answer name paths from the tree (a log dir of a bundle
    directory, an archive): a note is a terminal line like an error line."""
    hostile = "\x1b]0;owned\x07\u202e"
    logs = tmp_path / f"logs{hostile}"
    shutil.copytree(FIXTURES / "logdirs" / "legacy", logs)
    (logs / ".lock").touch()  # no broker holds it: the note that says so names the log dir
    bundle = tmp_path / f"b{hostile}.tgz"
    with tarfile.open(bundle, "w:gz") as tf:
        member = tarfile.TarInfo("logs/t-0/00000000000000000000.log")
        member.size = 10
        tf.addfile(member, io.BytesIO(bytes(10)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for path in (logs, bundle):
        run = subprocess.run([sys.executable, "-m", "segtools.cli.main", "scan", "-q",
                              str(path), "--storage-option", f"tmp_dir={tmp_path}"],
                             capture_output=True, text=True, env=env)
        assert "segtools: " in run.stderr and "\\x1b]0;owned\\x07\\u202e" in run.stderr
        assert "\x1b" not in run.stderr and "\u202e" not in run.stderr, run.stderr
