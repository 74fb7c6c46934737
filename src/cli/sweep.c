/* sweep.c — pflex sweep: a power-cap sweep on a backend, written as a sweep
 * CSV with telemetry columns.  --backend sim (the default) runs the
 * physical model of pflex/sim/sim.h on a job description; --backend nvml is
 * src/cli/sweep_nvml.c. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "pflex/io/outfile.h"
#include "pflex/sim/sim.h"

static const char help[] =
"usage: pflex sweep [--backend sim] --job PRESET|FILE [options]\n"
"       pflex sweep --backend nvml ...   (see 'pflex sweep --backend nvml --help')\n"
"       pflex sweep --list-presets\n"
"\n"
"Runs a power-cap sweep and writes a sweep CSV (docs/contract.md) with the\n"
"columns job,gpu,gpus,cap_w,power_w,throughput and the telemetry columns\n"
"sm_clock_mhz, mem_clock_mhz, gpu_util, mem_copy_util, sm_active,\n"
"sm_occupancy, tensor_active, dram_active, gr_engine_active, pcie_tx_bytes,\n"
"pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes (per-GPU means).\n"
"\n"
"The sim backend needs no GPU: a physical model of the GPU (V-f curve,\n"
"power loop, memory clock untouched by caps) runs the job described by a\n"
"named preset or a JSON job file (docs/job-format.md): model shape, batch,\n"
"parallelism, GPU kind and count.  power_w is the mean per-GPU board power,\n"
"throughput the job's tokens/s (inference: generated tokens/s).  Silicon\n"
"variation and measurement noise follow --seed: the same seed gives the\n"
"same file.  Model and constants: docs/sim-model.md.\n"
"\n"
"options:\n"
"  --backend NAME   sim (default) or nvml (a real driver, libnvidia-ml.so.1)\n"
"  --job JOB        a preset name (--list-presets) or a job file path\n"
"  --caps LIST      per-GPU caps in W: a list run in the order given\n"
"                   (700,650,600) or a range A:B:STEP in either order, run\n"
"                   from the higher cap down (700:300:100 = 300:700:100 =\n"
"                   700,600,500,400,300); each must lie in the GPU's limit\n"
"                   range, none twice (the same syntax as nvml and study)\n"
"  --cap-step W     caps from the GPU's highest to its lowest limit in steps\n"
"                   of W (default: ten even steps, e.g. 700,650,...,200 W)\n"
"  --repeats N      measurement windows per cap, one row each (default 3)\n"
"  --seed S         silicon and noise seed (default 1)\n"
"  --out FILE       write the CSV to FILE instead of stdout (written to a\n"
"                   temporary file beside it, renamed into place when whole)\n"
"  --progress       progress on stderr even when it is not a terminal\n"
"  --list-presets   list the preset jobs and exit (--json: as JSON)\n"
"  -h, --help       this help\n"
"\n"
"exit: 0 ok, 1 system error, 2 bad usage or a bad job file (file:line: what\n"
"is wrong on stderr; nothing on stdout).\n"
"\n"
"EXAMPLES\n"
"  pflex sweep --list-presets                        # the built-in jobs\n"
"  pflex sweep --list-presets --json                 # the same for scripts\n"
"  pflex sweep --job llama-8b-pretrain-h200 --out sweep.csv\n"
"  pflex sweep --job llama-8b-pretrain-h200 --caps 700:300:100 --repeats 5\n"
"  pflex sweep --job tests/data/job_llama8b_h200.json --caps 700,600,500,400\n"
"  pflex sweep --job emerald-pt-mpt-7b | pflex pfi   # PFI of a simulated A100 job\n"
"  pflex sweep --backend nvml --list                 # real GPUs, read-only\n";

enum { OPT_BACKEND = 256, OPT_JOB, OPT_CAPS, OPT_CAP_STEP, OPT_REPEATS, OPT_SEED, OPT_OUT,
       OPT_PROGRESS, OPT_LIST, OPT_JSON };

static const struct option options[] = {
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"job", required_argument, NULL, OPT_JOB},
    {"caps", required_argument, NULL, OPT_CAPS},
    {"cap-step", required_argument, NULL, OPT_CAP_STEP},
    {"repeats", required_argument, NULL, OPT_REPEATS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"out", required_argument, NULL, OPT_OUT},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"list-presets", no_argument, NULL, OPT_LIST},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The backend named on the command line, before full parsing: nvml takes
 * the whole argument vector. */
