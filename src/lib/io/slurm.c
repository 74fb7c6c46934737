/* slurm.c — the job map: Slurm's squeue and `scontrol show job -d` output
 * and the job map CSV read into (job, host, gpu) rows (docs/slurm.md).
 *
 * Every reader parses into temporary jobs, then merges each into the map, so
 * that a job seen by squeue and by scontrol becomes one job.  Hosts are
 * interned once per map; jobs hold host ids.  Everything that input can make
 * large is bounded (hosts per hostlist, GPU indices, rows per map) before it
 * is allocated.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "pflex/csv.h"
#include "pflex/slurm.h"
#include "pflex/sweep.h"

#define MAX_HOST_LEN 255        /* a DNS name's limit */
#define MAX_ID_LEN 64

/* ---- small helpers ------------------------------------------------------ */

static int host_char(int c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.';
}

static int id_char(int c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '+';
}

/* A printable excerpt of s[0..len) for messages: at most 40 bytes, other
 * bytes as '?'. */
static const char *excerpt(char *buf, const char *s, size_t len)
{
    size_t n = len > 40 ? 40 : len;
    for (size_t i = 0; i < n; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    buf[n] = 0;
    if (len > 40)
        memcpy(buf + n, "...", 4);
    return buf;
}

/* The value of n (<= 9) decimal digits s[0..n), or -1 when they are not
 * all digits.  Never reads past s + n: input buffers are not terminated. */
static long num(const char *s, size_t n)
{
    long v = 0;
    if (!n || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* ---- string interning ----------------------------------------------------- */

struct strtab {
    char **s;
    size_t n, cap;
    uint32_t *slot;     /* open addressing: index + 1, 0 = empty */
    size_t nslot;
};

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void strtab_fini(struct strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

/* Index of s[0..n) in t, 0 + *added when it was new; -1 out of memory. */
static long strtab_intern(struct strtab *t, const char *s, size_t n, int *added)
{
    if (added)
        *added = 0;
    if ((t->n + 1) * 2 > t->nslot) {
        size_t ns = t->nslot ? t->nslot * 2 : 64;
        uint32_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return -1;
        for (size_t i = 0; i < t->n; i++) {
            size_t h = hash(t->s[i], strlen(t->s[i])) & (ns - 1);
            while (sl[h])
                h = (h + 1) & (ns - 1);
            sl[h] = (uint32_t)i + 1;
        }
        free(t->slot);
        t->slot = sl;
        t->nslot = ns;
    }
    size_t h = hash(s, n) & (t->nslot - 1);
    while (t->slot[h]) {
        const char *x = t->s[t->slot[h] - 1];
        if (strncmp(x, s, n) == 0 && x[n] == 0)
            return (long)t->slot[h] - 1;
        h = (h + 1) & (t->nslot - 1);
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        char **ns = realloc(t->s, nc * sizeof *ns);
        if (!ns)
            return -1;
        t->s = ns;
        t->cap = nc;
    }
    char *d = dup_n(s, n);
    if (!d)
        return -1;
    t->s[t->n] = d;
    t->slot[h] = (uint32_t)t->n + 1;
    if (added)
        *added = 1;
    return (long)t->n++;
}

/* ---- jobs and the map ------------------------------------------------------ */

struct entry {
    uint32_t host;
    int32_t gpu;        /* -1: unknown */
    unsigned line;
};

struct job {
    char *id, *name;
    int running;
    int has_hosts;          /* hosts[] is the job's node list */
    int detail;             /* entries[] says which GPUs (else: hosts, GPUs unknown) */
    uint32_t *hosts;        /* node list, host ids, sorted */
    size_t nhosts;
    struct entry *e;
    size_t ne, cape;
    const char *src;        /* file name (owned by the map) */
    unsigned line;
};

struct pflex_jobmap {
    struct strtab hosts;
    struct strtab ids;      /* job ids; jobs[i] is ids.s[i] */
    struct job *jobs;
    size_t njobs, capjobs;
    size_t entries;         /* across all jobs, for the row bound */
    struct strtab srcs;
    struct pflex_jobmap_row *rows;
    size_t nrows;
};

static void job_fini(struct job *j)
{
    free(j->id);
    free(j->name);
    free(j->hosts);
    free(j->e);
    memset(j, 0, sizeof *j);
}

pflex_jobmap_t *pflex_jobmap_create(void)
{
    return calloc(1, sizeof(pflex_jobmap_t));
}

void pflex_jobmap_destroy(pflex_jobmap_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->njobs; i++)
        job_fini(&m->jobs[i]);
    free(m->jobs);
    strtab_fini(&m->hosts);
    strtab_fini(&m->ids);
    strtab_fini(&m->srcs);
    free(m->rows);
    free(m);
}

size_t pflex_jobmap_skipped(const pflex_jobmap_t *m)
{
    size_t k = 0;
    for (size_t i = 0; i < m->njobs; i++)
        k += !m->jobs[i].running;
    return k;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->host != y->host)
        return x->host < y->host ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

static int job_in_hosts(const struct job *j, uint32_t h)
{
    return j->nhosts && bsearch(&h, j->hosts, j->nhosts, sizeof h, cmp_u32) != NULL;
}

static int add_entry(pflex_jobmap_t *m, struct job *j, uint32_t host, int gpu, unsigned line,
                     const char *file, pflex_error_t *err)
{
    if (m->entries >= PFLEX_JOBMAP_MAX_ROWS)
        return pflex_error_set(err, "%s:%u: more than %d (job, host, gpu) rows", file, line,
                               PFLEX_JOBMAP_MAX_ROWS);
    if (j->ne == j->cape) {
        size_t nc = j->cape ? j->cape * 2 : 16;
        struct entry *ne = realloc(j->e, nc * sizeof *ne);
        if (!ne)
            return pflex_error_set(err, "%s:%u: out of memory", file, line);
        j->e = ne;
        j->cape = nc;
    }
    j->e[j->ne++] = (struct entry){host, gpu, line};
    m->entries++;
    return 0;
}

/* Sort a finished job's entries; a repeated (host, gpu) is an error. */
static int job_finish(pflex_jobmap_t *m, struct job *j, const char *file, pflex_error_t *err)
{
    if (j->ne)      /* qsort's base may not be NULL, even for no element */
        qsort(j->e, j->ne, sizeof *j->e, cmp_entry);
    for (size_t i = 1; i < j->ne; i++)
        if (cmp_entry(&j->e[i - 1], &j->e[i]) == 0) {
            unsigned a = j->e[i - 1].line, b = j->e[i].line;
            const struct entry *x = &j->e[i];
            if (x->gpu < 0)
                return pflex_error_set(err, "%s:%u: job %s: host '%s' listed twice", file,
                                       a > b ? a : b, j->id, m->hosts.s[x->host]);
            return pflex_error_set(err, "%s:%u: job %s: GPU %d of host '%s' listed twice",
                                   file, a > b ? a : b, j->id, (int)x->gpu,
                                   m->hosts.s[x->host]);
        }
    if (j->has_hosts) {
        if (j->nhosts)
            qsort(j->hosts, j->nhosts, sizeof *j->hosts, cmp_u32);
        for (size_t i = 1; i < j->nhosts; i++)
            if (j->hosts[i] == j->hosts[i - 1])
                return pflex_error_set(err, "%s:%u: job %s: host '%s' twice in its node list",
                                       file, j->line, j->id, m->hosts.s[j->hosts[i]]);
    }
    return 0;
}

static int same_entries(const struct job *a, const struct job *b)
{
    if (a->ne != b->ne)
        return 0;
    for (size_t i = 0; i < a->ne; i++)
        if (a->e[i].host != b->e[i].host || a->e[i].gpu != b->e[i].gpu)
            return 0;
    return 1;
}

/* Merge j (finished; ownership taken whatever happens) into m. */
static int merge_job(pflex_jobmap_t *m, struct job *j, pflex_error_t *err)
{
    int added, rc = -1;
    if (m->njobs == m->capjobs) {
        size_t nc = m->capjobs ? m->capjobs * 2 : 16;
        struct job *nj = realloc(m->jobs, nc * sizeof *nj);
        if (!nj) {
            pflex_error_set(err, "%s:%u: out of memory", j->src, j->line);
            goto done;
        }
        m->jobs = nj;
        m->capjobs = nc;
    }
    long k = strtab_intern(&m->ids, j->id, strlen(j->id), &added);
    if (k < 0) {
        pflex_error_set(err, "%s:%u: out of memory", j->src, j->line);
        goto done;
    }
    if (added) {        /* ids and jobs stay parallel: the id is ids.s[njobs] */
        m->jobs[m->njobs++] = *j;
        memset(j, 0, sizeof *j);
        return 0;
    }
    struct job *o = &m->jobs[k];
    if (*o->name && *j->name && strcmp(o->name, j->name)) {
        pflex_error_set(err, "%s:%u: job %s is named '%s' here but '%s' in %s:%u", j->src,
                        j->line, j->id, j->name, o->name, o->src, o->line);
        goto done;
    }
    if (!o->running && j->running) {
        /* it started between the two listings: the running record wins */
        struct job t = *o;
        m->entries -= o->ne;
        *o = *j;
        memset(j, 0, sizeof *j);
        if (!*o->name && *t.name) {
            free(o->name);
            o->name = t.name;
            t.name = NULL;
        }
        job_fini(&t);
        return 0;
    }
    if (!j->running) {      /* ended since: the running record stands */
        rc = 0;
        goto done;
    }
    if (o->has_hosts && j->has_hosts
        && (o->nhosts != j->nhosts
                || (o->nhosts && memcmp(o->hosts, j->hosts, o->nhosts * sizeof *o->hosts)))) {
        pflex_error_set(err, "%s:%u: job %s runs on other hosts than in %s:%u", j->src,
                        j->line, j->id, o->src, o->line);
        goto done;
    }
    if (o->detail && j->detail && !same_entries(o, j)) {
        pflex_error_set(err, "%s:%u: job %s has other GPUs than in %s:%u", j->src, j->line,
                        j->id, o->src, o->line);
        goto done;
    }
    if (!*o->name && *j->name) {
        free(o->name);
        o->name = j->name;
        j->name = NULL;
    }
    if (j->detail && !o->detail) {
        m->entries -= o->ne;
        free(o->e);
        o->e = j->e;
        o->ne = j->ne;
        o->cape = j->cape;
        o->detail = 1;
        o->src = j->src;
        o->line = j->line;
        j->e = NULL;
        j->ne = 0;
    }
    if (j->has_hosts && !o->has_hosts) {
        free(o->hosts);
        o->hosts = j->hosts;
        o->nhosts = j->nhosts;
        o->has_hosts = 1;
        j->hosts = NULL;
    }
    rc = 0;
done:
    m->entries -= j->ne;
    job_fini(j);
    return rc;
}

static const char *src_name(pflex_jobmap_t *m, const char *name, pflex_error_t *err)
{
    long k = strtab_intern(&m->srcs, name, strlen(name), NULL);
    if (k < 0) {
        pflex_error_set(err, "%s: out of memory", name);
        return NULL;
    }
    return m->srcs.s[k];
}

/* ---- hostlists and index lists ------------------------------------------- */

struct group {          /* one bracket group: ranges lo..hi with a width */
    size_t first, count;
};
struct range {
    unsigned long lo, hi;
    int width;
};

/* Parse the ranges of "[...]" body s[0..n) into r[], bounded by rcap.
 * Returns the number of values, or 0 with err. */
static unsigned long parse_ranges(const char *s, size_t n, struct range *r, size_t rcap,
                                  size_t *nr, pflex_error_t *err)
{
    unsigned long total = 0;
    size_t i = 0;
    *nr = 0;
    while (i <= n) {
        size_t a = i;
        while (i < n && isdigit((unsigned char)s[i]))
            i++;
        size_t la = i - a, b = i, lb = 0;
        if (i < n && s[i] == '-') {
            b = ++i;
            while (i < n && isdigit((unsigned char)s[i]))
                i++;
            lb = i - b;
            if (!lb) {
                pflex_error_set(err, "a range has no upper bound");
                return 0;
            }
        }
        if (!la || (i < n && s[i] != ',')) {
            pflex_error_set(err, "'[%.*s]' is not a list of numbers and ranges",
                            (int)(n > 40 ? 40 : n), s);
            return 0;
        }
        if (la > 9 || lb > 9) {
            pflex_error_set(err, "a number in '[...]' has more than 9 digits");
            return 0;
        }
        if (*nr == rcap) {
            pflex_error_set(err, "too many ranges in one '[...]'");
            return 0;
        }
        struct range *x = &r[(*nr)++];
        x->lo = (unsigned long)num(s + a, la);
        x->hi = lb ? (unsigned long)num(s + b, lb) : x->lo;
        x->width = (int)la;
        if (x->hi < x->lo) {
            pflex_error_set(err, "range %lu-%lu runs backwards", x->lo, x->hi);
            return 0;
        }
        total += x->hi - x->lo + 1;
        if (total > PFLEX_SLURM_MAX_HOSTS) {
            pflex_error_set(err, "a '[...]' expands to more than %d values",
                            PFLEX_SLURM_MAX_HOSTS);
            return 0;
        }
        i++;    /* past ',' (or the end) */
    }
    return total;
}

void pflex_slurm_hostlist_free(char **hosts, size_t n)
{
    if (!hosts)
        return;
    for (size_t i = 0; i < n; i++)
        free(hosts[i]);
    free(hosts);
}

#define MAX_GROUPS 8
#define MAX_RANGES 256

/* Expand one expression e[0..n) (no top-level comma) onto out. */
static int expand_one(const char *e, size_t n, size_t max, char ***out, size_t *nout,
                      size_t *cap, pflex_error_t *err)
{
    struct range r[MAX_RANGES];
    struct group g[MAX_GROUPS];
    size_t lit_off[MAX_GROUPS + 1], lit_len[MAX_GROUPS + 1];
    size_t ng = 0, nrt = 0, i = 0;
    unsigned long product = 1;
    char eb[48];
    if (!n)
        return pflex_error_set(err, "empty host name in the list");
    for (;;) {
        size_t a = i;
        while (i < n && e[i] != '[') {
            if (!host_char((unsigned char)e[i]))
                return pflex_error_set(err, "'%s': '%c' is not allowed in a host name",
                                       excerpt(eb, e, n), isprint((unsigned char)e[i])
                                       ? e[i] : '?');
            i++;
        }
        lit_off[ng] = a;
        lit_len[ng] = i - a;
        if (i == n)
            break;
        if (ng == MAX_GROUPS)
            return pflex_error_set(err, "'%s': more than %d '[...]' groups",
                                   excerpt(eb, e, n), MAX_GROUPS);
        size_t b = ++i;
        while (i < n && e[i] != ']' && e[i] != '[')
            i++;
        if (i == n || e[i] != ']')
            return pflex_error_set(err, "'%s': '[' without ']'", excerpt(eb, e, n));
        size_t k;
        unsigned long c = parse_ranges(e + b, i - b, r + nrt, MAX_RANGES - nrt, &k, err);
        if (!c)
            return -1;
        g[ng].first = nrt;
        g[ng].count = k;
        nrt += k;
        product *= c;
        if (product > max || *nout + product > max)
            return pflex_error_set(err, "the list expands to more than %zu hosts", max);
        ng++;
        i++;    /* past ']' */
    }
    if (*nout + product > max)
        return pflex_error_set(err, "the list expands to more than %zu hosts", max);
    size_t len = 0;
    for (size_t q = 0; q <= ng; q++)
        len += lit_len[q];
    for (size_t q = 0; q < ng; q++) {
        int w = 0;
        for (size_t t = 0; t < g[q].count; t++) {
            const struct range *x = &r[g[q].first + t];
            int dw = 1;
            for (unsigned long v = x->hi; v >= 10; v /= 10)
                dw++;
            if (x->width > dw)
                dw = x->width;
            if (dw > w)
                w = dw;
        }
        len += (size_t)w;
    }
    if (len > MAX_HOST_LEN)
        return pflex_error_set(err, "'%s': host names longer than %d bytes",
                               excerpt(eb, e, n), MAX_HOST_LEN);
    if (*nout + product > *cap) {
        size_t nc = *cap ? *cap : 16;
        while (nc < *nout + product)
            nc *= 2;
        char **no = realloc(*out, nc * sizeof *no);
        if (!no)
            return pflex_error_set(err, "out of memory");
        *out = no;
        *cap = nc;
    }
    /* odometer over the groups: pos[q] = (range index, value) */
    size_t ri[MAX_GROUPS] = {0};
    unsigned long val[MAX_GROUPS];
    for (size_t q = 0; q < ng; q++)
        val[q] = r[g[q].first].lo;
    for (unsigned long c = 0; c < product; c++) {
        char name[MAX_HOST_LEN + 16];
        size_t p = 0;
        for (size_t q = 0; q <= ng; q++) {
            memcpy(name + p, e + lit_off[q], lit_len[q]);
            p += lit_len[q];
            if (q < ng)
                p += (size_t)sprintf(name + p, "%0*lu", r[g[q].first + ri[q]].width, val[q]);
        }
        char *d = dup_n(name, p);
        if (!d)
            return pflex_error_set(err, "out of memory");
        (*out)[(*nout)++] = d;
        for (size_t q = ng; q-- > 0;) {     /* the last group turns fastest */
            const struct range *x = &r[g[q].first + ri[q]];
            if (val[q] < x->hi) {
                val[q]++;
                break;
            }
            if (ri[q] + 1 < g[q].count) {
                ri[q]++;
                val[q] = r[g[q].first + ri[q]].lo;
                break;
            }
            ri[q] = 0;
            val[q] = r[g[q].first].lo;
        }
    }
    return 0;
}

int pflex_slurm_hostlist_expand(const char *list, size_t len, size_t max, char ***hosts,
                                size_t *n, pflex_error_t *err)
{
    char **out = NULL;
    size_t nout = 0, cap = 0, i = 0;
    *hosts = NULL;
    *n = 0;
    if (max > PFLEX_SLURM_MAX_HOSTS)
        max = PFLEX_SLURM_MAX_HOSTS;
    if (len == 0 || (len == 6 && memcmp(list, "(null)", 6) == 0))
        return 0;
    while (i <= len) {
        size_t a = i;
        int depth = 0;
        while (i < len && (depth || list[i] != ',')) {
            if (list[i] == '[')
                depth++;
            else if (list[i] == ']' && depth)
                depth--;
            i++;
        }
        if (expand_one(list + a, i - a, max, &out, &nout, &cap, err) < 0) {
            pflex_slurm_hostlist_free(out, nout);
            return -1;
        }
        i++;
    }
    *hosts = out;
    *n = nout;
    return 0;
}

/* An index list "0-7", "0,2-3" into set[] (PFLEX_SLURM_MAX_GPUS flags);
 * returns the count or -1 with err. */
static int parse_idx(const char *s, size_t n, unsigned char *set, pflex_error_t *err)
{
    struct range r[MAX_RANGES];
    size_t nr;
    int count = 0;
    if (n == 3 && memcmp(s, "N/A", 3) == 0)
        return 0;
    if (!parse_ranges(s, n, r, MAX_RANGES, &nr, err))
        return -1;
    for (size_t k = 0; k < nr; k++) {
        if (r[k].hi >= PFLEX_SLURM_MAX_GPUS)
            return pflex_error_set(err, "GPU index %lu is not below %d", r[k].hi,
                                   PFLEX_SLURM_MAX_GPUS);
        for (unsigned long v = r[k].lo; v <= r[k].hi; v++) {
            if (set[v])
                return pflex_error_set(err, "GPU index %lu given twice", v);
            set[v] = 1;
            count++;
        }
    }
    return count;
}

/* GPUs of one node from a GRES detail ("gpu:h200:8(IDX:0-7)", several
 * entries comma-separated, other GRES ignored).  Returns the number of GPUs
 * with their indices in set[], or -2 when a gpu entry names no indices
 * ("(CNT:2)" or no parenthesis), or -1 with err. */
static int parse_gres(const char *s, size_t n, unsigned char *set, pflex_error_t *err)
{
    size_t i = 0;
    int total = 0, unknown = 0;
    char eb[48];
    memset(set, 0, PFLEX_SLURM_MAX_GPUS);
    if (n == 0 || (n == 6 && memcmp(s, "(null)", 6) == 0))
        return 0;
    while (i < n) {
        size_t a = i;
        int depth = 0;
        while (i < n && (depth || s[i] != ',')) {
            if (s[i] == '(')
                depth++;
            else if (s[i] == ')' && depth)
                depth--;
            i++;
        }
        const char *e = s + a;
        size_t el = i - a, k = 0;
        i++;
        while (k < el && e[k] != ':' && e[k] != '(')
            k++;
        if (k == 0)
            return pflex_error_set(err, "GRES '%s' has an empty name", excerpt(eb, s, n));
        if (k != 3 || memcmp(e, "gpu", 3))
            continue;
        size_t p = k;
        while (p < el && e[p] != '(')
            p++;
        /* the count: the last ':' field before '(' when it is a number */
        long count = -1;
        size_t c = p;
        while (c > k && isdigit((unsigned char)e[c - 1]))
            c--;
        if (c < p && e[c - 1] == ':' && p - c <= 6)
            count = num(e + c, p - c);
        if (p == el) {
            if (count != 0)
                unknown = 1;
            continue;
        }
        if (e[el - 1] != ')')
            return pflex_error_set(err, "GRES '%s': '(' without ')'", excerpt(eb, e, el));
        const char *in = e + p + 1;
        size_t inl = el - p - 2;
        if (inl >= 4 && memcmp(in, "CNT:", 4) == 0) {
            unknown = 1;
            continue;
        }
        if (inl < 4 || memcmp(in, "IDX:", 4))
            return pflex_error_set(err, "GRES '%s': expected (IDX:...) or (CNT:...)",
                                   excerpt(eb, e, el));
        unsigned char one[PFLEX_SLURM_MAX_GPUS] = {0};
        int got = parse_idx(in + 4, inl - 4, one, err);
        if (got < 0)
            return -1;
        if (count >= 0 && count != got)
            return pflex_error_set(err, "GRES '%s' counts %ld GPUs but lists %d",
                                   excerpt(eb, e, el), count, got);
        for (int g = 0; g < PFLEX_SLURM_MAX_GPUS; g++)
            if (one[g]) {
                if (set[g])
                    return pflex_error_set(err, "GRES '%s': GPU %d given twice",
                                           excerpt(eb, s, n), g);
                set[g] = 1;
            }
        total += got;
    }
    return unknown ? -2 : total;
}

/* ---- building one job ------------------------------------------------------- */

static int set_hosts(pflex_jobmap_t *m, struct job *j, const char *list, size_t len,
                     const char *file, unsigned line, pflex_error_t *err)
{
    char **h;
    size_t n;
    pflex_error_t e2;
    if (pflex_slurm_hostlist_expand(list, len, PFLEX_SLURM_MAX_HOSTS, &h, &n, &e2) < 0)
        return pflex_error_set(err, "%s:%u: job %s: node list: %s", file, line, j->id,
                               e2.text);
    free(j->hosts);
    j->hosts = n ? malloc(n * sizeof *j->hosts) : NULL;
    if (n && !j->hosts) {
        pflex_slurm_hostlist_free(h, n);
        return pflex_error_set(err, "%s:%u: out of memory", file, line);
    }
    for (size_t i = 0; i < n; i++) {
        long k = strtab_intern(&m->hosts, h[i], strlen(h[i]), NULL);
        if (k < 0) {
            pflex_slurm_hostlist_free(h, n);
            return pflex_error_set(err, "%s:%u: out of memory", file, line);
        }
        j->hosts[i] = (uint32_t)k;
    }
    j->nhosts = n;
    j->has_hosts = 1;
    pflex_slurm_hostlist_free(h, n);
    return 0;
}

/* Entries for host id h from a GRES detail. */
static int add_gres(pflex_jobmap_t *m, struct job *j, uint32_t h, const char *g, size_t gl,
                    const char *file, unsigned line, int *gpus, pflex_error_t *err)
{
    unsigned char set[PFLEX_SLURM_MAX_GPUS];
    pflex_error_t e2;
    int got = parse_gres(g, gl, set, &e2);
    if (got == -1)
        return pflex_error_set(err, "%s:%u: job %s: %s", file, line, j->id, e2.text);
    if (got == -2) {
        *gpus = -1;
        return add_entry(m, j, h, -1, line, file, err);
    }
    for (int k = 0; k < PFLEX_SLURM_MAX_GPUS; k++)
        if (set[k] && add_entry(m, j, h, k, line, file, err) < 0)
            return -1;
    if (*gpus >= 0)
        *gpus += got;
    return 0;
}

static int set_id(struct job *j, const char *s, size_t n, const char *file, unsigned line,
                  int digits_only, pflex_error_t *err)
{
    char eb[48];
    if (!n || n > MAX_ID_LEN)
        return pflex_error_set(err, "%s:%u: job id '%s' is empty or too long", file, line,
                               excerpt(eb, s, n));
    for (size_t i = 0; i < n; i++)
        if (digits_only ? !isdigit((unsigned char)s[i]) : !id_char((unsigned char)s[i]))
            return pflex_error_set(err, "%s:%u: job id '%s' is not %s", file, line,
                                   excerpt(eb, s, n), digits_only ? "a number (squeue: use "
                                   "%A, the job id, not %i)" : "a job id");
    if (!(j->id = dup_n(s, n)))
        return pflex_error_set(err, "%s:%u: out of memory", file, line);
    return 0;
}

static int set_name(struct job *j, const char *s, size_t n, const char *file, unsigned line,
                    pflex_error_t *err)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    if (n == 6 && memcmp(s, "(null)", 6) == 0)
        n = 0;
    if (n > PFLEX_SLURM_MAX_NAME)
        return pflex_error_set(err, "%s:%u: job %s: name longer than %d bytes", file, line,
                               j->id ? j->id : "?", PFLEX_SLURM_MAX_NAME);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return pflex_error_set(err, "%s:%u: job %s: a control character in its name",
                                   file, line, j->id ? j->id : "?");
    free(j->name);
    if (!(j->name = dup_n(s, n)))
        return pflex_error_set(err, "%s:%u: out of memory", file, line);
    return 0;
}

static int state_running(const char *s, size_t n)
{
    return n == 7 && memcmp(s, "RUNNING", 7) == 0;
}

/* No GPU detail: one unknown entry per host. */
static int unknown_entries(pflex_jobmap_t *m, struct job *j, const char *file,
                           pflex_error_t *err)
{
    for (size_t i = 0; i < j->nhosts; i++)
        if (add_entry(m, j, j->hosts[i], -1, j->line, file, err) < 0)
            return -1;
    return 0;
}

/* ---- squeue text ------------------------------------------------------------ */

static int read_squeue_text(pflex_jobmap_t *m, const char *buf, size_t len, const char *file,
                            pflex_error_t *err)
{
    const char *p = buf, *end = buf + len;
    unsigned line = 0;
    char eb[48];
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        size_t n = (size_t)(le - p);
        if (n && p[n - 1] == '\r')
            n--;
        const char *s = p;
        p = nl ? nl + 1 : end;
        size_t b = 0;
        while (b < n && (s[b] == ' ' || s[b] == '\t'))
            b++;
        if (b == n || s[b] == '#')     /* blank, or a comment of ours */
            continue;
        const char *f[5];
        size_t fl[5], k = 0, a = b;
        for (size_t i = b; i <= n && k < 5; i++)
            if (i == n || (s[i] == '|' && k < 4)) {
                f[k] = s + a;
                fl[k++] = i - a;
                a = i + 1;
            }
        if (k < 5)
            return pflex_error_set(err, "%s:%u: %zu '|'-separated fields, expected 5 "
                                   "(squeue --noheader -o '%%A|%%T|%%D|%%N|%%j')", file, line,
                                   k);
        if (line == 1 && fl[0] == 5 && memcmp(f[0], "JOBID", 5) == 0)
            continue;       /* a header: squeue without --noheader */
        struct job j = {0};
        j.src = file;
        j.line = line;
        if (set_id(&j, f[0], fl[0], file, line, 1, err) < 0
            || set_name(&j, f[4], fl[4], file, line, err) < 0)
            goto fail;
        j.running = state_running(f[1], fl[1]);
        for (size_t i = 0; i < fl[1]; i++)
            if (!isupper((unsigned char)f[1][i]) && f[1][i] != '_') {
                pflex_error_set(err, "%s:%u: job %s: state '%s' is not a Slurm job state",
                                file, line, j.id, excerpt(eb, f[1], fl[1]));
                goto fail;
            }
        if (j.running) {
            if (set_hosts(m, &j, f[3], fl[3], file, line, err) < 0)
                goto fail;
            long nn = num(f[2], fl[2]);
            if (nn < 0) {
                pflex_error_set(err, "%s:%u: job %s: node count '%s' is not a number", file,
                                line, j.id, excerpt(eb, f[2], fl[2]));
                goto fail;
            }
            if ((size_t)nn != j.nhosts) {
                pflex_error_set(err, "%s:%u: job %s: %ld nodes but its node list has %zu",
                                file, line, j.id, nn, j.nhosts);
                goto fail;
            }
            if (unknown_entries(m, &j, file, err) < 0)
                goto fail;
        }
        if (job_finish(m, &j, file, err) < 0 || merge_job(m, &j, err) < 0)
            goto fail;
        continue;
fail:
        m->entries -= j.ne;
        job_fini(&j);
        return -1;
    }
    return 0;
}

/* ---- squeue --json ------------------------------------------------------------ */

/* The line of each "job_id" key in the text, in order: where each job of
 * jobs[] starts (one pass; lines[k] = 1 past the ones found). */
static void json_job_lines(const char *buf, size_t len, unsigned *lines, size_t nlines)
{
    unsigned line = 1;
    size_t seen = 0;
    for (size_t k = 0; k < nlines; k++)
        lines[k] = 1;
    for (size_t i = 0; i + 8 <= len && seen < nlines; i++) {
        if (buf[i] == '\n')
            line++;
        else if (buf[i] == '"' && memcmp(buf + i, "\"job_id\"", 8) == 0)
            lines[seen++] = line;
    }
}

/* An integer that is plain (v0.0.39) or {"set": true, "number": N} (v0.0.40+). */
static int json_number(json_t *v, long long *out)
{
    if (json_is_object(v)) {
        json_t *set = json_object_get(v, "set");
        if (set && !json_is_true(set))
            return -1;
        v = json_object_get(v, "number");
    }
    if (!json_is_integer(v))
        return -1;
    *out = json_integer_value(v);
    return 0;
}

static int read_squeue_json(pflex_jobmap_t *m, const char *buf, size_t len, const char *file,
                            pflex_error_t *err)
{
    json_error_t je;
    json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return pflex_error_set(err, "%s:%d: %s", file, je.line > 0 ? je.line : 1, je.text);
    json_t *jobs = json_object_get(doc, "jobs");
    unsigned *lines = NULL;
    int rc = -1;
    if (!json_is_array(jobs)) {
        pflex_error_set(err, "%s:1: no \"jobs\" array (expected squeue --json output)", file);
        goto done;
    }
    size_t nj = json_array_size(jobs);
    lines = malloc((nj ? nj : 1) * sizeof *lines);
    if (!lines) {
        pflex_error_set(err, "%s: out of memory", file);
        goto done;
    }
    json_job_lines(buf, len, lines, nj);
    for (size_t k = 0; k < nj; k++) {
        json_t *o = json_array_get(jobs, k);
        unsigned line = lines[k];
        struct job j = {0};
        j.src = file;
        j.line = line;
        long long id;
        char idb[32];
        if (!json_is_object(o) || json_number(json_object_get(o, "job_id"), &id) < 0 || id < 0
            || id > 4294967295LL) {
            pflex_error_set(err, "%s:%u: jobs[%zu]: no \"job_id\" number", file, line, k);
            goto fail;
        }
        snprintf(idb, sizeof idb, "%lld", id);
        if (set_id(&j, idb, strlen(idb), file, line, 1, err) < 0)
            goto fail;
        json_t *nm = json_object_get(o, "name");
        if (nm && !json_is_string(nm)) {
            pflex_error_set(err, "%s:%u: job %s: \"name\" is not a string", file, line, j.id);
            goto fail;
        }
        if (set_name(&j, nm ? json_string_value(nm) : "", nm ? json_string_length(nm) : 0,
                     file, line, err) < 0)
            goto fail;
        json_t *st = json_object_get(o, "job_state");   /* ["RUNNING"] or "RUNNING" */
        if (json_is_array(st)) {
            for (size_t q = 0; q < json_array_size(st); q++) {
                json_t *x = json_array_get(st, q);
                if (json_is_string(x) && strcmp(json_string_value(x), "RUNNING") == 0)
                    j.running = 1;
            }
        } else if (json_is_string(st)) {
            j.running = strcmp(json_string_value(st), "RUNNING") == 0;
        } else {
            pflex_error_set(err, "%s:%u: job %s: no \"job_state\"", file, line, j.id);
            goto fail;
        }
        if (j.running) {
            json_t *nodes = json_object_get(o, "nodes");
            if (!json_is_string(nodes)) {
                pflex_error_set(err, "%s:%u: job %s: no \"nodes\" string", file, line, j.id);
                goto fail;
            }
            if (set_hosts(m, &j, json_string_value(nodes), json_string_length(nodes), file,
                          line, err) < 0)
                goto fail;
            long long nc;
            if (json_number(json_object_get(o, "node_count"), &nc) == 0
                && nc != (long long)j.nhosts) {
                pflex_error_set(err, "%s:%u: job %s: node_count %lld but \"nodes\" has %zu",
                                file, line, j.id, nc, j.nhosts);
                goto fail;
            }
            json_t *gd = json_object_get(o, "gres_detail");
            if (!gd) {
                if (unknown_entries(m, &j, file, err) < 0)
                    goto fail;
            } else if (!json_is_array(gd)
                       || (json_array_size(gd) && json_array_size(gd) != j.nhosts)) {
                pflex_error_set(err, "%s:%u: job %s: \"gres_detail\" is not an array of one "
                                "string per node (%zu nodes)", file, line, j.id, j.nhosts);
                goto fail;
            } else {
                /* gres_detail[i] belongs to the i-th node of "nodes" */
                char **h;
                size_t n;
                pflex_error_t e2;
                if (pflex_slurm_hostlist_expand(json_string_value(nodes),
                                                json_string_length(nodes),
                                                PFLEX_SLURM_MAX_HOSTS, &h, &n, &e2) < 0) {
                    pflex_error_set(err, "%s:%u: %s", file, line, e2.text);
                    goto fail;
                }
                int gpus = 0, bad = 0;
                for (size_t q = 0; q < json_array_size(gd) && !bad; q++) {
                    json_t *x = json_array_get(gd, q);
                    long hk = strtab_intern(&m->hosts, h[q], strlen(h[q]), NULL);
                    if (!json_is_string(x)) {
                        pflex_error_set(err, "%s:%u: job %s: gres_detail[%zu] is not a "
                                        "string", file, line, j.id, q);
                        bad = 1;
                    } else if (hk < 0) {
                        pflex_error_set(err, "%s:%u: out of memory", file, line);
                        bad = 1;
                    } else if (add_gres(m, &j, (uint32_t)hk, json_string_value(x),
                                        json_string_length(x), file, line, &gpus, err) < 0) {
                        bad = 1;
                    }
                }
                pflex_slurm_hostlist_free(h, n);
                if (bad)
                    goto fail;
                j.detail = 1;
            }
        }
        if (job_finish(m, &j, file, err) < 0 || merge_job(m, &j, err) < 0)
            goto fail;
        continue;
fail:
        m->entries -= j.ne;
        job_fini(&j);
        goto done;
    }
    rc = 0;
done:
    free(lines);
    json_decref(doc);
    return rc;
}

int pflex_slurm_squeue_read_mem(pflex_jobmap_t *m, const char *buf, size_t len,
                                const char *name, pflex_error_t *err)
{
    const char *file = name ? name : "-";
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    free(m->rows);
    m->rows = NULL;
    m->nrows = 0;
    if (!(file = src_name(m, file, err)))
        return -1;
    if (i < len && buf[i] == '{')
        return read_squeue_json(m, buf, len, file, err);
    return read_squeue_text(m, buf, len, file, err);
}

/* ---- scontrol show job -d ------------------------------------------------------ */

struct tok {
    const char *k, *v;
    size_t kl, vl;
};

/* Next KEY=VALUE token of the line s[*i..n).  Returns 1, 0 at the end of the
 * line, -1 for a word without '='. */
static int next_tok(const char *s, size_t n, size_t *i, struct tok *t)
{
    while (*i < n && (s[*i] == ' ' || s[*i] == '\t'))
        (*i)++;
    if (*i >= n)
        return 0;
    size_t a = *i;
    while (*i < n && s[*i] != ' ' && s[*i] != '\t')
        (*i)++;
    const char *eq = memchr(s + a, '=', *i - a);
    t->k = s + a;
    if (!eq) {
        t->kl = *i - a;
        t->v = NULL;
        t->vl = 0;
        return -1;
    }
    t->kl = (size_t)(eq - (s + a));
    t->v = eq + 1;
    t->vl = (size_t)(s + *i - t->v);
    return 1;
}

static int key_is(const struct tok *t, const char *k)
{
    return t->kl == strlen(k) && memcmp(t->k, k, t->kl) == 0;
}

/* gres/gpu=N out of a TRES list "cpu=8,mem=64G,node=1,gres/gpu=8"; -1 when
 * absent. */
static long tres_gpus(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t a = i;
        while (i < n && s[i] != ',')
            i++;
        if (i - a > 9 && memcmp(s + a, "gres/gpu=", 9) == 0) {
            long v = 0;
            size_t q = a + 9;
            if (q == i || i - q > 7)
                return -1;
            for (; q < i; q++) {
                if (!isdigit((unsigned char)s[q]))
                    return -1;
                v = v * 10 + (s[q] - '0');
            }
            return v;
        }
        i++;
    }
    return -1;
}

