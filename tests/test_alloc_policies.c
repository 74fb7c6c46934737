/* test_alloc_policies.c — the water-filling policies (equal, proportional,
 * pfi-weighted) against an independent water-filling, the caps a plan
 * sets, and the scores on the measured curves (docs/contract.md §2).
 *
 * The reference water-filling is a bisection on the level k of
 * sum_j n_j P0_j min(k c_j, u_j) = watts to save, with each job's rate c_j
 * and limit u_j computed here from docs/contract.md's definitions (ratio PFI from the
 * curve's points, shed by bisection on the interpolated curve), not taken
 * from the library.  Seeded random problems, thousands of them. */
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
#include "pflex/alloc.h"
#include "pflex/gpukind.h"
#include "pflex/model.h"
#include "pflex/pfi.h"
#include "pflex/pficsv.h"
#include "support/alloc_ref.h"
#include "support/rand.h"

#define MAXJ 48
#define MAXP 10

struct inst {
    size_t n;
    struct pflex_alloc_job jobs[MAXJ];
    double xs[MAXJ][MAXP], ls[MAXJ][MAXP], cs[MAXJ][MAXP];
    double rate[MAXJ];
    struct pflex_alloc_capinfo ci[MAXJ];
    struct pflex_alloc_problem p;
};

static struct inst I;

/* A random job: a curve (or none), caps per point falling with x, a
 * settable range that may or may not cover them, maybe a PFI and a floor. */
static void rand_job(size_t j, int curves)
{
    struct pflex_alloc_job *jb = &I.jobs[j];
    struct pflex_alloc_capinfo *ci = &I.ci[j];
    memset(jb, 0, sizeof *jb);
    memset(ci, 0, sizeof *ci);
    double *x = I.xs[j], *l = I.ls[j], *c = I.cs[j];
    int np = rng_int(1, MAXP - 1);
    jb->name = "j";
    jb->gpus = rng_int(1, 64);
    jb->p0_w = rng_unif(150, 700);
    jb->t0 = rng_unif(1, 5000);
    jb->cap0_w = jb->p0_w * rng_unif(1.0, 1.1);
    jb->weight = rng_int(0, 3) ? 1.0 : rng_unif(0, 3);
    jb->floor = rng_int(0, 1) ? rng_unif(0.3, 1.0) : 0;
    jb->x_hi = rng_int(0, 3) ? 1.0 : rng_unif(0, 0.7);
    jb->pfi = rng_int(0, 2) ? NAN : rng_unif(-0.5, 3.0);
    x[0] = 0;
    l[0] = 0;
    c[0] = jb->cap0_w;
    double xp = 0, cp = c[0];
    for (int k = 1; k <= np; k++) {
        xp += rng_unif(0.005, 0.12);
        x[k] = xp;
        l[k] = rng_int(0, 5) ? x[k] * rng_unif(0.3, 1.3) : rng_unif(-0.02, 0.9);
        cp -= rng_unif(1, c[0] / 12);
        c[k] = cp;
    }
    if (curves && rng_int(0, 5)) {
        jb->npoints = (unsigned)np + 1;
        jb->x = x;
        jb->loss = l;
        ci->cap_w = rng_int(0, 4) ? c : NULL;
    }
    if (rng_int(0, 2)) {
        ci->cap_min_w = rng_unif(50, 300);
        ci->cap_max_w = ci->cap_min_w + rng_unif(0, 600);
    }
}

static void rand_inst(size_t n, int curves)
{
    I.n = n;
    for (size_t j = 0; j < n; j++) {
        rand_job(j, curves);
        I.rate[j] = rng_int(0, 6) ? rng_unif(0, 4) : 0;
    }
    I.p.njobs = n;
    I.p.jobs = I.jobs;
    I.p.objective = rng_int(0, 2) ? PFLEX_OBJECTIVE_THROUGHPUT : PFLEX_OBJECTIVE_PROGRESS;
    I.p.rate_by = NULL;
    double base = pflex_alloc_baseline_w(&I.p);
    I.p.budget_w = base * (1.0 - rng_unif(0, 0.7));
}

/* The ratio PFI a PFI-only policy uses (docs/contract.md §2). */
static double ref_pfi(const struct pflex_alloc_job *j)
{
    double pfi = j->pfi;
    if (isnan(pfi) && j->npoints) {
        double s = 0;
        int used = 0;
        for (size_t k = 1; k < j->npoints; k++)
            if (j->x[k] >= 0.01 && j->loss[k] >= 0.005) {
                s += j->x[k] / j->loss[k];
                used++;
            }
        pfi = used ? s / used : NAN;
    }
    return pfi > 0 && isfinite(pfi) ? pfi : 1.0;
}

/* shed(s) by bisection on the interpolated curve. */
static double ref_shed(const struct pflex_alloc_job *j, double floor)
{
    /* the curve is linear between measured points: the first point above
     * the threshold ends the segment where it is first crossed */
    double thr = 1 - floor, xm = j->x[j->npoints - 1];
    for (size_t i = 1; i < j->npoints; i++) {
        if (ref_loss(j, j->x[i]) > thr) {
            double lo = j->x[i - 1], hi = j->x[i];
            for (int it = 0; it < 100; it++) {
                double mid = 0.5 * (lo + hi);
                if (ref_loss(j, mid) > thr)
                    hi = mid;
                else
                    lo = mid;
            }
            return lo;
        }
    }
    return xm;
}

