/* prom_source.c — the site's telemetry from Prometheus (prom_source.h).
 *
 * Two instant queries a period, both by the names the agents export:
 *   {__name__=~"DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_POWER_MGMT_LIMIT"}
 *     read by the telemetry readers (pflex_tm_read_mem, Prometheus API
 *     JSON), one series per (Hostname, gpu, field);
 *   {__name__=~"pflex_gpu_limit_min_watts|pflex_gpu_limit_max_watts|
 *               pflex_gpu_up|pflex_job_throughput"}
 *     pflex's own families, which the readers do not know, read here.
 * A job's label is "job" on the agent; Prometheus renames it
 * "exported_job" when its own scrape job label is kept (honor_labels
 * false, the default), so that one is read first.  A dead agent's series
 * go stale at its first failed scrape and drop out of instant queries: its
 * host is then missing, and the controller counts it as down.
 *
 * An answer is judged before it is believed (the controller then holds, as
 * when the server is unreachable): a sample stamped more than max_age_s
 * from now (a server replaying an old answer, a clock gone wrong), an empty
 * result (a server up but scraping nothing), and NaN for a GPU its agent
 * says is up (a power, limit or range) make the whole read fail; NaN for a
 * GPU its agent says is down is what the agent exports for it, and a job's
 * NaN rate is no rate yet.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <jansson.h>
#include "controller/prom_source.h"
#include "lib/util/strtab.h"
#include "pflex/net/http.h"
#include "pflex/io/telemetry.h"
#include "lib/util/grow.h"

#define MAX_HOSTS 100000

struct host {
    char name[64];
    size_t ngpus, njobs;
    struct agent_gpu gpu[AGENT_MAX_GPUS];
    unsigned char nan[AGENT_MAX_GPUS];  /* a power, limit or range of gpu[k] was NaN */
    struct agent_job job[AGENT_MAX_JOBS];
};

struct prom_source {
    char url[512];
    long timeout_ms;
    double max_age_s;           /* samples older (or newer) than this are stale; <= 0: unchecked */
    struct host *hosts;
    size_t nhosts, cap;
    struct pflex_strtab names;  /* hosts[i].name is names.s[i] */
};

int prom_source_create(const char *url, long timeout_ms, prom_source_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) || strlen(url) >= 480)
        return pflex_error_set(err, "Prometheus URL '%s' must start with http:// or https://", url ? url : "");
    prom_source_t *p = calloc(1, sizeof *p);
    if (!p)
        return pflex_error_set(err, "out of memory");
    snprintf(p->url, sizeof p->url, "%s", url);
    size_t l = strlen(p->url);
    while (l && p->url[l - 1] == '/')
        p->url[--l] = '\0';
    p->timeout_ms = timeout_ms > 0 ? timeout_ms : 2000;
    *out = p;
    return 0;
}

void prom_source_set_max_age(prom_source_t *p, double max_age_s)
{
    p->max_age_s = max_age_s;
}

void prom_source_destroy(prom_source_t *p)
{
    if (!p)
        return;
    free(p->hosts);
    pflex_strtab_fini(&p->names);
    free(p);
}

/* Forget every host (a new read starts). */
static void hosts_clear(prom_source_t *p)
{
    p->nhosts = 0;
    pflex_strtab_clear(&p->names);
}

static struct host *host_find(const prom_source_t *p, const char *name, size_t len)
{
    long k = pflex_strtab_find(&p->names, name, len);
    return k >= 0 ? &p->hosts[k] : NULL;
}

static struct host *host_get(prom_source_t *p, const char *name, size_t len)
{
    if (len == 0 || len >= sizeof p->hosts->name)
        return NULL;
    struct host *found = host_find(p, name, len);
    if (found)
        return found;
    if (p->nhosts == MAX_HOSTS)
        return NULL;
    if (pflex_grow((void **)&p->hosts, &p->cap, p->nhosts + 1, sizeof *p->hosts) < 0)
        return NULL;
    /* the names' indices are the hosts': both cleared together, then grown
     * in this order */
    if (pflex_strtab_intern(&p->names, name, len, NULL) != (long)p->nhosts)
        return NULL;
    struct host *h = &p->hosts[p->nhosts++];
    memset(h, 0, sizeof *h);
    memcpy(h->name, name, len);
    return h;
}

