/* CRC-32C (Castagnoli) and CRC-32 (IEEE) for the compiled batch walk.
 *
 * Kafka checks a v2 batch with CRC-32C over [attributes, end of batch)
 * (DefaultRecordBatch.computeChecksum) and a v0/v1 message with CRC-32 over
 * [magic, end of message) (LegacyRecord.computeChecksum). Both run inside the compiled walk, so
 * a segment of a million small batches costs no Python call per batch.
 *
 * CRC-32C is chosen once at run time by what the CPU has (segtools_crc32c_level), each level
 * the fallback of the one above it:
 * - FOLD512 (x86-64 with AVX-512F/VL and `vpclmulqdq`): ranges of FOLD512_MIN bytes or more
 *   folded by carry-less multiplication, 256 bytes a step (crc32c_fold.h);
 * - FOLD128 (`pclmulqdq`): ranges from FOLD128_MIN bytes up to where the instruction runs
 *   three lanes (768 bytes) folded 64 bytes a step; past that the three lanes are as fast
 *   (Intel) or faster (AMD Zen 4: 22 against 15 bytes a ns, bytes in cache);
 * - INSTRUCTION: the CPU's own CRC instruction (x86-64 SSE4.2 `crc32`, ARMv8 `crc32c*`);
 * - TABLES: slicing-by-8.
 * The instruction runs long ranges as three independent streams over three lanes of LANE
 * bytes, joined with a "shift by LANE zero bytes" table (the CRC register is linear over
 * GF(2)); the instruction's latency is three times its throughput, so one stream alone would
 * run at a third of the speed.
 * The lanes are short (256 bytes: the three streams read 768 neighbouring bytes), so a range
 * that is not in the CPU caches is read front to back, as the hardware prefetcher expects:
 * lanes 2 KiB apart made the CRC of a 256 MiB segment from main memory twice as slow (0.034
 * against 0.016 s on the benchmark machine), for the same speed on bytes already cached.
 * CRC-32 (IEEE) has no instruction on these CPUs and always uses slicing-by-8; only legacy
 * messages need it.
 *
 * All functions take and return the *raw* register (no pre/post inversion): callers invert at
 * the ends, which lets one range be checksummed in pieces.
 */
#ifndef SEGTOOLS_CHECKSUM_H
#define SEGTOOLS_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SEGTOOLS_CRC_X86 1
#include <nmmintrin.h>
#include "crc32c_fold.h"
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__linux__)
#define SEGTOOLS_CRC_ARM 1
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#define SEGTOOLS_CRC32C_POLY 0x82F63B78u /* reflected Castagnoli */
#define SEGTOOLS_CRC32_POLY 0xEDB88320u  /* reflected IEEE 802.3 */
/* Bytes per lane when three streams interleave. */
#define SEGTOOLS_CRC_LANE 256
#define SEGTOOLS_CRC_LEVELS 1

static uint32_t segtools_crc32c_table[8][256];
static uint32_t segtools_crc32_table[8][256];
/* per lane size: the register after `lane` zero bytes, tabulated per byte of the register */
static uint32_t segtools_crc32c_shift[SEGTOOLS_CRC_LEVELS][4][256];
/* Which CRC-32C runs (the best the CPU has, or lower for tests): */
enum {
    SEGTOOLS_CRC_TABLES = 0,      /* slicing-by-8, any CPU */
    SEGTOOLS_CRC_INSTRUCTION = 1, /* `crc32` (SSE4.2) or ARMv8's, three lanes */
    SEGTOOLS_CRC_FOLD128 = 2,     /* `pclmulqdq` folding (crc32c_fold.h), 128-bit registers */
    SEGTOOLS_CRC_FOLD512 = 3,     /* `vpclmulqdq` folding, 512-bit registers (AVX-512) */
    SEGTOOLS_CRC_BEST = 3
};
static int segtools_crc32c_level = SEGTOOLS_CRC_TABLES;
/* Shortest ranges folded: below them the instruction's one stream is as fast, with no set-up.
 * Measured on the benchmark machine (AMD EPYC, Zen 4; bytes in cache, in bytes a ns):
 * 64-112 bytes 10-11 folded against 9.7 by one stream, 128-512 bytes 15 (128-bit) or 19-31
 * (512-bit, from 256 bytes), 3 KiB 56 against 23 for the three lanes. */
