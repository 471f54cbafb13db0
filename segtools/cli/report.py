"""``segtools report``: one self-contained HTML page about a tree, to look at and to share.

Runs what the other commands run (verify, retention with a forecast, compaction, transactions,
offsets, diverge, producers, scan's version evidence) over PATH and writes one HTML file:
styles, scripts (the uPlot charts) and data inlined, so it opens from disk with no network
and fetches nothing. A summary of the tree and every finding (sortable, filterable), then per
partition its segments, retention verdicts with the size forecast, compaction state,
transactions (hanging first), producers and first and last records; consumer groups' offset
timelines with regressions marked; replica divergence. Large trees are summarised (and the
page says what it left out). ``--redact`` replaces keys, values, headers (and topic names)
by keyed tokens, and the page says so. The first and last records are decoded as ``dump
--decode`` decodes them: with the tree's own ``_schemas`` topic, or with what ``--schemas``,
``--schema-registry`` and ``--decode MODE`` name (the schemas section names each schema's
source). ``--what-if NAME=VALUE`` and/or ``--recommend`` (with
``--horizon`` and ``--ingest``, as on ``segtools retention``) add a what-if section: per topic,
size and oldest record over time under today's config against the proposed one.

Prints the report's path on stdout. Exit status as every command: 0 nothing to report, 1
findings at warning or error (the report is written either way), 2 could not run.
"""

from __future__ import annotations

import argparse
import functools
import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from segtools.cli import decoding, whatif
from segtools.cli.common import (
    add_at,
    add_command,
    add_decompress_limit,
    add_paths,
    add_quiet,
    add_redact,
    collector_paused,
    exit_code,
    refuse_under_log_dir,
)
from segtools.errors import SegtoolsError
from segtools.findings import Finding

if TYPE_CHECKING:
    from segtools.payloads.decoder import PayloadDecoder

EXAMPLES = """examples:
  segtools report /var/kafka-logs -o incident.html
  segtools report broker-1/ broker-2/ -o incident.html --at 2024-05-01T14:00Z
  segtools report /var/kafka-logs -o for-vendor.html --redact keys,values,topics
  segtools report /var/kafka-logs -o what-if.html --recommend
  segtools report /var/kafka-logs -o r.html --schemas /backup/kafka-logs
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "report", "one self-contained HTML report of a tree, to share",
                    __doc__, EXAMPLES)
    add_paths(p, "log dirs, partition dirs, or directories of log-dir copies")
    p.add_argument("-o", "--output", required=True, metavar="FILE.html",
                   help="where to write the report (never inside a log dir)")
    add_at(p, "the moment retention and compaction are evaluated at: epoch ms or "
              "ISO-8601 (default: now)")
    p.add_argument("--config", metavar="FILE",
                   help="topic configs: properties, or kafka-configs --describe output")
    add_redact(p)
    add_decompress_limit(p)
    add_quiet(p)
    decoding.add_decode(p)  # the samples decoded as segtools dump --decode shows them
    whatif.add_arguments(p)  # a what-if section, as segtools retention --what-if/--recommend
    p.set_defaults(run=run)


def check_output(output: str, log_dirs) -> Path:
    """The output path, refused when it would land inside a log dir that was read
    (docs/architecture.md §4: segtools never writes under a log dir) or is not an .html."""
    out = Path(output)
    if out.suffix.lower() not in (".html", ".htm"):
        raise SegtoolsError("the report is HTML: give a .html file name", path=output)
    if out.is_dir():
        raise SegtoolsError("is a directory", path=output)
    where = Path(os.path.realpath(out.parent if str(out.parent) else "."))
    for d in log_dirs:
        root = Path(os.path.realpath(d.path))
        if where == root or root in where.parents:
            raise SegtoolsError(f"is inside the log dir {d.path}: segtools never writes "
                                "under a log dir", path=output)
    if not where.is_dir():
        raise SegtoolsError("its directory does not exist", path=output)
    return refuse_under_log_dir(out)


def sample_decoder(args: argparse.Namespace, log_dirs, findings: list[Finding]
                   ) -> PayloadDecoder | None:
    """The samples' decoder when ``--decode``, ``--schemas`` or ``--schema-registry`` asks
    for one: ``dump --decode``'s (one function, so a source that cannot be read is the same
    error line), in ``--decode``'s mode, else ``schema`` (a report always decodes its samples
    when it has schemas). None: the report decodes with the tree's own ``_schemas`` topic,
    when it holds one, and says nothing about it."""
    if args.decode is None and not args.schemas and args.schema_registry is None:
        args.schema_notes = []
        return None
    if args.decode is None:
        args.decode = "schema"
    return decoding.payload_decoder(args, log_dirs, findings)


def write_beside(out: Path, html: str) -> None:
    """Write the page to a new file beside ``out``, then rename it over ``out``: a reader
    never sees half a page. The file is created with mode 0666 for the kernel to apply the
    umask (and a directory's default ACL), as any file a user makes: the page holds record
    samples, so whoever set a strict umask gets a private report. Never through a link."""
    directory = out.parent if str(out.parent) else Path(".")
    tmp = directory / f".segtools-report-{secrets.token_hex(8)}.html"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o666)
    except OSError as e:
        raise SegtoolsError(f"cannot write: {e.strerror or e}", path=str(out)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(html)
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise


def run(args: argparse.Namespace) -> int:
    # jinja2 and the analyses are imported here, when the command runs: `segtools --help`
    # stays fast, and an install without the `report` extra says what it lacks
    try:
        from segtools.report import page
    except ImportError as e:
        raise SegtoolsError(f"segtools report needs jinja2 ({e.name} is not installed: "
                            "pip install 'segtools[report]')") from None
    from segtools.api import open as open_tree
    from segtools.redact import redactor
    from segtools.report.model import build
    from segtools.report.whatif import Ask
    from segtools.storage.location import custody
    from segtools.storage.scope import current

    redact = redactor(args.redact, args.redact_key)
    with collector_paused():
        # the tree is found here, its partition directories listed by the report's workers
        # (with --hashes too: each job's reads come back to the run's chain of custody)
        logs = open_tree(*args.paths, max_decompressed_bytes=args.max_decompressed_bytes,
                         listed=False)
        out = check_output(args.output, logs.log_dirs)
        if args.config is not None and not Path(args.config).is_file():
            raise SegtoolsError("no such file", path=args.config)
        schema_findings: list[Finding] = []
        decoder = sample_decoder(args, logs.log_dirs, schema_findings)
        ask = Ask(args.what_if, args.recommend, whatif.horizon(args),
                  whatif.ingest(args).bytes_per_s) \
            if whatif.wanted(args) else None
        # chain of custody (--hashes): every file the analyses read, in the page, redacted
        # with the rest of it
        model = build(args.paths, at=args.at, config=args.config, redactor=redact,
                      limit=args.max_decompressed_bytes, what_if=ask, logs=logs,
                      custody=functools.partial(custody, current()) if args.hashes
                      else None, decoder=decoder, schema_findings=schema_findings)
        html = page.render(model)
    write_beside(out, html)
    print(out)  # the result is the file: its path on stdout, for a script or `make demo`
    if not args.quiet:  # the size from the file: no second copy of a large page
        print(f"report written: {out.stat().st_size} bytes, "
              f"{len(model.findings)} finding(s)", file=sys.stderr)
    decoding.say_sources(args.schema_notes)
    return exit_code(model.findings)
