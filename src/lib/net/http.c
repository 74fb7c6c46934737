/* http.c — the HTTP server wrapper over libmicrohttpd (pflex/http.h).
 *
 * libmicrohttpd runs without a thread of its own ("external select"): the
 * caller's loop calls pflex_http_server_run, which waits with MHD_run_wait.
 * Each request gets a small context on its first call (headers read):
 * rate and declared size are checked there, so that a refused body is
 * never read; the body is then gathered up to max_body and the handler
 * runs once on the last call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include "pflex/http.h"
#include "pflex/sweep.h"
#include "lib/util/clock.h"

#define PEERS 256

struct bucket {
    char peer[48];
    double read_tokens, write_tokens;
    double t;               /* monotonic time of the last refill */
    double used;            /* last use, for replacement */
};

struct pflex_http_server {
    struct MHD_Daemon *d;
    pflex_http_handler handler;
    void *ud;
    struct pflex_http_limits lim;
    unsigned port;
    unsigned long counts[6];
    struct bucket peers[PEERS];
    char *tls_cert, *tls_key;   /* PEM, kept while the daemon runs */
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
    struct bucket *b = NULL, *oldest = &s->peers[0];
    for (int i = 0; i < PEERS; i++) {
        if (!strcmp(s->peers[i].peer, peer)) {
            b = &s->peers[i];
            break;
        }
        if (s->peers[i].used < oldest->used)
            oldest = &s->peers[i];
    }
    if (!b) {
        b = oldest;
        snprintf(b->peer, sizeof b->peer, "%s", peer);
        b->read_tokens = s->lim.read_burst > 1 ? s->lim.read_burst : 1;
        b->write_tokens = s->lim.write_burst > 1 ? s->lim.write_burst : 1;
        b->t = now;
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
    if (*tok >= 1) {
        *tok -= 1;
        return 0;
    }
    int wait = (int)ceil((1 - *tok) / rate);
    return wait < 1 ? 1 : wait;
}

/* ---- answering --------------------------------------------------- */

static enum MHD_Result send_response(struct pflex_http_server *s, struct MHD_Connection *c,
                                     struct pflex_http_response *r)
{
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
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->status, m);
    MHD_destroy_response(m);
    int cls = r->status / 100;
    if (cls >= 1 && cls <= 5)
        s->counts[cls]++;
    return ok;
}

void pflex_http_respond_text(struct pflex_http_response *resp, int status, const char *ctype,
                             const char *text, size_t len)
{
    free(resp->body);
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
    free(resp->body);
    resp->status = status;
    resp->content_type = ctype;
    resp->body = text;
    resp->len = len;
}

void pflex_http_respond_json(struct pflex_http_response *resp, int status, json_t *doc)
{
    free(resp->body);
    resp->body = doc ? json_dumps(doc, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(doc);
    resp->status = resp->body ? status : 500;
    resp->content_type = "application/json";
    if (!resp->body)
        resp->body = strdup("{\"error\":\"out of memory\"}");
    resp->len = resp->body ? strlen(resp->body) : 0;
    /* A newline makes curl output readable. */
    char *grown = resp->body ? realloc(resp->body, resp->len + 2) : NULL;
    if (grown) {
        resp->body = grown;
        resp->body[resp->len++] = '\n';
        resp->body[resp->len] = '\0';
    }
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
    snprintf(buf, len, "?");
    if (!ci || !ci->client_addr)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)len);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)len);
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
            return send_response(s, c, &r);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->lim.max_body) {
            pflex_http_respond_error(&r, 413, "request body of %s bytes is over the limit of "
                                     "%zu bytes", cl, s->lim.max_body);
            x->answered = 1;
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
    unsigned flags = MHD_USE_ERROR_LOG | (a.v6 ? MHD_USE_IPv6 : 0);
    struct MHD_OptionItem tls[3] = {{MHD_OPTION_END, 0, NULL}};
    if (s->lim.tls_cert_file || s->lim.tls_key_file) {
        if (load_tls(s->lim.tls_cert_file, s->lim.tls_key_file, &s->tls_cert, &s->tls_key, err) < 0) {
            free(s);
            return -1;
        }
        flags |= MHD_USE_TLS;
        tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert};
        tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key};
        tls[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    }
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
                            MHD_OPTION_ARRAY, tls,
                            MHD_OPTION_EXTERNAL_LOGGER, quiet_logger, NULL,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a.ss,
                            MHD_OPTION_CONNECTION_TIMEOUT, s->lim.timeout_s,
                            MHD_OPTION_CONNECTION_LIMIT, s->lim.max_conns,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->lim.per_peer_conns,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_END);
    if (!s->d) {
        int e = errno;
        int tls_on = s->tls_cert != NULL;
        free(s->tls_cert);
        free(s->tls_key);
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
    int32_t ms = max_wait_s <= 0 ? 0 : max_wait_s > 3600 ? 3600000 : (int32_t)(max_wait_s * 1e3);
    if (MHD_run_wait(s->d, ms) != MHD_YES && errno != EINTR)
        return pflex_error_set(err, "the HTTP server failed: %s", strerror(errno));
    return 0;
}

void pflex_http_server_counts(const pflex_http_server_t *s, unsigned long counts[6])
{
    for (int i = 0; i < 6; i++)
        counts[i] = s ? s->counts[i] : 0;
}

void pflex_http_server_stop(pflex_http_server_t *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
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
