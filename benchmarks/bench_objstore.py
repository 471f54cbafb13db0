"""A 1 GiB segment read from an S3-protocol server, against a plain pyarrow read of it.

The server is moto's (``tests/s3server.py``) on 127.0.0.1; the segment is the 1 GiB segment of
one-record batches written by Kafka's ``MemoryRecordsBuilder`` (``benchmarks/shapes.py``), in a
rolled partition with the offset index Kafka's ``LogSegment.append`` builds for it (an entry
when more than ``index.interval.bytes`` = 4096 bytes were appended since the last one).

* ``scan --crc`` and ``dump --deep`` of the ``s3://`` partition (whole commands, as processes:
  first run and best of three), against the floor: a plain ``pyarrow.fs`` sequential read of
  the same object by a process of its own, in the same run. Target: a ratio (floor / segtools)
  of at least 0.8.
* every timed command is checked once more, outside the timing: the bytes it asked the
  server for (from the server's request log) must cover the object, and its output must be
  the output of the same command on the local copy (every batch, every record), so a read
  that stopped early can no longer pass for a fast one.
* ``find --offset`` of an offset near the end: the bytes it asked the server for (from the
  server's request log), against the segment's size. Target: a few MiB at most.

Run from the repository root: ``.venv/bin/python -m benchmarks.bench_objstore [MiB]`` (the
segment's size, 1024 by default).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import OUT
from benchmarks.shapes import SHAPES, rolled
from tests.s3server import S3Server

SEGTOOLS = str(Path(sys.executable).with_name("segtools"))
INDEX_INTERVAL_BYTES = 4096  # LogConfig default index.interval.bytes
BUCKET = "bench"

FLOOR = """
import sys, pyarrow.fs as fs
s3 = fs.S3FileSystem(endpoint_override=sys.argv[1], scheme="http", access_key=sys.argv[2],
                     secret_key=sys.argv[3], region="us-east-1")
n = 0
with s3.open_input_stream(sys.argv[4]) as f:
    while chunk := f.read(8 << 20):
        n += len(chunk)
