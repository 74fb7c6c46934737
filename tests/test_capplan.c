/* test_capplan.c — a plan of per-job caps: read and checked, placed on the
 * fake NVML's GPUs, checked against their ranges and set through the guard,
 * and sent to an agent (a small in-process HTTP server standing in for one). */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/capplan.h"
#include "pflex/http.h"
#include "pflex/nvml.h"
#include "support/nvml_fixture.h"

static char run_dir[4096];

static const char *write_file(const char *name, const char *text)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", nvml_fixture_dir(), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static pflex_capplan_t *read_plan(const char *text)
{
    pflex_capplan_t *p = NULL;
    pflex_error_t err;
    if (pflex_capplan_read_file(write_file("plan.json", text), &p, &err))
        fail_msg("read: %s", err.text);
    return p;
}

/* The message of a plan that does not read. */
static const char *plan_error(const char *text)
{
    static pflex_error_t err;
    pflex_capplan_t *p = NULL;
    assert_int_equal(pflex_capplan_read_file(write_file("bad.json", text), &p, &err), -1);
    assert_null(p);
    assert_false(pflex_error_is_system(&err));
    return err.text;
}

static void test_read(void **state)
{
    pflex_capplan_t *p = read_plan("{\"target_w\": 5000, \"jobs\": ["
                                   "{\"job\": \"a\", \"gpus\": 4, \"cap_w\": 450.5},"
                                   "{\"job\": \"b\", \"gpus\": [0, \"GPU-x\"], \"cap_w\": 300}]}");
    assert_int_equal(p->njobs, 2);
    assert_string_equal(p->jobs[0].job, "a");
    assert_float_equal(p->jobs[0].cap_w, 450.5, 0);
    assert_null(p->jobs[0].gpus);       /* a count: the job map says */
    assert_string_equal(p->jobs[1].job, "b");
    assert_int_equal(json_array_size(p->jobs[1].gpus), 2);
    pflex_capplan_destroy(p);
}

static void test_read_errors(void **state)
{
    assert_non_null(strstr(plan_error("{\"jobs\": []}"), "bad.json: no \"jobs\" list"));
    assert_non_null(strstr(plan_error("{\"jobs\": [{\"cap_w\": 3}]}"), "jobs[0]: no \"job\" name"));
    assert_non_null(strstr(plan_error("{\"jobs\": [{\"job\": \"a\", \"cap_w\": 1},"
                                      "{\"job\": \"b\", \"cap_w\": -1}]}"),
                           "jobs[1] (b): \"cap_w\" must be a positive number of watts"));
    assert_non_null(strstr(plan_error("{\"jobs\": [{\"job\": \"a\", \"cap_w\": 1, \"gpus\": \"x\"}]}"),
                           "jobs[0] (a): \"gpus\" is a count or a list"));
    const char *e = plan_error("{\"jobs\": [\n  {\"job\": \"a\", \"job\": \"b\"}]}");
    assert_non_null(strstr(e, "bad.json:2:"));
    assert_non_null(strstr(e, "(a plan of 'pflex allocate --json')"));
}

static int setup(void **state)
{
    static int k;
    snprintf(run_dir, sizeof run_dir, "%s/run%d", nvml_fixture_dir(), k++);
    nvml_fixture_write("gpus=4\n");
    return 0;
}

static int teardown(void **state)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", run_dir);
    if (system(cmd) != 0)
        return -1;
    nvml_fixture_remove();
    return 0;
}

