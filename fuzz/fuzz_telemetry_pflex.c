/* fuzz_telemetry_pflex.c — libFuzzer target for the pflex telemetry reader. */
#include "fuzz_telemetry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_telemetry(data, size, PFLEX_TMF_PFLEX);
}
