/* fleet.c — the built-in fleets.
 *
 * The study fleet: the seed study's 35 sweep groups (PAPER.md sections 3-4)
 * with the public shapes of its seven models (models_table.c) and, where the
 * study leaves a field open (sequence length, batch, checkpointing of a
 * group), the choice written beside the group and in docs/study.md.
 *
 * The extended fleet: each (model, task, GPU count, parallel layout)
 * configuration of the table below on each GPU kind, three times, with
 * sequence length, micro batch, global batch and recomputation drawn from a
 * generator seeded by the entry's index alone.  The micro batch shrinks (and
 * recomputation turns on) until a coarse per-GPU memory estimate fits the
 * kind's memory.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
#include "pflex/sim/fleet.h"
#include "lib/sim/models_table.h"

struct model {
    const char *family;
    int moe;
    double params_b;            /* total parameters, billions */
    int layers, hidden, heads, kv_heads, ffn, vocab;
    int experts, top_k;         /* ffn is per expert for MoE */
};

/* Public shapes of the models each family imitates. */
static const struct model models[] = {
    {"llama1b", 0, 1.24, 16, 2048, 32, 8, 8192, 128256, 0, 0},
    {"llama3b", 0, 3.21, 28, 3072, 24, 8, 8192, 128256, 0, 0},
    {"llama8b", 0, 8.03, 32, 4096, 32, 8, 14336, 128256, 0, 0},
    {"llama13b", 0, 13.0, 40, 5120, 40, 40, 13824, 32000, 0, 0},
    {"llama34b", 0, 33.7, 48, 8192, 64, 8, 22016, 32000, 0, 0},
    {"llama70b", 0, 70.6, 80, 8192, 64, 8, 28672, 128256, 0, 0},
    {"olmoe7b", 1, 6.92, 16, 2048, 16, 16, 1024, 50304, 64, 8},
    {"qwenmoe14b", 1, 14.3, 24, 2048, 16, 16, 1408, 151936, 60, 4},
    {"dsmoe16b", 1, 16.4, 28, 2048, 16, 16, 1408, 102400, 64, 6},
    {"mixtral8x7b", 1, 46.7, 32, 4096, 32, 8, 14336, 32000, 8, 2},
};
enum { NMODELS = sizeof models / sizeof *models };

enum { PT = PFLEX_JOB_PRETRAIN, FT = PFLEX_JOB_FINETUNE_FULL, LORA = PFLEX_JOB_FINETUNE_LORA };

struct config {
    unsigned char model, kind, gpus, tp, pp, ep;    /* dp = gpus / (tp * pp) */
};

/* Layouts as a Megatron/DeepSpeed user would choose them: small models data
 * parallel, large ones tensor- and pipeline-parallel inside NVLink domains,
 * experts spread over the data-parallel ranks. */
