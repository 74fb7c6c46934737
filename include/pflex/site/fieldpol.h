/* pflex/site/fieldpol.h — the May 2025 field demonstration's four
 * policies, as baselines for the levers' simulation (docs/levers.md,
 * "The four baselines").
 *
 * Each plans a whole event ahead from the jobs' curves and flexibility
 * (the contract's loss budget; a job's least throughput in every period
 * is 1 - flexibility, as the demonstration derived it for a single-level
 * event) and writes one choice per job and period.  They plan to the
 * same limit, in the same power terms as the planner (a cap counts cap x
 * GPUs, a pause the GPUs at idle, a stop nothing); where one cannot meet
 * a period's limit it writes its closest plan and the caller counts the
 * period over.  They never break a contract on their own model: a lever
 * a job's contract does not allow is not used on it.
 */
#ifndef PFLEX_FIELDPOL_H
#define PFLEX_FIELDPOL_H

#include <stddef.h>
#include "pflex/flex/horizon.h"
#include "pflex/site/simulate.h"

enum pflex_fieldpol {
    PFLEX_FIELD_DVFS_FAIR,          /* caps: an equal share of every job's headroom */
    PFLEX_FIELD_DVFS_PAUSE_FAIR,    /* staggered pauses of a set of jobs, caps on the rest */
    PFLEX_FIELD_PAUSE_GREEDY,       /* the most flexible job paused for its allowance */
    PFLEX_FIELD_PAUSE_RESIZE_FAIR,  /* whole-event stops, GPU counts cut fairly */
    PFLEX_FIELD_N
};

/* "field-dvfs", "field-dvfs-pause", "field-pause", "field-resize". */
const char *pflex_fieldpol_name(enum pflex_fieldpol p);

/* A job as the baselines see it: its planner job (GPUs, levers, costs,
 * loss budget; state and levels unused) and its whole curve. */
struct pflex_fieldpol_job {
    const struct pflex_horizon_job *hz;
    const struct pflex_sim_kind *kind;
    int node_gpus;                  /* resize step (GPUs per node), >= 1 */
};

/* Plan policy p over nperiods (dt_s, limit_w each; other_w counted
 * against every limit) into x[j * nperiods + t].  0, or -1 with err (out
 * of memory). */
int pflex_fieldpol_plan(enum pflex_fieldpol p, size_t njobs, const struct pflex_fieldpol_job *jobs,
                        size_t nperiods, const double *dt_s, const double *limit_w, double other_w,
                        struct pflex_horizon_choice *x, pflex_error_t *err);

#endif
