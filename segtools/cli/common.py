"""What every command shares: opening a tree, exit codes, progress on stderr, output formats.

Progress goes to stderr only, and only when stderr is a terminal and ``--quiet`` is not given:
stdout is for data, and a pipe or a cron job wants no bars.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import lazy_loader

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT
from segtools.errors import NothingToReadError, SegtoolsError
from segtools.findings import Finding, Severity
from segtools.storage.logdirs import (
    META_PROPERTIES,
    OFFSET_CHECKPOINTS,
    LogDir,
    PartitionRef,
    settled,
    walk,
    walk_roots,
)
from segtools.storage.partition import PartitionDir, load_partition_dir
from segtools.storage.throttle import parse_rate
from segtools.text import unmatched
from segtools.timestamps import to_millis
from segtools.units import format_time

#: The payload decoder (its modes, the formats behind them) loads when something is
#: decoded: a read or a command line without ``--decode`` does not pay for it.
_decoder = lazy_loader.load("segtools.payloads.decoder", suppress_warning=True)

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def exit_code(findings: Iterable[Finding]) -> int:
    """docs/architecture.md §3: 1 when any finding is a warning or an error; info findings are
    normal."""
    return EXIT_FINDINGS if any(f.severity in (Severity.WARNING, Severity.ERROR)
                                for f in findings) else EXIT_OK


def add_command(sub: argparse._SubParsersAction, name: str, help_line: str,
                doc: str | None, examples: str, *,
                timeless: str | None = None) -> argparse.ArgumentParser:
    """A command's parser: its one-line help (the line ``cli.main.COMMANDS`` gives it too; a
    test keeps the two the same), its module docstring as the description and its examples
    as the epilog, laid out by ``cli.main``'s one help formatter.

    ``timeless``: why the command's answer does not depend on the moment it runs, for the
    commands that take no ``--at`` (:func:`add_at`). Its help says so, as one paragraph
    worded alike everywhere, rather than offering a flag that would change nothing."""
    if timeless is not None:
        doc = f"{doc or ''}\n\n{TIMELESS.format(why=timeless)}"
    return sub.add_parser(name, help=help_line, description=doc, epilog=examples)


#: The paragraph a timeless command's help ends with (:func:`add_command`).
TIMELESS = ("No --at: the answer does not depend on when it runs ({why}). Ages, verdicts and "
            "hanging transactions are measured at one moment, --at (default: now), by "
            "retention, compaction, tiered, transactions and report.")


def add_paths(p: argparse.ArgumentParser, help: str, *, metavar: str = "PATH") -> None:
    """The positional paths every tree-reading command takes (one or more)."""
    p.add_argument("paths", nargs="+", metavar=metavar, type=_path, help=help)


def _path(text: str) -> str:
    """A path as typed; an empty one (``segtools scan ""``, an unset shell variable) is a
    mistake, never the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    return text


def add_at(p: argparse.ArgumentParser, help: str, *, aliases: Sequence[str] = ()) -> None:
    """``--at TIME``: the moment a command answers for (:func:`parse_time`), on every command
    whose answer depends on it (the others say why not: :func:`add_command`)."""
    p.add_argument("--at", *aliases, dest="at", type=parse_time, metavar="TIME", help=help)


def moment(args: argparse.Namespace) -> int:
    """The one clock of a run: ``--at``, else the wall clock, read once (every age, verdict
    and hanging transaction of the run is measured against it, never each log's own last
    timestamp)."""
    return args.at if args.at is not None else int(time.time() * 1000)


def moment_line(args: argparse.Namespace, at_ms: int) -> str:
    """The run's clock, said once at the top of a text answer."""
    return f"at {format_time(at_ms)} ({'--at' if args.at is not None else 'now'})"


def clock_note(args: argparse.Namespace, at_ms: int) -> str | None:
    """Said once, after :func:`moment_line`, when no ``--at`` was given: every age and
    verdict is relative to this machine's clock, which for a copy of a log dir taken long ago
    makes everything old."""
    if args.at is not None:
        return None
    return (f'"now" is this machine\'s clock ({format_time(at_ms)}); to judge the log at '
            "another moment (when a copy was taken, or a day ahead) pass --at TIME, epoch ms "
            "or ISO-8601 UTC, e.g. --at 2024-03-01T12:00Z")


