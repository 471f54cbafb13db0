"""``segtools retention``: would Kafka's delete policy remove each segment at ``--at``, and why.

For every partition under PATH: the effective topic config and where each value came from,
the high watermark and log start offset (from the log dir's checkpoints, or what was assumed),
and per segment its offsets, size, largest timestamp and its source (time index, log scan, or
file mtime), age, verdict, reason and the earliest time it becomes deletable. Rules mirror
``UnifiedLog.deleteOldSegments`` (see ``segtools.analysis.retention``). ``--forecast DAYS``
projects, with no new data, when each segment goes; ``--plot FILE.png|FILE.html`` draws it.
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from segtools.analysis.explain import (
    DAY_MS,
    RetentionExplained,
    RetentionReport,
    deep_bytes,
    high_watermark_source,
    log_start_offset_source,
    retention_report,
    verdicts,
)
from segtools.analysis.forecast import Forecast
from segtools.analysis.partition_input import Loaded
from segtools.cli import explain, render, whatif
from segtools.cli.common import exit_code, progress
from segtools.cli.explain import config_line, console, load, now_ms, safe
from segtools.errors import SegtoolsError
from segtools.units import format_bytes, format_duration, format_time

EXAMPLES = """examples:
  segtools retention /var/kafka-logs
  segtools retention /var/kafka-logs/orders-0 --at 2024-03-01T12:00Z --retention-ms 86400000
  segtools retention /var/kafka-logs --config orders-configs.txt --format json | jq .
  segtools retention /var/kafka-logs/orders-0 --forecast 10 --plot orders.png
  segtools retention /var/kafka-logs --what-if segment.bytes=134217728 --horizon 30
  segtools retention /var/kafka-logs --recommend --plot whatif.png

