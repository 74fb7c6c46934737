/* predict_curve.c — a job's predicted loss curve as sweep points, and
 * what it sheds at each service tier (pflex/flex/predict.h). */
#include <math.h>
#include "pflex/flex/curve.h"
#include "pflex/flex/predict.h"
#include "pflex/io/sweep.h"

size_t pflex_model_curve_points(const pflex_model_t *m, const double *mean, double p0_w,
                                double t0, double cap0_w, struct pflex_sweep_point *pts)
{
    size_t n = 0;
    double cap0 = isnan(cap0_w) ? p0_w : cap0_w;
    for (size_t k = m->ncut; k-- > 0;) {
        double x = m->cuts[k];
        pts[n].cap_w = cap0 * (1 - x);
        pts[n].power_w = p0_w * (1 - x);
        pts[n].throughput = t0 * (1 - mean[1 + k]);
        pts[n].rows = 1;
        pts[n].line = 0;
        n++;
    }
    pts[n].cap_w = cap0;
    pts[n].power_w = p0_w;
    pts[n].throughput = t0;
    pts[n].rows = 1;
    pts[n].line = 0;
    return n + 1;
}

void pflex_model_predict_job(const pflex_model_t *m, const double *x, double p0_w, double t0,
                             double cap0_w, struct pflex_job_prediction *out)
{
    pflex_model_predict(m, x, out->mean, out->se);
    struct pflex_sweep_point pts[PFLEX_MODEL_MAX_CUTS + 1];
    size_t n = pflex_model_curve_points(m, out->mean, p0_w, t0, cap0_w, pts);
    struct pflex_curve cv;
    pflex_error_t err;
    for (int t = 0; t < 4; t++)
        out->shed[t] = NAN;
    if (pflex_curve_init(&cv, pts, n, &err) == 0) {
        for (int t = 1; t < 4; t++)
            out->shed[t] = pflex_curve_shed(&cv, pflex_tier_floors[t]);
        pflex_curve_fini(&cv);
    }
}
