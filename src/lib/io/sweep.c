/* sweep.c — reading the sweep CSV of docs/contract.md §3.
 *
 * The text is read piece by piece (a small file is mapped); of a plain data
 * row only the fields the reader needs are split, where they lie, in the
 * pass that finds the line's end (a row within 64 bytes has its delimiters
 * found at once), and its short plain numbers are read in that pass, as
 * pflex_parse_double would read them; other lines go to the general
 * tokenizer.
 * A first pass assumes what every file we write does, that each job's rows
 * stand together: each job's rows are ordered by cap (reversed when they
 * fall, else a stable merge sort: linear on sorted input, O(n log n) in any
 * order) and averaged as soon as they end, and no row is kept; when jobs are handed over one by one
 * (pflex_sweep_read_file_each) only the current job's name is kept.  If
 * two jobs turn out to share a name (their name hashes, sorted once at the
 * end), or the first pass cannot tell because of telemetry columns, the
 * rows are collected, looked up by name in an open-addressing hash table,
 * grouped by a counting sort in O(rows) and averaged the same way.  Both
 * give the same sweep bit for bit and the same errors. */
#include <ctype.h>
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
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "pflex/io/csv.h"
#include "pflex/io/sweep.h"
#include "lib/io/csv_scan.h"
#include "lib/util/bigmem.h"
#include "lib/util/decimal.h"
#include "lib/util/grow.h"
#include "lib/util/hash.h"

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

/* A job's name and row count: what finding it and telling whether its rows
 * stand together need, kept for every job. */
struct jobkey {
    size_t name_off, name_len;
    size_t nrows;
};

/* The rest of what is known about a job.  When each job is handed over as
 * its rows end, only the current job's is kept (one slot). */
struct jobmeta {
    size_t gpu_off, gpu_len;    /* gpu_len 0: none */
    int gpus;                   /* 0: unset */
    double floor, weight;
    int has_floor, has_weight;
    unsigned line;
    size_t npoints;             /* grouped while reading: its points */
};

struct store {
    char *warnings;             /* pflex_sweep_t.warnings */
    struct pflex_big names;     /* arena of job and gpu names, NUL-separated */
    struct pflex_big points;    /* struct pflex_sweep_point */
    struct pflex_big jobs;      /* struct pflex_sweep_job */
    double *telemetry;
};

/* The numbers a data row's fields may be read as while it is split. */
enum { NUM_CAP, NUM_POWER, NUM_TPUT, NUM_GPUS, NUM_COUNT };
enum { ROLES = 32 };            /* fields past this many are only split */

/* Where the text comes from: a whole buffer, or a regular file read piece
 * by piece into one reused buffer (the page cache copy is cheap; fresh
 * memory is not).  Records are split on the spot when plain, else by the
 * general tokenizer; either way into tok. */
struct src {
    int fd;                     /* -1: the whole input is [buf, buf + len) */
    const char *path;           /* for read errors */
    const char *buf;
    size_t pos, len;            /* unread text: [buf + pos, buf + len) */
    int eof;                    /* nothing more to read after len */
    int started;                /* the byte-order mark has been looked at */
    unsigned line;              /* line number at buf + pos */
    struct pflex_big chunk;     /* fd: the read buffer */
    size_t chunk0;              /* its first size */
    size_t need;                /* fields a data row needs (0: header not read) */
    /* The numbers of a plain row, read in the pass that splits it: field k
     * (k < ROLES) holds number role[k] - 1 when role[k] is set; bit n of
     * numok says num[n] is what pflex_parse_double gives for that field's
     * text (0 after a record from the general path: parse those fields). */
    unsigned char role[ROLES];
    int num_field[NUM_COUNT];   /* the field number n is read from, or -1 */
    unsigned numok;
    double num[NUM_COUNT];
    pflex_csv_t tok;
};

struct reader {
    const char *name;
    struct pflex_big arena;
    size_t arena_len;
    struct pflex_big keys;      /* struct jobkey, one per job */
    struct pflex_big jobs;      /* struct jobmeta, one per job or one slot */
    int slot;                   /* jobs is one slot: the current job's */
    size_t njobs;
    uint64_t *table;            /* hash slots: top 32 hash bits << 32 | job index + 1;
                                 * 0 empty.  The tag spares a visit to the job
                                 * (a cache miss) on most mismatches. */
    struct pflex_big table_mem;
    size_t table_cap;
    struct pflex_big hashes;    /* grouped: each job's name hash, for has_dup */
    struct pflex_big rows;      /* general grouping: every row */
    size_t nrows;
    double *tm;                 /* nrows x PFLEX_TM_COUNT when has_tm */
    size_t tm_cap;              /* rows tm has room for */
    int has_tm;
    int grouped;                /* averaging each job as its rows end */
    struct row *cur;            /* grouped: the current job's rows */
    size_t ncur, cur_cap;
    struct row *cur_tmp;        /* grouped: merge scratch, cur_cap rows */
    size_t cur_tmp_cap;
    struct pflex_big points;    /* grouped: struct pflex_sweep_point */
    size_t npoints;
    long one_cap;               /* grouped: first job with one cap, or -1 */
    pflex_error_t one_cap_err;  /* its error, reported once every row is read */
    int keep_bad;               /* PFLEX_SWEEP_KEEP_BAD: bad values NaN, one cap kept */
    /* parse's state between its stages: the header's columns, the last
     * job and its metadata, the header's warnings */
    const char *headers[COL_COUNT];
    int idx[COL_COUNT];
    unsigned header_line;
    int more_cols;
    long last_job;
    struct jobmeta *jm;
    char *warn;
    const struct pflex_sweep_visitor *v;    /* jobs handed over, not kept */
    struct pflex_sweep_point *vpts;         /* v: the points of the job handed */
    size_t vpts_cap;
    pflex_error_t *err;
};

#define KEYS(r) ((struct jobkey *)(r)->keys.p)
/* Job j's key: in the one-slot mode only the current job's is kept. */
#define KEY(r, j) ((struct jobkey *)(r)->keys.p + ((r)->slot ? 0 : (j)))
#define META(r, j) ((struct jobmeta *)(r)->jobs.p + ((r)->slot ? 0 : (j)))
#define ARENA(r) ((char *)(r)->arena.p)

const double pflex_tier_floors[4] = {1.0, 0.90, 0.75, 0.50};

int pflex_tier_floor(const char *tier, double *floor)
{
    const char *p = tier;
    while (*p == ' ')
        p++;
    if (strncasecmp(p, "flex", 4) == 0)
        p += 4;
    while (*p == ' ' || *p == '_' || *p == '-')
        p++;
    if (p[0] >= '0' && p[0] <= '3' && (p[1] == 0 || p[1] == ' ')) {
        *floor = pflex_tier_floors[p[0] - '0'];
        return 0;
    }
    return -1;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    return pflex_hash_bytes(0, s, n);
}

/* memcmp(a, b, n) == 0 for the short names a row is checked against: a
 * call to memcmp a row costs more than the compare.  Up to 16 bytes, the
 * first and the last 8 (or 4, or the first, middle and last byte) are
 * compared, overlapping: no byte loop, nothing read past either name. */
static inline int same_bytes(const char *a, const char *b, size_t n)
{
    if (n <= 16) {
        if (n >= 8) {
            uint64_t x0, y0, x1, y1;
            memcpy(&x0, a, 8);
            memcpy(&y0, b, 8);
            memcpy(&x1, a + n - 8, 8);
            memcpy(&y1, b + n - 8, 8);
            return ((x0 ^ y0) | (x1 ^ y1)) == 0;
        }
        if (n >= 4) {
            uint32_t x0, y0, x1, y1;
            memcpy(&x0, a, 4);
            memcpy(&y0, b, 4);
            memcpy(&x1, a + n - 4, 4);
            memcpy(&y1, b + n - 4, 4);
            return ((x0 ^ y0) | (x1 ^ y1)) == 0;
        }
        return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
    }
    while (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y)
            return 0;
        a += 8, b += 8, n -= 8;
    }
    while (n && *a == *b)
        a++, b++, n--;
    return n == 0;
}

static int arena_add(struct reader *r, const char *s, size_t n, size_t *off)
{
    if (pflex_big_reserve(&r->arena, r->arena_len + n + 1) < 0)
        return -1;
    memcpy(ARENA(r) + r->arena_len, s, n);
    ARENA(r)[r->arena_len + n] = 0;
    *off = r->arena_len;
    r->arena_len += n + 1;
    return 0;
}

static int table_rehash(struct reader *r)
{
    size_t ncap = r->table_cap ? r->table_cap * 2 : 1024;
    struct pflex_big nb = {0};
    if (pflex_big_reserve(&nb, ncap * sizeof(uint64_t)) < 0)
        return -1;
    uint64_t *nt = nb.p;
    memset(nt, 0, ncap * sizeof *nt);
    for (size_t j = 0; j < r->njobs; j++) {
        uint64_t h = hash_bytes(ARENA(r) + KEYS(r)[j].name_off, KEYS(r)[j].name_len);
        size_t i = h & (ncap - 1);
        while (nt[i])
            i = (i + 1) & (ncap - 1);
        nt[i] = (h >> 32 << 32) | (uint64_t)(j + 1);
    }
    pflex_big_free(&r->table_mem);
    r->table_mem = nb;
    r->table = nt;
    r->table_cap = ncap;
    return 0;
}

