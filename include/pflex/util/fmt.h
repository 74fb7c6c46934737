/* fmt.h — writing numbers fast, exactly as printf does.
 *
 * A million-job plan is ten million numbers; printf's "%.*g" spends most
 * of that run in exact multi-precision conversion.  pflex_fmt_g gives the
 * very same text from one extended-precision scaling, and hands the rare
 * value too close to a rounding tie to tell (and anything outside the
 * usual magnitudes) to snprintf: its output is byte-identical to
 * snprintf(buf, n, "%.*g", prec, v) for every double.
 */
#ifndef PFLEX_FMT_H
#define PFLEX_FMT_H

#include <stddef.h>

/* Room for any "%.*g" of a double with prec <= 17, and its NUL. */
#define PFLEX_FMT_G_MAX 32

/* "%.*g" of v into buf (at least PFLEX_FMT_G_MAX bytes), NUL-terminated;
 * prec in 1..17 (others go to snprintf as they are).  Returns the length. */
int pflex_fmt_g(char *buf, double v, int prec);

/* The shortest "%.*g" (15 to 17 digits) that reads back as v: 512.34,
 * not 512.34000000000003.  Returns the length. */
int pflex_fmt_shortest(char *buf, double v);

#endif
