/* main.c — the pflex binary: dispatch to one file per subcommand. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

#define PFLEX_VERSION "0.1.0"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"pfi", cmd_pfi, "Power Flexibility Index of each job in a sweep"},
    {"sweep", cmd_sweep, "run a power-cap sweep on a backend (sim or nvml)"},
    {"study", cmd_study, "the whole characterisation study on the built-in fleet"},
    {"allocate", cmd_allocate, "split a site power budget between jobs"},
    {"evaluate", cmd_evaluate, "score every policy's plan on the measured curves"},
    {"simulate", cmd_simulate, "a site through a grid day, every policy side by side"},
    {"telemetry", cmd_telemetry, "read nvidia-smi, dcgmi, dcgm-exporter, Prometheus telemetry"},
    {"features", cmd_features, "per-job features of an uncapped run (DRAM copy product, ...)"},
    {"correlate", cmd_correlate, "each feature against PFI: Spearman, Pearson, intervals, q"},
    {"train", cmd_train, "fit a PFI and loss-curve model on sweeps with telemetry"},
    {"predict", cmd_predict, "PFI and loss curves from telemetry alone, with a trained model"},
    {"jobs", cmd_jobs, "which job holds which GPU, from Slurm output or a job map"},
    {"agent", cmd_agent, "the per-node daemon owning GPU power limits (leases, HTTP API)"},
    {"apply", cmd_apply, "put a plan's caps into force, with a lease, through an agent or locally"},
    {"controller", cmd_controller, "the site loop: follow a grid target, learn curves, push caps to agents"},
    {"vtn", cmd_vtn, "a small OpenADR 3 VTN on loopback serving events from a file (tests, demos)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: pflex COMMAND [options] [FILE...]\n"
               "       pflex --help | --version\n\n"
               "pflex makes AI training power-flexible: it measures how throughput\n"
               "responds to GPU power caps, condenses it into the Power Flexibility\n"
               "Index (PFI) and plans per-job caps under a site power target.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\noptions:\n"
               "  -h, --help   this help\n"
               "  --version    the version of pflex\n"
               "\n'pflex COMMAND --help' or 'pflex help COMMAND' describes one command.\n"
               "'-' or no FILE reads standard input.  Exit codes: 0 success, 1 internal\n"
               "or system error, 2 bad usage or input, 3 budget infeasible, 4 nothing\n"
               "applied (pflex apply).  The formats, JSON fields and exit codes are\n"
               "documented in docs/contract.md.\n"
               "\nEXAMPLES\n"
               "  pflex study --out study-out                 # the whole study, no GPU\n"
               "  pflex sweep --job llama-8b-pretrain-h200 --out sweep.csv\n"
               "  pflex pfi sweep.csv                         # PFI of each job\n"
               "  pflex pfi --csv sweep.csv > pfi.csv         # the PFI CSV --pfi reads\n"
               "  pflex allocate sweep.csv --reduce 0.30      # split a 30%% site cut\n"
               "  pflex evaluate sweep.csv --reduce 0.30      # every policy, scored\n");
}

/* Every write to stdout is checked here, once, whatever the command: a
 * full disk or a closed pipe is an error of the system (exit 1) with a
 * message, never a silent truncation.  Commands leave the message about
 * standard output to this. */
static int write_errno(int e)
{
    return e == ENOSPC || e == EPIPE || e == EIO || e == EDQUOT || e == EFBIG || e == EBADF
           || e == EROFS || e == EINVAL;
}

static int finish(const char *cmd, int rc)
{
    int bad = ferror(stdout), e0 = errno;  /* the failed write's, most likely */
    errno = 0;
    if (fflush(stdout) != 0)
        bad = 1;
    int e = errno;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad)
        return rc;
    if (!write_errno(e))
        e = write_errno(e0) ? e0 : 0;
    fprintf(stderr, "pflex%s%s: writing standard output: %s\n", cmd ? " " : "", cmd ? cmd : "",
            e ? strerror(e) : "write error");
    return PFLEX_EXIT_INTERNAL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return PFLEX_EXIT_BAD_INPUT;
    }
    if (!strcmp(argv[1], "help") && argc == 3) {      /* pflex help CMD = pflex CMD --help */
        static char opt_help[] = "--help";
        char *av[] = {argv[2], opt_help, NULL};
        for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
            if (!strcmp(argv[2], commands[i].name))
                return finish(commands[i].name, commands[i].run(2, av));
        fprintf(stderr, "pflex: unknown command '%s'\n", argv[2]);
        usage(stderr);
        return PFLEX_EXIT_BAD_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return finish(NULL, PFLEX_EXIT_OK);
    }
    if (!strcmp(argv[1], "--version")) {
        puts("pflex " PFLEX_VERSION);
        return finish(NULL, PFLEX_EXIT_OK);
    }
    opterr = 0;     /* each command says what is wrong: cli_bad_option */
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name))
            return finish(commands[i].name, commands[i].run(argc - 1, argv + 1));
    fprintf(stderr, "pflex: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return PFLEX_EXIT_BAD_INPUT;
}
