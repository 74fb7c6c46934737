/* study.c — pflex study: the characterisation study on the built-in fleet.
 *
 * Sweeps every fleet run on the sim backend (worker threads over runs; each
 * run's noise is seeded by its fleet index, so the output never depends on
 * the number of threads), writes the sweep CSV, reads it back through the
 * same reader as `pflex pfi` to compute PFI, then the calibration against
 * the Emerald measurements and the allocation comparison, and hands it all
 * to the report (pflex/report.h): summary.json and report.html.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/study_predict.h"
#include "pflex/alloc.h"
#include "pflex/calib.h"
#include "pflex/csv.h"
#include "pflex/fleet.h"
#include "pflex/outfile.h"
#include "pflex/pfi.h"
#include "pflex/report.h"
#include "pflex/sim.h"
#include "lib/util/clock.h"
#include "lib/util/mix.h"
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

static const char help[] =
"usage: pflex study [options]\n"
"\n"
"The seed study's own experiment on the sim backend: its 25 headline H200\n"
"sweep groups (131 runs), 4 held-out validation groups (24 runs) and 6 H100\n"
"groups matched to headline ones (34 runs), with the models' public shapes,\n"
"FSDP full shard (FSDP2 + expert parallelism for MoE pretraining), LoRA rank\n"
"32 and the study's cap grids.  Each run is 30 minutes sampled every 5 s with\n"
"warm-up, start-up, an evaluation at 10 min and a checkpoint at 20 min,\n"
"aggregated as the mean of the top 10 % of training samples.  PFI is the\n"
"study's ratio PFI.  Needs no GPU and no input.\n"
"\n"
"Writes into the output folder:\n"
"  sweeps.csv    every measurement (sweep CSV with telemetry)\n"
"  pfi.csv       PFI per run (PFI CSV plus family, split, shape columns)\n"
"  summary.json  headline numbers (keys documented in docs/study.md)\n"
"  report.html   a self-contained page with charts (drawn by gnuplot)\n"
"and prints a summary table (or the summary JSON with --json).\n"
"\n"
"options:\n"
"  --out DIR        output folder (default study-out; created if missing)\n"
"  --seed S         seed of the simulated noise and silicon (default 1)\n"
"  --fleet NAME     study (default: the 35 groups above) or extended (a\n"
"                   generated catalogue of thousands of groups over sizes,\n"
"                   tasks and GPU kinds, each on 6 caps over its kind's range)\n"
"  --caps LIST      per-GPU caps in W for every group: 'A:B:STEP' (either\n"
"                   order) or 'C1,C2,...' (default: each group's own grid;\n"
"                   caps outside a kind's range are skipped)\n"
"  --repeats N      runs per cap, averaged (default 1, as in the study)\n"
"  --samples FILE   also write every run's per-GPU 5-s samples (phase, frame\n"
"                   buffer, power, tokens/s, counters) to FILE (large: about\n"
"                   100 MB for the study fleet)\n"
"  --range X        PFI range (default 0.30)\n"
"  --jobs N         sweep only N runs spread evenly over the fleet (quick look)\n"
"  --threads N      worker threads (default: the online CPUs)\n"
"  --data DIR       shared data folder holding emerald-demo/ for the\n"
"                   calibration (default: $PFLEX_SHARED_DATA, else\n"
"                   ../shared/data beside the repository)\n"
"  --gnuplot PROG   program that draws the charts (default gnuplot)\n"
"  --no-charts      write the report without charts\n"
"  --progress       progress on stderr even when it is not a terminal\n"
"  --json           print summary.json on stdout instead of the table\n"
"  -h, --help       this help\n"
"\n"
"EXAMPLES\n"
"  pflex study --out study-out          the study, simulated beside measured PFI\n"
"  pflex study --jobs 10 --no-charts    ten groups spread over the fleet\n"
"  pflex study --fleet extended --out ext   thousands of generated groups\n"
"\n"
"Same seed, same output: the CSVs and summary.json are byte-identical from\n"
"run to run except summary.json's runtime_s.\n"
"exit: 0 ok, 1 internal or write error, 2 bad usage.\n"
"\n"
"EXAMPLES\n"
"  pflex study                                  # writes study-out/, about 1 s\n"
"  pflex study --out study-out --json > summary.json\n"
"  pflex study --jobs 12 --no-charts --out quick  # a quick look at 12 runs\n"
"  pflex study --caps 700:200:100 --repeats 1 --seed 2 --out coarse\n";

#define MAX_CAPS PFLEX_REPORT_MAX_POINTS

struct row {
    double cap_w, power_w, throughput, step_s;
    double tm[PFLEX_TM_COUNT];
};

struct task {
    struct pflex_fleet_run fleet;
    size_t index;               /* fleet index */
    size_t nrows;
    struct row *rows;
    int failed;
    char err[256];
};

struct pool {
    struct task *tasks;
    size_t ntasks;
    const double *caps;
    size_t ncaps;
    int repeats;
    int caps_given;             /* --caps: these caps for every group, else each group's grid */
    uint64_t seed;
    atomic_size_t next;
    atomic_size_t done;
    int progress;
    pthread_mutex_t lock;       /* stderr progress line */
};

/* Sweep one group: its caps (or --caps within the kind's range) from high
 * to low, `repeats` 30-minute runs at each, each aggregated as the study
 * aggregates a run (pflex_sim_job_run). */
