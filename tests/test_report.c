/* test_report.c — the study's statistics, summary.json and HTML report on a
 * small hand-made study, with a fake gnuplot standing in for the real one. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "pflex/report/report.h"

static void test_stats(void **state)
{
    const double v[] = {4, 1, 3, 2};
    struct pflex_report_stats s;
    pflex_report_stats(v, 4, &s);
    assert_int_equal(s.n, 4);
    assert_true(fabs(s.mean - 2.5) < 1e-12);
    assert_true(fabs(s.median - 2.5) < 1e-12);
    assert_true(fabs(s.q1 - 1.75) < 1e-12);    /* linear interpolation between order stats */
    assert_true(fabs(s.q3 - 3.25) < 1e-12);
    assert_true(fabs(s.sd - sqrt(5.0 / 3.0)) < 1e-12);
    assert_true(s.min == 1 && s.max == 4);
    pflex_report_stats(v, 1, &s);
    assert_true(s.mean == 4 && s.median == 4 && isnan(s.sd));
    pflex_report_stats(v, 0, &s);
    assert_int_equal(s.n, 0);
    assert_true(isnan(s.mean) && isnan(s.median));
}

/* Four runs: the first three H200 main runs of the fleet (two dense, one
 * MoE) and the first H100 run, made the twin of the first. */
static void make_report(struct pflex_report *r, struct pflex_report_run *runs)
{
    static const double caps[] = {700, 450, 200};
    memset(r, 0, sizeof *r);
    memset(runs, 0, 4 * sizeof *runs);
    const size_t fleet_index[4] = {0, 1, 14, PFLEX_FLEET_MAIN_GROUPS + PFLEX_FLEET_VALIDATION_GROUPS};
    const double pfi[4] = {0.2, 0.4, 0.6, 0.3};
    for (int i = 0; i < 4; i++) {
        struct pflex_report_run *x = &runs[i];
        assert_int_equal(pflex_fleet_get(fleet_index[i], &x->fleet), 0);
        x->index = fleet_index[i];
        x->pfi_valid = 1;
        x->pfi = pfi[i];
        x->range_used = 0.3;
        x->p0_w = 650;
        x->t0 = 1000 * (i + 1);
        x->cap0_w = 700;
        x->step_s = 1 + i;
        x->npoints = 3;
        for (int k = 0; k < 3; k++) {
            x->cap_w[k] = caps[2 - k];
            x->power_w[k] = caps[2 - k] - 40;
            x->throughput[k] = x->t0 * (0.5 + 0.25 * k);
        }
        for (int k = 0; k < PFLEX_TM_COUNT; k++)
            x->tm[k] = 0.1 * (i + 1) + (k == PFLEX_TM_DRAM_ACTIVE ? pfi[i] : 0);
        x->partner = -1;
    }
    runs[3].partner = 0;
    r->seed = 1;
    r->range = 0.3;
    r->repeats = 3;
    r->ncaps = 3;
    r->caps_w = caps;
    r->nruns = 4;
    r->runs = runs;
    snprintf(r->calib.note, sizeof r->calib.note, "no data here");
    snprintf(r->alloc.note, sizeof r->alloc.note, "not planned");
}

static const json_t *at(const json_t *o, const char *a, const char *b, const char *c)
{
    o = json_object_get(o, a);
    if (b)
        o = json_object_get(o, b);
    if (c)
        o = json_object_get(o, c);
    if (!o)
        fail_msg("summary lacks %s.%s.%s", a, b ? b : "", c ? c : "");
    return o;
}

static void test_summary(void **state)
{
    struct pflex_report r;
    struct pflex_report_run runs[4];
    make_report(&r, runs);
    json_t *s = pflex_report_summary(&r);
    assert_non_null(s);
    assert_int_equal(json_integer_value(at(s, "counts", "runs", NULL)), 4);
    assert_int_equal(json_integer_value(at(s, "counts", "main", NULL)), 3);
    assert_int_equal(json_integer_value(at(s, "counts", "h100_matched", NULL)), 1);
    assert_int_equal(json_integer_value(at(s, "pfi", "all", "n")), 3);
    assert_true(fabs(json_real_value(at(s, "pfi", "all", "median")) - 0.4) < 1e-12);
    const json_t *moe = at(s, "pfi", "by_arch", "moe");
    assert_int_equal(json_integer_value(json_object_get(moe, "n")), 1);
    assert_true(json_is_null(json_object_get(moe, "sd")));      /* one run: no sd */
    assert_int_equal(json_integer_value(at(s, "h100_vs_h200", "pairs", NULL)), 1);
    assert_true(fabs(json_real_value(json_object_get(at(s, "h100_vs_h200", "difference", NULL),
                                                     "mean")) - 0.1) < 1e-12);
    /* dram_active was built to follow PFI exactly. */
    assert_true(fabs(json_real_value(at(s, "correlation", "dram_active", "pearson")) - 1) < 1e-9);
    assert_string_equal(json_string_value(at(s, "calibration", "status", NULL)), "skipped");
    assert_string_equal(json_string_value(at(s, "allocation", "status", NULL)), "skipped");
    /* runtime_s comes last. */
    const char *key = NULL, *last = NULL;
    json_t *v;
    json_object_foreach(s, key, v)
        last = key;
    assert_string_equal(last, "runtime_s");
    json_decref(s);
}

