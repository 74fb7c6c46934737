/* test_fleet.c — the built-in fleets: the study's own experiment (PAPER.md
 * sections 3-4) and the generated extended catalogue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/sim/fleet.h"
#include "pflex/sim/sim.h"
#include "pflex/sim/model.h"

/* 25 + 4 + 6 groups holding 131 + 24 + 34 runs, with the study's grids. */
static void test_study_counts(void **state)
{
    size_t groups[3] = {0}, runs[3] = {0}, three = 0, four_h100 = 0;
    assert_int_equal(pflex_fleet_count(), 35);
    for (size_t i = 0; i < pflex_fleet_count(); i++) {
        struct pflex_fleet_run r;
        assert_int_equal(pflex_fleet_get(i, &r), 0);
        groups[r.split]++;
        runs[r.split] += r.ncaps;
        /* 8 GPUs: 200..700 every 100 W; 16/32: 200, 500, 600, 700. */
        if (r.ncaps == 6) {
            assert_int_equal(r.gpus, 8);
            for (size_t k = 0; k < 6; k++)
                assert_true(r.caps_w[k] == 200 + 100 * (double)k);
        } else if (r.ncaps == 3) {
            three++;
            assert_int_equal(r.gpus, 16);
        } else {
            assert_int_equal(r.ncaps, 4);
            if (r.split == PFLEX_FLEET_H100) {
                four_h100++;        /* 500 and 200 W failed (PAPER.md section 1, 3) */
                assert_true(r.caps_w[0] == 300 && r.caps_w[1] == 400 && r.caps_w[3] == 700);
            } else {
                assert_true(r.caps_w[0] == 200 && r.caps_w[1] == 500 && r.caps_w[3] == 700);
                assert_true(r.gpus == 16 || r.gpus == 32);
            }
        }
        assert_true((r.split == PFLEX_FLEET_MAIN) == isfinite(r.measured_pfi));
    }
    assert_int_equal(groups[PFLEX_FLEET_MAIN], 25);
    assert_int_equal(groups[PFLEX_FLEET_VALIDATION], 4);
    assert_int_equal(groups[PFLEX_FLEET_H100], 6);
    assert_int_equal(runs[PFLEX_FLEET_MAIN], PFLEX_FLEET_MAIN_RUNS);
    assert_int_equal(runs[PFLEX_FLEET_VALIDATION], PFLEX_FLEET_VALIDATION_RUNS);
    assert_int_equal(runs[PFLEX_FLEET_H100], PFLEX_FLEET_H100_RUNS);
    assert_int_equal(three, 1);
    assert_int_equal(four_h100, 1);
    struct pflex_fleet_run r;
    assert_int_equal(pflex_fleet_get(35, &r), -1);
}

/* The models' shapes give the published parameter counts (models.csv's
 * params_total_b, from the model cards) within 4 %: an independent check of
 * the shape fields and of how the sim counts parameters. */
