/* cli.h — what the pflex subcommands share.  One file per subcommand,
 * entry cmd_<name>(argc, argv); argv[0] is the subcommand's name. */
#ifndef PFLEX_CLI_H
#define PFLEX_CLI_H

#include <getopt.h>
#include <stdio.h>
#include <jansson.h>
#include "pflex/util/error.h"

enum {
    PFLEX_EXIT_OK = 0,
    PFLEX_EXIT_INTERNAL = 1,    /* internal or system error */
    PFLEX_EXIT_BAD_INPUT = 2,   /* bad usage or bad input; nothing on stdout */
    PFLEX_EXIT_INFEASIBLE = 3,  /* budget unreachable; plan still printed */
    PFLEX_EXIT_NOTHING_APPLIED = 4, /* pflex apply set no cap; what was skipped printed */
};

int cmd_pfi(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_allocate(int argc, char **argv);
int cmd_evaluate(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_study(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_controller(int argc, char **argv);
int cmd_vtn(int argc, char **argv);
/* telemetry branch: readers, features, correlation, the PFI model */
int cmd_telemetry(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_correlate(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_jobs(int argc, char **argv);

/* `pflex simulate --day DAY --data DATA --seed SEED --json`'s document into
 * *doc (the caller's), for `pflex study`'s grid day: PFLEX_EXIT_OK, or an
 * exit status with the problem already on stderr ("pflex simulate: ..."). */
int cli_simulate_day(const char *day, const char *data, unsigned long seed, json_t **doc);

/* pflex sweep --backend nvml: the whole command line of `pflex sweep`
 * (src/cli/sweep_nvml.c; the sweep itself is pflex/hw/hwsweep.h). */
int sweep_nvml(int argc, char **argv);

/* "pflex CMD: message" on stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Usage error: message, a hint to run --help, and PFLEX_EXIT_BAD_INPUT. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What getopt_long's '?' meant, said once and plainly: "pflex CMD: unknown
 * option '--foo' (see pflex CMD --help)", or "... '--out' needs a value".
 * main() turns getopt's own messages off (opterr = 0); opts is the
 * command's table.  Returns PFLEX_EXIT_BAD_INPUT. */
int cli_bad_option(const char *cmd, char **argv, const struct option *opts);

/* Print a reader's warnings (lines "file:line: ...\n", or NULL) as
 * "pflex CMD: warning: ..." on stderr. */
void cli_print_warnings(const char *cmd, const char *warnings);

/* The exit status for a library error: PFLEX_EXIT_INTERNAL when the
 * system failed (out of memory, a read error: pflex_error_is_system),
 * else PFLEX_EXIT_BAD_INPUT. */
int cli_input_exit(const pflex_error_t *err);

/* Parse a whole option value as a finite double in [lo, hi]; 0 or -1 with a
 * message printed. */
int cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                     double *out);
/* A power in W (W, kW, MW; a bare number is W) in [lo_w, hi_w], and a
 * share as a fraction (%, or a bare fraction) in [lo, hi]: the one unit
 * grammar of targets (pflex_quantity_parse).  A bare share over hi that
 * fits as a percentage is refused with "did you mean N%?".  0, or -1
 * after a usage error. */
int cli_parse_power(const char *cmd, const char *opt, const char *s, double lo_w, double hi_w,
                    double *out);
int cli_parse_share(const char *cmd, const char *opt, const char *s, double lo, double hi,
                    double *out);

/* The one cap syntax of every command (--caps of sweep, sweep --backend
 * nvml and study): a range 'A:B:STEP' with A and B in either order, run
 * from the higher cap down in steps of STEP W (the lower end is included
 * when a step lands on it), or a list 'C1,C2,...' run in the order given.
 * Every cap positive and finite, none twice, at least min_caps and at
 * most max of them.  Fills caps[0..*n) and *step (STEP, or 0 for a list;
 * step may be NULL).  Returns 0, or PFLEX_EXIT_BAD_INPUT with the message
 * printed (cli_usage_error). */
int cli_parse_caps(const char *cmd, const char *opt, const char *s, size_t min_caps,
                   double *caps, size_t max, size_t *n, double *step);

/* caps[0..n) from the highest down. */
void cli_caps_sort_desc(double *caps, size_t n);

/* Print a JSON document (keys in insertion order) and a newline to stdout;
 * steals the reference.  Returns 0 or -1 on a write error. */
int cli_json_print(json_t *doc);

/* How every command's JSON is written. */
#define CLI_JSON_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12))

/* A finite real as jansson writes it under CLI_JSON_FLAGS ("%.12g", with
 * ".0" when that reads as an integer, the exponent without '+' or leading
 * zeros), into buf (PFLEX_FMT_G_MAX + 4 bytes). */
void cli_json_real_text(char *buf, double x);

/* A JSON real, or null when x is NaN or infinite. */
/* ",%.10g" of v to stdout (pflex_fmt_g, printf's digits, faster): a CSV
 * number field with its comma; "," alone when v is not finite. */
void cli_csv_num(double v);

json_t *cli_json_real(double x);

/* Progress goes to stderr only when it is a terminal or --progress. */
int cli_progress_wanted(int forced);

/* Progress of long work on stderr: on a terminal one line redrawn in place
 * with the share done and the time left; otherwise a line every 10 s (so
 * a log shows the work is alive, and a short run prints nothing). */
struct cli_progress {
    const char *cmd;
    int tty;
    double every_s;     /* between lines off a terminal: 10, or $PFLEX_PROGRESS_EVERY_S */
    double t0, last, shown;
};
void cli_progress_begin(struct cli_progress *p, const char *cmd);
/* done in [0, 1]; what: a few words on where the work is (or NULL). */
void cli_progress_show(struct cli_progress *p, double done, const char *what);
/* The closing line: the time the work took (a terminal's line is ended). */
void cli_progress_end(struct cli_progress *p);

/* Write text to path atomically (a temporary file beside it, fsync'd and
 * renamed).  Returns 0 or -1 with errno. */
int cli_write_atomic(const char *path, const char *text, size_t len);

/* Before fitting: the BLAS on one thread, so that sums run in one order
 * (common.c says why). */
void cli_blas_init(void);

/* Print a help text to stdout; returns PFLEX_EXIT_OK. */
int cli_help(const char *text);


#endif
