/* test_jobfile.c — job description files (docs/job-format.md): what is
 * read, and bad files rejected with file:line and the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/sim/model.h"
#include "pflex/sim/sim.h"

static void test_nested_file(void **state)
{
    struct pflex_job_desc d;
    pflex_error_t err;
    int rc = pflex_job_read_file("tests/data/job_llama8b_h200.json", &d, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.text);
    assert_int_equal(rc, 0);
    assert_string_equal(d.name, "llama-8b-my-pretrain");
    assert_string_equal(d.gpu, "H200-SXM-141GB");
    assert_true(d.gpus == 16 && d.tp == 2 && d.pp == 1 && d.dp == 8 && d.zero == 1);
    assert_true(d.layers == 32 && d.hidden == 4096 && d.kv_heads == 8 && d.vocab == 128256);
    assert_true(d.seq_len == 8192 && d.micro_batch == 1 && d.global_batch == 256);
    assert_true(d.act_ckpt == 1 && d.kind == PFLEX_JOB_PRETRAIN && d.params_b == 8.03);
    pflex_sim_job_t *j;
    assert_int_equal(pflex_sim_job_create(&d, 1, &j, &err), 0);
    pflex_sim_job_destroy(j);
}

static void test_flat_file(void **state)
{
    struct pflex_job_desc d;
    pflex_error_t err;
    assert_int_equal(pflex_job_read_file("tests/data/job_moe_flat.json", &d, &err), 0);
    assert_string_equal(d.gpu, "H100-SXM5-80GB");
    assert_true(d.experts == 16 && d.top_k == 2 && d.ep == 8 && d.dp == 32);
    /* params derived from the shape */
    assert_true(d.params_b > 3 && d.params_b < 8);
    assert_true(pflex_job_params_active_b(&d) < d.params_b / 3);
}

static void test_preset_base(void **state)
{
    struct pflex_job_desc d, p;
    pflex_error_t err;
    assert_int_equal(pflex_job_read_file("tests/data/job_from_preset.json", &d, &err), 0);
    assert_int_equal(pflex_job_preset_find("emerald-pt-mpt-7b", &p), 0);
    assert_string_equal(d.name, "mpt-7b-on-h100");
    assert_string_equal(d.gpu, "H100-SXM5-80GB");
    assert_true(d.gpus == 16 && d.dp == 16);
    assert_true(d.layers == p.layers && d.seq_len == p.seq_len && d.zero == p.zero);
    /* pflex_job_load: presets first, then files */
    assert_int_equal(pflex_job_load("emerald-pt-mpt-7b", &d, &err), 0);
    assert_int_equal(d.gpus, 48);
    assert_int_equal(pflex_job_load("tests/data/job_from_preset.json", &d, &err), 0);
    assert_int_equal(d.gpus, 16);
    assert_int_equal(pflex_job_load("no/such/file.json", &d, &err), -1);
    assert_non_null(strstr(err.text, "no/such/file.json"));
}

static void test_bad_files(void **state)
{
    struct pflex_job_desc d;
    pflex_error_t err;
    assert_int_equal(pflex_job_read_file("tests/data/job_bad_syntax.json", &d, &err), -1);
    assert_non_null(strstr(err.text, "tests/data/job_bad_syntax.json:5:"));
    assert_int_equal(pflex_job_read_file("tests/data/job_bad_tp.json", &d, &err), -1);
    assert_non_null(strstr(err.text, "tests/data/job_bad_tp.json:4: field 'gpus'"));
    assert_non_null(strstr(err.text, "tp 3"));
}

/* One bad buffer: expect "mem.json:LINE: field 'F'" in the message. */
static void bad(const char *text, int line, const char *field)
{
    struct pflex_job_desc d;
    pflex_error_t err;
    char want[128];
    assert_int_equal(pflex_job_parse(text, strlen(text), "mem.json", &d, &err), -1);
    snprintf(want, sizeof want, "mem.json:%d: field '%s'", line, field);
    if (!strstr(err.text, want))
        fail_msg("got '%s', want '%s'", err.text, want);
}

