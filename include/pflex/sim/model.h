/* pflex/sim/model.h — GPU kinds and training-job descriptions.
 *
 * A job is described by what its owner knows (model shape, batch,
 * parallelism, GPU kind and count); pflex/sim/sim.h turns that into step time,
 * power and telemetry from first principles.  Job descriptions come from
 * code, from named presets, or from JSON job files (docs/job-format.md).
 */
#ifndef PFLEX_MODEL_H
#define PFLEX_MODEL_H

#include <stddef.h>
#include "pflex/util/error.h"

/* Datasheet constants of one GPU kind (sources in docs/sim-model.md). */
struct pflex_gpu_kind {
    const char *name;           /* "H200-SXM-141GB", ... */
    double min_cap_w, max_cap_w, default_cap_w;    /* settable limits, W: the range is
                                 * pflex/util/gpukind.h's, the default its highest */
    double idle_w;              /* board power of an idle GPU at its lowest SM clock (what
                                 * nvidia-smi shows on an idle board), W */
    double sm_clock_min_mhz, sm_clock_max_mhz;
    double mem_clock_mhz;
    double mem_bw_gbs;          /* HBM/GDDR bandwidth, GB/s */
    double bf16_tflops;         /* dense BF16 tensor rate at max SM clock */
    double nvlink_gbs;          /* per-GPU NVLink bandwidth, one direction, GB/s; 0: none */
    double net_gbs;             /* per-GPU inter-node (InfiniBand) bandwidth, GB/s */
    int sms;
    int gpus_per_node;
    /* Added by the sim work. */
    double pcie_gbs;            /* host link, one direction, GB/s */
    double mem_gb;              /* device memory, GB */
    double mem_pj_per_bit;      /* DRAM access energy incl. PHY and controller, pJ/bit */
    double clock_step_mhz;      /* SM clock granularity of the power loop */
    /* The die and its voltage-frequency curve (docs/sim-model.md section 1):
     * boards built on one die share its switching power, whatever their
     * power limit. */
    const char *die;            /* "GA100", "GH100", ... */
    double fp16_tflops;         /* dense FP16 tensor rate at max SM clock */
    double tf32_tflops;         /* dense TF32 tensor rate (0: none, FP32 cores) */
    double fp32_tflops;         /* FP32 CUDA-core rate */
    double v_ratio;             /* V at the lowest clock / V at the top clock */
    double f_knee_mhz;          /* below this SM clock the voltage stays at its floor */
    double dyn_budget_w;        /* the die's flagship board limit minus its idle and
                                 * leakage: the switching power the die is built to
                                 * burn at its top clock */
    double leak_w;              /* leakage at the top-clock voltage, W */
    int measured;               /* 1: power-cap sweeps of this kind constrain the model;
                                 * 0: datasheet only */
};

/* The settable power range of a kind by name: 0, or -1 when unknown. */
int pflex_gpu_kind_limits(const char *name, double *min_w, double *max_w, double *default_w);

/* The table of known kinds, and lookup by name (case-insensitive; also
 * accepts short names such as "H200", "H100", "A100-40", "A100-80", "A40").
 * NULL when unknown. */
const struct pflex_gpu_kind *pflex_gpu_kind_find(const char *name);
const struct pflex_gpu_kind *pflex_gpu_kind_at(int i);     /* NULL past the end */

enum pflex_job_kind {
    PFLEX_JOB_PRETRAIN,
    PFLEX_JOB_FINETUNE_FULL,
    PFLEX_JOB_FINETUNE_LORA,
    PFLEX_JOB_INFERENCE,
};

/* "pretrain", "finetune", "lora", "inference"; NULL when out of range. */
const char *pflex_job_kind_name(enum pflex_job_kind k);
/* Parse those names (also "finetune-full", "finetune-lora", "ft", "pt");
 * 0 or -1. */
int pflex_job_kind_parse(const char *s, enum pflex_job_kind *out);

/* A job.  Zero in an optional field means "derive it" (see
 * pflex_job_desc_resolve); code that fills only the original fields keeps
 * working. */
