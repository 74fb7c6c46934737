/* pfi.c — pflex pfi: the Power Flexibility Index of each job (docs/contract.md §2, §4). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "pflex/io/csv.h"
#include "pflex/flex/pfi.h"

static const char help[] =
"usage: pflex pfi [options] [SWEEP.csv...]\n"
"\n"
"Computes each job's Power Flexibility Index from a power-cap sweep.  With\n"
"the baseline at the job's highest cap (P0, T0), each other cap k gives a\n"
"power reduction x = 1 - P/P0 (P the measured mean per-GPU power) and a\n"
"throughput loss L = 1 - T/T0.  Metrics (--metric):\n"
"  ratio       the study's PFI, the default: the mean of x/L over the capped\n"
"              points, leaving out caps that do not bind (x < 0.01) and losses\n"
"              within noise (L < 0.005).  > 1 inelastic (throughput falls\n"
"              slower than power), 1 proportional, < 1 elastic; the study's\n"
"              H200 jobs range 1.10-2.67.  Depends on the cap grid.\n"
"  area        the integral of T/T0 - P/P0 over P/P0 in [0, 1], trapezoids\n"
"              through (0,0), the capped points by power and (1,1): 0\n"
"              proportional on average, > 0 inelastic (about -0.1..0.1).\n"
"  elasticity  1 - a, a the least-squares slope of log T = a log P + c over\n"
"              every measured point: 0 proportional, 1 cuts cost nothing.\n"
"  loss-area   pflex's grid-independent variant: 1 - (integral of L(x) over\n"
"              [0, R]) / (R^2 / 2), R = min(--range, largest x): 1 cuts cost\n"
"              nothing, 0 proportional.\n"
"Also prints the baseline and shed: the largest power reduction that keeps\n"
"throughput at or above each Emerald flex tier's floor (Flex 1 = 90%,\n"
"Flex 2 = 75%, Flex 3 = 50%); a leading '\xe2\x89\xa5' marks a floor that held\n"
"over the whole measured range: the shed is then a lower bound.\n"
"'-' or no file reads standard input.\n"
"\n"
"The sweep CSV needs columns job, cap_w, power_w, throughput (gpus, gpu,\n"
"floor, tier, weight and telemetry are optional); '#' lines are comments.\n"
"\n"
"options:\n"
"  --metric M       ratio (default), area, elasticity or loss-area\n"
"  --grid W,W,...   consider only these caps (W; each must have been measured;\n"
"                   the baseline, the highest cap, is always included); applies\n"
"                   to every metric, not to the baseline and shed\n"
"  --all-metrics    every metric side by side (the PFI column stays --metric's)\n"
"  --range X        loss-area's range X in (0, 1] (default 0.30)\n"
"  --columns MAP    map foreign headers: name=Header,... e.g.\n"
"                   job=Workload,cap_w=GPU power cap,power_w=power per GPU\n"
"  --points         also print every measured point: x, L, x/L and its use\n"
"  --strict         a bad job (no positive baseline, ...) is fatal (exit 2);\n"
"                   by default it is skipped with a warning, the rest run\n"
"  --csv            the PFI CSV (job,gpus,power_w,throughput,pfi,metric,grid,\n"
"                   range,floor,gpu,cap_w,points_used,points_dropped,\n"
"                   shed_flex1..3), the input of 'pflex allocate --pfi'\n"
"  --json           one JSON document\n"
"  -h, --help       this help\n"
"\n"
"EXAMPLES\n"
"  pflex sweep --job llama-8b-pretrain-h200 --out sweep.csv   # a sweep, no GPU\n"
"  pflex pfi sweep.csv                          # ratio PFI per job\n"
"  pflex pfi --grid 200,500,600,700 sweep.csv   # on the study's coarse grid\n"
"  pflex pfi --all-metrics sweep.csv            # every metric side by side\n"
"  pflex pfi --metric loss-area --range 0.2 sweep.csv\n"
"  pflex pfi --csv sweep.csv > pfi.csv          # for 'pflex allocate --pfi'\n"
"  pflex pfi --columns 'job=Workload,cap_w=GPU power cap,power_w=power per GPU' \\\n"
"      dvfs_sweep.csv                           # a foreign file, read as it is\n"
"\n"
"exit: 0 ok, 1 internal error, 2 bad usage or input (file:line: what is wrong\n"
"on stderr, nothing on stdout).\n";

struct result {
    const struct pflex_sweep_job *job;
    struct pflex_pfi_result m[PFLEX_PFI_METRICS];   /* the ones computed */
};

