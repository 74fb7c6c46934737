/* telemetry_store.c — the telemetry store: series found by hash, samples in
 * one array, and the sort by series and time (pflex_tm_sort).
 *
 * Readers find a series once (tm_series) and add its samples by index
 * (tm_sample); tm_add does both.  The store watches the order samples come
 * in: when every series' samples stand together, in time order, and the
 * series were created in sort order, pflex_tm_sort has nothing to do.  The
 * sample and series arrays are bigmem arrays (huge pages, grown without a
 * copy), the series table is sized from the reader's estimate so that a
 * large scrape is not rehashed on the way. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/io/telemetry_impl.h"
#include "lib/util/bigmem.h"
#include "lib/util/hash.h"
#include "lib/util/mix.h"

struct block {
    struct block *next;
    size_t used, cap;
    char data[];
};

#define NO_SERIES UINT32_MAX

struct store {
    struct pflex_tm_limits lim;
    uint32_t *hash;         /* series index + 1, 0 = empty */
    size_t hash_cap;        /* power of two */
    uint64_t *keyhash;      /* per series: the hash of its key */
    struct pflex_big table, series, samples, keyhashes;   /* hash is table.p */
    struct block *blocks;
    /* Series strings, each held once (tm_intern): entries by id, a table
     * of id + 1.  Each string is stored after its 4-byte id, which the
     * sort reads back to rank series by integers. */
    struct istr {
        const char *s;
        uint32_t len, h;
    } *istr;
    size_t nistr, istr_cap;
    uint32_t *itab;
    size_t itab_cap;        /* power of two, at most half full */
    /* The order of the samples so far (see the top of the file). */
    int sorted;
    uint32_t last;          /* series of the last sample, NO_SERIES: none */
    double last_time;
    /* Runs (tm_runs_begin): samples written straight into per-slot runs
     * laid out in sort order, in runs, instead of appended to samples. */
    int runs_on;
    struct pflex_big runs;
    size_t nslots;
    size_t *run_start, *run_len, *run_cap, *run_owner;
    uint32_t *slot_of;      /* per series: its slot, NO_SERIES: none */
    size_t slot_of_cap;
    /* A reader's word on the sort order (tm_order_hint), checked when
     * used: the series in order, nhint of them. */
    uint32_t *hint;
    size_t nhint;
};

static const struct pflex_tm_limits default_limits = {
    65536, 10000000, 100000000, (size_t)256 << 20, 10000,
};

pflex_tm_t *pflex_tm_create(const struct pflex_tm_limits *lim)
{
    pflex_tm_t *t = calloc(1, sizeof *t);
    struct store *st = calloc(1, sizeof *st);
    if (!t || !st) {
        free(t);
        free(st);
        return NULL;
    }
    st->lim = default_limits;
    if (lim) {
        if (lim->max_line)
            st->lim.max_line = lim->max_line;
        if (lim->max_series)
            st->lim.max_series = lim->max_series;
        if (lim->max_samples)
            st->lim.max_samples = lim->max_samples;
        if (lim->max_fetch)
            st->lim.max_fetch = lim->max_fetch;
        if (lim->timeout_ms)
            st->lim.timeout_ms = lim->timeout_ms;
    }
    if (st->lim.max_series > UINT32_MAX - 1)
        st->lim.max_series = UINT32_MAX - 1;
    st->sorted = 1;
    st->last = NO_SERIES;
    t->priv = st;
    return t;
}

