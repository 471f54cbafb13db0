"""``segtools retention PATH --what-if NAME=VALUE[,...]`` and ``--recommend``: the topic under
another config, simulated (:mod:`segtools.analysis.whatif`), said in a sentence and a small
table per topic, or as ``what_if`` / ``recommendation`` JSON objects."""

from __future__ import annotations

import argparse
import sys

from rich.table import Table

from segtools.analysis.simulation import Ingest, Outcome
from segtools.analysis.whatif import (
    DEFAULT_HORIZON_DAYS,
    WhatIf,
    WhatIfReport,
    changes_json,
    parse_changes,
    what_if_report,
)
from segtools.cli import render
from segtools.cli.common import collector_paused, exit_code
from segtools.cli.explain import console, load, now_ms, safe
from segtools.errors import SegtoolsError
from segtools.units import format_bytes, format_duration, format_time


def _changes(text: str) -> dict:
    try:
        return parse_changes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _ingest(text: str) -> Ingest:
    if text == "auto":
        return Ingest()
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("auto or a rate in bytes per second") from None
    if not 0 < rate < 1e15:
        raise argparse.ArgumentTypeError("BYTES_PER_S must be positive")
    return Ingest(rate)


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "what if", "simulate Kafka's log lifecycle (rolls, retention checks, the cleaner) over "
                   "the partitions' own history and a replay of it, under today's config and "
                   "a proposed one")
    g.add_argument("--what-if", type=_changes, metavar="NAME=VALUE[,NAME=VALUE...]",
                   help="the proposed config change, e.g. segment.bytes=134217728")
    g.add_argument("--recommend", action="store_true",
                   help="find the smallest segment.bytes or segment.ms change (and for "
                        "compact,delete topics min.compaction.lag.ms, "
                        "min.cleanable.dirty.ratio or max.compaction.lag.ms) that keeps the "
                        "oldest record near retention.ms, with its cost")
    g.add_argument("--horizon", type=float, default=DEFAULT_HORIZON_DAYS, metavar="DAYS",
                   help=f"days to simulate after --at (default {DEFAULT_HORIZON_DAYS:g})")
    g.add_argument("--ingest", type=_ingest, default=Ingest(), metavar="auto|BYTES_PER_S",
                   help="future appends: auto replays each partition's observed batches; a "
                        "number is a topic's rate in bytes/s (split over its partitions)")


def wanted(args: argparse.Namespace) -> bool:
    return bool(args.what_if or args.recommend)


def run(args: argparse.Namespace) -> int:
    if not 0 < args.horizon <= 3650:
        raise SegtoolsError("--horizon DAYS must be between 0 and 3650")
    if args.plot and not args.plot.lower().endswith((".png", ".html", ".htm")):
        raise SegtoolsError("--plot needs a .png or .html file name", path=args.plot)
    loaded = load(args)
    now = now_ms(args)
    report = what_if_report(loaded, args.what_if, now_ms=now, horizon_days=args.horizon,
                            ingest=args.ingest, recommend=args.recommend,
                            limit=args.max_decompressed_bytes)
    if args.plot:
        try:
            from segtools.cli import whatif_plot
        except ImportError as e:
            raise SegtoolsError(f"--plot needs matplotlib ({e.name} is not installed)") \
                from None
        whatif_plot.write(args.plot, report)
    if args.format == "json":
        # the document is a tree of many small lists (every series row) with nothing cyclic
        # in it: the cyclic collector would only walk it again and again while it is built
        with collector_paused():
            doc = report.to_json()
            doc["plot"] = args.plot
            text = render.dumps(doc)
        sys.stdout.write(text)
        sys.stdout.write("\n")
    else:
        print_what_if(report, args.plot)
    return exit_code(loaded.findings)


# --------------------------------------------------------------------------- text


def _age(ms: int | None) -> str:
    return "-" if ms is None else format_duration(ms)


def sentence(w: WhatIf) -> str:
    """One line a person can repeat: what the change does to the size and the oldest record."""
    change = ", ".join(f"{k}={v}" for k, v in changes_json(w.changes).items()) or "no change"
    c, p = w.current, w.proposed
    return (f"topic {w.topic}: with {change}, the size moves between "
            f"{format_bytes(p.trough_bytes)} and {format_bytes(p.peak_bytes)} "
            f"(today {format_bytes(c.trough_bytes)}..{format_bytes(c.peak_bytes)}) and the "
            f"oldest record is at most {_age(p.oldest_age_ms_max)} old (today "
            f"{_age(c.oldest_age_ms_max)})")


def _rows(c: Outcome, p: Outcome) -> list[tuple[str, str, str]]:
    return [("peak size", format_bytes(c.peak_bytes), format_bytes(p.peak_bytes)),
            ("trough size", format_bytes(c.trough_bytes), format_bytes(p.trough_bytes)),
            ("swing", f"{100 * c.swing:.0f}%", f"{100 * p.swing:.0f}%"),
            ("oldest record, max", _age(c.oldest_age_ms_max), _age(p.oldest_age_ms_max)),
            ("oldest record, end", _age(c.oldest_age_ms_end), _age(p.oldest_age_ms_end)),
            ("segments, most at once", str(c.segments_max), str(p.segments_max)),
            ("rolls / deletions", f"{c.rolls} / {c.deletions}", f"{p.rolls} / {p.deletions}")]


def print_what_if(report: WhatIfReport, plot_path: str | None) -> None:
    """Per topic: the sentence and a current-vs-proposed table; then the recommendations."""
    out = console()
    rate = report.ingest.bytes_per_s
    out.print(safe(f"what-if from {format_time(report.at_ms)} to "
                   f"{format_time(report.end_ms)}, ingest "
                   f"{'replayed history' if rate is None else f'{rate:g} B/s per topic'}"))
    for w in report.items:
        if w.partition is not None:
            continue
        out.print()
        out.print(safe(sentence(w)), style="bold")
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for col in ("", "current", "proposed"):
            table.add_column(col, justify="left" if not col else "right")
        for row in _rows(w.current, w.proposed):
            table.add_row(*row)
        out.print(table)
    for r in report.recommendations:
        out.print()
        out.print(safe("recommendation: " + r.why), style="bold")
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for col in ("cost", "before", "after"):
            table.add_column(col, justify="left" if col == "cost" else "right")
        before, after = r.cost["before"], r.cost["after"]
        for key in before:
            table.add_row(key.replace("_", " "), str(before[key]), str(after[key]))
        out.print(table)
        for a in r.alternatives:
            change = ", ".join(f"{k}={v}" for k, v in changes_json(a.changes).items())
            after = a.cost["after"]
            cleaner = (f", {after['cleaner_passes']} cleaner passes reading "
                       f"{format_bytes(after['cleaner_bytes_read'])}"
                       if "cleaner_passes" in after else "")
            out.print(safe(f"  also keeps it: {change} (oldest record at most "
                           f"{_age(a.proposed.oldest_age_ms_max)}, swing "
                           f"{100 * a.proposed.swing:.0f}%, segments at most "
                           f"{a.proposed.segments_max}{cleaner})"))
    if plot_path:
        out.print(safe(f"plot written to {plot_path}"))
