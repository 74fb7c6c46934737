/* test_safeplan.c — the safe planning step.
 *
 * Hand-computed sites, then properties over 5,000 seeded random sites
 * (jobs with curves convex, noisy or missing, floors, unreachable GPUs,
 * missing telemetry, holds, limits from infeasible to none), each checked
 * against quantities recomputed here from the caps alone: the worst case,
 * the ranges, the holds, the floors on the input curve, and that a floor
 * is only breached when keeping every floor could not meet the limit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <gsl/gsl_rng.h>
#include "pflex/flex/safeplan.h"

#define assert_near(a, b, eps) near_((a), (b), (eps), #a, __LINE__)
static void near_(double a, double b, double eps, const char *what, int line)
{
    if (a == b || fabs(a - b) <= eps)
        return;
    fail_msg("line %d: %s = %.9g, expected %.9g (within %g)", line, what, a, b, eps);
}

static struct pflex_site_gpu gpu(int job, double lo, double hi, double cap)
{
    return (struct pflex_site_gpu){.job = job, .reachable = 1, .telemetry_ok = 1,
                                   .min_cap_w = lo, .max_cap_w = hi, .cap_w = cap};
}

static void test_hand(void **state)
{
    /* Two jobs of 2 GPUs, 200..700 W.  Job 0 loses 0.2 per unit of cap
     * reduction, job 1 loses 1.0: job 0 is cut first, down to its minimum
     * (y = 1 - 200/700) before job 1 is touched. */
    double caps[] = {700, 200}, l0[] = {0, 0.2 * (500.0 / 700)}, l1[] = {0, 500.0 / 700};
    struct pflex_site_job jobs[] = {
        {.name = "flex", .t0 = 100, .weight = 1, .n = 2, .cap_w = caps, .loss = l0},
        {.name = "stiff", .t0 = 100, .weight = 1, .n = 2, .cap_w = caps, .loss = l1},
    };
    struct pflex_site_gpu g[] = {gpu(0, 200, 700, 700), gpu(0, 200, 700, 700),
                                 gpu(1, 200, 700, 700), gpu(1, 200, 700, 700)};
    struct pflex_safe_input in = {.ngpus = 4, .gpus = g, .njobs = 2, .jobs = jobs,
                                  .limit_w = 2000, .other_w = 100};
    struct pflex_safe_plan p;
    pflex_safe_plan_init(&p);
    pflex_error_t err;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    /* GPU budget 1900: job 0 at 200 W each (400), job 1 gets 1500 -> 700 each (1400)
     * = 1800 <= 1900: job 1 keeps 700.  Then job 0 can rise: 1900 - 1400 = 500 -> 250 each. */
    assert_near(p.cap_w[0], 250, 1);
    assert_near(p.cap_w[2], 700, 0);
    assert_true(p.worst_w <= 2000);
    assert_true(p.feasible);
    /* An unreachable GPU counts at its maximum: 700 of the limit is gone. */
    g[3].reachable = 0;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(isnan(p.cap_w[3]));
    assert_near(p.worst_w, 100 + 700 + p.cap_w[0] + p.cap_w[1] + p.cap_w[2], 1e-9);
    assert_true(p.worst_w <= 2000);
    /* Floors: job 1 at floor 0.9 cannot go under 1 - 0.1*700/500... its
     * loss 1 per unit y: y <= 0.1, cap >= 630.  With a limit of 1000 both
     * at the minimum are 100 + 700 + 600 = 1400 > 1000: infeasible. */
    jobs[1].floor = 0.9;
    in.limit_w = 1000;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_false(p.feasible);
    assert_near(p.worst_w, p.least_w, 1e-9);
    assert_near(p.least_w, 100 + 700 + 3 * 200, 1e-9);
    /* Feasible only by breaking job 1's floor: the breach is reported. */
    in.limit_w = 100 + 700 + 200 + 200 + 300;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(p.feasible);
    assert_int_equal(p.floor_breaches, 1);
    assert_true(p.floor_breached[1]);
    /* Enough room to keep it: no breach, job 1 at 630 or above. */
    in.limit_w = 100 + 700 + 200 + 200 + 630;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(p.feasible);
    assert_int_equal(p.floor_breaches, 0);
    assert_true(p.cap_w[2] >= 630);
    /* Missing telemetry holds a GPU at its current cap even with room. */
    g[3].reachable = 1;
    in.limit_w = INFINITY;
    g[0].telemetry_ok = 0;
    g[0].cap_w = 450;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.cap_w[0], 450, 0);
    assert_near(p.cap_w[1], 700, 0);
    assert_int_equal(p.held, 1);
    in.hold = 1;
    g[1].cap_w = 300;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.cap_w[1], 300, 0);
    /* Malformed input. */
    g[0].job = 5;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), -1);
    g[0].job = 0;
    g[0].min_cap_w = 800;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), -1);
    pflex_safe_plan_fini(&p);
}

/* Floors that cannot all be kept give way only as far as the limit needs:
 * first the pessimistic margin, then the floors on the mean curve, every
 * job by the same measure; a job the objective would rather cut to its
 * minimum still keeps what the relaxed floor allows. */
