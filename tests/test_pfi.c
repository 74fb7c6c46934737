/* test_pfi.c — sweep reading, loss curves, every PFI metric, shed.
 *
 * Each metric is checked against an independent computation written here:
 * direct sums for ratio, trapezoids for area, a closed-form least-squares
 * slope in long double for elasticity, GSL's linear interpolation and its
 * exact integral for loss-area; on the real Emerald sweep and on thousands
 * of seeded random sweeps; the drop rules at their thresholds. */
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
#include <errno.h>
#include "pflex/io/csv.h"
#include "pflex/flex/pfi.h"

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


/* ---- every metric, against independent computations ------------------ */

/* One job's raw rows (cap, power, throughput), as written to a CSV. */
struct rows {
    size_t n;
    double cap[64], pw[64], tp[64];
};

/* What docs/contract.md §2 says each metric is, computed from the rows directly. */
struct indep {
    int valid[PFLEX_PFI_METRICS];
    double pfi[PFLEX_PFI_METRICS];
    unsigned used[PFLEX_PFI_METRICS], dropped[PFLEX_PFI_METRICS];
    unsigned not_binding, noise;    /* ratio's */
    double range_used, x_max;
    int bound[4];
};

static int grid_has(const double *grid, size_t ngrid, double cap)
{
    if (!ngrid)
        return 1;
    for (size_t g = 0; g < ngrid; g++)
        if (fabs(grid[g] - cap) <= 0.5)
            return 1;
    return 0;
}

