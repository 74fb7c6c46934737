/* pflex/net/http.h — HTTP glue for the daemons: a small server over
 * libmicrohttpd, a JSON body reader with limits, and a client over libcurl
 * (one request, or many at once over kept connections).
 *
 * The server runs in the caller's thread (threads 0 or 1):
 * pflex_http_server_run() waits for at most a given time, serves what
 * arrived and returns, so that a daemon's main loop can do its own periodic
 * work and notice signals between calls.  With threads > 1 a pool of that
 * many threads serves (libmicrohttpd's thread pool), the handler runs in
 * them, concurrently, and pflex_http_server_run() only waits and enforces
 * the request deadline.  Every request is answered in full by one handler
 * call, after its whole body has arrived.  Limits are enforced before the
 * handler runs: a body over max_body answers 413, a peer over its request
 * rate 429 (with Retry-After), a client that stalls is disconnected after
 * timeout_s, and one whose request has not arrived in full request_timeout_s
 * after its connection opened (or its previous answer) is disconnected
 * however its bytes trickle.  Connections are limited per address and in
 * all; when all are in use, a new address gets in by closing the oldest
 * unfinished connection of the address holding the most.  The library
 * never prints: refusals and closings go to the limits' log callback
 * (rate-limited), libmicrohttpd's own messages are dropped.
 */
#ifndef PFLEX_HTTP_H
#define PFLEX_HTTP_H

#include <stddef.h>
#include <jansson.h>
#include "pflex/util/error.h"

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

/* A body rendered once and sent to many requests without a copy: shared,
 * reference-counted, immutable; the server holds a reference while it
 * sends it.  Safe to pass between threads. */
typedef struct pflex_http_body pflex_http_body_t;

struct pflex_http_response {
    int status;
    const char *content_type;   /* default "application/json" */
    char *body;                 /* malloc'd; the server frees it */
    size_t len;
    int retry_after_s;          /* > 0: a Retry-After header */
    int www_authenticate;       /* 1: WWW-Authenticate: Bearer */
    int close;                  /* 1: Connection: close (the request's framing is in doubt) */
    pflex_http_body_t *shared;  /* instead of body: a reference the server drops */
};

typedef void (*pflex_http_handler)(void *ud, const struct pflex_http_request *req,
                                   struct pflex_http_response *resp);

struct pflex_http_limits {
    size_t max_body;            /* bytes (0: 65536) */
    unsigned timeout_s;         /* a connection idle this long is closed (0: 10) */
    double request_timeout_s;   /* a request must arrive in full this long after its
                                 * connection opened or its previous answer (0: 5) */
    unsigned max_conns;         /* connections at once (0: 64) */
    unsigned per_peer_conns;    /* from one address (0: 16) */
    unsigned threads;           /* 0, 1: the caller's thread; more: a pool of that many */
    /* Refused and closed connections, one line each, at most one per
     * address per 10 s (with a count of the rest); NULL: not said. */
    void (*log)(void *log_ud, const char *line);
    void *log_ud;
    double read_rate, read_burst;   /* GET/HEAD per peer per second, bucket size; 0: no limit */
    double write_rate, write_burst; /* other methods, the same */
    /* HTTPS: PEM files of the server's certificate (chain) and private
     * key, read at start; both NULL: plain HTTP. */
    const char *tls_cert_file, *tls_key_file;
};

/* Listen on "ADDR:PORT" ("127.0.0.1:9410", "[::1]:0", "0.0.0.0:9410");
 * port 0 picks a free one (pflex_http_server_port tells which). */
int pflex_http_server_start(const char *listen, const struct pflex_http_limits *lim,
                            pflex_http_handler handler, void *ud, pflex_http_server_t **out,
                            pflex_error_t *err);
unsigned pflex_http_server_port(const pflex_http_server_t *s);
/* Read and check the PEM files an HTTPS server would use (that the key is
 * the certificate's is known only at start); 0, or -1 with err. */
int pflex_http_tls_check(const char *cert_file, const char *key_file, pflex_error_t *err);
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

/* doc as the server writes it (compact, keys in insertion order, a final
 * newline), malloc'd; NULL when out of memory. */
char *pflex_http_json_text(const json_t *doc, size_t *len);

/* A shared body of text (taken: malloc'd, freed with the last reference)
 * and content type (a static string); NULL when out of memory (text is
 * then freed).  One reference, the caller's. */
