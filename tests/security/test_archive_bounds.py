"""Bounded archives (issue 41): hostile headers and member counts stay small in memory, the
temporary space has no name a killed run could leave behind, and odd but harmless archives
(impossible dates, members written by ``zipfile.writestr``) are read, not refused."""

from __future__ import annotations

import io
import os
import signal
import struct
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from segtools.storage import archive
from tests.fixtures_manifest import FIXTURES
from tests.robustness.commands import run_cli

MIB = 1024 * 1024
RSS_BOUND = 256 * MIB
SEGMENT = FIXTURES / "logdirs" / "sample" / "orders.v2-eu-0" / "00000000000000000000.log"


# The child is started by a small Python process, whose children's peak RSS it reports: a
# child forked (or vforked) straight from pytest would carry pytest's own peak into its
# ru_maxrss (Linux keeps the larger of the two across exec), a few hundred MiB late in a run.
_MEASURE = ("import resource, subprocess, sys; "
            "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
            "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def _run_measured(argv: list[str], **kwargs) -> tuple[int, int, str]:
    """``segtools ARGV`` in a grandchild process: exit code, peak RSS in bytes, stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m",
                           "segtools.cli.main", *argv], capture_output=True, text=True,
                          env=env, **kwargs)
    code, kib = proc.stdout.split()
    return int(code), int(kib) * 1024, proc.stderr


def _gz_tar_with(member: tarfile.TarInfo, data: bytes | None, path: Path) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(member, io.BytesIO(data) if data is not None else None)
    return path


def test_a_huge_pax_header_is_refused_before_it_is_read(tmp_path):
    """A 256 MiB pax header in a .tgz of a few hundred KB (a 2 GiB one is the same class;
    this keeps the test's temporary space small): not read into memory."""
    bomb = tmp_path / "pax.tgz"
    header = tarfile.TarInfo("PaxHeaders/x")
    header.type = tarfile.XHDTYPE
    header.size = 256 * MIB
    with tarfile.open(bomb, "w:gz") as tf:
        tf.fileobj.write(header.tobuf(format=tarfile.USTAR_FORMAT))
        zeros = b"\0" * MIB
        for _ in range(256):
            tf.fileobj.write(zeros)
        tf.offset += 512 + 256 * MIB
    assert bomb.stat().st_size < 2 * MIB
    code, rss, err = _run_measured(["scan", "-q", str(bomb), "--storage-option",
                                    f"tmp_dir={tmp_path}"])
    assert code in (1, 2) and "Traceback" not in err and "internal error" not in err, err
    assert rss < RSS_BOUND, rss


def test_many_members_are_capped(tmp_path):
    """200,000 empty members: listed up to the cap, within the memory bound."""
    many = tmp_path / "many.tgz"
    with tarfile.open(many, "w:gz", format=tarfile.GNU_FORMAT) as tf:
        for i in range(200_000):
            tf.addfile(tarfile.TarInfo(f"d/{i}"))
    _, rss, err = _run_measured(["scan", "-q", "--format", "jsonl", str(many),
                                    "--storage-option", f"tmp_dir={tmp_path}",
                                    "--storage-option", "max_members=50000"])
    assert "Traceback" not in err and "internal error" not in err, err
    assert rss < RSS_BOUND, rss
    run = run_cli(["scan", "-q", "--format", "jsonl", str(many), "--storage-option",
                   "max_members=1000"])
    assert b"more than 1000 members" in run.stdout


def _bomb(path: Path, size: int) -> Path:
    """A .tgz whose one member inflates to ``size`` zero bytes."""
    with tarfile.open(path, "w:gz", compresslevel=9) as tf:
        ti = tarfile.TarInfo("logs/t-0/00000000000000000000.log")
        ti.size = size
        tf.addfile(ti, _Zeros(size))
    return path


class _Zeros(io.RawIOBase):
    def __init__(self, n: int):
        self.left = n

    def readinto(self, b) -> int:
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n

    def readable(self) -> bool:
        return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT,
                                 signal.SIGKILL])
def test_nothing_is_left_behind_when_killed(tmp_path, sig):
    bomb = _bomb(tmp_path / "bomb.tgz", 2048 * MIB)
    space = tmp_path / "space"
    space.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "segtools.cli.main", "scan", "-q",
                             str(bomb), "--storage-option", f"tmp_dir={space}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    note = proc.stderr.readline().decode()
    assert "temporary space in" in note, note
    time.sleep(0.5)  # inflating
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    left = [p for p in space.rglob("*") if p.is_file()]
    assert left == [], left
    dirs = list(space.iterdir())
    if sig == signal.SIGKILL:  # only an empty directory may stay: the next run removes it
        assert all(not any(d.iterdir()) for d in dirs)
        for d in dirs:
            os.utime(d, (time.time() - 2 * archive.STALE_AFTER_S,) * 2)
        run_cli(["scan", "-q", str(_bomb(tmp_path / "small.tgz", MIB)), "--storage-option",
                 f"tmp_dir={space}"])
    assert all(not d.exists() for d in dirs)


def test_temporary_space_is_private(tmp_path):
    bomb = _bomb(tmp_path / "b.tgz", MIB)
    loc = archive.ArchiveLocation(str(bomb), {"tmp_dir": str(tmp_path / "t")}) \
        if (tmp_path / "t").mkdir() is None else None
    try:
        assert loc._tmp is not None and (loc._tmp.stat().st_mode & 0o777) == 0o700
        assert list(loc._tmp.iterdir()) == []  # the inflated .tar has no name
        fd = loc._fds[loc._stream]
        assert os.fstat(fd).st_mode & 0o777 == 0o600 and os.fstat(fd).st_nlink == 0
    finally:
        loc.close()


