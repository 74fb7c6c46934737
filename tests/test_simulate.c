/* test_simulate.c — the simulated site (pflex/site/simulate.h).
 *
 * The truth is read between measured caps and never past them; a run is
 * the same from the same seed and differs from another; no policy goes
 * over a step of the limit when caps settle within a period, and some do
 * when they settle later than the plan's horizon (the measure can fail);
 * the online policies are the controller's period, once a period, its
 * caps acted on after the delay; a planner entry standing for n GPUs
 * plans as n entries do; a day's
 * targets follow the rule of scripts/srp_event.sh. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "pflex/flex/safeplan.h"
#include "pflex/site/simulate.h"
#include "controller/ctl_int.h"
#include "controller/sim_site.h"

/* Two A100-like curves: an inelastic one and an elastic one. */
static const double cap_a[] = {400, 350, 300, 250, 200, 100};
static const double pow_a[] = {368, 333, 289, 242, 195, 98};
static const double fr_a[] = {1, 0.976, 0.931, 0.871, 0.781, 0.225};
static const double cap_b[] = {400, 350, 300, 250, 200, 100};
static const double pow_b[] = {382, 337, 291, 245, 196, 102};
static const double fr_b[] = {1, 0.921, 0.860, 0.781, 0.624, 0.191};

static struct pflex_sim_kind kinds[2];

static void setup_kinds(void)
{
    kinds[0] = (struct pflex_sim_kind){.name = "a", .n = 6, .cap_w = cap_a, .power_w = pow_a,
                                       .fraction = fr_a, .t0 = 100, .pfi_measured = 1.8,
                                       .pfi_predicted = 1.6, .floor = 0.5};
    kinds[1] = (struct pflex_sim_kind){.name = "b", .n = 6, .cap_w = cap_b, .power_w = pow_b,
                                       .fraction = fr_b, .t0 = 50, .pfi_measured = 1.2,
                                       .pfi_predicted = 1.3, .floor = 0.5};
}

static void test_interp_never_extrapolates(void **state)
{
    (void)state;
    setup_kinds();
    double p, f;
    /* past the measured range: the end points, not a line through them */
    pflex_sim_kind_at(&kinds[0], 700, &p, &f);
    assert_true(p == 368 && f == 1);
    pflex_sim_kind_at(&kinds[0], 20, &p, &f);
    assert_true(p == 98 && f == 0.225);
    pflex_sim_kind_at(&kinds[0], 0, &p, &f);
    assert_true(p == 98 && f == 0.225);
    /* at measured caps, the measured values; between them, between them */
    for (int i = 0; i < 6; i++) {
        pflex_sim_kind_at(&kinds[1], cap_b[i], &p, &f);
        assert_true(fabs(p - pow_b[i]) < 1e-12 && fabs(f - fr_b[i]) < 1e-12);
    }
    for (double c = 100.5; c < 400; c += 3.7) {
        int i = 1;
        while (cap_b[i] > c)
            i++;
        double w = (c - cap_b[i]) / (cap_b[i - 1] - cap_b[i]);
        pflex_sim_kind_at(&kinds[1], c, &p, &f);
        assert_true(fabs(p - (pow_b[i] + w * (pow_b[i - 1] - pow_b[i]))) < 1e-9);
        assert_true(f >= fr_b[i] - 1e-12 && f <= fr_b[i - 1] + 1e-12);
    }
}

/* The smooth truth: through every measured point, monotone where the
 * points are, never outside the two points around a cap, whole watts
 * between them, its slope continuous (no corner at a measured cap: the
 * slopes just either side of one differ by far less than the straight
 * lines' do); two points stay a line. */
static void test_smooth_curve(void **state)
{
    (void)state;
    setup_kinds();
    pflex_error_t err = {0};
    size_t m = pflex_sim_kind_smooth_n(&kinds[0], 1);
    assert_int_equal(m, 301);
    double *st = malloc(3 * m * sizeof *st);
    struct pflex_sim_kind sk;
    assert_int_equal(pflex_sim_kind_smooth(&kinds[0], 1, st, &sk, &err), 0);
    assert_int_equal(sk.n, m);
    assert_string_equal(sk.name, "a");
    for (size_t i = 0; i < m; i++) {
        assert_true(sk.cap_w[i] == 400 - (double)i);
        if (i) {
            assert_true(sk.fraction[i] <= sk.fraction[i - 1]);
            assert_true(sk.power_w[i] <= sk.power_w[i - 1]);
        }
        double p, f;
        pflex_sim_kind_at(&kinds[0], sk.cap_w[i], &p, &f);
        int j = 1;
        while (j < 5 && cap_a[j] > sk.cap_w[i])
            j++;
        assert_true(sk.fraction[i] >= fr_a[j] - 1e-12 && sk.fraction[i] <= fr_a[j - 1] + 1e-12);
    }
    for (int j = 0; j < 6; j++) {
        size_t i = (size_t)(400 - cap_a[j]);
        assert_true(fabs(sk.fraction[i] - fr_a[j]) < 1e-12 && fabs(sk.power_w[i] - pow_a[j]) < 1e-12);
    }
    /* at 250 W the lines' slope jumps from 0.0012 to 0.0018 a watt */
    double below = sk.fraction[150] - sk.fraction[151], above = sk.fraction[149] - sk.fraction[150];
    assert_true(fabs(below - above) < 0.0001);
    free(st);
    /* two points: the line */
    struct pflex_sim_kind two = kinds[0];
    two.n = 2;
    assert_int_equal(pflex_sim_kind_smooth_n(&two, 1), 2);
    double st2[6];
    assert_int_equal(pflex_sim_kind_smooth(&two, 1, st2, &sk, &err), 0);
    assert_true(sk.n == 2 && st2[0] == 400 && st2[1] == 350 && st2[4] == 1);
    /* caps out of order: an error */
    static const double bad_cap[] = {400, 350, 350};
    struct pflex_sim_kind bad = kinds[0];
    bad.n = 3;
    bad.cap_w = bad_cap;
    double *st3 = malloc(3 * pflex_sim_kind_smooth_n(&bad, 1) * sizeof *st3);
    assert_int_equal(pflex_sim_kind_smooth(&bad, 1, st3, &sk, &err), -1);
    free(st3);
}

/* Adds a fraction target over [start_s, end_s) to set. */
static void add_fraction(pflex_target_set_t *set, double start_s, double end_s, double value)
{
    struct pflex_target t = {.start_s = start_s, .end_s = end_s, .value = value,
                             .unit = PFLEX_TARGET_FRACTION};
    pflex_error_t err;
    if (pflex_target_set_add(set, &t, &err))
        fail_msg("%s", err.text);
}

