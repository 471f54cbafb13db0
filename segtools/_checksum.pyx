"""CRC-32C and CRC-32 over any buffer, from the same compiled code the batch walk uses
(``checksum.h``): folding by carry-less multiplication or the CPU's CRC instruction where the
CPU has them, slicing-by-8 tables otherwise."""

from libc.stdint cimport uint8_t, uint32_t, uint64_t


cdef extern from "checksum.h":
    uint32_t segtools_crc32c_raw(uint32_t crc, const uint8_t *p, size_t n) nogil
    uint32_t segtools_crc32_raw(uint32_t crc, const uint8_t *p, size_t n) nogil
    void segtools_crc_init(int allow_hw)
    void segtools_crc_init_limit(int limit)
    int segtools_crc32c_level
    int SEGTOOLS_CRC_BEST
    int SEGTOOLS_FOLD_COUNT
    const unsigned *segtools_fold_bits
    uint64_t segtools_fold_k[][2]

segtools_crc_init(1)

#: The CRC-32C implementations, by level (``checksum.h``): each the fallback of the next.
LEVELS = ("tables", "instruction", "fold128", "fold512")


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
    """Whether CRC-32C runs on the CPU's instructions (False: the table fallback)."""
    return bool(segtools_crc32c_level)


def level() -> str:
    """The CRC-32C implementation this module runs (one of :data:`LEVELS`)."""
    return LEVELS[segtools_crc32c_level]


def use_hardware(bint allow) -> None:
    """Force the table fallback (``allow=False``) or re-detect the best; for tests."""
    segtools_crc_init(allow)


def use_level(str name) -> str:
    """Run at most the implementation ``name`` (a fallback, for tests and benchmarks); returns
    the one chosen, lower when the CPU lacks it."""
    segtools_crc_init_limit(LEVELS.index(name))
    return level()


def fold_constants() -> dict[int, tuple[int, int]]:
    """The folding constants by distance in bits, as the CPU uses them (low and high 64-bit
    lanes): held by the tests to their definition."""
    return {segtools_fold_bits[d]: (segtools_fold_k[d][0], segtools_fold_k[d][1])
            for d in range(SEGTOOLS_FOLD_COUNT)}
