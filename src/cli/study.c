/* study.c — pflex study (being built). */
#include "cli/cli.h"

int cmd_study(int argc, char **argv)
{
    cli_error("study", "not built yet");
    return PFLEX_EXIT_INTERNAL;
}
