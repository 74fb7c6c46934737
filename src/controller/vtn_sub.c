/* vtn_sub.c — the VEN's OpenADR 3 subscription (docs/openadr.md): the
 * callback registered with the VTN and kept there, and the notifications
 * it brings, taken at once instead of at the next poll.  Polling stays:
 * it makes up for a lost notification, a VTN that restarted, a callback
 * the network dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/ctl_int.h"
#include "pflex/net/http.h"
#include "lib/util/clock.h"
#include "lib/util/random.h"

#define MAX_SEEN 4096           /* event versions remembered */

int ctl_set_vtn_callback(ctl_t *c, const char *url, const char *token, pflex_error_t *err)
{
    if (token) {
        size_t n = strlen(token);
        if (n < 16 || n >= sizeof c->sub.token)
            return pflex_error_set(err, "the callback's token: 16 to %zu characters", sizeof c->sub.token - 1);
        for (const char *t = token; *t; t++)
            if ((unsigned char)*t < 0x21 || (unsigned char)*t > 0x7e)
                return pflex_error_set(err, "the callback's token holds characters a header cannot carry");
    }
    if (!c->c.ven)
        return pflex_error_set(err, "a callback URL needs a VTN (--vtn)");
    if ((strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) || strlen(url) >= sizeof c->sub.url)
        return pflex_error_set(err, "callback URL '%.80s': an http:// or https:// URL under %zu bytes", url,
                               sizeof c->sub.url);
    pthread_mutex_lock(&c->sub.mu);
    int rc = token ? 0 : pflex_random_hex(c->sub.token, sizeof c->sub.token);
    if (token)
        snprintf(c->sub.token, sizeof c->sub.token, "%s", token);
    if (rc == 0)
        snprintf(c->sub.url, sizeof c->sub.url, "%s", url);
    pthread_mutex_unlock(&c->sub.mu);
    return rc < 0 ? pflex_error_set(err, "getrandom: no token for the callback") : 0;
}

/* A subscription's failure, logged when it starts or changes. */
static void sub_said(ctl_t *c, const char *what)
{
    if (!strncmp(c->sub.said, what, sizeof c->sub.said - 1))
        return;
    snprintf(c->sub.said, sizeof c->sub.said, "%.255s", what);
    if (what[0])
        ctl_log(c, "vtn: subscription: %s (polling goes on)", what);
}

void ctl_vtn_subscription(ctl_t *c)
{
    /* only the VTN's thread writes id; url and token are set before it starts */
    if (!c->sub.url[0] || !c->c.ven)
        return;
    pflex_error_t err;
    uint64_t fence;
    if (c->c.may_push && !c->c.may_push(c->c.lead_ud, &fence)) {
        /* a standby is not notified (it would refuse): it subscribes at
         * its first poll as the leader */
        ctl_vtn_unsubscribe(c);
        return;
    }
    if (c->sub.id[0]) {
        int alive = pflex_ven_subscription_alive(c->c.ven, c->sub.id, &err);
        if (alive == 1) {
            sub_said(c, "");
            return;
        }
        if (alive < 0) {
            sub_said(c, err.text);
            return;
        }
        ctl_log(c, "vtn: subscription %s is gone from the VTN (restarted?): subscribing again", c->sub.id);
        c->sub.id[0] = '\0';
    }
    struct pflex_ven_subscription s = {.client_name = c->c.oadr.client_name ? c->c.oadr.client_name : "pflex",
                                       .program_id = c->c.oadr.program_id, .callback_url = c->sub.url,
                                       .bearer_token = c->sub.token};
    char id[129];
    if (pflex_ven_subscribe(c->c.ven, &s, id, sizeof id, &err) < 0) {
        sub_said(c, err.text);
        return;
    }
    pthread_mutex_lock(&c->sub.mu);
    snprintf(c->sub.id, sizeof c->sub.id, "%s", id);
    pthread_mutex_unlock(&c->sub.mu);
    c->sub.said[0] = '\0';
    ctl_log(c, "vtn: subscribed (%s): events POST, PUT, DELETE to %s", id, c->sub.url);
}