static void test_floors_give_way(void **state)
{
    /* Two jobs of 2 GPUs, 200..700 W, both with mean loss y = 1 - cap/700
     * and a pessimistic curve 0.2 above it; floor 0.5.  Job 0 weighs ten
     * times job 1, so without floors job 1 would go to 200 W first. */
    double caps[11], loss[11], hi[11];
    for (int k = 0; k <= 10; k++) {
        caps[k] = 700 - 50 * k;
        loss[k] = 1 - caps[k] / 700;
        hi[k] = k ? fmin(1, loss[k] + 0.2) : 0;
    }
    struct pflex_site_job jobs[] = {
        {.name = "heavy", .t0 = 100, .weight = 10, .floor = 0.5, .n = 11, .cap_w = caps, .loss = loss, .loss_hi = hi},
        {.name = "light", .t0 = 100, .weight = 1, .floor = 0.5, .n = 11, .cap_w = caps, .loss = loss, .loss_hi = hi},
    };
    struct pflex_site_gpu g[] = {gpu(0, 200, 700, 700), gpu(0, 200, 700, 700),
                                 gpu(1, 200, 700, 700), gpu(1, 200, 700, 700)};
    struct pflex_safe_input in = {.ngpus = 4, .gpus = g, .njobs = 2, .jobs = jobs,
                                  .limit_w = 100 + 4 * 490, .other_w = 100};
    struct pflex_safe_plan p;
    pflex_safe_plan_init(&p);
    pflex_error_t err;
    /* The pessimistic floors (y <= 0.3, 490 W) fit exactly: kept. */
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(p.feasible);
    assert_int_equal(p.floor_breaches, 0);
    assert_near(p.floor_relax, 0, 0);
    for (int k = 0; k < 4; k++)
        assert_true(p.cap_w[k] >= 490);
    /* 420 W a GPU: only with half the margin (y + 0.1 <= 0.5).  Both jobs
     * sit there; the light one is not sent to its minimum. */
    in.limit_w = 100 + 4 * 420;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(p.feasible && p.worst_w <= in.limit_w);
    assert_near(p.floor_relax, 0.5, 0.01);
    assert_int_equal(p.floor_breaches, 2);
    for (int k = 0; k < 4; k++)
        assert_near(p.cap_w[k], 420, 1);
    /* 300 W a GPU: past the mean curve's floors (350 W); they fall to
     * 1 - 300/700 = 0.43 of baseline for both, r = 2 - 0.43/0.5. */
    in.limit_w = 100 + 4 * 300;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(p.feasible && p.worst_w <= in.limit_w);
    assert_near(p.floor_relax, 2 - (300.0 / 700) / 0.5, 0.01);
    for (int k = 0; k < 4; k++)
        assert_near(p.cap_w[k], 300, 1);
    /* Every GPU at its minimum: the floors fall to what 200 W keeps. */
    in.limit_w = 100 + 4 * 200;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(p.feasible);
    assert_near(p.floor_relax, 2 - (200.0 / 700) / 0.5, 0.01);
    /* Under that, nothing fits: the floors are dropped (r = 2), every GPU
     * at its minimum. */
    in.limit_w = 100 + 4 * 200 - 1;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_false(p.feasible);
    assert_near(p.floor_relax, 2, 0);
    assert_near(p.worst_w, p.least_w, 1e-9);
    pflex_safe_plan_fini(&p);
}

/* ---- random sites ---- */

struct site {
    size_t ngpus, njobs;
    struct pflex_site_gpu g[400];
    struct pflex_site_job j[16];
    double caps[16][16], loss[16][16], hi[16][16];
    char names[16][24];
};

static void make_site(gsl_rng *r, struct site *s, struct pflex_safe_input *in)
{
    static const double kinds[][2] = {{200, 700}, {100, 400}, {150, 350}};
    memset(s, 0, sizeof *s);
    s->njobs = 1 + gsl_rng_uniform_int(r, 12);
    for (size_t j = 0; j < s->njobs; j++) {
        int kind = (int)gsl_rng_uniform_int(r, 3);
        double lo = kinds[kind][0], hi = kinds[kind][1];
        int n = (int)gsl_rng_uniform_int(r, 14);    /* 0: no curve */
        double a = gsl_rng_uniform(r) * 0.8, b = gsl_rng_uniform(r) * 1.5;
        double noise = gsl_rng_uniform(r) < 0.3 ? 0.05 : 0;
        s->caps[j][0] = hi;
        s->loss[j][0] = 0;
        s->hi[j][0] = 0;
        for (int k = 1; k < n; k++) {
            double cap = hi - (hi - lo) * (k + gsl_rng_uniform(r) * 0.5) / n;
            double y = 1 - cap / hi;
            s->caps[j][k] = cap;
            s->loss[j][k] = a * y + b * y * y + noise * (gsl_rng_uniform(r) - 0.5);
            s->hi[j][k] = s->loss[j][k] + gsl_rng_uniform(r) * 0.05;
        }
        snprintf(s->names[j], sizeof s->names[j], "j%zu", j);
        static const double floors[] = {0, 0, 0.5, 0.75, 0.9};
        s->j[j] = (struct pflex_site_job){.name = s->names[j], .t0 = 10 + gsl_rng_uniform(r) * 1000,
                                          .weight = 1, .floor = floors[gsl_rng_uniform_int(r, 5)],
                                          .n = (size_t)n, .cap_w = s->caps[j], .loss = s->loss[j],
                                          .loss_hi = gsl_rng_uniform(r) < 0.7 ? s->hi[j] : NULL};
        int ng = 1 + (int)gsl_rng_uniform_int(r, 24);
        for (int k = 0; k < ng && s->ngpus < 390; k++) {
            int mixed = gsl_rng_uniform(r) < 0.1;
            double glo = mixed ? lo + 20 : lo, ghi = hi;  /* one kind per job; the odd GPU settles higher */
            struct pflex_site_gpu *g = &s->g[s->ngpus++];
            *g = gpu((int)j, glo, ghi, glo + floor(gsl_rng_uniform(r) * (ghi - glo)));
            g->reachable = gsl_rng_uniform(r) < 0.9;
            g->telemetry_ok = gsl_rng_uniform(r) < 0.98;
            if (gsl_rng_uniform(r) < 0.1)
                g->cap_w = NAN;
        }
    }
    int idle = (int)gsl_rng_uniform_int(r, 6);
    for (int k = 0; k < idle; k++) {
        struct pflex_site_gpu *g = &s->g[s->ngpus++];
        *g = gpu(-1, 200, 700, 700);
        g->reachable = gsl_rng_uniform(r) < 0.9;
    }
    double least = 0, most = 0, other = floor(gsl_rng_uniform(r) * 1000);
    for (size_t k = 0; k < s->ngpus; k++) {
        least += s->g[k].reachable ? s->g[k].min_cap_w : s->g[k].max_cap_w;
        most += s->g[k].max_cap_w;
    }
    *in = (struct pflex_safe_input){.ngpus = s->ngpus, .gpus = s->g, .njobs = s->njobs,
                                    .jobs = s->j, .other_w = other,
                                    .hold = gsl_rng_uniform(r) < 0.05,
                                    .objective = gsl_rng_uniform(r) < 0.5 ? PFLEX_OBJECTIVE_PROGRESS
                                                                          : PFLEX_OBJECTIVE_THROUGHPUT};
    double u = gsl_rng_uniform(r);
    in->limit_w = u < 0.05 ? INFINITY : other + least * 0.9 + (most * 1.1 - least * 0.9) * gsl_rng_uniform(r);
}