struct run {
    enum pflex_pfi_metric metric;
    int all, points;
    double grid[PFLEX_PFI_GRID_MAX];
    size_t ngrid;
    double range;
};

static const char *metric_range[PFLEX_PFI_METRICS] = {
    ("> 1 inelastic (throughput falls slower than power), 1 proportional, < 1 elastic;"
     " the study's H200 jobs: 1.10-2.67"),
    "0 proportional on average, > 0 inelastic, < 0 elastic; the study's jobs: about -0.1..0.1",
    "0 proportional (T grows as P), 1 power cuts cost nothing, < 0 elastic",
    "1 power cuts cost nothing, 0 proportional loss, < 0 worse than proportional",
};

static const char *metric_formula[PFLEX_PFI_METRICS] = {
    "the study's PFI, mean of x/L over the capped points used (x < 0.01 or L < 0.005 dropped)",
    "integral of T/T0 - P/P0 d(P/P0) over [0, 1], trapezoids through (0,0) and (1,1)",
    "1 - a, a the least-squares slope of log T = a log P + c over every point",
    "pflex's grid-independent variant, 1 - integral of L over [0, R] / (R^2/2)",
};

/* One line each under --all-metrics. */
static const char *metric_short[PFLEX_PFI_METRICS] = {
    "mean x/L: > 1 inelastic, 1 proportional, < 1 elastic (the study's H200 jobs: 1.10-2.67)",
    "integral of T/T0 - P/P0 over P/P0: 0 proportional on average, > 0 inelastic",
    "1 - a, log T = a log P + c: 0 proportional, 1 power cuts cost nothing",
    "1 - integral of L over [0, R] / (R^2/2): 1 cuts cost nothing, 0 proportional",
};

/* ---- numbers and columns: one format for every number in the table -- */

/* Four significant digits, fixed point ("345.6", "0.1972", "12345"). */
static void fmt4(char *buf, size_t n, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "-");
        return;
    }
    int mag = v == 0 ? 0 : (int)floor(log10(fabs(v)));
    int dec = 3 - mag;
    if (dec < 0)
        dec = 0;
    if (dec > 10)
        dec = 10;
    snprintf(buf, n, "%.*f", dec, v);
}

/* Display width of UTF-8 text: its code points. */
static int width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void cell(const char *s, int w, int left)
{
    int pad = w - width(s);
    if (!left)
        for (int i = 0; i < pad; i++)
            putchar(' ');
    fputs(s, stdout);
    if (left)
        for (int i = 0; i < pad; i++)
            putchar(' ');
}

static void num(double v, int w)
{
    char b[64];
    fmt4(b, sizeof b, v);
    putchar(' ');
    cell(b, w, 0);
}

static void shed_cell(const struct pflex_pfi_result *r, int k)
{
    char b[64], c[72];
    fmt4(b, sizeof b, r->shed[k]);
    snprintf(c, sizeof c, "%s%s", r->shed_bound[k] ? "\xe2\x89\xa5" : "", b);
    putchar(' ');
    cell(c, 7, 0);
}

static void count(unsigned v, int w)
{
    char b[16];
    snprintf(b, sizeof b, "%u", v);
    putchar(' ');
    cell(b, w, 0);
}

static const struct pflex_pfi_result *primary(const struct result *r, const struct run *o)
{
    return &r->m[o->metric];
}

