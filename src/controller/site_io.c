/* site_io.c — the period's transport (period.h's IO steps): the VTN's
 * events and reports, each agent's status (or Prometheus's telemetry), the
 * caps pushed to the agents; in process, the statuses a caller fed.
 * Nothing here decides: these steps fill the nodes' statuses that
 * steps.c reads, and carry out the caps it chose. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curl/curl.h>
#include <sys/resource.h>
#include "controller/ctl_int.h"
#include "lib/util/clock.h"

/* How many threads talk to the agents, and how many connections each
 * keeps: one connection kept open to each agent from one period to the
 * next, as far as the descriptors allow. */
static size_t http_threads(const struct ctl_config *cfg, unsigned parallel, size_t *keep_out)
{
    size_t keep = cfg->nagents;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < keep + 256)
        keep = rl.rlim_cur > 256 + parallel ? rl.rlim_cur - 256 : parallel;
    if (keep < parallel)
        keep = parallel;
    size_t nh = cfg->http_threads;
    if (!nh) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        nh = (cfg->nagents + 999) / 1000;
        if (nh > 4)
            nh = 4;
        if (cpus > 0 && nh > (size_t)cpus)
            nh = (size_t)cpus;
    }
    if (nh < 1)
        nh = 1;
    if (nh > CTL_MAX_HTTP)
        nh = CTL_MAX_HTTP;
    if (nh > cfg->nagents)
        nh = cfg->nagents;
    keep = (keep + nh - 1) / nh;
    if (keep < parallel)
        keep = parallel;
    *keep_out = keep;
    return nh;
}

int ctl_io_create(ctl_t *c, pflex_error_t *err)
{
    const struct ctl_config *cfg = &c->c;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return pflex_error_set(err, "libcurl failed to initialise");
    for (size_t a = 0; a < cfg->nagents; a++)
        if (agent_client_create(cfg->agent_urls[a], cfg->agent_token, cfg->timeout_ms,
                                &c->agents[a].client, err) < 0
            || agent_client_set_ca_file(c->agents[a].client, cfg->ca_file, err) < 0)
            return -1;
    unsigned parallel = cfg->parallel ? cfg->parallel : 64;
    size_t keep;
    size_t nh = http_threads(cfg, parallel, &keep);
    for (size_t t = 0; t < nh; t++) {
        if (agent_client_http_create(cfg->timeout_ms, parallel, (unsigned)keep, cfg->ca_file, &c->http[t],
                                     err) < 0)
            return -1;
        c->nhttp = t + 1;
    }
    /* two queries a period: each bounded by 0.4 period, so that a server
     * that hangs never delays the renewal of the leases past their end */
    long prom_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 2000;
    if (prom_ms > (long)(400 * cfg->period_s))
        prom_ms = (long)(400 * cfg->period_s);
    if (prom_ms < 50)
        prom_ms = 50;
    if (cfg->prometheus_url && prom_source_create(cfg->prometheus_url, prom_ms, &c->prom, err) < 0)
        return -1;
    return 0;
}

void ctl_io_destroy(ctl_t *c)
{
    for (size_t a = 0; c->agents && a < c->c.nagents; a++)
        agent_client_destroy(c->agents[a].client);
    for (size_t t = 0; t < c->nhttp; t++)
        pflex_http_client_destroy(c->http[t]);
    prom_source_destroy(c->prom);
}

/* One range of agents' reads or pushes, on one client. */
struct shard {
    pflex_http_client_t *http;
    struct agent_read *rd;
    struct agent_push *push;
    size_t n;
    double lease_s;
};

static void *shard_run(void *arg)
{
    struct shard *s = arg;
    pflex_error_t e;
    if (s->rd)
        (void)agent_client_status_many(s->http, s->rd, s->n, &e);
    else
        (void)agent_client_put_caps_many(s->http, s->push, s->n, s->lease_s, &e);
    return NULL;
}

/* Read (rd) or push (push) n agents, indexed as c->agents, every range of
 * them on its own client and thread at once; returns when all are done.
 * The outcome is per agent, in rd[] or push[].  A thread that cannot be
 * started runs its range in this one. */
static void agents_batch(ctl_t *c, struct agent_read *rd, struct agent_push *push, size_t n)
{
    size_t T = c->nhttp < n ? c->nhttp : n;
    if (!T)
        return;
    struct shard sh[CTL_MAX_HTTP];
    pthread_t th[CTL_MAX_HTTP];
    int started[CTL_MAX_HTTP] = {0};
    for (size_t t = 0; t < T; t++) {
        size_t lo = n * t / T, hi = n * (t + 1) / T;
        sh[t] = (struct shard){.http = c->http[t], .rd = rd ? rd + lo : NULL, .push = push ? push + lo : NULL,
                               .n = hi - lo, .lease_s = c->c.lease_s};
    }
    for (size_t t = 1; t < T; t++)
        started[t] = pthread_create(&th[t], NULL, shard_run, &sh[t]) == 0;
    shard_run(&sh[0]);
    for (size_t t = 1; t < T; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            shard_run(&sh[t]);
    }
}

