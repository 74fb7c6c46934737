/* pflex/pfi.h — the Power Flexibility Index (SPEC §2).
 *
 *   PFI = 1 - (integral_0^R L(x) dx) / (R^2 / 2),   R = min(X, x_max)
 *
 * 1: power cuts cost nothing; 0: throughput falls in proportion to power;
 * below 0: worse than proportional.
 */
#ifndef PFLEX_PFI_H
#define PFLEX_PFI_H

#include "pflex/curve.h"

#define PFLEX_PFI_RANGE_DEFAULT 0.30

/* Service floors of the Emerald flex tiers: Flex 0..3. */
extern const double pflex_tier_floors[4];

struct pflex_pfi {
    int valid;              /* 0: no cap binds, pfi undefined */
    const char *reason;     /* why not valid (static string) */
    double pfi;
    double range_used;      /* R */
    double shed[4];         /* shed at Flex 0..3 floors */
};

/* PFI of a curve over range X (X > 0). */
void pflex_pfi_compute(const struct pflex_curve *c, double range, struct pflex_pfi *out);

/* Pointwise PFI(x) = 1 - L(x)/x for 0 < x <= x_max; NaN otherwise. */
double pflex_pfi_at(const struct pflex_curve *c, double x);

#endif
