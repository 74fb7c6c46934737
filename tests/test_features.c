/* test_features.c — the study's windows and statistics on synthetic traces
 * whose answers are computed here independently (sorting by hand, sums). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/features.h"

#define assert_dbl(a, b, eps) do { double a_ = (a), b_ = (b); \
    if (!(fabs(a_ - b_) <= (eps)) && !(isnan(a_) && isnan(b_))) \
        fail_msg("%.17g != %.17g", a_, b_); } while (0)

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_stats(void **state)
{
    double x[20], y[20];
    for (int i = 0; i < 20; i++)
        x[i] = y[i] = (double)((i * 7) % 20);   /* 0..19 shuffled */
    /* top 10 % of 20 = the two largest: 18, 19 */
    assert_dbl(pflex_feat_stat(x, 20, PFLEX_STAT_TOP10), 18.5, 1e-12);
    memcpy(x, y, sizeof x);
    assert_dbl(pflex_feat_stat(x, 20, PFLEX_STAT_MEDIAN), 9.5, 1e-12);
    memcpy(x, y, sizeof x);
    assert_dbl(pflex_feat_stat(x, 20, PFLEX_STAT_MEAN), 9.5, 1e-12);
    memcpy(x, y, sizeof x);
    /* GSL's quantile: (n-1)p = 1.9 -> 1 + 0.9 */
    assert_dbl(pflex_feat_stat(x, 20, PFLEX_STAT_P10), 1.9, 1e-12);
    double one = 3;
    assert_dbl(pflex_feat_stat(&one, 1, PFLEX_STAT_TOP10), 3, 0);
    assert_true(isnan(pflex_feat_stat(x, 0, PFLEX_STAT_TOP10)));
}

/* A dcgm-exporter-like trace of one job on two GPUs: 10 warm-up/start-up
 * scrapes (util 0, odd DRAM values that must not count), then 40 training
 * scrapes, one with util 30 (a checkpoint: left out). */
