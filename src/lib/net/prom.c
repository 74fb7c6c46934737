/* prom.c — the Prometheus text exposition writer (pflex/net/prom.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "lib/util/grow.h"
#include "pflex/net/prom.h"

struct pflex_prom {
    char *buf;
    size_t len, cap;
    int failed;
};

pflex_prom_t *pflex_prom_create(void)
{
    return calloc(1, sizeof(pflex_prom_t));
}

void pflex_prom_destroy(pflex_prom_t *p)
{
    if (p) {
        free(p->buf);
        free(p);
    }
}

static void put(pflex_prom_t *p, const char *s, size_t n)
{
    if (p->failed)
        return;
    /* the length and its NUL checked for overflow with the room */
    if (n > SIZE_MAX - p->len - 1 || pflex_grow((void **)&p->buf, &p->cap, p->len + n + 1, 1) < 0) {
        p->failed = 1;
        return;
    }
    memcpy(p->buf + p->len, s, n);
    p->len += n;
    p->buf[p->len] = '\0';
}

static void puts_(pflex_prom_t *p, const char *s)
{
    put(p, s, strlen(s));
}

/* HELP text escapes \ and newline; label values also ". */
static void escaped(pflex_prom_t *p, const char *s, int quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            put(p, "\\\\", 2);
        else if (*s == '\n')
            put(p, "\\n", 2);
        else if (quote && *s == '"')
            put(p, "\\\"", 2);
        else
            put(p, s, 1);
    }
}

void pflex_prom_family(pflex_prom_t *p, const char *name, const char *type, const char *help)
{
    puts_(p, "# HELP ");
    puts_(p, name);
    puts_(p, " ");
    escaped(p, help, 0);
    puts_(p, "\n# TYPE ");
    puts_(p, name);
    puts_(p, " ");
    puts_(p, type);
    puts_(p, "\n");
}

void pflex_prom_sample(pflex_prom_t *p, const char *name, const char *const *labels, double v)
{
    if (!isfinite(v))
        return;
    puts_(p, name);
    if (labels && labels[0]) {
        puts_(p, "{");
        for (size_t k = 0; labels[k] && labels[k + 1]; k += 2) {
            if (k)
                puts_(p, ",");
            puts_(p, labels[k]);
            puts_(p, "=\"");
            escaped(p, labels[k + 1], 1);
            puts_(p, "\"");
        }
        puts_(p, "}");
    }
    char num[40];
    /* Integers as integers (counters, MHz), the rest with 17 digits. */
    if (v == nearbyint(v) && fabs(v) < 1e15)
        snprintf(num, sizeof num, " %.0f\n", v);
    else
        snprintf(num, sizeof num, " %.17g\n", v);
    puts_(p, num);
}

const char *pflex_prom_text(const pflex_prom_t *p, size_t *len)
{
    if (!p || p->failed)
        return NULL;
    if (len)
        *len = p->len;
    return p->buf ? p->buf : "";
}

char *pflex_prom_take(pflex_prom_t *p, size_t *len)
{
    if (!p || p->failed)
        return NULL;
    char *b = p->buf ? p->buf : strdup("");
    if (len)
        *len = p->buf ? p->len : 0;
    p->buf = NULL;
    p->len = p->cap = 0;
    return b;
}
