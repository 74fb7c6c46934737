/* h1client.c — a small keep-alive HTTP/1.1 client over epoll (h1client.h).
 *
 * Why: a controller reads every agent every period.  Over libcurl's multi
 * interface a request cost its easy handle's reset and options, its URL
 * parsed, its headers formatted and parsed back, about three poll(2) and a
 * handle added to and removed from the multi; at 12,500 agents that was
 * about half the controller's CPU in a period (docs/controller.md).  Here a
 * request is one send(2) on a kept connection and, for an answer that fits
 * its buffer, one recv(2), the waits shared by all calls in flight in one
 * epoll_wait(2); a kept connection stays registered (readable), so that
 * one the server closed while idle is seen and dropped.
 *
 * One batch at a time (the client is used by one thread).  A call's slot
 * owns its request and answer buffers, reused from call to call; a
 * connection is busy (its slot's) or idle (in the cache: a hash of its
 * address, and a list oldest first to close the oldest over keep_conns). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "lib/net/h1client.h"
#include "lib/util/clock.h"
#include "lib/util/grow.h"

#define MAX_HEAD 65536          /* an answer's status line and headers */
#define READ_ROOM 16384         /* what one recv(2) may take */

struct addr {
    socklen_t len;
    struct sockaddr_storage sa;     /* zeroed past len: compared whole */
};

struct slot;

struct conn {
    int fd;
    struct addr to;
    unsigned bucket;
    struct slot *slot;              /* busy: its call's; NULL: idle, cached */
    struct conn *bnext;             /* idle: the next in its bucket */
    struct conn *older, *newer;     /* idle: the cache, oldest first */
    int connecting;
    int dead;                       /* closed; freed after the events at hand */
    uint32_t events;                /* as registered with epoll */
};

enum body { BODY_LENGTH, BODY_CHUNKED, BODY_TO_CLOSE, BODY_NONE };

struct slot {
    struct pflex_http_call *call;   /* NULL: free */
    struct conn *conn;
    struct addr to;
    char *req;                      /* the request, head and body */
    size_t req_len, req_cap, sent;
    char *in;                       /* the answer as read: head, then body */
    size_t in_len, in_cap;
    size_t head_end;                /* 0 until the head is whole */
    long status;
    enum body body;
    size_t clen;                    /* BODY_LENGTH */
    int close_after;
    int ck_state;                   /* chunked: 0 size line, 1 data, 2 its CRLF, 3 trailers */
    size_t ck_in, ck_out, ck_left;  /* raw bytes read, decoded bytes, left of this chunk */
    double deadline, connect_deadline;
    int reused, retried;
};

struct pflex_h1 {
    struct pflex_http_client_opts o;
    char *accept_line;
    int ep;
    struct slot *slots;
    struct conn **buckets;
    unsigned nbuckets;              /* a power of two */
    struct conn *oldest, *newest;
    unsigned idle;
    struct conn *dead;              /* closed during a round of events */
    /* the batch running */
    pflex_http_done_fn done;
    void *ud;
    unsigned active;
    long failed;
};

struct pflex_h1 *pflex_h1_create(const struct pflex_http_client_opts *o, const char *accept_line)
{
    struct pflex_h1 *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->o = *o;
    e->ep = epoll_create1(EPOLL_CLOEXEC);
    e->slots = calloc(o->parallel, sizeof *e->slots);
    e->nbuckets = 64;
    while (e->nbuckets < 2 * o->keep_conns && e->nbuckets < (1u << 20))
        e->nbuckets *= 2;
    e->buckets = calloc(e->nbuckets, sizeof *e->buckets);
    e->accept_line = accept_line ? strdup(accept_line) : NULL;
    if (e->ep < 0 || !e->slots || !e->buckets || (accept_line && !e->accept_line)) {
        pflex_h1_destroy(e);
        return NULL;
    }
    return e;
}

/* Close k; its memory waits for bury (an event of this round may name it). */
static void conn_close(struct pflex_h1 *e, struct conn *k)
{
    close(k->fd);       /* leaves the epoll set with it */
    k->dead = 1;
    k->bnext = e->dead;
    e->dead = k;
}