static const char *backend_of(int argc, char **argv)
{
    const char *b = "sim";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            b = argv[++i];
        else if (!strncmp(argv[i], "--backend=", 10))
            b = argv[i] + 10;
    }
    return b;
}

/* The preset jobs: a table, or with --json {"presets": [{"name", "gpu",
 * "gpus", "task", "summary"}]} (docs/contract.md §5). */
static int list_presets(int json)
{
    const char *summary;
    json_t *arr = json ? json_array() : NULL;
    for (int i = 0; pflex_job_preset_at(i, &summary); i++) {
        const char *name = pflex_job_preset_at(i, NULL);
        if (!json) {
            printf("%-28s %s\n", name, summary);
            continue;
        }
        struct pflex_job_desc d;
        if (pflex_job_preset_find(name, &d) < 0)
            continue;
        json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:s, s:s}", "name", name, "gpu",
                                             d.gpu, "gpus", d.gpus, "task",
                                             pflex_job_kind_name(d.kind), "summary", summary));
    }
    if (!json)
        return PFLEX_EXIT_OK;
    return cli_json_print(json_pack("{s:o}", "presets", arr)) < 0 ? PFLEX_EXIT_INTERNAL
                                                                   : PFLEX_EXIT_OK;
}

#define MAX_CAPS 256

/* --progress: which cap the sweep is at. */
struct progress {
    const struct pflex_job_desc *d;
    const double *caps;
    int ncaps;
};

static void show_progress(void *arg, int c)
{
    const struct progress *p = arg;
    fprintf(stderr, "\rpflex sweep: %s at %g W (%d/%d)   ", p->d->name, p->caps[c], c + 1,
            p->ncaps);
}

/* --out is written atomically (pflex/io/outfile.h): the old file stays whole
 * until the new one is; it may not be the job file read. */
static int run_sim(const struct pflex_job_desc *d, const char *job_arg, const double *caps,
                   int ncaps, int repeats, uint64_t seed, const char *out_path, int progress)
{
    pflex_error_t err;
    pflex_sim_job_t *j;
    pflex_outfile_t *of = NULL;
    const char *inputs[] = {job_arg, NULL};
    if (out_path && pflex_outfile_begin(out_path, inputs, &of, &err) < 0) {
        cli_error("sweep", "--out %s", err.text);
        return cli_input_exit(&err);
    }
    if (pflex_sim_job_create(d, seed, &j, &err) < 0) {
        cli_error("sweep", "%s", err.text);
        pflex_outfile_abort(of);
        return PFLEX_EXIT_BAD_INPUT;
    }
    FILE *f = of ? pflex_outfile_stream(of) : stdout;
    struct progress pr = {d, caps, ncaps};
    int rc = pflex_sim_sweep_write(j, d, caps, ncaps, repeats, f, progress ? show_progress : NULL,
                                   &pr, &err);
    if (rc == -1)
        cli_error("sweep", "%s", err.text);
    if (progress)
        fputc('\n', stderr);
    pflex_sim_job_destroy(j);
    if (!of)                /* standard output: main() says what failed */
        return rc || fflush(f) != 0 || ferror(f) ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_OK;
    if (rc) {
        pflex_outfile_abort(of);
        if (rc == PFLEX_SIM_WRITE_FAILED)
            cli_error("sweep", "%s: write error", out_path);
        return PFLEX_EXIT_INTERNAL;
    }
    if (pflex_outfile_commit(of, &err) < 0) {
        cli_error("sweep", "%s", err.text);
        return PFLEX_EXIT_INTERNAL;
    }
    return PFLEX_EXIT_OK;
}

