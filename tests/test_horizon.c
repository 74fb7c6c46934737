/* test_horizon.c — the levers' planner over an event's horizon.
 *
 * Small cases with an optimum worked out by hand (caps shared at the
 * cheaper slope, a pause where caps cannot go low enough), contracts kept
 * where the limit must give way, the longest pause, the LP bound under
 * the plan, the curve's vertices never over the truth; then 300 seeded
 * random discrete sites (pause, stop, resize, no caps) whose optimum is
 * found by enumerating every schedule under the model docs/levers.md
 * states. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/flex/horizon.h"

#define assert_near(a, b, eps) near_((a), (b), (eps), #a, __LINE__)
static void near_(double a, double b, double eps, const char *what, int line)
{
    if (a == b || fabs(a - b) <= eps)
        return;
    fail_msg("line %d: %s = %.9g, expected %.9g (within %g)", line, what, a, b, eps);
}

/* A job of g GPUs on a straight curve from (400 W, 1) to (lo W, f_lo). */
static struct pflex_horizon_job line_job(int g, double lo, double f_lo)
{
    struct pflex_horizon_job j = {.gpus = g, .weight = 1, .nlevels = 2, .idle_w = 50, .levers = PFLEX_LEVER_CAP,
                                  .loss_budget = NAN, .max_pause_s = INFINITY, .resize_eff = 1};
    j.levels[0] = (struct pflex_horizon_level){400, 1, 0};
    j.levels[1] = (struct pflex_horizon_level){lo, f_lo, 0};
    return j;
}

static void solve(const struct pflex_horizon_job *jobs, size_t nj, const double *dt, const double *lim, size_t T,
                  struct pflex_horizon_plan *pl)
{
    struct pflex_horizon_problem p = {.njobs = nj, .nperiods = T, .jobs = jobs, .dt_s = dt, .limit_w = lim,
                                      .mip_gap = 1e-9, .time_limit_s = 30};
    pflex_error_t err;
    if (pflex_horizon_solve(&p, pl, &err) < 0)
        fail_msg("solve: %s", err.text);
}

static void test_caps_cheaper_slope(void **state)
{
    (void)state;
    /* 200 W to shed: job 1 loses 0.001 a watt, job 0 0.0025: job 1 gives
     * all of it, down to 200 W (T/T0 0.8); lost 0.2 GPU-s */
    struct pflex_horizon_job j[2] = {line_job(1, 100, 0.25), line_job(1, 100, 0.7)};
    double dt[1] = {1}, lim[1] = {600};
    struct pflex_horizon_plan pl;
    solve(j, 2, dt, lim, 1, &pl);
    assert_near(pl.lost, 0.2, 1e-6);
    assert_near(pl.x[0].cap_w, 400, 1e-9);
    assert_near(pl.x[1].cap_w, 200, 1e-9);
    assert_near(pl.x[1].fraction, 0.8, 1e-6);
    assert_near(pl.excess_w[0], 0, 0);
    assert_true(pl.bound <= pl.lost + 1e-9);
    pflex_horizon_plan_fini(&pl);
}

static void test_pause_below_caps(void **state)
{
    (void)state;
    /* caps reach 300 W only; the limit is 100 W: the job pauses (50 W) */
    struct pflex_horizon_job j = line_job(1, 300, 0.9);
    j.levers |= PFLEX_LEVER_PAUSE;
    double dt[1] = {10}, lim[1] = {100};
    struct pflex_horizon_plan pl;
    solve(&j, 1, dt, lim, 1, &pl);
    assert_int_equal(pl.x[0].what, PFLEX_HZ_PAUSE);
    assert_near(pl.lost, 10, 1e-9);
    assert_near(pl.power_w[0], 50, 1e-9);
    pflex_horizon_plan_fini(&pl);
}

