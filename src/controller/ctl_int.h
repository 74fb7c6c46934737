/* ctl_int.h — the controller's state, shared by controller.c (create,
 * destroy, the period's sequence), steps.c (the decisions), site_io.c (the
 * transport), record.c (the audit) and status.c (what its API shows).
 * Private. */
#ifndef PFLEX_CONTROLLER_CTL_INT_H
#define PFLEX_CONTROLLER_CTL_INT_H

#include <pthread.h>
#include "controller/agent_client.h"
#include "lib/util/grow.h"
#include "controller/controller.h"
#include "controller/period.h"
#include "controller/prom_source.h"
#include "controller/meter.h"
#include "controller/ttt_track.h"
#include "lib/util/strtab.h"
#include "pflex/io/audit.h"
#include "pflex/flex/learn.h"
#include "pflex/flex/safeplan.h"

#define CTL_MAX_HTTP 16
/* One GPU's cap as the agent holds it from this controller's last push
 * that took (leases.c). */
struct ctl_held {
    int gpu;                    /* the agent's GPU index */
    double cap_w;               /* the cap pushed */
    double enforced_w;          /* what the agent answered it enforces; NaN: unconfirmed */
    double fb_w, fb_until;      /* its fallback and until when (unix); NaN: none */
};

/* One node: its agent over HTTP, or in process what the caller fed. */
struct ctl_agent {
    agent_client_t *client;     /* NULL in process */
    struct agent_status st;     /* last status (GPUs from the agent or Prometheus) */
    int seen, up;               /* up: reachable this period (caps go to it) */
    int tele;                   /* fresh telemetry this period */
    /* --prometheus: the agent's own status, for its host name and job map */
    struct agent_status meta;
    int meta_seen;
    int fed, fed_fresh;         /* in process: fed since the last period, and fresh */
    unsigned long snap_seq;     /* started: the reader's snapshot taken last period */
    char said[160];             /* the problem last logged of it ("": none): each
                                 * logged once, not every round */
    /* its leases (leases.c): the caps it holds from the last push that
     * took, in the order they were sent, until lease_end (unix, as the
     * controller counts it: from the period's start, so a little before
     * the agent's own end); nheld 0: none known */
    struct ctl_held *held;
    size_t nheld, cap_held;
    double lease_end, pushed_t;
    unsigned long renew_seq;    /* the period by which its leases are renewed */
    int ever_pushed;
    /* what it confirmed (status.c, ctl_claims_take): the outcome of the
     * last push sent to it (enum ctl_push_result) and its HTTP status, the
     * pushes refused or unanswered since start by outcome, and each of its
     * GPUs' limit as confirmed (conf_w[k] for st.gpu[k]; NaN: not) */
    int push_result;
    long push_http;
    /* never reached (ctl_map_jobs): what it counts at, W (NaN: reached), and
     * whether that is agent_max_w, a default (its GPUs unknown) */
    double never_w;
    int never_assumed;
    unsigned long push_fail[8];
    double *conf_w;
    size_t nconf, cap_conf;
};

/* The outcome of a push to one agent, as the API names it. */
enum ctl_push_result { CTL_PUSH_NONE, CTL_PUSH_OK, CTL_PUSH_UNAUTHORIZED, CTL_PUSH_REJECTED, CTL_PUSH_FENCED,
                       CTL_PUSH_FAILED, CTL_PUSH_UNANSWERED, CTL_PUSH_UNCONFIRMED, CTL_PUSH_N };

/* What the last period's caps came to, by the agents' word (status.c):
 * the API claims these, not the plan. */
struct ctl_claims {
    int taken;                  /* a push step has run */
    int standby;                /* it ran standing by: nothing pushed, nothing claimed */
    double worst_w;             /* every GPU at the limit its agent confirmed, those
                                 * not confirmed at their largest, nodes never reached
                                 * at agent_max_w, plus other_w, W */
    double limit_w;             /* the limit it is held against, W; INFINITY: none */
    int feasible;               /* worst_w within limit_w, and nothing assumed */
    size_t unconfirmed;         /* GPUs whose limit no agent confirmed */
    size_t assumed;             /* nodes never reached: counted at a default */
    size_t push_failed;         /* nodes whose push was refused or unanswered */
    int completed;              /* every cap pushed and confirmed */
    double completed_mono;      /* when a period last completed (monotonic s); before
                                 * the first, the controller's creation */
};

/* The IO threads of a started controller (ctl_start, site_io.c): the
 * period takes what they last published and never waits on the network.
 * mu guards the fields under it; the threads own the rest. */
struct ctl_snap {
    struct agent_status st;     /* the node's status as last read */
    int up, tele;               /* reached, and its telemetry fresh, at that read */
    double t;                   /* monotonic time of that read; NaN: none yet */
    unsigned long seq;          /* reads published so far */
    pflex_error_t err;          /* !up: why */
};

