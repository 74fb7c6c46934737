/* pflex/flex/alloc.h — splitting a site power budget between jobs (docs/contract.md §2).
 *
 * The problem: jobs j with n_j GPUs, baseline per-GPU power P0_j (W) and
 * throughput T0_j, weight w_j, service floor s_j and reduction range
 * [0, x_hi_j].  Choose per-GPU power reductions x_j to
 *
 *     maximise  sum_j w_j * T0_j * (1 - L_j(x_j))
 *     s.t.      sum_j n_j * P0_j * (1 - x_j) <= budget_w,
 *               0 <= x_j <= u_j
 *
 * where L_j is the job's measured loss curve and u_j its limit.  With
 * PFLEX_OBJECTIVE_PROGRESS, T0_j is replaced by n_j.
 *
 * Policies (what each knows, and its limit u_j; PFI is the study's ratio
 * PFI, x/L, measured on the curve where the job gives none; a job without
 * one, or with PFI <= 0, counts as PFI = 1):
 *  - OPTIMAL: knows the curves.  u_j = min(x_hi_j, x_max_j, shed_j(s_j)).
 *    It solves the problem on the lower convex hulls of the curves (a
 *    fractional knapsack over hull segments, threshold found by weighted
 *    quickselect in expected O(total points)); this is the exact optimum
 *    when every curve is convex.  On a non-convex curve the one job left
 *    inside a hull segment is repaired (moved to a measured point, the
 *    others rebalanced) and plan->gap_bound bounds what is lost against the
 *    true optimum.
 *  - EQUAL: the same reduction r for every job, water-filled at u_j (a job
 *    at its limit stays there, the shortfall is spread over the others); r
 *    meets the budget exactly.
 *  - PROPORTIONAL: each job's cut in W proportional to n_j P0_j c_j with c_j
 *    the problem's rate_by column, i.e. x_j = min(k c_j, u_j), k meeting
 *    the budget (EQUAL is c_j = 1).
 *    EQUAL and PROPORTIONAL see the floors through the curve where the job
 *    has one: u_j = min(x_hi_j, x_max_j, shed_j(s_j)); without a curve,
 *    through the PFI model as below.
 *  - PFI_WEIGHTED (the study's Eq. 2): each job's cut in W proportional to
 *    (n_j P0_j / T0_j) PFI_j, i.e. x_j = min(k PFI_j / T0_j, u_j) (progress
 *    objective: T0_j replaced by n_j).
 *  - PFI: models L^_j(x) = x / PFI_j and is optimal under that model (a
 *    fractional knapsack: jobs cut in order of weighted modelled loss per
 *    watt saved).
 *    PFI_WEIGHTED and PFI know only PFI: u_j = min(x_hi_j, x_max_j,
 *    PFI_j (1 - s_j)), the floor under their model; the measured curve may
 *    break it, and the plan says so (floor_violations).
 *
 * A plan is also scored on the measured curves where they exist
 * (measured_throughput, floor_violations; per job
 * pflex_alloc_measured_fraction and pflex_alloc_floor_violated).
 *
 * The cap to set (pflex_alloc_cap): the job keeps cap0_w when x_j = 0;
 * otherwise the cap that drew the target on the job's own measured (cap,
 * power) points, by linear interpolation, or the target itself where there
 * are none; clamped to the settable range [cap_min_w, cap_max_w] (both in
 * struct pflex_alloc_capinfo).
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
#include "pflex/io/sweep.h"
#include "pflex/util/error.h"

enum pflex_policy {
    PFLEX_POLICY_EQUAL,
    PFLEX_POLICY_PFI,
    PFLEX_POLICY_OPTIMAL,
    PFLEX_POLICY_PFI_WEIGHTED,
    PFLEX_POLICY_PROPORTIONAL,
    PFLEX_POLICY_COUNT
};

enum pflex_objective {
    PFLEX_OBJECTIVE_THROUGHPUT,     /* w_j * T0_j per unit of (1 - L) */
    PFLEX_OBJECTIVE_PROGRESS,       /* w_j * n_j: GPU-weighted normalised throughput */
};

/* "equal", "pfi", "optimal", "pfi-weighted", "proportional" and back;
 * -1 / NULL when unknown. */
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
    double x_hi;            /* largest reduction allowed: the measured range, up to
                             * where the cap reaches the hardware minimum
                             * (pflex_alloc_cap_x_hi), or 1 - P_min/P0 */
    double pfi;             /* ratio PFI_j for PFI and PFI_WEIGHTED; NaN: measured
                             * on the curve (pflex_pfi_ratio_xl), else 1 */
    /* The measured loss curve (docs/contract.md §2): npoints >= 1 ascending reductions
     * x[0] = 0 < x[1] < ..., loss[0] = 0.  npoints = 0: no curve (then the
     * PFI model stands in for it, and OPTIMAL refuses the problem). */
    const double *x;
    const double *loss;
};

/* What setting a job's cap needs beyond its plan, kept apart from the job
 * (the planner never reads it, and a million jobs plan faster without it). */
