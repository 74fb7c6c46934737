/* alloc_bench.c — how fast pflex plans, against how fast it reads.
 *
 *   alloc_bench gen JOBS CAPS SEED FILE [NOISE]
 *                                         write a seeded sweep CSV: JOBS jobs
 *                                         measured at CAPS caps each (NOISE:
 *                                         throughput within +-NOISE, so
 *                                         curves are not convex)
 *   alloc_bench file FILE REPS            time reading FILE into a problem
 *                                         (parse) and reading + planning
 *                                         optimally (parse+plan), REPS times
 *   alloc_bench mem JOBS CAPS REPS [NOISE]
 *                                         time planning alone (no I/O) on
 *                                         JOBS in-memory jobs, every policy
 *                                         (proportional to each job's GPUs)
 *   alloc_bench once parse|plan FILE      read FILE (and plan) once, for
 *                                         timing whole processes from outside
 *   alloc_bench jobs DIR JOBS REPS        the jobs file of pflex allocate
 *                                         (--jobs): JOBS rows (job, curve,
 *                                         gpus, tier, floor, weight) over the
 *                                         curves of a 1,000-job sweep (both
 *                                         written to DIR when missing,
 *                                         seeded), read into a problem beside
 *                                         wc -l on the jobs file, as a ratio
 *
 * Curves are DVFS-shaped: throughput flat near the top cap and falling ever
 * faster as the cap drops (convex loss), with per-job variation.  With
 * NOISE (gen, mem) each measured throughput is off by up to +-NOISE, as
 * measurements are: the curves are then not convex, and the optimal
 * planner repairs the job it leaves inside a non-convex stretch.
 *
 * Times are medians of REPS runs of this process's CPU time (user +
 * system, so page faults count; other load on the machine does not), also
 * shown split into user and system time (the system part is mostly the
 * kernel zeroing fresh pages).  One core: nothing here is threaded. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include "pflex/flex/alloc.h"
#include "peers.h"

static uint64_t rs;

static double unif(void)
{
    uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* This process's user and system CPU seconds so far. */
static void cpu(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec;
    *sys = (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One job's curve: caps from top down; per-GPU power follows the cap until
 * the job's natural draw; loss = k x^e (convex, e >= 1). */
struct shape { double p_top, t0, k, e, natural; int gpus; };

static struct shape rand_shape(void)
{
    struct shape s;
    s.p_top = 700;
    s.natural = 520 + 170 * unif();
    s.t0 = 1000 + 9000 * unif();
    s.k = 0.3 + 1.2 * unif();
    s.e = 1.2 + 1.3 * unif();
    s.gpus = 8 << (int)(4 * unif());
    return s;
}

/* Measurement noise on throughput below the top cap: uniform within
 * +-noise of the value (0: none, curves convex). */
static double noise;

static void point(const struct shape *s, int i, int caps, double *cap, double *pw, double *tp)
{
    *cap = s->p_top - (s->p_top - 200) * i / (caps - 1);
    *pw = *cap < s->natural ? *cap * 0.98 : s->natural;
    double x = 1 - *pw / s->natural;
    double l = s->k * pow(x, s->e);
    *tp = s->t0 * (1 - (l < 0.95 ? l : 0.95));
    if (noise > 0 && i > 0)
        *tp *= 1 + noise * (2 * unif() - 1);
}

static int gen(long jobs, int caps, uint64_t seed, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return perror(path), 1;
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    rs = seed;
    fprintf(f, "job,gpus,cap_w,power_w,throughput\n");
    for (long j = 0; j < jobs; j++) {
        struct shape s = rand_shape();
        for (int i = 0; i < caps; i++) {
            double cap, pw, tp;
            point(&s, i, caps, &cap, &pw, &tp);
            fprintf(f, "job%ld,%d,%.0f,%.2f,%.2f\n", j, s.gpus, cap, pw, tp);
        }
    }
    return fclose(f) ? (perror(path), 1) : 0;
}

static int bench_file(const char *path, int reps)
{
    /* per rep and mode (parse, parse + plan): total, user, system; and the
     * planning part of each parse + plan run */
    double *t[2][3], *tplan = malloc((size_t)reps * sizeof(double));
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 3; k++)
            t[m][k] = malloc((size_t)reps * sizeof(double));
    size_t njobs = 0;
    double thr = 0, gap = 0;
    for (int r = 0; r < reps; r++) {
        for (int plan_too = 0; plan_too < 2; plan_too++) {
            pflex_error_t err;
            struct pflex_alloc_source src = {.sweep_path = path, .floor = NAN};
            pflex_alloc_input_t *in;
            struct pflex_alloc_plan pl;
            double u0, s0, u1, s1;
            double t0 = now();
            cpu(&u0, &s0);
            if (pflex_alloc_input_read(&src, &in, &err) < 0) {
                fprintf(stderr, "%s\n", err.text);
                return 1;
            }
            double tr = now();
            if (plan_too) {
                struct pflex_alloc_problem p = {.njobs = in->njobs, .jobs = in->jobs};
                p.budget_w = 0.7 * pflex_alloc_baseline_w(&p);
                pflex_alloc_plan_init(&pl);
                if (pflex_alloc_plan(&p, PFLEX_POLICY_OPTIMAL, &pl, &err) < 0) {
                    fprintf(stderr, "%s\n", err.text);
                    return 1;
                }
                thr = pl.throughput;
                gap = pl.gap_bound;
            }
            t[plan_too][0][r] = now() - t0;
            if (plan_too)
                tplan[r] = now() - tr;
            cpu(&u1, &s1);
            t[plan_too][1][r] = u1 - u0;
            t[plan_too][2][r] = s1 - s0;
            njobs = in->njobs;
            if (plan_too)
                pflex_alloc_plan_fini(&pl);
            pflex_alloc_input_destroy(in);
        }
    }
    double md[2][3];
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 3; k++)
            md[m][k] = median(t[m][k], reps);
    printf("%zu jobs from %s (median of %d):\n", njobs, path, reps);
    printf("  parse only        %9.4f s   (user %.4f, system %.4f)\n", md[0][0], md[0][1],
           md[0][2]);
    printf("  parse + optimal   %9.4f s   (user %.4f, system %.4f)\n", md[1][0], md[1][1],
           md[1][2]);
    printf("  of which planning %9.4f s   ratio (parse + optimal) / parse only: %.2f\n",
           median(tplan, reps), md[1][0] / md[0][0]);
    printf("  (plan throughput %.6g%s)\n", thr, gap > 0 ? "; non-convex, repaired" : "");
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 3; k++)
            free(t[m][k]);
    free(tplan);
    return 0;
}

