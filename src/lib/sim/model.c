/* model.c — GPU kinds (datasheet constants) and job descriptions.
 * Sources of the constants: docs/sim-model.md. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "pflex/util/gpukind.h"
#include "pflex/sim/model.h"

/* The dies.  Boards built on one die share its V-f curve, its leakage and
 * its switching power: the A100-PCIe burns the same watts per GEMM at a
 * given clock as the A100-SXM4, it is only allowed fewer of them.
 * dyn_budget_w = flagship board limit - its idle - leakage; the sim scales
 * it by a fitted constant per die family (src/lib/sim/sim.c).  Sources and
 * which values are measured or assumed: docs/sim-model.md section 1. */
#define LEAK_FRAC 0.0486        /* leakage at V_max, fraction of the flagship limit */
#define DIE(name_, flagship_w, idle_w_, vr, knee) \
    .die = name_, .v_ratio = vr, .f_knee_mhz = knee, .leak_w = LEAK_FRAC * (flagship_w), \
    .dyn_budget_w = (flagship_w) - (idle_w_) - LEAK_FRAC * (flagship_w)
#define GA100 DIE("GA100", 400, 55, 0.798, 814)
#define GH100 DIE("GH100", 700, 75, 0.798, 1143)
#define GB100 DIE("GB100", 1000, 110, 0.798, 1134)
#define GA102 DIE("GA102", 300, 55, 0.69, 1000)
#define AD102 DIE("AD102", 350, 60, 0.80, 1450)
#define GV100 DIE("GV100", 300, 40, 0.67, 765)

/* The settable range of each kind is not written here: fill_ranges() reads
 * it from the one table of ranges (src/lib/util/gpukind.c) before anyone
 * sees a kind.  The default limit is the highest one for every known kind. */
/* Tensor rates are at the top SM clock: GH100 does 4096 dense FP16/BF16
 * FLOPs per clock per SM, so 132 SMs at 1980 MHz give 1070.5 TFLOPS
 * (NVIDIA's 989.4 is quoted at the 1830 MHz boost clock of its tensor
 * specification; TF32 half of it).  GA100's 312 is at its 1410 MHz top. */
