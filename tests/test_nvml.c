/* test_nvml.c — the nvml backend against the fake libnvidia-ml.so.1.
 *
 * The fake is built by the test suite at $PFLEX_BUILD/fake-nvml/ (default
 * build/; tests/support/nvml_fixture.c finds it); each test gets its own
 * state file, so nothing here touches a real GPU or depends on another test.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "pflex/hw/nvml.h"
#include "support/nvml_fixture.h"

static int setup(void **state)
{
    nvml_fixture_write("");
    unsetenv("FAKE_NVML_FAIL");
    return 0;
}

static int teardown(void **state)
{
    unsetenv("FAKE_NVML_FAIL");
    nvml_fixture_remove();
    return 0;
}

static void open_ok(pflex_gpu_t *g)
{
    nvml_fixture_open(g);
    assert_true(pflex_nvml_is(g));
}

static void test_count_describe_limits(void **state)
{
    nvml_fixture_write("gpus=3\ngpu2.name=NVIDIA H100 80GB HBM3\ngpu2.min_mw=150000\n");
    pflex_gpu_t g;
    open_ok(&g);
    pflex_error_t err;
    unsigned n = 0;
    assert_int_equal(pflex_gpu_count(&g, &n, &err), 0);
    assert_int_equal(n, 3);
    char name[96];
    assert_int_equal(pflex_gpu_describe(&g, 0, name, sizeof name, &err), 0);
    assert_string_equal(name, "NVIDIA H200");
    assert_int_equal(pflex_gpu_describe(&g, 2, name, sizeof name, &err), 0);
    assert_string_equal(name, "NVIDIA H100 80GB HBM3");
    assert_int_equal(pflex_gpu_describe(&g, 3, name, sizeof name, &err), -1);
    assert_non_null(strstr(err.text, "no such GPU"));

    struct pflex_gpu_limits lim;
    assert_int_equal(pflex_gpu_limits(&g, 2, &lim, &err), 0);
    assert_float_equal(lim.min_w, 150.0, 1e-9);
    assert_float_equal(lim.max_w, 700.0, 1e-9);
    assert_float_equal(lim.default_w, 700.0, 1e-9);

    struct pflex_nvml_info info;
    assert_int_equal(pflex_nvml_info(&g, 1, &info, &err), 0);
    assert_string_equal(info.name, "NVIDIA H200");
    assert_true(strncmp(info.uuid, "GPU-", 4) == 0);
    assert_float_equal(info.enforced_w, 700.0, 1e-9);
    assert_float_equal(info.limit_w, 700.0, 1e-9);
    assert_float_equal(info.power_w, 650.0, 1e-9);
    assert_int_equal(info.gpm, 1);
    pflex_gpu_close(&g);
}

static void test_set_then_get(void **state)
{
    pflex_gpu_t g;
    open_ok(&g);
    pflex_error_t err;
    assert_int_equal(pflex_gpu_set_cap(&g, 1, 450.0, &err), 0);
    double cap;
    assert_int_equal(pflex_gpu_get_cap(&g, 1, &cap, &err), 0);
    assert_float_equal(cap, 450.0, 1e-9);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 450000.0, 1e-9);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000.0, 1e-9);
    assert_int_equal(pflex_nvml_changed(&g), 1);

    /* Power follows the binding limit, just under it. */
    struct pflex_gpu_sample s;
    assert_int_equal(pflex_gpu_sample(&g, 1, &s, &err), 0);
    assert_true(s.power_w <= 450.0 && s.power_w > 440.0);
    assert_int_equal(pflex_gpu_sample(&g, 0, &s, &err), 0);
    assert_float_equal(s.power_w, 650.0, 1e-9);
    pflex_gpu_close(&g);
}

static void test_out_of_range_refused(void **state)
{
    /* Any NVML set would fail loudly: the refusal must come first. */
    setenv("FAKE_NVML_FAIL", "set_limit:UNKNOWN", 1);
    pflex_gpu_t g;
    open_ok(&g);
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_gpu_set_cap(&g, 0, 800.0, &err), -1);
    assert_non_null(strstr(err.text, "outside the device's range 200-700 W"));
    assert_non_null(strstr(err.text, "GPU 0"));
    assert_int_equal(pflex_gpu_set_cap(&g, 0, 150.0, &err), -1);
    assert_non_null(strstr(err.text, "refused"));
    assert_int_equal(pflex_gpu_set_cap(&g, 0, NAN, &err), -1);
    assert_int_equal(pflex_nvml_changed(&g), 0);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000.0, 1e-9);
    pflex_gpu_close(&g);
}