static struct agent_gpu *gpu_get(struct host *h, int index)
{
    for (size_t k = 0; k < h->ngpus; k++)
        if (h->gpu[k].index == index)
            return &h->gpu[k];
    if (h->ngpus == AGENT_MAX_GPUS)
        return NULL;
    h->nan[h->ngpus] = 0;
    struct agent_gpu *g = &h->gpu[h->ngpus++];
    *g = (struct agent_gpu){.index = index, .power_w = NAN, .limit_w = NAN, .min_w = NAN,
                            .max_w = NAN, .ok = 1};
    return g;
}

static const char *label(json_t *metric, const char *name)
{
    json_t *v = json_object_get(metric, name);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* What a read found wrong with the answers' samples. */
struct judge {
    double now_s;
    size_t n;                   /* samples seen */
    double oldest, newest;      /* their stamps (unix s) */
};

/* One sample's stamp into jd. */
static void judge_stamp(struct judge *jd, json_t *val)
{
    json_t *ts = json_is_array(val) ? json_array_get(val, 0) : NULL;
    if (!json_is_number(ts))
        return;
    double t = json_number_value(ts);
    if (!jd->n || t < jd->oldest)
        jd->oldest = t;
    if (!jd->n || t > jd->newest)
        jd->newest = t;
    jd->n++;
}

/* The families whose NaN for a GPU that is up makes the read fail. */
static int gpu_family(const char *name)
{
    return !strcmp(name, "DCGM_FI_DEV_POWER_USAGE") || !strcmp(name, "DCGM_FI_DEV_POWER_MGMT_LIMIT")
           || !strcmp(name, "pflex_gpu_limit_min_watts") || !strcmp(name, "pflex_gpu_limit_max_watts")
           || !strcmp(name, "pflex_gpu_up");
}

/* The DCGM answer's stamps and NaNs (its values are read by the telemetry
 * readers, which skip NaN without saying whose). */
static void judge_dcgm(prom_source_t *p, const char *buf, size_t len, struct judge *jd)
{
    json_t *j = json_loadb(buf, len, 0, NULL);
    json_t *res = json_object_get(json_object_get(j, "data"), "result"), *e;
    size_t i;
    json_array_foreach(res, i, e) {
        json_t *m = json_object_get(e, "metric"), *val = json_object_get(e, "value");
        judge_stamp(jd, val);
        const char *name = label(m, "__name__"), *host = label(m, "Hostname"), *gs = label(m, "gpu");
        json_t *vs = json_is_array(val) ? json_array_get(val, 1) : NULL;
        if (!name || !host || !gs || !gpu_family(name) || !json_is_string(vs))
            continue;
        char *end;
        double v = strtod(json_string_value(vs), &end);
        long gi = strtol(gs, &end, 10);
        if (isfinite(v) || *end || gi < 0 || gi > 4096)
            continue;
        struct host *h = host_get(p, host, strlen(host));
        struct agent_gpu *g = h ? gpu_get(h, (int)gi) : NULL;
        if (g)
            h->nan[g - h->gpu] = 1;
    }
    json_decref(j);
}

/* pflex's own families: a Prometheus API vector answer. */
static int parse_own(prom_source_t *p, const char *buf, size_t len, struct judge *jd, pflex_error_t *err)
{
    json_error_t je;
    json_t *j = json_loadb(buf, len, 0, &je);
    json_t *data = json_object_get(j, "data"), *res = json_object_get(data, "result"), *e;
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "status"))
        || strcmp(json_string_value(json_object_get(j, "status")), "success") || !json_is_array(res)) {
        json_decref(j);
        return pflex_error_set(err, "prometheus: the answer is not a successful query result%s%s",
                               je.text[0] ? ": " : "", je.text);
    }
    size_t i;
    json_array_foreach(res, i, e) {
        json_t *m = json_object_get(e, "metric"), *val = json_object_get(e, "value");
        const char *name = label(m, "__name__"), *host = label(m, "Hostname");
        json_t *vs = json_is_array(val) ? json_array_get(val, 1) : NULL;
        judge_stamp(jd, val);
        if (!name || !host || !json_is_string(vs))
            continue;
        char *end;
        double v = strtod(json_string_value(vs), &end);
        if (*end || !isfinite(v)) {
            const char *gs = label(m, "gpu");
            long gi = gs ? strtol(gs, &end, 10) : -1;
            struct host *h = gs && !*end && gi >= 0 && gi <= 4096 && gpu_family(name)
                             ? host_get(p, host, strlen(host)) : NULL;
            struct agent_gpu *g = h ? gpu_get(h, (int)gi) : NULL;
            if (g)
                h->nan[g - h->gpu] = 1;
            continue;
        }
        struct host *h = host_get(p, host, strlen(host));
        if (!h)
            continue;
        if (!strcmp(name, "pflex_job_throughput")) {
            const char *job = label(m, "exported_job");
            if (!job)
                job = label(m, "job");
            if (!job || !*job || strlen(job) >= sizeof h->job[0].name || h->njobs == AGENT_MAX_JOBS || v < 0)
                continue;
            struct agent_job *o = &h->job[h->njobs++];
            memset(o, 0, sizeof *o);
            snprintf(o->name, sizeof o->name, "%s", job);
            o->throughput = v;
            continue;
        }
        const char *gs = label(m, "gpu");
        long gi = gs ? strtol(gs, &end, 10) : -1;
        if (!gs || *end || gi < 0 || gi > 4096)
            continue;
        struct agent_gpu *g = gpu_get(h, (int)gi);
        if (!g)
            continue;
        if (!strcmp(name, "pflex_gpu_limit_min_watts"))
            g->min_w = v;
        else if (!strcmp(name, "pflex_gpu_limit_max_watts"))
            g->max_w = v;
        else if (!strcmp(name, "pflex_gpu_up"))
            g->ok = v == 1;
    }
    json_decref(j);
    return 0;
}

