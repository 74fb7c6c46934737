/* controller.h — the site loop of `pflex controller run`: each period it
 * reads the agents, learns each job's curve, plans caps that keep the
 * worst case under the target (pflex/flex/safeplan.h), pushes them with leases,
 * and writes everything to the audit database. */
#ifndef PFLEX_CONTROLLER_H
#define PFLEX_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "pflex/util/error.h"
#include "pflex/io/jobpolicy.h"
#include "pflex/io/slurm.h"
#include "pflex/net/openadr.h"
#include "pflex/flex/target.h"

struct ctl_config {
    size_t nagents;
    const char *const *agent_urls;
    const char *agent_token;        /* bearer token for PUT /v1/caps; NULL: none */
    const char *ca_file;            /* PEM CA bundle for https:// agents; NULL: the system's */
    long timeout_ms;                /* per agent request; <= 0: 2000 */
    unsigned parallel;              /* agent requests in flight at once, per thread; 0: 64 */
    unsigned http_threads;          /* threads that talk to the agents (1..16); 0: one per
                                     * 1,000 agents, at most 4 and the CPUs online */
    double period_s;                /* control period; <= 0: 5 */
    double lease_s;                 /* lease on every cap; <= 0: 12 periods.  Each node's
                                     * leases are renewed once every lease/3 (staggered
                                     * by node), sooner when its caps change */
    double other_w;                 /* non-GPU site power counted against the target */
    double baseline_w;              /* site baseline for fraction targets; <= 0: the GPUs'
                                     * summed maximum limits */
    double agent_max_w;             /* worst case of an agent never reached whose GPUs the
                                     * job map does not name (by its URL's host); <= 0:
                                     * 8 x 1000 W */
    double z;                       /* sd multiplier of the pessimistic curve; <= 0: 2 */
    double explore_step;            /* largest probe below the plan (reduction), and under a
                                     * target the step of the guard's probes toward the
                                     * optimum (safeplan's probe_dx); 0: none */
    int learn_between;              /* 1: probe between events (--learn-between-events);
                                     * 0 (default): no cap under a GPU's largest while
                                     * no target is in force */
    double learn_budget;            /* with learn_between: the probes' expected cost (each
                                     * job's pessimistic curve x GPUs x time held) over
                                     * any day at most this share of the site's progress
                                     * in a day; <= 0: CTL_LEARN_BUDGET */
    double explore_lead_s;          /* with learn_between: probe between events only while
                                     * a target that cuts the site starts within this
                                     * many seconds (its curves learned for it, not all
                                     * day); <= 0: always, so an unannounced event finds
                                     * them learned */
    double cap_step_w;              /* caps are whole multiples of it, W; <= 0: 1 (the
                                     * agents set milliwatts): a cap within half a step of
                                     * a GPU's limit is that limit */
    double settle_s;                /* how long a job's cap must have been seen before its
                                     * readings teach the learner (at least, and by
                                     * default, one period): at least the agents'
                                     * throughput window plus the telemetry's delay */
    double floor;                   /* service floor of jobs without one (0..1); 0: none */
    int plain_optimum;              /* 1: plan the optimum on the learned curves outright;
                                     * 0 (default): never worse than equal cuts beyond the
                                     * curves' margins (pflex_safe_input.guard_equal), and
                                     * under a target probe only when what better
                                     * knowledge could win over the rest of it (the plan's
                                     * voi) outweighs what the probe costs */
    int progress;                   /* objective: 0 the jobs' summed throughput (SPEC §2's
                                     * default; the jobs' rates must share a unit), 1
                                     * GPU-weighted progress (each job's rate as a fraction
                                     * of its own baseline) */
    const pflex_job_policies_t *policies;   /* per-job floor, weight, prior PFI; NULL: none */
    const char *db_path;            /* NULL: no audit */
    pflex_ven_t *ven;               /* NULL: no OpenADR */
    struct pflex_oadr_opts oadr;    /* for the VEN's polls */
    int vtn_every;                  /* poll the VTN every N periods; <= 0: 1 */
    FILE *log;                      /* one line per period and per problem; NULL: none */
    /* Telemetry from a Prometheus server instead of each agent's status:
     * the agents are then asked only for their host name and job map,
     * every status_every periods (<= 0: 10), and for the caps. */
    const char *prometheus_url;     /* NULL: read the agents */
    /* the grid meter (meter.h): a Prometheus query of the site's power,
     * the server's URL, the rest's filter (periods) and the reading's
     * largest age (s; 0: 3 periods); NULL query: none, --other-w */
    const char *meter_query, *meter_url;
    double meter_filter, meter_max_age_s;
    int status_every;
    double telemetry_max_age_s;     /* Prometheus samples stamped further than this from
                                     * now are stale (telemetry down, caps held); <= 0:
                                     * 3 periods, at least 30 s */
    /* A job map (pflex/io/slurm.h rows: job, host, GPU) in place of the
     * agents' own: a job's GPUs on a host are the rows naming the agent's
     * host name; NULL: the agents' maps.  Borrowed. */
    const struct pflex_jobmap_row *job_map;
    size_t job_map_n;
    /* In process (a simulated site, the tests): no agents to talk to.  The
     * caller feeds each of the nagents nodes' status before each period and
     * applies the caps the period hands back (period.h: ctl_node_feed,
     * ctl_caps); agent_urls, agent_token, ca_file, timeout_ms, parallel,
     * http_threads and prometheus_url are then unused (a Prometheus URL is
     * an error), and db_path may well be NULL. */
    int in_process;
    /* With a standby (standby.h): asked before the caps are pushed and
     * before the VTN is reported to whether this controller leads now, and
     * the fencing token its pushes carry (*fence; 0: none); told when an
     * agent refused a push for a newer leader's token (HTTP 409).  NULL:
     * it always leads, its pushes unfenced. */
    int (*may_push)(void *ud, uint64_t *fence);
    void (*fenced)(void *ud);
    void *lead_ud;
    /* The refusal of operators' targets (ctl_target_check): a step down
     * faster than this, W/s, over its ramp (or one period without one);
     * <= 0: 2 % of the site's maximum power per second. */
    double max_step_w_per_s;
    /* The scheduler lever (sched.h): jobs paused through Slurm when even
     * every GPU at its least cap leaves the site over the limit.  NULL:
     * caps alone.  Borrowed. */
    struct ctl_sched *sched;
};

