"""The live-broker stress test, many times in a row: no reader may die (issue 18).

Each run copies the fixture trees, starts the pretend broker of ``tests/robustness/live.py`` in
``truncate`` mode (appends in torn pieces, rolls, keeps the high-watermark and recovery-point
checkpoints, swaps cleaned segments in, deletes by retention, and truncates by a follower's
rules, into rolled segments when the target lies there) and runs every command's argument sets
against the tree in another process until time is up. A run fails when the reader process
dies (SIGBUS or anything else) or a command breaks the contract (an exit other than 0/1/2, a
traceback, an internal error).

    python -m benchmarks.bench_live [--runs 200] [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.robustness.commands import copy_fixture_trees

ROOT = Path(__file__).resolve().parent.parent
LIVE = [sys.executable, "-m", "tests.robustness.live"]


def one_run(seed: int, seconds: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="segtools-live-") as tmp:
        tree = copy_fixture_trees(Path(tmp) / "trees")
        pdir = tree.sample / "live-0"
        pdir.mkdir()
        writer = subprocess.Popen([*LIVE, "write", str(pdir), str(seconds + 1), "truncate",
                                   str(seed)], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(0.3)
            reader = subprocess.run([*LIVE, "read", str(tree.root), str(seconds)], cwd=ROOT,
                                    capture_output=True, text=True, timeout=600)
        finally:
            writer.communicate(timeout=120)
        runs = [json.loads(line) for line in reader.stdout.splitlines() if line.startswith("{")]
        broken = [r for r in runs if r["code"] not in (0, 1, 2) or "Traceback" in r["stderr"]
                  or "internal error" in r["stderr"]]
        return {"seed": seed, "reader_exit": reader.returncode, "commands": len(runs),
                "broken": broken[:3], "writer_exit": writer.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    deaths, contract, commands = [], [], 0
    started = time.monotonic()
    for seed in range(1, args.runs + 1):
        r = one_run(seed, args.seconds)
        commands += r["commands"]
        if r["reader_exit"] != 0:
            deaths.append(r)
        if r["broken"]:
            contract.append(r)
        if seed % 20 == 0:
            print(f"  {seed} runs, {commands} command runs, {len(deaths)} deaths",
                  file=sys.stderr)
    print(f"live broker, {args.runs} runs of {args.seconds:.0f} s (appends, rolls, cleaner "
          f"swaps, retention, follower truncation into rolled segments): {commands} command "
          f"runs, {len(deaths)} reader deaths, {len(contract)} runs breaking the contract, "
          f"{time.monotonic() - started:.0f} s")
    for r in (deaths + contract)[:5]:
        print(json.dumps(r))
    if deaths or contract:
        sys.exit(1)


if __name__ == "__main__":
    main()
