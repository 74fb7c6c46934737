/* allocate.c — pflex allocate: split a site power budget between jobs
 * (docs/contract.md §2 "Allocation problem", §4). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/site.h"
#include "pflex/csv.h"
#include "pflex/alloc.h"
#include "pflex/fmt.h"

static const char help[] =
"usage: pflex allocate [SWEEP.csv] (--budget-w W | --reduce F) [options]\n"
"       pflex allocate --pfi PFI.csv (--budget-w W | --reduce F) [options]\n"
"\n"
"Plans per-job GPU power caps under a site power budget so that total useful\n"
"throughput is as high as possible, every job keeps its service floor and the\n"
"plan's GPU power (sum over jobs of gpus x per-GPU power) stays within the\n"
"budget.  Reads a power-cap sweep (one loss curve per job) or, with --pfi\n"
"alone, a PFI CSV from 'pflex pfi --csv' (PFI, gpus, baseline per job).\n"
"'-' or no file reads the sweep from stdin.\n"
"\n"
"policies:\n"
"  equal     the same power reduction for every job, clipped at each job's\n"
"            limit, the shortfall spread over the others\n"
"  pfi       knows only each job's PFI; models loss = (1 - PFI) x reduction\n"
"            and is optimal under that model (default with --pfi alone)\n"
"  optimal   uses the measured curves; exact for convex curves, otherwise\n"
"            within gap_bound of the optimum (default with a sweep)\n"
"\n"
"options:\n"
"  --budget-w W        site budget: total GPU power allowed, W\n"
"  --reduce F          cut a fraction F of the baseline power (0..1)\n"
"  --policy P          equal, pfi or optimal\n"
"  --pfi FILE          PFI CSV: alone, the jobs; with a sweep, the PFIs the pfi\n"
"                      policy uses (measured or predicted) instead of the curves'\n"
"  --jobs FILE         jobs file (job, curve, gpus[, tier, floor, weight]): each\n"
"                      row runs the named sweep job's curve on its own GPUs\n"
"  --floor S           service floor (0..1) for jobs without a floor or tier\n"
"  --objective O       throughput (default: sum of weight x throughput) or\n"
"                      progress (sum of weight x gpus x fraction of baseline,\n"
"                      for jobs whose throughput units differ)\n"
"  --columns MAP       map foreign sweep headers: name=Header,...\n"
"  --json              one JSON document\n"
"  --csv               one CSV row per job\n"
"  -h, --help          this help\n"
"\n"
"Per job: the per-GPU power target, the cap to set (the target, or the\n"
"current cap when the job is not cut), the expected throughput and its\n"
"fraction of baseline as the policy estimates them (pfi: its linear model),\n"
"and with a sweep the fraction measured on the curve (measured_fraction).\n"
"Jobs with a curve are cut at most to their largest\n"
"measured reduction; jobs from a PFI file alone to the GPU's minimum cap\n"
"(gpu column naming a known kind) or else their PFI range.\n"
"\n"
"exit: 0 ok, 2 bad usage or input (file:line on stderr), 3 infeasible: the\n"
"floors and ranges cannot reach the budget; the plan at the least power\n"
"reachable is still printed, with \"feasible\": false.\n";

/* The plan's totals, as the JSON document's head. */
static json_t *plan_head_json(const pflex_alloc_input_t *in, const struct pflex_alloc_plan *pl)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "policy", json_string(pflex_policy_name(pl->policy)));
    json_object_set_new(doc, "baseline_w", json_real(pl->baseline_w));
    json_object_set_new(doc, "budget_w", json_real(pl->budget_w));
    json_object_set_new(doc, "power_w", json_real(pl->power_w));
    json_object_set_new(doc, "throughput", json_real(pl->throughput));
    json_object_set_new(doc, "objective", cli_json_real(pl->objective));
    json_object_set_new(doc, "feasible", json_boolean(pl->feasible));
    json_object_set_new(doc, "gap_bound", json_real(pl->gap_bound));
    if (in->has_curves) {
        double t = 0;
        for (size_t k = 0; k < in->njobs; k++)
            t += in->jobs[k].t0 * (1.0 - pflex_alloc_loss(&in->jobs[k], pl->x[k]));
        json_object_set_new(doc, "measured_throughput", json_real(t));
    }
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
    if (o->n + n > o->cap) {
        size_t ncap = o->cap ? 2 * o->cap : 1024;
        while (ncap < o->n + n)
            ncap *= 2;
        char *nb = realloc(o->b, ncap);
        if (!nb) {
            o->oom = 1;
            return;
        }
        o->b = nb;
        o->cap = ncap;
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
static int plan_json(const pflex_alloc_input_t *in, const struct pflex_alloc_plan *pl)
{
    json_t *head = plan_head_json(in, pl);
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
        job_real(&o, "power_w", pflex_alloc_power_w(j, x));
        job_real(&o, "cap_w", pflex_alloc_cap_w(j, x));
        job_real(&o, "reduction", x);
        job_real(&o, "throughput", pl->throughput_j[k]);
        job_real(&o, "fraction", pl->throughput_j[k] / j->t0);
        job_real(&o, "baseline_throughput", j->t0);
        job_real(&o, "floor", j->floor);
        job_real(&o, "limit", pl->limit[k]);
        job_real(&o, "weight", j->weight);
        if (in->has_curves)
            job_real(&o, "measured_fraction", 1.0 - pflex_alloc_loss(j, x));
        if (o.first)
            jobj_add(&o, "}", 1);
        else
            jobj_add(&o, "\n    }", 6);
        fwrite(o.b, 1, o.n, stdout);
    }
    free(o.b);
    if (o.oom)
        return -1;
    fputs(in->njobs ? "\n  ]\n}\n" : "]\n}\n", stdout);
    return ferror(stdout) ? -1 : 0;
}

