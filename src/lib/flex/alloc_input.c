/* alloc_input.c — an allocation problem from a sweep, a jobs file and a
 * PFI CSV (see pflex/alloc.h).  A sweep alone becomes its problem as it is
 * read, job by job, keeping only the curves (x and loss) and the jobs; with
 * a jobs file the sweep is kept and curves are built in its own point
 * storage.  No allocation per job either way. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/alloc.h"
#include "pflex/csv.h"
#include "pflex/curve.h"
#include "pflex/model.h"
#include "pflex/pfi.h"
#include "pflex/pficsv.h"
#include "pflex/sweep.h"
#include "lib/util/bigmem.h"

struct storage {
    pflex_sweep_t *sweep;
    pflex_pficsv_t *pfi;
    struct pflex_curve *curves; /* per sweep job, with a jobs file only */
    char *jobs_buf;             /* the jobs file's strings */
    const struct pflex_sweep_job **by_name;
    struct pflex_big jobs;      /* in->jobs when they are the sweep's jobs */
    struct pflex_big points;    /* their curves: x then loss, job after job */
    struct pflex_big names;     /* their names, NUL-terminated, job after job */
};

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
        pflex_big_free(&st->points);
        pflex_big_free(&st->names);
        if (st->jobs.p)
            pflex_big_free(&st->jobs);
        else
            free(in->jobs);
        free(st);
    } else {
        free(in->jobs);
    }
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

/* A job from sweep job k (its curve) with the given identity. */
static void job_from_curve(struct pflex_alloc_job *j, const struct pflex_curve *c,
                           const struct pflex_sweep_job *sj)
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
}

/* A sweep for a jobs file to pick curves from: the sweep, each job's
 * curve and the name index.  Each curve is built over its own job's sweep
 * points (24 bytes a point into 32): the sweep is private here and its
 * points are not read again. */
