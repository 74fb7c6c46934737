/* study.c — pflex study: the characterisation study on the built-in fleet.
 *
 * The options, the help, and what is printed; the study itself is the
 * library's (pflex/study/study.h): it sweeps the fleet, computes PFI, the
 * calibration, the allocation comparison, the comparison with the paper and
 * the prediction sections, and writes the output set.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/study_predict.h"
#include "pflex/sim/calib.h"
#include "pflex/study/study.h"


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
"  --progress       (progress is always on stderr: redrawn on a terminal,\n"
"                   else a line every 10 s)\n"
"  --json           print summary.json on stdout instead of the table\n"
"  -h, --help       this help\n"
"\n"
"EXAMPLES\n"
"  pflex study                                  # writes study-out/, about 1 s\n"
"  pflex study --out study-out --json > summary.json\n"
"  pflex study --jobs 10 --no-charts --out quick  # ten runs spread over the fleet\n"
"  pflex study --fleet extended --out ext       # thousands of generated groups\n"
"  pflex study --caps 700:200:100 --repeats 1 --seed 2 --out coarse\n"
"\n"
"Same seed, same output: the CSVs and summary.json are byte-identical from\n"
"run to run except summary.json's runtime_s.\n"
"exit: 0 ok, 1 internal or write error, 2 bad usage.\n";

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

/* A JSON number's value; NaN for null (a value that was not finite). */
static double num_or_nan(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The comparison with the study's numbers (summary.json's "study"). */
static void print_compare(const json_t *o, size_t pairs)
{
    size_t i, nerr = 0;
    json_t *g;
    double abs_err = json_number_value(json_object_get(o, "mean_abs_error"));
    printf("simulated beside measured ratio PFI, headline H200 groups (no PFI calibrated the "
           "simulator: real H200 runs, Emerald A100 caps and llm-foundry throughputs did):\n");
    json_array_foreach(json_object_get(o, "groups"), i, g) {
        json_t *m = json_object_get(g, "measured");
        nerr += json_is_number(m);
        printf("  %-46s %6.2f sim  %5.2f measured\n",
               json_string_value(json_object_get(g, "group")),
               json_number_value(json_object_get(g, "simulated")),
               num_or_nan(m));
    }
    static const char *const cname[3] = {"dense", "moe_pt", "moe_lora"};
    for (int c = 0; c < 3; c++) {
        const json_t *m = pflex_report_json_get(o, "medians", cname[c], NULL);
        printf("  median %-9s n=%2zu  %5.2f simulated, study %.2f\n", cname[c],
               (size_t)json_integer_value(json_object_get(m, "n")),
               num_or_nan(json_object_get(m, "simulated")),
               json_number_value(json_object_get(m, "study")));
    }
    const json_t *kw = json_object_get(o, "kruskal_dunn");
    if (json_object_get(kw, "kruskal_h"))
        printf("  Kruskal-Wallis H = %.2f, p = %.4f (study: H = 12.37, p = 0.0021); Dunn-Holm p: "
               "dense-MoE PT %.3f, dense-MoE LoRA %.3f, MoE PT-MoE LoRA %.3f\n",
               json_number_value(json_object_get(kw, "kruskal_h")),
               json_number_value(json_object_get(kw, "kruskal_p")),
               json_number_value(pflex_report_json_get(kw, "dunn_holm_p", "dense-moe_pt", NULL)),
               json_number_value(pflex_report_json_get(kw, "dunn_holm_p", "dense-moe_lora", NULL)),
               json_number_value(pflex_report_json_get(kw, "dunn_holm_p", "moe_pt-moe_lora",
                                                       NULL)));
    const json_t *gs = json_object_get(o, "grid_sensitivity");
    double rho = num_or_nan(json_object_get(o, "h100_h200_spearman"));
    double med = num_or_nan(json_object_get(gs, "median_change"));
    double rho_g = num_or_nan(json_object_get(gs, "spearman"));
    printf("  H100 vs H200 matched groups: Spearman %.3f over %zu pairs (study 0.943)\n", rho,
           pairs);
    printf("  coarse grid (4 caps) vs 6 caps, 8-GPU groups: median change %+.1f %%, Spearman "
           "%.3f (study +10.7 %%, 0.940)\n", 100 * med, rho_g);
    if (nerr)
        printf("  mean |simulated - measured| over %zu groups: %.3f (out of sample: the simulator "
               "is calibrated on physical measurements only, no PFI; `make calibrate` prints it "
               "noise-free)\n", nerr, abs_err);
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

/* What the command line asks for. */
struct study_args {
    struct pflex_study_config cfg;
    const char *out_dir, *data_opt, *gnuplot, *samples;
    int progress, json;
    struct cli_progress prog;
};

static void show_progress(void *ctx, size_t done, size_t total)
{
    char what[64];
    snprintf(what, sizeof what, "swept %zu/%zu runs", done, total);
    cli_progress_show(ctx, (double)done / (double)total, what);
}

/* One option into a; 0, or an exit code. */
static int study_option(struct study_args *a, int c, char **argv, const struct option *opts)
{
    struct pflex_study_config *cfg = &a->cfg;
    double v;
    switch (c) {
    case 'o': a->out_dir = optarg; break;
    case 's':
        if (parse_count("--seed", optarg, 0, 9007199254740992.0, &v) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        cfg->seed = (uint64_t)v;
        break;
    case 'c':
        if (cli_parse_caps("study", "--caps", optarg, 2, cfg->caps_w, PFLEX_STUDY_MAX_CAPS,
                           &cfg->ncaps, &cfg->cap_step_w))
            return PFLEX_EXIT_BAD_INPUT;
        cli_caps_sort_desc(cfg->caps_w, cfg->ncaps);     /* the study sweeps from high to low */
        cfg->caps_given = 1;
        break;
    case 'S': a->samples = optarg; break;
    case 'F':
        if (!strcmp(optarg, "study"))
            cfg->set = PFLEX_FLEET_STUDY;
        else if (!strcmp(optarg, "extended"))
            cfg->set = PFLEX_FLEET_EXTENDED;
        else
            return cli_usage_error("study", "--fleet: '%s' is not study or extended", optarg);
        break;
    case 'r':
        if (parse_count("--repeats", optarg, 1, 100, &v) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        cfg->repeats = (int)v;
        break;
    case 'R':
        if (cli_parse_double("study", "--range", optarg, 1e-6, 1.0, &cfg->range) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case 'j':
        if (parse_count("--jobs", optarg, 1, 1e9, &v) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        cfg->njobs = (size_t)v;
        break;
    case 't':
        if (parse_count("--threads", optarg, 1, 64, &v) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        cfg->threads = (int)v;
        break;
    case 'd': a->data_opt = optarg; break;
    case 'g': a->gnuplot = optarg; break;
    case 'N': a->gnuplot = NULL; break;
    case 'p': a->progress = 1; break;
    case 'J': a->json = 1; break;
    default: return cli_bad_option("study", argv, opts);
    }
    return 0;
}

/* The command line into a: 0, -1 after --help (printed), or an exit code. */
static int study_parse(int argc, char **argv, struct study_args *a)
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
    int c, rc;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    memset(a, 0, sizeof *a);
    pflex_study_config_init(&a->cfg);
    a->cfg.threads = cpus > 0 ? (int)cpus : 1;
    a->out_dir = "study-out";
    a->gnuplot = "gnuplot";
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            cli_help(help);
            return -1;
        }
        if ((rc = study_option(a, c, argv, opts)) != 0)
            return rc;
    }
    if (optind < argc)
        return cli_usage_error("study", "unexpected argument '%s'", argv[optind]);
    return 0;
}

/* The table, the comparison and the prediction sections, or summary.json. */
/* The grid day's line: each policy's share of the equal-to-oracle gap. */
static void print_grid_day(const json_t *g)
{
    const json_t *pols = json_object_get(g, "policies");
    if (!json_is_object(pols)) {
        const char *note = json_string_value(json_object_get(g, "note"));
        printf("\nthe grid day (SRP, 3 May 2025): left out: %s\n", note ? note : "no result");
        return;
    }
    /* the site's terms first: the share of a gap under 1 % of the site's
     * progress is not given (docs/simulate.md) */
    printf("\nthe grid day (SRP, 3 May 2025), progress lost over the event against the oracle, "
           "%% of the site's:");
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)pols, name, v) {
        const json_t *lo = json_object_get(v, "lost_vs_oracle_pct_of_site");
        if (json_is_number(lo))
            printf(" %s %.3f%%", name, json_number_value(lo));
    }
    printf("\n");
    int any = 0;
    json_object_foreach((json_t *)pols, name, v) {
        const json_t *gr = json_object_get(v, "gap_recovered");
        if (json_is_number(gr))
            printf("%s %s %.1f%%", any++ ? "" : "share of the equal-to-oracle gap recovered:", name,
                   100 * json_number_value(gr));
    }
    if (any)
        printf("\n");
    else if (json_is_string(json_object_get(g, "gap_note")))
        printf("%s\n", json_string_value(json_object_get(g, "gap_note")));
}

static int study_print(const struct study_args *a, const pflex_study_t *s, int charts)
{
    const json_t *summary = pflex_study_summary(s), *pred = pflex_study_prediction(s);
    if (a->json) {
        if (cli_json_print(json_incref((json_t *)summary)) < 0)
            return PFLEX_EXIT_INTERNAL;
    } else {
        print_table(pflex_study_report(s), summary, a->out_dir, charts);
        print_compare(json_object_get(summary, "study"), pflex_study_pairs(s));
        print_grid_day(json_object_get(summary, "grid_day"));
        if (pred)
            study_predict_print(stdout, pred);
        if (a->out_dir)
            printf("\nthe report: %s/report.html (open it in a browser); every number above is in "
                   "%s/summary.json\n", a->out_dir, a->out_dir);
    }
    return fflush(stdout) == 0 ? PFLEX_EXIT_OK : PFLEX_EXIT_INTERNAL;
}

/* The grid day: the SRP event of 3 May 2025 run by `pflex simulate`'s
 * engine, every policy side by side on the field demonstration's jobs
 * (summary.json's grid_day: that command's --json document; the report's
 * section).  Without the shared data, or should the day fail, grid_day
 * says why instead ({"day": null, "note": ...}).  0, or -1 with err. */
static int study_grid_day(pflex_study_t *s, const struct study_args *a, const char *why,
                          pflex_error_t *err)
{
    const char *data = a->cfg.data_dir;
    char dir[PATH_MAX], probe[PATH_MAX + 32];
    json_t *doc = NULL;
    if (data) {
        /* --data may name the folder holding emerald-demo/ or that folder */
        struct stat sb;
        snprintf(probe, sizeof probe, "%s/emerald-demo", data);
        if (stat(probe, &sb) == 0)
            snprintf(dir, sizeof dir, "%s", data);
        else
            snprintf(dir, sizeof dir, "%s/..", data);
        if (cli_simulate_day("srp", dir, (unsigned long)a->cfg.seed, &doc) != PFLEX_EXIT_OK)
            why = "the SRP day did not run (pflex simulate's message above)";
    }
    /* the same seed, the same summary.json: no CPU times in it */
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(doc, "policies"), name, v)
        json_object_del(v, "cpu_s");
    if (!doc)
        doc = json_pack("{s:n, s:s}", "day", "note", why && *why ? why : "no shared data");
    return pflex_study_add_section(s, "grid_day", doc, err);
}

