/* openadr.c — OpenADR 3.0.1 on the VEN side: events into targets, reports
 * out, and the client that talks to a VTN (libcurl, Jansson). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <curl/curl.h>
#include <jansson.h>
#include "pflex/net/http.h"
#include "pflex/net/openadr.h"
#include "lib/util/clock.h"
#include "lib/util/mix.h"

void pflex_oadr_opts_default(struct pflex_oadr_opts *o, double now_s)
{
    memset(o, 0, sizeof *o);
    o->now_s = now_s;
    o->seed = 1;
    o->simple_fraction[0] = 0;
    o->simple_fraction[1] = 0.90;
    o->simple_fraction[2] = 0.75;
    o->simple_fraction[3] = 0.50;
}

void pflex_oadr_events_fini(pflex_oadr_events_t *e)
{
    if (!e)
        return;
    free(e->ev);
    free(e->refused);
    memset(e, 0, sizeof *e);
}

/* ---- the randomizeStart draw ---- */

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h ^ 0xff;    /* separates "ab"+"c" from "a"+"bc" */
}

/* A uniform draw in [0, 1) fixed by the seed, the VEN and the object. */
static double draw(const struct pflex_oadr_opts *o, const char *event_id, long interval_id)
{
    uint64_t h = fnv1a(0xcbf29ce484222325ULL, o->client_name);
    h = fnv1a(h, event_id);
    h ^= (uint64_t)interval_id * 0x9e3779b97f4a7c15ULL;
    return (double)(pflex_mix64(h ^ pflex_mix64(o->seed)) >> 11) * 0x1.0p-53;
}

/* ---- intervalPeriod ---- */

struct period {
    int has_start, has_duration;
    double start_s;             /* resolved ("now" applied) */
    double duration_s;          /* INFINITY: forever or until withdrawn */
    double randomize_s;         /* 0: none */
};

static int parse_start(const char *s, double now_s, double *out, pflex_error_t *err)
{
    if (!strncmp(s, "0001-01-01", 10) || !strncmp(s, "0000-00-00", 10)) {
        *out = now_s;
        return 0;
    }
    if (s[0] == '+' || s[0] == '@' || !strcmp(s, "now"))
        return pflex_error_set(err, "start '%s' is not an RFC 3339 date-time", s);
    return pflex_target_parse_time(s, now_s, out, err);
}

static int parse_period(json_t *p, double now_s, struct period *out, pflex_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!p || json_is_null(p))
        return 0;
    if (!json_is_object(p))
        return pflex_error_set(err, "intervalPeriod is not an object");
    json_t *st = json_object_get(p, "start"), *du = json_object_get(p, "duration"),
           *rs = json_object_get(p, "randomizeStart");
    pflex_error_t e2;
    if (st && !json_is_null(st)) {
        if (!json_is_string(st))
            return pflex_error_set(err, "intervalPeriod.start is not a string");
        if (parse_start(json_string_value(st), now_s, &out->start_s, &e2) < 0)
            return pflex_error_set(err, "intervalPeriod.start: %s", e2.text);
        out->has_start = 1;
    }
    if (du && !json_is_null(du)) {
        const char *d = json_is_string(du) ? json_string_value(du) : NULL;
        if (!d || d[0] != 'P')
            return pflex_error_set(err, "intervalPeriod.duration is not an ISO 8601 duration");
        if (pflex_target_parse_duration(d, &out->duration_s, &e2) < 0)
            return pflex_error_set(err, "intervalPeriod.duration: %s", e2.text);
        if (out->duration_s == 0)
            out->duration_s = INFINITY;     /* PT0S: until withdrawn, for a limit */
        out->has_duration = 1;
    }
    if (rs && !json_is_null(rs)) {
        const char *d = json_is_string(rs) ? json_string_value(rs) : NULL;
        if (!d || d[0] != 'P')
            return pflex_error_set(err, "intervalPeriod.randomizeStart is not an ISO 8601 duration");
        if (pflex_target_parse_duration(d, &out->randomize_s, &e2) < 0)
            return pflex_error_set(err, "intervalPeriod.randomizeStart: %s", e2.text);
        if (!isfinite(out->randomize_s) || out->randomize_s > 366 * 86400.0)
            return pflex_error_set(err, "intervalPeriod.randomizeStart is out of range");
    }
    return 0;
}

/* ---- payloads ---- */

enum kind { K_NONE, K_LIMIT, K_SETPOINT, K_RELATIVE, K_OFFSET_PCT, K_SIMPLE };

static enum kind payload_kind(const char *t)
{
    if (!strcmp(t, "IMPORT_CAPACITY_LIMIT"))
        return K_LIMIT;
    if (!strcmp(t, "DISPATCH_SETPOINT"))
        return K_SETPOINT;
    if (!strcmp(t, "DISPATCH_SETPOINT_RELATIVE"))
        return K_RELATIVE;
    if (!strcmp(t, "CONTROL_LEVEL_OFFSET_PERCENT"))
        return K_OFFSET_PCT;
    if (!strcmp(t, "SIMPLE"))
        return K_SIMPLE;
    return K_NONE;
}

/* Watts per unit of a power payload, from the event's descriptors; -1 for
 * units that are not power. */
