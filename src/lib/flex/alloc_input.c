/* alloc_input.c — an allocation problem from a sweep, a jobs file and a
 * PFI CSV (see pflex/flex/alloc.h).  A sweep alone becomes its problem as it is
 * read, job by job, keeping only the curves (x and loss) and the jobs; with
 * a jobs file the sweep is kept and curves are built in its own point
 * storage.  No allocation per job either way. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/flex/alloc.h"
#include "pflex/io/csv.h"
#include "pflex/flex/curve.h"
#include "pflex/util/gpukind.h"
#include "pflex/flex/pfi.h"
#include "pflex/io/pficsv.h"
#include "pflex/io/sweep.h"
#include "lib/util/bigmem.h"
#include "lib/util/strtab.h"
#include "lib/util/grow.h"

struct storage {
    pflex_sweep_t *sweep;
    pflex_pficsv_t *pfi;
    struct pflex_curve *curves; /* per sweep job, with a jobs file only */
    char *jobs_buf;             /* the jobs file's strings */
    const struct pflex_sweep_job **by_name;
    struct pflex_big jobs;      /* in->jobs when they are the sweep's jobs */
    struct pflex_big points;    /* their curves: x then loss, job after job */
    struct pflex_big names;     /* their names, NUL-terminated, job after job */
    double *sweep_by;           /* per sweep job (with a jobs file), the by column */
    const char **job_curve;     /* per job of a jobs file, the sweep job it runs */
    int by_known;               /* the by column is one the sweep keeps */
    size_t dram_copy_jobs;      /* sweep jobs with dram_active and mem_copy_util */
    int any_weight;             /* some sweep job's weight is not 1 */
    char *warnings;             /* in->warnings: the PFI CSV's, the sweep's, the jobs
                                 * file's, in the order they are read */
    struct pflex_alloc_fitted *fitted;  /* in->fitted; each record one allocation */
    size_t nfitted, fitted_cap;         /* records kept */
    size_t nfit_all, nflat_all;         /* in->nfitted, in->nflat */
    char **skipped;             /* in->skipped, in->skipped_why: "name\0why\0" each */
    const char **skipped_why;
    size_t nskipped, skipped_cap;
    unsigned char *curve_bad;   /* per sweep job (with a jobs file): skipped */
};

/* Forget the fitted and skipped jobs (the sweep is read again). */
static void records_clear(struct storage *st)
{
    for (size_t i = 0; i < st->nfitted; i++)
        free((void *)st->fitted[i].raw);       /* the record's allocation */
    for (size_t i = 0; i < st->nskipped; i++)
        free(st->skipped[i]);
    st->nfitted = st->nskipped = st->nfit_all = st->nflat_all = 0;
}

/* Keep a job read through the fit: its name, raw and fitted points in one
 * allocation. */
static int keep_fitted(struct storage *st, const struct pflex_sweep_job *sj,
                       const struct pflex_sweep_point *raw, const struct pflex_sweep_point *fit,
                       int flat, double min_cap_w)
{
    size_t n = sj->npoints, nl = strlen(sj->name) + 1;
    st->nfit_all++;
    st->nflat_all += (size_t)(flat != 0);
    if (st->nfitted >= PFLEX_ALLOC_FITTED_KEPT)
        return 0;
    if (pflex_grow((void **)&st->fitted, &st->fitted_cap, st->nfitted + 1, sizeof *st->fitted) < 0)
        return -1;
    struct pflex_sweep_point *p = malloc(2 * n * sizeof *p + nl);
    if (!p)
        return -1;
    memcpy(p, raw, n * sizeof *p);
    memcpy(p + n, fit, n * sizeof *p);
    char *name = (char *)(p + 2 * n);
    memcpy(name, sj->name, nl);
    st->fitted[st->nfitted++] = (struct pflex_alloc_fitted){.job = name, .n = n, .raw = p,
        .fit = p + n, .flat = flat, .min_cap_w = min_cap_w};
    return 0;
}

/* A bad sweep job left out: a warning naming the file, line and job, and
 * the record. */
static int skip_job(struct storage *st, const char *sname, const struct pflex_sweep_job *sj,
                    const char *why, pflex_error_t *err)
{
    char line[512];
    snprintf(line, sizeof line, "%s:%u: job '%s': %s; skipped (--strict makes a bad job "
             "fatal)\n", sname, sj->line, sj->name, why);
    size_t nl = strlen(sj->name) + 1, wl = strlen(why) + 1;
    char *rec = malloc(nl + wl);
    if (!rec || pflex_str_append(&st->warnings, line) < 0
        || pflex_grow((void **)&st->skipped, &st->skipped_cap, st->nskipped + 1,
                      sizeof *st->skipped) < 0) {
        free(rec);
        return pflex_error_sys(err, "%s: out of memory", sname);
    }
    memcpy(rec, sj->name, nl);
    memcpy(rec + nl, why, wl);
    st->skipped[st->nskipped++] = rec;
    return 0;
}

