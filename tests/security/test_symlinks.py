"""Nothing outside the tree (issue 41): a log dir's links are listed as findings and never
followed, so a link to a root-only file never yields its content, and the content a message
quotes is capped and escaped."""

from __future__ import annotations

import os
import shutil

import pytest

from segtools.errors import NotAKafkaFileError
from segtools.storage.files import open_regular
from segtools.storage.logdirs import load_log_dir
from segtools.storage.partition import load_partition_dir
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
    segment = FIXTURES / "logdirs" / "sample" / "orders.v2-eu-1" / "00000000000000000000.log"
    shutil.copy(segment, outside / "orders-9" / segment.name)
    tree = tmp_path / "logs"
    shutil.copytree(FIXTURES / "logdirs" / "sample", tree / "sample")
    sample = tree / "sample"
    (sample / "orders.v2-eu-1" / "leader-epoch-checkpoint").unlink()
    (sample / "orders.v2-eu-1" / "leader-epoch-checkpoint").symlink_to(secret)
    (sample / "orders.v2-eu-2" / "partition.metadata").unlink()
    (sample / "orders.v2-eu-2" / "partition.metadata").symlink_to(secret)
    (sample / "orders.v2-eu-3" / "99999999999999999999.log").symlink_to(secret)
    for companion in ("payments.txn-0/00000000000000000020.snapshot",
                      "payments.txn-0/00000000000000000020.txnindex",
                      "orders.v2-eu-4/00000000000000000000.index"):
        (sample / companion).unlink()
        (sample / companion).symlink_to(secret)
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
            ("symlink_not_followed", "orders.v2-eu-3/99999999999999999999.log"),
            ("symlink_not_followed", "payments.txn-0/00000000000000000020.snapshot"),
            ("symlink_not_followed", "payments.txn-0/00000000000000000020.txnindex"),
            ("symlink_not_followed", "orders.v2-eu-4/00000000000000000000.index")} <= codes
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


@pytest.mark.parametrize(("argv", "named"), [
    (["scan", "-q"], "orders-9"), (["verify", "-q", "--deep"], "orders-9"),
    (["find", "--offset", "0"], "orders-9"), (["retention", "-q"], "orders-9"),
    (["scan", "-q"], "orders-9/00000000000000000000.log"),
    (["dump", "--deep"], "orders-9/00000000000000000000.log"),
    (["dump"], "orders-9/leader-epoch-checkpoint"),
    (["report", "-q", "-o", "{out}"], "orders-9")])
def test_a_linked_partition_directory_named_directly_is_not_read(linked_tree, tmp_path,
                                                                  argv, named):
    """``sample/orders-9`` is a link out of the tree: naming it (or a file in it) on the
    command line reads nothing there (its checkpoint holds the secret, its segment records
    that would print as ``baseOffset``), and the error names the link."""
    out = tmp_path / "r.html"
    run = run_cli([a.format(out=out) for a in argv] + [str(linked_tree / "sample" / named)])
    shown = run.stdout + run.stderr.encode()
    assert b"PLANTED" not in shown and b"baseOffset" not in shown and b"notes.txt" not in shown
    assert run.code in (1, 2) and b"symbolic link" in shown, run.stderr
    assert not out.exists()


def test_a_partition_file_is_opened_beneath_a_directory_that_is_no_link(linked_tree):
    """The open itself refuses a linked partition directory (so a link swapped in after the
    listing is refused too); a linked log dir, the user's own, is followed."""
    with pytest.raises(NotAKafkaFileError, match="partition directory is a symbolic link"):
        open_regular(str(linked_tree / "sample" / "orders-9" / "00000000000000000000.log"))
    alias = linked_tree / "alias"
    alias.symlink_to(linked_tree / "sample")
    fd, _ = open_regular(str(alias / "orders.v2-eu-1" / "00000000000000000000.log"))
    os.close(fd)
    fd, _ = open_regular(str(alias / "meta.properties"))
    os.close(fd)
    run = run_cli(["scan", "-q", "--format", "jsonl", str(alias)])
    assert run.code in (0, 1) and b'"type":"segment"' in run.stdout


def test_a_partition_directory_swapped_for_a_link_during_the_open_is_refused(
        linked_tree, monkeypatch):
    """The directory is checked, then swapped for a link before the file is opened: the
    file opened is not the one in the directory checked, so it is refused."""
    pdir = linked_tree / "sample" / "orders.v2-eu-1"
    log = pdir / "00000000000000000000.log"
    real_open = os.open

    def swapping_open(path, flags, *args, **kwargs):
        if os.fspath(path) == str(log) and not pdir.is_symlink():
            pdir.rename(pdir.with_name("moved-1"))
            pdir.symlink_to(linked_tree.parent / "outside" / "orders-9")
            (linked_tree.parent / "outside" / "orders-9" / log.name).write_bytes(b"PLANTED")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", swapping_open)
    with pytest.raises(NotAKafkaFileError, match="partition directory is a symbolic link"):
        open_regular(str(log))


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


def test_a_linked_aiven_manifest_is_not_read(linked_tree, tmp_path):
    """A ``.rsm-manifest`` beside a segment makes ``dump`` read it as an Aiven object: linked
    to a root-only JSON file, it is refused, and what a real one quotes is capped."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"version": "PLANTED' + "x" * 100 + '", "chunkIndex": {}}')
    pdir = linked_tree / "sample" / "orders.v2-eu-4"
    manifest = pdir / "00000000000000000000.rsm-manifest"
    manifest.symlink_to(secret)
    run = run_cli(["dump", str(pdir / "00000000000000000000.log")])
    assert b"PLANTED" not in run.stdout and "PLANTED" not in run.stderr
    assert b"symbolic link" in run.stdout
    manifest.unlink()
    shutil.copy(secret, manifest)
    run = run_cli(["dump", str(pdir / "00000000000000000000.log")])
    assert b"'PLANTEDxxx" in run.stdout and b"x" * 40 not in run.stdout


def test_a_linked_partition_directory_is_not_listed(linked_tree):
    """What lists one partition directory (the metadata log's, ``_schemas``' beside the
    tree) does not list a linked one: the names of an outside directory stay out too."""
    pdir = load_partition_dir(linked_tree / "sample" / "orders-9")
    assert [f.code for f in pdir.findings] == ["symlink_not_followed"]
    assert not pdir.segments and "notes.txt" not in repr(pdir)
