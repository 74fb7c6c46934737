/* test_net.c — the HTTP and Prometheus glue of src/lib/net/: the text
 * writer's escaping and number forms, secret comparison, listen addresses,
 * the JSON body reader, and a server on a loopback port picked by the
 * kernel, polled from a thread while the client (libcurl) talks to it:
 * answers, 404 from the handler, 413 before the body is read, 429 with
 * Retry-After; and the batch client: many requests at once over kept
 * connections, a port nobody listens on, a server that never answers, an
 * answer over the size limit; and starvation: 64 connections trickling
 * their headers from four addresses neither lock a new client out nor
 * outlive the request deadline, and refusals are logged.  Loopback only
 * (127.0.0.2-5 are loopback aliases on Linux); every wait is bounded. */
#define _GNU_SOURCE     /* memmem, strcasestr: the scripted server */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/net/http.h"
#include "pflex/net/prom.h"
#include "lib/net/h1client.h"

static void test_prom_text(void **state)
{
    pflex_prom_t *p = pflex_prom_create();
    assert_non_null(p);
    pflex_prom_family(p, "x_watts", "gauge", "Power\nin \\W");
    pflex_prom_sample(p, "x_watts", (const char *const[]){"gpu", "0", "name", "a\"b\\c\nd", NULL},
                      450);
    pflex_prom_sample(p, "x_watts", NULL, 0.25);
    pflex_prom_sample(p, "x_watts", NULL, NAN);        /* left out */
    pflex_prom_sample(p, "x_watts", NULL, INFINITY);   /* left out */
    size_t len;
    const char *t = pflex_prom_text(p, &len);
    assert_string_equal(t, "# HELP x_watts Power\\nin \\\\W\n# TYPE x_watts gauge\n"
                           "x_watts{gpu=\"0\",name=\"a\\\"b\\\\c\\nd\"} 450\nx_watts 0.25\n");
    assert_int_equal(len, strlen(t));
    char *taken = pflex_prom_take(p, &len);
    assert_int_equal(len, strlen(taken));
    free(taken);
    assert_string_equal(pflex_prom_text(p, NULL), "");
    /* the text grows past many doublings of its room, whole */
    for (int i = 0; i < 20000; i++)
        pflex_prom_sample(p, "x_watts", (const char *const[]){"gpu", "7", NULL}, i);
    t = pflex_prom_text(p, &len);
    assert_non_null(t);
    assert_int_equal(len, strlen(t));
    assert_int_equal(len, 20000 * (strlen("x_watts{gpu=\"7\"} ") + 1) + 10 + 90 * 2 + 900 * 3 + 9000 * 4 + 10000 * 5);
    assert_non_null(strstr(t, "x_watts{gpu=\"7\"} 19999\n"));
    pflex_prom_destroy(p);
}

static void test_secret_equal(void **state)
{
    assert_true(pflex_http_secret_equal("abcdef0123456789", "abcdef0123456789"));
    assert_false(pflex_http_secret_equal("abcdef0123456789", "abcdef012345678"));
    assert_false(pflex_http_secret_equal("abcdef0123456789", "abcdef01234567890"));
    assert_false(pflex_http_secret_equal("abcdef0123456789", "bbcdef0123456789"));
    assert_false(pflex_http_secret_equal("abcdef0123456789", ""));
    assert_false(pflex_http_secret_equal("", ""));      /* no secret: nothing matches */
}

static void test_listen_addresses(void **state)
{
    assert_int_equal(pflex_http_listen_is_loopback("127.0.0.1:9410"), 1);
    assert_int_equal(pflex_http_listen_is_loopback("127.3.2.1:0"), 1);
    assert_int_equal(pflex_http_listen_is_loopback("localhost:80"), 1);
    assert_int_equal(pflex_http_listen_is_loopback("[::1]:9410"), 1);
    assert_int_equal(pflex_http_listen_is_loopback("0.0.0.0:9410"), 0);
    assert_int_equal(pflex_http_listen_is_loopback("10.1.2.3:9410"), 0);
    assert_int_equal(pflex_http_listen_is_loopback("[::]:9410"), 0);
    assert_int_equal(pflex_http_listen_is_loopback("127.0.0.1"), -1);
    assert_int_equal(pflex_http_listen_is_loopback("127.0.0.1:65536"), -1);
    assert_int_equal(pflex_http_listen_is_loopback("nohost:1"), -1);
    assert_int_equal(pflex_http_listen_is_loopback("[::1:1"), -1);
    assert_int_equal(pflex_http_listen_is_loopback(""), -1);
}

