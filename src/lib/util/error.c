/* error.c — filling pflex_error_t. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "pflex/error.h"

int pflex_error_set(pflex_error_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int pflex_error_sys(pflex_error_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
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