static double unit_w(json_t *descriptors, const char *type)
{
    size_t i;
    json_t *d;
    if (!json_is_array(descriptors))
        return 1e3;
    json_array_foreach(descriptors, i, d) {
        json_t *pt = json_object_get(d, "payloadType");
        if (!json_is_string(pt) || strcmp(json_string_value(pt), type))
            continue;
        json_t *u = json_object_get(d, "units");
        if (!u || json_is_null(u))
            return 1e3;
        if (!json_is_string(u))
            return -1;
        const char *s = json_string_value(u);
        if (!strcmp(s, "W"))
            return 1;
        if (!strcmp(s, "KW"))
            return 1e3;
        if (!strcmp(s, "MW"))
            return 1e6;
        return -1;
    }
    return 1e3;
}

static int number(json_t *v, double *out)
{
    if (json_is_integer(v))
        *out = (double)json_integer_value(v);
    else if (json_is_real(v))
        *out = json_real_value(v);
    else
        return -1;
    return isfinite(*out) ? 0 : -1;
}

/* The limit an interval's payloads ask for: 1 with value and unit set, 0 for
 * none (nothing we follow, or SIMPLE level 0), -1 malformed (err set). */
static int interval_limit(json_t *payloads, json_t *descriptors, const struct pflex_oadr_opts *o,
                          double *value, enum pflex_target_unit *unit, pflex_error_t *err)
{
    if (!json_is_array(payloads))
        return pflex_error_set(err, "payloads is not an array");
    int found = 0;
    double best_w = INFINITY;
    size_t i;
    json_t *p;
    json_array_foreach(payloads, i, p) {
        json_t *ty = json_object_get(p, "type"), *vals = json_object_get(p, "values");
        if (!json_is_string(ty))
            return pflex_error_set(err, "payload %zu has no type", i);
        enum kind k = payload_kind(json_string_value(ty));
        if (k == K_NONE)
            continue;
        double v;
        if (!json_is_array(vals) || json_array_size(vals) < 1 || number(json_array_get(vals, 0), &v) < 0)
            return pflex_error_set(err, "payload %s: values[0] is not a number", json_string_value(ty));
        double val;
        enum pflex_target_unit u = PFLEX_TARGET_WATTS;
        double mul = k == K_LIMIT || k == K_SETPOINT || k == K_RELATIVE
                         ? unit_w(descriptors, json_string_value(ty)) : 1;
        if (mul < 0)
            return pflex_error_set(err, "payload %s: units are not W, KW or MW", json_string_value(ty));
        switch (k) {
        case K_LIMIT:
        case K_SETPOINT:
            val = v * mul;
            break;
        case K_RELATIVE:
            if (!(o->baseline_w > 0))
                return pflex_error_set(err, "DISPATCH_SETPOINT_RELATIVE needs the site baseline");
            val = o->baseline_w + v * mul;
            break;
        case K_OFFSET_PCT:
            val = 1 + v / 100;
            u = PFLEX_TARGET_FRACTION;
            break;
        case K_SIMPLE:
            if (v != floor(v) || v < 0 || v > 3)
                return pflex_error_set(err, "SIMPLE level %g is not 0..3", v);
            val = o->simple_fraction[(int)v];
            if (!(val > 0))
                continue;       /* normal operation: no limit */
            u = PFLEX_TARGET_FRACTION;
            break;
        default:
            continue;
        }
        /* the bounds of a target typed by hand: 1e-300 kW is no limit a
         * site can keep, and would send every GPU to its minimum */
        pflex_error_t e2;
        if (pflex_target_check_value(val, u, &e2) < 0)
            return pflex_error_set(err, "payload %s: limit %g: %s", json_string_value(ty), v, e2.text);
        double w = u == PFLEX_TARGET_WATTS ? val : val * o->baseline_w;
        if (!found || (o->baseline_w > 0 && w < best_w)) {
            *value = val;
            *unit = u;
            best_w = w;
        }
        found = 1;
    }
    return found;
}

static void note(pflex_oadr_events_t *evs, const char *what, const char *id, const pflex_error_t *e)
{
    if (!evs)
        return;
    evs->skipped++;
    if (!evs->note[0])
        snprintf(evs->note, sizeof evs->note, "%s '%.64s' left out: %.160s", what, id, e->text);
}

/* An event left out by its id (of the room made for every event of the
 * answer): the caller keeps its last good version. */
static void refuse_id(pflex_oadr_events_t *evs, const char *id)
{
    if (evs->refused && strcmp(id, "unnamed"))
        snprintf(evs->refused[evs->nrefused++], sizeof evs->refused[0], "%s", id);
}

static int copy_id(json_t *v, char *buf, size_t size)
{
    if (!json_is_string(v))
        return -1;
    const char *s = json_string_value(v);
    if (strlen(s) >= size || !*s)
        return -1;
    memcpy(buf, s, strlen(s) + 1);
    return 0;
}

