/* pflex/capplan.h — a plan of per-job GPU caps, the jobs[] of 'pflex
 * allocate --json' (job, cap_w, gpus), read and checked.  It is put into
 * force on one node through the limit guard (pflex/capapply.h) or through
 * the node's agent (pflex/capagent.h).
 */
#ifndef PFLEX_CAPPLAN_H
#define PFLEX_CAPPLAN_H

#include <stddef.h>
#include <jansson.h>
#include "pflex/error.h"

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

#endif
