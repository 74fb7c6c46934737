/* fuzz_meter.c — libFuzzer target for the grid meter's answer: one
 * Prometheus instant-query answer read as the meter's value and stamp;
 * meter_read.c is built into the target. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "controller/meter_read.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    double v = 0, ts = 0;
    pflex_error_t err;
    if (meter_parse((const char *)data, size, &v, &ts, &err) == 0 && !(ts == ts))
        abort();        /* a stamp is a JSON number: never NaN */
    return 0;
}
