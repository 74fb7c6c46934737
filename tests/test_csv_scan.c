/* test_csv_scan.c — the delimiter scans the CSV readers share
 * (src/lib/io/csv_scan.h) against a byte loop, on seeded random bytes
 * drawn mostly from the characters that matter (',', '"', '\n', blanks,
 * bytes with the top bit set). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "lib/io/csv_scan.h"
#include "support/rand.h"

static char pick(void)
{
    static const char some[] = ",\"\n\r \t0.9aA\x80\xff\x2b\x2d\x21\x23";
    return rng_int(0, 3) ? some[rng_int(0, (int)sizeof some - 2)] : (char)rng_int(0, 255);
}

static void test_marks(void **state)
{
    (void)state;
    rng_seed(20261204);
    char buf[64];
    for (int it = 0; it < 20000; it++) {
        for (int i = 0; i < 64; i++)
            buf[i] = pick();
        uint64_t c0 = 0, q0 = 0, l0 = 0;
        for (int i = 0; i < 64; i++) {
            c0 |= (uint64_t)(buf[i] == ',') << i;
            q0 |= (uint64_t)(buf[i] == '"') << i;
            l0 |= (uint64_t)(buf[i] == '\n') << i;
        }
        uint64_t c, q, l;
        csv_marks64(buf, &c, &q, &l);
        assert_true(c == c0 && q == q0 && l == l0);
        csv_marks64_swar(buf, &c, &q, &l);
        assert_true(c == c0 && q == q0 && l == l0);
        size_t n = (size_t)rng_int(0, 63);
        csv_marks_tail(buf, n, &c, &q, &l);
        uint64_t keep = ((uint64_t)1 << n) - 1;
        assert_true(c == (c0 & keep) && q == (q0 & keep) && l == (l0 & keep));
        if (c0)
            assert_int_equal(csv_ctz64(c0), __builtin_ctzll(c0));
    }
}

static void test_find_delim(void **state)
{
    (void)state;
    rng_seed(20261205);
    char buf[80];
    for (int it = 0; it < 20000; it++) {
        size_t n = (size_t)rng_int(0, 80);
        for (size_t i = 0; i < n; i++)
            buf[i] = rng_int(0, 7) ? 'x' : pick();
        const char *want = buf;
        while (want < buf + n && *want != ',' && *want != '\n' && *want != '"')
            want++;
        assert_ptr_equal(csv_find_delim(buf, buf + n), want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marks),
        cmocka_unit_test(test_find_delim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
