/* evaluate.c — pflex evaluate (being built). */
#include "cli/cli.h"

int cmd_evaluate(int argc, char **argv)
{
    cli_error("evaluate", "not built yet");
    return PFLEX_EXIT_INTERNAL;
}