def add_decompress_limit(p: argparse.ArgumentParser) -> None:
    """``--max-decompressed-bytes``: the cap one batch may inflate to (a bomb, or a lying
    header, then becomes a ``corrupt_compressed_payload`` finding instead of a memory spike)."""
    p.add_argument("--max-decompressed-bytes", type=_positive_int, metavar="N",
                   default=DEFAULT_DECOMPRESS_LIMIT,
                   help="cap on the bytes one batch may inflate to "
                        f"(default {DEFAULT_DECOMPRESS_LIMIT})")


def add_run_options(p: argparse.ArgumentParser, *, quiet: bool = True,
                    document: bool = False) -> None:
    """``--format``, ``--max-decompressed-bytes`` and (unless ``quiet=False``) ``-q``: the
    options every command that reads a tree shares, declared once so each spells them alike."""
    add_format(p, document=document)
    add_decompress_limit(p)
    if quiet:
        add_quiet(p)


#: ``--page-cache`` (:class:`segtools.storage.gentle.PageCacheMode`'s values; spelled here so
#: that ``--help`` loads no reader).
PAGE_CACHE_MODES = ("restore", "keep")


def add_gentle(p: argparse.ArgumentParser) -> None:
    """``--page-cache``, ``--max-read-rate``, ``--jobs``: what a run may do to a live broker
    (:mod:`segtools.cli.gentle` applies them), on every command, as every command reads
    files."""
    g = p.add_argument_group("on a live broker (the robustness guide: 'Running on a "
                                 "production broker')")
    g.add_argument("--page-cache", choices=PAGE_CACHE_MODES,
                   help="restore: hand back the pages this run brought into the page cache "
                        "(the default when a running broker holds the log dir); keep: leave "
                        "them cached (the default otherwise)")
    g.add_argument("--max-read-rate", type=_rate, metavar="RATE",
                   help="cap the bytes read per second, across all workers (e.g. 50MiB, "
                        "1GiB; default: no cap)")
    g.add_argument("--jobs", type=_positive_int, metavar="N",
                   help="at most N worker processes (default: every core, half of them when "
                        "a running broker holds the log dir)")


def _rate(text: str) -> int:
    try:
        return parse_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def add_redact(p: argparse.ArgumentParser) -> None:
    """``--redact KINDS`` and ``--redact-key KEY`` (``segtools.redact``): the same option on
    every face that shows data, so a token means the same thing in a dump and a report."""
    p.add_argument("--redact", metavar="KINDS",
                   help="replace keys, values, headers (and topic names with 'topics') by "
                        "keyed tokens: a comma list of keys,values,headers,topics")
    p.add_argument("--redact-key", metavar="KEY",
                   help="the key tokens are made with (default: random, forgotten after the "
                        "run); the same key gives the same tokens in every output")


def decode_flag(argv: list[str]) -> list[str]:
    """``--decode`` takes a MODE only when the next word is one: ``dump --decode x.log``
    decodes ``x.log`` with the default mode instead of taking the file for a mode (argparse
    alone would)."""
    out = []
    for i, word in enumerate(argv):
        if word == "--decode" and (i + 1 == len(argv) or not _is_mode(argv[i + 1])):
            word = "--decode=schema"
        out.append(word)
    return out


def _is_mode(word: str) -> bool:
    """A mode, or a word shaped like one or a pair of them that names no file (``bogus``,
    ``long:bogus``, ``string:``): given to ``--decode``, whose error says which mode is
    wrong, rather than read as a path that does not exist (a mistyped mode was said to be a
    missing file before the paths and an unrecognized argument after them)."""
    try:
        _decoder.Modes.parse(word)
    except ValueError:
        return _MODE_WORDS.fullmatch(word) is not None and not os.path.lexists(word)
    return True


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")


#: What a MODE or KEYMODE:VALUEMODE word looks like (the modes are lower-case words).
_MODE_WORDS = re.compile(r"[a-z]+|[a-z]*:[a-z]*")

#: A store's scheme written with fewer than two slashes (``s3:/bucket``): read as a local path.
_ONE_SLASH_URI = re.compile(r"^(s3|s3a|gs|gcs|abfs|abfss|az|file):/?(?!/)", re.IGNORECASE)


def _uri_hint(paths: Iterable[str]) -> str:
    """What to say when a missing path was meant as a URI (the scheme only: the rest may
    hold a credential)."""
    for p in paths:
        found = _ONE_SLASH_URI.match(os.fspath(p))
        if found:
            return f" (read as a local path; a URI is written {found.group(1)}://...)"
    return ""


#: What a path given alone may have been instead of a Kafka file or directory.
NOT_READ = frozenset((*NothingToReadError.UNLISTED, "not_a_segment_file"))


