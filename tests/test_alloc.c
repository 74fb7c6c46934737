/* test_alloc.c — the allocation policies, checked as properties on
 * thousands of seeded random instances.
 *
 * The reference is an independent exact solver: with one budget constraint
 * and separable piecewise-linear losses, some optimum has every job but one
 * at a breakpoint of its curve (0, a measured point, or its limit) and the
 * last one either at a breakpoint or where the budget binds; enumerating
 * those points finds the true optimum, convex or not.  For large instances
 * a second exact method (a full sort of segment slopes) stands in. */
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
#include "pflex/flex/alloc.h"
#include "pflex/io/pficsv.h"
#include "support/alloc_ref.h"
#include "support/rand.h"

#define MAXP 10

struct inst {
    size_t n;
    struct pflex_alloc_job jobs[4096];
    double xs[4096][MAXP], ls[4096][MAXP];
    struct pflex_alloc_problem p;
};

enum shape { CONVEX, NOISY };

/* A random job: a curve with np binding points (convex: rising slopes, as
 * DVFS gives; noisy: any losses). */
static void rand_job(struct inst *in, size_t j, enum shape sh, int floors)
{
    struct pflex_alloc_job *jb = &in->jobs[j];
    int np = rng_int(1, MAXP - 1);
    double *x = in->xs[j], *l = in->ls[j];
    double slopes[MAXP];
    x[0] = 0;
    l[0] = 0;
    for (int k = 1; k <= np; k++)
        x[k] = rng_unif(0.01, 0.7);
    /* sort x */
    for (int a = 2; a <= np; a++)
        for (int b = a; b > 1 && x[b - 1] > x[b]; b--) {
            double t = x[b];
            x[b] = x[b - 1];
            x[b - 1] = t;
        }
    int m = 1;
    for (int k = 1; k <= np; k++)
        if (x[k] > x[m - 1] + 1e-6)
            x[m++] = x[k];
    np = m - 1;
    for (int k = 1; k <= np; k++)
        slopes[k] = rng_unif(-0.05, 1.4);
    if (sh == CONVEX)
        for (int a = 2; a <= np; a++)
            for (int b = a; b > 1 && slopes[b - 1] > slopes[b]; b--) {
                double t = slopes[b];
                slopes[b] = slopes[b - 1];
                slopes[b - 1] = t;
            }
    for (int k = 1; k <= np; k++) {
        l[k] = sh == CONVEX ? l[k - 1] + slopes[k] * (x[k] - x[k - 1]) : rng_unif(-0.05, 0.9);
    }
    memset(jb, 0, sizeof *jb);
    jb->name = "j";
    jb->gpus = rng_int(1, 64);
    jb->p0_w = rng_unif(150, 700);
    jb->t0 = rng_unif(1, 5000);
    jb->cap0_w = jb->p0_w + 10;
    jb->weight = rng_int(0, 3) ? 1.0 : rng_unif(0, 3);
    jb->floor = floors && rng_int(0, 1) ? rng_unif(0.3, 1.0) : 0;
    jb->x_hi = rng_int(0, 3) ? 1.0 : rng_unif(0, 0.7);
    jb->pfi = NAN;
    jb->npoints = (size_t)np + 1;
    jb->x = x;
    jb->loss = l;
}

static void rand_inst(struct inst *in, size_t n, enum shape sh, int floors, int progress)
{
    in->n = n;
    for (size_t j = 0; j < n; j++)
        rand_job(in, j, sh, floors);
    in->p.njobs = n;
    in->p.jobs = in->jobs;
    in->p.objective = progress ? PFLEX_OBJECTIVE_PROGRESS : PFLEX_OBJECTIVE_THROUGHPUT;
    double base = pflex_alloc_baseline_w(&in->p);
    in->p.budget_w = base * (1.0 - rng_unif(0, 0.6));
}

/* Independent pieces of the reference (the loss on a curve, ref_loss, is
 * in support/alloc_ref.c). */

/* Largest x keeping L <= 1 - floor on all of [0, x], by bisection on a
 * fine scan (independent of the library's first-crossing formula). */
static double ref_limit(const struct pflex_alloc_job *j)
{
    double u = j->x_hi < j->x[j->npoints - 1] ? j->x_hi : j->x[j->npoints - 1];
    if (j->floor <= 0)
        return u;
    double thr = 1 - j->floor;
    for (size_t k = 1; k < j->npoints; k++) {
        if (j->x[k - 1] >= u)
            break;
        if (j->loss[k] > thr) {
            double lo = j->x[k - 1], hi = j->x[k];
            for (int it = 0; it < 200; it++) {
                double mid = 0.5 * (lo + hi);
                if (ref_loss(j, mid) > thr)
                    hi = mid;
                else
                    lo = mid;
            }
            return lo < u ? lo : u;
        }
    }
    return u;
}

/* The PFI a PFI-only policy plans with (docs/contract.md §2): the job's, else the
 * study's ratio over the curve's points (x >= 0.01, L >= 0.005), else 1;
 * 1 for a PFI <= 0. */
static double ref_ratio_pfi(const struct pflex_alloc_job *j)
{
    double pfi = j->pfi;
    if (isnan(pfi)) {
        double sum = 0;
        int used = 0;
        for (size_t k = 1; k < j->npoints; k++)
            if (j->x[k] >= 0.01 && j->loss[k] >= 0.005) {
                sum += j->x[k] / j->loss[k];
                used++;
            }
        pfi = used ? sum / used : NAN;
    }
    return pfi > 0 && isfinite(pfi) ? pfi : 1.0;
}

