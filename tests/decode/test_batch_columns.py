"""The batch table's columns are declared once (``decode.table.COLUMNS``); every other place
that spells them out is held to that declaration: the table's own fields, the compiled walk's
typed views (which it fills), the JSON-lines renderer's typed views (which it reads), and the
batch table rebuilt from ``level=batches`` Arrow rows."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np

import segtools
from segtools.analysis.partition_log import as_partition, iter_tables
from segtools.decode.table import COLUMNS, BatchTable
from segtools.fetch.columns import batch_table
from tests.fixtures_manifest import SAMPLE

ROOT = Path(segtools.__file__).parent
C_TYPES = {"int8_t": np.int8, "int16_t": np.int16, "int32_t": np.int32, "int64_t": np.int64,
           "uint32_t": np.uint32}


def typed_views(pyx: Path, cls: str) -> list[tuple[str, np.dtype]]:
    """The ``cdef [const] T[::1] name`` members of a cdef class, in order."""
    body = pyx.read_text().split(f"cdef class {cls}:", 1)[1].split("\n\n\n", 1)[0]
    return [(name, np.dtype(C_TYPES[ctype])) for ctype, name in
            re.findall(r"^\s+cdef (?:const )?(\w+)\[::1\] (\w+)$", body, re.M)]


def test_the_table_fields_are_the_declared_columns():
    assert [f.name for f in dataclasses.fields(BatchTable)] == list(COLUMNS)


def test_the_compiled_walk_fills_the_declared_columns():
    assert typed_views(ROOT / "decode" / "_walk.pyx", "Columns") == list(COLUMNS.items())


def test_the_jsonl_renderer_reads_the_declared_columns():
    assert typed_views(ROOT / "cli" / "_jsonl.pyx", "Batches") == list(COLUMNS.items())


def test_the_table_from_arrow_rows_is_the_walked_table():
    """Rebuilt from the API's batch rows, every column but the CRC (which the analyses that
    fold Arrow rows do not read) equals what the walk produced, in the declared dtype."""
    path = SAMPLE / "payments.txn-0"
    rows = segtools.open(path).to_arrow(level="batches").read_all()
    rebuilt = batch_table(rows.combine_chunks().to_batches()[0])
    tables = [t for _, _, t in iter_tables(as_partition(path), [], verify_crc=False)]
    for name, dtype in COLUMNS.items():
        assert getattr(rebuilt, name).dtype == dtype, name
        if name not in ("crc", "crc_valid"):
            walked = np.concatenate([getattr(t, name) for t in tables])
            assert getattr(rebuilt, name).tolist() == walked.tolist(), name
    assert rebuilt.is_transactional.any() and rebuilt.is_control.any()
