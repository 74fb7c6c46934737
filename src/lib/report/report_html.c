/* report_html.c — the study's HTML report: one self-contained page.
 *
 * Charts are gnuplot scripts with their data inline (datablocks), drawn to
 * SVG by pflex_report_gnuplot_svg and pasted into the page.  gnuplot names
 * its SVG definitions the same way in every chart, so each chart's ids get
 * a prefix of their own before it joins the page.  No scripts, no external
 * assets: the page opens from disk in any browser.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/report/report.h"

static const char *const palette[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
};
#define NPALETTE (sizeof palette / sizeof *palette)
/* Dashes and point types beside the colours, so that lines are told apart
 * where colours are not (print, colour-blind readers). */
static const char *const dashes[] = {"1", "(12,6)", "(3,4)", "(14,5,3,5)", "(6,4)"};
#define NDASHES (sizeof dashes / sizeof *dashes)
static const int points[] = {7, 5, 9, 11, 13, 15, 3, 1};
#define NPOINTS (sizeof points / sizeof *points)
#define DENSE_COLOR "#1f77b4"
#define MOE_COLOR "#d62728"

static const char preamble[] =
    "set terminal svg size %d,%d dynamic enhanced font 'Helvetica,15' background '#ffffff'\n"
    "set encoding utf8\n"
    "set grid lc rgb '#e0e0e0' lw 1\n"
    "set border lw 1.2\n"
    "set key outside below center horizontal height 0.8 samplen 2.5 spacing 1.1\n";

struct ctx {
    const struct pflex_report *r;
    const json_t *summary;
    const char *gnuplot;
    FILE *out;
    int charts;                 /* drawn */
    int tried;                  /* attempted */
    int broken;                 /* gnuplot could not be run: stop trying */
    int width;                  /* nominal width of the chart being drawn, px */
    char why[256];
};

