/* predict.c — the study's prediction sections on a study's sweeps
 * (pflex/study/study.h):
 *
 *  - Table 3: the seven OLS predictor sets (and pflex's own models), R^2 in
 *    sample, leave-one-out and leave-one-cluster-out R^2, RMSE and rho,
 *    beside the study's numbers;
 *  - the DRAM-copy-product fit on the H200 jobs scored on the H100 jobs;
 *  - §6: workloads of 100 jobs drawn with replacement from the H200 jobs, a
 *    random and a production mix, site cuts 0-40 %, every policy scored on
 *    the measured curves: tokens/s per job and the share of the
 *    equal-to-oracle gap recovered, with the spread over the workloads.
 *
 * Every fit and every model choice is on the H200 jobs of the main set (the
 * study fleet's 25 headline groups: n = 25, as the study); the held-out
 * validation groups (job names ending "-val") are only predicted.  The
 * model choice is nested inside the cross-validation (a "nested" row), and
 * the predicted PFIs and curves used in §6 are nested leave-one-out
 * predictions (each job's from a model chosen and fitted without it), so no
 * job is planned with a model that saw its own sweep.
 *
 * Production mix (documented in docs/telemetry.md): each draw is a
 * fine-tuning job (LoRA or full) with probability 0.8 and a pretraining job
 * with probability 0.2, uniform within the class: many fine-tuning jobs,
 * few pretraining ones, as in the Acme trace the study follows.  Random
 * mix: uniform over the jobs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "pflex/flex/alloc.h"
#include "pflex/study/modelsel.h"
#include "pflex/study/study.h"

/* ---- Table 3 ---- */

struct pset {
    const char *name;
    size_t n;
    int f[PFLEX_FEAT_COUNT];
    /* the study's Table 3: R2 in, LOO R2, RMSE, rho, LOCO R2, RMSE, rho */
    double study[7];
};

#define DCGM11 PFLEX_FEAT_SM_CLOCK_OVER_MAX, PFLEX_FEAT_MEM_CLOCK_MHZ, PFLEX_FEAT_GPU_UTIL, \
    PFLEX_FEAT_MEM_COPY_UTIL, PFLEX_FEAT_SM_ACTIVE, PFLEX_FEAT_SM_OCCUPANCY, \
    PFLEX_FEAT_TENSOR_ACTIVE, PFLEX_FEAT_DRAM_ACTIVE, PFLEX_FEAT_GR_ENGINE_ACTIVE, \
    PFLEX_FEAT_PCIE_GBS, PFLEX_FEAT_NVLINK_GBS
#define META PFLEX_FEAT_ARCH_MOE, PFLEX_FEAT_TASK_FT, PFLEX_FEAT_LOG2_GPUS

static const struct pset psets[] = {
    {"DRAM copy product", 1, {PFLEX_FEAT_DRAM_COPY},
     {0.675, 0.524, 0.241, 0.489, 0.246, 0.303, 0.515}},
    {"arithmetic intensity (tensor / DRAM)", 1, {PFLEX_FEAT_ARITH_INTENSITY},
     {0.381, 0.238, 0.305, 0.482, -1.652, 0.569, 0.311}},
    {"both", 2, {PFLEX_FEAT_DRAM_COPY, PFLEX_FEAT_ARITH_INTENSITY},
     {0.676, 0.462, 0.256, 0.435, -0.588, 0.440, 0.357}},
    {"job metadata (arch, task, log GPUs)", 3, {META},
     {0.519, 0.310, 0.290, 0.377, -4.106, 0.789, 0.188}},
    {"DRAM copy product + metadata", 4, {PFLEX_FEAT_DRAM_COPY, META},
     {0.687, 0.350, 0.282, 0.386, -2.391, 0.643, 0.208}},
    {"all DCGM fields (11; tx+rx summed)", 11, {DCGM11},
     {0.885, -0.187, 0.381, 0.323, -18.5, 1.542, 0.077}},
    {"all DCGM + metadata", 14, {DCGM11, META},
     {0.942, -0.010, 0.351, 0.412, -104, 3.572, -0.508}},
};

/* A JSON real, or null when x is not finite. */
static json_t *jreal(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *score(const struct pflex_fit_score *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "r2", jreal(s->r2));
    json_object_set_new(o, "rmse", jreal(s->rmse));
    json_object_set_new(o, "rho", jreal(s->rho));
    return o;
}

static int has(const char *s, const char *needle)
{
    return s && strstr(s, needle);
}

