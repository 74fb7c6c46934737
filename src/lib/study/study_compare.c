/* study_compare.c — the study's comparison with its paper's numbers
 * (pflex/study/study.h): simulated beside measured ratio PFI per group, the
 * cluster medians, Kruskal-Wallis and Dunn-Holm, H100 vs H200, the grid
 * sensitivity. */
#include <math.h>
#include <stdlib.h>
#include "lib/study/study_int.h"
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>


/* The study's three clusters: dense (PT + LoRA), MoE PT, MoE LoRA. */
static int cluster_of(const struct pflex_fleet_run *f)
{
    return !f->is_moe ? 0 : f->is_finetune ? 2 : 1;
}

/* Mid-ranks of v[0..n) into rank[], and the tie term sum(t^3 - t). */
static double midranks(const double *v, size_t n, double *rank)
{
    size_t *p = malloc(n * sizeof *p);
    double ties = 0;
    if (!p)
        return NAN;
    gsl_sort_index(p, v, 1, n);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && v[p[j + 1]] == v[p[i]])
            j++;
        double t = (double)(j - i + 1);
        for (size_t k = i; k <= j; k++)
            rank[p[k]] = (double)(i + j) / 2 + 1;
        ties += t * t * t - t;
        i = j + 1;
    }
    free(p);
    return ties;
}

/* Kruskal-Wallis over the clusters and Dunn's pairwise test with Holm's
 * correction (as the study), from GSL's chi-square and normal tails. */