/* A run of the four jobs jobs[] on both kinds from t = 1,000,000 s, a
 * period a second, the study's noise, normalised progress, the
 * controller's own period; tests change what they are about. */
static struct pflex_sim_config site_config(const struct pflex_sim_job *jobs, const pflex_target_set_t *set,
                                           double duration_s, uint64_t seed, unsigned policies)
{
    return (struct pflex_sim_config){
        .nkinds = 2, .kinds = kinds, .njobs = 4, .jobs = jobs, .start_s = 1000000, .duration_s = duration_s,
        .period_s = 1, .delay_s = 1, .noise_power = 0.004, .noise_tput = 0.005, .seed = seed, .targets = set,
        .objective = PFLEX_OBJECTIVE_PROGRESS, .policies = policies, .keep_jobs = 1, .threads = 1,
        .explore_step = -1, .controller = &ctl_sim,
    };
}

static const struct pflex_sim_job step_jobs[] = {
    {"j0", 0, 16, 0.5, 1}, {"j1", 1, 8, 0.5, 1}, {"j2", 0, 8, 0.75, 1}, {"j3", 1, 24, 0.5, 1},
};
/* the same curves and floors in larger jobs: a step of one costs more
 * watts than rounding leaves, so where a step goes matters */
static const struct pflex_sim_job big_jobs[] = {
    {"j0", 0, 64, 0.5, 1}, {"j1", 1, 48, 0.5, 1}, {"j2", 0, 40, 0.75, 1}, {"j3", 1, 56, 0.5, 1},
};
static const struct pflex_sim_job *step_set = step_jobs;   /* run_step's jobs (4) */
static int step_offline_exact;      /* run_step's offline_exact */
static int step_smooth;             /* run_step on the kinds' smooth curves */
static double smooth_store[2][3 * 301];

/* A site of both kinds under a step to `frac` of its baseline at 60 s. */
static void run_step(double frac, double delay_s, uint64_t seed, unsigned policies,
                     struct pflex_sim_result *r)
{
    setup_kinds();
    for (int i = 0; i < 2 && step_smooth; i++) {
        struct pflex_sim_kind sk;
        pflex_error_t e;
        assert_int_equal(pflex_sim_kind_smooth(&kinds[i], 1, smooth_store[i], &sk, &e), 0);
        kinds[i] = sk;
    }
    const struct pflex_sim_job *jobs = step_set;
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    add_fraction(&set, 1000060, 1000240, frac);
    struct pflex_sim_config c = site_config(jobs, &set, 300, seed, policies);
    c.delay_s = delay_s;
    c.threads = 2;
    c.offline_exact = step_offline_exact;
    pflex_error_t err;
    int rc = pflex_sim_run(&c, r, &err);
    if (rc)
        fail_msg("%s", err.text);
    pflex_target_set_fini(&set);
}

static void test_zero_overshoot_on_a_step(void **state)
{
    (void)state;
    struct pflex_sim_result r;
    run_step(0.7, 1, 1, 0, &r);
    unsigned want = (1u << PFLEX_SIM_NPOL) - 1;
    assert_int_equal(r.ran, want);
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        const struct pflex_sim_summary *s = &r.pol[p];
        assert_true(s->periods_limited > 100);
        if (s->periods_above || s->max_over_w > 0)
            fail_msg("%s: %zu periods above, %.1f W", pflex_sim_policy_name(p), s->periods_above,
                     s->max_over_w);
        /* recounted here from the series */
        for (size_t k = 0; k < r.nperiods; k++)
            if (isfinite(r.limit_w[k]))
                assert_true(r.power_w[p][k] <= r.limit_w[k] * (1 + 1e-9));
    }
    /* the limit bites: every policy draws less under it than before */
    assert_true(r.power_w[PFLEX_SIM_EQUAL][100] < r.power_w[PFLEX_SIM_EQUAL][10] - 100);
    /* and every policy meets the step as early as the controller does:
     * its caps hold for their lease (12 periods) and a period, so the
     * plans made 13 periods before the step meet its limit, in force a
     * period (the delay) later; the offline policies spared that would be
     * scored against the online ones for the fail-safe alone */
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        size_t k = 60;
        while (k > 0 && r.power_w[p][k - 1] <= r.limit_w[60] * (1 + 1e-9))
            k--;
        if (k != 60 - 13 + 1)
            fail_msg("%s meets the step at period %zu", pflex_sim_policy_name(p), k);
    }
    pflex_sim_result_fini(&r);
    /* caps that settle in 15 periods miss a step the plans saw 13 ahead:
     * the measure sees it */
    run_step(0.7, 15, 1, 1u << PFLEX_SIM_EQUAL, &r);
    assert_true(r.pol[PFLEX_SIM_EQUAL].periods_above > 0);
    assert_true(r.pol[PFLEX_SIM_EQUAL].max_over_w > 100);
    pflex_sim_result_fini(&r);
}

/* A limit under the jobs' least caps summed (100 W a GPU, 5,600 W over
 * the four jobs' 56 GPUs; the baseline 21,056 W) is counted apart: every
 * policy is over it, none over a limit it could meet; one above those
 * caps is no such period. */
static void test_infeasible_limit(void **state)
{
    (void)state;
    struct pflex_sim_result r;
    unsigned pol = 1u << PFLEX_SIM_EQUAL | 1u << PFLEX_SIM_ORACLE;
    run_step(0.2, 1, 1, pol, &r);
    size_t limited = 0;
    for (size_t k = 0; k < r.nperiods; k++)
        limited += isfinite(r.limit_w[k]);
    assert_true(limited > 100);
    assert_int_equal(r.periods_infeasible, limited);
    assert_true(fabs(r.infeasible_max_w - (5600 - 0.2 * 21056)) < 1e-6);
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (pol & (1u << p)) {
            assert_true(r.pol[p].periods_above > 100);
            assert_int_equal(r.pol[p].periods_above_feasible, 0);
        }
    pflex_sim_result_fini(&r);
    run_step(0.3, 1, 1, pol, &r);
    assert_int_equal(r.periods_infeasible, 0);
    assert_true(r.infeasible_max_w == 0);
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (pol & (1u << p))
            assert_int_equal(r.pol[p].periods_above_feasible, r.pol[p].periods_above);
    pflex_sim_result_fini(&r);
}

