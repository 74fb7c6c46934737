/* test_capapply.c — a plan's caps on the fake NVML's GPUs: placed (by
 * index, UUID or job map; skipped, doubled, absent), checked against each
 * GPU's range, set through the guard (a stop honoured) and restored. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/hw/capapply.h"
#include "pflex/hw/nvml.h"
#include "support/nvml_fixture.h"
#include "support/plan_fixture.h"

static const char *run_dir;

static int setup(void **state)
{
    run_dir = nvml_fixture_run_dir();
    nvml_fixture_write("gpus=4\n");
    return 0;
}

static int teardown(void **state)
{
    if (nvml_fixture_run_dir_remove())
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
    pflex_capplan_t *p = plan_fixture_read(text);
    json_t *map = json_pack("{s:{s:[i]}}", "jobs", "b", 1), *skipped = json_array();
    struct pflex_capapply_gpu a[PFLEX_CAPAPPLY_MAX_GPUS];
    unsigned n = 99;
    assert_int_equal(pflex_capapply_place(&g, p, map, a, &n, skipped, &err), 0);
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
    assert_int_equal(pflex_capapply_place(&g, p, bare, a, &n, skipped, &err), 0);
    assert_int_equal(a[2].gpu, 2);
    /* A GPU given to two jobs, one that is not there, an unknown UUID. */
    json_t *twice = json_pack("{s:[i]}", "b", 3);
    assert_int_equal(pflex_capapply_place(&g, p, twice, a, &n, skipped, &err), -1);
    assert_string_equal(err.text, "GPU 3 is given to both a and b");
    json_t *absent = json_pack("{s:[i]}", "b", 4);
    assert_int_equal(pflex_capapply_place(&g, p, absent, a, &n, skipped, &err), -1);
    assert_string_equal(err.text, "GPU 4 does not exist (this node has 4)");
    json_t *nouuid = json_pack("{s:[s]}", "b", "GPU-none");
    assert_int_equal(pflex_capapply_place(&g, p, nouuid, a, &n, skipped, &err), -1);
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
    struct pflex_capapply_gpu a[2] = {{1, lim.max_w + 1, "a"}, {2, lim.min_w, "b"}};
    assert_int_equal(pflex_capapply_check(&g, a, 2, &err), -1);
    assert_non_null(strstr(err.text, "job a: cap "));
    assert_non_null(strstr(err.text, "is outside GPU 1's range"));
    a[0].cap_w = lim.max_w - 100;
    assert_int_equal(pflex_capapply_check(&g, a, 2, &err), 0);
    unsigned idx[2] = {1, 2};
    struct pflex_guard_opts o = {.state_dir = run_dir, .owner = "test"};
    pflex_guard_t *gd = NULL;
    assert_int_equal(pflex_guard_open(&g, idx, 2, &o, &gd, &err), 0);
    /* A stop already asked for sets nothing. */
    volatile sig_atomic_t stop = 1;
    json_t *applied = json_array();
    assert_int_equal(pflex_capapply_set(gd, &g, a, 2, 60, &stop, applied, &err), 0);
    assert_int_equal(json_array_size(applied), 0);
    stop = 0;
    assert_int_equal(pflex_capapply_set(gd, &g, a, 2, 60, &stop, applied, &err), 0);
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

int main(void)
{
    if (nvml_fixture_init("capapply") < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_set_restore, setup, teardown),
    };
    int failed = cmocka_run_group_tests_name("capapply", tests, NULL, NULL);
    if (nvml_fixture_fini() < 0)
        failed++;
    return failed;
}
