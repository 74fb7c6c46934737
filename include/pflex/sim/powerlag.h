/* pflex/sim/powerlag.h — how a GPU's power follows a new power limit, and
 * how NVML reads it (docs/time-to-target.md#power-dynamics).
 *
 * The true power moves to its new steady value as a first-order lag:
 *     P(t) = P_ss + (P_0 - P_ss) exp(-(t - t_0) / tau)
 * from P_0, the true power when the steady value changed at t_0.  What is
 * read is the mean of P over the last window_s (NVML's power reading on
 * Ampere and newer, but GA100, is a 1 s average).  Several changes inside
 * one window are each a segment of the sum (the last PFLEX_POWER_LAG_SEGS).
 * Units: seconds (any clock, as long as it only goes forward), watts. */
#ifndef PFLEX_SIM_POWERLAG_H
#define PFLEX_SIM_POWERLAG_H

#include <stddef.h>

#define PFLEX_POWER_LAG_SEGS 16
#define PFLEX_POWER_LAG_TAU_S 0.1       /* the default time constant */
#define PFLEX_POWER_LAG_WINDOW_S 1.0    /* the default reading window */

struct pflex_power_lag {
    double tau_s, window_s;     /* tau 0: steps at once; window 0: the instant power */
    size_t n;                   /* segments held, the newest last */
    struct { double t0, p0, pss; } seg[PFLEX_POWER_LAG_SEGS];
};

/* Steady at power_w since long before t. */
void pflex_power_lag_init(struct pflex_power_lag *l, double tau_s, double window_s, double t, double power_w);
/* The steady value becomes pss_w at t (no earlier than the last change). */
void pflex_power_lag_step(struct pflex_power_lag *l, double t, double pss_w);
/* The true power at t, W. */
double pflex_power_lag_true_w(const struct pflex_power_lag *l, double t);
/* What is read at t: the true power's mean over [t - window_s, t], W. */
double pflex_power_lag_read_w(const struct pflex_power_lag *l, double t);
/* The steady value it moves to, W. */
double pflex_power_lag_target_w(const struct pflex_power_lag *l);

#endif
