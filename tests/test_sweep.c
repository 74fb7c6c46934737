/* test_sweep.c — the sweep reader as a user meets it: any row order, the
 * inputs a file name may really be (a directory, an endless stream), job
 * names of every kind, and what it refuses or warns about.
 *
 *  - Rows of one job in any order (as `pflex sweep --repeats` writes them,
 *    shuffled, ascending) average into the points a brute force computes:
 *    each cap's rows summed in file order, divided by their count, bit for
 *    bit, in both of the reader's groupings (with and without telemetry). */
#include <errno.h>
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
#include "pflex/io/csv.h"
#include "pflex/io/sweep.h"

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

struct trow {
    int cap;
    double power, tput;
};

/* Every order of rows gives what the definition gives. */
static void test_any_order_averages(void **state)
{
    (void)state;
    enum { NCAPS = 37, MAXR = 9 };
    for (int iter = 0; iter < 60; iter++) {
        int reps = 1 + (int)(rnd() % MAXR), n = NCAPS * reps, tm = iter & 1, shape = iter % 3;
        struct trow *rows = malloc((size_t)n * sizeof *rows);
        assert_non_null(rows);
        for (int i = 0; i < n; i++) {
            int k = i / reps;               /* shape 0: repeats, falling caps */
            rows[i].cap = shape == 1 ? 200 + 10 * k : 200 + 10 * (NCAPS - 1 - k);
            rows[i].power = rows[i].cap * (0.9 + (double)(rnd() % 1000) / 10000.0);
            rows[i].tput = 100 + (double)(rnd() % 100000) / 1000.0;
        }
        if (shape == 2)
            for (int i = n; i > 1; i--) {
                int j = (int)(rnd() % (uint64_t)i);
                struct trow t = rows[i - 1];
                rows[i - 1] = rows[j];
                rows[j] = t;
            }
        size_t cap = (size_t)n * 80 + 100, len = 0;
        char *buf = malloc(cap);
        assert_non_null(buf);
        len += (size_t)snprintf(buf, cap, "job,cap_w,power_w,throughput%s\n",
                                tm ? ",dram_active" : "");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(buf + len, cap - len, "j,%d,%.17g,%.17g%s\n", rows[i].cap,
                                    rows[i].power, rows[i].tput, tm ? ",0.5" : "");
        pflex_sweep_t *sw;
        pflex_error_t err;
        assert_int_equal(pflex_sweep_read_mem(buf, len, "t", NULL, &sw, &err), 0);
        assert_int_equal(sw->njobs, 1);
        assert_int_equal(sw->jobs[0].npoints, NCAPS);
        for (int k = 0; k < NCAPS; k++) {
            int c = 200 + 10 * k;
            double ps = 0, ts = 0;
            unsigned cnt = 0;
            for (int i = 0; i < n; i++)
                if (rows[i].cap == c)
                    ps += rows[i].power, ts += rows[i].tput, cnt++;
            const struct pflex_sweep_point *p = &sw->jobs[0].points[k];
            assert_true(p->cap_w == c);
            assert_int_equal(p->rows, cnt);
            assert_true(p->power_w == ps / cnt);
            assert_true(p->throughput == ts / cnt);
        }
        pflex_sweep_destroy(sw);
        free(buf);
        free(rows);
    }
}

static void test_directory_refused(void **state)
{
    (void)state;
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    char *buf;
    size_t len;
    assert_int_equal(pflex_sweep_read_file(".", NULL, &sw, &err), -1);
    assert_non_null(strstr(err.text, ".: is a directory"));
    assert_false(pflex_error_is_system(&err));
    assert_int_equal(pflex_read_all(".", &buf, &len, &err), -1);
    assert_non_null(strstr(err.text, ".: is a directory"));
    assert_false(pflex_error_is_system(&err));
}

static void test_streams_bounded(void **state)
{
    (void)state;
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    if (access("/dev/zero", R_OK) == 0) {
        assert_int_equal(pflex_sweep_read_file("/dev/zero", NULL, &sw, &err), -1);
        assert_non_null(strstr(err.text, "/dev/zero:1: line longer than"));
        assert_false(pflex_error_is_system(&err));
    }
    /* A regular file past the mapped size with one line past the limit,
     * after a good header and row: read piece by piece, refused at its line. */
    char path[] = "/tmp/pflex-test-sweep-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("job,cap_w,power_w,throughput\na,700,600,1\na,", f);
    for (size_t i = 0; i < 5u << 20; i++)
        fputc('7', f);
    fputs(",1,1\n", f);
    fclose(f);
    assert_int_equal(pflex_sweep_read_file(path, NULL, &sw, &err), -1);
    assert_non_null(strstr(err.text, ":3: line longer than"));
    char *buf;
    size_t len;
    assert_int_equal(pflex_read_all(path, &buf, &len, &err), -1);
    assert_non_null(strstr(err.text, ":3: line longer than"));
    unlink(path);
    pflex_error_t e;
    pflex_error_sys(&e, "x.csv:3: out of memory");
    assert_true(pflex_error_is_system(&e));
    pflex_error_set(&e, "x.csv:3: job 'out of memory' is measured at only one cap");
    assert_false(pflex_error_is_system(&e));
}

