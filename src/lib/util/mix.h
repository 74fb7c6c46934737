/* mix.h — splitmix64's finaliser (internal): one 64-bit word to a
 * well-mixed other, for seeds and counter-based random draws that must be
 * the same on every run and machine. */
#ifndef PFLEX_MIX_H
#define PFLEX_MIX_H

#include <stdint.h>

static inline uint64_t pflex_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

#endif
