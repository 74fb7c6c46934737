/* site.c — the site-cut options of allocate and evaluate. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/site.h"
#include "pflex/flex/curve.h"

void cli_site_init(struct cli_site *s)
{
    memset(s, 0, sizeof *s);
    s->src.floor = NAN;
    s->budget_w = NAN;
    s->reduce = NAN;
    s->objective = PFLEX_OBJECTIVE_THROUGHPUT;
}

int cli_site_option(const char *cmd, struct cli_site *s, int c, const char *arg)
{
    switch (c) {
    case 'B':
        return cli_parse_power(cmd, "--budget-w", arg, 0, 1e15, &s->budget_w) < 0 ? -1 : 1;
    case 'R':   /* 0.3 and 30% are the same cut */
        return cli_parse_share(cmd, "--reduce", arg, 0, 1, &s->reduce) < 0 ? -1 : 1;
    case 'y':
        if (!*arg) {
            cli_usage_error(cmd, "--by: a column name is needed");
            return -1;
        }
        s->src.by = arg;
        return 1;
    case 'f':
        return cli_parse_share(cmd, "--floor", arg, 0, 1, &s->src.floor) < 0 ? -1 : 1;
    case 'p': s->src.pfi_path = arg; return 1;
    case 'j': s->src.jobs_path = arg; return 1;
    case 'c': s->src.columns = arg; return 1;
    case CLI_OPT_STRICT: s->src.strict = 1; return 1;
    case 'o':
        if (strcmp(arg, "throughput") == 0)
            s->objective = PFLEX_OBJECTIVE_THROUGHPUT;
        else if (strcmp(arg, "progress") == 0)
            s->objective = PFLEX_OBJECTIVE_PROGRESS;
        else {
            cli_usage_error(cmd, "--objective: '%s' is not throughput or progress", arg);
            return -1;
        }
        return 1;
    default:
        return 0;
    }
}

int cli_site_check(const char *cmd, const struct cli_site *s)
{
    if (isnan(s->budget_w) == isnan(s->reduce)) {
        cli_usage_error(cmd, "give exactly one of --budget-w W and --reduce F");
        return -1;
    }
    return 0;
}

enum { F_CAP, F_POWER, F_TPUT };

/* a JSON array of one field (F_*) of n sweep points */
static json_t *points_json(const struct pflex_sweep_point *p, size_t n, int field)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_real(field == F_CAP ? p[i].cap_w : field == F_POWER
                                           ? p[i].power_w : p[i].throughput));
    return a;
}

void cli_curve_fit_json(json_t *doc, const pflex_alloc_input_t *in)
{
    if (!in->has_curves)
        return;         /* a PFI file alone: no sweep was read */
    json_t *cf = json_object(), *jobs = json_array();
    json_object_set_new(cf, "method", json_string(PFLEX_CURVE_FIT_METHOD));
    json_object_set_new(cf, "fitted", json_integer((json_int_t)in->nfitted));
    json_object_set_new(cf, "flat", json_integer((json_int_t)in->nflat));
    for (size_t k = 0; k < in->nfitted_kept; k++) {
        const struct pflex_alloc_fitted *f = &in->fitted[k];
        json_t *o = json_object();
        json_object_set_new(o, "job", json_string(f->job));
        json_object_set_new(o, "flat", json_boolean(f->flat));
        json_object_set_new(o, "model_min_cap_w", isnan(f->min_cap_w) ? json_null()
                                                                       : json_real(f->min_cap_w));
        json_object_set_new(o, "cap_w", points_json(f->raw, f->n, F_CAP));
        json_object_set_new(o, "raw_power_w", points_json(f->raw, f->n, F_POWER));
        json_object_set_new(o, "power_w", points_json(f->fit, f->n, F_POWER));
        json_object_set_new(o, "raw_throughput", points_json(f->raw, f->n, F_TPUT));
        json_object_set_new(o, "throughput", points_json(f->fit, f->n, F_TPUT));
        json_array_append_new(jobs, o);
    }
    json_object_set_new(cf, "jobs", jobs);
    json_object_set_new(doc, "curve_fit", cf);
    json_t *sk = json_array();
    for (size_t k = 0; k < in->nskipped; k++) {
        json_t *o = json_object();
        json_object_set_new(o, "job", json_string(in->skipped[k]));
        json_object_set_new(o, "why", json_string(in->skipped_why[k]));
        json_array_append_new(sk, o);
    }
    json_object_set_new(doc, "skipped", sk);
}

void cli_curve_fit_note(const pflex_alloc_input_t *in)
{
    if (!in->has_curves || (!in->nfitted && !in->nskipped))
        return;
    size_t flat = in->nflat;
    printf("curve fit: %zu sweep job%s read through isotonic regression of power and throughput "
           "on the cap (%zu flat: no cap binds); %zu bad job%s skipped; --json lists raw and "
           "fitted points\n", in->nfitted, in->nfitted == 1 ? "" : "s", flat, in->nskipped,
           in->nskipped == 1 ? "" : "s");
}

int cli_site_load(const char *cmd, struct cli_site *s, pflex_alloc_input_t **in,
                  struct pflex_alloc_problem *prob)
{
    pflex_error_t err;
    if (pflex_alloc_input_read(&s->src, in, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        return -cli_input_exit(&err);
    }
    if (!s->warned)
        cli_print_warnings(cmd, (*in)->warnings);
    s->warned = 1;
    memset(prob, 0, sizeof *prob);
    prob->njobs = (*in)->njobs;
    prob->jobs = (*in)->jobs;
    prob->objective = s->objective;
    prob->budget_w = isnan(s->budget_w) ? (1.0 - s->reduce) * pflex_alloc_baseline_w(prob)
                                        : s->budget_w;
    return 0;
}
