"""One schema store named several times (``--schemas DIR --schemas DIR``, two spellings of
one path, a link to it, a log dir and its own ``_schemas`` partition) is one source: read,
said, listed and asked once, in the place of its first mention (it was listed once per
mention in the report's schemas section, its versions counted again, and ``dump``'s chain of
custody listed each file once per spelling)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import segtools
from segtools.payloads.sources import gather
from segtools.report.model import build
from segtools.text import shown_path
from tests.robustness.test_read_only import audited

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "fixtures" / "logdirs" / "payloads"
STORE = TREE / "_schemas-0"
SEGMENT = TREE / "orders-0" / "00000000000000000000.log"


def spellings(tmp_path: Path) -> list[str]:
    """The tree named five ways: as it is, with ``./`` and a trailing ``/``, through a link,
    and by its own ``_schemas`` partition."""
    link = tmp_path / "link"
    link.symlink_to(TREE)
    relative = os.path.relpath(TREE, ROOT)
    return [str(TREE), f"./{relative}/", str(link), str(STORE), str(TREE)]


def test_a_store_named_again_is_one_source_in_its_first_place(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    history = segtools.open(TREE).schema_history()
    for v in history:
        if v.schema_type == "AVRO":
            (files / f"{v.id}.avsc").write_text(v.schema)
    said: list[str] = []
    named = [str(files), *spellings(tmp_path), f"{files}/"]
    chain = gather([], [], schemas=named, say=said.append)
    assert [shown_path(str(s.source)) for s in chain.sources] == [
        shown_path(str(files)), shown_path(str(STORE))]
    assert said == [f"schemas: {len(chain.sources[0])} file(s) from {files}",
                    f"schemas: 7 version(s) from _schemas in {TREE}"]


def test_the_report_lists_a_store_named_twice_once(tmp_path):
    logs = segtools.open(TREE)
    model = build([str(TREE)], logs=logs,
                  decoder=logs.payload_decoder(schemas=spellings(tmp_path)))
    section = model.data["schemas"]
    assert section["sources"] == [{"where": shown_path(str(STORE)), "versions": 7}]
    assert section["versions"] == 7


def test_a_tree_named_again_through_a_link_reads_its_store_once(tmp_path):
    """The tree itself named twice (its path and a link to it, no ``--schemas``): the walk
    has two log dirs, and their one ``_schemas-0`` was read as two replicas, listed under
    both names with every config, mode and hard-delete record twice ("2 hard-deleted" of
    one, ``segtools schemas`` printing those lines twice)."""
    link = tmp_path / "link"
    link.symlink_to(TREE)
    logs = segtools.open(TREE, link)
    model = build([str(TREE), str(link)], logs=logs, decoder=logs.payload_decoder())
    section = model.data["schemas"]
    alone = build([str(TREE)], logs=segtools.open(TREE),
                  decoder=segtools.open(TREE).payload_decoder()).data["schemas"]
    assert len(section["sources"]) == 1 and "," not in section["sources"][0]["where"]
    assert (section["versions"], section["removed"]) == (alone["versions"], alone["removed"])
    said = [subprocess.run([sys.executable, "-m", "segtools.cli.main", "schemas", *paths],
                           capture_output=True, text=True, cwd=ROOT, check=True).stdout
            for paths in ([str(TREE)], [str(TREE), str(link)])]
    assert said[0] == said[1]


def test_custody_lists_each_file_of_a_store_named_twice_once(tmp_path):
    argv = [a for s in spellings(tmp_path) for a in ("--schemas", s)]
    done = subprocess.run(
        [sys.executable, "-m", "segtools.cli.main", "dump", "--decode", *argv, "--hashes",
         "--format", "jsonl", "-q", str(SEGMENT)],
        capture_output=True, text=True, cwd=ROOT, check=True)
    custody = [r["path"] for r in map(json.loads, done.stdout.splitlines())
               if r["type"] == "custody"]
    assert len({os.path.realpath(p) for p in custody}) == len(custody)
    assert any(p.startswith(str(STORE)) for p in custody)
    assert done.stderr.count("schemas: ") == 1


def others_touched(logs: Path, result: dict) -> list[str]:
    """The paths below a partition directory of ``logs`` other than ``_schemas-0`` that an
    audited run opened or listed (after checking that it did open the store's segment, so
    that the hook saw the reads at all)."""
    root = os.path.realpath(logs)
    touched = {os.path.relpath(p, root) for p in (*result["opened"], *result["listed"])}
    assert os.path.join("_schemas-0", "00000000000000000000.log") in touched
    return sorted(p for p in touched if p != "." and (logs / p.split(os.sep)[0]).is_dir()
                  and p.split(os.sep)[0] != "_schemas-0")


def test_a_store_named_by_its_log_dir_reads_only_its_schemas_partitions(tmp_path):
    """``--schemas LOGDIR`` needs the ``_schemas`` partitions of that log dir, not the others:
    it listed every partition directory and read each one's ``partition.metadata`` and
    ``leader-epoch-checkpoint`` (thousands of each in a broker's log dir). Seen by an audit
    hook on every path opened or listed under the named log dir, while ``dump`` decodes a
    segment from elsewhere with it."""
    logs = tmp_path / "logs"
    shutil.copytree(TREE, logs)
    result = audited(logs, [["dump", "--decode", "--schemas", str(logs), "--format", "jsonl",
                             "-q", str(SEGMENT)]])
    run, = result["runs"]
    assert run["code"] == 0 and run["stdout_bytes"] > 0, run
    assert others_touched(logs, result) == []


def test_the_schemas_command_reads_only_the_schemas_partitions(tmp_path):
    """``segtools schemas LOGDIR`` without ``--usage`` prints what ``_schemas`` holds: it
    listed every partition directory of the tree and read their small files too. Still
    every partition's name counts for ``--topic``, whose unmatched glob names the topics."""
    logs = tmp_path / "logs"
    shutil.copytree(TREE, logs)
    result = audited(logs, [["schemas", str(logs)], ["schemas", str(logs), "--topic", "orders"],
                            ["schemas", str(logs), "--topic", "nope"]])
    whole, orders, nope = result["runs"]
    assert whole["code"] == 0 and orders["code"] == 0 and whole["stdout_bytes"] > \
        orders["stdout_bytes"] > 0, result["runs"]
    assert nope["code"] == 2 and "(topics here: _schemas, customers, events, orders" \
        in nope["stderr"]
    assert others_touched(logs, result) == []
