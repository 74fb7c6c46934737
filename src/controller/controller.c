/* controller.c — the controller's life (controller.h) and its period as
 * the sequence of period.h's steps: steps.c decides (map, targets, learn,
 * plan), site_io.c talks to the site (agents, Prometheus, the VTN),
 * record.c writes the audit.
 *
 * Read every agent (an agent that does not answer keeps its last known
 * GPUs, counted at their maximum limits; one never reached counts at
 * agent_max_w), feed each settled job's (cap, power, throughput) to its
 * learner, plan with pflex_safe_plan on the learned curves against the
 * smallest target limit over this period and the next, probe a little
 * deeper where the floor allows, push the caps with leases, and write the
 * period down. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "controller/ctl_int.h"
#include "controller/sched.h"
#include "lib/util/clock.h"

static void log_v(FILE *f, const char *fmt, va_list ap)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ ", ts.tv_nsec / 1000000);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    n = m < 0 ? n : n + (size_t)m < sizeof line - 1 ? n + (size_t)m : sizeof line - 2;
    line[n++] = '\n';
    line[n] = '\0';
    /* one line whole, whichever thread writes it */
    flockfile(f);
    fputs(line, f);
    fflush(f);
    funlockfile(f);
}

void ctl_log_to(FILE *f, const char *fmt, ...)
{
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_v(f, fmt, ap);
    va_end(ap);
}

void ctl_log(const ctl_t *c, const char *fmt, ...)
{
    if (!c->c.log)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_v(c->c.log, fmt, ap);
    va_end(ap);
}

const char *ctl_node_name(const ctl_t *c, size_t node, char *buf, size_t len)
{
    const struct ctl_agent *ag = &c->agents[node];
    if (ag->st.host[0])
        return ag->st.host;
    if (ag->client)
        return agent_client_url(ag->client);
    snprintf(buf, len, "node-%zu", node);
    return buf;
}

int ctl_create(const struct ctl_config *cfg, ctl_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!cfg->nagents)
        return pflex_error_set(err, "controller: no agents");
    if (cfg->in_process && cfg->prometheus_url)
        return pflex_error_set(err, "controller: in process, telemetry comes from the caller, not Prometheus");
    if (!cfg->in_process && !cfg->agent_urls)
        return pflex_error_set(err, "controller: no agents' URLs");
    if (cfg->meter_query && (!cfg->meter_url || cfg->in_process))
        return pflex_error_set(err, "controller: --meter needs a Prometheus URL, and a site not in process");
    ctl_t *c = calloc(1, sizeof *c);
    if (!c)
        return pflex_error_set(err, "out of memory");
    c->c = *cfg;
    if (!(c->c.period_s > 0))
        c->c.period_s = 5;
    if (!(c->c.lease_s > 0))
        c->c.lease_s = ctl_lease_default_s(c->c.period_s);
    if (!(c->c.agent_max_w > 0))
        c->c.agent_max_w = 8000;
    if (!(c->c.z > 0))
        c->c.z = 2;
    c->settle_s = c->c.settle_s > c->c.period_s ? c->c.settle_s : c->c.period_s;
    c->cap_step_w = c->c.cap_step_w > 0 ? c->c.cap_step_w : 1;
    if (c->c.vtn_every <= 0)
        c->c.vtn_every = 1;
    if (c->c.status_every <= 0)
        c->c.status_every = 10;
    c->last_limit_w = INFINITY;
    c->last_measured_w = NAN;
    c->last_floor_w = c->last_max_w = NAN;
    c->claims.completed_mono = pflex_mono_s();     /* /healthz counts from here */
    pthread_mutex_init(&c->smu, NULL);
    pthread_mutex_init(&c->tmu, NULL);
    pthread_mutex_init(&c->tdb_mu, NULL);
    pthread_mutex_init(&c->sub.mu, NULL);
    pthread_mutex_init(&c->io.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);    /* its waits are on pflex_mono_s */
    pthread_cond_init(&c->io.cv, &ca);
    pthread_mutex_init(&c->meter.mu, NULL);
    pthread_cond_init(&c->meter.cv, &ca);
    pthread_condattr_destroy(&ca);
    c->fb_frac = c->fb_until = c->fb_limit_w = NAN;
    c->done_mono = NAN;
    c->ttt.prev_limit_w = NAN;
    c->meter.value = c->meter.stamp_s = c->meter.read_mono = NAN;
    c->meter.site_w = c->meter.rest_w = c->meter.rest_raw_w = c->meter.age_s = NAN;
    c->meter.other_w = cfg->other_w;
    pflex_target_set_init(&c->targets);
    pflex_target_profile_init(&c->tprof);
    pflex_safe_plan_init(&c->plan);
    pflex_safe_plan_init(&c->coming);
    c->agents = calloc(cfg->nagents, sizeof *c->agents);
    if (!c->agents) {
        ctl_destroy(c);
        return pflex_error_set(err, "out of memory");
    }
    if ((!c->c.in_process && ctl_io_create(c, err) < 0)
        || (cfg->db_path && pflex_audit_open(cfg->db_path, &c->audit, err) < 0)) {
        ctl_destroy(c);
        return -1;
    }
    /* target changes on a connection of their own (from the API's and the
     * VTN's threads; SQLite serialises the writers); one database in
     * memory is one connection's */
    if (cfg->db_path && strcmp(cfg->db_path, ":memory:") && cfg->db_path[0]) {
        if (pflex_audit_open(cfg->db_path, &c->tdb, err) < 0) {
            ctl_destroy(c);
            return -1;
        }
    } else
        c->tdb = c->audit;
    *out = c;
    return 0;
}

