/* controller.c — pflex controller: the site loop and its history.  The
 * daemon lives in src/controller/; this is its entry from the pflex
 * command table. */
#include "cli/cli.h"
#include "controller/cmd.h"

int cmd_controller(int argc, char **argv)
{
    return controller_command(argc, argv);
}
