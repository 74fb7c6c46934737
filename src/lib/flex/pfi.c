/* pfi.c — Power Flexibility Index. */
#include <math.h>
#include "pflex/pfi.h"

const double pflex_tier_floors[4] = {1.0, 0.90, 0.75, 0.50};

void pflex_pfi_compute(const struct pflex_curve *c, double range, struct pflex_pfi *out)
{
    out->valid = 0;
    out->reason = NULL;
    out->pfi = NAN;
    out->range_used = 0;
    for (int k = 0; k < 4; k++)
        out->shed[k] = pflex_curve_shed(c, pflex_tier_floors[k]);
    if (!(c->x_max > 0)) {
        out->reason = "no cap binds: every lower cap drew at least the baseline power";
        return;
    }
    double r = range < c->x_max ? range : c->x_max;
    out->range_used = r;
    out->pfi = 1.0 - pflex_curve_area(c, r) / (0.5 * r * r);
    out->valid = 1;
}

double pflex_pfi_at(const struct pflex_curve *c, double x)
{
    if (!(x > 0) || x > c->x_max)
        return NAN;
    return 1.0 - pflex_curve_loss(c, x) / x;
}
