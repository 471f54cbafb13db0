"""The report's what-if section (``segtools report ... --what-if NAME=VALUE`` / ``--recommend``):
per topic, size on disk over time under today's config against the proposed one (a sawtooth
against a flat line, like a monitoring graph), the oldest record's age beside it with the
``retention.ms`` it should stay near, and the numbers of ``segtools retention --what-if`` in a
small table; each recommendation's sentence and its cost table.

Everything comes from :meth:`segtools.api.LogDirs.what_if` (the CLI's and the API's
simulation, :mod:`segtools.analysis.whatif`); this module only lays its results out for the
page: charts' points (the library's bounded series, ages computed as ``at - oldest record``),
sizes and durations written as the CLI writes them, and a budget of charted topics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from segtools.analysis.partition_input import Loaded
from segtools.analysis.simulation import Outcome
from segtools.analysis.whatif import (
    DEFAULT_HORIZON_DAYS,
    WhatIf,
    WhatIfReport,
    alternative_parts,
    changes_json,
    check_horizon,
    cost_label,
    exact_rows,
    shown_cost,
    table_rows,
    topic_notes,
    topic_sentence,
)
from segtools.api import LogDirs
from segtools.errors import SegtoolsError
from segtools.units import format_duration, format_time

SCRIPT = Path(__file__).resolve().parent / "assets" / "whatif.js"
#: Topics drawn with charts (those with a recommendation first, then the widest swing); the
#: others keep their row in the overview table.
CHARTED_TOPICS = 24


@dataclass(frozen=True, slots=True)
class Ask:
    """What the person asked for, as ``segtools retention``'s what-if options."""

    changes: Mapping[str, object] | None = None
    recommend: bool = False
    horizon_days: float = DEFAULT_HORIZON_DAYS
    ingest_bytes_per_s: float | None = None

    def __post_init__(self) -> None:
        if not self.changes and not self.recommend:
            raise SegtoolsError("the what-if section needs --what-if NAME=VALUE or --recommend")
        try:
            check_horizon(self.horizon_days)
        except ValueError as e:
            raise SegtoolsError(f"--horizon: {e}") from None


def script() -> str:
    """The section's chart script (inlined after uPlot; the page's policy lists its hash)."""
    text = SCRIPT.read_text(encoding="utf-8")
    if "</script" in text.lower():
        raise SegtoolsError("would end its inline element early", path=str(SCRIPT))
    return text


def section(logs: LogDirs, inputs: Loaded, now_ms: int, ask: Ask) -> dict:
    """Simulate ``inputs`` (the report's own partition inputs) as ``segtools retention
    --what-if`` does, and lay the result out for the page."""
    report = logs.what_if(dict(ask.changes) if ask.changes else None, at=now_ms,
                          horizon_days=ask.horizon_days,
                          ingest_bytes_per_s=ask.ingest_bytes_per_s, recommend=ask.recommend,
                          inputs=inputs)
    return from_report(report)


# --------------------------------------------------------------------------- layout


def _age(ms: int | None) -> str:
    return "-" if ms is None else format_duration(ms)


def _change_text(changes: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in changes_json(changes).items()) or "no change"


def rows(current: Outcome, proposed: Outcome) -> list[dict]:
    """The current-against-proposed table as ``segtools retention --what-if`` prints it (its
    rows, :func:`segtools.analysis.whatif.table_rows`); ``exact`` holds the numbers behind
    each shown value (the cell's tooltip, :func:`segtools.analysis.whatif.exact_rows`)."""
    # strict: a row added to the CLI's table needs its exact figures too
    return [{"label": label, "current": cur, "proposed": prop, "exact": list(ex)}
            for (label, cur, prop), ex in zip(table_rows(current, proposed),
                                              exact_rows(current, proposed), strict=True)]


def chart(w: WhatIf, retention_ms: int | None, retention_name: str = "retention.ms") -> dict:
    """Both runs on one time axis (uPlot's aligned data: x in seconds; a run's points where it
    has them, null elsewhere, the line spanning the gaps): bytes on disk, and the oldest
    record's age (``at - oldest record timestamp``; null while the log is empty)."""
    cur = {at: (size, oldest) for at, size, oldest in w.current.series}
    prop = {at: (size, oldest) for at, size, oldest in w.proposed.series}
    xs = sorted(cur.keys() | prop.keys())

    def col(points, i):
        out = []
        for x in xs:
            p = points.get(x)
            if p is None or p[i] is None:
                out.append(None)
            else:
                out.append(p[0] if i == 0 else x - p[1])
        return out

    return {"x": [x / 1000 for x in xs], "size": [col(cur, 0), col(prop, 0)],
            "age": [col(cur, 1), col(prop, 1)],
            "retention_ms": retention_ms if retention_ms is not None and retention_ms >= 0
            else None, "retention_name": retention_name}


def _cost_rows(cost: Mapping[str, Mapping]) -> list[dict]:
    before, after = cost.get("before", {}), cost.get("after", {})
    return [{"label": cost_label(k), "before": shown_cost(k, before[k]),
             "after": shown_cost(k, after[k]) if k in after else "-"} for k in before]


def _alternative(a) -> dict:
    """Another change that also keeps the promise (a recommendation's ``alternatives``), as
    the CLI's ``also keeps it:`` line says it."""
    shown, does = alternative_parts(a)
    return {"change_text": _change_text(a.changes), "shown": shown, "text": does}


def from_report(report: WhatIfReport, charted: int = CHARTED_TOPICS) -> dict:
    """The section's document: one entry per topic (the CLI's sentence and notes, so a page
    read alone says why nothing is recommended, a history too short or the replay cap
    binding; its table, its chart when within the budget, its recommendation), and what was
    asked."""
    recs = {r.topic: r for r in report.recommendations}
    topics = []
    for w in report.items:
        if w.partition is not None:
            continue
        rec = recs.get(w.topic)
        topics.append({
            "topic": w.topic, "changes": changes_json(w.changes),
            "change_text": _change_text(w.changes),
            "rows": rows(w.current, w.proposed), "chart": None,
            "sentence": topic_sentence(w), "notes": topic_notes(report, w),
            "partitions": sum(1 for x in report.items
                              if x.topic == w.topic and x.partition is not None),
            "retention_ms": report.retention_ms.get(w.topic),
            "recommendation": None if rec is None else {
                "why": rec.why, "changes": changes_json(rec.changes),
                "change_text": _change_text(rec.changes), "cost": _cost_rows(rec.cost),
                "alternatives": [_alternative(a) for a in getattr(rec, "alternatives", ())]},
            "_w": w})
    # the recommendations in the CLI's order, then the widest swing
    order = {r.topic: i for i, r in enumerate(report.recommendations)}
    ranked = sorted(topics, key=lambda t: (order.get(t["topic"], len(order)),
                                           -t["_w"].current.swing, t["topic"]))
    for t in ranked[:charted]:
        t["chart"] = chart(t["_w"], t["retention_ms"],
                           report.retention_names.get(t["topic"], "retention.ms"))
    for t in topics:
        del t["_w"]
    return {"at": report.at_ms, "at_iso": format_time(report.at_ms), "until": report.end_ms,
            "until_iso": format_time(report.end_ms),
            "ingest": f"from the segments on disk; {report.ingest.describe()}",
            "topics": ranked,
            "charts_left_out": max(len(topics) - charted, 0)}
