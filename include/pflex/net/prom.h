/* pflex/net/prom.h — the Prometheus text exposition format (version 0.0.4).
 *
 * A writer into a growing buffer: declare a family (HELP and TYPE lines)
 * once, then add its samples.  Label values are escaped (\\, \", \n); a
 * NaN or infinite value is written as Prometheus spells it (NaN, +Inf,
 * -Inf) only when the caller asks, else the sample is left out, as
 * dcgm-exporter leaves out what a GPU does not report.
 */
#ifndef PFLEX_PROM_H
#define PFLEX_PROM_H

#include <stddef.h>

typedef struct pflex_prom pflex_prom_t;

/* The content type of the format, for an HTTP answer. */
#define PFLEX_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

pflex_prom_t *pflex_prom_create(void);
void pflex_prom_destroy(pflex_prom_t *p);

/* "# HELP name help" and "# TYPE name type" (gauge, counter, untyped). */
void pflex_prom_family(pflex_prom_t *p, const char *name, const char *type, const char *help);

/* One sample: name{k1="v1",...} value.  labels is k1, v1, k2, v2, ...,
 * NULL (may be NULL itself).  Non-finite values are skipped. */
void pflex_prom_sample(pflex_prom_t *p, const char *name, const char *const *labels, double v);

/* The text so far and its length; NULL when memory ran out at any point. */
const char *pflex_prom_text(const pflex_prom_t *p, size_t *len);

/* Hand the buffer over (malloc'd, NUL-terminated; the writer is emptied). */
char *pflex_prom_take(pflex_prom_t *p, size_t *len);

#endif
