/* test_controller_agent.c — the controller's reading of the agent's JSON
 * (src/controller/agent_client.c): the shapes it assumes, and malformed or
 * hostile answers refused without a crash. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "controller/agent_client.h"
#include "controller/prom_source.h"

static void test_status(void **state)
{
    const char *ok =
        "{\"hostname\":\"node-01\",\"gpus\":["
        "{\"gpu\":0,\"uuid\":\"GPU-a\",\"power_w\":512.5,\"limit_w\":600,\"enforced_w\":600,\"min_w\":200,\"max_w\":700,\"ok\":true,\"lease\":null},"
        "{\"gpu\":1,\"uuid\":\"GPU-b\",\"power_w\":null,\"limit_w\":550,\"min_w\":200,\"max_w\":700,\"ok\":false,\"error\":\"lost\",\"extra\":[1,2]}],"
        "\"jobs\":[{\"job\":\"train-1\",\"gpus\":[0,1],\"tokens_total\":9e6,\"throughput\":1234.5},{\"job\":\"idle-job\",\"gpus\":[],\"throughput\":null}]}";
    struct agent_status st;
    pflex_error_t err;
    if (agent_parse_status(ok, strlen(ok), &st, &err) < 0)
        fail_msg("%s", err.text);
    assert_string_equal(st.host, "node-01");
    assert_int_equal(st.ngpus, 2);
    assert_true(st.gpu[0].power_w == 512.5 && st.gpu[0].limit_w == 600 && st.gpu[0].ok);
    assert_true(isnan(st.gpu[1].power_w));      /* no reading: telemetry missing */
    assert_true(st.gpu[1].limit_w == 550 && !st.gpu[1].ok);
    assert_int_equal(st.njobs, 2);
    assert_string_equal(st.job[0].name, "train-1");
    assert_int_equal(st.job[0].ngpus, 2);
    assert_true(st.job[0].throughput == 1234.5);
    assert_string_equal(st.job[1].name, "idle-job");
    assert_true(isnan(st.job[1].throughput));
    const char *bad[] = {
        "", "[]", "{", "null", "{\"gpus\":{}}", "{\"gpus\":[{\"gpu\":-1,\"min_w\":1,\"max_w\":2}]}",
        "{\"gpus\":[{\"gpu\":0}]}", "{\"gpus\":[{\"gpu\":0,\"min_w\":300,\"max_w\":200}]}",
        "{\"gpus\":[{\"gpu\":\"0\",\"min_w\":1,\"max_w\":2}]}",
        "{\"gpus\":[],\"jobs\":[{\"gpus\":[0]}]}", "{\"gpus\":[],\"jobs\":[{\"job\":\"x\",\"gpus\":[\"a\"]}]}",
        "{\"gpus\":[],\"jobs\":{}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (agent_parse_status(bad[i], strlen(bad[i]), &st, &err) != -1)
            fail_msg("case %zu accepted: %s", i, bad[i]);
    /* more GPUs than an agent may have: refused, not overrun */
    char big[20000] = "{\"gpus\":[";
    for (int i = 0; i < AGENT_MAX_GPUS + 1; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s{\"gpu\":%d,\"min_w\":1,\"max_w\":2}",
                 i ? "," : "", i);
    strcat(big, "]}");
    assert_int_equal(agent_parse_status(big, strlen(big), &st, &err), -1);
    /* a negative or absurd power is no reading */
    const char *neg = "{\"gpus\":[{\"gpu\":0,\"power_w\":-5,\"min_w\":100,\"max_w\":400}]}";
    assert_int_equal(agent_parse_status(neg, strlen(neg), &st, &err), 0);
    assert_true(isnan(st.gpu[0].power_w));
}

static void test_caps_answer(void **state)
{
    struct agent_cap caps[3] = {{0, 500, 0}, {1, 450, 0}, {5, 300, 0}};
    pflex_error_t err;
    const char *ans = "{\"applied\":[{\"gpu\":1,\"limit_w\":450,\"enforced_w\":450},{\"gpu\":0,\"limit_w\":500,\"enforced_w\":499},{\"gpu\":9,\"enforced_w\":1}],\"errors\":[]}";
    assert_int_equal(agent_parse_caps_answer(ans, strlen(ans), caps, 3, &err), 0);
    assert_true(caps[0].enforced_w == 499 && caps[1].enforced_w == 450);
    assert_true(isnan(caps[2].enforced_w));     /* not confirmed */
    assert_int_equal(agent_parse_caps_answer("{}", 2, caps, 3, &err), -1);
    assert_true(isnan(caps[0].enforced_w));
    assert_int_equal(agent_parse_caps_answer("garbage", 7, caps, 3, &err), -1);
}

static void test_client(void **state)
{
    agent_client_t *c;
    pflex_error_t err;
    assert_int_equal(agent_client_create("ftp://x", NULL, 0, &c, &err), -1);
    assert_int_equal(agent_client_create("http://127.0.0.1:1/", "tok", 300, &c, &err), 0);
    assert_string_equal(agent_client_url(c), "http://127.0.0.1:1");
    struct agent_status st;
    assert_int_equal(agent_client_status(c, &st, &err), -1);     /* nobody there: an error, quickly */
    struct agent_cap cap = {0, 500, 0};
    assert_int_equal(agent_client_put_caps(c, &cap, 1, 10, &err), -1);
    agent_client_destroy(c);
}


/* Prometheus answers (controller --prometheus): the agents' metric names
 * grouped by Hostname; a host without a range is unusable; an answer that
 * is not a success, or not JSON, is refused whole. */
static void test_prometheus(void **state)
{
    const char *dcgm =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
        "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\",\"instance\":\"a:1\"},\"value\":[1700000000,\"512.5\"]},"
        "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_MGMT_LIMIT\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"600\"]},"
        "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"1\",\"Hostname\":\"n2\"},\"value\":[1700000000,\"300\"]}]}}";
    const char *own =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
        "{\"metric\":{\"__name__\":\"pflex_gpu_limit_min_watts\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1,\"200\"]},"
        "{\"metric\":{\"__name__\":\"pflex_gpu_limit_max_watts\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1,\"700\"]},"
        "{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1,\"1\"]},"
        "{\"metric\":{\"__name__\":\"pflex_job_throughput\",\"job\":\"scrape\",\"exported_job\":\"train-1\",\"Hostname\":\"n1\"},\"value\":[1,\"1234.5\"]},"
        "{\"metric\":{\"__name__\":\"pflex_job_throughput\",\"job\":\"x\",\"Hostname\":\"n1\"},\"value\":[1,\"NaN\"]},"
        "{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"zz\",\"Hostname\":\"n1\"},\"value\":[1,\"1\"]}]}}";
    prom_source_t *p;
    pflex_error_t err;
    assert_int_equal(prom_source_create("ftp://x", 100, &p, &err), -1);
    assert_int_equal(prom_source_create("http://127.0.0.1:9/", 100, &p, &err), 0);
    if (prom_source_parse(p, dcgm, strlen(dcgm), own, strlen(own), &err) < 0)
        fail_msg("%s", err.text);
    struct agent_status st;
    assert_int_equal(prom_source_status(p, "n1", &st), 0);
    assert_int_equal(st.ngpus, 1);
    assert_true(st.gpu[0].index == 0 && st.gpu[0].power_w == 512.5 && st.gpu[0].limit_w == 600);
    assert_true(st.gpu[0].min_w == 200 && st.gpu[0].max_w == 700 && st.gpu[0].ok);
    assert_int_equal(st.njobs, 1);      /* the NaN rate is no reading */
    assert_string_equal(st.job[0].name, "train-1");
    assert_true(st.job[0].throughput == 1234.5);
    assert_int_equal(prom_source_status(p, "n2", &st), -1);    /* no range: unusable */
    assert_int_equal(prom_source_status(p, "n3", &st), -1);    /* not scraped */
    const char *bad[] = {"", "{", "[]", "{\"status\":\"error\",\"error\":\"x\"}",
                         "{\"status\":\"success\",\"data\":{\"result\":{}}}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(prom_source_parse(p, dcgm, strlen(dcgm), bad[i], strlen(bad[i]), &err), -1);
        assert_int_equal(prom_source_parse(p, bad[i], strlen(bad[i]), own, strlen(own), &err), -1);
        assert_int_equal(prom_source_status(p, "n1", &st), -1);     /* nothing kept of a bad read */
    }
    /* unreachable: an error, no crash */
    assert_int_equal(prom_source_read(p, &err), -1);
    prom_source_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_caps_answer),
        cmocka_unit_test(test_client),
        cmocka_unit_test(test_prometheus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