/* Index of the job named s, created if new (its meta is set by
 * meta_init); -1 when out of memory. */
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
            const struct jobkey *j = &KEYS(r)[k];
            if (j->name_len == n && memcmp(ARENA(r) + j->name_off, s, n) == 0)
                return k;
        }
        i = (i + 1) & (r->table_cap - 1);
    }
    if (pflex_big_reserve(&r->keys, (r->njobs + 1) * sizeof(struct jobkey)) < 0
        || pflex_big_reserve(&r->jobs, (r->slot ? 1 : r->njobs + 1) * sizeof(struct jobmeta)) < 0)
        return -1;
    struct jobkey *j = &KEYS(r)[r->njobs];
    if (arena_add(r, s, n, &j->name_off) < 0)
        return -1;
    j->name_len = n;
    j->nrows = 0;
    r->table[i] = tag | (uint64_t)(r->njobs + 1);
    return (long)r->njobs++;
}

/* A new job named s, for the grouped pass: no table is probed (a probe a
 * job is a cache miss a job); its name's hash is kept for has_dup. */
static long job_append(struct reader *r, const char *s, size_t n)
{
    if (pflex_big_reserve(&r->keys, (r->slot ? 1 : r->njobs + 1) * sizeof(struct jobkey)) < 0
        || pflex_big_reserve(&r->hashes, (r->njobs + 1) * sizeof(uint64_t)) < 0
        || pflex_big_reserve(&r->jobs, (r->slot ? 1 : r->njobs + 1) * sizeof(struct jobmeta)) < 0)
        return -1;
    struct jobkey *j = KEY(r, r->njobs);
    if (arena_add(r, s, n, &j->name_off) < 0)
        return -1;
    j->name_len = n;
    j->nrows = 0;
    ((uint64_t *)r->hashes.p)[r->njobs] = hash_bytes(s, n);
    return (long)r->njobs++;
}

/* True when h[0..n) holds a value twice; the values are left sorted
 * (unless one is found twice: then the order is partly sorted).  Below the
 * bits above shift (all equal in h), sorted by the next 8 bits in place
 * (each value put straight into its bucket, displacing one that goes to
 * its own), each bucket then the same way: with 256 buckets the lines
 * written to stay in the cache, and a bucket of a large h soon fits in
 * it.  A small bucket is sorted by insertion. */
static int dup_radix(uint64_t *h, size_t n, int shift)
{
    if (n < 2)
        return 0;
    if (n <= 32 || shift < 0) {
        for (size_t x = 1; x < n; x++) {
            uint64_t v = h[x];
            size_t y = x;
            while (y > 0 && h[y - 1] > v) {
                h[y] = h[y - 1];
                y--;
            }
            h[y] = v;
        }
        for (size_t x = 1; x < n; x++)
            if (h[x] == h[x - 1])
                return 1;
        return 0;
    }
    size_t next[256] = {0}, end[256];
    for (size_t i = 0; i < n; i++)
        next[(h[i] >> shift) & 255]++;
    size_t sum = 0;
    for (unsigned k = 0; k < 256; k++) {
        size_t c = next[k];
        next[k] = sum;
        sum += c;
        end[k] = sum;
    }
    for (unsigned k = 0; k < 256; k++)
        while (next[k] < end[k]) {
            uint64_t v = h[next[k]];
            unsigned t;
            while ((t = (unsigned)(v >> shift) & 255) != k) {   /* v to its bucket, */
                uint64_t x = h[next[t]];                        /* the one there to v */
                h[next[t]++] = v;
                v = x;
            }
            h[next[k]++] = v;
        }
    for (unsigned k = 0; k < 256; k++) {
        size_t b = k ? end[k - 1] : 0;
        if (dup_radix(h + b, end[k] - b, shift - 8))
            return 1;
    }
    return 0;
}

/* True when two of the grouped pass's jobs may share a name (equal name
 * hashes): the pass then stands for nothing and the general one decides.
 * The hashes are sorted where they lie (dup_radix): sequential work, where
 * a table probe a job would miss the cache each time.  Calling again gives
 * the same. */
static int has_dup(struct reader *r)
{
    return dup_radix(r->hashes.p, r->njobs, 56);
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
        return pflex_error_sys(err, "out of memory");
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
    pflex_big_free(&r->arena);
    pflex_big_free(&r->keys);
    pflex_big_free(&r->jobs);
    pflex_big_free(&r->table_mem);
    pflex_big_free(&r->hashes);
    pflex_big_free(&r->rows);
    pflex_big_free(&r->points);
    free(r->vpts);
    free(r->tm);
    free(r->cur);
    free(r->cur_tmp);
}

static int bad_field(pflex_error_t *err, const char *file, unsigned line, int col,
                     const struct pflex_csv_field *f, const char *what)
{
    return pflex_error_set(err, "%s:%u: column '%s': '%.*s' %s", file, line, col_name(col),
                           (int)(f->len > 40 ? 40 : f->len), f->s, what);
}

static int sort_group(struct reader *r, pflex_sweep_t *sw, pflex_error_t *err);
static int grouped_finish(struct reader *r, pflex_sweep_t *sw, pflex_error_t *err);

static int flush_job(struct reader *r, long j);
static int one_cap_error(const struct reader *r, const char *job, unsigned line, double cap,
                         pflex_error_t *err);
static void job_out(const struct jobkey *jk, const struct jobmeta *jm, const char *names,
                    struct pflex_sweep_job *job);
static int next_record(struct src *s, pflex_error_t *err);

/* The column k the header field f may have meant: one the header lacks,
 * within one edit (names of up to 4 bytes) or two; -1 when none is. */
static int near_column(const struct pflex_csv_field *f, const char *const headers[COL_COUNT],
                       const int idx[COL_COUNT])
{
    int best = -1;
    unsigned bd = 99;
    for (int k = 0; k < COL_COUNT; k++) {
        if (idx[k] >= 0)
            continue;
        size_t n = strlen(headers[k]);
        unsigned d = pflex_csv_name_distance(f->s, f->len, headers[k], n);
        unsigned limit = (n <= 4 || f->len <= 4) ? 1 : 2;
        /* a tie goes to the name of the same length ("gpsu": gpus, not gpu) */
        if (d <= limit && (d < bd || (d == bd && n == f->len)))
            bd = d, best = k;
    }
    return best;
}

/* The header row's checks: a column the reader uses given twice, a file
 * of one field that is split by another separator, a required column
 * missing (with the header that may have meant it); and the warnings of
 * fields that are no column but lie close to one the header lacks.
 * Returns 0 (with *warn malloc'd or NULL) or -1 with err set. */
static int check_header(const pflex_csv_t *c, const char *name, unsigned line,
                        const char *const headers[COL_COUNT], const int idx[COL_COUNT],
                        char **warn, pflex_error_t *err)
{
    *warn = NULL;
    for (int k = 0; k < COL_COUNT; k++) {
        if (idx[k] < 0)
            continue;
        for (size_t f = (size_t)idx[k] + 1; f < c->nfields; f++)
            if (pflex_csv_field_is(&c->fields[f], headers[k]))
                return pflex_error_set(err, "%s:%u: column '%s' appears twice in the header "
                                       "(fields %d and %zu)", name, line, headers[k],
                                       idx[k] + 1, f + 1);
    }
    for (int k = COL_JOB; k <= COL_TPUT; k++) {
        if (idx[k] >= 0)
            continue;
        const struct pflex_csv_field *f0 = &c->fields[0];
        if (c->nfields == 1 && (memchr(f0->s, ';', f0->len) || memchr(f0->s, '\t', f0->len))) {
            char sep = memchr(f0->s, ';', f0->len) ? ';' : '\t';
            return pflex_error_set(err, "%s:%u: found one column '%.*s%s': is the separator "
                                   "'%s'? (a sweep CSV is comma-separated)", name, line,
                                   (int)(f0->len > 40 ? 40 : f0->len), f0->s,
                                   f0->len > 40 ? "..." : "", sep == ';' ? ";" : "\\t");
        }
        for (size_t f = 0; f < c->nfields; f++) {
            int m = near_column(&c->fields[f], headers, idx);
            if (m == k)
                return pflex_error_set(err, "%s:%u: missing column '%s' (the header has '%.*s': "
                                       "did you mean '%s'? --columns maps other headers)", name,
                                       line, headers[k], (int)(c->fields[f].len > 40 ? 40
                                       : c->fields[f].len), c->fields[f].s, headers[k]);
        }
        if (headers[k] != col_name(k))
            return pflex_error_set(err, "%s:%u: missing column '%s' (mapped to header '%s')",
                                   name, line, col_name(k), headers[k]);
        return pflex_error_set(err, "%s:%u: missing column '%s' (need job, cap_w, power_w, "
                               "throughput; --columns maps other headers)", name, line,
                               col_name(k));
    }
    size_t len = 0, cap = 0;
    char *w = NULL;
    for (size_t f = 0; f < c->nfields; f++) {
        int used = 0;
        for (int k = 0; k < COL_COUNT && !used; k++)
            used = idx[k] == (int)f;
        if (used || c->fields[f].len == 0)
            continue;
        int m = near_column(&c->fields[f], headers, idx);
        if (m < 0)
            continue;
        char one[320];
        int n = snprintf(one, sizeof one, "%s:%u: column '%.*s' is not a sweep column and is "
                         "ignored: did you mean '%s'?\n", name, line,
                         (int)(c->fields[f].len > 40 ? 40 : c->fields[f].len), c->fields[f].s,
                         headers[m]);
        if (n < 0)
            continue;
        if (pflex_grow((void **)&w, &cap, len + (size_t)n + 1, 1)) {
            free(w);
            return pflex_error_sys(err, "%s: out of memory", name);
        }
        memcpy(w + len, one, (size_t)n + 1);
        len += (size_t)n;
    }
    *warn = w;
    return 0;
}