/* Jobs that never reach their caps (an input-bound curve: 60 W a GPU
 * under a 100 W cap): a limit over what they draw at their least caps but
 * under those caps summed is infeasible all the same, counted on caps
 * (the guarantee is on caps; counted on the draw, every policy set the
 * least caps over the limit and no period said so). */
static const double cap_c[] = {400, 300, 200, 100};
static const double pow_c[] = {250, 200, 120, 60};
static const double fr_c[] = {1, 0.95, 0.8, 0.5};

static void test_infeasible_on_caps(void **state)
{
    (void)state;
    /* the one definition: a limit at or over the least caps summed (to
     * their rounding, 1e-6 of them) can be kept; no limit always */
    assert_true(pflex_safe_limit_feasible(3200, 3200));
    assert_true(pflex_safe_limit_feasible(3200 - 0.001, 3200));
    assert_false(pflex_safe_limit_feasible(3199, 3200));
    assert_true(pflex_safe_limit_feasible(INFINITY, 3200));
    struct pflex_sim_kind kc = {.name = "c", .n = 4, .cap_w = cap_c, .power_w = pow_c, .fraction = fr_c,
                                .t0 = 10, .pfi_measured = NAN, .pfi_predicted = NAN};
    static const struct pflex_sim_job jc[] = {
        {"c0", 0, 8, 0, 1}, {"c1", 0, 8, 0, 1}, {"c2", 0, 8, 0, 1}, {"c3", 0, 8, 0, 1},
    };
    /* least caps 3,200 W, least draw 1,920 W, uncapped draw 8,000 W */
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    add_fraction(&set, 1000060, 1000240, 0.3);     /* 2,400 W */
    unsigned pol = 1u << PFLEX_SIM_EQUAL | 1u << PFLEX_SIM_ORACLE | 1u << PFLEX_SIM_ONLINE_COLD;
    struct pflex_sim_config c = site_config(jc, &set, 300, 1, pol);
    c.nkinds = 1;
    c.kinds = &kc;
    struct pflex_sim_result r;
    pflex_error_t err;
    assert_int_equal(pflex_sim_run(&c, &r, &err), 0);
    assert_int_equal(r.periods_infeasible, 180);
    assert_true(fabs(r.infeasible_max_w - 800) < 1e-6);
    assert_int_equal(r.event_periods, 180);
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (pol & (1u << p)) {
            /* the least caps, drawing under the limit: never above on the
             * draw, and nothing the controller failed at */
            assert_int_equal(r.pol[p].periods_above, 0);
            assert_int_equal(r.pol[p].periods_above_feasible, 0);
            assert_true(r.job_cap[p][0 * r.nperiods + 150] == 100);
        }
    pflex_sim_result_fini(&r);
    pflex_target_set_fini(&set);
}

/* With a 0.75 floor on every job, the oracle keeps every floor wherever
 * some plan in the cap steps keeps them all under the limit it plans to
 * (floor_breaches_feasible 0), and wherever the online policy kept them
 * all under the limit, the oracle loses no more than it (it is the
 * optimum of the same constraints).  Before, the oracle's rounding to
 * whole watts stepped each other job down once only to pay for the
 * floors' steps up, then broke floors: on these curves at 54-64 % cuts. */
static void test_oracle_keeps_floors(void **state)
{
    (void)state;
    static const struct pflex_sim_job fl[] = {
        {"j0", 0, 16, 0.75, 1}, {"j1", 1, 8, 0.75, 1}, {"j2", 0, 8, 0.75, 1}, {"j3", 1, 24, 0.75, 1},
    };
    unsigned pol = 1u << PFLEX_SIM_EQUAL | 1u << PFLEX_SIM_ORACLE | 1u << PFLEX_SIM_ONLINE_COLD;
    size_t kept = 0, infeasible = 0, bind = 0;
    for (int smooth = 0; smooth < 2; smooth++)
        for (int i = 0; i <= 40; i++) {
            step_set = fl;
            step_smooth = smooth;
            struct pflex_sim_result r;
            run_step(0.5 + 0.01 * i, 1, 1, pol, &r);
            const struct pflex_sim_summary *o = &r.pol[PFLEX_SIM_ORACLE], *on = &r.pol[PFLEX_SIM_ONLINE_COLD];
            if (o->floor_breaches_feasible)
                fail_msg("%s: cut to %.2f: the oracle broke %zu floors a plan could keep",
                         smooth ? "smooth" : "lines", 0.5 + 0.01 * i, o->floor_breaches_feasible);
            assert_int_equal(r.pol[PFLEX_SIM_EQUAL].floor_breaches_feasible, 0);
            if (on->floor_breaches == 0 && on->periods_above == 0) {
                kept++;
                assert_int_equal(o->floor_breaches, 0);
                if (!(on->lost_vs_oracle_pct_of_site >= -1e-9))
                    fail_msg("cut to %.2f: online-cold %.6f%% of the site better than the oracle",
                             0.5 + 0.01 * i, -on->lost_vs_oracle_pct_of_site);
            }
            infeasible += r.periods_floor_infeasible > 0;
            /* the floors' edges bind: some job sits at its edge */
            for (size_t s = 0; s < 4; s++) {
                double p, f, cap = r.job_cap[PFLEX_SIM_ORACLE][s * r.nperiods + 150];
                pflex_sim_kind_at(&kinds[fl[s].kind], cap - 1, &p, &f);
                bind += f < 0.75 - 1e-9;
            }
            pflex_sim_result_fini(&r);
        }
    step_set = step_jobs;
    step_smooth = 0;
    assert_true(kept > 20);         /* online kept them all often */
    assert_true(infeasible > 5);    /* and deep cuts no plan keeps them: said apart */
    assert_true(bind > 40);
}

/* A fleet of one curve (every job the same: equal cuts are the optimum
 * but for rounding): the gap is ~0 of the site's progress, so no share of
 * it is given (it swung by thousands of per cent on a watt's rounding),
 * while the losses against the oracle and equal cuts are. */