static void independent(const struct rows *r, const double *grid, size_t ngrid, double range,
                        struct indep *o)
{
    memset(o, 0, sizeof *o);
    /* Average rows at the same cap: distinct caps in first-seen order. */
    double cap[64] = {0}, pw[64] = {0}, tp[64] = {0};
    size_t n = 0;
    assert_true(r->n > 0);
    for (size_t i = 0; i < r->n; i++) {
        size_t k = 0;
        while (k < n && cap[k] != r->cap[i])
            k++;
        if (k < n)
            continue;
        double sp = 0, st = 0;
        int c = 0;
        for (size_t j = i; j < r->n; j++)
            if (r->cap[j] == r->cap[i])
                sp += r->pw[j], st += r->tp[j], c++;
        cap[n] = r->cap[i], pw[n] = sp / c, tp[n] = st / c, n++;
    }
    size_t b = 0;
    for (size_t k = 1; k < n; k++)
        if (cap[k] > cap[b])
            b = k;
    double p0 = pw[b], t0 = tp[b];
    int sel[64];
    for (size_t k = 0; k < n; k++)
        sel[k] = k != b && grid_has(grid, ngrid, cap[k]);
    /* ratio: mean of x/L over the points kept */
    double sum = 0;
    unsigned used = 0;
    for (size_t k = 0; k < n; k++) {
        if (!sel[k])
            continue;
        double x = 1 - pw[k] / p0, l = 1 - tp[k] / t0;
        if (x < 0.01)
            o->not_binding++;
        else if (l < 0.005)
            o->noise++;
        else
            sum += x / l, used++;
    }
    o->valid[0] = used > 0;
    o->pfi[0] = used ? sum / used : NAN;
    o->used[0] = used;
    o->dropped[0] = o->not_binding + o->noise;
    /* area: (0,0), the capped points under P0 by ascending P/P0 (equal ones
     * averaged), (1,1); picked by repeated minimum. */
    {
        double pu = 0, pf = 0, a = 0, last = -1;
        unsigned u = 0, d = 0;
        for (size_t k = 0; k < n; k++)
            if (sel[k]) {
                if (pw[k] / p0 < 1)
                    u++;
                else
                    d++;
            }
        for (;;) {
            double best = INFINITY;
            for (size_t k = 0; k < n; k++) {
                double q = pw[k] / p0;
                if (sel[k] && q < 1 && q > last && q < best)
                    best = q;
            }
            if (best == INFINITY)
                break;
            double vs = 0;
            int c = 0;
            for (size_t k = 0; k < n; k++)
                if (sel[k] && pw[k] / p0 == best)
                    vs += tp[k] / t0, c++;
            double f = vs / c - best;
            a += (best - pu) * (pf + f) / 2;
            pu = best, pf = f, last = best;
        }
        a += (1 - pu) * pf / 2;
        o->valid[1] = u > 0;
        o->pfi[1] = u ? a : NAN;
        o->used[1] = u;
        o->dropped[1] = d;
    }
    /* elasticity: slope of log T on log P, long double, closed form */
    {
        long double mx = 0, my = 0, sxx = 0, sxy = 0;
        int m = 0;
        unsigned u = 0, d = 0;
        for (size_t k = 0; k < n; k++) {
            if (!sel[k] && k != b)
                continue;
            if (!(tp[k] > 0)) {
                d++;
                continue;
            }
            mx += logl(pw[k]), my += logl(tp[k]), m++;
            if (k != b)
                u++;
        }
        mx /= m, my /= m;
        for (size_t k = 0; k < n; k++)
            if ((sel[k] || k == b) && tp[k] > 0) {
                long double dx = logl(pw[k]) - mx;
                sxx += dx * dx;
                sxy += dx * (logl(tp[k]) - my);
            }
        o->valid[2] = m >= 2 && sxx > 0;
        o->pfi[2] = o->valid[2] ? (double)(1 - sxy / sxx) : NAN;
        o->used[2] = u;
        o->dropped[2] = d;
    }
    /* loss-area: GSL's integral through (0,0) and the kept binding points
     * ascending in x, equal x averaged */
    double xs[65], ls[65];
    size_t m = 1;
    xs[0] = ls[0] = 0;
    unsigned u = 0, d = 0;
    for (double last = 0;;) {
        double best = INFINITY;
        for (size_t k = 0; k < n; k++) {
            double x = 1 - pw[k] / p0;
            if (sel[k] && x > last && x < best)
                best = x;
        }
        if (best == INFINITY)
            break;
        double lsum = 0;
        int c = 0;
        for (size_t k = 0; k < n; k++)
            if (sel[k] && 1 - pw[k] / p0 == best)
                lsum += 1 - tp[k] / t0, c++;
        xs[m] = best, ls[m] = lsum / c, m++;
        last = best;
    }
    for (size_t k = 0; k < n; k++)
        if (sel[k])
            (1 - pw[k] / p0 > 0) ? u++ : d++;
    o->valid[3] = m > 1;
    o->pfi[3] = m > 1 ? pfi_gsl(xs, ls, m, range) : NAN;
    o->range_used = m > 1 ? (range < xs[m - 1] ? range : xs[m - 1]) : NAN;
    o->used[3] = u;
    o->dropped[3] = d;
    /* shed is a bound when no vertex of the whole curve exceeds 1 - s */
    double maxl[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    o->x_max = 0;
    for (size_t k = 0; k < n; k++) {
        double x = 1 - pw[k] / p0;
        if (k == b || !(x > 0))
            continue;
        if (x > o->x_max)
            o->x_max = x;
    }
    /* vertices with equal x are averaged: collect them the same way */
    for (double last = 0;;) {
        double best = INFINITY;
        for (size_t k = 0; k < n; k++) {
            double x = 1 - pw[k] / p0;
            if (k != b && x > last && x < best)
                best = x;
        }
        if (best == INFINITY)
            break;
        double lsum = 0;
        int c = 0;
        for (size_t k = 0; k < n; k++)
            if (k != b && 1 - pw[k] / p0 == best)
                lsum += 1 - tp[k] / t0, c++;
        for (int t = 0; t < 4; t++)
            if (lsum / c > maxl[t])
                maxl[t] = lsum / c;
        last = best;
    }
    for (int t = 0; t < 4; t++)
        o->bound[t] = !(maxl[t] > 1 - pflex_tier_floors[t]);
}

static int close_to(double got, double want)
{
    return fabs(got - want) <= 1e-9 * (1 + fabs(want));
}

/* The library's four metrics on job j against the independent ones. */
static void check_job(const struct pflex_sweep_job *job, const struct rows *r, const double *grid,
                      size_t ngrid, double range, const char *what)
{
    struct indep w;
    independent(r, grid, ngrid, range, &w);
    for (int m = 0; m < PFLEX_PFI_METRICS; m++) {
        struct pflex_pfi_opts o = {(enum pflex_pfi_metric)m, grid, ngrid, range, 0};
        struct pflex_pfi_result res;
        pflex_error_t err;
        if (pflex_pfi_eval(job->points, job->npoints, &o, &res, &err) < 0)
            fail_msg("%s %s: %s", what, pflex_pfi_metric_name(m), err.text);
        if (res.valid != w.valid[m])
            fail_msg("%s %s: valid %d, independent %d (%s)", what, pflex_pfi_metric_name(m),
                     res.valid, w.valid[m], res.reason ? res.reason : "");
        if (w.valid[m] && !close_to(res.pfi, w.pfi[m]))
            fail_msg("%s %s: pfi %.15g, independent %.15g", what, pflex_pfi_metric_name(m),
                     res.pfi, w.pfi[m]);
        if (!w.valid[m] && (res.reason == NULL || !isnan(res.pfi)))
            fail_msg("%s %s: no PFI but no reason or a value", what, pflex_pfi_metric_name(m));
        if (res.points_used != w.used[m] || res.points_dropped != w.dropped[m])
            fail_msg("%s %s: used/dropped %u/%u, independent %u/%u", what,
                     pflex_pfi_metric_name(m), res.points_used, res.points_dropped, w.used[m],
                     w.dropped[m]);
        unsigned reasons = 0;
        for (size_t i = 0; i < res.npoints; i++)
            reasons += res.points[i].use >= PFLEX_PFI_USE_NOT_BINDING;
        assert_int_equal(reasons, res.points_dropped);
        if (m == PFLEX_PFI_METRIC_RATIO) {
            assert_int_equal(res.not_binding, w.not_binding);
            assert_int_equal(res.noise, w.noise);
            /* the older entry point agrees */
            struct pflex_pfi_ratio rr;
            assert_int_equal(pflex_pfi_ratio(job->points, job->npoints, grid, ngrid, &rr, &err), 0);
            assert_int_equal(rr.valid, res.valid);
            assert_int_equal(rr.used, res.points_used);
            assert_int_equal(rr.not_binding + rr.noise, res.points_dropped);
            if (rr.valid)
                assert_true(rr.pfi == res.pfi);
        }
        if (m == PFLEX_PFI_METRIC_LOSS_AREA && w.valid[m] && !close_to(res.range_used, w.range_used))
            fail_msg("%s: range_used %.15g, independent %.15g", what, res.range_used, w.range_used);
        if (!close_to(res.x_max, w.x_max))
            fail_msg("%s: x_max %.15g, independent %.15g", what, res.x_max, w.x_max);
        for (int t = 1; t < 4; t++)
            if (res.shed_bound[t] != w.bound[t])
                fail_msg("%s: shed %d bound %d, independent %d (shed %.15g, x_max %.15g)", what,
                         t, res.shed_bound[t], w.bound[t], res.shed[t], res.x_max);
        pflex_pfi_result_fini(&res);
    }
}

static void test_emerald_metrics(void **state)
{
    const char *dir = getenv("SHARED_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/emerald-demo/data/dvfs_sweep.csv", dir ? dir : "../shared/data");
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("skipped: no shared data at %s\n", path);
        skip();
    }
    static struct rows jobs[16];
    char line[512], names[16][64];
    int nj = 0;
    memset(jobs, 0, sizeof jobs);
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
        struct rows *r = &jobs[j];
        r->cap[r->n] = c, r->pw[r->n] = p, r->tp[r->n] = t, r->n++;
    }
    fclose(f);
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    if (pflex_sweep_read_file(path, "job=Workload,cap_w=GPU power cap,power_w=power per GPU",
                              &sw, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal((int)sw->njobs, nj);
    static const double grids[3][3] = {{0}, {100, 200, 300}, {200, 300, 350}};
    static const size_t ngrids[3] = {0, 3, 3};
    for (int j = 0; j < nj; j++) {
        assert_string_equal(sw->jobs[j].name, names[j]);
        for (int g = 0; g < 3; g++)
            for (double range = 0.1; range < 0.8; range += 0.2) {
                char what[160];
                snprintf(what, sizeof what, "%.63s grid %d range %.1f", names[j], g, range);
                check_job(&sw->jobs[j], &jobs[j], ngrids[g] ? grids[g] : NULL, ngrids[g], range,
                          what);
            }
    }
    pflex_sweep_destroy(sw);
}

/* Sweeps of every kind docs/contract.md §2 must handle, written as CSV text, read back
 * by the reader and checked metric by metric. */
static void test_random_metrics(void **state)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 2026);
    static char buf[16384];
    const int trials = 5000;
    int kinds[6] = {0}, gridded = 0;
    for (int trial = 0; trial < trials; trial++) {
        int kind = (int)gsl_rng_uniform_int(rng, 6);
        kinds[kind]++;
        /* 0 noisy monotone, 1 non-monotone, 2 non-binding caps, 3 one
         * capped point, 4 duplicate caps, 5 zero throughput and equal powers */
        int ncap = kind == 3 ? 2 : 2 + (int)gsl_rng_uniform_int(rng, 10);
        double caps[16], p0 = 150 + 550 * gsl_rng_uniform(rng), t0 = 0.01 + 1e4 * gsl_rng_uniform(rng);
        int top = 300 + (int)gsl_rng_uniform_int(rng, 500);
        for (int k = 0; k < ncap; k++)
            caps[k] = top - 25 * k - (k ? (int)gsl_rng_uniform_int(rng, 20) : 0);
        struct rows r = {0};
        double x = 0, slope = 0.2 + 1.5 * gsl_rng_uniform(rng);
        for (int k = 0; k < ncap; k++) {
            int reps = kind == 4 ? 1 + (int)gsl_rng_uniform_int(rng, 3) : 1;
            double xk, lk;
            if (k == 0) {
                xk = 0, lk = 0;
            } else {
                x += 0.005 + 0.1 * gsl_rng_uniform(rng);
                xk = x;
                switch (kind) {
                case 1: lk = -0.05 + 0.9 * gsl_rng_uniform(rng); break;
                case 2:
                    xk = gsl_rng_uniform(rng) < 0.5 ? -0.03 + 0.045 * gsl_rng_uniform(rng) : x;
                    lk = xk * slope + 0.01 * (gsl_rng_uniform(rng) - 0.5);
                    break;
                default:
                    lk = xk * slope * (0.8 + 0.4 * gsl_rng_uniform(rng))
                         + 0.01 * (gsl_rng_uniform(rng) - 0.5);
                }
                if (lk > 0.95)
                    lk = 0.95;
            }
            for (int q = 0; q < reps; q++) {
                double p = p0 * (1 - xk) * (reps > 1 ? 1 + 0.02 * (gsl_rng_uniform(rng) - 0.5) : 1);
                double t = t0 * (1 - lk) * (reps > 1 ? 1 + 0.02 * (gsl_rng_uniform(rng) - 0.5) : 1);
                if (kind == 5 && k > 0 && gsl_rng_uniform(rng) < 0.25)
                    t = 0;
                if (kind == 5 && k > 1 && gsl_rng_uniform(rng) < 0.3)
                    p = r.pw[r.n - 1];      /* the same power as the cap above */
                r.cap[r.n] = caps[k], r.pw[r.n] = p, r.tp[r.n] = t, r.n++;
            }
        }
        /* rows in a random order */
        for (size_t i = r.n; i > 1; i--) {
            size_t j = gsl_rng_uniform_int(rng, i);
            double c = r.cap[i - 1], p = r.pw[i - 1], t = r.tp[i - 1];
            r.cap[i - 1] = r.cap[j], r.pw[i - 1] = r.pw[j], r.tp[i - 1] = r.tp[j];
            r.cap[j] = c, r.pw[j] = p, r.tp[j] = t;
        }
        size_t len = (size_t)snprintf(buf, sizeof buf, "job,cap_w,power_w,throughput\n");
        for (size_t i = 0; i < r.n; i++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "j,%.17g,%.17g,%.17g\n",
                                    r.cap[i], r.pw[i], r.tp[i]);
        /* a grid: a random subset of the lower caps, sometimes the top one */
        double grid[16];
        size_t ngrid = 0;
        if (gsl_rng_uniform(rng) < 0.35) {
            for (int k = 0; k < ncap; k++)
                if (gsl_rng_uniform(rng) < (k ? 0.5 : 0.3))
                    grid[ngrid++] = caps[k];
            gridded += ngrid > 0;
        }
        pflex_sweep_t *sw = NULL;
        pflex_error_t err;
        if (pflex_sweep_read_mem(buf, len, "r.csv", NULL, &sw, &err) < 0)
            fail_msg("trial %d: %s", trial, err.text);
        char what[64];
        snprintf(what, sizeof what, "trial %d (kind %d)", trial, kind);
        check_job(&sw->jobs[0], &r, ngrid ? grid : NULL, ngrid,
                  0.05 + 0.6 * gsl_rng_uniform(rng), what);
        pflex_sweep_destroy(sw);
    }
    printf("random sweeps checked: %d (noisy %d, non-monotone %d, non-binding %d, one capped "
           "point %d, duplicate caps %d, zero throughput / equal powers %d; %d with a grid)\n",
           trials, kinds[0], kinds[1], kinds[2], kinds[3], kinds[4], kinds[5], gridded);
    gsl_rng_free(rng);
}

