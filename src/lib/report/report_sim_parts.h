/* report_sim_parts.h — the pieces of `pflex simulate`'s HTML report that
 * report_sim.c puts on its page (private to src/lib/report). */
#ifndef PFLEX_REPORT_SIM_PARTS_H
#define PFLEX_REPORT_SIM_PARTS_H

#include <stdio.h>
#include <jansson.h>
#include "pflex/site/simulate.h"

/* The charts (report_sim_plot.c), each under an <h2>: the limit against
 * each policy's site power (and the field's measured trace, nfield
 * samples of field_t/field_w), the gap recovered, per-job caps and
 * throughput, on a clock-time axis (UTC; the date in the title).  gnuplot
 * NULL or not runnable: a note in place of each.  Returns the charts drawn. */
int pflex_sim_report_charts(const struct pflex_sim_result *r, const double *field_t,
                            const double *field_w, size_t nfield, const char *gnuplot, FILE *out);

/* "What this says" (report_sim_brief.c): a paragraph read off the numbers
 * of r (and of field, the summary's "field" object, or NULL). */
void pflex_sim_report_brief(const struct pflex_sim_result *r, const json_t *field, FILE *out);

/* The per-job table `pflex simulate` prints beside a field day: per job,
 * GPUs, floor, the field's measured T/T0 and each policy's mean T/T0 under
 * a limit, then the site's power share; from field (nothing when NULL). */
void pflex_sim_report_jobs(const struct pflex_sim_result *r, const json_t *field, FILE *out);

#endif
