/* common.c — helpers shared by the subcommands. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "pflex/flex/target.h"
#include "pflex/util/fmt.h"

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

/* A whole number of watts (or any real) from s up to a delimiter in
 * delims; *end after it.  -1 when there is none there. */
static int cap_number(const char *s, const char *delims, double *v, const char **end)
{
    char *e;
    errno = 0;
    *v = strtod(s, &e);
    if (e == s || errno || !isfinite(*v) || (*e && !strchr(delims, *e)) || isspace((unsigned char)*s))
        return -1;
    *end = e;
    return 0;
}

int cli_parse_caps(const char *cmd, const char *opt, const char *s, size_t min_caps,
                   double *caps, size_t max, size_t *n, double *step)
{
    *n = 0;
    if (step)
        *step = 0;
    if (strchr(s, ':')) {
        double a, b, st;
        const char *p;
        if (cap_number(s, ":", &a, &p) < 0 || *p != ':' || cap_number(p + 1, ":", &b, &p) < 0
            || *p != ':' || cap_number(p + 1, "", &st, &p) < 0)
            return cli_usage_error(cmd, "%s: '%s' is not A:B:STEP (e.g. 700:300:100) or a list "
                                   "of caps in W (e.g. 700,600,500)", opt, s);
        if (!(a > 0) || !(b > 0) || !(st > 0))
            return cli_usage_error(cmd, "%s: '%s': caps and step must be positive", opt, s);
        double hi = a > b ? a : b, lo = a > b ? b : a;
        for (size_t k = 0;; k++) {
            double c = hi - st * (double)k;
            if (c < lo - 1e-9 * hi)
                break;
            if (*n == max)
                return cli_usage_error(cmd, "%s: '%s' gives more than %zu caps", opt, s, max);
            caps[(*n)++] = c;
        }
        if (step)
            *step = st;
    } else {
        const char *p = s;
        for (;;) {
            double c;
            if (cap_number(p, ",", &c, &p) < 0)
                return cli_usage_error(cmd, "%s: '%s' is not a list of caps in W (e.g. "
                                       "700,600,500) or A:B:STEP (e.g. 700:300:100)", opt, s);
            if (!(c > 0))
                return cli_usage_error(cmd, "%s: %g W: a cap must be positive", opt, c);
            for (size_t i = 0; i < *n; i++)
                if (caps[i] == c)
                    return cli_usage_error(cmd, "%s: %g W is given twice", opt, c);
            if (*n == max)
                return cli_usage_error(cmd, "%s: more than %zu caps", opt, max);
            caps[(*n)++] = c;
            if (!*p)
                break;
            p++;
        }
    }
    if (*n < min_caps)
        return cli_usage_error(cmd, "%s: '%s' gives %zu cap%s; at least %zu are needed", opt, s,
                               *n, *n == 1 ? "" : "s", min_caps);
    return 0;
}

void cli_caps_sort_desc(double *caps, size_t n)
{
    for (size_t i = 1; i < n; i++)     /* a few hundred caps at most */
        for (size_t j = i; j > 0 && caps[j] > caps[j - 1]; j--) {
            double t = caps[j];
            caps[j] = caps[j - 1];
            caps[j - 1] = t;
        }
}

int cli_bad_option(const char *cmd, char **argv, const struct option *opts)
{
    const char *a = optind > 0 ? argv[optind - 1] : "";
    if (strncmp(a, "--", 2) == 0 && a[2]) {
        size_t n = strcspn(a + 2, "=");
        for (const struct option *o = opts; o && o->name; o++)
            if (strlen(o->name) == n && strncmp(o->name, a + 2, n) == 0) {
                if (o->has_arg == required_argument && !a[2 + n]) {
                    fprintf(stderr, "pflex %s: %s needs a value (see pflex %s --help)\n", cmd, a,
                            cmd);
                    return PFLEX_EXIT_BAD_INPUT;
                }
                if (o->has_arg == no_argument && a[2 + n] == '=') {
                    fprintf(stderr, "pflex %s: --%s takes no value (see pflex %s --help)\n", cmd,
                            o->name, cmd);
                    return PFLEX_EXIT_BAD_INPUT;
                }
            }
        fprintf(stderr, "pflex %s: unknown option '%.*s' (see pflex %s --help)\n", cmd,
                (int)(n + 2), a, cmd);
    } else if (optopt > 0 && optopt < 128) {
        fprintf(stderr, "pflex %s: unknown option '-%c' (see pflex %s --help)\n", cmd, optopt, cmd);
    } else {
        fprintf(stderr, "pflex %s: unknown option '%s' (see pflex %s --help)\n", cmd, a, cmd);
    }
    return PFLEX_EXIT_BAD_INPUT;
}

