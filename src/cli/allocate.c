/* allocate.c — pflex allocate (being built). */
#include "cli/cli.h"

int cmd_allocate(int argc, char **argv)
{
    cli_error("allocate", "not built yet");
    return PFLEX_EXIT_INTERNAL;
}