def open_tree(paths: Sequence[str]) -> tuple[list[LogDir], list[Finding]]:
    """Walk the given log dirs / partition dirs / segment files; a path that does not exist
    is a usage error (exit 2), as the operator mistyped it."""
    with collector_paused():
        log_dirs, loose = walk(paths)
    _refuse_nothing(paths, log_dirs, loose, any(d.partitions for d in log_dirs))
    return log_dirs, loose


def open_roots(paths: Sequence[str]
               ) -> tuple[list[tuple[LogDir, tuple[PartitionRef, ...]]], list[Finding]] | None:
    """:func:`open_tree` up to the partition directories, found but not listed
    (:func:`segtools.storage.logdirs.walk_roots`: a command's workers list them), with the
    same errors; None when a path is not on the local disk (then :func:`open_tree`)."""
    with collector_paused():
        found = walk_roots(paths)
    if found is None:
        return None
    roots, loose = found
    _refuse_nothing(paths, [d for d, _ in roots], loose, any(refs for _, refs in roots))
    return roots, loose


def _refuse_nothing(paths: Sequence[str], log_dirs: Sequence[LogDir], loose: list[Finding],
                    any_partition: bool) -> None:
    """A missing path, or nothing to read at all, as the one error every command gives."""
    missing = [f for f in loose if f.code == "path_not_found"]
    if missing:
        raise SegtoolsError("no such file or directory" + _uri_hint(paths),
                            path=missing[0].path)
    # nothing to read at all (every path given unreadable counts as nothing): one error, the
    # same from every command, rather than an empty answer with a finding
    if not any_partition:
        given = next((f for f in loose if f.code == "not_a_segment_file"), None)
        if given is not None and all(f.code in NOT_READ for f in loose):
            # /etc/passwd given alone: not a Kafka file (exit 2; an archive's damage stays a
            # finding, with what it could list)
            raise NothingToReadError(given.message, path=given.path)
        if all(f.code in NothingToReadError.UNLISTED for f in loose):
            raise NothingToReadError.of([*loose, *(f for d in log_dirs for f in d.findings)],
                                        [str(d.path) for d in log_dirs] or list(paths))


def whole_partition(log_dir: LogDir, p: PartitionDir) -> PartitionDir:
    """The partition ``p`` belongs to, every segment of it, when only some of its segment
    files were named: a transaction's state (its marker, the last stable offset) depends on
    the whole log, so one segment is never answered for as if it were the partition."""
    if p.complete or not p.segments:
        return p
    return settled(load_partition_dir(p.path), log_dir.checkpoints)


