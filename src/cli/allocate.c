/* allocate.c — pflex allocate: split a site power budget between jobs
 * (docs/contract.md §2 "Allocation problem", §4). */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/site.h"
#include "lib/util/grow.h"
#include "pflex/io/csv.h"
#include "pflex/flex/alloc.h"
#include "pflex/util/fmt.h"

static const char help[] =
"usage: pflex allocate [SWEEP.csv] (--budget-w W | --reduce F) [options]\n"
"       pflex allocate --pfi PFI.csv (--budget-w W | --reduce F) [options]\n"
"\n"
"Plans per-job GPU power caps under a site power budget so that total useful\n"
"throughput is as high as possible, every job keeps its service floor and the\n"
"plan's GPU power (sum over jobs of gpus x per-GPU power) stays within the\n"
"budget.  Reads a power-cap sweep (one loss curve per job) or, with --pfi\n"
"alone, a PFI CSV from 'pflex pfi --csv' (ratio PFI, gpus, baseline per job).\n"
"'-' or no file reads the sweep from stdin.\n"
"\n"
"policies (PFI is the study's ratio PFI, x/L: > 1 inelastic, 1 proportional):\n"
"  optimal       uses the measured curves; exact for convex curves, otherwise\n"
"                within gap_bound of the optimum (default with a sweep)\n"
"  equal         the same power reduction for every job, water-filled at each\n"
"                job's limit\n"
"  proportional  each job's cut in W proportional to gpus x P0 x the --by\n"
"                column (weight, gpus, dram_copy, a telemetry column, or a\n"
"                column of the jobs file / PFI CSV); also proportional:COL\n"
"  pfi-weighted  the study's PFI-aware policy: cut in W proportional to\n"
"                (gpus x P0 / T0) x PFI (default with --pfi alone)\n"
"  pfi           models loss = reduction / PFI and is optimal under that model\n"
"Limits: the measured range (or the GPU's minimum cap without a sweep);\n"
"optimal, and equal/proportional on a job with a curve, stop at the floor on\n"
"the curve; pfi and pfi-weighted at their model's floor, PFI x (1 - floor).\n"
"\n"
"options:\n"
"  --budget-w W        site budget: total GPU power allowed (W, kW or MW)\n"
"  --reduce F          cut a fraction F of the baseline power (0.3 or 30%)\n"
"  --policy P          optimal, equal, proportional, pfi-weighted or pfi\n"
"  --by COL            the column proportional cuts by (alone: --policy\n"
"                      proportional)\n"
"  --pfi FILE          PFI CSV: alone, the jobs; with a sweep, the PFIs the PFI\n"
"                      policies use (measured or predicted) instead of the curves'\n"
"  --jobs FILE         jobs file (job, curve, gpus[, tier, floor, weight]): each\n"
"                      row runs the named sweep job's curve on its own GPUs\n"
"  --floor S           service floor (0.9 or 90%) for jobs without one or a tier\n"
"  --objective O       throughput (default: sum of weight x throughput) or\n"
"                      progress (sum of weight x gpus x fraction of baseline,\n"
"                      for jobs whose throughput units differ)\n"
"  --columns MAP       map foreign sweep headers: name=Header,...\n"
"  --strict            a bad sweep job (no positive baseline, ...) is fatal\n"
"                      (exit 2); by default it is skipped with a warning\n"
"  --json              one JSON document\n"
"  --csv               one CSV row per job\n"
"  -h, --help          this help\n"
"\n"
"Per job: the per-GPU power target, the cap to set (interpolated on the job's\n"
"own (cap, power) points, or the target without a sweep; the current cap when\n"
"the job is not cut; clamped to the GPU's settable range, marked * when\n"
"clamped), the throughput and fraction of baseline as the policy estimates\n"
"them, and with a sweep the fraction measured on the curve; a job whose\n"
"measured throughput falls under its floor is marked ! and counted.\n"
"\n"
"EXAMPLES\n"
"  pflex allocate sweep.csv --reduce 30%\n"
"  pflex allocate sweep.csv --budget-w 50000 --policy equal --json\n"
"  pflex allocate sweep.csv --reduce 0.2 --policy proportional --by weight\n"
"  pflex allocate --pfi pfi.csv --reduce 0.3           # pfi-weighted\n"
"  pflex allocate dvfs_sweep.csv --columns 'job=Workload,cap_w=GPU power cap,power_w=power per GPU' \\\n"
"      --jobs examples/emerald-event/jobs.csv --reduce 25% --objective progress\n"
"\n"
"exit: 0 ok, 2 bad usage or input (file:line on stderr), 3 infeasible: the\n"
"floors and ranges cannot reach the budget; the plan at the least power\n"
"reachable is still printed, with \"feasible\": false.\n";

