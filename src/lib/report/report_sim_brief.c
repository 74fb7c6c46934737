/* report_sim_brief.c — what an operator reads first in `pflex simulate`'s
 * report: a paragraph read off the run's numbers (the limit, which policy
 * recovered most, who went over the limit or under a floor), and the
 * per-job table the command prints beside a field day. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pflex/report/report.h"
#include "lib/report/report_sim_parts.h"

static int ran(const struct pflex_sim_result *r, int p)
{
    return (r->ran & (1u << p)) != 0;
}

static const char *name(int p)
{
    return pflex_sim_policy_name((enum pflex_sim_policy)p);
}

/* "a", "a and b", "a, b and c": the k-th of n items' separator. */
static const char *sep(int k, int n)
{
    return k == 0 ? "" : k == n - 1 ? " and " : ", ";
}

void pflex_sim_report_brief(const struct pflex_sim_result *r, const json_t *field, FILE *out)
{
    size_t limited = 0;
    double deepest = INFINITY;
    for (size_t k = 0; k < r->nperiods; k++)
        if (isfinite(r->limit_w[k])) {
            limited++;
            deepest = fmin(deepest, r->limit_w[k]);
        }
    fputs("<h2 id=\"brief\">What this says</h2>\n<p>", out);
    if (!limited) {
        fprintf(out, "No limit was in force in the %zu periods simulated: every policy ran its "
                     "jobs at their largest caps, and there is no gap to recover.</p>\n",
                r->nperiods);
        return;
    }
    double secs = (double)limited * r->period_s;
    fprintf(out, "A limit was in force for %zu of %zu periods (%.0f h %02.0f min); at its deepest "
                 "it allowed %.1f kW",
            limited, r->nperiods, floor(secs / 3600), floor(fmod(secs, 3600) / 60), deepest / 1000);
    if (r->baseline_w > 0)
        fprintf(out, ", %.0f %% of the site's baseline (%.1f kW)", 100 * deepest / r->baseline_w,
                r->baseline_w / 1000);
    fputs(". ", out);
    /* the best policy that does not know the curves: what a site can expect */
    int best = -1;
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (p != PFLEX_SIM_ORACLE && p != PFLEX_SIM_EQUAL && ran(r, p) && isfinite(r->pol[p].gap_recovered)
            && (best < 0 || r->pol[p].gap_recovered > r->pol[best].gap_recovered))
            best = p;
    if (best >= 0) {
        fprintf(out, "Of the policies that do not know the curves, <b>%s</b> recovered most of "
                     "what the oracle gains over equal cuts: %.1f %% of the gap",
                name(best), 100 * r->pol[best].gap_recovered);
        if (isfinite(r->pol[best].settled_mean))
            fprintf(out, " (%.1f %% period by period once settled)", 100 * r->pol[best].settled_mean);
        fputs(". ", out);
        int nworse = 0, k = 0;
        for (int p = 0; p < PFLEX_SIM_NPOL; p++)
            nworse += ran(r, p) && r->pol[p].gap_recovered < 0;
        for (int p = 0; p < PFLEX_SIM_NPOL && nworse; p++)
            if (ran(r, p) && r->pol[p].gap_recovered < 0) {
                fprintf(out, "%s%s (%.0f %%)", sep(k, nworse), name(p), 100 * r->pol[p].gap_recovered);
                k++;
            }
        if (nworse)
            fprintf(out, " did worse than equal cuts: %s more of the objective than cutting every "
                         "job alike. ", nworse == 1 ? "its plans lost" : "their plans lost");
    } else if (ran(r, PFLEX_SIM_EQUAL) && ran(r, PFLEX_SIM_ORACLE)
               && !isfinite(r->pol[PFLEX_SIM_ORACLE].gap_recovered))
        fputs("The oracle did no better than equal cuts here: the jobs' curves leave nothing to "
              "gain by cutting some more than others. ", out);
    /* the guarantee and the floors */
    int nover = 0, nbreach = 0;
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        nover += ran(r, p) && r->pol[p].periods_above > 0;
        nbreach += ran(r, p) && r->pol[p].floor_breaches > 0;
    }
    if (!nover)
        fputs("No policy drew more than the limit once its ramp was over. ", out);
    else {
        /* one sentence however many: the names, the most periods, the most watts */
        size_t most = 0;
        double over = 0;
        int k = 0;
        for (int p = 0; p < PFLEX_SIM_NPOL; p++)
            if (ran(r, p) && r->pol[p].periods_above > 0) {
                fprintf(out, "%s%s", sep(k++, nover), name(p));
                most = r->pol[p].periods_above > most ? r->pol[p].periods_above : most;
                over = fmax(over, r->pol[p].max_over_w);
            }
        fprintf(out, " drew more than the limit after its ramp, in %s%zu periods (at most %.0f W "
                     "over). ", nover > 1 ? "up to " : "", most, over);
    }
    if (r->periods_infeasible)
        fprintf(out, "In %zu periods the limit was under what the jobs draw at their lowest caps: "
                     "no policy could meet it. ", r->periods_infeasible);
    if (!nbreach)
        fputs("Every job stayed at or above its floor under every policy. ", out);
    else
        for (int p = 0, k = 0; p < PFLEX_SIM_NPOL; p++)
            if (ran(r, p) && r->pol[p].floor_breaches > 0) {
                k++;
                fprintf(out, "%s%s left a job under its floor in %zu of %zu job-periods (by at most "
                             "%.3f of T/T0)%s",
                        k > 1 ? "; " : "", name(p), r->pol[p].floor_breaches, r->pol[p].floor_periods,
                        r->pol[p].floor_worst, k == nbreach ? ". " : "");
            }
    /* beside the field: the job the best policy asked most of */
    const json_t *jobs = json_object_get(field, "jobs");
    if (best >= 0 && json_array_size(jobs)) {
        size_t i, worst = 0;
        double wv = INFINITY;
        const json_t *j;
        json_array_foreach(jobs, i, j) {
            const json_t *v = json_object_get(json_object_get(j, "policies"), name(best));
            if (json_is_number(v) && json_number_value(v) < wv) {
                wv = json_number_value(v);
                worst = i;
            }
        }
        const char *jn = json_string_value(json_object_get(json_array_get(jobs, worst), "job"));
        if (isfinite(wv) && jn) {
            fprintf(out, "Under %s the job that gave up most was <code>", name(best));
            pflex_report_html_text(out, jn);
            fprintf(out, "</code>, at %.3f of its throughput on average while limited (the table "
                         "below has every job). ", wv);
        }
        const json_t *share = json_object_get(field, "event_power_share");
        if (json_is_number(share))
            fprintf(out, "The field demonstration's own site drew %.3f of its baseline over the "
                         "event.", json_number_value(share));
    }
    fputs("</p>\n", out);
}