/* One event into tmp; 0, or -1 with err set (the event is left out). */
static int one_event(json_t *ev, const struct pflex_oadr_opts *o, pflex_target_set_t *tmp,
                     struct pflex_oadr_event *out, size_t *intervals_seen, pflex_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(ev))
        return pflex_error_set(err, "not an object");
    if (copy_id(json_object_get(ev, "id"), out->id, sizeof out->id) < 0)
        snprintf(out->id, sizeof out->id, "unnamed");
    json_t *mod = json_object_get(ev, "modificationDateTime");
    if (json_is_string(mod))
        snprintf(out->modified, sizeof out->modified, "%s", json_string_value(mod));
    if (copy_id(json_object_get(ev, "programID"), out->program_id, sizeof out->program_id) < 0)
        return pflex_error_set(err, "programID missing or not a string of 1..128 characters");
    json_t *pr = json_object_get(ev, "priority");
    out->priority = -1;
    if (pr && !json_is_null(pr)) {
        if (!json_is_integer(pr) || json_integer_value(pr) < 0 || json_integer_value(pr) > 1000000)
            return pflex_error_set(err, "priority is not a whole number 0..1000000");
        out->priority = (int)json_integer_value(pr);
    }
    struct period ep;
    if (parse_period(json_object_get(ev, "intervalPeriod"), o->now_s, &ep, err) < 0)
        return -1;
    json_t *ivs = json_object_get(ev, "intervals");
    if (!json_is_array(ivs))
        return pflex_error_set(err, "intervals is not an array");
    *intervals_seen += json_array_size(ivs);
    if (*intervals_seen > PFLEX_OADR_MAX_INTERVALS)
        return pflex_error_set(err, "more than %d intervals", PFLEX_OADR_MAX_INTERVALS);
    out->offset_s = ep.randomize_s > 0 ? draw(o, out->id, -1) * ep.randomize_s : 0;
    double ev_start = ep.has_start ? ep.start_s : NAN;
    double ev_dur = ep.has_duration ? ep.duration_s : INFINITY;
    double next = ev_start;     /* where an interval without its own period starts */
    json_t *descr = json_object_get(ev, "payloadDescriptors");
    out->start_s = INFINITY;
    out->end_s = -INFINITY;
    size_t i;
    json_t *iv;
    json_array_foreach(ivs, i, iv) {
        if (!json_is_object(iv))
            return pflex_error_set(err, "interval %zu is not an object", i);
        json_t *jid = json_object_get(iv, "id");
        if (!json_is_integer(jid))
            return pflex_error_set(err, "interval %zu: id is not an integer", i);
        long iid = (long)json_integer_value(jid);
        struct period ip;
        if (parse_period(json_object_get(iv, "intervalPeriod"), o->now_s, &ip, err) < 0)
            return -1;
        double start = ip.has_start ? ip.start_s : next;
        double dur = ip.has_duration ? ip.duration_s : ev_dur;
        if (!isfinite(start))
            return pflex_error_set(err, "interval %ld: no start (neither its own nor the event's)", iid);
        double ioff = ip.randomize_s > 0 ? draw(o, out->id, iid) * ip.randomize_s : 0;
        next = start + dur;
        double value = 0;
        enum pflex_target_unit unit = PFLEX_TARGET_WATTS;
        int got = interval_limit(json_object_get(iv, "payloads"), descr, o, &value, &unit, err);
        if (got < 0)
            return -1;
        if (!got)
            continue;
        struct pflex_target t = {
            .start_s = start + out->offset_s + ioff,
            .end_s = start + out->offset_s + ioff + dur,
            .value = value, .unit = unit, .ramp_s = o->ramp_s,
            .priority = out->priority < 0 ? 1000000 : out->priority,
        };
        snprintf(t.source, sizeof t.source, "openadr");
        char tid[64];
        snprintf(tid, sizeof tid, "%.40s/%ld", out->id, iid);
        memcpy(t.id, tid, sizeof t.id);
        if (pflex_target_set_add(tmp, &t, err) < 0)
            return -1;
        out->ntargets++;
        if (t.start_s < out->start_s)
            out->start_s = t.start_s;
        if (t.end_s > out->end_s)
            out->end_s = t.end_s;
    }
    return 0;
}

static int parse_array(json_t *arr, const char *name, const struct pflex_oadr_opts *o,
                       pflex_target_set_t *out, pflex_oadr_events_t *evs, pflex_error_t *err)
{
    if (!json_is_array(arr))
        return pflex_error_set(err, "%s: not a JSON array of events", name);
    if (json_array_size(arr) > PFLEX_OADR_MAX_EVENTS)
        return pflex_error_set(err, "%s: more than %d events", name, PFLEX_OADR_MAX_EVENTS);
    pflex_target_set_t tmp;
    pflex_target_set_init(&tmp);
    pflex_oadr_events_t got = {0};
    int rc = -1;
    size_t nseen = 0;
    if (json_array_size(arr)) {
        got.ev = calloc(json_array_size(arr), sizeof *got.ev);
        got.refused = calloc(json_array_size(arr), sizeof *got.refused);
        if (!got.ev || !got.refused) {
            pflex_error_set(err, "out of memory");
            goto out;
        }
    }
    size_t i;
    json_t *ev;
    json_array_foreach(arr, i, ev) {
        if (o->program_id && json_is_object(ev)) {
            json_t *p = json_object_get(ev, "programID");
            if (!json_is_string(p) || strcmp(json_string_value(p), o->program_id))
                continue;
        }
        size_t before = tmp.n;
        pflex_error_t e2;
        struct pflex_oadr_event one;
        if (one_event(ev, o, &tmp, &one, &nseen, &e2) < 0) {
            tmp.n = before;     /* the event's targets go with it */
            if (nseen > PFLEX_OADR_MAX_INTERVALS) {
                pflex_error_set(err, "%s: %s", name, e2.text);
                goto out;
            }
            note(&got, "event", one.id[0] ? one.id : "?", &e2);
            refuse_id(&got, one.id);
            continue;
        }
        /* the same id twice: the first one in the answer is followed, the
         * others left out and said (an event's id names one event) */
        size_t dup = 0;
        while (dup < got.n && (strcmp(got.ev[dup].id, one.id) || !strcmp(one.id, "unnamed")))
            dup++;
        if (dup < got.n) {
            tmp.n = before;
            pflex_error_t e3;
            pflex_error_set(&e3, "a second event with this id (the first one in the answer is followed)");
            note(&got, "event", one.id, &e3);
            continue;
        }
        got.ev[got.n++] = one;
    }
    if (out->n + tmp.n > PFLEX_TARGET_MAX) {
        pflex_error_set(err, "%s: too many targets", name);
        goto out;
    }
    for (size_t k = 0; k < tmp.n; k++)
        if (pflex_target_set_add(out, &tmp.t[k], err) < 0)
            goto out;
    rc = 0;
    if (evs) {
        pflex_oadr_events_fini(evs);
        *evs = got;
        got.ev = NULL;
        got.refused = NULL;
    }
out:
    free(got.ev);
    free(got.refused);
    pflex_target_set_fini(&tmp);
    return rc;
}

