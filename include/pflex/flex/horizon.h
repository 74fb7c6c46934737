/* pflex/flex/horizon.h — per-job levers planned over an event's horizon
 * (docs/levers.md).
 *
 * The targets ahead are known; each job has levers (caps at a few levels
 * of its curve, pause, checkpoint-and-stop, resize to fewer GPUs) and a
 * contract (a loss budget over the event, a per-period floor, the levers
 * it allows, a longest pause).  The plan picks one option per job and
 * period so that every period's power meets its limit, every contract is
 * kept, and the weighted progress lost is least: a mixed-integer program
 * solved through GLPK (branch and cut, its own), whose LP relaxation is
 * the bound the plan is judged against.
 *
 * Power, as the controller's guarantee counts it: a job running at a cap
 * level counts cap x GPUs (a GPU under a cap draws at most the cap); a
 * paused job its GPUs at idle; a stopped one nothing; a resized one its
 * remaining GPUs at its largest cap (the freed ones are stopped).  A
 * checkpoint (leaving a running size: stop or resize) draws the job's
 * GPUs at idle in the period it is taken, on top of the option's power.
 *
 * Progress lost, in weight x GPU x s: (1 - T/T0) x GPUs x dt per period;
 * a checkpoint costs ckpt_s and a restart restart_s at the full rate;
 * a plan that ends the horizon stopped or resized pays the return to the
 * full size (checkpoint and restart) in the last period.
 *
 * The limit gives way, when no plan keeps every contract under it: each
 * period has an excess (W over the limit), priced far above any progress,
 * so the plan first makes the summed excess x dt least, then the loss.
 * Periods with an excess are counted apart by the caller.
 *
 * Ownership: the problem and everything it points to are the caller's;
 * a plan owns its arrays (pflex_horizon_plan_fini).
 */
#ifndef PFLEX_HORIZON_H
#define PFLEX_HORIZON_H

#include <stddef.h>
#include "pflex/util/error.h"

/* Levers, a bit each. */
#define PFLEX_LEVER_CAP    1u
#define PFLEX_LEVER_PAUSE  2u
#define PFLEX_LEVER_STOP   4u
#define PFLEX_LEVER_RESIZE 8u
#define PFLEX_LEVER_ALL    15u

/* "cap,pause,stop,resize" (any subset, or "all"/"cap"); -1 when a name
 * is unknown. */
int pflex_lever_parse(const char *s, unsigned *out);

/* Most cap levels and resize sizes a job offers the planner. */
#define PFLEX_HORIZON_MAX_LEVELS 8
#define PFLEX_HORIZON_MAX_SIZES 4

/* A vertex of a job's curve as the planner reads it.  A running job's
 * cap is any watt between the last vertex's and the first's; its T/T0 is
 * planned as the least of the segments' lines (vertex l to l + 1), each
 * lowered by its dip: the most the chord rises over the measured curve
 * between the two, so that the plan never counts more than the truth. */
struct pflex_horizon_level {
    double cap_w;               /* the cap, W (levels[0]: the largest) */
    double fraction;            /* T/T0 under it, (0, 1] */
    double dip;                 /* the segment to the next vertex: its chord's most over
                                 * the curve, >= 0 (the last vertex's: unused) */
};

/* The option a job is in over a period. */
enum pflex_horizon_what {
    PFLEX_HZ_CAP,               /* running under a cap */
    PFLEX_HZ_PAUSE,             /* its GPUs held at idle, no progress */
    PFLEX_HZ_STOP,              /* checkpointed and stopped: no power */
    PFLEX_HZ_RESIZE,            /* restarted on fewer GPUs at its largest cap */
};

