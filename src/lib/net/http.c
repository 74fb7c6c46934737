/* http.c — the HTTP server wrapper over libmicrohttpd (pflex/net/http.h).
 *
 * With threads 0 or 1, libmicrohttpd runs without a thread of its own
 * ("external select"): the caller's loop calls pflex_http_server_run,
 * which waits with MHD_run_wait.  With more, libmicrohttpd's thread pool
 * serves and the handler runs in its threads; what they share here (rate
 * buckets, connection counts, the table of open connections, response
 * counts) is under one mutex.  Each request gets a small context on its
 * first call (headers read): rate and declared size are checked there, so
 * that a refused body is never read; the body is then gathered up to
 * max_body and the handler runs once on the last call.
 *
 * Connections are counted here, not by libmicrohttpd: the accept policy
 * callback refuses an address over its limit and, when all connections are
 * in use, lets a new address in by shutting down the oldest unfinished
 * connection of the address holding the most (libmicrohttpd's own limit,
 * a little higher, only stops accepting while those close).  Each open
 * connection is in a list with the time it began waiting for a request;
 * pflex_http_server_run shuts down the ones whose request has not arrived
 * in full request_timeout_s later: libmicrohttpd's own timeout restarts
 * with every byte, so a client trickling headers would never meet it.
 * shutdown(2), not close: the socket stays libmicrohttpd's, which notices
 * the end and closes it; its number cannot be reused before the closed
 * notification has taken the connection off the list, under the mutex.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "pflex/net/http.h"
#include "pflex/io/sweep.h"
#include "lib/util/clock.h"

#define PEERS 256
#define LOG_PEER_EVERY_S 10.0   /* one line per address at most this often */
#define LOG_RATE 10.0           /* and lines in all per second, in bursts of */
#define LOG_BURST 20.0

/* What is known of one client address: its request buckets, its open
 * connections, when a line about it was last logged. */
struct peer {
    char addr[48];
    double read_tokens, write_tokens;
    double t;               /* monotonic time of the last refill */
    double used;            /* last use, for replacement (never while open > 0) */
    unsigned open;          /* connections open now */
    double logged;          /* last log line about it */
    unsigned long unsaid;   /* refusals and closings since */
};

/* One open connection. */
struct conn {
    struct conn *prev, *next;
    struct peer *peer;
    int fd;
    double since;           /* began waiting for a request (open, or the last answer) */
    int waiting;            /* its request has not arrived in full */
    int closing;            /* shut down here; libmicrohttpd will close it */
};

struct pflex_http_server {
    struct MHD_Daemon *d;
    pflex_http_handler handler;
    void *ud;
    struct pflex_http_limits lim;
    unsigned port;
    int threaded;
    pthread_mutex_t mu;     /* all below */
    unsigned long counts[6];
    struct peer *peers;
    unsigned npeers;
    struct conn *conns;
    unsigned nconns, nclosing;
    double line_tokens, line_t;     /* the log's own bucket */
    char *tls_cert, *tls_key;   /* PEM, kept while the daemon runs */
};

struct pflex_http_body {
    atomic_uint refs;
    const char *ctype;
    char *text;
    size_t len;
    struct MHD_Response *mr;    /* made once, queued to every request */
};

struct req_ctx {
    char *body;
    size_t len, cap;
    int too_big;
    int answered;
};

static void quiet_logger(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    (void)fmt;
    (void)ap;
}

/* ---- listen addresses -------------------------------------------- */

struct addr {
    struct sockaddr_storage ss;
    int v6;
};

