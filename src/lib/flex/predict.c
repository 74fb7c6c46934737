/* predict.c — linear PFI and loss-curve models on uncapped-run features:
 * OLS (the study's baseline) and ridge with the penalty chosen by the
 * closed-form leave-one-out error; cross-validation and scores. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_matrix.h>
#include "pflex/flex/correlate.h"
#include "pflex/flex/predict.h"
#include "lib/flex/predict_gp.h"

static const char *const kind_names[PFLEX_MODEL_KIND_COUNT] = {"ols", "ridge", "ridge2", "gp"};

const char *pflex_model_kind_name(enum pflex_model_kind k)
{
    return (unsigned)k < PFLEX_MODEL_KIND_COUNT ? kind_names[k] : "?";
}

void pflex_model_destroy(pflex_model_t *m)
{
    if (!m)
        return;
    for (size_t k = 0; k < m->ntarget; k++) {
        free(m->t[k].cov);
        free(m->t[k].alpha);
    }
    free(m->gp_z);
    free(m->gp_kinv);
    free(m);
}

static size_t n_terms(const struct pflex_model_spec *s)
{
    size_t p = s->nfeat;
    return s->kind == PFLEX_MODEL_RIDGE2 ? p + p + p * (p - 1) / 2 : p;
}

size_t pflex_model_min_jobs(const struct pflex_model_spec *s)
{
    return s->kind == PFLEX_MODEL_GP ? PFLEX_GP_MIN_TRAIN : n_terms(s) + 2;
}

/* Standardised features of one job (missing -> 0, the training mean),
 * expanded into terms, standardised again. */
static void terms_of(const pflex_model_t *m, const double *x, double *z)
{
    double f[PFLEX_FEAT_COUNT];
    size_t p = m->spec.nfeat, q = 0;
    for (size_t i = 0; i < p; i++) {
        double v = x[m->spec.feat[i]];
        f[i] = isnan(v) ? 0 : (v - m->center[i]) / m->scale[i];
    }
    for (size_t i = 0; i < p; i++)
        z[q++] = f[i];
    if (m->spec.kind == PFLEX_MODEL_RIDGE2) {
        for (size_t i = 0; i < p; i++)
            z[q++] = f[i] * f[i];
        for (size_t i = 0; i < p; i++)
            for (size_t j = i + 1; j < p; j++)
                z[q++] = f[i] * f[j];
    }
    for (size_t i = 0; i < q; i++)
        z[i] = (z[i] - m->tcenter[i]) / m->tscale[i];
}

/* A^-1 for A = Z'Z + lambda I (q x q, Z centred), via Cholesky.  Returns 0
 * or -1 when A is not positive definite. */
static int inverse(const double *ztz, size_t q, double lambda, gsl_matrix *a)
{
    for (size_t i = 0; i < q; i++)
        for (size_t j = 0; j < q; j++)
            gsl_matrix_set(a, i, j, ztz[i * q + j] + (i == j ? lambda : 0));
    return pflex_spd_invert(a);
}

/* The penalties tried (times the row count): the one with the least
 * leave-one-out error is kept. */
static const double grid[] = {1e-6, 1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1, 3};
#define NGRID (sizeof grid / sizeof *grid)

/* What a fit needs of its training rows alone, whatever the target: the
 * centred terms Zc, and for each penalty of the grid (Z'Z + lambda I)^-1
 * and the leverages h_i = 1/m + zc_i' A^-1 zc_i.  The loss targets of a
 * model mostly share the PFI's rows, so one design serves them all. */
struct design {
    size_t m, q, ng;
    size_t *rows;                       /* m row indices into the model's Z */
    double zmean[PFLEX_MODEL_MAX_TERMS];
    gsl_matrix *zc;                     /* m x q */
    gsl_matrix *ainv[NGRID];            /* NULL where A is not positive definite */
    double *h;                          /* ng x m */
    double lambda[NGRID];
};

static void design_fini(struct design *dz)
{
    free(dz->rows);
    free(dz->h);
    if (dz->zc)
        gsl_matrix_free(dz->zc);
    for (size_t g = 0; g < NGRID; g++)
        if (dz->ainv[g])
            gsl_matrix_free(dz->ainv[g]);
    memset(dz, 0, sizeof *dz);
}

