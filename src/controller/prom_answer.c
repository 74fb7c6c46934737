/* prom_answer.c — the Prometheus answers read in place (prom_int.h): the
 * streaming scanner over pflex's own answer and the DCGM one, with the
 * rules of the readers it replaced (prom_source.c says which).  An
 * element of data.result is applied as soon as it has been read; a label
 * is a span of the answer, copied only when it holds an escape; a value is
 * converted only where it is used. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/prom_int.h"
#include "lib/io/telemetry_impl.h"
#include "lib/util/grow.h"
#include "lib/util/jscan.h"
#include "pflex/io/telemetry.h"

/* The labels read, by what they are. */
enum { L_NAME, L_HOSTNAME, L_HOSTNAME_LC, L_INSTANCE, L_GPU, L_MIG, L_EXPORTED_JOB, L_JOB, L_COUNT };
static const struct {
    const char *key;
    size_t n;
} label_keys[L_COUNT] = {
    {"__name__", 8}, {"Hostname", 8}, {"hostname", 8}, {"instance", 8},
    {"gpu", 3}, {"GPU_I_ID", 8}, {"exported_job", 12}, {"job", 3},
};

/* One element of data.result as read: the last of each member. */
struct elem {
    int metric;                 /* "metric" is an object */
    struct str lab[L_COUNT];    /* its labels that are strings */
    int value;                  /* "value" is an array */
    size_t value_n;             /* its elements (counted to 3) */
    int ts_on;                  /* its first is a number: ts */
    double ts;
    struct str vs;              /* its second, when a string */
    int values;                 /* "values" is an array, at values_at */
    size_t values_at;
};

struct rd {
    prom_source_t *p;
    struct pflex_jscan s;
    const char *what;           /* for messages: "the DCGM answer", "pflex's own answer" */
    int dcgm;                   /* the DCGM answer: as the telemetry reader reads it */
    int matrix;
    int replay;                 /* only the samples' values again (prom_source_parse) */
    struct judge *jd;
    size_t nsamples;            /* the DCGM answer: samples and skipped ones */
    size_t index;               /* the element of data.result being read */
    pflex_error_t *err;
};

static const char *str_at(const struct rd *r, const struct str *x)
{
    return x->raw ? x->raw : r->p->tmp + x->off;
}

/* A string s of n bytes NUL-terminated (for strtod and strtol, whose
 * syntax the old reader took as it is); NULL out of memory. */
static const char *cstr(struct rd *r, const char *s, size_t n)
{
    size_t cap = r->p->cbuf_cap;
    if (pflex_grow((void **)&r->p->cbuf, &cap, n + 1, 1) < 0)
        return NULL;
    r->p->cbuf_cap = cap;
    memcpy(r->p->cbuf, s, n);
    r->p->cbuf[n] = '\0';
    return r->p->cbuf;
}

static int oom(struct rd *r)
{
    return pflex_error_set(r->err, "prometheus %s: out of memory", r->p->url);
}

static int syntax(struct rd *r)
{
    return pflex_error_set(r->err, "prometheus %s: %s, byte %zu: %s", r->p->url, r->what, r->s.at,
                           r->s.err ? r->s.err : "not JSON");
}

/* The string that comes next into x (its text in the scratch when it has
 * escapes). */
static int read_str(struct rd *r, struct str *x)
{
    const char *raw;
    size_t n;
    int esc;
    if (pflex_jscan_string_span(&r->s, &raw, &n, &esc) < 0)
        return -1;
    x->on = 1;
    x->raw = raw;
    x->n = n;
    if (!esc)
        return 0;
    prom_source_t *p = r->p;
    if (pflex_grow((void **)&p->tmp, &p->tmp_cap, p->ntmp + n + 1, 1) < 0)
        return oom(r);
    x->raw = NULL;
    x->off = p->ntmp;
    x->n = pflex_jscan_unescape(raw, n, p->tmp + p->ntmp);
    p->ntmp += x->n + 1;
    return 0;
}

