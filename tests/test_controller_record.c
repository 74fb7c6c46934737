/* test_controller_record.c — the period's audit (record.c) degrades a
 * period, never fails it: the controller in process, one node fed, its
 * database a file that a second connection makes refuse every period's
 * row (a trigger, as a full disk would refuse the commit).  The period
 * still completes (0, its caps handed back) with audit_degraded set, the
 * next one after the refusal is lifted is whole again and in the audit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>
#include "controller/controller.h"
#include "controller/period.h"

static char dir[64], path[96];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/pflex-record-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/ctl.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char p[128];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
    rmdir(dir);
    return 0;
}

static void sql(const char *s)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, s, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", s, msg ? msg : "?");
    sqlite3_close(db);
}

static long periods_recorded(void)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM periods", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long n = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void test_degraded_not_failed(void **state)
{
    (void)state;
    struct ctl_config cfg = {.nagents = 1, .in_process = 1, .period_s = 5, .db_path = path};
    ctl_t *c;
    pflex_error_t err;
    assert_int_equal(ctl_create(&cfg, &c, &err), 0);
    struct pflex_target t = {.start_s = 0, .end_s = 1000, .value = 500, .unit = PFLEX_TARGET_WATTS};
    assert_int_equal(pflex_target_set_add(ctl_targets(c), &t, &err), 0);
    struct agent_status st = {.ngpus = 1, .njobs = 1,
                              .gpu = {{.index = 0, .power_w = 600, .limit_w = 700, .min_w = 200,
                                       .max_w = 700, .ok = 1}}};
    snprintf(st.job[0].name, sizeof st.job[0].name, "job-a");
    st.job[0].ngpus = 1;
    st.job[0].gpus[0] = 0;
    struct ctl_period_result r;
    size_t ncaps;
    for (int k = 0; k < 3; k++) {
        double now = 5.0 * k;
        assert_int_equal(ctl_node_feed(c, 0, &st, 1, &err), 0);
        if (k == 1)
            sql("CREATE TRIGGER refuse BEFORE INSERT ON periods BEGIN SELECT RAISE(ABORT, 'disk says no'); END;");
        if (k == 2)
            sql("DROP TRIGGER refuse");
        /* every period completes, its caps out, the target kept */
        if (ctl_period(c, now, &r, &err) != 0)
            fail_msg("period %d failed: %s", k, err.text);
        assert_int_equal(r.audit_degraded, k == 1);
        const struct ctl_cap *caps = ctl_caps(c, &ncaps);
        assert_int_equal(ncaps, 1);
        assert_true(caps[0].cap_w <= 500 + 1e-9);
        struct ctl_audit_counts ac;
        ctl_audit_counts(c, &ac);
        assert_int_equal(ac.degraded, k == 1);
    }
    ctl_destroy(c);
    /* periods 0 and 2 in the audit, the refused one not */
    assert_int_equal(periods_recorded(), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_degraded_not_failed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