static void sweep_one(struct pool *p, struct task *t)
{
    pflex_error_t err = {{0}};
    pflex_sim_job_t *job = NULL;
    if (pflex_sim_job_create(&t->fleet.desc, pflex_mix64(p->seed ^ pflex_mix64(t->index)), &job, &err) < 0)
        goto fail;
    const struct pflex_gpu_kind *kind = pflex_sim_job_kind(job);
    const double *caps = p->caps_given ? p->caps : t->fleet.caps_w;
    size_t ncaps = p->caps_given ? p->ncaps : t->fleet.ncaps;
    t->rows = calloc(ncaps * (size_t)p->repeats, sizeof *t->rows);
    if (!t->rows) {
        pflex_error_set(&err, "out of memory");
        goto fail;
    }
    for (size_t c = ncaps; c-- > 0;) {
        double cap = caps[c];
        if (cap < kind->min_cap_w - 1e-9 || cap > kind->max_cap_w + 1e-9)
            continue;
        for (int k = 0; k < p->repeats; k++) {
            struct pflex_sim_run_opts o = PFLEX_SIM_RUN_DEFAULTS;
            struct pflex_sim_measure m;
            o.run = (unsigned)k;
            if (pflex_sim_job_run(job, cap, &o, NULL, 0, NULL, &m, &err) < 0)
                goto fail;
            struct row *r = &t->rows[t->nrows++];
            r->cap_w = cap;
            r->power_w = m.power_w;
            r->throughput = m.throughput;
            r->step_s = m.step_s;
            memcpy(r->tm, m.tm, sizeof r->tm);
        }
    }
    pflex_sim_job_destroy(job);
    return;
fail:
    pflex_sim_job_destroy(job);
    t->failed = 1;
    snprintf(t->err, sizeof t->err, "%.63s: %.180s", t->fleet.desc.name, err.text);
}

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->ntasks)
            return NULL;
        sweep_one(p, &p->tasks[i]);
        size_t d = atomic_fetch_add(&p->done, 1) + 1;
        if (p->progress == 2) {          /* a terminal: one line, redrawn */
            pthread_mutex_lock(&p->lock);
            fprintf(stderr, "\rpflex study: swept %zu/%zu runs", d, p->ntasks);
            if (d == p->ntasks)
                fputc('\n', stderr);
            pthread_mutex_unlock(&p->lock);
        } else if (p->progress && (d * 10 / p->ntasks != (d - 1) * 10 / p->ntasks)) {
            pthread_mutex_lock(&p->lock);
            fprintf(stderr, "pflex study: swept %zu/%zu runs\n", d, p->ntasks);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

static int run_pool(struct pool *p, int threads)
{
    pthread_t tid[64];
    int started = 0;
    if (threads > 64)
        threads = 64;
    if ((size_t)threads > p->ntasks)
        threads = (int)p->ntasks;
    for (; started < threads - 1; started++)
        if (pthread_create(&tid[started], NULL, worker, p) != 0)
            break;
    worker(p);                  /* the calling thread works too */
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    return 0;
}

/* mkdir -p */
static int make_dir(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = buf + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(buf, 0777) < 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    if (mkdir(buf, 0777) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* The output files are written as one set (pflex/outfile.h): each to a
 * temporary file beside its name (never through a symbolic link), and all
 * renamed into place by commit_outs only once every one is whole, so that
 * a failure leaves the last run's set as it was: never a new sweeps.csv
 * beside an old summary.json.  What is not committed, drop_outs removes. */
enum { MAX_OUTS = 8 };
static pflex_outfile_t *outs[MAX_OUTS];
static size_t nouts;

static FILE *open_out_path(const char *path)
{
    pflex_error_t err;
    if (nouts == MAX_OUTS) {
        cli_error("study", "%s: too many output files", path);
        return NULL;
    }
    if (pflex_outfile_begin(path, NULL, &outs[nouts], &err) < 0) {
        cli_error("study", "%s", err.text);
        return NULL;
    }
    return pflex_outfile_stream(outs[nouts++]);
}

static FILE *open_out(const char *dir, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    return open_out_path(path);
}

/* The output whose stream f is (still open). */
static pflex_outfile_t *out_of(FILE *f)
{
    for (size_t i = 0; i < nouts; i++)
        if (outs[i] && pflex_outfile_stream(outs[i]) == f)
            return outs[i];
    return NULL;
}

/* Flush, fsync and close one output (not yet in place). */
static int close_out(FILE *f, const char *path)
{
    pflex_error_t err;
    pflex_outfile_t *o = out_of(f);
    if (!o || pflex_outfile_finish(o, &err) < 0) {
        cli_error("study", "%s", o ? err.text : "internal error: not an output");
        return -1;
    }
    (void)path;
    return 0;
}

static int commit_outs(void)
{
    pflex_error_t err;
    for (size_t i = 0; i < nouts; i++) {
        pflex_outfile_t *o = outs[i];
        outs[i] = NULL;
        if (pflex_outfile_commit(o, &err) < 0) {
            cli_error("study", "%s", err.text);
            return -1;
        }
    }
    nouts = 0;
    return 0;
}

static void drop_outs(void)
{
    for (size_t i = 0; i < nouts; i++)
        pflex_outfile_abort(outs[i]);
    nouts = 0;
}

/* Default caps: the union of the fleet's kinds' ranges, every 50 W. */
static void default_caps(double *caps, size_t *n)
{
    const struct pflex_gpu_kind *a = pflex_gpu_kind_find("H200-SXM-141GB");
    const struct pflex_gpu_kind *b = pflex_gpu_kind_find("H100-SXM5-80GB");
    double hi = fmax(a ? a->max_cap_w : 700, b ? b->max_cap_w : 700);
    double lo = fmin(a ? a->min_cap_w : 200, b ? b->min_cap_w : 200);
    *n = 0;
    for (double c = hi; c >= lo - 1e-9 && *n < MAX_CAPS; c -= 50)
        caps[(*n)++] = c;
}

/* Writes path's temporary file, whose name it then leaves in path (len
 * bytes), to be read back before the set is committed. */
static int write_sweeps(char *path, size_t len, const struct task *tasks, size_t n)
{
    FILE *f = open_out_path(path);
    if (!f)
        return -1;
    fprintf(f, "# pflex study: simulated power-cap sweeps of the built-in fleet\n");
    pflex_sweep_write_header(f, 1);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < tasks[i].nrows; k++) {
            const struct row *r = &tasks[i].rows[k];
            pflex_sweep_write_row(f, 1, tasks[i].fleet.desc.name, tasks[i].fleet.desc.gpu,
                                  tasks[i].fleet.gpus, r->cap_w, r->power_w, r->throughput, r->tm);
        }
    pflex_outfile_t *o = out_of(f);
    if (close_out(f, path) < 0)
        return -1;
    snprintf(path, len, "%s", pflex_outfile_temp_path(o));
    return 0;
}

static void put_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
}

/* A row per group: the columns of issue 9 first, then the PFI CSV columns
 * (SPEC section 3) that `pflex allocate --pfi` reads, then the layout. */
/* Leaves the temporary file's name in tmp (len bytes), to be read back
 * before the set is committed. */
static int write_pfi(const char *dir, const struct pflex_report_run *runs, size_t n, char *tmp,
                     size_t len)
{
    char path[PATH_MAX];
    FILE *f = open_out(dir, "pfi.csv", path, sizeof path);
    if (!f)
        return -1;
    fputs("group,set,model,arch,task,gpus,gpu,seq_len,batch,ep,compile,checkpointing,pfi,"
          "pfi_grid4,pfi_measured,job,power_w,throughput,metric,grid,cap_w,pfi_loss_area,range,"
          "shed_flex1,shed_flex2,shed_flex3,family,split,match,params_b,global_batch,dp,tp,pp,"
          "x_max,step_s\n", f);
    for (size_t i = 0; i < n; i++) {
        const struct pflex_report_run *r = &runs[i];
        const struct pflex_job_desc *d = &r->fleet.desc;
        pflex_csv_write_field(f, r->fleet.label);
        fprintf(f, ",%s,%s,%s,%s,%d,%s,%d,%d,%d,%d,%d,", r->fleet.set, r->fleet.model,
                r->fleet.arch, r->fleet.task, r->fleet.gpus, d->gpu, d->seq_len, d->micro_batch,
                d->ep, r->fleet.compile, d->act_ckpt);
        put_num(f, r->pfi_valid ? r->pfi : NAN);
        fputc(',', f);
        put_num(f, r->pfi_grid4);
        fputc(',', f);
        put_num(f, r->fleet.measured_pfi);
        fprintf(f, ",%s,%.10g,%.10g,ratio,", d->name, r->p0_w, r->t0);
        for (size_t k = 0; k < r->npoints; k++)
            fprintf(f, "%s%.0f", k ? "/" : "", r->cap_w[k]);
        fprintf(f, ",%.10g,", r->cap0_w);
        put_num(f, r->pfi_loss_area);
        fprintf(f, ",%.10g,%.10g,%.10g,%.10g,%s,%s,%s,%g,%d,%d,%d,%d,%.10g,%.6g\n",
                r->range_used, r->shed[1], r->shed[2], r->shed[3], r->fleet.family,
                pflex_fleet_split_name(r->fleet.split),
                r->partner >= 0 ? runs[r->partner].fleet.desc.name : "", d->params_b,
                d->global_batch, d->dp, d->tp, d->pp, r->x_max, r->step_s);
    }
    pflex_outfile_t *o = out_of(f);
    if (close_out(f, path) < 0)
        return -1;
    snprintf(tmp, len, "%s", pflex_outfile_temp_path(o));
    return 0;
}

/* The calibration against the Emerald measurements (pflex/calib.h): the
 * simulated equivalents of the measured A100 jobs, normalised throughput
 * cap by cap.  Never fails the study: the section says why it is missing. */
static void calibrate(const char *data_dir, const char *why_not, uint64_t seed,
                      struct pflex_report_calib_job *jobs, size_t max,
                      struct pflex_report_calib *cal)
{
    struct pflex_calib_result res[PFLEX_REPORT_MAX_CALIB];
    pflex_error_t err;
    size_t n = 0;
    memset(cal, 0, sizeof *cal);
    if (!data_dir) {
        snprintf(cal->note, sizeof cal->note, "%.250s", why_not);
        return;
    }
    if (pflex_calibrate_emerald(data_dir, seed, res, max, &n, &err) < 0) {
        snprintf(cal->note, sizeof cal->note, "calibration failed: %.200s", err.text);
        return;
    }
    if (n == 0) {
        snprintf(cal->note, sizeof cal->note, "the Emerald sweep holds none of the calibrated jobs");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct pflex_report_calib_job *j = &jobs[i];
        memset(j, 0, sizeof *j);
        snprintf(j->job, sizeof j->job, "%.63s", res[i].measured_job);
        snprintf(j->sim_job, sizeof j->sim_job, "%.63s", res[i].preset);
        j->npoints = res[i].ncaps < PFLEX_REPORT_MAX_POINTS ? res[i].ncaps : PFLEX_REPORT_MAX_POINTS;
        for (size_t k = 0; k < j->npoints; k++) {
            j->cap_w[k] = res[i].cap_w[k];
            j->measured[k] = res[i].measured[k];
            j->simulated[k] = res[i].simulated[k];
        }
        j->rmse = res[i].rmse;
        j->pfi_measured = res[i].pfi_measured;
        j->pfi_simulated = res[i].pfi_simulated;
    }
    cal->done = 1;
    cal->njobs = n;
    cal->jobs = jobs;
    snprintf(cal->note, sizeof cal->note,
             "%zu measured A100-SXM4 jobs of the Emerald AI field demonstration "
             "(emerald-demo/data/dvfs_sweep.csv) against the same jobs described to the simulator; "
             "RMSE of normalised throughput over caps %.0f-%.0f W, ratio PFI over the measured caps",
             n, PFLEX_CALIB_RMSE_MIN_W, PFLEX_CALIB_RMSE_MAX_W);
}

/* The study's policies (pflex/report.h order) as pflex policies. */
static const enum pflex_policy alloc_policies[PFLEX_REPORT_NPOL] = {
    PFLEX_POLICY_EQUAL, PFLEX_POLICY_PFI_WEIGHTED, PFLEX_POLICY_PFI, PFLEX_POLICY_OPTIMAL,
};

/* One cut planned with every study policy under one objective: into c's
 * throughput and gap columns (throughput) or its progress ones. */
static int alloc_cut(const struct pflex_alloc_problem *prob, const struct pflex_report_alloc *a,
                     struct pflex_report_cut *c, pflex_error_t *err)
{
    struct pflex_alloc_comparison cmp;
    if (pflex_alloc_compare(prob, &cmp, err) < 0)
        return -1;
    const double te = cmp.score[PFLEX_POLICY_EQUAL].objective;
    const double to = cmp.score[PFLEX_POLICY_OPTIMAL].objective;
    for (int p = 0; p < PFLEX_REPORT_NPOL; p++) {
        const struct pflex_alloc_score *sc = &cmp.score[alloc_policies[p]];
        double g = pflex_alloc_gap_recovered(te, sc->objective, to);
        if (prob->objective == PFLEX_OBJECTIVE_PROGRESS) {
            c->progress[p] = sc->objective / a->gpus;
            c->progress_gap_recovered[p] = g;
            continue;
        }
        c->throughput[p] = sc->throughput;
        c->feasible[p] = cmp.feasible[alloc_policies[p]];
        c->sla_violations[p] = sc->sla_violations;
        c->gap_recovered[p] = g;
        c->recovered_per_job[p] = cmp.per_job_recovered[alloc_policies[p]];
    }
    if (prob->objective == PFLEX_OBJECTIVE_THROUGHPUT)
        c->gap_bound = cmp.gap_bound;
    return 0;
}

/* Equal, pfi-weighted, pfi and optimal on the H200 main runs at cuts of 0%
 * to 40% in 5% steps (the study's §6); the PFI policies use each run's
 * ratio PFI measured on its curve. */
static int allocate(const struct pflex_report_run *runs, const struct pflex_curve *curves, size_t n,
                    struct pflex_report_alloc *a)
{
    memset(a, 0, sizeof *a);
    struct pflex_alloc_job *jobs = calloc(n ? n : 1, sizeof *jobs);
    if (!jobs)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct pflex_report_run *r = &runs[i];
        if (r->fleet.split != PFLEX_FLEET_MAIN || !r->pfi_valid)
            continue;
        struct pflex_alloc_job *j = &jobs[m++];
        j->name = r->fleet.desc.name;
        j->gpus = r->fleet.gpus;
        j->p0_w = r->p0_w;
        j->t0 = r->t0;
        j->cap0_w = r->cap0_w;
        j->weight = 1;
        j->floor = 0;
        j->x_hi = curves[i].x_max;
        j->pfi = NAN;           /* the ratio PFI of its curve */
        j->npoints = curves[i].n;
        j->x = curves[i].x;
        j->loss = curves[i].loss;
        a->baseline_throughput += r->t0;
        a->gpus += r->fleet.gpus;
    }
    if (m < 2) {
        snprintf(a->note, sizeof a->note, "fewer than two H200 main runs with a PFI in this study");
        free(jobs);
        return 0;
    }
    struct pflex_alloc_problem prob = {.njobs = m, .jobs = jobs,
                                       .objective = PFLEX_OBJECTIVE_THROUGHPUT};
    a->njobs = m;
    a->baseline_w = pflex_alloc_baseline_w(&prob);
    for (int k = 0; k < PFLEX_REPORT_MAX_CUTS; k++) {
        struct pflex_report_cut *c = &a->cuts[a->ncuts];
        c->cut = 0.05 * k;
        c->budget_w = (1 - c->cut) * a->baseline_w;
        prob.budget_w = c->budget_w;
        pflex_error_t err;
        int rc = 0;
        prob.objective = PFLEX_OBJECTIVE_THROUGHPUT;
        rc = alloc_cut(&prob, a, c, &err);
        prob.objective = PFLEX_OBJECTIVE_PROGRESS;
        if (rc == 0)
            rc = alloc_cut(&prob, a, c, &err);
        if (rc < 0) {
            snprintf(a->note, sizeof a->note, "allocation failed at a %.0f%% cut: %.180s",
                     100 * c->cut, err.text);
            free(jobs);
            return 0;
        }
        a->ncuts++;
    }
    a->done = 1;
    snprintf(a->note, sizeof a->note, "H200 main runs, objective: total tokens/s; PFI: the "
             "study's ratio PFI measured on each run's curve");
    free(jobs);
    return 0;
}