static void test_place(void **state)
{
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    struct pflex_nvml_info info;
    pflex_error_t err;
    assert_int_equal(pflex_nvml_info(&g, 3, &info, &err), 0);
    char text[512];
    snprintf(text, sizeof text, "{\"jobs\": [{\"job\": \"a\", \"gpus\": [0, \"%s\"], \"cap_w\": 400},"
             "{\"job\": \"b\", \"gpus\": 2, \"cap_w\": 300}, {\"job\": \"c\", \"cap_w\": 350}]}",
             info.uuid);
    pflex_capplan_t *p = read_plan(text);
    json_t *map = json_pack("{s:{s:[i]}}", "jobs", "b", 1), *skipped = json_array();
    struct pflex_capplan_gpu a[PFLEX_CAPPLAN_MAX_GPUS];
    unsigned n = 99;
    assert_int_equal(pflex_capplan_place(&g, p, map, a, &n, skipped, &err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(a[0].gpu, 0);
    assert_int_equal(a[1].gpu, 3);          /* by its UUID */
    assert_string_equal(a[1].job, "a");
    assert_int_equal(a[2].gpu, 1);          /* b by the job map */
    assert_float_equal(a[2].cap_w, 300, 0);
    assert_int_equal(json_array_size(skipped), 1);  /* c: neither */
    assert_string_equal(json_string_value(json_object_get(json_array_get(skipped, 0), "job")),
                        "c");
    /* The map without its "jobs" wrapper reads the same. */
    json_t *bare = json_pack("{s:[i]}", "b", 2);
    assert_int_equal(pflex_capplan_place(&g, p, bare, a, &n, skipped, &err), 0);
    assert_int_equal(a[2].gpu, 2);
    /* A GPU given to two jobs, one that is not there, an unknown UUID. */
    json_t *twice = json_pack("{s:[i]}", "b", 3);
    assert_int_equal(pflex_capplan_place(&g, p, twice, a, &n, skipped, &err), -1);
    assert_string_equal(err.text, "GPU 3 is given to both a and b");
    json_t *absent = json_pack("{s:[i]}", "b", 4);
    assert_int_equal(pflex_capplan_place(&g, p, absent, a, &n, skipped, &err), -1);
    assert_string_equal(err.text, "GPU 4 does not exist (this node has 4)");
    json_t *nouuid = json_pack("{s:[s]}", "b", "GPU-none");
    assert_int_equal(pflex_capplan_place(&g, p, nouuid, a, &n, skipped, &err), -1);
    assert_string_equal(err.text, "GPU 'GPU-none': no GPU of this node has that UUID");
    json_decref(map);
    json_decref(bare);
    json_decref(twice);
    json_decref(absent);
    json_decref(nouuid);
    json_decref(skipped);
    pflex_capplan_destroy(p);
    pflex_gpu_close(&g);
}

static void test_check_set_restore(void **state)
{
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_error_t err;
    struct pflex_gpu_limits lim;
    assert_int_equal(pflex_gpu_limits(&g, 1, &lim, &err), 0);
    struct pflex_capplan_gpu a[2] = {{1, lim.max_w + 1, "a"}, {2, lim.min_w, "b"}};
    assert_int_equal(pflex_capplan_check(&g, a, 2, &err), -1);
    assert_non_null(strstr(err.text, "job a: cap "));
    assert_non_null(strstr(err.text, "is outside GPU 1's range"));
    a[0].cap_w = lim.max_w - 100;
    assert_int_equal(pflex_capplan_check(&g, a, 2, &err), 0);
    unsigned idx[2] = {1, 2};
    struct pflex_guard_opts o = {.state_dir = run_dir, .owner = "test"};
    pflex_guard_t *gd = NULL;
    assert_int_equal(pflex_guard_open(&g, idx, 2, &o, &gd, &err), 0);
    /* A stop already asked for sets nothing. */
    volatile sig_atomic_t stop = 1;
    json_t *applied = json_array();
    assert_int_equal(pflex_capplan_set(gd, &g, a, 2, 60, &stop, applied, &err), 0);
    assert_int_equal(json_array_size(applied), 0);
    stop = 0;
    assert_int_equal(pflex_capplan_set(gd, &g, a, 2, 60, &stop, applied, &err), 0);
    assert_int_equal(json_array_size(applied), 2);
    json_t *b = json_array_get(applied, 1);
    assert_string_equal(json_string_value(json_object_get(b, "job")), "b");
    assert_int_equal(json_integer_value(json_object_get(b, "gpu")), 2);
    assert_float_equal(json_real_value(json_object_get(b, "enforced_w")), lim.min_w, 1e-9);
    assert_float_equal(json_real_value(json_object_get(b, "lease_s")), 60, 0);
    assert_non_null(strstr(json_string_value(json_object_get(b, "uuid")), "GPU-"));
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), (lim.max_w - 100) * 1000, 1e-6);
    assert_int_equal(pflex_guard_restore_all(gd, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), lim.max_w * 1000, 1e-6);
    pflex_guard_close(gd);
    json_decref(applied);
    pflex_gpu_close(&g);
}

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
    pflex_capplan_t *p = read_plan("{\"jobs\": [{\"job\": \"here\", \"gpus\": 2, \"cap_w\": 400},"
                                   "{\"job\": \"gone\", \"gpus\": 1, \"cap_w\": 300},"
                                   "{\"job\": \"own\", \"gpus\": [7], \"cap_w\": 350}]}");
    struct pflex_capplan_report r;
    assert_int_equal(pflex_capplan_agent_apply(url, "tok", 5, 30, p, &r, &err), 0);
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
    pflex_capplan_report_fini(&r);

    ag.mode = 3;    /* one GPU failed: what took, and the failure */
    assert_int_equal(pflex_capplan_agent_apply(url, "tok", 5, 30, p, &r, &err), 0);
    assert_int_equal(json_array_size(r.applied), 1);
    assert_int_equal(json_array_size(r.errors), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(r.errors, 0), "error")),
                        "NVML said no");
    pflex_capplan_report_fini(&r);

    ag.mode = 1;    /* refused: nothing changed, nothing to report */
    assert_int_equal(pflex_capplan_agent_apply(url, "tok", 5, 30, p, &r, &err),
                     PFLEX_CAPPLAN_REFUSED);
    assert_string_equal(err.text, "the agent refused the plan, nothing changed: cap 1 W is "
                                  "outside GPU 0's range");
    assert_null(r.applied);

    ag.mode = 2;    /* another error: the skipped jobs are still known */
    assert_int_equal(pflex_capplan_agent_apply(url, "tok", 5, 30, p, &r, &err), -1);
    assert_non_null(strstr(err.text, "/v1/caps: HTTP 500: database on fire"));
    assert_int_equal(json_array_size(r.applied), 0);
    assert_int_equal(json_array_size(r.skipped), 1);
    pflex_capplan_report_fini(&r);

    ag.stop = 1;
    pthread_join(th, NULL);
    pflex_http_server_stop(ag.s);
    json_decref(ag.last_put);
    /* No agent: no answer, no report. */
    assert_int_equal(pflex_capplan_agent_apply(url, "tok", 2, 30, p, &r, &err), -1);
    assert_null(r.applied);
    pflex_capplan_destroy(p);
}

int main(void)
{
    if (nvml_fixture_init("capplan") < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_read_errors),
        cmocka_unit_test_setup_teardown(test_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_set_restore, setup, teardown),
        cmocka_unit_test(test_agent),
    };
    int failed = cmocka_run_group_tests_name("capplan", tests, NULL, NULL);
    if (nvml_fixture_fini() < 0)
        failed++;
    return failed;
}
