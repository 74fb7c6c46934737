/* vtn.c — a small OpenADR 3 VTN on libmicrohttpd, for tests and demos of
 * the VEN: token, events, reports (pflex/net/vtn.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include <microhttpd.h>
#include "pflex/net/vtn.h"

#define MAX_UPLOAD (1u << 20)
#define MAX_REPORTS 10000

struct pflex_vtn {
    struct MHD_Daemon *d;
    unsigned short port;
    pthread_mutex_t mu;
    char *client_id, *client_secret;
    long expires_in;
    char token[64];             /* the token in force; "" before the first */
    unsigned long generation;
    json_t *events;             /* array */
    unsigned raw_status, raw_delay_ms;
    char *raw_body;
    size_t raw_len;
    char **reports;
    size_t nreports;
    struct pflex_vtn_counts counts;
};

struct upload {
    char *buf;
    size_t len;
    int too_big;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
                             size_t len, const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type ? type : "application/json");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result problem(struct MHD_Connection *c, unsigned status, const char *title)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, "{\"title\":\"%s\",\"status\":%u}", title, status);
    return reply(c, status, buf, (size_t)n, "application/problem+json");
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

/* Constant-time comparison of two strings of any length. */
static int same(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++)
        d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return d == 0;
}

static int authorized(pflex_vtn_t *v, struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7))
        return 0;
    return v->token[0] && same(h + 7, v->token);
}

static enum MHD_Result do_token(pflex_vtn_t *v, struct MHD_Connection *c, const char *body)
{
    char grant[64], id[512], secret[512];
    v->counts.token_requests++;
    if (form_get(body, "grant_type", grant, sizeof grant) < 0 || strcmp(grant, "client_credentials"))
        return reply(c, 400, "{\"error\":\"unsupported_grant_type\"}", 34, NULL);
    if (form_get(body, "client_id", id, sizeof id) < 0
        || form_get(body, "client_secret", secret, sizeof secret) < 0)
        return reply(c, 400, "{\"error\":\"invalid_request\"}", 27, NULL);
    if (!same(id, v->client_id) || !same(secret, v->client_secret)) {
        v->counts.unauthorized++;
        return reply(c, 401, "{\"error\":\"invalid_client\"}", 26, NULL);
    }
    if (!v->token[0]) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        snprintf(v->token, sizeof v->token, "vtn-%lu-%08lx%08lx", v->generation,
                 (unsigned long)ts.tv_nsec, (unsigned long)(uintptr_t)v & 0xffffffffUL);
        v->counts.tokens_issued++;
    }
    char buf[160];
    int n = snprintf(buf, sizeof buf, "{\"access_token\":\"%s\",\"token_type\":\"Bearer\",\"expires_in\":%ld}",
                     v->token, v->expires_in);
    return reply(c, 200, buf, (size_t)n, NULL);
}

static long query_long(struct MHD_Connection *c, const char *k, long dflt, long lo, long hi)
{
    const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
    if (!s)
        return dflt;
    char *e;
    long v = strtol(s, &e, 10);
    if (e == s || *e || v < lo || v > hi)
        return -1;
    return v;
}

