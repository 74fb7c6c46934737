/* ttt.c — time to target on a stream of power samples (pflex/site/ttt.h). */
#include <math.h>
#include <stdlib.h>
#include "pflex/site/ttt.h"

double pflex_ttt_line_w(const struct pflex_ttt_event *ev, double t)
{
    if (t < ev->start_s)
        return ev->from_w;
    if (!(ev->ramp_s > 0) || t >= ev->start_s + ev->ramp_s)
        return ev->to_w;
    return ev->from_w + (ev->to_w - ev->from_w) * (t - ev->start_s) / ev->ramp_s;
}

/* When the line came down to p: inside the ramp, where it crosses p; at or
 * over from_w (or a step), its start. */
static double line_reached_s(const struct pflex_ttt_event *ev, double p)
{
    if (!(ev->ramp_s > 0) || !(ev->from_w > ev->to_w) || p >= ev->from_w)
        return ev->start_s;
    return ev->start_s + ev->ramp_s * (ev->from_w - p) / (ev->from_w - ev->to_w);
}

void pflex_ttt_begin(struct pflex_ttt *m, const struct pflex_ttt_event *ev, double hold_s)
{
    *m = (struct pflex_ttt){.ev = *ev, .hold_s = hold_s > 0 ? hold_s : 10, .state = PFLEX_TTT_OPEN,
                            .ttt_s = NAN, .run_s = NAN, .last_s = NAN};
    /* the clock starts when the signal is here and the limit falls, not before */
    if (!(m->ev.signal_s >= m->ev.start_s))
        m->ev.signal_s = m->ev.start_s;
}

static void met(struct pflex_ttt *m)
{
    double v = m->ev.ramp_s > 0 ? m->lag_s : m->run_s - m->ev.signal_s;
    m->ttt_s = v > 0 ? v : 0;
    m->state = PFLEX_TTT_MET;
}

void pflex_ttt_close(struct pflex_ttt *m, double t)
{
    if (m->state != PFLEX_TTT_OPEN)
        return;
    if (!isnan(m->run_s) && m->run_s <= t)
        met(m);
    else
        m->state = PFLEX_TTT_UNMET;
}

int pflex_ttt_sample(struct pflex_ttt *m, double t, double power_w)
{
    if (m->state != PFLEX_TTT_OPEN || !isfinite(t) || isnan(power_w) || t < m->ev.signal_s
        || (!isnan(m->last_s) && t <= m->last_s))
        return 0;
    if (t > m->ev.end_s) {
        pflex_ttt_close(m, m->ev.end_s);
        return 1;
    }
    m->last_s = t;
    m->samples++;
    double line = pflex_ttt_line_w(&m->ev, t);
    if (power_w <= line + PFLEX_TTT_TOL_W) {
        if (isnan(m->run_s))
            m->run_s = t;
    } else {
        m->over++;
        m->run_s = NAN;
        if (power_w - line > m->worst_over_w)
            m->worst_over_w = power_w - line;
        double from = line_reached_s(&m->ev, power_w);
        double lag = t - (from > m->ev.signal_s ? from : m->ev.signal_s);
        if (lag > m->lag_s)
            m->lag_s = lag;
    }
    /* a ramp is followed to its end: a stay counts from then on */
    double ramp_end = m->ev.ramp_s > 0 ? m->ev.start_s + m->ev.ramp_s : -INFINITY;
    if (!isnan(m->run_s) && t - fmax(m->run_s, ramp_end) >= m->hold_s) {
        met(m);
        return 1;
    }
    if (t >= m->ev.end_s) {
        pflex_ttt_close(m, t);
        return 1;
    }
    return 0;
}

static int cmp_nan_last(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}

void pflex_ttt_summarize(double *v, size_t n, struct pflex_ttt_summary *out)
{
    qsort(v, n, sizeof *v, cmp_nan_last);
    size_t m = 0;
    while (m < n && !isnan(v[m]))
        m++;
    *out = (struct pflex_ttt_summary){.events = n, .met = m, .p50_s = NAN, .p99_s = NAN, .worst_s = NAN};
    if (!m)
        return;
    /* nearest rank: the smallest value with at least p of them at or under it */
    size_t r50 = (size_t)ceil(0.50 * (double)m), r99 = (size_t)ceil(0.99 * (double)m);
    out->p50_s = v[(r50 ? r50 : 1) - 1];
    out->p99_s = v[(r99 ? r99 : 1) - 1];
    out->worst_s = v[m - 1];
}

size_t pflex_ttt_series(double t0, double dt, const double *limit, const double *power, size_t n, double unl_w,
                        double hold_s, double *out, size_t cap)
{
    size_t nev = 0;
    struct pflex_ttt m;
    int open = 0;
    size_t ramp_last = 0;       /* the last sample of the latest event's ramp */
    for (size_t k = 0; k < n; k++) {
        double t = t0 + (double)k * dt;
        double prev = k ? limit[k - 1] : INFINITY;
        if (k && limit[k] < prev && k > ramp_last) {
            /* a new fall: its ramp runs over the falls that follow */
            size_t last = k;
            while (last + 1 < n && limit[last + 1] < limit[last])
                last++;
            ramp_last = last;
            struct pflex_ttt_event ev = {.from_w = isfinite(prev) ? prev : unl_w, .to_w = limit[last],
                                         .end_s = INFINITY};
            if (last > k) {
                ev.start_s = t - dt;
                ev.ramp_s = (double)(last - k + 1) * dt;
            } else
                ev.start_s = t;
            for (size_t e = last + 1; e < n; e++)
                if (limit[e] > limit[last]) {
                    ev.end_s = t0 + (double)e * dt;
                    break;
                }
            ev.signal_s = ev.start_s;
            if (open) {
                pflex_ttt_close(&m, t);
                if (nev < cap)
                    out[nev] = m.ttt_s;
                nev++;
            }
            pflex_ttt_begin(&m, &ev, hold_s);
            open = 1;
        }
        if (open && pflex_ttt_sample(&m, t, power[k])) {
            if (nev < cap)
                out[nev] = m.ttt_s;
            nev++;
            open = 0;
        }
    }
    if (open) {
        pflex_ttt_close(&m, t0 + (double)(n ? n - 1 : 0) * dt);
        if (nev < cap)
            out[nev] = m.ttt_s;
        nev++;
    }
    return nev;
}
