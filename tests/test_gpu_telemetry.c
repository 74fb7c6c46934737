/* test_gpu_telemetry.c — live telemetry through a GPU backend (the sim's
 * GPUs): one sample of every GPU, and a run of samples at an interval,
 * sorted, each series a GPU's field, stamped with the wall clock. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "pflex/gpu.h"
#include "pflex/model.h"
#include "pflex/sim.h"
#include "pflex/telemetry.h"

static pflex_sim_job_t *sim_job(pflex_gpu_t *g)
{
    struct pflex_job_desc d;
    pflex_sim_job_t *j;
    pflex_error_t err;
    assert_int_equal(pflex_job_preset_find("llama-8b-pretrain-h200", &d), 0);
    if (pflex_sim_job_create(&d, 1, &j, &err) < 0)
        fail_msg("sim: %s", err.text);
    pflex_sim_job_gpu(j, g);
    return j;
}

static void test_samples_every(void **state)
{
    pflex_gpu_t g;
    pflex_sim_job_t *j = sim_job(&g);
    unsigned ngpu;
    pflex_error_t err;
    assert_int_equal(pflex_gpu_count(&g, &ngpu, &err), 0);
    pflex_tm_t *t = pflex_tm_create(NULL);
    assert_non_null(t);
    struct timespec t0, t1;
    clock_gettime(CLOCK_REALTIME, &t0);
    assert_int_equal(pflex_tm_sample_gpus_every(t, &g, "node1", "llama", 3, 20, &err), 0);
    clock_gettime(CLOCK_REALTIME, &t1);
    assert_true(t->nseries > 0);
    assert_int_equal(t->nsamples % 3, 0);       /* three of each series */
    int power_series = 0;
    for (size_t i = 0; i < t->nseries; i++) {
        const struct pflex_tm_series *s = &t->series[i];
        assert_string_equal(s->host, "node1");
        assert_string_equal(s->job, "llama");
        assert_true(s->gpu >= 0 && (unsigned)s->gpu < ngpu);
        power_series += s->field == PFLEX_DCGM_POWER_USAGE;
    }
    assert_int_equal(power_series, (int)ngpu);
    /* Sorted by series, then time; the samples of a series 20 ms apart at
     * least, within the call. */
    double lo = t0.tv_sec + t0.tv_nsec / 1e9, hi = t1.tv_sec + t1.tv_nsec / 1e9;
    for (size_t k = 0; k < t->nsamples; k++) {
        const struct pflex_tm_sample *s = &t->samples[k];
        assert_true(s->time_s >= lo - 1e-6 && s->time_s <= hi + 1e-6);
        if (k > 0 && t->samples[k - 1].series == s->series)
            assert_true(s->time_s - t->samples[k - 1].time_s >= 0.019);
        else if (k > 0)
            assert_true(t->samples[k - 1].series < s->series);
    }
    assert_true(hi - lo >= 0.039);              /* two waits, none after the last */
    pflex_tm_destroy(t);
    pflex_gpu_close(&g);
    pflex_sim_job_destroy(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_every),
    };
    return cmocka_run_group_tests_name("gpu_telemetry", tests, NULL, NULL);
}
