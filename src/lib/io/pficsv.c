/* pficsv.c — reading the PFI CSV (docs/contract.md §3), the input of --pfi. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/csv.h"
#include "pflex/pficsv.h"
#include "pflex/sweep.h"

enum { C_JOB, C_GPUS, C_POWER, C_TPUT, C_PFI, C_RANGE, C_FLOOR, C_TIER, C_WEIGHT, C_GPU,
       C_CAP, C_METRIC, C_GRID, C_BY, C_COUNT };
static const char *names[C_COUNT] = {
    "job", "gpus", "power_w", "throughput", "pfi", "range", "floor", "tier", "weight", "gpu",
    "cap_w", "metric", "grid", NULL,
};

static const char *const metrics[] = {"ratio", "area", "elasticity", "loss-area"};

/* The ratio PFI's bounds: x_k / L_k over the points the ratio rule of
 * docs/contract.md §2 keeps (x_k >= 0.01, L_k >= 0.005; pflex/pfi.h's
 * PFLEX_PFI_MIN_*, which a test checks against these), with x_k <= 1 and
 * L_k <= 1 (power and throughput are not negative). */
#define RATIO_MIN 0.01
#define RATIO_MAX 200.0

struct store {
    char *strings;
    size_t len, cap;
    const struct pflex_pfi_row **sorted;    /* rows by job name, for lookups */
    char *warnings;                         /* pflex_pficsv_t.warnings */
};

static int cmp_row(const void *a, const void *b)
{
    const struct pflex_pfi_row *const *p = a, *const *q = b;
    return strcmp((*p)->job, (*q)->job);
}

static int add_str(struct store *st, const struct pflex_csv_field *f, size_t *off)
{
    if (st->len + f->len + 1 > st->cap) {
        size_t nc = st->cap ? st->cap : 256;
        while (nc < st->len + f->len + 1)
            nc *= 2;
        char *ns = realloc(st->strings, nc);
        if (!ns)
            return -1;
        st->strings = ns;
        st->cap = nc;
    }
    memcpy(st->strings + st->len, f->s, f->len);
    st->strings[st->len + f->len] = 0;
    *off = st->len;
    st->len += f->len + 1;
    return 0;
}

static int bad(pflex_error_t *err, const char *file, unsigned line, int col,
               const struct pflex_csv_field *f, const char *what)
{
    return pflex_csv_field_error(err, file, line, names[col], f, what);
}

void pflex_pficsv_destroy(pflex_pficsv_t *p)
{
    if (!p)
        return;
    struct store *st = p->priv;
    if (st) {
        free(st->strings);
        free(st->sorted);
        free(st->warnings);
    }
    free(st);
    free(p->rows);
    free(p);
}