static double scale_of(const struct pflex_alloc_problem *p, size_t j)
{
    const struct pflex_alloc_job *jb = &p->jobs[j];
    return jb->weight * (p->objective == PFLEX_OBJECTIVE_PROGRESS ? jb->gpus : jb->t0);
}

static double objective_at(const struct pflex_alloc_problem *p, const double *x)
{
    double s = 0;
    for (size_t j = 0; j < p->njobs; j++)
        s += scale_of(p, j) * (1 - ref_loss(&p->jobs[j], x[j]));
    return s;
}

/* Exhaustive vertex enumeration; returns -INFINITY when infeasible. */
static double brute(const struct pflex_alloc_problem *p)
{
    size_t n = p->njobs;
    double cand[4][MAXP + 2], u[4], b[4];
    int nc[4];
    double save = pflex_alloc_baseline_w(p) - p->budget_w;
    for (size_t j = 0; j < n; j++) {
        const struct pflex_alloc_job *jb = &p->jobs[j];
        u[j] = ref_limit(jb);
        b[j] = jb->gpus * jb->p0_w;
        nc[j] = 0;
        cand[j][nc[j]++] = 0;
        for (size_t k = 1; k < jb->npoints; k++)
            if (jb->x[k] < u[j])
                cand[j][nc[j]++] = jb->x[k];
        if (u[j] > 0)
            cand[j][nc[j]++] = u[j];
    }
    double best = -INFINITY, x[4];
    for (int free_j = -1; free_j < (int)n; free_j++) {
        int idx[4] = {0, 0, 0, 0};
        for (;;) {
            double saved = 0;
            for (size_t j = 0; j < n; j++)
                if ((int)j != free_j) {
                    x[j] = cand[j][idx[j]];
                    saved += b[j] * x[j];
                }
            int ok = 1;
            if (free_j >= 0) {
                double xf = (save - saved) / b[free_j];
                if (xf < 0)
                    xf = 0;
                if (xf > u[free_j] * (1 + 1e-12))
                    ok = 0;
                x[free_j] = xf > u[free_j] ? u[free_j] : xf;
            } else if (saved < save * (1 - 1e-12) - 1e-9) {
                ok = 0;
            }
            if (ok) {
                double o = objective_at(p, x);
                if (o > best)
                    best = o;
            }
            size_t j = 0;
            for (; j < n; j++) {
                if ((int)j == free_j)
                    continue;
                if (++idx[j] < nc[j])
                    break;
                idx[j] = 0;
            }
            if (j == n)
                break;
        }
    }
    return best;
}

static double power_of(const struct pflex_alloc_problem *p, const double *x)
{
    double s = 0;
    for (size_t j = 0; j < p->njobs; j++)
        s += p->jobs[j].gpus * p->jobs[j].p0_w * (1 - x[j]);
    return s;
}

static struct inst *I;
static long checked_convex, checked_noisy;

static void check_basic(const struct pflex_alloc_problem *p, const struct pflex_alloc_plan *pl)
{
    double pw = power_of(p, pl->x);
    if (pl->feasible)
        assert_true(pw <= p->budget_w);
    assert_true(fabs(pw - pl->power_w) <= 1e-9 * pflex_alloc_baseline_w(p));
    for (size_t j = 0; j < p->njobs; j++) {
        assert_true(pl->x[j] >= 0);
        assert_true(pl->x[j] <= pl->limit[j]);
        if (!pl->feasible)
            assert_true(pl->x[j] == pl->limit[j]);
    }
}

static void test_optimal_matches_brute_force_convex(void **state)
{
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    rng_seed(1);
    for (int it = 0; it < 4000; it++) {
        rand_inst(I, (size_t)rng_int(1, 4), CONVEX, it % 2, it % 3 == 0);
        assert_int_equal(pflex_alloc_plan(&I->p, PFLEX_POLICY_OPTIMAL, &pl, NULL), 0);
        check_basic(&I->p, &pl);
        double ref = brute(&I->p);
        if (ref == -INFINITY) {
            assert_false(pl.feasible);
            continue;
        }
        assert_true(pl.feasible);
        double got = objective_at(&I->p, pl.x);
        double tol = 1e-6 * fmax(1.0, fabs(ref));
        if (fabs(got - ref) > tol)
            fail_msg("instance %d: optimal %.12g, brute force %.12g", it, got, ref);
        assert_true(fabs(got - pl.objective) <= 1e-9 * fmax(1.0, fabs(ref)));
        assert_true(pl.gap_bound <= tol);
        /* floors on the measured curves */
        for (size_t j = 0; j < I->n; j++)
            assert_true(1 - ref_loss(&I->jobs[j], pl.x[j]) >= I->jobs[j].floor - 1e-9);
        checked_convex++;
    }
    pflex_alloc_plan_fini(&pl);
}

static void test_optimal_gap_bound_honest_nonconvex(void **state)
{
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    rng_seed(2);
    int repaired = 0;
    for (int it = 0; it < 4000; it++) {
        rand_inst(I, (size_t)rng_int(1, 4), NOISY, it % 2, 0);
        assert_int_equal(pflex_alloc_plan(&I->p, PFLEX_POLICY_OPTIMAL, &pl, NULL), 0);
        check_basic(&I->p, &pl);
        double ref = brute(&I->p);
        if (ref == -INFINITY) {
            assert_false(pl.feasible);
            continue;
        }
        assert_true(pl.feasible);
        double got = objective_at(&I->p, pl.x);
        double tol = 1e-6 * fmax(1.0, fabs(ref));
        if (got > ref + tol)
            fail_msg("instance %d: optimal %.12g beats the true optimum %.12g", it, got, ref);
        if (ref - got > pl.gap_bound + tol)
            fail_msg("instance %d: lost %.12g, gap_bound only %.12g", it, ref - got,
                     pl.gap_bound);
        if (pl.gap_bound > tol)
            repaired++;
        for (size_t j = 0; j < I->n; j++)
            assert_true(1 - ref_loss(&I->jobs[j], pl.x[j]) >= I->jobs[j].floor - 1e-9);
        checked_noisy++;
    }
    print_message("noisy instances with a positive gap_bound: %d\n", repaired);
    pflex_alloc_plan_fini(&pl);
}

