/* vtn.c — a small OpenADR 3 VTN, for tests and demos of the VEN: token,
 * events, reports, subscriptions and their notifications (pflex/net/vtn.h).
 * It serves through the project's one HTTP server (pflex/net/http.h, a
 * pool of threads) and calls subscribers from a thread of its own, so that
 * a slow callback never holds a request or the lock. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include "pflex/net/http.h"
#include "pflex/net/vtn.h"
#include "lib/util/random.h"

#define MAX_UPLOAD (1u << 20)
#define MAX_REPORTS 10000
#define MAX_SUBS 100
#define MAX_QUEUE 10000         /* notifications waiting; more are dropped (counted) */
#define MAX_URL 2048

/* One notification to send: a subscriber's URL, its token, the body. */
struct note {
    char *url, *token, *body;
};

struct pflex_vtn {
    pflex_http_server_t *srv;
    unsigned short port;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *client_id, *client_secret;
    long expires_in;
    char token[80];             /* the token in force; "" before the first */
    json_t *src;                /* the events as given (array) */
    json_t *events;             /* as served: src[i] stamped with its dates */
    unsigned raw_status, raw_delay_ms;
    char *raw_body;
    size_t raw_len;
    char **reports;
    size_t nreports;
    json_t *subs;               /* subscription objects, bearer tokens included */
    struct note *q;
    size_t nq, capq;
    int stop;
    pthread_t notifier;
    int notifier_on;
    pflex_http_client_t *cb;    /* the notifier's client */
    void (*log)(void *ud, const char *line);
    void *log_ud;
    struct pflex_vtn_counts counts;
};

static void say(pflex_vtn_t *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(pflex_vtn_t *v, const char *fmt, ...)
{
    if (!v->log)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    v->log(v->log_ud, line);
}

static void problem(struct pflex_http_response *resp, int status, const char *title)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, "{\"title\":\"%s\",\"status\":%d}", title, status);
    pflex_http_respond_text(resp, status, "application/problem+json", buf, (size_t)n);
}

/* RFC 3339 UTC, to the millisecond: the VTN's createdDateTime and
 * modificationDateTime. */
static void stamp(char *buf, size_t size)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char s[32];
    strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%.20s.%03dZ", s, (int)(ts.tv_nsec / 1000000) % 1000);
}

/* Percent-decode a form value in place. */
static void form_decode(char *s)
{
    char *o = s;
    for (; *s; s++) {
        if (*s == '+')
            *o++ = ' ';
        else if (*s == '%' && s[1] && s[2]) {
            char hex[3] = {s[1], s[2], 0};
            char *e;
            long v = strtol(hex, &e, 16);
            if (*e)
                *o++ = *s;
            else {
                *o++ = (char)v;
                s += 2;
            }
        } else
            *o++ = *s;
    }
    *o = '\0';
}

static int form_get(const char *body, const char *key, char *out, size_t size)
{
    size_t kl = strlen(key);
    const char *p = body;
    while (p && *p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            size_t vl = len - kl - 1;
            if (vl >= size)
                return -1;
            memcpy(out, p + kl + 1, vl);
            out[vl] = '\0';
            form_decode(out);
            return 0;
        }
        p = amp ? amp + 1 : NULL;
    }
    return -1;
}

static int authorized(pflex_vtn_t *v, const struct pflex_http_request *req)
{
    const char *h = pflex_http_header(req, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7))
        return 0;
    return v->token[0] && pflex_http_secret_equal(v->token, h + 7);
}