/* The learning budget by default, a share of a day's progress: on the
 * field demonstration's days it bought what unbudgeted probes gain under
 * the event at 22 k progress-s a day where they spent 56-71 k
 * (docs/controller-period.md, "Probes"). */
#define CTL_LEARN_BUDGET 0.001

typedef struct ctl ctl_t;

int ctl_create(const struct ctl_config *c, ctl_t **out, pflex_error_t *err);
void ctl_destroy(ctl_t *c);

/* The controller's targets (add CLI and schedule targets here before the
 * first period, or through ctl_target_put; once started, only through the
 * functions below). */
pflex_target_set_t *ctl_targets(ctl_t *c);

/* Whether the site can take target t now: 0 yes; 1 not unless confirmed
 * (t->confirm), why in why: its level is under the site's floor (every
 * GPU at its least limit plus other_w, as last seen) or its step down from
 * what the site draws (or may draw) now is faster than max_step_w_per_s
 * over its ramp (one period without one).  Before the first period the
 * site is unknown: 0. */
int ctl_target_check(ctl_t *c, const struct pflex_target *t, double now, char *why, size_t len);
/* Target t into the audit database, then in force (any thread).  0, or -1
 * with err (nothing changed). */
int ctl_target_put(ctl_t *c, const struct pflex_target *t, double now, pflex_error_t *err);
/* Withdraw every target of source: in the audit, then out of force.
 * Returns how many, or -1 with err (nothing changed). */
long ctl_target_withdraw(ctl_t *c, const char *source, double now, pflex_error_t *err);

/* The daemon: the network on threads of its own, so that the period never
 * waits on it.  Each node's status (or Prometheus) is read by a reader
 * thread as each period ends, each request bounded by 0.4 period (at
 * least 250 ms, at most the agents' timeout); the VTN is polled (and
 * reported to) by its own; the caps go out on a pusher thread (each
 * request bounded by 0.35 period, the same bounds) while the period waits
 * for them at most 0.8 period.  The period plans on the freshest reading
 * of each node (one older than the lease: the node is down; one seen
 * before: held, not raised).  Not in process.  0, or -1 with err. */
int ctl_start(ctl_t *c, pflex_error_t *err);

/* The targets' clock: the instant the period about to start reads its
 * targets at, given the wall clock and the monotonic clock now (seconds).
 * It is the wall clock at its last sync plus the monotonic time since; it
 * follows the wall clock again (syncs) every period, unless that would
 * loosen the limit in force (the wall clock stepped past an event's end or
 * back before its start), in which case it holds on the monotonic clock
 * until following is safe.  A step of the wall clock against the monotonic
 * one of more than a period is logged and noted.  docs/controller-safety.md,
 * "Time". */