void pflex_alloc_input_destroy(pflex_alloc_input_t *in)
{
    if (!in)
        return;
    struct storage *st = in->priv;
    if (st) {
        pflex_sweep_destroy(st->sweep);
        pflex_pficsv_destroy(st->pfi);
        free(st->curves);
        free(st->jobs_buf);
        free(st->by_name);
        free(st->sweep_by);
        free(st->job_curve);
        free(st->warnings);
        pflex_big_free(&st->points);
        pflex_big_free(&st->names);
        records_clear(st);
        free(st->fitted);
        free(st->skipped);
        free(st->skipped_why);
        free(st->curve_bad);
        if (st->jobs.p)
            pflex_big_free(&st->jobs);
        else
            free(in->jobs);
        free(st);
    } else {
        free(in->jobs);
    }
    free(in->by);
    free(in->caps);
    free(in);
}

static int cmp_sjob(const void *a, const void *b)
{
    const struct pflex_sweep_job *const *p = a, *const *q = b;
    return strcmp((*p)->name, (*q)->name);
}

static const struct pflex_sweep_job *sweep_find(const struct storage *st, const char *name)
{
    struct pflex_sweep_job key;
    const struct pflex_sweep_job *kp = &key, *const *hit;
    key.name = name;
    hit = bsearch(&kp, st->by_name, st->sweep->njobs, sizeof *st->by_name, cmp_sjob);
    return hit ? *hit : NULL;
}

/* The settable cap range of a sweep job: its GPU kind's, else the caps
 * its curve was measured at (each of which was set), up to the baseline's. */
static void sweep_range(const struct pflex_sweep_job *sj, const struct pflex_curve *c,
                        double *lo, double *hi)
{
    const struct pflex_gpu_range *k = pflex_gpu_range_find(sj->gpu);
    if (k) {
        *lo = k->min_cap_w;
        *hi = k->max_cap_w;
        return;
    }
    *lo = *hi = c->cap0_w;
    for (size_t i = 0; i < c->n; i++)
        if (c->cap_w[i] < *lo)
            *lo = c->cap_w[i];
}

/* A sweep job's value of the by column: 1 and *v (NaN where the job has
 * none), or 0 when name is not a column the sweep keeps.  Telemetry is the
 * baseline's (the highest cap, the last point). */
static int sweep_by(const struct pflex_sweep_job *sj, const char *name, double *v)
{
    if (strcmp(name, "weight") == 0) {
        *v = sj->weight;
        return 1;
    }
    if (strcmp(name, "gpus") == 0) {
        *v = sj->gpus;
        return 1;
    }
    const double *tm = sj->telemetry && sj->npoints
        ? sj->telemetry + (sj->npoints - 1) * PFLEX_TM_COUNT : NULL;
    if (strcmp(name, "dram_copy") == 0) {
        *v = tm ? tm[PFLEX_TM_DRAM_ACTIVE] * tm[PFLEX_TM_MEM_COPY_UTIL] / 100.0 : NAN;
        return 1;
    }
    for (int f = 0; f < PFLEX_TM_COUNT; f++)
        if (strcmp(name, pflex_tm_name((enum pflex_tm)f)) == 0) {
            *v = tm ? tm[f] : NAN;
            return 1;
        }
    return 0;
}

static int sweep_has_dram_copy(const struct pflex_sweep_job *sj)
{
    const double *tm = sj->telemetry && sj->npoints
        ? sj->telemetry + (sj->npoints - 1) * PFLEX_TM_COUNT : NULL;
    return tm && isfinite(tm[PFLEX_TM_DRAM_ACTIVE]) && isfinite(tm[PFLEX_TM_MEM_COPY_UTIL]);
}

/* A sweep job's curve, built into store (3 * npoints doubles, which may
 * be where raw lies: raw is read first): raw through the monotone fit
 * (into fit, room for npoints), flat at its draw and proportional below it
 * down to its GPU kind's lowest cap where no cap binds; the record kept
 * where the curve is not the raw points.  Returns 0; 1 when the job is bad
 * (why in *bad); -1 with err set when out of memory. */
static int sweep_curve(struct storage *st, const struct pflex_sweep_job *sj,
                       const struct pflex_sweep_point *raw, struct pflex_sweep_point *fit,
                       double *store, struct pflex_curve *c, pflex_error_t *bad,
                       pflex_error_t *err)
{
    size_t np = sj->npoints;
    int moved;
    if (pflex_sweep_job_check(sj, bad) < 0)
        return 1;
    if (pflex_curve_fit_points(raw, np, fit, &moved, bad) < 0
        || pflex_curve_init_in(c, fit, np, store, bad) < 0) {
        if (!pflex_error_is_system(bad))
            return 1;
        *err = *bad;
        return -1;
    }
    int flat = c->n == 1;
    moved &= PFLEX_CURVE_FIT_MOVED;
    double lo = NAN;
    const struct pflex_gpu_range *gk = pflex_gpu_range_find(sj->gpu);
    if (flat && gk && pflex_curve_flat_below(c, gk->min_cap_w))
        lo = gk->min_cap_w;
    /* unmoved, raw is fit (and raw may be gone under store) */
    if ((moved || flat) && keep_fitted(st, sj, moved ? raw : fit, fit, flat, lo) < 0)
        return pflex_error_sys(err, "out of memory");
    return 0;
}