static void test_json_body(void **state)
{
    pflex_error_t err;
    struct pflex_http_request r = {.body = "{\"a\": 1}", .body_len = 8};
    json_t *j = pflex_http_json_body(&r, 100, &err);
    assert_non_null(j);
    json_decref(j);
    r.body = "{\"a\": [1,";
    r.body_len = strlen(r.body);
    assert_null(pflex_http_json_body(&r, 100, &err));
    assert_non_null(strstr(err.text, "body:1:"));
    r.body = "[1]";
    r.body_len = 3;
    assert_null(pflex_http_json_body(&r, 100, &err));
    assert_non_null(strstr(err.text, "object"));
    r.body = "{\"a\": 1, \"a\": 2}";
    r.body_len = strlen(r.body);
    assert_null(pflex_http_json_body(&r, 100, &err));     /* duplicate keys */
    r.body = "{\"a\": 1}";
    r.body_len = 8;
    assert_null(pflex_http_json_body(&r, 4, &err));
    assert_non_null(strstr(err.text, "over the limit"));
    r.body = "";
    r.body_len = 0;
    assert_null(pflex_http_json_body(&r, 100, &err));
}

/* ---- a live server --------------------------------------------------- */

struct live {
    pflex_http_server_t *s;
    volatile int stop;
    unsigned handled;
};

static void handler(void *ud, const struct pflex_http_request *req, struct pflex_http_response *r)
{
    struct live *l = ud;
    l->handled++;
    if (!strcmp(req->path, "/big")) {
        static char big[5000];
        memset(big, 'b', sizeof big);
        pflex_http_respond_text(r, 200, "text/plain", big, sizeof big);
        return;
    }
    if (!strcmp(req->path, "/echo")) {
        const char *h = pflex_http_header(req, "X-Test");
        const char *q = pflex_http_query(req, "q");
        pflex_http_respond_json(r, 200, json_pack("{s:s, s:s, s:s, s:s, s:I}", "method",
                                                  req->method, "body", req->body, "x",
                                                  h ? h : "", "q", q ? q : "", "len",
                                                  (json_int_t)req->body_len));
        return;
    }
    pflex_http_respond_error(r, 404, "no %s", req->path);
}

static void *serve(void *arg)
{
    struct live *l = arg;
    while (!l->stop)
        pflex_http_server_run(l->s, 0.05, NULL);
    return NULL;
}

static void test_server_roundtrip(void **state)
{
    struct live l = {0};
    pflex_error_t err;
    struct pflex_http_limits lim = {.max_body = 64, .write_rate = 1, .write_burst = 2};
    if (pflex_http_server_start("127.0.0.1:0", &lim, handler, &l, &l.s, &err))
        fail_msg("start: %s", err.text);
    unsigned port = pflex_http_server_port(l.s);
    assert_true(port > 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, serve, &l), 0);
    char url[128];
    long status;
    char *body;
    snprintf(url, sizeof url, "http://127.0.0.1:%u/echo?q=hi", port);
    assert_int_equal(pflex_http_request("GET", url, "tok", NULL, 5, &status, &body, &err), 0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "\"method\": \"GET\""));
    assert_non_null(strstr(body, "\"q\": \"hi\""));
    free(body);
    /* A body within the limit reaches the handler whole. */
    assert_int_equal(pflex_http_request("PUT", url, NULL, "{\"x\": 1}", 5, &status, &body, &err),
                     0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "\"len\": 8"));
    free(body);
    /* Over max_body: 413 without calling the handler. */
    unsigned before = l.handled;
    char big[200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(pflex_http_request("PUT", url, NULL, big, 5, &status, &body, &err), 0);
    assert_int_equal(status, 413);
    free(body);
    assert_int_equal(l.handled, before);
    /* Writes beyond the rate (1/s, burst 2; two spent above): 429. */
    assert_int_equal(pflex_http_request("POST", url, NULL, "{}", 5, &status, &body, &err), 0);
    assert_int_equal(status, 429);
    assert_non_null(strstr(body, "too many requests"));
    free(body);
    /* Reads have no limit here. */
    snprintf(url, sizeof url, "http://127.0.0.1:%u/nothing", port);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(pflex_http_request("GET", url, NULL, NULL, 5, &status, &body, &err), 0);
        assert_int_equal(status, 404);
        free(body);
    }
    unsigned long counts[6];
    pflex_http_server_counts(l.s, counts);
    assert_int_equal(counts[2], 2);
    assert_int_equal(counts[4], 7);
    l.stop = 1;
    pthread_join(th, NULL);
    pflex_http_server_stop(l.s);
    /* Nobody listens now: the client fails with a message. */
    assert_int_equal(pflex_http_request("GET", url, NULL, NULL, 2, &status, &body, &err), -1);
    assert_non_null(strstr(err.text, "GET http://127.0.0.1"));
    /* A listen address that does not parse is refused. */
    assert_int_equal(pflex_http_server_start("127.0.0.1:bad", NULL, handler, &l, &l.s, &err), -1);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- starvation ------------------------------------------------------ */