static uint64_t key_bit(const char *k, size_t n)
{
    unsigned h = (unsigned)n * 7u;
    if (n)
        h += (unsigned char)k[0] * 31u + (unsigned char)k[n - 1] * 131u + (unsigned char)k[n / 2];
    return (uint64_t)1 << (h & 63);
}

/* The keyset of the object just entered (depth s.depth), emptied. */
static struct keyset *keys_open(struct rd *r)
{
    prom_source_t *p = r->p;
    if (!p->keys && !(p->keys = calloc(PFLEX_JSCAN_DEPTH + 1, sizeof *p->keys)))
        return NULL;
    struct keyset *ks = &p->keys[r->s.depth];
    ks->bits = 0;
    ks->n = ks->ntext = 0;
    return ks;
}

/* The next key of the object entered (0 at its end, -1 on a failure,
 * with err set), its text in key, n; in the DCGM answer a key met before
 * in the object fails. */
static int next_key(struct rd *r, struct keyset *ks, const char **key, size_t *n)
{
    const char *raw;
    int esc;
    int k = pflex_jscan_key_span(&r->s, &raw, n, &esc);
    if (k < 0)
        return syntax(r);
    if (k == 0)
        return 0;
    struct keyref kr = {.raw = raw, .n = *n};
    if (esc) {
        if (pflex_grow((void **)&ks->text, &ks->text_cap, ks->ntext + *n + 1, 1) < 0)
            return oom(r);
        kr.raw = NULL;
        kr.off = ks->ntext;
        kr.n = pflex_jscan_unescape(raw, *n, ks->text + ks->ntext);
        ks->ntext += kr.n + 1;
        *n = kr.n;
    }
    *key = kr.raw ? kr.raw : ks->text + kr.off;
    if (!r->dcgm)
        return 1;
    uint64_t bit = key_bit(*key, *n);
    if (ks->bits & bit)
        for (size_t i = 0; i < ks->n; i++) {
            const char *o = ks->k[i].raw ? ks->k[i].raw : ks->text + ks->k[i].off;
            if (ks->k[i].n == *n && !memcmp(o, *key, *n))
                return pflex_error_set(r->err, "prometheus %s: %s, byte %zu: duplicate key '%.*s'", r->p->url,
                                       r->what, (size_t)(r->s.p - r->s.start), (int)(*n > 60 ? 60 : *n), *key);
        }
    ks->bits |= bit;
    if (pflex_grow((void **)&ks->k, &ks->cap, ks->n + 1, sizeof *ks->k) < 0)
        return oom(r);
    ks->k[ks->n++] = kr;
    /* the text may have moved: point at it again */
    *key = kr.raw ? kr.raw : ks->text + kr.off;
    return 1;
}

static int key_is(const char *k, size_t n, const char *z, size_t zn)
{
    return n == zn && !memcmp(k, z, n);
}

/* Skip the value that comes next; in the DCGM answer its objects' keys
 * are checked for duplicates too. */
static int skip(struct rd *r)
{
    enum pflex_jtype t = pflex_jscan_peek(&r->s);
    if (!r->dcgm || (t != PFLEX_J_OBJECT && t != PFLEX_J_ARRAY))
        return pflex_jscan_skip(&r->s) < 0 ? syntax(r) : 0;
    if (pflex_jscan_enter(&r->s, t) < 0)
        return syntax(r);
    int k;
    if (t == PFLEX_J_ARRAY) {
        while ((k = pflex_jscan_item(&r->s)) == 1)
            if (skip(r) < 0)
                return -1;
        return k < 0 ? syntax(r) : 0;
    }
    struct keyset *ks = keys_open(r);
    if (!ks)
        return oom(r);
    const char *key;
    size_t n;
    while ((k = next_key(r, ks, &key, &n)) == 1)
        if (skip(r) < 0)
            return -1;
    return k;
}

