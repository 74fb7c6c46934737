/* hwsweep.c — a power-cap sweep on GPUs (pflex/hwsweep.h).
 *
 * For each cap: set it on every GPU through the limit guard, let the job
 * settle, then sample power and telemetry over a window while reading the
 * job's own token counter, and hand the caller one row.  Waits are cut in
 * 50 ms naps that look at the caller's stop flag, so that a signal handler
 * that sets it gets the limits restored promptly by its caller.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "pflex/hwsweep.h"
#include "pflex/tokfile.h"
#include "lib/util/clock.h"

int pflex_hwsweep_range(pflex_gpu_t *g, const unsigned *idx, unsigned n,
                        struct pflex_gpu_limits *lim, double *lo_w, double *hi_w,
                        pflex_error_t *err)
{
    double lo = 0, hi = INFINITY;
    for (unsigned k = 0; k < n; k++) {
        if (pflex_gpu_limits(g, idx[k], &lim[k], err))
            return -1;
        lo = lim[k].min_w > lo ? lim[k].min_w : lo;
        hi = lim[k].max_w < hi ? lim[k].max_w : hi;
    }
    *lo_w = lo;
    *hi_w = hi;
    return 0;
}

unsigned pflex_hwsweep_default_caps(double lo_w, double hi_w, double *caps)
{
    unsigned n = 0;
    const int last = PFLEX_HWSWEEP_DEFAULT_CAPS - 1;
    for (int k = 0; k <= last; k++) {
        double c = floor(hi_w - (hi_w - lo_w) * k / (double)last + 0.5);
        if (c < lo_w)
            c = ceil(lo_w);
        if (c > hi_w)
            c = floor(hi_w);
        if (n == 0 || c != caps[n - 1])
            caps[n++] = c;
    }
    return n;
}

int pflex_hwsweep_check_caps(pflex_gpu_t *g, const unsigned *idx, unsigned n,
                             const struct pflex_gpu_limits *lim, const double *caps,
                             unsigned ncaps, pflex_error_t *err)
{
    for (unsigned c = 0; c < ncaps; c++)
        for (unsigned k = 0; k < n; k++)
            if (caps[c] < lim[k].min_w || caps[c] > lim[k].max_w) {
                char name[96] = "";
                pflex_error_t ignored;
                pflex_gpu_describe(g, idx[k], name, sizeof name, &ignored);
                return pflex_error_set(err, "%g W is outside GPU %u (%s) range %g-%g W", caps[c],
                                       idx[k], name, lim[k].min_w, lim[k].max_w);
            }
    return 0;
}

double pflex_hwsweep_restore_w(double now_w, double default_w, int keep_found)
{
    return !keep_found && isfinite(default_w) && fabs(now_w - default_w) > 0.5 ? default_w
                                                                               : now_w;
}

/* ---- waiting -------------------------------------------------------- */

static int stopped(const struct pflex_hwsweep_opts *o)
{
    return o->stop && *o->stop;
}

/* Sleep until the monotonic time `until`, in slices short enough to notice
 * the stop flag promptly.  Returns -1 when it is set. */
