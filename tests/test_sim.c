/* test_sim.c — the physical GPU model: what a user of the sim backend
 * relies on.  Everything is seeded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/flex/curve.h"
#include "pflex/flex/pfi.h"
#include "pflex/sim/calib.h"
#include "pflex/util/gpukind.h"
#include "pflex/sim/sim.h"
#include "pflex/io/sweep.h"

static pflex_sim_job_t *make(const struct pflex_job_desc *d, uint64_t seed)
{
    pflex_sim_job_t *j = NULL;
    pflex_error_t err;
    int rc = pflex_sim_job_create(d, seed, &j, &err);
    if (rc)
        fprintf(stderr, "create: %s\n", err.text);
    assert_int_equal(rc, 0);
    return j;
}

static pflex_sim_job_t *preset(const char *name, uint64_t seed)
{
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find(name, &d), 0);
    return make(&d, seed);
}

/* PFI (range 0.30) of a noise-free sweep over the kind's range in 11 caps. */
static double pfi_of(pflex_sim_job_t *j)
{
    const struct pflex_gpu_kind *k = pflex_sim_job_kind(j);
    struct pflex_sweep_point pts[11];
    for (int i = 0; i < 11; i++) {
        struct pflex_sim_measure m;
        double cap = k->max_cap_w - i * (k->max_cap_w - k->min_cap_w) / 10;
        assert_int_equal(pflex_sim_job_expect(j, cap, &m, NULL), 0);
        pts[i] = (struct pflex_sweep_point){cap, m.power_w, m.throughput, 1, 0};
    }
    struct pflex_curve c;
    assert_int_equal(pflex_curve_init(&c, pts, 11, NULL), 0);
    struct pflex_pfi p;
    pflex_pfi_compute(&c, PFLEX_PFI_RANGE_DEFAULT, &p);
    pflex_curve_fini(&c);
    assert_true(p.valid);
    return p.pfi;
}

static void test_kinds(void **state)
{
    const struct pflex_gpu_kind *h100 = pflex_gpu_kind_find("H100");
    const struct pflex_gpu_kind *h200 = pflex_gpu_kind_find("h200-sxm-141gb");
    assert_non_null(h100);
    assert_non_null(h200);
    assert_string_equal(h100->name, "H100-SXM5-80GB");
    assert_true(h100->min_cap_w == 200 && h100->max_cap_w == 700 && h100->sms == 132);
    assert_true(h200->mem_bw_gbs > h100->mem_bw_gbs && h200->bf16_tflops == h100->bf16_tflops);
    assert_non_null(pflex_gpu_kind_find("A100-40"));
    assert_non_null(pflex_gpu_kind_find("A100-80"));
    assert_non_null(pflex_gpu_kind_find("NVIDIA A40"));
    assert_null(pflex_gpu_kind_find("K80"));
    assert_non_null(pflex_gpu_kind_find("V100"));
    assert_non_null(pflex_gpu_kind_find("L40S"));
    assert_non_null(pflex_gpu_kind_find("B200"));
    int n = 0;
    for (const struct pflex_gpu_kind *k; (k = pflex_gpu_kind_at(n)); n++) {
        assert_true(k->min_cap_w < k->max_cap_w && k->idle_w < k->min_cap_w);
        assert_true(k->sm_clock_min_mhz < k->sm_clock_max_mhz && k->mem_bw_gbs > 0);
    }
    assert_true(n >= 5);
}

/* Every kind takes its settable range from the one table of ranges
 * (pflex/util/gpukind.h), under its own name, and the table has no kind the
 * simulator lacks; a job on each kind accepts caps at the ends of that
 * range, refuses caps a watt beyond, and starts at its highest. */
static void test_kind_ranges(void **state)
{
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find("llama-8b-lora-h200", &d), 0);
    int n = 0;
    for (const struct pflex_gpu_kind *k; (k = pflex_gpu_kind_at(n)); n++) {
        const struct pflex_gpu_range *r = pflex_gpu_range_find(k->name);
        assert_non_null(r);
        assert_string_equal(r->name, k->name);
        double lo, hi, def;
        assert_int_equal(pflex_gpu_kind_limits(k->name, &lo, &hi, &def), 0);
        assert_true(lo == r->min_cap_w && hi == r->max_cap_w && def == r->max_cap_w);
        snprintf(d.gpu, sizeof d.gpu, "%s", k->name);
        pflex_sim_job_t *j = make(&d, 1);
        pflex_gpu_t g;
        pflex_sim_job_gpu(j, &g);
        pflex_error_t err;
        struct pflex_gpu_limits lim;
        double cap;
        assert_int_equal(pflex_gpu_limits(&g, 0, &lim, &err), 0);
        assert_true(lim.min_w == r->min_cap_w && lim.max_w == r->max_cap_w);
        assert_int_equal(pflex_gpu_get_cap(&g, 0, &cap, &err), 0);
        assert_true(cap == r->max_cap_w);
        assert_int_equal(pflex_gpu_set_cap(&g, 0, r->min_cap_w, &err), 0);
        assert_int_equal(pflex_gpu_set_cap(&g, 0, r->max_cap_w, &err), 0);
        assert_int_equal(pflex_gpu_set_cap(&g, 0, r->min_cap_w - 1, &err), -1);
        assert_int_equal(pflex_gpu_set_cap(&g, 0, r->max_cap_w + 1, &err), -1);
        pflex_gpu_close(&g);
        pflex_sim_job_destroy(j);
    }
    int m = 0;
    while (pflex_gpu_range_at(m))
        m++;
    assert_int_equal(m, n);
}

/* Throughput never rises as the cap falls (beyond noise), power stays
 * under the cap, the SM clock falls while the memory clock stays. */
static void test_cap_physics(void **state)
{
    const char *jobs[] = {"llama-8b-pretrain-h200", "llama-8b-infer-h200",
                          "mixtral-8x7b-pretrain-h200", "emerald-ft-llama-8b-dolly",
                          "llama-8b-lora-h200"};
    for (size_t n = 0; n < sizeof jobs / sizeof *jobs; n++) {
        pflex_sim_job_t *j = preset(jobs[n], 7);
        const struct pflex_gpu_kind *k = pflex_sim_job_kind(j);
        double prev_t = INFINITY, prev_clk = INFINITY, top_clk = 0;
        for (int i = 0; i <= 20; i++) {
            double cap = k->max_cap_w - i * (k->max_cap_w - k->min_cap_w) / 20;
            struct pflex_sim_measure e, m;
            assert_int_equal(pflex_sim_job_expect(j, cap, &e, NULL), 0);
            assert_int_equal(pflex_sim_job_measure(j, cap, &m, NULL), 0);
            assert_true(e.throughput <= prev_t * (1 + 1e-9));
            assert_true(e.tm[PFLEX_TM_SM_CLOCK_MHZ] <= prev_clk + 1e-6);
            assert_true(m.throughput <= prev_t * 1.04);   /* noise is ~0.7% */
            assert_true(e.power_w <= cap);
            assert_true(m.power_w <= cap * 1.02);         /* noise is ~0.5% */
            assert_true(fabs(m.tm[PFLEX_TM_MEM_CLOCK_MHZ] - k->mem_clock_mhz) < 1e-9);
            if (i == 0)
                top_clk = e.tm[PFLEX_TM_SM_CLOCK_MHZ];
            prev_t = e.throughput;
            prev_clk = e.tm[PFLEX_TM_SM_CLOCK_MHZ];
        }
        assert_true(prev_clk < 0.8 * top_clk);   /* the lowest cap slows the SMs */
        pflex_sim_job_destroy(j);
    }
}

