/* decimal.c — see decimal.h. */
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/util/decimal.h"

const double pflex_pow10_exact[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

double pflex_dec_strtod(const char *p, size_t n, size_t *used)
{
    char small[128], *buf = n < sizeof small ? small : malloc(n + 1);
    *used = 0;
    if (!buf)
        return NAN;
    memcpy(buf, p, n);
    buf[n] = '\0';
    /* the files' numbers have a '.' whatever the locale strtod reads in */
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && dp[0] != '.' && !dp[1])
        for (char *q = buf; *q; q++)
            if (*q == '.')
                *q = dp[0];
    char *end;
    double v = strtod(buf, &end);
    *used = (size_t)(end - buf);
    if (buf != small)
        free(buf);
    return v;
}

/* What the fast paths leave: strtod, the whole field taken, finite. */
static int parse_slow(const char *s, size_t len, double *out)
{
    if (len >= 128)     /* no measurement is written so long */
        return -1;
    size_t used;
    double v = pflex_dec_strtod(s, len, &used);
    if (used != len || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int pflex_dec_parse(const char *s, size_t len, double *out)
{
    if (len == 0)
        return -1;
    const char *p = s, *e = s + len;
    int neg = 0;
    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        p++;
    }
    if (len <= 15) {
        /* The common short plain decimal ("591.33", "8"): at most 15
         * digits.  Anything else (an exponent, a second point, no digit)
         * takes the general path. */
        uint64_t m;
        const char *point;
        const char *q = pflex_dec_scan(p, e, &m, &point);
        size_t ndig = (size_t)(q - p) - (point != NULL);
        if (q == e && ndig > 0) {
            double v = pflex_dec_short((double)m, point, e);
            *out = neg ? -v : v;
            return 0;
        }
    }
    uint64_t mant = 0;
    int digits = 0, any = 0;
    long exp10 = 0;
    while (p < e && *p == '0')
        p++, any = 1;
    while (p < e && (unsigned)(*p - '0') < 10) {
        if (digits < 19)
            mant = mant * 10 + (uint64_t)(*p - '0');
        else
            exp10++;
        digits++;
        p++;
        any = 1;
    }
    if (p < e && *p == '.') {
        p++;
        if (digits == 0)
            while (p < e && *p == '0')
                p++, exp10--, any = 1;
        while (p < e && (unsigned)(*p - '0') < 10) {
            if (digits < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                exp10--;
            }
            digits++;
            p++;
            any = 1;
        }
    }
    if (!any)
        return parse_slow(s, len, out);   /* "nan", "inf", ".": rejected there */
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0, ev = 0, edig = 0;
        if (p < e && (*p == '-' || *p == '+'))
            eneg = *p++ == '-';
        while (p < e && (unsigned)(*p - '0') < 10) {
            if (ev < 10000)
                ev = ev * 10 + (*p - '0');
            p++;
            edig++;
        }
        if (!edig)
            return -1;
        exp10 += eneg ? -ev : ev;
    }
    if (p != e)
        return -1;
    double v;
    if (pflex_dec_exact(mant, digits, exp10, &v)) {
        *out = neg ? -v : v;
        return 0;
    }
    return parse_slow(s, len, out);
}
