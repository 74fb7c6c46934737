/* utf8.h — one UTF-8 check (internal), RFC 3629's: what the JSON scanner
 * and the CSV names (pflex_name_problem) take as UTF-8. */
#ifndef PFLEX_UTF8_H
#define PFLEX_UTF8_H

#include <stddef.h>

/* One UTF-8 character at p (its lead byte >= 0x80, end past the last byte
 * readable): its code point in *cp and its length in bytes, or -1 when it
 * is not valid UTF-8 (overlong, a surrogate, past U+10FFFF, cut short). */
static inline int pflex_utf8_char(const unsigned char *p, const unsigned char *end, unsigned *cp)
{
    unsigned c = p[0], n, min;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, min = 0x80, c &= 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, min = 0x800, c &= 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, min = 0x10000, c &= 0x07;
    else
        return -1;
    if ((size_t)(end - p) < n)
        return -1;
    for (unsigned i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return -1;
        c = c << 6 | (p[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return -1;
    *cp = c;
    return (int)n;
}

#endif
