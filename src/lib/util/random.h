/* random.h — secrets from the kernel's random source (internal). */
#ifndef PFLEX_RANDOM_H
#define PFLEX_RANDOM_H

#include <stddef.h>

/* buf gets (size - 1) / 2 bytes from getrandom(2), as lowercase hex, NUL
 * terminated.  0, or -1 when the kernel gave none (buf is then ""). */
int pflex_random_hex(char *buf, size_t size);

#endif
