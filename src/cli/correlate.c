/* correlate.c — pflex correlate: each feature against ratio PFI over a set
 * of jobs (sweeps with telemetry columns). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "pflex/dataset.h"
#include "pflex/correlate.h"

static const char help[] =
"usage: pflex correlate [options] SWEEP.csv...\n"
"\n"
"Each feature of the jobs' uncapped runs (the telemetry columns at each\n"
"job's highest cap, as 'pflex features --sweep' computes them) against the\n"
"job's ratio PFI (SPEC 2): Pearson and Spearman coefficients, two-sided\n"
"p-values (t with n-2 df), percentile intervals from a seeded bootstrap,\n"
"and Benjamini-Hochberg q-values across the features.  Sorted by |Spearman|.\n"
"Jobs without a PFI, and a feature's missing values, are left out.\n"
"\n"
"options:\n"
"  --filter TEXT    only jobs whose name holds TEXT (e.g. h200-, -moe-)\n"
"  --boot N         bootstrap resamples (default 2000; 0: none)\n"
"  --seed S         bootstrap seed (default 1)\n"
"  --level L        interval level (default 0.95)\n"
"  --csv            feature,unit,n,pearson,pearson_lo,pearson_hi,pearson_p,pearson_q,\n"
"                   spearman,spearman_lo,spearman_hi,spearman_p,spearman_q\n"
"  --json           one JSON document\n"
"  -h, --help       this help\n"
"\n"
"EXAMPLES\n"
"  pflex study --out study-out && pflex correlate study-out/sweeps.csv\n"
"  pflex correlate --filter h200- --boot 5000 --json study-out/sweeps.csv\n"
"\n"
"exit: 0 ok, 2 bad input (file:line: what is wrong on stderr), 1 system error.\n";

static void pv(double v, const char *fmt)
{
    if (!isnan(v))
        printf(fmt, v);
}

static void bar(double r)
{
    int n = isnan(r) ? 0 : (int)lround(fabs(r) * 20);
    char b[24];
    memset(b, r < 0 ? '-' : '+', (size_t)n);
    b[n] = 0;
    printf(" %-20s", b);
}

/* What every output shows: the rows, their order, the run's settings. */
struct corr_out {
    const struct pflex_corr_row *rows;
    const size_t *order;
    size_t with_pfi;
    double boot, seed, level;
};

static int print_json(const struct corr_out *c)
{
    const struct pflex_corr_row *rows = c->rows;
    const size_t *order = c->order;
    json_t *doc = json_object(), *arr = json_array();
    json_object_set_new(doc, "target", json_string("pfi_ratio"));
    json_object_set_new(doc, "jobs", json_integer((json_int_t)c->with_pfi));
    json_object_set_new(doc, "boot", json_integer((json_int_t)c->boot));
    json_object_set_new(doc, "seed", json_integer((json_int_t)c->seed));
    json_object_set_new(doc, "level", json_real(c->level));
    for (int k = 0; k < PFLEX_FEAT_COUNT; k++) {
        const struct pflex_corr_row *r = &rows[order[k]];
        json_t *o = json_object();
        json_object_set_new(o, "feature", json_string(pflex_feat_name(order[k])));
        json_object_set_new(o, "unit", json_string(pflex_feat_unit(order[k])));
        json_object_set_new(o, "n", json_integer((json_int_t)r->n));
        const struct pflex_corr *cc[2] = {&r->pearson, &r->spearman};
        const char *nm[2] = {"pearson", "spearman"};
        for (int m = 0; m < 2; m++) {
            json_t *q = json_object();
            json_object_set_new(q, "r", cli_json_real(cc[m]->r));
            json_object_set_new(q, "lo", cli_json_real(cc[m]->lo));
            json_object_set_new(q, "hi", cli_json_real(cc[m]->hi));
            json_object_set_new(q, "p", cli_json_real(cc[m]->p));
            json_object_set_new(q, "q", cli_json_real(cc[m]->q));
            json_object_set_new(o, nm[m], q);
        }
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "features", arr);
    return cli_json_print(doc);
}

static void print_csv(const struct corr_out *c)
{
    const struct pflex_corr_row *rows = c->rows;
    const size_t *order = c->order;
    printf("feature,unit,n,pearson,pearson_lo,pearson_hi,pearson_p,pearson_q,spearman,"
           "spearman_lo,spearman_hi,spearman_p,spearman_q\n");
    for (int k = 0; k < PFLEX_FEAT_COUNT; k++) {
        const struct pflex_corr_row *r = &rows[order[k]];
        printf("%s,%s,%zu", pflex_feat_name(order[k]), pflex_feat_unit(order[k]), r->n);
        const struct pflex_corr *cc[2] = {&r->pearson, &r->spearman};
        for (int m = 0; m < 2; m++) {
            double v[5] = {cc[m]->r, cc[m]->lo, cc[m]->hi, cc[m]->p, cc[m]->q};
            for (int i = 0; i < 5; i++) {
                putchar(',');
                pv(v[i], "%.6g");
            }
        }
        putchar('\n');
    }
}