static int read_sweep(const struct pflex_alloc_source *src, struct storage *st,
                      pflex_error_t *err)
{
    const char *sname = strcmp(src->sweep_path, "-") == 0 ? "<stdin>" : src->sweep_path;
    if (pflex_sweep_read_file(src->sweep_path, src->columns, &st->sweep, err) < 0)
        return -1;
    pflex_sweep_t *sw = st->sweep;
    size_t n = sw->njobs, maxp = 1;
    for (size_t k = 0; k < n; k++)
        if (sw->jobs[k].npoints > maxp)
            maxp = sw->jobs[k].npoints;
    struct pflex_sweep_point *tmp = malloc(maxp * sizeof *tmp);
    st->curves = calloc(n ? n : 1, sizeof *st->curves);
    st->by_name = malloc((n ? n : 1) * sizeof *st->by_name);
    if (!tmp || !st->curves || !st->by_name) {
        free(tmp);
        return pflex_error_set(err, "%s: out of memory", sname);
    }
    for (size_t k = 0; k < n; k++) {
        struct pflex_sweep_job *sj = &sw->jobs[k];
        pflex_error_t e;
        memcpy(tmp, sj->points, sj->npoints * sizeof *tmp);
        if (pflex_curve_init_in(&st->curves[k], tmp, sj->npoints, (double *)(void *)sj->points,
                                &e) < 0) {
            free(tmp);
            return pflex_error_set(err, "%s:%u: job '%s': %s", sname, sj->line, sj->name,
                                   e.text);
        }
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
};

static void collect_restart(void *ctx)
{
    struct collect *k = ctx;
    k->njobs = k->nvals = k->nname = 0;
    k->failed = 0;
}

static int collect_job(void *ctx, const struct pflex_sweep_job *sj, pflex_error_t *err)
{
    struct collect *k = ctx;
    struct storage *st = k->st;
    if (k->failed)
        return 0;
    /* The curve is built where it is kept (x, then loss, then cap_w, room
     * for every point each); its loss is moved down next to its x, and
     * its cap_w, not kept, is left for the next job to write over. */
    size_t np = sj->npoints;
    if (pflex_big_reserve(&st->points, (k->nvals + 3 * np) * sizeof(double)) < 0)
        return pflex_error_set(err, "%s: out of memory", k->sname);
    double *v = (double *)st->points.p + k->nvals;
    struct pflex_curve c;
    pflex_error_t e;
    if (pflex_curve_init_in(&c, sj->points, np, v, &e) < 0) {
        pflex_error_set(&k->first, "%s:%u: job '%s': %s", k->sname, sj->line, sj->name, e.text);
        k->failed = 1;
        return 0;
    }
    if (c.n < np) {
        memmove(v + c.n, v + np, c.n * sizeof *v);
        c.loss = v + c.n;
    }
    size_t namelen = strlen(sj->name) + 1;
    if (pflex_big_reserve(&st->jobs, (k->njobs + 1) * sizeof(struct pflex_alloc_job)) < 0
        || pflex_big_reserve(&st->names, k->nname + namelen) < 0)
        return pflex_error_set(err, "%s: out of memory", k->sname);
    memcpy((char *)st->names.p + k->nname, sj->name, namelen);
    job_from_curve((struct pflex_alloc_job *)st->jobs.p + k->njobs, &c, sj);
    k->njobs++;
    k->nvals += 2 * c.n;
    k->nname += namelen;
    return 0;
}

static int read_sweep_jobs(const struct pflex_alloc_source *src, struct storage *st,
                           pflex_alloc_input_t *in, pflex_error_t *err)
{
    struct collect k = {.st = st, .in = in};
    k.sname = strcmp(src->sweep_path, "-") == 0 ? "<stdin>" : src->sweep_path;
    struct pflex_sweep_visitor v = {.ctx = &k, .job = collect_job, .restart = collect_restart};
    int rc = pflex_sweep_read_file_each(src->sweep_path, src->columns, &v, err);
    if (rc < 0)
        return -1;
    if (k.failed) {
        *err = k.first;
        return -1;
    }
    struct pflex_alloc_job *jobs = st->jobs.p;
    const double *vals = st->points.p;
    const char *name = st->names.p;
    for (size_t j = 0; j < k.njobs; j++) {
        jobs[j].x = vals;
        jobs[j].loss = vals + jobs[j].npoints;
        vals += 2 * jobs[j].npoints;
        jobs[j].name = name;
        name += strlen(name) + 1;
    }
    in->jobs = jobs;
    in->njobs = k.njobs;
    return 0;
}

enum { J_JOB, J_CURVE, J_GPUS, J_TIER, J_FLOOR, J_WEIGHT, J_COUNT };
static const char *const jcols[J_COUNT] = {"job", "curve", "gpus", "tier", "floor", "weight"};

static int jbad(pflex_error_t *err, const char *file, unsigned line, int col,
                const struct pflex_csv_field *f, const char *what)
{
    return pflex_error_set(err, "%s:%u: column '%s': '%.*s' %s", file, line, jcols[col],
                           (int)(f->len > 40 ? 40 : f->len), f->s, what);
}

static int read_jobs(const struct pflex_alloc_source *src, struct storage *st,
                     pflex_alloc_input_t *in, pflex_error_t *err)
{
    const char *file = src->jobs_path;
    char *buf;
    size_t len;
    if (pflex_read_all(file, &buf, &len, err) < 0)
        return -1;
    st->jobs_buf = malloc(len + 1);
    if (!st->jobs_buf) {
        free(buf);
        return pflex_error_set(err, "%s: out of memory", file);
    }
    char *names = st->jobs_buf;
    size_t cap = 0;
    int idx[J_COUNT], rc = -1, got;
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
        for (size_t f = 0; f < c.nfields; f++)
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
    while ((got = pflex_csv_next(&c, err)) == 1) {
        const struct pflex_csv_field *f = c.fields;
        unsigned line = c.line;
        if (c.nfields < need) {
            pflex_error_set(err, "%s:%u: %zu fields, the header has %zu", file, line,
                            c.nfields, need);
            goto done;
        }
        if (in->njobs == cap) {
            size_t nc = cap ? 2 * cap : 16;
            struct pflex_alloc_job *nj = realloc(in->jobs, nc * sizeof *nj);
            if (!nj) {
                pflex_error_set(err, "%s:%u: out of memory", file, line);
                goto done;
            }
            in->jobs = nj;
            cap = nc;
        }
        const struct pflex_csv_field *jf = &f[idx[J_JOB]], *cf = &f[idx[J_CURVE]];
        if (!jf->len) {
            pflex_error_set(err, "%s:%u: column 'job': empty job name", file, line);
            goto done;
        }
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
        job_from_curve(j, &st->curves[sj - st->sweep->jobs], sj);
        memcpy(names, jf->s, jf->len);
        names[jf->len] = 0;
        j->name = names;
        names += jf->len + 1;
        double g;
        const struct pflex_csv_field *gf = &f[idx[J_GPUS]];
        if (pflex_parse_double(gf->s, gf->len, &g) < 0 || g < 1 || g > 1e8 || g != floor(g)) {
            jbad(err, file, line, J_GPUS, gf, "is not a positive whole number");
            goto done;
        }
        j->gpus = (int)g;
        if (idx[J_TIER] >= 0 && f[idx[J_TIER]].len) {
            const struct pflex_csv_field *tf = &f[idx[J_TIER]];
            char tb[32];
            size_t n = tf->len < sizeof tb - 1 ? tf->len : sizeof tb - 1;
            memcpy(tb, tf->s, n);
            tb[n] = 0;
            if (tf->len >= sizeof tb || pflex_tier_floor(tb, &j->floor) < 0) {
                jbad(err, file, line, J_TIER, tf, "is not a tier (flex0, flex1, flex2, flex3)");
                goto done;
            }
        }
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
    rc = 0;
done:
    pflex_csv_fini(&c);
    free(buf);
    return rc;
}

/* x_hi of a job known only by its PFI row. */
static double pfi_range(const struct pflex_pfi_row *r)
{
    if (isnan(r->pfi))
        return 0;
    const struct pflex_gpu_kind *k = r->gpu ? pflex_gpu_kind_find(r->gpu) : NULL;
    if (k && k->min_cap_w > 0 && k->min_cap_w < r->power_w)
        return 1.0 - k->min_cap_w / r->power_w;
    return isnan(r->range) || !(r->range > 0) ? PFLEX_PFI_RANGE_DEFAULT : r->range;
}

int pflex_alloc_input_read(const struct pflex_alloc_source *src, pflex_alloc_input_t **out,
                           pflex_error_t *err)
{
    *out = NULL;
    pflex_alloc_input_t *in = calloc(1, sizeof *in);
    struct storage *st = calloc(1, sizeof *st);
    if (!in || !st) {
        free(in);
        free(st);
        return pflex_error_set(err, "out of memory");
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
    if (src->pfi_path && pflex_pficsv_read_file(src->pfi_path, &st->pfi, err) < 0)
        goto fail;
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
                if (!r) {
                    pflex_error_set(err, "%s: no row for job '%s'", src->pfi_path, j->name);
                    goto fail;
                }
                j->pfi = r->pfi;
            }
    } else {
        size_t n = st->pfi->n;
        in->jobs = calloc(n, sizeof *in->jobs);
        if (!in->jobs) {
            pflex_error_set(err, "out of memory");
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
        }
        in->njobs = n;
    }
    for (size_t k = 0; k < in->njobs; k++) {
        struct pflex_alloc_job *j = &in->jobs[k];
        if (isnan(j->floor))
            j->floor = isnan(src->floor) ? 0 : src->floor;
    }
    *out = in;
    return 0;
fail:
    pflex_alloc_input_destroy(in);
    return -1;
}