/* The header row: the columns' indexes, the fields a row needs, the
 * numbers read while splitting, the mode (grouped or not).  0, or -1 with
 * err set. */
static int parse_header(struct reader *r, struct src *s, int try_grouped)
{
    pflex_csv_t *c = &s->tok;
    int got = next_record(s, r->err);
    if (got < 0)
        return -1;
    if (got == 0)
        return pflex_error_set(r->err, "%s: empty file: no header row", r->name);
    r->header_line = c->line;
    int *idx = r->idx;
    for (int k = 0; k < COL_COUNT; k++) {
        idx[k] = -1;
        for (size_t f = 0; f < c->nfields; f++)
            if (pflex_csv_field_is(&c->fields[f], r->headers[k])) {
                idx[k] = (int)f;
                break;
            }
    }
    if (check_header(c, r->name, r->header_line, r->headers, idx, &r->warn, r->err) < 0)
        return -1;
    if (r->warn && r->v && r->v->warn && try_grouped)
        r->v->warn(r->v->ctx, r->warn);  /* once: the first pass reads every header */
    for (int k = COL_TM0; k < COL_COUNT; k++)
        if (idx[k] >= 0)
            r->has_tm = 1;
    r->grouped = try_grouped && !r->has_tm;
    r->slot = r->grouped && r->v;    /* each job is handed over as its rows end */
    size_t need = 0;
    for (int k = 0; k < COL_COUNT; k++)
        if (idx[k] >= 0 && (size_t)idx[k] + 1 > need)
            need = (size_t)idx[k] + 1;
    s->need = need;
    memset(s->role, 0, sizeof s->role);
    static const int num_col[NUM_COUNT] = {COL_CAP, COL_POWER, COL_TPUT, COL_GPUS};
    for (int n = 0; n < NUM_COUNT; n++) {
        s->num_field[n] = idx[num_col[n]];
        if (idx[num_col[n]] >= 0 && idx[num_col[n]] < ROLES)
            s->role[idx[num_col[n]]] = (unsigned char)(n + 1);
    }
    r->last_job = -1;
    r->more_cols = idx[COL_GPU] >= 0 || idx[COL_FLOOR] >= 0 || idx[COL_TIER] >= 0
                   || idx[COL_WEIGHT] >= 0;
    r->jm = NULL;
    return 0;
}

/* The row's job: the last one again, else a new one (grouped: the last
 * one's rows have ended and it is flushed) or one found by name; its
 * metadata set on its first row.  The job's index, or -1 with err set. */
static long row_job(struct reader *r, const pflex_csv_t *c)
{
    unsigned line = c->line;
    const struct pflex_csv_field *jf = &c->fields[r->idx[COL_JOB]];
    if (jf->len == 0)
        return pflex_error_set(r->err, "%s:%u: column 'job': empty job name", r->name, line);
    long j, last_job = r->last_job;
    int fresh = 0;          /* the job's first row */
    if (last_job >= 0 && KEY(r, last_job)->name_len == jf->len
        && same_bytes(ARENA(r) + KEY(r, last_job)->name_off, jf->s, jf->len)) {
        j = last_job;
    } else if (r->grouped) {
        /* The last job's rows have ended (a job seen before is caught
         * by has_dup at the end); in the one-slot mode its key, meta
         * and names are reused by the new job once it is handed over. */
        if (last_job >= 0) {
            int fr = flush_job(r, last_job);
            if (fr == -1)
                pflex_error_sys(r->err, "%s:%u: out of memory", r->name, line);
            if (fr < 0)
                return -1;
        }
        j = job_append(r, jf->s, jf->len);
    } else {
        j = job_lookup(r, jf->s, jf->len, line);
    }
    if (j != last_job) {    /* (j < 0 too) */
        if (j < 0)
            return pflex_error_sys(r->err, "%s:%u: out of memory", r->name, line);
        fresh = KEY(r, j)->nrows == 0;
        r->jm = META(r, j);     /* where it stays while the job's rows go on */
    }
    r->last_job = j;
    if (fresh) {            /* after the last job's flush: it may share the slot */
        size_t at;
        const char *why = pflex_name_problem(jf->s, jf->len, &at);
        if (why)
            return pflex_error_set(r->err, "%s:%u: column 'job': the job name %s (byte %zu of "
                                   "%zu); names are UTF-8 text", r->name, line, why, at + 1,
                                   jf->len);
        memset(r->jm, 0, sizeof *r->jm);
        r->jm->line = line;
        r->jm->weight = 1.0;
    }
    return j;
}

/* The row's cap, power, throughput and GPU count of job j.  A number read
 * while the row was split is what pflex_parse_double gives: the same
 * checks follow.  0, or -1 with err set. */
static int row_numbers(struct reader *r, const struct src *s, long j, struct row *out)
{
    const pflex_csv_t *c = &s->tok;
    const struct pflex_csv_field *f = c->fields;
    const int *idx = r->idx;
    unsigned line = c->line;
    pflex_error_t *err = r->err;
    struct jobmeta *jm = r->jm;
    double cap = s->num[NUM_CAP], power = s->num[NUM_POWER], tput = s->num[NUM_TPUT];
    unsigned numok = s->numok;
    if (!(numok & 1u << NUM_CAP)
        && pflex_parse_double(f[idx[COL_CAP]].s, f[idx[COL_CAP]].len, &cap) < 0)
        return bad_field(err, r->name, line, COL_CAP, &f[idx[COL_CAP]], "is not a finite number");
    if (cap <= 0)
        return bad_field(err, r->name, line, COL_CAP, &f[idx[COL_CAP]], "must be positive");
    /* No GPU's limit is settable under 10 W: such a cap is a sweep in kW. */
    if (cap < 10)
        return pflex_error_set(err, "%s:%u: column 'cap_w': %g W is under any GPU's settable limit: "
                               "caps and power are in W (a sweep in kW? %g kW is %g W)",
                               r->name, line, cap, cap, cap * 1000);
    /* keep_bad: a power or throughput that is no good makes its point NaN,
     * for the caller to skip the job by (pflex_sweep_job_check) */
    if (!(numok & 1u << NUM_POWER)
        && pflex_parse_double(f[idx[COL_POWER]].s, f[idx[COL_POWER]].len, &power) < 0) {
        if (!r->keep_bad)
            return bad_field(err, r->name, line, COL_POWER, &f[idx[COL_POWER]],
                             "is not a finite number");
        power = NAN;
    }
    if (power <= 0 && !r->keep_bad)
        return bad_field(err, r->name, line, COL_POWER, &f[idx[COL_POWER]],
                         power < 0 ? "is negative" : "must be positive");
    if (!(numok & 1u << NUM_TPUT)
        && pflex_parse_double(f[idx[COL_TPUT]].s, f[idx[COL_TPUT]].len, &tput) < 0) {
        if (!r->keep_bad)
            return bad_field(err, r->name, line, COL_TPUT, &f[idx[COL_TPUT]],
                             "is not a finite number");
        tput = NAN;
    }
    if (tput < 0 && !r->keep_bad)
        return bad_field(err, r->name, line, COL_TPUT, &f[idx[COL_TPUT]], "is negative");
    /* A job's later rows mostly repeat its GPU count, read while the
     * row was split: equal to the count already checked, it passes the
     * same checks and changes nothing. */
    if (idx[COL_GPUS] >= 0 && !(numok & 1u << NUM_GPUS && jm->gpus
                                && s->num[NUM_GPUS] == (double)jm->gpus)
        && f[idx[COL_GPUS]].len) {
        double g = s->num[NUM_GPUS];
        const struct pflex_csv_field *gf = &f[idx[COL_GPUS]];
        if ((!(numok & 1u << NUM_GPUS) && pflex_parse_double(gf->s, gf->len, &g) < 0)
            || g < 1 || g > 1e8 || g != floor(g))
            return bad_field(err, r->name, line, COL_GPUS, gf, "is not a positive whole number");
        if (jm->gpus && jm->gpus != (int)g)
            return pflex_error_set(err, "%s:%u: column 'gpus': job '%s' had %d GPUs on line %u, "
                                   "now %d", r->name, line, ARENA(r) + KEY(r, j)->name_off,
                                   jm->gpus, jm->line, (int)g);
        jm->gpus = (int)g;
    }
    *out = (struct row){.job = (uint32_t)j, .line = line, .cap = cap, .power = power,
                        .tput = tput};
    return 0;
}

