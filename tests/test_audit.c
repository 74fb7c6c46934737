/* test_audit.c — the controller's SQLite state: write, reopen, resume,
 * query.  A learner rebuilt from the stored observations after a "restart"
 * must fit exactly the curve the live one had. */
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
#include <jansson.h>
#include <sqlite3.h>
#include "pflex/io/audit.h"
#include "pflex/flex/learn.h"

static char dir[64], path[96];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/pflex-audit-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/state.db", dir);
    return 0;
}

static int teardown(void **state)
{
    char p[128];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
    rmdir(dir);
    return 0;
}

struct got_targets {
    int n;
    char names[8][32];
    double end[8];
    unsigned long long seq[8];
};

static int on_target(void *ud, const struct pflex_audit_target *t)
{
    struct got_targets *g = ud;
    if (g->n < 8) {
        snprintf(g->names[g->n], sizeof g->names[g->n], "%s/%s", t->source, t->name);
        g->end[g->n] = t->end_s;
        g->seq[g->n] = t->seq;
    }
    g->n++;
    return 0;
}

struct obs {
    pflex_learn_t *l;
    int n;
    double last_t;
};

static int on_obs(void *ud, double t, double cap, double power, double tput)
{
    struct obs *o = ud;
    assert_true(t >= o->last_t);    /* oldest first */
    o->last_t = t;
    o->n++;
    return o->l ? pflex_learn_observe(o->l, cap, power, tput, NULL) : 0;
}

static int on_cap(void *ud, const char *gpu, const char *job, double cap)
{
    double *sum = ud;
    *sum += cap;
    return 0;
}