int pflex_oadr_parse_events(const char *body, size_t len, const char *name,
                            const struct pflex_oadr_opts *o, pflex_target_set_t *out,
                            pflex_oadr_events_t *evs, pflex_error_t *err)
{
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return pflex_error_set(err, "%s:%d:%d: %s", name, je.line, je.column, je.text);
    int rc = parse_array(root, name, o, out, evs, err);
    json_decref(root);
    return rc;
}

/* ---- reports ---- */

static json_t *descriptor(const char *type, const char *units)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "objectType", "REPORT_PAYLOAD_DESCRIPTOR",
                     "payloadType", type, "readingType", "DIRECT_READ", "units", units);
}

char *pflex_oadr_report_json(const struct pflex_oadr_report *r, pflex_error_t *err)
{
    if (!r->program_id || !*r->program_id || !r->event_id || !*r->event_id || !r->client_name
        || !*r->client_name)
        return pflex_error_set(err, "a report needs programID, eventID and clientName"), NULL;
    if (!isfinite(r->start_s) || !(r->duration_s > 0) || !isfinite(r->duration_s)
        || !isfinite(r->usage_wh) || !isfinite(r->demand_w))
        return pflex_error_set(err, "a report needs a finite start, duration, usage and demand"), NULL;
    char start[40], dur[40];
    pflex_target_format_time(r->start_s, start, sizeof start);
    snprintf(dur, sizeof dur, "PT%.3fS", r->duration_s);
    json_t *payloads = json_pack("[{s:s, s:[f]}, {s:s, s:[f]}]", "type", "USAGE", "values",
                                 r->usage_wh / 1e3, "type", "DEMAND", "values", r->demand_w / 1e3);
    json_t *res = json_pack("{s:s, s:{s:s, s:s}, s:[{s:i, s:o}]}", "resourceName",
                            r->resource_name ? r->resource_name : "AGGREGATED_REPORT",
                            "intervalPeriod", "start", start, "duration", dur, "intervals", "id", 0,
                            "payloads", payloads);
    json_t *rep = json_pack("{s:s, s:s, s:s, s:s, s:[o, o], s:[o]}", "objectType", "REPORT",
                            "programID", r->program_id, "eventID", r->event_id, "clientName",
                            r->client_name, "payloadDescriptors", descriptor("USAGE", "KWH"),
                            descriptor("DEMAND", "KW"), "resources", res);
    if (!rep)
        return pflex_error_set(err, "report: out of memory or an id that is not UTF-8"), NULL;
    if (r->report_name)
        json_object_set_new(rep, "reportName", json_string(r->report_name));
    char *s = json_dumps(rep, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(rep);
    if (!s)
        pflex_error_set(err, "out of memory");
    return s;
}

/* ---- the VEN client ---- */

struct pflex_ven {
    char *url, *client_id, *client_secret, *scope;
    long timeout_ms;
    size_t max_body;
    char token[4097];
    double token_expiry;        /* CLOCK_MONOTONIC seconds */
    unsigned long requests, tokens;
    pflex_http_client_t *http;  /* one connection to the VTN, kept */
};

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int pflex_ven_create(const struct pflex_ven_config *c, pflex_ven_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!c->url || (strncmp(c->url, "http://", 7) && strncmp(c->url, "https://", 8)))
        return pflex_error_set(err, "VTN URL must start with http:// or https://");
    if (!c->client_id || !c->client_secret || !*c->client_id || !*c->client_secret)
        return pflex_error_set(err, "VEN needs a client id and a client secret");
    pflex_ven_t *v = calloc(1, sizeof *v);
    if (!v)
        return pflex_error_set(err, "out of memory");
    v->url = strdup(c->url);
    v->client_id = strdup(c->client_id);
    v->client_secret = strdup(c->client_secret);
    v->scope = dup_or_null(c->scope);
    if (!v->url || !v->client_id || !v->client_secret || (c->scope && !v->scope)) {
        pflex_ven_destroy(v);
        return pflex_error_set(err, "out of memory");
    }
    size_t l = strlen(v->url);
    while (l > 0 && v->url[l - 1] == '/')
        v->url[--l] = '\0';
    v->timeout_ms = c->timeout_ms > 0 ? c->timeout_ms : 5000;
    v->max_body = c->max_body ? c->max_body : (4u << 20);
    struct pflex_http_client_opts ho = {.parallel = 1, .keep_conns = 1, .timeout_s = v->timeout_ms / 1e3,
                                        .max_response = v->max_body, .accept = "application/json",
                                        .ca_file = c->ca_file};
    if (pflex_http_client_create(&ho, &v->http, err) < 0) {
        pflex_ven_destroy(v);
        return -1;
    }
    *out = v;
    return 0;
}

