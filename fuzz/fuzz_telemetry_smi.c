/* fuzz_telemetry_smi.c — libFuzzer target for the smi telemetry reader. */
#include "fuzz_telemetry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_telemetry(data, size, PFLEX_TMF_SMI);
}
