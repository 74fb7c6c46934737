/* fuzz_telemetry_jobmap.c — libFuzzer target for the telemetry job map. */
#include <stddef.h>
#include <stdint.h>
#include "pflex/io/telemetry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pflex_tm_jobmap_t *m = NULL;
    pflex_error_t err;
    if (pflex_tm_jobmap_read_mem((const char *)data, size, "fuzz", &m, &err) == 0) {
        static const char prom[] = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n\"} 1\n"
                                   "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\"} 1\n";
        pflex_tm_t *t = pflex_tm_create(NULL);
        if (t && pflex_tm_read_mem(t, prom, sizeof prom - 1, "p", NULL, &err) == 0)
            (void)pflex_tm_jobmap_apply(t, m);
        pflex_tm_destroy(t);
        pflex_tm_jobmap_destroy(m);
    }
    return 0;
}
