/* fleet.c — the built-in fleet: a seeded, index-addressed catalogue of runs.
 *
 * Each run is a (model, task, GPU count, parallel layout) configuration from
 * the table below plus sequence length, micro batch, global batch and
 * activation recomputation drawn from a generator seeded by the run's index
 * alone.  The micro batch shrinks (and recomputation turns on) until a coarse
 * per-GPU memory estimate fits the GPU, so every run is one a practitioner
 * could launch.  H100 runs copy H200 main runs that also fit in 80 GB.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "pflex/fleet.h"

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

#define H200_MEM_GB 141.0
#define H100_MEM_GB 80.0
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
    return kind == PT ? "pretrain" : kind == FT ? "finetune-full" : "finetune-lora";
}

/* Build the H200 run with configuration index ci from the generator state. */
static void build(int ci, uint64_t rng, const char *suffix, struct pflex_fleet_run *r)
{
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
        for (mb = mb_pref; mb > 1 && mem_gb(m, c, seq, mb, ckpt, 0) > MEM_USABLE * H200_MEM_GB; mb /= 2)
            ;
        if (mem_gb(m, c, seq, mb, ckpt, 0) <= MEM_USABLE * H200_MEM_GB)
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
    snprintf(d->gpu, sizeof d->gpu, "H200-SXM-141GB");
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
        if (c->kind == FT && dp > 1)
            d->zero = 3;
    }
    snprintf(d->name, sizeof d->name, "h200-%s-%s-%s%s-%dg-s%d-mb%d-%s", m->moe ? "moe" : "dense",
             m->family, kind_code(c->kind), hf ? "-hf" : "", c->gpus, seq, mb, suffix);
    r->split = PFLEX_FLEET_MAIN;
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

static void main_run(int i, struct pflex_fleet_run *r)
{
    char suffix[16];
    uint64_t rng = 0x50f1e3c0de000000ULL + (uint64_t)i;
    snprintf(suffix, sizeof suffix, "r%03d", i + 1);
    /* 37 is prime to NCONFIGS: the first NCONFIGS runs visit every
     * configuration once, the rest revisit a spread of them. */
    build((i * 37) % NCONFIGS, rng, suffix, r);
}

/* The i-th H200 main run that also fits an H100, visiting the main runs in
 * a fixed stride so the pairs spread over families and sizes. */
static int h100_source(int k)
{
    int found = 0;
    for (int step = 0; step < PFLEX_FLEET_MAIN_RUNS; step++) {
        int i = (step * 7 + 3) % PFLEX_FLEET_MAIN_RUNS;
        struct pflex_fleet_run r;
        main_run(i, &r);
        if (r.mem_gb > MEM_USABLE * H100_MEM_GB)
            continue;
        if (found++ == k)
            return i;
    }
    return -1;
}

size_t pflex_fleet_count(void)
{
    return PFLEX_FLEET_MAIN_RUNS + PFLEX_FLEET_VALIDATION_RUNS + PFLEX_FLEET_H100_RUNS;
}

int pflex_fleet_get(size_t i, struct pflex_fleet_run *out)
{
    if (i < PFLEX_FLEET_MAIN_RUNS) {
        main_run((int)i, out);
        return 0;
    }
    i -= PFLEX_FLEET_MAIN_RUNS;
    if (i < PFLEX_FLEET_VALIDATION_RUNS) {
        char suffix[16];
        uint64_t rng = 0x7a11da7e00000000ULL + i;
        snprintf(suffix, sizeof suffix, "v%02zu", i + 1);
        build((int)((i * 53 + 11) % NCONFIGS), rng, suffix, out);
        out->split = PFLEX_FLEET_VALIDATION;
        return 0;
    }
    i -= PFLEX_FLEET_VALIDATION_RUNS;
    if (i < PFLEX_FLEET_H100_RUNS) {
        int src = h100_source((int)i);
        if (src < 0)
            return -1;
        main_run(src, out);
        /* Same job, same run number: only the GPU kind differs
         * ("h200-..." becomes "h100-..."). */
        out->desc.name[1] = '1';
        snprintf(out->desc.gpu, sizeof out->desc.gpu, "H100-SXM5-80GB");
        out->split = PFLEX_FLEET_H100;
        out->match = src;
        return 0;
    }
    return -1;
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
    return i >= 0 && i < NMODELS ? models[i].family : NULL;
}
