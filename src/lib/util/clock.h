/* clock.h — the clocks the daemons and commands time things by
 * (internal), in seconds. */
#ifndef PFLEX_CLOCK_H
#define PFLEX_CLOCK_H

#include <time.h>

/* Seconds on the monotonic clock: for durations and deadlines. */
static inline double pflex_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Seconds since the epoch: for timestamps and targets' times. */
static inline double pflex_real_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