/* The drop rules at their thresholds: x < 0.01 does not bind, L < 0.005 is
 * noise; x = 0.01 and L = 0.005 are used. */
static void test_drop_thresholds(void **state)
{
    double x[4] = {PFLEX_PFI_MIN_REDUCTION, nextafter(PFLEX_PFI_MIN_REDUCTION, 0), 0.2, 0.2};
    double l[4] = {0.1, 0.1, PFLEX_PFI_MIN_LOSS, nextafter(PFLEX_PFI_MIN_LOSS, 0)};
    struct pflex_pfi_ratio r;
    pflex_pfi_ratio_xl(x, l, 4, &r);
    assert_int_equal(r.used, 2);
    assert_int_equal(r.not_binding, 1);
    assert_int_equal(r.noise, 1);
    assert_true(r.pfi == (0.01 / 0.1 + 0.2 / 0.005) / 2);
    /* The same through sweep points: the largest power whose x = 1 - P/P0
     * still reaches 0.01, and the next double up, whose x falls short. */
    const double p0 = 700, t0 = 1000;
    double p_at = p0 * 0.99;
    while (1 - p_at / p0 < 0.01)
        p_at = nextafter(p_at, 0);
    while (1 - nextafter(p_at, INFINITY) / p0 >= 0.01)
        p_at = nextafter(p_at, INFINITY);
    double p_under = nextafter(p_at, INFINITY);
    double t_at = t0 * 0.995;
    while (1 - t_at / t0 < 0.005)
        t_at = nextafter(t_at, 0);
    while (1 - nextafter(t_at, INFINITY) / t0 >= 0.005)
        t_at = nextafter(t_at, INFINITY);
    double t_under = nextafter(t_at, INFINITY);
    assert_true(1 - p_at / p0 >= 0.01 && 1 - p_under / p0 < 0.01);
    assert_true(1 - t_at / t0 >= 0.005 && 1 - t_under / t0 < 0.005);
    struct pflex_sweep_point pts[] = {
        {.cap_w = 200, .power_w = 300, .throughput = t_at},     /* x .57, L at: used */
        {.cap_w = 300, .power_w = 400, .throughput = t_under},  /* L under: noise */
        {.cap_w = 400, .power_w = p_at, .throughput = 900},     /* x at: used */
        {.cap_w = 500, .power_w = p_under, .throughput = 900},  /* x under: not binding */
        {.cap_w = 600, .power_w = p0, .throughput = 800},       /* x = 0 */
        {.cap_w = 700, .power_w = p0, .throughput = t0},        /* baseline */
    };
    struct pflex_pfi_opts o = {PFLEX_PFI_METRIC_RATIO, NULL, 0, 0, 0};
    struct pflex_pfi_result res;
    assert_int_equal(pflex_pfi_eval(pts, 6, &o, &res, NULL), 0);
    const enum pflex_pfi_use want[6] = {PFLEX_PFI_USE_USED, PFLEX_PFI_USE_NOISE,
                                        PFLEX_PFI_USE_USED, PFLEX_PFI_USE_NOT_BINDING,
                                        PFLEX_PFI_USE_NOT_BINDING, PFLEX_PFI_USE_BASELINE};
    assert_int_equal(res.npoints, 6);
    for (int i = 0; i < 6; i++)
        if (res.points[i].use != want[i])
            fail_msg("point %d (cap %g): %s, want %s", i, res.points[i].cap_w,
                     pflex_pfi_use_name(res.points[i].use), pflex_pfi_use_name(want[i]));
    assert_int_equal(res.points_used, 2);
    assert_int_equal(res.points_dropped, 3);
    assert_int_equal(res.not_binding, 2);
    assert_int_equal(res.noise, 1);
    double x0 = 1 - 300 / p0, l0 = 1 - t_at / t0, x2 = 1 - p_at / p0, l2 = 1 - 900 / t0;
    assert_true(res.pfi == (x0 / l0 + x2 / l2) / 2);
    pflex_pfi_result_fini(&res);
    /* area and loss-area drop only x <= 0 (the 600 W point); elasticity
     * drops nothing here */
    for (int m = PFLEX_PFI_METRIC_AREA; m <= PFLEX_PFI_METRIC_LOSS_AREA; m++) {
        o.metric = (enum pflex_pfi_metric)m;
        assert_int_equal(pflex_pfi_eval(pts, 6, &o, &res, NULL), 0);
        assert_int_equal(res.points_dropped, m == PFLEX_PFI_METRIC_ELASTICITY ? 0 : 1);
        assert_int_equal(res.points_used, m == PFLEX_PFI_METRIC_ELASTICITY ? 5 : 4);
        assert_true(res.valid);
        pflex_pfi_result_fini(&res);
    }
}

