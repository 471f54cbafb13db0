"""The ``whatif`` fixture tree as the what-if tests read it (fixtures/java/WhatIfFixtures.java:
a quiet topic rolled by ``segment.ms``, a busy one rolled by ``segment.bytes``, a
``compact,delete`` ledger), its topic configs and its clock: history starts at ``T``, and
``NOW`` (the tests' ``--at``) is 240 hours later."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.fixtures_manifest import FIXTURES

SEGTOOLS = str(Path(sys.executable).parent / "segtools")
TREE = FIXTURES / "logdirs" / "whatif"
CONFIG = FIXTURES / "configs" / "whatif-topic-configs.txt"
T = 1_704_067_200_000
H = 3_600_000
DAY = 24 * H
NOW = T + 240 * H
