/* period.h — one control period of the site loop, as its steps.
 *
 * ctl_period (controller.h) runs these steps in this order; a simulated
 * site in process and the tests run the very same ones, feeding the nodes'
 * statuses themselves (ctl_node_feed) and applying the caps the period
 * hands back (ctl_caps).
 *
 *   step              reads -> writes
 *   ctl_period_begin  now -> the period's state reset (c->p), its clock started
 *   ctl_poll_targets  IO: the VTN, when configured and due -> the targets
 *   ctl_read_site     IO: each agent's GET /v1/status, or Prometheus and the
 *                     agents' host names and job maps, or in process what
 *                     the caller fed -> each node's status, up and fresh
 *   ctl_map_jobs      the nodes' statuses -> the site's GPUs (p.gpus, in node
 *                     order), its jobs (a new one gets its learner), the
 *                     power read, the nodes down, the worst case of those
 *                     never reached (by the job map's GPUs, or a default)
 *   ctl_take_targets  the targets, the GPUs' maxima, the periods' history ->
 *                     the limit in force (ramps included) over as long as
 *                     the caps pushed now may have to hold (their leases)
 *   ctl_learn         each job's GPUs and rate -> one observation to its
 *                     learner when settled; its curve refitted
 *   ctl_plan          curves, GPUs, limit -> c's plan (pflex_safe_plan), the
 *                     probes, the caps (p.caps), their fallbacks and which
 *                     nodes are sent them (leases.c: changes and renewals)
 *   ctl_push_caps     IO: the caps of the nodes sent -> their agents, every
 *                     cut on every agent before any raise (in process: left
 *                     for the caller); what each node now holds (leases.c)
 *   ctl_record        disk: the period -> the audit database, when there is one
 *   ctl_period_end    -> the period's run time (for the horizon), its result,
 *                     the figures the API shows, the log line
 *   ctl_report_vtn    IO: the power read -> the VTN, for its events in force
 *
 * Only the steps marked IO talk to the network, and only ctl_record to the
 * database (besides the IO steps' notes of a VTN or a Prometheus that
 * failed, and a new job's first sight, which loads its past observations);
 * the others decide from the controller's state alone.  Started
 * (ctl_start, the daemon), the IO steps talk to no one: ctl_poll_targets
 * does nothing (the VTN's thread polls), ctl_read_site takes the reader
 * thread's latest snapshot of each node, ctl_push_caps hands the caps to
 * the pusher thread and waits for their outcome at most 0.8 period, and
 * ctl_report_vtn leaves the site's power for the VTN's thread.  A step that fails (-1, err: out of memory, a malformed
 * reading the learner or the planner refuses) ends the period there; the IO
 * steps' own failures are per agent or per server, logged, and never fail
 * the period (an agent that does not answer is a node down); ctl_record's
 * failure (the database full or blocked; started, the record is queued
 * for the audit's writer thread) degrades the period, never fails it.
 *
 * Ownership: the controller owns everything here; what ctl_period_state and
 * ctl_caps return is valid until the next step of the next period.
 * Units: watts, seconds (now: unix time; the stamps: a monotonic clock).
 */
#ifndef PFLEX_CONTROLLER_PERIOD_H
#define PFLEX_CONTROLLER_PERIOD_H

#include <stddef.h>
#include "controller/controller.h"
#include "controller/node.h"
#include "pflex/util/error.h"
#include "pflex/flex/safeplan.h"

/* One cap the period decided, for one reachable GPU of a node up this
 * period.  Caps come in site order: a node's caps are contiguous. */
struct ctl_cap {
    size_t node;                /* the node (agent) index, 0 .. nagents - 1 */
    int gpu;                    /* the node's own GPU index (agent_gpu.index) */
    size_t site;                /* the GPU's index in the site (p.gpus) */
    double cap_w;               /* the cap, whole watts, within the GPU's range */
    int cut;                    /* under the GPU's limit now: apply before any raise */
    int send;                   /* sent this period: its node's caps change, or its
                                 * leases are due for renewal (leases.c); 0: the
                                 * same cap is held under a lease that still runs */
    double fallback_w;          /* during an event, the cap the agent falls back to
                                 * when the lease lapses; NaN: none (the original) */
    double fallback_until;      /* until when (unix s) */
    double free_w;              /* what its cut frees: the GPU's power read now less the
                                 * cap, W (0: none; set by ctl_push_caps): the nodes
                                 * that free the most are sent their cuts first */
    int node_raises;            /* its node is sent a raise this period: its caps go
                                 * in the second batch, after every cut (set by
                                 * ctl_push_caps) */
    int pushed;                 /* in force: sent and taken, or held from an earlier
                                 * push (in process: 1, the caller's to apply) */
    double enforced_w;          /* what the agent enforces, from its answer; NaN: unconfirmed */
    long push_status;           /* the HTTP status of the answer to the push that carried
                                 * it; 0: no answer (unreachable, timed out); -1: no
                                 * outcome within the period's wait (set by ctl_push_caps) */
};

