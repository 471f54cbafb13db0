"""``segtools retention PATH --what-if NAME=VALUE[,...]`` and ``--recommend``: the topic under
another config, simulated (:mod:`segtools.analysis.whatif`), said in a sentence and a small
table per topic, or as ``what_if`` / ``recommendation`` JSON objects."""

from __future__ import annotations

import argparse
import sys

from rich.table import Table

from segtools.analysis.simulation import Ingest
from segtools.analysis.whatif import (
    DEFAULT_HORIZON_DAYS,
    WhatIfReport,
    alternative_parts,
    check_horizon,
    cost_label,
    parse_changes,
    parse_ingest,
    shown_cost,
    table_rows,
    topic_notes,
    topic_sentence,
    what_if_report,
)
from segtools.cli import render
from segtools.cli.common import collector_paused, exit_code, moment
from segtools.cli.explain import console, load, safe
from segtools.errors import SegtoolsError
from segtools.units import format_time


def _changes(text: str) -> dict:
    try:
        return parse_changes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _ingest(text: str) -> Ingest:
    try:
        return parse_ingest(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "what if", "simulate Kafka's log lifecycle (rolls, retention checks, the cleaner) from "
                   "the segments on disk at --at and each partition's recent ingest, under "
                   "today's config and a proposed one")
    g.add_argument("--what-if", type=_changes, metavar="NAME=VALUE[,NAME=VALUE...]",
                   help="the proposed config change, e.g. segment.bytes=134217728")
    g.add_argument("--recommend", action="store_true",
                   help="find the smallest segment.bytes or segment.ms change (and for "
                        "compact,delete topics min.compaction.lag.ms, "
                        "min.cleanable.dirty.ratio or max.compaction.lag.ms) that keeps the "
                        "oldest record near retention.ms, with its cost")
    g.add_argument("--horizon", type=float, metavar="DAYS",
                   help=f"days to simulate after --at (default {DEFAULT_HORIZON_DAYS:g})")
    g.add_argument("--ingest", type=_ingest, metavar="auto|BYTES_PER_S",
                   help="future appends: auto repeats each partition's last day of history "
                        "(its recent rate and shape); a number respaces it to a topic's rate "
                        "in bytes/s (split over its partitions)")


def wanted(args: argparse.Namespace) -> bool:
    """Whether the command simulates. ``--horizon`` and ``--ingest`` shape a simulation only,
    so given without ``--what-if`` or ``--recommend`` they are refused rather than ignored:
    an SRE who typed ``--horizon 60`` expects sixty days of something."""
    asked = bool(args.what_if or args.recommend)
    if not asked:
        given = [name for name, value in (("--horizon", args.horizon),
                                          ("--ingest", args.ingest)) if value is not None]
        if given:
            raise SegtoolsError(f"{' and '.join(given)} without --what-if or --recommend: "
                                f"nothing to simulate (give --what-if NAME=VALUE or "
                                f"--recommend)")
    return asked


def horizon(args: argparse.Namespace) -> float:
    """``--horizon`` (the default when not given), checked by the library's one rule (a face
    adds only the option's name)."""
    days = DEFAULT_HORIZON_DAYS if args.horizon is None else args.horizon
    try:
        return check_horizon(days)
    except ValueError as e:
        raise SegtoolsError(f"--horizon: {e}") from None


def ingest(args: argparse.Namespace) -> Ingest:
    """``--ingest``, or each partition's recent history when not given."""
    return parse_ingest(args.ingest)


def run(args: argparse.Namespace) -> int:
    days = horizon(args)
    if args.forecast is not None:
        raise SegtoolsError("--forecast projects today's segments with no new data; the what-if "
                            "simulates its own horizon: give --horizon DAYS instead")
    if args.plot and not args.plot.lower().endswith((".png", ".html", ".htm")):
        raise SegtoolsError("--plot needs a .png or .html file name", path=args.plot)
    loaded = load(args)
    now = moment(args)
    report = what_if_report(loaded, args.what_if, now_ms=now, horizon_days=days,
                            ingest=ingest(args), recommend=args.recommend,
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


def _line(out, text: str, **style) -> None:
    """A sentence on one line: in a pipe every row is one line (docs/cli.md), and a terminal
    wraps it where it ends."""
    out.print(safe(text), soft_wrap=True, **style)


def print_what_if(report: WhatIfReport, plot_path: str | None) -> None:
    """Per topic: the sentence and a current-vs-proposed table; then the recommendations."""
    out = console()
    _line(out, f"what-if from {format_time(report.at_ms)} to {format_time(report.end_ms)}, "
               f"starting from the segments on disk; ingest: {report.ingest.describe()}")
    for w in report.items:
        if w.partition is not None:
            continue
        out.print()
        _line(out, topic_sentence(w), style="bold")
        for note in topic_notes(report, w):
            _line(out, f"  {note}")
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for col in ("", "current", "proposed"):
            table.add_column(col, justify="left" if not col else "right")
        for row in table_rows(w.current, w.proposed):
            table.add_row(*row)
        out.print(table)
    for r in report.recommendations:
        out.print()
        _line(out, "recommendation: " + r.why, style="bold")
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for col in ("cost", "before", "after"):
            table.add_column(col, justify="left" if col == "cost" else "right")
        before, after = r.cost["before"], r.cost["after"]
        for key in before:
            table.add_row(cost_label(key), shown_cost(key, before[key]),
                          shown_cost(key, after[key]))
        out.print(table)
        for a in r.alternatives:
            change, does = alternative_parts(a)
            _line(out, f"  also keeps it: {change} ({does})")
    if plot_path:
        _line(out, f"plot written to {plot_path}")