static void test_telemetry_ranges(void **state)
{
    pflex_sim_job_t *j = preset("llama-70b-pretrain-h200", 3);
    for (double cap = 700; cap >= 200; cap -= 100) {
        struct pflex_sim_measure m;
        assert_int_equal(pflex_sim_job_measure(j, cap, &m, NULL), 0);
        for (int f = PFLEX_TM_SM_ACTIVE; f <= PFLEX_TM_GR_ENGINE_ACTIVE; f++)
            assert_true(m.tm[f] >= 0 && m.tm[f] <= 1);
        assert_true(m.tm[PFLEX_TM_GPU_UTIL] > 50 && m.tm[PFLEX_TM_GPU_UTIL] <= 100);
        assert_true(m.tm[PFLEX_TM_MEM_COPY_UTIL] >= 0 && m.tm[PFLEX_TM_MEM_COPY_UTIL] <= 100);
        assert_true(m.tm[PFLEX_TM_TENSOR_ACTIVE] > 0.2);    /* a big dense job */
        assert_true(m.tm[PFLEX_TM_NVLINK_TX_BYTES] > 1e9);  /* tp 8 inside the node */
        assert_true(m.tm[PFLEX_TM_PCIE_RX_BYTES] > 0);
    }
    pflex_sim_job_destroy(j);
}

/* Memory-bound work (decode with a small batch) keeps its pace under caps;
 * compute-bound pretraining does not. */
static void test_memory_bound_more_flexible(void **state)
{
    struct pflex_job_desc infer, train;
    assert_int_equal(pflex_job_preset_find("llama-8b-infer-h200", &infer), 0);
    assert_int_equal(pflex_job_preset_find("llama-8b-pretrain-h200", &train), 0);
    infer.micro_batch = 4;
    infer.seq_len = 8192;
    pflex_sim_job_t *a = make(&infer, 1), *b = make(&train, 1);
    double pa = pfi_of(a), pb = pfi_of(b);
    assert_true(pa > pb + 0.15);
    struct pflex_sim_measure m;
    pflex_sim_job_expect(a, 700, &m, NULL);
    double dram_a = m.tm[PFLEX_TM_DRAM_ACTIVE], tens_a = m.tm[PFLEX_TM_TENSOR_ACTIVE];
    pflex_sim_job_expect(b, 700, &m, NULL);
    assert_true(dram_a > m.tm[PFLEX_TM_DRAM_ACTIVE]);
    assert_true(tens_a < m.tm[PFLEX_TM_TENSOR_ACTIVE]);
    pflex_sim_job_destroy(a);
    pflex_sim_job_destroy(b);
}

/* The power loop reacts over tens of milliseconds while a micro-step's
 * GEMMs and memory-bound kernels alternate every few hundred microseconds,
 * so it holds their time-averaged power at the cap with one clock: a
 * binding cap is used in full, and the memory-bound kernels give up power
 * at the lower clock without slowing.  Unfused eager kernels (more
 * memory-bound time) draw less at a given clock: under the same cap they
 * run a higher clock, or draw less where the cap does not bind.  (Whether they
 * make a job more flexible is not asserted: the study's compile / no-compile
 * pairs go both ways, PAPER.md section 4.) */
static void test_cap_averages_interleaved_kernels(void **state)
{
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find("llama-8b-lora-h200", &d), 0);
    pflex_sim_job_t *fused = make(&d, 2);
    d.eager = 1;
    pflex_sim_job_t *eager = make(&d, 2);
    struct pflex_sim_measure mf, me;
    assert_int_equal(pflex_sim_job_expect(fused, 700, &mf, NULL), 0);
    assert_int_equal(pflex_sim_job_expect(eager, 700, &me, NULL), 0);
    assert_true(me.power_w < mf.power_w - 20
                || me.tm[PFLEX_TM_SM_CLOCK_MHZ] > mf.tm[PFLEX_TM_SM_CLOCK_MHZ] + 20);
    assert_true(me.tm[PFLEX_TM_DRAM_ACTIVE] > mf.tm[PFLEX_TM_DRAM_ACTIVE]);
    /* Caps just under the natural draw bind the GEMMs, not the memory-bound
     * kernels alone; the average still reaches the cap. */
    double p0 = me.power_w;
    for (double cap = p0 - 10; cap >= 300; cap -= 40) {
        assert_int_equal(pflex_sim_job_expect(eager, cap, &me, NULL), 0);
        assert_true(me.power_w > 0.98 * cap && me.power_w <= cap);
    }
    pflex_sim_job_destroy(fused);
    pflex_sim_job_destroy(eager);
}

/* The same layout and tokens on one GPU: a narrow model (2048 wide) moves
 * more elementwise bytes per GEMM FLOP than a wide one (5120): more of its
 * step is memory-bound.  (How much that moves PFI is the calibration's
 * business, against measured curves; no margin is asserted here.) */
static void test_narrow_model_more_flexible(void **state)
{
    struct pflex_job_desc narrow = {
        .name = "narrow", .gpu = "H200", .gpus = 1, .layers = 16, .hidden = 2048, .heads = 16,
        .kv_heads = 8, .ffn_hidden = 8192, .vocab = 32000, .kind = PFLEX_JOB_PRETRAIN,
        .seq_len = 4096, .micro_batch = 1, .global_batch = 16,
    };
    struct pflex_job_desc wide = narrow;
    wide.name[0] = 'w';
    wide.layers = 40;
    wide.hidden = 5120;
    wide.heads = wide.kv_heads = 40;
    wide.ffn_hidden = 13824;
    pflex_sim_job_t *a = make(&narrow, 4), *b = make(&wide, 4);
    struct pflex_sim_breakdown ba, bb;
    assert_int_equal(pflex_sim_job_breakdown(a, 0, &ba, NULL), 0);
    assert_int_equal(pflex_sim_job_breakdown(b, 0, &bb, NULL), 0);
    assert_true(ba.memory > bb.memory);
    assert_true(pfi_of(a) > pfi_of(b) - 0.02);
    pflex_sim_job_destroy(a);
    pflex_sim_job_destroy(b);
}

/* MoE: experts spread over nodes add all-to-all traffic that the cap does
 * not slow, so the job is more flexible than a dense model of the same
 * active size on the same GPUs. */
static void test_moe_vs_dense(void **state)
{
    struct pflex_job_desc moe = {
        .name = "moe", .gpu = "H200", .gpus = 32, .layers = 32, .hidden = 4096, .heads = 32,
        .kv_heads = 8, .ffn_hidden = 14336, .experts = 16, .top_k = 2, .ep = 16,
        .kind = PFLEX_JOB_PRETRAIN, .seq_len = 4096, .micro_batch = 1, .global_batch = 256,
        .zero = 1, .act_ckpt = 1,
    };
    struct pflex_job_desc dense = moe;
    dense.experts = dense.top_k = 0;
    dense.ep = 1;
    dense.ffn_hidden = 2 * 14336;           /* the same active FFN width */
    pflex_sim_job_t *a = make(&moe, 5), *b = make(&dense, 5);
    assert_true(pflex_job_params_total_b(pflex_sim_job_desc(a))
                > 2 * pflex_job_params_active_b(pflex_sim_job_desc(a)));
    struct pflex_sim_breakdown ba, bb;
    assert_int_equal(pflex_sim_job_breakdown(a, 0, &ba, NULL), 0);
    assert_int_equal(pflex_sim_job_breakdown(b, 0, &bb, NULL), 0);
    assert_true(ba.comm_exposed > bb.comm_exposed);
    assert_true(pfi_of(a) > pfi_of(b) + 0.03);
    pflex_sim_job_destroy(a);
    pflex_sim_job_destroy(b);
}

