/* predict.c — pflex predict: PFI and loss curves from telemetry alone, with
 * a model from `pflex train`; writes the PFI CSV `allocate --pfi` reads and
 * a sweep CSV of predicted points `allocate` can plan optimal on. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "pflex/baseline.h"
#include "pflex/csv.h"
#include "pflex/curve.h"
#include "pflex/pfi.h"
#include "pflex/predict.h"
#include "pflex/sweep.h"

static const char help[] =
"usage: pflex predict --model MODEL.json [options] SWEEP.csv|FEATURES.csv...\n"
"\n"
"Predicts each job's ratio PFI and its loss curve from the telemetry of its\n"
"uncapped run.  Inputs: sweeps with telemetry columns (the highest cap's\n"
"row is used; the other rows are not looked at), or a features CSV as\n"
"'pflex features --csv' writes it with the columns power_w (baseline\n"
"per-GPU power, W) and throughput (baseline) added, and optionally cap_w,\n"
"gpu, floor.\n"
"\n"
"Outputs (stdout: the PFI CSV unless --json or --table):\n"
"  PFI CSV  job,gpus,power_w,throughput,pfi,metric,grid,range,floor,gpu,cap_w,\n"
"           points_used,points_dropped,shed_flex1,shed_flex2,shed_flex3,pfi_lo,pfi_hi\n"
"           (metric = ratio; grid, range, points_* empty: nothing was measured;\n"
"           shed from the predicted curve; pfi_lo/hi = pfi -/+ z x its standard error)\n"
"  curves   a sweep CSV job,gpu,gpus,cap_w,power_w,throughput: the baseline and\n"
"           one row per predicted cut, power_w = P0 (1 - x), throughput =\n"
"           T0 (1 - L(x)), cap_w = cap0 x (1 - x) (the cap is not predicted)\n"
"\n"
"options:\n"
"  --model FILE       the model from 'pflex train'\n"
"  --pfi-out FILE     write the PFI CSV there (atomically) instead of stdout\n"
"  --curves-out FILE  write the predicted curves there (atomically)\n"
"  --z Z              interval half-width in standard errors (default 1.96)\n"
"  --table            a human table on stdout\n"
"  --json             one JSON document on stdout (with each curve's errors)\n"
"  -h, --help         this help\n"
"\n"
"EXAMPLES\n"
"  pflex predict --model pfi-model.json --curves-out curves.csv uncapped.csv > pfi.csv\n"
"  pflex allocate --pfi pfi.csv --reduce 0.3 --policy pfi-weighted\n"
"  pflex allocate curves.csv --reduce 0.3 --policy optimal\n"
"\n"
"exit: 0 ok, 2 bad input (file:line: what is wrong on stderr), 1 system error.\n";

/* A library error: out of memory exits 1, the rest is the input's (2). */
static int input_error(const pflex_error_t *err)
{
    cli_error("predict", "%s", err->text);
    return cli_input_exit(err);
}

static int from_sweep(const char *path, struct pflex_baseline_set *js)
{
    pflex_sweep_t *sw;
    pflex_error_t err;
    if (pflex_sweep_read_file(path, NULL, &sw, &err) < 0) {
        cli_error("predict", "%s", err.text);
        return PFLEX_EXIT_BAD_INPUT;
    }
    int rc = pflex_baseline_add_sweep(js, sw, path, &err) < 0 ? input_error(&err)
                                                                : PFLEX_EXIT_OK;
    pflex_sweep_destroy(sw);
    return rc;
}

static int load(const char *path, struct pflex_baseline_set *js)
{
    char *buf;
    size_t len;
    pflex_error_t err;
    if (pflex_read_all(path, &buf, &len, &err) < 0) {
        cli_error("predict", "%s", err.text);
        return PFLEX_EXIT_BAD_INPUT;
    }
    /* a sweep names cap_w in its header; a features CSV does not */
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, path);
    int sweep = 0, has_cap = 0, has_feat = 0;
    if (pflex_csv_next(&c, &err) > 0)
        for (size_t i = 0; i < c.nfields; i++) {
            has_cap |= pflex_csv_field_is(&c.fields[i], "cap_w");
            has_feat |= pflex_csv_field_is(&c.fields[i], "dram_copy_product");
        }
    sweep = has_cap && !has_feat;
    pflex_csv_fini(&c);
    int rc;
    if (sweep) {
        free(buf);
        rc = from_sweep(path, js);
    } else {
        rc = pflex_baseline_read_features_csv(js, buf, len, strcmp(path, "-") ? path : "<stdin>",
                                              &err) < 0 ? input_error(&err) : PFLEX_EXIT_OK;
        free(buf);
    }
    return rc;
}

static void num(FILE *f, double v)
{
    if (!isnan(v))
        fprintf(f, "%.10g", v);
}

