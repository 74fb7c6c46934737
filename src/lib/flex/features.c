/* features.c — per-job features of an uncapped run, from telemetry samples
 * (the study's windows and statistic) or from a sweep's telemetry columns. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "pflex/flex/features.h"
#include "lib/util/grow.h"

static const char *const feat_names[PFLEX_FEAT_COUNT] = {
    "dram_copy_product", "arith_intensity", "dram_active", "mem_copy_util", "tensor_active",
    "sm_active", "sm_occupancy", "gr_engine_active", "gpu_util", "power_over_limit",
    "sm_clock_over_max", "mem_clock_mhz", "pcie_gbs", "nvlink_gbs", "dram_copy_cv", "log2_gpus", "arch_moe", "task_ft",
};
static const char *const feat_units[PFLEX_FEAT_COUNT] = {
    "ratio", "ratio", "ratio", "%", "ratio", "ratio", "ratio", "ratio", "%", "ratio", "ratio",
    "MHz", "GB/s", "GB/s", "ratio", "log2", "0/1", "0/1",
};

const char *pflex_feat_name(enum pflex_feat f)
{
    return (unsigned)f < PFLEX_FEAT_COUNT ? feat_names[f] : "?";
}

const char *pflex_feat_unit(enum pflex_feat f)
{
    return (unsigned)f < PFLEX_FEAT_COUNT ? feat_units[f] : "?";
}

int pflex_feat_by_name(const char *s)
{
    for (int i = 0; i < PFLEX_FEAT_COUNT; i++)
        if (!strcmp(s, feat_names[i]))
            return i;
    return -1;
}

static const char *const stat_names[PFLEX_STAT_COUNT] = {"top10", "median", "p10", "p90",
                                                         "mean"};

const char *pflex_feat_stat_name(enum pflex_feat_stat s)
{
    return (unsigned)s < PFLEX_STAT_COUNT ? stat_names[s] : "?";
}

int pflex_feat_stat_parse(const char *s, enum pflex_feat_stat *out)
{
    for (int i = 0; i < PFLEX_STAT_COUNT; i++)
        if (!strcmp(s, stat_names[i])) {
            *out = (enum pflex_feat_stat)i;
            return 0;
        }
    return -1;
}

double pflex_feat_stat(double *x, size_t n, enum pflex_feat_stat s)
{
    if (n == 0)
        return NAN;
    if (s == PFLEX_STAT_MEAN)
        return gsl_stats_mean(x, 1, n);
    gsl_sort(x, 1, n);
    switch (s) {
    case PFLEX_STAT_TOP10: {
        /* The top 10 % of the samples, at least one. */
        size_t k = (size_t)ceil(0.10 * (double)n);
        if (k < 1)
            k = 1;
        return gsl_stats_mean(x + (n - k), 1, k);
    }
    case PFLEX_STAT_MEDIAN: return gsl_stats_median_from_sorted_data(x, 1, n);
    case PFLEX_STAT_P10: return gsl_stats_quantile_from_sorted_data(x, 1, n, 0.10);
    case PFLEX_STAT_P90: return gsl_stats_quantile_from_sorted_data(x, 1, n, 0.90);
    default: return NAN;
    }
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return 1;
    return 0;
}

double pflex_gpu_max_sm_clock_mhz(const char *model)
{
    static const struct { const char *key; double mhz; } table[] = {
        {"GB200", 2062}, {"B200", 1965}, {"H200", 1980}, {"H100", 1980}, {"H800", 1980},
        {"A100", 1410}, {"A800", 1410}, {"L40S", 2520}, {"L40", 2490}, {"V100", 1530},
    };
    if (!model)
        return NAN;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (contains_nocase(model, table[i].key))
            return table[i].mhz;
    return NAN;
}

void pflex_feat_set_fini(struct pflex_feat_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->jobs[i].job);
    free(s->jobs);
    s->jobs = NULL;
    s->n = 0;
}

/* ---- from telemetry ---- */

struct pool {
    double *v;
    size_t n, cap;
};

static int pool_add(struct pool *p, double x)
{
    if (pflex_grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v) < 0)
        return -1;
    p->v[p->n++] = x;
    return 0;
}

static int same_gpu(const struct pflex_tm_series *a, const struct pflex_tm_series *b)
{
    if (a->gpu != b->gpu || strcmp(a->host, b->host))
        return 0;
    if (!a->uuid || !b->uuid)
        return a->uuid == b->uuid;
    return !strcmp(a->uuid, b->uuid);
}

static int same_job(const struct pflex_tm_series *a, const struct pflex_tm_series *b)
{
    return a->job && b->job && !strcmp(a->job, b->job);
}

