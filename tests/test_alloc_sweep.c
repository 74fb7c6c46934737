/* test_alloc_sweep.c — the sweep reader's in-place grouping and its
 * streaming hand-over (the path a large allocation input takes) give
 * exactly what the general grouping gives.
 *
 *  - The same random sweeps are read twice: as they are (rows of each job
 *    together: in place) and with an empty telemetry column, which sends
 *    them through the general counting sort; every point must match bit
 *    for bit.
 *  - Files written to a temporary folder are read job by job
 *    (pflex_sweep_read_file_each) and as an allocation problem
 *    (pflex_alloc_input_read), and compared bit for bit with
 *    pflex_sweep_read_mem on the same text: grouped files, scattered rows
 *    and repeated names (the restart through the row-collecting pass),
 *    errors after a restart (same file:line), a file larger than the 4 MiB
 *    read buffer with records across its boundary, CRLF, a byte-order mark,
 *    quoted names, comments and blank lines.
 *  - Sweeps of the shapes the in-place pass takes shortcuts on (names that
 *    differ from the last job's in one byte, caps strictly falling, equal
 *    caps, curves shorter than their points, optional columns present or
 *    not, a GPU count repeated or changed) against the general grouping
 *    and against the names and GPU counts written.
 *  - Rows split on the spot give what the general tokenizer gives: the same
 *    rows with a quoted extra column (which sends every line to it); so do
 *    the numbers read while they are split, against pflex_parse_double. */
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
#include "pflex/flex/alloc.h"
#include "pflex/util/gpukind.h"
#include "pflex/flex/curve.h"
#include "pflex/io/sweep.h"

static uint64_t rs;

static unsigned rnd(unsigned n)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (unsigned)(rs % n);
}

static void test_in_place_matches_general(void **state)
{
    size_t cap = 1 << 20;
    char *a = malloc(cap), *b = malloc(cap);
    rs = 0x1234567;
    int compared = 0;
    for (int it = 0; it < 500; it++) {
        size_t la = 0, lb = 0;
        la += (size_t)snprintf(a + la, cap - la, "job,cap_w,power_w,throughput,gpus\n");
        lb += (size_t)snprintf(b + lb, cap - lb, "job,cap_w,power_w,throughput,gpus,sm_active\n");
        unsigned jobs = 1 + rnd(40);
        for (unsigned j = 0; j < jobs; j++) {
            unsigned rows = 2 + rnd(12), g = 1 + rnd(8);
            for (unsigned k = 0; k < rows; k++) {
                unsigned c = 100 + 50 * rnd(6);     /* repeated caps, any order */
                double p = c * (0.8 + 0.01 * rnd(20)), t = 10 + rnd(1000) / 7.0;
                la += (size_t)snprintf(a + la, cap - la, "j%u,%u,%.3f,%.6g,%u\n", j, c, p, t, g);
                lb += (size_t)snprintf(b + lb, cap - lb, "j%u,%u,%.3f,%.6g,%u,\n", j, c, p, t, g);
            }
        }
        pflex_sweep_t *sa = NULL, *sb = NULL;
        pflex_error_t ea, eb;
        int ra = pflex_sweep_read_mem(a, la, "a.csv", NULL, &sa, &ea);
        int rb = pflex_sweep_read_mem(b, lb, "a.csv", NULL, &sb, &eb);
        assert_int_equal(ra, rb);
        if (ra < 0) {
            assert_string_equal(ea.text, eb.text);     /* e.g. one cap only */
            continue;
        }
        assert_int_equal(sa->njobs, sb->njobs);
        assert_false(sa->has_telemetry);
        for (size_t j = 0; j < sa->njobs; j++) {
            const struct pflex_sweep_job *x = &sa->jobs[j], *y = &sb->jobs[j];
            assert_string_equal(x->name, y->name);
            assert_int_equal(x->gpus, y->gpus);
            assert_int_equal(x->line, y->line);
            assert_int_equal(x->npoints, y->npoints);
            for (size_t k = 0; k < x->npoints; k++) {
                assert_memory_equal(&x->points[k].cap_w, &y->points[k].cap_w, sizeof(double));
                assert_memory_equal(&x->points[k].power_w, &y->points[k].power_w, sizeof(double));
                assert_memory_equal(&x->points[k].throughput, &y->points[k].throughput,
                                    sizeof(double));
                assert_int_equal(x->points[k].rows, y->points[k].rows);
                assert_int_equal(x->points[k].line, y->points[k].line);
            }
        }
        compared++;
        pflex_sweep_destroy(sa);
        pflex_sweep_destroy(sb);
    }
    print_message("%d sweeps compared\n", compared);
    assert_true(compared > 300);
    free(a);
    free(b);
}

static void test_one_cap_error_in_place(void **state)
{
    const char *s = "job,cap_w,power_w,throughput\nj,400,390,1\nj,400,380,1\nk,300,290,1\n";
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    assert_int_equal(pflex_sweep_read_mem(s, strlen(s), "t.csv", NULL, &sw, &err), -1);
    assert_null(sw);
    assert_non_null(strstr(err.text, "t.csv:2: job 'j' is measured at only one cap (400 W)"));
}

