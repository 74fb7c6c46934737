/* ctl_int.h — the controller's state, shared by controller.c (the
 * period) and status.c (what its API shows of it).  Private. */
#ifndef PFLEX_CONTROLLER_CTL_INT_H
#define PFLEX_CONTROLLER_CTL_INT_H

#include "controller/agent_client.h"
#include "controller/controller.h"
#include "controller/prom_source.h"
#include "pflex/audit.h"
#include "pflex/learn.h"
#include "pflex/safeplan.h"

struct ctl_agent {
    agent_client_t *client;
    struct agent_status st;     /* last status (GPUs from the agent or Prometheus) */
    int seen, up;               /* up: reachable this period (caps go to it) */
    int tele;                   /* fresh telemetry this period */
    /* --prometheus: the agent's own status, for its host name and job map */
    struct agent_status meta;
    int meta_seen;
};

struct ctl_job {
    char name[64];
    pflex_learn_t *learn;
    struct pflex_learn_curve curve;
    double *hi;                 /* loss + z sd, beside the curve */
    size_t hi_cap;
    double last_cap;            /* the common enforced cap last period; NaN: none */
    double min_w, max_w;
    unsigned probe_wait;        /* periods before the next probe */
    unsigned probe_left;        /* periods the current probe still holds */
    double probe_cap;
    int seen_now;
};

struct ctl {
    struct ctl_config c;
    struct ctl_agent *agents;
    pflex_http_client_t *http;  /* every agent request, batched, connections kept */
    struct ctl_job *jobs;
    size_t njobs, cap_jobs;
    pflex_target_set_t targets;
    uint64_t recorded_seq;      /* targets below this seq are in the audit */
    pflex_audit_t *audit;
    prom_source_t *prom;
    int prom_ok;                /* the last Prometheus read worked */
    double last_limit_w, last_measured_w, last_t;   /* of the last period */
    size_t last_agents_down;
    pflex_oadr_events_t evs;
    struct pflex_safe_plan plan;
    unsigned long periods;
    /* per period scratch */
    struct pflex_site_gpu *gpus;
    struct pflex_site_job *sjobs;
    size_t *gpu_agent, *gpu_slot, cap_gpus, cap_sjobs, cap_ga, cap_gs;
};

#endif