static void test_one_curve_no_gap_share(void **state)
{
    (void)state;
    static const struct pflex_sim_job one[] = {
        {"j0", 0, 16, 0, 1}, {"j1", 0, 8, 0, 1}, {"j2", 0, 8, 0, 1}, {"j3", 0, 24, 0, 1},
    };
    unsigned pol = 1u << PFLEX_SIM_EQUAL | 1u << PFLEX_SIM_ORACLE | 1u << PFLEX_SIM_ONLINE_COLD;
    struct pflex_sim_result r;
    size_t tiny = 0;
    step_set = one;
    for (int smooth = 0; smooth < 2; smooth++)
        for (int i = 0; i <= 40; i++) {
            step_smooth = smooth;
            run_step(0.5 + 0.01 * i, 1, 1, pol, &r);
            assert_int_equal(r.event_periods, 180);
            assert_true(fabs(r.event_progress_s - 180 * 56) < 1e-6);
            assert_true(r.gap_pct_of_site >= 0 && r.gap_pct_of_site < 0.2);
            /* a gap a watt's rounding wide, that a share would divide by */
            tiny += r.gap_pct_of_site > 1e-9;
            for (int p = 0; p < PFLEX_SIM_NPOL; p++)
                if (pol & (1u << p)) {
                    const struct pflex_sim_summary *s = &r.pol[p];
                    if (!isnan(s->gap_recovered) || !isnan(s->settled_mean) || s->settled_periods)
                        fail_msg("%s: cut to %.2f: a share of a gap of %.2g %% of the site: %g",
                                 pflex_sim_policy_name(p), 0.5 + 0.01 * i, r.gap_pct_of_site,
                                 s->gap_recovered);
                    assert_true(isfinite(s->lost_vs_oracle_pct_of_site) && isfinite(s->lost_vs_equal_pct_of_site));
                    assert_true(s->lost_vs_oracle_pct_of_site >= -1e-9);
                }
            assert_true(r.pol[PFLEX_SIM_ORACLE].lost_vs_oracle_pct_of_site == 0);
            assert_true(r.pol[PFLEX_SIM_EQUAL].lost_vs_equal_pct_of_site == 0);
            assert_true(r.pol[PFLEX_SIM_EQUAL].lost_vs_oracle_pct_of_site == r.gap_pct_of_site);
            pflex_sim_result_fini(&r);
        }
    step_set = step_jobs;
    step_smooth = 0;
    assert_true(tiny > 5);
    /* two curves at a deep cut: a gap over 1 % of the site's progress,
     * shared; the oracle recovers all of it and loses nothing to itself */
    run_step(0.35, 1, 1, pol, &r);
    assert_true(r.gap_pct_of_site > PFLEX_SIM_GAP_MIN_PCT);
    assert_true(fabs(r.pol[PFLEX_SIM_ORACLE].gap_recovered - 1) < 1e-12);
    assert_true(r.pol[PFLEX_SIM_EQUAL].gap_recovered == 0);
    assert_true(fabs(r.pol[PFLEX_SIM_EQUAL].lost_vs_oracle_pct_of_site - r.gap_pct_of_site) < 1e-9);
    pflex_sim_result_fini(&r);
}

/* The oracle's objective at period k of r, caps cap[] (per slot). */
static double step_objective(const double *cap)
{
    double obj = 0;
    for (size_t s = 0; s < 4; s++) {
        double p, f;
        pflex_sim_kind_at(&kinds[step_set[s].kind], cap[s], &p, &f);
        obj += step_set[s].gpus * f;
    }
    return obj;
}

/* The offline policies hold caps in the controller's steps (whole watts),
 * within the limit, every floor kept where the exact caps keep it (the
 * 8-GPU job's floor, 0.75, binds at a 50 % limit, its edge at 194.4 W); no step
 * moved between two jobs, nor a step up on the watts left, improves the
 * oracle's, on lines and on smooth curves, in jobs of 8-24 GPUs and of
 * 40-64 (a step of one then costs more watts than rounding leaves); the
 * exact caps (--offline-exact) are not whole watts and, on the lines,
 * bound the oracle's from above, as a relaxation does. */
static void test_offline_whole_steps(void **state)
{
    (void)state;
    unsigned pol = (1u << PFLEX_SIM_EQUAL) | (1u << PFLEX_SIM_ORACLE);
    double fracs[41];
    for (int fi = 0; fi < 41; fi++)
        fracs[fi] = 0.5 + 0.01 * fi;
    size_t moves = 0, fractional = 0;
    for (int fi = 0; fi < 164; fi++) {
        step_set = fi / 41 % 2 ? big_jobs : step_jobs;
        step_smooth = fi >= 82;
        struct pflex_sim_result r, x;
        run_step(fracs[fi % 41], 1, 1, pol, &r);
        step_offline_exact = 1;
        run_step(fracs[fi % 41], 1, 1, pol, &x);
        step_offline_exact = 0;
        size_t N = r.nperiods;
        for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
            if (!(pol & (1u << p)))
                continue;
            for (size_t k = 62; k < 240; k += 59) {
                double cap[4], xc[4], watts = 0;
                for (size_t s = 0; s < 4; s++) {
                    cap[s] = r.job_cap[p][s * N + k];
                    xc[s] = x.job_cap[p][s * N + k];
                    if (fabs(xc[s] - round(xc[s])) > 1e-6)
                        fractional++;
                    if (fabs(cap[s] - round(cap[s])) > 1e-9)
                        fail_msg("%s: period %zu: cap %.6f W of %s", pflex_sim_policy_name(p), k,
                                 cap[s], step_set[s].name);
                    watts += step_set[s].gpus * cap[s];
                    double pw, f, fx;
                    pflex_sim_kind_at(&kinds[step_set[s].kind], cap[s], &pw, &f);
                    pflex_sim_kind_at(&kinds[step_set[s].kind], xc[s], &pw, &fx);
                    if (f < step_set[s].floor - 1e-9 && !(fx < step_set[s].floor - 1e-9))
                        fail_msg("%s: %.0f%%: period %zu: %s at %.3f under its floor (exact %.3f, %.4f)",
                                 pflex_sim_policy_name(p), 100 * fracs[fi % 41], k, step_set[s].name, cap[s],
                                 xc[s], fx);
                }
                assert_true(r.power_w[p][k] <= r.limit_w[k] * (1 + 1e-9));
                /* the plan's budget is the limit it planned for: the
                 * limit in force from the step's delay on */
                double left = r.limit_w[k] - watts;
                assert_true(left >= -1e-6);
                if (p != PFLEX_SIM_ORACLE)
                    continue;
                double best = step_objective(cap);
                /* the exact plan is no bound: it is the optimum on concave
                 * curves only, and curve b's lines are not (a 50 W step
                 * loses 0.079 from 400 W, 0.061 from 350 W); the whole
                 * steps' search (oracle_window) beats it there */
                for (size_t j = 0; j < 4; j++) {
                    double up[4];
                    memcpy(up, cap, sizeof up);
                    up[j] += 1;
                    if (up[j] > kinds[step_set[j].kind].cap_w[0])
                        continue;
                    if (step_set[j].gpus <= left + 1e-9)
                        assert_true(step_objective(up) <= best + 1e-9);
                    for (size_t i = 0; i < 4; i++) {
                        double mv[4], pw, f;
                        memcpy(mv, up, sizeof mv);
                        mv[i] -= 1;
                        if (i == j || step_set[j].gpus > left + step_set[i].gpus + 1e-9
                            || mv[i] < kinds[step_set[i].kind].cap_w[5])
                            continue;
                        pflex_sim_kind_at(&kinds[step_set[i].kind], mv[i], &pw, &f);
                        if (f < step_set[i].floor - 1e-9)
                            continue;
                        moves++;
                        if (step_objective(mv) > best + 1e-9)
                            fail_msg("%.0f%%: period %zu: a step from %s to %s wins %.3g", 100 * fracs[fi % 41],
                                     k, step_set[i].name, step_set[j].name, step_objective(mv) - best);
                    }
                }
            }
        }
        pflex_sim_result_fini(&r);
        pflex_sim_result_fini(&x);
    }
    step_set = step_jobs;
    step_smooth = 0;
    assert_true(moves > 1000);          /* the search had room */
    assert_true(fractional > 100);      /* and the exact caps are exact */
}