void pflex_tm_destroy(pflex_tm_t *t)
{
    if (!t)
        return;
    struct store *st = t->priv;
    for (struct block *b = st->blocks, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    pflex_big_free(&st->table);
    pflex_big_free(&st->series);
    pflex_big_free(&st->samples);
    pflex_big_free(&st->keyhashes);
    free(st->istr);
    free(st->itab);
    tm_runs_drop(t);
    free(st->hint);
    free(st);
    free(t);
}

const struct pflex_tm_limits *tm_limits(const pflex_tm_t *t)
{
    return &((const struct store *)t->priv)->lim;
}

/* len bytes the store owns; NULL out of memory. */
static char *store_room(pflex_tm_t *t, size_t len)
{
    struct store *st = t->priv;
    struct block *b = st->blocks;
    if (!b || b->cap - b->used < len) {
        size_t cap = len > 65536 ? len : 65536;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = st->blocks;
        b->used = 0;
        b->cap = cap;
        st->blocks = b;
    }
    char *p = b->data + b->used;
    b->used += len;
    return p;
}

char *tm_store_str(pflex_tm_t *t, const char *s, size_t len)
{
    char *p = store_room(t, len + 1);
    if (!p)
        return NULL;
    memcpy(p, s, len);
    p[len] = 0;
    return p;
}

/* ---- strings held once ---- */


static int itab_grow(struct store *st)
{
    size_t cap = st->itab_cap ? 2 * st->itab_cap : 1024;
    uint32_t *nt = calloc(cap, sizeof *nt);
    if (!nt)
        return -1;
    for (size_t i = 0; i < st->nistr; i++) {
        size_t j = st->istr[i].h & (cap - 1);
        while (nt[j])
            j = (j + 1) & (cap - 1);
        nt[j] = (uint32_t)(i + 1);
    }
    free(st->itab);
    st->itab = nt;
    st->itab_cap = cap;
    return 0;
}

const char *tm_intern(pflex_tm_t *t, const char *s, size_t n)
{
    struct store *st = t->priv;
    if (n > UINT32_MAX - 8 || st->nistr >= UINT32_MAX - 1)
        return NULL;
    if ((st->nistr + 1) * 2 > st->itab_cap && itab_grow(st) < 0)
        return NULL;
    uint32_t h = (uint32_t)pflex_hash_bytes(7, s, n);
    size_t j = h & (st->itab_cap - 1);
    for (uint32_t e; (e = st->itab[j]); j = (j + 1) & (st->itab_cap - 1)) {
        const struct istr *x = &st->istr[e - 1];
        if (x->h == h && x->len == n && !memcmp(x->s, s, n))
            return x->s;
    }
    if (st->nistr == st->istr_cap) {
        size_t cap = st->istr_cap ? 2 * st->istr_cap : 256;
        struct istr *ni = realloc(st->istr, cap * sizeof *ni);
        if (!ni)
            return NULL;
        st->istr = ni;
        st->istr_cap = cap;
    }
    uint32_t id = (uint32_t)st->nistr;
    char *p = store_room(t, n + 5);     /* the id, then the string */
    if (!p)
        return NULL;
    memcpy(p, &id, 4);
    memcpy(p + 4, s, n);
    p[4 + n] = 0;
    st->istr[id] = (struct istr){p + 4, (uint32_t)n, h};
    st->itab[j] = id + 1;
    st->nistr++;
    return p + 4;
}

static uint32_t istr_id(const char *s)
{
    uint32_t id;
    memcpy(&id, s - 4, 4);
    return id;
}

/* ---- keys and the table ---- */

uint64_t tm_key_hash_strings(const struct tm_key *k);
uint64_t tm_key_hash_of(uint64_t strings, long gpu, int field);

static uint64_t key_hash(const struct tm_key *k)
{
    return tm_key_hash_of(tm_key_hash_strings(k), k->gpu, k->field);
}

static void key_of(const struct pflex_tm_series *s, struct tm_key *k)
{
    k->job = s->job;
    k->job_len = s->job ? strlen(s->job) : 0;
    k->host = s->host;
    k->host_len = strlen(s->host);
    k->uuid = s->uuid;
    k->uuid_len = s->uuid ? strlen(s->uuid) : 0;
    k->gpu = s->gpu;
    k->field = s->field;
}

static int streq_n(const char *z, const char *s, size_t n)
{
    if (!z || !s)
        return !z && !s;
    return strncmp(z, s, n) == 0 && z[n] == 0;
}

static int series_is(const struct pflex_tm_series *s, const struct tm_key *k)
{
    return s->gpu == k->gpu && s->field == k->field && streq_n(s->job, k->job, k->job_len) &&
           streq_n(s->host, k->host ? k->host : "", k->host ? k->host_len : 0) &&
           streq_n(s->uuid, k->uuid, k->uuid_len);
}

static int rehash(pflex_tm_t *t, size_t cap)
{
    struct store *st = t->priv;
    /* a large table in huge pages: its probes are random, each a TLB miss
     * on small pages */
    struct pflex_big nb = {0};
    uint32_t *h = NULL;
    if (pflex_big_reserve(&nb, cap * sizeof *h) == 0) {
        h = nb.p;
        memset(h, 0, cap * sizeof *h);
    }
    if (!h) {
        /* A stale table would find the wrong series: drop it (the next
         * tm_series builds one). */
        pflex_big_free(&st->table);
        st->hash = NULL;
        st->hash_cap = 0;
        return -1;
    }
    for (size_t i = 0; i < t->nseries; i++) {
        size_t j = st->keyhash[i] & (cap - 1);
        while (h[j])
            j = (j + 1) & (cap - 1);
        h[j] = (uint32_t)(i + 1);
    }
    pflex_big_free(&st->table);
    st->table = nb;
    st->hash = h;
    st->hash_cap = cap;
    return 0;
}

/* Room for n series in the arrays. */
static int series_arrays(pflex_tm_t *t, size_t n)
{
    struct store *st = t->priv;
    if (pflex_big_reserve(&st->series, n * sizeof *t->series) < 0 ||
        pflex_big_reserve(&st->keyhashes, n * sizeof *st->keyhash) < 0)
        return -1;
    t->series = st->series.p;
    st->keyhash = st->keyhashes.p;
    return 0;
}

/* Room for n series (and a table at most half full). */
static int series_room(pflex_tm_t *t, size_t n)
{
    struct store *st = t->priv;
    if (series_arrays(t, n) < 0)
        return -1;
    size_t cap = st->hash_cap ? st->hash_cap : 1024;
    while (cap < 2 * n)
        cap *= 2;
    return cap != st->hash_cap || !st->hash ? rehash(t, cap) : 0;
}

void tm_reserve(pflex_tm_t *t, size_t series)
{
    struct store *st = t->priv;
    if (series > st->lim.max_series)
        series = st->lim.max_series;
    (void)series_room(t, t->nseries + series);  /* a hint: the table grows anyway */
}

void tm_reserve_arrays(pflex_tm_t *t, size_t series)
{
    struct store *st = t->priv;
    if (series > st->lim.max_series)
        series = st->lim.max_series;
    (void)series_arrays(t, t->nseries + series);
}

uint64_t tm_key_hash_strings(const struct tm_key *k)
{
    uint64_t h = k->job ? pflex_hash_bytes(1, k->job, k->job_len) : 0;
    h = pflex_hash_bytes(h, k->host ? k->host : "", k->host ? k->host_len : 0);
    if (k->uuid)
        h = pflex_hash_bytes(h + 1, k->uuid, k->uuid_len);
    return h;
}

uint64_t tm_key_hash_of(uint64_t strings, long gpu, int field)
{
    return pflex_mix64(strings ^ ((uint64_t)gpu << 8) ^ (uint64_t)(unsigned)field);
}

static int series_cmp(const struct pflex_tm_series *a, const struct pflex_tm_series *b);

long tm_series_append(pflex_tm_t *t, const struct tm_key *k, uint64_t h, const char *name,
                      unsigned line, pflex_error_t *err)
{
    struct store *st = t->priv;
    if (t->nseries >= st->lim.max_series)
        return pflex_error_set(err, "%s:%u: more than %zu series (limit; --max-series raises "
                               "it)", name, line, st->lim.max_series);
    if (((t->nseries + 1) * sizeof *t->series > st->series.cap ||
         (t->nseries + 1) * sizeof *st->keyhash > st->keyhashes.cap) &&
        series_arrays(t, (t->nseries + 1) * 2) < 0)
        return pflex_error_set(err, "%s:%u: out of memory", name, line);
    /* the table is built again when next needed (tm_series) */
    pflex_big_free(&st->table);
    st->hash = NULL;
    st->hash_cap = 0;
    struct pflex_tm_series *s = &t->series[t->nseries];
    s->job = k->job;
    s->host = k->host;
    s->uuid = k->uuid;
    s->gpu = (int)k->gpu;
    s->field = k->field;
    s->line = line;
    if (st->sorted && t->nseries && series_cmp(&t->series[t->nseries - 1], s) > 0)
        st->sorted = 0;
    st->keyhash[t->nseries] = h;
    return (long)t->nseries++;
}

void tm_rekey(pflex_tm_t *t)
{
    struct store *st = t->priv;
    struct tm_key k;
    for (size_t i = 0; i < t->nseries; i++) {
        key_of(&t->series[i], &k);
        st->keyhash[i] = key_hash(&k);
    }
    if (st->hash)
        rehash(t, st->hash_cap);
    st->sorted = 0;
}

/* Strings of the series just before: most inputs repeat them. */
static const char *reuse(const pflex_tm_t *t, const char *s, size_t n, int which)
{
    if (!t->nseries)
        return NULL;
    const struct pflex_tm_series *p = &t->series[t->nseries - 1];
    const char *z = which == 0 ? p->job : which == 1 ? p->host : p->uuid;
    return streq_n(z, s, n) ? z : NULL;
}

static int series_cmp(const struct pflex_tm_series *a, const struct pflex_tm_series *b);

long tm_series(pflex_tm_t *t, const struct tm_key *k, const char *name, unsigned line,
               pflex_error_t *err)
{
    struct store *st = t->priv;
    if (!st->hash && series_room(t, t->nseries + 256) < 0)
        return pflex_error_set(err, "%s:%u: out of memory", name, line);
    uint64_t h = key_hash(k);
    size_t j = h & (st->hash_cap - 1);
    while (st->hash[j]) {
        uint32_t i = st->hash[j] - 1;
        if (st->keyhash[i] == h && series_is(&t->series[i], k))
            return i;
        j = (j + 1) & (st->hash_cap - 1);
    }
    if (t->nseries >= st->lim.max_series)
        return pflex_error_set(err, "%s:%u: more than %zu series (limit; --max-series raises "
                               "it)", name, line, st->lim.max_series);
    if ((t->nseries + 1) * sizeof *t->series > st->series.cap ||
        (t->nseries + 1) * sizeof *st->keyhash > st->keyhashes.cap ||
        (t->nseries + 1) * 2 > st->hash_cap) {
        if (series_room(t, (t->nseries + 1) * 2) < 0)
            return pflex_error_set(err, "%s:%u: out of memory", name, line);
        j = h & (st->hash_cap - 1);
        while (st->hash[j])
            j = (j + 1) & (st->hash_cap - 1);
    }
    struct pflex_tm_series *s = &t->series[t->nseries];
    const char *hs = k->host ? k->host : "";
    size_t hl = k->host ? k->host_len : 0;
    s->job = NULL;
    s->uuid = NULL;
    if (k->job && !(s->job = reuse(t, k->job, k->job_len, 0)) &&
        !(s->job = tm_intern(t, k->job, k->job_len)))
        return pflex_error_set(err, "%s:%u: out of memory", name, line);
    if (!(s->host = reuse(t, hs, hl, 1)) && !(s->host = tm_intern(t, hs, hl)))
        return pflex_error_set(err, "%s:%u: out of memory", name, line);
    if (k->uuid && !(s->uuid = reuse(t, k->uuid, k->uuid_len, 2)) &&
        !(s->uuid = tm_intern(t, k->uuid, k->uuid_len)))
        return pflex_error_set(err, "%s:%u: out of memory", name, line);
    s->gpu = (int)k->gpu;
    s->field = k->field;
    s->line = line;
    if (st->sorted && t->nseries && series_cmp(&t->series[t->nseries - 1], s) > 0)
        st->sorted = 0;
    st->keyhash[t->nseries] = h;
    st->hash[j] = (uint32_t)(t->nseries + 1);
    return (long)t->nseries++;
}

/* ---- runs ---- */

/* The runs, closed up in slot order, become the samples: grouped by
 * series, in file order within each, which pflex_tm_sort checks rather
 * than assumes.  Runs begin on an empty store, so every sample is in
 * them. */
static void runs_end(pflex_tm_t *t)
{
    struct store *st = t->priv;
    if (!st->runs_on)
        return;
    struct pflex_tm_sample *m = st->runs.p;
    size_t w = 0;
    for (size_t i = 0; i < st->nslots; i++) {
        if (w != st->run_start[i] && st->run_len[i])
            memmove(m + w, m + st->run_start[i], st->run_len[i] * sizeof *m);
        w += st->run_len[i];
    }
    pflex_big_free(&st->samples);
    st->samples = st->runs;
    st->runs = (struct pflex_big){0};
    t->samples = st->samples.p;
    st->sorted = 0;
    st->last = w ? m[w - 1].series : NO_SERIES;
    st->last_time = w ? m[w - 1].time_s : 0;
    st->runs_on = 0;
    tm_runs_drop(t);
}

void tm_runs_drop(pflex_tm_t *t)
{
    struct store *st = t->priv;
    if (st->runs_on)
        pflex_big_free(&st->runs);
    st->runs_on = 0;
    free(st->run_start);
    free(st->slot_of);
    st->run_start = st->run_len = st->run_cap = st->run_owner = NULL;
    st->slot_of = NULL;
    st->nslots = st->slot_of_cap = 0;
}

int tm_runs_begin(pflex_tm_t *t, size_t nslots, const size_t *cap)
{
    struct store *st = t->priv;
    size_t total = 0;
    if (t->nsamples || t->nseries || st->runs_on || !nslots)
        return -1;
    for (size_t i = 0; i < nslots; i++)
        total += cap[i];
    if (!total || total > st->lim.max_samples)
        return -1;
    st->run_start = malloc(4 * nslots * sizeof *st->run_start);
    if (!st->run_start || pflex_big_reserve(&st->runs, total * sizeof *t->samples) < 0) {
        tm_runs_drop(t);
        return -1;
    }
    st->run_len = st->run_start + nslots;
    st->run_cap = st->run_len + nslots;
    st->run_owner = st->run_cap + nslots;
    for (size_t i = 0, at = 0; i < nslots; at += cap[i++]) {
        st->run_start[i] = at;
        st->run_len[i] = 0;
        st->run_cap[i] = cap[i];
        st->run_owner[i] = SIZE_MAX;
    }
    st->nslots = nslots;
    st->runs_on = 1;
    return 0;
}

void tm_runs_claim(pflex_tm_t *t, uint32_t series, size_t slot)
{
    struct store *st = t->priv;
    if (!st->runs_on)
        return;
    /* a slot holds one series: another one wanting it ends the runs */
    if (slot >= st->nslots || st->run_owner[slot] != SIZE_MAX) {
        runs_end(t);
        return;
    }
    if (series >= st->slot_of_cap) {
        size_t ncap = st->slot_of_cap ? 2 * st->slot_of_cap : 64;
        while (ncap <= series)
            ncap *= 2;
        uint32_t *n = realloc(st->slot_of, ncap * sizeof *n);
        if (!n) {
            runs_end(t);
            return;
        }
        memset(n + st->slot_of_cap, 0xff, (ncap - st->slot_of_cap) * sizeof *n);
        st->slot_of = n;
        st->slot_of_cap = ncap;
    }
    st->slot_of[series] = (uint32_t)slot;
    st->run_owner[slot] = series;
}

/* At the end of the read the runs are in slot order, and the slots were
 * laid out in the order the series sort in (tm_runs_begin): when the
 * series, taken by slot, do stand in sort order, they are numbered so as
 * the runs are closed up, and each run's time order is checked on the
 * way; pflex_tm_sort then has nothing left to do.  Otherwise (or out of
 * memory) runs_end, and the sort does the rest. */
static int runs_end_sorted(pflex_tm_t *t)
{
    struct store *st = t->priv;
    size_t ns = t->nseries;
    uint32_t *rank = malloc((ns ? ns : 1) * sizeof *rank);
    size_t *owner = malloc((ns ? ns : 1) * sizeof *owner);
    struct pflex_tm_series *sv = malloc((ns ? ns : 1) * sizeof *sv);
    uint64_t *kh = malloc((ns ? ns : 1) * sizeof *kh);
    size_t r = 0;
    int ok = rank && owner && sv && kh;
    for (size_t i = 0; ok && i < st->nslots; i++)
        if (st->run_owner[i] != SIZE_MAX) {
            if (r == ns) {
                ok = 0;
                break;
            }
            owner[r] = st->run_owner[i];
            rank[st->run_owner[i]] = (uint32_t)r++;
        }
    ok = ok && r == ns;
    for (size_t i = 1; ok && i < ns; i++)
        ok = series_cmp(&t->series[owner[i - 1]], &t->series[owner[i]]) < 0;
    if (!ok) {
        free(rank);
        free(owner);
        free(sv);
        free(kh);
        return 0;
    }
    for (size_t i = 0; i < ns; i++) {
        sv[i] = t->series[owner[i]];
        kh[i] = st->keyhash[owner[i]];
    }
    if (ns) {   /* none: every value was no data */
        memcpy(t->series, sv, ns * sizeof *sv);
        memcpy(st->keyhash, kh, ns * sizeof *kh);
    }
    struct pflex_tm_sample *m = st->runs.p;
    size_t w = 0;
    int sorted = 1;
    for (size_t i = 0; i < st->nslots; i++) {
        size_t n = st->run_len[i];
        if (!n)
            continue;
        struct pflex_tm_sample *src = m + st->run_start[i], *dst = m + w;
        uint32_t id = rank[st->run_owner[i]];
        double prev = src[0].time_s;
        for (size_t k = 0; k < n; k++) {
            struct pflex_tm_sample x = src[k];     /* dst <= src: a forward copy */
            sorted &= prev <= x.time_s;
            prev = x.time_s;
            x.series = id;
            dst[k] = x;
        }
        w += n;
    }
    free(rank);
    free(owner);
    free(sv);
    free(kh);
    pflex_big_free(&st->samples);
    st->samples = st->runs;
    st->runs = (struct pflex_big){0};
    t->samples = st->samples.p;
    st->sorted = sorted;
    st->last = w ? m[w - 1].series : NO_SERIES;
    st->last_time = w ? m[w - 1].time_s : 0;
    st->runs_on = 0;
    tm_runs_drop(t);
    if (st->hash)
        rehash(t, st->hash_cap);   /* the series have new numbers */
    return 1;
}

void tm_runs_end(pflex_tm_t *t)
{
    struct store *st = t->priv;
    if (st->runs_on && !runs_end_sorted(t))
        runs_end(t);
}

int tm_sample(pflex_tm_t *t, uint32_t series, double time_s, double value, const char *name,
              unsigned line, pflex_error_t *err)
{
    struct store *st = t->priv;
    if (t->nsamples >= st->lim.max_samples)
        return pflex_error_set(err, "%s:%u: more than %zu samples (limit)", name, line,
                               st->lim.max_samples);
    if (st->runs_on) {
        uint32_t slot = series < st->slot_of_cap ? st->slot_of[series] : NO_SERIES;
        if (slot != NO_SERIES && st->run_len[slot] < st->run_cap[slot]) {
            struct pflex_tm_sample *m = (struct pflex_tm_sample *)st->runs.p +
                                        st->run_start[slot] + st->run_len[slot]++;
            m->time_s = time_s;
            m->value = value;
            m->series = series;
            t->nsamples++;
            return 0;
        }
        runs_end(t);    /* not the shape foreseen: appended from here on */
    }
    if ((t->nsamples + 1) * sizeof *t->samples > st->samples.cap) {
        if (pflex_big_reserve(&st->samples, (t->nsamples + 1) * sizeof *t->samples) < 0)
            return pflex_error_set(err, "%s:%u: out of memory", name, line);
        t->samples = st->samples.p;
    }
    if (series != st->last) {
        /* A series met again after another breaks the order. */
        if (st->last != NO_SERIES && series < st->last)
            st->sorted = 0;
        st->last = series;
    } else if (time_s < st->last_time) {
        st->sorted = 0;
    }
    st->last_time = time_s;
    struct pflex_tm_sample *m = &t->samples[t->nsamples++];
    m->time_s = time_s;
    m->value = value;
    m->series = series;
    return 0;
}

int tm_samples(pflex_tm_t *t, const uint32_t *series, const double *value, size_t n,
               double time_s, const char *name, unsigned line, pflex_error_t *err)
{
    struct store *st = t->priv;
    size_t i = 0;
    if (st->runs_on && n <= st->lim.max_samples - t->nsamples) {
        /* tm_sample's runs path, the checks that hold for the row hoisted */
        struct pflex_tm_sample *base = st->runs.p;
        for (; i < n; i++) {
            uint32_t s = series[i];
            uint32_t slot = s < st->slot_of_cap ? st->slot_of[s] : NO_SERIES;
            if (slot == NO_SERIES || st->run_len[slot] >= st->run_cap[slot])
                break;
            struct pflex_tm_sample *m = base + st->run_start[slot] + st->run_len[slot]++;
            m->time_s = time_s;
            m->value = value[i];
            m->series = s;
        }
        t->nsamples += i;
    }
    for (; i < n; i++)
        if (tm_sample(t, series[i], time_s, value[i], name, line, err) < 0)
            return -1;
    return 0;
}

int tm_add(pflex_tm_t *t, const struct tm_key *k, double time_s, double value,
           const char *name, unsigned line, pflex_error_t *err)
{
    long s = tm_series(t, k, name, line, err);
    return s < 0 ? -1 : tm_sample(t, (uint32_t)s, time_s, value, name, line, err);
}

void tm_mark(const pflex_tm_t *t, struct tm_mark *m)
{
    const struct store *st = t->priv;
    m->nseries = t->nseries;
    m->nsamples = t->nsamples;
    m->skipped = t->skipped;
    m->sorted = st->sorted;
    m->last = st->last;
    m->last_time = st->last_time;
}

void tm_rollback(pflex_tm_t *t, const struct tm_mark *m)
{
    struct store *st = t->priv;
    t->nseries = m->nseries;
    t->nsamples = m->nsamples;
    t->skipped = m->skipped;
    st->sorted = m->sorted;
    st->last = m->last;
    st->last_time = m->last_time;
    tm_runs_drop(t);
    tm_order_hint(t, NULL, 0);
    if (st->hash)
        rehash(t, st->hash_cap);
}

int pflex_tm_add(pflex_tm_t *t, const char *job, const char *host, int gpu, const char *uuid,
                 int field, double time_s, double value, pflex_error_t *err)
{
    if ((unsigned)field >= PFLEX_DCGM_COUNT)
        return pflex_error_set(err, "telemetry: field %d out of range", field);
    if (!isfinite(value) || !isfinite(time_s))
        return pflex_error_set(err, "telemetry: a sample must be finite");
    struct tm_key k = {0};
    k.job = job;
    k.job_len = job ? strlen(job) : 0;
    k.host = host ? host : "";
    k.host_len = strlen(k.host);
    k.uuid = uuid;
    k.uuid_len = uuid ? strlen(uuid) : 0;
    k.gpu = gpu < 0 ? -1 : gpu;
    k.field = field;
    return tm_add(t, &k, time_s, value, "sample", 0, err);
}

/* ---- sorting ---- */

/* Strings of neighbouring series are often the same pointer. */
static int cmp_null_last(const char *a, const char *b)
{
    if (a == b)
        return 0;
    if (!a || !b)
        return (a == NULL) - (b == NULL);
    return strcmp(a, b);
}

static int series_cmp(const struct pflex_tm_series *a, const struct pflex_tm_series *b)
{
    int c = cmp_null_last(a->job, b->job);
    if (c)
        return c;
    if ((c = cmp_null_last(a->host, b->host)))
        return c;
    if (a->gpu != b->gpu)
        return a->gpu < b->gpu ? -1 : 1;
    if ((c = cmp_null_last(a->uuid, b->uuid)))
        return c;
    return (a->field > b->field) - (a->field < b->field);
}

static const pflex_tm_t *sort_t;
static int series_idx_cmp(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    int c = series_cmp(&sort_t->series[i], &sort_t->series[j]);
    return c ? c : (i > j) - (i < j);
}

static int sample_time_cmp(const void *a, const void *b)
{
    const struct pflex_tm_sample *p = a, *q = b;
    if (p->time_s != q->time_s)
        return p->time_s < q->time_s ? -1 : 1;
    return (p->value > q->value) - (p->value < q->value);
}

/* ---- series in sort order by integers ---- */

static const struct store *istr_st;
static int istr_cmp(const void *a, const void *b)
{
    const struct istr *x = &istr_st->istr[*(const uint32_t *)a];
    const struct istr *y = &istr_st->istr[*(const uint32_t *)b];
    return strcmp(x->s, y->s);
}

static unsigned bits_for(uint64_t v)
{
    unsigned b = 0;
    while (b < 64 && v >> b)
        b++;
    return b;
}

/* Dense ranks of the strings one role of the series uses (which[0..n)
 * the string ids, UINT32_MAX none: after every string), from the strings'
 * ranks sr; *top is the largest.  Returns 0 or -1 out of memory. */
static int role_ranks(const uint32_t *sr, size_t nrank, const struct pflex_tm_series *sv, size_t n,
                      int which, uint32_t **out, uint32_t *top)
{
    uint32_t *dense = calloc(nrank + 1, sizeof *dense);
    if (!dense)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *z = which == 0 ? sv[i].job : which == 1 ? sv[i].host : sv[i].uuid;
        if (z)
            dense[sr[istr_id(z)]] = 1;
    }
    uint32_t r = 0;
    for (size_t k = 0; k <= nrank; k++) {
        uint32_t used = dense[k];
        dense[k] = r;
        r += used;
    }
    *out = dense;
    *top = r;           /* none: r, after every string */
    return 0;
}

