/* cmd.h — `pflex controller run|history` (src/controller/cmd.c); the
 * whole command line, argv[0] the word "controller".  Exit codes as every
 * pflex command: 0 ok, 1 internal error, 2 bad usage or input. */
#ifndef PFLEX_CONTROLLER_CMD_H
#define PFLEX_CONTROLLER_CMD_H

int controller_command(int argc, char **argv);

#endif