struct logbook {
    pthread_mutex_t mu;
    unsigned n;
    char line[128][512];
};

static void log_line(void *ud, const char *line)
{
    struct logbook *lb = ud;
    pthread_mutex_lock(&lb->mu);
    if (lb->n < 128)
        snprintf(lb->line[lb->n++], sizeof lb->line[0], "%s", line);
    pthread_mutex_unlock(&lb->mu);
}

static int logged(struct logbook *lb, const char *what)
{
    int found = 0;
    pthread_mutex_lock(&lb->mu);
    for (unsigned i = 0; i < lb->n && !found; i++)
        found = strstr(lb->line[i], what) != NULL;
    pthread_mutex_unlock(&lb->mu);
    return found;
}

static void hello(void *ud, const struct pflex_http_request *req, struct pflex_http_response *r)
{
    pflex_http_respond_text(r, 200, "text/plain", "hello\n", 6);
}

/* A TCP connection from address src to the server. */
static int connect_from(const char *src, unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in me = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, src, &me.sin_addr), 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof me), 0);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons((uint16_t)port);
    assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof to), 0);
    return fd;
}

/* 1 when the server has closed fd (end of stream or reset), waiting at
 * most s seconds; what it sent before is skipped. */
static int closed_within(int fd, double s)
{
    double end = mono() + s;
    for (;;) {
        double left = end - mono();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0) > 0) {
            char buf[256];
            ssize_t got = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
                return 1;
        }
        if (mono() >= end)
            return 0;
    }
}

static void starvation(unsigned threads)
{
    struct logbook *lb = calloc(1, sizeof *lb);
    assert_non_null(lb);
    pthread_mutex_init(&lb->mu, NULL);
    struct live l = {0};
    pflex_error_t err;
    struct pflex_http_limits lim = {.max_conns = 64, .per_peer_conns = 16, .threads = threads,
                                    .request_timeout_s = 2, .timeout_s = 30,
                                    .log = log_line, .log_ud = lb};
    if (pflex_http_server_start("127.0.0.1:0", &lim, hello, &l, &l.s, &err))
        fail_msg("start: %s", err.text);
    unsigned port = pflex_http_server_port(l.s);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, serve, &l), 0);
    /* 64 connections, 16 from each of four addresses, trickling headers. */
    int slow[64];
    char src[24];
    double opened = mono();
    for (int k = 0; k < 64; k++) {
        snprintf(src, sizeof src, "127.0.0.%d", 2 + k / 16);
        slow[k] = connect_from(src, port);
        static const char start[] = "GET /hello HTTP/1.1\r\nHost: x\r\n";
        assert_int_equal(send(slow[k], start, sizeof start - 1, MSG_NOSIGNAL),
                         (ssize_t)sizeof start - 1);
    }
    struct timespec nap = {0, 200000000};
    nanosleep(&nap, NULL);      /* let the server accept them all */
    /* A 17th from one of them is over its address's limit: refused, said. */
    int extra = connect_from("127.0.0.2", port);
    assert_true(closed_within(extra, 1.0));
    close(extra);
    assert_true(logged(lb, "refused a connection from 127.0.0.2: it has 16 open"));
    /* A new client is served at once: the oldest unfinished connection of
     * an address holding the most makes way. */
    double t0 = mono();
    int fresh = connect_from("127.0.0.1", port);
    static const char get[] = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(send(fresh, get, sizeof get - 1, MSG_NOSIGNAL), (ssize_t)sizeof get - 1);
    char resp[512] = "";
    size_t have = 0;
    while (have + 1 < sizeof resp && mono() - t0 < 1.5) {
        struct pollfd p = {.fd = fresh, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t got = recv(fresh, resp + have, sizeof resp - 1 - have, 0);
        if (got <= 0)
            break;
        have += (size_t)got;
    }
    resp[have] = '\0';
    close(fresh);
    assert_non_null(strstr(resp, "HTTP/1.1 200"));
    assert_non_null(strstr(resp, "hello"));
    assert_true(mono() - t0 < 1.5);
    assert_true(logged(lb, "all 64 connections in use: closed the oldest unfinished one of "
                           "127.0.0."));
    /* Trickling one byte a connection every 0.1 s keeps none alive past
     * the 2-s deadline: all are closed within it plus the sweep's slack. */
    int open_left = 64;
    int gone[64] = {0};
    while (open_left && mono() - opened < 2 + 2.5) {
        for (int k = 0; k < 64; k++) {
            if (gone[k])
                continue;
            send(slow[k], "X", 1, MSG_NOSIGNAL);
            if (closed_within(slow[k], 0.001)) {
                gone[k] = 1;
                open_left--;
            }
        }
        struct timespec tick = {0, 100000000};
        nanosleep(&tick, NULL);
    }
    assert_int_equal(open_left, 0);
    assert_true(mono() - opened > 1.9);     /* by the deadline, not before */
    assert_true(logged(lb, "no complete request in 2 s (--request-timeout)"));
    for (int k = 0; k < 64; k++)
        close(slow[k]);
    l.stop = 1;
    pthread_join(th, NULL);
    pflex_http_server_stop(l.s);
    pthread_mutex_destroy(&lb->mu);
    free(lb);
}