/* A job's limit under a policy (docs/contract.md §2 "Limits"). */
static double ref_limit(const struct pflex_alloc_job *j, enum pflex_policy pol)
{
    double u = j->x_hi;
    if (j->npoints && j->x[j->npoints - 1] < u)
        u = j->x[j->npoints - 1];
    int sees_curve = j->npoints && (pol == PFLEX_POLICY_EQUAL || pol == PFLEX_POLICY_PROPORTIONAL
                                    || pol == PFLEX_POLICY_OPTIMAL);
    if (sees_curve) {
        if (j->floor > 0)
            u = fmin(u, ref_shed(j, j->floor));
    } else {
        u = fmin(u, ref_pfi(j) * (1 - j->floor));
    }
    return u > 0 ? u : 0;
}

/* The water-filling by bisection on k: x_j = min(k c_j, u_j) saving need
 * watts.  Returns 0 when even every job at its limit saves too little. */
static int ref_fill(const double *c, const double *u, double need, double *x)
{
    double full = 0, hi = 1;
    for (size_t j = 0; j < I.n; j++)
        if (c[j] > 0)
            full += I.jobs[j].gpus * I.jobs[j].p0_w * u[j];
    if (need <= 0) {
        for (size_t j = 0; j < I.n; j++)
            x[j] = 0;
        return 1;
    }
    if (full < need) {
        for (size_t j = 0; j < I.n; j++)
            x[j] = c[j] > 0 ? u[j] : 0;
        return 0;
    }
    for (size_t j = 0; j < I.n; j++)
        if (c[j] > 0 && u[j] / c[j] > hi)
            hi = u[j] / c[j];
    double lo = 0;
    for (int it = 0; it < 300; it++) {
        double k = 0.5 * (lo + hi), s = 0;
        for (size_t j = 0; j < I.n; j++)
            if (c[j] > 0)
                s += I.jobs[j].gpus * I.jobs[j].p0_w * fmin(k * c[j], u[j]);
        if (s >= need)
            hi = k;
        else
            lo = k;
    }
    for (size_t j = 0; j < I.n; j++)
        x[j] = c[j] > 0 ? fmin(hi * c[j], u[j]) : 0;
    return 1;
}

static void check_against_fill(enum pflex_policy pol, int it, struct pflex_alloc_plan *pl)
{
    double c[MAXJ], u[MAXJ], x[MAXJ];
    for (size_t j = 0; j < I.n; j++) {
        const struct pflex_alloc_job *jb = &I.jobs[j];
        u[j] = ref_limit(jb, pol);
        if (pol == PFLEX_POLICY_EQUAL)
            c[j] = 1;
        else if (pol == PFLEX_POLICY_PROPORTIONAL)
            c[j] = I.rate[j];
        else
            c[j] = ref_pfi(jb) / (I.p.objective == PFLEX_OBJECTIVE_PROGRESS ? jb->gpus : jb->t0);
    }
    double base = pflex_alloc_baseline_w(&I.p);
    int feasible = ref_fill(c, u, base - I.p.budget_w, x);
    assert_int_equal(pflex_alloc_plan(&I.p, pol, pl, NULL), 0);
    assert_int_equal(pl->feasible, feasible);
    for (size_t j = 0; j < I.n; j++) {
        if (fabs(pl->limit[j] - u[j]) > 1e-9)
            fail_msg("it %d %s job %zu: limit %.12g, reference %.12g", it,
                     pflex_policy_name(pol), j, pl->limit[j], u[j]);
        if (fabs(pl->x[j] - x[j]) > 1e-8)
            fail_msg("it %d %s job %zu: x %.12g, reference %.12g", it, pflex_policy_name(pol),
                     j, pl->x[j], x[j]);
    }
    if (feasible)
        assert_true(pl->power_w <= I.p.budget_w);
}

static void test_water_filling_matches_bisection(void **state)
{
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    rng_seed(11);
    long checked = 0;
    for (int it = 0; it < 4000; it++) {
        rand_inst((size_t)rng_int(1, MAXJ), it % 4 != 0);
        check_against_fill(PFLEX_POLICY_EQUAL, it, &pl);
        check_against_fill(PFLEX_POLICY_PFI_WEIGHTED, it, &pl);
        I.p.rate_by = I.rate;
        check_against_fill(PFLEX_POLICY_PROPORTIONAL, it, &pl);
        checked += 3;
    }
    print_message("water-filling plans checked against bisection: %ld\n", checked);
    pflex_alloc_plan_fini(&pl);
}

/* proportional with c = 1 for every job is equal; without rate_by too. */
static void test_equal_is_proportional_by_one(void **state)
{
    struct pflex_alloc_plan a, b;
    pflex_alloc_plan_init(&a);
    pflex_alloc_plan_init(&b);
    rng_seed(12);
    double ones[MAXJ];
    for (int j = 0; j < MAXJ; j++)
        ones[j] = 1;
    for (int it = 0; it < 1000; it++) {
        rand_inst((size_t)rng_int(1, MAXJ), 1);
        assert_int_equal(pflex_alloc_plan(&I.p, PFLEX_POLICY_EQUAL, &a, NULL), 0);
        I.p.rate_by = it % 2 ? ones : NULL;
        assert_int_equal(pflex_alloc_plan(&I.p, PFLEX_POLICY_PROPORTIONAL, &b, NULL), 0);
        for (size_t j = 0; j < I.n; j++)
            assert_true(a.x[j] == b.x[j]);
    }
    pflex_alloc_plan_fini(&a);
    pflex_alloc_plan_fini(&b);
}

/* The cap to set: kept at x = 0, else interpolated on the job's own (cap,
 * power) points (or the target), clamped to the settable range; and every
 * cap of every plan inside that range. */
