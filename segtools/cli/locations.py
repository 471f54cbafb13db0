"""The options every command takes about *where* its paths live (docs/locations.md).

A path on the command line may be local, a URI of an object store (``s3://bucket/logs``) or
an archive (``bundle.tar.gz``); ``--storage-option KEY=VALUE`` configures the store beyond its
standard chain (``AWS_*`` variables, profiles, instance roles). Values are never printed.
"""

from __future__ import annotations

import argparse

from segtools.errors import SegtoolsError
from segtools.storage import location


def _option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError("expected KEY=VALUE (the value is never shown)")
    return key.strip(), value


def add_location_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where the paths live (object storage, archives)")
    g.add_argument("--storage-option", action="append", type=_option, default=[],
                   metavar="KEY=VALUE", dest="storage_options",
                   help="an option of the object store paths are read from (repeatable), "
                        "e.g. endpoint_url=http://minio:9000, region=eu-west-1, "
                        "profile=forensics, anonymous=true, access_key=..., secret_key=...; "
                        "archives: tmp_dir=DIR, tmp_limit=BYTES (see docs/locations.md)")


def configure(args: argparse.Namespace) -> None:
    """Make the command's storage options the default for every path it resolves."""
    options = dict(getattr(args, "storage_options", None) or [])
    for name in ("tmp_limit", "concurrency", "block_size", "max_attempts"):
        if name in options:
            try:
                options[name] = int(options[name])
            except ValueError:
                raise SegtoolsError(f"--storage-option {name} must be a whole number") from None
    location.set_default_options(options)
