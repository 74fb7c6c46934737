/* ctl_int.h — the controller's state, shared by controller.c (create,
 * destroy, the period's sequence), steps.c (the decisions), site_io.c (the
 * transport), record.c (the audit) and status.c (what its API shows).
 * Private. */
#ifndef PFLEX_CONTROLLER_CTL_INT_H
#define PFLEX_CONTROLLER_CTL_INT_H

#include "controller/agent_client.h"
#include "controller/controller.h"
#include "controller/period.h"
#include "controller/prom_source.h"
#include "lib/util/strtab.h"
#include "pflex/audit.h"
#include "pflex/learn.h"
#include "pflex/safeplan.h"

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
};

#define CTL_MAX_HTTP 16

struct ctl_job {
    char name[64];
    const struct pflex_job_policy *pol;     /* its row of c.policies; NULL: none */
    pflex_learn_t *learn;
    struct pflex_learn_curve curve;
    int fitted;                 /* curve (and hi) are the fit of every observation so
                                 * far: the fit is a function of them alone */
    double *hi;                 /* loss + z sd, beside the curve */
    size_t hi_cap;
    double last_cap;            /* the common enforced cap last period; NaN: none */
    double tput_now;            /* the job's rate read this period; NaN: none */
    double cap_since;           /* when its common cap was first seen at its value; NaN: none */
    double t0_plan;             /* the baseline rate the plan weighs it by */
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
    int seen_now;
};

struct ctl {
    struct ctl_config c;
    double settle_s;            /* c.settle_s, at least a period */
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
    uint64_t recorded_seq;      /* targets below this seq are in the audit */
    pflex_audit_t *audit;
    prom_source_t *prom;
    int prom_ok;                /* the last Prometheus read worked */
    double last_limit_w, last_measured_w, last_t;   /* of the last period */
    /* the last 16 periods' gaps (start to start, s) and run times (start to
     * the caps pushed, s): how long caps pushed now may have to hold */
    double gap_hist[16], run_hist[16];
    unsigned hist_n;
    size_t last_agents_down;
    pflex_oadr_events_t evs;
    struct pflex_safe_plan plan;
    unsigned long periods;
    struct ctl_period_state p;  /* the period under way (period.h) */
};

/* One line to the log (none without one). */
void ctl_log(const ctl_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Room for need elements of size in *p (*cap grown by doubling); -1 out of memory. */
int ctl_grow(void **p, size_t *cap, size_t need, size_t size);

/* A node's name in the audit and the log: its host name, else its agent's
 * URL, else "node-N". */
const char *ctl_node_name(const ctl_t *c, size_t node, char *buf, size_t len);

/* The transport (site_io.c): the agents' clients, their HTTP clients and
 * the Prometheus source for cfg; and their end. */
int ctl_io_create(ctl_t *c, pflex_error_t *err);
void ctl_io_destroy(ctl_t *c);

#endif
