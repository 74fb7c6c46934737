/* test_ttt.c — time to target on synthetic sample streams whose answers
 * are known: a step met, met late after a relapse, a ramp followed and
 * one lagged, a signal never met, an event that ends first, and the
 * summary's ranks against a brute force. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "pflex/site/ttt.h"

#define assert_near(a, b, eps) near_((a), (b), (eps), #a, __LINE__)
static void near_(double a, double b, double eps, const char *what, int line)
{
    if (a == b || fabs(a - b) <= eps)
        return;
    fail_msg("line %d: %s = %.9g, expected %.9g (within %g)", line, what, a, b, eps);
}

/* Feed samples every dt from t0 to t1 of power f(t); the return of the
 * sample that settled it, or 0. */
static int feed(struct pflex_ttt *m, double t0, double t1, double dt, double (*f)(double))
{
    int settled = 0;
    for (double t = t0; t <= t1 + 1e-9 && !settled; t += dt)
        settled = pflex_ttt_sample(m, t, f(t));
    return settled;
}

/* 1000 W until 103.5, then 700 W: a step to 800 W signalled at 100. */
static double step_down(double t) { return t < 103.5 ? 1000 : 700; }

static void test_step_met(void **state)
{
    struct pflex_ttt_event ev = {.signal_s = 100, .start_s = 100, .ramp_s = 0, .from_w = 1000, .to_w = 800,
                                 .end_s = INFINITY};
    struct pflex_ttt m;
    pflex_ttt_begin(&m, &ev, 10);
    assert_int_equal(feed(&m, 99, 200, 1, step_down), 1);
    assert_int_equal(m.state, PFLEX_TTT_MET);
    /* first sample under: 104; it holds 104..114 */
    assert_near(m.ttt_s, 4, 1e-9);
    assert_near(m.last_s, 114, 1e-9);
    assert_int_equal(m.over, 4);        /* 100, 101, 102, 103 */
    assert_near(m.worst_over_w, 200, 1e-9);
}

/* Under at 103, back over at 108 (a relapse), under for good from 111. */
static double relapse(double t) { return t < 103 ? 1000 : t < 108 ? 750 : t < 111 ? 820 : 790; }

static void test_step_relapse(void **state)
{
    struct pflex_ttt_event ev = {.signal_s = 100.5, .start_s = 100, .from_w = 1000, .to_w = 800,
                                 .end_s = INFINITY};
    struct pflex_ttt m;
    pflex_ttt_begin(&m, &ev, 10);
    assert_int_equal(feed(&m, 100, 200, 1, relapse), 1);
    /* the clock starts at the signal: 111 - 100.5 */
    assert_near(m.ttt_s, 10.5, 1e-9);
}

/* The signal reached pflex before the limit falls: counted from start. */
static void test_signal_before_start(void **state)
{
    struct pflex_ttt_event ev = {.signal_s = 40, .start_s = 100, .from_w = 1000, .to_w = 800, .end_s = INFINITY};
    struct pflex_ttt m;
    pflex_ttt_begin(&m, &ev, 10);
    assert_int_equal(feed(&m, 40, 200, 1, step_down), 1);
    assert_near(m.ttt_s, 4, 1e-9);
}

/* A ramp from 1000 W to 600 W over 100..140 (10 W/s), followed exactly
 * 5 s late: power(t) = line(t - 5). */
static const struct pflex_ttt_event ramp_ev = {.signal_s = 100, .start_s = 100, .ramp_s = 40, .from_w = 1000,
                                               .to_w = 600, .end_s = INFINITY};
static double late5(double t) { return pflex_ttt_line_w(&ramp_ev, t - 5); }
static double on_line(double t) { return pflex_ttt_line_w(&ramp_ev, t) - 1; }

static void test_ramp_lag(void **state)
{
    struct pflex_ttt m;
    pflex_ttt_begin(&m, &ramp_ev, 10);
    assert_int_equal(feed(&m, 100, 300, 1, late5), 1);
    assert_int_equal(m.state, PFLEX_TTT_MET);
    assert_near(m.ttt_s, 5, 1e-9);
    /* followed under the line: no lag at all */
    pflex_ttt_begin(&m, &ramp_ev, 10);
    assert_int_equal(feed(&m, 100, 300, 1, on_line), 1);
    assert_near(m.ttt_s, 0, 1e-12);
    assert_int_equal(m.over, 0);
}

/* A ramp whose site stalls at 700 W until 150, 10 s after the ramp ends:
 * the line came down to 700 W at 130, so the last sample over (149) lags
 * it by 19 s. */
static double stall(double t) { return t < 150 ? fmax(late5(t), 700) : 600; }

static void test_ramp_stall(void **state)
{
    struct pflex_ttt m;
    pflex_ttt_begin(&m, &ramp_ev, 10);
    assert_int_equal(feed(&m, 100, 300, 1, stall), 1);
    assert_near(m.ttt_s, 19, 1e-9);
}

static double never(double t) { return 900; }

