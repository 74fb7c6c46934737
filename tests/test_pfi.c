/* test_pfi.c — sweep reading, loss curves, PFI, shed.
 *
 * PFI is checked against an independent computation: GSL's linear
 * interpolation and its exact integral over the same points, and against
 * hand-computed values on small curves. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <gsl/gsl_interp.h>
#include <gsl/gsl_rng.h>
#include "pflex/csv.h"
#include "pflex/pfi.h"

static pflex_sweep_t *read_str(const char *s)
{
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    int rc = pflex_sweep_read_mem(s, strlen(s), "t.csv", NULL, &sw, &err);
    if (rc < 0)
        fail_msg("unexpected error: %s", err.text);
    return sw;
}

static void expect_error(const char *s, const char *columns, const char *needle)
{
    pflex_sweep_t *sw = NULL;
    pflex_error_t err = {{0}};
    int rc = pflex_sweep_read_mem(s, strlen(s), "t.csv", columns, &sw, &err);
    assert_int_equal(rc, -1);
    assert_null(sw);
    if (!strstr(err.text, needle))
        fail_msg("error '%s' does not contain '%s'", err.text, needle);
}

static void test_hand_computed(void **state)
{
    /* Baseline P0=400, T0=100.  Caps: 300 W draws 300 (x=.25), T 90
     * (L=.1); 200 W draws 200 (x=.5), T 60 (L=.4).
     * Area over [0,.3]: 0..0.25 triangle .5*.25*.1 = .0125; .25..0.3:
     * L(.3) = .1 + .05/.25*.3 = .16, trapezoid .05*(.1+.16)/2 = .0065.
     * PFI = 1 - .019/.045 = .577777... */
    pflex_sweep_t *sw = read_str("job,cap_w,power_w,throughput\n"
                                 "j,400,400,100\nj,300,300,90\nj,200,200,60\n");
    struct pflex_curve c;
    struct pflex_pfi p;
    assert_int_equal(pflex_curve_init(&c, sw->jobs[0].points, sw->jobs[0].npoints, NULL), 0);
    pflex_pfi_compute(&c, 0.30, &p);
    assert_true(p.valid);
    assert_float_equal(p.range_used, 0.30, 1e-12);
    assert_float_equal(p.pfi, 1 - 0.019 / 0.045, 1e-12);
    /* Pointwise PFI (ratio form) at x=.25: .25/.1 = 2.5 */
    assert_float_equal(pflex_pfi_at(&c, 0.25), 2.5, 1e-12);
    /* shed at flex1 (L <= .1): exactly x = .25, then L rises: crossing at .25 */
    assert_float_equal(p.shed[1], 0.25, 1e-12);
    /* flex2 (L <= .25): .25 + (.15/.3)*.25 = .375 */
    assert_float_equal(p.shed[2], 0.375, 1e-12);
    /* flex3 (L <= .5): never crossed: x_max */
    assert_float_equal(p.shed[3], 0.5, 1e-12);
    /* flex0 (L <= 0): crossed right away */
    assert_float_equal(p.shed[0], 0.0, 1e-12);
    /* Range beyond x_max is cut to x_max. */
    pflex_pfi_compute(&c, 0.9, &p);
    assert_float_equal(p.range_used, 0.5, 1e-12);
    pflex_curve_fini(&c);
    pflex_sweep_destroy(sw);
}

static void test_averaging_and_order(void **state)
{
    pflex_sweep_t *sw = read_str("# comment\n\njob,cap_w,power_w,throughput,gpus,tier\n"
                                 "b,300,300,90,2,flex3\n"
                                 "a,200,210,50,1,\n"
                                 "b,400,400,100,2,\n"
                                 "a,300,290,80,1,flex1\r\n"
                                 "b,300,310,94,2,\n");
    assert_int_equal(sw->njobs, 2);
    assert_string_equal(sw->jobs[0].name, "b");    /* first-appearance order */
    assert_int_equal(sw->jobs[0].gpus, 2);
    assert_int_equal(sw->jobs[0].npoints, 2);
    assert_float_equal(sw->jobs[0].points[0].cap_w, 300, 0);
    assert_float_equal(sw->jobs[0].points[0].power_w, 305, 1e-12);
    assert_float_equal(sw->jobs[0].points[0].throughput, 92, 1e-12);
    assert_int_equal(sw->jobs[0].points[0].rows, 2);
    assert_float_equal(sw->jobs[0].floor, 0.5, 0);
    assert_float_equal(sw->jobs[1].floor, 0.9, 0);
    assert_false(sw->has_telemetry);
    pflex_sweep_destroy(sw);
}