static void bury(struct pflex_h1 *e)
{
    for (struct conn *k = e->dead, *nx; k; k = nx) {
        nx = k->bnext;
        free(k);
    }
    e->dead = NULL;
}

void pflex_h1_destroy(struct pflex_h1 *e)
{
    if (!e)
        return;
    for (struct conn *k = e->oldest, *nx; k; k = nx) {
        nx = k->newer;
        conn_close(e, k);
    }
    bury(e);
    for (unsigned i = 0; e->slots && i < e->o.parallel; i++) {
        free(e->slots[i].req);
        free(e->slots[i].in);
    }
    if (e->ep >= 0)
        close(e->ep);
    free(e->slots);
    free(e->buckets);
    free(e->accept_line);
    free(e);
}

/* ---- the URL ---- */

/* The parts of an http:// URL with a numeric host: its address, its
 * authority (for Host:) and its path.  0, or -1 for anything else. */
static int url_parts(const char *url, struct addr *to, const char **auth, size_t *auth_len, const char **path)
{
    if (strncmp(url, "http://", 7))
        return -1;
    const char *h = url + 7, *p = h;
    char host[64];
    size_t hl;
    if (*p == '[') {
        const char *rb = strchr(p, ']');
        if (!rb || (size_t)(rb - p - 1) >= sizeof host)
            return -1;
        hl = (size_t)(rb - p - 1);
        memcpy(host, p + 1, hl);
        p = rb + 1;
    } else {
        while (*p && *p != ':' && *p != '/' && *p != '?' && *p != '#' && *p != '@')
            p++;
        hl = (size_t)(p - h);
        if (hl >= sizeof host)
            return -1;
        memcpy(host, h, hl);
    }
    host[hl] = '\0';
    unsigned long port = 80;
    if (*p == ':') {
        char *end;
        if (p[1] < '0' || p[1] > '9')
            return -1;
        port = strtoul(p + 1, &end, 10);
        if (port < 1 || port > 65535)
            return -1;
        p = end;
    }
    if (*p && *p != '/' && *p != '?')
        return -1;
    /* what libcurl would rewrite (dot segments, fragments, spaces) is its */
    for (const char *q = p; *q; q++)
        if ((unsigned char)*q <= ' ' || *q == '#' || *q == 0x7f || (q[0] == '/' && q[1] == '.'))
            return -1;
    memset(to, 0, sizeof *to);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&to->sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&to->sa;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        to->len = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        to->len = sizeof *v6;
    } else
        return -1;
    *auth = h;
    *auth_len = (size_t)(p - h);
    *path = p;
    return 0;
}

int pflex_h1_takes(const struct pflex_http_call *call)
{
    const char *m = call->method ? call->method : "GET";
    if (strcmp(m, "GET") && strcmp(m, "PUT") && strcmp(m, "POST") && strcmp(m, "DELETE"))
        return 0;
    if (!call->body && strcmp(m, "GET") && strcmp(m, "DELETE"))
        return 0;       /* libcurl's empty POST and PUT bodies are its own */
    struct addr to;
    const char *auth, *path;
    size_t al;
    return call->url && url_parts(call->url, &to, &auth, &al, &path) == 0;
}

/* ---- the cache of idle connections ---- */

static unsigned addr_bucket(const struct pflex_h1 *e, const struct addr *a)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)&a->sa;
    for (socklen_t i = 0; i < a->len; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return (unsigned)(h ^ (h >> 32)) & (e->nbuckets - 1);
}

static int same_addr(const struct addr *a, const struct addr *b)
{
    return a->len == b->len && !memcmp(&a->sa, &b->sa, a->len);
}

/* Take k out of the cache (it is idle). */
static void cache_unlink(struct pflex_h1 *e, struct conn *k)
{
    struct conn **pp = &e->buckets[k->bucket];
    while (*pp && *pp != k)
        pp = &(*pp)->bnext;
    if (*pp)
        *pp = k->bnext;
    if (k->older)
        k->older->newer = k->newer;
    else
        e->oldest = k->newer;
    if (k->newer)
        k->newer->older = k->older;
    else
        e->newest = k->older;
    k->bnext = k->older = k->newer = NULL;
    e->idle--;
}