/* The shared data folder: --data, else $PFLEX_SHARED_DATA, else
 * ../shared/data beside the repository (found from the binary, which sits in
 * BUILD/ under the repository, or from the working directory).  NULL, with
 * the reason in why, when none holds the Emerald sweep. */
static const char *find_data(const char *opt, char *why, size_t why_len)
{
    static char found[PATH_MAX];
    char probe[PATH_MAX], repo[PATH_MAX];
    if (opt) {
        if (pflex_calib_emerald_path(opt, probe, sizeof probe) == 0)
            return opt;
        snprintf(why, why_len, "--data %.200s holds no emerald-demo/data/dvfs_sweep.csv", opt);
        return NULL;
    }
    const char *env = getenv("PFLEX_SHARED_DATA");
    if (env && *env) {
        if (pflex_calib_emerald_path(env, probe, sizeof probe) == 0)
            return env;
        snprintf(why, why_len, "PFLEX_SHARED_DATA=%.200s holds no emerald-demo/data/dvfs_sweep.csv",
                 env);
        return NULL;
    }
    ssize_t n = readlink("/proc/self/exe", repo, sizeof repo - 1);
    if (n > 0) {
        repo[n] = '\0';
        for (int up = 0; up < 2; up++) {        /* drop pflex, then BUILD */
            char *slash = strrchr(repo, '/');
            if (slash)
                *slash = '\0';
        }
        snprintf(found, sizeof found, "%.3000s/../shared/data", repo);
        if (pflex_calib_emerald_path(found, probe, sizeof probe) == 0)
            return found;
    }
    snprintf(found, sizeof found, "../shared/data");
    if (pflex_calib_emerald_path(found, probe, sizeof probe) == 0)
        return found;
    snprintf(why, why_len, "no shared data folder holding emerald-demo/ was found beside the "
             "repository; give one with --data DIR or PFLEX_SHARED_DATA");
    return NULL;
}

