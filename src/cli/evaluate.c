/* evaluate.c — pflex evaluate: every policy it can run on the input, each
 * plan scored on the measured curves (docs/contract.md §2 "Evaluation", §4). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/site.h"
#include "pflex/flex/alloc.h"

static const char help[] =
"usage: pflex evaluate [SWEEP.csv] (--reduce F | --budget-w W) [options]\n"
"\n"
"Plans a cut of a fraction F of the baseline GPU power with every policy it\n"
"can run on the input (optimal, equal, pfi-weighted, pfi, and proportional\n"
"to each column there is: proportional:weight when the input has a weight\n"
"column, proportional:dram_copy when the sweep has dram_active and\n"
"mem_copy_util, proportional:COL for --by COL; see 'pflex allocate --help')\n"
"and scores every plan on the measured curves: throughput T_j = T0_j (1 -\n"
"L_j(x_j)), the plan's power, and floor violations (jobs whose measured\n"
"throughput falls under their floor).  For each policy, the gap it recovers,\n"
"(T_p - T_equal) / (T_optimal - T_equal) on the objective, shown only where\n"
"optimal beats equal by more than rounding, and the throughput it gains per\n"
"job over equal.  With --objective progress the objective is GPU-weighted\n"
"progress (sum of weight x gpus x T/T0) and no sum of throughputs is shown.\n"
"'-' or no file reads the sweep from stdin.\n"
"\n"
"options:\n"
"  --reduce F          cut a fraction F of the baseline power (0.3 or 30%)\n"
"  --budget-w W        or give the budget (W, kW or MW)\n"
"  --pfi FILE          ratio PFIs for the PFI policies (measured or predicted),\n"
"                      by job; default: each curve's own ratio PFI\n"
"  --jobs FILE         jobs file (job, curve, gpus[, tier, floor, weight])\n"
"  --by COL            also proportional to COL\n"
"  --floor S           service floor (0.9 or 90%) for jobs without one or a tier\n"
"  --objective O       throughput (default) or progress\n"
"  --columns MAP       map foreign sweep headers: name=Header,...\n"
"  --strict            a bad sweep job (no positive baseline, ...) is fatal\n"
"                      (exit 2); by default it is skipped with a warning\n"
"  --json              one JSON document\n"
"  --csv               one CSV row per policy\n"
"  -h, --help          this help\n"
"\n"
"EXAMPLES\n"
"  pflex evaluate sweep.csv --reduce 30%\n"
"  pflex evaluate sweep.csv --reduce 0.2 --pfi predicted.csv --json\n"
"  pflex evaluate dvfs_sweep.csv --columns 'job=Workload,cap_w=GPU power cap,power_w=power per GPU' \\\n"
"      --jobs examples/emerald-event/jobs.csv --reduce 30% --objective progress\n"
"\n"
"exit: 0 ok, 2 bad usage or input, 3 the budget is infeasible within the\n"
"floors and ranges (the scores are still printed).\n";

/* One evaluated policy. */
struct entry {
    char name[80];              /* "optimal", "proportional:weight", ... */
    enum pflex_policy policy;
    struct pflex_alloc_score score;
    int feasible;
    double gap_recovered, per_job;
    double lost_vs_optimal_pct, lost_vs_equal_pct;  /* % of the site's uncapped objective */
};

#define MAX_ENTRIES 8

/* Plan p with a policy and score it on the curves. */
static int run_one(const struct pflex_alloc_problem *p, struct pflex_alloc_plan *plan,
                   struct entry *e, pflex_error_t *err)
{
    if (pflex_alloc_plan(p, e->policy, plan, err) < 0
        || pflex_alloc_score(p, plan->x, &e->score, err) < 0)
        return -1;
    e->feasible = plan->feasible;
    return 0;
}

/* The policies run on one input, and what the printing needs. */
struct evaluation {
    struct entry ent[MAX_ENTRIES];
    size_t ne;
    size_t njobs;
    double base, reduce, budget_w, gap_bound, full;
    double site;                /* the objective with every job uncapped: sum w_j a_j */
    double gap_pct;             /* optimal's objective less equal's, % of site */
    int progress;
    int feasible;               /* optimal's plan meets the budget */
    int tpw_at;                 /* the tpw entry; -1: none */
};

