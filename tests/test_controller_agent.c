/* test_controller_agent.c — the controller's reading of the agent's JSON
 * (src/controller/agent_client.c): the shapes it assumes, and malformed or
 * hostile answers refused without a crash. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include <jansson.h>
#include "controller/agent_client.h"
#include "controller/controller.h"
#include "controller/prom_source.h"

static void test_status(void **state)
{
    const char *ok =
        "{\"hostname\":\"node-01\",\"gpus\":["
        "{\"gpu\":0,\"uuid\":\"GPU-a\",\"power_w\":512.5,\"limit_w\":600,\"enforced_w\":600,\"min_w\":200,\"max_w\":700,\"ok\":true,\"lease\":null},"
        "{\"gpu\":1,\"uuid\":\"GPU-b\",\"power_w\":null,\"limit_w\":550,\"min_w\":200,\"max_w\":700,\"ok\":false,\"error\":\"lost\",\"extra\":[1,2]}],"
        "\"jobs\":[{\"job\":\"train-1\",\"gpus\":[0,1],\"tokens_total\":9e6,\"throughput\":1234.5},{\"job\":\"idle-job\",\"gpus\":[],\"throughput\":null}]}";
    struct agent_status st;
    pflex_error_t err;
    if (agent_parse_status(ok, strlen(ok), &st, &err) < 0)
        fail_msg("%s", err.text);
    assert_string_equal(st.host, "node-01");
    assert_int_equal(st.ngpus, 2);
    assert_true(st.gpu[0].power_w == 512.5 && st.gpu[0].limit_w == 600 && st.gpu[0].ok);
    assert_true(isnan(st.gpu[1].power_w));      /* no reading: telemetry missing */
    assert_true(st.gpu[1].limit_w == 550 && !st.gpu[1].ok);
    assert_int_equal(st.njobs, 2);
    assert_string_equal(st.job[0].name, "train-1");
    assert_int_equal(st.job[0].ngpus, 2);
    assert_true(st.job[0].throughput == 1234.5);
    assert_string_equal(st.job[1].name, "idle-job");
    assert_true(isnan(st.job[1].throughput));
    const char *bad[] = {
        "", "[]", "{", "null", "{\"gpus\":{}}", "{\"gpus\":[{\"gpu\":-1,\"min_w\":1,\"max_w\":2}]}",
        "{\"gpus\":[{\"gpu\":0}]}", "{\"gpus\":[{\"gpu\":0,\"min_w\":300,\"max_w\":200}]}",
        "{\"gpus\":[{\"gpu\":\"0\",\"min_w\":1,\"max_w\":2}]}",
        "{\"gpus\":[],\"jobs\":[{\"gpus\":[0]}]}", "{\"gpus\":[],\"jobs\":[{\"job\":\"x\",\"gpus\":[\"a\"]}]}",
        "{\"gpus\":[],\"jobs\":{}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (agent_parse_status(bad[i], strlen(bad[i]), &st, &err) != -1)
            fail_msg("case %zu accepted: %s", i, bad[i]);
    /* more GPUs than an agent may have: refused, not overrun */
    char big[20000] = "{\"gpus\":[";
    for (int i = 0; i < AGENT_MAX_GPUS + 1; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s{\"gpu\":%d,\"min_w\":1,\"max_w\":2}",
                 i ? "," : "", i);
    strcat(big, "]}");
    assert_int_equal(agent_parse_status(big, strlen(big), &st, &err), -1);
    /* a negative or absurd power is no reading */
    const char *neg = "{\"gpus\":[{\"gpu\":0,\"power_w\":-5,\"min_w\":100,\"max_w\":400}]}";
    assert_int_equal(agent_parse_status(neg, strlen(neg), &st, &err), 0);
    assert_true(isnan(st.gpu[0].power_w));
}

static void test_caps_answer(void **state)
{
    struct agent_cap caps[3] = {{.gpu = 0, .cap_w = 500}, {.gpu = 1, .cap_w = 450}, {.gpu = 5, .cap_w = 300}};
    pflex_error_t err;
    const char *ans = "{\"applied\":[{\"gpu\":1,\"limit_w\":450,\"enforced_w\":450},{\"gpu\":0,\"limit_w\":500,\"enforced_w\":499},{\"gpu\":9,\"enforced_w\":1}],\"errors\":[]}";
    assert_int_equal(agent_parse_caps_answer(ans, strlen(ans), caps, 3, &err), 0);
    assert_true(caps[0].enforced_w == 499 && caps[1].enforced_w == 450);
    assert_true(isnan(caps[2].enforced_w));     /* not confirmed */
    assert_int_equal(agent_parse_caps_answer("{}", 2, caps, 3, &err), -1);
    assert_true(isnan(caps[0].enforced_w));
    assert_int_equal(agent_parse_caps_answer("garbage", 7, caps, 3, &err), -1);
}

static void test_client(void **state)
{
    agent_client_t *c;
    pflex_error_t err;
    assert_int_equal(agent_client_create("ftp://x", NULL, 0, &c, &err), -1);
    assert_int_equal(agent_client_create("http://127.0.0.1:1/", "tok", 300, &c, &err), 0);
    assert_string_equal(agent_client_url(c), "http://127.0.0.1:1");
    struct agent_status st;
    assert_int_equal(agent_client_status(c, &st, &err), -1);     /* nobody there: an error, quickly */
    struct agent_cap cap = {.gpu = 0, .cap_w = 500};
    assert_int_equal(agent_client_put_caps(c, &cap, 1, 10, &err), -1);
    agent_client_destroy(c);
}


/* Prometheus answers (controller --prometheus): the agents' metric names
 * grouped by Hostname; a host without a range is unusable; an answer that
 * is not a success, or not JSON, is refused whole. */
static void test_prometheus(void **state)
{
    const char *dcgm =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
        "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\",\"instance\":\"a:1\"},\"value\":[1700000000,\"512.5\"]},"
        "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_MGMT_LIMIT\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"600\"]},"
        "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"1\",\"Hostname\":\"n2\"},\"value\":[1700000000,\"300\"]}]}}";
    const char *own =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
        "{\"metric\":{\"__name__\":\"pflex_gpu_limit_min_watts\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1,\"200\"]},"
        "{\"metric\":{\"__name__\":\"pflex_gpu_limit_max_watts\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1,\"700\"]},"
        "{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1,\"1\"]},"
        "{\"metric\":{\"__name__\":\"pflex_job_throughput\",\"job\":\"scrape\",\"exported_job\":\"train-1\",\"Hostname\":\"n1\"},\"value\":[1,\"1234.5\"]},"
        "{\"metric\":{\"__name__\":\"pflex_job_throughput\",\"job\":\"x\",\"Hostname\":\"n1\"},\"value\":[1,\"NaN\"]},"
        "{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"zz\",\"Hostname\":\"n1\"},\"value\":[1,\"1\"]}]}}";
    prom_source_t *p;
    pflex_error_t err;
    assert_int_equal(prom_source_create("ftp://x", 100, &p, &err), -1);
    assert_int_equal(prom_source_create("http://127.0.0.1:9/", 100, &p, &err), 0);
    if (prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), 1700000000, NULL, &err) < 0)
        fail_msg("%s", err.text);
    struct agent_status st;
    assert_int_equal(prom_source_status(p, "n1", &st), 0);
    assert_int_equal(st.ngpus, 1);
    assert_true(st.gpu[0].index == 0 && st.gpu[0].power_w == 512.5 && st.gpu[0].limit_w == 600);
    assert_true(st.gpu[0].min_w == 200 && st.gpu[0].max_w == 700 && st.gpu[0].ok);
    assert_int_equal(st.njobs, 1);      /* the NaN rate is no reading */
    assert_string_equal(st.job[0].name, "train-1");
    assert_true(st.job[0].throughput == 1234.5);
    assert_int_equal(prom_source_status(p, "n2", &st), -1);    /* no range: unusable */
    assert_int_equal(prom_source_status(p, "n3", &st), -1);    /* not scraped */
    const char *bad[] = {"", "{", "[]", "{\"status\":\"error\",\"error\":\"x\"}",
                         "{\"status\":\"success\",\"data\":{\"result\":{}}}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(prom_source_parse(p, dcgm, strlen(dcgm), bad[i], strlen(bad[i]), 1700000000, NULL, &err), -1);
        assert_int_equal(prom_source_parse(p, bad[i], strlen(bad[i]), own, strlen(own), 1700000000, NULL, &err), -1);
        assert_int_equal(prom_source_status(p, "n1", &st), -1);     /* nothing kept of a bad read */
    }
    /* unreachable: an error, no crash */
    assert_int_equal(prom_source_read(p, 1700000000, NULL, &err), -1);
    prom_source_destroy(p);
}

