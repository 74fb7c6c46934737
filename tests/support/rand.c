/* rand.c — splitmix64 and what the tests make of it (see rand.h). */
#include "support/rand.h"

static uint64_t state;

void rng_seed(uint64_t seed)
{
    state = seed;
}

uint64_t rng_u64(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double rng_unif(double a, double b)
{
    return a + (b - a) * (double)(rng_u64() >> 11) / 9007199254740992.0;
}

int rng_int(int a, int b)
{
    return a + (int)(rng_u64() % (uint64_t)(b - a + 1));
}
