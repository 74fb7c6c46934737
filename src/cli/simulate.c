/* simulate.c — pflex simulate: a site of GPUs through a grid day, every
 * policy side by side on the same fleet and noise (pflex/simulate.h,
 * docs/simulate.md).  Options, inputs and output only; the engine is the
 * library's. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "cli/cli.h"
#include "controller/sim_site.h"
#include "pflex/alloc.h"
#include "pflex/openadr.h"
#include "pflex/outfile.h"
#include "pflex/pfi.h"
#include "pflex/simulate.h"
#include "pflex/sweep.h"

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
"The days (--day) come from the Emerald AI field demonstration's data\n"
"(--data DIR, default $PFLEX_SHARED_DATA or ../shared/data): the target\n"
"trace is derived from the site's measured power (the first hour's mean is\n"
"the baseline; each --bucket of the event is one target at its largest\n"
"power over the baseline, rounded up to 0.005), the jobs are the\n"
"demonstration's, on the A100 curves of its dvfs_sweep.csv.\n"
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
"  --jobs FILE         the jobs (job, curve, gpus[, tier, floor, weight])\n"
"  --pfi FILE          predicted ratio PFIs by job or curve (eq2-predicted,\n"
"                      online-warm's prior)\n"
"  --floor S           floor for jobs without one (0..1)\n"
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
"  --objective O       progress (GPU-weighted normalised throughput: the\n"
"                      default, jobs' units differ) or throughput\n"
"  --policies LIST     comma-separated subset (default: all that can run)\n"
"  --explore X         the controller's --explore (default 0.05)\n"
"  --threads N         run policies on N threads (default 2)\n"
"output:\n"
"  --json              one JSON document (summary, field comparison)\n"
"  --csv               the per-period series (aggregated by --every)\n"
"  --every N           periods per series row (default: at most 2000 rows)\n"
"  --out DIR           write summary.json, series.csv and report.html there\n"
"  --gnuplot PROG      gnuplot for the report's charts (default gnuplot)\n"
"  --progress          progress on stderr even when it is not a terminal\n"
"  -h, --help          this help\n"
"\n"
"EXAMPLES\n"
"  pflex simulate --day srp --out srp-out\n"
"  pflex simulate --day aps --json --seed 7\n"
"  pflex simulate --day caiso --pfi predicted.csv --csv > caiso.csv\n"
"  pflex simulate dvfs_sweep.csv --columns 'job=Workload,cap_w=GPU power cap,power_w=power per GPU' \\\n"
"      --gpus 10000 --duration 24h --schedule day.csv --mean-job 6h --floor 0.5\n"
"\n"
"exit: 0 ok, 1 system error, 2 bad usage or input.\n";

/* ---- the days of the field demonstration ---- */

struct day_job {
    const char *name, *curve;
    int gpus;
    double floor;
};

/* SRP 2025-05-03 (examples/emerald-event/jobs.csv, tiers from
 * derived/Fig2_performance_data.csv); the CAISO re-enactment ran the same
 * site. */
static const struct day_job srp_jobs[] = {
    {"infer_llama_8b_48g-hgfu2h87", "infer_llama_8b_48g", 48, 0.90},
    {"infer_llama_8b_48g-xhganfr6", "infer_llama_8b_48g", 48, 0.75},
    {"ft_llama_8b_p3-c6rr6ijz", "ft_llama_8b_p3", 32, 0.75},
    {"infer_llama_8b_32g-ssac4bap", "infer_llama_8b_32g", 32, 0.50},
    {"pt_mpt_7b_fast-qryepi9o", "pt_mpt_7b_fast", 48, 0.50},
    {"pt_mpt_13b_sm-gnn16mkt", "pt_mpt_13b_sm", 48, 0.50},
};
/* APS 2025-05-01: the jobs of derived/Fig5_APS_exp_per_job_power_W.csv;
 * GPUs = the job's first-hour power over its curve's power per GPU at
 * 400 W, rounded (31.8, 31.8, 47.5, 31.6, 47.7, 48.0); the record gives no
 * tiers: the SRP day's by kind (inference Flex 1/2, fine-tuning Flex 2,
 * pretraining Flex 3). */
static const struct day_job aps_jobs[] = {
    {"ft_llama_8b_dolly-txw0sl4h", "ft_llama_8b_dolly", 32, 0.75},
    {"infer_llama_8b-bw9rr4h2", "infer_llama_8b", 32, 0.90},
    {"infer_llama_8b-kxymm0ql", "infer_llama_8b", 48, 0.75},
    {"infer_llama_8b-stsiwyqz", "infer_llama_8b", 32, 0.75},
    {"pt_mpt_13b_sm-k2jychqp", "pt_mpt_13b_sm", 48, 0.50},
    {"pt_mpt_7b_fast-60hrpily", "pt_mpt_7b_fast", 48, 0.50},
};

