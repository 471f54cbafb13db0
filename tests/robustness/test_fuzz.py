"""The fuzz harnesses in ``make test``: every committed regression input replays through its
target (no atheris needed), and every atheris harness fuzzes for a couple of seconds.

The long run is ``make fuzz`` (``python -m fuzz.run``); see fuzz/README.md.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fuzz.run import SEEDS_CACHE, run_target
from fuzz.seeds import SEEDS, fixture_seeds, sources_key, write_seeds
from fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fuzz" / "corpus"
SECONDS = 1
REGRESSIONS = sorted(p for p in CORPUS.glob("*/*") if p.is_file())


def test_every_target_has_a_harness_and_seeds():
    for name in TARGETS:
        assert (ROOT / "fuzz" / f"fuzz_{name}.py").is_file(), name
        assert name in SEEDS, name
    assert {p.name for p in CORPUS.iterdir()} <= set(TARGETS)


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_regression_corpus_replays(path):
    TARGETS[path.parent.name](path.read_bytes())


def test_seeds_are_cut_once_for_the_sources_as_they_are(tmp_path, monkeypatch):
    """The kept set is what cutting the seeds now gives, it is reused while the sources are
    unchanged (cut again it would not be: the cutter is stubbed out), and a set kept for
    other sources is removed when a new one is cut."""
    stale = tmp_path / "0123456789abcdef0123"
    (stale / "codecs").mkdir(parents=True)
    kept = fixture_seeds(tmp_path)
    assert kept.name == sources_key() and not stale.exists()
    assert sorted(p.name for p in kept.iterdir()) == sorted(SEEDS)
    fresh = tmp_path / "fresh"
    for target in ("dir_names", "snapshot", "text_files"):
        write_seeds(target, fresh / target)
        assert {p.name: p.read_bytes() for p in (kept / target).iterdir()} == \
            {p.name: p.read_bytes() for p in (fresh / target).iterdir()}

    def cut_again(*_):
        raise AssertionError("seeds cut again for unchanged sources")

    monkeypatch.setattr("fuzz.seeds.write_seeds", cut_again)
    assert fixture_seeds(tmp_path) == kept


def test_seeds_are_cut_by_one_process_while_the_others_wait(tmp_path):
    """The suite's two workers find the seeds missing at once: one cuts, the other waits for
    its set and cuts nothing. Each process here is a fresh interpreter, as a worker is; both
    call ``fixture_seeds`` when both are ready, and the cutter is slowed (and writes nothing,
    for sources named by a fixed key) so that the two are surely inside it together."""
    code = ("import pathlib, sys, time, fuzz.seeds as s\n"
            "cache, me = pathlib.Path(sys.argv[1]), sys.argv[2]\n"
            "def slow(target, directory):\n"
            "    print('cut', target, flush=True)\n"
            "    time.sleep(0.02)\n"
            "    directory.mkdir(parents=True)\n"
            "s.write_seeds = slow\n"
            "s.sources_key = lambda: 'fixedkey'\n"
            "(cache.parent / me).touch()\n"
            "while len(list(cache.parent.glob('ready-*'))) < 2:\n"
            "    time.sleep(0.001)\n"
            "print('done', s.fixture_seeds(cache).name)\n")
    cache = tmp_path / "seeds"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(cache), f"ready-{n}"], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for n in range(2)]
    outs = [p.communicate(timeout=120)[0].splitlines() for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert [out[-1] for out in outs] == ["done fixedkey"] * 2, outs
    cuts = [line for out in outs for line in out if line.startswith("cut ")]
    assert sorted(cuts) == sorted(f"cut {target}" for target in SEEDS), outs
    assert sorted(p.name for p in (cache / "fixedkey").iterdir()) == sorted(SEEDS)


@pytest.fixture(scope="module")
def short_runs(tmp_path_factory) -> dict[str, tuple[int, float, str]]:
    if importlib.util.find_spec("atheris") is None:
        pytest.skip("atheris is not installed (pip install atheris; it ships manylinux wheels)")
    cache = tmp_path_factory.mktemp("fuzz")  # each run learns afresh: its working corpus
    seeds = fixture_seeds(SEEDS_CACHE)  # cut once per state of the fixtures and the code

    def one(name: str) -> tuple[str, tuple[int, float, str]]:
        started = time.monotonic()
        r = run_target(name, SECONDS, cache=cache, seeds=seeds, extra=("-seed=1",))
        return name, (r.returncode, time.monotonic() - started, r.stderr[-3000:])

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, TARGETS))


@pytest.mark.parametrize("name", list(TARGETS))
def test_short_fuzz_run(short_runs, name):
    code, _seconds, stderr = short_runs[name]
    assert code == 0, stderr
    assert "Done" in stderr, stderr
