/* test_hwsweep.c — the power-cap sweep engine on the fake libnvidia-ml.so.1:
 * the caps it chooses and checks, the rows it measures, the stop flag, the
 * caller's halt, and the token file's errors.  The limits go through a
 * real guard in a state folder of the test's own. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/hw/hwsweep.h"
#include "pflex/hw/nvml.h"
#include "support/nvml_fixture.h"

static const char *run_dir;

static int setup(void **state)
{
    run_dir = nvml_fixture_run_dir();
    nvml_fixture_write("");
    return 0;
}

static int teardown(void **state)
{
    if (nvml_fixture_run_dir_remove())
        return -1;
    nvml_fixture_remove();
    return 0;
}

/* What a sweep told its caller. */
struct seen {
    int warnings, set, measured;
    double cap_w[8], power_w[8], throughput[8];
    int halt_on_set;        /* return nonzero on the first CAP_SET */
    char warning[320];
};

static int record(void *arg, const struct pflex_hwsweep_event *ev)
{
    struct seen *s = arg;
    switch (ev->kind) {
    case PFLEX_HWSWEEP_WARNING:
        s->warnings++;
        snprintf(s->warning, sizeof s->warning, "%s", ev->text);
        break;
    case PFLEX_HWSWEEP_CAP_SET:
        s->set++;
        return s->halt_on_set;
    case PFLEX_HWSWEEP_MEASURED:
        if (s->measured < 8) {
            s->cap_w[s->measured] = ev->cap_w;
            s->power_w[s->measured] = ev->power_w;
            s->throughput[s->measured] = ev->throughput;
        }
        s->measured++;
        break;
    }
    return 0;
}

static pflex_guard_t *guard(pflex_gpu_t *g)
{
    static const unsigned idx[2] = {0, 1};
    struct pflex_guard_opts o = {.state_dir = run_dir, .owner = "test", .backoff_s = 0.001};
    pflex_guard_t *gd = NULL;
    pflex_error_t err = {{0}};
    if (pflex_guard_open(g, idx, 2, &o, &gd, &err))
        fail_msg("pflex_guard_open: %s", err.text);
    return gd;
}

static void test_default_caps(void **state)
{
    double caps[PFLEX_HWSWEEP_DEFAULT_CAPS];
    assert_int_equal(pflex_hwsweep_default_caps(200, 700, caps), 6);
    const double want[6] = {700, 600, 500, 400, 300, 200};
    for (int k = 0; k < 6; k++)
        assert_float_equal(caps[k], want[k], 0);
    /* One limit only: one cap, not six copies of it. */
    assert_int_equal(pflex_hwsweep_default_caps(300, 300, caps), 1);
    assert_float_equal(caps[0], 300, 0);
    /* Fractional ends: whole watts inside the range. */
    unsigned n = pflex_hwsweep_default_caps(100.4, 100.6, caps);
    assert_int_equal(n, 1);
    assert_float_equal(caps[0], 100, 0);
}

static void test_range_and_check(void **state)
{
    nvml_fixture_write("gpu1.min_mw=250000\ngpu1.max_mw=650000\n");
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    const unsigned idx[2] = {0, 1};
    struct pflex_gpu_limits lim[2];
    double lo, hi;
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_hwsweep_range(&g, idx, 2, lim, &lo, &hi, &err), 0);
    assert_float_equal(lo, 250, 1e-9);
    assert_float_equal(hi, 650, 1e-9);
    const double ok[2] = {650, 250}, bad[2] = {600, 700};
    assert_int_equal(pflex_hwsweep_check_caps(&g, idx, 2, lim, ok, 2, &err), 0);
    assert_int_equal(pflex_hwsweep_check_caps(&g, idx, 2, lim, bad, 2, &err), -1);
    assert_non_null(strstr(err.text, "700 W is outside GPU 1"));
    assert_non_null(strstr(err.text, "range 250-650 W"));
    pflex_gpu_close(&g);
}

static void test_restore_w(void **state)
{
    assert_float_equal(pflex_hwsweep_restore_w(500, 700, 0), 700, 0);
    assert_float_equal(pflex_hwsweep_restore_w(500, 700, 1), 500, 0);
    assert_float_equal(pflex_hwsweep_restore_w(699.8, 700, 0), 699.8, 0);
    assert_float_equal(pflex_hwsweep_restore_w(500, NAN, 0), 500, 0);
}

/* Power from the readings (no energy counter): 0.99 of a binding cap. */
static void test_power_only_rows(void **state)
{
    nvml_fixture_write("energy=0\n");
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g);
    const double caps[2] = {500, 300};
    struct seen s = {0};
    struct pflex_hwsweep_opts o = {.caps = caps, .ncaps = 2, .settle_s = 0, .window_s = 0.02,
                                   .on_event = record, .arg = &s};
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_hwsweep_run(&g, gd, &o, &err), 0);
    assert_int_equal(s.set, 2);
    assert_int_equal(s.measured, 2);
    assert_int_equal(s.warnings, 0);
    assert_float_equal(s.cap_w[0], 500, 0);
    assert_float_equal(s.power_w[0], 495, 1e-6);
    assert_float_equal(s.power_w[1], 297, 1e-6);
    assert_true(isnan(s.throughput[0]));
    /* The sweep leaves the last cap set: restoring is the caller's. */
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 300000, 0);
    assert_int_equal(pflex_guard_restore_all(gd, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 700000, 0);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
}

