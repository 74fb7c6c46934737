/* sim.c — the physical GPU power/performance model (docs/sim-model.md).
 *
 * A step of a job is a list of phases.  A compute phase has tensor-core
 * FLOPs and DRAM bytes and runs at the roofline of the two at its SM clock;
 * communication, pipeline bubbles and host work have fixed durations.  Board
 * power in a phase is
 *   P = idle + leak * v^2 + dyn * activity * (f/fmax) * v^2 + E_bit * DRAM bits/s
 * (v = V(f)/Vmax, the V-f curve), the activity being that of the SMs
 * (share busy), the tensor pipe and the FP32 pipe, the same quantities the
 * counters report.  The power loop gives the interleaved
 * kernels of a micro-step one SM clock, the highest whose time-averaged
 * power fits under the cap, and every other phase its own.  The memory
 * clock never changes.  Every GPU has its own silicon (leakage, voltage offset); the job
 * runs at the pace of the slowest one while the others wait.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/sim/sim.h"
#include "lib/util/mix.h"

/* Global physical constants, the same for every job and kind.  Calibrated
 * once against the Emerald A100 measurements (docs/sim-model.md). */
struct physics {
    double v_ratio;         /* Vmin / Vmax of the V-f curve */
    double f_knee;          /* fraction of f_max below which V stays at Vmin */
    double limit_window_s;  /* the power loop holds the mean over this window (steps shorter
                             * than it are held as a whole: their optimizer and host gaps
                             * leave the rest of the step more power) */
    double lift_max;        /* the most the micro-step may draw over the held mean */
    double guard;           /* the power loop holds the board's mean power this far under the
                             * cap: measured, 1.19 % (the median of ten power-limited H200
                             * loops, 0.73-1.59 %; `python3 tools/device/limiter.py`) */
    double eff_gemm;        /* achieved fraction of the tensor peak in large GEMMs */
    double gemm_h0;         /* GEMM efficiency halves at this per-GPU width (hidden/tp) */
    double gemm_m0;         /* ... and at this many rows (tokens per micro-batch) */
    double eff_attn;        /* fraction of the peak in fused attention */
    double eff_mem;         /* achieved fraction of DRAM bandwidth */
    double r_sat;           /* SM clock fraction below which memory kernels slow down */
    double sm_gemm, sm_attn, sm_mem;    /* share of the SMs busy in GEMMs, attention and
                                         * memory-bound kernels (SM_ACTIVE while they run) */
    double w_tensor, w_fp32;    /* switching power of the tensor and FP32 pipes at full
                                 * issue, over that of busy SMs (fitted) */
    double p_clk;               /* clock tree of an idle SM array at the top clock, over busy
                                 * SMs' switching power */
    double eff_fp32;            /* achieved fraction of the FP32 CUDA-core peak in SGEMM */
    double grouped_ref;         /* a grouped GEMM's tensor throughput (torch._grouped_mm,
                                 * CUTLASS grouped, one group per expert) over a dense GEMM's of
                                 * the same rows and width, for experts of size
                                 * sqrt(hidden x width) = 1024 ... */
    double grouped_exp;         /* ... and its power in the expert's size: fitted on published
                                 * Hopper kernel timings only (tools/grouped_gemm_fit.py) */
    double kernel_min_s;        /* the shortest a kernel takes on the GPU (launch to retire) */
    double sm_small;            /* share of the SMs a tiny (decode) kernel keeps busy */
    double ops_layer_decode;    /* operators per decoder layer in one eager decode step */
    double ops_gen_iter;        /* generate()'s own operators per decode step */
    double train_ops;           /* eager training: host operators per forward operator (fitted) */
    double u_busy;              /* MEM_COPY_UTIL saturation share of the bandwidth (fitted) */
    double act_bytes;       /* memory-bound traffic per token, layer and hidden unit, one pass,
                             * with fused kernels (Megatron-LM, llm-foundry, vLLM) */
    double eager_mult;      /* the same in unfused eager PyTorch (norms, rotary, SwiGLU apart) */
    double eff_link;        /* achieved fraction of NVLink / InfiniBand bandwidth */
    double eff_a2a;         /* achieved fraction of the link in all-to-all */
    double eta_dp;          /* fraction of compute time that can hide data-parallel traffic */
    double eta_moe;         /* fraction of MoE all-to-all hidden behind compute */
    double ovl_width;       /* spread of overlap across layers/buckets, fraction of the traffic */
    double coll_lat_s;      /* latency of one collective step */
    double launch_s;        /* host time to launch one kernel */
    double kernels_per_layer; /* kernels per layer and pass */
    double host_step_s;     /* per optimizer step host work (data loader, logging) */
    double host_iter_s;     /* per decode iteration host work (inference scheduler) */
    double py_op_s;         /* host time of one eager PyTorch operator (Python + launch) */
    double ops_per_expert;  /* operators per expert in an eager MoE loop, under PEFT LoRA */
    double ops_lora_proj;   /* of those, PEFT LoRA's per expert projection (dropout, A, B,
                             * scale, add): a loop without LoRA launches 3 x fewer */
    double sync_s;          /* one host-device synchronisation */
    double lora_rank;
    double sigma_leak, sigma_v; /* silicon variation (relative, 1 sigma) */
    double noise_power, noise_tput, noise_tm; /* measurement noise (relative, 1 sigma) */
    /* Fitted per die family (struct pflex_sim_fit). */
    double k_dyn_ga100, k_dyn_gh100;
    double sigma_host;      /* spread of the host (data-loader) time between jobs, log-normal */
    double nccl_sm_frac;    /* SMs a running NCCL kernel occupies (channels), fraction */
};

static const struct physics P_DEFAULT = {
    /* Calibrated on the Emerald A100 sweeps (docs/sim-model.md). */
    .v_ratio = 0.798, .f_knee = 0.577, .guard = 0.0119, .limit_window_s = 1.0, .lift_max = 1.10,
    .eff_gemm = 0.895, .gemm_h0 = 54.8, .gemm_m0 = 63.9, .eff_attn = 0.656, .eff_mem = 0.606,
    .r_sat = 0.665, .sm_gemm = 0.98, .sm_attn = 0.95, .sm_mem = 0.90,
    .w_tensor = 1.0, .w_fp32 = 1.0, .p_clk = 0.0, .eff_fp32 = 0.70, .grouped_ref = 0.251,
    .grouped_exp = 0.598,
    .kernel_min_s = 2.5e-6,
    .sm_small = 0.5, .ops_layer_decode = 40, .ops_gen_iter = 30,
    .train_ops = 3.0, .u_busy = 0.5,
    .act_bytes = 75.6, .eager_mult = 4.94, .eff_link = 0.80, .eff_a2a = 0.60, .eta_dp = 0.303,
    .eta_moe = 0.25, .ovl_width = 0.25, .coll_lat_s = 10e-6, .launch_s = 4e-6,
    .kernels_per_layer = 20, .host_step_s = 0.005, .host_iter_s = 0.0,
    .py_op_s = 10e-6, .ops_per_expert = 25, .ops_lora_proj = 5, .sync_s = 30e-6, .lora_rank = 16,
    /* Not calibrated: silicon spread and sensor noise of the right order. */
    .sigma_leak = 0.06, .sigma_v = 0.008, .noise_power = 0.005, .noise_tput = 0.007,
    .noise_tm = 0.01,
    .k_dyn_ga100 = 1.024, .k_dyn_gh100 = 1.024, .sigma_host = 0.5, .nccl_sm_frac = 0.18,
};

/* Fitted by `make calibrate` (tools/calibrate.c; docs/measurements.md, "The sim backend's calibration"
 * gives the uncertainties and the errors in and out of sample) on physical
 * measurements only, never on a PFI: the five real uncapped H200 runs of
 * shared/data/h200-uncapped (tokens/s, board power, SM clock, DRAM_ACTIVE,
 * PIPE_TENSOR_ACTIVE, SM_ACTIVE, MEM_COPY_UTIL), the five Emerald
 * A100-SXM4-40GB power-cap sweeps (normalised throughput and power drawn at
 * 200-400 W) and six llm-foundry MPT throughputs on H100 and A100-80GB,
 * with a broad literature prior on each constant.  What each rests on:
 * k_dyn_ga100 the Emerald power under caps; k_dyn_gh100, w_tensor the
 * H200 runs' power and the dense run's power-limited clock; w_fp32 the
 * Transformers MoE run (fp32 experts); eager_mult the H200 runs' DRAM
 * activity and step times; eta_dp the Emerald FSDP curves and llm-foundry;
 * py_op_s the generation run (host-bound); u_busy the H200 runs' two
 * memory counters side by side; eff_gemm the H200 runs' step times and
 * tensor activity with llm-foundry's throughputs. */
const struct pflex_sim_fit pflex_sim_fit_default = {
    .k_dyn_ga100 = 0.5384, .k_dyn_gh100 = 0.8156, .w_tensor = 1.2474, .w_fp32 = 0.2104,
    .eager_mult = 4.2410, .eta_dp = 0.6724, .py_op_s = 1.9710e-05, .u_busy = 0.8581,
    .eff_gemm = 0.7746, .v_floor_gh100 = 0.7328, .knee_gh100 = 0.3997, .eff_mem = 0.7615,
    .train_ops = 3.0000, .host_b = 1.4831,
};


enum ph { PH_GEMM, PH_ATTN, PH_MEM, PH_OPT, PH_NCOMPUTE };

/* Work of one compute phase on one GPU. */
struct work {
    double flops;           /* tensor-core FLOPs */
    double bytes;           /* DRAM bytes */
    double eff;             /* fraction of the tensor peak */
    double sm;              /* share of the SMs busy while it runs */
    double fp32;            /* FP32 CUDA-core FLOPs (fp32 GEMMs, e.g. experts in fp32) */
};

/* A step on one GPU: `micro` repetitions of the compute phases plus the
 * per-step ones, and the fixed-time parts. */
struct step {
    double micro;           /* micro-steps (inference: 1 prefill + decode as phases) */
    struct work ph[PH_NCOMPUTE];        /* per micro-step; PH_OPT per step */
    int decode;             /* inference: ph[PH_OPT] is one decode iteration */
    double decode_iters;
    double tp_s;            /* per micro-step, on the critical path */
    double moe_s;           /* per micro-step all-to-all */
    double fsdp_s;          /* per micro-step parameter gathers + gradient reduce-scatter */
    double fsdp_fwd_s;      /* of it, the forward's all-gathers */
    double fsdp_edge_s;     /* of it, the first layer's all-gather and the last one's
                             * reduce-scatter, which nothing hides */
    double fsdp_layers;     /* FSDP units (one per decoder layer) the traffic is split over */
    double fwd_share;       /* the forward's share of a micro-step's compute */
    double dp_s;            /* per step gradient all-reduce */
    double pp_s;            /* per micro-step pipeline send/recv */
    double launch_s;        /* host launch time per micro-step */
    double host_s;          /* per step host time */
    double bubble_micro;    /* pipeline bubble in units of one micro-step */
    double nvlink_bytes;    /* per step, sent over NVLink by one GPU */
    double pcie_bytes;      /* per step, host to GPU */
    double tokens;          /* tokens per step, the whole job */
    double comm_bytes;      /* per step, collective traffic one GPU sends (any link) */
    double host_layer_s;    /* host time per layer and pass of an eager MoE loop (0: none) */
    double host_layers;     /* layer passes per micro-step with it (forward passes) */
    double host_fwd_share;  /* their share of the micro-step's GPU time */
    double host_experts;    /* experts run per layer and pass */
    double expert_share;    /* their share of the layer's GPU work */
    double host_iter_s;     /* inference: host time of one decode iteration */
    double kernels_iter;    /* inference: kernels one decode iteration launches */
};

