/* telemetry_prom.c — dcgm-exporter's Prometheus text exposition (format
 * 0.0.4).
 *
 *   # HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
 *   # TYPE DCGM_FI_DEV_SM_CLOCK gauge
 *   DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-...",Hostname="n1",pod="p"} 1980 1714564800000
 *
 * Labels come in any order, values escape \\ \" and \n.  The labels pflex
 * reads: gpu (index), UUID, Hostname or hostname, hpc_job, pod, GPU_I_ID
 * (a MIG instance: gpu = 10000 + 100 x gpu + GPU_I_ID).  A sample's
 * job is its hpc_job label, else its pod label, else the read's job.
 * Metrics other than the DCGM fields pflex knows are skipped and counted, so
 * are blank sentinels and NaN.  The optional timestamp is in milliseconds.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/io/telemetry_impl.h"
#include "lib/util/hash.h"
#include "lib/util/mix.h"

#define MAX_LABELS 64

struct label {
    const char *name, *value;
    size_t name_len, value_len;
};

static int is_name_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static int is_name_char(int c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

static int lname_is(const struct label *l, const char *z)
{
    size_t n = strlen(z);
    return l->name_len == n && !memcmp(l->name, z, n);
}

/* Prometheus float: a number, NaN, +Inf, -Inf. 1: number, 0: NaN or
 * infinite (no data), -1: bad. */
static int prom_value(const char *s, size_t n, double *v)
{
    if ((n == 3 && !memcmp(s, "NaN", 3)) || (n == 4 && (!memcmp(s, "+Inf", 4) ||
                                                        !memcmp(s, "-Inf", 4))) ||
        (n == 3 && !memcmp(s, "Inf", 3)))
        return 0;
    return tm_parse_double(s, n, v) < 0 ? -1 : 1;
}

/* Series in a scrape, about: one a sample line, sized by the first few
 * (a scrape names each series once).  Only sizes the store's table. */
static size_t estimate_series(const char *buf, size_t have, unsigned long long len)
{
    const char *p = buf, *end = buf + (have < (64u << 10) ? have : (64u << 10));
    size_t lines = 0, bytes = 0;
    while (p < end && lines < 64) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        if (*p != '#') {
            lines++;
            bytes += (size_t)(nl - p) + 1;
        }
        p = nl + 1;
    }
    return lines ? (size_t)(len / (bytes / lines)) : 0;
}

int tm_read_prom(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                 const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    struct tm_lines ln;
    tm_lines_init(&ln, buf, len, name, tm_limits(t)->max_line);
    return tm_read_prom_lines(t, &ln, name, o, err);
}

/* The label set at s[*i] ('{' ... '}') into labels (values unescaped into
 * scratch); *i is left after the '}'.  0, or -1 with err. */
static int parse_labels(const char *s, size_t n, size_t *ip, struct label *labels, size_t *nlp,
                        char *scratch, const char *name, unsigned line, pflex_error_t *err)
{
    size_t i = *ip + 1, nl = 0, used = 0;
#define LFAIL(...) return pflex_error_set(err, __VA_ARGS__)
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i < n && s[i] == '}') {
            i++;
            break;
        }
        if (i >= n || !is_name_start((unsigned char)s[i]))
            LFAIL("%s:%u: column %zu: expected a label name or '}'", name, line, i + 1);
        size_t lb = i;
        while (i < n && is_name_char((unsigned char)s[i]))
            i++;
        size_t llen = i - lb;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i >= n || s[i] != '=')
            LFAIL("%s:%u: column %zu: expected '=' after label '%.*s'", name, line, i + 1,
                  (int)(llen > 40 ? 40 : llen), s + lb);
        i++;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i >= n || s[i] != '"')
            LFAIL("%s:%u: column %zu: a label value must be quoted", name, line, i + 1);
        i++;
        char *v = scratch + used;
        size_t vl = 0;
        for (;;) {
            if (i >= n)
                LFAIL("%s:%u: unterminated label value", name, line);
            char ch = s[i++];
            if (ch == '"')
                break;
            if (ch == '\\') {
                if (i >= n)
                    LFAIL("%s:%u: unterminated label value", name, line);
                char e = s[i++];
                if (e == 'n')
                    ch = '\n';
                else if (e == '\\' || e == '"')
                    ch = e;
                else
                    LFAIL("%s:%u: column %zu: unknown escape '\\%c' in a label value", name,
                          line, i - 1, e);
            }
            v[vl++] = ch;
        }
        used += vl;
        if (nl == MAX_LABELS)
            LFAIL("%s:%u: more than %d labels", name, line, MAX_LABELS);
        for (size_t k = 0; k < nl; k++)
            if (labels[k].name_len == llen && !memcmp(labels[k].name, s + lb, llen))
                LFAIL("%s:%u: label '%.*s' given twice", name, line,
                      (int)(llen > 40 ? 40 : llen), s + lb);
        labels[nl].name = s + lb;
        labels[nl].name_len = llen;
        labels[nl].value = v;
        labels[nl].value_len = vl;
        nl++;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i < n && s[i] == ',')
            i++;
        else if (i < n && s[i] == '}') {
            i++;
            break;
        } else
            LFAIL("%s:%u: column %zu: expected ',' or '}' in the labels", name, line, i + 1);
    }