int ctl_start(ctl_t *c, pflex_error_t *err)
{
    if (c->c.in_process)
        return pflex_error_set(err, "controller: in process, the caller is the site's IO");
    if (c->started)
        return 0;
    /* the writer first: the IO threads' notes go through it */
    if (ctl_writer_start(c, err) < 0 || ctl_io_start(c, err) < 0 || ctl_meter_start(c, err) < 0) {
        ctl_io_stop(c);
        c->started = 0;
        return -1;
    }
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
        ctl_log(c, "resume: target left out: %s", e2.text);
    return 0;
}

int ctl_resume(ctl_t *c, double now, size_t *ntargets, pflex_error_t *err)
{
    size_t before = c->targets.n;
    /* the set as it was: the live targets and those ended less than a day
     * ago (the set keeps them that long, for the ramps that follow them),
     * in their order, and the order goes on after every one recorded */
    if (c->audit) {
        long long next = pflex_audit_targets_next_seq(c->audit, err);
        if (next < 0)
            return -1;
        if ((uint64_t)next > c->targets.next_seq)
            c->targets.next_seq = (uint64_t)next;
        if (pflex_audit_load_targets(c->audit, now - 86400, resume_target, c, err) < 0)
            return -1;
    }
    /* what was loaded is in the audit already */
    c->recorded_seq = c->targets.next_seq;
    if (ntargets)
        *ntargets = c->targets.n - before;
    return 0;
}