static char *render(const struct pflex_report *r, const char *gnuplot, int *charts)
{
    json_t *s = pflex_report_summary(r);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pflex_error_t err;
    assert_int_equal(pflex_report_write_html(r, s, gnuplot, f, charts, &err), 0);
    fclose(f);
    json_decref(s);
    return buf;
}

static void test_html_without_gnuplot(void **state)
{
    struct pflex_report r;
    struct pflex_report_run runs[4];
    make_report(&r, runs);
    int charts = -1;
    char *html = render(&r, "/nonexistent/gnuplot", &charts);
    assert_int_equal(charts, 0);
    assert_non_null(strstr(html, "Chart not drawn"));
    assert_non_null(strstr(html, "gnuplot-nox"));
    assert_non_null(strstr(html, "Calibration section skipped: no data here"));
    assert_non_null(strstr(html, "</html>"));
    assert_null(strstr(html, "<svg"));
    free(html);
    pflex_error_t err;
    char *svg = NULL;
    assert_int_equal(pflex_report_gnuplot_svg("/nonexistent/gnuplot", "x", 1, &svg, &err), -1);
    assert_null(svg);
    assert_non_null(strstr(err.text, "cannot run"));
}

/* A stand-in gnuplot that prints one SVG with an id and a reference to it:
 * each chart's ids must come out prefixed so that charts do not collide. */
static void test_html_ids_prefixed(void **state)
{
    char dir[] = "/tmp/pflex-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char fake[256];
    snprintf(fake, sizeof fake, "%s/gnuplot", dir);
    FILE *f = fopen(fake, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\ncat > /dev/null\necho '<?xml version=\"1.0\"?>'\n"
          "echo \"<svg><path id='gpPt0'/><use xlink:href='#gpPt0' fill='url(#g)'/></svg>\"\n", f);
    fclose(f);
    chmod(fake, 0755);
    struct pflex_report r;
    struct pflex_report_run runs[4];
    make_report(&r, runs);
    int charts = 0;
    char *html = render(&r, fake, &charts);
    assert_true(charts >= 5);
    assert_non_null(strstr(html, "<svg><path id='c1-gpPt0'/><use xlink:href='#c1-gpPt0' fill='url(#c1-g)'/>"));
    assert_non_null(strstr(html, "id='c2-gpPt0'"));
    assert_null(strstr(html, "<?xml"));
    assert_null(strstr(html, "Chart not drawn"));
    free(html);
    unlink(fake);
    rmdir(dir);
}

/* With the real gnuplot, when there is one: every chart draws. */
static void test_html_real_gnuplot(void **state)
{
    char *svg = NULL;
    pflex_error_t err;
    const char script[] = "set terminal svg\nplot x\n";
    if (pflex_report_gnuplot_svg("gnuplot", script, sizeof script - 1, &svg, &err) < 0) {
        skip();
        return;
    }
    assert_memory_equal(svg, "<svg", 4);
    free(svg);
    struct pflex_report r;
    struct pflex_report_run runs[4];
    make_report(&r, runs);
    int charts = 0;
    char *html = render(&r, "gnuplot", &charts);
    if (strstr(html, "Chart not drawn"))
        fail_msg("a chart failed: %.300s", strstr(html, "Chart not drawn"));
    assert_true(charts >= 6);
    free(html);
}

/* gnuplot strings: a quote doubled, control characters blanked, cut whole. */
static void test_gnuplot_quote(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(pflex_report_gnuplot_quote("ft_llama_8b", b, sizeof b), "'ft_llama_8b'");
    assert_string_equal(pflex_report_gnuplot_quote("it's\n", b, sizeof b), "'it''s '");
    assert_string_equal(pflex_report_gnuplot_quote("abcdef", b, 6), "'abc'");
    assert_string_equal(pflex_report_gnuplot_quote("ab'c", b, 6), "'ab'");   /* never half a '' */
    assert_string_equal(pflex_report_gnuplot_quote(NULL, b, sizeof b), "''");
}