static void test_caps(void **state)
{
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    rng_seed(13);
    long clamped = 0, total = 0;
    for (int it = 0; it < 2000; it++) {
        rand_inst((size_t)rng_int(1, MAXJ), 1);
        I.p.rate_by = I.rate;
        for (int pol = 0; pol < PFLEX_POLICY_COUNT; pol++) {
            int needs_curves = pol == PFLEX_POLICY_OPTIMAL;
            int all = 1;
            for (size_t j = 0; j < I.n; j++)
                all = all && I.jobs[j].npoints;
            if (needs_curves && !all)
                continue;
            assert_int_equal(pflex_alloc_plan(&I.p, (enum pflex_policy)pol, &pl, NULL), 0);
            for (size_t j = 0; j < I.n; j++) {
                const struct pflex_alloc_job *jb = &I.jobs[j];
                const struct pflex_alloc_capinfo *ci = &I.ci[j];
                double x = pl.x[j], want;
                if (!(x > 0))
                    want = jb->cap0_w;
                else if (ci->cap_w && jb->npoints >= 2)
                    want = ref_interp(jb, ci->cap_w, x);
                else
                    want = jb->p0_w * (1 - x);
                double got = want;
                if (ci->cap_min_w > 0 && got < ci->cap_min_w)
                    got = ci->cap_min_w;
                if (ci->cap_max_w > 0 && got > ci->cap_max_w)
                    got = ci->cap_max_w;
                struct pflex_alloc_cap c;
                pflex_alloc_cap(jb, ci, x, &c);
                if (!(fabs(c.wanted_w - want) <= 1e-9 * fabs(want)))
                    fail_msg("it %d pol %d job %zu x %.17g: wanted %.12g, reference %.12g "
                             "(np %u, caps %s)", it, pol, j, x, c.wanted_w, want, jb->npoints,
                             ci->cap_w ? "yes" : "no");
                assert_true(fabs(c.cap_w - got) <= 1e-9 * got);
                assert_int_equal(c.clamped, got != want);
                assert_int_equal(c.kept, !(x > 0));
                if (ci->cap_min_w > 0) {
                    assert_true(c.cap_w >= ci->cap_min_w);
                    assert_true(c.cap_w <= ci->cap_max_w);
                }
                assert_true(pflex_alloc_cap_w(jb, ci, x) == c.cap_w);
                clamped += c.clamped;
                total++;
            }
        }
    }
    print_message("caps checked: %ld, clamped: %ld\n", total, clamped);
    assert_true(clamped > 0);
    pflex_alloc_plan_fini(&pl);
}

/* measured_fraction, floor_violated and the plan's measured totals against
 * direct interpolation of the curves. */
static void test_measured_scores(void **state)
{
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    rng_seed(14);
    long violations = 0;
    for (int it = 0; it < 2000; it++) {
        rand_inst((size_t)rng_int(1, MAXJ), 1);
        I.p.rate_by = I.rate;
        for (int pol = 0; pol < PFLEX_POLICY_COUNT; pol++) {
            if (pol == PFLEX_POLICY_OPTIMAL)
                continue;       /* may lack curves here; test_alloc covers it */
            assert_int_equal(pflex_alloc_plan(&I.p, (enum pflex_policy)pol, &pl, NULL), 0);
            double tput = 0, obj = 0;
            int viol = 0, all = 1;
            for (size_t j = 0; j < I.n; j++) {
                const struct pflex_alloc_job *jb = &I.jobs[j];
                double a = jb->weight * (I.p.objective == PFLEX_OBJECTIVE_PROGRESS
                                         ? (double)jb->gpus : jb->t0);
                double mf = pflex_alloc_measured_fraction(jb, pl.x[j]);
                if (!jb->npoints) {
                    all = 0;
                    assert_true(isnan(mf));
                    assert_false(pflex_alloc_floor_violated(jb, pl.x[j]));
                    double est = pl.throughput_j[j] / jb->t0;
                    tput += jb->t0 * est;
                    obj += a * est;
                    continue;
                }
                double ref = 1 - ref_loss(jb, pl.x[j]);
                assert_true(fabs(mf - ref) <= 1e-12);
                int v = jb->floor > 0 && ref < jb->floor * (1 - 1e-9);
                assert_int_equal(pflex_alloc_floor_violated(jb, pl.x[j]), v);
                viol += v;
                tput += jb->t0 * ref;
                obj += a * ref;
            }
            assert_int_equal(pl.floor_violations, viol);
            assert_int_equal(pl.measured, all);
            assert_true(fabs(pl.measured_throughput - tput) <= 1e-9 * fmax(1, tput));
            assert_true(fabs(pl.measured_objective - obj) <= 1e-9 * fmax(1, fabs(obj)));
            violations += viol;
        }
    }
    print_message("floor violations found on the measured curves: %ld\n", violations);
    assert_true(violations > 0);
    pflex_alloc_plan_fini(&pl);
}

/* pfi-weighted on a hand example: x ~ PFI / T0 (docs/contract.md §2, Eq. 2). */
static void test_pfi_weighted_hand(void **state)
{
    struct pflex_alloc_job jobs[2] = {
        {.name = "a", .gpus = 1, .p0_w = 100, .t0 = 10, .weight = 1, .x_hi = 1, .pfi = 2},
        {.name = "b", .gpus = 1, .p0_w = 100, .t0 = 20, .weight = 1, .x_hi = 1, .pfi = 1},
    };
    /* rates .2 and .05: a cuts 4x b's; 50 W to save: 100 k (.2 + .05) = 50 */
    struct pflex_alloc_problem p = {.njobs = 2, .jobs = jobs, .budget_w = 150};
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_PFI_WEIGHTED, &pl, NULL), 0);
    assert_float_equal(pl.x[0], 0.4, 1e-9);
    assert_float_equal(pl.x[1], 0.1, 1e-9);
    /* a's model floor at .9: x <= PFI (1 - .9) = .2; b takes the rest */
    jobs[0].floor = 0.9;
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_PFI_WEIGHTED, &pl, NULL), 0);
    assert_float_equal(pl.x[0], 0.2, 1e-9);
    assert_float_equal(pl.x[1], 0.3, 1e-9);
    /* a PFI <= 0 counts as 1 */
    jobs[0].floor = 0;
    jobs[0].pfi = -3;
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_PFI_WEIGHTED, &pl, NULL), 0);
    assert_float_equal(pl.x[0] / pl.x[1], 2.0, 1e-9);
    pflex_alloc_plan_fini(&pl);
    enum pflex_policy pol;
    assert_int_equal(pflex_policy_parse("pfi-weighted", &pol), 0);
    assert_int_equal(pol, PFLEX_POLICY_PFI_WEIGHTED);
    assert_int_equal(pflex_policy_parse("proportional", &pol), 0);
    assert_int_equal(pol, PFLEX_POLICY_PROPORTIONAL);
    assert_string_equal(pflex_policy_name(PFLEX_POLICY_PFI_WEIGHTED), "pfi-weighted");
}