struct srec {           /* one scontrol record being read */
    struct job j;
    int have_state, in_use;
    long tres;          /* gres/gpu of AllocTRES (or TRES), -1 unknown */
    int tres_alloc;     /* tres came from AllocTRES */
    long num_nodes;
    unsigned nodelist_line;
    const char *nodelist;
    size_t nodelist_len;
    int groups;         /* detail lines */
    int gpus;           /* GPUs with indices, -1 when some are unknown */
    uint32_t *covered;  /* hosts named by detail lines */
    size_t ncovered, capcovered;
    uint32_t pending_hosts_from, pending_hosts_to;   /* the last Nodes= group */
    unsigned pending_line;
    int pending;        /* a Nodes= group still waiting for its GRES= */
    char **group_hosts;
    size_t ngroup_hosts;
};

static void srec_reset(struct srec *r)
{
    job_fini(&r->j);
    free(r->covered);
    pflex_slurm_hostlist_free(r->group_hosts, r->ngroup_hosts);
    memset(r, 0, sizeof *r);
    r->tres = -1;
    r->num_nodes = -1;
}

/* The GRES of the pending Nodes= group (empty: no GRES on those nodes;
 * NULL: the line has no GRES= field, the GPUs are unknown). */
static int close_group(pflex_jobmap_t *m, struct srec *r, const char *g, size_t gl,
                       const char *file, pflex_error_t *err)
{
    if (!r->pending)
        return 0;
    r->pending = 0;
    for (size_t q = 0; q < r->ngroup_hosts; q++) {
        long hk = strtab_intern(&m->hosts, r->group_hosts[q], strlen(r->group_hosts[q]), NULL);
        int bad;
        if (hk < 0)
            return pflex_error_set(err, "%s:%u: out of memory", file, r->pending_line);
        if (r->ncovered == r->capcovered) {
            size_t nc = r->capcovered ? r->capcovered * 2 : 16;
            uint32_t *nv = realloc(r->covered, nc * sizeof *nv);
            if (!nv)
                return pflex_error_set(err, "%s:%u: out of memory", file, r->pending_line);
            r->covered = nv;
            r->capcovered = nc;
        }
        r->covered[r->ncovered++] = (uint32_t)hk;
        if (!g) {       /* a detail line without GRES= (before Slurm 17.11): unknown */
            r->gpus = -1;
            bad = add_entry(m, &r->j, (uint32_t)hk, -1, r->pending_line, file, err);
        } else {
            bad = add_gres(m, &r->j, (uint32_t)hk, g, gl, file, r->pending_line, &r->gpus,
                           err);
        }
        if (bad < 0)
            return -1;
    }
    pflex_slurm_hostlist_free(r->group_hosts, r->ngroup_hosts);
    r->group_hosts = NULL;
    r->ngroup_hosts = 0;
    return 0;
}

