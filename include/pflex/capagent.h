/* pflex/capagent.h — a plan of per-job caps (pflex/capplan.h) put into
 * force through a node's agent: its job map (GET /v1/jobs) says which jobs
 * have GPUs there, one PUT /v1/caps sets them with a lease, and its answer
 * says what each GPU enforces.
 */
#ifndef PFLEX_CAPAGENT_H
#define PFLEX_CAPAGENT_H

#include <jansson.h>
#include "pflex/capplan.h"
#include "pflex/error.h"

/* What pflex_capagent_apply returns when the agent refused the plan
 * (HTTP 400): nothing changed. */
#define PFLEX_CAPAGENT_REFUSED (-3)

struct pflex_capagent_report {
    json_t *applied;        /* [{job, gpu, uuid, cap_w, enforced_w, lease_s}] */
    json_t *skipped;        /* [{job, reason}] */
    json_t *errors;         /* [{gpu, error}]: GPUs whose cap failed */
};

void pflex_capagent_report_fini(struct pflex_capagent_report *r);

/* Put the plan into force through the agent at url (no trailing '/'),
 * with bearer token (may be ""), each HTTP call limited to timeout_s, the
 * caps leased for lease_s.  A job with a gpus list is sent as its GPUs;
 * one with a count goes by name when the agent's job map (GET /v1/jobs)
 * has it, else it is skipped.  Returns 0 with *r filled (r->errors may
 * hold GPUs that failed while others took); PFLEX_CAPAGENT_REFUSED with err
 * when the agent refused the plan; -1 with err when the agent could not be
 * asked, or answered with another error: then *r is filled (nothing
 * applied) only when the agent answered, else its arrays are NULL. */
int pflex_capagent_apply(const char *url, const char *token, double timeout_s,
                         double lease_s, const pflex_capplan_t *p,
                         struct pflex_capagent_report *r, pflex_error_t *err);

#endif