/* pfi is optimal under its linear model: the brute force on model curves. */
static void test_pfi_optimal_under_its_model(void **state)
{
    struct pflex_alloc_plan pl, ref_pl;
    pflex_alloc_plan_init(&pl);
    pflex_alloc_plan_init(&ref_pl);
    static struct inst model;
    rng_seed(3);
    for (int it = 0; it < 3000; it++) {
        rand_inst(I, (size_t)rng_int(1, 4), it % 2 ? CONVEX : NOISY, it % 3 == 0, it % 5 == 0);
        for (size_t j = 0; j < I->n; j++)
            I->jobs[j].pfi = rng_int(0, 1) ? NAN : rng_unif(-0.5, 3.0);
        assert_int_equal(pflex_alloc_plan(&I->p, PFLEX_POLICY_PFI, &pl, NULL), 0);
        check_basic(&I->p, &pl);
        /* The model problem: each job's curve is the line to its limit. */
        model = *I;
        model.p.jobs = model.jobs;
        for (size_t j = 0; j < I->n; j++) {
            struct pflex_alloc_job *m = &model.jobs[j];
            const struct pflex_alloc_job *o = &I->jobs[j];
            double pfi = ref_ratio_pfi(o);
            /* the model's limit: range, curve, and the floor on the model */
            double u = fmin(o->x_hi, o->x[o->npoints - 1]);
            u = fmin(u, pfi * (1 - o->floor));
            assert_true(fabs(pl.limit[j] - u) <= 1e-12);
            m->x = model.xs[j];
            m->loss = model.ls[j];
            model.xs[j][0] = 0;
            model.ls[j][0] = 0;
            m->npoints = 1;
            m->floor = 0;
            m->x_hi = u;
            if (u > 0) {
                model.xs[j][1] = u;
                model.ls[j][1] = u / pfi;
                m->npoints = 2;
            }
        }
        double ref = brute(&model.p);
        if (ref == -INFINITY) {
            assert_false(pl.feasible);
            continue;
        }
        assert_true(pl.feasible);
        if (fabs(pl.objective - ref) > 1e-6 * fmax(1, fabs(ref)))
        {
            for (size_t j = 0; j < I->n; j++)
                print_message("lib L %.12g model L %.12g job %zu pfi %g x %.9g limit %.9g model u %.9g L %.9g np %u xmax %g\n",
                              1 - pl.throughput_j[j] / I->jobs[j].t0, model.xs[j][1] > 0 ? model.ls[j][1] / model.xs[j][1] * pl.x[j] : 0, j, I->jobs[j].pfi, pl.x[j], pl.limit[j], model.xs[j][1],
                              model.ls[j][1], I->jobs[j].npoints, I->jobs[j].x[I->jobs[j].npoints-1]);
            fail_msg("instance %d: pfi %.12g, its model's optimum %.12g", it, pl.objective, ref);
        }
    }
    pflex_alloc_plan_fini(&pl);
    pflex_alloc_plan_fini(&ref_pl);
}

/* Another exact method for convex curves at scale: every segment sorted by
 * cost, taken greedily. */
struct segref { double c, w; };

static int cmp_seg(const void *a, const void *b)
{
    const struct segref *p = a, *q = b;
    return p->c < q->c ? -1 : p->c > q->c;
}

static void test_optimal_matches_sorted_greedy_at_scale(void **state)
{
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    struct segref *segs = malloc(4096 * MAXP * sizeof *segs);
    rng_seed(4);
    for (int it = 0; it < 60; it++) {
        size_t n = (size_t)rng_int(100, 4096);
        rand_inst(I, n, CONVEX, 0, it % 2);
        for (size_t j = 0; j < n; j++)
            I->jobs[j].x_hi = 1;
        assert_int_equal(pflex_alloc_plan(&I->p, PFLEX_POLICY_OPTIMAL, &pl, NULL), 0);
        check_basic(&I->p, &pl);
        size_t m = 0;
        double loss0 = 0, save = pflex_alloc_baseline_w(&I->p) - I->p.budget_w, total = 0;
        for (size_t j = 0; j < n; j++) {
            const struct pflex_alloc_job *jb = &I->jobs[j];
            double b = jb->gpus * jb->p0_w, a = scale_of(&I->p, j);
            loss0 += a;
            for (size_t k = 1; k < jb->npoints; k++) {
                segs[m].w = b * (jb->x[k] - jb->x[k - 1]);
                segs[m].c = a * (jb->loss[k] - jb->loss[k - 1]) / segs[m].w;
                total += segs[m].w;
                m++;
            }
        }
        qsort(segs, m, sizeof *segs, cmp_seg);
        double obj = loss0, saved = 0;
        for (size_t s = 0; s < m; s++) {
            if (segs[s].c >= 0 && saved >= save)
                break;
            double take = segs[s].c < 0 ? segs[s].w : fmin(segs[s].w, save - saved);
            saved += take;
            obj -= segs[s].c * take;
        }
        if (total < save) {
            assert_false(pl.feasible);
            continue;
        }
        double got = objective_at(&I->p, pl.x);
        if (fabs(got - obj) > 1e-6 * fabs(obj))
            fail_msg("n=%zu: optimal %.12g, sorted greedy %.12g", n, got, obj);
    }
    free(segs);
    pflex_alloc_plan_fini(&pl);
}