static void do_token(pflex_vtn_t *v, const struct pflex_http_request *req, struct pflex_http_response *resp)
{
    char grant[64], id[512], secret[512];
    v->counts.token_requests++;
    if (form_get(req->body, "grant_type", grant, sizeof grant) < 0 || strcmp(grant, "client_credentials")) {
        pflex_http_respond_text(resp, 400, NULL, "{\"error\":\"unsupported_grant_type\"}", 34);
        return;
    }
    if (form_get(req->body, "client_id", id, sizeof id) < 0
        || form_get(req->body, "client_secret", secret, sizeof secret) < 0) {
        pflex_http_respond_text(resp, 400, NULL, "{\"error\":\"invalid_request\"}", 27);
        return;
    }
    int ok = pflex_http_secret_equal(v->client_id, id) & pflex_http_secret_equal(v->client_secret, secret);
    memset(secret, 0, sizeof secret);
    if (!ok) {
        v->counts.unauthorized++;
        pflex_http_respond_text(resp, 401, NULL, "{\"error\":\"invalid_client\"}", 26);
        return;
    }
    if (!v->token[0]) {
        /* a bearer token a peer cannot guess: from the kernel, not a clock */
        char hex[33];
        if (pflex_random_hex(hex, sizeof hex) < 0) {
            problem(resp, 500, "No random source");
            return;
        }
        snprintf(v->token, sizeof v->token, "vtn-%s", hex);
        v->counts.tokens_issued++;
    }
    char buf[200];
    int n = snprintf(buf, sizeof buf, "{\"access_token\":\"%s\",\"token_type\":\"Bearer\",\"expires_in\":%ld}",
                     v->token, v->expires_in);
    pflex_http_respond_text(resp, 200, NULL, buf, (size_t)n);
}

static long query_long(const struct pflex_http_request *req, const char *k, long dflt, long lo, long hi)
{
    const char *s = pflex_http_query(req, k);
    if (!s)
        return dflt;
    char *e;
    long v = strtol(s, &e, 10);
    if (e == s || *e || v < lo || v > hi)
        return -1;
    return v;
}

