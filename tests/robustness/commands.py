"""Every CLI command, with the argument sets the read-only, live-broker and output-safety tests
run it with.

Commands are discovered from the parser ``segtools.cli.main`` builds (so from ``COMMANDS``),
not listed by hand: a new command with no entry in :data:`ARGUMENT_SETS` fails
``test_every_command_has_an_argument_set`` until someone says how to run it here. That is the
point: a command cannot reach users without being proven read-only and crash-free on
hostile and live trees.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.fixtures_manifest import FIXTURES

LOGDIRS = FIXTURES / "logdirs"


def command_names() -> list[str]:
    """The subcommands ``segtools --help`` lists, in its order."""
    from segtools.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


@dataclass(frozen=True)
class Tree:
    """A copy of the fixture trees: ``root`` holds one directory per fixture log dir."""

    root: Path

    @property
    def sample(self) -> Path:
        return self.root / "sample"

    @property
    def legacy(self) -> Path:
        return self.root / "legacy"

    def files(self, *patterns: str) -> list[str]:
        return sorted(str(p) for pattern in patterns for p in self.root.rglob(pattern)
                      if p.is_file())

    def logs(self) -> list[str]:
        return self.files("*.log", "*.log.deleted")


def copy_fixture_trees(dest: Path) -> Tree:
    """Copy every fixture log dir (whatever trees exist today) under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for tree in sorted(LOGDIRS.iterdir()):
        if tree.is_dir():
            shutil.copytree(tree, dest / tree.name, symlinks=True)
    return Tree(dest)


ArgSets = Callable[[Tree], list[list[str]]]

#: How each command is run over a tree. Each argv must be a normal use that exits 0 or 1 on
#: the fixtures: a usage error (2) would prove nothing about the command's reading.
ARGUMENT_SETS: dict[str, ArgSets] = {
    "dump": lambda t: [
        ["dump", *t.logs()],
        ["dump", "--deep", "--decode", "auto", "--format", "jsonl", *t.logs()],
        ["dump", "--decode", *t.logs()],
        ["dump", "--deep", "--print-data", "--format", "jsonl", *t.logs()],
        ["dump", "--deep", "--print-data", *t.logs()],
        ["dump", "--deep", "--print-data", "--bytes", "hex", *t.files("*.log")[:12]],
        ["dump", *t.files("*.index", "*.timeindex", "*.txnindex", "*.snapshot",
                          "*checkpoint", "partition.metadata", "meta.properties")],
        ["dump", "--verify-index", "--index-sanity-check", "--format", "jsonl",
         *t.files("*.index", "*.timeindex")],
        ["dump", "--deep", "--start-offset", "3", "--end-offset", "300", "--format", "jsonl",
         *t.files("*.log")[:12]],
    ],
    "scan": lambda t: [
        ["scan", "-q", str(t.root)],
        ["scan", "-q", "--crc", "--format", "jsonl", str(t.root)],
        ["scan", "-q", "--format", "csv", str(t.sample), str(t.legacy)],
    ],
    "verify": lambda t: [
        ["verify", "-q", str(t.root)],
        ["verify", "-q", "--decode", "--format", "jsonl", str(t.root)],
        ["verify", "-q", "--deep", "--salvage", "--format", "jsonl", str(t.root)],
    ],
    "find": lambda t: [
        ["find", str(t.sample / "orders.v2-eu-0"), "--offset", "230"],
        ["find", str(t.sample), "--timestamp", "0", "--format", "json"],
        ["find", str(t.legacy), "--offset", "5"],
    ],
    "retention": lambda t: [
        ["retention", "-q", str(t.sample)],
        ["retention", "-q", "--format", "json", "--forecast", "7", str(t.sample),
         str(t.legacy)],
    ],
    "compaction": lambda t: [
        ["compaction", "-q", str(t.sample)],
        ["compaction", "-q", "--format", "json", str(t.sample / "payments-compact-0")],
    ],
    "metadata": lambda t: [
        ["metadata", str(t.root / "forensics" / "__cluster_metadata-0")],
        ["metadata", "--records", "--include-noop", "--format", "json",
         str(t.root / "forensics")],
    ],
    "offsets": lambda t: [
        ["offsets", str(t.root / "forensics")],
        ["offsets", "--history", "--format", "json", str(t.root)],
    ],
    "transactions": lambda t: [
        ["transactions", str(t.root)],
        ["transactions", "--format", "json", str(t.sample), str(t.root / "forensics")],
    ],
    "diverge": lambda t: [
        ["diverge", str(t.root / "replicas")],
        ["diverge", "--format", "json", *(str(p) for p in sorted(
            (t.root / "replicas").glob("*/orders.v2-eu-9")))],
    ],
    "producers": lambda t: [
        ["producers", "-q", str(t.root)],
        ["producers", "-q", "--format", "jsonl", "--duplicates", str(t.sample)],
    ],
    "schemas": lambda t: [
        ["schemas", "--usage", str(t.root)],
        ["schemas", "--format", "jsonl", "--usage", str(t.root / "payloads")],
    ],
    "query": lambda t: [
        ["query", str(t.root), "-c", "select topic, count(*), sum(octet_length(value)) "
         "from records group by topic"],
        ["query", str(t.root), "--format", "jsonl", "-c",
         "select * from records where partition = 0 and \"offset\" >= 2 "
         "order by log_dir, topic, \"offset\""],
        ["query", str(t.root), "--decode", "auto", "--format", "csv", "-c",
         "select * from records"],
        ["query", str(t.root), "-c", "select * from findings f join segments s "
         "on f.path = s.path"],
        ["query", str(t.root), "--format", "jsonl", "-c",
         "select (select count(*) from retention), (select count(*) from producers), "
         "(select count(*) from transactions), (select count(*) from offsets), "
         "(select count(*) from schemas), (select count(*) from batches)"],
    ],
    "tiered": lambda t: [
        ["tiered", "-q", str(t.root)],
        ["tiered", "-q", "--format", "json", str(t.root / "tiered"),
         str(t.root / "tiered-hostile")],
    ],
    # the report is written beside the copied trees, never under a log dir
    "report": lambda t: [
        ["report", "-q", "-o", str(t.root.parent / "report.html"), str(t.root)],
        ["report", "-q", "-o", str(t.root.parent / "redacted.html"), "--redact",
         "keys,values,headers,topics", str(t.sample), str(t.root / "forensics")],
    ],
}