static void print_table(const struct corr_out *c)
{
    const struct pflex_corr_row *rows = c->rows;
    const size_t *order = c->order;
    printf("%-18s %4s %8s %17s %9s %8s %17s %9s  %s\n", "feature", "n", "spearman",
           "interval", "q", "pearson", "interval", "q", "|spearman|");
    for (int k = 0; k < PFLEX_FEAT_COUNT; k++) {
        const struct pflex_corr_row *r = &rows[order[k]];
        char s1[40], s2[40];
        snprintf(s1, sizeof s1, "[%6.3f, %6.3f]", r->spearman.lo, r->spearman.hi);
        snprintf(s2, sizeof s2, "[%6.3f, %6.3f]", r->pearson.lo, r->pearson.hi);
        printf("%-18s %4zu %8.3f %17s %9.2g %8.3f %17s %9.2g ", pflex_feat_name(order[k]),
               r->n, r->spearman.r, s1, r->spearman.q, r->pearson.r, s2, r->pearson.q);
        bar(r->spearman.r);
        putchar('\n');
    }
    printf("%zu jobs with a ratio PFI; %.0f%% bootstrap intervals from %.0f resamples, "
           "seed %.0f; q: Benjamini-Hochberg\n", c->with_pfi, c->level * 100, c->boot, c->seed);
}

int cmd_correlate(int argc, char **argv)
{
    enum { O_FILTER = 3000, O_BOOT, O_SEED, O_LEVEL, O_CLUSTERS };
    static const struct option opts[] = {
        {"filter", required_argument, NULL, O_FILTER},
        {"boot", required_argument, NULL, O_BOOT},
        {"seed", required_argument, NULL, O_SEED},
        {"level", required_argument, NULL, O_LEVEL},
        {"csv", no_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *filter = NULL;
    double boot = 2000, seed = 1, level = 0.95;
    int csv = 0, json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_FILTER: filter = optarg; break;
        case O_BOOT:
            if (cli_parse_double("correlate", "--boot", optarg, 0, 1e6, &boot) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_SEED:
            if (cli_parse_double("correlate", "--seed", optarg, 0, 4294967295.0, &seed) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_LEVEL:
            if (cli_parse_double("correlate", "--level", optarg, 0.5, 0.999, &level) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case 'C': csv = 1; break;
        case 'J': json = 1; break;
        case 'h': return cli_help(help);
        default: return cli_usage_error("correlate", "bad option");
        }
    }
    if (csv && json)
        return cli_usage_error("correlate", "--csv and --json exclude each other");
    struct pflex_dataset d;
    pflex_error_t err;
    if (pflex_dataset_load(argc - optind, argv + optind, NULL, filter, "pflex correlate", &d,
                           &err) < 0) {
        cli_error("correlate", "%s", err.text);
        return cli_input_exit(&err);
    }
    int rc = PFLEX_EXIT_OK;
    struct pflex_corr_row rows[PFLEX_FEAT_COUNT];
    size_t order[PFLEX_FEAT_COUNT];
    size_t with_pfi = 0;
    for (size_t i = 0; i < d.n; i++)
        with_pfi += !isnan(d.pfi[i]);
    if (with_pfi < 3) {
        cli_error("correlate", "%zu jobs with a PFI: at least 3 are needed", with_pfi);
        pflex_dataset_fini(&d);
        return PFLEX_EXIT_BAD_INPUT;
    }
    if (pflex_correlate(d.x, d.pfi, d.n, PFLEX_FEAT_COUNT, (unsigned)boot, (unsigned long)seed,
                        level, rows, &err) < 0) {
        cli_error("correlate", "%s", err.text);
        pflex_dataset_fini(&d);
        return PFLEX_EXIT_INTERNAL;
    }
    pflex_corr_rank(rows, PFLEX_FEAT_COUNT, order);
    struct corr_out out = {rows, order, with_pfi, boot, seed, level};
    if (json) {
        if (print_json(&out) < 0)
            rc = PFLEX_EXIT_INTERNAL;
    } else if (csv) {
        print_csv(&out);
    } else {
        print_table(&out);
    }
    if (fflush(stdout) != 0)
        rc = PFLEX_EXIT_INTERNAL;
    pflex_dataset_fini(&d);
    return rc;
}
