/* sim.c — the physical GPU power/performance model (docs/sim-model.md).
 *
 * A step of a job is a list of phases.  A compute phase has tensor-core
 * FLOPs and DRAM bytes and runs at the roofline of the two at its SM clock;
 * communication, pipeline bubbles and host work have fixed durations.  Board
 * power in a phase is
 *   P = idle + leak * v^2 + dyn * activity * (f/fmax) * v^2 + E_bit * DRAM bits/s
 * (v = V(f)/Vmax, the V-f curve).  The power loop gives the interleaved
 * kernels of a micro-step one SM clock, the highest whose time-averaged
 * power fits under the cap, and every other phase its own.  The memory
 * clock never changes.  Every GPU has its own silicon (leakage, voltage offset); the job
 * runs at the pace of the slowest one while the others wait.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/sim.h"

/* Global physical constants, the same for every job and kind.  Calibrated
 * once against the Emerald A100 measurements (docs/sim-model.md). */
static const struct physics {
    double v_ratio;         /* Vmin / Vmax of the V-f curve */
    double f_knee;          /* fraction of f_max below which V stays at Vmin */
    double guard;           /* the power loop holds each phase this far under the cap */
    double leak_frac;       /* leakage at Vmax, fraction of the max cap */
    double dyn_frac;        /* switching power of a full-rate GEMM at f_max, Vmax, as a
                             * fraction of (max cap - idle - leakage) */
    double eff_gemm;        /* achieved fraction of the tensor peak in large GEMMs */
    double gemm_h0;         /* GEMM efficiency halves at this per-GPU width (hidden/tp) */
    double gemm_m0;         /* ... and at this many rows (tokens per micro-batch) */
    double eff_attn;        /* fraction of the peak in fused attention */
    double eff_mem;         /* achieved fraction of DRAM bandwidth */
    double r_sat;           /* SM clock fraction below which memory kernels slow down */
    double a_gemm, a_attn, a_mem, a_comm, a_idle;  /* switching activity per phase type */
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
    double lora_rank;
    double sigma_leak, sigma_v; /* silicon variation (relative, 1 sigma) */
    double noise_power, noise_tput, noise_tm; /* measurement noise (relative, 1 sigma) */
} P = {
    /* Calibrated on the Emerald A100 sweeps (docs/sim-model.md). */
    .v_ratio = 0.798, .f_knee = 0.577, .guard = 0.0050, .leak_frac = 0.0486, .dyn_frac = 1.024,
    .eff_gemm = 0.895, .gemm_h0 = 54.8, .gemm_m0 = 63.9, .eff_attn = 0.656, .eff_mem = 0.606,
    .r_sat = 0.665, .a_gemm = 1.0, .a_attn = 0.604, .a_mem = 0.672, .a_comm = 0.50, .a_idle = 0.03,
    .act_bytes = 75.6, .eager_mult = 4.94, .eff_link = 0.80, .eff_a2a = 0.60, .eta_dp = 0.303,
    .eta_moe = 0.25, .ovl_width = 0.0256, .coll_lat_s = 10e-6, .launch_s = 4e-6,
    .kernels_per_layer = 20, .host_step_s = 0.005, .host_iter_s = 0.0, .lora_rank = 16,
    /* Not calibrated: silicon spread and sensor noise of the right order. */
    .sigma_leak = 0.06, .sigma_v = 0.008, .noise_power = 0.005, .noise_tput = 0.007,
    .noise_tm = 0.01,
};


enum ph { PH_GEMM, PH_ATTN, PH_MEM, PH_OPT, PH_NCOMPUTE };

/* Work of one compute phase on one GPU. */
struct work {
    double flops;           /* tensor-core FLOPs */
    double bytes;           /* DRAM bytes */
    double eff;             /* fraction of the tensor peak */
    double act;             /* switching activity when compute-limited */
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
    double dp_s;            /* per step gradient all-reduce */
    double pp_s;            /* per micro-step pipeline send/recv */
    double launch_s;        /* host launch time per micro-step */
    double host_s;          /* per step host time */
    double bubble_micro;    /* pipeline bubble in units of one micro-step */
    double nvlink_bytes;    /* per step, sent over NVLink by one GPU */
    double pcie_bytes;      /* per step, host to GPU */
    double tokens;          /* tokens per step, the whole job */
};

