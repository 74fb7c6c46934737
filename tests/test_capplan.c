/* test_capplan.c — a plan of per-job caps read and checked: a count or a
 * list of GPUs per job, and every fault named. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/io/capplan.h"
#include "support/nvml_fixture.h"
#include "support/plan_fixture.h"

/* The message of a plan that does not read. */
static const char *plan_error(const char *text)
{
    static pflex_error_t err;
    pflex_capplan_t *p = NULL;
    assert_int_equal(pflex_capplan_read_file(nvml_fixture_file("bad.json", text), &p, &err), -1);
    assert_null(p);
    assert_false(pflex_error_is_system(&err));
    return err.text;
}

static void test_read(void **state)
{
    pflex_capplan_t *p = plan_fixture_read("{\"target_w\": 5000, \"jobs\": ["
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

int main(void)
{
    if (nvml_fixture_init("capplan") < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_read_errors),
    };
    int failed = cmocka_run_group_tests_name("capplan", tests, NULL, NULL);
    if (nvml_fixture_fini() < 0)
        failed++;
    return failed;
}
