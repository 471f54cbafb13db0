"""What the explaining commands (``retention``, ``compaction``) share: the topic-config
arguments, building the partition inputs from them, and the rich console they print to."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterable

from rich.console import Console
from rich.text import Text

from segtools.analysis import config as cfg
from segtools.analysis.partition_input import (
    Loaded,
    Planned,
    input_bytes,
    load_inputs,
    plan_inputs,
    plan_unlisted,
    read_config_file,
)
from segtools.cli import render
from segtools.cli.common import (
    add_at,
    add_decompress_limit,
    add_format,
    add_paths,
    add_quiet,
    open_roots,
    open_tree,
    progress,
)
from segtools.units import format_duration, format_retention

#: Config flags: ``--retention-ms`` ... one per config the analyses read.
FLAG_CONFIGS = tuple(cfg.DEFINITIONS)


def _config_type(name: str):
    def parse(text: str) -> str:
        try:
            cfg.parse_value(name, text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """PATH, --at, the topic-config flags, --format, --quiet (shared with ``compaction``)."""
    add_paths(p, "log dirs, partition dirs, or directories of log-dir copies")
    add_at(p, "the moment to evaluate: epoch ms or ISO-8601 (UTC unless a zone is "
              "given); default: now")
    add_format(p, document=True)
    g = p.add_argument_group(
        "topic config", "priority: these flags > --config FILE > configs recovered from a "
                        "__cluster_metadata log in the tree > Kafka defaults")
    g.add_argument("--config", metavar="FILE",
                   help="properties, or kafka-configs --describe output")
    for name in FLAG_CONFIGS:
        g.add_argument(f"--{name.replace('.', '-')}", dest=_dest(name), type=_config_type(name),
                       metavar="V", help=argparse.SUPPRESS if name in _QUIET_FLAGS else None)
    add_decompress_limit(p)
    add_quiet(p)


_QUIET_FLAGS = {"segment.index.bytes", "file.delete.delay.ms", "segment.jitter.ms"}


def _dest(name: str) -> str:
    return "cfg_" + name.replace(".", "_")


def flags_from_args(args: argparse.Namespace) -> dict[str, str]:
    return {name: getattr(args, _dest(name)) for name in FLAG_CONFIGS
            if getattr(args, _dest(name), None) is not None}


def load(args: argparse.Namespace) -> Loaded:
    """Walk PATH and build every partition's input (with a progress bar)."""
    log_dirs, loose = open_tree(args.paths)
    config_file = read_config_file(args.config) if args.config else None
    with progress(input_bytes(log_dirs), "summarising", quiet=args.quiet) as advance:
        loaded = load_inputs(log_dirs, flags=flags_from_args(args), config_file=config_file,
                             at=args.at, limit=args.max_decompressed_bytes, advance=advance)
    return dataclasses.replace(loaded, findings=tuple(loose) + loaded.findings)


def plan(args: argparse.Namespace) -> tuple[Planned, int]:
    """Walk PATH and plan every partition's input (:func:`load` before any segment is
    read), with the bytes the summaries will read (a progress bar's total)."""
    log_dirs, loose = open_tree(args.paths)
    config_file = read_config_file(args.config) if args.config else None
    planned = plan_inputs(log_dirs, flags=flags_from_args(args), config_file=config_file,
                          at=args.at)
    return (dataclasses.replace(planned, findings=tuple(loose) + planned.findings),
            input_bytes(log_dirs))


def plan_roots(args: argparse.Namespace) -> Planned:
    """:func:`plan` with PATH's partition directories found but left for the workers to
    list (:func:`segtools.analysis.partition_input.plan_unlisted`); a tree off the local
    disk is listed here (:func:`plan`). The bytes to summarise are not known before."""
    found = open_roots(args.paths)
    if found is None:
        return plan(args)[0]
    roots, loose = found
    config_file = read_config_file(args.config) if args.config else None
    planned = plan_unlisted(roots, flags=flags_from_args(args), config_file=config_file,
                            at=args.at)
    return dataclasses.replace(planned, findings=tuple(loose) + planned.findings)


# --------------------------------------------------------------------------- deep pass


#: Text width when stdout is not a terminal (a file, a pager, a CI log): wide enough that the
#: reason column stays readable.
PIPE_WIDTH = 160


class _Console(Console):
    """rich's console, but a closed pipe is the command's ``BrokenPipeError`` (exit 141, as
    every other command: docs/cli.md), not rich's own ``SystemExit(1)``, which reads as
    "findings" to a script that piped the answer into ``head``."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def console() -> Console:
    """Rich on stdout; no colour or wrapping surprises when piped."""
    terminal = sys.stdout.isatty()
    width = None if terminal else PIPE_WIDTH
    return _Console(file=sys.stdout, width=width, highlight=False, emoji=False,
                    color_system="auto" if terminal else None, soft_wrap=False)


def safe(text: object) -> Text:
    return Text(render.terminal_safe(str(text)))


def config_line(c: cfg.TopicConfig, names: Iterable[str]) -> str:
    parts = []
    for name in names:
        value = c.value(name)
        if name == "cleanup.policy":
            shown = ",".join(value)
        elif value == cfg.LONG_MAX:
            shown = "Long.MAX_VALUE (never)"
        elif name.endswith(".ms"):
            shown = format_retention(value) if name == "retention.ms" else \
                f"{value} ({format_duration(value)})"
        else:
            shown = str(value)
        parts.append(f"{name}={shown} [{c.source(name).source}]")
    return " · ".join(parts)


