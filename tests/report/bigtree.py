"""A large log dir for the report's size test, made of Kafka-written partitions: each of
``topics * partitions`` directories is a copy of one of the sample tree's live partitions
(its segments, indexes and epoch checkpoint) under a new name."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.fixtures_manifest import SAMPLE

SOURCES = ("orders.v2-eu-1", "payments-compact-1", "payments.txn-0", "edge-cases-0",
           "torn-tail-0", "payments-compact-0")


def big_tree(root: Path, *, topics: int = 100, partitions: int = 10) -> Path:
    root.mkdir(parents=True)
    shutil.copy(SAMPLE / "meta.properties", root / "meta.properties")
    for t in range(topics):
        source = SAMPLE / SOURCES[t % len(SOURCES)]
        for p in range(partitions):
            dest = root / f"events.{t:03d}-{p}"
            dest.mkdir()
            for f in source.iterdir():
                if f.is_file() and not f.name.endswith(".deleted"):
                    shutil.copy(f, dest / f.name)
    return root
