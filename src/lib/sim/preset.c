/* preset.c — named job presets: the simulated equivalents of the Emerald
 * A100 jobs (docs/measurements.md, "The sim backend's calibration") and a few common shapes. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "pflex/sim/model.h"

/* Llama-3-8B: 32 layers, 4096 wide, GQA with 8 KV heads, SwiGLU 14336,
 * 128256-token vocabulary. */
#define LLAMA3_8B .params_b = 8.03, .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, \
                  .ffn_hidden = 14336, .vocab = 128256
/* MPT-7B / MPT-13B (llm-foundry): GELU MLP of 4h (two matrices), the LM
 * head tied to the input embedding, vocabulary 50432. */
#define MPT_7B .params_b = 6.7, .layers = 32, .hidden = 4096, .heads = 32, .ffn_hidden = 16384, \
               .vocab = 50432, .mlp = PFLEX_MLP_GELU, .tied_embeddings = 1
#define MPT_13B .params_b = 12.9, .layers = 40, .hidden = 5120, .heads = 40, .ffn_hidden = 20480, \
                .vocab = 50432, .mlp = PFLEX_MLP_GELU, .tied_embeddings = 1

static const struct preset {
    const char *summary;
    struct pflex_job_desc d;
} presets[] = {
    {"Emerald: Llama-3-8B full fine-tune on dolly, FSDP, 48 x A100-SXM4-40GB",
     {.name = "emerald-ft-llama-8b-dolly", .gpu = "A100-SXM4-40GB", .gpus = 48, LLAMA3_8B,
      .kind = PFLEX_JOB_FINETUNE_FULL, .seq_len = 512, .micro_batch = 2, .global_batch = 96,
      .zero = 3, .act_ckpt = 1, .eager = 1}},
    {"Emerald: Llama-3-8B full fine-tune on P3, FSDP, 32 x A100-SXM4-40GB",
     {.name = "emerald-ft-llama-8b-p3", .gpu = "A100-SXM4-40GB", .gpus = 32, LLAMA3_8B,
      .kind = PFLEX_JOB_FINETUNE_FULL, .seq_len = 1024, .micro_batch = 2, .global_batch = 64,
      .zero = 3, .act_ckpt = 1, .eager = 1}},
    {"Emerald: Llama-3-8B batch inference, one replica per GPU, 48 x A100-SXM4-40GB",
     {.name = "emerald-infer-llama-8b", .gpu = "A100-SXM4-40GB", .gpus = 48, LLAMA3_8B,
      .kind = PFLEX_JOB_INFERENCE, .seq_len = 512, .gen_len = 256, .micro_batch = 128}},
    {"Emerald: MPT-7B pretraining, FSDP, 48 x A100-SXM4-40GB",
     {.name = "emerald-pt-mpt-7b", .gpu = "A100-SXM4-40GB", .gpus = 48, MPT_7B,
      .kind = PFLEX_JOB_PRETRAIN, .seq_len = 2048, .micro_batch = 2, .global_batch = 384,
      .zero = 3, .act_ckpt = 0}},
    {"Emerald: MPT-13B pretraining, FSDP, 64 x A100-SXM4-40GB",
     {.name = "emerald-pt-mpt-13b", .gpu = "A100-SXM4-40GB", .gpus = 64, MPT_13B,
      .kind = PFLEX_JOB_PRETRAIN, .seq_len = 2048, .micro_batch = 4, .global_batch = 512,
      .zero = 3, .act_ckpt = 1}},
    {"Llama-3-8B pretraining, 8 x H200, data parallel with ZeRO-1",
     {.name = "llama-8b-pretrain-h200", .gpu = "H200-SXM-141GB", .gpus = 8, LLAMA3_8B,
      .kind = PFLEX_JOB_PRETRAIN, .seq_len = 8192, .micro_batch = 1, .global_batch = 128,
      .zero = 1, .act_ckpt = 0}},
    {"Llama-3-8B pretraining, 8 x H100, data parallel with ZeRO-1",
     {.name = "llama-8b-pretrain-h100", .gpu = "H100-SXM5-80GB", .gpus = 8, LLAMA3_8B,
      .kind = PFLEX_JOB_PRETRAIN, .seq_len = 8192, .micro_batch = 1, .global_batch = 128,
      .zero = 1, .act_ckpt = 0}},
    {"Llama-3-70B pretraining, 32 x H200, tp 8 x pp 2 x dp 2",
     {.name = "llama-70b-pretrain-h200", .gpu = "H200-SXM-141GB", .gpus = 32, .params_b = 70.6,
      .layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn_hidden = 28672,
      .vocab = 128256, .kind = PFLEX_JOB_PRETRAIN, .seq_len = 8192, .micro_batch = 1,
      .global_batch = 64, .tp = 8, .pp = 2, .zero = 1, .act_ckpt = 1}},
    {"Llama-3-8B LoRA fine-tune, 1 x H200",
     {.name = "llama-8b-lora-h200", .gpu = "H200-SXM-141GB", .gpus = 1, LLAMA3_8B,
      .kind = PFLEX_JOB_FINETUNE_LORA, .seq_len = 2048, .micro_batch = 4, .global_batch = 16}},
    {"Llama-3-8B serving-style inference, 1 x H200, batch 16",
     {.name = "llama-8b-infer-h200", .gpu = "H200-SXM-141GB", .gpus = 1, LLAMA3_8B,
      .kind = PFLEX_JOB_INFERENCE, .seq_len = 2048, .gen_len = 512, .micro_batch = 16}},
    {"Mixtral-8x7B pretraining, 16 x H200, ep 8 x tp 2",
     {.name = "mixtral-8x7b-pretrain-h200", .gpu = "H200-SXM-141GB", .gpus = 16,
      .params_b = 46.7, .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8,
      .ffn_hidden = 14336, .vocab = 32000, .experts = 8, .top_k = 2,
      .kind = PFLEX_JOB_PRETRAIN, .seq_len = 4096, .micro_batch = 1, .global_batch = 256,
      .tp = 2, .ep = 8, .zero = 1, .act_ckpt = 1}},
    {"OLMoE-1B-7B pretraining, 8 x H200, ep 8",
     {.name = "olmoe-1b-7b-pretrain-h200", .gpu = "H200-SXM-141GB", .gpus = 8, .params_b = 6.9,
      .layers = 16, .hidden = 2048, .heads = 16, .ffn_hidden = 1024, .vocab = 50304,
      .experts = 64, .top_k = 8, .kind = PFLEX_JOB_PRETRAIN, .seq_len = 4096,
      .micro_batch = 4, .global_batch = 512, .ep = 8, .zero = 1}},
};
#define NPRESETS ((int)(sizeof presets / sizeof *presets))

int pflex_job_preset_find(const char *name, struct pflex_job_desc *out)
{
    for (int i = 0; name && i < NPRESETS; i++)
        if (!strcasecmp(name, presets[i].d.name)) {
            *out = presets[i].d;
            return pflex_job_desc_resolve(out, NULL);
        }
    return -1;
}

const char *pflex_job_preset_at(int i, const char **summary)
{
    if (i < 0 || i >= NPRESETS)
        return NULL;
    if (summary)
        *summary = presets[i].summary;
    return presets[i].d.name;
}