static int nap_until(const struct pflex_hwsweep_opts *o, double until)
{
    for (;;) {
        if (stopped(o))
            return -1;
        double left = until - pflex_mono_s();
        if (left <= 0)
            return 0;
        if (left > 0.05)
            left = 0.05;
        struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static int tell(const struct pflex_hwsweep_opts *o, const struct pflex_hwsweep_event *ev)
{
    return o->on_event ? o->on_event(o->arg, ev) : 0;
}

static int warn(const struct pflex_hwsweep_opts *o, unsigned c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A warning about cap c to the caller; its callback's return. */
static int warn(const struct pflex_hwsweep_opts *o, unsigned c, const char *fmt, ...)
{
    char text[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    struct pflex_hwsweep_event ev = {.kind = PFLEX_HWSWEEP_WARNING, .cap_no = c,
                                     .cap_w = o->caps[c], .text = text};
    return tell(o, &ev);
}

/* ---- one window ------------------------------------------------------ */

/* What a window gathers, per GPU k and over all GPUs. */
struct window {
    unsigned n;
    double *e0;         /* energy at the window's start, J */
    double *de;         /* energy over the window, J */
    double *te0;        /* when each counter was read first, s */
    double *dt;         /* ... and the time to its last read, s */
    double *psum;       /* sum of power readings, W */
    unsigned *pcount;   /* ... and their count */
    double tsum[PFLEX_TM_COUNT];
    unsigned tcount[PFLEX_TM_COUNT];
};

static void window_free(struct window *w)
{
    free(w->e0);
    free(w->de);
    free(w->te0);
    free(w->dt);
    free(w->psum);
    free(w->pcount);
}

static int window_init(struct window *w, unsigned n, pflex_error_t *err)
{
    *w = (struct window){.n = n};
    w->e0 = calloc(n, sizeof *w->e0);
    w->de = calloc(n, sizeof *w->de);
    w->te0 = calloc(n, sizeof *w->te0);
    w->dt = calloc(n, sizeof *w->dt);
    w->psum = calloc(n, sizeof *w->psum);
    w->pcount = calloc(n, sizeof *w->pcount);
    if (!w->e0 || !w->de || !w->te0 || !w->dt || !w->psum || !w->pcount) {
        window_free(w);
        return pflex_error_set(err, "out of memory");
    }
    return 0;
}

/* Add GPU k's reading s, taken at monotonic time t; the first reading of
 * the window starts its energy interval, the last one ends it. */
static void window_add(struct window *w, unsigned k, const struct pflex_gpu_sample *s, double t,
                       int first, int last)
{
    if (first) {
        w->e0[k] = s->energy_j;
        w->te0[k] = t;
    }
    if (last) {
        w->de[k] = s->energy_j - w->e0[k];     /* NaN without a counter */
        w->dt[k] = t - w->te0[k];
    }
    if (isfinite(s->power_w)) {
        w->psum[k] += s->power_w;
        w->pcount[k]++;
    }
    for (int f = 0; f < PFLEX_TM_COUNT; f++)
        if (isfinite(s->tm[f])) {
            w->tsum[f] += s->tm[f];
            w->tcount[f]++;
        }
}

/* Read every GPU every tenth of the window (10 ms to 1 s apart) until it
 * ends; the first reading also primes the energy counter and the GPM
 * interval.  0, 1 when stopped, or -1 with err. */
static int window_sample(pflex_gpu_t *g, const unsigned *idx, struct window *w,
                         const struct pflex_hwsweep_opts *o, pflex_error_t *err)
{
    double period = o->window_s / 10;
    period = period < 0.01 ? 0.01 : period > 1.0 ? 1.0 : period;
    double t_end = pflex_mono_s() + o->window_s;
    for (int first = 1;; first = 0) {
        double now = pflex_mono_s();
        int last = now >= t_end;
        for (unsigned k = 0; k < w->n; k++) {
            struct pflex_gpu_sample s;
            /* Each GPU's own read times: reading several GPUs takes time
             * that must not count against one of them. */
            double t = pflex_mono_s();
            if (pflex_gpu_sample(g, idx[k], &s, err))
                return -1;
            window_add(w, k, &s, t, first, last);
        }
        if (last)
            return 0;
        if (nap_until(o, now + period < t_end ? now + period : t_end))
            return 1;
    }
}

/* The window's results into ev: per-GPU power from energy over time where
 * the counter works (it sees every millisecond), else the mean of the
 * readings, averaged over GPUs; telemetry means.  0, or -1 with err. */
static int window_reduce(const struct window *w, const unsigned *idx,
                         struct pflex_hwsweep_event *ev, pflex_error_t *err)
{
    double total = 0;
    unsigned have = 0;
    for (unsigned k = 0; k < w->n; k++) {
        double p = w->de[k] > 0 && w->dt[k] > 0 ? w->de[k] / w->dt[k]
                 : w->pcount[k] ? w->psum[k] / w->pcount[k] : NAN;
        if (isfinite(p)) {
            total += p;
            have++;
        }
    }
    if (!have)
        return pflex_error_set(err, "GPU %u reports neither power usage nor an energy counter",
                               idx[0]);
    ev->power_w = total / have;
    for (int f = 0; f < PFLEX_TM_COUNT; f++)
        ev->tm[f] = w->tcount[f] ? w->tsum[f] / w->tcount[f] : NAN;
    return 0;
}

/* The job's mark before the window of cap c (t_s NaN when it wrote none
 * yet), with a warning when it predates the cap, set at cap_set_wall.
 * 0, or -1 / PFLEX_HWSWEEP_BAD_INPUT with err; PFLEX_HWSWEEP_HALTED. */
static int tokens_start(const struct pflex_hwsweep_opts *o, unsigned c, double cap_set_wall,
                        struct pflex_tokfile_mark *start, pflex_error_t *err)
{
    int r = pflex_tokfile_last(o->tokens_path, start, err);
    if (r == PFLEX_TOKFILE_BAD)
        return PFLEX_HWSWEEP_BAD_INPUT;
    if (r < 0)
        return -1;
    if (r == 0 && start->t_s < cap_set_wall - 1e-3
        && warn(o, c, "the job's last line before the window is from %.1f s before the cap was "
                "set; a longer --settle avoids mixing caps", cap_set_wall - start->t_s))
        return PFLEX_HWSWEEP_HALTED;
    return 0;
}

/* The job's throughput over the window from its mark before (start) to
 * its last line now.  0 and *rate, or -1 / PFLEX_HWSWEEP_BAD_INPUT. */
static int tokens_rate(const struct pflex_hwsweep_opts *o, const struct pflex_tokfile_mark *start,
                       double *rate, pflex_error_t *err)
{
    struct pflex_tokfile_mark stop = {NAN, NAN};
    int r = pflex_tokfile_last(o->tokens_path, &stop, err);
    if (r == PFLEX_TOKFILE_BAD)
        return PFLEX_HWSWEEP_BAD_INPUT;
    if (r < 0)
        return -1;
    if (r == 1 || isnan(start->t_s) || !(stop.t_s > start->t_s)) {
        pflex_error_set(err, "%s: the job wrote no new line during the %g s window; it must "
                        "append 'UNIX_TIME TOKENS_TOTAL' at least once per window (or use a "
                        "longer --window)", o->tokens_path, o->window_s);
        return PFLEX_HWSWEEP_BAD_INPUT;
    }
    if (stop.tokens < start->tokens) {
        pflex_error_set(err, "%s: the token counter went down (%.17g to %.17g); it must be "
                        "cumulative (did the job restart?)", o->tokens_path, start->tokens,
                        stop.tokens);
        return PFLEX_HWSWEEP_BAD_INPUT;
    }
    *rate = (stop.tokens - start->tokens) / (stop.t_s - start->t_s);
    return 0;
}

/* Measure cap c over one window into ev.  0, PFLEX_HWSWEEP_STOPPED,
 * PFLEX_HWSWEEP_HALTED, or -1 / PFLEX_HWSWEEP_BAD_INPUT with err. */
static int measure(pflex_gpu_t *g, const unsigned *idx, unsigned n,
                   const struct pflex_hwsweep_opts *o, unsigned c, double cap_set_wall,
                   struct pflex_hwsweep_event *ev, pflex_error_t *err)
{
    struct pflex_tokfile_mark start = {NAN, NAN};
    struct window w;
    if (window_init(&w, n, err))
        return -1;
    int rc = o->tokens_path ? tokens_start(o, c, cap_set_wall, &start, err) : 0;
    if (rc == 0) {
        rc = window_sample(g, idx, &w, o, err);
        rc = rc == 1 ? PFLEX_HWSWEEP_STOPPED : rc;
    }
    if (rc == 0)
        rc = window_reduce(&w, idx, ev, err);
    ev->throughput = NAN;
    if (rc == 0 && o->tokens_path)
        rc = tokens_rate(o, &start, &ev->throughput, err);
    window_free(&w);
    return rc;
}

/* ---- the sweep ------------------------------------------------------- */

/* Set cap c on every GPU, warning where another limit is lower.
 * 0, -1 with err, or PFLEX_HWSWEEP_HALTED. */
static int set_cap(pflex_guard_t *gd, const unsigned *idx, unsigned n,
                   const struct pflex_hwsweep_opts *o, unsigned c, pflex_error_t *err)
{
    for (unsigned k = 0; k < n; k++) {
        double enforced;
        if (pflex_guard_set(gd, idx[k], o->caps[c], &enforced, err))
            return -1;
        if (fabs(enforced - o->caps[c]) > 0.5
            && warn(o, c, "GPU %u enforces %g W, not the %g W set (another limit is lower)",
                    idx[k], enforced, o->caps[c]))
            return PFLEX_HWSWEEP_HALTED;
    }
    return 0;
}

/* Prefix err's message with the cap it happened at. */
static void name_cap(pflex_error_t *err, double cap_w)
{
    char why[sizeof err->text];
    snprintf(why, sizeof why, "%s", err->text);
    pflex_error_set(err, "cap %g W: %s", cap_w, why);
}

/* Cap c from start to end: set, settle, measure, tell. */
static int sweep_cap(pflex_gpu_t *g, pflex_guard_t *gd, const unsigned *idx, unsigned n,
                     const struct pflex_hwsweep_opts *o, unsigned c, pflex_error_t *err)
{
    double set_wall = pflex_real_s();     /* the job's lines after this see the new cap */
    int rc = set_cap(gd, idx, n, o, c, err);
    if (rc == -1)
        name_cap(err, o->caps[c]);
    if (rc)
        return rc;
    struct pflex_hwsweep_event ev = {.kind = PFLEX_HWSWEEP_CAP_SET, .cap_no = c,
                                     .cap_w = o->caps[c]};
    if (tell(o, &ev))
        return PFLEX_HWSWEEP_HALTED;
    if (nap_until(o, pflex_mono_s() + o->settle_s))
        return PFLEX_HWSWEEP_STOPPED;
    ev.kind = PFLEX_HWSWEEP_MEASURED;
    rc = measure(g, idx, n, o, c, set_wall, &ev, err);
    if (rc == -1 || rc == PFLEX_HWSWEEP_BAD_INPUT)
        name_cap(err, o->caps[c]);
    if (rc)
        return rc;
    return tell(o, &ev) ? PFLEX_HWSWEEP_HALTED : 0;
}

int pflex_hwsweep_run(pflex_gpu_t *g, pflex_guard_t *gd, const struct pflex_hwsweep_opts *o,
                      pflex_error_t *err)
{
    unsigned n = pflex_guard_count(gd);
    if (n == 0)
        return pflex_error_set(err, "the guard holds no GPU to sweep");
    if (!(o->window_s > 0))
        return pflex_error_set(err, "the measurement window must be positive, not %g s",
                               o->window_s);
    unsigned *idx = malloc(n * sizeof *idx);
    if (!idx)
        return pflex_error_set(err, "out of memory");
    for (unsigned k = 0; k < n; k++)
        idx[k] = pflex_guard_gpu_at(gd, k)->index;
    int rc = 0;
    for (unsigned c = 0; c < o->ncaps && rc == 0; c++)
        rc = stopped(o) ? PFLEX_HWSWEEP_STOPPED : sweep_cap(g, gd, idx, n, o, c, err);
    free(idx);
    return rc;
}