static void test_starvation_one_thread(void **state)
{
    starvation(1);
}

static void test_starvation_pool(void **state)
{
    starvation(4);
}

/* A loopback socket: listening (it accepts in the kernel and never
 * answers) or closed again (its port then refuses).  Its port. */
static unsigned loopback_socket(int listening, int *fd_out)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    if (listening)
        assert_int_equal(listen(fd, 16), 0);
    else
        close(fd);
    *fd_out = listening ? fd : -1;
    return ntohs(sa.sin_port);
}

struct tally {
    unsigned done;
};

static void count_done(void *ud, struct pflex_http_call *call)
{
    ((struct tally *)ud)->done++;
    assert_true(call->ok || call->error[0]);
}

/* The batch client over libcurl (direct 0) or, for its plain http://
 * calls, its own HTTP/1.1 engine (direct 1): the same answers and errors. */
static void client_batch(int direct)
{
    struct live l = {0};
    pflex_error_t err;
    struct pflex_http_limits lim = {.max_body = 4096, .max_conns = 256, .per_peer_conns = 128};
    if (pflex_http_server_start("127.0.0.1:0", &lim, handler, &l, &l.s, &err))
        fail_msg("start: %s", err.text);
    unsigned port = pflex_http_server_port(l.s);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, serve, &l), 0);
    struct pflex_http_client_opts o = {.parallel = 16, .timeout_s = 1, .max_response = 4096,
                                       .accept = "application/json", .direct_http1 = direct};
    pflex_http_client_t *c;
    assert_int_equal(pflex_http_client_create(&o, &c, &err), 0);

    /* Many at once: every one answered with its own body, over at most
     * 16 connections, which the second batch reuses. */
    enum { N = 200 };
    static struct pflex_http_call calls[N];
    static char urls[N][96], bodies[N][32];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            snprintf(urls[i], sizeof urls[i], "http://127.0.0.1:%u/echo?q=%d", port, i);
            snprintf(bodies[i], sizeof bodies[i], "{\"i\": %d}", i);
            calls[i] = (struct pflex_http_call){.method = i % 2 ? "PUT" : "GET", .url = urls[i],
                                                .body = i % 2 ? bodies[i] : NULL, .token = "tok"};
        }
        struct tally t = {0};
        double t0 = mono();
        assert_int_equal(pflex_http_client_run(c, calls, N, count_done, &t, &err), 0);
        assert_true(mono() - t0 < 10);
        assert_int_equal(t.done, N);
        for (int i = 0; i < N; i++) {
            char want[64];
            assert_int_equal(calls[i].ok, 1);
            assert_int_equal(calls[i].status, 200);
            snprintf(want, sizeof want, "\"q\": \"%d\"", i);
            assert_non_null(strstr(calls[i].resp, want));
            assert_non_null(strstr(calls[i].resp, i % 2 ? "\"method\": \"PUT\"" : "\"method\": \"GET\""));
            if (i % 2) {
                /* the server echoes the body it got, JSON-escaped */
                char echoed[64];
                snprintf(echoed, sizeof echoed, "\"body\": \"{\\\"i\\\": %d}\"", i);
                assert_non_null(strstr(calls[i].resp, echoed));
            }
            assert_int_equal(calls[i].resp_len, strlen(calls[i].resp));
            free(calls[i].resp);
        }
        unsigned long req, conn;
        pflex_http_client_counts(c, &req, &conn);
        assert_int_equal(req, (unsigned long)N * (round + 1));
        assert_true(conn >= 1 && conn <= 16);       /* kept: none new in round 2 */
    }

    /* A port nobody listens on, a server that never answers, an answer
     * over the limit: each its own error, the others answered. */
    int hang_fd, gone_fd;
    unsigned hang = loopback_socket(1, &hang_fd), gone = loopback_socket(0, &gone_fd);
    char u[5][96];
    snprintf(u[0], sizeof u[0], "http://127.0.0.1:%u/echo?q=a", port);
    snprintf(u[1], sizeof u[1], "http://127.0.0.1:%u/v1/status", gone);
    snprintf(u[2], sizeof u[2], "http://127.0.0.1:%u/v1/status", hang);
    snprintf(u[3], sizeof u[3], "http://127.0.0.1:%u/big", port);
    snprintf(u[4], sizeof u[4], "http://127.0.0.1:%u/nothing", port);
    struct pflex_http_call mixed[5];
    for (int i = 0; i < 5; i++)
        mixed[i] = (struct pflex_http_call){.method = "GET", .url = u[i]};
    double t0 = mono();
    assert_int_equal(pflex_http_client_run(c, mixed, 5, NULL, NULL, &err), 3);
    double took = mono() - t0;
    assert_true(took >= 0.9 && took < 5);           /* the 1 s timeout, once */
    assert_true(mixed[0].ok && mixed[0].status == 200 && strstr(mixed[0].resp, "\"q\": \"a\""));
    assert_true(!mixed[1].ok && mixed[1].status == 0 && !mixed[1].resp);
    assert_non_null(strstr(mixed[1].error, "connect"));
    assert_true(!mixed[2].ok && !mixed[2].too_big);
    assert_non_null(strstr(mixed[2].error, "Timeout"));
    assert_true(!mixed[3].ok && mixed[3].too_big && !mixed[3].resp);
    assert_string_equal(mixed[3].error, "answer over 4096 bytes");
    assert_true(mixed[4].ok && mixed[4].status == 404);     /* an answer, if not a good one */
    free(mixed[0].resp);
    free(mixed[4].resp);
    close(hang_fd);
    /* an empty batch does nothing */
    assert_int_equal(pflex_http_client_run(c, NULL, 0, NULL, NULL, &err), 0);
    pflex_http_client_destroy(c);
    l.stop = 1;
    pthread_join(th, NULL);
    pflex_http_server_stop(l.s);
}

