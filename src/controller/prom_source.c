/* prom_source.c — the site's telemetry from Prometheus (prom_source.h).
 *
 * Two instant queries a period, both by the names the agents export:
 *   {__name__=~"DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_POWER_MGMT_LIMIT"}
 *     read by the telemetry readers' rules for Prometheus API JSON
 *     (docs/telemetry.md), one series per (Hostname, gpu, field);
 *   {__name__=~"pflex_gpu_limit_min_watts|pflex_gpu_limit_max_watts|
 *               pflex_gpu_up|pflex_job_throughput"}
 *     pflex's own families, which the readers do not know.
 * Both at once, on an HTTP client kept between periods.
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
 *
 * The answers are read in place by a streaming scanner (prom_answer.c,
 * over lib/util/jscan.h): no tree, labels taken as spans of the input,
 * the values converted only where they are used; at 12,500 nodes the two
 * answers are 119 MB a period, and trees of them cost 3.5 s of CPU
 * against a 1 s period (docs/prometheus-read.md).  What it makes of an answer is what the
 * telemetry reader and a jansson tree made of it: the hosts, their GPUs in
 * the order they were first met, every value to the bit (tested against
 * that reader, kept as the tests' oracle).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <curl/curl.h>
#include "controller/prom_int.h"
#include "lib/util/grow.h"
#include "lib/util/jscan.h"

/* An answer's bytes: 12,500 nodes of dcgm-exporter labels are about 70 MB. */
#define MAX_ANSWER ((size_t)1 << 30)

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
    /* both queries at once, the connection kept between periods */
    struct pflex_http_client_opts o = {.parallel = 2, .timeout_s = p->timeout_ms / 1000.0,
                                       .max_response = MAX_ANSWER, .accept = "application/json",
                                       .direct_http1 = 1};
    if (pflex_http_client_create(&o, &p->http, err) < 0) {
        free(p);
        return -1;
    }
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
    pflex_http_client_destroy(p->http);
    free(p->tmp);
    free(p->cbuf);
    free(p->marks);
    free(p->mtext);
    if (p->keys)
        for (size_t d = 0; d <= PFLEX_JSCAN_DEPTH; d++) {
            free(p->keys[d].k);
            free(p->keys[d].text);
        }
    free(p->keys);
    free(p);
}

/* Forget every host (a new read starts). */
void prom_hosts_clear(prom_source_t *p)
{
    p->nhosts = 0;
    pflex_strtab_clear(&p->names);
}

struct host *prom_host_find(const prom_source_t *p, const char *name, size_t len)
{
    long k = pflex_strtab_find(&p->names, name, len);
    return k >= 0 ? &p->hosts[k] : NULL;
}

struct host *prom_host_get(prom_source_t *p, const char *name, size_t len)
{
    if (len == 0 || len >= sizeof p->hosts->name)
        return NULL;
    struct host *found = prom_host_find(p, name, len);
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
    memset(h, 0, offsetof(struct host, nan));
    memcpy(h->name, name, len);
    p->made++;
    return h;
}

struct agent_gpu *prom_gpu_find(struct host *h, int index)
{
    for (size_t k = 0; k < h->ngpus; k++)
        if (h->gpu[k].index == index)
            return &h->gpu[k];
    return NULL;
}

struct agent_gpu *prom_gpu_get(prom_source_t *p, struct host *h, int index)
{
    struct agent_gpu *g = prom_gpu_find(h, index);
    if (g)
        return g;
    if (h->ngpus == AGENT_MAX_GPUS)
        return NULL;
    h->nan[h->ngpus] = 0;
    g = &h->gpu[h->ngpus++];
    *g = (struct agent_gpu){.index = index, .power_w = NAN, .limit_w = NAN, .min_w = NAN,
                            .max_w = NAN, .ok = 1};
    p->made++;
    return g;
}

void prom_judge_stamp(struct judge *jd, double t)
{
    if (!jd->n || t < jd->oldest)
        jd->oldest = t;
    if (!jd->n || t > jd->newest)
        jd->newest = t;
    jd->n++;
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
    prom_hosts_clear(p);
    struct judge jd = {.now_s = now_s};
    size_t ndcgm = 0, nown = 0;
    if (prom_answers_read(p, dcgm, dlen, own, olen, &jd, &ndcgm, &nown, err) < 0
        || judge_read(p, &jd, ndcgm, nown, stale, err) < 0) {
        prom_hosts_clear(p);
        return -1;
    }
    return 0;
}

static char *query_url(const prom_source_t *p, const char *expr)
{
    char *q = curl_easy_escape(NULL, expr, 0);
    if (!q)
        return NULL;
    size_t n = strlen(p->url) + strlen(q) + 32;
    char *url = malloc(n);
    if (url)
        snprintf(url, n, "%s/api/v1/query?query=%s", p->url, q);
    curl_free(q);
    return url;
}

int prom_source_read(prom_source_t *p, double now_s, int *stale, pflex_error_t *err)
{
    if (stale)
        *stale = 0;
    static const char *const expr[2] = {
        "{__name__=~\"DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_POWER_MGMT_LIMIT\"}",
        "{__name__=~\"pflex_gpu_limit_min_watts|pflex_gpu_limit_max_watts|pflex_gpu_up|pflex_job_throughput\"}",
    };
    struct pflex_http_call call[2] = {{.method = "GET"}, {.method = "GET"}};
    int rc = -1;
    char *url[2] = {query_url(p, expr[0]), query_url(p, expr[1])};
    if (!url[0] || !url[1]) {
        pflex_error_set(err, "out of memory");
        goto out;
    }
    call[0].url = url[0];
    call[1].url = url[1];
    if (pflex_http_client_run(p->http, call, 2, NULL, NULL, err) < 0)
        goto out;
    for (int i = 0; i < 2; i++) {
        if (!call[i].ok) {
            pflex_error_set(err, "prometheus %s: %s", p->url, call[i].error);
            goto out;
        }
        if (call[i].status != 200) {
            pflex_error_set(err, "prometheus %s: HTTP %ld", p->url, call[i].status);
            goto out;
        }
    }
    rc = prom_source_parse(p, call[0].resp, call[0].resp_len, call[1].resp, call[1].resp_len, now_s, stale, err);
out:
    if (rc < 0)
        prom_hosts_clear(p);
    for (int i = 0; i < 2; i++)
        free(call[i].resp);
    free(url[0]);
    free(url[1]);
    return rc;
}

int prom_source_host_at(const prom_source_t *p, size_t i, struct agent_status *st, unsigned char *nan)
{
    if (i >= p->nhosts)
        return -1;
    const struct host *h = &p->hosts[i];
    snprintf(st->host, sizeof st->host, "%s", h->name);
    st->ngpus = h->ngpus;
    st->njobs = h->njobs;
    memcpy(st->gpu, h->gpu, h->ngpus * sizeof *h->gpu);
    memcpy(st->job, h->job, h->njobs * sizeof *h->job);
    memcpy(nan, h->nan, h->ngpus);
    return 0;
}

int prom_source_status(const prom_source_t *p, const char *host, struct agent_status *st)
{
    const struct host *o = prom_host_find(p, host, strlen(host));
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