/* A job from sweep job k (its curve) with the given identity. */
static void job_from_curve(struct pflex_alloc_job *j, struct pflex_alloc_capinfo *ci,
                           const struct pflex_curve *c, const struct pflex_sweep_job *sj)
{
    memset(j, 0, sizeof *j);
    j->name = sj->name;
    j->gpus = sj->gpus;
    j->p0_w = c->p0_w;
    j->t0 = c->t0;
    j->cap0_w = c->cap0_w;
    j->weight = sj->weight;
    j->floor = sj->floor;
    j->x_hi = c->x_max;
    j->pfi = NAN;
    j->npoints = c->n;
    j->x = c->x;
    j->loss = c->loss;
    ci->cap_w = c->cap_w;
    sweep_range(sj, c, &ci->cap_min_w, &ci->cap_max_w);
    j->x_hi = pflex_alloc_cap_x_hi(j, ci);
}

/* A sweep for a jobs file to pick curves from: the sweep, each job's
 * curve and the name index.  Each curve is built over its own job's sweep
 * points (24 bytes a point into 32): the sweep is private here and its
 * points are not read again. */
static int read_sweep(const struct pflex_alloc_source *src, struct storage *st,
                      pflex_error_t *err)
{
    const char *sname = strcmp(src->sweep_path, "-") == 0 ? "<stdin>" : src->sweep_path;
    if (pflex_sweep_read_file_flags(src->sweep_path, src->columns,
                                    src->strict ? 0 : PFLEX_SWEEP_KEEP_BAD, &st->sweep, err) < 0)
        return -1;
    pflex_sweep_t *sw = st->sweep;
    if (sw->warnings && pflex_str_append(&st->warnings, sw->warnings) < 0)
        return pflex_error_sys(err, "%s: out of memory", sname);
    size_t n = sw->njobs, maxp = 1;
    for (size_t k = 0; k < n; k++)
        if (sw->jobs[k].npoints > maxp)
            maxp = sw->jobs[k].npoints;
    struct pflex_sweep_point *tmp = malloc(2 * maxp * sizeof *tmp), *fit = tmp + maxp;
    st->curves = calloc(n ? n : 1, sizeof *st->curves);
    st->by_name = malloc((n ? n : 1) * sizeof *st->by_name);
    st->sweep_by = malloc((n ? n : 1) * sizeof *st->sweep_by);
    st->curve_bad = calloc(n ? n : 1, 1);
    if (!tmp || !st->curves || !st->by_name || !st->sweep_by || !st->curve_bad) {
        free(tmp);
        return pflex_error_sys(err, "%s: out of memory", sname);
    }
    for (size_t k = 0; k < n; k++) {
        struct pflex_sweep_job *sj = &sw->jobs[k];
        pflex_error_t e;
        st->sweep_by[k] = NAN;
        if (src->by)
            st->by_known = sweep_by(sj, src->by, &st->sweep_by[k]);
        st->dram_copy_jobs += (size_t)sweep_has_dram_copy(sj);
        st->any_weight |= sj->weight != 1.0;
        memcpy(tmp, sj->points, sj->npoints * sizeof *tmp);
        int rc = sweep_curve(st, sj, tmp, fit, (double *)(void *)sj->points, &st->curves[k], &e,
                             err);
        if (rc == 1 && src->strict)
            rc = pflex_error_set(err, "%s:%u: job '%s': %s", sname, sj->line, sj->name, e.text);
        else if (rc == 1)
            rc = skip_job(st, sname, sj, e.text, err);
        if (rc < 0) {
            free(tmp);
            return -1;
        }
        st->curve_bad[k] = st->curves[k].n == 0;
        sj->points = NULL;      /* now the curve's storage */
        st->by_name[k] = sj;
    }
    free(tmp);
    qsort(st->by_name, n, sizeof *st->by_name, cmp_sjob);
    return 0;
}

/* A sweep's jobs as the problem's jobs, made as the sweep is read: each
 * job's curve goes into one array of doubles (x then loss), its name into
 * one of strings, its job into in->jobs; nothing per point of the sweep is
 * kept.  The arrays grow as they fill, so the pointers into them are set
 * once every job is in.  The first curve error is held back: a bad row
 * further on is reported first, as when the whole sweep is read first. */