/* Called with the lock held; may drop it to sleep out a raw answer's delay. */
static void do_events(pflex_vtn_t *v, const struct pflex_http_request *req, struct pflex_http_response *resp)
{
    v->counts.event_requests++;
    if (!authorized(v, req)) {
        v->counts.unauthorized++;
        problem(resp, 401, "Unauthorized");
        return;
    }
    if (v->raw_status) {
        unsigned st = v->raw_status, delay = v->raw_delay_ms;
        size_t len = v->raw_len;
        char *body = malloc(len + 1);
        if (!body) {
            problem(resp, 500, "Out of memory");
            return;
        }
        memcpy(body, v->raw_body, len);
        body[len] = '\0';
        pthread_mutex_unlock(&v->mu);
        if (delay) {
            struct timespec ts = {delay / 1000, (long)(delay % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        pflex_http_respond_take(resp, (int)st, "application/json", body, len);
        pthread_mutex_lock(&v->mu);
        return;
    }
    long skip = query_long(req, "skip", 0, 0, 1000000), limit = query_long(req, "limit", 50, 0, 50);
    if (skip < 0 || limit < 0) {
        v->counts.bad++;
        problem(resp, 400, "Bad Request");
        return;
    }
    const char *prog = pflex_http_query(req, "programID");
    json_t *page = json_array();
    size_t i, seen = 0;
    json_t *ev;
    json_array_foreach(v->events, i, ev) {
        if (prog) {
            json_t *p = json_object_get(ev, "programID");
            if (!json_is_string(p) || strcmp(json_string_value(p), prog))
                continue;
        }
        if (seen++ < (size_t)skip)
            continue;
        if (json_array_size(page) >= (size_t)limit)
            break;
        json_array_append(page, ev);
    }
    char *s = json_dumps(page, JSON_COMPACT);
    json_decref(page);
    if (!s) {
        problem(resp, 500, "Out of memory");
        return;
    }
    pflex_http_respond_take(resp, 200, "application/json", s, strlen(s));
}

static void do_report(pflex_vtn_t *v, const struct pflex_http_request *req, struct pflex_http_response *resp)
{
    if (!authorized(v, req)) {
        v->counts.unauthorized++;
        problem(resp, 401, "Unauthorized");
        return;
    }
    json_error_t je;
    json_t *j = json_loadb(req->body, req->body_len, 0, &je);
    int ok = json_is_object(j) && json_is_string(json_object_get(j, "programID"))
             && json_is_string(json_object_get(j, "eventID"))
             && json_is_string(json_object_get(j, "clientName"))
             && json_is_array(json_object_get(j, "resources"));
    json_decref(j);
    if (!ok || v->nreports >= MAX_REPORTS) {
        v->counts.bad++;
        problem(resp, 400, "Bad Request");
        return;
    }
    char **nr = realloc(v->reports, (v->nreports + 1) * sizeof *nr);
    if (!nr || !(nr[v->nreports] = strndup(req->body, req->body_len))) {
        if (nr)
            v->reports = nr;
        problem(resp, 500, "Out of memory");
        return;
    }
    v->reports = nr;
    v->nreports++;
    v->counts.reports++;
    pflex_http_respond_text(resp, 201, NULL, req->body, req->body_len);
}

/* ---- subscriptions ---- */

/* 1 when arr is a non-empty array of strings, each one of allowed
 * (a NULL-terminated list). */
static int strings_of(json_t *arr, const char *const *allowed)
{
    if (!json_is_array(arr) || !json_array_size(arr) || json_array_size(arr) > 16)
        return 0;
    size_t i;
    json_t *s;
    json_array_foreach(arr, i, s) {
        if (!json_is_string(s))
            return 0;
        size_t k = 0;
        while (allowed[k] && strcmp(allowed[k], json_string_value(s)))
            k++;
        if (!allowed[k])
            return 0;
    }
    return 1;
}

static int has_string(json_t *arr, const char *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x)
        if (json_is_string(x) && !strcmp(json_string_value(x), s))
            return 1;
    return 0;
}

/* Why a subscription body is not one this VTN takes, or NULL. */
static const char *bad_subscription(json_t *s)
{
    static const char *const objects[] = {"PROGRAM", "EVENT", "REPORT", "SUBSCRIPTION", "VEN", "RESOURCE", NULL};
    static const char *const ops[] = {"GET", "POST", "PUT", "DELETE", NULL};
    if (!json_is_object(s))
        return "not a JSON object";
    json_t *cn = json_object_get(s, "clientName"), *p = json_object_get(s, "programID");
    if (!json_is_string(cn) || !*json_string_value(cn) || strlen(json_string_value(cn)) > 128)
        return "clientName: a string of 1..128 characters";
    if (p && !json_is_null(p) && (!json_is_string(p) || strlen(json_string_value(p)) > 128))
        return "programID: a string of at most 128 characters";
    json_t *oo = json_object_get(s, "objectOperations");
    if (!json_is_array(oo) || !json_array_size(oo) || json_array_size(oo) > 16)
        return "objectOperations: an array of 1..16 objects";
    size_t i;
    json_t *o;
    json_array_foreach(oo, i, o) {
        if (!json_is_object(o))
            return "objectOperations: an array of objects";
        if (!strings_of(json_object_get(o, "objects"), objects))
            return "objectOperations[].objects: object types (EVENT, ...)";
        if (!strings_of(json_object_get(o, "operations"), ops))
            return "objectOperations[].operations: GET, POST, PUT or DELETE";
        json_t *u = json_object_get(o, "callbackUrl"), *t = json_object_get(o, "bearerToken");
        const char *us = json_is_string(u) ? json_string_value(u) : "";
        if ((strncmp(us, "http://", 7) && strncmp(us, "https://", 8)) || strlen(us) > MAX_URL)
            return "objectOperations[].callbackUrl: an http:// or https:// URL of at most 2048 bytes";
        if (t && !json_is_null(t) && (!json_is_string(t) || strlen(json_string_value(t)) > 4096))
            return "objectOperations[].bearerToken: a string of at most 4096 bytes";
        for (const char *c = json_is_string(t) ? json_string_value(t) : ""; *c; c++)
            if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
                return "objectOperations[].bearerToken: characters a header cannot carry";
    }
    return NULL;
}

/* A subscription as answered: without the bearer tokens, which are the
 * subscriber's secrets, not for any VEN that asks. */
static json_t *redacted(json_t *s)
{
    json_t *c = json_deep_copy(s);
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(c, "objectOperations"), i, o)
        if (json_object_get(o, "bearerToken"))
            json_object_set_new(o, "bearerToken", json_string("(redacted)"));
    return c;
}

static size_t find_sub(pflex_vtn_t *v, const char *id)
{
    size_t i;
    json_t *s;
    json_array_foreach(v->subs, i, s) {
        json_t *x = json_object_get(s, "id");
        if (json_is_string(x) && !strcmp(json_string_value(x), id))
            return i;
    }
    return (size_t)-1;
}

static void do_subscriptions(pflex_vtn_t *v, const struct pflex_http_request *req,
                             struct pflex_http_response *resp)
{
    if (!authorized(v, req)) {
        v->counts.unauthorized++;
        problem(resp, 401, "Unauthorized");
        return;
    }
    const char *rest = req->path + strlen("/subscriptions");
    if (!*rest && !strcmp(req->method, "GET")) {
        json_t *all = json_array();
        size_t i;
        json_t *s;
        json_array_foreach(v->subs, i, s)
            json_array_append_new(all, redacted(s));
        pflex_http_respond_json(resp, 200, all);
        return;
    }
    if (!*rest && !strcmp(req->method, "POST")) {
        json_error_t je;
        json_t *s = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
        const char *why = s ? bad_subscription(s) : "not JSON";
        if (why || json_array_size(v->subs) >= MAX_SUBS) {
            v->counts.bad++;
            say(v, "POST /subscriptions refused: %s", why ? why : "too many subscriptions");
            json_decref(s);
            problem(resp, 400, "Bad Request");
            return;
        }
        /* an id a restarted VTN never gives again: a VEN that asks after
         * its old one is told it is gone, not shown another's */
        char id[32], when[40], hex[17];
        if (pflex_random_hex(hex, sizeof hex) < 0) {
            json_decref(s);
            problem(resp, 500, "No random source");
            return;
        }
        snprintf(id, sizeof id, "sub-%s", hex);
        stamp(when, sizeof when);
        json_object_set_new(s, "id", json_string(id));
        json_object_set_new(s, "objectType", json_string("SUBSCRIPTION"));
        json_object_set_new(s, "createdDateTime", json_string(when));
        json_object_set_new(s, "modificationDateTime", json_string(when));
        json_array_append(v->subs, s);
        v->counts.subscriptions++;
        json_t *cb = json_object_get(json_array_get(json_object_get(s, "objectOperations"), 0), "callbackUrl");
        say(v, "subscription %s from %s: callbacks to %s", id, json_string_value(json_object_get(s, "clientName")),
            json_string_value(cb));
        pflex_http_respond_json(resp, 201, redacted(s));
        json_decref(s);
        return;
    }
    if (*rest != '/' || !rest[1] || strchr(rest + 1, '/')) {
        problem(resp, 404, "Not Found");
        return;
    }
    size_t at = find_sub(v, rest + 1);
    if (at == (size_t)-1) {
        problem(resp, 404, "Not Found");
        return;
    }
    if (!strcmp(req->method, "GET")) {
        pflex_http_respond_json(resp, 200, redacted(json_array_get(v->subs, at)));
    } else if (!strcmp(req->method, "DELETE")) {
        pflex_http_respond_json(resp, 200, redacted(json_array_get(v->subs, at)));
        json_array_remove(v->subs, at);
        say(v, "subscription %s deleted", rest + 1);
    } else {
        problem(resp, 405, "Method Not Allowed");
    }
}

static void handle(void *ud, const struct pflex_http_request *req, struct pflex_http_response *resp)
{
    pflex_vtn_t *v = ud;
    pthread_mutex_lock(&v->mu);
    if (!strcmp(req->path, "/auth/token") && !strcmp(req->method, "POST"))
        do_token(v, req, resp);
    else if (!strcmp(req->path, "/events") && !strcmp(req->method, "GET"))
        do_events(v, req, resp);
    else if (!strcmp(req->path, "/reports") && !strcmp(req->method, "POST"))
        do_report(v, req, resp);
    else if (!strncmp(req->path, "/subscriptions", 14) && (!req->path[14] || req->path[14] == '/'))
        do_subscriptions(v, req, resp);
    else
        problem(resp, 404, "Not Found");
    pthread_mutex_unlock(&v->mu);
}

/* ---- notifications ---- */

/* Queue a notification of op on event ev to every subscriber of it (lock
 * held). */
static void notify(pflex_vtn_t *v, const char *op, json_t *ev)
{
    json_t *p = json_object_get(ev, "programID");
    char *body = NULL;
    size_t i;
    json_t *s;
    json_array_foreach(v->subs, i, s) {
        json_t *sp = json_object_get(s, "programID");
        if (json_is_string(sp) && *json_string_value(sp)
            && (!json_is_string(p) || strcmp(json_string_value(sp), json_string_value(p))))
            continue;
        size_t k;
        json_t *o;
        json_array_foreach(json_object_get(s, "objectOperations"), k, o) {
            if (!has_string(json_object_get(o, "objects"), "EVENT")
                || !has_string(json_object_get(o, "operations"), op))
                continue;
            if (!body) {
                json_t *n = json_pack("{s:s, s:s, s:O}", "objectType", "EVENT", "operation", op, "object", ev);
                body = n ? json_dumps(n, JSON_COMPACT) : NULL;
                json_decref(n);
                if (!body)
                    return;
            }
            if (v->nq >= MAX_QUEUE) {
                v->counts.notify_failed++;
                continue;
            }
            if (v->nq == v->capq) {
                size_t cap = v->capq ? 2 * v->capq : 16;
                struct note *q = realloc(v->q, cap * sizeof *q);
                if (!q)
                    break;
                v->q = q;
                v->capq = cap;
            }
            json_t *t = json_object_get(o, "bearerToken");
            struct note nt = {strdup(json_string_value(json_object_get(o, "callbackUrl"))),
                              json_is_string(t) ? strdup(json_string_value(t)) : NULL, strdup(body)};
            if (!nt.url || !nt.body) {
                free(nt.url);
                free(nt.token);
                free(nt.body);
                break;
            }
            v->q[v->nq++] = nt;
        }
    }
    free(body);
    if (v->nq)
        pthread_cond_signal(&v->cv);
}

static void *notifier_main(void *arg)
{
    pflex_vtn_t *v = arg;
    pthread_mutex_lock(&v->mu);
    while (!v->stop) {
        if (!v->nq) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += 250 * 1000000L;
            if (dl.tv_nsec >= 1000000000L) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&v->cv, &v->mu, &dl);
            pthread_mutex_unlock(&v->mu);
            /* the server's request deadlines are kept by whoever runs it */
            pflex_error_t e;
            pflex_http_server_run(v->srv, 0, &e);
            pthread_mutex_lock(&v->mu);
            continue;
        }
        struct note *q = v->q;
        size_t n = v->nq;
        v->q = NULL;
        v->nq = v->capq = 0;
        pthread_mutex_unlock(&v->mu);
        struct pflex_http_call *calls = calloc(n, sizeof *calls);
        unsigned long sent = 0, failed = 0;
        if (calls) {
            for (size_t i = 0; i < n; i++)
                calls[i] = (struct pflex_http_call){.method = "POST", .url = q[i].url, .body = q[i].body,
                                                    .token = q[i].token};
            pflex_error_t e;
            pflex_http_client_run(v->cb, calls, n, NULL, NULL, &e);
            for (size_t i = 0; i < n; i++) {
                if (calls[i].ok && calls[i].status >= 200 && calls[i].status < 300)
                    sent++;
                else {
                    failed++;
                    say(v, "notification to %s failed: %s", q[i].url,
                        calls[i].ok ? (snprintf(calls[i].error, sizeof calls[i].error, "HTTP %ld",
                                                calls[i].status), calls[i].error) : calls[i].error);
                }
                free(calls[i].resp);
            }
        } else
            failed = n;
        for (size_t i = 0; i < n; i++) {
            free(q[i].url);
            free(q[i].token);
            free(q[i].body);
        }
        free(q);
        free(calls);
        pthread_mutex_lock(&v->mu);
        v->counts.notifications += sent;
        v->counts.notify_failed += failed;
    }
    pthread_mutex_unlock(&v->mu);
    return NULL;
}