static void test_client_batch(void **state)
{
    client_batch(0);
}

static void test_client_batch_direct(void **state)
{
    client_batch(1);
}

/* ---- the direct engine against a scripted server -------------------- */

/* A server of raw sockets, a thread per connection, that answers each
 * request by its path in a way a client must cope with: in pieces,
 * chunked, to the close, after a 100 Continue, cut short, not at all, not
 * HTTP, or by closing a kept connection without a word.  /echo answers
 * the request's head and body as its body. */
struct script {
    int lfd;
    volatile int stop;
    volatile unsigned accepted;
};

static void nap_ms(int ms)
{
    struct timespec d = {0, ms * 1000000L};
    nanosleep(&d, NULL);
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Send text in pieces of `piece` bytes, a few ms apart. */
static void send_slowly(int fd, const char *p, size_t piece)
{
    size_t n = strlen(p);
    for (size_t i = 0; i < n; i += piece) {
        send_all(fd, p + i, n - i < piece ? n - i : piece);
        nap_ms(2);
    }
}

static void *script_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    static __thread char buf[65536];
    size_t len = 0;
    for (;;) {
        char *end;
        while (!(end = memmem(buf, len, "\r\n\r\n", 4))) {
            ssize_t r = len < sizeof buf - 1 ? recv(fd, buf + len, sizeof buf - 1 - len, 0) : 0;
            if (r <= 0) {
                close(fd);
                return NULL;
            }
            len += (size_t)r;
        }
        size_t head = (size_t)(end + 4 - buf), body = 0;
        buf[len] = '\0';
        const char *cl = strcasestr(buf, "\r\nContent-Length: ");
        if (cl && cl < end)
            body = strtoul(cl + 18, NULL, 10);
        while (len < head + body) {
            ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
            if (r <= 0) {
                close(fd);
                return NULL;
            }
            len += (size_t)r;
        }
        char path[64] = "";
        sscanf(buf, "%*s %63s", path);
        char out[70000];
        int closing = 0;
        if (!strcmp(path, "/echo")) {
            int n = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", head + body);
            memcpy(out + n, buf, head + body);
            send_all(fd, out, (size_t)n + head + body);
        } else if (!strcmp(path, "/pieces"))
            send_slowly(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n"
                            "{\"pieces\": 123}", 7);
        else if (!strcmp(path, "/chunked"))
            send_slowly(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "5\r\nhello\r\n1;ext=1\r\n,\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n", 3);
        else if (!strcmp(path, "/bigchunks")) {
            send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 47);
            for (int k = 0; k < 5; k++) {
                memset(out, 'c', 1000);
                send_all(fd, "3e8\r\n", 5);
                send_all(fd, out, 1000);
                send_all(fd, "\r\n", 2);
            }
            send_all(fd, "0\r\n\r\n", 5);
        } else if (!strcmp(path, "/toclose")) {
            send_slowly(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", 5);
            closing = 1;
        } else if (!strcmp(path, "/http10")) {
            send_all(fd, "HTTP/1.0 200 OK\r\n\r\nold", 22);
            closing = 1;
        } else if (!strcmp(path, "/continue"))
            send_slowly(fd, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", 9);
        else if (!strcmp(path, "/drop")) {
            /* an answer that says nothing of closing, then the close */
            send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngone", 42);
            nap_ms(20);
            closing = 1;
        } else if (!strcmp(path, "/cut")) {
            send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..", 50);
            closing = 1;
        } else if (!strcmp(path, "/nothing"))
            closing = 1;
        else if (!strcmp(path, "/weird")) {
            send_all(fd, "SPDY/9 200 fine\r\n\r\n", 19);
            closing = 1;
        } else
            send_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 45);
        if (closing) {
            close(fd);
            return NULL;
        }
        memmove(buf, buf + head + body, len - head - body);
        len -= head + body;
    }
}

