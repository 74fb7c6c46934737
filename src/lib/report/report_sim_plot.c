/* report_sim_plot.c — the charts of `pflex simulate`'s report: the limit
 * against site power, the gap recovered, per-job caps and throughput, each
 * a gnuplot SVG on a clock-time axis.
 *
 * Every policy keeps one colour, dash and point type in every chart, so
 * that lines are told apart where colours are not (print, colour-blind
 * readers); legends go below the plot, off the data; an axis either holds
 * every line or the caption says what was clipped.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "pflex/report/report.h"
#include "lib/report/report_sim_parts.h"

struct style {
    const char *color, *dash;
    int pt;
};

static const struct style pol_style[PFLEX_SIM_NPOL] = {
    [PFLEX_SIM_EQUAL] = {"#7f7f7f", "1", 5},
    [PFLEX_SIM_EQ2_MEASURED] = {"#d62728", "(12,6)", 7},
    [PFLEX_SIM_EQ2_PREDICTED] = {"#9467bd", "(3,4)", 13},
    [PFLEX_SIM_TPW] = {"#ff7f0e", "(14,5,3,5)", 9},
    [PFLEX_SIM_ONLINE_COLD] = {"#17becf", "(6,4)", 11},
    [PFLEX_SIM_ONLINE_WARM] = {"#1f77b4", "1", 15},
    [PFLEX_SIM_ORACLE] = {"#2ca02c", "(18,4,3,4,3,4)", 3},
};

/* Jobs: ten colours, and five dashes and eight point types cycling beside
 * them, so that no two of the first forty jobs look alike. */
static const char *const job_color[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                        "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
static const char *const job_dash[] = {"1", "(12,6)", "(3,4)", "(14,5,3,5)", "(6,4)"};
static const int job_pt[] = {7, 5, 9, 11, 13, 15, 3, 1};

#define NELEM(a) (sizeof(a) / sizeof *(a))

/* The gap chart's y range: a share of the gap far below 0 (a policy worse
 * than equal cuts) would squash the lines near 1 that tell policies apart. */
#define GAP_LO (-1.5)
#define GAP_HI 1.2

/* At most ~1500 points per line, each standing for `stride` periods. */
static size_t stride_of(size_t n)
{
    return n > 1500 ? (n + 1499) / 1500 : 1;
}

/* A run whose start is a date (a day, --start) reads as clock time; one
 * from t = 0 as time since its start. */
static int dated(const struct pflex_sim_result *r)
{
    return r->start_s >= 365 * 86400.0;
}

static double x_of(const struct pflex_sim_result *r, size_t k)
{
    return (dated(r) ? r->start_s : 0) + (double)k * r->period_s;
}

/* " — 2025-05-03 21:40 to 2025-05-04 04:20 UTC" for a dated run, else "". */
static void when(const struct pflex_sim_result *r, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!dated(r))
        return;
    time_t a = (time_t)r->start_s, b = (time_t)(r->start_s + (double)r->nperiods * r->period_s);
    struct tm ta, tb;
    char sa[32], sb[32];
    gmtime_r(&a, &ta);
    gmtime_r(&b, &tb);
    strftime(sa, sizeof sa, "%Y-%m-%d %H:%M", &ta);
    strftime(sb, sizeof sb, ta.tm_yday == tb.tm_yday && ta.tm_year == tb.tm_year ? "%H:%M"
                                                                                 : "%Y-%m-%d %H:%M", &tb);
    snprintf(buf, len, " — %s to %s UTC", sa, sb);
}

/* The head of every time-series script. */
static FILE *script_open(const struct pflex_sim_result *r, char **buf, size_t *len, int h,
                         const char *ylabel)
{
    FILE *s = open_memstream(buf, len);
    if (!s)
        return NULL;
    fprintf(s, "set terminal svg size 1000,%d dynamic noenhanced font 'Helvetica,13' "
               "background '#ffffff'\nset output\nset encoding utf8\n"
               "set grid lc rgb '#e0e0e0'\nset key outside below center horizontal height 0.8\n"
               "set xtics time\nset format x '%s' timedate\nset xlabel '%s'\n"
               "set autoscale xfix\nset offsets 0, 0, graph 0.04, graph 0.04\nset ylabel '%s'\n",
            h, dated(r) ? "%H:%M" : "%tH:%tM",
            dated(r) ? "time of day (UTC)" : "time since the start (h:mm)", ylabel);
    return s;
}

/* Draw one chart under its heading, or leave a note where it goes; the
 * caption (may be "") under it. */
