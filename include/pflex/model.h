/* pflex/model.h — GPU kinds and training-job descriptions.
 *
 * A job is described by what its owner knows (model shape, batch,
 * parallelism, GPU kind and count); pflex/sim.h turns that into step time,
 * power and telemetry from first principles.
 * (Draft by the build lead; owned and extended by the sim work.  Keep these
 * names: the fleet and the study use them.)
 */
#ifndef PFLEX_MODEL_H
#define PFLEX_MODEL_H

#include "pflex/error.h"

/* Datasheet constants of one GPU kind. */
struct pflex_gpu_kind {
    const char *name;           /* "H200-SXM-141GB", ... */
    double min_cap_w, max_cap_w, default_cap_w;
    double idle_w;
    double sm_clock_min_mhz, sm_clock_max_mhz;
    double mem_clock_mhz;
    double mem_bw_gbs;          /* HBM/GDDR bandwidth, GB/s */
    double bf16_tflops;         /* dense BF16 tensor rate at max SM clock */
    double nvlink_gbs;          /* per-GPU NVLink bandwidth, one direction, GB/s */
    double net_gbs;             /* per-GPU inter-node (InfiniBand) bandwidth, GB/s */
    int sms;
    int gpus_per_node;
};

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

struct pflex_job_desc {
    char name[64];
    char gpu[32];               /* GPU kind name */
    int gpus;                   /* total GPUs = dp * tp * pp (ep within dp) */
    double params_b;            /* total parameters, billions */
    int layers, hidden, heads;
    int ffn_hidden;             /* 0: derived */
    int vocab;                  /* 0: 32000 */
    int seq_len;
    int micro_batch;            /* sequences per GPU per micro-step */
    int global_batch;           /* sequences per optimizer step */
    int experts, top_k;         /* experts 0: dense */
    enum pflex_job_kind kind;
    int dp, tp, pp, ep;
    int act_ckpt;               /* activation recomputation on */
};

#endif