/* LOO predictions of a spec: pred (n x (1 + PFLEX_DATASET_NCUT)). */
static int loo_pred(const struct pflex_model_spec *s, const struct pflex_dataset *d, double *pred,
                    pflex_error_t *err)
{
    struct pflex_train_data td;
    double *y;
    pflex_dataset_train_data(d, &td, &y);
    int *g = malloc((d->n ? d->n : 1) * sizeof *g);
    int rc = -1;
    if (y && g) {
        for (size_t i = 0; i < d->n; i++)
            g[i] = (int)i;
        rc = pflex_model_cv(s, &td, g, pred, err);
    }
    free(g);
    free(y);
    return rc;
}

/* ---- §6 ---- */

enum { P_ORACLE, P_EQUAL, P_MOEFT, P_DCGM, P_PFIW_MEAS, P_PFIW_OLS, P_PFIW_BEST, P_PFI_BEST,
       P_OPT_PRED, P_COUNT };
static const char *const pnames[P_COUNT] = {
    "oracle (optimal, measured curves)", "equal", "MoE-FT-weighted", "uncalibrated DCGM",
    "pfi-weighted, measured PFI", "pfi-weighted, predicted PFI (study OLS)",
    "pfi-weighted, predicted PFI (best model)", "pfi, predicted PFI (best model)",
    "optimal on predicted curves (best model)",
};
static const char *const pkeys[P_COUNT] = {
    "oracle", "equal", "moe-ft-weighted", "uncalibrated-dcgm", "pfi-weighted-measured",
    "pfi-weighted-predicted-ols", "pfi-weighted-predicted-best", "pfi-predicted-best",
    "optimal-predicted-curves",
};

struct sjob {
    int gpus;
    double p0, t0, xhi, pfi, pfi_ols, pfi_best, dcp;
    int moe_ft, ft;
    size_t cn;
    const double *cx, *cl;
    double px[PFLEX_DATASET_NCUT + 1], pl[PFLEX_DATASET_NCUT + 1];    /* predicted curve, (0, 0) first */
};

/* The §6 jobs as the library's planner sees them: the measured curve
 * (what every policy is scored on, and what the oracle plans on) or the
 * predicted one, and the PFI a PFI policy is given (> 0; the study counts a
 * job without a usable prediction as PFI 1). */
static void alloc_job(const struct sjob *j, int predicted, double pfi, struct pflex_alloc_job *aj)
{
    memset(aj, 0, sizeof *aj);
    aj->name = "job";
    aj->gpus = j->gpus;
    aj->p0_w = j->p0;
    aj->t0 = j->t0;
    aj->cap0_w = j->p0;
    aj->weight = 1;
    aj->pfi = pfi > 0 ? pfi : 1;
    if (predicted) {
        aj->npoints = PFLEX_DATASET_NCUT + 1;
        aj->x = j->px;
        aj->loss = j->pl;
        aj->x_hi = fmin(j->xhi, j->px[PFLEX_DATASET_NCUT]);
    } else {
        aj->npoints = (unsigned)j->cn;
        aj->x = j->cx;
        aj->loss = j->cl;
        aj->x_hi = j->xhi;
    }
}

/* One policy's plan of the jobs aj (rate_by: PROPORTIONAL's c_j, else
 * NULL) within budget W into x. */
static int plan(const struct pflex_alloc_job *aj, size_t n, enum pflex_policy policy,
                const double *rate_by, double budget, struct pflex_alloc_plan *pl, double *x)
{
    struct pflex_alloc_problem p = {.njobs = n, .jobs = aj, .budget_w = budget,
                                    .objective = PFLEX_OBJECTIVE_THROUGHPUT, .rate_by = rate_by};
    pflex_error_t err;
    if (pflex_alloc_plan(&p, policy, pl, &err) < 0)
        return -1;
    memcpy(x, pl->x, n * sizeof *x);
    return 0;
}

#define NCUTS 9
static const double site_cuts[NCUTS] = {0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40};

