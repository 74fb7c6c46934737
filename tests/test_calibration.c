/* test_calibration.c — the sim model against the Emerald A100 measurements
 * (shared/data/emerald-demo, never copied into the repository): normalised
 * throughput RMSE <= 0.03 over caps 200-400 W for every Emerald job, the
 * documented fit errors, energy per work under caps.  Skips, saying so, when the shared data is absent.
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
        /* Normalised throughput within 0.03 RMSE over 200-400 W (in sample
         * at most 0.018, left out at most 0.024: docs/sim-model.md). */
        assert_true(r[i].rmse <= 0.03);
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

/* The documented errors of the constants in the source (docs/sim-model.md
 * section 4, printed by `make calibrate`): in sample, headline ratio PFI
 * mean |error| 0.189 and Emerald curve RMSE mean 0.0099, max 0.0134; the
 * leave-one-job-out PFI error 0.253.  The constants must reproduce them,
 * the in-sample error must stay within the leave-one-out one, and no group
 * may be missed by more than the worst leave-one-out miss (0.91). */
#define DOC_PFI_ABS 0.189
#define DOC_RMSE_MEAN 0.0099
#define DOC_RMSE_MAX 0.0134
#define DOC_LOO_PFI_ABS 0.253
#define DOC_LOO_PFI_WORST 0.91

static void test_documented_errors(void **state)
{
    if (!have_data()) {
        skip();
        return;
    }
    pflex_sweep_t *em;
    pflex_error_t err;
    assert_int_equal(pflex_calib_emerald_load(data_dir(), &em, &err), 0);
    struct pflex_calib_eval ev;
    assert_int_equal(pflex_calib_evaluate(em, &pflex_sim_fit_default, &ev, &err), 0);
    pflex_sweep_destroy(em);
    double pfi_abs = 0, rmse_mean = 0, rmse_max = 0;
    for (int g = 0; g < 25; g++) {
        double e = fabs(ev.pfi_sim[g] - ev.pfi_measured[g]);
        pfi_abs += e / 25;
        if (e > DOC_LOO_PFI_WORST)
            fail_msg("headline group %d: PFI %.3f simulated, %.2f measured", g, ev.pfi_sim[g],
                     ev.pfi_measured[g]);
    }
    for (int p = 0; p < PFLEX_CALIB_EMERALD_JOBS; p++) {
        rmse_mean += ev.rmse_emerald[p] / PFLEX_CALIB_EMERALD_JOBS;
        rmse_max = fmax(rmse_max, ev.rmse_emerald[p]);
    }
    printf("headline PFI mean |error| %.3f (documented %.3f); Emerald RMSE mean %.4f max %.4f\n",
           pfi_abs, DOC_PFI_ABS, rmse_mean, rmse_max);
    assert_true(fabs(pfi_abs - DOC_PFI_ABS) < 0.0015);
    assert_true(pfi_abs <= DOC_LOO_PFI_ABS);
    assert_true(fabs(rmse_mean - DOC_RMSE_MEAN) < 0.0005);
    assert_true(fabs(rmse_max - DOC_RMSE_MAX) < 0.0005);
}

/* Energy per unit of work under a cap, against the measured boards: at
 * 200 W the Emerald A100s use 0.68-0.82x the energy per token of 400 W, at
 * 100 W 1.18-1.47x (dvfs_sweep.csv).  From 200 W up the model must be
 * within 0.12 of each measured ratio (at 100 W it is printed: up to 0.3
 * high): static, leakage and memory power that caps do not remove. */
static void test_energy_per_work(void **state)
{
    if (!have_data()) {
        skip();
        return;
    }
    struct pflex_calib_result r[8];
    size_t n;
    pflex_error_t err;
    assert_int_equal(pflex_calibrate_emerald(data_dir(), 1, r, 8, &n, &err), 0);
    for (size_t i = 0; i < n; i++) {
        size_t top = r[i].ncaps - 1;
        for (size_t k = 0; k < top; k++) {
            double em = r[i].measured_power_w[k] / r[i].measured_power_w[top] / r[i].measured[k];
            double es = r[i].simulated_power_w[k] / r[i].simulated_power_w[top] / r[i].simulated[k];
            if (r[i].cap_w[k] == 100 || r[i].cap_w[k] == 200)
                printf("%-22s %3.0f W: energy/work %.2f measured, %.2f simulated\n",
                       r[i].measured_job, r[i].cap_w[k], em, es);
            if (r[i].cap_w[k] >= 200 && fabs(es - em) > 0.12)
                fail_msg("%s at %.0f W: energy per work %.2f simulated, %.2f measured",
                         r[i].measured_job, r[i].cap_w[k], es, em);
        }
    }
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
        cmocka_unit_test(test_documented_errors),
        cmocka_unit_test(test_energy_per_work),
        cmocka_unit_test(test_missing_data),
    };
    return cmocka_run_group_tests_name("calibration", tests, NULL, NULL);
}