static const struct config configs[] = {
    /* llama1b */
    {0, PT, 1, 1, 1, 1}, {0, PT, 2, 1, 1, 1}, {0, PT, 4, 1, 1, 1}, {0, PT, 8, 1, 1, 1},
    {0, PT, 16, 1, 1, 1}, {0, PT, 32, 1, 1, 1}, {0, FT, 1, 1, 1, 1}, {0, FT, 2, 1, 1, 1},
    {0, FT, 4, 1, 1, 1}, {0, FT, 8, 1, 1, 1}, {0, LORA, 1, 1, 1, 1}, {0, LORA, 2, 1, 1, 1},
    /* llama3b */
    {1, PT, 1, 1, 1, 1}, {1, PT, 2, 1, 1, 1}, {1, PT, 4, 1, 1, 1}, {1, PT, 8, 1, 1, 1},
    {1, PT, 16, 1, 1, 1}, {1, PT, 32, 1, 1, 1}, {1, FT, 1, 1, 1, 1}, {1, FT, 2, 1, 1, 1},
    {1, FT, 4, 1, 1, 1}, {1, FT, 8, 1, 1, 1}, {1, LORA, 1, 1, 1, 1}, {1, LORA, 2, 1, 1, 1},
    {1, LORA, 4, 1, 1, 1},
    /* llama8b */
    {2, PT, 2, 2, 1, 1}, {2, PT, 4, 1, 1, 1}, {2, PT, 8, 1, 1, 1}, {2, PT, 16, 1, 1, 1},
    {2, PT, 32, 2, 1, 1}, {2, FT, 2, 2, 1, 1}, {2, FT, 4, 2, 1, 1}, {2, FT, 8, 1, 1, 1},
    {2, LORA, 1, 1, 1, 1}, {2, LORA, 2, 1, 1, 1}, {2, LORA, 4, 1, 1, 1},
    /* llama13b */
    {3, PT, 8, 2, 1, 1}, {3, PT, 16, 2, 1, 1}, {3, PT, 32, 4, 1, 1}, {3, FT, 4, 2, 1, 1},
    {3, FT, 8, 2, 1, 1}, {3, FT, 16, 4, 1, 1}, {3, LORA, 1, 1, 1, 1}, {3, LORA, 2, 1, 1, 1},
    {3, LORA, 4, 2, 1, 1},
    /* llama34b */
    {4, PT, 16, 4, 2, 1}, {4, PT, 32, 4, 2, 1}, {4, FT, 8, 4, 2, 1}, {4, FT, 16, 4, 2, 1},
    {4, LORA, 2, 2, 1, 1}, {4, LORA, 4, 2, 1, 1}, {4, LORA, 8, 4, 1, 1},
    /* llama70b */
    {5, PT, 16, 8, 2, 1}, {5, PT, 32, 8, 2, 1}, {5, PT, 32, 8, 4, 1}, {5, FT, 16, 8, 2, 1},
    {5, FT, 32, 8, 4, 1}, {5, LORA, 4, 4, 1, 1}, {5, LORA, 8, 8, 1, 1}, {5, LORA, 16, 8, 1, 1},
    /* olmoe7b */
    {6, PT, 2, 1, 1, 2}, {6, PT, 4, 1, 1, 4}, {6, PT, 8, 1, 1, 8}, {6, PT, 16, 1, 1, 8},
    {6, PT, 32, 1, 1, 8}, {6, FT, 4, 1, 1, 4}, {6, FT, 8, 1, 1, 8}, {6, LORA, 1, 1, 1, 1},
    {6, LORA, 2, 1, 1, 2},
    /* qwenmoe14b */
    {7, PT, 8, 1, 1, 4}, {7, PT, 16, 1, 1, 4}, {7, PT, 32, 1, 1, 4}, {7, FT, 4, 1, 1, 4},
    {7, FT, 8, 1, 1, 4}, {7, LORA, 1, 1, 1, 1}, {7, LORA, 2, 1, 1, 2},
    /* dsmoe16b */
    {8, PT, 8, 1, 1, 8}, {8, PT, 16, 1, 1, 8}, {8, PT, 32, 1, 1, 16}, {8, FT, 8, 1, 1, 8},
    {8, FT, 16, 1, 1, 8}, {8, LORA, 2, 1, 1, 2}, {8, LORA, 4, 1, 1, 4},
    /* mixtral8x7b */
    {9, PT, 16, 2, 1, 8}, {9, PT, 32, 2, 1, 8}, {9, PT, 32, 4, 1, 8}, {9, FT, 8, 2, 1, 4},
    {9, FT, 16, 2, 1, 8}, {9, LORA, 4, 2, 1, 2}, {9, LORA, 8, 2, 1, 4},
};
enum { NCONFIGS = sizeof configs / sizeof *configs };

#define MEM_USABLE 0.85         /* allocator slack, fragmentation, NCCL buffers */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int pick(uint64_t *s, const int *v, int n)
{
    return v[splitmix64(s) % (uint64_t)n];
}

/* Coarse per-GPU memory in GB: weights, gradients and a distributed Adam
 * state (16 bytes per trained parameter), activations (34 bytes per token per
 * hidden unit per layer, 2 with recomputation; Korthikanti et al. 2022 with
 * flash attention), logits, and a fixed runtime overhead.  Only used to keep
 * the catalogue within what fits; the simulator models speed, not memory. */
