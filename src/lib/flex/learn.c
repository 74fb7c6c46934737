/* learn.c — online loss curves: binned observations, a Bayesian blend
 * with a prior curve point by point, isotonic regression (pool adjacent
 * violators) through (0, 0), and the exploration rule (pflex/flex/learn.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/flex/learn.h"
#include "lib/util/interp.h"

struct bin {
    unsigned n;
    double cap, power, tput;    /* running means */
    double m2;                  /* sum of squared deviations of throughput */
};

struct pflex_learn {
    struct pflex_learn_config c;
    double *prior_x, *prior_loss;
    size_t nbins;
    struct bin *bins;
    size_t count, used;
    size_t *idx;                /* the used bins' indices, ascending (used of them):
                                 * a fit reads those, not every watt of the range */
};

int pflex_learn_create(const struct pflex_learn_config *c, pflex_learn_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!(c->min_cap_w > 0) || !(c->max_cap_w > c->min_cap_w) || !isfinite(c->max_cap_w)
        || c->max_cap_w > 1e5)
        return pflex_error_set(err, "learn: the cap range must satisfy 0 < min < max <= 100 kW");
    pflex_learn_t *l = calloc(1, sizeof *l);
    if (!l)
        return pflex_error_set(err, "out of memory");
    l->c = *c;
    if (!(l->c.bin_w > 0))
        l->c.bin_w = 1;
    if (!(l->c.noise_sd > 0))
        l->c.noise_sd = 0.03;
    if (!(l->c.prior_sd > 0))
        l->c.prior_sd = 0.10;
    if (!(l->c.grid_dx > 0))
        l->c.grid_dx = 0.02;
    if (!(l->c.corr_dx > 0))
        l->c.corr_dx = 0.10;
    if (!(l->c.slope_sd > 0))
        l->c.slope_sd = 1.0;
    if (!(l->c.smooth_dx > 0))
        l->c.smooth_dx = 0.02;
    if (!(l->c.curv_q > 0))
        l->c.curv_q = 20;
    l->c.prior_x = l->c.prior_loss = NULL;
    if (c->prior_n) {
        if (c->prior_n < 2 || !c->prior_x || !c->prior_loss || c->prior_x[0] != 0) {
            free(l);
            return pflex_error_set(err, "learn: a prior curve needs 2 or more points from x = 0");
        }
        for (size_t i = 0; i < c->prior_n; i++)
            if (!isfinite(c->prior_x[i]) || !isfinite(c->prior_loss[i])
                || (i && !(c->prior_x[i] > c->prior_x[i - 1]))) {
                free(l);
                return pflex_error_set(err, "learn: prior point %zu is out of order or not finite", i);
            }
        l->prior_x = malloc(c->prior_n * sizeof *l->prior_x);
        l->prior_loss = malloc(c->prior_n * sizeof *l->prior_loss);
        if (!l->prior_x || !l->prior_loss) {
            pflex_learn_destroy(l);
            return pflex_error_set(err, "out of memory");
        }
        memcpy(l->prior_x, c->prior_x, c->prior_n * sizeof *l->prior_x);
        memcpy(l->prior_loss, c->prior_loss, c->prior_n * sizeof *l->prior_loss);
    }
    l->nbins = (size_t)ceil((l->c.max_cap_w - l->c.min_cap_w) / l->c.bin_w) + 1;
    l->bins = calloc(l->nbins, sizeof *l->bins);
    l->idx = malloc(l->nbins * sizeof *l->idx);
    if (!l->bins || !l->idx) {
        pflex_learn_destroy(l);
        return pflex_error_set(err, "out of memory");
    }
    *out = l;
    return 0;
}

void pflex_learn_destroy(pflex_learn_t *l)
{
    if (!l)
        return;
    free(l->prior_x);
    free(l->prior_loss);
    free(l->bins);
    free(l->idx);
    free(l);
}

/* Bin 0 holds the largest cap: the baseline. */
static size_t bin_of(const pflex_learn_t *l, double cap_w)
{
    double k = floor((l->c.max_cap_w - cap_w) / l->c.bin_w + 0.5);
    if (k < 0)
        k = 0;
    if (k > (double)(l->nbins - 1))
        k = (double)(l->nbins - 1);
    return (size_t)k;
}

int pflex_learn_observe(pflex_learn_t *l, double cap_w, double power_w, double throughput,
                        pflex_error_t *err)
{
    if (!isfinite(cap_w) || !isfinite(power_w) || !isfinite(throughput))
        return pflex_error_set(err, "learn: an observation must be finite");
    if (cap_w < l->c.min_cap_w - l->c.bin_w || cap_w > l->c.max_cap_w + l->c.bin_w)
        return pflex_error_set(err, "learn: cap %g W is outside %g..%g W", cap_w, l->c.min_cap_w,
                               l->c.max_cap_w);
    if (!(power_w > 0) || power_w > 1e5)
        return pflex_error_set(err, "learn: power %g W is out of range", power_w);
    if (throughput < 0)
        return pflex_error_set(err, "learn: throughput cannot be negative");
    size_t k = bin_of(l, cap_w);
    struct bin *b = &l->bins[k];
    if (b->n == 0) {
        size_t u = l->used;
        while (u > 0 && l->idx[u - 1] > k)
            u--;
        memmove(l->idx + u + 1, l->idx + u, (l->used - u) * sizeof *l->idx);
        l->idx[u] = k;
        l->used++;
    }
    b->n++;
    double d = throughput - b->tput;
    b->tput += d / b->n;
    b->m2 += d * (throughput - b->tput);
    b->power += (power_w - b->power) / b->n;
    b->cap += (cap_w - b->cap) / b->n;
    l->count++;
    return 0;
}

size_t pflex_learn_bins_get(const pflex_learn_t *l, struct pflex_learn_bin *out, size_t max)
{
    size_t m = 0;
    for (size_t u = 0; u < l->used; u++) {
        const struct bin *b = &l->bins[l->idx[u]];
        if (m < max)
            out[m] = (struct pflex_learn_bin){b->n, b->cap, b->power, b->tput, b->m2};
        m++;
    }
    return m;
}

