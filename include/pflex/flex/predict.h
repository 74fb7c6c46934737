/* pflex/flex/predict.h — PFI and whole loss curves predicted from uncapped-run
 * features (pflex/flex/features.h).
 *
 * A model predicts ntarget numbers per job: target 0 is the ratio PFI,
 * targets 1..ncut the throughput loss L(x) at the reductions cuts[k].  Each
 * target is a linear model on standardised features (missing features are
 * imputed with the training mean), fitted by ordinary least squares or
 * ridge (the penalty chosen by the closed-form leave-one-out error), with a
 * per-job standard error from the residual spread and the job's leverage;
 * or a Gaussian process with its own predictive variance.
 * A model is saved as a versioned JSON file.
 */
#ifndef PFLEX_PREDICT_H
#define PFLEX_PREDICT_H

#include <stddef.h>
#include <stdio.h>
#include "pflex/util/error.h"
#include "pflex/flex/features.h"

#define PFLEX_MODEL_VERSION 1
#define PFLEX_MODEL_MAX_CUTS 16
#define PFLEX_MODEL_MAX_TERMS 64
#define PFLEX_GP_MAX_TRAIN 3000

enum pflex_model_kind {
    PFLEX_MODEL_OLS,        /* plain least squares (the study's baseline on dram_copy_product) */
    PFLEX_MODEL_RIDGE,      /* ridge on the features */
    PFLEX_MODEL_RIDGE2,     /* ridge on the features, their squares and pairwise products */
    PFLEX_MODEL_GP,         /* Gaussian process, squared-exponential kernel on the
                             * standardised features (at most PFLEX_GP_MAX_TRAIN jobs) */
    PFLEX_MODEL_KIND_COUNT
};
const char *pflex_model_kind_name(enum pflex_model_kind k);

/* What to fit: a kind and a feature set. */
struct pflex_model_spec {
    enum pflex_model_kind kind;
    size_t nfeat;
    int feat[PFLEX_FEAT_COUNT];     /* enum pflex_feat */
};

struct pflex_model_target {
    size_t nobs;            /* training rows with this target */
    double intercept;
    double coef[PFLEX_MODEL_MAX_TERMS];
    double sigma;           /* residual standard deviation (LOO), target units */
    double lambda;          /* ridge penalty (0 for OLS) */
    double zmean[PFLEX_MODEL_MAX_TERMS];    /* term means over this target's rows */
    /* (Z'Z + lambda I)^-1 over the terms, for the leverage of a new job */
    double *cov;            /* nterms x nterms */
    /* GP: alpha = (K + r I)^-1 (y - intercept) over the training jobs, and
     * the signal variance; sigma and cov unused */
    double *alpha;
    double gp_s2;
};

typedef struct pflex_model {
    struct pflex_model_spec spec;
    size_t nterms;                      /* model terms after expansion */
    double center[PFLEX_FEAT_COUNT];    /* per feature of spec, training mean */
    double scale[PFLEX_FEAT_COUNT];     /* training standard deviation (1 when none) */
    double tcenter[PFLEX_MODEL_MAX_TERMS], tscale[PFLEX_MODEL_MAX_TERMS];
    size_t ncut;
    double cuts[PFLEX_MODEL_MAX_CUTS];
    size_t ntarget;                     /* 1 + ncut */
    /* GP: the training jobs' standardised terms (ntrain x nterms), the
     * kernel's length scale and noise ratio r, and (K + r I)^-1 */
    size_t ntrain;
    double *gp_z;
    double gp_length, gp_ratio;
    double *gp_kinv;
    struct pflex_model_target t[1 + PFLEX_MODEL_MAX_CUTS];
} pflex_model_t;

/* Training data: n jobs, features x (n x PFLEX_FEAT_COUNT, NaN missing),
 * targets y (n x (1 + ncut): PFI then L at each cut, NaN missing). */
struct pflex_train_data {
    size_t n;
    const double *x;
    const double *y;
    size_t ncut;
    const double *cuts;
    const unsigned char *use;   /* NULL or n flags: rows to train on */
};

/* The fewest training jobs with a PFI that pflex_model_fit accepts for a
 * spec: its terms + 2 for the linear kinds (ridge2 on 6 features: 27
 * terms, 29 jobs), 5 for a Gaussian process.  A cross-validation fold
 * trains on fewer jobs than the data holds: see pflex_model_cv. */
