/* status.c — what the controller's API shows of its state after the last
 * period: GET /v1/status (JSON) and GET /metrics (Prometheus text). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/ctl_int.h"
#include "pflex/net/prom.h"

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
    json_object_set_new(o, "telemetry_ok", json_boolean(c->prom ? c->prom_ok : c->last_agents_down < c->c.nagents));
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
    json_object_set_new(o, "worst_w", c->periods ? num(c->plan.worst_w) : json_null());
    json_object_set_new(o, "feasible", json_boolean(!c->periods || c->plan.feasible));
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
    ONE("pflex_controller_worst_case_watts", "gauge",
        "The plan's worst-case site power, unreachable GPUs at their maximum (W).",
        c->periods ? c->plan.worst_w : NAN);
    ONE("pflex_controller_feasible", "gauge", "1 when the plan's worst case meets the target.",
        !c->periods || c->plan.feasible ? 1 : 0);
    ONE("pflex_controller_telemetry_up", "gauge", "1 when last period's telemetry was read.",
        c->prom ? c->prom_ok : c->last_agents_down < c->c.nagents);
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
    char *text = pflex_prom_take(p, len);
    pflex_prom_destroy(p);
    return text;
}