void ctl_vtn_unsubscribe(ctl_t *c)
{
    if (!c->sub.id[0] || !c->c.ven)
        return;
    pflex_error_t err;
    if (pflex_ven_unsubscribe(c->c.ven, c->sub.id, &err) < 0)
        ctl_log(c, "vtn: subscription %s not deleted: %s", c->sub.id, err.text);
    else
        ctl_log(c, "vtn: subscription %s deleted", c->sub.id);
    c->sub.id[0] = '\0';
}

static struct ctl_seen *seen_find(ctl_t *c, const char *id)
{
    for (size_t i = 0; i < c->sub.nseen; i++)
        if (!strcmp(c->sub.seen[i].id, id))
            return &c->sub.seen[i];
    return NULL;
}

/* The entry of id, made when new (NULL when the table is full even of
 * events in force: that version is then not remembered). */
static struct ctl_seen *seen_get(ctl_t *c, const char *id)
{
    struct ctl_seen *s = seen_find(c, id);
    if (s)
        return s;
    if (c->sub.nseen >= MAX_SEEN) {
        /* forget the events gone */
        size_t k = 0;
        for (size_t i = 0; i < c->sub.nseen; i++)
            if (c->sub.seen[i].op != PFLEX_OADR_OP_DELETE)
                c->sub.seen[k++] = c->sub.seen[i];
        c->sub.nseen = k;
        if (k >= MAX_SEEN)
            return NULL;
    }
    if (c->sub.nseen == c->sub.capseen) {
        size_t cap = c->sub.capseen ? 2 * c->sub.capseen : 16;
        struct ctl_seen *n = realloc(c->sub.seen, cap * sizeof *n);
        if (!n)
            return NULL;
        c->sub.seen = n;
        c->sub.capseen = cap;
    }
    s = &c->sub.seen[c->sub.nseen++];
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    return s;
}

void ctl_vtn_seen_poll(ctl_t *c)
{
    /* every version the poll brought; an event it no longer has is gone */
    for (size_t i = 0; i < c->sub.nseen; i++) {
        size_t e = 0;
        while (e < c->evs.n && strcmp(c->evs.ev[e].id, c->sub.seen[i].id))
            e++;
        if (e == c->evs.n && c->sub.seen[i].op != PFLEX_OADR_OP_DELETE) {
            c->sub.seen[i].op = PFLEX_OADR_OP_DELETE;
            c->sub.seen[i].by_callback = 0;
        }
    }
    for (size_t e = 0; e < c->evs.n; e++) {
        struct ctl_seen *s = seen_find(c, c->evs.ev[e].id);
        if (s && s->op != PFLEX_OADR_OP_DELETE && !strcmp(s->modified, c->evs.ev[e].modified))
            continue;       /* the version in force: a callback's, maybe */
        if (!(s = seen_get(c, c->evs.ev[e].id)))
            continue;
        snprintf(s->modified, sizeof s->modified, "%s", c->evs.ev[e].modified);
        s->op = PFLEX_OADR_OP_PUT;
        s->by_callback = 0;
    }
}

/* Refused: counted, logged, answered. */
static int refuse(ctl_t *c, int status, const char *peer, const char *what, char *why, size_t whylen)
{
    snprintf(why, whylen, "%s", what);
    pthread_mutex_lock(&c->sub.mu);
    c->sub.refused++;
    pthread_mutex_unlock(&c->sub.mu);
    ctl_log(c, "api: refused POST /v1/openadr/notify from %s (HTTP %d): %s", peer, status, what);
    return status;
}

static const char *op_name(int op)
{
    return op == PFLEX_OADR_OP_POST ? "POST" : op == PFLEX_OADR_OP_PUT ? "PUT" : "DELETE";
}

