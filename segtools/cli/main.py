"""Read Apache Kafka log directories without a broker, and explain what is in them.

examples:
  segtools scan /var/kafka-logs              every segment of a log dir
  segtools verify /var/kafka-logs            CRCs, indexes, offsets, epochs
  segtools dump --deep orders-0/*.log        batches and records of segments
  segtools retention /var/kafka-logs         why each segment is (not) deleted
  segtools report /var/kafka-logs -o r.html  everything above, one HTML page
  segtools <command> --help                  one command's options

Exit status: 0 read fully with nothing to report, 1 findings (warnings or errors), 2 could not
run (bad arguments, missing path, not a Kafka file); errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from segtools import __version__
from segtools.cli.common import EXIT_OK, EXIT_USAGE, decode_flag
from segtools.cli.helptext import HelpFormatter
from segtools.errors import SegtoolsError

#: Every command: its module (imported only when the command runs, so ``--help`` and a command
#: on a small file start fast) and the one line ``segtools --help`` shows for it.
COMMANDS: dict[str, tuple[str, str]] = {
    "dump": ("segtools.cli.dump", "print batches, records, index entries, checkpoints"),
    "scan": ("segtools.cli.scan", "table of topics, partitions and segments in log dirs"),
    "verify": ("segtools.cli.verify", "check CRCs, indexes, offsets and epochs; findings"),
    "find": ("segtools.cli.find", "locate a record by offset or timestamp via the indexes"),
    "retention": ("segtools.cli.retention", "explain which segments retention deletes, and why"),
    "compaction": ("segtools.cli.compaction", "explain what the log cleaner did and will do"),
    "metadata": ("segtools.cli.metadata", "timeline of a KRaft __cluster_metadata log"),
    "offsets": ("segtools.cli.offsets", "consumer group offsets over time, regressions, deletions"),
    "transactions": ("segtools.cli.transactions",
                     "transactions per producer, hanging ones, .txnindex and .snapshot checks"),
    "diverge": ("segtools.cli.diverge", "compare copies of a partition from several brokers"),
    "producers": ("segtools.cli.producers",
                  "how producers batch, their sequences, retried duplicates"),
    "report": ("segtools.cli.report", "one self-contained HTML report of a tree, to share"),
    "tiered": ("segtools.cli.tiered", "tiered storage: remote segments, stuck copies, both tiers"),
    "schemas": ("segtools.cli.schemas", "the schemas in _schemas, and where the data uses them"),
    "query": ("segtools.cli.query", "SQL over log dirs: records, batches, segments, findings"),
}


class _Parser(argparse.ArgumentParser):
    """Every command's parser: one help layout for all (:class:`HelpFormatter`, whatever
    formatter a command asks for), one line per error."""

    def __init__(self, *args, **kwargs):
        kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        """One line, as every other error: what is wrong and where to read more."""
        self.exit(EXIT_USAGE, f"segtools: error: {self.prog}: {message} "
                              f"(see '{self.prog} --help')\n")


def _command_in(argv: Sequence[str]) -> str | None:
    """The command named on the command line (the first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the full definition of the command ``argv`` names (all of them when
    ``argv`` is None) and only a name and a line for the others."""
    doc = __doc__ or ""
    summary, _, rest = doc.partition("\n")
    parser = _Parser(prog="segtools", description=summary, epilog=rest.strip())
    parser.add_argument("--version", action="version", version=f"segtools {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                metavar="<command>")
    wanted = None if argv is None else _command_in(argv)
    for name, (module, help_line) in COMMANDS.items():
        if argv is None or name == wanted:
            importlib.import_module(module).register(sub)
            importlib.import_module("segtools.cli.locations").add_location_arguments(
                sub.choices[name])
        else:
            sub.add_parser(name, help=help_line, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = decode_flag(sys.argv[1:] if argv is None else list(argv))
    args = build_parser(argv).parse_args(argv)
    try:
        locations = importlib.import_module("segtools.cli.locations")
        locations.configure(args)
        code = args.run(args)
        locations.finish(args)
        return code
    except SegtoolsError as e:
        if args.debug:
            raise
        where = f"{e.path}: " if e.path else ""
        print(f"segtools: error: {where}{e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `segtools dump ... | head` is normal use
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        print("segtools: error: out of memory", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # a bug in segtools: still one line, and how to see more
        if args.debug:
            raise
        print(f"segtools: error: internal error ({type(e).__name__}: {e}{_where(e)}); "
              "rerun with --debug for the traceback, and please report it", file=sys.stderr)
        return EXIT_USAGE


def _where(e: BaseException) -> str:
    """`` at <module file>:<line>`` of the deepest segtools frame: enough for a bug report
    from a one-line error."""
    tb, found = e.__traceback__, ""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if "segtools" in name:
            found = f" at {name.rsplit('segtools', 1)[-1].lstrip('/')}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