/* An idle connection to a, taken out of the cache; NULL: none. */
static struct conn *cache_take(struct pflex_h1 *e, const struct addr *a)
{
    for (struct conn *k = e->buckets[addr_bucket(e, a)]; k; k = k->bnext)
        if (same_addr(&k->to, a)) {
            cache_unlink(e, k);
            return k;
        }
    return NULL;
}

/* k, done with its call, into the cache; the oldest closed past keep_conns. */
static void cache_put(struct pflex_h1 *e, struct conn *k)
{
    k->slot = NULL;
    k->bucket = addr_bucket(e, &k->to);
    k->bnext = e->buckets[k->bucket];
    e->buckets[k->bucket] = k;
    k->older = e->newest;
    k->newer = NULL;
    if (e->newest)
        e->newest->newer = k;
    else
        e->oldest = k;
    e->newest = k;
    e->idle++;
    while (e->idle > e->o.keep_conns && e->oldest) {
        struct conn *old = e->oldest;
        cache_unlink(e, old);
        conn_close(e, old);
    }
}

static int watch(struct pflex_h1 *e, struct conn *k, uint32_t events)
{
    if (k->events == events)
        return 0;
    struct epoll_event ev = {.events = events, .data.ptr = k};
    int rc = epoll_ctl(e->ep, k->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, k->fd, &ev);
    if (rc == 0)
        k->events = events;
    return rc;
}

/* ---- a call ---- */

static int grow(char **buf, size_t *cap, size_t need)
{
    return pflex_grow((void **)buf, cap, need, 1);
}

static void put(char **p, const char *s, size_t n)
{
    memcpy(*p, s, n);
    *p += n;
}
#define PUT_LIT(p, s) put(p, s, sizeof s - 1)

/* The request of call into s->req: 0, or -1 (out of memory). */
static int write_request(struct pflex_h1 *e, struct slot *s, const struct pflex_http_call *call, const char *auth,
                         size_t auth_len, const char *path)
{
    const char *m = call->method ? call->method : "GET";
    size_t ml = strlen(m), pl = *path ? strlen(path) : 1, bl = call->body ? strlen(call->body) : 0;
    const char *ct = call->content_type ? call->content_type : "application/json";
    const char *tok = call->token && *call->token ? call->token : NULL;
    size_t al = e->accept_line ? strlen(e->accept_line) : 0;
    size_t need = ml + pl + auth_len + al + (tok ? strlen(tok) : 0) + strlen(ct) + bl + 160;
    if (grow(&s->req, &s->req_cap, need) < 0)
        return -1;
    char *p = s->req;
    put(&p, m, ml);
    *p++ = ' ';
    if (*path)
        put(&p, path, pl);
    else
        *p++ = '/';
    PUT_LIT(&p, " HTTP/1.1\r\nHost: ");
    put(&p, auth, auth_len);
    PUT_LIT(&p, "\r\n");
    if (e->accept_line) {
        put(&p, e->accept_line, al);
        PUT_LIT(&p, "\r\n");
    } else
        PUT_LIT(&p, "Accept: */*\r\n");
    if (tok) {
        PUT_LIT(&p, "Authorization: Bearer ");
        put(&p, tok, strlen(tok));
        PUT_LIT(&p, "\r\n");
    }
    if (call->body) {
        PUT_LIT(&p, "Content-Type: ");
        put(&p, ct, strlen(ct));
        p += sprintf(p, "\r\nContent-Length: %zu\r\n", bl);
    }
    PUT_LIT(&p, "\r\n");
    if (bl)
        put(&p, call->body, bl);
    s->req_len = (size_t)(p - s->req);
    return 0;
}

void pflex_h1_call_reset(struct pflex_http_call *call)
{
    call->ok = 0;
    call->status = 0;
    call->resp = NULL;
    call->resp_len = 0;
    call->too_big = 0;
    call->error[0] = '\0';
}

void pflex_h1_call_fail(struct pflex_http_call *call, const char *why)
{
    call->ok = 0;
    call->status = 0;
    snprintf(call->error, sizeof call->error, "%.*s", (int)sizeof call->error - 1, why);
}