#undef LFAIL
    *ip = i;
    *nlp = nl;
    return 0;
}

/* The key a label set names (field aside): gpu, UUID, host, job.  0, or
 * -1 with err. */
static int resolve(const struct label *labels, size_t nl, const struct pflex_tm_read_opts *o,
                   struct tm_key *k, const char *name, unsigned line, pflex_error_t *err)
{
    memset(k, 0, sizeof *k);
    k->gpu = -1;
    const struct label *job = NULL, *pod = NULL, *host = NULL, *instance = NULL, *mig = NULL;
    for (size_t q = 0; q < nl; q++) {
        const struct label *l = &labels[q];
        if (lname_is(l, "gpu")) {
            if (tm_parse_index(l->value, l->value_len, &k->gpu) < 0)
                return pflex_error_set(err, "%s:%u: label gpu=\"%.*s\" is not a GPU index",
                                       name, line, (int)(l->value_len > 40 ? 40 : l->value_len),
                                       l->value);
        } else if (lname_is(l, "UUID") || lname_is(l, "uuid")) {
            if (l->value_len) {
                k->uuid = l->value;
                k->uuid_len = l->value_len;
            }
        } else if (lname_is(l, "Hostname") || lname_is(l, "hostname")) {
            host = l;
        } else if (lname_is(l, "instance")) {
            instance = l;
        } else if (lname_is(l, "hpc_job")) {
            job = l;
        } else if (lname_is(l, "pod")) {
            pod = l;
        } else if (lname_is(l, "GPU_I_ID")) {
            mig = l;
        }
    }
    if (mig && mig->value_len && k->gpu >= 0) {
        long gi;
        if (tm_parse_index(mig->value, mig->value_len, &gi) < 0 || gi > 99 || k->gpu > 999)
            return pflex_error_set(err, "%s:%u: label GPU_I_ID=\"%.*s\" is not a MIG instance "
                                   "id (0-99)", name, line,
                                   (int)(mig->value_len > 40 ? 40 : mig->value_len), mig->value);
        k->gpu = 10000 + 100 * k->gpu + gi;   /* a MIG instance, apart from whole GPUs */
    }
    if (!host)
        host = instance;
    if (host) {
        k->host = host->value;
        k->host_len = host->value_len;
    } else {
        k->host = o->host ? o->host : "";
        k->host_len = strlen(k->host);
    }
    if (job && job->value_len) {
        k->job = job->value;
        k->job_len = job->value_len;
    } else if (pod && pod->value_len) {
        k->job = pod->value;
        k->job_len = pod->value_len;
    } else if (o->job) {
        k->job = o->job;
        k->job_len = strlen(o->job);
    }
    return 0;
}

/* ---- label sets seen before ----
 *
 * A scrape repeats each GPU's label set once a metric: the text of a set
 * (from '{' to the line's last '}') that parsed once, byte for byte the
 * same, parses the same.  Each text is kept with the GPU it resolves to
 * (a GPU: job, host, UUID held once by the store, and the index); each
 * GPU with its series, one a field.  Both tables are the read's own. */
