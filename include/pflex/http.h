/* pflex/http.h — HTTP glue for the daemons: a small server over
 * libmicrohttpd, a JSON body reader with limits, and a client over libcurl.
 *
 * The server runs in the caller's thread: pflex_http_server_run() waits for
 * at most a given time, serves what arrived and returns, so that a daemon's
 * main loop can do its own periodic work and notice signals between calls.
 * Every request is answered in full by one handler call, after its whole
 * body has arrived.  Limits are enforced before the handler runs: a body
 * over max_body answers 413, a peer over its request rate 429 (with
 * Retry-After), and a client that stalls is disconnected after timeout_s.
 * The library never prints: libmicrohttpd's own messages are dropped.
 */
#ifndef PFLEX_HTTP_H
#define PFLEX_HTTP_H

#include <stddef.h>
#include <jansson.h>
#include "pflex/error.h"

typedef struct pflex_http_server pflex_http_server_t;

struct pflex_http_request {
    const char *method;     /* "GET", "PUT", ... */
    const char *path;       /* the URL's path, without the query */
    const char *body;       /* NUL-terminated; "" when none */
    size_t body_len;
    const char *peer;       /* the client's address, "127.0.0.1" */
    /* A request built without a connection (tests, fuzzers) carries its
     * headers and query arguments here: name, value, ..., NULL. */
    const char *const *headers;
    const char *const *query;
    void *conn_;            /* internal: the server's connection, or NULL */
};

struct pflex_http_response {
    int status;
    const char *content_type;   /* default "application/json" */
    char *body;                 /* malloc'd; the server frees it */
    size_t len;
    int retry_after_s;          /* > 0: a Retry-After header */
    int www_authenticate;       /* 1: WWW-Authenticate: Bearer */
};

typedef void (*pflex_http_handler)(void *ud, const struct pflex_http_request *req,
                                   struct pflex_http_response *resp);

struct pflex_http_limits {
    size_t max_body;            /* bytes (0: 65536) */
    unsigned timeout_s;         /* a connection idle this long is closed (0: 10) */
    unsigned max_conns;         /* connections at once (0: 64) */
    unsigned per_peer_conns;    /* from one address (0: 16) */
    double read_rate, read_burst;   /* GET/HEAD per peer per second, bucket size; 0: no limit */
    double write_rate, write_burst; /* other methods, the same */
};

/* Listen on "ADDR:PORT" ("127.0.0.1:9410", "[::1]:0", "0.0.0.0:9410");
 * port 0 picks a free one (pflex_http_server_port tells which). */
int pflex_http_server_start(const char *listen, const struct pflex_http_limits *lim,
                            pflex_http_handler handler, void *ud, pflex_http_server_t **out,
                            pflex_error_t *err);
unsigned pflex_http_server_port(const pflex_http_server_t *s);
/* Wait up to max_wait_s for traffic, serve it, return.  A signal ends the
 * wait early.  0, or -1 with err. */
int pflex_http_server_run(pflex_http_server_t *s, double max_wait_s, pflex_error_t *err);
/* Requests answered so far, by status class (index 1..5 for 1xx..5xx). */
void pflex_http_server_counts(const pflex_http_server_t *s, unsigned long counts[6]);
void pflex_http_server_stop(pflex_http_server_t *s);

/* 1 when the listen address is a loopback one (127.0.0.0/8, ::1,
 * "localhost"); 0 otherwise; -1 when it does not parse. */
int pflex_http_listen_is_loopback(const char *listen);

/* A request header (case-insensitive name), or NULL. */
const char *pflex_http_header(const struct pflex_http_request *r, const char *name);
/* A query argument, or NULL. */
const char *pflex_http_query(const struct pflex_http_request *r, const char *key);

/* The body as a JSON object.  NULL with err ("body:LINE:COL: what") when
 * it is empty, longer than max_len, not JSON, or not an object. */
json_t *pflex_http_json_body(const struct pflex_http_request *r, size_t max_len,
                             pflex_error_t *err);

/* Fill resp: text (copied), malloc'd text (taken: resp frees it), a JSON
 * document (stolen; written compactly, keys in insertion order), or
 * {"error": message}. */
void pflex_http_respond_text(struct pflex_http_response *resp, int status, const char *ctype,
                             const char *text, size_t len);
void pflex_http_respond_take(struct pflex_http_response *resp, int status, const char *ctype,
                             char *text, size_t len);
void pflex_http_respond_json(struct pflex_http_response *resp, int status, json_t *doc);
void pflex_http_respond_error(struct pflex_http_response *resp, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Constant-time comparison of a secret with a candidate (time depends on
 * the candidate's length only). 1 when equal. */
int pflex_http_secret_equal(const char *secret, const char *candidate);

/* The client: one request with libcurl.  token (may be NULL) goes as
 * "Authorization: Bearer TOKEN", body (may be NULL) as JSON.  *status gets
 * the HTTP status, *resp a malloc'd NUL-terminated body (at most 16 MiB).
 * -1 with err when no answer came (connection refused, timeout, ...). */
int pflex_http_request(const char *method, const char *url, const char *token, const char *body,
                       double timeout_s, long *status, char **resp, pflex_error_t *err);

#endif