void pflex_h1_call_too_big(struct pflex_http_call *call, size_t max)
{
    char why[64];
    if (max % (1u << 20) == 0)
        snprintf(why, sizeof why, "answer over %zu MiB", max >> 20);
    else
        snprintf(why, sizeof why, "answer over %zu bytes", max);
    call->too_big = 1;
    pflex_h1_call_fail(call, why);
}

/* The request's secret (its Authorization line) wiped from the slot. */
static void wipe_request(struct slot *s)
{
    if (s->req_cap)
        memset(s->req, 0, s->req_len < s->req_cap ? s->req_len : s->req_cap);
    s->req_len = s->sent = 0;
}

/* The body's length in s->in after the head, once the answer is whole. */
static size_t answer_len(const struct slot *s)
{
    return s->body == BODY_CHUNKED ? s->ck_out : s->body == BODY_LENGTH ? s->clen
           : s->body == BODY_NONE ? 0 : s->in_len - s->head_end;
}

/* End s's call: an answer (code CURLE_OK) or an error (code, or too_big);
 * its connection kept when the answer leaves it clean. */
static void finish(struct pflex_h1 *e, struct slot *s, CURLcode code, int too_big)
{
    struct pflex_http_call *call = s->call;
    struct conn *k = s->conn;
    int keep = 0;
    if (code == CURLE_OK && !too_big) {
        size_t len = answer_len(s);
        if (len > 4 * READ_ROOM && s->head_end + len == s->in_len) {
            /* a large answer: its buffer handed over (the body moved to
             * its front; there is room for the NUL), not copied into a new one */
            memmove(s->in, s->in + s->head_end, len);
            call->resp = s->in;
            s->in = NULL;
            s->in_cap = 0;
        } else if ((call->resp = malloc(len + 1)))
            memcpy(call->resp, s->in + s->head_end, len);
        if (call->resp) {
            call->resp[len] = '\0';
            call->resp_len = len;
            call->status = s->status;
            call->ok = 1;
        } else
            pflex_h1_call_fail(call, "out of memory");
        /* nothing may follow an answer on a connection kept */
        size_t used = s->body == BODY_CHUNKED ? s->head_end + s->ck_in : s->head_end + len;
        keep = call->ok && !s->close_after && s->body != BODY_TO_CLOSE && used == s->in_len
               && s->sent == s->req_len;
    } else if (too_big) {
        pflex_h1_call_too_big(call, e->o.max_response);
    } else
        pflex_h1_call_fail(call, curl_easy_strerror(code));
    if (k) {
        if (keep && watch(e, k, EPOLLIN) == 0)
            cache_put(e, k);
        else
            conn_close(e, k);
    }
    wipe_request(s);
    if (s->in_cap > 4 * READ_ROOM) {
        free(s->in);
        s->in = NULL;
        s->in_cap = 0;
    }
    s->in_len = 0;
    s->conn = NULL;
    s->call = NULL;
    e->active--;
    if (!call->ok)
        e->failed++;
    if (e->done)
        e->done(e->ud, call);
}

