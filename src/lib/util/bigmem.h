/* bigmem.h — large growable arrays for the readers (internal).
 *
 * On the machines pflex runs on, first-touch page faults cost more than
 * reading the data: a million-job sweep spends most of its time faulting
 * in fresh memory.  Arrays of 2 MiB and more are therefore mapped with
 * transparent huge pages requested (one fault per 2 MiB instead of 512)
 * and grown with mremap (pages move, nothing is copied).  Smaller arrays
 * and systems without these calls use realloc.  Bytes past the old size
 * are undefined after a grow.
 */
#ifndef PFLEX_BIGMEM_H
#define PFLEX_BIGMEM_H

#include <stddef.h>

struct pflex_big {
    void *p;
    size_t cap;     /* bytes */
};

/* Grow b to hold at least bytes (contents kept): pflex_big_reserve, the
 * room check inline (callers reserve a few times a job, nearly always with
 * room to spare), pflex_big_grow when it must grow.
 * Returns 0, or -1 when out of memory (b unchanged). */
int pflex_big_grow(struct pflex_big *b, size_t bytes);

static inline int pflex_big_reserve(struct pflex_big *b, size_t bytes)
{
    return bytes <= b->cap ? 0 : pflex_big_grow(b, bytes);
}

/* Release b's storage; b is empty afterwards. */
void pflex_big_free(struct pflex_big *b);

#endif
