/* test_controller_standby.c — two controllers in process (period.h: fed
 * statuses, caps handed back) under standby.c, against a real etcd on
 * loopback (support/etcd_fixture: skipped without Debian's etcd-server).
 * Checked: the first to campaign leads with a fencing token, the second
 * stands by and names it; only the leader's periods push (the standby's
 * caps are left unpushed); the leader's target (given to it alone) and its
 * learner reach the standby through etcd, the learner observation for
 * observation; the leader resigning hands over within a second, with a
 * higher token; an agent's 409 (fenced) stands the new leader down at once.
 * Every wait is bounded. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "controller/ctl_int.h"
#include "controller/standby.h"
#include "support/etcd_fixture.h"

#define NG 4
#define PERIOD 1.0

static int start(void **state)
{
    (void)state;
    return etcd_fixture_start() < 0 ? -1 : 0;
}

static int stop(void **state)
{
    (void)state;
    etcd_fixture_stop();
    return 0;
}

/* One node of four GPUs running job "j", each at cap[] (its power the cap,
 * up to 600 W; its rate falling as the cap does). */
static void feed(ctl_t *c, const double cap[NG])
{
    struct agent_status *st = calloc(1, sizeof *st);
    assert_non_null(st);
    snprintf(st->host, sizeof st->host, "node-0");
    st->ngpus = NG;
    st->njobs = 1;
    double pw = 0;
    for (int g = 0; g < NG; g++) {
        double p = cap[g] < 600 ? cap[g] : 600;
        st->gpu[g] = (struct agent_gpu){.index = g, .power_w = p, .limit_w = cap[g], .min_w = 200,
                                        .max_w = 700, .ok = 1};
        pw += p;
        st->job[0].gpus[g] = g;
    }
    snprintf(st->job[0].name, sizeof st->job[0].name, "j");
    st->job[0].ngpus = NG;
    st->job[0].throughput = 1000 * (1 - 0.8 * (1 - pw / NG / 600));
    pflex_error_t err;
    assert_int_equal(ctl_node_feed(c, 0, st, 1, &err), 0);
    free(st);
}

static ctl_t *make_ctl(standby_t *s)
{
    struct ctl_config cfg = {.nagents = 1, .in_process = 1, .period_s = PERIOD, .explore_step = 0.05,
                             .may_push = standby_may_push, .fenced = standby_fenced, .lead_ud = s};
    ctl_t *c;
    pflex_error_t err;
    assert_int_equal(ctl_create(&cfg, &c, &err), 0);
    return c;
}

static standby_t *make_standby(const char *name)
{
    struct standby_config sc = {.endpoints = etcd_fixture_url(), .prefix = "/t/standby", .name = name,
                                .period_s = PERIOD};
    standby_t *s;
    pflex_error_t err;
    assert_int_equal(standby_create(&sc, &s, &err), 0);
    return s;
}

/* Wait (at most s seconds) until standby's JSON field equals want. */
static int wait_field(standby_t *sb, const char *field, const char *want, double s)
{
    for (int i = 0; i < (int)(s * 20); i++) {
        json_t *j = standby_json(sb);
        const char *v = json_string_value(json_object_get(j, field));
        int ok = v && !strcmp(v, want);
        json_decref(j);
        if (ok)
            return 1;
        etcd_fixture_sleep(0.05);
    }
    return 0;
}

static uint64_t fence_of(standby_t *sb)
{
    uint64_t f = 0;
    standby_may_push(sb, &f);
    return f;
}

/* One period of c at time t on the site's caps; the caps it hands back
 * applied when it pushed them.  Returns how many it pushed. */
static size_t period(ctl_t *c, double t, double cap[NG])
{
    feed(c, cap);
    struct ctl_period_result r;
    pflex_error_t err;
    assert_int_equal(ctl_period(c, t, &r, &err), 0);
    size_t n, pushed = 0;
    const struct ctl_cap *cp = ctl_caps(c, &n);
    for (size_t q = 0; q < n; q++)
        if (cp[q].pushed) {
            cap[cp[q].gpu] = cp[q].cap_w;
            pushed++;
        }
    return pushed;
}

