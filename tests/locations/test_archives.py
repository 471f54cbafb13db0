"""Support bundles read in place: bundles of the Kafka-written fixture trees give the answers
the trees give on disk; a three-broker bundle is three replicas; hostile archives end in
findings or one-line errors, and nothing is ever extracted where the archive says."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.robustness.commands import copy_fixture_trees, run_cli

#: Even seconds: what tar and zip can store exactly, so file times agree with the copy's.
STAMP = 1_700_000_000


def _tar(root: Path, out: Path, mode: str = "w", arcroot: str = ".") -> Path:
    with tarfile.open(out, mode) as tf:
        tf.add(root, arcname=arcroot)
    return out


def _zip(root: Path, out: Path, compression: int) -> Path:
    with zipfile.ZipFile(out, "w", compression) as zf:
        for p in sorted(root.rglob("*")):
            zf.write(p, p.relative_to(root).as_posix())
    return out


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> Path:
    root = copy_fixture_trees(tmp_path_factory.mktemp("bundles") / "trees").root
    for p in root.rglob("*"):
        os.utime(p, (STAMP, STAMP), follow_symlinks=False)
    return root


@pytest.fixture(scope="module")
def bundles(trees) -> dict[str, Path]:
    out = trees.parent
    return {
        "tar": _tar(trees, out / "trees.tar"),
        "tgz": _tar(trees, out / "trees.tgz", "w:gz"),
        "zip": _zip(trees, out / "trees.zip", zipfile.ZIP_DEFLATED),
        "zip-stored": _zip(trees, out / "trees-stored.zip", zipfile.ZIP_STORED),
    }


def _same(trees: Path, bundle: Path, argv: list[str]) -> None:
    local = run_cli([argv[0], str(trees), *argv[1:]])
    inside = run_cli([argv[0], str(bundle), *argv[1:]])
    assert inside.code == local.code, inside.stderr
    assert inside.stdout.decode().replace(str(bundle), str(trees)) == local.stdout.decode()


@pytest.mark.parametrize("kind", ["tar", "tgz", "zip", "zip-stored"])
def test_bundle_reads_as_the_trees(trees, bundles, kind):
    for argv in (["scan", "-q", "--crc", "--format", "jsonl"],
                 ["verify", "-q", "--deep", "--format", "jsonl"]):
        _same(trees, bundles[kind], argv)


def test_path_through_a_bundle_and_the_api(trees, bundles):
    import segtools
    part = "sample/orders.v2-eu-0"
    _same(trees / part, bundles["tgz"] / part, ["find", "--offset", "230", "--format", "json"])
    a = segtools.open(trees / "sample").to_arrow("records", include_headers=True).read_all()
    b = segtools.open(bundles["zip"] / "sample").to_arrow("records",
                                                          include_headers=True).read_all()
    assert b.num_rows == a.num_rows > 0
    for name in a.column_names:
        got = [v.replace(str(bundles["zip"]), str(trees)) if isinstance(v, str) else v
               for v in b.column(name).to_pylist()]
        assert got == a.column(name).to_pylist(), name


def test_three_broker_bundle_is_three_replicas(tmp_path):
    """kubectl-style bundle: <broker>/<log dir> for three brokers (the third a copy of the
    first): diverge reads three replicas and finds what it finds on disk."""
    replicas = Path(__file__).parents[2] / "fixtures" / "logdirs" / "replicas"
    local = tmp_path / "cluster"
    for n, src in ((1, "broker1"), (2, "broker2"), (3, "broker1")):
        import shutil
        shutil.copytree(replicas / src, local / f"broker-{n}" / "kafka-logs")
    for p in local.rglob("*"):
        os.utime(p, (STAMP, STAMP))
    bundle = _tar(local, tmp_path / "cluster.tar.gz", "w:gz")
    run = run_cli(["diverge", "--format", "json", str(bundle)])
    assert run.code == 1, run.stderr
    lines = [json.loads(line) for line in run.stdout.decode().splitlines()]
    assert [r["replica"] for r in lines if r["type"] == "replica"] == [
        f"broker-{n}/kafka-logs" for n in (1, 2, 3)]
    divergence = next(r for r in lines if r["type"] == "divergence")
    assert divergence["status"] == "diverged" and divergence["first_difference_offset"] == 40
    assert divergence["presumed_leader"] == "broker-2/kafka-logs"
    _same(local, bundle, ["diverge", "--format", "json"])
    for command in ("scan", "verify", "report"):
        argv = [command, "-q", str(bundle)]
        if command == "report":
            argv += ["-o", str(tmp_path / "cluster.html")]
        assert run_cli(argv).code in (0, 1)
    assert (tmp_path / "cluster.html").read_text().count("broker-2/kafka-logs") > 0


# ----------------------------------------------------------------------- hostile archives

def _member(tf: tarfile.TarFile, name: str, data: bytes = b"", **kw) -> None:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = STAMP
    for k, v in kw.items():
        setattr(ti, k, v)
    tf.addfile(ti, io.BytesIO(data) if data else None)


def test_links_and_escaping_names_are_refused(trees, tmp_path):
    bundle = tmp_path / "hostile.tar"
    with tarfile.open(bundle, "w") as tf:
        tf.add(trees / "sample", arcname="sample")
        _member(tf, "sample/orders.v2-eu-0/00000000000000009999.log", type=tarfile.SYMTYPE,
                linkname="/etc/passwd")
        _member(tf, "sample/hard", type=tarfile.LNKTYPE, linkname="sample/meta.properties")
        _member(tf, "../../escaped.log", b"x" * 10)
        _member(tf, "/etc/absolute.log", b"x" * 10)
        _member(tf, "sample/fifo", type=tarfile.FIFOTYPE)
    run = run_cli(["verify", "-q", "--format", "jsonl", str(bundle)])
    assert run.code == 1, run.stderr
    refused = [json.loads(line) for line in run.stdout.decode().splitlines()
               if '"archive_member_refused"' in line]
    assert len(refused) == 5
    assert not (tmp_path.parent / "escaped.log").exists()
    assert not Path("/etc/absolute.log").exists()
    plain = run_cli(["verify", "-q", "--format", "jsonl", str(trees / "sample")])
    assert plain.stdout.decode().count('"crc_mismatch"') == run.stdout.decode().count(
        '"crc_mismatch"') == 1


@pytest.mark.parametrize("kind", ["tar", "tgz", "zip"])
def test_truncated_or_corrupt_archive(bundles, tmp_path, kind):
    data = bundles[kind].read_bytes()
    for name, damaged in (("cut", data[: len(data) // 2]), ("garbage", os.urandom(4096))):
        bad = tmp_path / f"{name}.{'tar.gz' if kind == 'tgz' else kind}"
        bad.write_bytes(damaged)
        run = run_cli(["scan", "-q", "--format", "jsonl", str(bad)])
        assert "Traceback" not in run.stderr and "internal error" not in run.stderr
        if run.code == 2:
            lines = run.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"segtools: error: {bad}"), lines
        else:
            assert run.code == 1 and b'"archive_damaged"' in run.stdout, run.stderr


def test_zip_bomb_is_not_inflated(tmp_path):
    """A member declaring more than the temporary-space limit is listed as a finding and
    never inflated; one whose header lies about its size inflates only what it declares."""
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("logs/t-0/00000000000000000000.log", b"\0" * (64 << 20))
        zf.writestr("logs/t-0/00000000000000000000.index", b"")
    assert bomb.stat().st_size < 1 << 20
    run = run_cli(["scan", "-q", "--format", "jsonl", str(bomb),
                   "--storage-option", "tmp_limit=8388608"])
    assert b'"archive_member_too_large"' in run.stdout, run.stderr
    assert "Traceback" not in run.stderr


def test_tgz_past_the_temporary_limit_is_a_one_line_error(tmp_path):
    big = tmp_path / "big.tar.gz"
    with tarfile.open(big, "w:gz") as tf:
        _member(tf, "logs/t-0/00000000000000000000.log", b"\0" * (16 << 20))
    run = run_cli(["scan", str(big), "--storage-option", "tmp_limit=1048576"])
    lines = run.stderr.strip().splitlines()
    assert run.code == 2 and lines[-1].startswith(f"segtools: error: {big}: ")
    assert "limit of 1048576 bytes of temporary space" in lines[-1]


def test_temporary_space_is_said_and_removed(bundles):
    """A separate process: the note on stderr names the space, which is gone afterwards."""
    proc = subprocess.run([sys.executable, "-m", "segtools.cli.main", "scan", "-q",
                           str(bundles["tgz"])], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    note = next(line for line in proc.stderr.splitlines() if "temporary space in" in line)
    where = Path(note.split("temporary space in ")[1].split(" ")[0])
    assert where.name.startswith("segtools-archive-") and not where.exists()


def test_gzip_member_inflates_nothing_into_the_working_tree(bundles, tmp_path):
    before = set(Path.cwd().iterdir())
    run_cli(["scan", "-q", str(bundles["tgz"])])
    assert set(Path.cwd().iterdir()) == before


def test_hashes_of_members(trees, bundles):
    """--hashes inside a bundle: each member's SHA-256 is the file's, and the bundle itself
    is in the chain."""
    import hashlib
    run = run_cli(["scan", "-q", "--format", "jsonl", "--hashes", str(bundles["tgz"] / "sample")])
    custody = {r["path"]: r for r in map(json.loads, run.stdout.decode().splitlines())
               if r["type"] == "custody"}
    bundle = custody.pop(str(bundles["tgz"]))
    assert bundle["sha256"] == hashlib.sha256(bundles["tgz"].read_bytes()).hexdigest()
    assert len(custody) > 20
    for path, r in custody.items():
        local = Path(path.replace(str(bundles["tgz"]), str(trees / ".")))
        assert r["location"] == "archive" and not r["changed"]
        assert r["size"] == local.stat().st_size and r["mtime_ms"] == STAMP * 1000
        assert r["sha256"] == hashlib.sha256(local.read_bytes()).hexdigest()


def test_a_linked_partition_weighs_the_same_on_disk_and_in_a_tar(trees, tmp_path):
    """A symlinked partition directory is not read on disk (``symlink_not_followed``) nor in a
    bundle (``archive_member_refused``): data is missing from the answer either way, so both
    are errors and ``verify`` exits alike (the tar's was a warning, exit 0 where disk gave 1)."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    (logdir / "meta.properties").write_bytes((trees / "sample" / "meta.properties").read_bytes())
    shutil.copytree(trees / "sample" / "orders.v2-eu-1", logdir / "orders.v2-eu-1")
    (logdir / "orders-0").symlink_to(trees / "sample" / "orders.v2-eu-0")
    bundle = tmp_path / "linked.tar"
    with tarfile.open(bundle, "w") as tf:
        tf.add(logdir, arcname="logdir")  # tarfile keeps the link as a link member
    runs = {where: run_cli(["verify", "-q", "--format", "jsonl", str(path)])
            for where, path in (("disk", logdir), ("tar", bundle))}
    severity = {}
    for where, run in runs.items():
        found = [json.loads(line) for line in run.stdout.decode().splitlines()
                 if '"finding"' in line]
        linked = [f for f in found if f.get("code") in ("symlink_not_followed",
                                                         "archive_member_refused")]
        assert linked, (where, run.stdout, run.stderr)
        severity[where] = {f["severity"] for f in linked}
    assert severity["disk"] == severity["tar"] == {"error"}, severity
    assert runs["disk"].code == runs["tar"].code == 1, {w: r.code for w, r in runs.items()}
