/* test_alloc_sweep.c — the sweep reader's in-place grouping (the path a
 * large allocation input takes) gives exactly what the general grouping
 * gives.  The same random sweeps are read twice: as they are (rows of each
 * job together: in place) and with an empty telemetry column, which sends
 * them through the general counting sort; every point must match bit for
 * bit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/sweep.h"

static uint64_t rs;

static unsigned rnd(unsigned n)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (unsigned)(rs % n);
}

static void test_in_place_matches_general(void **state)
{
    size_t cap = 1 << 20;
    char *a = malloc(cap), *b = malloc(cap);
    rs = 0x1234567;
    int compared = 0;
    for (int it = 0; it < 500; it++) {
        size_t la = 0, lb = 0;
        la += (size_t)snprintf(a + la, cap - la, "job,cap_w,power_w,throughput,gpus\n");
        lb += (size_t)snprintf(b + lb, cap - lb, "job,cap_w,power_w,throughput,gpus,sm_active\n");
        unsigned jobs = 1 + rnd(40);
        for (unsigned j = 0; j < jobs; j++) {
            unsigned rows = 2 + rnd(12), g = 1 + rnd(8);
            for (unsigned k = 0; k < rows; k++) {
                unsigned c = 100 + 50 * rnd(6);     /* repeated caps, any order */
                double p = c * (0.8 + 0.01 * rnd(20)), t = 10 + rnd(1000) / 7.0;
                la += (size_t)snprintf(a + la, cap - la, "j%u,%u,%.3f,%.6g,%u\n", j, c, p, t, g);
                lb += (size_t)snprintf(b + lb, cap - lb, "j%u,%u,%.3f,%.6g,%u,\n", j, c, p, t, g);
            }
        }
        pflex_sweep_t *sa = NULL, *sb = NULL;
        pflex_error_t ea, eb;
        int ra = pflex_sweep_read_mem(a, la, "a.csv", NULL, &sa, &ea);
        int rb = pflex_sweep_read_mem(b, lb, "a.csv", NULL, &sb, &eb);
        assert_int_equal(ra, rb);
        if (ra < 0) {
            assert_string_equal(ea.text, eb.text);     /* e.g. one cap only */
            continue;
        }
        assert_int_equal(sa->njobs, sb->njobs);
        assert_false(sa->has_telemetry);
        for (size_t j = 0; j < sa->njobs; j++) {
            const struct pflex_sweep_job *x = &sa->jobs[j], *y = &sb->jobs[j];
            assert_string_equal(x->name, y->name);
            assert_int_equal(x->gpus, y->gpus);
            assert_int_equal(x->line, y->line);
            assert_int_equal(x->npoints, y->npoints);
            for (size_t k = 0; k < x->npoints; k++) {
                assert_memory_equal(&x->points[k].cap_w, &y->points[k].cap_w, sizeof(double));
                assert_memory_equal(&x->points[k].power_w, &y->points[k].power_w, sizeof(double));
                assert_memory_equal(&x->points[k].throughput, &y->points[k].throughput,
                                    sizeof(double));
                assert_int_equal(x->points[k].rows, y->points[k].rows);
                assert_int_equal(x->points[k].line, y->points[k].line);
            }
        }
        compared++;
        pflex_sweep_destroy(sa);
        pflex_sweep_destroy(sb);
    }
    print_message("%d sweeps compared\n", compared);
    assert_true(compared > 300);
    free(a);
    free(b);
}

static void test_one_cap_error_in_place(void **state)
{
    const char *s = "job,cap_w,power_w,throughput\nj,400,390,1\nj,400,380,1\nk,300,290,1\n";
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    assert_int_equal(pflex_sweep_read_mem(s, strlen(s), "t.csv", NULL, &sw, &err), -1);
    assert_null(sw);
    assert_non_null(strstr(err.text, "t.csv:2: job 'j' is measured at only one cap (400 W)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_place_matches_general),
        cmocka_unit_test(test_one_cap_error_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