/* The pessimistic loss of job j at a cap, from its raw points: ordered by
 * cap from the top, running maximum, linear in the cap; NaN past the
 * deepest point (where the planner's own extension applies). */
static double hi_at(const struct pflex_site_job *jb, double C, double cap)
{
    double pc[20], pl[20];
    size_t n = 0, idx[20];
    for (size_t k = 0; k < jb->n; k++)
        idx[k] = k;
    for (size_t a = 0; a < jb->n; a++)      /* insertion sort, cap descending */
        for (size_t b = a + 1; b < jb->n; b++)
            if (jb->cap_w[idx[b]] > jb->cap_w[idx[a]]) {
                size_t t = idx[a];
                idx[a] = idx[b];
                idx[b] = t;
            }
    pc[n] = C;
    pl[n++] = 0;
    double ml = 0;      /* the mean curve made monotone from the shallow side */
    for (size_t q = 0; q < jb->n; q++) {
        size_t k = idx[q];
        double c = jb->cap_w[k], v = jb->loss_hi ? fmax(jb->loss_hi[k], jb->loss[k]) : jb->loss[k];
        if (!(c < pc[n - 1] - 1e-9 * C))
            continue;
        ml = fmax(ml, jb->loss[k]);
        pc[n] = c;
        pl[n] = fmin(1, fmax(v, ml));
        n++;
    }
    /* the bound made monotone from the deep side: no more than any deeper
     * point's */
    for (size_t k = n - 1; k-- > 1;)
        pl[k] = fmin(pl[k], pl[k + 1]);
    if (cap >= pc[0])
        return 0;
    for (size_t k = 1; k < n; k++)
        if (cap >= pc[k])
            return pl[k - 1] + (pl[k] - pl[k - 1]) * (pc[k - 1] - cap) / (pc[k - 1] - pc[k]);
    return NAN;
}

/* guard_equal: two jobs whose mean curves favour cutting job 0 (0.3 of
 * loss per unit of cut against job 1's 0.5).  Known exactly (no margin),
 * the plan is the optimum (blend 1); with wide margins on job 0's curve
 * (it could as well be the steeper one) equal cuts (blend 0), both jobs at
 * the same cap; with margins in between, a blend, its gain under the
 * optimum's.  Every plan keeps the limit and floors. */
/* Whole watts: each job's cap rounded down leaves watts of the limit;
 * they go, a watt a job, to the job whose next watt wins most, when the
 * watts left cover its GPUs.  Job A (3 GPUs) loses 0.5 per unit of cut;
 * job B (2 GPUs) 0.05 down to 500 W, 2 per unit below: B is cut to 500 W,
 * A takes the rest, 400.8 W, rounded to 400: 2.4 W left, a watt for B's
 * two GPUs (A's three would need 3). */
static struct pflex_safe_input rounding_site(struct pflex_site_gpu g[5], double cap_step_w)
{
    static double ca[] = {700, 200}, la[] = {0, 0.5 * (500.0 / 700)};
    static double cb[] = {700, 500, 200},
                  lb[] = {0, 0.05 * (200.0 / 700), 0.05 * (200.0 / 700) + 2 * (300.0 / 700)};
    static struct pflex_site_job jobs[] = {
        {.name = "a", .t0 = 100, .weight = 1, .n = 2, .cap_w = ca, .loss = la},
        {.name = "b", .t0 = 100, .weight = 1, .n = 3, .cap_w = cb, .loss = lb},
    };
    for (int k = 0; k < 5; k++)
        g[k] = gpu(k < 3 ? 0 : 1, 200, 700, 700);
    return (struct pflex_safe_input){.ngpus = 5, .gpus = g, .njobs = 2, .jobs = jobs,
                                     .limit_w = 2 * 500 + 3 * 400.8,
                                     .objective = PFLEX_OBJECTIVE_PROGRESS, .cap_step_w = cap_step_w};
}

static void test_spend_rounding(void **state)
{
    (void)state;
    struct pflex_site_gpu g[5];
    struct pflex_safe_input in = rounding_site(g, 0);
    struct pflex_safe_plan p;
    pflex_safe_plan_init(&p);
    pflex_error_t err;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    print_message("  caps %g %g W, worst %g of %g W\n", p.cap_w[0], p.cap_w[3], p.worst_w, in.limit_w);
    for (int k = 0; k < 3; k++)
        assert_near(p.cap_w[k], 400, 0);
    for (int k = 3; k < 5; k++)
        assert_near(p.cap_w[k], 501, 0);
    assert_near(p.job_cap_w[1], 501, 0);
    assert_near(p.worst_w, 3 * 400 + 2 * 501, 1e-9);
    /* B's GPUs held (no telemetry) at 500 W: never raised above it */
    g[3].telemetry_ok = g[4].telemetry_ok = 0;
    g[3].cap_w = g[4].cap_w = 500;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.cap_w[3], 500, 0);
    assert_near(p.cap_w[4], 500, 0);
    assert_true(p.worst_w <= in.limit_w);
    pflex_safe_plan_fini(&p);
}