void ctl_destroy(ctl_t *c)
{
    if (!c)
        return;
    ctl_meter_stop(c);
    ctl_io_stop(c);
    ctl_io_destroy(c);
    ctl_writer_stop(c);
    for (size_t a = 0; c->agents && a < c->c.nagents; a++) {
        free(c->agents[a].held);
        free(c->agents[a].conf_w);
    }
    free(c->agents);
    for (size_t j = 0; j < c->njobs; j++) {
        pflex_learn_destroy(c->jobs[j].learn);
        pflex_learn_curve_fini(&c->jobs[j].curve);
        free(c->jobs[j].hi);
    }
    free(c->jobs);
    pflex_strtab_fini(&c->job_names);
    pflex_target_set_fini(&c->targets);
    pflex_target_profile_fini(&c->tprof);
    if (c->tdb != c->audit)
        pflex_audit_close(c->tdb);
    pflex_audit_close(c->audit);
    pthread_mutex_destroy(&c->smu);
    pthread_mutex_destroy(&c->tmu);
    pthread_mutex_destroy(&c->tdb_mu);
    pthread_mutex_destroy(&c->sub.mu);
    free(c->sub.seen);
    pthread_mutex_destroy(&c->io.mu);
    pthread_cond_destroy(&c->io.cv);
    pthread_mutex_destroy(&c->meter.mu);
    pthread_cond_destroy(&c->meter.cv);
    pflex_oadr_events_fini(&c->evs);
    pflex_safe_plan_fini(&c->plan);
    pflex_safe_plan_fini(&c->coming);
    free(c->p.gpus);
    free(c->p.gpu_node);
    free(c->p.gpu_slot);
    free(c->p.gpu_next);
    free(c->p.sjobs);
    free(c->p.caps);
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

const struct ctl_period_state *ctl_period_state(const ctl_t *c)
{
    return &c->p;
}

const struct ctl_cap *ctl_caps(const ctl_t *c, size_t *n)
{
    *n = c->p.ncaps;
    return c->p.caps;
}

double ctl_lease_default_s(double period_s)
{
    return 12 * period_s;
}

double ctl_lease_s(const ctl_t *c)
{
    return c->c.lease_s;
}

int ctl_node_feed(ctl_t *c, size_t node, const struct agent_status *st, int fresh, pflex_error_t *err)
{
    if (!c->c.in_process)
        return pflex_error_set(err, "controller: its nodes are read from their agents, not fed");
    if (node >= c->c.nagents)
        return pflex_error_set(err, "controller: node %zu of %zu", node, c->c.nagents);
    if (st->ngpus > AGENT_MAX_GPUS || st->njobs > AGENT_MAX_JOBS)
        return pflex_error_set(err, "controller: node %zu: more than %d GPUs or jobs", node, AGENT_MAX_GPUS);
    for (size_t m = 0; m < st->njobs; m++)
        if (st->job[m].ngpus < 0 || st->job[m].ngpus > AGENT_MAX_GPUS)
            return pflex_error_set(err, "controller: node %zu: job %zu has %d GPUs", node, m, st->job[m].ngpus);
    struct ctl_agent *ag = &c->agents[node];
    agent_status_copy(&ag->st, st);
    ag->fed = 1;
    ag->fed_fresh = fresh != 0;
    return 0;
}

/* What the targets say, hashed (FNV-1a): a VTN's answer swaps in a new
 * set (a new gen) that may say just what the old one did. */
static uint64_t targets_sig(const pflex_target_set_t *s)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < s->n; i++) {
        const struct pflex_target *t = &s->t[i];
        double f[] = {t->start_s, t->end_s, t->value, t->ramp_s, (double)t->unit, (double)t->priority,
                      (double)t->seq};
        const unsigned char *b = (const unsigned char *)f;
        for (size_t k = 0; k < sizeof f; k++)
            h = (h ^ b[k]) * 1099511628211ull;
    }
    return h;
}

void ctl_period_begin(ctl_t *c, double now)
{
    struct ctl_period_state *p = &c->p;
    memset(&p->r, 0, sizeof p->r);
    p->now = now;
    p->t_start = pflex_mono_s();
    p->t_read = p->t_plan = p->t_push = p->t_start;
    if (c->periods && now > c->last_t)
        c->gap_hist[c->hist_n % 16] = now - c->last_t;
    c->periods++;
    p->seq = c->periods;
    p->ngpus = p->ncaps = 0;
    p->never_w = p->measured_w = p->sum_max_w = 0;
    p->never_n = 0;
    p->any_power = 0;
    p->horizon_s = p->other_w = p->baseline_w = 0;
    p->limit_w = INFINITY;
    p->period_id = 0;
    /* what the wait after this period watches (ctl_act_due) */
    pthread_mutex_lock(&c->tmu);
    c->act_gen = c->targets.gen;
    c->act_sig = targets_sig(&c->targets);
    c->act_next_s = INFINITY;
    for (size_t i = 0; i < c->targets.n; i++) {
        const struct pflex_target *t = &c->targets.t[i];
        if (t->start_s > now && t->start_s < c->act_next_s)
            c->act_next_s = t->start_s;
        if (t->end_s > now && t->end_s < c->act_next_s)
            c->act_next_s = t->end_s;
    }
    pthread_mutex_unlock(&c->tmu);
}

