/* fuzz_telemetry_prom.c — libFuzzer target for the prom telemetry reader. */
#include "fuzz_telemetry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_telemetry(data, size, PFLEX_TMF_PROM);
}