static void print_drops(const struct pflex_pfi_result *r)
{
    if (!r->points_dropped)
        return;
    printf("  dropped:");
    const char *sep = " ";
    for (size_t i = 0; i < r->npoints; i++) {
        const struct pflex_pfi_point *p = &r->points[i];
        char cap[32], x[32], l[32];
        fmt4(cap, sizeof cap, p->cap_w);
        fmt4(x, sizeof x, p->x);
        fmt4(l, sizeof l, p->loss);
        switch (p->use) {
        case PFLEX_PFI_USE_NOT_BINDING:
            if (r->metric == PFLEX_PFI_METRIC_RATIO)
                printf("%s%s W not binding (x %s < 0.01)", sep, cap, x);
            else
                printf("%s%s W not binding (x %s <= 0)", sep, cap, x);
            break;
        case PFLEX_PFI_USE_NOISE:
            printf("%s%s W loss within noise (L %s < 0.005)", sep, cap, l);
            break;
        case PFLEX_PFI_USE_NOT_POSITIVE:
            printf("%s%s W no throughput (no logarithm)", sep, cap);
            break;
        default:
            continue;
        }
        sep = "; ";
    }
    putchar('\n');
}

/* Whether the job measured grid cap g (within 0.5 W, as the library matches). */
static int measured(const struct pflex_pfi_result *r, double g)
{
    for (size_t i = 0; i < r->npoints; i++)
        if (fabs(r->points[i].cap_w - g) <= 0.5)
            return 1;
    return 0;
}

static void print_missing(const struct pflex_pfi_result *r, const struct run *o)
{
    if (!r->grid_missing)
        return;
    printf("  grid caps not measured:");
    for (size_t g = 0; g < o->ngrid; g++)
        if (!measured(r, o->grid[g]))
            printf(" %g", o->grid[g]);
    printf(" W (the PFI uses the others)\n");
}

static void print_points(const struct pflex_pfi_result *r)
{
    for (size_t i = 0; i < r->npoints; i++) {
        const struct pflex_pfi_point *p = &r->points[i];
        char c[32], pw[32], t[32], x[32], l[32], q[32];
        fmt4(c, sizeof c, p->cap_w);
        fmt4(pw, sizeof pw, p->power_w);
        fmt4(t, sizeof t, p->throughput);
        fmt4(x, sizeof x, p->x);
        fmt4(l, sizeof l, p->loss);
        fmt4(q, sizeof q, p->loss != 0 ? p->x / p->loss : NAN);
        printf("    cap %s W  power %s W  tput %s  x %s  L %s  x/L %s  %s\n", c, pw, t, x, l,
               p->use == PFLEX_PFI_USE_BASELINE ? "-" : q, pflex_pfi_use_name(p->use));
    }
}

static void grid_text(char *buf, size_t n, const struct run *o)
{
    if (!o->ngrid) {
        snprintf(buf, n, "every measured cap");
        return;
    }
    size_t len = 0;
    for (size_t g = 0; g < o->ngrid && len < n; g++)
        len += (size_t)snprintf(buf + len, n - len, "%s%g", g ? "/" : "", o->grid[g]);
    if (len < n)
        snprintf(buf + len, n - len, " W and each job's highest cap (its baseline)");
}

