/* clock.c — the wall clock's test offset (clock.h). */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include "lib/util/clock.h"

/* read from every thread, set by one: atomic, no lock on the hot path */
static _Atomic double wall_offset_s;

double pflex_clock_wall_offset_s(void)
{
    return atomic_load_explicit(&wall_offset_s, memory_order_relaxed);
}

void pflex_clock_set_wall_offset_s(double s)
{
    atomic_store_explicit(&wall_offset_s, s, memory_order_relaxed);
}

char *pflex_utc_text(char buf[PFLEX_UTC_TEXT_MAX], double unix_s)
{
    struct tm tm;
    time_t t = (time_t)floor(unix_s);
    if (!isfinite(unix_s) || !gmtime_r(&t, &tm) || !strftime(buf, PFLEX_UTC_TEXT_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, PFLEX_UTC_TEXT_MAX, "%.0f", unix_s);
    return buf;
}
