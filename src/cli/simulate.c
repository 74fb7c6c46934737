/* simulate.c — pflex simulate: a site of GPUs through a grid day, every
 * policy side by side on the same fleet and noise (pflex/site/simulate.h,
 * docs/simulate.md).  Options, inputs and output only; the engine is the
 * library's. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "controller/controller.h"
#include "controller/sim_site.h"
#include "pflex/flex/alloc.h"
#include "pflex/io/csv.h"
#include "pflex/net/openadr.h"
#include "pflex/io/outfile.h"
#include "pflex/flex/pfi.h"
#include "pflex/site/simulate.h"
#include "pflex/io/sweep.h"
#include "cli/simulate_levers.h"
#include "cli/site.h"               /* cli_curve_fit_json */

static const char help[] =
"usage: pflex simulate [SWEEP.csv] (--day srp|aps|caiso | --schedule FILE |\n"
"                      --openadr FILE | --target SPEC) [options]\n"
"\n"
"Runs a site of GPUs through a grid day, period by period, with every policy\n"
"side by side on the same jobs, the same limit and the same noise: equal cuts,\n"
"Eq. 2 with measured PFI (eq2-measured) and with predicted PFI\n"
"(eq2-predicted, with --pfi), Eq. 2 with PFI = 1 (tpw, throughput per watt),\n"
"the controller's online learner from a cold prior (online-cold: L = x) and\n"
"from the predicted PFI (online-warm), and the oracle (optimal on the true\n"
"curves).  Jobs run measured curves (a sweep; --columns maps foreign headers),\n"
"read between measured caps and never past them.  Every policy keeps the\n"
"controller's guarantee: caps summed over GPUs under the limit.\n"
"\n"
"The scores lead with the progress each policy loses over the event (the\n"
"periods with a limit under the site's uncapped draw) against the oracle\n"
"and against equal cuts, as a share of the site's progress there; the\n"
"share of the equal-to-oracle gap recovered is given only where that gap\n"
"is over 1 % of the site's.  A limit under the jobs' lowest caps summed\n"
"(on caps, whatever the jobs draw), or one no caps meet with every floor\n"
"kept, is warned of and counted apart.\n"
"\n"
"The days (--day) come from the Emerald AI field demonstration's data\n"
"(--data DIR, default $PFLEX_SHARED_DATA or ../shared/data): the target\n"
"trace is derived from the site's measured power (the first hour's mean is\n"
"the baseline; each --bucket of the event is one target at its largest\n"
"power over the baseline, rounded up to 0.005), the jobs are the\n"
"demonstration's, on the A100 curves of its dvfs_sweep.csv.  The traces are\n"
"read from emerald-demo/derived/*.csv, which scripts/emerald_derived.sh\n"
"makes from the public repository's XLSX workbooks.\n"
"\n"
"inputs:\n"
"  --day NAME          srp (3 May 2025), aps (1 May 2025), caiso (the 14 Aug 2020\n"
"                      re-enactment); sets the sweep, jobs and times\n"
"  --data DIR          the shared data folder (holds emerald-demo/)\n"
"  --bucket D          the day's target step (default 10m)\n"
"  --schedule FILE     targets, the controller's schedule CSV (docs/targets.md)\n"
"  --openadr FILE      targets, a JSON array of OpenADR 3 events\n"
"  --target SPEC       a target, as the controller's --target (repeatable)\n"
"  --columns MAP       map foreign sweep headers: name=Header,...\n"
"  --strict            a bad sweep job (no positive baseline, ...) is fatal\n"
"                      (exit 2); by default it is skipped with a warning\n"
"  --jobs FILE         the jobs (job, curve, gpus[, tier, floor, weight])\n"
"  --pfi FILE          predicted ratio PFIs by job or curve (eq2-predicted,\n"
"                      online-warm's prior)\n"
"  --floor S           floor for jobs without one (0.9 or 90%)\n"
"  --input-bound JOB=W[@T]  job JOB's GPUs draw W each whatever the cap, at\n"
"                      its full rate, until T after the start (a duration, or\n"
"                      rand: drawn from --seed over the run), when the draw\n"
"                      rises to its curve's; without @T never (repeatable)\n"
"site:\n"
"  --gpus N            a site of N GPUs filled with jobs drawn from the curves\n"
"                      (instead of one job per sweep job or jobs-file row)\n"
"  --job-gpus A:B[:S]  sizes of drawn jobs (default 8:64:8)\n"
"  --mean-job D        jobs leave after an exponential draw of mean D and new\n"
"                      ones take their GPUs (default: none leave)\n"
"  --start TIME        first period (default: the day's start, else now)\n"
"  --duration D        how long (default: the day's record, else 24h)\n"
"  --period D          control period (default 1s)\n"
"  --delay D           cap settling delay (default 1s)\n"
"  --settle D          the learner's --settle (default one period)\n"
"  --noise-power CV    reading noise of power (default 0.004, the study's median)\n"
"  --noise-tput CV     reading noise of throughput (default 0.005)\n"
"  --seed N            seed of the fleet and the noise (default 1)\n"
"  --other-w W         non-GPU power counted against the limit (default 0)\n"
"  --baseline-w W      what fraction targets are of (default: every job at\n"
"                      its largest cap, measured power)\n"
"  --interp I         the curves between measured caps: smooth (the default:\n"
"                      monotone cubic through every point, no corner at the\n"
"                      sweep's caps) or linear (straight lines)\n"
"  --objective O       progress (GPU-weighted normalised throughput: the\n"
"                      default, jobs' units differ) or throughput\n"
"  --policies LIST     comma-separated subset (default: all that can run)\n"
"  --explore X         the controller's --explore (default 0.05)\n"
"  --learn-between-events  the controller's: the online policies probe while\n"
"                      no target is in force (default: only under a target)\n"
"  --learn-budget P%   the controller's --learn-budget (default 0.1%)\n"
"  --explore-lead D    the controller's --explore-lead: with\n"
"                      --learn-between-events, probe between events only\n"
"                      while a target that cuts starts within D\n"
"                      (default: always)\n"
"  --cap-step-w W      the controller's --cap-step-w (default 1); the\n"
"                      offline policies' caps are set in the same steps\n"
"  --offline-exact     the offline policies' caps to any fraction of a watt\n"
"                      (baselines holding caps no controller could set)\n"
"  --threads N         run policies on N threads (default 2)\n"
SIM_LEVERS_HELP
"output:\n"
"  --json              one JSON document (summary, field comparison)\n"
"  --csv               the per-period series (aggregated by --every)\n"
"  --every N           periods per series row (default: at most 2000 rows)\n"
"  --out DIR           write summary.json, series.csv and report.html there\n"
"  --gnuplot PROG      gnuplot for the report's charts (default gnuplot)\n"
"  --progress          (progress is always on stderr: redrawn on a terminal,\n"
"                      else a line every 10 s)\n"
"  -h, --help          this help\n"
"\n"
"EXAMPLES\n"
"  pflex simulate --day srp --out srp-out\n"
"  pflex simulate --day srp --levers all --flex-as contract\n"
"  pflex simulate --day aps --json --seed 7\n"
"  pflex simulate --day caiso --pfi predicted.csv --csv > caiso.csv\n"
"  pflex simulate --day srp --input-bound ft_llama_8b_p3-c6rr6ijz=60@rand --json\n"
"  pflex simulate dvfs_sweep.csv --columns 'job=Workload,cap_w=GPU power cap,power_w=power per GPU' \\\n"
"      --jobs jobs.csv --duration 2h --target '70%,start=+1h,for=1h'\n"
"  pflex simulate dvfs_sweep.csv --columns 'job=Workload,cap_w=GPU power cap,power_w=power per GPU' \\\n"
"      --gpus 10000 --duration 24h --schedule day.csv --mean-job 6h --floor 0.5\n"
"\n"
"exit: 0 ok, 1 system error, 2 bad usage or input.\n";

/* ---- the days of the field demonstration ---- */

/* The days are data, data/field-demo/ (days.csv and the jobs files it
 * names): found beside the binary, under PREFIX/share/pflex/field-demo
 * where it is installed (PREFIX/bin/pflex), else under data/field-demo of
 * the tree it was built in (BUILD/pflex). */
#define FIELD_DAYS_MAX 8
#define FIELD_JOBS_MAX 16

struct day_job {
    char name[64], curve[64];
    int gpus;
    double floor;
};

struct day {
    char name[16], power_csv[256], date[40];
    char perf_csv[256];         /* per-job performance measured in the event, or "" */
    struct day_job jobs[FIELD_JOBS_MAX];
    size_t njobs;
};

/* The folder holding days.csv into dir: 0, or -1 with the places looked
 * at in err. */
static int field_demo_dir(char *dir, size_t size, pflex_error_t *err)
{
    char exe[2048];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return pflex_error_set(err, "the field demonstration's days: cannot find the pflex binary");
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    static const char *const where[] = {"share/pflex/field-demo", "data/field-demo"};
    struct stat sb;
    for (size_t k = 0; k < 2; k++) {
        if ((size_t)snprintf(dir, size, "%s/../%s", exe, where[k]) < size) {
            char probe[2200];
            snprintf(probe, sizeof probe, "%s/days.csv", dir);
            if (stat(probe, &sb) == 0)
                return 0;
        }
    }
    return pflex_error_set(err, "the field demonstration's days: no days.csv in %s/../share/pflex/"
                           "field-demo (installed) or %s/../data/field-demo (the build tree)", exe, exe);
}