static void test_guard_equal(void **state)
{
    (void)state;
    double caps[] = {700, 350, 200};
    double l0[] = {0, 0.3 * 0.5, 0.3 * (500.0 / 700)}, l1[] = {0, 0.5 * 0.5, 0.5 * (500.0 / 700)};
    double h_wide[] = {0, 0.3 * 0.5 + 0.4, 0.3 * (500.0 / 700) + 0.5};
    double h_mid[] = {0, 0.3 * 0.5, 0.3 * (500.0 / 700) + 0.3};
    struct pflex_site_job jobs[] = {
        {.name = "a", .t0 = 100, .weight = 1, .floor = 0, .n = 3, .cap_w = caps, .loss = l0},
        {.name = "b", .t0 = 100, .weight = 1, .floor = 0, .n = 3, .cap_w = caps, .loss = l1},
    };
    struct pflex_site_gpu g[] = {gpu(0, 200, 700, 700), gpu(1, 200, 700, 700)};
    struct pflex_safe_input in = {.ngpus = 2, .gpus = g, .njobs = 2, .jobs = jobs, .limit_w = 1000,
                                  .other_w = 0, .guard_equal = 1};
    struct pflex_safe_plan p;
    pflex_safe_plan_init(&p);
    pflex_error_t err;
    /* known: the optimum cuts job 0 to its minimum, job 1 gets the rest */
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.blend, 1, 0);
    assert_near(p.cap_w[0], 300, 1);
    assert_near(p.cap_w[1], 700, 1);
    assert_near(p.voi, 0, 1e-9);
    double tput_opt = p.throughput;
    /* job 0 barely known: equal cuts, 500 W each */
    jobs[0].loss_hi = h_wide;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.blend, 0, 0);
    assert_near(p.cap_w[0], 500, 1);
    assert_near(p.cap_w[1], 500, 1);
    assert_true(p.worst_w <= 1000 && p.feasible);
    assert_true(p.voi > 0);
    assert_true(p.throughput < tput_opt);
    /* known to 350 W: the blend stops there */
    jobs[0].loss_hi = h_mid;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    print_message("  guard: blend %.2f, caps %.0f %.0f W, voi %.3f\n", p.blend, p.cap_w[0], p.cap_w[1], p.voi);
    assert_near(p.blend, 0.75, 0);
    assert_near(p.cap_w[0], 350, 1);
    assert_near(p.cap_w[1], 650, 1);
    assert_true(p.worst_w <= 1000 && p.feasible);
    /* without the guard, the optimum whatever the margins */
    in.guard_equal = 0;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.blend, 1, 0);
    assert_near(p.cap_w[0], 300, 1);
    pflex_safe_plan_fini(&p);
}

/* The guard's step probe (probe_dx): from equal cuts, known there, the
 * next blend on toward the optimum, budget-neutral (the job the optimum
 * cuts down, the other up by its watts); read there, the plan moves to it
 * and names the next.  Without probe_dx, none. */
static void test_guard_probe(void **state)
{
    (void)state;
    double c0[] = {700, 500, 475, 350, 200}, c1[] = {700, 500, 350, 200};
    double l0[5], h0[5], l1[4];
    for (int i = 0; i < 5; i++)
        l0[i] = 0.3 * (700 - c0[i]) / 350;     /* loses less per watt than job 1 */
    for (int i = 0; i < 4; i++)
        l1[i] = 0.5 * (700 - c1[i]) / 350;
    /* known to 500 W (equal cuts), a guess past it */
    double wide[] = {0, 0, 0.3, 0.4, 0.5};
    for (int i = 0; i < 5; i++)
        h0[i] = l0[i] + wide[i];
    struct pflex_site_job jobs[] = {
        {.name = "a", .t0 = 100, .weight = 1, .n = 5, .cap_w = c0, .loss = l0, .loss_hi = h0},
        {.name = "b", .t0 = 100, .weight = 1, .n = 4, .cap_w = c1, .loss = l1},
    };
    struct pflex_site_gpu g[] = {gpu(0, 200, 700, 700), gpu(1, 200, 700, 700)};
    struct pflex_safe_input in = {.ngpus = 2, .gpus = g, .njobs = 2, .jobs = jobs, .limit_w = 1000,
                                  .guard_equal = 1};
    struct pflex_safe_plan p;
    pflex_safe_plan_init(&p);
    pflex_error_t err;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.blend, 0, 0);
    assert_near(p.probe_blend, 0, 0);
    assert_true(isnan(p.probe_cap_w[0]) && isnan(p.probe_cap_w[1]));
    in.probe_dx = 0.05;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    print_message("  probe: blend %.3f, caps %.1f %.1f W (plan %.0f %.0f W)\n", p.probe_blend, p.probe_cap_w[0],
                  p.probe_cap_w[1], p.cap_w[0], p.cap_w[1]);
    assert_near(p.blend, 0, 0);
    assert_near(p.cap_w[0], 500, 1);
    assert_true(p.probe_blend > 0 && p.probe_blend < 0.5);
    /* job 0 down, job 1 up by as much, no more than explore's step apart */
    assert_true(p.probe_cap_w[0] < 500 && p.probe_cap_w[0] >= 500 - 0.05 * 700 - 1e-9);
    assert_near(p.probe_cap_w[0] + p.probe_cap_w[1], 1000, 1e-6);
    /* read where the probe went: the plan goes there, the next probe past it */
    double was = p.probe_blend, cap = p.probe_cap_w[0];
    c0[2] = floor(cap);
    l0[2] = 0.3 * (700 - c0[2]) / 350;
    h0[2] = l0[2];
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.blend, was, 1e-12);
    assert_near(p.cap_w[0], floor(cap), 1);
    assert_true(p.worst_w <= 1000 && p.feasible);
    assert_true(p.probe_blend > was);
    pflex_safe_plan_fini(&p);
}

