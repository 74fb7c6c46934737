/* pflex/calib.h — the sim model against the Emerald A100 measurements.
 *
 * Each Emerald job (shared/data/emerald-demo/data/dvfs_sweep.csv) has a
 * preset describing it (emerald-*); calibration sweeps the preset on the
 * sim backend at the measured caps and compares normalised throughput
 * (T / T at the highest cap) and PFI (pflex_curve_init + pflex_pfi_compute,
 * range 0.30).  The physics constants are global: no job has its own.
 */
#ifndef PFLEX_CALIB_H
#define PFLEX_CALIB_H

#include <stddef.h>
#include <stdint.h>
#include "pflex/error.h"

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

#endif