/* ---- life ---- */

int pflex_vtn_start(const struct pflex_vtn_config *c, pflex_vtn_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!c->client_id || !c->client_secret || !*c->client_id || !*c->client_secret)
        return pflex_error_set(err, "VTN needs a client id and secret");
    pflex_vtn_t *v = calloc(1, sizeof *v);
    if (!v)
        return pflex_error_set(err, "out of memory");
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->cv, NULL);
    v->client_id = strdup(c->client_id);
    v->client_secret = strdup(c->client_secret);
    v->events = json_array();
    v->src = json_array();
    v->subs = json_array();
    v->expires_in = c->expires_in > 0 ? c->expires_in : 3600;
    v->log = c->log;
    v->log_ud = c->log_ud;
    if (!v->client_id || !v->client_secret || !v->events || !v->src || !v->subs) {
        pflex_vtn_stop(v);
        return pflex_error_set(err, "out of memory");
    }
    struct pflex_http_client_opts co = {.parallel = 16, .timeout_s = c->callback_timeout_s > 0 ? c->callback_timeout_s : 2,
                                        .max_response = 65536, .ca_file = c->callback_ca_file};
    if (pflex_http_client_create(&co, &v->cb, err) < 0) {
        pflex_vtn_stop(v);
        return -1;
    }
    /* loopback only: every client is one address, so the per-address
     * limit is the whole one */
    struct pflex_http_limits lim = {.max_body = MAX_UPLOAD, .timeout_s = 10, .request_timeout_s = 10,
                                    .max_conns = 64, .per_peer_conns = 64, .threads = 8};
    char listen[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", c->port);
    if (pflex_http_server_start(listen, &lim, handle, v, &v->srv, err) < 0) {
        pflex_vtn_stop(v);
        return -1;
    }
    v->port = (unsigned short)pflex_http_server_port(v->srv);
    if (pthread_create(&v->notifier, NULL, notifier_main, v) != 0) {
        pflex_vtn_stop(v);
        return pflex_error_set(err, "VTN: no thread for the notifications");
    }
    v->notifier_on = 1;
    *out = v;
    return 0;
}

