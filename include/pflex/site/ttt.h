/* pflex/site/ttt.h — time to target: how fast a site follows a grid
 * signal, measured on its power samples (docs/time-to-target.md).
 *
 * An event: the limit falls from from_w to to_w, at start_s at once
 * (ramp_s 0, a step) or along a line over ramp_s, until end_s.  Its clock
 * starts at signal_s, when the signal reached pflex (an API PUT, a VTN
 * event taken in, a schedule instant), never before start_s.
 *
 *  - A step's time to target is t* - signal_s, t* the first sample from
 *    which the site's power stays at or under to_w for hold_s, or until
 *    end_s when the event ends first.
 *  - A ramp's is the largest lag behind its line: for a sample at t over
 *    the line, t minus the instant the line came down to that power (the
 *    signal's, when the line was never that high); 0 when no sample is
 *    over.  It is known once the site stays under the line as a step's
 *    t* is (after the ramp, under to_w).
 *  - Not met: the event ended (or another took its place) with no such
 *    stay.
 *
 * Samples come in time order (an earlier one than the last is ignored).
 * Units: seconds, watts.  No allocation; the struct is the caller's. */
#ifndef PFLEX_SITE_TTT_H
#define PFLEX_SITE_TTT_H

#include <stddef.h>

struct pflex_ttt_event {
    double signal_s;            /* the signal reached pflex */
    double start_s;             /* the limit starts to fall */
    double ramp_s;              /* 0: a step */
    double from_w, to_w;        /* the limit before, and once the ramp is done */
    double end_s;               /* the event's end; INFINITY: none */
};

/* A tolerance on the line, W: a reading within it counts as under (the
 * caps are whole watts, the readings are not). */
#define PFLEX_TTT_TOL_W 0.5
/* The hold: how long the power must stay under for the target to be met. */
#define PFLEX_TTT_HOLD_S 10.0

enum pflex_ttt_state { PFLEX_TTT_OPEN, PFLEX_TTT_MET, PFLEX_TTT_UNMET };

struct pflex_ttt {
    struct pflex_ttt_event ev;
    double hold_s;              /* how long the power must stay under, s */
    enum pflex_ttt_state state;
    double ttt_s;               /* MET: the time to target, s; else NaN */
    double run_s;               /* the first sample of the current stay under; NaN: over */
    double lag_s;               /* the largest lag behind the line so far, s */
    double last_s;              /* the last sample taken; NaN: none */
    double worst_over_w;        /* the most power over the line seen, W (0: none) */
    size_t samples, over;       /* samples taken, and over the line */
};

/* The limit the event asks for at t, W (from_w before start_s). */
double pflex_ttt_line_w(const struct pflex_ttt_event *ev, double t);

/* Start measuring ev; hold_s > 0 (10 by default, docs). */
void pflex_ttt_begin(struct pflex_ttt *m, const struct pflex_ttt_event *ev, double hold_s);

/* One sample of the site's power at t.  1 when this sample settled the
 * measurement (met, or the event over), 0 otherwise. */
int pflex_ttt_sample(struct pflex_ttt *m, double t, double power_w);

/* The event ended or was replaced at t: a stay under that reached t meets
 * it (the event ended first), else it is not met.  Nothing when settled. */
void pflex_ttt_close(struct pflex_ttt *m, double t);

/* The events of a series sampled every dt from t0 (n samples): limit[k]
 * the limit in force at sample k (INFINITY: none), power[k] the site's
 * power then.  An event is a fall of the limit, the falls of the samples
 * that follow it one ramp (linear from the sample before the first to the
 * last), until the limit rises or a new fall starts after a flat; from
 * unl_w when there was no limit.  Each event's time to target (NaN: not
 * met) into out[0 .. cap); returns the number of events. */
size_t pflex_ttt_series(double t0, double dt, const double *limit, const double *power, size_t n, double unl_w,
                        double hold_s, double *out, size_t cap);

/* Summary of n times to target (NaN entries: not met, counted apart):
 * the median, the 99th percentile (nearest rank) and the worst, NaN when
 * none was met.  v is sorted in place. */
struct pflex_ttt_summary {
    size_t events, met;
    double p50_s, p99_s, worst_s;
};
void pflex_ttt_summarize(double *v, size_t n, struct pflex_ttt_summary *out);

#endif
