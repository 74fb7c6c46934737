/* ttt_track.c — the controller's time to target (ttt_track.h).
 *
 * An event starts when the limit in force at a period's start is under the
 * one at the period before (a new target won, or one's start came): its
 * target is the winner, its signal when that target reached the controller
 * (an API PUT, a VTN answer: ctl_ttt_arrived) or, for a schedule or a
 * --target, its start.  Each period gives one sample: the site's power as
 * measured (the meter's when there is one) at the time of its newest
 * reading.  The event settles by pflex_ttt's rules, or when another takes
 * its place. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "controller/ctl_int.h"
#include "pflex/flex/target.h"

static const double bounds[] = {0.5, 1, 1.5, 2, 3, 5, 10, 20, 30, 60, 120};
#define NBOUNDS (sizeof bounds / sizeof *bounds)

void ctl_ttt_arrived(ctl_t *c, uint64_t seq, double t)
{
    struct ctl_ttt_track *k = &c->ttt;
    k->arr[k->narr % CTL_TTT_ARRIVALS].seq = seq;
    k->arr[k->narr % CTL_TTT_ARRIVALS].t = t;
    k->narr++;
}

static double arrival(const struct ctl_ttt_track *k, uint64_t seq)
{
    for (unsigned i = 0; i < k->narr && i < CTL_TTT_ARRIVALS; i++)
        if (k->arr[i].seq == seq)
            return k->arr[i].t;
    return NAN;
}

static void settle(ctl_t *c, double now)
{
    struct ctl_ttt_track *k = &c->ttt;
    struct ctl_ttt_event *e = &k->cur;
    e->state = (int)k->m.state;
    e->ttt_s = k->m.ttt_s;
    e->worst_over_w = k->m.worst_over_w;
    e->samples = k->m.samples;
    e->over = k->m.over;
    k->kept[k->settled % CTL_TTT_KEEP] = e->ttt_s;
    k->settled++;
    if (k->m.state == PFLEX_TTT_MET) {
        k->met++;
        k->sum_s += e->ttt_s;
        size_t b = 0;
        while (b < NBOUNDS && e->ttt_s > bounds[b])
            b++;
        k->bucket[b]++;
    } else
        k->unmet++;
    k->last = *e;
    k->have_last = 1;
    k->open = 0;
    char text[400];
    if (k->m.state == PFLEX_TTT_MET)
        snprintf(text, sizeof text, "%s%s%s: %.0f W%s met in %.3f s (%zu samples, %zu over, worst %.0f W over)",
                 e->source, e->id[0] ? " " : "", e->id, e->to_w, e->ramp_s > 0 ? " by a ramp" : "", e->ttt_s,
                 e->samples, e->over, e->worst_over_w);
    else
        snprintf(text, sizeof text, "%s%s%s: %.0f W not met (%zu samples, %zu over, worst %.0f W over)",
                 e->source, e->id[0] ? " " : "", e->id, e->to_w, e->samples, e->over, e->worst_over_w);
    ctl_log(c, "time to target: %s", text);
    ctl_note(c, now, "time-to-target", text);
}

/* When the period's readings were taken, on the targets' clock: started,
 * the newest snapshot of a node up (its read's start); in process, the
 * period's start. */
static double sample_time(ctl_t *c)
{
    const struct ctl_period_state *p = &c->p;
    if (!c->started || !c->io.snap)
        return p->now;
    double newest = -INFINITY;
    pthread_mutex_lock(&c->io.mu);
    for (size_t a = 0; a < c->c.nagents; a++)
        if (c->agents[a].up && c->io.snap[a].t > newest)
            newest = c->io.snap[a].t;
    pthread_mutex_unlock(&c->io.mu);
    return isfinite(newest) ? p->now + (newest - p->t_start) : p->now;
}