/* The last sample of a series [b, e) at or before time t, or -1. */
static long at_or_before(const struct pflex_tm_sample *s, size_t b, size_t e, double t)
{
    long lo = (long)b, hi = (long)e - 1, best = -1;
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if (s[mid].time_s <= t) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

struct span { size_t b, e; };

static int add_job(struct pflex_feat_set *out, size_t *cap, const char *job)
{
    if (pflex_grow((void **)&out->jobs, cap, out->n + 1, sizeof *out->jobs) < 0)
        return -1;
    struct pflex_job_features *f = &out->jobs[out->n];
    memset(f, 0, sizeof *f);
    if (!(f->job = strdup(job)))
        return -1;
    for (int i = 0; i < PFLEX_FEAT_COUNT; i++)
        f->v[i] = NAN;
    out->n++;
    return 0;
}

/* Long: each job's series gathered, then every feature of docs/telemetry.md
 * in its table's order, one short block each. */
int pflex_features_from_telemetry(const pflex_tm_t *t, const struct pflex_feat_opts *o,
                                  struct pflex_feat_set *out, pflex_error_t *err)
{
    struct pflex_feat_opts d = {PFLEX_STAT_TOP10, 50};
    if (!o)
        o = &d;
    double umin = o->util_min > 0 ? o->util_min : 50;
    const struct pflex_tm_sample *sm = t->samples;
    struct span *sp = calloc(t->nseries ? t->nseries : 1, sizeof *sp);
    struct pool pools[PFLEX_DCGM_COUNT] = {{0}}, prod = {0}, epow = {0};
    size_t cap = 0;
    int rc = -1;
    memset(out, 0, sizeof *out);
    if (!sp)
        return pflex_error_set(err, "features: out of memory");
    /* Each series' samples [b, e): the store is sorted. */
    for (size_t i = 0, k = 0; i < t->nseries; i++) {
        sp[i].b = k;
        while (k < t->nsamples && sm[k].series == i)
            k++;
        sp[i].e = k;
    }
    size_t i = 0;
    while (i < t->nseries) {
        if (!t->series[i].job) {
            i++;
            continue;
        }
        size_t je = i;
        while (je < t->nseries && same_job(&t->series[i], &t->series[je]))
            je++;
        for (int f = 0; f < PFLEX_DCGM_COUNT; f++)
            pools[f].n = 0;
        prod.n = epow.n = 0;
        int ngpus = 0;
        double max_sm_seen = NAN, max_sm_field = NAN;
        size_t used = 0;
        for (size_t g = i; g < je;) {
            size_t ge = g;
            while (ge < je && same_gpu(&t->series[g], &t->series[ge]))
                ge++;
            ngpus++;
            long fs[PFLEX_DCGM_COUNT];
            for (int f = 0; f < PFLEX_DCGM_COUNT; f++)
                fs[f] = -1;
            for (size_t s = g; s < ge; s++)
                fs[t->series[s].field] = (long)s;
            long us = fs[PFLEX_DCGM_GPU_UTIL] >= 0 ? fs[PFLEX_DCGM_GPU_UTIL]
                                                   : fs[PFLEX_DCGM_GR_ENGINE_ACTIVE];
            double thr = fs[PFLEX_DCGM_GPU_UTIL] >= 0 ? umin : umin / 100.0;
            double t_first = -INFINITY;
            if (us >= 0) {
                t_first = INFINITY;
                for (size_t k = sp[us].b; k < sp[us].e; k++)
                    if (sm[k].value >= thr) {
                        t_first = sm[k].time_s;
                        break;
                    }
            }
            for (size_t s = g; s < ge; s++) {
                int f = t->series[s].field;
                for (size_t k = sp[s].b; k < sp[s].e; k++) {
                    double tt = sm[k].time_s;
                    if (f == PFLEX_DCGM_SM_CLOCK && !(sm[k].value <= max_sm_seen))
                        max_sm_seen = sm[k].value;
                    if (f == PFLEX_DCGM_MAX_SM_CLOCK && !(sm[k].value <= max_sm_field))
                        max_sm_field = sm[k].value;
                    if (us >= 0) {
                        if (tt < t_first)
                            continue;
                        long u = at_or_before(sm, sp[us].b, sp[us].e, tt);
                        if (u < 0 || sm[u].value < thr)
                            continue;
                    }
                    if (pool_add(&pools[f], sm[k].value) < 0)
                        goto oom;
                    used++;
                    if (f == PFLEX_DCGM_DRAM_ACTIVE && fs[PFLEX_DCGM_MEM_COPY_UTIL] >= 0) {
                        long c = fs[PFLEX_DCGM_MEM_COPY_UTIL];
                        long m = at_or_before(sm, sp[c].b, sp[c].e, tt);
                        if (m >= 0 && sm[m].time_s == tt &&
                            pool_add(&prod, sm[k].value * sm[m].value / 100.0) < 0)
                            goto oom;
                    }
                }
            }
            /* Power from the energy counter (mJ).  An interval in which the
             * counter went down (a reset: driver reload, GPU reset) is left
             * out, time and energy both: what it held is unknown. */
            long es = fs[PFLEX_DCGM_TOTAL_ENERGY];
            if (es >= 0 && sp[es].e - sp[es].b >= 2) {
                double mj = 0, dt = 0;
                for (size_t k = sp[es].b + 1; k < sp[es].e; k++) {
                    double dlt = sm[k].value - sm[k - 1].value;
                    if (dlt >= 0) {
                        mj += dlt;
                        dt += sm[k].time_s - sm[k - 1].time_s;
                    }
                }
                if (dt > 0 && pool_add(&epow, mj / 1000.0 / dt) < 0)
                    goto oom;
            }
            g = ge;
        }
        if (add_job(out, &cap, t->series[i].job) < 0)
            goto oom;
        struct pflex_job_features *jf = &out->jobs[out->n - 1];
        double a[PFLEX_DCGM_COUNT];
        for (int f = 0; f < PFLEX_DCGM_COUNT; f++)
            a[f] = pflex_feat_stat(pools[f].v, pools[f].n, o->stat);
        jf->gpus = ngpus;
        jf->samples = used;
        jf->v[PFLEX_FEAT_DRAM_COPY] = a[PFLEX_DCGM_DRAM_ACTIVE] * a[PFLEX_DCGM_MEM_COPY_UTIL] / 100;
        jf->v[PFLEX_FEAT_ARITH_INTENSITY] =
            a[PFLEX_DCGM_DRAM_ACTIVE] > 0 ? a[PFLEX_DCGM_TENSOR_ACTIVE] / a[PFLEX_DCGM_DRAM_ACTIVE]
                                          : NAN;
        jf->v[PFLEX_FEAT_DRAM_ACTIVE] = a[PFLEX_DCGM_DRAM_ACTIVE];
        jf->v[PFLEX_FEAT_MEM_COPY_UTIL] = a[PFLEX_DCGM_MEM_COPY_UTIL];
        jf->v[PFLEX_FEAT_TENSOR_ACTIVE] = a[PFLEX_DCGM_TENSOR_ACTIVE];
        jf->v[PFLEX_FEAT_SM_ACTIVE] = a[PFLEX_DCGM_SM_ACTIVE];
        jf->v[PFLEX_FEAT_SM_OCCUPANCY] = a[PFLEX_DCGM_SM_OCCUPANCY];
        jf->v[PFLEX_FEAT_GR_ENGINE_ACTIVE] = a[PFLEX_DCGM_GR_ENGINE_ACTIVE];
        jf->v[PFLEX_FEAT_GPU_UTIL] = a[PFLEX_DCGM_GPU_UTIL];
        double power = a[PFLEX_DCGM_POWER_USAGE];
        if (isnan(power) && epow.n)
            power = gsl_stats_mean(epow.v, 1, epow.n);
        double limit = a[PFLEX_DCGM_ENFORCED_LIMIT];
        if (isnan(limit))
            limit = a[PFLEX_DCGM_POWER_LIMIT];
        jf->v[PFLEX_FEAT_POWER_OVER_LIMIT] = limit > 0 ? power / limit : NAN;
        double maxsm = !isnan(max_sm_field) ? max_sm_field : max_sm_seen;
        jf->v[PFLEX_FEAT_SM_CLOCK_OVER_MAX] = maxsm > 0 ? a[PFLEX_DCGM_SM_CLOCK] / maxsm : NAN;
        jf->v[PFLEX_FEAT_MEM_CLOCK_MHZ] = a[PFLEX_DCGM_MEM_CLOCK];
        jf->v[PFLEX_FEAT_PCIE_GBS] =
            (a[PFLEX_DCGM_PCIE_TX_BYTES] + a[PFLEX_DCGM_PCIE_RX_BYTES]) / 1e9;
        jf->v[PFLEX_FEAT_NVLINK_GBS] =
            (a[PFLEX_DCGM_NVLINK_TX_BYTES] + a[PFLEX_DCGM_NVLINK_RX_BYTES]) / 1e9;
        if (prod.n >= 2) {
            double m = gsl_stats_mean(prod.v, 1, prod.n);
            jf->v[PFLEX_FEAT_DRAM_COPY_CV] = m > 0 ? gsl_stats_sd_m(prod.v, 1, prod.n, m) / m : NAN;
        }
        jf->v[PFLEX_FEAT_LOG2_GPUS] = log2((double)ngpus);
        i = je;
    }
    rc = 0;
    goto done;
oom:
    pflex_error_set(err, "features: out of memory");
    pflex_feat_set_fini(out);
done:
    for (int f = 0; f < PFLEX_DCGM_COUNT; f++)
        free(pools[f].v);
    free(prod.v);
    free(epow.v);
    free(sp);
    return rc;
}

/* ---- from a sweep ---- */

void pflex_features_from_sweep_job(const struct pflex_sweep_job *j, struct pflex_job_features *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < PFLEX_FEAT_COUNT; i++)
        out->v[i] = NAN;
    out->gpus = j->gpus;
    out->v[PFLEX_FEAT_LOG2_GPUS] = log2(j->gpus > 0 ? (double)j->gpus : 1.0);
    if (!j->npoints)
        return;
    const struct pflex_sweep_point *b = &j->points[j->npoints - 1];
    out->v[PFLEX_FEAT_POWER_OVER_LIMIT] = b->cap_w > 0 ? b->power_w / b->cap_w : NAN;
    if (!j->telemetry)
        return;
    const double *tm = j->telemetry + (j->npoints - 1) * PFLEX_TM_COUNT;
    double dram = tm[PFLEX_TM_DRAM_ACTIVE], copy = tm[PFLEX_TM_MEM_COPY_UTIL];
    out->v[PFLEX_FEAT_DRAM_COPY] = dram * copy / 100;
    out->v[PFLEX_FEAT_ARITH_INTENSITY] = dram > 0 ? tm[PFLEX_TM_TENSOR_ACTIVE] / dram : NAN;
    out->v[PFLEX_FEAT_DRAM_ACTIVE] = dram;
    out->v[PFLEX_FEAT_MEM_COPY_UTIL] = copy;
    out->v[PFLEX_FEAT_TENSOR_ACTIVE] = tm[PFLEX_TM_TENSOR_ACTIVE];
    out->v[PFLEX_FEAT_SM_ACTIVE] = tm[PFLEX_TM_SM_ACTIVE];
    out->v[PFLEX_FEAT_SM_OCCUPANCY] = tm[PFLEX_TM_SM_OCCUPANCY];
    out->v[PFLEX_FEAT_GR_ENGINE_ACTIVE] = tm[PFLEX_TM_GR_ENGINE_ACTIVE];
    out->v[PFLEX_FEAT_GPU_UTIL] = tm[PFLEX_TM_GPU_UTIL];
    double maxsm = pflex_gpu_max_sm_clock_mhz(j->gpu);
    if (isnan(maxsm))
        for (size_t k = 0; k < j->npoints; k++) {
            double c = j->telemetry[k * PFLEX_TM_COUNT + PFLEX_TM_SM_CLOCK_MHZ];
            if (!(c <= maxsm))
                maxsm = c;
        }
    out->v[PFLEX_FEAT_SM_CLOCK_OVER_MAX] = maxsm > 0 ? tm[PFLEX_TM_SM_CLOCK_MHZ] / maxsm : NAN;
    out->v[PFLEX_FEAT_MEM_CLOCK_MHZ] = tm[PFLEX_TM_MEM_CLOCK_MHZ];
    out->v[PFLEX_FEAT_PCIE_GBS] = (tm[PFLEX_TM_PCIE_TX_BYTES] + tm[PFLEX_TM_PCIE_RX_BYTES]) / 1e9;
    out->v[PFLEX_FEAT_NVLINK_GBS] =
        (tm[PFLEX_TM_NVLINK_TX_BYTES] + tm[PFLEX_TM_NVLINK_RX_BYTES]) / 1e9;
}

int pflex_features_add_sweep(struct pflex_feat_set *s, const pflex_sweep_t *sw, const char *path,
                             pflex_error_t *err)
{
    if (!sw->has_telemetry)
        return pflex_error_set(err, "%s: the sweep has no telemetry column (dram_active, "
                               "mem_copy_util, ...)", path);
    if (!sw->njobs)
        return 0;
    void *nj = realloc(s->jobs, (s->n + sw->njobs) * sizeof *s->jobs);
    if (!nj)
        return pflex_error_sys(err, "out of memory");
    s->jobs = nj;
    for (size_t j = 0; j < sw->njobs; j++) {
        pflex_features_from_sweep_job(&sw->jobs[j], &s->jobs[s->n]);
        if (!(s->jobs[s->n].job = strdup(sw->jobs[j].name)))
            return pflex_error_sys(err, "out of memory");
        s->n++;
    }
    return 0;
}
