/* rand.h — the seeded random numbers the property tests draw from
 * (splitmix64): one stream per test binary, seeded by each test, so that
 * a test's instances depend on its own seed alone. */
#ifndef PFLEX_TEST_RAND_H
#define PFLEX_TEST_RAND_H

#include <stdint.h>

void rng_seed(uint64_t seed);
uint64_t rng_u64(void);
double rng_unif(double a, double b);    /* uniform in [a, b) */
int rng_int(int a, int b);              /* uniform in [a, b] */

#endif
