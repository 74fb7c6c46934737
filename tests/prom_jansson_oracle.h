/* prom_jansson_oracle.h — the controller's Prometheus reader as it was
 * before the streaming scanner: two jansson trees and the telemetry
 * store (static, for test_controller_prom only).  The new reader must
 * make the same hosts, GPUs and values of every answer this one takes. */
#ifndef PROM_JANSSON_ORACLE_H
#define PROM_JANSSON_ORACLE_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/agent_client.h"
#include "lib/util/grow.h"
#include "lib/util/strtab.h"
#include "pflex/io/telemetry.h"
#include "pflex/util/error.h"

#define ORACLE_MAX_HOSTS 100000

struct ohost {
    char name[64];
    size_t ngpus, njobs;
    struct agent_gpu gpu[AGENT_MAX_GPUS];
    unsigned char nan[AGENT_MAX_GPUS];  /* a power, limit or range of gpu[k] was NaN */
    struct agent_job job[AGENT_MAX_JOBS];
};

struct oracle {
    char url[512];
    long timeout_ms;
    double max_age_s;           /* samples older (or newer) than this are stale; <= 0: unchecked */
    struct ohost *hosts;
    size_t nhosts, cap;
    struct pflex_strtab names;  /* hosts[i].name is names.s[i] */
};

/* Forget every host (a new read starts). */
static void hosts_clear(struct oracle *p)
{
    p->nhosts = 0;
    pflex_strtab_clear(&p->names);
}

static struct ohost *host_find(const struct oracle *p, const char *name, size_t len)
{
    long k = pflex_strtab_find(&p->names, name, len);
    return k >= 0 ? &p->hosts[k] : NULL;
}

static struct ohost *host_get(struct oracle *p, const char *name, size_t len)
{
    if (len == 0 || len >= sizeof p->hosts->name)
        return NULL;
    struct ohost *found = host_find(p, name, len);
    if (found)
        return found;
    if (p->nhosts == ORACLE_MAX_HOSTS)
        return NULL;
    if (pflex_grow((void **)&p->hosts, &p->cap, p->nhosts + 1, sizeof *p->hosts) < 0)
        return NULL;
    /* the names' indices are the hosts': both cleared together, then grown
     * in this order */
    if (pflex_strtab_intern(&p->names, name, len, NULL) != (long)p->nhosts)
        return NULL;
    struct ohost *h = &p->hosts[p->nhosts++];
    memset(h, 0, sizeof *h);
    memcpy(h->name, name, len);
    return h;
}

static struct agent_gpu *gpu_get(struct ohost *h, int index)
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
static void judge_dcgm(struct oracle *p, const char *buf, size_t len, struct judge *jd)
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
        struct ohost *h = host_get(p, host, strlen(host));
        struct agent_gpu *g = h ? gpu_get(h, (int)gi) : NULL;
        if (g)
            h->nan[g - h->gpu] = 1;
    }
    json_decref(j);
}

/* pflex's own families: a Prometheus API vector answer. */
static int parse_own(struct oracle *p, const char *buf, size_t len, struct judge *jd, pflex_error_t *err)
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
            struct ohost *h = gs && !*end && gi >= 0 && gi <= 4096 && gpu_family(name)
                             ? host_get(p, host, strlen(host)) : NULL;
            struct agent_gpu *g = h ? gpu_get(h, (int)gi) : NULL;
            if (g)
                h->nan[g - h->gpu] = 1;
            continue;
        }
        struct ohost *h = host_get(p, host, strlen(host));
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
static int judge_read(const struct oracle *p, const struct judge *jd, size_t ndcgm, size_t nown, int *stale,
                      pflex_error_t *err)
{
    if (!ndcgm || !nown)
        return pflex_error_set(err, "prometheus %s: an empty result (no %s series): nothing scraped", p->url,
                               ndcgm ? "pflex_gpu_*" : "DCGM_FI_DEV_POWER_*");
    for (size_t i = 0; i < p->nhosts; i++) {
        const struct ohost *h = &p->hosts[i];
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

static int oracle_parse(struct oracle *p, const char *dcgm, size_t dlen, const char *own, size_t olen,
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
        struct ohost *h = host_get(p, se->host, strlen(se->host));
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


static void oracle_fini(struct oracle *p)
{
    free(p->hosts);
    pflex_strtab_fini(&p->names);
}

#endif
