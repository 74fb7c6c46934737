/* test_controller_meter.c — the grid meter's answer (meter_parse): one
 * series or a scalar is a value and its stamp; no series, several, a
 * failed query or a value that is no number is an error that says so. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "controller/meter.h"

static int parse(const char *s, double *v, double *ts, pflex_error_t *err)
{
    return meter_parse(s, strlen(s), v, ts, err);
}

static void test_values(void **state)
{
    double v = 0, ts = 0;
    pflex_error_t err;
    assert_int_equal(parse("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                           "[{\"metric\":{\"site\":\"a\"},\"value\":[1700000000.5,\"10812.625\"]}]}}", &v, &ts, &err), 0);
    assert_true(v == 10812.625 && ts == 1700000000.5);
    assert_int_equal(parse("{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1700000001,\"42\"]}}",
                           &v, &ts, &err), 0);
    assert_true(v == 42 && ts == 1700000001);
    /* NaN is a value: the controller judges it (a fallback) */
    assert_int_equal(parse("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                           "[{\"metric\":{},\"value\":[1,\"NaN\"]}]}}", &v, &ts, &err), 0);
    assert_true(isnan(v));
}

static void test_refused(void **state)
{
    double v, ts;
    pflex_error_t err;
    assert_int_equal(parse("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}", &v, &ts, &err), -1);
    assert_non_null(strstr(err.text, "no series"));
    assert_int_equal(parse("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                           "[{\"value\":[1,\"1\"]},{\"value\":[1,\"2\"]}]}}", &v, &ts, &err), -1);
    assert_non_null(strstr(err.text, "2 series"));
    assert_int_equal(parse("{\"status\":\"error\",\"error\":\"parse error\"}", &v, &ts, &err), -1);
    assert_non_null(strstr(err.text, "not a successful"));
    assert_int_equal(parse("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                           "[{\"value\":[1,\"12 W\"]}]}}", &v, &ts, &err), -1);
    assert_int_equal(parse("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                           "[{\"value\":[\"1\",\"12\"]}]}}", &v, &ts, &err), -1);
    assert_int_equal(parse("not json", &v, &ts, &err), -1);
    assert_non_null(strstr(err.text, "not JSON"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