static enum MHD_Result do_events(pflex_vtn_t *v, struct MHD_Connection *c)
{
    v->counts.event_requests++;
    if (!authorized(v, c)) {
        v->counts.unauthorized++;
        return problem(c, 401, "Unauthorized");
    }
    if (v->raw_status) {
        unsigned st = v->raw_status, delay = v->raw_delay_ms;
        char *body = malloc(v->raw_len + 1);
        size_t len = v->raw_len;
        if (!body)
            return MHD_NO;
        memcpy(body, v->raw_body, len);
        pthread_mutex_unlock(&v->mu);
        if (delay) {
            struct timespec ts = {delay / 1000, (long)(delay % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        enum MHD_Result r = reply(c, st, body, len, NULL);
        free(body);
        pthread_mutex_lock(&v->mu);
        return r;
    }
    long skip = query_long(c, "skip", 0, 0, 1000000), limit = query_long(c, "limit", 50, 0, 50);
    if (skip < 0 || limit < 0) {
        v->counts.bad++;
        return problem(c, 400, "Bad Request");
    }
    const char *prog = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "programID");
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
    if (!s)
        return MHD_NO;
    enum MHD_Result r = reply(c, 200, s, strlen(s), NULL);
    free(s);
    return r;
}

static enum MHD_Result do_report(pflex_vtn_t *v, struct MHD_Connection *c, const char *body, size_t len)
{
    if (!authorized(v, c)) {
        v->counts.unauthorized++;
        return problem(c, 401, "Unauthorized");
    }
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    int ok = json_is_object(j) && json_is_string(json_object_get(j, "programID"))
             && json_is_string(json_object_get(j, "eventID"))
             && json_is_string(json_object_get(j, "clientName"))
             && json_is_array(json_object_get(j, "resources"));
    json_decref(j);
    if (!ok || v->nreports >= MAX_REPORTS) {
        v->counts.bad++;
        return problem(c, 400, "Bad Request");
    }
    char **nr = realloc(v->reports, (v->nreports + 1) * sizeof *nr);
    if (!nr)
        return MHD_NO;
    v->reports = nr;
    v->reports[v->nreports] = strndup(body, len);
    if (!v->reports[v->nreports])
        return MHD_NO;
    v->nreports++;
    v->counts.reports++;
    return reply(c, 201, body, len, NULL);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_size, void **con_cls)
{
    pflex_vtn_t *v = cls;
    struct upload *u = *con_cls;
    if (!u) {
        u = calloc(1, sizeof *u);
        if (!u)
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*data_size) {
        if (u->len + *data_size > MAX_UPLOAD)
            u->too_big = 1;
        else {
            char *nb = realloc(u->buf, u->len + *data_size + 1);
            if (!nb)
                return MHD_NO;
            u->buf = nb;
            memcpy(u->buf + u->len, data, *data_size);
            u->len += *data_size;
            u->buf[u->len] = '\0';
        }
        *data_size = 0;
        return MHD_YES;
    }
    if (u->too_big)
        return problem(c, 413, "Payload Too Large");
    const char *body = u->buf ? u->buf : "";
    pthread_mutex_lock(&v->mu);
    enum MHD_Result r;
    if (!strcmp(url, "/auth/token") && !strcmp(method, "POST"))
        r = do_token(v, c, body);
    else if (!strcmp(url, "/events") && !strcmp(method, "GET"))
        r = do_events(v, c);
    else if (!strcmp(url, "/reports") && !strcmp(method, "POST"))
        r = do_report(v, c, body, u->len);
    else
        r = problem(c, 404, "Not Found");
    pthread_mutex_unlock(&v->mu);
    return r;
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
                 enum MHD_RequestTerminationCode toe)
{
    struct upload *u = *con_cls;
    if (u) {
        free(u->buf);
        free(u);
        *con_cls = NULL;
    }
}

int pflex_vtn_start(const struct pflex_vtn_config *c, pflex_vtn_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!c->client_id || !c->client_secret)
        return pflex_error_set(err, "VTN needs a client id and secret");
    pflex_vtn_t *v = calloc(1, sizeof *v);
    if (!v)
        return pflex_error_set(err, "out of memory");
    pthread_mutex_init(&v->mu, NULL);
    v->client_id = strdup(c->client_id);
    v->client_secret = strdup(c->client_secret);
    v->events = json_array();
    v->expires_in = c->expires_in > 0 ? c->expires_in : 3600;
    if (!v->client_id || !v->client_secret || !v->events) {
        pflex_vtn_stop(v);
        return pflex_error_set(err, "out of memory");
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(c->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    v->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                            0, NULL, NULL, handle, v, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
    if (!v->d) {
        pflex_vtn_stop(v);
        return pflex_error_set(err, "VTN: cannot listen on 127.0.0.1:%u", c->port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(v->d, MHD_DAEMON_INFO_BIND_PORT);
    v->port = info ? info->port : c->port;
    *out = v;
    return 0;
}

void pflex_vtn_stop(pflex_vtn_t *v)
{
    if (!v)
        return;
    if (v->d)
        MHD_stop_daemon(v->d);
    for (size_t i = 0; i < v->nreports; i++)
        free(v->reports[i]);
    free(v->reports);
    free(v->raw_body);
    json_decref(v->events);
    free(v->client_id);
    free(v->client_secret);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

unsigned short pflex_vtn_port(const pflex_vtn_t *v)
{
    return v->port;
}

int pflex_vtn_set_events(pflex_vtn_t *v, const char *json, pflex_error_t *err)
{
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    if (!json_is_array(j)) {
        json_decref(j);
        return pflex_error_set(err, "VTN events: not a JSON array (%d:%d: %s)", je.line, je.column, je.text);
    }
    pthread_mutex_lock(&v->mu);
    json_decref(v->events);
    v->events = j;
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
    v->generation++;
    pthread_mutex_unlock(&v->mu);
}

void pflex_vtn_counts(pflex_vtn_t *v, struct pflex_vtn_counts *out)
{
    pthread_mutex_lock(&v->mu);
    *out = v->counts;
    pthread_mutex_unlock(&v->mu);
}

char *pflex_vtn_report(pflex_vtn_t *v, size_t i)
{
    pthread_mutex_lock(&v->mu);
    char *s = i < v->nreports ? strdup(v->reports[i]) : NULL;
    pthread_mutex_unlock(&v->mu);
    return s;
}
