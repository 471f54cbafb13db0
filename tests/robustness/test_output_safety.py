"""Output safety (issue 8 §5): producer bytes and directory names never drive the terminal, and
JSON output is valid UTF-8 JSON whatever the bytes.

A hostile partition is added to a copy of the fixtures: its topic name carries an escape
sequence, its keys, values, header keys and header values carry CSI/OSC sequences, C1 controls,
BEL, backspace and carriage return. Every argument set of every command then runs over it.
"""

from __future__ import annotations

import csv
import io
import json
import os

from segtools.storage.partition import parse_partition_dir_name
from tests.builders import make_batch
from tests.robustness.commands import SPARK, argument_sets, run_cli

EVIL = [b"\x1b[2J\x1b[H", b"\x1b]0;owned\x07", "\u009b31m".encode(), b"\x9b6n", b"a\rb\x08c",
        b"\x7f\x00\x05", "\u202eevil".encode()]
EVIL_TOPIC = "evil\x1b[31m.topic\x07"


def hostile_records() -> list[dict]:
    return [dict(timestamp_delta=i, offset_delta=i, key=k, value=b"v" + k,
                 headers=[(k, k), (b"ok", None)]) for i, k in enumerate(EVIL)]


def add_hostile_partition(sample, topic: str = EVIL_TOPIC) -> str:
    pdir = sample / f"{topic}-0"
    pdir.mkdir()
    data = make_batch(hostile_records(), base_offset=0, base_timestamp=1_700_000_000_000)
    (pdir / "00000000000000000000.log").write_bytes(data)
    ckpt = sample / "replication-offset-checkpoint"
    lines = ckpt.read_text().splitlines()
    lines = [lines[0], str(int(lines[1]) + 1), *lines[2:], f"{topic} 0 {len(EVIL)}"]
    ckpt.write_text("\n".join(lines) + "\n", errors="surrogateescape")
    return str(pdir)


def is_data_run(argv: list[str]) -> bool:
    """JSON and CSV are data formats: they must be faithful and parseable, not escaped (the
    Spark pseudo-command reports its row count as JSON)."""
    return argv[0] == SPARK or any(f in argv for f in ("jsonl", "json", "csv"))


def parse_data_output(argv: list[str], data: bytes) -> None:
    if "csv" in argv:
        csv.field_size_limit(1 << 30)  # a record of a MiB is one field (the large-values tree)
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
        assert rows and all(len(r) == len(rows[0]) for r in rows)
    else:
        parse_json_output(data)


def parse_json_output(data: bytes) -> None:
    text = data.decode("utf-8")  # strict: JSON output is UTF-8
    try:
        for line in text.splitlines():
            if line.strip():
                json.loads(line)
    except json.JSONDecodeError:
        json.loads(text)  # one multi-line document


def unsafe_characters(text: str) -> list[str]:
    return sorted({repr(c) for c in text
                   if (ord(c) < 32 and c not in "\n") or 0x7F <= ord(c) < 0xA0})


def unsafe_lines(argv: list[str], text: str) -> list[str]:
    """Lines carrying a control character; the ``dump`` file header is tested on its own
    (``test_dump_file_header_is_escaped``, a reported bug)."""
    return [line for line in text.splitlines() if unsafe_characters(line)
            and not (argv[0] == "dump" and line.startswith("Dumping "))]


def test_hostile_tree_is_what_the_test_thinks(tree):
    add_hostile_partition(tree.sample)
    name = parse_partition_dir_name(f"{EVIL_TOPIC}-0")
    assert name is not None and name.topic == EVIL_TOPIC


def test_text_output_escapes_control_characters_and_json_stays_valid(tree):
    add_hostile_partition(tree.sample)
    runs = [run_cli(argv) for argv in argument_sets(tree)]
    for r in runs:
        assert r.code in (0, 1), (r.argv, r.stderr)
        if is_data_run(r.argv):
            parse_data_output(r.argv, r.stdout)
        else:
            assert unsafe_lines(r.argv, r.stdout.decode("utf-8")) == [], r.argv[:4]
        assert unsafe_characters(r.stderr) == [], r.argv[:4]
    printed = b"".join(r.stdout for r in runs if "--print-data" in r.argv)
    assert b"\\x1b[2J" in printed  # the bytes are shown, escaped, not dropped


def test_dump_file_header_is_escaped(tree):
    pdir = add_hostile_partition(tree.sample)
    r = run_cli(["dump", os.path.join(pdir, "00000000000000000000.log")])
    assert unsafe_characters(r.stdout.decode("utf-8")) == []


def test_undecodable_directory_name_keeps_json_valid_utf8(tree):
    odd = os.fsdecode(b"bad\xff\xfename")
    add_hostile_partition(tree.sample, odd)
    for argv in (["scan", "-q", "--format", "jsonl", str(tree.sample)],
                 ["verify", "-q", "--format", "jsonl", str(tree.sample)],
                 ["scan", "-q", str(tree.sample)]):
        r = run_cli(argv)
        assert "internal error" not in r.stderr, (argv, r.stderr)
        if "jsonl" in argv:
            parse_json_output(r.stdout)
        else:
            r.stdout.decode("utf-8")
