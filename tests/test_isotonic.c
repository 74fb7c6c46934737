/* test_isotonic.c — the monotone reading of sweeps for curves.
 *
 * pflex_isotonic_fit against a brute force (the min-max formula of the
 * weighted isotonic regression, f_i = max over s <= i of min over t >= i of
 * the weighted mean of y[s..t]) on seeded random inputs; the fit of sweep
 * points (monotone input unchanged to the bit, noise pooled, a job whose
 * draw never reaches its caps flat); the flat curve's model below its draw;
 * and tests/data/sweep_shapes.csv through pflex_alloc_input_read (the bad
 * job skipped, or fatal with strict). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/flex/alloc.h"
#include "pflex/flex/curve.h"

static uint64_t rs = 0x2545F4914F6CDD1Dull;
static double unif(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0;
}

/* cmocka 1.1 has no assert_double_equal */
#define assert_double_equal(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

static double wmean(const double *y, const double *w, size_t s, size_t t)
{
    double a = 0, b = 0;
    for (size_t i = s; i <= t; i++)
        a += w[i] * y[i], b += w[i];
    return a / b;
}

static void test_against_brute_force(void **state)
{
    (void)state;
    for (int iter = 0; iter < 500; iter++) {
        size_t n = 1 + (size_t)(unif() * 30);
        double y[32], w[32], fit[32];
        for (size_t i = 0; i < n; i++) {
            /* a rising trend under noise, ties now and then */
            y[i] = iter % 3 == 0 ? floor(5 * unif()) : (double)i + 8 * (unif() - 0.5);
            w[i] = iter % 2 ? 1 + floor(4 * unif()) : 1;
        }
        assert_int_equal(pflex_isotonic_fit(y, iter % 4 == 0 ? NULL : w, n, fit, NULL), 0);
        if (iter % 4 == 0)
            for (size_t i = 0; i < n; i++)
                w[i] = 1;
        for (size_t i = 0; i < n; i++) {
            double best = -INFINITY;
            for (size_t s = 0; s <= i; s++) {
                double lo = INFINITY;
                for (size_t t = i; t < n; t++) {
                    double m = wmean(y, w, s, t);
                    if (m < lo)
                        lo = m;
                }
                if (lo > best)
                    best = lo;
            }
            assert_double_equal(fit[i], best, 1e-9);
            if (i)
                assert_true(fit[i] >= fit[i - 1]);
        }
    }
}

static void test_in_place_and_monotone_kept(void **state)
{
    (void)state;
    double y[] = {0.1, 0.30000000000000004, 0.7, 1.9};
    double w[] = {3, 7, 11, 13}, f[4];
    assert_int_equal(pflex_isotonic_fit(y, w, 4, f, NULL), 0);
    assert_memory_equal(f, y, sizeof y);       /* w y / w need not round back to y */
    double z[] = {3, 1, 2};
    assert_int_equal(pflex_isotonic_fit(z, NULL, 3, z, NULL), 0);
    assert_double_equal(z[0], 2, 1e-12);
    assert_double_equal(z[1], 2, 1e-12);
    assert_double_equal(z[2], 2, 1e-12);
}

static void test_fit_points(void **state)
{
    (void)state;
    /* power dips at 250 W: pooled with 200 W, weighted by rows (1 and 3) */
    struct pflex_sweep_point p[] = {
        {150, 148, 70, 1, 2}, {200, 196, 80, 1, 3}, {250, 190, 86, 3, 4}, {350, 300, 99, 1, 5}};
    struct pflex_sweep_point f[4];
    int ch;
    assert_int_equal(pflex_curve_fit_points(p, 4, f, &ch, NULL), 0);
    assert_int_equal(ch, PFLEX_CURVE_FIT_MOVED);
    assert_double_equal(f[1].power_w, (196 + 3 * 190) / 4.0, 1e-12);
    assert_double_equal(f[2].power_w, f[1].power_w, 1e-12);
    assert_memory_equal(&f[0], &p[0], sizeof *p);
    assert_int_equal(f[2].rows, 3);
    /* the curve of the fit: caps fall as the reduction grows */
    struct pflex_curve c;
    assert_int_equal(pflex_curve_init(&c, f, 4, NULL), 0);
    for (size_t i = 1; i < c.n; i++) {
        assert_true(c.x[i] > c.x[i - 1]);
        assert_true(c.cap_w[i] < c.cap_w[i - 1]);
        assert_true(c.loss[i] >= c.loss[i - 1]);
    }
    pflex_curve_fini(&c);
    /* a monotone job is its own fit, to the bit */
    p[2].power_w = 246;
    assert_int_equal(pflex_curve_fit_points(p, 4, f, &ch, NULL), 0);
    assert_int_equal(ch, 0);
    assert_memory_equal(f, p, sizeof p);
    /* caps out of order are refused */
    struct pflex_sweep_point q[] = {{300, 200, 1, 1, 1}, {200, 150, 1, 1, 2}};
    pflex_error_t err;
    assert_int_equal(pflex_curve_fit_points(q, 2, f, NULL, &err), -1);
}

