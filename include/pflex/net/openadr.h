/* pflex/net/openadr.h — OpenADR 3.0.1 events in, reports out: the VEN side.
 *
 * Field names follow the OpenADR 3.0.1 OpenAPI definition.  An event
 * (`GET /events` returns an array of them) has `id`, `programID`,
 * `priority` (a lower number is a higher priority; null: lowest),
 * `payloadDescriptors[] {payloadType, units}`, a default `intervalPeriod
 * {start, duration, randomizeStart}` and `intervals[] {id, intervalPeriod,
 * payloads[] {type, values[]}}`.  Conventions followed:
 *  - a start of "0001-01-01" (any time on it; also the older "0000-00-00")
 *    means now; a duration of "P9999Y" (or more) means forever; a missing or
 *    zero duration means until the event is withdrawn;
 *  - intervals without their own intervalPeriod follow one another from the
 *    event's start, each the event's duration long;
 *  - randomizeStart R shifts the event's (or interval's) start by a draw in
 *    [0, R), uniform, from the options' seed, the client name and the event
 *    (and interval) id: the same VEN always draws the same offset;
 *  - payloads followed, values[0] of each: IMPORT_CAPACITY_LIMIT and
 *    DISPATCH_SETPOINT (power, units from the event's payloadDescriptors:
 *    W, KW (default), MW), DISPATCH_SETPOINT_RELATIVE (baseline + value,
 *    same units), CONTROL_LEVEL_OFFSET_PERCENT (1 + value/100 of baseline),
 *    SIMPLE (level 0..3; level k maps to simple_fraction[k] of baseline, 0
 *    or less: no limit).  An interval with several of them gives the
 *    tightest.  Other payload types are ignored.
 * Each followed interval becomes one target with source "openadr" and id
 * "EVENTID/INTERVALID".  An event is followed whole or not at all: one
 * malformed part leaves the whole event out.  Two events with one id: the
 * first in the answer is followed, the other left out (and counted).
 *
 * Reports (`POST /reports`): USAGE (energy over the interval, KWH) and
 * DEMAND (mean power, KW) of one resource over one interval.
 *
 * The VEN client (libcurl): OAuth2 client credentials from `POST
 * /auth/token` (form-encoded, as the specification says), the bearer token
 * kept until it expires or a request is refused with 401, `GET /events`
 * (paged with skip/limit), `POST /reports`.  Every request has a timeout
 * and a response size limit; a failed, refused, malformed or hostile
 * response is an error returned, the caller's targets left as they were.
 */
#ifndef PFLEX_OPENADR_H
#define PFLEX_OPENADR_H

#include <stddef.h>
#include <stdint.h>
#include "pflex/util/error.h"
#include "pflex/flex/target.h"

/* Most events, and intervals over all events, one response may carry. */
#define PFLEX_OADR_MAX_EVENTS    1000
#define PFLEX_OADR_MAX_INTERVALS 20000

struct pflex_oadr_opts {
    double now_s;               /* unix seconds: resolves "now" */
    uint64_t seed;              /* randomizeStart draws */
    const char *client_name;    /* this VEN's name (draws, reports); NULL: "" */
    const char *program_id;     /* follow only this program's events; NULL: all */
    double baseline_w;          /* site baseline, W: relative payloads, comparisons */
    double ramp_s;              /* ramp of every target made */
    double simple_fraction[4];  /* SIMPLE level -> fraction of baseline (<= 0: none) */
};

/* Defaults: SIMPLE levels 0..3 -> none, 0.90, 0.75, 0.50 (the flex tiers of
 * SPEC §2), ramp 0, seed 1. */
void pflex_oadr_opts_default(struct pflex_oadr_opts *o, double now_s);

struct pflex_oadr_event {
    char id[129];
    char program_id[129];
    int priority;               /* as given; -1 when null */
    double start_s, end_s;      /* span of the intervals followed (after the draw) */
    double offset_s;            /* the randomizeStart draw applied to the event */
    char modified[64];          /* its modificationDateTime as given, or "" */
    size_t ntargets;            /* targets made from it */
};

typedef struct pflex_oadr_events {
    size_t n;
    struct pflex_oadr_event *ev;
    size_t skipped;             /* events or intervals left out: malformed, or an id
                                 * already seen in the answer */
    char note[256];             /* why the first of them was left out, or "" */
    char (*refused)[129];       /* the ids of the events left out as malformed */
    size_t nrefused;
    size_t kept;                /* pflex_ven_poll: targets of a refused event kept as
                                 * they were (its last good version) */
} pflex_oadr_events_t;

void pflex_oadr_events_fini(pflex_oadr_events_t *e);

/* Parse a `GET /events` body and add the targets it asks for to out
 * (source "openadr"; out's other targets are untouched).  evs (may be NULL)
 * gets one entry per event followed.  A body that is not a JSON array of
 * objects, or exceeds the limits above, is an error and adds nothing; a
 * malformed event or interval inside a good array is left out and counted
 * in evs->skipped.  name labels messages. */
int pflex_oadr_parse_events(const char *body, size_t len, const char *name,
                            const struct pflex_oadr_opts *o, pflex_target_set_t *out,
                            pflex_oadr_events_t *evs, pflex_error_t *err);