static json_t *protocol(const struct sjob *jobs, size_t nj, int production, unsigned nw,
                        unsigned long seed)
{
    enum { WJ = 100 };
    size_t nft = 0, npt = 0;
    for (size_t i = 0; i < nj; i++) {
        nft += jobs[i].ft == 1;
        npt += jobs[i].ft == 0;
    }
    double *tput = malloc((size_t)nw * NCUTS * P_COUNT * sizeof *tput);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!tput || !rng)
        return NULL;
    gsl_rng_set(rng, seed + (unsigned long)production);
    const struct sjob *pick[WJ];
    /* meas: the picked jobs on their measured curves, which every plan is
     * scored on; aj: as a policy that sees predictions or PFIs plans them */
    struct pflex_alloc_job meas[WJ], aj[WJ];
    struct pflex_alloc_plan pl;
    double x[WJ], rate[WJ];
    pflex_alloc_plan_init(&pl);
    for (unsigned wl = 0; wl < nw; wl++) {
        for (int k = 0; k < WJ; k++) {
            size_t idx;
            if (production && nft && npt) {
                int ft = gsl_rng_uniform(rng) < 0.8;
                size_t r = gsl_rng_uniform_int(rng, ft ? nft : npt);
                for (idx = 0; idx < nj; idx++)
                    if (jobs[idx].ft == ft && r-- == 0)
                        break;
            } else {
                idx = gsl_rng_uniform_int(rng, nj);
            }
            pick[k] = &jobs[idx];
            alloc_job(pick[k], 0, 1, &meas[k]);
        }
        double base = 0;
        for (int k = 0; k < WJ; k++)
            base += pick[k]->gpus * pick[k]->p0;
        for (int c = 0; c < NCUTS; c++) {
            double W = site_cuts[c] * base;
            for (int p = 0; p < P_COUNT; p++) {
                enum pflex_policy pol = PFLEX_POLICY_PROPORTIONAL;
                const struct pflex_alloc_job *pj = meas;
                switch (p) {
                case P_ORACLE: pol = PFLEX_POLICY_OPTIMAL; break;
                case P_EQUAL: pol = PFLEX_POLICY_EQUAL; break;
                case P_MOEFT:
                    for (int k = 0; k < WJ; k++)
                        rate[k] = pick[k]->moe_ft ? 2 : 1;
                    break;
                case P_DCGM:
                    for (int k = 0; k < WJ; k++)
                        rate[k] = pick[k]->dcp > 0 ? pick[k]->dcp : 0;
                    break;
                case P_OPT_PRED:
                    pol = PFLEX_POLICY_OPTIMAL;
                    for (int k = 0; k < WJ; k++)
                        alloc_job(pick[k], 1, 1, &aj[k]);
                    pj = aj;
                    break;
                default:
                    pol = p == P_PFI_BEST ? PFLEX_POLICY_PFI : PFLEX_POLICY_PFI_WEIGHTED;
                    for (int k = 0; k < WJ; k++) {
                        const struct sjob *j = pick[k];
                        double v = p == P_PFIW_MEAS ? j->pfi : p == P_PFIW_OLS ? j->pfi_ols
                                                                              : j->pfi_best;
                        alloc_job(j, 0, v, &aj[k]);
                    }
                    pj = aj;
                }
                int ok = plan(pj, WJ, pol, pol == PFLEX_POLICY_PROPORTIONAL ? rate : NULL,
                              base - W, &pl, x) == 0;
                double t = 0;
                for (int k = 0; k < WJ && ok; k++)
                    t += pick[k]->t0 * pflex_alloc_measured_fraction(&meas[k], x[k]);
                tput[((size_t)wl * NCUTS + c) * P_COUNT + p] = ok ? t : NAN;
            }
        }
    }
    pflex_alloc_plan_fini(&pl);
    gsl_rng_free(rng);
    json_t *o = json_object(), *cuts = json_array(), *pol = json_object();
    json_object_set_new(o, "mix", json_string(production ? "production" : "random"));
    json_object_set_new(o, "workloads", json_integer(nw));
    json_object_set_new(o, "jobs_per_workload", json_integer(WJ));
    for (int c = 0; c < NCUTS; c++)
        json_array_append_new(cuts, json_real(site_cuts[c]));
    json_object_set_new(o, "cuts", cuts);
    double *g = malloc((size_t)nw * sizeof *g);
    for (int p = 0; p < P_COUNT && g; p++) {
        json_t *pp = json_object(), *tpj = json_array(), *gain = json_array(), *med = json_array(),
               *p10 = json_array(), *p90 = json_array(), *pooled = json_array();
        json_object_set_new(pp, "name", json_string(pnames[p]));
        for (int c = 0; c < NCUTS; c++) {
            double st = 0, sg = 0, sd = 0, sn = 0;
            size_t ng = 0;
            for (unsigned wl = 0; wl < nw; wl++) {
                const double *r = tput + ((size_t)wl * NCUTS + c) * P_COUNT;
                st += r[p] / WJ;
                sg += (r[p] - r[P_EQUAL]) / WJ;
                double den = r[P_ORACLE] - r[P_EQUAL];
                sn += r[p] - r[P_EQUAL];
                sd += den;
                if (den > 1e-9 * r[P_EQUAL])
                    g[ng++] = (r[p] - r[P_EQUAL]) / den;
            }
            json_array_append_new(tpj, jreal(st / nw));
            json_array_append_new(gain, jreal(sg / nw));
            if (ng) {
                gsl_sort(g, 1, ng);
                json_array_append_new(med, jreal(gsl_stats_median_from_sorted_data(g, 1, ng)));
                json_array_append_new(p10, jreal(gsl_stats_quantile_from_sorted_data(g, 1, ng, 0.1)));
                json_array_append_new(p90, jreal(gsl_stats_quantile_from_sorted_data(g, 1, ng, 0.9)));
            } else {
                json_array_append_new(med, json_null());
                json_array_append_new(p10, json_null());
                json_array_append_new(p90, json_null());
            }
            json_array_append_new(pooled, sd > 0 ? jreal(sn / sd) : json_null());
        }
        json_object_set_new(pp, "tokens_per_s_per_job", tpj);
        json_object_set_new(pp, "gain_over_equal_per_job", gain);
        json_object_set_new(pp, "gap_recovered", pooled);
        json_object_set_new(pp, "gap_recovered_median", med);
        json_object_set_new(pp, "gap_recovered_p10", p10);
        json_object_set_new(pp, "gap_recovered_p90", p90);
        json_object_set_new(pol, pkeys[p], pp);
    }
    free(g);
    free(tput);
    json_object_set_new(o, "policies", pol);
    return o;
}

