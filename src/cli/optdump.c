/* optdump.c — the option tables, for the build's generators (bash
 * completion: tools/gen_completion.sh).  The pflex binary is linked with
 * getopt_long wrapped (-Wl,--wrap=getopt_long): with PFLEX_LIST_OPTIONS
 * set, a command's first getopt_long call prints the table it was given,
 * one "--name" a line ("--name=" when it takes a value), and exits, so
 * that every option of every table is completed, including ones added
 * later, without a second list to keep. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

int __real_getopt_long(int argc, char *const argv[], const char *optstring,
                       const struct option *longopts, int *longindex);
int __wrap_getopt_long(int argc, char *const argv[], const char *optstring,
                       const struct option *longopts, int *longindex);

int __wrap_getopt_long(int argc, char *const argv[], const char *optstring,
                       const struct option *longopts, int *longindex)
{
    if (getenv("PFLEX_LIST_OPTIONS")) {
        for (const struct option *o = longopts; o && o->name; o++)
            printf("--%s%s\n", o->name, o->has_arg == required_argument ? "=" : "");
        exit(fflush(stdout) == 0 ? 0 : 1);
    }
    return __real_getopt_long(argc, argv, optstring, longopts, longindex);
}