int ctl_vtn_notify(ctl_t *c, const char *auth, const char *body, size_t len, const char *peer, char *why,
                   size_t whylen)
{
    if (!c->sub.url[0] || !c->c.ven)
        return refuse(c, 404, peer, "this controller has no VTN subscription (--vtn-callback)", why, whylen);
    if (!auth || strncmp(auth, "Bearer ", 7) || !pflex_http_secret_equal(c->sub.token, auth + 7))
        return refuse(c, 401, peer, auth ? "wrong token" : "missing 'Authorization: Bearer TOKEN'", why, whylen);
    if (len > PFLEX_OADR_MAX_NOTIFICATION)
        return refuse(c, 413, peer, "notification over 64 KiB", why, whylen);
    struct pflex_oadr_notification n;
    pflex_error_t err;
    if (pflex_oadr_parse_notification(body, len, &n, &err) < 0)
        return refuse(c, 400, peer, err.text, why, whylen);
    double now = pflex_real_s();
    char msg[400];
    int status = 200;
    pthread_mutex_lock(&c->sub.mu);
    struct ctl_seen *s = seen_find(c, n.event_id);
    double t_new, t_old;
    pflex_error_t e2;
    int same = s && !strcmp(s->modified, n.modified);
    int gone = n.op == PFLEX_OADR_OP_DELETE;
    if (same && s->by_callback && (s->op == PFLEX_OADR_OP_DELETE) == gone) {
        /* this very notification was taken already */
        pthread_mutex_unlock(&c->sub.mu);
        snprintf(msg, sizeof msg, "replayed: event %s version %s (%s) was taken already", n.event_id,
                 n.modified[0] ? n.modified : "-", op_name(n.op));
        pflex_oadr_notification_fini(&n);
        return refuse(c, 409, peer, msg, why, whylen);
    }
    if (s && !same && n.modified[0] && s->modified[0] && pflex_target_parse_time(n.modified, now, &t_new, &e2) == 0
        && pflex_target_parse_time(s->modified, now, &t_old, &e2) == 0 && t_new < t_old) {
        pthread_mutex_unlock(&c->sub.mu);
        snprintf(msg, sizeof msg, "stale: event %s version %s is older than the one taken (%s)", n.event_id,
                 n.modified, s->modified);
        pflex_oadr_notification_fini(&n);
        return refuse(c, 409, peer, msg, why, whylen);
    }
    if (same && (s->op == PFLEX_OADR_OP_DELETE) == gone) {
        /* a poll brought this version first: nothing to do, and the
         * callback's own replay is now one */
        s->by_callback = 1;
        c->sub.duplicates++;
        pthread_mutex_unlock(&c->sub.mu);
        snprintf(why, whylen, "event %s version %s: already in force (a poll brought it)", n.event_id,
                 n.modified[0] ? n.modified : "-");
        pflex_oadr_notification_fini(&n);
        return 200;
    }
    /* the VTN's targets now, the notification applied to a copy, then in
     * the audit and in force (as a poll's answer) */
    struct pflex_oadr_opts o = c->c.oadr;
    o.now_s = now;
    pflex_target_set_t set;
    uint64_t seq0;
    int ok = ctl_vtn_targets_copy(c, &set, &seq0, &err) == 0;
    pflex_oadr_events_t evs = {0};
    if (!ok || pflex_oadr_apply_notification(&n, &o, &set, &evs, &err) < 0) {
        status = strstr(err.text, "out of memory") ? 503 : 400;
    } else if (ctl_vtn_apply(c, &set, seq0, now, &err) < 0) {
        status = 503;
    } else {
        c->sub.gen++;
        c->sub.applied++;
        if ((s = seen_get(c, n.event_id))) {
            snprintf(s->modified, sizeof s->modified, "%s", n.modified);
            s->op = n.op;
            s->by_callback = 1;
        }
    }
    pthread_mutex_unlock(&c->sub.mu);
    pflex_target_set_fini(&set);
    size_t nt = evs.n ? evs.ev[0].ntargets : 0;
    pflex_oadr_events_fini(&evs);
    if (status != 200) {
        snprintf(msg, sizeof msg, "event %.80s (%s): %.200s (targets kept)", n.event_id, op_name(n.op), err.text);
        pflex_oadr_notification_fini(&n);
        return refuse(c, status, peer, msg, why, whylen);
    }
    snprintf(why, whylen, "event %s version %s (%s): %zu targets in force", n.event_id,
             n.modified[0] ? n.modified : "-", op_name(n.op), nt);
    ctl_log(c, "vtn: callback from %s: %s", peer, why);
    pflex_oadr_notification_fini(&n);
    return 200;
}
