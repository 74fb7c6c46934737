/* train.c — pflex train: fit a PFI and loss-curve model on sweeps with
 * telemetry columns, chosen among candidates by cross-validation. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/study_predict.h"
#include "pflex/study/modelsel.h"
#include "pflex/study/study.h"
#include <unistd.h>

static const char help[] =
"usage: pflex train [options] -o MODEL.json SWEEP.csv...\n"
"\n"
"Fits a model that predicts each job's ratio PFI and its whole loss curve\n"
"(the throughput loss at cuts of 5, 10, ..., 60 % of power) from the\n"
"telemetry of its uncapped run (the sweep's telemetry columns at the job's\n"
"highest cap; 'pflex features --sweep' shows them).  Candidates:\n"
"  ols-dram-copy    the study's baseline: OLS on the DRAM copy product\n"
"  ridge-telemetry  ridge on every telemetry feature\n"
"  ridge2-compact   ridge on six features, their squares and products\n"
"  gp-compact       a Gaussian process on the same six features (at most 3000 jobs)\n"
"The ridge penalty and the GP's kernel are chosen by the closed-form\n"
"leave-one-out error; the\n"
"candidate by leave-one-cluster-out RMSE of PFI (clusters: architecture x\n"
"task, from --clusters or the job names), or leave-one-out with fewer than\n"
"three clusters.  Every prediction carries a standard error (leave-one-out\n"
"residual spread and the job's leverage).\n"
"\n"
"options:\n"
"  -o, --out FILE   the model file (versioned JSON), written atomically\n"
"  --kind K         auto (default), ols-dram-copy, ridge-telemetry, ridge2-compact,\n"
"                   gp-compact\n"
"  --cv             also evaluate every candidate: in-sample, leave-one-out and\n"
"                   leave-one-cluster-out R^2, RMSE and Spearman rho of PFI, and\n"
"                   the RMSE of the predicted loss curves\n"
"  --clusters FILE  CSV job,cluster or job,arch,task (the study's pfi.csv)\n"
"  --filter TEXT    only jobs whose name holds TEXT (e.g. h200-)\n"
"  --json           one JSON document on stdout\n"
"  --study DIR      instead: the study's prediction sections on DIR/sweeps.csv\n"
"                   (clusters from DIR/pfi.csv when present): Table 3 (the seven\n"
"                   OLS predictor sets and pflex's models, in-sample, LOO and LOCO\n"
"                   R^2, RMSE, rho, beside the study's), the H200 fit on H100, and\n"
"                   the 6 protocol (workloads of 100 jobs, random and production\n"
"                   mix, cuts 0-40 %, every policy scored on the measured curves)\n"
"  --workloads N    workloads per mix for --study (default 500)\n"
"  --seed S         seed for --study (default 1)\n"
"  -h, --help       this help\n"
"\n"
"EXAMPLES\n"
"  pflex study --out study-out\n"
"  pflex train --cv --filter h200- -o pfi-model.json study-out/sweeps.csv\n"
"  pflex predict --model pfi-model.json --pfi-out pfi.csv --curves-out curves.csv new.csv\n"
"  pflex train --study study-out\n"
"\n"
"exit: 0 ok, 2 bad input (file:line: what is wrong on stderr), 1 system error.\n";

/* A score's three table cells (R2, RMSE, rho); na: the same text in each
 * instead ("n/a": too few jobs for its folds, "-": not asked for). */
static void score_cells(char *buf, size_t len, const char *na, const struct pflex_fit_score *s)
{
    if (na)
        snprintf(buf, len, "%7s %7s %6s", na, na, na);
    else
        snprintf(buf, len, "%7.3f %7.3f %6.3f", s->r2, s->rmse, s->rho);
}

static void curve_cell(char *buf, size_t len, const char *na, double rmse)
{
    if (na)
        snprintf(buf, len, "%9s", na);
    else
        snprintf(buf, len, "%9.4f", rmse);
}

static json_t *score_json(const struct pflex_fit_score *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "n", json_integer((json_int_t)s->n));
    json_object_set_new(o, "r2", cli_json_real(s->r2));
    json_object_set_new(o, "rmse", cli_json_real(s->rmse));
    json_object_set_new(o, "rho", cli_json_real(s->rho));
    return o;
}

/* The study's prediction sections on sweeps_csv (clusters: NULL or its
 * pfi.csv).  Returns PFLEX_EXIT_OK and *doc, or an exit code with the
 * message printed. */
