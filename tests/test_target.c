/* test_target.c — site power targets: text forms, latest wins, ramps,
 * schedule CSV.
 *
 * Times are checked against the C library's timegm (an independent
 * calendar), the smallest limit over a window against dense sampling of
 * the limit itself on random target sets. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <gsl/gsl_rng.h>
#include "pflex/flex/target.h"

/* cmocka compares floats in single precision; unix times need doubles. */
#define assert_near(a, b, eps) near_((a), (b), (eps), #a, __LINE__)
static void near_(double a, double b, double eps, const char *what, int line)
{
    if (a == b || fabs(a - b) <= eps)
        return;
    fail_msg("line %d: %s = %.9g, expected %.9g (within %g)", line, what, a, b, eps);
}

static void test_values(void **state)
{
    double v;
    enum pflex_target_unit u;
    pflex_error_t err;
    assert_int_equal(pflex_target_parse_value("700kW", &v, &u, &err), 0);
    assert_near(v, 700e3, 1e-9);
    assert_int_equal(u, PFLEX_TARGET_WATTS);
    assert_int_equal(pflex_target_parse_value("1.2MW", &v, &u, &err), 0);
    assert_near(v, 1.2e6, 1e-6);
    assert_int_equal(pflex_target_parse_value("650000W", &v, &u, &err), 0);
    assert_near(v, 650000, 0);
    assert_int_equal(pflex_target_parse_value("1.2e6 W", &v, &u, &err), 0);
    assert_near(v, 1.2e6, 1e-6);
    assert_int_equal(pflex_target_parse_value("100%", &v, &u, &err), 0);
    assert_near(v, 1, 0);
    assert_int_equal(pflex_target_parse_value("1W", &v, &u, &err), 0);
    assert_int_equal(pflex_target_parse_value("1GW", &v, &u, &err), -1);
    assert_int_equal(pflex_target_parse_value("1000MW", &v, &u, &err), 0);
    /* a number without a unit: 75 W or 75 %?  The operator says which */
    assert_int_equal(pflex_target_parse_value("75", &v, &u, &err), -1);
    assert_string_equal(err.text, "a target needs a unit: W or % (e.g. 75% or 75kW)");
    assert_int_equal(pflex_target_parse_value("80%", &v, &u, &err), 0);
    assert_near(v, 0.8, 1e-12);
    assert_int_equal(u, PFLEX_TARGET_FRACTION);
    assert_int_equal(pflex_target_parse_value("0.75x", &v, &u, &err), 0);
    assert_near(v, 0.75, 0);
    /* each refused with what is wrong with it */
    struct { const char *s, *why; } bad[] = {
        {"", "empty"}, {"kW", "not a target"}, {"-5kW", "negative"}, {"0W", "positive"},
        {"12 parsecs", "unknown unit"}, {"nan", "not a target"}, {"inf", "not a target"},
        {"infW", "not a target"}, {"2000%", "over 100 %"}, {"151%", "over 100 %"},
        {"100.5%", "over 100 %"}, {"1.01x", "over 100 %"}, {"5e13W", "over 1 GW"},
        {"1e-9W", "under 1 W"}, {"0.5W", "under 1 W"}, {"1e-300kW", "under 1 W"},
        {"0x1p4W", "hexadecimal"}, {"0X10kW", "hexadecimal"}, {"+75%", "not a target"},
        {" 75%", "not a target"}, {"500mW", "milliwatts"}, {"75", "needs a unit"},
        {"1e400W", "out of range"}, {"75%%", "unknown unit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        if (pflex_target_parse_value(bad[i].s, &v, &u, &err) != -1)
            fail_msg("'%s' accepted", bad[i].s);
        if (!strstr(err.text, bad[i].why))
            fail_msg("'%s': '%s' lacks '%s'", bad[i].s, err.text, bad[i].why);
    }
    /* the bounds OpenADR's values are held to */
    assert_int_equal(pflex_target_check_value(1e-297, PFLEX_TARGET_WATTS, &err), -1);
    assert_int_equal(pflex_target_check_value(1.51, PFLEX_TARGET_FRACTION, &err), -1);
    assert_int_equal(pflex_target_check_value(0.75, PFLEX_TARGET_FRACTION, &err), 0);
    assert_int_equal(pflex_target_check_value(5000, PFLEX_TARGET_WATTS, &err), 0);
}

/* The one unit grammar every option and column shares. */
static void test_quantities(void **state)
{
    (void)state;
    double v;
    enum pflex_target_unit u;
    pflex_error_t err;
    const unsigned pw = PFLEX_QTY_POWER | PFLEX_QTY_BARE_W, sh = PFLEX_QTY_SHARE | PFLEX_QTY_BARE_FRACTION;
    assert_int_equal(pflex_quantity_parse("200kW", pw, "power", &v, &u, &err), 0);
    assert_near(v, 200e3, 0);
    assert_int_equal(u, PFLEX_TARGET_WATTS);
    assert_int_equal(pflex_quantity_parse("350", pw, "power", &v, &u, &err), 0);
    assert_near(v, 350, 0);
    assert_int_equal(pflex_quantity_parse("90%", sh, "share", &v, &u, &err), 0);
    assert_near(v, 0.9, 1e-15);
    assert_int_equal(u, PFLEX_TARGET_FRACTION);
    assert_int_equal(pflex_quantity_parse("0.3", sh, "share", &v, &u, &err), 0);
    assert_near(v, 0.3, 0);
    /* ranges are the caller's: a bare 30 is a fraction of 30 */
    assert_int_equal(pflex_quantity_parse("30", sh, "share", &v, &u, &err), 0);
    assert_near(v, 30, 0);
    assert_int_equal(pflex_quantity_parse("30%", pw, "power", &v, &u, &err), -1);
    assert_non_null(strstr(err.text, "is a share"));
    assert_int_equal(pflex_quantity_parse("3kW", sh, "share", &v, &u, &err), -1);
    assert_non_null(strstr(err.text, "is a power"));
    assert_int_equal(pflex_quantity_parse("0.5", PFLEX_QTY_SHARE, "budget", &v, &u, &err), -1);
    assert_string_equal(err.text, "a budget needs a unit: % (e.g. 0.5%)");
    assert_int_equal(pflex_quantity_parse("7", PFLEX_QTY_POWER, "cap", &v, &u, &err), -1);
    assert_string_equal(err.text, "a cap needs a unit: W, kW or MW (e.g. 7W)");
    assert_int_equal(pflex_quantity_parse("0x10W", pw, "power", &v, &u, &err), -1);
    assert_int_equal(pflex_quantity_parse("", pw, "power", &v, &u, &err), -1);
    assert_int_equal(pflex_quantity_parse("5 parsecs", pw, "power", &v, &u, &err), -1);
    assert_non_null(strstr(err.text, "unknown unit"));
    /* held to a range: what is wrong, and what was probably meant */
    assert_int_equal(pflex_quantity_parse_in("30%", sh, "share", 0, 1, &v, &err), 0);
    assert_near(v, 0.3, 1e-15);
    assert_int_equal(pflex_quantity_parse_in("30", sh, "share", 0, 1, &v, &err), -1);
    assert_string_equal(err.text, "30 is a fraction outside [0, 1]: did you mean 30%?");
    assert_int_equal(pflex_quantity_parse_in("150%", sh, "share", 0, 1, &v, &err), -1);
    assert_string_equal(err.text, "150% is outside [0 %, 100 %]");
    assert_int_equal(pflex_quantity_parse_in("2kW", pw, "power", 0, 1000, &v, &err), -1);
    assert_string_equal(err.text, "2kW is 2000 W, outside [0, 1000] W");
}

static void test_durations(void **state)
{
    double d;
    pflex_error_t err;
    struct { const char *s; double want; } ok[] = {
        {"90s", 90}, {"15m", 900}, {"2h", 7200}, {"1d", 86400}, {"1h30m", 5400}, {"0", 0},
        {"45", 45}, {"PT15M", 900}, {"PT1H30M", 5400}, {"P1D", 86400}, {"PT0.5S", 0.5},
        {"P1W", 7 * 86400}, {"P1DT1H", 90000}, {"PT0S", 0},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        assert_int_equal(pflex_target_parse_duration(ok[i].s, &d, &err), 0);
        assert_near(d, ok[i].want, 1e-9);
    }
    assert_int_equal(pflex_target_parse_duration("P9999Y", &d, &err), 0);
    assert_true(isinf(d));
    assert_int_equal(pflex_target_parse_duration("forever", &d, &err), 0);
    assert_true(isinf(d));
    const char *bad[] = {"", "P", "PT", "-5m", "5x", "PT5D", "P5H", "PTT5M", "P5M5", "m"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (pflex_target_parse_duration(bad[i], &d, &err) != -1)
            fail_msg("'%s' accepted", bad[i]);
}

static void test_times(void **state)
{
    double t;
    pflex_error_t err;
    struct tm tm = {.tm_year = 2026 - 1900, .tm_mon = 4, .tm_mday = 3, .tm_hour = 18};
    double want = (double)timegm(&tm);
    assert_int_equal(pflex_target_parse_time("2026-05-03T18:00:00Z", 0, &t, &err), 0);
    assert_near(t, want, 0);
    assert_int_equal(pflex_target_parse_time("2026-05-03T20:00:00+02:00", 0, &t, &err), 0);
    assert_near(t, want, 0);
    assert_int_equal(pflex_target_parse_time("2026-05-03T17:30:00.250-00:30", 0, &t, &err), 0);
    assert_near(t, want + 0.25, 1e-6);
    assert_int_equal(pflex_target_parse_time("now", 1000, &t, &err), 0);
    assert_near(t, 1000, 0);
    assert_int_equal(pflex_target_parse_time("+15m", 1000, &t, &err), 0);
    assert_near(t, 1900, 0);
    assert_int_equal(pflex_target_parse_time("@1700000000", 0, &t, &err), 0);
    assert_near(t, 1700000000, 0);
    const char *bad[] = {"", "2026-13-01T00:00:00Z", "2026-05-03T25:00:00Z", "2026-05-03X",
                         "2026-05-03T18:00:00+2", "tomorrow", "@x", "+forever", "2026-02-30",
                         "@0x10", "@1e3x", "@inf", "@nan"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (pflex_target_parse_time(bad[i], 0, &t, &err) != -1)
            fail_msg("'%s' accepted", bad[i]);
    /* from the unix epoch to 2100: before it, or the year 5138, is out of
     * range as such (not a time the check of a step reads as "now") */
    struct { const char *s, *why; } range[] = {
        {"@-1", "before 1970-01-01T00:00:00Z"},
        {"1969-12-31T23:59:59Z", "before 1970-01-01T00:00:00Z"},
        {"@100000000000", "5138-11-16T09:46:40Z is out of range"},
        {"5138-01-01T00:00:00Z", "out of range"},
        {"2100-01-01T00:00:00Z", "out of range"},
        {"+P200Y", "out of range"},
    };
    for (size_t i = 0; i < sizeof range / sizeof *range; i++) {
        memset(&err, 0, sizeof err);
        if (pflex_target_parse_time(range[i].s, 1.7e9, &t, &err) != -1)
            fail_msg("'%s' accepted", range[i].s);
        if (!strstr(err.text, range[i].why))
            fail_msg("'%s': '%s' lacks '%s'", range[i].s, err.text, range[i].why);
    }
    assert_int_equal(pflex_target_parse_time("@0", 0, &t, &err), 0);
    assert_int_equal(pflex_target_parse_time("2099-12-31T23:59:59Z", 0, &t, &err), 0);

    /* Formatting and parsing agree with timegm on random instants. */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 7);
    for (int i = 0; i < 2000; i++) {
        time_t s = (time_t)gsl_rng_uniform_int(r, 4000000000UL);
        struct tm g;
        gmtime_r(&s, &g);
        char want_s[64], got[64];
        strftime(want_s, sizeof want_s, "%Y-%m-%dT%H:%M:%SZ", &g);
        pflex_target_format_time((double)s, got, sizeof got);
        assert_string_equal(got, want_s);
        assert_int_equal(pflex_target_parse_time(got, 0, &t, &err), 0);
        assert_near(t, (double)s, 0);
    }
    gsl_rng_free(r);
}

static void test_spec(void **state)
{
    struct pflex_target t;
    pflex_error_t err;
    assert_int_equal(pflex_target_parse("700kW,start=+5m,for=2h,ramp=10m,priority=3", 1000, &t, &err), 0);
    assert_near(t.value, 700e3, 0);
    assert_near(t.start_s, 1300, 0);
    assert_near(t.end_s, 1300 + 7200, 0);
    assert_near(t.ramp_s, 600, 0);
    assert_int_equal(t.priority, 3);
    assert_string_equal(t.source, "cli");
    assert_int_equal(pflex_target_parse("80%", 1000, &t, &err), 0);
    assert_near(t.start_s, 1000, 0);
    assert_true(isinf(t.end_s));
    assert_int_equal(pflex_target_parse("80%,start=+1h,end=+30m", 1000, &t, &err), -1);
    assert_non_null(strstr(err.text, "after start"));
    assert_int_equal(pflex_target_parse("80%,for=1h,end=+2h", 1000, &t, &err), -1);
    assert_int_equal(pflex_target_parse("80%,colour=red", 1000, &t, &err), -1);
    /* Empty fields are typos, refused (strtok_r alone would skip them). */
    assert_int_equal(pflex_target_parse("70%,,,", 1000, &t, &err), -1);
    assert_non_null(strstr(err.text, "'70%,,,': an empty field (the ',' at character 4)"));
    assert_int_equal(pflex_target_parse(",70%", 1000, &t, &err), -1);
    assert_int_equal(pflex_target_parse("70%,,for=1h", 1000, &t, &err), -1);
    assert_int_equal(pflex_target_parse("70%,for=1h,", 1000, &t, &err), -1);
    assert_int_equal(pflex_target_parse("70%,for=1h", 1000, &t, &err), 0);
    assert_int_equal(pflex_target_parse("80%,ramp", 1000, &t, &err), -1);
    assert_int_equal(pflex_target_parse("80%,ramp=forever", 1000, &t, &err), -1);
    assert_int_equal(pflex_target_parse("80%,ramp=1d", 1000, &t, &err), 0);
    assert_int_equal(pflex_target_parse("80%,ramp=25h", 1000, &t, &err), -1);
    assert_non_null(strstr(err.text, "at most a day"));
    /* each key once: which of two was meant is a guess */
    const char *twice[] = {"80%,start=+1m,start=+2m", "80%,for=1h,for=2h", "80%,ramp=1m,ramp=1m",
                           "80%,priority=1,priority=2", "80%,confirm=yes,confirm=yes", "80%,end=+1h,end=+1h"};
    for (size_t i = 0; i < sizeof twice / sizeof *twice; i++) {
        memset(&err, 0, sizeof err);
        if (pflex_target_parse(twice[i], 1000, &t, &err) != -1)
            fail_msg("'%s' accepted", twice[i]);
        if (!strstr(err.text, "given twice"))
            fail_msg("'%s': '%s'", twice[i], err.text);
    }
    /* the grammar's value and time bounds hold inside a spec too */
    assert_int_equal(pflex_target_parse("75", 1000, &t, &err), -1);
    assert_non_null(strstr(err.text, "W or %"));
    assert_int_equal(pflex_target_parse("151%", 1000, &t, &err), -1);
    assert_int_equal(pflex_target_parse("60%,start=@-1", 1000, &t, &err), -1);
    assert_int_equal(pflex_target_parse("60%,start=@100000000000", 1000, &t, &err), -1);
    assert_non_null(strstr(err.text, "5138"));
    assert_int_equal(pflex_target_parse("60%,for=100000000000", 1.7e9, &t, &err), -1);
    assert_non_null(strstr(err.text, "out of range"));
    assert_int_equal(pflex_target_parse("60%,for=P9999Y", 1.7e9, &t, &err), 0);
    assert_true(isinf(t.end_s));
    assert_int_equal(pflex_target_parse("60%,priority=+1", 1000, &t, &err), -1);
    assert_int_equal(pflex_target_parse("60%,confirm=yes", 1000, &t, &err), 0);
    assert_int_equal(t.confirm, 1);
}

static struct pflex_target mk(double start, double end, double w, double ramp, int prio)
{
    struct pflex_target t = {.start_s = start, .end_s = end, .value = w,
                             .unit = PFLEX_TARGET_WATTS, .ramp_s = ramp, .priority = prio};
    return t;
}

static void test_latest_wins(void **state)
{
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    assert_near(pflex_target_limit_w(&s, 0, 1000, 2000), INFINITY, 0);
    struct pflex_target a = mk(0, 100, 800, 0, 0), b = mk(50, 150, 900, 0, 0);
    assert_int_equal(pflex_target_set_add(&s, &a, NULL), 0);
    assert_int_equal(pflex_target_set_add(&s, &b, NULL), 0);
    assert_near(pflex_target_limit_w(&s, 10, 1000, 2000), 800, 0);
    assert_near(pflex_target_limit_w(&s, 60, 1000, 2000), 900, 0);   /* later, looser: wins */
    assert_near(pflex_target_limit_w(&s, 120, 1000, 2000), 900, 0);
    assert_near(pflex_target_limit_w(&s, 150, 1000, 2000), INFINITY, 0);   /* end exclusive */
    /* A higher priority (lower number) beats a later one. */
    struct pflex_target c = mk(0, 1000, 500, 0, 5), d = mk(0, 1000, 600, 0, 1);
    pflex_target_set_t s2;
    pflex_target_set_init(&s2);
    assert_int_equal(pflex_target_set_add(&s2, &d, NULL), 0);
    assert_int_equal(pflex_target_set_add(&s2, &c, NULL), 0);
    assert_near(pflex_target_limit_w(&s2, 10, 1000, 2000), 600, 0);
    /* Fractions scale with the baseline. */
    struct pflex_target f = {.start_s = 0, .end_s = INFINITY, .value = 0.7,
                             .unit = PFLEX_TARGET_FRACTION};
    pflex_target_set_t s3;
    pflex_target_set_init(&s3);
    assert_int_equal(pflex_target_set_add(&s3, &f, NULL), 0);
    assert_near(pflex_target_limit_w(&s3, 10, 1000, 2000), 700, 1e-9);
    /* Sources and expiry. */
    snprintf(a.source, sizeof a.source, "openadr");
    assert_int_equal(pflex_target_set_add(&s, &a, NULL), 0);
    assert_int_equal(pflex_target_set_remove_source(&s, "openadr"), 1);
    assert_int_equal(s.n, 2);
    assert_int_equal(pflex_target_set_expire(&s, 100), 1);
    assert_int_equal(s.n, 1);
    assert_near(s.t[0].value, 900, 0);
    /* Malformed targets are refused. */
    struct pflex_target bad = mk(10, 10, 800, 0, 0);
    assert_int_equal(pflex_target_set_add(&s, &bad, NULL), -1);
    bad = mk(0, 10, -1, 0, 0);
    assert_int_equal(pflex_target_set_add(&s, &bad, NULL), -1);
    bad = mk(0, 10, 5, -1, 0);
    assert_int_equal(pflex_target_set_add(&s, &bad, NULL), -1);
    pflex_target_set_fini(&s);
    pflex_target_set_fini(&s2);
    pflex_target_set_fini(&s3);
}

static void test_ramp(void **state)
{
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    struct pflex_target a = mk(0, INFINITY, 1000, 0, 0), b = mk(100, 300, 600, 40, 0);
    assert_int_equal(pflex_target_set_add(&s, &a, NULL), 0);
    assert_int_equal(pflex_target_set_add(&s, &b, NULL), 0);
    /* Linear descent from the previous target (1000) to 600 over 40 s. */
    assert_near(pflex_target_limit_w(&s, 99, 0, 5000), 1000, 0);
    assert_near(pflex_target_limit_w(&s, 100, 0, 5000), 1000, 1e-9);
    assert_near(pflex_target_limit_w(&s, 110, 0, 5000), 900, 1e-6);
    assert_near(pflex_target_limit_w(&s, 130, 0, 5000), 700, 1e-6);
    assert_near(pflex_target_limit_w(&s, 140, 0, 5000), 600, 0);
    assert_near(pflex_target_limit_w(&s, 299, 0, 5000), 600, 0);
    assert_near(pflex_target_limit_w(&s, 300, 0, 5000), 1000, 0);
    /* The window minimum sees the ramp's end inside the window. */
    assert_near(pflex_target_limit_min_w(&s, 105, 120, 0, 5000), 800, 1e-6);
    assert_near(pflex_target_limit_min_w(&s, 90, 1000, 0, 5000), 600, 0);
    /* With nothing before, a ramp starts from the unlimited level. */
    pflex_target_set_t s2;
    pflex_target_set_init(&s2);
    struct pflex_target c = mk(0, 100, 1000, 100, 0);
    assert_int_equal(pflex_target_set_add(&s2, &c, NULL), 0);
    assert_near(pflex_target_limit_w(&s2, 50, 0, 3000), 2000, 1e-6);
    /* ... or steps at once when that level is unknown. */
    assert_near(pflex_target_limit_w(&s2, 50, 0, INFINITY), 1000, 0);
    pflex_target_set_fini(&s);
    pflex_target_set_fini(&s2);
}

/* The least limit over a window at the instants where it may be least
 * (starts, ends, ramps' ends, just before starts and ends, the window's
 * ends), each read afresh by pflex_target_limit_w: the reference the
 * library's sweep must equal. */
static double window_min_reference(const pflex_target_set_t *s, double t0, double t1, double unl)
{
    double lo = INFINITY;
    for (size_t i = 0; i <= s->n; i++) {
        double x[5];
        int nx = 0;
        if (i == 0) {
            x[nx++] = t0;
            x[nx++] = t1;
        } else {
            const struct pflex_target *c = &s->t[i - 1];
            x[nx++] = c->start_s;
            x[nx++] = nextafter(c->start_s, -INFINITY);
            x[nx++] = c->start_s + c->ramp_s;
            x[nx++] = c->end_s;
            x[nx++] = nextafter(c->end_s, -INFINITY);
        }
        for (int j = 0; j < nx; j++)
            if (x[j] >= t0 && x[j] <= t1) {
                double v = pflex_target_limit_w(s, x[j], 1e6, unl);
                lo = v < lo ? v : lo;
            }
    }
    return lo;
}

/* The first end after t with no target in force, each end read afresh. */
static double free_end_reference(const pflex_target_set_t *s, double t, double unl)
{
    double best = INFINITY;
    for (size_t i = 0; i < s->n; i++) {
        double e = s->t[i].end_s;
        if (e > t && e < best && isinf(pflex_target_limit_w(s, e, 1e6, unl)))
            best = e;
    }
    return best;
}

/* Sets of hundreds to thousands of targets over a day (a day of 288
 * five-minute OpenADR intervals, overlapping schedules, ramps, three
 * priorities, fractions and watts): the profile a loop keeps, read by
 * one sweep over time, must give what each instant read afresh gives,
 * to the bit, and the same event end;
 * and a chain of ramps deeper than the library follows gives the same
 * too. */
static void test_window_min_sweep(void **state)
{
    (void)state;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 5);
    struct pflex_target_profile prof_;
    pflex_target_profile_init(&prof_);
    static const int sizes[] = {40, 288, 1000, 3000};
    for (int trial = 0; trial < 24; trial++) {
        pflex_target_set_t s;
        pflex_target_set_init(&s);
        int n = sizes[trial % 4];
        for (int i = 0; i < n; i++) {
            double st = trial % 2 ? 300.0 * (i % 288) : gsl_rng_uniform(r) * 86400;
            double en = gsl_rng_uniform(r) < 0.05 ? INFINITY : st + 60 + gsl_rng_uniform(r) * 7200;
            double ramp = gsl_rng_uniform(r) < 0.5 ? 0 : gsl_rng_uniform(r) * 900;
            struct pflex_target t = mk(st, en, 200 + gsl_rng_uniform(r) * 800, ramp,
                                       (int)gsl_rng_uniform_int(r, 3));
            if (gsl_rng_uniform(r) < 0.3) {
                t.unit = PFLEX_TARGET_FRACTION;
                t.value = 0.5 + gsl_rng_uniform(r) * 0.5;
            }
            assert_int_equal(pflex_target_set_add(&s, &t, NULL), 0);
        }
        for (int w = 0; w < 12; w++) {
            double t0 = gsl_rng_uniform(r) * 86400;
            double t1 = t0 + (w < 4 ? 86400 : w < 8 ? gsl_rng_uniform(r) * 3600 : gsl_rng_uniform(r) * 10);
            double unl = w % 2 ? INFINITY : 2e6;
            double want = window_min_reference(&s, t0, t1, unl);
            double got = pflex_target_limit_min_w(&s, t0, t1, 1e6, unl);
            double prof = pflex_target_profile_min_w(&prof_, &s, t0, t1, 1e6, unl);
            if (!(got == want || (isinf(got) && isinf(want))) || !(prof == want || (isinf(prof) && isinf(want))))
                fail_msg("trial %d (%d targets) window %d: %.17g, profile %.17g, reference %.17g", trial, n,
                         w, got, prof, want);
            double e = pflex_target_profile_free_end(&prof_, &s, t0, 1e6, unl);
            if (!(e == free_end_reference(&s, t0, unl)))
                fail_msg("trial %d: free end %.17g, reference %.17g", trial, e, free_end_reference(&s, t0, unl));
        }
        /* the limit and the winner at an instant, off the profile: at
         * random times, at every instant where the limit may change
         * course and a step either side of it */
        double unl = trial % 3 ? 2e6 : INFINITY;
        for (int i = 0; i < n + 200; i++) {
            double tb = i < 200 ? gsl_rng_uniform(r) * 90000 - 1000
                                : (i % 3 == 0 ? s.t[i - 200].start_s
                                   : i % 3 == 1 ? s.t[i - 200].start_s + s.t[i - 200].ramp_s : s.t[i - 200].end_s);
            if (!isfinite(tb))
                continue;
            double ts[3] = {nextafter(tb, -INFINITY), tb, nextafter(tb, INFINITY)};
            for (int j = 0; j < 3; j++) {
                double want = pflex_target_limit_w(&s, ts[j], 1e6, unl);
                double got = pflex_target_profile_limit_w(&prof_, &s, ts[j], 1e6, unl);
                if (!(got == want || (isinf(got) && isinf(want))))
                    fail_msg("trial %d at %.17g: limit %.17g, profile %.17g", trial, ts[j], want, got);
                if (pflex_target_profile_winner(&prof_, &s, ts[j], 1e6, unl) != pflex_target_set_winner(&s, ts[j]))
                    fail_msg("trial %d at %.17g: winners differ", trial, ts[j]);
            }
        }
        assert_null(pflex_target_profile_winner(&prof_, &s, NAN, 1e6, unl));
        assert_true(isinf(pflex_target_profile_limit_w(&prof_, &s, NAN, 1e6, unl)));
        /* a target added, one expired: the profile follows the set */
        struct pflex_target late = mk(40000, 50000, 1, 0, -1);
        assert_int_equal(pflex_target_set_add(&s, &late, NULL), 0);
        assert_true(pflex_target_profile_min_w(&prof_, &s, 0, 86400, 1e6, 2e6) == 1);
        /* expiry keeps the others, in their order */
        uint64_t *kept = malloc(s.n * sizeof *kept);
        assert_non_null(kept);
        size_t nk = 0;
        for (size_t i = 0; i < s.n; i++)
            if (s.t[i].end_s > 50000)
                kept[nk++] = s.t[i].seq;
        size_t gone = s.n - nk;
        assert_int_equal(pflex_target_set_expire(&s, 50000), gone);
        assert_int_equal(s.n, nk);
        for (size_t i = 0; i < nk; i++)
            assert_true(s.t[i].seq == kept[i]);
        free(kept);
        assert_true(pflex_target_profile_min_w(&prof_, &s, 0, 86400, 1e6, 2e6)
                    == window_min_reference(&s, 0, 86400, 2e6));
        /* a target given another's place in the order: the profile
         * follows (the winner at 45,000 s is whichever came last) */
        struct pflex_target a = mk(44000, 46000, 2, 0, -2), b = mk(44000, 46000, 3, 0, -2);
        assert_int_equal(pflex_target_set_add(&s, &a, NULL), 0);
        assert_int_equal(pflex_target_set_add(&s, &b, NULL), 0);
        assert_true(pflex_target_profile_limit_w(&prof_, &s, 45000, 1e6, 2e6) == 3);
        pflex_target_set_seq(&s, s.n - 2, s.next_seq);
        assert_true(pflex_target_profile_limit_w(&prof_, &s, 45000, 1e6, 2e6) == 2);
        assert_true(pflex_target_limit_w(&s, 45000, 1e6, 2e6) == 2);
        /* a set zeroed rather than initialised, and one freed (gen 0): read as they are */
        pflex_target_set_t z;
        memset(&z, 0, sizeof z);
        assert_int_equal(pflex_target_set_add(&z, &a, NULL), 0);
        assert_true(pflex_target_profile_limit_w(&prof_, &z, 45000, 1e6, 2e6) == 2);
        pflex_target_set_fini(&z);
        assert_true(isinf(pflex_target_profile_limit_w(&prof_, &z, 45000, 1e6, 2e6)));
        pflex_target_set_fini(&s);
    }
    gsl_rng_free(r);
    /* 60 ramps, each starting inside the one before: past the library's
     * depth a ramp steps from its own target, on both paths alike */
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    for (int i = 0; i < 60; i++) {
        struct pflex_target t = mk(i * 10.0, 1e5, 1000 + 20.0 * i, 5000, 0);
        assert_int_equal(pflex_target_set_add(&s, &t, NULL), 0);
    }
    for (double t0 = 0; t0 < 700; t0 += 7) {
        double got = pflex_target_limit_min_w(&s, t0, t0 + 86400, 0, 3000);
        /* rising targets: the least is at the window's start, mid-ramp */
        assert_true(got < 1000 + 20.0 * 59);
        assert_true(got == window_min_reference(&s, t0, t0 + 86400, 3000));
        assert_true(pflex_target_profile_min_w(&prof_, &s, t0, t0 + 86400, 0, 3000) == got);
    }
    pflex_target_set_fini(&s);
    pflex_target_profile_fini(&prof_);
}

/* The window minimum against dense sampling on random sets. */
static void test_window_min_property(void **state)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    for (int trial = 0; trial < 300; trial++) {
        pflex_target_set_t s;
        pflex_target_set_init(&s);
        int n = 1 + (int)gsl_rng_uniform_int(r, 6);
        for (int i = 0; i < n; i++) {
            double st = gsl_rng_uniform(r) * 100;
            double en = gsl_rng_uniform(r) < 0.2 ? INFINITY : st + 1 + gsl_rng_uniform(r) * 60;
            double ramp = gsl_rng_uniform(r) < 0.5 ? 0 : 1 + gsl_rng_uniform(r) * 20;
            struct pflex_target t = mk(st, en, 200 + gsl_rng_uniform(r) * 800, ramp,
                                       (int)gsl_rng_uniform_int(r, 2));
            assert_int_equal(pflex_target_set_add(&s, &t, NULL), 0);
        }
        double t0 = gsl_rng_uniform(r) * 120, t1 = t0 + gsl_rng_uniform(r) * 30;
        double got = pflex_target_limit_min_w(&s, t0, t1, 0, 1500);
        double sampled = INFINITY;
        for (int k = 0; k <= 20000; k++) {
            double v = pflex_target_limit_w(&s, t0 + (t1 - t0) * k / 20000.0, 0, 1500);
            if (v < sampled)
                sampled = v;
        }
        /* Never above what sampling finds, and below it only by what the
         * limit can move between two samples (ramps of 1 s or more move at
         * most 1000 W/s; samples are 1.5 ms apart). */
        if (!(got <= sampled + 1e-6)) {
            for (size_t i = 0; i < s.n; i++)
                print_message("  %g %g %g ramp %g prio %d\n", s.t[i].start_s, s.t[i].end_s, s.t[i].value, s.t[i].ramp_s, s.t[i].priority);
            fail_msg("trial %d: window min %g above a sampled %g [%g,%g]", trial, got, sampled, t0, t1);
        }
        if (isfinite(sampled) && !(got >= sampled - 2))
            fail_msg("trial %d: window min %g far under every sample (%g)", trial, got, sampled);
        if (!isfinite(sampled))
            assert_true(isinf(got));
        pflex_target_set_fini(&s);
    }
    gsl_rng_free(r);
}

