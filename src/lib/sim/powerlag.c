/* powerlag.c — a GPU's power after a limit change, and its reading
 * (pflex/sim/powerlag.h). */
#include <math.h>
#include <string.h>
#include "pflex/sim/powerlag.h"

void pflex_power_lag_init(struct pflex_power_lag *l, double tau_s, double window_s, double t, double power_w)
{
    l->tau_s = tau_s > 0 ? tau_s : 0;
    l->window_s = window_s > 0 ? window_s : 0;
    l->n = 1;
    /* steady since long before: the window reads it whole */
    l->seg[0].t0 = t - l->window_s - 1;
    l->seg[0].p0 = l->seg[0].pss = power_w;
}

static double seg_at(const struct pflex_power_lag *l, size_t k, double t)
{
    double d = t - l->seg[k].t0;
    if (!(l->tau_s > 0) || d <= 0)
        return d <= 0 && l->tau_s > 0 ? l->seg[k].p0 : l->seg[k].pss;
    return l->seg[k].pss + (l->seg[k].p0 - l->seg[k].pss) * exp(-d / l->tau_s);
}

/* The integral of segment k over [a, b] (inside its span), W s. */
static double seg_int(const struct pflex_power_lag *l, size_t k, double a, double b)
{
    if (b <= a)
        return 0;
    double pss = l->seg[k].pss, d = l->seg[k].p0 - pss, t0 = l->seg[k].t0;
    if (!(l->tau_s > 0))
        return pss * (b - a);
    return pss * (b - a) + d * l->tau_s * (exp(-(a - t0) / l->tau_s) - exp(-(b - t0) / l->tau_s));
}

double pflex_power_lag_true_w(const struct pflex_power_lag *l, double t)
{
    size_t k = l->n - 1;
    while (k > 0 && l->seg[k].t0 > t)
        k--;
    return seg_at(l, k, t);
}

void pflex_power_lag_step(struct pflex_power_lag *l, double t, double pss_w)
{
    double last = l->seg[l->n - 1].t0;
    if (t < last)
        t = last;
    double p0 = pflex_power_lag_true_w(l, t);
    if (l->n == PFLEX_POWER_LAG_SEGS) {
        /* the oldest ends where the next begins: merged into it as a
         * steady past (it is out of the window unless changes come faster
         * than window / PFLEX_POWER_LAG_SEGS) */
        memmove(&l->seg[0], &l->seg[1], (l->n - 1) * sizeof l->seg[0]);
        l->n--;
    }
    l->seg[l->n].t0 = t;
    l->seg[l->n].p0 = p0;
    l->seg[l->n].pss = pss_w;
    l->n++;
}

double pflex_power_lag_read_w(const struct pflex_power_lag *l, double t)
{
    if (!(l->window_s > 0))
        return pflex_power_lag_true_w(l, t);
    double a = t - l->window_s, sum = 0;
    for (size_t k = 0; k < l->n; k++) {
        double lo = k == 0 ? -INFINITY : l->seg[k].t0;
        double hi = k + 1 < l->n ? l->seg[k + 1].t0 : INFINITY;
        lo = lo > a ? lo : a;
        hi = hi < t ? hi : t;
        if (hi > lo)
            sum += k == 0 && lo < l->seg[0].t0 ? l->seg[0].p0 * (fmin(hi, l->seg[0].t0) - lo)
                                                       + seg_int(l, 0, fmax(lo, l->seg[0].t0), hi)
                                               : seg_int(l, k, lo, hi);
    }
    return sum / l->window_s;
}

double pflex_power_lag_target_w(const struct pflex_power_lag *l)
{
    return l->seg[l->n - 1].pss;
}
