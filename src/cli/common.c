/* common.c — helpers shared by the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "pflex/fmt.h"

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "pflex %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "pflex %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'pflex %s --help'.\n", cmd);
    return PFLEX_EXIT_BAD_INPUT;
}

int cli_input_exit(const pflex_error_t *err)
{
    return pflex_error_is_system(err) ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_BAD_INPUT;
}

int cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                     double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) {
        cli_usage_error(cmd, "%s: '%s' is not a number", opt, s);
        return -1;
    }
    if (v < lo || v > hi) {
        cli_usage_error(cmd, "%s: %s is outside [%g, %g]", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_json_print(json_t *doc)
{
    int rc = json_dumpf(doc, stdout, CLI_JSON_FLAGS);
    json_decref(doc);
    if (rc == 0)
        rc = fputc('\n', stdout) == EOF ? -1 : 0;
    if (fflush(stdout) != 0)
        rc = -1;
    return rc;
}

void cli_json_real_text(char *buf, double x)
{
    int n = pflex_fmt_g(buf, x, 12), point = 0;
    char *e = NULL;
    for (int i = 0; i < n && !e; i++) {
        if (buf[i] == '.')
            point = 1;
        else if (buf[i] == 'e')
            e = buf + i;
    }
    if (!e) {
        if (!point)
            memcpy(buf + n, ".0", 3);
        return;
    }
    char *d = e + 1, *from = d;     /* "1e+20" -> "1e20", "1e-05" -> "1e-5" */
    if (*d == '-')
        d++, from++;
    else if (*d == '+')
        from++;
    while (*from == '0' && from[1])
        from++;
    memmove(d, from, strlen(from) + 1);
}

json_t *cli_json_real(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

int cli_progress_wanted(int forced)
{
    return forced || isatty(STDERR_FILENO);
}

int cli_help(const char *text)
{
    fputs(text, stdout);
    return PFLEX_EXIT_OK;
}
