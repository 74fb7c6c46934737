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
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/http.h"
#include "pflex/prom.h"

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

static void test_client_batch(void **state)
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
                                       .accept = "application/json"};
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prom_text),
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test(test_listen_addresses),
        cmocka_unit_test(test_json_body),
        cmocka_unit_test(test_server_roundtrip),
        cmocka_unit_test(test_client_batch),
        cmocka_unit_test(test_starvation_one_thread),
        cmocka_unit_test(test_starvation_pool),
    };
    return cmocka_run_group_tests_name("net", tests, NULL, NULL);
}