void pflex_ven_destroy(pflex_ven_t *v)
{
    if (!v)
        return;
    free(v->url);
    free(v->client_id);
    if (v->client_secret) {
        memset(v->client_secret, 0, strlen(v->client_secret));
        free(v->client_secret);
    }
    free(v->scope);
    pflex_http_client_destroy(v->http);
    memset(v->token, 0, sizeof v->token);
    free(v);
}

void pflex_ven_counts(const pflex_ven_t *v, unsigned long *requests, unsigned long *tokens)
{
    if (requests)
        *requests = v->requests;
    if (tokens)
        *tokens = v->tokens;
}

struct body {
    char *buf;
    size_t len;
};

/* One request over the VEN's HTTP client (pflex/net/http.h); *status the HTTP
 * status, body the response (caller frees body->buf).  0, or -1 on a
 * transport failure or an oversized response. */
static int request(pflex_ven_t *v, const char *method, const char *path, const char *content_type,
                   const char *data, int auth, long *status, struct body *body, pflex_error_t *err)
{
    char url[2048];
    memset(body, 0, sizeof *body);
    if (snprintf(url, sizeof url, "%s%s", v->url, path) >= (int)sizeof url)
        return pflex_error_set(err, "VTN URL too long");
    struct pflex_http_call call = {.method = method, .url = url, .body = data,
                                   .content_type = content_type, .token = auth ? v->token : NULL};
    v->requests++;
    if (pflex_http_client_run(v->http, &call, 1, NULL, NULL, err) != 0) {
        if (call.too_big)
            return pflex_error_set(err, "%s %s: response larger than %zu bytes", method, path, v->max_body);
        return pflex_error_set(err, "%s %s: %s", method, path, call.error);
    }
    *status = call.status;
    body->buf = call.resp;
    body->len = call.resp_len;
    return 0;
}

static int fetch_token(pflex_ven_t *v, pflex_error_t *err)
{
    CURL *h = curl_easy_init();
    if (!h)
        return pflex_error_set(err, "libcurl: cannot create a handle");
    char *id = curl_easy_escape(h, v->client_id, 0), *sec = curl_easy_escape(h, v->client_secret, 0);
    char *sc = v->scope ? curl_easy_escape(h, v->scope, 0) : NULL;
    curl_easy_cleanup(h);
    if (!id || !sec || (v->scope && !sc)) {
        curl_free(id);
        curl_free(sec);
        curl_free(sc);
        return pflex_error_set(err, "out of memory");
    }
    size_t n = strlen(id) + strlen(sec) + (sc ? strlen(sc) : 0) + 80;
    char *form = malloc(n);
    if (!form) {
        curl_free(id);
        curl_free(sec);
        curl_free(sc);
        return pflex_error_set(err, "out of memory");
    }
    snprintf(form, n, "grant_type=client_credentials&client_id=%s&client_secret=%s%s%s", id, sec,
             sc ? "&scope=" : "", sc ? sc : "");
    curl_free(id);
    curl_free(sec);
    curl_free(sc);
    long status = 0;
    struct body b;
    int rc = request(v, "POST", "/auth/token", "application/x-www-form-urlencoded", form, 0,
                     &status, &b, err);
    memset(form, 0, strlen(form));
    free(form);
    if (rc < 0)
        return -1;
    rc = -1;
    json_t *j = NULL;
    if (status != 200) {
        pflex_error_set(err, "POST /auth/token: HTTP %ld", status);
        goto out;
    }
    json_error_t je;
    j = json_loadb(b.buf ? b.buf : "", b.len, 0, &je);
    json_t *tok = json_object_get(j, "access_token"), *ty = json_object_get(j, "token_type"),
           *ex = json_object_get(j, "expires_in");
    if (!json_is_string(tok) || !*json_string_value(tok) || strlen(json_string_value(tok)) > 4096) {
        pflex_error_set(err, "POST /auth/token: no access_token of 1..4096 characters in the answer");
        goto out;
    }
    if (ty && (!json_is_string(ty) || strcasecmp(json_string_value(ty), "Bearer"))) {
        pflex_error_set(err, "POST /auth/token: token_type is not Bearer");
        goto out;
    }
    for (const char *c = json_string_value(tok); *c; c++)
        if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e) {
            pflex_error_set(err, "POST /auth/token: the token holds characters a header cannot carry");
            goto out;
        }
    strcpy(v->token, json_string_value(tok));
    double life = json_is_integer(ex) && json_integer_value(ex) > 0 ? (double)json_integer_value(ex) : 3600;
    if (life > 86400)
        life = 86400;
    v->token_expiry = pflex_mono_s() + life - (life > 60 ? 30 : life / 2);
    v->tokens++;
    rc = 0;
out:
    json_decref(j);
    free(b.buf);
    return rc;
}

/* An authenticated request: a token fetched when there is none or it has
 * expired, and fetched again once when the VTN answers 401. */
static int authed(pflex_ven_t *v, const char *method, const char *path, const char *data,
                  long *status, struct body *b, pflex_error_t *err)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!v->token[0] || pflex_mono_s() >= v->token_expiry)
            if (fetch_token(v, err) < 0)
                return -1;
        if (request(v, method, path, data ? "application/json" : NULL, data, 1, status, b, err) < 0)
            return -1;
        if (*status != 401 && *status != 403)
            return 0;
        free(b->buf);
        b->buf = NULL;
        v->token[0] = '\0';
    }
    return pflex_error_set(err, "%s %s: refused (HTTP %ld) with a fresh token", method, path, *status);
}

