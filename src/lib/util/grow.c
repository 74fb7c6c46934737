/* grow.c — one growable array (see grow.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "lib/util/grow.h"

enum { GROW_FIRST = 16 };   /* the first room, in elements */

int pflex_grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (size == 0) {
        errno = EINVAL;
        return -1;
    }
    if (need <= *cap)
        return 0;
    size_t max = SIZE_MAX / size;   /* the most elements whose bytes fit a size_t */
    if (need > max) {
        errno = ENOMEM;
        return -1;
    }
    size_t n = *cap ? *cap : GROW_FIRST;
    while (n < need)
        n = n <= max / 2 ? 2 * n : need;
    if (n > max)                    /* a first room of 16 huge elements */
        n = need;
    void *q = realloc(*p, n * size);
    if (!q) {
        errno = ENOMEM;
        return -1;
    }
    *p = q;
    *cap = n;
    return 0;
}
