/* fmt.c — "%.*g" without printf's multi-precision arithmetic (see fmt.h).
 *
 * The value is scaled to prec significant digits with one multiplication
 * or division by an exact power of ten: in double for up to 15 digits (off
 * by at most 2^-53 of itself; as fast as x87 here, and far faster where
 * long double is a software quad), else in long double (x87 extended: a
 * 64-bit mantissa, off by at most 2^-64).
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
#include <stdlib.h>
#include <string.h>
#include "pflex/util/fmt.h"

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

static const char pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static const double pow10_d[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
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
    /* 10^e <= a < 10^(e+1): e is floor(b log10 2) or one more, where
     * 2^b <= a < 2^(b+1) (subnormals aside); floor(b 78913 / 2^18) equals
     * floor(b log10 2) for every b from -1074 to 1023 (checked one by one
     * in exact arithmetic). */
    uint64_t abits;
    memcpy(&abits, &a, sizeof abits);
    int bexp = (int)(abits >> 52) - 1023;
    if (bexp == -1023)
        return slow(buf, v, prec);          /* subnormal */
    int t = bexp * 78913;
    int e = t >= 0 ? t >> 18 : -((-t + (1 << 18) - 1) >> 18);
    uint64_t digits;
    if (prec <= 15 && prec - 1 - e >= -21 && prec - 1 - e <= 22) {
        /* In double: 10^k is exact for |k| <= 22 and the scaled value,
         * under 10^16 < 2^53 once its exponent is right, is off by at most
         * 2^-53 of itself. */
        double sd = 0;
        for (int tries = 0;; tries++) {
            int k = prec - 1 - e;
            if (k > 22 || k < -22 || tries == 2)
                return slow(buf, v, prec);
            sd = k >= 0 ? a * pow10_d[k] : a / pow10_d[-k];
            if (sd < pow10_d[prec])
                break;
            e++;
        }
        double r = floor(sd), frac = sd - r;
        if (fabs(frac - 0.5) <= sd * 0x1p-50)
            return slow(buf, v, prec);
        digits = (uint64_t)r + (frac > 0.5);
    } else {
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
        /* the scaled value is within s 2^-64 of the true one; keep 8x that
         * off a half before trusting the rounding */
        if (fabsl(frac - 0.5L) <= s * 0x1p-61L)
            return slow(buf, v, prec);
        digits = (uint64_t)r + (frac > 0.5L);
    }
    if (digits >= pow10_u[prec]) {      /* 99.97 -> 100.0: one more digit up */
        digits /= 10;
        e++;
    }
    char d[18];
    int i = prec;
    for (; i >= 2; i -= 2) {            /* two digits a division */
        memcpy(d + i - 2, pairs + 2 * (digits % 100), 2);
        digits /= 100;
    }
    if (i)
        d[0] = (char)('0' + digits);
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
        for (int z = 0; z < -e - 1; z++)
            *p++ = '0';
        memcpy(p, d, (size_t)nd);
        p += nd;
    }
    *p = 0;
    return (int)(p - buf);
}

int pflex_fmt_shortest(char *buf, double v)
{
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = pflex_fmt_g(buf, v, prec);
        if (!isfinite(v) || strtod(buf, NULL) == v)
            break;
    }
    return n;
}