/* A GPU's name, short or long, finds the same kind in the table of ranges
 * and in the simulator (whose kinds take their ranges from the table:
 * tests/test_sim.c). */
static void test_gpu_range_names(void **state)
{
    static const char *const names[] = {"H100", "h200", "NVIDIA H200-SXM-141GB", "A100-40",
                                        "A100-80", "A40", "A100", "V100", "B200", "L40S-48GB"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        assert_ptr_equal(pflex_gpu_range_find(names[i]),
                         pflex_gpu_range_find(pflex_gpu_kind_find(names[i])->name));
    assert_null(pflex_gpu_range_find("V200"));
    assert_null(pflex_gpu_range_find(NULL));
}

/* The PFI CSV as `pflex pfi --csv` writes it, and an old one. */
static void test_pficsv_interface(void **state)
{
    const char *s =
        "job,gpus,power_w,throughput,pfi,metric,grid,range,floor,gpu,cap_w,points_used,"
        "points_dropped,shed_flex1,shed_flex2,shed_flex3,dram_copy\n"
        "a,8,650,1000,1.52,ratio,200/500/600/700,,0.9,H200,700,3,0,0.1,0.2,0.3,12.5\n"
        "b,4,300,10,,,200/300/400,,,,400,0,3,,,,\n";
    pflex_pficsv_t *p;
    pflex_error_t err;
    assert_int_equal(pflex_pficsv_read_mem_by(s, strlen(s), "p.csv", "dram_copy", &p, &err), 0);
    const struct pflex_pfi_row *a = pflex_pficsv_find(p, "a"), *b = pflex_pficsv_find(p, "b");
    assert_string_equal(a->metric, "ratio");
    assert_string_equal(a->grid, "200/500/600/700");
    assert_string_equal(a->gpu, "H200");
    assert_float_equal(a->cap_w, 700, 0);
    assert_float_equal(a->floor, 0.9, 0);
    assert_float_equal(a->pfi, 1.52, 0);
    assert_float_equal(a->by, 12.5, 0);
    assert_true(isnan(b->pfi));
    assert_true(isnan(b->by));
    assert_null(b->gpu);
    assert_string_equal(b->metric, "ratio");
    assert_true(p->has_by);
    assert_false(p->has_weight);
    pflex_pficsv_destroy(p);
    const char *old = "job,gpus,power_w,throughput,pfi\nx,1,300,5,1.3\n";
    assert_int_equal(pflex_pficsv_read_mem(old, strlen(old), "o.csv", &p, &err), 0);
    assert_string_equal(p->rows[0].metric, "ratio");
    assert_null(p->rows[0].grid);
    assert_true(isnan(p->rows[0].cap_w));
    pflex_pficsv_destroy(p);
}

/* One PFI CSV row of the given metric, pfi and range ("" for none):
 * whether the reader takes it (and then the value read). */
static int pfi_row_ok(const char *metric, const char *pfi, const char *range, double *got)
{
    char s[256];
    snprintf(s, sizeof s, "job,gpus,power_w,throughput,pfi,metric,range\nj,1,300,10,%s,%s,%s\n",
             pfi, metric, range);
    pflex_pficsv_t *p;
    pflex_error_t err;
    if (pflex_pficsv_read_mem(s, strlen(s), "v.csv", &p, &err) < 0) {
        assert_non_null(strstr(err.text, "v.csv:2: column 'pfi'"));
        return 0;
    }
    if (got)
        *got = p->rows[0].pfi;
    pflex_pficsv_destroy(p);
    return 1;
}

/* Every value a metric can produce is read, every other refused at its
 * line: the bounds from the ratio rule's thresholds (x >= MIN_REDUCTION,
 * L >= MIN_LOSS, both at most 1), and every metric of thousands of random
 * sweeps, written as pflex pfi --csv writes it, read back. */
static void test_pficsv_values(void **state)
{
    char v[64];
    double lo = PFLEX_PFI_MIN_REDUCTION / 1.0, hi = 1.0 / PFLEX_PFI_MIN_LOSS;
    const struct { const char *metric, *range; double pfi; int ok; } edges[] = {
        {"ratio", "", lo, 1}, {"ratio", "", lo * (1 - 1e-12), 1}, {"ratio", "", lo * (1 - 1e-6), 0},
        {"ratio", "", hi, 1}, {"ratio", "", hi * (1 + 1e-12), 1}, {"ratio", "", hi * (1 + 1e-6), 0},
        {"ratio", "", 1.5, 1},
        {"area", "", 1, 1}, {"area", "", -1, 1}, {"area", "", 1 + 1e-6, 0}, {"area", "", -1 - 1e-6, 0},
        /* loss-area over R = 0.2: at least 1 - 2/R = -9 */
        {"loss-area", "0.2", -9, 1}, {"loss-area", "0.2", -9 * (1 + 1e-12), 1},
        {"loss-area", "0.2", -9 * (1 + 1e-6), 0}, {"loss-area", "0.2", 1.7, 1},
        {"loss-area", "", -40, 1},
        {"elasticity", "", -3.5, 1}, {"elasticity", "", 12, 1},
    };
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        snprintf(v, sizeof v, "%.17g", edges[i].pfi);
        if (pfi_row_ok(edges[i].metric, v, edges[i].range, NULL) != edges[i].ok)
            fail_msg("%s PFI %s (range '%s'): %s, want %s", edges[i].metric, v, edges[i].range,
                     edges[i].ok ? "refused" : "read", edges[i].ok ? "read" : "refused");
    }
    static const char *const never[] = {"0", "-1", "-0", "nan", "inf", "-inf", "1e400", "x"};
    for (size_t i = 0; i < sizeof never / sizeof *never; i++)
        assert_int_equal(pfi_row_ok("ratio", never[i], "", NULL), 0);
    assert_int_equal(pfi_row_ok("elasticity", "nan", "", NULL), 0);
    assert_int_equal(pfi_row_ok("loss-area", "inf", "", NULL), 0);

    rng_seed(77);
    static const char *const mname[] = {"ratio", "area", "elasticity", "loss-area"};
    size_t read[PFLEX_PFI_METRICS] = {0};
    for (int it = 0; it < 3000; it++) {
        struct pflex_sweep_point pts[8];
        size_t n = (size_t)rng_int(2, 8);
        double p0 = rng_unif(100, 700), t0 = rng_unif(1, 1000);
        int extreme = rng_int(0, 3) == 0;
        for (size_t k = 0; k < n; k++) {
            double cap = 100.0 * (double)(k + 1);
            double u = k + 1 == n ? 1 : extreme ? rng_unif(0, 1) : rng_unif(0.3, 1.02);
            double f = k + 1 == n ? 1 : extreme ? (rng_int(0, 1) ? rng_unif(0, 0.01) : rng_unif(0.99, 1))
                                               : rng_unif(0.2, 1.05);
            pts[k] = (struct pflex_sweep_point){.cap_w = cap, .power_w = p0 * u,
                                                .throughput = t0 * f, .rows = 1};
        }
        for (int m = 0; m < PFLEX_PFI_METRICS; m++) {
            struct pflex_pfi_opts o = {.metric = (enum pflex_pfi_metric)m,
                                       .range = rng_int(0, 1) ? rng_unif(0.01, 1) : 0};
            struct pflex_pfi_result r;
            pflex_error_t err;
            assert_int_equal(pflex_pfi_eval(pts, n, &o, &r, &err), 0);
            if (r.valid) {
                char pv[64], rv[64] = "";
                snprintf(pv, sizeof pv, "%.10g", r.pfi);
                if (m == PFLEX_PFI_METRIC_LOSS_AREA)
                    snprintf(rv, sizeof rv, "%.10g", r.range_used);
                double got;
                if (!pfi_row_ok(mname[m], pv, rv, &got))
                    fail_msg("sweep %d: %s PFI %s (range %s) refused", it, mname[m], pv, rv);
                assert_float_equal(got, r.pfi, 1e-9 * fabs(r.pfi));
                read[m]++;
            }
            pflex_pfi_result_fini(&r);
        }
    }
    for (int m = 0; m < PFLEX_PFI_METRICS; m++)
        assert_true(read[m] > 1000);
}

