"""Nothing outside the tree (issue 41): a log dir's links are listed as findings and never
followed, so a link to a root-only file never yields its content, and the content a message
quotes is capped and escaped."""

from __future__ import annotations

import shutil

import pytest

from segtools.errors import NotAKafkaFileError
from segtools.storage.files import open_regular
from segtools.storage.logdirs import load_log_dir
from segtools.text import QUOTE_CHARS, quoted
from tests.fixtures_manifest import FIXTURES
from tests.robustness.commands import run_cli

SHADOW = "root:$6$PLANTEDshadowHASH9$abcdefghijklmnopqrstuvwxyz0123456789:19000:0:99999:7:::"


@pytest.fixture
def linked_tree(tmp_path):
    """A copy of the sample log dir whose kafka account planted links: a checkpoint and a
    segment pointing at a 'root-only' file, a partition directory and a log-dir root file
    pointing outside the tree."""
    secret = tmp_path / "shadow"
    secret.write_text(SHADOW + "\n")
    outside = tmp_path / "outside"
    (outside / "orders-9").mkdir(parents=True)
    (outside / "orders-9" / "notes.txt").write_text(SHADOW)
    (outside / "orders-9" / "leader-epoch-checkpoint").write_text(SHADOW)
    tree = tmp_path / "logs"
    shutil.copytree(FIXTURES / "logdirs" / "sample", tree / "sample")
    sample = tree / "sample"
    (sample / "orders.v2-eu-1" / "leader-epoch-checkpoint").unlink()
    (sample / "orders.v2-eu-1" / "leader-epoch-checkpoint").symlink_to(secret)
    (sample / "orders.v2-eu-2" / "partition.metadata").unlink()
    (sample / "orders.v2-eu-2" / "partition.metadata").symlink_to(secret)
    (sample / "orders.v2-eu-3" / "99999999999999999999.log").symlink_to(secret)
    (sample / "orders-9").symlink_to(outside / "orders-9")
    (sample / "cleaner-offset-checkpoint").unlink()
    (sample / "cleaner-offset-checkpoint").symlink_to(secret)
    return tree


def test_the_listing_reports_each_link_and_follows_none(linked_tree):
    sample = linked_tree / "sample"
    log_dir = load_log_dir(sample)
    codes = {(f.code, f.path.rsplit("/", 2)[-2] + "/" + f.path.rsplit("/", 1)[-1])
             for f in log_dir.findings}
    codes |= {(f.code, f.path.rsplit("/", 2)[-2] + "/" + f.path.rsplit("/", 1)[-1])
              for p in log_dir.partitions for f in p.findings}
    assert {("symlink_not_followed", "sample/orders-9"),
            ("symlink_not_followed", "sample/cleaner-offset-checkpoint"),
            ("symlink_not_followed", "orders.v2-eu-1/leader-epoch-checkpoint"),
            ("symlink_not_followed", "orders.v2-eu-2/partition.metadata"),
            ("symlink_not_followed", "orders.v2-eu-3/99999999999999999999.log")} <= codes
    assert all(p.path.name != "orders-9" for p in log_dir.partitions)
    assert "PLANTED" not in repr(log_dir)


@pytest.mark.parametrize("argv", [["scan", "-q"], ["verify", "-q", "--deep"],
                                  ["verify", "-q", "--format", "jsonl"],
                                  ["retention", "-q"], ["compaction", "-q"],
                                  ["producers", "-q"], ["transactions"]])
def test_no_command_yields_the_content_of_a_linked_file(linked_tree, argv):
    run = run_cli([*argv, str(linked_tree / "sample")])
    assert run.code in (0, 1), run.stderr
    assert b"PLANTED" not in run.stdout and "PLANTED" not in run.stderr
    if argv[0] in ("scan", "verify"):  # the commands that list the tree's findings
        assert b"symlink_not_followed" in run.stdout


def test_nor_does_the_report(linked_tree, tmp_path):
    out = tmp_path / "report.html"
    run = run_cli(["report", "-q", "-o", str(out), str(linked_tree / "sample")])
    assert run.code in (0, 1), run.stderr
    page = out.read_bytes()
    assert b"PLANTED" not in page and b"symlink_not_followed" in page


def test_a_link_named_directly_is_refused_too(linked_tree):
    link = linked_tree / "sample" / "orders.v2-eu-3" / "99999999999999999999.log"
    with pytest.raises(NotAKafkaFileError, match="symbolic link"):
        open_regular(str(link))
    run = run_cli(["dump", str(link)])
    assert run.code == 2 and "symbolic link" in run.stderr and "PLANTED" not in run.stderr


def test_quoted_file_content_is_capped_and_escaped():
    assert quoted(SHADOW).startswith(repr(SHADOW[:QUOTE_CHARS]))
    assert SHADOW[QUOTE_CHARS:] not in quoted(SHADOW)
    assert quoted("a\x1b]0;x\x07\u202eb") == repr("a\x1b]0;x\x07\u202eb")
    assert "\x1b" not in quoted("\x1b" * 100) and "\u202e" not in quoted("\u202e")


def test_a_damaged_checkpoint_is_quoted_short(tmp_path):
    """A real (not linked) checkpoint holding a secret line: the finding shows its start."""
    shutil.copytree(FIXTURES / "logdirs" / "sample", tmp_path / "sample")
    (tmp_path / "sample" / "orders.v2-eu-1" / "leader-epoch-checkpoint").write_text(SHADOW)
    run = run_cli(["verify", "-q", str(tmp_path / "sample")])
    assert b"root:$6$PLANTED" in run.stdout
    assert SHADOW[QUOTE_CHARS:].encode() not in run.stdout