/* A curve's points stand alone up to the first equal reductions and are
 * averaged from there, exactly: each singleton as 0 + its values (a cap
 * of -0 becomes 0), each pair as its sums over 2. */
static void test_curve_equal_reductions(void **state)
{
    struct pflex_sweep_point p[] = {
        {.cap_w = 400, .power_w = 400, .throughput = 100},      /* the baseline */
        {.cap_w = -0.0, .power_w = 350, .throughput = 97},      /* x 0.125 */
        {.cap_w = 300, .power_w = 300, .throughput = 90},       /* x 0.25 */
        {.cap_w = 250, .power_w = 200, .throughput = 80.5},     /* x 0.5, */
        {.cap_w = 200, .power_w = 200, .throughput = 70.25},    /* twice */
        {.cap_w = 150, .power_w = 100, .throughput = 40},       /* x 0.75 */
        {.cap_w = 120, .power_w = 100, .throughput = 33},       /* twice */
        {.cap_w = 100, .power_w = 80, .throughput = 30},        /* x 0.8 */
    };
    struct pflex_curve c;
    assert_int_equal(pflex_curve_init(&c, p, sizeof p / sizeof *p, NULL), 0);
    assert_int_equal(c.n, 6);
    double l[8];
    for (int k = 0; k < 8; k++)
        l[k] = 1.0 - p[k].throughput / 100.0;
    const double x[6] = {0, 1.0 - 350 / 400.0, 1.0 - 300 / 400.0, 1.0 - 200 / 400.0,
                         1.0 - 100 / 400.0, 1.0 - 80 / 400.0};
    const double loss[6] = {0, l[1], l[2], (0 + l[4] + l[3]) / 2, (0 + l[6] + l[5]) / 2, l[7]};
    const double cap[6] = {400, 0.0, 300, (0.0 + 200 + 250) / 2, (0.0 + 120 + 150) / 2, 100};
    assert_memory_equal(c.x, x, sizeof x);
    assert_memory_equal(c.loss, loss, sizeof loss);
    assert_memory_equal(c.cap_w, cap, sizeof cap);
    assert_false(signbit(c.cap_w[1]));
    pflex_curve_fini(&c);
}

static void test_columns_mapping(void **state)
{
    const char *s = "Workload,GPU power cap,throughput,power per GPU\n"
                    "\"ft, quoted\",400,2.0,380\n \" ft, quoted \" ,300,1.8,290\n";
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    assert_int_equal(pflex_sweep_read_mem(s, strlen(s), "t.csv",
                                          "job=Workload,cap_w=GPU power cap,power_w=power per GPU",
                                          &sw, &err), 0);
    assert_int_equal(sw->njobs, 1);
    assert_string_equal(sw->jobs[0].name, "ft, quoted");
    assert_float_equal(sw->jobs[0].points[1].power_w, 380, 0);
    pflex_sweep_destroy(sw);
    expect_error(s, "job=Workload,cap_w=Cap", "missing column 'cap_w' (mapped to header 'Cap')");
    expect_error(s, "nonsense=Workload", "unknown column name 'nonsense'");
    expect_error(s, "job", "is not name=Header");
}