/* Leave-one-out inside nested_cv costs n x n fits a candidate: up to
 * NESTED_LOO_MAX rows (the study's 25 headline groups) the folds are single
 * rows; past it (the extended fleet's hundreds of H200 groups, where that
 * would take hours) NESTED_FOLDS folds, row i in fold i mod NESTED_FOLDS. */
enum { NESTED_LOO_MAX = 100, NESTED_FOLDS = 10 };

static int nested_fold(size_t i, size_t n)
{
    return (int)(n > NESTED_LOO_MAX ? i % NESTED_FOLDS : i);
}

struct nested {
    const struct pflex_modelsel_candidate *cand;
    size_t nc;
    int *ids;           /* the inner folds */
    double *inner;      /* the inner folds' predictions */
};

/* One outer fold's model (pflex_model_cv_folds' fit): the candidate of
 * least inner leave-one-out RMSE on the fold's rows, fitted on them. */
static pflex_model_t *nested_fit(void *ctx, const struct pflex_train_data *in)
{
    const struct nested *x = ctx;
    size_t n = in->n, nt = 1 + in->ncut, ntrain = 0;
    for (size_t j = 0; j < n; j++)
        ntrain += in->use[j] && !isnan(in->y[j * nt]);
    int best = -1;
    double best_rmse = INFINITY;
    for (size_t c = 0; c < x->nc; c++) {
        pflex_error_t e;
        if (ntrain < 2 || pflex_model_min_jobs(&x->cand[c].spec) > ntrain - 1
            || pflex_model_cv(&x->cand[c].spec, in, x->ids, x->inner, &e) < 0)
            continue;
        double se2 = 0;
        size_t k = 0;
        for (size_t j = 0; j < n; j++)
            if (in->use[j] && !isnan(x->inner[j * nt]) && !isnan(in->y[j * nt])) {
                double d = x->inner[j * nt] - in->y[j * nt];
                se2 += d * d;
                k++;
            }
        if (k == ntrain && sqrt(se2 / (double)k) < best_rmse) {
            best_rmse = sqrt(se2 / (double)k);
            best = (int)c;
        }
    }
    pflex_error_t e;
    return best >= 0 ? pflex_model_fit(&x->cand[best].spec, in, &e) : NULL;
}

/* Nested cross-validation: for each outer fold (the rows sharing an id in
 * g), the model is chosen among cand[0..nc) by its leave-one-out RMSE of
 * PFI on the other rows only (NESTED_FOLDS-fold past NESTED_LOO_MAX rows),
 * fitted on them, and predicts the fold; so no prediction comes from a
 * model chosen or fitted with the row it predicts.  pred: n x (1 + ncut). */
