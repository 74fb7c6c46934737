/* safeplan_bench.c — the controller's planning step at site scale.
 *
 *   safeplan_bench GPUS GPUS_PER_JOB REPS [POINTS]
 *
 * A seeded site of GPUS H200-range GPUs (200..700 W) in jobs of
 * GPUS_PER_JOB, each job with a learned-looking curve of POINTS points
 * (default 24: what pflex_learn_fit gives after a few hundred
 * observations) and a pessimistic curve beside it, 2 % of GPUs
 * unreachable, 1 % without telemetry, floors on a third of the jobs, and a
 * limit at 70 % of the site's maximum.  Prints the median CPU time of
 * pflex_safe_plan over REPS runs (the plan reused, as the controller does)
 * and the plan's worst case against the limit.  Nothing here asserts a
 * time: the goal is a 1-second control period at 100,000 GPUs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "pflex/flex/safeplan.h"

static uint64_t rng = 88172645463325252ULL;
static double unif(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1.0p-53;
}

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double d = *(const double *)a - *(const double *)b;
    return (d > 0) - (d < 0);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: safeplan_bench GPUS GPUS_PER_JOB REPS [POINTS]\n");
        return 2;
    }
    size_t ngpus = strtoul(argv[1], NULL, 10), per = strtoul(argv[2], NULL, 10);
    int reps = atoi(argv[3]), npts = argc > 4 ? atoi(argv[4]) : 24;
    if (!ngpus || !per || reps < 1 || npts < 2)
        return 2;
    size_t njobs = (ngpus + per - 1) / per;
    struct pflex_site_gpu *g = calloc(ngpus, sizeof *g);
    struct pflex_site_job *j = calloc(njobs, sizeof *j);
    double *caps = malloc(njobs * npts * sizeof *caps), *loss = malloc(njobs * npts * sizeof *loss),
           *hi = malloc(njobs * npts * sizeof *hi);
    if (!g || !j || !caps || !loss || !hi)
        return 1;
    double most = 0;
    for (size_t k = 0; k < njobs; k++) {
        double a = 0.2 + unif() * 0.6, b = unif() * 1.2;
        double *c = caps + k * npts, *l = loss + k * npts, *h = hi + k * npts;
        for (int p = 0; p < npts; p++) {
            c[p] = 700 - 500.0 * p / (npts - 1);
            double y = 1 - c[p] / 700;
            l[p] = a * y + b * y * y + (p ? 0.01 * (unif() - 0.5) : 0);
            h[p] = l[p] + (p ? 0.02 : 0);
        }
        j[k] = (struct pflex_site_job){.name = "job", .t0 = 1000 + unif() * 1e5, .weight = 1,
                                       .floor = k % 3 == 0 ? 0.75 : 0, .n = (size_t)npts,
                                       .cap_w = c, .loss = l, .loss_hi = h};
    }
    for (size_t k = 0; k < ngpus; k++) {
        g[k] = (struct pflex_site_gpu){.job = (int)(k / per), .reachable = unif() > 0.02,
                                       .telemetry_ok = unif() > 0.01, .min_cap_w = 200,
                                       .max_cap_w = 700, .cap_w = 400 + floor(unif() * 300)};
        most += 700;
    }
    struct pflex_safe_input in = {.ngpus = ngpus, .gpus = g, .njobs = njobs, .jobs = j,
                                  .limit_w = 0.7 * most, .other_w = 0,
                                  .objective = PFLEX_OBJECTIVE_PROGRESS};
    struct pflex_safe_plan plan;
    pflex_safe_plan_init(&plan);
    pflex_error_t err;
    double *t = malloc(reps * sizeof *t);
    for (int r = 0; r < reps; r++) {
        double t0 = cpu_s();
        if (pflex_safe_plan(&in, &plan, &err) < 0) {
            fprintf(stderr, "%s\n", err.text);
            return 1;
        }
        t[r] = cpu_s() - t0;
    }
    qsort(t, reps, sizeof *t, cmp);
    printf("  %zu GPUs in %zu jobs of %zu, %d curve points: median %.4f s (min %.4f, max %.4f) "
           "over %d runs; worst case %.0f W under a limit of %.0f W, %zu floors breached, "
           "%zu GPUs held\n",
           ngpus, njobs, per, npts, t[reps / 2], t[0], t[reps - 1], reps, plan.worst_w,
           in.limit_w, plan.floor_breaches, plan.held);
    pflex_safe_plan_fini(&plan);
    free(t);
    free(g);
    free(j);
    free(caps);
    free(loss);
    free(hi);
    return plan.worst_w <= in.limit_w ? 0 : 1;
}
