/* report_sim.c — the HTML report of `pflex simulate` (pflex/site/simulate.h):
 * target against site power per policy (and the field's measured trace
 * where given), the gap recovered over time, per-job caps and throughput,
 * each a gnuplot SVG; the summary table beside them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/report/report.h"
#include "pflex/site/simulate.h"

struct sbuf {
    char *s;
    size_t n, cap;
    int oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (m < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->n + (size_t)m < b->cap) {
            b->n += (size_t)m;
            return;
        }
        size_t nc = b->cap ? b->cap * 2 : 65536;
        while (nc < b->n + (size_t)m + 1)
            nc *= 2;
        char *ns = realloc(b->s, nc);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = nc;
    }
}

/* Rows of the charts: at most ~1500 points per line, each the mean of
 * its periods (power: the largest, so that an overshoot shows). */
static size_t stride_of(size_t n)
{
    return n > 1500 ? (n + 1499) / 1500 : 1;
}

static void html_escape(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
}

static void chart(FILE *out, const char *gnuplot, struct sbuf *sc, const char *title, int *charts)
{
    char *svg = NULL;
    pflex_error_t e;
    fprintf(out, "<h2>");
    html_escape(out, title);
    fprintf(out, "</h2>\n");
    if (!sc->oom && gnuplot && pflex_report_gnuplot_svg(gnuplot, sc->s, sc->n, &svg, &e) == 0) {
        fputs(svg, out);
        (*charts)++;
    } else
        fprintf(out, "<p><i>chart not drawn (%s)</i></p>\n", sc->oom ? "out of memory" : "gnuplot not available");
    free(svg);
    free(sc->s);
    memset(sc, 0, sizeof *sc);
}

/* A share as "12.3%", or an em dash where it is not given (NaN). */
static void pct_cell(FILE *out, double v, const char *fmt)
{
    if (isnan(v))
        fputs("<td>&mdash;</td>", out);
    else {
        fputs("<td>", out);
        fprintf(out, fmt, v);
        fputs("%</td>", out);
    }
}

/* The summary: the event and what could be met in it, then per policy the
 * objective lost against the oracle and equal cuts as a share of the
 * site's over the event first, the gap's share only where it is given. */
static void summary_html(const struct pflex_sim_result *r, FILE *out)
{
    if (r->event_periods)
        fprintf(out, "<p>The event: %zu periods with a limit under the site's uncapped draw; the "
                     "equal-to-oracle gap is %.3f%% of the site's objective over it%s.</p>\n",
                r->event_periods, r->gap_pct_of_site,
                r->gap_pct_of_site > PFLEX_SIM_GAP_MIN_PCT ? ""
                : " (no share of it is given: under 1%, it would swing on differences inside the readings' "
                  "noise)");
    else
        fprintf(out, "<p>No event: no limit under the site's uncapped draw.</p>\n");
    if (r->periods_infeasible || r->periods_floor_infeasible)
        fprintf(out, "<p><b>Infeasible:</b> %zu periods whose limit is under the jobs' lowest caps summed "
                     "(by up to %.0f W); %zu more where no caps keep every floor under it (by up to %.0f W).</p>\n",
                r->periods_infeasible, r->infeasible_max_w, r->periods_floor_infeasible,
                r->floor_infeasible_max_w);
    fprintf(out, "<table><tr><th>policy</th><th>lost vs oracle (%% of the site, event)</th>"
                 "<th>lost vs equal (%% of the site, event)</th><th>gap recovered (event)</th><th>settled mean</th>"
                 "<th>settled periods &ge; 90%%</th><th>below equal</th><th>periods above (after ramp)</th>"
                 "<th>largest overshoot W</th><th>floor breaches (feasible)</th><th>worst under a floor (T/T0)</th>"
                 "<th>probes</th><th>lost over the run (objective &times; s, probes included)</th>"
                 "<th>energy kWh</th></tr>\n");
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        const struct pflex_sim_summary *s = &r->pol[p];
        if (!(r->ran & (1u << p)))
            continue;
        fprintf(out, "<tr><td>%s</td>", pflex_sim_policy_name((enum pflex_sim_policy)p));
        pct_cell(out, s->lost_vs_oracle_pct_of_site, "%.3f");
        pct_cell(out, s->lost_vs_equal_pct_of_site, "%+.3f");
        pct_cell(out, 100 * s->gap_recovered, "%.1f");
        pct_cell(out, 100 * s->settled_mean, "%.1f");
        fprintf(out, "<td>%zu / %zu</td><td>%zu</td><td>%zu</td><td>%.1f</td><td>%zu / %zu (%zu)</td><td>%.5f</td>"
                     "<td>%zu</td><td>%.0f</td><td>%.1f</td></tr>\n",
                s->settled_over90, s->settled_periods, s->below_equal, s->periods_above, s->max_over_w,
                s->floor_breaches, s->floor_periods, s->floor_breaches_feasible, s->floor_worst, s->probes,
                s->lost_s, s->energy_kwh);
    }
    fprintf(out, "</table>\n");
}