static void print_table(const struct result *res, size_t n, const struct run *o)
{
    char g[PFLEX_PFI_GRID_MAX * 16 + 64];
    grid_text(g, sizeof g, o);
    int w = 3;
    for (size_t i = 0; i < n; i++)
        if (width(res[i].job->name) > w)
            w = width(res[i].job->name);
    if (o->all) {
        printf("every PFI metric (shed and drops: %s); grid: %s\n",
               pflex_pfi_metric_name(o->metric), g);
        for (int m = 0; m < PFLEX_PFI_METRICS; m++)
            printf("  %-10s %s\n", pflex_pfi_metric_name(m), metric_short[m]);
        printf("  (loss-area over R = min(%g, largest x); used/dropped: ratio's)\n", o->range);
        cell("job", w, 1);
        printf(" %4s %6s %6s %9s %7s %4s %7s %7s %10s %9s %7s %7s %7s\n", "gpus", "cap_W",
               "base_W", "base_tput", "ratio", "used", "dropped", "area", "elasticity",
               "loss-area", "shed1", "shed2", "shed3");
    } else {
        printf("metric: %s, %s\n        %s\ngrid: %s\n", pflex_pfi_metric_name(o->metric),
               metric_formula[o->metric], metric_range[o->metric], g);
        cell("job", w, 1);
        printf(" %4s %6s %6s %9s %7s %4s %7s", "gpus", "cap_W", "base_W", "base_tput", "PFI",
               "used", "dropped");
        if (o->metric == PFLEX_PFI_METRIC_LOSS_AREA)
            printf(" %6s", "R");
        if (o->metric == PFLEX_PFI_METRIC_ELASTICITY)
            printf(" %6s", "R^2");
        printf(" %7s %7s %7s\n", "shed1", "shed2", "shed3");
    }
    for (size_t i = 0; i < n; i++) {
        const struct result *r = &res[i];
        const struct pflex_pfi_result *p = primary(r, o);
        cell(r->job->name, w, 1);
        count((unsigned)r->job->gpus, 4);
        num(p->cap0_w, 6);
        num(p->p0_w, 6);
        num(p->t0, 9);
        if (o->all) {
            const struct pflex_pfi_result *q = &r->m[PFLEX_PFI_METRIC_RATIO];
            num(q->pfi, 7);
            count(q->points_used, 4);
            count(q->points_dropped, 7);
            num(r->m[PFLEX_PFI_METRIC_AREA].pfi, 7);
            num(r->m[PFLEX_PFI_METRIC_ELASTICITY].pfi, 10);
            num(r->m[PFLEX_PFI_METRIC_LOSS_AREA].pfi, 9);
        } else {
            num(p->pfi, 7);
            count(p->points_used, 4);
            count(p->points_dropped, 7);
            if (o->metric == PFLEX_PFI_METRIC_LOSS_AREA)
                num(p->range_used, 6);
            if (o->metric == PFLEX_PFI_METRIC_ELASTICITY)
                num(p->r2, 6);
        }
        for (int k = 1; k < 4; k++)
            shed_cell(p, k);
        putchar('\n');
        if (o->all) {
            for (int m = 0; m < PFLEX_PFI_METRICS; m++)
                if (!r->m[m].valid)
                    printf("  (no %s: %s)\n", pflex_pfi_metric_name(m), r->m[m].reason);
            print_drops(&r->m[PFLEX_PFI_METRIC_RATIO]);
        } else {
            if (!p->valid)
                printf("  (no PFI: %s)\n", p->reason);
            print_drops(p);
        }
        print_missing(p, o);
        if (o->points)
            print_points(p);
    }
    printf("shedN: the largest power reduction keeping throughput at or above the Flex N floor\n"
           "(90/75/50%%); \xe2\x89\xa5: the floor held over the whole measured range, a lower bound.\n");
}

/* ---- JSON, CSV --------------------------------------------------------- */

static json_t *caps_json(const struct pflex_pfi_result *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->npoints; i++)
        if (r->points[i].use != PFLEX_PFI_USE_OFF_GRID)
            json_array_append_new(a, json_real(r->points[i].cap_w));
    return a;
}

static json_t *metric_json(const struct pflex_pfi_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "pfi", r->valid ? cli_json_real(r->pfi) : json_null());
    if (!r->valid)
        json_object_set_new(o, "reason", json_string(r->reason));
    json_object_set_new(o, "points_used", json_integer(r->points_used));
    json_object_set_new(o, "points_dropped", json_integer(r->points_dropped));
    if (r->metric == PFLEX_PFI_METRIC_LOSS_AREA)
        json_object_set_new(o, "range_used", cli_json_real(r->range_used));
    if (r->metric == PFLEX_PFI_METRIC_ELASTICITY) {
        json_object_set_new(o, "alpha", cli_json_real(r->alpha));
        json_object_set_new(o, "r2", cli_json_real(r->r2));
    }
    return o;
}