/* What the outputs share: the plan, its input and how it was asked for. */
struct out {
    const pflex_alloc_input_t *in;
    const struct pflex_alloc_plan *pl;
    const char *by;             /* proportional's column, or NULL */
    int progress;               /* --objective progress */
    size_t clamped;             /* caps clamped to the settable range */
};

/* The plan's totals, as the JSON document's head. */
static json_t *plan_head_json(const struct out *o)
{
    const struct pflex_alloc_plan *pl = o->pl;
    json_t *doc = json_object();
    json_object_set_new(doc, "policy", json_string(pflex_policy_name(pl->policy)));
    if (o->by)
        json_object_set_new(doc, "by", json_string(o->by));
    json_object_set_new(doc, "objective_kind",
                        json_string(o->progress ? "progress" : "throughput"));
    json_object_set_new(doc, "baseline_w", json_real(pl->baseline_w));
    json_object_set_new(doc, "budget_w", json_real(pl->budget_w));
    if (o->in)
        cli_curve_fit_json(doc, o->in);
    json_object_set_new(doc, "power_w", json_real(pl->power_w));
    json_object_set_new(doc, "throughput", json_real(pl->throughput));
    json_object_set_new(doc, "objective", cli_json_real(pl->objective));
    json_object_set_new(doc, "feasible", json_boolean(pl->feasible));
    json_object_set_new(doc, "gap_bound", json_real(pl->gap_bound));
    if (o->in->has_curves) {
        json_object_set_new(doc, "measured_throughput", json_real(pl->measured_throughput));
        json_object_set_new(doc, "measured_objective", json_real(pl->measured_objective));
    }
    json_object_set_new(doc, "caps_clamped", json_integer((json_int_t)o->clamped));
    return doc;
}

/* A job's JSON object, built in memory and written at once. */
struct jobj {
    char *b;
    size_t n, cap;
    int first;          /* no member yet */
    int oom;
};

static void jobj_add(struct jobj *o, const char *s, size_t n)
{
    if (n > SIZE_MAX - o->n || pflex_grow((void **)&o->b, &o->cap, o->n + n, 1) < 0) {
        o->oom = 1;
        return;
    }
    memcpy(o->b + o->n, s, n);
    o->n += n;
}

/* One member of a job's object, as jansson writes it at this depth; a
 * value jansson would refuse (a non-finite real, a name that is not
 * UTF-8) leaves the member out, as there. */
static void job_member(struct jobj *o, const char *key, const char *text, size_t tn)
{
    if (o->first)
        jobj_add(o, "\n      \"", 8);
    else
        jobj_add(o, ",\n      \"", 9);
    jobj_add(o, key, strlen(key));
    jobj_add(o, "\": ", 3);
    jobj_add(o, text, tn);
    o->first = 0;
}

static void job_real(struct jobj *o, const char *key, double v)
{
    if (!isfinite(v))
        return;
    char b[PFLEX_FMT_G_MAX + 4];
    cli_json_real_text(b, v);
    job_member(o, key, b, strlen(b));
}

