/* pfi.c — the Power Flexibility Index: every metric of docs/contract.md §2. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_fit.h>
#include "pflex/flex/pfi.h"


/* ---- loss-area (pflex's own) and the pointwise PFI ------------------- */

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
    return x / pflex_curve_loss(c, x);
}

/* ---- ratio, the study's ---------------------------------------------- */

static const char *ratio_reason(const struct pflex_pfi_ratio *r)
{
    return r->valid ? NULL
         : r->used + r->noise + r->not_binding == 0 ? "no capped point"
         : r->noise == 0 ? "no cap binds (every power reduction under 1%)"
         : "every loss within noise (under 0.5%)";
}

/* The ratio rule for one point: 0 used, 1 not binding, 2 noise. */
static int ratio_drop(double x, double loss)
{
    if (!(x >= PFLEX_PFI_MIN_REDUCTION))
        return 1;
    if (!(loss >= PFLEX_PFI_MIN_LOSS))
        return 2;
    return 0;
}

void pflex_pfi_ratio_xl(const double *x, const double *loss, size_t n,
                        struct pflex_pfi_ratio *out)
{
    double sum = 0;
    out->used = out->not_binding = out->noise = 0;
    for (size_t i = 0; i < n; i++) {
        if (x[i] == 0 && loss[i] == 0)
            continue;
        switch (ratio_drop(x[i], loss[i])) {
        case 1: out->not_binding++; break;
        case 2: out->noise++; break;
        default: sum += x[i] / loss[i]; out->used++;
        }
    }
    out->valid = out->used > 0;
    out->pfi = out->valid ? sum / out->used : NAN;
    out->reason = ratio_reason(out);
}

/* ---- shared: averaging, the grid ------------------------------------- */

static int cmp_cap(const void *a, const void *b)
{
    double x = ((const struct pflex_sweep_point *)a)->cap_w;
    double y = ((const struct pflex_sweep_point *)b)->cap_w;
    return (x > y) - (x < y);
}

static int check_points(const struct pflex_sweep_point *pts, size_t npts, pflex_error_t *err)
{
    if (npts == 0) {
        errno = EINVAL;
        return pflex_error_set(err, "no measurements");
    }
    for (size_t i = 0; i < npts; i++)
        if (!isfinite(pts[i].cap_w) || !isfinite(pts[i].power_w) || !isfinite(pts[i].throughput)
            || pts[i].power_w < 0 || pts[i].throughput < 0) {
            errno = EINVAL;
            return pflex_error_set(err, "point %zu: cap, power and throughput must be finite "
                                   "and not negative", i + 1);
        }
    return 0;
}

/* Whether the caps strictly ascend (the sweep reader's order: nothing to
 * average, nothing to sort). */
static int strictly_ascending(const struct pflex_sweep_point *pts, size_t npts)
{
    for (size_t i = 1; i < npts; i++)
        if (!(pts[i].cap_w > pts[i - 1].cap_w))
            return 0;
    return 1;
}

/* A copy of pts in ascending cap order, points at the same cap averaged
 * (power and throughput separately, weighted by rows, a row count of 0
 * counting as 1); a point alone at its cap is copied as it is.  Returns the
 * copy (malloc'd) and *n, or NULL (errno ENOMEM). */
static struct pflex_sweep_point *averaged(const struct pflex_sweep_point *pts, size_t npts,
                                          size_t *n)
{
    struct pflex_sweep_point *a = malloc(npts * sizeof *a);
    if (!a)
        return NULL;
    memcpy(a, pts, npts * sizeof *a);
    if (!strictly_ascending(a, npts))
        qsort(a, npts, sizeof *a, cmp_cap);
    size_t m = 0;
    for (size_t i = 0; i < npts;) {
        size_t j = i + 1;
        while (j < npts && a[j].cap_w == a[i].cap_w)
            j++;
        if (j - i == 1) {
            a[m++] = a[i];
        } else {
            double w = 0, pw = 0, tp = 0;
            unsigned rows = 0, line = a[i].line;
            for (size_t k = i; k < j; k++) {
                double wk = a[k].rows ? a[k].rows : 1;
                w += wk;
                pw += wk * a[k].power_w;
                tp += wk * a[k].throughput;
                rows += a[k].rows ? a[k].rows : 1;
                if (a[k].line && (!line || a[k].line < line))
                    line = a[k].line;
            }
            struct pflex_sweep_point p = {a[i].cap_w, pw / w, tp / w, rows, line};
            a[m++] = p;
        }
        i = j;
    }
    *n = m;
    return a;
}