struct pflex_job_desc {
    char name[64];
    char gpu[32];               /* GPU kind name */
    int gpus;                   /* total GPUs = dp * tp * pp (ep within dp) */
    double params_b;            /* total parameters, billions (0: from the shape) */
    int layers, hidden, heads;
    int ffn_hidden;             /* 0: derived */
    int vocab;                  /* 0: 32000 */
    int seq_len;                /* tokens per sequence (inference: prompt length) */
    int micro_batch;            /* sequences per GPU per micro-step (inference: batch per replica) */
    int global_batch;           /* sequences per optimizer step (inference: per replica step) */
    int experts, top_k;         /* experts 0: dense */
    enum pflex_job_kind kind;
    int dp, tp, pp, ep;
    int act_ckpt;               /* activation recomputation on */
    /* Added by the sim work (0 = default). */
    int kv_heads;               /* grouped-query attention KV heads; 0: = heads */
    int zero;                   /* optimizer-state sharding stage 0..3 (3 = FSDP full shard) */
    int gen_len;                /* inference: generated tokens per sequence; 0: 128 */
    int eager;                  /* unfused eager PyTorch kernels (e.g. Hugging Face
                                 * Transformers as is); 0: fused (Megatron-LM, llm-foundry) */
    /* Added for the study's models (0 = the default in brackets). */
    int head_dim;               /* attention head width [hidden / heads] */
    int expert_ffn;             /* MoE: routed expert width [ffn_hidden] */
    int shared_experts;         /* MoE: always-active experts per MoE layer [0] */
    int shared_ffn;             /* their width [expert_ffn] */
    int dense_layers;           /* MoE: leading layers with a dense MLP of ffn_hidden [0] */
    int tied_embeddings;        /* LM head shares the input embedding [no] */
    int mlp;                    /* enum pflex_mlp [SwiGLU] */
    int attention;              /* enum pflex_attention [flash] */
    int window, window_layers;  /* sliding-window attention: window tokens, layers with it */
    int encoder_layers;         /* encoder-decoder: of `layers`, the encoder's [0: decoder only] */
    int target_len;             /* encoder-decoder: decoder tokens per sequence [seq_len / 4] */
    int bidirectional;          /* encoder-only (BERT-like): attention is not causal */
    int precision;              /* enum pflex_precision [bf16] */
    int gpus_per_node;          /* [the kind's] */
    int lora_rank;              /* [16] */
    int compile;                /* torch.compile: fused elementwise kernels (sets eager = 0) */
    int moe_loop;               /* MoE experts run one by one from Python (Hugging Face
                                 * Transformers' eager MoE block), not as grouped GEMMs */
    int reduce_fp32;            /* FSDP reduces gradients in fp32 (torchtitan's default
                                 * mixed_precision_reduce), not in the compute dtype [no] */
    int lora_experts;           /* LoRA adapters on the packed routed experts too (PEFT's
                                 * target_parameters), not only on the dense layers [no] */
    int qk_norm;                /* an RMSNorm over each head's query and key (Qwen3, Gemma 4:
                                 * their attention's q_norm and k_norm) [no] */
    int fused_norm;             /* eager mode: RMSNorm is one fused kernel (torch.nn.RMSNorm,
                                 * aten::_fused_rms_norm: torchtitan's model code), not
                                 * Transformers' module of seven [no] */
};

enum pflex_mlp { PFLEX_MLP_SWIGLU, PFLEX_MLP_GEGLU, PFLEX_MLP_GELU };
enum pflex_attention { PFLEX_ATTN_FLASH, PFLEX_ATTN_EAGER };
enum pflex_precision { PFLEX_PREC_BF16, PFLEX_PREC_FP16, PFLEX_PREC_TF32, PFLEX_PREC_FP32 };

/* Check a description and fill every derived field in place (dp from
 * gpus/(tp*pp), ffn_hidden, vocab, params_b or the shape, top_k, ...).
 * Fails with "field 'x': what is wrong" on an inconsistent description.
 * Idempotent. */
int pflex_job_desc_resolve(struct pflex_job_desc *d, pflex_error_t *err);

/* Parameters, billions: all of them, and those active per token (MoE:
 * top_k of the experts).  Of a resolved description. */
double pflex_job_params_total_b(const struct pflex_job_desc *d);
double pflex_job_params_active_b(const struct pflex_job_desc *d);

/* The description fields added for the study's models, by name, for job
 * files: integers (head_dim, expert_ffn, shared_experts, shared_ffn,
 * dense_layers, window, window_layers, encoder_layers, target_len,
 * gpus_per_node, lora_rank), booleans (tied_embeddings, bidirectional,
 * compile, moe_loop) and names (mlp: swiglu|geglu|gelu, attention:
 * flash|eager, precision: bf16|fp16|tf32|fp32).  type: 'n' number (num),
 * 'b' boolean (num 0/1), 's' string (str).  Returns 1 when set, 0 when key
 * is not one of these, -1 with a reason in why (a static string). */
int pflex_job_field_set(struct pflex_job_desc *d, const char *key, char type, double num,
                        const char *str, const char **why);

/* Named presets (pflex sweep --list-presets).  find: 0 and *out (resolved),
 * or -1 when unknown.  preset_at: name of preset i, NULL past the end;
 * summary (may be NULL) gets a one-line description. */
int pflex_job_preset_find(const char *name, struct pflex_job_desc *out);
const char *pflex_job_preset_at(int i, const char **summary);

/* Job files (docs/job-format.md): a JSON object.  Errors read
 * "name:line:col: ..." for syntax and "name:line: field 'x': ..." for
 * content.  The result is resolved. */
int pflex_job_parse(const char *buf, size_t len, const char *name,
                    struct pflex_job_desc *out, pflex_error_t *err);
int pflex_job_read_file(const char *path, struct pflex_job_desc *out, pflex_error_t *err);

/* A preset name, or else a job file path. */
int pflex_job_load(const char *preset_or_path, struct pflex_job_desc *out, pflex_error_t *err);

#endif
