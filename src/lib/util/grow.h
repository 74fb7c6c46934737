/* grow.h — one growable array (internal): the capacity doubles, every size
 * is checked for overflow. */
#ifndef PFLEX_GROW_H
#define PFLEX_GROW_H

#include <stddef.h>

/* Make *p, an array with room for *cap elements of size bytes each, hold at
 * least need elements.  Nothing happens when it already does; otherwise the
 * room doubles from 16 (or more, until it holds need; exactly need where
 * doubling would pass SIZE_MAX bytes) and *p is reallocated: the contents
 * are kept, elements past the old room are undefined.  *p may be NULL with
 * *cap 0.  Returns 0, or -1 with errno ENOMEM when need * size bytes do not
 * fit a size_t or memory runs out, and EINVAL when size is 0; *p and *cap
 * are unchanged then. */
int pflex_grow(void **p, size_t *cap, size_t need, size_t size);

#endif