/* 1 when event id made the target id's first len bytes (ids are kept to
 * 40 bytes there). */
static int id_made(const char *id, const char *tid, size_t len)
{
    size_t n = strlen(id);
    return (n == len || (len == 40 && n > 40)) && !strncmp(id, tid, len);
}

/* 1 when target id "EVENT/INTERVAL" is of an event evs refused by its id
 * and does not follow. */
static int refused_event(const pflex_oadr_events_t *evs, const char *tid)
{
    const char *slash = strrchr(tid, '/');
    size_t len = slash ? (size_t)(slash - tid) : strlen(tid);
    for (size_t e = 0; e < evs->n; e++)
        if (id_made(evs->ev[e].id, tid, len))
            return 0;
    for (size_t r = 0; r < evs->nrefused; r++)
        if (id_made(evs->refused[r], tid, len))
            return 1;
    return 0;
}

/* The VTN's targets of a set by id, then by place in it. */
static int cmp_id_place(const void *a, const void *b)
{
    const struct pflex_target *x = *(const struct pflex_target *const *)a;
    const struct pflex_target *y = *(const struct pflex_target *const *)b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x > y) - (x < y);
}

/* The first of the VTN's targets of set (by place) that f repeats, its id
 * and every field of its limit the same, or NULL; by: those targets as
 * cmp_id_place orders them. */
static const struct pflex_target *seen_before(const struct pflex_target *const *by, size_t n,
                                              const struct pflex_target *f)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(by[mid]->id, f->id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < n && !strcmp(by[lo]->id, f->id); lo++) {
        const struct pflex_target *old = by[lo];
        if (old->start_s == f->start_s && old->end_s == f->end_s && old->value == f->value
            && old->unit == f->unit && old->priority == f->priority && old->ramp_s == f->ramp_s)
            return old;
    }
    return NULL;
}

/* set's targets with the VTN's replaced by fresh into *next (initialised
 * here; empty on failure).  Others keep their place; a VTN target seen
 * before, unchanged, keeps the order it first came in (latest wins counts
 * from first receipt), found by id in O(log n), not by a scan of the old
 * set for each new target; an event the VTN now sends malformed keeps its
 * last good version: a bad update never releases a limit. */
static int merge_vtn(const pflex_target_set_t *set, const pflex_target_set_t *fresh, pflex_oadr_events_t *evs,
                     pflex_target_set_t *next, pflex_error_t *err)
{
    pflex_target_set_init(next);
    const struct pflex_target **by = malloc((set->n ? set->n : 1) * sizeof *by);
    if (!by)
        return pflex_error_set(err, "out of memory");
    size_t nby = 0;
    int ok = 1;
    for (size_t i = 0; i < set->n && ok; i++)
        if (strcmp(set->t[i].source, "openadr")) {
            ok = pflex_target_set_add(next, &set->t[i], err) == 0;
            if (ok)
                pflex_target_set_seq(next, next->n - 1, set->t[i].seq);
        } else
            by[nby++] = &set->t[i];
    qsort(by, nby, sizeof *by, cmp_id_place);
    next->next_seq = set->next_seq;
    for (size_t i = 0; i < fresh->n && ok; i++) {
        const struct pflex_target *f = &fresh->t[i];
        ok = pflex_target_set_add(next, f, err) == 0;
        const struct pflex_target *old = ok ? seen_before(by, nby, f) : NULL;
        if (old)
            pflex_target_set_seq(next, next->n - 1, old->seq);
    }
    for (size_t i = 0; i < set->n && ok && evs; i++) {
        const struct pflex_target *old = &set->t[i];
        if (strcmp(old->source, "openadr") || !refused_event(evs, old->id))
            continue;
        ok = pflex_target_set_add(next, old, err) == 0;
        if (ok) {
            pflex_target_set_seq(next, next->n - 1, old->seq);
            evs->kept++;
        }
    }
    free(by);
    if (!ok) {
        pflex_target_set_fini(next);
        return -1;
    }
    return 0;
}

int pflex_ven_poll(pflex_ven_t *v, const struct pflex_oadr_opts *o, pflex_target_set_t *set,
                   pflex_oadr_events_t *evs, pflex_error_t *err)
{
    json_t *all = json_array();
    if (!all)
        return pflex_error_set(err, "out of memory");
    int rc = -1;
    /* Pages of 50 (the specification's largest limit), at most enough for
     * PFLEX_OADR_MAX_EVENTS. */
    for (int skip = 0; skip <= PFLEX_OADR_MAX_EVENTS; skip += 50) {
        char path[512];
        CURL *h = NULL;
        char *prog = NULL;
        if (o->program_id) {
            h = curl_easy_init();
            prog = h ? curl_easy_escape(h, o->program_id, 0) : NULL;
            if (h)
                curl_easy_cleanup(h);
            if (!prog) {
                pflex_error_set(err, "out of memory");
                goto out;
            }
        }
        snprintf(path, sizeof path, "/events?skip=%d&limit=50%s%.400s", skip,
                 prog ? "&programID=" : "", prog ? prog : "");
        curl_free(prog);
        long status;
        struct body b;
        if (authed(v, "GET", path, NULL, &status, &b, err) < 0)
            goto out;
        if (status != 200) {
            free(b.buf);
            pflex_error_set(err, "GET /events: HTTP %ld", status);
            goto out;
        }
        json_error_t je;
        json_t *page = json_loadb(b.buf ? b.buf : "", b.len, JSON_REJECT_DUPLICATES, &je);
        free(b.buf);
        if (!page) {
            pflex_error_set(err, "GET /events:%d:%d: %s", je.line, je.column, je.text);
            goto out;
        }
        if (!json_is_array(page)) {
            json_decref(page);
            pflex_error_set(err, "GET /events: not a JSON array of events");
            goto out;
        }
        size_t n = json_array_size(page);
        json_array_extend(all, page);
        json_decref(page);
        if (json_array_size(all) > PFLEX_OADR_MAX_EVENTS) {
            pflex_error_set(err, "GET /events: more than %d events", PFLEX_OADR_MAX_EVENTS);
            goto out;
        }
        if (n < 50)
            break;
    }
    pflex_target_set_t fresh;
    pflex_target_set_init(&fresh);
    if (parse_array(all, "GET /events", o, &fresh, evs, err) < 0) {
        pflex_target_set_fini(&fresh);
        goto out;
    }
    /* Replace the VTN's targets only now that the whole answer is good. */
    pflex_target_set_t next;
    int ok = merge_vtn(set, &fresh, evs, &next, err) == 0;
    pflex_target_set_fini(&fresh);
    if (!ok)
        goto out;
    pflex_target_set_fini(set);
    *set = next;
    rc = 0;
out:
    json_decref(all);
    return rc;
}

