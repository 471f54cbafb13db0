"""Executor side: one Spark task's byte ranges, read by the library into Arrow batches.

The reading itself is :func:`segtools.fetch.rows.read` (the same code as the Python API's
``to_arrow()``). What this module adds is Spark's handling of what the read meets: every warning
or error is logged on the executor and the read goes on, or, with ``failOnCorruption``, an
error finding stops the task with a message naming the file and byte position.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from pyspark_kafkalog.options import ReadOptions
from pyspark_kafkalog.planning import ReadTask
from segtools.errors import CorruptDataError
from segtools.fetch import rows
from segtools.findings import Finding, Severity
from segtools.storage.scope import LocationScope

log = logging.getLogger("pyspark_kafkalog")


def make_scan(opts: ReadOptions, columns: tuple[str, ...], schema: pa.Schema) -> rows.Scan:
    """What the executors build: Spark's schema (its exact Arrow form) and the options."""
    return rows.Scan(opts.level, columns, schema, include_control=opts.include_control,
                     read_committed=opts.read_committed, verify_crc=opts.verify_crc,
                     check_crc=opts.fail_on_corruption,
                     max_decompressed_bytes=opts.max_decompressed_bytes)


def reporter(fail_on_corruption: bool):
    """An error finding stops the task with ``failOnCorruption``; otherwise every warning or
    error is logged (on the executor) and the read goes on, as the CLI's findings do."""

    def report(finding: Finding) -> None:
        if finding.severity is Severity.INFO:
            return
        text = f"kafkalog: {finding.path}: {finding.code}: {finding.message}"
        if finding.offset is not None:
            text += f" (offset {finding.offset})"
        if fail_on_corruption and finding.severity is Severity.ERROR:
            raise CorruptDataError(text, path=finding.path, position=finding.position)
        where = f" at byte {finding.position}" if finding.position is not None else ""
        log.warning("%s%s", text, where)

    return report


def read_task(task: object, scan: rows.Scan, fail_on_corruption: bool = False,
              secrets: Mapping[str, Any] | None = None) -> Iterator[pa.RecordBatch]:
    """All Arrow batches of one task (nothing for Spark's placeholder partition). The task's
    locations are opened here, on the executor, with the reader's secret storage options."""
    if not isinstance(task, ReadTask):
        return iter(())
    return _read_owned(task, scan, reporter(fail_on_corruption), secrets or {})


def _read_owned(task: ReadTask, scan: rows.Scan, report, secrets: Mapping[str, Any]
                ) -> Iterator[pa.RecordBatch]:
    """The task's rows in a location scope of its own: the locations its ranges reopen are
    the task's, closed when its rows are read or the read stops (a Python worker runs many
    tasks, and keeps none of their store clients)."""
    owner = LocationScope()
    try:
        with owner.applied():
            ranges = task.open(secrets)
        yield from owner.iterate(rows.read(ranges, scan, report))
    finally:
        owner.close()
