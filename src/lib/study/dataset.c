/* dataset.c — sweeps into jobs with features, PFI, curves and clusters
 * (pflex/study/dataset.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/study/dataset.h"
#include "pflex/io/csv.h"
#include "pflex/flex/curve.h"
#include "pflex/flex/pfi.h"
#include "pflex/io/sweep.h"
#include "lib/util/grow.h"

const double pflex_dataset_cuts[PFLEX_DATASET_NCUT] = {
    0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60,
};

void pflex_dataset_fini(struct pflex_dataset *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->job[i]);
        free(d->cluster[i]);
        free(d->gpu[i]);
    }
    free(d->job); free(d->cluster); free(d->gpu); free(d->gpus); free(d->x); free(d->pfi);
    free(d->loss); free(d->p0_w); free(d->t0); free(d->cap0_w); free(d->x_max);
    free(d->used); free(d->dropped);
    for (size_t i = 0; i < d->n && d->cx; i++) {
        free(d->cx[i]);
        free(d->cl[i]);
    }
    free(d->cn); free(d->cx); free(d->cl);
    memset(d, 0, sizeof *d);
}

/* Room for need jobs in every array of d, which hold *cap: the room as
 * pflex_grow gives job, every other array to match (sizes checked). */
static int grow(struct pflex_dataset *d, size_t *cap, size_t need)
{
    size_t n = *cap;
    if (pflex_grow((void **)&d->job, &n, need, sizeof *d->job))
        return -1;
    if (n == *cap)
        return 0;
#define G(p, k) do { void *q = reallocarray(d->p, n, (k) * sizeof *d->p); if (!q) return -1; \
                     d->p = q; } while (0)
    G(cluster, 1); G(gpu, 1); G(gpus, 1); G(x, PFLEX_FEAT_COUNT); G(pfi, 1);
    G(loss, PFLEX_DATASET_NCUT); G(p0_w, 1); G(t0, 1); G(cap0_w, 1); G(x_max, 1); G(used, 1);
    G(dropped, 1); G(cn, 1); G(cx, 1); G(cl, 1);
#undef G
    *cap = n;
    return 0;
}

/* "h200-dense-llama8b-lora-..." -> "dense-lora"; NULL when the name has
 * no such tokens. */
static char *cluster_from_name(const char *name)
{
    const char *arch = NULL, *task = NULL;
    size_t al = 0, tl = 0;
    for (const char *p = name; *p;) {
        const char *e = strchr(p, '-');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (!arch && ((n == 5 && !strncmp(p, "dense", 5)) || (n == 3 && !strncmp(p, "moe", 3)))) {
            arch = p;
            al = n;
        } else if (arch && !task && ((n == 2 && (!strncmp(p, "pt", 2) || !strncmp(p, "ft", 2))) ||
                                     (n == 4 && !strncmp(p, "lora", 4)))) {
            task = p;
            tl = n;
        }
        p += n + (e ? 1 : 0);
        if (!e)
            break;
    }
    if (!arch || !task)
        return NULL;
    char *c = malloc(al + tl + 2);
    if (c)
        snprintf(c, al + tl + 2, "%.*s-%.*s", (int)al, arch, (int)tl, task);
    return c;
}

struct cmap { size_t n; char **job, **cl; };

static void cmap_fini(struct cmap *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->job[i]);
        free(m->cl[i]);
    }
    free(m->job);
    free(m->cl);
    memset(m, 0, sizeof *m);
}

/* One row of the clusters CSV into m: its job, and its cluster or
 * "arch-task".  Returns 0, or -1 when out of memory. */
static int cmap_add(struct cmap *m, size_t *cap, const pflex_csv_t *c, int ij, int ic, int ia,
                    int it)
{
    if (m->n == *cap) {
        size_t nc = *cap;
        char **b;
        if (pflex_grow((void **)&m->job, &nc, m->n + 1, sizeof *m->job)
            || !(b = reallocarray(m->cl, nc, sizeof *b)))
            return -1;
        m->cl = b;
        *cap = nc;
    }
    const struct pflex_csv_field *fj = &c->fields[ij];
    m->job[m->n] = strndup(fj->s, fj->len);
    if (ic >= 0) {
        m->cl[m->n] = strndup(c->fields[ic].s, c->fields[ic].len);
    } else {
        size_t n = c->fields[ia].len + c->fields[it].len + 2;
        if ((m->cl[m->n] = malloc(n)))
            snprintf(m->cl[m->n], n, "%.*s-%.*s", (int)c->fields[ia].len, c->fields[ia].s,
                     (int)c->fields[it].len, c->fields[it].s);
    }
    m->n++;
    return m->job[m->n - 1] && m->cl[m->n - 1] ? 0 : -1;
}