static int bench_mem(long n, int caps, int reps)
{
    struct pflex_alloc_job *jobs = calloc((size_t)n, sizeof *jobs);
    double *xs = malloc((size_t)n * (size_t)caps * sizeof *xs);
    double *ls = malloc((size_t)n * (size_t)caps * sizeof *ls);
    double *t = malloc((size_t)reps * sizeof *t);
    rs = 42;
    for (long j = 0; j < n; j++) {
        struct shape s = rand_shape();
        double *x = xs + j * caps, *l = ls + j * caps, cap, pw, tp, p0 = 0, t0 = 0;
        int m = 0;
        for (int i = 0; i < caps; i++) {
            point(&s, i, caps, &cap, &pw, &tp);
            if (i == 0) {
                p0 = pw;
                t0 = tp;
                x[m] = 0;
                l[m++] = 0;
            } else if (1 - pw / p0 > x[m - 1]) {
                x[m] = 1 - pw / p0;
                l[m++] = 1 - tp / t0;
            }
        }
        jobs[j] = (struct pflex_alloc_job){.name = "j", .gpus = s.gpus, .p0_w = p0, .t0 = t0,
                                           .cap0_w = 700, .weight = 1, .x_hi = 1, .pfi = NAN,
                                           .npoints = (size_t)m, .x = x, .loss = l};
    }
    struct pflex_alloc_problem p = {.njobs = (size_t)n, .jobs = jobs};
    p.budget_w = 0.7 * pflex_alloc_baseline_w(&p);
    struct pflex_alloc_plan pl;
    pflex_alloc_plan_init(&pl);
    pflex_error_t err;
    printf("%ld jobs in memory, %d caps each%s, 30%% cut, planning only (median of %d):\n", n,
           caps, noise > 0 ? ", noisy (non-convex) curves" : "", reps);
    double *rate = malloc((size_t)n * sizeof *rate);  /* proportional's column: gpus */
    if (!rate)
        return 1;
    for (long j = 0; j < n; j++)
        rate[j] = jobs[j].gpus;
    p.rate_by = rate;
    for (int pol = 0; pol < PFLEX_POLICY_COUNT; pol++) {
        /* the first call on a fresh plan sizes its buffers (allocation and
         * first-touch faults included); then none allocates */
        struct pflex_alloc_plan cold;
        pflex_alloc_plan_init(&cold);
        double c0 = now();
        if (pflex_alloc_plan(&p, (enum pflex_policy)pol, &cold, &err) < 0) {
            fprintf(stderr, "%s\n", err.text);
            return 1;
        }
        double cold_s = now() - c0;
        pflex_alloc_plan_fini(&cold);
        if (pflex_alloc_plan(&p, (enum pflex_policy)pol, &pl, &err) < 0) {
            fprintf(stderr, "%s\n", err.text);
            return 1;
        }
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            pflex_alloc_plan(&p, (enum pflex_policy)pol, &pl, &err);
            t[r] = now() - t0;
        }
        double m = median(t, reps);
        printf("  %-12s %10.1f us  (%.1f ns per job; first call on a fresh plan %.1f us)%s\n",
               pflex_policy_name((enum pflex_policy)pol), 1e6 * m, 1e9 * m / (double)n,
               1e6 * cold_s, pl.gap_bound > 0 ? "  [repaired: gap_bound > 0]" : "");
    }
    pflex_alloc_plan_fini(&pl);
    free(rate);
    free(jobs);
    free(xs);
    free(ls);
    free(t);
    return 0;
}