/* order[0..ns) = the series in sort order, as series_idx_cmp gives them,
 * by one 64-bit key a series (the ranks of its job, host and uuid among
 * the strings each role uses, its GPU and field) and a stable radix sort
 * (ties, strings equal to strcmp, keep index order).  1 done, 0 when the
 * keys would not fit in 64 bits, -1 out of memory. */
static int order_by_keys(const pflex_tm_t *t, uint32_t *order)
{
    const struct store *st = t->priv;
    const struct pflex_tm_series *sv = t->series;
    size_t ns = t->nseries, nstr = st->nistr;
    uint32_t *ids = malloc((nstr ? nstr : 1) * sizeof *ids);
    uint32_t *sr = malloc((nstr ? nstr : 1) * sizeof *sr);
    uint32_t *dj = NULL, *dh = NULL, *du = NULL, tj, th, tu;
    uint64_t *key = NULL, *key2 = NULL;
    uint32_t *o2 = NULL;
    int rc = -1;
    if (!ids || !sr)
        goto out;
    for (size_t i = 0; i < nstr; i++)
        ids[i] = (uint32_t)i;
    istr_st = st;
    qsort(ids, nstr, sizeof *ids, istr_cmp);
    size_t nrank = 0;
    for (size_t i = 0; i < nstr; i++) {
        if (i && strcmp(st->istr[ids[i - 1]].s, st->istr[ids[i]].s))
            nrank++;
        sr[ids[i]] = (uint32_t)nrank;
    }
    nrank += nstr > 0;
    if (role_ranks(sr, nrank, sv, ns, 0, &dj, &tj) < 0 ||
        role_ranks(sr, nrank, sv, ns, 1, &dh, &th) < 0 ||
        role_ranks(sr, nrank, sv, ns, 2, &du, &tu) < 0)
        goto out;
    int gmax = -1;
    for (size_t i = 0; i < ns; i++)
        gmax = sv[i].gpu > gmax ? sv[i].gpu : gmax;
    unsigned bj = bits_for(tj), bh = bits_for(th), bg = bits_for((uint64_t)gmax + 1),
             bu = bits_for(tu), bf = bits_for(PFLEX_DCGM_COUNT - 1);
    if (bj + bh + bg + bu + bf > 64) {
        rc = 0;
        goto out;
    }
    key = malloc(ns * sizeof *key);
    key2 = malloc(ns * sizeof *key2);
    o2 = malloc(ns * sizeof *o2);
    if (!key || !key2 || !o2)
        goto out;
    for (size_t i = 0; i < ns; i++) {
        const struct pflex_tm_series *s = &sv[i];
        uint64_t k = s->job ? dj[sr[istr_id(s->job)]] : tj;
        k = k << bh | dh[sr[istr_id(s->host)]];
        k = k << bg | (uint64_t)(s->gpu + 1);
        k = k << bu | (s->uuid ? du[sr[istr_id(s->uuid)]] : tu);
        key[i] = k << bf | (uint64_t)s->field;
        order[i] = (uint32_t)i;
    }
    unsigned bits = bj + bh + bg + bu + bf;
    enum { DIGIT = 11, MASK = (1u << DIGIT) - 1 };
    size_t count[1u << DIGIT];
    uint64_t *ka = key, *kb = key2;
    uint32_t *oa = order, *ob = o2;
    for (unsigned sh = 0; sh < bits; sh += DIGIT) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < ns; i++)
            count[ka[i] >> sh & MASK]++;
        if (count[ka[0] >> sh & MASK] == ns)
            continue;   /* one digit for all: nothing moves */
        for (size_t d = 0, sum = 0; d <= MASK; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < ns; i++) {
            size_t at = count[ka[i] >> sh & MASK]++;
            kb[at] = ka[i];
            ob[at] = oa[i];
        }
        uint64_t *tk = ka;
        ka = kb;
        kb = tk;
        uint32_t *to = oa;
        oa = ob;
        ob = to;
    }
    if (oa != order)
        memcpy(order, oa, ns * sizeof *order);
    rc = 1;
