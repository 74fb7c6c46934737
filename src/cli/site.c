/* site.c — the site-cut options of allocate and evaluate. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/site.h"

void cli_site_init(struct cli_site *s)
{
    memset(s, 0, sizeof *s);
    s->src.floor = NAN;
    s->budget_w = NAN;
    s->reduce = NAN;
    s->objective = PFLEX_OBJECTIVE_THROUGHPUT;
}

int cli_site_option(const char *cmd, struct cli_site *s, int c, const char *arg)
{
    switch (c) {
    case 'B':
        return cli_parse_double(cmd, "--budget-w", arg, 0, 1e15, &s->budget_w) < 0 ? -1 : 1;
    case 'R': {
        /* a fraction, or a percentage: 0.3 and 30% are the same cut */
        size_t n = strlen(arg);
        if (n > 1 && n < 64 && arg[n - 1] == '%') {
            char b[64];
            memcpy(b, arg, n - 1);
            b[n - 1] = 0;
            if (cli_parse_double(cmd, "--reduce", b, 0, 100, &s->reduce) < 0)
                return -1;
            s->reduce /= 100;
            return 1;
        }
        return cli_parse_double(cmd, "--reduce", arg, 0, 1, &s->reduce) < 0 ? -1 : 1;
    }
    case 'y':
        if (!*arg) {
            cli_usage_error(cmd, "--by: a column name is needed");
            return -1;
        }
        s->src.by = arg;
        return 1;
    case 'f':
        return cli_parse_double(cmd, "--floor", arg, 0, 1, &s->src.floor) < 0 ? -1 : 1;
    case 'p': s->src.pfi_path = arg; return 1;
    case 'j': s->src.jobs_path = arg; return 1;
    case 'c': s->src.columns = arg; return 1;
    case CLI_OPT_STRICT: s->src.strict = 1; return 1;
    case 'o':
        if (strcmp(arg, "throughput") == 0)
            s->objective = PFLEX_OBJECTIVE_THROUGHPUT;
        else if (strcmp(arg, "progress") == 0)
            s->objective = PFLEX_OBJECTIVE_PROGRESS;
        else {
            cli_usage_error(cmd, "--objective: '%s' is not throughput or progress", arg);
            return -1;
        }
        return 1;
    default:
        return 0;
    }
}

int cli_site_check(const char *cmd, const struct cli_site *s)
{
    if (isnan(s->budget_w) == isnan(s->reduce)) {
        cli_usage_error(cmd, "give exactly one of --budget-w W and --reduce F");
        return -1;
    }
    return 0;
}

int cli_site_load(const char *cmd, struct cli_site *s, pflex_alloc_input_t **in,
                  struct pflex_alloc_problem *prob)
{
    pflex_error_t err;
    if (pflex_alloc_input_read(&s->src, in, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        return -cli_input_exit(&err);
    }
    if (!s->warned)
        cli_print_warnings(cmd, (*in)->warnings);
    s->warned = 1;
    memset(prob, 0, sizeof *prob);
    prob->njobs = (*in)->njobs;
    prob->jobs = (*in)->jobs;
    prob->objective = s->objective;
    prob->budget_w = isnan(s->budget_w) ? (1.0 - s->reduce) * pflex_alloc_baseline_w(prob)
                                        : s->budget_w;
    return 0;
}
