"""Keys and values as spans into one buffer: what every decoded record set has in common.

A decode lays records out without copying them: each key and value is a position and a length
(-1: null) into the bytes it read (a file window, or an inflated buffer). The v2 record columns
(:class:`~segtools.decode.chunks.RecordColumns`) add headers and the batch each record is in;
the v0/v1 message sets of a compressed wrapper (:mod:`segtools.decode.legacy`) are these
columns alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class KeyValueColumns:
    """Records as columns of offsets, timestamps and key/value spans into ``data``."""

    data: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    key_pos: np.ndarray
    key_len: np.ndarray
    value_pos: np.ndarray
    value_len: np.ndarray

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