/* The command line into site, *json, *csv: 0, -1 after --help (printed), or
 * an exit code. */
static int evaluate_parse(int argc, char **argv, struct cli_site *site, int *json, int *csv)
{
    static const struct option opts[] = {
        CLI_SITE_OPTIONS,
        {"json", no_argument, NULL, 'J'},
        {"csv", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = "evaluate";
    int c, taken;
    cli_site_init(site);
    *json = *csv = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if ((taken = cli_site_option(cmd, site, c, optarg)) != 0) {
            if (taken < 0)
                return PFLEX_EXIT_BAD_INPUT;
            continue;
        }
        switch (c) {
        case 'J': *json = 1; break;
        case 'C': *csv = 1; break;
        case 'h':
            cli_help(help);
            return -1;
        default: return cli_bad_option(cmd, argv, opts);
        }
    }
    if (*json && *csv)
        return cli_usage_error(cmd, "--csv and --json exclude each other");
    if (cli_site_check(cmd, site) < 0)
        return PFLEX_EXIT_BAD_INPUT;
    if (argc - optind > 1)
        return cli_usage_error(cmd, "one sweep file at most");
    site->src.sweep_path = optind < argc ? argv[optind] : "-";
    return 0;
}

/* A new entry of ev for a policy, named name. */
static struct entry *add_entry(struct evaluation *ev, enum pflex_policy policy, const char *name)
{
    struct entry *e = &ev->ent[ev->ne++];
    memset(e, 0, sizeof *e);
    e->policy = policy;
    snprintf(e->name, sizeof e->name, "%s", name);
    return e;
}

/* Plan and score every policy the input allows (the four fixed ones, then
 * proportional to --by, to weight, to dram_copy) into ev.  Returns 0, or an
 * exit code with the message printed. */
static int evaluate_policies(struct cli_site *site, pflex_alloc_input_t *in,
                             struct pflex_alloc_problem *prob, struct evaluation *ev)
{
    static const enum pflex_policy fixed[4] = {
        PFLEX_POLICY_OPTIMAL, PFLEX_POLICY_EQUAL, PFLEX_POLICY_PFI_WEIGHTED, PFLEX_POLICY_PFI,
    };
    const char *cmd = "evaluate";
    pflex_alloc_input_t *in_dc = NULL;
    double *weights = NULL;
    struct pflex_alloc_plan plan;
    pflex_error_t err;
    char name[80];
    int rc = PFLEX_EXIT_OK, load;
    pflex_alloc_plan_init(&plan);
    prob->rate_by = NULL;
    for (int k = 0; k < 4; k++) {
        if (run_one(prob, &plan, add_entry(ev, fixed[k], pflex_policy_name(fixed[k])), &err) < 0)
            goto bad;
        if (fixed[k] == PFLEX_POLICY_OPTIMAL)
            ev->gap_bound = plan.gap_bound;
    }
    /* throughput per watt: Eq. 2 with PFI = 1 for every job, cuts in
     * proportion to n P0 / T0 alone, so that what PFI itself earns in
     * Eq. 2 shows (pfi_share) */
    {
        struct pflex_alloc_job *one = malloc((in->njobs ? in->njobs : 1) * sizeof *one);
        if (!one) {
            cli_error(cmd, "out of memory");
            rc = PFLEX_EXIT_INTERNAL;
            goto done;
        }
        for (size_t k = 0; k < in->njobs; k++) {
            one[k] = prob->jobs[k];
            one[k].pfi = 1;
        }
        struct pflex_alloc_problem p1 = *prob;
        p1.jobs = one;
        ev->tpw_at = (int)ev->ne;
        int r1 = run_one(&p1, &plan, add_entry(ev, PFLEX_POLICY_PFI_WEIGHTED, "tpw"), &err);
        free(one);
        if (r1 < 0)
            goto bad;
    }
    /* proportional to each column there is */
    if (site->src.by) {
        snprintf(name, sizeof name, "proportional:%.60s", site->src.by);
        prob->rate_by = in->by;
        if (run_one(prob, &plan, add_entry(ev, PFLEX_POLICY_PROPORTIONAL, name), &err) < 0)
            goto bad;
    }
    if (in->has_weight && !(site->src.by && strcmp(site->src.by, "weight") == 0)) {
        weights = malloc((in->njobs ? in->njobs : 1) * sizeof *weights);
        if (!weights) {
            cli_error(cmd, "out of memory");
            rc = PFLEX_EXIT_INTERNAL;
            goto done;
        }
        for (size_t k = 0; k < in->njobs; k++)
            weights[k] = in->jobs[k].weight;
        prob->rate_by = weights;
        if (run_one(prob, &plan, add_entry(ev, PFLEX_POLICY_PROPORTIONAL, "proportional:weight"),
                    &err) < 0)
            goto bad;
    }
    if (in->has_dram_copy && !(site->src.by && strcmp(site->src.by, "dram_copy") == 0)) {
        struct cli_site s2 = *site;
        struct pflex_alloc_problem p2;
        s2.src.by = "dram_copy";
        if ((load = cli_site_load(cmd, &s2, &in_dc, &p2)) < 0) {
            rc = -load;
            goto done;
        }
        prob->rate_by = in_dc->by;
        if (run_one(prob, &plan, add_entry(ev, PFLEX_POLICY_PROPORTIONAL,
                                           "proportional:dram_copy"), &err) < 0)
            goto bad;
    }
    goto done;
bad:
    cli_error(cmd, "%s", err.text);
    rc = cli_input_exit(&err);
done:
    free(weights);
    pflex_alloc_plan_fini(&plan);
    pflex_alloc_input_destroy(in_dc);
    return rc;
}

/* Each entry's loss against optimal and equal as a share of the site's
 * uncapped objective, its gap recovered (only where the gap is over
 * PFLEX_GAP_MIN_PCT_OF_SITE of the site's) and gain per job over equal
 * (entries 0 and 1: optimal and equal). */
static void evaluate_gaps(struct evaluation *ev, const pflex_alloc_input_t *in,
                          const struct pflex_alloc_problem *prob)
{
    double te = ev->ent[1].score.objective, to = ev->ent[0].score.objective;
    ev->full = ev->site = 0;
    for (size_t k = 0; k < in->njobs; k++) {
        ev->full += in->jobs[k].weight * in->jobs[k].gpus;
        ev->site += prob->jobs[k].weight * (ev->progress ? (double)prob->jobs[k].gpus : prob->jobs[k].t0);
    }
    ev->gap_pct = ev->site > 0 ? 100 * (to - te) / ev->site : NAN;
    for (size_t k = 0; k < ev->ne; k++) {
        struct entry *e = &ev->ent[k];
        e->gap_recovered = ev->gap_pct > PFLEX_GAP_MIN_PCT_OF_SITE
                         ? pflex_alloc_gap_recovered(te, e->score.objective, to) : NAN;
        e->lost_vs_optimal_pct = ev->site > 0 ? 100 * (to - e->score.objective) / ev->site : NAN;
        e->lost_vs_equal_pct = ev->site > 0 ? 100 * (te - e->score.objective) / ev->site : NAN;
        e->per_job = in->njobs ? (e->score.throughput - ev->ent[1].score.throughput) / (double)in->njobs : 0;
    }
    ev->njobs = in->njobs;
    ev->feasible = ev->ent[0].feasible;
}

static int print_json(const struct evaluation *ev, const pflex_alloc_input_t *in)
{
    const struct entry *ent = ev->ent;
    json_t *doc = json_object();
    json_object_set_new(doc, "reduce", json_real(ev->reduce));
    json_object_set_new(doc, "budget_w", json_real(ev->budget_w));
    json_object_set_new(doc, "baseline_w", json_real(ev->base));
    json_object_set_new(doc, "jobs", json_integer((json_int_t)ev->njobs));
    json_object_set_new(doc, "objective", json_string(ev->progress ? "progress" : "throughput"));
    cli_curve_fit_json(doc, in);
    json_object_set_new(doc, "site_objective", json_real(ev->site));
    json_object_set_new(doc, "gap_pct_of_site", cli_json_real(ev->gap_pct));
    json_t *pol = json_object();
    for (size_t k = 0; k < ev->ne; k++) {
        json_t *o = json_object();
        json_object_set_new(o, "lost_vs_optimal_pct_of_site", cli_json_real(ent[k].lost_vs_optimal_pct));
        json_object_set_new(o, "lost_vs_equal_pct_of_site", cli_json_real(ent[k].lost_vs_equal_pct));
        json_object_set_new(o, "throughput", json_real(ent[k].score.throughput));
        json_object_set_new(o, "objective", json_real(ent[k].score.objective));
        json_object_set_new(o, "power_w", json_real(ent[k].score.power_w));
        json_object_set_new(o, "sla_violations", json_integer(ent[k].score.sla_violations));
        json_object_set_new(o, "floor_violations", json_integer(ent[k].score.sla_violations));
        json_object_set_new(o, "feasible", json_boolean(ent[k].feasible));
        json_object_set_new(o, "gap_recovered", cli_json_real(ent[k].gap_recovered));
        json_object_set_new(o, "per_job_recovered", cli_json_real(ent[k].per_job));
        json_object_set_new(pol, ent[k].name, o);
    }
    json_object_set_new(doc, "policies", pol);
    /* the study's headline: the PFI-aware (pfi-weighted) policy */
    json_object_set_new(doc, "gap_recovered", cli_json_real(ent[2].gap_recovered));
    json_object_set_new(doc, "per_job_recovered", cli_json_real(ent[2].per_job));
    json_object_set_new(doc, "pfi_share",
                        cli_json_real(ent[2].gap_recovered - ent[ev->tpw_at].gap_recovered));
    json_object_set_new(doc, "gap", json_real(ent[0].score.objective - ent[1].score.objective));
    json_object_set_new(doc, "gap_bound", json_real(ev->gap_bound));
    return cli_json_print(doc);
}

static void print_csv(const struct evaluation *ev)
{
    printf("policy,throughput,objective,power_w,floor_violations,feasible,gap_recovered,"
           "per_job_recovered,lost_vs_optimal_pct_of_site,lost_vs_equal_pct_of_site\n");
    for (size_t k = 0; k < ev->ne; k++) {
        const struct entry *e = &ev->ent[k];
        fputs(e->name, stdout);
        cli_csv_num(e->score.throughput);
        cli_csv_num(e->score.objective);
        cli_csv_num(e->score.power_w);
        printf(",%d,%d", e->score.sla_violations, e->feasible);
        cli_csv_num(e->gap_recovered);
        cli_csv_num(e->per_job);
        cli_csv_num(e->lost_vs_optimal_pct);
        cli_csv_num(e->lost_vs_equal_pct);
        putchar('\n');
    }
}

static void print_table(const struct evaluation *ev, const pflex_alloc_input_t *in)
{
    double te = ev->ent[1].score.objective, to = ev->ent[0].score.objective;
    printf("%zu jobs, cut %.1f%%: budget %.1f W of baseline %.1f W, objective %s\n",
           ev->njobs, 100 * ev->reduce, ev->budget_w, ev->base,
           ev->progress ? "GPU-weighted progress" : "throughput");
    if (ev->progress)
        printf("%-24s %10s %10s %12s %9s %12s %6s %8s %10s\n", "policy", "vs_optimal", "vs_equal",
               "progress", "of_full", "power_W", "floors", "feasible", "recovered");
    else
        printf("%-24s %10s %10s %14s %12s %6s %8s %10s %12s\n", "policy", "vs_optimal", "vs_equal",
               "throughput", "power_W", "floors", "feasible", "recovered", "per_job");
    for (size_t k = 0; k < ev->ne; k++) {
        const struct entry *e = &ev->ent[k];
        char rec[16], vo[24], ve[24];
        if (isnan(e->gap_recovered))
            snprintf(rec, sizeof rec, "-");
        else
            snprintf(rec, sizeof rec, "%.1f%%", 100 * e->gap_recovered);
        snprintf(vo, sizeof vo, isnan(e->lost_vs_optimal_pct) ? "-" : "%.3f%%", e->lost_vs_optimal_pct);
        snprintf(ve, sizeof ve, isnan(e->lost_vs_equal_pct) ? "-" : "%+.3f%%", e->lost_vs_equal_pct);
        if (ev->progress)
            printf("%-24s %10s %10s %12.6g %8.2f%% %12.1f %6d %8s %10s\n", e->name, vo, ve,
                   e->score.objective, ev->full > 0 ? 100 * e->score.objective / ev->full : 0.0,
                   e->score.power_w, e->score.sla_violations, e->feasible ? "yes" : "NO", rec);
        else
            printf("%-24s %10s %10s %14.6g %12.1f %6d %8s %10s %+12.5g\n", e->name, vo, ve,
                   e->score.throughput, e->score.power_w, e->score.sla_violations,
                   e->feasible ? "yes" : "NO", rec, e->per_job);
    }
    printf("vs_optimal, vs_equal: the %s lost against optimal's and equal cuts', a share of the site's "
           "uncapped %s (vs_equal < 0: better than equal cuts); floors = jobs under their floor on the "
           "measured curves\n", ev->progress ? "progress" : "throughput",
           ev->progress ? "progress" : "throughput");
    if (!(to - te > 1e-6 * fabs(to)))
        printf("gap recovered: - (optimal does not beat equal by more than rounding here)\n");
    else if (isnan(ev->ent[0].gap_recovered))
        printf("gap recovered: - (the equal-to-optimal gap is %.3g%% of the site's %s, under %g%%: a share "
               "of it would swing on differences inside the readings' noise)\n", ev->gap_pct,
               ev->progress ? "progress" : "throughput", PFLEX_GAP_MIN_PCT_OF_SITE);
    else
        printf("gap recovered = (policy - equal) / (optimal - equal) on the objective, a gap "
               "of %.6g (%.3g%% of the site's)\n", to - te, ev->gap_pct);
    if (!isnan(ev->ent[2].gap_recovered))
        printf("Eq. 2 (pfi-weighted) recovers %.1f%% of the gap, tpw (Eq. 2 with PFI = 1: cuts by "
               "watts per throughput) %.1f%%: PFI itself earns %+.1f points\n",
               100 * ev->ent[2].gap_recovered, 100 * ev->ent[ev->tpw_at].gap_recovered,
               100 * (ev->ent[2].gap_recovered - ev->ent[ev->tpw_at].gap_recovered));
    if (ev->gap_bound > 0)
        printf("optimal gap_bound %.6g (non-convex curves)\n", ev->gap_bound);
    cli_curve_fit_note(in);
}

int cmd_evaluate(int argc, char **argv)
{
    const char *cmd = "evaluate";
    struct cli_site site;
    struct evaluation ev;
    int json, csv, rc = evaluate_parse(argc, argv, &site, &json, &csv);
    if (rc != 0)
        return rc < 0 ? PFLEX_EXIT_OK : rc;
    pflex_alloc_input_t *in = NULL;
    struct pflex_alloc_problem prob;
    int load = cli_site_load(cmd, &site, &in, &prob);
    if (load < 0)
        return -load;
    memset(&ev, 0, sizeof ev);
    ev.base = pflex_alloc_baseline_w(&prob);
    ev.reduce = isnan(site.reduce) ? 1.0 - prob.budget_w / ev.base : site.reduce;
    ev.budget_w = prob.budget_w;
    ev.progress = site.objective == PFLEX_OBJECTIVE_PROGRESS;
    rc = evaluate_policies(&site, in, &prob, &ev);
    if (rc == PFLEX_EXIT_OK) {
        evaluate_gaps(&ev, in, &prob);
        if (json)
            rc = print_json(&ev, in) < 0 ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_OK;
        else if (csv)
            print_csv(&ev);
        else
            print_table(&ev, in);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            cli_error(cmd, "writing to stdout failed");
            rc = PFLEX_EXIT_INTERNAL;
        }
        if (rc == PFLEX_EXIT_OK && !ev.feasible) {
            cli_error(cmd, "infeasible: the floors and ranges cannot reach a budget of %.1f W",
                      prob.budget_w);
            rc = PFLEX_EXIT_INFEASIBLE;
        }
    }
    pflex_alloc_input_destroy(in);
    return rc;
}
