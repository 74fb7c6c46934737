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

/* Weighted isotonic regression (pool-adjacent-violators): the
 * non-decreasing fit[0..n) nearest y in weighted least squares (w NULL:
 * every weight 1; weights must be positive).  fit may be y.  O(n); one
 * allocation of n blocks.  Returns 0, or -1 with err set (out of memory). */
int pflex_isotonic_fit(const double *y, const double *w, size_t n, double *fit,
                       pflex_error_t *err);

/* The monotone reading of a job's sweep points for curves (docs/formats.md
 * "Monotone fit"): power made non-decreasing in the cap, then throughput
 * non-decreasing in the cap (so in the fitted power), each by
 * pflex_isotonic_fit weighted by the rows averaged at each cap.  A job
 * none of whose caps binds (its raw draw nowhere reaches BIND_NEAR of the
 * cap), or whose fitted draw is nowhere BIND_MIN or more under the
 * baseline's, is flat: every point gets the baseline's fitted draw and the
 * row-weighted mean throughput.  pts in ascending cap order, distinct caps (as a sweep holds
 * them); out receives n points (it may be pts), caps, rows and lines kept.
 * *changed (may be NULL) gets PFLEX_CURVE_FIT_MOVED when some power or
 * throughput moved, | PFLEX_CURVE_FIT_FLAT when flat.  PFI is defined on
 * the raw points and never reads this.  Returns 0, or -1 with err set
 * (caps out of order, a measured baseline throughput or power that is not
 * positive, out of memory). */
#define PFLEX_CURVE_FIT_METHOD "isotonic regression (pool-adjacent-violators) of power, " \
    "then throughput, on the cap, weighted by rows; flat where no cap binds"
#define PFLEX_CURVE_BIND_MIN 0.01     /* a cut under this does not bind */
#define PFLEX_CURVE_BIND_NEAR 0.90    /* a binding cap holds the draw above this of it */
enum { PFLEX_CURVE_FIT_MOVED = 1, PFLEX_CURVE_FIT_FLAT = 2 };
int pflex_curve_fit_points(const struct pflex_sweep_point *pts, size_t n,
                           struct pflex_sweep_point *out, int *changed, pflex_error_t *err);

/* A job whose fitted draw never falls with its cap (a flat curve: no cap
 * binds, c->n == 1) cut below its draw on the model of throughput
 * proportional to power (loss = x), down to min_cap_w, the GPU's lowest
 * settable cap: a second point (1 - min_cap_w/P0, same, min_cap_w), the
 * origin's cap moved to the draw (where a cap starts to bind).  The cap to
 * set for power P under the draw is then P itself.  Needs room for two
 * points in each of c's arrays.  Returns 1 when the point was added, 0 when
 * nothing changed (the curve is not flat, or min_cap_w is not under the
 * draw or not known, <= 0). */
int pflex_curve_flat_below(struct pflex_curve *c, double min_cap_w);

/* L(x) by linear interpolation, x clipped to [0, x_max]. */
double pflex_curve_loss(const struct pflex_curve *c, double x);

/* Integral of L from 0 to r (r clipped to [0, x_max]). */
double pflex_curve_area(const struct pflex_curve *c, double r);

/* shed(s): the largest x <= x_max with L(x') <= 1 - s for all x' <= x
 * (first crossing, linear interpolation). */
double pflex_curve_shed(const struct pflex_curve *c, double floor);

#endif
