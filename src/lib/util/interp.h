/* interp.h — linear interpolation on ascending abscissae (internal): what
 * every curve of the library (loss curves, caps over reductions, learnt
 * curves) is read with. */
#ifndef PFLEX_INTERP_H
#define PFLEX_INTERP_H

#include <stddef.h>

/* ys at x, interpolated linearly between the two points around x (found by
 * bisection), clipped to ys[0] at and below xs[0] and to ys[n - 1] at and
 * above xs[n - 1].  xs strictly ascending, n >= 1. */
double pflex_interp_linear(const double *xs, const double *ys, size_t n, double x);

#endif
