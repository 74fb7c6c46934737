/* modelsel.c — the candidate models and their cross-validated scores
 * (pflex/study/modelsel.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/study/modelsel.h"

size_t pflex_modelsel_candidates(struct pflex_modelsel_candidate *out, size_t max)
{
    static const int all[] = {
        PFLEX_FEAT_DRAM_COPY, PFLEX_FEAT_ARITH_INTENSITY, PFLEX_FEAT_DRAM_ACTIVE,
        PFLEX_FEAT_MEM_COPY_UTIL, PFLEX_FEAT_TENSOR_ACTIVE, PFLEX_FEAT_SM_ACTIVE,
        PFLEX_FEAT_SM_OCCUPANCY, PFLEX_FEAT_GR_ENGINE_ACTIVE, PFLEX_FEAT_GPU_UTIL,
        PFLEX_FEAT_POWER_OVER_LIMIT, PFLEX_FEAT_SM_CLOCK_OVER_MAX, PFLEX_FEAT_MEM_CLOCK_MHZ,
        PFLEX_FEAT_PCIE_GBS, PFLEX_FEAT_NVLINK_GBS,
    };
    static const int compact[] = {
        PFLEX_FEAT_DRAM_COPY, PFLEX_FEAT_ARITH_INTENSITY, PFLEX_FEAT_TENSOR_ACTIVE,
        PFLEX_FEAT_POWER_OVER_LIMIT, PFLEX_FEAT_SM_ACTIVE, PFLEX_FEAT_MEM_COPY_UTIL,
    };
    size_t n = 0;
    if (n < max) {
        out[n].name = "ols-dram-copy";
        out[n].spec.kind = PFLEX_MODEL_OLS;
        out[n].spec.nfeat = 1;
        out[n].spec.feat[0] = PFLEX_FEAT_DRAM_COPY;
        n++;
    }
    if (n < max) {
        out[n].name = "ridge-telemetry";
        out[n].spec.kind = PFLEX_MODEL_RIDGE;
        out[n].spec.nfeat = sizeof all / sizeof *all;
        memcpy(out[n].spec.feat, all, sizeof all);
        n++;
    }
    if (n < max) {
        out[n].name = "ridge2-compact";
        out[n].spec.kind = PFLEX_MODEL_RIDGE2;
        out[n].spec.nfeat = sizeof compact / sizeof *compact;
        memcpy(out[n].spec.feat, compact, sizeof compact);
        n++;
    }
    if (n < max) {
        out[n].name = "gp-compact";
        out[n].spec.kind = PFLEX_MODEL_GP;
        out[n].spec.nfeat = sizeof compact / sizeof *compact;
        memcpy(out[n].spec.feat, compact, sizeof compact);
        n++;
    }
    return n;
}

static double curve_rmse(const double *pred, const double *y, size_t n)
{
    size_t nt = 1 + PFLEX_DATASET_NCUT, m = 0;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        for (int k = 1; k < (int)nt; k++) {
            double p = pred[i * nt + k], t = y[i * nt + k];
            if (!isnan(p) && !isnan(t)) {
                ss += (p - t) * (p - t);
                m++;
            }
        }
    return m ? sqrt(ss / (double)m) : NAN;
}

int pflex_modelsel_evaluate(const struct pflex_model_spec *s, const struct pflex_dataset *d,
                            int loo, struct pflex_modelsel_eval *ev, pflex_error_t *err)
{
    struct pflex_train_data td;
    double *y;
    size_t nt = 1 + PFLEX_DATASET_NCUT, ng = 0;
    pflex_dataset_train_data(d, &td, &y);
    double *pred = malloc((d->n ? d->n : 1) * nt * sizeof *pred);
    double *se = malloc(nt * sizeof *se);
    int *g = pflex_dataset_cluster_ids(d, &ng), *ids = malloc((d->n ? d->n : 1) * sizeof *ids), rc = -1;
    memset(ev, 0, sizeof *ev);
    ev->loo.r2 = ev->loo.rmse = ev->loo.rho = NAN;
    ev->loco.r2 = ev->loco.rmse = ev->loco.rho = NAN;
    ev->curve_loo_rmse = ev->curve_loco_rmse = NAN;
    if (!y || !pred || !se || !g || !ids) {
        pflex_error_sys(err, "model: out of memory");
        goto out;
    }
    ev->clusters = ng;
    ev->min_jobs = pflex_model_min_jobs(s);
    /* the smallest fold of each scheme: all jobs with a PFI but one, or
     * but the largest cluster's */
    size_t npfi = 0, top = 0;
    for (size_t i = 0; i < d->n; i++)
        npfi += !isnan(d->pfi[i]);
    for (size_t c = 0; c < ng; c++) {
        size_t k = 0;
        for (size_t i = 0; i < d->n; i++)
            k += g[i] == (int)c && !isnan(d->pfi[i]);
        if (k > top)
            top = k;
    }
    ev->loo_fold = npfi ? npfi - 1 : 0;
    ev->loco_fold = npfi - top;
    ev->loo_na = ev->loo_fold < ev->min_jobs;
    ev->loco_na = ng >= 2 && ev->loco_fold < ev->min_jobs;
    pflex_model_t *m = pflex_model_fit(s, &td, err);
    if (!m)
        goto out;
    for (size_t i = 0; i < d->n; i++)
        pflex_model_predict(m, d->x + i * PFLEX_FEAT_COUNT, pred + i * nt, se);
    pflex_model_destroy(m);
    pflex_fit_score(pred, y, d->n, nt, &ev->in);
    if (loo && !ev->loo_na) {
        for (size_t i = 0; i < d->n; i++)
            ids[i] = (int)i;
        if (pflex_model_cv(s, &td, ids, pred, err) < 0)
            goto out;
        pflex_fit_score(pred, y, d->n, nt, &ev->loo);
        ev->curve_loo_rmse = curve_rmse(pred, y, d->n);
    }
    if (ng >= 2 && !ev->loco_na) {
        if (pflex_model_cv(s, &td, g, pred, err) < 0)
            goto out;
        pflex_fit_score(pred, y, d->n, nt, &ev->loco);
        ev->curve_loco_rmse = curve_rmse(pred, y, d->n);
    }
    rc = 0;
out:
    free(y);
    free(pred);
    free(se);
    free(g);
    free(ids);
    return rc;
}

const char *pflex_modelsel_na(const struct pflex_modelsel_eval *ev, size_t fold, char *buf,
                              size_t len)
{
    snprintf(buf, len, "a fold trains on %zu jobs, the model needs %zu", fold, ev->min_jobs);
    return buf;
}