static void test_write_reopen_resume(void **state)
{
    pflex_audit_t *a;
    pflex_error_t err;
    if (pflex_audit_open(path, &a, &err) < 0)
        fail_msg("%s", err.text);
    struct pflex_learn_config lc = {.min_cap_w = 200, .max_cap_w = 700};
    pflex_learn_t *live;
    assert_int_equal(pflex_learn_create(&lc, &live, &err), 0);
    assert_int_equal(pflex_audit_begin(a, &err), 0);
    struct pflex_audit_target t1 = {.t = 100, .source = "openadr", .name = "ev-1/0", .start_s = 100,
                                    .end_s = 1000, .value = 7e5, .ramp_s = 60, .seq = 1};
    struct pflex_audit_target t2 = {.t = 101, .source = "cli", .name = "", .start_s = 100,
                                    .end_s = INFINITY, .value = 0.8, .fraction = 1, .seq = 2};
    struct pflex_audit_target t3 = {.t = 102, .source = "openadr", .name = "ev-2/0", .start_s = 100,
                                    .end_s = 150, .value = 6e5, .seq = 3};
    struct pflex_audit_target t4 = {.t = 103, .source = "openadr", .name = "ev-3/0", .start_s = 500,
                                    .end_s = 900, .value = 5e5, .seq = 4};
    assert_int_equal(pflex_audit_target(a, &t1, &err), 0);
    assert_int_equal(pflex_audit_target(a, &t1, &err), 0);     /* seen again: not a new one */
    assert_int_equal(pflex_audit_target(a, &t2, &err), 0);
    assert_int_equal(pflex_audit_target(a, &t3, &err), 0);
    assert_int_equal(pflex_audit_target(a, &t4, &err), 0);
    const char *keep[] = {"ev-1/0", "ev-2/0"};
    assert_int_equal(pflex_audit_targets_withdraw(a, 120, "openadr", keep, 2, &err), 0);   /* ev-3 goes */
    /* 20 periods of 4 GPUs, with their readings and observations */
    for (int p = 0; p < 20; p++) {
        double t = 200 + p;
        long long id;
        struct pflex_audit_period per = {.t = t, .limit_w = 2000, .worst_w = 1900 + p, .least_w = 800,
                                         .site_power_w = p % 5 ? 1850 : NAN, .throughput = 10,
                                         .feasible = 1, .floor_breaches = p == 7, .held = 0};
        assert_int_equal(pflex_audit_period(a, &per, &id, &err), 0);
        assert_int_equal(id, p + 1);
        for (int g = 0; g < 4; g++) {
            char gpu[16];
            snprintf(gpu, sizeof gpu, "n0/%d", g);
            const char *job = g < 2 ? "job-a" : "job-b";
            double cap = 400 + p + g;
            assert_int_equal(pflex_audit_cap(a, id, gpu, job, cap, 1, cap, &err), 0);
            assert_int_equal(pflex_audit_reading(a, t, gpu, job, cap - 10, cap, 1000 - p, &err), 0);
        }
        double cap = p % 4 == 0 ? 700 : 300 + 20 * p, power = cap * 0.95, tput = 1000 * (0.5 + cap / 1400);
        assert_int_equal(pflex_audit_observation(a, t, "job-a", cap, power, tput, &err), 0);
        assert_int_equal(pflex_learn_observe(live, cap, power, tput, &err), 0);
    }
    struct pflex_learn_curve c1;
    pflex_learn_curve_init(&c1);
    assert_int_equal(pflex_learn_fit(live, &c1, &err), 0);
    assert_int_equal(pflex_audit_curve(a, 220, "job-a", c1.n, c1.x, c1.loss, c1.sd, c1.cap_w, c1.p0_w,
                                       c1.t0, &err), 0);
    assert_int_equal(pflex_audit_note(a, 207, "floor", "job-a cut past its floor", &err), 0);
    assert_int_equal(pflex_audit_commit(a, &err), 0);
    /* a period rolled back leaves nothing */
    assert_int_equal(pflex_audit_begin(a, &err), 0);
    struct pflex_audit_period bad = {.t = 999, .worst_w = 1, .least_w = 1};
    assert_int_equal(pflex_audit_period(a, &bad, NULL, &err), 0);
    assert_int_equal(pflex_audit_rollback(a), 0);
    pflex_audit_close(a);

    /* restart */
    assert_int_equal(pflex_audit_open(path, &a, &err), 0);
    struct got_targets g = {0};
    assert_int_equal(pflex_audit_load_targets(a, 130, on_target, &g, &err), 0);
    assert_int_equal(g.n, 3);   /* withdrawn ev-3 left out */
    assert_string_equal(g.names[0], "openadr/ev-1/0");
    assert_string_equal(g.names[1], "cli/");
    assert_true(isinf(g.end[1]));
    g.n = 0;
    assert_int_equal(pflex_audit_load_targets(a, 200, on_target, &g, &err), 0);
    assert_int_equal(g.n, 2);   /* ev-2 ended at 150 */
    double sum = 0;
    assert_int_equal(pflex_audit_last_caps(a, on_cap, &sum, &err), 0);
    assert_true(fabs(sum - (4 * (400 + 19) + 0 + 1 + 2 + 3)) < 1e-9);
    pflex_learn_t *resumed;
    assert_int_equal(pflex_learn_create(&lc, &resumed, &err), 0);
    struct obs o = {.l = resumed};
    assert_int_equal(pflex_audit_load_observations(a, "job-a", 0, on_obs, &o, &err), 0);
    assert_int_equal(o.n, 20);
    struct pflex_learn_curve c2;
    pflex_learn_curve_init(&c2);
    assert_int_equal(pflex_learn_fit(resumed, &c2, &err), 0);
    assert_int_equal(c2.n, c1.n);
    for (size_t i = 0; i < c1.n; i++) {
        assert_true(c1.x[i] == c2.x[i]);
        assert_true(c1.loss[i] == c2.loss[i]);
    }
    struct obs last = {0};
    assert_int_equal(pflex_audit_load_observations(a, "job-a", 5, on_obs, &last, &err), 0);
    assert_int_equal(last.n, 5);
    assert_true(last.last_t == 219);

    /* history */
    struct pflex_audit_query q = {.from_s = 0, .to_s = INFINITY};
    char *h = pflex_audit_history(a, &q, &err);
    assert_non_null(h);
    json_t *doc = json_loads(h, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "targets")), 4);
    assert_int_equal(json_array_size(json_object_get(doc, "periods")), 20);
    assert_int_equal(json_array_size(json_object_get(doc, "caps")), 80);
    assert_int_equal(json_array_size(json_object_get(doc, "readings")), 80);
    assert_int_equal(json_array_size(json_object_get(doc, "observations")), 20);
    assert_int_equal(json_array_size(json_object_get(doc, "notes")), 1);
    json_t *cv = json_array_get(json_object_get(doc, "curves"), 0);
    assert_int_equal(json_array_size(json_object_get(cv, "points")), c1.n);
    json_t *p0 = json_array_get(json_object_get(doc, "periods"), 0);
    assert_true(json_is_null(json_object_get(p0, "site_power_w")));   /* NaN stored as null */
    json_t *withdrawn = json_object_get(json_array_get(json_object_get(doc, "targets"), 3), "withdrawn");
    assert_true(json_real_value(withdrawn) == 120);
    json_decref(doc);
    free(h);
    /* filtered: one job's caps in a window, newest 10 kept, oldest first */
    struct pflex_audit_query q2 = {.from_s = 205, .to_s = 214, .job = "job-b", .what = "caps", .limit = 10};
    h = pflex_audit_history(a, &q2, &err);
    doc = json_loads(h, 0, NULL);
    json_t *caps = json_object_get(doc, "caps");
    assert_int_equal(json_array_size(caps), 10);
    assert_null(json_object_get(doc, "periods"));
    for (size_t i = 0; i < 10; i++) {
        json_t *r = json_array_get(caps, i);
        assert_string_equal(json_string_value(json_object_get(r, "job")), "job-b");
        double t = json_number_value(json_object_get(r, "t"));
        assert_true(t >= 210 && t <= 214);
    }
    json_decref(doc);
    free(h);
    struct pflex_audit_query q3 = {.to_s = INFINITY, .what = "everything"};
    assert_null(pflex_audit_history(a, &q3, &err));
    assert_non_null(strstr(err.text, "unknown table"));
    pflex_audit_close(a);
    pflex_learn_curve_fini(&c1);
    pflex_learn_curve_fini(&c2);
    pflex_learn_destroy(live);
    pflex_learn_destroy(resumed);
}

