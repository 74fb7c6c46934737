/* predict_gp.h — the Gaussian-process model kind (internal to libpflex). */
#ifndef PFLEX_PREDICT_GP_H
#define PFLEX_PREDICT_GP_H

#include <gsl/gsl_matrix.h>
#include "pflex/flex/predict.h"

/* The fewest training jobs with a PFI a Gaussian process is fitted on. */
#define PFLEX_GP_MIN_TRAIN 5

/* a^-1 in place for a symmetric positive definite a, via Cholesky (GSL's
 * error handler off meanwhile): 0, or -1 when a is not positive definite.
 * The ridge fit (predict.c) and the GP both invert with it. */
int pflex_spd_invert(gsl_matrix *a);

/* Fit m (spec, scalings and cuts set) on the training rows: Z holds the
 * standardised terms of the nz rows d->use selects (all when NULL), in
 * order.  Returns 0, or -1 with err. */
int pflex_gp_fit(pflex_model_t *m, const struct pflex_train_data *d, const double *Z, size_t nz,
                 pflex_error_t *err);

/* Mean and standard error of every target at standardised terms z. */
void pflex_gp_predict(const pflex_model_t *m, const double *z, double *mean, double *se);

#endif