static int train_study(const char *sweeps_csv, const char *clusters, unsigned workloads,
                       unsigned long seed, json_t **doc)
{
    struct pflex_dataset d;
    pflex_error_t err;
    char *files[1] = {(char *)sweeps_csv};
    int rc = pflex_dataset_load(1, files, clusters, NULL, "pflex study", &d, &err);
    if (rc == 0) {
        rc = pflex_study_predict(&d, sweeps_csv, workloads, seed, doc, &err);
        pflex_dataset_fini(&d);
    }
    if (rc < 0) {
        cli_error("train", "%s", err.text);
        return cli_input_exit(&err);
    }
    return PFLEX_EXIT_OK;
}

/* What the command line asks for. */
struct train_args {
    const char *out, *kind, *clusters, *filter, *study;
    double workloads, seed;
    int cv, json;
    char **files;
    int nfiles;
};

/* The command line into a: 0, -1 after --help (printed), or an exit code. */
static int train_parse(int argc, char **argv, struct train_args *a)
{
    enum { O_KIND = 4000, O_CV, O_CLUSTERS, O_FILTER, O_STUDY, O_WORKLOADS, O_SEED };
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},
        {"kind", required_argument, NULL, O_KIND},
        {"cv", no_argument, NULL, O_CV},
        {"clusters", required_argument, NULL, O_CLUSTERS},
        {"filter", required_argument, NULL, O_FILTER},
        {"json", no_argument, NULL, 'J'},
        {"study", required_argument, NULL, O_STUDY},
        {"workloads", required_argument, NULL, O_WORKLOADS},
        {"seed", required_argument, NULL, O_SEED},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    memset(a, 0, sizeof *a);
    a->kind = "auto";
    a->workloads = 500;
    a->seed = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'o': a->out = optarg; break;
        case O_KIND: a->kind = optarg; break;
        case O_CV: a->cv = 1; break;
        case O_CLUSTERS: a->clusters = optarg; break;
        case O_FILTER: a->filter = optarg; break;
        case 'J': a->json = 1; break;
        case O_STUDY: a->study = optarg; break;
        case O_WORKLOADS:
            if (cli_parse_double("train", "--workloads", optarg, 1, 100000, &a->workloads) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_SEED:
            if (cli_parse_double("train", "--seed", optarg, 0, 4294967295.0, &a->seed) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case 'h':
            cli_help(help);
            return -1;
        default: return cli_usage_error("train", "bad option");
        }
    }
    a->files = argv + optind;
    a->nfiles = argc - optind;
    return 0;
}

/* --study DIR: the prediction sections on DIR/sweeps.csv, printed. */
static int train_study_dir(const struct train_args *a)
{
    size_t n = strlen(a->study) + 16;
    char *sw = malloc(n), *pf = malloc(n);
    json_t *doc = NULL;
    int rc = PFLEX_EXIT_INTERNAL;
    if (sw && pf) {
        snprintf(sw, n, "%s/sweeps.csv", a->study);
        snprintf(pf, n, "%s/pfi.csv", a->study);
        rc = train_study(sw, a->clusters ? a->clusters : access(pf, R_OK) == 0 ? pf : NULL,
                         (unsigned)a->workloads, (unsigned long)a->seed, &doc);
    }
    if (rc == PFLEX_EXIT_OK) {
        if (a->json)
            rc = cli_json_print(doc) < 0 ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_OK;
        else {
            study_predict_print(stdout, doc);
            json_decref(doc);
        }
        if (fflush(stdout) != 0)
            rc = PFLEX_EXIT_INTERNAL;
    }
    free(sw);
    free(pf);
    return rc;
}

/* The candidates tried and how they scored. */
struct selection {
    struct pflex_modelsel_candidate cand[8];
    struct pflex_modelsel_eval ev[8];
    int ok[8];
    size_t first, last, best, ng;
    int cv, need_cv;
};

/* Score the candidates [first, last) and choose the best: by
 * leave-one-cluster-out RMSE with three clusters or more, else by
 * leave-one-out.  Returns 0, or an exit code with the message printed. */