struct gpu {
    double leak_mult, v_mult, cap_w, energy_j;
    double lift;            /* the micro-step's power over the held mean (limiter window) */
};

struct pflex_sim_job {
    struct pflex_job_desc d;
    const struct pflex_gpu_kind *k;
    uint64_t seed, draws;
    int n;
    struct gpu *g;
    struct step s;
    double leak_w, dyn_w, mem_w_per_gbs;
    double idle_w;          /* board power with the SMs idle, leakage apart */
    double rate_tflops;     /* tensor (or FP32) rate of the job's precision at f_max */
    double bpe;             /* bytes per element of weights and activations */
    int gpn;                /* GPUs per node */
    double host_mult;       /* this job's data-loader speed (seeded) */
    double v_ratio;         /* the die's V-f floor (fitted for GH100) */
    double f_knee;          /* its knee, fraction of the top clock (fitted for GH100) */
    struct physics phys;
    int free_clock;         /* evaluating at full clock, caps aside (inference, evaluate()) */
    /* Scratch of the last evaluation: per-GPU power and telemetry. */
    double *power_w, *tm;
};

#define P (j->phys)

/* --- randomness: splitmix64, Box-Muller ---------------------------------- */

/* pflex_unif, pflex_gauss (mix.h): draws fixed by a counter pair. */

/* --- the GPU: V-f curve, phase power, the power loop ---------------------- */

/* Voltage relative to Vmax at SM clock fraction r: the die's curve, flat
 * at its floor below the knee, linear above. */
static double volt(const struct pflex_sim_job *j, double r)
{
    double knee = j->f_knee, vr = j->v_ratio;
    if (r <= knee)
        return vr;
    return vr + (1 - vr) * (r - knee) / (1 - knee);
}

/* Time of a compute phase at clock fraction r, and its compute-bound part. */
static double phase_time(const struct pflex_sim_job *j, const struct work *w, double r,
                         double *tcomp)
{
    double tc = w->flops > 0 ? w->flops / (j->rate_tflops * 1e12 * w->eff * r) : 0;
    if (w->fp32 > 0)
        tc += w->fp32 / (j->k->fp32_tflops * 1e12 * P.eff_fp32 * r);
    double tm = w->bytes / (j->k->mem_bw_gbs * 1e9 * P.eff_mem);
    if (r < P.r_sat)
        tm *= P.r_sat / r;
    if (tcomp)
        *tcomp = tc;
    return tc > tm ? tc : tm;
}

/* Board power of a GPU running work w (NULL: communication or idle with a
 * share act of the SMs busy) at clock fraction r.  Switching power follows
 * what the counters see: the share of the SMs busy, plus the tensor pipe's
 * and the FP32 pipe's issue rates (each 0..1 of their peak at the running
 * clock) weighted by how much more a busy pipe burns (fitted on the real
 * H200's power and counters), plus the idle SM array's clock tree; DRAM
 * power follows the bytes moved. */
static double phase_power(const struct pflex_sim_job *j, const struct gpu *g,
                          const struct work *w, double act, double r)
{
    double v = volt(j, r) * g->v_mult, mem = 0;
    if (w) {
        double t = phase_time(j, w, r, NULL);
        if (t <= 0)
            return j->idle_w + j->leak_w * g->leak_mult * v * v;
        double tens = w->flops / (j->rate_tflops * 1e12 * r * t);
        double f32 = w->fp32 / (j->k->fp32_tflops * 1e12 * r * t);
        act = w->sm + P.w_tensor * fmin(1, tens) + P.w_fp32 * fmin(1, f32);
        mem = j->mem_w_per_gbs * w->bytes / t / 1e9;
    }
    return j->idle_w + j->leak_w * g->leak_mult * v * v
           + j->dyn_w * (act + P.p_clk) * r * v * v + mem;
}

/* The power loop: the highest clock (below the lowest clock, hardware
 * slowdown) whose power fits under the cap. */
static double loop_clock(const struct pflex_sim_job *j, const struct gpu *g,
                         const struct work *w, double act)
{
    double limit = g->cap_w * (1 - P.guard);
    if (j->free_clock || phase_power(j, g, w, act, 1.0) <= limit)
        return 1.0;
    double lo = 0.02, hi = 1.0;
    if (phase_power(j, g, w, act, lo) > limit)
        return lo;
    for (int i = 0; i < 40; i++) {
        double mid = 0.5 * (lo + hi);
        if (phase_power(j, g, w, act, mid) <= limit)
            lo = mid;
        else
            hi = mid;
    }
    /* Clocks come in bins (clock_step_mhz), but the loop dithers between
     * the two around this point, so the mean clock over a window is it. */
    return lo;
}

/* --- the job's work ------------------------------------------------------- */

/* Achieved bandwidth of a ring over n GPUs with per_node of them in a node:
 * NVLink inside a node where the board has it, else PCIe peer-to-peer
 * (which also crosses the host bridge: half its rate is achieved); across
 * nodes the node's network links. */
static double ring_bw(const struct pflex_sim_job *j, int n, int per_node)
{
    const struct pflex_gpu_kind *k = j->k;
    double intra = (k->nvlink_gbs > 0 ? k->nvlink_gbs : 0.5 * k->pcie_gbs) * 1e9;
    if (n <= 1)
        return INFINITY;
    if (per_node >= n)
        return intra * P.eff_link;
    double inter = k->net_gbs * 1e9 * (per_node > 0 ? per_node : 1);
    return (inter < intra ? inter : intra) * P.eff_link;
}

