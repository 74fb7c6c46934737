/* test_report_sim.c — pflex simulate's HTML report (report_sim.c and its
 * parts): what it says, the per-job table, and with the real gnuplot, when
 * there is one, charts with job names drawn literally on a clock-time axis. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/report/report.h"
#include "pflex/site/simulate.h"

#define N 120
#define NJ 2

static double limit_w[N], power[PFLEX_SIM_NPOL][N], obj[PFLEX_SIM_NPOL][N];
static double cap[PFLEX_SIM_NPOL][NJ * N], frac[PFLEX_SIM_NPOL][NJ * N];
static char names[NJ][64] = {"infer_llama_8b_48g-x", "pt_mpt_7b_fast-y"};
static int gpus[NJ] = {48, 32};
static double floors[NJ] = {0.75, 0.5};

/* Two hours of minutes from 2025-05-03 21:40 UTC, a limit of 70 kW from
 * minute 30 to 89 (baseline 100 kW); equal, tpw (worse than equal: its
 * gap share -3, under the chart's axis), online-warm (0.8 of the gap),
 * the oracle. */
static void make_result(struct pflex_sim_result *r)
{
    static const int pols[] = {PFLEX_SIM_EQUAL, PFLEX_SIM_TPW, PFLEX_SIM_ONLINE_WARM, PFLEX_SIM_ORACLE};
    static const double level[] = {0.8, 0.5, 0.88, 0.9};
    memset(r, 0, sizeof *r);
    r->nperiods = N;
    r->period_s = 60;
    r->start_s = 1746308400;
    r->baseline_w = r->max_w = 100000;
    r->ngpus = 80;
    r->limit_w = limit_w;
    r->njobs_kept = NJ;
    r->job_name = names;
    r->job_gpus = gpus;
    r->job_floor = floors;
    for (size_t k = 0; k < N; k++)
        limit_w[k] = k >= 30 && k < 90 ? 70000 : INFINITY;
    for (size_t i = 0; i < sizeof pols / sizeof *pols; i++) {
        int p = pols[i];
        r->ran |= 1u << p;
        r->power_w[p] = power[p];
        r->objective[p] = obj[p];
        r->job_cap[p] = cap[p];
        r->job_fraction[p] = frac[p];
        for (size_t k = 0; k < N; k++) {
            int lim = isfinite(limit_w[k]);
            power[p][k] = lim ? 69000 : 95000;
            obj[p][k] = lim ? level[i] : 1;
            for (size_t j = 0; j < NJ; j++) {
                cap[p][j * N + k] = lim ? 250 + 10 * j : 400;
                frac[p][j * N + k] = lim ? level[i] : 1;
            }
        }
        r->pol[p].ran = 1;
        r->pol[p].gap_recovered = (level[i] - 0.8) / 0.1;
        r->pol[p].settled_mean = r->pol[p].gap_recovered;
        r->pol[p].floor_periods = NJ * 60;
    }
    r->pol[PFLEX_SIM_TPW].floor_breaches = 7;
    r->pol[PFLEX_SIM_TPW].floor_worst = 0.25;
}

static json_t *make_field(void)
{
    json_error_t e;
    json_t *f = json_loads(
        "{\"event_power_share\": 0.694,"
        " \"policy_event_power_share\": {\"equal\": 0.696, \"tpw\": 0.692, \"online-warm\": 0.695,"
        "   \"oracle\": 0.697},"
        " \"jobs\": [{\"job\": \"infer_llama_8b_48g-x\", \"gpus\": 48, \"floor\": 0.75, \"measured\": 0.992,"
        "   \"policies\": {\"equal\": 0.888, \"tpw\": 0.5, \"online-warm\": 0.848, \"oracle\": 0.85}},"
        "  {\"job\": \"pt_mpt_7b_fast-y\", \"gpus\": 32, \"floor\": 0.5, \"measured\": null,"
        "   \"policies\": {\"equal\": 0.811, \"tpw\": 0.653, \"online-warm\": 0.866, \"oracle\": 0.87}}]}",
        0, &e);
    assert_non_null(f);
    return f;
}

static char *render(const struct pflex_sim_result *r, const json_t *field, const char *gnuplot,
                    int *charts)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pflex_error_t err;
    assert_int_equal(pflex_sim_report_html(r, "pflex simulate: test", "notes", field, NULL, NULL, 0,
                                           gnuplot, f, charts, &err), 0);
    fclose(f);
    return buf;
}

/* "What this says" is read off the numbers: the limit's depth and span, the
 * best policy that does not know the curves, the one worse than equal,
 * floors; and the job that gave up most under the best policy. */
