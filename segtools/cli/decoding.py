"""The ``--decode`` options of the commands that show records (``dump``, ``find``), and the
decoder they ask for: one definition, so the options mean the same everywhere (the CLI's
side of docs/payloads.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import lazy_loader

from segtools.cli import render
from segtools.errors import SegtoolsError
from segtools.findings import Finding
from segtools.payloads.sources import AUTH_VARIABLE, gather

if TYPE_CHECKING:
    from segtools.payloads.decoder import Modes, PayloadDecoder

#: The payload decoder (its modes, the formats behind them) loads when something is
#: decoded: a read or a command line without ``--decode`` does not pay for it.
_decoder = lazy_loader.load("segtools.payloads.decoder", suppress_warning=True)


def add_decode(p: argparse.ArgumentParser) -> None:
    """``--decode [MODE]``, ``--schemas LOCATION``, ``--schema-registry URL``: payloads decoded
    (``segtools.payloads``; docs/payloads.md), the same options on every command that shows
    records."""
    p.add_argument("--decode", nargs="?", const="schema", metavar="MODE",
                   help="decode keys and values: 'schema' (Confluent frames; the default), "
                        "'auto' (frames, else JSON or text), or Kafka's serializer "
                        "(string,int,long,uuid,json); KEYMODE:VALUEMODE for two")
    p.add_argument("--schemas", action="append", default=[], metavar="LOCATION",
                   help="where the _schemas topic is (a log dir, partition dir, archive, "
                        "s3://...) or a directory of schema files; default: the log dirs read")
    p.add_argument("--schema-registry", metavar="URL",
                   help="a Schema Registry to ask (GETs only) for ids the disk does not hold; "
                        f"basic auth from ${AUTH_VARIABLE} (better: kept out of the process "
                        "list), else from the URL's user:password@")


def payload_decoder(args: argparse.Namespace, places, findings: list[Finding]
                    ) -> PayloadDecoder | None:
    """The decoder ``--decode`` asks for (None without it). Where its schemas came from is
    kept on ``args.schema_notes`` for :func:`say_sources`."""
    args.schema_notes = []
    modes = decode_modes(args)
    if modes is None:
        return None
    chain = gather(places, findings, schemas=args.schemas, registry=args.schema_registry,
                   say=args.schema_notes.append)
    return _decoder.PayloadDecoder(chain, modes)


def decode_modes(args: argparse.Namespace) -> Modes | None:
    """``--decode``'s modes (None without it), or the one-line error of a mode that is not
    one: checked before anything is read, whatever the command reads after."""
    if args.decode is None:
        return None
    try:
        return _decoder.Modes.parse(args.decode)
    except ValueError as e:
        raise SegtoolsError(f"--decode: {e}") from None


def say_sources(notes: list[str]) -> None:
    """Each schema source once on stderr, when the command has run: a command that cannot
    run prints its one error line and nothing else (the contract of docs/json-contract.md)."""
    for line in notes:
        sys.stderr.write(f"segtools: {render.terminal_safe(line)}\n")
