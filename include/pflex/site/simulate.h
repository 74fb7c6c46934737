/* pflex/site/simulate.h — a site of GPUs driven through a grid day, every
 * policy side by side (docs/simulate.md).
 *
 * The world.  Jobs run measured curves ("kinds": a sweep's points of cap,
 * per-GPU power and throughput), all GPUs of a job under one cap.  A cap
 * is read on its kind's points by linear interpolation and never beyond
 * them: a cap outside the measured range is clamped to it, so the site's
 * settable range per job is its curve's.  Jobs are given one by one (the
 * field demonstration's six) or drawn from the kinds, seeded, until the
 * site's GPUs are full; with a mean job length, each job leaves after an
 * exponential draw and a new one, drawn the same way, takes its GPUs.
 * A job given may be input-bound (job_draw): its GPUs draw a set power
 * whatever the cap, at its full rate, until its draw rises to its curve.
 *
 * Time.  Periods of period_s from start_s.  A cap decided in period k is
 * in force from period k + D, D = ceil(delay_s / period_s) (0: at once).
 * What a period's caps draw and deliver is the curves' (the truth); what
 * the online learner reads of period k, at the start of k + 1, is that
 * plus noise: per job, power and throughput multiplied by 1 + e, e normal
 * with sd noise_power and noise_tput, drawn by a counter-based generator
 * from (seed, period, job), so every policy sees the same noise.
 *
 * The limit.  The controller's: at period k, the smallest target limit
 * over [t_k, t_k + 2 period] (pflex_target_limit_min_w; a fraction is of
 * baseline_w; a ramp starts from the site's maximum, every GPU at its
 * largest cap).  Every policy is held to the controller's guarantee: the
 * caps set, summed over GPUs, plus other_w, at or under that limit (a GPU
 * under a cap draws at most the cap).  A period is "above" when the power
 * the site draws (the truth) exceeds the limit in force at t_k; "after the
 * ramp" when the target in force has finished its ramp.
 *
 * Policies (enum pflex_sim_policy), all planned in the cap domain (a job's
 * "baseline" is its largest cap C, its cut y = 1 - cap/C):
 *  - equal, eq2 measured, eq2 predicted, throughput per watt, oracle:
 *    pflex_alloc_plan (EQUAL, PFI_WEIGHTED with the kind's measured ratio
 *    PFI, with its predicted PFI, with PFI = 1, OPTIMAL on the true
 *    curves), planned again only when the limit or the jobs change, in
 *    the controller's cap steps (the oracle's then polished and searched
 *    as a whole: the optimum of those steps, floors kept wherever a plan
 *    in them keeps every floor); when the floors cannot be met the
 *    target wins (floors scaled down alike, breaches counted);
 *  - online cold / warm: the site controller itself (pflex controller's
 *    period, fed in process: struct pflex_sim_controller below), one node
 *    per job slot whose one entry stands for the job's GPUs under one cap;
 *    each period it reads what the slot drew and delivered the period
 *    before (noisy), learns, plans and probes by its own rules, and the
 *    caps it hands back act D periods later; cold starts every job from
 *    proportional loss (PFI = 1), warm from its predicted PFI (the
 *    measured one where none was predicted).
 *
 * The objective: sum over jobs of w_j a_j T/T0, a_j = T0_j (throughput) or
 * n_j (progress: GPU-weighted normalised throughput, for jobs whose units
 * differ).  "Lost" is the uncapped objective minus the policy's, summed
 * over periods times period_s.  The event is the periods whose limit in
 * force is under what the site draws uncapped; a policy's score is what
 * it lost over the event against the oracle (and against equal cuts), a
 * share of the site's uncapped objective over the event.  The gap
 * recovered, (lost_equal - lost_p) / (lost_equal - lost_oracle) over the
 * event, is given only where that gap is over PFLEX_SIM_GAP_MIN_PCT % of
 * the site's objective: under it, the share swings on differences inside
 * the readings' noise.
 *
 * Feasibility, on caps (a GPU draws at most its cap, not at least): a
 * limit is infeasible where every job at its least cap, plus other_w, is
 * over it (pflex_safe_limit_feasible); floor-infeasible where the caps
 * can meet it but not with every floor kept: every job at its floor's
 * edge (the least cap in the controller's steps from which no step up
 * breaks its floor on the true curve) summed over it.  The oracle keeps
 * every floor wherever the limit it plans to is not floor-infeasible.
 *
 * Ownership: the config and everything it points to are the caller's and
 * only read; a result owns its arrays (pflex_sim_result_fini).
 */
