"""How many entries a zip's central directory holds, counted without building them.

``zipfile.ZipFile`` reads the whole central directory and makes one ``ZipInfo`` (about a
kilobyte of Python objects) per entry before anything can look at the list: a 47 MB zip of
600,000 empty entries took 620 MB of memory and 43 s before the member cap could refuse it.
Walking the directory's fixed 46-byte headers (APPNOTE.TXT 4.3.12) and skipping their
variable fields costs no memory and stops as soon as the cap is passed, so the archive
reader can refuse such a zip before ``zipfile`` sees it.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

#: End of central directory record (APPNOTE 4.3.16): signature, disk numbers, entry counts,
#: the directory's size and offset, the comment's length.
_END = struct.Struct("<4s4H2LH")
_END_SIGNATURE = b"PK\x05\x06"
#: Zip64 end of central directory locator (4.3.15) and record (4.3.14).
_LOCATOR = struct.Struct("<4sLQL")
_LOCATOR_SIGNATURE = b"PK\x06\x07"
_END64 = struct.Struct("<4sQ2H2L4Q")
_END64_SIGNATURE = b"PK\x06\x06"
#: A central directory header's fixed part (4.3.12); the name, extra field and comment
#: lengths sit at bytes 28, 30 and 32.
_ENTRY = struct.Struct("<4s6H3L5H2L")
_ENTRY_SIGNATURE = b"PK\x01\x02"
#: The end record sits in the file's last 22 bytes plus a comment of at most 65,535 bytes.
_TAIL = _END.size + 0xFFFF


def _directory_span(f: BinaryIO, size: int) -> tuple[int, int] | None:
    """Where the central directory starts and how long it is, as ``zipfile`` finds it: just
    before the end record (and the zip64 record when there is one); None without an end
    record (then ``zipfile`` refuses the file itself)."""
    tail_start = max(0, size - _TAIL)
    f.seek(tail_start)
    tail = f.read()
    at = tail.rfind(_END_SIGNATURE)
    if at < 0 or len(tail) - at < _END.size:
        return None
    fields = _END.unpack_from(tail, at)
    dir_size, end_at = fields[5], tail_start + at
    if end_at >= _LOCATOR.size:
        f.seek(end_at - _LOCATOR.size)
        locator = f.read(_LOCATOR.size)
        if locator[:4] == _LOCATOR_SIGNATURE:
            end64_at = end_at - _LOCATOR.size - _END64.size
            if end64_at >= 0:
                f.seek(end64_at)
                record = f.read(_END64.size)
                if record[:4] == _END64_SIGNATURE:
                    dir_size, end_at = _END64.unpack(record)[8], end64_at
    return max(0, end_at - dir_size), dir_size


#: The most central directory ``zipfile`` is let read: it reads it whole, then keeps every
#: entry's name, extra field and comment (up to 192 KiB an entry). 100,000 members named as
#: a broker names them take about 10 MB.
DIRECTORY_CAP = 64 * 1024 * 1024


def refusal(f: BinaryIO, size: int, limit: int) -> str | None:
    """Why the zip ``f`` (``size`` bytes long) is not given to ``zipfile``: a central
    directory larger than :data:`DIRECTORY_CAP`, or of more than ``limit`` entries; None
    when neither."""
    span = _directory_span(f, size)
    if span is not None and span[1] > DIRECTORY_CAP:
        return (f"a central directory of {span[1]} bytes: more than {DIRECTORY_CAP} bytes of "
                "member headers, not read")
    if entries_over(f, size, limit, span):
        return (f"more than {limit} members: not read (set --storage-option max_members=N "
                "to read it)")
    return None


def entries_over(f: BinaryIO, size: int, limit: int,
                 span: tuple[int, int] | None = None) -> bool:
    """Whether the central directory of the zip ``f`` (``size`` bytes long; at ``span`` when
    already found) holds more than ``limit`` entries. Only headers are read (46 bytes each,
    then a seek past their variable fields); the walk ends at the directory's end, at the
    first bytes that are no header (``zipfile`` says what is wrong there), or once ``limit``
    is passed."""
    span = span or _directory_span(f, size)
    if span is None:
        return False
    pos, end = span[0], min(size, span[0] + span[1])
    count = 0
    while pos + _ENTRY.size <= end:
        f.seek(pos)
        header = f.read(_ENTRY.size)
        if len(header) < _ENTRY.size or header[:4] != _ENTRY_SIGNATURE:
            return False
        count += 1
        if count > limit:
            return True
        fields = _ENTRY.unpack(header)
        pos += _ENTRY.size + fields[10] + fields[11] + fields[12]
    return False
