/* strtab.h — a table of strings, each held once, found by hash (internal):
 * names (hosts, job ids, jobs) to dense indices 0, 1, ... in the order
 * they were first added. */
#ifndef PFLEX_STRTAB_H
#define PFLEX_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct pflex_strtab {
    char **s;           /* the strings, copied, by index */
    size_t n, cap;
    uint32_t *slot;     /* open addressing, at most half full: index + 1, 0 = empty */
    size_t nslot;
};

/* Index of s[0..n) (which may hold a NUL), added (copied) when new, with
 * *added (may be NULL) 1 then; -1 out of memory. */
long pflex_strtab_intern(struct pflex_strtab *t, const char *s, size_t n, int *added);
/* Index of s[0..n), or -1 when it is not in t. */
long pflex_strtab_find(const struct pflex_strtab *t, const char *s, size_t n);
/* Forget every string, keeping the room. */
void pflex_strtab_clear(struct pflex_strtab *t);
void pflex_strtab_fini(struct pflex_strtab *t);

#endif
