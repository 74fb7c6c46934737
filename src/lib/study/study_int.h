/* study_int.h — what the study's files share (pflex/study/study.h): a swept run,
 * the study object, and the pieces each file gives the others. */
#ifndef PFLEX_STUDY_INT_H
#define PFLEX_STUDY_INT_H

#include <stdio.h>
#include "pflex/flex/curve.h"
#include "pflex/study/study.h"
#include "pflex/io/sweep.h"

/* One measurement of a run (a cap, one of its repeats). */
struct study_row {
    double cap_w, power_w, throughput, step_s;
    double tm[PFLEX_TM_COUNT];
};

/* One group of the fleet as swept. */
struct study_task {
    struct pflex_fleet_run fleet;
    size_t index;               /* fleet index */
    size_t nrows;
    struct study_row *rows;
    int failed;
    char err[256];
};

struct pflex_study {
    struct pflex_study_config cfg;
    size_t n;                   /* runs */
    struct study_task *tasks;
    struct pflex_report_run *runs;
    struct pflex_curve *curves;
    size_t ncurves;             /* curves initialised */
    struct pflex_report_calib_job cal_jobs[PFLEX_REPORT_MAX_CALIB];
    struct pflex_report rep;
    char *sweeps_csv, *pfi_csv; /* the output files' text */
    size_t sweeps_len, pfi_len;
    json_t *summary, *prediction;
    size_t pairs;               /* H100-H200 pairs compared */
    char prediction_note[256];
};

/* The seed of a group's simulated job: one per (seed, fleet index). */
uint64_t study_job_seed(uint64_t seed, size_t index);

/* study_sweep.c: sweep every task (c->threads workers).  Returns 0, or -1
 * with the first failed run's message. */
int study_sweep(const struct pflex_study_config *c, struct study_task *tasks, size_t n,
                pflex_error_t *err);

/* study_out.c: the sweeps CSV and the PFI CSV as text (malloc'd); the
 * samples CSV to f.  Each returns 0, or -1 with err. */
int study_sweeps_text(const struct study_task *tasks, size_t n, char **text, size_t *len,
                      pflex_error_t *err);
int study_pfi_text(const struct pflex_report_run *runs, size_t n, char **text, size_t *len,
                   pflex_error_t *err);
int study_write_samples(FILE *f, const struct study_task *tasks, size_t n, uint64_t seed,
                        int repeats, pflex_error_t *err);

/* study_sections.c: the calibration section (never fails: the note says
 * why it is missing) and the allocation section. */
void study_calibrate(const char *data_dir, const char *why_not, uint64_t seed,
                     struct pflex_report_calib_job *jobs, size_t max,
                     struct pflex_report_calib *cal);
int study_allocate(const struct pflex_report_run *runs, const struct pflex_curve *curves,
                   size_t n, struct pflex_report_alloc *a);

/* study_compare.c: the comparison with the study's numbers (a new JSON
 * object: per group simulated beside measured PFI, cluster medians,
 * Kruskal-Wallis and Dunn, H100 vs H200, grid sensitivity); *pairs: the
 * H100-H200 pairs the rank correlation is over. */
json_t *study_compare(const struct pflex_report_run *runs, size_t n, size_t *pairs);

#endif
