/* correlate.c — Pearson, Spearman, bootstrap intervals, BH q-values (GSL). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "pflex/correlate.h"

double pflex_pearson(const double *x, const double *y, size_t n)
{
    if (n < 3)
        return NAN;
    double sx = gsl_stats_sd(x, 1, n), sy = gsl_stats_sd(y, 1, n);
    if (!(sx > 0) || !(sy > 0))
        return NAN;
    return gsl_stats_correlation(x, 1, y, 1, n);
}

double pflex_spearman(const double *x, const double *y, size_t n)
{
    if (n < 3)
        return NAN;
    double *w = malloc(2 * n * sizeof *w);
    if (!w)
        return NAN;
    double sx = gsl_stats_sd(x, 1, n), sy = gsl_stats_sd(y, 1, n);
    double r = NAN;
    if (sx > 0 && sy > 0)
        r = gsl_stats_spearman(x, 1, y, 1, n, w);
    free(w);
    return r;
}

static double t_pvalue(double r, size_t n)
{
    if (isnan(r) || n < 3)
        return NAN;
    if (fabs(r) >= 1)
        return 0;
    double df = (double)n - 2, t = r * sqrt(df / (1 - r * r));
    return 2 * gsl_cdf_tdist_Q(fabs(t), df);
}

struct pv { double p; size_t i; };
static int cmp_pv(const void *a, const void *b)
{
    const struct pv *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

void pflex_bh_qvalues(const double *p, size_t n, double *q)
{
    struct pv *v = malloc((n ? n : 1) * sizeof *v);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        q[i] = NAN;
        if (!isnan(p[i]) && v)
            v[m++] = (struct pv){p[i], i};
    }
    if (!v)
        return;
    qsort(v, m, sizeof *v, cmp_pv);
    double run = 1;
    for (size_t k = m; k-- > 0;) {
        double val = v[k].p * (double)m / (double)(k + 1);
        if (val < run)
            run = val;
        q[v[k].i] = run;
    }
    free(v);
}

int pflex_correlate(const double *x, const double *y, size_t n, size_t nf, unsigned boot,
                    unsigned long seed, double level, struct pflex_corr_row *out,
                    pflex_error_t *err)
{
    size_t n1 = n ? n : 1, b1 = boot ? boot : 1, f1 = nf ? nf : 1;
    double *a = malloc(n1 * sizeof *a), *b = malloc(n1 * sizeof *b);
    double *ra = malloc(n1 * sizeof *ra), *rb = malloc(n1 * sizeof *rb);
    double *bp = malloc(b1 * sizeof *bp), *bs = malloc(b1 * sizeof *bs);
    double *pp = calloc(f1, sizeof *pp), *ps = calloc(f1, sizeof *ps);
    double *qq = malloc(f1 * sizeof *qq);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int rc = -1;
    if (!a || !b || !ra || !rb || !bp || !bs || !pp || !ps || !qq || !rng) {
        pflex_error_set(err, "correlate: out of memory");
        goto out;
    }
    double alpha = (1 - level) / 2;
    for (size_t f = 0; f < nf; f++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!isnan(x[i * nf + f]) && !isnan(y[i])) {
                a[m] = x[i * nf + f];
                b[m] = y[i];
                m++;
            }
        struct pflex_corr_row *o = &out[f];
        o->n = m;
        o->pearson.r = pflex_pearson(a, b, m);
        o->spearman.r = pflex_spearman(a, b, m);
        o->pearson.p = t_pvalue(o->pearson.r, m);
        o->spearman.p = t_pvalue(o->spearman.r, m);
        o->pearson.lo = o->pearson.hi = o->spearman.lo = o->spearman.hi = NAN;
        /* The same seed for every feature: the intervals do not depend on
         * which features were asked for. */
        gsl_rng_set(rng, seed);
        size_t nbp = 0, nbs = 0;
        for (unsigned k = 0; m >= 3 && k < boot; k++) {
            for (size_t i = 0; i < m; i++) {
                size_t j = gsl_rng_uniform_int(rng, m);
                ra[i] = a[j];
                rb[i] = b[j];
            }
            double r1 = pflex_pearson(ra, rb, m), r2 = pflex_spearman(ra, rb, m);
            if (!isnan(r1))
                bp[nbp++] = r1;
            if (!isnan(r2))
                bs[nbs++] = r2;
        }
        if (nbp >= 10) {
            gsl_sort(bp, 1, nbp);
            o->pearson.lo = gsl_stats_quantile_from_sorted_data(bp, 1, nbp, alpha);
            o->pearson.hi = gsl_stats_quantile_from_sorted_data(bp, 1, nbp, 1 - alpha);
        }
        if (nbs >= 10) {
            gsl_sort(bs, 1, nbs);
            o->spearman.lo = gsl_stats_quantile_from_sorted_data(bs, 1, nbs, alpha);
            o->spearman.hi = gsl_stats_quantile_from_sorted_data(bs, 1, nbs, 1 - alpha);
        }
        pp[f] = o->pearson.p;
        ps[f] = o->spearman.p;
    }
    pflex_bh_qvalues(pp, nf, qq);
    for (size_t f = 0; f < nf; f++)
        out[f].pearson.q = qq[f];
    pflex_bh_qvalues(ps, nf, qq);
    for (size_t f = 0; f < nf; f++)
        out[f].spearman.q = qq[f];
    rc = 0;
out:
    free(a); free(b); free(ra); free(rb); free(bp); free(bs); free(pp); free(ps); free(qq);
    if (rng)
        gsl_rng_free(rng);
    return rc;
}

/* Whether row i goes before row j in pflex_corr_rank's order. */
static int ranks_before(const struct pflex_corr_row *rows, size_t i, size_t j)
{
    double x = fabs(rows[i].spearman.r), y = fabs(rows[j].spearman.r);
    if (isnan(x) != isnan(y))
        return !isnan(x);
    if (!isnan(x) && x != y)
        return x > y;
    return i < j;
}

void pflex_corr_rank(const struct pflex_corr_row *rows, size_t n, size_t *order)
{
    for (size_t i = 0; i < n; i++) {     /* a few dozen features: insertion */
        size_t k = i;
        for (; k > 0 && ranks_before(rows, i, order[k - 1]); k--)
            order[k] = order[k - 1];
        order[k] = i;
    }
}