int pflex_learn_bins_set(pflex_learn_t *l, const struct pflex_learn_bin *b, size_t n,
                         pflex_error_t *err)
{
    struct bin *nb = calloc(l->nbins, sizeof *nb);
    if (!nb)
        return pflex_error_set(err, "out of memory");
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const struct pflex_learn_bin *x = &b[i];
        if (!x->n || !isfinite(x->cap_w) || !isfinite(x->power_w) || !isfinite(x->tput) || !isfinite(x->m2)
            || x->cap_w < l->c.min_cap_w - l->c.bin_w || x->cap_w > l->c.max_cap_w + l->c.bin_w
            || !(x->power_w > 0) || x->power_w > 1e5 || x->tput < 0 || x->m2 < 0) {
            free(nb);
            return pflex_error_set(err, "learn: bin %zu is malformed or outside %g..%g W", i, l->c.min_cap_w,
                                   l->c.max_cap_w);
        }
        struct bin *d = &nb[bin_of(l, x->cap_w)];
        if (d->n) {
            free(nb);
            return pflex_error_set(err, "learn: bins %zu and another fall in one", i);
        }
        *d = (struct bin){x->n, x->cap_w, x->power_w, x->tput, x->m2};
        count += x->n;
    }
    free(l->bins);
    l->bins = nb;
    l->count = count;
    l->used = 0;
    for (size_t k = 0; k < l->nbins; k++)
        if (nb[k].n)
            l->idx[l->used++] = k;
    return 0;
}

size_t pflex_learn_count(const pflex_learn_t *l)
{
    return l->count;
}

size_t pflex_learn_bins(const pflex_learn_t *l)
{
    return l->used;
}

unsigned pflex_learn_bin_count(const pflex_learn_t *l, double cap_w)
{
    return isfinite(cap_w) ? l->bins[bin_of(l, cap_w)].n : 0;
}

void pflex_learn_curve_init(struct pflex_learn_curve *c)
{
    memset(c, 0, sizeof *c);
}

void pflex_learn_curve_fini(struct pflex_learn_curve *c)
{
    free(c->x);
    free(c->loss);
    free(c->sd);
    free(c->cap_w);
    free(c->count);
    memset(c, 0, sizeof *c);
}

static double prior_at(const pflex_learn_t *l, double x)
{
    if (l->prior_x) {
        size_t n = l->c.prior_n;
        if (x <= 0)
            return 0;
        if (x >= l->prior_x[n - 1]) {
            /* past the prior's range: its last slope, never flatter than
             * proportional loss beyond it (no optimism where nothing is known) */
            double s = (l->prior_loss[n - 1] - l->prior_loss[n - 2])
                       / (l->prior_x[n - 1] - l->prior_x[n - 2]);
            if (s < 1)
                s = 1;
            return l->prior_loss[n - 1] + s * (x - l->prior_x[n - 1]);
        }
        size_t i = 1;
        while (l->prior_x[i] < x)
            i++;
        double f = (x - l->prior_x[i - 1]) / (l->prior_x[i] - l->prior_x[i - 1]);
        return l->prior_loss[i - 1] + f * (l->prior_loss[i] - l->prior_loss[i - 1]);
    }
    double pfi = l->c.prior_pfi > 0 ? l->c.prior_pfi : 1;
    return x / pfi;
}

struct pt {
    double x, y, w, cap;
    unsigned n;
};

static int cmp_pt(const void *a, const void *b)
{
    double d = ((const struct pt *)a)->x - ((const struct pt *)b)->x;
    return (d > 0) - (d < 0);
}

/* How far under its cap a reading drew, W (never negative). */
static double headroom(const struct pt *p, double p0)
{
    double d = p->cap - p0 * (1 - p->x);
    return d > 0 ? d : 0;
}

static int sorted_pts(const struct pt *p, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (p[i].x < p[i - 1].x)
            return 0;
    return 1;
}

/* pts[1, nd) and pts[nd, np) each ascending in x: merged into pts[1, np)
 * ascending, the fitted point first at a tie; g: room for np - nd. */
static void merge_pts(struct pt *pts, size_t nd, size_t np, struct pt *g)
{
    size_t ng = np - nd;
    memcpy(g, pts + nd, ng * sizeof *g);
    size_t i = nd, j = ng, o = np;
    while (j > 0) {
        if (i > 1 && pts[i - 1].x > g[j - 1].x)
            pts[--o] = pts[--i];
        else
            pts[--o] = g[--j];
    }
}

/* A reading's tricube weight at distance d of a reach h. */
static double tricube(double d, double h)
{
    double u = fabs(d) / h, k = 1 - u * u * u;
    return k * k * k;
}

/* The sums a weighted local line is solved from: pts[lo, hi) less
 * pts[skip] around xi (tricube weights of reach h, each reading weighed by
 * its precision; the origin, index 0, as exact).  0 when they do not fix a
 * line. */
struct line_sums {
    double S0, S1, S2, T0, T1, det;
    size_t m;
};

static int line_sums(const struct pt *pts, size_t lo, size_t hi, size_t skip, double xi, double h,
                     struct line_sums *ls)
{
    double S0 = 0, S1 = 0, S2 = 0, T0 = 0, T1 = 0;
    size_t m = 0;
    for (size_t j = lo; j < hi; j++) {
        double u = fabs(pts[j].x - xi) / h, k = 1 - u * u * u;
        double w = (j ? pts[j].w : 1e12) * k * k * k, dx = pts[j].x - xi;
        if (j == skip || !(w > 0))
            continue;
        S0 += w;
        S1 += w * dx;
        S2 += w * dx * dx;
        T0 += w * pts[j].y;
        T1 += w * dx * pts[j].y;
        m++;
    }
    double det = S0 * S2 - S1 * S1;
    *ls = (struct line_sums){S0, S1, S2, T0, T1, det, m};
    return m >= 2 && det > 1e-12 * S0 * S2;
}

/* A weighted local line through the readings pts[lo, hi) around xi
 * (line_sums): its value at xi (*a), that value's variance
 * (*v) and the readings' standardized squared residuals about the line
 * (*chi2) with their degrees of freedom (*dof).  0 when the readings do
 * not fix a line. */
static int local_line(const struct pt *pts, size_t lo, size_t hi, double xi, double h, double *a,
                      double *v, double *chi2, double *dof)
{
    struct line_sums ls;
    if (!line_sums(pts, lo, hi, SIZE_MAX, xi, h, &ls))
        return 0;
    double S0 = ls.S0, S1 = ls.S1, S2 = ls.S2, T0 = ls.T0, T1 = ls.T1, det = ls.det;
    size_t m = ls.m;
    double b = (S0 * T1 - S1 * T0) / det;
    *a = (S2 * T0 - S1 * T1) / det;
    *v = 0;
    *chi2 = 0;
    for (size_t j = lo; j < hi; j++) {
        double wj = j ? pts[j].w : 1e12, kk = tricube(pts[j].x - xi, h);
        if (!(wj * kk > 0))
            continue;
        double dx = pts[j].x - xi, lj = wj * kk * (S2 - S1 * dx) / det, r = pts[j].y - *a - b * dx;
        *v += lj * lj / wj;
        if (j)
            *chi2 += wj * r * r;
    }
    *dof = (double)m - 2;
    return 1;
}

