/* sweep.c — pflex sweep (being built). */
#include "cli/cli.h"

int cmd_sweep(int argc, char **argv)
{
    cli_error("sweep", "not built yet");
    return PFLEX_EXIT_INTERNAL;
}