/* From 1 to 32 GPUs: throughput grows, but less than linearly once traffic
 * crosses nodes, and the slowest GPU sets the pace. */
static void test_scaling(void **state)
{
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find("llama-8b-pretrain-h100", &d), 0);
    /* Plain data parallel: with ZeRO-1 each GPU's share of the optimizer
     * step shrinks with dp, which is a real (about 1%) super-linear gain. */
    d.zero = 0;
    double t1 = 0, prev = 0;
    int counts[] = {1, 2, 4, 8, 16, 32};
    for (size_t i = 0; i < 6; i++) {
        d.gpus = counts[i];
        d.dp = 0;
        d.global_batch = 16 * counts[i];
        pflex_sim_job_t *j = make(&d, 11);
        struct pflex_sim_measure m;
        assert_int_equal(pflex_sim_job_expect(j, 700, &m, NULL), 0);
        if (i == 0)
            t1 = m.throughput;
        assert_true(m.throughput > prev);
        /* Each job draws its own silicon (the seed is mixed with the
         * description), so a larger job's slowest GPU may be a little
         * faster than the 1-GPU job's: 1 % slack. */
        assert_true(m.throughput <= t1 * counts[i] * 1.01);
        prev = m.throughput;
        pflex_sim_job_destroy(j);
    }
    assert_true(prev < 32 * t1 && prev > 16 * t1);

    /* 32 GPUs each as fast as the slowest alone would be: the job is no
     * faster than its slowest member. */
    d.gpus = 32;
    d.dp = 0;
    d.global_batch = 512;
    pflex_sim_job_t *j = make(&d, 99);
    pflex_gpu_t g;
    pflex_sim_job_gpu(j, &g);
    struct pflex_sim_measure all, one_slow;
    assert_int_equal(pflex_sim_job_expect(j, 400, &all, NULL), 0);
    assert_int_equal(pflex_gpu_set_cap(&g, 7, 300, NULL), 0);
    assert_int_equal(pflex_sim_job_expect(j, 0, &one_slow, NULL), 0);
    assert_true(one_slow.throughput < all.throughput * 0.95);  /* one GPU drags all 32 */
    assert_true(one_slow.power_w < all.power_w);
    pflex_sim_job_destroy(j);
}

/* Every kind, a small and a large job: the expected power never exceeds
 * the cap, and the top cap leaves the job at its natural draw. */
static void test_all_kinds_under_cap(void **state)
{
    for (int i = 0; pflex_gpu_kind_at(i); i++) {
        const struct pflex_gpu_kind *k = pflex_gpu_kind_at(i);
        for (int big = 0; big < 2; big++) {
            struct pflex_job_desc d = {.gpus = big ? 16 : 1, .params_b = big ? 13 : 0.5,
                                       .kind = big ? PFLEX_JOB_PRETRAIN : PFLEX_JOB_INFERENCE,
                                       .micro_batch = big ? 2 : 8, .zero = big ? 3 : 0};
            snprintf(d.gpu, sizeof d.gpu, "%s", k->name);
            pflex_sim_job_t *j = make(&d, 21);
            double prev = INFINITY;
            for (double cap = k->max_cap_w; cap >= k->min_cap_w; cap -= 10) {
                struct pflex_sim_measure m;
                assert_int_equal(pflex_sim_job_expect(j, cap, &m, NULL), 0);
                assert_true(m.power_w <= cap);
                assert_true(m.power_w > k->idle_w);
                assert_true(m.throughput > 0 && m.throughput <= prev * (1 + 1e-9));
                prev = m.throughput;
            }
            pflex_sim_job_destroy(j);
        }
    }
}

/* Inference replicas do not wait for each other: one capped replica costs
 * only its own share of the throughput. */
static void test_inference_replicas_independent(void **state)
{
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find("emerald-infer-llama-8b", &d), 0);
    pflex_sim_job_t *j = make(&d, 8);
    pflex_gpu_t g;
    pflex_sim_job_gpu(j, &g);
    struct pflex_sim_measure all, one, low;
    assert_int_equal(pflex_sim_job_expect(j, 400, &all, NULL), 0);
    assert_int_equal(pflex_sim_job_expect(j, 150, &low, NULL), 0);
    assert_int_equal(pflex_sim_job_expect(j, 400, &all, NULL), 0);
    assert_int_equal(pflex_gpu_set_cap(&g, 0, 150, NULL), 0);
    assert_int_equal(pflex_sim_job_expect(j, 0, &one, NULL), 0);
    double lost = (all.throughput - one.throughput) / all.throughput;
    double want = (1 - low.throughput / all.throughput) / 48;
    assert_true(fabs(lost - want) < 0.1 * want);
    pflex_sim_job_destroy(j);
}

static void test_determinism(void **state)
{
    struct pflex_sim_measure a[6], b[6], c[6];
    for (int s = 0; s < 3; s++) {
        pflex_sim_job_t *j = preset("mixtral-8x7b-pretrain-h200", s == 2 ? 43 : 42);
        for (int i = 0; i < 6; i++)
            assert_int_equal(pflex_sim_job_measure(j, 700 - 100 * i,
                                                   (s == 0 ? a : s == 1 ? b : c) + i, NULL), 0);
        pflex_sim_job_destroy(j);
    }
    for (int i = 0; i < 6; i++) {
        assert_true(a[i].power_w == b[i].power_w && a[i].throughput == b[i].throughput);
        assert_memory_equal(a[i].tm, b[i].tm, sizeof a[i].tm);
        assert_true(a[i].throughput != c[i].throughput);
        assert_true(fabs(a[i].throughput / c[i].throughput - 1) < 0.06);
    }
    /* Repeated windows differ by noise only. */
    pflex_sim_job_t *j = preset("llama-8b-pretrain-h200", 1);
    struct pflex_sim_measure m1, m2, e;
    pflex_sim_job_measure(j, 500, &m1, NULL);
    pflex_sim_job_measure(j, 500, &m2, NULL);
    pflex_sim_job_expect(j, 500, &e, NULL);
    assert_true(m1.throughput != m2.throughput);
    assert_true(fabs(m1.throughput / e.throughput - 1) < 0.04);
    pflex_sim_job_destroy(j);
}

/* Same job, H100 against H200: the same tensor rate and more bandwidth
 * make the H200 faster and leave memory-bound kernels a smaller share. */