void pflex_report_html_text(FILE *f, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

/* A number of the summary for a caption: "%.3f", or "–" when absent. */
static const char *num(const json_t *v, char *buf, size_t len, const char *fmt)
{
    if (json_is_number(v))
        snprintf(buf, len, fmt, json_number_value(v));
    else
        snprintf(buf, len, "–");
    return buf;
}

static const json_t *median_of(const json_t *S, const char *group, const char *key)
{
    return json_object_get(json_object_get(json_object_get(json_object_get(S, "pfi"), group), key),
                           "median");
}

/* Draw one chart from a finished script, or leave a note where it goes. */
static void figure(struct ctx *c, FILE *script_f, char **script_p, size_t *len_p,
                   const char *caption)
{
    fclose(script_f);           /* sets *script_p and *len_p */
    char *script = *script_p;
    size_t len = *len_p;
    FILE *f = c->out;
    c->tried++;
    fprintf(f, "<figure style=\"max-width:%dpx\">\n", c->width);
    char *svg = NULL;
    pflex_error_t err = {{0}};
    if (!c->broken && c->gnuplot
        && pflex_report_gnuplot_svg(c->gnuplot, script, len, &svg, &err) == 0) {
        pflex_report_paste_svg(f, svg, c->tried);
        c->charts++;
    } else {
        if (!c->broken) {
            snprintf(c->why, sizeof c->why, "%s",
                     c->gnuplot ? err.text : "charts were turned off (--no-charts)");
            if (!c->gnuplot || strstr(err.text, "cannot run"))
                c->broken = 1;
        }
        fputs("<div class=\"nochart\">Chart not drawn: ", f);
        pflex_report_html_text(f, c->why);
        if (c->gnuplot)
            fputs(". Install gnuplot (Debian: <code>apt-get install gnuplot-nox</code>) and run "
                  "<code>pflex study</code> again to draw it here", f);
        fputs(".</div>\n", f);
    }
    fputs("<figcaption>", f);
    pflex_report_html_text(f, caption);
    fputs("</figcaption>\n</figure>\n", f);
    free(svg);
    free(script);
}

static FILE *script_open(struct ctx *c, char **buf, size_t *len, int w, int h)
{
    c->width = w;
    FILE *s = open_memstream(buf, len);
    if (s)
        fprintf(s, preamble, w, h);
    return s;
}

static int main_run(const struct pflex_report_run *r)
{
    return r->fleet.split == PFLEX_FLEET_MAIN && r->pfi_valid;
}

/* Chart: normalised throughput against cap, every run in grey and the mean
 * of each family in colour; dense and MoE side by side. */
static void chart_curves(struct ctx *c)
{
    const struct pflex_report *r = c->r;
    char *buf;
    size_t len;
    FILE *s = script_open(c, &buf, &len, 1200, 560);
    if (!s)
        return;
    for (int moe = 0; moe <= 1; moe++) {
        fprintf(s, "$runs%d << EOD\n", moe);
        for (size_t i = 0; i < r->nruns; i++) {
            const struct pflex_report_run *run = &r->runs[i];
            if (!main_run(run) || run->fleet.is_moe != moe)
                continue;
            for (size_t k = 0; k < run->npoints; k++)
                fprintf(s, "%.1f %.5f\n", run->cap_w[k], run->throughput[k] / run->t0);
            fputs("\n", s);
        }
        fputs("EOD\n", s);
    }
    /* Family means at each cap. */
    int nfam = 0;
    int fam_moe[32], fam_n[32];
    for (int f = 0; pflex_fleet_family_at(f) && f < 32; f++) {
        const char *name = pflex_fleet_family_at(f);
        double cap[PFLEX_REPORT_MAX_POINTS], sum[PFLEX_REPORT_MAX_POINTS];
        int cnt[PFLEX_REPORT_MAX_POINTS], ncap = 0, n = 0, moe = 0;
        for (size_t i = 0; i < r->nruns; i++) {
            const struct pflex_report_run *run = &r->runs[i];
            if (!main_run(run) || strcmp(run->fleet.family, name))
                continue;
            n++;
            moe = run->fleet.is_moe;
            for (size_t k = 0; k < run->npoints; k++) {
                int j = 0;
                while (j < ncap && fabs(cap[j] - run->cap_w[k]) > 0.5)
                    j++;
                if (j == ncap) {
                    if (ncap == PFLEX_REPORT_MAX_POINTS)
                        continue;
                    cap[ncap] = run->cap_w[k];
                    sum[ncap] = 0;
                    cnt[ncap++] = 0;
                }
                sum[j] += run->throughput[k] / run->t0;
                cnt[j]++;
            }
        }
        fam_moe[f] = moe;
        fam_n[f] = n;
        nfam = f + 1;
        fprintf(s, "$fam%d << EOD\n", f);
        for (int j = 0; j < ncap; j++)
            fprintf(s, "%.1f %.5f\n", cap[j], sum[j] / cnt[j]);
        fputs("EOD\n", s);
    }
    fputs("set multiplot layout 1,2 title 'Normalised throughput against the per-GPU power cap "
          "(H200 main runs; grey: each run, colour: family mean)' font ',17'\n"
          "set xlabel 'Power cap per GPU (W)'\n"
          "set ylabel 'Throughput / throughput at the highest cap'\n"
          "set yrange [*:1.04]\n", s);
    for (int moe = 0; moe <= 1; moe++) {
        fprintf(s, "set title '%s models'\nplot $runs%d with lines lc rgb '#cfcfcf' lw 1 notitle",
                moe ? "MoE" : "Dense", moe);
        int col = 0;
        for (int f = 0; f < nfam; f++) {
            if (fam_moe[f] != moe || fam_n[f] == 0)
                continue;
            char t[96], q[200];
            snprintf(t, sizeof t, "%s (%d runs)", pflex_fleet_family_at(f), fam_n[f]);
            fprintf(s, ", \\\n  $fam%d with linespoints lw 2.5 dt %s pt %d ps 0.7 lc rgb '%s' title %s noenhanced",
                    f, dashes[col % NDASHES], points[col % NPOINTS], palette[col % NPALETTE],
                    pflex_report_gnuplot_quote(t, q, sizeof q));
            col++;
        }
        fputs("\n", s);
    }
    fputs("unset multiplot\n", s);
    figure(c, s, &buf, &len,
           "Each grey line is one run's sweep; coloured lines are family means. Work that waits "
           "on memory or the network slows less than the SM clock when a cap binds.");
}

/* Chart: the loss curves PFI integrates, with the proportional line. */
static void chart_loss(struct ctx *c)
{
    const struct pflex_report *r = c->r;
    char *buf;
    size_t len;
    FILE *s = script_open(c, &buf, &len, 1100, 600);
    if (!s)
        return;
    double lo = 0;  /* a run faster under a cap (noise) has L < 0: the axis holds it */
    for (int moe = 0; moe <= 1; moe++) {
        fprintf(s, "$loss%d << EOD\n", moe);
        for (size_t i = 0; i < r->nruns; i++) {
            const struct pflex_report_run *run = &r->runs[i];
            if (!main_run(run) || run->fleet.is_moe != moe)
                continue;
            fputs("0 0\n", s);
            for (size_t k = run->npoints; k-- > 0;) {
                double x = 1 - run->power_w[k] / run->p0_w;
                if (x > 0) {
                    double l = 1 - run->throughput[k] / run->t0;
                    fprintf(s, "%.5f %.5f\n", x, l);
                    lo = fmin(lo, l);
                }
            }
            fputs("\n", s);
        }
        fputs("EOD\n", s);
    }
    fprintf(s, "set title 'Throughput loss against power reduction (H200 main runs)' font ',16'\n"
               "set xlabel 'Power reduction per GPU, x = 1 − P/P_0'\n"
               "set ylabel 'Throughput loss, L = 1 − T/T_0'\n"
               "set xrange [0:*]\nset yrange [%.3f:*]\n"
               "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead dt 3 lw 1.5 lc rgb '#555555'\n"
               "set label 'PFI range' at %.3f, graph 0.95 offset 0.5,0 textcolor rgb '#555555'\n"
               "plot $loss0 with linespoints lw 1 pt 7 ps 0.35 lc rgb '%s' title 'dense runs', \\\n"
               "  $loss1 with linespoints lw 1 dt (6,3) pt 9 ps 0.45 lc rgb '%s' title 'MoE runs', \\\n"
               "  x with lines dt 2 lw 2 lc rgb '#000000' title 'proportional loss (ratio PFI = 1)'\n",
            lo < 0 ? lo - 0.01 : 0.0, r->range, r->range, r->range, DENSE_COLOR, MOE_COLOR);
    figure(c, s, &buf, &len,
           "A curve under the dashed line gives up less throughput than power: ratio PFI (x / L, "
           "averaged over the caps) above 1. The dotted line marks the range over which PFI is "
           "computed.");
}

/* A box plot with the points over it, one box per category. */
struct category {
    char label[48];
    int (*pick)(const struct pflex_report_run *r, const void *arg);
    const void *arg;
};

static void chart_boxes(struct ctx *c, const char *title, const struct category *cat, int ncat, const char *caption)
{
    const struct pflex_report *r = c->r;
    char *buf;
    size_t len;
    FILE *s = script_open(c, &buf, &len, 1100, 560);
    if (!s)
        return;
    int used = 0;
    char tics[1024] = "";
    fputs("$d << EOD\n", s);
    for (int k = 0; k < ncat; k++) {
        int n = 0;
        for (size_t i = 0; i < r->nruns; i++)
            n += main_run(&r->runs[i]) && cat[k].pick(&r->runs[i], cat[k].arg);
        if (n == 0)
            continue;
        if (used)
            fputs("\n\n", s);
        int j = 0;
        for (size_t i = 0; i < r->nruns; i++)
            if (main_run(&r->runs[i]) && cat[k].pick(&r->runs[i], cat[k].arg)) {
                /* A fixed jitter so that points do not hide each other. */
                double dx = ((j * 7) % 11 - 5) * 0.035;
                fprintf(s, "%.3f %.5f\n", used + 1 + dx, r->runs[i].pfi);
                j++;
            }
        size_t t = strlen(tics);
        snprintf(tics + t, sizeof tics - t, "%s\"%s\\n(%d runs)\" %d", used ? ", " : "", cat[k].label, n,
                 used + 1);
        used++;
    }
    fputs("EOD\n", s);
    if (used == 0) {
        fputs("set label 'no runs with a PFI' at graph 0.4, graph 0.5\nplot [0:1][0:1] NaN notitle\n", s);
    } else {
        fprintf(s, "set title '%s' font ',17'\nset ylabel 'PFI (range %.2f)'\n"
                   "set xtics (%s)\nset xrange [0.4:%d.6]\nset boxwidth 0.55\n"
                   "set style boxplot nooutliers\nset offsets 0, 0, 0.08, 0.03\nunset key\nset bmargin 5\n"
                   "plot for [i=0:%d] $d index i using (i+1):2 with boxplot lw 1.5 lc rgb '#1f77b4' "
                   "fs solid 0.25 title (i == 0 ? 'quartiles and whiskers (1.5 IQR)' : ''), \\\n"
                   "  $d using 1:2 with points pt 7 ps 0.55 lc rgb '#333333' title 'runs'\n",
                title, c->r->range, tics, used, used - 1);
    }
    figure(c, s, &buf, &len, caption);
}

static int by_arch(const struct pflex_report_run *r, const void *a) { return !strcmp(r->fleet.arch, a); }
static int by_task(const struct pflex_report_run *r, const void *a) { return !strcmp(r->fleet.task, a); }
static int by_gpus(const struct pflex_report_run *r, const void *a) { return r->fleet.gpus == *(const int *)a; }

/* Chart: the same job on H100 against H200. */
static void chart_pairs(struct ctx *c)
{
    const struct pflex_report *r = c->r;
    char *buf;
    size_t len;
    FILE *s = script_open(c, &buf, &len, 800, 680);
    if (!s)
        return;
    double lo = INFINITY, hi = -INFINITY;
    int n = 0;
    for (int moe = 0; moe <= 1; moe++) {
        fprintf(s, "$p%d << EOD\n", moe);
        for (size_t i = 0; i < r->nruns; i++) {
            const struct pflex_report_run *h = &r->runs[i];
            if (h->fleet.split != PFLEX_FLEET_H100 || h->partner < 0 || !h->pfi_valid
                || !r->runs[h->partner].pfi_valid || h->fleet.is_moe != moe)
                continue;
            double a = r->runs[h->partner].pfi, b = h->pfi;
            fprintf(s, "%.5f %.5f\n", a, b);
            lo = fmin(lo, fmin(a, b));
            hi = fmax(hi, fmax(a, b));
            n++;
        }
        fputs("EOD\n", s);
    }
    if (n == 0) {
        fputs("set title 'Same job on H100 and H200' font ',17'\n"
              "set label 'no matched pairs in this study (--jobs selects a subset)' at graph 0.1, graph 0.5\n"
              "plot [0:1][0:1] NaN notitle\n", s);
    } else {
        double pad = 0.05 * (hi - lo) + 0.02;
        fprintf(s, "set title 'Same job on H100 and H200: PFI of %d matched pairs' font ',17'\n"
                   "set xlabel 'PFI on H200-SXM-141GB'\nset ylabel 'PFI on H100-SXM5-80GB'\n"
                   "set size ratio -1\nset xrange [%.3f:%.3f]\nset yrange [%.3f:%.3f]\n"
                   "plot $p0 with points pt 7 ps 1.1 lc rgb '%s' title 'dense', \\\n"
                   "  $p1 with points pt 9 ps 1.3 lc rgb '%s' title 'MoE', \\\n"
                   "  x with lines dt 2 lc rgb '#000000' title 'same PFI on both'\n",
                n, lo - pad, hi + pad, lo - pad, hi + pad, DENSE_COLOR, MOE_COLOR);
    }
    char cap[400], a[16], b[16], d[16];
    const json_t *P = json_object_get(c->summary, "h100_vs_h200");
    snprintf(cap, sizeof cap, "Points above the dashed line are jobs more power-flexible on H100 "
             "than on H200: %s of %s pairs here; median difference (H100 − H200) %s.",
             num(json_object_get(P, "h100_more_flexible"), a, sizeof a, "%.0f"),
             num(json_object_get(P, "pairs"), b, sizeof b, "%.0f"),
             num(json_object_get(json_object_get(P, "difference"), "median"), d, sizeof d, "%+.3f"));
    figure(c, s, &buf, &len, cap);
}

/* Chart: PFI against two telemetry fields read at the baseline cap. */
static void chart_telemetry(struct ctx *c)
{
    const struct pflex_report *r = c->r;
    static const enum pflex_tm fields[2] = {PFLEX_TM_DRAM_ACTIVE, PFLEX_TM_TENSOR_ACTIVE};
    char *buf;
    size_t len;
    FILE *s = script_open(c, &buf, &len, 1200, 540);
    if (!s)
        return;
    for (int moe = 0; moe <= 1; moe++) {
        fprintf(s, "$t%d << EOD\n", moe);
        for (size_t i = 0; i < r->nruns; i++) {
            const struct pflex_report_run *run = &r->runs[i];
            if (main_run(run) && run->fleet.is_moe == moe)
                fprintf(s, "%.5f %.5f %.5f\n", run->tm[fields[0]], run->tm[fields[1]], run->pfi);
        }
        fputs("EOD\n", s);
    }
    fputs("set multiplot layout 1,2 title 'PFI against telemetry at the highest cap (H200 main runs)' "
          "font ',17'\nset ylabel 'PFI'\n", s);
    for (int k = 0; k < 2; k++) {
        const char *name = pflex_tm_name(fields[k]);
        json_t *corr = json_object_get(json_object_get(c->summary, "correlation"), name);
        double rho = json_number_value(json_object_get(corr, "pearson"));
        fprintf(s, "set title '%s (Pearson r = %.2f)' noenhanced\n"
                   "set xlabel '%s (fraction of time, 0–1)' noenhanced\n"
                   "plot $t0 using %d:3 with points pt 7 ps 0.8 lc rgb '%s' title 'dense', \\\n"
                   "  $t1 using %d:3 with points pt 9 ps 1.0 lc rgb '%s' title 'MoE'\n",
                name, rho, name, k + 1, DENSE_COLOR, k + 1, MOE_COLOR);
    }
    fputs("unset multiplot\n", s);
    char cap[400], v[4][16];
    const json_t *C = json_object_get(c->summary, "correlation");
    const json_t *dr = json_object_get(C, "dram_active"), *te = json_object_get(C, "tensor_active");
    snprintf(cap, sizeof cap, "dram_active and tensor_active: the share of time the DRAM and the "
             "tensor cores are busy, mean over the job's GPUs at the highest cap. Correlation with "
             "PFI: Pearson %s and %s, Spearman %s and %s.",
             num(json_object_get(dr, "pearson"), v[0], 16, "%.2f"),
             num(json_object_get(te, "pearson"), v[1], 16, "%.2f"),
             num(json_object_get(dr, "spearman"), v[2], 16, "%.2f"),
             num(json_object_get(te, "spearman"), v[3], 16, "%.2f"));
    figure(c, s, &buf, &len, cap);
}

/* Chart: the calibration against the Emerald measurements. */
static void chart_calibration(struct ctx *c)
{
    const struct pflex_report_calib *cal = &c->r->calib;
    char *buf;
    size_t len;
    FILE *s = script_open(c, &buf, &len, 1100, 600);
    if (!s)
        return;
    double hi = 1.08;   /* the axis holds every point */
    for (size_t j = 0; j < cal->njobs; j++) {
        fprintf(s, "$c%zu << EOD\n", j);
        for (size_t k = 0; k < cal->jobs[j].npoints; k++) {
            fprintf(s, "%.1f %.5f %.5f\n", cal->jobs[j].cap_w[k], cal->jobs[j].measured[k],
                    cal->jobs[j].simulated[k]);
            hi = fmax(hi, fmax(cal->jobs[j].measured[k], cal->jobs[j].simulated[k]) + 0.03);
        }
        fputs("EOD\n", s);
    }
    fprintf(s, "set title 'Calibration: simulated (lines) against measured (points) normalised "
               "throughput, Emerald A100 jobs' font ',16'\nset xlabel 'Power cap per GPU (W)'\n"
               "set ylabel 'Throughput / throughput at the highest cap'\n"
               "set yrange [0:%.3f]\nplot ", hi);
    for (size_t j = 0; j < cal->njobs; j++) {
        const char *col = palette[j % NPALETTE];
        char title[96], q[200];
        /* the job's own name, underscores and all: noenhanced draws it literally */
        snprintf(title, sizeof title, "%s (RMSE %.3f)", cal->jobs[j].job, cal->jobs[j].rmse);
        fprintf(s, "%s$c%zu using 1:2 with points pt %d ps 1.2 lc rgb '%s' notitle, \\\n"
                   "  $c%zu using 1:3 with lines lw 2.5 dt %s lc rgb '%s' title %s noenhanced",
                j ? ", \\\n  " : "", j, points[j % NPOINTS], col, j, dashes[j % NDASHES], col,
                pflex_report_gnuplot_quote(title, q, sizeof q));
    }
    fputs("\n", s);
    figure(c, s, &buf, &len,
           "Points: measured by the Emerald AI field demonstration; lines: the same jobs on the "
           "simulator. RMSE over the caps the calibration scores.");
}

/* Chart: allocation policies across cuts (pflex/report/report.h's policy order:
 * equal, pfi-weighted, pfi, optimal). */
static void chart_alloc(struct ctx *c)
{
    const struct pflex_report_alloc *a = &c->r->alloc;
    char *buf;
    size_t len;
    FILE *s = script_open(c, &buf, &len, 1240, 520);
    if (!s)
        return;
    double top = 105;   /* the gap axis holds every point */
    fputs("$a << EOD\n", s);
    for (size_t i = 0; i < a->ncuts; i++) {
        const struct pflex_report_cut *k = &a->cuts[i];
        double nj = 1e3 * (double)a->njobs;
        fprintf(s, "%.1f", 100 * k->cut);
        for (int p = 0; p < PFLEX_REPORT_NPOL; p++)
            fprintf(s, " %.4f", k->throughput[p] / nj);
        for (int p = PFLEX_REPORT_POL_PFI_WEIGHTED; p <= PFLEX_REPORT_POL_PFI; p++) {
            if (isfinite(k->gap_recovered[p])) {
                fprintf(s, " %.3f", 100 * k->gap_recovered[p]);
                top = fmax(top, 100 * k->gap_recovered[p] + 5);
            }
            else
                fputs(" NaN", s);
        }
        for (int p = 0; p < PFLEX_REPORT_NPOL; p++)
            fprintf(s, " %.5f", k->progress[p]);
        fputs("\n", s);
    }
    fputs("EOD\n", s);
    fprintf(s, "set multiplot layout 1,3 title 'Splitting a site power cut between %zu H200 jobs' font ',17'\n"
               "set xlabel 'Cut in total GPU power (%%)'\n"
               "set title 'Throughput per job (measured curves)'\n"
               "set ylabel 'Tokens/s per job (thousands)'\n"
               "plot $a using 1:2 with linespoints lw 2.5 pt 5 lc rgb '#7f7f7f' title 'equal', \\\n"
               "  $a using 1:3 with linespoints lw 2.5 dt (12,6) pt 7 lc rgb '#d62728' title 'pfi-weighted', \\\n"
               "  $a using 1:4 with linespoints lw 2.5 dt (3,4) pt 11 lc rgb '#1f77b4' title 'pfi', \\\n"
               "  $a using 1:5 with linespoints lw 2.5 pt 9 dt (14,5,3,5) lc rgb '#2ca02c' title 'optimal'\n"
               "set title 'Share of the equal-optimal gap recovered'\n"
               "set ylabel 'Gap recovered (%%)'\nset yrange [*:%.0f]\n"
               "plot $a using 1:6 with linespoints lw 2.5 dt (12,6) pt 7 lc rgb '#d62728' title 'pfi-weighted', \\\n"
               "  $a using 1:7 with linespoints lw 2.5 dt (3,4) pt 11 lc rgb '#1f77b4' title 'pfi'\n"
               "set title 'GPU-weighted objective'\nset yrange [*:*]\n"
               "set ylabel 'GPU-weighted mean T/T_0'\n"
               "plot $a using 1:8 with linespoints lw 2.5 pt 5 lc rgb '#7f7f7f' title 'equal', \\\n"
               "  $a using 1:9 with linespoints lw 2.5 dt (12,6) pt 7 lc rgb '#d62728' title 'pfi-weighted', \\\n"
               "  $a using 1:10 with linespoints lw 2.5 dt (3,4) pt 11 lc rgb '#1f77b4' title 'pfi', \\\n"
               "  $a using 1:11 with linespoints lw 2.5 pt 9 dt (14,5,3,5) lc rgb '#2ca02c' title 'optimal'\n"
               "unset multiplot\n", a->njobs, top);
    figure(c, s, &buf, &len,
           "Equal: every job gives up the same share of power. pfi-weighted (the study's "
           "PFI-aware policy, Eq. 2): each job's cut in W proportional to (P0/T0) x PFI, with "
           "the ratio PFI measured on its curve. pfi: models each job's loss as x/PFI and cuts "
           "where that model says it costs least. optimal: knows every measured curve. With "
           "tokens/s as the objective, fast small models weigh most; the GPU-weighted objective "
           "counts every GPU-hour of progress alike.");
}

static void stats_row(FILE *f, const char *label, const json_t *st)
{
    fputs("<tr><td>", f);
    pflex_report_html_text(f, label);
    json_int_t n = json_integer_value(json_object_get(st, "n"));
    fprintf(f, "</td><td>%lld</td>", (long long)n);
    static const char *const keys[] = {"mean", "median", "q1", "q3", "min", "max"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        json_t *v = json_object_get(st, keys[k]);
        if (json_is_number(v))
            fprintf(f, "<td>%.3f</td>", json_number_value(v));
        else
            fputs("<td>–</td>", f);
    }
    fputs("</tr>\n", f);
}

const json_t *pflex_report_json_get(const json_t *o, const char *a, const char *b, const char *c)
{
    o = json_object_get(o, a);
    if (b)
        o = json_object_get(o, b);
    if (c)
        o = json_object_get(o, c);
    return o;
}

static void headline_table(struct ctx *c)
{
    FILE *f = c->out;
    const json_t *S = c->summary;
    fputs("<table class=\"num\">\n<tr><th>group</th><th>runs</th><th>mean</th><th>median</th>"
          "<th>Q1</th><th>Q3</th><th>min</th><th>max</th></tr>\n", f);
    stats_row(f, "all H200 main runs", pflex_report_json_get(S, "pfi", "all", NULL));
    stats_row(f, "dense", pflex_report_json_get(S, "pfi", "by_arch", "dense"));
    stats_row(f, "MoE", pflex_report_json_get(S, "pfi", "by_arch", "moe"));
    stats_row(f, "pretraining", pflex_report_json_get(S, "pfi", "by_task", "pretrain"));
    stats_row(f, "fine-tuning (all)", pflex_report_json_get(S, "pfi", "by_task", "finetune"));
    stats_row(f, "fine-tuning, full", pflex_report_json_get(S, "pfi", "by_task", "finetune_full"));
    stats_row(f, "fine-tuning, LoRA", pflex_report_json_get(S, "pfi", "by_task", "finetune_lora"));
    static const char *const g[] = {"1", "2", "4", "8", "16", "32"};
    for (size_t i = 0; i < 6; i++) {
        char label[32];
        snprintf(label, sizeof label, "%s GPU%s", g[i], i ? "s" : "");
        stats_row(f, label, pflex_report_json_get(S, "pfi", "by_gpus", g[i]));
    }
    stats_row(f, "H200 validation runs", pflex_report_json_get(S, "pfi", "by_split", "validation"));
    stats_row(f, "matched pairs: on H200", pflex_report_json_get(S, "h100_vs_h200", "h200", NULL));
    stats_row(f, "matched pairs: on H100", pflex_report_json_get(S, "h100_vs_h200", "h100", NULL));
    fputs("</table>\n", f);
}

static const char *pct(const json_t *v, char *buf, size_t len)
{
    if (!json_is_number(v))
        return "-";
    snprintf(buf, len, "%+.1f", 100 * json_number_value(v));
    return buf;
}

/* The study's comparison (summary key "study", docs/study.md): simulated
 * beside measured ratio PFI per headline group, as a chart and a table,
 * and the statistics the study reported. */
static void study_section(struct ctx *c)
{
    FILE *f = c->out;
    const json_t *S = json_object_get(c->summary, "study");
    const json_t *groups = json_object_get(S, "groups");
    fputs("<h2 id=\"study\">Simulated beside the study's measurements</h2>\n", f);
    if (!json_array_size(groups)) {
        fputs("<p>No headline group in this study (<code>--jobs</code> or <code>--fleet "
              "extended</code>).</p>\n", f);
        return;
    }
    char *buf;
    size_t len;
    FILE *s = script_open(c, &buf, &len, 760, 680);
    if (s) {
        double lo = 1, hi = 1;
        for (int moe = 0; moe <= 2; moe++) {
            fprintf(s, "$s%d << EOD\n", moe);
            size_t i;
            json_t *g;
            json_array_foreach(groups, i, g) {
                const char *name = json_string_value(json_object_get(g, "group"));
                double sim = json_number_value(json_object_get(g, "simulated"));
                double mea = json_number_value(json_object_get(g, "measured"));
                int cl = !name || strncmp(name, "MoE", 3) ? 0 : strstr(name, "LoRA") ? 2 : 1;
                if (cl != moe || !json_is_number(json_object_get(g, "measured")))
                    continue;
                fprintf(s, "%.5f %.5f\n", mea, sim);
                lo = fmin(lo, fmin(sim, mea));
                hi = fmax(hi, fmax(sim, mea));
            }
            fputs("EOD\n", s);
        }
        double pad = 0.05 * (hi - lo) + 0.05;
        fprintf(s, "set title 'Ratio PFI per headline group: simulated against measured' font ',16'\n"
                   "set xlabel 'measured (the study)'\nset ylabel 'simulated'\nset size ratio -1\n"
                   "set xrange [%.3f:%.3f]\nset yrange [%.3f:%.3f]\n"
                   "plot $s0 with points pt 7 ps 1.2 lc rgb '%s' title 'dense', \\\n"
                   "  $s1 with points pt 9 ps 1.4 lc rgb '%s' title 'MoE PT', \\\n"
                   "  $s2 with points pt 5 ps 1.2 lc rgb '%s' title 'MoE LoRA', \\\n"
                   "  x with lines dt 2 lc rgb '#000000' title 'simulated = measured'\n",
                lo - pad, hi + pad, lo - pad, hi + pad, palette[0], palette[1], palette[2]);
        char cap[200], e[16];
        snprintf(cap, sizeof cap, "Each point is one of the study's 25 headline groups; mean "
                 "|simulated - measured| %s.",
                 num(json_object_get(S, "mean_abs_error"), e, sizeof e, "%.3f"));
        figure(c, s, &buf, &len, cap);
    }
    fputs("<table>\n<tr><th>group</th><th>simulated</th><th>measured</th><th>difference</th></tr>\n",
          f);
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g) {
        char a[16], b[16], d[16];
        const json_t *sim = json_object_get(g, "simulated"), *mea = json_object_get(g, "measured");
        json_t *diff = json_is_number(sim) && json_is_number(mea)
                       ? json_real(json_number_value(sim) - json_number_value(mea)) : json_null();
        fputs("<tr><td>", f);
        pflex_report_html_text(f, json_string_value(json_object_get(g, "group")));
        fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", num(sim, a, 16, "%.2f"),
                num(mea, b, 16, "%.2f"), num(diff, d, 16, "%+.2f"));
        json_decref(diff);
    }
    fputs("</table>\n<table>\n<tr><th>cluster</th><th>groups</th><th>median simulated</th>"
          "<th>median, the study</th></tr>\n", f);
    static const char *const cl[] = {"dense", "moe_pt", "moe_lora"};
    static const char *const label[] = {"dense (PT + LoRA)", "MoE pretraining", "MoE LoRA"};
    for (int k = 0; k < 3; k++) {
        const json_t *m = json_object_get(json_object_get(S, "medians"), cl[k]);
        char a[16], b[16], n[16];
        fprintf(f, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", label[k],
                num(json_object_get(m, "n"), n, 16, "%.0f"),
                num(json_object_get(m, "simulated"), a, 16, "%.2f"),
                num(json_object_get(m, "study"), b, 16, "%.2f"));
    }
    fputs("</table>\n", f);
    const json_t *kw = json_object_get(S, "kruskal_dunn"), *gs = json_object_get(S, "grid_sensitivity");
    char h[16], p[16], d1[16], d2[16], d3[16], rho[16], gm[16], gr[16];
    fprintf(f, "<p>Kruskal&ndash;Wallis over the three clusters: H = %s, p = %s (the study: H = "
               "12.37, p = 0.0021). Dunn's test with Holm's correction, p: dense&ndash;MoE PT %s, "
               "dense&ndash;MoE LoRA %s, MoE PT&ndash;MoE LoRA %s (the study separated only dense "
               "from MoE LoRA). H100 against H200 over the matched groups: Spearman %s (the study: "
               "0.943). Coarse grid (200/500/600/700 W) against the 6-cap grid over the 8-GPU "
               "groups: median change %s %%, Spearman %s (the study: +10.7 %%, 0.940).</p>\n",
            num(json_object_get(kw, "kruskal_h"), h, 16, "%.2f"),
            num(json_object_get(kw, "kruskal_p"), p, 16, "%.4f"),
            num(pflex_report_json_get(kw, "dunn_holm_p", "dense-moe_pt", NULL), d1, 16, "%.3f"),
            num(pflex_report_json_get(kw, "dunn_holm_p", "dense-moe_lora", NULL), d2, 16, "%.3f"),
            num(pflex_report_json_get(kw, "dunn_holm_p", "moe_pt-moe_lora", NULL), d3, 16, "%.3f"),
            num(json_object_get(S, "h100_h200_spearman"), rho, 16, "%.3f"),
            pct(json_object_get(gs, "median_change"), gm, 16),
            num(json_object_get(gs, "spearman"), gr, 16, "%.3f"));
}