static double mem_gb(const struct model *m, const struct config *c, int seq, int mb, int ckpt,
                     int full_shard)
{
    int dp = c->gpus / (c->tp * c->pp);
    double p = m->params_b * 1e9, expert = 0;
    if (m->moe)
        expert = (double)m->layers * m->experts * 3.0 * m->hidden * m->ffn;
    if (expert > 0.95 * p)
        expert = 0.95 * p;
    double p_gpu = (p - expert) / (c->tp * c->pp) + expert / (c->tp * c->pp * c->ep);
    double state = c->kind == LORA ? p_gpu * 2.0 + 0.02 * p_gpu * 16.0
                   : full_shard    ? p_gpu * 16.0 / dp      /* FSDP shards weights and grads too */
                                   : p_gpu * 4.0 + p_gpu * 12.0 / dp;
    double tokens = (double)seq * mb;
    double per_layer = tokens * m->hidden / c->tp;
    double act = ckpt ? m->layers * per_layer * 2.0 + per_layer * 34.0
                      : m->layers * per_layer * 34.0;
    if (c->kind == LORA)
        act *= 0.8;             /* no weight-gradient buffers for frozen layers */
    double logits = tokens * m->vocab * 4.0 / c->tp;
    return (state + act + logits) / 1e9 + 3.0;
}

static const char *kind_code(int kind)
{
    return kind == PT ? "pt" : kind == FT ? "ft" : "lora";
}

static const char *task_name(int kind)
{
    return kind == PT ? "pretrain" : kind == FT ? "finetune" : "lora";
}

/* Build the H200 run with configuration index ci from the generator state. */
static void build(int ci, uint64_t rng, const char *suffix, const struct pflex_gpu_kind *kind,
                  struct pflex_fleet_run *r)
{
    const double mem_cap = kind->mem_gb;
    static const int seq_pt[] = {2048, 4096, 4096, 8192, 1024, 2048};
    static const int seq_ft[] = {512, 1024, 2048, 2048, 4096, 8192};
    static const int mbs[] = {1, 2, 2, 4, 4, 8};
    static const int tokens_pt_k[] = {512, 1024, 1024, 2048, 4096};
    static const int gb_ft[] = {32, 64, 64, 128, 256};
    const struct config *c = &configs[ci];
    const struct model *m = &models[c->model];
    int seq = c->kind == PT ? pick(&rng, seq_pt, 6) : pick(&rng, seq_ft, 6);
    int mb_pref = pick(&rng, mbs, 6);
    int dp = c->gpus / (c->tp * c->pp);
    while (mb_pref > 1 && mb_pref * seq > 32768)
        mb_pref /= 2;
    /* Large models are pretrained with recomputation as a matter of course. */
    int mb = mb_pref, ckpt = c->kind == PT && m->params_b >= 30;
    for (;;) {
        for (mb = mb_pref; mb > 1 && mem_gb(m, c, seq, mb, ckpt, 0) > MEM_USABLE * mem_cap; mb /= 2)
            ;
        if (mem_gb(m, c, seq, mb, ckpt, 0) <= MEM_USABLE * mem_cap)
            break;
        if (!ckpt)
            ckpt = 1;
        else if (seq > 512)
            seq /= 2;
        else
            break;              /* the table never gets here (tests check fit) */
    }
    int per_step = mb * dp, accum;
    if (c->kind == PT)
        accum = (int)((double)pick(&rng, tokens_pt_k, 5) * 1024.0 / seq / per_step + 0.5);
    else
        accum = (int)((double)pick(&rng, gb_ft, 5) / per_step + 0.5);
    if (accum < 1)
        accum = 1;
    if (c->pp > 1 && accum < 4 * c->pp)
        accum = 4 * c->pp;      /* keep the pipeline bubble reasonable */
    if (accum > 64)
        accum = 64;
    /* Fine-tuning is mostly run with Hugging Face Transformers / PEFT
     * (Trainer, TRL, Accelerate) as is: unfused eager elementwise kernels
     * and, across GPUs, FSDP full sharding, like the measured Emerald
     * fine-tunes.  It has no Megatron-style tensor or pipeline parallelism,
     * so layouts with tp or pp > 1 are Megatron/NeMo runs with fused
     * kernels; so is every pretraining run.  A quarter of the fine-tunes
     * that could run on Transformers use a fused stack instead (Liger
     * kernels, torchtune, NeMo).  Drawn last, so that the
     * settings drawn before are those of the run without it. */
    int hf = c->kind != PT && c->tp == 1 && c->pp == 1 && splitmix64(&rng) % 4 != 0;