static void test_h100_vs_h200(void **state)
{
    pflex_sim_job_t *a = preset("llama-8b-pretrain-h100", 2), *b = preset("llama-8b-pretrain-h200", 2);
    struct pflex_sim_measure ma, mb;
    pflex_sim_job_expect(a, 700, &ma, NULL);
    pflex_sim_job_expect(b, 700, &mb, NULL);
    assert_true(mb.throughput > ma.throughput);
    assert_true(mb.throughput < ma.throughput * 1.3);
    struct pflex_sim_breakdown ba, bb;
    pflex_sim_job_breakdown(a, 0, &ba, NULL);
    pflex_sim_job_breakdown(b, 0, &bb, NULL);
    assert_true(bb.memory + bb.optimizer < ba.memory + ba.optimizer);
    assert_true(bb.gemm > ba.gemm);
    /* Decode is bandwidth-bound: the H200 gains about its bandwidth ratio. */
    struct pflex_job_desc d;
    pflex_job_preset_find("llama-8b-infer-h200", &d);
    d.micro_batch = 1;
    pflex_sim_job_t *c = make(&d, 2);
    snprintf(d.gpu, sizeof d.gpu, "H100");
    pflex_sim_job_t *e = make(&d, 2);
    pflex_sim_job_expect(c, 700, &ma, NULL);
    pflex_sim_job_expect(e, 700, &mb, NULL);
    assert_true(ma.throughput / mb.throughput > 1.25);
    pflex_sim_job_destroy(a);
    pflex_sim_job_destroy(b);
    pflex_sim_job_destroy(c);
    pflex_sim_job_destroy(e);
}

/* The sim as a gpu_ops backend: caps set there govern measure. */
static void test_gpu_ops(void **state)
{
    pflex_sim_job_t *j = preset("llama-8b-pretrain-h200", 4);
    pflex_gpu_t g;
    pflex_sim_job_gpu(j, &g);
    unsigned n;
    pflex_error_t err;
    assert_int_equal(pflex_gpu_count(&g, &n, &err), 0);
    assert_int_equal(n, 8);
    struct pflex_gpu_limits lim;
    assert_int_equal(pflex_gpu_limits(&g, 0, &lim, &err), 0);
    assert_true(lim.min_w == 200 && lim.max_w == 700);
    char name[64];
    assert_int_equal(pflex_gpu_describe(&g, 3, name, sizeof name, &err), 0);
    assert_non_null(strstr(name, "H200"));
    assert_int_equal(pflex_gpu_set_cap(&g, 0, 100, &err), -1);
    assert_int_equal(pflex_gpu_set_cap(&g, 8, 300, &err), -1);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(pflex_gpu_set_cap(&g, i, 350, &err), 0);
    double cap;
    assert_int_equal(pflex_gpu_get_cap(&g, 5, &cap, &err), 0);
    assert_true(cap == 350);
    struct pflex_sim_measure via_ops, direct;
    assert_int_equal(pflex_sim_job_expect(j, 0, &via_ops, &err), 0);
    assert_true(via_ops.cap_w == 350);
    assert_int_equal(pflex_sim_job_expect(j, 350, &direct, &err), 0);
    assert_true(via_ops.throughput == direct.throughput);
    struct pflex_gpu_sample s1, s2;
    assert_int_equal(pflex_gpu_sample(&g, 2, &s1, &err), 0);
    assert_int_equal(pflex_gpu_sample(&g, 2, &s2, &err), 0);
    assert_true(s1.power_w <= 350 * 1.02 && s1.power_w > 200);
    assert_true(s2.energy_j > s1.energy_j);
    assert_true(s1.tm[PFLEX_TM_SM_CLOCK_MHZ] < 1980);
    pflex_gpu_close(&g);                    /* the job stays alive */
    assert_int_equal(pflex_sim_job_expect(j, 700, &direct, &err), 0);
    pflex_sim_job_destroy(j);
}

static void test_bad_descriptions(void **state)
{
    struct pflex_job_desc d;
    pflex_sim_job_t *j = NULL;
    pflex_error_t err;
    assert_int_equal(pflex_job_preset_find("llama-8b-pretrain-h200", &d), 0);
    d.tp = 3;
    d.dp = 0;
    assert_int_equal(pflex_sim_job_create(&d, 1, &j, &err), -1);
    assert_non_null(strstr(err.text, "field 'gpus'"));
    assert_null(j);
    pflex_job_preset_find("llama-8b-pretrain-h200", &d);
    snprintf(d.gpu, sizeof d.gpu, "TPUv5");
    assert_int_equal(pflex_sim_job_create(&d, 1, &j, &err), -1);
    assert_non_null(strstr(err.text, "field 'gpu'"));
    pflex_job_preset_find("mixtral-8x7b-pretrain-h200", &d);
    d.ep = 3;
    assert_int_equal(pflex_sim_job_create(&d, 1, &j, &err), -1);
    assert_non_null(strstr(err.text, "field 'ep'"));
    /* Absurd sizes are refused, not overflowed. */
    struct pflex_job_desc huge = {.gpu = "H100", .params_b = 1, .tp = 1000000000,
                                  .pp = 1000000000, .kind = PFLEX_JOB_PRETRAIN};
    assert_int_equal(pflex_job_desc_resolve(&huge, &err), -1);
    assert_non_null(strstr(err.text, "field 'tp'"));
    huge = (struct pflex_job_desc){.gpu = "H100", .gpus = 65536, .params_b = 1,
                                   .micro_batch = 1 << 20, .global_batch = 1,
                                   .kind = PFLEX_JOB_PRETRAIN};
    assert_int_equal(pflex_job_desc_resolve(&huge, &err), -1);
    assert_non_null(strstr(err.text, "field 'global_batch'"));
    /* A tiny model still has positive work. */
    struct pflex_job_desc tiny = {.gpu = "A40", .params_b = 0.001, .kind = PFLEX_JOB_PRETRAIN};
    pflex_sim_job_t *t = make(&tiny, 1);
    struct pflex_sim_measure m;
    assert_int_equal(pflex_sim_job_expect(t, 300, &m, &err), 0);
    assert_true(m.throughput > 0 && isfinite(m.throughput) && m.power_w > 0);
    pflex_sim_job_destroy(t);
    /* A description with only a parameter count gets a Llama-like shape. */
    struct pflex_job_desc s = {.gpu = "H100", .gpus = 4, .params_b = 7, .kind = PFLEX_JOB_PRETRAIN};
    assert_int_equal(pflex_job_desc_resolve(&s, &err), 0);
    assert_true(s.hidden == 4096 && s.layers > 20 && s.layers < 40 && s.dp == 4);
}

static void test_presets(void **state)
{
    const char *name;
    int n = 0;
    for (const char *summary; (name = pflex_job_preset_at(n, &summary)); n++) {
        struct pflex_job_desc d;
        assert_non_null(summary);
        assert_int_equal(pflex_job_preset_find(name, &d), 0);
        assert_string_equal(d.name, name);
        pflex_sim_job_t *j = make(&d, 1);
        double p = pfi_of(j);
        assert_true(p > 0 && p < 1);
        pflex_sim_job_destroy(j);
    }
    assert_true(n >= 10);
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find("no-such-preset", &d), -1);
}

/* Absolute throughput against public measurements (llm-foundry's MPT
 * benchmarks on 8 x H100 and 8 x A100, FSDP full shard; calib.c): within
 * 0.75-1.40x of each.  The calibration gives 0.92-1.09x on A100 and
 * 1.21-1.36x on H100: the real H200 runs (2026 software) hold 1.9 GHz at
 * the power limit and the fitted GEMM efficiency follows them; llm-foundry's
 * 2023 H100 rows are slower than that (docs/sim-model.md section 7). */