static void test_contract_gives_way(void **state)
{
    (void)state;
    /* a budget of 52 % of two periods of 10 s (10.4 s); meeting the limit
     * (100 W) would take a pause in both: the plan keeps the contract and
     * the limit gives way by the least excess: one period paused (10 s
     * lost, 100 W), the other capped where the 0.4 s left allows, T/T0
     * 0.96 at 360 W a GPU (720 W, 620 over); both at the least cap would
     * be 500 over each */
    struct pflex_horizon_job j = line_job(2, 300, 0.9);
    j.levers |= PFLEX_LEVER_PAUSE;
    j.loss_budget = 0.52;
    j.event_s = 20;
    double dt[2] = {10, 10}, lim[2] = {100, 100};
    struct pflex_horizon_plan pl;
    solve(&j, 1, dt, lim, 2, &pl);
    double lost_s = 0;
    for (size_t t = 0; t < 2; t++)
        lost_s += (1 - pl.x[t].fraction) * dt[t];
    assert_true(lost_s <= 0.52 * 20 + 1e-6);
    assert_true(pl.x[0].what == PFLEX_HZ_PAUSE || pl.x[1].what == PFLEX_HZ_PAUSE);
    assert_near(pl.excess_w[0] + pl.excess_w[1], 620, 0.01);
    pflex_horizon_plan_fini(&pl);
}

static void test_longest_pause(void **state)
{
    (void)state;
    /* five periods of 300 s under the idle-and-a-bit limit; a pause lasts
     * 600 s at most: no three paused periods in a row, and stops (which
     * draw nothing but the checkpoint) fill in; the limit is met */
    struct pflex_horizon_job j = line_job(1, 300, 0.9);
    j.levers = PFLEX_LEVER_CAP | PFLEX_LEVER_PAUSE | PFLEX_LEVER_STOP;
    j.max_pause_s = 600;
    j.ckpt_s = 10;
    j.restart_s = 30;
    double dt[5] = {300, 300, 300, 300, 300}, lim[5] = {60, 60, 60, 60, 60};
    struct pflex_horizon_plan pl;
    solve(&j, 1, dt, lim, 5, &pl);
    int run = 0;
    for (size_t t = 0; t < 5; t++) {
        run = pl.x[t].what == PFLEX_HZ_PAUSE ? run + 1 : 0;
        assert_true(run <= 2);
        assert_near(pl.excess_w[t], 0, 0);
        assert_true(pl.power_w[t] <= 60 + 1e-9);
    }
    pflex_horizon_plan_fini(&pl);
}

static void test_infeasible_rule(void **state)
{
    (void)state;
    /* caps only, a limit under the least cap: the least cap, and the
     * excess is what it is over */
    struct pflex_horizon_job j = line_job(4, 200, 0.6);
    double dt[1] = {5}, lim[1] = {500};
    struct pflex_horizon_plan pl;
    solve(&j, 1, dt, lim, 1, &pl);
    assert_near(pl.x[0].cap_w, 200, 1e-9);
    assert_near(pl.excess_w[0], 300, 1e-6);
    pflex_horizon_plan_fini(&pl);
}

static void test_levels_never_over_truth(void **state)
{
    (void)state;
    /* an S-shaped curve (convex below, concave above) on whole watts */
    enum { N = 301 };
    double cap[N], f[N];
    for (int i = 0; i < N; i++) {
        cap[i] = 400 - i;
        double x = (cap[i] - 100) / 300;
        f[i] = 0.3 + 0.7 * (x * x * (3 - 2 * x));
    }
    struct pflex_horizon_level lv[PFLEX_HORIZON_MAX_LEVELS];
    size_t k = pflex_horizon_levels(cap, f, N, 6, lv);
    assert_true(k >= 2 && k <= 6);
    assert_near(lv[0].cap_w, 400, 0);
    assert_near(lv[k - 1].cap_w, 100, 0);
    struct pflex_horizon_job j = line_job(1, 100, 0.3);
    j.nlevels = k;
    memcpy(j.levels, lv, k * sizeof *lv);
    /* the plan's T/T0 at each cap, one period, the limit that cap: never
     * over the curve */
    for (int i = 0; i < N; i += 7) {
        double dt[1] = {1}, lim[1] = {cap[i]};
        struct pflex_horizon_plan pl;
        solve(&j, 1, dt, lim, 1, &pl);
        double ci = pl.x[0].cap_w;
        int at = (int)(400 - ci);
        assert_true(pl.x[0].fraction <= f[at] + 1e-9);
        pflex_horizon_plan_fini(&pl);
    }
}