static void test_metric_and_grid_parse(void **state)
{
    for (int m = 0; m < PFLEX_PFI_METRICS; m++) {
        enum pflex_pfi_metric got;
        const char *name = pflex_pfi_metric_name((enum pflex_pfi_metric)m);
        assert_non_null(name);
        assert_int_equal(pflex_pfi_metric_parse(name, &got, NULL), 0);
        assert_int_equal(got, m);
    }
    assert_string_equal(pflex_pfi_metric_name(PFLEX_PFI_METRIC_LOSS_AREA), "loss-area");
    assert_null(pflex_pfi_metric_name((enum pflex_pfi_metric)PFLEX_PFI_METRICS));
    const char *badm[] = {"", "Ratio", "ratio ", "loss_area", "lossarea", "areas", "r"};
    for (size_t i = 0; i < sizeof badm / sizeof *badm; i++) {
        enum pflex_pfi_metric got;
        pflex_error_t err;
        assert_int_equal(pflex_pfi_metric_parse(badm[i], &got, &err), -1);
        assert_non_null(strstr(err.text, "is not a metric (ratio, area, elasticity, loss-area)"));
    }
    assert_int_equal(pflex_pfi_metric_parse(NULL, &(enum pflex_pfi_metric){0}, NULL), -1);

    double g[PFLEX_PFI_GRID_MAX];
    size_t n;
    assert_int_equal(pflex_pfi_grid_parse("700, 200 ,500,600", g, &n, NULL), 0);
    assert_int_equal(n, 4);
    const double want[4] = {200, 500, 600, 700};
    assert_memory_equal(g, want, sizeof want);
    assert_int_equal(pflex_pfi_grid_parse("250.5", g, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_true(g[0] == 250.5);
    char many[PFLEX_PFI_GRID_MAX * 8 + 16];
    size_t len = 0;
    for (int k = 0; k < PFLEX_PFI_GRID_MAX; k++)
        len += (size_t)sprintf(many + len, "%s%d", k ? "," : "", 100 + k);
    assert_int_equal(pflex_pfi_grid_parse(many, g, &n, NULL), 0);
    assert_int_equal(n, PFLEX_PFI_GRID_MAX);
    sprintf(many + len, ",999");
    struct { const char *s, *msg; } bad[] = {
        {"", "grid item 1 is empty"}, {",", "grid item 1 is empty"}, {"200,", "grid item 2 is empty"},
        {"200,,300", "grid item 2 is empty"}, {"abc", "grid item 1 'abc' is not a cap in watts"},
        {"0", "is not a cap"}, {"-5", "is not a cap"}, {"1e6", "is not a cap"},
        {"nan", "is not a cap"}, {"inf", "is not a cap"}, {"0x10", "is not a cap"},
        {"200W", "is not a cap"}, {"2e", "is not a cap"}, {"200;500", "is not a cap"},
        {"200,200", "grid cap 200 W is given twice"}, {"500,200,500", "given twice"},
        {"1111111111111111111111111111111111111111111111", "...' is not a cap"},
        {many, "more than 64 caps"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pflex_error_t err = {{0}};
        if (pflex_pfi_grid_parse(bad[i].s, g, &n, &err) != -1)
            fail_msg("grid '%s' accepted", bad[i].s);
        if (!strstr(err.text, bad[i].msg))
            fail_msg("grid '%s': '%s' lacks '%s'", bad[i].s, err.text, bad[i].msg);
    }
    assert_string_equal(pflex_pfi_use_name(PFLEX_PFI_USE_NOISE), "noise");
    assert_string_equal(pflex_pfi_use_name(PFLEX_PFI_USE_NOT_BINDING), "not-binding");
}

static void test_eval_errors_and_averaging(void **state)
{
    struct pflex_sweep_point pts[] = {
        {.cap_w = 400, .power_w = 380, .throughput = 100, .rows = 1},
        {.cap_w = 300, .power_w = 290, .throughput = 90, .rows = 1},
        {.cap_w = 200, .power_w = 200, .throughput = 70, .rows = 1},
    };
    struct pflex_pfi_opts o = {PFLEX_PFI_METRIC_RATIO, NULL, 0, 0, 0};
    struct pflex_pfi_result res;
    pflex_error_t err;
    assert_int_equal(pflex_pfi_eval(pts, 0, &o, &res, &err), -1);
    assert_non_null(strstr(err.text, "no measurements"));
    assert_int_equal(errno, EINVAL);
    double grid[2] = {200, 250};
    o.grid_w = grid, o.ngrid = 2;
    assert_int_equal(pflex_pfi_eval(pts, 3, &o, &res, &err), -1);
    assert_string_equal(err.text, "grid cap 250 W was not measured (measured: 200/300/400 W)");
    assert_int_equal(errno, EINVAL);
    struct pflex_pfi_ratio rr;
    assert_int_equal(pflex_pfi_ratio(pts, 3, grid, 2, &rr, &err), -1);
    /* grid_partial: the missing cap is counted, the PFI uses 200 W alone */
    o.grid_partial = 1;
    assert_int_equal(pflex_pfi_eval(pts, 3, &o, &res, &err), 0);
    assert_int_equal(res.grid_missing, 1);
    assert_int_equal(res.points_used, 1);
    assert_true(res.pfi == (1 - 200 / 380.0) / (1 - 70 / 100.0));
    pflex_pfi_result_fini(&res);
    o.grid_partial = 0;
    /* A grid of one cap: only that cap's point; the baseline stays 400 W. */
    o.ngrid = 1;
    assert_int_equal(pflex_pfi_eval(pts, 3, &o, &res, &err), 0);
    assert_int_equal(res.points_used, 1);
    assert_int_equal(res.off_grid, 1);
    assert_true(res.pfi == (1 - 200 / 380.0) / (1 - 70 / 100.0));
    assert_true(res.cap0_w == 400);
    pflex_pfi_result_fini(&res);
    o.ngrid = 0;
    o.metric = PFLEX_PFI_METRIC_LOSS_AREA;
    o.range = 1.5;
    assert_int_equal(pflex_pfi_eval(pts, 3, &o, &res, &err), -1);
    assert_non_null(strstr(err.text, "range"));
    o.range = 0;
    o.metric = (enum pflex_pfi_metric)7;
    assert_int_equal(pflex_pfi_eval(pts, 3, &o, &res, &err), -1);
    o.metric = PFLEX_PFI_METRIC_RATIO;
    struct pflex_sweep_point z[] = {{.cap_w = 400, .power_w = 380, .throughput = 0},
                                    {.cap_w = 300, .power_w = 290, .throughput = 0}};
    assert_int_equal(pflex_pfi_eval(z, 2, &o, &res, &err), -1);
    assert_non_null(strstr(err.text, "baseline throughput at 400 W is not positive"));
    struct pflex_sweep_point nanp[] = {{.cap_w = 400, .power_w = NAN, .throughput = 1},
                                       {.cap_w = 300, .power_w = 290, .throughput = 1}};
    assert_int_equal(pflex_pfi_eval(nanp, 2, &o, &res, &err), -1);
    assert_int_equal(pflex_pfi_ratio(nanp, 2, NULL, 0, &rr, &err), -1);
    /* Points at the same cap, in any order, are averaged by their rows:
     * 300 W twice (1 row at 280/88, 3 rows at 295/91) is one point at
     * (280 + 3*295)/4, (88 + 3*91)/4. */
    struct pflex_sweep_point dup[] = {
        {.cap_w = 300, .power_w = 280, .throughput = 88, .rows = 1},
        {.cap_w = 400, .power_w = 380, .throughput = 100, .rows = 2},
        {.cap_w = 200, .power_w = 200, .throughput = 70, .rows = 1},
        {.cap_w = 300, .power_w = 295, .throughput = 91, .rows = 3},
    };
    struct pflex_sweep_point avg[] = {
        {.cap_w = 200, .power_w = 200, .throughput = 70, .rows = 1},
        {.cap_w = 300, .power_w = (280 + 3 * 295.0) / 4, .throughput = (88 + 3 * 91.0) / 4, .rows = 4},
        {.cap_w = 400, .power_w = 380, .throughput = 100, .rows = 2},
    };
    for (int m = 0; m < PFLEX_PFI_METRICS; m++) {
        struct pflex_pfi_result a, b;
        o.metric = (enum pflex_pfi_metric)m;
        assert_int_equal(pflex_pfi_eval(dup, 4, &o, &a, NULL), 0);
        assert_int_equal(pflex_pfi_eval(avg, 3, &o, &b, NULL), 0);
        assert_int_equal(a.npoints, 3);
        assert_true(a.valid && b.valid);
        if (!close_to(a.pfi, b.pfi))
            fail_msg("%s: %.15g vs %.15g", pflex_pfi_metric_name(m), a.pfi, b.pfi);
        pflex_pfi_result_fini(&a);
        pflex_pfi_result_fini(&b);
    }
    assert_int_equal(pflex_pfi_ratio(dup, 4, NULL, 0, &rr, NULL), 0);
    assert_int_equal(rr.used, 2);
    /* Hand-computed area and elasticity on a small curve: P/P0 = .5, T/T0
     * = .7 at one cap: T/T0 - P/P0 runs (0,0)-(.5,.2)-(1,0), a triangle of
     * base 1 and height .2: area .1. */
    struct pflex_sweep_point h[] = {{.cap_w = 200, .power_w = 200, .throughput = 70},
                                    {.cap_w = 400, .power_w = 400, .throughput = 100}};
    o.metric = PFLEX_PFI_METRIC_AREA;
    assert_int_equal(pflex_pfi_eval(h, 2, &o, &res, NULL), 0);
    assert_float_equal(res.pfi, 0.1, 1e-15);
    pflex_pfi_result_fini(&res);
    o.metric = PFLEX_PFI_METRIC_ELASTICITY;
    assert_int_equal(pflex_pfi_eval(h, 2, &o, &res, NULL), 0);
    assert_float_equal(res.alpha, log(0.7) / log(0.5), 1e-14);
    assert_float_equal(res.pfi, 1 - log(0.7) / log(0.5), 1e-14);
    assert_float_equal(res.r2, 1, 1e-14);
    pflex_pfi_result_fini(&res);
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
        cmocka_unit_test(test_emerald_metrics),
        cmocka_unit_test(test_random_metrics),
        cmocka_unit_test(test_drop_thresholds),
        cmocka_unit_test(test_metric_and_grid_parse),
        cmocka_unit_test(test_eval_errors_and_averaging),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
