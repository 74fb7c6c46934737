/* bigmem.c — huge-page-backed growable arrays (see bigmem.h). */
#define _GNU_SOURCE     /* mremap */
#include <stdlib.h>
#include <string.h>
#include "lib/util/bigmem.h"
#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__linux__) && defined(MREMAP_MAYMOVE)
#define BIG_MAP 1
#else
#define BIG_MAP 0
#endif

enum { HUGE = 2u << 20 };   /* from here on, arrays are mapped */

static int mapped(size_t cap)
{
    return BIG_MAP && cap >= HUGE;
}

int pflex_big_grow(struct pflex_big *b, size_t bytes)
{
    if (bytes <= b->cap)
        return 0;
    size_t ncap = b->cap ? 2 * b->cap : 64u << 10;
    if (ncap < bytes)
        ncap = bytes;
    if (!mapped(ncap)) {
        void *np = realloc(b->p, ncap);
        if (!np)
            return -1;
        b->p = np;
        b->cap = ncap;
        return 0;
    }
#if BIG_MAP
    ncap = (ncap + HUGE - 1) / HUGE * HUGE;
    void *np;
    if (mapped(b->cap)) {
        np = mremap(b->p, b->cap, ncap, MREMAP_MAYMOVE);
    } else {
        np = mmap(NULL, ncap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (np != MAP_FAILED && b->cap) {
            memcpy(np, b->p, b->cap);
            free(b->p);
        }
    }
    if (np == MAP_FAILED)
        return -1;
#ifdef MADV_HUGEPAGE
    (void)madvise(np, ncap, MADV_HUGEPAGE);   /* a hint: without it, 4 KiB pages */
#endif
    b->p = np;
    b->cap = ncap;
#endif
    return 0;
}

void pflex_big_free(struct pflex_big *b)
{
    if (mapped(b->cap)) {
#if BIG_MAP
        munmap(b->p, b->cap);
#endif
    } else {
        free(b->p);
    }
    b->p = NULL;
    b->cap = 0;
}
