/* fuzz_openadr.c — libFuzzer target for OpenADR 3 `GET /events` bodies:
 * whatever is accepted becomes targets that are then resolved, so that no
 * event a VTN can send crashes or hangs the controller. */
#include <stddef.h>
#include <stdint.h>
#include "pflex/net/openadr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 1.7e9);
    o.baseline_w = 1e6;
    o.ramp_s = 30;
    o.client_name = "fuzz";
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    pflex_oadr_events_t evs = {0};
    pflex_error_t err;
    if (pflex_oadr_parse_events((const char *)data, size, "fuzz", &o, &s, &evs, &err) == 0) {
        for (size_t i = 0; i < s.n && i < 32; i++)
            (void)pflex_target_limit_w(&s, s.t[i].start_s + 1, o.baseline_w, 2e6);
        if (s.n < 32)
            (void)pflex_target_limit_min_w(&s, 1.7e9, 1.7e9 + 3600, o.baseline_w, 2e6);
    }
    pflex_oadr_events_fini(&evs);
    pflex_target_set_fini(&s);
    return 0;
}
