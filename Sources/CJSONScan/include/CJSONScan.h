// Byte-class scans for the JSON compactor and parser, sixteen bytes a step.
//
// Header-only, `static inline` and always_inline so that Swift inlines them into its
// loops: a call per string would cost more than the scan, and without always_inline
// LLVM stops inlining them into the compactor's one large function. Swift's own SIMD16
// comparisons against a broadcast constant compiled to per-lane code, hence C.
// SSE2 is the x86-64 baseline, so it needs no runtime CPU detection; wider AVX2/AVX-512
// steps are left out on purpose: an API document's strings and numbers are mostly
// shorter than 16 bytes, so the first step almost always ends the scan, and a
// runtime-dispatched wide function could not be inlined. Without SSE2 (other
// architectures) the scalar loops below are the whole scan.
//
// Invariant for every function: reads only p[start..<end], returns an index in
// [start, end].
#ifndef TAPWIRE_CJSONSCAN_H
#define TAPWIRE_CJSONSCAN_H

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/// The first index at or after `start` whose byte is '"', '\\', a control character
/// (< 0x20) or non-ASCII (>= 0x80); `end` when there is none.
static inline __attribute__((always_inline)) ptrdiff_t tapwire_json_scan_plain(const uint8_t *p, ptrdiff_t start, ptrdiff_t end) {
    ptrdiff_t i = start;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    // As signed bytes, control characters and non-ASCII bytes are exactly those below 0x20.
    const __m128i space = _mm_set1_epi8(0x20);
    while (i + 16 <= end) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                       _mm_cmplt_epi8(v, space));
        unsigned mask = (unsigned)_mm_movemask_epi8(special);
        if (mask != 0) return i + __builtin_ctz(mask);
        i += 16;
    }
#endif
    while (i < end) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return i;
        i++;
    }
    return end;
}

/// The first index at or after `start` whose byte is not an ASCII digit; `end` when there is none.
static inline __attribute__((always_inline)) ptrdiff_t tapwire_json_scan_digits(const uint8_t *p, ptrdiff_t start, ptrdiff_t end) {
    ptrdiff_t i = start;
#if defined(__SSE2__)
    // c is a digit when (c - '0') < 10 unsigned; adding 0x50 is subtracting '0' and
    // flipping the sign bit, which turns that into a signed compare against 10 - 128.
    const __m128i shift = _mm_set1_epi8(0x50);
    const __m128i limit = _mm_set1_epi8(10 - 128);
    while (i + 16 <= end) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        unsigned digits = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(_mm_add_epi8(v, shift), limit));
        if (digits != 0xFFFF) return i + __builtin_ctz(~digits);
        i += 16;
    }
#endif
    while (i < end && (uint8_t)(p[i] - '0') < 10) i++;
    return i;
}

/// The first index at or after `start` whose byte is not JSON white space (space, tab,
/// line feed, carriage return); `end` when there is none. Pretty-printed bodies spend
/// most of their bytes in indentation.
static inline __attribute__((always_inline)) ptrdiff_t tapwire_json_scan_whitespace(const uint8_t *p, ptrdiff_t start, ptrdiff_t end) {
    ptrdiff_t i = start;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t');
    const __m128i newline = _mm_set1_epi8('\n'), ret = _mm_set1_epi8('\r');
    while (i + 16 <= end) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i white = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, space), _mm_cmpeq_epi8(v, tab)),
                                     _mm_or_si128(_mm_cmpeq_epi8(v, newline), _mm_cmpeq_epi8(v, ret)));
        unsigned mask = (unsigned)_mm_movemask_epi8(white);
        if (mask != 0xFFFF) return i + __builtin_ctz(~mask);
        i += 16;
    }
#endif
    while (i < end && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
    return i;
}

#endif