struct collect {
    struct storage *st;
    pflex_alloc_input_t *in;
    const char *sname;
    size_t njobs, nvals, nname;
    int failed;                 /* first holds the first curve error */
    pflex_error_t first;
    const char *by_name;        /* the by column, or NULL */
    double *by;                 /* its values, per job */
    size_t by_cap;
    struct pflex_alloc_capinfo *caps;   /* per job */
    size_t caps_cap;
    int by_known;               /* by_name is a column the sweep keeps */
    int any_weight;             /* some job's weight is not 1 */
    size_t dram_copy_jobs;      /* jobs with dram_active and mem_copy_util */
    int warn_nomem;             /* the warnings could not be kept */
    int strict;                 /* a bad job fails the reading */
    size_t warn_len;            /* the warnings before the first job's */
    struct pflex_sweep_point *fit;      /* a job's fitted points */
    size_t fit_cap;
};

static void collect_restart(void *ctx)
{
    struct collect *k = ctx;
    k->njobs = k->nvals = k->nname = 0;
    k->failed = 0;
    k->any_weight = 0;
    k->dram_copy_jobs = 0;
    records_clear(k->st);
    if (k->st->warnings)
        k->st->warnings[k->warn_len] = 0;       /* the skipped jobs' are said again */
}

static void collect_warn(void *ctx, const char *warnings)
{
    struct collect *k = ctx;
    k->warn_nomem = pflex_str_append(&k->st->warnings, warnings) < 0;
    k->warn_len = k->st->warnings ? strlen(k->st->warnings) : 0;
}

static int collect_job(void *ctx, const struct pflex_sweep_job *sj, pflex_error_t *err)
{
    struct collect *k = ctx;
    struct storage *st = k->st;
    if (k->failed)
        return 0;
    /* The curve is built where it is kept (x, then loss, then cap_w, room
     * for every point each); its loss and cap_w are moved down next to its
     * x. */
    size_t np = sj->npoints;
    if (pflex_big_reserve(&st->points, (k->nvals + 3 * np) * sizeof(double)) < 0)
        return pflex_error_sys(err, "%s: out of memory", k->sname);
    double *v = (double *)st->points.p + k->nvals;
    struct pflex_curve c;
    pflex_error_t e;
    if (pflex_grow((void **)&k->fit, &k->fit_cap, np, sizeof *k->fit) < 0)
        return pflex_error_sys(err, "%s: out of memory", k->sname);
    int rc = sweep_curve(st, sj, sj->points, k->fit, v, &c, &e, err);
    if (rc < 0)
        return -1;
    if (rc == 1 && k->strict) {
        pflex_error_set(&k->first, "%s:%u: job '%s': %s", k->sname, sj->line, sj->name, e.text);
        k->failed = 1;
        return 0;
    }
    if (rc == 1)
        return skip_job(st, k->sname, sj, e.text, err);
    if (c.n < np) {
        memmove(v + c.n, v + np, c.n * sizeof *v);
        memmove(v + 2 * c.n, v + 2 * np, c.n * sizeof *v);
        c.loss = v + c.n;
        c.cap_w = v + 2 * c.n;
    }
    size_t namelen = strlen(sj->name) + 1;
    if (pflex_big_reserve(&st->jobs, (k->njobs + 1) * sizeof(struct pflex_alloc_job)) < 0
        || pflex_big_reserve(&st->names, k->nname + namelen) < 0)
        return pflex_error_sys(err, "%s: out of memory", k->sname);
    memcpy((char *)st->names.p + k->nname, sj->name, namelen);
    if (pflex_grow((void **)&k->caps, &k->caps_cap, k->njobs + 1, sizeof *k->caps) < 0)
        return pflex_error_sys(err, "%s: out of memory", k->sname);
    job_from_curve((struct pflex_alloc_job *)st->jobs.p + k->njobs, &k->caps[k->njobs], &c, sj);
    if (k->by_name) {
        if (pflex_grow((void **)&k->by, &k->by_cap, k->njobs + 1, sizeof *k->by) < 0)
            return pflex_error_sys(err, "%s: out of memory", k->sname);
        double bv = NAN;
        k->by_known = sweep_by(sj, k->by_name, &bv);
        k->by[k->njobs] = bv;
    }
    if (sj->weight != 1.0)
        k->any_weight = 1;
    if (sweep_has_dram_copy(sj))
        k->dram_copy_jobs++;
    k->njobs++;
    k->nvals += 3 * c.n;
    k->nname += namelen;
    return 0;
}

