/* CRC-32C by folding with carry-less multiplication (x86-64 `pclmulqdq`, and `vpclmulqdq` on
 * AVX-512), for the long ranges of the batch walk and the record kernel (checksum.h chooses).
 *
 * Why: the `crc32` instruction retires at most 8 bytes a cycle however many streams run, and
 * at that peak the CRC was a quarter of the record kernel's time. A carry-less multiply folds
 * 16 bytes (64 with a 512-bit register) into a running remainder per instruction, several
 * independent remainders at once: the method of Intel's white paper "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ Instruction" (Gopal et al., 2009), written here for the
 * reflected Castagnoli polynomial.
 *
 * The arithmetic (GF(2) polynomials; a reflected CRC reads each byte from its lowest bit):
 * - A 16-byte block loaded little-endian holds, in bit i, the coefficient of x^(127-i): its
 *   low 64 bits are H, its high ones L, the block is H*x^64 + L.
 * - Moving a block D bits further down the message multiplies it by x^D; modulo P that is
 *   H*(x^(D+64) mod P) + L*(x^D mod P), two 64 x 32-bit products that fit 128 bits again.
 *   `pclmulqdq` of two reflected operands yields the product shifted by one place (bit k is
 *   the coefficient of x^(126-k)), so the constants carry one power of x less:
 *   K(D) = { x^(D+63) mod P, x^(D-1) mod P }, each stored as its reflected 32 bits shifted
 *   into the top half of a 64-bit lane. `segtools_crc32c_fold_init` derives them from the
 *   polynomial; tests/decode/test_crc_fold.py derives them again from the definition.
 * - The CRC register before a range joins the range by XOR into its first four bytes (the
 *   register is linear in the message); the last 16-byte remainder is then an ordinary
 *   message prefix of the same CRC, finished with two `crc32` instructions (every CPU with
 *   `pclmulqdq` has SSE4.2) and the bytes after it as before.
 *
 * The raw register goes in and comes out, as for every function of checksum.h.
 */
#ifndef SEGTOOLS_CRC32C_FOLD_H
#define SEGTOOLS_CRC32C_FOLD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SEGTOOLS_CRC_FOLD 1
#include <immintrin.h>

/* Fold distances in bits, one constant pair each: 16, 32, 48 and 64 bytes (the 128-bit path's
 * four remainders and their joining), 256 bytes (the 512-bit path's four registers). */
enum { SEGTOOLS_FOLD_128, SEGTOOLS_FOLD_256, SEGTOOLS_FOLD_384, SEGTOOLS_FOLD_512,
       SEGTOOLS_FOLD_2048, SEGTOOLS_FOLD_COUNT };
static const unsigned segtools_fold_bits[SEGTOOLS_FOLD_COUNT] = {128, 256, 384, 512, 2048};
/* [distance][0]: for the low 64 bits (x^(D+63) mod P), [1]: for the high (x^(D-1) mod P). */
static uint64_t segtools_fold_k[SEGTOOLS_FOLD_COUNT][2];

/* x^k mod P, reflected (bit j the coefficient of x^(31-j)): x^0 is the top bit, and each
 * multiplication by x a shift down, reduced by the reflected polynomial when x^32 appears. */
static uint32_t segtools_crc32c_xpow(unsigned k, uint32_t poly) {
    uint32_t r = 0x80000000u;
    while (k--) r = (r >> 1) ^ (poly & (0u - (r & 1u)));
    return r;
}

static void segtools_crc32c_fold_init(uint32_t poly) {
    for (int d = 0; d < SEGTOOLS_FOLD_COUNT; d++) {
        segtools_fold_k[d][0] = (uint64_t)segtools_crc32c_xpow(segtools_fold_bits[d] + 63, poly)
                                << 32;
        segtools_fold_k[d][1] = (uint64_t)segtools_crc32c_xpow(segtools_fold_bits[d] - 1, poly)
                                << 32;
    }
}

#define SEGTOOLS_FOLD128_TARGET __attribute__((target("sse4.2,pclmul")))
#define SEGTOOLS_FOLD512_TARGET \
    __attribute__((target("sse4.2,pclmul,avx2,avx512f,avx512vl,vpclmulqdq")))

SEGTOOLS_FOLD128_TARGET static inline __m128i segtools_fold_k128(int d) {
    return _mm_set_epi64x((long long)segtools_fold_k[d][1], (long long)segtools_fold_k[d][0]);
}

/* `x` moved down by the distance of `k`, added to `next` (the block already there). */
SEGTOOLS_FOLD128_TARGET static inline __m128i segtools_fold128(__m128i x, __m128i k,
                                                              __m128i next) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                       _mm_clmulepi64_si128(x, k, 0x11)), next);
}

/* The last remainder and the bytes after it, through the `crc32` instruction. */
SEGTOOLS_FOLD128_TARGET static inline uint32_t segtools_fold_finish(__m128i x, const uint8_t *p,
                                                                   size_t n) {
    uint64_t r = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
    r = _mm_crc32_u64(r, (uint64_t)_mm_extract_epi64(x, 1));
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        r = _mm_crc32_u64(r, v);
        p += 8;
        n -= 8;
    }
    uint32_t c = (uint32_t)r;
    while (n--) c = _mm_crc32_u8(c, *p++);
    return c;
}