out:
    free(ids);
    free(sr);
    free(dj);
    free(dh);
    free(du);
    free(key);
    free(key2);
    free(o2);
    return rc;
}

void tm_order_hint(pflex_tm_t *t, uint32_t *order, size_t n)
{
    struct store *st = t->priv;
    free(st->hint);
    st->hint = order;
    st->nhint = n;
}

/* The hint taken (NULL: none, or not the sort order: not a permutation
 * of the series, or a series not strictly before the next); rank filled
 * when it is the order. */
static uint32_t *hint_order(pflex_tm_t *t, uint32_t *rank)
{
    struct store *st = t->priv;
    uint32_t *order = st->hint;
    size_t ns = t->nseries;
    st->hint = NULL;
    if (!order || st->nhint != ns)
        goto no;
    memset(rank, 0xff, ns * sizeof *rank);
    for (size_t k = 0; k < ns; k++) {
        if (order[k] >= ns || rank[order[k]] != UINT32_MAX)
            goto no;
        rank[order[k]] = (uint32_t)k;
        if (k && series_cmp(&t->series[order[k - 1]], &t->series[order[k]]) >= 0)
            goto no;
    }
    return order;
no:
    free(order);
    return NULL;
}

/* Series and their key hashes put in order by a copy into new arrays:
 * the loads of a gather are independent, where following a permutation's
 * cycles in place waits on one cache miss after another (a metric-major
 * scrape's series jump by a whole metric's GPUs).  0, or -1 out of
 * memory (nothing changed). */
