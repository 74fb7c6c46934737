/* pflex/calib.h — the sim model against the Emerald A100 measurements.
 *
 * Each Emerald job (shared/data/emerald-demo/data/dvfs_sweep.csv) has a
 * preset describing it (emerald-*); calibration sweeps the preset on the
 * sim backend at the measured caps and compares normalised throughput
 * (T / T at the highest cap) and the study's ratio PFI over the measured
 * caps (pflex_pfi_ratio).  The physics constants are global: no job has its own.
 */
#ifndef PFLEX_CALIB_H
#define PFLEX_CALIB_H

#include <stddef.h>
#include <stdint.h>
#include "pflex/error.h"
#include "pflex/sim.h"
#include "pflex/sweep.h"

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

/* Jobs the fit scores: the five Emerald A100 curves, the study's 25
 * headline H200 groups (PAPER.md section 4), then six public absolute
 * throughputs (llm-foundry's benchmarks, calib.c). */
#define PFLEX_CALIB_EMERALD_JOBS 5
#define PFLEX_CALIB_MFU_POINTS 6
#define PFLEX_CALIB_JOBS (PFLEX_CALIB_EMERALD_JOBS + 25 + PFLEX_CALIB_MFU_POINTS)

struct pflex_calib_mfu {
    const char *name, *gpu;
    int layers, hidden, heads, seq_len, micro_batch, act_ckpt;
    double tokens_per_gpu;      /* measured tokens/s per GPU */
};
extern const struct pflex_calib_mfu pflex_calib_mfu_points[PFLEX_CALIB_MFU_POINTS];
/* The job description of a throughput point (8 GPUs, FSDP, fused kernels). */
int pflex_calib_mfu_desc(const struct pflex_calib_mfu *m, struct pflex_job_desc *d);
#define PFLEX_CALIB_MAX_RESIDUALS 80

/* Weights of the residuals (1 sigma of what each measurement repeats to):
 * normalised throughput and power drawn at one Emerald cap, and one
 * group's ratio PFI. */
#define PFLEX_CALIB_SIGMA_T 0.01
#define PFLEX_CALIB_SIGMA_PFI 0.15
#define PFLEX_CALIB_SIGMA_P 0.02        /* relative, the power drawn at one Emerald cap */
#define PFLEX_CALIB_SIGMA_TPUT 0.10     /* log, an absolute throughput of another software stack */

struct pflex_calib_eval {
    size_t n;                               /* residuals */
    double r[PFLEX_CALIB_MAX_RESIDUALS];    /* (simulated - measured) / sigma */
    int job[PFLEX_CALIB_MAX_RESIDUALS];     /* 0..PFLEX_CALIB_JOBS-1 */
    double pfi_sim[25], pfi_measured[25];   /* the headline groups' ratio PFI */
    double rmse_emerald[PFLEX_CALIB_EMERALD_JOBS];  /* normalised T over 200-400 W */
    double power_err_emerald[PFLEX_CALIB_EMERALD_JOBS]; /* relative RMS error of the power drawn */
    double tput_ratio[PFLEX_CALIB_MFU_POINTS];      /* simulated / measured tokens/s per GPU */
};

/* The Emerald sweep, read once (path from pflex_calib_emerald_path). */
int pflex_calib_emerald_load(const char *data_dir, pflex_sweep_t **out, pflex_error_t *err);

/* Residuals of the noise-free model with constants fit against the
 * Emerald sweep (NULL: only the study's PFIs are scored). */
int pflex_calib_evaluate(const pflex_sweep_t *emerald, const struct pflex_sim_fit *fit,
                         struct pflex_calib_eval *out, pflex_error_t *err);

#endif
