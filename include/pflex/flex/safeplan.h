/* pflex/flex/safeplan.h — one control period's caps, safe first.
 *
 * Given each job's best-known curve, the site limit for the period (the
 * target after its ramp: pflex_target_limit_min_w over the period) and the
 * state of every GPU, choose a per-GPU cap for every reachable GPU so that
 * the plan's worst-case site power
 *
 *     other_w + sum over unreachable GPUs of their maximum limit
 *             + sum over reachable GPUs of the cap set
 *
 * is at or under the limit (a GPU under a cap draws at most the cap; one
 * whose agent did not answer may be anywhere up to its maximum).  The split
 * between jobs is pflex_alloc_plan with PFLEX_POLICY_OPTIMAL, in the cap
 * domain: job j's "baseline power" is its largest cap C_j over n_j
 * reachable GPUs, its reduction y = 1 - cap/C_j, so that the allocator's
 * power sum is exactly the sum of the caps.  Idle reachable GPUs go to
 * their minimum limit while a limit is in force.
 *
 * Rules:
 *  - floors: a job is not cut past where its pessimistic curve (loss_hi)
 *    reaches 1 - floor; when the limit cannot be met that way, the floors
 *    give way only as far as the limit needs: first the pessimistic margin
 *    shrinks toward the mean curve, then the floors on the mean curve
 *    fall, all jobs by the same measure (floor_relax, the least that fits);
 *    the jobs cut past their floor on the pessimistic curve are flagged
 *    and counted: safety first, the breach reported;
 *  - hold: a GPU whose telemetry is missing this period (or every GPU, when
 *    the input says hold) gets at most the cap it has now: missing data
 *    holds or tightens, never loosens;
 *  - past the deepest point of a curve the loss is extended pessimistically
 *    (its last slope, at least proportional loss), so that a job can always
 *    be cut to its hardware minimum when safety needs it;
 *  - caps are whole steps (cap_step_w, whole watts by default) rounded
 *    down, clamped to each GPU's range, a floor's cap rounded up to a whole
 *    watt even under a finer step; the watts the rounding leaves under the
 *    limit go a step a job to the jobs whose next step wins most per watt
 *    on their mean curves (a held GPU never above the cap it has);
 *  - give-back: a job with a ceil_w under a limit is planned from that
 *    cap down (the watts above it cost it nothing: its GPUs do not draw
 *    them), and raised toward its largest cap, every such job by the same
 *    share of the span, only on the watts left when every job is at its
 *    largest cap the plan counts;
 *  - infeasible (the limit is under every reachable GPU at its minimum):
 *    every reachable GPU at its minimum, feasible = 0.
 *
 * Ownership: the input is borrowed; the plan owns its arrays (init once,
 * plan into it as often as wanted, fini at the end).
 */
#ifndef PFLEX_SAFEPLAN_H
#define PFLEX_SAFEPLAN_H

#include <stddef.h>
#include "pflex/flex/alloc.h"
#include "pflex/util/error.h"

struct pflex_site_gpu {
    int job;                /* index into the jobs, -1: idle */
    int reachable;          /* its agent answered this period */
    int telemetry_ok;       /* fresh readings this period */
    double min_cap_w, max_cap_w;    /* settable range, W */
    double cap_w;           /* the cap in force now, W; NaN: unknown */
    unsigned count;         /* the GPUs this entry stands for, all of one job, in
                             * the same state and under one cap (0: 1); the
                             * controller passes one entry per GPU, a simulated
                             * site one per job, so that its planning costs
                             * jobs, not GPUs */
};

struct pflex_site_job {
    const char *name;       /* borrowed */
    double t0;              /* baseline throughput, the job's unit (> 0) */
    double weight;          /* >= 0; the objective's weight */
    double floor;           /* service floor s in [0, 1] */
    /* The best-known curve: n points of (cap, loss) in any order, the
     * baseline (loss 0) at the job's largest cap; loss_hi the pessimistic
     * loss (mean + z sd) at the same points, NULL for the same as loss.
     * n = 0: no knowledge, proportional loss assumed. */
    size_t n;
    const double *cap_w, *loss, *loss_hi;
    /* 0, or a number that names these points: a plan that saw the same
     * gen for the same job (its index) reuses the curve it built from them
     * then, unchecked.  A caller that sets it gives every new set of points
     * (every refit) a gen never used before by this plan object. */
    unsigned long gen;
    /* > 0: the job's GPUs draw well under this cap (the controller's
     * give-back, docs/controller.md): under a limit the plan counts no cap
     * above it, its curve flat from the GPUs' largest cap down to it, so
     * that the watts over it go to the jobs whose caps bind before any of
     * them is cut; caps rise above it only on watts no other job can use.
     * 0 or NaN: none.  Ignored with no limit in force. */
    double ceil_w;
};