/* The clusters CSV (buf, len; named path in messages) into m. */
static int cmap_parse(const char *buf, size_t len, const char *path, struct cmap *m,
                      pflex_error_t *err)
{
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, path);
    int got, ij = -1, ic = -1, ia = -1, it = -1, rc = -1;
    size_t cap = 0;
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (got < 0) {
            pflex_error_t e = *err;
            pflex_error_set(err, "%s: %s", path, e.text);
        } else {
            pflex_error_set(err, "%s: empty file", path);
        }
        goto out;
    }
    for (size_t i = 0; i < c.nfields; i++) {
        if (pflex_csv_field_is(&c.fields[i], "job")) ij = (int)i;
        if (pflex_csv_field_is(&c.fields[i], "cluster")) ic = (int)i;
        if (pflex_csv_field_is(&c.fields[i], "arch")) ia = (int)i;
        if (pflex_csv_field_is(&c.fields[i], "task")) it = (int)i;
    }
    if (ij < 0 || (ic < 0 && (ia < 0 || it < 0))) {
        pflex_error_set(err, "%s:%u: needs columns job and cluster, or job, arch and task", path,
                        c.line);
        goto out;
    }
    int need = ij > ic ? ij : ic;
    if (ia > need) need = ia;
    if (it > need) need = it;
    while ((got = pflex_csv_next(&c, err)) > 0) {
        if ((size_t)need >= c.nfields) {
            pflex_error_set(err, "%s:%u: %zu fields, the header has more", path, c.line,
                            c.nfields);
            goto out;
        }
        if (cmap_add(m, &cap, &c, ij, ic, ia, it) < 0) {
            pflex_error_sys(err, "%s: out of memory", path);
            goto out;
        }
    }
    if (got == 0)
        rc = 0;
out:
    pflex_csv_fini(&c);
    return rc;
}

/* A job's metadata features from its cluster: arch_moe ("moe-..." or
 * "dense-...") and task_ft ("...lora", "...finetune", "...-ft" or
 * "...pretrain", "...-pt"); NaN when the cluster says neither. */
static void meta_features(const char *cl, double *x)
{
    x[PFLEX_FEAT_ARCH_MOE] = !strncmp(cl, "moe-", 4) ? 1 : !strncmp(cl, "dense-", 6) ? 0 : NAN;
    x[PFLEX_FEAT_TASK_FT] = strstr(cl, "lora") || strstr(cl, "finetune") || strstr(cl, "-ft") ? 1
                            : strstr(cl, "pretrain") || strstr(cl, "-pt") ? 0 : NAN;
}

/* Job i of d from the sweep job sj: its PFI, curve and loss at the cuts
 * (name: the sweep's, for messages). */
static int add_curve(struct pflex_dataset *d, size_t i, const struct pflex_sweep_job *sj,
                     const char *name, pflex_error_t *err)
{
    struct pflex_pfi_ratio pr;
    pflex_error_t e;
    if (pflex_pfi_ratio(sj->points, sj->npoints, NULL, 0, &pr, &e) < 0)
        return pflex_error_set(err, "%s:%u: job '%s': %s", name, sj->line, sj->name, e.text);
    d->pfi[i] = pr.valid ? pr.pfi : NAN;
    d->used[i] = pr.used;
    d->dropped[i] = pr.not_binding + pr.noise;
    struct pflex_curve c;
    if (pflex_curve_init(&c, sj->points, sj->npoints, &e) < 0)
        return pflex_error_set(err, "%s:%u: job '%s': %s", name, sj->line, sj->name, e.text);
    d->p0_w[i] = c.p0_w;
    d->t0[i] = c.t0;
    d->cap0_w[i] = c.cap0_w;
    d->x_max[i] = c.x_max;
    for (int k = 0; k < PFLEX_DATASET_NCUT; k++)
        d->loss[i * PFLEX_DATASET_NCUT + k] = pflex_dataset_cuts[k] <= c.x_max + 1e-12
                                              ? pflex_curve_loss(&c, pflex_dataset_cuts[k]) : NAN;
    d->cx[i] = malloc(c.n * sizeof *d->cx[i]);
    d->cl[i] = malloc(c.n * sizeof *d->cl[i]);
    if (d->cx[i] && d->cl[i]) {
        memcpy(d->cx[i], c.x, c.n * sizeof *c.x);
        memcpy(d->cl[i], c.loss, c.n * sizeof *c.loss);
        d->cn[i] = c.n;
    }
    pflex_curve_fini(&c);
    return 0;
}

