/* meter.c — the grid meter read on a thread of its own, and the loop
 * closed on it (meter.h); the query and its answer in meter_read.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/ctl_int.h"
#include "lib/util/clock.h"

/* One read, published under mu. */
static void read_once(ctl_t *c)
{
    struct ctl_meter *m = &c->meter;
    double v = NAN, ts = NAN;
    pflex_error_t e = {{0}};
    int ok = meter_read(c->c.meter_url, c->c.meter_query, 0.4 * c->c.period_s, &v, &ts, &e) == 0;
    pthread_mutex_lock(&m->mu);
    m->value = v;
    m->stamp_s = ts;
    m->read_ok = ok;
    m->read_mono = pflex_mono_s();
    snprintf(m->read_why, sizeof m->read_why, "%.190s", ok ? "" : e.text);
    pthread_mutex_unlock(&m->mu);
}

/* Reads twice a period, so that a period takes one at most half a period old. */
static void *meter_thread(void *arg)
{
    ctl_t *c = arg;
    struct ctl_meter *m = &c->meter;
    for (;;) {
        read_once(c);
        pthread_mutex_lock(&m->mu);
        double until = pflex_mono_s() + c->c.period_s / 2;
        while (!m->stop) {
            double left = until - pflex_mono_s();
            if (left <= 0)
                break;
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            double end = (double)ts.tv_sec + ts.tv_nsec / 1e9 + left;
            ts.tv_sec = (time_t)end;
            ts.tv_nsec = (long)((end - floor(end)) * 1e9);
            pthread_cond_timedwait(&m->cv, &m->mu, &ts);
        }
        int stop = m->stop;
        pthread_mutex_unlock(&m->mu);
        if (stop)
            return NULL;
    }
}

int ctl_meter_start(ctl_t *c, pflex_error_t *err)
{
    struct ctl_meter *m = &c->meter;
    if (!c->c.meter_query || m->th_on)
        return 0;
    if (pthread_create(&m->th, NULL, meter_thread, c))
        return pflex_error_set(err, "meter: cannot start its thread");
    m->th_on = 1;
    return 0;
}

void ctl_meter_stop(ctl_t *c)
{
    struct ctl_meter *m = &c->meter;
    if (!m->th_on)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->th, NULL);
    m->th_on = 0;
}

static const char *state_names[] = {"off", "ok", "stale", "missing", "nan", "down"};

/* The period's state from the last read. */
static void judge(ctl_t *c, double now)
{
    struct ctl_meter *m = &c->meter;
    if (!c->started)
        read_once(c);   /* no thread: read here */
    pthread_mutex_lock(&m->mu);
    double v = m->value, ts = m->stamp_s, rm = m->read_mono;
    int ok = m->read_ok;
    char why[200];
    snprintf(why, sizeof why, "%s", m->read_why);
    pthread_mutex_unlock(&m->mu);
    double max_age = c->c.meter_max_age_s > 0 ? c->c.meter_max_age_s : 3 * c->c.period_s;
    m->age_s = ok ? now - ts : NAN;
    m->site_w = NAN;
    m->why[0] = '\0';
    if (isnan(rm)) {
        m->state = METER_MISSING;
        snprintf(m->why, sizeof m->why, "meter: not read yet");
    } else if (!ok) {
        m->state = strstr(why, "no series") ? METER_MISSING : METER_DOWN;
        snprintf(m->why, sizeof m->why, "%s", why);
    } else if (pflex_mono_s() - rm > max_age || fabs(now - ts) > max_age) {
        m->state = METER_STALE;
        snprintf(m->why, sizeof m->why, "meter: its reading is %.1f s old (more than %.1f s)",
                 fmax(pflex_mono_s() - rm, fabs(now - ts)), max_age);
    } else if (!isfinite(v)) {
        m->state = METER_NAN;
        snprintf(m->why, sizeof m->why, "meter: the query's value is %g", v);
    } else {
        m->state = METER_OK;
        m->site_w = v;
    }
}

