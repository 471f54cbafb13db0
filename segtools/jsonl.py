"""Bulk JSON Lines for records: the kernel's columns -> the exact bytes ``json.dumps`` would give.

``segtools dump --deep --format jsonl`` is output-bound: a Python ``dict`` + ``json.dumps`` per
record costs ~10 µs, several times what Kafka's own Java reader needs. This renderer writes the
record lines of a whole chunk in one compiled call (numba, like :mod:`segtools.kernel`),
byte-identical to :func:`segtools.cli.render.record_json` passed through ``render.dumps``; a
test holds the two to that on every fixture. Records it cannot render byte-identically (header
keys or utf8-mode bytes that are not plain ASCII) are flagged and rendered by the Python path.
"""

from __future__ import annotations

import numpy as np

from segtools.kernel import _jit, _varint

MODE_BASE64, MODE_HEX, MODE_UTF8 = 0, 1, 2
MODES = {"base64": MODE_BASE64, "hex": MODE_HEX, "utf8": MODE_UTF8}

_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                     dtype=np.uint8)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_P_OFFSET = np.frombuffer(b'{"type":"record","offset":', dtype=np.uint8)
_P_TIMESTAMP = np.frombuffer(b',"timestamp":', dtype=np.uint8)
_P_KEY = np.frombuffer(b',"key":', dtype=np.uint8)
_P_VALUE = np.frombuffer(b',"value":', dtype=np.uint8)
_P_HEADERS = np.frombuffer(b',"headers":[', dtype=np.uint8)
_P_HKEY = np.frombuffer(b'{"key":', dtype=np.uint8)
_P_SEQUENCE = np.frombuffer(b'],"sequence":', dtype=np.uint8)
_NULL = np.frombuffer(b"null", dtype=np.uint8)
# json.dumps' short escapes for control characters; others become \u00XX
_SHORT_ESCAPE = np.zeros(128, dtype=np.uint8)
for _c, _e in ((8, b"b"), (9, b"t"), (10, b"n"), (12, b"f"), (13, b"r"), (34, b'"'),
               (92, b"\\")):
    _SHORT_ESCAPE[_c] = _e[0]

#: Bytes a record needs at most beyond 6 per data byte (fixed text, numbers, header framing).
FIXED_BYTES = 160
PER_HEADER_BYTES = 40


@_jit(inline="always")
def _put(out, o, piece):
    out[o:o + piece.shape[0]] = piece
    return o + piece.shape[0]


@_jit(inline="always")
def _put_int(out, o, v):
    if v == 0:
        out[o] = 48
        return o + 1
    neg = v < 0
    # magnitude as uint64 so that int64's minimum does not overflow
    m = np.uint64(-(v + 1)) + np.uint64(1) if neg else np.uint64(v)
    digits = 0
    t = m
    while t > 0:
        digits += 1
        t //= np.uint64(10)
    if neg:
        out[o] = 45
        o += 1
    end = o + digits
    p = end - 1
    while m > 0:
        out[p] = 48 + np.uint8(m % np.uint64(10))
        m //= np.uint64(10)
        p -= 1
    return end


@_jit(inline="always")
def _ascii_plain(buf, pos, length):
    """True when the span is ASCII: json.dumps and this renderer then agree byte for byte."""
    for i in range(length):  # noqa: SIM110 - numba compiles loops, not generator expressions
        if buf[pos + i] >= 128:
            return False
    return True


@_jit(inline="always")
def _put_json_ascii(out, o, buf, pos, length, short_escape, hexd):
    """A JSON string of ASCII bytes, escaped as ``json.dumps(ensure_ascii=False)`` does."""
    out[o] = 34
    o += 1
    for i in range(length):
        c = buf[pos + i]
        if c < 32 or c == 34 or c == 92:
            out[o] = 92
            if short_escape[c]:
                out[o + 1] = short_escape[c]
                o += 2
            else:
                out[o + 1] = 117  # \u00XX
                out[o + 2] = 48
                out[o + 3] = 48
                out[o + 4] = hexd[c >> 4]
                out[o + 5] = hexd[c & 15]
                o += 6
        else:
            out[o] = c
            o += 1
    out[o] = 34
    return o + 1