int pflex_ven_post_report(pflex_ven_t *v, const struct pflex_oadr_report *r, pflex_error_t *err)
{
    char *js = pflex_oadr_report_json(r, err);
    if (!js)
        return -1;
    long status;
    struct body b;
    int rc = authed(v, "POST", "/reports", js, &status, &b, err);
    free(js);
    if (rc < 0)
        return -1;
    free(b.buf);
    if (status < 200 || status > 299)
        return pflex_error_set(err, "POST /reports: HTTP %ld", status);
    return 0;
}

/* ---- subscriptions and notifications ---- */

void pflex_oadr_notification_fini(struct pflex_oadr_notification *n)
{
    free(n->object);
    memset(n, 0, sizeof *n);
}

int pflex_oadr_parse_notification(const char *body, size_t len, struct pflex_oadr_notification *n,
                                  pflex_error_t *err)
{
    memset(n, 0, sizeof *n);
    if (len > PFLEX_OADR_MAX_NOTIFICATION)
        return pflex_error_set(err, "notification: %zu bytes, over the limit of %u", len,
                               PFLEX_OADR_MAX_NOTIFICATION);
    json_error_t je;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return pflex_error_set(err, "notification:%d:%d: %s", je.line, je.column, je.text);
    int rc = -1;
    json_t *ty = json_object_get(j, "objectType"), *op = json_object_get(j, "operation");
    json_t *ob = json_object_get(j, "object");
    const char *ops = json_is_string(op) ? json_string_value(op) : "";
    if (!json_is_object(j)) {
        pflex_error_set(err, "notification: not a JSON object");
        goto out;
    }
    if (!json_is_string(ty) || strcmp(json_string_value(ty), "EVENT")) {
        pflex_error_set(err, "notification: objectType is not \"EVENT\" (the only one subscribed to)");
        goto out;
    }
    n->op = !strcmp(ops, "POST") ? PFLEX_OADR_OP_POST : !strcmp(ops, "PUT") ? PFLEX_OADR_OP_PUT
          : !strcmp(ops, "DELETE") ? PFLEX_OADR_OP_DELETE : 0;
    if (!n->op) {
        pflex_error_set(err, "notification: operation is not POST, PUT or DELETE");
        goto out;
    }
    if (!json_is_object(ob)) {
        pflex_error_set(err, "notification: object is not a JSON object");
        goto out;
    }
    if (copy_id(json_object_get(ob, "id"), n->event_id, sizeof n->event_id) < 0) {
        pflex_error_set(err, "notification: the event's id is not a string of 1..128 characters");
        goto out;
    }
    json_t *mod = json_object_get(ob, "modificationDateTime");
    if (mod && (!json_is_string(mod) || strlen(json_string_value(mod)) >= sizeof n->modified)) {
        pflex_error_set(err, "notification: modificationDateTime is not a string of at most 63 characters");
        goto out;
    }
    if (mod)
        snprintf(n->modified, sizeof n->modified, "%s", json_string_value(mod));
    else if (n->op != PFLEX_OADR_OP_DELETE) {
        /* without it a replay cannot be told from an update */
        pflex_error_set(err, "notification: the event has no modificationDateTime");
        goto out;
    }
    n->object = json_dumps(ob, JSON_COMPACT);
    if (!n->object) {
        pflex_error_set(err, "out of memory");
        goto out;
    }
    n->object_len = strlen(n->object);
    rc = 0;
out:
    json_decref(j);
    if (rc < 0)
        pflex_oadr_notification_fini(n);
    return rc;
}

