/* mix.h — splitmix64's finaliser (internal): one 64-bit word to a
 * well-mixed other, for seeds and counter-based random draws that must be
 * the same on every run and machine; the uniform and normal draws on it. */
#ifndef PFLEX_MIX_H
#define PFLEX_MIX_H

#include <math.h>
#include <stdint.h>

static inline uint64_t pflex_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A uniform draw in (0, 1) fixed by the counter pair (a, b): 53 bits, never
 * 0 or 1, so that its log below is finite. */
static inline double pflex_unif(uint64_t a, uint64_t b)
{
    return ((pflex_mix64(a ^ pflex_mix64(b)) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* A standard normal fixed by (a, b): Box-Muller on the uniforms at
 * counters 2b and 2b + 1, the one draw of the simulator's noise. */
static inline double pflex_gauss(uint64_t a, uint64_t b)
{
    double u = pflex_unif(a, 2 * b), v = pflex_unif(a, 2 * b + 1);
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

#endif