/* 16-byte remainders to one, then 16 bytes at a time while they last: for the end of a range,
 * after the wide loops. */
SEGTOOLS_FOLD128_TARGET static inline uint32_t segtools_fold_tail(__m128i x, const uint8_t *p,
                                                                 size_t n) {
    const __m128i k = segtools_fold_k128(SEGTOOLS_FOLD_128);
    while (n >= 16) {
        x = segtools_fold128(x, k, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    return segtools_fold_finish(x, p, n);
}

/* At least 64 bytes: four 16-byte remainders, 64 bytes a step. */
SEGTOOLS_FOLD128_TARGET static uint32_t segtools_crc32c_fold128(uint32_t crc, const uint8_t *p,
                                                               size_t n) {
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)crc));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    n -= 64;
    const __m128i k512 = segtools_fold_k128(SEGTOOLS_FOLD_512);
    while (n >= 64) {
        x0 = segtools_fold128(x0, k512, _mm_loadu_si128((const __m128i *)p));
        x1 = segtools_fold128(x1, k512, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = segtools_fold128(x2, k512, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = segtools_fold128(x3, k512, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    __m128i x = segtools_fold128(x0, segtools_fold_k128(SEGTOOLS_FOLD_384), x3);
    x = _mm_xor_si128(x, segtools_fold128(x1, segtools_fold_k128(SEGTOOLS_FOLD_256),
                                          _mm_setzero_si128()));
    x = segtools_fold128(x2, segtools_fold_k128(SEGTOOLS_FOLD_128), x);
    return segtools_fold_tail(x, p, n);
}

SEGTOOLS_FOLD512_TARGET static inline __m512i segtools_fold512(__m512i x, __m512i k,
                                                              __m512i next) {
    /* 0x96: the XOR of all three operands */
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), next, 0x96);
}

SEGTOOLS_FOLD512_TARGET static inline __m512i segtools_fold_k512(int d) {
    return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)segtools_fold_k[d][1],
                                                 (long long)segtools_fold_k[d][0]));
}

/* At least 256 bytes: four 64-byte registers (sixteen remainders), 256 bytes a step. */
SEGTOOLS_FOLD512_TARGET static uint32_t segtools_crc32c_fold512(uint32_t crc, const uint8_t *p,
                                                               size_t n) {
    __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                  _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
    __m512i x1 = _mm512_loadu_si512(p + 64);
    __m512i x2 = _mm512_loadu_si512(p + 128);
    __m512i x3 = _mm512_loadu_si512(p + 192);
    p += 256;
    n -= 256;
    const __m512i k2048 = segtools_fold_k512(SEGTOOLS_FOLD_2048);
    while (n >= 256) {
        x0 = segtools_fold512(x0, k2048, _mm512_loadu_si512(p));
        x1 = segtools_fold512(x1, k2048, _mm512_loadu_si512(p + 64));
        x2 = segtools_fold512(x2, k2048, _mm512_loadu_si512(p + 128));
        x3 = segtools_fold512(x3, k2048, _mm512_loadu_si512(p + 192));
        p += 256;
        n -= 256;
    }
    const __m512i k512 = segtools_fold_k512(SEGTOOLS_FOLD_512);
    x1 = segtools_fold512(x0, k512, x1);
    x2 = segtools_fold512(x1, k512, x2);
    x3 = segtools_fold512(x2, k512, x3);
    while (n >= 64) {
        x3 = segtools_fold512(x3, k512, _mm512_loadu_si512(p));
        p += 64;
        n -= 64;
    }
    /* the register's four 16-byte remainders, 48, 32 and 16 bytes apart, to one */
    __m512i k = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_set_epi64x(
            (long long)segtools_fold_k[SEGTOOLS_FOLD_256][1],
            (long long)segtools_fold_k[SEGTOOLS_FOLD_256][0],
            (long long)segtools_fold_k[SEGTOOLS_FOLD_384][1],
            (long long)segtools_fold_k[SEGTOOLS_FOLD_384][0])),
        _mm256_set_epi64x(0, 0, (long long)segtools_fold_k[SEGTOOLS_FOLD_128][1],
                          (long long)segtools_fold_k[SEGTOOLS_FOLD_128][0]), 1);
    __m512i moved = _mm512_xor_si512(_mm512_clmulepi64_epi128(x3, k, 0x00),
                                     _mm512_clmulepi64_epi128(x3, k, 0x11));
    __m128i x = _mm_xor_si128(
        _mm_xor_si128(_mm512_castsi512_si128(moved), _mm512_extracti32x4_epi32(moved, 1)),
        _mm_xor_si128(_mm512_extracti32x4_epi32(moved, 2), _mm512_extracti32x4_epi32(x3, 3)));
    return segtools_fold_tail(x, p, n);
}

static int segtools_fold128_detect(void) {
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
}

static int segtools_fold512_detect(void) {
    return segtools_fold128_detect() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq");
}
#endif

#endif
