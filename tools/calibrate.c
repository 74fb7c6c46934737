/* calibrate.c — fit the sim model's free constants to physical
 * measurements (`make calibrate`; docs/sim-model.md section 5).
 *
 *   build/tools/calibrate [DATA_DIR [DEVICE_DIR]]
 *     DATA_DIR: $PFLEX_SHARED_DATA, else ../shared/data; DEVICE_DIR: the
 *     repository's data/h200-device (the device runs: measured.csv, jobs/)
 *
 * The measurements, all of physics, none a PFI: the real uncapped H200 runs
 * of DATA_DIR/h200-uncapped (tokens/s, board power, SM clock, DRAM_ACTIVE,
 * PIPE_TENSOR_ACTIVE, SM_ACTIVE, MEM_COPY_UTIL of each), the five Emerald
 * A100-SXM4-40GB power-cap sweeps (normalised throughput and power drawn at
 * 200-400 W) and six public absolute throughputs of MPT pretraining on H100
 * and A100 (llm-foundry's benchmarks).  The constants (struct
 * pflex_sim_fit): the switching power of the GA100 and GH100 dies, the
 * extra power of a busy tensor and FP32 pipe, the traffic of unfused eager
 * kernels, the overlap of data-parallel traffic, the host time of an eager
 * operator, the MEM_COPY_UTIL saturation.  Each has a broad prior from the
 * literature (a residual of its own), so that a constant no remaining job
 * constrains falls back to it in the leave-one-job-out fits.
 *
 * Weighted least squares (GSL's trust-region Levenberg-Marquardt, finite-
 * difference Jacobian, deterministic) from fixed starts.  Prints each
 * constant with its 1-sigma uncertainty, the errors per GPU kind in sample
 * and leave one job out (each job left out in turn, the fit redone, the job
 * predicted), then the judge: the study's PFIs simulated with the fitted
 * constants, which no PFI has touched.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include "pflex/sim/calib.h"
#include "pflex/sim/fleet.h"

#define NPAR 14
static const char *const par_names[NPAR] = {
    "k_dyn_ga100", "k_dyn_gh100", "w_tensor", "w_fp32", "eager_mult", "eta_dp", "py_op_s",
    "u_busy", "eff_gemm", "v_floor_gh100", "knee_gh100", "eff_mem", "train_ops", "host_b",
};

/* Priors: value and 1 sigma, of log(value) for the positive scales (log
 * of eager_mult - 1), of the value itself for the two shares. */
static const struct { double value, sigma; int log; } prior[NPAR] = {
    {1.0, 0.7, 1},      /* k_dyn: switching power at the top clock ~ the die's budget */
    {1.0, 0.7, 1},
    {1.0, 1.0, 1},      /* a busy tensor / FP32 pipe burns about as much again */
    {1.0, 1.0, 1},
    {4.0, 0.7, 1},      /* eager elementwise traffic ~5x fused (eager_mult - 1 = 4) */
    {0.3, 0.3, 0},      /* FSDP hides part of its traffic */
    {10e-6, 0.7, 1},    /* ~10 us per eager PyTorch operator (He, 2022) */
    {0.5, 0.3, 0},      /* MEM_COPY_UTIL saturates at half the bandwidth */
    {0.8, 0.1, 0},      /* cuBLAS reaches 70-90 % of the tensor peak on large GEMMs */
    {0.798, 0.1, 0},    /* GH100's V-f floor: GA100's (the curve borrowed until now) */
    {0.577, 0.15, 0},   /* ... and its knee */
    {0.606, 0.1, 0},    /* the earlier Emerald calibration of the memory-bound kernels */
    {3.0, 0.7, 1},      /* a training step: forward + backward ~ 3x the forward's operators */
    {1.0, 0.7, 1},      /* two hosts of one generation differ by well under 2x */
};

static double logistic(double x) { return 1 / (1 + exp(-x)); }
static double logit(double p)
{
    p = p < 1e-4 ? 1e-4 : p > 1 - 1e-4 ? 1 - 1e-4 : p;
    return log(p / (1 - p));
}

