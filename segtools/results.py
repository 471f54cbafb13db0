"""The analyses' results as a notebook shows them: a short ``repr``, a table, the CLI's JSON.

A notebook displays whatever a cell returns. The library's results are frozen dataclasses
holding every partition's inputs, verdicts and findings, so their generated ``repr`` runs to
hundreds of kilobytes. The Python API therefore returns each result as a subclass of the
library's own type (an ``isinstance`` of it, with every field) that adds one face:

- ``repr``: what it is and how much (``<RetentionReport at 2023-11-16T00:00:00Z: 12
  partitions, 19 segments (2 deletable, 1.1 MiB), 1 finding>``);
- ``rows()``: one dict per row in the CLI's JSON vocabulary (the level each kind's rows are
  at is in :attr:`Result.row_kind`), ``to_arrow()`` and ``to_pandas()`` of them, with every
  time (a field named ``*timestamp``, ``at``, ``*_at`` or a point in time ending ``_ms``) as
  a UTC ``datetime`` in ``rows()`` and a UTC timestamp in the tables: the Python API's one
  type for a moment, as the records' ``timestamp`` (only ``to_json()`` keeps epoch ms);
- ``to_json()``: what the command prints with ``--format json``/``jsonl``: its document, or
  its objects in order;
- ``_repr_html_``: findings first, then the first rows, for Jupyter.

Nothing here computes: every value comes from the result or the library's own ``to_json``.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pyarrow as pa

from segtools.analysis.explain import CompactionReport, RetentionReport
from segtools.analysis.offsets import OffsetsReplay
from segtools.analysis.tiered import TieredReport
from segtools.analysis.transactions import TransactionsReport, partition_json
from segtools.analysis.whatif import WhatIfReport
from segtools.findings import Finding, Severity
from segtools.text import terminal_safe
from segtools.units import format_bytes, format_time

__all__ = ["CompactionResult", "DivergeResult", "FindingsResult", "OffsetsResult",
           "ProducersResult", "Result", "RetentionResult", "TieredResult",
           "TransactionsResult", "WhatIfResult", "as_result"]

#: Rows an HTML table shows before saying how many more there are.
HTML_ROWS = 20
#: Findings an HTML table shows before the count of the rest.
HTML_FINDINGS = 10
#: Where epoch milliseconds count from.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Fields that are points in time although their name does not end in ``timestamp``.
_MOMENTS = frozenset({"at", "now_ms", "at_ms", "until", "eligible_at", "copy_started_ms",
                      "state_changed_ms", "event_timestamp_ms"})


def is_moment(name: str) -> bool:
    """Whether a row field is a point in time (epoch ms in the CLI's JSON); ages and
    durations (``age_ms``, ``retention_ms``) are not."""
    return name.endswith("timestamp") or name.endswith("_at") or name in _MOMENTS


def _moment(value: Any) -> Any:
    """An epoch-ms moment as a UTC datetime (negative: none); other values as they are."""
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    return None if value < 0 else EPOCH + timedelta(milliseconds=value)


def _flat(obj: dict, prefix: str = "") -> dict:
    """A JSON object as one row: nested objects' scalars as ``parent.child``; lists by
    their length (``segments`` -> ``segments`` count), as a table cell holds one value."""
    out: dict = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}."))
        elif isinstance(value, list | tuple):
            out[name] = len(value)
        else:
            out[name] = value
    return out


def table_of(rows: Sequence[dict]) -> pa.Table:
    """Rows as an Arrow table, every moment a ``timestamp[ms, UTC]`` (negative: none)."""
    names = list(dict.fromkeys(itertools.chain.from_iterable(rows)))
    columns = {}
    for name in names:
        values = [r.get(name) for r in rows]
        if is_moment(name) and all(v is None or isinstance(v, int) for v in values):
            values = [None if v is None or v < 0 else v for v in values]
            columns[name] = pa.array(values, pa.timestamp("ms", tz="UTC"))
        else:
            try:
                columns[name] = pa.array(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed kinds: shown as text
                columns[name] = pa.array([None if v is None else str(v) for v in values])
    return pa.table(columns) if columns else pa.table({})


class Result:
    """The notebook face every API result shares (see the module doc). ``to_json`` is the
    library type's own where it has one (the CLI prints it), else the subclass's."""

    __slots__ = ()
    #: what one row of ``rows()`` is
    row_kind: ClassVar[str] = "row"

    def rows(self) -> list[dict]:
        """One dict per row, every moment a UTC ``datetime`` (None where the CLI's JSON has
        -1 for "none"), as the records' own ``timestamp``."""
        return [{k: _moment(v) if is_moment(k) else v for k, v in r.items()}
                for r in self._rows()]

    def _rows(self) -> list[dict]:
        """The rows in the CLI's JSON vocabulary (moments as epoch ms)."""
        raise NotImplementedError

    def summary(self) -> str:
        """How much there is, in a few words."""
        raise NotImplementedError

    def _findings(self) -> tuple[Finding, ...]:
        return tuple(getattr(self, "findings", ()))

    def to_arrow(self) -> pa.Table:
        """``rows()`` as an Arrow table (times as UTC timestamps)."""
        return table_of(self._rows())

    def to_pandas(self):
        """``rows()`` as a pandas DataFrame (times as UTC timestamps)."""
        return self.to_arrow().to_pandas()

    def _name(self) -> str:
        base = next((c for c in type(self).__mro__[1:]
                     if c.__module__.startswith("segtools.analysis")), None)
        return base.__name__ if base is not None else type(self).__name__

    def __repr__(self) -> str:
        found = self._findings()
        worst = _count_by_severity(found)
        return terminal_safe(f"<{self._name()}: {self.summary()}{', ' + worst if worst else ''}>")

    def _repr_html_(self) -> str:
        rows = self.rows()
        found = self._findings()
        parts = [f"<p><b>{html.escape(self._name())}</b>: {html.escape(self.summary())}</p>"]
        if found:
            parts.append(_html_table([f.to_json() for f in found[:HTML_FINDINGS]],
                                     ("severity", "code", "path", "offset", "message")))
            if len(found) > HTML_FINDINGS:
                parts.append(f"<p>... {len(found) - HTML_FINDINGS} more finding(s)</p>")
        if rows:
            flat = [_flat(r) for r in rows[:HTML_ROWS]]
            parts.append(_html_table(flat, tuple(dict.fromkeys(
                itertools.chain.from_iterable(flat)))))
            if len(rows) > HTML_ROWS:
                parts.append(f"<p>... {len(rows) - HTML_ROWS} more {self.row_kind}(s); "
                             "<code>.to_pandas()</code> has them all</p>")
        return "\n".join(parts)


def _count_by_severity(found: Iterable[Finding]) -> str:
    counts = {s: 0 for s in Severity}
    for f in found:
        counts[f.severity] += 1
    return ", ".join(f"{n} {s.value}" for s, n in counts.items() if n)


def _cell(value: object) -> str:
    if value is None:
        return ""
    return html.escape(str(value) if not isinstance(value, float) else f"{value:.4g}")


def _html_table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _from(cls: type, report: object) -> Any:
    """The same values as ``report``, in its notebook subclass."""
    return cls(**{f.name: getattr(report, f.name) for f in fields(report)})


# ------------------------------------------------------------------------------ reports


@dataclass(frozen=True, slots=True, repr=False)
class RetentionResult(Result, RetentionReport):
    """``segtools retention``'s answer; one row per segment, with its verdict."""

    row_kind: ClassVar[str] = "segment"

    def _rows(self) -> list[dict]:
        out = []
        for p in RetentionReport.to_json(self)["partitions"]:
            for s in p["segments"]:
                out.append({"topic": p["topic"], "partition": p["partition"], **s})
        return out

    def summary(self) -> str:
        segments = [v for e in self.partitions for v in e.retention.segments]
        deletable = [v for v in segments if v.deletable]
        return (f"at {format_time(self.at_ms)}: {len(self.partitions)} partition(s), "
                f"{len(segments)} segment(s) ({len(deletable)} deletable, "
                f"{format_bytes(sum(v.size for v in deletable))})")


@dataclass(frozen=True, slots=True, repr=False)
class CompactionResult(Result, CompactionReport):
    """``segtools compaction``'s answer; one row per compacted partition."""

    row_kind: ClassVar[str] = "partition"

    def _rows(self) -> list[dict]:
        return [_flat(p) for p in CompactionReport.to_json(self)["partitions"]]

    def summary(self) -> str:
        if not self.partitions and self.skipped:
            return (f"at {format_time(self.at_ms)}: no compacted partition; "
                    f"{len(self.skipped)} skipped, e.g. {self.skipped[-1].reason}")
        named = sum(e.not_compacted is not None for e in self.partitions)
        cleaned = sum(e.compaction.would_clean for e in self.partitions
                      if e.not_compacted is None)
        return (f"at {format_time(self.at_ms)}: {len(self.partitions) - named} compacted "
                f"partition(s), {cleaned} the cleaner would clean now, "
                f"{len(self.skipped)} skipped"
                + (f"; {named} named without a config (cleanup.policy=delete, Kafka's "
                   "default: never compacted) replayed as if compact" if named else ""))


@dataclass(frozen=True, slots=True, repr=False)
class TieredResult(Result, TieredReport):
    """``segtools tiered``'s answer; one row per remote segment (``TieredReport.rows``)."""

    row_kind: ClassVar[str] = "remote segment"

    def _rows(self) -> list[dict]:
        return TieredReport.rows(self)

    def _findings(self) -> tuple[Finding, ...]:
        return self.all_findings

    def summary(self) -> str:
        remote = sum(len(r) for r in (p.rows() for p in self.partitions))
        return (f"at {format_time(self.at_ms)}: {len(self.partitions)} tiered partition(s), "
                f"{remote} remote segment(s)")


@dataclass(frozen=True, slots=True, repr=False)
class TransactionsResult(Result, TransactionsReport):
    """``segtools transactions``' answer; one row per transaction in a data partition."""

    row_kind: ClassVar[str] = "transaction"

    def _rows(self) -> list[dict]:
        return [o for p in self.partitions
                for o in partition_json(p.scan, p.scan.transactions)[1:]]

    def to_json(self) -> list[dict]:
        """The objects ``segtools transactions --format jsonl`` prints, in its order."""
        out: list[dict] = []
        for p in self.partitions:
            out += partition_json(p.scan, p.scan.transactions)
            out += [h.to_json() for h in p.hanging]
        out += [c.to_json() for c in self.changes]
        out += [f.to_json() for f in self.findings]
        return out

    def summary(self) -> str:
        txns = [t for p in self.partitions for t in p.scan.transactions]
        hanging = sum(len(p.hanging) for p in self.partitions)
        return (f"{len(self.partitions)} partition(s), {len(txns)} transaction(s) "
                f"({sum(t.marker == 'ABORT' for t in txns)} aborted, {hanging} hanging), "
                f"{len(self.open_ids)} open transactional id(s)")


@dataclass(frozen=True, slots=True, repr=False)
class OffsetsResult(Result, OffsetsReplay):
    """``segtools offsets``' answer; one row per committed offset (per group, topic and
    partition), or per commit when the replay kept its history."""

    row_kind: ClassVar[str] = "committed offset"

    def _rows(self) -> list[dict]:
        if self.commits:
            return [c.to_json() for c in self.commits]
        return [c.to_json("committed_offset") for g in self.groups.values()
                for _, c in sorted(g.offsets.items())]

    def to_json(self) -> list[dict]:
        """The objects ``segtools offsets --format jsonl`` prints (``--history`` when the
        replay kept it), in its order."""
        out: list[dict] = []
        for g in self.groups.values():
            out.append(g.to_json())
            if not self.commits:
                out += [c.to_json("committed_offset") for _, c in sorted(g.offsets.items())]
        out += [c.to_json() for c in self.commits]
        out += [a.to_json() for a in (*self.regressions, *self.deletions,
                                      *self.group_deletions)]
        out += [f.to_json() for f in self.findings]
        return out

    def summary(self) -> str:
        committed = sum(len(g.offsets) for g in self.groups.values())
        history = f", {len(self.commits)} commit(s) in the history" if self.commits else ""
        return (f"{len(self.groups)} group(s), {committed} committed offset(s){history}, "
                f"{len(self.regressions)} regression(s), {self.records} record(s) replayed")


@dataclass(frozen=True, slots=True, repr=False)
class WhatIfResult(Result, WhatIfReport):
    """``segtools retention --what-if``'s answer; one row per partition copy or topic."""

    row_kind: ClassVar[str] = "simulated log"

    def _rows(self) -> list[dict]:
        return [_flat({k: v for k, v in w.items() if k != "type"})
                for w in WhatIfReport.to_json(self)["what_if"]]

    def summary(self) -> str:
        return (f"from {format_time(self.at_ms)} to {format_time(self.end_ms)}: "
                f"{len(self.items)} simulated log(s), "
                f"{len(self.recommendations)} recommendation(s)")


# -------------------------------------------------------------------------------- lists


class _ListResult(Result, list):
    """A result that is a list of the library's values (``for p in result`` as before)."""

    __slots__ = ()

    def _name(self) -> str:
        return type(self).__name__


class ProducersResult(_ListResult):
    """``segtools producers``' answer: one ``PartitionProducers`` per partition; one row per
    producer (id and epoch) in each."""

    __slots__ = ()
    row_kind: ClassVar[str] = "producer"

    def _rows(self) -> list[dict]:
        return [g.to_json() for r in self for g in r.producers.values()]

    def to_json(self) -> list[dict]:
        """The objects ``segtools producers --format jsonl`` prints, in its order."""
        out: list[dict] = []
        for r in self:
            out += [g.to_json() for g in r.producers.values()]
            out += [e.to_json() for e in r.events]
            out += [d.to_json() for d in r.duplicates]
        return out + [f.to_json() for f in self._findings()]

    def _findings(self) -> tuple[Finding, ...]:
        return tuple(f for r in self for f in r.findings)

    def summary(self) -> str:
        return (f"{len(self)} partition(s), {sum(len(r.producers) for r in self)} "
                f"producer(s), {sum(len(r.events) for r in self)} sequence event(s)")


class DivergeResult(_ListResult):
    """``segtools diverge``' answer: one ``ReplicaSet`` per partition held more than once;
    one row per replica."""

    __slots__ = ()
    row_kind: ClassVar[str] = "replica"

    def _rows(self) -> list[dict]:
        return [o for o in self.to_json() if o["type"] == "replica"]

    def to_json(self) -> list[dict]:
        """The objects ``segtools diverge --format jsonl`` prints, in its order."""
        out: list[dict] = []
        for rs in self:
            d, key = rs.divergence, rs.key
            out += [{"type": "replica", "partition": key, "replica": r.label,
                     "path": str(r.partition.path), "start_offset": r.start_offset,
                     "end_offset": r.end_offset, "batches": len(r.batches),
                     "latest_leader_epoch": r.latest_epoch,
                     "leader_epoch_checkpoint": [
                         {"epoch": e.epoch, "start_offset": e.start_offset}
                         for e in r.epochs]}
                    for r in d.replicas]
            out.append({**d.to_json(), "partition": key})
            out += [{**u.to_json("only_on"), "partition": key} for u in d.unique]
            out += [{**t.to_json(), "partition": key} for t in d.truncations]
            out += [f.to_json() for f in (*rs.read_findings, *d.findings)]
        return out

    def _findings(self) -> tuple[Finding, ...]:
        return tuple(f for rs in self for f in (*rs.read_findings, *rs.divergence.findings))

    def summary(self) -> str:
        diverged = sum(rs.divergence.status == "diverged" for rs in self)
        return f"{len(self)} partition(s) held more than once, {diverged} diverged"


class FindingsResult(_ListResult):
    """``segtools verify``'s answer: every ``Finding``; one row each."""

    __slots__ = ()
    row_kind: ClassVar[str] = "finding"

    def _rows(self) -> list[dict]:
        return self.to_json()

    def to_json(self) -> list[dict]:
        return [f.to_json() for f in self]

    def _findings(self) -> tuple[Finding, ...]:
        return tuple(self)

    def _repr_html_(self) -> str:
        return (f"<p><b>{html.escape(self._name())}</b>: {html.escape(self.summary())}</p>"
                + _html_table(self.to_json(), ("severity", "code", "path", "position",
                                               "offset", "message")))

    def summary(self) -> str:
        return f"{len(self)} finding(s)"


_REPORTS: tuple[tuple[type, type], ...] = (
    (RetentionReport, RetentionResult), (CompactionReport, CompactionResult),
    (TieredReport, TieredResult), (TransactionsReport, TransactionsResult),
    (OffsetsReplay, OffsetsResult), (WhatIfReport, WhatIfResult))


def as_result(report: Any) -> Any:
    """A library report in its notebook subclass (the same values)."""
    for base, face in _REPORTS:
        if type(report) is base:
            return _from(face, report)
    return report