    memset(r, 0, sizeof *r);
    struct pflex_job_desc *d = &r->desc;
    snprintf(d->gpu, sizeof d->gpu, "%s", kind->name);
    d->gpus = c->gpus;
    d->params_b = m->params_b;
    d->layers = m->layers;
    d->hidden = m->hidden;
    d->heads = m->heads;
    d->ffn_hidden = m->ffn;
    d->vocab = m->vocab;
    d->seq_len = seq;
    d->micro_batch = mb;
    d->global_batch = per_step * accum;
    d->experts = m->experts;
    d->top_k = m->top_k;
    d->kind = (enum pflex_job_kind)c->kind;
    d->dp = dp;
    d->tp = c->tp;
    d->pp = c->pp;
    d->ep = c->ep;
    d->act_ckpt = ckpt;
    d->kv_heads = m->kv_heads;
    /* Full training shards the Adam state over the data-parallel ranks
     * (Megatron's distributed optimizer), as the memory estimate assumes. */
    d->zero = c->kind != LORA && dp > 1;
    d->eager = hf;
    if (hf) {
        d->ep = 1;              /* Transformers has no expert parallelism either */
        d->moe_loop = m->moe;
        if (c->kind == FT && dp > 1)
            d->zero = 3;
    }
    if (kind->bf16_tflops <= 0)
        d->precision = PFLEX_PREC_FP16;     /* no bf16 tensor path (V100) */
    char kn[16];
    size_t kl = 0;
    for (const char *q = kind->name; *q && *q != '-' && kl + 1 < sizeof kn; q++)
        kn[kl++] = (char)(*q >= 'A' && *q <= 'Z' ? *q - 'A' + 'a' : *q);
    kn[kl] = '\0';
    snprintf(d->name, sizeof d->name, "%s-%s-%s-%s%s-%dg-s%d-mb%d-%s", kn,
             m->moe ? "moe" : "dense", m->family, kind_code(c->kind), hf ? "-hf" : "", c->gpus,
             seq, mb, suffix);
    r->split = PFLEX_FLEET_MAIN;
    r->set = "extended";
    r->label = d->name;
    r->model = m->family;
    r->compile = !hf;
    r->measured_pfi = NAN;
    /* Six caps over the kind's settable range, 10 W apart at least. */
    r->ncaps = 6;
    for (int q = 0; q < 6; q++)
        r->caps_w[q] = round((kind->min_cap_w + q * (kind->max_cap_w - kind->min_cap_w) / 5) / 10) * 10;
    r->family = m->family;
    r->arch = m->moe ? "moe" : "dense";
    r->task = task_name(c->kind);
    r->is_moe = m->moe;
    r->is_finetune = c->kind != PT;
    r->gpus = c->gpus;
    r->match = -1;
    struct config run = *c;     /* as run: no expert parallelism on Transformers */
    if (hf)
        run.ep = 1;
    r->mem_gb = mem_gb(m, &run, seq, mb, ckpt, d->zero == 3);
}

/* --- the extended fleet ------------------------------------------------- */

static const char *const ext_kinds[] = {
    "H200-SXM-141GB", "H100-SXM5-80GB", "B200-SXM-180GB", "A100-SXM4-80GB", "A100-SXM4-40GB",
    "A100-PCIE-80GB", "A40", "L40S", "V100-SXM2-32GB",
};
enum { NEXT_KINDS = sizeof ext_kinds / sizeof *ext_kinds, EXT_DRAWS = 3 };

static int extended_run(size_t i, struct pflex_fleet_run *r)
{
    if (i >= (size_t)NEXT_KINDS * NCONFIGS * EXT_DRAWS)
        return -1;
    const struct pflex_gpu_kind *kind = pflex_gpu_kind_find(ext_kinds[i / (NCONFIGS * EXT_DRAWS)]);
    size_t k = i % ((size_t)NCONFIGS * EXT_DRAWS);
    char suffix[16];
    snprintf(suffix, sizeof suffix, "x%04zu", i + 1);
    /* 37 is prime to NCONFIGS: consecutive entries visit different
     * configurations. */
    build((int)((k * 37) % NCONFIGS), 0x50f1e3c0de000000ULL + (uint64_t)i, suffix, kind, r);
    return 0;
}

/* --- the study fleet ---------------------------------------------------- */

enum grid { G6, G4, G3, G4H };
static const double grids[][6] = {
    {200, 300, 400, 500, 600, 700},     /* 8-GPU groups */
    {200, 500, 600, 700},               /* 16- and 32-GPU groups */
    {200, 600, 700},                    /* the 16-GPU group with 3 runs (500 W: not run) */
    {300, 400, 600, 700},               /* the H100 group with 4 runs (500, 200 W failed) */
};
static const size_t grid_n[] = {6, 4, 3, 4};