static void test_no_permission(void **state)
{
    setenv("FAKE_NVML_FAIL", "set_limit:NO_PERMISSION", 1);
    pflex_gpu_t g;
    open_ok(&g);
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_gpu_set_cap(&g, 1, 500.0, &err), -1);
    assert_non_null(strstr(err.text, "GPU 1 (NVIDIA H200)"));
    assert_non_null(strstr(err.text, "Insufficient Permissions"));
    assert_non_null(strstr(err.text, "NVML_ERROR_NO_PERMISSION"));
    assert_int_equal(pflex_nvml_changed(&g), 0);
    pflex_gpu_close(&g);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 700000.0, 1e-9);
}

static void test_gpu_lost(void **state)
{
    pflex_gpu_t g;
    open_ok(&g);
    /* Rules are read at nvmlInit: reopen with the rule set. */
    pflex_gpu_close(&g);
    setenv("FAKE_NVML_FAIL", "power/1:GPU_IS_LOST:2", 1);
    open_ok(&g);
    pflex_error_t err = {{0}};
    struct pflex_gpu_sample s;
    assert_int_equal(pflex_gpu_sample(&g, 1, &s, &err), 0);
    assert_int_equal(pflex_gpu_sample(&g, 1, &s, &err), 0);
    assert_int_equal(pflex_gpu_sample(&g, 1, &s, &err), -1);
    assert_non_null(strstr(err.text, "GPU 1"));
    assert_non_null(strstr(err.text, "GPU is lost"));
    assert_non_null(strstr(err.text, "NVML_ERROR_GPU_IS_LOST"));
    assert_int_equal(pflex_gpu_sample(&g, 0, &s, &err), 0);
    pflex_gpu_close(&g);
}

static void test_init_fails(void **state)
{
    setenv("FAKE_NVML_FAIL", "init:DRIVER_NOT_LOADED", 1);
    pflex_gpu_t g;
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_nvml_open(nvml_fixture_lib(), &g, &err), -1);
    assert_non_null(strstr(err.text, "nvmlInit_v2"));
    assert_non_null(strstr(err.text, "Driver Not Loaded"));
    assert_null(g.ops);
}

static void test_missing_library(void **state)
{
    pflex_gpu_t g;
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_nvml_open("/nonexistent/libnvidia-ml.so.1", &g, &err), -1);
    assert_non_null(strstr(err.text, "cannot load NVML"));
    assert_non_null(strstr(err.text, "/nonexistent/libnvidia-ml.so.1"));
}

static void test_restore(void **state)
{
    nvml_fixture_write("gpu1.limit_mw=600000\n");
    pflex_gpu_t g;
    open_ok(&g);
    pflex_error_t err;
    assert_int_equal(pflex_gpu_set_cap(&g, 0, 400.0, &err), 0);
    assert_int_equal(pflex_gpu_set_cap(&g, 1, 300.0, &err), 0);
    assert_int_equal(pflex_gpu_set_cap(&g, 1, 250.0, &err), 0);   /* original stays 600 */
    assert_int_equal(pflex_nvml_changed(&g), 2);
    assert_int_equal(pflex_nvml_restore(&g, &err), 0);
    assert_int_equal(pflex_nvml_changed(&g), 0);
    double cap;
    assert_int_equal(pflex_gpu_get_cap(&g, 0, &cap, &err), 0);
    assert_float_equal(cap, 700.0, 1e-9);
    assert_int_equal(pflex_gpu_get_cap(&g, 1, &cap, &err), 0);
    assert_float_equal(cap, 600.0, 1e-9);

    /* Closing restores too. */
    assert_int_equal(pflex_gpu_set_cap(&g, 0, 350.0, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 350000.0, 1e-9);
    pflex_gpu_close(&g);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000.0, 1e-9);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 600000.0, 1e-9);

    /* Unless told to keep the limits. */
    open_ok(&g);
    assert_int_equal(pflex_gpu_set_cap(&g, 0, 320.0, &err), 0);
    pflex_nvml_keep_limits(&g);
    pflex_gpu_close(&g);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 320000.0, 1e-9);
}

