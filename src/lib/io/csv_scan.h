/* csv_scan.h — the delimiter scan the CSV readers' plain-line splits share
 * (internal): csv.c's pflex_csv_split_line, the sweep reader's split_row,
 * the nvidia-smi reader's rows. */
#ifndef PFLEX_CSV_SCAN_H
#define PFLEX_CSV_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CSV_SWAR 1
/* The bytes of w equal to the byte repeated in pat, as their top bits; the
 * lowest one set is exact (a borrow only flags bytes above a match). */
static inline uint64_t csv_swar_eq(uint64_t w, uint64_t pat)
{
    uint64_t x = w ^ pat;
    return (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull;
}
#else
#define CSV_SWAR 0
#endif

/* The first ',', '\n' or '"' in [s, end), or end: eight bytes at a time
 * where the compiler and byte order allow (a field is a few bytes: a call
 * to memchr costs more than the scan). */
static inline const char *csv_find_delim(const char *s, const char *end)
{
#if CSV_SWAR
    while (end - s >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        uint64_t m = csv_swar_eq(w, 0x2c2c2c2c2c2c2c2cull) |
                     csv_swar_eq(w, 0x0a0a0a0a0a0a0a0aull) |
                     csv_swar_eq(w, 0x2222222222222222ull);
        if (m)
            return s + (__builtin_ctzll(m) >> 3);
        s += 8;
    }
#endif
    while (s < end && *s != ',' && *s != '\n' && *s != '"')
        s++;
    return s;
}

/* The bytes of w equal to the byte repeated in pat, as their top bits,
 * every one exact (no borrow crosses a byte). */
static inline uint64_t csv_swar_eq_all(uint64_t w, uint64_t pat)
{
    uint64_t x = w ^ pat;
    return ~(((x & 0x7f7f7f7f7f7f7f7full) + 0x7f7f7f7f7f7f7f7full) | x) & 0x8080808080808080ull;
}

/* The top bits of the bytes of m (csv_swar_eq_all) as bits 0..7, byte i
 * to bit i. */
static inline unsigned csv_swar_bits(uint64_t m)
{
    return (unsigned)(((m >> 7) * 0x0102040810204080ull) >> 56);
}

/* The ',', '"' and '\n' among the 64 bytes at s (all readable), as bits
 * 0..63: eight bytes a step, any byte order (the portable form of
 * csv_marks64). */
static inline void csv_marks64_swar(const char *s, uint64_t *comma, uint64_t *quote,
                                    uint64_t *nl)
{
    uint64_t c = 0, q = 0, n = 0;
    for (unsigned i = 0; i < 8; i++) {
        uint64_t w = 0;
        for (unsigned b = 0; b < 8; b++)
            w |= (uint64_t)(unsigned char)s[8 * i + b] << (8 * b);
        c |= (uint64_t)csv_swar_bits(csv_swar_eq_all(w, 0x2c2c2c2c2c2c2c2cull)) << (8 * i);
        q |= (uint64_t)csv_swar_bits(csv_swar_eq_all(w, 0x2222222222222222ull)) << (8 * i);
        n |= (uint64_t)csv_swar_bits(csv_swar_eq_all(w, 0x0a0a0a0a0a0a0a0aull)) << (8 * i);
    }
    *comma = c;
    *quote = q;
    *nl = n;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The index of the lowest bit set in x (x != 0). */
static inline unsigned csv_ctz64(uint64_t x)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned i = 0;
    while (!(x & 1)) {
        x >>= 1;
        i++;
    }
    return i;
#endif
}

/* csv_marks64_swar, sixteen bytes a step where SSE2 is there. */
static inline void csv_marks64(const char *s, uint64_t *comma, uint64_t *quote, uint64_t *nl)
{
#if defined(__SSE2__)
    uint64_t c = 0, q = 0, n = 0;
    for (unsigned i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + 16 * i));
        c |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(','))) << (16 * i);
        q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))) << (16 * i);
        n |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))) << (16 * i);
    }
    *comma = c;
    *quote = q;
    *nl = n;
#else
    csv_marks64_swar(s, comma, quote, nl);
#endif
}

/* The same marks for the n < 64 bytes at s (the last bytes readable). */
static inline void csv_marks_tail(const char *s, size_t n, uint64_t *comma, uint64_t *quote,
                                  uint64_t *nl)
{
    uint64_t c = 0, q = 0, l = 0;
    for (size_t i = 0; i < n; i++) {
        c |= (uint64_t)(s[i] == ',') << i;
        q |= (uint64_t)(s[i] == '"') << i;
        l |= (uint64_t)(s[i] == '\n') << i;
    }
    *comma = c;
    *quote = q;
    *nl = l;
}

#endif