/* One sweep group of the study.  seq and batch (per GPU, one micro-step per
 * optimizer step), ep, compile and checkpointing: PAPER.md Table 1's
 * ranges; where the headline table leaves a field unsaid, the value here is
 * the project's choice (docs/study.md, "The study fleet").  The gpt-oss-20b
 * LoRA groups recompute: Transformers runs their attention eagerly (sinks),
 * and the softmax probabilities autograd keeps for the backward are
 * 8 x 64 heads x seq x (seq + 1) x 2 bytes a layer, 17 GB at seq 4096 and
 * 4.3 GB at 2048, 412 and 103 GB for the 24 layers: with the other
 * activations, past the H200's 141 GB unless each layer is recomputed
 * (test_eager_scores_fit). */
struct group {
    const char *label;
    const char *model;          /* Hugging Face name, a row of models_table.c */
    unsigned char task, gpus, ep, compile, ckpt, grid;
    short seq, batch;
    double pfi;                 /* measured (Table 6), NaN: not published */
    signed char match;          /* H100: the headline group it mirrors */
};

#define GPTOSS "openai/gpt-oss-20b"
#define QWEN30 "Qwen/Qwen3-30B-A3B"
#define QWEN32 "Qwen/Qwen3-32B"
#define LLAMA70 "meta-llama/Llama-3.1-70B"
#define DSV2 "deepseek-ai/DeepSeek-V2-Lite"
#define MISTRAL "mistralai/Mistral-Small-24B-Base-2501"
#define GEMMA "google/gemma-4-26B-A4B"

static const struct group headline[] = {
    {"Dense LoRA 16 x Llama-3.1-70B", LLAMA70, LORA, 16, 1, 1, 1, G3, 2048, 16, 1.10, -1},
    {"Dense LoRA 8 x Llama-3.1-70B, no compile", LLAMA70, LORA, 8, 1, 0, 1, G6, 4096, 2, 1.22, -1},
    {"Dense LoRA 8 x Llama-3.1-70B, compile", LLAMA70, LORA, 8, 1, 1, 1, G6, 4096, 2, 1.27, -1},
    {"Dense LoRA 16 x Qwen3-32B", QWEN32, LORA, 16, 1, 1, 1, G4, 4096, 8, 1.52, -1},
    {"Dense PT 8 x Llama-3.1-70B, compile", LLAMA70, PT, 8, 1, 1, 1, G6, 4096, 2, 1.17, -1},
    {"Dense PT 32 x Qwen3-32B, seq 4096, batch 8", QWEN32, PT, 32, 1, 1, 1, G4, 4096, 8, 1.23, -1},
    {"Dense PT 32 x Qwen3-32B, seq 4096, batch 4", QWEN32, PT, 32, 1, 1, 1, G4, 4096, 4, 1.25, -1},
    {"Dense PT 8 x Llama-3.1-70B, no compile", LLAMA70, PT, 8, 1, 0, 1, G6, 4096, 2, 1.26, -1},
    {"Dense PT 32 x Qwen3-32B, seq 8192, batch 8", QWEN32, PT, 32, 1, 1, 1, G4, 8192, 8, 1.27, -1},
    {"Dense PT 8 x Qwen3-32B, no compile", QWEN32, PT, 8, 1, 0, 1, G6, 4096, 4, 1.30, -1},
    {"Dense PT 32 x Qwen3-32B, seq 8192, batch 4", QWEN32, PT, 32, 1, 1, 1, G4, 8192, 4, 1.30, -1},
    {"Dense PT 16 x Llama-3.1-70B", LLAMA70, PT, 16, 1, 1, 1, G4, 4096, 2, 1.34, -1},
    {"Dense PT 16 x Qwen3-32B", QWEN32, PT, 16, 1, 1, 1, G4, 4096, 8, 1.47, -1},
    {"Dense PT 8 x Qwen3-32B, compile", QWEN32, PT, 8, 1, 1, 1, G6, 4096, 4, 1.51, -1},
    {"MoE LoRA 8 x gpt-oss-20b, seq 2048, batch 8", GPTOSS, LORA, 8, 1, 1, 1, G6, 2048, 8, 1.79, -1},
    {"MoE LoRA 8 x Qwen3-30B-A3B", QWEN30, LORA, 8, 1, 1, 1, G6, 4096, 16, 2.00, -1},
    {"MoE LoRA 16 x Qwen3-30B-A3B", QWEN30, LORA, 16, 1, 1, 1, G4, 4096, 16, 2.20, -1},
    {"MoE LoRA 8 x gpt-oss-20b, seq 4096, batch 8", GPTOSS, LORA, 8, 1, 1, 1, G6, 4096, 8, 2.67, -1},
    {"MoE PT 8 x gpt-oss-20b, EP 1, no compile", GPTOSS, PT, 8, 1, 0, 1, G6, 4096, 2, 1.24, -1},
    {"MoE PT 8 x gpt-oss-20b, EP 1, compile", GPTOSS, PT, 8, 1, 1, 1, G6, 4096, 2, 1.35, -1},
    {"MoE PT 8 x Qwen3-30B-A3B, EP 1", QWEN30, PT, 8, 1, 1, 0, G6, 4096, 2, 1.36, -1},
    {"MoE PT 8 x gpt-oss-20b, EP 8, compile", GPTOSS, PT, 8, 8, 1, 0, G6, 4096, 2, 1.43, -1},
    {"MoE PT 8 x gpt-oss-20b, EP 4, compile", GPTOSS, PT, 8, 4, 1, 0, G6, 4096, 2, 1.45, -1},
    {"MoE PT 8 x Qwen3-30B-A3B, EP 8", QWEN30, PT, 8, 8, 1, 0, G6, 4096, 2, 1.52, -1},
    {"MoE PT 8 x gpt-oss-20b, EP 8, no compile", GPTOSS, PT, 8, 8, 0, 0, G6, 4096, 2, 1.57, -1},
};
static const struct group validation[] = {
    {"MoE PT 8 x DeepSeek-V2-Lite, EP 8", DSV2, PT, 8, 8, 1, 0, G6, 4096, 2, NAN, -1},
    {"Dense PT 8 x Mistral-Small-24B-Base-2501", MISTRAL, PT, 8, 1, 1, 1, G6, 4096, 4, NAN, -1},
    {"Dense LoRA 8 x Mistral-Small-24B-Base-2501", MISTRAL, LORA, 8, 1, 1, 1, G6, 4096, 4, NAN, -1},
    {"MoE LoRA 8 x Gemma-4-26B-A4B", GEMMA, LORA, 8, 1, 1, 1, G6, 4096, 4, NAN, -1},
};
/* H100 groups (PAPER.md section 3, "matched on H100"): the same job as an
 * 8-GPU H200 group, headline or validation (index `match` in the study
 * fleet's order: headline 0-24, validation 25-28). */
