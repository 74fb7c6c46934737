/* controller.c — one control period of the site loop (controller.h).
 *
 * Read every agent (an agent that does not answer keeps its last known
 * GPUs, counted at their maximum limits; one never reached counts at
 * agent_max_w), feed each settled job's (cap, power, throughput) to its
 * learner, plan with pflex_safe_plan on the learned curves against the
 * smallest target limit over this period and the next, probe a little deeper where the
 * floor allows, push the caps with leases, and write the period down. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <curl/curl.h>
#include <sys/resource.h>
#include "controller/agent_client.h"
#include "controller/controller.h"
#include "controller/ctl_int.h"
#include "controller/prom_source.h"
#include "lib/util/strtab.h"
#include "pflex/audit.h"
#include "pflex/learn.h"
#include "pflex/safeplan.h"
#include "lib/util/clock.h"

static void logf_(ctl_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(ctl_t *c, const char *fmt, ...)
{
    if (!c->c.log)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->c.log, fmt, ap);
    va_end(ap);
    fputc('\n', c->c.log);
    fflush(c->c.log);
}

int ctl_create(const struct ctl_config *cfg, ctl_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!cfg->nagents)
        return pflex_error_set(err, "controller: no agents");
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return pflex_error_set(err, "libcurl failed to initialise");
    ctl_t *c = calloc(1, sizeof *c);
    if (!c)
        return pflex_error_set(err, "out of memory");
    c->c = *cfg;
    if (!(c->c.period_s > 0))
        c->c.period_s = 5;
    if (!(c->c.lease_s > 0))
        c->c.lease_s = 3 * c->c.period_s;
    if (!(c->c.agent_max_w > 0))
        c->c.agent_max_w = 8000;
    if (!(c->c.z > 0))
        c->c.z = 2;
    c->settle_s = c->c.settle_s > c->c.period_s ? c->c.settle_s : c->c.period_s;
    if (c->c.vtn_every <= 0)
        c->c.vtn_every = 1;
    if (c->c.status_every <= 0)
        c->c.status_every = 10;
    c->last_limit_w = INFINITY;
    c->last_measured_w = NAN;
    pflex_target_set_init(&c->targets);
    pflex_safe_plan_init(&c->plan);
    c->agents = calloc(cfg->nagents, sizeof *c->agents);
    if (!c->agents) {
        ctl_destroy(c);
        return pflex_error_set(err, "out of memory");
    }
    for (size_t a = 0; a < cfg->nagents; a++)
        if (agent_client_create(cfg->agent_urls[a], cfg->agent_token, cfg->timeout_ms,
                                &c->agents[a].client, err) < 0
            || agent_client_set_ca_file(c->agents[a].client, cfg->ca_file, err) < 0) {
            ctl_destroy(c);
            return -1;
        }
    /* one HTTP client for all agents: a connection kept open to each from
     * one period to the next, as far as the descriptors allow */
    unsigned parallel = cfg->parallel ? cfg->parallel : 64;
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
    c->nhttp = nh;
    for (size_t t = 0; t < nh; t++)
        if (agent_client_http_create(cfg->timeout_ms, parallel, (unsigned)keep, cfg->ca_file, &c->http[t],
                                     err) < 0) {
            ctl_destroy(c);
            return -1;
        }
    /* two queries a period: each bounded by 0.4 period, so that a server
     * that hangs never delays the renewal of the leases past their end */
    long prom_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 2000;
    if (prom_ms > (long)(400 * c->c.period_s))
        prom_ms = (long)(400 * c->c.period_s);
    if (prom_ms < 50)
        prom_ms = 50;
    if (cfg->prometheus_url && prom_source_create(cfg->prometheus_url, prom_ms, &c->prom, err) < 0) {
        ctl_destroy(c);
        return -1;
    }
    if (cfg->db_path && pflex_audit_open(cfg->db_path, &c->audit, err) < 0) {
        ctl_destroy(c);
        return -1;
    }
    *out = c;
    return 0;
}

static int resume_target(void *ud, const struct pflex_audit_target *at)
{
    ctl_t *c = ud;
    struct pflex_target t = {.start_s = at->start_s, .end_s = at->end_s, .value = at->value,
                             .unit = at->fraction ? PFLEX_TARGET_FRACTION : PFLEX_TARGET_WATTS,
                             .ramp_s = at->ramp_s, .priority = at->priority};
    snprintf(t.source, sizeof t.source, "%s", at->source ? at->source : "resumed");
    snprintf(t.id, sizeof t.id, "%s", at->name ? at->name : "");
    pflex_error_t e2;
    if (pflex_target_set_add(&c->targets, &t, &e2) < 0)
        logf_(c, "resume: target left out: %s", e2.text);
    return 0;
}

