/* study_sections.c — the study's calibration and allocation sections
 * (pflex/study/study.h, pflex/report/report.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/study/study_int.h"
#include "pflex/flex/alloc.h"
#include "pflex/sim/calib.h"

/* The calibration against the Emerald measurements (pflex/sim/calib.h): the
 * simulated equivalents of the measured A100 jobs, normalised throughput
 * cap by cap.  Never fails the study: the section says why it is missing. */
void study_calibrate(const char *data_dir, const char *why_not, uint64_t seed,
                     struct pflex_report_calib_job *jobs, size_t max,
                     struct pflex_report_calib *cal)
{
    struct pflex_calib_result res[PFLEX_REPORT_MAX_CALIB];
    pflex_error_t err;
    size_t n = 0;
    memset(cal, 0, sizeof *cal);
    if (!data_dir) {
        snprintf(cal->note, sizeof cal->note, "%.250s", why_not);
        return;
    }
    if (pflex_calibrate_emerald(data_dir, seed, res, max, &n, &err) < 0) {
        snprintf(cal->note, sizeof cal->note, "calibration failed: %.200s", err.text);
        return;
    }
    if (n == 0) {
        snprintf(cal->note, sizeof cal->note, "the Emerald sweep holds none of the calibrated jobs");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct pflex_report_calib_job *j = &jobs[i];
        memset(j, 0, sizeof *j);
        snprintf(j->job, sizeof j->job, "%.63s", res[i].measured_job);
        snprintf(j->sim_job, sizeof j->sim_job, "%.63s", res[i].preset);
        j->npoints = res[i].ncaps < PFLEX_REPORT_MAX_POINTS ? res[i].ncaps : PFLEX_REPORT_MAX_POINTS;
        for (size_t k = 0; k < j->npoints; k++) {
            j->cap_w[k] = res[i].cap_w[k];
            j->measured[k] = res[i].measured[k];
            j->simulated[k] = res[i].simulated[k];
        }
        j->rmse = res[i].rmse;
        j->pfi_measured = res[i].pfi_measured;
        j->pfi_simulated = res[i].pfi_simulated;
    }
    cal->done = 1;
    cal->njobs = n;
    cal->jobs = jobs;
    snprintf(cal->note, sizeof cal->note,
             "%zu measured A100-SXM4 jobs of the Emerald AI field demonstration "
             "(emerald-demo/data/dvfs_sweep.csv) against the same jobs described to the simulator; "
             "RMSE of normalised throughput over caps %.0f-%.0f W, ratio PFI over the measured caps",
             n, PFLEX_CALIB_RMSE_MIN_W, PFLEX_CALIB_RMSE_MAX_W);
}

/* The study's policies (pflex/report/report.h order) as pflex policies. */
static const enum pflex_policy alloc_policies[PFLEX_REPORT_NPOL] = {
    PFLEX_POLICY_EQUAL, PFLEX_POLICY_PFI_WEIGHTED, PFLEX_POLICY_PFI, PFLEX_POLICY_OPTIMAL,
};

/* One cut planned with every study policy under one objective: into c's
 * throughput and gap columns (throughput) or its progress ones. */
static int alloc_cut(const struct pflex_alloc_problem *prob, const struct pflex_report_alloc *a,
                     struct pflex_report_cut *c, pflex_error_t *err)
{
    struct pflex_alloc_comparison cmp;
    if (pflex_alloc_compare(prob, &cmp, err) < 0)
        return -1;
    const double te = cmp.score[PFLEX_POLICY_EQUAL].objective;
    const double to = cmp.score[PFLEX_POLICY_OPTIMAL].objective;
    for (int p = 0; p < PFLEX_REPORT_NPOL; p++) {
        const struct pflex_alloc_score *sc = &cmp.score[alloc_policies[p]];
        double g = pflex_alloc_gap_recovered(te, sc->objective, to);
        if (prob->objective == PFLEX_OBJECTIVE_PROGRESS) {
            c->progress[p] = sc->objective / a->gpus;
            c->progress_gap_recovered[p] = g;
            continue;
        }
        c->throughput[p] = sc->throughput;
        c->feasible[p] = cmp.feasible[alloc_policies[p]];
        c->sla_violations[p] = sc->sla_violations;
        c->gap_recovered[p] = g;
        c->recovered_per_job[p] = cmp.per_job_recovered[alloc_policies[p]];
    }
    if (prob->objective == PFLEX_OBJECTIVE_THROUGHPUT)
        c->gap_bound = cmp.gap_bound;
    return 0;
}

/* Equal, pfi-weighted, pfi and optimal on the H200 main runs at cuts of 0%
 * to 40% in 5% steps (the study's §6); the PFI policies use each run's
 * ratio PFI measured on its curve. */
int study_allocate(const struct pflex_report_run *runs, const struct pflex_curve *curves,
                   size_t n, struct pflex_report_alloc *a)
{
    memset(a, 0, sizeof *a);
    struct pflex_alloc_job *jobs = calloc(n ? n : 1, sizeof *jobs);
    if (!jobs)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct pflex_report_run *r = &runs[i];
        if (r->fleet.split != PFLEX_FLEET_MAIN || !r->pfi_valid)
            continue;
        struct pflex_alloc_job *j = &jobs[m++];
        j->name = r->fleet.desc.name;
        j->gpus = r->fleet.gpus;
        j->p0_w = r->p0_w;
        j->t0 = r->t0;
        j->cap0_w = r->cap0_w;
        j->weight = 1;
        j->floor = 0;
        j->x_hi = curves[i].x_max;
        j->pfi = NAN;           /* the ratio PFI of its curve */
        j->npoints = curves[i].n;
        j->x = curves[i].x;
        j->loss = curves[i].loss;
        a->baseline_throughput += r->t0;
        a->gpus += r->fleet.gpus;
    }
    if (m < 2) {
        snprintf(a->note, sizeof a->note, "fewer than two H200 main runs with a PFI in this study");
        free(jobs);
        return 0;
    }
    struct pflex_alloc_problem prob = {.njobs = m, .jobs = jobs,
                                       .objective = PFLEX_OBJECTIVE_THROUGHPUT};
    a->njobs = m;
    a->baseline_w = pflex_alloc_baseline_w(&prob);
    for (int k = 0; k < PFLEX_REPORT_MAX_CUTS; k++) {
        struct pflex_report_cut *c = &a->cuts[a->ncuts];
        c->cut = 0.05 * k;
        c->budget_w = (1 - c->cut) * a->baseline_w;
        prob.budget_w = c->budget_w;
        pflex_error_t err;
        int rc = 0;
        prob.objective = PFLEX_OBJECTIVE_THROUGHPUT;
        rc = alloc_cut(&prob, a, c, &err);
        prob.objective = PFLEX_OBJECTIVE_PROGRESS;
        if (rc == 0)
            rc = alloc_cut(&prob, a, c, &err);
        if (rc < 0) {
            snprintf(a->note, sizeof a->note, "allocation failed at a %.0f%% cut: %.180s",
                     100 * c->cut, err.text);
            free(jobs);
            return 0;
        }
        a->ncuts++;
    }
    a->done = 1;
    snprintf(a->note, sizeof a->note, "H200 main runs, objective: total tokens/s; PFI: the "
             "study's ratio PFI measured on each run's curve");
    free(jobs);
    return 0;
}