static void test_bad_input(void **state)
{
    expect_error("", NULL, "t.csv: empty file");
    expect_error("# only a comment\n", NULL, "empty file");
    expect_error("job,cap_w,power_w,throughput\n", NULL, "t.csv:1: no data rows");
    expect_error("job,cap_w,power_w\nj,1,2\n", NULL, "t.csv:1: missing column 'throughput'");
    expect_error("job,cap_w,power_w,throughput\nj,400,400,1\nj,300,abc,1\n", NULL,
                 "t.csv:3: column 'power_w': 'abc' is not a finite number");
    expect_error("job,cap_w,power_w,throughput\nj,400,400,1\nj,300,-5,1\n", NULL,
                 "t.csv:3: column 'power_w': '-5' is negative");
    expect_error("job,cap_w,power_w,throughput\nj,400,400,1\nj,300,300,nan\n", NULL,
                 "t.csv:3: column 'throughput': 'nan' is not a finite number");
    expect_error("job,cap_w,power_w,throughput\nj,400,400,1\nj,300,300,inf\n", NULL,
                 "is not a finite number");
    expect_error("job,cap_w,power_w,throughput\nj,400,400,1\nj,400,390,1\n", NULL,
                 "t.csv:2: job 'j' is measured at only one cap");
    expect_error("job,cap_w,power_w,throughput\nj,400,400,1\nj,300\n", NULL,
                 "t.csv:3: 2 fields, the header has 4");
    expect_error("job,cap_w,power_w,throughput\n\"j,400,400,1\n", NULL,
                 "t.csv:2: unterminated quoted field");
    expect_error("job,cap_w,power_w,throughput,gpus\nj,400,400,1,2\nj,300,300,1,4\n", NULL,
                 "t.csv:3: column 'gpus': job 'j' had 2 GPUs on line 2, now 4");
    expect_error("job,cap_w,power_w,throughput,tier\nj,400,400,1,gold\nj,300,300,1,\n", NULL,
                 "t.csv:2: column 'tier': 'gold' is not a tier");
    expect_error("job,cap_w,power_w,throughput,floor\nj,400,400,1,1.5\nj,300,300,1,\n", NULL,
                 "t.csv:2: column 'floor'");
    expect_error("job,cap_w,power_w,throughput\n,400,400,1\n", NULL, "t.csv:2: column 'job': empty");
    expect_error("job,cap_w,power_w,throughput\nj,0,400,1\nj,300,300,1\n", NULL,
                 "t.csv:2: column 'cap_w': '0' must be positive");
}

static void test_no_binding_cap(void **state)
{
    pflex_sweep_t *sw = read_str("job,cap_w,power_w,throughput\nj,700,300,10\nj,600,301,10\n");
    struct pflex_curve c;
    struct pflex_pfi p;
    assert_int_equal(pflex_curve_init(&c, sw->jobs[0].points, sw->jobs[0].npoints, NULL), 0);
    pflex_pfi_compute(&c, 0.3, &p);
    assert_false(p.valid);
    assert_non_null(p.reason);
    assert_float_equal(c.x_max, 0, 0);
    pflex_curve_fini(&c);
    pflex_sweep_destroy(sw);
}

static void test_zero_baseline(void **state)
{
    pflex_sweep_t *sw = read_str("job,cap_w,power_w,throughput\nj,700,300,0\nj,600,250,10\n");
    struct pflex_curve c;
    pflex_error_t err;
    assert_int_equal(pflex_curve_init(&c, sw->jobs[0].points, sw->jobs[0].npoints, &err), -1);
    assert_non_null(strstr(err.text, "baseline throughput"));
    pflex_sweep_destroy(sw);
}

/* Independent PFI: GSL linear interpolation's exact integral. */
static double pfi_gsl(const double *x, const double *l, size_t n, double range)
{
    double r = range < x[n - 1] ? range : x[n - 1];
    gsl_interp *it = gsl_interp_alloc(gsl_interp_linear, n);
    gsl_interp_accel *acc = gsl_interp_accel_alloc();
    gsl_interp_init(it, x, l, n);
    double area = gsl_interp_eval_integ(it, x, l, 0, r, acc);
    gsl_interp_accel_free(acc);
    gsl_interp_free(it);
    return 1 - area / (r * r / 2);
}