/* The line local_line fits through pts[lo, hi) less pts[skip], at xi
 * (*a), its variance from the readings' noise (*v), and the variance of
 * what a line misses of the curve itself at xi (*b) when the curve's slope
 * is a Wiener process of variance q per unit of x (as past the deepest
 * reading, extend): the line's weights l_j reproduce a constant and a
 * slope, so the miss is sum l_j R_j, R the curve's departure from its
 * tangent at xi, of covariance q (d1^2 d2 / 2 - d1^3 / 6) for distances
 * d1 <= d2 on one side of xi (the two sides independent).  0 when the
 * others do not fix a line. */
static int loo_line(const struct pt *pts, size_t lo, size_t hi, size_t skip, double xi, double h,
                    double q, double *a, double *v, double *b)
{
    struct line_sums ls;
    if (!line_sums(pts, lo, hi, skip, xi, h, &ls))
        return 0;
    double S1 = ls.S1, S2 = ls.S2, det = ls.det;
    *a = (S2 * ls.T0 - S1 * ls.T1) / det;
    *v = 0;
    *b = 0;
    /* each side from its farthest reading in: A and B the sums of l d
     * and l over the readings farther out on that side, so that the
     * double sum over pairs is one pass; the left side's pass stops at
     * the first reading not left of xi (mid), the right side's at the
     * last not right of it (end) */
    size_t mid = hi, end = lo;
    for (int side = 0; side < 2; side++) {
        double A = 0, B = 0;
        for (size_t t = 0; t < hi - lo; t++) {
            size_t j = side ? hi - 1 - t : lo + t;
            double dj = pts[j].x - xi;
            if (side ? !(dj > 0) : !(dj < 0)) {
                if (side)
                    end = j + 1;
                else
                    mid = j;
                break;
            }
            double wj = j ? pts[j].w : 1e12, kk = tricube(dj, h);
            if (j == skip || !(wj * kk > 0))
                continue;
            double lj = wj * kk * (S2 - S1 * dj) / det, d = fabs(dj);
            *v += lj * lj / wj;
            *b += q * lj * (lj * d * d * d / 3 + 2 * (d * d / 2 * A - d * d * d / 6 * B));
            A += lj * d;
            B += lj;
        }
    }
    /* a reading at xi itself (the skipped one aside) has no miss */
    for (size_t j = mid; j < end; j++) {
        double wj = j ? pts[j].w : 1e12;        /* its tricube weight is 1 */
        if (j != skip && pts[j].x == xi && wj > 0) {
            double lj = wj * S2 / det;
            *v += lj * lj / wj;
        }
    }
    return 1;
}

/* Local linear smoothing of the readings pts[1, n) (ascending; pts[0] the
 * origin, exact): each reading's loss and precision replaced by a weighted
 * line's through the readings within h of it (tricube weights); tmp: room
 * for n.
 *
 * A measured curve is piecewise linear between the caps it was swept at
 * (and a real one bends where the clock governor changes regime): a line
 * centred on a reading near a bend straddles it and bends the fit there,
 * by up to a quarter of the change of slope times the reach (0.0017 of
 * loss at a 30 % cut on the field demonstration's curves, a tenth of the
 * equal-to-optimum gap per watt the plan moves for it).  So, as split
 * linear smoothers do (McDonald and Owen, Technometrics 1986), the centred
 * line is kept while its residuals are what the readings' noise gives (a
 * chi-square of its degrees of freedom within 3 sd, the noise the spread
 * of readings within their bins: a lack-of-fit test against pure error,
 * pure the ratio of the precisions' noise to it, squared); past that a bend lies
 * within reach, and the line from the side whose residuals are smaller
 * relative to its degrees of freedom is taken, with its own (larger)
 * variance: on a linear segment the fit is then exact up to the bend.
 *
 * A bin read PFLEX_LEARN_EDGE_READINGS times or more (the floor's edge,
 * a cap held under a target) is its own readings weighed against the line
 * through its neighbours (loo_line) by their precisions, the line's
 * counting what a line misses of a curve that bends (curv_q, as past the
 * deepest reading): the line through them all is mostly its neighbours'
 * and sat 4.6 sd under 529 readings of its own at a simulated H200
 * inference job's floor's edge (loss 0.09921 ± 0.00018 at 401 W, the
 * readings 0.10004), where a plan held it under its floor for 513
 * periods.  A bin of a few readings borrows from its neighbours as
 * before. */
static void smooth_points(struct pt *pts, size_t n, double h, double pure, double curv_q, struct pt *tmp)
{
    if (!(h > 0) || n < 3)
        return;
    size_t lo = 0;
    for (size_t i = 1; i < n; i++) {
        double xi = pts[i].x;
        while (lo < i && pts[lo].x < xi - h)
            lo++;
        size_t hi = i + 1;
        while (hi < n && pts[hi].x < xi + h)
            hi++;
        tmp[i] = pts[i];
        double a, v, chi2, dof;
        size_t rlo = lo, rhi = hi;      /* the line's readings */
        if (!local_line(pts, lo, hi, xi, h, &a, &v, &chi2, &dof))
            continue;
        if (dof >= 1 && pure * chi2 > dof + 3 * sqrt(2 * dof)) {
            double al, vl, cl, dl, ar, vr, cr, dr;
            int okl = local_line(pts, lo, i + 1, xi, h, &al, &vl, &cl, &dl) && dl >= 1;
            int okr = local_line(pts, i, hi, xi, h, &ar, &vr, &cr, &dr) && dr >= 1;
            if (okl && (!okr || cl / dl <= cr / dr) && cl / dl < chi2 / dof) {
                a = al;
                v = vl;
                rhi = i + 1;
            } else if (okr && cr / dr < chi2 / dof) {
                a = ar;
                v = vr;
                rlo = i;
            }
        }
        if (pts[i].n >= PFLEX_LEARN_EDGE_READINGS) {
            double al, vl, bl, own = pts[i].w;
            if (loo_line(pts, rlo, rhi, i, xi, h, curv_q, &al, &vl, &bl)) {
                double wl = 1 / (vl + bl);
                a = (own * pts[i].y + wl * al) / (own + wl);
                v = 1 / (own + wl);
            } else {
                a = pts[i].y;
                v = 1 / own;
            }
        }
        tmp[i].y = a;
        tmp[i].w = 1 / v;
    }
    for (size_t i = 1; i < n; i++)
        pts[i] = tmp[i];
}