static int read_sweep_jobs(const struct pflex_alloc_source *src, struct storage *st,
                           pflex_alloc_input_t *in, pflex_error_t *err)
{
    struct collect k = {.st = st, .in = in, .by_name = src->by, .strict = src->strict};
    k.sname = strcmp(src->sweep_path, "-") == 0 ? "<stdin>" : src->sweep_path;
    k.warn_len = st->warnings ? strlen(st->warnings) : 0;
    struct pflex_sweep_visitor v = {.ctx = &k, .job = collect_job, .restart = collect_restart,
                                    .warn = collect_warn};
    int rc = pflex_sweep_read_file_each_flags(src->sweep_path, src->columns,
                                              src->strict ? 0 : PFLEX_SWEEP_KEEP_BAD, &v, err);
    free(k.fit);
    if (rc == 0 && !k.failed && k.warn_nomem)
        rc = pflex_error_sys(err, "%s: out of memory", k.sname);
    if (rc < 0 || k.failed) {
        if (rc == 0)
            *err = k.first;
        free(k.by);
        free(k.caps);
        return -1;
    }
    if (k.by_known)
        in->by = k.by;
    else
        free(k.by);
    in->has_weight = k.any_weight;
    in->has_dram_copy = k.njobs > 0 && k.dram_copy_jobs == k.njobs;
    struct pflex_alloc_job *jobs = st->jobs.p;
    const double *vals = st->points.p;
    const char *name = st->names.p;
    for (size_t j = 0; j < k.njobs; j++) {
        jobs[j].x = vals;
        jobs[j].loss = vals + jobs[j].npoints;
        k.caps[j].cap_w = vals + 2 * jobs[j].npoints;
        vals += 3 * jobs[j].npoints;
        jobs[j].name = name;
        name += strlen(name) + 1;
    }
    in->jobs = jobs;
    in->caps = k.caps;
    in->njobs = k.njobs;
    return 0;
}

enum { J_JOB, J_CURVE, J_GPUS, J_TIER, J_FLOOR, J_WEIGHT, J_COUNT };
static const char *const jcols[J_COUNT] = {"job", "curve", "gpus", "tier", "floor", "weight"};

static int jbad(pflex_error_t *err, const char *file, unsigned line, int col,
                const struct pflex_csv_field *f, const char *what)
{
    return pflex_csv_field_error(err, file, line, jcols[col], f, what);
}

/* A jobs file names each job once: two rows of one name would be two jobs
 * no output could tell apart.  The error names the earliest repeated row
 * and the first row of its name: rows are met in file order, each name
 * added to a string table, whose index of a name is then its first row. */
static int check_unique(const pflex_alloc_input_t *in, const unsigned *lines, const char *file,
                        pflex_error_t *err)
{
    struct pflex_strtab names = {0};
    size_t first = 0, second = in->njobs;
    for (size_t k = 0; k < in->njobs; k++) {
        int added;
        long i = pflex_strtab_intern(&names, in->jobs[k].name, strlen(in->jobs[k].name), &added);
        if (i < 0) {
            pflex_strtab_fini(&names);
            return pflex_error_sys(err, "%s: out of memory", file);
        }
        if (!added) {
            first = (size_t)i;
            second = k;
            break;
        }
    }
    pflex_strtab_fini(&names);
    if (second == in->njobs)
        return 0;
    return pflex_error_set(err, "%s:%u: job '%s' already on line %u (a job once a row; rows "
                           "may share a curve)", file, lines[second], in->jobs[second].name,
                           lines[first]);
}

/* Long: one pass over the jobs file, its header, rows and --by column
 * sharing the tokenizer's state; split, that state travels in every call. */
