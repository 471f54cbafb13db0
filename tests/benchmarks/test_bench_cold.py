"""``bench_cold``'s method: each cold command run paired with a device read of the same
evicted files, back to back, so the ratio it reports is of one minute's disk, not two."""

from __future__ import annotations

import pytest

from benchmarks.bench_cold import Pair, Summary, in_turns, paired


def test_each_pair_is_a_device_read_and_a_command_on_freshly_evicted_files():
    log: list[str] = []

    def timed(name: str, seconds: float):
        def run() -> float:
            log.append(name)
            return seconds
        return run

    def cold() -> float:
        log.append("evict")
        return 0.0

    runs = iter([2.0, 1.5] * 3)  # the command cold, then warm, in each pair
    pairs = paired(timed("device", 1.0), lambda: (log.append("command"), next(runs))[1],
                   cold, repeat=3)
    assert log == ["evict", "device", "evict", "command", "command",
                   "evict", "command", "command", "evict", "device",
                   "evict", "device", "evict", "command", "command"]
    # each time where it belongs, whatever the order; the warm run right after the cold one
    assert pairs == [Pair(1.0, 2.0, 1.5, 0.0)] * 3


def test_the_ratio_is_per_pair_against_the_device_of_that_pair_or_warm():
    # the disk doubles its speed between pairs: the command keeps up with it in each pair
    pairs = [Pair(device=2.0, command=2.0, warm=0.1, resident=0.0),
             Pair(device=1.0, command=1.25, warm=0.1, resident=0.0),
             Pair(device=0.5, command=0.5, warm=0.1, resident=0.0)]
    summary = Summary.of(pairs)
    assert summary.median == pytest.approx(1.0)
    assert (summary.lowest, summary.best, summary.first) == pytest.approx((0.8, 1.0, 1.0))
    # a command slower warm than the device is held to its warm speed in the same pair
    assert Summary.of([Pair(1.0, 4.0, 4.0, 0.0)]).median == pytest.approx(1.0)
    assert Summary.of([Pair(1.0, 4.0, 2.0, 0.0)]).median == pytest.approx(0.5)


def test_two_codes_take_turns_pair_by_pair_in_alternating_order():
    order: list[tuple[str | None, int]] = []

    def one(code: str | None, turn: int) -> Pair:
        order.append((code, turn))
        return Pair(1.0, 1.0, 1.0, 0.0)

    pairs = in_turns([None, "/old"], 3, one)
    # ABBA by code; the device first in every other pair of the run (A: dc, B: cd, B: dc,
    # A: cd, ...): a device read right after a device read falls to each code in turn
    assert order == [(None, 0), ("/old", 1), ("/old", 2), (None, 3), (None, 4), ("/old", 5)]
    assert {code: len(p) for code, p in pairs.items()} == {None: 3, "/old": 3}