static void test_seeded_reproducible(void **state)
{
    (void)state;
    struct pflex_sim_result a, b, c;
    unsigned pol = (1u << PFLEX_SIM_ONLINE_COLD) | (1u << PFLEX_SIM_EQUAL);
    run_step(0.75, 1, 7, pol, &a);
    run_step(0.75, 1, 7, pol, &b);
    run_step(0.75, 1, 8, pol, &c);
    assert_int_equal(a.nperiods, b.nperiods);
    int differs = 0;
    for (size_t k = 0; k < a.nperiods; k++) {
        assert_true(a.power_w[PFLEX_SIM_ONLINE_COLD][k] == b.power_w[PFLEX_SIM_ONLINE_COLD][k]);
        assert_true(a.objective[PFLEX_SIM_ONLINE_COLD][k] == b.objective[PFLEX_SIM_ONLINE_COLD][k]);
        differs |= a.objective[PFLEX_SIM_ONLINE_COLD][k] != c.objective[PFLEX_SIM_ONLINE_COLD][k];
    }
    assert_true(a.pol[PFLEX_SIM_ONLINE_COLD].probes == b.pol[PFLEX_SIM_ONLINE_COLD].probes);
    /* another seed: other noise, so the learner reads and does otherwise */
    assert_true(differs);
    pflex_sim_result_fini(&a);
    pflex_sim_result_fini(&b);
    pflex_sim_result_fini(&c);
}

/* The online policies are the controller's period, called once a period
 * with every slot's readings of the period before, its caps acted on: a
 * controller that wraps ctl_sim and counts, and one that hands back a
 * fixed cap, whose caps the site then runs under.  Without a controller
 * the online policies are left out, and said so. */
static size_t calls, slots_seen;
static double fixed_cap;
static int wrap_create(const struct pflex_sim_ctl_setup *s, void **out, pflex_error_t *err)
{
    assert_int_equal(s->nslots, 4);
    assert_int_equal(s->njobs, 4);
    return ctl_sim.create(s, out, err);
}
static int wrap_period(void *h, double now, const struct pflex_sim_ctl_view *v, double *cap_w,
                       size_t *probes, pflex_error_t *err)
{
    calls++;
    for (size_t s = 0; s < 4; s++)
        slots_seen += v[s].gpus > 0 && v[s].max_cap_w == 400;
    if (ctl_sim.period(h, now, v, cap_w, probes, err) < 0)
        return -1;
    if (fixed_cap > 0)
        for (size_t s = 0; s < 4; s++)
            cap_w[s] = fixed_cap;
    return 0;
}
static void wrap_destroy(void *h)
{
    ctl_sim.destroy(h);
}

static void test_online_is_the_controller(void **state)
{
    (void)state;
    static const struct pflex_sim_controller wrap = {wrap_create, wrap_period, wrap_destroy, NULL};
    setup_kinds();
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    add_fraction(&set, 1000060, 1000240, 0.8);
    struct pflex_sim_config c = site_config(step_jobs, &set, 300, 3, 1u << PFLEX_SIM_ONLINE_COLD);
    c.controller = &wrap;
    pflex_error_t err;
    struct pflex_sim_result a, b;
    calls = slots_seen = 0;
    fixed_cap = 0;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    assert_int_equal(calls, a.nperiods);
    assert_int_equal(slots_seen, 4 * a.nperiods);
    assert_int_equal(a.pol[PFLEX_SIM_ONLINE_COLD].plans, a.nperiods);
    /* the same run through ctl_sim itself: the same site, period by period */
    c.controller = &ctl_sim;
    assert_int_equal(pflex_sim_run(&c, &b, &err), 0);
    for (size_t k = 0; k < a.nperiods; k++)
        assert_true(a.power_w[PFLEX_SIM_ONLINE_COLD][k] == b.power_w[PFLEX_SIM_ONLINE_COLD][k]);
    pflex_sim_result_fini(&b);
    /* caps handed back act one period later (--delay 1 s) */
    c.controller = &wrap;
    fixed_cap = 250;
    assert_int_equal(pflex_sim_run(&c, &b, &err), 0);
    for (size_t s = 0; s < 4; s++) {
        assert_true(b.job_cap[PFLEX_SIM_ONLINE_COLD][s * b.nperiods + 0] == 400);
        for (size_t k = 1; k < b.nperiods; k++)
            assert_true(b.job_cap[PFLEX_SIM_ONLINE_COLD][s * b.nperiods + k] == 250);
    }
    pflex_sim_result_fini(&a);
    pflex_sim_result_fini(&b);
    /* held at 150 W, every job but j0 (floor 0.5, curve a at 150 W: just
     * over it) falls under its floor for the whole limit: counted
     * job-period by job-period, and the deepest fall is j2's, 0.75 less
     * curve a at 150 W */
    fixed_cap = 150;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    const struct pflex_sim_summary *fs = &a.pol[PFLEX_SIM_ONLINE_COLD];
    assert_true(fs->periods_limited == 180 && fs->floor_periods == 4 * fs->periods_limited);
    assert_true(fs->floor_breaches == 3 * fs->periods_limited);
    /* and so in every period without the limit but the first (400 W, the
     * GPUs' own cap before the controller's first acts): counted apart */
    assert_true(fs->floor_breaches_free == 3 * (a.nperiods - fs->periods_limited - 1));
    double p150, f150;
    pflex_sim_kind_at(&kinds[0], 150, &p150, &f150);
    assert_true(f150 < 0.6 && fabs(fs->floor_worst - (0.75 - f150)) < 1e-12);
    pflex_sim_result_fini(&a);
    /* at 250 W every floor holds: nothing counted */
    fixed_cap = 250;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    assert_true(a.pol[PFLEX_SIM_ONLINE_COLD].floor_breaches == 0 && a.pol[PFLEX_SIM_ONLINE_COLD].floor_worst == 0);
    assert_true(a.pol[PFLEX_SIM_ONLINE_COLD].floor_breaches_free == 0);
    pflex_sim_result_fini(&a);
    /* no controller: left out, said; asked for, refused */
    c.controller = NULL;
    c.policies = 0;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    assert_false(a.ran & (1u << PFLEX_SIM_ONLINE_COLD));
    assert_non_null(strstr(a.note, "online policies left out"));
    pflex_sim_result_fini(&a);
    c.policies = 1u << PFLEX_SIM_ONLINE_COLD;
    assert_int_equal(pflex_sim_run(&c, &a, &err), -1);
    assert_non_null(strstr(err.text, "controller"));
    pflex_target_set_fini(&set);
}