int ctl_act_due(ctl_t *c)
{
    pthread_mutex_lock(&c->tmu);
    int changed = 0;
    if (c->targets.gen != c->act_gen) {
        uint64_t sig = targets_sig(&c->targets);
        changed = sig != c->act_sig;
        c->act_gen = c->targets.gen;
        c->act_sig = sig;
    }
    pthread_mutex_unlock(&c->tmu);
    double now = c->clk_synced ? c->clk_wall0 + (pflex_mono_s() - c->clk_mono0) : pflex_real_s();
    return changed || now >= c->act_next_s;
}

void ctl_period_end(ctl_t *c, struct ctl_period_result *r)
{
    struct ctl_period_state *p = &c->p;
    double t_end = pflex_mono_s();
    p->r.push_s = t_end - p->t_push;
    c->run_hist[c->hist_n % 16] = t_end - p->t_start;
    if (c->periods == 1)
        c->gap_hist[0] = c->c.period_s;
    c->hist_n++;
    double measured = ctl_site_w(c);
    c->last_limit_w = p->limit_w;
    c->last_measured_w = measured;
    c->last_t = p->now;
    c->last_agents_down = p->r.agents_down;
    c->done_mono = t_end;
    /* the site's least and most power, for the check of new targets */
    double lo = p->other_w, hi = p->other_w;
    for (size_t k = 0; k < p->ngpus; k++) {
        lo += p->gpus[k].min_cap_w;
        hi += p->gpus[k].max_cap_w;
    }
    c->last_floor_w = p->ngpus ? lo : NAN;
    c->last_max_w = p->ngpus ? hi : NAN;
    ctl_ttt_period(c, measured);
    p->r.limit_w = p->limit_w;
    p->r.worst_w = c->plan.worst_w;
    p->r.measured_w = measured;
    p->r.feasible = c->plan.feasible;
    p->r.jobs = c->njobs;
    p->r.floor_breaches = c->plan.floor_breaches;
    p->r.held = c->plan.held;
    *r = p->r;
    ctl_log(c, "period %lu: limit %.0f W, worst case %.0f W, measured %.0f W, %zu GPUs, %zu jobs, "
               "%zu agents down, %zu held, %zu floor breaches, %zu probes, %zu nodes sent caps%s%s",
            c->periods, r->limit_w, r->worst_w, r->measured_w, r->gpus, r->jobs, r->agents_down, r->held,
            r->floor_breaches, r->probes, r->pushed_nodes, r->feasible ? "" : ", INFEASIBLE",
            r->audit_degraded ? ", audit degraded" : "");
}

/* The audit's trouble, logged when it starts, changes or ends (not every
 * period: the period's line says "audit degraded"). */
static void audit_degraded(ctl_t *c, int bad, const char *why)
{
    c->p.r.audit_degraded = bad;
    c->audit_degraded = bad;
    if (!bad && c->audit_said[0]) {
        ctl_log(c, "audit: writing again");
        c->audit_said[0] = '\0';
    } else if (bad && strcmp(c->audit_said, why)) {
        ctl_log(c, "audit degraded (the caps still go out): %s", why);
        snprintf(c->audit_said, sizeof c->audit_said, "%s", why);
    }
}

/* The state the API shows changes under smu only: from the read to the
 * plan, and at the end; the push (its wait) and the audit run without it.
 * A period whose caps went out completes, its audit degraded or not: a
 * disk that fills or blocks never stops the caps, nor the watchdog. */