static struct pflex_gpu_kind kinds[] = {
    {.name = "H100-SXM5-80GB", .idle_w = 75, .sm_clock_min_mhz = 345, .sm_clock_max_mhz = 1980, .mem_clock_mhz = 2619,
     .mem_bw_gbs = 3350, .bf16_tflops = 1070.5, .nvlink_gbs = 450, .net_gbs = 50, .sms = 132,
     .gpus_per_node = 8, .pcie_gbs = 64, .mem_gb = 80, .mem_pj_per_bit = 3.0,
     .clock_step_mhz = 15, GH100, .fp16_tflops = 1070.5, .tf32_tflops = 535.2,
     .fp32_tflops = 66.9, .measured = 1},
    {.name = "H200-SXM-141GB", .idle_w = 84, .sm_clock_min_mhz = 345, .sm_clock_max_mhz = 1980, .mem_clock_mhz = 3201,
     .mem_bw_gbs = 4800, .bf16_tflops = 1070.5, .nvlink_gbs = 450, .net_gbs = 50, .sms = 132,
     .gpus_per_node = 8, .pcie_gbs = 64, .mem_gb = 141, .mem_pj_per_bit = 2.6,
     .clock_step_mhz = 15, GH100, .fp16_tflops = 1070.5, .tf32_tflops = 535.2,
     .fp32_tflops = 66.9, .measured = 1},
    {.name = "A100-SXM4-40GB", .idle_w = 55, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1410, .mem_clock_mhz = 1215,
     .mem_bw_gbs = 1555, .bf16_tflops = 312, .nvlink_gbs = 300, .net_gbs = 25, .sms = 108,
     .gpus_per_node = 8, .pcie_gbs = 32, .mem_gb = 40, .mem_pj_per_bit = 4.0,
     .clock_step_mhz = 15, GA100, .fp16_tflops = 312, .tf32_tflops = 156, .fp32_tflops = 19.5,
     .measured = 1},
    {.name = "A100-SXM4-80GB", .idle_w = 60, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1410, .mem_clock_mhz = 1593,
     .mem_bw_gbs = 2039, .bf16_tflops = 312, .nvlink_gbs = 300, .net_gbs = 25, .sms = 108,
     .gpus_per_node = 8, .pcie_gbs = 32, .mem_gb = 80, .mem_pj_per_bit = 3.6,
     .clock_step_mhz = 15, GA100, .fp16_tflops = 312, .tf32_tflops = 156, .fp32_tflops = 19.5,
     .measured = 0},
    {.name = "A100-PCIE-80GB", .idle_w = 45, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1410, .mem_clock_mhz = 1512,
     .mem_bw_gbs = 1935, .bf16_tflops = 312, .nvlink_gbs = 0, .net_gbs = 12.5, .sms = 108,
     .gpus_per_node = 4, .pcie_gbs = 32, .mem_gb = 80, .mem_pj_per_bit = 3.6,
     .clock_step_mhz = 15, GA100, .fp16_tflops = 312, .tf32_tflops = 156, .fp32_tflops = 19.5,
     .measured = 0},
    {.name = "A40", .idle_w = 55, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1740, .mem_clock_mhz = 7251,
     .mem_bw_gbs = 696, .bf16_tflops = 149.7, .nvlink_gbs = 0, .net_gbs = 12.5, .sms = 84,
     .gpus_per_node = 4, .pcie_gbs = 32, .mem_gb = 48, .mem_pj_per_bit = 7.0,
     .clock_step_mhz = 15, GA102, .fp16_tflops = 149.7, .tf32_tflops = 74.8, .fp32_tflops = 37.4,
     .measured = 0},
    {.name = "L40S", .idle_w = 60, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 2520, .mem_clock_mhz = 9001,
     .mem_bw_gbs = 864, .bf16_tflops = 362, .nvlink_gbs = 0, .net_gbs = 25, .sms = 142,
     .gpus_per_node = 8, .pcie_gbs = 32, .mem_gb = 48, .mem_pj_per_bit = 7.0,
     .clock_step_mhz = 15, AD102, .fp16_tflops = 362, .tf32_tflops = 183, .fp32_tflops = 91.6,
     .measured = 0},
    {.name = "V100-SXM2-32GB", .idle_w = 40, .sm_clock_min_mhz = 135, .sm_clock_max_mhz = 1530, .mem_clock_mhz = 877,
     .mem_bw_gbs = 900, .bf16_tflops = 0, .nvlink_gbs = 150, .net_gbs = 12.5, .sms = 80,
     .gpus_per_node = 8, .pcie_gbs = 16, .mem_gb = 32, .mem_pj_per_bit = 4.0,
     .clock_step_mhz = 7.5, GV100, .fp16_tflops = 125, .tf32_tflops = 0, .fp32_tflops = 15.7,
     .measured = 0},
    {.name = "B200-SXM-180GB", .idle_w = 110, .sm_clock_min_mhz = 345, .sm_clock_max_mhz = 1965, .mem_clock_mhz = 3996,
     .mem_bw_gbs = 8000, .bf16_tflops = 2250, .nvlink_gbs = 900, .net_gbs = 50, .sms = 148,
     .gpus_per_node = 8, .pcie_gbs = 64, .mem_gb = 180, .mem_pj_per_bit = 2.6,
     .clock_step_mhz = 15, GB100, .fp16_tflops = 2250, .tf32_tflops = 1100, .fp32_tflops = 75,
     .measured = 0},
};
#define NKINDS ((int)(sizeof kinds / sizeof *kinds))

static pthread_once_t ranges_once = PTHREAD_ONCE_INIT;

static void fill_ranges(void)
{
    for (int i = 0; i < NKINDS; i++) {
        const struct pflex_gpu_range *r = pflex_gpu_range_find(kinds[i].name);
        /* a kind missing from the table keeps [0, 0]: no cap is settable
         * (tests/test_sim.c checks that every kind is there) */
        if (r) {
            kinds[i].min_cap_w = r->min_cap_w;
            kinds[i].max_cap_w = r->max_cap_w;
            kinds[i].default_cap_w = r->max_cap_w;
        }
    }
}