void pflex_vtn_stop(pflex_vtn_t *v)
{
    if (!v)
        return;
    pthread_mutex_lock(&v->mu);
    v->stop = 1;
    pthread_cond_broadcast(&v->cv);
    pthread_mutex_unlock(&v->mu);
    if (v->notifier_on)
        pthread_join(v->notifier, NULL);
    pflex_http_server_stop(v->srv);
    pflex_http_client_destroy(v->cb);
    for (size_t i = 0; i < v->nq; i++) {
        free(v->q[i].url);
        free(v->q[i].token);
        free(v->q[i].body);
    }
    free(v->q);
    for (size_t i = 0; i < v->nreports; i++)
        free(v->reports[i]);
    free(v->reports);
    free(v->raw_body);
    json_decref(v->events);
    json_decref(v->src);
    json_decref(v->subs);
    if (v->client_secret)
        memset(v->client_secret, 0, strlen(v->client_secret));
    free(v->client_id);
    free(v->client_secret);
    pthread_cond_destroy(&v->cv);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

unsigned short pflex_vtn_port(const pflex_vtn_t *v)
{
    return v->port;
}

static const char *id_of(json_t *ev)
{
    json_t *id = json_object_get(ev, "id");
    return json_is_object(ev) && json_is_string(id) && *json_string_value(id) ? json_string_value(id) : NULL;
}

static size_t find_id(json_t *arr, const char *id)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        const char *x = id_of(e);
        if (x && !strcmp(x, id))
            return i;
    }
    return (size_t)-1;
}

