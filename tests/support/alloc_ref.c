/* alloc_ref.c — see alloc_ref.h. */
#include "support/alloc_ref.h"

double ref_interp(const struct pflex_alloc_job *j, const double *v, double x)
{
    if (x <= 0)
        return v[0];
    for (size_t k = 1; k < j->npoints; k++)
        if (x <= j->x[k])
            return v[k - 1] + (v[k] - v[k - 1]) * (x - j->x[k - 1]) / (j->x[k] - j->x[k - 1]);
    return v[j->npoints - 1];
}

double ref_loss(const struct pflex_alloc_job *j, double x)
{
    return x <= 0 ? 0 : ref_interp(j, j->loss, x);
}