void cli_print_warnings(const char *cmd, const char *warnings)
{
    for (const char *p = warnings; p && *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(stderr, "pflex %s: warning: %.*s\n", cmd, n, p);
        p += n + (nl != NULL);
    }
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

int cli_parse_power(const char *cmd, const char *opt, const char *s, double lo_w, double hi_w,
                    double *out)
{
    pflex_error_t err;
    if (pflex_quantity_parse_in(s, PFLEX_QTY_POWER | PFLEX_QTY_BARE_W, "power", lo_w, hi_w, out, &err) < 0)
        return cli_usage_error(cmd, "%s: %s", opt, err.text), -1;
    return 0;
}

int cli_parse_share(const char *cmd, const char *opt, const char *s, double lo, double hi,
                    double *out)
{
    pflex_error_t err;
    if (pflex_quantity_parse_in(s, PFLEX_QTY_SHARE | PFLEX_QTY_BARE_FRACTION, "share", lo, hi, out, &err) < 0)
        return cli_usage_error(cmd, "%s: %s", opt, err.text), -1;
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

void cli_csv_num(double v)
{
    char b[PFLEX_FMT_G_MAX + 1];
    b[0] = ',';
    int n = isfinite(v) ? pflex_fmt_g(b + 1, v, 10) : 0;
    fwrite(b, 1, (size_t)n + 1, stdout);
}

json_t *cli_json_real(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

int cli_progress_wanted(int forced)
{
    return forced || isatty(STDERR_FILENO);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "2 min 05 s", "48 s", "1 h 03 min" */
static void span_text(char *b, size_t n, double s)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(b, n, "%ld h %02ld min", t / 3600, t % 3600 / 60);
    else if (t >= 60)
        snprintf(b, n, "%ld min %02ld s", t / 60, t % 60);
    else
        snprintf(b, n, "%ld s", t);
}

void cli_progress_begin(struct cli_progress *p, const char *cmd)
{
    p->cmd = cmd;
    p->tty = isatty(STDERR_FILENO);
    const char *e = getenv("PFLEX_PROGRESS_EVERY_S");
    p->every_s = e && atof(e) > 0 ? atof(e) : 10;
    p->t0 = p->last = mono_s();
    p->shown = 0;
}

void cli_progress_show(struct cli_progress *p, double done, const char *what)
{
    double now = mono_s(), took = now - p->t0;
    if (now - p->last < (p->tty ? 0.1 : p->every_s))
        return;
    p->last = now;
    p->shown = 1;
    done = done < 0 ? 0 : done > 1 ? 1 : done;
    char left[64] = "";
    if (done > 0.01 && took > 1) {
        char span[48];
        span_text(span, sizeof span, took * (1 - done) / done);
        snprintf(left, sizeof left, ", %s left", span);
    }
    fprintf(stderr, "%spflex %s: %3.0f %%%s%s%s%s", p->tty ? "\r" : "", p->cmd, 100 * done,
            what ? " (" : "", what ? what : "", what ? ")" : "", left);
    fputs(p->tty ? "\033[K" : "\n", stderr);
    fflush(stderr);
}

void cli_progress_end(struct cli_progress *p)
{
    if (!p->shown)
        return;
    char span[48];
    span_text(span, sizeof span, mono_s() - p->t0);
    fprintf(stderr, "%spflex %s: done in %s%s\n", p->tty ? "\r" : "", p->cmd, span, p->tty ? "\033[K" : "");
    p->shown = 0;
}

int cli_help(const char *text)
{
    fputs(text, stdout);
    return PFLEX_EXIT_OK;
}

int cli_write_atomic(const char *path, const char *text, size_t len)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return -1;
    snprintf(tmp, n + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    (void)fchmod(fd, 0644);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        off += (size_t)w;
    }
    int ok = off == len && fsync(fd) == 0;
    if (close(fd) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        errno = e ? e : EIO;
        return -1;
    }
    free(tmp);
    return 0;
}

/* OpenBLAS, when it is the BLAS linked (see the Makefile), runs on one
 * thread: its threads split some sums, whose order would then depend on the
 * machine, and the fits' outputs are to be the same everywhere.  Weak, so
 * that GSL's reference CBLAS links as well. */
extern void openblas_set_num_threads(int n) __attribute__((weak));

void cli_blas_init(void)
{
    if (openblas_set_num_threads)
        openblas_set_num_threads(1);
}
