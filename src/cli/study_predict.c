/* study_predict.c — the study's prediction sections on a study's sweeps:
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
 * Predicted PFIs and curves used in §6 are leave-one-out predictions (each
 * job's from a model fitted without it), so no job is planned with a model
 * that saw its own sweep.
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
#include "cli/cli.h"
#include "cli/model_common.h"
#include "cli/study_predict.h"
#include "pflex/alloc.h"

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

static json_t *score(const struct pflex_fit_score *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "r2", cli_json_real(s->r2));
    json_object_set_new(o, "rmse", cli_json_real(s->rmse));
    json_object_set_new(o, "rho", cli_json_real(s->rho));
    return o;
}

/* Deep copy of the rows of d with keep[i]. */
static int subset(const struct dataset *d, const unsigned char *keep, struct dataset *o)
{
    memset(o, 0, sizeof *o);
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += keep[i];
    size_t c = n ? n : 1;
#define A(p, k) (o->p = calloc(c * (k), sizeof *o->p))
    if (!A(job, 1) || !A(cluster, 1) || !A(gpu, 1) || !A(gpus, 1) || !A(x, PFLEX_FEAT_COUNT) ||
        !A(pfi, 1) || !A(loss, DS_NCUT) || !A(p0_w, 1) || !A(t0, 1) || !A(cap0_w, 1) ||
        !A(x_max, 1) || !A(used, 1) || !A(dropped, 1) || !A(cn, 1) || !A(cx, 1) || !A(cl, 1))
        return -1;
#undef A
    for (size_t i = 0, k = 0; i < d->n; i++) {
        if (!keep[i])
            continue;
        o->job[k] = strdup(d->job[i]);
        o->cluster[k] = strdup(d->cluster[i]);
        o->gpu[k] = d->gpu[i] ? strdup(d->gpu[i]) : NULL;
        o->gpus[k] = d->gpus[i];
        memcpy(o->x + k * PFLEX_FEAT_COUNT, d->x + i * PFLEX_FEAT_COUNT,
               PFLEX_FEAT_COUNT * sizeof *o->x);
        o->pfi[k] = d->pfi[i];
        memcpy(o->loss + k * DS_NCUT, d->loss + i * DS_NCUT, DS_NCUT * sizeof *o->loss);
        o->p0_w[k] = d->p0_w[i];
        o->t0[k] = d->t0[i];
        o->cap0_w[k] = d->cap0_w[i];
        o->x_max[k] = d->x_max[i];
        o->used[k] = d->used[i];
        o->dropped[k] = d->dropped[i];
        o->cn[k] = d->cn[i];
        o->cx[k] = malloc((d->cn[i] ? d->cn[i] : 1) * sizeof *o->cx[k]);
        o->cl[k] = malloc((d->cn[i] ? d->cn[i] : 1) * sizeof *o->cl[k]);
        o->n = ++k;
        if (!o->job[k - 1] || !o->cluster[k - 1] || !o->cx[k - 1] || !o->cl[k - 1])
            return -1;
        if (d->cn[i]) {
            memcpy(o->cx[k - 1], d->cx[i], d->cn[i] * sizeof *d->cx[i]);
            memcpy(o->cl[k - 1], d->cl[i], d->cn[i] * sizeof *d->cl[i]);
        }
    }
    return 0;
}

static int has(const char *s, const char *needle)
{
    return s && strstr(s, needle);
}