struct pflex_alloc_capinfo {
    /* Per point of the job's curve, the cap it was measured at, W (cap_w[0]:
     * the lowest cap that does not bind above every binding one); NULL: the
     * cap to set is the power target. */
    const double *cap_w;
    double cap_min_w, cap_max_w;    /* settable cap range, W; 0: not known */
};

struct pflex_alloc_problem {
    size_t njobs;
    const struct pflex_alloc_job *jobs;
    double budget_w;                /* B: total GPU power allowed, W */
    enum pflex_objective objective;
    const double *rate_by;          /* PROPORTIONAL's c_j, one per job (>= 0);
                                     * NULL: 1 for every job */
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
    /* The plan on the measured curves (jobs without a curve: as estimated). */
    int measured;           /* every job has a curve: the two below are measured */
    double measured_throughput;     /* sum_j T0_j (1 - L_j(x_j)) */
    double measured_objective;      /* sum_j w_j a_j (1 - L_j(x_j)), a_j = T0_j or n_j */
    int floor_violations;   /* jobs with a curve whose measured throughput is under s_j T0_j */
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

/* Per-GPU power target P0_j (1 - x_j), W. */
double pflex_alloc_power_w(const struct pflex_alloc_job *j, double x);

/* The cap to set for reduction x (see the top of this header). */
struct pflex_alloc_cap {
    double cap_w;           /* the cap to set, W, within the settable range */
    double wanted_w;        /* the cap before clamping, W */
    int clamped;            /* wanted_w was outside [cap_min_w, cap_max_w] */
    int kept;               /* x = 0: the job keeps cap0_w */
};
/* ci may be NULL: no measured caps and no known range. */
void pflex_alloc_cap(const struct pflex_alloc_job *j, const struct pflex_alloc_capinfo *ci,
                     double x, struct pflex_alloc_cap *out);
double pflex_alloc_cap_w(const struct pflex_alloc_job *j, const struct pflex_alloc_capinfo *ci,
                         double x);
/* j->x_hi, shortened to where the cap to set would leave the settable
 * range: the first reduction at which the cap interpolated over ci->cap_w
 * (or, without them, the target P0 (1 - x)) reaches ci->cap_min_w; 0 when
 * even the smallest cut's cap is under it.  Unchanged where cap_min_w is
 * not known or is never reached.  A problem whose jobs have this x_hi
 * plans only caps the GPU accepts, so the power it counts is the power the
 * caps draw (pflex_alloc_input_read sets it). */
double pflex_alloc_cap_x_hi(const struct pflex_alloc_job *j, const struct pflex_alloc_capinfo *ci);

/* 1 - L_j(x) on the job's measured curve, NaN without one; and whether that
 * falls under the job's floor (1e-9 relative slack; 0 without a curve). */
double pflex_alloc_measured_fraction(const struct pflex_alloc_job *j, double x);
int pflex_alloc_floor_violated(const struct pflex_alloc_job *j, double x);

/* The PFI a PFI-only policy uses for job j: PFI_j, else the ratio PFI of
 * its curve, else 1; 1 where that is <= 0 or not finite. */
double pflex_alloc_job_pfi(const struct pflex_alloc_job *j);

/* L_j(x) on the measured curve (linear interpolation, clipped to the
 * curve's range); the PFI model x / PFI_j where there is no curve. */
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

/* The policies planned and scored on the measured curves.  Indexed by
 * enum pflex_policy; PROPORTIONAL only when the problem has rate_by (else
 * ran[PROPORTIONAL] = 0). */
struct pflex_alloc_comparison {
    int ran[PFLEX_POLICY_COUNT];
    struct pflex_alloc_score score[PFLEX_POLICY_COUNT];
    int feasible[PFLEX_POLICY_COUNT];
    double gap_bound;                   /* OPTIMAL's */
    /* (T_p - T_equal) / (T_optimal - T_equal) on the objective; NaN where the
     * gap is not meaningful (pflex_alloc_gap_recovered). */
    double gap_recovered[PFLEX_POLICY_COUNT];
    double per_job_recovered[PFLEX_POLICY_COUNT];  /* (T_p - T_equal) / njobs, throughput */
};

/* The least equal-to-optimal gap, % of the site's uncapped objective, for
 * which pflex evaluate and pflex simulate give a share of it (the gap
 * recovered): on measured curves the gap is 0.1-3 % of the site's, and
 * under 1 % its share swings on differences inside the readings' noise. */
#define PFLEX_GAP_MIN_PCT_OF_SITE 1.0

/* (tp - te) / (to - te), or NaN when optimal does not beat equal by more
 * than rounding (to - te <= 1e-6 |to|). */
double pflex_alloc_gap_recovered(double te, double tp, double to);

/* Plan the problem with every policy and score each.  Every job needs a
 * curve.  Returns 0 or -1 with err set. */
int pflex_alloc_compare(const struct pflex_alloc_problem *p,
                        struct pflex_alloc_comparison *out, pflex_error_t *err);

/* Reading a problem from files: what `pflex allocate` and `pflex evaluate`
 * read.  Jobs come from a sweep (one per sweep job, or one per row of a
 * jobs file that names a sweep job's curve), or from a PFI CSV alone.
 *
 *  - sweep: P0, T0, the baseline cap and the curve of each job, with the
 *    cap of each point; x_hi is the curve's x_max, shortened by
 *    pflex_alloc_cap_x_hi to where the cap reaches the GPU kind's minimum
 *    (so planned caps need no clamping); floor, tier, weight and
 *    gpus columns are used; the settable cap range is the gpu column's GPU
 *    kind's (pflex/util/gpukind.h), else the measured caps'.
 *  - jobs file (CSV: job, curve, gpus, optional tier, floor, weight): each
 *    row is a job running the named sweep job's curve (its per-GPU power,
 *    baseline throughput and loss curve, unscaled) on its own GPU count.
 *  - PFI CSV: with a sweep, each job's PFI (by job name, else by curve
 *    name) replaces the one measured on its curve; every job needs a row.
 *    Alone, it gives jobs without curves; their range x_hi is the hardware
 *    minimum cap 1 - P_min/P0 where the gpu column names a known GPU kind
 *    (whose range is then the settable one), else the file's range column,
 *    else 0.30; cap_w is the cap kept when a job is not cut.
 *  - by: a column for PROPORTIONAL's c_j: "weight", "gpus", a telemetry
 *    column of the sweep at the baseline cap ("dram_active", ...), or
 *    "dram_copy" = dram_active x mem_copy_util / 100 there; otherwise a
 *    column of the jobs file or the PFI CSV by that name.
 *  - floor: the default for jobs that set none (NaN: no default).
 * A job's own floor, from a floor or tier column, wins over the default.
 *
 * Curves are built on the monotone fit of each sweep job's points
 * (pflex_curve_fit_points: power, then throughput, non-decreasing in the
 * cap); a job whose fitted draw never falls with its cap is flat at its
 * draw, and cut below it on the proportional model down to its GPU kind's
 * lowest cap where the gpu column names a known kind
 * (pflex_curve_flat_below).  A sweep job whose curve cannot be built (a
 * baseline throughput or power that is not positive) is skipped with a
 * warning, "file:line: job 'X': why; skipped", unless strict, where it
 * fails the reading as before. */
struct pflex_alloc_source {
    const char *sweep_path;     /* NULL: the PFI file alone; "-": stdin */
    const char *columns;        /* --columns for the sweep, or NULL */
    const char *pfi_path;       /* NULL: PFIs measured on the curves */
    const char *jobs_path;      /* NULL: one job per sweep job */
    double floor;               /* default floor, NaN for none */
    const char *by;             /* PROPORTIONAL's column, or NULL */
    int strict;                 /* a bad sweep job fails the reading (else: skipped) */
};

/* The fitted jobs whose points pflex_alloc_input_t keeps: enough to show,
 * and a million-job noisy sweep is not read into twice its memory. */
#define PFLEX_ALLOC_FITTED_KEPT 1000

/* A sweep job whose curve is not its raw points: the fit moved some point,
 * or the curve is flat and modelled below its draw. */
struct pflex_alloc_fitted {
    const char *job;            /* the sweep job */
    size_t n;                   /* its points, ascending cap */
    const struct pflex_sweep_point *raw, *fit;
    int flat;                   /* flat at its draw, proportional below it */
    double min_cap_w;           /* flat: the lowest cap of the model, W */
};

typedef struct pflex_alloc_input {
    size_t njobs;
    struct pflex_alloc_job *jobs;
    struct pflex_alloc_capinfo *caps;   /* per job */
    int has_curves;             /* every job has a measured curve */
    double *by;                 /* per job, the source's by column; NULL without */
    int has_weight;             /* some input file has a weight column */
    int has_dram_copy;          /* the sweep has dram_active and mem_copy_util */
    const char *warnings;       /* what the readers warn of (a misspelt column of the
                                 * sweep, the jobs file or the PFI CSV: a line each,
                                 * ending in '\n'), or NULL; the caller shows them */
    size_t nfitted;             /* sweep jobs read through the fit */
    size_t nflat;               /* of which flat */
    size_t nfitted_kept;        /* the first of them, in sweep order, with their points: */
    const struct pflex_alloc_fitted *fitted;    /* at most PFLEX_ALLOC_FITTED_KEPT */
    size_t nskipped;            /* sweep jobs skipped as bad (named in warnings) */
    const char *const *skipped; /* their names */
    const char *const *skipped_why;     /* and why, one each */
    void *priv;                 /* storage; do not touch */
} pflex_alloc_input_t;

/* Returns 0 and *out (free with pflex_alloc_input_destroy), or -1 with err
 * set as "file:line: what is wrong". */
int pflex_alloc_input_read(const struct pflex_alloc_source *src, pflex_alloc_input_t **out,
                           pflex_error_t *err);
void pflex_alloc_input_destroy(pflex_alloc_input_t *in);

/* How many of the plan's caps (pl over in's jobs) are clamped to their
 * GPU's settable range (pflex_alloc_cap). */
size_t pflex_alloc_plan_clamped(const pflex_alloc_input_t *in, const struct pflex_alloc_plan *pl);

#endif
