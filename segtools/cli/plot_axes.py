"""Byte axes for the pictures (``retention --plot``, ``producers --plot``): ticks at round
binary values (16 KiB, 32 KiB, 48 KiB; never 19.5 / 39.1 / 58.6 KiB, which is what a decimal
tick locator puts on a binary scale), and labels precise enough that no two ticks read the
same (``15.3 KiB`` twice, when the ticks are 16 bytes apart)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import Formatter, Locator

from segtools.units import format_bytes

_UNITS = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B"))


class BinaryLocator(Locator):
    """At most about ``ticks`` ticks, at the multiples of a power of two bytes (whole bytes
    at least)."""

    def __init__(self, ticks: int = 5):
        self.ticks = ticks

    def __call__(self):
        lo, hi = self.axis.get_view_interval()
        return self.tick_values(lo, hi)

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        lo, hi = min(vmin, vmax), max(vmin, vmax)
        step = 2.0 ** max(0, math.ceil(math.log2(max(hi - lo, 1) / self.ticks)))
        return np.arange(math.ceil(lo / step) * step, hi + step / 2, step)


class BinaryFormatter(Formatter):
    """Every tick in the unit of the largest one, with the fewest decimals that tell them all
    apart (``format_bytes`` for a single value, as the cursor shows it)."""

    def __call__(self, x: float, pos=None) -> str:
        return format_bytes(x)

    def format_ticks(self, values) -> list[str]:
        values = list(values)
        top = max((abs(v) for v in values), default=0)
        size, name = next(((s, n) for s, n in _UNITS if top >= s), (1, "B"))
        for decimals in range(4):
            labels = [f"{v / size:,.{decimals}f} {name}" for v in values]
            if len(set(labels)) == len(labels):
                return labels
        return labels


def binary_bytes(axis, ticks: int = 5) -> None:
    """Give a matplotlib axis (``ax.xaxis`` or ``ax.yaxis``) binary byte ticks and labels."""
    axis.set_major_locator(BinaryLocator(ticks))
    axis.set_major_formatter(BinaryFormatter())