struct ctl_io {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    /* the reader: every node's status (or Prometheus and the job maps) */
    pthread_t reader;
    int reader_on;
    struct ctl_snap *snap;      /* nagents, under mu */
    int prom_ok;                /* under mu */
    int prom_stale;             /* !prom_ok because its samples were stale, under mu */
    char prom_why[200];         /* !prom_ok: why, under mu */
    unsigned long rounds;       /* reads published, under mu */
    int kick;                   /* a period ended: read again now (under mu) */
    struct agent_status *rd_st, *rd_meta;   /* the reader's own */
    int *rd_meta_seen;
    /* the pusher: the caps of the last period posted, to the agents */
    pthread_t pusher;
    int pusher_on;
    pflex_http_client_t *push_http[CTL_MAX_HTTP];
    struct ctl_cap *job;        /* posted, not yet taken (under mu) */
    size_t njob, cap_job;
    unsigned long job_seq, done_seq;    /* posted, and pushed (under mu) */
    uint64_t job_fence;         /* the fencing token the posted caps carry (under mu) */
    struct ctl_cap *res;        /* the outcome of push done_seq (under mu) */
    size_t nres, cap_res;
    /* the VTN's poller (and reports) */
    pthread_t vtn;
    int vtn_on;
    double site_w;              /* the last period's site power, under mu; NaN: none */
    double timeout_s;           /* each agent request, tied to the period */
    int prom_said;              /* whoever reads: Prometheus's failure logged */
    char vtn_said[256];         /* whoever polls: the VTN's refusals last logged */
};


/* The VEN's subscription (vtn_sub.c): its id on the VTN, the callback's
 * own token, and each event's version last taken (modificationDateTime),
 * by poll or callback, to tell a duplicate or a replay.  mu serializes
 * every change of the VTN's targets (a callback's, a poll's apply); gen
 * counts the callbacks' ones, so that a poll answered before a callback
 * applied is not applied over it. */
struct ctl_seen {
    char id[129];
    char modified[64];
    int op;                     /* PFLEX_OADR_OP_*: DELETE when gone */
    int by_callback;            /* 1: that version came by a callback */
};
struct ctl_sub {
    pthread_mutex_t mu;
    uint64_t gen;
    char url[1024];             /* the callback URL; "" no subscription */
    char token[65];             /* what the VTN must send it with */
    char id[129];               /* the subscription's id on the VTN; "" none yet */
    char said[256];             /* its failure last logged */
    struct ctl_seen *seen;
    size_t nseen, capseen;
    unsigned long applied, duplicates, refused;
};

/* The audit's writer (record.c): each period's record is queued, at most
 * CTL_REC_QUEUE of them, and written by a thread of its own on its own
 * connection, so that a database that fills or blocks never holds a period
 * up.  Allocated apart from the controller: a writer stuck in the kernel at
 * the end is left behind with it.  mu guards all but th. */
#define CTL_REC_QUEUE 32
struct ctl_rec;
struct ctl_writer {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* on the monotonic clock */
    int stop;
    struct ctl_rec *head, *tail;
    size_t n;                   /* queued */
    pflex_audit_t *db;
    double busy_since;          /* monotonic start of the write under way; NaN: idle */
    int failing;                /* the last write failed, why in err */
    pflex_error_t err;
    unsigned long written, failed, dropped;     /* records */
};

struct ctl_job {
    char name[64];
    const struct pflex_job_policy *pol;     /* its row of c.policies; NULL: none */
    pflex_learn_t *learn;
    struct pflex_learn_curve curve;
    int fitted;                 /* curve (and hi) are the fit of the observations so
                                 * far, but for the unfitted last (learn_job) */
    unsigned unfitted;          /* observations since the last fit */
    double *hi;                 /* loss + z sd, beside the curve */
    size_t hi_cap;
    unsigned long gen;          /* names the fit (curve and hi): ctl.fits when it
                                 * was made; 0: none yet (pflex_site_job.gen) */
    double last_cap;            /* the common enforced cap last period; NaN: none */
    double tput_now;            /* the job's rate read this period; NaN: none */
    double cap_since;           /* when its common cap was first seen at its value; NaN: none */
    double t0_plan;             /* the baseline rate the plan weighs it by */
    double t0_read;             /* the baseline read from its rate under a settled cap; NaN: none */
    size_t n_now;               /* its reachable GPUs this period */
    /* gathered each period: its GPUs (a chain through ctl.gpu_next), their
     * common cap, summed power and count, whether all answered, and the
     * rate its agents report */
    size_t gpu_head, gpu_tail, agg_n;
    double agg_cap, agg_power, tput_sum;
    int agg_ok, have_t;
    double min_w, max_w;
    /* this period's observation, for the audit (ctl_record) */
    int obs_new;
    double obs_cap, obs_power, obs_tput;
    unsigned probe_wait;        /* periods before the next probe */
    unsigned probe_left;        /* periods the current probe still holds */
    double probe_cap;
    double step_cap;            /* under a target: its cap in the plan's step probe
                                 * (steps.c, plan_step_probe); NaN: it does not move */
    /* between events, the searches for a probe (steps.c, probe_start) are
     * functions of the fit and of what is asked: the walk's and the
     * fill's outcome for the fit `gen` and the key, and the fit and the
     * coming plan's cap under which the chords found none (the readings
     * only fill bins, never empty them); gen 0: none kept */
    struct {
        unsigned long gen;
        double key[6];
        int found, fill;
        double xp, cap;
        unsigned long span_gen;
        double span_key[3];
    } probe_memo;
    int seen_now;
    double give_w;              /* give-back: its GPUs draw well under their caps, and
                                 * under a limit the plan counts no cap above this
                                 * (pflex_site_job.ceil_w); NaN: none (steps.c) */
    double free_draw_w;         /* its draw last read under a cap that did not bind; NaN:
                                 * none since the last rise (steps.c) */
};