/* dz over rows[0..m) of Z (n x q, rows owned by dz from now on), for a
 * model of kind ols (one vanishing penalty) or ridge (the grid). */
static int design_init(struct design *dz, const double *Z, size_t *rows, size_t m, size_t q,
                       int ols, pflex_error_t *err)
{
    memset(dz, 0, sizeof *dz);
    dz->rows = rows;
    dz->m = m;
    dz->q = q;
    dz->ng = ols ? 1 : NGRID;
    gsl_matrix *ztz = gsl_matrix_alloc(q, q), *w = gsl_matrix_alloc(m, q);
    dz->zc = gsl_matrix_alloc(m, q);
    dz->h = malloc(dz->ng * m * sizeof *dz->h);
    int rc = -1;
    if (!ztz || !w || !dz->zc || !dz->h) {
        pflex_error_set(err, "model: out of memory");
        goto out;
    }
    for (size_t j = 0; j < q; j++) {
        double s = 0;
        for (size_t i = 0; i < m; i++)
            s += Z[rows[i] * q + j];
        dz->zmean[j] = s / (double)m;
    }
    for (size_t i = 0; i < m; i++) {
        double *r = gsl_matrix_ptr(dz->zc, i, 0);
        for (size_t j = 0; j < q; j++)
            r[j] = Z[rows[i] * q + j] - dz->zmean[j];
    }
    /* Z'Z, its upper triangle, then mirrored */
    gsl_blas_dsyrk(CblasUpper, CblasTrans, 1, dz->zc, 0, ztz);
    for (size_t j = 0; j < q; j++)
        for (size_t k = 0; k < j; k++)
            gsl_matrix_set(ztz, j, k, gsl_matrix_get(ztz, k, j));
    for (size_t g = 0; g < dz->ng; g++) {
        /* OLS: a vanishing penalty only keeps the system solvable */
        double lambda = ols ? 1e-10 * (double)m : grid[g] * (double)m;
        gsl_matrix *a = gsl_matrix_alloc(q, q);
        if (!a) {
            pflex_error_set(err, "model: out of memory");
            goto out;
        }
        dz->lambda[g] = lambda;
        if (inverse(ztz->data, q, lambda, a) < 0) {
            gsl_matrix_free(a);
            continue;
        }
        dz->ainv[g] = a;
        /* the leverages: the rows of Zc A^-1 dotted with those of Zc */
        gsl_blas_dsymm(CblasRight, CblasUpper, 1, a, dz->zc, 0, w);
        double *h = dz->h + g * m;
        for (size_t i = 0; i < m; i++) {
            const double *r = gsl_matrix_const_ptr(dz->zc, i, 0), *s = gsl_matrix_const_ptr(w, i, 0);
            double v = 1.0 / (double)m;
            for (size_t j = 0; j < q; j++)
                v += r[j] * s[j];
            h[i] = v;
        }
    }
    rc = 0;
out:
    if (ztz)
        gsl_matrix_free(ztz);
    if (w)
        gsl_matrix_free(w);
    return rc;
}

/* The target y (the design's m rows) on design dz: the penalty with the
 * least closed-form leave-one-out error, the coefficients under it. */
