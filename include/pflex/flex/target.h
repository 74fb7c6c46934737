/* pflex/flex/target.h — site power targets: what the grid asks for, over time.
 *
 * A target is a limit on site power from start to end (unix seconds, end
 * INFINITY for "until replaced"), in watts or as a fraction of the site's
 * baseline, with a ramp: from start to start + ramp the limit descends (or
 * rises) linearly from the limit in force just before start to the new one;
 * from start + ramp on, the new limit must hold.
 *
 * Resolution ("latest wins"): at time t, of the targets with
 * start <= t < end, the one with the lowest priority number wins (OpenADR 3:
 * a lower number is a higher priority; targets from the command line, the
 * API and schedules have priority 0); between equal priorities the one added
 * last wins.  No target in force: no limit (INFINITY).
 *
 * Text forms: one grammar for the command line, the API and schedule files
 * (OpenADR's values and times are held to the same bounds):
 *   value     a decimal number and a unit: "700kW", "650000W", "1.2MW" in
 *             [1 W, 1 GW]; "80%" or "0.8x" a fraction of baseline in
 *             (0, 100 %].  No unit is an error ("W or %"), except in a
 *             schedule file, where a bare number is W (reported back so
 *             that the caller can warn); no hex, "inf", "nan" or sign
 *   time      "now", "+15m" (from now), "@1700000000" (unix seconds),
 *             RFC 3339 "2026-05-03T18:00:00Z" / "...+02:00"; from
 *             1970-01-01 to before 2100-01-01
 *   duration  "90s", "15m", "2h", "1d", "1h30m", "0", or ISO 8601 "PT15M";
 *             "forever" / "P9999Y" mean no end; a ramp is at most a day
 *   target    VALUE[,start=TIME][,end=TIME|,for=DURATION][,ramp=DURATION]
 *             [,priority=N][,confirm=yes], e.g. "700kW,start=+5m,for=2h,ramp=10m";
 *             each key at most once
 * The schedule CSV is described in docs/targets.md.
 *
 * Ownership: a set owns its targets (copied in); fini frees them.
 */
#ifndef PFLEX_TARGET_H
#define PFLEX_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include "pflex/util/error.h"

enum pflex_target_unit {
    PFLEX_TARGET_WATTS,         /* value is a limit in W */
    PFLEX_TARGET_FRACTION,      /* value is a fraction of the baseline (> 0) */
};

struct pflex_target {
    double start_s;             /* unix seconds */
    double end_s;               /* unix seconds, > start_s; INFINITY: no end */
    double value;               /* W or fraction, by unit */
    enum pflex_target_unit unit;
    double ramp_s;              /* >= 0 */
    int priority;               /* lower number wins; 0 by default */
    uint64_t seq;               /* order added (set by pflex_target_set_add) */
    char source[32];            /* "cli", "schedule", "api", "openadr", ... */
    char id[64];                /* the source's name for it (event id), or "" */
    int confirm;                /* "confirm=yes": a step the site's ramp rate or floor
                                 * would refuse is meant (the controller's check) */
};

typedef struct pflex_target_set {
    size_t n, cap;
    struct pflex_target *t;
    uint64_t next_seq;
    uint64_t gen;               /* changed by every call below that changes the set,
                                 * to a value no set has had before (a profile's
                                 * check that it was read from this set as it is);
                                 * the targets are read directly, changed only
                                 * through these calls */
} pflex_target_set_t;

/* Most targets a set holds: adding more fails (bad input never grows
 * without bound). */
#define PFLEX_TARGET_MAX 100000

void pflex_target_set_init(pflex_target_set_t *s);
void pflex_target_set_fini(pflex_target_set_t *s);

/* Copy t in, stamping its seq as the latest.  Fails on a malformed target
 * (end <= start, a value not positive or not finite, a fraction over 10, a
 * negative ramp) or a full set. */
int pflex_target_set_add(pflex_target_set_t *s, const struct pflex_target *t,
                         pflex_error_t *err);

/* Give target i its seq (a copy that keeps the order a target was first
 * received in); i must be < n. */
void pflex_target_set_seq(pflex_target_set_t *s, size_t i, uint64_t seq);

/* Remove every target whose source is `source`; returns how many. */
size_t pflex_target_set_remove_source(pflex_target_set_t *s, const char *source);

/* Remove targets that ended at or before t; returns how many. */
size_t pflex_target_set_expire(pflex_target_set_t *s, double t);

/* The target in force at t (latest wins, above), or NULL. */
const struct pflex_target *pflex_target_set_winner(const pflex_target_set_t *s, double t);

/* A target's steady limit in W for a site baseline (W). */
double pflex_target_watts(const struct pflex_target *t, double baseline_w);

/* The limit in force at t in W, ramps included: INFINITY when no target is
 * in force.  baseline_w converts fractions; unlimited_w is the level a ramp
 * starts from when no target was in force before it (the site's maximum
 * power, e.g. every GPU at its maximum limit). */
double pflex_target_limit_w(const pflex_target_set_t *s, double t, double baseline_w,
                            double unlimited_w);

/* The smallest limit over [t0, t1] (ramps, starts and ends inside it
 * included): what a plan made at t0 for a period ending at t1 must meet. */
double pflex_target_limit_min_w(const pflex_target_set_t *s, double t0, double t1,
                                double baseline_w, double unlimited_w);