/* Jobs from a PFI file alone: their GPU's range, their cap kept uncut. */
static void test_input_from_pfi_file(void **state)
{
    char path[] = "/tmp/pflex-test-pfiXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *s =
        "job,gpus,power_w,throughput,pfi,metric,grid,range,floor,gpu,cap_w\n"
        "a,8,250,100,2.5,ratio,100/250/400,,,A100,400\n"
        "b,8,380,100,1.1,ratio,100/250/400,,0.9,A100-SXM4-40GB,400\n"
        "c,8,380,100,1.1,ratio,100/250/400,0.2,,,390\n";
    assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
    close(fd);
    struct pflex_alloc_source src = {.pfi_path = path, .floor = NAN};
    pflex_alloc_input_t *in;
    pflex_error_t err;
    assert_int_equal(pflex_alloc_input_read(&src, &in, &err), 0);
    unlink(path);
    assert_int_equal(in->njobs, 3);
    assert_false(in->has_curves);
    const struct pflex_alloc_job *a = &in->jobs[0], *c = &in->jobs[2];
    assert_float_equal(a->x_hi, 1 - 100.0 / 250, 1e-12);
    assert_float_equal(in->caps[0].cap_min_w, 100, 0);
    assert_float_equal(in->caps[0].cap_max_w, 400, 0);
    assert_float_equal(c->x_hi, 0.2, 0);
    assert_true(in->caps[2].cap_min_w == 0);
    struct pflex_alloc_problem p = {.njobs = in->njobs, .jobs = in->jobs};
    double base = pflex_alloc_baseline_w(&p);
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    for (int k = 0; k < 2; k++) {
        /* a hopeless 95 % cut: every job at its limit, every cap settable */
        p.budget_w = (k ? 0.97 : 0.05) * base;
        assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_PFI_WEIGHTED, &pl, NULL), 0);
        for (size_t j = 0; j < in->njobs; j++) {
            const struct pflex_alloc_capinfo *ci = &in->caps[j];
            double cap = pflex_alloc_cap_w(&in->jobs[j], ci, pl.x[j]);
            if (ci->cap_min_w > 0)
                assert_true(cap >= ci->cap_min_w && cap <= ci->cap_max_w);
            if (!(pl.x[j] > 0))
                assert_float_equal(cap, in->jobs[j].cap0_w, 0);
        }
        if (k == 0) {
            assert_false(pl.feasible);
            assert_float_equal(pflex_alloc_cap_w(a, &in->caps[0], pl.x[0]), 100, 1e-9);
        }
    }
    pflex_alloc_plan_fini(&pl);
    pflex_alloc_input_destroy(in);
}

