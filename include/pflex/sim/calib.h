/* pflex/sim/calib.h — the sim model against the Emerald A100 measurements.
 *
 * Each Emerald job (shared/data/emerald-demo/data/dvfs_sweep.csv) has a
 * preset describing it (emerald-*); calibration sweeps the preset on the
 * sim backend at the measured caps and compares normalised throughput
 * (T / T at the highest cap) and the ratio PFI over the measured caps
 * (pflex_pfi_ratio).  The physics constants are global: no job has its own.
 */
#ifndef PFLEX_CALIB_H
#define PFLEX_CALIB_H

#include <stddef.h>
#include <stdint.h>
#include "pflex/util/error.h"
#include "pflex/sim/sim.h"
#include "pflex/io/sweep.h"

#define PFLEX_CALIB_MAX_CAPS 16

struct pflex_calib_result {
    char preset[64];            /* the sim job: "emerald-pt-mpt-7b", ... */
    char measured_job[64];      /* the measured workload: "pt_mpt_7b_fast", ... */
    size_t ncaps;
    double cap_w[PFLEX_CALIB_MAX_CAPS];         /* ascending */
    double measured[PFLEX_CALIB_MAX_CAPS];      /* normalised throughput */
    double simulated[PFLEX_CALIB_MAX_CAPS];
    double measured_power_w[PFLEX_CALIB_MAX_CAPS];
    double simulated_power_w[PFLEX_CALIB_MAX_CAPS];
    double rmse;                /* over caps 200-400 W */
    double pfi_measured, pfi_simulated;
};

/* Caps the RMSE is taken over. */
#define PFLEX_CALIB_RMSE_MIN_W 200.0
#define PFLEX_CALIB_RMSE_MAX_W 400.0

/* Calibrate against the Emerald sweep.  data_dir is the shared data folder
 * (holding emerald-demo/), the emerald-demo folder, or the CSV itself.
 * Fills up to max results, *n of them.  seed fixes the simulated noise. */
int pflex_calibrate_emerald(const char *data_dir, uint64_t seed, struct pflex_calib_result *out,
                            size_t max, size_t *n, pflex_error_t *err);

/* The path of the Emerald sweep CSV under data_dir (as above) into buf;
 * 0, or -1 when it is not there. */
int pflex_calib_emerald_path(const char *data_dir, char *buf, size_t len);

/* --- the fit of the model's free constants (tools/calibrate.c) ---------- */

/* The fit scores physical measurements only (power, clocks, step times,
 * counters); no PFI is ever a target.  Jobs, in order: the five Emerald
 * A100-SXM4-40GB curves (normalised throughput and power drawn under caps),
 * six public absolute throughputs (llm-foundry's benchmarks, calib.c), then
 * the real uncapped H200 runs of ../shared/data/h200-uncapped (tokens/s,
 * board power, SM clock and four counters each). */
#define PFLEX_CALIB_EMERALD_JOBS 5
#define PFLEX_CALIB_MFU_POINTS 6
#define PFLEX_CALIB_H200_MAX 40
#define PFLEX_CALIB_JOBS_MAX (PFLEX_CALIB_EMERALD_JOBS + PFLEX_CALIB_MFU_POINTS + PFLEX_CALIB_H200_MAX)
#define PFLEX_CALIB_H200_FIRST (PFLEX_CALIB_EMERALD_JOBS + PFLEX_CALIB_MFU_POINTS)

struct pflex_calib_mfu {
    const char *name, *gpu;
    int layers, hidden, heads, seq_len, micro_batch, act_ckpt;
    double tokens_per_gpu;      /* measured tokens/s per GPU */
};
extern const struct pflex_calib_mfu pflex_calib_mfu_points[PFLEX_CALIB_MFU_POINTS];
/* The job description of a throughput point (8 GPUs, FSDP, fused kernels). */
int pflex_calib_mfu_desc(const struct pflex_calib_mfu *m, struct pflex_job_desc *d);

/* Real uncapped runs on one GPU (h200-uncapped/measured.csv with a job file
 * per row under jobs/, and the device runs of data/h200-device): what was
 * measured, means over the training window.  A microbenchmark row (unit
 * FLOP or byte) is a loop (pflex_sim_loop_expect) of its size, not a job. */
