/* record.c — the period written down (period.h's ctl_record): the targets
 * not yet recorded, the period's figures, each job's observation, every
 * cap with its outcome and the reading it rests on, the curves now and
 * then, in one transaction of the audit database (pflex/audit.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "controller/ctl_int.h"

/* Record targets not yet in the audit: those added to the set itself
 * (ctl_targets) before it was started.  Every other change (ctl_target_put,
 * ctl_target_withdraw, the VTN's ctl_vtn_apply) is in the audit before it
 * takes effect. */
static void audit_targets(ctl_t *c, double now)
{
    pflex_error_t err;
    if (c->started)
        return;
    uint64_t top = c->recorded_seq;
    for (size_t i = 0; i < c->targets.n; i++) {
        const struct pflex_target *t = &c->targets.t[i];
        if (t->seq < c->recorded_seq)
            continue;
        struct pflex_audit_target at = {.t = now, .source = t->source, .name = t->id,
                                        .start_s = t->start_s, .end_s = t->end_s, .value = t->value,
                                        .fraction = t->unit == PFLEX_TARGET_FRACTION,
                                        .ramp_s = t->ramp_s, .priority = t->priority, .seq = t->seq};
        if (pflex_audit_target(c->audit, &at, &err) < 0)
            ctl_log(c, "audit: %s", err.text);
        if (t->seq + 1 > top)
            top = t->seq + 1;
    }
    c->recorded_seq = top;
}

/* The period's row (its id in p.period_id). */
static int audit_period(ctl_t *c, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    struct pflex_audit_period ap = {.t = p->now, .limit_w = p->limit_w, .worst_w = c->plan.worst_w,
                                    .least_w = c->plan.least_w,
                                    .site_power_w = p->any_power ? p->measured_w + c->c.other_w : NAN,
                                    .throughput = c->plan.throughput, .feasible = c->plan.feasible,
                                    .floor_breaches = (long)c->plan.floor_breaches,
                                    .held = (long)c->plan.held};
    return pflex_audit_period(c->audit, &ap, &p->period_id, err);
}

/* Every cap with its outcome, and the reading of its GPU. */
static void audit_caps(ctl_t *c)
{
    const struct ctl_period_state *p = &c->p;
    for (size_t q = 0; q < p->ncaps; q++) {
        const struct ctl_cap *cp = &p->caps[q];
        size_t k = cp->site;
        const struct agent_gpu *ug = &c->agents[cp->node].st.gpu[p->gpu_slot[k]];
        char nb[32], gname[96];
        snprintf(gname, sizeof gname, "%s/%d", ctl_node_name(c, cp->node, nb, sizeof nb), ug->index);
        const char *jn = p->gpus[k].job >= 0 ? c->jobs[p->gpus[k].job].name : NULL;
        pflex_audit_cap(c->audit, p->period_id, gname, jn, cp->cap_w, cp->pushed, cp->enforced_w, NULL);
        pflex_audit_reading(c->audit, p->now, gname, jn, ug->power_w, ug->limit_w, NAN, NULL);
    }
}

int ctl_record(ctl_t *c, pflex_error_t *err)
{
    if (!c->audit)
        return 0;
    const struct ctl_period_state *p = &c->p;
    double now = p->now;
    if (pflex_audit_begin(c->audit, err) < 0)
        return -1;
    for (size_t j = 0; j < c->njobs; j++) {
        const struct ctl_job *cj = &c->jobs[j];
        if (cj->obs_new)
            pflex_audit_observation(c->audit, now, cj->name, cj->obs_cap, cj->obs_power, cj->obs_tput, NULL);
    }
    audit_targets(c, now);
    if (audit_period(c, err) < 0) {
        pflex_audit_rollback(c->audit);
        return -1;
    }
    audit_caps(c);
    if (c->periods % 10 == 1)
        for (size_t j = 0; j < c->njobs; j++) {
            const struct pflex_learn_curve *cv = &c->jobs[j].curve;
            pflex_audit_curve(c->audit, now, c->jobs[j].name, cv->n, cv->x, cv->loss, cv->sd, cv->cap_w,
                              cv->p0_w, cv->t0, NULL);
        }
    if (c->plan.floor_breaches)
        pflex_audit_note(c->audit, now, "floor", "jobs cut past their floor to keep the target", NULL);
    if (pflex_audit_commit(c->audit, err) < 0) {
        pflex_audit_rollback(c->audit);
        return -1;
    }
    return 0;
}