static void *script_serve(void *arg)
{
    struct script *sc = arg;
    while (!sc->stop) {
        struct pollfd p = {.fd = sc->lfd, .events = POLLIN};
        if (poll(&p, 1, 50) != 1)
            continue;
        int fd = accept(sc->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        sc->accepted++;
        pthread_t th;
        if (pthread_create(&th, NULL, script_conn, (void *)(intptr_t)fd) == 0)
            pthread_detach(th);
        else
            close(fd);
    }
    return NULL;
}

static void test_client_direct_script(void **state)
{
    struct script sc = {0};
    unsigned port = loopback_socket(1, &sc.lfd);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, script_serve, &sc), 0);
    pflex_error_t err;
    struct pflex_http_client_opts o = {.parallel = 4, .timeout_s = 2, .max_response = 4096,
                                       .accept = "application/json", .direct_http1 = 1};
    pflex_http_client_t *c;
    assert_int_equal(pflex_http_client_create(&o, &c, &err), 0);

    /* the request as sent: its line, Host, Accept, the token, the body */
    char u[12][96];
    const char *paths[12] = {"/echo", "/pieces", "/chunked", "/toclose", "/http10", "/continue", "/cut",
                             "/nothing", "/weird", "/bigchunks", "/drop", "/missing"};
    for (int i = 0; i < 12; i++)
        snprintf(u[i], sizeof u[i], "http://127.0.0.1:%u%s", port, paths[i]);
    struct pflex_http_call calls[12];
    for (int i = 0; i < 12; i++)
        calls[i] = (struct pflex_http_call){.method = "GET", .url = u[i]};
    calls[0] = (struct pflex_http_call){.method = "PUT", .url = u[0], .body = "{\"caps\": []}", .token = "s3cret"};
    calls[5] = (struct pflex_http_call){.method = "POST", .url = u[5], .body = "{}"};
    assert_int_equal(pflex_http_client_run(c, calls, 12, NULL, NULL, &err), 4);
    char want[256];
    snprintf(want, sizeof want, "PUT /echo HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nAccept: application/json\r\n"
             "Authorization: Bearer s3cret\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n"
             "{\"caps\": []}", port);
    assert_true(calls[0].ok && calls[0].status == 200);
    assert_string_equal(calls[0].resp, want);
    assert_int_equal(calls[0].resp_len, strlen(want));
    assert_true(calls[1].ok && calls[1].status == 200);
    assert_string_equal(calls[1].resp, "{\"pieces\": 123}");
    assert_true(calls[2].ok && calls[2].status == 200);
    assert_string_equal(calls[2].resp, "hello, world");
    assert_int_equal(calls[2].resp_len, 12);
    assert_true(calls[3].ok && calls[3].status == 200);
    assert_string_equal(calls[3].resp, "until the end");
    assert_true(calls[4].ok && calls[4].status == 200);
    assert_string_equal(calls[4].resp, "old");
    assert_true(calls[5].ok && calls[5].status == 201);
    assert_string_equal(calls[5].resp, "ok");
    /* cut short, nothing, not HTTP, over the limit in chunks: each its
     * own error, in libcurl's words (of the version linked) */
    assert_true(!calls[6].ok && !calls[6].resp && calls[6].status == 0);
    assert_non_null(strstr(calls[6].error, "partial file"));
    assert_true(!calls[7].ok && !calls[7].resp);
    assert_non_null(strstr(calls[7].error, "Server returned nothing"));
    assert_true(!calls[8].ok && !calls[8].resp);
    assert_non_null(strstr(calls[8].error, "Weird server reply"));
    assert_true(!calls[9].ok && calls[9].too_big && !calls[9].resp);
    assert_string_equal(calls[9].error, "answer over 4096 bytes");
    assert_true(calls[10].ok && calls[10].status == 200);
    assert_string_equal(calls[10].resp, "gone");
    assert_true(calls[11].ok && calls[11].status == 404 && calls[11].resp_len == 0);
    for (int i = 0; i < 12; i++)
        free(calls[i].resp);

    /* kept connections, one of them closed by the server without a word
     * (/drop): a batch after it is answered, over new connections where
     * needed; a host name goes over libcurl in the same batch */
    nap_ms(50);
    unsigned long req0, conn0, req1, conn1;
    pflex_http_client_counts(c, &req0, &conn0);
    char byname[96];
    snprintf(byname, sizeof byname, "http://localhost:%u/pieces", port);
    struct pflex_http_call again[6];
    for (int i = 0; i < 5; i++)
        again[i] = (struct pflex_http_call){.method = "GET", .url = u[1]};
    again[5] = (struct pflex_http_call){.method = "GET", .url = byname};
    assert_int_equal(pflex_http_client_run(c, again, 6, NULL, NULL, &err), 0);
    for (int i = 0; i < 6; i++) {
        assert_true(again[i].ok && again[i].status == 200);
        assert_string_equal(again[i].resp, "{\"pieces\": 123}");
        free(again[i].resp);
    }
    pflex_http_client_counts(c, &req1, &conn1);
    assert_int_equal(req1 - req0, 6);
    assert_true(conn1 - conn0 <= 5);

    /* a kept connection the server dropped after the client took it:
     * retried once on a new one, answered */
    struct pflex_http_call drop = {.method = "GET", .url = u[10]};
    assert_int_equal(pflex_http_client_run(c, &drop, 1, NULL, NULL, &err), 0);
    free(drop.resp);
    struct pflex_http_call after = {.method = "GET", .url = u[1]};
    assert_int_equal(pflex_http_client_run(c, &after, 1, NULL, NULL, &err), 0);
    assert_string_equal(after.resp, "{\"pieces\": 123}");
    free(after.resp);
    unsigned long req2, conn2;
    pflex_http_client_counts(c, &req2, &conn2);
    assert_int_equal(req2 - req1, 2);
    assert_int_equal(conn2 - conn1, 1);     /* /drop's kept one, then a new one */
    pflex_http_client_destroy(c);
    sc.stop = 1;
    pthread_join(th, NULL);
    close(sc.lfd);
}