int ctl_resume(ctl_t *c, double now, size_t *ntargets, pflex_error_t *err)
{
    size_t before = c->targets.n;
    if (c->audit && pflex_audit_load_targets(c->audit, now, resume_target, c, err) < 0)
        return -1;
    /* what was loaded is in the audit already */
    c->recorded_seq = c->targets.next_seq;
    if (ntargets)
        *ntargets = c->targets.n - before;
    return 0;
}

static int resume_obs(void *ud, double t, double cap_w, double power_w, double tput)
{
    (void)t;
    (void)pflex_learn_observe(ud, cap_w, power_w, tput, NULL);
    return 0;
}

void ctl_destroy(ctl_t *c)
{
    if (!c)
        return;
    for (size_t a = 0; c->agents && a < c->c.nagents; a++)
        agent_client_destroy(c->agents[a].client);
    free(c->agents);
    for (size_t t = 0; t < c->nhttp; t++)
        pflex_http_client_destroy(c->http[t]);
    prom_source_destroy(c->prom);
    for (size_t j = 0; j < c->njobs; j++) {
        pflex_learn_destroy(c->jobs[j].learn);
        pflex_learn_curve_fini(&c->jobs[j].curve);
        free(c->jobs[j].hi);
    }
    free(c->jobs);
    pflex_strtab_fini(&c->job_names);
    free(c->gpu_next);
    pflex_target_set_fini(&c->targets);
    pflex_audit_close(c->audit);
    pflex_oadr_events_fini(&c->evs);
    pflex_safe_plan_fini(&c->plan);
    free(c->gpus);
    free(c->sjobs);
    free(c->gpu_agent);
    free(c->gpu_slot);
    free(c);
}

pflex_target_set_t *ctl_targets(ctl_t *c)
{
    return &c->targets;
}

const struct pflex_learn_curve *ctl_job_curve(const ctl_t *c, const char *job)
{
    for (size_t j = 0; j < c->njobs; j++)
        if (!strcmp(c->jobs[j].name, job))
            return &c->jobs[j].curve;
    return NULL;
}

static struct ctl_job *job_get(ctl_t *c, const char *name, double min_w, double max_w,
                               pflex_error_t *err)
{
    char key[sizeof c->jobs[0].name];
    snprintf(key, sizeof key, "%s", name);  /* as stored: names are kept to 63 bytes */
    long found = pflex_strtab_find(&c->job_names, key, strlen(key));
    if (found >= 0)
        return &c->jobs[found];
    if (c->njobs == c->cap_jobs) {
        size_t n = c->cap_jobs ? 2 * c->cap_jobs : 16;
        struct ctl_job *nj = realloc(c->jobs, n * sizeof *nj);
        if (!nj)
            return pflex_error_set(err, "out of memory"), NULL;
        c->jobs = nj;
        c->cap_jobs = n;
    }
    struct ctl_job *j = &c->jobs[c->njobs];
    memset(j, 0, sizeof *j);
    snprintf(j->name, sizeof j->name, "%s", name);
    struct pflex_learn_config lc = {.min_cap_w = min_w, .max_cap_w = max_w};
    const struct pflex_job_policy *pol = pflex_job_policy_find(c->c.policies, name);
    if (pol && isfinite(pol->pfi))
        lc.prior_pfi = pol->pfi;       /* L = x/PFI until the job is learned */
    if (pflex_learn_create(&lc, &j->learn, err) < 0)
        return NULL;
    pflex_learn_curve_init(&j->curve);
    /* a job seen before a restart starts from what was learned */
    if (c->audit && pflex_audit_load_observations(c->audit, j->name, 5000, resume_obs, j->learn, err) < 0) {
        pflex_learn_destroy(j->learn);
        return NULL;
    }
    j->last_cap = NAN;
    j->tput_now = NAN;
    j->cap_since = NAN;
    j->min_w = min_w;
    j->max_w = max_w;
    /* the names' indices are the jobs': both only grow, in this order */
    if (pflex_strtab_intern(&c->job_names, key, strlen(key), NULL) != (long)c->njobs) {
        pflex_learn_destroy(j->learn);
        pflex_learn_curve_fini(&j->curve);
        return pflex_error_set(err, "out of memory"), NULL;
    }
    c->njobs++;
    return j;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * size);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
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

