/* error.c — filling pflex_error_t. */
#include <stdarg.h>
#include <stdio.h>
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