static const struct group h100[] = {
    {"H100 Dense PT 8 x Mistral-Small-24B-Base-2501", MISTRAL, PT, 8, 1, 1, 1, G6, 4096, 4, NAN,
     26},
    {"H100 Dense LoRA 8 x Mistral-Small-24B-Base-2501", MISTRAL, LORA, 8, 1, 1, 1, G6, 4096, 4,
     NAN, 27},
    {"H100 Dense LoRA 8 x Llama-3.1-70B, compile", LLAMA70, LORA, 8, 1, 1, 1, G4H, 4096, 2, NAN, 2},
    {"H100 MoE PT 8 x gpt-oss-20b, EP 8, compile", GPTOSS, PT, 8, 8, 1, 0, G6, 4096, 2, NAN, 21},
    {"H100 MoE PT 8 x DeepSeek-V2-Lite, EP 8", DSV2, PT, 8, 8, 1, 0, G6, 4096, 2, NAN, 25},
    {"H100 MoE LoRA 8 x Qwen3-30B-A3B", QWEN30, LORA, 8, 1, 1, 1, G6, 4096, 16, NAN, 15},
};
enum {
    NHEAD = sizeof headline / sizeof *headline,
    NVAL = sizeof validation / sizeof *validation,
    NH100 = sizeof h100 / sizeof *h100,
};

static const struct pflex_model_shape *shape_of(const char *model)
{
    for (int i = 0; i < pflex_model_shape_count; i++)
        if (!strcmp(pflex_model_shapes[i].model, model))
            return &pflex_model_shapes[i];
    return NULL;
}

/* The short family name: the model name after its organisation, lower case. */
static const char *const families[] = {
    "gpt-oss-20b", "qwen3-30b-a3b", "qwen3-32b", "llama-3.1-70b", "deepseek-v2-lite",
    "mistral-small-24b", "gemma-4-26b-a4b",
};
static const char *const family_models[] = {GPTOSS, QWEN30, QWEN32, LLAMA70, DSV2, MISTRAL, GEMMA};