static void test_random_against_gsl(void **state)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 42);
    char buf[8192];
    for (int trial = 0; trial < 2000; trial++) {
        int n = 2 + (int)gsl_rng_uniform_int(rng, 9);
        double p0 = 200 + 500 * gsl_rng_uniform(rng), t0 = 1 + 1e4 * gsl_rng_uniform(rng);
        size_t len = (size_t)snprintf(buf, sizeof buf, "job,cap_w,power_w,throughput\n"
                                      "j,%d,%.17g,%.17g\n", 10000, p0, t0);
        double xs[16], ls[16];
        int m = 0;
        xs[m] = 0, ls[m] = 0, m++;
        double x = 0;
        for (int k = 1; k < n; k++) {
            x += 0.01 + 0.1 * gsl_rng_uniform(rng);
            double loss = x * (0.1 + 1.2 * gsl_rng_uniform(rng));  /* not necessarily monotone */
            double p = p0 * (1 - x), t = t0 * (1 - loss);
            len += (size_t)snprintf(buf + len, sizeof buf - len, "j,%d,%.17g,%.17g\n",
                                    10000 - k, p, t);
            /* What the reader will see after rounding through text. */
            xs[m] = 1 - p / p0;
            ls[m] = 1 - t / t0;
            m++;
        }
        pflex_sweep_t *sw = NULL;
        pflex_error_t err;
        if (pflex_sweep_read_mem(buf, len, "r.csv", NULL, &sw, &err) < 0)
            fail_msg("%s", err.text);
        struct pflex_curve c;
        struct pflex_pfi p;
        assert_int_equal(pflex_curve_init(&c, sw->jobs[0].points, sw->jobs[0].npoints, NULL), 0);
        double range = 0.05 + 0.5 * gsl_rng_uniform(rng);
        pflex_pfi_compute(&c, range, &p);
        assert_true(p.valid);
        double want = pfi_gsl(xs, ls, (size_t)m, range);
        if (fabs(p.pfi - want) > 1e-9 * (1 + fabs(want)))
            fail_msg("trial %d: pfi %.12g, gsl %.12g", trial, p.pfi, want);
        /* shed: L stays under 1-s up to shed, and exceeds it just after. */
        for (int k = 1; k < 4; k++) {
            double thr = 1 - pflex_tier_floors[k], sh = p.shed[k];
            for (double q = 0; q < sh; q += sh / 50)
                assert_true(pflex_curve_loss(&c, q) <= thr + 1e-9);
            if (sh < c.x_max)
                assert_true(pflex_curve_loss(&c, sh + 1e-7) > thr);
        }
        pflex_curve_fini(&c);
        pflex_sweep_destroy(sw);
    }
    gsl_rng_free(rng);
}

static void test_number_parser(void **state)
{
    const char *cases[] = {"0", "1", "-2.5", "+3", "1e3", "1E-3", "0.1", "123456789012345678",
                           "3.14159265358979323846", "1e-30", "4.9e-324", ".5", "5.", "00012.50",
                           "9007199254740993", "1.7976931348623157e308", "2.2250738585072014e-308",
                           "0.000000000000000000001234"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double got;
        assert_int_equal(pflex_parse_double(cases[i], strlen(cases[i]), &got), 0);
        double want = strtod(cases[i], NULL);
        if (memcmp(&got, &want, sizeof got) != 0)
            fail_msg("%s: got %.17g want %.17g", cases[i], got, want);
    }
    const char *bad[] = {"", "-", "abc", "1.2.3", "1e", "nan", "inf", "1x", "1e400", "--1", "e5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double got;
        if (pflex_parse_double(bad[i], strlen(bad[i]), &got) == 0)
            fail_msg("'%s' accepted as %g", bad[i], got);
    }
    /* Random decimals round-trip exactly like strtod. */
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    for (int i = 0; i < 100000; i++) {
        char b[64];
        double v = (gsl_rng_uniform(rng) - 0.3) * pow(10, (int)gsl_rng_uniform_int(rng, 30) - 15);
        snprintf(b, sizeof b, i % 2 ? "%.17g" : "%.6f", v);
        double got, want = strtod(b, NULL);
        assert_int_equal(pflex_parse_double(b, strlen(b), &got), 0);
        if (memcmp(&got, &want, sizeof got) != 0)
            fail_msg("%s: got %.17g want %.17g", b, got, want);
    }
    gsl_rng_free(rng);
}

