/* smooth.c — a measured curve's points joined as a GPU's curve runs
 * between them (pflex/site/simulate.h: pflex_sim_kind_smooth).
 *
 * A power cap slows the SM clock continuously (the firmware picks the
 * highest clock whose power fits), and a job's step time is a smooth
 * function of that clock, so throughput and power have no corner at the
 * caps a sweep happened to measure.  Straight lines between the points put
 * all of the curve's bend at those caps, and a planner that knows the
 * curves (the oracle) then parks jobs exactly on them: an optimum made by
 * the sweep's grid, not by the job.  Steffen's monotone cubic (M. Steffen,
 * "A simple method for monotonic interpolation in one dimension", Astron.
 * Astrophys. 239, 443, 1990; GSL's gsl_interp_steffen) goes through every
 * measured point, keeps the data's monotonicity, never overshoots between
 * two points and has a continuous slope; it is read on a grid of step_w
 * (whole watts at 1 W) and between grid points linearly, as every curve of
 * the library is read. */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_interp.h>
#include <math.h>
#include <stdlib.h>
#include "pflex/site/simulate.h"

/* Grid points strictly between caps a and b (a > b), step_w apart from b. */
static size_t inner(double a, double b, double step_w)
{
    double m = ceil((a - b) / step_w - 1e-9) - 1;
    return m > 0 ? (size_t)m : 0;
}

size_t pflex_sim_kind_smooth_n(const struct pflex_sim_kind *k, double step_w)
{
    size_t n = k->n;
    if (k->n < 3 || !(step_w > 0))
        return n;
    for (size_t i = 1; i < k->n; i++)
        n += inner(k->cap_w[i - 1], k->cap_w[i], step_w);
    return n;
}

int pflex_sim_kind_smooth(const struct pflex_sim_kind *k, double step_w, double *store,
                          struct pflex_sim_kind *out, pflex_error_t *err)
{
    size_t n = k->n, m = pflex_sim_kind_smooth_n(k, step_w);
    *out = *k;
    out->n = m;
    out->cap_w = store;
    out->power_w = store + m;
    out->fraction = store + 2 * m;
    double *cap = store, *pw = store + m, *fr = store + 2 * m;
    if (m == n) {           /* two points (or no step): the line itself */
        for (size_t i = 0; i < n; i++) {
            cap[i] = k->cap_w[i];
            pw[i] = k->power_w[i];
            fr[i] = k->fraction[i];
        }
        return 0;
    }
    /* GSL wants the abscissae ascending: the points reversed */
    double *x = malloc(3 * n * sizeof *x);
    gsl_interp *ip = gsl_interp_alloc(gsl_interp_steffen, n);
    gsl_interp *iq = gsl_interp_alloc(gsl_interp_steffen, n);
    gsl_interp_accel *acc = gsl_interp_accel_alloc();
    int rc = 0;
    if (!x || !ip || !iq || !acc) {
        rc = pflex_error_sys(err, "out of memory");
        goto out;
    }
    double *yp = x + n, *yf = x + 2 * n;
    for (size_t i = 0; i < n; i++) {
        x[i] = k->cap_w[n - 1 - i];
        yp[i] = k->power_w[n - 1 - i];
        yf[i] = k->fraction[n - 1 - i];
        if (i && !(x[i] > x[i - 1])) {
            rc = pflex_error_set(err, "simulate: curve '%s': caps must descend strictly", k->name);
            goto out;
        }
    }
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int e = gsl_interp_init(ip, x, yp, n);
    if (!e)
        e = gsl_interp_init(iq, x, yf, n);
    size_t o = 0;
    for (size_t i = 0; !e && i < n; i++) {
        cap[o] = k->cap_w[i];
        pw[o] = k->power_w[i];
        fr[o++] = k->fraction[i];
        if (i + 1 == n)
            break;
        size_t q = inner(k->cap_w[i], k->cap_w[i + 1], step_w);
        for (size_t j = q; j >= 1 && !e; j--) {    /* descending caps */
            double c = k->cap_w[i + 1] + (double)j * step_w, v, f;
            e = gsl_interp_eval_e(ip, x, yp, c, acc, &v);
            if (!e)
                e = gsl_interp_eval_e(iq, x, yf, c, acc, &f);
            cap[o] = c;
            pw[o] = v;
            fr[o++] = f;
        }
    }
    gsl_set_error_handler(old);
    if (e)
        rc = pflex_error_set(err, "simulate: curve '%s': cannot interpolate (%s)", k->name, gsl_strerror(e));
out:
    gsl_interp_accel_free(acc);
    gsl_interp_free(iq);
    gsl_interp_free(ip);
    free(x);
    return rc;
}
