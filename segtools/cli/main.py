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
import contextlib
import importlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Sequence

from segtools import __version__
from segtools.cli.common import EXIT_USAGE, add_gentle, decode_flag
from segtools.cli.helptext import HelpFormatter
from segtools.errors import SegtoolsError
from segtools.sensitive import text_without_credentials, without_credentials
from segtools.text import terminal_safe

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


#: The answer was cut short because its reader went away: what a shell reports for a command
#: ended by SIGPIPE (128 + 13), not 0 ("read fully"), so ``set -o pipefail`` sees it.
EXIT_OUTPUT_CLOSED = 128 + signal.SIGPIPE


#: The first path of a line read by ``_Parser._intermixed_with_end_of_options``, taken out
#: after the parse: a NUL byte, which no path holds, so no typed path is ever mistaken for it.
_PATHS_START = "\0segtools: the paths start here"


class _Parser(argparse.ArgumentParser):
    """Every command's parser: one help layout for all (:class:`HelpFormatter`, whatever
    formatter a command asks for), one line per error."""

    def __init__(self, *args, **kwargs):
        kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)

    #: The command the line names (``segtools retention``), so that an option the top-level
    #: parser refuses points at that command's help.
    command_prog: str | None = None
    #: Set while :meth:`parse_known_args` hands the line to argparse's intermixed parse,
    #: which calls it back for each of its two passes.
    _intermixing: bool = False

    def parse_known_args(self, args=None, namespace=None):
        """A command's options anywhere among its paths (``segtools dump x.log --decode
        string``, ``scan a -q b``): argparse takes the positional paths as one run, and a
        path after an option was refused as an unrecognized argument, where the same option
        before the paths parsed. The top-level parser (its positional is the command) and a
        line with ``--`` (what follows it are paths, whatever they look like) parse as
        argparse does."""
        args = list(sys.argv[1:] if args is None else args)
        positionals = self._get_positional_actions()
        if self._intermixing or any(a.nargs in (argparse.PARSER, argparse.REMAINDER)
                                    for a in positionals):
            return super().parse_known_args(args, namespace)
        if "--" in args:
            paths = next(iter(positionals), None)
            if paths is None or paths.nargs not in (argparse.ONE_OR_MORE,
                                                    argparse.ZERO_OR_MORE):
                return super().parse_known_args(args, namespace)
            return self._intermixed_with_end_of_options(args, namespace, paths)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False

    def _intermixed_with_end_of_options(self, args: list[str], namespace,
                                        paths: argparse.Action):
        """``--`` on a line whose options also stand among its paths (``scan a --crc --
        -b``): the options are read wherever they stand before ``--``, and what follows it
        are paths. argparse's plain parse refused the option between the paths, and its
        intermixed parse (Python 3.11) swallows a ``--`` that no path precedes (``scan --crc
        -- -b`` lost ``-b``'s protection); a placeholder path (:data:`_PATHS_START`) put
        first makes every line one that it reads right, and is taken out after."""
        self._intermixing = True
        try:
            namespace, extras = self.parse_known_intermixed_args([_PATHS_START, *args],
                                                                 namespace)
        finally:
            self._intermixing = False
        given = getattr(namespace, paths.dest)[1:]
        if not given and paths.nargs == argparse.ONE_OR_MORE:
            self.error(f"the following arguments are required: {paths.metavar or paths.dest}")
        setattr(namespace, paths.dest, given)
        return namespace, extras

    def error(self, message: str):
        """One line, as every other error: ``segtools: error: <command>: <what>`` and where
        to read more (the program's name once, not as the error's subject)."""
        prog = self.command_prog or self.prog
        command = prog.removeprefix("segtools").strip()
        self.exit(EXIT_USAGE, f"segtools: error: {command + ': ' if command else ''}{message} "
                              f"(see '{prog} --help')\n")


DEBUG_HELP = "show tracebacks on errors"


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
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                metavar="<command>")
    wanted = None if argv is None else _command_in(argv)
    if wanted in COMMANDS:
        parser.command_prog = f"segtools {wanted}"
    for name, (module, help_line) in COMMANDS.items():
        if argv is None or name == wanted:
            importlib.import_module(module).register(sub)
            importlib.import_module("segtools.cli.locations").add_location_arguments(
                sub.choices[name])
            add_gentle(sub.choices[name])
            # after the command too (``segtools scan PATH --debug``); absent there, the
            # top-level flag's value stands
            sub.choices[name].add_argument("--debug", action="store_true",
                                           default=argparse.SUPPRESS, help=DEBUG_HELP)
        else:
            sub.add_parser(name, help=help_line, add_help=False)
    return parser


