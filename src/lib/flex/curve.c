/* curve.c — loss curves from sweep points. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/flex/curve.h"
#include "lib/util/interp.h"

/* (x, cap) of point a before that of point b. */
static int point_before(const double *xs, const double *cs, size_t a, size_t b)
{
    return xs[a] < xs[b] || (xs[a] == xs[b] && cs[a] < cs[b]);
}

static void swap_point(double *xs, double *ls, double *cs, size_t a, size_t b)
{
    double t = xs[a];
    xs[a] = xs[b], xs[b] = t;
    t = ls[a];
    ls[a] = ls[b], ls[b] = t;
    t = cs[a];
    cs[a] = cs[b], cs[b] = t;
}

/* Heap sort of n points by (x, cap), in place: no memory, O(n log n). */
static void sort_points(double *xs, double *ls, double *cs, size_t n)
{
    for (size_t start = n / 2; start-- > 0;) {
        for (size_t r = start;;) {
            size_t ch = 2 * r + 1;
            if (ch >= n)
                break;
            if (ch + 1 < n && point_before(xs, cs, ch, ch + 1))
                ch++;
            if (!point_before(xs, cs, r, ch))
                break;
            swap_point(xs, ls, cs, r, ch);
            r = ch;
        }
    }
    for (size_t end = n; end-- > 1;) {
        swap_point(xs, ls, cs, 0, end);
        for (size_t r = 0;;) {
            size_t ch = 2 * r + 1;
            if (ch >= end)
                break;
            if (ch + 1 < end && point_before(xs, cs, ch, ch + 1))
                ch++;
            if (!point_before(xs, cs, r, ch))
                break;
            swap_point(xs, ls, cs, r, ch);
            r = ch;
        }
    }
}

/* The curve into x/loss/cap (room for npts each): the points past the
 * baseline that bind, ordered by x then cap (insertion sort, heap sort
 * past a linear budget), equal x
 * averaged.  Points come in ascending cap order, so x mostly falls: they
 * are inserted from the last one back, which keeps the sort linear.  The
 * keys (x, cap) are distinct (caps are), so the order of insertion does not
 * change the result. */
static int curve_build(struct pflex_curve *c, const struct pflex_sweep_point *pts, size_t npts,
                       double *xs, double *ls, double *cs, pflex_error_t *err)
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
    c->x = xs;
    c->loss = ls;
    c->cap_w = cs;
    xs[0] = 0;
    ls[0] = 0;
    cs[0] = c->cap0_w;
    size_t m = 1, moves = 0, budget = 8 * npts + 64;
    for (size_t i = npts; i-- > 0;) {
        if (i == b)
            continue;
        double x = 1.0 - pts[i].power_w / c->p0_w;
        if (!(x > 0))
            continue;               /* the cap does not bind */
        double l = 1.0 - pts[i].throughput / c->t0, cap = pts[i].cap_w;
        size_t k = m;
        while (moves <= budget && k > 1
               && (xs[k - 1] > x || (xs[k - 1] == x && cs[k - 1] > cap))) {
            xs[k] = xs[k - 1];
            ls[k] = ls[k - 1];
            cs[k] = cs[k - 1];
            k--;
            moves++;
        }
        xs[k] = x;
        ls[k] = l;
        cs[k] = cap;
        m++;
    }
    /* Power that does not fall with the cap (noise over many caps, or a
     * hostile file) makes insertion quadratic: past a linear budget of
     * moves the rest is appended as it comes and the whole is heap-sorted,
     * O(n log n).  The keys are distinct, so the order is the same. */
    if (moves > budget)
        sort_points(xs + 1, ls + 1, cs + 1, m - 1);
    /* Equal reductions (rare) are averaged so that L stays a function.
     * Up to the first two equal ones each point is its own mean, 0 + its
     * value over 1, where it lies: a loss 1 - T/T0 is never -0 (a cap may
     * be: 0 + -0 is 0). */
    size_t i = 1;
    while (i < m && (i + 1 == m || xs[i + 1] != xs[i])) {
        cs[i] = 0.0 + cs[i];
        i++;
    }
    c->n = i;
    while (i < m) {
        size_t j = i;
        double lsum = 0, csum = 0, x = xs[i];
        while (j < m && xs[j] == x)
            lsum += ls[j], csum += cs[j], j++;
        xs[c->n] = x;
        ls[c->n] = lsum / (double)(j - i);
        cs[c->n] = csum / (double)(j - i);
        c->n++;
        i = j;
    }
    c->x_max = xs[c->n - 1];
    /* The origin's cap: the lowest cap that still does not bind above
     * every binding one (the baseline cap when all below it bind), which is
     * where the draw first falls under P0 as the cap is lowered. */
    double top_bind = -INFINITY, anchor = c->cap0_w;
    for (size_t k = 1; k < c->n; k++)
        if (cs[k] > top_bind)
            top_bind = cs[k];
    for (size_t q = 0; q < npts; q++)
        if (!(1.0 - pts[q].power_w / c->p0_w > 0) && pts[q].cap_w > top_bind
            && pts[q].cap_w < anchor)
            anchor = pts[q].cap_w;
    cs[0] = anchor;
    return 0;
}

