/* sweep.c — reading the sweep CSV of SPEC §3.
 *
 * One pass over the file collects rows (job index, cap, power, throughput,
 * telemetry); a counting sort groups them by job in O(rows), and an
 * insertion sort per job (already sorted in every file we write) orders them
 * by cap before rows at the same cap are averaged.  Job names are looked up
 * in an open-addressing hash table, with a shortcut for the common case of a
 * job's rows standing together.  This keeps an 8-million-row file well under
 * a second.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pflex/csv.h"
#include "pflex/sweep.h"

static const char *const tm_names[PFLEX_TM_COUNT] = {
    "sm_clock_mhz", "mem_clock_mhz", "gpu_util", "mem_copy_util", "sm_active",
    "sm_occupancy", "tensor_active", "dram_active", "gr_engine_active",
    "pcie_tx_bytes", "pcie_rx_bytes", "nvlink_tx_bytes", "nvlink_rx_bytes",
};

const char *pflex_tm_name(enum pflex_tm f)
{
    return (unsigned)f < PFLEX_TM_COUNT ? tm_names[f] : "?";
}

enum col {
    COL_JOB, COL_CAP, COL_POWER, COL_TPUT, COL_GPU, COL_GPUS, COL_FLOOR,
    COL_WEIGHT, COL_TIER, COL_TM0,
    COL_COUNT = COL_TM0 + PFLEX_TM_COUNT
};

static const char *col_name(int c)
{
    static const char *const base[COL_TM0] = {
        "job", "cap_w", "power_w", "throughput", "gpu", "gpus", "floor",
        "weight", "tier",
    };
    return c < COL_TM0 ? base[c] : tm_names[c - COL_TM0];
}

struct row {
    uint32_t job;
    uint32_t line;
    double cap, power, tput;
};

struct jobmeta {
    size_t name_off, name_len;
    size_t gpu_off, gpu_len;    /* gpu_len 0: none */
    int gpus;                   /* 0: unset */
    double floor, weight;
    int has_floor, has_weight;
    unsigned line;
    size_t nrows;
};

struct store {
    char *names;                /* arena of job and gpu names, NUL-separated */
    struct pflex_sweep_point *points;
    double *telemetry;
};

struct reader {
    const char *name;
    char *arena;
    size_t arena_len, arena_cap;
    struct jobmeta *jobs;
    size_t njobs, jobs_cap;
    uint64_t *table;            /* hash slots: top 32 hash bits << 32 | job index + 1;
                                 * 0 empty.  The tag spares a visit to the job
                                 * (a cache miss) on most mismatches. */
    size_t table_cap;
    struct row *rows;
    size_t nrows, rows_cap;
    double *tm;                 /* nrows x PFLEX_TM_COUNT when has_tm */
    size_t tm_cap;              /* rows tm has room for */
    int has_tm;
    int scattered;              /* some job's rows are not all together */
};

