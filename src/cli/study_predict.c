/* study_predict.c — the study's prediction sections as human tables (see
 * study_predict.h): Table 3 beside the study's numbers, the H100 transfer,
 * and the §6 protocol's gap recovered per policy and cut. */
#include <math.h>
#include "cli/study_predict.h"

static double jr(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double jri(const json_t *o, const char *k, size_t i)
{
    json_t *v = json_array_get(json_object_get(o, k), i);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void study_predict_print(FILE *f, const json_t *doc)
{
    fprintf(f, "== Table 3: fitted on the %lld H200 main-set jobs (%lld clusters; study: n = 25), "
            "in sample | leave one job out | leave one cluster out ==\n",
            (long long)json_integer_value(json_object_get(doc, "jobs")),
            (long long)json_integer_value(json_object_get(doc, "clusters")));
    fprintf(f, "(on a simulated fleet: the simulator's constants are calibrated on physical "
            "measurements only, no PFI: docs/sim-model.md)\n");
    fprintf(f, "%-38s %-6s %3s | %6s | %7s %6s %6s | %7s %6s %6s\n", "features", "model", "p",
            "R2 in", "LOO R2", "RMSE", "rho", "LOCO R2", "RMSE", "rho");
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(doc, "table3"), i, row) {
        json_t *loo = json_object_get(row, "loo"), *loco = json_object_get(row, "loco");
        const char *loo_na = json_string_value(json_object_get(row, "loo_na"));
        const char *loco_na = json_string_value(json_object_get(row, "loco_na"));
        char a[32], b[32], in[16];
        int unfit = json_object_get(row, "error") != NULL;
        if (unfit)
            loo_na = loco_na = NULL;
        if (unfit || loo_na)
            snprintf(a, sizeof a, "%7s %6s %6s", "n/a", "n/a", "n/a");
        else
            snprintf(a, sizeof a, "%7.3f %6.3f %6.3f", jr(loo, "r2"), jr(loo, "rmse"), jr(loo, "rho"));
        if (unfit || loco_na)
            snprintf(b, sizeof b, "%7s %6s %6s", "n/a", "n/a", "n/a");
        else
            snprintf(b, sizeof b, "%7.3f %6.3f %6.3f", jr(loco, "r2"), jr(loco, "rmse"),
                     jr(loco, "rho"));
        if (unfit)
            snprintf(in, sizeof in, "%6s", "n/a");
        else if (isnan(jr(row, "r2_in")))
            snprintf(in, sizeof in, "%6s", "-");
        else
            snprintf(in, sizeof in, "%6.3f", jr(row, "r2_in"));
        fprintf(f, "%-38.38s %-6s %3lld | %s | %s | %s\n",
                json_string_value(json_object_get(row, "features")),
                json_string_value(json_object_get(row, "model")),
                (long long)json_integer_value(json_object_get(row, "p")), in, a, b);
        if (unfit)
            fprintf(f, "  %s: not fitted: %s\n", json_string_value(json_object_get(row, "features")),
                    json_string_value(json_object_get(row, "error")));
        else if (loo_na || loco_na)
            fprintf(f, "  %s: %s%s%s%s%s\n", json_string_value(json_object_get(row, "features")),
                    loo_na ? "LOO n/a, " : "", loo_na ? loo_na : "",
                    loo_na && loco_na ? "; " : "", loco_na ? "LOCO n/a, " : "",
                    loco_na ? loco_na : "");
        json_t *st = json_object_get(row, "study");
        if (st)
            fprintf(f, "%-38s %-6s %3s | %6.3f | %7.3f %6.3f %6.3f | %7.3f %6.3f %6.3f\n",
                    "  the study", "", "", jr(st, "r2_in"), jr(json_object_get(st, "loo"), "r2"),
                    jr(json_object_get(st, "loo"), "rmse"), jr(json_object_get(st, "loo"), "rho"),
                    jr(json_object_get(st, "loco"), "r2"), jr(json_object_get(st, "loco"), "rmse"),
                    jr(json_object_get(st, "loco"), "rho"));
    }
    json_t *h = json_object_get(doc, "h100_transfer");
    fprintf(f, "deployed model (lowest LOO RMSE on all the jobs; its rows above are in sample for "
            "that choice, the nested row is not): %s\n"
            "the \"best model\" policies below plan each job with the nested LOO prediction (model "
            "chosen and fitted without it)\n", json_string_value(json_object_get(doc, "best_model")));
    json_t *vo = json_object_get(doc, "validation");
    if (vo) {
        fprintf(f, "held-out validation groups (%lld, never fitted on): fitted on the main set, "
                "predicted\n", (long long)json_integer_value(json_object_get(vo, "jobs")));
        size_t vi;
        json_t *vr;
        json_array_foreach(json_object_get(vo, "models"), vi, vr)
            fprintf(f, "  %-38.38s RMSE %6.3f  rho %6.3f\n",
                    json_string_value(json_object_get(vr, "features")), jr(vr, "rmse"),
                    jr(vr, "rho"));
    }
    fprintf(f, "\nDRAM-copy-product OLS fitted on H200, scored on %lld H100 jobs: R2 %.3f, RMSE "
            "%.3f, rho %.3f (study: R2 0.56)\n",
            (long long)json_integer_value(json_object_get(h, "h100_jobs")), jr(h, "r2"),
            jr(h, "rmse"), jr(h, "rho"));
    static const char *const mixes[2] = {"random", "production"};
    for (int m = 0; m < 2; m++) {
        json_t *mx = json_object_get(json_object_get(doc, "allocation"), mixes[m]);
        json_t *pol = json_object_get(mx, "policies");
        fprintf(f, "\n== §6, %s mix: %lld workloads of 100 jobs; gap recovered (pooled; median "
                "[p10, p90] over workloads) and tokens/s per job over equal ==\n", mixes[m],
                (long long)json_integer_value(json_object_get(mx, "workloads")));
        fprintf(f, "%-42s %s\n", "policy", "  cut 10%                     20%                     30%                     40%");
        const char *key;
        json_t *p;
        json_object_foreach(pol, key, p) {
            fprintf(f, "%-42.42s", json_string_value(json_object_get(p, "name")));
            for (size_t c = 2; c <= 8; c += 2)
                fprintf(f, "  %5.1f%% [%5.1f,%5.1f] %+6.0f", 100 * jri(p, "gap_recovered", c),
                        100 * jri(p, "gap_recovered_p10", c), 100 * jri(p, "gap_recovered_p90", c),
                        jri(p, "gain_over_equal_per_job", c));
            fputc('\n', f);
        }
    }
    fprintf(f, "\nthe study: production mix, 30 %% cut, pfi-weighted with predicted PFI: 63 %% of "
            "the gap, +1.5k tokens/s per job\n");
}
