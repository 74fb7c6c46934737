/* test_baseline.c — each job's features and baseline, from a features CSV
 * (columns by name, in any order; the optional ones; errors by line) and
 * from a sweep's highest cap with telemetry. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/baseline.h"

static int read_csv(struct pflex_baseline_set *s, const char *text, pflex_error_t *err)
{
    return pflex_baseline_read_features_csv(s, text, strlen(text), "f.csv", err);
}

static void test_features_csv(void **state)
{
    struct pflex_baseline_set s = {0};
    pflex_error_t err;
    assert_int_equal(read_csv(&s, "throughput,dram_copy_product,job,power_w,gpus,cap_w,gpu,floor,x\n"
                                  "1000,0.25,a,650,8,700,H200,0.9,zz\n"
                                  "500,,\"b,c\",300,,,,,\n", &err), 0);
    assert_int_equal(s.n, 2);
    const struct pflex_baseline *a = &s.v[0], *b = &s.v[1];
    assert_string_equal(a->name, "a");
    assert_string_equal(a->gpu, "H200");
    assert_int_equal(a->gpus, 8);
    assert_float_equal(a->p0_w, 650, 0);
    assert_float_equal(a->t0, 1000, 0);
    assert_float_equal(a->cap0_w, 700, 0);
    assert_float_equal(a->floor, 0.9, 0);
    assert_float_equal(a->x[PFLEX_FEAT_DRAM_COPY], 0.25, 0);
    assert_float_equal(a->x[PFLEX_FEAT_LOG2_GPUS], 3, 0);
    assert_true(isnan(a->x[PFLEX_FEAT_SM_ACTIVE]));    /* no column */
    assert_string_equal(b->name, "b,c");
    assert_null(b->gpu);
    assert_int_equal(b->gpus, 1);
    assert_true(isnan(b->cap0_w) && isnan(b->floor) && isnan(b->x[PFLEX_FEAT_DRAM_COPY]));
    assert_float_equal(b->x[PFLEX_FEAT_LOG2_GPUS], 0, 0);
    pflex_baseline_set_fini(&s);
    assert_int_equal(s.n, 0);
}

static void expect_error(const char *text, const char *msg)
{
    struct pflex_baseline_set s = {0};
    pflex_error_t err;
    assert_int_equal(read_csv(&s, text, &err), -1);
    assert_string_equal(err.text, msg);
    assert_false(pflex_error_is_system(&err));
    pflex_baseline_set_fini(&s);
}

static void test_features_csv_errors(void **state)
{
    expect_error("", "empty file");
    expect_error("job,dram_copy_product\na,0.1\n",
                 "f.csv:1: a features CSV needs columns job, power_w and throughput (the "
                 "baseline; 'pflex features' cannot know throughput)");
    expect_error("job,power_w,throughput,sm_active\na,1,2,0.5\nb,1,2,x\n",
                 "f.csv:3: column 'sm_active': not a finite number");
    expect_error("job,power_w,throughput\na,1\n", "f.csv:2: job, power_w or throughput missing");
    expect_error("job,power_w,throughput\n,1,2\n", "f.csv:2: job, power_w or throughput missing");
    expect_error("job,power_w,throughput\na,0,2\n",
                 "f.csv:2: power_w and throughput must be positive numbers");
    expect_error("job,power_w,throughput,gpus\na,1,2,1.5\n",
                 "f.csv:2: column 'gpus': not a positive integer");
}

static void test_sweep(void **state)
{
    static const char sweep[] =
        "job,gpu,gpus,cap_w,power_w,throughput,sm_clock_mhz,gpu_util\n"
        "j,H200,4,700,650,1000,1980,99\n"
        "j,H200,4,500,480,900,1500,99\n";
    pflex_sweep_t *sw;
    pflex_error_t err;
    if (pflex_sweep_read_mem(sweep, strlen(sweep), "s.csv", NULL, &sw, &err) < 0)
        fail_msg("sweep: %s", err.text);
    struct pflex_baseline_set s = {0};
    assert_int_equal(pflex_baseline_add_sweep(&s, sw, "s.csv", &err), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.v[0].name, "j");
    assert_string_equal(s.v[0].gpu, "H200");
    assert_int_equal(s.v[0].gpus, 4);
    assert_float_equal(s.v[0].p0_w, 650, 0);           /* the highest cap's row */
    assert_float_equal(s.v[0].t0, 1000, 0);
    assert_float_equal(s.v[0].cap0_w, 700, 0);
    assert_float_equal(s.v[0].x[PFLEX_FEAT_GPU_UTIL], 99, 1e-9);
    pflex_baseline_set_fini(&s);
    pflex_sweep_destroy(sw);
    static const char bare[] = "job,cap_w,power_w,throughput\nj,700,650,1000\nj,500,480,900\n";
    if (pflex_sweep_read_mem(bare, strlen(bare), "b.csv", NULL, &sw, &err) < 0)
        fail_msg("sweep: %s", err.text);
    assert_int_equal(pflex_baseline_add_sweep(&s, sw, "b.csv", &err), -1);
    assert_string_equal(err.text, "b.csv: the sweep has no telemetry column: nothing to predict "
                                  "from");
    pflex_baseline_set_fini(&s);
    pflex_sweep_destroy(sw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_features_csv),
        cmocka_unit_test(test_features_csv_errors),
        cmocka_unit_test(test_sweep),
    };
    return cmocka_run_group_tests_name("baseline", tests, NULL, NULL);
}