/* The report with a summary changed by the caller, e.g. keys the study
 * adds (prediction, grid_day). */
static char *render_summary(const struct pflex_report *r, json_t *s, const char *gnuplot)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pflex_error_t err;
    int charts;
    assert_int_equal(pflex_report_write_html(r, s, gnuplot, f, &charts, &err), 0);
    fclose(f);
    return buf;
}

/* The H100 transfer sentence: each number its own (one buffer served two
 * arguments of one call, and printed "(the study: R² 6)"). */
static void test_h100_transfer_text(void **state)
{
    (void)state;
    struct pflex_report r;
    struct pflex_report_run runs[4];
    make_report(&r, runs);
    json_t *s = pflex_report_summary(&r);
    json_object_set_new(s, "prediction", json_pack("{s:{s:i, s:f, s:f, s:f}}", "h100_transfer",
                                                   "h100_jobs", 6, "r2", 0.742, "rho", 0.829,
                                                   "study_r2", 0.56));
    char *html = render_summary(&r, s, NULL);
    assert_non_null(strstr(html, "scored on the 6 H100 groups: R² 0.742, ρ 0.829 (the study: R² 0.56)."));
    free(html);
    json_decref(s);
}

/* "What this says" on top, read off this study's numbers. */
static void test_brief(void **state)
{
    (void)state;
    struct pflex_report r;
    struct pflex_report_run runs[4];
    make_report(&r, runs);
    json_t *s = pflex_report_summary(&r);
    json_object_set_new(s, "grid_day", json_pack("{s:{s:{s:f}}}", "policies", "online-warm",
                                                 "gap_recovered", 0.961));
    char *html = render_summary(&r, s, NULL);
    char *b = strstr(html, "<h2 id=\"brief\">What this says</h2>");
    assert_non_null(b);
    assert_true(b < strstr(html, "<h2>The fleet</h2>"));
    /* three main runs, PFI 0.2, 0.4, 0.6: median 0.40; 10 % of power costs 25 % */
    assert_non_null(strstr(b, "Across the 3 H200 main runs the median ratio PFI is 0.40 (0.20 to 0.60)"));
    assert_non_null(strstr(b, "gives up about 25.0 % of its throughput for a 10 % cut"));
    assert_non_null(strstr(b, "On H100, 1 of the 1 matched jobs are more power-flexible"));
    assert_non_null(strstr(b, "(online-warm) recovered 96 %"));
    free(html);
    json_decref(s);
}

/* Calibration job names are drawn as written: ft_llama_8b_dolly, not
 * "ft llama 8b dolly" nor gnuplot's subscripts. */
static void test_calibration_names_literal(void **state)
{
    (void)state;
    char *svg = NULL;
    pflex_error_t err;
    const char script[] = "set terminal svg\nplot x\n";
    if (pflex_report_gnuplot_svg("gnuplot", script, sizeof script - 1, &svg, &err) < 0) {
        skip();
        return;
    }
    free(svg);
    struct pflex_report r;
    struct pflex_report_run runs[4];
    make_report(&r, runs);
    static struct pflex_report_calib_job cj[1];
    memset(cj, 0, sizeof cj);
    snprintf(cj[0].job, sizeof cj[0].job, "ft_llama_8b_dolly");
    snprintf(cj[0].sim_job, sizeof cj[0].sim_job, "emerald-ft-llama-8b-dolly");
    cj[0].npoints = 3;
    for (int k = 0; k < 3; k++) {
        cj[0].cap_w[k] = 200 + 100 * k;
        cj[0].measured[k] = 0.6 + 0.2 * k;
        cj[0].simulated[k] = 0.62 + 0.19 * k;
    }
    cj[0].rmse = 0.014;
    r.calib.done = 1;
    r.calib.njobs = 1;
    r.calib.jobs = cj;
    json_t *s = pflex_report_summary(&r);
    char *html = render_summary(&r, s, "gnuplot");
    assert_non_null(strstr(html, ">ft_llama_8b_dolly (RMSE 0.014)</text>"));
    free(html);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_html_without_gnuplot),
        cmocka_unit_test(test_html_ids_prefixed),
        cmocka_unit_test(test_html_real_gnuplot),
        cmocka_unit_test(test_gnuplot_quote),
        cmocka_unit_test(test_h100_transfer_text),
        cmocka_unit_test(test_brief),
        cmocka_unit_test(test_calibration_names_literal),
    };
    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