/* The size class a job is in: full (caps, pause), stopped, or resized. */
struct pflex_horizon_job {
    int gpus;                   /* >= 1 */
    double weight;              /* >= 0 */
    size_t nlevels;             /* 1..PFLEX_HORIZON_MAX_LEVELS, caps descending */
    struct pflex_horizon_level levels[PFLEX_HORIZON_MAX_LEVELS];
    double idle_w;              /* a paused or checkpointing GPU's draw, W */
    unsigned levers;            /* PFLEX_LEVER_* allowed (without CAP: the largest cap only) */
    double loss_budget;         /* the contract: progress lost over the event at most this
                                 * share of its progress there; NaN: none */
    double floor;               /* per-period T/T0 floor while a limit is in force; 0: none.
                                 * With one, caps only (a pause, a stop, and a resize's
                                 * checkpoint and restart take a period under it) */
    double max_pause_s;         /* a pause lasts at most this long; INFINITY: no bound */
    double ckpt_s, restart_s;   /* checkpoint and restart, s */
    size_t nsizes;              /* resize GPU counts offered, each < gpus, descending */
    int sizes[PFLEX_HORIZON_MAX_SIZES];
    double resize_eff;          /* T/T0 on g GPUs = resize_eff x g / gpus */
    /* where the job stands when the plan starts (a re-plan) */
    double event_s;             /* the event's whole length the budget is over, s */
    double lost_s;              /* progress lost so far in the event, T/T0 x s */
    enum pflex_horizon_what state;  /* option class in force before period 0 */
    int state_gpus;             /* its GPUs there (RESIZE) */
    double paused_s;            /* how long it has been paused up to period 0 */
};

struct pflex_horizon_problem {
    size_t njobs, nperiods;
    const struct pflex_horizon_job *jobs;
    const double *dt_s;         /* per period, > 0 */
    const double *limit_w;      /* per period; INFINITY: none */
    double other_w;             /* non-GPU power counted against every limit, W */
    int relax;                  /* 1: the LP relaxation only (bound, no plan) */
    double mip_gap;             /* relative gap the search stops at; <= 0: 1e-4 */
    double time_limit_s;        /* the search's time; <= 0: 10 s */
    int deepest;                /* 1: ignore limit_w where finite and find the least
                                 * constant limit those periods can all share (deepest_w) */
};

struct pflex_horizon_choice {
    enum pflex_horizon_what what;
    double cap_w;               /* CAP: the cap (in mW, rounded down); RESIZE: the largest */
    double fraction;            /* T/T0 planned (RESIZE: resize_eff x g / gpus) */
    int gpus;                   /* GPUs running (0: paused or stopped) */
};

struct pflex_horizon_plan {
    size_t njobs, nperiods;
    struct pflex_horizon_choice *x;     /* [j * nperiods + t] */
    double *power_w;            /* per period, the plan's power as the guarantee counts it */
    double *excess_w;           /* per period, W the limit gave way by (0: met) */
    double lost;                /* the plan's progress lost, weight x GPU x s */
    double bound;               /* the LP relaxation's (the least any plan can lose) */
    double total;               /* weight x GPU x s of the horizon at full rate */
    double deepest_w;           /* deepest: the least constant limit, W */
    int optimal;                /* 1: the search closed its gap (within mip_gap) */
    double solve_s;             /* CPU time of the solve (this thread), s: a shared machine stretches wall time */
    size_t rows, cols, ints;    /* the program's size */
};

/* Plan (or with relax, bound) the horizon.  0, or -1 with err (a job
 * malformed, no periods, GLPK failing to find any plan, out of memory). */
int pflex_horizon_solve(const struct pflex_horizon_problem *p, struct pflex_horizon_plan *out,
                        pflex_error_t *err);
void pflex_horizon_plan_fini(struct pflex_horizon_plan *pl);

/* Up to nmax vertices of a curve (n points, caps descending, T/T0 per
 * point): the points of its upper concave hull of T/T0 over cap (no other
 * point buys more per watt), thinned evenly, the largest and the least cap
 * kept, each segment's dip measured on the n points.  Returns the
 * vertices written (0: n or nmax 0, or out of memory). */
size_t pflex_horizon_levels(const double *cap_w, const double *fraction, size_t n, size_t nmax,
                            struct pflex_horizon_level *out);

#endif