/* Every job of the sweep sw (whose name filter holds) appended to d, whose
 * arrays hold *cap jobs. */
static int add_sweep(struct pflex_dataset *d, size_t *cap, const pflex_sweep_t *sw,
                     const char *name, const struct cmap *cm, const char *filter,
                     pflex_error_t *err)
{
    for (size_t j = 0; j < sw->njobs; j++) {
        const struct pflex_sweep_job *sj = &sw->jobs[j];
        if (filter && !strstr(sj->name, filter))
            continue;
        if (grow(d, cap, d->n + 1) < 0)
            return pflex_error_sys(err, "out of memory");
        size_t i = d->n;
        struct pflex_job_features jf;
        pflex_features_from_sweep_job(sj, &jf);
        memcpy(&d->x[i * PFLEX_FEAT_COUNT], jf.v, sizeof jf.v);
        d->job[i] = strdup(sj->name);
        d->gpu[i] = sj->gpu ? strdup(sj->gpu) : NULL;
        d->gpus[i] = sj->gpus;
        d->cluster[i] = NULL;
        d->cx[i] = d->cl[i] = NULL;
        d->cn[i] = 0;
        for (size_t k = 0; k < cm->n && !d->cluster[i]; k++)
            if (!strcmp(cm->job[k], sj->name))
                d->cluster[i] = strdup(cm->cl[k]);
        if (!d->cluster[i] && !(d->cluster[i] = cluster_from_name(sj->name)))
            d->cluster[i] = strdup(sj->name);
        d->n++;
        if (!d->job[i] || !d->cluster[i])
            return pflex_error_sys(err, "out of memory");
        if (add_curve(d, i, sj, name, err) < 0)
            return -1;
        meta_features(d->cluster[i], &d->x[i * PFLEX_FEAT_COUNT]);
    }
    return 0;
}

static int check_tm(const pflex_sweep_t *sw, const char *name, const char *need_tm,
                    pflex_error_t *err)
{
    if (!need_tm || sw->has_telemetry)
        return 0;
    return pflex_error_set(err, "%s: the sweep has no telemetry column (dram_active, "
                           "mem_copy_util, ...): %s needs them", name, need_tm);
}

int pflex_dataset_load(int nfiles, char **files, const char *clusters, const char *filter,
                       const char *need_tm, struct pflex_dataset *d, pflex_error_t *err)
{
    static char *stdin_only[] = {"-"};
    struct cmap cm = {0};
    size_t cap = 0;
    int rc = -1;
    memset(d, 0, sizeof *d);
    if (nfiles <= 0) {
        files = stdin_only;
        nfiles = 1;
    }
    if (clusters) {
        char *buf;
        size_t len;
        if (pflex_read_all(clusters, &buf, &len, err) < 0)
            return -1;
        rc = cmap_parse(buf, len, clusters, &cm, err);
        free(buf);
        if (rc < 0)
            goto out;
        rc = -1;
    }
    for (int f = 0; f < nfiles; f++) {
        pflex_sweep_t *sw;
        if (pflex_sweep_read_file(files[f], NULL, &sw, err) < 0)
            goto out;
        int ok = check_tm(sw, files[f], need_tm, err) == 0
                 && add_sweep(d, &cap, sw, files[f], &cm, filter, err) == 0;
        pflex_sweep_destroy(sw);
        if (!ok)
            goto out;
    }
    rc = 0;
out:
    cmap_fini(&cm);
    if (rc < 0)
        pflex_dataset_fini(d);
    return rc;
}

int pflex_dataset_from_sweep(const pflex_sweep_t *sw, const char *name, const char *clusters,
                             size_t clusters_len, const char *clusters_name, const char *filter,
                             const char *need_tm, struct pflex_dataset *d, pflex_error_t *err)
{
    struct cmap cm = {0};
    size_t cap = 0;
    int rc = -1;
    memset(d, 0, sizeof *d);
    if (clusters && cmap_parse(clusters, clusters_len, clusters_name, &cm, err) < 0)
        goto out;
    if (check_tm(sw, name, need_tm, err) == 0 && add_sweep(d, &cap, sw, name, &cm, filter, err) == 0)
        rc = 0;
out:
    cmap_fini(&cm);
    if (rc < 0)
        pflex_dataset_fini(d);
    return rc;
}