/* Run the study and write its folder; the study, or NULL with the message
 * printed. */
static pflex_study_t *study_run(struct study_args *a, int *charts)
{
    pflex_study_t *s = NULL;
    pflex_error_t err;
    char why[512] = "";
    cli_progress_begin(&a->prog, "study");
    a->cfg.progress = show_progress;
    a->cfg.progress_ctx = &a->prog;
    a->cfg.data_dir = find_data(a->data_opt, why, sizeof why);
    a->cfg.data_note = why;
    int rc = pflex_study_run(&a->cfg, &s, &err);
    cli_progress_end(&a->prog);
    if (rc < 0) {
        cli_error("study", "%s", err.text);
        return NULL;
    }
    if (!pflex_study_prediction(s)) {
        cli_error("study", "%s", pflex_study_prediction_note(s));
        cli_error("study", "note: the prediction sections are left out of the report");
    }
    if (study_grid_day(s, a, why, &err) < 0) {
        cli_error("study", "%s", err.text);
        pflex_study_destroy(s);
        return NULL;
    }
    if (pflex_study_write(s, a->out_dir, a->samples, a->gnuplot, charts, &err) < 0) {
        cli_error("study", "%s", err.text);
        pflex_study_destroy(s);
        return NULL;
    }
    return s;
}

int cmd_study(int argc, char **argv)
{
    struct study_args a;
    pflex_error_t err;
    int rc = study_parse(argc, argv, &a), charts = 0;
    if (rc != 0)
        return rc < 0 ? PFLEX_EXIT_OK : rc;
    if (pflex_study_check(&a.cfg, &err) < 0) {
        if (a.cfg.caps_given)
            return cli_usage_error("study", "--caps: %s", err.text);
        cli_error("study", "%s", err.text);
        return cli_input_exit(&err);
    }
    if (make_dir(a.out_dir) < 0) {
        cli_error("study", "%s: %s", a.out_dir, strerror(errno));
        return PFLEX_EXIT_INTERNAL;
    }
    cli_blas_init();
    pflex_study_t *s = study_run(&a, &charts);
    if (!s)
        return PFLEX_EXIT_INTERNAL;
    if (a.gnuplot && charts == 0)
        cli_error("study", "note: no charts drawn (is gnuplot installed?); the report says where "
                  "they would be");
    rc = study_print(&a, s, charts);
    pflex_study_destroy(s);
    return rc;
}