static int finish_record(pflex_jobmap_t *m, struct srec *r, const char *file,
                         pflex_error_t *err)
{
    struct job *j = &r->j;
    if (!r->in_use)
        return 0;
    if (close_group(m, r, NULL, 0, file, err) < 0)
        return -1;
    if (!r->have_state)
        return pflex_error_set(err, "%s:%u: job %s has no JobState=", file, j->line, j->id);
    if (!j->name && set_name(j, "", 0, file, j->line, err) < 0)
        return -1;
    if (j->running) {
        if (!r->nodelist)
            return pflex_error_set(err, "%s:%u: running job %s has no NodeList=", file,
                                   j->line, j->id);
        if (set_hosts(m, j, r->nodelist, r->nodelist_len, file, r->nodelist_line, err) < 0)
            return -1;
        if (r->num_nodes >= 0 && (size_t)r->num_nodes != j->nhosts)
            return pflex_error_set(err, "%s:%u: job %s: NumNodes=%ld but its NodeList has "
                                   "%zu hosts", file, r->nodelist_line, j->id, r->num_nodes,
                                   j->nhosts);
        if (r->groups) {
            if (j->nhosts)
                qsort(j->hosts, j->nhosts, sizeof *j->hosts, cmp_u32);
            if (r->ncovered)
                qsort(r->covered, r->ncovered, sizeof *r->covered, cmp_u32);
            for (size_t q = 0; q < r->ncovered; q++) {
                if (!job_in_hosts(j, r->covered[q]))
                    return pflex_error_set(err, "%s:%u: job %s: detail line names host '%s', "
                                           "which is not in its NodeList", file, j->line,
                                           j->id, m->hosts.s[r->covered[q]]);
                if (q && r->covered[q] == r->covered[q - 1])
                    return pflex_error_set(err, "%s:%u: job %s: host '%s' is on two detail "
                                           "lines", file, j->line, j->id,
                                           m->hosts.s[r->covered[q]]);
            }
            if (r->ncovered != j->nhosts)
                return pflex_error_set(err, "%s:%u: job %s: %zu of its %zu hosts have no "
                                       "Nodes= detail line", file, j->line, j->id,
                                       j->nhosts - r->ncovered, j->nhosts);
            j->detail = 1;
            if (r->gpus >= 0 && r->tres >= 0 && r->tres != r->gpus)
                return pflex_error_set(err, "%s:%u: job %s: %s gres/gpu=%ld but its detail "
                                       "lines list %d GPUs", file, j->line, j->id,
                                       r->tres_alloc ? "AllocTRES" : "TRES", r->tres,
                                       r->gpus);
        } else if (unknown_entries(m, j, file, err) < 0) {
            return -1;
        }
    }
    if (job_finish(m, j, file, err) < 0)
        return -1;
    int rc = merge_job(m, j, err);
    srec_reset(r);
    return rc;
}

