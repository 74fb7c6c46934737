/* pficsv.c — reading the PFI CSV (docs/contract.md §3), the input of --pfi. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/io/csv.h"
#include "pflex/io/pficsv.h"
#include "pflex/io/sweep.h"

enum { C_JOB, C_GPUS, C_POWER, C_TPUT, C_PFI, C_RANGE, C_FLOOR, C_TIER, C_WEIGHT, C_GPU,
       C_CAP, C_METRIC, C_GRID, C_BY, C_COUNT };
static const char *names[C_COUNT] = {
    "job", "gpus", "power_w", "throughput", "pfi", "range", "floor", "tier", "weight", "gpu",
    "cap_w", "metric", "grid", NULL,
};

static const char *const metrics[] = {"ratio", "area", "elasticity", "loss-area"};

/* The ratio PFI's bounds: x_k / L_k over the points the ratio rule of
 * docs/contract.md §2 keeps (x_k >= 0.01, L_k >= 0.005; pflex/flex/pfi.h's
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

/* One read of a PFI CSV: the table being filled and where each row's
 * names sit in the store until the store stops moving. */
struct reader {
    pflex_csv_t c;
    const char *file;
    const char *by;             /* the extra numeric column, or NULL */
    int idx[C_COUNT];           /* field of each column, -1 when absent */
    size_t need;                /* fields a row must have */
    pflex_pficsv_t *p;
    struct store *st;
    size_t *job_off, *gpu_off, *grid_off;   /* per row; (size_t)-1: none */
    size_t cap;                 /* rows the arrays hold */
};

/* The header row: every required column found, the rest checked.  0, or
 * -1 with err. */
static int read_header(struct reader *rd, pflex_error_t *err)
{
    const char *colnames[C_COUNT];
    memcpy(colnames, names, sizeof colnames);
    colnames[C_BY] = rd->by;
    int got = pflex_csv_next(&rd->c, err);
    if (got <= 0) {
        if (got == 0)
            pflex_error_set(err, "%s: empty file: no header row", rd->file);
        return -1;
    }
    rd->need = 0;
    for (int k = 0; k < C_COUNT; k++) {
        rd->idx[k] = -1;
        for (size_t f = 0; colnames[k] && f < rd->c.nfields; f++)
            if (pflex_csv_field_is(&rd->c.fields[f], colnames[k])) {
                rd->idx[k] = (int)f;
                break;
            }
        if (k <= C_PFI && rd->idx[k] < 0)
            return pflex_error_set(err, "%s:%u: missing column '%s' (a PFI CSV needs job, gpus, "
                                   "power_w, throughput, pfi)", rd->file, rd->c.line, names[k]);
        if (rd->idx[k] >= 0 && (size_t)rd->idx[k] + 1 > rd->need)
            rd->need = (size_t)rd->idx[k] + 1;
    }
    if (pflex_csv_header_check(&rd->c, rd->file, "PFI CSV", colnames, C_COUNT, rd->idx,
                               &rd->st->warnings, err) < 0)
        return -1;
    rd->p->warnings = rd->st->warnings;
    rd->p->has_weight = rd->idx[C_WEIGHT] >= 0;
    rd->p->has_by = rd->idx[C_BY] >= 0;
    return 0;
}

/* Room for one more row.  0, or -1 with err. */
static int grow_rows(struct reader *rd, unsigned line, pflex_error_t *err)
{
    if (rd->p->n < rd->cap)
        return 0;
    size_t nc = rd->cap ? 2 * rd->cap : 64;
    struct pflex_pfi_row *nr = realloc(rd->p->rows, nc * sizeof *nr);
    size_t *nj = nr ? realloc(rd->job_off, nc * sizeof *nj) : NULL;
    size_t *ng = nj ? realloc(rd->gpu_off, nc * sizeof *ng) : NULL;
    if (nr)
        rd->p->rows = nr;
    if (nj)
        rd->job_off = nj;
    if (ng)
        rd->gpu_off = ng;
    size_t *nd = ng ? realloc(rd->grid_off, nc * sizeof *nd) : NULL;
    if (!nd)
        return pflex_error_set(err, "%s:%u: out of memory", rd->file, line);
    rd->grid_off = nd;
    rd->cap = nc;
    return 0;
}

/* Column col of the row into the store (*off, or (size_t)-1 when the
 * column is absent or empty).  0, or -1 with err. */
static int keep_name(struct reader *rd, int col, unsigned line, size_t *off, pflex_error_t *err)
{
    *off = (size_t)-1;
    const struct pflex_csv_field *f = rd->idx[col] >= 0 ? &rd->c.fields[rd->idx[col]] : NULL;
    if (f && f->len && add_str(rd->st, f, off) < 0)
        return pflex_error_set(err, "%s:%u: out of memory", rd->file, line);
    return 0;
}

/* The row's names: job (required), gpu, grid, and the metric.  0, or -1
 * with err. */