static void test_absolute_throughput(void **state)
{
    for (int i = 0; i < PFLEX_CALIB_MFU_POINTS; i++) {
        const struct pflex_calib_mfu *p = &pflex_calib_mfu_points[i];
        struct pflex_job_desc d;
        assert_int_equal(pflex_calib_mfu_desc(p, &d), 0);
        pflex_sim_job_t *j = make(&d, 1);
        struct pflex_sim_measure m;
        assert_int_equal(pflex_sim_job_expect(j, pflex_sim_job_kind(j)->max_cap_w, &m, NULL), 0);
        double r = m.throughput / d.gpus / p->tokens_per_gpu;
        printf("%-28s simulated / measured %.2f\n", p->name, r);
        if (r < 0.75 || r > 1.40)
            fail_msg("%s: %.0f tokens/s per GPU simulated, %.0f measured", p->name,
                     m.throughput / d.gpus, p->tokens_per_gpu);
        pflex_sim_job_destroy(j);
    }
}

/* Out of sample: eleven more rows of the same public benchmark tables
 * (llm-foundry, scripts/train/benchmarking/README.md; MPT 125M to 7B, 8
 * GPUs, FSDP full shard, bf16) that the calibration never saw, from 125M to
 * 7B parameters on three kinds.  Each within 0.75-1.45x, the mean |log
 * ratio| under 0.15 (measured: 1.01-1.43x, 0.142, since the device runs'
 * counters are averaged over the loops alone and the fit's GEMM efficiency
 * rose 0.749 -> 0.775; 0.98-1.40x, 0.119 before; 0.96-1.36x, 0.101 before
 * the DRAM efficiency was fitted; docs/sim-model.md section 5; H100 rows run
 * fast, as in sample: the smallest, 1536 wide, at 1.43x). */
static void test_throughput_out_of_sample(void **state)
{
    static const struct {
        const char *gpu;
        int layers, hidden, heads, seq, mb, ga, ckpt;
        double tokens_per_gpu;
    } c[] = {
        {"A100-SXM4-80GB", 12, 768, 12, 2048, 40, 2, 0, 142830},
        {"A100-SXM4-80GB", 24, 1024, 16, 2048, 32, 2, 0, 58782},
        {"A100-SXM4-80GB", 24, 1536, 12, 2048, 24, 2, 0, 32434},
        {"A100-SXM4-80GB", 24, 2048, 16, 2048, 14, 4, 0, 20513},
        {"A100-SXM4-80GB", 32, 2560, 20, 2048, 10, 2, 0, 10811},
        {"A100-SXM4-80GB", 32, 4096, 32, 2048, 6, 2, 0, 4641},
        {"H100-SXM5-80GB", 24, 1536, 12, 2048, 24, 2, 0, 63147},
        {"H100-SXM5-80GB", 24, 2048, 16, 2048, 14, 1, 0, 45455},
        {"H100-SXM5-80GB", 32, 2560, 20, 1024, 20, 6, 0, 27046},
        {"A100-SXM4-40GB", 32, 4096, 32, 2048, 12, 4, 1, 3679},
        {"A100-SXM4-40GB", 32, 2560, 20, 2048, 5, 8, 0, 10065},
    };
    double sum = 0;
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        struct pflex_job_desc d;
        memset(&d, 0, sizeof d);
        snprintf(d.gpu, sizeof d.gpu, "%s", c[i].gpu);
        d.gpus = 8;
        d.layers = c[i].layers;
        d.hidden = c[i].hidden;
        d.heads = c[i].heads;
        d.ffn_hidden = 4 * c[i].hidden;
        d.mlp = PFLEX_MLP_GELU;
        d.vocab = 50432;
        d.tied_embeddings = 1;
        d.seq_len = c[i].seq;
        d.micro_batch = c[i].mb;
        d.global_batch = c[i].mb * c[i].ga * 8;
        d.kind = PFLEX_JOB_PRETRAIN;
        d.zero = 3;
        d.act_ckpt = c[i].ckpt;
        pflex_sim_job_t *j = make(&d, 1);
        struct pflex_sim_measure m;
        assert_int_equal(pflex_sim_job_expect(j, pflex_sim_job_kind(j)->max_cap_w, &m, NULL), 0);
        double r = m.throughput / 8 / c[i].tokens_per_gpu;
        printf("%s %d x %d: simulated / measured %.2f\n", c[i].gpu, c[i].layers, c[i].hidden, r);
        if (r < 0.75 || r > 1.45)
            fail_msg("%s %d x %d: %.0f tokens/s per GPU simulated, %.0f measured", c[i].gpu,
                     c[i].layers, c[i].hidden, m.throughput / 8, c[i].tokens_per_gpu);
        sum += fabs(log(r));
        pflex_sim_job_destroy(j);
    }
    printf("out-of-sample throughput: mean |log ratio| %.3f\n", sum / (sizeof c / sizeof *c));
    assert_true(sum / (sizeof c / sizeof *c) < 0.15);
}

static int desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The mean of the top frac of v[0..n), all of v sorted first. */
static double top_mean_sorted(double *v, size_t n, double frac)
{
    size_t k = (size_t)ceil(frac * (double)n);
    double s = 0;
    qsort(v, n, sizeof *v, desc);
    for (size_t i = 0; i < (k ? k : 1); i++)
        s += v[i];
    return s / (double)(k ? k : 1);
}

/* Published MoE training throughputs of Qwen3-30B-A3B (tokens/s per GPU),
 * never fitted (docs/sim-model.md section 5).  torchtitan, FSDP 8, EP 1,
 * 8 x B200, sequence 8192, batch 8, selective recomputation, compiled,
 * fp32 gradient reduce (its default): 19,500 (mlc-ai/pith-train issue 79);
 * the model with full and without recomputation brackets it.  The two
 * 8 x H100 runs of the NeMo AutoModel post (Transformers 5 FSDP EP 1:
 * 3,075; NeMo AutoModel EP 8 with Transformer Engine and DeepEP: 11,340)
 * are printed: neither runs what the model's grouped GEMMs are measured on
 * (section 6). */
static void qwen3_moe(struct pflex_job_desc *d, const char *gpu, int seq, int mb, int ep,
                      int ckpt, int compile)
{
    memset(d, 0, sizeof *d);
    snprintf(d->gpu, sizeof d->gpu, "%s", gpu);
    d->gpus = 8;
    d->params_b = 30.5;
    d->layers = 48;
    d->hidden = 2048;
    d->heads = 32;
    d->kv_heads = 4;
    d->head_dim = 128;
    d->ffn_hidden = 6144;
    d->experts = 128;
    d->top_k = 8;
    d->expert_ffn = 768;
    d->vocab = 151936;
    d->mlp = PFLEX_MLP_SWIGLU;
    d->attention = PFLEX_ATTN_FLASH;
    d->precision = PFLEX_PREC_BF16;
    d->kind = PFLEX_JOB_PRETRAIN;
    d->seq_len = seq;
    d->micro_batch = mb;
    d->global_batch = mb * 8;
    d->dp = 8;
    d->tp = 1;
    d->pp = 1;
    d->ep = ep;
    d->zero = 3;
    d->act_ckpt = ckpt;
    d->compile = compile;
    d->eager = !compile;
}