struct day {
    const char *name, *power_csv, *date;
    const struct day_job *jobs;
    size_t njobs;
    const char *perf_csv;       /* per-job performance measured in the event, or NULL */
};

static const struct day days[] = {
    {"srp", "emerald-demo/derived/Fig2_SRP_exp_total_power_W.csv", NULL, srp_jobs, 6,
     "emerald-demo/derived/Fig2_performance_data.csv"},
    {"aps", "emerald-demo/derived/Fig3_APS_exp_total_power_W.csv", NULL, aps_jobs, 6, NULL},
    {"caiso", "emerald-demo/derived/Fig4_CAISO_reenactment_exp_total_power_W.csv", "2020-08-14-07:00",
     srp_jobs, 6, NULL},
};

#define EMERALD_COLUMNS "job=Workload,cap_w=GPU power cap,power_w=power per GPU"
#define MAX_TARGETS 32

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
    size_t len;
    memset(fp, 0, sizeof *fp);
    if (pflex_read_all(path, &buf, &len, err) < 0)
        return -1;
    char *save = NULL;
    int line = 0;
    for (char *row = strtok_r(buf, "\n", &save); row; row = strtok_r(NULL, "\n", &save)) {
        if (line++ == 0)
            continue;
        char *c1 = strchr(row, ',');
        if (!c1)
            continue;
        *c1 = 0;
        size_t l = strlen(row);
        while (l && (row[l - 1] == ' ' || row[l - 1] == '\r'))
            row[--l] = 0;
        if (!strncmp(row, "Weighted", 8) || fp->n == 16)
            continue;
        char *e;
        double v = strtod(c1 + 1, &e);
        if (e == c1 + 1) {
            free(buf);
            return pflex_error_set(err, "%s:%d: performance is not a number", path, line);
        }
        snprintf(fp->name[fp->n], sizeof fp->name[0], "%s", row);
        fp->perf[fp->n++] = v;
    }
    free(buf);
    return 0;
}

static void progress_cb(void *ud, double done)
{
    (void)ud;
    fprintf(stderr, "\rsimulate: %3.0f%%", 100 * done);
    fflush(stderr);
}

static json_t *summary_json(const struct pflex_sim_summary *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "gap_recovered", cli_json_real(s->gap_recovered));
    json_object_set_new(o, "objective_s", json_real(s->objective_s));
    json_object_set_new(o, "lost_s", json_real(s->lost_s));
    json_object_set_new(o, "lost_event_s", json_real(s->lost_event_s));
    json_object_set_new(o, "throughput_lost", json_real(s->throughput_lost));
    json_object_set_new(o, "periods_limited", json_integer((json_int_t)s->periods_limited));
    json_object_set_new(o, "periods_above", json_integer((json_int_t)s->periods_above));
    json_object_set_new(o, "periods_above_ramp", json_integer((json_int_t)s->periods_above_ramp));
    json_object_set_new(o, "max_over_w", json_real(s->max_over_w));
    json_object_set_new(o, "floor_periods", json_integer((json_int_t)s->floor_periods));
    json_object_set_new(o, "floor_breaches", json_integer((json_int_t)s->floor_breaches));
    json_object_set_new(o, "probes", json_integer((json_int_t)s->probes));
    json_object_set_new(o, "plans", json_integer((json_int_t)s->plans));
    json_object_set_new(o, "energy_kwh", json_real(s->energy_kwh));
    json_object_set_new(o, "below_equal", json_integer((json_int_t)s->below_equal));
    json_object_set_new(o, "settled_periods", json_integer((json_int_t)s->settled_periods));
    json_object_set_new(o, "settled_mean", cli_json_real(s->settled_mean));
    json_object_set_new(o, "settled_min", cli_json_real(s->settled_min));
    json_object_set_new(o, "settled_over90", json_integer((json_int_t)s->settled_over90));
    json_object_set_new(o, "cpu_s", json_real(s->wall_s));
    return o;
}

/* The series: every `every` periods one row, t, the limit (lowest), and
 * per policy the site power (largest), the objective (mean) and the gap
 * recovered over the row's periods. */