static int nested_cv(const struct pflex_modelsel_candidate *cand, size_t nc,
                     const struct pflex_train_data *td, const int *g, double *pred)
{
    size_t n = td->n, nt = 1 + td->ncut;
    struct nested x = {cand, nc, malloc((n ? n : 1) * sizeof *x.ids),
                       malloc((n ? n : 1) * nt * sizeof *x.inner)};
    int rc = -1;
    if (x.ids && x.inner) {
        for (size_t i = 0; i < n; i++)
            x.ids[i] = nested_fold(i, n);
        pflex_error_t e;
        rc = pflex_model_cv_folds(td, g, nested_fit, &x, pred, &e);
    }
    free(x.ids);
    free(x.inner);
    return rc;
}

/* The nested row of Table 3: leave-one-out and leave-one-cluster-out
 * scores of the model chosen inside each fold; *loo_pred_out (n x (1 +
 * ncut), malloc'd, may stay NULL) the nested leave-one-out predictions. */
static json_t *nested_row(const struct pflex_dataset *h200,
                          const struct pflex_modelsel_candidate *cand, size_t nc,
                          double **loo_pred_out)
{
    size_t nt = 1 + PFLEX_DATASET_NCUT, ng = 0, n = h200->n ? h200->n : 1;
    struct pflex_train_data td;
    double *y = NULL, *pl = malloc(n * nt * sizeof *pl), *pc = malloc(n * nt * sizeof *pc);
    int *ids = malloc(n * sizeof *ids), *cl = pflex_dataset_cluster_ids(h200, &ng);
    json_t *o = json_object();
    pflex_dataset_train_data(h200, &td, &y);
    json_object_set_new(o, "features", json_string("model chosen inside each fold (nested)"));
    json_object_set_new(o, "model", json_string("nested"));
    json_object_set_new(o, "p", json_integer(0));
    json_object_set_new(o, "r2_in", json_null());
    if (y && pl && pc && ids && cl) {
        struct pflex_fit_score sl, sc;
        for (size_t i = 0; i < h200->n; i++)
            ids[i] = nested_fold(i, h200->n);
        json_object_set_new(o, "folds", json_integer((json_int_t)(h200->n > NESTED_LOO_MAX ? NESTED_FOLDS
                                                                                            : h200->n)));
        if (nested_cv(cand, nc, &td, ids, pl) == 0 && nested_cv(cand, nc, &td, cl, pc) == 0) {
            pflex_fit_score(pl, y, h200->n, nt, &sl);
            pflex_fit_score(pc, y, h200->n, nt, &sc);
            json_object_set_new(o, "loo", score(&sl));
            json_object_set_new(o, "loco", score(&sc));
            *loo_pred_out = pl;
            pl = NULL;
        }
    }
    free(y);
    free(pl);
    free(pc);
    free(ids);
    free(cl);
    return o;
}

/* The held-out validation groups: each Table 3 set (OLS) and the deployed
 * model fitted on the main set, predicting them. */
static json_t *validation(const struct pflex_dataset *h200, const struct pflex_dataset *val,
                          const struct pflex_model_spec *deployed, const char *deployed_name)
{
    size_t nt = 1 + PFLEX_DATASET_NCUT, nrows = sizeof psets / sizeof *psets;
    size_t nv = val->n ? val->n : 1;
    struct pflex_train_data td;
    double *y = NULL, *pv = malloc(nv * nt * sizeof *pv), *yv = malloc(nv * nt * sizeof *yv);
    double se[1 + PFLEX_DATASET_NCUT];
    json_t *o = json_object(), *rows = json_array();
    pflex_dataset_train_data(h200, &td, &y);
    json_object_set_new(o, "jobs", json_integer((json_int_t)val->n));
    for (size_t r = 0; y && pv && yv && r <= nrows; r++) {
        struct pflex_model_spec sp = {.kind = PFLEX_MODEL_OLS};
        if (r < nrows) {
            sp.nfeat = psets[r].n;
            memcpy(sp.feat, psets[r].f, sizeof sp.feat);
        } else {
            sp = *deployed;
        }
        pflex_error_t e;
        pflex_model_t *m = pflex_model_fit(&sp, &td, &e);
        json_t *row = json_object();
        json_object_set_new(row, "features", json_string(r < nrows ? psets[r].name
                                                                   : deployed_name));
        if (m) {
            for (size_t i = 0; i < val->n; i++) {
                pflex_model_predict(m, val->x + i * PFLEX_FEAT_COUNT, pv + i * nt, se);
                yv[i * nt] = val->pfi[i];
            }
            struct pflex_fit_score sv;
            pflex_fit_score(pv, yv, val->n, nt, &sv);
            json_object_set_new(row, "rmse", jreal(sv.rmse));
            json_object_set_new(row, "rho", jreal(sv.rho));
            pflex_model_destroy(m);
        } else {
            json_object_set_new(row, "error", json_string(e.text));
        }
        json_array_append_new(rows, row);
    }
    json_object_set_new(o, "models", rows);
    free(y);
    free(pv);
    free(yv);
    return o;
}