/* An entry with count n plans as n entries of one GPU each. */
static void test_count_as_many(void **state)
{
    (void)state;
    double caps[] = {400, 300, 200}, la[] = {0, 0.05, 0.2}, lb[] = {0, 0.2, 0.5};
    struct pflex_site_job jobs[2] = {
        {.name = "a", .t0 = 10, .weight = 1, .floor = 0.7, .n = 3, .cap_w = caps, .loss = la},
        {.name = "b", .t0 = 10, .weight = 1, .floor = 0, .n = 3, .cap_w = caps, .loss = lb},
    };
    for (double limit = 2000; limit <= 4000; limit += 137) {
        struct pflex_site_gpu one[10], grp[2];
        for (int g = 0; g < 10; g++)
            one[g] = (struct pflex_site_gpu){.job = g < 4 ? 0 : 1, .reachable = 1, .telemetry_ok = 1,
                                             .min_cap_w = 100, .max_cap_w = 400, .cap_w = 400};
        grp[0] = one[0];
        grp[0].count = 4;
        grp[1] = one[9];
        grp[1].count = 6;
        struct pflex_safe_input i1 = {.ngpus = 10, .gpus = one, .njobs = 2, .jobs = jobs, .limit_w = limit,
                                      .objective = PFLEX_OBJECTIVE_PROGRESS};
        struct pflex_safe_input i2 = i1;
        i2.ngpus = 2;
        i2.gpus = grp;
        struct pflex_safe_plan p1, p2;
        pflex_safe_plan_init(&p1);
        pflex_safe_plan_init(&p2);
        pflex_error_t err;
        assert_int_equal(pflex_safe_plan(&i1, &p1, &err), 0);
        assert_int_equal(pflex_safe_plan(&i2, &p2, &err), 0);
        assert_true(fabs(p1.job_cap_w[0] - p2.job_cap_w[0]) < 1e-9);
        assert_true(fabs(p1.job_cap_w[1] - p2.job_cap_w[1]) < 1e-9);
        assert_true(p2.worst_w <= limit + 1e-6);
        assert_true(fabs(p1.least_w - p2.least_w) < 1e-9);
        assert_int_equal(p1.floor_breaches, p2.floor_breaches);
        double w = 4 * p2.cap_w[0] + 6 * p2.cap_w[1];
        assert_true(fabs(w - p2.worst_w) < 1e-6);
        pflex_safe_plan_fini(&p1);
        pflex_safe_plan_fini(&p2);
    }
}

