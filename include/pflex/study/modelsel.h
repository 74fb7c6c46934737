/* pflex/study/modelsel.h — choosing a PFI and loss-curve model: the candidates
 * `pflex train` and the study's prediction sections choose from, and their
 * in-sample, leave-one-out and leave-one-cluster-out scores on a dataset
 * (pflex/study/dataset.h).  The models themselves are pflex/flex/predict.h's.
 */
#ifndef PFLEX_MODELSEL_H
#define PFLEX_MODELSEL_H

#include <stddef.h>
#include "pflex/study/dataset.h"
#include "pflex/util/error.h"
#include "pflex/flex/predict.h"

struct pflex_modelsel_candidate {
    const char *name;           /* static: "ols-dram-copy", ... */
    struct pflex_model_spec spec;
};

/* The candidates, into out[0..max): the study's OLS on the DRAM copy
 * product, ridge on every telemetry feature, ridge with squares and
 * products of a compact set, a GP on that set.  Returns how many. */
size_t pflex_modelsel_candidates(struct pflex_modelsel_candidate *out, size_t max);

struct pflex_modelsel_eval {
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
int pflex_modelsel_evaluate(const struct pflex_model_spec *s, const struct pflex_dataset *d,
                            int loo, struct pflex_modelsel_eval *ev, pflex_error_t *err);

/* Why a scheme was not run ("a fold trains on 28 jobs, the model needs
 * 29"), into buf (len bytes), which it returns; fold: its *_fold. */
const char *pflex_modelsel_na(const struct pflex_modelsel_eval *ev, size_t fold, char *buf,
                              size_t len);

#endif
