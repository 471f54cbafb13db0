"""CRC-32C and CRC-32 over any buffer, from the same compiled code the batch walk uses
(``checksum.h``): the CPU's CRC instruction where there is one, slicing-by-8 tables otherwise."""

from libc.stdint cimport uint8_t, uint32_t


cdef extern from "checksum.h":
    uint32_t segtools_crc32c_raw(uint32_t crc, const uint8_t *p, size_t n) nogil
    uint32_t segtools_crc32_raw(uint32_t crc, const uint8_t *p, size_t n) nogil
    void segtools_crc_init(int allow_hw)
    int segtools_crc32c_hw

segtools_crc_init(1)


def crc32c(const uint8_t[::1] data, uint32_t value=0) -> int:
    """CRC-32C (``Crc32C``) of ``data``; ``value`` is the CRC of the bytes before it."""
    cdef uint32_t raw = value ^ 0xFFFFFFFF
    if data.shape[0]:
        with nogil:
            raw = segtools_crc32c_raw(raw, &data[0], data.shape[0])
    return raw ^ 0xFFFFFFFF


def crc32(const uint8_t[::1] data, uint32_t value=0) -> int:
    """CRC-32 IEEE (``java.util.zip.CRC32``) of ``data``, continuing ``value``."""
    cdef uint32_t raw = value ^ 0xFFFFFFFF
    if data.shape[0]:
        with nogil:
            raw = segtools_crc32_raw(raw, &data[0], data.shape[0])
    return raw ^ 0xFFFFFFFF


def hardware() -> bool:
    """Whether CRC-32C runs on the CPU's instruction (False: the table fallback)."""
    return bool(segtools_crc32c_hw)


def use_hardware(bint allow) -> None:
    """Force the table fallback (``allow=False``) or re-detect the instruction; for tests."""
    segtools_crc_init(allow)