static int grow(struct pflex_learn_curve *c, size_t n)
{
    if (n <= c->room)
        return 0;
    n = n > 2 * c->room ? n : 2 * c->room;
    double *x = realloc(c->x, n * sizeof *x);
    if (x)
        c->x = x;
    double *y = realloc(c->loss, n * sizeof *y);
    if (y)
        c->loss = y;
    double *s = realloc(c->sd, n * sizeof *s);
    if (s)
        c->sd = s;
    double *k = realloc(c->cap_w, n * sizeof *k);
    if (k)
        c->cap_w = k;
    unsigned *m = realloc(c->count, n * sizeof *m);
    if (m)
        c->count = m;
    if (!(x && y && s && k && m))
        return -1;
    c->room = n;
    return 0;
}

/* A point's precision (1 / variance of its loss) from its own n readings
 * and the baseline's n_base, each of sd sigma. */
static double own_precision(unsigned n, unsigned n_base, double sigma)
{
    return 1 / (1.0 / n + 1.0 / n_base) / (sigma * sigma);
}

/* The readings' slope at point an of the fitted points pts[0, an]
 * (ascending, the prior blended in), as the curve past it goes on at it:
 * the readings' chord slope's departure from the prior's (dslope), its
 * weight against the prior's (kappa) and its variance (vs_obs).  The
 * same for every x past the point: found once a point. */
struct past {
    size_t an;
    double dslope, kappa, vs_obs;
};

static void past_slope(const pflex_learn_t *l, const struct pt *pts, size_t an, struct past *ps)
{
    double ss = l->c.slope_sd * l->c.slope_sd;
    *ps = (struct past){.an = an};
    if (!an)
        return;
    /* past the deepest reading the curve goes on, for a reach of
     * corr_dx, at the readings' own slope, not the prior's: what the
     * job lost per unit of cut just above says more of just below than
     * a guess made before any reading; the margin, slope_sd a unit, is
     * for a curve that steepens.  The slope is a chord's, from the
     * deepest point back to one within the last 0.05 of x (the origin
     * when they span less), over the window w that knows the slope at
     * the deepest point best: the two points' variances over w^2, plus
     * what a chord misses of its end's slope on a curve that bends.
     * Under the curvature assumed past the reading (extend: the slope a
     * Wiener process, variance curv_q per unit of x) that miss has
     * variance curv_q w / 3, so a long window averages the noise and
     * lags a bending curve, and a short one the reverse.  Counted
     * without it (a fixed 0.05), a convex curve's chord was read as its
     * slope, too shallow: on simulated H200 curves the plan held an
     * inference job a watt past its floor on a slope 40 % shallow,
     * hundreds of periods a seed at 30 and 40 % cuts */
    size_t k = an;
    while (k > 0 && pts[an].x - pts[k].x < 0.05)
        k--;
    double vs_obs = INFINITY;   /* finite: pts[k] lies 0.05 back or is the origin */
    for (size_t i = k; i < an; i++) {
        double wi = pts[an].x - pts[i].x;
        if (!(wi > 0))
            continue;
        double v = (1 / pts[an].w + 1 / pts[i].w) / (wi * wi) + l->c.curv_q * wi / 3;
        if (v < vs_obs) {
            vs_obs = v;
            k = i;
        }
    }
    double w = pts[an].x - pts[k].x;
    double s_obs = (pts[an].y - pts[k].y) / w;
    double s_pri = (prior_at(l, pts[an].x) - prior_at(l, pts[k].x)) / w;
    /* the readings' slope weighed against the prior's by their
     * precisions (vs_obs, above; the prior's slope_sd^2) */
    ps->kappa = ss / (ss + vs_obs);
    ps->dslope = (s_obs > 0 ? s_obs : 0) - s_pri;
    ps->vs_obs = vs_obs;
}

/* The curve past point ps->an of the fitted points (past_slope) at
 * x > pts[an].x: its departure from the prior (*r) and that departure's
 * variance (*var, before the prior's own bound). */
static void extend(const pflex_learn_t *l, const struct pt *pts, const struct past *ps, double x,
                   double *r, double *var)
{
    size_t an = ps->an;
    double q = l->c.prior_sd * l->c.prior_sd / l->c.corr_dx, ss = l->c.slope_sd * l->c.slope_sd;
    double d = x - pts[an].x, vw = q * d, vs = ss * d * d;
    *r = an ? pts[an].y - prior_at(l, pts[an].x) : 0;
    if (an) {
        *r += ps->kappa * ps->dslope * (d < l->c.corr_dx ? d : l->c.corr_dx);
        /* the slope is known as well as the readings' slope
         * is (weighed against slope_sd as in past_slope), and it may
         * bend: a curvature of an integrated Wiener process
         * (curv_q per unit of x) on top; never more than the
         * smooth curve's bound */
        double vc = (ps->kappa * ps->vs_obs + (1 - ps->kappa) * ss) * d * d
                    + l->c.curv_q * d * d * d / 3;
        if (vc < vs)
            vs = vc;
    }
    *var = (an ? 1 / pts[an].w : 0) + (vs < vw ? vs : vw);
}

/* What one fit works on, step by step (pflex_learn_fit): the baseline,
 * the noise, the points and their scratch, all in one block. */
struct fit {
    const pflex_learn_t *l;
    const struct bin *base;     /* the bin at the largest cap */
    int has_base;               /* base read, and its throughput positive */
    double p0, t0;              /* baseline power (max cap without one) and throughput */
    double sigma;               /* one reading's sd of L, pooled, floored */
    double pure_sd;             /* the same spread unfloored (pure error) */
    double psd, dx, x_lim;      /* prior_sd, grid_dx, the deepest x a cap can reach */
    size_t ngrid;               /* grid points in (0, x_lim] */
    struct pt *pts, *room;      /* the points (origin first); the merge's room */
    double *bw, *by, *raw;      /* the pool's blocks; the readings' L before smoothing */
    size_t *bl;
    size_t ndata, np;           /* origin and fitted points; all points */
};

/* The baseline P0, T0 (the bin at the largest cap: the job uncapped) and
 * sigma, the sd of one reading's L pooled from the spread within bins
 * (noise_sd until 5 degrees of freedom): every point's precision needs it. */
static void fit_noise(struct fit *f)
{
    const pflex_learn_t *l = f->l;
    const struct bin *base = &l->bins[0];
    int has_base = base->n > 0 && base->tput > 0;
    f->base = base;
    f->has_base = has_base;
    f->p0 = has_base ? base->power : l->c.max_cap_w;
    f->t0 = has_base ? base->tput : NAN;
    double m2 = 0, dof = 0;
    for (size_t u = 0; u < l->used; u++)
        if (l->bins[l->idx[u]].n > 1) {
            m2 += l->bins[l->idx[u]].m2;
            dof += l->bins[l->idx[u]].n - 1;
        }
    double sigma = has_base && dof >= 5 ? sqrt(m2 / dof) / f->t0 : l->c.noise_sd;
    if (sigma < 1e-3)
        sigma = 1e-3;
    f->sigma = sigma;
    /* the readings' spread within bins itself, unfloored (pure error),
     * for the smoothing's lack-of-fit test */
    double pure_sd = has_base && dof >= 5 ? sqrt(m2 / dof) / f->t0 : sigma;
    if (pure_sd < 1e-6)
        pure_sd = 1e-6;
    f->pure_sd = pure_sd;
}

