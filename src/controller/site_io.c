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
    /* a sample older than three periods missed three scrapes of a server
     * scraping each period; 30 s covers the usual 15 s scrape interval */
    double age = cfg->telemetry_max_age_s > 0 ? cfg->telemetry_max_age_s
               : 3 * cfg->period_s > 30 ? 3 * cfg->period_s : 30;
    if (c->prom)
        prom_source_set_max_age(c->prom, age);
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
static void agents_batch(ctl_t *c, pflex_http_client_t *const *http, struct agent_read *rd,
                         struct agent_push *push, size_t n)
{
    size_t T = c->nhttp < n ? c->nhttp : n;
    if (!T)
        return;
    struct shard sh[CTL_MAX_HTTP];
    pthread_t th[CTL_MAX_HTTP];
    int started[CTL_MAX_HTTP] = {0};
    for (size_t t = 0; t < T; t++) {
        size_t lo = n * t / T, hi = n * (t + 1) / T;
        sh[t] = (struct shard){.http = http[t], .rd = rd ? rd + lo : NULL, .push = push ? push + lo : NULL,
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

void ctl_note(ctl_t *c, double now, const char *kind, const char *text)
{
    /* started, through the audit's writer: a disk that blocks holds no
     * thread of the period's up */
    if (ctl_writer_note(c, now, kind, text) == 0)
        return;
    if (!c->started) {
        if (c->audit)
            pflex_audit_note(c->audit, now, kind, text, NULL);
        return;
    }
    pthread_mutex_lock(&c->tdb_mu);
    if (c->tdb)
        pflex_audit_note(c->tdb, now, kind, text, NULL);
    pthread_mutex_unlock(&c->tdb_mu);
}

int ctl_vtn_apply(ctl_t *c, const pflex_target_set_t *fresh, uint64_t seq0, double now, pflex_error_t *err)
{
    pthread_mutex_lock(&c->tdb_mu);
    /* the targets new to this answer were numbered from fresh's first
     * free seq at the copy; others (the API) may have taken those since */
    uint64_t live0;
    pthread_mutex_lock(&c->tmu);
    live0 = c->targets.next_seq;
    pthread_mutex_unlock(&c->tmu);
    size_t n = 0;
    struct pflex_audit_target *at = calloc(fresh->n + 1, sizeof *at);
    struct pflex_target *tt = calloc(fresh->n + 1, sizeof *tt);
    if (!at || !tt) {
        free(at);
        free(tt);
        pthread_mutex_unlock(&c->tdb_mu);
        return pflex_error_set(err, "out of memory");
    }
    for (size_t i = 0; i < fresh->n; i++) {
        if (strcmp(fresh->t[i].source, "openadr"))
            continue;
        tt[n] = fresh->t[i];
        if (tt[n].seq >= seq0)
            tt[n].seq = live0 + (tt[n].seq - seq0);
        const struct pflex_target *t = &tt[n];
        at[n] = (struct pflex_audit_target){.t = now, .source = t->source, .name = t->id,
                                            .start_s = t->start_s, .end_s = t->end_s, .value = t->value,
                                            .fraction = t->unit == PFLEX_TARGET_FRACTION,
                                            .ramp_s = t->ramp_s, .priority = t->priority, .seq = t->seq};
        n++;
    }
    uint64_t live1 = live0 + (fresh->next_seq > seq0 ? fresh->next_seq - seq0 : 0);
    int rc = 0;
    if (c->tdb && pflex_audit_targets_sync(c->tdb, now, "openadr", at, n, err) < 0)
        rc = -1;
    if (rc == 0) {
        /* the live set's others and the VTN's new ones, swapped in whole */
        pflex_target_set_t next;
        pflex_target_set_init(&next);
        pthread_mutex_lock(&c->tmu);
        int recorded = c->tdb && c->recorded_seq == live0;
        for (size_t i = 0; i < c->targets.n + n && rc == 0; i++) {
            const struct pflex_target *t = i < c->targets.n ? &c->targets.t[i] : &tt[i - c->targets.n];
            if (i < c->targets.n && !strcmp(t->source, "openadr"))
                continue;
            rc = pflex_target_set_add(&next, t, err);
            if (rc == 0)
                pflex_target_set_seq(&next, next.n - 1, t->seq);
        }
        if (rc == 0) {
            next.next_seq = c->targets.next_seq > live1 ? c->targets.next_seq : live1;
            pflex_target_set_fini(&c->targets);
            c->targets = next;
            for (size_t i = 0; i < n; i++)
                if (tt[i].seq >= live0)
                    ctl_ttt_arrived(c, tt[i].seq, now);
            if (recorded)
                c->recorded_seq = c->targets.next_seq;
        } else
            pflex_target_set_fini(&next);
        pthread_mutex_unlock(&c->tmu);
    }
    free(at);
    free(tt);
    pthread_mutex_unlock(&c->tdb_mu);
    return rc;
}

int ctl_vtn_targets_copy(ctl_t *c, pflex_target_set_t *set, uint64_t *seq0, pflex_error_t *err)
{
    pflex_target_set_init(set);
    int rc = 0;
    pthread_mutex_lock(&c->tmu);
    for (size_t i = 0; i < c->targets.n && rc == 0; i++)
        if (!strcmp(c->targets.t[i].source, "openadr")) {
            rc = pflex_target_set_add(set, &c->targets.t[i], err);
            if (rc == 0)
                pflex_target_set_seq(set, set->n - 1, c->targets.t[i].seq);
        }
    *seq0 = set->next_seq = c->targets.next_seq;
    pthread_mutex_unlock(&c->tmu);
    return rc;
}

void ctl_vtn_poll_once(ctl_t *c, double now)
{
    struct pflex_oadr_opts o = c->c.oadr;
    o.now_s = now;
    pflex_error_t e2;
    /* a callback applied while the poll was out makes its answer possibly
     * older than what is in force: asked again (twice at most) */
    for (int attempt = 0;; attempt++) {
        pthread_mutex_lock(&c->sub.mu);
        uint64_t gen0 = c->sub.gen;
        pthread_mutex_unlock(&c->sub.mu);
        /* the VTN's targets now, copied: the poll runs without any lock */
        pflex_target_set_t set;
        uint64_t seq0;
        int ok = ctl_vtn_targets_copy(c, &set, &seq0, &e2) == 0;
        if (!ok) {
            ctl_log(c, "vtn: %s (targets kept)", e2.text);
        } else if (pflex_ven_poll(c->c.ven, &o, &set, &c->evs, &e2) < 0) {
            /* a failure logged when it starts or changes, not every poll */
            if (strncmp(c->io.vtn_said, e2.text, sizeof c->io.vtn_said - 1)) {
                ctl_log(c, "vtn: %s (targets kept)", e2.text);
                ctl_note(c, now, "vtn", e2.text);
            }
            snprintf(c->io.vtn_said, sizeof c->io.vtn_said, "%.255s", e2.text);
        } else {
            pthread_mutex_lock(&c->sub.mu);
            if (c->sub.gen != gen0 && attempt < 2) {
                pthread_mutex_unlock(&c->sub.mu);
                pflex_target_set_fini(&set);
                continue;
            }
            /* what is left out, logged when it changes, not every poll */
            const char *now_said = c->evs.skipped ? c->evs.note : "";
            int changed = strcmp(c->io.vtn_said, now_said) != 0;
            if (changed && c->evs.skipped)
                ctl_log(c, "vtn: %zu left out: %s", c->evs.skipped, c->evs.note);
            else if (changed && c->io.vtn_said[0])
                ctl_log(c, "vtn: answers again, nothing left out");
            snprintf(c->io.vtn_said, sizeof c->io.vtn_said, "%s", now_said);
            if (changed && c->evs.kept) {
                char msg[320];
                snprintf(msg, sizeof msg, "%zu targets of events sent malformed kept as they were (their last "
                         "good version): %.200s", c->evs.kept, c->evs.note);
                ctl_log(c, "vtn: %s", msg);
                ctl_note(c, now, "vtn", msg);
            }
            if (ctl_vtn_apply(c, &set, seq0, now, &e2) < 0)
                ctl_log(c, "vtn: %s (targets kept)", e2.text);
            else
                ctl_vtn_seen_poll(c);
            pthread_mutex_unlock(&c->sub.mu);
        }
        pflex_target_set_fini(&set);
        break;
    }
}

void ctl_poll_targets(ctl_t *c)
{
    if (c->started || !c->c.ven || (c->periods - 1) % (unsigned long)c->c.vtn_every != 0)
        return;
    ctl_vtn_poll_once(c, c->p.now);
}

/* --prometheus: agent a from its (maybe just read) host name and job map
 * and the last Prometheus read; e2 says why when it is down. */
static void read_agent_prom(ctl_t *c, struct ctl_agent *ag, int prom_ok, const struct agent_read *rd,
                            pflex_error_t *e2)
{
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
    if (!prom_ok) {
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

/* Every agent of ags due a status read, all at once on http: each
 * agent's status (direct), or its host name and job map (Prometheus: in
 * round 1 and every status_every rounds), and Prometheus's read into
 * *prom_ok.  ags is c->agents, or the reader thread's own. */
static int read_round(ctl_t *c, struct ctl_agent *ags, pflex_http_client_t *const *http, unsigned long round,
                      int *prom_ok, int *prom_stale, char *prom_why, double now, pflex_error_t *err)
{
    if (c->prom) {
        pflex_error_t e2;
        *prom_ok = prom_source_read(c->prom, now, prom_stale, &e2) == 0;
        /* why, for the API: the first 199 bytes */
        snprintf(prom_why, 200, "%.199s", *prom_ok ? "" : e2.text);
        if (!*prom_ok && !c->io.prom_said) {
            ctl_log(c, "prometheus: %s (caps held)", e2.text);
            ctl_note(c, now, "prometheus", e2.text);
        } else if (*prom_ok && c->io.prom_said)
            ctl_log(c, "prometheus: answers again");
        c->io.prom_said = !*prom_ok;
    }
    struct agent_read *rd = calloc(c->c.nagents, sizeof *rd);
    if (!rd)
        return pflex_error_set(err, "out of memory");
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &ags[a];
        if (!c->prom)
            rd[a] = (struct agent_read){.agent = ag->client, .out = &ag->st};
        else if (!ag->meta_seen || (round - 1) % (unsigned long)c->c.status_every == 0)
            rd[a] = (struct agent_read){.agent = ag->client, .out = &ag->meta};
    }
    agents_batch(c, http, rd, NULL, c->c.nagents);    /* failures are per agent */
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &ags[a];
        pflex_error_t e2 = rd[a].err;
        if (!c->prom) {
            ag->up = ag->tele = rd[a].ok;
            if (ag->up)
                ag->seen = 1;
        } else
            read_agent_prom(c, ag, *prom_ok, &rd[a], &e2);
        /* a problem logged when it starts or changes, and its end */
        if (!ag->up && strncmp(ag->said, e2.text, sizeof ag->said - 1)) {
            ctl_log(c, "agent %s: %s", agent_client_url(ag->client), e2.text);
            snprintf(ag->said, sizeof ag->said, "%.159s", e2.text);
        } else if (ag->up && ag->said[0]) {
            ctl_log(c, "agent %s: answers again", agent_client_url(ag->client));
            ag->said[0] = '\0';
        }
    }
    free(rd);
    return 0;
}

/* Started: each node as the reader last published it.  A reading older
 * than stale_s, or a node that did not answer the reader's last round, is
 * down (its caps lapse to their lease; its GPUs count at their maximum);
 * a reading the period has planned on before is held (no rise). */
static void read_snapshot(ctl_t *c)
{
    struct ctl_io *io = &c->io;
    double t = pflex_mono_s();
    double stale_s = c->c.lease_s < 4 * c->c.period_s ? c->c.lease_s : 4 * c->c.period_s;
    pthread_mutex_lock(&io->mu);
    c->prom_ok = io->prom_ok;
    c->prom_stale = io->prom_stale;
    memcpy(c->prom_why, io->prom_why, sizeof c->prom_why);
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &c->agents[a];
        const struct ctl_snap *sn = &io->snap[a];
        ag->up = ag->tele = 0;
        if (!sn->seq)
            continue;           /* not read yet */
        if (sn->st.ngpus || sn->st.host[0])
            agent_status_copy(&ag->st, &sn->st);
        if (sn->up && t - sn->t <= stale_s) {
            ag->up = ag->seen = 1;
            ag->tele = sn->tele && sn->seq != ag->snap_seq;
        }
        ag->snap_seq = sn->seq;
    }
    pthread_mutex_unlock(&io->mu);
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
    else if (c->started)
        read_snapshot(c);
    else if (read_round(c, c->agents, c->http, c->periods, &c->prom_ok, &c->prom_stale, c->prom_why, p->now,
                        err) < 0)
        return -1;
    p->t_plan = pflex_mono_s();
    p->r.read_s = p->t_plan - p->t_read;
    return 0;
}

/* One batch of pushes: node a's caps in [first[a], first[a + 1]) of pcaps
 * where want[q] says so, to every node with one at least, carrying the
 * fencing token; caps[] the wire's copies, in pcaps's order.  Returns 1
 * when an agent refused it for a newer leader's token (409). */
/* The pushes of a batch (push[0..na), those with an agent) handed to
 * agents_batch by what their cuts free, the most first, dealt across its
 * threads in turn so that each starts with the largest it has; the
 * outcomes copied back to push[]. */
struct free_rank {
    size_t a;
    double w;
};

static int cmp_free_desc(const void *x, const void *y)
{
    const struct free_rank *a = x, *b = y;
    return a->w < b->w ? 1 : a->w > b->w ? -1 : (a->a > b->a) - (a->a < b->a);
}

static void batch_by_free(ctl_t *c, const struct ctl_cap *pcaps, const size_t *first, const unsigned char *want,
                          struct agent_push *push, pflex_http_client_t *const *http)
{
    size_t na = c->c.nagents, m = 0;
    struct free_rank *rk = malloc((na + 1) * sizeof *rk);
    struct agent_push *pp = malloc((na + 1) * sizeof *pp);
    size_t *pos = malloc((na + 1) * sizeof *pos), *fill = calloc(CTL_MAX_HTTP + 1, sizeof *fill);
    if (!rk || !pp || !pos || !fill) {
        agents_batch(c, http, NULL, push, na);     /* no memory to order them: node order */
        goto out;
    }
    for (size_t a = 0; a < na; a++) {
        if (!push[a].agent)
            continue;
        double w = 0;
        for (size_t q = first[a]; q < first[a + 1]; q++)
            w += want[q] ? pcaps[q].free_w : 0;
        rk[m++] = (struct free_rank){a, w};
    }
    qsort(rk, m, sizeof *rk, cmp_free_desc);
    /* agents_batch gives thread t the range [m t / T, m (t + 1) / T) */
    size_t T = c->nhttp < m ? c->nhttp : m, t = 0;
    for (size_t r = 0; r < m; r++) {
        while (m * (t + 1) / T - m * t / T <= fill[t])
            t = (t + 1) % T;
        pos[r] = m * t / T + fill[t]++;
        pp[pos[r]] = push[rk[r].a];
        t = (t + 1) % T;
    }
    agents_batch(c, http, NULL, pp, m);
    for (size_t r = 0; r < m; r++)
        push[rk[r].a] = pp[pos[r]];
out:
    free(rk);
    free(pp);
    free(pos);
    free(fill);
}

static int push_batch(ctl_t *c, const struct ctl_cap *pcaps, const size_t *first,
                      struct agent_cap *caps, struct agent_push *push, const unsigned char *want,
                      pflex_http_client_t *const *http, uint64_t fence)
{
    size_t na = c->c.nagents;
    int fenced = 0;
    for (size_t a = 0; a < na; a++) {
        size_t n = 0;
        for (size_t q = first[a]; q < first[a + 1]; q++)
            if (want[q])
                caps[first[a] + n++] = (struct agent_cap){.gpu = pcaps[q].gpu, .cap_w = pcaps[q].cap_w,
                                                          .fallback_w = pcaps[q].fallback_w,
                                                          .fallback_until = pcaps[q].fallback_until,
                                                          .enforced_w = NAN};
        push[a] = (struct agent_push){.agent = n ? c->agents[a].client : NULL, .caps = &caps[first[a]], .n = n,
                                      .fence = fence};
    }
    batch_by_free(c, pcaps, first, want, push, http);  /* failures are per agent */
    for (size_t a = 0; a < na; a++)
        if (push[a].agent && !push[a].ok) {
            ctl_log(c, "agent %s: %s", agent_client_url(c->agents[a].client), push[a].err.text);
            fenced |= push[a].status == 409;
        }
    return fenced;
}

/* The caps marked send (pcaps, nc of them: the period's own, or the
 * pusher's copy), over HTTP: first every cut on every such node in one
 * batch (a node none of whose caps rises sends them all there, once), and
 * only when all of them have answered, all the caps of each node with a
 * raise in a second; so the site never sums a raise on one node with a cut
 * not yet made on another.  Each sent cap's pushed and enforced_w from the
 * answer that carried it last.  Reads nothing of the period's state but
 * pcaps (the pusher's thread runs it while the next period plans). */
static int push_agents(ctl_t *c, struct ctl_cap *pcaps, size_t nc, pflex_http_client_t *const *http,
                       uint64_t fence, pflex_error_t *err)
{
    size_t na = c->c.nagents;
    /* each node's caps are the slice [first[a], first[a + 1]) of pcaps */
    size_t *first = calloc(na + 1, sizeof *first);
    struct agent_cap *caps = malloc((nc + 1) * sizeof *caps);
    struct agent_push *push = calloc(na + 1, sizeof *push);
    unsigned char *want = calloc(nc + 1, 1);
    if (!first || !caps || !push || !want) {
        free(first);
        free(caps);
        free(push);
        free(want);
        return pflex_error_set(err, "out of memory");
    }
    for (size_t q = 0; q < nc; q++)
        first[pcaps[q].node + 1]++;
    for (size_t a = 0; a < na; a++)
        first[a + 1] += first[a];
    for (size_t q = 0; q < nc; q++)
        want[q] = pcaps[q].send && (pcaps[q].cut || !pcaps[q].node_raises);
    int fenced = push_batch(c, pcaps, first, caps, push, want, http, fence);
    for (size_t q = 0; q < nc; q++) {
        size_t a = pcaps[q].node;
        if (want[q] && !pcaps[q].node_raises) {
            pcaps[q].pushed = push[a].ok;
            pcaps[q].enforced_w = caps[q].enforced_w;
            pcaps[q].push_status = push[a].status;
        }
    }
    /* then all the caps of each node with a raise (none once fenced) */
    for (size_t q = 0; q < nc; q++)
        want[q] = !fenced && pcaps[q].send && pcaps[q].node_raises;
    fenced |= push_batch(c, pcaps, first, caps, push, want, http, fence);
    for (size_t q = 0; q < nc; q++) {
        if (want[q]) {
            pcaps[q].pushed = push[pcaps[q].node].ok;
            pcaps[q].enforced_w = caps[q].enforced_w;
            pcaps[q].push_status = push[pcaps[q].node].status;
        }
    }
    free(first);
    free(caps);
    free(push);
    free(want);
    if (fenced && c->c.fenced) {
        /* an agent has seen a higher token: pushes wait, the election
         * says whether this one still leads */
        ctl_log(c, "fenced: an agent refused a push for a higher fence; pushes wait");
        c->c.fenced(c->c.lead_ud);
    }
    return 0;
}

/* Started: the period's caps to the pusher, and their outcome when it
 * comes within 0.8 period; later, they are audited as unconfirmed (the
 * pusher still ends its push, and takes the next period's caps after). */
static int push_posted(ctl_t *c, uint64_t fence, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    struct ctl_io *io = &c->io;
    pthread_mutex_lock(&io->mu);
    if (pflex_grow((void **)&io->job, &io->cap_job, p->ncaps + 1, sizeof *io->job) < 0) {
        pthread_mutex_unlock(&io->mu);
        return pflex_error_set(err, "out of memory");
    }
    memcpy(io->job, p->caps, p->ncaps * sizeof *p->caps);
    io->njob = p->ncaps;
    io->job_fence = fence;
    unsigned long mine = ++io->job_seq;
    pthread_cond_broadcast(&io->cv);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    double until = dl.tv_sec + dl.tv_nsec * 1e-9 + 0.8 * c->c.period_s;
    dl.tv_sec = (time_t)until;
    dl.tv_nsec = (long)((until - (double)dl.tv_sec) * 1e9);
    while (io->done_seq < mine && !io->stop)
        if (pthread_cond_timedwait(&io->cv, &io->mu, &dl) != 0)
            break;
    int done = io->done_seq == mine && io->nres == p->ncaps;
    for (size_t q = 0; q < p->ncaps; q++) {
        p->caps[q].pushed = done && io->res[q].pushed;
        p->caps[q].enforced_w = done ? io->res[q].enforced_w : NAN;
        p->caps[q].push_status = done ? io->res[q].push_status : -1;
    }
    pthread_mutex_unlock(&io->mu);
    if (!done && p->ncaps)
        ctl_log(c, "push: not done within %.2f s (the caps are audited unconfirmed; the push goes on)",
                0.8 * c->c.period_s);
    return 0;
}

/* Each cap's node_raises: its node is sent a cap above its GPU's limit now
 * (read from the node's status, in the period's thread), so that node's
 * caps wait for the second batch. */
static void mark_raises(ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    for (size_t q = 0; q < p->ncaps; q++) {
        struct ctl_cap *cp = &p->caps[q];
        const struct agent_gpu *g = &c->agents[cp->node].st.gpu[p->gpu_slot[cp->site]];
        double draw = isnan(g->power_w) ? g->limit_w : g->power_w;
        cp->node_raises = 0;
        cp->free_w = cp->send && draw > cp->cap_w ? draw - cp->cap_w : 0;
    }
    for (size_t q = 0; q < p->ncaps; q++) {
        const struct ctl_cap *cp = &p->caps[q];
        double now_w = c->agents[cp->node].st.gpu[p->gpu_slot[cp->site]].limit_w;
        if (cp->send && cp->cap_w > now_w + c->cap_step_w / 2)
            for (size_t k = q; k < p->ncaps && p->caps[k].node == cp->node; k++)
                p->caps[k].node_raises = 1;
    }
    /* a node's caps are contiguous: spread the mark back to its first */
    for (size_t q = p->ncaps; q-- > 1;)
        if (p->caps[q].node_raises && p->caps[q - 1].node == p->caps[q].node)
            p->caps[q - 1].node_raises = 1;
}

int ctl_push_caps(ctl_t *c, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    p->t_push = pflex_mono_s();
    p->r.plan_s = p->t_push - p->t_plan;
    uint64_t fence = 0;
    if (c->c.may_push && !c->c.may_push(c->c.lead_ud, &fence)) {
        /* a standby: everything but the push; it holds no lease of its own,
         * so that once it leads every node is sent its caps at once */
        for (size_t q = 0; q < p->ncaps; q++)
            p->caps[q].pushed = 0;
        for (size_t a = 0; a < c->c.nagents; a++)
            c->agents[a].nheld = 0;
        p->r.pushed_nodes = 0;
        ctl_claims_take(c, 1);
        return 0;
    }
    if (!c->c.in_process) {
        mark_raises(c);
        if (c->started) {
            if (push_posted(c, fence, err) < 0)
                return -1;
        } else if (push_agents(c, p->caps, p->ncaps, c->http, fence, err) < 0)
            return -1;
    } else {
        /* in process: the caller applies them (ctl_caps) */
        for (size_t q = 0; q < p->ncaps; q++)
            p->caps[q].pushed = p->caps[q].send;
    }
    ctl_leases_took(c);
    ctl_claims_take(c, 0);
    return 0;
}

/* Reports of the site's power (site_w) over span_s to the VTN, for each
 * of its events in force at now. */
static void report_events(ctl_t *c, double now, double site_w, double span_s)
{
    uint64_t fence;
    if (c->c.may_push && !c->c.may_push(c->c.lead_ud, &fence))
        return;     /* the leader alone reports */
    for (size_t e = 0; e < c->evs.n; e++) {
        const struct pflex_oadr_event *ev = &c->evs.ev[e];
        if (!(ev->start_s <= now && now < ev->end_s))
            continue;
        struct pflex_oadr_report rep = {.program_id = ev->program_id, .event_id = ev->id,
                                        .client_name = c->c.oadr.client_name ? c->c.oadr.client_name : "pflex",
                                        .start_s = now, .duration_s = span_s,
                                        .usage_wh = site_w * span_s / 3600, .demand_w = site_w};
        pflex_error_t e2;
        if (pflex_ven_post_report(c->c.ven, &rep, &e2) < 0)
            ctl_log(c, "vtn report: %s", e2.text);
    }
}

void ctl_report_vtn(ctl_t *c)
{
    const struct ctl_period_state *p = &c->p;
    double site_w = ctl_site_w(c);
    if (c->started) {
        /* the VTN's thread reports it; the reader reads for the next period */
        pthread_mutex_lock(&c->io.mu);
        c->io.site_w = site_w;
        c->io.kick = 1;
        pthread_cond_broadcast(&c->io.cv);
        pthread_mutex_unlock(&c->io.mu);
        return;
    }
    if (c->c.ven && p->any_power)
        report_events(c, p->now, site_w, c->c.period_s);
}

/* ---- the IO threads (ctl_start) ---- */

/* Wait on the IO's condition until the monotonic time until or a stop;
 * with io->mu held.  1 when stopping. */
static int io_wait_until(struct ctl_io *io, double until)
{
    struct timespec dl;
    dl.tv_sec = (time_t)until;
    dl.tv_nsec = (long)((until - (double)dl.tv_sec) * 1e9);
    while (!io->stop && pflex_mono_s() < until)
        if (pthread_cond_timedwait(&io->cv, &io->mu, &dl) != 0)
            break;
    return io->stop;
}

/* The reader: once a period, each node's status (or Prometheus and the
 * job maps), published whole under io->mu. */
static void *reader_main(void *arg)
{
    ctl_t *c = arg;
    struct ctl_io *io = &c->io;
    struct ctl_agent *ags = calloc(c->c.nagents, sizeof *ags);
    if (!ags) {
        ctl_log(c, "reader: out of memory; no telemetry (the site holds, then lapses to its leases)");
        return NULL;
    }
    for (size_t a = 0; a < c->c.nagents; a++)
        ags[a].client = c->agents[a].client;
    for (unsigned long round = 1;; round++) {
        double t0 = pflex_mono_s();
        int prom_ok = 0, prom_stale = 0;
        char prom_why[200] = "";
        pflex_error_t err;
        if (read_round(c, ags, c->http, round, &prom_ok, &prom_stale, prom_why, pflex_real_s(), &err) < 0)
            ctl_log(c, "reader: %s", err.text);
        pthread_mutex_lock(&io->mu);
        io->prom_ok = prom_ok;
        io->prom_stale = prom_stale;
        memcpy(io->prom_why, prom_why, sizeof io->prom_why);
        for (size_t a = 0; a < c->c.nagents; a++) {
            struct ctl_snap *sn = &io->snap[a];
            agent_status_copy(&sn->st, &ags[a].st);
            sn->up = ags[a].up;
            sn->tele = ags[a].tele;
            sn->t = t0;
            sn->seq++;
        }
        io->rounds++;
        pthread_cond_broadcast(&io->cv);
        /* the next round when a period has ended (its reading is then new
         * at the next period's start), or a period from this one's start */
        double until = t0 + c->c.period_s;
        struct timespec dl = {(time_t)until, (long)((until - floor(until)) * 1e9)};
        while (!io->stop && !io->kick)
            if (pthread_cond_timedwait(&io->cv, &io->mu, &dl) != 0)
                break;
        io->kick = 0;
        int stop = io->stop;
        pthread_mutex_unlock(&io->mu);
        if (stop)
            break;
    }
    free(ags);
    return NULL;
}

/* The pusher: the caps last posted, to the agents, on clients of its own;
 * their outcome published. */
static void *pusher_main(void *arg)
{
    ctl_t *c = arg;
    struct ctl_io *io = &c->io;
    struct ctl_cap *mine = NULL;
    size_t cap = 0, n = 0;
    unsigned long taken = 0;
    pthread_mutex_lock(&io->mu);
    while (!io->stop) {
        if (io->job_seq == taken) {
            pthread_cond_wait(&io->cv, &io->mu);
            continue;
        }
        taken = io->job_seq;
        if (pflex_grow((void **)&mine, &cap, io->njob + 1, sizeof *mine) < 0) {
            ctl_log(c, "push: out of memory");
            continue;
        }
        n = io->njob;
        memcpy(mine, io->job, n * sizeof *mine);
        uint64_t fence = io->job_fence, now_fence = 0;
        pthread_mutex_unlock(&io->mu);
        pflex_error_t err;
        if (c->c.may_push && !c->c.may_push(c->c.lead_ud, &now_fence))
            for (size_t q = 0; q < n; q++)      /* no longer the leader: nothing sent */
                mine[q].pushed = 0;
        else if (push_agents(c, mine, n, io->push_http, fence, &err) < 0)
            ctl_log(c, "push: %s", err.text);
        pthread_mutex_lock(&io->mu);
        if (pflex_grow((void **)&io->res, &io->cap_res, n + 1, sizeof *io->res) == 0) {
            memcpy(io->res, mine, n * sizeof *mine);
            io->nres = n;
            io->done_seq = taken;
        }
        pthread_cond_broadcast(&io->cv);
    }
    pthread_mutex_unlock(&io->mu);
    free(mine);
    return NULL;
}

/* The VTN's poller: every vtn_every periods its events into the targets
 * (durably, ctl_vtn_apply), and reports of the site's power for those in
 * force. */
static void *vtn_main(void *arg)
{
    ctl_t *c = arg;
    struct ctl_io *io = &c->io;
    double every = c->c.vtn_every * c->c.period_s;
    for (;;) {
        double t0 = pflex_mono_s(), now = pflex_real_s();
        ctl_vtn_subscription(c);
        ctl_vtn_poll_once(c, now);
        pthread_mutex_lock(&io->mu);
        double site_w = io->site_w;
        pthread_mutex_unlock(&io->mu);
        if (isfinite(site_w))
            report_events(c, now, site_w, every);
        pthread_mutex_lock(&io->mu);
        int stop = io_wait_until(io, t0 + every);
        pthread_mutex_unlock(&io->mu);
        if (stop)
            break;
    }
    return NULL;
}

int ctl_io_start(ctl_t *c, pflex_error_t *err)
{
    struct ctl_io *io = &c->io;
    const struct ctl_config *cfg = &c->c;
    /* every request bounded by the period: reads 0.4 of it (a round each
     * period, as each ends), pushes 0.35 (cuts, then all, within 0.8) */
    long base_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 2000;
    long read_ms = (long)(400 * cfg->period_s), push_ms = (long)(350 * cfg->period_s);
    read_ms = read_ms < base_ms ? read_ms : base_ms;
    push_ms = push_ms < base_ms ? push_ms : base_ms;
    /* at least 250 ms: on a busy host a loopback answer may take that
     * long, and a request longer than the period delays no period (a
     * reading is then a period older; a push, unconfirmed) */
    read_ms = read_ms < 250 ? 250 : read_ms;
    push_ms = push_ms < 250 ? 250 : push_ms;
    unsigned parallel = cfg->parallel ? cfg->parallel : 64;
    size_t keep;
    (void)http_threads(cfg, parallel, &keep);
    for (size_t t = 0; t < c->nhttp; t++) {
        pflex_http_client_destroy(c->http[t]);
        c->http[t] = NULL;
        if (agent_client_http_create(read_ms, parallel, (unsigned)keep, cfg->ca_file, &c->http[t], err) < 0
            || agent_client_http_create(push_ms, parallel, (unsigned)keep, cfg->ca_file, &io->push_http[t],
                                        err) < 0)
            return -1;
    }
    io->snap = calloc(cfg->nagents, sizeof *io->snap);
    if (!io->snap)
        return pflex_error_set(err, "out of memory");
    io->site_w = NAN;
    io->timeout_s = read_ms / 1000.0;
    c->started = 1;
    if (pthread_create(&io->reader, NULL, reader_main, c) != 0)
        return pflex_error_set(err, "controller: no thread for the reader");
    io->reader_on = 1;
    if (pthread_create(&io->pusher, NULL, pusher_main, c) != 0)
        return pflex_error_set(err, "controller: no thread for the pusher");
    io->pusher_on = 1;
    if (cfg->ven) {
        if (pthread_create(&io->vtn, NULL, vtn_main, c) != 0)
            return pflex_error_set(err, "controller: no thread for the VTN");
        io->vtn_on = 1;
    }
    /* the first period plans on a first reading: its round, at most a
     * period and its requests' time (a node not read is never reached,
     * counted at agent_max_w) */
    double until = pflex_mono_s() + cfg->period_s + read_ms / 1000.0 + 1;
    struct timespec dl = {(time_t)until, (long)((until - floor(until)) * 1e9)};
    pthread_mutex_lock(&io->mu);
    while (!io->rounds && !io->stop)
        if (pthread_cond_timedwait(&io->cv, &io->mu, &dl) != 0)
            break;
    pthread_mutex_unlock(&io->mu);
    return 0;
}

void ctl_io_stop(ctl_t *c)
{
    struct ctl_io *io = &c->io;
    pthread_mutex_lock(&io->mu);
    io->stop = 1;
    pthread_cond_broadcast(&io->cv);
    pthread_mutex_unlock(&io->mu);
    if (io->reader_on)
        pthread_join(io->reader, NULL);
    if (io->pusher_on)
        pthread_join(io->pusher, NULL);
    if (io->vtn_on) {
        pthread_join(io->vtn, NULL);
        ctl_vtn_unsubscribe(c);
    }
    io->reader_on = io->pusher_on = io->vtn_on = 0;
    for (size_t t = 0; t < CTL_MAX_HTTP; t++) {
        pflex_http_client_destroy(io->push_http[t]);
        io->push_http[t] = NULL;
    }
    free(io->snap);
    free(io->job);
    free(io->res);
    io->snap = NULL;
    io->job = io->res = NULL;
    io->cap_job = io->cap_res = 0;
}
