"""The bulk record decoder: the records of many v2 batches -> column arrays, in one call.

A Python loop over records tops out near 0.3 M records/s; this kernel is plain Python source
compiled by numba (LLVM), so deep decodes run at memory speed while the code stays readable and
the project stays Python-only. It produces *positions*, not objects: key/value/header spans into
the source buffer (the segment's mmap for uncompressed batches, a decompressed buffer otherwise),
which renderers slice and Arrow builders gather without per-record Python work.

It validates exactly what ``DefaultRecord.readFrom`` and ``DefaultRecordBatch.RecordIterator``
validate, and must agree with the construct reference (:mod:`segtools.formats.batch`): the
differential tests hold it to that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

# Error codes, stable: a renderer maps them to messages (ERROR_MESSAGES).
OK = 0
ERR_TRUNCATED = 1
ERR_VARINT_TOO_LONG = 2
ERR_RECORD_LENGTH = 3
ERR_NEGATIVE_HEADER_COUNT = 4
ERR_NEGATIVE_HEADER_KEY = 5
ERR_TRAILING_BYTES = 6
ERR_NEGATIVE_COUNT = 7

ERROR_MESSAGES = {
    ERR_TRUNCATED: "record runs past the end of its batch",
    ERR_VARINT_TOO_LONG: "varint longer than Kafka allows",
    ERR_RECORD_LENGTH: "record body does not match its declared length",
    ERR_NEGATIVE_HEADER_COUNT: "negative header count",
    ERR_NEGATIVE_HEADER_KEY: "negative header key size",
    ERR_TRAILING_BYTES: "bytes left after the declared record count (incorrect batch size)",
    ERR_NEGATIVE_COUNT: "negative record count",
}

#: The smallest possible v2 record: length, attributes, timestamp delta, offset delta, key
#: length, value length, header count: one byte each.
MIN_RECORD_SIZE = 7
#: The smallest possible header: key length 0 and value length -1.
MIN_HEADER_SIZE = 2


def _jit(**options):
    """``numba.njit`` with an on-disk cache, so only the first process pays the compile; an
    install with no writable cache location (a read-only site-packages, no writable home)
    still works, compiling once per process instead."""

    def wrap(fn):
        try:
            return numba.njit(cache=True, nogil=True, **options)(fn)
        except RuntimeError:  # numba: "cannot cache function ...: no locator available"
            return numba.njit(cache=False, nogil=True, **options)(fn)

    return wrap


@_jit(inline="always")
def _varint(buf, pos, end, max_bytes):
    """Zigzag LEB128 (``ByteUtils.readVarint/readVarlong``). Returns (value, next pos); next pos
    is -1 when the bytes run out and -2 when the varint is longer than ``max_bytes``."""
    raw = np.uint64(0)
    shift = np.uint64(0)
    for i in range(max_bytes):
        if pos + i >= end:
            return np.int64(0), -1
        b = np.uint64(buf[pos + i])
        raw |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            if max_bytes == 5:  # Java's int drops bits past 31 before the zigzag
                v32 = np.uint32(raw & np.uint64(0xFFFFFFFF))
                return np.int64(np.int32((v32 >> np.uint32(1)) ^ -(v32 & np.uint32(1)))), \
                    pos + i + 1
            value = np.int64(raw >> np.uint64(1)) ^ -np.int64(raw & np.uint64(1))
            return value, pos + i + 1
        shift += np.uint64(7)
    return np.int64(0), -2


@_jit()
def decode_v2(buf, starts, ends, counts, base_offsets, base_timestamps, log_append_time,
              max_timestamps, out_offset, out_timestamp, out_key_pos, out_key_len,
              out_value_pos, out_value_len, out_headers_pos, out_headers_count, out_batch,
              out_sequence_delta, err_code, err_pos):
    """Decode the records of every batch ``b`` found in ``buf[starts[b]:ends[b]]``.

    Writes one row per record into the ``out_*`` arrays (sized by :func:`record_capacity`) and
    returns the number of rows. A batch that breaks a rule gets ``err_code[b]`` and the byte at
    fault in ``err_pos[b]``; the records before the fault are kept, as Kafka's iterator would
    have returned them before throwing.
    """
    n = 0
    for b in range(starts.shape[0]):
        pos = starts[b]
        end = ends[b]
        err_code[b] = 0
        err_pos[b] = -1
        if counts[b] < 0:  # DefaultRecordBatch: "Found invalid record count"
            err_code[b] = 7
            err_pos[b] = pos
            continue
        for _ in range(counts[b]):
            rec_start = pos
            length, p = _varint(buf, pos, end, 5)
            if p < 0:
                err_code[b] = 1 if p == -1 else 2
                err_pos[b] = rec_start
                break
            body_end = p + length
            if length < 0 or body_end > end:
                err_code[b] = 1
                err_pos[b] = rec_start
                break
            p += 1  # attributes (unused)
            ts_delta, p = _varint(buf, p, body_end, 10)
            if p < 0:
                break
            off_delta, p = _varint(buf, p, body_end, 5)
            if p < 0:
                break
            key_len, p = _varint(buf, p, body_end, 5)
            if p < 0:
                break
            key_pos = p
            if key_len >= 0:
                p += key_len
            else:
                key_len = -1
            if p > body_end:
                p = -1
                break
            value_len, p = _varint(buf, p, body_end, 5)
            if p < 0:
                break
            value_pos = p
            if value_len >= 0:
                p += value_len
            else:
                value_len = -1
            if p > body_end:
                p = -1
                break
            header_count, p = _varint(buf, p, body_end, 5)
            if p < 0:
                break
            if header_count < 0:
                err_code[b] = 4
                err_pos[b] = rec_start
                break
            headers_pos = p
            for _h in range(header_count):
                hk_len, p = _varint(buf, p, body_end, 5)
                if p < 0:
                    break
                if hk_len < 0:
                    err_code[b] = 5
                    break
                p += hk_len
                if p > body_end:
                    p = -1
                    break
                hv_len, p = _varint(buf, p, body_end, 5)
                if p < 0:
                    break
                if hv_len > 0:
                    p += hv_len
                if p > body_end:
                    p = -1
                    break
            if err_code[b] != 0 or p < 0:
                if err_code[b] == 0:
                    err_code[b] = 3
                err_pos[b] = rec_start
                break
            if p != body_end:
                err_code[b] = 3
                err_pos[b] = rec_start
                break
            out_offset[n] = base_offsets[b] + off_delta
            if log_append_time[b]:
                out_timestamp[n] = max_timestamps[b]
            else:
                out_timestamp[n] = base_timestamps[b] + ts_delta
            out_key_pos[n] = key_pos
            out_key_len[n] = key_len
            out_value_pos[n] = value_pos
            out_value_len[n] = value_len
            out_headers_pos[n] = headers_pos
            out_headers_count[n] = header_count
            out_batch[n] = b
            out_sequence_delta[n] = off_delta
            n += 1
            pos = body_end
        else:
            if pos != end:
                err_code[b] = 6
                err_pos[b] = pos
            continue
        if err_code[b] == 0:  # a varint inside a record body ran out or overran
            err_code[b] = 3
            err_pos[b] = pos
    return n


@_jit()
def decode_headers(buf, headers_pos, headers_count, out_key_pos, out_key_len, out_value_pos,
                   out_value_len, out_record):
    """Second pass over already-validated header sections: one row per header."""
    n = 0
    for r in range(headers_pos.shape[0]):
        p = headers_pos[r]
        for _ in range(headers_count[r]):
            k_len, p = _varint(buf, p, buf.shape[0], 5)
            out_key_pos[n] = p
            out_key_len[n] = k_len
            p += k_len
            v_len, p = _varint(buf, p, buf.shape[0], 5)
            out_value_pos[n] = p
            if v_len >= 0:
                out_value_len[n] = v_len
                p += v_len
            else:
                out_value_len[n] = -1
            out_record[n] = r
            n += 1
    return n


@_jit()
def gather(buf, pos, lengths, out):
    """Copy the spans ``buf[pos[i]:pos[i]+lengths[i]]`` back to back into ``out`` (nulls are
    empty) and return Arrow-style int32 offsets; used to build binary columns."""
    offsets = np.empty(pos.shape[0] + 1, dtype=np.int32)
    o = 0
    offsets[0] = 0
    for i in range(pos.shape[0]):
        ln = lengths[i]
        if ln > 0:
            out[o:o + ln] = buf[pos[i]:pos[i] + ln]
            o += ln
        offsets[i + 1] = o
    return offsets


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """Records as columns. Spans (``*_pos``/``*_len``, length -1 = null) point into ``data``."""

    data: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    key_pos: np.ndarray
    key_len: np.ndarray
    value_pos: np.ndarray
    value_len: np.ndarray
    headers_pos: np.ndarray
    headers_count: np.ndarray
    batch: np.ndarray  # index into the batches passed in
    offset_delta: np.ndarray
    err_code: np.ndarray  # per batch
    err_pos: np.ndarray  # per batch

    def __len__(self) -> int:
        return int(self.offset.shape[0])

    def key(self, i: int) -> bytes | None:
        return self._span(self.key_pos[i], self.key_len[i])

    def value(self, i: int) -> bytes | None:
        return self._span(self.value_pos[i], self.value_len[i])

    def _span(self, pos, length) -> bytes | None:
        if length < 0:
            return None
        return self.data[pos:pos + length].tobytes()

    def headers(self, i: int) -> tuple[tuple[str, bytes | None], ...]:
        count = int(self.headers_count[i])
        if count == 0:
            return ()
        kp, kl, vp, vl = (np.empty(count, np.int64) for _ in range(4))
        rec = np.empty(count, np.int32)
        decode_headers(self.data, self.headers_pos[i:i + 1], self.headers_count[i:i + 1],
                       kp, kl, vp, vl, rec)
        return tuple(
            (self.data[kp[j]:kp[j] + kl[j]].tobytes().decode("utf-8", "replace"),
             self._span(vp[j], vl[j]))
            for j in range(count))


def record_capacity(starts: np.ndarray, ends: np.ndarray, counts: np.ndarray) -> int:
    """Rows to allocate: the declared counts, but never more than the bytes can hold, so a
    lying ``recordsCount`` of 2^31 cannot make us allocate for it."""
    by_size = (ends - starts) // MIN_RECORD_SIZE
    return int(np.minimum(np.maximum(counts, 0), by_size).sum())


def decode(data: np.ndarray, starts, ends, counts, base_offsets, base_timestamps,
           log_append_time, max_timestamps) -> RecordColumns:
    """Run :func:`decode_v2` over ``data`` (a uint8 array) for the given batch spans."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    cap = record_capacity(starts, ends, counts)
    cols = [np.empty(cap, np.int64) for _ in range(7)]
    hcount = np.empty(cap, np.int32)
    batch = np.empty(cap, np.int32)
    delta = np.empty(cap, np.int32)
    err_code = np.zeros(starts.shape[0], np.int8)
    err_pos = np.zeros(starts.shape[0], np.int64)
    n = decode_v2(data, starts, ends, counts,
                  np.asarray(base_offsets, dtype=np.int64),
                  np.asarray(base_timestamps, dtype=np.int64),
                  np.asarray(log_append_time, dtype=np.bool_),
                  np.asarray(max_timestamps, dtype=np.int64),
                  cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], hcount, batch,
                  delta, err_code, err_pos)
    return RecordColumns(data, cols[0][:n], cols[1][:n], cols[2][:n], cols[3][:n], cols[4][:n],
                         cols[5][:n], cols[6][:n], hcount[:n], batch[:n], delta[:n], err_code,
                         err_pos)
