/* status.c — what the controller's API shows of its state after the last
 * period: GET /v1/status (JSON), GET /metrics (Prometheus text), and the
 * probes /healthz and /readyz.
 *
 * Claims follow facts: the worst case, feasibility and a period's
 * completion shown are what the agents confirmed of the caps (their
 * answers' enforced limits), not what was planned; a GPU whose limit no
 * agent confirmed counts at its largest, and a node never reached at a
 * default that is marked as assumed (and makes the site infeasible under
 * a target: its GPUs are unknown). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/ctl_int.h"
#include "lib/util/clock.h"
#include "lib/util/grow.h"
#include "pflex/net/prom.h"

static const char *const push_names[CTL_PUSH_N] = {"none", "ok", "unauthorized", "rejected", "fenced", "failed",
                                                   "unanswered", "unconfirmed"};

/* One cap's outcome, by its push's answer. */
static int push_result_of(const struct ctl_cap *cp, int in_process)
{
    if (cp->pushed)
        return in_process || isfinite(cp->enforced_w) ? CTL_PUSH_OK : CTL_PUSH_UNCONFIRMED;
    long s = cp->push_status;
    if (s == 401 || s == 403)
        return CTL_PUSH_UNAUTHORIZED;
    if (s == 409)
        return CTL_PUSH_FENCED;
    if (s >= 400 && s < 500)
        return CTL_PUSH_REJECTED;
    if (s == 200)
        return CTL_PUSH_UNCONFIRMED;        /* an answer without the limits set */
    return s > 0 ? CTL_PUSH_FAILED : CTL_PUSH_UNANSWERED;
}