--config FILE takes Java properties or what `kafka-configs --describe [--all]` prints
(sections "Dynamic configs for topic X are:" apply to topic X; broker log.* names work too).
"""

def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("retention", help="explain which segments retention deletes, and why",
                       description=__doc__, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    explain.add_arguments(p)
    p.add_argument("--forecast", type=float, metavar="DAYS",
                   help="project sizes with no new data for DAYS days after --at")
    p.add_argument("--plot", metavar="FILE",
                   help="draw the forecast (and why) to FILE.png or FILE.html "
                        "(implies --forecast 14 when not given)")
    p.add_argument("--no-deep", action="store_true",
                   help="skip reading record timestamps of kept segments (the count of "
                        "records older than retention that they still hold)")
    whatif.add_arguments(p)
    p.set_defaults(run=run)


# --------------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> int:
    if whatif.wanted(args):
        return whatif.run(args)
    if args.plot and not args.plot.lower().endswith((".png", ".html", ".htm")):
        raise SegtoolsError("--plot needs a .png or .html file name", path=args.plot)
    if args.forecast is not None and not 0 < args.forecast <= 36500:
        raise SegtoolsError("--forecast DAYS must be between 0 and 36500")
    loaded = load(args)
    now = now_ms(args)
    days = args.forecast if args.forecast is not None else (14.0 if args.plot else None)
    found = verdicts(loaded, now)
    deep = 0 if args.no_deep else deep_bytes(found)
    with progress(deep, "reading record timestamps", quiet=args.quiet) as advance:
        report = retention_report(loaded, now_ms=now, forecast_days=days,
                                  deep=not args.no_deep, limit=args.max_decompressed_bytes,
                                  found=found, advance=advance)
    if args.plot:
        try:  # matplotlib is heavy (and optional): imported only when a picture is wanted
            from segtools.cli import plot
        except ImportError as e:
            raise SegtoolsError(f"--plot needs matplotlib ({e.name} is not installed)") \
                from None
        until = now + int(days * DAY_MS)
        plot.write(args.plot, report.partitions, report.topics, now_ms=now, until_ms=until)
    if args.format == "json":
        sys.stdout.write(render.dumps(report.to_json(args.plot)))
        sys.stdout.write("\n")
    else:
        print_text(loaded, report, args.plot)
    return exit_code(loaded.findings)


# --------------------------------------------------------------------------- text


_VERDICT_STYLE = {True: "bold red", False: "green"}


def print_text(loaded: Loaded, report: RetentionReport, plot_path: str | None) -> None:
    now = report.at_ms
    out = console()
    out.print(safe(f"retention at {format_time(now)} ({now} ms); config from: "
                   f"{', '.join(loaded.config_sources) or 'Kafka defaults only'}"))
    for e in report.partitions:
        print_partition(out, e)
    for s in loaded.skipped:
        out.print(safe(f"skipped {s.path}: {s.reason}"), style="dim")
    for name, fc in report.topics.items():
        print_forecast(out, name, fc)
    for f in loaded.findings:
        if f.severity != "info":
            out.print(safe(f"{f.severity.upper()} {f.code} {f.path}: {f.message}"))
    if plot_path:
        out.print(safe(f"plot written to {plot_path}"))


def print_partition(out: Console, e: RetentionExplained) -> None:
    pi, pr = e.input, e.retention
    out.print()
    out.print(Text.assemble((render.terminal_safe(pi.label), "bold"), "  ",
                            (render.terminal_safe(str(pi.dir.path)), "dim")))
    out.print(safe("  " + config_line(pr.config, ("cleanup.policy", "retention.ms",
                                                  "retention.bytes"))))
    out.print(safe(f"  high watermark {pr.high_watermark} ({high_watermark_source(pi)}) · "
                   f"log start offset {pr.log_start_offset} ({log_start_offset_source(pi)}) · "
                   "log end offset "
                   f"{pr.log_end_offset} · {format_bytes(pr.size)} in {len(pr.segments)} "
                   f"segment(s), {format_bytes(pr.deletable_bytes)} deletable"))
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col, kw in (("segment", {"no_wrap": True}), ("size", {"justify": "right"}),
                    ("largest timestamp (source)", {"no_wrap": True}),
                    ("age", {"justify": "right", "no_wrap": True}), ("verdict", {}),
                    ("eligible at", {"no_wrap": True}), ("reason", {"ratio": 1})):
        table.add_column(col, **kw)
    for v in pr.segments:
        last = "" if v.last_offset is None else v.last_offset
        reason = Text.assemble((v.reason, "bold"), "\n", (v.reason_text, "dim"))
        if v.stale and v.stale.count:
            reason.append(f"\nholds {v.stale.count} records older than retention "
                          f"({format_bytes(v.stale.bytes)})", style="yellow")
        table.add_row(
            safe(f"@{v.base_offset}..{last}" + (" (active)" if v.is_active else "")),
            format_bytes(v.size), f"{format_time(v.max_timestamp)} ({v.max_timestamp_source})",
            format_duration(v.age_ms),
            Text("DELETE" if v.deletable else "keep", style=_VERDICT_STYLE[v.deletable]),
            format_time(v.eligible_at), reason)
    out.print(table)
    for c in pr.callouts:
        out.print(Text.assemble(("  ! ", "yellow"), (c.code, "bold"), ": ",
                                render.terminal_safe(c.message)))
    if e.forecast is not None and e.forecast.steps:
        out.print(safe(f"  forecast: {format_bytes(e.forecast.start_size)} now -> "
                       f"{format_bytes(e.forecast.end_size)} at "
                       f"{format_time(e.forecast.end_ms)} ({len(e.forecast.steps)} step(s))"))


def print_forecast(out: Console, topic: str, fc: Forecast) -> None:
    out.print()
    out.print(safe(f"forecast for topic {topic}, no new data, {format_time(fc.start_ms)} -> "
                   f"{format_time(fc.end_ms)}: {format_bytes(fc.start_size)} -> "
                   f"{format_bytes(fc.end_size)}"), style="bold")
    if not fc.steps:
        out.print(safe("  nothing is deleted in this window"))
        return
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col in ("when", "partition", "segments deleted", "freed", "topic size after"):
        table.add_column(col)
    for s in fc.steps:
        table.add_row(format_time(s.at_ms), safe(s.label),
                      safe(", ".join(f"@{b}" for b in s.removed)),
                      format_bytes(s.removed_bytes), format_bytes(s.size_after))
    out.print(table)
