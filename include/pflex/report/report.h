/* pflex/report/report.h — the study's results: statistics, summary.json, HTML.
 *
 * `pflex study` sweeps the fleet, fills a struct pflex_report and hands it
 * here.  pflex_report_summary condenses it into the documented summary
 * (docs/study.md lists every key) with GSL statistics;
 * pflex_report_write_html renders a self-contained page whose charts are
 * SVG drawn by gnuplot, run as a child process.  Everything in a report
 * belongs to the caller; these functions only read it.
 */
#ifndef PFLEX_REPORT_H
#define PFLEX_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "pflex/util/error.h"
#include "pflex/sim/fleet.h"
#include "pflex/io/sweep.h"

#define PFLEX_REPORT_MAX_POINTS 64
#define PFLEX_REPORT_MAX_CUTS 9
#define PFLEX_REPORT_MAX_CALIB 16

/* One swept run: its fleet entry, its averaged sweep, its PFI. */
struct pflex_report_run {
    struct pflex_fleet_run fleet;
    size_t index;               /* position in the fleet */
    int pfi_valid;              /* 0: no cap binds, no PFI */
    double pfi;                 /* the study's ratio PFI on the group's grid (SPEC section 2) */
    double pfi_grid4;           /* the same on the coarse grid 200/500/600/700 W; NaN when
                                 * those caps were not all run */
    double pfi_loss_area;       /* pflex's grid-independent variant, range `range` */
    double range_used, x_max;
    double shed[4];             /* shed at Flex 0..3 floors */
    double p0_w, t0, cap0_w;    /* baseline per-GPU power (W), throughput (tokens/s), cap (W) */
    double step_s;              /* baseline seconds per optimizer step */
    size_t npoints;             /* averaged caps, ascending */
    double cap_w[PFLEX_REPORT_MAX_POINTS];
    double power_w[PFLEX_REPORT_MAX_POINTS];
    double throughput[PFLEX_REPORT_MAX_POINTS];
    double tm[PFLEX_TM_COUNT];  /* telemetry at the baseline cap; NaN when absent */
    int partner;                /* H100 runs: index into runs[] of the H200 run they
                                 * mirror, -1 when that run is not in the study */
};

/* Simulated against measured normalised throughput for one Emerald job. */
struct pflex_report_calib_job {
    char job[64];               /* the measured workload */
    char sim_job[64];           /* the simulator's description of it (a preset) */
    size_t npoints;
    double cap_w[PFLEX_REPORT_MAX_POINTS];
    double measured[PFLEX_REPORT_MAX_POINTS];   /* T/T0, measured */
    double simulated[PFLEX_REPORT_MAX_POINTS];  /* T/T0, simulated */
    double rmse;                /* over the caps the calibration scores */
    double pfi_measured, pfi_simulated;
};

struct pflex_report_calib {
    int done;                   /* 0: skipped, note says why */
    char note[256];
    size_t njobs;
    const struct pflex_report_calib_job *jobs;
};

/* The study's allocation policies, in this order (PFLEX_REPORT_POL_*):
 * equal, pfi-weighted (the study's PFI-aware, measured ratio PFI), pfi,
 * optimal; at one cut, each scored on the measured curves. */
enum { PFLEX_REPORT_POL_EQUAL, PFLEX_REPORT_POL_PFI_WEIGHTED, PFLEX_REPORT_POL_PFI,
       PFLEX_REPORT_POL_OPTIMAL, PFLEX_REPORT_NPOL };
extern const char *const pflex_report_pol_names[PFLEX_REPORT_NPOL];