static int in_grid(double cap, const double *grid, size_t ngrid)
{
    if (!ngrid)
        return 1;
    for (size_t g = 0; g < ngrid; g++)
        if (fabs(cap - grid[g]) <= 0.5)
            return 1;
    return 0;
}

/* Every grid cap was measured (a[] ascending); else -1 with the caps that
 * were, or with partial, the count of those that were not in *missing. */
static int check_grid(const struct pflex_sweep_point *a, size_t n, const double *grid,
                      size_t ngrid, int partial, unsigned *missing, pflex_error_t *err)
{
    for (size_t g = 0; g < ngrid; g++) {
        if (!isfinite(grid[g])) {
            errno = EINVAL;
            return pflex_error_set(err, "grid cap %g W is not a number", grid[g]);
        }
        size_t i = 0;
        while (i < n && !(fabs(a[i].cap_w - grid[g]) <= 0.5))
            i++;
        if (i < n)
            continue;
        if (partial) {
            ++*missing;
            continue;
        }
        char caps[160];
        size_t len = 0;
        for (size_t k = 0; k < n && len < sizeof caps - 24; k++)
            len += (size_t)snprintf(caps + len, sizeof caps - len, "%s%g", k ? "/" : "", a[k].cap_w);
        if (len >= sizeof caps - 24)
            snprintf(caps + len, sizeof caps - len, "/...");
        errno = EINVAL;
        return pflex_error_set(err, "grid cap %g W was not measured (measured: %s W)", grid[g], caps);
    }
    return 0;
}

/* The ratio over averaged, ascending points a[0..n), baseline a[n-1]. */
static void ratio_of(const struct pflex_sweep_point *a, size_t n, const double *grid,
                     size_t ngrid, struct pflex_pfi_ratio *out, enum pflex_pfi_use *use)
{
    double p0 = a[n - 1].power_w, t0 = a[n - 1].throughput, sum = 0;
    out->used = out->not_binding = out->noise = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (!in_grid(a[i].cap_w, grid, ngrid))
            continue;
        double x = 1.0 - a[i].power_w / p0, l = 1.0 - a[i].throughput / t0;
        switch (ratio_drop(x, l)) {
        case 1:
            out->not_binding++;
            if (use)
                use[i] = PFLEX_PFI_USE_NOT_BINDING;
            break;
        case 2:
            out->noise++;
            if (use)
                use[i] = PFLEX_PFI_USE_NOISE;
            break;
        default:
            sum += x / l;
            out->used++;
            if (use)
                use[i] = PFLEX_PFI_USE_USED;
        }
    }
    out->valid = out->used > 0;
    out->pfi = out->valid ? sum / out->used : NAN;
    out->reason = ratio_reason(out);
}

static int check_baseline(const struct pflex_sweep_point *b, pflex_error_t *err)
{
    errno = EINVAL;
    if (!(b->throughput > 0))
        return pflex_error_set(err, "baseline throughput at %g W is not positive", b->cap_w);
    if (!(b->power_w > 0))
        return pflex_error_set(err, "baseline power at %g W is not positive", b->cap_w);
    return 0;
}

int pflex_pfi_ratio(const struct pflex_sweep_point *pts, size_t npts,
                    const double *grid_w, size_t ngrid,
                    struct pflex_pfi_ratio *out, pflex_error_t *err)
{
    if (check_points(pts, npts, err) < 0)
        return -1;
    const struct pflex_sweep_point *a = pts;
    struct pflex_sweep_point *copy = NULL;
    size_t n = npts;
    if (!strictly_ascending(pts, npts)) {
        if (!(copy = averaged(pts, npts, &n))) {
            errno = ENOMEM;
            return pflex_error_set(err, "out of memory");
        }
        a = copy;
    }
    int rc = -1;
    if (check_baseline(&a[n - 1], err) == 0 && check_grid(a, n, grid_w, ngrid, 0, NULL, err) == 0) {
        ratio_of(a, n, grid_w, ngrid, out, NULL);
        rc = 0;
    }
    free(copy);
    return rc;
}