def with_listing(log_dirs: Iterable[LogDir], partitions: Iterable[PartitionDir],
                 findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` with what listing the tree met for the partitions a command answers about
    (their log dirs' root files, each partition's checkpoints, a directory that cannot be
    listed): every command says what it could not read, not only those that read it twice.
    Each finding once, in order."""
    wanted = list(partitions)
    roots = {str(p.path.parent) for p in wanted}
    listing = [f for d in log_dirs if str(d.path) in roots for f in d.findings]
    listing += [f for p in wanted for f in p.findings]
    return list(dict.fromkeys([*listing, *findings]))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector off while a tree is listed or its analyses are built, and what
    was built kept out of its later passes (``gc.freeze``): a large broker's listing, and
    the results of every analysis of it, are hundreds of thousands of small objects without
    cycles, which each full collection would otherwise walk again, a cost that grows faster
    than the tree (a tenth of ``segtools report`` at 10,000 partitions)."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was:
            gc.enable()


@contextlib.contextmanager
def progress(total_bytes: int | None, description: str, *, quiet: bool) -> Iterator:
    """A bytes-and-ETA bar on stderr; yields ``advance(n)``. Silent when not a terminal (and
    then rich, which draws it, is not even imported). ``total_bytes`` None: not known
    before the work (a tree whose workers list it), a bar of bytes done."""
    if quiet or not sys.stderr.isatty():
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    console = Console(stderr=True)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                   TransferSpeedColumn(), TimeRemainingColumn(), console=console,
                   transient=True)
    with bar:
        task = bar.add_task(description, total=total_bytes)
        yield lambda n: bar.advance(task, n)


@contextlib.contextmanager
def rows_progress(description: str, *, quiet: bool, after_s: float = 2.0) -> Iterator:
    """A rows-read counter on stderr for reads of unknown length (a query); yields
    ``advance(n)``. Shown only once the read has taken ``after_s`` seconds (a quick query
    draws nothing), and never when stderr is not a terminal (rich is then not imported)."""
    if quiet or not sys.stderr.isatty():
        yield lambda n: None
        return
    import time

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}: {task.completed:,} rows"),
                   TimeElapsedColumn(), console=Console(stderr=True), transient=True,
                   redirect_stdout=False, redirect_stderr=False)  # rows stay plain on stdout
    start = time.monotonic()
    with bar:
        task = bar.add_task(description, total=None, visible=False)

        def advance(n: int) -> None:
            bar.update(task, advance=n,
                       visible=time.monotonic() - start >= after_s)

        yield advance


def parse_time(text: str) -> int:
    """``--at`` / ``--timestamp`` values: epoch milliseconds, or ISO-8601 (naive = UTC)."""
    try:
        return to_millis(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_selection(p: argparse.ArgumentParser) -> None:
    """``--topic`` / ``--partition`` filters, shared by the commands that walk trees."""
    p.add_argument("--topic", action="append", metavar="GLOB",
                   help="only topics matching this glob (repeatable)")
    p.add_argument("--partition", action="append", type=int, metavar="N",
                   help="only this partition number (repeatable)")


def require_match(log_dirs: Sequence[LogDir], args: argparse.Namespace,
                  found: Sequence[PartitionDir | PartitionRef] | None = None) -> None:
    """``--topic``/``--partition`` that select nothing in the tree are a usage error (exit 2)
    naming the topics there, not an empty answer: an SRE's typo must not read as "no data"
    (the Python API's selectors and ``query`` do the same). ``found``: the tree's partitions
    when ``log_dirs`` lists only some of them (their names are enough)."""
    every = [p for d in log_dirs for p in d.partitions] if found is None else found
    said = unmatched(getattr(args, "topic", None) or (),
                     (p.name.topic for p in every if p.name))
    if said is not None:
        raise SegtoolsError(f"--topic: {said}", path=" ".join(args.paths))
    if getattr(args, "partition", None) and not any(selected(p, args) for p in every):
        raise SegtoolsError(f"--partition: no partition {', '.join(map(str, args.partition))}"
                            " of the selected topics here", path=" ".join(args.paths))


def selected(pdir: PartitionDir | PartitionRef, args: argparse.Namespace) -> bool:
    if pdir.name is None:
        return not args.topic and not args.partition
    if args.topic and not any(fnmatch.fnmatchcase(pdir.name.topic, g) for g in args.topic):
        return False
    return not args.partition or pdir.name.partition in args.partition


#: One vocabulary for every command: ``text`` for people; ``jsonl``, a stream of typed JSON
#: lines; ``json`` where a command prints one document. Each command accepts the other JSON
#: name too and treats it as its own kind.
_FORMAT_ALIASES = {"stream": {"json": "jsonl", "table": "text"},
                   "document": {"jsonl": "json", "table": "text"}}


def add_format(p: argparse.ArgumentParser, *, document: bool = False,
               extra: tuple[str, ...] = ()) -> None:
    """``--format``: ``text`` and ``jsonl`` (streams) or ``json`` (one document), plus any
    ``extra`` formats (``csv``)."""
    kind = "document" if document else "stream"
    machine = "json" if document else "jsonl"
    aliases = _FORMAT_ALIASES[kind]
    p.add_argument("--format", type=lambda v: aliases.get(v, v), default="text",
                   choices=("text", machine, *extra), metavar="FORMAT",
                   help=f"text (default), {machine}"
                        + "".join(f", {e}" for e in extra)
                        + (" (one JSON document; jsonl is accepted too)" if document else
                           " (one JSON object per line, \"type\" first; json is accepted "
                           "too)"))


#: Files that make a directory a log dir or a partition directory (Kafka writes them, nothing
#: else does).
_KAFKA_MARKS = (META_PROPERTIES, *OFFSET_CHECKPOINTS, "partition.metadata",
                "leader-epoch-checkpoint")


def refuse_under_log_dir(output: str | os.PathLike[str]) -> Path:
    """The output file's path, refused when it would be written inside a Kafka log dir
    (docs/architecture.md §4: segtools never writes under a log dir, read or not): its
    directory, or one above it, holds what only Kafka writes there (``meta.properties``, the
    offset checkpoints; a partition directory's ``partition.metadata`` or
    ``leader-epoch-checkpoint``)."""
    out = Path(output)
    where = Path(os.path.realpath(out.parent if str(out.parent) else "."))
    for d in (where, *where.parents):
        found = next((name for name in _KAFKA_MARKS if os.path.lexists(d / name)), None)
        if found is not None:
            raise SegtoolsError(f"is inside the log dir {d} (it holds {found}): segtools "
                                "never writes under a log dir", path=os.fspath(output))
    return out