/* The row's gpu, floor, tier and weight, into the job's metadata.  0, or
 * -1 with err set. */
static int row_meta(struct reader *r, const pflex_csv_t *c)
{
    const struct pflex_csv_field *f = c->fields;
    const int *idx = r->idx;
    unsigned line = c->line;
    pflex_error_t *err = r->err;
    struct jobmeta *jm = r->jm;
    if (idx[COL_GPU] >= 0 && f[idx[COL_GPU]].len && !jm->gpu_len) {
        size_t at;
        const char *why = pflex_name_problem(f[idx[COL_GPU]].s, f[idx[COL_GPU]].len, &at);
        if (why)
            return pflex_error_set(err, "%s:%u: column 'gpu': the GPU name %s (byte %zu of %zu)",
                                   r->name, line, why, at + 1, f[idx[COL_GPU]].len);
        if (arena_add(r, f[idx[COL_GPU]].s, f[idx[COL_GPU]].len, &jm->gpu_off) < 0)
            return pflex_error_sys(err, "%s:%u: out of memory", r->name, line);
        jm->gpu_len = f[idx[COL_GPU]].len;
    }
    if (idx[COL_FLOOR] >= 0 && f[idx[COL_FLOOR]].len) {
        double fl;
        const struct pflex_csv_field *ff = &f[idx[COL_FLOOR]];
        if (pflex_parse_double(ff->s, ff->len, &fl) < 0 || fl < 0 || fl > 1)
            return bad_field(err, r->name, line, COL_FLOOR, ff,
                             "is not a fraction between 0 and 1");
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
        if (tf->len >= sizeof tb || pflex_tier_floor(tb, &fl) < 0)
            return bad_field(err, r->name, line, COL_TIER, tf,
                             "is not a tier (flex0, flex1, flex2, flex3)");
        if (!(idx[COL_FLOOR] >= 0 && f[idx[COL_FLOOR]].len)) {
            jm->floor = fl;
            jm->has_floor = 1;
        }
    }
    if (idx[COL_WEIGHT] >= 0 && f[idx[COL_WEIGHT]].len) {
        double w;
        const struct pflex_csv_field *wf = &f[idx[COL_WEIGHT]];
        if (pflex_parse_double(wf->s, wf->len, &w) < 0 || w < 0)
            return bad_field(err, r->name, line, COL_WEIGHT, wf, "is not a non-negative number");
        jm->weight = w;
        jm->has_weight = 1;
    }
    return 0;
}

/* Keep the row: grouped, among the current job's rows; else among every
 * row, with its telemetry columns.  0, or -1 with err set. */
static int row_keep(struct reader *r, const pflex_csv_t *c, const struct row *rw)
{
    unsigned line = c->line;
    pflex_error_t *err = r->err;
    if (r->grouped) {
        if (pflex_grow((void **)&r->cur, &r->cur_cap, r->ncur + 1, sizeof *r->cur))
            return pflex_error_sys(err, "%s:%u: out of memory", r->name, line);
        r->cur[r->ncur++] = *rw;
        r->nrows++;             /* (a job's own count is not needed: each is new
                                 * when its first row comes, its rows are ncur) */
        return 0;
    }
    if (pflex_big_reserve(&r->rows, (r->nrows + 1) * sizeof(struct row)) < 0)
        return pflex_error_sys(err, "%s:%u: out of memory", r->name, line);
    size_t rows_cap = r->rows.cap / sizeof(struct row);
    if (r->has_tm && r->tm_cap < rows_cap) {
        double *ntm = realloc(r->tm, rows_cap * PFLEX_TM_COUNT * sizeof *ntm);
        if (!ntm)
            return pflex_error_sys(err, "%s:%u: out of memory", r->name, line);
        r->tm = ntm;
        r->tm_cap = rows_cap;
    }
    if (r->has_tm) {
        const struct pflex_csv_field *f = c->fields;
        double *t = r->tm + r->nrows * PFLEX_TM_COUNT;
        for (int k = 0; k < PFLEX_TM_COUNT; k++) {
            int fi = r->idx[COL_TM0 + k];
            t[k] = NAN;
            if (fi < 0 || f[fi].len == 0)
                continue;
            if (pflex_parse_double(f[fi].s, f[fi].len, &t[k]) < 0)
                return bad_field(err, r->name, line, COL_TM0 + k, &f[fi],
                                 "is not a finite number");
        }
    }
    ((struct row *)r->rows.p)[r->nrows++] = *rw;
    KEYS(r)[rw->job].nrows++;
    return 0;
}

/* Every row read: the last job flushed (grouped), the sweep built.  0, 1
 * (grouped and a job scattered: read again), or -1 with err set. */
static int parse_finish(struct reader *r, pflex_sweep_t **out)
{
    pflex_error_t *err = r->err;
    if (r->grouped && has_dup(r))
        return 1;               /* scattered: read again, collecting rows */
    if (r->grouped && r->last_job >= 0) {
        int fr = flush_job(r, r->last_job);
        if (fr == -1)
            pflex_error_sys(err, "%s: out of memory", r->name);
        if (fr < 0)
            return -1;
    }
    if (r->nrows == 0)
        return pflex_error_set(err, "%s:%u: no data rows after the header", r->name,
                               r->header_line);
    pflex_sweep_t *sw = calloc(1, sizeof *sw);
    if (!sw)
        return pflex_error_sys(err, "%s: out of memory", r->name);
    if ((r->grouped ? grouped_finish(r, sw, err) : sort_group(r, sw, err)) < 0) {
        pflex_sweep_destroy(sw);
        return -1;
    }
    ((struct store *)sw->priv)->warnings = r->warn;
    sw->warnings = r->warn;
    r->warn = NULL;
    *out = sw;
    return 0;
}

/* One pass over s.  With try_grouped, each job's rows are averaged into
 * points as soon as the job's rows end, and no row is kept; the pass gives
 * up (returns 1, nothing set) at the first job whose rows do not all stand
 * together, and the caller reads again without it: rows are then collected
 * and grouped by a counting sort.  Both give the same sweep and the same
 * errors: rows are checked in file order before any grouping error. */
static int parse(struct src *s, const char *name, const char *columns, unsigned flags,
                 int try_grouped, const struct pflex_sweep_visitor *v, pflex_sweep_t **out,
                 pflex_error_t *err)
{
    struct reader r;
    memset(&r, 0, sizeof r);
    r.keep_bad = (flags & PFLEX_SWEEP_KEEP_BAD) != 0;
    r.name = name;
    r.v = v;
    r.err = err;
    r.one_cap = -1;
    *out = NULL;
    char *spec_copy = NULL;
    int rc = -1, got;
    if (parse_columns(columns, &spec_copy, r.headers, err) < 0 ||
        parse_header(&r, s, try_grouped) < 0)
        goto done;
    while ((got = next_record(s, err)) == 1) {
        const pflex_csv_t *c = &s->tok;
        struct row rw;
        long j;
        if (c->nfields < s->need) {
            pflex_csv_row_error(err, r.name, c->line, c->nfields, s->need);
            goto done;
        }
        if ((j = row_job(&r, c)) < 0 || row_numbers(&r, s, j, &rw) < 0 ||
            (r.more_cols && row_meta(&r, c) < 0) || row_keep(&r, c, &rw) < 0)
            goto done;
    }
    if (got < 0)
        goto done;
    rc = parse_finish(&r, out);
done:
    /* An error in the grouped pass stands only if no job so far was
     * scattered (else the general pass finds the error, or another first). */
    if (rc < 0 && r.grouped && has_dup(&r))
        rc = 1;
    free(spec_copy);
    free(r.warn);
    reader_free(&r);
    return rc;
}

/* A job's rows ordered by cap, stably (rows at one cap keep their file
 * order, so that their sums are the same bit for bit): a merge sort, top
 * down, whose merge is skipped where the two halves are already in order,
 * so that sorted input costs one compare a row and any order, such as a
 * sweep's repeats from the highest cap down (700, 700, 700, 650, ...),
 * O(n log n).  tmp has room for n. */
static void rows_merge(struct row *a, struct row *tmp, size_t n)
{
    if (n < 2)
        return;
    if (n <= 16) {              /* insertion: stable, cheap this small */
        for (size_t i = 1; i < n; i++) {
            struct row v = a[i];
            size_t b = i;
            while (b > 0 && a[b - 1].cap > v.cap) {
                a[b] = a[b - 1];
                b--;
            }
            a[b] = v;
        }
        return;
    }
    size_t h = n / 2;
    rows_merge(a, tmp, h);
    rows_merge(a + h, tmp, n - h);
    if (!(a[h - 1].cap > a[h].cap))
        return;
    memcpy(tmp, a, h * sizeof *a);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        a[k++] = a[j].cap < tmp[i].cap ? a[j++] : tmp[i++];
    while (i < h)
        a[k++] = tmp[i++];
}

