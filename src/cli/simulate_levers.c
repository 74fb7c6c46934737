/* simulate_levers.c — pflex simulate --levers: an event with levers beyond
 * caps (pause, checkpoint-and-stop, resize), tiers read as contracts, the
 * field demonstration's four policies beside pflex's plan and the oracle
 * (pflex/site/levers.h; docs/levers.md). */
#include "cli/simulate_levers.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "pflex/io/outfile.h"
#include "pflex/sim/model.h"
#include "pflex/site/levers.h"

static const char cmd[] = "simulate";

void sim_levers_defaults(struct sim_levers_opts *lv)
{
    *lv = (struct sim_levers_opts){.levers = PFLEX_LEVER_ALL, .period_s = 300, .ckpt_s = 120, .restart_s = 300,
                                   .max_pause_s = 600, .resize_eff = 0.95, .plan_time_s = 2,
                                   .oracle_time_s = 30, .node_gpus = 8, .gpu_kind = "A100-SXM4-40GB"};
}

static int dur(const char *opt, const char *s, double *out)
{
    pflex_error_t e;
    if (pflex_target_parse_duration(s, out, &e) < 0 || !isfinite(*out) || *out < 0) {
        cli_usage_error(cmd, "%s: not a duration: '%s'", opt, s);
        return -1;
    }
    return 0;
}