struct gpu_ent {
    const char *job, *host, *uuid;  /* the store's strings (tm_intern) */
    long gpu;
    uint64_t hstr;                  /* tm_key_hash_strings */
    uint32_t sid[PFLEX_DCGM_COUNT]; /* UINT32_MAX: none yet */
};
struct set_ent {
    uint64_t h;
    const char *text;               /* a copy */
    size_t len;
    uint32_t gpu;                   /* UINT32_MAX: not resolved yet */
    uint32_t next;                  /* the set on the line after it last
                                     * time, UINT32_MAX: none yet */
};
struct sets {
    struct set_ent *set;
    uint32_t *stab;                 /* set index + 1 */
    size_t nset, set_cap, stab_cap;
    struct gpu_ent *gpu;
    uint32_t *gtab;                 /* gpu index + 1 */
    size_t ngpu, gpu_cap, gtab_cap;
    char *arena;                    /* the texts */
    size_t arena_used, arena_cap;
    char **old;                     /* arenas filled */
    size_t nold;
    size_t kept;                    /* bytes of text kept */
};
/* Past this many bytes of label sets (a scrape whose every line has a set
 * of its own) no more are kept. */
#define SETS_MAX_BYTES ((size_t)64 << 20)

static void sets_fini(struct sets *c)
{
    free(c->set);
    free(c->stab);
    free(c->gpu);
    free(c->gtab);
    free(c->arena);
    for (size_t i = 0; i < c->nold; i++)
        free(c->old[i]);
    free(c->old);
}

/* A table of cap slots (index + 1) over n entries of hash h(i). */
static uint32_t *table_of(size_t cap, size_t n, const void *ent, size_t size, size_t hoff)
{
    uint32_t *tab = calloc(cap, sizeof *tab);
    if (!tab)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        uint64_t h;
        memcpy(&h, (const char *)ent + i * size + hoff, sizeof h);
        size_t j = h & (cap - 1);
        while (tab[j])
            j = (j + 1) & (cap - 1);
        tab[j] = (uint32_t)(i + 1);
    }
    return tab;
}

static struct set_ent *set_find(const struct sets *c, uint64_t h, const char *s, size_t n)
{
    if (!c->stab_cap)
        return NULL;
    for (size_t j = h & (c->stab_cap - 1); c->stab[j]; j = (j + 1) & (c->stab_cap - 1)) {
        struct set_ent *e = &c->set[c->stab[j] - 1];
        if (e->h == h && e->len == n && !memcmp(e->text, s, n))
            return e;
    }
    return NULL;
}

/* Keep the text s[0..n) (hash h); NULL out of memory. */
static struct set_ent *set_add(struct sets *c, uint64_t h, const char *s, size_t n)
{
    if (c->nset == c->set_cap) {
        size_t cap = c->set_cap ? 2 * c->set_cap : 1024;
        struct set_ent *ns = realloc(c->set, cap * sizeof *ns);
        if (!ns)
            return NULL;
        c->set = ns;
        c->set_cap = cap;
    }
    if (2 * (c->nset + 1) > c->stab_cap) {
        size_t cap = c->stab_cap ? 2 * c->stab_cap : 4096;
        uint32_t *nt = table_of(cap, c->nset, c->set, sizeof *c->set, offsetof(struct set_ent, h));
        if (!nt)
            return NULL;
        free(c->stab);
        c->stab = nt;
        c->stab_cap = cap;
    }
    if (c->arena_cap - c->arena_used < n) {
        size_t cap = n > (1u << 20) ? n : (1u << 20);
        char **no = realloc(c->old, (c->nold + 1) * sizeof *no);
        char *na = malloc(cap);
        if (!no || !na) {
            free(na);
            if (no)
                c->old = no;
            return NULL;
        }
        c->old = no;
        if (c->arena)
            c->old[c->nold++] = c->arena;
        c->arena = na;
        c->arena_cap = cap;
        c->arena_used = 0;
    }
    char *text = c->arena + c->arena_used;
    memcpy(text, s, n);
    c->arena_used += n;
    c->kept += n;
    struct set_ent *e = &c->set[c->nset];
    *e = (struct set_ent){h, text, n, UINT32_MAX, UINT32_MAX};
    size_t j = h & (c->stab_cap - 1);
    while (c->stab[j])
        j = (j + 1) & (c->stab_cap - 1);
    c->stab[j] = (uint32_t)++c->nset;
    return e;
}

