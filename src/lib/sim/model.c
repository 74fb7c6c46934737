/* model.c — GPU kinds (datasheet constants) and job descriptions.
 * Sources of the constants: docs/sim-model.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "pflex/model.h"

static const struct pflex_gpu_kind kinds[] = {
    {.name = "H100-SXM5-80GB", .min_cap_w = 200, .max_cap_w = 700, .default_cap_w = 700,
     .idle_w = 75, .sm_clock_min_mhz = 345, .sm_clock_max_mhz = 1980, .mem_clock_mhz = 2619,
     .mem_bw_gbs = 3350, .bf16_tflops = 989.4, .nvlink_gbs = 450, .net_gbs = 50, .sms = 132,
     .gpus_per_node = 8, .pcie_gbs = 64, .mem_gb = 80, .mem_pj_per_bit = 3.0,
     .clock_step_mhz = 15},
    {.name = "H200-SXM-141GB", .min_cap_w = 200, .max_cap_w = 700, .default_cap_w = 700,
     .idle_w = 80, .sm_clock_min_mhz = 345, .sm_clock_max_mhz = 1980, .mem_clock_mhz = 3201,
     .mem_bw_gbs = 4800, .bf16_tflops = 989.4, .nvlink_gbs = 450, .net_gbs = 50, .sms = 132,
     .gpus_per_node = 8, .pcie_gbs = 64, .mem_gb = 141, .mem_pj_per_bit = 2.6,
     .clock_step_mhz = 15},
    {.name = "A100-SXM4-40GB", .min_cap_w = 100, .max_cap_w = 400, .default_cap_w = 400,
     .idle_w = 55, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1410, .mem_clock_mhz = 1215,
     .mem_bw_gbs = 1555, .bf16_tflops = 312, .nvlink_gbs = 300, .net_gbs = 25, .sms = 108,
     .gpus_per_node = 8, .pcie_gbs = 32, .mem_gb = 40, .mem_pj_per_bit = 4.0,
     .clock_step_mhz = 15},
    {.name = "A100-PCIE-80GB", .min_cap_w = 150, .max_cap_w = 300, .default_cap_w = 300,
     .idle_w = 45, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1410, .mem_clock_mhz = 1512,
     .mem_bw_gbs = 1935, .bf16_tflops = 312, .nvlink_gbs = 0, .net_gbs = 25, .sms = 108,
     .gpus_per_node = 8, .pcie_gbs = 32, .mem_gb = 80, .mem_pj_per_bit = 3.6,
     .clock_step_mhz = 15},
    {.name = "A40", .min_cap_w = 100, .max_cap_w = 300, .default_cap_w = 300,
     .idle_w = 30, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1740, .mem_clock_mhz = 7251,
     .mem_bw_gbs = 696, .bf16_tflops = 149.7, .nvlink_gbs = 0, .net_gbs = 25, .sms = 84,
     .gpus_per_node = 8, .pcie_gbs = 32, .mem_gb = 48, .mem_pj_per_bit = 7.0,
     .clock_step_mhz = 15},
};
#define NKINDS ((int)(sizeof kinds / sizeof *kinds))

static const struct { const char *alias, *name; } aliases[] = {
    {"H100", "H100-SXM5-80GB"}, {"H100-SXM", "H100-SXM5-80GB"}, {"H100-SXM5", "H100-SXM5-80GB"},
    {"H200", "H200-SXM-141GB"}, {"H200-SXM", "H200-SXM-141GB"},
    {"A100", "A100-SXM4-40GB"}, {"A100-40", "A100-SXM4-40GB"}, {"A100-SXM4", "A100-SXM4-40GB"},
    {"A100-SXM4-40G", "A100-SXM4-40GB"}, {"A100-80", "A100-PCIE-80GB"},
    {"A100-PCIE", "A100-PCIE-80GB"}, {"A100-PCIe-80GB", "A100-PCIE-80GB"},
};

const struct pflex_gpu_kind *pflex_gpu_kind_find(const char *name)
{
    if (!name)
        return NULL;
    if (!strncasecmp(name, "NVIDIA ", 7))
        name += 7;
    for (int i = 0; i < NKINDS; i++)
        if (!strcasecmp(name, kinds[i].name))
            return &kinds[i];
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (!strcasecmp(name, aliases[i].alias))
            return pflex_gpu_kind_find(aliases[i].name);
    return NULL;
}

const struct pflex_gpu_kind *pflex_gpu_kind_at(int i)
{
    return i >= 0 && i < NKINDS ? &kinds[i] : NULL;
}

static const char *const kind_names[] = {"pretrain", "finetune", "lora", "inference"};

const char *pflex_job_kind_name(enum pflex_job_kind k)
{
    return (unsigned)k < 4 ? kind_names[k] : NULL;
}

int pflex_job_kind_parse(const char *s, enum pflex_job_kind *out)
{
    static const struct { const char *s; enum pflex_job_kind k; } names[] = {
        {"pretrain", PFLEX_JOB_PRETRAIN}, {"pt", PFLEX_JOB_PRETRAIN},
        {"pretraining", PFLEX_JOB_PRETRAIN},
        {"finetune", PFLEX_JOB_FINETUNE_FULL}, {"finetune-full", PFLEX_JOB_FINETUNE_FULL},
        {"ft", PFLEX_JOB_FINETUNE_FULL}, {"fine-tune", PFLEX_JOB_FINETUNE_FULL},
        {"lora", PFLEX_JOB_FINETUNE_LORA}, {"finetune-lora", PFLEX_JOB_FINETUNE_LORA},
        {"inference", PFLEX_JOB_INFERENCE}, {"infer", PFLEX_JOB_INFERENCE},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (s && !strcasecmp(s, names[i].s)) {
            *out = names[i].k;
            return 0;
        }
    return -1;
}

/* Parameters of one transformer layer that every token uses (attention:
 * Q and O are h x h, K and V are h x kv_dim) and of one FFN expert
 * (SwiGLU: three h x ffn matrices). */