static void print_row(const char *label, const json_t *st)
{
    json_int_t n = json_integer_value(json_object_get(st, "n"));
    printf("  %-26s %5lld", label, (long long)n);
    static const char *const keys[] = {"mean", "median", "q1", "q3"};
    for (int k = 0; k < 4; k++) {
        json_t *v = json_object_get(st, keys[k]);
        if (json_is_number(v))
            printf(" %7.3f", json_number_value(v));
        else
            printf(" %7s", "-");
    }
    putchar('\n');
}

/* The allocation table: tokens/s per job of each policy and the gap each
 * recovers, per cut. */
static void print_alloc(const struct pflex_report_alloc *a)
{
    const char *const *pol = pflex_report_pol_names;
    printf("allocation over %zu H200 jobs (tokens/s per job, scored on the measured curves; "
           "recovered = share of the equal-optimal gap)\n", a->njobs);
    printf("  %5s %9s %12s %9s %9s %13s %9s %12s\n", "cut", pol[0], pol[1], pol[2], pol[3],
           "rec pfi-w.", "rec pfi", "pfi-w.-equal");
    for (size_t i = 0; i < a->ncuts; i++) {
        const struct pflex_report_cut *c = &a->cuts[i];
        double nj = (double)a->njobs;
        printf("  %4.0f%% %9.0f %12.0f %9.0f %9.0f", 100 * c->cut, c->throughput[0] / nj,
               c->throughput[1] / nj, c->throughput[2] / nj, c->throughput[3] / nj);
        for (int p = PFLEX_REPORT_POL_PFI_WEIGHTED; p <= PFLEX_REPORT_POL_PFI; p++) {
            if (isfinite(c->gap_recovered[p]))
                printf(" %*.1f%%", p == 1 ? 12 : 8, 100 * c->gap_recovered[p]);
            else
                printf(" %*s", p == 1 ? 13 : 9, "-");
        }
        printf(" %+12.0f\n", c->recovered_per_job[PFLEX_REPORT_POL_PFI_WEIGHTED]);
        int all = 1;
        for (int p = 0; p < PFLEX_REPORT_NPOL; p++)
            all = all && c->feasible[p];
        if (!all) {
            printf("         (not every policy meets this budget within the measured ranges:");
            for (int p = 0; p < PFLEX_REPORT_NPOL; p++)
                if (!c->feasible[p])
                    printf(" %s", pol[p]);
            printf(")\n");
        }
    }
}

static void print_table(const struct pflex_report *r, const json_t *S, const char *dir, int charts)
{
    printf("pflex study: %zu sweep group%s on the sim backend, %s, %d run%s per cap "
           "(30 min, 5-s samples, top-10 %% aggregate), seed %llu, %.1f s\n", r->nruns,
           r->nruns == 1 ? "" : "s", r->cap_step_w < 0 ? "each group's cap grid" : "caps given",
           r->repeats, r->repeats == 1 ? "" : "s", (unsigned long long)r->seed, r->runtime_s);
    printf("ratio PFI, each group's grid (H200 headline groups unless noted)\n");
    printf("  %-26s %5s %7s %7s %7s %7s\n", "group", "runs", "mean", "median", "q1", "q3");
    print_row("all", pflex_report_json_get(S, "pfi", "all", NULL));
    print_row("dense", pflex_report_json_get(S, "pfi", "by_arch", "dense"));
    print_row("MoE", pflex_report_json_get(S, "pfi", "by_arch", "moe"));
    print_row("pretraining", pflex_report_json_get(S, "pfi", "by_task", "pretrain"));
    print_row("fine-tuning, full", pflex_report_json_get(S, "pfi", "by_task", "finetune_full"));
    print_row("fine-tuning, LoRA", pflex_report_json_get(S, "pfi", "by_task", "finetune_lora"));
    static const char *const g[] = {"1", "2", "4", "8", "16", "32"};
    for (int i = 0; i < 6; i++) {
        char label[32];
        snprintf(label, sizeof label, "%s GPU%s", g[i], i ? "s" : "");
        print_row(label, pflex_report_json_get(S, "pfi", "by_gpus", g[i]));
    }
    print_row("validation (H200)", pflex_report_json_get(S, "pfi", "by_split", "validation"));
    print_row("matched pairs on H200", pflex_report_json_get(S, "h100_vs_h200", "h200", NULL));
    print_row("matched pairs on H100", pflex_report_json_get(S, "h100_vs_h200", "h100", NULL));
    const json_t *dram = pflex_report_json_get(S, "correlation", "dram_active", "pearson");
    if (json_is_number(dram))
        printf("  PFI vs dram_active at the highest cap: Pearson r = %.2f\n", json_number_value(dram));
    if (r->calib.done) {
        printf("calibration vs Emerald: curve RMSE max %.3f, |ratio PFI error| max %.3f over %zu jobs\n",
               json_number_value(pflex_report_json_get(S, "calibration", "rmse_max", NULL)),
               json_number_value(pflex_report_json_get(S, "calibration", "pfi_error_max", NULL)), r->calib.njobs);
    } else {
        printf("calibration vs Emerald: skipped (%s)\n", r->calib.note);
    }
    if (r->alloc.done)
        print_alloc(&r->alloc);
    else
        printf("allocation: skipped (%s)\n", r->alloc.note);
    printf("wrote %s/sweeps.csv, %s/pfi.csv, %s/summary.json, %s/report.html (%d charts)\n", dir,
           dir, dir, dir, charts);
}