int pflex_tier_floor(const char *tier, double *floor)
{
    static const double floors[4] = {1.0, 0.90, 0.75, 0.50};
    const char *p = tier;
    while (*p == ' ')
        p++;
    if (strncasecmp(p, "flex", 4) == 0)
        p += 4;
    while (*p == ' ' || *p == '_' || *p == '-')
        p++;
    if (p[0] >= '0' && p[0] <= '3' && (p[1] == 0 || p[1] == ' ')) {
        *floor = floors[p[0] - '0'];
        return 0;
    }
    return -1;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(*p, ncap * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = ncap;
    return 0;
}

static int arena_add(struct reader *r, const char *s, size_t n, size_t *off)
{
    if (grow((void **)&r->arena, &r->arena_cap, r->arena_len + n + 1, 1) < 0)
        return -1;
    memcpy(r->arena + r->arena_len, s, n);
    r->arena[r->arena_len + n] = 0;
    *off = r->arena_len;
    r->arena_len += n + 1;
    return 0;
}

static int table_rehash(struct reader *r)
{
    size_t ncap = r->table_cap ? r->table_cap * 2 : 1024;
    uint64_t *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -1;
    for (size_t j = 0; j < r->njobs; j++) {
        uint64_t h = hash_bytes(r->arena + r->jobs[j].name_off, r->jobs[j].name_len);
        size_t i = h & (ncap - 1);
        while (nt[i])
            i = (i + 1) & (ncap - 1);
        nt[i] = (h >> 32 << 32) | (uint64_t)(j + 1);
    }
    free(r->table);
    r->table = nt;
    r->table_cap = ncap;
    return 0;
}

/* Index of the job named s, created if new; -1 when out of memory. */
static long job_lookup(struct reader *r, const char *s, size_t n, unsigned line)
{
    if ((r->njobs + 1) * 2 > r->table_cap && table_rehash(r) < 0)
        return -1;
    uint64_t h = hash_bytes(s, n), tag = h >> 32 << 32;
    size_t i = h & (r->table_cap - 1);
    while (r->table[i]) {
        uint64_t e = r->table[i];
        if ((e >> 32 << 32) == tag) {
            long k = (long)(uint32_t)e - 1;
            struct jobmeta *j = &r->jobs[k];
            if (j->name_len == n && memcmp(r->arena + j->name_off, s, n) == 0)
                return k;
        }
        i = (i + 1) & (r->table_cap - 1);
    }
    if (grow((void **)&r->jobs, &r->jobs_cap, r->njobs + 1, sizeof *r->jobs) < 0)
        return -1;
    struct jobmeta *j = &r->jobs[r->njobs];
    memset(j, 0, sizeof *j);
    if (arena_add(r, s, n, &j->name_off) < 0)
        return -1;
    j->name_len = n;
    j->line = line;
    j->weight = 1.0;
    r->table[i] = tag | (uint64_t)(r->njobs + 1);
    return (long)r->njobs++;
}

/* Parse "name=Header,..." into headers[] (pointers into a copy). */
static int parse_columns(const char *spec, char **copy, const char *headers[COL_COUNT],
                         pflex_error_t *err)
{
    for (int c = 0; c < COL_COUNT; c++)
        headers[c] = col_name(c);
    *copy = NULL;
    if (!spec || !*spec)
        return 0;
    char *s = strdup(spec);
    if (!s)
        return pflex_error_set(err, "out of memory");
    *copy = s;
    for (char *tok = s; tok;) {
        char *next = strchr(tok, ',');
        if (next)
            *next++ = 0;
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !eq[1])
            return pflex_error_set(err, "--columns: '%s' is not name=Header", tok);
        *eq = 0;
        int found = -1;
        for (int c = 0; c < COL_COUNT; c++)
            if (strcmp(tok, col_name(c)) == 0)
                found = c;
        if (found < 0)
            return pflex_error_set(err, "--columns: unknown column name '%s' "
                                   "(job, cap_w, power_w, throughput, gpu, gpus, floor, "
                                   "weight, tier or a telemetry column)", tok);
        headers[found] = eq + 1;
        tok = next;
    }
    return 0;
}

static void reader_free(struct reader *r)
{
    free(r->arena);
    free(r->jobs);
    free(r->table);
    free(r->rows);
    free(r->tm);
}

static int bad_field(pflex_error_t *err, const char *file, unsigned line, int col,
                     const struct pflex_csv_field *f, const char *what)
{
    return pflex_error_set(err, "%s:%u: column '%s': '%.*s' %s", file, line, col_name(col),
                           (int)(f->len > 40 ? 40 : f->len), f->s, what);
}

static int sort_group(struct reader *r, pflex_sweep_t *sw, pflex_error_t *err);