/* The GPU of key k (strings interned here); UINT32_MAX out of memory. */
static uint32_t gpu_of(pflex_tm_t *t, struct sets *c, const struct tm_key *k)
{
    const char *job = NULL, *uuid = NULL, *host;
    if ((k->job && !(job = tm_intern(t, k->job, k->job_len))) ||
        !(host = tm_intern(t, k->host, k->host_len)) ||
        (k->uuid && !(uuid = tm_intern(t, k->uuid, k->uuid_len))))
        return UINT32_MAX;
    uint64_t h = pflex_mix64((uint64_t)(uintptr_t)job * 31 ^ (uint64_t)(uintptr_t)host * 17 ^
                             (uint64_t)(uintptr_t)uuid ^ (uint64_t)k->gpu << 40);
    if (c->gtab_cap)
        for (size_t j = h & (c->gtab_cap - 1); c->gtab[j]; j = (j + 1) & (c->gtab_cap - 1)) {
            const struct gpu_ent *g = &c->gpu[c->gtab[j] - 1];
            if (g->job == job && g->host == host && g->uuid == uuid && g->gpu == k->gpu)
                return c->gtab[j] - 1;
        }
    if (c->ngpu == c->gpu_cap) {
        size_t cap = c->gpu_cap ? 2 * c->gpu_cap : 256;
        struct gpu_ent *ng = realloc(c->gpu, cap * sizeof *ng);
        if (!ng)
            return UINT32_MAX;
        c->gpu = ng;
        c->gpu_cap = cap;
    }
    if (2 * (c->ngpu + 1) > c->gtab_cap) {
        size_t cap = c->gtab_cap ? 2 * c->gtab_cap : 1024;
        uint32_t *nt = calloc(cap, sizeof *nt);
        if (!nt)
            return UINT32_MAX;
        for (size_t i = 0; i < c->ngpu; i++) {
            const struct gpu_ent *g = &c->gpu[i];
            uint64_t gh = pflex_mix64((uint64_t)(uintptr_t)g->job * 31 ^
                                      (uint64_t)(uintptr_t)g->host * 17 ^
                                      (uint64_t)(uintptr_t)g->uuid ^ (uint64_t)g->gpu << 40);
            size_t j = gh & (cap - 1);
            while (nt[j])
                j = (j + 1) & (cap - 1);
            nt[j] = (uint32_t)(i + 1);
        }
        free(c->gtab);
        c->gtab = nt;
        c->gtab_cap = cap;
    }
    struct gpu_ent *g = &c->gpu[c->ngpu];
    g->job = job;
    g->host = host;
    g->uuid = uuid;
    g->gpu = k->gpu;
    g->hstr = tm_key_hash_strings(k);
    memset(g->sid, 0xff, sizeof g->sid);
    size_t j = h & (c->gtab_cap - 1);
    while (c->gtab[j])
        j = (j + 1) & (c->gtab_cap - 1);
    c->gtab[j] = (uint32_t)(c->ngpu + 1);
    return (uint32_t)c->ngpu++;
}

/* The field of a metric name, the last one remembered (a scrape gives a
 * metric's lines together). */
struct field_memo {
    char name[128];
    size_t len;
    int field;
};

static int field_of(struct field_memo *m, const char *s, size_t n)
{
    if (n == m->len && !memcmp(m->name, s, n))
        return m->field;
    int f = pflex_dcgm_by_name(s, n);
    if (n < sizeof m->name) {
        memcpy(m->name, s, n);
        m->len = n;
        m->field = f;
    }
    return f;
}

/* ---- the sort order, from the GPU table ----
 *
 * The store sorts series by job, host, GPU, UUID and field: here, the
 * GPUs sorted by the first four and each one's series by field, which is
 * the order of a million series from some ten thousand GPUs without the
 * store's sort of them all. */
struct gpu_rank {
    const char *job, *host, *uuid;
    long gpu;
    uint32_t idx;
};

static int null_last_cmp(const char *a, const char *b)
{
    if (a == b)
        return 0;
    if (!a || !b)
        return (a == NULL) - (b == NULL);
    return strcmp(a, b);
}

