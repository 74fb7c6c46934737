/* evaluate.c — pflex evaluate: every policy it can run on the input, each
 * plan scored on the measured curves (docs/contract.md §2 "Evaluation", §4). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/site.h"
#include "pflex/alloc.h"

static const char help[] =
"usage: pflex evaluate [SWEEP.csv] (--reduce F | --budget-w W) [options]\n"
"\n"
"Plans a cut of a fraction F of the baseline GPU power with every policy it\n"
"can run on the input (optimal, equal, pfi-weighted, pfi, tpw: pfi-weighted\n"
"with PFI = 1 for every job, cuts by watts per throughput, and proportional\n"
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
"  --budget-w W        or give the budget in W\n"
"  --pfi FILE          ratio PFIs for the PFI policies (measured or predicted),\n"
"                      by job; default: each curve's own ratio PFI\n"
"  --jobs FILE         jobs file (job, curve, gpus[, tier, floor, weight])\n"
"  --by COL            also proportional to COL\n"
"  --floor S           service floor (0..1) for jobs without a floor or tier\n"
"  --objective O       throughput (default) or progress\n"
"  --columns MAP       map foreign sweep headers: name=Header,...\n"
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
};

#define MAX_ENTRIES 9

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

int cmd_evaluate(int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_SITE_OPTIONS,
        {"json", no_argument, NULL, 'J'},
        {"csv", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = "evaluate";
    struct cli_site site;
    int json = 0, csv = 0, c, taken;
    cli_site_init(&site);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if ((taken = cli_site_option(cmd, &site, c, optarg)) != 0) {
            if (taken < 0)
                return PFLEX_EXIT_BAD_INPUT;
            continue;
        }
        switch (c) {
        case 'J': json = 1; break;
        case 'C': csv = 1; break;
        case 'h': return cli_help(help);
        default: return cli_bad_option(cmd, argv, opts);
        }
    }
    if (json && csv)
        return cli_usage_error(cmd, "--csv and --json exclude each other");
    if (cli_site_check(cmd, &site) < 0)
        return PFLEX_EXIT_BAD_INPUT;
    if (argc - optind > 1)
        return cli_usage_error(cmd, "one sweep file at most");
    site.src.sweep_path = optind < argc ? argv[optind] : "-";

    pflex_error_t err;
    pflex_alloc_input_t *in = NULL, *in_dc = NULL;
    struct pflex_alloc_problem prob;
    int load = cli_site_load(cmd, &site, &in, &prob);
    if (load < 0)
        return -load;
    double base = pflex_alloc_baseline_w(&prob);
    double reduce = isnan(site.reduce) ? 1.0 - prob.budget_w / base : site.reduce;
    int progress = site.objective == PFLEX_OBJECTIVE_PROGRESS;
    int rc = PFLEX_EXIT_OK;
    struct entry ent[MAX_ENTRIES];
    size_t ne = 0;
    static const enum pflex_policy fixed[4] = {
        PFLEX_POLICY_OPTIMAL, PFLEX_POLICY_EQUAL, PFLEX_POLICY_PFI_WEIGHTED, PFLEX_POLICY_PFI,
    };
    double *weights = NULL, gap_bound = 0;
    struct pflex_alloc_plan plan;
    pflex_alloc_plan_init(&plan);
    prob.rate_by = NULL;
    for (int k = 0; k < 4; k++) {
        struct entry *e = &ent[ne++];
        memset(e, 0, sizeof *e);
        e->policy = fixed[k];
        snprintf(e->name, sizeof e->name, "%s", pflex_policy_name(fixed[k]));
        if (run_one(&prob, &plan, e, &err) < 0)
            goto bad;
        if (fixed[k] == PFLEX_POLICY_OPTIMAL)
            gap_bound = plan.gap_bound;
    }
    /* throughput per watt: Eq. 2 with PFI = 1 for every job, cuts in
     * proportion to n P0 / T0 alone, so that what PFI itself earns in
     * Eq. 2 shows (pfi_share) */
    int tpw_at = -1;
    {
        struct pflex_alloc_job *one = malloc((in->njobs ? in->njobs : 1) * sizeof *one);
        if (!one) {
            cli_error(cmd, "out of memory");
            rc = PFLEX_EXIT_INTERNAL;
            goto done;
        }
        for (size_t k = 0; k < in->njobs; k++) {
            one[k] = prob.jobs[k];
            one[k].pfi = 1;
        }
        struct pflex_alloc_problem p1 = prob;
        p1.jobs = one;
        struct entry *e = &ent[ne];
        memset(e, 0, sizeof *e);
        e->policy = PFLEX_POLICY_PFI_WEIGHTED;
        snprintf(e->name, sizeof e->name, "tpw");
        int r1 = run_one(&p1, &plan, e, &err);
        free(one);
        if (r1 < 0)
            goto bad;
        tpw_at = (int)ne++;
    }
    /* proportional to each column there is */
    if (site.src.by) {
        struct entry *e = &ent[ne++];
        memset(e, 0, sizeof *e);
        e->policy = PFLEX_POLICY_PROPORTIONAL;
        snprintf(e->name, sizeof e->name, "proportional:%.60s", site.src.by);
        prob.rate_by = in->by;
        if (run_one(&prob, &plan, e, &err) < 0)
            goto bad;
    }
    if (in->has_weight && !(site.src.by && strcmp(site.src.by, "weight") == 0)) {
        weights = malloc((in->njobs ? in->njobs : 1) * sizeof *weights);
        if (!weights) {
            cli_error(cmd, "out of memory");
            rc = PFLEX_EXIT_INTERNAL;
            goto done;
        }
        for (size_t k = 0; k < in->njobs; k++)
            weights[k] = in->jobs[k].weight;
        struct entry *e = &ent[ne++];
        memset(e, 0, sizeof *e);
        e->policy = PFLEX_POLICY_PROPORTIONAL;
        snprintf(e->name, sizeof e->name, "proportional:weight");
        prob.rate_by = weights;
        if (run_one(&prob, &plan, e, &err) < 0)
            goto bad;
    }
    if (in->has_dram_copy && !(site.src.by && strcmp(site.src.by, "dram_copy") == 0)) {
        struct cli_site s2 = site;
        struct pflex_alloc_problem p2;
        s2.src.by = "dram_copy";
        if ((load = cli_site_load(cmd, &s2, &in_dc, &p2)) < 0) {
            rc = -load;
            goto done;
        }
        struct entry *e = &ent[ne++];
        memset(e, 0, sizeof *e);
        e->policy = PFLEX_POLICY_PROPORTIONAL;
        snprintf(e->name, sizeof e->name, "proportional:dram_copy");
        prob.rate_by = in_dc->by;
        if (run_one(&prob, &plan, e, &err) < 0)
            goto bad;
    }
    double te = ent[1].score.objective, to = ent[0].score.objective;
    for (size_t k = 0; k < ne; k++) {
        ent[k].gap_recovered = pflex_alloc_gap_recovered(te, ent[k].score.objective, to);
        ent[k].per_job = in->njobs ? (ent[k].score.throughput - ent[1].score.throughput)
                                     / (double)in->njobs : 0;
    }
    double full = 0;
    for (size_t k = 0; k < in->njobs; k++)
        full += in->jobs[k].weight * in->jobs[k].gpus;
    if (json) {
        json_t *doc = json_object();
        json_object_set_new(doc, "reduce", json_real(reduce));
        json_object_set_new(doc, "budget_w", json_real(prob.budget_w));
        json_object_set_new(doc, "baseline_w", json_real(base));
        json_object_set_new(doc, "jobs", json_integer((json_int_t)in->njobs));
        json_object_set_new(doc, "objective", json_string(progress ? "progress" : "throughput"));
        json_t *pol = json_object();
        for (size_t k = 0; k < ne; k++) {
            json_t *o = json_object();
            json_object_set_new(o, "throughput", json_real(ent[k].score.throughput));
            json_object_set_new(o, "objective", json_real(ent[k].score.objective));
            json_object_set_new(o, "power_w", json_real(ent[k].score.power_w));
            json_object_set_new(o, "sla_violations", json_integer(ent[k].score.sla_violations));
            json_object_set_new(o, "floor_violations",
                                json_integer(ent[k].score.sla_violations));
            json_object_set_new(o, "feasible", json_boolean(ent[k].feasible));
            json_object_set_new(o, "gap_recovered", cli_json_real(ent[k].gap_recovered));
            json_object_set_new(o, "per_job_recovered", cli_json_real(ent[k].per_job));
            json_object_set_new(pol, ent[k].name, o);
        }
        json_object_set_new(doc, "policies", pol);
        /* the study's headline: the PFI-aware (pfi-weighted) policy */
        json_object_set_new(doc, "gap_recovered", cli_json_real(ent[2].gap_recovered));
        json_object_set_new(doc, "per_job_recovered", cli_json_real(ent[2].per_job));
        json_object_set_new(doc, "pfi_share", cli_json_real(ent[2].gap_recovered - ent[tpw_at].gap_recovered));
        json_object_set_new(doc, "gap", json_real(to - te));
        json_object_set_new(doc, "gap_bound", json_real(gap_bound));
        if (cli_json_print(doc) < 0)
            rc = PFLEX_EXIT_INTERNAL;
    } else if (csv) {
        printf("policy,throughput,objective,power_w,floor_violations,feasible,gap_recovered,"
               "per_job_recovered\n");
        for (size_t k = 0; k < ne; k++) {
            fputs(ent[k].name, stdout);
            cli_csv_num(ent[k].score.throughput);
            cli_csv_num(ent[k].score.objective);
            cli_csv_num(ent[k].score.power_w);
            printf(",%d,%d", ent[k].score.sla_violations, ent[k].feasible);
            cli_csv_num(ent[k].gap_recovered);
            cli_csv_num(ent[k].per_job);
            putchar('\n');
        }
    } else {
        printf("%zu jobs, cut %.1f%%: budget %.1f W of baseline %.1f W, objective %s\n",
               in->njobs, 100 * reduce, prob.budget_w, base,
               progress ? "GPU-weighted progress" : "throughput");
        if (progress)
            printf("%-24s %12s %9s %12s %6s %8s %10s\n", "policy", "progress", "of_full",
                   "power_W", "floors", "feasible", "recovered");
        else
            printf("%-24s %14s %12s %6s %8s %10s %12s\n", "policy", "throughput", "power_W",
                   "floors", "feasible", "recovered", "per_job");
        for (size_t k = 0; k < ne; k++) {
            const struct entry *e = &ent[k];
            char rec[16];
            if (isnan(e->gap_recovered))
                snprintf(rec, sizeof rec, "-");
            else
                snprintf(rec, sizeof rec, "%.1f%%", 100 * e->gap_recovered);
            if (progress)
                printf("%-24s %12.6g %8.2f%% %12.1f %6d %8s %10s\n", e->name,
                       e->score.objective, full > 0 ? 100 * e->score.objective / full : 0.0,
                       e->score.power_w, e->score.sla_violations, e->feasible ? "yes" : "NO",
                       rec);
            else
                printf("%-24s %14.6g %12.1f %6d %8s %10s %+12.5g\n", e->name,
                       e->score.throughput, e->score.power_w, e->score.sla_violations,
                       e->feasible ? "yes" : "NO", rec, e->per_job);
        }
        if (isnan(ent[0].gap_recovered))
            printf("gap recovered: - (optimal does not beat equal by more than rounding here)\n");
        else
            printf("gap recovered = (policy - equal) / (optimal - equal) on the objective, a gap "
                   "of %.6g (%.3g%% of optimal's); floors = jobs under their floor on the "
                   "measured curves\n", to - te, 100 * (to - te) / fabs(to));
        if (!isnan(ent[2].gap_recovered))
            printf("Eq. 2 (pfi-weighted) recovers %.1f%% of the gap, tpw (Eq. 2 with PFI = 1: cuts by "
                   "watts per throughput) %.1f%%: PFI itself earns %+.1f points\n",
                   100 * ent[2].gap_recovered, 100 * ent[tpw_at].gap_recovered,
                   100 * (ent[2].gap_recovered - ent[tpw_at].gap_recovered));
        if (gap_bound > 0)
            printf("optimal gap_bound %.6g (non-convex curves)\n", gap_bound);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error(cmd, "writing to stdout failed");
        rc = PFLEX_EXIT_INTERNAL;
    }
    if (rc == PFLEX_EXIT_OK && !ent[0].feasible) {
        cli_error(cmd, "infeasible: the floors and ranges cannot reach a budget of %.1f W",
                  prob.budget_w);
        rc = PFLEX_EXIT_INFEASIBLE;
    }
    goto done;
bad:
    cli_error(cmd, "%s", err.text);
    rc = cli_input_exit(&err);
done:
    free(weights);
    pflex_alloc_plan_fini(&plan);
    pflex_alloc_input_destroy(in);
    pflex_alloc_input_destroy(in_dc);
    return rc;
}