int pflex_sweep_read_mem(const char *buf, size_t len, const char *name,
                         const char *columns, pflex_sweep_t **out, pflex_error_t *err)
{
    struct reader r;
    memset(&r, 0, sizeof r);
    r.name = name ? name : "-";
    *out = NULL;
    const char *headers[COL_COUNT];
    char *spec_copy = NULL;
    int idx[COL_COUNT];
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, r.name);
    int rc = -1;

    if (parse_columns(columns, &spec_copy, headers, err) < 0)
        goto done;
    int got = pflex_csv_next(&c, err);
    if (got < 0)
        goto done;
    if (got == 0) {
        pflex_error_set(err, "%s: empty file: no header row", r.name);
        goto done;
    }
    unsigned header_line = c.line;
    for (int k = 0; k < COL_COUNT; k++) {
        idx[k] = -1;
        for (size_t f = 0; f < c.nfields; f++)
            if (pflex_csv_field_is(&c.fields[f], headers[k])) {
                idx[k] = (int)f;
                break;
            }
    }
    for (int k = COL_JOB; k <= COL_TPUT; k++)
        if (idx[k] < 0) {
            if (headers[k] != col_name(k))
                pflex_error_set(err, "%s:%u: missing column '%s' (mapped to header '%s')",
                                r.name, header_line, col_name(k), headers[k]);
            else
                pflex_error_set(err, "%s:%u: missing column '%s' (need job, cap_w, power_w, "
                                "throughput; --columns maps other headers)", r.name, header_line,
                                col_name(k));
            goto done;
        }
    for (int k = COL_TM0; k < COL_COUNT; k++)
        if (idx[k] >= 0)
            r.has_tm = 1;
    size_t need = 0;
    for (int k = 0; k < COL_COUNT; k++)
        if (idx[k] >= 0 && (size_t)idx[k] + 1 > need)
            need = (size_t)idx[k] + 1;

    long last_job = -1;
    while ((got = pflex_csv_next(&c, err)) == 1) {
        unsigned line = c.line;
        if (c.nfields < need) {
            pflex_error_set(err, "%s:%u: %zu fields, the header has %zu", r.name, line,
                            c.nfields, need);
            goto done;
        }
        const struct pflex_csv_field *f = c.fields;
        const struct pflex_csv_field *jf = &f[idx[COL_JOB]];
        if (jf->len == 0) {
            pflex_error_set(err, "%s:%u: column 'job': empty job name", r.name, line);
            goto done;
        }
        long j;
        if (last_job >= 0 && r.jobs[last_job].name_len == jf->len
            && memcmp(r.arena + r.jobs[last_job].name_off, jf->s, jf->len) == 0)
            j = last_job;
        else
            j = job_lookup(&r, jf->s, jf->len, line);
        if (j < 0) {
            pflex_error_set(err, "%s:%u: out of memory", r.name, line);
            goto done;
        }
        if (j != last_job && r.jobs[j].nrows > 0)
            r.scattered = 1;
        last_job = j;
        struct jobmeta *jm = &r.jobs[j];
        double cap, power, tput;
        if (pflex_parse_double(f[idx[COL_CAP]].s, f[idx[COL_CAP]].len, &cap) < 0) {
            bad_field(err, r.name, line, COL_CAP, &f[idx[COL_CAP]], "is not a finite number");
            goto done;
        }
        if (cap <= 0) {
            bad_field(err, r.name, line, COL_CAP, &f[idx[COL_CAP]], "must be positive");
            goto done;
        }
        if (pflex_parse_double(f[idx[COL_POWER]].s, f[idx[COL_POWER]].len, &power) < 0) {
            bad_field(err, r.name, line, COL_POWER, &f[idx[COL_POWER]], "is not a finite number");
            goto done;
        }
        if (power <= 0) {
            bad_field(err, r.name, line, COL_POWER, &f[idx[COL_POWER]],
                      power < 0 ? "is negative" : "must be positive");
            goto done;
        }
        if (pflex_parse_double(f[idx[COL_TPUT]].s, f[idx[COL_TPUT]].len, &tput) < 0) {
            bad_field(err, r.name, line, COL_TPUT, &f[idx[COL_TPUT]], "is not a finite number");
            goto done;
        }
        if (tput < 0) {
            bad_field(err, r.name, line, COL_TPUT, &f[idx[COL_TPUT]], "is negative");
            goto done;
        }
        if (idx[COL_GPUS] >= 0 && f[idx[COL_GPUS]].len) {
            double g;
            const struct pflex_csv_field *gf = &f[idx[COL_GPUS]];
            if (pflex_parse_double(gf->s, gf->len, &g) < 0 || g < 1 || g > 1e8 || g != floor(g)) {
                bad_field(err, r.name, line, COL_GPUS, gf, "is not a positive whole number");
                goto done;
            }
            if (jm->gpus && jm->gpus != (int)g) {
                pflex_error_set(err, "%s:%u: column 'gpus': job '%s' had %d GPUs on line %u, "
                                "now %d", r.name, line, r.arena + jm->name_off, jm->gpus,
                                jm->line, (int)g);
                goto done;
            }
            jm->gpus = (int)g;
        }
        if (idx[COL_GPU] >= 0 && f[idx[COL_GPU]].len && !jm->gpu_len) {
            if (arena_add(&r, f[idx[COL_GPU]].s, f[idx[COL_GPU]].len, &jm->gpu_off) < 0) {
                pflex_error_set(err, "%s:%u: out of memory", r.name, line);
                goto done;
            }
            jm->gpu_len = f[idx[COL_GPU]].len;
        }
        if (idx[COL_FLOOR] >= 0 && f[idx[COL_FLOOR]].len) {
            double fl;
            const struct pflex_csv_field *ff = &f[idx[COL_FLOOR]];
            if (pflex_parse_double(ff->s, ff->len, &fl) < 0 || fl < 0 || fl > 1) {
                bad_field(err, r.name, line, COL_FLOOR, ff, "is not a fraction between 0 and 1");
                goto done;
            }
            jm->floor = fl;
            jm->has_floor = 1;
        }
        if (idx[COL_TIER] >= 0 && f[idx[COL_TIER]].len) {
            const struct pflex_csv_field *tf = &f[idx[COL_TIER]];
            char tb[32];
            double fl;
            size_t n = tf->len < sizeof tb - 1 ? tf->len : sizeof tb - 1;
            memcpy(tb, tf->s, n);
            tb[n] = 0;
            if (tf->len >= sizeof tb || pflex_tier_floor(tb, &fl) < 0) {
                bad_field(err, r.name, line, COL_TIER, tf, "is not a tier (flex0, flex1, flex2, flex3)");
                goto done;
            }
            if (!(idx[COL_FLOOR] >= 0 && f[idx[COL_FLOOR]].len)) {
                jm->floor = fl;
                jm->has_floor = 1;
            }
        }
        if (idx[COL_WEIGHT] >= 0 && f[idx[COL_WEIGHT]].len) {
            double w;
            const struct pflex_csv_field *wf = &f[idx[COL_WEIGHT]];
            if (pflex_parse_double(wf->s, wf->len, &w) < 0 || w < 0) {
                bad_field(err, r.name, line, COL_WEIGHT, wf, "is not a non-negative number");
                goto done;
            }
            jm->weight = w;
            jm->has_weight = 1;
        }
        if (grow((void **)&r.rows, &r.rows_cap, r.nrows + 1, sizeof *r.rows) < 0) {
            pflex_error_set(err, "%s:%u: out of memory", r.name, line);
            goto done;
        }
        if (r.has_tm && r.tm_cap < r.rows_cap) {
            double *ntm = realloc(r.tm, r.rows_cap * PFLEX_TM_COUNT * sizeof *ntm);
            if (!ntm) {
                pflex_error_set(err, "%s:%u: out of memory", r.name, line);
                goto done;
            }
            r.tm = ntm;
            r.tm_cap = r.rows_cap;
        }
        if (r.has_tm) {
            size_t cur = r.nrows * PFLEX_TM_COUNT;
            double *t = r.tm + cur;
            for (int k = 0; k < PFLEX_TM_COUNT; k++) {
                int fi = idx[COL_TM0 + k];
                t[k] = NAN;
                if (fi < 0 || f[fi].len == 0)
                    continue;
                if (pflex_parse_double(f[fi].s, f[fi].len, &t[k]) < 0) {
                    bad_field(err, r.name, line, COL_TM0 + k, &f[fi], "is not a finite number");
                    goto done;
                }
            }
        }
        struct row *rw = &r.rows[r.nrows++];
        rw->job = (uint32_t)j;
        rw->line = line;
        rw->cap = cap;
        rw->power = power;
        rw->tput = tput;
        jm->nrows++;
    }
    if (got < 0)
        goto done;
    if (r.nrows == 0) {
        pflex_error_set(err, "%s:%u: no data rows after the header", r.name, header_line);
        goto done;
    }
    pflex_sweep_t *sw = calloc(1, sizeof *sw);
    if (!sw) {
        pflex_error_set(err, "%s: out of memory", r.name);
        goto done;
    }
    if (sort_group(&r, sw, err) < 0) {
        pflex_sweep_destroy(sw);
        goto done;
    }
    *out = sw;
    rc = 0;