/* A job's lower convex hull on [0, u] (u > 0), by the monotone chain:
 * the reference's own, independent of the library's. */
static int ref_hull(const struct pflex_alloc_job *j, double u, double *hx, double *hl)
{
    int h = 0;
    for (size_t k = 0; k <= j->npoints; k++) {
        double px, pl;
        if (k < j->npoints && j->x[k] < u) {
            px = j->x[k];
            pl = j->loss[k];
        } else {
            px = u;
            pl = ref_loss(j, u);
            k = j->npoints;
        }
        while (h >= 2 && (hx[h - 1] - hx[h - 2]) * (pl - hl[h - 2])
                             - (hl[h - 1] - hl[h - 2]) * (px - hx[h - 2]) <= 0)
            h--;
        hx[h] = px;
        hl[h] = pl;
        h++;
    }
    return h;
}

struct hseg { double c, w, x0, x1; size_t j; };

static int cmp_hseg(const void *a, const void *b)
{
    const struct hseg *p = a, *q = b;
    return p->c < q->c ? -1 : p->c > q->c;
}

/* The hull knapsack by sorting, leaving out job skip: x[] for the others
 * (x[skip] untouched); returns 0 when they cannot save that much.  *part:
 * the job left inside a segment, or SIZE_MAX. */
static int ref_greedy(const struct hseg *sg, size_t m, size_t n, size_t skip, double save,
                      double *x, size_t *part)
{
    double saved = 0;
    for (size_t j = 0; j < n; j++)
        if (j != skip)
            x[j] = 0;
    *part = SIZE_MAX;
    for (size_t i = 0; i < m; i++) {
        if (sg[i].j == skip)
            continue;
        if (sg[i].c >= 0 && saved >= save)
            break;
        double take = sg[i].c < 0 ? sg[i].w : fmin(sg[i].w, save - saved);
        saved += take;
        x[sg[i].j] = take < sg[i].w ? sg[i].x0 + (sg[i].x1 - sg[i].x0) * (take / sg[i].w)
                                    : sg[i].x1;
        if (take < sg[i].w)
            *part = sg[i].j;
    }
    return saved >= save * (1 - 1e-12);
}

/* On thousands of noisy (non-convex) jobs, where the planner's repair
 * works on a window of costs around the threshold, its plan scores what
 * the repair scores done the slow way: the job the hull optimum leaves
 * inside a segment above its curve tried at both ends of that segment and
 * at the measured points inside (up to 14, evenly spaced), every other job
 * re-planned from scratch by sorting each time. */
static void test_repair_at_scale_matches_full_replan(void **state)
{
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    struct hseg *sg = malloc(4096 * (MAXP + 1) * sizeof *sg);
    double *x = malloc(4096 * sizeof *x), *u = malloc(4096 * sizeof *u);
    double hx[MAXP + 2], hl[MAXP + 2];
    int repaired = 0;
    rng_seed(9);
    for (int it = 0; it < 40; it++) {
        size_t n = (size_t)rng_int(2048, 4096);
        rand_inst(I, n, NOISY, it % 2, it % 3 == 0);
        assert_int_equal(pflex_alloc_plan(&I->p, PFLEX_POLICY_OPTIMAL, &pl, NULL), 0);
        check_basic(&I->p, &pl);
        double save = pflex_alloc_baseline_w(&I->p) - I->p.budget_w;
        size_t m = 0;
        for (size_t j = 0; j < n; j++) {
            const struct pflex_alloc_job *jb = &I->jobs[j];
            u[j] = ref_limit(jb);
            if (!(u[j] > 0))
                continue;
            double b = jb->gpus * jb->p0_w, a = scale_of(&I->p, j);
            int h = ref_hull(jb, u[j], hx, hl);
            for (int v = 0; v + 1 < h; v++) {
                sg[m].w = b * (hx[v + 1] - hx[v]);
                sg[m].c = a * (hl[v + 1] - hl[v]) / sg[m].w;
                sg[m].x0 = hx[v];
                sg[m].x1 = hx[v + 1];
                sg[m++].j = j;
            }
        }
        qsort(sg, m, sizeof *sg, cmp_hseg);
        size_t jp;
        if (!ref_greedy(sg, m, n, SIZE_MAX, save, x, &jp)) {
            assert_false(pl.feasible);
            continue;
        }
        assert_true(pl.feasible);
        double best = objective_at(&I->p, x), hull_opt;
        {                                   /* the hull optimum's objective */
            double lsum = 0;
            for (size_t j = 0; j < n; j++) {
                const struct pflex_alloc_job *jb = &I->jobs[j];
                double lh = 0;
                if (u[j] > 0) {
                    int h = ref_hull(jb, u[j], hx, hl);
                    for (int v = 0; v + 1 < h; v++)
                        if (x[j] >= hx[v] && x[j] <= hx[v + 1]) {
                            lh = hl[v] + (hl[v + 1] - hl[v]) * (x[j] - hx[v]) / (hx[v + 1] - hx[v]);
                            break;
                        }
                }
                lsum += scale_of(&I->p, j) * (1 - lh);

            }
            hull_opt = lsum;
        }
        if (jp != SIZE_MAX) {
            const struct pflex_alloc_job *jb = &I->jobs[jp];
            int h = ref_hull(jb, u[jp], hx, hl);
            double xl = 0, xr = 0, lh = 0;
            for (int v = 0; v + 1 < h; v++)
                if (x[jp] >= hx[v] && x[jp] <= hx[v + 1]) {
                    xl = hx[v];
                    xr = hx[v + 1];
                    lh = hl[v] + (hl[v + 1] - hl[v]) * (x[jp] - xl) / (xr - xl);
                    break;
                }
            if (ref_loss(jb, x[jp]) - lh > 1e-12) {
                size_t inside = 0, k0 = 0;
                for (size_t k = 0; k < jb->npoints; k++)
                    if (jb->x[k] > xl && jb->x[k] < xr) {
                        if (!inside)
                            k0 = k;
                        inside++;
                    }
                size_t mid = inside < 14 ? inside : 14, tries = mid + 2;
                double *xt = malloc(n * sizeof *xt);
                for (size_t t = 0; t < tries; t++) {
                    double xv = t == 0 ? xl : t == tries - 1 ? xr
                              : jb->x[k0 + (t - 1) * inside / mid];
                    size_t dummy;
                    if (!ref_greedy(sg, m, n, jp, save - jb->gpus * jb->p0_w * xv, xt, &dummy))
                        continue;
                    xt[jp] = xv;
                    double o = objective_at(&I->p, xt);
                    if (o > best)
                        best = o;
                }
                free(xt);
                repaired++;
            }
        }
        double got = objective_at(&I->p, pl.x);
        if (fabs(got - best) > 1e-9 * fabs(best))
            fail_msg("n=%zu: optimal scores %.12g, the full re-planning repair %.12g", n, got,
                     best);
        assert_true(pl.gap_bound >= 0);
        if (hull_opt - got > pl.gap_bound + 1e-9 * fabs(hull_opt))
            fail_msg("n=%zu: %.12g under the hull optimum, gap_bound only %.12g", n,
                     hull_opt - got, pl.gap_bound);
        for (size_t j = 0; j < n; j++)
            assert_true(1 - ref_loss(&I->jobs[j], pl.x[j]) >= I->jobs[j].floor - 1e-9);
    }
    print_message("instances at scale repaired: %d of 40\n", repaired);
    assert_true(repaired >= 10);
    free(sg);
    free(x);
    free(u);
    pflex_alloc_plan_fini(&pl);
}