/* ---- streaming hand-over ------------------------------------------ */

/* What a visitor was handed: deep copies, dropped at a restart. */
struct rec {
    char *name, *gpu;
    int gpus;
    double floor, weight;
    unsigned line;
    size_t npoints;
    struct pflex_sweep_point *pts;
};

struct got {
    struct rec *v;
    size_t n, cap;
    int restarts;
    long fail_at;       /* the visitor fails on this job (-1: never) */
};

static char *dup_or_null(const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    assert_non_null(d);
    return d;
}

static void got_clear(struct got *g)
{
    for (size_t k = 0; k < g->n; k++) {
        free(g->v[k].name);
        free(g->v[k].gpu);
        free(g->v[k].pts);
    }
    g->n = 0;
}

static void got_free(struct got *g)
{
    got_clear(g);
    free(g->v);
    memset(g, 0, sizeof *g);
}

static int on_job(void *ctx, const struct pflex_sweep_job *j, pflex_error_t *err)
{
    struct got *g = ctx;
    if (g->fail_at >= 0 && (long)g->n == g->fail_at)
        return pflex_error_set(err, "stopped at job '%s'", j->name);
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 64;
        g->v = realloc(g->v, g->cap * sizeof *g->v);
        assert_non_null(g->v);
    }
    struct rec *r = &g->v[g->n++];
    r->name = dup_or_null(j->name);
    r->gpu = dup_or_null(j->gpu);
    r->gpus = j->gpus;
    r->floor = j->floor;
    r->weight = j->weight;
    r->line = j->line;
    r->npoints = j->npoints;
    assert_null(j->telemetry);
    r->pts = malloc(j->npoints * sizeof *r->pts);
    assert_non_null(r->pts);
    memcpy(r->pts, j->points, j->npoints * sizeof *r->pts);
    return 0;
}

static void on_restart(void *ctx)
{
    struct got *g = ctx;
    got_clear(g);
    g->restarts++;
}

static void same_point(const struct pflex_sweep_point *x, const struct pflex_sweep_point *y)
{
    assert_memory_equal(&x->cap_w, &y->cap_w, sizeof(double));
    assert_memory_equal(&x->power_w, &y->power_w, sizeof(double));
    assert_memory_equal(&x->throughput, &y->throughput, sizeof(double));
    assert_int_equal(x->rows, y->rows);
    assert_int_equal(x->line, y->line);
}

/* Reads a and b, one sweep written two ways, and checks that they give
 * the same jobs bit for bit, or the same error (but for a short row's
 * field count: a quoted comma, or "1,5" for a number, counts as one field
 * more on one side).  Counts the sweep into *ok or *bad. */
static void read_alike(const char *a, size_t la, const char *b, size_t lb, const char *name,
                       int *ok, int *bad)
{
    pflex_sweep_t *sa = NULL, *sb = NULL;
    pflex_error_t ea, eb;
    int ra = pflex_sweep_read_mem(a, la, name, NULL, &sa, &ea);
    int rb = pflex_sweep_read_mem(b, lb, name, NULL, &sb, &eb);
    assert_int_equal(ra, rb);
    if (ra < 0) {
        if (!strstr(ea.text, " fields, the header has "))
            assert_string_equal(ea.text, eb.text);
        (*bad)++;
        return;
    }
    (*ok)++;
    assert_int_equal(sa->njobs, sb->njobs);
    for (size_t k = 0; k < sa->njobs; k++) {
        assert_string_equal(sa->jobs[k].name, sb->jobs[k].name);
        assert_int_equal(sa->jobs[k].gpus, sb->jobs[k].gpus);
        assert_int_equal(sa->jobs[k].npoints, sb->jobs[k].npoints);
        for (size_t q = 0; q < sa->jobs[k].npoints; q++)
            same_point(&sa->jobs[k].points[q], &sb->jobs[k].points[q]);
    }
    pflex_sweep_destroy(sa);
    pflex_sweep_destroy(sb);
}

/* Every job handed over equals the sweep's, bit for bit. */
static void same_as_sweep(const struct got *g, const pflex_sweep_t *sw)
{
    assert_int_equal(g->n, sw->njobs);
    for (size_t k = 0; k < g->n; k++) {
        const struct rec *r = &g->v[k];
        const struct pflex_sweep_job *j = &sw->jobs[k];
        assert_string_equal(r->name, j->name);
        if (j->gpu)
            assert_string_equal(r->gpu, j->gpu);
        else
            assert_null(r->gpu);
        assert_int_equal(r->gpus, j->gpus);
        assert_memory_equal(&r->floor, &j->floor, sizeof(double));
        assert_memory_equal(&r->weight, &j->weight, sizeof(double));
        assert_int_equal(r->line, j->line);
        assert_int_equal(r->npoints, j->npoints);
        for (size_t q = 0; q < r->npoints; q++)
            same_point(&r->pts[q], &j->points[q]);
    }
}

/* The problem pflex_alloc_input_read makes from the file equals one made
 * here from the in-memory sweep's curves. */
