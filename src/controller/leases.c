/* leases.c — which nodes the period sends caps to, the fallbacks their
 * leases carry, and what each node's agent holds.
 *
 * Pushes grow with changes, not nodes: a node is sent its caps when one of
 * them (or its fallback) changes, when its agent no longer shows the cap it
 * was given (restarted, lapsed, changed by hand) or shows nothing fresh
 * (its telemetry stale or down: every period), and otherwise once every
 * lease/3 (renew_every periods), its first renewal staggered by its index
 * so that the renewals spread evenly over the periods.  A node sent caps
 * restarts its renewal clock.  A node not sent holds the very caps of this
 * period's plan under a lease that still runs: the plan's worst case holds
 * for it as for the others.
 *
 * Safety when the controller stops answering (crash, kill -9, partition):
 * every cap now in force at an agent is this period's plan's, and stays in
 * force until its lease ends, at most lease_s (plus a period's run) from
 * now: so ctl_take_targets plans over a horizon of at least that long.
 * From its lease's end a GPU holds its fallback, never above its cap, until
 * the event's end: so a site where some leases have lapsed draws no more
 * than its plan, and one where all have lapsed no more than the fallbacks'
 * sum, which is kept at or under the lowest limit until the event ends
 * (plan_fallbacks).  After the event's end the agents restore the original
 * limits, as they do when a lease taken outside an event lapses. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "controller/ctl_int.h"
#include "controller/sched.h"
#include "lib/util/clock.h"

/* Periods between two renewals of one node's leases: the whole periods in a
 * third of the lease, at least one. */
static unsigned long renew_every(const ctl_t *c)
{
    double r = floor(c->c.lease_s / 3 / c->c.period_s + 1e-9);
    return r >= 1 ? (unsigned long)r : 1;
}

double ctl_event_end(ctl_t *c, double now)
{
    const struct ctl_period_state *p = &c->p;
    return pflex_target_profile_free_end(&c->tprof, &c->targets, now, p->baseline_w,
                                         p->sum_max_w + p->other_w);
}

/* What node ag holds for its GPU gpu; NULL: nothing known. */
static const struct ctl_held *held_find(const struct ctl_agent *ag, int gpu)
{
    for (size_t i = 0; i < ag->nheld; i++)
        if (ag->held[i].gpu == gpu)
            return &ag->held[i];
    return NULL;
}

/* A GPU's fallback at fraction frac of its range, whole watts, in range. */
static double fallback_at(const struct pflex_site_gpu *g, double frac)
{
    double f = floor(g->min_cap_w + frac * (g->max_cap_w - g->min_cap_w) + 1e-9);
    return f < g->min_cap_w ? g->min_cap_w : f;
}

/* During an event (a limit over the horizon), every GPU capped this period
 * falls back, when its lease lapses, to the same fraction of its range
 * (never above its cap), until the event ends: a static split, kept from
 * one period to the next while it stays safe and the event the same, so
 * that fallbacks do not change (and nodes need not be sent) with every
 * plan.  The fraction is the largest for which the site with every lease
 * lapsed -- those fallbacks, other_w, the nodes never reached at
 * agent_max_w, and every GPU not capped now at the fallback its agent holds
 * for this event or else at its maximum -- is at or under the lowest limit
 * from now to the event's end (at most a day ahead).  Where even every
 * GPU at its minimum is over, the fallbacks are the minima, and said so. */
static void plan_fallbacks(ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    p->fb_until = p->fb_sum_w = NAN;
    for (size_t q = 0; q < p->ncaps; q++)
        p->caps[q].fallback_w = p->caps[q].fallback_until = NAN;
    if (!isfinite(p->limit_w)) {
        c->fb_frac = c->fb_until = c->fb_limit_w = NAN;
        return;
    }
    /* an event without an end: a day ahead, kept while half a day is left;
     * the targets under tmu (the API's and the VTN's threads change them,
     * the VTN's by swapping the set whole) */
    pthread_mutex_lock(&c->tmu);
    double until = ctl_event_end(c, p->now);
    if (!(until <= p->now + 86400))
        until = isfinite(c->fb_until) && c->fb_until - p->now >= 43200 ? c->fb_until : p->now + 86400;
    until = ceil(until);
    double lim = pflex_target_profile_min_w(&c->tprof, &c->targets, p->now, until, p->baseline_w,
                                            p->sum_max_w + p->other_w);
    pthread_mutex_unlock(&c->tmu);
    double fixed = p->other_w, sum_min = 0, sum_rng = 0;
    for (size_t k = 0; k < p->ngpus; k++) {
        const struct pflex_site_gpu *g = &p->gpus[k];
        const struct ctl_agent *ag = &c->agents[p->gpu_node[k]];
        if (g->reachable && ag->up) {
            sum_min += g->min_cap_w;
            sum_rng += g->max_cap_w - g->min_cap_w;
            continue;
        }
        const struct ctl_held *h = held_find(ag, ag->st.gpu[p->gpu_slot[k]].index);
        fixed += h && isfinite(h->fb_w) && h->fb_until >= until - 0.5 ? h->fb_w : g->max_cap_w;
    }
    double room = lim - fixed - sum_min;
    double frac = sum_rng > 0 ? room / sum_rng : 1;
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    int same = isfinite(c->fb_frac) && fabs(c->fb_until - until) < 0.5 && fabs(c->fb_limit_w - lim) < 0.5;
    char when[PFLEX_UTC_TEXT_MAX];
    if (same && c->fb_frac <= frac)
        frac = c->fb_frac;
    else if (room < 0)
        ctl_log(c, "fallbacks: every GPU at its minimum leaves the site %.0f W over %.0f W until %s; "
                   "the fallbacks are the minima", -room, lim, pflex_utc_text(when, until));
    else if (!same || frac != c->fb_frac)
        ctl_log(c, "fallbacks: %.3f of each GPU's range until %s (%.0f W at most until then)", frac,
                pflex_utc_text(when, until), lim);
    c->fb_frac = frac;
    c->fb_until = until;
    c->fb_limit_w = lim;
    double sum = fixed;
    for (size_t q = 0; q < p->ncaps; q++) {
        struct ctl_cap *cp = &p->caps[q];
        double f = fallback_at(&p->gpus[cp->site], frac);
        cp->fallback_w = f < cp->cap_w ? f : cp->cap_w;
        cp->fallback_until = until;
        sum += cp->fallback_w;
    }
    p->fb_until = until;
    p->fb_sum_w = sum;
}

