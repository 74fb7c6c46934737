/* pflex/sim/sim.h — the simulated GPUs and jobs (the `sim` backend).
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
#include <stdio.h>
#include "pflex/hw/gpu.h"
#include "pflex/sim/model.h"

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

/* The model's fitted constants (docs/measurements.md, "The sim backend's calibration"; fitted by
 * `make calibrate`, tools/calibrate.c, on physical measurements only:
 * power, clocks, step times and counters, never on a PFI).  Everything
 * else is set from datasheets and the literature. */
struct pflex_sim_fit {
    double k_dyn_ga100;     /* switching power of fully busy SMs at the top clock and voltage,
                             * over the die's budget (kind dyn_budget_w): GA100 */
    double k_dyn_gh100;     /* the same for GH100 (H100, H200) */
    double w_tensor;        /* extra switching power of the tensor pipe at full issue, over
                             * that of busy SMs */
    double w_fp32;          /* the same for the FP32 CUDA-core pipe */
    double eager_mult;      /* elementwise DRAM traffic of unfused eager kernels over fused */
    double eta_dp;          /* share of the compute time that hides data-parallel traffic */
    double py_op_s;         /* host time of one operator of an eager Transformers model, s */
    double u_busy;          /* MEM_COPY_UTIL: the share of the DRAM bandwidth a kernel must
                             * stream to keep the memory busy all of the time */
    double eff_gemm;        /* achieved fraction of the tensor peak in large GEMMs */
    double v_floor_gh100;   /* GH100's V-f curve: voltage floor over the top-clock voltage */
    double knee_gh100;      /* ... and the clock fraction below which it stays at the floor */
    double eff_mem;         /* achieved fraction of the DRAM bandwidth in streaming kernels */
    double train_ops;       /* host operators of an eager training step per forward operator
                             * (forward, autograd's backward, casts; recomputation adds 1) */
    double host_b;          /* calibration only: the host time of an operator on the device
                             * runs' machine over the reference machine's (the sim runs on the
                             * reference host: py_op_s) */
};
extern const struct pflex_sim_fit pflex_sim_fit_default;     /* the constants in the source */

/* pflex_sim_job_create with other constants (NULL: the defaults). */
int pflex_sim_job_create_fit(const struct pflex_job_desc *d, uint64_t seed,
                             const struct pflex_sim_fit *fit, pflex_sim_job_t **out,
                             pflex_error_t *err);

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

/* A microbenchmark loop on one GPU of a kind, noise-free: back-to-back
 * n x n x n bf16 GEMMs (PFLEX_SIM_LOOP_GEMM, size = n; throughput in FLOP/s)
 * or copies of one device buffer into another (PFLEX_SIM_LOOP_COPY, size =
 * the buffer's bytes; throughput in bytes read + written per second), at a
 * cap as a job's phases run (the power loop, the roofline, the counters).
 * What tools/device/loops.py ran on the real H200 (docs/sim-model.md). */
enum pflex_sim_loop { PFLEX_SIM_LOOP_GEMM, PFLEX_SIM_LOOP_COPY };
int pflex_sim_loop_expect(const char *gpu, const struct pflex_sim_fit *fit,
                          enum pflex_sim_loop loop, double size, double cap_w,
                          struct pflex_sim_measure *out, pflex_error_t *err);

/* The resolved description and the GPU kind of a job. */
const struct pflex_job_desc *pflex_sim_job_desc(const pflex_sim_job_t *j);
const struct pflex_gpu_kind *pflex_sim_job_kind(const pflex_sim_job_t *j);

/* The noise-free state of every GPU at a per-GPU cap (cap_w <= 0: the
 * caps set): power_w[n] per GPU, tm[n * PFLEX_TM_COUNT] (NaN: the board has
 * no such counter), *mean the job's expectation.  Either array may be NULL. */
int pflex_sim_job_per_gpu(pflex_sim_job_t *j, double cap_w, double *power_w, double *tm,
                          struct pflex_sim_measure *mean, pflex_error_t *err);
int pflex_sim_job_gpus(const pflex_sim_job_t *j);
/* The job's own noise seed (the seed given, mixed with the description). */
uint64_t pflex_sim_job_noise_seed(const pflex_sim_job_t *j);

/* --- a whole training run, sampled as the study sampled it -------------- */

/* The phases of a run's trace (PAPER.md section 3): warm-up (frame buffer
 * under 10 GiB), start-up (weights loaded, gpu_util 0), training
 * (gpu_util >= 50 %), and inside training the evaluation and the
 * checkpoint. */
enum pflex_sim_phase {
    PFLEX_SIM_WARMUP, PFLEX_SIM_STARTUP, PFLEX_SIM_TRAINING, PFLEX_SIM_EVAL, PFLEX_SIM_CHECKPOINT,
};
const char *pflex_sim_phase_name(enum pflex_sim_phase p);

struct pflex_sim_run_opts {
    double duration_s;          /* 1800 */
    double interval_s;          /* 5: the dcgm-exporter scrape */
    double eval_at_s, eval_s;   /* 600, 60 */
    double ckpt_at_s;           /* 1200; its length follows the model's size */
    double top_frac;            /* 0.10: aggregate = mean of the top 10 % of training samples */
    unsigned run;               /* which repetition: a fresh noise stream */
};
#define PFLEX_SIM_RUN_DEFAULTS {1800, 5, 600, 60, 1200, 0.10, 0}

/* One 5-s sample of one GPU. */
struct pflex_sim_sample {
    double t_s;
    unsigned gpu;
    enum pflex_sim_phase phase;
    double fb_used_gib;         /* frame buffer in use */
    double power_w;
    double throughput;          /* the job's tokens/s over the interval (same on every GPU) */
    double tm[PFLEX_TM_COUNT];
};

/* Run the job at cap_w for one run: samples (max of them, may be NULL) in
 * time order, GPU by GPU within an instant; *n the number a full trace has
 * (gpus x duration / interval).  agg: the study's aggregate of the trace
 * (per field, the mean of the top top_frac of training-phase samples of
 * the job's mean over its GPUs).  Deterministic in (seed, job, cap, run). */
int pflex_sim_job_run(pflex_sim_job_t *j, double cap_w, const struct pflex_sim_run_opts *o,
                      struct pflex_sim_sample *samples, size_t max, size_t *n,
                      struct pflex_sim_measure *agg, pflex_error_t *err);

/* Where the time of one step goes at full power, noise-free, slowest GPU
 * (fractions of step time; they sum to 1). */
struct pflex_sim_breakdown {
    double step_s;
    double gemm, attention, memory, optimizer, comm_exposed, bubble, host;
    double comm_total_s;        /* all communication, overlapped or not */
};
int pflex_sim_job_breakdown(pflex_sim_job_t *j, double cap_w, struct pflex_sim_breakdown *out,
                            pflex_error_t *err);

/* A simulated sweep as a sweep CSV with telemetry columns (pflex/io/sweep.h)
 * on f: the header, then for each of caps[0..ncaps) in order, repeats
 * measurements (pflex_sim_job_measure), each a row labelled with d's name,
 * GPU and GPU count.  on_cap (NULL: none) is called with arg and the cap's
 * index before its measurements.  Returns 0; -1 with err when a
 * measurement fails; PFLEX_SIM_WRITE_FAILED when writing to f failed. */
#define PFLEX_SIM_WRITE_FAILED (-2)
int pflex_sim_sweep_write(pflex_sim_job_t *j, const struct pflex_job_desc *d, const double *caps,
                          int ncaps, int repeats, FILE *f, void (*on_cap)(void *arg, int i),
                          void *arg, pflex_error_t *err);

#endif