/* The metric object that comes next: its labels into e. */
static int read_metric(struct rd *r, struct elem *e)
{
    for (int l = 0; l < L_COUNT; l++)
        e->lab[l].on = 0;
    if (pflex_jscan_peek(&r->s) != PFLEX_J_OBJECT) {
        e->metric = 0;
        return skip(r);
    }
    e->metric = 1;
    if (pflex_jscan_enter(&r->s, PFLEX_J_OBJECT) < 0)
        return syntax(r);
    struct keyset *ks = keys_open(r);
    if (!ks)
        return oom(r);
    const char *key;
    size_t n;
    int k;
    while ((k = next_key(r, ks, &key, &n)) == 1) {
        int l = L_COUNT;
        if (n == 8 || n == 3 || n == 12)
            for (l = 0; l < L_COUNT; l++)
                if (key_is(key, n, label_keys[l].key, label_keys[l].n))
                    break;
        if (l == L_COUNT) {
            if (skip(r) < 0)
                return -1;
        } else if (pflex_jscan_peek(&r->s) == PFLEX_J_STRING) {
            if (read_str(r, &e->lab[l]) < 0)
                return syntax(r);
        } else {
            e->lab[l].on = 0;       /* not a string: as if absent */
            if (skip(r) < 0)
                return -1;
        }
    }
    return k;
}

/* The "value" array that comes next: [time, "value", ...] into e. */
static int read_value(struct rd *r, struct elem *e)
{
    e->value_n = 0;
    e->ts_on = e->vs.on = 0;
    if (pflex_jscan_peek(&r->s) != PFLEX_J_ARRAY) {
        e->value = 0;
        return skip(r);
    }
    e->value = 1;
    if (pflex_jscan_enter(&r->s, PFLEX_J_ARRAY) < 0)
        return syntax(r);
    int k;
    while ((k = pflex_jscan_item(&r->s)) == 1) {
        enum pflex_jtype t = pflex_jscan_peek(&r->s);
        if (e->value_n == 0 && t == PFLEX_J_NUMBER) {
            if (pflex_jscan_number(&r->s, &e->ts, NULL) < 0)
                return syntax(r);
            e->ts_on = 1;
        } else if (e->value_n == 1 && t == PFLEX_J_STRING) {
            if (read_str(r, &e->vs) < 0)
                return syntax(r);
        } else if (skip(r) < 0)
            return -1;
        if (e->value_n < 3)
            e->value_n++;
    }
    return k < 0 ? syntax(r) : 0;
}

/* One element of data.result into e: 1, or -1 (an element that is not an
 * object: 0, skipped). */
static int read_elem(struct rd *r, struct elem *e)
{
    r->p->ntmp = 0;
    e->metric = e->value = e->values = 0;
    e->value_n = 0;
    e->ts_on = e->vs.on = 0;
    for (int l = 0; l < L_COUNT; l++)
        e->lab[l].on = 0;
    if (pflex_jscan_peek(&r->s) != PFLEX_J_OBJECT)
        return skip(r) < 0 ? -1 : 0;
    if (pflex_jscan_enter(&r->s, PFLEX_J_OBJECT) < 0)
        return syntax(r);
    struct keyset *ks = keys_open(r);
    if (!ks)
        return oom(r);
    const char *key;
    size_t n;
    int k;
    while ((k = next_key(r, ks, &key, &n)) == 1) {
        int rc;
        if (key_is(key, n, "metric", 6))
            rc = read_metric(r, e);
        else if (key_is(key, n, "value", 5))
            rc = read_value(r, e);
        else if (key_is(key, n, "values", 6)) {
            /* read once the metric is known, which may come after it */
            e->values = pflex_jscan_peek(&r->s) == PFLEX_J_ARRAY;
            e->values_at = (size_t)(r->s.p - r->s.start);
            rc = skip(r);
        } else
            rc = skip(r);
        if (rc < 0)
            return -1;
    }
    return k < 0 ? -1 : 1;
}