/* The grid's extent (x_lim, ngrid) and one block for the points: the bins,
 * the grid, the edge points and the origin; -1 when out of memory. */
static int fit_alloc(struct fit *f)
{
    const pflex_learn_t *l = f->l;
    f->psd = l->c.prior_sd;
    f->dx = l->c.grid_dx;
    double x_lim = 1 - l->c.min_cap_w / f->p0;
    if (x_lim > 0.95)
        x_lim = 0.95;
    f->x_lim = x_lim;
    f->ngrid = x_lim > 0 ? (size_t)floor(x_lim / f->dx + 1e-9) : 0;
    size_t cap_pts = l->used + f->ngrid + PFLEX_LEARN_EDGE_W + 2;
    /* one block: the points, the merge's room, the pool's blocks */
    f->pts = malloc(cap_pts * (2 * sizeof *f->pts + 3 * sizeof(double) + sizeof(size_t)));
    if (!f->pts)
        return -1;
    f->room = f->pts + cap_pts;
    f->bw = (double *)(f->room + cap_pts);
    f->by = f->bw + cap_pts;
    f->raw = f->by + cap_pts;
    f->bl = (size_t *)(f->raw + cap_pts);
    return 0;
}

/* The origin (exact) and each bin's point x = 1 - P/P0, L = 1 - T/T0 with
 * its own readings' precision, ascending in x: the evidence, before any
 * smoothing or prior.  Without a baseline, the origin alone. */
static void fit_readings(struct fit *f)
{
    const pflex_learn_t *l = f->l;
    const struct bin *base = f->base;
    struct pt *pts = f->pts;
    size_t np = 0;
    pts[np++] = (struct pt){0, 0, 1e18, f->has_base ? base->cap : l->c.max_cap_w,
                            f->has_base ? base->n : 0};
    if (f->has_base)
        for (size_t u = 0; u < l->used; u++) {
            const struct bin *b = &l->bins[l->idx[u]];
            if (!l->idx[u])
                continue;       /* the baseline: the origin */
            double x = 1 - b->power / f->p0, y = 1 - b->tput / f->t0;
            if (!(x > 1e-6))
                continue;       /* the cap did not bind: nothing about L */
            pts[np++] = (struct pt){x, y, own_precision(b->n, base->n, f->sigma), b->cap, b->n};
        }
    f->ndata = f->np = np;
    /* The fitted points sorted (the origin stays first), as anchors of the
     * grid points between and past them; bins in cap order mostly are in
     * x order already. */
    if (!sorted_pts(pts + 1, np - 1))
        qsort(pts + 1, np - 1, sizeof *pts, cmp_pt);
}

/* Each smoothed point blended with the prior by precision (the posterior
 * mean and precision), its borrowed precision bounded first: the
 * evidence at a bin never counts for more than its readings can. */
static void fit_blend(struct fit *f)
{
    const pflex_learn_t *l = f->l;
    struct pt *pts = f->pts;
    double psd = f->psd;
    for (size_t i = 1; i < f->ndata; i++) {
        /* The smoothing borrows its neighbours' readings for a point's
         * mean, and their precision with it; at the deepest readings,
         * where a plan creeps toward a floor, the line through them is an
         * extrapolation, and a single reading there that came in low (the
         * very one that let the plan go there) would be known about as
         * well as the many behind it.  A point is known at most
         * PFLEX_LEARN_BORROW times as precisely as its own readings alone
         * tell (its sd at least half of one reading's over sqrt(n) at the
         * default): on the field demonstration's jobs a 20 % cut broke
         * the flex1 job's floor in 9 periods without it, the plan held
         * at 274 W on a reading 3 sd low. */
        double own = own_precision(pts[i].n, f->base->n, f->sigma);
        if (pts[i].w > PFLEX_LEARN_BORROW * own)
            pts[i].w = PFLEX_LEARN_BORROW * own;
        double prec = 1 / (psd * psd) + pts[i].w;
        pts[i].y = (prior_at(l, pts[i].x) / (psd * psd) + pts[i].w * pts[i].y) / prec;
        pts[i].w = prec;
    }
}

/* Points past a well-read one re-weighed with the line past it (extend):
 * a cap held for minutes speaks for the caps read less beyond it.  *ps:
 * the slope past that point (an 0: none), which the grid reuses. */
static void fit_anchor(struct fit *f, struct past *ps)
{
    const pflex_learn_t *l = f->l;
    struct pt *pts = f->pts;
    size_t ndata = f->ndata;
    double psd = f->psd;
    /* A point past a well-read one (the most-read of those within the
     * smoothing's reach of the deepest, read PFLEX_LEARN_ANCHOR_READINGS
     * times or more: a cap held for minutes under a target) is also what
     * that point and the curve's smoothness say of it: the line past the
     * deepest reading (extend, as below), read at the caps' distance (a
     * few readings' power is known to a watt or so, their caps exactly).
     * That is independent of the point's own readings, so the two are
     * weighed by their precisions, and kept when they know it better than
     * the smoothing did (whose borrowing is bounded above).  On the field
     * demonstration's jobs a plan held the flex1 inference job an hour at
     * 276 W, read there 3,000 times to 0.0001 of loss, while two readings
     * a probe had left at 275 W stood on their own (sd 0.0017) and kept
     * the job a watt over its floor all hour: 7 % of the gap between equal
     * cuts and the optimum at a 30 % cut. */
    size_t wa = 0;      /* the well-read point; 0: none */
    for (size_t i = ndata - 1; i > 0 && pts[i].x >= pts[ndata - 1].x - l->c.smooth_dx; i--)
        if (pts[i].n >= PFLEX_LEARN_ANCHOR_READINGS && (!wa || pts[i].n > pts[wa].n))
            wa = i;
    /* the loop below moves only points past wa: the slope holds */
    past_slope(l, pts, wa, ps);
    for (size_t i = wa + 1; wa && i < ndata; i++) {
        if (!(pts[i].cap < pts[wa].cap))
            continue;
        double r, var, own = own_precision(pts[i].n, f->base->n, f->sigma);
        double xi = pts[wa].x + (pts[wa].cap - pts[i].cap) / f->p0;
        extend(l, pts, ps, xi, &r, &var);
        double w = own + 1 / var + 1 / (psd * psd);
        if (w > pts[i].w) {
            pts[i].y = (own * f->raw[i] + (prior_at(l, xi) + r) / var + prior_at(l, pts[i].x) / (psd * psd)) / w;
            pts[i].w = w;
        }
    }
}