static int gather_series(pflex_tm_t *t, const uint32_t *order)
{
    struct store *st = t->priv;
    size_t ns = t->nseries;
    struct pflex_big sb = {0}, kb = {0};
    if (pflex_big_reserve(&sb, (ns ? ns : 1) * sizeof *t->series) < 0 ||
        pflex_big_reserve(&kb, (ns ? ns : 1) * sizeof *st->keyhash) < 0) {
        pflex_big_free(&sb);
        pflex_big_free(&kb);
        return -1;
    }
    struct pflex_tm_series *sv = sb.p;
    uint64_t *kh = kb.p;
    for (size_t i = 0; i < ns; i++) {
        sv[i] = t->series[order[i]];
        kh[i] = st->keyhash[order[i]];
    }
    pflex_big_free(&st->series);
    pflex_big_free(&st->keyhashes);
    st->series = sb;
    st->keyhashes = kb;
    t->series = sv;
    st->keyhash = kh;
    return 0;
}

/* Series in sort order: rank[i] is series i's place.  Returns 1 when the
 * series already stand in it (rank is then the identity), 0 when sorted
 * here, -1 out of memory. */
static int rank_series(pflex_tm_t *t, uint32_t *rank)
{
    size_t ns = t->nseries;
    size_t i = 1;
    while (i < ns && series_cmp(&t->series[i - 1], &t->series[i]) < 0)
        i++;
    if (i >= ns) {
        tm_order_hint(t, NULL, 0);
        for (i = 0; i < ns; i++)
            rank[i] = (uint32_t)i;
        return 1;
    }
    struct store *st = t->priv;
    uint32_t *order = hint_order(t, rank);
    if (order)
        goto permute;
    if (!(order = malloc(ns * sizeof *order)))
        return -1;
    int fast = order_by_keys(t, order);
    if (fast < 0) {
        free(order);
        return -1;
    }
    if (!fast) {
        for (i = 0; i < ns; i++)
            order[i] = (uint32_t)i;
        sort_t = t;
        qsort(order, ns, sizeof *order, series_idx_cmp);
    }
    for (i = 0; i < ns; i++)
        rank[order[i]] = (uint32_t)i;
permute:
    if (gather_series(t, order) == 0) {
        free(order);
        return 0;
    }
    /* out of memory for the copies: series and their key hashes put in
     * order in place, cycle by cycle (order is used up) */
    for (i = 0; i < ns; i++) {
        if (order[i] == i)
            continue;
        struct pflex_tm_series sv = t->series[i];
        uint64_t kh = st->keyhash[i];
        size_t j = i;
        while (order[j] != i) {
            size_t from = order[j];
            t->series[j] = t->series[from];
            st->keyhash[j] = st->keyhash[from];
            order[j] = (uint32_t)j;
            j = from;
        }
        t->series[j] = sv;
        st->keyhash[j] = kh;
        order[j] = (uint32_t)j;
    }
    free(order);
    return 0;
}