/* Per-GPU memory of an FSDP full-shard job, GB: 16 bytes of state per
 * trained parameter sharded over the GPUs (LoRA: bf16 frozen weights,
 * sharded, and the adapters' state), activations (34 bytes per token per
 * hidden unit per layer, 2 kept per layer with recomputation; Korthikanti et
 * al. 2022 with flash attention), fp32 logits, a fixed runtime overhead. */
static double study_mem_gb(const struct pflex_model_shape *m, const struct group *g)
{
    double p = m->params_total_b * 1e9, tokens = (double)g->seq * g->batch;
    double state = g->task == LORA ? p * 2.0 / g->gpus + 0.01 * p * 16.0 : p * 16.0 / g->gpus;
    double per_layer = tokens * m->hidden;
    double act = g->ckpt ? m->layers * per_layer * 2.0 + per_layer * 34.0
                         : m->layers * per_layer * 34.0;
    return (state + act + tokens * m->vocab * 4.0) / 1e9 + 3.0;
}

static int study_group(size_t i, struct pflex_fleet_run *r)
{
    const struct group *g;
    enum pflex_fleet_split split;
    if (i < NHEAD) {
        g = &headline[i];
        split = PFLEX_FLEET_MAIN;
    } else if (i < NHEAD + NVAL) {
        g = &validation[i - NHEAD];
        split = PFLEX_FLEET_VALIDATION;
    } else if (i < NHEAD + NVAL + NH100) {
        g = &h100[i - NHEAD - NVAL];
        split = PFLEX_FLEET_H100;
    } else {
        return -1;
    }
    const struct pflex_model_shape *m = shape_of(g->model);
    if (!m)
        return -1;
    memset(r, 0, sizeof *r);
    struct pflex_job_desc *d = &r->desc;
    snprintf(d->gpu, sizeof d->gpu, "%s", split == PFLEX_FLEET_H100 ? "H100-SXM5-80GB"
                                                                    : "H200-SXM-141GB");
    d->gpus = g->gpus;
    d->params_b = m->params_total_b;
    d->layers = m->layers;
    d->hidden = m->hidden;
    d->heads = m->heads;
    d->kv_heads = m->kv_heads;
    d->head_dim = m->head_dim;
    d->ffn_hidden = m->ffn_hidden;
    d->vocab = m->vocab;
    d->experts = m->experts;
    d->top_k = m->top_k;
    d->shared_experts = m->shared_experts;
    d->expert_ffn = m->expert_ffn;
    d->shared_ffn = m->shared_ffn;
    d->dense_layers = m->dense_layers;
    d->tied_embeddings = m->tied_embeddings;
    d->mlp = m->mlp;
    d->window = m->window;
    d->window_layers = m->window_layers;
    /* FlashAttention 2.8 (PAPER.md section 3); it has no learned attention
     * sinks, so Transformers runs gpt-oss's attention eagerly (LoRA runs);
     * torchtitan's gpt-oss (pretraining) has its own sink-aware kernel. */
    d->attention = g->task == LORA && !strcmp(g->model, GPTOSS) ? PFLEX_ATTN_EAGER
                                                                 : PFLEX_ATTN_FLASH;
    d->precision = PFLEX_PREC_BF16;
    d->kind = g->task == LORA ? PFLEX_JOB_FINETUNE_LORA : PFLEX_JOB_PRETRAIN;
    d->seq_len = g->seq;
    d->micro_batch = g->batch;
    d->global_batch = g->batch * g->gpus;
    d->dp = g->gpus;
    d->tp = 1;
    d->pp = 1;
    d->ep = m->experts > 0 && g->task == PT ? g->ep : 1;    /* EP nested in the FSDP group */
    d->zero = 3;                            /* FSDP full shard (FSDP2 for MoE pretraining) */
    d->act_ckpt = g->ckpt;
    d->compile = g->compile;
    d->eager = !g->compile;                 /* without torch.compile: unfused elementwise */
    d->lora_rank = 32;
    /* No group runs an expert loop from Python.  MoE pretraining runs on
     * torchtitan's grouped GEMMs; LoRA on Transformers 5.2 + PEFT, which
     * packs a layer's experts into one 3-D weight and, when no experts
     * implementation is asked for, runs them with its "grouped_mm" backend
     * (PreTrainedModel.get_correct_experts_implementation; torch._grouped_mm,
     * PyTorch 2.9 on, the study ran 2.10): two grouped GEMMs per MoE layer
     * on the bf16 base weights, no per-expert operators or host syncs.
     * Transformers 4's per-expert loop (moe_loop) is not what ran. */
    d->moe_loop = 0;
    /* torchtitan's FSDP2 reduces gradients in fp32 (its config's
     * mixed_precision_reduce, "float32" by default, and PAPER.md names no
     * other setting): the MoE pretraining groups, which torchtitan ran.
     * The dense and LoRA groups (Transformers + Accelerate) keep the
     * model's earlier reduce in the compute dtype; Accelerate's setting
     * for them is not checked here. */
    d->reduce_fp32 = m->experts > 0 && g->task == PT;
    /* torchtitan's model code normalises with torch.nn.RMSNorm, which runs
     * PyTorch's fused RMSNorm kernel even without torch.compile
     * (aten::_fused_rms_norm); Transformers' models run their own RMSNorm
     * module of seven kernels. */
    d->fused_norm = m->experts > 0 && g->task == PT;
    /* Qwen3's and Gemma 4's attention normalise each head's queries and
     * keys (q_norm and k_norm in Transformers' Qwen3Attention and
     * Gemma4TextAttention; torchtitan's Qwen3 likewise). */
    d->qk_norm = !strcmp(g->model, QWEN30) || !strcmp(g->model, QWEN32)
                 || !strcmp(g->model, GEMMA);
    int fam = 0;
    while (strcmp(family_models[fam], g->model))
        fam++;
    snprintf(d->name, sizeof d->name, "%s-%s-%s-%dg-s%d-b%d%s%s%s",
             split == PFLEX_FLEET_H100 ? "h100" : "h200", families[fam],
             g->task == LORA ? "lora" : "pt", g->gpus, g->seq, g->batch,
             d->ep > 1 ? (g->ep == 8 ? "-ep8" : "-ep4") : "", g->compile ? "" : "-nocompile",
             split == PFLEX_FLEET_VALIDATION ? "-val" : "");
    r->split = split;
    r->set = split == PFLEX_FLEET_MAIN ? "headline" : split == PFLEX_FLEET_VALIDATION
                                                      ? "validation" : "h100";
    r->label = g->label;
    r->model = g->model;
    r->family = families[fam];
    r->arch = m->experts > 0 ? "moe" : "dense";
    r->task = g->task == LORA ? "lora" : "pretrain";
    r->is_moe = m->experts > 0;
    r->is_finetune = g->task == LORA;
    r->gpus = g->gpus;
    r->compile = g->compile;
    r->match = g->match;
    r->mem_gb = study_mem_gb(m, g);
    r->ncaps = grid_n[g->grid];
    memcpy(r->caps_w, grids[g->grid], r->ncaps * sizeof *r->caps_w);
    r->measured_pfi = g->pfi;
    return 0;
}

