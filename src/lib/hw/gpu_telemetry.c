/* gpu_telemetry.c — live telemetry samples through a GPU backend
 * (struct pflex_gpu_ops), as DCGM fields in a telemetry store. */
#include <math.h>
#include <time.h>
#include "pflex/gpu.h"
#include "pflex/telemetry.h"

/* The sweep telemetry columns (SPEC §3 units) as the DCGM fields they are. */
static const int tm_field[PFLEX_TM_COUNT] = {
    [PFLEX_TM_SM_CLOCK_MHZ] = PFLEX_DCGM_SM_CLOCK,
    [PFLEX_TM_MEM_CLOCK_MHZ] = PFLEX_DCGM_MEM_CLOCK,
    [PFLEX_TM_GPU_UTIL] = PFLEX_DCGM_GPU_UTIL,
    [PFLEX_TM_MEM_COPY_UTIL] = PFLEX_DCGM_MEM_COPY_UTIL,
    [PFLEX_TM_SM_ACTIVE] = PFLEX_DCGM_SM_ACTIVE,
    [PFLEX_TM_SM_OCCUPANCY] = PFLEX_DCGM_SM_OCCUPANCY,
    [PFLEX_TM_TENSOR_ACTIVE] = PFLEX_DCGM_TENSOR_ACTIVE,
    [PFLEX_TM_DRAM_ACTIVE] = PFLEX_DCGM_DRAM_ACTIVE,
    [PFLEX_TM_GR_ENGINE_ACTIVE] = PFLEX_DCGM_GR_ENGINE_ACTIVE,
    [PFLEX_TM_PCIE_TX_BYTES] = PFLEX_DCGM_PCIE_TX_BYTES,
    [PFLEX_TM_PCIE_RX_BYTES] = PFLEX_DCGM_PCIE_RX_BYTES,
    [PFLEX_TM_NVLINK_TX_BYTES] = PFLEX_DCGM_NVLINK_TX_BYTES,
    [PFLEX_TM_NVLINK_RX_BYTES] = PFLEX_DCGM_NVLINK_RX_BYTES,
};

static int put(pflex_tm_t *t, const char *job, const char *host, int gpu, int field,
               double time_s, double v, pflex_error_t *err)
{
    if (!isfinite(v))
        return 0;   /* the backend does not report it */
    return pflex_tm_add(t, job, host, gpu, NULL, field, time_s, v, err);
}

int pflex_tm_sample_gpus(pflex_tm_t *t, struct pflex_gpu *g, const char *host, const char *job,
                         double time_s, pflex_error_t *err)
{
    unsigned n;
    if (pflex_gpu_count(g, &n, err) < 0)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        struct pflex_gpu_sample s;
        double cap;
        if (pflex_gpu_sample(g, i, &s, err) < 0)
            return -1;
        if (put(t, job, host, (int)i, PFLEX_DCGM_POWER_USAGE, time_s, s.power_w, err) < 0 ||
            put(t, job, host, (int)i, PFLEX_DCGM_TOTAL_ENERGY, time_s, s.energy_j * 1000, err) < 0)
            return -1;
        for (int k = 0; k < PFLEX_TM_COUNT; k++)
            if (put(t, job, host, (int)i, tm_field[k], time_s, s.tm[k], err) < 0)
                return -1;
        if (pflex_gpu_get_cap(g, i, &cap, err) == 0 &&
            put(t, job, host, (int)i, PFLEX_DCGM_ENFORCED_LIMIT, time_s, cap, err) < 0)
            return -1;
    }
    return 0;
}

int pflex_tm_sample_gpus_every(pflex_tm_t *t, struct pflex_gpu *g, const char *host,
                               const char *job, long n, double interval_ms, pflex_error_t *err)
{
    for (long k = 0; k < n; k++) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (pflex_tm_sample_gpus(t, g, host, job, (double)now.tv_sec + now.tv_nsec / 1e9, err) < 0)
            return -1;
        if (k + 1 < n) {
            struct timespec d = {(time_t)(interval_ms / 1000),
                                 (long)(fmod(interval_ms, 1000) * 1e6)};
            while (nanosleep(&d, &d) != 0)
                ;
        }
    }
    return pflex_tm_sort(t, err);
}