static void test_dominance_and_monotonicity(void **state)
{
    struct pflex_alloc_plan pl[3];
    for (int k = 0; k < 3; k++)
        pflex_alloc_plan_init(&pl[k]);
    rng_seed(5);
    long compared = 0;
    for (int it = 0; it < 2000; it++) {
        rand_inst(I, (size_t)rng_int(1, 30), CONVEX, it % 2, it % 3 == 0);
        double base = pflex_alloc_baseline_w(&I->p);
        double prev[3] = {-INFINITY, -INFINITY, -INFINITY};
        double prev_x[30];
        for (int step = 0; step <= 10; step++) {
            I->p.budget_w = base * (0.4 + 0.06 * step);
            for (int k = 0; k < 3; k++) {
                assert_int_equal(pflex_alloc_plan(&I->p, (enum pflex_policy)k, &pl[k], NULL), 0);
                check_basic(&I->p, &pl[k]);
            }
            /* optimal >= equal and >= pfi on the measured curves whenever
             * their plans respect the measured limits */
            struct pflex_alloc_score so, sk;
            assert_int_equal(pflex_alloc_score(&I->p, pl[2].x, &so, NULL), 0);
            assert_int_equal(so.sla_violations, 0);
            for (int k = 0; k < 2; k++) {
                if (!pl[k].feasible || !pl[2].feasible)
                    continue;
                int inside = 1;
                for (size_t j = 0; j < I->n; j++)
                    if (pl[k].x[j] > pl[2].limit[j])
                        inside = 0;
                assert_int_equal(pflex_alloc_score(&I->p, pl[k].x, &sk, NULL), 0);
                if (inside) {
                    assert_true(so.objective >= sk.objective - 1e-9 * fabs(so.objective));
                    compared++;
                }
            }
            /* throughput never falls as the budget grows (for equal, only
             * where no curve dips below zero loss) */
            int dips = 0;
            for (size_t j = 0; j < I->n; j++)
                for (size_t q = 1; q < I->jobs[j].npoints; q++)
                    dips |= I->jobs[j].loss[q] < I->jobs[j].loss[q - 1];
            for (int k = dips ? 1 : 0; k < 3; k++) {
                if (pl[k].feasible && pl[k].objective < prev[k] - 1e-9 * fabs(pl[k].objective))
                    fail_msg("it %d step %d policy %d: %.12g after %.12g", it, step, k,
                             pl[k].objective, prev[k]);
                prev[k] = pl[k].feasible ? pl[k].objective : -INFINITY;
            }
            /* equal: one level r for every job below its limit; each job's
             * cut only shrinks as the budget grows */
            double r = -1;
            for (size_t j = 0; j < I->n; j++) {
                if (step > 0 && pl[0].feasible)
                    assert_true(pl[0].x[j] <= prev_x[j] + 1e-12);
                prev_x[j] = pl[0].x[j];
                if (pl[0].x[j] < pl[0].limit[j] - 1e-12) {
                    if (r < 0)
                        r = pl[0].x[j];
                    assert_true(fabs(pl[0].x[j] - r) <= 1e-9 + 1e-6 * r);
                }
            }
            if (pl[0].feasible && r > 1e-6)
                assert_true(fabs(pl[0].power_w - I->p.budget_w) <= 1e-6 * base);
        }
    }
    print_message("optimal >= equal/pfi checked on %ld plans\n", compared);
    for (int k = 0; k < 3; k++)
        pflex_alloc_plan_fini(&pl[k]);
}