static int train_select(struct selection *s, const struct pflex_dataset *d)
{
    pflex_error_t err;
    int *g = pflex_dataset_cluster_ids(d, &s->ng);
    free(g);
    s->best = s->first;
    s->need_cv = s->cv || s->last - s->first > 1;
    for (size_t k = s->first; k < s->last && s->need_cv; k++) {
        /* selection by LOCO when there are clusters enough, else LOO */
        if (pflex_modelsel_evaluate(&s->cand[k].spec, d, s->cv || s->ng < 3, &s->ev[k],
                                    &err) < 0) {
            if (s->last - s->first == 1) {
                cli_error("train", "%s: %s", s->cand[k].name, err.text);
                return PFLEX_EXIT_BAD_INPUT;
            }
            /* a candidate that cannot fit this data (a GP past its size) is left out */
            fprintf(stderr, "pflex train: %s left out: %s\n", s->cand[k].name, err.text);
            continue;
        }
        s->ok[k] = 1;
        double sk = s->ng >= 3 ? s->ev[k].loco.rmse : s->ev[k].loo.rmse;
        double sb = s->ng >= 3 ? s->ev[s->best].loco.rmse : s->ev[s->best].loo.rmse;
        /* a score that could not be had (too few jobs for its folds) loses */
        if (!s->ok[s->best] || sk < sb || (isnan(sb) && !isnan(sk)))
            s->best = k;
    }
    if (s->need_cv && !s->ok[s->best]) {
        cli_error("train", "no candidate model fits these jobs");
        return PFLEX_EXIT_BAD_INPUT;
    }
    return PFLEX_EXIT_OK;
}

/* One candidate's scores, as the model file and --json keep them. */
static json_t *candidate_json(const struct selection *s, size_t k)
{
    const struct pflex_modelsel_eval *e = &s->ev[k];
    json_t *o = json_object();
    char why[96];
    json_object_set_new(o, "name", json_string(s->cand[k].name));
    json_object_set_new(o, "kind", json_string(pflex_model_kind_name(s->cand[k].spec.kind)));
    json_object_set_new(o, "in_sample", score_json(&e->in));
    if (s->cv || s->ng < 3) {
        json_object_set_new(o, "loo", score_json(&e->loo));
        json_object_set_new(o, "curve_loo_rmse", cli_json_real(e->curve_loo_rmse));
        if (e->loo_na)
            json_object_set_new(o, "loo_na", json_string(pflex_modelsel_na(e, e->loo_fold, why,
                                                                           sizeof why)));
    }
    if (s->ng >= 2) {
        json_object_set_new(o, "loco", score_json(&e->loco));
        json_object_set_new(o, "curve_loco_rmse", cli_json_real(e->curve_loco_rmse));
        if (e->loco_na)
            json_object_set_new(o, "loco_na", json_string(pflex_modelsel_na(e, e->loco_fold, why,
                                                                            sizeof why)));
    }
    return o;
}

/* What the model was trained on and how it scored, kept in the file. */
static json_t *training_json(const struct selection *s, size_t njobs)
{
    json_t *tr = json_object(), *cands = json_array();
    json_object_set_new(tr, "jobs", json_integer((json_int_t)njobs));
    json_object_set_new(tr, "clusters", json_integer((json_int_t)s->ng));
    json_object_set_new(tr, "selected", json_string(s->cand[s->best].name));
    json_object_set_new(tr, "selected_by", json_string(!s->need_cv ? "--kind" : s->ng >= 3 ?
                                                       "leave-one-cluster-out RMSE" :
                                                       "leave-one-out RMSE"));
    for (size_t k = s->first; k < s->last && s->need_cv; k++)
        if (s->ok[k])
            json_array_append_new(cands, candidate_json(s, k));
    json_object_set_new(tr, "candidates", cands);
    return tr;
}