enum pflex_calib_unit { PFLEX_CALIB_TOKEN, PFLEX_CALIB_FLOP, PFLEX_CALIB_BYTE };
struct pflex_calib_real {
    char name[64];
    struct pflex_job_desc desc;     /* unit PFLEX_CALIB_TOKEN */
    enum pflex_calib_unit unit;
    double size;                    /* a loop's GEMM n or copy bytes */
    int machine;                    /* 0: the shared set's host, 1: the device runs' host */
    int in_fit;                     /* 1: its measurements are fitted; 0: unseen, only predicted */
    double tokens_per_s, power_w, sm_clock_mhz;     /* tokens_per_s: the rate in `unit` */
    double dram_active, tensor_active, sm_active, mem_copy_util;    /* DCGM meanings */
};
struct pflex_calib_reals {
    size_t n;
    struct pflex_calib_real r[PFLEX_CALIB_H200_MAX];
};
/* Read data_dir/h200-uncapped (data_dir: the shared data folder).  -1 with
 * a message when it is not there or malformed. */
int pflex_calib_reals_load(const char *data_dir, struct pflex_calib_reals *out,
                           pflex_error_t *err);

/* Append the device runs of dir (data/h200-device: measured.csv, jobs/),
 * machine 1, in_fit set for the fit set (calib.c: the microbenchmarks, the
 * shared set's five loops again and five of the new jobs), the others
 * unseen; repeats (NAME_r2) and the idle rows are skipped.  -1 with
 * file:line: what is wrong. */
int pflex_calib_device_load(const char *dir, struct pflex_calib_reals *out, pflex_error_t *err);

#define PFLEX_CALIB_MAX_RESIDUALS 512

/* Weights of the residuals: 1 sigma of what each measurement repeats to,
 * or of the model error that is tolerated where the measurement repeats
 * better (docs/measurements.md, "The sim backend's calibration"). */
#define PFLEX_CALIB_SIGMA_T 0.01        /* an Emerald normalised throughput */
#define PFLEX_CALIB_SIGMA_P 0.02        /* relative, the power drawn at one Emerald cap */
#define PFLEX_CALIB_SIGMA_TPUT 0.10     /* log, an absolute throughput of another software stack */
#define PFLEX_CALIB_SIGMA_REAL_TPUT 0.05    /* log, a real run's tokens/s */
#define PFLEX_CALIB_SIGMA_REAL_P 0.02       /* relative, its board power */
#define PFLEX_CALIB_SIGMA_REAL_CLK 0.02     /* relative, its SM clock */
#define PFLEX_CALIB_SIGMA_REAL_TM 0.03      /* a counter (fraction of time) */

/* The simulated side of one real run. */
struct pflex_calib_real_sim {
    double tokens_per_s, power_w, sm_clock_mhz;
    double dram_active, tensor_active, sm_active, mem_copy_util;
};

struct pflex_calib_eval {
    size_t n;                               /* residuals */
    double r[PFLEX_CALIB_MAX_RESIDUALS];    /* (simulated - measured) / sigma */
    int job[PFLEX_CALIB_MAX_RESIDUALS];     /* 0..PFLEX_CALIB_JOBS_MAX-1 */
    double rmse_emerald[PFLEX_CALIB_EMERALD_JOBS];  /* normalised T over 200-400 W */
    double power_err_emerald[PFLEX_CALIB_EMERALD_JOBS]; /* relative RMS error of the power drawn */
    double tput_ratio[PFLEX_CALIB_MFU_POINTS];      /* simulated / measured tokens/s per GPU */
    size_t nreal;
    struct pflex_calib_real_sim real[PFLEX_CALIB_H200_MAX];     /* the real runs, simulated */
};

/* The Emerald sweep, read once (path from pflex_calib_emerald_path). */
int pflex_calib_emerald_load(const char *data_dir, pflex_sweep_t **out, pflex_error_t *err);

/* Residuals of the noise-free model with constants fit against the
 * measurements (emerald or reals may be NULL: not scored). */
int pflex_calib_evaluate(const pflex_sweep_t *emerald, const struct pflex_calib_reals *reals,
                         const struct pflex_sim_fit *fit, struct pflex_calib_eval *out,
                         pflex_error_t *err);

/* --- the judge: PFIs the fit never saw ------------------------------------ */

/* The study fleet's groups simulated noise-free with constants fit: each
 * group's ratio PFI (NaN where no cap binds), and over the 25 headline
 * groups (PAPER.md section 4) the mean |error| and Spearman's rho against
 * the study's.  Out of sample: no PFI enters the calibration. */
struct pflex_calib_judge {
    size_t n;                   /* study groups (35) */
    double pfi_sim[64], pfi_measured[64];     /* measured: NaN where unpublished */
    int split[64];              /* enum pflex_fleet_split */
    double headline_mae, headline_rmse, headline_rho;
    double cluster_median_sim[3], cluster_median_measured[3];  /* dense, MoE PT, MoE LoRA */
};
int pflex_calib_judge(const struct pflex_sim_fit *fit, struct pflex_calib_judge *out,
                      pflex_error_t *err);

#endif