static void test_lever_parse(void **state)
{
    (void)state;
    unsigned m;
    assert_int_equal(pflex_lever_parse("pause,stop", &m), 0);
    assert_int_equal(m, PFLEX_LEVER_CAP | PFLEX_LEVER_PAUSE | PFLEX_LEVER_STOP);
    assert_int_equal(pflex_lever_parse("all", &m), 0);
    assert_int_equal(m, PFLEX_LEVER_ALL);
    assert_int_equal(pflex_lever_parse("cap,nap", &m), -1);
    assert_int_equal(pflex_lever_parse("", &m), -1);
}

/* The model, by enumeration: options per job (0 full at the largest cap,
 * 1 pause, 2 stop, 3.. resize), every schedule. */
struct bf {
    size_t nj, T;
    const struct pflex_horizon_job *j;
    const double *dt, *lim;
    int nopt[4];
    int pick[4][4];
    double best;
};

static int opt_cls(const struct pflex_horizon_job *j, int o)
{
    return o == 0 || o == 1 ? 0 : o == 2 ? 1 : 2 + (o - 3);
}

static double bf_cost(const struct bf *b)
{
    double total = 0;
    double pw[4] = {0};
    for (size_t q = 0; q < b->nj; q++) {
        const struct pflex_horizon_job *j = &b->j[q];
        int prev = 0;
        double lost = 0;
        double run = 0;
        for (size_t t = 0; t < b->T; t++) {
            int o = b->pick[q][t], c = opt_cls(j, o);
            double f = o == 0 ? 1 : o >= 3 ? j->resize_eff * j->sizes[o - 3] / j->gpus : 0;
            double p = o == 0 ? j->levels[0].cap_w * j->gpus : o == 1 ? j->idle_w * j->gpus : o == 2 ? 0
                     : j->levels[0].cap_w * j->sizes[o - 3];
            double l = (1 - f) * b->dt[t];
            if (c != prev) {
                if (prev != 1) {
                    p += j->idle_w * (prev == 0 ? j->gpus : j->sizes[prev - 2]);
                    l += j->ckpt_s;
                }
                if (c != 1)
                    l += j->restart_s;
            }
            if (t == b->T - 1 && c != 0)
                l += (c != 1 ? j->ckpt_s : 0) + j->restart_s;
            run = o == 1 ? run + b->dt[t] : 0;
            if (run > j->max_pause_s + 1e-9)
                return INFINITY;
            pw[t] += p;
            lost += l;
            prev = c;
        }
        if (isfinite(j->loss_budget) && lost > j->loss_budget * j->event_s + 1e-9)
            return INFINITY;
        total += j->weight * j->gpus * lost;
    }
    for (size_t t = 0; t < b->T; t++)
        if (pw[t] > b->lim[t])
            total += 100 * (pw[t] - b->lim[t]) * b->dt[t];
    return total;
}

static void bf_walk(struct bf *b, size_t k)
{
    if (k == b->nj * b->T) {
        double c = bf_cost(b);
        if (c < b->best)
            b->best = c;
        return;
    }
    size_t q = k / b->T, t = k % b->T;
    for (int o = 0; o < b->nopt[q]; o++) {
        if ((o == 1 && !(b->j[q].levers & PFLEX_LEVER_PAUSE)) || (o == 2 && !(b->j[q].levers & PFLEX_LEVER_STOP)) ||
            (o >= 3 && !(b->j[q].levers & PFLEX_LEVER_RESIZE)))
            continue;
        b->pick[q][t] = o;
        bf_walk(b, k + 1);
    }
}