static void to_fit(const double *t, struct pflex_sim_fit *f)
{
    f->k_dyn_ga100 = exp(t[0]);
    f->k_dyn_gh100 = exp(t[1]);
    f->w_tensor = exp(t[2]);
    f->w_fp32 = exp(t[3]);
    f->eager_mult = 1 + exp(t[4]);
    f->eta_dp = logistic(t[5]);
    f->py_op_s = exp(t[6]);
    f->u_busy = 0.01 + 0.99 * logistic(t[7]);
    f->eff_gemm = 0.05 + 0.95 * logistic(t[8]);
    f->v_floor_gh100 = 0.5 + 0.5 * logistic(t[9]);
    f->knee_gh100 = 0.2 + 0.75 * logistic(t[10]);
    f->eff_mem = 0.3 + 0.68 * logistic(t[11]);
    f->train_ops = exp(t[12]);
    f->host_b = exp(t[13]);
}

static void from_fit(const struct pflex_sim_fit *f, double *t)
{
    t[0] = log(f->k_dyn_ga100);
    t[1] = log(f->k_dyn_gh100);
    t[2] = log(f->w_tensor > 1e-4 ? f->w_tensor : 1e-4);
    t[3] = log(f->w_fp32 > 1e-4 ? f->w_fp32 : 1e-4);
    t[4] = log(f->eager_mult > 1.0001 ? f->eager_mult - 1 : 1e-4);
    t[5] = logit(f->eta_dp);
    t[6] = log(f->py_op_s);
    t[7] = logit((f->u_busy - 0.01) / 0.99);
    t[8] = logit((f->eff_gemm - 0.05) / 0.95);
    t[9] = logit((f->v_floor_gh100 - 0.5) / 0.5);
    t[10] = logit((f->knee_gh100 - 0.2) / 0.75);
    t[11] = logit((f->eff_mem - 0.3) / 0.68);
    t[12] = log(f->train_ops);
    t[13] = log(f->host_b);
}

static double fit_value(const struct pflex_sim_fit *f, int i)
{
    const double v[NPAR] = {f->k_dyn_ga100, f->k_dyn_gh100, f->w_tensor, f->w_fp32, f->eager_mult,
                            f->eta_dp, f->py_op_s, f->u_busy, f->eff_gemm, f->v_floor_gh100,
                            f->knee_gh100, f->eff_mem, f->train_ops, f->host_b};
    return v[i];
}

/* d constant / d theta, for the uncertainty. */
static double dfit(const double *t, int i)
{
    switch (i) {
    case 4: return exp(t[4]);
    case 5: return logistic(t[5]) * (1 - logistic(t[5]));
    case 7: return 0.99 * logistic(t[7]) * (1 - logistic(t[7]));
    case 8: return 0.95 * logistic(t[8]) * (1 - logistic(t[8]));
    case 9: return 0.5 * logistic(t[9]) * (1 - logistic(t[9]));
    case 10: return 0.75 * logistic(t[10]) * (1 - logistic(t[10]));
    case 11: return 0.68 * logistic(t[11]) * (1 - logistic(t[11]));
    default: return exp(t[i]);
    }
}

static double prior_residual(const double *t, int i)
{
    struct pflex_sim_fit f;
    to_fit(t, &f);
    double v = fit_value(&f, i);
    if (i == 4)
        v -= 1;
    return prior[i].log ? (log(v) - log(prior[i].value)) / prior[i].sigma
                        : (v - prior[i].value) / prior[i].sigma;
}