static void same_problem(const char *path, const pflex_sweep_t *sw)
{
    struct pflex_alloc_source src = {.sweep_path = path, .floor = NAN};
    pflex_alloc_input_t *in = NULL;
    pflex_error_t err;
    assert_int_equal(pflex_alloc_input_read(&src, &in, &err), 0);
    assert_int_equal(in->njobs, sw->njobs);
    assert_true(in->has_curves);
    for (size_t k = 0; k < in->njobs; k++) {
        const struct pflex_alloc_job *a = &in->jobs[k];
        const struct pflex_sweep_job *j = &sw->jobs[k];
        /* the curve of the monotone fit, flat below the draw where no cap
         * binds (pflex/flex/alloc.h) */
        struct pflex_curve c;
        struct pflex_sweep_point *fp = malloc(j->npoints * sizeof *fp);
        assert_non_null(fp);
        assert_int_equal(pflex_curve_fit_points(j->points, j->npoints, fp, NULL, &err), 0);
        assert_int_equal(pflex_curve_init(&c, fp, j->npoints, &err), 0);
        free(fp);
        const struct pflex_gpu_range *gk = pflex_gpu_range_find(j->gpu);
        if (gk)
            pflex_curve_flat_below(&c, gk->min_cap_w);
        double fl = isnan(j->floor) ? 0 : j->floor;
        assert_string_equal(a->name, j->name);
        assert_int_equal(a->gpus, j->gpus);
        assert_memory_equal(&a->p0_w, &c.p0_w, sizeof(double));
        assert_memory_equal(&a->t0, &c.t0, sizeof(double));
        assert_memory_equal(&a->cap0_w, &c.cap0_w, sizeof(double));
        assert_memory_equal(&a->weight, &j->weight, sizeof(double));
        assert_memory_equal(&a->floor, &fl, sizeof(double));
        /* x_max, up to where the cap reaches the GPU kind's minimum */
        struct pflex_alloc_job ref = *a;
        ref.x_hi = c.x_max;
        struct pflex_alloc_capinfo ci = {.cap_w = c.cap_w, .cap_min_w = gk ? gk->min_cap_w : 0};
        double xh = pflex_alloc_cap_x_hi(&ref, &ci);
        assert_memory_equal(&a->x_hi, &xh, sizeof(double));
        assert_true(isnan(a->pfi));
        assert_int_equal(a->npoints, c.n);
        assert_memory_equal(a->x, c.x, c.n * sizeof(double));
        assert_memory_equal(a->loss, c.loss, c.n * sizeof(double));
        pflex_curve_fini(&c);
    }
    pflex_alloc_input_destroy(in);
}

static char tmpdir[4096];

static int make_tmpdir(void **state)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/pflex-alloc-sweep-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    return rmdir(tmpdir);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Reads text from a file job by job and from memory, and checks both give
 * the same (jobs or error).  Returns the restarts seen. */
static int check_file(const char *text, size_t len, int problem)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/sweep.csv", tmpdir);
    write_file(path, text, len);
    pflex_sweep_t *sw = NULL, *sf = NULL;
    pflex_error_t em, ef, ev;
    int rm = pflex_sweep_read_mem(text, len, path, NULL, &sw, &em);
    int rf = pflex_sweep_read_file(path, NULL, &sf, &ef);
    struct got g = {.fail_at = -1};
    struct pflex_sweep_visitor v = {.ctx = &g, .job = on_job, .restart = on_restart};
    int rv = pflex_sweep_read_file_each(path, NULL, &v, &ev);
    assert_int_equal(rf, rm);
    assert_int_equal(rv, rm);
    int restarts = g.restarts;
    if (rm < 0) {
        assert_string_equal(ef.text, em.text);
        assert_string_equal(ev.text, em.text);
        if (problem) {
            /* strict: a bad job fails the reading with the reader's error
             * (by default it would be skipped, the rest read) */
            struct pflex_alloc_source src = {.sweep_path = path, .floor = NAN, .strict = 1};
            pflex_alloc_input_t *in = NULL;
            pflex_error_t ea;
            assert_int_equal(pflex_alloc_input_read(&src, &in, &ea), -1);
            assert_null(in);
            assert_string_equal(ea.text, em.text);
        }
    } else {
        same_as_sweep(&g, sw);
        assert_int_equal(sf->njobs, sw->njobs);
        for (size_t k = 0; k < sw->njobs; k++) {
            assert_string_equal(sf->jobs[k].name, sw->jobs[k].name);
            assert_int_equal(sf->jobs[k].npoints, sw->jobs[k].npoints);
            for (size_t q = 0; q < sw->jobs[k].npoints; q++)
                same_point(&sf->jobs[k].points[q], &sw->jobs[k].points[q]);
        }
        if (problem)
            same_problem(path, sw);
    }
    got_free(&g);
    pflex_sweep_destroy(sw);
    pflex_sweep_destroy(sf);
    assert_int_equal(unlink(path), 0);
    return restarts;
}

static void check_text(const char *text, int want_restart)
{
    int restarts = check_file(text, strlen(text), 1);
    assert_int_equal(restarts, want_restart);
}