static void calib_section(struct ctx *c)
{
    FILE *f = c->out;
    const struct pflex_report_calib *cal = &c->r->calib;
    fputs("<h2 id=\"calibration\">Calibration against the Emerald measurements</h2>\n", f);
    if (!cal->done) {
        fputs("<p class=\"note\">Calibration section skipped: ", f);
        pflex_report_html_text(f, cal->note);
        fputs(".</p>\n", f);
        return;
    }
    fputs("<p>", f);
    pflex_report_html_text(f, cal->note);
    fputs("</p>\n", f);
    chart_calibration(c);
    fputs("<table class=\"num\">\n<tr><th>measured job</th><th>simulated as</th>"
          "<th>RMSE of T/T<sub>0</sub></th>"
          "<th>ratio PFI measured</th><th>ratio PFI simulated</th><th>difference</th></tr>\n", f);
    for (size_t j = 0; j < cal->njobs; j++) {
        const struct pflex_report_calib_job *J = &cal->jobs[j];
        fputs("<tr><td>", f);
        pflex_report_html_text(f, J->job);
        fputs("</td><td>", f);
        pflex_report_html_text(f, J->sim_job);
        fprintf(f, "</td><td>%.4f</td><td>%.3f</td><td>%.3f</td><td>%+.3f</td></tr>\n", J->rmse,
                J->pfi_measured, J->pfi_simulated, J->pfi_simulated - J->pfi_measured);
    }
    fputs("</table>\n", f);
}