void ctl_poll_targets(ctl_t *c)
{
    if (!c->c.ven || (c->periods - 1) % (unsigned long)c->c.vtn_every != 0)
        return;
    struct pflex_oadr_opts o = c->c.oadr;
    o.now_s = c->p.now;
    pflex_error_t e2;
    if (pflex_ven_poll(c->c.ven, &o, &c->targets, &c->evs, &e2) < 0) {
        ctl_log(c, "vtn: %s (targets kept)", e2.text);
        if (c->audit)
            pflex_audit_note(c->audit, c->p.now, "vtn", e2.text, NULL);
    } else if (c->evs.skipped)
        ctl_log(c, "vtn: %zu left out: %s", c->evs.skipped, c->evs.note);
}

/* --prometheus: agent a from its (maybe just read) host name and job map
 * and the last Prometheus read; e2 says why when it is down. */
static void read_agent_prom(ctl_t *c, size_t a, const struct agent_read *rd, pflex_error_t *e2)
{
    struct ctl_agent *ag = &c->agents[a];
    if (rd->agent) {
        if (rd->ok)
            ag->meta_seen = 1;
        else
            ctl_log(c, "agent %s: %s", agent_client_url(ag->client), e2->text);
    }
    if (!ag->meta_seen) {
        ag->up = ag->tele = 0;
        snprintf(e2->text, sizeof e2->text, "never reached: its host name is unknown");
        return;
    }
    if (!c->prom_ok) {
        /* no telemetry at all: the agent is still there to hold its caps
         * (the plan holds: nothing rises) */
        ag->up = ag->seen;
        ag->tele = 0;
        return;
    }
    struct agent_status st;
    ag->up = ag->tele = prom_source_status(c->prom, ag->meta.host, &st) == 0;
    if (!ag->up) {
        snprintf(e2->text, sizeof e2->text, "no fresh series of host '%s' in Prometheus", ag->meta.host);
        return;
    }
    /* the job map is the agent's; the throughput Prometheus's */
    struct agent_status fresh;
    agent_status_copy(&fresh, &st);
    st.njobs = 0;
    for (size_t m = 0; m < ag->meta.njobs; m++) {
        st.job[st.njobs] = ag->meta.job[m];
        st.job[st.njobs].throughput = NAN;
        for (size_t q = 0; q < fresh.njobs; q++)
            if (!strcmp(fresh.job[q].name, ag->meta.job[m].name))
                st.job[st.njobs].throughput = fresh.job[q].throughput;
        st.njobs++;
    }
    agent_status_copy(&ag->st, &st);
    ag->seen = 1;
}

/* Every agent due a status read, all at once: each agent's status
 * (direct), or its host name and job map (Prometheus: now and then). */
static int read_agents(ctl_t *c, pflex_error_t *err)
{
    if (c->prom) {
        pflex_error_t e2;
        c->prom_ok = prom_source_read(c->prom, &e2) == 0;
        if (!c->prom_ok) {
            ctl_log(c, "prometheus: %s (caps held)", e2.text);
            if (c->audit)
                pflex_audit_note(c->audit, c->p.now, "prometheus", e2.text, NULL);
        }
    }
    struct agent_read *rd = calloc(c->c.nagents, sizeof *rd);
    if (!rd)
        return pflex_error_set(err, "out of memory");
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &c->agents[a];
        if (!c->prom)
            rd[a] = (struct agent_read){.agent = ag->client, .out = &ag->st};
        else if (!ag->meta_seen || (c->periods - 1) % (unsigned long)c->c.status_every == 0)
            rd[a] = (struct agent_read){.agent = ag->client, .out = &ag->meta};
    }
    agents_batch(c, rd, NULL, c->c.nagents);    /* failures are per agent */
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &c->agents[a];
        pflex_error_t e2 = rd[a].err;
        if (!c->prom) {
            ag->up = ag->tele = rd[a].ok;
            if (ag->up)
                ag->seen = 1;
        } else
            read_agent_prom(c, a, &rd[a], &e2);
        if (!ag->up)
            ctl_log(c, "agent %s: %s", agent_client_url(ag->client), e2.text);
    }
    free(rd);
    return 0;
}

/* In process: what the caller fed since the last period; a node not fed
 * is down. */
static void read_fed(ctl_t *c)
{
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &c->agents[a];
        ag->up = ag->fed;
        ag->tele = ag->fed && ag->fed_fresh;
        if (ag->up)
            ag->seen = 1;
        else
            ctl_log(c, "node %zu: no status this period", a);
        ag->fed = 0;
    }
}

int ctl_read_site(ctl_t *c, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    p->t_read = pflex_mono_s();
    if (c->c.in_process)
        read_fed(c);
    else if (read_agents(c, err) < 0)
        return -1;
    p->t_plan = pflex_mono_s();
    p->r.read_s = p->t_plan - p->t_read;
    return 0;
}

/* One batch of pushes: node a's caps in [first[a], first[a + 1]) of p.caps
 * where want(q) says so, to every node with one at least; caps[] the
 * wire's copies, in p.caps's order. */
