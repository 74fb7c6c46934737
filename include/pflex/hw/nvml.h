/* pflex/hw/nvml.h — the nvml backend: real NVIDIA GPUs through the driver's
 * management library, loaded at run time.
 *
 * libnvidia-ml.so.1 is opened with dlopen and reached through pflex's own
 * declarations of the few NVML types and functions it uses, so building
 * pflex needs no CUDA or NVML header and running it needs a driver only
 * when this backend is used.  The test suite points lib_path at a fake
 * library with the same symbols (tests/fake_nvml/).
 *
 * Units: NVML speaks mW, mJ, MHz, KB/s and percent; everything here is in
 * W, J, MHz, bytes/s and the docs/contract.md §3 units of struct pflex_gpu_sample.
 *
 * Safety: the backend records each GPU's power limit before it first
 * changes it, and pflex_nvml_restore() (also called by pflex_gpu_close())
 * sets those limits back.  A cap outside the device's constraints is
 * refused before NVML is called.  The library installs no signal handler:
 * a caller that must restore on a signal sets a flag in its handler and
 * restores from its main flow.  This record lives in the process only:
 * commands that change limits go through the limit guard (pflex/hw/guard.h),
 * which locks each GPU, saves the originals on disk, recovers them after a
 * crash, and takes over the restore from this backend.
 */
#ifndef PFLEX_NVML_H
#define PFLEX_NVML_H

#include "pflex/hw/gpu.h"

/* The library's name as the dynamic loader finds it. */
#define PFLEX_NVML_LIB_DEFAULT "libnvidia-ml.so.1"

/* GPM (Hopper and newer) refreshes its counters every 100 ms (NVML's
 * nvmlGpmSampleGet documentation): a sample taken sooner after the last one
 * that gave GPM metrics gets none (NaN), never a 0 computed over unchanged
 * counters. */
#define PFLEX_NVML_GPM_MIN_INTERVAL_MS 100

/* Load NVML from lib_path (NULL: PFLEX_NVML_LIB_DEFAULT through the
 * loader's search path), initialise it and take a handle on every GPU.
 * Returns 0 and *out (release with pflex_gpu_close), or -1 with err naming
 * the library, the NVML call and NVML's error. */
int pflex_nvml_open(const char *lib_path, pflex_gpu_t *out, pflex_error_t *err);

/* Everything pflex reads about one device; NaN where NVML has no value. */
struct pflex_nvml_info {
    char name[96];      /* "NVIDIA H200" */
    char uuid[96];      /* "GPU-8f0c..." */
    double min_w;       /* lowest settable power limit, W */
    double max_w;       /* highest settable power limit, W */
    double default_w;   /* the board's default power limit, W */
    double limit_w;     /* the power management limit set now, W */
    double enforced_w;  /* the limit in force (lowest of all limiters), W */
    double power_w;     /* board power draw now, W */
    int gpm;            /* 1 when GPM metrics (Hopper and newer) work */
};

/* Read the info of GPU i of an nvml backend. */
int pflex_nvml_info(pflex_gpu_t *g, unsigned i, struct pflex_nvml_info *out,
                    pflex_error_t *err);

/* Set every power limit this backend changed back to what it was before
 * the first change.  Tries every GPU even when one fails; returns 0, or -1
 * with err describing the first failure (and how many failed). */
int pflex_nvml_restore(pflex_gpu_t *g, pflex_error_t *err);

/* Number of GPUs whose limit this backend changed and has not restored. */
unsigned pflex_nvml_changed(pflex_gpu_t *g);

/* Keep the limits set now: pflex_gpu_close() will not restore them. */
void pflex_nvml_keep_limits(pflex_gpu_t *g);

/* Is g an nvml backend? */
int pflex_nvml_is(const pflex_gpu_t *g);

/*
 * Telemetry (pflex_gpu_sample): power_w from nvmlDeviceGetPowerUsage,
 * energy_j from nvmlDeviceGetTotalEnergyConsumption, SM and memory clocks,
 * gpu_util and mem_copy_util from nvmlDeviceGetUtilizationRates.
 * On GPUs with GPM, a sample at least PFLEX_NVML_GPM_MIN_INTERVAL_MS after
 * the last GPM sample of the same GPU takes a new one, and the GPM metrics
 * (gr_engine_active, sm_active, sm_occupancy, tensor_active, dram_active,
 * PCIe and NVLink bytes/s) are averages over the interval between the two;
 * the first sample, and one taken sooner, has them NaN.  PCIe bytes/s come
 * from nvmlDeviceGetPcieThroughput (two calls that block 20 ms each) only
 * where GPM does not give them: on the first sample, and on GPUs without
 * GPM or whose GPM left PCIe out.  A value the device does not support is
 * NaN; a GPU that fails otherwise (lost, no driver) makes the call fail with
 * NVML's error.
 */

#endif
