/* clock.h — the clocks the daemons and commands time things by
 * (internal), in seconds. */
#ifndef PFLEX_CLOCK_H
#define PFLEX_CLOCK_H

#include <time.h>

/* Seconds added to the wall clock (pflex_real_s): 0, but for the tests,
 * which step the daemons' wall clock as an NTP step would (clock.c). */
double pflex_clock_wall_offset_s(void);
void pflex_clock_set_wall_offset_s(double s);

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
    return ts.tv_sec + ts.tv_nsec * 1e-9 + pflex_clock_wall_offset_s();
}

/* unix_s as an ISO 8601 UTC time, "2026-12-07T21:05:27Z", for log lines
 * (the number itself where it is no time); returns buf. */
#define PFLEX_UTC_TEXT_MAX 40
char *pflex_utc_text(char buf[PFLEX_UTC_TEXT_MAX], double unix_s);

#endif