static double ring_lat(const struct pflex_sim_job *j, int n, double count)
{
    return n > 1 ? count * P.coll_lat_s * (1 + log2((double)n)) : 0;
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

/* A GEMM phase: its efficiency falls for narrow (hidden/tp) and short
 * (few rows) matrices, and its switching activity follows the tensor-core
 * issue rate it achieves. */
static struct work gemm_work(const struct pflex_sim_job *j, double flops, double bytes,
                             double width_factor, double rows)
{
    double rel = width_factor * rows / (rows + P.gemm_m0);
    double eff = P.eff_gemm * rel;
    if (eff < 0.01)
        eff = 0.01;
    return (struct work){.flops = flops, .bytes = bytes, .eff = eff, .sm = P.sm_gemm};
}

/* The precision's tensor rate (FP32 CUDA cores where the kind has no
 * tensor path for it, e.g. bf16 on V100) and its bytes per element. */
static void precision_rate(struct pflex_sim_job *j)
{
    const struct pflex_gpu_kind *k = j->k;
    double r = 0;
    j->bpe = 2;
    switch (j->d.precision) {
    case PFLEX_PREC_BF16: r = k->bf16_tflops; break;
    case PFLEX_PREC_FP16: r = k->fp16_tflops > 0 ? k->fp16_tflops : k->bf16_tflops; break;
    case PFLEX_PREC_TF32: r = k->tf32_tflops; j->bpe = 4; break;
    default: j->bpe = 4; break;
    }
    j->rate_tflops = r > 0 ? r : k->fp32_tflops;
}

/* Per layer and token: attention context the kernels compute (causal flash
 * skips masked blocks; eager attention computes the whole score matrix;
 * sliding windows bound it), averaged over the layers. */
static double attn_context(const struct pflex_job_desc *d, double seq)
{
    double full = d->bidirectional || d->attention == PFLEX_ATTN_EAGER ? seq : seq / 2;
    if (d->window > 0 && d->window_layers > 0 && d->attention != PFLEX_ATTN_EAGER) {
        double w = d->window < seq ? d->window - (double)d->window * d->window / (2 * seq) : seq / 2;
        return (d->window_layers * w + (d->layers - d->window_layers) * full) / d->layers;
    }
    return full;
}

/* What the stages of build_step share: the job's shape as one GPU of the
 * busiest pipeline stage sees it.  The training-only fields are set by
 * train_tokens() and train_compute(), in that order. */
struct step_shape {
    int gpn;                /* GPUs per node */
    double h, L, tp, pp;
    double lloc;            /* layers on the busiest pipeline stage */
    double q_dim, kv_dim;   /* widths of the query and of the keys/values */
    double scale;           /* stated parameter count / the shape's count */
    double n_total, n_active;
    double n_head;          /* weights of the LM head GEMM */
    double n_layers_gemm;   /* GEMM weights of all layers, per token */
    double n_gemm_loc;      /* GEMM weights a token passes on this GPU */
    double n_loc;           /* weights held per GPU (unsharded) */
    double eff_w;           /* width factor of GEMM efficiency */
    double eff_dense;       /* training: GEMM efficiency of the non-expert weights */
    double bpe;             /* bytes per element */
    double act_bytes;       /* elementwise bytes per hidden element and layer */
    double ctx;             /* attention context per layer and token */
    double score_bytes;     /* eager attention scores per layer and token */
    double qk_norm_bytes;   /* query-key norms per layer, token and pass */
    /* training only */
    int lora;
    double seq_tok;         /* tokens of a sequence (encoder + decoder) */
    double tok;             /* tokens of a micro-batch */
    double lact;            /* layers a token passes on this GPU */
    double cg;              /* GEMM FLOPs per weight and token */
    double passes;          /* forward-equivalents of elementwise work */
    double train_loc;       /* trainable weights per GPU */
    double tp_bytes;        /* tensor-parallel bytes per micro-step */
    double dp_bytes;        /* data-parallel bytes per step */
};

static void step_shape(const struct pflex_sim_job *j, struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    c->gpn = j->gpn;
    double h = d->hidden, L = d->layers, tp = d->tp, pp = d->pp;
    double lloc = ceil(L / pp);
    double hd = d->head_dim > 0 ? d->head_dim : h / d->heads;
    double q_dim = d->heads * hd, kv_dim = d->kv_heads * hd;
    /* Parameters: scale the shape to the stated count. */
    double shape_total = pflex_job_params_total_b(d), shape_active = pflex_job_params_active_b(d);
    double n_total = d->params_b * 1e9;
    double scale = n_total / (shape_total * 1e9);
    double n_active = n_total * shape_active / shape_total;
    double n_embed_in = d->vocab * h * scale;           /* a lookup, not a GEMM */
    double n_head = d->vocab * h * scale;               /* the LM head GEMM (tied or not) */
    double n_gemm = n_active - n_embed_in * (d->tied_embeddings ? 0 : 1);
    if (d->tied_embeddings)
        n_gemm += 0;        /* the shared matrix counts once, as the LM head */
    double n_layers_gemm = n_gemm - n_head;             /* per token, all layers */
    /* Pipeline stages are as slow as the busiest: ceil(L/pp) layers, and
     * the last stage also holds the LM head. */
    c->n_gemm_loc = (n_layers_gemm * lloc / L + (pp > 1 ? n_head : n_head / pp)) / tp;
    c->n_loc = n_total / (tp * pp);
    c->eff_w = (h / tp) / (h / tp + P.gemm_h0);
    double bpe = j->bpe;
    /* Unfused eager kernels move eager_mult times the fused bytes, fitted
     * on Transformers' eager loops, whose RMSNorm is seven kernels (fp32
     * cast, pow, mean, rsqrt, two products, the cast back: 36 bytes an
     * element forward, about 60 backward).  A model whose RMSNorm is one
     * fused kernel (torch.nn.RMSNorm runs aten::_fused_rms_norm on CUDA:
     * 4 forward, 10 backward) moves the difference less: per layer its two
     * norms, averaged over a forward and the backward's two passes. */
    double act_mult = d->eager ? P.eager_mult : 1;
    if (d->eager && d->fused_norm)
        act_mult -= 2 * ((36.0 + 60.0) - (4.0 + 10.0)) / 3 / P.act_bytes;
    c->act_bytes = P.act_bytes * act_mult * bpe / 2;
    /* Query-key normalisation: one more RMSNorm over every query and key
     * element of a layer, in bytes per element and pass as the norms
     * above (Transformers' module unfused; fused compiled or fused_norm). */
    c->qk_norm_bytes = d->qk_norm ? (q_dim + kv_dim)
                                    * (d->eager && !d->fused_norm ? 36.0 + 60.0 : 4.0 + 10.0) / 3
                                    * bpe / 2 / tp
                                  : 0;
    c->ctx = attn_context(d, d->seq_len);
    /* Eager attention materialises heads x seq x seq scores per layer and
     * sequence: written, soft-maxed, read for P.V (forward), and as much
     * again twice in the backward. */
    c->score_bytes = d->attention == PFLEX_ATTN_EAGER
                     ? (double)d->heads / tp * d->seq_len * bpe * 4 : 0;   /* per token */
    c->h = h; c->L = L; c->tp = tp; c->pp = pp; c->lloc = lloc;
    c->q_dim = q_dim; c->kv_dim = kv_dim; c->scale = scale;
    c->n_total = n_total; c->n_active = n_active; c->n_head = n_head;
    c->n_layers_gemm = n_layers_gemm; c->bpe = bpe;
}

/* Inference, the prefill: the prompt's GEMMs, attention and elementwise
 * work, once per step. */
static void infer_prefill(struct pflex_sim_job *j, const struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    struct step *s = &j->s;
    double h = c->h, tp = c->tp, pp = c->pp, lloc = c->lloc, bpe = c->bpe;
    double B = d->micro_batch, sl = d->seq_len;
    double tok = B * sl;
    s->micro = 1;
    s->ph[PH_GEMM] = gemm_work(j, 2 * c->n_gemm_loc * tok,
                               c->n_loc * bpe + tok * lloc * h / tp * bpe * 8, c->eff_w, tok);
    s->ph[PH_ATTN] = (struct work){.flops = 4 * c->ctx * c->q_dim * lloc / tp * tok,
                                   .bytes = tok * lloc * 2 * (c->q_dim + c->kv_dim) / tp * bpe,
                                   .eff = P.eff_attn, .sm = P.sm_attn};
    s->ph[PH_MEM] = (struct work){.bytes = tok * lloc * h / tp * c->act_bytes
                                  + tok * lloc * c->score_bytes / 4
                                  + tok / pp * d->vocab / tp * 4.0 / sl, .sm = P.sm_mem};
}

/* Inference, one decode iteration (in ph[PH_OPT]) and the host's part in
 * it. */
static void infer_decode(struct pflex_sim_job *j, const struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    struct step *s = &j->s;
    double h = c->h, L = c->L, tp = c->tp, lloc = c->lloc, bpe = c->bpe;
    double n_total = c->n_total, n_active = c->n_active;
    double B = d->micro_batch, sl = d->seq_len, gen = d->gen_len;
    /* One decode iteration: all weights (MoE: the experts the batch
     * touches), the KV cache of the batch, a GEMV/GEMM of B rows. */
    double cx = sl + gen / 2;
    double touched = 1.0;
    if (d->experts > 0) {
        double e_hit = d->experts * (1 - pow(1 - (double)d->top_k / d->experts, B));
        touched = (n_total - (n_total - n_active) * (1 - e_hit / d->experts)
                   * d->experts / (d->experts - d->top_k)) / n_total;
        if (touched > 1)
            touched = 1;
    }
    s->decode = 1;
    s->decode_iters = gen;
    /* Transformers' dynamic KV cache grows by torch.cat: every decode
     * step copies the whole cache (read and write) once more. */
    double cache = B * cx * lloc * 2 * c->kv_dim / tp * bpe;
    /* Eager Transformers decodes an MoE block with its batched experts:
     * each routed token's expert weights are gathered into a per-token
     * copy (written, then read by the batched product), so the traffic
     * grows with tokens x top_k x the expert's weights. */
    double gathered = 0;
    if (d->experts > 0 && d->eager) {
        double ef = d->expert_ffn > 0 ? d->expert_ffn : d->ffn_hidden;
        gathered = B * d->top_k * (lloc - d->dense_layers * lloc / L)
                   * (d->mlp == PFLEX_MLP_GELU ? 2.0 : 3.0) * h * ef * c->scale / tp * bpe * 2;
    }
    s->ph[PH_OPT] = gemm_work(j, 2 * c->n_gemm_loc * B + 4 * cx * c->q_dim * lloc / tp * B,
                              c->n_loc * touched * bpe + cache * (d->eager ? 3 : 1)
                              + B * lloc * h / tp * c->act_bytes + gathered, c->eff_w, B);
    /* One decode step launches a few dozen small kernels per layer; in
     * eager PyTorch the host issues each from Python (py_op_s), and
     * generate() syncs every step (stopping criteria), so the host's
     * operator stream and the GPU's work do not overlap across steps.
     * Fused serving (vLLM: CUDA graphs) launches a step at once. */
    s->kernels_iter = lloc * P.ops_layer_decode + P.ops_gen_iter;
    /* An MoE layer adds its router (linear, softmax, top-k, normalise)
     * and the experts block's gather, grouped or batched projections,
     * activation, routing weight and scatter: about 15 more (assumed;
     * Transformers switches grouped experts to batched ones for decode). */
    if (d->experts > 0)
        s->kernels_iter += (lloc - d->dense_layers * lloc / L) * 15;
    s->host_iter_s = d->eager ? s->kernels_iter * P.py_op_s : P.host_iter_s;
}

/* Inference: tensor- and pipeline-parallel traffic of the prefill and the
 * decode iterations, the host's time per step, the step's tokens. */
static void infer_comm(struct pflex_sim_job *j, const struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    const struct pflex_gpu_kind *k = j->k;
    struct step *s = &j->s;
    double h = c->h, tp = c->tp, lloc = c->lloc, bpe = c->bpe;
    double B = d->micro_batch, sl = d->seq_len, gen = d->gen_len;
    double tok = B * sl;
    double tp_bw = ring_bw(j, d->tp, imin(d->tp, c->gpn));
    double tp_count = 2 * lloc;
    s->tp_s = d->tp > 1 ? 2 * (tp - 1) / tp * tok * h * bpe * tp_count / tp_bw
                          + ring_lat(j, d->tp, tp_count) : 0;
    /* Per decode iteration: TP all-reduces of B rows, host scheduling. */
    s->launch_s = gen * ((d->tp > 1 ? 2 * (tp - 1) / tp * B * h * bpe * tp_count / tp_bw
                          + ring_lat(j, d->tp, tp_count) : 0));
    s->pp_s = d->pp > 1 ? (1 + gen) * B * h * bpe / ring_bw(j, 2, 1) : 0;
    s->host_s = P.host_step_s * j->host_mult;
    if (k->nvlink_gbs > 0)
        s->nvlink_bytes = d->tp > 1 ? 2 * (tp - 1) / tp * (tok + B * gen) * h * bpe * tp_count : 0;
    s->comm_bytes = d->tp > 1 ? 2 * (tp - 1) / tp * (tok + B * gen) * h * bpe * tp_count : 0;
    s->pcie_bytes = tok * 4 + B * gen * 8;
    s->tokens = B * gen * d->dp;
}

/* Training: the tokens of a micro-batch, the layers they pass and the
 * attention context they see, the micro-steps of a step and the passes
 * (forward, backward, recomputation) over them. */
static void train_tokens(struct pflex_sim_job *j, struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    struct step *s = &j->s;
    double L = c->L, tp = c->tp, pp = c->pp, n_head = c->n_head;
    c->lora = d->kind == PFLEX_JOB_FINETUNE_LORA;
    /* Encoder-decoder: a sequence is seq_len encoder and target_len decoder
     * tokens; a token passes only its own half's layers (the decoder's
     * also attend to the encoder output).  Work is written per encoder+
     * decoder token: the mean over the two. */
    double seq_tok = d->seq_len + (d->encoder_layers > 0 ? d->target_len : 0);
    c->seq_tok = seq_tok;
    c->tok = (double)d->micro_batch * seq_tok;
    double layer_frac = 1.0;    /* share of the layers a token passes */
    if (d->encoder_layers > 0) {
        double enc = d->encoder_layers, dec = L - enc;
        layer_frac = (enc * d->seq_len + dec * d->target_len) / (L * seq_tok);
        c->ctx = (enc * attn_context(d, d->seq_len) * d->seq_len
                  + dec * (attn_context(d, d->target_len) + d->seq_len) * d->target_len)
                 / (L * seq_tok) / layer_frac;
    }
    c->n_gemm_loc = (c->n_layers_gemm * layer_frac * c->lloc / L + (pp > 1 ? n_head : n_head / pp)) / tp;
    c->lact = c->lloc * layer_frac;
    s->micro = ceil((double)d->global_batch / ((double)d->micro_batch * d->dp));
    /* FLOPs per weight per token: forward 2, backward 4 (LoRA: 2, no
     * weight gradients); recomputation adds a forward. */
    c->cg = (c->lora ? 4 : 6) + (d->act_ckpt ? 2 : 0);
    c->passes = 3 + (d->act_ckpt ? 1 : 0);
}

/* Training: the compute phases of a micro-step (GEMMs, attention,
 * elementwise and loss work, gradient accumulation) and the optimizer's
 * once per step. */
static void train_compute(struct pflex_sim_job *j, struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    struct step *s = &j->s;
    double h = c->h, L = c->L, tp = c->tp, pp = c->pp, bpe = c->bpe;
    double q_dim = c->q_dim, kv_dim = c->kv_dim, n_gemm_loc = c->n_gemm_loc;
    double tok = c->tok, lact = c->lact, cg = c->cg, passes = c->passes;
    s->ph[PH_GEMM] = gemm_work(j, cg * n_gemm_loc * tok,
                               cg / 2 * n_gemm_loc * bpe + tok * lact * h / tp * bpe * 8 * passes,
                               c->eff_w, tok);
    c->eff_dense = s->ph[PH_GEMM].eff;
    /* Routed experts run as grouped GEMMs (torchtitan, Transformers 5's
     * grouped_mm, Megatron's GroupedMLP): each group is one expert's
     * tokens, ep * tok * top_k / experts rows (every EP rank sends its
     * tokens to the experts a GPU holds), as wide as the expert.  Their
     * efficiency follows the same law with those rows and that width,
     * and the phase takes the time of both parts. */
    double ef = d->expert_ffn > 0 ? d->expert_ffn : d->ffn_hidden;
    double f_exp = d->experts > 0 ? cg * tok * (lact - d->dense_layers * lact / L) * d->top_k
                                    * (d->mlp == PFLEX_MLP_GELU ? 2.0 : 3.0) * h * ef * c->scale / tp
                                  : 0;
    double eff_exp = 0;     /* the experts' GEMM efficiency (0: no routed experts) */
    if (f_exp > 0 && f_exp < s->ph[PH_GEMM].flops) {
        double rows = tok * d->top_k * (d->ep > 1 ? d->ep : 1) / d->experts;
        double eff_e = gemm_work(j, 0, 0, (ef / tp) / (ef / tp + P.gemm_h0), rows).eff;
        /* A grouped GEMM kernel reaches less than a dense GEMM of its
         * groups' shape, the less the smaller each expert: its per-group
         * and per-tile costs are spread over shorter K loops and fewer
         * tiles.  Six published Hopper timings (tools/grouped_gemm_fit.py):
         * Qwen3-30B-A3B's experts (2048 x 768) run at 0.23-0.32 of this
         * law's rate, Llama 4's (5120 x 8192) at 0.72-0.75; a power law of
         * sqrt(hidden x width) fits them to 13 % left out, rows per expert
         * adds nothing.  Transformers 4's loop (moe_loop) runs one dense mm
         * per expert instead. */
        if (!d->moe_loop) {
            double g = P.grouped_ref * pow(sqrt(h * ef / tp) / 1024.0, P.grouped_exp);
            eff_e *= g < 1 ? g : 1;
        }
        double f = s->ph[PH_GEMM].flops;
        s->ph[PH_GEMM].eff = f / ((f - f_exp) / c->eff_dense + f_exp / eff_e);
        eff_exp = eff_e;
    }
    s->ph[PH_ATTN] = (struct work){.flops = passes * 4 * c->ctx * q_dim * lact / tp * tok,
                                   .bytes = passes * tok * lact * 2 * (q_dim + kv_dim) / tp * bpe,
                                   .eff = P.eff_attn, .sm = P.sm_attn};
    double rank = d->lora_rank > 0 ? d->lora_rank : P.lora_rank;
    double ffn_a = d->experts > 0 ? (d->expert_ffn > 0 ? d->expert_ffn : d->ffn_hidden) : d->ffn_hidden;
    double trainable = c->lora ? L * rank * (2 * h + 2 * q_dim + 2 * (h + kv_dim)
                                             + (d->mlp == PFLEX_MLP_GELU ? 2 : 3) * (h + ffn_a))
                               : c->n_total;
    /* PEFT's adapters on the packed experts (target_parameters): an A of
     * in x (r * experts) and a B of (r * experts) x out per 3-D weight,
     * gate/up (h -> 2 ef, or ef without the gate) and down (ef -> h). */
    int lora_exp = c->lora && d->lora_experts && eff_exp > 0;
    double gated = d->mlp == PFLEX_MLP_GELU ? 1 : 2;
    if (lora_exp)
        trainable += (L - d->dense_layers) * d->experts * rank * (2 * h + (gated + 1) * ffn_a);
    double train_loc = trainable / (tp * pp);
    c->train_loc = train_loc;
    double mem = tok * lact * h / tp * c->act_bytes * passes
                 + tok * lact * c->score_bytes * passes
                 + tok * lact * c->qk_norm_bytes * passes
                 + tok / pp * d->vocab / tp * 4.0 * 3    /* fp32 logits, softmax, loss */
                 + train_loc * bpe * 2;                   /* gradient accumulation */
    if (d->experts > 0)
        mem += tok * lact * d->top_k * h * bpe * 4 * passes;  /* routing, permutation */
    s->ph[PH_MEM] = (struct work){.bytes = mem, .sm = P.sm_mem};
    /* PEFT's ParamWrapper (peft/tuners/lora/layer.py) runs the adapters on a
     * packed expert weight W as a parametrization: each forward builds the
     * whole 3-D delta einsum(B, A) (written), and W + delta (W and delta
     * read, the sum written) for the grouped GEMM; autograd then computes
     * the gradient of W + delta, the experts' weight gradients a LoRA step
     * otherwise skips (written, and read for A's and for B's gradient).
     * Per expert weight held on the GPU: 3 passes a forward (recomputation
     * repeats them), 3 in the backward; FLOPs: the weight gradients at the
     * grouped GEMMs' rate, and the einsums (r per weight: 2 a forward, 4
     * for A's and B's gradients). */
    if (lora_exp) {
        double w_e = (lact - d->dense_layers * lact / L) * d->experts / (d->ep > 1 ? d->ep : 1)
                     * (gated + 1) * h * ef * c->scale / tp;
        double fwd = 1 + (d->act_ckpt ? 1 : 0);
        double f_add = f_exp * 2 / cg + w_e * rank * (2 * fwd + 4);
        double f = s->ph[PH_GEMM].flops;
        s->ph[PH_GEMM].eff = (f + f_add) / (f / s->ph[PH_GEMM].eff + f_add / eff_exp);
        s->ph[PH_GEMM].flops = f + f_add;
        s->ph[PH_MEM].bytes += w_e * bpe * (3 * fwd + 3);
    }
    /* Adam over the local trainable shard: read param, grad, m, v; write
     * param, m, v and the bf16 copy. */
    double opt_loc = train_loc / (d->zero >= 1 ? d->dp : 1);
    s->ph[PH_OPT] = (struct work){.bytes = opt_loc * 30, .sm = P.sm_mem};
}

/* Training: tensor parallel, 2 all-reduces (or reduce-scatter +
 * all-gather) per layer and pass, on the critical path. */
static void train_tp(struct pflex_sim_job *j, struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    struct step *s = &j->s;
    double tp = c->tp;
    double tp_count = 2 * c->lloc * (2 + (d->act_ckpt ? 1 : 0));
    double tp_bw = ring_bw(j, d->tp, imin(d->tp, c->gpn));
    c->tp_bytes = d->tp > 1 ? 2 * (tp - 1) / tp * c->tok * c->h * c->bpe * tp_count : 0;
    s->tp_s = d->tp > 1 ? c->tp_bytes / tp_bw + ring_lat(j, d->tp, tp_count) : 0;
}

/* Training: data parallel over dp ranks with stride tp, as many per node
 * as fit: FSDP's gathers per micro-step or DDP's all-reduce per step. */
static void train_dp(struct pflex_sim_job *j, struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    struct step *s = &j->s;
    int gpn = c->gpn;
    double h = c->h, L = c->L, tp = c->tp, pp = c->pp, bpe = c->bpe;
    double n_loc = c->n_loc, train_loc = c->train_loc;
    int dp_per_node = imin(d->dp, gpn / d->tp > 0 ? gpn / d->tp : 1);
    double dp_bw = ring_bw(j, d->dp, dp_per_node), n = d->dp;
    double dp_bytes = 0;
    if (d->dp > 1) {
        if (d->zero == 3) {
            /* FSDP gathers every weight of a layer before using it.  With
             * expert parallelism nested inside the FSDP group (torchtitan's
             * FSDP2 + EP) a GPU holds 1/ep of the routed experts and gathers
             * them only across the dp/ep ranks that share them. */
            double ef = d->expert_ffn > 0 ? d->expert_ffn : d->ffn_hidden;
            double n_exp = d->experts > 0
                           ? (L - d->dense_layers) * d->experts
                             * (d->mlp == PFLEX_MLP_GELU ? 2.0 : 3.0) * h * ef * c->scale / (tp * pp)
                           : 0;
            if (n_exp > n_loc)
                n_exp = n_loc;
            double ne = d->ep > 1 ? n / d->ep : n;
            double gath = (n - 1) / n * (n_loc - n_exp) + (ne > 1 ? (ne - 1) / ne : 0) * n_exp / d->ep;
            /* Two all-gathers in the compute dtype, one reduce-scatter of
             * the gradients in it or, torchtitan's default, in fp32. */
            double rbpe = d->reduce_fp32 ? 4 : bpe;
            double v = gath * (2 * bpe + rbpe);
            if (c->lora)    /* frozen weights still gathered twice; adapters reduced */
                v = 2 * gath * bpe + (n - 1) / n * train_loc * rbpe;
            s->fsdp_s = v / dp_bw + ring_lat(j, d->dp, 3 * c->lloc);
            /* Per pass: the forward's gathers, the backward's gather and
             * reduce-scatter; per FSDP unit (a decoder layer) a share. */
            s->fsdp_fwd_s = gath * bpe / dp_bw + ring_lat(j, d->dp, c->lloc);
            s->fsdp_layers = c->lloc;
            s->fsdp_edge_s = (s->fsdp_fwd_s + (v - 2 * gath * bpe) / dp_bw) / c->lloc;
            s->fwd_share = 2 / c->cg;     /* forward FLOPs per weight and token */
            dp_bytes = v * s->micro;
        } else {
            double v = 2 * (n - 1) / n * train_loc * bpe;
            s->dp_s = v / dp_bw + ring_lat(j, d->dp, ceil(train_loc * bpe / 25e6) + 1);
            dp_bytes = v;
        }
    }
    c->dp_bytes = dp_bytes;
}

/* Training: MoE all-to-all, dispatch and combine per layer and pass. */
static void train_moe_a2a(struct pflex_sim_job *j, const struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    const struct pflex_gpu_kind *k = j->k;
    struct step *s = &j->s;
    if (!(d->experts > 0 && d->ep > 1))
        return;
    double ep = d->ep, count = 2 * c->lloc * (2 + (d->act_ckpt ? 1 : 0));
    int in_node = d->ep * d->tp <= c->gpn;
    double bw = (in_node ? ring_bw(j, 2, 2) / P.eff_link
                         : k->net_gbs * 1e9) * P.eff_a2a;
    double v = count * (ep - 1) / ep * c->tok * d->top_k * c->h * c->bpe / c->tp;
    s->moe_s = v / bw + count * P.coll_lat_s * (in_node ? 1 : 4);
    if (in_node && k->nvlink_gbs > 0)
        s->nvlink_bytes += v * s->micro;
    s->comm_bytes += v * s->micro;
}

/* Training: pipeline sends and bubble, kernel launches.  Pipeline
 * neighbours are tp * dp ranks apart: in one node when that stride is
 * under the node size. */
static void train_pipeline_launch(struct pflex_sim_job *j, const struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    struct step *s = &j->s;
    if (d->pp > 1)
        s->pp_s = 2 * c->tok * c->h * c->bpe / c->tp / ring_bw(j, 2, d->tp * d->dp < c->gpn ? 2 : 1);
    s->bubble_micro = c->pp - 1;
    s->launch_s = c->lloc * P.kernels_per_layer * c->passes * P.launch_s;
    /* Eager PyTorch issues a layer's forward operators from Python (about
     * as many as a decode step's, ops_layer_decode) and autograd's engine
     * the backward's; train_ops (fitted on the real runs' small batches)
     * is the host's cost of a training step per forward operator, the loss
     * and optimizer adding generate()-like housekeeping.  The host runs
     * ahead of the GPU: only what exceeds the GPU's micro-step shows. */
    if (d->eager)
        s->launch_s = (c->lact * P.ops_layer_decode * (P.train_ops + (d->act_ckpt ? 1 : 0))
                       + P.ops_gen_iter) * P.py_op_s;
}

/* Training: Hugging Face Transformers' eager MoE block runs the experts
 * one after another from Python: for each expert that received tokens, a
 * torch.where that syncs host and device, a gather, the three projections
 * (each, under PEFT LoRA, base + dropout + A + B + scale + add), the
 * activation, the routing weight and an index_add: about 25 operators.
 * The sync keeps the host from running ahead of the GPU, so per layer and
 * forward pass (recomputation included) the step takes the longer of the
 * host's operator stream and the GPU's work (moe_loop_exposed() below).
 * The backward runs in autograd's C++ engine: no Python, no torch.where
 * sync, so the host keeps ahead. */
static void train_moe_loop(struct pflex_sim_job *j, const struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    struct step *s = &j->s;
    double h = c->h, L = c->L, tp = c->tp;
    double tok = c->tok, lact = c->lact, passes = c->passes;
    if (!(d->experts > 0 && d->moe_loop))
        return;
    double routed = tok * d->top_k / d->ep;
    double hit = d->experts / (double)d->ep
                 * (1 - pow(1 - 1.0 / (d->experts / (double)d->ep), routed));
    /* Per expert: torch.where (a sync), the gather, three projections, the
     * activation, the product, the routing weight, index_add; PEFT LoRA
     * makes each projection base + dropout + A + B + scale + add.  Without
     * LoRA (pretraining) about 10 operators, with it 25. */
    double ops = P.ops_per_expert - (c->lora ? 0 : 3 * P.ops_lora_proj);
    s->host_layer_s = hit * (ops * P.py_op_s + P.sync_s) + 12 * P.py_op_s;
    s->host_layers = lact * (1 + (d->act_ckpt ? 1 : 0));
    s->host_fwd_share = (1 + (d->act_ckpt ? 1 : 0)) / passes;
    s->host_experts = hit;
    /* The routed experts' share of the layer's GPU work. */
    double ef = d->expert_ffn > 0 ? d->expert_ffn : d->ffn_hidden;
    double exp_act = (L - d->dense_layers) * d->top_k * (d->mlp == PFLEX_MLP_GELU ? 2.0 : 3.0)
                     * h * ef * c->scale / tp;
    s->expert_share = fmin(1, exp_act / (c->n_gemm_loc * tp));
    /* Transformers' experts run in the parameters' dtype: autocast does
     * not cover its grouped expert kernels (their fp32 fallback), so a
     * job keeping fp32 parameters under bf16 autocast (plain PyTorch AMP,
     * no FSDP mixed precision: zero < 3) multiplies its experts in fp32
     * on the CUDA cores.  The real H200 run of such a block reads 2 %
     * tensor-pipe activity with 92 % of the SMs busy. */
    if (d->eager && d->zero < 3 && !c->lora && d->precision == PFLEX_PREC_BF16) {
        double f32 = c->cg * exp_act * tok;
        if (f32 > s->ph[PH_GEMM].flops)
            f32 = s->ph[PH_GEMM].flops;
        s->ph[PH_GEMM].flops -= f32;
        s->ph[PH_GEMM].fp32 = f32;
        s->ph[PH_GEMM].eff = c->eff_dense;  /* the tensor cores run the rest */
        /* Its intermediates are fp32 too: per routed token and MoE
         * layer, the gate/up output, the activation and the product
         * (ef wide, written and read), the gathered input and the
         * index_add of the output (h wide, written and read), 4 bytes
         * each; the backward moves twice the forward's. */
        double moe_lact = lact * (L - d->dense_layers) / L;
        s->ph[PH_MEM].bytes += tok * moe_lact * d->top_k * (4.0 * ef * 2 + 4.0 * h * 2)
                               * 4 * passes;
    }
}

/* Training: the host's time per step, the traffic of the tensor- and
 * data-parallel collectives, the step's tokens. */
static void train_totals(struct pflex_sim_job *j, const struct step_shape *c)
{
    const struct pflex_job_desc *d = &j->d;
    const struct pflex_gpu_kind *k = j->k;
    struct step *s = &j->s;
    int gpn = c->gpn;
    double tp_bytes = c->tp_bytes, dp_bytes = c->dp_bytes;
    s->host_s = P.host_step_s * j->host_mult;
    int dp_in_node = d->dp * d->tp <= gpn;
    if (k->nvlink_gbs > 0)
        s->nvlink_bytes += s->micro * tp_bytes
                           + (dp_in_node ? dp_bytes : dp_bytes * (gpn > d->tp ? 0.5 : 0));
    s->comm_bytes += s->micro * tp_bytes + dp_bytes;
    /* The global batch is rounded up to whole micro-steps on every rank. */
    s->tokens = s->micro * d->micro_batch * d->dp * c->seq_tok;
    s->pcie_bytes = s->tokens / d->dp * 8;
}

/* The work of one step on one GPU, from the job's shape: an inference
 * step is a prefill and gen_len decode iterations, a training step
 * `micro` micro-steps and the optimizer. */
static void build_step(struct pflex_sim_job *j)
{
    struct step_shape c = {0};
    memset(&j->s, 0, sizeof j->s);
    step_shape(j, &c);
    if (j->d.kind == PFLEX_JOB_INFERENCE) {
        infer_prefill(j, &c);
        infer_decode(j, &c);
        infer_comm(j, &c);
        return;
    }
    train_tokens(j, &c);
    train_compute(j, &c);
    train_tp(j, &c);
    train_dp(j, &c);
    train_moe_a2a(j, &c);
    train_pipeline_launch(j, &c);
    train_moe_loop(j, &c);
    train_totals(j, &c);
}

/* --- evaluation ----------------------------------------------------------- */

struct ph_run {
    double r, t, tc, p;
};

static void run_phase(const struct pflex_sim_job *j, const struct gpu *g, const struct work *w,
                      struct ph_run *o)
{
    if (w->flops <= 0 && w->bytes <= 0) {
        *o = (struct ph_run){1, 0, 0, 0};
        return;
    }
    o->r = loop_clock(j, g, w, 0);
    o->t = phase_time(j, w, o->r, &o->tc);
    o->p = phase_power(j, g, w, 0, o->r);
}

/* Exposed communication that interleaves with a micro-step's kernels layer
 * by layer: tensor-parallel all-reduces and MoE all-to-all. */
static double interleaved_comm_s(const struct pflex_sim_job *j)
{
    return j->s.tp_s + j->s.moe_s * (1 - P.eta_moe);
}

/* Time-averaged power of the interleaved kernels of one micro-step (GEMMs,
 * attention, memory-bound kernels, and the NCCL kernels of the interleaved
 * communication) all at clock fraction r. */
static double micro_power(const struct pflex_sim_job *j, const struct gpu *g,
                          const struct work *w, double r)
{
    double t = interleaved_comm_s(j), e = t * phase_power(j, g, NULL, P.nccl_sm_frac, r);
    for (int p = PH_GEMM; p <= PH_MEM; p++) {
        if (w[p].flops <= 0 && w[p].bytes <= 0)
            continue;
        double tp = phase_time(j, &w[p], r, NULL);
        t += tp;
        e += tp * phase_power(j, g, &w[p], 0, r);
    }
    return t > 0 ? e / t : phase_power(j, g, NULL, 0, r);
}

/* The power loop over a micro-step: its kernels alternate layer by layer
 * every few hundred microseconds, far faster than the loop reacts (the
 * board's power sensor is read every few tens of milliseconds), so the
 * loop holds their time-averaged power under the cap with one clock. */
static double micro_clock(const struct pflex_sim_job *j, const struct gpu *g,
                          const struct work *w)
{
    double limit = g->cap_w * (1 - P.guard) * (g->lift > 1 ? g->lift : 1);
    if (j->free_clock || micro_power(j, g, w, 1.0) <= limit)
        return 1.0;
    double lo = 0.02, hi = 1.0;
    if (micro_power(j, g, w, lo) > limit)
        return lo;
    for (int i = 0; i < 40; i++) {
        double mid = 0.5 * (lo + hi);
        if (micro_power(j, g, w, mid) <= limit)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* All compute phases of one GPU: the micro-step's kernels under one
 * time-averaged clock, the optimizer (or decode iteration) under its own. */
static void run_phases(const struct pflex_sim_job *j, const struct gpu *g, const struct work *w,
                       struct ph_run *o)
{
    double r = micro_clock(j, g, w);
    for (int p = PH_GEMM; p <= PH_MEM; p++) {
        if (w[p].flops <= 0 && w[p].bytes <= 0) {
            o[p] = (struct ph_run){r, 0, 0, 0};
            continue;
        }
        o[p].r = r;
        o[p].t = phase_time(j, &w[p], r, &o[p].tc);
        o[p].p = phase_power(j, g, &w[p], 0, r);
    }
    run_phase(j, g, &w[PH_OPT], &o[PH_OPT]);
}

/* Communication time c left exposed behind compute time that can hide h.
 * Per layer (bucket) the traffic and the compute differ, so the exposure
 * is a smooth max(0, c - h): soft over a width of ovl_width * c. */
static double exposed(const struct pflex_sim_job *j, double c, double h)
{
    if (c <= 0)
        return 0;
    double d = c - h, w = P.ovl_width * c, e = 0.5 * (d + sqrt(d * d + w * w));
    return e < c ? e : c;
}

/* FSDP's exposed traffic per micro-step, given the compute time g of the
 * micro-step.  FSDP gathers a layer's weights one layer ahead, on its own
 * stream, so a pass's collectives hide behind that pass's compute: the
 * forward's all-gathers behind the forward, the backward's all-gathers and
 * reduce-scatters behind the backward (recomputation included), each up to
 * the share eta_dp of it.  The first all-gather has nothing before it to
 * hide behind and the last reduce-scatter nothing after it (the optimizer
 * waits for it): one layer's each, exposed whole (PyTorch's FSDP notes,
 * "FSDP Prefetch Nuances"). */
static double fsdp_exposed(const struct pflex_sim_job *j, double g)
{
    const struct step *s = &j->s;
    if (!(s->fsdp_s > 0))
        return 0;
    double first = s->fsdp_fwd_s / s->fsdp_layers, last = s->fsdp_edge_s - first;
    double fwd = s->fsdp_fwd_s - first, bwd = s->fsdp_s - s->fsdp_fwd_s - last;
    return s->fsdp_edge_s + exposed(j, fwd, P.eta_dp * s->fwd_share * g)
           + exposed(j, bwd, P.eta_dp * (1 - s->fwd_share) * g);
}

/* The eager MoE loop's exposed host time per micro-step, given the GPU
 * time g of the micro-step.  Per layer and pass the non-expert work runs
 * while the host waits at the loop's first sync; then each expert takes the
 * longer of its host operators (h) and its GPU work G_e.  Experts receive
 * unequal shares of the tokens (coefficient of variation ROUTE_CV), so
 * E[max(h, G_e)] with G_e ~ N(mu, (cv mu)^2): mu Phi(z) + h Phi(-z) +
 * sigma phi(z), z = (mu - h) / sigma. */
#define ROUTE_CV 0.4

static double moe_loop_exposed(const struct pflex_sim_job *j, double g)
{
    const struct step *s = &j->s;
    double layer = g * s->host_fwd_share / s->host_layers, e = s->host_experts > 0 ? s->host_experts : 1;
    double mu = layer * s->expert_share / e, sig = ROUTE_CV * mu;
    double h = s->host_layer_s / e;
    if (!(sig > 0))
        return s->host_layers * fmax(0, s->host_layer_s - layer * s->expert_share);
    double z = (mu - h) / sig;
    double emax = mu * 0.5 * erfc(-z / M_SQRT2) + h * 0.5 * erfc(z / M_SQRT2)
                  + sig * exp(-0.5 * z * z) / sqrt(2 * M_PI);
    return s->host_layers * e * (emax - mu);
}

/* Telemetry weights per phase type: sm_active, sm_occupancy. */
static const double sm_occ[] = {0.22, 0.30, 0.55, 0.55};

/* MEM_COPY_UTIL (nvidia-smi utilization.memory) is the share of sample
 * time in which the memory controller is busy at all, not the share of its
 * bandwidth used (that is DRAM_ACTIVE).  A phase streaming a fraction u of
 * the bandwidth keeps it busy about min(1, u / U_BUSY) of its time: the
 * controller's busy flag is set while any request is queued, and requests
 * come in bursts per warp.  u_busy is fitted on the real H200's two
 * counters side by side (docs/sim-model.md). */
static double busy_frac(const struct pflex_sim_job *j, double u)
{
    return u >= P.u_busy ? 1.0 : u / P.u_busy;
}

/* One synchronous group of GPUs [lo, hi) (the whole job for training, one
 * replica for inference): its step time at the pace of its slowest GPU,
 * and each GPU's power and telemetry into the scratch arrays. */
static double eval_group(struct pflex_sim_job *j, const struct ph_run *runs, int lo, int hi)
{
    const struct step *s = &j->s;
    double tm_slow = 0, topt_slow = 0;
    int decode = s->decode;
    double iters = decode ? s->decode_iters : 1;
    /* A decode step's kernels are tiny: each takes at least kernel_min_s
     * on the GPU, with few SMs busy (small_t: that time beyond the
     * roofline's, per step). */
    double kfloor = decode ? s->kernels_iter * P.kernel_min_s : 0;
    for (int i = lo; i < hi; i++) {
        const struct ph_run *r = runs + (size_t)i * PH_NCOMPUTE;
        double tmicro = r[PH_GEMM].t + r[PH_ATTN].t + r[PH_MEM].t;
        double topt = fmax(r[PH_OPT].t, kfloor) * iters;
        if (tmicro > tm_slow)
            tm_slow = tmicro;
        if (topt > topt_slow)
            topt_slow = topt;
    }
    double m = s->micro;
    /* Exposed communication, with the compute time of the slowest GPU. */
    double fsdp_exp = fsdp_exposed(j, tm_slow);
    double dp_exp = exposed(j, s->dp_s, P.eta_dp * (2.0 / 3.0) * tm_slow);
    double moe_exp = s->moe_s * (1 - P.eta_moe);
    double comm_micro = s->tp_s + moe_exp + fsdp_exp + s->pp_s;
    double comm_int = m * interleaved_comm_s(j);    /* under the micro-step's clock */
    double launch_exp = decode ? s->launch_s : s->launch_s - tm_slow;
    if (launch_exp < 0)
        launch_exp = 0;
    /* Decode: the host's operator stream against the GPU's step (a sync
     * per step, so the longer of the two sets the pace). */
    if (decode)
        launch_exp += iters * fmax(0, s->host_iter_s - topt_slow / iters);
    if (s->host_layers > 0)
        launch_exp += moe_loop_exposed(j, tm_slow);
    double comm = m * comm_micro + dp_exp;
    double bubble = s->bubble_micro * (tm_slow + comm_micro);
    double host = s->host_s + m * launch_exp;
    double step = m * tm_slow + topt_slow + comm + bubble + host;
    const struct pflex_gpu_kind *k = j->k;
    double nccl = P.nccl_sm_frac;
    for (int i = lo; i < hi; i++) {
        const struct gpu *g = &j->g[i];
        const struct ph_run *r = runs + (size_t)i * PH_NCOMPUTE;
        double rc = loop_clock(j, g, NULL, P.nccl_sm_frac), ri = loop_clock(j, g, NULL, 0);
        double pc = phase_power(j, g, NULL, P.nccl_sm_frac, rc), pi = phase_power(j, g, NULL, 0, ri);
        double rm = r[PH_GEMM].r, pm = phase_power(j, g, NULL, P.nccl_sm_frac, rm);
        double small = iters * fmax(0, kfloor - r[PH_OPT].t);
        double busy = m * (r[PH_GEMM].t + r[PH_ATTN].t + r[PH_MEM].t) + r[PH_OPT].t * iters + small;
        /* A faster GPU waits for the slowest inside the next collective: an
         * NCCL kernel spinning on a flag, so the wait counts as a kernel. */
        double straggle = m * (tm_slow - (r[PH_GEMM].t + r[PH_ATTN].t + r[PH_MEM].t))
                          + (topt_slow - r[PH_OPT].t * iters - small);
        double wait = step - busy - comm;
        double rs = loop_clock(j, g, NULL, P.sm_small);
        double e = m * (r[PH_GEMM].t * r[PH_GEMM].p + r[PH_ATTN].t * r[PH_ATTN].p
                        + r[PH_MEM].t * r[PH_MEM].p)
                   + iters * r[PH_OPT].t * r[PH_OPT].p + (comm - comm_int) * pc + comm_int * pm
                   + small * phase_power(j, g, NULL, P.sm_small, rs) + wait * pi;
        j->power_w[i] = e / step;
        double *tm = j->tm + (size_t)i * PFLEX_TM_COUNT;
        double clk = 0, act = 0, occ = 0, tens = 0, bytes = 0, mbusy = 0;
        clk += small * rs;
        act += small * P.sm_small;
        for (int p = 0; p < PH_NCOMPUTE; p++) {
            double reps = p == PH_OPT ? iters : m, t = reps * r[p].t;
            clk += t * r[p].r;
            act += t * s->ph[p].sm;
            occ += t * sm_occ[p];
            tens += reps * s->ph[p].flops / (j->rate_tflops * 1e12 * r[p].r);
            bytes += reps * s->ph[p].bytes;
            if (r[p].t > 0)
                mbusy += t * busy_frac(j, s->ph[p].bytes / (r[p].t * k->mem_bw_gbs * 1e9));
        }
        if (j->rate_tflops == k->fp32_tflops && k->fp32_tflops != k->bf16_tflops)
            tens = 0;           /* FP32 on CUDA cores: the tensor pipe is idle */
        clk += (comm - comm_int) * rc + comm_int * rm + wait * ri;
        /* NCCL kernels hold a few SMs busy (spinning included) for the whole
         * exposed communication and for straggler waits; they copy through
         * device memory at the link's rate. */
        act += (comm + straggle) * nccl;
        occ += (comm + straggle) * nccl * 0.25;
        /* NCCL's copies (each byte sent is read and received written)
         * keep the memory busy at least as long as streaming them at the
         * saturating share would, overlapped with compute or not. */
        mbusy += 2 * s->comm_bytes / (k->mem_bw_gbs * 1e9 * P.u_busy);
        double kernel_time = busy + comm + straggle;
        if (kernel_time > step)
            kernel_time = step;
        tm[PFLEX_TM_SM_CLOCK_MHZ] = clk / step * k->sm_clock_max_mhz;
        tm[PFLEX_TM_MEM_CLOCK_MHZ] = k->mem_clock_mhz;
        tm[PFLEX_TM_GPU_UTIL] = 100 * kernel_time / step;
        tm[PFLEX_TM_GR_ENGINE_ACTIVE] = kernel_time / step;
        tm[PFLEX_TM_SM_ACTIVE] = fmin(1, act / step);
        tm[PFLEX_TM_SM_OCCUPANCY] = fmin(1, occ / step);
        tm[PFLEX_TM_TENSOR_ACTIVE] = tens / step;
        tm[PFLEX_TM_DRAM_ACTIVE] = fmin(1, (bytes + 2 * s->comm_bytes) / (k->mem_bw_gbs * 1e9 * step));
        tm[PFLEX_TM_MEM_COPY_UTIL] = fmin(100, 100 * mbusy / step);
        tm[PFLEX_TM_PCIE_RX_BYTES] = s->pcie_bytes / step;
        tm[PFLEX_TM_PCIE_TX_BYTES] = s->pcie_bytes / step * 0.05;
        /* Boards without NVLink have no NVLink counters. */
        tm[PFLEX_TM_NVLINK_TX_BYTES] = k->nvlink_gbs > 0 ? s->nvlink_bytes / step : NAN;
        tm[PFLEX_TM_NVLINK_RX_BYTES] = k->nvlink_gbs > 0 ? s->nvlink_bytes / step : NAN;
    }
    return step;
}

/* The power loop holds the board's mean power over its window
 * (limit_window_s), not each kernel's: a training step shorter than the
 * window is held as a whole, so the optimizer and the host's gaps, which
 * draw less, leave the micro-step's kernels more than the held mean (an
 * allowance up to lift_max over it; a step longer than the window gets the
 * share window / step of that).  The real H200's power-limited loops (steps
 * of 0.1-0.4 s with 2-12 % of optimizer and host time) hold their whole
 * step's mean 0.7-1.6 % under the limit (tools/device/limiter.py).  One
 * allowance for the group, the highest whose busiest GPU stays under its
 * held mean (power rises with it; hold_step_mean solves for it). */
static double group_over(struct pflex_sim_job *j, struct ph_run *runs, int lo, int hi,
                         double lift, double *step)
{
    double worst = -1;
    for (int i = lo; i < hi; i++) {
        j->g[i].lift = lift;
        run_phases(j, &j->g[i], j->s.ph, runs + (size_t)i * PH_NCOMPUTE);
    }
    *step = eval_group(j, runs, lo, hi);
    for (int i = lo; i < hi; i++)
        worst = fmax(worst, j->power_w[i] / (j->g[i].cap_w * (1 - P.guard)) - 1);
    return worst;
}

/* False position (Illinois) on the allowance: the busiest GPU's power over
 * its held mean, which rises with the allowance, brought to it within
 * 1e-9 (tight: the fit's finite-difference Jacobian must see a smooth
 * model); the last point under is kept. */
static double hold_step_mean(struct pflex_sim_job *j, struct ph_run *runs, int lo, int hi,
                             double step)
{
    int limited = 0;
    for (int i = lo; i < hi; i++)
        limited |= runs[(size_t)i * PH_NCOMPUTE + PH_GEMM].r < 1;
    if (!limited)
        return step;
    double st = step, l0 = 1, f0 = -1;
    for (int i = lo; i < hi; i++)
        f0 = fmax(f0, j->power_w[i] / (j->g[i].cap_w * (1 - P.guard)) - 1);
    double l1 = 1 + (P.lift_max - 1) * fmin(1, P.limit_window_s / step);
    double f1 = group_over(j, runs, lo, hi, l1, &st);
    if (f1 <= 0 || f0 >= 0) {
        if (f0 >= 0)
            group_over(j, runs, lo, hi, 1, &st);
        return st;
    }
    int side = 0;
    for (int it = 0; it < 40 && f0 < -1e-9 && l1 - l0 > 1e-12; it++) {
        double l = l0 - f0 * (l1 - l0) / (f1 - f0), f = group_over(j, runs, lo, hi, l, &st);
        if (f > 0) {
            l1 = l, f1 = f;
            f0 *= side == 1 ? 0.5 : 1;
            side = 1;
        } else {
            l0 = l, f0 = f;
            f1 *= side == -1 ? 0.5 : 1;
            side = -1;
        }
    }
    if (side != -1)
        group_over(j, runs, lo, hi, l0, &st);
    return st;
}

/* Evaluate the job with the caps set on its GPUs: per-GPU power and
 * telemetry into the scratch arrays; returns the job's tokens/s and the
 * mean step time in *step_s. */
static double evaluate(struct pflex_sim_job *j, double *step_s)
{
    const struct step *s = &j->s;
    struct ph_run *runs = calloc((size_t)j->n * PH_NCOMPUTE, sizeof *runs);
    if (!runs)
        return NAN;
    /* Inference: a generate call (prefill, then short decode steps with
     * host gaps between them) is shorter than the power loop's window, so
     * the loop holds the call's time-averaged power: where that fits under
     * the cap at full clock, nothing slows down (a 250 W generation loop
     * under a 400 W cap); else each phase gets its own clock. */
    j->free_clock = s->decode;
    for (int i = 0; i < j->n; i++) {
        j->g[i].lift = 1;
        run_phases(j, &j->g[i], s->ph, runs + (size_t)i * PH_NCOMPUTE);
    }
    j->free_clock = 0;
    /* Inference replicas run independently; a training job is one group. */
    int size = s->decode ? j->d.tp * j->d.pp : j->n;
    int groups = j->n / size;
    double rate = 0, steps = 0;
    for (int gi = 0; gi < groups; gi++) {
        double step = eval_group(j, runs, gi * size, (gi + 1) * size);
        if (!s->decode)
            step = hold_step_mean(j, runs, gi * size, (gi + 1) * size, step);
        int over = 0;
        for (int i = gi * size; s->decode && i < (gi + 1) * size; i++)
            over |= j->power_w[i] > j->g[i].cap_w * (1 - P.guard);
        if (over) {
            for (int i = gi * size; i < (gi + 1) * size; i++)
                run_phases(j, &j->g[i], s->ph, runs + (size_t)i * PH_NCOMPUTE);
            step = eval_group(j, runs, gi * size, (gi + 1) * size);
        }
        rate += s->tokens / groups / step;
        steps += step / groups;
    }
    free(runs);
    *step_s = steps;
    return rate;
}

static void set_caps(struct pflex_sim_job *j, double cap_w)
{
    if (cap_w < j->k->min_cap_w)
        cap_w = j->k->min_cap_w;
    if (cap_w > j->k->max_cap_w)
        cap_w = j->k->max_cap_w;
    for (int i = 0; i < j->n; i++)
        j->g[i].cap_w = cap_w;
}

static int measure(pflex_sim_job_t *j, double cap_w, struct pflex_sim_measure *out, int noisy,
                   pflex_error_t *err)
{
    if (!j || !out)
        return pflex_error_set(err, "sim: no job");
    if (cap_w > 0)
        set_caps(j, cap_w);
    double step, rate = evaluate(j, &step);
    if (!isfinite(rate))
        return pflex_error_set(err, "sim: out of memory");
    memset(out, 0, sizeof *out);
    double caps = 0, pw = 0;
    for (int i = 0; i < j->n; i++) {
        caps += j->g[i].cap_w;
        pw += j->power_w[i];
        for (int f = 0; f < PFLEX_TM_COUNT; f++)
            out->tm[f] += j->tm[(size_t)i * PFLEX_TM_COUNT + f];     /* NaN stays NaN */
    }
    out->cap_w = caps / j->n;
    out->power_w = pw / j->n;
    for (int f = 0; f < PFLEX_TM_COUNT; f++)
        out->tm[f] /= j->n;
    out->step_s = step;
    out->throughput = rate;
    if (noisy) {
        uint64_t draw = j->draws++, base = pflex_mix64(j->seed ^ 0x6e6f697365ULL) ^ pflex_mix64(draw);
        out->power_w *= 1 + P.noise_power * pflex_gauss(base, 1);
        out->throughput *= 1 + P.noise_tput * pflex_gauss(base, 2);
        out->step_s = j->s.tokens / out->throughput;
        for (int f = 0; f < PFLEX_TM_COUNT; f++)
            if (f == PFLEX_TM_SM_CLOCK_MHZ) {
                /* The clock dithers only where the power limit binds; it
                 * never reads above the board's top clock. */
                double top = j->k->sm_clock_max_mhz;
                if (out->tm[f] < top - 1)
                    out->tm[f] = fmin(top, out->tm[f] * (1 + P.noise_tm * pflex_gauss(base, 10 + (uint64_t)f)));
            } else if (f != PFLEX_TM_MEM_CLOCK_MHZ) {
                out->tm[f] *= 1 + P.noise_tm * pflex_gauss(base, 10 + (uint64_t)f);
                if ((f >= PFLEX_TM_SM_ACTIVE && f <= PFLEX_TM_GR_ENGINE_ACTIVE) && out->tm[f] > 1)
                    out->tm[f] = 1;
                if ((f == PFLEX_TM_GPU_UTIL || f == PFLEX_TM_MEM_COPY_UTIL) && out->tm[f] > 100)
                    out->tm[f] = 100;
            }
    }
    return 0;
}

int pflex_sim_job_measure(pflex_sim_job_t *j, double cap_w, struct pflex_sim_measure *out,
                          pflex_error_t *err)
{
    return measure(j, cap_w, out, 1, err);
}

int pflex_sim_job_expect(pflex_sim_job_t *j, double cap_w, struct pflex_sim_measure *out,
                         pflex_error_t *err)
{
    return measure(j, cap_w, out, 0, err);
}

int pflex_sim_job_per_gpu(pflex_sim_job_t *j, double cap_w, double *power_w, double *tm,
                          struct pflex_sim_measure *mean, pflex_error_t *err)
{
    struct pflex_sim_measure m;
    if (measure(j, cap_w, &m, 0, err) < 0)
        return -1;
    if (power_w)
        memcpy(power_w, j->power_w, (size_t)j->n * sizeof *power_w);
    if (tm)
        memcpy(tm, j->tm, (size_t)j->n * PFLEX_TM_COUNT * sizeof *tm);
    if (mean)
        *mean = m;
    return 0;
}

int pflex_sim_job_gpus(const pflex_sim_job_t *j)
{
    return j->n;
}

uint64_t pflex_sim_job_noise_seed(const pflex_sim_job_t *j)
{
    return j->seed;
}

int pflex_sim_job_breakdown(pflex_sim_job_t *j, double cap_w, struct pflex_sim_breakdown *out,
                            pflex_error_t *err)
{
    if (!j || !out)
        return pflex_error_set(err, "sim: no job");
    set_caps(j, cap_w > 0 ? cap_w : j->k->max_cap_w);
    const struct step *s = &j->s;
    double ts[PH_NCOMPUTE] = {0}, step;
    evaluate(j, &step);         /* first: it sets each GPU's allowance (lift) */
    for (int i = 0; i < j->n; i++) {
        struct ph_run r[PH_NCOMPUTE];
        double tot = 0;
        run_phases(j, &j->g[i], s->ph, r);
        for (int p = 0; p < PH_NCOMPUTE; p++)
            tot += r[p].t;
        double best = ts[0] + ts[1] + ts[2] + ts[3];
        if (tot > best)
            for (int p = 0; p < PH_NCOMPUTE; p++)
                ts[p] = r[p].t;
    }
    double m = s->micro, iters = s->decode ? s->decode_iters : 1;
    double tmicro = ts[PH_GEMM] + ts[PH_ATTN] + ts[PH_MEM];
    memset(out, 0, sizeof *out);
    out->step_s = step;
    out->gemm = m * ts[PH_GEMM] / step;
    out->attention = m * ts[PH_ATTN] / step;
    out->memory = m * ts[PH_MEM] / step;
    out->optimizer = iters * ts[PH_OPT] / step;
    out->bubble = s->bubble_micro * tmicro / step;
    double hl = s->host_layers > 0 ? moe_loop_exposed(j, tmicro) : 0;
    double host = s->host_s + m * ((s->decode ? s->launch_s : fmax(0, s->launch_s - tmicro)) + hl);
    out->host = host / step;
    out->comm_exposed = 1 - out->gemm - out->attention - out->memory - out->optimizer
                        - out->bubble - out->host;
    if (out->comm_exposed < 0)
        out->comm_exposed = 0;
    out->comm_total_s = m * (s->tp_s + s->moe_s + s->fsdp_s + s->pp_s) + s->dp_s;
    return 0;
}

/* --- life cycle ----------------------------------------------------------- */

/* FNV-1a over the description's bytes: two different jobs given the same
 * seed draw different silicon and noise (a `pflex sweep` of one job never
 * shares its noise stream with another's). */
static uint64_t desc_hash(const struct pflex_job_desc *d)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const unsigned char *p = (const unsigned char *)d->name;
    for (size_t i = 0; i < sizeof d->name && p[i]; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    const int v[] = {d->gpus, d->layers, d->hidden, d->heads, d->ffn_hidden, d->vocab, d->seq_len,
                     d->micro_batch, d->global_batch, d->experts, d->top_k, (int)d->kind, d->dp,
                     d->tp, d->pp, d->ep, d->act_ckpt, d->zero, d->eager, d->attention,
                     d->precision, (int)(d->params_b * 1000)};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        h = (h ^ (uint64_t)(unsigned)v[i]) * 0x100000001b3ULL;
    for (const char *c = d->gpu; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
    return h;
}

int pflex_sim_job_create_fit(const struct pflex_job_desc *d, uint64_t seed,
                             const struct pflex_sim_fit *fit, pflex_sim_job_t **out,
                             pflex_error_t *err)
{
    struct pflex_job_desc r = *d;
    if (pflex_job_desc_resolve(&r, err) < 0)
        return -1;
    if (!fit)
        fit = &pflex_sim_fit_default;
    if (!(fit->k_dyn_ga100 > 0 && fit->k_dyn_gh100 > 0 && fit->w_tensor >= 0
          && fit->w_fp32 >= 0 && fit->eager_mult >= 1 && fit->eta_dp >= 0 && fit->eta_dp <= 1
          && fit->py_op_s > 0 && fit->py_op_s < 1e-3 && fit->u_busy > 0.01 && fit->u_busy <= 1
          && fit->eff_gemm > 0.05 && fit->eff_gemm <= 1 && fit->v_floor_gh100 > 0.3
          && fit->v_floor_gh100 <= 1 && fit->knee_gh100 > 0.05 && fit->knee_gh100 < 1
          && fit->eff_mem > 0.1 && fit->eff_mem <= 1 && fit->train_ops > 0
          && fit->train_ops < 100 && fit->host_b > 0))
        return pflex_error_set(err, "sim: fitted constants out of range");
    pflex_sim_job_t *j = calloc(1, sizeof *j);
    if (!j)
        return pflex_error_set(err, "out of memory");
    j->d = r;
    j->k = pflex_gpu_kind_find(r.gpu);
    j->phys = P_DEFAULT;
    P.k_dyn_ga100 = fit->k_dyn_ga100;
    P.k_dyn_gh100 = fit->k_dyn_gh100;
    P.w_tensor = fit->w_tensor;
    P.w_fp32 = fit->w_fp32;
    P.eager_mult = fit->eager_mult;
    P.eta_dp = fit->eta_dp;
    P.py_op_s = fit->py_op_s;
    P.u_busy = fit->u_busy;
    P.eff_gemm = fit->eff_gemm;
    P.eff_mem = fit->eff_mem;
    P.train_ops = fit->train_ops;
    j->seed = pflex_mix64(seed ^ desc_hash(&r));
    j->n = r.gpus;
    j->g = calloc((size_t)j->n, sizeof *j->g);
    j->power_w = calloc((size_t)j->n, sizeof *j->power_w);
    j->tm = calloc((size_t)j->n * PFLEX_TM_COUNT, sizeof *j->tm);
    if (!j->g || !j->power_w || !j->tm) {
        pflex_sim_job_destroy(j);
        return pflex_error_set(err, "out of memory");
    }
    const struct pflex_gpu_kind *k = j->k;
    /* Leakage and switching power belong to the die (model.c): the fitted
     * scale of the die family, the mean of the two fitted ones for dies
     * nothing measured constrains. */
    double kd = !strcmp(k->die, "GA100") ? P.k_dyn_ga100
                : !strcmp(k->die, "GH100") ? P.k_dyn_gh100
                : 0.5 * (P.k_dyn_ga100 + P.k_dyn_gh100);
    j->leak_w = k->leak_w;
    j->v_ratio = k->v_ratio;
    j->f_knee = k->f_knee_mhz / k->sm_clock_max_mhz;
    /* GH100's curve is fitted on the real H200's power-limited and free
     * clocks (docs/measurements.md, "The sim backend's calibration"); the other dies' are model.c's. */
    if (!strcmp(k->die, "GH100")) {
        j->v_ratio = fit->v_floor_gh100;
        j->f_knee = fit->knee_gh100;
    }
    /* The kind's idle_w is the board's draw idle at its lowest clock (what
     * nvidia-smi shows on an idle GPU; 84 W measured on the H200); that
     * includes leakage at the voltage floor. */
    j->idle_w = k->idle_w - k->leak_w * j->v_ratio * j->v_ratio;
    j->dyn_w = kd * k->dyn_budget_w;
    j->mem_w_per_gbs = k->mem_pj_per_bit * 8e-12 * 1e9;    /* W per GB/s */
    j->gpn = r.gpus_per_node > 0 ? r.gpus_per_node : (k->gpus_per_node > 0 ? k->gpus_per_node : 8);
    precision_rate(j);
    /* The data loader's speed differs from job to job (tokenisation,
     * storage, CPU per GPU): a log-normal factor fixed by the seed. */
    j->host_mult = exp(P.sigma_host * pflex_gauss(pflex_mix64(j->seed ^ 0x686f7374ULL), 0)
                       - 0.5 * P.sigma_host * P.sigma_host);
    uint64_t sil = pflex_mix64(j->seed ^ 0x73696c69636f6eULL);
    for (int i = 0; i < j->n; i++) {
        j->g[i].leak_mult = fmax(0.5, 1 + P.sigma_leak * pflex_gauss(sil, 2 * (uint64_t)i));
        j->g[i].v_mult = 1 + P.sigma_v * pflex_gauss(sil, 2 * (uint64_t)i + 1);
        j->g[i].cap_w = k->default_cap_w;
    }
    build_step(j);
    *out = j;
    return 0;
}

int pflex_sim_job_create(const struct pflex_job_desc *d, uint64_t seed,
                         pflex_sim_job_t **out, pflex_error_t *err)
{
    return pflex_sim_job_create_fit(d, seed, NULL, out, err);
}

int pflex_sim_loop_expect(const char *gpu, const struct pflex_sim_fit *fit,
                          enum pflex_sim_loop loop, double size, double cap_w,
                          struct pflex_sim_measure *out, pflex_error_t *err)
{
    if (!gpu || !pflex_gpu_kind_find(gpu))
        return pflex_error_set(err, "sim: unknown GPU kind %s", gpu ? gpu : "(null)");
    if (!(size >= 1 && size < 1e13) || (loop != PFLEX_SIM_LOOP_GEMM && loop != PFLEX_SIM_LOOP_COPY))
        return pflex_error_set(err, "sim: a loop needs a kind and a size in 1..1e13");
    /* A one-GPU job of some shape gives the GPU (its die, silicon of seed
     * 1, the fitted constants); its step is then replaced by the loop's
     * one kernel, repeated with no host gap (the loop launches ahead). */
    struct pflex_job_desc d = {.gpus = 1, .layers = 1, .hidden = 1024, .heads = 8,
                               .ffn_hidden = 4096, .vocab = 32000, .seq_len = 128,
                               .micro_batch = 1, .global_batch = 1, .kind = PFLEX_JOB_PRETRAIN};
    snprintf(d.name, sizeof d.name, "loop");
    snprintf(d.gpu, sizeof d.gpu, "%s", gpu);
    pflex_sim_job_t *j;
    if (pflex_sim_job_create_fit(&d, 1, fit, &j, err) < 0)
        return -1;
    memset(&j->s, 0, sizeof j->s);
    j->s.micro = 1;
    if (loop == PFLEX_SIM_LOOP_GEMM) {
        /* bf16 GEMM: 2 n^3 FLOPs, A and B read and C written once; its
         * efficiency by the same width and row law as a model's GEMMs. */
        double n = size;
        j->rate_tflops = j->k->bf16_tflops > 0 ? j->k->bf16_tflops : j->k->fp32_tflops;
        j->s.ph[PH_GEMM] = gemm_work(j, 2 * n * n * n, 3 * n * n * 2, n / (n + P.gemm_h0), n);
        j->s.tokens = 2 * n * n * n;
    } else {
        j->s.ph[PH_MEM] = (struct work){.bytes = 2 * size, .sm = P.sm_mem};
        j->s.tokens = 2 * size;
    }
    int rc = measure(j, cap_w, out, 0, err);
    pflex_sim_job_destroy(j);
    return rc;
}

void pflex_sim_job_destroy(pflex_sim_job_t *j)
{
    if (!j)
        return;
    free(j->g);
    free(j->power_w);
    free(j->tm);
    free(j);
}

const struct pflex_job_desc *pflex_sim_job_desc(const pflex_sim_job_t *j)
{
    return &j->d;
}

const struct pflex_gpu_kind *pflex_sim_job_kind(const pflex_sim_job_t *j)
{
    return j->k;
}

/* --- the gpu_ops backend -------------------------------------------------- */

static int op_count(void *ctx, unsigned *n, pflex_error_t *err)
{
    *n = (unsigned)((pflex_sim_job_t *)ctx)->n;
    return 0;
}

static int check_index(pflex_sim_job_t *j, unsigned i, pflex_error_t *err)
{
    return i < (unsigned)j->n ? 0
           : pflex_error_set(err, "sim: no GPU %u (the job has %d)", i, j->n);
}

static int op_describe(void *ctx, unsigned i, char *buf, size_t len, pflex_error_t *err)
{
    pflex_sim_job_t *j = ctx;
    if (check_index(j, i, err) < 0)
        return -1;
    snprintf(buf, len, "NVIDIA %s (simulated)", j->k->name);
    return 0;
}

static int op_limits(void *ctx, unsigned i, struct pflex_gpu_limits *out, pflex_error_t *err)
{
    pflex_sim_job_t *j = ctx;
    if (check_index(j, i, err) < 0)
        return -1;
    *out = (struct pflex_gpu_limits){j->k->min_cap_w, j->k->max_cap_w, j->k->default_cap_w};
    return 0;
}

static int op_get_cap(void *ctx, unsigned i, double *cap_w, pflex_error_t *err)
{
    pflex_sim_job_t *j = ctx;
    if (check_index(j, i, err) < 0)
        return -1;
    *cap_w = j->g[i].cap_w;
    return 0;
}

static int op_set_cap(void *ctx, unsigned i, double cap_w, pflex_error_t *err)
{
    pflex_sim_job_t *j = ctx;
    if (check_index(j, i, err) < 0)
        return -1;
    if (!(cap_w >= j->k->min_cap_w && cap_w <= j->k->max_cap_w))
        return pflex_error_set(err, "sim: cap %g W is outside [%g, %g] W of %s", cap_w,
                               j->k->min_cap_w, j->k->max_cap_w, j->k->name);
    j->g[i].cap_w = cap_w;
    return 0;
}

/* One one-second sampling window of GPU i at the caps in force. */
static int op_sample(void *ctx, unsigned i, struct pflex_gpu_sample *out, pflex_error_t *err)
{
    pflex_sim_job_t *j = ctx;
    if (check_index(j, i, err) < 0)
        return -1;
    double step;
    evaluate(j, &step);
    uint64_t base = pflex_mix64(j->seed ^ 0x73616d706c65ULL) ^ pflex_mix64(j->draws++);
    out->power_w = j->power_w[i] * (1 + P.noise_power * pflex_gauss(base, 1));
    j->g[i].energy_j += out->power_w;
    out->energy_j = j->g[i].energy_j;
    memcpy(out->tm, j->tm + (size_t)i * PFLEX_TM_COUNT, sizeof out->tm);
    return 0;
}

static const struct pflex_gpu_ops sim_ops = {
    .name = "sim",
    .count = op_count,
    .describe = op_describe,
    .limits = op_limits,
    .get_cap = op_get_cap,
    .set_cap = op_set_cap,
    .sample = op_sample,
    .close = NULL,
};

void pflex_sim_job_gpu(pflex_sim_job_t *j, pflex_gpu_t *out)
{
    out->ops = &sim_ops;
    out->ctx = j;
}