#ifndef PFLEX_SIMULATE_H
#define PFLEX_SIMULATE_H

#include <stddef.h>
#include <stdint.h>
#include "pflex/flex/alloc.h"
#include "pflex/util/error.h"
#include "pflex/flex/target.h"

/* The least equal-to-oracle gap, % of the site's objective over the
 * event, for which a share of it (gap_recovered, settled_*) is given. */
#define PFLEX_SIM_GAP_MIN_PCT PFLEX_GAP_MIN_PCT_OF_SITE

enum pflex_sim_policy {
    PFLEX_SIM_EQUAL,
    PFLEX_SIM_EQ2_MEASURED,     /* Eq. 2, the kind's measured ratio PFI */
    PFLEX_SIM_EQ2_PREDICTED,    /* Eq. 2, its predicted PFI (needs one per kind) */
    PFLEX_SIM_TPW,              /* Eq. 2 with PFI = 1: cuts by watts per throughput */
    PFLEX_SIM_ONLINE_COLD,      /* the controller's learner from L = x */
    PFLEX_SIM_ONLINE_WARM,      /* the same from the predicted PFI */
    PFLEX_SIM_ORACLE,           /* optimal on the true curves */
    PFLEX_SIM_NPOL
};

/* "equal", "eq2-measured", "eq2-predicted", "tpw", "online-cold",
 * "online-warm", "oracle"; and back (-1 when unknown). */
const char *pflex_sim_policy_name(enum pflex_sim_policy p);
int pflex_sim_policy_parse(const char *s, enum pflex_sim_policy *out);

/* A measured curve jobs run. */
struct pflex_sim_kind {
    const char *name;           /* borrowed */
    size_t n;                   /* points, n >= 2, caps strictly descending from the
                                 * baseline (the largest) */
    const double *cap_w;        /* per point: the cap, W */
    const double *power_w;      /* per point: mean per-GPU power under it, W (> 0) */
    const double *fraction;     /* per point: T/T0 (fraction[0] = 1) */
    double t0;                  /* baseline throughput of a job of this kind, its own
                                 * unit, > 0 */
    double pfi_measured;        /* ratio PFI on the curve (power domain); NaN: 1 */
    double pfi_predicted;       /* predicted ratio PFI; NaN: none */
    double floor;               /* floor of jobs drawn of this kind (generated fleets) */
};

/* The online policies' controller.  The library sits below the daemons
 * and cannot call them, so the caller hands in the site controller's
 * period as these three functions (src/controller/sim_site.c: ctl_sim);
 * without them the online policies are left out (said in the note). */
struct pflex_sim_ctl_job {          /* one job of the run, as the site's job policies know it */
    const char *name;               /* unique over the run */
    double floor, weight;
    double prior_pfi;               /* the learner's prior L = x/PFI; NaN: L = x */
};
struct pflex_sim_ctl_setup {
    size_t nslots;                  /* nodes, one per job slot */
    size_t njobs;                   /* every job of the run, in any order */
    const struct pflex_sim_ctl_job *jobs;
    double period_s, settle_s, z, explore_step;
    int learn_between;              /* as the controller's --learn-between-events */
    double learn_budget;            /* as its --learn-budget (a fraction); <= 0: its default */
    double explore_lead_s;          /* as the controller's --explore-lead; <= 0: always */
    double cap_step_w;              /* as the controller's --cap-step-w; <= 0: 1 */
    double other_w, baseline_w;     /* as the controller's --other-w, --baseline-w */
    const pflex_target_set_t *targets;      /* copied */
    enum pflex_objective objective;
};
struct pflex_sim_ctl_view {         /* one slot, as its node reports it at a period's start */
    const char *job;                /* the job running there */
    unsigned gpus;                  /* its GPUs: one entry, one cap */
    double min_cap_w, max_cap_w;    /* its settable range, W */
    double cap_w;                   /* the cap in force over the last period, W */
    double power_w;                 /* per-GPU power read over the last period; NaN: none yet */
    double throughput;              /* the job's rate read over it; NaN: none yet */
};
struct pflex_sim_controller {
    int (*create)(const struct pflex_sim_ctl_setup *s, void **out, pflex_error_t *err);
    /* One period at unix time now: v[s] for every slot; cap_w[s] the cap
     * decided for it (to act D periods later); *probes incremented by the
     * probes started.  0, or -1 with err. */
    int (*period)(void *h, double now, const struct pflex_sim_ctl_view *v, double *cap_w,
                  size_t *probes, pflex_error_t *err);
    void (*destroy)(void *h);
    /* How far ahead the controller meets a step down of the limit at
     * this period, s (the lowest limit over that span: its caps' leases
     * and a period); every policy plans to the same.  NULL: 2 periods. */
    double (*horizon_s)(double period_s);
};