static int fit_target(const pflex_model_t *m, const struct design *dz,
                      struct pflex_model_target *t, const double *y, pflex_error_t *err)
{
    size_t mr = dz->m, q = dz->q;
    gsl_vector *yc = gsl_vector_alloc(mr), *fit = gsl_vector_alloc(mr);
    gsl_vector *zty = gsl_vector_alloc(q), *beta = gsl_vector_alloc(q);
    int rc = -1;
    if (!yc || !fit || !zty || !beta) {
        pflex_error_set(err, "model: out of memory");
        goto out;
    }
    double ym = 0;
    for (size_t i = 0; i < mr; i++)
        ym += y[i];
    ym /= (double)mr;
    for (size_t i = 0; i < mr; i++)
        gsl_vector_set(yc, i, y[i] - ym);
    gsl_blas_dgemv(CblasTrans, 1, dz->zc, yc, 0, zty);
    double best_mse = INFINITY;
    size_t best = 0;
    for (size_t g = 0; g < dz->ng; g++) {
        if (!dz->ainv[g])
            continue;
        gsl_blas_dsymv(CblasUpper, 1, dz->ainv[g], zty, 0, beta);
        gsl_blas_dgemv(CblasNoTrans, 1, dz->zc, beta, 0, fit);
        /* closed-form leave-one-out residuals e_i / (1 - h_ii) */
        const double *h = dz->h + g * mr;
        double sse = 0;
        size_t cnt = 0;
        for (size_t i = 0; i < mr; i++)
            if (h[i] < 1 - 1e-9) {
                double e = (y[i] - (ym + gsl_vector_get(fit, i))) / (1 - h[i]);
                sse += e * e;
                cnt++;
            }
        double mse = cnt ? sse / (double)cnt : INFINITY;
        if (mse < best_mse) {
            best_mse = mse;
            best = g;
            for (size_t j = 0; j < q; j++)
                t->coef[j] = gsl_vector_get(beta, j);
        }
    }
    if (!isfinite(best_mse)) {
        pflex_error_set(err, "model: the least-squares system is singular (%zu rows, %zu terms)",
                        mr, q);
        goto out;
    }
    t->lambda = m->spec.kind == PFLEX_MODEL_OLS ? 0 : dz->lambda[best];
    t->nobs = mr;
    t->sigma = sqrt(best_mse);
    t->intercept = ym;
    memcpy(t->zmean, dz->zmean, q * sizeof *t->zmean);
    for (size_t j = 0; j < q; j++)
        t->intercept -= t->coef[j] * t->zmean[j];
    if (!(t->cov = malloc(q * q * sizeof *t->cov))) {
        pflex_error_set(err, "model: out of memory");
        goto out;
    }
    for (size_t j = 0; j < q; j++)
        memcpy(t->cov + j * q, gsl_matrix_const_ptr(dz->ainv[best], j, 0), q * sizeof *t->cov);
    rc = 0;
out:
    if (yc)
        gsl_vector_free(yc);
    if (fit)
        gsl_vector_free(fit);
    if (zty)
        gsl_vector_free(zty);
    if (beta)
        gsl_vector_free(beta);
    return rc;
}

