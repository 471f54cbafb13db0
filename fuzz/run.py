"""Run fuzz targets for a while: ``python -m fuzz.run [TARGET ...] [--seconds N]``.

Each target runs in its own process (a libFuzzer process fuzzes one function) with the
committed regression corpus (``fuzz/corpus/<target>``), seeds cut from the fixtures
(``.cache/fuzz/seeds/<key>/<target>``, cut again only when their sources change) and a
growing working corpus (``.cache/fuzz/work/<target>``, where libFuzzer adds what it learns).
A crash leaves its input in ``.cache/fuzz/crashes/``; copy it into ``fuzz/corpus/<target>/``
once fixed, so it replays in every test run.
Exit status: 0 when no target crashed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fuzz.seeds import fixture_seeds
from fuzz.targets import TARGETS

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
CACHE = ROOT / ".cache" / "fuzz"
#: Seeds depend only on their sources, so every run shares them (a test's scratch cache too).
SEEDS_CACHE = CACHE / "seeds"
SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None


def command(target: str, seconds: float, *, cache: Path = CACHE, seeds: Path | None = None,
            extra: tuple[str, ...] = ()) -> list[str]:
    """The libFuzzer command line for one target: its working corpus and crashes under
    ``cache``, its seeds from ``seeds``, a set :func:`fuzz.seeds.fixture_seeds` made (by
    default the one kept under :data:`SEEDS_CACHE`, cut first if the fixtures or the code changed
    since; a caller running many targets finds it once)."""
    seeds = (seeds or fixture_seeds(SEEDS_CACHE)) / target
    work, crashes = cache / "work" / target, cache / "crashes"
    work.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    corpus = FUZZ / "corpus" / target
    dirs = [str(work), str(seeds)] + ([str(corpus)] if corpus.is_dir() else [])
    return [sys.executable, str(FUZZ / f"fuzz_{target}.py"), f"-max_total_time={int(seconds)}",
            "-rss_limit_mb=2048", "-timeout=10", "-max_len=16384", "-print_final_stats=1",
            f"-artifact_prefix={crashes}/{target}-", *extra, *dirs]


def run_target(target: str, seconds: float, *, cache: Path = CACHE, seeds: Path | None = None,
               extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Fuzz one target in its own process, with a scratch directory removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="segtools-fuzz-", dir=SHM) as scratch:
        return subprocess.run(command(target, seconds, cache=cache, seeds=seeds, extra=extra),
                              cwd=ROOT,
                              env={**os.environ, "SEGTOOLS_FUZZ_SCRATCH": scratch},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=seconds + 600)


def summary(stderr: str) -> str:
    """Executions, coverage and peak RSS from libFuzzer's closing lines."""
    stats = dict(re.findall(r"^stat::(\w+):\s+(\d+)", stderr, re.M))
    cov = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)", stderr)
    edges, features, corpus = cov[-1] if cov else ("?", "?", "?")
    return (f"{stats.get('number_of_executed_units', '?')} inputs, {edges} edges, "
            f"{features} features, corpus {corpus}, peak RSS "
            f"{stats.get('peak_rss_mb', '?')} MB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET",
                        help=f"default: all of {', '.join(TARGETS)}")
    parser.add_argument("--seconds", type=float, default=60, help="per target")
    args = parser.parse_args(argv)
    unknown = set(args.targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}")
    failed = []
    seeds = fixture_seeds(SEEDS_CACHE)
    for target in args.targets or list(TARGETS):
        started = time.monotonic()
        result = run_target(target, args.seconds, seeds=seeds)
        print(f"{target}: exit {result.returncode} in {time.monotonic() - started:.0f}s, "
              f"{summary(result.stderr)}", flush=True)
        if result.returncode:
            failed.append(target)
            sys.stderr.write(result.stderr[-4000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
