"""Record decoders for Kafka's internal topics, as ``kafka-dump-log.sh`` offers them.

``--offsets-decoder`` (``__consumer_offsets``), ``--transaction-log-decoder``
(``__transaction_state``), ``--cluster-metadata-decoder`` (``__cluster_metadata``) and
``--remote-log-metadata-decoder`` (``__remote_log_metadata``, KIP-1057) turn a
record's key and value into the structures Kafka's schemas define (see
:mod:`segtools.formats.internal`). A record that does not decode is shown with the reason,
never silently mis-parsed.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable

from segtools.errors import SegtoolsError
from segtools.formats.internal import (
    cluster_metadata,
    consumer_offsets,
    control,
    remote_log_metadata,
    transaction_state,
)
from segtools.model import Record
from segtools.sensitive import metadata_fields

Decoded = dict  # {"key": ..., "value": ...} or {"error": "..."}


def _plain(obj):
    """Decoded structures hold bytes (subscriptions' user data) and UUIDs: make them JSON."""
    if isinstance(obj, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(obj)).decode("ascii")
    if dataclasses.is_dataclass(obj):
        return _plain(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, int | float | str | bool) or obj is None:
        return obj
    return str(obj)


def offsets(record: Record) -> Decoded:
    r = consumer_offsets.decode_record(record.key, record.value)
    return {"key": {"type": r.name, "data": _plain(r.key)},
            "value": None if r.value is None else {"version": r.value_version,
                                                   "data": _plain(r.value)}}


def transaction_log(record: Record) -> Decoded:
    r = transaction_state.decode_record(record.key, record.value)
    value = None if r.value is None else {"version": r.value_version, "status": r.status,
                                          "data": _plain(r.value)}
    return {"key": {"transactional_id": r.transactional_id}, "value": value}


def cluster_metadata_record(record: Record) -> Decoded:
    if record.control is not None:
        c = control.decode_kraft_control(record.control.type, record.value)
        return {"value": {"type": c.name, "version": c.version, "data": _plain(c.data)}}
    r = cluster_metadata.decode_frame(record.value)
    return {"value": {"type": r.name, "version": r.version,
                      "data": _plain(metadata_fields(r.name, r.data))}}


def remote_log_metadata_record(record: Record) -> Decoded:
    """A ``RemoteLogMetadataSerde`` value; ``state`` names the state byte
    (``RemoteLogSegmentState`` / ``RemotePartitionDeleteState``)."""
    r = remote_log_metadata.decode_frame(record.value)
    key = "remotePartitionDeleteState" if r.api_key == remote_log_metadata.PARTITION_DELETE \
        else "remoteLogSegmentState"
    return {"value": {"type": r.name, "version": r.version,
                      "state": remote_log_metadata.state_name(r.api_key, r.data[key]),
                      "data": _plain(r.data)}}


DECODERS: dict[str, Callable[[Record], Decoded]] = {
    "offsets": offsets,
    "transaction_log": transaction_log,
    "cluster_metadata": cluster_metadata_record,
    "remote_log_metadata": remote_log_metadata_record,
}


def decode(name: str, record: Record) -> Decoded:
    """The decoded record, or ``{"error": ...}`` saying why it could not be decoded."""
    if record.control is not None and name != "cluster_metadata":
        return {}
    try:
        return DECODERS[name](record)
    except SegtoolsError as e:
        return {"error": str(e)}


def text(decoded: Decoded) -> str:
    """The ``key: ... payload: ...`` tail of a record line, as ``DumpLogSegments`` prints it
    (``<DELETE>`` for a tombstone)."""
    if not decoded:
        return ""
    if "error" in decoded:
        return f" undecodable: {decoded['error']}"
    out = ""
    if "key" in decoded:
        out += f" key: {json.dumps(decoded['key'], ensure_ascii=False)}"
    value = decoded.get("value")
    out += " payload: " + ("<DELETE>" if value is None else json.dumps(value,
                                                                      ensure_ascii=False))
    return out