struct ctx {
    const pflex_sweep_t *emerald;
    const struct pflex_calib_reals *reals;
    int leave_out;              /* job left out (residuals zeroed), -1: none */
    int all_in;                 /* 1: every real run fitted, the unseen ones too */
    size_t n;                   /* residuals of the measurements */
    size_t nfit;                /* of them, those fitted (unseen runs' are zeroed) */
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
    if (pflex_calib_evaluate(c->emerald, c->reals, &fit, &ev, &err) < 0 || ev.n != c->n)
        return GSL_EDOM;
    for (size_t i = 0; i < ev.n; i++) {
        int jb = ev.job[i], h = jb - PFLEX_CALIB_H200_FIRST;
        int out = jb == c->leave_out || (h >= 0 && !c->all_in && !c->reals->r[h].in_fit);
        gsl_vector_set(f, i, out ? 0 : ev.r[i]);
    }
    for (int i = 0; i < NPAR; i++)
        gsl_vector_set(f, ev.n + (size_t)i, prior_residual(x->data, i));
    return GSL_SUCCESS;
}

static int fit_once(struct ctx *c, const double *theta0, double *theta, double *sigma,
                    double *chi2_out)
{
    size_t n = c->n + NPAR;
    gsl_multifit_nlinear_fdf fdf = {.f = residuals, .df = NULL, .fvv = NULL, .n = n,
                                    .p = NPAR, .params = c};
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, n, NPAR);
    gsl_vector_const_view x0 = gsl_vector_const_view_array(theta0, NPAR);
    int info, rc = gsl_multifit_nlinear_init(&x0.vector, &fdf, w);
    if (rc == GSL_SUCCESS)
        rc = gsl_multifit_nlinear_driver(40, 1e-5, 1e-5, 1e-8, NULL, NULL, &info, w);
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
        double scale = chi2 / (double)(c->nfit > NPAR ? c->nfit - NPAR : 1);
        for (int i = 0; i < NPAR; i++)
            sigma[i] = sqrt(gsl_matrix_get(cov, i, i) * (scale > 1 ? scale : 1)) * dfit(theta, i);
        gsl_matrix_free(cov);
    }
    gsl_multifit_nlinear_free(w);
    return rc == GSL_SUCCESS || rc == GSL_EMAXITER ? 0 : -1;
}

/* The bounds for a real run predicted: throughput within 25 %,
 * power and SM clock within 10 %. */
#define BOUND_TPUT 0.25
#define BOUND_POWER 0.10
#define BOUND_CLOCK 0.10

/* Errors of one real run: simulated over measured - 1 for tokens/s, power
 * and SM clock. */
static void real_errors(const struct pflex_calib_real *m, const struct pflex_calib_real_sim *s,
                        double *e)
{
    e[0] = s->tokens_per_s / m->tokens_per_s - 1;
    e[1] = s->power_w / m->power_w - 1;
    e[2] = s->sm_clock_mhz / m->sm_clock_mhz - 1;
}

static void print_real(const char *what, const struct pflex_calib_real *m,
                       const struct pflex_calib_real_sim *s)
{
    double e[3];
    real_errors(m, s, e);
    /* A microbenchmark's rate in TFLOP/s or TB/s (read + written). */
    const char *unit = m->unit == PFLEX_CALIB_FLOP ? "TFLOP/s" : m->unit == PFLEX_CALIB_BYTE
                       ? "TB/s" : "tokens/s";
    double scale = m->unit == PFLEX_CALIB_TOKEN ? 1 : 1e-12;
    printf("  %-14s %-10s %-8s %8.5g (%+5.1f %%)  power %4.0f W (%+5.1f %%)  SM clock %4.0f "
           "MHz (%+5.1f %%)  dram %.2f/%.2f tensor %.2f/%.2f sm %.2f/%.2f mem_copy %2.0f/%2.0f\n",
           m->name, what, unit, s->tokens_per_s * scale, 100 * e[0], s->power_w, 100 * e[1],
           s->sm_clock_mhz,
           100 * e[2], s->dram_active, m->dram_active, s->tensor_active, m->tensor_active,
           s->sm_active, m->sm_active, s->mem_copy_util, m->mem_copy_util);
}

/* The real runs of one set (machine 0: the shared set, 1: the device
 * runs; in_fit -1: all of them), each against the bounds, and how
 * many are within them. */