/* Samples grouped by series rank, stable (file order inside a series):
 * in place when they already are, else by a counting sort into a new
 * array.  Returns 0, or -1 out of memory. */
static int group_samples(pflex_tm_t *t, const uint32_t *rank, int identity)
{
    struct store *st = t->priv;
    size_t ns = t->nseries, nm = t->nsamples;
    struct pflex_tm_sample *in = t->samples;
    size_t i = 0;
    for (uint32_t prev = 0; i < nm; i++) {
        uint32_t r = rank[in[i].series];
        if (r < prev)
            break;
        prev = r;
    }
    if (i == nm) {
        if (!identity)
            for (i = 0; i < nm; i++)
                in[i].series = rank[in[i].series];
        return 0;
    }
    size_t *start = calloc(ns + 1, sizeof *start);
    struct pflex_big out = {0};
    if (!start || pflex_big_reserve(&out, nm * sizeof *in) < 0) {
        free(start);
        return -1;
    }
    struct pflex_tm_sample *o = out.p;
    for (i = 0; i < nm; i++)
        start[rank[in[i].series] + 1]++;
    for (i = 0; i < ns; i++)
        start[i + 1] += start[i];
    for (i = 0; i < nm; i++) {
        uint32_t r = rank[in[i].series];
        o[start[r]] = in[i];
        o[start[r]].series = r;
        start[r]++;
    }
    free(start);
    pflex_big_free(&st->samples);
    st->samples = out;
    t->samples = out.p;
    return 0;
}

