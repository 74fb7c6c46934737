/* test_jobpolicy.c — the controller's per-job floors, weights and priors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/io/jobpolicy.h"

static void test_read(void **state)
{
    const char *csv = "# site jobs\njob,tier,weight,pfi,owner\n"
                      "train-a,flex2,2,1.8,alice\n\"train,b\",,,,bob\ninfer,flex0,,0.5,\n";
    pflex_job_policies_t p;
    pflex_error_t err;
    if (pflex_job_policies_read_mem(csv, strlen(csv), "j.csv", &p, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(p.n, 3);
    const struct pflex_job_policy *a = pflex_job_policy_find(&p, "train-a");
    assert_non_null(a);
    assert_true(a->floor == 0.75 && a->weight == 2 && a->pfi == 1.8 && a->line == 3);
    const struct pflex_job_policy *b = pflex_job_policy_find(&p, "train,b");
    assert_true(isnan(b->floor) && b->weight == 1 && isnan(b->pfi));
    assert_true(pflex_job_policy_find(&p, "infer")->floor == 1.0);
    assert_null(pflex_job_policy_find(&p, "nobody"));
    pflex_job_policies_fini(&p);
    const char *floor_csv = "job,floor\nx,0.6\n";
    assert_int_equal(pflex_job_policies_read_mem(floor_csv, strlen(floor_csv), "j.csv", &p, &err), 0);
    assert_true(p.p[0].floor == 0.6);
    pflex_job_policies_fini(&p);
    struct { const char *csv, *needle; } bad[] = {
        {"", "j.csv:1: empty"},
        {"name,floor\n", "needs a 'job'"},
        {"job,floor,tier\n", "not both"},
        {"job,floor\nx,1.5\n", "j.csv:2: column 'floor'"},
        {"job,tier\nx,flex9\n", "j.csv:2: column 'tier'"},
        {"job,weight\nx,-1\n", "j.csv:2: column 'weight'"},
        {"job,pfi\nx,0\n", "j.csv:2: column 'pfi'"},
        {"job,pfi\n,2\n", "j.csv:2: column 'job': missing"},
        {"job\na\nb\na\n", "j.csv:4: column 'job': 'a' named twice (first on line 2)"},
        {"job\n\"a\n", "j.csv"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        assert_int_equal(pflex_job_policies_read_mem(bad[i].csv, strlen(bad[i].csv), "j.csv", &p, &err), -1);
        if (!strstr(err.text, bad[i].needle))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.text, bad[i].needle);
    }
    assert_int_equal(pflex_job_policies_read("/nonexistent/jobs.csv", &p, &err), -1);
}

/* The levers and the pause contract: cap alone unless a row says pause, and
 * pause only with a budget and a max_pause. */
static void test_levers(void **state)
{
    const char *csv = "job,levers,loss_budget,max_pause\n"
                      "a,cap+pause,10%,600\nb,pause,0.05,\nc,,,\nd,cap,0.5,60\ne,pause+cap,1,1\n";
    pflex_job_policies_t p;
    pflex_error_t err;
    if (pflex_job_policies_read_mem(csv, strlen(csv), "j.csv", &p, &err) < 0)
        fail_msg("%s", err.text);
    const struct pflex_job_policy *a = pflex_job_policy_find(&p, "a");
    assert_true(a->levers == (PFLEX_LEVER_CAP | PFLEX_LEVER_PAUSE) && fabs(a->loss_budget - 0.1) < 1e-12
                && a->max_pause_s == 600);
    assert_true(pflex_job_policy_pausable(a));
    assert_false(pflex_job_policy_pausable(pflex_job_policy_find(&p, "b")));   /* no max_pause */
    const struct pflex_job_policy *c = pflex_job_policy_find(&p, "c");
    assert_true(c->levers == PFLEX_LEVER_CAP && c->loss_budget == 0 && c->max_pause_s == 0);
    assert_false(pflex_job_policy_pausable(c));
    assert_false(pflex_job_policy_pausable(pflex_job_policy_find(&p, "d")));   /* cap alone */
    assert_true(pflex_job_policy_pausable(pflex_job_policy_find(&p, "e")));
    assert_false(pflex_job_policy_pausable(NULL));
    pflex_job_policies_fini(&p);
    struct { const char *csv, *needle; } bad[] = {
        {"job,levers\nx,stop\n", "j.csv:2: column 'levers': 'stop'"},
        {"job,levers\nx,cap+\n", "j.csv:2: column 'levers'"},
        {"job,loss_budget\nx,1.5\n", "j.csv:2: column 'loss_budget': '1.5' is out of range"},
        {"job,loss_budget\nx,120%\n", "j.csv:2: column 'loss_budget'"},
        {"job,loss_budget\nx,%\n", "j.csv:2: column 'loss_budget'"},
        {"job,max_pause\nx,-5\n", "j.csv:2: column 'max_pause'"},
        {"job,max_pause\nx,1e9\n", "j.csv:2: column 'max_pause'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        assert_int_equal(pflex_job_policies_read_mem(bad[i].csv, strlen(bad[i].csv), "j.csv", &p, &err), -1);
        if (!strstr(err.text, bad[i].needle))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.text, bad[i].needle);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_read), cmocka_unit_test(test_levers)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