int pflex_gpu_kind_limits(const char *name, double *min_w, double *max_w, double *default_w)
{
    const struct pflex_gpu_kind *k = pflex_gpu_kind_find(name);
    if (!k)
        return -1;
    if (min_w)
        *min_w = k->min_cap_w;
    if (max_w)
        *max_w = k->max_cap_w;
    if (default_w)
        *default_w = k->default_cap_w;
    return 0;
}

const struct pflex_gpu_kind *pflex_gpu_kind_find(const char *name)
{
    if (!name)
        return NULL;
    pthread_once(&ranges_once, fill_ranges);
    if (!strncasecmp(name, "NVIDIA ", 7))
        name += 7;
    for (int i = 0; i < NKINDS; i++)
        if (!strcasecmp(name, kinds[i].name))
            return &kinds[i];
    /* Short and vendor names resolve through the one table of names. */
    const struct pflex_gpu_range *r = pflex_gpu_range_find(name);
    for (int i = 0; r && i < NKINDS; i++)
        if (!strcmp(r->name, kinds[i].name))
            return &kinds[i];
    return NULL;
}

const struct pflex_gpu_kind *pflex_gpu_kind_at(int i)
{
    pthread_once(&ranges_once, fill_ranges);
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

/* Parameters of one attention block (Q and O: hidden x heads*head_dim, K
 * and V: hidden x kv_heads*head_dim), of an MLP of width f (SwiGLU and
 * GeGLU: three hidden x f matrices; GELU: two), of the embeddings (input
 * and, untied, the LM head). */
static double attn_params(const struct pflex_job_desc *d)
{
    double hd = d->head_dim > 0 ? d->head_dim : (double)d->hidden / d->heads;
    return 2.0 * d->hidden * d->heads * hd + 2.0 * d->hidden * d->kv_heads * hd;
}

static double mlp_params(const struct pflex_job_desc *d, double f)
{
    return (d->mlp == PFLEX_MLP_GELU ? 2.0 : 3.0) * d->hidden * f;
}

static double embed_params(const struct pflex_job_desc *d)
{
    return (d->tied_embeddings ? 1.0 : 2.0) * d->vocab * (double)d->hidden;
}

/* MLP parameters of the whole model: all of them, or those a token passes. */
static double mlp_total(const struct pflex_job_desc *d, int active)
{
    if (d->experts <= 0)
        return d->layers * mlp_params(d, d->ffn_hidden);
    double ef = d->expert_ffn > 0 ? d->expert_ffn : d->ffn_hidden;
    double sf = d->shared_ffn > 0 ? d->shared_ffn : ef;
    int moe_layers = d->layers - d->dense_layers;
    double per = (active ? d->top_k : d->experts) * mlp_params(d, ef)
                 + d->shared_experts * mlp_params(d, sf) + (double)d->hidden * d->experts;
    return d->dense_layers * mlp_params(d, d->ffn_hidden) + moe_layers * per;
}

/* Encoder-decoder: the decoder layers' cross-attention. */
static double cross_params(const struct pflex_job_desc *d)
{
    return d->encoder_layers > 0 ? (d->layers - d->encoder_layers) * attn_params(d) : 0;
}

double pflex_job_params_total_b(const struct pflex_job_desc *d)
{
    return (d->layers * attn_params(d) + cross_params(d) + mlp_total(d, 0) + embed_params(d))
           / 1e9;
}

double pflex_job_params_active_b(const struct pflex_job_desc *d)
{
    return (d->layers * attn_params(d) + cross_params(d) + mlp_total(d, 1) + embed_params(d))
           / 1e9;
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

/* No count negative; the optional shape and layout fields (head_dim,
 * expert_ffn, window, ..., lora_rank) within their bounds. */
static int check_counts(struct pflex_job_desc *d, pflex_error_t *err)
{
#define NONNEG(f) if (d->f < 0) return pflex_error_set(err, "field '" #f "': must not be negative")
    NONNEG(gpus); NONNEG(layers); NONNEG(hidden); NONNEG(heads); NONNEG(ffn_hidden);
    NONNEG(vocab); NONNEG(seq_len); NONNEG(micro_batch); NONNEG(global_batch); NONNEG(experts);
    NONNEG(top_k); NONNEG(dp); NONNEG(tp); NONNEG(pp); NONNEG(ep); NONNEG(kv_heads);
    NONNEG(gen_len); NONNEG(head_dim); NONNEG(expert_ffn); NONNEG(shared_experts);
    NONNEG(shared_ffn); NONNEG(dense_layers); NONNEG(window); NONNEG(window_layers);
    NONNEG(encoder_layers); NONNEG(target_len); NONNEG(gpus_per_node); NONNEG(lora_rank);
#undef NONNEG
    static const struct { const char *name; long max; } more[] = {
        {"head_dim", 1 << 16}, {"expert_ffn", 1 << 22}, {"shared_experts", 64},
        {"shared_ffn", 1 << 22}, {"dense_layers", 10000}, {"window", 1 << 24},
        {"window_layers", 10000}, {"encoder_layers", 10000}, {"target_len", 1 << 24},
        {"gpus_per_node", 64}, {"lora_rank", 1 << 16},
    };
    const int mvals[] = {d->head_dim, d->expert_ffn, d->shared_experts, d->shared_ffn,
                         d->dense_layers, d->window, d->window_layers, d->encoder_layers,
                         d->target_len, d->gpus_per_node, d->lora_rank};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++)
        if (mvals[i] > more[i].max)
            return pflex_error_set(err, "field '%s': %d is more than %ld", more[i].name,
                                   mvals[i], more[i].max);
    return 0;
}

/* The enumerations known; the switches 0 or 1 (compile turns eager off). */
static int check_switches(struct pflex_job_desc *d, pflex_error_t *err)
{
    if ((unsigned)d->mlp > PFLEX_MLP_GELU)
        return pflex_error_set(err, "field 'mlp': unknown MLP %d", d->mlp);
    if ((unsigned)d->attention > PFLEX_ATTN_EAGER)
        return pflex_error_set(err, "field 'attention': unknown attention %d", d->attention);
    if ((unsigned)d->precision > PFLEX_PREC_FP32)
        return pflex_error_set(err, "field 'precision': unknown precision %d", d->precision);
    d->tied_embeddings = d->tied_embeddings != 0;
    d->bidirectional = d->bidirectional != 0;
    d->compile = d->compile != 0;
    d->moe_loop = d->moe_loop != 0 && d->experts > 0;
    if (d->compile)
        d->eager = 0;
    d->act_ckpt = d->act_ckpt != 0;
    d->eager = d->eager != 0;
    return 0;
}

/* The layout, shape and batch counts within their bounds; params_b and
 * zero in range. */
static int check_limits(struct pflex_job_desc *d, pflex_error_t *err)
{
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
    return 0;
}

/* The parallel layout: tp, pp, dp and gpus consistent (dp from
 * gpus/(tp*pp)), the experts, their top_k and ep. */
static int resolve_parallel(struct pflex_job_desc *d, pflex_error_t *err)
{
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
    return 0;
}

/* The model's shape: vocab, hidden (from params_b), heads, kv_heads,
 * layers and ffn_hidden (from params_b and the rest). */
static int resolve_shape(struct pflex_job_desc *d, pflex_error_t *err)
{
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
        double per_layer = attn_params(d) + e * mlp_params(d, d->ffn_hidden);
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
                / (d->layers * (d->mlp == PFLEX_MLP_GELU ? 2.0 : 3.0) * d->hidden * e);
        if (!(f >= d->hidden / 4.0))   /* no count, or one too small for the shape */
            f = e > 1 ? d->hidden * 0.5 : 8.0 / 3.0 * d->hidden;
        if (!(f <= 1 << 24))
            return pflex_error_set(err, "field 'params_b': %g billion parameters in %d layers "
                                   "of hidden %d would need an FFN width of %.3g",
                                   d->params_b, d->layers, d->hidden, f);
        d->ffn_hidden = (int)(f + 0.5);
    }
    return 0;
}