/* The least cap read and its x (*lc_cap INFINITY: none), every bin but
 * the baseline's counted: no point past every reading is given a cap
 * over it (fit_grid). */
static void least_cap(const struct fit *f, double *lc_cap, double *lc_x)
{
    const pflex_learn_t *l = f->l;
    /* A point past every reading
     * in x draws less than every one of them, so its cap is under every
     * cap read, by the power it sheds past that reading: a job whose draw
     * does not follow its cap (input-bound: the same draw at caps 100 W
     * apart) has its deepest reading in x at any of them, and the
     * headroom of one high above its draw put the prior's points past
     * it at caps over those read, at the prior's loss; made monotone in
     * the cap, the loss of every cap read under them rose to it.  Only a
     * point a bin or more over the least cap read: readings a watt apart
     * cross in x by the noise of their power, which moves no point.
     * Every bin counts, those whose cap did not bind (x 0) too. */
    *lc_cap = INFINITY;
    *lc_x = 0;
    for (size_t u = 0; f->has_base && u < l->used; u++) {
        const struct bin *b = &l->bins[l->idx[u]];
        if (l->idx[u] && b->cap < *lc_cap) {
            *lc_cap = b->cap;
            *lc_x = b->power < f->p0 ? 1 - b->power / f->p0 : 0;
        }
    }
}

/* The curve at a grid x between fitted points an and an + 1, or past the
 * deepest (an the last): its departure from the prior (*r), that
 * departure's variance (*var, bounded by the prior's) and the headroom
 * under the cap there (*delta), a Wiener process through the points. */
static void grid_value(const struct fit *f, size_t an, double x, struct past *ps, double *r,
                       double *var, double *delta)
{
    const pflex_learn_t *l = f->l;
    const struct pt *pts = f->pts;
    size_t ndata = f->ndata;
    double p0 = f->p0, psd = f->psd;
    double q = psd * psd / l->c.corr_dx, ss = l->c.slope_sd * l->c.slope_sd;
    double ra = an ? pts[an].y - prior_at(l, pts[an].x) : 0, va = an ? 1 / pts[an].w : 0;
    /* the cap that draws P0 (1 - x): a capped GPU draws a little under
     * its cap, by what the readings show around x (the nearest
     * reading's before the first); none read, the power itself */
    double da = ndata > 1 ? headroom(&pts[an ? an : 1], p0) : 0;
    *delta = da;
    if (an + 1 < ndata) {
        const struct pt *b = &pts[an + 1];
        double rb = b->y - prior_at(l, b->x), vb = 1 / b->w;
        double t = (x - pts[an].x) / (b->x - pts[an].x);
        *r = (1 - t) * ra + t * rb;
        if (an)
            *delta = (1 - t) * da + t * headroom(b, p0);
        /* the bridge's own variance, no more than a smooth curve's
         * whose slope is uncertain by slope_sd */
        double d = (x - pts[an].x) * (b->x - x) / (b->x - pts[an].x);
        double vw = q * d, vs = ss * d * d;
        *var = (1 - t) * (1 - t) * va + t * t * vb + (vs < vw ? vs : vw);
    } else {
        /* past the deepest point: its slope found once */
        if (ps->an != an)
            past_slope(l, pts, an, ps);
        extend(l, pts, ps, x, r, var);
    }
    if (*var > psd * psd)
        *var = psd * psd;
    if (*var < 1e-12)
        *var = 1e-12;
}

/* The prior's points where no reading is within grid_dx, and a point a
 * watt, two, .. past a well-read deepest reading: the curve between and
 * past the readings, each with its sd and the cap that draws there. */
static void fit_grid(struct fit *f, struct past *ps)
{
    const pflex_learn_t *l = f->l;
    struct pt *pts = f->pts;
    size_t ndata = f->ndata, np = f->np;
    double p0 = f->p0, dx = f->dx;
    /* Past the deepest reading, besides the grid, a point a watt, two, ..
     * PFLEX_LEARN_EDGE_W watts on: the pessimistic curve is read
     * linearly between points, and from a reading known to a tenth of a
     * percent to a grid point dx on (as uncertain as a curve that may bend
     * makes it) that line would put the margin of a watt past the
     * reading near the far point's, several times what the readings and
     * the curvature give there: a floor-bound job would be held watts
     * above its floor however often it is read.  A watt apart, not a bin:
     * the margin past a reading grows as d^1.5 (the curvature's term), so
     * read linearly between points two watts apart it is a third too
     * large a watt on, and the plan sets whole watts: on the field
     * demonstration's flex1 job, a watt of margin under its floor is 7 %
     * of the gap between equal cuts and the optimum at a 30 % cut.  Only
     * past a reading whose bin holds PFLEX_LEARN_EDGE_READINGS readings:
     * a deepest bin of a few readings is placed by their power (known to a
     * watt or so) and known to no better than the bound above, and a watt
     * past it one reading 2-3 sd low let a plan put that job a watt under
     * its floor for 20 periods (the SRP day, seed 1); the walk reads the
     * edge that often before it goes on (pflex_learn_probe). */
    double xd = ndata > 1 ? pts[ndata - 1].x : 0, xb = 1 / p0;
    size_t ne = 0, g = 1, an = 0, nr = 1;
    double lc_cap, lc_x;
    least_cap(f, &lc_cap, &lc_x);
    for (;;) {
        double xg = g <= f->ngrid ? g * dx : INFINITY;
        double xe = ndata > 1 && ne < PFLEX_LEARN_EDGE_W && pts[ndata - 1].n >= PFLEX_LEARN_EDGE_READINGS
                        ? xd + (ne + 1) * xb
                        : INFINITY;
        if (!(xe < xd + dx && xe <= f->x_lim))
            xe = INFINITY;
        if (xg == INFINITY && xe == INFINITY)
            break;
        double x;
        if (xe < xg) {
            x = xe;
            ne++;
        } else {
            x = xg;
            g++;
            /* a fitted point within dx of x: the first at or past x - dx
             * (the points ascend, and so does x) */
            while (nr < ndata && !(pts[nr].x > x - dx))
                nr++;
            if (nr < ndata && pts[nr].x < x + dx)
                continue;
        }
        /* the fitted point at or before x (the origin: 0) */
        while (an + 1 < ndata && pts[an + 1].x < x)
            an++;
        double r, var, delta;
        grid_value(f, an, x, ps, &r, &var, &delta);
        double cap = p0 * (1 - x) + delta;
        if (an + 1 >= ndata && x > lc_x && cap > lc_cap + l->c.bin_w) {
            double under = lc_cap - p0 * (x - lc_x);
            cap = under < cap ? under : cap;
        }
        pts[np++] = (struct pt){x, prior_at(l, x) + r, 1 / var, cap, 0};
    }
    f->np = np;
}