static void rows_sort(struct row *a, struct row *tmp, size_t n)
{
    size_t i = 1;
    while (i < n && !(a[i - 1].cap > a[i].cap))
        i++;
    if (i < n)
        rows_merge(a, tmp, n);
}

/* The same for the general grouping: row indices o[0..n), by rows[].cap. */
static void order_merge(uint32_t *o, uint32_t *tmp, size_t n, const struct row *rows)
{
    if (n < 2)
        return;
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            uint32_t v = o[i];
            double cv = rows[v].cap;
            size_t b = i;
            while (b > 0 && rows[o[b - 1]].cap > cv) {
                o[b] = o[b - 1];
                b--;
            }
            o[b] = v;
        }
        return;
    }
    size_t h = n / 2;
    order_merge(o, tmp, h, rows);
    order_merge(o + h, tmp, n - h, rows);
    if (!(rows[o[h - 1]].cap > rows[o[h]].cap))
        return;
    memcpy(tmp, o, h * sizeof *o);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        o[k++] = rows[o[j]].cap < rows[tmp[i]].cap ? o[j++] : tmp[i++];
    while (i < h)
        o[k++] = tmp[i++];
}

static void order_sort(uint32_t *o, uint32_t *tmp, size_t n, const struct row *rows)
{
    size_t i = 1;
    while (i < n && !(rows[o[i - 1]].cap > rows[o[i]].cap))
        i++;
    if (i < n)
        order_merge(o, tmp, n, rows);
}

/* Average one job's rows (r->cur, in file order) into points: ordered by
 * cap where they lie (rows_sort: stable, linear on sorted input) and
 * rows at the same cap summed in that order, as the general grouping does.
 * A job with one cap is remembered, not reported: every row is checked
 * first, as the general grouping does. */
static int flush_job(struct reader *r, long j)
{
    struct row *o = r->cur;
    size_t n = r->ncur;
    size_t down = 1;            /* rows in strictly falling cap order (a sweep
                                 * run from the top): reversed, they are what
                                 * the stable sort gives, one point each */
    while (down < n && o[down].cap < o[down - 1].cap)
        down++;
    struct pflex_sweep_point *pt;
    if (r->v) {
        if (pflex_grow((void **)&r->vpts, &r->vpts_cap, n, sizeof *r->vpts))
            return -1;
        pt = r->vpts;
    } else {
        if (pflex_big_reserve(&r->points, (r->npoints + n) * sizeof *pt) < 0)
            return -1;
        pt = (struct pflex_sweep_point *)r->points.p + r->npoints;
    }
    size_t m = 0;
    if (down == n) {
        /* Every cap its own point, read from the last row back: a sum of
         * one row over one row is 0 + the row's value (-0 becomes 0; a
         * power is positive), as the general loop below gives it. */
        for (size_t a = n; a-- > 0;)
            pt[m++] = (struct pflex_sweep_point){
                .cap_w = o[a].cap, .power_w = o[a].power, .throughput = 0.0 + o[a].tput,
                .rows = 1, .line = o[a].line,
            };
    } else {
        if (r->cur_tmp_cap < n) {
            struct row *nt = realloc(r->cur_tmp, r->cur_cap * sizeof *nt);
            if (!nt)
                return -1;
            r->cur_tmp = nt;
            r->cur_tmp_cap = r->cur_cap;
        }
        rows_sort(o, r->cur_tmp, n);
        size_t a = 0;
        while (a < n) {
            size_t b = a;
            double cap = o[a].cap, ps = 0, ts = 0;
            while (b < n && o[b].cap == cap) {
                ps += o[b].power;
                ts += o[b].tput;
                b++;
            }
            pt[m++] = (struct pflex_sweep_point){
                .cap_w = cap, .power_w = ps / (double)(b - a),
                .throughput = ts / (double)(b - a), .rows = (unsigned)(b - a),
                .line = o[a].line,
            };
            a = b;
        }
    }
    struct jobmeta *jm = META(r, j);
    jm->npoints = m;
    if (m < 2 && r->one_cap < 0 && !r->keep_bad) {
        r->one_cap = j;
        one_cap_error(r, ARENA(r) + KEY(r, j)->name_off, jm->line, pt[0].cap_w,
                      &r->one_cap_err);
    }
    r->ncur = 0;
    if (!r->v) {
        r->npoints += m;
        return 0;
    }
    struct pflex_sweep_job job;
    job_out(KEY(r, j), jm, ARENA(r), &job);
    job.npoints = m;
    job.points = pt;
    if (r->v->job(r->v->ctx, &job, r->err) < 0)
        return -2;
    if (r->slot)
        r->arena_len = 0;   /* its names are done with: the next job's go here */
    return 0;
}

static void job_out(const struct jobkey *jk, const struct jobmeta *jm, const char *names,
                    struct pflex_sweep_job *job)
{
    job->name = names + jk->name_off;
    job->gpu = jm->gpu_len ? names + jm->gpu_off : NULL;
    job->gpus = jm->gpus ? jm->gpus : 1;
    job->floor = jm->has_floor ? jm->floor : NAN;
    job->weight = jm->weight;
    job->line = jm->line;
    job->telemetry = NULL;
}

static int one_cap_error(const struct reader *r, const char *job, unsigned line, double cap,
                         pflex_error_t *err)
{
    return pflex_error_set(err, "%s:%u: job '%s' is measured at only one cap (%g W); "
                           "a sweep needs at least two", r->name, line, job, cap);
}

/* Every job's rows stood together: the points are made; hand them over. */
static int grouped_finish(struct reader *r, pflex_sweep_t *sw, pflex_error_t *err)
{
    if (r->one_cap >= 0) {
        *err = r->one_cap_err;
        return -1;
    }
    /* The name table is done with; its pages go to the jobs array. */
    pflex_big_free(&r->table_mem);
    r->table = NULL;
    struct store *st = calloc(1, sizeof *st);
    sw->priv = st;
    if (!st || (!r->v && pflex_big_reserve(&st->jobs, r->njobs * sizeof *sw->jobs) < 0))
        return pflex_error_sys(err, "%s: out of memory", r->name);
    st->names = r->arena;
    st->points = r->points;
    memset(&r->arena, 0, sizeof r->arena);
    memset(&r->points, 0, sizeof r->points);
    sw->jobs = st->jobs.p;
    sw->njobs = r->njobs;
    sw->has_telemetry = 0;
    if (r->v)
        return 0;       /* handed over already; only the names are kept */
    struct pflex_sweep_point *p = st->points.p;
    for (size_t j = 0; j < r->njobs; j++) {
        const struct jobmeta *jm = META(r, j);
        struct pflex_sweep_job *job = &sw->jobs[j];
        job_out(&KEYS(r)[j], jm, st->names.p, job);
        job->npoints = jm->npoints;
        job->points = p;
        p += jm->npoints;
    }
    return 0;
}

/* Group rows by job (counting sort, stable), order each job's rows by cap
 * and average rows at the same cap. */
