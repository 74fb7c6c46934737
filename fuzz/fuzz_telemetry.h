/* fuzz_telemetry.h — what every telemetry reader's libFuzzer target does:
 * read the input as one format under small limits (so that the limit paths
 * are reached too), then sort and detect.  Each fuzz_telemetry_<format>.c
 * defines the entry point with its format, so each reader keeps a corpus. */
#ifndef PFLEX_FUZZ_TELEMETRY_H
#define PFLEX_FUZZ_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>
#include "pflex/io/telemetry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline int fuzz_telemetry(const uint8_t *data, size_t size, enum pflex_tm_format format)
{
    struct pflex_tm_limits lim = {4096, 256, 4096, 0, 0};
    pflex_tm_t *t = pflex_tm_create(&lim);
    pflex_error_t err;
    struct pflex_tm_read_opts o = {0};
    o.format = format;
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

#endif