int pflex_dataset_subset(const struct pflex_dataset *d, const unsigned char *keep,
                         struct pflex_dataset *o, pflex_error_t *err)
{
    memset(o, 0, sizeof *o);
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += keep[i];
    size_t c = n ? n : 1;
#define A(p, k) (o->p = calloc(c * (k), sizeof *o->p))
    if (!A(job, 1) || !A(cluster, 1) || !A(gpu, 1) || !A(gpus, 1) || !A(x, PFLEX_FEAT_COUNT) ||
        !A(pfi, 1) || !A(loss, PFLEX_DATASET_NCUT) || !A(p0_w, 1) || !A(t0, 1) ||
        !A(cap0_w, 1) || !A(x_max, 1) || !A(used, 1) || !A(dropped, 1) || !A(cn, 1) ||
        !A(cx, 1) || !A(cl, 1))
        goto oom;
#undef A
    for (size_t i = 0, k = 0; i < d->n; i++) {
        if (!keep[i])
            continue;
        o->job[k] = strdup(d->job[i]);
        o->cluster[k] = strdup(d->cluster[i]);
        o->gpu[k] = d->gpu[i] ? strdup(d->gpu[i]) : NULL;
        o->gpus[k] = d->gpus[i];
        memcpy(o->x + k * PFLEX_FEAT_COUNT, d->x + i * PFLEX_FEAT_COUNT,
               PFLEX_FEAT_COUNT * sizeof *o->x);
        o->pfi[k] = d->pfi[i];
        memcpy(o->loss + k * PFLEX_DATASET_NCUT, d->loss + i * PFLEX_DATASET_NCUT,
               PFLEX_DATASET_NCUT * sizeof *o->loss);
        o->p0_w[k] = d->p0_w[i];
        o->t0[k] = d->t0[i];
        o->cap0_w[k] = d->cap0_w[i];
        o->x_max[k] = d->x_max[i];
        o->used[k] = d->used[i];
        o->dropped[k] = d->dropped[i];
        o->cn[k] = d->cn[i];
        o->cx[k] = malloc((d->cn[i] ? d->cn[i] : 1) * sizeof *o->cx[k]);
        o->cl[k] = malloc((d->cn[i] ? d->cn[i] : 1) * sizeof *o->cl[k]);
        o->n = ++k;
        if (!o->job[k - 1] || !o->cluster[k - 1] || !o->cx[k - 1] || !o->cl[k - 1])
            goto oom;
        if (d->cn[i]) {
            memcpy(o->cx[k - 1], d->cx[i], d->cn[i] * sizeof *d->cx[i]);
            memcpy(o->cl[k - 1], d->cl[i], d->cn[i] * sizeof *d->cl[i]);
        }
    }
    return 0;
oom:
    pflex_dataset_fini(o);
    return pflex_error_sys(err, "out of memory");
}

int *pflex_dataset_cluster_ids(const struct pflex_dataset *d, size_t *ngroups)
{
    int *g = malloc((d->n ? d->n : 1) * sizeof *g);
    size_t ng = 0;
    if (!g)
        return NULL;
    for (size_t i = 0; i < d->n; i++) {
        g[i] = -1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(d->cluster[i], d->cluster[j])) {
                g[i] = g[j];
                break;
            }
        if (g[i] < 0)
            g[i] = (int)ng++;
    }
    *ngroups = ng;
    return g;
}

void pflex_dataset_train_data(const struct pflex_dataset *d, struct pflex_train_data *td,
                              double **y)
{
    size_t nt = 1 + PFLEX_DATASET_NCUT;
    double *v = malloc((d->n ? d->n : 1) * nt * sizeof *v);
    if (v)
        for (size_t i = 0; i < d->n; i++) {
            v[i * nt] = d->pfi[i];
            for (int k = 0; k < PFLEX_DATASET_NCUT; k++)
                v[i * nt + 1 + k] = d->loss[i * PFLEX_DATASET_NCUT + k];
        }
    td->n = d->n;
    td->x = d->x;
    td->y = v;
    td->ncut = PFLEX_DATASET_NCUT;
    td->cuts = pflex_dataset_cuts;
    td->use = NULL;
    *y = v;
}