/* The fake plays the job: its throughput follows the cube root of the
 * power ratio (10000 tokens/s uncapped at 650 W). */
static void test_throughput_from_tokens(void **state)
{
    char tokens[4200], st[4300];
    snprintf(tokens, sizeof tokens, "%s/tokens", nvml_fixture_dir());
    remove(tokens);
    snprintf(st, sizeof st, "tokens_file=%s\n", tokens);
    nvml_fixture_write(st);
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g);
    const double caps[1] = {400};
    struct seen s = {0};
    struct pflex_hwsweep_opts o = {.caps = caps, .ncaps = 1, .settle_s = 0.02, .window_s = 0.2,
                                   .tokens_path = tokens, .on_event = record, .arg = &s};
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_hwsweep_run(&g, gd, &o, &err), 0);
    assert_int_equal(s.measured, 1);
    double want = 10000 * cbrt(0.99 * 400 / 650);
    assert_true(fabs(s.throughput[0] - want) < 0.05 * want);
    assert_true(fabs(s.power_w[0] - 396) < 0.05 * 396);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
    remove(tokens);
}

static void test_bad_token_file(void **state)
{
    char tokens[4200];
    snprintf(tokens, sizeof tokens, "%s/badtokens", nvml_fixture_dir());
    FILE *f = fopen(tokens, "w");
    assert_non_null(f);
    fputs("1764690000 100\nnot a number\n", f);
    fclose(f);
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g);
    const double caps[1] = {500};
    struct seen s = {0};
    struct pflex_hwsweep_opts o = {.caps = caps, .ncaps = 1, .window_s = 0.02,
                                   .tokens_path = tokens, .on_event = record, .arg = &s};
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_hwsweep_run(&g, gd, &o, &err), PFLEX_HWSWEEP_BAD_INPUT);
    assert_non_null(strstr(err.text, "cap 500 W: "));
    assert_non_null(strstr(err.text, "not 'UNIX_TIME TOKENS_TOTAL'"));
    assert_int_equal(s.measured, 0);
    /* A file that stops growing: no new line in the window. */
    f = fopen(tokens, "w");
    assert_non_null(f);
    fputs("1 100\n", f);
    fclose(f);
    s = (struct seen){0};
    assert_int_equal(pflex_hwsweep_run(&g, gd, &o, &err), PFLEX_HWSWEEP_BAD_INPUT);
    assert_non_null(strstr(err.text, "wrote no new line"));
    assert_int_equal(s.warnings, 1);    /* its last line predates the cap */
    assert_non_null(strstr(s.warning, "before the cap was set"));
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
    remove(tokens);
}

static void test_stop_and_halt(void **state)
{
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g);
    const double caps[2] = {500, 300};
    volatile sig_atomic_t stop = 1;
    struct seen s = {0};
    struct pflex_hwsweep_opts o = {.caps = caps, .ncaps = 2, .window_s = 0.02, .stop = &stop,
                                   .on_event = record, .arg = &s};
    pflex_error_t err = {{0}};
    /* Stopped before the first cap: nothing set. */
    assert_int_equal(pflex_hwsweep_run(&g, gd, &o, &err), PFLEX_HWSWEEP_STOPPED);
    assert_int_equal(s.set, 0);
    assert_int_equal(pflex_guard_gpu_at(gd, 0)->changed, 0);
    /* The caller halts at the first cap: set, never measured. */
    stop = 0;
    s.halt_on_set = 1;
    assert_int_equal(pflex_hwsweep_run(&g, gd, &o, &err), PFLEX_HWSWEEP_HALTED);
    assert_int_equal(s.set, 1);
    assert_int_equal(s.measured, 0);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 500000, 0);
    pflex_guard_close(gd);      /* restores */
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000, 0);
    pflex_gpu_close(&g);
}

/* A GPU lost during the window (its power read twice as the backend and
 * the guard open, then failing): -1 naming the cap and NVML's error. */
static void test_nvml_error_names_cap(void **state)
{
    setenv("FAKE_NVML_FAIL", "power/1:GPU_IS_LOST:2", 1);
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g);
    const double caps[1] = {500};
    struct pflex_hwsweep_opts o = {.caps = caps, .ncaps = 1, .window_s = 0};
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_hwsweep_run(&g, gd, &o, &err), -1);
    assert_non_null(strstr(err.text, "window must be positive"));
    o.window_s = 0.02;
    assert_int_equal(pflex_hwsweep_run(&g, gd, &o, &err), -1);
    assert_non_null(strstr(err.text, "cap 500 W: "));
    assert_non_null(strstr(err.text, "GPU_IS_LOST"));
    unsetenv("FAKE_NVML_FAIL");
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
}

int main(void)
{
    if (nvml_fixture_init("hwsweep") < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_caps),
        cmocka_unit_test(test_restore_w),
        cmocka_unit_test_setup_teardown(test_range_and_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power_only_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throughput_from_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_token_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_and_halt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nvml_error_names_cap, setup, teardown),
    };
    int failed = cmocka_run_group_tests_name("hwsweep", tests, NULL, NULL);
    if (nvml_fixture_fini() < 0)
        failed++;
    return failed;
}
