/* model_common.h — what `pflex train`, `pflex predict` and the study's
 * prediction section share: candidate models, evaluation, atomic writes. */
#ifndef PFLEX_CLI_MODEL_COMMON_H
#define PFLEX_CLI_MODEL_COMMON_H

#include <stdio.h>
#include "pflex/dataset.h"
#include "pflex/predict.h"

struct candidate {
    const char *name;
    struct pflex_model_spec spec;
};

/* The candidates `pflex train` chooses from: the study's OLS on the DRAM
 * copy product, ridge on every telemetry feature, ridge with squares and
 * products of a compact set. */
size_t model_candidates(struct candidate *out, size_t max);

struct evaluation {
    struct pflex_fit_score in, loo, loco;   /* PFI */
    double curve_loo_rmse, curve_loco_rmse; /* loss at the cuts, pooled */
    size_t clusters;
    /* A scheme whose smallest fold trains on fewer jobs than the model
     * needs (min_jobs, pflex_model_min_jobs) is not run: *_na is set, its
     * scores stay NaN; *_fold: that fold's jobs with a PFI. */
    size_t min_jobs, loo_fold, loco_fold;
    int loo_na, loco_na;
};

/* In-sample, leave-one-out and leave-one-cluster-out scores of a spec on
 * the dataset (refits each fold).  loo: 0 skips leave-one-out.  Returns 0
 * or -1 with err. */
int model_evaluate(const struct pflex_model_spec *s, const struct dataset *d, int loo,
                   struct evaluation *ev, pflex_error_t *err);

/* Why a scheme was not run ("a fold trains on 28 jobs, the model needs
 * 29"), into buf; fold: its *_fold. */
const char *evaluation_na(const struct evaluation *ev, size_t fold, char *buf, size_t len);

/* The training data of a dataset (y is malloc'd: free it). */
void model_train_data(const struct dataset *d, struct pflex_train_data *td, double **y);

/* Write text to path atomically (a temporary file beside it, renamed).
 * Returns 0 or -1 with errno. */
int write_atomic(const char *path, const char *text, size_t len);

/* Group ids of the dataset's clusters (malloc'd), and how many. */
int *cluster_ids(const struct dataset *d, size_t *ngroups);

#endif