static void push_batch(ctl_t *c, const size_t *first, struct agent_cap *caps, struct agent_push *push,
                       const unsigned char *want)
{
    struct ctl_period_state *p = &c->p;
    size_t na = c->c.nagents;
    for (size_t a = 0; a < na; a++) {
        size_t n = 0;
        for (size_t q = first[a]; q < first[a + 1]; q++)
            if (want[q])
                caps[first[a] + n++] = (struct agent_cap){.gpu = p->caps[q].gpu, .cap_w = p->caps[q].cap_w,
                                                          .fallback_w = p->caps[q].fallback_w,
                                                          .fallback_until = p->caps[q].fallback_until,
                                                          .enforced_w = NAN};
        push[a] = (struct agent_push){.agent = n ? c->agents[a].client : NULL, .caps = &caps[first[a]], .n = n};
    }
    agents_batch(c, NULL, push, na);   /* failures are per agent */
    for (size_t a = 0; a < na; a++)
        if (push[a].agent && !push[a].ok)
            ctl_log(c, "agent %s: %s", agent_client_url(c->agents[a].client), push[a].err.text);
}

/* The caps of the nodes marked send, over HTTP: first every cut on every
 * such node in one batch (a node none of whose caps rises sends them all
 * there, once), and only when all of them have answered, all the caps of
 * each node with a raise in a second; so the site never sums a raise on
 * one node with a cut not yet made on another.  Each sent cap's pushed
 * and enforced_w from the answer that carried it last. */
static int push_agents(ctl_t *c, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    size_t na = c->c.nagents, nc = p->ncaps;
    /* each node's caps are the slice [first[a], first[a + 1]) of p.caps */
    size_t *first = calloc(na + 1, sizeof *first);
    struct agent_cap *caps = malloc((nc + 1) * sizeof *caps);
    struct agent_push *push = calloc(na, sizeof *push);
    unsigned char *raise = calloc(na, 1), *want = calloc(nc + 1, 1);
    if (!first || !caps || !push || !raise || !want) {
        free(first);
        free(caps);
        free(push);
        free(raise);
        free(want);
        return pflex_error_set(err, "out of memory");
    }
    for (size_t q = 0; q < nc; q++) {
        const struct ctl_cap *cp = &p->caps[q];
        first[cp->node + 1]++;
        double now_w = c->agents[cp->node].st.gpu[p->gpu_slot[cp->site]].limit_w;
        if (cp->send && cp->cap_w > now_w + 0.5)
            raise[cp->node] = 1;
    }
    for (size_t a = 0; a < na; a++)
        first[a + 1] += first[a];
    for (size_t q = 0; q < nc; q++)
        want[q] = p->caps[q].send && (p->caps[q].cut || !raise[p->caps[q].node]);
    push_batch(c, first, caps, push, want);
    for (size_t q = 0; q < nc; q++) {
        size_t a = p->caps[q].node;
        if (want[q] && !raise[a]) {
            p->caps[q].pushed = push[a].ok;
            p->caps[q].enforced_w = caps[q].enforced_w;
        }
    }
    /* then all the caps of each node with a raise */
    for (size_t q = 0; q < nc; q++)
        want[q] = p->caps[q].send && raise[p->caps[q].node];
    push_batch(c, first, caps, push, want);
    for (size_t q = 0; q < nc; q++) {
        if (want[q]) {
            p->caps[q].pushed = push[p->caps[q].node].ok;
            p->caps[q].enforced_w = caps[q].enforced_w;
        }
    }
    free(first);
    free(caps);
    free(push);
    free(raise);
    free(want);
    return 0;
}

int ctl_push_caps(ctl_t *c, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    p->t_push = pflex_mono_s();
    p->r.plan_s = p->t_push - p->t_plan;
    if (!c->c.in_process) {
        if (push_agents(c, err) < 0)
            return -1;
    } else {
        /* in process: the caller applies them (ctl_caps) */
        for (size_t q = 0; q < p->ncaps; q++)
            p->caps[q].pushed = p->caps[q].send;
    }
    ctl_leases_took(c);
    return 0;
}

void ctl_report_vtn(ctl_t *c)
{
    const struct ctl_period_state *p = &c->p;
    if (!c->c.ven || !p->any_power)
        return;
    double now = p->now, site_w = p->measured_w + c->c.other_w;
    for (size_t e = 0; e < c->evs.n; e++) {
        const struct pflex_oadr_event *ev = &c->evs.ev[e];
        if (!(ev->start_s <= now && now < ev->end_s))
            continue;
        struct pflex_oadr_report rep = {.program_id = ev->program_id, .event_id = ev->id,
                                        .client_name = c->c.oadr.client_name ? c->c.oadr.client_name : "pflex",
                                        .start_s = now, .duration_s = c->c.period_s,
                                        .usage_wh = site_w * c->c.period_s / 3600, .demand_w = site_w};
        pflex_error_t e2;
        if (pflex_ven_post_report(c->c.ven, &rep, &e2) < 0)
            ctl_log(c, "vtn report: %s", e2.text);
    }
}