/* The families whose NaN for a GPU that is up makes the read fail. */
static int gpu_family(const char *name, size_t n)
{
    return key_is(name, n, "DCGM_FI_DEV_POWER_USAGE", 23) || key_is(name, n, "DCGM_FI_DEV_POWER_MGMT_LIMIT", 28)
           || key_is(name, n, "pflex_gpu_limit_min_watts", 25) || key_is(name, n, "pflex_gpu_limit_max_watts", 25)
           || key_is(name, n, "pflex_gpu_up", 12);
}

/* strtod of s[0..n) as a C string: *whole when it took all of it. */
static int c_strtod(struct rd *r, const char *s, size_t n, double *v, int *whole)
{
    /* the common plain decimal: at most 15 digits, exact as strtod */
    if (n && n <= 15) {
        size_t i = s[0] == '-', dig = 0, pt = 0;
        for (; i < n; i++)
            if (s[i] >= '0' && s[i] <= '9')
                dig++;
            else if (s[i] == '.' && !pt && dig)
                pt = i;
            else
                break;
        if (i == n && dig && (!pt || pt < n - 1) && tm_parse_double(s, n, v) == 0) {
            *whole = 1;
            return 0;
        }
    }
    const char *z = cstr(r, s, n);
    if (!z)
        return oom(r);
    char *end;
    *v = strtod(z, &end);
    *whole = !*end;
    return 0;
}

/* strtol(s, &end, 10) of s[0..n) as a C string: *whole when it took all of it. */
static int c_strtol(struct rd *r, const char *s, size_t n, long *v, int *whole)
{
    long x;
    if (tm_parse_index(s, n, &x) == 0) {
        *v = x;
        *whole = 1;
        return 0;
    }
    const char *z = cstr(r, s, n);
    if (!z)
        return oom(r);
    char *end;
    *v = strtol(z, &end, 10);
    *whole = !*end;
    return 0;
}

/* An element of pflex's own answer (the old reader's parse_own). */
static int own_elem(struct rd *r, const struct elem *e)
{
    prom_source_t *p = r->p;
    if (e->value && e->ts_on)
        prom_judge_stamp(r->jd, e->ts);
    const struct str *nm = &e->lab[L_NAME], *ho = &e->lab[L_HOSTNAME], *gl = &e->lab[L_GPU];
    if (!e->metric || !nm->on || !ho->on || !e->value || !e->vs.on)
        return 0;
    const char *name = str_at(r, nm), *host = str_at(r, ho);
    double v;
    int whole;
    long gi = -1;
    if (c_strtod(r, str_at(r, &e->vs), e->vs.n, &v, &whole) < 0)
        return -1;
    if (!whole || !isfinite(v)) {
        if (!gl->on || !gpu_family(name, nm->n))
            return 0;
        if (c_strtol(r, str_at(r, gl), gl->n, &gi, &whole) < 0)
            return -1;
        struct host *h = whole && gi >= 0 && gi <= 4096 ? prom_host_get(p, host, ho->n) : NULL;
        struct agent_gpu *g = h ? prom_gpu_get(p, h, (int)gi) : NULL;
        if (g)
            h->nan[g - h->gpu] = 1;
        return 0;
    }
    struct host *h = prom_host_get(p, host, ho->n);
    if (!h)
        return 0;
    if (key_is(name, nm->n, "pflex_job_throughput", 20)) {
        const struct str *j = e->lab[L_EXPORTED_JOB].on ? &e->lab[L_EXPORTED_JOB] : &e->lab[L_JOB];
        if (!j->on || !j->n || j->n >= sizeof h->job[0].name || h->njobs == AGENT_MAX_JOBS || v < 0)
            return 0;
        struct agent_job *o = &h->job[h->njobs++];
        memset(o, 0, sizeof *o);
        memcpy(o->name, str_at(r, j), j->n);
        o->throughput = v;
        return 0;
    }
    if (!gl->on)
        return 0;
    if (c_strtol(r, str_at(r, gl), gl->n, &gi, &whole) < 0)
        return -1;
    if (!whole || gi < 0 || gi > 4096)
        return 0;
    struct agent_gpu *g = prom_gpu_get(p, h, (int)gi);
    if (!g)
        return 0;
    if (key_is(name, nm->n, "pflex_gpu_limit_min_watts", 25))
        g->min_w = v;
    else if (key_is(name, nm->n, "pflex_gpu_limit_max_watts", 25))
        g->max_w = v;
    else if (key_is(name, nm->n, "pflex_gpu_up", 12))
        g->ok = v == 1;
    return 0;
}

