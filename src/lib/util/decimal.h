/* decimal.h — one decimal parser (internal): the CSV reader, the sweep
 * reader's one-pass rows, nvidia-smi's values and the JSON scanner all
 * read a number through these, so a value reads the same bits wherever it
 * is read.
 *
 * The fast path is Clinger's: a mantissa that is exact as a double and a
 * power of ten within 10^22 (exact too) give the correctly rounded value
 * in one multiplication or division; what it does not take goes to strtod
 * in the C locale's notation (pflex_dec_strtod), correctly rounded too, so
 * either path gives the same bits. */
#ifndef PFLEX_DECIMAL_H
#define PFLEX_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* 10^0 .. 10^22, each exact as a double. */
extern const double pflex_pow10_exact[23];

/* The short plain decimal, digits and at most one point, scanned from p
 * up to end: the digits' value in *m (the caller bounds the length so
 * that it cannot overflow: at most 15 characters for the short path), the
 * point in *point (NULL: none).  Returns where it stopped: end, or the
 * first byte that is neither a digit nor the first point. */
static inline const char *pflex_dec_scan(const char *p, const char *end, uint64_t *m,
                                         const char **point)
{
    uint64_t v = 0;
    const char *pt = NULL;
    for (; p < end; p++) {
        unsigned d = (unsigned)(unsigned char)*p - '0';
        if (d < 10)
            v = v * 10 + d;
        else if (*p == '.' && !pt)
            pt = p;
        else
            break;
    }
    *m = v;
    *point = pt;
    return p;
}

/* The short path's value: m (exact: under 10^15) over 10^k, k the digits
 * from point to end (none when point is NULL): one division of two exact
 * doubles, so correctly rounded. */
static inline double pflex_dec_short(double m, const char *point, const char *end)
{
    if (point && end - point > 1)
        m /= pflex_pow10_exact[end - point - 1];
    return m;
}

/* Clinger's fast path: mant x 10^exp10 with one rounding when digits <=
 * 19 (mant holds every digit), mant <= 2^53 and |exp10| <= 22.  Returns 1
 * with *v, or 0 when the value needs pflex_dec_strtod. */
static inline int pflex_dec_exact(uint64_t mant, int digits, long exp10, double *v)
{
    if (digits > 19 || mant > ((uint64_t)1 << 53) || exp10 < -22 || exp10 > 22)
        return 0;
    double x = (double)mant;
    *v = exp10 < 0 ? x / pflex_pow10_exact[-exp10] : x * pflex_pow10_exact[exp10];
    return 1;
}

/* strtod on the n bytes at p in the C locale's notation whatever the
 * process's (its decimal point swapped for '.'s): the value, with *used
 * the bytes strtod took.  NaN with *used 0 when out of memory. */
double pflex_dec_strtod(const char *p, size_t n, size_t *used);

/* A whole field s[0..len) as a finite number: an optional sign, digits
 * with at most one point, an optional exponent; or what strtod reads of
 * it in full (the C locale's notation).  0 with *out, -1 when it is not
 * one number, not finite, or 128 characters or more. */
int pflex_dec_parse(const char *s, size_t len, double *out);

#endif
