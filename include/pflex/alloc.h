/* pflex/alloc.h — splitting a site power budget between jobs (docs/contract.md §2).
 *
 * The problem: jobs j with n_j GPUs, baseline per-GPU power P0_j (W) and
 * throughput T0_j, weight w_j, service floor s_j and reduction range
 * [0, x_hi_j].  Choose per-GPU power reductions x_j to
 *
 *     maximise  sum_j w_j * T0_j * (1 - L_j(x_j))
 *     s.t.      sum_j n_j * P0_j * (1 - x_j) <= budget_w,
 *               0 <= x_j <= u_j
 *
 * where L_j is the job's measured loss curve and u_j its limit: x_hi_j, and
 * where a floor is set, the largest reduction that keeps the floor.  With
 * PFLEX_OBJECTIVE_PROGRESS, T0_j is replaced by n_j.
 *
 * Policies (what each knows, and its limit u_j):
 *  - EQUAL: the same reduction r for every job, clipped at u_j, the
 *    shortfall spread over the others (water-filling); r meets the budget
 *    exactly.  u_j = min(x_hi_j, (1 - s_j)/(1 - PFI_j)), the floor under
 *    the linear model of PFI.
 *  - PFI: knows PFI_j only; models L^_j(x) = (1 - PFI_j)*x, and is optimal
 *    under that model (a fractional knapsack: jobs cut in order of weighted
 *    loss per watt saved).  Same u_j as EQUAL.
 *  - OPTIMAL: knows the curves.  u_j = min(x_hi_j, x_max_j, shed_j(s_j)).
 *    It solves the problem on the lower convex hulls of the curves (a
 *    fractional knapsack over hull segments, threshold found by weighted
 *    quickselect in expected O(total points)); this is the exact optimum
 *    when every curve is convex.  On a non-convex curve the one job left
 *    inside a hull segment is repaired (moved to a measured point, the
 *    others rebalanced) and plan->gap_bound bounds what is lost against the
 *    true optimum.
 *
 * Ownership: the problem and its jobs belong to the caller and are only
 * read; curve arrays are borrowed.  A plan owns its arrays: init it once,
 * solve into it as often as wanted (buffers grow to the largest problem
 * seen; solving a problem no larger than an earlier one allocates nothing),
 * fini it at the end.
 */
#ifndef PFLEX_ALLOC_H
#define PFLEX_ALLOC_H

#include <stddef.h>
#include "pflex/error.h"

enum pflex_policy {
    PFLEX_POLICY_EQUAL,
    PFLEX_POLICY_PFI,
    PFLEX_POLICY_OPTIMAL,
};

enum pflex_objective {
    PFLEX_OBJECTIVE_THROUGHPUT,     /* w_j * T0_j per unit of (1 - L) */
    PFLEX_OBJECTIVE_PROGRESS,       /* w_j * n_j: GPU-weighted normalised throughput */
};

/* "equal", "pfi", "optimal" and back; -1 / NULL when unknown. */
int pflex_policy_parse(const char *s, enum pflex_policy *out);
const char *pflex_policy_name(enum pflex_policy p);

struct pflex_alloc_job {
    const char *name;       /* borrowed; for messages and output only */
    int gpus;               /* n_j >= 1 */
    unsigned npoints;       /* points of the loss curve below (beside gpus:
                             * a million jobs' array is 8 MB smaller) */
    double p0_w;            /* baseline mean per-GPU power, W (> 0) */
    double t0;              /* baseline throughput, the job's unit (> 0) */
    double cap0_w;          /* the cap in force at baseline, W (kept when x_j = 0) */
    double weight;          /* w_j >= 0 (1 by default) */
    double floor;           /* s_j in [0, 1]; 0 = no floor */
    double x_hi;            /* largest reduction allowed: the measured range or
                             * 1 - P_min/P0 from the hardware minimum cap */
    double pfi;             /* PFI_j for the PFI and EQUAL policies; NaN: computed
                             * from the curve over range 0.30 (docs/contract.md §2) */
    /* The measured loss curve (docs/contract.md §2): npoints >= 1 ascending reductions
     * x[0] = 0 < x[1] < ..., loss[0] = 0.  npoints = 0: no curve (then the
     * PFI model stands in for it, and OPTIMAL refuses the problem). */
    const double *x;
    const double *loss;
};

struct pflex_alloc_problem {
    size_t njobs;
    const struct pflex_alloc_job *jobs;
    double budget_w;                /* B: total GPU power allowed, W */
    enum pflex_objective objective;
};

/* Baseline power sum_j n_j * P0_j, W; budget_w = (1 - F) * this for a cut F. */
double pflex_alloc_baseline_w(const struct pflex_alloc_problem *p);

struct pflex_alloc_plan {
    enum pflex_policy policy;
    double baseline_w;      /* sum n_j P0_j, W */
    double budget_w;        /* the problem's budget, W */
    double power_w;         /* the plan's total GPU power sum n_j P0_j (1 - x_j), W */
    double throughput;      /* sum_j T_j as the policy itself estimates it */
    double objective;       /* the policy's estimate of the objective it maximises */
    int feasible;           /* 0: budget unreachable; every job is at its limit
                             * and power_w is the least power reachable */
    double gap_bound;       /* OPTIMAL: (optimum on the hulls) - (objective on the
                             * curves) >= the true gap, objective units; 0 when
                             * every curve is convex.  0 for other policies. */
    size_t njobs;
    double *x;              /* per job: reduction x_j */
    double *limit;          /* per job: u_j the policy used */
    double *throughput_j;   /* per job: T0_j (1 - L_j(x_j)), the policy's estimate */
    void *priv;             /* scratch; do not touch */
};

