"""Renderers shared by every command: bytes as text, JSON lines, finding lines.

Keys and values are arbitrary bytes from producers; printed raw they could carry terminal
escape sequences. Text output therefore escapes every control character
(:func:`segtools.text.terminal_safe`, shared with the report), and JSON output is always valid
UTF-8 JSON whatever the bytes (base64 by default).
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from functools import lru_cache

from segtools.findings import Finding
from segtools.model import Batch, Record
from segtools.text import json_safe, shown_path, terminal_safe

BYTES_MODES = ("base64", "hex", "utf8")


def render_bytes(data: bytes | None, mode: str) -> str | None:
    if data is None:
        return None
    if mode == "base64":
        return base64.b64encode(data).decode("ascii")
    if mode == "hex":
        return data.hex()
    return data.decode("utf-8", "backslashreplace")


def human_time(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (``-`` for Kafka's -1)."""
    if ms < 0:
        return "-"
    seconds, millis = divmod(ms, 1000)
    text = _second(seconds)
    return text if text == "out-of-range" else f"{text}.{millis:03d}Z"


@lru_cache(maxsize=4096)
def _second(seconds: int) -> str:
    """One second's ISO-8601 text, cached: a replay prints thousands of lines per second of
    log time."""
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return "out-of-range"


def record_json(record: Record, mode: str) -> dict:
    out = {
        "type": "record",
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": render_bytes(record.key, mode),
        "value": render_bytes(record.value, mode),
        "headers": [{"key": k, "value": render_bytes(v, mode)} for k, v in record.headers],
        "sequence": record.sequence,
    }
    if record.control is not None:
        control: dict = {"type": record.control.type}
        if record.control.coordinator_epoch is not None:
            control["coordinator_epoch"] = record.control.coordinator_epoch
        out["control"] = control
    return out


def dumps(obj: dict) -> str:
    """Compact JSON, always encodable as UTF-8: text holding lone surrogates (undecodable
    file-name bytes) is written with ``\\uXXXX`` escapes instead. C1 controls, bidi and
    zero-width characters and U+2028/U+2029 are always escaped (:func:`segtools.text.json_safe`):
    JSON allows them raw, but a terminal acts on them, and Python's ``str.splitlines`` and
    JavaScript source treat the last two as line ends."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return json_safe(text)


def batch_text(batch: Batch) -> str:
    """Kafka's ``DumpLogSegments`` batch line, plus the max timestamp in UTC."""
    ts = f"{batch.timestamp_type}: {batch.max_timestamp} ({human_time(batch.max_timestamp)})"
    valid = "unchecked" if batch.crc_valid is None else str(batch.crc_valid).lower()
    if batch.magic < 2:
        return (f"offset: {batch.last_offset} position: {batch.position} {ts} "
                f"size: {batch.size} magic: {batch.magic} compresscodec: {batch.compression} "
                f"crc: {batch.crc} isvalid: {valid}")
    horizon = (f"OptionalLong[{batch.delete_horizon_ms}]" if batch.has_delete_horizon
               else "OptionalLong.empty")
    return (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"count: {batch.count} baseSequence: {batch.base_sequence} "
            f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {str(batch.is_transactional).lower()} "
            f"isControl: {str(batch.is_control).lower()} deleteHorizonMs: {horizon} "
            f"position: {batch.position} {ts} size: {batch.size} magic: {batch.magic} "
            f"compresscodec: {batch.compression} crc: {batch.crc} isvalid: {valid}")


def record_text(record: Record, batch: Batch, *, print_data: bool, mode: str,
                key_text: str | None = None, value_text: str | None = None) -> str:
    """Kafka's ``| offset: ...`` record line; data escaped for the terminal. ``key_text`` /
    ``value_text`` stand where the bytes would (a decoded payload's compact JSON)."""
    key_size = -1 if record.key is None else len(record.key)
    value_size = -1 if record.value is None else len(record.value)
    line = (f"| offset: {record.offset} {batch.timestamp_type}: {record.timestamp} "
            f"({human_time(record.timestamp)}) keySize: {key_size} valueSize: {value_size}")
    if batch.magic >= 2:
        keys = ",".join(terminal_safe(k) for k, _ in record.headers)
        line += f" sequence: {record.sequence} headerKeys: [{keys}]"
    if record.control is not None:
        if record.control.coordinator_epoch is not None:
            line += (f" endTxnMarker: {record.control.type} "
                     f"coordinatorEpoch: {record.control.coordinator_epoch}")
        else:
            line += f" controlType: {record.control.type}"
    elif print_data:
        if record.key is not None:
            key = key_text if key_text is not None else render_bytes(record.key, mode)
            line += f" key: {terminal_safe(key)}"
        if record.value is not None:
            value = value_text if value_text is not None else render_bytes(record.value, mode)
            line += f" payload: {terminal_safe(value)}"
        if record.headers:
            hs = ", ".join(f"{terminal_safe(k)}={terminal_safe(render_bytes(v, mode) or 'null')}"
                           for k, v in record.headers)
            line += f" headers: [{hs}]"
    return line


def finding_line(f: Finding) -> str:
    """The text form of a finding in the forensic commands."""
    where = f" at offset {f.offset}" if f.offset is not None else ""
    return (f"{f.severity.upper()} {f.code}{where} ({terminal_safe(shown_path(f.path))}): "
            f"{terminal_safe(f.message)}")
