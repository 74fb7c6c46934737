/* run.c — a whole 30-minute training run, sampled every 5 s as the study's
 * dcgm-exporter sidecar sampled it, and the study's aggregate of it.
 *
 * The steady state at the cap comes from the model (pflex_sim_job_per_gpu);
 * the trace adds what a run has around it: a warm-up while the process
 * starts (frame buffer under 10 GiB), a start-up while the weights load
 * (gpu_util 0), then training, interrupted by an evaluation at 10 minutes
 * (forward passes only: lower power, no training tokens) and a checkpoint
 * at 20 minutes (the GPUs wait on storage).  Each 5-s sample carries the
 * noise of a short window: the board's power sensor, and the steps that
 * fall in the window.  The aggregate is the study's: per field, the mean of
 * the top 10 % of training-phase samples (gpu_util >= 50 %), which leaves
 * the evaluation and the checkpoint out.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/sim/sim.h"
#include "lib/util/mix.h"

/* Relative 1-sigma noise of one sample, per field: the sample-to-sample
 * spread of the real H200 runs' telemetry (shared/data/h200-uncapped/
 * telemetry, NVML/GPM samples 0.5 s apart, the median over the four
 * training runs of each field's standard deviation over its mean): power
 * 0.5 %, SM_ACTIVE 0.3 %, PIPE_TENSOR_ACTIVE and DRAM_ACTIVE 1.5 %,
 * MEM_COPY_UTIL 6.5 % (a coarser, integer-percent sampler: not the same
 * quantity as DRAM_ACTIVE, and noisier), GPU_UTIL 1 %, GR_ENGINE_ACTIVE
 * 0.2 %, SM_OCCUPANCY 0.5 %, PCIe bytes 8 %; the SM clock 2.6 % where the
 * power limit binds (the loop dithers) and none where it does not.
 * Tokens/s: step-time jitter of synchronous training, about 1 %. */
#define NOISE_POWER 0.005
#define NOISE_TPUT 0.012
#define NOISE_CLOCK_CAPPED 0.026
static const double noise_tm[PFLEX_TM_COUNT] = {
    [PFLEX_TM_GPU_UTIL] = 0.010, [PFLEX_TM_MEM_COPY_UTIL] = 0.065,
    [PFLEX_TM_SM_ACTIVE] = 0.003, [PFLEX_TM_SM_OCCUPANCY] = 0.005,
    [PFLEX_TM_TENSOR_ACTIVE] = 0.015, [PFLEX_TM_DRAM_ACTIVE] = 0.015,
    [PFLEX_TM_GR_ENGINE_ACTIVE] = 0.002, [PFLEX_TM_PCIE_TX_BYTES] = 0.08,
    [PFLEX_TM_PCIE_RX_BYTES] = 0.08, [PFLEX_TM_NVLINK_TX_BYTES] = 0.015,
    [PFLEX_TM_NVLINK_RX_BYTES] = 0.015,
};
/* Run to run (a repeated configuration: other nodes, other silicon state,
 * another data order): the study's median coefficient of variation, 0.4 %
 * of power and 0.5 % of tokens/s (PAPER.md section 3); the counters are
 * given the power's (assumed). */
#define RUN_CV_POWER 0.004
#define RUN_CV_TPUT 0.005
#define RUN_CV_TM 0.004

const char *pflex_sim_phase_name(enum pflex_sim_phase p)
{
    static const char *const names[] = {"warmup", "startup", "training", "eval", "checkpoint"};
    return (unsigned)p < 5 ? names[p] : NULL;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Reorder v[0..n) so that its k largest values come first (k < n): a
 * quickselect on descending order, O(n). */
static void select_top(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] > pivot)
                i++;
            while (v[j] < pivot)
                j--;
            if (i <= j) {
                double x = v[i];
                v[i] = v[j];
                v[j] = x;
                i++;
                if (j-- == 0)
                    break;
            }
        }
        /* now v[lo..j] >= pivot >= v[i..hi], and j < i */
        if (k - 1 <= j && j != (size_t)-1)
            hi = j;
        else if (k - 1 >= i)
            lo = i;
        else
            return;
    }
}

/* Mean of the top frac of v[0..n) (at least one value), summed from the
 * largest down; reorders v.  Only the top values are sorted: a run's
 * aggregation takes its top 10 %. */
static double top_mean(double *v, size_t n, double frac)
{
    if (n == 0)
        return NAN;
    size_t k = (size_t)ceil(frac * (double)n);
    if (k < 1)
        k = 1;
    int finite = 1;
    for (size_t i = 0; i < n && finite; i++)
        finite = !isnan(v[i]);
    /* NaN has no place in an order: the whole array goes through qsort,
     * as it always did */
    if (finite && k < n)
        select_top(v, n, k);
    qsort(v, finite && k < n ? k : n, sizeof *v, cmp_desc);
    double s = 0;
    for (size_t i = 0; i < k; i++)
        s += v[i];
    return s / (double)k;
}