/* ---- names and parsing ----------------------------------------------- */

static const char *const metric_names[PFLEX_PFI_METRICS] = {
    "ratio", "area", "elasticity", "loss-area",
};

const char *pflex_pfi_metric_name(enum pflex_pfi_metric m)
{
    return (unsigned)m < PFLEX_PFI_METRICS ? metric_names[m] : NULL;
}

int pflex_pfi_metric_parse(const char *s, enum pflex_pfi_metric *out, pflex_error_t *err)
{
    for (int m = 0; s && m < PFLEX_PFI_METRICS; m++)
        if (!strcmp(s, metric_names[m])) {
            *out = (enum pflex_pfi_metric)m;
            return 0;
        }
    return pflex_error_set(err, "'%.40s%s' is not a metric (ratio, area, elasticity, loss-area)",
                           s ? s : "", s && strlen(s) > 40 ? "..." : "");
}

const char *pflex_pfi_use_name(enum pflex_pfi_use u)
{
    static const char *const names[] = {"baseline", "used", "off-grid", "not-binding", "noise",
                                        "not-positive"};
    return (unsigned)u < sizeof names / sizeof *names ? names[u] : NULL;
}

int pflex_pfi_grid_parse(const char *s, double *grid_w, size_t *n, pflex_error_t *err)
{
    size_t k = 0;
    if (!s)
        return pflex_error_set(err, "no grid");
    for (const char *p = s;;) {
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *a = p, *b = e;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        size_t len = (size_t)(b - a);
        if (len == 0)
            return pflex_error_set(err, "grid item %zu is empty (want W,W,... e.g. 200,500,600,700)",
                                   k + 1);
        char buf[40];
        int ok = len < sizeof buf;
        for (size_t i = 0; ok && i < len; i++)
            ok = strchr("0123456789.eE+-", a[i]) != NULL;
        double v = 0;
        if (ok) {
            memcpy(buf, a, len);
            buf[len] = 0;
            char *end;
            errno = 0;
            v = strtod(buf, &end);
            ok = *end == 0 && end != buf && errno == 0 && isfinite(v) && v > 0 && v <= 1e5;
        }
        if (!ok)
            return pflex_error_set(err, "grid item %zu '%.*s%s' is not a cap in watts "
                                   "(a number in (0, 100000])", k + 1, len > 32 ? 32 : (int)len, a,
                                   len > 32 ? "..." : "");
        if (k == PFLEX_PFI_GRID_MAX)
            return pflex_error_set(err, "more than %d caps in the grid", PFLEX_PFI_GRID_MAX);
        size_t i = k++;
        while (i > 0 && grid_w[i - 1] > v) {   /* insertion: ascending */
            grid_w[i] = grid_w[i - 1];
            i--;
        }
        grid_w[i] = v;
        if (!*e)
            break;
        p = e + 1;
    }
    for (size_t i = 1; i < k; i++)
        if (grid_w[i] == grid_w[i - 1])
            return pflex_error_set(err, "grid cap %g W is given twice", grid_w[i]);
    *n = k;
    return 0;
}

/* ---- area, elasticity ------------------------------------------------ */

struct uv {
    double u, v, cap;
};

static int cmp_uv(const void *a, const void *b)
{
    const struct uv *p = a, *q = b;
    if (p->u != q->u)
        return (p->u > q->u) - (p->u < q->u);
    return (p->cap > q->cap) - (p->cap < q->cap);
}

/* The trapezoid integral of v - u through (0,0), w[0..m) in order of u
 * (points of equal u averaged), and (1,1).  Sorts w. */