static int parse_listen(const char *listen, struct addr *a, pflex_error_t *err)
{
    char host[128];
    const char *colon, *port_s;
    memset(a, 0, sizeof *a);
    if (!listen || !*listen)
        return pflex_error_set(err, "listen address: empty (want ADDR:PORT)");
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':' || (size_t)(close - listen - 1) >= sizeof host)
            return pflex_error_set(err, "listen address '%s': want [IPV6]:PORT", listen);
        memcpy(host, listen + 1, (size_t)(close - listen - 1));
        host[close - listen - 1] = '\0';
        port_s = close + 2;
    } else {
        colon = strrchr(listen, ':');
        if (!colon || (size_t)(colon - listen) >= sizeof host)
            return pflex_error_set(err, "listen address '%s': want ADDR:PORT", listen);
        memcpy(host, listen, (size_t)(colon - listen));
        host[colon - listen] = '\0';
        port_s = colon + 1;
    }
    char *end;
    errno = 0;
    long port = strtol(port_s, &end, 10);
    if (!*port_s || *end || errno || port < 0 || port > 65535)
        return pflex_error_set(err, "listen address '%s': port '%s' is not 0-65535", listen,
                               port_s);
    if (!strcmp(host, "localhost"))
        snprintf(host, sizeof host, "127.0.0.1");
    struct sockaddr_in *v4 = (struct sockaddr_in *)&a->ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&a->ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        a->v6 = 1;
    } else {
        return pflex_error_set(err, "listen address '%s': '%s' is not an IPv4 or IPv6 address",
                               listen, host);
    }
    return 0;
}

int pflex_http_listen_is_loopback(const char *listen)
{
    struct addr a;
    if (parse_listen(listen, &a, NULL))
        return -1;
    if (a.v6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&a.ss;
        return IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
    }
    const struct sockaddr_in *v4 = (const struct sockaddr_in *)&a.ss;
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
}

/* ---- rate limits ------------------------------------------------- */

/* The entry of an address (under mu), made when absent by replacing the
 * least recently used one without open connections; NULL when every entry
 * has some (more addresses at once than the table holds). */
static struct peer *peer_get(struct pflex_http_server *s, const char *addr, double now)
{
    struct peer *oldest = NULL;
    for (unsigned i = 0; i < s->npeers; i++) {
        struct peer *p = &s->peers[i];
        if (!strcmp(p->addr, addr))
            return p;
        if (!p->open && (!oldest || p->used < oldest->used))
            oldest = p;
    }
    if (!oldest)
        return NULL;
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->addr, sizeof oldest->addr, "%s", addr);
    oldest->read_tokens = s->lim.read_burst > 1 ? s->lim.read_burst : 1;
    oldest->write_tokens = s->lim.write_burst > 1 ? s->lim.write_burst : 1;
    oldest->t = oldest->used = now;
    oldest->logged = -1e9;
    return oldest;
}

/* A line for the log callback about p (under mu): at most one per address
 * per LOG_PEER_EVERY_S, and LOG_RATE a second in all (bursts of LOG_BURST)
 * however many addresses there are; the others are counted and the count
 * said in the address's next line. */
static void say(struct pflex_http_server *s, struct peer *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(struct pflex_http_server *s, struct peer *p, const char *fmt, ...)
{
    if (!s->lim.log)
        return;
    double now = pflex_mono_s();
    s->line_tokens += (now - s->line_t) * LOG_RATE;
    if (s->line_tokens > LOG_BURST)
        s->line_tokens = LOG_BURST;
    s->line_t = now;
    if (now - p->logged < LOG_PEER_EVERY_S || s->line_tokens < 1) {
        p->unsaid++;
        return;
    }
    s->line_tokens -= 1;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (p->unsaid && n >= 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, " (and %lu more refused or closed since "
                 "the last line about %s)", p->unsaid, p->addr);
    p->unsaid = 0;
    p->logged = now;
    s->lim.log(s->lim.log_ud, line);
}

/* 0 when the peer may make a request of this kind now, else the seconds
 * until it may. */
static int rate_wait(struct pflex_http_server *s, const char *peer, int write)
{
    double rate = write ? s->lim.write_rate : s->lim.read_rate;
    double burst = write ? s->lim.write_burst : s->lim.read_burst;
    if (rate <= 0)
        return 0;
    if (burst < 1)
        burst = 1;
    double now = pflex_mono_s();
    pthread_mutex_lock(&s->mu);
    struct peer *b = peer_get(s, peer, now);
    if (!b) {
        pthread_mutex_unlock(&s->mu);
        return 1;
    }
    b->used = now;
    double dt = now - b->t;
    b->t = now;
    if (s->lim.read_rate > 0) {
        b->read_tokens += dt * s->lim.read_rate;
        if (b->read_tokens > (s->lim.read_burst > 1 ? s->lim.read_burst : 1))
            b->read_tokens = s->lim.read_burst > 1 ? s->lim.read_burst : 1;
    }
    if (s->lim.write_rate > 0) {
        b->write_tokens += dt * s->lim.write_rate;
        if (b->write_tokens > (s->lim.write_burst > 1 ? s->lim.write_burst : 1))
            b->write_tokens = s->lim.write_burst > 1 ? s->lim.write_burst : 1;
    }
    double *tok = write ? &b->write_tokens : &b->read_tokens;
    int wait = 0;
    if (*tok >= 1)
        *tok -= 1;
    else
        wait = (int)ceil((1 - *tok) / rate);
    pthread_mutex_unlock(&s->mu);
    return wait < 0 ? 1 : wait;
}

/* ---- connections ------------------------------------------------- */

static void addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
    snprintf(buf, len, "?");
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)len);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)len);
}

