"""The Spark tour (``spark/examples/kafkalog_tour.py``, ``make demo``'s Spark step) as a reader
sees it on stdout: every table under a caption, every row shown or the caption saying how many
there are (never Spark's "only showing top N rows"), and each finding the reads meet once, as
a row of its own table (the executors' log lines go to stderr with Spark's log)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from tests.fixtures_manifest import FIXTURES
from tests.report.conftest import ROOT

pytestmark = pytest.mark.spark


def test_tour_tables_are_captioned_whole_and_findings_shown_once():
    proc = subprocess.run([sys.executable, str(ROOT / "spark" / "examples" / "kafkalog_tour.py"),
                           str(FIXTURES / "logdirs" / "sample")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    tops = [i for i, line in enumerate(lines) if line.startswith("+-")
            and (i == 0 or not lines[i - 1].startswith("|"))]
    assert len(tops) >= 10
    for i in tops:
        assert lines[i - 1].startswith("== "), lines[i - 2:i + 2]
    assert "only showing" not in proc.stdout
    assert "kafkalog:" not in proc.stdout
    codes = Counter(re.findall(r"\|(crc_mismatch|truncated_tail) *\|", proc.stdout))
    assert codes == {"crc_mismatch": 1, "truncated_tail": 1}, proc.stdout
    # the executors' lines: once per worker process (at most one per core of local[*]), not
    # once per action of the tour
    logged = [line for line in proc.stderr.splitlines()
              if "kafkalog:" in line and "crc_mismatch" in line and "at byte 225" in line]
    assert 1 <= len(logged) <= max(2, os.cpu_count() or 1), logged