static int read_text(const char *text, pflex_sweep_t **sw, pflex_error_t *err)
{
    return pflex_sweep_read_mem(text, strlen(text), "h.csv", NULL, sw, err);
}

static int nwarn_calls;
static char warn_seen[512];
static int on_job(void *ctx, const struct pflex_sweep_job *job, pflex_error_t *err)
{
    (void)ctx, (void)job, (void)err;
    return 0;
}
static void on_restart(void *ctx)
{
    (void)ctx;
}
static void on_warn(void *ctx, const char *w)
{
    (void)ctx;
    nwarn_calls++;
    snprintf(warn_seen, sizeof warn_seen, "%s", w);
}

static void test_header_checks(void **state)
{
    (void)state;
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    const char *misspelt = "job,cap_w,power_w,throughput,flor,gpsu,Workload\n"
                           "a,700,600,100,0.9,8,x\na,500,450,90,0.9,8,x\n";
    assert_int_equal(read_text(misspelt, &sw, &err), 0);
    assert_non_null(sw->warnings);
    assert_string_equal(sw->warnings,
        "h.csv:1: column 'flor' is not a sweep column and is ignored: did you mean 'floor'?\n"
        "h.csv:1: column 'gpsu' is not a sweep column and is ignored: did you mean 'gpus'?\n");
    assert_true(isnan(sw->jobs[0].floor));     /* ignored, as the warning says */
    assert_int_equal(sw->jobs[0].gpus, 1);
    pflex_sweep_destroy(sw);
    /* Through a visitor, the warnings come once, even when the rows are
     * scattered and the file is read twice. */
    char path[] = "/tmp/pflex-test-warn-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *scattered = "job,cap_w,power_w,throughput,flor\n"
                            "a,700,600,100,0.9\nb,700,600,100,0.9\na,500,450,90,0.9\n"
                            "b,500,450,90,0.9\n";
    assert_int_equal(write(fd, scattered, strlen(scattered)), (ssize_t)strlen(scattered));
    close(fd);
    struct pflex_sweep_visitor v = {.job = on_job, .restart = on_restart, .warn = on_warn};
    assert_int_equal(pflex_sweep_read_file_each(path, NULL, &v, &err), 0);
    unlink(path);
    assert_int_equal(nwarn_calls, 1);
    assert_non_null(strstr(warn_seen, "column 'flor' is not a sweep column"));
    /* A clean file, and one with columns far from any name: no warning. */
    assert_int_equal(read_text("job,cap_w,power_w,throughput,floor,note\n"
                               "a,700,600,100,0.9,x\na,500,450,90,0.9,y\n", &sw, &err), 0);
    assert_null(sw->warnings);
    pflex_sweep_destroy(sw);

    assert_int_equal(read_text("job,cap_w,power_w,throughput,floor,floor\na,700,600,100,0.9,0.5\n",
                               &sw, &err), -1);
    assert_string_equal(err.text, "h.csv:1: column 'floor' appears twice in the header "
                                  "(fields 5 and 6)");
    assert_int_equal(read_text("job,cap_w,job,power_w,throughput\na,700,b,600,100\n", &sw, &err), -1);
    assert_non_null(strstr(err.text, "column 'job' appears twice"));
    assert_int_equal(read_text("job;cap_w;power_w;throughput\na;700;600;100\n", &sw, &err), -1);
    assert_string_equal(err.text, "h.csv:1: found one column 'job;cap_w;power_w;throughput': is "
                                  "the separator ';'? (a sweep CSV is comma-separated)");
    assert_int_equal(read_text("job\tcap_w\tpower_w\tthroughput\na\t7\t6\t1\n", &sw, &err), -1);
    assert_non_null(strstr(err.text, "is the separator '\\t'?"));
    assert_int_equal(read_text("job,Cap_W,power_w,throughput\na,700,600,100\n", &sw, &err), -1);
    assert_string_equal(err.text, "h.csv:1: missing column 'cap_w' (the header has 'Cap_W': did "
                                  "you mean 'cap_w'? --columns maps other headers)");
}