/* A set's limit read off once, for a loop that asks every period: each
 * instant where it may change course (item 0 of pflex_target_limit_min_w's
 * reasoning) with the limit there and the target that wins from it to the
 * next, built by one sweep over time (O(n log n)) and rebuilt only when
 * the set (its gen), the baseline or the unlimited level change, which
 * each call checks in O(1).  A query then costs a bisection and the
 * instants inside its window: a day of 288 five-minute intervals read
 * over a day's window every period took 2,000 lookups of 288 targets,
 * and a set of PFLEX_TARGET_MAX targets minutes.  Not for concurrent
 * use: one owner, or a lock. */
struct pflex_target_profile {
    double base, unl;
    size_t n;               /* instants */
    double *t, *v;          /* ascending; the limit at each */
    unsigned char *end;     /* 1: a target ends there */
    size_t *win;            /* the set's target that wins over [t[i], t[i + 1]),
                             * or SIZE_MAX */
    size_t *free;           /* the first instant from i on where a target ends and
                             * none is in force, or SIZE_MAX */
    double *from;           /* by target: the limit its ramp starts from (the
                             * limit just before its start), NaN unramped */
    uint64_t gen;           /* the set's gen when read */
    int built;
};

void pflex_target_profile_init(struct pflex_target_profile *p);
void pflex_target_profile_fini(struct pflex_target_profile *p);

/* pflex_target_limit_min_w(s, t0, t1, baseline_w, unlimited_w), the same
 * to the bit, read off p (rebuilt first if s or the levels changed; read
 * from s directly when out of memory). */
double pflex_target_profile_min_w(struct pflex_target_profile *p, const pflex_target_set_t *s,
                                  double t0, double t1, double baseline_w, double unlimited_w);

/* pflex_target_limit_w(s, t, baseline_w, unlimited_w) and
 * pflex_target_set_winner(s, t), the same to the bit, read off p (rebuilt
 * as above). */
double pflex_target_profile_limit_w(struct pflex_target_profile *p, const pflex_target_set_t *s,
                                    double t, double baseline_w, double unlimited_w);
const struct pflex_target *pflex_target_profile_winner(struct pflex_target_profile *p,
                                                       const pflex_target_set_t *s, double t,
                                                       double baseline_w, double unlimited_w);

/* The first end of a target after t at which no target is in force (an
 * event's end), or INFINITY. */
double pflex_target_profile_free_end(struct pflex_target_profile *p, const pflex_target_set_t *s,
                                     double t, double baseline_w, double unlimited_w);

/* The grammar's bounds (above). */
#define PFLEX_TARGET_MIN_W 1.0
#define PFLEX_TARGET_MAX_W 1e9
#define PFLEX_TARGET_MAX_FRACTION 1.0
#define PFLEX_TARGET_MAX_RAMP_S 86400.0
#define PFLEX_TARGET_TIME_MAX_S 4102444800.0    /* 2100-01-01T00:00:00Z */

/* A value or a time held to the grammar's bounds, for targets that come
 * in another form (OpenADR's JSON): 0, or -1 with err. */
int pflex_target_check_value(double value, enum pflex_target_unit unit, pflex_error_t *err);
int pflex_target_check_time(double unix_s, pflex_error_t *err);

/* Parsers of the text forms above.  Each returns 0, or -1 with err set to
 * what is wrong.  now_s resolves "now" and "+DURATION". */
int pflex_target_parse_value(const char *s, double *value, enum pflex_target_unit *unit,
                             pflex_error_t *err);
int pflex_target_parse_duration(const char *s, double *seconds, pflex_error_t *err);

/* One grammar for every power and share an option or a file column takes:
 * a decimal number, then W, kW or MW (a power, in W) or % or x (a share,
 * as a fraction).  accept says which are allowed, and what a bare number
 * is (W, or a fraction); what names the thing in messages ("--floor").
 * Ranges are the caller's.  0, or -1 with err. */
enum {
    PFLEX_QTY_POWER = 1,
    PFLEX_QTY_SHARE = 2,
    PFLEX_QTY_BARE_W = 4,
    PFLEX_QTY_BARE_FRACTION = 8,
};
int pflex_quantity_parse(const char *s, unsigned accept, const char *what, double *value,
                         enum pflex_target_unit *unit, pflex_error_t *err);
/* The same, held to [lo, hi] (W for a power, a fraction for a share): out
 * of it is an error that says so, and a bare share that fits as a
 * percentage asks "did you mean 30%?". */
int pflex_quantity_parse_in(const char *s, unsigned accept, const char *what, double lo, double hi,
                            double *value, pflex_error_t *err);
int pflex_target_parse_time(const char *s, double now_s, double *unix_s, pflex_error_t *err);
int pflex_target_parse(const char *spec, double now_s, struct pflex_target *out,
                       pflex_error_t *err);

/* Read a schedule CSV (docs/targets.md) from memory or a file and add each
 * row to s with source "schedule"; now_s resolves relative times.  On error
 * ("file:line: column 'x': ...") nothing is added.  *bare_line (may be
 * NULL): the first line whose target has no unit (read as W), 0 none. */
int pflex_target_schedule_read_mem(const char *buf, size_t len, const char *name,
                                   double now_s, pflex_target_set_t *s, unsigned *bare_line,
                                   pflex_error_t *err);
int pflex_target_schedule_read(const char *path, double now_s, pflex_target_set_t *s,
                               unsigned *bare_line, pflex_error_t *err);

/* Write an RFC 3339 UTC time ("2026-05-03T18:00:00Z", fractions kept to the
 * millisecond when present) into buf; returns buf. */
char *pflex_target_format_time(double unix_s, char *buf, size_t size);

#endif