int pflex_pficsv_read_mem_by(const char *buf, size_t len, const char *name, const char *by,
                             pflex_pficsv_t **out, pflex_error_t *err)
{
    const char *file = name ? name : "-";
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, file);
    pflex_pficsv_t *p = calloc(1, sizeof *p);
    struct store *st = calloc(1, sizeof *st);
    size_t *job_off = NULL, *gpu_off = NULL, *grid_off = NULL, cap = 0;
    const char *colnames[C_COUNT];
    memcpy(colnames, names, sizeof colnames);
    colnames[C_BY] = by;
    int idx[C_COUNT], rc = -1, got;
    *out = NULL;
    if (!p || !st) {
        free(st);
        pflex_error_set(err, "%s: out of memory", file);
        goto done;
    }
    p->priv = st;
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (got == 0)
            pflex_error_set(err, "%s: empty file: no header row", file);
        goto done;
    }
    size_t need = 0;
    for (int k = 0; k < C_COUNT; k++) {
        idx[k] = -1;
        for (size_t f = 0; colnames[k] && f < c.nfields; f++)
            if (pflex_csv_field_is(&c.fields[f], colnames[k])) {
                idx[k] = (int)f;
                break;
            }
        if (k <= C_PFI && idx[k] < 0) {
            pflex_error_set(err, "%s:%u: missing column '%s' (a PFI CSV needs job, gpus, "
                            "power_w, throughput, pfi)", file, c.line, names[k]);
            goto done;
        }
        if (idx[k] >= 0 && (size_t)idx[k] + 1 > need)
            need = (size_t)idx[k] + 1;
    }
    if (pflex_csv_header_check(&c, file, "PFI CSV", colnames, C_COUNT, idx, &st->warnings,
                               err) < 0)
        goto done;
    p->warnings = st->warnings;
    p->has_weight = idx[C_WEIGHT] >= 0;
    p->has_by = idx[C_BY] >= 0;
    while ((got = pflex_csv_next(&c, err)) == 1) {
        unsigned line = c.line;
        const struct pflex_csv_field *f = c.fields;
        if (c.nfields < need) {
            pflex_csv_row_error(err, file, line, c.nfields, need);
            goto done;
        }
        if (p->n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            struct pflex_pfi_row *nr = realloc(p->rows, nc * sizeof *nr);
            size_t *nj = nr ? realloc(job_off, nc * sizeof *nj) : NULL;
            size_t *ng = nj ? realloc(gpu_off, nc * sizeof *ng) : NULL;
            if (nr)
                p->rows = nr;
            if (nj)
                job_off = nj;
            if (ng)
                gpu_off = ng;
            size_t *nd = ng ? realloc(grid_off, nc * sizeof *nd) : NULL;
            if (!nd) {
                pflex_error_set(err, "%s:%u: out of memory", file, line);
                goto done;
            }
            grid_off = nd;
            cap = nc;
        }
        struct pflex_pfi_row *r = &p->rows[p->n];
        memset(r, 0, sizeof *r);
        r->line = line;
        r->pfi = r->range = r->floor = r->cap_w = r->by = NAN;
        r->metric = metrics[0];
        r->weight = 1;
        const struct pflex_csv_field *jf = &f[idx[C_JOB]];
        if (!jf->len) {
            pflex_error_set(err, "%s:%u: column 'job': empty job name", file, line);
            goto done;
        }
        if (pflex_csv_field_name(err, file, line, "job", "job name", jf) < 0
            || (idx[C_GPU] >= 0
                && pflex_csv_field_name(err, file, line, "gpu", "GPU name", &f[idx[C_GPU]]) < 0))
            goto done;
        if (add_str(st, jf, &job_off[p->n]) < 0) {
            pflex_error_set(err, "%s:%u: out of memory", file, line);
            goto done;
        }
        gpu_off[p->n] = (size_t)-1;
        if (idx[C_GPU] >= 0 && f[idx[C_GPU]].len && add_str(st, &f[idx[C_GPU]],
                                                             &gpu_off[p->n]) < 0) {
            pflex_error_set(err, "%s:%u: out of memory", file, line);
            goto done;
        }
        grid_off[p->n] = (size_t)-1;
        if (idx[C_GRID] >= 0 && f[idx[C_GRID]].len && add_str(st, &f[idx[C_GRID]],
                                                               &grid_off[p->n]) < 0) {
            pflex_error_set(err, "%s:%u: out of memory", file, line);
            goto done;
        }
        if (idx[C_METRIC] >= 0 && f[idx[C_METRIC]].len) {
            const struct pflex_csv_field *mf = &f[idx[C_METRIC]];
            r->metric = NULL;
            for (size_t k = 0; k < sizeof metrics / sizeof *metrics; k++)
                if (pflex_csv_field_is(mf, metrics[k]))
                    r->metric = metrics[k];
            if (!r->metric) {
                bad(err, file, line, C_METRIC, mf,
                    "is not a PFI metric (ratio, area, elasticity, loss-area)");
                goto done;
            }
        }
        double g;
        const struct pflex_csv_field *gf = &f[idx[C_GPUS]];
        if (pflex_parse_double(gf->s, gf->len, &g) < 0 || g < 1 || g > 1e8 || g != floor(g)) {
            bad(err, file, line, C_GPUS, gf, "is not a positive whole number");
            goto done;
        }
        r->gpus = (int)g;
        const struct pflex_csv_field *pf = &f[idx[C_POWER]], *tf = &f[idx[C_TPUT]];
        if (pflex_parse_double(pf->s, pf->len, &r->power_w) < 0 || !(r->power_w > 0)) {
            bad(err, file, line, C_POWER, pf, "is not a positive number");
            goto done;
        }
        if (pflex_parse_double(tf->s, tf->len, &r->throughput) < 0 || !(r->throughput > 0)) {
            bad(err, file, line, C_TPUT, tf, "is not a positive number");
            goto done;
        }
        const struct pflex_csv_field *xf = &f[idx[C_PFI]];
        if (xf->len && (pflex_parse_double(xf->s, xf->len, &r->pfi) < 0 || !isfinite(r->pfi)
                        || r->pfi > 1e6 || r->pfi < -1e6)) {
            bad(err, file, line, C_PFI, xf, "is not a finite number");
            goto done;
        }
        /* What the metric cannot produce (docs/contract.md §2): a ratio PFI
         * is a mean of x/L over points with x in [0.01, 1] and L in [0.005,
         * 1], so within [0.01, 200]; the area between curves over the unit
         * square lies within [-1, 1]; loss-area over R, with L <= 1, is at
         * least 1 - 2/R.  A written value is rounded: 1e-9 of slack. */
        if (xf->len && r->metric == metrics[0]
            && !(r->pfi >= RATIO_MIN * (1 - 1e-9) && r->pfi <= RATIO_MAX * (1 + 1e-9))) {
            bad(err, file, line, C_PFI, xf, "cannot be a ratio PFI (a mean of x/L over "
                "capped points with x >= 0.01 and L >= 0.005: within [0.01, 200])");
            goto done;
        }
        if (xf->len && r->metric == metrics[1] && !(r->pfi >= -1 && r->pfi <= 1)) {
            bad(err, file, line, C_PFI, xf, "cannot be an area PFI (within [-1, 1])");
            goto done;
        }
        if (idx[C_RANGE] >= 0 && f[idx[C_RANGE]].len) {
            const struct pflex_csv_field *rf = &f[idx[C_RANGE]];
            if (pflex_parse_double(rf->s, rf->len, &r->range) < 0 || r->range < 0
                || r->range > 1) {
                bad(err, file, line, C_RANGE, rf, "is not a fraction between 0 and 1");
                goto done;
            }
            if (xf->len && r->metric == metrics[3] && r->range > 0
                && r->pfi < (1 - 2 / r->range) - 1e-9 * (2 / r->range)) {
                bad(err, file, line, C_PFI, xf, "cannot be a loss-area PFI over that range "
                    "(at least 1 - 2/range, the loss being at most 1)");
                goto done;
            }
        }
        if (idx[C_TIER] >= 0 && f[idx[C_TIER]].len
            && pflex_csv_field_tier(err, file, line, "tier", &f[idx[C_TIER]], &r->floor) < 0)
            goto done;
        if (idx[C_FLOOR] >= 0 && f[idx[C_FLOOR]].len) {
            const struct pflex_csv_field *ff = &f[idx[C_FLOOR]];
            if (pflex_parse_double(ff->s, ff->len, &r->floor) < 0 || r->floor < 0
                || r->floor > 1) {
                bad(err, file, line, C_FLOOR, ff, "is not a fraction between 0 and 1");
                goto done;
            }
        }
        if (idx[C_WEIGHT] >= 0 && f[idx[C_WEIGHT]].len) {
            const struct pflex_csv_field *wf = &f[idx[C_WEIGHT]];
            if (pflex_parse_double(wf->s, wf->len, &r->weight) < 0 || r->weight < 0) {
                bad(err, file, line, C_WEIGHT, wf, "is not a non-negative number");
                goto done;
            }
        }
        if (idx[C_CAP] >= 0 && f[idx[C_CAP]].len) {
            const struct pflex_csv_field *cf = &f[idx[C_CAP]];
            if (pflex_parse_double(cf->s, cf->len, &r->cap_w) < 0 || !(r->cap_w > 0)) {
                bad(err, file, line, C_CAP, cf, "is not a positive number");
                goto done;
            }
        }
        if (idx[C_BY] >= 0 && f[idx[C_BY]].len) {
            const struct pflex_csv_field *bf = &f[idx[C_BY]];
            if (pflex_parse_double(bf->s, bf->len, &r->by) < 0 || !isfinite(r->by)) {
                pflex_csv_field_error(err, file, line, by, bf, "is not a number");
                goto done;
            }
        }
        p->n++;
    }
    if (got < 0)
        goto done;
    if (p->n == 0) {
        pflex_error_set(err, "%s: no data rows after the header", file);
        goto done;
    }
    for (size_t q = 0; q < p->n; q++) {
        p->rows[q].job = st->strings + job_off[q];
        p->rows[q].gpu = gpu_off[q] == (size_t)-1 ? NULL : st->strings + gpu_off[q];
        p->rows[q].grid = grid_off[q] == (size_t)-1 ? NULL : st->strings + grid_off[q];
    }
    st->sorted = malloc(p->n * sizeof *st->sorted);
    if (!st->sorted) {
        pflex_error_set(err, "%s: out of memory", file);
        goto done;
    }
    for (size_t q = 0; q < p->n; q++)
        st->sorted[q] = &p->rows[q];
    qsort(st->sorted, p->n, sizeof *st->sorted, cmp_row);
    for (size_t q = 1; q < p->n; q++)
        if (strcmp(st->sorted[q]->job, st->sorted[q - 1]->job) == 0) {
            const struct pflex_pfi_row *a = st->sorted[q - 1], *b = st->sorted[q];
            if (a->line > b->line) {
                const struct pflex_pfi_row *t = a;
                a = b;
                b = t;
            }
            pflex_error_set(err, "%s:%u: job '%s' already on line %u", file, b->line, b->job,
                            a->line);
            goto done;
        }
    *out = p;
    p = NULL;
    rc = 0;
