/* fmt.c — "%.*g" without printf's multi-precision arithmetic (see fmt.h).
 *
 * The value is scaled to prec significant digits with one multiplication
 * or division by an exact power of ten in long double (x87 extended: a
 * 64-bit mantissa, so the scaled value is off by at most 2^-64 of itself).
 * Rounding to an integer can then go wrong only when the scaled value lies
 * within that error of a half: those values, and any platform where long
 * double is no wider than double, go to snprintf.  Everything else is
 * formatted the way C's %g is specified: trailing zeros and a bare point
 * removed, the exponent with at least two digits.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "pflex/fmt.h"

#define POW_MAX 27      /* 10^27 = 2^27 5^27 and 5^27 < 2^64: exact in long double */

static const long double pow10_ld[POW_MAX + 1] = {
    1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
    1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
    1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L,
};

static const uint64_t pow10_u[18] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
    100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
    10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
    100000000000000000ull,
};

static int slow(char *buf, double v, int prec)
{
    return snprintf(buf, PFLEX_FMT_G_MAX, "%.*g", prec, v);
}

/* a * 10^k in long double, k within +-POW_MAX. */
static long double scale(double a, int k)
{
    return k >= 0 ? (long double)a * pow10_ld[k] : (long double)a / pow10_ld[-k];
}

int pflex_fmt_g(char *buf, double v, int prec)
{
    if (LDBL_MANT_DIG < 64 || prec < 1 || prec > 17 || !isfinite(v))
        return slow(buf, v, prec);
    char *p = buf;
    if (signbit(v))
        *p++ = '-';
    double a = fabs(v);
    if (a == 0) {
        *p++ = '0';
        *p = 0;
        return (int)(p - buf);
    }
    /* 10^e <= a < 10^(e+1): from the binary exponent, low by at most one */
    int e2;
    (void)frexp(a, &e2);
    int e = (int)floor((e2 - 1) * 0.30102999566398119521);
    long double s = 0;
    for (int tries = 0;; tries++) {
        int k = prec - 1 - e;
        if (k > POW_MAX || k < -POW_MAX || tries == 2)
            return slow(buf, v, prec);
        s = scale(a, k);
        if (s < pow10_ld[prec])
            break;
        e++;
    }
    long double r = floorl(s), frac = s - r;
    /* the scaled value is within s 2^-64 of the true one; keep 8x that off
     * a half before trusting the rounding */
    if (fabsl(frac - 0.5L) <= s * 0x1p-61L)
        return slow(buf, v, prec);
    uint64_t digits = (uint64_t)r + (frac > 0.5L);
    if (digits >= pow10_u[prec]) {      /* 99.97 -> 100.0: one more digit up */
        digits /= 10;
        e++;
    }
    char d[18];
    for (int i = prec - 1; i >= 0; i--) {
        d[i] = (char)('0' + digits % 10);
        digits /= 10;
    }
    int nd = prec;
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    if (e < -4 || e >= prec) {
        *p++ = d[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, d + 1, (size_t)(nd - 1));
            p += nd - 1;
        }
        *p++ = 'e';
        *p++ = e < 0 ? '-' : '+';
        int x = e < 0 ? -e : e;
        if (x >= 100)
            *p++ = (char)('0' + x / 100);
        *p++ = (char)('0' + x / 10 % 10);
        *p++ = (char)('0' + x % 10);
    } else if (e >= 0) {
        memcpy(p, d, (size_t)e + 1);
        p += e + 1;
        if (nd > e + 1) {
            *p++ = '.';
            memcpy(p, d + e + 1, (size_t)(nd - e - 1));
            p += nd - e - 1;
        }
    } else {
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < -e - 1; i++)
            *p++ = '0';
        memcpy(p, d, (size_t)nd);
        p += nd;
    }
    *p = 0;
    return (int)(p - buf);
}