/* Long: a run's timeline (start-up, training, evaluation, checkpoint) and
 * the study's aggregate over it, in the order docs/sim-model.md tells them. */
int pflex_sim_job_run(pflex_sim_job_t *j, double cap_w, const struct pflex_sim_run_opts *o,
                      struct pflex_sim_sample *samples, size_t max, size_t *n,
                      struct pflex_sim_measure *agg, pflex_error_t *err)
{
    static const struct pflex_sim_run_opts defaults = PFLEX_SIM_RUN_DEFAULTS;
    if (!j)
        return pflex_error_set(err, "sim: no job");
    if (!o)
        o = &defaults;
    if (!(o->interval_s > 0) || !(o->duration_s >= o->interval_s) || o->duration_s > 86400 * 7
        || !(o->top_frac > 0 && o->top_frac <= 1))
        return pflex_error_set(err, "sim: run of %g s sampled every %g s, top %g: out of range",
                               o->duration_s, o->interval_s, o->top_frac);
    int g = pflex_sim_job_gpus(j);
    const struct pflex_job_desc *d = pflex_sim_job_desc(j);
    const struct pflex_gpu_kind *k = pflex_sim_job_kind(j);
    size_t nt = (size_t)floor(o->duration_s / o->interval_s + 1e-9);
    double *pw = malloc((size_t)g * sizeof *pw);
    double *tm = malloc((size_t)g * PFLEX_TM_COUNT * sizeof *tm);
    double *col = malloc(nt * (PFLEX_TM_COUNT + 2) * sizeof *col);
    struct pflex_sim_measure mean;
    int rc = -1;
    if (!pw || !tm || !col) {
        pflex_error_set(err, "out of memory");
        goto out;
    }
    if (pflex_sim_job_per_gpu(j, cap_w, pw, tm, &mean, err) < 0)
        goto out;
    /* The run's timeline: process start and allocator warm-up, weights
     * loaded from storage (about 2 GB/s per GPU of its shard), the
     * evaluation, a checkpoint written at about 1 GB/s per GPU. */
    double shard_gb = d->params_b * 2 / g;
    double warm_end = 60, start_end = warm_end + 20 + shard_gb / 2.0;
    double ckpt_s = 10 + d->params_b * (d->kind == PFLEX_JOB_FINETUNE_LORA ? 0.2 : 14.0) / g;
    double fb_train = fmin(k->mem_gb * 0.85, 12 + shard_gb * 4);
    uint64_t seed = pflex_mix64(pflex_sim_job_noise_seed(j) ^ pflex_mix64((uint64_t)llround(cap_w * 16))
                        ^ pflex_mix64(0x72756eULL + o->run));
    size_t ntrain = 0, nsched = 0;
    double *ptr = col, *ttr = col + nt, *ftr = col + 2 * nt;
    /* The study's training phase is gpu_util >= 50 %; a run that never
     * reaches it (a host-bound job) is taken by its schedule instead. */
    int by_util = 1;
    size_t written;
    uint64_t rs = pflex_mix64(seed ^ 0x72756e2d72756eULL);
    double run_p = 1 + RUN_CV_POWER * pflex_gauss(rs, 0), run_t = 1 + RUN_CV_TPUT * pflex_gauss(rs, 1);
    double run_tm[PFLEX_TM_COUNT];
    for (int f = 0; f < PFLEX_TM_COUNT; f++)
        run_tm[f] = 1 + RUN_CV_TM * pflex_gauss(rs, 2 + (uint64_t)f);
again:
    written = 0;
    for (size_t t = 0; t < nt; t++) {
        double ts = (double)(t + 1) * o->interval_s;
        enum pflex_sim_phase ph = ts <= warm_end ? PFLEX_SIM_WARMUP
                                 : ts <= start_end ? PFLEX_SIM_STARTUP
                                 : ts > o->eval_at_s && ts <= o->eval_at_s + o->eval_s ? PFLEX_SIM_EVAL
                                 : ts > o->ckpt_at_s && ts <= o->ckpt_at_s + ckpt_s ? PFLEX_SIM_CHECKPOINT
                                 : PFLEX_SIM_TRAINING;
        /* Asked for the aggregate alone, a sample of a phase that never
         * counts is not drawn: warm-up, start-up and the checkpoint leave
         * the GPUs idle (gpu_util at most 0.02 of its training value with
         * its noise, far under the 50 % that makes a training sample, and
         * outside the schedule's phases).  Every draw is keyed by its
         * sample, GPU and field, so the others' noise is the same. */
        if (!samples && (ph == PFLEX_SIM_WARMUP || ph == PFLEX_SIM_STARTUP
                         || ph == PFLEX_SIM_CHECKPOINT))
            continue;
        uint64_t st = pflex_mix64(seed ^ (uint64_t)t);
        double tput = 0;
        if (ph == PFLEX_SIM_TRAINING)
            tput = mean.throughput * run_t * (1 + NOISE_TPUT * pflex_gauss(st, 0));
        double psum = 0, tsum[PFLEX_TM_COUNT] = {0};
        for (int i = 0; i < g; i++) {
            uint64_t sg = pflex_mix64(st ^ pflex_mix64(0x677075ULL + (uint64_t)i));
            const double *tg = tm + (size_t)i * PFLEX_TM_COUNT;
            struct pflex_sim_sample s = {ts, (unsigned)i, ph, 0, 0, tput, {0}};
            double busy;        /* how much of the training draw and activity this phase has */
            switch (ph) {
            case PFLEX_SIM_WARMUP: busy = 0; s.fb_used_gib = 0.5 + 8 * ts / warm_end; break;
            case PFLEX_SIM_STARTUP: busy = 0; s.fb_used_gib = 9 + shard_gb; break;
            case PFLEX_SIM_EVAL: busy = 0.55; s.fb_used_gib = fb_train; break;
            case PFLEX_SIM_CHECKPOINT: busy = 0.02; s.fb_used_gib = fb_train; break;
            default: busy = 1; s.fb_used_gib = fb_train; break;
            }
            s.power_w = (k->idle_w * (ph == PFLEX_SIM_WARMUP ? 0.8 : 1.0)
                         + busy * (pw[i] - k->idle_w)) * run_p * (1 + NOISE_POWER * pflex_gauss(sg, 1));
            for (int f = 0; f < PFLEX_TM_COUNT; f++) {
                double v = tg[f];
                if (f == PFLEX_TM_MEM_CLOCK_MHZ || !isfinite(v)) {
                    s.tm[f] = v;
                } else if (f == PFLEX_TM_SM_CLOCK_MHZ) {
                    double nc = v < k->sm_clock_max_mhz - 1 ? NOISE_CLOCK_CAPPED : 0;
                    /* no dither (nc 0): v itself, as v * (1 + 0 * draw) is */
                    s.tm[f] = busy > 0.5 ? fmin(k->sm_clock_max_mhz,
                                                nc > 0 ? v * (1 + nc * pflex_gauss(sg, 2 + (uint64_t)f)) : v)
                                         : k->sm_clock_max_mhz;
                } else {
                    /* Evaluation keeps the GPUs busy (gpu_util high) at a
                     * lighter load; the checkpoint and start-up leave them idle. */
                    double scale = f == PFLEX_TM_GPU_UTIL || f == PFLEX_TM_GR_ENGINE_ACTIVE
                                   ? (ph == PFLEX_SIM_EVAL ? 0.95 : busy) : busy;
                    s.tm[f] = v * scale * run_tm[f] * (1 + noise_tm[f] * pflex_gauss(sg, 2 + (uint64_t)f));
                    if (f == PFLEX_TM_GPU_UTIL || f == PFLEX_TM_MEM_COPY_UTIL)
                        s.tm[f] = fmin(100, fmax(0, s.tm[f]));
                    else if (f <= PFLEX_TM_GR_ENGINE_ACTIVE)
                        s.tm[f] = fmin(1, fmax(0, s.tm[f]));
                }
            }
            psum += s.power_w;
            for (int f = 0; f < PFLEX_TM_COUNT; f++)
                tsum[f] += s.tm[f];
            if (samples && written < max)
                samples[written++] = s;
        }
        /* The study's training phase: gpu_util >= 50 % (evaluation included,
         * the top-10 % then leaves it out). */
        nsched += ph == PFLEX_SIM_TRAINING;
        if (by_util ? tsum[PFLEX_TM_GPU_UTIL] / g >= 50 || (ph == PFLEX_SIM_TRAINING
                                                         && !isfinite(tsum[PFLEX_TM_GPU_UTIL]))
                    : ph == PFLEX_SIM_TRAINING || ph == PFLEX_SIM_EVAL) {
            ptr[ntrain] = psum / g;
            ttr[ntrain] = tput;
            for (int f = 0; f < PFLEX_TM_COUNT; f++)
                ftr[(size_t)f * nt + ntrain] = tsum[f] / g;
            ntrain++;
        }
    }
    if (ntrain == 0 && by_util && nsched > 0) {
        by_util = 0;
        nsched = 0;
        written = 0;
        goto again;
    }
    if (n)
        *n = nt * (size_t)g;
    if (agg) {
        memset(agg, 0, sizeof *agg);
        agg->cap_w = mean.cap_w;
        if (ntrain == 0) {
            pflex_error_set(err, "sim: %s: no training-phase sample in %g s", d->name,
                            o->duration_s);
            goto out;
        }
        agg->power_w = top_mean(ptr, ntrain, o->top_frac);
        agg->throughput = top_mean(ttr, ntrain, o->top_frac);
        agg->step_s = agg->throughput > 0 ? mean.step_s * mean.throughput / agg->throughput : NAN;
        for (int f = 0; f < PFLEX_TM_COUNT; f++)
            agg->tm[f] = top_mean(ftr + (size_t)f * nt, ntrain, o->top_frac);
    }
    rc = 0;
out:
    free(pw);
    free(tm);
    free(col);
    return rc;
}
