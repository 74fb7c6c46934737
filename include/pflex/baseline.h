/* pflex/baseline.h — what pflex predicts from: each job's features
 * (pflex/features.h) with its baseline, the per-GPU power and throughput of
 * its uncapped run, read from a sweep with telemetry columns (the highest
 * cap's row) or from a features CSV ('pflex features --csv' with the
 * columns power_w and throughput added, and optionally gpus, cap_w, gpu,
 * floor).
 */
#ifndef PFLEX_BASELINE_H
#define PFLEX_BASELINE_H

#include <stddef.h>
#include "pflex/error.h"
#include "pflex/features.h"
#include "pflex/sweep.h"

struct pflex_baseline {
    char *name;             /* the job, owned */
    char *gpu;              /* the GPU model, owned; NULL when not given */
    int gpus;               /* GPUs of the job (1 when not given) */
    double p0_w;            /* baseline power per GPU, W */
    double t0;              /* baseline throughput, the job's unit */
    double cap0_w;          /* the cap of the baseline, W; NaN when not given */
    double floor;           /* service floor 0..1; NaN when not given */
    double x[PFLEX_FEAT_COUNT];     /* features, NaN where missing */
};

/* Jobs in the order read; v[0..n) owned. */
struct pflex_baseline_set {
    size_t n, cap;
    struct pflex_baseline *v;
};

/* A new job at the end of s: zeroed, floor NaN.  NULL when out of memory. */
struct pflex_baseline *pflex_baseline_add(struct pflex_baseline_set *s);

/* Append every job of a sweep: its features and baseline from its highest
 * cap's row.  Returns 0; -1 with err when the sweep has no telemetry
 * column ("PATH: the sweep has no telemetry column: ...", path naming it)
 * or out of memory (pflex_error_is_system). */
int pflex_baseline_add_sweep(struct pflex_baseline_set *s, const pflex_sweep_t *sw,
                             const char *path, pflex_error_t *err);

/* Append every row of a features CSV (buf[0..len), name for messages).
 * Returns 0, or -1 with err ("name:line: what is wrong", "empty file", or
 * out of memory); rows read before an error stay in s. */
int pflex_baseline_read_features_csv(struct pflex_baseline_set *s, const char *buf, size_t len,
                                     const char *name, pflex_error_t *err);

void pflex_baseline_set_fini(struct pflex_baseline_set *s);

#endif