struct gpu {
    double leak_mult, v_mult, cap_w, energy_j;
};

struct pflex_sim_job {
    struct pflex_job_desc d;
    const struct pflex_gpu_kind *k;
    uint64_t seed, draws;
    int n;
    struct gpu *g;
    struct step s;
    double leak_w, dyn_w, mem_w_per_gbs;
    /* Scratch of the last evaluation: per-GPU power and telemetry. */
    double *power_w, *tm;
};

/* --- randomness: splitmix64, Box-Muller ---------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static double unif(uint64_t a, uint64_t b)
{
    return ((mix64(a ^ mix64(b)) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* A standard normal fixed by (a, b). */
static double gauss(uint64_t a, uint64_t b)
{
    double u = unif(a, 2 * b), v = unif(a, 2 * b + 1);
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* --- the GPU: V-f curve, phase power, the power loop ---------------------- */

/* Voltage relative to Vmax at SM clock fraction r. */
static double volt(double r)
{
    if (r <= P.f_knee)
        return P.v_ratio;
    return P.v_ratio + (1 - P.v_ratio) * (r - P.f_knee) / (1 - P.f_knee);
}

/* Time of a compute phase at clock fraction r, and its compute-bound part. */
static double phase_time(const struct pflex_sim_job *j, const struct work *w, double r,
                         double *tcomp)
{
    double tc = w->flops > 0 ? w->flops / (j->k->bf16_tflops * 1e12 * w->eff * r) : 0;
    double tm = w->bytes / (j->k->mem_bw_gbs * 1e9 * P.eff_mem);
    if (r < P.r_sat)
        tm *= P.r_sat / r;
    if (tcomp)
        *tcomp = tc;
    return tc > tm ? tc : tm;
}

/* Board power of a GPU running work w (NULL: communication or idle with
 * activity act) at clock fraction r. */
static double phase_power(const struct pflex_sim_job *j, const struct gpu *g,
                          const struct work *w, double act, double r)
{
    double v = volt(r) * g->v_mult, mem = 0;
    if (w) {
        double tc, t = phase_time(j, w, r, &tc);
        if (t <= 0)
            return j->k->idle_w;
        act = P.a_mem + (w->act - P.a_mem) * (tc / t);
        mem = j->mem_w_per_gbs * w->bytes / t / 1e9;
    }
    return j->k->idle_w + j->leak_w * g->leak_mult * v * v + j->dyn_w * act * r * v * v + mem;
}

/* The power loop: the highest clock (below the lowest clock, hardware
 * slowdown) whose power fits under the cap. */
static double loop_clock(const struct pflex_sim_job *j, const struct gpu *g,
                         const struct work *w, double act)
{
    double limit = g->cap_w * (1 - P.guard);
    if (phase_power(j, g, w, act, 1.0) <= limit)
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

static double ring_bw(const struct pflex_sim_job *j, int n, int per_node)
{
    const struct pflex_gpu_kind *k = j->k;
    double intra = (k->nvlink_gbs > 0 ? k->nvlink_gbs : k->pcie_gbs) * 1e9;
    if (n <= 1)
        return INFINITY;
    if (per_node >= n)
        return intra * P.eff_link;
    double inter = k->net_gbs * 1e9 * (per_node > 0 ? per_node : 1);
    return (inter < intra ? inter : intra) * P.eff_link;
}

static double ring_lat(int n, double count)
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
static struct work gemm_work(double flops, double bytes, double width_factor, double rows)
{
    double rel = width_factor * rows / (rows + P.gemm_m0);
    double eff = P.eff_gemm * rel;
    if (eff < 0.01)
        eff = 0.01;
    return (struct work){flops, bytes, eff, P.a_mem + (P.a_gemm - P.a_mem) * rel};
}

static void build_step(struct pflex_sim_job *j)
{
    const struct pflex_job_desc *d = &j->d;
    const struct pflex_gpu_kind *k = j->k;
    struct step *s = &j->s;
    memset(s, 0, sizeof *s);
    int gpn = k->gpus_per_node > 0 ? k->gpus_per_node : 8;
    double h = d->hidden, L = d->layers, tp = d->tp, pp = d->pp;
    double lloc = ceil(L / pp);
    double kv_dim = h * d->kv_heads / d->heads;
    /* Parameters: scale the shape to the stated count. */
    double shape_total = pflex_job_params_total_b(d), shape_active = pflex_job_params_active_b(d);
    double n_total = d->params_b * 1e9;
    double n_active = n_total * shape_active / shape_total;
    double n_embed_in = d->vocab * h * n_total / (shape_total * 1e9);  /* scaled like the rest */
    double n_gemm = n_active - n_embed_in;          /* GEMM weights a token passes */
    double n_loc = n_total / (tp * pp);             /* weights held per GPU (unsharded) */
    double n_gemm_loc = n_gemm / (tp * pp);
    double eff_w = (h / tp) / (h / tp + P.gemm_h0);      /* width factor of GEMM efficiency */
    double bpe = 2;                                 /* bf16 */
    double act_bytes = P.act_bytes * (d->eager ? P.eager_mult : 1);

    if (d->kind == PFLEX_JOB_INFERENCE) {
        double B = d->micro_batch, sl = d->seq_len, gen = d->gen_len;
        double tok = B * sl;
        s->micro = 1;
        s->ph[PH_GEMM] = gemm_work(2 * n_gemm_loc * tok, n_loc * bpe + tok * lloc * h / tp * bpe * 8,
                                   eff_w, tok);
        s->ph[PH_ATTN] = (struct work){2 * sl * h * lloc / tp * tok, tok * lloc * 4 * h / tp * bpe,
                                       P.eff_attn, P.a_attn};
        s->ph[PH_MEM] = (struct work){0, tok * lloc * h / tp * act_bytes
                                      + tok / pp * d->vocab / tp * 4.0 / sl, 0, P.a_mem};
        /* One decode iteration: all weights (MoE: the experts the batch
         * touches), the KV cache of the batch, a GEMV/GEMM of B rows. */
        double ctx = sl + gen / 2;
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
        s->ph[PH_OPT] = gemm_work(2 * n_gemm_loc * B + 4 * ctx * h * lloc / tp * B,
                                  n_loc * touched * bpe + B * ctx * lloc * 2 * kv_dim / tp * bpe
                                  + B * lloc * h / tp * act_bytes, eff_w, B);
        double tp_bw = ring_bw(j, d->tp, imin(d->tp, gpn));
        double tp_count = 2 * lloc;
        s->tp_s = d->tp > 1 ? 2 * (tp - 1) / tp * tok * h * bpe * tp_count / tp_bw
                              + ring_lat(d->tp, tp_count) : 0;
        /* Per decode iteration: TP all-reduces of B rows, host scheduling. */
        s->launch_s = gen * ((d->tp > 1 ? 2 * (tp - 1) / tp * B * h * bpe * tp_count / tp_bw
                              + ring_lat(d->tp, tp_count) : 0) + P.host_iter_s);
        s->pp_s = d->pp > 1 ? (1 + gen) * B * h * bpe / ring_bw(j, 2, 1) : 0;
        s->host_s = P.host_step_s;
        s->nvlink_bytes = d->tp > 1 ? 2 * (tp - 1) / tp * (tok + B * gen) * h * bpe * tp_count : 0;
        s->pcie_bytes = tok * 4 + B * gen * 8;
        s->tokens = B * gen * d->dp;
        return;
    }

    int lora = d->kind == PFLEX_JOB_FINETUNE_LORA;
    double tok = (double)d->micro_batch * d->seq_len;
    s->micro = ceil((double)d->global_batch / ((double)d->micro_batch * d->dp));
    /* FLOPs per weight per token: forward 2, backward 4 (LoRA: 2, no
     * weight gradients); recomputation adds a forward. */
    double cg = (lora ? 4 : 6) + (d->act_ckpt ? 2 : 0);
    double passes = 3 + (d->act_ckpt ? 1 : 0);      /* forward-equivalents of elementwise work */
    s->ph[PH_GEMM] = gemm_work(cg * n_gemm_loc * tok,
                               cg / 2 * n_gemm_loc * bpe + tok * lloc * h / tp * bpe * 8 * passes,
                               eff_w, tok);
    s->ph[PH_ATTN] = (struct work){passes * 2 * d->seq_len * h * lloc / tp * tok,
                                   passes * tok * lloc * 4 * h / tp * bpe, P.eff_attn, P.a_attn};
    double trainable = lora ? L * P.lora_rank * (4 * h + 2 * kv_dim + 2 * h + 3 * (h + d->ffn_hidden))
                            : n_total;
    double train_loc = trainable / (tp * pp);
    double mem = tok * lloc * h / tp * act_bytes * passes
                 + tok / pp * d->vocab / tp * 4.0 * 3    /* fp32 logits, softmax, loss */
                 + train_loc * bpe * 2;                   /* gradient accumulation */
    if (d->experts > 0)
        mem += tok * lloc * d->top_k * h * bpe * 4 * passes;  /* routing, permutation */
    s->ph[PH_MEM] = (struct work){0, mem, 0, P.a_mem};
    /* Adam over the local trainable shard: read param, grad, m, v; write
     * param, m, v and the bf16 copy. */
    double opt_loc = train_loc / (d->zero >= 1 ? d->dp : 1);
    s->ph[PH_OPT] = (struct work){0, opt_loc * 30, 0, P.a_mem};

    /* Tensor parallel: 2 all-reduces (or reduce-scatter + all-gather) per
     * layer and pass, on the critical path. */
    double tp_count = 2 * lloc * (2 + (d->act_ckpt ? 1 : 0));
    double tp_bw = ring_bw(j, d->tp, imin(d->tp, gpn));
    double tp_bytes = d->tp > 1 ? 2 * (tp - 1) / tp * tok * h * bpe * tp_count : 0;
    s->tp_s = d->tp > 1 ? tp_bytes / tp_bw + ring_lat(d->tp, tp_count) : 0;
    /* Data parallel over dp ranks with stride tp; as many per node as fit. */
    int dp_per_node = imin(d->dp, gpn / d->tp > 0 ? gpn / d->tp : 1);
    double dp_bw = ring_bw(j, d->dp, dp_per_node), n = d->dp;
    double dp_bytes = 0;
    if (d->dp > 1) {
        if (d->zero == 3) {
            double v = 3 * (n - 1) / n * n_loc * bpe;
            if (lora)       /* frozen weights still gathered twice; adapters reduced */
                v = 2 * (n - 1) / n * n_loc * bpe + (n - 1) / n * train_loc * bpe;
            s->fsdp_s = v / dp_bw + ring_lat(d->dp, 3 * lloc);
            dp_bytes = v * s->micro;
        } else {
            double v = 2 * (n - 1) / n * train_loc * bpe;
            s->dp_s = v / dp_bw + ring_lat(d->dp, ceil(train_loc * bpe / 25e6) + 1);
            dp_bytes = v;
        }
    }
    /* MoE all-to-all: dispatch and combine per layer and pass. */
    if (d->experts > 0 && d->ep > 1) {
        double ep = d->ep, count = 2 * lloc * (2 + (d->act_ckpt ? 1 : 0));
        int in_node = d->ep * d->tp <= gpn;
        double bw = (in_node ? ring_bw(j, 2, 2) / P.eff_link
                             : k->net_gbs * 1e9) * P.eff_a2a;
        double v = count * (ep - 1) / ep * tok * d->top_k * h * bpe / tp;
        s->moe_s = v / bw + count * P.coll_lat_s * (in_node ? 1 : 4);
        if (in_node)
            s->nvlink_bytes += v * s->micro;
    }
    if (d->pp > 1)
        s->pp_s = 2 * tok * h * bpe / tp / ring_bw(j, 2, gpn >= 2 ? 1 : 1);
    s->bubble_micro = pp - 1;
    s->launch_s = lloc * P.kernels_per_layer * passes * P.launch_s;
    s->host_s = P.host_step_s;
    int dp_in_node = d->dp * d->tp <= gpn;
    s->nvlink_bytes += s->micro * tp_bytes + (dp_in_node ? dp_bytes : dp_bytes * (gpn > d->tp ? 0.5 : 0));
    s->pcie_bytes = s->micro * tok * 8;
    s->tokens = (double)d->global_batch * d->seq_len;
    /* The global batch is rounded up to whole micro-steps on every rank. */
    s->tokens = s->micro * d->micro_batch * d->dp * (double)d->seq_len;
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
static double interleaved_comm_s(const struct step *s)
{
    return s->tp_s + s->moe_s * (1 - P.eta_moe);
}

/* Time-averaged power of the interleaved kernels of one micro-step (GEMMs,
 * attention, memory-bound kernels, and the NCCL kernels of the interleaved
 * communication) all at clock fraction r. */
static double micro_power(const struct pflex_sim_job *j, const struct gpu *g,
                          const struct work *w, double r)
{
    double t = interleaved_comm_s(&j->s), e = t * phase_power(j, g, NULL, P.a_comm, r);
    for (int p = PH_GEMM; p <= PH_MEM; p++) {
        if (w[p].flops <= 0 && w[p].bytes <= 0)
            continue;
        double tp = phase_time(j, &w[p], r, NULL);
        t += tp;
        e += tp * phase_power(j, g, &w[p], 0, r);
    }
    return t > 0 ? e / t : j->k->idle_w;
}

/* The power loop over a micro-step: its kernels alternate layer by layer
 * every few hundred microseconds, far faster than the loop reacts (the
 * board's power sensor is read every few tens of milliseconds), so the
 * loop holds their time-averaged power under the cap with one clock. */
static double micro_clock(const struct pflex_sim_job *j, const struct gpu *g,
                          const struct work *w)
{
    double limit = g->cap_w * (1 - P.guard);
    if (micro_power(j, g, w, 1.0) <= limit)
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
static double exposed(double c, double h)
{
    if (c <= 0)
        return 0;
    double d = c - h, w = P.ovl_width * c, e = 0.5 * (d + sqrt(d * d + w * w));
    return e < c ? e : c;
}

/* Telemetry weights per phase type: sm_active, sm_occupancy. */
static const double sm_act[] = {0.98, 0.95, 0.90, 0.90}, sm_occ[] = {0.22, 0.30, 0.55, 0.55};

/* One synchronous group of GPUs [lo, hi) (the whole job for training, one
 * replica for inference): its step time at the pace of its slowest GPU,
 * and each GPU's power and telemetry into the scratch arrays. */
static double eval_group(struct pflex_sim_job *j, const struct ph_run *runs, int lo, int hi)
{
    const struct step *s = &j->s;
    double tm_slow = 0, topt_slow = 0;
    int decode = s->decode;
    double iters = decode ? s->decode_iters : 1;
    for (int i = lo; i < hi; i++) {
        const struct ph_run *r = runs + (size_t)i * PH_NCOMPUTE;
        double tmicro = r[PH_GEMM].t + r[PH_ATTN].t + r[PH_MEM].t;
        double topt = r[PH_OPT].t * iters;
        if (tmicro > tm_slow)
            tm_slow = tmicro;
        if (topt > topt_slow)
            topt_slow = topt;
    }
    double m = s->micro;
    /* Exposed communication, with the compute time of the slowest GPU. */
    double fsdp_exp = exposed(s->fsdp_s, P.eta_dp * tm_slow);
    double dp_exp = exposed(s->dp_s, P.eta_dp * (2.0 / 3.0) * tm_slow);
    double moe_exp = s->moe_s * (1 - P.eta_moe);
    double comm_micro = s->tp_s + moe_exp + fsdp_exp + s->pp_s;
    double comm_int = m * interleaved_comm_s(s);    /* under the micro-step's clock */
    double launch_exp = decode ? s->launch_s : s->launch_s - tm_slow;
    if (launch_exp < 0)
        launch_exp = 0;
    double comm = m * comm_micro + dp_exp;
    double bubble = s->bubble_micro * (tm_slow + comm_micro);
    double host = s->host_s + m * launch_exp;
    double step = m * tm_slow + topt_slow + comm + bubble + host;
    const struct pflex_gpu_kind *k = j->k;
    for (int i = lo; i < hi; i++) {
        const struct gpu *g = &j->g[i];
        const struct ph_run *r = runs + (size_t)i * PH_NCOMPUTE;
        double rc = loop_clock(j, g, NULL, P.a_comm), ri = loop_clock(j, g, NULL, P.a_idle);
        double pc = phase_power(j, g, NULL, P.a_comm, rc), pi = phase_power(j, g, NULL, P.a_idle, ri);
        double rm = r[PH_GEMM].r, pm = phase_power(j, g, NULL, P.a_comm, rm);
        double busy = m * (r[PH_GEMM].t + r[PH_ATTN].t + r[PH_MEM].t) + r[PH_OPT].t * iters;
        double wait = step - busy - comm;
        double e = m * (r[PH_GEMM].t * r[PH_GEMM].p + r[PH_ATTN].t * r[PH_ATTN].p
                        + r[PH_MEM].t * r[PH_MEM].p)
                   + iters * r[PH_OPT].t * r[PH_OPT].p + (comm - comm_int) * pc + comm_int * pm
                   + wait * pi;
        j->power_w[i] = e / step;
        double *tm = j->tm + (size_t)i * PFLEX_TM_COUNT;
        double clk = 0, act = 0, occ = 0, tens = 0, bytes = 0;
        for (int p = 0; p < PH_NCOMPUTE; p++) {
            double reps = p == PH_OPT ? iters : m, t = reps * r[p].t;
            clk += t * r[p].r;
            act += t * sm_act[p];
            occ += t * sm_occ[p];
            tens += reps * s->ph[p].flops / (k->bf16_tflops * 1e12 * r[p].r);
            bytes += reps * s->ph[p].bytes;
        }
        clk += (comm - comm_int) * rc + comm_int * rm + wait * ri;
        act += comm * 0.15;
        occ += comm * 0.05;
        tm[PFLEX_TM_SM_CLOCK_MHZ] = clk / step * k->sm_clock_max_mhz;
        tm[PFLEX_TM_MEM_CLOCK_MHZ] = k->mem_clock_mhz;
        tm[PFLEX_TM_GPU_UTIL] = 100 * (busy + comm) / step;
        tm[PFLEX_TM_GR_ENGINE_ACTIVE] = (busy + comm) / step;
        tm[PFLEX_TM_SM_ACTIVE] = act / step;
        tm[PFLEX_TM_SM_OCCUPANCY] = occ / step;
        tm[PFLEX_TM_TENSOR_ACTIVE] = tens / step;
        tm[PFLEX_TM_DRAM_ACTIVE] = bytes / (k->mem_bw_gbs * 1e9 * step);
        tm[PFLEX_TM_MEM_COPY_UTIL] = fmin(100, 100 * tm[PFLEX_TM_DRAM_ACTIVE] * 1.1);
        tm[PFLEX_TM_PCIE_RX_BYTES] = s->pcie_bytes / step;
        tm[PFLEX_TM_PCIE_TX_BYTES] = s->pcie_bytes / step * 0.05;
        tm[PFLEX_TM_NVLINK_TX_BYTES] = s->nvlink_bytes / step;
        tm[PFLEX_TM_NVLINK_RX_BYTES] = s->nvlink_bytes / step;
    }
    return step;
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
    for (int i = 0; i < j->n; i++)
        run_phases(j, &j->g[i], s->ph, runs + (size_t)i * PH_NCOMPUTE);
    /* Inference replicas run independently; a training job is one group. */
    int size = s->decode ? j->d.tp * j->d.pp : j->n;
    int groups = j->n / size;
    double rate = 0, steps = 0;
    for (int gi = 0; gi < groups; gi++) {
        double step = eval_group(j, runs, gi * size, (gi + 1) * size);
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
            out->tm[f] += j->tm[(size_t)i * PFLEX_TM_COUNT + f];
    }
    out->cap_w = caps / j->n;
    out->power_w = pw / j->n;
    for (int f = 0; f < PFLEX_TM_COUNT; f++)
        out->tm[f] /= j->n;
    out->step_s = step;
    out->throughput = rate;
    if (noisy) {
        uint64_t draw = j->draws++, base = mix64(j->seed ^ 0x6e6f697365ULL) ^ mix64(draw);
        out->power_w *= 1 + P.noise_power * gauss(base, 1);
        out->throughput *= 1 + P.noise_tput * gauss(base, 2);
        out->step_s = j->s.tokens / out->throughput;
        for (int f = 0; f < PFLEX_TM_COUNT; f++)
            if (f != PFLEX_TM_MEM_CLOCK_MHZ) {
                out->tm[f] *= 1 + P.noise_tm * gauss(base, 10 + (uint64_t)f);
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

int pflex_sim_job_breakdown(pflex_sim_job_t *j, double cap_w, struct pflex_sim_breakdown *out,
                            pflex_error_t *err)
{
    if (!j || !out)
        return pflex_error_set(err, "sim: no job");
    set_caps(j, cap_w > 0 ? cap_w : j->k->max_cap_w);
    const struct step *s = &j->s;
    double ts[PH_NCOMPUTE] = {0};
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
    double step;
    evaluate(j, &step);
    double m = s->micro, iters = s->decode ? s->decode_iters : 1;
    double tmicro = ts[PH_GEMM] + ts[PH_ATTN] + ts[PH_MEM];
    memset(out, 0, sizeof *out);
    out->step_s = step;
    out->gemm = m * ts[PH_GEMM] / step;
    out->attention = m * ts[PH_ATTN] / step;
    out->memory = m * ts[PH_MEM] / step;
    out->optimizer = iters * ts[PH_OPT] / step;
    out->bubble = s->bubble_micro * tmicro / step;
    double host = s->host_s + m * (s->decode ? s->launch_s : fmax(0, s->launch_s - tmicro));
    out->host = host / step;
    out->comm_exposed = 1 - out->gemm - out->attention - out->memory - out->optimizer
                        - out->bubble - out->host;
    if (out->comm_exposed < 0)
        out->comm_exposed = 0;
    out->comm_total_s = m * (s->tp_s + s->moe_s + s->fsdp_s + s->pp_s) + s->dp_s;
    return 0;
}

/* --- life cycle ----------------------------------------------------------- */

int pflex_sim_job_create(const struct pflex_job_desc *d, uint64_t seed,
                         pflex_sim_job_t **out, pflex_error_t *err)
{
    struct pflex_job_desc r = *d;
    if (pflex_job_desc_resolve(&r, err) < 0)
        return -1;
    pflex_sim_job_t *j = calloc(1, sizeof *j);
    if (!j)
        return pflex_error_set(err, "out of memory");
    j->d = r;
    j->k = pflex_gpu_kind_find(r.gpu);
    j->seed = seed;
    j->n = r.gpus;
    j->g = calloc((size_t)j->n, sizeof *j->g);
    j->power_w = calloc((size_t)j->n, sizeof *j->power_w);
    j->tm = calloc((size_t)j->n * PFLEX_TM_COUNT, sizeof *j->tm);
    if (!j->g || !j->power_w || !j->tm) {
        pflex_sim_job_destroy(j);
        return pflex_error_set(err, "out of memory");
    }
    const struct pflex_gpu_kind *k = j->k;
    j->leak_w = P.leak_frac * k->max_cap_w;
    j->dyn_w = P.dyn_frac * (k->max_cap_w - k->idle_w - j->leak_w);
    j->mem_w_per_gbs = k->mem_pj_per_bit * 8e-12 * 1e9;    /* W per GB/s */
    uint64_t sil = mix64(seed ^ 0x73696c69636f6eULL);
    for (int i = 0; i < j->n; i++) {
        j->g[i].leak_mult = fmax(0.5, 1 + P.sigma_leak * gauss(sil, 2 * (uint64_t)i));
        j->g[i].v_mult = 1 + P.sigma_v * gauss(sil, 2 * (uint64_t)i + 1);
        j->g[i].cap_w = k->default_cap_w;
    }
    build_step(j);
    *out = j;
    return 0;
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
    uint64_t base = mix64(j->seed ^ 0x73616d706c65ULL) ^ mix64(j->draws++);
    out->power_w = j->power_w[i] * (1 + P.noise_power * gauss(base, 1));
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