static void print_set(const char *title, const char *what, const struct pflex_calib_reals *re,
                      const struct pflex_calib_real_sim *sim, int machine, int in_fit)
{
    int n = 0, ok = 0;
    double wt = 0, wp = 0, wc = 0, mt = 0;
    printf("%s:\n", title);
    for (size_t i = 0; i < re->n; i++) {
        const struct pflex_calib_real *m = &re->r[i];
        if ((machine >= 0 && m->machine != machine) || (in_fit >= 0 && m->in_fit != in_fit))
            continue;
        double e[3];
        real_errors(m, &sim[i], e);
        print_real(what, m, &sim[i]);
        n++;
        ok += fabs(e[0]) <= BOUND_TPUT && fabs(e[1]) <= BOUND_POWER && fabs(e[2]) <= BOUND_CLOCK;
        wt = fmax(wt, fabs(e[0]));
        wp = fmax(wp, fabs(e[1]));
        wc = fmax(wc, fabs(e[2]));
        mt += fabs(e[0]);
    }
    if (n)
        printf("  %d runs: %d within the bounds (tokens/s 25 %%, power 10 %%, SM clock 10 %%); "
               "worst |error| tokens/s %.1f %%, power %.1f %%, SM clock %.1f %%; mean |error| "
               "tokens/s %.1f %%\n", n, ok, 100 * wt, 100 * wp, 100 * wc, 100 * mt / n);
}

/* The worst errors per GPU kind; the H200's over the fit set's runs, or
 * over all of them (all: leave one out). */
static void summary(const char *what, const struct pflex_calib_reals *re,
                    const struct pflex_calib_eval *ev, int all)
{
    double rm = 0, rmax = 0, pe = 0, tl = 0, wt = 0, wp = 0, wc = 0;
    for (int p = 0; p < PFLEX_CALIB_EMERALD_JOBS; p++) {
        rm += ev->rmse_emerald[p] / PFLEX_CALIB_EMERALD_JOBS;
        pe += ev->power_err_emerald[p] / PFLEX_CALIB_EMERALD_JOBS;
        rmax = fmax(rmax, ev->rmse_emerald[p]);
    }
    for (int i = 0; i < PFLEX_CALIB_MFU_POINTS; i++)
        tl += fabs(log(ev->tput_ratio[i])) / PFLEX_CALIB_MFU_POINTS;
    for (size_t i = 0; i < re->n; i++) {
        double e[3];
        if (!all && !re->r[i].in_fit)
            continue;
        real_errors(&re->r[i], &ev->real[i], e);
        wt = fmax(wt, fabs(e[0]));
        wp = fmax(wp, fabs(e[1]));
        wc = fmax(wc, fabs(e[2]));
    }
    printf("%s:\n  H200 (real, uncapped, %s runs): worst |error| tokens/s %.1f %%, power %.1f "
           "%%, SM clock %.1f %%\n  A100-SXM4-40GB (Emerald caps): normalised-throughput RMSE "
           "mean %.4f, max %.4f; power drawn %.1f %% RMS\n  H100 / A100-80GB (llm-foundry): "
           "tokens/s mean |log ratio| %.3f\n", what, all ? "all" : "the fit set's", 100 * wt,
           100 * wp, 100 * wc, rm, rmax, 100 * pe, tl);
}

/* The fit from the source's constants and two fixed starts, the lowest
 * chi-square kept: theta, its 1 sigma, the chi-square (INFINITY: failed). */
static double fit_best(struct ctx *c, double *t, double *sd)
{
    static const struct pflex_sim_fit starts[] = {
        {1.0, 1.0, 1.0, 1.0, 5.0, 0.3, 10e-6, 0.5, 0.8, 0.798, 0.577, 0.75, 3.0, 1.0},
        {1.3, 0.6, 2.0, 0.5, 6.0, 0.1, 20e-6, 0.8, 0.7, 0.7, 0.45, 0.85, 5.0, 1.5},
    };
    double chi2 = INFINITY;
    for (int st = -1; st < (int)(sizeof starts / sizeof *starts); st++) {
        double ts[NPAR], tt[NPAR], sds[NPAR], c2;
        from_fit(st < 0 ? &pflex_sim_fit_default : &starts[st], ts);
        if (fit_once(c, ts, tt, sds, &c2) < 0)
            continue;
        printf("start %d: chi2 %.2f\n", st + 1, c2);
        if (c2 < chi2) {
            chi2 = c2;
            memcpy(t, tt, NPAR * sizeof *t);
            memcpy(sd, sds, NPAR * sizeof *sd);
        }
    }
    return chi2;
}