void pflex_sim_report_jobs(const struct pflex_sim_result *r, const json_t *field, FILE *out)
{
    const json_t *jobs = json_object_get(field, "jobs");
    if (!json_array_size(jobs))
        return;
    fputs("<h2 id=\"jobs\">Per job, beside the field demonstration</h2>\n"
          "<p>Each job's mean throughput as a share of its baseline (T/T0) over the periods with a "
          "limit, under each policy; <i>measured</i> is the field's own reading of the event "
          "where it has one.  The last row is the site's mean power over the event as a share of "
          "its baseline.</p>\n<table class=\"jobs\"><tr><th>job</th><th>GPUs</th><th>floor</th>"
          "<th>measured</th>", out);
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (ran(r, p))
            fprintf(out, "<th>%s</th>", name(p));
    fputs("</tr>\n", out);
    size_t i;
    const json_t *j;
    json_array_foreach(jobs, i, j) {
        const char *jn = json_string_value(json_object_get(j, "job"));
        const json_t *m = json_object_get(j, "measured"), *pols = json_object_get(j, "policies");
        double floor_v = json_number_value(json_object_get(j, "floor"));
        fputs("<tr><td>", out);
        pflex_report_html_text(out, jn ? jn : "?");
        fprintf(out, "</td><td>%lld</td><td>%.2f</td>",
                (long long)json_integer_value(json_object_get(j, "gpus")), floor_v);
        if (json_is_number(m))
            fprintf(out, "<td>%.3f</td>", json_number_value(m));
        else
            fputs("<td>–</td>", out);
        for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
            if (!ran(r, p))
                continue;
            const json_t *v = json_object_get(pols, name(p));
            if (!json_is_number(v))
                fputs("<td>–</td>", out);
            else      /* under the floor on average: marked, the floors being the promise */
                fprintf(out, json_number_value(v) < floor_v ? "<td class=\"under\">%.3f</td>" : "<td>%.3f</td>",
                        json_number_value(v));
        }
        fputs("</tr>\n", out);
    }
    fputs("<tr><td>site power / baseline</td><td></td><td></td><td>", out);
    const json_t *share = json_object_get(field, "event_power_share");
    if (json_is_number(share))
        fprintf(out, "%.3f", json_number_value(share));
    fputs("</td>", out);
    const json_t *ps = json_object_get(field, "policy_event_power_share");
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (ran(r, p)) {
            const json_t *v = json_object_get(ps, name(p));
            if (json_is_number(v))
                fprintf(out, "<td>%.3f</td>", json_number_value(v));
            else
                fputs("<td>–</td>", out);
        }
    fputs("</tr>\n</table>\n", out);
}