/* One DCGM sample, as the telemetry reader takes it: [time, "value"],
 * "NaN" and the infinities and DCGM's blanks skipped; its value applied
 * to the GPU. */
static int dcgm_sample(struct rd *r, double ts, int ts_on, size_t n, const struct str *vs, int field,
                       const struct str *host, long gpu, int matrix_i)
{
    if (n != 2 || !ts_on || !vs->on || !isfinite(ts)) {
        if (matrix_i >= 0)
            return pflex_error_set(r->err, "prometheus %s: %s: data.result[%zu].values[%d]: not [time, \"value\"]",
                                   r->p->url, r->what, r->index, matrix_i);
        return pflex_error_set(r->err, "prometheus %s: %s: data.result[%zu].value: not [time, \"value\"]",
                               r->p->url, r->what, r->index);
    }
    const char *s = str_at(r, vs);
    double v;
    if ((vs->n == 3 && !memcmp(s, "NaN", 3)) || (vs->n == 4 && (!memcmp(s, "+Inf", 4) || !memcmp(s, "-Inf", 4)))) {
        r->nsamples++;
        return 0;
    }
    if (tm_parse_double(s, vs->n, &v) < 0)
        return dcgm_sample(r, ts, 0, n, vs, field, host, gpu, matrix_i);
    r->nsamples++;
    if (pflex_dcgm_is_blank(v) || gpu < 0 || (field != PFLEX_DCGM_POWER_USAGE && field != PFLEX_DCGM_POWER_LIMIT))
        return 0;
    struct host *h = host->on ? prom_host_get(r->p, str_at(r, host), host->n) : NULL;
    struct agent_gpu *g = h ? prom_gpu_get(r->p, h, (int)gpu) : NULL;
    if (!g || !(v >= 0 && v < 1e5))
        return 0;
    if (field == PFLEX_DCGM_POWER_USAGE)
        g->power_w = v;
    else
        g->limit_w = v;
    return 0;
}

/* An element of the DCGM answer: the telemetry reader's checks and
 * samples, and the old reader's judging (stamps, NaN for a GPU). */