int pflex_sim_report_html(const struct pflex_sim_result *r, const char *title, const char *notes,
                          const double *field_t, const double *field_w, size_t nfield,
                          const char *gnuplot, FILE *out, int *charts, pflex_error_t *err)
{
    int nch = 0;
    size_t N = r->nperiods, st = stride_of(N);
    double t0 = r->start_s;
    fprintf(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pflex simulate</title>\n"
                 "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}"
                 "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
                 "th{background:#eee}td:first-child{text-align:left}</style></head><body>\n<h1>");
    html_escape(out, title);
    fprintf(out, "</h1>\n<p>");
    html_escape(out, notes);
    fprintf(out, "</p>\n");
    summary_html(r, out);

    struct sbuf sc = {0};
    /* 1. target and site power */
    sb_printf(&sc, "set terminal svg size 1000,420 dynamic\nset output\nset key outside right\n"
                   "set xlabel 'hours from start'\nset ylabel 'kW'\nset grid\n$d << EOD\n");
    for (size_t k = 0; k < N; k += st) {
        double lim = INFINITY;
        sb_printf(&sc, "%.5f", ((double)k * r->period_s) / 3600);
        for (size_t q = k; q < k + st && q < N; q++)
            lim = r->limit_w[q] < lim ? r->limit_w[q] : lim;
        sb_printf(&sc, " %s", isfinite(lim) ? "" : "NaN");
        if (isfinite(lim))
            sb_printf(&sc, "%.4f", lim / 1000);
        for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
            if (!(r->ran & (1u << p)))
                continue;
            double mx = 0;
            for (size_t q = k; q < k + st && q < N; q++)
                mx = r->power_w[p][q] > mx ? r->power_w[p][q] : mx;
            sb_printf(&sc, " %.4f", mx / 1000);
        }
        sb_printf(&sc, "\n");
    }
    sb_printf(&sc, "EOD\n");
    if (nfield) {
        sb_printf(&sc, "$f << EOD\n");
        for (size_t i = 0; i < nfield; i++)
            sb_printf(&sc, "%.5f %.4f\n", (field_t[i] - t0) / 3600, field_w[i] / 1000);
        sb_printf(&sc, "EOD\n");
    }
    sb_printf(&sc, "plot $d using 1:2 with lines lw 3 lc rgb 'black' title 'limit'");
    int col = 3;
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (r->ran & (1u << p))
            sb_printf(&sc, ", $d using 1:%d with lines title '%s'", col++,
                      pflex_sim_policy_name((enum pflex_sim_policy)p));
    if (nfield)
        sb_printf(&sc, ", $f using 1:2 with lines lw 2 dt 2 lc rgb 'red' title 'field demonstration (measured)'");
    sb_printf(&sc, "\n");
    chart(out, gnuplot, &sc, "Limit against site power drawn, per policy (largest per point)", &nch);

    /* 2. gap recovered over time */
    int have_gap = (r->ran & (1u << PFLEX_SIM_EQUAL)) && (r->ran & (1u << PFLEX_SIM_ORACLE));
    if (have_gap) {
        const double *oe = r->objective[PFLEX_SIM_EQUAL], *oo = r->objective[PFLEX_SIM_ORACLE];
        sb_printf(&sc, "set terminal svg size 1000,380 dynamic\nset output\nset key outside right\n"
                       "set xlabel 'hours from start'\nset ylabel 'share of the equal-to-oracle gap'\n"
                       "set yrange [-1.5:1.2]\nset grid\n$d << EOD\n");
        for (size_t k = 0; k < N; k += st) {
            sb_printf(&sc, "%.5f", ((double)k * r->period_s) / 3600);
            for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
                if (!(r->ran & (1u << p)))
                    continue;
                double a = 0, b = 0;
                for (size_t q = k; q < k + st && q < N; q++)
                    if (isfinite(r->limit_w[q])) {
                        a += r->objective[p][q] - oe[q];
                        b += oo[q] - oe[q];
                    }
                if (b > 1e-6 * fabs(oo[k]))
                    sb_printf(&sc, " %.5f", a / b);
                else
                    sb_printf(&sc, " NaN");
            }
            sb_printf(&sc, "\n");
        }
        sb_printf(&sc, "EOD\nplot ");
        col = 2;
        for (int p = 0; p < PFLEX_SIM_NPOL; p++)
            if (r->ran & (1u << p)) {
                sb_printf(&sc, "%s$d using 1:%d with lines title '%s'", col > 2 ? ", " : "", col,
                          pflex_sim_policy_name((enum pflex_sim_policy)p));
                col++;
            }
        sb_printf(&sc, "\n");
        chart(out, gnuplot, &sc, "Gap recovered, period by period (while a limit is in force)", &nch);
    }

    /* 3. per-job caps and throughput, the online policy (warm, else cold, else oracle) */
    int pj = (r->ran & (1u << PFLEX_SIM_ONLINE_WARM)) ? PFLEX_SIM_ONLINE_WARM
           : (r->ran & (1u << PFLEX_SIM_ONLINE_COLD)) ? PFLEX_SIM_ONLINE_COLD : PFLEX_SIM_ORACLE;
    if (r->njobs_kept && r->job_cap[pj]) {
        for (int what = 0; what < 2; what++) {
            const double *v = what ? r->job_fraction[pj] : r->job_cap[pj];
            sb_printf(&sc, "set terminal svg size 1000,380 dynamic\nset output\nset key outside right\n"
                           "set xlabel 'hours from start'\nset ylabel '%s'\nset grid\n$d << EOD\n",
                      what ? "throughput / baseline" : "cap per GPU, W");
            for (size_t k = 0; k < N; k += st) {
                sb_printf(&sc, "%.5f", ((double)k * r->period_s) / 3600);
                for (size_t j = 0; j < r->njobs_kept; j++)
                    sb_printf(&sc, " %.5f", v[j * N + k]);
                sb_printf(&sc, "\n");
            }
            sb_printf(&sc, "EOD\nplot ");
            for (size_t j = 0; j < r->njobs_kept; j++)
                sb_printf(&sc, "%s$d using 1:%zu with lines title '%.40s'", j ? ", " : "", j + 2,
                          r->job_name[j]);
            sb_printf(&sc, "\n");
            char t[160];
            snprintf(t, sizeof t, "Per job, %s: %s", pflex_sim_policy_name((enum pflex_sim_policy)pj),
                     what ? "throughput as a share of its baseline (the curves)" : "cap in force");
            chart(out, gnuplot, &sc, t, &nch);
        }
    }
    fprintf(out, "</body></html>\n");
    if (charts)
        *charts = nch;
    if (ferror(out))
        return pflex_error_sys(err, "report: write error");
    return 0;
}
