/* tmread.h — the telemetry-reading options `pflex telemetry` and `pflex
 * features` share, and the loop that reads every file or URL. */
#ifndef PFLEX_CLI_TMREAD_H
#define PFLEX_CLI_TMREAD_H

#include <getopt.h>
#include "pflex/io/telemetry.h"

struct tmread {
    struct pflex_tm_limits lim;
    struct pflex_tm_read_opts ro;
    const char *job_map;
    int job_from_file;      /* each file's samples belong to the job its name gives */
};

enum { TMR_FORMAT = 1000, TMR_JOB, TMR_HOST, TMR_JOBMAP, TMR_MAXLINE, TMR_MAXSERIES,
       TMR_MAXBYTES, TMR_TIMEOUT, TMR_JOBFILE, TMR_TZ };

#define TMREAD_LONG_OPTIONS \
    {"format", required_argument, NULL, TMR_FORMAT}, \
    {"job", required_argument, NULL, TMR_JOB}, \
    {"host", required_argument, NULL, TMR_HOST}, \
    {"job-map", required_argument, NULL, TMR_JOBMAP}, \
    {"job-from-file", no_argument, NULL, TMR_JOBFILE}, \
    {"max-line", required_argument, NULL, TMR_MAXLINE}, \
    {"max-series", required_argument, NULL, TMR_MAXSERIES}, \
    {"max-bytes", required_argument, NULL, TMR_MAXBYTES}, \
    {"timeout-ms", required_argument, NULL, TMR_TIMEOUT}, \
    {"tz", required_argument, NULL, TMR_TZ}

void tmread_init(struct tmread *r);
/* 1: the option was one of these, 0: not, -1: bad value (message printed). */
int tmread_option(struct tmread *r, const char *cmd, int c, const char *arg);
/* Read every input (files or URLs; none: stdin) into a new store, applies
 * the job map and sorts.  Returns PFLEX_EXIT_OK with *out, or an exit code
 * with the message printed. */
int tmread_load(struct tmread *r, const char *cmd, int n, char **inputs, pflex_tm_t **out);

#endif