static double moe_ratio(const struct pflex_job_desc *d, double measured, const char *what)
{
    pflex_sim_job_t *j = make(d, 1);
    struct pflex_sim_measure m;
    assert_int_equal(pflex_sim_job_expect(j, pflex_sim_job_kind(j)->max_cap_w, &m, NULL), 0);
    pflex_sim_job_destroy(j);
    double r = m.throughput / 8 / measured;
    printf("%s: %.0f tokens/s per GPU simulated, %.0f measured, %.2f\n", what, m.throughput / 8,
           measured, r);
    return r;
}

static void test_moe_throughput_out_of_sample(void **state)
{
    struct pflex_job_desc d;
    qwen3_moe(&d, "B200-SXM-180GB", 8192, 8, 1, 1, 1);
    d.reduce_fp32 = 1;
    double full = moe_ratio(&d, 19500, "torchtitan B200 EP 1, full recomputation");
    d.act_ckpt = 0;
    double none = moe_ratio(&d, 19500, "torchtitan B200 EP 1, no recomputation");
    assert_true(full >= 0.75 && full <= 1.45);
    assert_true(none >= 0.75 && none <= 1.45);
    assert_true(full <= 1.0 && none >= 1.0);    /* selective recomputation lies between */
    d.reduce_fp32 = 0;
    qwen3_moe(&d, "H100-SXM5-80GB", 4096, 1, 1, 0, 0);
    d.kind = PFLEX_JOB_FINETUNE_FULL;
    moe_ratio(&d, 3075, "Transformers 5 H100 EP 1 (open: section 6)");
    qwen3_moe(&d, "H100-SXM5-80GB", 4096, 1, 8, 0, 1);
    d.kind = PFLEX_JOB_FINETUNE_FULL;
    moe_ratio(&d, 11340, "NeMo AutoModel H100 EP 8, TE and DeepEP (open: section 6)");
}

/* PEFT's adapters on the packed experts (lora_experts) cost the experts'
 * weight gradients and whole-weight passes each forward: a Qwen3-30B-A3B
 * LoRA step on H200 is slower with them, and still faster than a full
 * fine-tune, which also computes the dense weights' gradients and steps
 * Adam over every weight. */
static void test_lora_experts(void **state)
{
    struct pflex_job_desc d;
    qwen3_moe(&d, "H200-SXM-141GB", 4096, 16, 1, 1, 1);
    d.kind = PFLEX_JOB_FINETUNE_LORA;
    d.lora_rank = 32;
    double t[2], full;
    for (int le = 0; le < 2; le++) {
        d.lora_experts = le;
        pflex_sim_job_t *j = make(&d, 1);
        struct pflex_sim_measure m;
        assert_int_equal(pflex_sim_job_expect(j, 700, &m, NULL), 0);
        t[le] = m.throughput;
        pflex_sim_job_destroy(j);
    }
    d.kind = PFLEX_JOB_FINETUNE_FULL;
    d.lora_experts = 0;
    pflex_sim_job_t *j = make(&d, 1);
    struct pflex_sim_measure m;
    assert_int_equal(pflex_sim_job_expect(j, 700, &m, NULL), 0);
    full = m.throughput;
    pflex_sim_job_destroy(j);
    printf("Qwen3-30B-A3B on H200, tokens/s: LoRA %.0f, on the experts too %.0f, full %.0f\n",
           t[0], t[1], full);
    assert_true(t[1] < 0.9 * t[0]);
    assert_true(t[1] > full);
}

/* A fused RMSNorm (torchtitan's nn.RMSNorm, fused_norm) moves less than
 * Transformers' eager module of seven kernels: an eager pretrain is faster
 * with it and more power-limited, and a compiled one (fused anyway) is
 * unchanged.  The job file field parses. */