int pflex_oadr_apply_notification(const struct pflex_oadr_notification *n, const struct pflex_oadr_opts *o,
                                  pflex_target_set_t *set, pflex_oadr_events_t *evs, pflex_error_t *err)
{
    pflex_target_set_t fresh;
    pflex_target_set_init(&fresh);
    pflex_oadr_events_t got = {0};
    int rc = -1;
    const struct pflex_target **by = NULL;
    pflex_target_set_t next;
    pflex_target_set_init(&next);
    if (n->op != PFLEX_OADR_OP_DELETE) {
        json_error_t je;
        json_t *ob = json_loadb(n->object, n->object_len, 0, &je), *arr = json_array();
        int ok = ob && arr && json_array_append_new(arr, ob) == 0;
        if (!ok)
            json_decref(ob);
        ok = ok && parse_array(arr, "notification", o, &fresh, &got, err) == 0;
        json_decref(arr);
        if (!ok)
            goto out;
        if (got.nrefused || got.skipped) {
            /* a bad update never releases a limit: the last good version stays */
            pflex_error_set(err, "notification: event %s: %s", n->event_id, got.note);
            goto out;
        }
    }
    by = malloc((set->n ? set->n : 1) * sizeof *by);
    if (!by) {
        pflex_error_set(err, "out of memory");
        goto out;
    }
    size_t nby = 0;
    for (size_t i = 0; i < set->n; i++) {
        const struct pflex_target *t = &set->t[i];
        const char *slash = strrchr(t->id, '/');
        size_t len = slash ? (size_t)(slash - t->id) : strlen(t->id);
        if (!strcmp(t->source, "openadr") && id_made(n->event_id, t->id, len)) {
            by[nby++] = t;
            continue;
        }
        if (pflex_target_set_add(&next, t, err) < 0)
            goto out;
        pflex_target_set_seq(&next, next.n - 1, t->seq);
    }
    qsort(by, nby, sizeof *by, cmp_id_place);
    next.next_seq = set->next_seq;
    for (size_t i = 0; i < fresh.n; i++) {
        if (pflex_target_set_add(&next, &fresh.t[i], err) < 0)
            goto out;
        const struct pflex_target *old = seen_before(by, nby, &fresh.t[i]);
        if (old)
            pflex_target_set_seq(&next, next.n - 1, old->seq);
    }
    pflex_target_set_fini(set);
    *set = next;
    pflex_target_set_init(&next);
    if (evs) {
        pflex_oadr_events_fini(evs);
        *evs = got;
        memset(&got, 0, sizeof got);
    }
    rc = 0;
out:
    free(by);
    pflex_target_set_fini(&next);
    pflex_target_set_fini(&fresh);
    pflex_oadr_events_fini(&got);
    return rc;
}

/* An object id as the specification has them (URL safe), or -1. */
static int object_id(json_t *v, char *buf, size_t size)
{
    if (copy_id(v, buf, size) < 0)
        return -1;
    for (const char *c = buf; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'
              || *c == '-'))
            return -1;
    return 0;
}

int pflex_ven_subscribe(pflex_ven_t *v, const struct pflex_ven_subscription *s, char *id, size_t idsize,
                        pflex_error_t *err)
{
    if (!s->client_name || !*s->client_name || !s->callback_url || !s->bearer_token)
        return pflex_error_set(err, "a subscription needs a client name, a callback URL and a token");
    json_t *doc = json_pack("{s:s, s:[{s:[s], s:[s,s,s], s:s, s:s}]}", "clientName", s->client_name,
                            "objectOperations", "objects", "EVENT", "operations", "POST", "PUT", "DELETE",
                            "callbackUrl", s->callback_url, "bearerToken", s->bearer_token);
    if (doc && s->program_id)
        json_object_set_new(doc, "programID", json_string(s->program_id));
    char *js = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!js)
        return pflex_error_set(err, "out of memory");
    long status;
    struct body b;
    int rc = authed(v, "POST", "/subscriptions", js, &status, &b, err);
    memset(js, 0, strlen(js));      /* it holds the callback's token */
    free(js);
    if (rc < 0)
        return -1;
    rc = -1;
    json_error_t je;
    json_t *j = status == 201 || status == 200 ? json_loadb(b.buf ? b.buf : "", b.len, 0, &je) : NULL;
    if (status != 201 && status != 200)
        pflex_error_set(err, "POST /subscriptions: HTTP %ld", status);
    else if (object_id(json_object_get(j, "id"), id, idsize) < 0)
        pflex_error_set(err, "POST /subscriptions: the answer has no id of 1..%zu URL-safe characters", idsize - 1);
    else
        rc = 0;
    json_decref(j);
    free(b.buf);
    return rc;
}

/* path "/subscriptions/ID" for an id object_id took. */
static int sub_path(const char *id, char *path, size_t size, pflex_error_t *err)
{
    for (const char *c = id; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'
              || *c == '-'))
            return pflex_error_set(err, "subscription id '%.40s' is not URL safe", id);
    if (!*id || (size_t)snprintf(path, size, "/subscriptions/%s", id) >= size)
        return pflex_error_set(err, "subscription id of %zu characters", strlen(id));
    return 0;
}

int pflex_ven_subscription_alive(pflex_ven_t *v, const char *id, pflex_error_t *err)
{
    char path[200];
    if (sub_path(id, path, sizeof path, err) < 0)
        return -1;
    long status;
    struct body b;
    if (authed(v, "GET", path, NULL, &status, &b, err) < 0)
        return -1;
    free(b.buf);
    if (status == 200)
        return 1;
    if (status == 404)
        return 0;
    return pflex_error_set(err, "GET %s: HTTP %ld", path, status);
}

int pflex_ven_unsubscribe(pflex_ven_t *v, const char *id, pflex_error_t *err)
{
    char path[200];
    if (sub_path(id, path, sizeof path, err) < 0)
        return -1;
    long status;
    struct body b;
    if (authed(v, "DELETE", path, NULL, &status, &b, err) < 0)
        return -1;
    free(b.buf);
    if ((status < 200 || status > 299) && status != 404)
        return pflex_error_set(err, "DELETE %s: HTTP %ld", path, status);
    return 0;
}