static int gpu_rank_cmp(const void *pa, const void *pb)
{
    const struct gpu_rank *a = pa, *b = pb;
    int c = null_last_cmp(a->job, b->job);
    if (!c)
        c = null_last_cmp(a->host, b->host);
    if (!c && a->gpu != b->gpu)
        c = a->gpu < b->gpu ? -1 : 1;
    if (!c)
        c = null_last_cmp(a->uuid, b->uuid);
    return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}

/* Tell the store the order of the nseries series this read made, every
 * one through c's GPUs (a hint: nothing when out of memory). */
static void hint_order(pflex_tm_t *t, const struct sets *c, size_t nseries)
{
    struct gpu_rank *g = malloc((c->ngpu ? c->ngpu : 1) * sizeof *g);
    uint32_t *order = malloc((nseries ? nseries : 1) * sizeof *order);
    if (!g || !order) {
        free(g);
        free(order);
        return;
    }
    int sorted = 1;
    for (size_t i = 0; i < c->ngpu; i++) {
        const struct gpu_ent *e = &c->gpu[i];
        g[i] = (struct gpu_rank){e->job, e->host, e->uuid, e->gpu, (uint32_t)i};
        if (i && sorted && gpu_rank_cmp(&g[i - 1], &g[i]) > 0)
            sorted = 0;
    }
    if (!sorted)
        qsort(g, c->ngpu, sizeof *g, gpu_rank_cmp);
    size_t k = 0;
    for (size_t i = 0; i < c->ngpu; i++)
        for (int f = 0; f < PFLEX_DCGM_COUNT; f++) {
            uint32_t sid = c->gpu[g[i].idx].sid[f];
            if (sid != UINT32_MAX && k < nseries)
                order[k++] = sid;
        }
    free(g);
    if (k == nseries)
        tm_order_hint(t, order, nseries);
    else
        free(order);
}

/* Long: the streaming reader's hot loop with its line caches inline, the
 * reader's whole cost at a million samples (docs/measurements.md). */