/* Shut c down (under mu): libmicrohttpd sees the end and closes it. */
static void shut(struct pflex_http_server *s, struct conn *c)
{
    shutdown(c->fd, SHUT_RDWR);
    c->closing = 1;
    s->nclosing++;
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t salen)
{
    struct pflex_http_server *s = cls;
    char addr[48];
    addr_text(sa, addr, sizeof addr);
    double now = pflex_mono_s();
    enum MHD_Result ok = MHD_YES;
    pthread_mutex_lock(&s->mu);
    struct peer *p = peer_get(s, addr, now);
    if (!p) {
        ok = MHD_NO;    /* nothing to log it under: the table is full of open peers */
    } else if (p->open >= s->lim.per_peer_conns) {
        say(s, p, "refused a connection from %s: it has %u open, the most one address may "
            "have (--max-conns-per-ip)", addr, p->open);
        ok = MHD_NO;
    } else if (s->nconns - s->nclosing >= s->lim.max_conns) {
        /* All in use: the oldest unfinished connection of the address that
         * holds the most makes way, if that address holds more than this one. */
        struct conn *victim = NULL;
        for (struct conn *c = s->conns; c; c = c->next)
            if (c->waiting && !c->closing && c->peer != p
                && (!victim || c->peer->open > victim->peer->open
                    || (c->peer->open == victim->peer->open && c->since < victim->since)))
                victim = c;
        if (victim && victim->peer->open > p->open) {
            shut(s, victim);
            say(s, p, "all %u connections in use: closed the oldest unfinished one "
                "of %s (%u open) to let %s in", s->lim.max_conns, victim->peer->addr,
                victim->peer->open, addr);
        } else {
            say(s, p, "refused a connection from %s: all %u connections are in use "
                "(--max-conns)", addr, s->lim.max_conns);
            ok = MHD_NO;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode what)
{
    struct pflex_http_server *s = cls;
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fi =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        char addr[48];
        addr_text(ai ? ai->client_addr : NULL, addr, sizeof addr);
        struct conn *c = calloc(1, sizeof *c);
        if (!c || !fi)
            return free(c);
        double now = pflex_mono_s();
        pthread_mutex_lock(&s->mu);
        c->peer = peer_get(s, addr, now);
        if (!c->peer) {
            pthread_mutex_unlock(&s->mu);
            return free(c);
        }
        c->peer->open++;
        c->peer->used = now;
        c->fd = fi->connect_fd;
        c->since = now;
        c->waiting = 1;
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconns++;
        pthread_mutex_unlock(&s->mu);
        *socket_context = c;
    } else if (what == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct conn *c = *socket_context;
        *socket_context = NULL;
        pthread_mutex_lock(&s->mu);
        if (c->prev)
            c->prev->next = c->next;
        else
            s->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
        s->nconns--;
        if (c->closing)
            s->nclosing--;
        c->peer->open--;
        pthread_mutex_unlock(&s->mu);
        free(c);
    }
}

static struct conn *conn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* A request has arrived in full (or been answered early): no deadline
 * until its answer is sent; then one for the next request. */
static void conn_waiting(struct pflex_http_server *s, struct MHD_Connection *mc, int waiting)
{
    struct conn *c = conn_of(mc);
    if (!c)
        return;
    pthread_mutex_lock(&s->mu);
    c->waiting = waiting;
    if (waiting)
        c->since = pflex_mono_s();
    pthread_mutex_unlock(&s->mu);
}

/* Shut down the connections whose request is overdue. */
static void enforce_deadline(struct pflex_http_server *s)
{
    double now = pflex_mono_s();
    pthread_mutex_lock(&s->mu);
    for (struct conn *c = s->conns; c; c = c->next)
        if (c->waiting && !c->closing && now - c->since > s->lim.request_timeout_s) {
            shut(s, c);
            say(s, c->peer, "closed a connection from %s: no complete request in %g s "
                "(--request-timeout)", c->peer->addr, s->lim.request_timeout_s);
        }
    pthread_mutex_unlock(&s->mu);
}

/* ---- answering --------------------------------------------------- */

static void count_status(struct pflex_http_server *s, int status)
{
    int cls = status / 100;
    if (cls < 1 || cls > 5)
        return;
    pthread_mutex_lock(&s->mu);
    s->counts[cls]++;
    pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result send_response(struct pflex_http_server *s, struct MHD_Connection *c,
                                     struct pflex_http_response *r)
{
    if (r->shared) {
        free(r->body);
        enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->status, r->shared->mr);
        pflex_http_body_unref(r->shared);
        count_status(s, r->status);
        return ok;
    }
    if (!r->body) {
        r->body = strdup("");
        r->len = 0;
    }
    struct MHD_Response *m = r->body
        ? MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!m) {
        free(r->body);
        return MHD_NO;
    }
    MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE,
                            r->content_type ? r->content_type : "application/json");
    MHD_add_response_header(m, "Cache-Control", "no-store");
    if (r->retry_after_s > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", r->retry_after_s);
        MHD_add_response_header(m, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    if (r->www_authenticate)
        MHD_add_response_header(m, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"pflex\"");
    if (r->close)
        MHD_add_response_header(m, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->status, m);
    MHD_destroy_response(m);
    count_status(s, r->status);
    return ok;
}

static void body_free(void *cls)
{
    struct pflex_http_body *b = cls;
    free(b->text);
    free(b);
}

pflex_http_body_t *pflex_http_body_create(const char *ctype, char *text, size_t len)
{
    struct pflex_http_body *b = text ? calloc(1, sizeof *b) : NULL;
    if (!b) {
        free(text);
        return NULL;
    }
    b->ctype = ctype;
    b->text = text;
    b->len = len;
    atomic_init(&b->refs, 1);
    b->mr = MHD_create_response_from_buffer_with_free_callback_cls(len, text, body_free, b);
    if (!b->mr) {
        body_free(b);
        return NULL;
    }
    MHD_add_response_header(b->mr, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(b->mr, "Cache-Control", "no-store");
    return b;
}

void pflex_http_body_ref(pflex_http_body_t *b)
{
    atomic_fetch_add(&b->refs, 1);
}

void pflex_http_body_unref(pflex_http_body_t *b)
{
    /* The last reference gives the response back to libmicrohttpd, which
     * frees it (and b, through body_free) once no connection sends it. */
    if (b && atomic_fetch_sub(&b->refs, 1) == 1)
        MHD_destroy_response(b->mr);
}

const char *pflex_http_body_text(const pflex_http_body_t *b, size_t *len)
{
    *len = b->len;
    return b->text;
}

void pflex_http_respond_shared(struct pflex_http_response *resp, int status,
                               pflex_http_body_t *b)
{
    pflex_http_response_free(resp);
    pflex_http_body_ref(b);
    resp->status = status;
    resp->content_type = b->ctype;
    resp->shared = b;
}

void pflex_http_response_free(struct pflex_http_response *resp)
{
    free(resp->body);
    resp->body = NULL;
    resp->len = 0;
    pflex_http_body_unref(resp->shared);
    resp->shared = NULL;
}

void pflex_http_respond_text(struct pflex_http_response *resp, int status, const char *ctype,
                             const char *text, size_t len)
{
    pflex_http_response_free(resp);
    resp->status = status;
    resp->content_type = ctype;
    resp->body = malloc(len + 1);
    resp->len = resp->body ? len : 0;
    if (resp->body) {
        memcpy(resp->body, text, len);
        resp->body[len] = '\0';
    }
}

void pflex_http_respond_take(struct pflex_http_response *resp, int status, const char *ctype,
                             char *text, size_t len)
{
    pflex_http_response_free(resp);
    resp->status = status;
    resp->content_type = ctype;
    resp->body = text;
    resp->len = len;
}

char *pflex_http_json_text(const json_t *doc, size_t *len)
{
    char *text = doc ? json_dumps(doc, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)) : NULL;
    *len = text ? strlen(text) : 0;
    /* A newline makes curl output readable. */
    char *grown = text ? realloc(text, *len + 2) : NULL;
    if (grown) {
        text = grown;
        text[(*len)++] = '\n';
        text[*len] = '\0';
    }
    return text;
}

void pflex_http_respond_json(struct pflex_http_response *resp, int status, json_t *doc)
{
    pflex_http_response_free(resp);
    resp->body = pflex_http_json_text(doc, &resp->len);
    json_decref(doc);
    resp->status = resp->body ? status : 500;
    resp->content_type = "application/json";
    if (!resp->body)
        resp->body = strdup("{\"error\":\"out of memory\"}");
    resp->len = resp->body ? strlen(resp->body) : 0;
}

void pflex_http_respond_error(struct pflex_http_response *resp, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pflex_http_respond_json(resp, status, json_pack("{s:s}", "error", msg));
}

static void peer_of(struct MHD_Connection *c, char *buf, size_t len)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    addr_text(ci ? ci->client_addr : NULL, buf, len);
}