/* One report: energy and mean power of one resource over one interval. */
struct pflex_oadr_report {
    const char *program_id;
    const char *event_id;
    const char *client_name;
    const char *resource_name;  /* NULL: "AGGREGATED_REPORT" */
    const char *report_name;    /* NULL: none */
    double start_s;             /* interval start, unix seconds */
    double duration_s;          /* > 0 */
    double usage_wh;            /* energy over the interval, Wh */
    double demand_w;            /* mean power over the interval, W */
};

/* The report object as JSON text (malloc'd; free it), or NULL with err set
 * on missing ids or values that are not finite. */
char *pflex_oadr_report_json(const struct pflex_oadr_report *r, pflex_error_t *err);

/* ---- the VEN client ---- */

struct pflex_ven_config {
    const char *url;            /* VTN base URL, e.g. "http://127.0.0.1:8081/openadr3/3.0.1" */
    const char *client_id;
    const char *client_secret;
    const char *scope;          /* NULL: none sent */
    long timeout_ms;            /* per request, connect included; <= 0: 5000 */
    size_t max_body;            /* largest response read; 0: 4 MiB */
    const char *ca_file;        /* PEM CA bundle for an https:// VTN; NULL: the system's */
};

typedef struct pflex_ven pflex_ven_t;

int pflex_ven_create(const struct pflex_ven_config *c, pflex_ven_t **out, pflex_error_t *err);
void pflex_ven_destroy(pflex_ven_t *v);

/* Poll the events: on success the set's "openadr" targets are replaced by
 * what the VTN now asks for (withdrawn events disappear), except that an
 * event the answer carries malformed keeps its targets as they were (its
 * last good version: a bad update never releases a limit; evs->kept counts
 * them); on any failure the set is left as it was and err says why.  evs as in
 * pflex_oadr_parse_events. */
int pflex_ven_poll(pflex_ven_t *v, const struct pflex_oadr_opts *o, pflex_target_set_t *set,
                   pflex_oadr_events_t *evs, pflex_error_t *err);

/* Post one report; 0 when the VTN accepted it (2xx). */
int pflex_ven_post_report(pflex_ven_t *v, const struct pflex_oadr_report *r, pflex_error_t *err);

/* ---- subscriptions (OpenADR 3.0.1 `subscription`, `notification`) ----
 *
 * The VEN registers a callback URL and a bearer token for EVENT objects,
 * operations POST, PUT and DELETE (of its program, when it follows one);
 * the VTN then POSTs a notification {objectType, operation, object} there
 * with that token.  Polling stays the fallback: a lost notification is
 * made up by the next poll. */

#define PFLEX_OADR_MAX_NOTIFICATION (64u << 10)  /* bytes of one notification */

enum { PFLEX_OADR_OP_POST = 1, PFLEX_OADR_OP_PUT, PFLEX_OADR_OP_DELETE };

struct pflex_oadr_notification {
    int op;                     /* PFLEX_OADR_OP_* */
    char event_id[129];
    char modified[64];          /* the event's modificationDateTime; "" only for DELETE */
    char *object;               /* the event, JSON text (owned; _fini frees it) */
    size_t object_len;
};

/* Parse a notification body: a JSON object of objectType "EVENT",
 * operation POST, PUT or DELETE, object an event with an id (and, but for
 * DELETE, a modificationDateTime).  0, or -1 with err on anything else,
 * over PFLEX_OADR_MAX_NOTIFICATION bytes included (n then holds nothing). */
int pflex_oadr_parse_notification(const char *body, size_t len, struct pflex_oadr_notification *n,
                                  pflex_error_t *err);
void pflex_oadr_notification_fini(struct pflex_oadr_notification *n);

/* Apply a notification to set: the "openadr" targets of its event are
 * replaced by what the event now asks for (POST, PUT; none when it is of
 * another program than o's) or removed (DELETE); the rest of set is
 * untouched.  A malformed event is an error and leaves set as it was (a
 * bad update never releases a limit).  evs (may be NULL): the event
 * followed, as pflex_oadr_parse_events. */
int pflex_oadr_apply_notification(const struct pflex_oadr_notification *n, const struct pflex_oadr_opts *o,
                                  pflex_target_set_t *set, pflex_oadr_events_t *evs, pflex_error_t *err);

struct pflex_ven_subscription {
    const char *client_name;    /* required */
    const char *program_id;     /* NULL: every program's events */
    const char *callback_url;   /* where the VTN POSTs notifications */
    const char *bearer_token;   /* what it sends them with */
};

/* POST /subscriptions; id (idsize bytes) gets the VTN's id for it. */
int pflex_ven_subscribe(pflex_ven_t *v, const struct pflex_ven_subscription *s, char *id, size_t idsize,
                        pflex_error_t *err);
/* GET /subscriptions/ID: 1 held, 0 gone (404: the VTN restarted or
 * dropped it), -1 with err when the VTN cannot say. */
int pflex_ven_subscription_alive(pflex_ven_t *v, const char *id, pflex_error_t *err);
/* DELETE /subscriptions/ID (gone already is fine). */
int pflex_ven_unsubscribe(pflex_ven_t *v, const char *id, pflex_error_t *err);

/* Requests made and tokens fetched so far (for tests and metrics). */
void pflex_ven_counts(const pflex_ven_t *v, unsigned long *requests, unsigned long *tokens);

#endif