static void chart(FILE *out, const char *gnuplot, FILE *s, char **buf, size_t *len,
                  const char *title, const char *caption, int *nch)
{
    int ok = s && fclose(s) == 0;
    char *svg = NULL;
    pflex_error_t e;
    fputs("<h2>", out);
    pflex_report_html_text(out, title);
    fputs("</h2>\n", out);
    if (ok && gnuplot && pflex_report_gnuplot_svg(gnuplot, *buf, *len, &svg, &e) == 0) {
        (*nch)++;
        fputs("<figure>", out);
        pflex_report_paste_svg(out, svg, *nch);
        fputs("</figure>\n", out);
    } else
        fprintf(out, "<p><i>chart not drawn (%s)</i></p>\n",
                !ok ? "out of memory" : "gnuplot not available");
    if (caption && *caption) {
        fputs("<p class=\"caption\">", out);
        pflex_report_html_text(out, caption);
        fputs("</p>\n", out);
    }
    free(svg);
    free(*buf);
    *buf = NULL;
}

static void pol_line(FILE *s, int col, int p, int nth)
{
    const struct style *st = &pol_style[p];
    /* points staggered per policy so that the markers of lines that lie
     * on each other stay visible */
    fprintf(s, "%s$d using 1:%d with linespoints lw 2 dt %s lc rgb '%s' pt %d ps 0.9 pn %d "
               "title '%s'",
            nth ? ", \\\n  " : "", col, st->dash, st->color, st->pt, 9 + p,
            pflex_sim_policy_name((enum pflex_sim_policy)p));
}

static int ran(const struct pflex_sim_result *r, int p)
{
    return (r->ran & (1u << p)) != 0;
}

/* 1. The limit against each policy's site power (the largest per point,
 * so that an overshoot shows). */
static void chart_power(const struct pflex_sim_result *r, const double *field_t,
                        const double *field_w, size_t nfield, const char *gnuplot, FILE *out,
                        int *nch)
{
    size_t N = r->nperiods, st = stride_of(N);
    char *buf = NULL, w[96], title[200];
    size_t len = 0;
    FILE *s = script_open(r, &buf, &len, 460, "site power (kW)");
    if (s) {
        fputs("$d << EOD\n", s);
        for (size_t k = 0; k < N; k += st) {
            double lim = INFINITY;
            fprintf(s, "%.3f", x_of(r, k));
            for (size_t q = k; q < k + st && q < N; q++)
                lim = fmin(lim, r->limit_w[q]);
            if (isfinite(lim))
                fprintf(s, " %.4f", lim / 1000);
            else
                fputs(" NaN", s);
            for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
                if (!ran(r, p))
                    continue;
                double mx = 0;
                for (size_t q = k; q < k + st && q < N; q++)
                    mx = fmax(mx, r->power_w[p][q]);
                fprintf(s, " %.4f", mx / 1000);
            }
            fputc('\n', s);
        }
        fputs("EOD\n", s);
        if (nfield) {
            fputs("$f << EOD\n", s);
            for (size_t i = 0; i < nfield; i++)
                fprintf(s, "%.3f %.4f\n", field_t[i] - (dated(r) ? 0 : r->start_s), field_w[i] / 1000);
            fputs("EOD\n", s);
        }
        fputs("plot $d using 1:2 with lines lw 3 lc rgb 'black' title 'limit'", s);
        int col = 3, nth = 1;
        for (int p = 0; p < PFLEX_SIM_NPOL; p++)
            if (ran(r, p))
                pol_line(s, col++, p, nth++);
        if (nfield)
            fputs(", \\\n  $f using 1:2 with lines lw 2 dt (4,3) lc rgb '#b00000' "
                  "title 'field demonstration (measured)'", s);
        fputc('\n', s);
    }
    when(r, w, sizeof w);
    snprintf(title, sizeof title, "Limit against site power drawn, per policy%s", w);
    char cap[160] = "";
    if (st > 1)
        snprintf(cap, sizeof cap, "Each point is the largest of %zu periods (%.0f s), so that an "
                 "overshoot shows.", st, (double)st * r->period_s);
    chart(out, gnuplot, s, &buf, &len, title, cap, nch);
}

/* 2. The gap recovered period by period, clipped to [GAP_LO, GAP_HI]: the
 * caption names each policy clipped and how often. */