int sim_levers_option(int c, const char *arg, struct sim_levers_opts *lv)
{
    switch (c) {
    case 1100:
        if (pflex_lever_parse(arg, &lv->levers) < 0)
            return cli_usage_error(cmd, "--levers: a list of cap, pause, stop, resize (or all), not '%s'", arg);
        lv->on = 1;
        break;
    case 1101:
        if (strcmp(arg, "floor") && strcmp(arg, "contract"))
            return cli_usage_error(cmd, "--flex-as: floor or contract, not '%s'", arg);
        lv->contract = !strcmp(arg, "contract");
        break;
    case 1102:
        if (dur("--lever-period", arg, &lv->period_s) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        if (!(lv->period_s >= 1))
            return cli_usage_error(cmd, "--lever-period: at least 1s");
        break;
    case 1103: if (dur("--ckpt", arg, &lv->ckpt_s) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 1104: if (dur("--restart", arg, &lv->restart_s) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 1105: if (dur("--max-pause", arg, &lv->max_pause_s) < 0) return PFLEX_EXIT_BAD_INPUT; break;
    case 1106:
        if (cli_parse_double(cmd, "--resize-eff", arg, 0.01, 1, &lv->resize_eff) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case 1107:
        if (cli_parse_double(cmd, "--node-gpus", arg, 1, 64, &lv->node_gpus) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case 1108:
        if (!pflex_gpu_kind_find(arg))
            return cli_usage_error(cmd, "--gpu-kind: unknown GPU kind '%s' (pflex sweep --list-kinds)", arg);
        lv->gpu_kind = arg;
        break;
    case 1109: lv->deepest = 1; break;
    case 1110:
        if (cli_parse_double(cmd, "--plan-time", arg, 0.01, 600, &lv->plan_time_s) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case 1111:
        if (cli_parse_double(cmd, "--oracle-time", arg, 0.01, 3600, &lv->oracle_time_s) < 0)
            return PFLEX_EXIT_BAD_INPUT;
        break;
    default: return cli_usage_error(cmd, "internal: lever option %d", c);
    }
    return -1;
}

/* A job's resize sizes: three quarters, half and a quarter of its GPUs in
 * whole nodes, distinct and under its size. */
static void sizes_of(struct pflex_horizon_job *h, int node)
{
    static const double share[] = {0.75, 0.5, 0.25};
    h->nsizes = 0;
    for (size_t i = 0; i < 3; i++) {
        int g = (int)floor(share[i] * h->gpus / node) * node;
        if (g < node || g >= h->gpus || (h->nsizes && h->sizes[h->nsizes - 1] == g))
            continue;
        h->sizes[h->nsizes++] = g;
    }
}

static json_t *num(double x) { return cli_json_real(x); }

static json_t *summary_json(const struct pflex_levers_result *r, int p, const struct sim_levers_input *in)
{
    const struct pflex_levers_summary *s = &r->pol[p];
    json_t *o = json_object();
    json_object_set_new(o, "progress_s", num(s->progress_s));
    json_object_set_new(o, "lost_pct_of_site", num(s->lost_pct));
    json_object_set_new(o, "vs_plan_pct_of_site", num(s->vs_plan_pct));
    json_object_set_new(o, "vs_bound_pct_of_site", num(s->vs_bound_pct));
    json_object_set_new(o, "periods_over", json_integer((json_int_t)s->periods_over));
    json_object_set_new(o, "periods_over_feasible", json_integer((json_int_t)s->periods_over_feasible));
    json_object_set_new(o, "max_over_w", num(s->max_over_w));
    json_object_set_new(o, "contracts_kept", json_integer((json_int_t)s->contracts_kept));
    json_object_set_new(o, "contracts_broken", json_integer((json_int_t)s->contracts_broken));
    json_object_set_new(o, "floor_breaches", json_integer((json_int_t)s->floor_breaches));
    json_object_set_new(o, "worst_budget_use", num(s->worst_budget_use));
    json_object_set_new(o, "pauses", json_integer((json_int_t)s->pauses));
    json_object_set_new(o, "stops", json_integer((json_int_t)s->stops));
    json_object_set_new(o, "resizes", json_integer((json_int_t)s->resizes));
    json_object_set_new(o, "plans", json_integer((json_int_t)s->plans));
    json_object_set_new(o, "plan_s_max", num(s->plan_s_max));
    json_object_set_new(o, "plan_s_mean", num(s->plan_s_mean));
    json_object_set_new(o, "energy_kwh", num(s->energy_kwh));
    json_t *jl = json_array();
    for (size_t j = 0; j < in->njobs; j++)
        json_array_append_new(jl, num(s->job_loss[j]));
    json_object_set_new(o, "job_loss", jl);
    return o;
}

static json_t *levers_doc(const struct sim_levers_opts *lv, const struct sim_levers_input *in,
                          const struct pflex_levers_job *jobs, const struct pflex_levers_result *r, double idle_w)
{
    json_t *d = json_object();
    json_object_set_new(d, "day", in->day ? json_string(in->day) : json_null());
    json_object_set_new(d, "seed", json_integer((json_int_t)in->seed));
    json_object_set_new(d, "flex_as", json_string(lv->contract ? "contract" : "floor"));
    json_object_set_new(d, "period_s", num(r->period_s));
    json_object_set_new(d, "event_start_s", num(r->event_start_s));
    json_object_set_new(d, "event_s", num(r->event_s));
    json_object_set_new(d, "periods", json_integer((json_int_t)r->nperiods));
    json_object_set_new(d, "baseline_w", num(in->baseline_w));
    double lmin = INFINITY, lmax = 0;
    for (size_t t = 0; t < r->nperiods; t++) {
        if (r->limit_w[t] < lmin)
            lmin = r->limit_w[t];
        if (r->limit_w[t] > lmax)
            lmax = r->limit_w[t];
    }
    json_object_set_new(d, "limit_min_w", num(lmin));
    json_object_set_new(d, "limit_max_w", num(lmax));
    json_object_set_new(d, "deepest_w", lv->deepest ? num(r->deepest_w) : json_null());
    json_object_set_new(d, "deepest_cut", lv->deepest ? num(1 - r->deepest_frac) : json_null());
    json_object_set_new(d, "idle_w", num(idle_w));
    json_object_set_new(d, "ckpt_s", num(lv->ckpt_s));
    json_object_set_new(d, "restart_s", num(lv->restart_s));
    json_object_set_new(d, "max_pause_s", num(lv->max_pause_s));
    json_object_set_new(d, "resize_eff", num(lv->resize_eff));
    json_object_set_new(d, "site_progress_s", num(r->site_progress_s));
    json_object_set_new(d, "bound_progress_s", num(r->bound_progress_s));
    json_object_set_new(d, "plan_vs_bound_pct_of_site", num(r->pol[PFLEX_LV_PLAN].vs_bound_pct));
    json_object_set_new(d, "oracle_gap_pct_of_site", num(r->oracle_gap_pct));
    json_object_set_new(d, "oracle_optimal", json_boolean(r->oracle_optimal));
    json_object_set_new(d, "milp_rows", json_integer((json_int_t)r->oracle_rows));
    json_object_set_new(d, "milp_cols", json_integer((json_int_t)r->oracle_cols));
    json_object_set_new(d, "milp_ints", json_integer((json_int_t)r->oracle_ints));
    json_object_set_new(d, "periods_gave_way", json_integer((json_int_t)r->periods_gave_way));
    json_object_set_new(d, "gave_way_max_w", num(r->gave_way_max_w));
    json_t *jj = json_array();
    for (size_t j = 0; j < in->njobs; j++) {
        const struct pflex_horizon_job *h = &jobs[j].hz;
        json_t *o = json_object();
        json_object_set_new(o, "job", json_string(jobs[j].name));
        json_object_set_new(o, "gpus", json_integer(h->gpus));
        json_object_set_new(o, "loss_budget", num(h->loss_budget));
        json_object_set_new(o, "floor", num(h->floor));
        json_array_append_new(jj, o);
    }
    json_object_set_new(d, "jobs", jj);
    json_t *pols = json_object();
    for (int p = 0; p < PFLEX_LV_NPOL; p++)
        if (r->pol[p].ran)
            json_object_set_new(pols, pflex_levers_policy_name((enum pflex_levers_policy)p), summary_json(r, p, in));
    json_object_set_new(d, "policies", pols);
    return d;
}

static void print_table(const struct sim_levers_opts *lv, const struct sim_levers_input *in,
                        const struct pflex_levers_job *jobs, const struct pflex_levers_result *r)
{
    printf("levers: %zu periods of %.0f s (%.2f h), tiers read as %s\n", r->nperiods, r->period_s,
           r->event_s / 3600, lv->contract ? "contracts (loss budget over the event)" : "per-period floors");
    if (lv->deepest)
        printf("deepest limit the contracts allow: %.0f W, a cut of %.2f %% of the %.0f W baseline\n",
               r->deepest_w, 100 * (1 - r->deepest_frac), in->baseline_w);
    printf("bound (LP relaxation): %.4g progress-s; plan %.3f %% and oracle %.3f %% of the site's progress "
           "under it%s\n", r->bound_progress_s, r->pol[PFLEX_LV_PLAN].vs_bound_pct, r->oracle_gap_pct,
           r->oracle_optimal ? "" : " (oracle stopped at its time limit)");
    if (r->periods_gave_way)
        printf("the limit gave way in %zu periods (by up to %.0f W): no plan within the contracts meets it\n",
               r->periods_gave_way, r->gave_way_max_w);
    printf("\n%-18s %8s %8s %8s %6s %6s %5s %5s %6s %5s %5s %7s\n", "policy", "lost%", "vs_plan", "vs_bound",
           "over", "overF", "kept", "broke", "pauses", "stops", "resz", "plan_s");
    for (int p = 0; p < PFLEX_LV_NPOL; p++) {
        const struct pflex_levers_summary *s = &r->pol[p];
        if (!s->ran)
            continue;
        printf("%-18s %8.3f %8.3f %8.3f %6zu %6zu %5zu %5zu %6zu %5zu %5zu %7.3f\n",
               pflex_levers_policy_name((enum pflex_levers_policy)p), s->lost_pct, s->vs_plan_pct, s->vs_bound_pct,
               s->periods_over, s->periods_over_feasible, s->contracts_kept, s->contracts_broken, s->pauses,
               s->stops, s->resizes, s->plan_s_max);
    }
    printf("\njob loss over the event (share of its progress) against its budget:\n%-30s %6s", "job", "budget");
    for (int p = 0; p < PFLEX_LV_NPOL; p++)
        if (r->pol[p].ran)
            printf(" %10.10s", pflex_levers_policy_name((enum pflex_levers_policy)p));
    putchar('\n');
    for (size_t j = 0; j < in->njobs; j++) {
        const struct pflex_horizon_job *h = &jobs[j].hz;
        double b = isfinite(h->loss_budget) ? h->loss_budget : 1 - h->floor;
        printf("%-30.30s %6.3f", jobs[j].name, b);
        for (int p = 0; p < PFLEX_LV_NPOL; p++)
            if (r->pol[p].ran)
                printf(" %10.4f", r->pol[p].job_loss[j]);
        putchar('\n');
    }
}

static int write_summary(const char *dir, json_t *doc, pflex_error_t *err)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return pflex_error_sys(err, "%s: cannot create: %s", dir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/levers.json", dir);
    pflex_outfile_t *of;
    if (pflex_outfile_begin(path, NULL, &of, err) < 0)
        return -1;
    json_dumpf(doc, pflex_outfile_stream(of), CLI_JSON_FLAGS);
    fputc('\n', pflex_outfile_stream(of));
    return pflex_outfile_commit(of, err);
}

int sim_levers_run(const struct sim_levers_opts *lv, const struct sim_levers_input *in)
{
    const struct pflex_gpu_kind *gk = pflex_gpu_kind_find(lv->gpu_kind);
    if (!gk) {
        cli_error(cmd, "--gpu-kind: unknown GPU kind '%s'", lv->gpu_kind);
        return PFLEX_EXIT_BAD_INPUT;
    }
    if (!in->njobs) {
        cli_error(cmd, "--levers runs the jobs given (a day's, a sweep's or --jobs'), not a drawn fleet");
        return PFLEX_EXIT_BAD_INPUT;
    }
    struct pflex_levers_job *jobs = calloc(in->njobs, sizeof *jobs);
    if (!jobs) {
        cli_error(cmd, "out of memory");
        return PFLEX_EXIT_INTERNAL;
    }
    double base = in->baseline_w;
    if (!(base > 0)) {
        base = in->other_w;
        for (size_t j = 0; j < in->njobs; j++)
            base += in->jobs[j].gpus * in->kinds[in->jobs[j].kind].power_w[0];
    }
    for (size_t j = 0; j < in->njobs; j++) {
        const struct pflex_sim_job *sj = &in->jobs[j];
        struct pflex_horizon_job *h = &jobs[j].hz;
        jobs[j].name = sj->name;
        jobs[j].kind = &in->kinds[sj->kind];
        jobs[j].node_gpus = (int)lv->node_gpus;
        h->gpus = sj->gpus;
        h->weight = sj->weight;
        h->idle_w = gk->idle_w;
        h->levers = lv->levers;
        double fl = sj->floor > 0 ? sj->floor : 0;
        /* a tier as the demonstration read it: Flex = 1 - floor over the event */
        h->loss_budget = lv->contract ? 1 - fl : NAN;
        h->floor = lv->contract ? 0 : fl;
        h->max_pause_s = lv->max_pause_s;
        h->ckpt_s = lv->ckpt_s;
        h->restart_s = lv->restart_s;
        h->resize_eff = lv->resize_eff;
        sizes_of(h, (int)lv->node_gpus);
    }
    struct pflex_levers_config cfg = {
        .njobs = in->njobs, .jobs = jobs, .start_s = in->start_s, .duration_s = in->duration_s,
        .period_s = lv->period_s, .targets = in->targets, .baseline_w = base, .other_w = in->other_w,
        .noise_tput = in->noise_tput, .z = 2, .seed = in->seed, .plan_time_s = lv->plan_time_s,
        .oracle_time_s = lv->oracle_time_s, .deepest = lv->deepest,
    };
    struct pflex_levers_result r;
    pflex_error_t err;
    int rc = PFLEX_EXIT_OK;
    if (pflex_levers_run(&cfg, &r, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        free(jobs);
        return cli_input_exit(&err);
    }
    struct sim_levers_input in2 = *in;
    in2.baseline_w = base;
    json_t *doc = levers_doc(lv, &in2, jobs, &r, gk->idle_w);
    if (r.periods_gave_way)
        fprintf(stderr, "pflex simulate: warning: in %zu periods no plan within the contracts meets the limit "
                "(by up to %.0f W): the limit gives way there, counted apart\n", r.periods_gave_way, r.gave_way_max_w);
    if (in->out_dir && write_summary(in->out_dir, doc, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        rc = cli_input_exit(&err);
    } else if (in->json) {
        if (cli_json_print(doc) < 0)
            rc = PFLEX_EXIT_INTERNAL;
        doc = NULL;
    } else
        print_table(lv, &in2, jobs, &r);
    if (doc)
        json_decref(doc);
    pflex_levers_result_fini(&r, in->njobs);
    free(jobs);
    return rc;
}