static void alloc_section(struct ctx *c)
{
    FILE *f = c->out;
    const struct pflex_report_alloc *a = &c->r->alloc;
    fputs("<h2 id=\"allocation\">Allocation under a site power cut</h2>\n", f);
    if (!a->done) {
        fputs("<p class=\"note\">Allocation section skipped: ", f);
        pflex_report_html_text(f, a->note);
        fputs(".</p>\n", f);
        return;
    }
    fprintf(f, "<p>The %zu H200 main runs with a PFI share a site whose GPU power (%.1f kW at the "
               "highest cap) must drop by the cut, 0–40%% in 5%% steps as in the study's §6. "
               "Each policy plans per-job power; every plan is then scored on the measured "
               "curves (docs/contract.md §2). The PFI policies use the study's ratio PFI measured on each "
               "run's curve. The objective is total tokens/s; the last column plans again with "
               "the GPU-weighted objective (each job counts by its GPUs times its normalised "
               "throughput). Gap recovered: (policy − equal) / (optimal − equal), shown where "
               "optimal beats equal by more than rounding.</p>\n", a->njobs, a->baseline_w / 1e3);
    chart_alloc(c);
    fputs("<table class=\"num\">\n<tr><th>cut</th><th>budget (kW)</th>"
          "<th>equal (tokens/s per job)</th><th>pfi-weighted</th><th>pfi</th><th>optimal</th>"
          "<th>gap recovered by pfi-weighted</th><th>by pfi</th>"
          "<th>pfi-weighted − equal (tokens/s per job)</th>"
          "<th>GPU-weighted T/T<sub>0</sub>: equal / pfi-weighted / pfi / optimal</th></tr>\n", f);
    for (size_t i = 0; i < a->ncuts; i++) {
        const struct pflex_report_cut *k = &a->cuts[i];
        int all = 1;
        for (int p = 0; p < PFLEX_REPORT_NPOL; p++)
            all = all && k->feasible[p];
        fprintf(f, "<tr><td>%.0f%%%s</td><td>%.1f</td>", 100 * k->cut, all ? "" : " (infeasible)",
                k->budget_w / 1e3);
        for (int p = 0; p < PFLEX_REPORT_NPOL; p++)
            fprintf(f, "<td>%.0f</td>", k->throughput[p] / (double)a->njobs);
        for (int p = PFLEX_REPORT_POL_PFI_WEIGHTED; p <= PFLEX_REPORT_POL_PFI; p++) {
            if (isfinite(k->gap_recovered[p]))
                fprintf(f, "<td>%.1f%%</td>", 100 * k->gap_recovered[p]);
            else
                fputs("<td>–</td>", f);
        }
        fprintf(f, "<td>%+.0f</td><td>%.3f / %.3f / %.3f / %.3f</td></tr>\n",
                k->recovered_per_job[PFLEX_REPORT_POL_PFI_WEIGHTED], k->progress[0],
                k->progress[1], k->progress[2], k->progress[3]);
    }
    fputs("</table>\n", f);
}