static void test_names(void **state)
{
    (void)state;
    static const struct { const char *s; size_t len; const char *want; size_t at; } cases[] = {
        {"plain-name_1.x", 14, NULL, 0},
        {"\xc3\xbc\xe6\xa8\xa1\xf0\x9f\x98\x80", 9, NULL, 0},   /* ü 模 😀 */
        {"\xf4\x8f\xbf\xbf", 4, NULL, 0},                     /* U+10FFFF */
        {"ab\xc0\x80", 4, "is not valid UTF-8", 2},            /* overlong NUL */
        {"\xe0\x9f\xbf", 3, "is not valid UTF-8", 0},          /* overlong */
        {"\xed\xa0\x80", 3, "is not valid UTF-8", 0},          /* surrogate */
        {"\xf4\x90\x80\x80", 4, "is not valid UTF-8", 0},      /* past U+10FFFF */
        {"x\xe6\xa8", 3, "is not valid UTF-8", 1},             /* truncated */
        {"\x80", 1, "is not valid UTF-8", 0},
        {"\xff", 1, "is not valid UTF-8", 0},
        {"a\0b", 3, "holds a NUL byte", 1},
        {"a\tb", 3, "holds a control character", 1},
        {"a\x7f", 2, "holds a control character", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t at = 99;
        const char *why = pflex_name_problem(cases[i].s, cases[i].len, &at);
        if (!cases[i].want) {
            assert_null(why);
            continue;
        }
        assert_non_null(why);
        assert_string_equal(why, cases[i].want);
        assert_int_equal(at, cases[i].at);
    }
    /* '#x' written as a field reads back as a job, not as a comment. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fputs("job,cap_w,power_w,throughput\n", f);
    for (int k = 0; k < 2; k++) {
        pflex_csv_write_field(f, "#x");
        fprintf(f, ",%d,%d,100\n", 700 - 200 * k, 600 - 150 * k);
    }
    fclose(f);
    assert_non_null(strstr(text, "\"#x\",700"));
    pflex_sweep_t *sw;
    pflex_error_t err;
    assert_int_equal(pflex_sweep_read_mem(text, len, "w", NULL, &sw, &err), 0);
    assert_int_equal(sw->njobs, 1);
    assert_string_equal(sw->jobs[0].name, "#x");
    pflex_sweep_destroy(sw);
    free(text);
}

/* The field messages the PFI CSV and jobs-file readers share are the
 * sweep reader's, word for word, for the same fields. */
static void test_field_messages(void **state)
{
    static const struct { const char *csv; const char *col; int kind; } cases[] = {
        {"job,cap_w,power_w,throughput\nb\377d,700,600,100\n", "job", 0},
        {"job,cap_w,power_w,throughput\n\"a\tb\",700,600,100\n", "job", 0},
        {"job,cap_w,power_w,throughput,tier\na,700,600,100,flex9\n", "tier", 1},
        {"job,cap_w,power_w,throughput,gpus\na,700,600,100,two\n", "gpus", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *t = cases[i].csv;
        pflex_sweep_t *sw;
        pflex_error_t want, got;
        assert_int_equal(pflex_sweep_read_mem(t, strlen(t), "f.csv", NULL, &sw, &want), -1);
        pflex_csv_t c;
        pflex_csv_init(&c, t, strlen(t), "f.csv");
        assert_int_equal(pflex_csv_next(&c, &got), 1);
        size_t col = 0;
        while (!pflex_csv_field_is(&c.fields[col], cases[i].col))
            col++;
        assert_int_equal(pflex_csv_next(&c, &got), 1);
        const struct pflex_csv_field *f = &c.fields[col];
        double fl;
        int rc = cases[i].kind == 0 ? pflex_csv_field_name(&got, "f.csv", c.line, "job", "job name", f)
               : cases[i].kind == 1 ? pflex_csv_field_tier(&got, "f.csv", c.line, "tier", f, &fl)
               : pflex_csv_field_error(&got, "f.csv", c.line, "gpus", f,
                                       "is not a positive whole number");
        assert_int_equal(rc, -1);
        assert_string_equal(got.text, want.text);
        pflex_csv_fini(&c);
    }
}

/* pflex_csv_header_check guesses as the sweep reader does: given the
 * sweep's columns, its warnings are the sweep's word for word (but for
 * the kind of file named), and a column twice is the sweep's error. */
/* PFLEX_SWEEP_KEEP_BAD: bad values and a job of one cap do not fail the
 * reading (grouped rows or scattered); pflex_sweep_job_check names them. */
static void test_keep_bad(void **state)
{
    (void)state;
    const char *texts[] = {
        "job,cap_w,power_w,throughput\ngood,200,190,80\ngood,300,280,100\none,300,250,90\n"
        "nan,200,nan,80\nnan,300,280,100\nempty,200,180,\nempty,300,280,100\n",
        /* the same rows scattered: read by the general pass */
        "job,cap_w,power_w,throughput\ngood,200,190,80\none,300,250,90\nnan,200,nan,80\n"
        "empty,200,180,\ngood,300,280,100\nnan,300,280,100\nempty,300,280,100\n",
    };
    for (int t = 0; t < 2; t++) {
        char path[] = "/tmp/pflex-test-bad-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, texts[t], strlen(texts[t])), (ssize_t)strlen(texts[t]));
        close(fd);
        pflex_sweep_t *sw = NULL;
        pflex_error_t err;
        assert_int_equal(pflex_sweep_read_file(path, NULL, &sw, &err), -1);
        assert_int_equal(pflex_sweep_read_file_flags(path, NULL, PFLEX_SWEEP_KEEP_BAD, &sw, &err), 0);
        unlink(path);
        assert_int_equal(sw->njobs, 4);
        assert_int_equal(pflex_sweep_job_check(&sw->jobs[0], &err), 0);
        assert_int_equal(pflex_sweep_job_check(&sw->jobs[1], &err), -1);
        assert_non_null(strstr(err.text, "only one cap (300 W)"));
        assert_int_equal(pflex_sweep_job_check(&sw->jobs[2], &err), -1);
        assert_non_null(strstr(err.text, "power_w at 200 W"));
        assert_int_equal(pflex_sweep_job_check(&sw->jobs[3], &err), -1);
        assert_non_null(strstr(err.text, "throughput at 200 W"));
        pflex_sweep_destroy(sw);
    }
}

static void test_header_check_as_sweep(void **state)
{
    const char *cols[9 + PFLEX_TM_COUNT] = {"job", "cap_w", "power_w", "throughput", "gpu",
                                            "gpus", "floor", "weight", "tier"};
    for (int k = 0; k < PFLEX_TM_COUNT; k++)
        cols[9 + k] = pflex_tm_name((enum pflex_tm)k);
    size_t ncols = 9 + PFLEX_TM_COUNT;
    static const char *const extra[] = {
        "flor", "gpsu", "Floor", "weigth", "tierr", "sm_activ", "dram_actve", "notes,flor,wieght",
        "gpu,gpuss", "floor,flor", "zzz",
    };
    for (size_t i = 0; i < sizeof extra / sizeof *extra + 1; i++) {
        int twice = i == sizeof extra / sizeof *extra;
        char t[256], pad[16] = ",";
        for (const char *q = extra[twice ? 0 : i]; *q; q++)
            if (*q == ',')
                strcat(pad, ",");
        snprintf(t, sizeof t, "job,cap_w,power_w,throughput,%s\na,700,600,100%s\na,500,450,90%s\n",
                 twice ? "floor,gpus,floor" : extra[i], twice ? ",0.5,1,0.5" : pad,
                 twice ? ",0.5,1,0.5" : pad);
        pflex_sweep_t *sw = NULL;
        pflex_error_t want, got;
        int rsw = pflex_sweep_read_mem(t, strlen(t), "f.csv", NULL, &sw, &want);
        pflex_csv_t c;
        pflex_csv_init(&c, t, strlen(t), "f.csv");
        assert_int_equal(pflex_csv_next(&c, &got), 1);
        int idx[9 + PFLEX_TM_COUNT];
        for (size_t k = 0; k < ncols; k++) {
            idx[k] = -1;
            for (size_t f = 0; f < c.nfields && idx[k] < 0; f++)
                if (pflex_csv_field_is(&c.fields[f], cols[k]))
                    idx[k] = (int)f;
        }
        char *warn = NULL;
        int rc = pflex_csv_header_check(&c, "f.csv", "sweep", cols, ncols, idx, &warn, &got);
        assert_int_equal(rc, rsw);
        if (rc < 0) {
            assert_string_equal(got.text, want.text);
        } else if (sw->warnings) {
            assert_non_null(warn);
            assert_string_equal(warn, sw->warnings);
        } else {
            assert_null(warn);
        }
        /* "flor" beside "floor" and "zzz" are near no column the header lacks */
        int none = twice || strcmp(extra[i], "zzz") == 0 || strcmp(extra[i], "floor,flor") == 0;
        assert_int_equal(none, warn == NULL);
        free(warn);
        pflex_csv_fini(&c);
        pflex_sweep_destroy(sw);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_order_averages),
        cmocka_unit_test(test_directory_refused),
        cmocka_unit_test(test_streams_bounded),
        cmocka_unit_test(test_header_checks),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_field_messages),
        cmocka_unit_test(test_header_check_as_sweep),
        cmocka_unit_test(test_keep_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