static void write_file(char *path, const char *s)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
    close(fd);
}

/* Power drawn at a cap, by linear interpolation over the job's own rows
 * (cap ascending, power rising with it), clipped at the ends. */
static double power_at(const double *cap, const double *pw, int n, double c)
{
    if (c <= cap[0])
        return pw[0];
    for (int k = 1; k < n; k++)
        if (c <= cap[k])
            return pw[k - 1] + (pw[k] - pw[k - 1]) * (c - cap[k - 1]) / (cap[k] - cap[k - 1]);
    return pw[n - 1];
}

/* Sweeps measured below their GPU kind's minimum settable cap: every plan
 * of every policy sets only caps the GPU accepts (none clamped), and the
 * power those caps draw, interpolated over the sweep's own rows, is within
 * the budget wherever the plan says it is feasible. */
static void test_caps_within_budget(void **state)
{
    static const struct { const char *gpu; double lo, hi; } kinds[] = {
        {"H200", 200, 700}, {"A100", 100, 400}, {"A40", 100, 300}, {"mystery", 0, 0},
    };
    static const enum pflex_policy pols[] = {PFLEX_POLICY_EQUAL, PFLEX_POLICY_PFI,
        PFLEX_POLICY_OPTIMAL, PFLEX_POLICY_PFI_WEIGHTED, PFLEX_POLICY_PROPORTIONAL};
    enum { NJ = 10, NP = 8 };
    static double cap[NJ][NP], pw[NJ][NP];
    static int np[NJ], gpus[NJ];
    static char buf[NJ * NP * 96 + 128];
    rng_seed(4242);
    size_t plans = 0, below = 0, cut_to_min = 0;
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    for (int it = 0; it < 400; it++) {
        int n = rng_int(1, NJ);
        size_t len = (size_t)snprintf(buf, sizeof buf, "job,gpu,gpus,cap_w,power_w,throughput,floor\n");
        for (int j = 0; j < n; j++) {
            int kd = rng_int(0, 3);
            double hi = kinds[kd].hi > 0 ? kinds[kd].hi : 500, lo = kinds[kd].lo > 0 ? kinds[kd].lo : 150;
            np[j] = rng_int(2, NP);
            gpus[j] = rng_int(1, 16);
            double r = rng_unif(0.85, 0.97), t0 = rng_unif(10, 1000), floor = rng_int(0, 2) ? 0 : rng_unif(0.3, 0.9);
            /* caps from the top of the range down, the lowest ones often under its minimum */
            double c = hi - (rng_int(0, 2) ? 0 : rng_unif(0, 0.2 * (hi - lo)));
            double step = (c - rng_unif(0.4, 1.1) * lo) / (np[j] - 1);
            if (step < 30)
                step = 30;
            for (int k = np[j] - 1; k >= 0; k--, c -= step) {
                cap[j][k] = c;
                pw[j][k] = c * (r + rng_unif(-0.01, 0.01));
            }
            below += cap[j][0] < kinds[kd].lo;
            double loss = 0;
            for (int k = np[j] - 1; k >= 0; k--) {
                double tput = t0 * (1 - loss);
                len += (size_t)snprintf(buf + len, sizeof buf - len, "j%d,%s,%d,%.17g,%.17g,%.17g,%.3f\n",
                                        j, kinds[kd].gpu, gpus[j], cap[j][k], pw[j][k], tput, floor);
                loss += rng_unif(0, 0.2) * (1 - loss);
            }
        }
        char path[] = "/tmp/pflex-test-lowXXXXXX";
        write_file(path, buf);
        struct pflex_alloc_source src = {.sweep_path = path, .floor = NAN};
        pflex_alloc_input_t *in;
        pflex_error_t err;
        if (pflex_alloc_input_read(&src, &in, &err) < 0)
            fail_msg("sweep %d: %s", it, err.text);
        unlink(path);
        assert_int_equal(in->njobs, (size_t)n);
        struct pflex_alloc_problem p = {.njobs = in->njobs, .jobs = in->jobs};
        double base = pflex_alloc_baseline_w(&p);
        for (int b = 0; b < 4; b++) {
            p.budget_w = (1 - rng_unif(0, 0.8)) * base;
            p.objective = rng_int(0, 1) ? PFLEX_OBJECTIVE_PROGRESS : PFLEX_OBJECTIVE_THROUGHPUT;
            for (size_t q = 0; q < sizeof pols / sizeof *pols; q++) {
                if (pflex_alloc_plan(&p, pols[q], &pl, &err) < 0)
                    fail_msg("sweep %d: %s", it, err.text);
                assert_int_equal(pflex_alloc_plan_clamped(in, &pl), 0);
                double drawn = 0;
                for (int j = 0; j < n; j++) {
                    struct pflex_alloc_cap cp;
                    pflex_alloc_cap(&in->jobs[j], &in->caps[j], pl.x[j], &cp);
                    if (cp.clamped)
                        fail_msg("sweep %d, %s, job %d: cap %.3f W clamped from %.3f W (range "
                                 "%g-%g W)", it, pflex_policy_name(pols[q]), j, cp.cap_w,
                                 cp.wanted_w, in->caps[j].cap_min_w, in->caps[j].cap_max_w);
                    cut_to_min += in->caps[j].cap_min_w > 0
                                  && cp.cap_w < in->caps[j].cap_min_w * (1 + 1e-9);
                    drawn += gpus[j] * power_at(cap[j], pw[j], np[j], cp.cap_w);
                }
                if (pl.feasible && drawn > p.budget_w * (1 + 1e-9))
                    fail_msg("sweep %d, %s: the caps draw %.6f W, over the budget %.6f W "
                             "(the plan counts %.6f W)", it, pflex_policy_name(pols[q]), drawn,
                             p.budget_w, pl.power_w);
                plans += pl.feasible;
            }
        }
        pflex_alloc_input_destroy(in);
    }
    pflex_alloc_plan_fini(&pl);
    print_message("%zu feasible plans, %zu sweeps measured under their minimum, %zu caps at it\n",
                  plans, below, cut_to_min);
    assert_true(plans > 1000 && below > 500 && cut_to_min > 500);
}

