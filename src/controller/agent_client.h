/* agent_client.h — the controller's view of one `pflex agent` (issue 12's
 * HTTP API).  Every assumption about the agent's JSON lives in
 * agent_client.c; nothing else in the controller parses it. */
#ifndef PFLEX_CONTROLLER_AGENT_CLIENT_H
#define PFLEX_CONTROLLER_AGENT_CLIENT_H

#include <stddef.h>
#include "pflex/error.h"

#define AGENT_MAX_GPUS 64
#define AGENT_MAX_JOBS 64

struct agent_gpu {
    int index;                  /* the agent's GPU index */
    char uuid[64];
    double power_w;             /* NaN: no reading */
    double limit_w;             /* enforced limit, W; NaN: unknown */
    double min_w, max_w;        /* settable range, W */
    int ok;                     /* the agent can read and set it */
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

struct agent_cap {
    int gpu;
    double cap_w;
    double enforced_w;          /* filled from the answer; NaN: not confirmed */
};

typedef struct agent_client agent_client_t;

/* url: "http://host:port"; token: bearer token for writes (NULL: none). */
int agent_client_create(const char *url, const char *token, long timeout_ms,
                        agent_client_t **out, pflex_error_t *err);
void agent_client_destroy(agent_client_t *c);
const char *agent_client_url(const agent_client_t *c);

/* GET /v1/status. */
int agent_client_status(agent_client_t *c, struct agent_status *out, pflex_error_t *err);
/* PUT /v1/caps with a lease; each cap's enforced_w from the answer. */
int agent_client_put_caps(agent_client_t *c, struct agent_cap *caps, size_t n, double lease_s,
                          pflex_error_t *err);

/* The parsers, exposed for tests. */
int agent_parse_status(const char *body, size_t len, struct agent_status *out, pflex_error_t *err);
int agent_parse_caps_answer(const char *body, size_t len, struct agent_cap *caps, size_t n,
                            pflex_error_t *err);

#endif