size_t pflex_model_min_jobs(const struct pflex_model_spec *s);

/* Fit a model.  Returns a new model, or NULL with err (too few rows, a
 * singular system, memory). */
pflex_model_t *pflex_model_fit(const struct pflex_model_spec *s, const struct pflex_train_data *d,
                               pflex_error_t *err);
void pflex_model_destroy(pflex_model_t *m);

/* Predict every target for one job's features x (PFLEX_FEAT_COUNT values):
 * mean[k] and standard error se[k] (k < ntarget).  Loss predictions are
 * made non-decreasing in the cut and kept in [0, 1]. */
void pflex_model_predict(const pflex_model_t *m, const double *x, double *mean, double *se);

/* The model as JSON text (malloc'd, NUL-terminated), and back.  extra is
 * NULL or a JSON object text merged in under "training" (metrics). */
char *pflex_model_to_json(const pflex_model_t *m, const char *extra);
pflex_model_t *pflex_model_from_json(const char *buf, size_t len, const char *name,
                                     pflex_error_t *err);

/* Cross-validation: each fold leaves out the rows of one group (group ids
 * g[i]; distinct ids per row = leave-one-out), fits on the rest, predicts
 * the left-out rows.  pred gets n x ntarget predictions (NaN where a fold
 * cannot fit).  Returns 0, or -1 with err. */
int pflex_model_cv(const struct pflex_model_spec *s, const struct pflex_train_data *d,
                   const int *g, double *pred, pflex_error_t *err);

/* The leave-group-out loop of pflex_model_cv with the fit given: for each
 * group (rows sharing an id in g, rows d->use leaves out skipped),
 * fit(ctx, fold) gets the data with fold->use the other groups' rows and
 * returns a model (NULL: the group's predictions stay NaN), which
 * predicts the group's rows into pred (n x ntarget) and is destroyed.
 * Returns 0, or -1 with err when out of memory. */
typedef pflex_model_t *(*pflex_model_fold_fit)(void *ctx, const struct pflex_train_data *fold);
int pflex_model_cv_folds(const struct pflex_train_data *d, const int *g, pflex_model_fold_fit fit,
                         void *ctx, double *pred, pflex_error_t *err);

struct pflex_fit_score {
    size_t n;
    double r2, rmse, rho;   /* R^2 = 1 - SSres/SStot, RMSE, Spearman of pred vs true */
};
/* One job's prediction: the model's targets and what the predicted loss
 * curve sheds at each service tier's floor (predict_curve.c). */
struct pflex_job_prediction {
    double mean[1 + PFLEX_MODEL_MAX_CUTS];  /* [0] ratio PFI, [1 + k] loss at cuts[k] */
    double se[1 + PFLEX_MODEL_MAX_CUTS];    /* their standard errors */
    double shed[4];     /* [t] power fraction shed at tier t's floor (t = 1..3),
                         * NaN when the curve does not say; [0] NaN */
};

/* The predicted curve of a job whose uncapped run drew p0_w per GPU (W)
 * at cap cap0_w (W; NaN: p0_w) with throughput t0, as sweep points with
 * the baseline first and then ascending power: power_w = p0_w (1 - x),
 * throughput = t0 (1 - loss[1 + k]), cap_w = cap0_w (1 - x) for each cut
 * x = cuts[k].  pts holds PFLEX_MODEL_MAX_CUTS + 1; returns the count. */
struct pflex_sweep_point;
size_t pflex_model_curve_points(const pflex_model_t *m, const double *mean, double p0_w,
                                double t0, double cap0_w, struct pflex_sweep_point *pts);

/* Predict the job with features x (PFLEX_FEAT_COUNT) and baseline p0_w,
 * t0, cap0_w (as above) into *out. */
void pflex_model_predict_job(const pflex_model_t *m, const double *x, double p0_w, double t0,
                             double cap0_w, struct pflex_job_prediction *out);

/* Score predictions against truth over the rows where both exist. */
void pflex_fit_score(const double *pred, const double *truth, size_t n, size_t stride,
                     struct pflex_fit_score *out);

#endif
