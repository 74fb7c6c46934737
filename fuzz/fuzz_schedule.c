/* fuzz_schedule.c — libFuzzer target for target schedule CSVs and target
 * specs; whatever is accepted is resolved over its own span, so that the
 * ramp and window code sees every set the reader lets through. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/flex/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pflex_target_set_t s;
    pflex_error_t err;
    pflex_target_set_init(&s);
    if (pflex_target_schedule_read_mem((const char *)data, size, "fuzz", 1e9, &s, NULL, &err) == 0) {
        for (size_t i = 0; i < s.n && i < 64; i++) {
            (void)pflex_target_limit_w(&s, s.t[i].start_s, 1e6, 2e6);
            (void)pflex_target_limit_w(&s, s.t[i].start_s + s.t[i].ramp_s / 2, 1e6, 2e6);
        }
        if (s.n && s.n < 64)
            (void)pflex_target_limit_min_w(&s, s.t[0].start_s, s.t[0].start_s + 3600, 1e6, 2e6);
    }
    pflex_target_set_fini(&s);
    /* The same bytes as one command-line target. */
    char spec[256];
    size_t n = size < sizeof spec - 1 ? size : sizeof spec - 1;
    memcpy(spec, data, n);
    spec[n] = '\0';
    struct pflex_target t;
    (void)pflex_target_parse(spec, 1e9, &t, &err);
    return 0;
}
