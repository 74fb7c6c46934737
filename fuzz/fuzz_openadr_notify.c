/* fuzz_openadr_notify.c — libFuzzer target for OpenADR 3 notifications, the
 * body a VTN (or anyone who reaches the controller's POST
 * /v1/openadr/notify with its token) sends: whatever parses is applied to a
 * set already holding the VTN's targets, then resolved, so that no
 * callback crashes or hangs the controller. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "pflex/net/openadr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char EVENTS[] =
    "[{\"id\":\"a\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2023-11-14T22:13:20Z\","
    "\"duration\":\"PT1H\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
    "\"values\":[500]}]},{\"id\":1,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]}]},"
    "{\"id\":\"b\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"0001-01-01\"},"
    "\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"DISPATCH_SETPOINT\",\"values\":[300]}]}]}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 1.7e9);
    o.baseline_w = 1e6;
    o.ramp_s = 30;
    o.client_name = "fuzz";
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    pflex_error_t err;
    if (pflex_oadr_parse_events(EVENTS, sizeof EVENTS - 1, "seed", &o, &s, NULL, &err) < 0)
        __builtin_trap();
    size_t before = s.n;
    struct pflex_oadr_notification n;
    pflex_oadr_events_t evs = {0};
    if (pflex_oadr_parse_notification((const char *)data, size, &n, &err) == 0) {
        if (!n.event_id[0] || (n.op != PFLEX_OADR_OP_DELETE && !n.modified[0]) || !n.object)
            __builtin_trap();
        if (pflex_oadr_apply_notification(&n, &o, &s, &evs, &err) == 0) {
            for (size_t i = 0; i < s.n && i < 32; i++)
                (void)pflex_target_limit_w(&s, s.t[i].start_s + 1, o.baseline_w, 2e6);
        } else if (s.n != before) {
            __builtin_trap();   /* a refused notification changes nothing */
        }
        pflex_oadr_notification_fini(&n);
    }
    pflex_oadr_events_fini(&evs);
    pflex_target_set_fini(&s);
    return 0;
}