/* ---- framing: pipelining, duplicate Content-Length ------------------ */

/* Read from fd until `want` answers ("HTTP/1.1 " lines) are in, or the
 * connection ends, or s seconds pass; the text in buf. */
static unsigned answers_within(int fd, char *buf, size_t cap, unsigned want, double s)
{
    double end = mono() + s;
    size_t n = 0;
    unsigned got = 0;
    buf[0] = '\0';
    while (got < want) {
        double left = end - mono();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            break;
        ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = '\0';
        got = 0;
        for (const char *q = buf; (q = strstr(q, "HTTP/1.1 ")); q++)
            got++;
    }
    return got;
}

static void framing(unsigned threads)
{
    struct live l = {0};
    pflex_error_t err;
    struct pflex_http_limits lim = {.threads = threads};
    if (pflex_http_server_start("127.0.0.1:0", &lim, handler, &l, &l.s, &err))
        fail_msg("start: %s", err.text);
    unsigned port = pflex_http_server_port(l.s);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, serve, &l), 0);
    char buf[8192];
    /* Two requests in one write (pipelined, RFC 9112 9.3.2): both
     * answered, in order, at once (well within the 5 s request deadline). */
    int fd = connect_from("127.0.0.1", port);
    static const char two[] = "PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\none"
                              "GET /echo?q=second HTTP/1.1\r\nHost: t\r\n\r\n";
    double t0 = mono();
    send_all(fd, two, sizeof two - 1);
    assert_int_equal(answers_within(fd, buf, sizeof buf, 2, 3), 2);
    assert_true(mono() - t0 < 1);
    char *first = strstr(buf, "\"body\": \"one\""), *second = strstr(buf, "\"q\": \"second\"");
    assert_non_null(first);
    assert_non_null(second);
    assert_true(first < second);
    close(fd);
    /* Two Content-Length headers, equal or not: 400, the handler never
     * called, and the connection closed (its framing is in doubt). */
    static const char *const dup[] = {
        "PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\none",
        "PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\ncontent-length: 9\r\n\r\none",
    };
    for (int k = 0; k < 2; k++) {
        unsigned before = l.handled;
        fd = connect_from("127.0.0.1", port);
        send_all(fd, dup[k], strlen(dup[k]));
        assert_int_equal(answers_within(fd, buf, sizeof buf, 1, 3), 1);
        if (!strstr(buf, "HTTP/1.1 400"))
            fail_msg("duplicate Content-Length answered: %.200s", buf);
        assert_non_null(strstr(buf, "Content-Length headers"));
        assert_int_equal(l.handled, before);
        assert_true(closed_within(fd, 2));
        close(fd);
    }
    l.stop = 1;
    pthread_join(th, NULL);
    pflex_http_server_stop(l.s);
}