/* An answer judged before it is believed: stale stamps, an empty result,
 * NaN for a GPU that is up each fail the read (and say so); NaN for a GPU
 * its agent says is down, or for a job's rate, does not. */
static void test_prometheus_judged(void **state)
{
    (void)state;
    char dcgm[2048], own[2048];
    const char *own_fmt =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
        "{\"metric\":{\"__name__\":\"pflex_gpu_limit_min_watts\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[%.0f,\"200\"]},"
        "{\"metric\":{\"__name__\":\"pflex_gpu_limit_max_watts\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[%.0f,\"700\"]},"
        "{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[%.0f,\"%s\"]},"
        "{\"metric\":{\"__name__\":\"pflex_job_throughput\",\"job\":\"j\",\"Hostname\":\"n1\"},\"value\":[%.0f,\"NaN\"]}]}}";
    const char *dcgm_fmt =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
        "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[%.0f,\"%s\"]},"
        "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_MGMT_LIMIT\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[%.0f,\"600\"]}]}}";
    const char *empty = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}";
    double now = 1700000000;
    prom_source_t *p;
    pflex_error_t err;
    struct agent_status st;
    int stale;
    assert_int_equal(prom_source_create("http://127.0.0.1:9/", 100, &p, &err), 0);
    prom_source_set_max_age(p, 30);
    /* fresh: 20 s old is within 30 s */
    snprintf(own, sizeof own, own_fmt, now - 20, now - 20, now - 20, "1", now - 20);
    snprintf(dcgm, sizeof dcgm, dcgm_fmt, now - 20, "512.5", now - 20);
    if (prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), now, &stale, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(stale, 0);
    assert_int_equal(prom_source_status(p, "n1", &st), 0);
    /* a ten-minute-old answer replayed: stale, nothing kept */
    snprintf(dcgm, sizeof dcgm, dcgm_fmt, now - 600, "512.5", now - 600);
    assert_int_equal(prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), now, &stale, &err), -1);
    assert_int_equal(stale, 1);
    assert_non_null(strstr(err.text, "600 s old"));
    assert_int_equal(prom_source_status(p, "n1", &st), -1);
    /* stamps from the future are no fresher */
    snprintf(dcgm, sizeof dcgm, dcgm_fmt, now + 120, "512.5", now);
    assert_int_equal(prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), now, &stale, &err), -1);
    assert_int_equal(stale, 1);
    /* an empty result of either query: down, not stale */
    snprintf(dcgm, sizeof dcgm, dcgm_fmt, now, "512.5", now);
    assert_int_equal(prom_source_parse(p, empty, strlen(empty), own, strlen(own), now, &stale, &err), -1);
    assert_int_equal(stale, 0);
    assert_non_null(strstr(err.text, "empty result"));
    assert_int_equal(prom_source_parse(p, dcgm, strlen(dcgm), empty, strlen(empty), now, &stale, &err), -1);
    assert_non_null(strstr(err.text, "empty result"));
    /* NaN power for a GPU that is up */
    snprintf(dcgm, sizeof dcgm, dcgm_fmt, now, "NaN", now);
    assert_int_equal(prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), now, &stale, &err), -1);
    assert_int_equal(stale, 0);
    assert_non_null(strstr(err.text, "NaN for GPU 0 of host 'n1'"));
    assert_int_equal(prom_source_status(p, "n1", &st), -1);
    /* ... and for one that is down: what its agent exports for it */
    snprintf(own, sizeof own, own_fmt, now, now, now, "0", now);
    if (prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), now, &stale, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(prom_source_status(p, "n1", &st), 0);
    assert_false(st.gpu[0].ok);
    /* a NaN range for a GPU that is up */
    snprintf(own, sizeof own, own_fmt, now, now, now, "1", now);
    char *mx = strstr(own, "\"700\"");
    memcpy(mx, "\"NaN\"", 5);
    snprintf(dcgm, sizeof dcgm, dcgm_fmt, now, "512.5", now);
    assert_int_equal(prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), now, &stale, &err), -1);
    /* unchecked without a bound */
    prom_source_set_max_age(p, 0);
    snprintf(own, sizeof own, own_fmt, now - 600, now - 600, now - 600, "1", now - 600);
    snprintf(dcgm, sizeof dcgm, dcgm_fmt, now - 600, "512.5", now - 600);
    assert_int_equal(prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), now, &stale, &err), 0);
    prom_source_destroy(p);
}