static json_t *job_json(const struct result *res, const struct run *o)
{
    const struct pflex_sweep_job *j = res->job;
    const struct pflex_pfi_result *r = primary(res, o);
    json_t *d = json_object();
    json_object_set_new(d, "job", json_string(j->name));
    json_object_set_new(d, "gpus", json_integer(j->gpus));
    if (j->gpu)
        json_object_set_new(d, "gpu", json_string(j->gpu));
    json_object_set_new(d, "baseline_cap_w", json_real(r->cap0_w));
    json_object_set_new(d, "baseline_power_w", json_real(r->p0_w));
    json_object_set_new(d, "baseline_throughput", json_real(r->t0));
    json_object_set_new(d, "metric", json_string(pflex_pfi_metric_name(r->metric)));
    json_object_set_new(d, "pfi", r->valid ? cli_json_real(r->pfi) : json_null());
    if (!r->valid)
        json_object_set_new(d, "reason", json_string(r->reason));
    json_object_set_new(d, "points_used", json_integer(r->points_used));
    json_object_set_new(d, "points_dropped", json_integer(r->points_dropped));
    json_t *dr = json_array();
    for (size_t i = 0; i < r->npoints; i++) {
        const struct pflex_pfi_point *p = &r->points[i];
        if (p->use < PFLEX_PFI_USE_NOT_BINDING)
            continue;
        json_t *e = json_object();
        json_object_set_new(e, "cap_w", json_real(p->cap_w));
        json_object_set_new(e, "reason", json_string(pflex_pfi_use_name(p->use)));
        json_object_set_new(e, "reduction", cli_json_real(p->x));
        json_object_set_new(e, "loss", cli_json_real(p->loss));
        json_array_append_new(dr, e);
    }
    json_object_set_new(d, "dropped", dr);
    json_object_set_new(d, "points_off_grid", json_integer(r->off_grid));
    json_object_set_new(d, "grid", caps_json(r));
    if (o->ngrid) {
        json_t *miss = json_array();
        for (size_t g = 0; g < o->ngrid; g++)
            if (!measured(r, o->grid[g]))
                json_array_append_new(miss, json_real(o->grid[g]));
        json_object_set_new(d, "grid_missing", miss);
    }
    json_object_set_new(d, "range_used", r->metric == PFLEX_PFI_METRIC_LOSS_AREA
                                         ? cli_json_real(r->range_used) : json_null());
    if (r->metric == PFLEX_PFI_METRIC_ELASTICITY) {
        json_object_set_new(d, "alpha", cli_json_real(r->alpha));
        json_object_set_new(d, "r2", cli_json_real(r->r2));
    }
    json_object_set_new(d, "x_max", json_real(r->x_max));
    if (!isnan(j->floor))
        json_object_set_new(d, "floor", json_real(j->floor));
    json_t *shed = json_object(), *bound = json_object();
    static const char *const tier[4] = {"flex0", "flex1", "flex2", "flex3"};
    for (int k = 1; k < 4; k++) {
        json_object_set_new(shed, tier[k], json_real(r->shed[k]));
        json_object_set_new(bound, tier[k], json_boolean(r->shed_bound[k]));
    }
    json_object_set_new(d, "shed", shed);
    json_object_set_new(d, "shed_lower_bound", bound);
    if (o->all) {
        json_t *pm = json_object();
        for (int m = 0; m < PFLEX_PFI_METRICS; m++)
            json_object_set_new(pm, pflex_pfi_metric_name(m), metric_json(&res->m[m]));
        json_object_set_new(d, "pfi_metrics", pm);
    }
    if (o->points) {
        json_t *a = json_array();
        for (size_t i = 0; i < r->npoints; i++) {
            const struct pflex_pfi_point *p = &r->points[i];
            json_t *e = json_object();
            json_object_set_new(e, "cap_w", json_real(p->cap_w));
            json_object_set_new(e, "power_w", json_real(p->power_w));
            json_object_set_new(e, "throughput", json_real(p->throughput));
            json_object_set_new(e, "reduction", cli_json_real(p->x));
            json_object_set_new(e, "loss", cli_json_real(p->loss));
            json_object_set_new(e, "pfi", p->use == PFLEX_PFI_USE_BASELINE || p->loss == 0
                                          ? json_null() : cli_json_real(p->x / p->loss));
            json_object_set_new(e, "use", json_string(pflex_pfi_use_name(p->use)));
            json_array_append_new(a, e);
        }
        json_object_set_new(d, "points", a);
    }
    return d;
}