static void test_framing_one_thread(void **state)
{
    framing(1);
}

static void test_framing_pool(void **state)
{
    framing(4);
}

/* The HTTP/1.1 client's answer parser alone: the same outcome whole and
 * one byte at a time. */
static int parse_both(const char *in, size_t max, int eof, long *st, char **body, size_t *len)
{
    long st1;
    char *b1;
    size_t l1;
    int r = pflex_h1_parse_answer(in, strlen(in), 0, eof, max, st, body, len);
    int r1 = pflex_h1_parse_answer(in, strlen(in), 1, eof, max, &st1, &b1, &l1);
    assert_int_equal(r, r1);
    if (r == 1)
        assert_true(st1 == *st && l1 == *len && !memcmp(b1, *body, l1));
    free(b1);
    return r;
}

static void test_h1_answers(void **state)
{
    long st;
    char *b;
    size_t n;
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 100, 0, &st, &b, &n), 1);
    assert_true(st == 200 && n == 5 && !strcmp(b, "hello"));
    free(b);
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n1\r\n!\r\n"
                                "0\r\nT: 1\r\n\r\n", 100, 0, &st, &b, &n), 1);
    assert_string_equal(b, "hello!");
    free(b);
    /* a folded field goes on with the one before: here the chunked coding */
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 100, 0,
                                &st, &b, &n), 1);
    assert_string_equal(b, "ok");
    free(b);
    /* a folded length, lengths that differ, one past 64 bits: not HTTP */
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n 6\r\n\r\nhello", 100, 0, &st, &b, &n), -1);
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 100, 0, &st, &b,
                                &n), -1);
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 100, 0, &st, &b,
                                &n), 1);
    free(b);
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", 100, 0, &st, &b,
                                &n), -1);
    /* over the answer limit, by its length or its chunks */
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n", 100, 0, &st, &b, &n), -2);
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n", 100, 0, &st,
                                &b, &n), -2);
    assert_int_equal(parse_both("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", 100, 0, &st,
                                &b, &n), -3);
    /* 100 Continue skipped; to the close; not whole yet */
    assert_int_equal(parse_both("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", 100, 0,
                                &st, &b, &n), 1);
    assert_true(st == 201 && !strcmp(b, "ok"));
    free(b);
    assert_int_equal(parse_both("HTTP/1.0 200 OK\r\n\r\nto the close", 100, 1, &st, &b, &n), 1);
    assert_string_equal(b, "to the close");
    free(b);
    assert_int_equal(parse_both("HTTP/1.0 200 OK\r\n\r\nto the close", 100, 0, &st, &b, &n), 0);
    /* a chunk-size line past 4 KiB, and a head past 64 KiB, are refused
     * however the bytes come (whole, they used to pass) */
    char *big = malloc(70000);
    int k = snprintf(big, 70000, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;");
    memset(big + k, 'x', 5000);
    strcpy(big + k + 5000, "\r\na\r\n0\r\n\r\n");
    assert_int_equal(parse_both(big, 100, 0, &st, &b, &n), -3);
    k = snprintf(big, 70000, "HTTP/1.1 200 OK\r\nX: ");
    memset(big + k, 'x', 66000);
    strcpy(big + k + 66000, "\r\nContent-Length: 0\r\n\r\n");
    assert_int_equal(parse_both(big, 100, 0, &st, &b, &n), -1);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prom_text),
        cmocka_unit_test(test_h1_answers),
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test(test_listen_addresses),
        cmocka_unit_test(test_json_body),
        cmocka_unit_test(test_server_roundtrip),
        cmocka_unit_test(test_client_batch),
        cmocka_unit_test(test_client_batch_direct),
        cmocka_unit_test(test_client_direct_script),
        cmocka_unit_test(test_starvation_one_thread),
        cmocka_unit_test(test_starvation_pool),
        cmocka_unit_test(test_framing_one_thread),
        cmocka_unit_test(test_framing_pool),
    };
    return cmocka_run_group_tests_name("net", tests, NULL, NULL);
}
