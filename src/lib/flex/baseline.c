/* baseline.c — each job's features with its baseline, from a sweep with
 * telemetry or from a features CSV (pflex/flex/baseline.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/flex/baseline.h"
#include "pflex/io/csv.h"
#include "lib/util/grow.h"

struct pflex_baseline *pflex_baseline_add(struct pflex_baseline_set *s)
{
    if (pflex_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v) < 0)
        return NULL;
    struct pflex_baseline *r = &s->v[s->n++];
    memset(r, 0, sizeof *r);
    r->floor = NAN;
    return r;
}

void pflex_baseline_set_fini(struct pflex_baseline_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].gpu);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

int pflex_baseline_add_sweep(struct pflex_baseline_set *s, const pflex_sweep_t *sw,
                             const char *path, pflex_error_t *err)
{
    if (!sw->has_telemetry)
        return pflex_error_set(err, "%s: the sweep has no telemetry column: nothing to predict "
                               "from", path);
    for (size_t i = 0; i < sw->njobs; i++) {
        const struct pflex_sweep_job *sj = &sw->jobs[i];
        struct pflex_baseline *j = pflex_baseline_add(s);
        if (!j)
            return pflex_error_sys(err, "out of memory");
        struct pflex_job_features f;
        pflex_features_from_sweep_job(sj, &f);
        memcpy(j->x, f.v, sizeof f.v);
        const struct pflex_sweep_point *b = &sj->points[sj->npoints - 1];
        j->name = strdup(sj->name);
        j->gpu = sj->gpu ? strdup(sj->gpu) : NULL;
        j->gpus = sj->gpus;
        j->p0_w = b->power_w;
        j->t0 = b->throughput;
        j->cap0_w = b->cap_w;
        j->floor = sj->floor;
        if (!j->name)
            return pflex_error_sys(err, "out of memory");
    }
    return 0;
}

/* Where each column of a features CSV is (-1: absent). */
struct cols {
    int feat[PFLEX_FEAT_COUNT];
    int job, gpus, power, tput, cap, gpu, floor;
};

static void header(const pflex_csv_t *c, struct cols *k)
{
    *k = (struct cols){.job = -1, .gpus = -1, .power = -1, .tput = -1, .cap = -1, .gpu = -1,
                       .floor = -1};
    for (int f = 0; f < PFLEX_FEAT_COUNT; f++)
        k->feat[f] = -1;
    for (size_t i = 0; i < c->nfields; i++) {
        const struct pflex_csv_field *h = &c->fields[i];
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(h->len < 63 ? h->len : 63), h->s);
        int f = pflex_feat_by_name(name);
        if (f >= 0)
            k->feat[f] = (int)i;
        else if (!strcmp(name, "job")) k->job = (int)i;
        else if (!strcmp(name, "gpus")) k->gpus = (int)i;
        else if (!strcmp(name, "power_w")) k->power = (int)i;
        else if (!strcmp(name, "throughput")) k->tput = (int)i;
        else if (!strcmp(name, "cap_w")) k->cap = (int)i;
        else if (!strcmp(name, "gpu")) k->gpu = (int)i;
        else if (!strcmp(name, "floor")) k->floor = (int)i;
    }
}

/* The field of column i of this row, or NULL when the row has none there
 * or it is empty. */
static const struct pflex_csv_field *field(const pflex_csv_t *c, int i)
{
    return i >= 0 && (size_t)i < c->nfields && c->fields[i].len ? &c->fields[i] : NULL;
}

/* One data row into j. */
static int row(const pflex_csv_t *c, const struct cols *k, const char *name,
               struct pflex_baseline *j, pflex_error_t *err)
{
    const struct pflex_csv_field *v;
    for (int f = 0; f < PFLEX_FEAT_COUNT; f++) {
        j->x[f] = NAN;
        if ((v = field(c, k->feat[f])) && pflex_parse_double(v->s, v->len, &j->x[f]) < 0)
            return pflex_error_set(err, "%s:%u: column '%s': not a finite number", name,
                                   c->line, pflex_feat_name(f));
    }
    double gpus = 1;
    if ((size_t)k->job >= c->nfields || (size_t)k->power >= c->nfields
        || (size_t)k->tput >= c->nfields || !c->fields[k->job].len)
        return pflex_error_set(err, "%s:%u: job, power_w or throughput missing", name, c->line);
    const struct pflex_csv_field *p = &c->fields[k->power], *t = &c->fields[k->tput];
    if (pflex_parse_double(p->s, p->len, &j->p0_w) < 0 || j->p0_w <= 0
        || pflex_parse_double(t->s, t->len, &j->t0) < 0 || j->t0 <= 0)
        return pflex_error_set(err, "%s:%u: power_w and throughput must be positive numbers",
                               name, c->line);
    if ((v = field(c, k->gpus)) && (pflex_parse_double(v->s, v->len, &gpus) < 0 || gpus < 1
                                    || gpus > 1e6 || gpus != floor(gpus)))
        return pflex_error_set(err, "%s:%u: column 'gpus': not a positive integer", name,
                               c->line);
    j->gpus = (int)gpus;
    j->cap0_w = NAN;
    if ((v = field(c, k->cap)))
        pflex_parse_double(v->s, v->len, &j->cap0_w);
    if ((v = field(c, k->floor)))
        pflex_parse_double(v->s, v->len, &j->floor);
    j->name = strndup(c->fields[k->job].s, c->fields[k->job].len);
    if ((v = field(c, k->gpu)))
        j->gpu = strndup(v->s, v->len);
    if (!j->name)
        return pflex_error_sys(err, "out of memory");
    j->x[PFLEX_FEAT_LOG2_GPUS] = log2(gpus);
    return 0;
}

int pflex_baseline_read_features_csv(struct pflex_baseline_set *s, const char *buf, size_t len,
                                     const char *name, pflex_error_t *err)
{
    pflex_csv_t c;
    struct cols k;
    int got, rc = -1;
    pflex_csv_init(&c, buf, len, name);
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (got == 0)
            pflex_error_set(err, "empty file");
        goto out;
    }
    header(&c, &k);
    if (k.job < 0 || k.power < 0 || k.tput < 0) {
        pflex_error_set(err, "%s:%u: a features CSV needs columns job, power_w and throughput "
                        "(the baseline; 'pflex features' cannot know throughput)", name, c.line);
        goto out;
    }
    while ((got = pflex_csv_next(&c, err)) > 0) {
        struct pflex_baseline *j = pflex_baseline_add(s);
        if (!j) {
            pflex_error_sys(err, "out of memory");
            goto out;
        }
        if (row(&c, &k, name, j, err) < 0)
            goto out;
    }
    rc = got < 0 ? -1 : 0;
out:
    pflex_csv_fini(&c);
    return rc;
}
