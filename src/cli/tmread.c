/* tmread.c — reading telemetry inputs for the CLI (see tmread.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "cli/cli.h"
#include "cli/tmread.h"

void tmread_init(struct tmread *r)
{
    memset(r, 0, sizeof *r);
}

static int count(const char *cmd, const char *opt, const char *arg, double lo, double hi,
                 size_t *out)
{
    double v;
    if (cli_parse_double(cmd, opt, arg, lo, hi, &v) < 0)
        return -1;
    *out = (size_t)v;
    return 1;
}

/* --tz ZONE: the zone nvidia-smi's stamps are in.  UTC (the default), a
 * fixed offset (+05:30), an IANA name (America/Phoenix) that the system's
 * zone database holds, or local (this machine's TZ).  The process's TZ
 * is set to it: the command reads its inputs in one thread. */
static int tz_option(struct tmread *r, const char *cmd, const char *arg)
{
    char posix[64];
    int hh, mm, n = 0;
    char sign;
    if (!strcmp(arg, "UTC") || !strcmp(arg, "Z")) {
        r->ro.smi_local_time = 0;
        return 1;
    }
    if (!strcmp(arg, "local")) {
        r->ro.smi_local_time = 1;
        return 1;
    }
    if (sscanf(arg, "%c%2d:%2d%n", &sign, &hh, &mm, &n) == 3 && (size_t)n == strlen(arg) &&
        (sign == '+' || sign == '-') && hh <= 14 && mm < 60) {
        /* POSIX TZ offsets are west-positive: +05:30 is "UTC-05:30" */
        snprintf(posix, sizeof posix, "UTC%c%02d:%02d", sign == '+' ? '-' : '+', hh, mm);
    } else {
        const char *dir = getenv("TZDIR") ? getenv("TZDIR") : "/usr/share/zoneinfo";
        char path[512];
        struct stat st;
        if (!*arg || strstr(arg, "..") || arg[0] == '/' || strlen(arg) > 60 ||
            snprintf(path, sizeof path, "%s/%s", dir, arg) >= (int)sizeof path ||
            stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
            cli_usage_error(cmd, "--tz '%s': not a zone (UTC, local, +HH:MM, or a name of the "
                            "zone database such as Europe/Berlin)", arg);
            return -1;
        }
        snprintf(posix, sizeof posix, "%s", arg);
    }
    setenv("TZ", posix, 1);
    tzset();
    r->ro.smi_local_time = 1;
    return 1;
}

int tmread_option(struct tmread *r, const char *cmd, int c, const char *arg)
{
    size_t v;
    switch (c) {
    case TMR_FORMAT:
        if (pflex_tm_format_parse(arg, &r->ro.format) < 0) {
            cli_usage_error(cmd, "--format '%s': auto, nvidia-smi, dcgmi, prometheus, "
                            "prometheus-json or pflex", arg);
            return -1;
        }
        return 1;
    case TMR_JOB: r->ro.job = arg; return 1;
    case TMR_HOST: r->ro.host = arg; return 1;
    case TMR_JOBMAP: r->job_map = arg; return 1;
    case TMR_JOBFILE: r->job_from_file = 1; return 1;
    case TMR_MAXLINE:
        if (count(cmd, "--max-line", arg, 16, 1 << 30, &r->lim.max_line) < 0)
            return -1;
        return 1;
    case TMR_MAXSERIES:
        if (count(cmd, "--max-series", arg, 1, 4e9, &r->lim.max_series) < 0)
            return -1;
        return 1;
    case TMR_MAXBYTES:
        if (count(cmd, "--max-bytes", arg, 1, 1e12, &r->lim.max_fetch) < 0)
            return -1;
        return 1;
    case TMR_TIMEOUT:
        if (count(cmd, "--timeout-ms", arg, 1, 3.6e6, &v) < 0)
            return -1;
        r->lim.timeout_ms = (long)v;
        return 1;
    case TMR_TZ:
        return tz_option(r, cmd, arg);
    default:
        return 0;
    }
}

int tmread_load(struct tmread *r, const char *cmd, int n, char **inputs, pflex_tm_t **out)
{
    static char *stdin_only[] = {"-"};
    pflex_error_t err;
    pflex_tm_jobmap_t *map = NULL;
    *out = NULL;
    if (n <= 0) {
        inputs = stdin_only;
        n = 1;
    }
    if (r->job_map && pflex_tm_jobmap_read_file(r->job_map, &map, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        return PFLEX_EXIT_BAD_INPUT;
    }
    pflex_tm_t *t = pflex_tm_create(&r->lim);
    if (!t) {
        pflex_tm_jobmap_destroy(map);
        cli_error(cmd, "out of memory");
        return PFLEX_EXIT_INTERNAL;
    }
    for (int i = 0; i < n; i++) {
        struct pflex_tm_read_opts o = r->ro;
        o.time0_s = i;  /* successive scrapes without timestamps */
        char jobname[256];
        if (r->job_from_file && strcmp(inputs[i], "-") && !pflex_tm_is_url(inputs[i])) {
            /* "runs/llama-70b.prom" -> "llama-70b" */
            const char *b = strrchr(inputs[i], '/');
            b = b ? b + 1 : inputs[i];
            snprintf(jobname, sizeof jobname, "%s", b);
            char *dot = strrchr(jobname, '.');
            if (dot && dot != jobname)
                *dot = 0;
            o.job = jobname;
        }
        int rc = pflex_tm_is_url(inputs[i]) ? pflex_tm_fetch(t, inputs[i], &o, &err)
                                            : pflex_tm_read_file(t, inputs[i], &o, &err);
        if (rc < 0) {
            cli_error(cmd, "%s", err.text);
            pflex_tm_destroy(t);
            pflex_tm_jobmap_destroy(map);
            return PFLEX_EXIT_BAD_INPUT;
        }
    }
    if (map)
        pflex_tm_jobmap_apply(t, map);
    pflex_tm_jobmap_destroy(map);
    if (pflex_tm_sort(t, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        pflex_tm_destroy(t);
        return PFLEX_EXIT_INTERNAL;
    }
    *out = t;
    return PFLEX_EXIT_OK;
}
