/* test_correlate.c — Pearson, Spearman, bootstrap and BH against values
 * computed by hand here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/correlate.h"

#define assert_dbl(a, b, eps) do { double a_ = (a), b_ = (b); \
    if (!(fabs(a_ - b_) <= (eps))) fail_msg("%.17g != %.17g", a_, b_); } while (0)

static void test_coefficients(void **state)
{
    /* y = x^3 is monotone: Spearman 1; Pearson by hand below. */
    double x[5] = {1, 2, 3, 4, 5}, y[5] = {1, 8, 27, 64, 125};
    assert_dbl(pflex_spearman(x, y, 5), 1, 1e-12);
    double mx = 3, my = 45, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < 5; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    assert_dbl(pflex_pearson(x, y, 5), sxy / sqrt(sxx * syy), 1e-12);
    /* ties get average ranks: x ranks 1,2.5,2.5,4; y ranks 1,2,3,4 */
    double a[4] = {1, 2, 2, 3}, b[4] = {10, 20, 30, 40};
    double ra[4] = {1, 2.5, 2.5, 4}, rb[4] = {1, 2, 3, 4};
    assert_dbl(pflex_spearman(a, b, 4), pflex_pearson(ra, rb, 4), 1e-12);
    double c[3] = {1, 1, 1};
    assert_true(isnan(pflex_pearson(c, x, 3)));
}

static void test_bh(void **state)
{
    /* p = .01 .04 .03 .20 (m = 4): sorted .01 .03 .04 .20 ->
     * .04, .06, .0533, .20 -> monotone from the top: .04 .0533 .0533 .20 */
    double p[5] = {0.01, 0.04, 0.03, 0.20, NAN}, q[5];
    pflex_bh_qvalues(p, 5, q);
    assert_dbl(q[0], 0.04, 1e-12);
    assert_dbl(q[1], 0.04 * 4 / 3, 1e-12);
    assert_dbl(q[2], 0.04 * 4 / 3, 1e-12);
    assert_dbl(q[3], 0.20, 1e-12);
    assert_true(isnan(q[4]));
}

static void test_bootstrap_seeded(void **state)
{
    enum { N = 40 };
    double x[N * 2], y[N];
    unsigned s = 3;
    for (int i = 0; i < N; i++) {
        s = s * 1103515245u + 12345u;
        x[i * 2] = i;
        x[i * 2 + 1] = (double)((s >> 8) % 1000);
        y[i] = i + 5.0 * ((s >> 4) % 7);
    }
    struct pflex_corr_row r1[2], r2[2];
    assert_int_equal(pflex_correlate(x, y, N, 2, 500, 42, 0.95, r1, NULL), 0);
    assert_int_equal(pflex_correlate(x, y, N, 2, 500, 42, 0.95, r2, NULL), 0);
    assert_dbl(r1[0].spearman.lo, r2[0].spearman.lo, 0);
    assert_dbl(r1[1].pearson.hi, r2[1].pearson.hi, 0);
    assert_true(r1[0].spearman.lo <= r1[0].spearman.r && r1[0].spearman.r <= r1[0].spearman.hi);
    assert_true(r1[0].spearman.r > 0.8);
    assert_true(r1[0].spearman.q < r1[1].spearman.q);
    assert_int_equal(r1[0].n, N);
}

/* By |Spearman r| from the largest, NaN last, ties by index. */
static void test_rank(void **state)
{
    static const double r[6] = {0.2, NAN, -0.9, 0.5, -0.2, NAN};
    struct pflex_corr_row rows[6];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < 6; i++)
        rows[i].spearman.r = r[i];
    size_t order[6];
    pflex_corr_rank(rows, 6, order);
    static const size_t want[6] = {2, 3, 0, 4, 1, 5};
    for (int i = 0; i < 6; i++)
        assert_int_equal(order[i], want[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coefficients),
        cmocka_unit_test(test_bh),
        cmocka_unit_test(test_bootstrap_seeded),
        cmocka_unit_test(test_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