static void test_study_shapes(void **state)
{
    static const struct { const char *model; double total_b; } cards[] = {
        {"openai/gpt-oss-20b", 21}, {"Qwen/Qwen3-30B-A3B", 30.5}, {"Qwen/Qwen3-32B", 32.8},
        {"meta-llama/Llama-3.1-70B", 70.6}, {"deepseek-ai/DeepSeek-V2-Lite", 15.7},
        {"mistralai/Mistral-Small-24B-Base-2501", 24}, {"google/gemma-4-26B-A4B", 25.2},
    };
    int seen[7] = {0};
    for (size_t i = 0; i < pflex_fleet_count(); i++) {
        struct pflex_fleet_run r;
        assert_int_equal(pflex_fleet_get(i, &r), 0);
        struct pflex_job_desc d = r.desc;
        pflex_error_t err;
        assert_int_equal(pflex_job_desc_resolve(&d, &err), 0);
        for (int m = 0; m < 7; m++)
            if (!strcmp(r.model, cards[m].model)) {
                double got = pflex_job_params_total_b(&d);
                if (fabs(got / cards[m].total_b - 1) > 0.04)
                    fail_msg("%s: shape gives %.2f B parameters, the card %.1f B", r.model, got,
                             cards[m].total_b);
                seen[m] = 1;
            }
        /* The study's software: FSDP full shard, LoRA rank 32, EP only for
         * MoE pretraining, 8 GPUs per node. */
        assert_int_equal(d.zero, 3);
        assert_int_equal(d.dp, d.gpus);
        assert_int_equal(d.lora_rank, 32);
        if (d.ep > 1)
            assert_true(r.is_moe && d.kind == PFLEX_JOB_PRETRAIN);
        assert_int_equal(d.eager, !r.compile);
        assert_string_equal(r.task, d.kind == PFLEX_JOB_PRETRAIN ? "pretrain" : "lora");
    }
    for (int m = 0; m < 7; m++)
        assert_true(seen[m]);
}

/* Each H100 group is its H200 partner (headline or validation) with the
 * GPU changed, and the six are PAPER.md section 3's: two Mistral-Small-24B
 * groups, Llama-3.1-70B LoRA (4 runs), gpt-oss-20b and DeepSeek-V2-Lite
 * pretraining with EP 8, Qwen3-30B-A3B LoRA. */
static void test_h100_matched(void **state)
{
    static const struct { const char *model; enum pflex_job_kind kind; int ep; } want[6] = {
        {"mistralai/Mistral-Small-24B-Base-2501", PFLEX_JOB_PRETRAIN, 1},
        {"mistralai/Mistral-Small-24B-Base-2501", PFLEX_JOB_FINETUNE_LORA, 1},
        {"meta-llama/Llama-3.1-70B", PFLEX_JOB_FINETUNE_LORA, 1},
        {"openai/gpt-oss-20b", PFLEX_JOB_PRETRAIN, 8},
        {"deepseek-ai/DeepSeek-V2-Lite", PFLEX_JOB_PRETRAIN, 8},
        {"Qwen/Qwen3-30B-A3B", PFLEX_JOB_FINETUNE_LORA, 1},
    };
    int seen[6] = {0};
    for (size_t i = 0; i < pflex_fleet_count(); i++) {
        struct pflex_fleet_run h, p;
        assert_int_equal(pflex_fleet_get(i, &h), 0);
        if (h.split != PFLEX_FLEET_H100) {
            assert_int_equal(h.match, -1);
            continue;
        }
        assert_true(h.match >= 0
                    && h.match < PFLEX_FLEET_MAIN_GROUPS + PFLEX_FLEET_VALIDATION_GROUPS);
        assert_int_equal(pflex_fleet_get((size_t)h.match, &p), 0);
        assert_string_equal(h.desc.gpu, "H100-SXM5-80GB");
        assert_string_equal(p.desc.gpu, "H200-SXM-141GB");
        assert_string_equal(h.model, p.model);
        assert_true(h.desc.seq_len == p.desc.seq_len && h.desc.micro_batch == p.desc.micro_batch
                    && h.desc.ep == p.desc.ep && h.desc.kind == p.desc.kind
                    && h.desc.act_ckpt == p.desc.act_ckpt && h.gpus == p.gpus);
        for (int k = 0; k < 6; k++)
            if (!strcmp(h.model, want[k].model) && h.desc.kind == want[k].kind
                && h.desc.ep == want[k].ep)
                seen[k]++;
        if (!strcmp(h.model, "meta-llama/Llama-3.1-70B")) {
            /* 4 runs: the 500 W and 200 W runs failed */
            assert_int_equal(h.ncaps, 4);
            assert_true(h.caps_w[0] == 300 && h.caps_w[1] == 400 && h.caps_w[2] == 600
                        && h.caps_w[3] == 700);
        }
    }
    for (int k = 0; k < 6; k++)
        assert_int_equal(seen[k], 1);
}