static json_t *kruskal_dunn(const double *v, const int *grp, size_t n)
{
    double *rank = malloc((n ? n : 1) * sizeof *rank);
    json_t *o = json_object();
    if (!rank || n < 3) {
        free(rank);
        return o;
    }
    double ties = midranks(v, n, rank), rs[3] = {0}, N = (double)n;
    size_t cnt[3] = {0};
    for (size_t i = 0; i < n; i++) {
        rs[grp[i]] += rank[i];
        cnt[grp[i]]++;
    }
    double h = 0;
    int k = 0;
    for (int g = 0; g < 3; g++)
        if (cnt[g]) {
            h += rs[g] * rs[g] / (double)cnt[g];
            k++;
        }
    h = 12 / (N * (N + 1)) * h - 3 * (N + 1);
    h /= 1 - ties / (N * N * N - N);
    json_object_set_new(o, "kruskal_h", json_real(h));
    json_object_set_new(o, "kruskal_p", json_real(k > 1 ? gsl_cdf_chisq_Q(h, k - 1) : NAN));
    static const char *const names[] = {"dense-moe_pt", "dense-moe_lora", "moe_pt-moe_lora"};
    static const int pa[] = {0, 0, 1}, pb[] = {1, 2, 2};
    double p[3], s2 = (N * (N + 1) / 12 - ties / (12 * (N - 1)));
    for (int c = 0; c < 3; c++) {
        int a = pa[c], b = pb[c];
        if (!cnt[a] || !cnt[b]) {
            p[c] = NAN;
            continue;
        }
        double z = (rs[a] / cnt[a] - rs[b] / cnt[b]) / sqrt(s2 * (1.0 / cnt[a] + 1.0 / cnt[b]));
        p[c] = 2 * gsl_cdf_ugaussian_Q(fabs(z));
    }
    /* Holm: sort the p-values, multiply the i-th smallest by (m - i), keep
     * the adjusted values monotone. */
    size_t ord[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (!(p[ord[i]] <= p[ord[j]])) {
                size_t t = ord[i];
                ord[i] = ord[j];
                ord[j] = t;
            }
    json_t *d = json_object();
    double prev = 0;
    for (int i = 0; i < 3; i++) {
        double adj = fmin(1, fmax(prev, p[ord[i]] * (3 - i)));
        prev = adj;
        json_object_set_new(d, names[ord[i]], json_real(adj));
    }
    json_object_set_new(o, "dunn_holm_p", d);
    free(rank);
    return o;
}

static double median_of(double *v, size_t n)
{
    if (!n)
        return NAN;
    gsl_sort(v, 1, n);
    return gsl_stats_median_from_sorted_data(v, 1, n);
}

/* Per headline group simulated beside measured ratio PFI, the cluster
 * medians against the study's 1.27 / 1.43 / 2.10, Kruskal-Wallis and Dunn
 * (simulated), the H100-vs-H200 rank correlation, the grid sensitivity. */
json_t *study_compare(const struct pflex_report_run *runs, size_t n, size_t *pairs)
{
    static const double study_median[3] = {1.27, 1.43, 2.10};
    static const char *const cname[3] = {"dense", "moe_pt", "moe_lora"};
    double v[64], med_in[3][64], grid6[64], grid4[64], ha[8], hb[8], work[16];
    int grp[64];
    size_t nv = 0, nc[3] = {0}, ng = 0, nh = 0;
    json_t *o = json_object(), *groups = json_array();
    double abs_err = 0;
    size_t nerr = 0;
    for (size_t i = 0; i < n && nv < 64; i++) {
        const struct pflex_report_run *r = &runs[i];
        if (r->fleet.split == PFLEX_FLEET_H100 && r->partner >= 0 && r->pfi_valid
            && runs[r->partner].pfi_valid && nh < 8) {
            ha[nh] = r->pfi;
            hb[nh++] = runs[r->partner].pfi;
        }
        if (r->fleet.split != PFLEX_FLEET_MAIN || !r->pfi_valid)
            continue;
        int c = cluster_of(&r->fleet);
        v[nv] = r->pfi;
        grp[nv++] = c;
        med_in[c][nc[c]++] = r->pfi;
        if (r->fleet.ncaps == 6 && isfinite(r->pfi_grid4)) {
            grid6[ng] = r->pfi;
            grid4[ng++] = r->pfi_grid4;
        }
        json_t *g = json_object();
        json_object_set_new(g, "group", json_string(r->fleet.label));
        json_object_set_new(g, "simulated", json_real(r->pfi));
        json_object_set_new(g, "measured", isfinite(r->fleet.measured_pfi)
                                           ? json_real(r->fleet.measured_pfi) : json_null());
        json_array_append_new(groups, g);
        if (isfinite(r->fleet.measured_pfi)) {
            abs_err += fabs(r->pfi - r->fleet.measured_pfi);
            nerr++;
        }
    }
    json_object_set_new(o, "groups", groups);
    json_object_set_new(o, "mean_abs_error", nerr ? json_real(abs_err / nerr) : json_null());
    json_t *med = json_object();
    for (int c = 0; c < 3; c++) {
        json_t *m = json_object();
        double x = median_of(med_in[c], nc[c]);
        json_object_set_new(m, "n", json_integer((json_int_t)nc[c]));
        json_object_set_new(m, "simulated", isfinite(x) ? json_real(x) : json_null());
        json_object_set_new(m, "study", json_real(study_median[c]));
        json_object_set_new(med, cname[c], m);
    }
    json_object_set_new(o, "medians", med);
    json_t *kw = kruskal_dunn(v, grp, nv);
    json_object_set_new(o, "kruskal_dunn", kw);
    double rho = nh > 2 ? gsl_stats_spearman(ha, 1, hb, 1, nh, work) : NAN;
    json_object_set_new(o, "h100_h200_spearman", isfinite(rho) ? json_real(rho) : json_null());
    double rho_g = ng > 2 ? gsl_stats_spearman(grid6, 1, grid4, 1, ng, work) : NAN;
    double rel[64];
    for (size_t i = 0; i < ng; i++)
        rel[i] = grid4[i] / grid6[i] - 1;
    double med_rel = median_of(rel, ng);
    json_t *gs = json_object();
    json_object_set_new(gs, "groups", json_integer((json_int_t)ng));
    json_object_set_new(gs, "median_change", isfinite(med_rel) ? json_real(med_rel) : json_null());
    json_object_set_new(gs, "spearman", isfinite(rho_g) ? json_real(rho_g) : json_null());
    json_object_set_new(o, "grid_sensitivity", gs);
    *pairs = nh;
    return o;
}