static void test_fused_norm(void **state)
{
    static const char js[] = "{\"gpu\": \"H200\", \"gpus\": 8, \"task\": \"pretrain\",\n"
                             " \"model\": {\"layers\": 24, \"hidden\": 2880, \"heads\": 64,\n"
                             "  \"kv_heads\": 8, \"head_dim\": 64, \"ffn_hidden\": 2880,\n"
                             "  \"vocab\": 201088, \"experts\": 32, \"top_k\": 4},\n"
                             " \"batch\": {\"seq_len\": 4096, \"micro_batch\": 2, "
                             "\"global_batch\": 16},\n"
                             " \"parallel\": {\"zero\": 3}, \"eager\": true, "
                             "\"moe_loop\": false, \"fused_norm\": true}";
    struct pflex_job_desc d;
    pflex_error_t err;
    if (pflex_job_parse(js, sizeof js - 1, "titan.json", &d, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(d.fused_norm, 1);
    double t[2][2];
    for (int compiled = 0; compiled < 2; compiled++)
        for (int fused = 0; fused < 2; fused++) {
            d.fused_norm = fused;
            d.compile = compiled;
            d.eager = !compiled;
            pflex_sim_job_t *j = make(&d, 1);
            struct pflex_sim_measure m;
            assert_int_equal(pflex_sim_job_expect(j, 700, &m, NULL), 0);
            t[compiled][fused] = m.throughput;
            pflex_sim_job_destroy(j);
        }
    printf("gpt-oss-20b-like eager pretrain, tokens/s: Transformers' RMSNorm %.0f, fused %.0f; "
           "compiled %.0f / %.0f\n", t[0][0], t[0][1], t[1][0], t[1][1]);
    assert_true(t[0][1] > 1.02 * t[0][0]);
    assert_true(t[1][1] == t[1][0]);
    assert_true(t[1][0] > t[0][1]);
}

/* Qwen3's per-head query and key norms (qk_norm) are memory-bound work the
 * model adds: the step slows and DRAM activity rises, less when compiled
 * (one fused kernel per norm) than in Transformers' eager module. */
static void test_qk_norm(void **state)
{
    struct pflex_job_desc d;
    qwen3_moe(&d, "H200-SXM-141GB", 4096, 2, 1, 0, 1);
    double t[2][2], dram[2];
    for (int eager = 0; eager < 2; eager++)
        for (int qk = 0; qk < 2; qk++) {
            d.qk_norm = qk;
            d.compile = !eager;
            d.eager = eager;
            pflex_sim_job_t *j = make(&d, 1);
            struct pflex_sim_measure m;
            assert_int_equal(pflex_sim_job_expect(j, 700, &m, NULL), 0);
            t[eager][qk] = m.throughput;
            if (!eager)
                dram[qk] = m.tm[PFLEX_TM_DRAM_ACTIVE];
            pflex_sim_job_destroy(j);
        }
    printf("Qwen3-30B-A3B, tokens/s without / with query-key norms: compiled %.0f / %.0f, "
           "eager %.0f / %.0f\n", t[0][0], t[0][1], t[1][0], t[1][1]);
    assert_true(t[0][1] < t[0][0] && t[1][1] < t[1][0]);
    assert_true(dram[1] > dram[0]);
    assert_true(t[1][1] / t[1][0] < t[0][1] / t[0][0]);
}

/* A 30-minute run sampled every 5 s: the phases in order, the evaluation
 * and the checkpoint visible in power and tokens/s, the top-10 % aggregate
 * between the training mean and the maximum, and deterministic. */
static void test_run_trace(void **state)
{
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find("llama-8b-pretrain-h200", &d), 0);
    pflex_sim_job_t *j = make(&d, 3);
    struct pflex_sim_run_opts o = PFLEX_SIM_RUN_DEFAULTS;
    size_t n = 0, cap = 8 * 360;
    static struct pflex_sim_sample smp[8 * 360];
    struct pflex_sim_measure agg, again, exp;
    assert_int_equal(pflex_sim_job_run(j, 500, &o, smp, cap, &n, &agg, NULL), 0);
    assert_int_equal(n, 8 * 360);
    assert_int_equal(pflex_sim_job_expect(j, 500, &exp, NULL), 0);
    int last = PFLEX_SIM_WARMUP, seen[5] = {0};
    double p_train = 0, p_eval = 0, t_max = 0;
    int n_train = 0, n_eval = 0;
    for (size_t i = 0; i < n; i++) {
        if (i >= 8)
            assert_true(smp[i].t_s >= smp[i - 8].t_s + 4.99);
        seen[smp[i].phase] = 1;
        if (smp[i].phase <= PFLEX_SIM_TRAINING) {
            assert_true((int)smp[i].phase >= last);
            last = (int)smp[i].phase;
        }
        if (smp[i].phase == PFLEX_SIM_TRAINING) {
            p_train += smp[i].power_w;
            n_train++;
            t_max = fmax(t_max, smp[i].throughput);
        } else if (smp[i].phase == PFLEX_SIM_EVAL) {
            p_eval += smp[i].power_w;
            n_eval++;
            assert_true(smp[i].throughput == 0);
        }
        if (smp[i].phase == PFLEX_SIM_WARMUP)
            assert_true(smp[i].fb_used_gib < 10);
        if (smp[i].phase == PFLEX_SIM_STARTUP)
            assert_true(smp[i].tm[PFLEX_TM_GPU_UTIL] == 0);
    }
    for (int p = 0; p < 5; p++)
        assert_true(seen[p]);
    assert_true(p_eval / n_eval < 0.9 * p_train / n_train);
    assert_true(agg.throughput >= exp.throughput && agg.throughput <= t_max);
    assert_true(fabs(agg.throughput / exp.throughput - 1) < 0.05);
    /* the aggregates, brute force: every 5-s step the study counts as
     * training (mean gpu_util >= 50 %), fully sorted, its top 10 % averaged */
    static double bp[360], bt[360];
    size_t nb = 0;
    for (size_t t = 0; t < n / 8; t++) {
        double ps = 0, us = 0;
        for (size_t i = 0; i < 8; i++) {
            ps += smp[t * 8 + i].power_w;
            us += smp[t * 8 + i].tm[PFLEX_TM_GPU_UTIL];
        }
        if (us / 8 >= 50) {
            bp[nb] = ps / 8;
            bt[nb++] = smp[t * 8].throughput;
        }
    }
    assert_true(nb > 100);
    assert_true(agg.power_w == top_mean_sorted(bp, nb, o.top_frac));
    assert_true(agg.throughput == top_mean_sorted(bt, nb, o.top_frac));
    assert_int_equal(pflex_sim_job_run(j, 500, &o, NULL, 0, NULL, &again, NULL), 0);
    assert_memory_equal(&agg, &again, sizeof agg);
    o.run = 1;
    assert_int_equal(pflex_sim_job_run(j, 500, &o, NULL, 0, NULL, &again, NULL), 0);
    assert_true(again.throughput != agg.throughput);
    pflex_sim_job_destroy(j);
}

/* The same seed gives two different jobs different noise (the seed is
 * mixed with the description), the same job the same noise. */
static void test_noise_per_job(void **state)
{
    struct pflex_job_desc a, b;
    assert_int_equal(pflex_job_preset_find("llama-8b-pretrain-h200", &a), 0);
    b = a;
    b.seq_len = 4096;
    b.micro_batch = 2;      /* the same tokens per step */
    pflex_sim_job_t *ja = make(&a, 1), *jb = make(&b, 1), *ja2 = make(&a, 1);
    struct pflex_sim_measure ma, mb, ma2, ea, eb;
    pflex_sim_job_measure(ja, 400, &ma, NULL);
    pflex_sim_job_measure(jb, 400, &mb, NULL);
    pflex_sim_job_measure(ja2, 400, &ma2, NULL);
    pflex_sim_job_expect(ja, 400, &ea, NULL);
    pflex_sim_job_expect(jb, 400, &eb, NULL);
    assert_true(ma.throughput == ma2.throughput);
    assert_true(fabs((ma.throughput / ea.throughput) - (mb.throughput / eb.throughput)) > 1e-9);
    pflex_sim_job_destroy(ja);
    pflex_sim_job_destroy(jb);
    pflex_sim_job_destroy(ja2);
}

/* Counters only where the board has them.  MEM_COPY_UTIL is the share of
 * time the memory is busy at all, DRAM_ACTIVE the share of its bandwidth
 * used: the first is never below the second (both in percent), and a kernel
 * streaming more than u_busy of the bandwidth keeps the memory busy the
 * whole time (the real H200 runs read 1.27-1.32x, h200-uncapped). */
static void test_counters(void **state)
{
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find("emerald-pt-mpt-7b", &d), 0);
    d.gpus = 8;
    d.dp = 0;
    d.global_batch = 0;
    snprintf(d.gpu, sizeof d.gpu, "A100-PCIE-80GB");
    pflex_sim_job_t *pcie = make(&d, 1);
    struct pflex_sim_measure m;
    assert_int_equal(pflex_sim_job_expect(pcie, 300, &m, NULL), 0);
    assert_true(isnan(m.tm[PFLEX_TM_NVLINK_TX_BYTES]) && isnan(m.tm[PFLEX_TM_NVLINK_RX_BYTES]));
    pflex_sim_job_destroy(pcie);
    const char *jobs[] = {"llama-8b-pretrain-h200", "llama-8b-infer-h200", "llama-8b-lora-h200",
                          "olmoe-1b-7b-pretrain-h200"};
    for (int i = 0; i < 4; i++) {
        pflex_sim_job_t *j = preset(jobs[i], 1);
        assert_int_equal(pflex_sim_job_expect(j, 700, &m, NULL), 0);
        assert_true(m.tm[PFLEX_TM_MEM_COPY_UTIL] >= 0 && m.tm[PFLEX_TM_MEM_COPY_UTIL] <= 100);
        assert_true(m.tm[PFLEX_TM_MEM_COPY_UTIL] >= 100 * m.tm[PFLEX_TM_DRAM_ACTIVE] - 1e-9);
        pflex_sim_job_destroy(j);
    }
}

/* Caps bind only below the draw: a host-bound generation loop (the shape of
 * the real H200 run in h200-uncapped, 251 W uncapped) is not slowed by a
 * 400 W cap; a cap below its draw lowers the SM clock, never the memory
 * clock. */