/* ",%.10g" of v, through the fast exact formatter. */
static void csv_num(double v)
{
    char b[PFLEX_FMT_G_MAX + 1];
    b[0] = ',';
    int n = pflex_fmt_g(b + 1, v, 10);
    fwrite(b, 1, (size_t)n + 1, stdout);
}

static void plan_csv(const pflex_alloc_input_t *in, const struct pflex_alloc_plan *pl)
{
    printf("job,gpus,baseline_power_w,power_w,cap_w,reduction,throughput,fraction,floor,"
           "measured_fraction\n");
    for (size_t k = 0; k < in->njobs; k++) {
        const struct pflex_alloc_job *j = &in->jobs[k];
        double x = pl->x[k];
        pflex_csv_write_field(stdout, j->name);
        printf(",%d", j->gpus);
        csv_num(j->p0_w);
        csv_num(pflex_alloc_power_w(j, x));
        csv_num(pflex_alloc_cap_w(j, x));
        csv_num(x);
        csv_num(pl->throughput_j[k]);
        csv_num(pl->throughput_j[k] / j->t0);
        csv_num(j->floor);
        if (in->has_curves)
            csv_num(1.0 - pflex_alloc_loss(j, x));
        else
            putchar(',');
        putchar('\n');
    }
}

static void plan_table(const pflex_alloc_input_t *in, const struct pflex_alloc_plan *pl)
{
    int w = 24;
    for (size_t k = 0; k < in->njobs; k++) {
        int l = (int)strlen(in->jobs[k].name);
        if (l > w)
            w = l < 60 ? l : 60;
    }
    printf("%-*s %6s %9s %9s %9s %7s %12s %8s %6s\n", w, "job", "gpus", "base_W", "power_W",
           "cap_W", "reduce", "throughput", "fraction", "floor");
    for (size_t k = 0; k < in->njobs; k++) {
        const struct pflex_alloc_job *j = &in->jobs[k];
        double x = pl->x[k];
        printf("%-*s %6d %9.1f %9.1f %9.1f %7.4f %12.5g %8.4f %6.2f\n", w, j->name, j->gpus,
               j->p0_w, pflex_alloc_power_w(j, x), pflex_alloc_cap_w(j, x), x,
               pl->throughput_j[k], pl->throughput_j[k] / j->t0, j->floor);
    }
    printf("policy %s: power %.1f W of budget %.1f W (baseline %.1f W, cut %.1f%%), "
           "throughput %.6g%s\n", pflex_policy_name(pl->policy), pl->power_w, pl->budget_w,
           pl->baseline_w, 100.0 * (1.0 - pl->power_w / pl->baseline_w), pl->throughput,
           pl->feasible ? "" : "  INFEASIBLE: every job at its limit");
    if (pl->gap_bound > 0)
        printf("gap_bound %.6g: non-convex curves; the optimum is at most this much better\n",
               pl->gap_bound);
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
    enum pflex_policy policy = PFLEX_POLICY_OPTIMAL;
    cli_site_init(&site);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if ((taken = cli_site_option(cmd, &site, c, optarg)) != 0) {
            if (taken < 0)
                return PFLEX_EXIT_BAD_INPUT;
            continue;
        }
        switch (c) {
        case 'P':
            if (pflex_policy_parse(optarg, &policy) < 0)
                return cli_usage_error(cmd, "--policy: '%s' is not equal, pfi or optimal", optarg);
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
    if (argc - optind > 1)
        return cli_usage_error(cmd, "one sweep file at most");
    if (optind < argc)
        site.src.sweep_path = argv[optind];
    else if (!site.src.pfi_path)
        site.src.sweep_path = "-";
    if (!have_policy)
        policy = site.src.sweep_path ? PFLEX_POLICY_OPTIMAL : PFLEX_POLICY_PFI;
    if (!site.src.sweep_path && policy == PFLEX_POLICY_OPTIMAL)
        return cli_usage_error(cmd, "--policy optimal needs measured curves: give a sweep");

    pflex_error_t err;
    pflex_alloc_input_t *in;
    struct pflex_alloc_problem prob;
    if (cli_site_load(cmd, &site, &in, &prob) < 0)
        return PFLEX_EXIT_BAD_INPUT;
    struct pflex_alloc_plan plan;
    pflex_alloc_plan_init(&plan);
    int rc = PFLEX_EXIT_OK;
    if (pflex_alloc_plan(&prob, policy, &plan, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        rc = PFLEX_EXIT_BAD_INPUT;
        goto out;
    }
    if (json) {
        if (plan_json(in, &plan) < 0)
            rc = PFLEX_EXIT_INTERNAL;
    } else if (csv) {
        plan_csv(in, &plan);
    } else {
        plan_table(in, &plan);
    }
    if (fflush(stdout) != 0)
        rc = PFLEX_EXIT_INTERNAL;
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