static int row_names(struct reader *rd, struct pflex_pfi_row *r, unsigned line,
                     pflex_error_t *err)
{
    const struct pflex_csv_field *f = rd->c.fields;
    const int *idx = rd->idx;
    const struct pflex_csv_field *jf = &f[idx[C_JOB]];
    size_t q = rd->p->n;
    if (!jf->len)
        return pflex_error_set(err, "%s:%u: column 'job': empty job name", rd->file, line);
    if (pflex_csv_field_name(err, rd->file, line, "job", "job name", jf) < 0
        || (idx[C_GPU] >= 0
            && pflex_csv_field_name(err, rd->file, line, "gpu", "GPU name", &f[idx[C_GPU]]) < 0))
        return -1;
    if (keep_name(rd, C_JOB, line, &rd->job_off[q], err)
        || keep_name(rd, C_GPU, line, &rd->gpu_off[q], err)
        || keep_name(rd, C_GRID, line, &rd->grid_off[q], err))
        return -1;
    if (idx[C_METRIC] >= 0 && f[idx[C_METRIC]].len) {
        const struct pflex_csv_field *mf = &f[idx[C_METRIC]];
        r->metric = NULL;
        for (size_t k = 0; k < sizeof metrics / sizeof *metrics; k++)
            if (pflex_csv_field_is(mf, metrics[k]))
                r->metric = metrics[k];
        if (!r->metric)
            return bad(err, rd->file, line, C_METRIC, mf,
                       "is not a PFI metric (ratio, area, elasticity, loss-area)");
    }
    return 0;
}

/* The required numbers: gpus, power_w, throughput, and pfi within what
 * its metric can produce (docs/contract.md §2): a ratio PFI is a mean of
 * x/L over points with x in [0.01, 1] and L in [0.005, 1], so within
 * [0.01, 200]; the area between curves over the unit square lies within
 * [-1, 1].  A written value is rounded: 1e-9 of slack.  0, or -1. */
static int row_required(struct reader *rd, struct pflex_pfi_row *r, unsigned line,
                        pflex_error_t *err)
{
    const struct pflex_csv_field *f = rd->c.fields;
    const int *idx = rd->idx;
    const char *file = rd->file;
    double g;
    const struct pflex_csv_field *gf = &f[idx[C_GPUS]];
    if (pflex_parse_double(gf->s, gf->len, &g) < 0 || g < 1 || g > 1e8 || g != floor(g))
        return bad(err, file, line, C_GPUS, gf, "is not a positive whole number");
    r->gpus = (int)g;
    const struct pflex_csv_field *pf = &f[idx[C_POWER]], *tf = &f[idx[C_TPUT]];
    if (pflex_parse_double(pf->s, pf->len, &r->power_w) < 0 || !(r->power_w > 0))
        return bad(err, file, line, C_POWER, pf, "is not a positive number");
    if (pflex_parse_double(tf->s, tf->len, &r->throughput) < 0 || !(r->throughput > 0))
        return bad(err, file, line, C_TPUT, tf, "is not a positive number");
    const struct pflex_csv_field *xf = &f[idx[C_PFI]];
    if (xf->len && (pflex_parse_double(xf->s, xf->len, &r->pfi) < 0 || !isfinite(r->pfi)
                    || r->pfi > 1e6 || r->pfi < -1e6))
        return bad(err, file, line, C_PFI, xf, "is not a finite number");
    if (xf->len && r->metric == metrics[0]
        && !(r->pfi >= RATIO_MIN * (1 - 1e-9) && r->pfi <= RATIO_MAX * (1 + 1e-9)))
        return bad(err, file, line, C_PFI, xf, "cannot be a ratio PFI (a mean of x/L over "
                   "capped points with x >= 0.01 and L >= 0.005: within [0.01, 200])");
    if (xf->len && r->metric == metrics[1] && !(r->pfi >= -1 && r->pfi <= 1))
        return bad(err, file, line, C_PFI, xf, "cannot be an area PFI (within [-1, 1])");
    return 0;
}

/* The optional numbers, each checked: range (and a loss-area PFI against
 * it: at least 1 - 2/range, the loss being at most 1), tier, floor,
 * weight, cap_w, and the --by column.  0, or -1 with err. */