static void csv_num(double v)
{
    if (isfinite(v))
        printf("%.10g", v);
}

static void print_csv(const struct result *res, size_t n, const struct run *o)
{
    printf("job,gpus,power_w,throughput,pfi,metric,grid,range,floor,gpu,cap_w,points_used,"
           "points_dropped,shed_flex1,shed_flex2,shed_flex3%s\n",
           o->all ? ",pfi_ratio,pfi_area,pfi_elasticity,pfi_loss_area" : "");
    for (size_t i = 0; i < n; i++) {
        const struct pflex_sweep_job *j = res[i].job;
        const struct pflex_pfi_result *r = primary(&res[i], o);
        pflex_csv_write_field(stdout, j->name);
        printf(",%d,%.10g,%.10g,", j->gpus, r->p0_w, r->t0);
        if (r->valid)
            csv_num(r->pfi);
        printf(",%s,", pflex_pfi_metric_name(r->metric));
        const char *sep = "";
        for (size_t k = 0; k < r->npoints; k++)
            if (r->points[k].use != PFLEX_PFI_USE_OFF_GRID) {
                printf("%s%.10g", sep, r->points[k].cap_w);
                sep = "/";
            }
        putchar(',');
        if (r->metric == PFLEX_PFI_METRIC_LOSS_AREA && r->valid)
            csv_num(r->range_used);
        putchar(',');
        if (!isnan(j->floor))
            csv_num(j->floor);
        putchar(',');
        if (j->gpu)
            pflex_csv_write_field(stdout, j->gpu);
        printf(",%.10g,%u,%u,%.10g,%.10g,%.10g", r->cap0_w, r->points_used, r->points_dropped,
               r->shed[1], r->shed[2], r->shed[3]);
        if (o->all)
            for (int m = 0; m < PFLEX_PFI_METRICS; m++) {
                putchar(',');
                if (res[i].m[m].valid)
                    csv_num(res[i].m[m].pfi);
            }
        putchar('\n');
    }
}

/* ---- the command ------------------------------------------------------ */

struct pfi_cmd {
    struct run o;
    const char *columns;
    int csv, json, strict;
    char **files;
    size_t nfiles;
    pflex_sweep_t **sweeps;     /* one per file */
    struct result *res;         /* every job of every file */
    size_t total;
    json_t *skipped;            /* the bad jobs skipped: [{job, why}], or NULL */
};

/* A bad job left out: said on stderr, kept for --json. */
static void skip(struct pfi_cmd *c, const char *file, const struct pflex_sweep_job *job,
                 const char *why)
{
    fprintf(stderr, "pflex pfi: warning: %s:%u: job '%s': %s; skipped (--strict makes a bad "
            "job fatal)\n", file, job->line, job->name, why);
    if (!c->skipped)
        c->skipped = json_array();
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(job->name));
    json_object_set_new(o, "why", json_string(why));
    json_array_append_new(c->skipped, o);
}