static void test_bad_content(void **state)
{
    bad("{\"gpu\": \"H100\",\n \"task\": \"pretrain\",\n \"params_b\": 7,\n \"layerz\": 3}", 4, "layerz");
    bad("{\"gpu\": \"H100\",\n \"task\": \"pretrain\",\n \"params_b\": 7,\n \"gpus\": 2.5}", 4, "gpus");
    bad("{\"gpu\": \"H100\",\n \"task\": \"pretrain\",\n \"params_b\": 7,\n \"gpus\": -1}", 4, "gpus");
    bad("{\"gpu\": \"H100\",\n \"task\": \"pretrain\",\n \"params_b\": \"7\"}", 3, "params_b");
    bad("{\"gpu\": \"B300\",\n \"task\": \"pretrain\",\n \"params_b\": 7}", 1, "gpu");
    bad("{\"gpu\": \"H100\",\n \"task\": \"dreaming\",\n \"params_b\": 7}", 2, "task");
    bad("{\"task\": \"pretrain\",\n \"params_b\": 7}", 1, "gpu");
    bad("{\"gpu\": \"H100\",\n \"params_b\": 7}", 1, "task");
    bad("{\"gpu\": \"H100\", \"task\": \"pretrain\",\n \"params_b\": 7,\n \"model\": 3}", 3, "model");
    bad("{\"gpu\": \"H100\", \"task\": \"pretrain\",\n \"params_b\": 7,\n\n \"activation_checkpointing\": 1}",
        4, "activation_checkpointing");
    bad("{\"preset\": \"nope\"}", 1, "preset");
    bad("{\"gpu\": \"H100\", \"task\": \"pretrain\", \"params_b\": 47, \"gpus\": 8,\n"
        " \"parallel\": {\n   \"ep\": 4\n }}", 3, "ep");
    bad("{\"gpu\": \"H100\", \"task\": \"pretrain\", \"params_b\": 8, \"gpus\": 8,\n"
        " \"batch\": {\"micro_batch\": 4,\n \"global_batch\": 16}}", 3, "global_batch");

    struct pflex_job_desc d;
    pflex_error_t err;
    const char *arr = "[1, 2]";
    assert_int_equal(pflex_job_parse(arr, strlen(arr), "a.json", &d, &err), -1);
    assert_non_null(strstr(err.text, "a.json:1:"));
    const char *dup = "{\"gpu\": \"H100\",\n\"gpu\": \"H200\"}";
    assert_int_equal(pflex_job_parse(dup, strlen(dup), "b.json", &d, &err), -1);
    assert_non_null(strstr(err.text, "b.json:2:"));
    assert_int_equal(pflex_job_parse("", 0, "c.json", &d, &err), -1);
    assert_non_null(strstr(err.text, "c.json:"));
}

/* A field given twice, at the top level and in a group, or in two groups,
 * is refused like a key twice in one object: the file says two things. */
static void test_field_twice(void **state)
{
    (void)state;
    struct pflex_job_desc d;
    pflex_error_t err;
    const char *top_and_model =
        "{\"name\": \"x\", \"gpu\": \"H200-SXM-141GB\", \"gpus\": 8, \"task\": \"pretrain\",\n"
        " \"layers\": 32,\n"
        " \"model\": {\"layers\": 16, \"hidden\": 4096, \"heads\": 32, \"vocab\": 128256}}\n";
    assert_int_equal(pflex_job_parse(top_and_model, strlen(top_and_model), "t.json", &d, &err), -1);
    assert_string_equal(err.text, "t.json:2: field 'layers': given twice (at the top level and "
                                  "in \"model\")");
    const char *two_groups =
        "{\"name\": \"x\", \"gpu\": \"H200-SXM-141GB\", \"gpus\": 8, \"task\": \"pretrain\",\n"
        " \"batch\": {\"seq_len\": 4096},\n"
        " \"model\": {\"layers\": 16, \"hidden\": 4096, \"heads\": 32, \"seq_len\": 2048}}\n";
    assert_int_equal(pflex_job_parse(two_groups, strlen(two_groups), "u.json", &d, &err), -1);
    assert_non_null(strstr(err.text, "field 'seq_len': given twice (in \"batch\" and in \"model\")"));
    /* Once each is fine, and the shipped examples still read. */
    assert_int_equal(pflex_job_read_file("tests/data/job_llama8b_h200.json", &d, &err), 0);
}

static void test_kind_names(void **state)
{
    enum pflex_job_kind k;
    assert_int_equal(pflex_job_kind_parse("LoRA", &k), 0);
    assert_int_equal(k, PFLEX_JOB_FINETUNE_LORA);
    assert_int_equal(pflex_job_kind_parse("finetune-full", &k), 0);
    assert_int_equal(k, PFLEX_JOB_FINETUNE_FULL);
    assert_int_equal(pflex_job_kind_parse("x", &k), -1);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pflex_job_kind_parse(pflex_job_kind_name((enum pflex_job_kind)i), &k), 0);
        assert_int_equal((int)k, i);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_file),
        cmocka_unit_test(test_flat_file),
        cmocka_unit_test(test_preset_base),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_bad_content),
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_field_twice),
    };
    return cmocka_run_group_tests_name("jobfile", tests, NULL, NULL);
}