int cmd_sweep(int argc, char **argv)
{
    const char *backend = backend_of(argc, argv);
    if (!strcmp(backend, "nvml"))
        return sweep_nvml(argc, argv);
    if (strcmp(backend, "sim"))
        return cli_usage_error("sweep", "--backend: unknown backend '%s' (sim or nvml)", backend);

    const char *job = NULL, *caps_arg = NULL, *out_path = NULL;
    double cap_step = 0, v, caps[MAX_CAPS];
    int ncaps = 0;
    int repeats = 3, progress = 0, list = 0, json = 0, c;
    uint64_t seed = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case OPT_BACKEND:
            break;
        case OPT_JOB:
            job = optarg;
            break;
        case OPT_CAPS: {
            size_t n;
            caps_arg = optarg;
            if (cli_parse_caps("sweep", "--caps", optarg, 1, caps, MAX_CAPS, &n, NULL))
                return PFLEX_EXIT_BAD_INPUT;
            ncaps = (int)n;
            break;
        }
        case OPT_CAP_STEP:
            if (cli_parse_power("sweep", "--cap-step", optarg, 1, 10000, &cap_step) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case OPT_REPEATS:
            if (cli_parse_double("sweep", "--repeats", optarg, 1, 1000, &v) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            if (v != floor(v))
                return cli_usage_error("sweep", "--repeats: '%s' is not a whole number", optarg);
            repeats = (int)v;
            break;
        case OPT_SEED: {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(optarg, &end, 0);
            if (end == optarg || *end || errno || optarg[0] == '-')
                return cli_usage_error("sweep", "--seed: '%s' is not a non-negative integer",
                                       optarg);
            seed = s;
            break;
        }
        case OPT_OUT:
            out_path = optarg;
            break;
        case OPT_PROGRESS:
            progress = 1;
            break;
        case OPT_LIST:
            list = 1;
            break;
        case OPT_JSON:
            json = 1;
            break;
        case 'h':
            return cli_help(help);
        default:
            return cli_bad_option("sweep", argv, options);
        }
    }
    if (optind < argc)
        return cli_usage_error("sweep", "unexpected argument '%s'", argv[optind]);
    if (list)
        return list_presets(json);
    if (json)
        return cli_usage_error("sweep", "--json: a sweep is written as a sweep CSV; --json "
                               "goes with --list-presets");
    if (!job)
        return cli_usage_error("sweep", "--job: give a preset name or a job file");
    if (caps_arg && cap_step > 0)
        return cli_usage_error("sweep", "--caps and --cap-step: give one of them");

    struct pflex_job_desc d;
    pflex_error_t err;
    if (pflex_job_load(job, &d, &err) < 0) {
        cli_error("sweep", "%s", err.text);
        if (!strchr(job, '/') && !strchr(job, '.') && errno == ENOENT)
            fprintf(stderr, "(not a preset either; 'pflex sweep --list-presets' lists them)\n");
        return cli_input_exit(&err);
    }
    const struct pflex_gpu_kind *k = pflex_gpu_kind_find(d.gpu);
    if (caps_arg) {
        for (int i = 0; i < ncaps; i++)
            if (caps[i] < k->min_cap_w || caps[i] > k->max_cap_w)
                return cli_usage_error("sweep", "--caps: %g W is outside the %s range [%g, %g] W",
                                       caps[i], k->name, k->min_cap_w, k->max_cap_w);
    } else {
        double step = cap_step > 0 ? cap_step : (k->max_cap_w - k->min_cap_w) / 10;
        for (double cap = k->max_cap_w; cap >= k->min_cap_w - 1e-9 && ncaps < MAX_CAPS;
             cap -= step)
            caps[ncaps++] = cap;
    }
    return run_sim(&d, job, caps, ncaps, repeats, seed, out_path,
                   cli_progress_wanted(progress));
}