def test_free_space_is_checked(tmp_path, monkeypatch):
    bomb = _bomb(tmp_path / "b.tgz", 8 * MIB)
    real = archive.shutil.disk_usage

    def nearly_full(path):
        usage = real(path)
        return usage._replace(free=archive.FREE_MARGIN + 4 * MIB)

    monkeypatch.setattr(archive.shutil, "disk_usage", nearly_full)
    run = run_cli(["scan", "-q", str(bomb), "--storage-option", f"tmp_dir={tmp_path}"])
    assert run.code == 2 and "bytes free" in run.stderr and "tmp_dir=DIR" in run.stderr
    assert run.stderr.count("segtools: error:") == 1


def test_impossible_dates_and_writestr_members_are_read(tmp_path):
    data = SEGMENT.read_bytes()
    odd_zip = tmp_path / "odd.zip"
    with zipfile.ZipFile(odd_zip, "w") as zf:
        zf.writestr("logs/orders-0/00000000000000000000.log", data)  # no type bits
        zf.writestr("logs/orders-0/00000000000000000000.index", b"")
    raw = bytearray(odd_zip.read_bytes())
    for sig in (b"PK\x01\x02", b"PK\x03\x04"):  # month 0, day 0 in every date field
        at = raw.find(sig)
        while at >= 0:
            date_at = at + (14 if sig == b"PK\x01\x02" else 12)
            raw[date_at:date_at + 2] = b"\x00\x00"
            at = raw.find(sig, at + 4)
    odd_zip.write_bytes(bytes(raw))
    odd_tar = tmp_path / "odd.tar"
    with tarfile.open(odd_tar, "w", format=tarfile.PAX_FORMAT) as tf:
        ti = tarfile.TarInfo("logs/orders-0/00000000000000000000.log")
        ti.size = len(data)
        ti.pax_headers = {"mtime": "1e400"}
        tf.addfile(ti, io.BytesIO(data))
    for bundle in (odd_zip, odd_tar):
        run = run_cli(["verify", "-q", "--format", "jsonl", str(bundle)])
        assert "internal error" not in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert b"archive_member_refused" not in run.stdout
        assert run.code in (0, 1), run.stderr


def _zip_of_empty_entries(path: Path, n: int, extra: int = 0) -> Path:
    """A zip64 whose central directory lists ``n`` empty stored entries, all pointing at one
    local header (what a hostile bundle does to stay small: 79 bytes an entry), each with an
    ``extra``-byte extra field."""
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, 0, 0, 0, 1, 0) + b"a"
    field = b"\xfe\xca" + struct.pack("<H", extra - 4) + b"x" * (extra - 4) if extra else b""
    entries = []
    for i in range(n):
        name = b"logs/t-0/%020d.log" % i
        entries.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, 0,
                                   0, 0, len(name), len(field), 0, 0, 0, 0o100644 << 16, 0)
                       + name + field)
    directory = b"".join(entries)
    end64 = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(directory),
                        len(local))
    locator = struct.pack("<IIQI", 0x07064B50, 0, len(local) + len(directory), 1)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
                      0)
    path.write_bytes(local + directory + end64 + locator + end)
    return path


def test_a_zip_of_many_entries_is_refused_before_zipfile_builds_them(tmp_path):
    """300,000 empty entries in a 24 MB zip: ``zipfile`` made a ``ZipInfo`` of each (about
    1 KB) before the member cap could look, 620 MB and 43 s for 600,000. The central
    directory is now counted first, and the zip refused past the cap."""
    many = _zip_of_empty_entries(tmp_path / "many.zip", 300_000)
    code, rss, err = _run_measured(["scan", "-q", "--format", "jsonl", str(many)])
    assert code in (1, 2) and "Traceback" not in err and "internal error" not in err, err
    assert rss < 128 * MIB, rss


def test_the_zip_cap_counts_what_zipfile_would_read(tmp_path, monkeypatch):
    """At the cap a zip is read, one past it is not opened by ``zipfile`` at all."""
    small = _zip_of_empty_entries(tmp_path / "small.zip", 1001)
    run = run_cli(["scan", "--format", "jsonl", str(small), "--storage-option",
                   "max_members=1001"])
    assert b"more than" not in run.stdout
    opened = []
    monkeypatch.setattr(archive.zipfile, "ZipFile", lambda *a, **k: opened.append(a))
    run = run_cli(["scan", "--format", "jsonl", str(small), "--storage-option",
                   "max_members=1000"])
    assert b"more than 1000 members: not read" in run.stdout and opened == []


def test_a_zip_of_huge_member_headers_is_refused_before_zipfile_reads_them(tmp_path,
                                                                            monkeypatch):
    """1,100 entries with 64 KB extra fields: a 70 MB central directory ``zipfile`` read
    whole and kept, under the member cap. Refused before ``zipfile`` opens it."""
    big = _zip_of_empty_entries(tmp_path / "big.zip", 1100, extra=65_000)
    opened = []
    monkeypatch.setattr(archive.zipfile, "ZipFile", lambda *a, **k: opened.append(a))
    run = run_cli(["scan", "--format", "jsonl", str(big)])
    assert b"a central directory of" in run.stdout and opened == []