/* Is this line the start of a record ("JobId=" its first token)? */
static int starts_record(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return n - i >= 6 && memcmp(s + i, "JobId=", 6) == 0;
}

int pflex_slurm_scontrol_read_mem(pflex_jobmap_t *m, const char *buf, size_t len,
                                  const char *name, pflex_error_t *err)
{
    const char *file = name ? name : "-";
    const char *p = buf, *end = buf + len;
    unsigned line = 0;
    struct srec r;
    char eb[48];
    memset(&r, 0, sizeof r);
    srec_reset(&r);
    free(m->rows);
    m->rows = NULL;
    m->nrows = 0;
    if (!(file = src_name(m, file, err)))
        return -1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *s = p;
        size_t n = (size_t)((nl ? nl : end) - p);
        p = nl ? nl + 1 : end;
        line++;
        if (n && s[n - 1] == '\r')
            n--;
        size_t b = 0;
        while (b < n && (s[b] == ' ' || s[b] == '\t'))
            b++;
        if (b == n) {                       /* a blank line ends a record */
            if (finish_record(m, &r, file, err) < 0)
                goto fail;
            continue;
        }
        if (s[b] == '#')                    /* a comment of ours, never Slurm's */
            continue;
        if (starts_record(s, n)) {
            if (finish_record(m, &r, file, err) < 0)
                goto fail;
            r.in_use = 1;
            r.j.src = file;
            r.j.line = line;
        } else if (!r.in_use) {
            if (n - b == 21 && memcmp(s + b, "No jobs in the system", 21) == 0)
                continue;
            pflex_error_set(err, "%s:%u: '%s' is not part of a job record (expected "
                            "'JobId=...', the output of scontrol show job -d)", file, line,
                            excerpt(eb, s + b, n - b));
            goto fail;
        }
        size_t i = 0;
        struct tok t;
        int got;
        while ((got = next_tok(s, n, &i, &t)) != 0) {
            if (got < 0) {
                /* a word without '=': part of a value with spaces we do not read
                 * (Command=, WorkDir=, Comment=...); ignored */
                continue;
            }
            if (key_is(&t, "JobId")) {
                if (r.j.id) {
                    pflex_error_set(err, "%s:%u: a second JobId= in one record", file, line);
                    goto fail;
                }
                if (set_id(&r.j, t.v, t.vl, file, line, 1, err) < 0)
                    goto fail;
            } else if (key_is(&t, "JobName")) {
                /* the name runs to the end of the line (it may hold spaces); one
                 * record a line (-o): to the next " UserId=" */
                size_t ve = n;
                for (size_t q = (size_t)(t.v - s); q + 8 <= n; q++)
                    if (memcmp(s + q, " UserId=", 8) == 0
                        || (q + 13 <= n && memcmp(s + q, " HetJobIdSet=", 13) == 0)) {
                        ve = q;
                        break;
                    }
                if (set_name(&r.j, t.v, ve - (size_t)(t.v - s), file, line, err) < 0)
                    goto fail;
                i = ve;
            } else if (key_is(&t, "JobState")) {
                r.j.running = state_running(t.v, t.vl);
                r.have_state = 1;
            } else if (key_is(&t, "NodeList")) {
                r.nodelist = t.v;
                r.nodelist_len = t.vl;
                r.nodelist_line = line;
            } else if (key_is(&t, "NumNodes")) {
                r.num_nodes = num(t.v, t.vl);
            } else if (key_is(&t, "AllocTRES") || (key_is(&t, "TRES") && !r.tres_alloc)) {
                r.tres = tres_gpus(t.v, t.vl);
                r.tres_alloc = key_is(&t, "AllocTRES");
            } else if (key_is(&t, "Nodes")) {
                if (!r.j.id) {
                    pflex_error_set(err, "%s:%u: Nodes= before JobId=", file, line);
                    goto fail;
                }
                if (close_group(m, &r, NULL, 0, file, err) < 0)
                    goto fail;
                pflex_error_t e2;
                if (pflex_slurm_hostlist_expand(t.v, t.vl, PFLEX_SLURM_MAX_HOSTS,
                                                &r.group_hosts, &r.ngroup_hosts, &e2) < 0) {
                    pflex_error_set(err, "%s:%u: job %s: Nodes=: %s", file, line, r.j.id,
                                    e2.text);
                    goto fail;
                }
                r.pending = 1;
                r.pending_line = line;
                r.groups++;
            } else if (key_is(&t, "Command") || key_is(&t, "WorkDir")
                       || key_is(&t, "Comment") || key_is(&t, "AdminComment")
                       || key_is(&t, "SystemComment") || key_is(&t, "Extra")
                       || key_is(&t, "StdErr") || key_is(&t, "StdIn")
                       || key_is(&t, "StdOut")) {
                /* free text that may hold spaces and "Key=" words: the rest of
                 * the line is its value, never fields of ours */
                i = n;
            } else if (key_is(&t, "GRES") || key_is(&t, "GRES_IDX")) {
                if (r.pending && close_group(m, &r, t.v, t.vl, file, err) < 0)
                    goto fail;
            }
        }
        if (!r.j.id) {
            pflex_error_set(err, "%s:%u: JobId= is not a job id", file, line);
            goto fail;
        }
    }
    if (finish_record(m, &r, file, err) < 0)
        goto fail;
    srec_reset(&r);
    return 0;
