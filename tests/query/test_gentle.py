"""``segtools query`` honours the run's ``--page-cache``, ``--max-read-rate`` and ``--jobs``:
every tree it walks (the whole one, or the partitions a condition names) reads under them."""

from __future__ import annotations

import time

import pytest

from segtools.cli.main import main
from segtools.storage import gentle
from tests.fixtures_manifest import FIXTURES

WHATIF = FIXTURES / "logdirs" / "whatif"
PARTITION = WHATIF / "busy-clicks-0"
WHOLE = "select count(*), sum(octet_length(value)) from records where topic = 'busy-clicks'"
NARROWED = WHOLE + " and partition = 0"


@pytest.fixture
def seen(monkeypatch) -> list[gentle.Gentle]:
    """The settings each read of the run is pulled under."""
    settings: list[gentle.Gentle] = []
    real = gentle.iterate

    def iterate(chosen, items):
        settings.append(chosen)
        return real(chosen, items)

    monkeypatch.setattr(gentle, "iterate", iterate)
    return settings


@pytest.mark.parametrize("sql", [WHOLE, NARROWED])
def test_the_flags_reach_the_reader(capsys, seen, sql):
    code = main(["query", str(WHATIF), "--page-cache", "restore", "--max-read-rate", "64MiB",
                 "--jobs", "1", "--format", "csv", "-c", sql])
    capsys.readouterr()
    assert code == 0 and seen
    for settings in seen:
        assert settings.keeper is not None  # restore: the pages read are handed back
        assert settings.rate is not None and settings.rate.rate == 64 << 20
        assert settings.jobs == 1


def test_without_flags_a_copy_is_read_at_full_speed(capsys, seen):
    main(["query", str(WHATIF), "--format", "csv", "-c", NARROWED])
    capsys.readouterr()
    assert seen and all(s.keeper is None and s.rate is None and s.jobs is None for s in seen)


def test_a_rate_cap_slows_the_read(capsys):
    """By effect: the partition's 425 KB at 200 KiB/s take two seconds, not milliseconds."""
    size = sum(p.stat().st_size for p in PARTITION.glob("*.log"))
    rate = 200 << 10
    start = time.monotonic()
    main(["query", str(WHATIF), "--max-read-rate", "200KiB", "--format", "csv", "-c",
          NARROWED])
    elapsed = time.monotonic() - start
    out, _ = capsys.readouterr()
    assert out.splitlines()[1].split(",")[1] != ""
    assert elapsed >= 0.5 * size / rate