static void test_writer_roundtrip(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    double tm[PFLEX_TM_COUNT];
    for (int k = 0; k < PFLEX_TM_COUNT; k++)
        tm[k] = k == 3 ? NAN : k * 0.5;
    assert_int_equal(pflex_sweep_write_header(f, 1), 0);
    assert_int_equal(pflex_sweep_write_row(f, 1, "a \"quoted\", job", "H200", 8, 700, 650.5, 1234.5, tm), 0);
    assert_int_equal(pflex_sweep_write_row(f, 1, "a \"quoted\", job", "H200", 8, 600, 590.25, 1200, tm), 0);
    fclose(f);
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    if (pflex_sweep_read_mem(buf, len, "w.csv", NULL, &sw, &err) < 0)
        fail_msg("%s", err.text);
    assert_string_equal(sw->jobs[0].name, "a \"quoted\", job");
    assert_string_equal(sw->jobs[0].gpu, "H200");
    assert_int_equal(sw->jobs[0].gpus, 8);
    assert_true(sw->has_telemetry);
    assert_float_equal(sw->jobs[0].points[1].power_w, 650.5, 0);
    assert_true(isnan(sw->jobs[0].telemetry[PFLEX_TM_MEM_COPY_UTIL]));
    assert_float_equal(sw->jobs[0].telemetry[PFLEX_TM_DRAM_ACTIVE], 3.5, 0);
    pflex_sweep_destroy(sw);
    free(buf);
}

/* The real measured sweeps of the Emerald field demonstration, read by an
 * independent parser here and compared with the library to 1e-9. */
static void test_emerald_measured(void **state)
{
    const char *dir = getenv("SHARED_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/emerald-demo/data/dvfs_sweep.csv", dir ? dir : "../shared/data");
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("skipped: no shared data at %s\n", path);
        skip();
    }
    char line[512], names[16][64];
    double cap[16][16], pw[16][16], tp[16][16];
    int nj = 0, np[16] = {0};
    if (!fgets(line, sizeof line, f))
        fail_msg("empty %s", path);
    while (fgets(line, sizeof line, f)) {
        char name[64];
        double c, t, tot, norm, p;
        if (sscanf(line, "%63[^,],%lf,%lf,%lf,%lf,%lf", name, &c, &t, &tot, &norm, &p) != 6)
            continue;
        int j = 0;
        while (j < nj && strcmp(names[j], name))
            j++;
        if (j == nj)
            strcpy(names[nj++], name);
        cap[j][np[j]] = c, pw[j][np[j]] = p, tp[j][np[j]] = t, np[j]++;
    }
    fclose(f);
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    if (pflex_sweep_read_file(path, "job=Workload,cap_w=GPU power cap,power_w=power per GPU",
                              &sw, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal((int)sw->njobs, nj);
    for (int j = 0; j < nj; j++) {
        /* independent: baseline = highest cap; sort by x by selection */
        int b = 0;
        for (int k = 1; k < np[j]; k++)
            if (cap[j][k] > cap[j][b])
                b = k;
        double xs[17], ls[17];
        int m = 1, used[16] = {0};
        xs[0] = ls[0] = 0;
        for (;;) {
            int best = -1;
            for (int k = 0; k < np[j]; k++) {
                double x = 1 - pw[j][k] / pw[j][b];
                if (!used[k] && k != b && x > 0 && (best < 0 || x < 1 - pw[j][best] / pw[j][b]))
                    best = k;
            }
            if (best < 0)
                break;
            used[best] = 1;
            xs[m] = 1 - pw[j][best] / pw[j][b];
            ls[m] = 1 - tp[j][best] / tp[j][b];
            m++;
        }
        struct pflex_curve c;
        struct pflex_pfi p;
        assert_string_equal(sw->jobs[j].name, names[j]);
        assert_int_equal(pflex_curve_init(&c, sw->jobs[j].points, sw->jobs[j].npoints, NULL), 0);
        for (double range = 0.1; range < 0.8; range += 0.1) {
            pflex_pfi_compute(&c, range, &p);
            double want = pfi_gsl(xs, ls, (size_t)m, range);
            if (fabs(p.pfi - want) > 1e-9)
                fail_msg("%s range %.1f: pfi %.12g, independent %.12g", names[j], range, p.pfi, want);
        }
        pflex_curve_fini(&c);
    }
    pflex_sweep_destroy(sw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_computed),
        cmocka_unit_test(test_averaging_and_order),
        cmocka_unit_test(test_curve_equal_reductions),
        cmocka_unit_test(test_columns_mapping),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_no_binding_cap),
        cmocka_unit_test(test_zero_baseline),
        cmocka_unit_test(test_random_against_gsl),
        cmocka_unit_test(test_number_parser),
        cmocka_unit_test(test_writer_roundtrip),
        cmocka_unit_test(test_emerald_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
