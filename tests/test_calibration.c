/* test_calibration.c — the sim model against the measurements it is
 * calibrated on (shared/data: the Emerald A100 sweeps and the real uncapped
 * H200 runs, never copied into the repository): normalised throughput RMSE
 * <= 0.03 over caps 200-400 W for every Emerald job, the documented fit
 * errors and counters of the real runs, energy per work under caps, that no
 * PFI is a calibration target, and the documented out-of-sample PFI errors.
 * Skips, saying so, when the shared data is absent.  $PFLEX_SHARED_DATA (or
 * $SHARED_DATA) names the data folder; otherwise ../shared/data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "pflex/sim/calib.h"

static const char *data_dir(void)
{
    const char *env = getenv("PFLEX_SHARED_DATA");
    if (!env || !*env)
        env = getenv("SHARED_DATA");
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

/* The errors docs/sim-model.md section 5 states for the constants in the
 * source (tools/calibrate.c prints them): in sample, on the physical
 * measurements the constants were fitted to. */
#define DOC_H200_TPUT_WORST 0.121       /* worst |tokens/s error| of the real H200 runs */
#define DOC_H200_POWER_WORST 0.029
#define DOC_H200_CLOCK_WORST 0.049
#define DOC_RMSE_MEAN 0.0156            /* Emerald normalised throughput, 200-400 W */
#define DOC_RMSE_MAX 0.0265
/* The judge: the study's headline PFIs simulated with those constants
 * (never fitted to any PFI). */
#define DOC_JUDGE_MAE 0.209
#define DOC_JUDGE_RHO 0.552

static int have_reals(struct pflex_calib_reals *re)
{
    pflex_error_t err;
    if (pflex_calib_reals_load(data_dir(), re, &err) == 0)
        return 1;
    printf("skip: %s (set PFLEX_SHARED_DATA to the shared data folder)\n", err.text);
    return 0;
}

static void test_documented_errors(void **state)
{
    static struct pflex_calib_reals re;
    if (!have_data() || !have_reals(&re)) {
        skip();
        return;
    }
    pflex_sweep_t *em;
    pflex_error_t err;
    assert_int_equal(pflex_calib_emerald_load(data_dir(), &em, &err), 0);
    static struct pflex_calib_eval ev;
    assert_int_equal(pflex_calib_evaluate(em, &re, &pflex_sim_fit_default, &ev, &err), 0);
    pflex_sweep_destroy(em);
    double wt = 0, wp = 0, wc = 0, rmse_mean = 0, rmse_max = 0;
    assert_int_equal(ev.nreal, re.n);
    for (size_t i = 0; i < re.n; i++) {
        const struct pflex_calib_real *m = &re.r[i];
        const struct pflex_calib_real_sim *s = &ev.real[i];
        double et = s->tokens_per_s / m->tokens_per_s - 1, ep = s->power_w / m->power_w - 1;
        double ec = s->sm_clock_mhz / m->sm_clock_mhz - 1;
        printf("%-12s tokens/s %+.3f power %+.3f clock %+.3f  dram %.2f/%.2f tensor %.2f/%.2f "
               "sm %.2f/%.2f mem_copy %.0f/%.0f\n", m->name, et, ep, ec, s->dram_active,
               m->dram_active, s->tensor_active, m->tensor_active, s->sm_active, m->sm_active,
               s->mem_copy_util, m->mem_copy_util);
        wt = fmax(wt, fabs(et));
        wp = fmax(wp, fabs(ep));
        wc = fmax(wc, fabs(ec));
        /* Counters in sample: within 0.1 of what DCGM read, MEM_COPY_UTIL
         * within 10 points. */
        assert_true(fabs(s->dram_active - m->dram_active) < 0.1);
        assert_true(fabs(s->tensor_active - m->tensor_active) < 0.1);
        assert_true(fabs(s->sm_active - m->sm_active) < 0.1);
        assert_true(fabs(s->mem_copy_util - m->mem_copy_util) < 10);
    }
    for (int p = 0; p < PFLEX_CALIB_EMERALD_JOBS; p++) {
        rmse_mean += ev.rmse_emerald[p] / PFLEX_CALIB_EMERALD_JOBS;
        rmse_max = fmax(rmse_max, ev.rmse_emerald[p]);
    }
    printf("H200 worst |error|: tokens/s %.3f power %.3f clock %.3f; Emerald RMSE mean %.4f max "
           "%.4f\n", wt, wp, wc, rmse_mean, rmse_max);
    assert_true(fabs(wt - DOC_H200_TPUT_WORST) < 0.0015);
    assert_true(fabs(wp - DOC_H200_POWER_WORST) < 0.0015);
    assert_true(fabs(wc - DOC_H200_CLOCK_WORST) < 0.0015);
    assert_true(fabs(rmse_mean - DOC_RMSE_MEAN) < 0.0005);
    assert_true(fabs(rmse_max - DOC_RMSE_MAX) < 0.0005);
}

