/* predict_gp.c — a Gaussian process on the standardised features.
 *
 * Kernel k(a, b) = s2 exp(-|a - b|^2 / (2 l^2)), noise r s2 on the
 * diagonal.  The length scale l and the noise ratio r are chosen on the PFI
 * target from a fixed grid by the closed-form leave-one-out error
 * (e_i = alpha_i / [(K + rI)^-1]_ii, exact for a fixed kernel); every
 * target shares them, each has its own mean and signal variance s2 (the
 * maximum-likelihood value for the kernel's shape).  Training rows are the
 * jobs with a PFI; a missing loss target (a cut past the job's deepest
 * measured point) takes the value at the cut before it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include "lib/flex/predict_gp.h"

int pflex_spd_invert(gsl_matrix *a)
{
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int rc = gsl_linalg_cholesky_decomp1(a);
    if (rc == 0)
        rc = gsl_linalg_cholesky_invert(a);
    gsl_set_error_handler(old);
    return rc ? -1 : 0;
}

int pflex_gp_fit(pflex_model_t *m, const struct pflex_train_data *d, const double *Z, size_t nz,
                 pflex_error_t *err)
{
    size_t q = m->nterms, nt = m->ntarget, n = 0;
    size_t *rows = malloc((nz ? nz : 1) * sizeof *rows);
    double *y = NULL, *d2 = NULL, *kl = NULL;
    gsl_matrix *K = NULL, *best = NULL;
    gsl_vector *yc = NULL, *ky = NULL;
    int rc = -1;
    if (!rows)
        goto oom;
    /* rows of Z (use order) whose job has a PFI */
    for (size_t i = 0, zi = 0; i < d->n; i++) {
        if (d->use && !d->use[i])
            continue;
        if (!isnan(d->y[i * nt]))
            rows[n++] = zi;
        zi++;
    }
    if (n < PFLEX_GP_MIN_TRAIN) {
        pflex_error_set(err, "model: %zu jobs with a PFI: too few for a Gaussian process", n);
        goto out;
    }
    if (n > PFLEX_GP_MAX_TRAIN) {
        pflex_error_set(err, "model: %zu jobs: a Gaussian process takes at most %d", n,
                        PFLEX_GP_MAX_TRAIN);
        goto out;
    }
    y = malloc(n * nt * sizeof *y);
    d2 = malloc(n * n * sizeof *d2);
    kl = malloc(n * n * sizeof *kl);
    m->gp_z = malloc(n * q * sizeof *m->gp_z);
    K = gsl_matrix_alloc(n, n);
    best = gsl_matrix_alloc(n, n);
    yc = gsl_vector_alloc(n);
    ky = gsl_vector_alloc(n);
    if (!y || !d2 || !kl || !m->gp_z || !K || !best || !yc || !ky)
        goto oom;
    m->ntrain = n;
    /* the targets of the training rows, in the same order */
    for (size_t i = 0, zi = 0, k = 0; i < d->n && k < n; i++) {
        if (d->use && !d->use[i])
            continue;
        if (zi++ != rows[k])
            continue;
        for (size_t t = 0; t < nt; t++) {
            double v = d->y[i * nt + t];
            y[k * nt + t] = !isnan(v) ? v : t > 1 ? y[k * nt + t - 1] : t == 1 ? 0 : v;
        }
        memcpy(m->gp_z + k * q, Z + rows[k] * q, q * sizeof *Z);
        k++;
    }
    /* squared distances, a symmetric matrix: the upper triangle, mirrored */
    for (size_t i = 0; i < n; i++) {
        d2[i * n + i] = 0;
        for (size_t j = i + 1; j < n; j++) {
            double s = 0;
            for (size_t c = 0; c < q; c++) {
                double e = m->gp_z[i * q + c] - m->gp_z[j * q + c];
                s += e * e;
            }
            d2[i * n + j] = d2[j * n + i] = s;
        }
    }
    static const double lgrid[] = {0.25, 0.5, 1, 2, 4};
    static const double rgrid[] = {1e-3, 1e-2, 3e-2, 0.1, 0.3, 1};
    double ym = 0, best_mse = INFINITY;
    for (size_t i = 0; i < n; i++)
        ym += y[i * nt];
    ym /= (double)n;
    for (size_t i = 0; i < n; i++)
        gsl_vector_set(yc, i, y[i * nt] - ym);
    for (size_t li = 0; li < sizeof lgrid / sizeof *lgrid; li++) {
        /* the kernel of this length scale, shared by every noise ratio */
        double l = lgrid[li] * sqrt((double)q);
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++)
                kl[i * n + j] = kl[j * n + i] = exp(-d2[i * n + j] / (2 * l * l));
        for (size_t ri = 0; ri < sizeof rgrid / sizeof *rgrid; ri++) {
            double r = rgrid[ri];
            for (size_t i = 0; i < n; i++) {
                memcpy(gsl_matrix_ptr(K, i, 0), kl + i * n, n * sizeof *kl);
                *gsl_matrix_ptr(K, i, i) += r;
            }
            if (pflex_spd_invert(K) < 0)
                continue;
            /* leave-one-out residuals [K^-1 y]_i / [K^-1]_ii */
            gsl_blas_dsymv(CblasUpper, 1, K, yc, 0, ky);
            double sse = 0;
            for (size_t i = 0; i < n; i++) {
                double e = gsl_vector_get(ky, i) / gsl_matrix_get(K, i, i);
                sse += e * e;
            }
            if (sse / (double)n < best_mse) {
                best_mse = sse / (double)n;
                m->gp_length = l;
                m->gp_ratio = r;
                gsl_matrix_memcpy(best, K);
            }
        }
    }
    if (!isfinite(best_mse)) {
        pflex_error_set(err, "model: no kernel gives a positive definite system");
        goto out;
    }
    if (!(m->gp_kinv = malloc(n * n * sizeof *m->gp_kinv)))
        goto oom;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            m->gp_kinv[i * n + j] = gsl_matrix_get(best, i, j);
    for (size_t t = 0; t < nt; t++) {
        struct pflex_model_target *mt = &m->t[t];
        double mu = 0, quad = 0, sse = 0;
        for (size_t i = 0; i < n; i++)
            mu += y[i * nt + t];
        mu /= (double)n;
        if (!(mt->alpha = malloc(n * sizeof *mt->alpha)))
            goto oom;
        for (size_t i = 0; i < n; i++)
            gsl_vector_set(yc, i, y[i * nt + t] - mu);
        gsl_blas_dsymv(CblasUpper, 1, best, yc, 0, ky);
        for (size_t i = 0; i < n; i++) {
            double s = gsl_vector_get(ky, i);
            mt->alpha[i] = s;
            quad += (y[i * nt + t] - mu) * s;
            double e = s / m->gp_kinv[i * n + i];
            sse += e * e;
        }
        mt->intercept = mu;
        mt->nobs = n;
        mt->gp_s2 = quad > 0 ? quad / (double)n : 0;
        mt->sigma = sqrt(sse / (double)n);  /* leave-one-out RMSE, for reports */
        mt->lambda = m->gp_ratio;
    }
    rc = 0;
    goto out;
