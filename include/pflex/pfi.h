/* pflex/pfi.h — the Power Flexibility Index (docs/contract.md §2).
 *
 * The study's PFI (the default, "ratio"): for each capped point k, with
 * x_k = 1 - P_k/P0 the power reduction and L_k = 1 - T_k/T0 the throughput
 * loss against the highest cap,
 *
 *   PFI_k = x_k / L_k,   PFI = mean of PFI_k over the points used,
 *
 * leaving out points whose cap does not bind (x_k < 0.01) and points whose
 * loss is within measurement noise (L_k < 0.005).  > 1: inelastic (throughput
 * falls slower than power), 1: proportional, < 1: elastic.
 *
 * pflex's own grid-independent variant ("loss-area", pflex_pfi_compute):
 *
 *   PFI = 1 - (integral_0^R L(x) dx) / (R^2 / 2),   R = min(X, x_max)
 *
 * 1: power cuts cost nothing; 0: throughput falls in proportion to power.
 */
#ifndef PFLEX_PFI_H
#define PFLEX_PFI_H

#include "pflex/curve.h"

#define PFLEX_PFI_RANGE_DEFAULT 0.30

/* The ratio metric's drop rules (docs/contract.md §2): a point with x_k below
 * PFLEX_PFI_MIN_REDUCTION does not bind, one with L_k below
 * PFLEX_PFI_MIN_LOSS is within noise. */
#define PFLEX_PFI_MIN_REDUCTION 0.01
#define PFLEX_PFI_MIN_LOSS 0.005

struct pflex_pfi_ratio {
    int valid;              /* 0: no point left, pfi is NaN */
    const char *reason;     /* why not valid (static string) */
    double pfi;             /* mean of x_k / L_k over the points used */
    unsigned used;          /* points_used */
    unsigned not_binding;   /* dropped: x_k < PFLEX_PFI_MIN_REDUCTION (x_k <= 0 included) */
    unsigned noise;         /* dropped: x_k binds but L_k < PFLEX_PFI_MIN_LOSS */
};

/* Ratio PFI of reductions x[i] and losses loss[i] (i < n, any order; points
 * with x = 0 and loss = 0, such as a curve's origin, are skipped and not
 * counted). */
void pflex_pfi_ratio_xl(const double *x, const double *loss, size_t n,
                        struct pflex_pfi_ratio *out);

/* Ratio PFI of one job's averaged sweep points (any order).  The baseline is
 * the highest cap.  grid_w (ngrid caps, W) restricts the capped points to
 * those caps (each within 0.5 W of a measured cap; the baseline is always the
 * highest measured cap); NULL/0: every point.  Returns 0, or -1 with err set
 * (no points, baseline not positive, a grid cap that was not measured). */
int pflex_pfi_ratio(const struct pflex_sweep_point *pts, size_t npts,
                    const double *grid_w, size_t ngrid,
                    struct pflex_pfi_ratio *out, pflex_error_t *err);

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