/* Jobs on one curve that is not convex tie at the threshold across the
 * span its hull skips: the cut they share goes to whole spans, every job
 * but at most one on a measured point.  Curve: L = .15 at x = .2 (above
 * the hull from 0 to (.4, .2)), .5 at .6; five jobs of 8 GPUs, a cut of
 * a quarter: 1.25 of x in all on the hull segment of cost .5.  Spread,
 * each job would sit at x = .25, L = .1625 (loss .8125 in all); on whole
 * spans three jobs are at .4 (L = .2) and one at .05 (L = .0375): .6375.
 * A straight span (the same curve through (.2, .1), on its hull) still
 * shares it evenly. */
static void test_optimal_ties_on_measured_points(void **state)
{
    (void)state;
    static const double xs[] = {0, .2, .4, .6}, ls[] = {0, .15, .2, .5}, lc[] = {0, .1, .2, .5};
    for (int convex = 0; convex < 2; convex++) {
        struct pflex_alloc_job jobs[5];
        for (int j = 0; j < 5; j++)
            jobs[j] = (struct pflex_alloc_job){.name = "j", .gpus = 8, .p0_w = 400, .t0 = 100,
                                               .cap0_w = 400, .weight = 1, .x_hi = 1, .pfi = NAN,
                                               .npoints = 4, .x = xs, .loss = convex ? lc : ls};
        struct pflex_alloc_problem p = {.njobs = 5, .jobs = jobs, .budget_w = 16000 * 0.75,
                                        .objective = PFLEX_OBJECTIVE_PROGRESS};
        struct pflex_alloc_plan pl;
        pflex_alloc_plan_init(&pl);
        assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_OPTIMAL, &pl, NULL), 0);
        assert_true(pl.feasible);
        double sum = 0, loss = 0;
        int inside = 0;
        for (int j = 0; j < 5; j++) {
            sum += pl.x[j];
            loss += ref_loss(&jobs[j], pl.x[j]);
            int on_point = 0;
            for (int k = 0; k < 4; k++)
                on_point |= fabs(pl.x[j] - xs[k]) < 1e-9;
            inside += !on_point;
        }
        assert_float_equal(sum, 1.25, 1e-9);
        if (convex) {
            for (int j = 0; j < 5; j++)
                assert_float_equal(pl.x[j], 0.25, 1e-9);
        } else {
            assert_true(inside <= 1);
            assert_float_equal(loss, 0.6375, 1e-9);
        }
        pflex_alloc_plan_fini(&pl);
    }
}

static void test_hand_example(void **state)
{
    /* a: L = .05 at x=.25, .3 at .5 (PFI .7778);  b: .2 at .25, .5 at .5.
     * Cut 20% of 4800 W = 960 W.  Optimal: a's first segment costs
     * .05*100/(3200*.25) = .00625 per W, b's .2*100/(1600*.25) = .05, a's
     * second .25*100/(3200*.25) = .03125: a takes .25 (800 W) then .05 of
     * its second (160 W): x_a = .3, L_a = .1, T = 90 + 100. */
    static const double xa[] = {0, .25, .5}, la[] = {0, .05, .3};
    static const double xb[] = {0, .25, .5}, lb[] = {0, .2, .5};
    struct pflex_alloc_job jobs[2] = {
        {.name = "a", .gpus = 8, .p0_w = 400, .t0 = 100, .cap0_w = 400, .weight = 1,
         .x_hi = 1, .pfi = NAN, .npoints = 3, .x = xa, .loss = la},
        {.name = "b", .gpus = 4, .p0_w = 400, .t0 = 100, .cap0_w = 400, .weight = 1,
         .x_hi = 1, .pfi = NAN, .npoints = 3, .x = xb, .loss = lb},
    };
    struct pflex_alloc_problem p = {.njobs = 2, .jobs = jobs, .budget_w = 3840};
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_OPTIMAL, &pl, NULL), 0);
    assert_true(pl.feasible);
    assert_float_equal(pl.x[0], 0.3, 1e-9);
    assert_float_equal(pl.x[1], 0.0, 1e-12);
    assert_float_equal(pl.throughput, 190, 1e-6);
    assert_float_equal(pflex_alloc_cap_w(&jobs[0], NULL, pl.x[0]), 280, 1e-6);
    assert_float_equal(pflex_alloc_cap_w(&jobs[1], NULL, pl.x[1]), 400, 1e-12);
    /* equal: r = .2 for both */
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_EQUAL, &pl, NULL), 0);
    assert_float_equal(pl.x[0], 0.2, 1e-9);
    assert_float_equal(pl.x[1], 0.2, 1e-9);
    /* a capped at .1 by its limit: b takes the rest, (960 - 320)/1600 = .4 */
    jobs[0].x_hi = 0.1;
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_EQUAL, &pl, NULL), 0);
    assert_float_equal(pl.x[0], 0.1, 1e-12);
    assert_float_equal(pl.x[1], 0.4, 1e-9);
    jobs[0].x_hi = 1;
    /* comparison */
    struct pflex_alloc_comparison c;
    assert_int_equal(pflex_alloc_compare(&p, &c, NULL), 0);
    assert_float_equal(c.score[2].throughput, 190, 1e-6);
    /* equal: L_a(.2) = .04, L_b(.2) = .16 -> 180 */
    assert_float_equal(c.score[0].throughput, 180, 1e-6);
    double gap = (c.score[1].throughput - 180) / 10;
    assert_float_equal(c.gap_recovered[PFLEX_POLICY_PFI], gap, 1e-9);
    assert_float_equal(c.per_job_recovered[PFLEX_POLICY_PFI], (c.score[1].throughput - 180) / 2,
                       1e-9);
    assert_float_equal(c.gap_recovered[PFLEX_POLICY_OPTIMAL], 1, 1e-12);
    assert_float_equal(c.gap_recovered[PFLEX_POLICY_EQUAL], 0, 1e-12);
    assert_false(c.ran[PFLEX_POLICY_PROPORTIONAL]);
    /* infeasible: 60% cut, floors .9 on a (shed .3) */
    jobs[0].floor = 0.9;
    p.budget_w = 4800 * 0.4;
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_OPTIMAL, &pl, NULL), 0);
    assert_false(pl.feasible);
    assert_float_equal(pl.x[0], 0.3, 1e-9);
    assert_float_equal(pl.x[1], 0.5, 1e-12);
    assert_float_equal(pl.power_w, 3200 * 0.7 + 1600 * 0.5, 1e-6);
    pflex_alloc_plan_fini(&pl);
}