static enum MHD_Result count_length(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    (void)value;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
        (*(unsigned *)cls)++;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    struct pflex_http_server *s = cls;
    struct req_ctx *x = *con_cls;
    char peer[48];
    if (!x) {
        /* Headers are in: the checks that need no body. */
        x = calloc(1, sizeof *x);
        if (!x)
            return MHD_NO;
        *con_cls = x;
        peer_of(c, peer, sizeof peer);
        int write = strcmp(method, "GET") && strcmp(method, "HEAD");
        struct pflex_http_response r = {0};
        int wait = rate_wait(s, peer, write);
        if (wait) {
            pflex_http_respond_error(&r, 429, "too many requests from %s; retry in %d s", peer,
                                     wait);
            r.retry_after_s = wait;
            x->answered = 1;
            conn_waiting(s, c, 0);
            return send_response(s, c, &r);
        }
        /* Two Content-Length headers (RFC 9110 8.6: even equal ones) leave
         * where the body ends in doubt, the root of request smuggling
         * behind a proxy that picks the other: refused, and the connection
         * closed, since what follows cannot be framed. */
        unsigned lengths = 0;
        MHD_get_connection_values(c, MHD_HEADER_KIND, count_length, &lengths);
        if (lengths > 1) {
            pflex_http_respond_error(&r, 400, "%u Content-Length headers: give one", lengths);
            r.close = 1;
            x->answered = 1;
            conn_waiting(s, c, 0);
            return send_response(s, c, &r);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->lim.max_body) {
            pflex_http_respond_error(&r, 413, "request body of %s bytes is over the limit of "
                                     "%zu bytes", cl, s->lim.max_body);
            x->answered = 1;
            conn_waiting(s, c, 0);
            return send_response(s, c, &r);
        }
        return MHD_YES;
    }
    if (x->answered) {
        *upload_size = 0;   /* discard what still comes */
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (x->too_big || x->len + n > s->lim.max_body) {
            x->too_big = 1;
            return MHD_YES;
        }
        if (x->len + n + 1 > x->cap) {
            size_t cap = x->cap ? x->cap : 1024;
            while (cap < x->len + n + 1)
                cap *= 2;
            char *b = realloc(x->body, cap);
            if (!b)
                return MHD_NO;
            x->body = b;
            x->cap = cap;
        }
        memcpy(x->body + x->len, upload, n);
        x->len += n;
        x->body[x->len] = '\0';
        return MHD_YES;
    }
    x->answered = 1;
    conn_waiting(s, c, 0);
    struct pflex_http_response r = {0};
    if (x->too_big) {
        pflex_http_respond_error(&r, 413, "request body over the limit of %zu bytes",
                                 s->lim.max_body);
        return send_response(s, c, &r);
    }
    peer_of(c, peer, sizeof peer);
    char path[1024];
    snprintf(path, sizeof path, "%s", url);
    struct pflex_http_request q = {
        .method = method, .path = path, .body = x->body ? x->body : "", .body_len = x->len,
        .peer = peer, .conn_ = c,
    };
    s->handler(s->ud, &q, &r);
    if (!r.status)
        pflex_http_respond_error(&r, 500, "no answer");
    return send_response(s, c, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    conn_waiting(cls, c, 1);    /* the next request's deadline starts now */
    struct req_ctx *x = *con_cls;
    if (x) {
        free(x->body);
        free(x);
        *con_cls = NULL;
    }
}

/* The PEM certificate and key of an HTTPS server, read and checked. */
static int load_tls(const char *cert_file, const char *key_file, char **cert, char **key,
                    pflex_error_t *err)
{
    size_t n;
    *cert = *key = NULL;
    if (!cert_file || !key_file)
        return pflex_error_set(err, "HTTPS needs both a certificate and a key file");
    if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
        return pflex_error_set(err, "this libmicrohttpd has no TLS");
    if (pflex_read_all(cert_file, cert, &n, err) < 0)
        return -1;
    if (pflex_read_all(key_file, key, &n, err) < 0) {
        free(*cert);
        *cert = NULL;
        return -1;
    }
    const char *bad = !strstr(*cert, "-----BEGIN CERTIFICATE-----") ? cert_file
                      : !strstr(*key, "PRIVATE KEY-----") ? key_file : NULL;
    if (bad) {
        pflex_error_set(err, "%s: %s", bad, bad == cert_file ? "no PEM certificate in it"
                                                             : "no PEM private key in it");
        memset(*key, 0, strlen(*key));
        free(*cert);
        free(*key);
        *cert = *key = NULL;
        return -1;
    }
    return 0;
}

int pflex_http_tls_check(const char *cert_file, const char *key_file, pflex_error_t *err)
{
    char *c, *k;
    if (load_tls(cert_file, key_file, &c, &k, err) < 0)
        return -1;
    memset(k, 0, strlen(k));
    free(c);
    free(k);
    return 0;
}

int pflex_http_server_start(const char *listen, const struct pflex_http_limits *lim,
                            pflex_http_handler handler, void *ud, pflex_http_server_t **out,
                            pflex_error_t *err)
{
    *out = NULL;
    struct addr a;
    if (parse_listen(listen, &a, err))
        return -1;
    struct pflex_http_server *s = calloc(1, sizeof *s);
    if (!s)
        return pflex_error_set(err, "out of memory");
    s->handler = handler;
    s->ud = ud;
    if (lim)
        s->lim = *lim;
    if (!s->lim.max_body)
        s->lim.max_body = 65536;
    if (!s->lim.timeout_s)
        s->lim.timeout_s = 10;
    if (!s->lim.max_conns)
        s->lim.max_conns = 64;
    if (!s->lim.per_peer_conns)
        s->lim.per_peer_conns = 16;
    if (!(s->lim.request_timeout_s > 0))
        s->lim.request_timeout_s = 5;
    s->threaded = s->lim.threads > 1;
    s->npeers = s->lim.max_conns + 1 > PEERS ? s->lim.max_conns + 1 : PEERS;
    s->peers = calloc(s->npeers, sizeof *s->peers);
    if (!s->peers) {
        free(s);
        return pflex_error_set(err, "out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    s->line_tokens = LOG_BURST;
    s->line_t = pflex_mono_s();
    unsigned flags = MHD_USE_ERROR_LOG | (a.v6 ? MHD_USE_IPv6 : 0);
    if (s->threaded)
        flags |= MHD_USE_AUTO_INTERNAL_THREAD;
    /* libmicrohttpd's own limit sits above ours: it stops accepting only
     * while connections shut down to make way are closing. */
    unsigned mhd_limit = s->lim.max_conns + (s->lim.max_conns / 8 > 4 ? s->lim.max_conns / 8 : 4);
    struct MHD_OptionItem tls[3] = {{MHD_OPTION_END, 0, NULL}};
    if (s->lim.tls_cert_file || s->lim.tls_key_file) {
        if (load_tls(s->lim.tls_cert_file, s->lim.tls_key_file, &s->tls_cert, &s->tls_key, err) < 0) {
            pthread_mutex_destroy(&s->mu);
            free(s->peers);
            free(s);
            return -1;
        }
        flags |= MHD_USE_TLS;
        tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert};
        tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key};
        tls[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    }
    s->d = MHD_start_daemon(flags, 0, on_accept, s, on_request, s,
                            MHD_OPTION_ARRAY, tls,
                            MHD_OPTION_EXTERNAL_LOGGER, quiet_logger, NULL,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a.ss,
                            MHD_OPTION_CONNECTION_TIMEOUT, s->lim.timeout_s,
                            MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                            MHD_OPTION_THREAD_POOL_SIZE, s->threaded ? s->lim.threads : 0u,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, 128u,
                            MHD_OPTION_END);
    if (!s->d) {
        int e = errno;
        int tls_on = s->tls_cert != NULL;
        free(s->tls_cert);
        free(s->tls_key);
        pthread_mutex_destroy(&s->mu);
        free(s->peers);
        free(s);
        return pflex_error_set(err, "cannot listen on %s: %s", listen,
                               tls_on ? "libmicrohttpd refused (is the key the certificate's?)"
                               : e ? strerror(e) : "libmicrohttpd refused");
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : 0;
    *out = s;
    return 0;
}

unsigned pflex_http_server_port(const pflex_http_server_t *s)
{
    return s ? s->port : 0;
}

int pflex_http_server_run(pflex_http_server_t *s, double max_wait_s, pflex_error_t *err)
{
    if (max_wait_s > 3600)
        max_wait_s = 3600;
    if (s->threaded) {
        /* The pool serves; this thread waits (a signal ends it early). */
        if (max_wait_s > 0) {
            struct timespec ts = {(time_t)max_wait_s,
                                  (long)((max_wait_s - (time_t)max_wait_s) * 1e9)};
            nanosleep(&ts, NULL);
        }
    } else {
        int32_t ms = max_wait_s <= 0 ? 0 : (int32_t)(max_wait_s * 1e3);
        if (MHD_run_wait(s->d, ms) != MHD_YES && errno != EINTR)
            return pflex_error_set(err, "the HTTP server failed: %s", strerror(errno));
    }
    enforce_deadline(s);
    return 0;
}

void pflex_http_server_counts(const pflex_http_server_t *s, unsigned long counts[6])
{
    if (s)
        pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    for (int i = 0; i < 6; i++)
        counts[i] = s ? s->counts[i] : 0;
    if (s)
        pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
}

void pflex_http_server_stop(pflex_http_server_t *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
    pthread_mutex_destroy(&s->mu);
    free(s->peers);
    if (s->tls_key)
        memset(s->tls_key, 0, strlen(s->tls_key));
    free(s->tls_cert);
    free(s->tls_key);
    free(s);
}

static const char *lookup(const char *const *kv, const char *name, int fold)
{
    for (size_t k = 0; kv && kv[k] && kv[k + 1]; k += 2)
        if (fold ? !strcasecmp(kv[k], name) : !strcmp(kv[k], name))
            return kv[k + 1];
    return NULL;
}

const char *pflex_http_header(const struct pflex_http_request *r, const char *name)
{
    if (!r->conn_)
        return lookup(r->headers, name, 1);
    return MHD_lookup_connection_value(r->conn_, MHD_HEADER_KIND, name);
}

const char *pflex_http_query(const struct pflex_http_request *r, const char *key)
{
    if (!r->conn_)
        return lookup(r->query, key, 0);
    return MHD_lookup_connection_value(r->conn_, MHD_GET_ARGUMENT_KIND, key);
}

json_t *pflex_http_json_body(const struct pflex_http_request *r, size_t max_len,
                             pflex_error_t *err)
{
    if (!r->body_len) {
        pflex_error_set(err, "body: empty; a JSON object is expected");
        return NULL;
    }
    if (r->body_len > max_len) {
        pflex_error_set(err, "body: %zu bytes, over the limit of %zu", r->body_len, max_len);
        return NULL;
    }
    json_error_t je;
    json_t *doc = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        pflex_error_set(err, "body:%d:%d: %s", je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        pflex_error_set(err, "body: a JSON object is expected");
        return NULL;
    }
    return doc;
}

int pflex_http_secret_equal(const char *secret, const char *candidate)
{
    size_t ls = strlen(secret), lc = strlen(candidate);
    volatile unsigned char diff = (unsigned char)(ls != lc);
    /* Walk the candidate's length whatever the secret is. */
    for (size_t i = 0; i < lc; i++)
        diff |= (unsigned char)(candidate[i] ^ (ls ? secret[i % ls] : 0));
    return diff == 0 && ls > 0;
}