/* --samples: every run's per-GPU 5-s samples, phases included, in fleet
 * and cap order.  Written after the sweep, one group at a time: each run's
 * noise depends only on (seed, group, cap, run), so these are the very
 * samples the sweep aggregated. */
static int write_samples(const char *path, const struct task *tasks, size_t n, uint64_t seed,
                         int repeats)
{
    FILE *f = open_out_path(path);      /* atomic, committed with the others */
    struct pflex_sim_sample *smp = NULL;
    size_t cap_n = 0;
    if (!f)
        return -1;
    fputs("# pflex study: per-GPU samples every 5 s of each 30-minute run (docs/sim-model.md)\n"
          "job,gpu,gpu_index,cap_w,run,t_s,phase,fb_used_gib,power_w,throughput", f);
    for (int k = 0; k < PFLEX_TM_COUNT; k++)
        fprintf(f, ",%s", pflex_tm_name((enum pflex_tm)k));
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        pflex_error_t err;
        pflex_sim_job_t *job;
        if (pflex_sim_job_create(&tasks[i].fleet.desc, pflex_mix64(seed ^ pflex_mix64(tasks[i].index)), &job,
                                 &err) < 0) {
            cli_error("study", "%s: %s", tasks[i].fleet.desc.name, err.text);
            goto fail;
        }
        double last = -1;
        for (size_t r = 0; r < tasks[i].nrows; r++) {
            double cap = tasks[i].rows[r].cap_w;
            if (cap == last)
                continue;       /* the repeats of one cap come together */
            last = cap;
            for (int k = 0; k < repeats; k++) {
                struct pflex_sim_run_opts o = PFLEX_SIM_RUN_DEFAULTS;
                size_t want;
                o.run = (unsigned)k;
                if (pflex_sim_job_run(job, cap, &o, NULL, 0, &want, NULL, &err) < 0)
                    goto fail_job;
                if (want > cap_n) {
                    free(smp);
                    smp = malloc(want * sizeof *smp);
                    cap_n = smp ? want : 0;
                    if (!smp) {
                        pflex_error_set(&err, "out of memory");
                        goto fail_job;
                    }
                }
                if (pflex_sim_job_run(job, cap, &o, smp, cap_n, &want, NULL, &err) < 0)
                    goto fail_job;
                for (size_t q = 0; q < want; q++) {
                    const struct pflex_sim_sample *x = &smp[q];
                    fprintf(f, "%s,%s,%u,%.10g,%d,%.0f,%s,%.3f,%.6g,%.6g", tasks[i].fleet.desc.name,
                            tasks[i].fleet.desc.gpu, x->gpu, cap, k, x->t_s,
                            pflex_sim_phase_name(x->phase), x->fb_used_gib, x->power_w,
                            x->throughput);
                    for (int t = 0; t < PFLEX_TM_COUNT; t++) {
                        fputc(',', f);
                        if (isfinite(x->tm[t]))
                            fprintf(f, "%.6g", x->tm[t]);
                    }
                    fputc('\n', f);
                }
            }
        }
        pflex_sim_job_destroy(job);
        continue;
fail_job:
        cli_error("study", "%s: %s", tasks[i].fleet.desc.name, err.text);
        pflex_sim_job_destroy(job);
        goto fail;
    }
    free(smp);
    return close_out(f, path);
fail:
    free(smp);
    return -1;                          /* the caller aborts every output */
}

/* --- the study's comparison: simulated beside measured ------------------ */

/* The study's three clusters: dense (PT + LoRA), MoE PT, MoE LoRA. */
static int cluster_of(const struct pflex_fleet_run *f)
{
    return !f->is_moe ? 0 : f->is_finetune ? 2 : 1;
}

/* Mid-ranks of v[0..n) into rank[], and the tie term sum(t^3 - t). */
static double midranks(const double *v, size_t n, double *rank)
{
    size_t *p = malloc(n * sizeof *p);
    double ties = 0;
    if (!p)
        return NAN;
    gsl_sort_index(p, v, 1, n);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && v[p[j + 1]] == v[p[i]])
            j++;
        double t = (double)(j - i + 1);
        for (size_t k = i; k <= j; k++)
            rank[p[k]] = (double)(i + j) / 2 + 1;
        ties += t * t * t - t;
        i = j + 1;
    }
    free(p);
    return ties;
}

/* Kruskal-Wallis over the clusters and Dunn's pairwise test with Holm's
 * correction (as the study), from GSL's chi-square and normal tails. */