/* Each job's baseline rate T0 for the plan's objective (in t0_plan).  A
 * job seen uncapped has its own; one first seen under a cap has the rate
 * it shows divided by what its curve says that cap keeps (1 - L); one
 * with no rate yet has the per-GPU mean of the others times its GPUs (1
 * per GPU when no job is known), so that a job without data is planned
 * as a typical one, neither spared nor cut first. */
static void job_baselines(ctl_t *c, size_t ngpus)
{
    double sum_t = 0, sum_n = 0;
    for (size_t j = 0; j < c->njobs; j++)
        c->jobs[j].n_now = 0;
    for (size_t k = 0; k < ngpus; k++)
        if (c->gpus[k].job >= 0 && c->gpus[k].reachable)
            c->jobs[c->gpus[k].job].n_now++;
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        const struct pflex_learn_curve *cv = &cj->curve;
        cj->t0_plan = NAN;
        if (cv->has_baseline && cv->t0 > 0)
            cj->t0_plan = cv->t0;
        else if (isfinite(cj->tput_now) && cj->tput_now > 0 && isfinite(cj->last_cap)
                 && cj->max_w > 0) {
            double x = 1 - cj->last_cap / (cv->p0_w > 0 ? cv->p0_w : cj->max_w);
            double keep = 1 - pflex_learn_loss(cv, x > 0 ? x : 0);
            cj->t0_plan = cj->tput_now / (keep > 0.05 ? keep : 0.05);
        }
        if (isfinite(cj->t0_plan) && cj->n_now) {
            sum_t += cj->t0_plan;
            sum_n += cj->n_now;
        }
    }
    double per_gpu = sum_n > 0 ? sum_t / sum_n : 1;
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        if (!isfinite(cj->t0_plan))
            cj->t0_plan = per_gpu * (double)(cj->n_now ? cj->n_now : 1);
    }
}

/* Record targets not yet in the audit, and the VTN's withdrawals. */
static void audit_targets(ctl_t *c, double now)
{
    if (!c->audit)
        return;
    pflex_error_t err;
    uint64_t top = c->recorded_seq;
    const char *keep[512];
    size_t nkeep = 0;
    for (size_t i = 0; i < c->targets.n; i++) {
        const struct pflex_target *t = &c->targets.t[i];
        if (!strcmp(t->source, "openadr") && nkeep < 512)
            keep[nkeep++] = t->id;
        if (t->seq < c->recorded_seq)
            continue;
        struct pflex_audit_target at = {.t = now, .source = t->source, .name = t->id,
                                        .start_s = t->start_s, .end_s = t->end_s, .value = t->value,
                                        .fraction = t->unit == PFLEX_TARGET_FRACTION,
                                        .ramp_s = t->ramp_s, .priority = t->priority, .seq = t->seq};
        if (pflex_audit_target(c->audit, &at, &err) < 0)
            logf_(c, "audit: %s", err.text);
        if (t->seq + 1 > top)
            top = t->seq + 1;
    }
    c->recorded_seq = top;
    if (c->c.ven && pflex_audit_targets_withdraw(c->audit, now, "openadr", keep, nkeep, &err) < 0)
        logf_(c, "audit: %s", err.text);
}

/* The job map file's jobs on st's host, in place of the agent's own; a
 * job's throughput stays what the source measured for that name. */
static void apply_job_map(ctl_t *c, struct agent_status *st)
{
    struct agent_job jobs[AGENT_MAX_JOBS];
    size_t n = 0;
    for (size_t r = 0; r < c->c.job_map_n; r++) {
        const struct pflex_jobmap_row *row = &c->c.job_map[r];
        if (strcmp(row->host, st->host) || row->gpu < 0)
            continue;
        size_t k = 0;
        while (k < n && strcmp(jobs[k].name, row->job))
            k++;
        if (k == n) {
            if (n == AGENT_MAX_JOBS || strlen(row->job) >= sizeof jobs[0].name)
                continue;
            memset(&jobs[n], 0, sizeof jobs[n]);
            snprintf(jobs[n].name, sizeof jobs[n].name, "%s", row->job);
            jobs[n].throughput = NAN;
            for (size_t m = 0; m < st->njobs; m++)
                if (!strcmp(st->job[m].name, row->job))
                    jobs[n].throughput = st->job[m].throughput;
            n++;
        }
        if (jobs[k].ngpus < AGENT_MAX_GPUS)
            jobs[k].gpus[jobs[k].ngpus++] = row->gpu;
    }
    memcpy(st->job, jobs, n * sizeof *jobs);
    st->njobs = n;
}