/* The optimistic probe: two jobs alike on their mean curves (the plan
 * and the mean optimum at equal cuts, no blend to read), one of them
 * known only at its plan's cap; the guard names a probe on the
 * optimistic curves within probe_dx of the plan: that job down (its
 * optimistic loss flat past its reading), the known one up by its watts. */
static void test_optimist_probe(void **state)
{
    (void)state;
    double caps[] = {700, 600, 500, 400, 200};
    double l[] = {0, 0.05, 0.10, 0.25, 0.6}, h0[] = {0, 0.15, 0.10, 0.45, 0.9};
    struct pflex_site_job jobs[] = {
        {.name = "a", .t0 = 100, .weight = 1, .n = 5, .cap_w = caps, .loss = l, .loss_hi = h0},
        {.name = "b", .t0 = 100, .weight = 1, .n = 5, .cap_w = caps, .loss = l, .loss_hi = l},
    };
    struct pflex_site_gpu g[] = {gpu(0, 200, 700, 700), gpu(1, 200, 700, 700)};
    struct pflex_safe_input in = {.ngpus = 2, .gpus = g, .njobs = 2, .jobs = jobs, .limit_w = 1000,
                                  .guard_equal = 1};
    struct pflex_safe_plan p;
    pflex_safe_plan_init(&p);
    pflex_error_t err;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.cap_w[0], 500, 0);
    assert_near(p.cap_w[1], 500, 0);
    assert_near(p.probe_blend, 0, 0);
    in.probe_dx = 0.05;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    print_message("  optimist: caps %.1f %.1f W (plan %.0f %.0f W), %.2f of probe_dx\n", p.probe_cap_w[0],
                  p.probe_cap_w[1], p.cap_w[0], p.cap_w[1], p.probe_blend);
    assert_near(p.cap_w[0], 500, 0);
    assert_near(p.cap_w[1], 500, 0);
    assert_true(p.probe_blend > 0 && p.probe_blend <= 1 + 1e-9);
    assert_near(p.probe_cap_w[0], 500 - 0.05 * 700, 1e-6);
    assert_near(p.probe_cap_w[1], 500 + 0.05 * 700, 1e-6);
    /* a floor a's pessimistic curve meets at 500 W: a stays, no probe
     * cuts it */
    jobs[0].floor = 0.9;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(!(p.probe_cap_w[0] < 500 - 1e-9));
    pflex_safe_plan_fini(&p);
}