static int once(const char *what, const char *path)
{
    pflex_error_t err;
    struct pflex_alloc_source src = {.sweep_path = path, .floor = NAN};
    pflex_alloc_input_t *in;
    if (pflex_alloc_input_read(&src, &in, &err) < 0) {
        fprintf(stderr, "%s\n", err.text);
        return 1;
    }
    int rc = 0;
    if (!strcmp(what, "plan")) {
        struct pflex_alloc_problem p = {.njobs = in->njobs, .jobs = in->jobs};
        struct pflex_alloc_plan pl;
        p.budget_w = 0.7 * pflex_alloc_baseline_w(&p);
        pflex_alloc_plan_init(&pl);
        rc = pflex_alloc_plan(&p, PFLEX_POLICY_OPTIMAL, &pl, &err) < 0;
        printf("%zu jobs, throughput %.6g\n", in->njobs, pl.throughput);
        pflex_alloc_plan_fini(&pl);
    } else {
        printf("%zu jobs\n", in->njobs);
    }
    pflex_alloc_input_destroy(in);
    return rc;
}

/* A jobs file of n rows: job names of their own, each on one of the
 * sweep's 1,000 curves, a tier or a floor on some, a weight on all. */
static int gen_jobs(long n, uint64_t seed, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return perror(path), 1;
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    rs = seed;
    static const char *const tiers[3] = {"", "", "flex2"};
    fprintf(f, "job,curve,gpus,tier,floor,weight\n");
    for (long j = 0; j < n; j++) {
        int t = (int)(unif() * 3);
        fprintf(f, "run-%ld,job%ld,%d,%s,", j, (long)(unif() * 1000), 8 << (int)(unif() * 4),
                tiers[t]);
        if (t == 1)
            fprintf(f, "%.2f", 0.5 + 0.4 * unif());
        fprintf(f, ",%.3g\n", 0.5 + unif());
    }
    return fclose(f) ? (perror(path), 1) : 0;
}

static const char *jobs_sweep;
static int read_jobs_once(const char *path)
{
    struct pflex_alloc_source src = {jobs_sweep, NULL, NULL, path, NAN, NULL, 0};
    pflex_alloc_input_t *in;
    pflex_error_t err;
    if (pflex_alloc_input_read(&src, &in, &err) < 0) {
        fprintf(stderr, "%s\n", err.text);
        return -1;
    }
    pflex_alloc_input_destroy(in);
    return 0;
}

static int bench_jobs(const char *dir, long n, int reps)
{
    static char sweep[4096], jobs[4096];
    snprintf(sweep, sizeof sweep, "%s/sweep-1000-8.csv", dir);
    snprintf(jobs, sizeof jobs, "%s/jobs-%ld.csv", dir, n);
    FILE *f;
    if ((f = fopen(sweep, "r")))
        fclose(f);
    else if (gen(1000, 8, 20260502, sweep))
        return 1;
    if ((f = fopen(jobs, "r")))
        fclose(f);
    else if (gen_jobs(n, 20261204, jobs))
        return 1;
    jobs_sweep = sweep;
    char label[64];
    snprintf(label, sizeof label, "jobs file, %ld rows:", n);
    return peers_compare(label, jobs, reps, read_jobs_once, NULL, 0) < 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "once"))
        return once(argv[2], argv[3]);
    if ((argc == 6 || argc == 7) && !strcmp(argv[1], "gen")) {
        noise = argc == 7 ? atof(argv[6]) : 0;
        return gen(atol(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 10), argv[5]);
    }
    if (argc == 5 && !strcmp(argv[1], "jobs"))
        return bench_jobs(argv[2], atol(argv[3]), atoi(argv[4]));
    if (argc == 4 && !strcmp(argv[1], "file"))
        return bench_file(argv[2], atoi(argv[3]));
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "mem")) {
        noise = argc == 6 ? atof(argv[5]) : 0;
        return bench_mem(atol(argv[2]), atoi(argv[3]), atoi(argv[4]));
    }
    fprintf(stderr, "usage: alloc_bench gen JOBS CAPS SEED FILE [NOISE] | file FILE REPS | "
                    "mem JOBS CAPS REPS [NOISE] | once parse|plan FILE | jobs DIR JOBS REPS\n");
    return 2;
}
