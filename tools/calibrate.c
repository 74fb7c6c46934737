/* calibrate.c — fit the sim model's free constants to the visible
 * measurements (`make calibrate`; docs/sim-model.md section 4).
 *
 *   build/tools/calibrate [DATA_DIR]     (default: $PFLEX_SHARED_DATA, ../shared/data)
 *
 * The measurements: the five Emerald A100-SXM4 curves (normalised
 * throughput and power drawn at 200-400 W), the study's 25 headline H200
 * ratio PFIs (PAPER.md section 4) and six public absolute throughputs of
 * MPT pretraining on H100 and A100 (llm-foundry's benchmarks).  The constants (struct pflex_sim_fit): the switching
 * power scale of the GA100 and GH100 dies, the activity of memory-bound
 * kernels, the traffic of unfused eager kernels, the overlap of
 * data-parallel traffic.  Everything else in the model is set from
 * datasheets and the literature.
 *
 * Weighted least squares (GSL's trust-region Levenberg-Marquardt, finite-
 * difference Jacobian, deterministic), from the constants in the source.
 * Prints each constant with its 1-sigma uncertainty (the covariance of the
 * fit scaled by the reduced chi-square, propagated through the bounding
 * transforms), the in-sample errors and the leave-one-job-out errors
 * (each of the 30 jobs left out in turn, the fit redone, the job predicted).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include "pflex/calib.h"

#define NPAR 7
static const char *const par_names[NPAR] = {
    "k_dyn_ga100", "k_dyn_gh100", "a_mem", "eager_mult", "eta_dp", "v_ratio_gh100",
    "f_knee_gh100",
};

static double logistic(double x) { return 1 / (1 + exp(-x)); }
/* Clamped off the bounds, so that a constant at its bound still starts a fit. */
static double logit(double p)
{
    p = p < 1e-4 ? 1e-4 : p > 1 - 1e-4 ? 1 - 1e-4 : p;
    return log(p / (1 - p));
}

/* Unbounded parameters theta <-> the constants. */
static void to_fit(const double *t, struct pflex_sim_fit *f)
{
    f->k_dyn_ga100 = exp(t[0]);
    f->k_dyn_gh100 = exp(t[1]);
    f->a_mem = logistic(t[2]);
    f->eager_mult = 1 + exp(t[3]);
    f->eta_dp = logistic(t[4]);
    f->v_ratio_gh100 = 0.3 + 0.7 * logistic(t[5]);
    f->f_knee_gh100 = 0.05 + 0.9 * logistic(t[6]);
}

static void from_fit(const struct pflex_sim_fit *f, double *t)
{
    t[0] = log(f->k_dyn_ga100);
    t[1] = log(f->k_dyn_gh100);
    t[2] = logit(f->a_mem);
    t[3] = log(f->eager_mult > 1.0001 ? f->eager_mult - 1 : 1e-4);
    t[4] = logit(f->eta_dp);
    t[5] = logit((f->v_ratio_gh100 - 0.3) / 0.7);
    t[6] = logit((f->f_knee_gh100 - 0.05) / 0.9);
}

/* d constant / d theta, for the uncertainty. */
static double dfit(const double *t, int i)
{
    switch (i) {
    case 0: return exp(t[0]);
    case 1: return exp(t[1]);
    case 2: return logistic(t[2]) * (1 - logistic(t[2]));
    case 3: return exp(t[3]);
    case 4: return logistic(t[4]) * (1 - logistic(t[4]));
    case 5: return 0.7 * logistic(t[5]) * (1 - logistic(t[5]));
    default: return 0.9 * logistic(t[6]) * (1 - logistic(t[6]));
    }
}

static double fit_value(const struct pflex_sim_fit *f, int i)
{
    const double v[NPAR] = {f->k_dyn_ga100, f->k_dyn_gh100, f->a_mem, f->eager_mult, f->eta_dp,
                            f->v_ratio_gh100, f->f_knee_gh100};
    return v[i];
}

struct ctx {
    const pflex_sweep_t *emerald;
    int leave_out;              /* job left out (residuals zeroed), -1: none */
    size_t n;                   /* residuals */
    long evals;
};

static int residuals(const gsl_vector *x, void *arg, gsl_vector *f)
{
    struct ctx *c = arg;
    struct pflex_sim_fit fit;
    struct pflex_calib_eval ev;
    pflex_error_t err;
    to_fit(x->data, &fit);
    c->evals++;
    if (pflex_calib_evaluate(c->emerald, &fit, &ev, &err) < 0 || ev.n != c->n)
        return GSL_EDOM;
    for (size_t i = 0; i < ev.n; i++)
        gsl_vector_set(f, i, ev.job[i] == c->leave_out ? 0 : ev.r[i]);
    return GSL_SUCCESS;
}

