/* main.c — the pflex binary: dispatch to one file per subcommand. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"pfi", cmd_pfi, "Power Flexibility Index of each job in a sweep"},
    {"sweep", cmd_sweep, "run a power-cap sweep on a backend (sim or nvml)"},
    {"allocate", cmd_allocate, "split a site power budget between jobs"},
    {"evaluate", cmd_evaluate, "score equal, pfi and optimal plans on measured curves"},
    {"study", cmd_study, "the whole characterisation study on the built-in fleet"},
    {"jobs", cmd_jobs, "which job holds which GPU, from Slurm output or a job map"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: pflex COMMAND [options] [FILE...]\n\n"
               "pflex makes AI training power-flexible: it measures how throughput\n"
               "responds to GPU power caps, condenses it into the Power Flexibility\n"
               "Index (PFI) and plans per-job caps under a site power target.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'pflex COMMAND --help' describes one command.  Exit codes: 0 success,\n"
               "1 internal error, 2 bad usage or input, 3 budget infeasible.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return PFLEX_EXIT_BAD_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return PFLEX_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        puts("pflex 0.1.0");
        return PFLEX_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "pflex: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return PFLEX_EXIT_BAD_INPUT;
}