/* Copy field f into dst[size]: 0, or -1 with err when it does not fit. */
static int field_copy(char *dst, size_t size, const pflex_csv_t *c, size_t k, pflex_error_t *err)
{
    const struct pflex_csv_field *f = &c->fields[k];
    if (k >= c->nfields) {
        dst[0] = '\0';
        return 0;
    }
    if (f->len >= size)
        return pflex_error_set(err, "%s:%u: field %zu longer than %zu bytes", c->name, c->line, k + 1,
                               size - 1);
    memcpy(dst, f->s, f->len);
    dst[f->len] = '\0';
    return 0;
}

/* The jobs file path: job,curve,gpus,floor. */
static int read_day_jobs(const char *path, struct day *d, pflex_error_t *err)
{
    char *buf;
    pflex_csv_t c;
    if (pflex_csv_load(&c, path, &buf, err) < 0)
        return -1;
    int got, header = 1, rc = 0;
    d->njobs = 0;
    while (rc == 0 && (got = pflex_csv_next(&c, err)) > 0) {
        if (header) {
            static const char *const cols[] = {"job", "curve", "gpus", "floor"};
            for (size_t k = 0; k < 4 && rc == 0; k++)
                if (k >= c.nfields || !pflex_csv_field_is(&c.fields[k], cols[k]))
                    rc = pflex_error_set(err, "%s:%u: the header must be job,curve,gpus,floor", path,
                                         c.line);
            header = 0;
            continue;
        }
        struct day_job *j = &d->jobs[d->njobs];
        double g = 0;
        if (d->njobs == FIELD_JOBS_MAX)
            rc = pflex_error_set(err, "%s:%u: more than %d jobs", path, c.line, FIELD_JOBS_MAX);
        else if (c.nfields < 4)
            rc = pflex_error_set(err, "%s:%u: want job,curve,gpus,floor", path, c.line);
        else if (field_copy(j->name, sizeof j->name, &c, 0, err) < 0
                 || field_copy(j->curve, sizeof j->curve, &c, 1, err) < 0)
            rc = -1;
        else if (pflex_parse_double(c.fields[2].s, c.fields[2].len, &g) < 0 || g != floor(g) || g < 1
                 || g > 1e6)
            rc = pflex_csv_field_error(err, path, c.line, "gpus", &c.fields[2], "is not a count of GPUs");
        else if (pflex_parse_double(c.fields[3].s, c.fields[3].len, &j->floor) < 0 || j->floor < 0
                 || j->floor > 1)
            rc = pflex_csv_field_error(err, path, c.line, "floor", &c.fields[3], "is not a share from 0 to 1");
        else {
            j->gpus = (int)g;
            d->njobs++;
        }
    }
    if (rc == 0 && got < 0)
        rc = -1;
    if (rc == 0 && d->njobs == 0)
        rc = pflex_error_set(err, "%s: no jobs", path);
    pflex_csv_fini(&c);
    free(buf);
    return rc;
}

/* The day named name from days.csv into *d, its jobs read: 0; 1 when
 * there is no such day (the names in names[size], "a, b or c"); -1 with
 * err. */
static int read_field_day(const char *name, struct day *d, char *names, size_t size, pflex_error_t *err)
{
    char dir[2100], path[2200];
    if (field_demo_dir(dir, sizeof dir, err) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/days.csv", dir);
    char *buf;
    pflex_csv_t c;
    if (pflex_csv_load(&c, path, &buf, err) < 0)
        return -1;
    int got, header = 1, rc = 1;
    size_t ndays = 0;
    char all[FIELD_DAYS_MAX][16];
    char jobs[256] = "";
    while (rc == 1 && (got = pflex_csv_next(&c, err)) > 0) {
        if (header) {
            header = 0;
            continue;
        }
        if (c.nfields < 4) {
            rc = pflex_error_set(err, "%s:%u: want day,power,date,jobs,performance", path, c.line);
            break;
        }
        if (ndays < FIELD_DAYS_MAX && field_copy(all[ndays], sizeof all[0], &c, 0, err) == 0)
            ndays++;
        if (!pflex_csv_field_is(&c.fields[0], name))
            continue;
        if (field_copy(d->name, sizeof d->name, &c, 0, err) < 0
            || field_copy(d->power_csv, sizeof d->power_csv, &c, 1, err) < 0
            || field_copy(d->date, sizeof d->date, &c, 2, err) < 0
            || field_copy(jobs, sizeof jobs, &c, 3, err) < 0
            || field_copy(d->perf_csv, sizeof d->perf_csv, &c, 4, err) < 0)
            rc = -1;
        else
            rc = 0;
    }
    if (rc == 1 && got < 0)
        rc = -1;
    pflex_csv_fini(&c);
    free(buf);
    if (rc == 1) {
        size_t w = 0;
        names[0] = '\0';
        for (size_t k = 0; k < ndays && w < size; k++)
            w += (size_t)snprintf(names + w, size - w, "%s%s", k == 0 ? "" : k + 1 == ndays ? " or " : ", ",
                                  all[k]);
        return 1;
    }
    if (rc < 0)
        return -1;
    if (snprintf(path, sizeof path, "%s/%s", dir, jobs) >= (int)sizeof path)
        return pflex_error_set(err, "%s/%s: path too long", dir, jobs);
    return read_day_jobs(path, d, err);
}

#define EMERALD_COLUMNS "job=Workload,cap_w=GPU power cap,power_w=power per GPU"
#define MAX_TARGETS 32
#define SMOOTH_STEP_W 1.0       /* --interp smooth: the curves read on whole watts */

struct field_perf {
    size_t n;
    char name[16][64];
    double perf[16];
};

/* The field's measured per-job performance (Model,Performance,...): the
 * names trimmed; the "Weighted Performance" row left out. */
static int read_perf(const char *path, struct field_perf *fp, pflex_error_t *err)
{
    char *buf;
    pflex_csv_t c;
    memset(fp, 0, sizeof *fp);
    if (pflex_csv_load(&c, path, &buf, err) < 0)
        return -1;
    int got, header = 1;
    while ((got = pflex_csv_next(&c, err)) > 0) {
        if (header) {
            header = 0;
            continue;
        }
        const struct pflex_csv_field *nf = &c.fields[0], *pf = &c.fields[1];
        if (c.nfields < 2 || (nf->len >= 8 && !memcmp(nf->s, "Weighted", 8)) || fp->n == 16)
            continue;
        double v;
        if (pflex_parse_double(pf->s, pf->len, &v) < 0) {
            pflex_error_set(err, "%s:%u: performance is not a number", path, c.line);
            got = -1;
            break;
        }
        snprintf(fp->name[fp->n], sizeof fp->name[0], "%.*s", (int)nf->len, nf->s);
        fp->perf[fp->n++] = v;
    }
    pflex_csv_fini(&c);
    free(buf);
    return got < 0 ? -1 : 0;
}

static void progress_cb(void *ud, double done)
{
    cli_progress_show(ud, done, NULL);
}

/* Per kept job, policy p's mean of v (its cap, or T/T0) over the periods
 * with a limit in force. */
static double job_limited_mean(const struct pflex_sim_result *r, const double *v, size_t j)
{
    double s = 0;
    size_t n = 0;
    for (size_t k = 0; k < r->nperiods; k++)
        if (isfinite(r->limit_w[k])) {
            s += v[j * r->nperiods + k];
            n++;
        }
    return n ? s / (double)n : NAN;
}

/* Policy p's summary; with the kept jobs, each one's mean cap under a
 * limit (job_cap_w, in the order of the top-level jobs). */
static json_t *summary_json(const struct pflex_sim_result *r, int p)
{
    const struct pflex_sim_summary *s = &r->pol[p];
    json_t *o = json_object();
    json_object_set_new(o, "lost_vs_oracle_pct_of_site", cli_json_real(s->lost_vs_oracle_pct_of_site));
    json_object_set_new(o, "lost_vs_equal_pct_of_site", cli_json_real(s->lost_vs_equal_pct_of_site));
    json_object_set_new(o, "gap_recovered", cli_json_real(s->gap_recovered));
    json_object_set_new(o, "objective_s", json_real(s->objective_s));
    json_object_set_new(o, "lost_s", json_real(s->lost_s));
    json_object_set_new(o, "lost_event_s", json_real(s->lost_event_s));
    json_object_set_new(o, "throughput_lost", json_real(s->throughput_lost));
    json_object_set_new(o, "periods_limited", json_integer((json_int_t)s->periods_limited));
    json_object_set_new(o, "periods_above", json_integer((json_int_t)s->periods_above));
    json_object_set_new(o, "periods_above_ramp", json_integer((json_int_t)s->periods_above_ramp));
    json_object_set_new(o, "periods_above_feasible", json_integer((json_int_t)s->periods_above_feasible));
    json_object_set_new(o, "max_over_w", json_real(s->max_over_w));
    json_object_set_new(o, "floor_periods", json_integer((json_int_t)s->floor_periods));
    json_object_set_new(o, "floor_breaches", json_integer((json_int_t)s->floor_breaches));
    json_object_set_new(o, "floor_breaches_feasible", json_integer((json_int_t)s->floor_breaches_feasible));
    json_object_set_new(o, "floor_worst", json_real(s->floor_worst));
    json_object_set_new(o, "floor_breaches_free", json_integer((json_int_t)s->floor_breaches_free));
    json_object_set_new(o, "probes", json_integer((json_int_t)s->probes));
    json_object_set_new(o, "plans", json_integer((json_int_t)s->plans));
    json_object_set_new(o, "energy_kwh", json_real(s->energy_kwh));
    json_object_set_new(o, "below_equal", json_integer((json_int_t)s->below_equal));
    json_object_set_new(o, "settled_periods", json_integer((json_int_t)s->settled_periods));
    json_object_set_new(o, "settled_mean", cli_json_real(s->settled_mean));
    json_object_set_new(o, "settled_min", cli_json_real(s->settled_min));
    json_object_set_new(o, "settled_over90", json_integer((json_int_t)s->settled_over90));
    json_object_set_new(o, "cpu_s", json_real(s->wall_s));
    json_t *tt = json_object(), *ev = json_array();
    json_object_set_new(tt, "events", json_integer((json_int_t)s->ttt_events));
    json_object_set_new(tt, "met", json_integer((json_int_t)s->ttt_met));
    json_object_set_new(tt, "p50_s", cli_json_real(s->ttt_p50_s));
    json_object_set_new(tt, "p99_s", cli_json_real(s->ttt_p99_s));
    json_object_set_new(tt, "worst_s", cli_json_real(s->ttt_worst_s));
    for (size_t e = 0; e < s->ttt_events && s->ttt_s; e++)
        json_array_append_new(ev, cli_json_real(s->ttt_s[e]));
    json_object_set_new(tt, "per_event_s", ev);
    json_object_set_new(o, "time_to_target", tt);
    if (r->njobs_kept && r->job_cap[p]) {
        json_t *a = json_array();
        for (size_t j = 0; j < r->njobs_kept; j++)
            json_array_append_new(a, cli_json_real(job_limited_mean(r, r->job_cap[p], j)));
        json_object_set_new(o, "job_cap_w", a);
    }
    return o;
}

/* The series: every `every` periods one row, t, the limit (lowest), and
 * per policy the site power (largest), the objective (mean), the gap
 * recovered over the row's periods with a limit (where that gap is over
 * PFLEX_SIM_GAP_MIN_PCT of the site's objective there) and the objective
 * lost against the oracle there, % of the site's. */
static void write_series(FILE *f, const struct pflex_sim_result *r, size_t every)
{
    fprintf(f, "t_s,offset_s,limit_w,uncapped");
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (r->ran & (1u << p)) {
            const char *n = pflex_sim_policy_name((enum pflex_sim_policy)p);
            fprintf(f, ",%s_power_w,%s_objective,%s_gap_recovered,%s_lost_vs_oracle_pct", n, n, n, n);
        }
    fputc('\n', f);
    int oracle = (r->ran & (1u << PFLEX_SIM_ORACLE)) != 0;
    int gap = (r->ran & (1u << PFLEX_SIM_EQUAL)) && oracle;
    for (size_t k = 0; k < r->nperiods; k += every) {
        size_t e = k + every < r->nperiods ? k + every : r->nperiods;
        double lim = INFINITY, unc = 0;
        for (size_t q = k; q < e; q++) {
            lim = r->limit_w[q] < lim ? r->limit_w[q] : lim;
            unc += r->uncapped[q];
        }
        fprintf(f, "%.3f,%.3f,", r->start_s + (double)k * r->period_s, (double)k * r->period_s);
        if (isfinite(lim))
            fprintf(f, "%.3f", lim);
        fprintf(f, ",%.8g", unc / (double)(e - k));
        for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
            if (!(r->ran & (1u << p)))
                continue;
            double mx = 0, ob = 0, a = 0, b = 0, site = 0, lo = 0;
            for (size_t q = k; q < e; q++) {
                mx = r->power_w[p][q] > mx ? r->power_w[p][q] : mx;
                ob += r->objective[p][q];
                if (gap && isfinite(r->limit_w[q])) {
                    a += r->objective[p][q] - r->objective[PFLEX_SIM_EQUAL][q];
                    b += r->objective[PFLEX_SIM_ORACLE][q] - r->objective[PFLEX_SIM_EQUAL][q];
                }
                if (oracle && isfinite(r->limit_w[q])) {
                    site += r->uncapped[q];
                    lo += r->objective[PFLEX_SIM_ORACLE][q] - r->objective[p][q];
                }
            }
            fprintf(f, ",%.3f,%.8g,", mx, ob / (double)(e - k));
            if (gap && b > PFLEX_SIM_GAP_MIN_PCT / 100 * site)
                fprintf(f, "%.6f", a / b);
            fputc(',', f);
            if (site > 0)
                fprintf(f, "%.6f", 100 * lo / site);
        }
        fputc('\n', f);
    }
}

