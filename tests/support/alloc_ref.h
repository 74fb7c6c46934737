/* alloc_ref.h — reference pieces the allocation tests check the library
 * against, written from docs/contract.md §2 and not taken from it. */
#ifndef PFLEX_TEST_ALLOC_REF_H
#define PFLEX_TEST_ALLOC_REF_H

#include "pflex/flex/alloc.h"

/* Linear interpolation of v (one value per curve point) over the job's
 * reductions, clipped to the curve's ends. */
double ref_interp(const struct pflex_alloc_job *j, const double *v, double x);

/* L_j(x) on the measured curve: 0 at and below x = 0. */
double ref_loss(const struct pflex_alloc_job *j, double x);

#endif