/* Sweeps of the shapes the in-place pass has shortcuts for, against the
 * general grouping (an empty telemetry column) and, every fourth, read job
 * by job and as a problem (check_file): names of every length that differ
 * in one byte (first, middle or last) from the job before, caps strictly
 * falling (one point a row), rising or repeated (averaged), power that
 * does not fall with the cap (curves shorter than their points), a zero or
 * negative-zero throughput, the optional columns present or not, empty or
 * not, and GPU counts that change within a job (an error). */
static void test_in_place_shapes(void **state)
{
    static const char *const names[] = {
        "a", "b", "ab", "ac", "abc", "axc", "abd", "xbc", "abcd", "abce", "xbcd", "abxd",
        "abcdefg", "abcdefh", "abcxefg", "abcdefgh", "abcdefgi", "xbcdefgh", "abcdxfgh",
        "abcdefghijklmnop", "abcdefghijklmnoq", "abcdefghxjklmnop", "xbcdefghijklmnop",
        "abcdefghijklmnopq", "abcdefghijklmnopr", "abcdefghijklxnopq", "job17", "job18",
    };
    static const char *const opt_cols[] = {"gpus", "gpu", "floor", "tier", "weight"};
    size_t cap = 1 << 20;
    char *a = malloc(cap), *b = malloc(cap);
    rs = 0xfeed5;
    int compared = 0, errors = 0, problems = 0;
    for (int it = 0; it < 800; it++) {
        size_t la = 0, lb = 0;
        int has[5], order[9], ncol = 0;
        for (int k = 0; k < 4; k++)
            order[ncol++] = -1 - k;     /* job, cap_w, power_w, throughput */
        for (int k = 0; k < 5; k++)
            if ((has[k] = rnd(3) == 0))
                order[ncol++] = k;
        for (int k = ncol - 1; k > 0; k--) {
            int x = (int)rnd((unsigned)k + 1), t = order[k];
            order[k] = order[x];
            order[x] = t;
        }
        static const char *const base[4] = {"job", "cap_w", "power_w", "throughput"};
        for (int k = 0; k < ncol; k++) {
            const char *h = order[k] < 0 ? base[-1 - order[k]] : opt_cols[order[k]];
            la += (size_t)snprintf(a + la, cap - la, "%s%s", k ? "," : "", h);
        }
        memcpy(b, a, la);
        lb = la;
        la += (size_t)snprintf(a + la, cap - la, "\n");
        lb += (size_t)snprintf(b + lb, cap - lb, ",sm_active\n");
        unsigned jobs = 1 + rnd(30), nn = sizeof names / sizeof *names, ni = rnd(nn);
        const char *seen[32];   /* the jobs' names in the order they first come */
        unsigned seen_gpus[32]; /* the first GPU count given (0: none yet) */
        size_t nseen = 0;
        int gpus_change = 0;    /* some job's GPU count changes: an error */
        for (unsigned j = 0; j < jobs; j++) {
            ni = rnd(2) ? rnd(nn) : (ni + 1) % nn;  /* often the near miss after the last */
            const char *name = names[ni];
            size_t sn = 0;
            while (sn < nseen && strcmp(seen[sn], name) != 0)
                sn++;
            if (sn == nseen) {
                seen_gpus[nseen] = 0;
                seen[nseen++] = name;
            }
            unsigned rows = 2 + rnd(8), g = 1 + rnd(8), shape = rnd(4);
            double p0 = 300 + rnd(400);
            for (unsigned k = 0; k < rows; k++) {
                unsigned c = shape == 0 ? 700 - 50 * k          /* strictly falling */
                           : shape == 1 ? 200 + 50 * k          /* rising */
                           : 100 + 50 * rnd(6);                 /* repeats, any order */
                double p = rnd(5) == 0   ? p0                    /* the cap does not bind */
                           : rnd(8) == 0 ? p0 + rnd(50)          /* more power */
                                         : c * (0.5 + 0.01 * rnd(40));
                char t[32];
                unsigned tk = rnd(40);
                if (tk == 0)
                    snprintf(t, sizeof t, "-0");
                else if (tk == 1)
                    snprintf(t, sizeof t, "0");
                else
                    snprintf(t, sizeof t, "%.6g", 10 + rnd(100000) / 7.0);
                char row[256];
                size_t lr = 0;
                for (int q = 0; q < ncol; q++) {
                    char v[64] = "";
                    switch (order[q]) {
                    case -1: snprintf(v, sizeof v, "%s", name); break;
                    case -2: snprintf(v, sizeof v, "%u", c); break;
                    case -3: snprintf(v, sizeof v, "%.2f", p); break;
                    case -4: snprintf(v, sizeof v, "%s", t); break;
                    case 0:             /* gpus: now and then empty or changed */
                        if (rnd(10)) {
                            unsigned gv = rnd(500) ? g : g + 1;
                            snprintf(v, sizeof v, "%u", gv);
                            if (!seen_gpus[sn])
                                seen_gpus[sn] = gv;
                            gpus_change |= seen_gpus[sn] != gv;
                        }
                        break;
                    default: {          /* gpu, floor, tier, weight: empty or one of two */
                        static const char *const val[5][2] = {
                            {"", ""}, {"A100", "H100"}, {"0.5", "0.25"}, {"flex1", "flex3"},
                            {"2", "0.5"},
                        };
                        snprintf(v, sizeof v, "%s", rnd(3) ? "" : val[order[q]][rnd(2)]);
                        break;
                    }
                    }
                    lr += (size_t)snprintf(row + lr, sizeof row - lr, "%s%s", q ? "," : "", v);
                }
                la += (size_t)snprintf(a + la, cap - la, "%s\n", row);
                lb += (size_t)snprintf(b + lb, cap - lb, "%s,\n", row);
            }
        }
        pflex_sweep_t *sa = NULL, *sb = NULL;
        pflex_error_t ea, eb;
        int ra = pflex_sweep_read_mem(a, la, "s.csv", NULL, &sa, &ea);
        int rb = pflex_sweep_read_mem(b, lb, "s.csv", NULL, &sb, &eb);
        int curves = 1;         /* a problem can be made (no zero baseline) */
        assert_int_equal(ra, rb);
        if (ra < 0) {
            assert_string_equal(ea.text, eb.text);
            errors++;
        } else {
            for (size_t j = 0; j < sa->njobs; j++) {
                struct pflex_curve cv;
                if (pflex_curve_init(&cv, sa->jobs[j].points, sa->jobs[j].npoints, &ea) < 0)
                    curves = 0;
                else
                    pflex_curve_fini(&cv);
            }
            assert_false(gpus_change);
            assert_int_equal(sa->njobs, nseen);
            assert_int_equal(sb->njobs, nseen);
            for (size_t j = 0; j < sa->njobs; j++) {
                const struct pflex_sweep_job *x = &sa->jobs[j], *y = &sb->jobs[j];
                assert_string_equal(x->name, seen[j]);
                assert_string_equal(y->name, seen[j]);
                assert_int_equal(x->gpus, seen_gpus[j] ? (int)seen_gpus[j] : 1);
                if (y->gpu)
                    assert_string_equal(x->gpu, y->gpu);
                else
                    assert_null(x->gpu);
                assert_int_equal(x->gpus, y->gpus);
                assert_memory_equal(&x->floor, &y->floor, sizeof(double));
                assert_memory_equal(&x->weight, &y->weight, sizeof(double));
                assert_int_equal(x->line, y->line);
                assert_int_equal(x->npoints, y->npoints);
                for (size_t k = 0; k < x->npoints; k++)
                    same_point(&x->points[k], &y->points[k]);
            }
            compared++;
        }
        pflex_sweep_destroy(sa);
        pflex_sweep_destroy(sb);
        if (it % 4 == 0) {
            check_file(a, la, curves);
            problems += ra == 0 && curves;
        }
    }
    print_message("%d sweeps compared, %d errors compared, %d problems\n", compared, errors,
                  problems);
    assert_true(compared > 200 && errors > 50 && problems > 50);
    free(a);
    free(b);
}