static int row_optional(struct reader *rd, struct pflex_pfi_row *r, unsigned line,
                        pflex_error_t *err)
{
    const struct pflex_csv_field *f = rd->c.fields;
    const int *idx = rd->idx;
    const char *file = rd->file;
#define GIVEN(col) (idx[col] >= 0 && f[idx[col]].len)
    const struct pflex_csv_field *xf = &f[idx[C_PFI]];
    if (GIVEN(C_RANGE)) {
        const struct pflex_csv_field *rf = &f[idx[C_RANGE]];
        if (pflex_parse_double(rf->s, rf->len, &r->range) < 0 || r->range < 0 || r->range > 1)
            return bad(err, file, line, C_RANGE, rf, "is not a fraction between 0 and 1");
        if (xf->len && r->metric == metrics[3] && r->range > 0
            && r->pfi < (1 - 2 / r->range) - 1e-9 * (2 / r->range))
            return bad(err, file, line, C_PFI, xf, "cannot be a loss-area PFI over that range "
                       "(at least 1 - 2/range, the loss being at most 1)");
    }
    if (GIVEN(C_TIER)
        && pflex_csv_field_tier(err, file, line, "tier", &f[idx[C_TIER]], &r->floor) < 0)
        return -1;
    if (GIVEN(C_FLOOR)) {
        const struct pflex_csv_field *ff = &f[idx[C_FLOOR]];
        if (pflex_parse_double(ff->s, ff->len, &r->floor) < 0 || r->floor < 0 || r->floor > 1)
            return bad(err, file, line, C_FLOOR, ff, "is not a fraction between 0 and 1");
    }
    if (GIVEN(C_WEIGHT)) {
        const struct pflex_csv_field *wf = &f[idx[C_WEIGHT]];
        if (pflex_parse_double(wf->s, wf->len, &r->weight) < 0 || r->weight < 0)
            return bad(err, file, line, C_WEIGHT, wf, "is not a non-negative number");
    }
    if (GIVEN(C_CAP)) {
        const struct pflex_csv_field *cf = &f[idx[C_CAP]];
        if (pflex_parse_double(cf->s, cf->len, &r->cap_w) < 0 || !(r->cap_w > 0))
            return bad(err, file, line, C_CAP, cf, "is not a positive number");
    }
    if (GIVEN(C_BY)) {
        const struct pflex_csv_field *bf = &f[idx[C_BY]];
        if (pflex_parse_double(bf->s, bf->len, &r->by) < 0 || !isfinite(r->by))
            return pflex_csv_field_error(err, file, line, rd->by, bf, "is not a number");
    }
#undef GIVEN
    return 0;
}

/* The row just read, appended.  0, or -1 with err. */
static int read_row(struct reader *rd, pflex_error_t *err)
{
    unsigned line = rd->c.line;
    if (rd->c.nfields < rd->need)
        return pflex_csv_row_error(err, rd->file, line, rd->c.nfields, rd->need);
    if (grow_rows(rd, line, err))
        return -1;
    struct pflex_pfi_row *r = &rd->p->rows[rd->p->n];
    memset(r, 0, sizeof *r);
    r->line = line;
    r->pfi = r->range = r->floor = r->cap_w = r->by = NAN;
    r->metric = metrics[0];
    r->weight = 1;
    if (row_names(rd, r, line, err) || row_required(rd, r, line, err)
        || row_optional(rd, r, line, err))
        return -1;
    rd->p->n++;
    return 0;
}

/* Once every row is read: names pointed into the store, which no longer
 * moves, rows sorted by job for lookups, a job named twice refused.  0,
 * or -1 with err. */
static int index_rows(struct reader *rd, pflex_error_t *err)
{
    pflex_pficsv_t *p = rd->p;
    struct store *st = rd->st;
    for (size_t q = 0; q < p->n; q++) {
        p->rows[q].job = st->strings + rd->job_off[q];
        p->rows[q].gpu = rd->gpu_off[q] == (size_t)-1 ? NULL : st->strings + rd->gpu_off[q];
        p->rows[q].grid = rd->grid_off[q] == (size_t)-1 ? NULL : st->strings + rd->grid_off[q];
    }
    st->sorted = malloc(p->n * sizeof *st->sorted);
    if (!st->sorted)
        return pflex_error_set(err, "%s: out of memory", rd->file);
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
            return pflex_error_set(err, "%s:%u: job '%s' already on line %u", rd->file, b->line,
                                   b->job, a->line);
        }
    return 0;
}

int pflex_pficsv_read_mem_by(const char *buf, size_t len, const char *name, const char *by,
                             pflex_pficsv_t **out, pflex_error_t *err)
{
    struct reader rd = {.file = name ? name : "-", .by = by};
    pflex_csv_init(&rd.c, buf, len, rd.file);
    rd.p = calloc(1, sizeof *rd.p);
    rd.st = calloc(1, sizeof *rd.st);
    int rc = -1, got = -1;
    *out = NULL;
    if (!rd.p || !rd.st) {
        free(rd.st);
        pflex_error_set(err, "%s: out of memory", rd.file);
        goto done;
    }
    rd.p->priv = rd.st;
    if (read_header(&rd, err))
        goto done;
    while ((got = pflex_csv_next(&rd.c, err)) == 1)
        if (read_row(&rd, err))
            goto done;
    if (got < 0)
        goto done;
    if (rd.p->n == 0) {
        pflex_error_set(err, "%s: no data rows after the header", rd.file);
        goto done;
    }
    if (index_rows(&rd, err))
        goto done;
    *out = rd.p;
    rd.p = NULL;
    rc = 0;
done:
    free(rd.job_off);
    free(rd.gpu_off);
    free(rd.grid_off);
    pflex_csv_fini(&rd.c);
    pflex_pficsv_destroy(rd.p);
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
