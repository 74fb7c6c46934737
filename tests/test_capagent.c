/* test_capagent.c — a plan sent to an agent (a small in-process HTTP
 * server standing in for one): jobs by name or by GPU, skipped ones, what
 * took, a GPU that failed, a refusal, another error, no agent. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/net/capagent.h"
#include "pflex/net/http.h"
#include "support/nvml_fixture.h"
#include "support/plan_fixture.h"

/* ---- an agent: GET /v1/jobs, PUT /v1/caps as the test's mode says ---- */

struct agent {
    pflex_http_server_t *s;
    volatile int stop;
    int mode;               /* 0 applies, 1 refuses (400), 2 fails (500), 3 one GPU fails (502) */
    json_t *last_put;
};

static void agent_handler(void *ud, const struct pflex_http_request *req,
                          struct pflex_http_response *r)
{
    struct agent *a = ud;
    if (!strcmp(req->method, "GET") && !strcmp(req->path, "/v1/jobs")) {
        pflex_http_respond_json(r, 200, json_pack("{s:[{s:s}]}", "jobs", "job", "here"));
        return;
    }
    if (strcmp(req->method, "PUT") || strcmp(req->path, "/v1/caps")) {
        pflex_http_respond_error(r, 404, "no %s", req->path);
        return;
    }
    json_decref(a->last_put);
    a->last_put = json_loads(req->body, 0, NULL);
    if (a->mode == 1) {
        pflex_http_respond_error(r, 400, "cap 1 W is outside GPU 0's range");
    } else if (a->mode == 2) {
        pflex_http_respond_error(r, 500, "database on fire");
    } else {
        json_t *ans = json_pack("{s:[{s:i, s:s, s:f, s:{s:s, s:i, s:f}}], s:[]}", "applied",
                                "gpu", 5, "uuid", "GPU-5", "enforced_w", 400.0, "lease",
                                "job", "here", "cap_w", 400, "lease_s", 30.0, "errors");
        if (a->mode == 3)
            json_array_append_new(json_object_get(ans, "errors"),
                                  json_pack("{s:i, s:s}", "gpu", 6, "error", "NVML said no"));
        pflex_http_respond_json(r, a->mode == 3 ? 502 : 200, ans);
    }
}

static void *agent_serve(void *arg)
{
    struct agent *a = arg;
    while (!a->stop)
        pflex_http_server_run(a->s, 0.05, NULL);
    return NULL;
}

static void test_agent(void **state)
{
    struct agent ag = {0};
    pflex_error_t err;
    if (pflex_http_server_start("127.0.0.1:0", NULL, agent_handler, &ag, &ag.s, &err))
        fail_msg("start: %s", err.text);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, agent_serve, &ag), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", pflex_http_server_port(ag.s));
    pflex_capplan_t *p = plan_fixture_read("{\"jobs\": [{\"job\": \"here\", \"gpus\": 2, \"cap_w\": 400},"
                                   "{\"job\": \"gone\", \"gpus\": 1, \"cap_w\": 300},"
                                   "{\"job\": \"own\", \"gpus\": [7], \"cap_w\": 350}]}");
    struct pflex_capagent_report r;
    assert_int_equal(pflex_capagent_apply(url, "tok", 5, 30, p, &r, &err), 0);
    /* Sent: "here" by name (the agent's job map has it), "own" by its GPU. */
    json_t *caps = json_object_get(ag.last_put, "caps");
    assert_int_equal(json_array_size(caps), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(caps, 0), "job")), "here");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(caps, 1), "gpu")), 7);
    assert_float_equal(json_number_value(json_object_get(ag.last_put, "lease_s")), 30, 0);
    assert_int_equal(json_array_size(r.applied), 1);
    json_t *a0 = json_array_get(r.applied, 0);
    assert_string_equal(json_string_value(json_object_get(a0, "job")), "here");
    assert_string_equal(json_string_value(json_object_get(a0, "uuid")), "GPU-5");
    assert_true(json_is_integer(json_object_get(a0, "cap_w")));     /* as the agent wrote it */
    assert_int_equal(json_array_size(r.skipped), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(r.skipped, 0),
                                                          "reason")),
                        "not in the agent's job map");
    assert_int_equal(json_array_size(r.errors), 0);
    pflex_capagent_report_fini(&r);

    ag.mode = 3;    /* one GPU failed: what took, and the failure */
    assert_int_equal(pflex_capagent_apply(url, "tok", 5, 30, p, &r, &err), 0);
    assert_int_equal(json_array_size(r.applied), 1);
    assert_int_equal(json_array_size(r.errors), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(r.errors, 0), "error")),
                        "NVML said no");
    pflex_capagent_report_fini(&r);

    ag.mode = 1;    /* refused: nothing changed, nothing to report */
    assert_int_equal(pflex_capagent_apply(url, "tok", 5, 30, p, &r, &err),
                     PFLEX_CAPAGENT_REFUSED);
    assert_string_equal(err.text, "the agent refused the plan, nothing changed: cap 1 W is "
                                  "outside GPU 0's range");
    assert_null(r.applied);

    ag.mode = 2;    /* another error: the skipped jobs are still known */
    assert_int_equal(pflex_capagent_apply(url, "tok", 5, 30, p, &r, &err), -1);
    assert_non_null(strstr(err.text, "/v1/caps: HTTP 500: database on fire"));
    assert_int_equal(json_array_size(r.applied), 0);
    assert_int_equal(json_array_size(r.skipped), 1);
    pflex_capagent_report_fini(&r);

    ag.stop = 1;
    pthread_join(th, NULL);
    pflex_http_server_stop(ag.s);
    json_decref(ag.last_put);
    /* No agent: no answer, no report. */
    assert_int_equal(pflex_capagent_apply(url, "tok", 2, 30, p, &r, &err), -1);
    assert_null(r.applied);
    pflex_capplan_destroy(p);
}

int main(void)
{
    if (nvml_fixture_init("capagent") < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent),
    };
    int failed = cmocka_run_group_tests_name("capagent", tests, NULL, NULL);
    if (nvml_fixture_fini() < 0)
        failed++;
    return failed;
}