static void test_cap_below_draw(void **state)
{
    struct pflex_job_desc d = {.name = "gen", .gpu = "H200", .gpus = 1, .layers = 16,
                               .hidden = 2048, .heads = 16, .kv_heads = 16, .ffn_hidden = 5632,
                               .vocab = 32000, .seq_len = 512, .micro_batch = 32,
                               .global_batch = 32, .gen_len = 64, .kind = PFLEX_JOB_INFERENCE,
                               .eager = 1};
    pflex_sim_job_t *j = make(&d, 1);
    struct pflex_sim_measure a, b, c;
    assert_int_equal(pflex_sim_job_expect(j, 700, &a, NULL), 0);
    assert_int_equal(pflex_sim_job_expect(j, 400, &b, NULL), 0);
    printf("generation: %.0f W, %.0f MHz uncapped\n", a.power_w, a.tm[PFLEX_TM_SM_CLOCK_MHZ]);
    assert_true(a.power_w < 400);
    printf("at 400 W: throughput x%.4f, power %.0f W\n", b.throughput / a.throughput, b.power_w);
    assert_true(fabs(b.throughput / a.throughput - 1) < 1e-6 && fabs(b.power_w - a.power_w) < 1e-6);
    double cap = 0.8 * a.power_w;
    if (cap < pflex_sim_job_kind(j)->min_cap_w) {
        /* Below the board's lowest limit: make it draw more instead. */
        pflex_sim_job_destroy(j);
        d.micro_batch = 256;
        d.global_batch = 256;
        j = make(&d, 1);
        assert_int_equal(pflex_sim_job_expect(j, 700, &a, NULL), 0);
        cap = fmax(pflex_sim_job_kind(j)->min_cap_w, 0.8 * a.power_w);
    }
    assert_int_equal(pflex_sim_job_expect(j, cap, &c, NULL), 0);
    if (c.power_w < a.power_w - 1) {
        assert_true(c.tm[PFLEX_TM_SM_CLOCK_MHZ] < a.tm[PFLEX_TM_SM_CLOCK_MHZ]);
        assert_true(c.tm[PFLEX_TM_MEM_CLOCK_MHZ] == a.tm[PFLEX_TM_MEM_CLOCK_MHZ]);
    }
    pflex_sim_job_destroy(j);
}

/* A T5-like encoder-decoder in fp16 on PCIe boards, as its owner would
 * write it; the new fields land, a bad one is refused with its name. */
static void test_job_fields(void **state)
{
    static const char t5[] =
        "{\"gpu\": \"A100-PCIE-80GB\", \"gpus\": 8, \"task\": \"pretrain\",\n"
        " \"model\": {\"layers\": 48, \"encoder_layers\": 24, \"hidden\": 1024, \"heads\": 32,\n"
        "  \"head_dim\": 128, \"ffn_hidden\": 16384, \"mlp\": \"gelu\", \"vocab\": 32128,\n"
        "  \"tied_embeddings\": true, \"target_len\": 128},\n"
        " \"batch\": {\"seq_len\": 512, \"micro_batch\": 4, \"global_batch\": 128},\n"
        " \"parallel\": {\"pp\": 4, \"gpus_per_node\": 4}, \"precision\": \"fp16\",\n"
        " \"attention\": \"eager\"}";
    struct pflex_job_desc d;
    pflex_error_t err;
    if (pflex_job_parse(t5, sizeof t5 - 1, "t5.json", &d, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(d.encoder_layers, 24);
    assert_int_equal(d.head_dim, 128);
    assert_int_equal(d.mlp, PFLEX_MLP_GELU);
    assert_int_equal(d.precision, PFLEX_PREC_FP16);
    assert_int_equal(d.attention, PFLEX_ATTN_EAGER);
    assert_int_equal(d.tied_embeddings, 1);
    assert_int_equal(d.gpus_per_node, 4);
    assert_int_equal(d.dp, 2);
    /* T5-3B is 2.9 B parameters (its card); the shape gives that within 5 %. */
    assert_true(fabs(pflex_job_params_total_b(&d) / 2.88 - 1) < 0.05);
    pflex_sim_job_t *j = make(&d, 1);
    struct pflex_sim_measure hi, lo;
    assert_int_equal(pflex_sim_job_expect(j, 300, &hi, NULL), 0);
    assert_int_equal(pflex_sim_job_expect(j, 150, &lo, NULL), 0);
    assert_true(lo.throughput < hi.throughput && lo.power_w < hi.power_w);
    assert_true(isnan(hi.tm[PFLEX_TM_NVLINK_TX_BYTES]));
    pflex_sim_job_destroy(j);
    static const char bad[] = "{\"gpu\": \"A40\", \"task\": \"pretrain\", \"params_b\": 1, "
                              "\"precision\": \"int4\"}";
    assert_int_equal(pflex_job_parse(bad, sizeof bad - 1, "bad.json", &d, &err), -1);
    assert_non_null(strstr(err.text, "precision"));
}

static void count_cap(void *arg, int i)
{
    int *seen = arg;
    assert_int_equal(i, *seen);     /* each cap once, in order */
    (*seen)++;
}

/* A simulated sweep as a CSV: the header, repeats rows per cap in order,
 * read back as one job with every cap; the same seed writes the same bytes. */
static void test_sweep_write(void **state)
{
    struct pflex_job_desc d;
    assert_int_equal(pflex_job_preset_find("llama-8b-pretrain-h200", &d), 0);
    static const double caps[3] = {700, 500, 300};
    char *text[2];
    size_t len[2];
    pflex_error_t err;
    for (int k = 0; k < 2; k++) {
        pflex_sim_job_t *j;
        assert_int_equal(pflex_sim_job_create(&d, 7, &j, &err), 0);
        FILE *f = open_memstream(&text[k], &len[k]);
        assert_non_null(f);
        int seen = 0;
        assert_int_equal(pflex_sim_sweep_write(j, &d, caps, 3, 2, f, count_cap, &seen, &err), 0);
        fclose(f);
        assert_int_equal(seen, 3);
        pflex_sim_job_destroy(j);
    }
    assert_int_equal(len[0], len[1]);
    assert_memory_equal(text[0], text[1], len[0]);
    pflex_sweep_t *sw;
    if (pflex_sweep_read_mem(text[0], len[0], "sim.csv", NULL, &sw, &err) < 0)
        fail_msg("read back: %s", err.text);
    assert_int_equal(sw->njobs, 1);
    assert_string_equal(sw->jobs[0].name, d.name);
    assert_int_equal(sw->jobs[0].gpus, d.gpus);
    assert_true(sw->has_telemetry);
    size_t lines = 0;
    for (size_t i = 0; i < len[0]; i++)
        lines += text[0][i] == '\n';
    assert_int_equal(lines, 1 + 3 * 2);
    pflex_sweep_destroy(sw);
    free(text[0]);
    free(text[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_sweep_write),
        cmocka_unit_test(test_cap_physics),
        cmocka_unit_test(test_telemetry_ranges),
        cmocka_unit_test(test_memory_bound_more_flexible),
        cmocka_unit_test(test_cap_averages_interleaved_kernels),
        cmocka_unit_test(test_narrow_model_more_flexible),
        cmocka_unit_test(test_moe_vs_dense),
        cmocka_unit_test(test_scaling),
        cmocka_unit_test(test_all_kinds_under_cap),
        cmocka_unit_test(test_inference_replicas_independent),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_h100_vs_h200),
        cmocka_unit_test(test_gpu_ops),
        cmocka_unit_test(test_kind_ranges),
        cmocka_unit_test(test_bad_descriptions),
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_absolute_throughput),
        cmocka_unit_test(test_throughput_out_of_sample),
        cmocka_unit_test(test_moe_throughput_out_of_sample),
        cmocka_unit_test(test_lora_experts),
        cmocka_unit_test(test_fused_norm),
        cmocka_unit_test(test_qk_norm),
        cmocka_unit_test(test_run_trace),
        cmocka_unit_test(test_noise_per_job),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_job_fields),
        cmocka_unit_test(test_cap_below_draw),
    };
    return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
