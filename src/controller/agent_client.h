/* agent_client.h — the controller's view of one `pflex agent` (its
 * HTTP API).  Every assumption about the agent's JSON lives in
 * agent_client.c; nothing else in the controller parses it. */
#ifndef PFLEX_CONTROLLER_AGENT_CLIENT_H
#define PFLEX_CONTROLLER_AGENT_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include "controller/node.h"
#include "pflex/util/error.h"
#include "pflex/net/http.h"

struct agent_cap {
    int gpu;
    double cap_w;
    double enforced_w;          /* filled from the answer; NaN: not confirmed */
    double fallback_w;          /* held from the lease's end until fallback_until
                                 * (unix s); either not above 0 or NaN: none, the
                                 * lapse restores */
    double fallback_until;
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

/* Many agents at once.  The HTTP client for them: timeout_ms per request
 * (<= 0: 2000), parallel requests in flight (0: 64), keep_conns open
 * connections kept from one period to the next (0: parallel), answers of
 * at most 1 MiB. */
int agent_client_http_create(long timeout_ms, unsigned parallel, unsigned keep_conns,
                             const char *ca_file, pflex_http_client_t **out, pflex_error_t *err);
/* The CA bundle (PEM) the one-agent calls check an https:// agent by
 * (copied; NULL: the system's); before the first call. */
int agent_client_set_ca_file(agent_client_t *c, const char *ca_file, pflex_error_t *err);

/* One agent's part of a batch; an entry whose agent is NULL is left alone. */
struct agent_read {
    agent_client_t *agent;
    struct agent_status *out;   /* written only when ok */
    int ok;
    pflex_error_t err;          /* !ok: why, as agent_client_status says it */
};
struct agent_push {
    agent_client_t *agent;
    struct agent_cap *caps;     /* each one's enforced_w from the answer */
    size_t n;
    uint64_t fence;             /* the leader's fencing token, sent as "fence"; 0: none */
    int ok;
    long status;                /* the answer's HTTP status; 0: none (409: a newer
                                 * leader's token was seen) */
    pflex_error_t err;
};
/* GET /v1/status of every entry's agent, all at once over http; returns
 * when all are done.  0, or -1 with err when the batch could not run (every
 * entry then failed with that text); one agent's failure is its entry's. */
int agent_client_status_many(pflex_http_client_t *http, struct agent_read *r, size_t n,
                             pflex_error_t *err);
/* PUT /v1/caps to every entry's agent (its own caps, one lease), the same. */
int agent_client_put_caps_many(pflex_http_client_t *http, struct agent_push *p, size_t n,
                               double lease_s, pflex_error_t *err);

/* The parsers, exposed for tests. */
int agent_parse_status(const char *body, size_t len, struct agent_status *out, pflex_error_t *err);
int agent_parse_caps_answer(const char *body, size_t len, struct agent_cap *caps, size_t n,
                            pflex_error_t *err);

#endif
