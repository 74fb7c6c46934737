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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_read)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