done:
    free(job_off);
    free(gpu_off);
    free(grid_off);
    pflex_csv_fini(&c);
    pflex_pficsv_destroy(p);
    return rc;
}

int pflex_pficsv_read_mem(const char *buf, size_t len, const char *name,
                          pflex_pficsv_t **out, pflex_error_t *err)
{
    return pflex_pficsv_read_mem_by(buf, len, name, NULL, out, err);
}

int pflex_pficsv_read_file(const char *path, pflex_pficsv_t **out, pflex_error_t *err)
{
    return pflex_pficsv_read_file_by(path, NULL, out, err);
}

int pflex_pficsv_read_file_by(const char *path, const char *by, pflex_pficsv_t **out,
                              pflex_error_t *err)
{
    char *buf;
    size_t len;
    *out = NULL;
    if (pflex_read_all(path, &buf, &len, err) < 0)
        return -1;
    int rc = pflex_pficsv_read_mem_by(buf, len, strcmp(path, "-") == 0 ? "<stdin>" : path, by,
                                      out, err);
    free(buf);
    return rc;
}

const struct pflex_pfi_row *pflex_pficsv_find(const pflex_pficsv_t *p, const char *job)
{
    const struct store *st = p->priv;
    struct pflex_pfi_row key;
    const struct pflex_pfi_row *kp = &key, *const *hit;
    key.job = job;
    hit = bsearch(&kp, st->sorted, p->n, sizeof *st->sorted, cmp_row);
    return hit ? *hit : NULL;
}
