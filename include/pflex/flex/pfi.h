/* pflex/flex/pfi.h — the Power Flexibility Index, every metric of docs/contract.md §2.
 *
 * With the baseline at the highest cap (P0, T0) and, for each other cap k,
 * x_k = 1 - P_k/P0 the power reduction and L_k = 1 - T_k/T0 the throughput
 * loss:
 *
 *   ratio (the study's, the default):  PFI = mean of x_k / L_k over the
 *       capped points, leaving out caps that do not bind (x_k < 0.01) and
 *       losses within noise (L_k < 0.005).  > 1: inelastic (throughput falls
 *       slower than power), 1: proportional, < 1: elastic.
 *   area:  integral_0^1 (T/T0 - P/P0) d(P/P0) by the trapezoid rule through
 *       (0,0), the capped points in order of power, and (1,1).  0:
 *       proportional on average, > 0: inelastic.
 *   elasticity:  PFI = 1 - alpha, alpha the least-squares slope of
 *       log T = alpha log P + c over every measured point.
 *   loss-area (pflex's own, pflex_pfi_compute):
 *       PFI = 1 - (integral_0^R L(x) dx) / (R^2 / 2),   R = min(X, x_max);
 *       1: power cuts cost nothing; 0: throughput falls in proportion.
 *
 * pflex_pfi_eval computes any of them from one job's sweep points.
 */
#ifndef PFLEX_PFI_H
#define PFLEX_PFI_H

#include "pflex/flex/curve.h"

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

/* Ratio PFI of one job's sweep points (any order; points at the same cap
 * are averaged first, weighted by their rows).  The baseline is the
 * highest cap.  grid_w (ngrid caps, W) restricts the capped points to
 * those caps (each within 0.5 W of a measured cap; the baseline is always the
 * highest measured cap); NULL/0: every point.  Returns 0, or -1 with err set
 * (no points, baseline not positive, a grid cap that was not measured). */
int pflex_pfi_ratio(const struct pflex_sweep_point *pts, size_t npts,
                    const double *grid_w, size_t ngrid,
                    struct pflex_pfi_ratio *out, pflex_error_t *err);

struct pflex_pfi {
    int valid;              /* 0: no cap binds, pfi undefined */
    const char *reason;     /* why not valid (static string) */
    double pfi;
    double range_used;      /* R */
    double shed[4];         /* shed at Flex 0..3 floors */
};

/* PFI of a curve over range X (X > 0). */
void pflex_pfi_compute(const struct pflex_curve *c, double range, struct pflex_pfi *out);

/* Pointwise PFI(x) = x / L(x) (docs/contract.md §2, the ratio form) for 0 < x <= x_max;
 * NaN outside, +-inf where L(x) = 0. */
double pflex_pfi_at(const struct pflex_curve *c, double x);

/* ---- Every metric, one entry point ---------------------------------- */

enum pflex_pfi_metric {
    PFLEX_PFI_METRIC_RATIO,
    PFLEX_PFI_METRIC_AREA,
    PFLEX_PFI_METRIC_ELASTICITY,
    PFLEX_PFI_METRIC_LOSS_AREA,
};
#define PFLEX_PFI_METRICS 4

/* "ratio", "area", "elasticity", "loss-area"; NULL for anything else. */
const char *pflex_pfi_metric_name(enum pflex_pfi_metric m);

/* The metric named s (exactly one of the names above).  Returns 0, or -1
 * with err naming the value and the choices. */
int pflex_pfi_metric_parse(const char *s, enum pflex_pfi_metric *out, pflex_error_t *err);

/* Most caps a --grid may list. */
#define PFLEX_PFI_GRID_MAX 64

/* A cap grid "W,W,...": each a finite number of watts in (0, 100000], no
 * two equal, spaces around a cap allowed, at most PFLEX_PFI_GRID_MAX.
 * Writes them to grid_w (room for PFLEX_PFI_GRID_MAX) in ascending order
 * and *n.  Returns 0, or -1 with err naming the bad item. */
int pflex_pfi_grid_parse(const char *s, double *grid_w, size_t *n, pflex_error_t *err);

struct pflex_pfi_opts {
    enum pflex_pfi_metric metric;
    /* The caps to consider, W (each within 0.5 W of a measured cap); the
     * baseline, the highest measured cap, is always considered.  NULL/0:
     * every measured cap.  Applies to every metric. */
    const double *grid_w;
    size_t ngrid;
    double range;           /* loss-area's X in (0, 1]; <= 0: PFLEX_PFI_RANGE_DEFAULT */
    /* 0: a grid cap this job was not measured at is an error; 1: it is
     * counted in grid_missing and the metric uses the grid caps it has. */
    int grid_partial;
};

/* What became of one measured point. */
enum pflex_pfi_use {
    PFLEX_PFI_USE_BASELINE,     /* the highest cap */
    PFLEX_PFI_USE_USED,         /* entered the metric */
    PFLEX_PFI_USE_OFF_GRID,     /* not one of the grid's caps: not considered */
    PFLEX_PFI_USE_NOT_BINDING,  /* dropped: ratio x < 0.01; area, loss-area x <= 0 */
    PFLEX_PFI_USE_NOISE,        /* dropped (ratio): binds, but L < 0.005 */
    PFLEX_PFI_USE_NOT_POSITIVE, /* dropped (elasticity): T or P is 0, no logarithm */
};

/* "baseline", "used", "off-grid", "not-binding", "noise", "not-positive". */
const char *pflex_pfi_use_name(enum pflex_pfi_use u);

struct pflex_pfi_point {
    double cap_w, power_w, throughput;  /* averaged over rows at the same cap */
    double x, loss;                     /* 1 - P/P0, 1 - T/T0 */
    enum pflex_pfi_use use;
};

struct pflex_pfi_result {
    enum pflex_pfi_metric metric;
    int valid;              /* 0: no PFI (pfi NaN), reason says why */
    const char *reason;     /* static string, NULL when valid */
    double pfi;
    /* Capped points (every cap but the baseline) in the grid: used, and
     * dropped by the metric's rules (by reason below).  Off-grid points are
     * counted apart.  Elasticity fits the baseline too: points_used + 1
     * points. */
    unsigned points_used, points_dropped;
    unsigned not_binding, noise, not_positive, off_grid;
    unsigned grid_missing;  /* grid caps not measured (grid_partial only) */
    double range_used;      /* loss-area: R; NaN for the other metrics */
    double alpha, r2;       /* elasticity: slope, R^2 of the fit; NaN otherwise */
    /* The job, from every measured point whatever the grid. */
    double p0_w, t0, cap0_w;
    double x_max;           /* largest reduction measured (0: no cap binds) */
    double shed[4];         /* shed at the Flex 0..3 floors */
    int shed_bound[4];      /* 1: the floor held up to x_max, shed is a lower bound */
    size_t npoints;         /* one per distinct measured cap, ascending cap */
    struct pflex_pfi_point *points;
};

/* The PFI in opts->metric of one job's sweep points (any order; points at
 * the same cap are averaged, weighted by their rows).  Returns 0 and *out
 * (free with pflex_pfi_result_fini; a job without a PFI is still 0, with
 * valid = 0), or -1 with err set: no points, baseline power or throughput
 * not positive, a grid cap that was not measured (unless grid_partial), a
 * bad range, out of
 * memory (errno ENOMEM; EINVAL for the others). */
int pflex_pfi_eval(const struct pflex_sweep_point *pts, size_t npts,
                   const struct pflex_pfi_opts *opts, struct pflex_pfi_result *out,
                   pflex_error_t *err);
void pflex_pfi_result_fini(struct pflex_pfi_result *r);

#endif
