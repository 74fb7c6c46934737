/* simsweep.c — a simulated sweep written as a sweep CSV (pflex/sim.h):
 * what `pflex sweep` does on the simulator. */
#include "pflex/sim.h"
#include "pflex/sweep.h"

int pflex_sim_sweep_write(pflex_sim_job_t *j, const struct pflex_job_desc *d, const double *caps,
                          int ncaps, int repeats, FILE *f, void (*on_cap)(void *arg, int i),
                          void *arg, pflex_error_t *err)
{
    if (pflex_sweep_write_header(f, 1))
        return PFLEX_SIM_WRITE_FAILED;
    for (int c = 0; c < ncaps; c++) {
        if (on_cap)
            on_cap(arg, c);
        for (int r = 0; r < repeats; r++) {
            struct pflex_sim_measure m;
            if (pflex_sim_job_measure(j, caps[c], &m, err) < 0)
                return -1;
            if (pflex_sweep_write_row(f, 1, d->name, d->gpu, d->gpus, caps[c], m.power_w,
                                      m.throughput, m.tm))
                return PFLEX_SIM_WRITE_FAILED;
        }
    }
    return 0;
}
