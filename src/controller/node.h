/* node.h — what the controller knows of one node (one agent's host), by
 * whatever carried it: an agent's GET /v1/status (agent_client.h),
 * Prometheus (prom_source.h), or a caller in process (period.h's
 * ctl_node_feed).  Plain data, no transport. */
#ifndef PFLEX_CONTROLLER_NODE_H
#define PFLEX_CONTROLLER_NODE_H

#include <stddef.h>

#define AGENT_MAX_GPUS 64
#define AGENT_MAX_JOBS 64

struct agent_gpu {
    int index;                  /* the agent's GPU index */
    char uuid[64];
    double power_w;             /* NaN: no reading */
    double limit_w;             /* enforced limit, W; NaN: unknown */
    double min_w, max_w;        /* settable range, W */
    int ok;                     /* the agent can read and set it */
    unsigned count;             /* the GPUs this entry stands for (0: 1): an agent
                                 * reports each GPU alone; a caller in process
                                 * (a simulated site) may report a job's GPUs on a
                                 * node under one limit as one entry, power_w
                                 * their mean */
};

struct agent_job {
    char name[64];
    int ngpus;
    int gpus[AGENT_MAX_GPUS];   /* agent GPU indices */
    double throughput;          /* the agent's measured rate; NaN: none yet */
};

struct agent_status {
    char host[64];
    size_t ngpus, njobs;
    struct agent_gpu gpu[AGENT_MAX_GPUS];
    struct agent_job job[AGENT_MAX_JOBS];
};

/* Copy a status: its header and the GPUs and jobs it has (not the room
 * for the ones it has not). */
void agent_status_copy(struct agent_status *dst, const struct agent_status *src);
/* (defined in agent_client.c, beside the parser that fills statuses) */

#endif
