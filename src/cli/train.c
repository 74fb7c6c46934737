/* train.c — pflex train: fit a PFI and loss-curve model on sweeps with
 * telemetry columns, chosen among candidates by cross-validation. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/study_predict.h"
#include "pflex/modelsel.h"
#include "pflex/study.h"
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
"                   mix, cuts 0-40 %%, every policy scored on the measured curves)\n"
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

int cmd_train(int argc, char **argv)
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
    const char *out = NULL, *kind = "auto", *clusters = NULL, *filter = NULL, *study = NULL;
    double workloads = 500, seed = 1;
    int cv = 0, json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case O_KIND: kind = optarg; break;
        case O_CV: cv = 1; break;
        case O_CLUSTERS: clusters = optarg; break;
        case O_FILTER: filter = optarg; break;
        case 'J': json = 1; break;
        case O_STUDY: study = optarg; break;
        case O_WORKLOADS:
            if (cli_parse_double("train", "--workloads", optarg, 1, 100000, &workloads) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_SEED:
            if (cli_parse_double("train", "--seed", optarg, 0, 4294967295.0, &seed) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case 'h': return cli_help(help);
        default: return cli_usage_error("train", "bad option");
        }
    }
    if (study) {
        size_t n = strlen(study) + 16;
        char *sw = malloc(n), *pf = malloc(n);
        json_t *doc = NULL;
        int rc = PFLEX_EXIT_INTERNAL;
        if (sw && pf) {
            snprintf(sw, n, "%s/sweeps.csv", study);
            snprintf(pf, n, "%s/pfi.csv", study);
            rc = train_study(sw, clusters ? clusters : access(pf, R_OK) == 0 ? pf : NULL,
                             (unsigned)workloads, (unsigned long)seed, &doc);
        }
        if (rc == PFLEX_EXIT_OK) {
            if (json)
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
    if (!out)
        return cli_usage_error("train", "-o MODEL.json is required");
    struct pflex_modelsel_candidate cand[8];
    size_t nc = pflex_modelsel_candidates(cand, 8), first = 0, last = nc;
    if (strcmp(kind, "auto")) {
        size_t k = 0;
        while (k < nc && strcmp(cand[k].name, kind))
            k++;
        if (k == nc)
            return cli_usage_error("train", "--kind '%s': auto, ols-dram-copy, ridge-telemetry, "
                                   "ridge2-compact or gp-compact", kind);
        first = k;
        last = k + 1;
    }
    struct pflex_dataset d;
    pflex_error_t err;
    if (pflex_dataset_load(argc - optind, argv + optind, clusters, filter, "pflex train", &d,
                           &err) < 0) {
        cli_error("train", "%s", err.text);
        return cli_input_exit(&err);
    }
    int rc = PFLEX_EXIT_OK;
    struct pflex_modelsel_eval ev[8];
    size_t ng = 0, best = first;
    int *g = pflex_dataset_cluster_ids(&d, &ng);
    free(g);
    int need_cv = cv || last - first > 1;
    int ok[8] = {0};
    for (size_t k = first; k < last && need_cv; k++) {
        /* selection by LOCO when there are clusters enough, else LOO */
        if (pflex_modelsel_evaluate(&cand[k].spec, &d, cv || ng < 3, &ev[k], &err) < 0) {
            if (last - first == 1) {
                cli_error("train", "%s: %s", cand[k].name, err.text);
                pflex_dataset_fini(&d);
                return PFLEX_EXIT_BAD_INPUT;
            }
            /* a candidate that cannot fit this data (a GP past its size) is left out */
            fprintf(stderr, "pflex train: %s left out: %s\n", cand[k].name, err.text);
            continue;
        }
        ok[k] = 1;
        double sk = ng >= 3 ? ev[k].loco.rmse : ev[k].loo.rmse;
        double sb = ng >= 3 ? ev[best].loco.rmse : ev[best].loo.rmse;
        /* a score that could not be had (too few jobs for its folds) loses */
        if (!ok[best] || sk < sb || (isnan(sb) && !isnan(sk)))
            best = k;
    }
    if (need_cv && !ok[best]) {
        cli_error("train", "no candidate model fits these jobs");
        pflex_dataset_fini(&d);
        return PFLEX_EXIT_BAD_INPUT;
    }
    struct pflex_train_data td;
    double *y;
    pflex_dataset_train_data(&d, &td, &y);
    pflex_model_t *m = y ? pflex_model_fit(&cand[best].spec, &td, &err) : NULL;
    if (!m) {
        cli_error("train", "%s", y ? err.text : "out of memory");
        free(y);
        pflex_dataset_fini(&d);
        return PFLEX_EXIT_BAD_INPUT;
    }
    /* what the model was trained on and how it scored, kept in the file */
    json_t *tr = json_object(), *cands = json_array();
    json_object_set_new(tr, "jobs", json_integer((json_int_t)d.n));
    json_object_set_new(tr, "clusters", json_integer((json_int_t)ng));
    json_object_set_new(tr, "selected", json_string(cand[best].name));
    json_object_set_new(tr, "selected_by", json_string(!need_cv ? "--kind" : ng >= 3 ?
                                                       "leave-one-cluster-out RMSE" :
                                                       "leave-one-out RMSE"));
    for (size_t k = first; k < last && need_cv; k++) {
        if (!ok[k])
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(cand[k].name));
        json_object_set_new(o, "kind", json_string(pflex_model_kind_name(cand[k].spec.kind)));
        json_object_set_new(o, "in_sample", score_json(&ev[k].in));
        char why[96];
        if (cv || ng < 3) {
            json_object_set_new(o, "loo", score_json(&ev[k].loo));
            json_object_set_new(o, "curve_loo_rmse", cli_json_real(ev[k].curve_loo_rmse));
            if (ev[k].loo_na)
                json_object_set_new(o, "loo_na", json_string(pflex_modelsel_na(&ev[k], ev[k].loo_fold,
                                                                           why, sizeof why)));
        }
        if (ng >= 2) {
            json_object_set_new(o, "loco", score_json(&ev[k].loco));
            json_object_set_new(o, "curve_loco_rmse", cli_json_real(ev[k].curve_loco_rmse));
            if (ev[k].loco_na)
                json_object_set_new(o, "loco_na", json_string(pflex_modelsel_na(&ev[k],
                                                    ev[k].loco_fold, why, sizeof why)));
        }
        json_array_append_new(cands, o);
    }
    json_object_set_new(tr, "candidates", cands);
    char *extra = json_dumps(tr, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    char *text = pflex_model_to_json(m, extra);
    free(extra);
    if (!text || cli_write_atomic(out, text, strlen(text)) < 0) {
        cli_error("train", "%s: %s", out, text ? strerror(errno) : "out of memory");
        rc = PFLEX_EXIT_INTERNAL;
    } else if (json) {
        json_object_set_new(tr, "model", json_string(out));
        json_incref(tr);
        if (cli_json_print(tr) < 0)
            rc = PFLEX_EXIT_INTERNAL;
    } else {
        printf("%zu jobs in %zu clusters; model %s (%s) written to %s\n", d.n, ng,
               cand[best].name, pflex_model_kind_name(cand[best].spec.kind), out);
        if (need_cv) {
            printf("%-16s %7s | %7s %7s %6s | %7s %7s %6s | %9s %9s\n", "candidate", "R2 in",
                   "LOO R2", "RMSE", "rho", "LOCO R2", "RMSE", "rho", "curve LOO", "curve LOCO");
            for (size_t k = first; k < last; k++) {
                if (!ok[k])
                    continue;
                /* a scheme not run: n/a, and why on the next line */
                const struct pflex_modelsel_eval *e = &ev[k];
                char a[32], b[32], ca[16], cb[16], why[96];
                int run_a = cv || ng < 3, run_b = ng >= 2;
                int na_a = e->loo_na && run_a, na_b = e->loco_na && run_b;
                const char *ta = !run_a ? "-" : na_a ? "n/a" : NULL;
                const char *tb = !run_b ? "-" : na_b ? "n/a" : NULL;
                score_cells(a, sizeof a, ta, &e->loo);
                score_cells(b, sizeof b, tb, &e->loco);
                curve_cell(ca, sizeof ca, ta, e->curve_loo_rmse);
                curve_cell(cb, sizeof cb, tb, e->curve_loco_rmse);
                printf("%-16s %7.3f | %s | %s | %s %s%s\n", cand[k].name, e->in.r2, a, b, ca, cb,
                       k == best ? "  <- chosen" : "");
                if (na_a)
                    printf("  %s: LOO n/a, %s\n", cand[k].name,
                           pflex_modelsel_na(e, e->loo_fold, why, sizeof why));
                if (na_b)
                    printf("  %s: LOCO n/a, %s\n", cand[k].name,
                           pflex_modelsel_na(e, e->loco_fold, why, sizeof why));
            }
            printf("PFI: R^2, RMSE (ratio units) and Spearman rho; curve: RMSE of the loss at "
                   "5..60 %% cuts\n");
        }
    }
    json_decref(tr);
    free(text);
    free(y);
    pflex_model_destroy(m);
    if (fflush(stdout) != 0)
        rc = PFLEX_EXIT_INTERNAL;
    pflex_dataset_fini(&d);
    return rc;
}