static double attn_params(const struct pflex_job_desc *d)
{
    double kv_dim = (double)d->hidden * d->kv_heads / d->heads;
    return 2.0 * d->hidden * d->hidden + 2.0 * d->hidden * kv_dim;
}

static double expert_params(const struct pflex_job_desc *d)
{
    return 3.0 * d->hidden * (double)d->ffn_hidden;
}

static double embed_params(const struct pflex_job_desc *d)
{
    return 2.0 * d->vocab * (double)d->hidden;  /* input embedding + untied LM head */
}

double pflex_job_params_total_b(const struct pflex_job_desc *d)
{
    int e = d->experts > 0 ? d->experts : 1;
    return (d->layers * (attn_params(d) + e * expert_params(d)) + embed_params(d)) / 1e9;
}

double pflex_job_params_active_b(const struct pflex_job_desc *d)
{
    int k = d->experts > 0 ? d->top_k : 1;
    return (d->layers * (attn_params(d) + k * expert_params(d)) + embed_params(d)) / 1e9;
}

/* A Llama-like shape for a parameter count alone. */
static void shape_from_params(struct pflex_job_desc *d)
{
    static const struct { double upto_b; int hidden; } h[] = {
        {0.2, 768}, {0.5, 1024}, {1.5, 2048}, {4, 3072}, {10, 4096}, {20, 5120},
        {40, 6656}, {100, 8192}, {1e9, 12288},
    };
    int e = d->experts > 0 ? d->experts : 1;
    double dense_equiv = d->params_b / (e > 1 ? 0.5 + 0.5 * e * 0.25 : 1.0);
    for (size_t i = 0; i < sizeof h / sizeof *h; i++)
        if (dense_equiv <= h[i].upto_b) {
            if (!d->hidden)
                d->hidden = h[i].hidden;
            break;
        }
}

