/* test_calibration.c — the sim model against the Emerald A100 measurements
 * (shared/data/emerald-demo, never copied into the repository): normalised
 * throughput RMSE <= 0.05 over caps 200-400 W and PFI within +-0.05 for
 * every Emerald job.  Skips, saying so, when the shared data is absent.
 * $SHARED_DATA names the data folder; otherwise ../shared/data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/calib.h"

static const char *data_dir(void)
{
    const char *env = getenv("SHARED_DATA");
    return env && *env ? env : "../shared/data";
}

static int have_data(void)
{
    char path[4096];
    if (pflex_calib_emerald_path(data_dir(), path, sizeof path) == 0)
        return 1;
    printf("skip: no Emerald data under %s (set SHARED_DATA to the shared data folder)\n",
           data_dir());
    return 0;
}

static void check(uint64_t seed, int print)
{
    struct pflex_calib_result r[8];
    size_t n;
    pflex_error_t err;
    int rc = pflex_calibrate_emerald(data_dir(), seed, r, 8, &n, &err);
    if (rc)
        fail_msg("%s", err.text);
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) {
        if (print)
            printf("%-28s vs %-20s RMSE %.3f  PFI measured %.3f simulated %.3f (%+.3f)\n",
                   r[i].preset, r[i].measured_job, r[i].rmse, r[i].pfi_measured,
                   r[i].pfi_simulated, r[i].pfi_simulated - r[i].pfi_measured);
        assert_true(r[i].ncaps >= 5);
        assert_true(r[i].rmse <= 0.05);
        assert_true(fabs(r[i].pfi_simulated - r[i].pfi_measured) <= 0.05);
        /* The measured natural draw at the top cap is matched too (±10%). */
        size_t top = r[i].ncaps - 1;
        assert_true(fabs(r[i].simulated_power_w[top] / r[i].measured_power_w[top] - 1) < 0.10);
    }
}

static void test_emerald(void **state)
{
    if (!have_data()) {
        skip();
        return;
    }
    check(1, 1);
}

/* Not an accident of one noise draw. */
static void test_emerald_other_seeds(void **state)
{
    if (!have_data()) {
        skip();
        return;
    }
    for (uint64_t seed = 2; seed < 6; seed++)
        check(seed, 0);
}

static void test_missing_data(void **state)
{
    struct pflex_calib_result r[8];
    size_t n;
    pflex_error_t err;
    assert_int_equal(pflex_calibrate_emerald("/nonexistent", 1, r, 8, &n, &err), -1);
    assert_non_null(strstr(err.text, "/nonexistent"));
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emerald),
        cmocka_unit_test(test_emerald_other_seeds),
        cmocka_unit_test(test_missing_data),
    };
    return cmocka_run_group_tests_name("calibration", tests, NULL, NULL);
}