static void write_series(FILE *f, const struct pflex_sim_result *r, size_t every)
{
    fprintf(f, "t_s,offset_s,limit_w,uncapped");
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (r->ran & (1u << p)) {
            const char *n = pflex_sim_policy_name((enum pflex_sim_policy)p);
            fprintf(f, ",%s_power_w,%s_objective,%s_gap_recovered", n, n, n);
        }
    fputc('\n', f);
    int gap = (r->ran & (1u << PFLEX_SIM_EQUAL)) && (r->ran & (1u << PFLEX_SIM_ORACLE));
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
            double mx = 0, ob = 0, a = 0, b = 0;
            for (size_t q = k; q < e; q++) {
                mx = r->power_w[p][q] > mx ? r->power_w[p][q] : mx;
                ob += r->objective[p][q];
                if (gap && isfinite(r->limit_w[q])) {
                    a += r->objective[p][q] - r->objective[PFLEX_SIM_EQUAL][q];
                    b += r->objective[PFLEX_SIM_ORACLE][q] - r->objective[PFLEX_SIM_EQUAL][q];
                }
            }
            fprintf(f, ",%.3f,%.8g,", mx, ob / (double)(e - k));
            if (gap && b > 1e-6 * fabs(r->objective[PFLEX_SIM_ORACLE][k]))
                fprintf(f, "%.6f", a / b);
        }
        fputc('\n', f);
    }
}

