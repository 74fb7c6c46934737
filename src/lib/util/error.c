/* error.c — filling pflex_error_t. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "pflex/util/error.h"

__attribute__((format(printf, 2, 0)))
static int vset(pflex_error_t *err, const char *fmt, va_list ap)
{
    if (err)
        vsnprintf(err->text, sizeof err->text, fmt, ap);
    return -1;
}

int pflex_error_set(pflex_error_t *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, fmt, ap);
    va_end(ap);
    return -1;
}

/* A system failure is told by its text alone (pflex/util/error.h), so this is
 * pflex_error_set under the name that says what the caller means. */
int pflex_error_sys(pflex_error_t *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, fmt, ap);
    va_end(ap);
    return -1;
}

int pflex_error_is_system(const pflex_error_t *err)
{
    static const char oom[] = "out of memory";
    size_t n = strlen(err->text), k = sizeof oom - 1;
    return (n >= k && strcmp(err->text + n - k, oom) == 0)
           || strstr(err->text, ": read error: ") != NULL
           || strstr(err->text, ": write error: ") != NULL;
}
