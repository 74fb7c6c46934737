/* fuzz_telemetry_dmon.c — libFuzzer target for the dmon telemetry reader. */
#include <stddef.h>
#include <stdint.h>
#include "pflex/telemetry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Small limits, so that the limit paths are reached too. */
    struct pflex_tm_limits lim = {4096, 256, 4096, 0, 0};
    pflex_tm_t *t = pflex_tm_create(&lim);
    pflex_error_t err;
    struct pflex_tm_read_opts o = {0};
    o.format = PFLEX_TMF_DMON;
    o.job = size & 1 ? "fuzz" : NULL;
    if (!t)
        return 0;
    if (pflex_tm_read_mem(t, (const char *)data, size, "fuzz", &o, &err) == 0) {
        (void)pflex_tm_sort(t, &err);
        (void)pflex_tm_detect((const char *)data, size);
    }
    pflex_tm_destroy(t);
    return 0;
}