fail:
    m->entries -= r.j.ne;
    srec_reset(&r);
    return -1;
}

/* ---- the job map CSV ------------------------------------------------------------ */

int pflex_jobmap_csv_read_mem(pflex_jobmap_t *m, const char *buf, size_t len,
                              const char *name, pflex_error_t *err)
{
    const char *file = name ? name : "-";
    pflex_csv_t c;
    struct strtab ids = {0};
    struct job *jobs = NULL;
    size_t njobs = 0, capjobs = 0;
    int got, rc = -1, ci[4] = {-1, -1, -1, -1};
    static const char *const cols[4] = {"job", "name", "host", "gpu"};
    char eb[48];
    free(m->rows);
    m->rows = NULL;
    m->nrows = 0;
    if (!(file = src_name(m, file, err)))
        return -1;
    pflex_csv_init(&c, buf, len, file);
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (got == 0)
            pflex_error_set(err, "%s:1: empty file: no header row", file);
        goto done;
    }
    for (size_t f = 0; f < c.nfields; f++)
        for (int k = 0; k < 4; k++)
            if (pflex_csv_field_is(&c.fields[f], cols[k]) && ci[k] < 0)
                ci[k] = (int)f;
    for (int k = 0; k < 4; k++)
        if (k != 1 && ci[k] < 0) {
            pflex_error_set(err, "%s:%u: missing column '%s' (a job map has job,name,host,"
                            "gpu)", file, c.line, cols[k]);
            goto done;
        }
    size_t need = 0;
    for (int k = 0; k < 4; k++)
        if (ci[k] >= 0 && (size_t)ci[k] + 1 > need)
            need = (size_t)ci[k] + 1;
    while ((got = pflex_csv_next(&c, err)) == 1) {
        unsigned line = c.line;
        const struct pflex_csv_field *f = c.fields;
        if (c.nfields < need) {
            pflex_error_set(err, "%s:%u: %zu fields, the header has %zu", file, line,
                            c.nfields, need);
            goto done;
        }
        const struct pflex_csv_field *jf = &f[ci[0]], *hf = &f[ci[2]], *gf = &f[ci[3]];
        int added;
        long k = strtab_intern(&ids, jf->s, jf->len, &added);
        if (k < 0) {
            pflex_error_set(err, "%s:%u: out of memory", file, line);
            goto done;
        }
        if (added) {
            if (njobs == capjobs) {
                size_t nc = capjobs ? capjobs * 2 : 16;
                struct job *nj = realloc(jobs, nc * sizeof *nj);
                if (!nj) {
                    pflex_error_set(err, "%s:%u: out of memory", file, line);
                    goto done;
                }
                jobs = nj;
                capjobs = nc;
            }
            struct job *j = &jobs[njobs++];
            memset(j, 0, sizeof *j);
            j->src = file;
            j->line = line;
            j->running = 1;
            j->detail = 1;
            if (set_id(j, jf->s, jf->len, file, line, 0, err) < 0
                || set_name(j, ci[1] >= 0 ? f[ci[1]].s : "", ci[1] >= 0 ? f[ci[1]].len : 0,
                            file, line, err) < 0)
                goto done;
        }
        struct job *j = &jobs[k];
        if (ci[1] >= 0) {
            const struct pflex_csv_field *nf = &f[ci[1]];
            if (nf->len != strlen(j->name) || memcmp(nf->s, j->name, nf->len)) {
                pflex_error_set(err, "%s:%u: job %s is named '%s' on line %u", file, line,
                                j->id, j->name, j->line);
                goto done;
            }
        }
        if (!hf->len || hf->len > MAX_HOST_LEN) {
            pflex_error_set(err, "%s:%u: column 'host': empty or longer than %d bytes", file,
                            line, MAX_HOST_LEN);
            goto done;
        }
        for (size_t q = 0; q < hf->len; q++)
            if (!host_char((unsigned char)hf->s[q])) {
                pflex_error_set(err, "%s:%u: column 'host': '%s' is not a host name", file,
                                line, excerpt(eb, hf->s, hf->len));
                goto done;
            }
        int gpu = -1;
        if (gf->len) {
            long v = 0;
            for (size_t q = 0; q < gf->len; q++) {
                if (!isdigit((unsigned char)gf->s[q]) || q >= 5) {
                    v = -1;
                    break;
                }
                v = v * 10 + (gf->s[q] - '0');
            }
            if (v < 0 || v >= PFLEX_SLURM_MAX_GPUS) {
                pflex_error_set(err, "%s:%u: column 'gpu': '%s' is not a GPU index 0-%d "
                                "(or empty: unknown)", file, line,
                                excerpt(eb, gf->s, gf->len), PFLEX_SLURM_MAX_GPUS - 1);
                goto done;
            }
            gpu = (int)v;
        }
        long hk = strtab_intern(&m->hosts, hf->s, hf->len, NULL);
        if (hk < 0) {
            pflex_error_set(err, "%s:%u: out of memory", file, line);
            goto done;
        }
        if (add_entry(m, j, (uint32_t)hk, gpu, line, file, err) < 0)
            goto done;
    }
    if (got < 0)
        goto done;
    for (size_t q = 0; q < njobs; q++)
        if (job_finish(m, &jobs[q], file, err) < 0)
            goto done;
    for (size_t q = 0; q < njobs; q++)      /* merge_job empties what it takes */
        if (merge_job(m, &jobs[q], err) < 0)
            goto done;
    rc = 0;