/* The per-layer fields against the shape; lora_rank, params_b (from the
 * shape) and pp against the layers. */
static int resolve_layers(struct pflex_job_desc *d, pflex_error_t *err)
{
    if (d->experts == 0 && (d->expert_ffn || d->shared_experts || d->dense_layers))
        return pflex_error_set(err, "field 'expert_ffn': expert fields need experts");
    if (d->dense_layers > d->layers || d->window_layers > d->layers)
        return pflex_error_set(err, "field 'dense_layers': more than the %d layers", d->layers);
    if (d->encoder_layers >= d->layers && d->encoder_layers > 0)
        return pflex_error_set(err, "field 'encoder_layers': %d leaves no decoder layer of %d",
                               d->encoder_layers, d->layers);
    if (d->window_layers > 0 && d->window == 0)
        return pflex_error_set(err, "field 'window_layers': needs a window");
    if (!d->lora_rank)
        d->lora_rank = 16;
    if (!d->params_b)
        d->params_b = pflex_job_params_total_b(d);
    if (d->pp > d->layers)
        return pflex_error_set(err, "field 'pp': %d stages for %d layers", d->pp, d->layers);
    return 0;
}

/* The sequence and the batches: seq_len, target_len, micro_batch,
 * global_batch, gen_len. */
static int resolve_batch(struct pflex_job_desc *d, pflex_error_t *err)
{
    if (!d->seq_len)
        d->seq_len = 2048;
    if (d->encoder_layers > 0 && !d->target_len)
        d->target_len = d->seq_len / 4 > 0 ? d->seq_len / 4 : 1;
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
    if (check_counts(d, err) || check_switches(d, err) || check_limits(d, err)
        || resolve_parallel(d, err) || resolve_shape(d, err) || resolve_layers(d, err)
        || resolve_batch(d, err))
        return -1;
    return 0;
}

