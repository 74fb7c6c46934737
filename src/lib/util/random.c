/* random.c — secrets from getrandom(2) (random.h): tokens a peer must not
 * guess, unlike a clock or an address. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include "lib/util/random.h"

int pflex_random_hex(char *buf, size_t size)
{
    if (!size)
        return -1;
    buf[0] = '\0';
    unsigned char raw[128];
    size_t n = (size - 1) / 2;
    if (n > sizeof raw)
        n = sizeof raw;
    for (size_t got = 0; got < n;) {
        ssize_t r = getrandom(raw + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        buf[2 * i] = hex[raw[i] >> 4];
        buf[2 * i + 1] = hex[raw[i] & 15];
    }
    buf[2 * n] = '\0';
    memset(raw, 0, sizeof raw);
    return 0;
}