/* pflex_alloc_cap_x_hi by hand: caps over x falling through the minimum,
 * a sweep wholly under it, no caps (the target), no known range. */
static void test_cap_x_hi(void **state)
{
    const double x[] = {0, 0.2, 0.5}, loss[] = {0, 0.1, 0.4}, caps[] = {600, 400, 100};
    struct pflex_alloc_job j = {.gpus = 1, .npoints = 3, .p0_w = 500, .t0 = 1, .cap0_w = 700,
                                .x_hi = 0.5, .x = x, .loss = loss};
    struct pflex_alloc_capinfo ci = {.cap_w = caps, .cap_min_w = 200, .cap_max_w = 700};
    /* 400 W at 0.2, 100 W at 0.5: 200 W two thirds of the way */
    double xh = pflex_alloc_cap_x_hi(&j, &ci);
    assert_float_equal(xh, 0.2 + 0.3 * 2.0 / 3, 1e-12);
    assert_true(pflex_alloc_cap_w(&j, &ci, xh) >= 200);
    struct pflex_alloc_cap c;
    pflex_alloc_cap(&j, &ci, xh, &c);
    assert_false(c.clamped);
    pflex_alloc_cap(&j, &ci, xh + 1e-6, &c);
    assert_true(c.clamped);
    ci.cap_min_w = 50;                              /* never reached */
    assert_true(pflex_alloc_cap_x_hi(&j, &ci) == 0.5);
    ci.cap_min_w = 0;                               /* no known range */
    assert_true(pflex_alloc_cap_x_hi(&j, &ci) == 0.5);
    const double low[] = {150, 120, 100};           /* wholly under 200 W */
    ci = (struct pflex_alloc_capinfo){.cap_w = low, .cap_min_w = 200, .cap_max_w = 700};
    assert_true(pflex_alloc_cap_x_hi(&j, &ci) == 0);
    ci.cap_w = NULL;                                /* the target: 500 (1 - x) >= 200 */
    j.x_hi = 0.9;
    assert_float_equal(pflex_alloc_cap_x_hi(&j, &ci), 0.6, 1e-12);
    j.x_hi = 0.3;
    assert_true(pflex_alloc_cap_x_hi(&j, &ci) == 0.3);
}

/* --by columns: a sweep's telemetry at the baseline cap, dram_copy, gpus,
 * weight; a jobs file's own column; an unknown one refused. */
static void test_by_columns(void **state)
{
    char sp[] = "/tmp/pflex-test-swXXXXXX", jp[] = "/tmp/pflex-test-jbXXXXXX";
    write_file(sp, "job,gpus,weight,cap_w,power_w,throughput,dram_active,mem_copy_util\n"
                   "a,8,2,400,390,100,0.60,40\n"
                   "a,8,2,300,295,90,0.50,30\n"
                   "b,4,1,400,380,50,0.20,10\n"
                   "b,4,1,300,290,40,0.10,5\n");
    write_file(jp, "job,curve,gpus,moe_ft\nx,a,8,2\ny,b,16,1\nz,a,4,\n");
    static const struct { const char *by; int jobs; double a, b; } ok[] = {
        {"dram_copy", 0, 0.60 * 40 / 100, 0.20 * 10 / 100},
        {"dram_active", 0, 0.60, 0.20},
        {"mem_copy_util", 0, 40, 10},
        {"gpus", 0, 8, 4},
        {"weight", 0, 2, 1},
        {"dram_copy", 1, 0.60 * 40 / 100, 0.20 * 10 / 100},
    };
    pflex_alloc_input_t *in;
    pflex_error_t err;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        struct pflex_alloc_source src = {.sweep_path = sp, .floor = NAN, .by = ok[i].by,
                                         .jobs_path = ok[i].jobs ? jp : NULL};
        if (pflex_alloc_input_read(&src, &in, &err) < 0)
            fail_msg("--by %s: %s", ok[i].by, err.text);
        assert_non_null(in->by);
        assert_true(in->has_dram_copy);
        assert_true(in->has_weight);
        /* with the jobs file, x runs a's curve and y b's */
        assert_float_equal(in->by[0], ok[i].a, 1e-12);
        assert_float_equal(in->by[1], ok[i].b, 1e-12);
        pflex_alloc_input_destroy(in);
    }
    /* a jobs file's own column; z has none: refused, named */
    struct pflex_alloc_source src = {.sweep_path = sp, .floor = NAN, .by = "moe_ft",
                                     .jobs_path = jp};
    assert_int_equal(pflex_alloc_input_read(&src, &in, &err), -1);
    assert_non_null(strstr(err.text, "job 'z' has no value"));
    char jp2[] = "/tmp/pflex-test-jbXXXXXX";
    write_file(jp2, "job,curve,gpus,moe_ft\nx,a,8,2\ny,b,16,1\n");
    src.jobs_path = jp2;
    assert_int_equal(pflex_alloc_input_read(&src, &in, &err), 0);
    assert_float_equal(in->by[0], 2, 0);
    assert_float_equal(in->by[1], 1, 0);
    /* proportional to it: x's cut in W per unit of n P0 twice y's */
    struct pflex_alloc_problem p = {.njobs = in->njobs, .jobs = in->jobs, .rate_by = in->by};
    p.budget_w = 0.95 * pflex_alloc_baseline_w(&p);
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_PROPORTIONAL, &pl, &err), 0);
    assert_true(pl.x[1] > 0);
    assert_float_equal(pl.x[0] / pl.x[1], 2, 1e-9);
    pflex_alloc_plan_fini(&pl);
    pflex_alloc_input_destroy(in);
    src.by = "flops";
    src.jobs_path = NULL;
    assert_int_equal(pflex_alloc_input_read(&src, &in, &err), -1);
    assert_non_null(strstr(err.text, "no column 'flops'"));
    unlink(sp);
    unlink(jp);
    unlink(jp2);
}