static void job_name(struct jobj *o, const char *name)
{
    const unsigned char *c = (const unsigned char *)name;
    while (*c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\')
        c++;
    if (!*c) {
        job_member(o, "job", "\"", 1);
        jobj_add(o, name, (size_t)((const char *)c - name));
        jobj_add(o, "\"", 1);
        return;
    }
    json_t *s = json_string(name);     /* escapes, or NULL: not UTF-8 */
    char *t = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    if (t)
        job_member(o, "job", t, strlen(t));
    free(t);
    json_decref(s);
}

/* The plan as one JSON document, exactly as cli_json_print would print
 * it, but written job by job: a million jobs as one jansson tree take
 * gigabytes and a quarter of a minute. */
static int plan_json(const struct out *ou)
{
    const pflex_alloc_input_t *in = ou->in;
    const struct pflex_alloc_plan *pl = ou->pl;
    json_t *head = plan_head_json(ou);
    char *h = json_dumps(head, CLI_JSON_FLAGS);
    json_decref(head);
    size_t hn = h ? strlen(h) : 0;
    if (hn < 2 || h[hn - 1] != '}' || h[hn - 2] != '\n') {
        free(h);
        return -1;
    }
    fwrite(h, 1, hn - 2, stdout);
    free(h);
    fputs(",\n  \"jobs\": [", stdout);
    struct jobj o = {0};
    for (size_t k = 0; k < in->njobs && !o.oom; k++) {
        const struct pflex_alloc_job *j = &in->jobs[k];
        double x = pl->x[k];
        char g[24];
        o.n = 0;
        o.first = 1;
        jobj_add(&o, k ? ",\n    {" : "\n    {", k ? 7 : 6);
        job_name(&o, j->name);
        job_member(&o, "gpus", g, (size_t)snprintf(g, sizeof g, "%d", j->gpus));
        job_real(&o, "baseline_power_w", j->p0_w);
        struct pflex_alloc_cap cap;
        pflex_alloc_cap(j, &in->caps[k], x, &cap);
        double mf = pflex_alloc_measured_fraction(j, x);
        job_real(&o, "power_w", pflex_alloc_power_w(j, x));
        job_real(&o, "cap_w", cap.cap_w);
        job_member(&o, "cap_clamped", cap.clamped ? "true" : "false", cap.clamped ? 4 : 5);
        if (cap.clamped)
            job_real(&o, "cap_wanted_w", cap.wanted_w);
        job_real(&o, "reduction", x);
        job_real(&o, "throughput", pl->throughput_j[k]);
        job_real(&o, "fraction", pl->throughput_j[k] / j->t0);
        if (isnan(mf))
            job_member(&o, "measured_fraction", "null", 4);
        else
            job_real(&o, "measured_fraction", mf);
        job_real(&o, "floor", j->floor);
        if (isnan(mf))
            job_member(&o, "floor_violated", "null", 4);
        else if (pflex_alloc_floor_violated(j, x))
            job_member(&o, "floor_violated", "true", 4);
        else
            job_member(&o, "floor_violated", "false", 5);
        job_real(&o, "baseline_throughput", j->t0);
        job_real(&o, "limit", pl->limit[k]);
        job_real(&o, "weight", j->weight);
        if (pl->policy == PFLEX_POLICY_PFI || pl->policy == PFLEX_POLICY_PFI_WEIGHTED)
            job_real(&o, "pfi", pflex_alloc_job_pfi(j));
        if (o.first)
            jobj_add(&o, "}", 1);
        else
            jobj_add(&o, "\n    }", 6);
        fwrite(o.b, 1, o.n, stdout);
    }
    free(o.b);
    if (o.oom)
        return -1;
    fputs(in->njobs ? "\n  ]" : "]", stdout);
    if (in->has_curves)
        printf(",\n  \"floor_violations\": %d", pl->floor_violations);
    else
        fputs(",\n  \"floor_violations\": null", stdout);
    fputs("\n}\n", stdout);
    return ferror(stdout) ? -1 : 0;
}

static void plan_csv(const struct out *ou)
{
    const pflex_alloc_input_t *in = ou->in;
    const struct pflex_alloc_plan *pl = ou->pl;
    printf("job,gpus,baseline_power_w,power_w,cap_w,reduction,throughput,fraction,floor,"
           "measured_fraction,floor_violated,cap_clamped\n");
    for (size_t k = 0; k < in->njobs; k++) {
        const struct pflex_alloc_job *j = &in->jobs[k];
        double x = pl->x[k], mf = pflex_alloc_measured_fraction(j, x);
        struct pflex_alloc_cap cap;
        pflex_alloc_cap(j, &in->caps[k], x, &cap);
        pflex_csv_write_field(stdout, j->name);
        printf(",%d", j->gpus);
        cli_csv_num(j->p0_w);
        cli_csv_num(pflex_alloc_power_w(j, x));
        cli_csv_num(cap.cap_w);
        cli_csv_num(x);
        cli_csv_num(pl->throughput_j[k]);
        cli_csv_num(pl->throughput_j[k] / j->t0);
        cli_csv_num(j->floor);
        if (isnan(mf))
            fputs(",,", stdout);
        else {
            cli_csv_num(mf);
            fputs(pflex_alloc_floor_violated(j, x) ? ",1" : ",0", stdout);
        }
        fputs(cap.clamped ? ",1\n" : ",0\n", stdout);
    }
}

static void plan_table(const struct out *ou)
{
    const pflex_alloc_input_t *in = ou->in;
    const struct pflex_alloc_plan *pl = ou->pl;
    int w = 24;
    for (size_t k = 0; k < in->njobs; k++) {
        int l = (int)strlen(in->jobs[k].name);
        if (l > w)
            w = l < 60 ? l : 60;
    }
    printf("%-*s %6s %9s %9s %10s %7s %12s %8s %8s %7s\n", w, "job", "gpus", "base_W",
           "power_W", "cap_W", "reduce", "throughput", "fraction", "measured", "floor");
    for (size_t k = 0; k < in->njobs; k++) {
        const struct pflex_alloc_job *j = &in->jobs[k];
        double x = pl->x[k], mf = pflex_alloc_measured_fraction(j, x);
        struct pflex_alloc_cap cap;
        pflex_alloc_cap(j, &in->caps[k], x, &cap);
        char meas[16];
        if (isnan(mf))
            snprintf(meas, sizeof meas, "-");
        else
            snprintf(meas, sizeof meas, "%.4f", mf);
        printf("%-*s %6d %9.1f %9.1f %9.1f%c %7.4f %12.5g %8.4f %8s %6.2f%s\n", w, j->name,
               j->gpus, j->p0_w, pflex_alloc_power_w(j, x), cap.cap_w, cap.clamped ? '*' : ' ',
               x, pl->throughput_j[k], pl->throughput_j[k] / j->t0, meas, j->floor,
               pflex_alloc_floor_violated(j, x) ? " !" : "");
    }
    const char *pol = pflex_policy_name(pl->policy);
    char polname[96];
    if (ou->by)
        snprintf(polname, sizeof polname, "%s:%s", pol, ou->by);
    else
        snprintf(polname, sizeof polname, "%s", pol);
    printf("policy %s: power %.1f W of budget %.1f W (baseline %.1f W, cut %.1f%%)%s\n", polname,
           pl->power_w, pl->budget_w, pl->baseline_w,
           100.0 * (1.0 - pl->power_w / pl->baseline_w),
           pl->feasible ? "" : "  INFEASIBLE: every job at its limit");
    if (ou->progress) {
        /* jobs' throughputs may be in different units: only the objective adds up */
        double full = 0;
        for (size_t k = 0; k < in->njobs; k++)
            full += in->jobs[k].weight * in->jobs[k].gpus;
        printf("objective (GPU-weighted progress, sum of weight x gpus x fraction): %.6g of %.6g "
               "(%.2f%%) as planned", pl->objective, full,
               full > 0 ? 100 * pl->objective / full : 0.0);
        if (in->has_curves)
            printf(", %.6g (%.2f%%) on the measured curves", pl->measured_objective,
                   full > 0 ? 100 * pl->measured_objective / full : 0.0);
        putchar('\n');
    } else {
        printf("throughput %.6g as planned", pl->throughput);
        if (in->has_curves)
            printf(", %.6g on the measured curves", pl->measured_throughput);
        putchar('\n');
    }
    if (pl->gap_bound > 0)
        printf("gap_bound %.6g: non-convex curves; the optimum is at most this much better\n",
               pl->gap_bound);
    if (ou->clamped)
        printf("caps clamped to the GPU's settable range: %zu (marked *)\n", ou->clamped);
    if (in->has_curves)
        printf("floor violations on the measured curves: %d%s\n", pl->floor_violations,
               pl->floor_violations ? " (marked !)" : "");
    else
        printf("floor violations: not known (no measured curves)\n");
    cli_curve_fit_note(in);
}

/* --policy P, where P may be proportional:COL. */
static int parse_policy(const char *cmd, const char *arg, enum pflex_policy *pol,
                        const char **by)
{
    const char *colon = strchr(arg, ':');
    char name[32];
    size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
    if (n >= sizeof name)
        n = sizeof name - 1;
    memcpy(name, arg, n);
    name[n] = 0;
    if (pflex_policy_parse(name, pol) < 0 || (colon && *pol != PFLEX_POLICY_PROPORTIONAL)
        || (colon && !colon[1]))
        return cli_usage_error(cmd, "--policy: '%s' is not optimal, equal, proportional[:COL], "
                               "pfi-weighted or pfi", arg);
    if (colon)
        *by = colon + 1;
    return 0;
}

int cmd_allocate(int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_SITE_OPTIONS,
        {"policy", required_argument, NULL, 'P'},
        {"json", no_argument, NULL, 'J'},
        {"csv", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = "allocate";
    struct cli_site site;
    int json = 0, csv = 0, have_policy = 0, c, taken;
    const char *policy_by = NULL;
    enum pflex_policy policy = PFLEX_POLICY_OPTIMAL;
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
        case 'P':
            if (parse_policy(cmd, optarg, &policy, &policy_by) != 0)
                return PFLEX_EXIT_BAD_INPUT;
            have_policy = 1;
            break;
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
    if (policy_by) {
        if (site.src.by && strcmp(site.src.by, policy_by) != 0)
            return cli_usage_error(cmd, "--policy %s and --by %s name different columns",
                                   policy_by, site.src.by);
        site.src.by = policy_by;
    }
    if (!have_policy && site.src.by) {
        policy = PFLEX_POLICY_PROPORTIONAL;     /* --by COL alone: proportional to COL */
        have_policy = 1;
    }
    if (have_policy && policy == PFLEX_POLICY_PROPORTIONAL && !site.src.by)
        return cli_usage_error(cmd, "--policy proportional needs --by COLUMN (weight, gpus, "
                               "dram_copy, ...)");
    if (site.src.by && policy != PFLEX_POLICY_PROPORTIONAL)
        return cli_usage_error(cmd, "--by goes with --policy proportional");
    if (argc - optind > 1)
        return cli_usage_error(cmd, "one sweep file at most");
    if (optind < argc)
        site.src.sweep_path = argv[optind];
    else if (!site.src.pfi_path)
        site.src.sweep_path = "-";
    if (!have_policy)
        policy = site.src.sweep_path ? PFLEX_POLICY_OPTIMAL : PFLEX_POLICY_PFI_WEIGHTED;
    if (!site.src.sweep_path && policy == PFLEX_POLICY_OPTIMAL)
        return cli_usage_error(cmd, "--policy optimal needs measured curves: give a sweep");

    pflex_error_t err;
    pflex_alloc_input_t *in;
    struct pflex_alloc_problem prob;
    int load = cli_site_load(cmd, &site, &in, &prob);
    if (load < 0)
        return -load;
    prob.rate_by = in->by;
    struct pflex_alloc_plan plan;
    pflex_alloc_plan_init(&plan);
    int rc = PFLEX_EXIT_OK;
    if (pflex_alloc_plan(&prob, policy, &plan, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        rc = cli_input_exit(&err);
        goto out;
    }
    struct out o = {.in = in, .pl = &plan, .by = site.src.by,
                    .progress = site.objective == PFLEX_OBJECTIVE_PROGRESS};
    o.clamped = pflex_alloc_plan_clamped(in, &plan);
    if (json) {
        if (plan_json(&o) < 0)
            rc = PFLEX_EXIT_INTERNAL;
    } else if (csv) {
        plan_csv(&o);
    } else {
        plan_table(&o);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error(cmd, "writing the plan to stdout failed");
        rc = PFLEX_EXIT_INTERNAL;
    }
    if (rc == PFLEX_EXIT_OK && !plan.feasible) {
        cli_error(cmd, "infeasible: the least power reachable within floors and ranges is "
                  "%.1f W, over the budget of %.1f W", plan.power_w, plan.budget_w);
        rc = PFLEX_EXIT_INFEASIBLE;
    }
out:
    pflex_alloc_plan_fini(&plan);
    pflex_alloc_input_destroy(in);
    return rc;
}