def _ended_by(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP (a ``kill``, a closed terminal, a pod stopped) ends segtools as an
    exception would, so what it holds is released on the way out (an archive's temporary
    space, docs/security.md) instead of the process vanishing mid-write."""
    raise SystemExit(128 + signum)


#: How long a stopped run may take to end by its handlers before the process ends anyway.
STOP_GRACE_S = 3.0
_STOPPING = frozenset((signal.SIGINT, signal.SIGTERM, signal.SIGHUP))


def _stop_if_stuck(read_fd: int) -> None:
    """A Python signal handler runs only when the main thread is back in Python; a run
    blocked in C (a store's request to an endpoint that never answers) would ignore Ctrl-C
    and SIGTERM for minutes. This thread hears each signal through the wakeup fd and, if the
    process is still there :data:`STOP_GRACE_S` later, ends it with the status a handler
    would have given (at worst an archive's empty temporary directory stays behind)."""
    try:
        while data := os.read(read_fd, 1):
            if data[0] in _STOPPING:
                time.sleep(STOP_GRACE_S)
                os._exit(130 if data[0] == signal.SIGINT else 128 + data[0])
    finally:
        os.close(read_fd)


@contextlib.contextmanager
def _ending_cleanly() -> Iterator[None]:
    """:func:`_ended_by` as the handler of SIGTERM and SIGHUP while a command runs (the
    main thread only: the only one signals reach), the previous handlers restored after;
    :func:`_stop_if_stuck` behind them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _ended_by) for sig in (signal.SIGTERM, signal.SIGHUP)}
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(target=_stop_if_stuck, args=(read_fd,), name="segtools-stop",
                     daemon=True).start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(wakeup)
        os.close(write_fd)  # the watching thread reads its end and returns
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The command line as the command sees it (a usage error exits 2 with one line).
    ``--decode``'s optional mode is read apart (:func:`decode_flag`) only on a command that
    has the option: another refuses it as it was typed."""
    argv = list(argv)
    return parse_with(build_parser(argv), argv)


def parse_with(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """:func:`parse` with a parser :func:`build_parser` already made for this command."""
    argv = list(argv)
    command = command_parser(parser, _command_in(argv))
    if command is not None and "--decode" in command._option_string_actions:
        argv = decode_flag(argv)
    return parser.parse_args(argv)


def command_parser(parser: argparse.ArgumentParser,
                   name: str | None) -> argparse.ArgumentParser | None:
    """The parser of the command ``name`` (None: not a command), from :func:`build_parser`'s
    answer."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices.get(name) if name is not None else None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    with _ending_cleanly():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """One command's run, in a location scope of its own: the locations it opens
    (object-store clients and their threads, archives' temporary space) are the run's, and
    closed when it ends, however it ends; a caller that runs several commands in one process
    (a test, a notebook's ``main([...])``) shares none between them."""
    try:
        locations = importlib.import_module("segtools.cli.locations")
        with locations.scope_of(args) as owner:
            with importlib.import_module("segtools.cli.gentle").applied(args):
                code = args.run(args)
            locations.finish(args, owner)
        return code
    except SegtoolsError as e:
        if args.debug:
            _print_traceback(e)
        print(error_line(e), file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `segtools dump ... | head`: normal use, but not a full read
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OUTPUT_CLOSED
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        print("segtools: error: out of memory", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # a bug in segtools: still one line, and how to see more
        if args.debug:
            _print_traceback(e)
        print(f"segtools: error: internal error ({type(e).__name__}: "
              f"{terminal_safe(text_without_credentials(str(e)))}{_where(e)}); "
              "rerun with --debug for the traceback, and please report it", file=sys.stderr)
        return EXIT_USAGE


def _print_traceback(e: BaseException) -> None:
    """``--debug``: the traceback on stderr before the error line, and the exit status the
    same as without it (2: a script that adds ``--debug`` to see more must not see another
    answer). Each line is credential-free and terminal-safe, as the error line is."""
    for chunk in traceback.format_exception(e):
        for line in chunk.rstrip("\n").split("\n"):
            print(terminal_safe(text_without_credentials(line)), file=sys.stderr)


def error_line(e: SegtoolsError) -> str:
    """``segtools: error: <path>: <what>``, one terminal-safe line: the path as given, less any
    credential, every control character of it and of the message escaped (a file name can
    hold ESC sequences, a message can quote a file's bytes). A message that already begins
    with its path (the Python API's errors name it, for a notebook user) names it once."""
    what = str(e)
    where = ""
    if e.path:
        path = str(e.path)
        what = what.removeprefix(f"{path}: ")
        where = f"{terminal_safe(without_credentials(path))}: "
    return f"segtools: error: {where}{terminal_safe(text_without_credentials(what))}"


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
