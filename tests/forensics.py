"""Test-side builders for internal-topic partitions: records framed by the construct spec.

Fixture trees hold the Kafka-written cases; these build the cases Kafka would not write
(unknown record types, damaged values, missing index entries) in a temporary directory.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from hypothesis import strategies as st

from segtools.formats import batch as v2
from segtools.formats.internal.generated import (
    ArrayOf,
    Field,
    Message,
    Primitive,
    StructDef,
    uuid_to_str,
)
from tests.builders import make_batch
from tests.fixtures_manifest import FIXTURES, MANIFEST

FORENSICS = FIXTURES / "logdirs" / "forensics"
REPLICAS = FIXTURES / "logdirs" / "replicas"

_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def records_batch(pairs, *, base_offset: int, timestamp: int, producer_id: int = -1,
                  producer_epoch: int = -1, transactional: bool = False) -> bytes:
    """One uncompressed v2 batch of (key, value) records, all at ``timestamp``."""
    recs = [dict(timestamp_delta=0, offset_delta=i, key=k, value=v, headers=[])
            for i, (k, v) in enumerate(pairs)]
    return make_batch(recs, base_offset=base_offset, base_timestamp=timestamp,
                      extra_attributes=v2.TRANSACTIONAL_FLAG if transactional else 0,
                      producer_id=producer_id, producer_epoch=producer_epoch,
                      base_sequence=0 if producer_id >= 0 else -1)


def marker_batch(kind: str, *, offset: int, timestamp: int, producer_id: int,
                 producer_epoch: int = 0, coordinator_epoch: int = 0) -> bytes:
    """A COMMIT/ABORT control batch (``MemoryRecords.withEndTransactionMarker``)."""
    key = struct.pack(">hh", 0, 1 if kind == "COMMIT" else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    recs = [dict(timestamp_delta=0, offset_delta=0, key=key, value=value, headers=[])]
    return make_batch(recs, base_offset=offset, base_timestamp=timestamp,
                      extra_attributes=v2.TRANSACTIONAL_FLAG | v2.CONTROL_FLAG,
                      producer_id=producer_id, producer_epoch=producer_epoch)


def write_partition(root: Path, name: str, batches: list[bytes], base: int = 0) -> Path:
    pdir = root / name
    pdir.mkdir(parents=True, exist_ok=True)
    (pdir / f"{base:020d}.log").write_bytes(b"".join(batches))
    return pdir


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def fixture_mtime(path: str) -> int:
    return next(e["mtime_ms"] for e in MANIFEST["logs"] if e["path"] == path)


# ---------------------------------------------------------------------------- schema values


def _primitive(p: Primitive, nullable: bool):
    if p.name in _RANGES:
        bits = _RANGES[p.name]
        s = st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    elif p.name == "uint16":
        s = st.integers(0, 0xFFFF)
    elif p.name == "uint32":
        s = st.integers(0, 0xFFFFFFFF)
    elif p.name == "float64":
        s = st.floats(allow_nan=False)
    elif p.name == "bool":
        s = st.booleans()
    elif p.name == "uuid":
        s = st.binary(min_size=16, max_size=16).map(uuid_to_str)
    elif p.name == "string":
        s = st.text(max_size=12)
    else:
        s = st.binary(max_size=12)
    return st.one_of(st.none(), s) if nullable else s


def _type(t, version: int, nullable: bool):
    if isinstance(t, StructDef):
        s = struct_values(t, version)
    elif isinstance(t, ArrayOf):
        s = st.lists(_type(t.element, version, False), max_size=3)
    else:
        return _primitive(t, nullable)
    return st.one_of(st.none(), s) if nullable else s


def _field(f: Field, version: int):
    if not (f.mandatory_in(version) or f.tagged_in(version)):
        return st.just(f.default_value())
    return _type(f.type, version, version in f.nullable)


def struct_values(sdef: StructDef, version: int):
    """Random values for every field a version carries (defaults for the others)."""
    return st.fixed_dictionaries({f.key: _field(f, version) for f in sdef.fields})


def message_values(message: Message, version: int):
    return struct_values(message.body, version)