static int sort_group(struct reader *r, pflex_sweep_t *sw, pflex_error_t *err)
{
    struct store *st = calloc(1, sizeof *st);
    size_t *start = calloc(r->njobs + 1, sizeof *start);
    uint32_t *order = malloc(r->nrows * sizeof *order);
    size_t most = 1;            /* the most rows of one job: the merge's scratch */
    for (size_t j = 0; j < r->njobs; j++)
        if (KEYS(r)[j].nrows > most)
            most = KEYS(r)[j].nrows;
    uint32_t *otmp = malloc(most * sizeof *otmp);
    const struct row *rows = r->rows.p;
    int rc = -1;
    sw->priv = st;
    if (st) {
        if (pflex_big_reserve(&st->jobs, r->njobs * sizeof *sw->jobs) < 0
            || pflex_big_reserve(&st->points, r->nrows * sizeof(struct pflex_sweep_point)) < 0)
            st->points.p = NULL;
        sw->jobs = st->jobs.p;
        if (r->has_tm)
            st->telemetry = malloc(r->nrows * PFLEX_TM_COUNT * sizeof *st->telemetry);
    }
    if (!st || !start || !order || !otmp || !st->points.p || (r->has_tm && !st->telemetry)) {
        pflex_error_sys(err, "%s: out of memory", r->name);
        goto out;
    }
    for (size_t j = 0; j < r->njobs; j++)
        start[j + 1] = start[j] + KEYS(r)[j].nrows;
    {
        size_t *fill = malloc(r->njobs * sizeof *fill);
        if (!fill) {
            pflex_error_sys(err, "%s: out of memory", r->name);
            goto out;
        }
        memcpy(fill, start, r->njobs * sizeof *fill);
        for (size_t i = 0; i < r->nrows; i++)
            order[fill[rows[i].job]++] = (uint32_t)i;
        free(fill);
    }
    st->names = r->arena;
    memset(&r->arena, 0, sizeof r->arena);
    sw->njobs = r->njobs;
    sw->has_telemetry = r->has_tm;
    struct pflex_sweep_point *points = st->points.p;
    size_t np = 0;
    for (size_t j = 0; j < r->njobs; j++) {
        struct jobmeta *jm = META(r, j);
        uint32_t *o = order + start[j];
        size_t n = KEYS(r)[j].nrows;
        /* By cap: stable, linear on sorted input, O(n log n) in any order. */
        order_sort(o, otmp, n, rows);
        struct pflex_sweep_job *job = &sw->jobs[j];
        job_out(&KEYS(r)[j], jm, st->names.p, job);
        job->points = points + np;
        job->telemetry = r->has_tm ? st->telemetry + np * PFLEX_TM_COUNT : NULL;
        size_t a = 0;
        while (a < n) {
            size_t b = a;
            double cap = rows[o[a]].cap, ps = 0, ts = 0;
            while (b < n && rows[o[b]].cap == cap) {
                ps += rows[o[b]].power;
                ts += rows[o[b]].tput;
                b++;
            }
            struct pflex_sweep_point *pt = &points[np];
            pt->cap_w = cap;
            pt->power_w = ps / (double)(b - a);
            pt->throughput = ts / (double)(b - a);
            pt->rows = (unsigned)(b - a);
            pt->line = rows[o[a]].line;
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
        job->npoints = (size_t)((points + np) - job->points);
        if (job->npoints < 2 && !r->keep_bad) {
            one_cap_error(r, job->name, jm->line, job->points[0].cap_w, err);
            goto out;
        }
    }
    if (r->v) {
        for (size_t j = 0; j < r->njobs; j++)
            if (r->v->job(r->v->ctx, &sw->jobs[j], err) < 0)
                goto out;
        pflex_big_free(&st->points);
        pflex_big_free(&st->jobs);
        free(st->telemetry);
        st->telemetry = NULL;
        sw->jobs = NULL;
        sw->has_telemetry = 0;
    }
    rc = 0;
out:
    free(start);
    free(order);
    free(otmp);
    return rc;
}

void pflex_sweep_destroy(pflex_sweep_t *s)
{
    if (!s)
        return;
    struct store *st = s->priv;
    if (st) {
        pflex_big_free(&st->names);
        pflex_big_free(&st->points);
        pflex_big_free(&st->jobs);
        free(st->telemetry);
        free(st->warnings);
        free(st);
    }
    free(s);
}

/* Whether the lines of the text in [b, b + n) keep to the line limit:
 * *run is the length of the line still open before b, updated.  Returns 0,
 * or -1 with *bad at the end of the text before the line that does not
 * (that line starts *run bytes before it).  It looks only for the last
 * line break within the limit's reach, from its far end back: a few bytes
 * per MiB of text, not a pass over it. */
static int lines_within(const char *b, size_t n, size_t *run, const char **bad)
{
    const char *e = b + n;
    for (;;) {
        size_t room = PFLEX_LINE_MAX_BYTES - *run;     /* the open line may grow this much */
        size_t look = (size_t)(e - b) < room + 1 ? (size_t)(e - b) : room + 1;
        const char *nl = b + look;
        while (nl > b && nl[-1] != '\n')
            nl--;
        if (nl == b) {
            if ((size_t)(e - b) > room) {
                *bad = b;
                return -1;
            }
            *run += (size_t)(e - b);
            return 0;
        }
        *run = 0;
        b = nl;
    }
}

int pflex_read_all(const char *path, char **buf, size_t *len, pflex_error_t *err)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "<stdin>" : path;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY);
    if (fd < 0)
        return pflex_error_set(err, "%s: %s", path, strerror(errno));
    struct stat st;
    size_t cap = 1 << 16, n = 0, run = 0;
    if (fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            if (!is_stdin)
                close(fd);
            return pflex_error_set(err, "%s: is a directory (give a file)", name);
        }
        if (S_ISREG(st.st_mode) && st.st_size > 0) {
            if ((uint64_t)st.st_size > PFLEX_INPUT_MAX_BYTES) {
                if (!is_stdin)
                    close(fd);
                return pflex_error_set(err, "%s: %lld bytes, more than the %llu an input may hold",
                                       name, (long long)st.st_size,
                                       (unsigned long long)PFLEX_INPUT_MAX_BYTES);
            }
            cap = (size_t)st.st_size + 1;
        }
    }
    char *b = malloc(cap);
    int rc = -1;
    if (!b) {
        pflex_error_sys(err, "%s: out of memory", name);
        goto out;
    }
    for (;;) {
        if (n == cap) {
            if (cap >= PFLEX_INPUT_MAX_BYTES) {
                pflex_error_set(err, "%s: more than the %llu bytes an input may hold", name,
                                (unsigned long long)PFLEX_INPUT_MAX_BYTES);
                goto out;
            }
            size_t ncap = cap * 2 < PFLEX_INPUT_MAX_BYTES ? cap * 2 : PFLEX_INPUT_MAX_BYTES + 1;
            char *nb = realloc(b, ncap);
            if (!nb) {
                pflex_error_sys(err, "%s: out of memory", name);
                goto out;
            }
            b = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, b + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            pflex_error_sys(err, "%s: read error: %s", name, strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        const char *bad;
        if (lines_within(b + n, (size_t)got, &run, &bad) < 0) {
            unsigned line = 1;
            for (const char *q = b; q < bad - run; q++)
                line += *q == '\n';
            pflex_error_set(err, "%s:%u: line longer than %u bytes (is it a text file?)", name,
                            line, (unsigned)PFLEX_LINE_MAX_BYTES);
            goto out;
        }
        n += (size_t)got;
    }
    if (n == cap) {
        char *nb = realloc(b, cap + 1);
        if (!nb) {
            pflex_error_sys(err, "%s: out of memory", name);
            goto out;
        }
        b = nb;
    }
    b[n] = '\0';      /* callers may read it as a string */
    *buf = b;
    *len = n;
    b = NULL;
    rc = 0;
out:
    free(b);
    if (!is_stdin)
        close(fd);
    return rc;
}

int pflex_map_all(const char *path, const char **buf, size_t *len, size_t *mapped,
                  pflex_error_t *err)
{
    struct stat st;
    *mapped = 0;
    int fd = strcmp(path, "-") ? open(path, O_RDONLY) : -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (1 << 20) &&
        (uint64_t)st.st_size <= PFLEX_INPUT_MAX_BYTES) {
        size_t n = (size_t)st.st_size, run = 0;
        const char *bad;
        int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
        flags |= MAP_POPULATE;      /* the page cache's pages, mapped at once */
#endif
        void *p = mmap(NULL, n, PROT_READ, flags, fd, 0);
        if (p != MAP_FAILED) {
            close(fd);
            if (lines_within(p, n, &run, &bad) < 0) {
                /* the same message as pflex_read_all's */
                unsigned line = 1;
                for (const char *q = p; q < bad - run; q++)
                    line += *q == '\n';
                munmap(p, n);
                return pflex_error_set(err, "%s:%u: line longer than %u bytes (is it a text "
                                       "file?)", path, line, (unsigned)PFLEX_LINE_MAX_BYTES);
            }
            *buf = p;
            *len = n;
            *mapped = n;
            return 0;
        }
    }
    if (fd >= 0)
        close(fd);
    char *b;
    if (pflex_read_all(path, &b, len, err) < 0)
        return -1;
    *buf = b;
    return 0;
}

void pflex_unmap_all(const char *buf, size_t mapped)
{
    if (mapped)
        munmap((void *)buf, mapped);
    else
        free((void *)buf);
}

/* The read buffer (it grows only for a longer record): small enough that
 * what read() copies into it is still in the cache when it is split, and
 * little fresh memory. */
enum { CHUNK = 256u << 10 };
enum { MAP_MAX = 4u << 20 };    /* files up to this size are mapped */

/* size: the file's size when known, else 0 (a small file gets a buffer
 * just big enough: fresh memory costs more than the reading). */
static void src_init(struct src *s, int fd, const char *buf, size_t len, const char *name,
                     size_t size)
{
    memset(s, 0, sizeof *s);
    s->chunk0 = size && size < CHUNK ? size + 1 : CHUNK;
    s->fd = fd;
    s->path = name;
    s->buf = buf;
    s->len = len;
    s->eof = fd < 0;
    s->line = 1;
    s->tok.name = name;     /* pointed at text by next_record */
}

static void src_fini(struct src *s)
{
    pflex_csv_fini(&s->tok);
    pflex_big_free(&s->chunk);
}

/* Back to the start of the input (for the second pass). */
static int src_rewind(struct src *s, pflex_error_t *err)
{
    s->pos = 0;
    s->line = 1;
    s->started = 0;
    s->need = 0;
    if (s->fd >= 0) {
        if (lseek(s->fd, 0, SEEK_SET) < 0)
            return pflex_error_sys(err, "%s: read error: %s", s->path, strerror(errno));
        s->len = 0;
        s->eof = 0;
    }
    return 0;
}