double ctl_meter_other_w(ctl_t *c)
{
    struct ctl_meter *m = &c->meter;
    const struct ctl_period_state *p = &c->p;
    if (!c->c.meter_query) {
        m->state = METER_OFF;
        return m->other_w = c->c.other_w;
    }
    judge(c, p->now);
    m->rest_raw_w = m->state == METER_OK && p->any_power ? m->site_w - p->measured_w : NAN;
    if (isnan(m->rest_raw_w)) {
        if (m->state == METER_OK) {
            m->state = METER_MISSING;
            snprintf(m->why, sizeof m->why, "meter: no GPU power read this period to take from it");
        }
        /* fall back, and start the filter afresh when the meter is back */
        m->rest_w = NAN;
        m->nraw = 0;
        m->fallbacks++;
        if (!m->said) {
            char msg[300];
            snprintf(msg, sizeof msg, "falling back to --other-w %.0f W: %s", c->c.other_w, m->why);
            ctl_log(c, "meter: %s", msg);
            ctl_note(c, p->now, "meter", msg);
            m->said = 1;
        }
        return m->other_w = c->c.other_w;
    }
    if (m->said) {
        ctl_log(c, "meter: reads again (%.0f W); the rest follows it, not --other-w", m->site_w);
        ctl_note(c, p->now, "meter", "reads again");
        m->said = 0;
    }
    /* the largest of the last n: a rise at once (the safe side), a fall
     * only once it has lasted n periods (the meter and the agents read
     * the GPUs at different instants: a period's rest can read low by
     * their noise, or while caps rise that the meter has not yet seen) */
    unsigned n = c->c.meter_filter >= 1 ? (unsigned)lround(c->c.meter_filter) : 3;
    if (n > METER_FILTER_MAX)
        n = METER_FILTER_MAX;
    m->raw[m->nraw++ % METER_FILTER_MAX] = fmin(fmax(m->rest_raw_w, 0), m->site_w);
    m->rest_w = 0;
    for (unsigned i = 0; i < n && i < m->nraw; i++)
        m->rest_w = fmax(m->rest_w, m->raw[(m->nraw - 1 - i) % METER_FILTER_MAX]);
    return m->other_w = m->rest_w;
}

double ctl_site_w(const ctl_t *c)
{
    const struct ctl_period_state *p = &c->p;
    if (c->c.meter_query && c->meter.state == METER_OK)
        return c->meter.site_w;
    return p->any_power ? p->measured_w + c->c.other_w : NAN;
}

static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *ctl_meter_json(const ctl_t *c)
{
    const struct ctl_meter *m = &c->meter;
    if (!c->c.meter_query)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "query", json_string(c->c.meter_query));
    json_object_set_new(o, "state", json_string(state_names[m->state]));
    json_object_set_new(o, "reason", m->why[0] ? json_string(m->why) : json_null());
    json_object_set_new(o, "site_w", num(m->site_w));
    json_object_set_new(o, "age_s", num(m->age_s));
    json_object_set_new(o, "rest_raw_w", num(m->rest_raw_w));
    json_object_set_new(o, "rest_w", num(m->rest_w));
    json_object_set_new(o, "other_w", num(m->other_w));
    json_object_set_new(o, "fallback", json_boolean(m->state != METER_OK));
    json_object_set_new(o, "fallback_periods", json_integer((json_int_t)m->fallbacks));
    return o;
}

void ctl_meter_metrics(const ctl_t *c, pflex_prom_t *p)
{
    const struct ctl_meter *m = &c->meter;
    if (!c->c.meter_query)
        return;
    static const struct { const char *name, *type, *help; } f[] = {
        {"pflex_controller_meter_watts", "gauge", "The site's power as the meter's query read it last period (W)."},
        {"pflex_controller_meter_up", "gauge", "1 when last period's meter reading was fresh and a number."},
        {"pflex_controller_meter_rest_watts", "gauge",
         "The non-GPU power the plan counted: the meter less the GPUs' draw, filtered, or --other-w (W)."},
        {"pflex_controller_meter_fallback_periods_total", "counter", "Periods planned on --other-w, the meter unusable."},
    };
    double v[] = {m->site_w, m->state == METER_OK, m->other_w, (double)m->fallbacks};
    for (size_t k = 0; k < sizeof f / sizeof *f; k++) {
        pflex_prom_family(p, f[k].name, f[k].type, f[k].help);
        pflex_prom_sample(p, f[k].name, NULL, v[k]);
    }
}
