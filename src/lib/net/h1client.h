/* h1client.h — a small keep-alive HTTP/1.1 client over epoll (internal),
 * for the calls of pflex_http_client_run that go to plain http:// at a
 * numeric address (a controller's agents: a GET or a PUT of a small JSON
 * body, tens of thousands a period).  It speaks what those need and no
 * more: Content-Length, chunked or to-the-close answers, 1xx skipped,
 * connections kept and reused (a kept one found closed is retried once on
 * a new one, as libcurl does), the client's timeouts and answer limit,
 * libcurl's words for its errors.  Everything else (https, names to
 * resolve, proxies, HEAD) stays with libcurl: client.c asks pflex_h1_takes. */
#ifndef PFLEX_NET_H1CLIENT_H
#define PFLEX_NET_H1CLIENT_H

#include <stddef.h>
#include "pflex/net/http.h"

struct pflex_h1;

/* An engine for a client of these options; accept_line ("Accept: ...",
 * may be NULL) is sent with every request.  NULL when out of memory or
 * without epoll. */
struct pflex_h1 *pflex_h1_create(const struct pflex_http_client_opts *o, const char *accept_line);
void pflex_h1_destroy(struct pflex_h1 *e);

/* 1 when the engine can run call: a GET, PUT, POST or DELETE of an
 * http:// URL whose host is a numeric IPv4 or [IPv6] address. */
int pflex_h1_takes(const struct pflex_http_call *call);

/* Run calls[i] for every i with mine[i], at most opts.parallel at once,
 * done (may be NULL) called as each completes; *requests and *connects
 * counted up.  The number of calls without an answer. */
long pflex_h1_run(struct pflex_h1 *e, struct pflex_http_call *calls, const unsigned char *mine, size_t n,
            pflex_http_done_fn done, void *ud, unsigned long *requests, unsigned long *connects);

/* Clear call's outcome (ok, status, answer, too_big, error) before it runs. */
void pflex_h1_call_reset(struct pflex_http_call *call);

/* Fail call with why (cut to call->error's room): ok and status 0. */
void pflex_h1_call_fail(struct pflex_http_call *call, const char *why);

/* Fail call as an answer over max bytes ("answer over N MiB" or "... N
 * bytes"), too_big set. */
void pflex_h1_call_too_big(struct pflex_http_call *call, size_t max);

/* The answer parser alone, no socket (for fuzz/fuzz_h1client.c): in[0..len)
 * read in pieces of piece bytes (0: at once), as recv(2) would hand them,
 * then the connection closed when eof.  1 an answer (*status, the body
 * decoded into *body, malloc'd and NUL-terminated, *body_len); 0 not whole
 * yet; -1 not HTTP; -2 over max bytes; -3 a malformed chunk; -4 out of
 * memory; -5 a body past what was read (a bug). */
int pflex_h1_parse_answer(const char *in, size_t len, size_t piece, int eof, size_t max, long *status, char **body,
                          size_t *body_len);

#endif