static int dcgm_elem(struct rd *r, const struct elem *e, int is_obj)
{
    prom_source_t *p = r->p;
    if (!is_obj || !e->metric)
        return pflex_error_set(r->err, "prometheus %s: %s: data.result[%zu]: no \"metric\" object", p->url,
                               r->what, r->index);
    if (!(r->matrix ? e->values : e->value))
        return pflex_error_set(r->err, "prometheus %s: %s: data.result[%zu]: no \"%s\"", p->url, r->what,
                               r->index, r->matrix ? "values" : "value");
    const struct str *nm = &e->lab[L_NAME];
    int field = nm->on ? pflex_dcgm_by_name(str_at(r, nm), nm->n) : -1;
    long gpu = -1;
    const struct str *host = NULL;
    if (field >= 0) {
        const struct str *g = &e->lab[L_GPU], *mig = &e->lab[L_MIG];
        if (g->on && tm_parse_index(str_at(r, g), g->n, &gpu) < 0)
            return pflex_error_set(r->err, "prometheus %s: %s: data.result[%zu]: label gpu=\"%.*s\" is not a GPU index",
                                   p->url, r->what, r->index, (int)(g->n > 40 ? 40 : g->n), str_at(r, g));
        if (mig->on && mig->n && gpu >= 0) {
            long gi;
            if (tm_parse_index(str_at(r, mig), mig->n, &gi) < 0 || gi > 99 || gpu > 999)
                return pflex_error_set(r->err, "prometheus %s: %s: data.result[%zu]: label GPU_I_ID is not a MIG "
                                       "instance id (0-99)", p->url, r->what, r->index);
            gpu = 10000 + 100 * gpu + gi;
        }
        host = e->lab[L_HOSTNAME].on ? &e->lab[L_HOSTNAME] : e->lab[L_HOSTNAME_LC].on ? &e->lab[L_HOSTNAME_LC]
               : &e->lab[L_INSTANCE];
    }
    if (r->matrix) {
        /* the values, read again now that the metric is known */
        struct pflex_jscan sub = r->s;
        r->s.p = r->s.start + e->values_at;
        r->s.depth = 0;
        r->s.first = 0;
        int k, i = 0, rc = 0;
        if (pflex_jscan_enter(&r->s, PFLEX_J_ARRAY) < 0)
            rc = syntax(r);
        while (rc == 0 && (k = pflex_jscan_item(&r->s)) == 1) {
            if (field < 0) {
                r->nsamples++;
                rc = pflex_jscan_skip(&r->s) < 0 ? syntax(r) : 0;
                continue;
            }
            struct elem pair;
            if (read_value(r, &pair) < 0)
                rc = -1;
            else
                rc = dcgm_sample(r, pair.ts, pair.ts_on && pair.value, pair.value ? pair.value_n : 0, &pair.vs,
                                 field, host, gpu, i);
            i++;
        }
        r->s = sub;
        if (rc < 0)
            return -1;
    } else if (field < 0)
        r->nsamples++;
    else if (dcgm_sample(r, e->ts, e->ts_on, e->value_n, &e->vs, field, host, gpu, -1) < 0)
        return -1;
    if (r->replay)
        return 0;
    /* the judging reads "value", whatever the result's type */
    if (e->value && e->ts_on)
        prom_judge_stamp(r->jd, e->ts);
    const struct str *ho = &e->lab[L_HOSTNAME], *gl = &e->lab[L_GPU];
    if (!nm->on || !ho->on || !gl->on || !e->value || !e->vs.on || !gpu_family(str_at(r, nm), nm->n))
        return 0;
    double v;
    long gi;
    int whole;
    if (tm_parse_double(str_at(r, &e->vs), e->vs.n, &v) == 0)
        return 0;           /* finite */
    if (c_strtod(r, str_at(r, &e->vs), e->vs.n, &v, &whole) < 0 || c_strtol(r, str_at(r, gl), gl->n, &gi, &whole) < 0)
        return -1;
    if (isfinite(v) || !whole || gi < 0 || gi > 4096)
        return 0;
    if (pflex_grow((void **)&p->marks, &p->marks_cap, p->nmarks + 1, sizeof *p->marks) < 0
        || pflex_grow((void **)&p->mtext, &p->mtext_cap, p->nmtext + ho->n, 1) < 0)
        return oom(r);
    memcpy(p->mtext + p->nmtext, str_at(r, ho), ho->n);
    p->marks[p->nmarks++] = (struct mark){.off = p->nmtext, .n = ho->n, .gpu = (int)gi};
    p->nmtext += ho->n;
    return 0;
}

/* The data.result array that comes next, element by element. */
static int read_result(struct rd *r)
{
    if (pflex_jscan_enter(&r->s, PFLEX_J_ARRAY) < 0)
        return syntax(r);
    struct elem e;
    int k;
    r->index = 0;
    while ((k = pflex_jscan_item(&r->s)) == 1) {
        int got = read_elem(r, &e);
        if (got < 0)
            return -1;
        if ((r->dcgm ? dcgm_elem(r, &e, got) : got ? own_elem(r, &e) : 0) < 0)
            return -1;
        r->index++;
    }
    return k < 0 ? syntax(r) : 0;
}