static void print_fit(const struct ctx *c, const double *t, const double *sd, double chi2)
{
    struct pflex_sim_fit best;
    to_fit(t, &best);
    printf("fit over %zu residuals + %d priors (H200 real runs of the fit set: tokens/s, power, SM "
           "clock, 4 counters; Emerald: normalised throughput and power at 200-400 W; "
           "llm-foundry tokens/s), chi2 %.2f, %ld model evaluations\n", c->nfit, NPAR, chi2,
           c->evals);
    for (int i = 0; i < NPAR; i++)
        printf("  %-13s %10.4g +- %.2g   (source: %.4g, prior %.3g)\n", par_names[i],
               fit_value(&best, i), sd[i], fit_value(&pflex_sim_fit_default, i), prior[i].value);
    printf("as C: .k_dyn_ga100 = %.4f, .k_dyn_gh100 = %.4f, .w_tensor = %.4f, .w_fp32 = %.4f,\n"
           "      .eager_mult = %.4f, .eta_dp = %.4f, .py_op_s = %.4e, .u_busy = %.4f,\n"
           "      .eff_gemm = %.4f, .v_floor_gh100 = %.4f, .knee_gh100 = %.4f, .eff_mem = %.4f,\n"
           "      .train_ops = %.4f, .host_b = %.4f,\n",
           best.k_dyn_ga100, best.k_dyn_gh100, best.w_tensor, best.w_fp32, best.eager_mult,
           best.eta_dp, best.py_op_s, best.u_busy, best.eff_gemm, best.v_floor_gh100,
           best.knee_gh100, best.eff_mem, best.train_ops, best.host_b);
}

/* Leave one job out over everything (the fit set and the unseen runs
 * together): each job's measurements out of a fit on all the others, the
 * job predicted. */
static void leave_one_out(struct ctx *c, const double *t, const struct pflex_calib_eval *ev)
{
    const struct pflex_calib_reals *re = c->reals;
    static struct pflex_calib_eval loo, evj;
    pflex_error_t err;
    memset(&loo, 0, sizeof loo);
    int njobs = PFLEX_CALIB_H200_FIRST + (int)re->n;
    printf("leave-one-job-out over all %d jobs (each job's own measurements out of a fit on all "
           "the others, the job predicted):\n", njobs);
    c->all_in = 1;
    for (int jb = 0; jb < njobs; jb++) {
        double tj[NPAR];
        struct pflex_sim_fit fj;
        c->leave_out = jb;
        fit_once(c, t, tj, NULL, NULL);
        to_fit(tj, &fj);
        pflex_calib_evaluate(c->emerald, re, &fj, &evj, &err);
        if (jb < PFLEX_CALIB_EMERALD_JOBS) {
            loo.rmse_emerald[jb] = evj.rmse_emerald[jb];
            loo.power_err_emerald[jb] = evj.power_err_emerald[jb];
            printf("  A100 Emerald job %d: curve RMSE %.4f (in sample %.4f), power %.1f %% RMS\n",
                   jb, evj.rmse_emerald[jb], ev->rmse_emerald[jb], 100 * evj.power_err_emerald[jb]);
        } else if (jb < PFLEX_CALIB_H200_FIRST) {
            int i = jb - PFLEX_CALIB_EMERALD_JOBS;
            loo.tput_ratio[i] = evj.tput_ratio[i];
            printf("  %s %-28s tokens/s simulated / measured %.2f (in sample %.2f)\n",
                   pflex_calib_mfu_points[i].gpu, pflex_calib_mfu_points[i].name, evj.tput_ratio[i],
                   ev->tput_ratio[i]);
        } else {
            int i = jb - PFLEX_CALIB_H200_FIRST;
            loo.real[i] = evj.real[i];
        }
    }
    c->all_in = 0;
    c->leave_out = -1;
    loo.nreal = re->n;
    print_set("leave-one-job-out, the shared set's runs", "left out", re, loo.real, 0, -1);
    print_set("leave-one-job-out, the device runs", "left out", re, loo.real, 1, -1);
    summary("leave-one-job-out", re, &loo, 1);
}

