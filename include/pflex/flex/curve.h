/* pflex/flex/curve.h — a job's loss curve L(x) (docs/contract.md §2).
 *
 * x = 1 - P/P0 is the per-GPU power reduction against the baseline (the
 * highest cap), L = 1 - T/T0 the throughput loss.  The curve is the
 * piecewise-linear interpolation through (0,0) and every binding point
 * (x > 0) in ascending x; nothing is extrapolated past x_max.
 */
#ifndef PFLEX_CURVE_H
#define PFLEX_CURVE_H

#include <stddef.h>
#include "pflex/util/error.h"
#include "pflex/io/sweep.h"

struct pflex_curve {
    double p0_w;        /* baseline mean per-GPU power, W */
    double t0;          /* baseline throughput */
    double cap0_w;      /* baseline (highest) cap, W */
    size_t n;           /* points, (0,0) included: n >= 1 */
    double *x;          /* ascending reductions, x[0] = 0 */
    double *loss;       /* loss[0] = 0 */
    double *cap_w;      /* the cap each point was measured at; cap_w[0], the
                         * origin's: the lowest cap that does not bind above
                         * every binding one (cap0_w when all below bind) */
    double x_max;       /* x[n-1]; 0 when no cap binds */
};

/* Build the curve of one job from its averaged sweep points (any order).
 * Fails when the baseline throughput is not positive.  Free with
 * pflex_curve_fini. */
int pflex_curve_init(struct pflex_curve *c, const struct pflex_sweep_point *pts,
                     size_t npts, pflex_error_t *err);
void pflex_curve_fini(struct pflex_curve *c);

/* The same curve built into caller storage, for many curves in one arena:
 * store holds 3 * npts doubles (x, loss, cap_w) and must outlive c.  No
 * allocation; do not call pflex_curve_fini on c. */
int pflex_curve_init_in(struct pflex_curve *c, const struct pflex_sweep_point *pts,
                        size_t npts, double *store, pflex_error_t *err);

/* L(x) by linear interpolation, x clipped to [0, x_max]. */
double pflex_curve_loss(const struct pflex_curve *c, double x);

/* Integral of L from 0 to r (r clipped to [0, x_max]). */
double pflex_curve_area(const struct pflex_curve *c, double r);

/* shed(s): the largest x <= x_max with L(x') <= 1 - s for all x' <= x
 * (first crossing, linear interpolation). */
double pflex_curve_shed(const struct pflex_curve *c, double floor);

#endif
