"""``segtools retention``: would Kafka's delete policy remove each segment at ``--at``, and why.

For every partition under PATH: the effective topic config and where each value came from,
the high watermark and log start offset (from the log dir's checkpoints, or what was assumed),
and per segment its offsets, size, largest timestamp and its source (time index, log scan, or
file mtime), age, verdict, reason and the earliest time it becomes deletable. Rules mirror
the broker's (``UnifiedLog.deleteOldSegments``). ``--forecast DAYS``
projects, with no new data, when each segment goes; ``--plot FILE.png|FILE.html`` draws it.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterable, Mapping
from functools import partial

from segtools.analysis.explain import (
    DAY_MS,
    RetentionExplained,
    high_watermark_source,
    log_start_offset_source,
    shown_retention,
    streamed_retention,
)
from segtools.analysis.forecast import Forecast
from segtools.analysis.partition_input import Skipped
from segtools.analysis.retention import AWAITING_REMOTE_COPY
from segtools.analysis.tiered import RemoteVerdict
from segtools.cli import explain, render, whatif
from segtools.cli.common import add_command, clock_note, exit_code, moment, moment_line, progress
from segtools.cli.explain import config_line, plan, plan_roots
from segtools.cli.table import Column, Lines, terminal_width
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.units import format_bytes, format_duration, format_time

EXAMPLES = """examples:
  segtools retention /var/kafka-logs
  segtools retention /var/kafka-logs/orders-0 --at 2024-03-01T12:00Z
  segtools retention /var/kafka-logs/orders-0 --retention-ms 86400000
  segtools retention /var/kafka-logs --config orders-configs.txt --format json
  segtools retention /var/kafka-logs/orders-0 --forecast 10 --plot orders.png
  segtools retention /var/kafka-logs --what-if segment.bytes=134217728
  segtools retention /var/kafka-logs --recommend --plot whatif.png

--config FILE takes Java properties or what "kafka-configs --describe [--all]" prints
(sections "Dynamic configs for topic X are:" apply to topic X; broker log.* names work too).
"""

def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "retention", "explain which segments retention deletes, and why",
                    __doc__, EXAMPLES)
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
    if args.format != "json" and not args.plot:  # the workers list the partitions
        planned, total = plan_roots(args), None
    else:
        planned, total = plan(args)
    now = moment(args)
    days = args.forecast if args.forecast is not None else (14.0 if args.plot else None)
    out = sys.stdout  # taken before a progress bar may stand in for it
    text = args.format != "json"
    say = Lines(out, terminal_width(out))
    if text:
        print_head(say, planned.config_sources, moment_line(args, now), clock_note(args, now))
    # each partition is shown as it is explained, while the workers read the next ones; a
    # bar on the terminal the text scrolls on would only be torn by it
    with progress(total, "summarising", quiet=args.quiet or (text and out.isatty())) \
            as advance:
        if text and not args.plot:  # the workers render: this process only writes
            tail = shown_retention(planned, partial(rendered, say.width), now_ms=now,
                                   forecast_days=days, deep=not args.no_deep,
                                   limit=args.max_decompressed_bytes, advance=advance,
                                   write=out.write)
        else:
            loaded, report = streamed_retention(
                planned, now_ms=now, forecast_days=days, deep=not args.no_deep,
                limit=args.max_decompressed_bytes, advance=advance,
                each=partial(print_partition, say) if text else lambda e: None)
    if text and not args.plot:
        print_tail(say, tail.skipped, tail.topics, tail.findings, None)
        return exit_code(tail.findings)
    if args.plot:
        try:  # matplotlib is heavy (and optional): imported only when a picture is wanted
            from segtools.cli import plot
        except ImportError as e:
            raise SegtoolsError(f"--plot needs matplotlib ({e.name} is not installed)") \
                from None
        until = now + int(days * DAY_MS)
        plot.write(args.plot, report.partitions, report.topics, now_ms=now, until_ms=until)
    if text:
        print_tail(say, loaded.skipped, report.topics, report.findings, args.plot)
    else:
        out.write(render.dumps(report.to_json(args.plot)))
        out.write("\n")
    return exit_code(report.findings)


# --------------------------------------------------------------------------- text


#: The segment table's columns (docs/cli.md, "Text tables"): the partition on every row, so
#: ``grep DELETE`` says which partition loses which segment.
SEGMENT_COLUMNS = (Column("partition"), Column("segment"), Column("size", right=True),
                   Column("largest timestamp (source)", width=32),
                   Column("age", right=True), Column("verdict", width=6),
                   Column("eligible at", width=20), Column("reason"))
REMOTE_COLUMNS = (Column("partition"), Column("remote offsets"), Column("size", right=True),
                  Column("newest record", width=20), Column("state"), Column("verdict", width=6),
                  Column("reason"))
FORECAST_COLUMNS = (Column("when", width=20), Column("partition"),
                    Column("segments deleted"), Column("freed", right=True),
                    Column("topic size after", right=True))


def print_head(say: Lines, config_sources: tuple[str, ...], clock: str,
               note: str | None = None) -> None:
    say(f"retention {clock}; config from: "
        f"{', '.join(config_sources) or 'Kafka defaults only'}")
    if note:
        say(note)


def print_tail(say: Lines, skipped: Iterable[Skipped], topics: Mapping[str, Forecast],
               findings: Iterable[Finding], plot_path: str | None) -> None:
    """What follows the partitions: the skipped ones, the topics' forecasts, the findings."""
    for s in skipped:
        say(f"skipped {s.path}: {s.reason}")
    for name, fc in topics.items():
        print_forecast(say, name, fc)
    for f in findings:  # what the exit code counts, the remote tier's included
        if f.severity != "info":
            say(f"{f.severity.upper()} {f.code} {f.path}: {f.message}")
    if plot_path:
        say(f"plot written to {plot_path}")


