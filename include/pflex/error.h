/* pflex/error.h — how the library reports failure.
 *
 * Library functions never print or exit.  They return -1 (or NULL) and fill
 * a pflex_error_t with a one-line message the caller can show as is; parsers
 * write it as "file:line: what is wrong".
 */
#ifndef PFLEX_ERROR_H
#define PFLEX_ERROR_H

typedef struct pflex_error {
    char text[256];
} pflex_error_t;

/* Format a message into err (err may be NULL).  Always returns -1 so that
 * callers can write `return pflex_error_set(err, ...);`. */
int pflex_error_set(pflex_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