/* Points at the same x (within 1e-9) merged by precision, to the
 * allocator's strict order; the origin absorbs none. */
static void merge_same_x(struct fit *f)
{
    struct pt *pts = f->pts;
    size_t m = 1;
    for (size_t i = 1; i < f->np; i++) {
        if (pts[i].x <= pts[m - 1].x + 1e-9) {
            struct pt *a = &pts[m - 1];
            if (m - 1 == 0)
                continue;
            double w = a->w + pts[i].w;
            a->y = (a->y * a->w + pts[i].y * pts[i].w) / w;
            a->w = w;
            a->n += pts[i].n;
            continue;
        }
        pts[m++] = pts[i];
    }
    f->np = m;
}

/* The points made monotone (weighted isotonic regression, pool adjacent
 * violators, in blocks of weight, weighted sum and length) into out: a
 * larger cut never loses less.  out holds room for f->np. */
static void fit_monotone(const struct fit *f, struct pflex_learn_curve *out)
{
    const struct pt *pts = f->pts;
    double *bw = f->bw, *by = f->by;
    size_t *bl = f->bl, np = f->np;
    size_t nb = 0;
    for (size_t i = 0; i < np; i++) {
        bw[nb] = pts[i].w;
        by[nb] = pts[i].w * pts[i].y;
        bl[nb] = 1;
        nb++;
        while (nb > 1 && by[nb - 2] / bw[nb - 2] > by[nb - 1] / bw[nb - 1]) {
            bw[nb - 2] += bw[nb - 1];
            by[nb - 2] += by[nb - 1];
            bl[nb - 2] += bl[nb - 1];
            nb--;
        }
    }
    size_t i = 0;
    for (size_t b = 0; b < nb; b++)
        for (size_t k = 0; k < bl[b]; k++, i++) {
            out->x[i] = pts[i].x;
            out->loss[i] = by[b] / bw[b];
            out->sd[i] = 1 / sqrt(pts[i].w);
            out->cap_w[i] = pts[i].cap;
            out->count[i] = pts[i].n;
        }
}

/* The steps in order (docs/learner.md): the readings' points, smoothed,
 * blended with the prior, re-weighed past a well-read point, the prior's
 * grid between and past them, merged and made monotone. */
int pflex_learn_fit(const pflex_learn_t *l, struct pflex_learn_curve *out, pflex_error_t *err)
{
    struct fit f = {.l = l};
    fit_noise(&f);
    if (fit_alloc(&f) < 0)
        return pflex_error_set(err, "out of memory");
    fit_readings(&f);
    for (size_t i = 1; i < f.ndata; i++)
        f.raw[i] = f.pts[i].y;
    smooth_points(f.pts, f.ndata, l->c.smooth_dx, f.sigma * f.sigma / (f.pure_sd * f.pure_sd),
                  l->c.curv_q, f.room);
    fit_blend(&f);
    struct past ps;     /* the slope past the last fitted point used */
    fit_anchor(&f, &ps);
    fit_grid(&f, &ps);
    /* the grid's points ascend, as the fitted ones do: one merge */
    if (f.np > f.ndata)
        merge_pts(f.pts, f.ndata, f.np, f.room);
    merge_same_x(&f);
    if (grow(out, f.np) < 0) {
        free(f.pts);
        return pflex_error_set(err, "out of memory");
    }
    fit_monotone(&f, out);
    out->x[0] = 0;
    out->loss[0] = 0;
    out->sd[0] = 0;
    out->n = f.np;
    out->p0_w = f.has_base ? f.p0 : NAN;
    out->bin_w = l->c.bin_w;
    out->prior_sd = l->c.prior_sd;
    out->t0 = f.t0;
    out->sigma = f.sigma;
    out->has_baseline = f.has_base;
    free(f.pts);
    return 0;
}

static double interp(const struct pflex_learn_curve *c, const double *y, double x)
{
    if (c->n == 0)
        return NAN;
    return pflex_interp_linear(c->x, y, c->n, x);
}

double pflex_learn_loss(const struct pflex_learn_curve *c, double x)
{
    return interp(c, c->loss, x);
}

double pflex_learn_sd(const struct pflex_learn_curve *c, double x)
{
    return interp(c, c->sd, x);
}

double pflex_learn_safe_x(const struct pflex_learn_curve *c, double floor, double z)
{
    double lim = 1 - floor;
    if (c->n == 0)
        return 0;
    for (size_t i = 1; i < c->n; i++) {
        double u1 = c->loss[i] + z * c->sd[i];
        if (u1 > lim) {
            double u0 = c->loss[i - 1] + z * c->sd[i - 1];
            if (u0 >= lim)
                return c->x[i - 1];
            return c->x[i - 1] + (c->x[i] - c->x[i - 1]) * (lim - u0) / (u1 - u0);
        }
    }
    return c->x[c->n - 1];
}

static int probe_from(const struct pflex_learn_curve *c, double floor, double z, double x_now,
                      double x_known, double step, double min_sd, double *x_probe, double *cap_w);

int pflex_learn_probe(const struct pflex_learn_curve *c, double floor, double z, double x_now,
                      double step, double min_sd, double *x_probe, double *cap_w)
{
    if (c->n < 2 || !c->has_baseline || !(step > 0))
        return 0;
    /* Walk down from what is known: a step past the deepest cut observed
     * (or the plan, when it is deeper), so that in quiet periods the curve
     * is learned as far down as the floor allows before an event needs it. */
    double x_known = x_now;
    for (size_t i = 1; i < c->n; i++)
        if (c->count[i] && c->x[i] > x_known)
            x_known = c->x[i];
    return probe_from(c, floor, z, x_now, x_known, step, min_sd, x_probe, cap_w);
}

int pflex_learn_probe_near(const struct pflex_learn_curve *c, double floor, double z, double x_now,
                           double step, double min_sd, double *x_probe, double *cap_w)
{
    if (c->n < 2 || !c->has_baseline || !(step > 0))
        return 0;
    return probe_from(c, floor, z, x_now, x_now, step, min_sd, x_probe, cap_w);
}