done:
    for (size_t q = 0; q < njobs; q++) {
        m->entries -= jobs[q].ne;
        job_fini(&jobs[q]);
    }
    free(jobs);
    strtab_fini(&ids);
    pflex_csv_fini(&c);
    return rc;
}

/* ---- files ------------------------------------------------------------------------- */

typedef int (*reader_fn)(pflex_jobmap_t *, const char *, size_t, const char *,
                         pflex_error_t *);

static int read_file(pflex_jobmap_t *m, const char *path, reader_fn fn, pflex_error_t *err)
{
    char *buf;
    size_t len;
    if (pflex_read_all(path, &buf, &len, err) < 0)
        return -1;
    int rc = fn(m, buf, len, strcmp(path, "-") == 0 ? "<stdin>" : path, err);
    free(buf);
    return rc;
}

int pflex_slurm_squeue_read_file(pflex_jobmap_t *m, const char *path, pflex_error_t *err)
{
    return read_file(m, path, pflex_slurm_squeue_read_mem, err);
}

int pflex_slurm_scontrol_read_file(pflex_jobmap_t *m, const char *path, pflex_error_t *err)
{
    return read_file(m, path, pflex_slurm_scontrol_read_mem, err);
}

int pflex_jobmap_csv_read_file(pflex_jobmap_t *m, const char *path, pflex_error_t *err)
{
    return read_file(m, path, pflex_jobmap_csv_read_mem, err);
}