/* One row of Table 3: the spec's scores on the H200 jobs, beside the
 * study's (study: NULL for pflex's own models).  *loo_rmse: its
 * leave-one-out RMSE, NaN when it could not be scored. */
static json_t *table3_row(const struct pflex_model_spec *s, const char *name, const double *study,
                          const struct pflex_dataset *h200, double *loo_rmse)
{
    struct pflex_modelsel_eval ev;
    pflex_error_t err;
    json_t *o = json_object();
    json_object_set_new(o, "features", json_string(name));
    json_object_set_new(o, "model", json_string(pflex_model_kind_name(s->kind)));
    json_object_set_new(o, "p", json_integer((json_int_t)s->nfeat));
    *loo_rmse = NAN;
    if (pflex_modelsel_evaluate(s, h200, 1, &ev, &err) < 0) {
        json_object_set_new(o, "error", json_string(err.text));
    } else {
        char why[96];
        *loo_rmse = ev.loo_na ? NAN : ev.loo.rmse;
        json_object_set_new(o, "r2_in", jreal(ev.in.r2));
        json_object_set_new(o, "loo", score(&ev.loo));
        if (ev.loo_na)
            json_object_set_new(o, "loo_na", json_string(pflex_modelsel_na(&ev, ev.loo_fold, why,
                                                                           sizeof why)));
        json_object_set_new(o, "loco", score(&ev.loco));
        if (ev.loco_na)
            json_object_set_new(o, "loco_na", json_string(pflex_modelsel_na(&ev, ev.loco_fold,
                                                                            why, sizeof why)));
        json_object_set_new(o, "curve_loo_rmse", jreal(ev.curve_loo_rmse));
        json_object_set_new(o, "curve_loco_rmse", jreal(ev.curve_loco_rmse));
    }
    if (study) {
        json_t *st = json_object();
        json_object_set_new(st, "r2_in", json_real(study[0]));
        json_object_set_new(st, "loo", json_pack("{s:f,s:f,s:f}", "r2", study[1], "rmse",
                                                 study[2], "rho", study[3]));
        json_object_set_new(st, "loco", json_pack("{s:f,s:f,s:f}", "r2", study[4], "rmse",
                                                  study[5], "rho", study[6]));
        json_object_set_new(o, "study", st);
    }
    return o;
}

/* Table 3 into the array t3: the study's predictor sets, then pflex's
 * candidates but the first (the same OLS as the first set).  Returns the
 * index into cand of the deployed candidate: the lowest leave-one-out RMSE
 * on all the jobs (ridge-telemetry when none scores); its row is in sample
 * for that choice, the nested row (nested_row) is not. */
static size_t table3(const struct pflex_dataset *h200, const struct pflex_modelsel_candidate *cand,
                     size_t nc, json_t *t3)
{
    size_t nrows = sizeof psets / sizeof *psets, best = 2;
    double best_rmse = INFINITY, rmse;
    for (size_t r = 0; r < nrows; r++) {
        struct pflex_model_spec s = {.kind = PFLEX_MODEL_OLS, .nfeat = psets[r].n};
        memcpy(s.feat, psets[r].f, sizeof s.feat);
        json_array_append_new(t3, table3_row(&s, psets[r].name, psets[r].study, h200, &rmse));
    }
    for (size_t k = 1; k < nc; k++) {
        json_array_append_new(t3, table3_row(&cand[k].spec, cand[k].name, NULL, h200, &rmse));
        if (rmse < best_rmse) {
            best_rmse = rmse;
            best = k;
        }
    }
    return best;
}

/* The DRAM-copy-product OLS fitted on the H200 jobs, scored on the H100
 * ones. */
