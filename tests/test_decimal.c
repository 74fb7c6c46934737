/* test_decimal.c — the one decimal parser: every path (short, Clinger's,
 * strtod) gives strtod's bits on random numbers, what it refuses, and the
 * short scan the sweep and nvidia-smi readers share. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lib/util/decimal.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A random number as a file would write it: a sign or none, 1 to 25
 * digits around a point or none, an exponent or none. */
static size_t random_number(char *b)
{
    size_t n = 0;
    if (next() % 4 == 0)
        b[n++] = next() % 2 ? '-' : '+';
    size_t nd = 1 + next() % 25, point = next() % 3 ? next() % (nd + 1) : nd;
    for (size_t i = 0; i < nd; i++) {
        if (i == point && i > 0)
            b[n++] = '.';
        b[n++] = (char)('0' + next() % 10);
    }
    if (next() % 3 == 0)
        n += (size_t)sprintf(b + n, "e%d", (int)(next() % 700) - 350);
    b[n] = '\0';
    return n;
}

static void test_same_bits_as_strtod(void **state)
{
    (void)state;
    char b[64];
    for (int it = 0; it < 1000000; it++) {
        size_t n = random_number(b);
        double want = strtod(b, NULL), got = 0;
        if (!isfinite(want)) {
            assert_int_equal(pflex_dec_parse(b, n, &got), -1);
            continue;
        }
        if (pflex_dec_parse(b, n, &got) != 0 || memcmp(&got, &want, sizeof got))
            fail_msg("%s: %.17g, strtod %.17g", b, got, want);
    }
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {"", "-", ".", "1.2.3", "1e", "e5", "1 ", "1_0", "0x10",
                                      "nan", "inf", "1,5", "1e999", "--1"};
    double v;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (pflex_dec_parse(bad[i], strlen(bad[i]), &v) == 0)
            fail_msg("'%s' read as %g", bad[i], v);
    char longer[200];
    memset(longer, '1', sizeof longer);
    longer[1] = '.';
    assert_int_equal(pflex_dec_parse(longer, 127, &v), 0);      /* 126 digits: strtod's */
    assert_int_equal(pflex_dec_parse(longer, 128, &v), -1);     /* no number is so long */
    assert_int_equal(pflex_dec_parse("1e-400", 6, &v), 0);      /* underflow: 0, finite */
    assert_true(v == 0);
}

static void test_short_scan(void **state)
{
    (void)state;
    const char *s = "591.33 W";
    uint64_t m;
    const char *point;
    const char *q = pflex_dec_scan(s, s + strlen(s), &m, &point);
    assert_int_equal(q - s, 6);
    assert_int_equal(m, 59133);
    assert_ptr_equal(point, s + 3);
    assert_true(pflex_dec_short((double)m, point, q) == 591.33);
    s = "8,";
    q = pflex_dec_scan(s, s + 2, &m, &point);
    assert_int_equal(q - s, 1);
    assert_null(point);
    assert_true(pflex_dec_short((double)m, point, q) == 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bits_as_strtod),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_short_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