struct pflex_report_cut {
    double cut;                 /* fraction of baseline GPU power removed */
    double budget_w;
    double throughput[PFLEX_REPORT_NPOL];   /* tokens/s of the whole population */
    int feasible[PFLEX_REPORT_NPOL];
    int sla_violations[PFLEX_REPORT_NPOL];
    /* (p - equal) / (optimal - equal); NaN where optimal does not beat
     * equal by more than rounding (at a 0% cut, say) */
    double gap_recovered[PFLEX_REPORT_NPOL];
    double recovered_per_job[PFLEX_REPORT_NPOL];    /* (p - equal) / jobs, tokens/s */
    double gap_bound;           /* optimal's bound on its distance to the true optimum */
    /* The same with the progress objective (docs/contract.md §2): each job counts by its
     * GPUs times its normalised throughput, whatever its tokens/s. */
    double progress[PFLEX_REPORT_NPOL];     /* GPU-weighted mean of T/T0 */
    double progress_gap_recovered[PFLEX_REPORT_NPOL];
};

struct pflex_report_alloc {
    int done;                   /* 0: skipped, note says why */
    char note[256];
    size_t njobs;               /* jobs in the population (H200 main runs with a PFI) */
    double baseline_w;          /* their baseline GPU power, W */
    double baseline_throughput; /* their baseline throughput, tokens/s */
    double gpus;                /* their GPUs */
    size_t ncuts;
    struct pflex_report_cut cuts[PFLEX_REPORT_MAX_CUTS];
};

struct pflex_report {
    uint64_t seed;
    double range;               /* PFI range X */
    int repeats;                /* measurements per cap */
    double cap_step_w;          /* cap spacing (0 when caps were listed) */
    size_t ncaps;
    const double *caps_w;       /* the caps swept (at most each kind's range) */
    double runtime_s;           /* wall time of sweeps and analysis */
    size_t nruns;
    const struct pflex_report_run *runs;    /* fleet order */
    struct pflex_report_calib calib;
    struct pflex_report_alloc alloc;
};

/* Summary statistics of a sample (GSL): n, mean, sd, min, quartiles, max;
 * NaN where undefined (no values; sd with one). */
struct pflex_report_stats {
    size_t n;
    double mean, sd, min, q1, median, q3, max;
};
void pflex_report_stats(const double *v, size_t n, struct pflex_report_stats *out);

/* o[a][b][c] of a summary document (b, c may be NULL); NULL where absent. */
const json_t *pflex_report_json_get(const json_t *o, const char *a, const char *b, const char *c);

/* summary.json as a new JSON object (keys in documented order, runtime_s
 * last), or NULL when out of memory. */
json_t *pflex_report_summary(const struct pflex_report *r);

/* Write the HTML report to out.  gnuplot is the program to run for charts
 * (looked up on PATH); NULL or a program that cannot be run leaves a note
 * where each chart would be and still succeeds.  *charts (may be NULL)
 * receives the number of charts drawn.  Returns 0, or -1 on a write error. */
int pflex_report_write_html(const struct pflex_report *r, const json_t *summary,
                            const char *gnuplot, FILE *out, int *charts, pflex_error_t *err);

/* Run gnuplot on a script (which must set an svg terminal and write to
 * stdout) and return the SVG it printed, malloc'd, in *svg.  Returns 0, or
 * -1 with err set when gnuplot cannot be run or fails. */
int pflex_report_gnuplot_svg(const char *gnuplot, const char *script, size_t script_len,
                             char **svg, pflex_error_t *err);

/* s as a gnuplot single-quoted string, quotes and all ('' for each ',
 * control characters as spaces), cut whole to fit len.  Follow a title
 * with noenhanced so that it is drawn literally (job_a_b, not subscripts).
 * Returns buf. */
const char *pflex_report_gnuplot_quote(const char *s, char *buf, size_t len);

/* gnuplot's SVG into a page of several: gnuplot names its definitions
 * alike in every chart, so each id and reference to one gets the prefix
 * c<chart>-. */
void pflex_report_paste_svg(FILE *f, const char *svg, int chart);

/* s as HTML text (<, >, & and " escaped; NULL: nothing). */
void pflex_report_html_text(FILE *f, const char *s);

#endif