done:
    pflex_csv_fini(&c);
    free(spec_copy);
    reader_free(&r);
    return rc;
}

/* Group rows by job (counting sort, stable), order each job's rows by cap
 * and average rows at the same cap. */
static int group_in_place(struct reader *r, pflex_sweep_t *sw, pflex_error_t *err);

static int sort_group(struct reader *r, pflex_sweep_t *sw, pflex_error_t *err)
{
    if (!r->scattered && !r->has_tm)
        return group_in_place(r, sw, err);
    struct store *st = calloc(1, sizeof *st);
    size_t *start = calloc(r->njobs + 1, sizeof *start);
    uint32_t *order = malloc(r->nrows * sizeof *order);
    int rc = -1;
    sw->priv = st;
    sw->jobs = calloc(r->njobs, sizeof *sw->jobs);
    if (st) {
        st->points = malloc(r->nrows * sizeof *st->points);
        if (r->has_tm)
            st->telemetry = malloc(r->nrows * PFLEX_TM_COUNT * sizeof *st->telemetry);
    }
    if (!st || !start || !order || !sw->jobs || !st->points || (r->has_tm && !st->telemetry)) {
        pflex_error_set(err, "%s: out of memory", r->name);
        goto out;
    }
    for (size_t j = 0; j < r->njobs; j++)
        start[j + 1] = start[j] + r->jobs[j].nrows;
    {
        size_t *fill = malloc(r->njobs * sizeof *fill);
        if (!fill) {
            pflex_error_set(err, "%s: out of memory", r->name);
            goto out;
        }
        memcpy(fill, start, r->njobs * sizeof *fill);
        for (size_t i = 0; i < r->nrows; i++)
            order[fill[r->rows[i].job]++] = (uint32_t)i;
        free(fill);
    }
    st->names = r->arena;
    r->arena = NULL;
    sw->njobs = r->njobs;
    sw->has_telemetry = r->has_tm;
    size_t np = 0;
    for (size_t j = 0; j < r->njobs; j++) {
        struct jobmeta *jm = &r->jobs[j];
        uint32_t *o = order + start[j];
        size_t n = jm->nrows;
        /* Insertion sort by cap: stable, linear on sorted input. */
        for (size_t a = 1; a < n; a++) {
            uint32_t v = o[a];
            double cv = r->rows[v].cap;
            size_t b = a;
            while (b > 0 && r->rows[o[b - 1]].cap > cv) {
                o[b] = o[b - 1];
                b--;
            }
            o[b] = v;
        }
        struct pflex_sweep_job *job = &sw->jobs[j];
        job->name = st->names + jm->name_off;
        job->gpu = jm->gpu_len ? st->names + jm->gpu_off : NULL;
        job->gpus = jm->gpus ? jm->gpus : 1;
        job->floor = jm->has_floor ? jm->floor : NAN;
        job->weight = jm->weight;
        job->line = jm->line;
        job->points = st->points + np;
        job->telemetry = r->has_tm ? st->telemetry + np * PFLEX_TM_COUNT : NULL;
        size_t a = 0;
        while (a < n) {
            size_t b = a;
            double cap = r->rows[o[a]].cap, ps = 0, ts = 0;
            while (b < n && r->rows[o[b]].cap == cap) {
                ps += r->rows[o[b]].power;
                ts += r->rows[o[b]].tput;
                b++;
            }
            struct pflex_sweep_point *pt = &st->points[np];
            pt->cap_w = cap;
            pt->power_w = ps / (double)(b - a);
            pt->throughput = ts / (double)(b - a);
            pt->rows = (unsigned)(b - a);
            pt->line = r->rows[o[a]].line;
            if (r->has_tm) {
                double *t = st->telemetry + np * PFLEX_TM_COUNT;
                for (int k = 0; k < PFLEX_TM_COUNT; k++) {
                    double sum = 0;
                    unsigned cnt = 0;
                    for (size_t q = a; q < b; q++) {
                        double v = r->tm[(size_t)o[q] * PFLEX_TM_COUNT + k];
                        if (!isnan(v))
                            sum += v, cnt++;
                    }
                    t[k] = cnt ? sum / cnt : NAN;
                }
            }
            np++;
            a = b;
        }
        job->npoints = (size_t)((st->points + np) - job->points);
        if (job->npoints < 2) {
            pflex_error_set(err, "%s:%u: job '%s' is measured at only one cap (%g W); "
                            "a sweep needs at least two", r->name, jm->line, job->name,
                            job->points[0].cap_w);
            goto out;
        }
    }
    rc = 0;
out:
    free(start);
    free(order);
    return rc;
}