/* A job given one by one. */
struct pflex_sim_job {
    const char *name;           /* borrowed */
    size_t kind;
    int gpus;                   /* >= 1 */
    double floor;               /* in [0, 1] */
    double weight;              /* >= 0 */
};

/* An input-bound job (docs/simulate.md): draw_w > 0, its GPUs draw that
 * much whatever the cap (under a cap below it, the cap, the rate falling
 * in proportion) at its full rate, T/T0 = 1, until rise_s seconds after
 * the start, when its draw rises to its curve's (a phase change: from
 * then on it runs its curve); rise_s NaN or < 0: never.  The job's first
 * life only (a job that replaces it runs its curve).  draw_w 0: none. */
struct pflex_sim_job_draw {
    double draw_w;
    double rise_s;
    int rise_random;            /* 1: rise_s drawn from the seed, uniform over the run */
};

struct pflex_sim_config {
    size_t nkinds;
    const struct pflex_sim_kind *kinds;
    /* the site: njobs given (their GPUs summed), or njobs = 0 and ngpus
     * filled with jobs drawn from the kinds, gpus_lo..gpus_hi each (whole
     * multiples of gpus_step), floor from the kind */
    size_t njobs;
    const struct pflex_sim_job *jobs;
    const struct pflex_sim_job_draw *job_draw;  /* NULL, or one per job given */
    size_t ngpus;
    int gpus_lo, gpus_hi, gpus_step;
    double mean_job_s;          /* > 0: jobs leave (exponential), new ones come */

    double start_s, duration_s; /* unix seconds */
    double period_s;            /* > 0 */
    double delay_s;             /* cap settling delay, >= 0 */
    double settle_s;            /* the learner's --settle; <= 0: one period */
    double noise_power, noise_tput;     /* sd of the relative reading noise, >= 0 */
    uint64_t seed;

    const pflex_target_set_t *targets;
    double baseline_w;          /* what fraction targets are of; <= 0: the site's
                                 * power with every job at its largest cap at start */
    double other_w;             /* non-GPU power, W, counted against the limit */
    enum pflex_objective objective;
    double z;                   /* the learner's pessimism, <= 0: 2 */
    double explore_step;        /* the controller's --explore; < 0: 0.05 */
    double explore_lead_s;      /* the controller's --explore-lead; <= 0: always */
    int learn_between;          /* the controller's --learn-between-events: 0 (default),
                                 * the online policies probe only under a target */
    double learn_budget;        /* the controller's --learn-budget, a fraction; <= 0: its default */
    double cap_step_w;          /* the controller's --cap-step-w; <= 0: 1 (whole watts) */
    int offline_exact;          /* 1: the offline policies' caps to any fraction of a
                                 * watt; 0: in the online policies' cap steps too */
    unsigned policies;          /* bit p: run policy p; 0: every one that can */
    const struct pflex_sim_controller *controller;  /* online policies; NULL: none */

    int keep_jobs;              /* 1: keep per-job series (small sites) */
    int threads;                /* policies run on up to this many threads; <= 0: 1 */
    /* progress (may be NULL): called now and then with the share done */
    void (*progress)(void *ud, double done);
    void *progress_ud;
};