/* The Emerald AI field demonstration's measured curves (../shared/data):
 * its six jobs at a 30 % cut, every policy. */
static void test_emerald(void **state)
{
    const char *dir = getenv("SHARED_DATA");
    char sweep[4096];
    snprintf(sweep, sizeof sweep, "%s/emerald-demo/data/dvfs_sweep.csv", dir ? dir : "../shared/data");
    if (access(sweep, R_OK) != 0 || access("examples/emerald-event/jobs.csv", R_OK) != 0) {
        print_message("no Emerald data at %s: skipped\n", sweep);
        skip();
    }
    for (int withjobs = 0; withjobs < 2; withjobs++) {
        struct pflex_alloc_source src = {
            .sweep_path = sweep, .floor = NAN,
            .columns = "job=Workload,cap_w=GPU power cap,power_w=power per GPU",
            .jobs_path = withjobs ? "examples/emerald-event/jobs.csv" : NULL,
        };
        pflex_alloc_input_t *in;
        pflex_error_t err;
        if (pflex_alloc_input_read(&src, &in, &err) < 0)
            fail_msg("%s", err.text);
        struct pflex_alloc_problem p = {.njobs = in->njobs, .jobs = in->jobs,
                                        .objective = withjobs ? PFLEX_OBJECTIVE_PROGRESS
                                                              : PFLEX_OBJECTIVE_THROUGHPUT};
        p.budget_w = 0.7 * pflex_alloc_baseline_w(&p);
        struct pflex_alloc_comparison cmp;
        assert_int_equal(pflex_alloc_compare(&p, &cmp, &err), 0);
        const double to = cmp.score[PFLEX_POLICY_OPTIMAL].objective;
        struct pflex_alloc_plan pl;
        pflex_alloc_plan_init(&pl);
        for (int pol = 0; pol < PFLEX_POLICY_PROPORTIONAL; pol++) {
            assert_true(cmp.feasible[pol]);
            /* optimal within its gap bound of anything the others reach */
            assert_true(to + cmp.gap_bound >= cmp.score[pol].objective - 1e-9 * to);
            assert_int_equal(pflex_alloc_plan(&p, (enum pflex_policy)pol, &pl, &err), 0);
            for (size_t j = 0; j < in->njobs; j++) {
                const struct pflex_alloc_job *jb = &in->jobs[j];
                double mf = pflex_alloc_measured_fraction(jb, pl.x[j]);
                assert_true(fabs(mf - (1 - ref_loss(jb, pl.x[j]))) <= 1e-12);
                struct pflex_alloc_cap c;
                pflex_alloc_cap(jb, &in->caps[j], pl.x[j], &c);
                /* no gpu column: the caps the sweep measured, 100-400 W */
                assert_true(c.cap_w >= 100 - 1e-9 && c.cap_w <= 400 + 1e-9);
                assert_false(c.clamped);
            }
            print_message("emerald %s, 30%%: %-12s objective %.6g, floor violations %d, gap "
                          "recovered %.3f\n", withjobs ? "event (progress)" : "sweep",
                          pflex_policy_name((enum pflex_policy)pol), cmp.score[pol].objective,
                          pl.floor_violations, cmp.gap_recovered[pol]);
            if (pol == PFLEX_POLICY_OPTIMAL)
                assert_int_equal(pl.floor_violations, 0);
        }
        pflex_alloc_plan_fini(&pl);
        pflex_alloc_input_destroy(in);
    }
}

/* The caps of a plan clamped to their GPU's range, counted as
 * pflex_alloc_cap clamps them: a kept cap above the range, a target under
 * it; caps within it, and a job with no known range, not. */
static void test_plan_clamped(void **state)
{
    struct pflex_alloc_job jobs[4] = {
        {.p0_w = 700, .cap0_w = 800}, {.p0_w = 600, .cap0_w = 600}, {.p0_w = 700},
        {.p0_w = 700},
    };
    struct pflex_alloc_capinfo caps[4] = {{NULL, 200, 700}, {NULL, 200, 700}, {NULL, 200, 700},
                                          {NULL, 0, 0}};
    double x[4] = {0, 0, 0.9, 0.9};
    pflex_alloc_input_t in = {.njobs = 4, .jobs = jobs, .caps = caps};
    struct pflex_alloc_plan pl = {.njobs = 4, .x = x};
    assert_int_equal(pflex_alloc_plan_clamped(&in, &pl), 2);
    x[2] = 0.5;
    assert_int_equal(pflex_alloc_plan_clamped(&in, &pl), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pfi_weighted_hand),
        cmocka_unit_test(test_plan_clamped),
        cmocka_unit_test(test_water_filling_matches_bisection),
        cmocka_unit_test(test_equal_is_proportional_by_one),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_measured_scores),
        cmocka_unit_test(test_gpu_range_names),
        cmocka_unit_test(test_pficsv_interface),
        cmocka_unit_test(test_pficsv_values),
        cmocka_unit_test(test_input_from_pfi_file),
        cmocka_unit_test(test_by_columns),
        cmocka_unit_test(test_cap_x_hi),
        cmocka_unit_test(test_caps_within_budget),
        cmocka_unit_test(test_emerald),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