/* Many agents at once against a loopback server that answers for two
 * (/a and /b; /b's caps fail on GPU 1 with 502), and a third agent on a
 * port nobody listens on: each agent its own result. */
struct fake {
    pflex_http_server_t *s;
    volatile int stop;
};

static void fake_agent(void *ud, const struct pflex_http_request *req, struct pflex_http_response *r)
{
    (void)ud;
    int b = !strncmp(req->path, "/b/", 3);
    if (!strcmp(req->path + 2, "/v1/status")) {
        char body[512];
        snprintf(body, sizeof body, "{\"hostname\":\"node-%c\",\"gpus\":[{\"gpu\":0,\"power_w\":300,"
                 "\"limit_w\":700,\"min_w\":200,\"max_w\":700},{\"gpu\":1,\"power_w\":310,\"limit_w\":700,"
                 "\"min_w\":200,\"max_w\":700}],\"jobs\":[]}", b ? 'b' : 'a');
        pflex_http_respond_text(r, 200, "application/json", body, strlen(body));
    } else if (!strcmp(req->path + 2, "/v1/caps") && !strcmp(req->method, "PUT")) {
        const char *auth = pflex_http_header(req, "Authorization");
        if (!auth || strcmp(auth, "Bearer tok")) {
            pflex_http_respond_error(r, 401, "bad token");
            return;
        }
        const char *ok = "{\"applied\":[{\"gpu\":0,\"enforced_w\":450},{\"gpu\":1,\"enforced_w\":460}],\"errors\":[]}";
        const char *part = "{\"applied\":[{\"gpu\":0,\"enforced_w\":450}],\"errors\":[{\"gpu\":1}]}";
        pflex_http_respond_text(r, b ? 502 : 200, "application/json", b ? part : ok, strlen(b ? part : ok));
    } else
        pflex_http_respond_error(r, 404, "no %s", req->path);
}

