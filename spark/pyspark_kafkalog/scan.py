"""Executor side: one Spark task's byte ranges, read by the library into Arrow batches.

The reading itself is :func:`segtools.fetch.rows.read` (the same code as the Python API's
``to_arrow()``). What this module adds is Spark's handling of what the read meets: every warning
or error is logged on the executor and the read goes on, or, with ``failOnCorruption``, an
error finding stops the task with a message naming the file and byte position.

Spark runs the read again for every action on a DataFrame, and a Python source keeps no state
from one action to the next; logged as is, the same file's ``crc_mismatch`` line would come
back with every ``count()`` and ``show()`` (26 times in the tour). So a line is written once per
executor worker process (:class:`OncePerWorker`): Python workers are reused from one task to
the next, and the findings as data (``level=segments``, column ``findings``) list them all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from pyspark_kafkalog.options import ReadOptions
from pyspark_kafkalog.planning import ReadTask
from segtools.errors import CorruptDataError
from segtools.fetch import arrow, rows
from segtools.findings import Finding, Severity
from segtools.storage.scope import LocationScope

log = logging.getLogger("pyspark_kafkalog")


class OncePerWorker(logging.Filter):
    """Lets each distinct finding line through once in this worker process, then drops it.

    Remembers at most ``limit`` lines (then every line goes through again, so memory stays
    bounded on a tree with millions of findings). Attached to the findings' logger when the
    module loads: the one logger of one process is where "already said" can live."""

    def __init__(self, limit: int = 65536):
        super().__init__()
        self.limit = limit
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        line = record.getMessage()
        if line in self.seen:
            return False
        if len(self.seen) < self.limit:
            self.seen.add(line)
        return True


#: Findings met by the reads: each line once per worker process (see the module's doc).
findings_log = logging.getLogger("pyspark_kafkalog.findings")
findings_log.addFilter(OncePerWorker())


def make_scan(opts: ReadOptions, columns: tuple[str, ...], schema: pa.Schema) -> rows.Scan:
    """What the executors build: Spark's schema (its exact Arrow form) and the options."""
    return rows.Scan(opts.level, columns, schema, include_control=opts.include_control,
                     read_committed=opts.read_committed, verify_crc=opts.verify_crc,
                     check_crc=opts.fail_on_corruption,
                     max_decompressed_bytes=opts.max_decompressed_bytes,
                     reveal_sensitive=opts.reveal_sensitive)


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
        findings_log.warning("%s%s", text, where)

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
    tasks, and keeps none of their store clients). The record columns' blocks come from the
    C heap (:func:`segtools.fetch.arrow.heap`): the worker's next task reuses the pages this
    one let go, where fresh ones cost it more than the decoding."""
    owner = LocationScope()
    try:
        with owner.applied():
            ranges = task.open(secrets)
        yield from owner.iterate(rows.read(ranges, scan, report, blocks=arrow.heap))
    finally:
        owner.close()
