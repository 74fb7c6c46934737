/* interp.c — see interp.h. */
#include "lib/util/interp.h"

double pflex_interp_linear(const double *xs, const double *ys, size_t n, double x)
{
    if (x <= xs[0])
        return ys[0];
    if (x >= xs[n - 1])
        return ys[n - 1];
    size_t lo = 0, hi = n - 1;          /* xs[lo] <= x < xs[hi] */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (xs[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    double t = (x - xs[lo]) / (xs[hi] - xs[lo]);
    return ys[lo] + t * (ys[hi] - ys[lo]);
}