static void *fake_serve(void *arg)
{
    struct fake *f = arg;
    while (!f->stop)
        pflex_http_server_run(f->s, 0.05, NULL);
    return NULL;
}

static void test_batch(void **state)
{
    struct fake f = {0};
    pflex_error_t err;
    if (pflex_http_server_start("127.0.0.1:0", NULL, fake_agent, &f, &f.s, &err) < 0)
        fail_msg("%s", err.text);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fake_serve, &f), 0);
    unsigned port = pflex_http_server_port(f.s);
    char url[3][64];
    snprintf(url[0], sizeof url[0], "http://127.0.0.1:%u/a", port);
    snprintf(url[1], sizeof url[1], "http://127.0.0.1:%u/b", port);
    snprintf(url[2], sizeof url[2], "http://127.0.0.1:1");
    agent_client_t *ag[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(agent_client_create(url[i], "tok", 1000, &ag[i], &err), 0);
    pflex_http_client_t *http;
    assert_int_equal(agent_client_http_create(1000, 4, 0, NULL, &http, &err), 0);

    static struct agent_status st[4];
    memset(st, 0, sizeof st);
    snprintf(st[2].host, sizeof st[2].host, "kept");
    struct agent_read rd[4] = {{.agent = ag[0], .out = &st[0]}, {.agent = ag[1], .out = &st[1]},
                               {.agent = ag[2], .out = &st[2]}, {.agent = NULL, .out = &st[3]}};
    assert_int_equal(agent_client_status_many(http, rd, 4, &err), 0);
    assert_true(rd[0].ok && rd[1].ok && !rd[2].ok && !rd[3].ok);
    assert_string_equal(st[0].host, "node-a");
    assert_string_equal(st[1].host, "node-b");
    assert_int_equal(st[1].ngpus, 2);
    assert_string_equal(st[2].host, "kept");            /* a failure leaves it as it was */
    assert_non_null(strstr(rd[2].err.text, "GET http://127.0.0.1:1/v1/status: "));

    struct agent_cap caps[3][2] = {{{.gpu = 0, .cap_w = 450}, {.gpu = 1, .cap_w = 460}}, {{.gpu = 0, .cap_w = 450}, {.gpu = 1, .cap_w = 460}}, {{.gpu = 0, .cap_w = 450}}};
    struct agent_push p[3] = {{.agent = ag[0], .caps = caps[0], .n = 2}, {.agent = ag[1], .caps = caps[1], .n = 2},
                              {.agent = ag[2], .caps = caps[2], .n = 1}};
    assert_int_equal(agent_client_put_caps_many(http, p, 3, 15, &err), 0);
    assert_true(p[0].ok && !p[1].ok && !p[2].ok);
    assert_true(caps[0][0].enforced_w == 450 && caps[0][1].enforced_w == 460);
    assert_true(caps[1][0].enforced_w == 450 && isnan(caps[1][1].enforced_w));  /* 502: the one set */
    assert_non_null(strstr(p[1].err.text, "HTTP 502"));
    assert_true(isnan(caps[2][0].enforced_w));
    /* the second batch goes over the first one's connections: two, and a refused attempt */
    unsigned long req, conn;
    pflex_http_client_counts(http, &req, &conn);
    assert_int_equal(req, 6);
    assert_true(conn <= 4);

    pflex_http_client_destroy(http);
    for (int i = 0; i < 3; i++)
        agent_client_destroy(ag[i]);
    f.stop = 1;
    pthread_join(th, NULL);
    pflex_http_server_stop(f.s);
}