/* An answer, read whole: data.result's elements taken as they come. */
static int read_answer(struct rd *r, const char *buf, size_t len)
{
    prom_source_t *p = r->p;
    pflex_jscan_init(&r->s, buf, len);
    char status[64] = "", error[160] = "";
    int status_on = 0, status_ok = 0;
    int data = 0, result = 0, type_ok = 0, type_on = 0;
    size_t result_at = 0, pending = 0;
    if (pflex_jscan_peek(&r->s) != PFLEX_J_OBJECT || pflex_jscan_enter(&r->s, PFLEX_J_OBJECT) < 0)
        return pflex_error_set(r->err, "prometheus %s: %s: not a JSON object", p->url, r->what);
    struct keyset *ks = keys_open(r);
    if (!ks)
        return oom(r);
    const char *key;
    size_t n;
    int k;
    while ((k = next_key(r, ks, &key, &n)) == 1) {
        if (key_is(key, n, "status", 6) || key_is(key, n, "error", 5)) {
            /* kept as text: the elements' scratch is reused */
            int st = key[0] == 's';
            struct str x = {0};
            if (pflex_jscan_peek(&r->s) == PFLEX_J_STRING) {
                if (read_str(r, &x) < 0)
                    return syntax(r);
            } else if (skip(r) < 0)
                return -1;
            char *to = st ? status : error;
            to[0] = '\0';
            if (st)
                status_on = x.on;
            if (x.on)
                snprintf(to, sizeof status, "%.*s", (int)(x.n < sizeof status ? x.n : sizeof status - 1), str_at(r, &x));
            if (st)
                status_ok = x.on && key_is(str_at(r, &x), x.n, "success", 7);
            continue;
        }
        if (!key_is(key, n, "data", 4)) {
            if (skip(r) < 0)
                return -1;
            continue;
        }
        /* the last "data" counts (jansson keeps a duplicate's last) */
        data = pflex_jscan_peek(&r->s) == PFLEX_J_OBJECT;
        result = type_on = type_ok = 0;
        pending = 0;
        if (!data) {
            if (skip(r) < 0)
                return -1;
            continue;
        }
        if (pflex_jscan_enter(&r->s, PFLEX_J_OBJECT) < 0)
            return syntax(r);
        struct keyset *dks = keys_open(r);
        if (!dks)
            return oom(r);
        while ((k = next_key(r, dks, &key, &n)) == 1) {
            if (key_is(key, n, "resultType", 10)) {
                type_on = pflex_jscan_peek(&r->s) == PFLEX_J_STRING;
                struct str t = {0};
                if (type_on ? read_str(r, &t) < 0 && syntax(r) : skip(r) < 0)
                    return -1;
                r->matrix = type_on && key_is(str_at(r, &t), t.n, "matrix", 6);
                type_ok = type_on && (r->matrix || key_is(str_at(r, &t), t.n, "vector", 6));
            } else if (key_is(key, n, "result", 6)) {
                result = pflex_jscan_peek(&r->s) == PFLEX_J_ARRAY;
                if (!r->dcgm) {
                    /* the last "result" counts: what an earlier one made goes */
                    prom_hosts_clear(p);
                    *r->jd = (struct judge){.now_s = r->jd->now_s};
                }
                if (result && (!r->dcgm || type_ok)) {
                    if (read_result(r) < 0)
                        return -1;
                } else {
                    /* the DCGM answer's type not known yet: read once it is */
                    pending = result && r->dcgm;
                    result_at = (size_t)(r->s.p - r->s.start);
                    if (skip(r) < 0)
                        return -1;
                }
            } else if (skip(r) < 0)
                return -1;
        }
        if (k < 0)
            return -1;
        if (pending && type_ok) {
            struct pflex_jscan keep = r->s;
            r->s.p = r->s.start + result_at;
            r->s.depth = 0;
            r->s.first = 0;
            if (read_result(r) < 0)
                return -1;
            r->s = keep;
        }
    }
    if (k < 0)
        return -1;
    if (pflex_jscan_end(&r->s) < 0)
        return syntax(r);
    if (!status_on)
        return pflex_error_set(r->err, "prometheus %s: %s: not a Prometheus API response (no \"status\")", p->url,
                               r->what);
    if (!status_ok)
        return pflex_error_set(r->err, "prometheus %s: %s: Prometheus says %s: %s", p->url, r->what, status,
                               error[0] ? error : "(no message)");
    if (!data || !result || (r->dcgm && !type_on))
        return pflex_error_set(r->err, "prometheus %s: %s: data.resultType or data.result missing", p->url, r->what);
    if (r->dcgm && !type_ok)
        return pflex_error_set(r->err, "prometheus %s: %s: data.resultType: pflex reads vector and matrix", p->url,
                               r->what);
    return 0;
}