/* Per policy, over the whole run. */
struct pflex_sim_summary {
    int ran;
    double objective_s;         /* sum of the objective x period_s */
    double lost_s;              /* sum of (uncapped - objective) x period_s */
    double lost_event_s;        /* the same over periods with a limit in force */
    double lost_vs_oracle_pct_of_site;  /* over the event: (oracle's objective - this
                                 * policy's) x s, % of the site's uncapped objective
                                 * x s (event_progress_s); NaN: no oracle or no event */
    double lost_vs_equal_pct_of_site;   /* the same against equal cuts (< 0: better) */
    double gap_recovered;       /* (lost_equal - lost) / (lost_equal - lost_oracle) over the
                                 * event; NaN when gap_pct_of_site <= PFLEX_SIM_GAP_MIN_PCT */
    double throughput_lost;     /* sum over jobs of (T0 - T) x period_s, in the jobs' own
                                 * units (meaningful only where they share one) */
    size_t periods_limited;     /* periods with a limit in force */
    size_t periods_above;       /* after the ramp, the site over the limit */
    size_t periods_above_ramp;  /* during ramps */
    size_t periods_above_feasible;      /* of periods_above, those whose limit is
                                         * feasible on caps (periods_infeasible: none) */
    double max_over_w;          /* largest excess, W (0: never over) */
    size_t floor_periods;       /* job-periods with a floor, under a limit */
    size_t floor_breaches;      /* of those, T/T0 under the floor (the truth) */
    size_t floor_breaches_feasible; /* of those, in periods whose caps were planned to a
                                 * limit that every floor could be kept under (not
                                 * periods_infeasible nor periods_floor_infeasible):
                                 * the oracle's is 0 */
    double floor_worst;         /* the most T/T0 fell under a floor in one of them (0: never) */
    size_t floor_breaches_free; /* job-periods with no limit in force under their floor (probes
                                 * between events, caps set ahead of a limit) */
    size_t probes;              /* probes started (online policies) */
    size_t plans;               /* plans made */
    double energy_kwh;          /* GPU + other energy drawn */
    size_t below_equal;         /* limited periods with objective under equal's
                                 * (by more than 1e-9 relative) */
    /* per-period gap recovered, (obj - equal) / (oracle - equal), over the
     * limited periods at least 10 periods after a change of the limit,
     * where the gap exceeds 1e-6 of the objective; none (0 periods, NaN)
     * where the event's gap is not given (gap_recovered NaN) */
    size_t settled_periods;
    double settled_mean, settled_min;
    size_t settled_over90;      /* of those, periods with at least 0.9 */
    double wall_s;              /* CPU time this policy took (its thread), s */
    /* time to target (pflex/site/ttt.h, pflex_ttt_series): each fall of the
     * limit in force an event, its samples the site's power at each
     * period (resolution: a period), a 10 s hold */
    size_t ttt_events, ttt_met;
    double ttt_p50_s, ttt_p99_s, ttt_worst_s;   /* NaN: none met */
    double *ttt_s;              /* by event, NaN: not met (owned: pflex_sim_result_fini) */
};

struct pflex_sim_result {
    size_t nperiods;
    double period_s, start_s;
    double baseline_w;          /* what fractions were of */
    double max_w;               /* every GPU at its largest cap, W */
    size_t ngpus;               /* the site's GPUs */
    size_t jobs_started;        /* jobs over the run (arrivals included) */
    unsigned ran;               /* bit p: policy p ran */
    char note[256];             /* why a policy did not run, or "" */
    size_t periods_infeasible;  /* periods whose limit in force is under the jobs' least
                                 * caps summed (other_w included): no policy can keep
                                 * the guarantee there (pflex_safe_limit_feasible) */
    double infeasible_max_w;    /* the most such a limit fell short, W (0: none) */
    size_t periods_floor_infeasible;    /* periods whose planned limit is feasible on
                                 * caps but under the floors' edges summed: no plan
                                 * keeps every floor there */
    double floor_infeasible_max_w;      /* the most such a limit fell short, W (0: none) */
    size_t event_periods;       /* periods whose limit in force is under what the site
                                 * draws uncapped (every job at its largest cap) */
    double event_progress_s;    /* the uncapped objective x s over them */
    double gap_pct_of_site;     /* (equal's objective - the oracle's) lost over the event,
                                 * % of event_progress_s; NaN: equal or the oracle not
                                 * run, or no event */
    struct pflex_sim_summary pol[PFLEX_SIM_NPOL];
    /* per period */
    double *limit_w;            /* INFINITY: none */
    double *uncapped;           /* the objective with every job at its largest cap */
    double *power_w[PFLEX_SIM_NPOL];    /* site power drawn (truth), W */
    double *objective[PFLEX_SIM_NPOL];
    /* keep_jobs: the first njobs_kept jobs (those at start), per period
     * j * nperiods + k: cap in force, W, and T/T0 (the truth) */
    size_t njobs_kept;
    char (*job_name)[64];
    int *job_gpus;
    double *job_floor;
    double *job_cap[PFLEX_SIM_NPOL];
    double *job_fraction[PFLEX_SIM_NPOL];
};