/* Per kept job, each policy's mean T/T0 over the periods with a limit. */
static double job_event_mean(const struct pflex_sim_result *r, int p, size_t j)
{
    return job_limited_mean(r, r->job_fraction[p], j);
}

static int parse_dur(const char *cmd, const char *opt, const char *s, double *out)
{
    pflex_error_t e;
    if (pflex_target_parse_duration(s, out, &e) < 0 || !isfinite(*out)) {
        cli_usage_error(cmd, "%s: %s", opt, isfinite(*out) ? e.text : "must be finite");
        return -1;
    }
    return 0;
}

static const struct option opts[] = {
    {"day", required_argument, NULL, 'd'},       {"data", required_argument, NULL, 'D'},
    {"bucket", required_argument, NULL, 'b'},    {"schedule", required_argument, NULL, 's'},
    {"openadr", required_argument, NULL, 'a'},   {"target", required_argument, NULL, 't'},
    {"columns", required_argument, NULL, 'c'},   {"jobs", required_argument, NULL, 'j'},
    {"strict", no_argument, NULL, 1001},
    {"pfi", required_argument, NULL, 'p'},       {"floor", required_argument, NULL, 'f'},
    {"gpus", required_argument, NULL, 'G'},      {"job-gpus", required_argument, NULL, 'g'},
    {"mean-job", required_argument, NULL, 'm'},  {"start", required_argument, NULL, 'S'},
    {"duration", required_argument, NULL, 'u'},  {"period", required_argument, NULL, 'P'},
    {"delay", required_argument, NULL, 'L'},     {"settle", required_argument, NULL, 'T'},
    {"noise-power", required_argument, NULL, 'n'}, {"noise-tput", required_argument, NULL, 'N'},
    {"seed", required_argument, NULL, 'e'},      {"other-w", required_argument, NULL, 'o'},
    {"baseline-w", required_argument, NULL, 'B'}, {"objective", required_argument, NULL, 'O'},
    {"policies", required_argument, NULL, 'y'},  {"explore", required_argument, NULL, 'x'},
    {"cap-step-w", required_argument, NULL, 'W'}, {"interp", required_argument, NULL, 'I'},
    {"explore-lead", required_argument, NULL, 'X'}, {"offline-exact", no_argument, NULL, 'Z'},
    {"learn-between-events", no_argument, NULL, 'V'}, {"learn-budget", required_argument, NULL, 'K'},
    {"threads", required_argument, NULL, 'H'},   {"json", no_argument, NULL, 'J'},
    {"csv", no_argument, NULL, 'C'},             {"every", required_argument, NULL, 'E'},
    {"out", required_argument, NULL, 'U'},       {"gnuplot", required_argument, NULL, 'Q'},
    {"progress", no_argument, NULL, 'R'},        {"help", no_argument, NULL, 'h'},
    {"input-bound", required_argument, NULL, 'i'},
    SIM_LEVERS_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const char cmd[] = "simulate";

/* The command line. */
struct sim_opts {
    const char *day_name, *data, *schedule, *oadr, *columns;
    const char *jobs_path, *pfi_path, *out_dir, *gnuplot;
    const char *targets_s[MAX_TARGETS], *start_s, *policies_s, *sweep_path;
    size_t ntargets_s;
    const char *ib_s[MAX_TARGETS];  /* --input-bound JOB=W[@T] */
    size_t nib_s;
    double bucket, floor_def, gpus, mean_job, duration, period, delay;
    double settle, noise_p, noise_t, seed_d, other, baseline, explore, explore_lead, cap_step;
    double learn_budget;
    int learn_between, explore_lead_given;
    double threads, every_d;
    int glo, ghi, gstep, json, csv, force_progress, linear, offline_exact, strict;
    enum pflex_objective objective;
    const struct day *dy;       /* --day: &day */
    struct day day;
    unsigned policies;
    struct sim_levers_opts lv;  /* --levers and its knobs */
};

/* What the command reads, builds and runs; freed by sim_state_fini. */
struct sim_state {
    pflex_error_t err;
    char sweep_buf[4096], power_buf[4096], perf_buf[4096];
    struct pflex_sim_day dayrec;
    pflex_target_set_t set;
    pflex_alloc_input_t *in;
    struct pflex_sim_kind *kinds;
    struct pflex_sim_job *jobs;
    struct pflex_sim_job_draw *draws;   /* --input-bound; NULL: none */
    double *pts, *smooth_pts;
    size_t nk, njobs;
    double now;
    struct pflex_sim_result res;
    struct field_perf fperf;
    int have_perf;
    size_t every;
    const char *obj_note;
};

/* Stages return 0 to go on, STAGE_BAD to report st->err, or an exit
 * status (already reported) to stop with. */
#define STAGE_BAD (-1)

/* Option parsing returns OPT_GO to go on, or an exit status (0 after
 * --help). */
#define OPT_GO (-1)

/* One option into o: OPT_GO, or an exit status. */
static int parse_option(int c, struct sim_opts *o, char **argv)
{
    switch (c) {
    case 'd': o->day_name = optarg; break;
    case 'D': o->data = optarg; break;
    case 'b': if (parse_dur(cmd, "--bucket", optarg, &o->bucket) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 's': o->schedule = optarg; break;
    case 'a': o->oadr = optarg; break;
    case 't':
        if (o->ntargets_s == MAX_TARGETS)
            return cli_usage_error(cmd, "at most %d --target", MAX_TARGETS);
        o->targets_s[o->ntargets_s++] = optarg;
        break;
    case 'i':
        if (o->nib_s == MAX_TARGETS)
            return cli_usage_error(cmd, "at most %d --input-bound", MAX_TARGETS);
        o->ib_s[o->nib_s++] = optarg;
        break;
    case 'c': o->columns = optarg; break;
    case 1001: o->strict = 1; break;
    case 'j': o->jobs_path = optarg; break;
    case 'p': o->pfi_path = optarg; break;
    case 'f': if (cli_parse_share(cmd, "--floor", optarg, 0, 1, &o->floor_def) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'G': if (cli_parse_double(cmd, "--gpus", optarg, 1, 1e7, &o->gpus) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'g': {
        int a = 0, b = 0, s = 0, m = sscanf(optarg, "%d:%d:%d", &a, &b, &s);
        if (m < 2 || a < 1 || b < a || b > 100000 || (m == 3 && s < 1))
            return cli_usage_error(cmd, "--job-gpus: want A:B[:STEP] with 1 <= A <= B");
        o->glo = a;
        o->ghi = b;
        o->gstep = m == 3 ? s : 1;
        break;
    }
    case 'm': if (parse_dur(cmd, "--mean-job", optarg, &o->mean_job) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'S': o->start_s = optarg; break;
    case 'u': if (parse_dur(cmd, "--duration", optarg, &o->duration) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'P': if (parse_dur(cmd, "--period", optarg, &o->period) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'L': if (parse_dur(cmd, "--delay", optarg, &o->delay) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'T': if (parse_dur(cmd, "--settle", optarg, &o->settle) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'n': if (cli_parse_double(cmd, "--noise-power", optarg, 0, 0.5, &o->noise_p) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'N': if (cli_parse_double(cmd, "--noise-tput", optarg, 0, 0.5, &o->noise_t) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'e': if (cli_parse_double(cmd, "--seed", optarg, 0, 9007199254740991.0, &o->seed_d) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'o': if (cli_parse_power(cmd, "--other-w", optarg, 0, 1e10, &o->other) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'B': if (cli_parse_power(cmd, "--baseline-w", optarg, 1, 1e10, &o->baseline) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'O':
        if (!strcmp(optarg, "progress"))
            o->objective = PFLEX_OBJECTIVE_PROGRESS;
        else if (!strcmp(optarg, "throughput"))
            o->objective = PFLEX_OBJECTIVE_THROUGHPUT;
        else
            return cli_usage_error(cmd, "--objective: progress or throughput, not '%s'", optarg);
        break;
    case 'y': o->policies_s = optarg; break;
    case 'x': if (cli_parse_double(cmd, "--explore", optarg, 0, 0.5, &o->explore) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'X':
        if (parse_dur(cmd, "--explore-lead", optarg, &o->explore_lead) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        o->explore_lead_given = 1;
        break;
    case 'V': o->learn_between = 1; break;
    case 'K': {
        size_t n = strlen(optarg);
        char num[64];
        if (n < 2 || n >= sizeof num || optarg[n - 1] != '%')
            return cli_usage_error(cmd, "--learn-budget %s: want a percentage, e.g. 0.5%%", optarg);
        memcpy(num, optarg, n - 1);
        num[n - 1] = '\0';
        if (cli_parse_double(cmd, "--learn-budget", num, 1e-6, 100, &o->learn_budget) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        o->learn_budget /= 100;
        break;
    }
    case 'W': if (cli_parse_power(cmd, "--cap-step-w", optarg, 0.001, 50, &o->cap_step) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'Z': o->offline_exact = 1; break;
    case 'I':
        if (strcmp(optarg, "smooth") && strcmp(optarg, "linear"))
            return cli_usage_error(cmd, "--interp: smooth or linear, not '%s'", optarg);
        o->linear = !strcmp(optarg, "linear");
        break;
    case 'H': if (cli_parse_double(cmd, "--threads", optarg, 1, 16, &o->threads) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'J': o->json = 1; break;
    case 'C': o->csv = 1; break;
    case 'E': if (cli_parse_double(cmd, "--every", optarg, 1, 1e9, &o->every_d) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 'U': o->out_dir = optarg; break;
    case 'Q': o->gnuplot = optarg; break;
    case 'R': o->force_progress = 1; break;
    case 'h': return cli_help(help);
    default:
        if (c >= SIM_LEVERS_OPT_FIRST && c < SIM_LEVERS_OPT_FIRST + 100)
            return sim_levers_option(c, optarg, &o->lv);
        return cli_bad_option(cmd, argv, opts);
    }
    return OPT_GO;
}

/* The options' checks, the day and the policies: OPT_GO, or an exit
 * status. */
static int check_options(struct sim_opts *o, int argc, char **argv)
{
    if (o->json && o->csv)
        return cli_usage_error(cmd, "--csv and --json exclude each other");
    if (argc - optind > 1)
        return cli_usage_error(cmd, "one sweep file at most");
    if (!(o->period > 0))
        return cli_usage_error(cmd, "--period must be positive");
    /* as the controller's: the learning's knobs say nothing without it */
    if ((o->learn_budget > 0 || o->explore_lead_given) && !o->learn_between)
        return cli_usage_error(cmd, "--learn-budget and --explore-lead go with --learn-between-events");
    if (!o->day_name && !o->schedule && !o->oadr && !o->ntargets_s)
        return cli_usage_error(cmd, "give a day (--day), a --schedule, an --openadr file or a --target");
    if (o->day_name) {
        char names[160];
        pflex_error_t e;
        int r = read_field_day(o->day_name, &o->day, names, sizeof names, &e);
        if (r < 0) {
            cli_error(cmd, "%s", e.text);
            return PFLEX_EXIT_BAD_INPUT;
        }
        if (r > 0)
            return cli_usage_error(cmd, "--day: %s, not '%s'", names, o->day_name);
        o->dy = &o->day;
        if (o->gpus > 0 || o->jobs_path)
            return cli_usage_error(cmd, "--day runs the demonstration's own jobs: no --gpus or --jobs");
    }
    if (!o->data)
        o->data = getenv("PFLEX_SHARED_DATA");
    if (!o->data)
        o->data = "../shared/data";
    if (o->policies_s) {
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s", o->policies_s);
        char *save = NULL;
        for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            enum pflex_sim_policy p;
            if (pflex_sim_policy_parse(t, &p) < 0)
                return cli_usage_error(cmd, "--policies: unknown policy '%s' (equal, eq2-measured, "
                                       "eq2-predicted, tpw, online-cold, online-warm, oracle)", t);
            o->policies |= 1u << p;
        }
    }
    o->sweep_path = optind < argc ? argv[optind] : NULL;
    return OPT_GO;
}

/* The command line into o: OPT_GO, or an exit status. */
static int parse_options(int argc, char **argv, struct sim_opts *o)
{
    *o = (struct sim_opts){.gnuplot = "gnuplot", .bucket = 600, .floor_def = NAN, .duration = NAN,
                           .period = 1, .delay = 1, .noise_p = 0.004, .noise_t = 0.005, .seed_d = 1,
                           .explore = 0.05, .cap_step = 1, .threads = 2, .glo = 8, .ghi = 64, .gstep = 8,
                           .objective = PFLEX_OBJECTIVE_PROGRESS};
    sim_levers_defaults(&o->lv);
    int c, rc;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1)
        if ((rc = parse_option(c, o, argv)) != OPT_GO)
            return rc;
    return check_options(o, argc, argv);
}

/* The day's record, sweep and field performance. */
static int read_day(struct sim_opts *o, struct sim_state *st)
{
    const struct day *dy = o->dy;
    snprintf(st->power_buf, sizeof st->power_buf, "%s/%s", o->data, dy->power_csv);
    if (!o->sweep_path) {
        snprintf(st->sweep_buf, sizeof st->sweep_buf, "%s/emerald-demo/data/dvfs_sweep.csv", o->data);
        o->sweep_path = st->sweep_buf;
        if (!o->columns)
            o->columns = EMERALD_COLUMNS;
    }
    struct stat sb;
    if (stat(st->power_buf, &sb) != 0) {
        /* The public repository ships the traces only as XLSX: say how to get the CSV. */
        cli_error(cmd, "%s: not found: the day needs the field demonstration's data (--data DIR or "
                  "PFLEX_SHARED_DATA: the folder holding emerald-demo/; scripts/emerald_derived.sh "
                  "makes its derived/ CSVs from the repository's XLSX files)", st->power_buf);
        return PFLEX_EXIT_BAD_INPUT;
    }
    if (pflex_sim_day_read(st->power_buf, dy->date[0] ? dy->date : NULL, o->bucket, &st->set, &st->dayrec, &st->err) < 0)
        return STAGE_BAD;
    if (dy->perf_csv[0]) {
        snprintf(st->perf_buf, sizeof st->perf_buf, "%s/%s", o->data, dy->perf_csv);
        if (read_perf(st->perf_buf, &st->fperf, &st->err) < 0)
            return STAGE_BAD;
        st->have_perf = 1;
    }
    return 0;
}

/* The truth between measured caps: each curve smooth (Steffen's monotone
 * cubic read on whole watts), unless --interp linear. */
static int smooth_curves(struct sim_state *st)
{
    size_t tot = 0;
    for (size_t j = 0; j < st->nk; j++)
        tot += pflex_sim_kind_smooth_n(&st->kinds[j], SMOOTH_STEP_W);
    st->smooth_pts = malloc((3 * tot + 1) * sizeof *st->smooth_pts);
    if (!st->smooth_pts) {
        pflex_error_sys(&st->err, "out of memory");
        return STAGE_BAD;
    }
    double *pp = st->smooth_pts;
    for (size_t j = 0; j < st->nk; j++) {
        struct pflex_sim_kind k = st->kinds[j];
        if (pflex_sim_kind_smooth(&k, SMOOTH_STEP_W, pp, &st->kinds[j], &st->err) < 0)
            return STAGE_BAD;
        pp += 3 * st->kinds[j].n;
    }
    return 0;
}

/* The curves: the sweep's jobs as kinds, with their measured and
 * predicted PFIs. */
static int read_curves(const struct sim_opts *o, struct sim_state *st)
{
    pflex_error_t *err = &st->err;
    struct pflex_alloc_source src = {.sweep_path = o->sweep_path, .columns = o->columns, .pfi_path = NULL,
                                     .jobs_path = o->jobs_path, .floor = o->floor_def, .by = NULL,
                                     .strict = o->strict};
    if (pflex_alloc_input_read(&src, &st->in, err) < 0)
        return STAGE_BAD;
    pflex_alloc_input_t *in = st->in;
    cli_print_warnings(cmd, in->warnings);
    pflex_alloc_input_t *pin = NULL;
    if (o->pfi_path) {
        src.pfi_path = o->pfi_path;
        if (pflex_alloc_input_read(&src, &pin, err) < 0)
            return STAGE_BAD;
    }
    size_t nk = in->njobs, tot = 0;
    st->nk = nk;
    for (size_t j = 0; j < nk; j++)
        tot += in->jobs[j].npoints < 2 ? 2 : in->jobs[j].npoints;     /* a flat one: 2 */
    st->kinds = calloc(nk ? nk : 1, sizeof *st->kinds);
    st->pts = malloc((3 * tot + 1) * sizeof *st->pts);
    if (!st->kinds || !st->pts) {
        pflex_alloc_input_destroy(pin);
        pflex_error_sys(err, "out of memory");
        return STAGE_BAD;
    }
    double *pp = st->pts;
    for (size_t j = 0; j < nk; j++) {
        const struct pflex_alloc_job *aj = &in->jobs[j];
        /* a flat curve (no cap binds, and the GPU cannot be capped under
         * its draw) is its draw from the baseline cap down to the lowest */
        int flat = aj->npoints == 1 && in->caps && in->caps[j].cap_w && in->caps[j].cap_w[0] < aj->cap0_w;
        if ((aj->npoints < 2 && !flat) || !in->caps || !in->caps[j].cap_w) {
            pflex_alloc_input_destroy(pin);
            pflex_error_set(err, "%s: job '%s' has no measured curve under its caps (2 or more binding caps)",
                            o->sweep_path, aj->name);
            return STAGE_BAD;
        }
        struct pflex_sim_kind *k = &st->kinds[j];
        k->name = aj->name;
        k->n = flat ? 2 : aj->npoints;
        k->cap_w = pp;
        k->power_w = pp + k->n;
        k->fraction = pp + 2 * k->n;
        for (size_t q = 0; q < k->n; q++) {
            pp[q] = flat ? (q ? in->caps[j].cap_w[0] : aj->cap0_w) : in->caps[j].cap_w[q];
            pp[k->n + q] = flat ? aj->p0_w : aj->p0_w * (1 - aj->x[q]);
            pp[2 * k->n + q] = flat ? 1 : 1 - aj->loss[q];
        }
        pp += 3 * k->n;
        k->t0 = aj->t0;
        struct pflex_pfi_ratio pr;
        pflex_pfi_ratio_xl(aj->x, aj->loss, aj->npoints, &pr);
        k->pfi_measured = pr.valid ? pr.pfi : NAN;
        k->pfi_predicted = pin ? pin->jobs[j].pfi : NAN;
        k->floor = aj->floor;
    }
    pflex_alloc_input_destroy(pin);
    return o->linear ? 0 : smooth_curves(st);
}

/* The jobs: the day's, else one per sweep job (none with --gpus: drawn). */
static int make_jobs(const struct sim_opts *o, struct sim_state *st)
{
    const struct day *dy = o->dy;
    size_t nk = st->nk;
    st->njobs = 0;
    if (dy) {
        st->jobs = calloc(dy->njobs, sizeof *st->jobs);
        if (!st->jobs) {
            pflex_error_sys(&st->err, "out of memory");
            return STAGE_BAD;
        }
        for (size_t i = 0; i < dy->njobs; i++) {
            size_t k = 0;
            while (k < nk && strcmp(st->kinds[k].name, dy->jobs[i].curve))
                k++;
            if (k == nk) {
                pflex_error_set(&st->err, "%s: no curve '%s' for the day's job '%s'", o->sweep_path,
                                dy->jobs[i].curve, dy->jobs[i].name);
                return STAGE_BAD;
            }
            st->jobs[i] = (struct pflex_sim_job){.name = dy->jobs[i].name, .kind = k, .gpus = dy->jobs[i].gpus,
                                                 .floor = isnan(o->floor_def) ? dy->jobs[i].floor : o->floor_def,
                                                 .weight = 1};
        }
        st->njobs = dy->njobs;
    } else if (!(o->gpus > 0)) {
        st->jobs = calloc(nk ? nk : 1, sizeof *st->jobs);
        if (!st->jobs) {
            pflex_error_sys(&st->err, "out of memory");
            return STAGE_BAD;
        }
        const pflex_alloc_input_t *in = st->in;
        for (size_t j = 0; j < nk; j++)
            st->jobs[j] = (struct pflex_sim_job){.name = in->jobs[j].name, .kind = j, .gpus = in->jobs[j].gpus,
                                                 .floor = in->jobs[j].floor, .weight = in->jobs[j].weight};
        st->njobs = nk;
    }
    return 0;
}

/* --input-bound JOB=W[@T]: the jobs named input-bound (0), or an exit
 * status (reported). */
static int input_bound(const struct sim_opts *o, struct sim_state *st)
{
    if (o->nib_s && !st->njobs)
        return cli_usage_error(cmd, "--input-bound names jobs given (a sweep's, --jobs' or the day's), "
                               "not jobs drawn with --gpus");
    for (size_t i = 0; i < o->nib_s; i++) {
        const char *spec = o->ib_s[i], *eq = strrchr(spec, '='), *at = eq ? strchr(eq, '@') : NULL;
        char *end;
        if (!eq || eq == spec)
            return cli_usage_error(cmd, "--input-bound '%s': want JOB=W[@T]", spec);
        errno = 0;
        double w = strtod(eq + 1, &end);
        if (errno || end == eq + 1 || end != (at ? at : eq + strlen(eq)) || !(w > 0) || !isfinite(w))
            return cli_usage_error(cmd, "--input-bound '%s': W must be a positive number of watts", spec);
        size_t j = 0, len = (size_t)(eq - spec);
        while (j < st->njobs && !(strlen(st->jobs[j].name) == len && !strncmp(st->jobs[j].name, spec, len)))
            j++;
        if (j == st->njobs)
            return cli_usage_error(cmd, "--input-bound '%s': no job '%.*s' in the run", spec, (int)len, spec);
        const struct pflex_sim_job *sj = &st->jobs[j];
        if (!(w < st->kinds[sj->kind].cap_w[0]))
            return cli_usage_error(cmd, "--input-bound '%s': %g W is not under the job's largest cap (%g W)",
                                   spec, w, st->kinds[sj->kind].cap_w[0]);
        if (!st->draws && !(st->draws = calloc(st->njobs, sizeof *st->draws))) {
            pflex_error_sys(&st->err, "out of memory");
            return STAGE_BAD;
        }
        struct pflex_sim_job_draw *jb = &st->draws[j];
        jb->draw_w = w;
        jb->rise_s = NAN;
        jb->rise_random = 0;
        if (at && !strcmp(at + 1, "rand"))
            jb->rise_random = 1;
        else if (at) {
            const char *t = at[1] == '+' ? at + 2 : at + 1;
            pflex_error_t e;
            if (pflex_target_parse_duration(t, &jb->rise_s, &e) < 0 || !isfinite(jb->rise_s))
                return cli_usage_error(cmd, "--input-bound '%s': T: %s", spec,
                                       isfinite(jb->rise_s) ? e.text : "must be finite");
        }
    }
    return 0;
}

/* An OpenADR file's events into the targets, their fractions of base_est. */
static int read_openadr(const struct sim_opts *o, struct sim_state *st, double base_est)
{
    char *buf;
    size_t len;
    if (pflex_read_all(o->oadr, &buf, &len, &st->err) < 0)
        return STAGE_BAD;
    struct pflex_oadr_opts oo;
    pflex_oadr_opts_default(&oo, st->now);
    oo.baseline_w = base_est;
    oo.seed = (uint64_t)o->seed_d;
    pflex_oadr_events_t evs;
    memset(&evs, 0, sizeof evs);
    int orc = pflex_oadr_parse_events(buf, len, o->oadr, &oo, &st->set, &evs, &st->err);
    free(buf);
    pflex_oadr_events_fini(&evs);
    return orc < 0 ? STAGE_BAD : 0;
}

/* The start, the duration and the targets. */
static int read_targets(struct sim_opts *o, struct sim_state *st)
{
    const struct day *dy = o->dy;
    st->now = dy ? st->dayrec.start_s : 0;
    if (o->start_s) {
        if (pflex_target_parse_time(o->start_s, 0, &st->now, &st->err) < 0)
            return cli_usage_error(cmd, "--start: %s", st->err.text);
    } else if (!dy) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        st->now = floor((double)ts.tv_sec);
    }
    if (isnan(o->duration))
        o->duration = dy ? st->dayrec.end_s - st->dayrec.start_s : 86400;
    for (size_t i = 0; i < o->ntargets_s; i++) {
        struct pflex_target t;
        if (pflex_target_parse(o->targets_s[i], st->now, &t, &st->err) < 0)
            return cli_usage_error(cmd, "--target '%s': %s", o->targets_s[i], st->err.text);
        snprintf(t.source, sizeof t.source, "cli");
        if (pflex_target_set_add(&st->set, &t, &st->err) < 0)
            return STAGE_BAD;
    }
    unsigned bare = 0;
    if (o->schedule && pflex_target_schedule_read(o->schedule, st->now, &st->set, &bare, &st->err) < 0)
        return STAGE_BAD;
    if (bare)
        fprintf(stderr, "pflex simulate: warning: %s:%u: a target without a unit, read as W (write its "
                "unit: W, kW, MW or %%)\n", o->schedule, bare);
    double base_est = o->baseline;
    if (!(base_est > 0)) {
        base_est = o->other;
        for (size_t i = 0; i < st->njobs; i++) {
            double p = st->kinds[st->jobs[i].kind].power_w[0], d = st->draws ? st->draws[i].draw_w : 0;
            base_est += st->jobs[i].gpus * (d > 0 && d < p ? d : p);
        }
        if (!st->njobs) {
            double m = 0;
            for (size_t k = 0; k < st->nk; k++)
                m += st->kinds[k].power_w[0] / (double)st->nk;
            base_est += o->gpus * m;
        }
    }
    if (o->oadr)
        return read_openadr(o, st, base_est);
    return 0;
}

/* The inputs, in order: the day, the curves, the jobs, the targets. */
static int read_inputs(struct sim_opts *o, struct sim_state *st)
{
    int rc;
    if (o->dy && (rc = read_day(o, st)) != 0)
        return rc;
    if (!o->sweep_path)
        return cli_usage_error(cmd, "give a sweep (the jobs' measured curves)");
    if ((rc = read_curves(o, st)) != 0 || (rc = make_jobs(o, st)) != 0 || (rc = input_bound(o, st)) != 0)
        return rc;
    return read_targets(o, st);
}

/* The engine, with progress on stderr when wanted. */
static int run_sim(const struct sim_opts *o, struct sim_state *st)
{
    struct pflex_sim_config cfg = {
        .nkinds = st->nk, .kinds = st->kinds, .njobs = st->njobs, .jobs = st->jobs, .job_draw = st->draws, .ngpus = (size_t)o->gpus,
        .gpus_lo = o->glo, .gpus_hi = o->ghi, .gpus_step = o->gstep, .mean_job_s = o->mean_job,
        .start_s = st->now, .duration_s = o->duration, .period_s = o->period, .delay_s = o->delay,
        .settle_s = o->settle, .noise_power = o->noise_p, .noise_tput = o->noise_t,
        .seed = (uint64_t)o->seed_d, .targets = &st->set, .baseline_w = o->baseline, .other_w = o->other,
        .objective = o->objective, .z = 2, .explore_step = o->explore, .explore_lead_s = o->explore_lead,
        .learn_between = o->learn_between, .learn_budget = o->learn_budget,
        .cap_step_w = o->cap_step, .offline_exact = o->offline_exact, .policies = o->policies,
        .controller = &ctl_sim, .keep_jobs = st->njobs && st->njobs <= 64, .threads = (int)o->threads,
    };
    struct cli_progress prog;
    cli_progress_begin(&prog, "simulate");
    cfg.progress = progress_cb;
    cfg.progress_ud = &prog;
    int rc = pflex_sim_run(&cfg, &st->res, &st->err);
    cli_progress_end(&prog);
    if (rc < 0)
        return STAGE_BAD;
    if (st->res.periods_infeasible)
        fprintf(stderr, "pflex simulate: warning: in %zu periods the limit is under the jobs' lowest caps "
                "summed (by up to %.0f W): no policy can meet it there, whatever the jobs draw\n",
                st->res.periods_infeasible, st->res.infeasible_max_w);
    if (st->res.periods_floor_infeasible)
        fprintf(stderr, "pflex simulate: warning: in %zu periods no caps keep every floor under the limit "
                "(short by up to %.0f W): floors give way there, counted apart from floor_breaches_feasible\n",
                st->res.periods_floor_infeasible, st->res.floor_infeasible_max_w);
    size_t every = o->every_d > 0 ? (size_t)o->every_d : (st->res.nperiods + 1999) / 2000;
    st->every = every ? every : 1;
    st->obj_note = o->objective == PFLEX_OBJECTIVE_PROGRESS
        ? "progress: sum of GPUs x T/T0 (normalised progress: the jobs' throughput units differ)"
        : "throughput: sum of the jobs' rates (they must share a unit)";
    return 0;
}

/* The field's measured performance of a job, or NaN. */
static double field_measured(const struct sim_state *st, const char *job)
{
    double mp = NAN;
    for (size_t q = 0; st->have_perf && q < st->fperf.n; q++)
        if (!strcmp(st->fperf.name[q], job))
            mp = st->fperf.perf[q];
    return mp;
}

/* The comparison with the field demonstration's day. */
static json_t *field_json(const struct sim_opts *o, const struct sim_state *st)
{
    const struct pflex_sim_day *dr = &st->dayrec;
    const struct pflex_sim_result *res = &st->res;
    json_t *f = json_object();
    json_object_set_new(f, "record", json_string(o->dy->power_csv));
    json_object_set_new(f, "baseline_w", json_real(dr->baseline_w));
    json_object_set_new(f, "event_start_s", json_real(dr->event_start_s));
    json_object_set_new(f, "event_end_s", json_real(dr->event_end_s));
    json_object_set_new(f, "bucket_s", json_real(o->bucket));
    /* the measured site's mean power over the event against each
     * policy's, both as a share of their own baselines */
    double ms = 0;
    size_t mn = 0;
    for (size_t i = 0; i < dr->n; i++)
        if (dr->t_s[i] >= dr->event_start_s && dr->t_s[i] < dr->event_end_s) {
            ms += dr->w[i];
            mn++;
        }
    json_object_set_new(f, "event_power_share", json_real(mn ? ms / (double)mn / dr->baseline_w : NAN));
    json_t *ps = json_object();
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        if (!(res->ran & (1u << p)))
            continue;
        double s = 0;
        size_t n = 0;
        for (size_t k = 0; k < res->nperiods; k++)
            if (isfinite(res->limit_w[k])) {
                s += res->power_w[p][k];
                n++;
            }
        json_object_set_new(ps, pflex_sim_policy_name((enum pflex_sim_policy)p),
                            json_real(n ? s / (double)n / res->baseline_w : NAN));
    }
    json_object_set_new(f, "policy_event_power_share", ps);
    json_t *jj = json_array();
    for (size_t j = 0; j < res->njobs_kept; j++) {
        json_t *jo = json_object();
        json_object_set_new(jo, "job", json_string(res->job_name[j]));
        json_object_set_new(jo, "gpus", json_integer(res->job_gpus[j]));
        json_object_set_new(jo, "floor", json_real(res->job_floor[j]));
        json_object_set_new(jo, "measured", cli_json_real(field_measured(st, res->job_name[j])));
        json_t *pj = json_object();
        for (int p = 0; p < PFLEX_SIM_NPOL; p++)
            if (res->ran & (1u << p))
                json_object_set_new(pj, pflex_sim_policy_name((enum pflex_sim_policy)p),
                                    cli_json_real(job_event_mean(res, p, j)));
        json_object_set_new(jo, "policies", pj);
        json_array_append_new(jj, jo);
    }
    json_object_set_new(f, "jobs", jj);
    return f;
}

/* The summary document. */
/* Why the gap recovered is not given (NaN), or "" where it is. */
static const char *gap_note(const struct pflex_sim_result *r, char *buf, size_t n)
{
    unsigned both = (1u << PFLEX_SIM_EQUAL) | (1u << PFLEX_SIM_ORACLE);
    if ((r->ran & both) != both)
        snprintf(buf, n, "no share of the gap: equal cuts and the oracle did not both run");
    else if (!r->event_periods)
        snprintf(buf, n, "no share of the gap: no event (no limit under the site's uncapped draw)");
    else if (!(r->gap_pct_of_site > PFLEX_SIM_GAP_MIN_PCT))
        snprintf(buf, n, "no share of the gap: the equal-to-oracle gap is %.3g%% of the site's %s over "
                 "the event, under %g%%: a share of it would swing on differences inside the readings' noise",
                 r->gap_pct_of_site, "objective", PFLEX_SIM_GAP_MIN_PCT);
    else
        buf[0] = 0;
    return buf;
}

static json_t *summary_doc(const struct sim_opts *o, const struct sim_state *st)
{
    const struct pflex_sim_result *res = &st->res;
    json_t *doc = json_object();
    json_object_set_new(doc, "day", o->dy ? json_string(o->dy->name) : json_null());
    json_object_set_new(doc, "seed", json_integer((json_int_t)o->seed_d));
    json_object_set_new(doc, "start_s", json_real(res->start_s));
    json_object_set_new(doc, "period_s", json_real(res->period_s));
    json_object_set_new(doc, "periods", json_integer((json_int_t)res->nperiods));
    json_object_set_new(doc, "delay_s", json_real(o->delay));
    json_object_set_new(doc, "noise_power", json_real(o->noise_p));
    json_object_set_new(doc, "noise_tput", json_real(o->noise_t));
    json_object_set_new(doc, "interp", json_string(o->linear ? "linear" : "smooth"));
    json_object_set_new(doc, "explore", json_real(o->explore));
    json_object_set_new(doc, "explore_lead_s", o->explore_lead > 0 ? json_real(o->explore_lead) : json_null());
    json_object_set_new(doc, "learn_between_events", json_boolean(o->learn_between));
    json_object_set_new(doc, "learn_budget", o->learn_between ? json_real(o->learn_budget > 0 ? o->learn_budget : CTL_LEARN_BUDGET)
                                                              : json_null());
    json_object_set_new(doc, "cap_step_w", json_real(o->cap_step));
    json_object_set_new(doc, "offline_exact", json_boolean(o->offline_exact));
    json_object_set_new(doc, "gpus", json_integer((json_int_t)res->ngpus));
    json_object_set_new(doc, "jobs_started", json_integer((json_int_t)res->jobs_started));
    json_object_set_new(doc, "baseline_w", json_real(res->baseline_w));
    json_object_set_new(doc, "max_w", json_real(res->max_w));
    json_object_set_new(doc, "targets", json_integer((json_int_t)st->set.n));
    json_object_set_new(doc, "objective", json_string(o->objective == PFLEX_OBJECTIVE_PROGRESS ? "progress"
                                                                                               : "throughput"));
    json_object_set_new(doc, "objective_note", json_string(st->obj_note));
    json_object_set_new(doc, "note", json_string(res->note));
    if (st->in)
        cli_curve_fit_json(doc, st->in);
    json_object_set_new(doc, "periods_infeasible", json_integer((json_int_t)res->periods_infeasible));
    json_object_set_new(doc, "infeasible_max_w", json_real(res->infeasible_max_w));
    json_object_set_new(doc, "periods_floor_infeasible", json_integer((json_int_t)res->periods_floor_infeasible));
    json_object_set_new(doc, "floor_infeasible_max_w", json_real(res->floor_infeasible_max_w));
    json_object_set_new(doc, "event_periods", json_integer((json_int_t)res->event_periods));
    json_object_set_new(doc, "event_progress_s", json_real(res->event_progress_s));
    json_object_set_new(doc, "gap_pct_of_site", cli_json_real(res->gap_pct_of_site));
    char gn[256];
    json_object_set_new(doc, "gap_note", json_string(gap_note(res, gn, sizeof gn)));
    json_t *pols = json_object();
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (res->ran & (1u << p))
            json_object_set_new(pols, pflex_sim_policy_name((enum pflex_sim_policy)p), summary_json(res, p));
    json_object_set_new(doc, "policies", pols);
    if (res->njobs_kept) {
        json_t *jobs = json_array();
        for (size_t j = 0; j < res->njobs_kept; j++)
            json_array_append_new(jobs, json_string(res->job_name[j]));
        json_object_set_new(doc, "jobs", jobs);
    }
    if (o->dy)
        json_object_set_new(doc, "field", field_json(o, st));
    return doc;
}

/* The report's page into f; doc is the summary (its "field" feeds the
 * per-job table, the same numbers the terminal prints). */
static int write_report(const struct sim_opts *o, struct sim_state *st, const json_t *doc, FILE *f)
{
    const struct day *dy = o->dy;
    const struct pflex_sim_result *res = &st->res;
    char title[128], notes[768];
    snprintf(title, sizeof title, "pflex simulate: %s", dy ? dy->name : "a site");
    snprintf(notes, sizeof notes,
             "%zu GPUs, %zu periods of %g s, seed %.0f, delay %g s, noise %.2f%% power / %.2f%% "
             "throughput; curves %s between measured caps; objective %s.  %s",
             res->ngpus, res->nperiods, res->period_s, o->seed_d, o->delay, 100 * o->noise_p, 100 * o->noise_t,
             o->linear ? "straight" : "smooth (monotone cubic)", st->obj_note, res->note);
    return pflex_sim_report_html(res, title, notes, json_object_get(doc, "field"),
                                 dy ? st->dayrec.t_s : NULL, dy ? st->dayrec.w : NULL,
                                 dy ? st->dayrec.n : 0, o->gnuplot, f, NULL, &st->err);
}

/* --out: summary.json, series.csv and report.html, all or none. */
static int write_out_dir(const struct sim_opts *o, struct sim_state *st, json_t *doc)
{
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST)
        return pflex_error_sys(&st->err, "%s: cannot create: %s", o->out_dir, strerror(errno));
    char path[4096];
    const char *names[3] = {"summary.json", "series.csv", "report.html"};
    pflex_outfile_t *of[3] = {NULL, NULL, NULL};
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++) {
        snprintf(path, sizeof path, "%s/%s", o->out_dir, names[i]);
        if (pflex_outfile_begin(path, NULL, &of[i], &st->err) < 0) {
            ok = 0;
            break;
        }
        FILE *f = pflex_outfile_stream(of[i]);
        if (i == 0) {
            json_dumpf(doc, f, CLI_JSON_FLAGS);
            fputc('\n', f);
        } else if (i == 1)
            write_series(f, &st->res, st->every);
        else if (write_report(o, st, doc, f) < 0)
            ok = 0;
        if (ok && pflex_outfile_finish(of[i], &st->err) < 0)
            ok = 0;
    }
    for (int i = 0; i < 3; i++) {
        if (ok && of[i] && pflex_outfile_commit(of[i], &st->err) < 0)
            ok = 0;
        else if (!ok)
            pflex_outfile_abort(of[i]);
    }
    return ok ? 0 : -1;
}

/* The table of policies. */
static void print_table(const struct sim_opts *o, const struct sim_state *st)
{
    const struct day *dy = o->dy;
    const struct pflex_sim_result *res = &st->res;
    printf("%s%s%s%zu GPUs, %zu jobs started, %zu periods of %g s (delay %g s), seed %.0f; baseline %.0f W, "
           "%zu targets\n",
           dy ? "day " : "", dy ? dy->name : "", dy ? ": " : "", res->ngpus, res->jobs_started, res->nperiods,
           res->period_s, o->delay, o->seed_d, res->baseline_w, st->set.n);
    printf("objective: %s\n", st->obj_note);
    printf("curves: %s between measured caps\n", o->linear ? "straight lines" : "smooth (monotone cubic)");
    if (st->in)
        cli_curve_fit_note(st->in);
    if (res->note[0])
        printf("note: %s\n", res->note);
    const char *unit = o->objective == PFLEX_OBJECTIVE_PROGRESS ? "progress" : "throughput";
    char gn[256];
    if (res->event_periods)
        printf("event: %zu periods with a limit under the site's uncapped draw; the site's %s over them "
               "%.1fk x s uncapped; the equal-to-oracle gap %.3f%% of it\n", res->event_periods, unit,
               res->event_progress_s / 1000, res->gap_pct_of_site);
    else
        printf("event: none (no limit under the site's uncapped draw)\n");
    if (gap_note(res, gn, sizeof gn)[0])
        printf("%s\n", gn);
    if (res->periods_infeasible || res->periods_floor_infeasible)
        printf("infeasible: %zu periods under the jobs' lowest caps summed (by up to %.0f W); %zu more where "
               "no caps keep every floor (by up to %.0f W)\n", res->periods_infeasible, res->infeasible_max_w,
               res->periods_floor_infeasible, res->floor_infeasible_max_w);
    printf("%-13s %10s %10s %9s %9s %9s %7s %6s %10s %13s %8s %7s %9s %9s %9s\n", "policy", "vs_oracle",
           "vs_equal", "recovered", "settled", ">=90%", "below=", "above", "max_over_W", "floor_breach",
           "worst", "probes", "lost", "energy", "cpu_s");
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        const struct pflex_sim_summary *s = &res->pol[p];
        if (!(res->ran & (1u << p)))
            continue;
        char v1[24], v2[24], g1[16], g2[16], g3[24], g4[16];
        snprintf(v1, sizeof v1, isnan(s->lost_vs_oracle_pct_of_site) ? "-" : "%.3f%%",
                 s->lost_vs_oracle_pct_of_site);
        snprintf(v2, sizeof v2, isnan(s->lost_vs_equal_pct_of_site) ? "-" : "%+.3f%%",
                 s->lost_vs_equal_pct_of_site);
        snprintf(g1, sizeof g1, isnan(s->gap_recovered) ? "-" : "%.1f%%", 100 * s->gap_recovered);
        snprintf(g2, sizeof g2, isnan(s->settled_mean) ? "-" : "%.1f%%", 100 * s->settled_mean);
        snprintf(g3, sizeof g3, "%zu/%zu", s->settled_over90, s->settled_periods);
        snprintf(g4, sizeof g4, s->floor_breaches ? "%.5f" : "-", s->floor_worst);
        printf("%-13s %10s %10s %9s %9s %9s %7zu %6zu %10.1f %6zu/%-6zu %8s %7zu %8.1fk %9.3f %9.2f\n",
               pflex_sim_policy_name((enum pflex_sim_policy)p), v1, v2, g1, g2, g3, s->below_equal,
               s->periods_above, s->max_over_w, s->floor_breaches, s->floor_periods, g4, s->probes,
               s->lost_s / 1000, s->energy_kwh / 1000, s->wall_s);
    }
    printf("vs_oracle, vs_equal: the %s lost over the event against the oracle's and against equal cuts', "
           "a share of the site's uncapped %s over the event (vs_equal < 0: better than equal cuts); "
           "recovered: share of the equal-to-oracle gap over the event, given only where that gap is over "
           "%g%% of the site's; settled: the same period by period, from 10 periods after each change of the "
           "limit (mean; periods at 90%% or more); below=: limited periods under equal cuts; above: "
           "periods over the limit after its ramp; worst: the most a job's T/T0 fell under its floor in a "
           "breach; lost: objective x seconds short of every job at its largest cap over the whole run, "
           "the probes' cost between events included; energy in MWh\n", unit, unit, PFLEX_SIM_GAP_MIN_PCT);
    printf("\ntime to target (docs/time-to-target.md; a period's resolution, %g s):\n", res->period_s);
    printf("%-13s %7s %5s %9s %9s %9s  %s\n", "policy", "events", "met", "p50_s", "p99_s", "worst_s", "per event (s)");
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        const struct pflex_sim_summary *s = &res->pol[p];
        if (!(res->ran & (1u << p)))
            continue;
        printf("%-13s %7zu %5zu %9.1f %9.1f %9.1f ", pflex_sim_policy_name((enum pflex_sim_policy)p), s->ttt_events,
               s->ttt_met, s->ttt_p50_s, s->ttt_p99_s, s->ttt_worst_s);
        for (size_t e = 0; e < s->ttt_events && e < 12; e++)
            printf(isnan(s->ttt_s[e]) ? " unmet" : " %.1f", s->ttt_s[e]);
        printf("%s\n", s->ttt_events > 12 ? " ..." : "");
    }
}

/* Beside the field demonstration: per job, T/T0 over the periods with a
 * limit, and the site's power share. */
static void print_field(const struct sim_opts *o, const struct sim_state *st, json_t *doc)
{
    const struct pflex_sim_result *res = &st->res;
    printf("\nbeside the field demonstration (%s): its site drew %.3f of its first hour's power "
           "over the event; per job, T/T0 over the periods with a limit:\n", o->dy->name,
           json_real_value(json_object_get(json_object_get(doc, "field"), "event_power_share")));
    printf("%-28s %5s %5s %8s", "job", "gpus", "floor", "measured");
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (res->ran & (1u << p))
            printf(" %12s", pflex_sim_policy_name((enum pflex_sim_policy)p));
    putchar('\n');
    for (size_t j = 0; j < res->njobs_kept; j++) {
        double mp = field_measured(st, res->job_name[j]);
        char ms[24];
        snprintf(ms, sizeof ms, isnan(mp) ? "-" : "%.3f", mp);
        printf("%-28s %5d %5.2f %8s", res->job_name[j], res->job_gpus[j], res->job_floor[j], ms);
        for (int p = 0; p < PFLEX_SIM_NPOL; p++)
            if (res->ran & (1u << p))
                printf(" %12.3f", job_event_mean(res, p, j));
        putchar('\n');
    }
    printf("%-28s %5s %5s %8s", "site power / baseline", "", "", "");
    json_t *ps = json_object_get(json_object_get(doc, "field"), "policy_event_power_share");
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (res->ran & (1u << p))
            printf(" %12.3f", json_real_value(json_object_get(ps, pflex_sim_policy_name(
                                                                      (enum pflex_sim_policy)p))));
    putchar('\n');
}

/* The output: --out, then the JSON, the CSV series or the tables. */
static int print_output(const struct sim_opts *o, struct sim_state *st)
{
    json_t *doc = summary_doc(o, st);
    if (o->out_dir && write_out_dir(o, st, doc) < 0) {
        json_decref(doc);
        return STAGE_BAD;
    }
    int rc = PFLEX_EXIT_OK;
    if (o->json) {
        if (cli_json_print(doc) < 0)
            rc = PFLEX_EXIT_INTERNAL;
        return rc;      /* cli_json_print frees doc */
    }
    if (o->csv)
        write_series(stdout, &st->res, st->every);
    else {
        print_table(o, st);
        if (o->dy && st->res.njobs_kept)
            print_field(o, st, doc);
    }
    json_decref(doc);
    return rc;
}

static void sim_state_fini(struct sim_state *st)
{
    pflex_sim_result_fini(&st->res);
    pflex_sim_day_fini(&st->dayrec);
    pflex_target_set_fini(&st->set);
    pflex_alloc_input_destroy(st->in);
    free(st->kinds);
    free(st->jobs);
    free(st->draws);
    free(st->pts);
    free(st->smooth_pts);
}

/* Read, simulate, then either hand back the summary document (doc) or
 * print what the options ask for (doc NULL).  Returns an exit status. */
static int simulate(struct sim_opts *o, json_t **doc)
{
    struct sim_state *st = calloc(1, sizeof *st);
    if (!st) {
        cli_error(cmd, "out of memory");
        return PFLEX_EXIT_INTERNAL;
    }
    pflex_target_set_init(&st->set);
    int rc = read_inputs(o, st);
    if (rc == 0 && o->lv.on && !doc) {
        /* the levers' event instead of the caps' day (docs/levers.md) */
        struct sim_levers_input li = {
            .day = o->dy ? o->dy->name : NULL, .njobs = st->njobs, .jobs = st->jobs, .kinds = st->kinds,
            .targets = &st->set, .start_s = st->now, .duration_s = o->duration, .baseline_w = o->baseline,
            .other_w = o->other, .noise_tput = o->noise_t, .seed = (uint64_t)o->seed_d, .json = o->json,
            .out_dir = o->out_dir};
        rc = sim_levers_run(&o->lv, &li);
        sim_state_fini(st);
        free(st);
        return rc;
    }
    if (rc == 0)
        rc = run_sim(o, st);
    if (rc == 0) {
        if (doc)
            *doc = summary_doc(o, st);
        else
            rc = print_output(o, st);
    }
    if (rc == STAGE_BAD) {
        cli_error(cmd, "%s", st->err.text);
        rc = cli_input_exit(&st->err);
    }
    sim_state_fini(st);
    free(st);
    return rc;
}

int cli_simulate_day(const char *day, const char *data, unsigned long seed, json_t **doc)
{
    char seed_s[32];
    snprintf(seed_s, sizeof seed_s, "%lu", seed);
    char *argv[] = {(char *)cmd, "--day", (char *)day, "--data", (char *)data, "--seed", seed_s,
                    "--json", NULL};
    *doc = NULL;
    struct sim_opts o;
    int rc = parse_options(8, argv, &o);
    if (rc != OPT_GO)
        return rc == 0 ? PFLEX_EXIT_INTERNAL : rc;
    return simulate(&o, doc);
}

int cmd_simulate(int argc, char **argv)
{
    struct sim_opts o;
    int rc = parse_options(argc, argv, &o);
    if (rc != OPT_GO)
        return rc;
    return simulate(&o, NULL);
}