/* Options and operands into c; 0, or the exit status of a usage error. */
static int parse_args(int argc, char **argv, struct pfi_cmd *c)
{
    static const struct option opts[] = {
        {"metric", required_argument, NULL, 'm'},
        {"grid", required_argument, NULL, 'g'},
        {"all-metrics", no_argument, NULL, 'A'},
        {"range", required_argument, NULL, 'r'},
        {"columns", required_argument, NULL, 'c'},
        {"points", no_argument, NULL, 'p'},
        {"strict", no_argument, NULL, 1001},
        {"csv", no_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static char *stdin_only[] = {"-"};
    struct run *o = &c->o;
    int range_given = 0, ch;
    pflex_error_t err;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case 'm':
            if (pflex_pfi_metric_parse(optarg, &o->metric, &err) < 0)
                return cli_usage_error("pfi", "--metric: %s", err.text);
            break;
        case 'g':
            if (pflex_pfi_grid_parse(optarg, o->grid, &o->ngrid, &err) < 0)
                return cli_usage_error("pfi", "--grid: %s", err.text);
            break;
        case 'A': o->all = 1; break;
        case 'r':
            if (cli_parse_double("pfi", "--range", optarg, 1e-6, 1.0, &o->range) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            range_given = 1;
            break;
        case 'c': c->columns = optarg; break;
        case 'p': o->points = 1; break;
        case 1001: c->strict = 1; break;
        case 'C': c->csv = 1; break;
        case 'J': c->json = 1; break;
        case 'h': return -1;
        default: return cli_bad_option("pfi", argv, opts);
        }
    }
    if (c->csv && c->json)
        return cli_usage_error("pfi", "--csv and --json exclude each other");
    if (range_given && !o->all && o->metric != PFLEX_PFI_METRIC_LOSS_AREA)
        return cli_usage_error("pfi", "--range is the loss-area metric's; add --metric loss-area "
                               "(or --all-metrics)");
    c->files = optind < argc ? argv + optind : stdin_only;
    c->nfiles = optind < argc ? (size_t)(argc - optind) : 1;
    return 0;
}

/* Every input read (warnings printed); c->total jobs in all. */
static int read_inputs(struct pfi_cmd *c)
{
    pflex_error_t err;
    c->sweeps = calloc(c->nfiles, sizeof *c->sweeps);
    if (!c->sweeps)
        return PFLEX_EXIT_INTERNAL;
    for (size_t f = 0; f < c->nfiles; f++) {
        errno = 0;
        if (pflex_sweep_read_file_flags(c->files[f], c->columns,
                                        c->strict ? 0 : PFLEX_SWEEP_KEEP_BAD, &c->sweeps[f],
                                        &err) < 0) {
            cli_error("pfi", "%s", err.text);
            return cli_input_exit(&err);
        }
        cli_print_warnings("pfi", c->sweeps[f]->warnings);
        c->total += c->sweeps[f]->njobs;
    }
    return PFLEX_EXIT_OK;
}

/* The metric (or every metric) of every job. */
static int run_metrics(struct pfi_cmd *c)
{
    const struct run *o = &c->o;
    pflex_error_t err;
    size_t done = 0;
    c->res = calloc(c->total ? c->total : 1, sizeof *c->res);
    if (!c->res)
        return PFLEX_EXIT_INTERNAL;
    size_t skipped = 0;
    for (size_t f = 0; f < c->nfiles; f++)
        for (size_t j = 0; j < c->sweeps[f]->njobs; j++) {
            const struct pflex_sweep_job *job = &c->sweeps[f]->jobs[j];
            c->res[done].job = job;
            int bad = 0;
            if (pflex_sweep_job_check(job, &err) < 0) {
                skip(c, c->files[f], job, err.text);
                bad = 1;
            }
            for (int m = 0; m < PFLEX_PFI_METRICS && !bad; m++) {
                if (!o->all && m != (int)o->metric)
                    continue;
                struct pflex_pfi_opts po = {(enum pflex_pfi_metric)m, o->ngrid ? o->grid : NULL,
                                            o->ngrid, o->range, 1};
                if (pflex_pfi_eval(job->points, job->npoints, &po, &c->res[done].m[m], &err)
                    < 0) {
                    int nomem = errno == ENOMEM;
                    if (nomem || c->strict) {
                        cli_error("pfi", "%s:%u: job '%s': %s", c->files[f], job->line,
                                  job->name, err.text);
                        c->total = done + 1;    /* what is to be freed */
                        return nomem ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_BAD_INPUT;
                    }
                    /* one bad job does not take the file's others with it */
                    skip(c, c->files[f], job, err.text);
                    bad = 1;
                }
            }
            if (bad) {
                for (int m = 0; m < PFLEX_PFI_METRICS; m++)
                    pflex_pfi_result_fini(&c->res[done].m[m]);
                memset(&c->res[done], 0, sizeof c->res[done]);
                skipped++;
            } else {
                done++;
            }
        }
    c->total = done;
    if (done == 0 && skipped) {
        /* nothing to print: the error is the strict reading's, in its words
         * (file:line: column ...), where the files can be read again */
        for (size_t f = 0; f < c->nfiles; f++) {
            pflex_sweep_t *sw = NULL;
            if (strcmp(c->files[f], "-") == 0)
                continue;
            if (pflex_sweep_read_file(c->files[f], c->columns, &sw, &err) < 0) {
                cli_error("pfi", "%s", err.text);
                return cli_input_exit(&err);
            }
            pflex_sweep_destroy(sw);
        }
        cli_error("pfi", "no job left: every job is bad (each is named above)");
        return PFLEX_EXIT_BAD_INPUT;
    }
    return PFLEX_EXIT_OK;
}

/* A grid cap no job was measured at is a mistake, not a missing run. */
static int check_grid(const struct pfi_cmd *c)
{
    const struct run *o = &c->o;
    for (size_t g = 0; g < o->ngrid; g++) {
        size_t i = 0;
        while (i < c->total && !measured(primary(&c->res[i], o), o->grid[g]))
            i++;
        if (i < c->total || c->total == 0)
            continue;
        const struct pflex_pfi_result *r0 = primary(&c->res[0], o);
        char caps[160];
        size_t len = 0;
        for (size_t k = 0; k < r0->npoints && len < sizeof caps - 24; k++)
            len += (size_t)snprintf(caps + len, sizeof caps - len, "%s%g", k ? "/" : "",
                                    r0->points[k].cap_w);
        cli_error("pfi", "--grid: cap %g W was measured for no job (job '%s' has %s W)",
                  o->grid[g], c->res[0].job->name, caps);
        return PFLEX_EXIT_BAD_INPUT;
    }
    return PFLEX_EXIT_OK;
}

/* --json: the run's metric, grid and range, then every job. */
static int print_json(const struct result *res, size_t n, const struct run *o, json_t *skipped)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "metric", json_string(pflex_pfi_metric_name(o->metric)));
    json_t *g = json_null();
    if (o->ngrid) {
        g = json_array();
        for (size_t k = 0; k < o->ngrid; k++)
            json_array_append_new(g, json_real(o->grid[k]));
    }
    json_object_set_new(doc, "grid", g);
    json_object_set_new(doc, "range", o->all || o->metric == PFLEX_PFI_METRIC_LOSS_AREA
                                      ? json_real(o->range) : json_null());
    json_t *jobs = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(jobs, job_json(&res[i], o));
    json_object_set_new(doc, "jobs", jobs);
    if (skipped)        /* only where a job was: the document is otherwise as before */
        json_object_set(doc, "skipped", skipped);
    return cli_json_print(doc);
}