static void test_stream_grouped(void **state)
{
    check_text("job,gpu,gpus,cap_w,power_w,throughput,floor,weight,tier\n"
               "a,A100,8,400,390,100,,2,\n"
               "a,A100,8,300,295.5,97,,,\n"
               "a,A100,8,300,296.5,96.5,,,\n"
               "a,A100,8,200,199,80,,,\n"
               "b,,4,400,380,50,0.8,,\n"
               "b,,4,250,240,45,,,\n"
               "c,H100,,700,650,10,,,flex2\n"
               "c,H100,,500,480,9.5,,,\n",
               0);
}

static void test_stream_scattered_restarts(void **state)
{
    /* a's rows are split by b's: the collecting pass groups them. */
    check_text("job,cap_w,power_w,throughput,gpus\n"
               "a,400,390,100,2\n"
               "b,400,380,50,1\n"
               "a,300,290,90,2\n"
               "b,300,280,40,1\n",
               1);
    /* The repeat is found only at the end (names are not looked up as the
     * rows come): every job was handed over once already. */
    check_text("job,cap_w,power_w,throughput\n"
               "a,400,390,100\na,300,290,90\n"
               "b,400,380,50\nb,300,280,40\n"
               "c,400,380,50\nc,300,280,40\n"
               "a,200,190,70\n",
               1);
}