/* Every study group and a spread of extended entries run on the sim and
 * their caps bind: power falls with the cap. */
static void test_valid_for_sim(void **state)
{
    size_t next = pflex_fleet_size(PFLEX_FLEET_EXTENDED);
    assert_true(next >= 2000);
    for (size_t i = 0; i < pflex_fleet_count() + 60; i++) {
        struct pflex_fleet_run r;
        int study = i < pflex_fleet_count();
        size_t at = study ? i : (i - pflex_fleet_count()) * (next / 60);
        assert_int_equal(pflex_fleet_entry(study ? PFLEX_FLEET_STUDY : PFLEX_FLEET_EXTENDED,
                                           at, &r), 0);
        pflex_sim_job_t *j;
        pflex_error_t err;
        if (pflex_sim_job_create(&r.desc, 1, &j, &err) < 0)
            fail_msg("%s: %s", r.desc.name, err.text);
        struct pflex_sim_measure lo, hi;
        assert_int_equal(pflex_sim_job_expect(j, r.caps_w[0], &lo, &err), 0);
        assert_int_equal(pflex_sim_job_expect(j, r.caps_w[r.ncaps - 1], &hi, &err), 0);
        assert_true(lo.power_w < hi.power_w && lo.power_w <= r.caps_w[0] * 1.001);
        assert_true(lo.throughput <= hi.throughput && lo.throughput > 0);
        pflex_sim_job_destroy(j);
    }
    struct pflex_fleet_run r;
    assert_int_equal(pflex_fleet_entry(PFLEX_FLEET_EXTENDED, next, &r), -1);
}

/* A study group that trains with eager attention materialises each layer's
 * softmax probabilities, heads x seq x (seq + 1) bf16 elements a sequence,
 * and autograd keeps them for the backward; without recomputation every
 * layer's are held at once.  Those alone must leave room on the board for
 * the weights, the other activations and the logits (half its memory);
 * with recomputation one layer's are. */
static void test_eager_scores_fit(void **state)
{
    for (size_t i = 0; i < pflex_fleet_count(); i++) {
        struct pflex_fleet_run r;
        assert_int_equal(pflex_fleet_get(i, &r), 0);
        const struct pflex_job_desc *d = &r.desc;
        if (d->attention != PFLEX_ATTN_EAGER || d->kind == PFLEX_JOB_INFERENCE)
            continue;
        const struct pflex_gpu_kind *k = pflex_gpu_kind_find(d->gpu);
        assert_non_null(k);
        double layer_gb = (double)d->micro_batch * d->heads / d->tp * d->seq_len
                          * (d->seq_len + 1.0) * 2 / 1e9;
        double held_gb = layer_gb * (d->act_ckpt ? 1 : d->layers);
        if (held_gb > 0.5 * k->mem_gb)
            fail_msg("%s: %.0f GB of attention probabilities on a %.0f GB board", d->name, held_gb,
                     k->mem_gb);
    }
}

/* Pure functions of the index; unique names. */
static void test_deterministic_unique(void **state)
{
    char names[40][64];
    for (size_t i = 0; i < pflex_fleet_count(); i++) {
        struct pflex_fleet_run a, b;
        assert_int_equal(pflex_fleet_get(i, &a), 0);
        assert_int_equal(pflex_fleet_get(i, &b), 0);
        assert_memory_equal(&a.desc, &b.desc, sizeof a.desc);
        snprintf(names[i], sizeof names[i], "%s", a.desc.name);
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(names[k], names[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_study_counts),
        cmocka_unit_test(test_study_shapes),
        cmocka_unit_test(test_h100_matched),
        cmocka_unit_test(test_valid_for_sim),
        cmocka_unit_test(test_eager_scores_fit),
        cmocka_unit_test(test_deterministic_unique),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
