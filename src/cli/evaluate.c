/* evaluate.c — pflex evaluate: the equal, pfi and optimal plans scored on
 * the measured curves (docs/contract.md §2 "Evaluation", §4). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/site.h"
#include "pflex/alloc.h"

static const char help[] =
"usage: pflex evaluate [SWEEP.csv] --reduce F [options]\n"
"\n"
"Plans a cut of a fraction F of the baseline GPU power with each policy\n"
"(equal, pfi, optimal; see 'pflex allocate --help') and scores every plan on\n"
"the measured curves: throughput T_j = T0_j (1 - L_j(x_j)), the plan's\n"
"power, and SLA violations (jobs under their floor).  Prints the gap\n"
"recovered by the PFI-aware plan, (T_pfi - T_equal) / (T_optimal - T_equal),\n"
"and the throughput it recovers per job, (T_pfi - T_equal) / jobs.\n"
"'-' or no file reads the sweep from stdin.\n"
"\n"
"options:\n"
"  --reduce F          cut a fraction F of the baseline power (0..1)\n"
"  --budget-w W        or give the budget in W\n"
"  --pfi FILE          PFIs for the pfi policy (measured or predicted), by job;\n"
"                      default: each curve's own PFI over range 0.30\n"
"  --jobs FILE         jobs file (job, curve, gpus[, tier, floor, weight])\n"
"  --floor S           service floor (0..1) for jobs without a floor or tier\n"
"  --objective O       throughput (default) or progress\n"
"  --columns MAP       map foreign sweep headers: name=Header,...\n"
"  --json              one JSON document\n"
"  -h, --help          this help\n"
"\n"
"exit: 0 ok, 2 bad usage or input, 3 the budget is infeasible within the\n"
"floors and ranges (the scores are still printed).\n";

static const char *const names[3] = {"equal", "pfi", "optimal"};

int cmd_evaluate(int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_SITE_OPTIONS,
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = "evaluate";
    struct cli_site site;
    int json = 0, c, taken;
    cli_site_init(&site);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if ((taken = cli_site_option(cmd, &site, c, optarg)) != 0) {
            if (taken < 0)
                return PFLEX_EXIT_BAD_INPUT;
            continue;
        }
        switch (c) {
        case 'J': json = 1; break;
        case 'h': return cli_help(help);
        default: return cli_bad_option(cmd, argv, opts);
        }
    }
    if (cli_site_check(cmd, &site) < 0)
        return PFLEX_EXIT_BAD_INPUT;
    if (argc - optind > 1)
        return cli_usage_error(cmd, "one sweep file at most");
    site.src.sweep_path = optind < argc ? argv[optind] : "-";

    pflex_error_t err;
    pflex_alloc_input_t *in;
    struct pflex_alloc_problem prob;
    if (cli_site_load(cmd, &site, &in, &prob) < 0)
        return PFLEX_EXIT_BAD_INPUT;
    double base = pflex_alloc_baseline_w(&prob);
    double reduce = isnan(site.reduce) ? 1.0 - prob.budget_w / base : site.reduce;
    struct pflex_alloc_comparison cmp;
    int rc = PFLEX_EXIT_OK;
    if (pflex_alloc_compare(&prob, &cmp, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        pflex_alloc_input_destroy(in);
        return PFLEX_EXIT_BAD_INPUT;
    }
    if (json) {
        json_t *doc = json_object();
        json_object_set_new(doc, "reduce", json_real(reduce));
        json_object_set_new(doc, "budget_w", json_real(prob.budget_w));
        json_object_set_new(doc, "baseline_w", json_real(base));
        json_object_set_new(doc, "jobs", json_integer((json_int_t)in->njobs));
        json_t *pol = json_object();
        for (int k = 0; k < 3; k++) {
            json_t *o = json_object();
            json_object_set_new(o, "throughput", json_real(cmp.score[k].throughput));
            json_object_set_new(o, "power_w", json_real(cmp.score[k].power_w));
            json_object_set_new(o, "sla_violations", json_integer(cmp.score[k].sla_violations));
            json_object_set_new(o, "objective", json_real(cmp.score[k].objective));
            json_object_set_new(o, "feasible", json_boolean(cmp.feasible[k]));
            json_object_set_new(pol, names[k], o);
        }
        json_object_set_new(doc, "policies", pol);
        json_object_set_new(doc, "gap_recovered", cli_json_real(cmp.gap_recovered));
        json_object_set_new(doc, "per_job_recovered", json_real(cmp.per_job_recovered));
        json_object_set_new(doc, "gap_bound", json_real(cmp.gap_bound));
        if (cli_json_print(doc) < 0)
            rc = PFLEX_EXIT_INTERNAL;
    } else {
        printf("%zu jobs, cut %.1f%%: budget %.1f W of baseline %.1f W\n", in->njobs,
               100 * reduce, prob.budget_w, base);
        printf("%-8s %14s %14s %12s %5s %8s\n", "policy", "throughput", "objective",
               "power_W", "SLA", "feasible");
        for (int k = 0; k < 3; k++)
            printf("%-8s %14.6g %14.6g %12.1f %5d %8s\n", names[k], cmp.score[k].throughput,
                   cmp.score[k].objective, cmp.score[k].power_w, cmp.score[k].sla_violations,
                   cmp.feasible[k] ? "yes" : "NO");
        if (isnan(cmp.gap_recovered))
            printf("gap recovered: - (optimal does not beat equal here)\n");
        else
            printf("gap recovered by pfi: %.1f%% of (optimal - equal)\n",
                   100 * cmp.gap_recovered);
        printf("throughput recovered per job by pfi over equal: %.6g\n", cmp.per_job_recovered);
        if (cmp.gap_bound > 0)
            printf("optimal gap_bound %.6g (non-convex curves)\n", cmp.gap_bound);
    }
    if (fflush(stdout) != 0)
        rc = PFLEX_EXIT_INTERNAL;
    if (rc == PFLEX_EXIT_OK && !cmp.feasible[PFLEX_POLICY_OPTIMAL]) {
        cli_error(cmd, "infeasible: the floors and ranges cannot reach a budget of %.1f W",
                  prob.budget_w);
        rc = PFLEX_EXIT_INFEASIBLE;
    }
    pflex_alloc_input_destroy(in);
    return rc;
}