static void test_nonconvex_repair(void **state)
{
    /* One job, a dip: L(.2) = .3, L(.4) = .32.  Hull from 0 to .4 skips .2.
     * Cut needs x = .2: on the hull L = .16, truly .3; at .4 (saves more) .32.
     * Two jobs: the other is linear and dear (L = x): the repair moves the
     * first to .4 or keeps .2 - whichever is better measured. */
    static const double x1[] = {0, .2, .4}, l1[] = {0, .3, .32};
    static const double x2[] = {0, .5}, l2[] = {0, .5};
    struct pflex_alloc_job jobs[2] = {
        {.name = "dip", .gpus = 1, .p0_w = 100, .t0 = 100, .weight = 1, .x_hi = 1,
         .pfi = NAN, .npoints = 3, .x = x1, .loss = l1},
        {.name = "lin", .gpus = 1, .p0_w = 100, .t0 = 100, .weight = 1, .x_hi = 1,
         .pfi = NAN, .npoints = 2, .x = x2, .loss = l2},
    };
    struct pflex_alloc_problem p = {.njobs = 2, .jobs = jobs, .budget_w = 180};
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_OPTIMAL, &pl, NULL), 0);
    assert_true(pl.feasible);
    /* Hull optimum: dip at .2 on the hull, L .16: objective 184.
     * True options: dip .2 (L .3) -> 170; dip 0, lin .2 -> 180; dip .4 -> 168.
     * Best: 180 (dip at its left vertex 0, lin rebalanced). */
    assert_float_equal(objective_at(&p, pl.x), 180, 1e-6);
    assert_float_equal(pl.gap_bound, 4, 1e-6);
    pflex_alloc_plan_fini(&pl);
}

/* A long noisy curve: the repair tries at most 16 positions, and the bound
 * must still hold.  Two jobs, so the reference is a short enumeration. */
static void test_repair_on_long_noisy_curve(void **state)
{
    static double x1[41], l1[41];
    static const double x2[] = {0, 0.6}, l2[] = {0, 0.6};
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    rng_seed(6);
    for (int it = 0; it < 300; it++) {
        x1[0] = l1[0] = 0;
        for (int k = 1; k <= 40; k++) {
            x1[k] = 0.015 * k;
            l1[k] = 0.5 * x1[k] + rng_unif(0, 0.15);
        }
        struct pflex_alloc_job jobs[2] = {
            {.name = "noisy", .gpus = rng_int(1, 8), .p0_w = 400, .t0 = rng_unif(10, 100), .weight = 1,
             .x_hi = 1, .pfi = NAN, .npoints = 41, .x = x1, .loss = l1},
            {.name = "line", .gpus = rng_int(1, 8), .p0_w = 300, .t0 = rng_unif(10, 100), .weight = 1,
             .x_hi = 1, .pfi = NAN, .npoints = 2, .x = x2, .loss = l2},
        };
        struct pflex_alloc_problem p = {.njobs = 2, .jobs = jobs};
        double b1 = jobs[0].gpus * 400.0, b2 = jobs[1].gpus * 300.0;
        double save = rng_unif(0.05, 0.5) * (b1 + b2);
        p.budget_w = b1 + b2 - save;
        assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_OPTIMAL, &pl, NULL), 0);
        double best = -INFINITY, xs[2];
        for (int k = 0; k <= 40; k++) {          /* noisy at a breakpoint */
            xs[0] = x1[k];
            xs[1] = (save - b1 * xs[0]) / b2;
            if (xs[1] < 0)
                xs[1] = 0;
            if (xs[1] <= 0.6 + 1e-12)
                best = fmax(best, objective_at(&p, xs));
        }
        for (int k = 0; k < 2; k++) {            /* line at an end, noisy free */
            xs[1] = k ? 0.6 : 0;
            xs[0] = (save - b2 * xs[1]) / b1;
            if (xs[0] < 0)
                xs[0] = 0;
            if (xs[0] <= 0.6 + 1e-12)
                best = fmax(best, objective_at(&p, xs));
        }
        if (best == -INFINITY) {
            assert_false(pl.feasible);
            continue;
        }
        assert_true(pl.feasible);
        double got = objective_at(&p, pl.x), tol = 1e-9 * fabs(best);
        assert_true(got <= best + tol);
        if (best - got > pl.gap_bound + tol)
            fail_msg("lost %.12g, gap_bound %.12g", best - got, pl.gap_bound);
        assert_true(power_of(&p, pl.x) <= p.budget_w);
    }
    pflex_alloc_plan_fini(&pl);
}