@_jit(inline="always")
def _put_bytes(out, o, buf, pos, length, mode, b64, hexd, short_escape, null):
    if length < 0:
        return _put(out, o, null)
    if mode == 2:
        return _put_json_ascii(out, o, buf, pos, length, short_escape, hexd)
    out[o] = 34
    o += 1
    if mode == 1:
        for i in range(length):
            c = buf[pos + i]
            out[o] = hexd[c >> 4]
            out[o + 1] = hexd[c & 15]
            o += 2
    else:
        i = 0
        while i + 3 <= length:
            n = (np.uint32(buf[pos + i]) << 16) | (np.uint32(buf[pos + i + 1]) << 8) | \
                np.uint32(buf[pos + i + 2])
            out[o] = b64[(n >> 18) & 63]
            out[o + 1] = b64[(n >> 12) & 63]
            out[o + 2] = b64[(n >> 6) & 63]
            out[o + 3] = b64[n & 63]
            o += 4
            i += 3
        rest = length - i
        if rest == 1:
            n = np.uint32(buf[pos + i]) << 16
            out[o] = b64[(n >> 18) & 63]
            out[o + 1] = b64[(n >> 12) & 63]
            out[o + 2] = 61
            out[o + 3] = 61
            o += 4
        elif rest == 2:
            n = (np.uint32(buf[pos + i]) << 16) | (np.uint32(buf[pos + i + 1]) << 8)
            out[o] = b64[(n >> 18) & 63]
            out[o + 1] = b64[(n >> 12) & 63]
            out[o + 2] = b64[(n >> 6) & 63]
            out[o + 3] = 61
            o += 4
    out[o] = 34
    return o + 1


@_jit()
def render_records(buf, rows, offset, timestamp, key_pos, key_len, value_pos, value_len,
                   headers_pos, headers_count, sequence, mode, out, line_end, python_rows):
    """Render ``rows`` (record indexes) as JSON lines into ``out``.

    ``line_end[j]`` receives the end of row j's line in ``out`` (-1 = not rendered: the caller
    renders the rows listed in ``python_rows`` itself). Returns (rows done, bytes used, rows
    left to Python); stops early when ``out`` is too small for the next row.
    """
    o = 0
    n_python = 0
    for j in range(rows.shape[0]):
        i = rows[j]
        # what this row may need, and whether it stays on the byte-identical path
        plain = True
        need = FIXED_BYTES
        if mode == 2:
            if key_len[i] > 0 and not _ascii_plain(buf, key_pos[i], key_len[i]):
                plain = False
            if value_len[i] > 0 and not _ascii_plain(buf, value_pos[i], value_len[i]):
                plain = False
        need += 6 * (max(key_len[i], 0) + max(value_len[i], 0))
        p = headers_pos[i]
        for _ in range(headers_count[i]):
            k_len, p = _varint(buf, p, buf.shape[0], 5)
            if not _ascii_plain(buf, p, k_len):
                plain = False
            need += PER_HEADER_BYTES + 6 * k_len
            p += k_len
            v_len, p = _varint(buf, p, buf.shape[0], 5)
            if v_len > 0:
                if mode == 2 and not _ascii_plain(buf, p, v_len):
                    plain = False
                need += 6 * v_len
                p += v_len
        if not plain:
            line_end[j] = -1
            python_rows[n_python] = j
            n_python += 1
            continue
        if o + need > out.shape[0]:
            return j, o, n_python
        o = _put(out, o, _P_OFFSET)
        o = _put_int(out, o, offset[i])
        o = _put(out, o, _P_TIMESTAMP)
        o = _put_int(out, o, timestamp[i])
        o = _put(out, o, _P_KEY)
        o = _put_bytes(out, o, buf, key_pos[i], key_len[i], mode, _B64, _HEX, _SHORT_ESCAPE,
                       _NULL)
        o = _put(out, o, _P_VALUE)
        o = _put_bytes(out, o, buf, value_pos[i], value_len[i], mode, _B64, _HEX,
                       _SHORT_ESCAPE, _NULL)
        o = _put(out, o, _P_HEADERS)
        p = headers_pos[i]
        for h in range(headers_count[i]):
            if h:
                out[o] = 44
                o += 1
            k_len, p = _varint(buf, p, buf.shape[0], 5)
            o = _put(out, o, _P_HKEY)
            o = _put_json_ascii(out, o, buf, p, k_len, _SHORT_ESCAPE, _HEX)
            p += k_len
            v_len, p = _varint(buf, p, buf.shape[0], 5)
            out[o:o + 9] = _P_VALUE[:9]  # ',"value":'
            o += 9
            o = _put_bytes(out, o, buf, p, v_len, mode, _B64, _HEX, _SHORT_ESCAPE, _NULL)
            if v_len > 0:
                p += v_len
            out[o] = 125
            o += 1
        o = _put(out, o, _P_SEQUENCE)
        o = _put_int(out, o, sequence[i])
        out[o] = 125
        out[o + 1] = 10
        o += 2
        line_end[j] = o
    return rows.shape[0], o, n_python