int pflex_tm_sort(pflex_tm_t *t, pflex_error_t *err)
{
    struct store *st = t->priv;
    size_t ns = t->nseries, nm = t->nsamples;
    if (st->sorted) {
        tm_order_hint(t, NULL, 0);
        return 0;
    }
    uint32_t *rank = malloc((ns ? ns : 1) * sizeof *rank);
    int identity = rank ? rank_series(t, rank) : -1;
    if (identity < 0 || group_samples(t, rank, identity) < 0) {
        free(rank);
        return pflex_error_set(err, "telemetry: out of memory sorting %zu samples", nm);
    }
    free(rank);
    struct pflex_tm_sample *m = t->samples;
    for (size_t b = 0; b < nm;) {
        size_t e = b + 1;
        int sorted = 1;
        for (; e < nm && m[e].series == m[b].series; e++)
            sorted &= m[e - 1].time_s <= m[e].time_s;
        if (!sorted)
            qsort(m + b, e - b, sizeof *m, sample_time_cmp);
        b = e;
    }
    st->sorted = 1;
    st->last = nm ? m[nm - 1].series : NO_SERIES;
    st->last_time = nm ? m[nm - 1].time_s : 0;
    if (!identity && st->hash && rehash(t, st->hash_cap) < 0)
        return pflex_error_set(err, "telemetry: out of memory");
    return 0;
}
