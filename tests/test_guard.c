/* test_guard.c — the limit guard against the fake libnvidia-ml.so.1 and
 * the sim backend: locks, durable originals, recovery, retries, clamping,
 * left-over caps.  Each test has its own fake state and state folder. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "pflex/hw/guard.h"
#include "pflex/hw/nvml.h"
#include "pflex/sim/sim.h"
#include "support/nvml_fixture.h"

static char run_dir[4096];

static int count_state_files(void)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls %s/*.state 2>/dev/null | wc -l", run_dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

static int setup(void **state)
{
    static int k;
    snprintf(run_dir, sizeof run_dir, "%s/run%d", nvml_fixture_dir(), k++);
    nvml_fixture_write("");
    unsetenv("FAKE_NVML_FAIL");
    unsetenv("FAKE_NVML_RANGE");
    return 0;
}

static int teardown(void **state)
{
    unsetenv("FAKE_NVML_FAIL");
    unsetenv("FAKE_NVML_RANGE");
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", run_dir);
    if (system(cmd) != 0)
        return -1;
    nvml_fixture_remove();
    return 0;
}

static pflex_guard_t *guard(pflex_gpu_t *g, const char *owner, int keep_found)
{
    static const unsigned idx[2] = {0, 1};
    struct pflex_guard_opts o = {.state_dir = run_dir, .owner = owner, .keep_found = keep_found,
                                 .backoff_s = 0.001};
    pflex_guard_t *gd = NULL;
    pflex_error_t err = {{0}};
    if (pflex_guard_open(g, idx, 2, &o, &gd, &err))
        fail_msg("pflex_guard_open: %s", err.text);
    return gd;
}

static int has_note(pflex_guard_t *gd, const char *what)
{
    for (unsigned i = 0; i < pflex_guard_note_count(gd); i++)
        if (strstr(pflex_guard_note(gd, i), what))
            return 1;
    return 0;
}

static void test_set_saves_then_restores(void **state)
{
    nvml_fixture_write("gpu1.limit_mw=650000\n");
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g, "test", 1);
    const struct pflex_guard_gpu *d = pflex_guard_gpu_find(gd, 1);
    assert_non_null(d);
    assert_float_equal(d->found_w, 650.0, 1e-9);
    assert_float_equal(d->original_w, 650.0, 1e-9);   /* kept: keep_found */
    assert_true(strncmp(d->key, "GPU-", 4) == 0);
    assert_int_equal(count_state_files(), 0);
    pflex_error_t err;
    double enf = 0;
    assert_int_equal(pflex_guard_set(gd, 1, 400, &enf, &err), 0);
    assert_float_equal(enf, 400.0, 1e-9);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 400000, 1e-9);
    assert_int_equal(count_state_files(), 1);     /* saved before the change */
    assert_int_equal(pflex_guard_set(gd, 1, 300, &enf, &err), 0);
    /* Outside the range: refused before NVML, nothing changed. */
    assert_int_equal(pflex_guard_set(gd, 0, 800, &enf, &err), -1);
    assert_non_null(strstr(err.text, "outside the device's range 200-700 W"));
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000, 1e-9);
    assert_int_equal(pflex_guard_restore_all(gd, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 650000, 1e-9);
    assert_int_equal(count_state_files(), 0);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
    /* The nvml backend's own restore must not undo the guard's. */
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 650000, 1e-9);
}

static void test_second_owner_refused(void **state)
{
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g, "first", 0);
    pflex_error_t err;
    assert_int_equal(pflex_guard_set(gd, 0, 500, NULL, &err), 0);
    /* A second open of the lock file is a second owner, even in-process. */
    pflex_gpu_t g2;
    nvml_fixture_open(&g2);
    static const unsigned one[1] = {0};
    struct pflex_guard_opts o = {.state_dir = run_dir, .owner = "second"};
    pflex_guard_t *gd2 = NULL;
    assert_int_equal(pflex_guard_open(&g2, one, 1, &o, &gd2, &err), PFLEX_GUARD_BUSY);
    assert_null(gd2);
    char want[64];
    snprintf(want, sizeof want, "pflex first, pid %ld", (long)getpid());
    assert_non_null(strstr(err.text, want));
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 500000, 1e-9);
    pflex_gpu_close(&g2);
    pflex_guard_close(gd);      /* restores */
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000, 1e-9);
    pflex_gpu_close(&g);
}

