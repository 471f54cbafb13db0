"""segtools: read Apache Kafka's on-disk log directories without a broker, and explain them.

The front door (details in ``docs/python-api.md``)::

    import segtools
    logs = segtools.open("/var/lib/kafka/data")          # log dirs -> partitions -> segments
    logs.partitions("orders*")                           # topics as globs
    for r in logs.records(topics="orders*", start_time="2024-05-01T14:02Z"):
        ...
    table = logs.to_arrow(columns=["topic", "offset", "key", "value"]).read_all()
    segtools.verify("/var/lib/kafka/data")               # every finding, as `segtools verify`

Names are loaded on first use, so ``import segtools`` (and the command line's start-up) stays
cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

_API = ("open", "LogDirs", "Partition", "verify", "transactions", "offsets_at", "diverge",
        "producers", "explain_retention", "explain_compaction", "tiered",
        "what_if", "decode_table", "query")
_FINDINGS = ("Finding", "Severity", "REGISTRY")
_ERRORS = ("SegtoolsError", "CorruptDataError")
_ARGUMENTS = ("ArgumentError",)  # a bad argument or option value, named as it was passed
_READS = ("ArrowRead",)  # what to_arrow() returns: an Arrow stream read afresh at each use

__all__ = [*_API, *_FINDINGS, *_ERRORS, *_ARGUMENTS, *_READS, "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from segtools.api import (  # noqa: F401
        LogDirs,
        Partition,
        decode_table,
        diverge,
        explain_compaction,
        explain_retention,
        offsets_at,
        open,
        producers,
        query,
        tiered,
        transactions,
        verify,
        what_if,
    )
    from segtools.errors import CorruptDataError, SegtoolsError  # noqa: F401
    from segtools.fetch.arguments import ArgumentError  # noqa: F401
    from segtools.fetch.stream import ArrowRead  # noqa: F401
    from segtools.findings import REGISTRY, Finding, Severity  # noqa: F401


def __getattr__(name: str):
    import importlib

    for module, names in (("segtools.api", _API), ("segtools.findings", _FINDINGS),
                          ("segtools.errors", _ERRORS),
                          ("segtools.fetch.arguments", _ARGUMENTS),
                          ("segtools.fetch.stream", _READS)):
        if name in names:
            value = getattr(importlib.import_module(module), name)
            globals()[name] = value
            return value
    raise AttributeError(f"module 'segtools' has no attribute {name!r}")