/* The common case, every job's rows together and no telemetry: the rows
 * are already grouped, so each job's rows are ordered by cap where they lie
 * and averaged into points written over the same storage (a point is never
 * written ahead of the rows still to be read: each takes at least one).
 * This saves the order and points arrays: on a million-job sweep, a third
 * of the memory and of the page faults. */
static int group_in_place(struct reader *r, pflex_sweep_t *sw, pflex_error_t *err)
{
    _Static_assert(sizeof(struct row) >= sizeof(struct pflex_sweep_point),
                   "points are written over rows");
    struct store *st = calloc(1, sizeof *st);
    sw->priv = st;
    sw->jobs = calloc(r->njobs ? r->njobs : 1, sizeof *sw->jobs);
    if (!st || !sw->jobs)
        return pflex_error_set(err, "%s: out of memory", r->name);
    st->names = r->arena;
    r->arena = NULL;
    sw->njobs = r->njobs;
    sw->has_telemetry = 0;
    unsigned char *base = (unsigned char *)r->rows;
    size_t np = 0, first = 0;
    for (size_t j = 0; j < r->njobs; j++) {
        struct jobmeta *jm = &r->jobs[j];
        struct row *o = r->rows + first;
        size_t n = jm->nrows;
        first += n;
        /* Insertion sort by cap: stable, linear on sorted input. */
        for (size_t a = 1; a < n; a++) {
            struct row v = o[a];
            size_t b = a;
            while (b > 0 && o[b - 1].cap > v.cap) {
                o[b] = o[b - 1];
                b--;
            }
            o[b] = v;
        }
        struct pflex_sweep_job *job = &sw->jobs[j];
        job->name = st->names + jm->name_off;
        job->gpu = jm->gpu_len ? st->names + jm->gpu_off : NULL;
        job->gpus = jm->gpus ? jm->gpus : 1;
        job->floor = jm->has_floor ? jm->floor : NAN;
        job->weight = jm->weight;
        job->line = jm->line;
        job->telemetry = NULL;
        size_t np0 = np, a = 0;
        while (a < n) {
            size_t b = a;
            double cap = o[a].cap, ps = 0, ts = 0;
            unsigned line = o[a].line;
            while (b < n && o[b].cap == cap) {
                ps += o[b].power;
                ts += o[b].tput;
                b++;
            }
            struct pflex_sweep_point pt = {
                .cap_w = cap, .power_w = ps / (double)(b - a), .throughput = ts / (double)(b - a),
                .rows = (unsigned)(b - a), .line = line,
            };
            memcpy(base + np * sizeof pt, &pt, sizeof pt);
            np++;
            a = b;
        }
        job->npoints = np - np0;
        if (job->npoints < 2) {
            struct pflex_sweep_point pt;
            memcpy(&pt, base + np0 * sizeof pt, sizeof pt);
            return pflex_error_set(err, "%s:%u: job '%s' is measured at only one cap (%g W); "
                                   "a sweep needs at least two", r->name, jm->line, job->name,
                                   pt.cap_w);
        }
        /* set once every point is written: the pointer is into the same block */
        job->points = (struct pflex_sweep_point *)(void *)(base + np0 * sizeof(struct pflex_sweep_point));
    }
    st->points = (struct pflex_sweep_point *)(void *)base;
    r->rows = NULL;
    return 0;
}