static void test_recovers_dead_owner(void **state)
{
    /* A dead owner: its state file says 700 W, the GPU is at 350 W. */
    nvml_fixture_write("gpu0.limit_mw=350000\n");
    assert_int_equal(mkdir(run_dir, 0755), 0);
    char path[4300];
    snprintf(path, sizeof path, "%s/GPU-fa4e0000-0000-4000-8000-000000000000.state", run_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"key\": \"GPU-fa4e0000-0000-4000-8000-000000000000\", \"original_w\": 700, "
          "\"owner\": \"sweep\", \"pid\": 4242}\n", f);
    fclose(f);
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g, "test", 0);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000, 1e-9);
    assert_true(has_note(gd, "pflex sweep (pid 4242) ended without restoring the power limit "
                             "(350 W found); restored the original 700 W"));
    const struct pflex_guard_gpu *d = pflex_guard_gpu_find(gd, 0);
    assert_int_equal(d->recovered, 1);
    assert_float_equal(d->original_w, 700, 1e-9);
    assert_int_equal(count_state_files(), 0);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);

}

/* A state file that is empty (a crash mid-write) or makes no sense: the
 * original is unknown, so the board's default is restored, said, and the
 * file kept aside.  (It used to fail the open and leave the GPU capped.) */
static void test_corrupt_state_restores_default(void **state)
{
    static const char *const bodies[] = {"", "{\"original_w\": \"lots\"}", "{\"orig"};
    static const unsigned one[1] = {0};
    assert_int_equal(mkdir(run_dir, 0755), 0);
    char path[4300], aside[4400];
    snprintf(path, sizeof path, "%s/GPU-fa4e0000-0000-4000-8000-000000000000.state", run_dir);
    snprintf(aside, sizeof aside, "%s.corrupt", path);
    for (size_t k = 0; k < sizeof bodies / sizeof *bodies; k++) {
        nvml_fixture_write("gpu0.limit_mw=310000\ngpu0.default_mw=650000\n");
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(bodies[k], f);
        fclose(f);
        pflex_gpu_t g;
        nvml_fixture_open(&g);
        struct pflex_guard_opts o = {.state_dir = run_dir, .backoff_s = 0.001};
        pflex_guard_t *gd = NULL;
        pflex_error_t err = {{0}};
        assert_int_equal(pflex_guard_open(&g, one, 1, &o, &gd, &err), 0);
        assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 650000, 1e-9);
        assert_true(has_note(gd, "the saved original limit is unreadable"));
        assert_true(has_note(gd, "restored the board's default 650 W (310 W found)"));
        assert_int_equal(count_state_files(), 0);
        assert_int_equal(access(aside, F_OK), 0);
        const struct pflex_guard_gpu *d = pflex_guard_gpu_find(gd, 0);
        assert_int_equal(d->recovered, 1);
        assert_float_equal(d->original_w, 650, 1e-9);
        pflex_guard_close(gd);
        pflex_gpu_close(&g);
        unlink(aside);
    }
}

static void test_left_over_cap_named(void **state)
{
    nvml_fixture_write("gpu0.limit_mw=450000\n");
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g, "test", 0);
    assert_true(has_note(gd, "the limit found, 450 W, is not the default 700 W: taken as a cap "
                             "left behind"));
    const struct pflex_guard_gpu *d = pflex_guard_gpu_find(gd, 0);
    assert_float_equal(d->original_w, 700, 1e-9);
    pflex_error_t err;
    assert_int_equal(pflex_guard_set(gd, 0, 500, NULL, &err), 0);
    pflex_guard_close(gd);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000, 1e-9);
    pflex_gpu_close(&g);

    /* With no set at all, the left-over cap is still due a restore: it
     * counts as changed, is saved (a crash still ends at the default),
     * and a restore puts the default back. */
    nvml_fixture_write("gpu0.limit_mw=300000\ngpu0.default_mw=600000\n");
    nvml_fixture_open(&g);
    gd = guard(&g, "test", 0);
    d = pflex_guard_gpu_find(gd, 0);
    assert_int_equal(d->left_over, 1);
    assert_int_equal(d->changed, 1);
    assert_int_equal(count_state_files(), 1);
    assert_int_equal(pflex_guard_restore(gd, 0, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 600000, 1e-9);
    assert_int_equal(count_state_files(), 0);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);

    /* keep_found: the found limit is the original, nothing is due. */
    nvml_fixture_write("gpu0.limit_mw=300000\ngpu0.default_mw=600000\n");
    nvml_fixture_open(&g);
    gd = guard(&g, "test", 1);
    d = pflex_guard_gpu_find(gd, 0);
    assert_int_equal(d->left_over, 0);
    assert_int_equal(d->changed, 0);
    pflex_guard_close(gd);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 300000, 1e-9);
    pflex_gpu_close(&g);
}