static void test_schedule(void **state)
{
    const char *csv = "# SRP-style event\n"
                      "start,end,target,ramp,priority,id\n"
                      "2026-05-03T18:00:00Z,2026-05-03T19:00:00Z,75%,PT5M,,first\n"
                      "+1h,,500kW,0,2,second\n"
                      "@1000,@2000,\"1.5MW\",90s,1,\n";
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    pflex_error_t err;
    unsigned bare = 99;
    assert_int_equal(pflex_target_schedule_read_mem(csv, strlen(csv), "s.csv", 100, &s, &bare, &err), 0);
    assert_int_equal(s.n, 3);
    assert_int_equal(bare, 0);
    struct tm tm = {.tm_year = 2026 - 1900, .tm_mon = 4, .tm_mday = 3, .tm_hour = 18};
    assert_near(s.t[0].start_s, (double)timegm(&tm), 0);
    assert_near(s.t[0].end_s - s.t[0].start_s, 3600, 0);
    assert_int_equal(s.t[0].unit, PFLEX_TARGET_FRACTION);
    assert_near(s.t[0].ramp_s, 300, 0);
    assert_string_equal(s.t[0].id, "first");
    assert_string_equal(s.t[0].source, "schedule");
    assert_near(s.t[1].start_s, 3700, 0);
    assert_true(isinf(s.t[1].end_s));
    assert_int_equal(s.t[1].priority, 2);
    assert_near(s.t[2].value, 1.5e6, 1e-6);
    /* duration instead of end */
    const char *dur = "start,duration,target\n@0,PT1H,600kW\n@0,,700kW\n";
    pflex_target_set_t s2;
    pflex_target_set_init(&s2);
    assert_int_equal(pflex_target_schedule_read_mem(dur, strlen(dur), "d.csv", 0, &s2, NULL, &err), 0);
    assert_near(s2.t[0].end_s, 3600, 0);
    assert_true(isinf(s2.t[1].end_s));
    /* a bare number is W in a schedule, as documented; the line is told
     * so that the caller can warn */
    const char *w = "start,target\n@0,700kW\n@10,650000\n@20,640000\n";
    pflex_target_set_t s3;
    pflex_target_set_init(&s3);
    assert_int_equal(pflex_target_schedule_read_mem(w, strlen(w), "w.csv", 0, &s3, &bare, &err), 0);
    assert_int_equal(s3.n, 3);
    assert_near(s3.t[1].value, 650000, 0);
    assert_int_equal(s3.t[1].unit, PFLEX_TARGET_WATTS);
    assert_int_equal(bare, 3);
    pflex_target_set_fini(&s3);

    struct { const char *csv; const char *needle; } bad[] = {
        {"", "d.csv:1: empty"},
        {"begin,target\n1,2\n", "d.csv:1: the header needs"},
        {"start,end,duration,target\n", "not both"},
        {"start,target\n@0,700kW\n@0,lots\n", "d.csv:3: column 'target'"},
        {"start,end,target\n@0,@0,700kW\n", "d.csv:2: end must come after start"},
        {"start,target,ramp\n@0,700kW,-5s\n", "d.csv:2: column 'ramp'"},
        {"start,target\n# c\n\nyesterday,700kW\n", "d.csv:4: column 'start'"},
        {"start,target\n@0\n", "d.csv:2: column 'target': missing"},
        {"start,target\n\"@0,700kW\n", "d.csv"},
        {"start,target\n@0,151%\n", "d.csv:2: column 'target': '151%': 151 % is over 100 %"},
        {"start,target\n@0,0x10kW\n", "hexadecimal"},
        {"start,target\n@-1,70%\n", "d.csv:2: column 'start': '@-1' is before 1970"},
        {"start,target,ramp\n@0,70%,2d\n", "d.csv:2: column 'ramp'"},
        {"start,duration,target\n@0,100000000000,70%\n", "d.csv:2: the target's end"},
    };
    size_t before = s2.n;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        assert_int_equal(pflex_target_schedule_read_mem(bad[i].csv, strlen(bad[i].csv), "d.csv", 0,
                                                        &s2, NULL, &err), -1);
        if (!strstr(err.text, bad[i].needle))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.text, bad[i].needle);
        assert_int_equal(s2.n, before);     /* nothing added on error */
    }
    assert_int_equal(pflex_target_schedule_read("/nonexistent/x.csv", 0, &s2, NULL, &err), -1);
    pflex_target_set_fini(&s);
    pflex_target_set_fini(&s2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_quantities),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_latest_wins),
        cmocka_unit_test(test_ramp),
        cmocka_unit_test(test_window_min_property),
        cmocka_unit_test(test_window_min_sweep),
        cmocka_unit_test(test_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