oom:
    pflex_error_set(err, "model: out of memory");
out:
    free(rows);
    free(y);
    free(d2);
    free(kl);
    if (yc)
        gsl_vector_free(yc);
    if (ky)
        gsl_vector_free(ky);
    if (K)
        gsl_matrix_free(K);
    if (best)
        gsl_matrix_free(best);
    return rc;
}

void pflex_gp_predict(const pflex_model_t *m, const double *z, double *mean, double *se)
{
    size_t n = m->ntrain, q = m->nterms;
    double *k = malloc((n ? n : 1) * sizeof *k), quad = 0;
    if (!k) {
        for (size_t t = 0; t < m->ntarget; t++)
            mean[t] = se[t] = NAN;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t c = 0; c < q; c++) {
            double e = z[c] - m->gp_z[i * q + c];
            s += e * e;
        }
        k[i] = exp(-s / (2 * m->gp_length * m->gp_length));
    }
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < n; j++)
            s += m->gp_kinv[i * n + j] * k[j];
        quad += k[i] * s;
    }
    double v = 1 + m->gp_ratio - quad;
    for (size_t t = 0; t < m->ntarget; t++) {
        const struct pflex_model_target *mt = &m->t[t];
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += k[i] * mt->alpha[i];
        mean[t] = mt->intercept + s;
        se[t] = sqrt(mt->gp_s2 * (v > 0 ? v : 0));
    }
    free(k);
}
