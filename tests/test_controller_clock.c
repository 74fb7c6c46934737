/* test_controller_clock.c — the targets' clock (controller.h,
 * ctl_clock_now): the wall and monotonic clocks are the test's own numbers,
 * never the host's.  An event of 1000 W over [1000, 1600) s; the
 * controller in process, no site.  Checked: it follows the wall clock
 * while nothing is in force; a step forward past the event's end, or back
 * before its start, does not end the event: it lasts its remaining time on
 * the monotonic clock, then the clock follows the wall again; a step that
 * tightens the limit is followed at once; slewing (milliseconds) is
 * followed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "controller/controller.h"
#include "pflex/flex/target.h"

static ctl_t *make(void)
{
    struct ctl_config cfg = {.nagents = 1, .in_process = 1, .period_s = 5};
    ctl_t *c;
    pflex_error_t err;
    assert_int_equal(ctl_create(&cfg, &c, &err), 0);
    struct pflex_target t = {.start_s = 1000, .end_s = 1600, .value = 1000, .unit = PFLEX_TARGET_WATTS};
    assert_int_equal(pflex_target_set_add(ctl_targets(c), &t, &err), 0);
    return c;
}

static void test_follows_between_events(void **state)
{
    (void)state;
    ctl_t *c = make();
    /* the monotonic clock starts anywhere: only its deltas count */
    assert_float_equal(ctl_clock_now(c, 100, 7), 100, 1e-9);
    assert_float_equal(ctl_clock_now(c, 105.002, 12), 105.002, 1e-9);  /* slewing */
    /* no event at either instant: a step is followed at once */
    assert_float_equal(ctl_clock_now(c, 400, 17), 400, 1e-9);
    assert_float_equal(ctl_clock_now(c, 280, 22), 280, 1e-9);
    ctl_destroy(c);
}

static void test_forward_step_mid_event(void **state)
{
    (void)state;
    ctl_t *c = make();
    assert_float_equal(ctl_clock_now(c, 1100, 0), 1100, 1e-9);
    /* 30 min forward, 5 s later: the event keeps its 495 s left */
    assert_float_equal(ctl_clock_now(c, 1100 + 1800 + 5, 5), 1105, 1e-9);
    assert_float_equal(pflex_target_limit_w(ctl_targets(c), ctl_clock_now(c, 1100 + 1800 + 300, 300), 0, 1e9),
                       1000, 1e-9);
    assert_float_equal(ctl_clock_now(c, 1100 + 1800 + 499, 499), 1599, 1e-9);
    /* the event over on the monotonic clock: the wall clock again */
    assert_float_equal(ctl_clock_now(c, 1100 + 1800 + 500, 500), 1100 + 1800 + 500, 1e-9);
    assert_float_equal(ctl_clock_now(c, 1100 + 1800 + 505, 505), 1100 + 1800 + 505, 1e-9);
    ctl_destroy(c);
}

static void test_back_step_mid_event(void **state)
{
    (void)state;
    ctl_t *c = make();
    assert_float_equal(ctl_clock_now(c, 1050, 0), 1050, 1e-9);
    /* 120 s back: before the event's start on the wall clock, held */
    assert_float_equal(ctl_clock_now(c, 1050 - 120 + 5, 5), 1055, 1e-9);
    assert_float_equal(ctl_clock_now(c, 1050 - 120 + 10, 10), 1060, 1e-9);
    /* 120 s back but still within the event: the wall clock, as tight */
    ctl_destroy(c);
    c = make();
    assert_float_equal(ctl_clock_now(c, 1300, 0), 1300, 1e-9);
    assert_float_equal(ctl_clock_now(c, 1300 - 120 + 5, 5), 1185, 1e-9);
    ctl_destroy(c);
}

static void test_step_into_event(void **state)
{
    (void)state;
    ctl_t *c = make();
    assert_float_equal(ctl_clock_now(c, 900, 0), 900, 1e-9);
    /* forward into the event: the tighter limit, at once */
    assert_float_equal(ctl_clock_now(c, 1200, 5), 1200, 1e-9);
    ctl_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follows_between_events),
        cmocka_unit_test(test_forward_step_mid_event),
        cmocka_unit_test(test_back_step_mid_event),
        cmocka_unit_test(test_step_into_event),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