void pflex_alloc_plan_init(struct pflex_alloc_plan *plan);
void pflex_alloc_plan_fini(struct pflex_alloc_plan *plan);

/* Solve the problem with a policy into plan.  Returns 0 (also when
 * infeasible: check plan->feasible), or -1 with err set on a malformed
 * problem (a job with gpus < 1, P0 or T0 not positive, a curve out of
 * order, OPTIMAL without curves) or out of memory. */
int pflex_alloc_plan(const struct pflex_alloc_problem *p, enum pflex_policy policy,
                     struct pflex_alloc_plan *plan, pflex_error_t *err);

/* Per-GPU power target P0_j (1 - x_j) and the cap to set, W: the target,
 * or the job's current cap cap0_w when x_j = 0. */
double pflex_alloc_power_w(const struct pflex_alloc_job *j, double x);
double pflex_alloc_cap_w(const struct pflex_alloc_job *j, double x);

/* L_j(x) on the measured curve (linear interpolation, clipped to the
 * curve's range); the PFI model (1 - PFI_j) x where there is no curve. */
double pflex_alloc_loss(const struct pflex_alloc_job *j, double x);

/* A plan scored on the measured curves (docs/contract.md §2 "Evaluation"). */
struct pflex_alloc_score {
    double throughput;      /* sum_j T0_j (1 - L_j(x_j)) */
    double objective;       /* sum_j w_j a_j (1 - L_j(x_j)), a_j = T0_j or n_j */
    double power_w;         /* sum_j n_j P0_j (1 - x_j), W */
    int sla_violations;     /* jobs with T_j < s_j T0_j (1e-9 relative slack) */
};

/* Score reductions x[] (one per job) on the measured curves.  Fails when a
 * job has no curve. */
int pflex_alloc_score(const struct pflex_alloc_problem *p, const double *x,
                      struct pflex_alloc_score *out, pflex_error_t *err);

/* All three policies planned and scored on the measured curves. */
struct pflex_alloc_comparison {
    struct pflex_alloc_score score[3];  /* indexed by enum pflex_policy */
    int feasible[3];
    double gap_bound;                   /* OPTIMAL's */
    /* (T_pfi - T_equal) / (T_optimal - T_equal) on the objective; NaN when
     * optimal does not beat equal (no gap to recover). */
    double gap_recovered;
    double per_job_recovered;           /* (T_pfi - T_equal) / njobs, throughput units */
};

/* Plan the problem with EQUAL, PFI and OPTIMAL and score each.  Every job
 * needs a curve.  Returns 0 or -1 with err set. */
int pflex_alloc_compare(const struct pflex_alloc_problem *p,
                        struct pflex_alloc_comparison *out, pflex_error_t *err);

/* Reading a problem from files: what `pflex allocate` and `pflex evaluate`
 * read.  Jobs come from a sweep (one per sweep job, or one per row of a
 * jobs file that names a sweep job's curve), or from a PFI CSV alone.
 *
 *  - sweep: P0, T0, the baseline cap and the curve of each job; x_hi is the
 *    curve's x_max; floor, tier, weight and gpus columns are used.
 *  - jobs file (CSV: job, curve, gpus, optional tier, floor, weight): each
 *    row is a job running the named sweep job's curve (its per-GPU power,
 *    baseline throughput and loss curve, unscaled) on its own GPU count.
 *  - PFI CSV: with a sweep, each job's PFI (by job name, else by curve
 *    name) replaces the one measured on its curve; every job needs a row.
 *    Alone, it gives jobs without curves; their range x_hi is the hardware
 *    minimum cap 1 - P_min/P0 where the gpu column names a known GPU kind,
 *    else the PFI's own range (0.30 where the file has none).
 *  - floor: the default for jobs that set none (NaN: no default).
 * A job's own floor, from a floor or tier column, wins over the default. */
struct pflex_alloc_source {
    const char *sweep_path;     /* NULL: the PFI file alone; "-": stdin */
    const char *columns;        /* --columns for the sweep, or NULL */
    const char *pfi_path;       /* NULL: PFIs measured on the curves */
    const char *jobs_path;      /* NULL: one job per sweep job */
    double floor;               /* default floor, NaN for none */
};

typedef struct pflex_alloc_input {
    size_t njobs;
    struct pflex_alloc_job *jobs;
    int has_curves;             /* every job has a measured curve */
    void *priv;                 /* storage; do not touch */
} pflex_alloc_input_t;

/* Returns 0 and *out (free with pflex_alloc_input_destroy), or -1 with err
 * set as "file:line: what is wrong". */
int pflex_alloc_input_read(const struct pflex_alloc_source *src, pflex_alloc_input_t **out,
                           pflex_error_t *err);
void pflex_alloc_input_destroy(pflex_alloc_input_t *in);

#endif