/* Fit from theta0; theta and (may be NULL) the 1-sigma of the constants. */
static int fit_once(struct ctx *c, const double *theta0, double *theta, double *sigma,
                    double *chi2_out)
{
    gsl_multifit_nlinear_fdf fdf = {.f = residuals, .df = NULL, .fvv = NULL, .n = c->n,
                                    .p = NPAR, .params = c};
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, c->n, NPAR);
    gsl_vector_const_view x0 = gsl_vector_const_view_array(theta0, NPAR);
    int info, rc = gsl_multifit_nlinear_init(&x0.vector, &fdf, w);
    if (rc == GSL_SUCCESS)
        rc = gsl_multifit_nlinear_driver(60, 1e-6, 1e-6, 1e-8, NULL, NULL, &info, w);
    if (getenv("CALIB_VERBOSE"))
        printf("    driver: %s after %zu iterations (info %d)\n", gsl_strerror(rc),
               gsl_multifit_nlinear_niter(w), info);
    gsl_vector *x = gsl_multifit_nlinear_position(w);
    memcpy(theta, x->data, NPAR * sizeof *theta);
    gsl_vector *f = gsl_multifit_nlinear_residual(w);
    double chi2;
    gsl_blas_ddot(f, f, &chi2);
    if (chi2_out)
        *chi2_out = chi2;
    if (sigma) {
        gsl_matrix *cov = gsl_matrix_alloc(NPAR, NPAR);
        gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 1e-10, cov);
        size_t dof = c->n > NPAR ? c->n - NPAR : 1;
        for (int i = 0; i < NPAR; i++)
            sigma[i] = sqrt(gsl_matrix_get(cov, i, i) * chi2 / dof) * dfit(theta, i);
        gsl_matrix_free(cov);
    }
    gsl_multifit_nlinear_free(w);
    return rc == GSL_SUCCESS || rc == GSL_EMAXITER ? 0 : -1;
}