static double area_of(struct uv *w, size_t m)
{
    qsort(w, m, sizeof *w, cmp_uv);
    double a = 0, pu = 0, pf = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        double vs = 0;
        while (j < m && w[j].u == w[i].u)
            vs += w[j++].v;
        double u = w[i].u, f = (j - i == 1 ? w[i].v : vs / (double)(j - i)) - u;
        a += 0.5 * (u - pu) * (pf + f);
        pu = u, pf = f;
        i = j;
    }
    return a + 0.5 * (1.0 - pu) * pf;
}

/* ---- one entry point ------------------------------------------------- */

static int nomem(pflex_error_t *err)
{
    errno = ENOMEM;
    return pflex_error_set(err, "out of memory");
}

void pflex_pfi_result_fini(struct pflex_pfi_result *r)
{
    free(r->points);
    r->points = NULL;
    r->npoints = 0;
}

/* Long: the SPEC's definition in its order (checks, baseline, shed, grid,
 * the metric's sum), each step a few lines on the same working arrays. */
int pflex_pfi_eval(const struct pflex_sweep_point *pts, size_t npts,
                   const struct pflex_pfi_opts *opts, struct pflex_pfi_result *out,
                   pflex_error_t *err)
{
    memset(out, 0, sizeof *out);
    out->pfi = out->range_used = out->alpha = out->r2 = NAN;
    if ((unsigned)opts->metric >= PFLEX_PFI_METRICS) {
        errno = EINVAL;
        return pflex_error_set(err, "unknown metric %d", (int)opts->metric);
    }
    out->metric = opts->metric;
    double range = opts->range > 0 ? opts->range : PFLEX_PFI_RANGE_DEFAULT;
    if (!(range <= 1)) {
        errno = EINVAL;
        return pflex_error_set(err, "range %g is not in (0, 1]", range);
    }
    if (check_points(pts, npts, err) < 0)
        return -1;
    size_t n;
    struct pflex_sweep_point *a = averaged(pts, npts, &n), *sub = NULL;
    struct pflex_pfi_point *pp = NULL;
    struct uv *w = NULL;
    double *lx = NULL, *ly = NULL;
    struct pflex_curve all = {0}, sel = {0};
    int rc = -1;
    if (!a) {
        nomem(err);
        goto out;
    }
    const struct pflex_sweep_point *b = &a[n - 1];
    if (check_baseline(b, err) < 0 || check_grid(a, n, opts->grid_w, opts->ngrid, opts->grid_partial,
                                            &out->grid_missing, err) < 0)
        goto out;
    pp = malloc(n * sizeof *pp);
    sub = malloc(n * sizeof *sub);
    w = malloc(n * sizeof *w);
    lx = malloc(n * sizeof *lx);
    ly = malloc(n * sizeof *ly);
    if (!pp || !sub || !w || !lx || !ly) {
        nomem(err);
        goto out;
    }
    out->p0_w = b->power_w;
    out->t0 = b->throughput;
    out->cap0_w = b->cap_w;
    size_t nsub = 0;
    for (size_t i = 0; i < n; i++) {
        pp[i].cap_w = a[i].cap_w;
        pp[i].power_w = a[i].power_w;
        pp[i].throughput = a[i].throughput;
        pp[i].x = 1.0 - a[i].power_w / b->power_w;
        pp[i].loss = 1.0 - a[i].throughput / b->throughput;
        pp[i].use = i + 1 == n ? PFLEX_PFI_USE_BASELINE
                  : in_grid(a[i].cap_w, opts->grid_w, opts->ngrid) ? PFLEX_PFI_USE_USED
                  : PFLEX_PFI_USE_OFF_GRID;
        if (pp[i].use == PFLEX_PFI_USE_OFF_GRID)
            out->off_grid++;
        else
            sub[nsub++] = a[i];
    }
    /* The job's own shed, from every measured point. */
    if (pflex_curve_init(&all, a, n, err) < 0) {
        if (errno != ENOMEM)
            errno = EINVAL;
        goto out;
    }
    out->x_max = all.x_max;
    for (int k = 0; k < 4; k++) {
        out->shed[k] = pflex_curve_shed(&all, pflex_tier_floors[k]);
        out->shed_bound[k] = out->shed[k] >= all.x_max;
    }
    enum pflex_pfi_use *use = malloc(n * sizeof *use);
    if (!use) {
        nomem(err);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        use[i] = pp[i].use;
    switch (opts->metric) {
    case PFLEX_PFI_METRIC_RATIO: {
        struct pflex_pfi_ratio r;
        ratio_of(a, n, opts->grid_w, opts->ngrid, &r, use);
        out->valid = r.valid;
        out->reason = r.reason;
        out->pfi = r.pfi;
        break;
    }
    case PFLEX_PFI_METRIC_AREA: {
        size_t m = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            if (use[i] != PFLEX_PFI_USE_USED)
                continue;
            if (!(pp[i].x > 0)) {
                use[i] = PFLEX_PFI_USE_NOT_BINDING;
                continue;
            }
            struct uv e = {a[i].power_w / b->power_w, a[i].throughput / b->throughput, a[i].cap_w};
            w[m++] = e;
        }
        if (m) {
            out->pfi = area_of(w, m);
            out->valid = 1;
        } else {
            out->reason = "no cap binds (no capped point draws under the baseline power)";
        }
        break;
    }
    case PFLEX_PFI_METRIC_ELASTICITY: {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (use[i] == PFLEX_PFI_USE_OFF_GRID)
                continue;
            if (!(a[i].power_w > 0) || !(a[i].throughput > 0)) {
                use[i] = PFLEX_PFI_USE_NOT_POSITIVE;
                continue;
            }
            lx[m] = log(a[i].power_w);
            ly[m] = log(a[i].throughput);
            m++;
        }
        int spread = 0;
        for (size_t i = 1; i < m && !spread; i++)
            spread = lx[i] != lx[0];
        if (m < 2) {
            out->reason = "no capped point to fit";
        } else if (!spread) {
            out->reason = "every point drew the same power: no slope to fit";
        } else {
            double c0, c1, v00, v01, v11, sumsq, mean = 0, tss = 0;
            gsl_fit_linear(lx, 1, ly, 1, m, &c0, &c1, &v00, &v01, &v11, &sumsq);
            for (size_t i = 0; i < m; i++)
                mean += ly[i];
            mean /= (double)m;
            for (size_t i = 0; i < m; i++)
                tss += (ly[i] - mean) * (ly[i] - mean);
            out->alpha = c1;
            out->r2 = tss > 0 ? 1.0 - sumsq / tss : NAN;
            out->pfi = 1.0 - c1;
            out->valid = isfinite(out->pfi);
            if (!out->valid)
                out->reason = "the fit did not converge";
        }
        break;
    }
    case PFLEX_PFI_METRIC_LOSS_AREA: {
        for (size_t i = 0; i + 1 < n; i++)
            if (use[i] == PFLEX_PFI_USE_USED && !(pp[i].x > 0))
                use[i] = PFLEX_PFI_USE_NOT_BINDING;
        if (pflex_curve_init(&sel, sub, nsub, err) < 0) {
            if (errno != ENOMEM)
                errno = EINVAL;
            free(use);
            goto out;
        }
        struct pflex_pfi p;
        pflex_pfi_compute(&sel, range, &p);
        out->valid = p.valid;
        out->reason = p.reason;
        out->pfi = p.pfi;
        out->range_used = p.valid ? p.range_used : NAN;
        break;
    }
    }
    for (size_t i = 0; i < n; i++) {
        pp[i].use = use[i];
        switch (use[i]) {
        case PFLEX_PFI_USE_USED: out->points_used++; break;
        case PFLEX_PFI_USE_NOT_BINDING: out->not_binding++; break;
        case PFLEX_PFI_USE_NOISE: out->noise++; break;
        case PFLEX_PFI_USE_NOT_POSITIVE: out->not_positive++; break;
        default: break;
        }
    }
    free(use);
    out->points_dropped = out->not_binding + out->noise + out->not_positive;
    out->points = pp;
    out->npoints = n;
    pp = NULL;
    rc = 0;
out:
    if (all.x)
        pflex_curve_fini(&all);
    if (sel.x)
        pflex_curve_fini(&sel);
    free(a);
    free(sub);
    free(w);
    free(lx);
    free(ly);
    free(pp);
    if (rc < 0)
        memset(out, 0, sizeof *out), out->pfi = NAN;
    return rc;
}