/* The rolling day of the learning budget, in slots: a cost is counted
 * for a day and at most one slot more (it never comes back early). */
#define CTL_LEARN_SLOT_S 900.0
#define CTL_LEARN_SLOTS 96

struct ctl {
    struct ctl_config c;
    double settle_s;            /* c.settle_s, at least a period */
    double cap_step_w;          /* c.cap_step_w, or 1: caps are multiples of it, and a
                                 * cap within half of it of another is the same cap */
    struct ctl_agent *agents;
    /* every agent request, batched, connections kept: agents split in nhttp
     * contiguous ranges by index, each range's requests run by its own
     * client on its own thread */
    pflex_http_client_t *http[CTL_MAX_HTTP];
    size_t nhttp;
    struct ctl_job *jobs;
    size_t njobs, cap_jobs;
    struct pflex_strtab job_names;      /* jobs[i].name is job_names.s[i] */
    pflex_target_set_t targets;
    /* the targets' limit read off once, rebuilt when they change: the
     * period's windows over a day read it (held under tmu, as targets) */
    struct pflex_target_profile tprof;
    uint64_t recorded_seq;      /* targets below this seq are in the audit */
    pflex_audit_t *audit;
    prom_source_t *prom;
    int prom_ok;                /* the last Prometheus read worked */
    int prom_stale;             /* it failed on stale samples */
    char prom_why[200];         /* it failed: why */
    double last_limit_w, last_measured_w, last_t;   /* of the last period */
    /* the last 16 periods' gaps (start to start, s) and run times (start to
     * the caps pushed, s): how long caps pushed now may have to hold */
    double gap_hist[16], run_hist[16];
    unsigned hist_n;
    size_t last_agents_down;
    pflex_oadr_events_t evs;
    struct ctl_sub sub;         /* the VTN's subscription and callbacks (vtn_sub.c) */
    struct pflex_safe_plan plan;
    /* between events: the plan the coming target would get on the curves
     * as they are (steps.c, for the probes at its margins), and the period
     * it was made in */
    struct pflex_safe_plan coming;
    unsigned long coming_period;
    unsigned long periods;
    unsigned long fits;         /* curves fitted so far, every job's (ctl_job.gen) */
    /* the fallbacks of the event in force (leases.c): the fraction of each
     * GPU's range it falls back to, kept while it stays safe and the event
     * the same; NaN: none */
    double fb_frac, fb_until, fb_limit_w;
    struct ctl_period_state p;  /* the period under way (period.h) */
    /* Started (ctl_start): the IO threads, and the locks the API and they
     * take.  smu: the state the API shows (held by the period from its
     * read to its plan and at its end; never across the network or the
     * audit).  tmu: the target set (held for CPU work only).  tdb_mu: the
     * targets' own database connection, for every target change, written
     * before the change takes effect (taken before tmu). */
    int started;
    struct ctl_io io;
    pthread_mutex_t smu, tmu, tdb_mu;
    pflex_audit_t *tdb;         /* db_path opened again, for target changes; NULL: none */
    double max_step_w_per_s;    /* c.max_step_w_per_s or its default */
    struct ctl_claims claims;   /* under smu */
    struct ctl_writer *writer;  /* started with an audit; NULL: records written in the period */
    /* The audit degraded (a record dropped or not written) last period, and
     * the reason last logged ("": none): logged when it changes. */
    _Atomic int audit_degraded;
    char audit_said[sizeof(pflex_error_t)];
    /* The targets' clock (ctl_clock_now): the wall and monotonic clocks at
     * its last sync with the wall clock; skew: wall minus it last period;
     * held: not following the wall, since that would loosen the limit. */
    double clk_wall0, clk_mono0, clk_skew;
    int clk_synced, clk_held;
    _Atomic double done_mono;   /* the last completed period's end, monotonic; NaN: none
                                 * (atomic: read with or without smu) */
    double last_floor_w, last_max_w;    /* the site's least and most power, last period */
    /* learning between events (c.learn_between): the probes' expected
     * cost, GPU-seconds of progress, by CTL_LEARN_SLOT_S slot of the last
     * day (slot learn_slot is the newest), and whether it is spent */
    double learn_spent[CTL_LEARN_SLOTS];
    double learn_slot;
    int learn_out;
    /* under a target: the periods the step probe still holds, and those
     * before the next (steps.c, plan_step_probe) */
    unsigned step_left, step_wait;
    struct ctl_ttt_track ttt;   /* time to target (ttt_track.c), under smu */
    struct ctl_meter meter;     /* the grid meter (meter.c) */
    /* act at once (ctl_act_due): the targets' gen and content signature
     * as the last period began, and their next start or end after it
     * (targets' clock, s) */
    uint64_t act_gen, act_sig;
    double act_next_s;
};