static int probe_from(const struct pflex_learn_curve *c, double floor, double z, double x_now,
                      double x_known, double step, double min_sd, double *x_probe, double *cap_w)
{
    double hi = x_known + step, safe = pflex_learn_safe_x(c, floor, z);
    if (hi > safe)
        hi = safe;
    if (!(hi > x_now))
        return 0;
    double best_x = hi, best = pflex_learn_sd(c, hi);
    int edge = 0;
    for (size_t i = 1; i < c->n; i++)
        if (c->x[i] > x_now && c->x[i] < hi && c->sd[i] > best) {
            best = c->sd[i];
            best_x = c->x[i];
        }
    if (!(best > min_sd)) {
        /* Known to min_sd as far as the walk may go.  When the floor holds
         * it (not the step), the floor's edge is only as close as the
         * deepest reading is precise: read that reading again until its
         * bin holds PFLEX_LEARN_EDGE_READINGS, then go on to the edge, a bin or more
         * past it (the margin past a reading shrinks with its distance
         * faster than the curve rises: the walk creeps to the floor). */
        if (!(safe < x_known + step))
            return 0;
        size_t kd = 0;
        for (size_t i = 1; i < c->n; i++)
            if (c->count[i] && c->x[i] >= x_known - 1e-12)
                kd = i;
        if (kd && c->x[kd] > x_now && c->count[kd] < PFLEX_LEARN_EDGE_READINGS) {
            *x_probe = c->x[kd];
            *cap_w = c->cap_w[kd];
            return 2;
        }
        double xb = c->p0_w > 0 ? c->bin_w / c->p0_w : 0;
        if (!(hi > x_known + xb))
            return 0;
        best_x = hi;
        edge = 1;
    }
    /* the cap that draws there, as the curve has it; at the floor's edge
     * rounded up to a whole bin width (the caps a plan sets): the edge is
     * the pessimistic curve's, and a probe rounded down went up to a
     * watt past it (under 1 W bins the walk's edge probes crept past
     * their floors in 1,103 job-periods of 60 simulated days of the field
     * demonstration's jobs, 172 under 2 W bins; 62 rounded up) */
    double cap = interp(c, c->cap_w, best_x);
    if (edge && c->bin_w > 0)
        cap = ceil(cap / c->bin_w - 1e-9) * c->bin_w;
    for (size_t i = 1; i < c->n; i++)
        if (c->count[i] && c->sd[i] <= min_sd && fabs(c->cap_w[i] - cap) < c->bin_w)
            return 0;
    *x_probe = best_x;
    *cap_w = cap;
    return 1 + edge;
}

int pflex_learn_probe_fill(const struct pflex_learn_curve *c, double floor, double z, double cap_lo_w,
                           double cap_hi_w, double min_sd, double *x_probe, double *cap_w)
{
    if (c->n < 2 || !c->has_baseline || !(cap_hi_w > cap_lo_w))
        return 0;
    double safe = pflex_learn_safe_x(c, floor, z), best = min_sd, best_x = NAN, best_cap = NAN;
    for (size_t i = 1; i < c->n; i++) {
        double xm = (c->x[i - 1] + c->x[i]) / 2, h = (c->x[i] - c->x[i - 1]) / 4;
        double s0 = (c->sd[i - 1] + c->sd[i]) / 2;
        double cand_x[2] = {xm, c->x[i]}, cand_sd[2] = {sqrt(s0 * s0 + h * h), c->sd[i]};
        double cand_cap[2] = {(c->cap_w[i - 1] + c->cap_w[i]) / 2, c->cap_w[i]};
        for (int k = 0; k < 2; k++) {
            if (!(cand_sd[k] > best) || !(cand_x[k] > 0) || cand_x[k] > safe
                || cand_cap[k] < cap_lo_w || cand_cap[k] > cap_hi_w)
                continue;
            int known = 0;
            for (size_t m = 1; m < c->n && !known; m++)
                known = c->count[m] && c->sd[m] <= min_sd && fabs(c->cap_w[m] - cand_cap[k]) < c->bin_w;
            if (known)
                continue;
            best = cand_sd[k];
            best_x = cand_x[k];
            best_cap = cand_cap[k];
        }
    }
    if (!isfinite(best_x))
        return 0;
    *x_probe = best_x;
    *cap_w = best_cap;
    return 1;
}

int pflex_learn_probe_span(const pflex_learn_t *l, const struct pflex_learn_curve *c, double floor,
                           double z, double cap_lo_w, double cap_hi_w, double *x_probe, double *cap_w)
{
    if (c->n < 2 || !c->has_baseline || !(cap_hi_w >= cap_lo_w))
        return 0;
    /* near the floor's edge the margin is the floor's: the edge probes
     * read it (pflex_learn_probe) */
    double safe = pflex_learn_safe_x(c, floor, z);
    if (floor > 0 && !(cap_lo_w >= interp(c, c->cap_w, safe) + PFLEX_LEARN_SPAN_EDGE_W))
        return 0;
    /* the readings the curve draws its chord over [cap_lo_w, cap_hi_w]
     * between: the nearest at or under it and at or over it */
    double r_lo = -INFINITY, r_hi = INFINITY;
    for (size_t i = 0; i < c->n; i++) {
        if (!c->count[i] && i)
            continue;
        if (c->cap_w[i] <= cap_lo_w + 1e-9 && c->cap_w[i] > r_lo)
            r_lo = c->cap_w[i];
        if (c->cap_w[i] >= cap_hi_w - 1e-9 && c->cap_w[i] < r_hi)
            r_hi = c->cap_w[i];
    }
    if (!isfinite(r_lo) || !isfinite(r_hi))
        return 0;
    /* the whole watt inside the chord, a watt or more from both readings,
     * nearest the span, whose bin holds no reading yet */
    double mid = (cap_lo_w + cap_hi_w) / 2, best = NAN;
    for (double w = ceil(r_lo + 1 - 1e-9); w <= r_hi - 1 + 1e-9; w++)
        if (pflex_learn_bin_count(l, w) == 0 && !(fabs(w - mid) >= fabs(best - mid)))
            best = w;
    if (!isfinite(best))
        return 0;
    /* its x as the curve's caps have it (cap_w falls as x grows) */
    double x = NAN;
    for (size_t i = 1; i < c->n && !isfinite(x); i++)
        if (c->cap_w[i] <= best && c->cap_w[i - 1] >= best)
            x = c->cap_w[i - 1] > c->cap_w[i]
                ? c->x[i - 1] + (c->x[i] - c->x[i - 1]) * (c->cap_w[i - 1] - best)
                                    / (c->cap_w[i - 1] - c->cap_w[i])
                : c->x[i];
    if (!isfinite(x) || !(x > 0) || x > safe)
        return 0;
    *x_probe = x;
    *cap_w = best;
    return 1;
}
