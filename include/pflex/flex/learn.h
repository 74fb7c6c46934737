/* pflex/flex/learn.h — a job's loss curve learned online from what it does.
 *
 * Observations are (cap, power, throughput) of one job over a control
 * period, kept in bins of the cap (one per bin_w watts: bounded memory);
 * the bin at the largest cap is the baseline P0, T0, each other gives
 * x = 1 - P/P0, L = 1 - T/T0 (SPEC §2).  The fit blends a prior curve (the
 * job's predicted curve, L = x/PFI, or L = x) with locally smoothed
 * evidence point by point, carries the curve between and past the readings
 * as a Wiener process, and makes it monotone through (0, 0); each point has
 * an sd.  The model, equation by equation: docs/learner.md.
 *
 * Exploration: pflex_learn_probe proposes a deeper cut where the curve is
 * least known, only where even the pessimistic curve (mean + z sd) keeps
 * the floor: probes tighten, never loosen, and never risk the floor.
 */
#ifndef PFLEX_LEARN_H
#define PFLEX_LEARN_H

#include <stddef.h>
#include "pflex/util/error.h"

struct pflex_learn_config {
    double min_cap_w, max_cap_w;    /* the GPUs' settable range, W (required) */
    double bin_w;                   /* cap bin width, W; <= 0: 1 (the plan's whole watts) */
    double noise_sd;                /* sd of one observation's L before it can be
                                     * estimated; <= 0: 0.03 */
    double prior_sd;                /* sd of the prior curve; <= 0: 0.10 */
    double grid_dx;                 /* spacing of the prior's points; <= 0: 0.02 */
    double corr_dx;                 /* reach of a fitted point along x
                                     * (docs/learner.md); <= 0: 0.10 */
    double slope_sd;                /* sd of the curve's slope near a fitted point
                                     * (docs/learner.md); <= 0: 1 */
    double smooth_dx;               /* reach of the readings' local linear smoothing along
                                     * x (docs/learner.md); <= 0: 0.02 */
    double curv_q;                  /* curvature of the curve past the deepest reading:
                                     * its slope's variance grows by curv_q per unit of x
                                     * (docs/learner.md); <= 0: 20 */
    /* The prior: n >= 2 ascending x from 0 with loss (copied), or n = 0
     * and pfi > 0 for L = x/PFI, or neither for L = x. */
    size_t prior_n;
    const double *prior_x, *prior_loss;
    double prior_pfi;
};

typedef struct pflex_learn pflex_learn_t;

int pflex_learn_create(const struct pflex_learn_config *c, pflex_learn_t **out,
                       pflex_error_t *err);
void pflex_learn_destroy(pflex_learn_t *l);

/* Add one observation.  Fails (and adds nothing) when a value is not
 * finite, the cap is outside the settable range by more than a bin, the
 * power is not positive or the throughput is negative. */
int pflex_learn_observe(pflex_learn_t *l, double cap_w, double power_w, double throughput,
                        pflex_error_t *err);

/* Observations so far, and how many bins hold them. */
size_t pflex_learn_count(const pflex_learn_t *l);
size_t pflex_learn_bins(const pflex_learn_t *l);
/* Observations in the bin of cap_w (clamped to the range). */
unsigned pflex_learn_bin_count(const pflex_learn_t *l, double cap_w);

/* What a learner holds, bin by bin: each non-empty bin's observation
 * count and running means (cap, power, throughput) with its throughput's
 * sum of squared deviations.  Another learner of the same cap range and
 * bin width given them (a standby controller's copy of its leader's) fits
 * the same curve. */
struct pflex_learn_bin {
    unsigned n;
    double cap_w, power_w, tput, m2;
};
/* Up to max non-empty bins into out, from the largest cap down; returns
 * how many there are (all of them: more than max when out is short). */
size_t pflex_learn_bins_get(const pflex_learn_t *l, struct pflex_learn_bin *out, size_t max);
/* Replace every observation with n bins (as pflex_learn_bins_get gives
 * them).  Fails (and changes nothing) when a bin is malformed: n of 0, a
 * value not finite or out of range, a cap outside the range, two bins in
 * one. */
int pflex_learn_bins_set(pflex_learn_t *l, const struct pflex_learn_bin *b, size_t n,
                         pflex_error_t *err);

/* The learned curve: n points ascending in x from (0, 0), as the allocator
 * reads curves (pflex/flex/alloc.h), each with its sd, the cap it was seen at
 * (for prior points, the cap that draws P0 (1 - x): that power plus the
 * headroom under their caps the nearest readings drew, interpolated; P0
 * (1 - x) before any reading) and the observations behind it.  A cap of
 * P0 (1 - x) itself would draw less, deeper on the curve than x: read in
 * the cap domain, the prior points would promise a cap less loss than it
 * costs. */
struct pflex_learn_curve {
    size_t n;
    double *x, *loss, *sd, *cap_w;
    unsigned *count;
    double p0_w, t0;        /* baseline; NaN before the first uncapped observation */
    double sigma;           /* the observation sd used */
    double prior_sd;        /* the prior's sd: a point with it is the prior's guess
                             * alone, no reading within reach */
    double bin_w;           /* the learner's cap bin, W: a probe within one of an
                             * observed point lands in its bin */
    int has_baseline;       /* 0: no uncapped observation yet: prior alone, x
                             * from caps as if P0 were the largest cap */
    size_t room;            /* points the arrays hold (pflex_learn_fit grows them) */
};

void pflex_learn_curve_init(struct pflex_learn_curve *c);
void pflex_learn_curve_fini(struct pflex_learn_curve *c);

/* Fit the curve into out (its arrays grow as needed). */
int pflex_learn_fit(const pflex_learn_t *l, struct pflex_learn_curve *out, pflex_error_t *err);