int ctl_period(ctl_t *c, double now, struct ctl_period_result *r, pflex_error_t *err)
{
    pthread_mutex_lock(&c->smu);
    ctl_period_begin(c, now);
    ctl_poll_targets(c);
    if (ctl_read_site(c, err) < 0 || ctl_map_jobs(c, err) < 0)
        goto fail;
    ctl_take_targets(c);
    if (c->c.sched)
        ctl_sched_adjust(c->c.sched, c);
    if (ctl_learn(c, err) < 0 || ctl_plan(c, err) < 0)
        goto fail;
    pthread_mutex_unlock(&c->smu);
    if (c->c.sched)
        ctl_sched_act(c->c.sched, c);
    if (ctl_push_caps(c, err) < 0) {
        pthread_mutex_lock(&c->smu);
        goto fail;
    }
    pflex_error_t aerr;
    int audit_ok = ctl_record(c, &aerr) == 0;
    pthread_mutex_lock(&c->smu);
    audit_degraded(c, !audit_ok, audit_ok ? "" : aerr.text);
    ctl_period_end(c, r);
    pthread_mutex_unlock(&c->smu);
    ctl_report_vtn(c);
    return 0;
fail:
    *r = c->p.r;
    pthread_mutex_unlock(&c->smu);
    return -1;
}

double ctl_period_completed_mono(const ctl_t *c)
{
    return c->done_mono;
}

/* The limit in force at t for the targets' clock's check, in W. */
static double limit_at(ctl_t *c, double t)
{
    double base = c->p.baseline_w > 0 ? c->p.baseline_w : c->last_max_w;
    double top = isfinite(c->last_max_w) ? c->last_max_w : 1e12;
    return pflex_target_limit_w(&c->targets, t, isfinite(base) && base > 0 ? base : top, top);
}

/* The targets' clock synced with the wall clock: wall_s from now on. */
static double clock_follow(ctl_t *c, double wall_s, double mono_s, double skew)
{
    if (c->clk_held)
        ctl_log(c, "the targets' clock follows the wall clock again (%+.1f s)", skew);
    c->clk_synced = 1;
    c->clk_held = 0;
    c->clk_wall0 = wall_s;
    c->clk_mono0 = mono_s;
    c->clk_skew = 0;
    return wall_s;
}

double ctl_clock_now(ctl_t *c, double wall_s, double mono_s)
{
    if (!c->clk_synced)
        return clock_follow(c, wall_s, mono_s, 0);
    double t = c->clk_wall0 + (mono_s - c->clk_mono0);
    double skew = wall_s - t;
    /* the wall clock against the monotonic one since the last period */
    double step = skew - c->clk_skew;
    c->clk_skew = skew;
    if (fabs(step) > c->c.period_s) {
        char msg[128];
        snprintf(msg, sizeof msg, "the wall clock stepped by %+.0f s against the monotonic clock", step);
        ctl_log(c, "%s", msg);
        ctl_note(c, t, "clock", msg);
    }
    /* NTP's slewing and the two reads' own spacing: followed at once */
    if (fabs(skew) < 0.1)
        return clock_follow(c, wall_s, mono_s, skew);
    pthread_mutex_lock(&c->tmu);
    double lim_t = limit_at(c, t), lim_wall = limit_at(c, wall_s);
    pthread_mutex_unlock(&c->tmu);
    /* following the wall clock may tighten the limit, never loosen it: an
     * event in force lasts its remaining time on the monotonic clock */
    if (!(lim_wall > lim_t))
        return clock_follow(c, wall_s, mono_s, skew);
    if (!c->clk_held)
        ctl_log(c, "the targets' clock holds on the monotonic clock, %+.1f s from the wall clock: following "
                   "it would loosen the limit in force from %.0f W to %.0f W", skew, lim_t, lim_wall);
    c->clk_held = 1;
    return t;
}