/* Per kept job, each policy's mean T/T0 over the periods with a limit. */
static double job_event_mean(const struct pflex_sim_result *r, int p, size_t j)
{
    double s = 0;
    size_t n = 0;
    for (size_t k = 0; k < r->nperiods; k++)
        if (isfinite(r->limit_w[k])) {
            s += r->job_fraction[p][j * r->nperiods + k];
            n++;
        }
    return n ? s / (double)n : NAN;
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

int cmd_simulate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"day", required_argument, NULL, 'd'},       {"data", required_argument, NULL, 'D'},
        {"bucket", required_argument, NULL, 'b'},    {"schedule", required_argument, NULL, 's'},
        {"openadr", required_argument, NULL, 'a'},   {"target", required_argument, NULL, 't'},
        {"columns", required_argument, NULL, 'c'},   {"jobs", required_argument, NULL, 'j'},
        {"pfi", required_argument, NULL, 'p'},       {"floor", required_argument, NULL, 'f'},
        {"gpus", required_argument, NULL, 'G'},      {"job-gpus", required_argument, NULL, 'g'},
        {"mean-job", required_argument, NULL, 'm'},  {"start", required_argument, NULL, 'S'},
        {"duration", required_argument, NULL, 'u'},  {"period", required_argument, NULL, 'P'},
        {"delay", required_argument, NULL, 'L'},     {"settle", required_argument, NULL, 'T'},
        {"noise-power", required_argument, NULL, 'n'}, {"noise-tput", required_argument, NULL, 'N'},
        {"seed", required_argument, NULL, 'e'},      {"other-w", required_argument, NULL, 'o'},
        {"baseline-w", required_argument, NULL, 'B'}, {"objective", required_argument, NULL, 'O'},
        {"policies", required_argument, NULL, 'y'},  {"explore", required_argument, NULL, 'x'},
        {"threads", required_argument, NULL, 'H'},   {"json", no_argument, NULL, 'J'},
        {"csv", no_argument, NULL, 'C'},             {"every", required_argument, NULL, 'E'},
        {"out", required_argument, NULL, 'U'},       {"gnuplot", required_argument, NULL, 'Q'},
        {"progress", no_argument, NULL, 'R'},        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = "simulate";
    const char *day_name = NULL, *data = NULL, *schedule = NULL, *oadr = NULL, *columns = NULL;
    const char *jobs_path = NULL, *pfi_path = NULL, *out_dir = NULL, *gnuplot = "gnuplot";
    const char *targets_s[MAX_TARGETS], *start_s = NULL, *policies_s = NULL;
    size_t ntargets_s = 0;
    double bucket = 600, floor_def = NAN, gpus = 0, mean_job = 0, duration = NAN, period = 1, delay = 1;
    double settle = 0, noise_p = 0.004, noise_t = 0.005, seed_d = 1, other = 0, baseline = 0, explore = 0.05;
    double threads = 2, every_d = 0;
    int glo = 8, ghi = 64, gstep = 8, json = 0, csv = 0, force_progress = 0, objective_set = 0;
    enum pflex_objective objective = PFLEX_OBJECTIVE_PROGRESS;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': day_name = optarg; break;
        case 'D': data = optarg; break;
        case 'b': if (parse_dur(cmd, "--bucket", optarg, &bucket) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 's': schedule = optarg; break;
        case 'a': oadr = optarg; break;
        case 't':
            if (ntargets_s == MAX_TARGETS)
                return cli_usage_error(cmd, "at most %d --target", MAX_TARGETS);
            targets_s[ntargets_s++] = optarg;
            break;
        case 'c': columns = optarg; break;
        case 'j': jobs_path = optarg; break;
        case 'p': pfi_path = optarg; break;
        case 'f': if (cli_parse_double(cmd, "--floor", optarg, 0, 1, &floor_def) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'G': if (cli_parse_double(cmd, "--gpus", optarg, 1, 1e7, &gpus) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'g': {
            int a = 0, b = 0, s = 0, m = sscanf(optarg, "%d:%d:%d", &a, &b, &s);
            if (m < 2 || a < 1 || b < a || b > 100000 || (m == 3 && s < 1))
                return cli_usage_error(cmd, "--job-gpus: want A:B[:STEP] with 1 <= A <= B");
            glo = a;
            ghi = b;
            gstep = m == 3 ? s : 1;
            break;
        }
        case 'm': if (parse_dur(cmd, "--mean-job", optarg, &mean_job) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'S': start_s = optarg; break;
        case 'u': if (parse_dur(cmd, "--duration", optarg, &duration) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'P': if (parse_dur(cmd, "--period", optarg, &period) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'L': if (parse_dur(cmd, "--delay", optarg, &delay) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'T': if (parse_dur(cmd, "--settle", optarg, &settle) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'n': if (cli_parse_double(cmd, "--noise-power", optarg, 0, 0.5, &noise_p) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'N': if (cli_parse_double(cmd, "--noise-tput", optarg, 0, 0.5, &noise_t) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'e': if (cli_parse_double(cmd, "--seed", optarg, 0, 9007199254740991.0, &seed_d) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'o': if (cli_parse_double(cmd, "--other-w", optarg, 0, 1e10, &other) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'B': if (cli_parse_double(cmd, "--baseline-w", optarg, 1, 1e10, &baseline) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'O':
            if (!strcmp(optarg, "progress"))
                objective = PFLEX_OBJECTIVE_PROGRESS;
            else if (!strcmp(optarg, "throughput"))
                objective = PFLEX_OBJECTIVE_THROUGHPUT;
            else
                return cli_usage_error(cmd, "--objective: progress or throughput, not '%s'", optarg);
            objective_set = 1;
            break;
        case 'y': policies_s = optarg; break;
        case 'x': if (cli_parse_double(cmd, "--explore", optarg, 0, 0.5, &explore) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'H': if (cli_parse_double(cmd, "--threads", optarg, 1, 16, &threads) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'J': json = 1; break;
        case 'C': csv = 1; break;
        case 'E': if (cli_parse_double(cmd, "--every", optarg, 1, 1e9, &every_d) < 0) return PFLEX_EXIT_BAD_INPUT; break;
        case 'U': out_dir = optarg; break;
        case 'Q': gnuplot = optarg; break;
        case 'R': force_progress = 1; break;
        case 'h': return cli_help(help);
        default: return cli_bad_option(cmd, argv, opts);
        }
    }
    (void)objective_set;
    if (json && csv)
        return cli_usage_error(cmd, "--csv and --json exclude each other");
    if (argc - optind > 1)
        return cli_usage_error(cmd, "one sweep file at most");
    if (!(period > 0))
        return cli_usage_error(cmd, "--period must be positive");
    if (!day_name && !schedule && !oadr && !ntargets_s)
        return cli_usage_error(cmd, "give a day (--day), a --schedule, an --openadr file or a --target");
    const struct day *dy = NULL;
    if (day_name) {
        for (size_t i = 0; i < sizeof days / sizeof *days; i++)
            if (!strcmp(days[i].name, day_name))
                dy = &days[i];
        if (!dy)
            return cli_usage_error(cmd, "--day: srp, aps or caiso, not '%s'", day_name);
        if (gpus > 0 || jobs_path)
            return cli_usage_error(cmd, "--day runs the demonstration's own jobs: no --gpus or --jobs");
    }
    if (!data)
        data = getenv("PFLEX_SHARED_DATA");
    if (!data)
        data = "../shared/data";
    unsigned policies = 0;
    if (policies_s) {
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s", policies_s);
        char *save = NULL;
        for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            enum pflex_sim_policy p;
            if (pflex_sim_policy_parse(t, &p) < 0)
                return cli_usage_error(cmd, "--policies: unknown policy '%s' (equal, eq2-measured, "
                                       "eq2-predicted, tpw, online-cold, online-warm, oracle)", t);
            policies |= 1u << p;
        }
    }

    int rc = PFLEX_EXIT_OK;
    pflex_error_t err;
    char sweep_buf[4096], power_buf[4096], perf_buf[4096];
    const char *sweep_path = optind < argc ? argv[optind] : NULL;
    struct pflex_sim_day dayrec = {0};
    pflex_target_set_t set;
    pflex_target_set_init(&set);
    pflex_alloc_input_t *in = NULL;
    struct pflex_sim_kind *kinds = NULL;
    struct pflex_sim_job *jobs = NULL;
    double *pts = NULL;
    struct pflex_sim_result res = {0};
    struct field_perf fperf = {0};
    int have_perf = 0;
    if (dy) {
        snprintf(power_buf, sizeof power_buf, "%s/%s", data, dy->power_csv);
        if (!sweep_path) {
            snprintf(sweep_buf, sizeof sweep_buf, "%s/emerald-demo/data/dvfs_sweep.csv", data);
            sweep_path = sweep_buf;
            if (!columns)
                columns = EMERALD_COLUMNS;
        }
        struct stat sb;
        if (stat(power_buf, &sb) != 0) {
            cli_error(cmd, "%s: not found: the day needs the field demonstration's data (--data DIR or "
                      "PFLEX_SHARED_DATA: the folder holding emerald-demo/)", power_buf);
            return PFLEX_EXIT_BAD_INPUT;
        }
        if (pflex_sim_day_read(power_buf, dy->date, bucket, &set, &dayrec, &err) < 0)
            goto bad;
        if (dy->perf_csv) {
            snprintf(perf_buf, sizeof perf_buf, "%s/%s", data, dy->perf_csv);
            if (read_perf(perf_buf, &fperf, &err) < 0)
                goto bad;
            have_perf = 1;
        }
    }
    if (!sweep_path) {
        rc = cli_usage_error(cmd, "give a sweep (the jobs' measured curves)");
        goto done;
    }
    /* the curves */
    struct pflex_alloc_source src = {.sweep_path = sweep_path, .columns = columns, .pfi_path = NULL,
                                     .jobs_path = jobs_path, .floor = floor_def, .by = NULL};
    if (pflex_alloc_input_read(&src, &in, &err) < 0)
        goto bad;
    cli_print_warnings(cmd, in->warnings);
    pflex_alloc_input_t *pin = NULL;
    if (pfi_path) {
        src.pfi_path = pfi_path;
        if (pflex_alloc_input_read(&src, &pin, &err) < 0)
            goto bad;
    }
    size_t nk = in->njobs, tot = 0;
    for (size_t j = 0; j < nk; j++)
        tot += in->jobs[j].npoints;
    kinds = calloc(nk ? nk : 1, sizeof *kinds);
    pts = malloc((3 * tot + 1) * sizeof *pts);
    if (!kinds || !pts) {
        pflex_alloc_input_destroy(pin);
        pflex_error_sys(&err, "out of memory");
        goto bad;
    }
    double *pp = pts;
    for (size_t j = 0; j < nk; j++) {
        const struct pflex_alloc_job *aj = &in->jobs[j];
        if (aj->npoints < 2 || !in->caps || !in->caps[j].cap_w) {
            pflex_alloc_input_destroy(pin);
            pflex_error_set(&err, "%s: job '%s' has no measured curve under its caps (2 or more binding caps)",
                            sweep_path, aj->name);
            goto bad;
        }
        struct pflex_sim_kind *k = &kinds[j];
        k->name = aj->name;
        k->n = aj->npoints;
        k->cap_w = pp;
        k->power_w = pp + k->n;
        k->fraction = pp + 2 * k->n;
        for (size_t q = 0; q < k->n; q++) {
            pp[q] = in->caps[j].cap_w[q];
            pp[k->n + q] = aj->p0_w * (1 - aj->x[q]);
            pp[2 * k->n + q] = 1 - aj->loss[q];
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
    /* the jobs */
    size_t njobs = 0;
    if (dy) {
        jobs = calloc(dy->njobs, sizeof *jobs);
        if (!jobs) {
            pflex_error_sys(&err, "out of memory");
            goto bad;
        }
        for (size_t i = 0; i < dy->njobs; i++) {
            size_t k = 0;
            while (k < nk && strcmp(kinds[k].name, dy->jobs[i].curve))
                k++;
            if (k == nk) {
                pflex_error_set(&err, "%s: no curve '%s' for the day's job '%s'", sweep_path, dy->jobs[i].curve,
                                dy->jobs[i].name);
                goto bad;
            }
            jobs[i] = (struct pflex_sim_job){.name = dy->jobs[i].name, .kind = k, .gpus = dy->jobs[i].gpus,
                                             .floor = isnan(floor_def) ? dy->jobs[i].floor : floor_def,
                                             .weight = 1};
        }
        njobs = dy->njobs;
    } else if (!(gpus > 0)) {
        jobs = calloc(nk ? nk : 1, sizeof *jobs);
        if (!jobs) {
            pflex_error_sys(&err, "out of memory");
            goto bad;
        }
        for (size_t j = 0; j < nk; j++)
            jobs[j] = (struct pflex_sim_job){.name = in->jobs[j].name, .kind = j, .gpus = in->jobs[j].gpus,
                                             .floor = in->jobs[j].floor, .weight = in->jobs[j].weight};
        njobs = nk;
    }
    /* the targets */
    double now = dy ? dayrec.start_s : 0;
    if (start_s) {
        if (pflex_target_parse_time(start_s, 0, &now, &err) < 0) {
            rc = cli_usage_error(cmd, "--start: %s", err.text);
            goto done;
        }
    } else if (!dy) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        now = floor((double)ts.tv_sec);
    }
    if (isnan(duration))
        duration = dy ? dayrec.end_s - dayrec.start_s : 86400;
    for (size_t i = 0; i < ntargets_s; i++) {
        struct pflex_target t;
        if (pflex_target_parse(targets_s[i], now, &t, &err) < 0) {
            rc = cli_usage_error(cmd, "--target '%s': %s", targets_s[i], err.text);
            goto done;
        }
        snprintf(t.source, sizeof t.source, "cli");
        if (pflex_target_set_add(&set, &t, &err) < 0)
            goto bad;
    }
    if (schedule && pflex_target_schedule_read(schedule, now, &set, &err) < 0)
        goto bad;
    double base_est = baseline;
    if (!(base_est > 0)) {
        base_est = other;
        for (size_t i = 0; i < njobs; i++)
            base_est += jobs[i].gpus * kinds[jobs[i].kind].power_w[0];
        if (!njobs) {
            double m = 0;
            for (size_t k = 0; k < nk; k++)
                m += kinds[k].power_w[0] / (double)nk;
            base_est += gpus * m;
        }
    }
    if (oadr) {
        char *buf;
        size_t len;
        if (pflex_read_all(oadr, &buf, &len, &err) < 0)
            goto bad;
        struct pflex_oadr_opts o;
        pflex_oadr_opts_default(&o, now);
        o.baseline_w = base_est;
        o.seed = (uint64_t)seed_d;
        pflex_oadr_events_t evs;
        memset(&evs, 0, sizeof evs);
        int orc = pflex_oadr_parse_events(buf, len, oadr, &o, &set, &evs, &err);
        free(buf);
        pflex_oadr_events_fini(&evs);
        if (orc < 0)
            goto bad;
    }
    struct pflex_sim_config cfg = {
        .nkinds = nk, .kinds = kinds, .njobs = njobs, .jobs = jobs, .ngpus = (size_t)gpus,
        .gpus_lo = glo, .gpus_hi = ghi, .gpus_step = gstep, .mean_job_s = mean_job,
        .start_s = now, .duration_s = duration, .period_s = period, .delay_s = delay, .settle_s = settle,
        .noise_power = noise_p, .noise_tput = noise_t, .seed = (uint64_t)seed_d, .targets = &set,
        .baseline_w = baseline, .other_w = other, .objective = objective, .z = 2, .explore_step = explore,
        .policies = policies, .controller = &ctl_sim, .keep_jobs = njobs && njobs <= 64,
        .threads = (int)threads,
    };
    int prog = cli_progress_wanted(force_progress);
    if (prog) {
        cfg.progress = progress_cb;
        cfg.progress_ud = NULL;
    }
    if (pflex_sim_run(&cfg, &res, &err) < 0) {
        if (prog)
            fputc('\n', stderr);
        goto bad;
    }
    if (prog)
        fprintf(stderr, "\rsimulate: done \n");

    /* output */
    size_t every = every_d > 0 ? (size_t)every_d : (res.nperiods + 1999) / 2000;
    if (!every)
        every = 1;
    const char *obj_note = objective == PFLEX_OBJECTIVE_PROGRESS
        ? "progress: sum of GPUs x T/T0 (normalised progress: the jobs' throughput units differ)"
        : "throughput: sum of the jobs' rates (they must share a unit)";
    json_t *doc = json_object();
    json_object_set_new(doc, "day", dy ? json_string(dy->name) : json_null());
    json_object_set_new(doc, "seed", json_integer((json_int_t)seed_d));
    json_object_set_new(doc, "start_s", json_real(res.start_s));
    json_object_set_new(doc, "period_s", json_real(res.period_s));
    json_object_set_new(doc, "periods", json_integer((json_int_t)res.nperiods));
    json_object_set_new(doc, "delay_s", json_real(delay));
    json_object_set_new(doc, "noise_power", json_real(noise_p));
    json_object_set_new(doc, "noise_tput", json_real(noise_t));
    json_object_set_new(doc, "gpus", json_integer((json_int_t)res.ngpus));
    json_object_set_new(doc, "jobs_started", json_integer((json_int_t)res.jobs_started));
    json_object_set_new(doc, "baseline_w", json_real(res.baseline_w));
    json_object_set_new(doc, "max_w", json_real(res.max_w));
    json_object_set_new(doc, "targets", json_integer((json_int_t)set.n));
    json_object_set_new(doc, "objective", json_string(objective == PFLEX_OBJECTIVE_PROGRESS ? "progress"
                                                                                            : "throughput"));
    json_object_set_new(doc, "objective_note", json_string(obj_note));
    json_object_set_new(doc, "note", json_string(res.note));
    json_t *pols = json_object();
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (res.ran & (1u << p))
            json_object_set_new(pols, pflex_sim_policy_name((enum pflex_sim_policy)p), summary_json(&res.pol[p]));
    json_object_set_new(doc, "policies", pols);
    if (dy) {
        json_t *f = json_object();
        json_object_set_new(f, "record", json_string(dy->power_csv));
        json_object_set_new(f, "baseline_w", json_real(dayrec.baseline_w));
        json_object_set_new(f, "event_start_s", json_real(dayrec.event_start_s));
        json_object_set_new(f, "event_end_s", json_real(dayrec.event_end_s));
        json_object_set_new(f, "bucket_s", json_real(bucket));
        /* the measured site's mean power over the event against each
         * policy's, both as a share of their own baselines */
        double ms = 0;
        size_t mn = 0;
        for (size_t i = 0; i < dayrec.n; i++)
            if (dayrec.t_s[i] >= dayrec.event_start_s && dayrec.t_s[i] < dayrec.event_end_s) {
                ms += dayrec.w[i];
                mn++;
            }
        json_object_set_new(f, "event_power_share", json_real(mn ? ms / (double)mn / dayrec.baseline_w : NAN));
        json_t *ps = json_object();
        for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
            if (!(res.ran & (1u << p)))
                continue;
            double s = 0;
            size_t n = 0;
            for (size_t k = 0; k < res.nperiods; k++)
                if (isfinite(res.limit_w[k])) {
                    s += res.power_w[p][k];
                    n++;
                }
            json_object_set_new(ps, pflex_sim_policy_name((enum pflex_sim_policy)p),
                                json_real(n ? s / (double)n / res.baseline_w : NAN));
        }
        json_object_set_new(f, "policy_event_power_share", ps);
        json_t *jj = json_array();
        for (size_t j = 0; j < res.njobs_kept; j++) {
            json_t *o = json_object();
            json_object_set_new(o, "job", json_string(res.job_name[j]));
            json_object_set_new(o, "gpus", json_integer(res.job_gpus[j]));
            json_object_set_new(o, "floor", json_real(res.job_floor[j]));
            double mp = NAN;
            for (size_t q = 0; have_perf && q < fperf.n; q++)
                if (!strcmp(fperf.name[q], res.job_name[j]))
                    mp = fperf.perf[q];
            json_object_set_new(o, "measured", cli_json_real(mp));
            json_t *pj = json_object();
            for (int p = 0; p < PFLEX_SIM_NPOL; p++)
                if (res.ran & (1u << p))
                    json_object_set_new(pj, pflex_sim_policy_name((enum pflex_sim_policy)p),
                                        cli_json_real(job_event_mean(&res, p, j)));
            json_object_set_new(o, "policies", pj);
            json_array_append_new(jj, o);
        }
        json_object_set_new(f, "jobs", jj);
        json_object_set_new(doc, "field", f);
    }
    if (out_dir) {
        if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
            pflex_error_sys(&err, "%s: cannot create: %s", out_dir, strerror(errno));
            json_decref(doc);
            goto bad;
        }
        char path[4096];
        const char *names[3] = {"summary.json", "series.csv", "report.html"};
        pflex_outfile_t *of[3] = {NULL, NULL, NULL};
        int ok = 1;
        for (int i = 0; i < 3 && ok; i++) {
            snprintf(path, sizeof path, "%s/%s", out_dir, names[i]);
            if (pflex_outfile_begin(path, NULL, &of[i], &err) < 0) {
                ok = 0;
                break;
            }
            FILE *f = pflex_outfile_stream(of[i]);
            if (i == 0) {
                json_dumpf(doc, f, CLI_JSON_FLAGS);
                fputc('\n', f);
            } else if (i == 1)
                write_series(f, &res, every);
            else {
                char title[128], notes[512];
                snprintf(title, sizeof title, "pflex simulate: %s", dy ? dy->name : "a site");
                snprintf(notes, sizeof notes,
                         "%zu GPUs, %zu periods of %g s, seed %.0f, delay %g s, noise %.2f%% power / %.2f%% "
                         "throughput; objective %s.  %s",
                         res.ngpus, res.nperiods, res.period_s, seed_d, delay, 100 * noise_p, 100 * noise_t,
                         obj_note, res.note);
                if (pflex_sim_report_html(&res, title, notes, dy ? dayrec.t_s : NULL, dy ? dayrec.w : NULL,
                                          dy ? dayrec.n : 0, gnuplot, f, NULL, &err) < 0)
                    ok = 0;
            }
            if (ok && pflex_outfile_finish(of[i], &err) < 0)
                ok = 0;
        }
        for (int i = 0; i < 3; i++) {
            if (ok && of[i] && pflex_outfile_commit(of[i], &err) < 0)
                ok = 0;
            else if (!ok)
                pflex_outfile_abort(of[i]);
        }
        if (!ok) {
            json_decref(doc);
            goto bad;
        }
    }
    if (json) {
        if (cli_json_print(doc) < 0)
            rc = PFLEX_EXIT_INTERNAL;
    } else {
        if (csv)
            write_series(stdout, &res, every);
        else {
            printf("%s%s%s%zu GPUs, %zu jobs started, %zu periods of %g s (delay %g s), seed %.0f; baseline %.0f W, "
                   "%zu targets\n",
                   dy ? "day " : "", dy ? dy->name : "", dy ? ": " : "", res.ngpus, res.jobs_started, res.nperiods, res.period_s,
                   delay, seed_d, res.baseline_w, set.n);
            printf("objective: %s\n", obj_note);
            if (res.note[0])
                printf("note: %s\n", res.note);
            printf("%-13s %9s %9s %9s %7s %6s %10s %13s %7s %9s %9s\n", "policy", "recovered", "settled",
                   ">=90%", "below=", "above", "max_over_W", "floor_breach", "probes", "energy", "cpu_s");
            for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
                const struct pflex_sim_summary *s = &res.pol[p];
                if (!(res.ran & (1u << p)))
                    continue;
                char g1[16], g2[16], g3[24];
                snprintf(g1, sizeof g1, isnan(s->gap_recovered) ? "-" : "%.1f%%", 100 * s->gap_recovered);
                snprintf(g2, sizeof g2, isnan(s->settled_mean) ? "-" : "%.1f%%", 100 * s->settled_mean);
                snprintf(g3, sizeof g3, "%zu/%zu", s->settled_over90, s->settled_periods);
                printf("%-13s %9s %9s %9s %7zu %6zu %10.1f %6zu/%-6zu %7zu %8.1fk %9.2f\n",
                       pflex_sim_policy_name((enum pflex_sim_policy)p), g1, g2, g3, s->below_equal,
                       s->periods_above, s->max_over_w, s->floor_breaches, s->floor_periods, s->probes,
                       s->energy_kwh / 1000, s->wall_s);
            }
            printf("recovered: share of the equal-to-oracle gap in objective lost over the periods with a limit; "
                   "settled: the same period by period, from 10 periods after each change of the limit "
                   "(mean; periods at 90%% or more); below=: limited periods under equal cuts; above: "
                   "periods over the limit after its ramp; energy in MWh\n");
            if (dy && res.njobs_kept) {
                printf("\nbeside the field demonstration (%s): its site drew %.3f of its first hour's power "
                       "over the event; per job, T/T0 over the periods with a limit:\n", dy->name,
                       json_real_value(json_object_get(json_object_get(doc, "field"), "event_power_share")));
                printf("%-28s %5s %5s %8s", "job", "gpus", "floor", "measured");
                for (int p = 0; p < PFLEX_SIM_NPOL; p++)
                    if (res.ran & (1u << p))
                        printf(" %12s", pflex_sim_policy_name((enum pflex_sim_policy)p));
                putchar('\n');
                for (size_t j = 0; j < res.njobs_kept; j++) {
                    double mp = NAN;
                    for (size_t q = 0; have_perf && q < fperf.n; q++)
                        if (!strcmp(fperf.name[q], res.job_name[j]))
                            mp = fperf.perf[q];
                    char ms[24];
                    snprintf(ms, sizeof ms, isnan(mp) ? "-" : "%.3f", mp);
                    printf("%-28s %5d %5.2f %8s", res.job_name[j], res.job_gpus[j], res.job_floor[j], ms);
                    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
                        if (res.ran & (1u << p))
                            printf(" %12.3f", job_event_mean(&res, p, j));
                    putchar('\n');
                }
                printf("%-28s %5s %5s %8s", "site power / baseline", "", "", "");
                json_t *ps = json_object_get(json_object_get(doc, "field"), "policy_event_power_share");
                for (int p = 0; p < PFLEX_SIM_NPOL; p++)
                    if (res.ran & (1u << p))
                        printf(" %12.3f", json_real_value(json_object_get(ps, pflex_sim_policy_name(
                                                                                  (enum pflex_sim_policy)p))));
                putchar('\n');
            }
        }
        json_decref(doc);
    }
    goto done;
bad:
    cli_error(cmd, "%s", err.text);
    rc = cli_input_exit(&err);
done:
    pflex_sim_result_fini(&res);
    pflex_sim_day_fini(&dayrec);
    pflex_target_set_fini(&set);
    pflex_alloc_input_destroy(in);
    free(kinds);
    free(jobs);
    free(pts);
    return rc;
}