/* The marks (NaN samples of GPUs in the DCGM answer) applied.  The old
 * reader made their hosts and GPUs before the samples' ones: where both
 * made some, the order would differ, and the samples are read again after
 * the marks (1 returned: the caller replays). */
static int apply_marks(prom_source_t *p, size_t n_own, size_t made_by_samples)
{
    if (made_by_samples)
        for (size_t i = 0; i < p->nmarks; i++) {
            const struct mark *m = &p->marks[i];
            if (!m->n || m->n >= sizeof p->hosts->name)
                continue;       /* never a host, in either order */
            struct host *h = prom_host_find(p, p->mtext + m->off, m->n);
            if (!h || !prom_gpu_find(h, m->gpu)) {
                /* back to what pflex's own answer made */
                for (size_t k = 0; k < n_own; k++) {
                    struct host *o = &p->hosts[k];
                    o->ngpus = o->ngpus_own;
                    for (size_t g = 0; g < o->ngpus; g++)
                        o->gpu[g].power_w = o->gpu[g].limit_w = NAN;
                }
                p->nhosts = 0;
                pflex_strtab_clear(&p->names);
                for (size_t k = 0; k < n_own; k++)
                    if (pflex_strtab_intern(&p->names, p->hosts[k].name, strlen(p->hosts[k].name), NULL) != (long)k)
                        return -1;
                p->nhosts = n_own;
                apply_marks(p, n_own, 0);
                return 1;
            }
        }
    for (size_t i = 0; i < p->nmarks; i++) {
        const struct mark *m = &p->marks[i];
        struct host *h = prom_host_get(p, p->mtext + m->off, m->n);
        struct agent_gpu *g = h ? prom_gpu_get(p, h, m->gpu) : NULL;
        if (g)
            h->nan[g - h->gpu] = 1;
    }
    return 0;
}

/* Both answers read into p's hosts (pflex's own first, then the DCGM
 * one), the samples' stamps into jd: 0, or -1 with err.  *ndcgm and *nown
 * count the samples of each (the DCGM answer's skipped ones too). */
int prom_answers_read(prom_source_t *p, const char *dcgm, size_t dlen, const char *own, size_t olen,
                      struct judge *jd, size_t *ndcgm, size_t *nown, pflex_error_t *err)
{
    struct rd r = {.p = p, .what = "pflex's own answer", .jd = jd, .err = err};
    p->nmarks = p->nmtext = 0;
    if (read_answer(&r, own, olen) < 0)
        return -1;
    size_t n_own = p->nhosts;
    *nown = jd->n;
    for (size_t k = 0; k < p->nhosts; k++)
        p->hosts[k].ngpus_own = p->hosts[k].ngpus;
    r = (struct rd){.p = p, .what = "the DCGM answer", .dcgm = 1, .jd = jd, .err = err};
    size_t made = p->made;
    if (read_answer(&r, dcgm, dlen) < 0)
        return -1;
    *ndcgm = r.nsamples;
    int again = apply_marks(p, n_own, p->made - made);
    if (again < 0)
        return pflex_error_set(err, "prometheus %s: out of memory", p->url);
    if (again) {
        struct rd rr = {.p = p, .what = "the DCGM answer", .dcgm = 1, .replay = 1, .jd = jd, .err = err};
        if (read_answer(&rr, dcgm, dlen) < 0)
            return -1;
    }
    return 0;
}
