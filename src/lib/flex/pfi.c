/* pfi.c — Power Flexibility Index. */
#include <math.h>
#include <stddef.h>
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

void pflex_pfi_ratio_xl(const double *x, const double *loss, size_t n,
                        struct pflex_pfi_ratio *out)
{
    double sum = 0;
    out->used = out->not_binding = out->noise = 0;
    for (size_t i = 0; i < n; i++) {
        if (x[i] == 0 && loss[i] == 0)
            continue;
        if (!(x[i] >= PFLEX_PFI_MIN_REDUCTION))
            out->not_binding++;
        else if (!(loss[i] >= PFLEX_PFI_MIN_LOSS))
            out->noise++;
        else {
            sum += x[i] / loss[i];
            out->used++;
        }
    }
    out->valid = out->used > 0;
    out->pfi = out->valid ? sum / out->used : NAN;
    out->reason = out->valid ? NULL
                : out->used + out->noise + out->not_binding == 0 ? "no capped point"
                : out->noise == 0 ? "no cap binds (every power reduction under 1%)"
                : "every loss within noise (under 0.5%)";
}

int pflex_pfi_ratio(const struct pflex_sweep_point *pts, size_t npts,
                    const double *grid_w, size_t ngrid,
                    struct pflex_pfi_ratio *out, pflex_error_t *err)
{
    if (npts == 0)
        return pflex_error_set(err, "no measurements");
    size_t b = 0;
    for (size_t i = 1; i < npts; i++)
        if (pts[i].cap_w > pts[b].cap_w)
            b = i;
    double p0 = pts[b].power_w, t0 = pts[b].throughput;
    if (!(t0 > 0))
        return pflex_error_set(err, "baseline throughput at %g W is not positive", pts[b].cap_w);
    if (!(p0 > 0))
        return pflex_error_set(err, "baseline power at %g W is not positive", pts[b].cap_w);
    for (size_t g = 0; g < ngrid; g++) {
        size_t i = 0;
        while (i < npts && !(fabs(pts[i].cap_w - grid_w[g]) <= 0.5))
            i++;
        if (i == npts)
            return pflex_error_set(err, "grid cap %g W was not measured", grid_w[g]);
    }
    double sum = 0;
    out->used = out->not_binding = out->noise = 0;
    for (size_t i = 0; i < npts; i++) {
        if (i == b)
            continue;
        if (ngrid) {
            size_t g = 0;
            while (g < ngrid && !(fabs(pts[i].cap_w - grid_w[g]) <= 0.5))
                g++;
            if (g == ngrid)
                continue;
        }
        double x = 1.0 - pts[i].power_w / p0, l = 1.0 - pts[i].throughput / t0;
        if (!(x >= PFLEX_PFI_MIN_REDUCTION))
            out->not_binding++;
        else if (!(l >= PFLEX_PFI_MIN_LOSS))
            out->noise++;
        else {
            sum += x / l;
            out->used++;
        }
    }
    out->valid = out->used > 0;
    out->pfi = out->valid ? sum / out->used : NAN;
    out->reason = out->valid ? NULL
                : out->noise + out->not_binding == 0 ? "no capped point"
                : out->noise == 0 ? "no cap binds (every power reduction under 1%)"
                : "every loss within noise (under 0.5%)";
    return 0;
}
