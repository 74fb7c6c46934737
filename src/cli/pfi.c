/* pfi.c — pflex pfi: Power Flexibility Index per job (docs/contract.md §2, §4). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "pflex/csv.h"
#include "pflex/pfi.h"

static const char help[] =
"usage: pflex pfi [options] [SWEEP.csv...]\n"
"\n"
"Computes each job's Power Flexibility Index from a power-cap sweep:\n"
"  PFI = 1 - (area under the loss curve L(x) over [0, R]) / (R^2 / 2)\n"
"with x = 1 - P/P0 the per-GPU power reduction, L = 1 - T/T0 the throughput\n"
"loss against the highest cap, and R = min(--range, largest measured x).\n"
"Also prints the range used, the baseline, and shed: the largest power\n"
"reduction that keeps throughput above each Emerald flex tier's floor\n"
"(Flex 1 = 90%, Flex 2 = 75%, Flex 3 = 50%).  '-' or no file reads stdin.\n"
"\n"
"The sweep CSV needs columns job, cap_w, power_w, throughput (gpus, gpu,\n"
"floor, tier, weight and telemetry are optional); '#' lines are comments.\n"
"\n"
"options:\n"
"  --range X        PFI range X (default 0.30)\n"
"  --columns MAP    map foreign headers: name=Header,... e.g.\n"
"                   job=Workload,cap_w=GPU power cap,power_w=power per GPU\n"
"  --points         also print pointwise PFI(x) = 1 - L(x)/x per measured cap\n"
"  --csv            PFI CSV (job,gpus,power_w,throughput,pfi,range,floor,...),\n"
"                   the input of 'pflex allocate --pfi'\n"
"  --json           one JSON document\n"
"  -h, --help       this help\n"
"\n"
"exit: 0 ok, 2 bad input (file:line: what is wrong on stderr).\n";

struct result {
    const struct pflex_sweep_job *job;
    struct pflex_curve curve;
    struct pflex_pfi pfi;
};

static json_t *job_json(const struct result *r, int points)
{
    const struct pflex_sweep_job *j = r->job;
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(j->name));
    json_object_set_new(o, "gpus", json_integer(j->gpus));
    if (j->gpu)
        json_object_set_new(o, "gpu", json_string(j->gpu));
    json_object_set_new(o, "baseline_power_w", json_real(r->curve.p0_w));
    json_object_set_new(o, "baseline_throughput", json_real(r->curve.t0));
    json_object_set_new(o, "baseline_cap_w", json_real(r->curve.cap0_w));
    json_object_set_new(o, "pfi", r->pfi.valid ? json_real(r->pfi.pfi) : json_null());
    json_object_set_new(o, "range_used", json_real(r->pfi.range_used));
    if (!r->pfi.valid)
        json_object_set_new(o, "reason", json_string(r->pfi.reason));
    json_object_set_new(o, "x_max", json_real(r->curve.x_max));
    if (!isnan(j->floor))
        json_object_set_new(o, "floor", json_real(j->floor));
    json_t *shed = json_object();
    json_object_set_new(shed, "flex1", json_real(r->pfi.shed[1]));
    json_object_set_new(shed, "flex2", json_real(r->pfi.shed[2]));
    json_object_set_new(shed, "flex3", json_real(r->pfi.shed[3]));
    json_object_set_new(o, "shed", shed);
    if (points) {
        json_t *a = json_array();
        for (size_t i = 1; i < r->curve.n; i++) {
            json_t *p = json_object();
            json_object_set_new(p, "cap_w", json_real(r->curve.cap_w[i]));
            json_object_set_new(p, "reduction", json_real(r->curve.x[i]));
            json_object_set_new(p, "loss", json_real(r->curve.loss[i]));
            json_object_set_new(p, "pfi", cli_json_real(pflex_pfi_at(&r->curve, r->curve.x[i])));
            json_array_append_new(a, p);
        }
        json_object_set_new(o, "pointwise", a);
    }
    return o;
}

static void print_table(const struct result *res, size_t n, double range, int points)
{
    int w = 3;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(res[i].job->name) > w)
            w = (int)strlen(res[i].job->name);
    printf("%-*s %5s %10s %12s %8s %6s %6s %6s %6s\n", w, "job", "gpus", "base_W",
           "base_tput", "PFI", "range", "shed1", "shed2", "shed3");
    for (size_t i = 0; i < n; i++) {
        const struct result *r = &res[i];
        char pfi[16];
        if (r->pfi.valid)
            snprintf(pfi, sizeof pfi, "%.4f", r->pfi.pfi);
        else
            snprintf(pfi, sizeof pfi, "-");
        printf("%-*s %5d %10.1f %12.5g %8s %6.3f %6.3f %6.3f %6.3f\n", w, r->job->name,
               r->job->gpus, r->curve.p0_w, r->curve.t0, pfi, r->pfi.range_used,
               r->pfi.shed[1], r->pfi.shed[2], r->pfi.shed[3]);
        if (!r->pfi.valid)
            printf("  (%s)\n", r->pfi.reason);
        if (points)
            for (size_t k = 1; k < r->curve.n; k++)
                printf("    cap %7.1f W  x %.4f  loss %.4f  PFI(x) %.4f\n", r->curve.cap_w[k],
                       r->curve.x[k], r->curve.loss[k], pflex_pfi_at(&r->curve, r->curve.x[k]));
    }
    printf("PFI over range %.2f: 1 = power cuts cost nothing, 0 = proportional loss\n", range);
}

static void print_csv(const struct result *res, size_t n)
{
    printf("job,gpus,power_w,throughput,pfi,range,floor,shed_flex1,shed_flex2,shed_flex3\n");
    for (size_t i = 0; i < n; i++) {
        const struct result *r = &res[i];
        pflex_csv_write_field(stdout, r->job->name);
        printf(",%d,%.10g,%.10g,", r->job->gpus, r->curve.p0_w, r->curve.t0);
        if (r->pfi.valid)
            printf("%.10g", r->pfi.pfi);
        printf(",%.10g,", r->pfi.range_used);
        if (!isnan(r->job->floor))
            printf("%.10g", r->job->floor);
        printf(",%.10g,%.10g,%.10g\n", r->pfi.shed[1], r->pfi.shed[2], r->pfi.shed[3]);
    }
}

int cmd_pfi(int argc, char **argv)
{
    static const struct option opts[] = {
        {"range", required_argument, NULL, 'r'},
        {"columns", required_argument, NULL, 'c'},
        {"points", no_argument, NULL, 'p'},
        {"csv", no_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    double range = PFLEX_PFI_RANGE_DEFAULT;
    const char *columns = NULL;
    int points = 0, csv = 0, json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (cli_parse_double("pfi", "--range", optarg, 1e-6, 1.0, &range) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case 'c': columns = optarg; break;
        case 'p': points = 1; break;
        case 'C': csv = 1; break;
        case 'J': json = 1; break;
        case 'h': return cli_help(help);
        default: return cli_bad_option("pfi", argv, opts);
        }
    }
    if (csv && json)
        return cli_usage_error("pfi", "--csv and --json exclude each other");
    char *stdin_only[] = {"-"};
    char **files = optind < argc ? argv + optind : stdin_only;
    size_t nfiles = optind < argc ? (size_t)(argc - optind) : 1;
    pflex_sweep_t **sweeps = calloc(nfiles, sizeof *sweeps);
    size_t total = 0;
    int rc = PFLEX_EXIT_OK;
    pflex_error_t err;
    struct result *res = NULL;
    if (!sweeps)
        return PFLEX_EXIT_INTERNAL;
    for (size_t f = 0; f < nfiles; f++) {
        if (pflex_sweep_read_file(files[f], columns, &sweeps[f], &err) < 0) {
            cli_error("pfi", "%s", err.text);
            rc = cli_input_exit(&err);
            goto out;
        }
        cli_print_warnings("pfi", sweeps[f]->warnings);
        total += sweeps[f]->njobs;
    }
    res = calloc(total ? total : 1, sizeof *res);
    if (!res) {
        rc = PFLEX_EXIT_INTERNAL;
        goto out;
    }
    size_t k = 0;
    for (size_t f = 0; f < nfiles; f++)
        for (size_t j = 0; j < sweeps[f]->njobs; j++, k++) {
            const struct pflex_sweep_job *job = &sweeps[f]->jobs[j];
            res[k].job = job;
            if (pflex_curve_init(&res[k].curve, job->points, job->npoints, &err) < 0) {
                cli_error("pfi", "%s:%u: job '%s': %s", files[f], job->line, job->name, err.text);
                rc = PFLEX_EXIT_BAD_INPUT;
                goto out;
            }
            pflex_pfi_compute(&res[k].curve, range, &res[k].pfi);
        }
    if (json) {
        json_t *doc = json_object();
        json_object_set_new(doc, "range", json_real(range));
        json_t *jobs = json_array();
        for (size_t i = 0; i < total; i++)
            json_array_append_new(jobs, job_json(&res[i], points));
        json_object_set_new(doc, "jobs", jobs);
        if (cli_json_print(doc) < 0)
            rc = PFLEX_EXIT_INTERNAL;
    } else if (csv) {
        print_csv(res, total);
    } else {
        print_table(res, total, range, points);
    }
    if (fflush(stdout) != 0)
        rc = PFLEX_EXIT_INTERNAL;
out:
    if (res)
        for (size_t i = 0; i < total; i++)
            pflex_curve_fini(&res[i].curve);
    free(res);
    for (size_t f = 0; f < nfiles; f++)
        pflex_sweep_destroy(sweeps[f]);
    free(sweeps);
    return rc;
}