void ctl_ttt_period(ctl_t *c, double site_w)
{
    struct ctl_ttt_track *k = &c->ttt;
    struct ctl_period_state *p = &c->p;
    if (!p->ngpus)
        return;         /* the site not read yet: no limit to judge by */
    double sample_t = sample_time(c);
    double unl = p->sum_max_w + p->other_w;
    pthread_mutex_lock(&c->tmu);
    double lim = pflex_target_profile_limit_w(&c->tprof, &c->targets, p->now, p->baseline_w, unl);
    const struct pflex_target *w = pflex_target_profile_winner(&c->tprof, &c->targets, p->now, p->baseline_w, unl);
    /* k->seq is the measured target's seq + 1 (0: none) */
    int fresh = w && w->seq + 1 != k->seq && isfinite(k->prev_limit_w) && lim < k->prev_limit_w - PFLEX_TTT_TOL_W;
    struct ctl_ttt_event e = {0};
    if (fresh) {
        double arr = arrival(k, w->seq);
        e = (struct ctl_ttt_event){.signal_s = isnan(arr) ? w->start_s : arr, .start_s = w->start_s,
                                   .ramp_s = w->ramp_s, .to_w = pflex_target_watts(w, p->baseline_w),
                                   .end_s = w->end_s, .ttt_s = NAN};
        /* the ramp's line starts where the limit stood just before it */
        e.from_w = pflex_target_profile_limit_w(&c->tprof, &c->targets, w->start_s - 1e-3, p->baseline_w, unl);
        if (!isfinite(e.from_w) || e.from_w > unl)
            e.from_w = unl;
        snprintf(e.source, sizeof e.source, "%s", w->source);
        snprintf(e.id, sizeof e.id, "%s", w->id);
        k->seq = w->seq + 1;
    } else if (!w)
        k->seq = 0;
    pthread_mutex_unlock(&c->tmu);
    k->prev_limit_w = isfinite(lim) ? lim : unl;
    if (fresh) {
        if (k->open) {
            pflex_ttt_close(&k->m, e.signal_s);
            settle(c, p->now);
        }
        k->cur = e;
        k->open = 1;
        pflex_ttt_begin(&k->m, &(struct pflex_ttt_event){.signal_s = e.signal_s, .start_s = e.start_s,
                                                         .ramp_s = e.ramp_s, .from_w = e.from_w,
                                                         .to_w = e.to_w, .end_s = e.end_s},
                        CTL_TTT_HOLD_S);
        k->cur.signal_s = k->m.ev.signal_s;
    }
    if (k->open && (pflex_ttt_sample(&k->m, sample_t, site_w) || (!isnan(site_w) && p->now > k->cur.end_s))) {
        pflex_ttt_close(&k->m, k->cur.end_s);
        settle(c, p->now);
    }
}

static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static const char *state_name(int s)
{
    return s == PFLEX_TTT_MET ? "met" : s == PFLEX_TTT_UNMET ? "unmet" : "open";
}

static json_t *event_json(const struct ctl_ttt_event *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "source", json_string(e->source));
    json_object_set_new(o, "id", json_string(e->id));
    json_object_set_new(o, "signal_s", num(e->signal_s));
    json_object_set_new(o, "ramp_s", num(e->ramp_s));
    json_object_set_new(o, "target_w", num(e->to_w));
    json_object_set_new(o, "state", json_string(state_name(e->state)));
    json_object_set_new(o, "ttt_s", num(e->ttt_s));
    json_object_set_new(o, "samples", json_integer((json_int_t)e->samples));
    json_object_set_new(o, "over", json_integer((json_int_t)e->over));
    json_object_set_new(o, "worst_over_w", num(e->worst_over_w));
    return o;
}

json_t *ctl_ttt_json(const ctl_t *c)
{
    const struct ctl_ttt_track *k = &c->ttt;
    size_t n = k->settled < CTL_TTT_KEEP ? k->settled : CTL_TTT_KEEP;
    double v[CTL_TTT_KEEP];
    memcpy(v, k->kept, n * sizeof *v);
    struct pflex_ttt_summary s;
    pflex_ttt_summarize(v, n, &s);
    json_t *o = json_object();
    json_object_set_new(o, "hold_s", json_real(CTL_TTT_HOLD_S));
    json_object_set_new(o, "events", json_integer((json_int_t)k->settled));
    json_object_set_new(o, "met", json_integer((json_int_t)k->met));
    json_object_set_new(o, "unmet", json_integer((json_int_t)k->unmet));
    json_object_set_new(o, "p50_s", num(s.p50_s));
    json_object_set_new(o, "p99_s", num(s.p99_s));
    json_object_set_new(o, "worst_s", num(s.worst_s));
    if (k->open) {
        struct ctl_ttt_event cur = k->cur;
        cur.state = PFLEX_TTT_OPEN;
        cur.samples = k->m.samples;
        cur.over = k->m.over;
        cur.worst_over_w = k->m.worst_over_w;
        json_object_set_new(o, "current", event_json(&cur));
    } else
        json_object_set_new(o, "current", json_null());
    json_object_set_new(o, "last", k->have_last ? event_json(&k->last) : json_null());
    return o;
}

void ctl_ttt_metrics(const ctl_t *c, pflex_prom_t *p)
{
    const struct ctl_ttt_track *k = &c->ttt;
    const char *h = "pflex_controller_time_to_target_seconds";
    pflex_prom_family(p, h, "histogram",
                      "Time from a grid signal to the site's power staying at or under it (s), events met.");
    unsigned long cum = 0;
    char le[32];
    for (size_t b = 0; b <= NBOUNDS; b++) {
        cum += k->bucket[b];
        if (b < NBOUNDS)
            snprintf(le, sizeof le, "%g", bounds[b]);
        else
            snprintf(le, sizeof le, "+Inf");
        pflex_prom_sample(p, "pflex_controller_time_to_target_seconds_bucket", (const char *const[]){"le", le, NULL},
                          (double)cum);
    }
    pflex_prom_sample(p, "pflex_controller_time_to_target_seconds_sum", NULL, k->sum_s);
    pflex_prom_sample(p, "pflex_controller_time_to_target_seconds_count", NULL, (double)k->met);
    pflex_prom_family(p, "pflex_controller_time_to_target_unmet_total", "counter",
                      "Grid events that ended, or gave way to another, before the site met them.");
    pflex_prom_sample(p, "pflex_controller_time_to_target_unmet_total", NULL, (double)k->unmet);
}