static json_t *kruskal_dunn(const double *v, const int *grp, size_t n)
{
    double *rank = malloc((n ? n : 1) * sizeof *rank);
    json_t *o = json_object();
    if (!rank || n < 3) {
        free(rank);
        return o;
    }
    double ties = midranks(v, n, rank), rs[3] = {0}, N = (double)n;
    size_t cnt[3] = {0};
    for (size_t i = 0; i < n; i++) {
        rs[grp[i]] += rank[i];
        cnt[grp[i]]++;
    }
    double h = 0;
    int k = 0;
    for (int g = 0; g < 3; g++)
        if (cnt[g]) {
            h += rs[g] * rs[g] / (double)cnt[g];
            k++;
        }
    h = 12 / (N * (N + 1)) * h - 3 * (N + 1);
    h /= 1 - ties / (N * N * N - N);
    json_object_set_new(o, "kruskal_h", json_real(h));
    json_object_set_new(o, "kruskal_p", json_real(k > 1 ? gsl_cdf_chisq_Q(h, k - 1) : NAN));
    static const char *const names[] = {"dense-moe_pt", "dense-moe_lora", "moe_pt-moe_lora"};
    static const int pa[] = {0, 0, 1}, pb[] = {1, 2, 2};
    double p[3], s2 = (N * (N + 1) / 12 - ties / (12 * (N - 1)));
    for (int c = 0; c < 3; c++) {
        int a = pa[c], b = pb[c];
        if (!cnt[a] || !cnt[b]) {
            p[c] = NAN;
            continue;
        }
        double z = (rs[a] / cnt[a] - rs[b] / cnt[b]) / sqrt(s2 * (1.0 / cnt[a] + 1.0 / cnt[b]));
        p[c] = 2 * gsl_cdf_ugaussian_Q(fabs(z));
    }
    /* Holm: sort the p-values, multiply the i-th smallest by (m - i), keep
     * the adjusted values monotone. */
    size_t ord[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (!(p[ord[i]] <= p[ord[j]])) {
                size_t t = ord[i];
                ord[i] = ord[j];
                ord[j] = t;
            }
    json_t *d = json_object();
    double prev = 0;
    for (int i = 0; i < 3; i++) {
        double adj = fmin(1, fmax(prev, p[ord[i]] * (3 - i)));
        prev = adj;
        json_object_set_new(d, names[ord[i]], json_real(adj));
    }
    json_object_set_new(o, "dunn_holm_p", d);
    free(rank);
    return o;
}

static double median_of(double *v, size_t n)
{
    if (!n)
        return NAN;
    gsl_sort(v, 1, n);
    return gsl_stats_median_from_sorted_data(v, 1, n);
}

/* Per headline group simulated beside measured ratio PFI, the cluster
 * medians against the study's 1.27 / 1.43 / 2.10, Kruskal-Wallis and Dunn
 * (simulated), the H100-vs-H200 rank correlation, the grid sensitivity. */
static json_t *study_compare(const struct pflex_report_run *runs, size_t n, int print)
{
    static const double study_median[3] = {1.27, 1.43, 2.10};
    static const char *const cname[3] = {"dense", "moe_pt", "moe_lora"};
    double v[64], med_in[3][64], grid6[64], grid4[64], ha[8], hb[8], work[16];
    int grp[64];
    size_t nv = 0, nc[3] = {0}, ng = 0, nh = 0;
    json_t *o = json_object(), *groups = json_array();
    double abs_err = 0;
    size_t nerr = 0;
    if (print)
        printf("simulated beside measured ratio PFI, headline H200 groups (no PFI calibrated the "
               "simulator: real H200 runs, Emerald A100 caps and llm-foundry throughputs did):\n");
    for (size_t i = 0; i < n && nv < 64; i++) {
        const struct pflex_report_run *r = &runs[i];
        if (r->fleet.split == PFLEX_FLEET_H100 && r->partner >= 0 && r->pfi_valid
            && runs[r->partner].pfi_valid && nh < 8) {
            ha[nh] = r->pfi;
            hb[nh++] = runs[r->partner].pfi;
        }
        if (r->fleet.split != PFLEX_FLEET_MAIN || !r->pfi_valid)
            continue;
        int c = cluster_of(&r->fleet);
        v[nv] = r->pfi;
        grp[nv++] = c;
        med_in[c][nc[c]++] = r->pfi;
        if (r->fleet.ncaps == 6 && isfinite(r->pfi_grid4)) {
            grid6[ng] = r->pfi;
            grid4[ng++] = r->pfi_grid4;
        }
        json_t *g = json_object();
        json_object_set_new(g, "group", json_string(r->fleet.label));
        json_object_set_new(g, "simulated", json_real(r->pfi));
        json_object_set_new(g, "measured", isfinite(r->fleet.measured_pfi)
                                           ? json_real(r->fleet.measured_pfi) : json_null());
        json_array_append_new(groups, g);
        if (isfinite(r->fleet.measured_pfi)) {
            abs_err += fabs(r->pfi - r->fleet.measured_pfi);
            nerr++;
        }
        if (print)
            printf("  %-46s %6.2f sim  %5.2f measured\n", r->fleet.label, r->pfi,
                   r->fleet.measured_pfi);
    }
    json_object_set_new(o, "groups", groups);
    json_object_set_new(o, "mean_abs_error", nerr ? json_real(abs_err / nerr) : json_null());
    json_t *med = json_object();
    for (int c = 0; c < 3; c++) {
        json_t *m = json_object();
        double x = median_of(med_in[c], nc[c]);
        json_object_set_new(m, "n", json_integer((json_int_t)nc[c]));
        json_object_set_new(m, "simulated", isfinite(x) ? json_real(x) : json_null());
        json_object_set_new(m, "study", json_real(study_median[c]));
        json_object_set_new(med, cname[c], m);
        if (print)
            printf("  median %-9s n=%2zu  %5.2f simulated, study %.2f\n", cname[c], nc[c], x,
                   study_median[c]);
    }
    json_object_set_new(o, "medians", med);
    json_t *kw = kruskal_dunn(v, grp, nv);
    if (print && json_object_get(kw, "kruskal_h"))
        printf("  Kruskal-Wallis H = %.2f, p = %.4f (study: H = 12.37, p = 0.0021); Dunn-Holm p: "
               "dense-MoE PT %.3f, dense-MoE LoRA %.3f, MoE PT-MoE LoRA %.3f\n",
               json_number_value(json_object_get(kw, "kruskal_h")),
               json_number_value(json_object_get(kw, "kruskal_p")),
               json_number_value(pflex_report_json_get(kw, "dunn_holm_p", "dense-moe_pt", NULL)),
               json_number_value(pflex_report_json_get(kw, "dunn_holm_p", "dense-moe_lora", NULL)),
               json_number_value(pflex_report_json_get(kw, "dunn_holm_p", "moe_pt-moe_lora", NULL)));
    json_object_set_new(o, "kruskal_dunn", kw);
    double rho = nh > 2 ? gsl_stats_spearman(ha, 1, hb, 1, nh, work) : NAN;
    json_object_set_new(o, "h100_h200_spearman", isfinite(rho) ? json_real(rho) : json_null());
    double rho_g = ng > 2 ? gsl_stats_spearman(grid6, 1, grid4, 1, ng, work + 0) : NAN;
    double rel[64];
    for (size_t i = 0; i < ng; i++)
        rel[i] = grid4[i] / grid6[i] - 1;
    double med_rel = median_of(rel, ng);
    json_t *gs = json_object();
    json_object_set_new(gs, "groups", json_integer((json_int_t)ng));
    json_object_set_new(gs, "median_change", isfinite(med_rel) ? json_real(med_rel) : json_null());
    json_object_set_new(gs, "spearman", isfinite(rho_g) ? json_real(rho_g) : json_null());
    json_object_set_new(o, "grid_sensitivity", gs);
    if (print) {
        printf("  H100 vs H200 matched groups: Spearman %.3f over %zu pairs (study 0.943)\n", rho,
               nh);
        printf("  coarse grid (4 caps) vs 6 caps, 8-GPU groups: median change %+.1f %%, Spearman "
               "%.3f (study +10.7 %%, 0.940)\n", 100 * med_rel, rho_g);
        if (nerr)
            printf("  mean |simulated - measured| over %zu groups: %.3f (out of sample: the "
                   "simulator is calibrated on physical measurements only, no PFI; `make "
                   "calibrate` prints it noise-free)\n", nerr, abs_err / nerr);
    }
    return o;
}

/* A subset of n groups of the fleet at even strides, in fleet order, plus
 * the H200 partners of the H100 groups picked (so that pairs survive). */
static size_t pick_runs(enum pflex_fleet_set set, size_t total, size_t n, size_t *idx)
{
    if (n == 0 || n >= total) {
        for (size_t i = 0; i < total; i++)
            idx[i] = i;
        return total;
    }
    unsigned char *in = calloc(total, 1);
    if (!in)
        return 0;
    for (size_t i = 0; i < n; i++)
        in[i * total / n] = 1;
    for (size_t i = 0; i < total; i++) {
        struct pflex_fleet_run r;
        if (in[i] && pflex_fleet_entry(set, i, &r) == 0 && r.match >= 0
            && (size_t)r.match < total)
            in[r.match] = 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < total; i++)
        if (in[i])
            idx[k++] = i;
    free(in);
    return k;
}

/* A whole number in [lo, hi]; 0, or -1 with the usage message printed. */
static int parse_count(const char *opt, const char *s, double lo, double hi, double *out)
{
    if (cli_parse_double("study", opt, s, lo, hi, out) < 0)
        return -1;
    if (*out != floor(*out)) {
        cli_usage_error("study", "%s: '%s' is not a whole number", opt, s);
        return -1;
    }
    return 0;
}

int cmd_study(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},
        {"seed", required_argument, NULL, 's'},
        {"caps", required_argument, NULL, 'c'},
        {"fleet", required_argument, NULL, 'F'},
        {"samples", required_argument, NULL, 'S'},
        {"repeats", required_argument, NULL, 'r'},
        {"range", required_argument, NULL, 'R'},
        {"jobs", required_argument, NULL, 'j'},
        {"threads", required_argument, NULL, 't'},
        {"data", required_argument, NULL, 'd'},
        {"gnuplot", required_argument, NULL, 'g'},
        {"no-charts", no_argument, NULL, 'N'},
        {"progress", no_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out_dir = "study-out", *data_opt = NULL, *gnuplot = "gnuplot", *samples = NULL;
    double caps[MAX_CAPS], cap_step = 50, range = PFLEX_PFI_RANGE_DEFAULT, v;
    size_t ncaps = 0, njobs = 0;
    uint64_t seed = 1;
    int repeats = 1, progress = 0, json = 0, caps_given = 0, c;
    enum pflex_fleet_set set = PFLEX_FLEET_STUDY;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cpus > 0 ? (int)cpus : 1;
    default_caps(caps, &ncaps);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out_dir = optarg; break;
        case 's':
            if (parse_count("--seed", optarg, 0, 9007199254740992.0, &v) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            seed = (uint64_t)v;
            break;
        case 'c':
            if (cli_parse_caps("study", "--caps", optarg, 2, caps, MAX_CAPS, &ncaps, &cap_step))
                return PFLEX_EXIT_BAD_INPUT;
            cli_caps_sort_desc(caps, ncaps);    /* the study sweeps from high to low */
            caps_given = 1;
            break;
        case 'S': samples = optarg; break;
        case 'F':
            if (!strcmp(optarg, "study"))
                set = PFLEX_FLEET_STUDY;
            else if (!strcmp(optarg, "extended"))
                set = PFLEX_FLEET_EXTENDED;
            else
                return cli_usage_error("study", "--fleet: '%s' is not study or extended", optarg);
            break;
        case 'r':
            if (parse_count("--repeats", optarg, 1, 100, &v) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            repeats = (int)v;
            break;
        case 'R':
            if (cli_parse_double("study", "--range", optarg, 1e-6, 1.0, &range) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case 'j':
            if (parse_count("--jobs", optarg, 1, 1e9, &v) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            njobs = (size_t)v;
            break;
        case 't':
            if (parse_count("--threads", optarg, 1, 64, &v) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            threads = (int)v;
            break;
        case 'd': data_opt = optarg; break;
        case 'g': gnuplot = optarg; break;
        case 'N': gnuplot = NULL; break;
        case 'p': progress = 1; break;
        case 'J': json = 1; break;
        case 'h': return cli_help(help);
        default: return cli_bad_option("study", argv, opts);
        }
    }
    if (optind < argc)
        return cli_usage_error("study", "unexpected argument '%s'", argv[optind]);

    double t_start = pflex_mono_s();
    int rc = PFLEX_EXIT_INTERNAL;
    size_t total = pflex_fleet_size(set);
    size_t *idx = calloc(total, sizeof *idx);
    struct task *tasks = NULL;
    struct pflex_report_run *runs = NULL;
    struct pflex_curve *curves = NULL;
    pflex_sweep_t *sweep = NULL;
    json_t *summary = NULL;
    size_t n = 0, ncurves = 0;
    char path[PATH_MAX], sweeps_tmp[PATH_MAX], pfi_tmp[PATH_MAX];
    json_t *pred = NULL;
    struct pflex_report_calib_job cal_jobs[PFLEX_REPORT_MAX_CALIB];
    pflex_error_t err;
    if (!idx)
        goto out;
    n = pick_runs(set, total, njobs, idx);
    if (n == 0)
        goto out;
    tasks = calloc(n, sizeof *tasks);
    runs = calloc(n, sizeof *runs);
    curves = calloc(n, sizeof *curves);
    if (!tasks || !runs || !curves)
        goto out;
    for (size_t i = 0; i < n; i++) {
        tasks[i].index = idx[i];
        if (pflex_fleet_entry(set, idx[i], &tasks[i].fleet) < 0)
            goto out;
    }
    /* With --caps, every GPU kind in the study needs two caps within its range. */
    for (size_t i = 0; caps_given && i < n; i++) {
        const struct pflex_gpu_kind *k = pflex_gpu_kind_find(tasks[i].fleet.desc.gpu);
        size_t in = 0;
        for (size_t j = 0; k && j < ncaps; j++)
            in += caps[j] >= k->min_cap_w - 1e-9 && caps[j] <= k->max_cap_w + 1e-9;
        if (k && in < 2) {
            rc = cli_usage_error("study", "--caps: fewer than two caps within the %s range "
                                 "%.0f-%.0f W", k->name, k->min_cap_w, k->max_cap_w);
            goto out;
        }
    }
    if (make_dir(out_dir) < 0) {
        cli_error("study", "%s: %s", out_dir, strerror(errno));
        goto out;
    }

    /* Sweep. */
    struct pool pool = {.tasks = tasks, .ntasks = n, .caps = caps, .ncaps = ncaps,
                        .repeats = repeats, .seed = seed, .caps_given = caps_given,
                        .progress = isatty(STDERR_FILENO) ? 2 : progress};
    atomic_init(&pool.next, 0);
    atomic_init(&pool.done, 0);
    pthread_mutex_init(&pool.lock, NULL);
    run_pool(&pool, threads);
    pthread_mutex_destroy(&pool.lock);
    for (size_t i = 0; i < n; i++)
        if (tasks[i].failed) {
            cli_error("study", "%s", tasks[i].err);
            goto out;
        }

    /* Write the sweeps, read them back exactly as `pflex pfi` would. */
    snprintf(path, sizeof path, "%s/sweeps.csv", out_dir);
    if (write_sweeps(path, sizeof path, tasks, n) < 0)
        goto out;
    snprintf(sweeps_tmp, sizeof sweeps_tmp, "%s", path);
    if (pflex_sweep_read_file(path, NULL, &sweep, &err) < 0) {
        cli_error("study", "reading back %s", err.text);
        goto out;
    }
    if (sweep->njobs != n) {
        cli_error("study", "%s: %zu jobs read back, %zu written", path, sweep->njobs, n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const struct pflex_sweep_job *sj = &sweep->jobs[i];
        struct pflex_report_run *r = &runs[i];
        struct pflex_pfi pfi;
        r->fleet = tasks[i].fleet;
        r->index = tasks[i].index;
        r->partner = -1;
        if (strcmp(sj->name, r->fleet.desc.name) || sj->npoints > PFLEX_REPORT_MAX_POINTS) {
            cli_error("study", "%s: job %zu is '%s', expected '%s'", path, i, sj->name,
                      r->fleet.desc.name);
            goto out;
        }
        if (pflex_curve_init(&curves[i], sj->points, sj->npoints, &err) < 0) {
            cli_error("study", "%s: job '%s': %s", path, sj->name, err.text);
            goto out;
        }
        ncurves = i + 1;
        pflex_pfi_compute(&curves[i], range, &pfi);
        r->pfi_loss_area = pfi.valid ? pfi.pfi : NAN;
        r->range_used = pfi.range_used;
        /* The study's ratio PFI, on the group's grid and on the coarse one. */
        struct pflex_pfi_ratio ratio;
        if (pflex_pfi_ratio(sj->points, sj->npoints, NULL, 0, &ratio, &err) < 0) {
            cli_error("study", "%s: job '%s': %s", path, sj->name, err.text);
            goto out;
        }
        r->pfi_valid = ratio.valid;
        r->pfi = ratio.valid ? ratio.pfi : NAN;
        static const double grid4[] = {200, 500, 600, 700};
        r->pfi_grid4 = NAN;
        if (pflex_pfi_ratio(sj->points, sj->npoints, grid4, 4, &ratio, NULL) == 0 && ratio.valid)
            r->pfi_grid4 = ratio.pfi;
        memcpy(r->shed, pfi.shed, sizeof r->shed);
        r->x_max = curves[i].x_max;
        r->p0_w = curves[i].p0_w;
        r->t0 = curves[i].t0;
        r->cap0_w = curves[i].cap0_w;
        r->npoints = sj->npoints;
        for (size_t k = 0; k < sj->npoints; k++) {
            r->cap_w[k] = sj->points[k].cap_w;
            r->power_w[k] = sj->points[k].power_w;
            r->throughput[k] = sj->points[k].throughput;
        }
        for (int k = 0; k < PFLEX_TM_COUNT; k++)
            r->tm[k] = sj->telemetry && sj->npoints
                       ? sj->telemetry[(sj->npoints - 1) * PFLEX_TM_COUNT + k] : NAN;
        /* Step time at the highest cap: the mean over its repeats. */
        double sum = 0;
        int cnt = 0;
        for (size_t k = 0; k < tasks[i].nrows; k++)
            if (fabs(tasks[i].rows[k].cap_w - r->cap0_w) < 1e-6) {
                sum += tasks[i].rows[k].step_s;
                cnt++;
            }
        r->step_s = cnt ? sum / cnt : NAN;
    }
    for (size_t i = 0; i < n; i++)
        if (runs[i].fleet.split == PFLEX_FLEET_H100)
            for (size_t k = 0; k < n; k++)
                if ((int)runs[k].index == runs[i].fleet.match)
                    runs[i].partner = (int)k;

    struct pflex_report rep = {.seed = seed, .range = range, .repeats = repeats,
                               .cap_step_w = caps_given ? cap_step : -1, .ncaps = ncaps, .caps_w = caps,
                               .nruns = n, .runs = runs};
    char why[512] = "";
    const char *data_dir = find_data(data_opt, why, sizeof why);
    calibrate(data_dir, why, seed, cal_jobs, PFLEX_REPORT_MAX_CALIB, &rep.calib);
    if (allocate(runs, curves, n, &rep.alloc) < 0)
        goto out;
    rep.runtime_s = pflex_mono_s() - t_start;

    if (write_pfi(out_dir, runs, n, pfi_tmp, sizeof pfi_tmp) < 0)
        goto out;
    if (samples && write_samples(samples, tasks, n, seed, repeats) < 0)
        goto out;
    summary = pflex_report_summary(&rep);
    if (!summary)
        goto out;
    {   /* the study comparison, before runtime_s (which stays last) */
        json_t *rt = json_incref(json_object_get(summary, "runtime_s"));
        json_object_del(summary, "runtime_s");
        json_object_set_new(summary, "study", study_compare(runs, n, 0));
        /* The study's prediction sections (Table 3, the H100 transfer,
         * §6) on its own sweeps, read back as `pflex train --study` would. */
        if (study_predict(sweeps_tmp, pfi_tmp, 500, (unsigned long)seed, &pred) == PFLEX_EXIT_OK)
            json_object_set_new(summary, "prediction", json_incref(pred));
        else
            cli_error("study", "note: the prediction sections are left out of the report");
        json_object_set_new(summary, "runtime_s", rt ? rt : json_null());
    }
    FILE *f = open_out(out_dir, "summary.json", path, sizeof path);
    if (!f)
        goto out;
    json_dumpf(summary, f, CLI_JSON_FLAGS);
    fputc('\n', f);
    if (close_out(f, path) < 0)
        goto out;
    f = open_out(out_dir, "report.html", path, sizeof path);
    if (!f)
        goto out;
    int charts = 0;
    if (pflex_report_write_html(&rep, summary, gnuplot, f, &charts, &err) < 0) {
        cli_error("study", "%s: %s", path, err.text);
        goto out;               /* (drop_outs removes it) */
    }
    if (close_out(f, path) < 0 || commit_outs() < 0)
        goto out;
    if (gnuplot && charts == 0)
        cli_error("study", "note: no charts drawn (is gnuplot installed?); the report says where "
                  "they would be");
    if (json) {
        if (cli_json_print(json_incref(summary)) < 0)
            goto out;
    } else {
        print_table(&rep, summary, out_dir, charts);
        json_decref(study_compare(runs, n, 1));
        if (pred)
            study_predict_print(stdout, pred);
    }
    rc = fflush(stdout) == 0 ? PFLEX_EXIT_OK : PFLEX_EXIT_INTERNAL;
out:
    drop_outs();
    json_decref(pred);
    json_decref(summary);
    for (size_t i = 0; i < ncurves; i++)
        pflex_curve_fini(&curves[i]);
    if (tasks)
        for (size_t i = 0; i < n; i++)
            free(tasks[i].rows);
    pflex_sweep_destroy(sweep);
    free(curves);
    free(runs);
    free(tasks);
    free(idx);
    return rc;
}