int pflex_job_field_set(struct pflex_job_desc *d, const char *key, char type, double num,
                        const char *str, const char **why)
{
    static const struct { const char *key; size_t off; } ints[] = {
#define F(k) {#k, offsetof(struct pflex_job_desc, k)}
        F(head_dim), F(expert_ffn), F(shared_experts), F(shared_ffn), F(dense_layers), F(window),
        F(window_layers), F(encoder_layers), F(target_len), F(gpus_per_node), F(lora_rank),
    }, bools[] = {
        F(tied_embeddings), F(bidirectional), F(compile), F(moe_loop), F(reduce_fp32),
        F(lora_experts), F(fused_norm), F(qk_norm),
#undef F
    };
    static const struct { const char *key; size_t off; const char *names[4]; } enums[] = {
        {"mlp", offsetof(struct pflex_job_desc, mlp), {"swiglu", "geglu", "gelu", NULL}},
        {"attention", offsetof(struct pflex_job_desc, attention), {"flash", "eager", NULL, NULL}},
        {"precision", offsetof(struct pflex_job_desc, precision), {"bf16", "fp16", "tf32", "fp32"}},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (!strcmp(key, ints[i].key)) {
            if (type != 'n' || num != floor(num) || num < 0 || num > 1 << 24) {
                *why = "must be a whole number from 0 to 16777216";
                return -1;
            }
            *(int *)((char *)d + ints[i].off) = (int)num;
            return 1;
        }
    for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
        if (!strcmp(key, bools[i].key)) {
            if (type != 'b') {
                *why = "must be true or false";
                return -1;
            }
            *(int *)((char *)d + bools[i].off) = num != 0;
            return 1;
        }
    for (size_t i = 0; i < sizeof enums / sizeof *enums; i++)
        if (!strcmp(key, enums[i].key)) {
            for (int k = 0; type == 's' && str && k < 4 && enums[i].names[k]; k++)
                if (!strcasecmp(str, enums[i].names[k])) {
                    *(int *)((char *)d + enums[i].off) = k;
                    return 1;
                }
            *why = i == 0 ? "must be \"swiglu\", \"geglu\" or \"gelu\""
                   : i == 1 ? "must be \"flash\" or \"eager\""
                            : "must be \"bf16\", \"fp16\", \"tf32\" or \"fp32\"";
            return -1;
        }
    return 0;
}