struct pflex_safe_input {
    size_t ngpus;
    const struct pflex_site_gpu *gpus;
    size_t njobs;
    const struct pflex_site_job *jobs;
    double limit_w;         /* W of site power; INFINITY: no limit */
    double other_w;         /* non-GPU power counted against the limit (worst case), W */
    int hold;               /* 1: no cap may rise this period (telemetry lost site-wide) */
    enum pflex_objective objective;
    int guard_equal;        /* 1: never plan worse than equal cuts on what is known:
                             * the cuts are equal cuts blended toward the optimum
                             * only as far as the blend gains over equal cuts on
                             * both the mean and the pessimistic curves (blend, voi
                             * below) */
    double cap_step_w;      /* caps are whole multiples of it, W (NVML takes mW); <= 0:
                             * 1, whole watts */
    double probe_dx;        /* guard_equal: > 0, the blends are judged a step of at most
                             * this much of any job's largest cap apart (quarters
                             * at least), and the plan names the next one on toward
                             * the optimum to probe (probe_cap_w); 0: quarters, none */
};

struct pflex_safe_plan {
    size_t ngpus, njobs;
    double *cap_w;          /* per GPU: the cap to push; NaN for unreachable GPUs */
    double *job_cap_w;      /* per job: its planned cap before holds and clamps (NaN:
                             * no reachable GPU) */
    double *job_loss;       /* per job: mean loss at that cap */
    int *floor_breached;    /* per job: cut past its floor (pessimistic curve) */
    size_t floor_breaches;
    double floor_relax;     /* how far the floors gave way: 0 kept on the pessimistic
                             * curve; (0, 1] the margin z sd shrunk by that share;
                             * (1, 2] the mean curve with floors scaled by 2 - r;
                             * 2 dropped (the hardware range) */
    size_t held;            /* GPUs whose cap was held at or under their current one */
    double worst_w;         /* worst-case site power of the plan, W */
    double limit_w;
    double least_w;         /* the least worst-case power reachable, W */
    int feasible;           /* worst_w <= limit_w */
    double throughput;      /* sum_j t0_j (1 - loss_j), the plan's estimate */
    double blend;           /* guard_equal: the optimum's share in the cuts (0 equal
                             * cuts .. 1 the optimum, in quarters); 1 otherwise */
    double given_w;         /* W of caps given back: over the jobs with a ceil_w, their
                             * GPUs' largest caps less the caps set (0: none) */
    double voi;             /* guard_equal: what knowing the curves exactly could still
                             * win over the plan this period, at most (the largest
                             * gain over equal cuts on the optimistic curves, mean
                             * less margin, less the gain taken), in the objective's
                             * units; 0 otherwise */
    double *probe_cap_w;    /* per job (guard_equal with probe_dx): its cap at the next
                             * blend on toward the optimum when that blend keeps more on
                             * the mean curves than the plan's; where none does, at the
                             * optimum on the optimistic curves (mean less margin) within
                             * probe_dx of the plan's cuts, floors on the pessimistic
                             * ones, the caps summed as the plan's; NaN for a job it does
                             * not move, and for all when there is none (probe_blend 0) */
    double probe_blend;     /* that blend's share of the optimum (the optimistic probe:
                             * its largest move, a share of probe_dx); 0: no probe */
    void *priv;             /* scratch; do not touch */
};

void pflex_safe_plan_init(struct pflex_safe_plan *p);
void pflex_safe_plan_fini(struct pflex_safe_plan *p);

/* Plan one period.  0 (also when infeasible: check feasible), or -1 with
 * err set on a malformed input (a GPU's job out of range, a range not
 * 0 < min <= max, a job's t0 not positive, a curve value not finite). */
int pflex_safe_plan(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                    pflex_error_t *err);

/* Whether a limit can be kept on caps: least_w (every GPU at the least cap
 * it can be set to, the GPUs out of reach at their largest, other load:
 * what pflex_safe_plan calls least_w) at or under limit_w, within 1e-6 of
 * least_w (the caps' rounding).  A GPU draws at most its cap, not at least:
 * a limit over what the GPUs draw at their least caps but under those caps
 * summed is infeasible all the same, for the guarantee is on caps.  The
 * one definition: the controller's plan (feasible) and the simulator's
 * periods_infeasible both read it.  INFINITY: feasible. */
int pflex_safe_limit_feasible(double limit_w, double least_w);

#endif