#define SEGTOOLS_CRC_FOLD128_MIN 64
#define SEGTOOLS_CRC_FOLD512_MIN 256

static inline uint64_t segtools_load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8); /* unaligned, little-endian on every CPU these paths run on */
    return v;
}

static uint32_t segtools_crc_sliced(uint32_t (*t)[256], uint32_t crc, const uint8_t *p,
                                    size_t n) {
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^
              t[4][lo >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--) crc = t[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

static void segtools_crc_fill(uint32_t (*t)[256], uint32_t poly) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (poly & (0u - (c & 1u)));
        t[0][i] = c;
    }
    for (int s = 1; s < 8; s++)
        for (uint32_t i = 0; i < 256; i++)
            t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
}

static inline uint32_t segtools_crc32c_shift_lane(int level, uint32_t x) {
    uint32_t (*t)[256] = segtools_crc32c_shift[level];
    return t[0][x & 0xFF] ^ t[1][(x >> 8) & 0xFF] ^ t[2][(x >> 16) & 0xFF] ^ t[3][x >> 24];
}

#if SEGTOOLS_CRC_X86
#define SEGTOOLS_CRC_TARGET __attribute__((target("sse4.2")))
SEGTOOLS_CRC_TARGET static inline uint64_t segtools_crc_step64(uint64_t c, uint64_t v) {
    return _mm_crc32_u64(c, v);
}
SEGTOOLS_CRC_TARGET static inline uint32_t segtools_crc_step8(uint32_t c, uint8_t v) {
    return _mm_crc32_u8(c, v);
}
static int segtools_crc32c_detect(void) { return __builtin_cpu_supports("sse4.2"); }
#elif SEGTOOLS_CRC_ARM
#define SEGTOOLS_CRC_TARGET __attribute__((target("+crc")))
SEGTOOLS_CRC_TARGET static inline uint64_t segtools_crc_step64(uint64_t c, uint64_t v) {
    return __builtin_aarch64_crc32cx((uint32_t)c, v);
}
SEGTOOLS_CRC_TARGET static inline uint32_t segtools_crc_step8(uint32_t c, uint8_t v) {
    return __builtin_aarch64_crc32cb(c, v);
}
static int segtools_crc32c_detect(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#endif

#if SEGTOOLS_CRC_X86 || SEGTOOLS_CRC_ARM
/* Three independent streams over three lanes of `lane` bytes, joined by shifting (the
 * instruction's latency is three times its throughput: one stream alone runs at a third). */
SEGTOOLS_CRC_TARGET __attribute__((always_inline)) static inline uint64_t segtools_crc32c_lanes(
    uint64_t a, const uint8_t **pp, size_t *np, size_t lane, int level) {
    const uint8_t *p = *pp;
    size_t n = *np;
    while (n >= 3 * lane) {
        uint64_t b = 0, c = 0;
        for (size_t i = 0; i < lane; i += 8) {
            a = segtools_crc_step64(a, segtools_load64(p + i));
            b = segtools_crc_step64(b, segtools_load64(p + lane + i));
            c = segtools_crc_step64(c, segtools_load64(p + 2 * lane + i));
        }
        uint32_t x = segtools_crc32c_shift_lane(level, (uint32_t)a) ^ (uint32_t)b;
        a = segtools_crc32c_shift_lane(level, x) ^ (uint32_t)c;
        p += 3 * lane;
        n -= 3 * lane;
    }
    *pp = p;
    *np = n;
    return a;
}

SEGTOOLS_CRC_TARGET static uint32_t segtools_crc32c_hw_update(uint32_t crc, const uint8_t *p,
                                                               size_t n) {
    uint64_t a = segtools_crc32c_lanes(crc, &p, &n, SEGTOOLS_CRC_LANE, 0);
    while (n >= 8) {
        a = segtools_crc_step64(a, segtools_load64(p));
        p += 8;
        n -= 8;
    }
    uint32_t r = (uint32_t)a;
    while (n--) r = segtools_crc_step8(r, *p++);
    return r;
}
#else
static uint32_t segtools_crc32c_hw_update(uint32_t crc, const uint8_t *p, size_t n) {
    return segtools_crc_sliced(segtools_crc32c_table, crc, p, n);
}
static int segtools_crc32c_detect(void) { return 0; }
#endif

/* Raw CRC-32C register after `n` bytes at `p`. */
static inline uint32_t segtools_crc32c_raw(uint32_t crc, const uint8_t *p, size_t n) {
#if SEGTOOLS_CRC_FOLD
    if (segtools_crc32c_level >= SEGTOOLS_CRC_FOLD128) {
        if (n >= SEGTOOLS_CRC_FOLD512_MIN && segtools_crc32c_level == SEGTOOLS_CRC_FOLD512)
            return segtools_crc32c_fold512(crc, p, n);
        if (n >= SEGTOOLS_CRC_FOLD128_MIN && n < 3 * SEGTOOLS_CRC_LANE)
            return segtools_crc32c_fold128(crc, p, n);
    }
#endif
    if (segtools_crc32c_level) return segtools_crc32c_hw_update(crc, p, n);
    return segtools_crc_sliced(segtools_crc32c_table, crc, p, n);
}

/* Raw CRC-32 (IEEE) register after `n` bytes at `p`. */
static inline uint32_t segtools_crc32_raw(uint32_t crc, const uint8_t *p, size_t n) {
    return segtools_crc_sliced(segtools_crc32_table, crc, p, n);
}

/* The best level this CPU runs, at most `limit`. */
static int segtools_crc32c_detect_level(int limit) {
    int level = segtools_crc32c_detect() ? SEGTOOLS_CRC_INSTRUCTION : SEGTOOLS_CRC_TABLES;
#if SEGTOOLS_CRC_FOLD
    if (level && segtools_fold128_detect()) level = SEGTOOLS_CRC_FOLD128;
    if (level == SEGTOOLS_CRC_FOLD128 && segtools_fold512_detect()) level = SEGTOOLS_CRC_FOLD512;
#endif
    return level < limit ? level : limit;
}

/* Fill the tables and choose the best implementation the CPU runs, at most `limit`
 * (SEGTOOLS_CRC_BEST; lower ones for the tests). */
static void segtools_crc_init_limit(int limit) {
    segtools_crc_fill(segtools_crc32c_table, SEGTOOLS_CRC32C_POLY);
    segtools_crc_fill(segtools_crc32_table, SEGTOOLS_CRC32_POLY);
    /* the register after `lane` zero bytes is linear in the register before: tabulate it per
     * byte of the register from the 32 single-bit images, for each lane size */
    static const uint8_t zeros[SEGTOOLS_CRC_LANE];
    static const size_t lanes[SEGTOOLS_CRC_LEVELS] = {SEGTOOLS_CRC_LANE};
    for (int level = 0; level < SEGTOOLS_CRC_LEVELS; level++) {
        uint32_t bit[32];
        for (int k = 0; k < 32; k++)
            bit[k] = segtools_crc_sliced(segtools_crc32c_table, 1u << k, zeros, lanes[level]);
        for (int s = 0; s < 4; s++)
            for (uint32_t v = 0; v < 256; v++) {
                uint32_t r = 0;
                for (int k = 0; k < 8; k++)
                    if (v & (1u << k)) r ^= bit[8 * s + k];
                segtools_crc32c_shift[level][s][v] = r;
            }
    }
#if SEGTOOLS_CRC_FOLD
    segtools_crc32c_fold_init(SEGTOOLS_CRC32C_POLY);
#endif
    segtools_crc32c_level = segtools_crc32c_detect_level(limit);
}

/* `allow_hw` = 0 forces the tables (tests), else the best the CPU runs. */
static void segtools_crc_init(int allow_hw) {
    segtools_crc_init_limit(allow_hw ? SEGTOOLS_CRC_BEST : SEGTOOLS_CRC_TABLES);
}

#endif