/* The prediction sections (summary "prediction", written by the study from
 * its own sweeps): the study's Table 3 on the simulated fleet, beside the
 * study's numbers, the H100 transfer, and the §6 workload protocol. */
static void pred_cell(FILE *f, const json_t *v, const char *fmt)
{
    char b[32];
    fprintf(f, "<td>%s</td>", num(v, b, sizeof b, fmt));
}

static void prediction_section(struct ctx *c)
{
    FILE *f = c->out;
    const json_t *p = json_object_get(c->summary, "prediction");
    fputs("<h2 id=\"prediction\">Predicting PFI from telemetry</h2>\n", f);
    if (!json_is_object(p)) {
        fputs("<p class=\"note\">Prediction section skipped (see the study's messages).</p>\n", f);
        return;
    }
    fputs("<p>The study's Table 3 on the simulated H200 headline groups (n = 25, as the study; "
          "the validation groups are only predicted): ordinary least squares on "
          "DCGM features of each group's uncapped run, scored leave-one-out (LOO) and "
          "leave-one-cluster-out (LOCO, the clusters being architecture × task), then pflex's "
          "own models, then the model chosen inside each fold (nested). Each row is followed by "
          "the study's numbers. The simulator's constants are calibrated on physical "
          "measurements only, never on a PFI. The simulated telemetry "
          "is not the real one: where a row does much better than the study, that says how "
          "much of the simulator's PFI its counters reveal, not what real counters would.</p>\n"
          "<table class=\"num\">\n<tr><th>features</th><th>model</th><th>p</th><th>R² in</th>"
          "<th>LOO R²</th><th>LOO RMSE</th><th>LOO ρ</th><th>LOCO R²</th><th>LOCO RMSE</th>"
          "<th>LOCO ρ</th></tr>\n", f);
    size_t i;
    const json_t *row;
    json_array_foreach(json_object_get(p, "table3"), i, row) {
        for (int study = 0; study < 2; study++) {
            const json_t *r = study ? json_object_get(row, "study") : row;
            if (!json_is_object(r))
                continue;
            fputs(study ? "<tr class=\"meta\"><td>&nbsp;&nbsp;the study</td><td></td><td></td>"
                        : "<tr><td>", f);
            if (!study) {
                pflex_report_html_text(f, json_string_value(json_object_get(row, "features")));
                fputs("</td><td>", f);
                pflex_report_html_text(f, json_string_value(json_object_get(row, "model")));
                fputs("</td>", f);
                pred_cell(f, json_object_get(row, "p"), "%.0f");
            }
            pred_cell(f, json_object_get(r, "r2_in"), "%.3f");
            for (int k = 0; k < 2; k++) {
                const json_t *cv = json_object_get(r, k ? "loco" : "loo");
                /* a scheme too few jobs to train its folds on: why, not dashes */
                const char *na = json_string_value(json_object_get(r, k ? "loco_na" : "loo_na"));
                if (na) {
                    fputs("<td colspan=\"3\">n/a: ", f);
                    pflex_report_html_text(f, na);
                    fputs("</td>", f);
                    continue;
                }
                pred_cell(f, json_object_get(cv, "r2"), "%.3f");
                pred_cell(f, json_object_get(cv, "rmse"), "%.3f");
                pred_cell(f, json_object_get(cv, "rho"), "%.3f");
            }
            fputs("</tr>\n", f);
        }
    }
    fputs("</table>\n", f);
    const json_t *h = json_object_get(p, "h100_transfer");
    if (json_is_object(h)) {
        /* one buffer per argument: num() returns its buffer, and all are read at the print */
        char b[4][32];
        fprintf(f, "<p>The DRAM-copy-product model fitted on H200, scored on the %s H100 "
                   "groups: R² %s, ρ %s (the study: R² %s).</p>\n",
                num(json_object_get(h, "h100_jobs"), b[0], 32, "%.0f"),
                num(json_object_get(h, "r2"), b[1], 32, "%.3f"),
                num(json_object_get(h, "rho"), b[2], 32, "%.3f"),
                num(json_object_get(h, "study_r2"), b[3], 32, "%.2f"));
    }
    static const char *const mixes[] = {"random", "production"};
    for (int m = 0; m < 2; m++) {
        const json_t *mix = json_object_get(json_object_get(p, "allocation"), mixes[m]);
        const json_t *cuts = json_object_get(mix, "cuts");
        if (!json_is_array(cuts))
            continue;
        char b[32], b2[32];
        fprintf(f, "<p>§6 protocol, %s mix: %s workloads of %s jobs drawn with replacement from "
                   "the H200 groups; each plan scored on the measured curves; predicted values "
                   "are leave-one-out predictions. Gap recovered (policy − equal) / (oracle − "
                   "equal), pooled over the workloads, and tokens/s per job over equal:</p>\n",
                mixes[m], num(json_object_get(mix, "workloads"), b, sizeof b, "%.0f"),
                num(json_object_get(mix, "jobs_per_workload"), b2, sizeof b2, "%.0f"));
        fputs("<table class=\"num\">\n<tr><th>policy</th>", f);
        size_t k;
        const json_t *cut;
        json_array_foreach(cuts, k, cut)
            if (k % 2 == 0 && k > 0)
                fprintf(f, "<th>%.0f%%</th>", 100 * json_number_value(cut));
        fputs("</tr>\n", f);
        const char *key;
        const json_t *pol;
        json_object_foreach((json_t *)json_object_get(mix, "policies"), key, pol) {
            fputs("<tr><td>", f);
            pflex_report_html_text(f, json_string_value(json_object_get(pol, "name")));
            fputs("</td>", f);
            const json_t *g = json_object_get(pol, "gap_recovered");
            const json_t *d = json_object_get(pol, "gain_over_equal_per_job");
            for (size_t q = 2; q < json_array_size(cuts); q += 2) {
                const json_t *gv = json_array_get(g, q);
                if (json_is_number(gv))
                    fprintf(f, "<td>%.1f%% (%+.0f)</td>", 100 * json_number_value(gv),
                            json_number_value(json_array_get(d, q)));
                else
                    fputs("<td>–</td>", f);
            }
            fputs("</tr>\n", f);
        }
        fputs("</table>\n", f);
    }
    const json_t *st = json_object_get(json_object_get(p, "allocation"), "study");
    if (json_is_object(st)) {
        fputs("<p>The study: ", f);
        pflex_report_html_text(f, json_string_value(json_object_get(st, "headline")));
        fputs(".</p>\n", f);
    }
}