/* NVML answers success and the limit stays: neither the set nor the
 * restore may say it worked. */
static void test_set_not_taking_effect(void **state)
{
    nvml_fixture_write("gpu1.ignore_sets=1\n");
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g, "test", 0);
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_guard_set(gd, 1, 400, NULL, &err), -1);
    assert_non_null(strstr(err.text, "the limit reads 700 W after setting 400 W: the set did not "
                                     "take effect"));
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 700000, 1e-9);
    /* The next set takes. */
    assert_int_equal(pflex_guard_set(gd, 1, 400, NULL, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 400000, 1e-9);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);

    /* The restore's set is ignored twice: retried until the limit shows it. */
    nvml_fixture_write("");
    nvml_fixture_open(&g);
    gd = guard(&g, "test", 0);
    assert_int_equal(pflex_guard_set(gd, 0, 300, NULL, &err), 0);
    nvml_fixture_write("gpu0.limit_mw=300000\ngpu0.ignore_sets=2\n");
    assert_int_equal(pflex_guard_restore(gd, 0, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000, 1e-9);
    assert_true(has_note(gd, "restored to 700 W after 2 failed attempts (the limit reads 300 W "
                             "after setting 700 W (the set did not take effect))"));
    pflex_guard_close(gd);
    pflex_gpu_close(&g);

    /* Ignored for good: the restore fails, and the state file stays. */
    nvml_fixture_write("");
    nvml_fixture_open(&g);
    gd = guard(&g, "test", 0);
    assert_int_equal(pflex_guard_set(gd, 0, 300, NULL, &err), 0);
    nvml_fixture_write("gpu0.limit_mw=300000\ngpu0.ignore_sets=-1\n");
    assert_int_equal(pflex_guard_restore(gd, 0, &err), -1);
    assert_non_null(strstr(err.text, "restoring the power limit to 700 W failed 6 times: the "
                                     "limit reads 300 W after setting 700 W"));
    assert_int_equal(count_state_files(), 1);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 300000, 1e-9);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
}

/* Limits are compared in mW, as NVML takes them: 199.9999 W is 200000 mW. */
static void test_caps_compared_in_mw(void **state)
{
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g, "test", 0);
    pflex_error_t err = {{0}};
    double enf = 0;
    assert_int_equal(pflex_guard_set(gd, 0, 199.9999, &enf, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 200000, 1e-9);
    assert_float_equal(enf, 200, 1e-9);
    assert_int_equal(pflex_guard_set(gd, 0, 700.0004, &enf, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000, 1e-9);
    assert_int_equal(pflex_guard_set(gd, 0, 199.9994, &enf, &err), -1);
    assert_non_null(strstr(err.text, "power cap 199.999 W is outside the device's range 200-700 W "
                                     "(199999 mW, not in 200000-700000 mW)"));
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
}

static void test_transient_restore_error_retried(void **state)
{
    /* Sets: #1 the cap (ok), #2 the restore (fails), #3 the retry. */
    setenv("FAKE_NVML_FAIL", "set_limit/1:UNKNOWN:1:1", 1);
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g, "test", 0);
    pflex_error_t err;
    assert_int_equal(pflex_guard_set(gd, 1, 250, NULL, &err), 0);
    assert_int_equal(pflex_guard_restore(gd, 1, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 700000, 1e-9);
    assert_true(has_note(gd, "restored to 700 W after 1 failed attempt"));
    pflex_guard_close(gd);
    pflex_gpu_close(&g);

    /* A persistent error: the restore fails, says so, keeps the state file. */
    setenv("FAKE_NVML_FAIL", "set_limit/1:UNKNOWN:1", 1);
    nvml_fixture_open(&g);
    gd = guard(&g, "test", 0);
    assert_int_equal(pflex_guard_set(gd, 1, 250, NULL, &err), 0);
    assert_int_equal(pflex_guard_restore(gd, 1, &err), -1);
    assert_non_null(strstr(err.text, "failed 6 times"));
    assert_int_equal(count_state_files(), 1);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
    /* The next start (error gone) recovers it. */
    unsetenv("FAKE_NVML_FAIL");
    nvml_fixture_open(&g);
    gd = guard(&g, "test", 0);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 700000, 1e-9);
    assert_true(has_note(gd, "restored the original 700 W"));
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
}

static void test_original_outside_range_clamped(void **state)
{
    setenv("FAKE_NVML_RANGE", "0:100000:550000:1", 1);
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g, "test", 0);
    pflex_error_t err;
    assert_int_equal(pflex_guard_set(gd, 0, 300, NULL, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu0.max_mw"), 550000, 1e-9);
    assert_int_equal(pflex_guard_restore(gd, 0, &err), 0);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 550000, 1e-9);
    assert_true(has_note(gd, "the original limit 700 W is outside the range the device allows "
                             "now (100-550 W); restored to 550 W"));
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
}