int tm_read_prom_lines(pflex_tm_t *t, struct tm_lines *lp, const char *name,
                       const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    struct tm_lines ln = *lp;
    const char *s;
    size_t n;
    int got, rc = -1;
    size_t max_line = tm_limits(t)->max_line;
    /* Unescaped label values of one line: never longer than the line. */
    char *scratch = malloc(max_line + 1);
    struct label labels[MAX_LABELS];
    struct sets c = {0};
    struct field_memo memo = {{0}, SIZE_MAX, -1};
    /* The set of the line before: a scrape gives the GPUs in the same
     * order for each metric, so the set after it last time is tried
     * first, byte for byte, before the text is hashed and looked up. */
    uint32_t prev = UINT32_MAX;
    /* into an empty store, each series this read makes is new to it: the
     * GPU table tells, and the store's own table is built afterwards */
    int fresh = t->nseries == 0;
    if (!scratch)
        return pflex_error_set(err, "%s: out of memory", name);
    size_t est = estimate_series(ln.p, (size_t)(ln.end - ln.p), tm_lines_left(&ln));
    if (fresh)
        tm_reserve_arrays(t, est);
    else
        tm_reserve(t, est);
#define FAIL(...) do { pflex_error_set(err, __VA_ARGS__); goto out; } while (0)
#define OOM() FAIL("%s:%u: out of memory", name, ln.line)
    while ((got = tm_lines_next(&ln, &s, &n, err)) > 0) {
        size_t i = 0;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n || s[i] == '#')
            continue;   /* blank, HELP, TYPE, comments */
        if (!is_name_start((unsigned char)s[i]))
            FAIL("%s:%u: column %zu: a metric name must start with a letter, '_' or ':'", name,
                 ln.line, i + 1);
        size_t nb = i;
        while (i < n && is_name_char((unsigned char)s[i]))
            i++;
        const char *mname = s + nb;
        size_t mlen = i - nb;
        size_t nl = 0, lb = i, le = 0;   /* the label text: s[lb, le) */
        struct set_ent *se = NULL;
        uint64_t lh = 0;
        if (i < n && s[i] == '{') {
            for (le = n; le > i && s[le - 1] != '}'; le--)
                ;
            if (le > i) {
                uint32_t guess = prev != UINT32_MAX ? c.set[prev].next : UINT32_MAX;
                if (guess != UINT32_MAX && c.set[guess].len == le - lb &&
                    !memcmp(c.set[guess].text, s + lb, le - lb))
                    se = &c.set[guess];
                else {
                    lh = pflex_hash_bytes(0, s + lb, le - lb);
                    se = set_find(&c, lh, s + lb, le - lb);
                }
            }
            if (se)
                i = le;
            else if (parse_labels(s, n, &i, labels, &nl, scratch, name, ln.line, err) < 0)
                goto out;
            else if (i == le && c.kept < SETS_MAX_BYTES &&
                     !(se = set_add(&c, lh, s + lb, le - lb)))
                OOM();
            if (se) {
                uint32_t at = (uint32_t)(se - c.set);
                if (prev != UINT32_MAX)
                    c.set[prev].next = at;
                prev = at;
            }
        }
        if (i >= n || (s[i] != ' ' && s[i] != '\t'))
            FAIL("%s:%u: column %zu: expected a space and the value", name, ln.line, i + 1);
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t vb = i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        double v, ts = o->time0_s;
        int r = prom_value(s + vb, i - vb, &v);
        if (r < 0)
            FAIL("%s:%u: column %zu: '%.*s' is not a sample value", name, ln.line, vb + 1,
                 (int)(i - vb > 40 ? 40 : i - vb), s + vb);
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i < n) {
            size_t tb = i;
            while (i < n && s[i] != ' ' && s[i] != '\t')
                i++;
            double ms;
            if (tm_parse_double(s + tb, i - tb, &ms) < 0 || ms != floor(ms))
                FAIL("%s:%u: column %zu: '%.*s' is not a timestamp in milliseconds", name,
                     ln.line, tb + 1, (int)(i - tb > 40 ? 40 : i - tb), s + tb);
            ts = ms / 1000.0;
            while (i < n && (s[i] == ' ' || s[i] == '\t'))
                i++;
            if (i < n)
                FAIL("%s:%u: column %zu: text after the timestamp", name, ln.line, i + 1);
        }
        int field = field_of(&memo, mname, mlen);
        if (field < 0 || r == 0 || pflex_dcgm_is_blank(v)) {
            t->skipped++;
            continue;
        }
        struct tm_key k;
        if (se && se->gpu != UINT32_MAX) {
            /* a label set resolved before */
        } else {
            if (se && !nl) {
                /* kept but not resolved yet: its labels, again */
                size_t j = lb;
                if (parse_labels(s, n, &j, labels, &nl, scratch, name, ln.line, err) < 0)
                    goto out;
            }
            if (resolve(labels, nl, o, &k, name, ln.line, err) < 0)
                goto out;
            if (!se) {
                /* a set not kept (no labels, text after its '}', too many
                 * sets): by key, through the store's table (from here on
                 * for every series: this one may be a kept set's key) */
                k.field = field;
                fresh = 0;
                if (tm_add(t, &k, ts, v, name, ln.line, err) < 0)
                    goto out;
                continue;
            }
            if ((se->gpu = gpu_of(t, &c, &k)) == UINT32_MAX)
                OOM();
        }
        struct gpu_ent *g = &c.gpu[se->gpu];
        uint32_t sid = g->sid[field];
        if (sid == UINT32_MAX) {
            struct tm_key gk = {g->job, g->host, g->uuid, g->job ? strlen(g->job) : 0,
                                strlen(g->host), g->uuid ? strlen(g->uuid) : 0, g->gpu, field};
            long id = fresh ? tm_series_append(t, &gk, tm_key_hash_of(g->hstr, g->gpu, field),
                                               name, ln.line, err)
                            : tm_series(t, &gk, name, ln.line, err);
            if (id < 0)
                goto out;
            sid = g->sid[field] = (uint32_t)id;
        }
        if (tm_sample(t, sid, ts, v, name, ln.line, err) < 0)
            goto out;
    }
    rc = got < 0 ? -1 : 0;
    if (!rc && fresh && t->nseries)
        hint_order(t, &c, t->nseries);
out:
#undef FAIL
#undef OOM
    free(scratch);
    sets_fini(&c);
    *lp = ln;
    return rc;
}