/* Nonzero (the default): the probe searches between events are kept per
 * fit (ctl_job.probe_memo).  Zero: every search is made afresh, which the
 * tests compare against, period by period. */
extern int ctl_probe_memo;

/* One line to the log (none without one). */
void ctl_log(const ctl_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A node's name in the audit and the log: its host name, else its agent's
 * URL, else "node-N". */
const char *ctl_node_name(const ctl_t *c, size_t node, char *buf, size_t len);

/* Leases (leases.c).  ctl_leases_plan (from ctl_plan, after p.caps is
 * filled): each cap's fallback and whether its node is sent this period
 * (a cap that changes, a renewal due, a node whose agent lost its caps);
 * ctl_leases_took (from ctl_push_caps, after the push): what each node
 * now holds, and when its renewal is due. */
void ctl_leases_plan(ctl_t *c);
void ctl_leases_took(ctl_t *c);
/* When the event in force at now, or the first to start after it, ends:
 * the first end of a target after now at which none is in force;
 * INFINITY when none ends.  The caller holds tmu. */
double ctl_event_end(ctl_t *c, double now);

/* The transport (site_io.c): the agents' clients, their HTTP clients and
 * the Prometheus source for cfg; and their end. */
int ctl_io_create(ctl_t *c, pflex_error_t *err);
void ctl_io_destroy(ctl_t *c);
/* The IO threads (ctl_start, ctl_stop). */
int ctl_io_start(ctl_t *c, pflex_error_t *err);
void ctl_io_stop(ctl_t *c);

/* One poll of the VTN, its targets into the set (durably), and its
 * refusals logged; from the period (not started) or the VTN's thread. */
void ctl_vtn_poll_once(ctl_t *c, double now);
/* The VTN's targets in force, copied into set (initialised here) with
 * their order, and the set's next sequence number into *seq0: what a poll
 * or a notification is applied to.  0, or -1 with err (set holds what was
 * copied; the caller frees it). */
int ctl_vtn_targets_copy(ctl_t *c, pflex_target_set_t *set, uint64_t *seq0, pflex_error_t *err);
/* The VTN's new targets (fresh: the set ven_poll returned from a copy of
 * the live one's, whose first free seq was seq0) in the audit, then in
 * the live set in place of the VTN's old ones. */
int ctl_vtn_apply(ctl_t *c, const pflex_target_set_t *fresh, uint64_t seq0, double now, pflex_error_t *err);
/* vtn_sub.c: from the VTN's thread before each poll, the subscription
 * made, checked, or made again when the VTN lost it (404); at stop,
 * deleted.  ctl_vtn_seen_poll: the versions a poll brought (sub.mu
 * held). */
void ctl_vtn_subscription(ctl_t *c);
void ctl_vtn_unsubscribe(ctl_t *c);
void ctl_vtn_seen_poll(ctl_t *c);
/* What the agents confirmed of this period's caps (status.c), from
 * ctl_push_caps once its outcome is known, under smu (taken here: the
 * caller does not hold it); standby: this controller pushed nothing. */
void ctl_claims_take(ctl_t *c, int standby);
/* The audit's writer thread (record.c): started by ctl_start when there is
 * an audit; stopped (what is queued written, for a second at most) by
 * ctl_destroy. */
int ctl_writer_start(ctl_t *c, pflex_error_t *err);
void ctl_writer_stop(ctl_t *c);
/* A note queued for the writer (dropped, and counted, when the queue is
 * full): 0, or -1 when there is no writer. */
int ctl_writer_note(ctl_t *c, double t, const char *kind, const char *text);

/* A note to the audit from any thread. */
void ctl_note(ctl_t *c, double now, const char *kind, const char *text);

#endif