static void test_sim_backend(void **state)
{
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find("llama-8b-pretrain-h200", &d), 0);
    pflex_sim_job_t *j;
    pflex_error_t err;
    assert_int_equal(pflex_sim_job_create(&d, 1, &j, &err), 0);
    pflex_gpu_t g;
    pflex_sim_job_gpu(j, &g);
    pflex_guard_t *gd = guard(&g, "test", 0);
    assert_string_equal(pflex_guard_gpu_at(gd, 1)->key, "sim-1");
    assert_int_equal(pflex_guard_set(gd, 1, 400, NULL, &err), 0);
    double cap;
    assert_int_equal(pflex_gpu_get_cap(&g, 1, &cap, &err), 0);
    assert_float_equal(cap, 400, 1e-9);
    pflex_guard_close(gd);
    assert_int_equal(pflex_gpu_get_cap(&g, 1, &cap, &err), 0);
    assert_float_equal(cap, pflex_sim_job_kind(j)->default_cap_w, 1e-9);
    pflex_sim_job_destroy(j);
}

/* A hold (a stop during an event): close leaves the GPU at its cap with
 * the hold in its state file; the next open finds it in force and does
 * not restore it; once the hold has ended, an open restores the original. */
static void test_hold_outlives_close(void **state)
{
    pflex_gpu_t g;
    nvml_fixture_open(&g);
    pflex_guard_t *gd = guard(&g, "agent", 0);
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_guard_set(gd, 0, 400, NULL, &err), 0);
    assert_int_equal(pflex_guard_set(gd, 1, 450, NULL, &err), 0);
    double until = (double)time(NULL) + 2;
    assert_int_equal(pflex_guard_hold(gd, 0, 400, until, &err), 0);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 400000, 1e-9);  /* held */
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 700000, 1e-9);  /* restored */
    assert_int_equal(count_state_files(), 1);

    nvml_fixture_open(&g);
    gd = guard(&g, "agent", 0);
    const struct pflex_guard_gpu *d = pflex_guard_gpu_find(gd, 0);
    assert_int_equal(d->held, 1);
    assert_int_equal(d->changed, 1);
    assert_float_equal(d->hold_w, 400, 1e-9);
    assert_float_equal(d->hold_until, until, 1e-6);
    assert_float_equal(d->original_w, 700, 1e-9);
    assert_true(has_note(gd, "left it held at 400 W until"));
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 400000, 1e-9);
    pflex_guard_close(gd);      /* still held: not restored */
    pflex_gpu_close(&g);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 400000, 1e-9);

    struct timespec nap = {2, 100000000L};
    nanosleep(&nap, NULL);
    nvml_fixture_open(&g);
    gd = guard(&g, "agent", 0);
    d = pflex_guard_gpu_find(gd, 0);
    assert_int_equal(d->held, 0);
    assert_int_equal(d->recovered, 1);
    assert_float_equal(nvml_fixture_value("gpu0.limit_mw"), 700000, 1e-9);
    assert_int_equal(count_state_files(), 0);

    /* a set on a held GPU takes it over: its close restores it */
    assert_int_equal(pflex_guard_set(gd, 1, 300, NULL, &err), 0);
    assert_int_equal(pflex_guard_hold(gd, 1, 300, (double)time(NULL) + 60, &err), 0);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 300000, 1e-9);
    nvml_fixture_open(&g);
    gd = guard(&g, "sweep", 0);
    assert_int_equal(pflex_guard_gpu_find(gd, 1)->held, 1);
    assert_int_equal(pflex_guard_set(gd, 1, 250, NULL, &err), 0);
    assert_int_equal(pflex_guard_gpu_find(gd, 1)->held, 0);
    pflex_guard_close(gd);
    pflex_gpu_close(&g);
    assert_float_equal(nvml_fixture_value("gpu1.limit_mw"), 700000, 1e-9);
    assert_int_equal(count_state_files(), 0);
}

int main(void)
{
    if (nvml_fixture_init("guard") < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_saves_then_restores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_owner_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovers_dead_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_state_restores_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_left_over_cap_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_not_taking_effect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caps_compared_in_mw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transient_restore_error_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_original_outside_range_clamped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hold_outlives_close, setup, teardown),
    };
    int failed = cmocka_run_group_tests_name("guard", tests, NULL, NULL);
    if (nvml_fixture_fini() < 0)
        failed++;
    return failed;
}
