"""``segtools``: the command line. One module per command; this one wires them together.

Contract (DESIGN.md §3): exit 0 when everything was read and nothing was found, 1 when there
are findings (of warning or error severity), 2 when the command could not run. Every error is
one line on stderr, ``segtools: error: <path>: <what is wrong>``; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from segtools import __version__
from segtools.cli import (
    compaction,
    diverge,
    dump,
    find,
    metadata,
    offsets,
    retention,
    scan,
    transactions,
    verify,
)
from segtools.cli.common import EXIT_OK, EXIT_USAGE
from segtools.errors import SegtoolsError

COMMANDS = (dump, scan, verify, find, retention, compaction,
            metadata, offsets, transactions, diverge)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """One line, as every other error: what is wrong and where to read more."""
        self.exit(EXIT_USAGE, f"segtools: error: {self.prog}: {message} "
                              f"(see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="segtools", description=__doc__.splitlines()[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"segtools {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
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
        print(f"segtools: error: internal error ({type(e).__name__}: {e}); "
              "rerun with --debug for the traceback, and please report it", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