/* A new connection for s; 0, or -1 (the call is then failed). */
static int open_conn(struct pflex_h1 *e, struct slot *s, unsigned long *connects)
{
    struct conn *k = calloc(1, sizeof *k);
    if (!k) {
        finish(e, s, CURLE_OUT_OF_MEMORY, 0);
        return -1;
    }
    k->to = s->to;
    k->slot = s;
    k->fd = socket(s->to.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (k->fd < 0) {
        free(k);
        finish(e, s, CURLE_COULDNT_CONNECT, 0);
        return -1;
    }
    (*connects)++;
    int one = 1;
    setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s->conn = k;
    s->reused = 0;
    if (connect(k->fd, (struct sockaddr *)&s->to.sa, s->to.len) < 0) {
        if (errno != EINPROGRESS) {
            finish(e, s, CURLE_COULDNT_CONNECT, 0);
            return -1;
        }
        k->connecting = 1;
        s->connect_deadline = pflex_mono_s() + e->o.connect_timeout_s;
        if (s->connect_deadline > s->deadline)
            s->connect_deadline = s->deadline;
    }
    if (watch(e, k, k->connecting ? EPOLLOUT : EPOLLIN | EPOLLOUT) < 0) {
        finish(e, s, CURLE_COULDNT_CONNECT, 0);
        return -1;
    }
    return 0;
}

/* A kept connection failed before any of its answer came: the call again
 * on a new one, once (the server may close an idle connection at any
 * time); 1 when retried, 0 when the call must fail. */
static int retry(struct pflex_h1 *e, struct slot *s, unsigned long *connects)
{
    if (!s->reused || s->retried || s->in_len)
        return 0;
    s->retried = 1;
    conn_close(e, s->conn);
    s->conn = NULL;
    s->sent = 0;
    open_conn(e, s, connects);
    return 1;
}

/* Send what is left of the request; 0, or -1 when the call has ended. */
static int send_some(struct pflex_h1 *e, struct slot *s, unsigned long *connects)
{
    struct conn *k = s->conn;
    while (s->sent < s->req_len) {
        ssize_t w = send(k->fd, s->req + s->sent, s->req_len - s->sent, MSG_NOSIGNAL);
        if (w > 0) {
            s->sent += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return watch(e, k, EPOLLIN | EPOLLOUT) < 0 ? (finish(e, s, CURLE_SEND_ERROR, 0), -1) : 0;
        if (retry(e, s, connects))
            return -1;
        finish(e, s, CURLE_SEND_ERROR, 0);
        return -1;
    }
    if (watch(e, k, EPOLLIN) < 0) {
        finish(e, s, CURLE_SEND_ERROR, 0);
        return -1;
    }
    return 0;
}

/* Start calls[i] on the free slot s; -1 when it has ended already. */
static int start(struct pflex_h1 *e, struct slot *s, struct pflex_http_call *call, unsigned long *requests,
                 unsigned long *connects)
{
    pflex_h1_call_reset(call);
    const char *auth, *path;
    size_t al;
    s->call = call;
    s->conn = NULL;
    s->in_len = s->head_end = s->sent = 0;
    s->status = 0;
    s->close_after = s->retried = 0;
    s->ck_state = 0;
    s->ck_in = s->ck_out = s->ck_left = 0;
    s->deadline = pflex_mono_s() + e->o.timeout_s;
    (*requests)++;
    if (url_parts(call->url, &s->to, &auth, &al, &path) < 0) {
        finish(e, s, CURLE_URL_MALFORMAT, 0);
        return -1;
    }
    if (write_request(e, s, call, auth, al, path) < 0) {
        finish(e, s, CURLE_OUT_OF_MEMORY, 0);
        return -1;
    }
    struct conn *k = cache_take(e, &s->to);
    if (k) {
        k->slot = s;
        s->conn = k;
        s->reused = 1;
        return send_some(e, s, connects);
    }
    if (open_conn(e, s, connects) < 0)
        return -1;
    return s->conn->connecting ? 0 : send_some(e, s, connects);
}

static int header_is(const char *line, size_t len, const char *name, const char **value, size_t *vlen)
{
    size_t n = strlen(name);
    if (len <= n || line[n] != ':' || strncasecmp(line, name, n))
        return 0;
    const char *v = line + n + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return 1;
}

static int has_token(const char *v, size_t n, const char *tok)
{
    size_t t = strlen(tok);
    for (size_t i = 0; i + t <= n; i++)
        if (!strncasecmp(v + i, tok, t))
            return 1;
    return 0;
}

/* The answer's head, once whole: 1 parsed (s->head_end set), 0 more to
 * read, -1 not HTTP. */
static int parse_head(struct slot *s)
{
    for (;;) {
        const char *b = s->in, *end = NULL;
        for (const char *q = b; (q = memchr(q, '\n', s->in_len - (size_t)(q - b))); q++) {
            size_t rest = s->in_len - (size_t)(q - b) - 1;
            if (rest >= 1 && q[1] == '\n') {
                end = q + 2;
                break;
            }
            if (rest >= 2 && q[1] == '\r' && q[2] == '\n') {
                end = q + 3;
                break;
            }
        }
        /* past MAX_HEAD is refused however the bytes came (whole or in pieces) */
        if (!end || (size_t)(end - b) > MAX_HEAD)
            return !end && s->in_len <= MAX_HEAD ? 0 : -1;
        /* "HTTP/1.x NNN ..." */
        if (s->in_len < 12 || memcmp(b, "HTTP/1.", 7) || (b[7] != '0' && b[7] != '1') || b[8] != ' '
            || b[9] < '1' || b[9] > '5' || b[10] < '0' || b[10] > '9' || b[11] < '0' || b[11] > '9')
            return -1;
        long st = (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
        if (st >= 100 && st < 200) {
            /* an interim answer (100 Continue): the real one follows */
            size_t used = (size_t)(end - b);
            memmove(s->in, s->in + used, s->in_len - used);
            s->in_len -= used;
            continue;
        }
        int http10 = b[7] == '0', keep_alive = 0, chunked = 0, has_len = 0;
        size_t clen = 0;
        const char *line = memchr(b, '\n', (size_t)(end - b)) + 1;
        while (line < end) {
            const char *nl = memchr(line, '\n', (size_t)(end - line));
            /* obs-fold: a line that begins with a space or a tab goes on
             * with the field before (RFC 9112 5.2); a folded length has
             * bytes that are not digits then, and is refused */
            while (nl + 1 < end && (nl[1] == ' ' || nl[1] == '\t'))
                nl = memchr(nl + 1, '\n', (size_t)(end - nl - 1));
            size_t len = (size_t)(nl - line);
            const char *v;
            size_t vl;
            if (header_is(line, len, "content-length", &v, &vl)) {
                size_t x = 0;
                if (!vl)
                    return -1;
                for (size_t i = 0; i < vl; i++) {
                    if (v[i] < '0' || v[i] > '9' || x > (SIZE_MAX - 9) / 10)
                        return -1;
                    x = x * 10 + (size_t)(v[i] - '0');
                }
                if (has_len && x != clen)
                    return -1;
                clen = x;
                has_len = 1;
            } else if (header_is(line, len, "transfer-encoding", &v, &vl))
                chunked = has_token(v, vl, "chunked");
            else if (header_is(line, len, "connection", &v, &vl)) {
                if (has_token(v, vl, "close"))
                    s->close_after = 1;
                keep_alive = has_token(v, vl, "keep-alive");
            }
            line = nl + 1;
        }
        if (http10 && !keep_alive)
            s->close_after = 1;
        s->status = st;
        s->head_end = (size_t)(end - b);
        if (st == 204 || st == 304)
            s->body = BODY_NONE;
        else if (chunked)
            s->body = BODY_CHUNKED;
        else if (has_len) {
            s->body = BODY_LENGTH;
            s->clen = clen;
        } else
            s->body = BODY_TO_CLOSE;
        return 1;
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static int dechunk_some(struct slot *s, size_t max);

/* A chunked body decoded in place as far as it has come, the raw bytes
 * not yet decoded moved down behind the decoded ones (so that the buffer
 * holds the body and one read): 1 whole, 0 more to read, -1 malformed, -2
 * over max. */
static int dechunk(struct slot *s, size_t max)
{
    int d = dechunk_some(s, max);
    if (d == 0 && s->ck_in > s->ck_out) {
        char *b = s->in + s->head_end;
        size_t raw = s->in_len - s->head_end - s->ck_in;
        memmove(b + s->ck_out, b + s->ck_in, raw);
        s->in_len = s->head_end + s->ck_out + raw;
        s->ck_in = s->ck_out;
    }
    return d;
}

static int dechunk_some(struct slot *s, size_t max)
{
    char *b = s->in + s->head_end;
    size_t n = s->in_len - s->head_end;
    for (;;) {
        if (s->ck_state == 1) {
            size_t take = n - s->ck_in < s->ck_left ? n - s->ck_in : s->ck_left;
            memmove(b + s->ck_out, b + s->ck_in, take);
            s->ck_out += take;
            s->ck_in += take;
            s->ck_left -= take;
            if (s->ck_left)
                return 0;
            s->ck_state = 2;
            continue;
        }
        char *l = b + s->ck_in, *nl = memchr(l, '\n', n - s->ck_in);
        if (!nl)
            return n - s->ck_in > 4096 ? -1 : 0;
        size_t len = (size_t)(nl - l);
        if (len > 4096)
            return -1;      /* as when its newline has not come yet */
        s->ck_in += len + 1;
        int blank = len == 0 || (len == 1 && l[0] == '\r');
        if (s->ck_state == 2) {
            if (!blank)
                return -1;
            s->ck_state = 0;
            continue;
        }
        if (s->ck_state == 3) {
            if (blank)
                return 1;
            continue;       /* a trailer, ignored */
        }
        size_t v = 0, i = 0;
        for (; i < len && hexval(l[i]) >= 0; i++) {
            if (v > (SIZE_MAX >> 4))
                return -1;
            v = v * 16 + (size_t)hexval(l[i]);
        }
        if (!i || (i < len && l[i] != ';' && l[i] != '\r' && l[i] != ' ' && l[i] != '\t'))
            return -1;
        if (v > max || s->ck_out + v > max)
            return -2;
        s->ck_left = v;
        s->ck_state = v ? 1 : 3;
    }
}

/* What the bytes s has read make of its answer (the parse alone: no
 * I/O, no call touched). */
enum answer { ANS_MORE, ANS_DONE, ANS_NOT_HTTP, ANS_TOO_BIG, ANS_BAD_CHUNK };

static enum answer answer_step(struct slot *s, size_t max)
{
    if (!s->head_end) {
        int h = parse_head(s);
        if (h <= 0)
            return h < 0 ? ANS_NOT_HTTP : ANS_MORE;
        if (s->body == BODY_LENGTH && s->clen > max)
            return ANS_TOO_BIG;
    }
    size_t got = s->in_len - s->head_end;
    switch (s->body) {
    case BODY_NONE:
        return ANS_DONE;
    case BODY_LENGTH:
        return got < s->clen ? ANS_MORE : ANS_DONE;
    case BODY_TO_CLOSE:
        return got > max ? ANS_TOO_BIG : ANS_MORE;
    case BODY_CHUNKED: {
        int d = dechunk(s, max);
        return d == 0 ? ANS_MORE : d == 1 ? ANS_DONE : d == -2 ? ANS_TOO_BIG : ANS_BAD_CHUNK;
    }
    }
    return ANS_NOT_HTTP;
}

/* What s has read so far: 1 the answer is whole (or the call ended), 0
 * more to read. */
static int progress(struct pflex_h1 *e, struct slot *s)
{
    enum answer a = answer_step(s, e->o.max_response);
    if (a == ANS_MORE)
        return 0;
    finish(e, s, a == ANS_DONE ? CURLE_OK : a == ANS_NOT_HTTP ? CURLE_WEIRD_SERVER_REPLY
                 : a == ANS_TOO_BIG ? CURLE_FILESIZE_EXCEEDED : CURLE_RECV_ERROR, a == ANS_TOO_BIG);
    return 1;
}

int pflex_h1_parse_answer(const char *in, size_t len, size_t piece, int eof, size_t max, long *status, char **body,
                          size_t *body_len)
{
    struct slot s = {0};
    enum answer a = ANS_MORE;
    *body = NULL;
    *body_len = 0;
    *status = 0;
    if (!piece)
        piece = len ? len : 1;
    for (size_t at = 0; at < len && a == ANS_MORE; at += piece) {
        /* as on_readable: room for a read and a NUL, then the parse */
        size_t n = len - at < piece ? len - at : piece;
        if (grow(&s.in, &s.in_cap, s.in_len + n + 1) < 0) {
            free(s.in);
            return -4;
        }
        memcpy(s.in + s.in_len, in + at, n);
        s.in_len += n;
        a = answer_step(&s, max);
    }
    if (a == ANS_MORE && eof && s.head_end && s.body == BODY_TO_CLOSE)
        a = ANS_DONE;   /* the server closed: the answer ends there */
    int rc = a == ANS_DONE ? 1 : a == ANS_MORE ? 0 : a == ANS_NOT_HTTP ? -1 : a == ANS_TOO_BIG ? -2 : -3;
    if (rc == 1) {
        size_t n = answer_len(&s);
        *status = s.status;
        if (s.head_end + n > s.in_len || !(*body = malloc(n + 1))) {
            free(s.in);
            return s.head_end + n > s.in_len ? -5 : -4;
        }
        memcpy(*body, s.in + s.head_end, n);
        (*body)[n] = '\0';
        *body_len = n;
    }
    free(s.in);
    return rc;
}

/* s's connection is readable: read once, and go on. */
static void on_readable(struct pflex_h1 *e, struct slot *s, unsigned long *connects)
{
    if (grow(&s->in, &s->in_cap, s->in_len + READ_ROOM + 1) < 0) {
        finish(e, s, CURLE_OUT_OF_MEMORY, 0);
        return;
    }
    size_t room = s->in_cap - s->in_len - 1;
    ssize_t r = recv(s->conn->fd, s->in + s->in_len, room, 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (r > 0) {
        s->in_len += (size_t)r;
        progress(e, s);
        return;
    }
    /* the server closed (or reset) the connection */
    if (retry(e, s, connects))
        return;
    if (s->head_end && s->body == BODY_TO_CLOSE && r == 0) {
        s->close_after = 1;
        finish(e, s, CURLE_OK, 0);
    } else if (!s->in_len)
        finish(e, s, r == 0 ? CURLE_GOT_NOTHING : CURLE_RECV_ERROR, 0);
    else
        finish(e, s, s->head_end ? CURLE_PARTIAL_FILE : CURLE_RECV_ERROR, 0);
}

static void on_event(struct pflex_h1 *e, struct conn *k, uint32_t ev, unsigned long *connects)
{
    struct slot *s = k->slot;
    if (k->dead)
        return;
    if (!s) {
        /* an idle connection readable: closed by its server (or talking
         * out of turn): it goes */
        cache_unlink(e, k);
        conn_close(e, k);
        return;
    }
    if (k->connecting) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
            finish(e, s, CURLE_COULDNT_CONNECT, 0);
            return;
        }
        k->connecting = 0;
        send_some(e, s, connects);
        return;
    }
    if ((ev & EPOLLOUT) && s->sent < s->req_len && send_some(e, s, connects) < 0)
        return;
    if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
        on_readable(e, s, connects);
}

long pflex_h1_run(struct pflex_h1 *e, struct pflex_http_call *calls, const unsigned char *mine, size_t n,
            pflex_http_done_fn done, void *ud, unsigned long *requests, unsigned long *connects)
{
    e->done = done;
    e->ud = ud;
    e->active = 0;
    e->failed = 0;
    struct epoll_event evs[128];
    /* kept connections their servers closed since the last batch */
    int nev = epoll_wait(e->ep, evs, 128, 0);
    for (int i = 0; i < nev; i++)
        on_event(e, evs[i].data.ptr, evs[i].events, connects);
    bury(e);
    size_t next = 0;
    while (next < n && !mine[next])
        next++;
    while (next < n || e->active) {
        for (unsigned i = 0; i < e->o.parallel && next < n; i++) {
            struct slot *s = &e->slots[i];
            if (s->call)
                continue;
            struct pflex_http_call *call = &calls[next++];
            while (next < n && !mine[next])
                next++;
            e->active++;
            start(e, s, call, requests, connects);
        }
        /* the calls past their deadline ended; the time to the next one */
        double now = pflex_mono_s(), wait_s = 1;
        for (unsigned i = 0; i < e->o.parallel; i++) {
            struct slot *s = &e->slots[i];
            if (!s->call)
                continue;
            double dl = s->conn && s->conn->connecting ? s->connect_deadline : s->deadline;
            if (now >= dl) {
                finish(e, s, CURLE_OPERATION_TIMEDOUT, 0);
                continue;
            }
            if (dl - now < wait_s)
                wait_s = dl - now;
        }
        bury(e);
        if (!e->active)
            continue;
        nev = epoll_wait(e->ep, evs, 128, (int)(wait_s * 1e3) + 1);
        for (int i = 0; i < nev; i++)
            on_event(e, evs[i].data.ptr, evs[i].events, connects);
        bury(e);
    }
    e->done = NULL;
    e->ud = NULL;
    return e->failed;
}
