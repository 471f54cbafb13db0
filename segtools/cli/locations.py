"""The options every command takes about *where* its paths live (docs/locations.md).

A path on the command line may be local, a URI of an object store (``s3://bucket/logs``) or
an archive (``bundle.tar.gz``); ``--storage-option KEY=VALUE`` configures the store beyond its
standard chain (``AWS_*`` variables, profiles, instance roles). Values are never printed. A
command line is readable by every user of the host (``/proc/<pid>/cmdline``), so secrets
belong in the store's chain or in ``--storage-options-file`` (KEY=VALUE lines in a file only
its owner reads).
"""

from __future__ import annotations

import argparse
import json
import sys

from segtools.cli import render
from segtools.errors import SegtoolsError
from segtools.storage import location
from segtools.storage.files import open_regular_file
from segtools.storage.scope import LocationScope
from segtools.units import format_time


def _option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError("expected KEY=VALUE (the value is never shown)")
    return key.strip(), value


def add_location_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where the paths live (object storage, archives)")
    add_hashes_argument(g)
    g.add_argument("--storage-option", action="append", type=_option, default=[],
                   metavar="KEY=VALUE", dest="storage_options",
                   help="an option of the object store paths are read from (repeatable), "
                        "e.g. endpoint_url=http://minio:9000, region=eu-west-1, "
                        "profile=forensics, anonymous=true, access_key=..., secret_key=...; "
                        "archives: tmp_dir=DIR, tmp_limit=BYTES (all of them: the README, "
                        "'Where the log dirs are'); secrets are better in a file (below) or "
                        "the store's own variables: a command line is visible to every user")
    g.add_argument("--storage-options-file", metavar="FILE", dest="storage_options_file",
                   help="storage options as KEY=VALUE lines ('#' starts a comment), e.g. "
                        "secret_key=...: kept out of the process list; --storage-option "
                        "wins over the file")


def scope_of(args: argparse.Namespace) -> LocationScope:
    """The run's location scope: the command's storage options are the default of every path
    it resolves, and ``--hashes`` keeps the chain of custody."""
    options = {**read_options_file(getattr(args, "storage_options_file", None)),
               **dict(getattr(args, "storage_options", None) or [])}
    for name in ("tmp_limit", "concurrency", "block_size", "block_bytes", "seek_bytes",
                 "small_file_bytes", "max_attempts"):
        if name in options:
            try:
                options[name] = int(options[name])
            except ValueError:
                raise SegtoolsError(f"--storage-option {name} must be a whole number") from None
    return LocationScope(options, custody=bool(getattr(args, "hashes", False)))


#: A storage options file is a few lines; anything larger is not one.
_OPTIONS_FILE_CAP = 64 * 1024


def read_options_file(path: str | None) -> dict[str, str]:
    """``--storage-options-file``: KEY=VALUE lines; a line that is not one is an error naming
    its number (never its text: it may hold a secret)."""
    if path is None:
        return {}
    try:
        with open_regular_file(path, follow_symlinks=True) as fh:  # the user named it
            data = fh.read(_OPTIONS_FILE_CAP + 1)
    except OSError as e:
        raise SegtoolsError(e.strerror or str(e), path=path) from None
    if len(data) > _OPTIONS_FILE_CAP:
        raise SegtoolsError(f"larger than {_OPTIONS_FILE_CAP} bytes: not a storage options "
                            "file", path=path)
    options: dict[str, str] = {}
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise SegtoolsError(f"line {number} is not KEY=VALUE", path=path)
        options[key.strip()] = value.strip()
    return options


def finish(args: argparse.Namespace, owner: LocationScope) -> None:
    """``--hashes``: the chain of custody after the answer, in the answer's format (the
    report carries it in its page instead)."""
    if not getattr(args, "hashes", False) or args.command == "report":
        return
    records = location.custody(owner)
    redact = getattr(args, "redactor", None)
    if redact is not None:  # the custody list is part of the answer: redacted as it is
        records = [{**r, "path": redact.path(r["path"]),
                    **({"error": redact.text(r["error"])} if "error" in r else {})}
                   for r in records]
    fmt = getattr(args, "format", "text")
    if fmt in ("json", "jsonl"):
        for r in records:
            print(json.dumps(r, separators=(",", ":")))
        return
    out = sys.stderr if fmt == "csv" else sys.stdout
    print(f"chain of custody: {len(records)} file(s) read", file=out)
    for r in records:
        seen = f"etag {r['etag']}" if r["etag"] else f"modified {format_time(r['mtime_ms'])}"
        mark = "  CHANGED since read" if r["changed"] else ""
        print(f"  {r['sha256'] or '-' * 64}  {r['size']:>12}  {seen}  "
              f"{render.terminal_safe(r['path'])}{mark}", file=out)


def add_hashes_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hashes", action="store_true",
                   help="chain of custody: after the answer, each file read with its location, "
                        "size, modification time (or version tag) and SHA-256 (JSON: "
                        "\"custody\" objects; the report: a table)")
