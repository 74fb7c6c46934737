/* pflex/study/study.h — the characterisation study on the built-in fleet, and its
 * prediction sections (PAPER.md §4 Table 3, the H100 transfer, §6).
 *
 * pflex_study_run sweeps every fleet run on the sim backend (worker threads
 * over runs; each run's noise is seeded by its fleet index, so the result
 * never depends on the number of threads), turns the sweeps into the sweep
 * CSV and reads it back through the same reader as `pflex pfi` to compute
 * PFI, then runs the calibration against the Emerald measurements, the
 * allocation comparison, the comparison with the study's numbers and the
 * prediction sections, and condenses it all into summary.json
 * (pflex/report/report.h, docs/study.md).  pflex_study_write writes the output
 * set.  The study object owns everything it hands out; the configuration's
 * pointers are borrowed for the run only.
 */
#ifndef PFLEX_STUDY_H
#define PFLEX_STUDY_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "pflex/study/dataset.h"
#include "pflex/util/error.h"
#include "pflex/sim/fleet.h"
#include "pflex/report/report.h"

#define PFLEX_STUDY_MAX_CAPS PFLEX_REPORT_MAX_POINTS

struct pflex_study_config {
    enum pflex_fleet_set set;   /* the fleet: PFLEX_FLEET_STUDY or PFLEX_FLEET_EXTENDED */
    uint64_t seed;              /* of the simulated noise and silicon */
    /* caps_given: these caps (W, from the highest down) for every group,
     * those outside a kind's range skipped; else each group's own grid */
    int caps_given;
    size_t ncaps;
    double caps_w[PFLEX_STUDY_MAX_CAPS];
    double cap_step_w;          /* the caps' spacing as given (0: a list), for the report */
    int repeats;                /* runs per cap, averaged */
    double range;               /* PFI range */
    size_t njobs;               /* 0: every group; else this many spread evenly */
    int threads;                /* worker threads, 1..64 */
    /* The shared data folder holding emerald-demo/ for the calibration, or
     * NULL: the calibration is skipped and data_note says why. */
    const char *data_dir, *data_note;
    /* NULL, or called after each run is swept (done of total), from the
     * worker threads but never two at a time. */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
};

/* The defaults: the study fleet, seed 1, caps every 50 W over the fleet's
 * kinds (used only when caps_given), one repeat, the default PFI range,
 * every group, one thread, no calibration data, no progress. */
void pflex_study_config_init(struct pflex_study_config *c);

/* Whether the configuration can run: with caps_given, every GPU kind of the
 * groups picked needs two caps within its range.  Returns 0, or -1 with err
 * ("fewer than two caps within the H100-SXM5-80GB range 200-700 W"). */
int pflex_study_check(const struct pflex_study_config *c, pflex_error_t *err);

typedef struct pflex_study pflex_study_t;

/* Run the study.  Returns 0 and *out (free with pflex_study_destroy), or
 * -1 with err.  A calibration or prediction section that cannot be had
 * does not fail the run: the report says why (pflex_study_prediction_note). */
int pflex_study_run(const struct pflex_study_config *c, pflex_study_t **out, pflex_error_t *err);

/* The results: the report (its runs in fleet order), summary.json as a
 * JSON object, the prediction sections (NULL when left out, and then the
 * note says why). */
const struct pflex_report *pflex_study_report(const pflex_study_t *s);
const json_t *pflex_study_summary(const pflex_study_t *s);
const json_t *pflex_study_prediction(const pflex_study_t *s);
const char *pflex_study_prediction_note(const pflex_study_t *s);

/* Add a section made outside the study (the grid day of `pflex study`,
 * from the site simulator the command runs) to summary.json under key,
 * before pflex_study_write; the report shows the sections it knows
 * ("grid_day": docs/study.md).  Takes v (also on failure).  Returns 0, or
 * -1 with err (out of memory). */
int pflex_study_add_section(pflex_study_t *s, const char *key, json_t *v, pflex_error_t *err);

/* The matched H100-H200 pairs the comparison's rank correlation is over
 * (summary.json's study.h100_h200_spearman). */
size_t pflex_study_pairs(const pflex_study_t *s);

/* Write the output set into the folder dir (which must exist): sweeps.csv,
 * pfi.csv, summary.json and report.html (charts drawn by the program
 * gnuplot, NULL: none; *charts receives how many), and with samples (NULL:
 * none) every run's per-GPU 5-s samples to that path.  Each is written to a
 * temporary file beside its name and all are renamed into place only once
 * every one is whole: a failure leaves the last set as it was.  Returns 0,
 * or -1 with err. */
int pflex_study_write(const pflex_study_t *s, const char *dir, const char *samples,
                      const char *gnuplot, int *charts, pflex_error_t *err);

void pflex_study_destroy(pflex_study_t *s);

/* The prediction sections on the jobs of a study's sweeps (the study reads
 * its own; `pflex train --study` a study folder's), name naming them in
 * messages: Table 3, the H100 transfer and the §6 protocol with workloads
 * draws of 100 jobs per mix, seeded by seed.  Returns 0 and *out (a new
 * JSON object: "table3", "h100_transfer", "allocation", ...), or -1 with
 * err (fewer than 10 H200 jobs with a PFI, a fit that fails). */
int pflex_study_predict(const struct pflex_dataset *all, const char *name, unsigned workloads,
                        unsigned long seed, json_t **out, pflex_error_t *err);

#endif