void pflex_sweep_destroy(pflex_sweep_t *s)
{
    if (!s)
        return;
    struct store *st = s->priv;
    if (st) {
        free(st->names);
        free(st->points);
        free(st->telemetry);
        free(st);
    }
    free(s->jobs);
    free(s);
}

int pflex_read_all(const char *path, char **buf, size_t *len, pflex_error_t *err)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return pflex_error_set(err, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *b = NULL;
    if (f != stdin && fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz > 0)
            cap = (size_t)sz + 1;
        rewind(f);
    }
    b = malloc(cap);
    if (!b) {
        if (f != stdin)
            fclose(f);
        return pflex_error_set(err, "%s: out of memory", path);
    }
    for (;;) {
        if (n == cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                if (f != stdin)
                    fclose(f);
                return pflex_error_set(err, "%s: out of memory", path);
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    if (f != stdin)
        fclose(f);
    if (bad) {
        free(b);
        return pflex_error_set(err, "%s: read error", path);
    }
    *buf = b;
    *len = n;
    return 0;
}

/* A regular file is mapped rather than read: the kernel's page cache is
 * then the buffer, and a large sweep costs no copy and no fresh memory
 * (on virtual machines, first-touch page faults dominate reading). */
static int read_mapped(const char *path, const char *columns, pflex_sweep_t **out,
                       pflex_error_t *err, int *mapped)
{
    *mapped = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        close(fd);
        return 0;
    }
    int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
    flags |= MAP_POPULATE;
#endif
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, flags, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 0;
    *mapped = 1;
    int rc = pflex_sweep_read_mem(m, (size_t)st.st_size, path, columns, out, err);
    munmap(m, (size_t)st.st_size);
    return rc;
}

int pflex_sweep_read_file(const char *path, const char *columns, pflex_sweep_t **out,
                          pflex_error_t *err)
{
    char *buf;
    size_t len;
    int mapped;
    if (strcmp(path, "-") != 0) {
        int rc = read_mapped(path, columns, out, err, &mapped);
        if (mapped)
            return rc;
    }
    if (pflex_read_all(path, &buf, &len, err) < 0)
        return -1;
    int rc = pflex_sweep_read_mem(buf, len, strcmp(path, "-") == 0 ? "<stdin>" : path,
                                  columns, out, err);
    free(buf);
    return rc;
}