/* ---- rows ----------------------------------------------------------------------------- */

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* A total order of job ids: numbers first, by value, then the others as
 * strings (mixing the two rules pair by pair would not be transitive). */
static int cmp_id(const char *a, const char *b)
{
    int da = all_digits(a), db = all_digits(b);
    if (da != db)
        return da ? -1 : 1;
    if (da) {
        while (*a == '0' && a[1])
            a++;
        while (*b == '0' && b[1])
            b++;
        size_t la = strlen(a), lb = strlen(b);
        if (la != lb)
            return la < lb ? -1 : 1;
    }
    return strcmp(a, b);
}

static int cmp_row(const void *x, const void *y)
{
    const struct pflex_jobmap_row *a = x, *b = y;
    int c = cmp_id(a->job, b->job);
    if (c)
        return c;
    if ((c = strcmp(a->host, b->host)))
        return c;
    return a->gpu < b->gpu ? -1 : a->gpu > b->gpu;
}

struct claim {
    uint32_t host;
    int32_t gpu;
    uint32_t job;
};

static int cmp_claim(const void *x, const void *y)
{
    const struct claim *a = x, *b = y;
    if (a->host != b->host)
        return a->host < b->host ? -1 : 1;
    if (a->gpu != b->gpu)
        return a->gpu < b->gpu ? -1 : 1;
    return a->job < b->job ? -1 : a->job > b->job;
}