/* L(x) and sd(x) on a fitted curve, linear between points, clipped to its
 * range. */
double pflex_learn_loss(const struct pflex_learn_curve *c, double x);
double pflex_learn_sd(const struct pflex_learn_curve *c, double x);

/* The pessimistic curve's shed at a floor: the largest x with
 * L(x') + z sd(x') <= 1 - floor for every x' <= x (first crossing). */
double pflex_learn_safe_x(const struct pflex_learn_curve *c, double floor, double z);

/* Propose a probe (*cap_w the cap that draws there, on the curve's caps): the x in (x_now, x_seen + step], x_seen the larger of
 * x_now and the deepest x observed (and within the safe x at the floor,
 * above), whose sd is largest, when that sd exceeds min_sd: repeated, the
 * probes walk down the curve a step at a time as far as the floor allows.
 * A probe whose cap is within a bin of an observed point known to min_sd
 * or better is not proposed: its reading would land in that bin and
 * teach nothing the point does not (a probe held at the floor's safe x
 * would otherwise repeat there for ever).
 * When everything within reach is known to min_sd and the floor (not the
 * step) holds the walk, the probe goes to the floor's edge: the deepest
 * reading again while its bin holds fewer than PFLEX_LEARN_EDGE_READINGS
 * readings (nine: a third of one reading's noise), else the safe x
 * when it lies a bin or more past that reading.  Each reading there moves
 * the edge closer to the floor itself.
 * Returns 1 with *x_probe and *cap_w (the curve's cap at x), 2 the same
 * for a probe at the floor's edge (worth several readings: the edge is as
 * close as it is precise), 0 when nothing is worth probing or nothing is
 * safe. */
#define PFLEX_LEARN_EDGE_READINGS 9

/* Points of the fitted curve a watt, two, .. this many watts of power past
 * the deepest reading (within grid_dx of it), when that reading's bin holds
 * PFLEX_LEARN_EDGE_READINGS readings or more, besides the grid's: the
 * pessimistic curve there is the readings' and the curvature's, not the
 * line to the next grid point's, at each whole-watt cap a plan can set
 * (pflex_learn_fit). */
#define PFLEX_LEARN_EDGE_W 8

/* A point of the fitted curve whose bin holds this many readings or more
 * (a cap held for minutes) speaks for the points read less past it, as
 * the curve past the deepest reading does (pflex_learn_fit): a point
 * there is weighed between its own readings and that line. */
#define PFLEX_LEARN_ANCHOR_READINGS 128

/* How many times its own readings' precision a point of the fitted curve
 * may borrow from its neighbours' through the smoothing (pflex_learn_fit):
 * a bin of n readings is known to no better than sigma / sqrt(4 n). */
#define PFLEX_LEARN_BORROW 4

int pflex_learn_probe(const struct pflex_learn_curve *c, double floor, double z, double x_now,
                      double step, double min_sd, double *x_probe, double *cap_w);

/* The same within a step of the plan only, (x_now, x_now + step]: where
 * the plan is about to go, for use while a target is in force. */
int pflex_learn_probe_near(const struct pflex_learn_curve *c, double floor, double z, double x_now,
                           double step, double min_sd, double *x_probe, double *cap_w);

/* Filling in (between events, the walk above done): the point of the
 * curve, or the midpoint of two neighbouring points, whose cap lies in
 * [cap_lo_w, cap_hi_w] and whose sd is largest, when it exceeds min_sd
 * and the pessimistic curve keeps the floor there.  A midpoint's sd is
 * its two points' mean sd and a quarter of their distance in x, added in
 * quadrature (a curve whose slope is known to 1, the fit's default
 * slope_sd, may bend between two readings by that much): the probes
 * read the gaps between readings until they are a few bins apart and
 * each point is known to min_sd.  A probe within a bin of an observed
 * point known to min_sd is not proposed.  Returns 1 with *x_probe and
 * *cap_w, 0 when nothing there is worth probing or safe. */
int pflex_learn_probe_fill(const struct pflex_learn_curve *c, double floor, double z, double cap_lo_w,
                           double cap_hi_w, double min_sd, double *x_probe, double *cap_w);

/* Reading a plan's margin: what the watts [cap_lo_w, cap_hi_w] are worth
 * to a job the curve l was fitted into (c) reads off the chord between the
 * readings that bracket that span, the nearest read cap at or under
 * cap_lo_w and the nearest at or over cap_hi_w.  Where those lie more than
 * a watt apart, a bend between them (a measured curve's knot) goes unseen
 * and the chord values the watts wrong: propose the whole-watt cap inside
 * the chord, a watt or more from both readings and nearest the span,
 * whose bin holds no reading yet, where the pessimistic curve keeps the
 * floor.  A span whose lower end lies within PFLEX_LEARN_SPAN_EDGE_W of
 * the floor's edge (the pessimistic curve's, pflex_learn_safe_x) gets
 * none: a plan there is priced by the floor, which the edge probes read
 * PFLEX_LEARN_EDGE_READINGS times a point; a few readings between the
 * edge and the reading above moved the pessimistic curve's slope there
 * and, in a simulated day, let a plan put a job a watt under its floor.
 * Returns 1 with *x_probe and *cap_w (a whole watt), 0 when the span is
 * read to the watt, lies outside the readings, by the floor's edge, or
 * nothing there is safe or new. */
#define PFLEX_LEARN_SPAN_EDGE_W 2
int pflex_learn_probe_span(const pflex_learn_t *l, const struct pflex_learn_curve *c, double floor,
                           double z, double cap_lo_w, double cap_hi_w, double *x_probe, double *cap_w);

#endif
