"""Message formats v0 and v1: what only a compressed wrapper's inflated value can tell.

The walk (:mod:`segtools.decode._walk`) lays out every v0/v1 entry in compiled code, so an
uncompressed legacy message costs no Python. A compressed *wrapper* is different: its offset
is that of its LAST inner message, so the batch's base offset (the first inner offset,
``AbstractLegacyRecordBatch.baseOffset``) is known only after inflating it. That happens here,
once per wrapper, with the inner message set laid out by the compiled
:func:`~segtools.decode._walk.legacy_messages`.

Offsets (``AbstractLegacyRecordBatch.DeepRecordsIterator``): v0 inner offsets are absolute;
v1 inner offsets are relative to the wrapper, whose offset is the absolute offset of the last
inner message (some librdkafka versions wrote 0 there: then the base is 0). Timestamps: a v1
wrapper with LogAppendTime stamps its own timestamp on every inner record.
"""

from __future__ import annotations

import numpy as np

from segtools.codecs import DEFAULT_DECOMPRESS_LIMIT, Compression, decompress
from segtools.decode import _walk
from segtools.decode.spans import KeyValueColumns
from segtools.errors import SegtoolsError
from segtools.formats import legacy

_MESSAGES = {
    _walk.MSG_SHORT_TIMESTAMP: "v1 message too short for its timestamp",
    _walk.MSG_SHORT_KEY_LENGTH: "message too short for its key length",
    _walk.MSG_KEY_PAST_END: "message key of {n} bytes runs past the message",
    _walk.MSG_SHORT_VALUE_LENGTH: "message too short for its value length",
    _walk.MSG_VALUE_PAST_END: "message value of {n} bytes runs past the message",
    -1: "inner message length out of range",
    -2: "compressed message nested inside a compressed wrapper",
}


def corrupt_message_text(reason: int, declared: int = 0) -> str:
    """Why ``LegacyRecord`` would refuse a message, from a kernel reason code."""
    return _MESSAGES[reason].format(n=declared)


def _outer(buf: np.ndarray, at: int, size: int) -> tuple[int, int, int, int, int]:
    """(offset, magic, attributes, value position, value length) of the entry at ``at``."""
    _, _, value_at, value_len, reason, bad = _walk.legacy_layout(buf, at, size)
    if reason:
        raise SegtoolsError(corrupt_message_text(reason, bad))
    offset = int(buf[at:at + 8].view(">i8")[0])
    return offset, int(buf[at + 16]), int(buf[at + 17]), at + value_at, value_len


def inflate(buf: np.ndarray, at: int, size: int, *, limit: int = DEFAULT_DECOMPRESS_LIMIT
            ) -> tuple[int, int, int, np.ndarray]:
    """A compressed wrapper at ``buf[at:at+size]``: (offset, magic, attributes, inner bytes)."""
    offset, magic, attributes, value_at, value_len = _outer(buf, at, size)
    if value_len < 0:
        raise SegtoolsError("compressed wrapper has a null value")
    codec = Compression(attributes & 0x07)
    inner = decompress(codec, memoryview(buf)[value_at:value_at + value_len], magic=magic,
                       limit=limit)
    return offset, magic, attributes, np.frombuffer(inner, dtype=np.uint8) if inner else \
        np.zeros(0, np.uint8)


def _inner(data: np.ndarray) -> tuple[KeyValueColumns, np.ndarray, np.ndarray]:
    """Lay out an inflated inner message set; raises where Kafka's inner iterator would."""
    cap = len(data) // (legacy.RECORD_OVERHEAD_V0 + 12) + 1
    entry, offset, timestamp = (np.empty(cap, np.int64) for _ in range(3))
    magic, attributes = np.empty(cap, np.int8), np.empty(cap, np.int8)
    key_pos, key_len, value_pos, value_len = (np.empty(cap, np.int64) for _ in range(4))
    n, error, _, declared = _walk.legacy_messages(
        data, 0, len(data), entry, offset, magic, attributes, timestamp, key_pos, key_len,
        value_pos, value_len)
    if error:
        raise SegtoolsError(corrupt_message_text(error, declared))
    if n == 0:
        raise SegtoolsError("compressed wrapper holds no messages")
    messages = KeyValueColumns(data, offset[:n], timestamp[:n], key_pos[:n], key_len[:n],
                        value_pos[:n], value_len[:n])
    return messages, magic[:n], attributes[:n]


def _base(wrapper_offset: int, magic: int, last_inner: int) -> int | None:
    """What to add to inner offsets: None for v0 (absolute), else the v1 base."""
    if magic == 0:
        return None
    if wrapper_offset == 0:  # some librdkafka versions wrote 0 for the wrapper
        return 0
    base = wrapper_offset - last_inner
    if base < 0:
        raise SegtoolsError("wrapper offset is smaller than its last inner offset")
    return base


def wrapper_base_offset(buf: np.ndarray, at: int, size: int, *,
                        limit: int = DEFAULT_DECOMPRESS_LIMIT) -> int:
    """The first inner offset of the compressed wrapper at ``buf[at:at+size]`` (what
    ``AbstractLegacyRecordBatch.baseOffset`` iterates to find); raises ``SegtoolsError``."""
    offset, magic, _, inner = inflate(buf, at, size, limit=limit)
    messages, _, _ = _inner(inner)
    base = _base(offset, magic, int(messages.offset[-1]))
    first = int(messages.offset[0])
    return first if base is None else base + first


def wrapper_messages(buf: np.ndarray, at: int, size: int, *,
                     limit: int = DEFAULT_DECOMPRESS_LIMIT) -> KeyValueColumns:
    """The records of the compressed wrapper at ``buf[at:at+size]``, with Kafka's offset and
    timestamp rules applied (spans point into the inflated inner set)."""
    offset, magic, attributes, inner = inflate(buf, at, size, limit=limit)
    messages, _, _ = _inner(inner)
    base = _base(offset, magic, int(messages.offset[-1]))
    offsets = messages.offset if base is None else messages.offset + base
    timestamps = messages.timestamp
    if magic == 1 and attributes & legacy.TIMESTAMP_TYPE_MASK:  # LogAppendTime
        wrapper_ts = int(buf[at + 18:at + 26].view(">i8")[0])
        timestamps = np.full(len(messages), wrapper_ts, np.int64)
    return KeyValueColumns(messages.data, offsets, timestamps, messages.key_pos, messages.key_len,
                    messages.value_pos, messages.value_len)


def message_set(data: np.ndarray) -> KeyValueColumns:
    """The messages of an uncompressed v0/v1 message set in ``data`` (entries the walk has
    already validated), laid out in one compiled call; spans point into ``data``."""
    messages, _, _ = _inner(data)
    return messages