/* Node a, whose caps are p.caps[q0, q1): are they sent this period? */
static int node_due(ctl_t *c, size_t a, size_t q0, size_t q1)
{
    const struct ctl_period_state *p = &c->p;
    const struct ctl_agent *ag = &c->agents[a];
    if (ag->nheld != q1 - q0 || !(ag->lease_end > p->now))
        return 1;       /* nothing held that matches, or lapsed */
    if (p->seq >= ag->renew_seq || ag->lease_end - p->now < c->c.lease_s / 2)
        return 1;       /* renewal due (by its turn, or periods that ran late) */
    /* no fresh reading of it (telemetry stale or down): whether its agent
     * still holds the caps (it may have restarted at full power) is
     * unknown until the next renewal, so they are sent every period and
     * its answer confirms them */
    if (!ag->tele)
        return 1;
    /* the agent's own word on the limit, once a reading can postdate the push */
    int check = ag->tele && (c->prom ? p->now - ag->pushed_t >= c->settle_s + c->c.period_s
                                     : p->now > ag->pushed_t);
    for (size_t q = q0; q < q1; q++) {
        const struct ctl_cap *cp = &p->caps[q];
        const struct ctl_held *h = &ag->held[q - q0];
        if (h->gpu != cp->gpu || fabs(h->cap_w - cp->cap_w) > c->cap_step_w / 4)
            return 1;
        if (isnan(h->fb_w) != isnan(cp->fallback_w))
            return 1;
        if (!isnan(h->fb_w) && (fabs(h->fb_w - cp->fallback_w) > 0.25 || fabs(h->fb_until - cp->fallback_until) > 0.5))
            return 1;
        double shown = ag->st.gpu[p->gpu_slot[cp->site]].limit_w;
        if (check && isfinite(shown) && fabs(shown - h->cap_w) > c->cap_step_w / 2) {
            ctl_log(c, "node %zu GPU %d: the agent shows %g W, not the %g W it was given; sent again", a,
                    cp->gpu, shown, h->cap_w);
            return 1;
        }
    }
    return 0;
}

void ctl_leases_plan(ctl_t *c)
{
    if (c->c.sched)
        ctl_sched_caps(c->c.sched, c);
    struct ctl_period_state *p = &c->p;
    plan_fallbacks(c);
    p->nsend = 0;
    for (size_t q0 = 0, q1; q0 < p->ncaps; q0 = q1) {
        size_t a = p->caps[q0].node;
        for (q1 = q0; q1 < p->ncaps && p->caps[q1].node == a; q1++)
            ;
        int due = node_due(c, a, q0, q1);
        for (size_t q = q0; q < q1; q++)
            p->caps[q].send = due;
        p->nsend += (size_t)due;
    }
}

void ctl_leases_took(ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    unsigned long every = renew_every(c);
    p->r.pushed_nodes = 0;
    for (size_t q0 = 0, q1; q0 < p->ncaps; q0 = q1) {
        size_t a = p->caps[q0].node;
        struct ctl_agent *ag = &c->agents[a];
        for (q1 = q0; q1 < p->ncaps && p->caps[q1].node == a; q1++)
            ;
        if (!p->caps[q0].send) {
            /* held from an earlier push, under a lease that still runs */
            for (size_t q = q0; q < q1; q++) {
                p->caps[q].pushed = 1;
                p->caps[q].enforced_w = ag->held[q - q0].enforced_w;
            }
            continue;
        }
        p->r.pushed_nodes++;
        int ok = 1;
        for (size_t q = q0; q < q1; q++)
            ok = ok && p->caps[q].pushed;
        /* a push that failed leaves the agent's caps unknown: sent again
         * next period, and counted at their maximum by the fallbacks */
        ag->nheld = 0;
        if (!ok || pflex_grow((void **)&ag->held, &ag->cap_held, q1 - q0, sizeof *ag->held) < 0)
            continue;
        for (size_t q = q0; q < q1; q++) {
            const struct ctl_cap *cp = &p->caps[q];
            ag->held[q - q0] = (struct ctl_held){.gpu = cp->gpu, .cap_w = cp->cap_w, .enforced_w = cp->enforced_w,
                                                 .fb_w = cp->fallback_w, .fb_until = cp->fallback_until};
        }
        ag->nheld = q1 - q0;
        ag->lease_end = p->now + c->c.lease_s;
        ag->pushed_t = p->now;
        ag->renew_seq = p->seq + (ag->ever_pushed ? every : 1 + a % every);
        ag->ever_pushed = 1;
    }
}