/* The calibration scores physical measurements only: every residual
 * belongs to an Emerald curve, a throughput point or a real run, none to a
 * study group, and without the measured data only the throughput points
 * are left. */
static void test_no_pfi_in_the_fit(void **state)
{
    static struct pflex_calib_eval ev;
    pflex_error_t err;
    assert_int_equal(pflex_calib_evaluate(NULL, NULL, &pflex_sim_fit_default, &ev, &err), 0);
    assert_int_equal(ev.n, PFLEX_CALIB_MFU_POINTS);
    for (size_t i = 0; i < ev.n; i++)
        assert_true(ev.job[i] >= PFLEX_CALIB_EMERALD_JOBS && ev.job[i] < PFLEX_CALIB_H200_FIRST);
}

/* The judge reproduces the documented out-of-sample PFI errors. */
static void test_judge(void **state)
{
    static struct pflex_calib_judge jd;
    pflex_error_t err;
    assert_int_equal(pflex_calib_judge(&pflex_sim_fit_default, &jd, &err), 0);
    assert_int_equal(jd.n, 35);
    printf("judge: headline mean |error| %.3f, Spearman %.3f\n", jd.headline_mae,
           jd.headline_rho);
    assert_true(fabs(jd.headline_mae - DOC_JUDGE_MAE) < 0.0015);
    assert_true(fabs(jd.headline_rho - DOC_JUDGE_RHO) < 0.0015);
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

/* The device runs (the repository's data/h200-device, or
 * $PFLEX_DEVICE_DATA): the jobs predicted with the constants in the source,
 * against the bounds (tokens/s 25 %, power and SM clock 10 %), those
 * of the fit set and the unseen ones apart; docs/sim-model.md section 5
 * states how many are within them and the mean |tokens/s error|, `make
 * calibrate` prints each. */
#define DOC_DEV_RUNS 20
#define DOC_DEV_UNSEEN 7
#define DOC_DEV_WITHIN_FIT 12           /* of 13 */
#define DOC_DEV_WITHIN_UNSEEN 4         /* of 7 */
#define DOC_DEV_TPUT_MEAN_UNSEEN 0.140

static const char *device_dir(void)
{
    const char *env = getenv("PFLEX_DEVICE_DATA");
    return env && *env ? env : "data/h200-device";
}

static void test_device_runs(void **state)
{
    static struct pflex_calib_reals re;
    static struct pflex_calib_eval ev;
    pflex_error_t err;
    memset(&re, 0, sizeof re);
    if (pflex_calib_device_load(device_dir(), &re, &err) < 0) {
        printf("skip: %s (set PFLEX_DEVICE_DATA to data/h200-device)\n", err.text);
        skip();
        return;
    }
    assert_int_equal(re.n, DOC_DEV_RUNS);
    assert_int_equal(pflex_calib_evaluate(NULL, &re, &pflex_sim_fit_default, &ev, &err), 0);
    int within[2] = {0, 0}, unseen = 0, nlim = 0;
    double mean = 0, lim[64];
    for (size_t i = 0; i < re.n; i++) {
        const struct pflex_calib_real *m = &re.r[i];
        const struct pflex_calib_real_sim *s = &ev.real[i];
        double et = s->tokens_per_s / m->tokens_per_s - 1, ep = s->power_w / m->power_w - 1;
        double ec = s->sm_clock_mhz / m->sm_clock_mhz - 1;
        printf("%-14s %-6s rate %+.3f power %+.3f clock %+.3f\n", m->name,
               m->in_fit ? "fit" : "unseen", et, ep, ec);
        within[m->in_fit] += fabs(et) <= 0.25 && fabs(ep) <= 0.10 && fabs(ec) <= 0.10;
        unseen += !m->in_fit;
        mean += m->in_fit ? 0 : fabs(et);
        if (m->sm_clock_mhz < 1900 && nlim < 64)   /* power-limited: the limiter's margin */
            lim[nlim++] = s->power_w - m->power_w;
        assert_int_equal(m->machine, 1);
        if (m->unit == PFLEX_CALIB_FLOP)        /* a large GEMM loop keeps the tensor pipe busy */
            assert_true(s->tensor_active > 0.5 && m->tensor_active > 0.5);
        if (m->unit == PFLEX_CALIB_BYTE)        /* a copy streams memory, no tensor work */
            assert_true(s->dram_active > 0.5 && s->tensor_active == 0);
    }
    mean /= unseen > 0 ? unseen : 1;
    /* The power loop's margin (guard, measured by tools/device/limiter.py):
     * and window (whole steps held): the power-limited runs' power,
     * simulated less measured, has its median within 3 W (the earlier 0.5 %
     * guard gave +4 W and more; the 1.19 % guard with each phase held
     * apart, -13.4 W). */
    for (int a = 1; a < nlim; a++)
        for (int b = a; b > 0 && lim[b - 1] > lim[b]; b--) {
            double t = lim[b];
            lim[b] = lim[b - 1];
            lim[b - 1] = t;
        }
    assert_true(nlim >= 5);
    double med = nlim % 2 ? lim[nlim / 2] : 0.5 * (lim[nlim / 2 - 1] + lim[nlim / 2]);
    printf("power-limited device runs: %d, power simulated - measured median %+.1f W\n", nlim, med);
    assert_true(fabs(med) < 3.0);
    printf("device runs within the bounds: %d of %zu in the fit set, %d of %d unseen (mean "
           "|tokens/s error| %.3f)\n", within[1], re.n - (size_t)unseen, within[0], unseen, mean);
    assert_int_equal(unseen, DOC_DEV_UNSEEN);
    assert_int_equal(within[1], DOC_DEV_WITHIN_FIT);
    assert_int_equal(within[0], DOC_DEV_WITHIN_UNSEEN);
    assert_true(fabs(mean - DOC_DEV_TPUT_MEAN_UNSEEN) < 0.0015);
}

/* A device folder that is not there, or a malformed row: a message naming
 * the file (and line), never a crash. */
static void test_device_bad_input(void **state)
{
    static struct pflex_calib_reals re;
    pflex_error_t err;
    memset(&re, 0, sizeof re);
    assert_int_equal(pflex_calib_device_load("/nonexistent", &re, &err), -1);
    assert_non_null(strstr(err.text, "/nonexistent/measured.csv"));
    char dir[] = "calib-dev-XXXXXX";
    if (!mkdtemp(dir))
        fail_msg("mkdtemp");
    char path[64];
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    FILE *f = fopen(path, "w");
    fputs("job,tokens_per_s,power_w,sm_clock_mhz,dram_active,tensor_active,sm_active,"
          "mem_copy_util,unit,size,run\nub_gemm,1e15,600,1500,0.1,0.9,0.9,20,flop,,run1\n", f);
    fclose(f);
    assert_int_equal(pflex_calib_device_load(dir, &re, &err), -1);
    printf("%s\n", err.text);
    assert_non_null(strstr(err.text, "measured.csv:2:"));
    remove(path);
    rmdir(dir);
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
        cmocka_unit_test(test_no_pfi_in_the_fit),
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_energy_per_work),
        cmocka_unit_test(test_device_runs),
        cmocka_unit_test(test_device_bad_input),
        cmocka_unit_test(test_missing_data),
    };
    return cmocka_run_group_tests_name("calibration", tests, NULL, NULL);
}