static void test_restore_reports_failure(void **state)
{
    /* The first set succeeds, the restore (second set on GPU 0) fails,
     * GPU 1 is still restored. */
    setenv("FAKE_NVML_FAIL", "set_limit/0:NO_PERMISSION:1", 1);
    pflex_gpu_t g;
    open_ok(&g);
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_gpu_set_cap(&g, 0, 400.0, &err), 0);
    assert_int_equal(pflex_gpu_set_cap(&g, 1, 400.0, &err), 0);
    assert_int_equal(pflex_nvml_restore(&g, &err), -1);
    assert_non_null(strstr(err.text, "GPU 0"));
    assert_non_null(strstr(err.text, "restoring the power limit to 700 W"));
    assert_int_equal(pflex_nvml_changed(&g), 1);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 700000.0, 1e-9);
    pflex_nvml_keep_limits(&g);
    pflex_gpu_close(&g);
}

static void test_sample_telemetry(void **state)
{
    nvml_fixture_write("gpu1.gpm=0\ngpu1.energy=0\n");
    pflex_gpu_t g;
    open_ok(&g);
    pflex_error_t err;
    struct pflex_gpu_sample a, b;
    assert_int_equal(pflex_gpu_sample(&g, 0, &a, &err), 0);
    assert_float_equal(a.tm[PFLEX_TM_SM_CLOCK_MHZ], 1980.0, 1e-9);
    assert_float_equal(a.tm[PFLEX_TM_MEM_CLOCK_MHZ], 2619.0, 1e-9);
    assert_float_equal(a.tm[PFLEX_TM_GPU_UTIL], 100.0, 1e-9);
    assert_float_equal(a.tm[PFLEX_TM_MEM_COPY_UTIL], 45.0, 1e-9);
    assert_true(isnan(a.tm[PFLEX_TM_DRAM_ACTIVE]));     /* GPM needs two samples */
    assert_float_equal(a.tm[PFLEX_TM_PCIE_TX_BYTES], 2048.0 * 1024, 1e-6);
    /* GPM's counters refresh every 100 ms: a sample sooner gets no GPM
     * values, and no PCIe either (GPM gives it, the plain counters block). */
    assert_int_equal(pflex_gpu_sample(&g, 0, &b, &err), 0);
    assert_true(isnan(b.tm[PFLEX_TM_DRAM_ACTIVE]));
    assert_true(isnan(b.tm[PFLEX_TM_PCIE_TX_BYTES]));
    assert_float_equal(b.power_w, 650.0, 1e-9);
    struct timespec ts = {0, (PFLEX_NVML_GPM_MIN_INTERVAL_MS + 10) * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(pflex_gpu_sample(&g, 0, &b, &err), 0);
    assert_true(b.energy_j > a.energy_j);               /* ~650 W x 110 ms */
    assert_float_equal(b.tm[PFLEX_TM_PCIE_TX_BYTES], 2048.0 * 1024, 1e-6);   /* from GPM */
    assert_float_equal(b.tm[PFLEX_TM_DRAM_ACTIVE], 0.47, 1e-9);
    assert_float_equal(b.tm[PFLEX_TM_SM_ACTIVE], 0.92, 1e-9);
    assert_float_equal(b.tm[PFLEX_TM_SM_OCCUPANCY], 0.38, 1e-9);
    assert_float_equal(b.tm[PFLEX_TM_TENSOR_ACTIVE], 0.61, 1e-9);
    assert_float_equal(b.tm[PFLEX_TM_GR_ENGINE_ACTIVE], 0.99, 1e-9);
    assert_float_equal(b.tm[PFLEX_TM_NVLINK_TX_BYTES], 20480.0 * 1048576, 1e-3);

    /* A lower cap slows the SM clock and tensor activity, not memory. */
    assert_int_equal(pflex_gpu_set_cap(&g, 0, 300.0, &err), 0);
    nanosleep(&ts, NULL);
    assert_int_equal(pflex_gpu_sample(&g, 0, &b, &err), 0);
    assert_true(b.tm[PFLEX_TM_SM_CLOCK_MHZ] < 1980.0);
    assert_true(b.tm[PFLEX_TM_TENSOR_ACTIVE] < 0.61);
    assert_float_equal(b.tm[PFLEX_TM_MEM_CLOCK_MHZ], 2619.0, 1e-9);

    /* No GPM and no energy counter: NaN, never invented. */
    struct pflex_nvml_info info;
    assert_int_equal(pflex_nvml_info(&g, 1, &info, &err), 0);
    assert_int_equal(info.gpm, 0);
    assert_int_equal(pflex_gpu_sample(&g, 1, &a, &err), 0);
    assert_int_equal(pflex_gpu_sample(&g, 1, &b, &err), 0);
    assert_true(isnan(b.energy_j));
    assert_true(isnan(b.tm[PFLEX_TM_DRAM_ACTIVE]));
    assert_true(isnan(b.tm[PFLEX_TM_NVLINK_RX_BYTES]));
    assert_float_equal(b.tm[PFLEX_TM_PCIE_RX_BYTES], 4096.0 * 1024, 1e-6);   /* every sample */
    assert_float_equal(b.power_w, 650.0, 1e-9);
    pflex_gpu_close(&g);
}

/* GPM samples closer than its 100 ms refresh are not taken: with the fake
 * refreshing every 100 ms as real GPUs do (stale pairs read 0), samples
 * 10 ms apart give GPM values only every 100 ms, and never a stale 0.  And
 * where GPM gives PCIe, the plain PCIe calls (20 ms each on real GPUs) are
 * not made after the first sample: the fake fails every later one. */
static void test_gpm_interval(void **state)
{
    nvml_fixture_write("gpus=1\ngpm_refresh_ms=100\n");
    setenv("FAKE_NVML_FAIL", "pcie:UNKNOWN:2", 1);
    pflex_gpu_t g;
    open_ok(&g);
    pflex_error_t err;
    struct pflex_gpu_sample s;
    assert_int_equal(pflex_gpu_sample(&g, 0, &s, &err), 0);
    assert_float_equal(s.tm[PFLEX_TM_PCIE_TX_BYTES], 2048.0 * 1024, 1e-6);
    int gpm = 0;
    struct timespec ts = {0, 10 * 1000 * 1000};
    for (int k = 0; k < 35; k++) {
        nanosleep(&ts, NULL);
        assert_int_equal(pflex_gpu_sample(&g, 0, &s, &err), 0);
        if (isnan(s.tm[PFLEX_TM_DRAM_ACTIVE])) {
            assert_true(isnan(s.tm[PFLEX_TM_PCIE_TX_BYTES]));
            continue;
        }
        gpm++;
        assert_float_equal(s.tm[PFLEX_TM_DRAM_ACTIVE], 0.47, 1e-9);
        assert_float_equal(s.tm[PFLEX_TM_PCIE_RX_BYTES], 4096.0 * 1024, 1e-6);
    }
    /* 35 samples at least 10 ms apart: 350 ms or more, one window a 100 ms
     * at most, each 100 ms or more. */
    assert_true(gpm >= 1);
    assert_true(gpm <= 4);
    pflex_gpu_close(&g);

    /* Without GPM the plain calls are made every time: the rule bites. */
    nvml_fixture_write("gpus=1\ngpm=0\n");
    open_ok(&g);
    assert_int_equal(pflex_gpu_sample(&g, 0, &s, &err), 0);
    assert_int_equal(pflex_gpu_sample(&g, 0, &s, &err), -1);
    assert_non_null(strstr(err.text, "reading PCIe TX throughput"));
    pflex_gpu_close(&g);
}

int main(void)
{
    if (nvml_fixture_init("nvml") < 0)
        return 1;

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_count_describe_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_then_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_range_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_permission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_library, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_reports_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sample_telemetry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpm_interval, setup, teardown),
    };
    int failed = cmocka_run_group_tests_name("nvml", tests, NULL, NULL);
    if (nvml_fixture_fini() < 0)
        failed++;
    return failed;
}