static json_t *h100_transfer(const struct pflex_dataset *h200, const struct pflex_dataset *h100)
{
    struct pflex_model_spec s = {PFLEX_MODEL_OLS, 1, {PFLEX_FEAT_DRAM_COPY}};
    struct pflex_train_data td;
    pflex_error_t err;
    size_t n = h100->n ? h100->n : 1;
    double *y, *p1 = malloc(n * sizeof *p1), *t1 = malloc(n * sizeof *t1);
    double mm[1 + PFLEX_DATASET_NCUT], se[1 + PFLEX_DATASET_NCUT];
    pflex_dataset_train_data(h200, &td, &y);
    pflex_model_t *m = y ? pflex_model_fit(&s, &td, &err) : NULL;
    json_t *o = json_object();
    json_object_set_new(o, "h100_jobs", json_integer((json_int_t)h100->n));
    if (m && p1 && t1 && h100->n >= 3) {
        for (size_t i = 0; i < h100->n; i++) {
            pflex_model_predict(m, h100->x + i * PFLEX_FEAT_COUNT, mm, se);
            p1[i] = mm[0];
            t1[i] = h100->pfi[i];
        }
        struct pflex_fit_score sc;
        pflex_fit_score(p1, t1, h100->n, 1, &sc);
        json_object_set_new(o, "r2", jreal(sc.r2));
        json_object_set_new(o, "rmse", jreal(sc.rmse));
        json_object_set_new(o, "rho", jreal(sc.rho));
    }
    json_object_set_new(o, "study_r2", json_real(0.56));
    pflex_model_destroy(m);
    free(y);
    free(p1);
    free(t1);
    return o;
}

/* The §6 jobs: the H200 jobs with their measured curves and PFIs, the
 * nested leave-one-out predictions of the best model (pred: PFI and curve,
 * model chosen and fitted without the job) and the leave-one-out ones of
 * the study's OLS (PFI).  Returns a calloc'd array of h200->n, or NULL with
 * err. */
static struct sjob *protocol_jobs(const struct pflex_dataset *h200, const double *pred,
                                  pflex_error_t *err)
{
    size_t nt = 1 + PFLEX_DATASET_NCUT, n = h200->n;
    double *pols = malloc(n * nt * sizeof *pols);
    struct sjob *sj = calloc(n, sizeof *sj);
    struct pflex_model_spec sols = {PFLEX_MODEL_OLS, 1, {PFLEX_FEAT_DRAM_COPY}};
    if (!pred || !pols || !sj) {
        pflex_error_sys(err, "out of memory");
        goto fail;
    }
    if (loo_pred(&sols, h200, pols, err) < 0)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        struct sjob *j = &sj[i];
        const double *x = h200->x + i * PFLEX_FEAT_COUNT;
        j->gpus = h200->gpus[i];
        j->p0 = h200->p0_w[i];
        j->t0 = h200->t0[i];
        j->xhi = h200->x_max[i];
        j->pfi = h200->pfi[i];
        j->pfi_ols = pols[i * nt];
        j->pfi_best = pred[i * nt];
        j->dcp = x[PFLEX_FEAT_DRAM_COPY];
        j->ft = isnan(x[PFLEX_FEAT_TASK_FT]) ? -1 : (int)x[PFLEX_FEAT_TASK_FT];
        j->moe_ft = j->ft == 1 && x[PFLEX_FEAT_ARCH_MOE] == 1;
        j->cn = h200->cn[i];
        j->cx = h200->cx[i];
        j->cl = h200->cl[i];
        j->px[0] = j->pl[0] = 0;
        for (int k = 0; k < PFLEX_DATASET_NCUT; k++) {
            j->px[k + 1] = pflex_dataset_cuts[k];
            double v = pred[i * nt + 1 + k];
            j->pl[k + 1] = isnan(v) ? (k ? j->pl[k] : 0) : v;
        }
    }
    free(pols);
    return sj;
fail:
    free(pols);
    free(sj);
    return NULL;
}

/* The §6 protocol on both mixes, with the study's headline beside it. */
static json_t *allocation(const struct sjob *sj, size_t n, unsigned workloads, unsigned long seed)
{
    json_t *r = protocol(sj, n, 0, workloads, seed), *p = protocol(sj, n, 1, workloads, seed);
    if (!r || !p) {
        json_decref(r);
        json_decref(p);
        return NULL;
    }
    json_t *alloc = json_object();
    json_object_set_new(alloc, "random", r);
    json_object_set_new(alloc, "production", p);
    json_object_set_new(alloc, "study", json_pack("{s:s,s:f,s:f}", "headline",
                        "production mix, 30 % cut: pfi-weighted with predicted PFI recovers 63 % of "
                        "the equal-to-oracle gap, +1.5k tokens/s per job", "gap_recovered", 0.63,
                        "gain_per_job", 1500.0));
    return alloc;
}