static void write_pfi_csv(FILE *f, const struct pflex_baseline_set *js, const struct pflex_job_prediction *pr,
                          double z)
{
    fputs("job,gpus,power_w,throughput,pfi,metric,grid,range,floor,gpu,cap_w,points_used,"
          "points_dropped,shed_flex1,shed_flex2,shed_flex3,pfi_lo,pfi_hi\n", f);
    for (size_t i = 0; i < js->n; i++) {
        const struct pflex_baseline *j = &js->v[i];
        const struct pflex_job_prediction *p = &pr[i];
        pflex_csv_write_field(f, j->name);
        fprintf(f, ",%d,%.10g,%.10g,", j->gpus, j->p0_w, j->t0);
        num(f, p->mean[0]);
        fputs(",ratio,,,", f);
        num(f, j->floor);
        fputc(',', f);
        if (j->gpu)
            pflex_csv_write_field(f, j->gpu);
        fputc(',', f);
        num(f, j->cap0_w);
        fputs(",,,", f);
        num(f, p->shed[1]);
        fputc(',', f);
        num(f, p->shed[2]);
        fputc(',', f);
        num(f, p->shed[3]);
        fputc(',', f);
        num(f, p->mean[0] - z * p->se[0]);
        fputc(',', f);
        num(f, p->mean[0] + z * p->se[0]);
        fputc('\n', f);
    }
}

static int emit(const char *path, void (*fn)(FILE *, const void *), const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return -1;
    fn(f, arg);
    if (fclose(f) != 0) {
        free(buf);
        return -1;
    }
    int rc = path ? cli_write_atomic(path, buf, len)
                  : (fwrite(buf, 1, len, stdout) == len ? 0 : -1);
    free(buf);
    return rc;
}

struct ctx {
    const pflex_model_t *m;
    const struct pflex_baseline_set *js;
    const struct pflex_job_prediction *pr;
    double z;
};

static void pfi_fn(FILE *f, const void *a)
{
    const struct ctx *c = a;
    write_pfi_csv(f, c->js, c->pr, c->z);
}

static void curves_fn(FILE *f, const void *a)
{
    const struct ctx *c = a;
    struct pflex_sweep_point pts[PFLEX_MODEL_MAX_CUTS + 1];
    fprintf(f, "# pflex predict: predicted loss curves (model cuts), not measurements\n");
    pflex_sweep_write_header(f, 0);
    for (size_t i = 0; i < c->js->n; i++) {
        const struct pflex_baseline *j = &c->js->v[i];
        size_t n = pflex_model_curve_points(c->m, c->pr[i].mean, j->p0_w, j->t0, j->cap0_w,
                                            pts);
        for (size_t k = n; k-- > 0;)
            pflex_sweep_write_row(f, 0, j->name, j->gpu, j->gpus, pts[k].cap_w, pts[k].power_w,
                                  pts[k].throughput, NULL);
    }
}

/* --json: the model, its cuts, and each job's prediction. */
static int print_json(const char *model, const pflex_model_t *m, const struct pflex_baseline_set *jobs,
                      const struct pflex_job_prediction *pr, double z)
{
    json_t *doc = json_object(), *arr = json_array(), *cuts = json_array();
    json_object_set_new(doc, "model", json_string(model));
    json_object_set_new(doc, "kind", json_string(pflex_model_kind_name(m->spec.kind)));
    json_object_set_new(doc, "metric", json_string("ratio"));
    json_object_set_new(doc, "z", json_real(z));
    for (size_t k = 0; k < m->ncut; k++)
        json_array_append_new(cuts, json_real(m->cuts[k]));
    json_object_set_new(doc, "cuts", cuts);
    for (size_t i = 0; i < jobs->n; i++) {
        json_t *o = json_object(), *loss = json_array(), *lse = json_array();
        json_object_set_new(o, "job", json_string(jobs->v[i].name));
        json_object_set_new(o, "gpus", json_integer(jobs->v[i].gpus));
        json_object_set_new(o, "baseline_power_w", json_real(jobs->v[i].p0_w));
        json_object_set_new(o, "baseline_throughput", json_real(jobs->v[i].t0));
        json_object_set_new(o, "pfi", cli_json_real(pr[i].mean[0]));
        json_object_set_new(o, "pfi_se", cli_json_real(pr[i].se[0]));
        json_object_set_new(o, "pfi_lo", cli_json_real(pr[i].mean[0] - z * pr[i].se[0]));
        json_object_set_new(o, "pfi_hi", cli_json_real(pr[i].mean[0] + z * pr[i].se[0]));
        for (size_t k = 0; k < m->ncut; k++) {
            json_array_append_new(loss, cli_json_real(pr[i].mean[1 + k]));
            json_array_append_new(lse, cli_json_real(pr[i].se[1 + k]));
        }
        json_object_set_new(o, "loss", loss);
        json_object_set_new(o, "loss_se", lse);
        json_t *shed = json_object();
        json_object_set_new(shed, "flex1", cli_json_real(pr[i].shed[1]));
        json_object_set_new(shed, "flex2", cli_json_real(pr[i].shed[2]));
        json_object_set_new(shed, "flex3", cli_json_real(pr[i].shed[3]));
        json_object_set_new(o, "shed", shed);
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "jobs", arr);
    return cli_json_print(doc);
}