static void test_never_met(void **state)
{
    struct pflex_ttt_event ev = {.signal_s = 100, .start_s = 100, .from_w = 1000, .to_w = 800, .end_s = 160};
    struct pflex_ttt m;
    pflex_ttt_begin(&m, &ev, 10);
    assert_int_equal(feed(&m, 100, 300, 1, never), 1);
    assert_int_equal(m.state, PFLEX_TTT_UNMET);
    assert_true(isnan(m.ttt_s));
    /* open-ended and never under: still open, then closed by a new event */
    ev.end_s = INFINITY;
    pflex_ttt_begin(&m, &ev, 10);
    assert_int_equal(feed(&m, 100, 300, 1, never), 0);
    assert_int_equal(m.state, PFLEX_TTT_OPEN);
    pflex_ttt_close(&m, 301);
    assert_int_equal(m.state, PFLEX_TTT_UNMET);
}

/* Under from 104, the event ends at 108, before the 10 s hold: met at 4. */
static void test_event_ends_first(void **state)
{
    struct pflex_ttt_event ev = {.signal_s = 100, .start_s = 100, .from_w = 1000, .to_w = 800, .end_s = 108};
    struct pflex_ttt m;
    pflex_ttt_begin(&m, &ev, 10);
    assert_int_equal(feed(&m, 100, 200, 1, step_down), 1);
    assert_int_equal(m.state, PFLEX_TTT_MET);
    assert_near(m.ttt_s, 4, 1e-9);
    /* over until the end: not met */
    ev.end_s = 103;
    pflex_ttt_begin(&m, &ev, 10);
    assert_int_equal(feed(&m, 100, 200, 1, step_down), 1);
    assert_int_equal(m.state, PFLEX_TTT_UNMET);
}

/* Out-of-order and NaN samples are ignored. */
static void test_bad_samples(void **state)
{
    struct pflex_ttt_event ev = {.signal_s = 100, .start_s = 100, .from_w = 1000, .to_w = 800, .end_s = INFINITY};
    struct pflex_ttt m;
    pflex_ttt_begin(&m, &ev, 2);
    assert_int_equal(pflex_ttt_sample(&m, 101, 700), 0);
    assert_int_equal(pflex_ttt_sample(&m, 100.5, 900), 0);     /* earlier: ignored */
    assert_int_equal(pflex_ttt_sample(&m, 102, NAN), 0);
    assert_int_equal(pflex_ttt_sample(&m, 103, 700), 1);
    assert_near(m.ttt_s, 1, 1e-9);
    assert_int_equal(m.samples, 2);
}

static void test_summary(void **state)
{
    srand(7);
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(rand() % 40);
        double v[40], w[40];
        size_t met = 0;
        for (size_t i = 0; i < n; i++) {
            v[i] = rand() % 5 == 0 ? NAN : (double)(rand() % 1000) / 100;
            if (!isnan(v[i]))
                w[met++] = v[i];
        }
        struct pflex_ttt_summary s;
        pflex_ttt_summarize(v, n, &s);
        assert_int_equal(s.events, n);
        assert_int_equal(s.met, met);
        if (!met) {
            assert_true(isnan(s.p50_s) && isnan(s.worst_s));
            continue;
        }
        /* brute force: the smallest x with at least p of the values <= x */
        double best50 = INFINITY, best99 = INFINITY, worst = -INFINITY;
        for (size_t i = 0; i < met; i++) {
            size_t le = 0;
            for (size_t j = 0; j < met; j++)
                le += w[j] <= w[i];
            if ((double)le >= 0.5 * (double)met && w[i] < best50)
                best50 = w[i];
            if ((double)le >= 0.99 * (double)met && w[i] < best99)
                best99 = w[i];
            worst = fmax(worst, w[i]);
        }
        assert_near(s.p50_s, best50, 0);
        assert_near(s.p99_s, best99, 0);
        assert_near(s.worst_s, worst, 0);
    }
}

/* A series: a step to 800 W at sample 3 met at 5, a ramp over samples
 * 10..13 followed exactly, a rise at 20, a fall at 25 never met. */
static void test_series(void **state)
{
    double lim[30], pw[30], out[8];
    for (int k = 0; k < 30; k++) {
        lim[k] = k < 3 ? INFINITY : k < 10 ? 800 : k < 14 ? 800 - 50 * (k - 9) : k < 20 ? 600 : k < 25 ? INFINITY : 500;
        pw[k] = k < 5 ? 1000 : k < 10 ? 790 : k < 20 ? lim[k] - 1 : k < 25 ? 1000 : 900;
    }
    size_t n = pflex_ttt_series(0, 1, lim, pw, 30, 1000, 3, out, 8);
    assert_int_equal(n, 3);
    assert_near(out[0], 2, 1e-9);      /* 5 - 3 */
    assert_near(out[1], 0, 1e-9);      /* the ramp followed under its line */
    assert_true(isnan(out[2]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_met),
        cmocka_unit_test(test_step_relapse),
        cmocka_unit_test(test_signal_before_start),
        cmocka_unit_test(test_ramp_lag),
        cmocka_unit_test(test_ramp_stall),
        cmocka_unit_test(test_never_met),
        cmocka_unit_test(test_event_ends_first),
        cmocka_unit_test(test_bad_samples),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_series),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