def rendered(width: int | None, e: RetentionExplained) -> str:
    """One partition's text as :func:`print_partition` prints it at ``width``, as a string
    (made in a worker, written by the parent)."""
    buf = io.StringIO()
    print_partition(Lines(buf, width), e)
    return buf.getvalue()


def print_partition(say: Lines, e: RetentionExplained) -> None:
    pi, pr = e.input, e.retention
    label = render.terminal_safe(pi.label)
    say()
    say(f"{pi.label}  {pi.dir.path}")
    names = ("cleanup.policy", "retention.ms", "retention.bytes")
    if pr.config.remote_storage_enable:
        names += ("remote.storage.enable", "local.retention.ms", "local.retention.bytes",
                  "remote.log.copy.disable")
    say(config_line(pr.config, names), "  ")
    say(f"high watermark {pr.high_watermark} ({high_watermark_source(pi)}) · "
        f"log start offset {pr.log_start_offset} ({log_start_offset_source(pi)}) · "
        f"log end offset {pr.log_end_offset} · {format_bytes(pr.size)} in "
        f"{len(pr.segments)} segment(s), {format_bytes(pr.deletable_bytes)} deletable", "  ")
    waiting = next((v.base_offset for v in pr.segments if v.reason == AWAITING_REMOTE_COPY),
                   None)
    with say.table(SEGMENT_COLUMNS) as table:
        for v in pr.segments:
            eligible = "after the copy" if v.eligible_at is None and waiting is not None and \
                v.base_offset >= waiting else format_time(v.eligible_at)
            last = "" if v.last_offset is None else v.last_offset
            reason = f"{v.reason}: {v.reason_text}"
            if v.stale and v.stale.count:
                reason += (f"; holds {v.stale.count} records older than retention "
                           f"({format_bytes(v.stale.bytes)})")
            table.add(label, render.terminal_safe(
                          f"@{v.base_offset}..{last}" + (" (active)" if v.is_active else "")),
                      format_bytes(v.size),
                      f"{format_time(v.max_timestamp)} ({v.max_timestamp_source})",
                      format_duration(v.age_ms), "DELETE" if v.deletable else "keep",
                      eligible, render.terminal_safe(reason))
    if e.remote:
        print_remote(say, label, e.remote)
    for c in pr.callouts:
        say(f"! {c.code}: {c.message}", "  ")
    if e.forecast is not None and e.forecast.steps:
        say(f"forecast: {format_bytes(e.forecast.start_size)} now -> "
            f"{format_bytes(e.forecast.end_size)} at {format_time(e.forecast.settled_ms)} "
            f"({len(e.forecast.steps)} step(s); nothing changes after it until "
            f"{format_time(e.forecast.end_ms)})", "  ")


def print_remote(say: Lines, label: str, remote: tuple[RemoteVerdict, ...]) -> None:
    """The remote tier's segments and what the expiration task does with them."""
    say("remote segments (__remote_log_metadata):", "  ")
    with say.table(REMOTE_COLUMNS) as table:
        for v in remote:
            s = v.segment
            table.add(label, f"{s.start_offset}..{s.end_offset}", format_bytes(s.size_in_bytes),
                      format_time(s.max_timestamp_ms), s.state,
                      "DELETE" if v.deletable else "keep",
                      render.terminal_safe(f"{v.reason}: {v.reason_text}"))


def print_forecast(say: Lines, topic: str, fc: Forecast) -> None:
    say()
    say(f"forecast for topic {topic}, no new data, {format_time(fc.start_ms)} -> "
        f"{format_time(fc.end_ms)}: {format_bytes(fc.start_size)} -> "
        f"{format_bytes(fc.end_size)}")
    if not fc.steps:
        say("nothing is deleted in this window", "  ")
        return
    with say.table(FORECAST_COLUMNS) as table:
        for s in fc.steps:
            table.add(format_time(s.at_ms), render.terminal_safe(s.label),
                      render.terminal_safe(", ".join(f"@{b}" for b in s.removed)),
                      format_bytes(s.removed_bytes), format_bytes(s.size_after))
