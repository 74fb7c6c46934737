/* report_sim.c — the HTML report of `pflex simulate` (pflex/site/simulate.h):
 * what it says (report_sim_brief.c), the summary table, the per-job table
 * beside a field day, then the charts (report_sim_plot.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/report/report.h"
#include "pflex/site/simulate.h"
#include "lib/report/report_sim_parts.h"

/* A share as "12.3%", or an em dash where it is not given (NaN). */
/* Seconds, or a dash when there are none. */
static void s_cell(FILE *out, double v)
{
    if (isnan(v))
        fputs("<td>&mdash;</td>", out);
    else
        fprintf(out, "<td>%.1f</td>", v);
}

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
    /* how fast each policy followed the falls of the limit */
    fprintf(out, "<p>Time to target (<code>docs/time-to-target.md</code>): from each fall of the limit to the "
                 "period from which the site stays under it, to a period's resolution.</p>\n"
                 "<table><tr><th>policy</th><th>events</th><th>met</th><th>p50 s</th><th>p99 s</th>"
                 "<th>worst s</th></tr>\n");
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        const struct pflex_sim_summary *s = &r->pol[p];
        if (!(r->ran & (1u << p)))
            continue;
        fprintf(out, "<tr><td>%s</td><td>%zu</td><td>%zu</td>", pflex_sim_policy_name((enum pflex_sim_policy)p),
                s->ttt_events, s->ttt_met);
        s_cell(out, s->ttt_p50_s);
        s_cell(out, s->ttt_p99_s);
        s_cell(out, s->ttt_worst_s);
        fputs("</tr>\n", out);
    }
    fprintf(out, "</table>\n");
}

int pflex_sim_report_html(const struct pflex_sim_result *r, const char *title, const char *notes,
                          const json_t *field, const double *field_t, const double *field_w,
                          size_t nfield, const char *gnuplot, FILE *out, int *charts,
                          pflex_error_t *err)
{
    fprintf(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pflex simulate</title>\n"
                 "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}"
                 "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
                 "th{background:#eee}td:first-child,th:first-child{text-align:left}"
                 "figure{margin:0}figure svg{width:100%%;height:auto}.caption{color:#555;font-size:.92em}"
                 "td.under{background:#fde0dc}</style></head><body>\n<h1>");
    pflex_report_html_text(out, title);
    fprintf(out, "</h1>\n");
    pflex_sim_report_brief(r, field, out);
    fprintf(out, "<h2>The run</h2>\n<p>");
    pflex_report_html_text(out, notes);
    fprintf(out, "</p>\n");
    summary_html(r, out);

    pflex_sim_report_jobs(r, field, out);
    int nch = pflex_sim_report_charts(r, field_t, field_w, nfield, gnuplot, out);
    fprintf(out, "</body></html>\n");
    if (charts)
        *charts = nch;
    if (ferror(out))
        return pflex_error_sys(err, "report: write error");
    return 0;
}
