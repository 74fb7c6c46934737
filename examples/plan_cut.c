/* plan_cut.c — libpflex on its own: read a power-cap sweep, measure each
 * job's PFI, and plan a site power cut with service floors.
 *
 *   plan_cut SWEEP.csv CUT [FLOOR]      e.g.  plan_cut examples/plan_cut.csv 0.2 0.8
 *
 * CUT is the fraction of the jobs' baseline GPU power to shed (0.2 = 20%),
 * FLOOR the share of baseline throughput every job without its own floor
 * keeps (default: none).  It prints one "pfi" line a job, one "plan" line a
 * job and a "total" line; the numbers are those of `pflex pfi --csv` and
 * `pflex allocate --reduce CUT --floor FLOOR --csv` on the same sweep.
 *
 * Build (from the repository, after `make`):
 *   cc -Iinclude examples/plan_cut.c build/libpflex.a \
 *      $(pkg-config --libs gsl jansson libmicrohttpd libcurl sqlite3) -ldl -lm -lpthread
 * or against an installed tree: -I$PREFIX/include $PREFIX/lib/libpflex.a ...
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "pflex/flex/alloc.h"
#include "pflex/flex/pfi.h"
#include "pflex/io/sweep.h"

/* Every job's ratio PFI (the study's: the mean over the capped points of
 * power reduction / throughput loss; > 1 inelastic, < 1 elastic). */
static int print_pfi(const char *path)
{
    pflex_sweep_t *sw;
    pflex_error_t err;
    if (pflex_sweep_read_file(path, NULL, &sw, &err) < 0) {
        fprintf(stderr, "plan_cut: %s\n", err.text);
        return -1;
    }
    for (size_t i = 0; i < sw->njobs; i++) {
        const struct pflex_sweep_job *j = &sw->jobs[i];
        struct pflex_pfi_ratio r;
        /* NULL, 0: every measured cap, the highest one being the baseline */
        if (pflex_pfi_ratio(j->points, j->npoints, NULL, 0, &r, &err) < 0) {
            fprintf(stderr, "plan_cut: %s: %s\n", j->name, err.text);
            pflex_sweep_destroy(sw);
            return -1;
        }
        if (r.valid)
            printf("pfi %s %.10g %u\n", j->name, r.pfi, r.used);
        else
            printf("pfi %s - 0 (%s)\n", j->name, r.reason);
    }
    pflex_sweep_destroy(sw);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: plan_cut SWEEP.csv CUT [FLOOR]\n");
        return 2;
    }
    double cut = atof(argv[2]), floor_s = argc > 3 ? atof(argv[3]) : NAN;
    if (!(cut >= 0 && cut < 1) || (argc > 3 && !(floor_s >= 0 && floor_s <= 1))) {
        fprintf(stderr, "plan_cut: CUT in [0, 1), FLOOR in [0, 1]\n");
        return 2;
    }
    if (print_pfi(argv[1]) < 0)
        return 1;

    /* The planning problem as `pflex allocate` reads it: per job its GPUs,
     * baseline power and throughput, loss curve, floor (its own, or FLOOR)
     * and the range of caps the GPU accepts. */
    struct pflex_alloc_source src = {.sweep_path = argv[1], .floor = floor_s};
    pflex_alloc_input_t *in;
    pflex_error_t err;
    if (pflex_alloc_input_read(&src, &in, &err) < 0) {
        fprintf(stderr, "plan_cut: %s\n", err.text);
        return 1;
    }
    struct pflex_alloc_problem prob = {
        .njobs = in->njobs, .jobs = in->jobs, .objective = PFLEX_OBJECTIVE_THROUGHPUT,
    };
    prob.budget_w = (1.0 - cut) * pflex_alloc_baseline_w(&prob);

    /* OPTIMAL plans on the measured curves: the most throughput under the
     * budget, each job at or above its floor. */
    struct pflex_alloc_plan plan;
    pflex_alloc_plan_init(&plan);
    int rc = 0;
    if (pflex_alloc_plan(&prob, PFLEX_POLICY_OPTIMAL, &plan, &err) < 0) {
        fprintf(stderr, "plan_cut: %s\n", err.text);
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < in->njobs; i++) {
        const struct pflex_alloc_job *j = &in->jobs[i];
        double x = plan.x[i];   /* the job's per-GPU power reduction, 0..1 */
        /* the cap that draws P0 (1 - x), interpolated on the job's own
         * (cap, power) points and kept within the GPU's settable range */
        double cap_w = pflex_alloc_cap_w(j, &in->caps[i], x);
        printf("plan %s gpus %d power_w %.10g cap_w %.10g reduction %.10g fraction %.10g\n",
               j->name, j->gpus, pflex_alloc_power_w(j, x), cap_w, x,
               pflex_alloc_measured_fraction(j, x));
    }
    printf("total power_w %.10g budget_w %.10g baseline_w %.10g throughput %.10g%s\n",
           plan.power_w, plan.budget_w, plan.baseline_w, plan.measured_throughput,
           plan.feasible ? "" : " infeasible");
    if (!plan.feasible)
        rc = 3;
out:
    pflex_alloc_plan_fini(&plan);
    pflex_alloc_input_destroy(in);
    return rc;
}