static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static void test_random_vs_enumeration(void **state)
{
    (void)state;
    uint64_t s = 42;
    for (int trial = 0; trial < 300; trial++) {
        size_t nj = 2, T = 3;
        struct pflex_horizon_job j[2];
        double dt[3], lim[3];
        for (size_t t = 0; t < T; t++)
            dt[t] = 100 + 200 * urand(&s);
        double ev = dt[0] + dt[1] + dt[2];
        for (size_t q = 0; q < nj; q++) {
            int g = 8 * (1 + (int)(3 * urand(&s)));
            j[q] = (struct pflex_horizon_job){.gpus = g, .weight = 0.5 + urand(&s), .nlevels = 1,
                                              .idle_w = 40 + 40 * urand(&s), .levers = (unsigned)(urand(&s) * 16) & ~1u,
                                              .loss_budget = urand(&s) < 0.5 ? NAN : urand(&s), .event_s = ev,
                                              .max_pause_s = urand(&s) < 0.5 ? INFINITY : 150 + 300 * urand(&s),
                                              .ckpt_s = 60 * urand(&s), .restart_s = 120 * urand(&s),
                                              .resize_eff = 0.8 + 0.2 * urand(&s)};
            j[q].levels[0] = (struct pflex_horizon_level){300 + 100 * urand(&s), 1, 0};
            j[q].nsizes = g > 8 ? 1 : 0;
            j[q].sizes[0] = g / 2;
        }
        for (size_t t = 0; t < T; t++)
            lim[t] = urand(&s) < 0.2 ? INFINITY : (0.2 + 0.8 * urand(&s)) * 400 * 32;
        struct bf b = {.nj = nj, .T = T, .j = j, .dt = dt, .lim = lim, .best = INFINITY};
        for (size_t q = 0; q < nj; q++)
            b.nopt[q] = 3 + (int)j[q].nsizes;
        bf_walk(&b, 0);
        struct pflex_horizon_plan pl;
        solve(j, nj, dt, lim, T, &pl);
        double got = pl.lost;
        for (size_t t = 0; t < T; t++)
            got += 100 * pl.excess_w[t] * dt[t];
        if (fabs(got - b.best) > 1e-6 * (1 + b.best)) {
            for (size_t q = 0; q < nj; q++)
                fprintf(stderr, "job %zu: g %d lev %u budget %g maxp %g ck %g rs %g eff %g idle %g cap %g ns %zu\n", q,
                        j[q].gpus, j[q].levers, j[q].loss_budget, j[q].max_pause_s, j[q].ckpt_s, j[q].restart_s,
                        j[q].resize_eff, j[q].idle_w, j[q].levels[0].cap_w, j[q].nsizes);
            for (size_t t = 0; t < T; t++)
                fprintf(stderr, "t %zu dt %g lim %g: %d/%d %d/%d excess %g\n", t, dt[t], lim[t], pl.x[t].what,
                        pl.x[t].gpus, pl.x[T + t].what, pl.x[T + t].gpus, pl.excess_w[t]);
            fail_msg("trial %d: plan %.9g, enumeration %.9g", trial, got, b.best);
        }
        assert_true(pl.bound <= pl.lost + 1e-6 * (1 + pl.lost) || pl.excess_w[0] + pl.excess_w[1] + pl.excess_w[2] > 0);
        pflex_horizon_plan_fini(&pl);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps_cheaper_slope),
        cmocka_unit_test(test_pause_below_caps),
        cmocka_unit_test(test_contract_gives_way),
        cmocka_unit_test(test_longest_pause),
        cmocka_unit_test(test_infeasible_rule),
        cmocka_unit_test(test_levels_never_over_truth),
        cmocka_unit_test(test_lever_parse),
        cmocka_unit_test(test_random_vs_enumeration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