static void test_random_sites(void **state)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 20261203);
    static struct site s;
    struct pflex_safe_plan p, q;
    pflex_safe_plan_init(&p);
    pflex_safe_plan_init(&q);
    pflex_error_t err;
    int infeasible = 0, breached = 0, held = 0, unreach = 0, floor_checks = 0, needless_checks = 0;
    for (int trial = 0; trial < 5000; trial++) {
        struct pflex_safe_input in;
        make_site(r, &s, &in);
        if (pflex_safe_plan(&in, &p, &err) < 0)
            fail_msg("trial %d: %s", trial, err.text);
        /* the worst case, from the caps alone */
        double worst = in.other_w, least = in.other_w;
        for (size_t k = 0; k < s.ngpus; k++) {
            const struct pflex_site_gpu *g = &s.g[k];
            if (!g->reachable) {
                assert_true(isnan(p.cap_w[k]));
                worst += g->max_cap_w;
                least += g->max_cap_w;
                unreach++;
                continue;
            }
            double c = p.cap_w[k];
            if (!(c >= g->min_cap_w && c <= g->max_cap_w))
                fail_msg("trial %d: GPU %zu cap %g outside %g..%g", trial, k, c, g->min_cap_w, g->max_cap_w);
            assert_true(c == floor(c));
            if ((in.hold || !g->telemetry_ok) && isfinite(g->cap_w))
                if (!(c <= g->cap_w))
                    fail_msg("trial %d: GPU %zu loosened from %g to %g without telemetry", trial, k, g->cap_w, c);
            if (!isfinite(in.limit_w) && !in.hold && g->telemetry_ok)
                assert_true(c == g->max_cap_w);
            worst += c;
            least += g->min_cap_w;
        }
        assert_near(p.worst_w, worst, 1e-6);
        assert_near(p.least_w, least, 1e-6);
        if (in.limit_w >= least) {
            if (!(p.feasible && worst <= in.limit_w + 1e-6))
                fail_msg("trial %d: worst %g over the limit %g (least %g)", trial, worst, in.limit_w, least);
        } else {
            assert_false(p.feasible);
            assert_near(worst, least, 1e-6);
            infeasible++;
        }
        held += p.held > 0;
        /* floors: a job not flagged keeps its floor on the input curve */
        double floor_worst = in.other_w;
        int floors_reachable = 1;
        for (size_t j = 0; j < s.njobs; j++) {
            const struct pflex_site_job *jb = &s.j[j];
            double C = 0, cmin = 0, mincap = INFINITY;
            size_t n = 0;
            for (size_t k = 0; k < s.ngpus; k++)
                if (s.g[k].job == (int)j && s.g[k].reachable) {
                    C = fmax(C, s.g[k].max_cap_w);
                    cmin = fmax(cmin, s.g[k].min_cap_w);
                    mincap = fmin(mincap, p.cap_w[k]);
                    n++;
                }
            if (!n)
                continue;
            double h = hi_at(jb, C, mincap);
            if (jb->floor > 0 && !p.floor_breached[j] && !isnan(h)) {
                floor_checks++;
                if (!(h <= 1 - jb->floor + 1e-6)) {
                    for (size_t k = 0; k < jb->n; k++) print_message("   %g %g %g\n", jb->cap_w[k], jb->loss[k], jb->loss_hi ? jb->loss_hi[k] : -1);
                    print_message("C %g cmin %g jobcap %g\n", C, cmin, p.job_cap_w[j]);
                    fail_msg("trial %d: job %zu at %g W loses %g > 1 - floor %g, not flagged", trial, j, mincap, h, jb->floor);
                }
            }
            if (p.floor_breached[j])
                breached++;
            /* the least power that keeps this job's floor: the lowest whole
             * cap with every cap above it within the floor */
            double fc = C;
            if (jb->floor > 0)
                for (double c = C; c >= cmin - 1e-9; c -= 1) {
                    double v = hi_at(jb, C, c);
                    if (isnan(v) || v > 1 - jb->floor + 1e-9)
                        break;
                    fc = c;
                }
            else
                fc = cmin;
            if (jb->floor > 0 && fc == C && isnan(hi_at(jb, C, C - 1)))
                floors_reachable = 0;   /* no curve below the top: the planner extends it */
            for (size_t k = 0; k < s.ngpus; k++)
                if (s.g[k].job == (int)j && s.g[k].reachable)
                    floor_worst += fmin(fmax(fc, s.g[k].min_cap_w), s.g[k].max_cap_w) + 1;
        }
        for (size_t k = 0; k < s.ngpus; k++)
            floor_worst += !s.g[k].reachable ? s.g[k].max_cap_w : s.g[k].job < 0 ? s.g[k].min_cap_w : 0;
        /* no needless breach: when every floor fits under the limit (and
         * nothing was held lower), none is broken */
        if (floors_reachable && p.held == 0 && isfinite(in.limit_w) && floor_worst <= in.limit_w) {
            needless_checks++;
            if (p.floor_breaches) {
                for (size_t j = 0; j < s.njobs; j++) {
                    print_message("job %zu floor %g n %zu breached %d jobcap %g loss %g\n", j, s.j[j].floor, s.j[j].n, p.floor_breached[j], p.job_cap_w[j], p.job_loss[j]);
                    for (size_t k = 0; k < s.j[j].n; k++) print_message("   %g %g %g\n", s.j[j].cap_w[k], s.j[j].loss[k], s.j[j].loss_hi ? s.j[j].loss_hi[k] : -1);
                }
                for (size_t k = 0; k < s.ngpus; k++) print_message("gpu %zu job %d r %d t %d %g..%g cur %g -> %g\n", k, s.g[k].job, s.g[k].reachable, s.g[k].telemetry_ok, s.g[k].min_cap_w, s.g[k].max_cap_w, s.g[k].cap_w, p.cap_w[k]);
                fail_msg("trial %d: %zu floors broken though keeping all needs %g <= %g", trial,
                         p.floor_breaches, floor_worst, in.limit_w);
            }
        }
        /* deterministic */
        assert_int_equal(pflex_safe_plan(&in, &q, &err), 0);
        for (size_t k = 0; k < s.ngpus; k++)
            assert_true(memcmp(&p.cap_w[k], &q.cap_w[k], sizeof(double)) == 0);
    }
    print_message("  5000 sites: %d infeasible, %d with holds, %d floor breaches reported, "
                  "%d unreachable GPUs, %d floor checks, %d no-needless-breach checks\n",
                  infeasible, held, breached, unreach, floor_checks, needless_checks);
    /* the generator reaches every case */
    assert_true(infeasible > 50 && held > 500 && breached > 50 && floor_checks > 1000
                && needless_checks > 500);
    pflex_safe_plan_fini(&p);
    pflex_safe_plan_fini(&q);
    gsl_rng_free(r);
}

/* The caps of plans a and b are the same, bit for bit, and so are their
 * totals. */
static int same_plan(const struct pflex_safe_plan *a, const struct pflex_safe_plan *b, size_t ngpus)
{
    for (size_t k = 0; k < ngpus; k++)
        if (memcmp(&a->cap_w[k], &b->cap_w[k], sizeof(double)))
            return 0;
    return a->worst_w == b->worst_w && a->feasible == b->feasible
           && a->floor_breaches == b->floor_breaches && a->throughput == b->throughput;
}

/* in planned by a plan that keeps nothing (the jobs' gens 0 for it). */
static void plan_fresh(const struct pflex_safe_input *in, struct site *s, struct pflex_safe_plan *fresh)
{
    pflex_error_t err;
    unsigned long gens[16];
    for (size_t j = 0; j < s->njobs; j++) {
        gens[j] = s->j[j].gen;
        s->j[j].gen = 0;
    }
    int rc = pflex_safe_plan(in, fresh, &err);
    for (size_t j = 0; j < s->njobs; j++)
        s->j[j].gen = gens[j];
    if (rc < 0)
        fail_msg("%s", err.text);
}

/* in planned by kept (the jobs' gens as set) and by a plan that keeps
 * nothing: the same plan? */
static int kept_as_fresh(const struct pflex_safe_input *in, struct site *s, struct pflex_safe_plan *kept,
                         struct pflex_safe_plan *fresh)
{
    pflex_error_t err;
    if (pflex_safe_plan(in, kept, &err) < 0)
        fail_msg("%s", err.text);
    plan_fresh(in, s, fresh);
    return same_plan(kept, fresh, in->ngpus);
}