long pflex_jobmap_rows(pflex_jobmap_t *m, const struct pflex_jobmap_row **rows,
                       pflex_error_t *err)
{
    if (!m->rows) {
        size_t n = 0;
        for (size_t i = 0; i < m->njobs; i++)
            if (m->jobs[i].running)
                n += m->jobs[i].ne;
        if (n > PFLEX_JOBMAP_MAX_ROWS)
            return pflex_error_set(err, "more than %d (job, host, gpu) rows",
                                   PFLEX_JOBMAP_MAX_ROWS);
        struct pflex_jobmap_row *r = malloc((n ? n : 1) * sizeof *r);
        struct claim *cl = malloc((n ? n : 1) * sizeof *cl);
        if (!r || !cl) {
            free(r);
            free(cl);
            return pflex_error_set(err, "out of memory");
        }
        size_t k = 0, nc = 0;
        for (size_t i = 0; i < m->njobs; i++) {
            const struct job *j = &m->jobs[i];
            if (!j->running)
                continue;
            for (size_t q = 0; q < j->ne; q++) {
                r[k++] = (struct pflex_jobmap_row){j->id, j->name, m->hosts.s[j->e[q].host],
                                                   j->e[q].gpu};
                if (j->e[q].gpu >= 0)
                    cl[nc++] = (struct claim){j->e[q].host, j->e[q].gpu, (uint32_t)i};
            }
        }
        qsort(cl, nc, sizeof *cl, cmp_claim);
        for (size_t q = 1; q < nc; q++)
            if (cl[q].host == cl[q - 1].host && cl[q].gpu == cl[q - 1].gpu) {
                const struct job *a = &m->jobs[cl[q - 1].job], *b = &m->jobs[cl[q].job];
                pflex_error_set(err, "%s:%u: GPU %d of host '%s' is held by job %s and by "
                                "job %s (%s:%u)", b->src, b->line, (int)cl[q].gpu,
                                m->hosts.s[cl[q].host], b->id, a->id, a->src, a->line);
                free(r);
                free(cl);
                return -1;
            }
        free(cl);
        qsort(r, k, sizeof *r, cmp_row);
        m->rows = r;
        m->nrows = k;
    }
    *rows = m->rows;
    return (long)m->nrows;
}

int pflex_jobmap_write_csv(const struct pflex_jobmap_row *rows, size_t n, FILE *f)
{
    fputs("job,name,host,gpu\n", f);
    for (size_t i = 0; i < n; i++) {
        fputs(rows[i].job, f);
        fputc(',', f);
        pflex_csv_write_field(f, rows[i].name);
        fprintf(f, ",%s,", rows[i].host);
        if (rows[i].gpu >= 0)
            fprintf(f, "%d", rows[i].gpu);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}