static void test_training_window(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    double dram_train[2][64], copy_train[2][64];
    size_t nt[2] = {0, 0};
    unsigned seed = 7;
    for (int s = 0; s < 50; s++) {
        for (int g = 0; g < 2; g++) {
            double util = s < 10 ? 0 : s == 30 ? 30 : 95 + g;
            seed = seed * 1103515245u + 12345u;
            double dram = s < 10 ? 0.99 : 0.2 + 0.2 * ((seed >> 8) % 1000) / 1000.0;
            double copy = s < 10 ? 99 : 30 + 10 * ((seed >> 4) % 100) / 100.0;
            long long ms = 1764756000000LL + s * 5000LL;
            fprintf(f, "DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",Hostname=\"n\",hpc_job=\"J\"} %g %lld\n", g,
                    util, ms);
            fprintf(f, "DCGM_FI_PROF_DRAM_ACTIVE{gpu=\"%d\",Hostname=\"n\",hpc_job=\"J\"} %.6f %lld\n",
                    g, dram, ms);
            fprintf(f, "DCGM_FI_DEV_MEM_COPY_UTIL{hpc_job=\"J\",gpu=\"%d\",Hostname=\"n\"} %.4f %lld\n",
                    g, copy, ms);
            /* energy in mJ at 500 W, with a counter reset at s = 25 */
            double mj = s < 25 ? 1e9 + s * 5.0 * 500e3 : (s - 25) * 5.0 * 500e3;
            fprintf(f, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"%d\",Hostname=\"n\",hpc_job=\"J\"} "
                    "%.0f %lld\n", g, mj, ms);
            fprintf(f, "DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu=\"%d\",Hostname=\"n\",hpc_job=\"J\"} 700 %lld\n",
                    g, ms);
            if (util >= 50) {
                char t1[32], t2[32];
                snprintf(t1, sizeof t1, "%.6f", dram);
                snprintf(t2, sizeof t2, "%.4f", copy);
                dram_train[g][nt[g]] = atof(t1);
                copy_train[g][nt[g]] = atof(t2);
                nt[g]++;
            }
        }
    }
    fclose(f);
    pflex_tm_t *t = pflex_tm_create(NULL);
    pflex_error_t err;
    if (pflex_tm_read_mem(t, buf, len, "trace", NULL, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(pflex_tm_sort(t, &err), 0);
    struct pflex_feat_set set;
    struct pflex_feat_opts o = {PFLEX_STAT_TOP10, 50};
    assert_int_equal(pflex_features_from_telemetry(t, &o, &set, &err), 0);
    assert_int_equal(set.n, 1);
    assert_string_equal(set.jobs[0].job, "J");
    assert_int_equal(set.jobs[0].gpus, 2);
    /* independent: pool both GPUs' training samples, sort, mean of top 10 % */
    double pd[128], pc[128];
    size_t n = 0;
    for (int g = 0; g < 2; g++)
        for (size_t k = 0; k < nt[g]; k++, n++) {
            pd[n] = dram_train[g][k];
            pc[n] = copy_train[g][k];
        }
    assert_int_equal(n, 78);
    qsort(pd, n, sizeof *pd, cmp_d);
    qsort(pc, n, sizeof *pc, cmp_d);
    size_t k = (size_t)ceil(0.1 * (double)n);
    double md = 0, mc = 0;
    for (size_t i = n - k; i < n; i++) {
        md += pd[i];
        mc += pc[i];
    }
    md /= (double)k;
    mc /= (double)k;
    assert_dbl(set.jobs[0].v[PFLEX_FEAT_DRAM_ACTIVE], md, 1e-12);
    assert_dbl(set.jobs[0].v[PFLEX_FEAT_DRAM_COPY], md * mc / 100, 1e-12);
    assert_true(set.jobs[0].v[PFLEX_FEAT_DRAM_ACTIVE] < 0.9);   /* warm-up left out */
    /* power from the energy counter, across its reset: 500 W / 700 W */
    assert_dbl(set.jobs[0].v[PFLEX_FEAT_POWER_OVER_LIMIT], 500.0 / 700.0, 1e-9);
    assert_dbl(set.jobs[0].v[PFLEX_FEAT_LOG2_GPUS], 1, 0);
    pflex_feat_set_fini(&set);
    pflex_tm_destroy(t);
    free(buf);
}

static void test_from_sweep(void **state)
{
    const char *csv = "job,gpu,gpus,cap_w,power_w,throughput,dram_active,mem_copy_util,"
                      "tensor_active,sm_clock_mhz\n"
                      "a,NVIDIA H200,8,700,650,100,0.4,50,0.2,1980\n"
                      "a,NVIDIA H200,8,400,390,80,0.3,40,0.1,1400\n";
    pflex_sweep_t *sw;
    pflex_error_t err;
    assert_int_equal(pflex_sweep_read_mem(csv, strlen(csv), "s.csv", NULL, &sw, &err), 0);
    struct pflex_job_features jf;
    pflex_features_from_sweep_job(&sw->jobs[0], &jf);
    assert_dbl(jf.v[PFLEX_FEAT_DRAM_COPY], 0.4 * 0.5, 1e-12);
    assert_dbl(jf.v[PFLEX_FEAT_ARITH_INTENSITY], 0.5, 1e-12);
    assert_dbl(jf.v[PFLEX_FEAT_POWER_OVER_LIMIT], 650.0 / 700.0, 1e-12);
    assert_dbl(jf.v[PFLEX_FEAT_SM_CLOCK_OVER_MAX], 1.0, 1e-12);
    assert_dbl(jf.v[PFLEX_FEAT_LOG2_GPUS], 3, 0);
    assert_true(isnan(jf.v[PFLEX_FEAT_PCIE_GBS]));
    pflex_sweep_destroy(sw);
}

/* Every job of each sweep appended, in order; a sweep without telemetry
 * refused by name. */
static void test_add_sweep(void **state)
{
    static const char a[] = "job,gpus,cap_w,power_w,throughput,dram_active,mem_copy_util\n"
                            "x,2,700,650,10,0.5,40\nx,2,500,480,9,0.5,40\n"
                            "y,4,700,600,10,0.25,20\ny,4,500,450,9,0.25,20\n";
    static const char b[] = "job,cap_w,power_w,throughput,dram_active,mem_copy_util\n"
                            "z,700,650,10,1,100\nz,600,580,9,1,100\n";
    static const char bare[] = "job,cap_w,power_w,throughput\nw,700,650,10\nw,600,580,9\n";
    pflex_sweep_t *sa, *sb, *sc;
    pflex_error_t err;
    assert_int_equal(pflex_sweep_read_mem(a, strlen(a), "a.csv", NULL, &sa, &err), 0);
    assert_int_equal(pflex_sweep_read_mem(b, strlen(b), "b.csv", NULL, &sb, &err), 0);
    assert_int_equal(pflex_sweep_read_mem(bare, strlen(bare), "c.csv", NULL, &sc, &err), 0);
    struct pflex_feat_set s = {0};
    assert_int_equal(pflex_features_add_sweep(&s, sa, "a.csv", &err), 0);
    assert_int_equal(pflex_features_add_sweep(&s, sb, "b.csv", &err), 0);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.jobs[0].job, "x");
    assert_string_equal(s.jobs[1].job, "y");
    assert_string_equal(s.jobs[2].job, "z");
    assert_int_equal(s.jobs[1].gpus, 4);
    assert_float_equal(s.jobs[0].v[PFLEX_FEAT_DRAM_COPY], 0.2, 1e-12);
    assert_float_equal(s.jobs[2].v[PFLEX_FEAT_DRAM_COPY], 1, 1e-12);
    assert_int_equal(pflex_features_add_sweep(&s, sc, "c.csv", &err), -1);
    assert_string_equal(err.text, "c.csv: the sweep has no telemetry column (dram_active, "
                                  "mem_copy_util, ...)");
    assert_int_equal(s.n, 3);
    pflex_feat_set_fini(&s);
    pflex_sweep_destroy(sa);
    pflex_sweep_destroy(sb);
    pflex_sweep_destroy(sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_training_window),
        cmocka_unit_test(test_from_sweep),
        cmocka_unit_test(test_add_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