static void test_day_rule(void **state)
{
    (void)state;
    char path[] = "/tmp/pflex-test-day-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "timestamp,total_W\n");
    /* 90 minutes at 1000 W, 40 at 700 (one sample at 712), 30 at 1000 */
    for (int m = 0; m < 160; m++) {
        double w = m >= 90 && m < 130 ? (m == 100 ? 712 : 700) : 1000;
        fprintf(f, "2025-05-03 %02d:%02d:00-07:00,%g\n", 14 + m / 60, m % 60, w);
    }
    fclose(f);
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    struct pflex_sim_day d;
    pflex_error_t err;
    int rc = pflex_sim_day_read(path, NULL, 600, &set, &d, &err);
    unlink(path);
    if (rc)
        fail_msg("%s", err.text);
    assert_true(fabs(d.baseline_w - 1000) < 1e-9);
    assert_int_equal(d.ntargets, 4);        /* minutes 90..129: buckets 9..12 */
    assert_true(fabs(d.event_start_s - (d.start_s + 5400)) < 1e-6);
    assert_true(fabs(d.event_end_s - (d.start_s + 7800)) < 1e-6);
    /* the bucket with 712 W is at 0.715 (rounded up), the others at 0.7 */
    assert_true(fabs(set.t[0].value - 0.7) < 1e-12);
    assert_true(fabs(set.t[1].value - 0.715) < 1e-12);
    assert_true(set.t[0].unit == PFLEX_TARGET_FRACTION);
    pflex_sim_day_fini(&d);
    pflex_target_set_fini(&set);
    /* a record without an event is refused */
    strcpy(path, "/tmp/pflex-test-day-XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    for (int m = 0; m < 120; m++)
        fprintf(f, "2025-05-03 %02d:%02d:00-07:00,1000\n", 14 + m / 60, m % 60);
    fclose(f);
    pflex_target_set_init(&set);
    assert_int_equal(pflex_sim_day_read(path, NULL, 600, &set, &d, &err), -1);
    assert_non_null(strstr(err.text, "no event"));
    unlink(path);
    pflex_target_set_fini(&set);
}

/* Between events the controller keeps each job's probe searches per fit
 * (ctl_job.probe_memo): a kept answer must be the one a fresh search
 * gives.  An hour with two events and the quiet between them (the walk
 * down, the fill, the chords by the coming plan), run with the searches
 * kept and made afresh every period: the same caps, period by period. */
static void test_probe_memo_changes_nothing(void **state)
{
    (void)state;
    setup_kinds();
    static const struct pflex_sim_job jobs[] = {
        {"j0", 0, 16, 0.5, 1}, {"j1", 1, 8, 0.5, 1}, {"j2", 0, 8, 0.75, 1}, {"j3", 1, 24, 0.9, 1},
    };
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    pflex_error_t err;
    add_fraction(&set, 1001200, 1001500, 0.75);
    add_fraction(&set, 1002400, 1002700, 0.65);
    unsigned pol = (1u << PFLEX_SIM_ONLINE_COLD) | (1u << PFLEX_SIM_ONLINE_WARM);
    struct pflex_sim_config c = site_config(jobs, &set, 3600, 11, pol);
    c.learn_between = 1;        /* the searches between events are what is kept */
    c.learn_budget = 1;
    struct pflex_sim_result a, b;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    ctl_probe_memo = 0;
    int rc = pflex_sim_run(&c, &b, &err);
    ctl_probe_memo = 1;
    assert_int_equal(rc, 0);
    assert_int_equal(a.nperiods, b.nperiods);
    for (int p = PFLEX_SIM_ONLINE_COLD; p <= PFLEX_SIM_ONLINE_WARM; p++) {
        /* the hour probes: the searches ran */
        assert_true(a.pol[p].probes >= 20);
        assert_int_equal(a.pol[p].probes, b.pol[p].probes);
        for (size_t k = 0; k < 4 * a.nperiods; k++)
            if (a.job_cap[p][k] != b.job_cap[p][k])
                fail_msg("%s: job %zu period %zu at %.1f W kept, %.1f W afresh", pflex_sim_policy_name(p),
                         k / a.nperiods, k % a.nperiods, a.job_cap[p][k], b.job_cap[p][k]);
    }
    pflex_sim_result_fini(&a);
    pflex_sim_result_fini(&b);
    pflex_target_set_fini(&set);
}

/* --explore-lead: between events the controller probes only while a
 * target that cuts starts within the lead.  An hour with one event at
 * 2,400-2,700 s and a lead of 600 s: no probe before 1,800 s, some before
 * the event, none after it (nothing is coming); without the lead the same
 * site probes from its first periods (and, its curves learned by 540 s,
 * no more than that: 285 probes against 242). */
static double probe_first, probe_last;  /* between events */
static size_t probes_event;             /* under the event and the horizon it is met over:
                                         * the guard's step probes */
static int lead_period(void *h, double now, const struct pflex_sim_ctl_view *v, double *cap_w,
                       size_t *probes, pflex_error_t *err)
{
    size_t before = *probes;
    if (ctl_sim.period(h, now, v, cap_w, probes, err) < 0)
        return -1;
    if (now >= 1002400 - 60 && now < 1002700 + 5)
        probes_event += *probes - before;
    else if (*probes > before) {
        if (!(probe_first <= now))
            probe_first = now;
        probe_last = now;
    }
    return 0;
}

static void test_explore_lead(void **state)
{
    (void)state;
    struct pflex_sim_controller lead = ctl_sim;
    lead.period = lead_period;
    setup_kinds();
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    pflex_error_t err;
    add_fraction(&set, 1002400, 1002700, 0.7);
    struct pflex_sim_config c = site_config(step_jobs, &set, 3600, 5, 1u << PFLEX_SIM_ONLINE_COLD);
    c.keep_jobs = 0;
    c.learn_between = 1;
    c.learn_budget = 1;
    c.explore_lead_s = 600;
    c.controller = &lead;
    struct pflex_sim_result a;
    probe_first = probe_last = NAN;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    size_t with_lead = a.pol[PFLEX_SIM_ONLINE_COLD].probes;
    assert_true(with_lead > 0);
    assert_true(probe_first >= 1001800 && probe_last < 1002400);
    assert_int_equal(a.pol[PFLEX_SIM_ONLINE_COLD].floor_breaches, 0);
    assert_int_equal(a.pol[PFLEX_SIM_ONLINE_COLD].periods_above, 0);
    pflex_sim_result_fini(&a);
    c.explore_lead_s = 0;
    probe_first = probe_last = NAN;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    assert_true(probe_first < 1001800);
    assert_true(a.pol[PFLEX_SIM_ONLINE_COLD].probes > with_lead);
    pflex_sim_result_fini(&a);
    pflex_target_set_fini(&set);
}

/* The online policies by default (as the controller's): no probe while
 * no target is in force, so no cap under a job's largest before or after
 * the event (under it, the guard's step probes); opted in with a budget, fewer probes than without one. */
static void test_learn_between_default_off(void **state)
{
    (void)state;
    struct pflex_sim_controller lead = ctl_sim;
    lead.period = lead_period;
    setup_kinds();
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    pflex_error_t err;
    add_fraction(&set, 1002400, 1002700, 0.7);
    unsigned pol = (1u << PFLEX_SIM_ONLINE_COLD) | (1u << PFLEX_SIM_ONLINE_WARM);
    struct pflex_sim_config c = site_config(step_jobs, &set, 3600, 5, pol);
    c.controller = &lead;
    struct pflex_sim_result a;
    probe_first = probe_last = NAN;
    probes_event = 0;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    /* no probe between events: all are the guard's steps under the target */
    assert_true(isnan(probe_first));
    assert_int_equal(a.pol[PFLEX_SIM_ONLINE_COLD].probes + a.pol[PFLEX_SIM_ONLINE_WARM].probes, probes_event);
    for (size_t k = 0; k < a.nperiods; k++) {
        double t = a.start_s + (double)k * a.period_s;
        /* outside the event and the horizon it is met over: every job
         * at its largest cap */
        if (t < 1002400 - 60 || t >= 1002700 + 5)
            for (int p = PFLEX_SIM_ONLINE_COLD; p <= PFLEX_SIM_ONLINE_WARM; p++)
                for (size_t j = 0; j < 4; j++)
                    if (a.job_cap[p] && isfinite(a.job_cap[p][j * a.nperiods + k])
                        && a.job_cap[p][j * a.nperiods + k] < 400 - 1e-9)
                        fail_msg("%s, period %zu (t %.0f): job %zu capped at %g W", pflex_sim_policy_name(p), k,
                                 t, j, a.job_cap[p][j * a.nperiods + k]);
    }
    pflex_sim_result_fini(&a);
    c.learn_between = 1;
    c.learn_budget = 1;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    size_t free_probes = a.pol[PFLEX_SIM_ONLINE_COLD].probes;
    pflex_sim_result_fini(&a);
    c.learn_budget = 0.0005;
    assert_int_equal(pflex_sim_run(&c, &a, &err), 0);
    size_t budget_probes = a.pol[PFLEX_SIM_ONLINE_COLD].probes;
    print_message("  probes between events: none by default, %zu opted in, %zu on a budget of 0.05 %%\n",
                  free_probes, budget_probes);
    assert_true(free_probes > 0 && budget_probes < free_probes);
    pflex_sim_result_fini(&a);
    pflex_target_set_fini(&set);
}

/* An input-bound job (pflex_sim_config.job_draw): j3's 24 GPUs draw 60 W
 * whatever the cap until 200 s, then run curve b.  The baseline counts
 * the draw; the oracle holds it at its least cap under the limit (60-240
 * s, 0.8 of the baseline), the online learner within its give-back margin
 * of it (docs/controller.md) and loses less than equal cuts; after the
 * rise the learner's cap for it rises; no policy goes over the limit. */
static void test_input_bound(void **state)
{
    (void)state;
    setup_kinds();
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    add_fraction(&set, 1000060, 1000240, 0.8);
    struct pflex_sim_job_draw draws[4] = {{0, NAN, 0}, {0, NAN, 0}, {0, NAN, 0}, {60, 200, 0}};
    unsigned pol = (1u << PFLEX_SIM_EQUAL) | (1u << PFLEX_SIM_ONLINE_COLD) | (1u << PFLEX_SIM_ORACLE);
    struct pflex_sim_config c = site_config(step_jobs, &set, 300, 1, pol);
    c.job_draw = draws;
    struct pflex_sim_result r;
    pflex_error_t err;
    if (pflex_sim_run(&c, &r, &err))
        fail_msg("%s", err.text);
    assert_true(fabs(r.baseline_w - (16 * 368 + 8 * 382 + 8 * 368 + 24 * 60)) < 1e-6);
    assert_true(fabs(r.power_w[PFLEX_SIM_EQUAL][10] - r.baseline_w) < 1e-6);
    size_t N = r.nperiods;
    for (size_t k = 80; k < 200; k++) {
        if (r.job_cap[PFLEX_SIM_ORACLE][3 * N + k] != 100)
            fail_msg("period %zu: the oracle holds the input-bound job at %g W", k,
                     r.job_cap[PFLEX_SIM_ORACLE][3 * N + k]);
        if (!(r.job_cap[PFLEX_SIM_ONLINE_COLD][3 * N + k] <= 120))
            fail_msg("period %zu: online-cold holds the input-bound job at %g W", k,
                     r.job_cap[PFLEX_SIM_ONLINE_COLD][3 * N + k]);
    }
    for (size_t k = 205; k < 240; k++)
        if (!(r.job_cap[PFLEX_SIM_ONLINE_COLD][3 * N + k] > 120))
            fail_msg("period %zu: risen, the job still at %g W", k, r.job_cap[PFLEX_SIM_ONLINE_COLD][3 * N + k]);
    assert_true(r.pol[PFLEX_SIM_ONLINE_COLD].lost_event_s < r.pol[PFLEX_SIM_EQUAL].lost_event_s);
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (r.pol[p].ran && r.pol[p].periods_above)
            fail_msg("%s: %zu periods above the limit", pflex_sim_policy_name(p), r.pol[p].periods_above);
    pflex_sim_result_fini(&r);
    /* a draw not under the curve's largest cap is refused */
    draws[3].draw_w = 400;
    assert_int_equal(pflex_sim_run(&c, &r, &err), -1);
    assert_non_null(strstr(err.text, "input-bound"));
    pflex_target_set_fini(&set);
}

/* The guard's step probes under a target (no learning between events):
 * made only under the limit, the site never over it, no floor broken,
 * and the cold learner loses no more than equal cuts over the event and
 * less than with the probes off (--explore 0). */
static void test_step_probes(void **state)
{
    (void)state;
    setup_kinds();
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    add_fraction(&set, 1001800, 1003600, 0.7);
    unsigned pol = (1u << PFLEX_SIM_EQUAL) | (1u << PFLEX_SIM_ONLINE_COLD) | (1u << PFLEX_SIM_ORACLE);
    struct pflex_sim_config c = site_config(step_jobs, &set, 3600, 2, pol);
    struct pflex_sim_result r;
    pflex_error_t err;
    if (pflex_sim_run(&c, &r, &err))
        fail_msg("%s", err.text);
    const struct pflex_sim_summary *o = &r.pol[PFLEX_SIM_ONLINE_COLD];
    double with = o->lost_event_s, eq = r.pol[PFLEX_SIM_EQUAL].lost_event_s,
           orc = r.pol[PFLEX_SIM_ORACLE].lost_event_s;
    size_t probes = o->probes;
    print_message("  step probes: %zu; lost over the event %.0f (equal %.0f, oracle %.0f)\n", probes, with, eq,
                  orc);
    assert_true(probes > 0);
    assert_int_equal(o->periods_above, 0);
    assert_int_equal(o->floor_breaches, 0);
    assert_true(with <= eq);
    pflex_sim_result_fini(&r);
    c.explore_step = 0;
    if (pflex_sim_run(&c, &r, &err))
        fail_msg("%s", err.text);
    print_message("  without: lost %.0f\n", r.pol[PFLEX_SIM_ONLINE_COLD].lost_event_s);
    assert_int_equal(r.pol[PFLEX_SIM_ONLINE_COLD].probes, 0);
    assert_true(with < r.pol[PFLEX_SIM_ONLINE_COLD].lost_event_s);
    pflex_sim_result_fini(&r);
    pflex_target_set_fini(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_learn_between_default_off),
        cmocka_unit_test(test_interp_never_extrapolates),
        cmocka_unit_test(test_smooth_curve),
        cmocka_unit_test(test_zero_overshoot_on_a_step),
        cmocka_unit_test(test_infeasible_limit),
        cmocka_unit_test(test_infeasible_on_caps),
        cmocka_unit_test(test_oracle_keeps_floors),
        cmocka_unit_test(test_one_curve_no_gap_share),
        cmocka_unit_test(test_offline_whole_steps),
        cmocka_unit_test(test_seeded_reproducible),
        cmocka_unit_test(test_online_is_the_controller),
        cmocka_unit_test(test_probe_memo_changes_nothing),
        cmocka_unit_test(test_explore_lead),
        cmocka_unit_test(test_count_as_many),
        cmocka_unit_test(test_day_rule),
        cmocka_unit_test(test_input_bound),
        cmocka_unit_test(test_step_probes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