/* The answers' samples judged (struct judge): 0, or -1 with err and
 * *stale set when that is what is wrong. */
static int judge_read(const prom_source_t *p, const struct judge *jd, size_t ndcgm, size_t nown, int *stale,
                      pflex_error_t *err)
{
    if (!ndcgm || !nown)
        return pflex_error_set(err, "prometheus %s: an empty result (no %s series): nothing scraped", p->url,
                               ndcgm ? "pflex_gpu_*" : "DCGM_FI_DEV_POWER_*");
    for (size_t i = 0; i < p->nhosts; i++) {
        const struct host *h = &p->hosts[i];
        for (size_t k = 0; k < h->ngpus; k++)
            if (h->nan[k] && h->gpu[k].ok)
                return pflex_error_set(err, "prometheus %s: NaN for GPU %d of host '%s', which is up", p->url,
                                       h->gpu[k].index, h->name);
    }
    if (p->max_age_s > 0 && isfinite(jd->now_s)) {
        double old = jd->now_s - jd->oldest, ahead = jd->newest - jd->now_s;
        if (old > p->max_age_s || ahead > p->max_age_s) {
            *stale = 1;
            return pflex_error_set(err, "prometheus %s: samples %.0f s %s (stale past %.0f s)", p->url,
                                   old > p->max_age_s ? old : ahead,
                                   old > p->max_age_s ? "old" : "ahead of this clock", p->max_age_s);
        }
    }
    return 0;
}

