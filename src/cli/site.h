/* site.h — what `pflex allocate` and `pflex evaluate` share: the options
 * that describe a site cut (budget, jobs, floors, objective) and turning
 * them into an allocation problem. */
#ifndef PFLEX_CLI_SITE_H
#define PFLEX_CLI_SITE_H

#include <jansson.h>
#include "pflex/flex/alloc.h"

struct cli_site {
    struct pflex_alloc_source src;
    double budget_w;            /* NaN unless --budget-w */
    double reduce;              /* NaN unless --reduce */
    enum pflex_objective objective;
    int warned;                 /* the input's warnings are printed (once a command) */
};

/* getopt_long entries of the shared options; end a command's table with
 * CLI_SITE_OPTIONS and its own entries. */
#define CLI_SITE_OPTIONS \
    {"budget-w", required_argument, NULL, 'B'}, \
    {"reduce", required_argument, NULL, 'R'}, \
    {"pfi", required_argument, NULL, 'p'}, \
    {"jobs", required_argument, NULL, 'j'}, \
    {"floor", required_argument, NULL, 'f'}, \
    {"objective", required_argument, NULL, 'o'}, \
    {"columns", required_argument, NULL, 'c'}, \
    {"by", required_argument, NULL, 'y'}, \
    {"strict", no_argument, NULL, CLI_OPT_STRICT}

/* doc's "curve_fit" (the method, and per job read through the fit its
 * caps, raw and fitted power and throughput, whether flat, the model's
 * lowest cap) and "skipped" (the bad jobs left out: job, why). */
void cli_curve_fit_json(json_t *doc, const pflex_alloc_input_t *in);

/* The table's line on the same, only where some job is read through the
 * fit or skipped: "curve fit: ..." on stdout. */
void cli_curve_fit_note(const pflex_alloc_input_t *in);

/* getopt value of --strict (a bad sweep job is fatal), in every command
 * that reads a sweep into curves */
#define CLI_OPT_STRICT 1001

void cli_site_init(struct cli_site *s);

/* Take getopt's option c with argument arg when it is a shared one.
 * Returns 1 when taken, 0 when not shared, -1 after a usage error. */
int cli_site_option(const char *cmd, struct cli_site *s, int c, const char *arg);

/* Check the options once parsed: exactly one of --budget-w and --reduce. */
int cli_site_check(const char *cmd, const struct cli_site *s);

/* Read the jobs (s->src) and fill prob with them, the objective and the
 * budget; print the reader's warnings the first time.  Returns 0, or minus
 * the exit code (PFLEX_EXIT_BAD_INPUT, PFLEX_EXIT_INTERNAL for out of
 * memory or a read error) with the message printed. */
int cli_site_load(const char *cmd, struct cli_site *s, pflex_alloc_input_t **in,
                  struct pflex_alloc_problem *prob);


#endif