static int read_jobs(const struct pflex_alloc_source *src, struct storage *st,
                     pflex_alloc_input_t *in, pflex_error_t *err)
{
    const char *file = src->jobs_path;
    const char *buf;
    size_t len, mapped;
    if (pflex_map_all(file, &buf, &len, &mapped, err) < 0)
        return -1;
    size_t nsj = st->sweep->njobs ? st->sweep->njobs : 1;
    struct pflex_alloc_job *tmpl = malloc(nsj * sizeof *tmpl);
    struct pflex_alloc_capinfo *tmpl_ci = malloc(nsj * sizeof *tmpl_ci);
    unsigned char *tmpl_done = calloc(nsj, 1);
    st->jobs_buf = malloc(len + 1);
    if (!st->jobs_buf || !tmpl || !tmpl_ci || !tmpl_done) {
        pflex_unmap_all(buf, mapped);
        free(tmpl);
        free(tmpl_ci);
        free(tmpl_done);
        return pflex_error_sys(err, "%s: out of memory", file);
    }
    char *names = st->jobs_buf;
    size_t cap = 0;
    int idx[J_COUNT], rc = -1, got, by_idx = -1;
    double *by = NULL;
    unsigned *lines = NULL;     /* per job, its line */
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, file);
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (got == 0)
            pflex_error_set(err, "%s: empty file: no header row", file);
        goto done;
    }
    size_t need = 0;
    for (int k = 0; k < J_COUNT; k++) {
        idx[k] = -1;
        for (size_t f = 0; f < c.nfields && idx[k] < 0; f++)
            if (pflex_csv_field_is(&c.fields[f], jcols[k]))
                idx[k] = (int)f;
        if (k <= J_GPUS && idx[k] < 0) {
            pflex_error_set(err, "%s:%u: missing column '%s' (a jobs file needs job, curve, "
                            "gpus; tier, floor, weight are optional)", file, c.line, jcols[k]);
            goto done;
        }
        if (idx[k] >= 0 && (size_t)idx[k] + 1 > need)
            need = (size_t)idx[k] + 1;
    }
    for (size_t f = 0; src->by && f < c.nfields && by_idx < 0; f++)
        if (pflex_csv_field_is(&c.fields[f], src->by))
            by_idx = (int)f;
    {
        const char *cols[J_COUNT + 1];
        int cidx[J_COUNT + 1];
        for (int k = 0; k < J_COUNT; k++)
            cols[k] = jcols[k], cidx[k] = idx[k];
        cols[J_COUNT] = src->by;
        cidx[J_COUNT] = by_idx;
        if (pflex_csv_header_check(&c, file, "jobs-file", cols, J_COUNT + 1, cidx,
                                   &st->warnings, err) < 0)
            goto done;
    }
    if (by_idx >= 0 && (size_t)by_idx + 1 > need)
        need = (size_t)by_idx + 1;
    in->has_weight = idx[J_WEIGHT] >= 0 || st->any_weight;
    in->has_dram_copy = st->sweep->njobs > 0 && st->dram_copy_jobs == st->sweep->njobs;
    while ((got = pflex_csv_next(&c, err)) == 1) {
        const struct pflex_csv_field *f = c.fields;
        unsigned line = c.line;
        if (c.nfields < need) {
            pflex_csv_row_error(err, file, line, c.nfields, need);
            goto done;
        }
        if (in->njobs == cap) {
            size_t nc = cap ? 2 * cap : 16;
            struct pflex_alloc_job *nj = realloc(in->jobs, nc * sizeof *nj);
            if (nj)
                in->jobs = nj;
            struct pflex_alloc_capinfo *ncp = nj ? realloc(in->caps, nc * sizeof *ncp) : NULL;
            if (ncp)
                in->caps = ncp;
            double *nb = ncp ? realloc(by, nc * sizeof *nb) : NULL;
            if (nb)
                by = nb;
            unsigned *nl = nb ? realloc(lines, nc * sizeof *nl) : NULL;
            if (nl)
                lines = nl;
            const char **ncv = nl ? realloc(st->job_curve, nc * sizeof *ncv) : NULL;
            if (!ncv) {
                pflex_error_sys(err, "%s:%u: out of memory", file, line);
                goto done;
            }
            st->job_curve = ncv;
            cap = nc;
        }
        const struct pflex_csv_field *jf = &f[idx[J_JOB]], *cf = &f[idx[J_CURVE]];
        if (!jf->len) {
            pflex_error_set(err, "%s:%u: column 'job': empty job name", file, line);
            goto done;
        }
        if (pflex_csv_field_name(err, file, line, "job", "job name", jf) < 0)
            goto done;
        char cname[256];
        if (cf->len == 0 || cf->len >= sizeof cname) {
            jbad(err, file, line, J_CURVE, cf, "is not a job name of the sweep");
            goto done;
        }
        memcpy(cname, cf->s, cf->len);
        cname[cf->len] = 0;
        const struct pflex_sweep_job *sj = sweep_find(st, cname);
        if (!sj) {
            pflex_error_set(err, "%s:%u: column 'curve': '%s' is not a job of %s", file, line,
                            cname, src->sweep_path);
            goto done;
        }
        struct pflex_alloc_job *j = &in->jobs[in->njobs];
        size_t sk = (size_t)(sj - st->sweep->jobs);
        if (st->curve_bad[sk]) {
            char w[400];
            snprintf(w, sizeof w, "%s:%u: job '%.*s' runs curve '%s', skipped as bad; the job "
                     "is skipped\n", file, line, (int)(jf->len > 120 ? 120 : jf->len), jf->s,
                     cname);
            if (pflex_str_append(&st->warnings, w) < 0) {
                pflex_error_sys(err, "%s:%u: out of memory", file, line);
                goto done;
            }
            continue;
        }
        if (!tmpl_done[sk]) {
            /* a curve's job depends on the curve alone: made once, copied to
             * every row that runs it */
            job_from_curve(&tmpl[sk], &tmpl_ci[sk], &st->curves[sk], sj);
            tmpl_done[sk] = 1;
        }
        *j = tmpl[sk];
        st->job_curve[in->njobs] = sj->name;
        in->caps[in->njobs] = tmpl_ci[sk];
        by[in->njobs] = st->sweep_by[sj - st->sweep->jobs];
        if (by_idx >= 0) {
            const struct pflex_csv_field *bf = &f[by_idx];
            by[in->njobs] = NAN;
            if (bf->len && (pflex_parse_double(bf->s, bf->len, &by[in->njobs]) < 0
                            || !isfinite(by[in->njobs]))) {
                pflex_csv_field_error(err, file, line, src->by, bf, "is not a number");
                goto done;
            }
        }
        memcpy(names, jf->s, jf->len);
        names[jf->len] = 0;
        j->name = names;
        names += jf->len + 1;
        lines[in->njobs] = line;
        double g;
        const struct pflex_csv_field *gf = &f[idx[J_GPUS]];
        if (pflex_parse_double(gf->s, gf->len, &g) < 0 || g < 1 || g > 1e8 || g != floor(g)) {
            jbad(err, file, line, J_GPUS, gf, "is not a positive whole number");
            goto done;
        }
        j->gpus = (int)g;
        if (idx[J_TIER] >= 0 && f[idx[J_TIER]].len
            && pflex_csv_field_tier(err, file, line, "tier", &f[idx[J_TIER]], &j->floor) < 0)
            goto done;
        if (idx[J_FLOOR] >= 0 && f[idx[J_FLOOR]].len) {
            const struct pflex_csv_field *ff = &f[idx[J_FLOOR]];
            if (pflex_parse_double(ff->s, ff->len, &j->floor) < 0 || j->floor < 0
                || j->floor > 1) {
                jbad(err, file, line, J_FLOOR, ff, "is not a fraction between 0 and 1");
                goto done;
            }
        }
        if (idx[J_WEIGHT] >= 0 && f[idx[J_WEIGHT]].len) {
            const struct pflex_csv_field *wf = &f[idx[J_WEIGHT]];
            if (pflex_parse_double(wf->s, wf->len, &j->weight) < 0 || j->weight < 0) {
                jbad(err, file, line, J_WEIGHT, wf, "is not a non-negative number");
                goto done;
            }
        }
        in->njobs++;
    }
    if (got < 0)
        goto done;
    if (in->njobs == 0) {
        pflex_error_set(err, "%s: no jobs after the header", file);
        goto done;
    }
    if (check_unique(in, lines, file, err) < 0)
        goto done;
    if (src->by && (by_idx >= 0 || st->by_known)) {
        in->by = by;
        by = NULL;
    }
    rc = 0;