/* Keep the unread text, read more after it. */
static int src_fill(struct src *s, pflex_error_t *err)
{
    size_t keep = s->len - s->pos;
    if (keep > PFLEX_LINE_MAX_BYTES)
        return pflex_error_set(err, "%s:%u: line longer than %u bytes (is it a text file?)",
                               s->path, s->line, (unsigned)PFLEX_LINE_MAX_BYTES);
    char *b = s->chunk.p;
    if (keep && s->pos)
        memmove(b, b + s->pos, keep);
    s->pos = 0;
    s->len = keep;
    if (s->len == s->chunk.cap
        && pflex_big_reserve(&s->chunk, s->chunk.cap ? 2 * s->chunk.cap : s->chunk0) < 0)
        return pflex_error_sys(err, "%s: out of memory", s->path);
    b = s->chunk.p;
    s->buf = b;
    while (s->len < s->chunk.cap) {
        ssize_t n = read(s->fd, b + s->len, s->chunk.cap - s->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return pflex_error_sys(err, "%s: read error: %s", s->path, strerror(errno));
        if (n == 0) {
            s->eof = 1;
            break;
        }
        s->len += (size_t)n;
    }
    return 0;
}

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

/* The numbers read while a row is split are short plain decimals, those
 * the one decimal parser's short path takes (util/decimal.h): digits and
 * at most one point, a digit at least, at most 15 characters; the
 * mantissa and its power of ten are then exact, and one division rounds
 * as it does there. */

#if defined(__FMA__)
/* 10^-k rounded to nearest. */
static const double pow10_neg_short[8] = {1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7};

/* m / 10^k rounded to nearest, as the division rounds it, for m < 10^7
 * and 1 <= k <= 7 (a windowed field: at most 7 digits around a point),
 * without the division: q = m * RN(10^-k) is within about an ulp and a
 * half of the quotient t; its remainder r = m - q 10^k is exact in one
 * fused multiply-add (r is a multiple of 2^(e+k) when q's last bit is
 * 2^e, an integer when e + k >= 0, and |r| <= 2 ulp(q) 10^k, so it needs
 * at most log2(2 * 5^k) < 53 bits either way); and q + r RN(10^-k), one
 * more fused multiply-add, is RN(t): Markstein's correction, whose
 * conditions (q within an ulp) we do not lean on: every m < 2 * 10^8 with
 * every k <= 15 was checked against the division, 3e9 pairs, all equal
 * (the domain here is m < 10^7, k <= 7; a tie would need 5^k to divide m,
 * where t is exact and r is 0). */
static inline double short_quotient(double m, unsigned k)
{
    double q = m * pow10_neg_short[k];
    return __builtin_fma(__builtin_fma(-q, pflex_pow10_exact[k], m), pow10_neg_short[k], q);
}
#else
static inline double short_quotient(double m, unsigned k)
{
    return m / pflex_pow10_exact[k];
}
#endif

/* m < 2^52 as a double, exactly: its bits under 2^52's exponent, less
 * 2^52.  Unlike an integer conversion (cvtsi2sd) this does not wait for
 * whatever last wrote the register it merges into, often the last
 * number's division: the numbers of a row are then read side by side. */
static inline double small_double(uint64_t m)
{
    uint64_t b = m | 0x4330000000000000ull;
    double d;
    memcpy(&d, &b, sizeof d);
    return d - 4503599627370496.0;
}


/* A data row's first need fields, split where they lie in one pass over
 * the line that also finds its end: for a plain line, one with no quote,
 * not a comment, and no blank or CR at either end of those fields (but the
 * line's own CR).  Fields past need are not split (the reader looks only
 * at need fields).  The fields given a number in s->role are read in the
 * same pass when they are short plain decimals (s->num, s->numok).
 * Returns 1 with c->fields[0..need) and c->line as pflex_csv_split_line
 * would set them (c->nfields = need: at least that many) and *nl at the
 * line's '\n'; 0 when the line needs the general path (which also counts a
 * short row's fields for its message), or has no '\n' before end. */
static int split_row(struct src *src, const char *s, const char *end, unsigned line,
                     const char **nl)
{
    pflex_csv_t *c = &src->tok;
    size_t need = src->need;
    if (need == 0 || need > c->cap || s == end || *s == '#')
        return 0;
    struct pflex_csv_field *f = c->fields;
    unsigned numok = 0;
    for (size_t k = 0;; k++) {
        const char *a = s;
        unsigned role = k < ROLES ? src->role[k] : 0;
        const char *q = s, *point = NULL;
        uint64_t m = 0;
        if (role) {
            if ((q = pflex_dec_scan(q, end, &m, &point)) == end)
                return 0;
            s = *q == ',' || *q == '\n' || *q == '"' ? q : csv_find_delim(q, end);
        } else {
            s = csv_find_delim(s, end);
        }
        if (s == end || *s == '"')
            return 0;
        const char *b = s;
        if (*s == '\n' && b > a && b[-1] == '\r')   /* CRLF */
            b--;
        if (b > a && (is_blank(*a) || is_blank(b[-1])))
            return 0;
        f[k].s = a;
        f[k].len = (size_t)(b - a);
        f[k].quoted = 0;
        f[k].off = 0;
        if (role && q == b && b - a <= 15 && b - a > (point != NULL)) {
            src->num[role - 1] = pflex_dec_short(small_double(m), point, b);
            numok |= 1u << (role - 1);
        }
        if (*s == '\n') {
            if (k + 1 < need)
                return 0;
            break;
        }
        s++;
        if (k + 1 == need) {    /* the rest of the line: its end, no quote */
            while ((s = csv_find_delim(s, end)) < end && *s == ',')
                s++;
            if (s == end || *s == '"')
                return 0;
            break;
        }
    }
    *nl = s;
    src->numok = numok;
    c->line = line;
    c->next_line = line + 1;
    c->nfields = need;
    c->scratch_len = 0;
    return 1;
}

#if CSV_SWAR && defined(__SSE2__)
#define WINDOW 64

/* Bits i of the 16 bytes in v equal to ch. */
static inline uint64_t eq16(__m128i v, char ch)
{
    return (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(ch)));
}

/* The field p[0..len) (1 <= len <= 8, 8 bytes readable at p) as a short
 * plain decimal, given nd, the bits of its bytes that are not digits: 1
 * with *v, or 0 when it is not one (a byte other than one point).  The
 * digits are gathered eight bytes at a time, from the field's known
 * bounds: nothing waits for a byte loop. */
static inline int field_number(const char *p, size_t len, uint64_t nd, double *v)
{
    uint64_t w;
    memcpy(&w, p, 8);
    size_t ndig = len, frac = 0;
    uint64_t dig = w;
    if (nd) {                   /* one point, else not a short decimal */
        unsigned at = (unsigned)__builtin_ctzll(nd);
        if ((nd & (nd - 1)) || p[at] != '.' || len == 1)
            return 0;
        ndig = len - 1;
        frac = len - 1 - at;
        /* the bytes after the point, one down (two shifts: at may be 7) */
        dig = (w & (((uint64_t)1 << (8 * at)) - 1)) | (w >> 8 >> (8 * at) << (8 * at));
    }
    /* The digits to the top bytes, the first the highest; the bytes past
     * the field fall out, zeros come in below as leading zeros. */
    dig = (dig & 0x0F0F0F0F0F0F0F0Full) << (8 * (8 - ndig));
    dig = (dig * 2561) >> 8;
    dig = ((dig & 0x00FF00FF00FF00FFull) * 6553601) >> 16;
    dig = ((dig & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32;
    double x = small_double(dig);
    if (frac)
        x = short_quotient(x, (unsigned)frac);
    *v = x;
    return 1;
}

/* split_row for a row that ends within the WINDOW bytes at s (all
 * readable): its ',', '\n', '"', blanks and non-digits are found at once,
 * 16 bytes a step, so that every field's bounds are known before any is
 * looked at and no field waits for the one before it; the blanks at the
 * fields' ends are checked once for the row, and the numbers are read from
 * those bounds.  Returns 1 with what split_row gives (the same fields,
 * numbers and line end), or 0 to leave the row to split_row. */
static int split_window(struct src *src, const char *s, unsigned line, const char **nl)
{
    pflex_csv_t *c = &src->tok;
    size_t need = src->need;
    if (need == 0 || need > c->cap || *s == '#')
        return 0;
    uint64_t comma = 0, newl = 0, quote = 0, blank = 0, nondig = 0;
    for (unsigned i = 0; i < WINDOW / 16 && !newl; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + 16 * i));
        __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
        __m128i bl = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                                               _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))),
                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
        unsigned dg = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d));
        comma |= eq16(v, ',') << (16 * i);
        newl |= eq16(v, '\n') << (16 * i);
        quote |= eq16(v, '"') << (16 * i);
        blank |= (uint64_t)(unsigned)_mm_movemask_epi8(bl) << (16 * i);
        nondig |= (uint64_t)(~dg & 0xFFFF) << (16 * i);
    }
    if (!newl)
        return 0;
    uint64_t row = newl ^ (newl - 1);       /* up to the first '\n' */
    if (quote & row)
        return 0;
    comma &= row;
    size_t e = (size_t)__builtin_ctzll(newl), a = 0;
    /* The line's own CR is no field's: the last field ends before it. */
    if (e && s[e - 1] == '\r')
        blank &= ~((uint64_t)1 << (e - 1));
    struct pflex_csv_field *f = c->fields;
    uint64_t left = comma;
    size_t k = 0;
    for (; k + 1 < need && left; k++) {     /* all but the last field end at a ',' */
        size_t b = (size_t)__builtin_ctzll(left);
        left &= left - 1;
        f[k].s = s + a;
        f[k].len = b - a;
        f[k].quoted = 0;
        f[k].off = 0;
        a = b + 1;
    }
    if (k + 1 < need)
        return 0;               /* short: the general path counts its fields */
    uint64_t inner = comma ^ left;          /* the ',' after fields 0..need-2 */
    size_t fb;
    if (left) {
        fb = (size_t)__builtin_ctzll(left);
        left &= left - 1;
    } else {
        fb = e > a && s[e - 1] == '\r' ? e - 1 : e;    /* CRLF */
    }
    f[k].s = s + a;
    f[k].len = fb - a;
    f[k].quoted = 0;
    f[k].off = 0;
    /* A field's first and last bytes are no blanks: bit a and bit b - 1 of
     * every field [a, b).  For an empty field they fall on a delimiter or
     * before the row (no bit), never on a blank. */
    if (blank & (1 | inner << 1 | inner >> 1 | (((uint64_t)1 << fb) >> 1)))
        return 0;
    unsigned numok = 0;
    for (unsigned n = 0; n < NUM_COUNT; n++) {
        int fk = src->num_field[n];
        if (fk < 0)
            continue;
        size_t fa = (size_t)(f[fk].s - s), len = f[fk].len;
        if (len - 1 < 8 && fa + 8 <= WINDOW
            && field_number(s + fa, len, (nondig >> fa) & (((uint64_t)1 << len) - 1),
                            &src->num[n]))
            numok |= 1u << n;
    }
    *nl = s + e;
    src->numok = numok;
    c->line = line;
    c->next_line = line + 1;
    c->nfields = need;
    c->scratch_len = 0;
    return 1;
}
#else
#define WINDOW 0
static int split_window(struct src *src, const char *s, unsigned line, const char **nl)
{
    (void)src, (void)s, (void)line, (void)nl;
    return 0;
}
#endif