void pflex_sim_result_fini(struct pflex_sim_result *r);

/* Run the day.  0, or -1 with err set (a malformed config: a kind's curve
 * out of order, no jobs, a period not positive, eq2-predicted asked for
 * without predicted PFIs, an online policy asked for without a
 * controller; the controller's own errors; out of memory). */
int pflex_sim_run(const struct pflex_sim_config *c, struct pflex_sim_result *out,
                  pflex_error_t *err);

/* The truth of a kind at a cap (clamped to its measured range): per-GPU
 * power, W, and T/T0. */
void pflex_sim_kind_at(const struct pflex_sim_kind *k, double cap_w, double *power_w,
                       double *fraction);

/* A kind's measured points joined as a GPU's curve runs between them:
 * per-GPU power and T/T0 as Steffen's monotone cubics of the cap (through
 * every point, no overshoot, a continuous slope; src/lib/site/smooth.c says
 * why), sampled at every measured cap and every step_w W between them.
 * Two points (or step_w <= 0): the line.  out borrows k's name and takes
 * its points from store (3 * pflex_sim_kind_smooth_n(k, step_w) doubles).
 * 0, or -1 with err (caps not strictly descending, out of memory). */
size_t pflex_sim_kind_smooth_n(const struct pflex_sim_kind *k, double step_w);
int pflex_sim_kind_smooth(const struct pflex_sim_kind *k, double step_w, double *store,
                          struct pflex_sim_kind *out, pflex_error_t *err);

/* A grid day's target trace from a site's measured power (a CSV of time,
 * watts, one row a sample in time order; times as RFC 3339, "YYYY-MM-DD
 * HH:MM:SS+hh:mm", or "HH:MM" on date_for_hhmm): the baseline is the mean
 * of the samples in the first hour; the samples are cut into buckets of
 * bucket_s; a bucket's level is the largest power in it over the baseline,
 * rounded up to 0.005; the event is the run of buckets from the first to
 * the last under 0.95, each bucket one target (a fraction of the baseline,
 * no ramp, priority 0) added to set.  The measured trace is handed back
 * (t_s, w; free both) for reports. */
struct pflex_sim_day {
    double baseline_w;          /* the measured first hour's mean, W */
    double start_s, end_s;      /* the record's first sample and last + its step */
    double event_start_s, event_end_s;
    size_t ntargets;
    size_t n;                   /* samples */
    double *t_s, *w;
};
int pflex_sim_day_read(const char *path, const char *date_for_hhmm, double bucket_s,
                       pflex_target_set_t *set, struct pflex_sim_day *out, pflex_error_t *err);
void pflex_sim_day_fini(struct pflex_sim_day *d);

/* The HTML report (src/lib/report/report_sim.c): what it says (a paragraph
 * read off the numbers), the summary table, the per-job table of field (the
 * summary's "field" object, as `pflex simulate` prints it; NULL: none), then
 * SVG charts drawn by gnuplot on a clock-time axis (NULL or not runnable: a
 * note in place of each): the limit against each policy's site power (and
 * the field's measured trace field_t/field_w, nfield samples, where given),
 * the gap recovered over time, per-job caps and throughput of the online
 * policy.  *charts (may be NULL) receives the charts drawn.  0, or -1 on a
 * write error. */
#include <stdio.h>
#include <jansson.h>
int pflex_sim_report_html(const struct pflex_sim_result *r, const char *title, const char *notes,
                          const json_t *field, const double *field_t, const double *field_w,
                          size_t nfield, const char *gnuplot, FILE *out, int *charts,
                          pflex_error_t *err);

#endif
