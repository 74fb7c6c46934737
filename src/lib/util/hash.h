/* hash.h — one hash of a string (internal), for the tables that find
 * names: the string table, the sweep reader's jobs, the telemetry store's
 * series and strings.  For lookups only: no output order depends on it. */
#ifndef PFLEX_HASH_H
#define PFLEX_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A 64-bit hash of s[0..n), seeded by h: eight bytes a step (names are
 * short: a byte loop costs more than the table it feeds), the length mixed
 * in first and the last word mixed at the end, so that the low bits a
 * table's mask keeps and the high bits it may keep as a tag both move. */
static inline uint64_t pflex_hash_bytes(uint64_t h, const char *s, size_t n)
{
    h ^= n * 0x9e3779b97f4a7c15ULL;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

#endif