int ctl_target_check(ctl_t *c, const struct pflex_target *t, double now, char *why, size_t len)
{
    (void)now;
    pthread_mutex_lock(&c->smu);
    double floor_w = c->last_floor_w, max_w = c->last_max_w, meas = c->last_measured_w;
    double base = c->p.baseline_w, period = c->c.period_s, rate = c->c.max_step_w_per_s;
    pthread_mutex_unlock(&c->smu);
    why[0] = '\0';
    if (t->confirm || !isfinite(max_w))
        return 0;
    double w = pflex_target_watts(t, base);
    if (!isfinite(w))
        return 0;
    if (w < floor_w) {
        snprintf(why, len, "%.0f W is under the site's floor of %.0f W (every GPU at its least limit plus "
                 "other power): it cannot be met; add confirm=yes to set it anyway", w, floor_w);
        return 1;
    }
    if (!(rate > 0))
        rate = 0.02 * max_w;
    /* from what the site draws now, or may draw (no reading: its maximum) */
    double level = isfinite(meas) ? meas : max_w;
    double span = t->ramp_s > period ? t->ramp_s : period;
    if (level - w > rate * span) {
        snprintf(why, len, "a step down of %.0f W (from %.0f W to %.0f W) in %g s is faster than %.0f W/s: "
                 "give it ramp=%.0fs or more, or add confirm=yes to set it anyway",
                 level - w, level, w, span, rate, ceil((level - w) / rate));
        return 1;
    }
    return 0;
}

static void audit_target_of(const struct pflex_target *t, double now, struct pflex_audit_target *at)
{
    *at = (struct pflex_audit_target){.t = now, .source = t->source, .name = t->id, .start_s = t->start_s,
                                      .end_s = t->end_s, .value = t->value,
                                      .fraction = t->unit == PFLEX_TARGET_FRACTION, .ramp_s = t->ramp_s,
                                      .priority = t->priority, .seq = t->seq};
}

int ctl_target_put(ctl_t *c, const struct pflex_target *t, double now, pflex_error_t *err)
{
    pthread_mutex_lock(&c->tdb_mu);
    /* its place in the order, first, so that the audit holds it as it
     * will be in force */
    struct pflex_target probe;
    pflex_target_set_t one;
    pflex_target_set_init(&one);
    int rc = pflex_target_set_add(&one, t, err);
    if (rc == 0) {
        probe = one.t[0];
        pthread_mutex_lock(&c->tmu);
        probe.seq = c->targets.next_seq;
        pthread_mutex_unlock(&c->tmu);
    }
    pflex_target_set_fini(&one);
    if (rc == 0 && c->tdb) {
        struct pflex_audit_target at;
        audit_target_of(&probe, now, &at);
        rc = pflex_audit_target(c->tdb, &at, err);
    }
    if (rc == 0) {
        pthread_mutex_lock(&c->tmu);
        /* no other writer since: the same seq */
        int recorded = c->tdb && c->recorded_seq == c->targets.next_seq;
        rc = pflex_target_set_add(&c->targets, &probe, err);
        if (rc == 0)
            ctl_ttt_arrived(c, probe.seq, now);
        if (rc == 0 && recorded)
            c->recorded_seq = c->targets.next_seq;
        pthread_mutex_unlock(&c->tmu);
    }
    pthread_mutex_unlock(&c->tdb_mu);
    return rc;
}

long ctl_target_withdraw(ctl_t *c, const char *source, double now, pflex_error_t *err)
{
    pthread_mutex_lock(&c->tdb_mu);
    if (c->tdb && pflex_audit_targets_sync(c->tdb, now, source, NULL, 0, err) < 0) {
        pthread_mutex_unlock(&c->tdb_mu);
        return -1;
    }
    pthread_mutex_lock(&c->tmu);
    size_t n = pflex_target_set_remove_source(&c->targets, source);
    pthread_mutex_unlock(&c->tmu);
    pthread_mutex_unlock(&c->tdb_mu);
    return (long)n;
}
