/* pflex/correlate.h — features against PFI: Pearson and Spearman with
 * seeded bootstrap confidence intervals and Benjamini–Hochberg q-values. */
#ifndef PFLEX_CORRELATE_H
#define PFLEX_CORRELATE_H

#include <stddef.h>
#include "pflex/error.h"

struct pflex_corr {
    double r, lo, hi;   /* coefficient and its bootstrap percentile interval */
    double p;           /* two-sided p-value, t approximation with n - 2 df */
    double q;           /* Benjamini–Hochberg q-value over the features */
};

struct pflex_corr_row {
    size_t n;           /* jobs with this feature and a PFI */
    struct pflex_corr pearson, spearman;
};

/* x: n rows of nf features (row-major, NaN = missing), y: n targets (NaN =
 * missing).  For each feature, over the rows where both are present: the
 * coefficients, a bootstrap interval at level (0.95) from boot resamples
 * drawn with a generator seeded by seed, and q-values across features.
 * A feature with fewer than 3 rows or no spread gets NaN.  Returns 0, or
 * -1 with err (memory). */
int pflex_correlate(const double *x, const double *y, size_t n, size_t nf, unsigned boot,
                    unsigned long seed, double level, struct pflex_corr_row *out,
                    pflex_error_t *err);

/* The order in which to show rows[0..n): by |Spearman r| from the largest,
 * rows without one (NaN) last, ties by index.  Fills order[0..n). */
void pflex_corr_rank(const struct pflex_corr_row *rows, size_t n, size_t *order);

/* Pearson and Spearman (average ranks for ties) of x[0..n), y[0..n). */
double pflex_pearson(const double *x, const double *y, size_t n);
double pflex_spearman(const double *x, const double *y, size_t n);

/* Benjamini–Hochberg q-values of p[0..n) (NaN kept as NaN). */
void pflex_bh_qvalues(const double *p, size_t n, double *q);

#endif
