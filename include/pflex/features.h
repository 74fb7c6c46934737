/* pflex/features.h — per-job features of an uncapped run (docs/telemetry.md).
 *
 * From telemetry samples (pflex/telemetry.h) with the study's protocol: the
 * training phase only (for each GPU, samples whose GPU utilisation is at
 * least 50 %, from the first such sample on), each field aggregated over the
 * job's GPUs by a statistic (the study's: the mean of the top 10 % of
 * samples), or from a sweep's telemetry columns at the job's highest cap.
 */
#ifndef PFLEX_FEATURES_H
#define PFLEX_FEATURES_H

#include <stddef.h>
#include "pflex/error.h"
#include "pflex/sweep.h"
#include "pflex/telemetry.h"

enum pflex_feat {
    PFLEX_FEAT_DRAM_COPY,       /* dram_active (0..1) x mem_copy_util (%) / 100: 0..1 */
    PFLEX_FEAT_ARITH_INTENSITY, /* tensor_active / dram_active, dimensionless */
    PFLEX_FEAT_DRAM_ACTIVE,     /* ratio 0..1 */
    PFLEX_FEAT_MEM_COPY_UTIL,   /* % */
    PFLEX_FEAT_TENSOR_ACTIVE,   /* ratio 0..1 */
    PFLEX_FEAT_SM_ACTIVE,       /* ratio 0..1 */
    PFLEX_FEAT_SM_OCCUPANCY,    /* ratio 0..1 */
    PFLEX_FEAT_GR_ENGINE_ACTIVE,/* ratio 0..1 */
    PFLEX_FEAT_GPU_UTIL,        /* % */
    PFLEX_FEAT_POWER_OVER_LIMIT,/* board power / power limit, 0..1 */
    PFLEX_FEAT_SM_CLOCK_OVER_MAX,/* SM clock / the GPU's maximum SM clock, 0..1 */
    PFLEX_FEAT_MEM_CLOCK_MHZ,   /* MHz */
    PFLEX_FEAT_PCIE_GBS,        /* PCIe tx + rx, GB/s (1e9 bytes/s) */
    PFLEX_FEAT_NVLINK_GBS,      /* NVLink tx + rx, GB/s */
    PFLEX_FEAT_DRAM_COPY_CV,    /* variability: coefficient of variation of the
                                 * per-sample DRAM copy product (telemetry only) */
    PFLEX_FEAT_LOG2_GPUS,       /* log2 of the job's GPU count (metadata) */
    PFLEX_FEAT_ARCH_MOE,        /* 1 mixture of experts, 0 dense (metadata; NaN unknown) */
    PFLEX_FEAT_TASK_FT,         /* 1 fine-tuning (LoRA or full), 0 pretraining (metadata) */
    PFLEX_FEAT_COUNT
};

/* Column name of a feature ("dram_copy_product", ...), its unit, and the
 * feature of a name (-1 when none). */
const char *pflex_feat_name(enum pflex_feat f);
const char *pflex_feat_unit(enum pflex_feat f);
int pflex_feat_by_name(const char *s);

/* How a field's training-phase samples become one number. */
enum pflex_feat_stat {
    PFLEX_STAT_TOP10,   /* the study's: mean of the top 10 % */
    PFLEX_STAT_MEDIAN, PFLEX_STAT_P10, PFLEX_STAT_P90, PFLEX_STAT_MEAN,
    PFLEX_STAT_COUNT
};
const char *pflex_feat_stat_name(enum pflex_feat_stat s);
int pflex_feat_stat_parse(const char *s, enum pflex_feat_stat *out);

/* The statistic of x[0..n) (x is reordered).  NaN when n = 0. */
double pflex_feat_stat(double *x, size_t n, enum pflex_feat_stat s);

struct pflex_job_features {
    char *job;          /* owned */
    int gpus;           /* GPUs seen (telemetry) or the sweep's gpus */
    size_t samples;     /* training-phase samples used (telemetry); 0 from a sweep */
    double v[PFLEX_FEAT_COUNT];     /* NaN where the input lacks what it needs */
};

struct pflex_feat_set {
    size_t n;
    struct pflex_job_features *jobs;
};

struct pflex_feat_opts {
    enum pflex_feat_stat stat;
    double util_min;        /* training phase: GPU util >= this, % (default 50) */
};

/* Features of every job of a sorted store (pflex_tm_sort); series without
 * a job are left out.  Jobs in name order.  Returns 0, or -1 with err. */
int pflex_features_from_telemetry(const pflex_tm_t *t, const struct pflex_feat_opts *o,
                                  struct pflex_feat_set *out, pflex_error_t *err);

/* Features of one sweep job from its telemetry columns at its highest cap
 * (NaN for fields the sweep lacks).  gpu names the GPU model for the
 * maximum SM clock (NULL: the highest SM clock of the sweep). */
void pflex_features_from_sweep_job(const struct pflex_sweep_job *j, struct pflex_job_features *out);

/* Append to s the features of every job of a sweep (from its telemetry
 * columns; path names the sweep in messages).  Returns 0, or -1 with err
 * when the sweep has no telemetry column or memory runs out. */
int pflex_features_add_sweep(struct pflex_feat_set *s, const pflex_sweep_t *sw, const char *path,
                             pflex_error_t *err);

void pflex_feat_set_fini(struct pflex_feat_set *s);

/* The maximum SM clock of a GPU model name ("NVIDIA H200", "H100-SXM"),
 * MHz, or NaN when pflex does not know it. */
double pflex_gpu_max_sm_clock_mhz(const char *model);

#endif