#: The Spark source as a pseudo-command: ``[SPARK, json options]`` runs the reader the way a
#: driver plans and executors read (``tests/spark/inprocess.py``, no JVM needed).
SPARK = "spark:kafkalog"


def spark_reads(t: Tree) -> list[list[str]]:
    every_state = {"partitionStates": "live,delete,future,stray"}
    return [[SPARK, json.dumps({"path": str(t.root), "includeHeaders": "true",
                                "includeControl": "true", **every_state})],
            [SPARK, json.dumps({"path": str(t.root), "level": "batches", **every_state})],
            [SPARK, json.dumps({"path": str(t.sample), "level": "segments"})]]


def spark_available() -> bool:
    try:
        import pyspark_kafkalog  # noqa: F401

        import tests.spark.inprocess  # noqa: F401
    except ImportError:
        return False
    return True


def argument_sets(tree: Tree) -> list[list[str]]:
    """Every argv of every registered command that exists in this build, and the Spark
    source's reads when it is installed."""
    argvs = [argv for name in command_names() if name in ARGUMENT_SETS
             for argv in ARGUMENT_SETS[name](tree)]
    return argvs + (spark_reads(tree) if spark_available() else [])


def run_spark(options: dict) -> tuple[int, bytes, str]:
    """One Spark read in-process: exit 0 with the row count, or 2 with the one-line error a
    SegtoolsError (or a bad option) gives; anything else is an internal error."""
    from pyspark_kafkalog.options import OptionError

    from segtools.errors import SegtoolsError
    from tests.spark.inprocess import read

    try:
        table = read(options)
    except (SegtoolsError, OptionError) as e:
        where = f"{e.path}: " if getattr(e, "path", None) else ""
        return 2, b"", f"segtools: error: {where}{e}\n"
    except Exception as e:  # the contract is broken: show what broke it
        return 2, b"", f"internal error ({type(e).__name__}: {e})\n"
    return 0, json.dumps({"rows": table.num_rows}).encode(), ""


@dataclass(frozen=True)
class Run:
    argv: list[str]
    code: int
    stdout: bytes
    stderr: str


def run_cli(argv: list[str]) -> Run:
    """``segtools ARGV`` in this process (or a Spark read, for :data:`SPARK`), stdout
    captured as bytes (strict UTF-8, as a pipe under a UTF-8 locale takes it), stderr as
    text."""
    from segtools.cli.main import main

    if argv[0] == SPARK:
        code, stdout, stderr = run_spark(json.loads(argv[1]))
        return Run(argv, code, stdout, stderr)
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse usage errors
            code = e.code if isinstance(e.code, int) else 2
        out.flush()
    return Run(argv, code, raw.getvalue(), err.getvalue())
