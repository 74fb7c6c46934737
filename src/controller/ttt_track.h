/* ttt_track.h — the controller's time to target (docs/time-to-target.md):
 * each downward change of the limit in force is an event, measured on the
 * site's power period by period (pflex/site/ttt.h), and what came of the
 * events so far, for the API, the metrics and the audit.  Private. */
#ifndef PFLEX_CONTROLLER_TTT_TRACK_H
#define PFLEX_CONTROLLER_TTT_TRACK_H

#include <jansson.h>
#include <stdint.h>
#include "pflex/net/prom.h"
#include "pflex/site/ttt.h"

#define CTL_TTT_HOLD_S PFLEX_TTT_HOLD_S
#define CTL_TTT_KEEP 1024       /* the last events kept for the percentiles */
#define CTL_TTT_ARRIVALS 32     /* the last targets put, and when they came */

/* One event as shown and audited. */
struct ctl_ttt_event {
    char source[32], id[64];
    double signal_s, start_s, ramp_s, from_w, to_w, end_s;
    int state;                  /* enum pflex_ttt_state */
    double ttt_s;               /* NaN: not met (yet) */
    double worst_over_w;
    size_t samples, over;
};

struct ctl_ttt_track {
    struct pflex_ttt m;
    struct ctl_ttt_event cur;
    int open;                   /* cur is being measured */
    uint64_t seq;               /* the target it measures, its seq + 1; 0: none yet */
    double prev_limit_w;        /* the limit in force at the last period's start; NaN: none */
    struct ctl_ttt_event last;  /* the last settled */
    int have_last;
    double kept[CTL_TTT_KEEP];  /* the last settled events' times (NaN: not met) */
    unsigned long settled, met, unmet;
    unsigned long bucket[12];   /* the met ones by the histogram's bounds */
    double sum_s;
    struct { uint64_t seq; double t; } arr[CTL_TTT_ARRIVALS];
    unsigned narr;
};

struct ctl;
/* A target put by the API or the VTN arrived at t (unix), seq its place
 * in the set; the caller holds tmu. */
void ctl_ttt_arrived(struct ctl *c, uint64_t seq, double t);
/* The period's sample (at its end, under smu): site_w the site's power
 * as measured this period (NaN: none), stamped with its newest reading. */
void ctl_ttt_period(struct ctl *c, double site_w);
/* "time_to_target" of GET /v1/status. */
json_t *ctl_ttt_json(const struct ctl *c);
/* The histogram and counters of GET /metrics. */
void ctl_ttt_metrics(const struct ctl *c, pflex_prom_t *p);

#endif
