/* pflex/util/error.h — how the library reports failure.
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

/* The same for a failure of the system, not of the input: out of memory,
 * a read or a write error.  Its message ends in "out of memory" or holds
 * ": read error: <reason>" or ": write error: <reason>", which is how
 * pflex_error_is_system tells it (the struct stays one string, so that
 * every {{0}} initialiser holds). */
int pflex_error_sys(pflex_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* 1 when err holds a system failure (the CLI exits 1), 0 when it is about
 * the input (exit 2). */
int pflex_error_is_system(const pflex_error_t *err);

#endif
