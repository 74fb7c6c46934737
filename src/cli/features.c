/* features.c — pflex features: per-job features of an uncapped window
 * (docs/telemetry.md). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/tmread.h"
#include "pflex/io/csv.h"
#include "pflex/flex/features.h"

static const char help[] =
"usage: pflex features [options] FILE|URL...\n"
"       pflex features --sweep [options] SWEEP.csv...\n"
"\n"
"Per-job features of an uncapped run, from telemetry as 'pflex telemetry'\n"
"reads it, with the study's protocol: the training phase only (each GPU's\n"
"samples with GPU utilisation >= 50 %, from the first such sample on), each\n"
"field over the job's GPUs by a statistic (default: the mean of the top\n"
"10 % of samples).  With --sweep, from a sweep's telemetry columns at each\n"
"job's highest cap.  Features and units:\n"
"  dram_copy_product  DCGM_FI_PROF_DRAM_ACTIVE x DCGM_FI_DEV_MEM_COPY_UTIL/100 (0..1)\n"
"  arith_intensity    tensor_active / dram_active\n"
"  dram_active, tensor_active, sm_active, sm_occupancy, gr_engine_active (0..1)\n"
"  mem_copy_util, gpu_util (%), mem_clock_mhz (MHz)\n"
"  power_over_limit   board power / enforced power limit\n"
"  sm_clock_over_max  SM clock / the GPU's maximum SM clock\n"
"  pcie_gbs, nvlink_gbs  tx + rx, GB/s\n"
"  dram_copy_cv       coefficient of variation of the per-sample product\n"
"  log2_gpus          log2 of the GPUs seen\n"
"\n"
"options:\n"
"  --sweep          the inputs are sweep CSVs (SPEC 3), not telemetry\n"
"  --stat S         top10 (the study's), median, p10, p90, mean\n"
"  --util-min PCT   training phase threshold, % (default 50)\n"
"  --format, --job, --job-from-file, --host, --job-map, --max-line, --max-series,\n"
"  --max-bytes,\n"
"  --timeout-ms     as for 'pflex telemetry'\n"
"  --tz ZONE        as for 'pflex telemetry'\n"
"  --csv            job,gpus,samples,<features>: the input of 'pflex predict --features'\n"
"  --json           one JSON document\n"
"  -h, --help       this help\n"
"\n"
"EXAMPLES\n"
"  pflex features --job llama dcgm-scrapes/*.prom\n"
"  pflex features --stat median --csv --job-map jobs.csv dmon.txt > features.csv\n"
"  pflex features --sweep --csv study-out/sweeps.csv\n"
"\n"
"exit: 0 ok, 2 bad input (file:line: what is wrong on stderr), 1 system error.\n";

static void print_value(double v)
{
    if (!isnan(v))
        printf("%.10g", v);
}

static void print_csv(const struct pflex_feat_set *s)
{
    printf("job,gpus,samples");
    for (int f = 0; f < PFLEX_FEAT_COUNT; f++)
        printf(",%s", pflex_feat_name(f));
    putchar('\n');
    for (size_t i = 0; i < s->n; i++) {
        pflex_csv_write_field(stdout, s->jobs[i].job);
        printf(",%d,%zu", s->jobs[i].gpus, s->jobs[i].samples);
        for (int f = 0; f < PFLEX_FEAT_COUNT; f++) {
            putchar(',');
            print_value(s->jobs[i].v[f]);
        }
        putchar('\n');
    }
}

static void print_table(const struct pflex_feat_set *s, const char *stat)
{
    static const int shown[] = {PFLEX_FEAT_DRAM_COPY, PFLEX_FEAT_ARITH_INTENSITY,
                                PFLEX_FEAT_DRAM_ACTIVE, PFLEX_FEAT_MEM_COPY_UTIL,
                                PFLEX_FEAT_TENSOR_ACTIVE, PFLEX_FEAT_POWER_OVER_LIMIT,
                                PFLEX_FEAT_SM_CLOCK_OVER_MAX};
    printf("%-32s %5s %8s", "job", "gpus", "samples");
    for (size_t k = 0; k < sizeof shown / sizeof *shown; k++)
        printf(" %17.17s", pflex_feat_name(shown[k]));
    putchar('\n');
    for (size_t i = 0; i < s->n; i++) {
        printf("%-32s %5d %8zu", s->jobs[i].job, s->jobs[i].gpus, s->jobs[i].samples);
        for (size_t k = 0; k < sizeof shown / sizeof *shown; k++) {
            double v = s->jobs[i].v[shown[k]];
            if (isnan(v))
                printf(" %17s", "-");
            else
                printf(" %17.4f", v);
        }
        putchar('\n');
    }
    printf("%zu jobs; statistic %s; --csv or --json for every feature\n", s->n, stat);
}

static json_t *to_json(const struct pflex_feat_set *s, const char *stat, const char *source)
{
    json_t *doc = json_object(), *jobs = json_array(), *units = json_object();
    json_object_set_new(doc, "source", json_string(source));
    json_object_set_new(doc, "stat", json_string(stat));
    for (int f = 0; f < PFLEX_FEAT_COUNT; f++)
        json_object_set_new(units, pflex_feat_name(f), json_string(pflex_feat_unit(f)));
    json_object_set_new(doc, "units", units);
    for (size_t i = 0; i < s->n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "job", json_string(s->jobs[i].job));
        json_object_set_new(o, "gpus", json_integer(s->jobs[i].gpus));
        json_object_set_new(o, "samples", json_integer((json_int_t)s->jobs[i].samples));
        for (int f = 0; f < PFLEX_FEAT_COUNT; f++)
            json_object_set_new(o, pflex_feat_name(f), cli_json_real(s->jobs[i].v[f]));
        json_array_append_new(jobs, o);
    }
    json_object_set_new(doc, "jobs", jobs);
    return doc;
}

static int from_sweeps(int n, char **files, struct pflex_feat_set *out)
{
    static char *stdin_only[] = {"-"};
    pflex_error_t err;
    memset(out, 0, sizeof *out);
    if (n <= 0) {
        files = stdin_only;
        n = 1;
    }
    for (int f = 0; f < n; f++) {
        pflex_sweep_t *sw;
        if (pflex_sweep_read_file(files[f], NULL, &sw, &err) < 0) {
            cli_error("features", "%s", err.text);
            return PFLEX_EXIT_BAD_INPUT;
        }
        int got = pflex_features_add_sweep(out, sw, files[f], &err);
        pflex_sweep_destroy(sw);
        if (got < 0) {
            cli_error("features", "%s", err.text);
            return cli_input_exit(&err);
        }
    }
    return PFLEX_EXIT_OK;
}

int cmd_features(int argc, char **argv)
{
    enum { O_SWEEP = 2000, O_STAT, O_UTIL };
    static const struct option opts[] = {
        TMREAD_LONG_OPTIONS,
        {"sweep", no_argument, NULL, O_SWEEP},
        {"stat", required_argument, NULL, O_STAT},
        {"util-min", required_argument, NULL, O_UTIL},
        {"csv", no_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct tmread r;
    struct pflex_feat_opts fo = {PFLEX_STAT_TOP10, 50};
    int csv = 0, json = 0, sweep = 0, c;
    tmread_init(&r);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int t = tmread_option(&r, "features", c, optarg);
        if (t < 0)
            return PFLEX_EXIT_BAD_INPUT;
        if (t > 0)
            continue;
        switch (c) {
        case O_SWEEP: sweep = 1; break;
        case O_STAT:
            if (pflex_feat_stat_parse(optarg, &fo.stat) < 0)
                return cli_usage_error("features", "--stat '%s': top10, median, p10, p90 or mean",
                                       optarg);
            break;
        case O_UTIL:
            if (cli_parse_double("features", "--util-min", optarg, 0.001, 100, &fo.util_min) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case 'C': csv = 1; break;
        case 'J': json = 1; break;
        case 'h': return cli_help(help);
        default: return cli_usage_error("features", "bad option");
        }
    }
    if (csv && json)
        return cli_usage_error("features", "--csv and --json exclude each other");
    struct pflex_feat_set set = {0};
    int rc;
    if (sweep) {
        rc = from_sweeps(argc - optind, argv + optind, &set);
    } else {
        pflex_tm_t *t;
        pflex_error_t err;
        rc = tmread_load(&r, "features", argc - optind, argv + optind, &t);
        if (rc == PFLEX_EXIT_OK) {
            if (pflex_features_from_telemetry(t, &fo, &set, &err) < 0) {
                cli_error("features", "%s", err.text);
                rc = PFLEX_EXIT_INTERNAL;
            } else if (set.n == 0) {
                cli_error("features", "no sample belongs to a job: give --job, --job-map, or "
                          "inputs with hpc_job or pod labels");
                rc = PFLEX_EXIT_BAD_INPUT;
            }
            pflex_tm_destroy(t);
        }
    }
    if (rc == PFLEX_EXIT_OK) {
        const char *stat = sweep ? "sweep" : pflex_feat_stat_name(fo.stat);
        if (json)
            rc = cli_json_print(to_json(&set, stat, sweep ? "sweep" : "telemetry")) < 0
                     ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_OK;
        else if (csv)
            print_csv(&set);
        else
            print_table(&set, stat);
        if (fflush(stdout) != 0)
            rc = PFLEX_EXIT_INTERNAL;
    }
    pflex_feat_set_fini(&set);
    return rc;
}