/* The state of the period under way: each step reads what the ones before
 * it wrote.  The arrays are the controller's scratch, kept from one period
 * to the next. */
struct ctl_period_state {
    double now;                 /* unix time of the period, s */
    unsigned long seq;          /* the period's number, 1 for the first */
    struct ctl_period_result r; /* what ctl_period hands back (controller.h) */
    double t_start, t_read, t_plan, t_push;    /* monotonic stamps, s */

    /* ctl_map_jobs: the site's GPUs, each node's in its status order */
    size_t ngpus;
    struct pflex_site_gpu *gpus;        /* the planner's view (job: index into the jobs) */
    size_t *gpu_node, *gpu_slot;        /* its node, and its place in the node's status */
    size_t *gpu_next;                   /* the next GPU of the same job; SIZE_MAX: none */
    double never_w;             /* nodes never reached, each at its GPUs' largest limit
                                 * when the job map says how many it has, else at
                                 * agent_max_w, W */
    size_t never_n;             /* those at agent_max_w: a default, assumed */
    double measured_w;          /* power read this period (fresh GPUs only), W */
    int any_power;              /* some GPU's power was read */
    double sum_max_w;           /* the known GPUs' summed maximum limits, W */

    /* ctl_take_targets */
    double horizon_s;           /* how long the caps pushed now may have to hold, s:
                                 * at least until their leases end */
    double other_w;             /* other_w plus never_w, W */
    double baseline_w;          /* what fraction targets are of, W */
    double limit_w;             /* the lowest limit over the horizon, W; INFINITY: none */
    double coming_w;            /* the lowest limit over the next day, W: the one quiet
                                 * periods' probes prepare for; INFINITY: none */
    int explore_now;            /* 1: quiet periods may probe (explore_lead_s) */

    /* ctl_plan: the planner's jobs, and the caps to push */
    struct pflex_site_job *sjobs;
    size_t ncaps;
    struct ctl_cap *caps;
    size_t nsend;               /* nodes sent caps this period */
    double fb_until;            /* the fallbacks' end (unix s); NaN: none this period */
    double fb_sum_w;            /* the site with every lease lapsed: every fallback,
                                 * other_w, the rest at their maximum, W */

    /* ctl_record */
    long long period_id;        /* the audit's row of the period; 0: none */

    size_t cap_gpus, cap_gn, cap_gs, cap_ga, cap_sjobs, cap_caps;   /* room in the arrays */
};

/* The steps (above), each 0 or -1 with err unless void.  ctl_period runs
 * ctl_period_begin .. ctl_report_vtn in order; a caller may run them
 * itself, in the same order. */
void ctl_period_begin(ctl_t *c, double now);
void ctl_poll_targets(ctl_t *c);
int ctl_read_site(ctl_t *c, pflex_error_t *err);
int ctl_map_jobs(ctl_t *c, pflex_error_t *err);
void ctl_take_targets(ctl_t *c);
int ctl_learn(ctl_t *c, pflex_error_t *err);
int ctl_plan(ctl_t *c, pflex_error_t *err);
int ctl_push_caps(ctl_t *c, pflex_error_t *err);
int ctl_record(ctl_t *c, pflex_error_t *err);
void ctl_period_end(ctl_t *c, struct ctl_period_result *r);
void ctl_report_vtn(ctl_t *c);

/* The period under way (or the last one), read-only. */
const struct ctl_period_state *ctl_period_state(const ctl_t *c);

/* In process (ctl_config.in_process): node's status for the next period,
 * copied: its GPUs (index, power, enforced limit, range, ok) and its jobs
 * (name, GPU indices, rate).  fresh 0: the node answers but its readings
 * are stale (its caps are held, not raised).  A node not fed before a
 * period is down for that period: its GPUs count at their maximum and get
 * no caps.  0, or -1 with err (not in process, node out of range). */
int ctl_node_feed(ctl_t *c, size_t node, const struct agent_status *st, int fresh, pflex_error_t *err);

/* The caps the last period decided (*n of them: every reachable GPU's;
 * in process, the caller applies those marked send, cuts first), each to
 * hold for ctl_lease_s seconds, then its fallback until its end. */
const struct ctl_cap *ctl_caps(const ctl_t *c, size_t *n);
double ctl_lease_s(const ctl_t *c);
/* The lease a controller of this period takes when none is given (12
 * periods). */
double ctl_lease_default_s(double period_s);
/* How far ahead a period plans to (the lowest limit over it), s, for a
 * controller of this period and lease whose periods came at most gap_s
 * apart and ran at most run_s (steps.c). */
double ctl_horizon_s(double period_s, double lease_s, double gap_s, double run_s);

#endif
