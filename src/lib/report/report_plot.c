/* report_plot.c — drawing a chart: gnuplot as a child process.
 *
 * The script goes in through an anonymous temporary file rather than a pipe,
 * and the SVG and any error message come back the same way: no pipe means
 * no deadlock on a large chart and no SIGPIPE when gnuplot dies early.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "pflex/report/report.h"

extern char **environ;

/* The whole of a stream from its start, malloc'd and NUL-terminated. */
static char *slurp(FILE *f, size_t *len)
{
    if (fflush(f) != 0 || fseek(f, 0, SEEK_END) != 0)
        return NULL;
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
        return NULL;
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        return NULL;
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    if (len)
        *len = got;
    return buf;
}

int pflex_report_gnuplot_svg(const char *gnuplot, const char *script, size_t script_len,
                             char **svg, pflex_error_t *err)
{
    int rc = -1;
    FILE *in = tmpfile(), *out = tmpfile(), *errf = tmpfile();
    char *text = NULL, *msg = NULL;
    *svg = NULL;
    if (!in || !out || !errf) {
        pflex_error_set(err, "temporary file: %s", strerror(errno));
        goto done;
    }
    if (fwrite(script, 1, script_len, in) != script_len || fflush(in) != 0
        || fseek(in, 0, SEEK_SET) != 0) {
        pflex_error_set(err, "temporary file: %s", strerror(errno));
        goto done;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fileno(in), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fileno(out), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fileno(errf), STDERR_FILENO);
    char *argv[] = {(char *)gnuplot, NULL};
    pid_t pid;
    int e = posix_spawnp(&pid, gnuplot, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) {
        pflex_error_set(err, "cannot run %s: %s", gnuplot, strerror(e));
        goto done;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            pflex_error_set(err, "waiting for %s: %s", gnuplot, strerror(errno));
            goto done;
        }
    size_t len = 0;
    text = slurp(out, &len);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        msg = slurp(errf, NULL);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            pflex_error_set(err, "cannot run %s", gnuplot);
        else
            pflex_error_set(err, "%s failed: %.200s", gnuplot, msg && *msg ? msg : "no message");
        goto done;
    }
    char *start = text ? strstr(text, "<svg") : NULL;
    if (!start) {
        pflex_error_set(err, "%s printed no SVG", gnuplot);
        goto done;
    }
    memmove(text, start, len + 1 - (size_t)(start - text));
    *svg = text;
    text = NULL;
    rc = 0;
done:
    free(text);
    free(msg);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    if (errf)
        fclose(errf);
    return rc;
}

const char *pflex_report_gnuplot_quote(const char *s, char *buf, size_t len)
{
    size_t n = 0;
    if (len < 3) {
        if (len)
            buf[0] = '\0';
        return buf;
    }
    buf[n++] = '\'';
    for (; s && *s; s++) {
        size_t need = *s == '\'' ? 2 : 1;
        if (n + need + 1 >= len)     /* room for the closing quote and the NUL */
            break;
        if (*s == '\'')
            buf[n++] = '\'';
        buf[n++] = (unsigned char)*s < ' ' ? ' ' : *s;
    }
    buf[n++] = '\'';
    buf[n] = '\0';
    return buf;
}

/* gnuplot SVG into the page, every id and reference to one prefixed. */
void pflex_report_paste_svg(FILE *f, const char *svg, int chart)
{
    static const char *const marks[] = {"id='", "id=\"", "href='#", "href=\"#", "url(#"};
    const char *p = svg;
    while (*p) {
        size_t hit = 0;
        for (size_t k = 0; k < sizeof marks / sizeof *marks && !hit; k++) {
            size_t n = strlen(marks[k]);
            if (!strncmp(p, marks[k], n)) {
                fwrite(p, 1, n, f);
                fprintf(f, "c%d-", chart);
                hit = n;
            }
        }
        if (hit) {
            p += hit;
        } else {
            fputc(*p, f);
            p++;
        }
    }
}