/* Curves kept by their gen (pflex_site_job.gen): over 2,000 seeded random
 * sites planned in turn by one plan, it plans as a plan that keeps nothing
 * when the gens are new, when they are the same and nothing changed, when
 * one job's points change under a new gen, and when a GPU's largest or
 * least cap changes under the same gens (the curve is rebuilt).  Points
 * changed under the same gen are not read again (the caller's promise):
 * the plan is the one made before, which a fresh plan differs from in most
 * such sites, so the curves were kept. */
static void test_kept_curves(void **state)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 20261205);
    static struct site s;
    struct pflex_safe_plan kept, fresh, before;
    pflex_safe_plan_init(&kept);
    pflex_safe_plan_init(&fresh);
    pflex_safe_plan_init(&before);
    pflex_error_t err;
    unsigned long gen = 0;
    int reused = 0, changed = 0;
    for (int trial = 0; trial < 2000; trial++) {
        struct pflex_safe_input in;
        make_site(r, &s, &in);
        for (size_t j = 0; j < s.njobs; j++)
            s.j[j].gen = ++gen;
        if (!kept_as_fresh(&in, &s, &kept, &fresh))
            fail_msg("trial %d: new gens", trial);
        if (!kept_as_fresh(&in, &s, &kept, &fresh))
            fail_msg("trial %d: the same gens, nothing changed", trial);
        /* job 0's points change: a new gen */
        for (size_t k = 1; k < s.j[0].n; k++) {
            s.loss[0][k] *= 0.5;
            s.hi[0][k] = s.loss[0][k] + 0.01;
        }
        s.j[0].gen = ++gen;
        if (!kept_as_fresh(&in, &s, &kept, &fresh))
            fail_msg("trial %d: job 0's points changed", trial);
        /* a GPU's range changes, the gens the same */
        size_t g = gsl_rng_uniform_int(r, s.ngpus);
        s.g[g].max_cap_w += 25;
        if (!kept_as_fresh(&in, &s, &kept, &fresh))
            fail_msg("trial %d: GPU %zu's largest cap raised", trial, g);
        s.g[g].min_cap_w -= 10;
        if (!kept_as_fresh(&in, &s, &kept, &fresh))
            fail_msg("trial %d: GPU %zu's least cap lowered", trial, g);
        /* points changed under the same gens: the plan made before */
        plan_fresh(&in, &s, &before);
        for (size_t j = 0; j < s.njobs; j++)
            for (size_t k = 1; k < s.j[j].n; k++) {
                s.loss[j][k] = fmin(1, s.loss[j][k] * 1.7 + 0.02);
                s.hi[j][k] = s.loss[j][k] + 0.03;
            }
        if (pflex_safe_plan(&in, &kept, &err) < 0)
            fail_msg("trial %d: %s", trial, err.text);
        reused += same_plan(&kept, &before, in.ngpus);
        plan_fresh(&in, &s, &fresh);
        changed += !same_plan(&fresh, &before, in.ngpus);
    }
    print_message("  2000 sites: %d whose changed points (same gens) a fresh plan plans otherwise, "
                  "%d planned as before by the plan that kept them\n", changed, reused);
    assert_int_equal(reused, 2000);
    assert_true(changed > 500);
    pflex_safe_plan_fini(&kept);
    pflex_safe_plan_fini(&fresh);
    pflex_safe_plan_fini(&before);
    gsl_rng_free(r);
}

/* Caps of a finer step (cap_step_w 0.25 W): test_spend_rounding's site
 * rounds A's 400.8 W to 400.75 W, not 400, and leaves B at its 500 W knee
 * (0.15 W left, under a step for either job); a floor's cap still rounds
 * up to a whole watt (the margin whole watts leave it). */
static void test_cap_step(void **state)
{
    (void)state;
    struct pflex_site_gpu g[5];
    struct pflex_safe_input in = rounding_site(g, 0.25);
    struct pflex_safe_plan p;
    pflex_safe_plan_init(&p);
    pflex_error_t err;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    print_message("  caps %g %g W, worst %g of %g W\n", p.cap_w[0], p.cap_w[3], p.worst_w, in.limit_w);
    for (int k = 0; k < 3; k++)
        assert_near(p.cap_w[k], 400.75, 0);
    for (int k = 3; k < 5; k++)
        assert_near(p.cap_w[k], 500, 0);
    assert_near(p.worst_w, 3 * 400.75 + 2 * 500, 1e-9);
    /* a floor: job "f" loses 0.2 per unit of cut, its floor 0.9003 at
     * 351.05 W; the stiff job takes the rest in quarter watts */
    double cf[] = {700, 200}, lf[] = {0, 0.2 * (500.0 / 700)}, ls[] = {0, 500.0 / 700};
    struct pflex_site_job j2[] = {
        {.name = "stiff", .t0 = 100, .weight = 1, .n = 2, .cap_w = cf, .loss = ls},
        {.name = "f", .t0 = 100, .weight = 1, .floor = 0.9003, .n = 2, .cap_w = cf, .loss = lf},
    };
    struct pflex_site_gpu g2[] = {gpu(0, 200, 700, 700), gpu(0, 200, 700, 700),
                                  gpu(1, 200, 700, 700), gpu(1, 200, 700, 700)};
    struct pflex_safe_input in2 = {.ngpus = 4, .gpus = g2, .njobs = 2, .jobs = j2,
                                   .limit_w = 100 + 2 * 352 + 2 * 500.3, .other_w = 100,
                                   .cap_step_w = 0.25};
    assert_int_equal(pflex_safe_plan(&in2, &p, &err), 0);
    print_message("  floor-bound job at %g W, the other at %g W\n", p.cap_w[2], p.cap_w[0]);
    assert_near(p.cap_w[2], 352, 0);
    assert_near(p.cap_w[3], 352, 0);
    assert_near(p.cap_w[0], 500.25, 0);
    assert_int_equal(p.floor_breaches, 0);
    assert_true(p.worst_w <= in2.limit_w);
    pflex_safe_plan_fini(&p);
}