/* Judge-side diagnosis, never a target: each headline group's simulated
 * against study PFI beside where its step goes in the model at the top cap
 * and at the lowest cap of its grid (noise-free, seed 1 as the judge), and
 * its SM clock at the top cap.  Every group spends most of its step in
 * tensor work (GEMMs, attention: its time grows as the clock falls), so a
 * group is filed under the largest of the parts that do not slow with the
 * clock, where that takes 15 % or more of its step at the top cap:
 * "memory" (memory-bound kernels and the optimizer: their speed holds down
 * to r_sat), "host" (the host's operators, launches, data loading) or
 * "comm" (exposed communication and the pipeline bubble: it hides behind
 * the compute as the clock falls); else "clock".  The mean signed
 * error per mechanism says which part of the model the remaining judge
 * error sits in. */
static const char *const MECH[4] = {"clock", "memory", "host", "comm"};

static int diag_shares(pflex_sim_job_t *j, double cap, double sh[4], double *clock_mhz)
{
    struct pflex_sim_breakdown b;
    struct pflex_sim_measure m;
    pflex_error_t err;
    if (pflex_sim_job_breakdown(j, cap, &b, &err) < 0 || pflex_sim_job_expect(j, cap, &m, &err) < 0)
        return -1;
    sh[0] = b.gemm + b.attention;
    sh[1] = b.memory + b.optimizer;
    sh[2] = b.host;
    sh[3] = b.comm_exposed + b.bubble;
    *clock_mhz = m.tm[PFLEX_TM_SM_CLOCK_MHZ];
    return 0;
}

