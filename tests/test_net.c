/* test_net.c — the HTTP and Prometheus glue of src/lib/net/: the text
 * writer's escaping and number forms, secret comparison, listen addresses,
 * the JSON body reader, and a server on a loopback port picked by the
 * kernel, polled from a thread while the client (libcurl) talks to it:
 * answers, 404 from the handler, 413 before the body is read, 429 with
 * Retry-After. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prom_text),
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test(test_listen_addresses),
        cmocka_unit_test(test_json_body),
        cmocka_unit_test(test_server_roundtrip),
    };
    return cmocka_run_group_tests_name("net", tests, NULL, NULL);
}