#: Output bytes rendered per kernel call (a bound: rows are grouped so it is never exceeded).
BUFFER_BYTES = 16 << 20


def row_bounds(cols, rows: np.ndarray, data_end: int) -> np.ndarray:
    """An upper bound on each row's line: 6 bytes per source byte (the worst JSON escape) of
    the record's span, up to the next record's key (records are laid out in order)."""
    nxt = np.empty_like(cols.key_pos)
    nxt[:-1] = cols.key_pos[1:]
    if len(nxt):
        nxt[-1] = data_end
    span = np.maximum(nxt - cols.key_pos, 0)[rows]
    return 6 * span + FIXED_BYTES + PER_HEADER_BYTES * cols.headers_count[rows]


def sequences(cols, base_sequence: np.ndarray) -> np.ndarray:
    """``DefaultRecordBatch``: base sequence + offset delta, wrapping at Integer.MAX_VALUE;
    -1 for batches without a producer sequence."""
    base = base_sequence[cols.batch].astype(np.int64)
    return np.where(base < 0, -1, (base + cols.offset_delta) % (1 << 31))


def render_rows(cols, rows: np.ndarray, seq: np.ndarray, mode: int, data_end: int):
    """Render ``rows`` in groups that fit the buffer. Yields (rows_part, out_bytes, line_end,
    python_rows) per kernel call; ``line_end[j] == -1`` marks rows left to Python."""
    if not len(rows):
        return
    bounds = row_bounds(cols, rows, data_end)
    cum = np.cumsum(bounds)
    lo = 0
    base = 0
    while lo < len(rows):
        hi = int(np.searchsorted(cum, base + BUFFER_BYTES, side="right"))
        hi = max(hi, lo + 1)
        part = rows[lo:hi]
        out = np.empty(int(cum[hi - 1] - base), dtype=np.uint8)
        line_end = np.empty(len(part), dtype=np.int64)
        python_rows = np.empty(len(part), dtype=np.int64)
        done, used, n_python = render_records(
            cols.data, part, cols.offset, cols.timestamp, cols.key_pos, cols.key_len,
            cols.value_pos, cols.value_len, cols.headers_pos, cols.headers_count, seq, mode,
            out, line_end, python_rows)
        if done != len(part):  # cannot happen: the bound is an upper bound
            raise AssertionError("jsonl buffer bound violated")
        yield part, out[:used], line_end, python_rows[:n_python]
        base = int(cum[hi - 1])
        lo = hi