int pflex_vtn_set_events(pflex_vtn_t *v, const char *json, pflex_error_t *err)
{
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    if (!json_is_array(j)) {
        json_decref(j);
        return pflex_error_set(err, "VTN events: not a JSON array (%d:%d: %s)", je.line, je.column, je.text);
    }
    json_t *served = json_array();
    if (!served) {
        json_decref(j);
        return pflex_error_set(err, "out of memory");
    }
    char when[40];
    stamp(when, sizeof when);
    pthread_mutex_lock(&v->mu);
    /* an event the VTN serves carries its dates, as a VTN's would: new or
     * changed ones (by id, against what was given before) are stamped now
     * and notified; the others keep theirs */
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e) {
        const char *id = id_of(e);
        size_t was = id ? find_id(v->src, id) : (size_t)-1;
        if (!id) {
            json_array_append(served, e);
            continue;
        }
        if (was != (size_t)-1 && json_equal(json_array_get(v->src, was), e)) {
            json_array_append(served, json_array_get(v->events, was));
            continue;
        }
        json_t *s = json_deep_copy(e);
        json_t *created = was != (size_t)-1 ? json_object_get(json_array_get(v->events, was), "createdDateTime") : NULL;
        json_object_set_new(s, "createdDateTime", json_is_string(created) ? json_copy(created) : json_string(when));
        json_object_set_new(s, "modificationDateTime", json_string(when));
        json_array_append_new(served, s);
        if (find_id(j, id) == i)    /* a second event of one id is served, not notified */
            notify(v, was != (size_t)-1 ? "PUT" : "POST", s);
    }
    json_array_foreach(v->src, i, e) {
        const char *id = id_of(e);
        if (id && find_id(j, id) == (size_t)-1 && find_id(v->src, id) == i)
            notify(v, "DELETE", json_array_get(v->events, i));
    }
    json_decref(v->src);
    json_decref(v->events);
    v->src = j;
    v->events = served;
    pthread_mutex_unlock(&v->mu);
    return 0;
}