double ctl_clock_now(ctl_t *c, double wall_s, double mono_s);

/* When the last completed period ended (the monotonic clock, seconds): one
 * whose caps went out, its audit degraded or not; NaN: none yet.  What
 * the watchdog and the health check go by.  Any thread, holding the
 * state's lock or not. */
double ctl_period_completed_mono(const ctl_t *c);

/* Act at once: 1 when the next period is due now rather than at its
 * boundary, because the targets changed since the last period began (a
 * PUT, a DELETE, the VTN) or one of their starts or ends has come
 * (docs/time-to-target.md).  From the thread that runs the periods. */
int ctl_act_due(ctl_t *c);

/* The audit's writes so far (records of periods): written, failed,
 * dropped (the queue full), queued now, and 1 when the last period's was
 * degraded.  Any thread, holding the state's lock or not (both take no
 * lock of the period's). */
struct ctl_audit_counts {
    unsigned long written, failed, dropped;
    size_t queued;
    int degraded;
};
void ctl_audit_counts(const ctl_t *c, struct ctl_audit_counts *out);

/* OpenADR subscriptions (docs/openadr.md): the URL the VTN is to call
 * back (the API's POST /v1/openadr/notify) and the bearer token it must
 * send (16..64 printable characters; NULL: one drawn here), both copied,
 * set before ctl_start.  0, or -1 with err. */
int ctl_set_vtn_callback(ctl_t *c, const char *url, const char *token, pflex_error_t *err);
/* A callback's notification (the API's route): auth the Authorization
 * header, body as received.  The HTTP status to answer, why (whylen bytes)
 * saying what was done or refused; each refusal logged. */
int ctl_vtn_notify(ctl_t *c, const char *auth, const char *body, size_t len, const char *peer, char *why,
                   size_t whylen);

/* One log line, "2026-05-03T18:00:00.123Z what\n", written whole (any
 * thread); f NULL: none. */
void ctl_log_to(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct ctl_period_result {
    double limit_w;             /* the smallest limit over the period */
    double worst_w;             /* the plan's worst case */
    double measured_w;          /* GPU power read this period (reachable GPUs) + other; NaN: none */
    int feasible;
    size_t agents_down, gpus, jobs, floor_breaches, held, probes;
    size_t pushed_nodes;        /* nodes sent caps (changes and renewals) */
    double read_s, plan_s, push_s;  /* wall time: reading the site (step 2), from
                                     * there to the push, the push with its audit */
    int audit_degraded;         /* its record not written (or not queued), or the
                                 * audit's writes failing or blocked: the period
                                 * still completed */
};

/* After a restart: the live targets of the audit database back into the
 * set (before any new ones, so that new ones win), *ntargets how many.
 * Jobs' observations come back as each job is first seen. */
int ctl_resume(ctl_t *c, double now, size_t *ntargets, pflex_error_t *err);

struct pflex_learn_curve;
/* A job's learned curve as of the last period, NULL for an unknown job. */
const struct pflex_learn_curve *ctl_job_curve(const ctl_t *c, const char *job);

/* One control period at unix time now: the steps of period.h in order. */
int ctl_period(ctl_t *c, double now, struct ctl_period_result *r, pflex_error_t *err);

/* The state after the last period, for the controller's own API
 * (status.c): GET /v1/status as JSON (the caller owns it), and GET
 * /metrics as Prometheus text (malloc'd, *len its length; NULL out of
 * memory).  now resolves the target in force. */
json_t *ctl_status_json(const ctl_t *c, double now);
char *ctl_metrics(const ctl_t *c, double now, size_t *len);
/* The API's probes (any thread): 0 live (ready), or -1 with why: no period
 * completed (its caps pushed and confirmed) within three periods; for
 * ready also a push refused or unanswered last period, a node never
 * reached, or telemetry stale or down. */
int ctl_health(const ctl_t *c, int ready, char *why, size_t len);
/* 1 when the last period completed: every cap it decided was pushed (or
 * held under a lease that runs) and its agent confirmed the limit it
 * enforces (in process: the caller's to apply; standing by: nothing to
 * push); 0 otherwise, or before the first period.  Any thread. */
int ctl_period_confirmed(const ctl_t *c);

#endif