/* The fleet at a glance: per family, what runs and how flexible it is. */
/* The grid day (summary "grid_day": `pflex simulate --day srp --json`'s
 * document, added by the command): each policy on the field
 * demonstration's jobs through the SRP event, side by side. */
static void grid_day_section(struct ctx *c)
{
    FILE *f = c->out;
    const json_t *g = json_object_get(c->summary, "grid_day");
    if (!json_is_object(g))
        return;
    fputs("<h2 id=\"grid-day\">A grid day: the SRP event of 3 May 2025</h2>\n", f);
    const json_t *pols = json_object_get(g, "policies");
    if (!json_is_object(pols)) {
        fputs("<p class=\"note\">Left out: ", f);
        pflex_report_html_text(f, json_string_value(json_object_get(g, "note")) ? json_string_value(json_object_get(g, "note"))
                                                              : "no result");
        fputs(".</p>\n", f);
        return;
    }
    char b[4][32];
    fprintf(f, "<p>The field demonstration's six jobs (%s GPUs) on their measured A100 curves, "
               "through the site's limit derived from its measured power (docs/simulate.md: "
               "<code>pflex simulate --day srp</code>), %s periods of %s s; every policy keeps the "
               "limit with its caps. Gap recovered: the share of the equal-to-oracle gap in "
               "objective (%s) over the periods with a limit. ",
            num(json_object_get(g, "gpus"), b[0], 32, "%.0f"), num(json_object_get(g, "periods"), b[1], 32, "%.0f"),
            num(json_object_get(g, "period_s"), b[2], 32, "%g"),
            json_string_value(json_object_get(g, "objective")) ? json_string_value(json_object_get(g, "objective"))
                                                                : "progress");
    const char *note = json_string_value(json_object_get(g, "note"));
    if (note && *note)
        pflex_report_html_text(f, note);
    fputs("</p>\n<table class=\"num\">\n<tr><th>policy</th><th>lost vs oracle (% of the site, event)</th>"
          "<th>gap recovered</th>"
          "<th>lost over the event (objective &times; s)</th><th>periods under equal cuts</th>"
          "<th>floor breaches (job-periods)</th><th>periods above the limit</th>"
          "<th>energy (kWh)</th></tr>\n", f);
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)pols, name, v) {
        fputs("<tr><td>", f);
        pflex_report_html_text(f, name);
        fputs("</td>", f);
        const json_t *lo = json_object_get(v, "lost_vs_oracle_pct_of_site");
        if (json_is_number(lo))
            fprintf(f, "<td>%.3f%%</td>", json_number_value(lo));
        else
            fputs("<td>–</td>", f);
        const json_t *gr = json_object_get(v, "gap_recovered");
        if (json_is_number(gr))
            fprintf(f, "<td>%.1f%%</td>", 100 * json_number_value(gr));
        else
            fputs("<td>–</td>", f);
        pred_cell(f, json_object_get(v, "lost_event_s"), "%.0f");
        pred_cell(f, json_object_get(v, "below_equal"), "%.0f");
        fprintf(f, "<td>%s of %s</td>", num(json_object_get(v, "floor_breaches"), b[0], 32, "%.0f"),
                num(json_object_get(v, "floor_periods"), b[1], 32, "%.0f"));
        pred_cell(f, json_object_get(v, "periods_above"), "%.0f");
        pred_cell(f, json_object_get(v, "energy_kwh"), "%.1f");
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void fleet_table(struct ctx *c)
{
    FILE *f = c->out;
    const struct pflex_report *r = c->r;
    fputs("<table class=\"num\">\n<tr><th>family</th><th>architecture</th><th>H200 main runs</th>"
          "<th>pretrain / full FT / LoRA</th><th>GPUs</th><th>sequence length</th>"
          "<th>median PFI</th></tr>\n", f);
    for (int k = 0; pflex_fleet_family_at(k); k++) {
        const char *fam = pflex_fleet_family_at(k);
        int n = 0, pt = 0, ft = 0, lora = 0, g_lo = 1 << 30, g_hi = 0, s_lo = 1 << 30, s_hi = 0;
        const char *arch = "";
        double pfi[PFLEX_FLEET_MAIN_RUNS];
        size_t np = 0;
        for (size_t i = 0; i < r->nruns; i++) {
            const struct pflex_report_run *run = &r->runs[i];
            if (run->fleet.split != PFLEX_FLEET_MAIN || strcmp(run->fleet.family, fam))
                continue;
            n++;
            arch = run->fleet.arch;
            pt += run->fleet.desc.kind == PFLEX_JOB_PRETRAIN;
            ft += run->fleet.desc.kind == PFLEX_JOB_FINETUNE_FULL;
            lora += run->fleet.desc.kind == PFLEX_JOB_FINETUNE_LORA;
            g_lo = run->fleet.gpus < g_lo ? run->fleet.gpus : g_lo;
            g_hi = run->fleet.gpus > g_hi ? run->fleet.gpus : g_hi;
            s_lo = run->fleet.desc.seq_len < s_lo ? run->fleet.desc.seq_len : s_lo;
            s_hi = run->fleet.desc.seq_len > s_hi ? run->fleet.desc.seq_len : s_hi;
            if (run->pfi_valid && np < PFLEX_FLEET_MAIN_RUNS)
                pfi[np++] = run->pfi;
        }
        if (n == 0)
            continue;
        struct pflex_report_stats st;
        pflex_report_stats(pfi, np, &st);
        fprintf(f, "<tr><td>%s</td><td>%s</td><td>%d</td><td>%d / %d / %d</td><td>%d–%d</td>"
                   "<td>%d–%d</td>", fam, arch, n, pt, ft, lora, g_lo, g_hi, s_lo, s_hi);
        if (isfinite(st.median))
            fprintf(f, "<td>%.3f</td></tr>\n", st.median);
        else
            fputs("<td>–</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void runs_table(struct ctx *c)
{
    FILE *f = c->out;
    const struct pflex_report *r = c->r;
    fprintf(f, "<details><summary>All %zu runs</summary>\n<table class=\"num runs\">\n"
               "<tr><th>run</th><th>split</th><th>family</th><th>task</th><th>GPUs</th>"
               "<th>dp/tp/pp/ep</th><th>base power (W)</th><th>tokens/s</th><th>PFI</th></tr>\n",
            r->nruns);
    for (size_t i = 0; i < r->nruns; i++) {
        const struct pflex_report_run *run = &r->runs[i];
        const struct pflex_job_desc *d = &run->fleet.desc;
        fputs("<tr><td>", f);
        pflex_report_html_text(f, d->name);
        fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d/%d/%d/%d</td>"
                   "<td>%.0f</td><td>%.0f</td>",
                pflex_fleet_split_name(run->fleet.split), run->fleet.family, run->fleet.task,
                run->fleet.gpus, d->dp, d->tp, d->pp, d->ep, run->p0_w, run->t0);
        if (run->pfi_valid)
            fprintf(f, "<td>%.3f</td></tr>\n", run->pfi);
        else
            fputs("<td>–</td></tr>\n", f);
    }
    fputs("</table>\n</details>\n", f);
}

/* "What this says": the study's findings in a paragraph, read off the
 * summary and the allocation (every number from this run, none canned). */
static void brief_section(struct ctx *c)
{
    FILE *f = c->out;
    const json_t *S = c->summary, *all = pflex_report_json_get(S, "pfi", "all", NULL);
    const json_t *med = json_object_get(all, "median");
    fputs("<h2 id=\"brief\">What this says</h2>\n<p>", f);
    if (!json_is_number(med)) {
        fputs("No run of this study has a PFI (no cap bound): there is nothing to read yet.</p>\n", f);
        return;
    }
    double m = json_number_value(med);
    double lo = json_number_value(json_object_get(all, "min")), hi = json_number_value(json_object_get(all, "max"));
    fprintf(f, "Across the %lld H200 main runs the median ratio PFI is %.2f (%.2f to %.2f)",
            (long long)json_integer_value(json_object_get(all, "n")), m, lo, hi);
    /* ratio PFI = x / L: a cut x of the power costs about x / PFI of the throughput */
    if (m > 0)
        fprintf(f, ": a typical job gives up about %.1f %% of its throughput for a 10 %% cut in "
                   "its power%s", 10 / m,
                lo > 1 ? ", and every run gives up less throughput than power" : "");
    fputs(". ", f);
    const json_t *md = median_of(S, "by_arch", "dense"), *mm = median_of(S, "by_arch", "moe");
    if (json_is_number(md) && json_is_number(mm)) {
        double d = json_number_value(md), e = json_number_value(mm);
        fprintf(f, "%s jobs hold their throughput better under a cap than %s jobs (median %.2f "
                   "against %.2f). ", e > d ? "MoE" : "Dense", e > d ? "dense" : "MoE",
                fmax(d, e), fmin(d, e));
    }
    const json_t *P = json_object_get(S, "h100_vs_h200");
    if (json_integer_value(json_object_get(P, "pairs")) > 0)
        fprintf(f, "On H100, %lld of the %lld matched jobs are more power-flexible than on H200. ",
                (long long)json_integer_value(json_object_get(P, "h100_more_flexible")),
                (long long)json_integer_value(json_object_get(P, "pairs")));
    const struct pflex_report_alloc *a = &c->r->alloc;
    const struct pflex_report_cut *k = NULL;
    for (size_t i = 0; a->done && i < a->ncuts; i++)    /* the cut nearest 20 % with a gap */
        if (isfinite(a->cuts[i].gap_recovered[PFLEX_REPORT_POL_PFI_WEIGHTED])
            && (!k || fabs(a->cuts[i].cut - 0.2) < fabs(k->cut - 0.2)))
            k = &a->cuts[i];
    if (k)
        fprintf(f, "Splitting a %.0f %% site power cut by PFI (pfi-weighted) recovers %.0f %% of what "
                   "the optimal split gains over equal cuts (%+.0f tokens/s per job), the pfi "
                   "model %.0f %%. ",
                100 * k->cut, 100 * k->gap_recovered[PFLEX_REPORT_POL_PFI_WEIGHTED],
                k->recovered_per_job[PFLEX_REPORT_POL_PFI_WEIGHTED],
                100 * k->gap_recovered[PFLEX_REPORT_POL_PFI]);
    /* the telemetry model that predicts best out of sample */
    const json_t *best = NULL, *row;
    double best_r2 = -INFINITY;
    size_t i;
    json_array_foreach(pflex_report_json_get(S, "prediction", "table3", NULL), i, row) {
        const json_t *r2 = pflex_report_json_get(row, "loo", "r2", NULL);
        if (json_is_number(r2) && json_number_value(r2) > best_r2) {
            best = row;
            best_r2 = json_number_value(r2);
        }
    }
    if (best) {
        const char *feat = json_string_value(json_object_get(best, "features"));
        fputs("From telemetry of the uncapped run, ", f);
        pflex_report_html_text(f, feat ? feat : "?");
        fprintf(f, " predicts PFI best, leave-one-out R² %.2f", best_r2);
        const json_t *sr = pflex_report_json_get(best, "study", "loo", "r2");
        if (json_is_number(sr))
            fprintf(f, " (the study's: %.2f)", json_number_value(sr));
        fputs(". ", f);
    }
    const json_t *mae = pflex_report_json_get(S, "study", "mean_abs_error", NULL);
    if (json_is_number(mae))
        fprintf(f, "The simulated PFIs lie %.2f from the study's measured ones on average over "
                   "its headline groups. ", json_number_value(mae));
    const json_t *g = pflex_report_json_get(S, "grid_day", "policies", NULL);
    const json_t *ow = pflex_report_json_get(g, "online-warm", "gap_recovered", NULL);
    if (json_is_number(ow))
        fprintf(f, "On the SRP grid day the controller's learner (online-warm) recovered %.0f %% "
                   "of the gap between equal cuts and the oracle.", 100 * json_number_value(ow));
    fputs("</p>\n", f);
}

static const char css[] =
    "body{font-family:Helvetica,Arial,sans-serif;max-width:1240px;margin:2em auto;padding:0 1em;"
    "color:#222;line-height:1.45}\n"
    "h1{font-size:1.7em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ccc}\n"
    "figure{margin:1.2em 0}figure svg{width:100%;height:auto;display:block}\n"
    "figcaption{color:#555;font-size:.92em;margin-top:.3em}\n"
    "table.num{border-collapse:collapse;margin:1em 0}table.num td,table.num th{padding:.25em .7em;"
    "border-bottom:1px solid #e4e4e4;text-align:right}table.num td:first-child,"
    "table.num th:first-child{text-align:left}table.num th{background:#f3f3f3}\n"
    "table.runs{font-size:.85em}\n"
    ".nochart{border:2px dashed #bbb;padding:2em;text-align:center;color:#666;background:#fafafa}\n"
    ".note{background:#fff7e0;border-left:4px solid #e0b040;padding:.6em 1em}\n"
    ".meta{color:#555}code{background:#f2f2f2;padding:0 .25em}\n";

int pflex_report_write_html(const struct pflex_report *r, const json_t *summary,
                            const char *gnuplot, FILE *out, int *charts, pflex_error_t *err)
{
    struct ctx c = {.r = r, .summary = summary, .gnuplot = gnuplot, .out = out};
    FILE *f = out;
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<title>pflex study: power flexibility of the built-in fleet</title>\n"
               "<style>\n%s</style>\n</head>\n<body>\n", css);
    json_int_t main_n = json_integer_value(pflex_report_json_get(summary, "counts", "main", NULL));
    json_int_t val_n = json_integer_value(pflex_report_json_get(summary, "counts", "validation", NULL));
    json_int_t h100_n = json_integer_value(pflex_report_json_get(summary, "counts", "h100_matched", NULL));
    fprintf(f, "<h1>Power flexibility of the built-in training fleet</h1>\n"
               "<p class=\"meta\">pflex study, seed %llu: %zu simulated sweep groups (%lld H200 "
               "headline, %lld H200 validation, %lld H100 matched), each run for 30 minutes at "
               "every cap of its grid (%d run%s per cap, sampled every 5 s, top-10 %% aggregate); "
               "%.1f s.</p>\n",
            (unsigned long long)r->seed, r->nruns, (long long)main_n, (long long)val_n,
            (long long)h100_n, r->repeats, r->repeats == 1 ? "" : "s", r->runtime_s);
    brief_section(&c);
    fputs("<p>The Power Flexibility Index (PFI) here is the seed study's ratio PFI: for each "
          "capped run, the fractional power reduction over the fractional throughput loss "
          "against the highest cap, averaged over the group's caps (docs/contract.md §2). Above 1 a job "
          "is inelastic (throughput falls slower than power), 1 is proportional, below 1 "
          "elastic. It depends on the cap grid, which is the study's for every group.</p>\n", f);
    fputs("<h2>The fleet</h2>\n<p>Every run is a training job described by what its owner "
          "knows (model shape, batch, parallelism, GPU kind and count) and simulated from first "
          "principles; docs/study.md describes the catalogue. H200 main runs by model family:</p>\n",
          f);
    fleet_table(&c);
    study_section(&c);
    fputs("<h2>PFI by group</h2>\n", f);
    headline_table(&c);
    fputs("<h2>Throughput under a power cap, by model family</h2>\n", f);
    chart_curves(&c);
    chart_loss(&c);
    fputs("<h2>PFI distributions</h2>\n", f);
    {
        struct category cat[] = {
            {"Dense", by_arch, "dense"}, {"MoE", by_arch, "moe"},
            {"Pretraining", by_task, "pretrain"}, {"Full fine-tuning", by_task, "finetune"},
            {"LoRA fine-tuning", by_task, "lora"},
        };
        char cap[400], v[5][16];
        snprintf(cap, sizeof cap, "Boxes span the middle half of the runs, the bar is the median, "
                 "whiskers reach 1.5 interquartile ranges; each dot is one run. Medians: dense %s, "
                 "MoE %s; pretraining %s, full fine-tuning %s, LoRA %s.",
                 num(median_of(summary, "by_arch", "dense"), v[0], 16, "%.3f"),
                 num(median_of(summary, "by_arch", "moe"), v[1], 16, "%.3f"),
                 num(median_of(summary, "by_task", "pretrain"), v[2], 16, "%.3f"),
                 num(median_of(summary, "by_task", "finetune_full"), v[3], 16, "%.3f"),
                 num(median_of(summary, "by_task", "finetune_lora"), v[4], 16, "%.3f"));
        chart_boxes(&c, "PFI by architecture and task (H200 main runs)", cat, 5, cap);
    }
    {
        static const int g[] = {1, 2, 4, 8, 16, 32};
        struct category cat[6];
        for (int i = 0; i < 6; i++) {
            snprintf(cat[i].label, sizeof cat[i].label, "%d GPU%s", g[i], i ? "s" : "");
            cat[i].pick = by_gpus;
            cat[i].arg = &g[i];
        }
        char cap[400], v[6][16];
        static const char *const key[] = {"1", "2", "4", "8", "16", "32"};
        for (int i = 0; i < 6; i++)
            num(median_of(summary, "by_gpus", key[i]), v[i], 16, "%.3f");
        snprintf(cap, sizeof cap, "Medians: %s, %s, %s, %s, %s and %s on 1, 2, 4, 8, 16 and 32 GPUs. "
                 "Jobs on 16 and 32 GPUs span several 8-GPU nodes and also communicate over "
                 "InfiniBand.", v[0], v[1], v[2], v[3], v[4], v[5]);
        chart_boxes(&c, "PFI by number of GPUs per job (H200 main runs)", cat, 6, cap);
    }
    fputs("<h2>The same jobs on H100 and H200</h2>\n", f);
    chart_pairs(&c);
    fputs("<h2>What telemetry says about PFI</h2>\n", f);
    chart_telemetry(&c);
    calib_section(&c);
    alloc_section(&c);
    prediction_section(&c);
    grid_day_section(&c);
    fputs("<h2>Runs and files</h2>\n<p>Files beside this page: <code>sweeps.csv</code> (every "
          "measurement; <code>pflex pfi --metric ratio sweeps.csv</code> recomputes the PFIs), <code>pfi.csv</code> "
          "(one row per sweep group, the input of <code>pflex allocate --pfi</code>), "
          "<code>summary.json</code> (the numbers above; keys in docs/study.md).</p>\n", f);
    runs_table(&c);
    if (c.broken || c.charts < c.tried) {
        fputs("<p class=\"note\">Some charts were not drawn: ", f);
        pflex_report_html_text(f, c.why);
        fputs(".</p>\n", f);
    }
    fputs("</body>\n</html>\n", f);
    if (charts)
        *charts = c.charts;
    if (ferror(f))
        return pflex_error_set(err, "write error");
    return 0;
}