static void report_errors(const char *what, const struct pflex_calib_eval *ev)
{
    double pfi_abs = 0, pfi_sq = 0, rmse_max = 0, rmse_mean = 0, perr = 0;
    for (int g = 0; g < 25; g++) {
        double e = ev->pfi_sim[g] - ev->pfi_measured[g];
        pfi_abs += fabs(e) / 25;
        pfi_sq += e * e / 25;
    }
    for (int p = 0; p < PFLEX_CALIB_EMERALD_JOBS; p++) {
        rmse_mean += ev->rmse_emerald[p] / PFLEX_CALIB_EMERALD_JOBS;
        perr += ev->power_err_emerald[p] / PFLEX_CALIB_EMERALD_JOBS;
        if (ev->rmse_emerald[p] > rmse_max)
            rmse_max = ev->rmse_emerald[p];
    }
    double tl = 0;
    for (int i = 0; i < PFLEX_CALIB_MFU_POINTS; i++)
        tl += fabs(log(ev->tput_ratio[i])) / PFLEX_CALIB_MFU_POINTS;
    printf("%s: headline PFI mean |error| %.3f, RMSE %.3f; Emerald curve RMSE mean %.4f, max %.4f, "
           "power error %.1f %%; absolute throughput mean |log ratio| %.3f\n", what, pfi_abs,
           sqrt(pfi_sq), rmse_mean, rmse_max, 100 * perr, tl);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("PFLEX_SHARED_DATA");
    if (!dir || !*dir)
        dir = "../shared/data";
    pflex_error_t err;
    pflex_sweep_t *em;
    if (pflex_calib_emerald_load(dir, &em, &err) < 0) {
        fprintf(stderr, "calibrate: %s\n", err.text);
        return 2;
    }
    gsl_set_error_handler_off();
    struct pflex_calib_eval ev;
    if (pflex_calib_evaluate(em, &pflex_sim_fit_default, &ev, &err) < 0) {
        fprintf(stderr, "calibrate: %s\n", err.text);
        return 1;
    }
    struct ctx c = {.emerald = em, .leave_out = -1, .n = ev.n};
    report_errors("constants in the source, in sample", &ev);
    /* Deterministic multi-start: the constants in the source and a spread
     * of physically plausible starts; the lowest chi-square wins. */
    static const struct pflex_sim_fit starts[] = {
        {1.0, 1.0, 0.6, 4.0, 0.3, 0.8, 0.577}, {1.3, 1.3, 0.3, 3.0, 0.5, 0.7, 0.4},
        {0.9, 1.5, 0.5, 6.0, 0.1, 0.6, 0.3}, {1.5, 0.8, 0.2, 2.0, 0.7, 0.8, 0.6},
        {1.3, 2.0, 0.4, 5.0, 0.1, 0.65, 0.35}, {1.3, 2.5, 0.4, 6.6, 0.01, 0.8, 0.5},
        {1.2, 1.6, 0.5, 8.0, 0.2, 0.55, 0.25}, {1.25, 2.7, 0.43, 6.7, 0.02, 0.7, 0.3},
    };
    double t0[NPAR], t[NPAR], sd[NPAR], chi2 = INFINITY;
    from_fit(&pflex_sim_fit_default, t0);
    for (int st = -1; st < (int)(sizeof starts / sizeof *starts); st++) {
        double ts[NPAR], tt[NPAR], sds[NPAR], c2;
        if (st < 0)
            memcpy(ts, t0, sizeof ts);
        else
            from_fit(&starts[st], ts);
        if (fit_once(&c, ts, tt, sds, &c2) < 0)
            continue;
        printf("start %d: chi2 %.2f\n", st + 1, c2);
        if (c2 < chi2) {
            chi2 = c2;
            memcpy(t, tt, sizeof t);
            memcpy(sd, sds, sizeof sd);
        }
    }
    if (!isfinite(chi2)) {
        fprintf(stderr, "calibrate: the fit failed\n");
        return 1;
    }
    /* The leave-one-out fits start near the best fit, moved off it (from
     * the optimum itself the trust region's first step can be rejected,
     * which the driver takes for convergence). */
    for (int i = 0; i < NPAR; i++)
        t0[i] = t[i] + 0.1;
    struct pflex_sim_fit best;
    to_fit(t, &best);
    printf("fit over %zu residuals (Emerald: normalised throughput and power at 200-400 W; "
           "25 PFIs), chi2 %.2f, %ld model evaluations\n", c.n, chi2, c.evals);
    for (int i = 0; i < NPAR; i++)
        printf("  %-12s %8.4f +- %.4f   (source: %.4f)\n", par_names[i], fit_value(&best, i),
               sd[i], fit_value(&pflex_sim_fit_default, i));
    pflex_calib_evaluate(em, &best, &ev, &err);
    report_errors("fitted constants, in sample", &ev);
    /* Leave one job out: refit without it, predict it. */
    double loo_pfi_abs = 0, loo_pfi_sq = 0, loo_rmse = 0, loo_rmse_max = 0, loo_tput = 0;
    printf("leave-one-job-out:\n");
    for (int j = 0; j < PFLEX_CALIB_JOBS; j++) {
        double tj[NPAR];
        struct pflex_sim_fit fj;
        struct pflex_calib_eval evj;
        c.leave_out = j;
        fit_once(&c, t0, tj, NULL, NULL);
        to_fit(tj, &fj);
        if (getenv("CALIB_VERBOSE"))
            printf("    left out %d: k_ga100 %.4f k_gh100 %.4f a_mem %.4f eager %.3f eta %.4f v %.4f "
                   "knee %.3f\n", j, fj.k_dyn_ga100, fj.k_dyn_gh100, fj.a_mem, fj.eager_mult,
                   fj.eta_dp, fj.v_ratio_gh100, fj.f_knee_gh100);
        pflex_calib_evaluate(em, &fj, &evj, &err);
        if (j < PFLEX_CALIB_EMERALD_JOBS) {
            loo_rmse += evj.rmse_emerald[j] / PFLEX_CALIB_EMERALD_JOBS;
            if (evj.rmse_emerald[j] > loo_rmse_max)
                loo_rmse_max = evj.rmse_emerald[j];
            printf("  emerald job %d: curve RMSE %.4f (in sample %.4f)\n", j, evj.rmse_emerald[j],
                   ev.rmse_emerald[j]);
        } else if (j >= PFLEX_CALIB_EMERALD_JOBS + 25) {
            int i = j - PFLEX_CALIB_EMERALD_JOBS - 25;
            loo_tput += fabs(log(evj.tput_ratio[i])) / PFLEX_CALIB_MFU_POINTS;
            printf("  throughput %-28s simulated / measured %.2f (in sample %.2f)\n",
                   pflex_calib_mfu_points[i].name, evj.tput_ratio[i], ev.tput_ratio[i]);
        } else {
            int g = j - PFLEX_CALIB_EMERALD_JOBS;
            double e = evj.pfi_sim[g] - evj.pfi_measured[g];
            loo_pfi_abs += fabs(e) / 25;
            loo_pfi_sq += e * e / 25;
            printf("  headline group %2d: PFI %.3f predicted, %.2f measured (in sample %.3f)\n",
                   g, evj.pfi_sim[g], evj.pfi_measured[g], ev.pfi_sim[g]);
        }
    }
    printf("leave-one-job-out: headline PFI mean |error| %.3f, RMSE %.3f; Emerald curve RMSE "
           "mean %.4f, max %.4f; absolute throughput mean |log ratio| %.3f\n", loo_pfi_abs,
           sqrt(loo_pfi_sq), loo_rmse, loo_rmse_max, loo_tput);
    pflex_sweep_destroy(em);
    return 0;
}