pflex_model_t *pflex_model_fit(const struct pflex_model_spec *s, const struct pflex_train_data *d,
                               pflex_error_t *err)
{
    size_t q = n_terms(s), nt = 1 + d->ncut, p = s->nfeat;
    if (p == 0 || p > PFLEX_FEAT_COUNT)
        return pflex_error_set(err, "model: %zu features", p), NULL;
    if (q > PFLEX_MODEL_MAX_TERMS)
        return pflex_error_set(err, "model: %zu terms, at most %d", q, PFLEX_MODEL_MAX_TERMS), NULL;
    if (d->ncut > PFLEX_MODEL_MAX_CUTS)
        return pflex_error_set(err, "model: %zu cuts, at most %d", d->ncut, PFLEX_MODEL_MAX_CUTS),
               NULL;
    struct design dz = {0};
    pflex_model_t *m = calloc(1, sizeof *m);
    double *Z = malloc((d->n ? d->n : 1) * q * sizeof *Z);
    double *yy = malloc((d->n ? d->n : 1) * sizeof *yy);
    size_t *rows = malloc((d->n ? d->n : 1) * sizeof *rows);
    if (!m || !Z || !yy || !rows) {
        pflex_error_set(err, "model: out of memory");
        goto fail;
    }
    m->spec = *s;
    m->nterms = q;
    m->ncut = d->ncut;
    memcpy(m->cuts, d->cuts, d->ncut * sizeof *d->cuts);
    m->ntarget = nt;
    /* feature standardisation over the training rows */
    for (size_t f = 0; f < p; f++) {
        double sum = 0, ss = 0;
        size_t c = 0;
        for (size_t i = 0; i < d->n; i++) {
            double v = d->x[i * PFLEX_FEAT_COUNT + s->feat[f]];
            if ((d->use && !d->use[i]) || isnan(v))
                continue;
            sum += v;
            c++;
        }
        m->center[f] = c ? sum / (double)c : 0;
        for (size_t i = 0; i < d->n; i++) {
            double v = d->x[i * PFLEX_FEAT_COUNT + s->feat[f]];
            if ((d->use && !d->use[i]) || isnan(v))
                continue;
            ss += (v - m->center[f]) * (v - m->center[f]);
        }
        m->scale[f] = c > 1 && ss > 0 ? sqrt(ss / (double)(c - 1)) : 1;
    }
    for (size_t j = 0; j < q; j++) {
        m->tcenter[j] = 0;
        m->tscale[j] = 1;
    }
    /* term standardisation */
    size_t r = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (d->use && !d->use[i])
            continue;
        terms_of(m, d->x + i * PFLEX_FEAT_COUNT, Z + r * q);
        r++;
    }
    for (size_t j = 0; j < q; j++) {
        double sum = 0, ss = 0;
        for (size_t i = 0; i < r; i++)
            sum += Z[i * q + j];
        double mu = r ? sum / (double)r : 0;
        for (size_t i = 0; i < r; i++)
            ss += (Z[i * q + j] - mu) * (Z[i * q + j] - mu);
        m->tcenter[j] = mu;
        m->tscale[j] = r > 1 && ss > 0 ? sqrt(ss / (double)(r - 1)) : 1;
        for (size_t i = 0; i < r; i++)
            Z[i * q + j] = (Z[i * q + j] - mu) / m->tscale[j];
    }
    if (s->kind == PFLEX_MODEL_GP) {
        if (pflex_gp_fit(m, d, Z, r, err) < 0)
            goto fail;
        free(Z); free(yy); free(rows);
        return m;
    }
    /* each target on the rows that have it; a design is rebuilt only when
     * the rows change */
    for (size_t k = 0; k < nt; k++) {
        size_t mr = 0;
        for (size_t i = 0, ri = 0; i < d->n; i++) {
            if (d->use && !d->use[i])
                continue;
            double y = d->y[i * nt + k];
            if (!isnan(y)) {
                rows[mr] = ri;
                yy[mr++] = y;
            }
            ri++;
        }
        if (mr < pflex_model_min_jobs(s)) {
            if (k == 0) {
                pflex_error_set(err, "model: %zu jobs with a PFI for %zu terms: too few "
                                "(needs %zu)", mr, q, pflex_model_min_jobs(s));
                goto fail;
            }
            /* a cut too deep for most sweeps: predicted from its neighbour */
            m->t[k] = m->t[k - 1];
            if (m->t[k - 1].cov) {
                m->t[k].cov = malloc(q * q * sizeof *m->t[k].cov);
                if (!m->t[k].cov) {
                    pflex_error_set(err, "model: out of memory");
                    goto fail;
                }
                memcpy(m->t[k].cov, m->t[k - 1].cov, q * q * sizeof *m->t[k].cov);
            }
            m->t[k].nobs = mr;
            continue;
        }
        if (!dz.rows || dz.m != mr || memcmp(dz.rows, rows, mr * sizeof *rows) != 0) {
            size_t *own = malloc(mr * sizeof *own);
            design_fini(&dz);
            if (!own) {
                pflex_error_set(err, "model: out of memory");
                goto fail;
            }
            memcpy(own, rows, mr * sizeof *own);
            if (design_init(&dz, Z, own, mr, q, s->kind == PFLEX_MODEL_OLS, err) < 0)
                goto fail;
        }
        if (fit_target(m, &dz, &m->t[k], yy, err) < 0)
            goto fail;
    }
    design_fini(&dz);
    free(Z); free(yy); free(rows);
    return m;
fail:
    design_fini(&dz);
    free(Z); free(yy); free(rows);
    pflex_model_destroy(m);
    return NULL;
}

