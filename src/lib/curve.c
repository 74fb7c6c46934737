/* curve.c — loss curves from sweep points. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/curve.h"

struct xl { double x, loss, cap; };

static int cmp_xl(const void *a, const void *b)
{
    const struct xl *p = a, *q = b;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return p->cap < q->cap ? -1 : p->cap > q->cap;
}

int pflex_curve_init(struct pflex_curve *c, const struct pflex_sweep_point *pts,
                     size_t npts, pflex_error_t *err)
{
    memset(c, 0, sizeof *c);
    if (npts == 0)
        return pflex_error_set(err, "no measurements");
    size_t b = 0;
    for (size_t i = 1; i < npts; i++)
        if (pts[i].cap_w > pts[b].cap_w)
            b = i;
    c->p0_w = pts[b].power_w;
    c->t0 = pts[b].throughput;
    c->cap0_w = pts[b].cap_w;
    if (!(c->t0 > 0))
        return pflex_error_set(err, "baseline throughput at %g W is not positive", c->cap0_w);
    if (!(c->p0_w > 0))
        return pflex_error_set(err, "baseline power at %g W is not positive", c->cap0_w);
    struct xl *v = malloc((npts + 1) * sizeof *v);
    c->x = malloc((npts + 1) * sizeof *c->x);
    c->loss = malloc((npts + 1) * sizeof *c->loss);
    c->cap_w = malloc((npts + 1) * sizeof *c->cap_w);
    if (!v || !c->x || !c->loss || !c->cap_w) {
        free(v);
        pflex_curve_fini(c);
        return pflex_error_set(err, "out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; i < npts; i++) {
        if (i == b)
            continue;
        double x = 1.0 - pts[i].power_w / c->p0_w;
        if (!(x > 0))
            continue;               /* the cap does not bind */
        v[m].x = x;
        v[m].loss = 1.0 - pts[i].throughput / c->t0;
        v[m].cap = pts[i].cap_w;
        m++;
    }
    qsort(v, m, sizeof *v, cmp_xl);
    c->x[0] = 0;
    c->loss[0] = 0;
    c->cap_w[0] = c->cap0_w;
    c->n = 1;
    /* Equal reductions (rare) are averaged so that L stays a function. */
    for (size_t i = 0; i < m;) {
        size_t j = i;
        double ls = 0, cs = 0;
        while (j < m && v[j].x == v[i].x)
            ls += v[j].loss, cs += v[j].cap, j++;
        c->x[c->n] = v[i].x;
        c->loss[c->n] = ls / (double)(j - i);
        c->cap_w[c->n] = cs / (double)(j - i);
        c->n++;
        i = j;
    }
    free(v);
    c->x_max = c->x[c->n - 1];
    return 0;
}

void pflex_curve_fini(struct pflex_curve *c)
{
    free(c->x);
    free(c->loss);
    free(c->cap_w);
    memset(c, 0, sizeof *c);
}

double pflex_curve_loss(const struct pflex_curve *c, double x)
{
    if (c->n < 2 || x <= 0)
        return 0;
    if (x >= c->x_max)
        return c->loss[c->n - 1];
    size_t lo = 0, hi = c->n - 1;           /* x[lo] <= x < x[hi] */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (c->x[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    double t = (x - c->x[lo]) / (c->x[hi] - c->x[lo]);
    return c->loss[lo] + t * (c->loss[hi] - c->loss[lo]);
}

double pflex_curve_area(const struct pflex_curve *c, double r)
{
    if (r > c->x_max)
        r = c->x_max;
    double a = 0;
    for (size_t i = 1; i < c->n && c->x[i - 1] < r; i++) {
        double x1 = c->x[i] < r ? c->x[i] : r;
        double l1 = c->x[i] < r ? c->loss[i] : pflex_curve_loss(c, r);
        a += 0.5 * (c->loss[i - 1] + l1) * (x1 - c->x[i - 1]);
    }
    return a;
}

double pflex_curve_shed(const struct pflex_curve *c, double floor)
{
    double thr = 1.0 - floor;
    for (size_t i = 1; i < c->n; i++)
        if (c->loss[i] > thr) {
            double dl = c->loss[i] - c->loss[i - 1];
            double t = (thr - c->loss[i - 1]) / dl;
            return c->x[i - 1] + t * (c->x[i] - c->x[i - 1]);
        }
    return c->x_max;
}