static void diagnose(const struct pflex_sim_fit *fit, const struct pflex_calib_judge *jd)
{
    double sum[4] = {0}, asum[4] = {0};
    int cnt[4] = {0};
    printf("judge diagnosis (not fitted): step shares clock / memory / host / comm at the top cap "
           "-> at the lowest cap, the top cap's SM clock\n");
    for (size_t g = 0; g < jd->n; g++) {
        struct pflex_fleet_run r;
        pflex_sim_job_t *j;
        pflex_error_t err;
        if (pflex_fleet_get(g, &r) < 0 || r.split != PFLEX_FLEET_MAIN || !isfinite(jd->pfi_measured[g])
            || pflex_sim_job_create_fit(&r.desc, 1, fit, &j, &err) < 0)
            continue;
        double hi[4], lo[4], chi, clo;
        int ok = diag_shares(j, r.caps_w[r.ncaps - 1], hi, &chi) == 0
                 && diag_shares(j, r.caps_w[0], lo, &clo) == 0;
        pflex_sim_job_destroy(j);
        if (!ok)
            continue;
        int k = 1;
        for (int m = 2; m < 4; m++)
            k = hi[m] > hi[k] ? m : k;
        if (hi[k] < 0.15)
            k = 0;
        double e = jd->pfi_sim[g] - jd->pfi_measured[g];
        sum[k] += e;
        asum[k] += fabs(e);
        cnt[k]++;
        printf("  %-52s %5.2f / %4.2f (%+.2f)  %-6s %.2f/%.2f/%.2f/%.2f -> %.2f/%.2f/%.2f/%.2f  "
               "%4.0f MHz\n", r.label, jd->pfi_sim[g], jd->pfi_measured[g], e, MECH[k], hi[0], hi[1],
               hi[2], hi[3], lo[0], lo[1], lo[2], lo[3], chi);
    }
    for (int m = 0; m < 4; m++)
        if (cnt[m])
            printf("  groups driven by %-6s %2d: mean error %+.3f, mean |error| %.3f\n", MECH[m],
                   cnt[m], sum[m] / cnt[m], asum[m] / cnt[m]);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("PFLEX_SHARED_DATA");
    if (!dir || !*dir)
        dir = "../shared/data";
    const char *dev = argc > 2 ? argv[2] : "data/h200-device";
    pflex_error_t err;
    pflex_sweep_t *em;
    static struct pflex_calib_reals re;
    if (pflex_calib_emerald_load(dir, &em, &err) < 0 || pflex_calib_reals_load(dir, &re, &err) < 0
        || pflex_calib_device_load(dev, &re, &err) < 0) {
        fprintf(stderr, "calibrate: %s\n", err.text);
        return 2;
    }
    gsl_set_error_handler_off();
    static struct pflex_calib_eval ev;
    if (pflex_calib_evaluate(em, &re, &pflex_sim_fit_default, &ev, &err) < 0) {
        fprintf(stderr, "calibrate: %s\n", err.text);
        return 1;
    }
    struct ctx c = {.emerald = em, .reals = &re, .leave_out = -1, .n = ev.n};
    for (size_t i = 0; i < ev.n; i++)
        c.nfit += ev.job[i] < PFLEX_CALIB_H200_FIRST
                  || re.r[ev.job[i] - PFLEX_CALIB_H200_FIRST].in_fit;
    summary("constants in the source, the fit set", &re, &ev, 0);
    print_set("constants in the source: the device runs (data/h200-device)", "source", &re,
              ev.real, 1, -1);
    double t[NPAR], sd[NPAR], chi2 = fit_best(&c, t, sd);
    if (!isfinite(chi2)) {
        fprintf(stderr, "calibrate: the fit failed\n");
        return 1;
    }
    print_fit(&c, t, sd, chi2);
    struct pflex_sim_fit best;
    to_fit(t, &best);
    pflex_calib_evaluate(em, &re, &best, &ev, &err);
    summary("fitted constants, in sample", &re, &ev, 0);
    print_set("fitted constants: the fit set's real runs, in sample", "in sample", &re, ev.real,
              -1, 1);
    print_set("fitted constants: the unseen device runs, out of sample", "unseen", &re, ev.real,
              -1, 0);
    leave_one_out(&c, t, &ev);
    /* The judge: the study's PFIs with the fitted constants.  No PFI is in
     * the fit, so these are out of sample. */
    struct pflex_calib_judge jd;
    if (pflex_calib_judge(&best, &jd, &err) == 0) {
        printf("judge (PFIs never fitted): headline H200 ratio PFI mean |error| %.3f, RMSE %.3f, "
               "Spearman %.3f (n = 25); cluster medians simulated / study: dense %.2f / %.2f, MoE "
               "PT %.2f / %.2f, MoE LoRA %.2f / %.2f\n", jd.headline_mae, jd.headline_rmse,
               jd.headline_rho, jd.cluster_median_sim[0], jd.cluster_median_measured[0],
               jd.cluster_median_sim[1], jd.cluster_median_measured[1], jd.cluster_median_sim[2],
               jd.cluster_median_measured[2]);
        printf("  (no calibration measurement is tied to a study group, so these are out of sample "
               "as they stand: a leave-one-group-out of the calibration is the fit above; the "
               "validation and H100 groups have no published PFI to score)\n");
        for (size_t g = 0; g < jd.n; g++) {
            struct pflex_fleet_run r;
            pflex_fleet_get(g, &r);
            char st[32] = "not published";
            if (isfinite(jd.pfi_measured[g]))
                snprintf(st, sizeof st, "%.2f", jd.pfi_measured[g]);
            printf("  %-12s %-52s PFI simulated %5.2f  study %s\n",
                   pflex_fleet_split_name(r.split), r.label, jd.pfi_sim[g], st);
        }
        diagnose(&best, &jd);
    }
    pflex_sweep_destroy(em);
    return 0;
}