static void test_stream_errors_after_restart(void **state)
{
    const char *bad[] = {
        /* scattered, then a bad number further on */
        "job,cap_w,power_w,throughput\n"
        "a,400,390,100\nb,400,380,50\na,300,290,90\nb,300,280,40\n"
        "c,400,x,1\n",
        /* scattered, then a GPU count that changes */
        "job,cap_w,power_w,throughput,gpus\n"
        "a,400,390,100,2\nb,400,380,50,1\na,300,290,90,3\n",
        /* one cap only, found after the restart */
        "job,cap_w,power_w,throughput\n"
        "a,400,390,100\nb,400,380,50\na,300,290,90\nb,400,370,40\n",
        /* a repeat found at the end, with a short row before it */
        "job,cap_w,power_w,throughput\n"
        "a,400,390,100\na,300,290,90\nb,400,380,50\nb,300\na,200,190,70\n",
        /* an error in the first pass, before any scattering: no restart */
        "job,cap_w,power_w,throughput\n"
        "a,400,390,100\na,300,-5,90\n",
        /* one cap in the first pass, and a later bad row reported first */
        "job,cap_w,power_w,throughput\n"
        "a,400,390,100\nb,400,380,50\nb,300,280,40\nc,0,1,1\n",
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        check_file(bad[k], strlen(bad[k]), 1);
    /* The line in the message is the file's, after a restart too. */
    char path[4200];
    snprintf(path, sizeof path, "%s/bad.csv", tmpdir);
    write_file(path, bad[0], strlen(bad[0]));
    struct got g = {.fail_at = -1};
    struct pflex_sweep_visitor v = {.ctx = &g, .job = on_job, .restart = on_restart};
    pflex_error_t err;
    assert_int_equal(pflex_sweep_read_file_each(path, NULL, &v, &err), -1);
    char want[4400];
    snprintf(want, sizeof want, "%s:6: column 'power_w': 'x' is not a finite number", path);
    assert_string_equal(err.text, want);
    assert_int_equal(g.restarts, 1);
    got_free(&g);
    assert_int_equal(unlink(path), 0);
}

static void test_stream_visitor_error_stops(void **state)
{
    const char *s = "job,cap_w,power_w,throughput\n"
                    "a,400,390,100\na,300,290,90\nb,400,380,50\nb,300,280,40\n";
    char path[4200];
    snprintf(path, sizeof path, "%s/stop.csv", tmpdir);
    write_file(path, s, strlen(s));
    struct got g = {.fail_at = 1};
    struct pflex_sweep_visitor v = {.ctx = &g, .job = on_job, .restart = on_restart};
    pflex_error_t err;
    assert_int_equal(pflex_sweep_read_file_each(path, NULL, &v, &err), -1);
    assert_string_equal(err.text, "stopped at job 'b'");
    assert_int_equal(g.n, 1);
    got_free(&g);
    assert_int_equal(unlink(path), 0);
}

static void test_stream_crlf_bom_quotes(void **state)
{
    check_text("\xEF\xBB\xBFjob,cap_w,power_w,throughput,gpu\r\n"
               "# a comment\r\n"
               "\"x, \"\"quoted\"\"\",400,390,100,\"A100 80GB\"\r\n"
               "\r\n"
               "\"x, \"\"quoted\"\"\",300,290,90,\r\n"
               " y ,400, 380 ,50,\r\n"
               "y,300,280,40\r\n"
               "\"multi\nline\",400,380,50,\r\n"
               "\"multi\nline\",350,300,45,\r\n",
               0);
    /* A name quoted once and plain once is the same job. */
    check_text("job,cap_w,power_w,throughput\n"
               "\"a\",400,390,100\na,300,290,90\n\"a\",200,190,80\r\n",
               0);
}

/* Random sweeps with line lengths of all kinds across a 4 MiB read buffer:
 * about 9 MB, with long names so that records cross its boundary at every
 * offset; grouped, then with two jobs' rows swapped (a restart). */
static void test_stream_bigger_than_buffer(void **state)
{
    size_t cap = 12u << 20, len = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    rs = 0xfeedbeef;
    len += (size_t)snprintf(t + len, cap - len, "job,gpus,cap_w,power_w,throughput,note\n");
    size_t swap_a = 0, swap_b = 0, swap_len = 0;
    unsigned j = 0;
    while (len < (9u << 20)) {
        unsigned rows = 2 + rnd(8), pad = rnd(90), g = 1 + rnd(8);
        if (j == 20000)
            swap_a = len;
        size_t start = len;
        for (unsigned k = 0; k < rows; k++) {
            unsigned c = 700 - 50 * k;
            len += (size_t)snprintf(t + len, cap - len, "job%u-%.*s,%u,%u,%.2f,%.3f,%s\n", j,
                                    (int)pad, "pppppppppppppppppppppppppppppppppppppppppppppppppp"
                                    "pppppppppppppppppppppppppppppppppppppppp", g, c,
                                    c * (0.85 + 0.001 * rnd(100)), 1000.0 - 7 * k - rnd(5),
                                    rnd(3) ? "" : "\"n,o\"");
        }
        if (j == 20000)
            swap_len = len - start;
        if (j == 20001)
            swap_b = start;
        j++;
    }
    assert_true(len > (8u << 20));
    assert_int_equal(check_file(t, len, 1), 0);
    /* Job 20001's first row before job 20000's last: scattered. */
    size_t last = swap_a + swap_len;
    const char *nl = memchr(t + swap_b, '\n', len - swap_b);
    size_t rowb = (size_t)(nl + 1 - (t + swap_b));
    char *tmp = malloc(rowb);
    assert_non_null(tmp);
    memcpy(tmp, t + swap_b, rowb);
    assert_int_equal(last, swap_b);
    const char *pl = t + last - 1;
    while (pl > t + swap_a && pl[-1] != '\n')
        pl--;
    size_t rowa = (size_t)(t + last - pl);
    memmove(t + (pl - t) + rowb, pl, rowa);
    memcpy((char *)pl, tmp, rowb);
    free(tmp);
    assert_int_equal(check_file(t, len, 1), 1);
    free(t);
}

/* Rows split where they lie give what the general tokenizer gives: the
 * same random rows (blanks around fields, CR, empty and short rows, bad
 * numbers) read as they are and with a quoted last column, which sends
 * every line to the tokenizer. */
static void test_split_matches_tokenizer(void **state)
{
    static const char *const cells[] = {
        "400", " 400", "400 ", "\t300", "3e2", "250.5", "", "x", "-1", "0", "  ",
        "1e400", "+200", ".5e3", "3\r00",
    };
    const size_t ncell = sizeof cells / sizeof *cells;
    size_t cap = 1 << 16;
    char *a = malloc(cap), *b = malloc(cap);
    assert_non_null(a);
    assert_non_null(b);
    rs = 0xabcdef;
    int ok = 0, bad = 0;
    for (int it = 0; it < 3000; it++) {
        size_t la = 0, lb = 0;
        la += (size_t)snprintf(a + la, cap - la, "job,cap_w,power_w,throughput,gpus\n");
        lb += (size_t)snprintf(b + lb, cap - lb, "job,cap_w,power_w,throughput,gpus\n");
        unsigned jobs = 1 + rnd(4);
        for (unsigned jj = 0; jj < jobs; jj++) {
            unsigned rows = 2 + rnd(3);
            for (unsigned k = 0; k < rows; k++) {
                char row[256];
                int odd = rnd(6) == 0;
                const char *name = odd && rnd(2) ? " j" : "j";
                const char *cp = odd ? cells[rnd((unsigned)ncell)] : (k ? "300" : "400");
                const char *pw = odd ? cells[rnd((unsigned)ncell)] : (k ? "290" : "390");
                const char *tp = odd && rnd(2) ? cells[rnd((unsigned)ncell)] : "10";
                const char *gp = odd && rnd(2) ? cells[rnd((unsigned)ncell)] : "2";
                int n;
                if (odd && rnd(8) == 0)
                    n = snprintf(row, sizeof row, "%s%u,%s,%s", name, jj, cp, pw);
                else
                    n = snprintf(row, sizeof row, "%s%u,%s,%s,%s,%s", name, jj, cp, pw, tp, gp);
                const char *eol = rnd(4) ? "\n" : "\r\n";
                la += (size_t)snprintf(a + la, cap - la, "%.*s%s", n, row, eol);
                lb += (size_t)snprintf(b + lb, cap - lb, "%.*s,\"q\"%s", n, row, eol);
            }
        }
        read_alike(a, la, b, lb, "r.csv", &ok, &bad);
    }
    print_message("%d read, %d refused alike\n", ok, bad);
    assert_true(ok > 300 && bad > 300);
    free(a);
    free(b);
}

/* A random number's text: mostly short plain decimals (the ones read
 * while a row is split), and every neighbour of them that must go to
 * pflex_parse_double instead: signs, exponents, long digit strings, two
 * points, a lone point, leading zeros, blanks, empty. */
static void rand_number(char *out, size_t cap)
{
    static const char *const odd[] = {
        "", ".", "..", "1.2.3", "+5", "-5", "1e2", "1E-2", "2.5e1", " 7", "7 ", "\t7", "0x10",
        "inf", "nan", "5.", ".5", "00012", "0.000", "-0", "1,5",
    };
    size_t n = 0;
    unsigned kind = rnd(16);
    if (kind == 0) {
        snprintf(out, cap, "%s", odd[rnd(sizeof odd / sizeof *odd)]);
        return;
    }
    if (kind == 1)
        out[n++] = rnd(2) ? '+' : '-';
    unsigned ndig = 1 + rnd(kind == 2 ? 22 : 8), point = rnd(ndig + 2);
    for (unsigned k = 0; k < ndig && n + 3 < cap; k++) {
        if (k == point)
            out[n++] = '.';
        out[n++] = (char)('0' + (k == 0 && rnd(3) ? 1 + rnd(9) : rnd(10)));
    }
    if (point == ndig && rnd(2))
        out[n++] = '.';
    out[n] = 0;
    if (kind == 3 && n + 6 < cap)
        snprintf(out + n, cap - n, "e%d", (int)rnd(40) - 20);
}

/* Numbers read while a row is split are what pflex_parse_double reads,
 * bit for bit, and refused alike: random number texts in every numeric
 * column (gpus too, changing within a job), rows short and long (past the
 * splitter's 64-byte window), LF and CRLF, read as they are and with a
 * quoted last column (every line to the general tokenizer). */
static void test_numbers_match_parse_double(void **state)
{
    size_t cap = 1 << 16;
    char *a = malloc(cap), *b = malloc(cap);
    assert_non_null(a);
    assert_non_null(b);
    rs = 0x5eed5eed;
    int ok = 0, bad = 0;
    for (int it = 0; it < 4000; it++) {
        size_t la = 0, lb = 0;
        la += (size_t)snprintf(a + la, cap - la, "job,gpus,cap_w,power_w,throughput\n");
        lb += (size_t)snprintf(b + lb, cap - lb, "job,gpus,cap_w,power_w,throughput\n");
        unsigned jobs = 1 + rnd(5);
        for (unsigned jj = 0; jj < jobs; jj++) {
            unsigned rows = 2 + rnd(3), g = 1 + rnd(64), pad = rnd(4) ? 0 : 30 + rnd(40);
            for (unsigned k = 0; k < rows; k++) {
                char gp[40], cp[40], pw[40], tp[40], row[256];
                if (rnd(5))
                    snprintf(gp, sizeof gp, "%u", g + (rnd(12) == 0));
                else
                    rand_number(gp, sizeof gp);
                if (rnd(3))
                    snprintf(cp, sizeof cp, "%u", 700 - 60 * k);
                else
                    rand_number(cp, sizeof cp);
                rand_number(pw, sizeof pw);
                rand_number(tp, sizeof tp);
                int n = snprintf(row, sizeof row, "j%u%.*s,%s,%s,%s,%s", jj, (int)pad,
                                 "-padpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpad"
                                 "padpadpadpad", gp, cp, pw, tp);
                const char *eol = rnd(4) ? "\n" : "\r\n";
                la += (size_t)snprintf(a + la, cap - la, "%.*s%s", n, row, eol);
                lb += (size_t)snprintf(b + lb, cap - lb, "%.*s,\"q\"%s", n, row, eol);
            }
        }
        read_alike(a, la, b, lb, "n.csv", &ok, &bad);
    }
    print_message("%d read, %d refused alike\n", ok, bad);
    assert_true(ok > 100 && bad > 500);
    free(a);
    free(b);
}

/* Short decimals with 1 to 7 digits after the point (those a windowed row
 * converts without a division where the machine fuses multiply-adds) are
 * what strtod reads, bit for bit: 100,000 random mantissas below 10^7 for
 * each count of decimals, and the mantissas next to powers of ten and of
 * two, in the power and throughput columns. */
static void test_short_decimals_match_strtod(void **state)
{
    enum { PER_K = 100000, ROWS = 7 * PER_K + 7 * 64 };
    size_t cap = (size_t)ROWS * 48 + 64, len = 0;
    char *t = malloc(cap);
    double *want = malloc(2 * ROWS * sizeof *want);
    assert_non_null(t);
    assert_non_null(want);
    rs = 0xdec1a1;
    len += (size_t)snprintf(t + len, cap - len, "job,cap_w,power_w,throughput\n");
    size_t nrow = 0;
    for (unsigned k = 1; k <= 7; k++)
        for (unsigned i = 0; i < PER_K + 64; i++) {
            unsigned long m[2];
            for (int c = 0; c < 2; c++) {
                if (i < PER_K) {
                    m[c] = ((unsigned long)rnd(10000) * 1000 + rnd(1000)) % 10000000;
                } else {            /* 10^j and 2^j, one either side */
                    unsigned j = (i - PER_K) / 3, d = (i - PER_K) % 3;
                    unsigned long b = j < 7 ? (unsigned long)pow(10, j) : 1ul << (j - 7);
                    m[c] = b + d - 1 + (unsigned long)c;
                    if (m[c] >= 10000000)
                        m[c] = 9999999;
                }
                if (m[c] == 0)
                    m[c] = 1;       /* power must be positive */
            }
            char num[2][32];
            for (int c = 0; c < 2; c++) {
                char dig[16];
                int n = snprintf(dig, sizeof dig, "%0*lu", (int)k + 1, m[c]);
                snprintf(num[c], sizeof num[c], "%.*s.%s", n - (int)k, dig, dig + n - k);
                want[2 * nrow + c] = strtod(num[c], NULL);
            }
            len += (size_t)snprintf(t + len, cap - len, "j%zu,%u,%s,%s\n", nrow / 2,
                                    nrow % 2 ? 600 : 700, num[0], num[1]);
            nrow++;
        }
    assert_true(nrow % 2 == 0 && len < cap);
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    if (pflex_sweep_read_mem(t, len, "d.csv", NULL, &sw, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(sw->njobs, nrow / 2);
    for (size_t j = 0; j < sw->njobs; j++)
        for (size_t q = 0; q < 2; q++) {   /* points by cap: the 600 W row first */
            size_t row = 2 * j + (q == 0);
            const struct pflex_sweep_point *pt = &sw->jobs[j].points[q];
            if (memcmp(&pt->power_w, &want[2 * row], sizeof(double)) != 0
                || memcmp(&pt->throughput, &want[2 * row + 1], sizeof(double)) != 0)
                fail_msg("row %zu: %.17g %.17g, strtod %.17g %.17g", row, pt->power_w,
                         pt->throughput, want[2 * row], want[2 * row + 1]);
        }
    pflex_sweep_destroy(sw);
    free(want);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_place_matches_general),
        cmocka_unit_test(test_one_cap_error_in_place),
        cmocka_unit_test(test_stream_grouped),
        cmocka_unit_test(test_in_place_shapes),
        cmocka_unit_test(test_stream_scattered_restarts),
        cmocka_unit_test(test_stream_errors_after_restart),
        cmocka_unit_test(test_stream_visitor_error_stops),
        cmocka_unit_test(test_stream_crlf_bom_quotes),
        cmocka_unit_test(test_stream_bigger_than_buffer),
        cmocka_unit_test(test_split_matches_tokenizer),
        cmocka_unit_test(test_numbers_match_parse_double),
        cmocka_unit_test(test_short_decimals_match_strtod),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