int pflex_job_desc_resolve(struct pflex_job_desc *d, pflex_error_t *err)
{
    if (!d->name[0])
        snprintf(d->name, sizeof d->name, "job");
    const struct pflex_gpu_kind *k = pflex_gpu_kind_find(d->gpu);
    if (!k)
        return pflex_error_set(err, "field 'gpu': unknown GPU kind '%s'", d->gpu);
    snprintf(d->gpu, sizeof d->gpu, "%s", k->name);
    if ((unsigned)d->kind > PFLEX_JOB_INFERENCE)
        return pflex_error_set(err, "field 'task': unknown job kind %d", (int)d->kind);
#define NONNEG(f) if (d->f < 0) return pflex_error_set(err, "field '" #f "': must not be negative")
    NONNEG(gpus); NONNEG(layers); NONNEG(hidden); NONNEG(heads); NONNEG(ffn_hidden);
    NONNEG(vocab); NONNEG(seq_len); NONNEG(micro_batch); NONNEG(global_batch); NONNEG(experts);
    NONNEG(top_k); NONNEG(dp); NONNEG(tp); NONNEG(pp); NONNEG(ep); NONNEG(kv_heads);
    NONNEG(gen_len);
#undef NONNEG
    static const struct { const char *name; long max; } limits[] = {
        {"gpus", 65536}, {"dp", 65536}, {"tp", 1024}, {"pp", 1024}, {"ep", 65536},
        {"layers", 10000}, {"hidden", 1 << 20}, {"heads", 1 << 16}, {"kv_heads", 1 << 16},
        {"ffn_hidden", 1 << 22}, {"vocab", 1 << 24}, {"seq_len", 1 << 24},
        {"micro_batch", 1 << 20}, {"global_batch", 1 << 30}, {"experts", 65536},
        {"top_k", 65536}, {"gen_len", 1 << 24},
    };
    const int vals[] = {d->gpus, d->dp, d->tp, d->pp, d->ep, d->layers, d->hidden, d->heads,
                        d->kv_heads, d->ffn_hidden, d->vocab, d->seq_len, d->micro_batch,
                        d->global_batch, d->experts, d->top_k, d->gen_len};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++)
        if (vals[i] > limits[i].max)
            return pflex_error_set(err, "field '%s': %d is more than %ld", limits[i].name,
                                   vals[i], limits[i].max);
    if (!(d->params_b >= 0) || !isfinite(d->params_b) || d->params_b > 1e5)
        return pflex_error_set(err, "field 'params_b': must be a non-negative number");
    if (d->zero < 0 || d->zero > 3)
        return pflex_error_set(err, "field 'zero': must be 0, 1, 2 or 3");
    d->act_ckpt = d->act_ckpt != 0;
    d->eager = d->eager != 0;
    if (!d->tp)
        d->tp = 1;
    if (!d->pp)
        d->pp = 1;
    if (!d->dp) {
        if (!d->gpus)
            d->gpus = d->tp * d->pp;
        if (d->gpus % (d->tp * d->pp))
            return pflex_error_set(err, "field 'gpus': %d GPUs do not split into tp %d x pp %d",
                                   d->gpus, d->tp, d->pp);
        d->dp = d->gpus / (d->tp * d->pp);
    }
    if (!d->gpus)
        d->gpus = d->dp * d->tp * d->pp;
    if ((long)d->dp * d->tp * d->pp != d->gpus)
        return pflex_error_set(err, "field 'gpus': %d GPUs but dp %d x tp %d x pp %d = %ld",
                               d->gpus, d->dp, d->tp, d->pp, (long)d->dp * d->tp * d->pp);
    if (d->gpus > 65536)
        return pflex_error_set(err, "field 'gpus': %d is more than 65536", d->gpus);
    if (d->experts == 1)
        d->experts = 0;
    if (!d->ep)
        d->ep = 1;
    if (d->experts) {
        if (!d->top_k)
            d->top_k = d->experts >= 8 ? 2 : 1;
        if (d->top_k > d->experts)
            return pflex_error_set(err, "field 'top_k': %d is more than the %d experts",
                                   d->top_k, d->experts);
        if (d->dp % d->ep)
            return pflex_error_set(err, "field 'ep': %d does not divide dp %d", d->ep, d->dp);
        if (d->experts % d->ep)
            return pflex_error_set(err, "field 'ep': %d does not divide the %d experts",
                                   d->ep, d->experts);
    } else {
        d->top_k = 0;
        if (d->ep > 1)
            return pflex_error_set(err, "field 'ep': expert parallelism needs experts");
    }
    if (!d->vocab)
        d->vocab = 32000;
    if (!d->hidden && !d->params_b)
        return pflex_error_set(err, "field 'params_b': give the parameter count or the shape "
                               "(layers, hidden)");
    if (!d->hidden)
        shape_from_params(d);
    if (!d->heads)
        d->heads = d->hidden >= 128 ? d->hidden / 128 : 1;
    if (d->hidden % d->heads)
        return pflex_error_set(err, "field 'heads': %d does not divide hidden %d",
                               d->heads, d->hidden);
    if (!d->kv_heads)
        d->kv_heads = d->heads;
    if (d->kv_heads > d->heads || d->heads % d->kv_heads)
        return pflex_error_set(err, "field 'kv_heads': %d does not divide heads %d",
                               d->kv_heads, d->heads);
    int e = d->experts > 0 ? d->experts : 1;
    if (!d->layers) {
        if (!d->ffn_hidden)
            d->ffn_hidden = (int)(8.0 / 3.0 * d->hidden / 256.0 + 0.5) * 256;
        double per_layer = attn_params(d) + e * expert_params(d);
        double l = (d->params_b * 1e9 - embed_params(d)) / per_layer;
        if (!(l <= 10000))      /* also NaN: a shape no real model has */
            return pflex_error_set(err, "field 'params_b': %g billion parameters at hidden %d "
                                   "would need %.3g layers", d->params_b, d->hidden, l);
        d->layers = l < 1 ? 1 : (int)(l + 0.5);
    }
    if (!d->ffn_hidden) {
        double f = 0;
        if (d->params_b > 0)
            f = (d->params_b * 1e9 - embed_params(d) - d->layers * attn_params(d))
                / (d->layers * 3.0 * d->hidden * e);
        if (!(f >= d->hidden / 4.0))   /* no count, or one too small for the shape */
            f = e > 1 ? d->hidden * 0.5 : 8.0 / 3.0 * d->hidden;
        if (!(f <= 1 << 24))
            return pflex_error_set(err, "field 'params_b': %g billion parameters in %d layers "
                                   "of hidden %d would need an FFN width of %.3g",
                                   d->params_b, d->layers, d->hidden, f);
        d->ffn_hidden = (int)(f + 0.5);
    }
    if (!d->params_b)
        d->params_b = pflex_job_params_total_b(d);
    if (d->pp > d->layers)
        return pflex_error_set(err, "field 'pp': %d stages for %d layers", d->pp, d->layers);
    if (!d->seq_len)
        d->seq_len = 2048;
    if (!d->micro_batch)
        d->micro_batch = 1;
    if (!d->global_batch)
        d->global_batch = (int)fmin((double)d->micro_batch
                                    * (d->kind == PFLEX_JOB_INFERENCE ? 1 : d->dp), 1 << 30);
    if (d->kind == PFLEX_JOB_INFERENCE) {
        if (!d->gen_len)
            d->gen_len = 128;
    } else if ((long long)d->global_batch < (long long)d->micro_batch * d->dp) {
        return pflex_error_set(err, "field 'global_batch': %d is less than micro_batch %d x dp %d",
                               d->global_batch, d->micro_batch, d->dp);
    }
    return 0;
}