static void test_brief(void **state)
{
    (void)state;
    struct pflex_sim_result r;
    make_result(&r);
    json_t *field = make_field();
    int charts = -1;
    char *html = render(&r, field, NULL, &charts);
    assert_int_equal(charts, 0);
    char *b = strstr(html, "<h2 id=\"brief\">What this says</h2>");
    assert_non_null(b);
    assert_true(b < strstr(html, "<table"));        /* on top */
    assert_non_null(strstr(b, "in force for 60 of 120 periods (1 h 00 min)"));
    assert_non_null(strstr(b, "allowed 70.0 kW, 70 % of the site's baseline (100.0 kW)"));
    assert_non_null(strstr(b, "<b>online-warm</b> recovered most"));
    assert_non_null(strstr(b, "80.0 % of the gap"));
    assert_non_null(strstr(b, "tpw (-300 %) did worse than equal cuts"));
    assert_non_null(strstr(b, "tpw left a job under its floor in 7 of 120 job-periods"));
    assert_non_null(strstr(b, "No policy drew more than the limit"));
    assert_non_null(strstr(b, "<code>infer_llama_8b_48g-x</code>, at 0.848"));
    free(html);
    /* over the limit: one sentence, however many policies */
    r.pol[PFLEX_SIM_EQUAL].periods_above = 5;
    r.pol[PFLEX_SIM_EQUAL].max_over_w = 12;
    r.pol[PFLEX_SIM_TPW].periods_above = 9;
    r.pol[PFLEX_SIM_TPW].max_over_w = 30;
    html = render(&r, field, NULL, NULL);
    assert_non_null(strstr(html, "equal and tpw drew more than the limit after its ramp, in up to 9 "
                                 "periods (at most 30 W over)."));
    free(html);
    /* no limit at all: said so, no best policy invented */
    for (size_t k = 0; k < N; k++)
        limit_w[k] = INFINITY;
    html = render(&r, NULL, NULL, NULL);
    assert_non_null(strstr(html, "No limit was in force in the 120 periods"));
    assert_null(strstr(html, "recovered most"));
    free(html);
    json_decref(field);
}

/* The per-job table the command prints beside a field day; none without. */
static void test_jobs_table(void **state)
{
    (void)state;
    struct pflex_sim_result r;
    make_result(&r);
    json_t *field = make_field();
    char *html = render(&r, field, NULL, NULL);
    char *t = strstr(html, "<h2 id=\"jobs\">");
    assert_non_null(t);
    assert_non_null(strstr(t, "<th>job</th><th>GPUs</th><th>floor</th><th>measured</th><th>equal</th>"
                              "<th>tpw</th><th>online-warm</th><th>oracle</th>"));
    assert_non_null(strstr(t, "<tr><td>infer_llama_8b_48g-x</td><td>48</td><td>0.75</td><td>0.992</td>"
                              "<td>0.888</td><td class=\"under\">0.500</td><td>0.848</td><td>0.850</td></tr>"));
    assert_non_null(strstr(t, "<tr><td>pt_mpt_7b_fast-y</td><td>32</td><td>0.50</td><td>–</td>"));
    assert_non_null(strstr(t, "<tr><td>site power / baseline</td><td></td><td></td><td>0.694</td>"
                              "<td>0.696</td><td>0.692</td><td>0.695</td><td>0.697</td></tr>"));
    free(html);
    html = render(&r, NULL, NULL, NULL);
    assert_null(strstr(html, "id=\"jobs\""));
    free(html);
    json_decref(field);
}

/* With the real gnuplot: every chart draws, job names are drawn as
 * written (gnuplot's enhanced text would subscript after '_'), the axis is
 * clock time with the date in the title, and the gap chart names what it
 * clipped. */
static void test_charts_real_gnuplot(void **state)
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
    struct pflex_sim_result r;
    make_result(&r);
    int charts = 0;
    char *html = render(&r, NULL, "gnuplot", &charts);
    assert_int_equal(charts, 4);
    assert_null(strstr(html, "chart not drawn"));
    assert_non_null(strstr(html, ">infer_llama_8b_48g-x</text>"));
    assert_non_null(strstr(html, ">pt_mpt_7b_fast-y</text>"));
    assert_non_null(strstr(html, "time of day (UTC)"));
    assert_non_null(strstr(html, "2025-05-03 21:40 to 23:40 UTC"));
    assert_non_null(strstr(html, ">22:00<"));
    assert_non_null(strstr(html, "drawn at its edge: tpw 60 of 60 points below"));
    assert_non_null(strstr(html, "id='c2-"));       /* each chart's ids its own */
    free(html);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_brief),
        cmocka_unit_test(test_jobs_table),
        cmocka_unit_test(test_charts_real_gnuplot),
    };
    return cmocka_run_group_tests_name("report_sim", tests, NULL, NULL);
}
