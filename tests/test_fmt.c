/* test_fmt.c — pflex_fmt_g writes exactly what snprintf "%.*g" writes.
 *
 * Seeded random doubles of every kind (any bit pattern; the magnitudes
 * pflex prints; decimals with few digits, which land on rounding ties;
 * integers; powers of ten and their neighbours), at every precision. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/util/fmt.h"

static uint64_t rs = 20261203;

static uint64_t next(void)
{
    uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unif(void)
{
    return (double)(next() >> 11) / 9007199254740992.0;
}

static long checked;

static void same(double v, int prec)
{
    char want[64], got[PFLEX_FMT_G_MAX + 8];
    int wn = snprintf(want, sizeof want, "%.*g", prec, v);
    memset(got, 'X', sizeof got);
    int gn = pflex_fmt_g(got, v, prec);
    if (gn != wn || strcmp(got, want) != 0)
        fail_msg("%%.%dg of %a: snprintf '%s', pflex_fmt_g '%s' (%d)", prec, v, want, got, gn);
    checked++;
}

static void test_special_values(void **state)
{
    (void)state;
    const double v[] = {0.0, -0.0, 1, -1, 0.5, 1.5, 2.5, 0.125, 9.5, 99.5, 999999999.5,
                        9999999999.5, 1e-5, 1e-4, 9.9999e-5, 1e9, 1e10, 1e16, 1e17,
                        123456789012345678.0, 0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 700, 591.33,
                        DBL_MAX, DBL_MIN, 4.9e-324, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        for (int p = 1; p <= 17; p++)
            same(v[i], p);
}

static void test_random_bits(void **state)
{
    (void)state;
    for (int i = 0; i < 200000; i++) {
        uint64_t b = next();
        double v;
        memcpy(&v, &b, sizeof v);
        same(v, 1 + (int)(next() % 17));
    }
}

static void test_everyday_magnitudes(void **state)
{
    (void)state;
    for (int i = 0; i < 400000; i++) {
        double v = pow(10, -7 + 20 * unif()) * (next() & 1 ? -1 : 1);
        same(v, i % 3 == 0 ? 10 : 1 + (int)(next() % 17));
    }
}

static void test_short_decimals_and_ties(void **state)
{
    (void)state;
    /* k / 10^d: what sweeps and plans hold, and exact binary ties such as
     * 0.125 and 2.5 at the precision just short of them */
    for (int i = 0; i < 300000; i++) {
        int d = (int)(next() % 6);
        double v = (double)(int64_t)(next() % 100000000) / pow(10, d);
        same(v, 1 + (int)(next() % 17));
    }
    for (int i = 0; i < 100000; i++) {
        double v = (double)(next() % (1u << 20)) / (double)(1u << (next() % 12));
        same(v, 1 + (int)(next() % 12));
    }
    for (int e = -30; e <= 30; e++) {
        double v = pow(10, e);
        for (int p = 1; p <= 17; p++) {
            same(v, p);
            same(nextafter(v, 0), p);
            same(nextafter(v, INFINITY), p);
        }
    }
    printf("%ld values compared with snprintf\n", checked);
}

/* Shortest: reads back as the same double, in the fewest digits of 15,
 * 16 and 17 that do. */
static void test_shortest(void **state)
{
    (void)state;
    char b[PFLEX_FMT_G_MAX];
    pflex_fmt_shortest(b, 512.34);
    assert_string_equal(b, "512.34");
    pflex_fmt_shortest(b, 0.1 + 0.2);
    assert_string_equal(b, "0.30000000000000004");
    pflex_fmt_shortest(b, 1796292000.125);
    assert_string_equal(b, "1796292000.125");
    for (int i = 0; i < 100000; i++) {
        uint64_t bits = next();
        double v;
        memcpy(&v, &bits, sizeof v);
        if (i % 2)
            v = unif() * 1000;
        if (!isfinite(v))
            continue;
        int n = pflex_fmt_shortest(b, v);
        if (strtod(b, NULL) != v || n != (int)strlen(b))
            fail_msg("%a: '%s' does not read back", v, b);
        for (int p = 15; p <= 16; p++) {
            char s2[64];
            snprintf(s2, sizeof s2, "%.*g", p, v);
            if (strtod(s2, NULL) == v) {
                if (strcmp(s2, b))
                    fail_msg("%a: '%s' of %d digits reads back, not the '%s' given", v, s2, p, b);
                break;
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_special_values),
        cmocka_unit_test(test_shortest),
        cmocka_unit_test(test_random_bits),
        cmocka_unit_test(test_everyday_magnitudes),
        cmocka_unit_test(test_short_decimals_and_ties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