static void test_bad_problems(void **state)
{
    static const double x[] = {0, .2}, l[] = {0, .1};
    struct pflex_alloc_job j = {.name = "x", .gpus = 0, .p0_w = 100, .t0 = 1, .weight = 1,
                                .x_hi = 1, .pfi = NAN, .npoints = 2, .x = x, .loss = l};
    struct pflex_alloc_problem p = {.njobs = 1, .jobs = &j, .budget_w = 50};
    struct pflex_alloc_plan pl;
    pflex_error_t err;
    pflex_alloc_plan_init(&pl);
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_OPTIMAL, &pl, &err), -1);
    assert_non_null(strstr(err.text, "gpus"));
    j.gpus = 1;
    j.npoints = 0;
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_OPTIMAL, &pl, &err), -1);
    assert_non_null(strstr(err.text, "curve"));
    /* pfi without a curve: the model L = x / PFI, range x_hi */
    j.pfi = 2.0;
    j.x_hi = 0.3;
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_PFI, &pl, &err), 0);
    assert_false(pl.feasible);
    assert_float_equal(pl.x[0], 0.3, 1e-12);
    assert_float_equal(pl.throughput_j[0], 1 - 0.15, 1e-12);
    /* an elastic PFI: the model reaches zero throughput at x = PFI */
    j.pfi = 0.25;
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_PFI, &pl, &err), 0);
    assert_float_equal(pl.x[0], 0.25, 1e-12);
    assert_float_equal(pl.throughput_j[0], 0, 1e-12);
    j.pfi = 2.0;
    p.budget_w = NAN;
    assert_int_equal(pflex_alloc_plan(&p, PFLEX_POLICY_PFI, &pl, &err), -1);
    pflex_alloc_plan_fini(&pl);
    enum pflex_policy pol;
    assert_int_equal(pflex_policy_parse("pfi", &pol), 0);
    assert_int_equal(pol, PFLEX_POLICY_PFI);
    assert_int_equal(pflex_policy_parse("best", &pol), -1);
}

static void test_pficsv(void **state)
{
    const char *ok = "job,gpus,power_w,throughput,pfi,range,floor,tier\n"
                     "a,8,650,1000,0.4,0.3,,flex2\nb,4,300,10,,0.2,0.6,\n";
    pflex_pficsv_t *p;
    pflex_error_t err;
    assert_int_equal(pflex_pficsv_read_mem(ok, strlen(ok), "p.csv", &p, &err), 0);
    assert_int_equal(p->n, 2);
    const struct pflex_pfi_row *a = pflex_pficsv_find(p, "a");
    assert_non_null(a);
    assert_float_equal(a->floor, 0.75, 0);
    assert_float_equal(a->pfi, 0.4, 0);
    assert_true(isnan(pflex_pficsv_find(p, "b")->pfi));
    assert_float_equal(pflex_pficsv_find(p, "b")->floor, 0.6, 0);
    assert_null(pflex_pficsv_find(p, "c"));
    pflex_pficsv_destroy(p);
    struct { const char *s, *msg; } bad[] = {
        {"job,gpus,power_w,throughput\n", "p.csv:1: missing column 'pfi'"},
        {"job,gpus,power_w,throughput,pfi\na,0,1,1,0\n", "p.csv:2: column 'gpus'"},
        {"job,gpus,power_w,throughput,pfi\na,1,x,1,0\n", "p.csv:2: column 'power_w'"},
        {"job,gpus,power_w,throughput,pfi\na,1,1,1,1\n\na,1,1,1,1\n", "p.csv:4: job 'a' already on line 2"},
        {"job,gpus,power_w,throughput,pfi\na,1,1,1,1\nb,1,1,1,0\n", "p.csv:3: column 'pfi': '0' cannot be a ratio PFI"},
        {"job,gpus,power_w,throughput,pfi\na,1,1,1,-1.5\n", "p.csv:2: column 'pfi': '-1.5' cannot be a ratio PFI"},
        {"job,gpus,power_w,throughput,pfi,metric\na,1,1,1,0,ratio\n", "p.csv:2: column 'pfi'"},
        {"job,gpus,power_w,throughput,pfi,metric\na,1,1,1,1.5,area\n", "p.csv:2: column 'pfi': '1.5' cannot be an area PFI"},
        {"job,gpus,power_w,throughput,pfi,metric\na,1,1,1,1.5,ratios\n", "p.csv:2: column 'metric': 'ratios' is not a PFI metric"},
        {"job,gpus,power_w,throughput,pfi\na,1,1,1,inf\n", "p.csv:2: column 'pfi'"},
        {"job,gpus,power_w,throughput,pfi\na,1,1,1,nan\n", "p.csv:2: column 'pfi'"},
        {"job,gpus,power_w,throughput,pfi\n", "no data rows"},
        {"", "empty file"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(pflex_pficsv_read_mem(bad[i].s, strlen(bad[i].s), "p.csv", &p, &err), -1);
        if (!strstr(err.text, bad[i].msg))
            fail_msg("'%s' lacks '%s'", err.text, bad[i].msg);
    }
}

static int setup(void **state)
{
    I = calloc(1, sizeof *I);
    return I ? 0 : -1;
}

static int teardown(void **state)
{
    print_message("brute-force comparisons: %ld convex, %ld non-convex\n", checked_convex,
                  checked_noisy);
    free(I);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_example),
        cmocka_unit_test(test_nonconvex_repair),
        cmocka_unit_test(test_repair_on_long_noisy_curve),
        cmocka_unit_test(test_bad_problems),
        cmocka_unit_test(test_pficsv),
        cmocka_unit_test(test_optimal_matches_brute_force_convex),
        cmocka_unit_test(test_optimal_gap_bound_honest_nonconvex),
        cmocka_unit_test(test_pfi_optimal_under_its_model),
        cmocka_unit_test(test_optimal_matches_sorted_greedy_at_scale),
        cmocka_unit_test(test_repair_at_scale_matches_full_replan),
        cmocka_unit_test(test_dominance_and_monotonicity),
        cmocka_unit_test(test_optimal_ties_on_measured_points),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