static void test_flat(void **state)
{
    (void)state;
    /* an input-bound job: 60-64 W whatever the cap, never near it */
    struct pflex_sweep_point p[] = {
        {100, 62, 40, 1, 2}, {150, 60, 41, 1, 3}, {250, 64, 40, 2, 4}, {300, 61, 40.5, 1, 5}};
    struct pflex_sweep_point f[4];
    int ch;
    assert_int_equal(pflex_curve_fit_points(p, 4, f, &ch, NULL), 0);
    assert_true(ch & PFLEX_CURVE_FIT_FLAT);
    for (size_t i = 0; i < 4; i++) {
        assert_double_equal(f[i].power_w, f[3].power_w, 0);     /* the baseline's fitted draw */
        assert_double_equal(f[i].throughput, (40 + 41 + 80 + 40.5) / 5, 1e-12);
    }
    assert_double_equal(f[3].power_w, (64 * 2 + 61) / 3.0, 1e-12);
    struct pflex_curve c;
    assert_int_equal(pflex_curve_init(&c, f, 4, NULL), 0);
    assert_int_equal(c.n, 1);
    /* a GPU that cannot go under the draw: nothing to add */
    assert_int_equal(pflex_curve_flat_below(&c, 100), 0);
    assert_int_equal(c.n, 1);
    /* one that can: proportional below the draw, the cap the power */
    assert_int_equal(pflex_curve_flat_below(&c, 50), 1);
    assert_int_equal(c.n, 2);
    double p0 = c.p0_w;
    assert_double_equal(c.x[1], 1 - 50 / p0, 1e-12);
    assert_double_equal(c.loss[1], c.x[1], 1e-12);
    assert_double_equal(c.cap_w[0], p0, 1e-12);
    assert_double_equal(c.cap_w[1], 50, 1e-12);
    assert_double_equal(pflex_curve_loss(&c, 0.5 * c.x[1]), 0.5 * c.x[1], 1e-12);
    assert_int_equal(pflex_curve_flat_below(&c, 40), 0);   /* not flat any more */
    pflex_curve_fini(&c);
    /* a job whose low caps bind is not flat */
    struct pflex_sweep_point b[] = {{100, 99, 30, 1, 2}, {300, 250, 40, 1, 3}};
    assert_int_equal(pflex_curve_fit_points(b, 2, f, &ch, NULL), 0);
    assert_int_equal(ch, 0);
}

/* A draw under every cap that falls with the cap (60-250 W under 100-400 W
 * caps) is a curve, not a flat job: its caps bind though never reached. */
static void test_under_caps_follows(void **state)
{
    (void)state;
    struct pflex_sweep_point p[] = {
        {100, 60, 50, 1, 2}, {200, 120, 80, 1, 3}, {300, 200, 95, 1, 4}, {400, 250, 100, 1, 5}};
    struct pflex_sweep_point f[4];
    int ch;
    assert_int_equal(pflex_curve_fit_points(p, 4, f, &ch, NULL), 0);
    assert_false(ch & PFLEX_CURVE_FIT_FLAT);
    assert_memory_equal(f, p, sizeof p);
}

static void test_shapes_file(void **state)
{
    (void)state;
    struct pflex_alloc_source src = {.sweep_path = "tests/data/sweep_shapes.csv", .floor = NAN};
    pflex_alloc_input_t *in = NULL;
    pflex_error_t err;
    assert_int_equal(pflex_alloc_input_read(&src, &in, &err), 0);
    assert_int_equal(in->njobs, 2);
    assert_string_equal(in->jobs[0].name, "noisy");
    assert_string_equal(in->jobs[1].name, "inbound");
    assert_int_equal(in->nskipped, 1);
    assert_string_equal(in->skipped[0], "nobase");
    assert_non_null(strstr(in->warnings, "sweep_shapes.csv:15: job 'nobase': baseline throughput"));
    assert_non_null(strstr(in->skipped_why[0], "not positive"));
    /* noisy: caps descend strictly along the curve */
    const struct pflex_alloc_job *j = &in->jobs[0];
    for (size_t i = 1; i < j->npoints; i++)
        assert_true(in->caps[0].cap_w[i] < in->caps[0].cap_w[i - 1]);
    /* inbound (V100, settable from 150 W): flat at its draw, proportional below */
    j = &in->jobs[1];
    assert_int_equal(j->npoints, 2);
    assert_double_equal(j->loss[1], j->x[1], 1e-12);
    assert_double_equal(in->caps[1].cap_w[1], 150, 1e-12);
    assert_int_equal(in->nfitted, 2);
    assert_true(in->fitted[1].flat);
    assert_double_equal(in->fitted[1].raw[0].power_w, 172, 0);
    pflex_alloc_input_destroy(in);
    src.strict = 1;
    assert_int_equal(pflex_alloc_input_read(&src, &in, &err), -1);
    assert_non_null(strstr(err.text, "job 'nobase'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_brute_force),
        cmocka_unit_test(test_in_place_and_monotone_kept),
        cmocka_unit_test(test_fit_points),
        cmocka_unit_test(test_flat),
        cmocka_unit_test(test_under_caps_follows),
        cmocka_unit_test(test_shapes_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
