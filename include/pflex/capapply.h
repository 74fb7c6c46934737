/* pflex/capapply.h — a plan of per-job caps (pflex/capplan.h) put into
 * force on this node's GPUs through the limit guard (pflex/guard.h): placed
 * on GPUs, checked against their ranges before anything changes, then set.
 * What took is appended to a JSON array, as `pflex apply --json` prints it:
 * [{job, gpu, uuid, cap_w, enforced_w, lease_s}], the limit each GPU
 * enforces read back.
 */
#ifndef PFLEX_CAPAPPLY_H
#define PFLEX_CAPAPPLY_H

#include <signal.h>
#include <jansson.h>
#include "pflex/capplan.h"
#include "pflex/error.h"
#include "pflex/gpu.h"
#include "pflex/guard.h"

#define PFLEX_CAPAPPLY_MAX_GPUS 64

/* What pflex_capapply_check returns when a GPU could not be asked (the
 * node's fault, not the plan's). */
#define PFLEX_CAPAPPLY_HW (-2)

/* One cap of the plan placed on one GPU of this node. */
struct pflex_capapply_gpu {
    unsigned gpu;           /* index on this node */
    double cap_w;
    const char *job;        /* borrowed from the plan */
};

/* Place the plan's caps on the GPUs of g (an nvml backend, for UUIDs): a
 * job's own gpus list, else its entry in jobmap ({"jobs": {"JOB": [0, 1]}}
 * or {"JOB": [...]}; NULL: none).  A job with neither is appended to
 * skipped as {job, reason}.  Fills out[0..*n) (room for
 * PFLEX_CAPAPPLY_MAX_GPUS).  Returns 0, or -1 with err when the plan does
 * not fit this node: a GPU that does not exist, one given to two jobs,
 * more than PFLEX_CAPAPPLY_MAX_GPUS. */
int pflex_capapply_place(pflex_gpu_t *g, const pflex_capplan_t *p, const json_t *jobmap,
                         struct pflex_capapply_gpu *out, unsigned *n, json_t *skipped,
                         pflex_error_t *err);

/* Every cap of a[0..n) within its GPU's range, before anything changes.
 * Returns 0; -1 with err when a cap is outside ("job J: cap C W is outside
 * GPU i's range A-B W"); PFLEX_CAPAPPLY_HW with err when a GPU's range
 * cannot be read. */
int pflex_capapply_check(pflex_gpu_t *g, const struct pflex_capapply_gpu *a, unsigned n,
                         pflex_error_t *err);

/* Set a[0..n) through gd (open on those GPUs of g), in order, and append
 * to applied what each GPU enforces, with lease_s.  Stops early, with 0,
 * once *stop is nonzero (stop may be NULL).  Returns 0, or -1 with err at
 * the first GPU that failed (the ones before it are in applied). */
int pflex_capapply_set(pflex_guard_t *gd, pflex_gpu_t *g, const struct pflex_capapply_gpu *a,
                       unsigned n, double lease_s, const volatile sig_atomic_t *stop,
                       json_t *applied, pflex_error_t *err);

#endif