/* The H200 main-set, H200 validation and H100 jobs of all with a PFI (a
 * job without a GPU kind is H200 unless its name says h100; the study
 * fleet names its held-out validation groups "...-val").  Returns 0, or -1
 * with err. */
static int split_kinds(const struct pflex_dataset *all, const char *name,
                       struct pflex_dataset *h200, struct pflex_dataset *val,
                       struct pflex_dataset *h100, pflex_error_t *err)
{
    unsigned char *k2 = calloc(all->n ? all->n : 1, 1), *k1 = calloc(all->n ? all->n : 1, 1);
    unsigned char *kv = calloc(all->n ? all->n : 1, 1);
    size_t n200 = 0;
    int rc = -1;
    memset(h200, 0, sizeof *h200);
    memset(val, 0, sizeof *val);
    memset(h100, 0, sizeof *h100);
    if (!k2 || !k1 || !kv) {
        pflex_error_sys(err, "prediction sections: out of memory");
        goto out;
    }
    for (size_t i = 0; i < all->n; i++) {
        int g200 = has(all->gpu[i], "H200") || (!all->gpu[i] && !has(all->job[i], "h100"));
        int heldout = has(all->job[i], "-val");
        k2[i] = g200 && !heldout && !isnan(all->pfi[i]);
        kv[i] = g200 && heldout && !isnan(all->pfi[i]);
        k1[i] = has(all->gpu[i], "H100") && !isnan(all->pfi[i]);
        n200 += k2[i];
    }
    if (n200 < 10) {
        pflex_error_set(err, "%s: %zu H200 jobs with a PFI: too few for the prediction sections",
                        name, n200);
        goto out;
    }
    if (pflex_dataset_subset(all, k2, h200, err) == 0 && pflex_dataset_subset(all, k1, h100, err) == 0
        && pflex_dataset_subset(all, kv, val, err) == 0)
        rc = 0;
out:
    free(k1);
    free(k2);
    free(kv);
    return rc;
}

int pflex_study_predict(const struct pflex_dataset *all, const char *name, unsigned workloads,
                        unsigned long seed, json_t **out, pflex_error_t *err)
{
    struct pflex_dataset h200, h100, val;
    struct sjob *sj = NULL;
    double *npred = NULL;
    json_t *doc = json_object(), *t3 = json_array(), *alloc;
    int rc = -1;
    *out = NULL;
    if (split_kinds(all, name, &h200, &val, &h100, err) < 0) {
        json_decref(doc);
        json_decref(t3);
        return -1;
    }
    /* doc owns t3 from the start (set_new steals it even when it fails), so
     * that every way out frees it; t3 stays a borrowed pointer */
    if (!doc)
        json_decref(t3);
    if (!doc || json_object_set_new(doc, "table3", t3) < 0) {
        pflex_error_sys(err, "prediction sections: out of memory");
        goto out;
    }
    json_object_set_new(doc, "jobs", json_integer((json_int_t)h200.n));
    size_t ng = 0;
    free(pflex_dataset_cluster_ids(&h200, &ng));
    json_object_set_new(doc, "clusters", json_integer((json_int_t)ng));
    struct pflex_modelsel_candidate cand[8];
    size_t nc = pflex_modelsel_candidates(cand, 8);
    size_t best = table3(&h200, cand, nc, t3);
    json_array_append_new(t3, nested_row(&h200, cand + 1, nc - 1, &npred));
    json_object_set_new(doc, "best_model", json_string(cand[best].name));
    if (val.n > 0)
        json_object_set_new(doc, "validation", validation(&h200, &val, &cand[best].spec,
                                                          cand[best].name));
    json_object_set_new(doc, "h100_transfer", h100_transfer(&h200, &h100));
    pflex_error_t e = {{0}};
    if (!(sj = protocol_jobs(&h200, npred, &e))
        || !(alloc = allocation(sj, h200.n, workloads, seed))) {
        pflex_error_set(err, "prediction sections: %s", e.text[0] ? e.text : "out of memory");
        goto out;
    }
    json_object_set_new(doc, "allocation", alloc);
    *out = doc;
    doc = NULL;
    rc = 0;
out:
    json_decref(doc);
    free(sj);
    free(npred);
    pflex_dataset_fini(&h200);
    pflex_dataset_fini(&val);
    pflex_dataset_fini(&h100);
    return rc;
}