print(n)
"""


def offset_index(pdir: Path) -> Path:
    """The ``.index`` Kafka builds while appending the segment's batches: ``(last offset,
    position)`` of a batch once more than ``index.interval.bytes`` went by since the last
    entry (``LogSegment.append``), relative to the base offset, big-endian."""
    from segtools.storage.segment import Segment
    index = pdir / "00000000000000000000.index"
    if index.exists():
        return index
    rel, pos, since = [], [], 0
    with Segment(pdir / "00000000000000000000.log") as seg:
        for walked in seg.walk(verify_crc=False):
            t = walked.table
            for p, s, lo in zip(t.position.tolist(), t.size.tolist(), t.last_offset.tolist(),
                                strict=True):
                if since > INDEX_INTERVAL_BYTES:
                    rel.append(lo)
                    pos.append(p)
                    since = 0
                since += s
    arr = np.empty(len(rel), dtype=[("r", ">i4"), ("p", ">i4")])
    arr["r"], arr["p"] = rel, pos
    index.write_bytes(arr.tobytes())
    return index


def own_copy(pdir: Path) -> Path:
    """The rolled partition, hard-linked into a log dir of this benchmark's own (the index
    added here must not change what the other benchmarks read)."""
    root = OUT / "shapes" / f"objstore-{pdir.parent.name}"
    for src in pdir.parent.rglob("*"):
        dst = root / src.relative_to(pdir.parent)
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
        elif not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.hardlink_to(src)
    return root / pdir.name


def run(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                          text=True)
    seconds = time.perf_counter() - t
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{cmd[:3]}: {done.stderr.strip()}")
    return seconds


def digest(cmd: list[str], env: dict, replace: tuple[str, str] = ("", "")
           ) -> tuple[str, int, bytes]:
    """SHA-256, line count and first line of a command's output, with the copy's names made
    local and modification times left out (an object's is its upload time)."""
    import hashlib
    import re
    h, lines, first = hashlib.sha256(), 0, b""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if replace[0]:
                line = line.replace(replace[0].encode(), replace[1].encode())
            line = re.sub(rb'"mtime_ms":\d+', b"", line)
            h.update(line)
            lines += 1
            first = first or line[:300]
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{cmd[:3]} exited {proc.returncode}")
    return h.hexdigest(), lines


def first_and_best(cmd: list[str], env: dict, repeat: int = 3) -> tuple[float, float]:
    times = [run(cmd, env) for _ in range(repeat)]
    return times[0], min(times)


def requested_bytes(requests: list[dict], sizes: dict[str, int]) -> int:
    """Bytes the GETs asked for: a Range header's span, or the whole object."""
    total = 0
    for r in requests:
        if r["method"] != "GET" or "list-type" in r["url"]:
            continue
        rng = {k.lower(): v for k, v in r["headers"].items()}.get("range")
        if rng:
            lo, _, hi = rng.split("=", 1)[1].partition("-")
            total += int(hi) - int(lo) + 1
        else:
            total += sizes.get(r["url"].split(f"/{BUCKET}/", 1)[-1].split("?")[0], 0)
    return total


def main(mib: int = 1024) -> None:
    one = next(s for s in SHAPES if s.name == "one")
    pdir = own_copy(rolled(one, mib << 20))
    offset_index(pdir)
    root = pdir.parent
    log = pdir / "00000000000000000000.log"
    size = log.stat().st_size
    results: dict = {"segment_bytes": size}
    with S3Server() as s3:
        uri = s3.upload_tree(root, BUCKET, "logdir")
        env = {**os.environ, **s3.env, "AWS_EC2_METADATA_DISABLED": "true"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        key = f"{BUCKET}/logdir/{pdir.name}/{log.name}"
        floor = [sys.executable, "-c", FLOOR, s3.endpoint.split("://", 1)[1],
                 s3.options["access_key"], s3.options["secret_key"], key]
        target = f"{uri}/{pdir.name}"
        sizes = {f"logdir/{p.relative_to(root).as_posix()}": p.stat().st_size
                 for p in root.rglob("*") if p.is_file()}
        for name, cmd in (("scan --crc", [SEGTOOLS, "scan", "-q", "--crc", "--format", "jsonl",
                                          target]),
                          ("dump --deep", [SEGTOOLS, "dump", "--deep", "--format", "jsonl",
                                           f"{target}/{log.name}"])):
            s3.start_recording()
            remote = digest(cmd, env, (uri, str(root)))
            asked = requested_bytes(s3.recorded(), {k: v for k, v in sizes.items()
                                                    if k.endswith(log.name)})
            local = digest([a.replace(target, str(pdir)) for a in cmd], env)
            if asked < size or remote[:2] != local[:2]:
                raise SystemExit(f"{name}: the read from the store is not the local read "
                                 f"({asked} of {size} bytes asked; output {remote} vs {local})")
            results[name] = {"requested_bytes": asked, "output_lines": remote[1]}
            print(f"{name}: complete ({asked / 2**20:.1f} MiB asked of a {size / 2**20:.1f} MiB "
                  f"object; {remote[1]} output lines, identical to the local read)")
            floor_first, floor_best = first_and_best(floor, env)
            ours_first, ours_best = first_and_best(cmd, env)
            results[name] |= {"segtools_first_s": ours_first, "segtools_best_s": ours_best,
                             "pyarrow_first_s": floor_first, "pyarrow_best_s": floor_best,
                             "ratio_best": floor_best / ours_best,
                             "ratio_first": floor_first / ours_first}
            print(f"{name} of s3://.../{log.name} ({size / 2**30:.2f} GiB): segtools "
                  f"{ours_first:.2f} s first, {ours_best:.2f} s best; plain pyarrow read "
                  f"{floor_first:.2f} s / {floor_best:.2f} s: ratio {floor_best / ours_best:.2f} "
                  f"best, {floor_first / ours_first:.2f} first (target >= 0.8)")
        from benchmarks.common import last_offset
        wanted = last_offset(log) - 1000
        s3.start_recording()
        run([SEGTOOLS, "find", target, "--offset", str(wanted)], env)
        asked = requested_bytes(s3.recorded(), sizes)
        results["find --offset"] = {"offset": wanted, "requested_bytes": asked}
        print(f"find --offset {wanted}: {asked / 2**20:.2f} MiB asked of the store "
              f"(the segment is {size / 2**20:.0f} MiB, its index "
              f"{(pdir / '00000000000000000000.index').stat().st_size / 2**20:.2f} MiB)")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "objstore.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
