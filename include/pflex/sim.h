/* pflex/sim.h — the simulated GPUs and jobs (the `sim` backend).
 *
 * A physical model (docs/sim-model.md): each step of a job is a sequence of
 * phases (tensor-core GEMMs, attention, memory-bound kernels, optimizer,
 * exposed communication, idle).  Under a per-GPU power cap the power loop
 * runs the interleaved kernels of a micro-step at the highest SM clock whose
 * time-averaged board power fits, and every other phase at its own; the
 * memory clock stays.  A synchronous job runs at the pace of its slowest GPU.
 * Silicon variation and measurement noise come from the seed.
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
 * The description is copied and resolved (pflex_job_desc_resolve).
 * Fails with a message on an inconsistent description. */
int pflex_sim_job_create(const struct pflex_job_desc *d, uint64_t seed,
                         pflex_sim_job_t **out, pflex_error_t *err);
void pflex_sim_job_destroy(pflex_sim_job_t *j);

/* Run the job at a per-GPU cap for one measurement window (noisy).
 * cap_w is clipped to the kind's settable range and set on every GPU.
 * cap_w <= 0 (or NaN) measures at the caps currently set on the GPUs
 * (pflex_sim_job_gpu); out->cap_w is then their mean.  Successive calls
 * draw fresh noise; the sequence is fixed by the seed. */
int pflex_sim_job_measure(pflex_sim_job_t *j, double cap_w, struct pflex_sim_measure *out,
                          pflex_error_t *err);

/* The same without measurement noise (silicon variation stays): the
 * model's expectation.  Does not advance the noise sequence. */
int pflex_sim_job_expect(pflex_sim_job_t *j, double cap_w, struct pflex_sim_measure *out,
                         pflex_error_t *err);

/* The job's GPUs as a gpu_ops backend (caps set there govern measure with
 * cap_w <= 0, and sample reads each GPU's own power and telemetry).  The
 * job keeps ownership; closing the gpu handle does not destroy the job. */
void pflex_sim_job_gpu(pflex_sim_job_t *j, pflex_gpu_t *out);

/* The resolved description and the GPU kind of a job. */
const struct pflex_job_desc *pflex_sim_job_desc(const pflex_sim_job_t *j);
const struct pflex_gpu_kind *pflex_sim_job_kind(const pflex_sim_job_t *j);

/* Where the time of one step goes at full power, noise-free, slowest GPU
 * (fractions of step time; they sum to 1). */
struct pflex_sim_breakdown {
    double step_s;
    double gemm, attention, memory, optimizer, comm_exposed, bubble, host;
    double comm_total_s;        /* all communication, overlapped or not */
};
int pflex_sim_job_breakdown(pflex_sim_job_t *j, double cap_w, struct pflex_sim_breakdown *out,
                            pflex_error_t *err);

#endif
