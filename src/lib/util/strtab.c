/* strtab.c — see strtab.h. */
#include <stdlib.h>
#include <string.h>
#include "lib/util/strtab.h"
#include "lib/util/grow.h"
#include "lib/util/hash.h"

static uint64_t hash(const char *s, size_t n)
{
    return pflex_hash_bytes(0, s, n);
}

/* The slot holding s[0..n), or the empty one where it would go. */
static size_t slot_of(const struct pflex_strtab *t, const char *s, size_t n)
{
    size_t h = hash(s, n) & (t->nslot - 1);
    while (t->slot[h]) {
        const char *x = t->s[t->slot[h] - 1];
        /* by length first: s may hold a NUL, and x may be shorter than n */
        if (strlen(x) == n && memcmp(x, s, n) == 0)
            break;
        h = (h + 1) & (t->nslot - 1);
    }
    return h;
}

long pflex_strtab_find(const struct pflex_strtab *t, const char *s, size_t n)
{
    if (!t->nslot)
        return -1;
    size_t h = slot_of(t, s, n);
    return t->slot[h] ? (long)t->slot[h] - 1 : -1;
}

long pflex_strtab_intern(struct pflex_strtab *t, const char *s, size_t n, int *added)
{
    if (added)
        *added = 0;
    if ((t->n + 1) * 2 > t->nslot) {
        size_t ns = t->nslot ? t->nslot * 2 : 64;
        uint32_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return -1;
        for (size_t i = 0; i < t->n; i++) {
            size_t h = hash(t->s[i], strlen(t->s[i])) & (ns - 1);
            while (sl[h])
                h = (h + 1) & (ns - 1);
            sl[h] = (uint32_t)i + 1;
        }
        free(t->slot);
        t->slot = sl;
        t->nslot = ns;
    }
    size_t h = slot_of(t, s, n);
    if (t->slot[h])
        return (long)t->slot[h] - 1;
    if (pflex_grow((void **)&t->s, &t->cap, t->n + 1, sizeof *t->s) < 0)
        return -1;
    char *d = malloc(n + 1);
    if (!d)
        return -1;
    memcpy(d, s, n);
    d[n] = '\0';
    t->s[t->n] = d;
    t->slot[h] = (uint32_t)t->n + 1;
    if (added)
        *added = 1;
    return (long)t->n++;
}

void pflex_strtab_clear(struct pflex_strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->s[i]);
    t->n = 0;
    if (t->slot)
        memset(t->slot, 0, t->nslot * sizeof *t->slot);
}

void pflex_strtab_fini(struct pflex_strtab *t)
{
    pflex_strtab_clear(t);
    free(t->s);
    free(t->slot);
    memset(t, 0, sizeof *t);
}