/* --table: PFI, its interval and the loss at 10, 20, 30 % cuts. */
static void print_table(const pflex_model_t *m, const struct pflex_baseline_set *jobs,
                        const struct pflex_job_prediction *pr, double z)
{
    printf("%-40s %5s %8s %17s %8s %8s %8s\n", "job", "gpus", "PFI", "interval",
           "L@10%", "L@20%", "L@30%");
    for (size_t i = 0; i < jobs->n; i++) {
        char iv[40];
        snprintf(iv, sizeof iv, "[%.3f, %.3f]", pr[i].mean[0] - z * pr[i].se[0],
                 pr[i].mean[0] + z * pr[i].se[0]);
        double l[3] = {NAN, NAN, NAN};
        for (size_t k = 0; k < m->ncut; k++)
            for (int q = 0; q < 3; q++)
                if (fabs(m->cuts[k] - 0.1 * (q + 1)) < 1e-9)
                    l[q] = pr[i].mean[1 + k];
        printf("%-40s %5d %8.3f %17s %8.4f %8.4f %8.4f\n", jobs->v[i].name, jobs->v[i].gpus,
               pr[i].mean[0], iv, l[0], l[1], l[2]);
    }
    printf("%zu jobs; model %s; ratio PFI with +/- %.2f standard errors\n", jobs->n,
           pflex_model_kind_name(m->spec.kind), z);
}

int cmd_predict(int argc, char **argv)
{
    enum { O_MODEL = 5000, O_PFI, O_CURVES, O_Z, O_TABLE };
    static const struct option opts[] = {
        {"model", required_argument, NULL, O_MODEL},
        {"pfi-out", required_argument, NULL, O_PFI},
        {"curves-out", required_argument, NULL, O_CURVES},
        {"z", required_argument, NULL, O_Z},
        {"table", no_argument, NULL, O_TABLE},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *model = NULL, *pfi_out = NULL, *curves_out = NULL;
    double z = 1.96;
    int json = 0, table = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_MODEL: model = optarg; break;
        case O_PFI: pfi_out = optarg; break;
        case O_CURVES: curves_out = optarg; break;
        case O_Z:
            if (cli_parse_double("predict", "--z", optarg, 0, 10, &z) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_TABLE: table = 1; break;
        case 'J': json = 1; break;
        case 'h': return cli_help(help);
        default: return cli_usage_error("predict", "bad option");
        }
    }
    if (!model)
        return cli_usage_error("predict", "--model MODEL.json is required");
    if (json && table)
        return cli_usage_error("predict", "--json and --table exclude each other");
    char *buf;
    size_t len;
    pflex_error_t err;
    if (pflex_read_all(model, &buf, &len, &err) < 0) {
        cli_error("predict", "%s", err.text);
        return PFLEX_EXIT_BAD_INPUT;
    }
    pflex_model_t *m = pflex_model_from_json(buf, len, model, &err);
    free(buf);
    if (!m) {
        cli_error("predict", "%s", err.text);
        return PFLEX_EXIT_BAD_INPUT;
    }
    struct pflex_baseline_set js = {0};
    int rc = PFLEX_EXIT_OK;
    char *stdin_only[] = {"-"};
    char **files = optind < argc ? argv + optind : stdin_only;
    int nf = optind < argc ? argc - optind : 1;
    for (int f = 0; f < nf && rc == PFLEX_EXIT_OK; f++)
        rc = load(files[f], &js);
    struct pflex_job_prediction *pr = rc == PFLEX_EXIT_OK ? calloc(js.n ? js.n : 1, sizeof *pr)
                                                          : NULL;
    if (rc == PFLEX_EXIT_OK && !pr)
        rc = PFLEX_EXIT_INTERNAL;
    for (size_t i = 0; rc == PFLEX_EXIT_OK && i < js.n; i++)
        pflex_model_predict_job(m, js.v[i].x, js.v[i].p0_w, js.v[i].t0, js.v[i].cap0_w, &pr[i]);
    struct ctx cx = {m, &js, pr, z};
    if (rc == PFLEX_EXIT_OK && curves_out && emit(curves_out, curves_fn, &cx) < 0) {
        cli_error("predict", "%s: %s", curves_out, strerror(errno));
        rc = PFLEX_EXIT_INTERNAL;
    }
    if (rc == PFLEX_EXIT_OK && pfi_out && emit(pfi_out, pfi_fn, &cx) < 0) {
        cli_error("predict", "%s: %s", pfi_out, strerror(errno));
        rc = PFLEX_EXIT_INTERNAL;
    }
    if (rc == PFLEX_EXIT_OK) {
        if (json) {
            if (print_json(model, m, &js, pr, z) < 0)
                rc = PFLEX_EXIT_INTERNAL;
        } else if (table) {
            print_table(m, &js, pr, z);
        } else if (!pfi_out) {
            if (emit(NULL, pfi_fn, &cx) < 0)
                rc = PFLEX_EXIT_INTERNAL;
        }
    }
    if (fflush(stdout) != 0)
        rc = PFLEX_EXIT_INTERNAL;
    pflex_baseline_set_fini(&js);
    free(pr);
    pflex_model_destroy(m);
    return rc;
}
