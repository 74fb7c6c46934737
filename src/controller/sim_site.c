/* sim_site.c — the site controller driving a simulated site (sim_site.h).
 *
 * Each job slot is one node whose one GPU entry stands for the job's GPUs
 * under one cap (agent_gpu.count): the controller's steps then cost jobs,
 * not GPUs, and plan exactly as they would the GPUs one by one (the
 * planner's worst case and the learner's means count each entry's GPUs).
 * Floors, weights and prior PFIs are the controller's job policies, one
 * row per job of the run; targets are the controller's own set. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/ctl_int.h"
#include "controller/sim_site.h"

struct sim_site {
    ctl_t *c;
    size_t nslots;
    pflex_job_policies_t pol;
    struct agent_status st;     /* scratch: one node's status */
};

static void sim_destroy(void *h)
{
    struct sim_site *s = h;
    if (!s)
        return;
    ctl_destroy(s->c);
    free(s->pol.p);
    free(s);
}

static int sim_create(const struct pflex_sim_ctl_setup *su, void **out, pflex_error_t *err)
{
    *out = NULL;
    struct sim_site *s = calloc(1, sizeof *s);
    if (!s)
        return pflex_error_set(err, "out of memory");
    s->nslots = su->nslots;
    s->pol.p = calloc(su->njobs + 1, sizeof *s->pol.p);
    if (!s->pol.p) {
        sim_destroy(s);
        return pflex_error_set(err, "out of memory");
    }
    s->pol.n = su->njobs;
    for (size_t j = 0; j < su->njobs; j++) {
        struct pflex_job_policy *p = &s->pol.p[j];
        if (strlen(su->jobs[j].name) >= sizeof p->job) {
            sim_destroy(s);
            return pflex_error_set(err, "simulate: job name '%.40s...' longer than %zu bytes",
                                   su->jobs[j].name, sizeof p->job - 1);
        }
        snprintf(p->job, sizeof p->job, "%s", su->jobs[j].name);
        p->floor = su->jobs[j].floor;
        p->weight = su->jobs[j].weight;
        p->pfi = su->jobs[j].prior_pfi > 0 ? su->jobs[j].prior_pfi : NAN;
        p->line = (unsigned)j + 1;
    }
    struct ctl_config cfg = {.nagents = su->nslots, .in_process = 1, .period_s = su->period_s,
                             .other_w = su->other_w, .baseline_w = su->baseline_w, .z = su->z,
                             .explore_step = su->explore_step, .explore_lead_s = su->explore_lead_s,
                             .learn_between = su->learn_between, .learn_budget = su->learn_budget,
                             .cap_step_w = su->cap_step_w,
                             .settle_s = su->settle_s,
                             .progress = su->objective == PFLEX_OBJECTIVE_PROGRESS, .policies = &s->pol};
    if (ctl_create(&cfg, &s->c, err) < 0) {
        sim_destroy(s);
        return -1;
    }
    for (size_t i = 0; su->targets && i < su->targets->n; i++)
        if (pflex_target_set_add(ctl_targets(s->c), &su->targets->t[i], err) < 0) {
            sim_destroy(s);
            return -1;
        }
    *out = s;
    return 0;
}

static int sim_period(void *h, double now, const struct pflex_sim_ctl_view *v, double *cap_w,
                      size_t *probes, pflex_error_t *err)
{
    struct sim_site *s = h;
    struct agent_status *st = &s->st;
    for (size_t n = 0; n < s->nslots; n++) {
        st->host[0] = 0;
        st->ngpus = 1;
        st->gpu[0] = (struct agent_gpu){.index = 0, .power_w = v[n].power_w, .limit_w = v[n].cap_w,
                                        .min_w = v[n].min_cap_w, .max_w = v[n].max_cap_w, .ok = 1,
                                        .count = v[n].gpus};
        st->njobs = 1;
        struct agent_job *j = &st->job[0];
        size_t len = strnlen(v[n].job, sizeof j->name - 1);
        memcpy(j->name, v[n].job, len);
        j->name[len] = 0;
        j->ngpus = 1;
        j->gpus[0] = 0;
        j->throughput = v[n].throughput;
        if (ctl_node_feed(s->c, n, st, 1, err) < 0)
            return -1;
    }
    struct ctl_period_result r;
    if (ctl_period(s->c, now, &r, err) < 0)
        return -1;
    *probes += r.probes;
    size_t nc;
    const struct ctl_cap *caps = ctl_caps(s->c, &nc);
    for (size_t q = 0; q < nc; q++)
        cap_w[caps[q].node] = caps[q].cap_w;
    return 0;
}

/* The controller's horizon in a simulated site: its default lease, and
 * periods that come on time, a period apart, in no time of their own. */
static double sim_horizon(double period_s)
{
    return ctl_horizon_s(period_s, ctl_lease_default_s(period_s), period_s, 0);
}

const struct pflex_sim_controller ctl_sim = {.create = sim_create, .period = sim_period,
                                             .destroy = sim_destroy, .horizon_s = sim_horizon};