static void test_refuses(void **state)
{
    pflex_audit_t *a;
    pflex_error_t err;
    assert_int_equal(pflex_audit_open(path, &a, &err), 0);
    struct pflex_audit_target t = {.source = NULL, .start_s = 0, .value = 1};
    assert_int_equal(pflex_audit_target(a, &t, &err), -1);
    assert_int_equal(pflex_audit_cap(a, 1, NULL, "j", 1, 1, 1, &err), -1);
    assert_int_equal(pflex_audit_observation(a, 0, "j", NAN, 1, 1, &err), -1);
    pflex_audit_close(a);
    /* a database from a newer pflex is refused */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'schema'", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(pflex_audit_open(path, &a, &err), -1);
    assert_non_null(strstr(err.text, "newer"));
    assert_int_equal(pflex_audit_open("/nonexistent/dir/x.db", &a, &err), -1);
}

/* Garbage over n bytes of f at offset off. */
static void garble(const char *f, long off, size_t n)
{
    FILE *fp = fopen(f, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, off, SEEK_SET), 0);
    for (size_t i = 0; i < n; i++)
        fputc((int)((i * 2654435761u) >> 13) & 0xff, fp);
    fclose(fp);
}

/* quick_check at start: a sound database passes; 8 KB of garbage in its
 * middle, or over its header, is damaged, said in one line; set aside, the
 * file and its name move, and a missing one cannot be checked. */
static void test_check_and_set_aside(void **state)
{
    (void)state;
    char f[128], why[512], aside[256];
    snprintf(f, sizeof f, "%s/check.db", dir);
    pflex_audit_t *a;
    pflex_error_t err;
    assert_int_equal(pflex_audit_check(f, why, sizeof why, &err), -1);
    assert_int_equal(pflex_audit_open(f, &a, &err), 0);
    assert_int_equal(pflex_audit_begin(a, &err), 0);
    for (int i = 0; i < 3000; i++)
        assert_int_equal(pflex_audit_reading(a, i, "node-1/0", "job", 300 + i % 7, 400, NAN, &err), 0);
    assert_int_equal(pflex_audit_commit(a, &err), 0);
    pflex_audit_close(a);     /* checkpointed: the rows in the file itself */
    assert_int_equal(pflex_audit_check(f, why, sizeof why, &err), 0);
    assert_string_equal(why, "");
    FILE *fp = fopen(f, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fclose(fp);
    assert_true(size >= 6 * 4096);
    garble(f, size / 2 / 4096 * 4096, 8192);
    assert_int_equal(pflex_audit_check(f, why, sizeof why, &err), 1);
    assert_non_null(strstr(why, "quick_check") ? why : strstr(why, "malformed"));
    assert_null(strchr(why, '\n'));
    assert_int_equal(pflex_audit_set_aside(f, 1796670000, aside, sizeof aside, &err), 0);
    assert_non_null(strstr(aside, "/check.db.damaged-20261207T"));
    assert_int_equal(access(f, F_OK), -1);
    assert_int_equal(access(aside, F_OK), 0);
    unlink(aside);
    /* its header gone: not a database */
    assert_int_equal(pflex_audit_open(f, &a, &err), 0);
    pflex_audit_close(a);
    garble(f, 0, 100);
    assert_int_equal(pflex_audit_check(f, why, sizeof why, &err), 1);
    assert_true(why[0] != '\0');
    unlink(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_reopen_resume),
        cmocka_unit_test(test_refuses),
        cmocka_unit_test(test_check_and_set_aside),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