/* LOO predictions of a spec: pred (n x (1 + DS_NCUT)). */
static int loo_pred(const struct pflex_model_spec *s, const struct dataset *d, double *pred,
                    pflex_error_t *err)
{
    struct pflex_train_data td;
    double *y;
    model_train_data(d, &td, &y);
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

/* Nested cross-validation: for each outer fold (the rows sharing an id in
 * g), the model is chosen among cand[0..nc) by its leave-one-out RMSE of
 * PFI on the other rows only, fitted on them, and predicts the fold; so no
 * prediction comes from a model chosen or fitted with the row it predicts.
 * pred: n x (1 + ncut); chosen[i]: the candidate that predicted row i (-1:
 * none could be fitted). */
static int nested_cv(const struct candidate *cand, size_t nc, const struct pflex_train_data *td,
                     const int *g, double *pred, int *chosen)
{
    size_t n = td->n, nt = 1 + td->ncut;
    unsigned char *use = malloc(n ? n : 1), *done = calloc(n ? n : 1, 1);
    int *ids = malloc((n ? n : 1) * sizeof *ids);
    double *inner = malloc((n ? n : 1) * nt * sizeof *inner), *se = malloc(nt * sizeof *se);
    int rc = -1;
    if (!use || !done || !ids || !inner || !se)
        goto out;
    for (size_t i = 0; i < n; i++) {
        ids[i] = (int)i;
        chosen[i] = -1;
    }
    for (size_t i = 0; i < n * nt; i++)
        pred[i] = NAN;
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        size_t ntrain = 0;
        for (size_t j = 0; j < n; j++) {
            use[j] = g[j] != g[i];
            ntrain += use[j] && !isnan(td->y[j * nt]);
        }
        struct pflex_train_data in = *td;
        in.use = use;
        int best = -1;
        double best_rmse = INFINITY;
        for (size_t c = 0; c < nc; c++) {
            pflex_error_t e;
            if (ntrain < 2 || pflex_model_min_jobs(&cand[c].spec) > ntrain - 1
                || pflex_model_cv(&cand[c].spec, &in, ids, inner, &e) < 0)
                continue;
            double se2 = 0;
            size_t k = 0;
            for (size_t j = 0; j < n; j++)
                if (use[j] && !isnan(inner[j * nt]) && !isnan(td->y[j * nt])) {
                    double d = inner[j * nt] - td->y[j * nt];
                    se2 += d * d;
                    k++;
                }
            if (k == ntrain && sqrt(se2 / (double)k) < best_rmse) {
                best_rmse = sqrt(se2 / (double)k);
                best = (int)c;
            }
        }
        pflex_error_t e;
        pflex_model_t *m = best >= 0 ? pflex_model_fit(&cand[best].spec, &in, &e) : NULL;
        for (size_t j = 0; j < n; j++) {
            if (g[j] != g[i])
                continue;
            done[j] = 1;
            if (m) {
                pflex_model_predict(m, td->x + j * PFLEX_FEAT_COUNT, pred + j * nt, se);
                chosen[j] = best;
            }
        }
        pflex_model_destroy(m);
    }
    rc = 0;
out:
    free(use);
    free(done);
    free(ids);
    free(inner);
    free(se);
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
    double px[DS_NCUT + 1], pl[DS_NCUT + 1];    /* predicted curve, (0, 0) first */
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
        aj->npoints = DS_NCUT + 1;
        aj->x = j->px;
        aj->loss = j->pl;
        aj->x_hi = fmin(j->xhi, j->px[DS_NCUT]);
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
            json_array_append_new(tpj, cli_json_real(st / nw));
            json_array_append_new(gain, cli_json_real(sg / nw));
            if (ng) {
                gsl_sort(g, 1, ng);
                json_array_append_new(med, cli_json_real(gsl_stats_median_from_sorted_data(g, 1, ng)));
                json_array_append_new(p10, cli_json_real(gsl_stats_quantile_from_sorted_data(g, 1, ng, 0.1)));
                json_array_append_new(p90, cli_json_real(gsl_stats_quantile_from_sorted_data(g, 1, ng, 0.9)));
            } else {
                json_array_append_new(med, json_null());
                json_array_append_new(p10, json_null());
                json_array_append_new(p90, json_null());
            }
            json_array_append_new(pooled, sd > 0 ? cli_json_real(sn / sd) : json_null());
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

int study_predict(const char *sweeps_csv, const char *clusters_csv, unsigned workloads,
                  unsigned long seed, json_t **out)
{
    struct dataset all, h200 = {0}, h100 = {0}, val = {0};
    char *files[1] = {(char *)sweeps_csv};
    pflex_error_t err = {{0}};
    int rc = dataset_load("study", 1, files, clusters_csv, NULL, 1, &all);
    if (rc != PFLEX_EXIT_OK)
        return rc;
    rc = PFLEX_EXIT_INTERNAL;
    unsigned char *k2 = calloc(all.n ? all.n : 1, 1), *k1 = calloc(all.n ? all.n : 1, 1);
    unsigned char *kv = calloc(all.n ? all.n : 1, 1);
    int *chosen = NULL, *ids = NULL, *cl = NULL;
    double *nloco = NULL;
    json_t *doc = json_object(), *t3 = json_array();
    double *pred = NULL, *pols = NULL;
    struct sjob *sj = NULL;
    /* doc owns t3 from the start (set_new steals it even when it fails), so
     * that every way out frees it; t3 stays a borrowed pointer */
    if (!doc)
        json_decref(t3);
    if (!doc || json_object_set_new(doc, "table3", t3) < 0)
        goto out;
    if (!k2 || !k1 || !kv)
        goto out;
    size_t n200 = 0;
    /* Table 3 and every fit are on the H200 jobs of the main set (the
     * study's 25 headline groups: n = 25); the held-out validation groups
     * (named "...-val" by the study fleet) are only predicted. */
    for (size_t i = 0; i < all.n; i++) {
        int g200 = has(all.gpu[i], "H200") || (!all.gpu[i] && !has(all.job[i], "h100"));
        int heldout = has(all.job[i], "-val");
        k2[i] = g200 && !heldout && !isnan(all.pfi[i]);
        kv[i] = g200 && heldout && !isnan(all.pfi[i]);
        k1[i] = has(all.gpu[i], "H100") && !isnan(all.pfi[i]);
        n200 += k2[i];
    }
    if (n200 < 10) {
        cli_error("study", "%s: %zu H200 jobs with a PFI: too few for the prediction sections",
                  sweeps_csv, n200);
        rc = PFLEX_EXIT_BAD_INPUT;
        goto out;
    }
    if (subset(&all, k2, &h200) < 0 || subset(&all, k1, &h100) < 0 || subset(&all, kv, &val) < 0)
        goto out;
    json_object_set_new(doc, "jobs", json_integer((json_int_t)h200.n));
    size_t ng = 0;
    free(cluster_ids(&h200, &ng));
    json_object_set_new(doc, "clusters", json_integer((json_int_t)ng));
    /* Table 3 */
    struct candidate cand[8];
    size_t nc = model_candidates(cand, 8);
    size_t nrows = sizeof psets / sizeof *psets, best = 1;
    double best_rmse = INFINITY;
    for (size_t r = 0; r < nrows + nc - 1; r++) {
        struct pflex_model_spec s;
        const char *name;
        const double *study = NULL;
        if (r < nrows) {
            s.kind = PFLEX_MODEL_OLS;
            s.nfeat = psets[r].n;
            memcpy(s.feat, psets[r].f, sizeof s.feat);
            name = psets[r].name;
            study = psets[r].study;
        } else {
            s = cand[r - nrows + 1].spec;
            name = cand[r - nrows + 1].name;
        }
        struct evaluation ev;
        json_t *o = json_object();
        json_object_set_new(o, "features", json_string(name));
        json_object_set_new(o, "model", json_string(pflex_model_kind_name(s.kind)));
        json_object_set_new(o, "p", json_integer((json_int_t)s.nfeat));
        if (model_evaluate(&s, &h200, 1, &ev, &err) < 0) {
            json_object_set_new(o, "error", json_string(err.text));
        } else {
            /* the model one would deploy: the lowest leave-one-out RMSE on
             * all the jobs (its scores here are not out of sample for the
             * choice; the nested row below is) */
            if (r >= nrows && !ev.loo_na && ev.loo.rmse < best_rmse) {
                best_rmse = ev.loo.rmse;
                best = r - nrows + 1;
            }
            char why[96];
            json_object_set_new(o, "r2_in", cli_json_real(ev.in.r2));
            json_object_set_new(o, "loo", score(&ev.loo));
            if (ev.loo_na)
                json_object_set_new(o, "loo_na", json_string(evaluation_na(&ev, ev.loo_fold, why,
                                                                           sizeof why)));
            json_object_set_new(o, "loco", score(&ev.loco));
            if (ev.loco_na)
                json_object_set_new(o, "loco_na", json_string(evaluation_na(&ev, ev.loco_fold, why,
                                                                            sizeof why)));
            json_object_set_new(o, "curve_loo_rmse", cli_json_real(ev.curve_loo_rmse));
            json_object_set_new(o, "curve_loco_rmse", cli_json_real(ev.curve_loco_rmse));
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
        json_array_append_new(t3, o);
    }
    json_object_set_new(doc, "best_model", json_string(cand[best].name));
    /* The model choice nested inside the cross-validation: LOO and LOCO
     * predictions whose model was chosen (inner LOO RMSE) and fitted
     * without the predicted jobs. */
    size_t nt0 = 1 + DS_NCUT, ngc = 0;
    struct pflex_train_data tdn;
    double *yn = NULL;
    model_train_data(&h200, &tdn, &yn);
    chosen = malloc(h200.n * sizeof *chosen);
    ids = malloc(h200.n * sizeof *ids);
    nloco = malloc(h200.n * nt0 * sizeof *nloco);
    pred = malloc(h200.n * nt0 * sizeof *pred);
    cl = cluster_ids(&h200, &ngc);
    if (!yn || !chosen || !ids || !nloco || !pred || !cl) {
        free(yn);
        goto out;
    }
    for (size_t i = 0; i < h200.n; i++)
        ids[i] = (int)i;
    {
        json_t *o = json_object();
        struct pflex_fit_score sl, sc;
        nested_cv(cand + 1, nc - 1, &tdn, ids, pred, chosen);
        pflex_fit_score(pred, yn, h200.n, nt0, &sl);
        nested_cv(cand + 1, nc - 1, &tdn, cl, nloco, chosen);
        pflex_fit_score(nloco, yn, h200.n, nt0, &sc);
        json_object_set_new(o, "features", json_string("model chosen inside each fold (nested)"));
        json_object_set_new(o, "model", json_string("nested"));
        json_object_set_new(o, "p", json_integer(0));
        json_object_set_new(o, "r2_in", json_null());
        json_object_set_new(o, "loo", score(&sl));
        json_object_set_new(o, "loco", score(&sc));
        json_array_append_new(t3, o);
    }
    /* The held-out validation groups: each Table 3 model and the deployed
     * one fitted on the headline jobs, predicting them. */
    if (val.n > 0) {
        json_t *vo = json_object(), *rows = json_array();
        json_object_set_new(vo, "jobs", json_integer((json_int_t)val.n));
        double *pv = malloc(val.n * nt0 * sizeof *pv), *se = malloc(nt0 * sizeof *se);
        double *yv = malloc(val.n * nt0 * sizeof *yv);
        for (size_t r = 0; pv && se && yv && r <= nrows; r++) {
            struct pflex_model_spec sp;
            if (r < nrows) {
                sp.kind = PFLEX_MODEL_OLS;
                sp.nfeat = psets[r].n;
                memcpy(sp.feat, psets[r].f, sizeof sp.feat);
            } else {
                sp = cand[best].spec;
            }
            pflex_error_t e;
            pflex_model_t *m = pflex_model_fit(&sp, &tdn, &e);
            json_t *o = json_object();
            json_object_set_new(o, "features", json_string(r < nrows ? psets[r].name
                                                                     : cand[best].name));
            if (m) {
                for (size_t i = 0; i < val.n; i++) {
                    pflex_model_predict(m, val.x + i * PFLEX_FEAT_COUNT, pv + i * nt0, se);
                    yv[i * nt0] = val.pfi[i];
                }
                struct pflex_fit_score sv;
                pflex_fit_score(pv, yv, val.n, nt0, &sv);
                json_object_set_new(o, "rmse", cli_json_real(sv.rmse));
                json_object_set_new(o, "rho", cli_json_real(sv.rho));
                pflex_model_destroy(m);
            } else {
                json_object_set_new(o, "error", json_string(e.text));
            }
            json_array_append_new(rows, o);
        }
        free(pv);
        free(se);
        free(yv);
        json_object_set_new(vo, "models", rows);
        json_object_set_new(doc, "validation", vo);
    }
    free(yn);
    /* the DRAM-copy-product fit transferred to H100 */
    {
        struct pflex_model_spec s = {PFLEX_MODEL_OLS, 1, {PFLEX_FEAT_DRAM_COPY}};
        struct pflex_train_data td;
        double *y, *p1 = malloc((h100.n ? h100.n : 1) * (1 + DS_NCUT) * sizeof *p1), se[1 + DS_NCUT];
        double *t1 = malloc((h100.n ? h100.n : 1) * sizeof *t1);
        model_train_data(&h200, &td, &y);
        pflex_model_t *m = y ? pflex_model_fit(&s, &td, &err) : NULL;
        json_t *o = json_object();
        json_object_set_new(o, "h100_jobs", json_integer((json_int_t)h100.n));
        if (m && p1 && t1 && h100.n >= 3) {
            for (size_t i = 0; i < h100.n; i++) {
                double mm[1 + DS_NCUT];
                pflex_model_predict(m, h100.x + i * PFLEX_FEAT_COUNT, mm, se);
                p1[i] = mm[0];
                t1[i] = h100.pfi[i];
            }
            struct pflex_fit_score sc;
            pflex_fit_score(p1, t1, h100.n, 1, &sc);
            json_object_set_new(o, "r2", cli_json_real(sc.r2));
            json_object_set_new(o, "rmse", cli_json_real(sc.rmse));
            json_object_set_new(o, "rho", cli_json_real(sc.rho));
        }
        json_object_set_new(o, "study_r2", json_real(0.56));
        json_object_set_new(doc, "h100_transfer", o);
        pflex_model_destroy(m);
        free(y);
        free(p1);
        free(t1);
    }
    /* §6 */
    /* pred holds the nested LOO predictions: the "best model" policies plan
     * each job with a model chosen and fitted without it. */
    size_t nt = 1 + DS_NCUT;
    pols = malloc(h200.n * nt * sizeof *pols);
    sj = calloc(h200.n, sizeof *sj);
    struct pflex_model_spec sols = {PFLEX_MODEL_OLS, 1, {PFLEX_FEAT_DRAM_COPY}};
    if (!pols || !sj || loo_pred(&sols, &h200, pols, &err) < 0)
        goto out;
    for (size_t i = 0; i < h200.n; i++) {
        struct sjob *j = &sj[i];
        j->gpus = h200.gpus[i];
        j->p0 = h200.p0_w[i];
        j->t0 = h200.t0[i];
        j->xhi = h200.x_max[i];
        j->pfi = h200.pfi[i];
        j->pfi_ols = pols[i * nt];
        j->pfi_best = pred[i * nt];
        j->dcp = h200.x[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_DRAM_COPY];
        j->ft = isnan(h200.x[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_TASK_FT])
                    ? -1 : (int)h200.x[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_TASK_FT];
        j->moe_ft = j->ft == 1 && h200.x[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_ARCH_MOE] == 1;
        j->cn = h200.cn[i];
        j->cx = h200.cx[i];
        j->cl = h200.cl[i];
        j->px[0] = j->pl[0] = 0;
        for (int k = 0; k < DS_NCUT; k++) {
            j->px[k + 1] = ds_cuts[k];
            double v = pred[i * nt + 1 + k];
            j->pl[k + 1] = isnan(v) ? (k ? j->pl[k] : 0) : v;
        }
    }
    json_t *alloc = json_object();
    json_t *r = protocol(sj, h200.n, 0, workloads, seed), *p = protocol(sj, h200.n, 1, workloads, seed);
    if (!r || !p) {
        json_decref(r);
        json_decref(p);
        json_decref(alloc);
        goto out;
    }
    json_object_set_new(alloc, "random", r);
    json_object_set_new(alloc, "production", p);
    json_object_set_new(alloc, "study", json_pack("{s:s,s:f,s:f}", "headline",
                        "production mix, 30 % cut: pfi-weighted with predicted PFI recovers 63 % of "
                        "the equal-to-oracle gap, +1.5k tokens/s per job", "gap_recovered", 0.63,
                        "gain_per_job", 1500.0));
    json_object_set_new(doc, "allocation", alloc);
    *out = doc;
    doc = NULL;
    rc = PFLEX_EXIT_OK;
out:
    if (rc == PFLEX_EXIT_INTERNAL)
        cli_error("study", "prediction sections: %s", err.text[0] ? err.text : "out of memory");
    json_decref(doc);
    free(k1);
    free(k2);
    free(kv);
    free(chosen);
    free(ids);
    free(cl);
    free(nloco);
    free(pred);
    free(pols);
    free(sj);
    dataset_fini(&all);
    dataset_fini(&h200);
    dataset_fini(&h100);
    dataset_fini(&val);
    return rc;
}

static double jr(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double jri(const json_t *o, const char *k, size_t i)
{
    json_t *v = json_array_get(json_object_get(o, k), i);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void study_predict_print(FILE *f, const json_t *doc)
{
    fprintf(f, "== Table 3: fitted on the %lld H200 main-set jobs (%lld clusters; study: n = 25), "
            "in sample | leave one job out | leave one cluster out ==\n",
            (long long)json_integer_value(json_object_get(doc, "jobs")),
            (long long)json_integer_value(json_object_get(doc, "clusters")));
    fprintf(f, "(on a simulated fleet: the simulator's constants are calibrated on physical "
            "measurements only, no PFI: docs/sim-model.md)\n");
    fprintf(f, "%-38s %-6s %3s | %6s | %7s %6s %6s | %7s %6s %6s\n", "features", "model", "p",
            "R2 in", "LOO R2", "RMSE", "rho", "LOCO R2", "RMSE", "rho");
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(doc, "table3"), i, row) {
        json_t *loo = json_object_get(row, "loo"), *loco = json_object_get(row, "loco");
        const char *loo_na = json_string_value(json_object_get(row, "loo_na"));
        const char *loco_na = json_string_value(json_object_get(row, "loco_na"));
        char a[32], b[32];
        int unfit = json_object_get(row, "error") != NULL;
        if (unfit)
            loo_na = loco_na = NULL;
        if (unfit || loo_na)
            snprintf(a, sizeof a, "%7s %6s %6s", "n/a", "n/a", "n/a");
        else
            snprintf(a, sizeof a, "%7.3f %6.3f %6.3f", jr(loo, "r2"), jr(loo, "rmse"), jr(loo, "rho"));
        if (unfit || loco_na)
            snprintf(b, sizeof b, "%7s %6s %6s", "n/a", "n/a", "n/a");
        else
            snprintf(b, sizeof b, "%7.3f %6.3f %6.3f", jr(loco, "r2"), jr(loco, "rmse"),
                     jr(loco, "rho"));
        char in[16];
        if (unfit)
            snprintf(in, sizeof in, "%6s", "n/a");
        else if (isnan(jr(row, "r2_in")))
            snprintf(in, sizeof in, "%6s", "-");
        else
            snprintf(in, sizeof in, "%6.3f", jr(row, "r2_in"));
        fprintf(f, "%-38.38s %-6s %3lld | %s | %s | %s\n",
                json_string_value(json_object_get(row, "features")),
                json_string_value(json_object_get(row, "model")),
                (long long)json_integer_value(json_object_get(row, "p")), in, a, b);
        if (json_object_get(row, "error"))
            fprintf(f, "  %s: not fitted: %s\n", json_string_value(json_object_get(row, "features")),
                    json_string_value(json_object_get(row, "error")));
        else if (loo_na || loco_na)
            fprintf(f, "  %s: %s%s%s%s%s\n", json_string_value(json_object_get(row, "features")),
                    loo_na ? "LOO n/a, " : "", loo_na ? loo_na : "",
                    loo_na && loco_na ? "; " : "", loco_na ? "LOCO n/a, " : "",
                    loco_na ? loco_na : "");
        json_t *st = json_object_get(row, "study");
        if (st)
            fprintf(f, "%-38s %-6s %3s | %6.3f | %7.3f %6.3f %6.3f | %7.3f %6.3f %6.3f\n",
                    "  the study", "", "", jr(st, "r2_in"), jr(json_object_get(st, "loo"), "r2"),
                    jr(json_object_get(st, "loo"), "rmse"), jr(json_object_get(st, "loo"), "rho"),
                    jr(json_object_get(st, "loco"), "r2"), jr(json_object_get(st, "loco"), "rmse"),
                    jr(json_object_get(st, "loco"), "rho"));
    }
    json_t *h = json_object_get(doc, "h100_transfer");
    fprintf(f, "deployed model (lowest LOO RMSE on all the jobs; its rows above are in sample for "
            "that choice, the nested row is not): %s\n"
            "the \"best model\" policies below plan each job with the nested LOO prediction (model "
            "chosen and fitted without it)\n", json_string_value(json_object_get(doc, "best_model")));
    json_t *vo = json_object_get(doc, "validation");
    if (vo) {
        fprintf(f, "held-out validation groups (%lld, never fitted on): fitted on the main set, "
                "predicted\n", (long long)json_integer_value(json_object_get(vo, "jobs")));
        size_t vi;
        json_t *vr;
        json_array_foreach(json_object_get(vo, "models"), vi, vr)
            fprintf(f, "  %-38.38s RMSE %6.3f  rho %6.3f\n",
                    json_string_value(json_object_get(vr, "features")), jr(vr, "rmse"),
                    jr(vr, "rho"));
    }
    fprintf(f, "\nDRAM-copy-product OLS fitted on H200, scored on %lld H100 jobs: R2 %.3f, RMSE "
            "%.3f, rho %.3f (study: R2 0.56)\n",
            (long long)json_integer_value(json_object_get(h, "h100_jobs")), jr(h, "r2"),
            jr(h, "rmse"), jr(h, "rho"));
    static const char *const mixes[2] = {"random", "production"};
    for (int m = 0; m < 2; m++) {
        json_t *mx = json_object_get(json_object_get(doc, "allocation"), mixes[m]);
        json_t *pol = json_object_get(mx, "policies");
        fprintf(f, "\n== §6, %s mix: %lld workloads of 100 jobs; gap recovered (pooled; median "
                "[p10, p90] over workloads) and tokens/s per job over equal ==\n", mixes[m],
                (long long)json_integer_value(json_object_get(mx, "workloads")));
        fprintf(f, "%-42s %s\n", "policy", "  cut 10%                     20%                     30%                     40%");
        const char *key;
        json_t *p;
        json_object_foreach(pol, key, p) {
            fprintf(f, "%-42.42s", json_string_value(json_object_get(p, "name")));
            for (size_t c = 2; c <= 8; c += 2)
                fprintf(f, "  %5.1f%% [%5.1f,%5.1f] %+6.0f", 100 * jri(p, "gap_recovered", c),
                        100 * jri(p, "gap_recovered_p10", c), 100 * jri(p, "gap_recovered_p90", c),
                        jri(p, "gain_over_equal_per_job", c));
            fputc('\n', f);
        }
    }
    fprintf(f, "\nthe study: production mix, 30 %% cut, pfi-weighted with predicted PFI: 63 %% of "
            "the gap, +1.5k tokens/s per job\n");
}