/* The human table of the candidates' scores. */
static void print_selection(const struct selection *s)
{
    printf("%-16s %7s | %7s %7s %6s | %7s %7s %6s | %9s %9s\n", "candidate", "R2 in",
           "LOO R2", "RMSE", "rho", "LOCO R2", "RMSE", "rho", "curve LOO", "curve LOCO");
    for (size_t k = s->first; k < s->last; k++) {
        if (!s->ok[k])
            continue;
        /* a scheme not run: n/a, and why on the next line */
        const struct pflex_modelsel_eval *e = &s->ev[k];
        char a[32], b[32], ca[16], cb[16], why[96];
        int run_a = s->cv || s->ng < 3, run_b = s->ng >= 2;
        int na_a = e->loo_na && run_a, na_b = e->loco_na && run_b;
        const char *ta = !run_a ? "-" : na_a ? "n/a" : NULL;
        const char *tb = !run_b ? "-" : na_b ? "n/a" : NULL;
        score_cells(a, sizeof a, ta, &e->loo);
        score_cells(b, sizeof b, tb, &e->loco);
        curve_cell(ca, sizeof ca, ta, e->curve_loo_rmse);
        curve_cell(cb, sizeof cb, tb, e->curve_loco_rmse);
        printf("%-16s %7.3f | %s | %s | %s %s%s\n", s->cand[k].name, e->in.r2, a, b, ca, cb,
               k == s->best ? "  <- chosen" : "");
        if (na_a)
            printf("  %s: LOO n/a, %s\n", s->cand[k].name,
                   pflex_modelsel_na(e, e->loo_fold, why, sizeof why));
        if (na_b)
            printf("  %s: LOCO n/a, %s\n", s->cand[k].name,
                   pflex_modelsel_na(e, e->loco_fold, why, sizeof why));
    }
    printf("PFI: R^2, RMSE (ratio units) and Spearman rho; curve: RMSE of the loss at "
           "5..60 %% cuts\n");
}

/* Fit the chosen candidate on every job, write the model file, print. */
static int train_write(const struct train_args *a, const struct selection *s,
                       const struct pflex_dataset *d)
{
    struct pflex_train_data td;
    pflex_error_t err;
    double *y;
    int rc = PFLEX_EXIT_OK;
    pflex_dataset_train_data(d, &td, &y);
    pflex_model_t *m = y ? pflex_model_fit(&s->cand[s->best].spec, &td, &err) : NULL;
    if (!m) {
        cli_error("train", "%s", y ? err.text : "out of memory");
        free(y);
        return PFLEX_EXIT_BAD_INPUT;
    }
    json_t *tr = training_json(s, d->n);
    char *extra = json_dumps(tr, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    char *text = pflex_model_to_json(m, extra);
    free(extra);
    if (!text || cli_write_atomic(a->out, text, strlen(text)) < 0) {
        cli_error("train", "%s: %s", a->out, text ? strerror(errno) : "out of memory");
        rc = PFLEX_EXIT_INTERNAL;
    } else if (a->json) {
        json_object_set_new(tr, "model", json_string(a->out));
        json_incref(tr);
        if (cli_json_print(tr) < 0)
            rc = PFLEX_EXIT_INTERNAL;
    } else {
        printf("%zu jobs in %zu clusters; model %s (%s) written to %s\n", d->n, s->ng,
               s->cand[s->best].name, pflex_model_kind_name(s->cand[s->best].spec.kind), a->out);
        if (s->need_cv)
            print_selection(s);
    }
    json_decref(tr);
    free(text);
    free(y);
    pflex_model_destroy(m);
    if (fflush(stdout) != 0)
        rc = PFLEX_EXIT_INTERNAL;
    return rc;
}

int cmd_train(int argc, char **argv)
{
    struct train_args a;
    struct selection s;
    struct pflex_dataset d;
    pflex_error_t err;
    int rc = train_parse(argc, argv, &a);
    if (rc != 0)
        return rc < 0 ? PFLEX_EXIT_OK : rc;
    cli_blas_init();
    if (a.study)
        return train_study_dir(&a);
    if (!a.out)
        return cli_usage_error("train", "-o MODEL.json is required");
    memset(&s, 0, sizeof s);
    s.cv = a.cv;
    s.last = pflex_modelsel_candidates(s.cand, 8);
    if (strcmp(a.kind, "auto")) {
        size_t k = 0;
        while (k < s.last && strcmp(s.cand[k].name, a.kind))
            k++;
        if (k == s.last)
            return cli_usage_error("train", "--kind '%s': auto, ols-dram-copy, ridge-telemetry, "
                                   "ridge2-compact or gp-compact", a.kind);
        s.first = k;
        s.last = k + 1;
    }
    if (pflex_dataset_load(a.nfiles, a.files, a.clusters, a.filter, "pflex train", &d, &err) < 0) {
        cli_error("train", "%s", err.text);
        return cli_input_exit(&err);
    }
    rc = train_select(&s, &d);
    if (rc == PFLEX_EXIT_OK)
        rc = train_write(&a, &s, &d);
    pflex_dataset_fini(&d);
    return rc;
}
