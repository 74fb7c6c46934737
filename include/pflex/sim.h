/* pflex/sim.h — the simulated GPUs and jobs (the `sim` backend).
 * (Draft interface by the build lead; owned and extended by the sim work.
 * Keep these names: the fleet, the study and `pflex sweep` use them.)
 */
#ifndef PFLEX_SIM_H
#define PFLEX_SIM_H

#include <stdint.h>
#include "pflex/gpu.h"
#include "pflex/model.h"

typedef struct pflex_sim_job pflex_sim_job_t;

/* One measurement of a job at a per-GPU cap: what a sweep row records. */
struct pflex_sim_measure {
    double cap_w;
    double power_w;             /* mean per-GPU board power, W */
    double throughput;          /* tokens/s of the whole job */
    double step_s;              /* seconds per optimizer step */
    double tm[PFLEX_TM_COUNT];  /* mean telemetry over the job's GPUs */
};

/* Create a simulated job; seed fixes its silicon variation and noise.
 * Fails with a message on an inconsistent description. */
int pflex_sim_job_create(const struct pflex_job_desc *d, uint64_t seed,
                         pflex_sim_job_t **out, pflex_error_t *err);
void pflex_sim_job_destroy(pflex_sim_job_t *j);

/* Run the job at a per-GPU cap for one measurement window (noisy). */
int pflex_sim_job_measure(pflex_sim_job_t *j, double cap_w, struct pflex_sim_measure *out,
                          pflex_error_t *err);

/* The job's GPUs as a gpu_ops backend (caps set there govern measure). */
void pflex_sim_job_gpu(pflex_sim_job_t *j, pflex_gpu_t *out);

#endif
