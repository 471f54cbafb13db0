"""The picture for ``segtools producers --plot``: records per batch, bytes per batch and the
batch rate over time for the busiest producers, with the diagnosis in each title (matplotlib,
optional extra ``plot``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import matplotlib

matplotlib.use("Agg")  # files only, never a window
import matplotlib.pyplot as plt

from segtools.analysis.producers import NON_IDEMPOTENT, PartitionProducers

MAX_PRODUCERS = 6


def write(path: str, results: Sequence[PartitionProducers]) -> None:
    groups = sorted((g for r in results for g in r.producers.values()),
                    key=lambda g: -g.batches)[:MAX_PRODUCERS]
    rows = max(len(groups), 1)
    fig, axes = plt.subplots(rows, 3, figsize=(15, 3.2 * rows), squeeze=False)
    for ax_row, g in zip(axes, groups, strict=False):
        who = ("non-idempotent" if g.producer_id == NON_IDEMPOTENT
               else f"pid {g.producer_id} e{g.producer_epoch}")
        title = f"{g.topic}-{g.partition} {who}: {g.verdict}"
        if g.ceiling:
            title += f" (~{g.ceiling} B)"
        elif g.linger_ms is not None:
            title += f" (linger ~{g.linger_ms} ms)"
        counts = sorted(g.records_per_batch.items())
        ax_row[0].bar([k for k, _ in counts], [v for _, v in counts], color="#4c72b0")
        ax_row[0].set_title(title, fontsize=9)
        ax_row[0].set_xlabel("records per batch")
        sizes = sorted(g.sizes.items())
        ax_row[1].hist([k for k, _ in sizes], weights=[v for _, v in sizes], bins=30,
                       color="#55a868")
        ax_row[1].set_xlabel("bytes per batch")
        ax_row[1].ticklabel_format(axis="x", useOffset=False, style="plain")
        minutes = sorted(g.per_minute.items())
        start = minutes[0][0] if minutes else 0
        ax_row[2].bar([m - start for m, _ in minutes], [v for _, v in minutes], width=0.9,
                      color="#c44e52")
        since = datetime.fromtimestamp(start * 60, UTC).strftime("%Y-%m-%d %H:%M")
        ax_row[2].set_xlabel(f"minutes from {since} UTC")
        ax_row[2].set_ylabel("batches / minute")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