int pflex_vtn_set_raw(pflex_vtn_t *v, unsigned status, const char *body, size_t len,
                      unsigned delay_ms)
{
    char *copy = NULL;
    if (status) {
        copy = malloc(len + 1);
        if (!copy)
            return -1;
        memcpy(copy, body, len);
    }
    pthread_mutex_lock(&v->mu);
    free(v->raw_body);
    v->raw_body = copy;
    v->raw_len = status ? len : 0;
    v->raw_status = status;
    v->raw_delay_ms = delay_ms;
    pthread_mutex_unlock(&v->mu);
    return 0;
}

void pflex_vtn_revoke_tokens(pflex_vtn_t *v)
{
    pthread_mutex_lock(&v->mu);
    v->token[0] = '\0';
    pthread_mutex_unlock(&v->mu);
}

void pflex_vtn_drop_subscriptions(pflex_vtn_t *v)
{
    pthread_mutex_lock(&v->mu);
    json_array_clear(v->subs);
    pthread_mutex_unlock(&v->mu);
}

void pflex_vtn_counts(pflex_vtn_t *v, struct pflex_vtn_counts *out)
{
    pthread_mutex_lock(&v->mu);
    *out = v->counts;
    out->subscribers = json_array_size(v->subs);
    pthread_mutex_unlock(&v->mu);
}

char *pflex_vtn_report(pflex_vtn_t *v, size_t i)
{
    pthread_mutex_lock(&v->mu);
    char *s = i < v->nreports ? strdup(v->reports[i]) : NULL;
    pthread_mutex_unlock(&v->mu);
    return s;
}