size_t pflex_fleet_size(enum pflex_fleet_set f)
{
    return f == PFLEX_FLEET_STUDY ? NHEAD + NVAL + NH100
           : f == PFLEX_FLEET_EXTENDED ? (size_t)NEXT_KINDS * NCONFIGS * EXT_DRAWS : 0;
}

int pflex_fleet_entry(enum pflex_fleet_set f, size_t i, struct pflex_fleet_run *out)
{
    if (f == PFLEX_FLEET_STUDY)
        return study_group(i, out);
    if (f == PFLEX_FLEET_EXTENDED)
        return extended_run(i, out);
    return -1;
}

size_t pflex_fleet_count(void)
{
    return pflex_fleet_size(PFLEX_FLEET_STUDY);
}

int pflex_fleet_get(size_t i, struct pflex_fleet_run *out)
{
    return pflex_fleet_entry(PFLEX_FLEET_STUDY, i, out);
}

const char *pflex_fleet_split_name(enum pflex_fleet_split s)
{
    switch (s) {
    case PFLEX_FLEET_MAIN: return "main";
    case PFLEX_FLEET_VALIDATION: return "validation";
    case PFLEX_FLEET_H100: return "h100-matched";
    }
    return "?";
}

const char *pflex_fleet_family_at(int i)
{
    return i >= 0 && i < (int)(sizeof families / sizeof *families) ? families[i] : NULL;
}
