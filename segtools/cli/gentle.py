"""A command's run on a live broker's host: its gentle settings decided and applied.

Loaded by ``cli.main`` once a command runs (as ``cli.locations`` is), so that ``--help``
loads none of the readers; the options themselves are declared in ``cli.common``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from collections.abc import Iterator

from segtools.fanout import yield_to_broker
from segtools.storage import gentle
from segtools.text import terminal_safe

#: The one command whose records outlive their segments' reading: DuckDB reads their views.
QUERY_COMMAND = "query"


@contextlib.contextmanager
def applied(args: argparse.Namespace) -> Iterator[gentle.Gentle]:
    """The run under its gentle settings: decided from the paths it reads and its options,
    said once on stderr, the command's own process yielding too when a broker holds a log
    dir (the process ends with the command, so its priority is not wanted back)."""
    paths = [*(getattr(args, "paths", None) or getattr(args, "files", None) or []),
             *([args.path] if getattr(args, "path", None) else [])]
    mode = getattr(args, "page_cache", None)
    settings = gentle.decide(paths, page_cache=None if mode is None else gentle.PageCacheMode(mode),
                             max_read_rate=getattr(args, "max_read_rate", None),
                             jobs=getattr(args, "jobs", None))
    # a command prints what it reads; only query hands the records' views to DuckDB
    settings = dataclasses.replace(settings,
                                   views_outlive_segments=args.command == QUERY_COMMAND)
    said = gentle.notice(settings)
    if said is not None:
        print(terminal_safe(said), file=sys.stderr)  # it names a log dir
    if settings.yield_cpu:
        yield_to_broker()
    with gentle.applied(settings):
        yield settings