done:
    free(by);
    free(lines);
    free(tmpl);
    free(tmpl_ci);
    free(tmpl_done);
    pflex_csv_fini(&c);
    pflex_unmap_all(buf, mapped);
    return rc;
}

/* x_hi of a job known only by its PFI row: to its GPU kind's minimum cap,
 * else the row's range, else 0.30.  A job without a PFI is not cut. */
static double pfi_range(const struct pflex_pfi_row *r)
{
    if (isnan(r->pfi))
        return 0;
    const struct pflex_gpu_range *k = pflex_gpu_range_find(r->gpu);
    if (k)
        return k->min_cap_w < r->power_w ? 1.0 - k->min_cap_w / r->power_w : 0;
    return isnan(r->range) || !(r->range > 0) ? PFLEX_PFI_RANGE_DEFAULT : r->range;
}

/* Long: the sources in the order docs/allocation.md gives (PFI CSV, sweep,
 * jobs file, --by), each merged into one input with its warnings. */
int pflex_alloc_input_read(const struct pflex_alloc_source *src, pflex_alloc_input_t **out,
                           pflex_error_t *err)
{
    *out = NULL;
    pflex_alloc_input_t *in = calloc(1, sizeof *in);
    struct storage *st = calloc(1, sizeof *st);
    if (!in || !st) {
        free(in);
        free(st);
        return pflex_error_sys(err, "out of memory");
    }
    in->priv = st;
    if (!src->sweep_path && !src->pfi_path) {
        pflex_error_set(err, "no input: a sweep or a PFI file is needed");
        goto fail;
    }
    if (!src->sweep_path && src->jobs_path) {
        pflex_error_set(err, "a jobs file needs a sweep to take its curves from");
        goto fail;
    }
    if (src->pfi_path && pflex_pficsv_read_file_by(src->pfi_path, src->by, &st->pfi, err) < 0)
        goto fail;
    if (st->pfi && st->pfi->warnings && pflex_str_append(&st->warnings, st->pfi->warnings) < 0) {
        pflex_error_sys(err, "%s: out of memory", src->pfi_path);
        goto fail;
    }
    if (st->pfi)
        for (size_t k = 0; k < st->pfi->n; k++)
            if (strcmp(st->pfi->rows[k].metric, "ratio") != 0) {
                pflex_error_set(err, "%s:%u: metric '%s': the policies plan with the study's "
                                "ratio PFI (write it with pflex pfi --metric ratio --csv)",
                                src->pfi_path, st->pfi->rows[k].line, st->pfi->rows[k].metric);
                goto fail;
            }
    if (src->sweep_path) {
        if (src->jobs_path) {
            if (read_sweep(src, st, err) < 0 || read_jobs(src, st, in, err) < 0)
                goto fail;
        } else if (read_sweep_jobs(src, st, in, err) < 0) {
            goto fail;
        }
        in->has_curves = 1;
        if (st->pfi)
            for (size_t k = 0; k < in->njobs; k++) {
                struct pflex_alloc_job *j = &in->jobs[k];
                const struct pflex_pfi_row *r = pflex_pficsv_find(st->pfi, j->name);
                /* a jobs file's job without a row of its own takes its
                 * curve's: the PFI is the curve's (pflex pfi, pflex predict
                 * name rows by the sweep's jobs) */
                if (!r && st->job_curve)
                    r = pflex_pficsv_find(st->pfi, st->job_curve[k]);
                if (!r) {
                    pflex_error_set(err, "%s: no row for job '%s'%s%s", src->pfi_path, j->name,
                                    st->job_curve ? " nor for its curve " : "",
                                    st->job_curve ? st->job_curve[k] : "");
                    goto fail;
                }
                j->pfi = r->pfi;
                if (st->pfi->has_by && in->by && !isnan(r->by))
                    in->by[k] = r->by;
            }
        if (st->pfi && st->pfi->has_weight)
            in->has_weight = 1;
    } else {
        size_t n = st->pfi->n;
        in->jobs = calloc(n, sizeof *in->jobs);
        in->caps = calloc(n, sizeof *in->caps);
        if (!in->jobs || !in->caps) {
            pflex_error_sys(err, "out of memory");
            goto fail;
        }
        for (size_t k = 0; k < n; k++) {
            const struct pflex_pfi_row *r = &st->pfi->rows[k];
            struct pflex_alloc_job *j = &in->jobs[k];
            j->name = r->job;
            j->gpus = r->gpus;
            j->p0_w = r->power_w;
            j->t0 = r->throughput;
            j->cap0_w = isnan(r->cap_w) ? r->power_w : r->cap_w;
            j->weight = r->weight;
            j->floor = r->floor;
            j->pfi = r->pfi;
            j->x_hi = pfi_range(r);
            const struct pflex_gpu_range *gk = pflex_gpu_range_find(r->gpu);
            if (gk) {
                in->caps[k].cap_min_w = gk->min_cap_w;
                in->caps[k].cap_max_w = gk->max_cap_w;
            }
        }
        in->njobs = n;
        in->has_weight = st->pfi->has_weight;
    }
    if (src->by && !in->by && st->pfi && st->pfi->has_by) {
        in->by = malloc((in->njobs ? in->njobs : 1) * sizeof *in->by);
        if (!in->by) {
            pflex_error_sys(err, "out of memory");
            goto fail;
        }
        for (size_t k = 0; k < in->njobs; k++) {
            const struct pflex_pfi_row *r = pflex_pficsv_find(st->pfi, in->jobs[k].name);
            in->by[k] = r ? r->by : NAN;
        }
    }
    if (src->by && !in->by) {
        pflex_error_set(err, "--by: no column '%s' in the input (a sweep gives weight, gpus, "
                        "its telemetry columns and dram_copy; a jobs file or a PFI CSV any "
                        "column)", src->by);
        goto fail;
    }
    for (size_t k = 0; src->by && k < in->njobs; k++)
        if (!(in->by[k] >= 0) || !isfinite(in->by[k])) {
            pflex_error_set(err, "--by %s: job '%s' has %s", src->by, in->jobs[k].name,
                            isnan(in->by[k]) ? "no value" : "a negative value");
            goto fail;
        }
    for (size_t k = 0; k < in->njobs; k++) {
        struct pflex_alloc_job *j = &in->jobs[k];
        if (isnan(j->floor))
            j->floor = isnan(src->floor) ? 0 : src->floor;
    }
    if (src->sweep_path && in->njobs == 0 && st->nskipped) {
        /* nothing to run: the error is the strict reading's, in its words
         * (file:line: column ...), where the file can be read again */
        if (!src->strict && strcmp(src->sweep_path, "-") != 0) {
            struct pflex_alloc_source again = *src;
            pflex_alloc_input_t *a = NULL;
            again.strict = 1;
            if (pflex_alloc_input_read(&again, &a, err) < 0)
                goto fail;
            pflex_alloc_input_destroy(a);
        }
        pflex_error_set(err, "%s: no job left: every job is bad (the first, '%s': %s)",
                        src->sweep_path, st->skipped[0],
                        st->skipped[0] + strlen(st->skipped[0]) + 1);
        goto fail;
    }
    if (st->nskipped) {
        st->skipped_why = malloc(st->nskipped * sizeof *st->skipped_why);
        if (!st->skipped_why) {
            pflex_error_sys(err, "out of memory");
            goto fail;
        }
        for (size_t k = 0; k < st->nskipped; k++)
            st->skipped_why[k] = st->skipped[k] + strlen(st->skipped[k]) + 1;
    }
    in->nfitted = st->nfit_all;
    in->nflat = st->nflat_all;
    in->nfitted_kept = st->nfitted;
    in->fitted = st->fitted;
    in->nskipped = st->nskipped;
    in->skipped = (const char *const *)st->skipped;
    in->skipped_why = st->skipped_why;
    in->warnings = st->warnings;
    *out = in;
    return 0;
fail:
    pflex_alloc_input_destroy(in);
    return -1;
}

size_t pflex_alloc_plan_clamped(const pflex_alloc_input_t *in, const struct pflex_alloc_plan *pl)
{
    size_t n = 0;
    for (size_t k = 0; k < in->njobs; k++) {
        struct pflex_alloc_cap c;
        pflex_alloc_cap(&in->jobs[k], &in->caps[k], pl->x[k], &c);
        n += (size_t)c.clamped;
    }
    return n;
}