/* Node a's confirmed limits sized to its status, all unconfirmed. */
static int conf_reset(struct ctl_agent *ag)
{
    size_t n = ag->seen ? ag->st.ngpus : 0;
    if (pflex_grow((void **)&ag->conf_w, &ag->cap_conf, n + 1, sizeof *ag->conf_w) < 0) {
        ag->nconf = 0;
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        ag->conf_w[k] = NAN;
    ag->nconf = n;
    return 0;
}

void ctl_claims_take(ctl_t *c, int standby)
{
    struct ctl_period_state *p = &c->p;
    struct ctl_claims *cl = &c->claims;
    pthread_mutex_lock(&c->smu);
    int was_feasible = !cl->taken || cl->feasible;
    size_t was_failed = cl->push_failed;
    for (size_t a = 0; a < c->c.nagents; a++)
        (void)conf_reset(&c->agents[a]);    /* out of memory: nothing confirmed */
    cl->push_failed = 0;
    /* a period with no caps to push (every node down) has pushed them all:
     * the loop is alive, and readiness says the nodes are not */
    int all = 1;
    for (size_t q0 = 0, q1; q0 < p->ncaps; q0 = q1) {
        size_t a = p->caps[q0].node;
        struct ctl_agent *ag = &c->agents[a];
        int res = CTL_PUSH_OK;
        long http = 0;
        for (q1 = q0; q1 < p->ncaps && p->caps[q1].node == a; q1++) {
            const struct ctl_cap *cp = &p->caps[q1];
            /* the agent's word, else (in process) the caller's to apply */
            double w = isfinite(cp->enforced_w) ? cp->enforced_w
                     : c->c.in_process && cp->pushed ? cp->cap_w : NAN;
            size_t slot = p->gpu_slot[cp->site];
            if (slot < ag->nconf)
                ag->conf_w[slot] = w;
            int r = push_result_of(cp, c->c.in_process);
            all = all && r == CTL_PUSH_OK;
            if (res == CTL_PUSH_OK && r != CTL_PUSH_OK) {
                res = r;
                http = cp->push_status;
            } else if (res == CTL_PUSH_OK)
                http = cp->push_status;
        }
        if (standby || !p->caps[q0].send)
            continue;       /* nothing sent: the last push's outcome stands */
        ag->push_result = res;
        ag->push_http = http;
        if (res != CTL_PUSH_OK) {
            ag->push_fail[res]++;
            cl->push_failed++;
        }
    }
    double worst = c->c.other_w + p->never_w;
    cl->unconfirmed = 0;
    for (size_t k = 0; k < p->ngpus; k++) {
        const struct ctl_agent *ag = &c->agents[p->gpu_node[k]];
        size_t slot = p->gpu_slot[k];
        double n = p->gpus[k].count ? p->gpus[k].count : 1;
        double w = slot < ag->nconf ? ag->conf_w[slot] : NAN;
        if (!isfinite(w)) {
            w = p->gpus[k].max_cap_w;
            cl->unconfirmed += (size_t)n;
        }
        worst += n * w;
    }
    cl->taken = 1;
    cl->standby = standby;
    cl->worst_w = worst;
    cl->limit_w = p->limit_w;
    cl->assumed = p->never_n;
    int limited = isfinite(p->limit_w);
    cl->feasible = standby ? c->plan.feasible : !limited || (worst <= p->limit_w + 0.5 && !p->never_n);
    cl->completed = standby || all;
    if (cl->completed)
        cl->completed_mono = pflex_mono_s();
    int feasible = cl->feasible;
    size_t failed = cl->push_failed, unconf = cl->unconfirmed, assumed = cl->assumed;
    double limit = p->limit_w, now = p->now;
    pthread_mutex_unlock(&c->smu);
    /* said when it changes, not every period (and to the audit) */
    char msg[300];
    msg[0] = '\0';
    if (was_feasible && !feasible)
        snprintf(msg, sizeof msg, "infeasible: the agents confirmed a worst case of %.0f W against %.0f W "
                 "(%zu GPUs unconfirmed at their largest limit, %zu nodes never reached at --agent-max-w)",
                 worst, limit, unconf, assumed);
    else if (!was_feasible && feasible)
        snprintf(msg, sizeof msg, "feasible again: the agents confirmed a worst case of %.0f W against %.0f W",
                 worst, limit);
    if (msg[0]) {
        ctl_log(c, "claims: %s", msg);
        ctl_note(c, now, "claims", msg);
    }
    if (failed && !was_failed)
        ctl_log(c, "claims: pushes to %zu agents refused or unanswered (their caps unconfirmed)", failed);
    else if (!failed && was_failed)
        ctl_log(c, "claims: every push confirmed again");
}

int ctl_period_confirmed(const ctl_t *c)
{
    pthread_mutex_lock((pthread_mutex_t *)&c->smu);
    int done = c->claims.taken && c->claims.completed;
    pthread_mutex_unlock((pthread_mutex_t *)&c->smu);
    return done;
}

int ctl_health(const ctl_t *c, int ready, char *why, size_t len)
{
    pthread_mutex_lock((pthread_mutex_t *)&c->smu);
    const struct ctl_claims *cl = &c->claims;
    double age = pflex_mono_s() - cl->completed_mono, bound = 3 * c->c.period_s;
    int rc = -1;
    if (age > bound)
        snprintf(why, len, "no period completed (its caps pushed and confirmed) in the last %.1f s, over 3 "
                 "periods", age);
    else if (ready && cl->push_failed) {
        size_t a = 0;
        while (a + 1 < c->c.nagents && (c->agents[a].push_result == CTL_PUSH_OK
                                        || c->agents[a].push_result == CTL_PUSH_NONE))
            a++;
        const struct ctl_agent *ag = &c->agents[a];
        snprintf(why, len, "pushes to %zu agents refused or unanswered (%s: %s, HTTP %ld)", cl->push_failed,
                 ag->client ? agent_client_url(ag->client) : "node", push_names[ag->push_result], ag->push_http);
    } else if (ready && cl->assumed)
        snprintf(why, len, "%zu nodes never reached: counted at --agent-max-w, their GPUs unknown", cl->assumed);
    else if (ready && c->prom && !c->prom_ok)
        snprintf(why, len, "telemetry %s: %s", c->prom_stale ? "stale" : "down", c->prom_why);
    else if (ready && !c->prom && c->periods && c->last_agents_down == c->c.nagents)
        snprintf(why, len, "telemetry down: no agent answers");
    else
        rc = 0;
    pthread_mutex_unlock((pthread_mutex_t *)&c->smu);
    return rc;
}

static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* A job's throughput last period: the sum over the agents that report it. */
static double job_throughput(const ctl_t *c, const char *name)
{
    double t = 0;
    int any = 0;
    for (size_t a = 0; a < c->c.nagents; a++) {
        const struct ctl_agent *ag = &c->agents[a];
        if (!ag->up || !ag->tele)
            continue;
        for (size_t m = 0; m < ag->st.njobs; m++)
            if (!strcmp(ag->st.job[m].name, name) && isfinite(ag->st.job[m].throughput)) {
                t += ag->st.job[m].throughput;
                any = 1;
            }
    }
    return any ? t : NAN;
}

static size_t job_gpus(const ctl_t *c, size_t j)
{
    size_t n = 0;
    for (size_t k = 0; k < c->plan.ngpus; k++)
        if (c->p.gpus[k].job == (int)j)
            n++;
    return n;
}

static double job_floor(const ctl_t *c, const char *name)
{
    const struct pflex_job_policy *pol = pflex_job_policy_find(c->c.policies, name);
    return pol && isfinite(pol->floor) ? pol->floor : c->c.floor;
}

/* Each node as its agent confirmed it: reached, its last push's outcome,
 * its GPUs' confirmed limits (null: not), or the default it is counted at
 * (never reached: assumed), and its push failures by outcome. */
static json_t *nodes_json(const ctl_t *c)
{
    json_t *arr = json_array();
    for (size_t a = 0; a < c->c.nagents; a++) {
        const struct ctl_agent *ag = &c->agents[a];
        char buf[32];
        json_t *lim = json_array(), *fails = json_object();
        double sum = 0;
        size_t nconf = 0;
        for (size_t k = 0; k < ag->nconf; k++) {
            json_array_append_new(lim, num(ag->conf_w[k]));
            if (isfinite(ag->conf_w[k])) {
                sum += ag->conf_w[k];
                nconf++;
            }
        }
        for (int r = CTL_PUSH_UNAUTHORIZED; r < CTL_PUSH_N; r++)
            if (ag->push_fail[r])
                json_object_set_new(fails, push_names[r], json_integer((json_int_t)ag->push_fail[r]));
        json_t *n = json_object();
        json_object_set_new(n, "agent", json_string(ag->client ? agent_client_url(ag->client)
                                                    : ctl_node_name(c, a, buf, sizeof buf)));
        json_object_set_new(n, "host", ag->st.host[0] ? json_string(ag->st.host) : json_null());
        json_object_set_new(n, "up", json_boolean(ag->up));
        /* never reached: what it is counted at, and whether that is a default */
        int never = c->periods && !ag->seen && isfinite(ag->never_w);
        json_object_set_new(n, "unreached_w", never ? json_real(ag->never_w) : json_null());
        json_object_set_new(n, "assumed", json_boolean(never && ag->never_assumed));
        json_object_set_new(n, "push", json_string(push_names[ag->push_result]));
        json_object_set_new(n, "push_http", ag->push_http > 0 ? json_integer(ag->push_http) : json_null());
        json_object_set_new(n, "push_failures", fails);
        json_object_set_new(n, "confirmed_gpus", json_integer((json_int_t)nconf));
        json_object_set_new(n, "confirmed_w", nconf ? json_real(sum) : json_null());
        json_object_set_new(n, "limits_w", lim);
        json_array_append_new(arr, n);
    }
    return arr;
}

static json_t *status_json(const ctl_t *c, double now)
{
    json_t *o = json_object(), *jobs = json_array();
    json_t *all = json_array();
    pthread_mutex_lock((pthread_mutex_t *)&c->tmu);
    const struct pflex_target *t0 = pflex_target_set_winner(&c->targets, now);
    struct pflex_target tw;
    if (t0)
        tw = *t0;
    /* every target not yet ended, in the order they came (latest last) */
    for (size_t i = 0; i < c->targets.n; i++) {
        const struct pflex_target *x = &c->targets.t[i];
        if (x->end_s <= now)
            continue;
        json_array_append_new(all, json_pack("{s:s, s:s, s:f, s:s, s:f, s:o, s:f, s:i}", "source", x->source,
                                             "id", x->id, "value", x->value,
                                             "unit", x->unit == PFLEX_TARGET_WATTS ? "W" : "fraction",
                                             "start", x->start_s, "end", num(x->end_s), "ramp_s", x->ramp_s,
                                             "priority", x->priority));
    }
    pthread_mutex_unlock((pthread_mutex_t *)&c->tmu);
    const struct pflex_target *t = t0 ? &tw : NULL;
    json_object_set_new(o, "time", json_real(now));
    json_object_set_new(o, "periods", json_integer((json_int_t)c->periods));
    json_object_set_new(o, "telemetry", json_string(c->prom ? "prometheus" : "agents"));
    int tele_ok = c->prom ? c->prom_ok : c->last_agents_down < c->c.nagents;
    json_object_set_new(o, "telemetry_ok", json_boolean(tele_ok));
    json_object_set_new(o, "telemetry_state", json_string(!c->periods || tele_ok ? "ok"
                                                          : c->prom && c->prom_stale ? "stale" : "down"));
    json_object_set_new(o, "telemetry_reason", !c->periods || tele_ok ? json_null()
                                               : json_string(c->prom ? c->prom_why : "no agent answers"));
    json_object_set_new(o, "floor_w", num(c->last_floor_w));
    if (t) {
        json_t *tj = json_object();
        json_object_set_new(tj, "value", json_real(t->value));
        json_object_set_new(tj, "unit", json_string(t->unit == PFLEX_TARGET_WATTS ? "W" : "fraction"));
        json_object_set_new(tj, "start", json_real(t->start_s));
        json_object_set_new(tj, "end", num(t->end_s));
        json_object_set_new(tj, "ramp_s", json_real(t->ramp_s));
        json_object_set_new(tj, "priority", json_integer(t->priority));
        json_object_set_new(tj, "source", json_string(t->source));
        json_object_set_new(tj, "id", json_string(t->id));
        json_object_set_new(o, "target", tj);
    } else {
        json_object_set_new(o, "target", json_null());
    }
    json_object_set_new(o, "targets", all);
    double limit = c->last_limit_w, meas = c->last_measured_w;
    json_object_set_new(o, "limit_w", num(limit));
    json_object_set_new(o, "site_power_w", num(meas));
    json_object_set_new(o, "headroom_w", num(limit - meas));
    const struct ctl_claims *cl = &c->claims;
    json_object_set_new(o, "worst_w", cl->taken && !cl->standby ? num(cl->worst_w) : json_null());
    json_object_set_new(o, "planned_worst_w", c->periods ? num(c->plan.worst_w) : json_null());
    json_object_set_new(o, "feasible", json_boolean(!cl->taken || cl->feasible));
    json_object_set_new(o, "planned_feasible", json_boolean(!c->periods || c->plan.feasible));
    json_object_set_new(o, "unconfirmed_gpus", json_integer((json_int_t)cl->unconfirmed));
    json_object_set_new(o, "assumed_nodes", json_integer((json_int_t)cl->assumed));
    json_object_set_new(o, "assumed_w", json_real((double)cl->assumed * c->c.agent_max_w));
    json_object_set_new(o, "push_failed", json_integer((json_int_t)cl->push_failed));
    json_object_set_new(o, "completed", json_boolean(cl->taken && cl->completed));
    json_object_set_new(o, "completed_age_s", json_real(pflex_mono_s() - cl->completed_mono));
    json_object_set_new(o, "time_to_target", ctl_ttt_json(c));
    json_object_set_new(o, "meter", ctl_meter_json(c));
    json_object_set_new(o, "nodes", nodes_json(c));
    json_object_set_new(o, "agents", json_integer((json_int_t)c->c.nagents));
    json_object_set_new(o, "agents_down", json_integer((json_int_t)c->last_agents_down));
    json_object_set_new(o, "held", json_integer((json_int_t)c->plan.held));
    json_object_set_new(o, "floor_breaches", json_integer((json_int_t)c->plan.floor_breaches));
    for (size_t j = 0; j < c->njobs && j < c->plan.njobs; j++) {
        const struct ctl_job *cj = &c->jobs[j];
        json_t *jj = json_object();
        json_object_set_new(jj, "job", json_string(cj->name));
        json_object_set_new(jj, "gpus", json_integer((json_int_t)job_gpus(c, j)));
        json_object_set_new(jj, "cap_w", num(c->plan.job_cap_w[j]));
        json_object_set_new(jj, "throughput", num(job_throughput(c, cj->name)));
        json_object_set_new(jj, "baseline_throughput", cj->curve.has_baseline ? num(cj->curve.t0) : json_null());
        json_object_set_new(jj, "planned_loss", num(c->plan.job_loss[j]));
        json_object_set_new(jj, "floor", json_real(job_floor(c, cj->name)));
        json_object_set_new(jj, "floor_breached", json_boolean(c->plan.floor_breached[j]));
        json_object_set_new(jj, "observations", json_integer((json_int_t)pflex_learn_count(cj->learn)));
        json_array_append_new(jobs, jj);
    }
    json_object_set_new(o, "jobs", jobs);
    return o;
}

/* The API's thread reads what the period writes under smu. */
json_t *ctl_status_json(const ctl_t *c, double now)
{
    pthread_mutex_lock((pthread_mutex_t *)&c->smu);
    json_t *o = status_json(c, now);
    pthread_mutex_unlock((pthread_mutex_t *)&c->smu);
    return o;
}

static char *metrics(const ctl_t *c, double now, size_t *len);

char *ctl_metrics(const ctl_t *c, double now, size_t *len)
{
    pthread_mutex_lock((pthread_mutex_t *)&c->smu);
    char *text = metrics(c, now, len);
    pthread_mutex_unlock((pthread_mutex_t *)&c->smu);
    return text;
}

static char *metrics(const ctl_t *c, double now, size_t *len)
{
    pflex_prom_t *p = pflex_prom_create();
    if (!p)
        return NULL;
    double limit = c->last_limit_w, meas = c->last_measured_w;
    (void)now;
#define ONE(name, type, help, v) do { \
        pflex_prom_family(p, name, type, help); \
        pflex_prom_sample(p, name, NULL, (v)); \
    } while (0)
    ONE("pflex_controller_target_watts", "gauge",
        "The site power limit in force over the last period (W); absent without a target.", limit);
    ONE("pflex_controller_site_power_watts", "gauge",
        "Site power measured last period: reachable GPUs plus --other-w (W).", meas);
    ONE("pflex_controller_headroom_watts", "gauge", "Target minus measured site power (W).", limit - meas);
    const struct ctl_claims *cl = &c->claims;
    ONE("pflex_controller_worst_case_watts", "gauge",
        "Worst-case site power by the agents' word: each GPU at the limit its agent confirmed, the others "
        "at their maximum, nodes never reached at --agent-max-w (W).",
        cl->taken && !cl->standby ? cl->worst_w : NAN);
    ONE("pflex_controller_planned_worst_case_watts", "gauge",
        "The plan's worst-case site power, unreachable GPUs at their maximum (W).",
        c->periods ? c->plan.worst_w : NAN);
    ONE("pflex_controller_feasible", "gauge",
        "1 when the confirmed worst case meets the target and no node is assumed.",
        !cl->taken || cl->feasible ? 1 : 0);
    ONE("pflex_controller_unconfirmed_gpus", "gauge", "GPUs whose limit no agent confirmed last period.",
        (double)cl->unconfirmed);
    ONE("pflex_controller_assumed_nodes", "gauge", "Nodes never reached, counted at --agent-max-w.",
        (double)cl->assumed);
    ONE("pflex_controller_assumed_watts", "gauge",
        "The part of the worst case that is a default (nodes never reached), not a fact (W).",
        (double)cl->assumed * c->c.agent_max_w);
    ONE("pflex_controller_period_completed_age_seconds", "gauge",
        "Seconds since a period's caps were last all pushed and confirmed.",
        pflex_mono_s() - cl->completed_mono);
    ONE("pflex_controller_telemetry_up", "gauge", "1 when last period's telemetry was read and judged fresh.",
        c->prom ? c->prom_ok : c->last_agents_down < c->c.nagents);
    ONE("pflex_controller_telemetry_stale", "gauge", "1 when Prometheus's samples were too old to use.",
        c->prom && !c->prom_ok && c->prom_stale ? 1 : 0);
    ONE("pflex_controller_agents_down", "gauge", "Agents not reached last period.",
        (double)c->last_agents_down);
    ONE("pflex_controller_gpus_held", "gauge", "GPUs whose cap was held (no rise) last period.",
        (double)c->plan.held);
    ONE("pflex_controller_periods_total", "counter", "Control periods run.", (double)c->periods);
    struct ctl_audit_counts ac;
    ctl_audit_counts(c, &ac);
    ONE("pflex_controller_audit_degraded", "gauge",
        "1 when last period's audit record was not written or queued (the caps still went out).",
        ac.degraded);
    ONE("pflex_controller_audit_dropped_total", "counter",
        "Periods' audit records dropped: the writer's queue full, a write blocked.", (double)ac.dropped);
    ONE("pflex_controller_audit_failed_total", "counter", "Periods' audit records whose write failed.",
        (double)ac.failed);
#undef ONE
    static const struct { const char *name, *help; } fam[] = {
        {"pflex_controller_job_cap_watts", "The job's planned per-GPU cap (W)."},
        {"pflex_controller_job_throughput", "The job's throughput last period, summed over agents."},
        {"pflex_controller_job_gpus", "GPUs the job map gives the job."},
        {"pflex_controller_job_floor_ratio", "The job's service floor, a fraction of its baseline."},
        {"pflex_controller_job_floor_breached", "1 when the plan cut the job past its floor."},
        {"pflex_controller_job_observations", "Observations the job's learned curve rests on."},
    };
    for (size_t f = 0; f < sizeof fam / sizeof *fam; f++) {
        pflex_prom_family(p, fam[f].name, "gauge", fam[f].help);
        for (size_t j = 0; j < c->njobs && j < c->plan.njobs; j++) {
            const char *name = c->jobs[j].name;
            double v = f == 0 ? c->plan.job_cap_w[j] : f == 1 ? job_throughput(c, name)
                     : f == 2 ? (double)job_gpus(c, j) : f == 3 ? job_floor(c, name)
                     : f == 4 ? c->plan.floor_breached[j] : (double)pflex_learn_count(c->jobs[j].learn);
            pflex_prom_sample(p, fam[f].name, (const char *const[]){"job", name, NULL}, v);
        }
    }
    /* refused or unanswered pushes, by agent and outcome (none yet: none) */
    pflex_prom_family(p, "pflex_controller_push_failures_total", "counter",
                      "Pushes of caps an agent refused or did not answer, by outcome.");
    for (size_t a = 0; a < c->c.nagents; a++) {
        const struct ctl_agent *ag = &c->agents[a];
        char buf[32];
        const char *name = ag->client ? agent_client_url(ag->client) : ctl_node_name(c, a, buf, sizeof buf);
        for (int r = CTL_PUSH_UNAUTHORIZED; r < CTL_PUSH_N; r++)
            if (ag->push_fail[r])
                pflex_prom_sample(p, "pflex_controller_push_failures_total",
                                  (const char *const[]){"agent", name, "reason", push_names[r], NULL},
                                  (double)ag->push_fail[r]);
    }
    ctl_ttt_metrics(c, p);
    ctl_meter_metrics(c, p);
    char *text = pflex_prom_take(p, len);
    pflex_prom_destroy(p);
    return text;
}