void pflex_model_predict(const pflex_model_t *m, const double *x, double *mean, double *se)
{
    double z[PFLEX_MODEL_MAX_TERMS], zc[PFLEX_MODEL_MAX_TERMS];
    size_t q = m->nterms;
    terms_of(m, x, z);
    if (m->spec.kind == PFLEX_MODEL_GP)
        pflex_gp_predict(m, z, mean, se);
    for (size_t k = 0; k < m->ntarget && m->spec.kind != PFLEX_MODEL_GP; k++) {
        const struct pflex_model_target *t = &m->t[k];
        double y = t->intercept, h = t->nobs ? 1.0 / (double)t->nobs : 0;
        for (size_t j = 0; j < q; j++) {
            y += t->coef[j] * z[j];
            zc[j] = z[j] - t->zmean[j];
        }
        if (t->cov)
            for (size_t j = 0; j < q; j++) {
                double s = 0;
                for (size_t i = 0; i < q; i++)
                    s += t->cov[j * q + i] * zc[i];
                h += zc[j] * s;
            }
        mean[k] = y;
        se[k] = t->sigma * sqrt(1 + h);
    }
    /* a loss curve: within [0, 1], not falling as the cut deepens */
    for (size_t k = 1; k < m->ntarget; k++) {
        if (mean[k] < 0)
            mean[k] = 0;
        if (mean[k] > 1)
            mean[k] = 1;
        if (k > 1 && mean[k] < mean[k - 1])
            mean[k] = mean[k - 1];
    }
}

/* ---- cross-validation and scores ---- */

int pflex_model_cv_folds(const struct pflex_train_data *d, const int *g, pflex_model_fold_fit fit,
                         void *ctx, double *pred, pflex_error_t *err)
{
    size_t nt = 1 + d->ncut;
    unsigned char *use = malloc(d->n ? d->n : 1), *done = calloc(d->n ? d->n : 1, 1);
    double *se = malloc(nt * sizeof *se);
    int rc = -1;
    if (!use || !done || !se) {
        pflex_error_set(err, "model: out of memory");
        goto out;
    }
    for (size_t i = 0; i < d->n * nt; i++)
        pred[i] = NAN;
    for (size_t i = 0; i < d->n; i++) {
        if (done[i] || (d->use && !d->use[i]))
            continue;
        for (size_t j = 0; j < d->n; j++)
            use[j] = g[j] != g[i] && (!d->use || d->use[j]);
        struct pflex_train_data fold = *d;
        fold.use = use;
        pflex_model_t *m = fit(ctx, &fold);
        for (size_t j = 0; j < d->n; j++) {
            if (g[j] != g[i])
                continue;
            done[j] = 1;
            if (m)
                pflex_model_predict(m, d->x + j * PFLEX_FEAT_COUNT, pred + j * nt, se);
        }
        pflex_model_destroy(m);
    }
    rc = 0;
out:
    free(use);
    free(done);
    free(se);
    return rc;
}

static pflex_model_t *fit_spec(void *ctx, const struct pflex_train_data *fold)
{
    pflex_error_t ferr;
    return pflex_model_fit(ctx, fold, &ferr);
}

int pflex_model_cv(const struct pflex_model_spec *s, const struct pflex_train_data *d,
                   const int *g, double *pred, pflex_error_t *err)
{
    return pflex_model_cv_folds(d, g, fit_spec, (void *)s, pred, err);
}

void pflex_fit_score(const double *pred, const double *truth, size_t n, size_t stride,
                     struct pflex_fit_score *out)
{
    double *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
    size_t m = 0;
    out->n = 0;
    out->r2 = out->rmse = out->rho = NAN;
    if (!a || !b) {
        free(a);
        free(b);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double p = pred[i * stride], t = truth[i * stride];
        if (!isnan(p) && !isnan(t)) {
            a[m] = p;
            b[m] = t;
            m++;
        }
    }
    out->n = m;
    if (m >= 2) {
        double mu = 0, ssr = 0, sst = 0;
        for (size_t i = 0; i < m; i++)
            mu += b[i];
        mu /= (double)m;
        for (size_t i = 0; i < m; i++) {
            ssr += (a[i] - b[i]) * (a[i] - b[i]);
            sst += (b[i] - mu) * (b[i] - mu);
        }
        out->rmse = sqrt(ssr / (double)m);
        out->r2 = sst > 0 ? 1 - ssr / sst : NAN;
        out->rho = pflex_spearman(a, b, m);
    }
    free(a);
    free(b);
}
