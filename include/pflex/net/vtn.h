/* pflex/net/vtn.h — a small OpenADR 3 VTN, for tests and demos.
 *
 * Serves the endpoints a VEN uses, on loopback, on a port the OS picks
 * (through pflex/net/http.h's server):
 *   POST /auth/token  form-encoded client credentials -> {access_token,
 *                     token_type "Bearer", expires_in}; 401 on wrong ones
 *   GET  /events      the events set with pflex_vtn_set_events, paged by
 *                     skip and limit (at most 50), programID filtered;
 *                     401 without the current bearer token
 *   POST /reports     stores the report (JSON object, at most 1 MiB) and
 *                     answers 201 with it; 400 on a body that is not one
 *   POST /subscriptions, GET /subscriptions, GET|DELETE /subscriptions/ID
 *                     OpenADR 3.0.1 subscription objects (clientName,
 *                     programID, objectOperations[] {objects, operations,
 *                     callbackUrl, bearerToken}); answers carry the
 *                     subscription without its bearer tokens
 * Events set with pflex_vtn_set_events are stamped createdDateTime and
 * modificationDateTime when new or changed (by id, against the previous
 * set), and each subscriber of EVENT and that operation (POST new, PUT
 * changed, DELETE gone; its programID, when given, matching) is sent a
 * notification {objectType "EVENT", operation, object} by POST to its
 * callbackUrl with "Authorization: Bearer" its bearerToken, from a thread
 * of the VTN's (a failure is counted and logged, never retried: the VEN's
 * poll is the fallback).
 * A raw answer can replace /events (any status and bytes, after a delay),
 * to play a broken or hostile VTN.  Thread-safe; runs its own threads.
 */
#ifndef PFLEX_VTN_H
#define PFLEX_VTN_H

#include <stddef.h>
#include "pflex/util/error.h"

struct pflex_vtn_config {
    const char *client_id;          /* required */
    const char *client_secret;      /* required */
    long expires_in;                /* seconds a token lives; <= 0: 3600 */
    unsigned short port;            /* 0: the OS picks one */
    const char *callback_ca_file;   /* PEM CA bundle to check https:// callbacks by; NULL: the system's */
    double callback_timeout_s;      /* per notification; <= 0: 2 */
    /* One line per subscription made or deleted and per notification that
     * failed, from the VTN's threads; NULL: not said. */
    void (*log)(void *log_ud, const char *line);
    void *log_ud;
};

typedef struct pflex_vtn pflex_vtn_t;

struct pflex_vtn_counts {
    unsigned long token_requests, tokens_issued, event_requests, reports, unauthorized, bad;
    unsigned long subscriptions;    /* made */
    unsigned long notifications;    /* sent and answered 2xx */
    unsigned long notify_failed;    /* not sent, or answered otherwise */
    unsigned long subscribers;      /* subscriptions held now */
};

int pflex_vtn_start(const struct pflex_vtn_config *c, pflex_vtn_t **out, pflex_error_t *err);
void pflex_vtn_stop(pflex_vtn_t *v);
unsigned short pflex_vtn_port(const pflex_vtn_t *v);

/* The events served: a JSON array (checked and copied). */
int pflex_vtn_set_events(pflex_vtn_t *v, const char *json, pflex_error_t *err);
/* /events answers status and these bytes verbatim after delay_ms (body
 * copied); status 0 goes back to serving the events. */
int pflex_vtn_set_raw(pflex_vtn_t *v, unsigned status, const char *body, size_t len,
                      unsigned delay_ms);
/* Tokens issued so far stop working (the next request gets 401). */
void pflex_vtn_revoke_tokens(pflex_vtn_t *v);
/* Forget every subscription (what a restart does): a VEN finds its own
 * gone (404) and subscribes again. */
void pflex_vtn_drop_subscriptions(pflex_vtn_t *v);

void pflex_vtn_counts(pflex_vtn_t *v, struct pflex_vtn_counts *out);
/* A copy of report i (malloc'd; free it), NULL past the end. */
char *pflex_vtn_report(pflex_vtn_t *v, size_t i);

#endif