int ctl_period(ctl_t *c, double now, struct ctl_period_result *r, pflex_error_t *err)
{
    memset(r, 0, sizeof *r);
    double t_start = pflex_mono_s();
    if (c->periods && now > c->last_t)
        c->gap_hist[c->hist_n % 16] = now - c->last_t;
    c->periods++;
    /* 1. targets: the VTN's, when due; a failure keeps what we had */
    if (c->c.ven && (c->periods - 1) % (unsigned long)c->c.vtn_every == 0) {
        struct pflex_oadr_opts o = c->c.oadr;
        o.now_s = now;
        pflex_error_t e2;
        if (pflex_ven_poll(c->c.ven, &o, &c->targets, &c->evs, &e2) < 0) {
            logf_(c, "vtn: %s (targets kept)", e2.text);
            if (c->audit)
                pflex_audit_note(c->audit, now, "vtn", e2.text, NULL);
        } else if (c->evs.skipped)
            logf_(c, "vtn: %zu left out: %s", c->evs.skipped, c->evs.note);
    }
    /* a target is kept a day past its end: the ramp of the one that
     * follows starts from it (pflex/target.h), and an interval of an
     * event follows the one before without a gap */
    pflex_target_set_expire(&c->targets, now - 86400);

    /* 2. read the site: each agent's status, or Prometheus (the agents
     * then only for their host name and job map, now and then) */
    double t_read = pflex_mono_s();
    size_t ngpus = 0;
    double never_w = 0;
    if (c->prom) {
        pflex_error_t e2;
        c->prom_ok = prom_source_read(c->prom, &e2) == 0;
        if (!c->prom_ok) {
            logf_(c, "prometheus: %s (caps held)", e2.text);
            if (c->audit)
                pflex_audit_note(c->audit, now, "prometheus", e2.text, NULL);
        }
    }
    /* every agent due a status read, all at once: each agent's status
     * (direct), or its host name and job map (Prometheus: now and then) */
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
    {
        pflex_error_t e2;
        (void)e2;
        agents_batch(c, rd, NULL, c->c.nagents);    /* failures are per agent */
    }
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &c->agents[a];
        struct agent_status st;
        pflex_error_t e2 = rd[a].err;
        if (!c->prom) {
            ag->up = ag->tele = rd[a].ok;
            if (ag->up)
                ag->seen = 1;
        } else {
            if (rd[a].agent) {
                if (rd[a].ok)
                    ag->meta_seen = 1;
                else
                    logf_(c, "agent %s: %s", agent_client_url(ag->client), e2.text);
            }
            if (!ag->meta_seen) {
                ag->up = ag->tele = 0;
                snprintf(e2.text, sizeof e2.text, "never reached: its host name is unknown");
            } else if (c->prom_ok) {
                ag->up = ag->tele = prom_source_status(c->prom, ag->meta.host, &st) == 0;
                if (ag->up) {
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
                } else
                    snprintf(e2.text, sizeof e2.text, "no fresh series of host '%s' in Prometheus",
                             ag->meta.host);
            } else {
                /* no telemetry at all: the agent is still there to hold
                 * its caps (the plan holds: nothing rises) */
                ag->up = ag->seen;
                ag->tele = 0;
            }
        }
        if (ag->up && c->c.job_map)
            apply_job_map(c, &ag->st);
        if (!ag->up) {
            r->agents_down++;
            logf_(c, "agent %s: %s", agent_client_url(ag->client), e2.text);
        }
        if (ag->seen)
            ngpus += ag->st.ngpus;
        else
            never_w += c->c.agent_max_w;
    }
    free(rd);
    double t_plan = pflex_mono_s();
    r->read_s = t_plan - t_read;
    if (grow((void **)&c->gpus, &c->cap_gpus, ngpus + 1, sizeof *c->gpus) < 0)
        return pflex_error_set(err, "out of memory");
    if (grow((void **)&c->gpu_agent, &c->cap_ga, ngpus + 1, sizeof *c->gpu_agent) < 0
        || grow((void **)&c->gpu_slot, &c->cap_gs, ngpus + 1, sizeof *c->gpu_slot) < 0)
        return pflex_error_set(err, "out of memory");
    for (size_t j = 0; j < c->njobs; j++)
        c->jobs[j].seen_now = 0;

    /* 3. the site's GPUs and jobs */
    if (grow((void **)&c->gpu_next, &c->cap_gn, ngpus + 1, sizeof *c->gpu_next) < 0)
        return pflex_error_set(err, "out of memory");
    for (size_t j = 0; j < c->njobs; j++) {
        c->jobs[j].tput_sum = 0;
        c->jobs[j].have_t = 0;
    }
    size_t g = 0;
    double measured = 0, sum_max = 0;
    int any_power = 0;
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &c->agents[a];
        if (!ag->seen)
            continue;
        size_t first_g = g;     /* this agent's GPUs are [first_g, first_g + ngpus) */
        for (size_t k = 0; k < ag->st.ngpus; k++) {
            const struct agent_gpu *ug = &ag->st.gpu[k];
            struct pflex_site_gpu *sg = &c->gpus[g];
            *sg = (struct pflex_site_gpu){.job = -1, .reachable = ag->up && ug->ok,
                                          .telemetry_ok = ag->up && ag->tele && isfinite(ug->power_w),
                                          .min_cap_w = ug->min_w, .max_cap_w = ug->max_w,
                                          .cap_w = ug->limit_w};
            if (sg->telemetry_ok) {
                measured += ug->power_w;
                any_power = 1;
            }
            sum_max += ug->max_w;
            c->gpu_agent[g] = a;
            c->gpu_slot[g] = k;
            g++;
        }
        for (size_t m = 0; m < ag->st.njobs; m++) {
            const struct agent_job *aj = &ag->st.job[m];
            const struct agent_gpu *first = NULL;
            for (size_t k = 0; k < ag->st.ngpus && !first; k++)
                if (aj->ngpus && ag->st.gpu[k].index == aj->gpus[0])
                    first = &ag->st.gpu[k];
            if (!first)
                continue;
            struct ctl_job *cj = job_get(c, aj->name, first->min_w, first->max_w, err);
            if (!cj)
                return -1;
            cj->seen_now = 1;
            if (ag->up && ag->tele && isfinite(aj->throughput)) {
                cj->tput_sum += aj->throughput;
                cj->have_t = 1;
            }
            size_t ji = (size_t)(cj - c->jobs);
            for (int q = 0; q < aj->ngpus; q++)
                for (size_t k = first_g; k < g; k++)
                    if (ag->st.gpu[c->gpu_slot[k]].index == aj->gpus[q])
                        c->gpus[k].job = (int)ji;
        }
    }
    r->gpus = g;

    /* 4. learn: a job whose GPUs all answered, at one common cap held
     * since last period, gives one observation.  One pass over the GPUs
     * gathers each job's (its GPUs chained from gpu_head by gpu_next, in
     * site order, for the probes below). */
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        cj->gpu_head = cj->gpu_tail = SIZE_MAX;
        cj->agg_n = 0;
        cj->agg_ok = cj->seen_now;
        cj->agg_cap = NAN;
        cj->agg_power = 0;
    }
    for (size_t k = 0; k < g; k++) {
        c->gpu_next[k] = SIZE_MAX;
        if (c->gpus[k].job < 0)
            continue;
        struct ctl_job *cj = &c->jobs[c->gpus[k].job];
        if (cj->gpu_tail == SIZE_MAX)
            cj->gpu_head = k;
        else
            c->gpu_next[cj->gpu_tail] = k;
        cj->gpu_tail = k;
        if (!cj->agg_ok)
            continue;
        const struct agent_gpu *ug = &c->agents[c->gpu_agent[k]].st.gpu[c->gpu_slot[k]];
        if (!c->gpus[k].reachable || !c->gpus[k].telemetry_ok || !isfinite(ug->limit_w))
            cj->agg_ok = 0;
        else if (cj->agg_n == 0)
            cj->agg_cap = ug->limit_w;
        else if (fabs(ug->limit_w - cj->agg_cap) > 1)
            cj->agg_ok = 0;
        cj->agg_power += ug->power_w;
        cj->agg_n++;
    }
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        double cap = cj->agg_cap, power = cj->agg_power, tput = cj->tput_sum;
        int n = (int)cj->agg_n, ok = cj->agg_ok, have_t = cj->have_t;
        /* settled: the cap moved less than a learner bin (5 W) since the
         * last reading, so the readings of the period were taken under it */
        int settled = ok && n > 0 && have_t && isfinite(cj->last_cap) && fabs(cj->last_cap - cap) <= 5;
        /* the cap must also have been seen for --settle seconds, so that
         * a rate averaged over the agents' throughput window (and aged by
         * the telemetry's own delay) was measured under it alone */
        if (!(ok && n > 0))
            cj->cap_since = NAN;
        else if (!isfinite(cj->last_cap) || fabs(cj->last_cap - cap) > 5 || !isfinite(cj->cap_since))
            cj->cap_since = now;
        settled = settled && isfinite(cj->cap_since) && now - cj->cap_since >= c->settle_s - 1e-6;
        cj->tput_now = ok && n > 0 && have_t ? tput : NAN;
        cj->last_cap = ok && n > 0 ? cap : NAN;
        if (settled) {
            pflex_error_t e2;
            if (pflex_learn_observe(cj->learn, cap, power / n, tput, &e2) < 0)
                logf_(c, "learn %s: %s", cj->name, e2.text);
            else if (c->audit)
                pflex_audit_observation(c->audit, now, cj->name, cap, power / n, tput, NULL);
        }
        if (pflex_learn_fit(cj->learn, &cj->curve, err) < 0)
            return -1;
        if (grow((void **)&cj->hi, &cj->hi_cap, cj->curve.n, sizeof *cj->hi) < 0)
            return pflex_error_set(err, "out of memory");
        for (size_t i = 0; i < cj->curve.n; i++)
            cj->hi[i] = cj->curve.loss[i] + c->c.z * cj->curve.sd[i];
    }

    /* 5. plan */
    if (grow((void **)&c->sjobs, &c->cap_sjobs, c->njobs + 1, sizeof *c->sjobs) < 0)
        return pflex_error_set(err, "out of memory");
    job_baselines(c, g);
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        double t0 = cj->t0_plan;
        const struct pflex_job_policy *pol = pflex_job_policy_find(c->c.policies, cj->name);
        c->sjobs[j] = (struct pflex_site_job){.name = cj->name, .t0 = t0,
                                              .weight = pol ? pol->weight : 1,
                                              .floor = pol && isfinite(pol->floor) ? pol->floor : c->c.floor,
                                              .n = cj->curve.n, .cap_w = cj->curve.cap_w,
                                              .loss = cj->curve.loss, .loss_hi = cj->hi};
    }
    double other = c->c.other_w + never_w;
    double baseline = c->c.baseline_w > 0 ? c->c.baseline_w : sum_max;
    /* The lowest limit over as long as the caps pushed now may have to
     * hold: until the next period has pushed its own, at least this period
     * and the next, longer when periods have run late or long (a slow
     * agent, a busy host: the longest gap between periods plus the longest
     * run of one, over the last 16), at most 10 periods.  A step down is
     * met early rather than late. */
    double horizon = 2 * c->c.period_s, gmax = 0, rmax = 0;
    for (unsigned i = 0; i < 16 && i < c->hist_n; i++) {
        gmax = c->gap_hist[i] > gmax ? c->gap_hist[i] : gmax;
        rmax = c->run_hist[i] > rmax ? c->run_hist[i] : rmax;
    }
    if (gmax + rmax > horizon)
        horizon = gmax + rmax;
    if (horizon > 10 * c->c.period_s)
        horizon = 10 * c->c.period_s;
    double limit = pflex_target_limit_min_w(&c->targets, now, now + horizon, baseline, sum_max + other);
    struct pflex_safe_input in = {.ngpus = g, .gpus = c->gpus, .njobs = c->njobs, .jobs = c->sjobs,
                                  .limit_w = limit, .other_w = other, .hold = g > 0 && !any_power,
                                  .objective = c->c.progress ? PFLEX_OBJECTIVE_PROGRESS
                                                             : PFLEX_OBJECTIVE_THROUGHPUT};
    if (pflex_safe_plan(&in, &c->plan, err) < 0)
        return -1;

    /* 6. a little exploration: only deeper, only where the floor allows.
     * A probe holds two periods, so that the second reads it settled. */
    if (c->c.explore_step > 0)
        for (size_t j = 0; j < c->njobs; j++) {
            struct ctl_job *cj = &c->jobs[j];
            double planned = c->plan.job_cap_w[j];
            if (!isfinite(planned))
                continue;
            if (!cj->probe_left) {
                double xp, cap;
                if (cj->probe_wait) {
                    cj->probe_wait--;
                    continue;
                }
                if (!cj->curve.has_baseline)
                    continue;
                double x_now = 1 - planned / cj->curve.p0_w;
                if (x_now < 0)
                    x_now = 0;
                /* between events: walk the curve down for the next one;
                 * under a target: only near the plan, where the next
                 * periods' plans will look (a probe's watts are not given
                 * to the others, so deep probes there cost throughput) */
                int found = isfinite(limit)
                    ? pflex_learn_probe_near(&cj->curve, c->sjobs[j].floor, c->c.z, x_now,
                                             c->c.explore_step, 2 * cj->curve.sigma, &xp, &cap)
                    : pflex_learn_probe(&cj->curve, c->sjobs[j].floor, c->c.z, x_now,
                                        c->c.explore_step, 2 * cj->curve.sigma, &xp, &cap);
                /* a probe less than a learner bin (5 W) below the plan
                 * teaches nothing the plan's own readings do not */
                if (!found || planned - floor(cap) < 5)
                    continue;
                cj->probe_cap = floor(cap);
                logf_(c, "probe %s at %.0f W (x %.3f, plan %.0f W)", cj->name, cj->probe_cap, xp, planned);
                /* held until a reading under it has settled */
                cj->probe_left = 1 + (unsigned)ceil(c->settle_s / c->c.period_s - 1e-6);
                cj->probe_wait = 3;
                r->probes++;
            }
            cj->probe_left--;
            for (size_t k = cj->gpu_head; k != SIZE_MAX; k = c->gpu_next[k])
                if (c->gpus[k].reachable
                    && c->plan.cap_w[k] > cj->probe_cap && cj->probe_cap >= c->gpus[k].min_cap_w) {
                    c->plan.worst_w -= c->plan.cap_w[k] - cj->probe_cap;
                    c->plan.cap_w[k] = cj->probe_cap;
                }
        }

    /* 7. push: every cut on every agent in one batch, and only when all
     * of them have answered, every cap in a second */
    double t_push = pflex_mono_s();
    r->plan_s = t_push - t_plan;
    long long period_id = 0;
    if (c->audit) {
        if (pflex_audit_begin(c->audit, err) < 0)
            return -1;
        audit_targets(c, now);
        struct pflex_audit_period ap = {.t = now, .limit_w = limit, .worst_w = c->plan.worst_w,
                                        .least_w = c->plan.least_w,
                                        .site_power_w = any_power ? measured + c->c.other_w : NAN,
                                        .throughput = c->plan.throughput, .feasible = c->plan.feasible,
                                        .floor_breaches = (long)c->plan.floor_breaches,
                                        .held = (long)c->plan.held};
        if (pflex_audit_period(c->audit, &ap, &period_id, err) < 0) {
            pflex_audit_rollback(c->audit);
            return -1;
        }
    }
    /* each agent's reachable GPUs, in site order, as its slice
     * [first[a], first[a + 1]) of capk (their site indices) and caps */
    size_t na = c->c.nagents;
    size_t *first = calloc(na + 1, sizeof *first), *capk = malloc((g + 1) * sizeof *capk);
    struct agent_cap *caps = malloc((g + 1) * sizeof *caps);
    struct agent_push *push = calloc(na, sizeof *push);
    if (!first || !capk || !caps || !push) {
        free(first);
        free(capk);
        free(caps);
        free(push);
        if (c->audit)
            pflex_audit_rollback(c->audit);
        return pflex_error_set(err, "out of memory");
    }
    for (size_t k = 0; k < g; k++)
        if (c->gpus[k].reachable && c->agents[c->gpu_agent[k]].up)
            first[c->gpu_agent[k] + 1]++;
    for (size_t a = 0; a < na; a++)
        first[a + 1] += first[a];
    for (size_t k = 0; k < g; k++)
        if (c->gpus[k].reachable && c->agents[c->gpu_agent[k]].up) {
            size_t a = c->gpu_agent[k];
            capk[first[a] + push[a].n++] = k;
        }
    /* cuts first: every GPU whose cap falls, on every agent, before any
     * cap rises anywhere, so that the site never sums a raise on one node
     * with a cut not yet made on another */
    for (size_t a = 0; a < na; a++) {
        struct ctl_agent *ag = &c->agents[a];
        size_t n = 0;
        for (size_t q = first[a]; q < first[a + 1]; q++) {
            size_t k = capk[q];
            const struct agent_gpu *ug = &ag->st.gpu[c->gpu_slot[k]];
            if (!(c->plan.cap_w[k] >= ug->limit_w - 0.5))
                caps[first[a] + n++] = (struct agent_cap){.gpu = ug->index, .cap_w = c->plan.cap_w[k],
                                                          .enforced_w = NAN};
        }
        push[a] = (struct agent_push){.agent = n ? ag->client : NULL, .caps = &caps[first[a]], .n = n};
    }
    agents_batch(c, NULL, push, na);   /* failures are per agent */
    for (size_t a = 0; a < na; a++)
        if (push[a].agent && !push[a].ok)
            logf_(c, "agent %s: %s", agent_client_url(c->agents[a].client), push[a].err.text);
    /* then every cap, on every agent that answered this period */
    for (size_t a = 0; a < na; a++) {
        struct ctl_agent *ag = &c->agents[a];
        for (size_t q = first[a]; q < first[a + 1]; q++)
            caps[q] = (struct agent_cap){.gpu = ag->st.gpu[c->gpu_slot[capk[q]]].index,
                                         .cap_w = c->plan.cap_w[capk[q]], .enforced_w = NAN};
        size_t n = first[a + 1] - first[a];
        push[a] = (struct agent_push){.agent = n ? ag->client : NULL, .caps = &caps[first[a]], .n = n};
    }
    agents_batch(c, NULL, push, na);
    for (size_t a = 0; a < na; a++) {
        struct ctl_agent *ag = &c->agents[a];
        if (!push[a].agent)
            continue;
        int pushed = push[a].ok;
        if (!pushed)
            logf_(c, "agent %s: %s", agent_client_url(ag->client), push[a].err.text);
        for (size_t q = first[a]; q < first[a + 1]; q++) {
            size_t k = capk[q];
            const struct agent_gpu *ug = &ag->st.gpu[c->gpu_slot[k]];
            char gname[96];
            snprintf(gname, sizeof gname, "%s/%d", ag->st.host[0] ? ag->st.host : agent_client_url(ag->client),
                     ug->index);
            const char *jn = c->gpus[k].job >= 0 ? c->jobs[c->gpus[k].job].name : NULL;
            if (c->audit) {
                pflex_audit_cap(c->audit, period_id, gname, jn, caps[q].cap_w, pushed,
                                caps[q].enforced_w, NULL);
                pflex_audit_reading(c->audit, now, gname, jn, ug->power_w, ug->limit_w, NAN, NULL);
            }
        }
    }
    free(first);
    free(capk);
    free(caps);
    free(push);
    if (c->audit) {
        if (c->periods % 10 == 1)
            for (size_t j = 0; j < c->njobs; j++) {
                struct pflex_learn_curve *cv = &c->jobs[j].curve;
                pflex_audit_curve(c->audit, now, c->jobs[j].name, cv->n, cv->x, cv->loss, cv->sd,
                                  cv->cap_w, cv->p0_w, cv->t0, NULL);
            }
        if (c->plan.floor_breaches)
            pflex_audit_note(c->audit, now, "floor", "jobs cut past their floor to keep the target", NULL);
        if (pflex_audit_commit(c->audit, err) < 0) {
            pflex_audit_rollback(c->audit);
            return -1;
        }
    }
    r->push_s = pflex_mono_s() - t_push;
    c->run_hist[c->hist_n % 16] = pflex_mono_s() - t_start;
    if (c->periods == 1)
        c->gap_hist[0] = c->c.period_s;
    c->hist_n++;

    /* 8. reports to the VTN for the events in force */
    if (c->c.ven && any_power)
        for (size_t e = 0; e < c->evs.n; e++) {
            const struct pflex_oadr_event *ev = &c->evs.ev[e];
            if (!(ev->start_s <= now && now < ev->end_s))
                continue;
            struct pflex_oadr_report rep = {.program_id = ev->program_id, .event_id = ev->id,
                                            .client_name = c->c.oadr.client_name ? c->c.oadr.client_name : "pflex",
                                            .start_s = now, .duration_s = c->c.period_s,
                                            .usage_wh = (measured + c->c.other_w) * c->c.period_s / 3600,
                                            .demand_w = measured + c->c.other_w};
            pflex_error_t e2;
            if (pflex_ven_post_report(c->c.ven, &rep, &e2) < 0)
                logf_(c, "vtn report: %s", e2.text);
        }

    c->last_limit_w = limit;
    c->last_measured_w = any_power ? measured + c->c.other_w : NAN;
    c->last_t = now;
    c->last_agents_down = r->agents_down;
    r->limit_w = limit;
    r->worst_w = c->plan.worst_w;
    r->measured_w = any_power ? measured + c->c.other_w : NAN;
    r->feasible = c->plan.feasible;
    r->jobs = c->njobs;
    r->floor_breaches = c->plan.floor_breaches;
    r->held = c->plan.held;
    logf_(c, "period %lu: limit %.0f W, worst case %.0f W, measured %.0f W, %zu GPUs, %zu jobs, "
             "%zu agents down, %zu held, %zu floor breaches, %zu probes%s",
          c->periods, limit, r->worst_w, r->measured_w, r->gpus, r->jobs, r->agents_down, r->held,
          r->floor_breaches, r->probes, r->feasible ? "" : ", INFEASIBLE");
    return 0;
}
