/* pflex/capplan.h — a plan of per-job GPU caps ('pflex allocate --json'),
 * read and put into force on one node: through the limit guard on this
 * node's GPUs (pflex/guard.h), or through the node's agent over HTTP.
 *
 *   io/capplan.c         reading the plan (its jobs[]: job, cap_w, gpus)
 *   hw/capplan_local.c   placing its caps on this node's GPUs, checking them
 *                        against each GPU's range, setting them through a guard
 *   net/capplan_agent.c  sending it to an agent (GET /v1/jobs, PUT /v1/caps)
 *
 * What took is reported as JSON arrays, the document `pflex apply --json`
 * prints: applied [{job, gpu, uuid, cap_w, enforced_w, lease_s}] (the limit
 * each GPU enforces, read back) and skipped [{job, reason}].
 */
#ifndef PFLEX_CAPPLAN_H
#define PFLEX_CAPPLAN_H

#include <signal.h>
#include <stddef.h>
#include <jansson.h>
#include "pflex/error.h"
#include "pflex/gpu.h"
#include "pflex/guard.h"

/* One job of a plan. */
struct pflex_capplan_job {
    const char *job;        /* its name, owned by the plan */
    double cap_w;           /* its per-GPU cap, W: positive and finite */
    json_t *gpus;           /* a list of GPU indices or UUIDs, owned by the plan;
                             * NULL when the plan gives a count: the job map says */
};

typedef struct pflex_capplan {
    json_t *doc;            /* the whole plan */
    size_t njobs;           /* at least 1 */
    struct pflex_capplan_job *jobs;
} pflex_capplan_t;

/* Read the plan at path ("-": standard input) and check its jobs[].
 * Returns 0 and *out (pflex_capplan_destroy), or -1 with err: the plan's
 * fault ("PATH:LINE:COL: ...", "PATH: jobs[2] (llama): ..."), or out of
 * memory (pflex_error_is_system). */
int pflex_capplan_read_file(const char *path, pflex_capplan_t **out, pflex_error_t *err);

void pflex_capplan_destroy(pflex_capplan_t *p);

/* ---- this node's GPUs, through the limit guard (hw) ---------------- */

#define PFLEX_CAPPLAN_MAX_GPUS 64

/* What pflex_capplan_check returns when a GPU could not be asked (the
 * node's fault, not the plan's). */
#define PFLEX_CAPPLAN_HW (-2)

/* One cap of the plan placed on one GPU of this node. */
struct pflex_capplan_gpu {
    unsigned gpu;           /* index on this node */
    double cap_w;
    const char *job;        /* borrowed from the plan */
};

/* Place the plan's caps on the GPUs of g (an nvml backend, for UUIDs): a
 * job's own gpus list, else its entry in jobmap ({"jobs": {"JOB": [0, 1]}}
 * or {"JOB": [...]}; NULL: none).  A job with neither is appended to
 * skipped as {job, reason}.  Fills out[0..*n) (room for
 * PFLEX_CAPPLAN_MAX_GPUS).  Returns 0, or -1 with err when the plan does
 * not fit this node: a GPU that does not exist, one given to two jobs,
 * more than PFLEX_CAPPLAN_MAX_GPUS. */
int pflex_capplan_place(pflex_gpu_t *g, const pflex_capplan_t *p, const json_t *jobmap,
                        struct pflex_capplan_gpu *out, unsigned *n, json_t *skipped,
                        pflex_error_t *err);

/* Every cap of a[0..n) within its GPU's range, before anything changes.
 * Returns 0; -1 with err when a cap is outside ("job J: cap C W is outside
 * GPU i's range A-B W"); PFLEX_CAPPLAN_HW with err when a GPU's range
 * cannot be read. */
int pflex_capplan_check(pflex_gpu_t *g, const struct pflex_capplan_gpu *a, unsigned n,
                        pflex_error_t *err);

/* Set a[0..n) through gd (open on those GPUs of g), in order, and append
 * to applied what each GPU enforces, with lease_s.  Stops early, with 0,
 * once *stop is nonzero (stop may be NULL).  Returns 0, or -1 with err at
 * the first GPU that failed (the ones before it are in applied). */
int pflex_capplan_set(pflex_guard_t *gd, pflex_gpu_t *g, const struct pflex_capplan_gpu *a,
                      unsigned n, double lease_s, const volatile sig_atomic_t *stop,
                      json_t *applied, pflex_error_t *err);

/* ---- through a node's agent (net) ---------------------------------- */

/* What pflex_capplan_agent_apply returns when the agent refused the plan
 * (HTTP 400): nothing changed. */
#define PFLEX_CAPPLAN_REFUSED (-3)

struct pflex_capplan_report {
    json_t *applied;        /* [{job, gpu, uuid, cap_w, enforced_w, lease_s}] */
    json_t *skipped;        /* [{job, reason}] */
    json_t *errors;         /* [{gpu, error}]: GPUs whose cap failed */
};

void pflex_capplan_report_fini(struct pflex_capplan_report *r);

/* Put the plan into force through the agent at url (no trailing '/'),
 * with bearer token (may be ""), each HTTP call limited to timeout_s, the
 * caps leased for lease_s.  A job with a gpus list is sent as its GPUs;
 * one with a count goes by name when the agent's job map (GET /v1/jobs)
 * has it, else it is skipped.  Returns 0 with *r filled (r->errors may
 * hold GPUs that failed while others took); PFLEX_CAPPLAN_REFUSED with err
 * when the agent refused the plan; -1 with err when the agent could not be
 * asked, or answered with another error: then *r is filled (nothing
 * applied) only when the agent answered, else its arrays are NULL. */
int pflex_capplan_agent_apply(const char *url, const char *token, double timeout_s,
                              double lease_s, const pflex_capplan_t *p,
                              struct pflex_capplan_report *r, pflex_error_t *err);

#endif