static void test_takeover(void **state)
{
    (void)state;
    if (!etcd_fixture_url()) {
        print_message("etcd is not installed (Debian etcd-server): skipped\n");
        skip();
    }
    standby_t *sa = make_standby("A");
    assert_true(wait_field(sa, "role", "leader", 5));
    standby_t *sb = make_standby("B");
    assert_true(wait_field(sb, "leader", "A", 5));
    assert_true(wait_field(sb, "role", "standby", 1));
    uint64_t fa = fence_of(sa), f;
    assert_true(fa > 0);
    assert_true(standby_may_push(sa, &f) && f == fa);
    assert_false(standby_may_push(sb, &f));
    ctl_t *a = make_ctl(sa), *b = make_ctl(sb);
    /* a target given to A alone */
    struct pflex_target t;
    pflex_error_t err;
    assert_int_equal(pflex_target_parse("2000W", 0, &t, &err), 0);
    snprintf(t.id, sizeof t.id, "event");
    assert_int_equal(pflex_target_set_add(ctl_targets(a), &t, &err), 0);
    double cap[NG] = {700, 700, 700, 700};
    /* A leads: it pushes; B plans the same site once (it knows the job
     * from then on, with nothing learned) and pushes nothing */
    assert_int_equal(period(b, PERIOD, cap), 0);
    assert_int_equal(pflex_learn_count(b->jobs[0].learn), 0);
    assert_null(pflex_target_set_winner(ctl_targets(b), 1));
    for (int k = 1; k <= 12; k++) {
        assert_true(period(a, k * PERIOD, cap) > 0);
        standby_publish(sa, a);
    }
    for (int g = 0; g < NG; g++)
        assert_true(cap[g] < 700);      /* A's plan is in force */
    /* B gets A's target and learner through etcd (within 3 s) */
    size_t na = pflex_learn_count(a->jobs[0].learn);
    assert_true(na >= 3);
    int same = 0;
    for (int i = 0; i < 60 && !same; i++) {
        etcd_fixture_sleep(0.05);
        standby_take_state(sb, b);
        const struct pflex_target *w = pflex_target_set_winner(ctl_targets(b), 1);
        same = w && w->value == 2000 && !strcmp(w->id, "event") && b->njobs == 1
               && pflex_learn_count(b->jobs[0].learn) == na;
    }
    assert_true(same);
    struct pflex_learn_bin ba[200], bb[200];
    size_t nba = pflex_learn_bins_get(a->jobs[0].learn, ba, 200),
           nbb = pflex_learn_bins_get(b->jobs[0].learn, bb, 200);
    assert_int_equal(nba, nbb);
    for (size_t i = 0; i < nba; i++)
        assert_true(ba[i].n == bb[i].n && ba[i].cap_w == bb[i].cap_w && ba[i].tput == bb[i].tput);
    /* A resigns: B leads within a second, with a higher token, and pushes */
    standby_destroy(sa);
    ctl_destroy(a);
    assert_true(wait_field(sb, "role", "leader", 1));
    assert_true(standby_took_over(sb));
    assert_false(standby_took_over(sb));     /* said once */
    uint64_t fb = fence_of(sb);
    assert_true(fb > fa);
    assert_true(period(b, 13 * PERIOD, cap) > 0);
    /* an agent's 409 (etcd rebuilt below the agents' fence, say): pushes
     * wait 1 s, then 2 s, and it stays the leader with the same token,
     * never standing down and winning again (that flapped 4 times a
     * second) */
    json_t *j0 = standby_json(sb);
    json_int_t takeovers = json_integer_value(json_object_get(j0, "takeovers"));
    json_decref(j0);
    standby_fenced(sb);
    assert_false(standby_may_push(sb, &f));
    etcd_fixture_sleep(0.6);
    assert_false(standby_may_push(sb, &f));
    etcd_fixture_sleep(0.6);
    assert_true(standby_may_push(sb, &f));
    assert_true(f == fb);
    standby_fenced(sb);
    etcd_fixture_sleep(1.3);
    assert_false(standby_may_push(sb, &f));     /* the second wait is 2 s */
    etcd_fixture_sleep(0.9);
    assert_true(standby_may_push(sb, &f));
    j0 = standby_json(sb);
    assert_string_equal(json_string_value(json_object_get(j0, "role")), "leader");
    assert_int_equal(json_integer_value(json_object_get(j0, "takeovers")), takeovers);
    assert_int_equal(json_integer_value(json_object_get(j0, "fenced")), 2);
    json_decref(j0);
    assert_true(fence_of(sb) == fb);
    ctl_destroy(b);
    standby_destroy(sb);
}

static void test_bad_config(void **state)
{
    (void)state;
    standby_t *s;
    pflex_error_t err;
    struct standby_config sc = {.endpoints = "http://127.0.0.1:1", .name = "", .period_s = 1};
    assert_int_equal(standby_create(&sc, &s, &err), -1);
    sc.name = "x";
    sc.endpoints = "127.0.0.1:2379";
    assert_int_equal(standby_create(&sc, &s, &err), -1);
    assert_non_null(strstr(err.text, "127.0.0.1:2379"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_takeover),
    };
    return cmocka_run_group_tests_name("controller_standby", tests, start, stop);
}