/* Give-back: a job whose GPUs draw well under their caps (ceil_w) is
 * planned from its ceiling down, so the watts over it go to the job whose
 * caps bind before that job is cut; with the limit loose the ceiling
 * costs nothing (the rest goes back to it), and with no limit in force it
 * is ignored. */
static void test_give_back(void **state)
{
    (void)state;
    /* both learned alike (proportional loss over 100..400 W); job 1
     * draws 60 W whatever its cap, its ceiling set from that draw */
    double caps[] = {400, 100}, lp[] = {0, 0.75};
    struct pflex_site_job jobs[] = {
        {.name = "bound", .t0 = 100, .weight = 1, .n = 2, .cap_w = caps, .loss = lp},
        {.name = "input", .t0 = 100, .weight = 1, .n = 2, .cap_w = caps, .loss = lp},
    };
    struct pflex_site_gpu g[] = {gpu(0, 100, 400, 400), gpu(0, 100, 400, 400),
                                 gpu(1, 100, 400, 400), gpu(1, 100, 400, 400)};
    struct pflex_safe_input in = {.ngpus = 4, .gpus = g, .njobs = 2, .jobs = jobs,
                                  .limit_w = 1300, .other_w = 0, .objective = PFLEX_OBJECTIVE_PROGRESS};
    struct pflex_safe_plan p;
    pflex_safe_plan_init(&p);
    pflex_error_t err;
    /* without the ceiling both jobs look alike: 325 W each */
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.cap_w[0], 325, 0);
    assert_near(p.cap_w[2], 325, 0);
    assert_near(p.given_w, 0, 0);
    /* the ceiling at 120 W: job 1 at 120, job 0 keeps its 400 (1040 W
     * of 1300), and the 260 W left go back to job 1: 250 W */
    jobs[1].ceil_w = 120;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.cap_w[0], 400, 0);
    assert_near(p.cap_w[1], 400, 0);
    assert_near(p.cap_w[2], 250, 0);
    assert_near(p.cap_w[3], 250, 0);
    assert_near(p.given_w, 300, 1e-9);
    assert_true(p.worst_w <= in.limit_w);
    /* a deeper cut: job 1 at its ceiling, job 0 pays only the rest */
    in.limit_w = 900;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.cap_w[2], 120, 0);
    assert_near(p.cap_w[0], 330, 0);
    assert_true(p.worst_w <= in.limit_w);
    /* deeper still: past the ceiling both are cut, job 1 from 120 W (its
     * curve's origin there), never under the GPUs' minimum */
    in.limit_w = 500;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(p.cap_w[2] <= 120 && p.cap_w[2] >= 100);
    assert_true(p.worst_w <= in.limit_w);
    /* a ceiling under the GPUs' minimum is the minimum */
    jobs[1].ceil_w = 40;
    in.limit_w = 900;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.cap_w[2], 100, 0);
    assert_near(p.cap_w[0], 350, 0);
    /* a largest limit off the cap steps: an uncut GPU sits at it, not a
     * step under (where no learner reads its baseline) */
    struct pflex_site_gpu g2[] = {gpu(0, 100, 250.7, 250.7)};
    struct pflex_safe_input in2 = {.ngpus = 1, .gpus = g2, .njobs = 1, .jobs = jobs,
                                   .limit_w = INFINITY, .cap_step_w = 1};
    assert_int_equal(pflex_safe_plan(&in2, &p, &err), 0);
    assert_near(p.cap_w[0], 250.7, 0);
    in2.limit_w = 240;
    assert_int_equal(pflex_safe_plan(&in2, &p, &err), 0);
    assert_near(p.cap_w[0], 240, 0);
    /* the limit loose: every cap at its largest, the ceiling costs nothing */
    in.limit_w = 1700;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    for (int k = 0; k < 4; k++)
        assert_near(p.cap_w[k], 400, 0);
    assert_near(p.given_w, 0, 0);
    /* no limit in force: no cap under a GPU's largest */
    in.limit_w = INFINITY;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    for (int k = 0; k < 4; k++)
        assert_near(p.cap_w[k], 400, 0);
    /* cheap under its ceiling: the plan cuts job 1 to its GPUs' least
     * cap and gives job 0 the watts; job 1 stays there (it is not lifted
     * back to its ceiling at job 0's cost) */
    double lc[] = {0, 0.01};
    jobs[1].loss = lc;
    jobs[1].ceil_w = 120;
    in.limit_w = 900;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_near(p.cap_w[2], 100, 0);
    assert_near(p.cap_w[3], 100, 0);
    assert_near(p.cap_w[0], 350, 0);
    assert_near(p.cap_w[1], 350, 0);
    assert_near(p.given_w, 600, 1e-9);
    assert_true(p.worst_w <= in.limit_w);
    jobs[1].loss = lp;
    /* a held GPU of job 1 (no telemetry) never rises above the cap it has */
    jobs[1].ceil_w = 120;
    in.limit_w = 1300;
    g[3].telemetry_ok = 0;
    g[3].cap_w = 200;
    assert_int_equal(pflex_safe_plan(&in, &p, &err), 0);
    assert_true(p.cap_w[3] <= 200);
    assert_true(p.worst_w <= in.limit_w);
    pflex_safe_plan_fini(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand),
        cmocka_unit_test(test_floors_give_way),
        cmocka_unit_test(test_guard_equal),
        cmocka_unit_test(test_spend_rounding),
        cmocka_unit_test(test_cap_step),
        cmocka_unit_test(test_guard_probe),
        cmocka_unit_test(test_optimist_probe),
        cmocka_unit_test(test_random_sites),
        cmocka_unit_test(test_kept_curves),
        cmocka_unit_test(test_give_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
