/* clock.c — the wall clock's test offset (clock.h). */
#include <stdatomic.h>
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