pflex_http_body_t *pflex_http_body_create(const char *ctype, char *text, size_t len);
void pflex_http_body_ref(pflex_http_body_t *b);
void pflex_http_body_unref(pflex_http_body_t *b);   /* NULL is fine */
const char *pflex_http_body_text(const pflex_http_body_t *b, size_t *len);
/* Answer with b: takes a reference of its own. */
void pflex_http_respond_shared(struct pflex_http_response *resp, int status,
                               pflex_http_body_t *b);
/* Drop what resp holds (body or shared): for callers without a server. */
void pflex_http_response_free(struct pflex_http_response *resp);

/* Constant-time comparison of a secret with a candidate (time depends on
 * the candidate's length only). 1 when equal. */
int pflex_http_secret_equal(const char *secret, const char *candidate);

/* The client, over libcurl: one request at a time, or a batch of many run
 * at once over the curl multi interface (or, with direct_http1, the plain
 * http:// ones over a small engine of the client's own).  A client keeps its connections
 * open between calls and batches (HTTP/1.1 keep-alive), so that a daemon
 * that talks to the same hosts every period pays for TCP set-up once.
 * Redirects are never followed; only http and https are spoken.  A client
 * is used by one thread at a time. */
typedef struct pflex_http_client pflex_http_client_t;

struct pflex_http_client_opts {
    unsigned parallel;          /* requests of a batch in flight at once (0: 64) */
    unsigned keep_conns;        /* idle connections kept for reuse (0: parallel) */
    double timeout_s;           /* whole request, from its start (<= 0: 10) */
    double connect_timeout_s;   /* connection set-up (<= 0: timeout_s) */
    size_t max_response;        /* bytes; a longer answer fails the request (0: 16 MiB) */
    const char *accept;         /* an Accept header (NULL: curl's, any type) */
    const char *ca_file;        /* PEM CA bundle to check HTTPS servers by (copied; NULL:
                                 * the system's) */
    int direct_http1;           /* 1: calls to plain http:// at a numeric address (GET, and
                                 * PUT, POST or DELETE with a body) go over the client's
                                 * own keep-alive HTTP/1.1 engine on epoll instead of
                                 * libcurl (not when a proxy is set in the environment,
                                 * which libcurl would use); the rest over libcurl */
};

/* One request of a batch.  The caller fills the first part and owns its
 * strings; the client fills the second. */
struct pflex_http_call {
    const char *method;         /* "GET", "PUT", "POST", ... */
    const char *url;
    const char *body;           /* NUL-terminated; NULL: none */
    const char *content_type;   /* of body (NULL: application/json) */
    const char *token;          /* "Authorization: Bearer TOKEN"; NULL or "": none */
    void *ud;                   /* the caller's, untouched */
    /* filled by the client */
    int ok;                     /* 1: an answer came (any HTTP status) */
    long status;                /* the HTTP status; 0 without an answer */
    char *resp;                 /* the answer, malloc'd and NUL-terminated (the caller
                                 * frees it); NULL without an answer */
    size_t resp_len;
    int too_big;                /* no answer: it was over max_response */
    char error[200];            /* no answer: why ("Couldn't connect to server",
                                 * "Timeout was reached", "answer over 16 MiB"),
                                 * without the method and URL */
};

/* Called as each call of a batch completes (answered or not), in the
 * order they complete; it may take call->resp (set it to NULL). */
typedef void (*pflex_http_done_fn)(void *ud, struct pflex_http_call *call);

int pflex_http_client_create(const struct pflex_http_client_opts *o, pflex_http_client_t **out,
                             pflex_error_t *err);
void pflex_http_client_destroy(pflex_http_client_t *c);

/* Run n calls, at most opts.parallel at once, each under the client's
 * timeouts, and return when every one is done; done (may be NULL) is
 * called for each as it completes.  The number of calls without an answer
 * (0..n), or -1 with err when the batch could not run at all (out of
 * memory, libcurl), every call then failed with err's text. */
long pflex_http_client_run(pflex_http_client_t *c, struct pflex_http_call *calls, size_t n,
                           pflex_http_done_fn done, void *ud, pflex_error_t *err);

/* Requests run and TCP connections opened over the client's life. */
void pflex_http_client_counts(const pflex_http_client_t *c, unsigned long *requests,
                              unsigned long *connects);

/* One request on a client of its own (no connection kept).  token (may be
 * NULL) goes as "Authorization: Bearer TOKEN", body (may be NULL) as JSON.
 * *status gets the HTTP status, *resp a malloc'd NUL-terminated body (at
 * most 16 MiB).  -1 with err ("METHOD URL: why") when no answer came
 * (connection refused, timeout, ...). */
int pflex_http_request(const char *method, const char *url, const char *token, const char *body,
                       double timeout_s, long *status, char **resp, pflex_error_t *err);

#endif
