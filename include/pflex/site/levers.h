/* pflex/site/levers.h — a grid event run with levers beyond caps, every
 * policy side by side (docs/levers.md).
 *
 * The event: the periods (of period_s, from start_s) whose limit is
 * finite, from the first to the last (pflex_target_limit_min_w over each
 * period: a plan holds for the whole period).  Before and after it every
 * job runs at its largest cap, so nothing is lost there and the run is
 * the event's periods only.
 *
 * Policies, on the same jobs, limit and noise:
 *  - the four field baselines (pflex/site/fieldpol.h), planned once;
 *  - plan: pflex's planner (pflex/flex/horizon.h) again at every period
 *    over the rest of the event, from what it has read: each job's
 *    progress so far as read (the truth times 1 + e, e normal with sd
 *    noise_tput, from (seed, period, job)), its contract's budget less a
 *    margin of z sd of the reading's sum; the period's choice then takes
 *    the watts the levels leave under the limit (caps raised a watt per
 *    GPU at a time where it wins most);
 *  - oracle: the same program once over the whole event on the truth,
 *    searched longer, then filled the same way.
 * The LP relaxation of the oracle's program is the bound (progress no
 * plan of those levers and levels can beat).
 *
 * Scores on the truth (the curves): progress, weight x GPUs x T/T0 x s
 * over the event; a period is over where the plan's power (the guarantee:
 * caps x GPUs, idle for a pause, a checkpoint's idle on top) exceeds its
 * limit; over a feasible limit where the planner's program met it (no
 * excess); a contract is kept when the job's truth loss over the event is
 * within its budget and no period under its floor.
 */
#ifndef PFLEX_LEVERS_H
#define PFLEX_LEVERS_H

#include <stddef.h>
#include <stdint.h>
#include "pflex/flex/horizon.h"
#include "pflex/flex/target.h"
#include "pflex/site/fieldpol.h"
#include "pflex/site/simulate.h"

enum pflex_levers_policy {
    PFLEX_LV_FIELD_DVFS = PFLEX_FIELD_DVFS_FAIR,
    PFLEX_LV_FIELD_DVFS_PAUSE = PFLEX_FIELD_DVFS_PAUSE_FAIR,
    PFLEX_LV_FIELD_PAUSE = PFLEX_FIELD_PAUSE_GREEDY,
    PFLEX_LV_FIELD_RESIZE = PFLEX_FIELD_PAUSE_RESIZE_FAIR,
    PFLEX_LV_PLAN,
    PFLEX_LV_ORACLE,
    PFLEX_LV_NPOL
};
/* the four field names, "plan", "oracle" */
const char *pflex_levers_policy_name(enum pflex_levers_policy p);

struct pflex_levers_job {
    const char *name;                   /* borrowed */
    const struct pflex_sim_kind *kind;  /* its curve (smooth, caps descending) */
    struct pflex_horizon_job hz;        /* GPUs, weight, levers, contract, costs, idle, sizes;
                                         * levels, event_s and state are the engine's */
    int node_gpus;                      /* resize step */
};

struct pflex_levers_config {
    size_t njobs;
    const struct pflex_levers_job *jobs;
    double start_s, duration_s, period_s;
    const pflex_target_set_t *targets;
    double baseline_w;          /* what fractions are of, W */
    double other_w;
    double noise_tput, z;       /* reading noise (sd), the planner's margin in sd */
    uint64_t seed;
    size_t nlevels;             /* cap levels a job offers the planner; 0: 6 */
    double plan_time_s;         /* a re-plan's search time; <= 0: 2 s */
    double oracle_time_s;       /* the oracle's; <= 0: 30 s */
    double mip_gap;             /* <= 0: 1e-3 (the oracle: a tenth of it) */
    int deepest;                /* 1: every event period's limit replaced by the deepest
                                 * constant limit the contracts allow (found first) */
    unsigned policies;          /* bit p: run; 0: all */
};

struct pflex_levers_summary {
    int ran;
    double progress_s;          /* weight x GPUs x T/T0 x s over the event (truth) */
    double lost_pct;            /* progress lost, % of the site's over the event */
    double vs_plan_pct;         /* the plan's progress less this one's, % of the site's */
    double vs_bound_pct;        /* the bound's progress less this one's, % of the site's */
    size_t periods_over;        /* periods the plan's power exceeded the limit */
    size_t periods_over_feasible;   /* of them, where the planner's program met it */
    double max_over_w;
    size_t contracts_kept, contracts_broken;
    size_t floor_breaches;      /* job-periods under a per-period floor */
    double worst_budget_use;    /* the most any job used of its loss budget (1: all) */
    size_t pauses, stops, resizes;  /* entries into each lever, summed over jobs */
    size_t plans;
    double plan_s_max, plan_s_mean; /* CPU time of a (re-)plan, s */
    double energy_kwh;          /* the power drawn (truth) over the event */
    double *job_loss;           /* per job: loss over the event, a share of its progress */
};

struct pflex_levers_result {
    size_t nperiods;            /* the event's periods */
    double event_start_s, event_s, period_s;
    double site_progress_s;     /* every job at its largest cap over the event */
    double bound_progress_s;    /* the LP bound's */
    double deepest_w, deepest_frac;     /* deepest: the limit found (W, share of baseline) */
    size_t periods_gave_way;    /* periods whose limit no plan within contracts meets */
    double gave_way_max_w;      /* the most the limit gave way by, W */
    size_t oracle_rows, oracle_cols, oracle_ints;
    int oracle_optimal;
    double oracle_gap_pct;      /* the oracle's progress short of the bound, % of the site's */
    struct pflex_levers_summary pol[PFLEX_LV_NPOL];
    double *limit_w;            /* per period */
    double *power_w[PFLEX_LV_NPOL];     /* per period, the plan's power (guarantee) */
    struct pflex_horizon_choice *x[PFLEX_LV_NPOL];  /* [j * nperiods + t] */
};

/* 0, or -1 with err (no event in the span, a job malformed, the solver
 * failing, out of memory). */
int pflex_levers_run(const struct pflex_levers_config *c, struct pflex_levers_result *out, pflex_error_t *err);
void pflex_levers_result_fini(struct pflex_levers_result *r, size_t njobs);

#endif