int pflex_curve_init(struct pflex_curve *c, const struct pflex_sweep_point *pts,
                     size_t npts, pflex_error_t *err)
{
    size_t room = npts ? npts : 1;
    double *xs = malloc(room * sizeof *xs);
    double *ls = malloc(room * sizeof *ls);
    double *cs = malloc(room * sizeof *cs);
    if (!xs || !ls || !cs) {
        free(xs);
        free(ls);
        free(cs);
        memset(c, 0, sizeof *c);
        return pflex_error_set(err, "out of memory");
    }
    if (curve_build(c, pts, npts, xs, ls, cs, err) < 0) {
        free(xs);
        free(ls);
        free(cs);
        memset(c, 0, sizeof *c);
        return -1;
    }
    return 0;
}

int pflex_curve_init_in(struct pflex_curve *c, const struct pflex_sweep_point *pts,
                        size_t npts, double *store, pflex_error_t *err)
{
    if (curve_build(c, pts, npts, store, store + npts, store + 2 * npts, err) < 0) {
        memset(c, 0, sizeof *c);
        return -1;
    }
    return 0;
}

void pflex_curve_fini(struct pflex_curve *c)
{
    free(c->x);
    free(c->loss);
    free(c->cap_w);
    memset(c, 0, sizeof *c);
}

/* A sweep's caps a job, as most are: up to this many, the fit's scratch
 * lies on the stack, and reading a million jobs allocates nothing more. */
#define FIT_STACK 64

int pflex_isotonic_fit(const double *y, const double *w, size_t n, double *fit,
                       pflex_error_t *err)
{
    /* Pool adjacent violators: a stack of blocks, each the weighted mean
     * of a run of y; a new value that falls under the block before it
     * merges with it, and the merged block with the ones before while
     * they stay above it.  Each value is pushed once and merged once. */
    struct block {
        double wy, w;
        size_t len;
    } small[FIT_STACK], *b = n <= FIT_STACK ? small : malloc(n * sizeof *b);
    if (!b)
        return pflex_error_sys(err, "out of memory");
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        b[top] = (struct block){wi * y[i], wi, 1};
        while (top > 0 && b[top - 1].wy / b[top - 1].w >= b[top].wy / b[top].w) {
            b[top - 1].wy += b[top].wy;
            b[top - 1].w += b[top].w;
            b[top - 1].len += b[top].len;
            top--;
        }
        top++;
    }
    /* back to front: fit may be y, and a block of one keeps its y exactly
     * (w y / w need not round back to y), so a monotone input is its fit */
    size_t i = n;
    for (size_t k = top; k-- > 0;) {
        double m = b[k].len == 1 ? y[i - 1] : b[k].wy / b[k].w;
        for (size_t q = 0; q < b[k].len; q++)
            fit[--i] = m;
    }
    if (b != small)
        free(b);
    return 0;
}