/* The controller's claims after its pushes to the same fake agents: /a
 * takes its caps (ok, its limits confirmed), /b sets one GPU of two (502:
 * failed, one limit confirmed), and with a wrong token both refuse (401:
 * unauthorized); each outcome per node, counted by agent and reason, the
 * worst case from what was confirmed, and the probes. */
static ctl_t *claims_run(const char *const *urls, const char *token, int periods)
{
    struct ctl_config cfg = {.nagents = 2, .agent_urls = urls, .agent_token = token, .period_s = 1,
                             .timeout_ms = 1000};
    ctl_t *c;
    pflex_error_t err;
    if (ctl_create(&cfg, &c, &err) < 0)
        fail_msg("%s", err.text);
    struct ctl_period_result r;
    for (int i = 0; i < periods; i++)
        if (ctl_period(c, 1700000000 + i, &r, &err) < 0)
            fail_msg("%s", err.text);
    return c;
}

static void test_claims_pushes(void **state)
{
    (void)state;
    struct fake f = {0};
    pflex_error_t err;
    if (pflex_http_server_start("127.0.0.1:0", NULL, fake_agent, &f, &f.s, &err) < 0)
        fail_msg("%s", err.text);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fake_serve, &f), 0);
    char url[2][64], why[400];
    snprintf(url[0], sizeof url[0], "http://127.0.0.1:%u/a", pflex_http_server_port(f.s));
    snprintf(url[1], sizeof url[1], "http://127.0.0.1:%u/b", pflex_http_server_port(f.s));
    const char *urls[2] = {url[0], url[1]};

    ctl_t *c = claims_run(urls, "tok", 2);
    json_t *o = ctl_status_json(c, 1700000001);
    json_t *na = json_array_get(json_object_get(o, "nodes"), 0), *nb = json_array_get(json_object_get(o, "nodes"), 1);
    assert_string_equal(json_string_value(json_object_get(na, "push")), "ok");
    assert_string_equal(json_string_value(json_object_get(nb, "push")), "failed");
    assert_int_equal(json_integer_value(json_object_get(nb, "push_http")), 502);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(nb, "push_failures"), "failed")), 2);
    assert_true(json_number_value(json_array_get(json_object_get(nb, "limits_w"), 0)) == 450);
    assert_true(json_is_null(json_array_get(json_object_get(nb, "limits_w"), 1)));
    /* 450 + 460 confirmed by /a, 450 by /b, its GPU 1 at its largest */
    assert_true(json_number_value(json_object_get(o, "worst_w")) == 450 + 460 + 450 + 700);
    assert_int_equal(json_integer_value(json_object_get(o, "unconfirmed_gpus")), 1);
    assert_int_equal(json_integer_value(json_object_get(o, "push_failed")), 1);
    assert_true(json_is_false(json_object_get(o, "completed")));
    json_decref(o);
    size_t len;
    char *text = ctl_metrics(c, 1700000001, &len);
    char line[200];
    snprintf(line, sizeof line, "pflex_controller_push_failures_total{agent=\"%s\",reason=\"failed\"} 2\n", url[1]);
    if (!strstr(text, line))
        fail_msg("no '%s' in\n%s", line, text);
    assert_null(strstr(text, "reason=\"unauthorized\""));
    free(text);
    assert_int_equal(ctl_period_confirmed(c), 0);
    assert_int_equal(ctl_health(c, 1, why, sizeof why), -1);
    assert_non_null(strstr(why, "refused or unanswered"));
    ctl_destroy(c);

    c = claims_run(urls, "wrong", 1);
    o = ctl_status_json(c, 1700000000);
    for (size_t a = 0; a < 2; a++) {
        json_t *n = json_array_get(json_object_get(o, "nodes"), a);
        assert_string_equal(json_string_value(json_object_get(n, "push")), "unauthorized");
        assert_int_equal(json_integer_value(json_object_get(n, "push_http")), 401);
        assert_int_equal(json_integer_value(json_object_get(n, "confirmed_gpus")), 0);
    }
    assert_true(json_number_value(json_object_get(o, "worst_w")) == 4 * 700);
    assert_int_equal(json_integer_value(json_object_get(o, "unconfirmed_gpus")), 4);
    json_decref(o);
    ctl_destroy(c);
    f.stop = 1;
    pthread_join(th, NULL);
    pflex_http_server_stop(f.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_caps_answer),
        cmocka_unit_test(test_client),
        cmocka_unit_test(test_batch),
        cmocka_unit_test(test_prometheus),
        cmocka_unit_test(test_prometheus_judged),
        cmocka_unit_test(test_claims_pushes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
