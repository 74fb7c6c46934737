/* sweep_nvml.c — pflex sweep --backend nvml (being built). */
#include "cli/cli.h"

int sweep_nvml(int argc, char **argv)
{
    cli_error("sweep", "the nvml backend is not built yet");
    return PFLEX_EXIT_INTERNAL;
}