int pflex_curve_fit_points(const struct pflex_sweep_point *pts, size_t n,
                           struct pflex_sweep_point *out, int *changed, pflex_error_t *err)
{
    if (changed)
        *changed = 0;
    if (n == 0)
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(pts[i].cap_w > pts[i - 1].cap_w))
            return pflex_error_set(err, "caps out of order at %g W (ascending, distinct)",
                                   pts[i].cap_w);
    /* the baseline as measured: pooling must not make a bad one good */
    if (!(pts[n - 1].throughput > 0))
        return pflex_error_set(err, "baseline throughput at %g W is not positive", pts[n - 1].cap_w);
    if (!(pts[n - 1].power_w > 0))
        return pflex_error_set(err, "baseline power at %g W is not positive", pts[n - 1].cap_w);
    double small[3 * FIT_STACK];
    double *w = n <= FIT_STACK ? small : malloc(3 * n * sizeof *w);
    if (!w)
        return pflex_error_sys(err, "out of memory");
    double *p = w + n, *t = w + 2 * n;
    for (size_t i = 0; i < n; i++) {
        /* a cap read over more rows weighs more: its mean is less noisy */
        w[i] = pts[i].rows ? (double)pts[i].rows : 1.0;
        p[i] = pts[i].power_w;
        t[i] = pts[i].throughput;
    }
    if (pflex_isotonic_fit(p, w, n, p, err) < 0 || pflex_isotonic_fit(t, w, n, t, err) < 0) {
        if (w != small)
            free(w);
        return -1;
    }
    /* A job whose fitted draw no cap cuts by PFLEX_CURVE_BIND_MIN (SPEC's
     * "does not bind"), or none of whose caps binds (its draw nowhere
     * reaches PFLEX_CURVE_BIND_NEAR of its cap) while its draw barely moves
     * (nowhere FOLLOW_MIN under the baseline's, more than a power reading's
     * noise of a few %): its power does not follow the cap and what its
     * points differ by is noise.  A draw under every cap that still falls
     * with the cap is a curve.  It is flat at its draw at the baseline (the
     * fitted highest) and its mean throughput, every reading weighed alike. */
    const double FOLLOW_MIN = 0.10;
    int flat = p[n - 1] > 0, reaches = 0, cuts = 0, follows = 0;
    for (size_t i = 0; flat && i < n; i++) {
        reaches |= pts[i].power_w >= PFLEX_CURVE_BIND_NEAR * pts[i].cap_w;
        cuts |= 1.0 - p[i] / p[n - 1] >= PFLEX_CURVE_BIND_MIN;
        follows |= 1.0 - p[i] / p[n - 1] >= FOLLOW_MIN;
    }
    flat = flat && (!cuts || (!reaches && !follows));
    if (flat) {
        double sw = 0, st = 0;
        for (size_t i = 0; i < n; i++)
            sw += w[i], st += w[i] * pts[i].throughput;
        for (size_t i = 0; i < n; i++)
            p[i] = p[n - 1], t[i] = st / sw;
    }
    int moved = 0;
    for (size_t i = 0; i < n; i++) {
        moved |= p[i] != pts[i].power_w || t[i] != pts[i].throughput;
        out[i] = pts[i];
        out[i].power_w = p[i];
        out[i].throughput = t[i];
    }
    if (w != small)
        free(w);
    if (changed)
        *changed = (moved ? PFLEX_CURVE_FIT_MOVED : 0) | (flat ? PFLEX_CURVE_FIT_FLAT : 0);
    return 0;
}

int pflex_curve_flat_below(struct pflex_curve *c, double min_cap_w)
{
    if (c->n != 1 || !(min_cap_w > 0) || !(min_cap_w < c->p0_w))
        return 0;
    c->x[1] = 1.0 - min_cap_w / c->p0_w;
    c->loss[1] = c->x[1];
    c->cap_w[1] = min_cap_w;
    c->cap_w[0] = c->p0_w;
    c->n = 2;
    c->x_max = c->x[1];
    return 1;
}

double pflex_curve_loss(const struct pflex_curve *c, double x)
{
    if (c->n < 2 || x <= 0)
        return 0;
    return pflex_interp_linear(c->x, c->loss, c->n, x);     /* x[n - 1] = x_max */
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