int cmd_pfi(int argc, char **argv)
{
    struct pfi_cmd c = {.o = {.metric = PFLEX_PFI_METRIC_RATIO,
                              .range = PFLEX_PFI_RANGE_DEFAULT}};
    int rc = parse_args(argc, argv, &c);
    if (rc < 0)
        return cli_help(help);
    if (rc)
        return rc;
    rc = read_inputs(&c);
    if (rc == PFLEX_EXIT_OK)
        rc = run_metrics(&c);
    if (rc == PFLEX_EXIT_OK)
        rc = check_grid(&c);
    if (rc == PFLEX_EXIT_OK) {
        if (c.json) {
            if (print_json(c.res, c.total, &c.o, c.skipped) < 0)
                rc = PFLEX_EXIT_INTERNAL;
        } else if (c.csv) {
            print_csv(c.res, c.total, &c.o);
        } else {
            print_table(c.res, c.total, &c.o);
        }
        if (fflush(stdout) != 0 || ferror(stdout))
            rc = PFLEX_EXIT_INTERNAL;
    }
    if (c.res)
        for (size_t i = 0; i < c.total; i++)
            for (int m = 0; m < PFLEX_PFI_METRICS; m++)
                pflex_pfi_result_fini(&c.res[i].m[m]);
    free(c.res);
    json_decref(c.skipped);
    for (size_t f = 0; c.sweeps && f < c.nfiles; f++)
        pflex_sweep_destroy(c.sweeps[f]);
    free(c.sweeps);
    return rc;
}