static void chart_gap(const struct pflex_sim_result *r, const char *gnuplot, FILE *out, int *nch)
{
    size_t N = r->nperiods, st = stride_of(N);
    const double *oe = r->objective[PFLEX_SIM_EQUAL], *oo = r->objective[PFLEX_SIM_ORACLE];
    size_t below[PFLEX_SIM_NPOL] = {0}, above[PFLEX_SIM_NPOL] = {0}, points = 0;
    char *buf = NULL, w[96], title[200];
    size_t len = 0;
    FILE *s = script_open(r, &buf, &len, 420, "share of the equal-to-oracle gap");
    if (s) {
        fprintf(s, "set yrange [%g:%g]\nset offsets 0, 0, 0, 0\n$d << EOD\n", GAP_LO, GAP_HI);
        for (size_t k = 0; k < N; k += st) {
            fprintf(s, "%.3f", x_of(r, k));
            int any = 0;
            for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
                if (!ran(r, p))
                    continue;
                double a = 0, b = 0;
                for (size_t q = k; q < k + st && q < N; q++)
                    if (isfinite(r->limit_w[q])) {
                        a += r->objective[p][q] - oe[q];
                        b += oo[q] - oe[q];
                    }
                if (b > 1e-6 * fabs(oo[k])) {
                    double v = a / b;
                    below[p] += v < GAP_LO;
                    above[p] += v > GAP_HI;
                    fprintf(s, " %.5f", fmin(fmax(v, GAP_LO), GAP_HI));
                    any = 1;
                } else
                    fputs(" NaN", s);
            }
            points += any;
            fputc('\n', s);
        }
        fputs("EOD\nplot ", s);
        int col = 2, nth = 0;
        for (int p = 0; p < PFLEX_SIM_NPOL; p++)
            if (ran(r, p))
                pol_line(s, col++, p, nth++);
        fputc('\n', s);
    }
    char cap[1024];
    int n = snprintf(cap, sizeof cap, "1: the oracle's objective; 0: equal cuts'; below 0, worse "
                     "than equal cuts.  The axis runs from %.0f %% to %.0f %%", 100 * GAP_LO,
                     100 * GAP_HI);
    int clipped = 0;
    for (int p = 0; p < PFLEX_SIM_NPOL && n > 0 && (size_t)n < sizeof cap; p++) {
        if (!ran(r, p) || !(below[p] + above[p]))
            continue;
        n += snprintf(cap + n, sizeof cap - (size_t)n, "%s %s %zu of %zu points %s",
                      clipped ? ";" : "; drawn at its edge:", pflex_sim_policy_name((enum pflex_sim_policy)p),
                      below[p] + above[p], points, below[p] ? "below" : "above");
        clipped = 1;
    }
    if (n > 0 && (size_t)n < sizeof cap)
        snprintf(cap + n, sizeof cap - (size_t)n, "%s.", clipped ? "" : "; no point lies outside it");
    when(r, w, sizeof w);
    snprintf(title, sizeof title, "Gap recovered, period by period (while a limit is in force)%s", w);
    chart(out, gnuplot, s, &buf, &len, title, cap, nch);
}

/* 3. Per job under one policy: the cap in force, or T/T0. */
static void chart_jobs(const struct pflex_sim_result *r, int pj, int what, const char *gnuplot,
                       FILE *out, int *nch)
{
    size_t N = r->nperiods, st = stride_of(N);
    const double *v = what ? r->job_fraction[pj] : r->job_cap[pj];
    char *buf = NULL, w[96], title[240], q[160];
    size_t len = 0;
    FILE *s = script_open(r, &buf, &len, 440, what ? "throughput / baseline (T/T0)" : "cap per GPU (W)");
    if (s) {
        fputs("$d << EOD\n", s);
        for (size_t k = 0; k < N; k += st) {
            fprintf(s, "%.3f", x_of(r, k));
            for (size_t j = 0; j < r->njobs_kept; j++)
                fprintf(s, " %.5f", v[j * N + k]);
            fputc('\n', s);
        }
        fputs("EOD\nplot ", s);
        for (size_t j = 0; j < r->njobs_kept; j++)
            fprintf(s, "%s$d using 1:%zu with linespoints lw 2 dt %s lc rgb '%s' pt %d ps 0.9 "
                       "pn %zu title %s noenhanced",
                    j ? ", \\\n  " : "", j + 2, job_dash[j % NELEM(job_dash)],
                    job_color[j % NELEM(job_color)], job_pt[j % NELEM(job_pt)], 9 + j % 7,
                    pflex_report_gnuplot_quote(r->job_name[j], q, sizeof q));
        fputc('\n', s);
    }
    when(r, w, sizeof w);
    snprintf(title, sizeof title, "Per job, %s: %s%s", pflex_sim_policy_name((enum pflex_sim_policy)pj),
             what ? "throughput as a share of its baseline (the curves)" : "cap in force", w);
    chart(out, gnuplot, s, &buf, &len, title, "", nch);
}

int pflex_sim_report_charts(const struct pflex_sim_result *r, const double *field_t,
                            const double *field_w, size_t nfield, const char *gnuplot, FILE *out)
{
    int nch = 0;
    chart_power(r, field_t, field_w, nfield, gnuplot, out, &nch);
    if (ran(r, PFLEX_SIM_EQUAL) && ran(r, PFLEX_SIM_ORACLE))
        chart_gap(r, gnuplot, out, &nch);
    /* per job: the online policy (warm, else cold, else the oracle) */
    int pj = ran(r, PFLEX_SIM_ONLINE_WARM)   ? PFLEX_SIM_ONLINE_WARM
             : ran(r, PFLEX_SIM_ONLINE_COLD) ? PFLEX_SIM_ONLINE_COLD
                                             : PFLEX_SIM_ORACLE;
    if (r->njobs_kept && r->job_cap[pj])
        for (int what = 0; what < 2; what++)
            chart_jobs(r, pj, what, gnuplot, out, &nch);
    return nch;
}