/* The next record into s->tok: 1, 0 at the end, -1 with err set.  A plain
 * line is split where it lies; anything else (quotes, comments, blank
 * lines) goes to the general tokenizer, given more text when it stopped at
 * the end of what has been read so far. */
static int next_record(struct src *s, pflex_error_t *err)
{
    for (;;) {
        if (!s->buf) {          /* an empty buffer, or nothing read yet */
            if (s->fd < 0)
                return 0;
            if (src_fill(s, err) < 0)
                return -1;
            continue;
        }
        const char *p = s->buf + s->pos, *end = s->buf + s->len;
        if (!s->started && (s->len - s->pos >= 3 || s->eof)) {
            s->started = 1;
            if (end - p >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB
                && (unsigned char)p[2] == 0xBF)
                s->pos += 3, p += 3;
        }
        if (s->started && p < end) {
            const char *nl;
            if ((WINDOW && end - p >= WINDOW && split_window(s, p, s->line, &nl))
                || split_row(s, p, end, s->line, &nl)) {
                s->pos = (size_t)(nl - s->buf) + 1;
                s->line++;
                return 1;
            }
            s->numok = 0;
            nl = memchr(p, '\n', (size_t)(end - p));
            if (nl || s->eof) {
                const char *le = nl ? nl : end;
                int rc = pflex_csv_split_line(&s->tok, p, (size_t)(le - p), s->line, err);
                if (rc < 0)
                    return -1;
                if (rc == 1) {
                    s->pos = (size_t)(le - s->buf) + (nl != NULL);
                    s->line++;
                    return 1;
                }
                pflex_csv_reset(&s->tok, p, (size_t)(end - p), s->line);
                rc = pflex_csv_next(&s->tok, err);
                int more = !s->eof && ((rc < 0 && s->tok.truncated) || rc == 0
                                       || (rc == 1 && s->tok.p == end && end[-1] != '\n'));
                if (!more) {
                    if (rc >= 0) {
                        s->pos = (size_t)(s->tok.p - s->buf);
                        s->line = s->tok.next_line;
                    }
                    return rc;
                }
            }
        } else if (s->started && s->eof) {
            return 0;
        }
        if (s->fd < 0)
            return 0;   /* not reached: a buffer is all there is */
        if (src_fill(s, err) < 0)
            return -1;
    }
}

static int read_src(struct src *s, const char *name, const char *columns, unsigned flags,
                    const struct pflex_sweep_visitor *v, pflex_sweep_t **out, pflex_error_t *err)
{
    int rc = parse(s, name, columns, flags, 1, v, out, err);
    if (rc == 1) {
        if (src_rewind(s, err) < 0)
            return -1;
        if (v)
            v->restart(v->ctx);
        rc = parse(s, name, columns, flags, 0, v, out, err);
    }
    return rc;
}

int pflex_sweep_read_mem(const char *buf, size_t len, const char *name,
                         const char *columns, pflex_sweep_t **out, pflex_error_t *err)
{
    struct src s;
    name = name ? name : "-";
    src_init(&s, -1, buf, len, name, 0);
    int rc = read_src(&s, name, columns, 0, NULL, out, err);
    src_fini(&s);
    return rc;
}

/* A large regular file is read piece by piece into one reused buffer:
 * neither a copy of the whole file nor a mapping of it (whose page-table
 * entries cost nearly as much as fresh memory on virtual machines) is
 * made. */
static int read_file(const char *path, const char *columns, unsigned flags,
                     const struct pflex_sweep_visitor *v, pflex_sweep_t **out, pflex_error_t *err)
{
    char *buf;
    size_t len;
    if (strcmp(path, "-") != 0) {
        int fd = open(path, O_RDONLY);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            struct src s;
            if (st.st_size > 0 && st.st_size <= MAP_MAX) {
                /* A small file is mapped instead: its page-cache pages cost
                 * less than a buffer's fresh ones. */
                int mflags = MAP_PRIVATE;
#ifdef MAP_POPULATE
                mflags |= MAP_POPULATE;
#endif
                void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, mflags, fd, 0);
                if (m != MAP_FAILED) {
                    close(fd);
                    src_init(&s, -1, m, (size_t)st.st_size, path, 0);
                    int rc = read_src(&s, path, columns, flags, v, out, err);
                    src_fini(&s);
                    munmap(m, (size_t)st.st_size);
                    return rc;
                }
            }
            src_init(&s, fd, NULL, 0, path, (size_t)st.st_size);
            int rc = read_src(&s, path, columns, flags, v, out, err);
            src_fini(&s);
            close(fd);
            return rc;
        }
        if (fd >= 0)
            close(fd);
    }
    if (pflex_read_all(path, &buf, &len, err) < 0)
        return -1;
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    struct src s;
    src_init(&s, -1, buf, len, name, 0);
    int rc = read_src(&s, name, columns, flags, v, out, err);
    src_fini(&s);
    free(buf);
    return rc;
}

int pflex_sweep_read_file(const char *path, const char *columns, pflex_sweep_t **out,
                          pflex_error_t *err)
{
    return read_file(path, columns, 0, NULL, out, err);
}

int pflex_sweep_read_file_flags(const char *path, const char *columns, unsigned flags,
                                pflex_sweep_t **out, pflex_error_t *err)
{
    return read_file(path, columns, flags, NULL, out, err);
}

int pflex_sweep_read_file_each(const char *path, const char *columns,
                               const struct pflex_sweep_visitor *v, pflex_error_t *err)
{
    return pflex_sweep_read_file_each_flags(path, columns, 0, v, err);
}

int pflex_sweep_read_file_each_flags(const char *path, const char *columns, unsigned flags,
                                     const struct pflex_sweep_visitor *v, pflex_error_t *err)
{
    pflex_sweep_t *rest = NULL; /* the names: nothing the caller needs */
    int rc = read_file(path, columns, flags, v, &rest, err);
    pflex_sweep_destroy(rest);
    return rc;
}

int pflex_sweep_job_check(const struct pflex_sweep_job *j, pflex_error_t *err)
{
    if (j->npoints < 2)
        return pflex_error_set(err, "measured at only one cap (%g W); a sweep needs at least two",
                               j->npoints ? j->points[0].cap_w : 0.0);
    for (size_t i = 0; i < j->npoints; i++) {
        const struct pflex_sweep_point *p = &j->points[i];
        if (!(p->power_w > 0) || !isfinite(p->power_w))
            return pflex_error_set(err, "line %u: power_w at %g W is not a positive number",
                                   p->line, p->cap_w);
        if (!(p->throughput >= 0) || !isfinite(p->throughput))
            return pflex_error_set(err, "line %u: throughput at %g W is not a number >= 0",
                                   p->line, p->cap_w);
    }
    return 0;
}