int prom_source_parse(prom_source_t *p, const char *dcgm, size_t dlen, const char *own, size_t olen,
                      double now_s, int *stale, pflex_error_t *err)
{
    int stale_mine;
    if (!stale)
        stale = &stale_mine;
    *stale = 0;
    hosts_clear(p);
    struct judge jd = {.now_s = now_s};
    if (parse_own(p, own, olen, &jd, err) < 0)
        return -1;
    size_t nown = jd.n;
    pflex_tm_t *t = pflex_tm_create(NULL);
    if (!t)
        return pflex_error_set(err, "out of memory");
    struct pflex_tm_read_opts o = {.format = PFLEX_TMF_PROMJSON};
    if (pflex_tm_read_mem(t, dcgm, dlen, "prometheus", &o, err) < 0) {
        pflex_tm_destroy(t);
        hosts_clear(p);
        return -1;
    }
    size_t ndcgm = t->nsamples + t->skipped;
    if (ndcgm)
        judge_dcgm(p, dcgm, dlen, &jd);
    for (size_t s = 0; s < t->nsamples; s++) {
        const struct pflex_tm_sample *sm = &t->samples[s];
        const struct pflex_tm_series *se = &t->series[sm->series];
        if (se->gpu < 0 || (se->field != PFLEX_DCGM_POWER_USAGE && se->field != PFLEX_DCGM_POWER_LIMIT))
            continue;
        struct host *h = host_get(p, se->host, strlen(se->host));
        struct agent_gpu *g = h ? gpu_get(h, se->gpu) : NULL;
        if (!g || !(sm->value >= 0 && sm->value < 1e5))
            continue;
        if (se->field == PFLEX_DCGM_POWER_USAGE)
            g->power_w = sm->value;
        else
            g->limit_w = sm->value;
    }
    pflex_tm_destroy(t);
    if (judge_read(p, &jd, ndcgm, nown, stale, err) < 0) {
        hosts_clear(p);
        return -1;
    }
    return 0;
}

static int query(prom_source_t *p, const char *expr, char **body, pflex_error_t *err)
{
    char *q = curl_easy_escape(NULL, expr, 0);
    if (!q)
        return pflex_error_set(err, "out of memory");
    char url[2048];
    snprintf(url, sizeof url, "%s/api/v1/query?query=%s", p->url, q);
    curl_free(q);
    long status = 0;
    *body = NULL;
    if (pflex_http_request("GET", url, NULL, NULL, p->timeout_ms / 1000.0, &status, body, err) < 0)
        return -1;
    if (status != 200) {
        pflex_error_set(err, "prometheus %s: HTTP %ld", p->url, status);
        free(*body);
        *body = NULL;
        return -1;
    }
    return 0;
}

int prom_source_read(prom_source_t *p, double now_s, int *stale, pflex_error_t *err)
{
    if (stale)
        *stale = 0;
    char *dcgm = NULL, *own = NULL;
    int rc = -1;
    if (query(p, "{__name__=~\"DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_POWER_MGMT_LIMIT\"}", &dcgm, err) == 0
        && query(p, "{__name__=~\"pflex_gpu_limit_min_watts|pflex_gpu_limit_max_watts|pflex_gpu_up"
                    "|pflex_job_throughput\"}", &own, err) == 0)
        rc = prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), now_s, stale, err);
    if (rc < 0)
        hosts_clear(p);
    free(dcgm);
    free(own);
    return rc;
}

int prom_source_status(const prom_source_t *p, const char *host, struct agent_status *st)
{
    const struct host *o = host_find(p, host, strlen(host));
    if (o) {
        st->ngpus = st->njobs = 0;      /* the entries are written as they are copied */
        snprintf(st->host, sizeof st->host, "%s", o->name);
        /* a GPU whose range is missing cannot be planned: the host is
         * unusable this period, as an agent whose status is malformed */
        for (size_t k = 0; k < o->ngpus; k++) {
            const struct agent_gpu *g = &o->gpu[k];
            if (!(g->min_w > 0) || !(g->max_w >= g->min_w) || g->max_w > 1e5)
                return -1;
            st->gpu[st->ngpus++] = *g;
        }
        for (size_t m = 0; m < o->njobs; m++)
            st->job[st->njobs++] = o->job[m];
        return st->ngpus ? 0 : -1;
    }
    return -1;
}
