/* test_telemetry.c — the telemetry readers against fixtures written from the
 * tools' documented formats (tests/data/telemetry/), hostile input, limits,
 * the job map, and a fetch from a real HTTP server on loopback
 * (libmicrohttpd, bounded in time). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <microhttpd.h>
#include "pflex/io/telemetry.h"
#include "support/rand.h"

#define DIR "tests/data/telemetry/"

/* cmocka 1.1's assert_float_equal compares floats: doubles here. */
#define assert_dbl(a, b, eps) do { double a_ = (a), b_ = (b); \
    if (!(fabs(a_ - b_) <= (eps))) fail_msg("%.17g != %.17g", a_, b_); } while (0)

static pflex_tm_t *load(const char *path, const char *job)
{
    pflex_tm_t *t = pflex_tm_create(NULL);
    pflex_error_t err;
    struct pflex_tm_read_opts o = {0};
    o.job = job;
    assert_non_null(t);
    if (pflex_tm_read_file(t, path, &o, &err) < 0)
        fail_msg("%s: %s", path, err.text);
    assert_int_equal(pflex_tm_sort(t, &err), 0);
    return t;
}

/* The values of one series in time order; returns how many. */
static size_t values(const pflex_tm_t *t, const char *job, const char *host, int gpu, int field,
                     double *out, double *times, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nsamples; i++) {
        const struct pflex_tm_series *s = &t->series[t->samples[i].series];
        if (s->gpu != gpu || s->field != field || strcmp(s->host, host))
            continue;
        if ((job == NULL) != (s->job == NULL) || (job && strcmp(job, s->job)))
            continue;
        if (n < max) {
            out[n] = t->samples[i].value;
            if (times)
                times[n] = t->samples[i].time_s;
        }
        n++;
    }
    return n;
}

static void expect_error(const char *text, enum pflex_tm_format f, const char *needle)
{
    pflex_tm_t *t = pflex_tm_create(NULL);
    pflex_error_t err = {{0}};
    struct pflex_tm_read_opts o = {0};
    o.format = f;
    int rc = pflex_tm_read_mem(t, text, strlen(text), "bad.txt", &o, &err);
    assert_int_equal(rc, -1);
    assert_int_equal(t->nsamples, 0);
    if (!strstr(err.text, needle))
        fail_msg("error '%s' lacks '%s'", err.text, needle);
    pflex_tm_destroy(t);
}

/* Two stores hold the same series and samples (the line a series was
 * first seen on aside: it follows the input's order). */
static void assert_same_store(const pflex_tm_t *a, const pflex_tm_t *b)
{
    assert_int_equal(a->nseries, b->nseries);
    assert_int_equal(a->nsamples, b->nsamples);
    assert_int_equal(a->skipped, b->skipped);
    for (size_t i = 0; i < a->nseries; i++) {
        const struct pflex_tm_series *p = &a->series[i], *q = &b->series[i];
        assert_int_equal(p->gpu, q->gpu);
        assert_int_equal(p->field, q->field);
        assert_string_equal(p->host, q->host);
        assert_true((p->job == NULL) == (q->job == NULL));
        if (p->job)
            assert_string_equal(p->job, q->job);
        assert_true((p->uuid == NULL) == (q->uuid == NULL));
        if (p->uuid)
            assert_string_equal(p->uuid, q->uuid);
    }
    for (size_t i = 0; i < a->nsamples; i++) {
        assert_int_equal(a->samples[i].series, b->samples[i].series);
        assert_true(a->samples[i].time_s == b->samples[i].time_s);
        assert_true(a->samples[i].value == b->samples[i].value);
    }
}

static void test_detect(void **state)
{
    static const struct { const char *file; enum pflex_tm_format f; } cases[] = {
        {DIR "smi_units.csv", PFLEX_TMF_SMI}, {DIR "smi_nounits.csv", PFLEX_TMF_SMI},
        {DIR "dmon.txt", PFLEX_TMF_DMON}, {DIR "dcgm_exporter.prom", PFLEX_TMF_PROM},
        {DIR "prom_vector.json", PFLEX_TMF_PROMJSON}, {DIR "prom_matrix.json", PFLEX_TMF_PROMJSON},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        FILE *f = fopen(cases[i].file, "rb");
        char buf[4096];
        assert_non_null(f);
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        assert_int_equal(pflex_tm_detect(buf, n), cases[i].f);
    }
    assert_int_equal(pflex_tm_detect("hello world\n", 12), PFLEX_TMF_AUTO);
}

static void test_smi_units(void **state)
{
    pflex_tm_t *t = load(DIR "smi_units.csv", "j");
    double v[8], ts[8];
    assert_int_equal(values(t, "j", "", 0, PFLEX_DCGM_POWER_USAGE, v, ts, 8), 2);
    assert_dbl(v[0], 655.21, 1e-9);
    assert_dbl(v[1], 499.87, 1e-9);
    /* 2026/12/03 10:00:00.125 UTC */
    assert_dbl(ts[0], 1796292000.125, 1e-6);
    assert_dbl(ts[1] - ts[0], 5.0, 1e-6);
    assert_int_equal(values(t, "j", "", 1, PFLEX_DCGM_SM_CLOCK, v, NULL, 8), 2);
    assert_dbl(v[0], 1965, 0);
    assert_dbl(v[1], 1590, 0);
    assert_int_equal(values(t, "j", "", 0, PFLEX_DCGM_POWER_LIMIT_MIN, v, NULL, 8), 2);
    assert_dbl(v[0], 200, 0);
    /* "Not Active" then "Active": the SW power cap bit of the reasons mask */
    assert_int_equal(values(t, "j", "", 0, PFLEX_DCGM_CLOCKS_EVENT_REASONS, v, NULL, 8), 2);
    assert_dbl(v[0], 0, 0);
    assert_dbl(v[1], 4, 0);
    /* [N/A] and [Not Supported] averages are no data */
    assert_int_equal(values(t, "j", "", 0, PFLEX_DCGM_POWER_USAGE_INSTANT, v, NULL, 8), 0);
    assert_int_equal(t->skipped, 4);
    /* UUIDs are kept */
    assert_string_equal(t->series[0].uuid, "GPU-1b2c3d4e-0000-1111-2222-333344445555");
    pflex_tm_destroy(t);
}

static void test_smi_nounits(void **state)
{
    pflex_tm_t *t = load(DIR "smi_nounits.csv", NULL);
    double v[8], ts[8];
    assert_int_equal(values(t, NULL, "", 0, PFLEX_DCGM_GPU_UTIL, v, ts, 8), 2);
    assert_dbl(v[0], 0, 0);
    assert_dbl(v[1], 100, 0);
    /* no timestamp: the row number */
    assert_dbl(ts[0], 0, 0);
    assert_dbl(ts[1], 2, 0);
    assert_int_equal(values(t, NULL, "", 1, PFLEX_DCGM_POWER_USAGE, v, NULL, 8), 1);
    assert_dbl(v[0], 650.0, 0);
    assert_int_equal(values(t, NULL, "", 0, PFLEX_DCGM_FB_USED, v, NULL, 8), 2);
    assert_dbl(v[1], 120034, 0);
    assert_int_equal(t->nsamples, 27);
    pflex_tm_destroy(t);
}

static void test_dmon(void **state)
{
    pflex_tm_t *t = load(DIR "dmon.txt", NULL);
    double v[8], ts[8];
    assert_int_equal(values(t, NULL, "", 0, PFLEX_DCGM_DRAM_ACTIVE, v, ts, 8), 2);
    assert_dbl(v[0], 0.322, 1e-12);
    assert_dbl(v[1], 0.320, 1e-12);
    assert_dbl(ts[0], 0, 0);
    assert_dbl(ts[1], 1, 0);
    /* GPU 1's second GPUTL is N/A */
    assert_int_equal(values(t, NULL, "", 1, PFLEX_DCGM_GPU_UTIL, v, NULL, 8), 1);
    assert_int_equal(values(t, NULL, "", 1, PFLEX_DCGM_POWER_USAGE, v, NULL, 8), 2);
    assert_dbl(v[1], 641.0, 0);
    /* the GPU-I row is all N/A */
    assert_int_equal(t->nsamples, 23);
    assert_int_equal(t->skipped, 7);
    pflex_tm_destroy(t);
}

static void test_prom_text(void **state)
{
    pflex_tm_t *t = load(DIR "dcgm_exporter.prom", "fallback");
    double v[8], ts[8];
    /* pod label (empty hpc_job does not count), labels in any order */
    assert_int_equal(values(t, "llama70b-lora-0", "node-a", 1, PFLEX_DCGM_SM_CLOCK, v, NULL, 8), 1);
    assert_dbl(v[0], 1965, 0);
    assert_int_equal(values(t, "llama70b-lora-0", "node-a", 0, PFLEX_DCGM_TOTAL_ENERGY, v, NULL,
                            8), 1);
    assert_dbl(v[0], 4.0123456789e9, 1);
    /* the sentinel 9223372036854775794 is no data */
    assert_int_equal(values(t, "llama70b-lora-0", "node-a", 1, PFLEX_DCGM_TOTAL_ENERGY, v, NULL,
                            8), 0);
    /* hpc_job beats pod; lower-case hostname; escaped label values; a
     * timestamp in ms */
    assert_int_equal(values(t, "slurm-4242", "node-b", 0, PFLEX_DCGM_DRAM_ACTIVE, v, ts, 8), 2);
    assert_dbl(v[0], 0.322, 1e-12);
    assert_dbl(ts[1], 1764756005.0, 1e-9);
    /* XID errors: a metric pflex does not read, skipped with the sentinel */
    assert_int_equal(t->skipped, 2);
    assert_int_equal(t->nsamples, 7);
    pflex_tm_destroy(t);
}

/* A metric-major scrape, its GPUs in a seeded shuffled order and some
 * twice (two scrapes, one after the other): the reader's own sort order
 * (from its GPU table) gives the store what samples added one by one
 * give, series and samples alike. */
static void test_prom_metric_major_order(void **state)
{
    enum { NG = 40, NM = 3 };
    static const int fields[NM] = {PFLEX_DCGM_POWER_USAGE, PFLEX_DCGM_SM_CLOCK,
                                   PFLEX_DCGM_GPU_UTIL};
    int perm[NG];
    uint64_t r = 20261204;
    for (int i = 0; i < NG; i++)
        perm[i] = i;
    for (int i = NG - 1; i > 0; i--) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        int j = (int)((r >> 33) % (uint64_t)(i + 1));
        int x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    size_t cap = 1 << 16, len = 0;
    char *txt = malloc(cap);
    pflex_tm_t *want = pflex_tm_create(NULL);
    pflex_error_t err;
    for (int scrape = 0; scrape < 2; scrape++)
        for (int m = 0; m < NM; m++)
            for (int i = 0; i < NG; i++) {
                int g = perm[i], node = g / 8, gpu = g % 8;
                if (scrape && i % 3)
                    continue;
                char job[32], host[32], uuid[32];
                snprintf(job, sizeof job, "job-%d", node / 2);
                snprintf(host, sizeof host, "node-%d", node);
                snprintf(uuid, sizeof uuid, "GPU-%04d", g);
                double v = 100 * m + g + scrape, ms = 1000.0 * (1 + scrape);
                len += (size_t)snprintf(txt + len, cap - len,
                                        "%s{gpu=\"%d\",UUID=\"%s\",Hostname=\"%s\",pod=\"%s\"}"
                                        " %g %.0f\n", pflex_dcgm_info(fields[m])->name, gpu,
                                        uuid, host, job, v, ms);
                assert_true(len < cap);
                assert_int_equal(pflex_tm_add(want, job, host, gpu, uuid, fields[m], ms / 1000,
                                              v, &err), 0);
            }
    pflex_tm_t *t = pflex_tm_create(NULL);
    assert_int_equal(pflex_tm_read_mem(t, txt, len, "mm.prom", NULL, &err), 0);
    assert_int_equal(pflex_tm_sort(t, &err), 0);
    assert_int_equal(pflex_tm_sort(want, &err), 0);
    assert_same_store(t, want);
    pflex_tm_destroy(t);
    pflex_tm_destroy(want);
    free(txt);
}

static void test_prom_mig(void **state)
{
    const char *txt = "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",GPU_I_ID=\"2\",Hostname=\"n\"} 50\n"
                      "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"n\"} 60\n";
    pflex_tm_t *t = pflex_tm_create(NULL);
    pflex_error_t err;
    assert_int_equal(pflex_tm_read_mem(t, txt, strlen(txt), "mig", NULL, &err), 0);
    assert_int_equal(pflex_tm_sort(t, &err), 0);
    double v[2];
    assert_int_equal(values(t, NULL, "n", 1, PFLEX_DCGM_GPU_UTIL, v, NULL, 2), 1);
    assert_dbl(v[0], 60, 0);
    assert_int_equal(values(t, NULL, "n", 10102, PFLEX_DCGM_GPU_UTIL, v, NULL, 2), 1);
    assert_dbl(v[0], 50, 0);
    pflex_tm_destroy(t);
    expect_error("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",GPU_I_ID=\"x\"} 50\n", PFLEX_TMF_PROM,
                 "bad.txt:1: label GPU_I_ID");
}

static void test_prom_json(void **state)
{
    pflex_tm_t *t = load(DIR "prom_vector.json", NULL);
    double v[8], ts[8];
    assert_int_equal(values(t, "llama70b-lora-0", "node-a", 1, PFLEX_DCGM_POWER_USAGE, v, ts, 8),
                     1);
    assert_dbl(v[0], 640.5, 0);
    assert_dbl(ts[0], 1764756000.125, 1e-9);
    assert_int_equal(t->skipped, 1);    /* "up" */
    pflex_tm_destroy(t);
    t = load(DIR "prom_matrix.json", NULL);
    assert_int_equal(values(t, "slurm-4242", "node-b", 0, PFLEX_DCGM_DRAM_ACTIVE, v, ts, 8), 3);
    assert_dbl(v[2], 0.318, 1e-12);
    assert_dbl(ts[2], 1764756015, 0);
    assert_int_equal(t->skipped, 1);    /* NaN */
    pflex_tm_destroy(t);
}

static void test_roundtrip_pflex_csv(void **state)
{
    pflex_tm_t *t = load(DIR "dcgm_exporter.prom", NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(pflex_tm_write_csv(t, f), 0);
    fclose(f);
    pflex_tm_t *u = pflex_tm_create(NULL);
    pflex_error_t err;
    assert_int_equal(pflex_tm_detect(buf, len), PFLEX_TMF_PFLEX);
    if (pflex_tm_read_mem(u, buf, len, "rt.csv", NULL, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(pflex_tm_sort(u, &err), 0);
    assert_int_equal(u->nsamples, t->nsamples);
    assert_int_equal(u->nseries, t->nseries);
    for (size_t i = 0; i < t->nsamples; i++) {
        assert_dbl(u->samples[i].value, t->samples[i].value, 0);
        assert_dbl(u->samples[i].time_s, t->samples[i].time_s, 0);
        assert_int_equal(u->series[u->samples[i].series].field,
                         t->series[t->samples[i].series].field);
    }
    free(buf);
    pflex_tm_destroy(t);
    pflex_tm_destroy(u);
}

static void test_jobmap(void **state)
{
    pflex_tm_t *t = load(DIR "smi_units.csv", NULL);
    pflex_tm_jobmap_t *m;
    pflex_error_t err;
    /* smi names no host: the host-less rows and UUID rows match */
    const char *map = "job,gpu,host\nA,0,\nB,GPU-9a8b7c6d-0000-1111-2222-333344445555,*\n";
    assert_int_equal(pflex_tm_jobmap_read_mem(map, strlen(map), "m.csv", &m, &err), 0);
    assert_int_equal(pflex_tm_jobmap_apply(t, m), 0);
    pflex_tm_jobmap_destroy(m);     /* the store keeps its own copy */
    assert_int_equal(pflex_tm_sort(t, &err), 0);
    double v[4];
    assert_int_equal(values(t, "A", "", 0, PFLEX_DCGM_POWER_USAGE, v, NULL, 4), 2);
    assert_int_equal(values(t, "B", "", 1, PFLEX_DCGM_POWER_USAGE, v, NULL, 4), 2);
    pflex_tm_destroy(t);

    pflex_tm_jobmap_t *m2;
    assert_int_equal(pflex_tm_jobmap_read_file(DIR "jobmap.csv", &m2, &err), 0);
    pflex_tm_jobmap_destroy(m2);
    const char *dup = "job,host,gpu\nA,n,0\nB,n,0\n";
    assert_int_equal(pflex_tm_jobmap_read_mem(dup, strlen(dup), "d.csv", &m2, &err), -1);
    assert_non_null(strstr(err.text, "mapped to both"));
    const char *badgpu = "job,gpu\nA,zero\n";
    assert_int_equal(pflex_tm_jobmap_read_mem(badgpu, strlen(badgpu), "b.csv", &m2, &err), -1);
    assert_non_null(strstr(err.text, "b.csv:2: column 'gpu'"));
}

static void test_bad_input(void **state)
{
    expect_error("index, power.draw [W]\n0, fast W\n", PFLEX_TMF_SMI, "bad.txt:2: column 2");
    expect_error("index, power.draw [W]\n0\n", PFLEX_TMF_SMI, "bad.txt:2: 1 fields");
    expect_error("power.draw [W]\n650 W\n", PFLEX_TMF_SMI, "neither index nor uuid");
    expect_error("timestamp, index, power.draw\n2026-12-03, 0, 1\n", PFLEX_TMF_SMI,
                 "bad.txt:2: column 'timestamp'");
    expect_error("index, pstate\n0, P0\n", PFLEX_TMF_SMI, "no nvidia-smi query field");
    expect_error("GPU 0 1 2\n", PFLEX_TMF_DMON, "bad.txt:1: a row before");
    expect_error("#Entity POWER\nGPU 0 1 2\n", PFLEX_TMF_DMON, "bad.txt:2: 2 values");
    expect_error("#Entity POWER\nCPU 0 1\n", PFLEX_TMF_DMON, "is not an entity");
    expect_error("#Entity POWER\nGPU 0 12x\n", PFLEX_TMF_DMON, "bad.txt:2: column 2");
    expect_error("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\" 1\n", PFLEX_TMF_PROM,
                 "bad.txt:1: column 33: expected ',' or '}'");
    expect_error("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",gpu=\"1\"} 1\n", PFLEX_TMF_PROM,
                 "given twice");
    expect_error("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\\x\"} 1\n", PFLEX_TMF_PROM, "unknown escape");
    expect_error("x 1\nDCGM_FI_DEV_POWER_USAGE{gpu=\"zero\"} 1\n", PFLEX_TMF_PROM,
                 "bad.txt:2: label gpu");
    expect_error("DCGM_FI_DEV_POWER_USAGE 1 2 3\n", PFLEX_TMF_PROM, "after the timestamp");
    expect_error("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} one\n", PFLEX_TMF_PROM, "not a sample value");
    expect_error("{\"status\":\"error\",\"error\":\"bad query\"}", PFLEX_TMF_PROMJSON,
                 "Prometheus says error: bad query");
    expect_error("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{"
                 "\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_UTIL\"},\"values\":[[1,\"2\"],[1]]}]}}",
                 PFLEX_TMF_PROMJSON, "data.result[0].values[1]");
    expect_error("{\"status\": ", PFLEX_TMF_PROMJSON, "bad.txt:1:");
    expect_error("hello\n", PFLEX_TMF_AUTO, "not telemetry pflex knows");
    expect_error("", PFLEX_TMF_AUTO, "empty file");
    /* a failed read leaves what earlier reads added */
    pflex_tm_t *t = load(DIR "dmon.txt", NULL);
    size_t n = t->nsamples;
    pflex_error_t err;
    const char *bad = "#Entity POWER\nGPU 0 1\nGPU 0 x\n";
    assert_int_equal(pflex_tm_read_mem(t, bad, strlen(bad), "b", NULL, &err), -1);
    assert_int_equal(t->nsamples, n);
    pflex_tm_destroy(t);
}

static void test_limits(void **state)
{
    /* a line over the limit fails before the reader looks at it */
    struct pflex_tm_limits lim = {0};
    lim.max_line = 64;
    lim.max_series = 3;
    pflex_tm_t *t = pflex_tm_create(&lim);
    pflex_error_t err;
    char line[200];
    memset(line, 'a', sizeof line);
    line[sizeof line - 1] = '\n';
    char buf[400];
    snprintf(buf, sizeof buf, "# HELP x\n%.*s", (int)sizeof line, line);
    struct pflex_tm_read_opts o = {0};
    o.format = PFLEX_TMF_PROM;
    assert_int_equal(pflex_tm_read_mem(t, buf, strlen(buf), "long", &o, &err), -1);
    assert_non_null(strstr(err.text, "long:2: line longer than 64 bytes"));
    const char *many = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 1\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 1\n"
                       "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\"} 1\nDCGM_FI_DEV_GPU_UTIL{gpu=\"3\"} 1\n";
    assert_int_equal(pflex_tm_read_mem(t, many, strlen(many), "many", &o, &err), -1);
    assert_non_null(strstr(err.text, "many:4: more than 3 series"));
    assert_int_equal(t->nseries, 0);
    pflex_tm_destroy(t);
    /* nvidia-smi adds a row's samples together: the first error of a row
     * is still the one its values meet in column order (the sample limit
     * at column 2 before a bad column 4; a bad column 2 before the limit) */
    static const char *const rows[][2] = {
        {"index, power.draw [W], utilization.gpu [%], temperature.gpu\n0, 1 W, 2 %, 3\n"
         "1, 4 W, 5 %, x\n", "smi:3: more than 4 samples (limit)"},
        {"index, power.draw [W], utilization.gpu [%], temperature.gpu\n0, 1 W, 2 %, 3\n"
         "1, x W, 5 %, 6\n", "smi:3: column 2: 'x W' is not a value"},
        {"index, power.draw [W], utilization.gpu [%], temperature.gpu\n0, 1 W, 2 %, 3\n"
         "0, 4 W, [N/A], [N/A]\n", NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        struct pflex_tm_limits sl = {0};
        sl.max_samples = 4;
        t = pflex_tm_create(&sl);
        o.format = PFLEX_TMF_SMI;
        int rc = pflex_tm_read_mem(t, rows[i][0], strlen(rows[i][0]), "smi", &o, &err);
        if (rows[i][1]) {
            assert_int_equal(rc, -1);
            if (!strstr(err.text, rows[i][1]))
                fail_msg("error '%s' lacks '%s'", err.text, rows[i][1]);
            assert_int_equal(t->nsamples, 0);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(t->nsamples, 4);
            assert_int_equal(t->skipped, 2);
        }
        pflex_tm_destroy(t);
    }
}

static void test_blank_sentinels(void **state)
{
    assert_true(pflex_dcgm_is_blank(9223372036854775794.0));
    assert_true(pflex_dcgm_is_blank(9223372036854775792.0));
    assert_true(pflex_dcgm_is_blank(140737488355328.0));
    assert_true(pflex_dcgm_is_blank(140737488355329.0));
    assert_false(pflex_dcgm_is_blank(4.0123456789e9));
    assert_false(pflex_dcgm_is_blank(0));
    assert_int_equal(pflex_dcgm_by_id(1005), PFLEX_DCGM_DRAM_ACTIVE);
    assert_int_equal(pflex_dcgm_by_tag("DRAMA", 5), PFLEX_DCGM_DRAM_ACTIVE);
    assert_int_equal(pflex_dcgm_by_name("DCGM_FI_DEV_MEM_COPY_UTIL", 25), PFLEX_DCGM_MEM_COPY_UTIL);
}

/* ---- a real HTTP server on loopback ---- */

static const char *served;
static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **ctx)
{
    unsigned code = MHD_HTTP_OK;
    const char *body = served;
    if (!strcmp(url, "/missing")) {
        code = MHD_HTTP_NOT_FOUND;
        body = "not here";
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}


static pflex_tm_t *load_text(const char *text, const char *name)
{
    pflex_tm_t *t = pflex_tm_create(NULL);
    pflex_error_t err;
    assert_non_null(t);
    if (pflex_tm_read_mem(t, text, strlen(text), name, NULL, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(pflex_tm_sort(t, &err), 0);
    return t;
}

/* The store sorts only what is out of order: an input already in the
 * store's order, the same rows time-major (as nvidia-smi loops), and the
 * same rows shuffled give the same store; so do a scrape and its lines
 * reversed, and samples added in order and in reverse. */
static void test_sorted_unsorted(void **state)
{
    (void)state;
    enum { GPUS = 3, TICKS = 40 };
    const char *head = "timestamp, index, uuid, power.draw [W], utilization.gpu [%]\n";
    static char row[GPUS * TICKS][128];
    size_t n = 0;
    for (int g = 0; g < GPUS; g++)          /* by GPU, then time: the store's order */
        for (int k = 0; k < TICKS; k++)
            snprintf(row[n++], sizeof row[0], "2026/12/03 10:%02d:%02d.250, %d, GPU-%d, "
                     "%d.%02d W, %d %%\n", k / 60, k % 60, g, g, 300 + (g * 37 + k * 11) % 400,
                     k % 100, (g + k * 7) % 101);
    static char by_gpu[GPUS * TICKS * 128 + 128], by_time[sizeof by_gpu], shuffled[sizeof by_gpu];
    strcpy(by_gpu, head);
    strcpy(by_time, head);
    strcpy(shuffled, head);
    for (size_t i = 0; i < n; i++)
        strcat(by_gpu, row[i]);
    for (int k = 0; k < TICKS; k++)
        for (int g = 0; g < GPUS; g++)
            strcat(by_time, row[(size_t)g * TICKS + (size_t)k]);
    for (size_t i = 0; i < n; i++)          /* a fixed permutation: 7 is prime to 120 */
        strcat(shuffled, row[(i * 7) % n]);
    pflex_tm_t *a = load_text(by_gpu, "by-gpu"), *b = load_text(by_time, "by-time"),
               *c = load_text(shuffled, "shuffled");
    assert_int_equal(a->nseries, GPUS * 2);
    assert_int_equal(a->nsamples, GPUS * TICKS * 2);
    assert_same_store(a, b);
    assert_same_store(a, c);
    pflex_tm_destroy(a);
    pflex_tm_destroy(b);
    pflex_tm_destroy(c);

    const char *scrape =
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"b\"} 301 1000\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",Hostname=\"a\"} 302 1000\n"
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"b\"} 91 1000\n"
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"a\"} 92 1000\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"b\"} 311 2000\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",Hostname=\"a\"} 312 2000\n";
    const char *reversed =
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",Hostname=\"a\"} 312 2000\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"b\"} 311 2000\n"
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"a\"} 92 1000\n"
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"b\"} 91 1000\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",Hostname=\"a\"} 302 1000\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"b\"} 301 1000\n";
    a = load_text(scrape, "scrape");
    b = load_text(reversed, "reversed");
    assert_same_store(a, b);
    assert_string_equal(a->series[0].host, "a");
    assert_dbl(a->samples[a->nsamples - 1].value, 91, 0);   /* b, GPU 0, GPU_UTIL: the last series */
    pflex_tm_destroy(a);
    pflex_tm_destroy(b);

    pflex_error_t err;
    a = pflex_tm_create(NULL);
    b = pflex_tm_create(NULL);
    for (int i = 0; i < 50; i++) {
        int j = 49 - i;
        assert_int_equal(pflex_tm_add(a, "j", "h", i / 10, NULL, PFLEX_DCGM_GPU_UTIL, i % 10,
                                      i, &err), 0);
        assert_int_equal(pflex_tm_add(b, "j", "h", j / 10, NULL, PFLEX_DCGM_GPU_UTIL, j % 10,
                                      j, &err), 0);
    }
    assert_int_equal(pflex_tm_sort(a, &err), 0);
    assert_int_equal(pflex_tm_sort(b, &err), 0);
    assert_same_store(a, b);
    /* more after a sort: still sorted where it must be */
    assert_int_equal(pflex_tm_add(a, "i", "h", 0, NULL, PFLEX_DCGM_GPU_UTIL, 5, 1, &err), 0);
    assert_int_equal(pflex_tm_add(a, "j", "h", 0, NULL, PFLEX_DCGM_GPU_UTIL, 0.5, 2, &err), 0);
    assert_int_equal(pflex_tm_sort(a, &err), 0);
    assert_string_equal(a->series[0].job, "i");
    assert_dbl(a->samples[1].value, 0, 0);
    assert_dbl(a->samples[2].value, 2, 0);
    assert_dbl(a->samples[2].time_s, 0.5, 0);
    pflex_tm_destroy(a);
    pflex_tm_destroy(b);
}

/* nvidia-smi rows written straight into per-series runs (an empty
 * store) give the same store as rows appended and grouped by the sort (a
 * store that already holds a sample: no runs), for seeded random inputs
 * with blanks, a field given by two columns, rows out of order, GPUs
 * missing from ticks, a GPU whose UUID changes and indexes past the
 * count's range. */
static void test_smi_runs(void **state)
{
    (void)state;
    uint64_t rs = 20261204;
    for (int round = 0; round < 60; round++) {
        char *text = malloc(1 << 16);
        size_t len = 0, cap = 1 << 16;
        assert_non_null(text);
        len += (size_t)snprintf(text, cap, "timestamp, index, uuid, power.draw [W], "
                                "power.draw.average [W], utilization.gpu [%%], clocks.sm [MHz]\n");
        int gpus = 1 + round % 5, ticks = 1 + round % 17;
        for (int k = 0; k < ticks && len + 512 < cap; k++)
            for (int g = 0; g < gpus; g++) {
                rs = rs * 6364136223846793005ull + 1442695040888963407ull;
                unsigned r = (unsigned)(rs >> 33);
                if (r % 11 == 0)
                    continue;                       /* a GPU missing from a tick */
                int gi = round % 13 == 5 && g == 1 ? 2000 : g;  /* past the count's range */
                int kk = r % 7 == 0 && k ? k - 1 : k;           /* a row out of time order */
                len += (size_t)snprintf(text + len, cap - len,
                                        "2026/12/03 10:00:%02d.%03d, %d, GPU-%d%s, %s, %d W, "
                                        "%d %%, %s\n", kk % 60, (int)(r % 1000), gi, gi,
                                        round % 9 == 4 && g == 0 && k == ticks / 2 ? "x" : "",
                                        r % 5 == 0 ? "[N/A]" : "300 W", (int)(r % 700),
                                        (int)(r % 101), r % 3 == 0 ? "[Not Supported]" : "1980 MHz");
            }
        pflex_error_t err;
        pflex_tm_t *a = pflex_tm_create(NULL), *b = pflex_tm_create(NULL);
        assert_int_equal(pflex_tm_add(b, "a-first", "h", 0, NULL, PFLEX_DCGM_GPU_TEMP, 0, 1, &err), 0);
        if (pflex_tm_read_mem(a, text, len, "runs.csv", NULL, &err) < 0 ||
            pflex_tm_read_mem(b, text, len, "runs.csv", NULL, &err) < 0)
            fail_msg("round %d: %s", round, err.text);
        assert_int_equal(pflex_tm_sort(a, &err), 0);
        assert_int_equal(pflex_tm_sort(b, &err), 0);
        assert_int_equal(a->nseries + 1, b->nseries);
        assert_int_equal(a->nsamples + 1, b->nsamples);
        assert_string_equal(b->series[0].job, "a-first");
        for (size_t i = 0; i < a->nseries; i++) {
            const struct pflex_tm_series *x = &a->series[i], *y = &b->series[i + 1];
            assert_int_equal(x->gpu, y->gpu);
            assert_int_equal(x->field, y->field);
            assert_string_equal(x->uuid, y->uuid);
            assert_null(x->job);
        }
        for (size_t i = 0; i < a->nsamples; i++) {
            assert_int_equal(a->samples[i].series + 1, b->samples[i + 1].series);
            assert_dbl(a->samples[i].time_s, b->samples[i + 1].time_s, 0);
            assert_dbl(a->samples[i].value, b->samples[i + 1].value, 0);
        }
        pflex_tm_destroy(a);
        pflex_tm_destroy(b);
        free(text);
    }
}

/* nvidia-smi rows whose every value is no data: the runs laid out for them
 * end with no series, and the read is empty, its cells counted. */
/* nvidia-smi files past the plan's windows (256 KiB) whose GPUs come in one
 * cycle (the runs are sized tight), one where a GPU stops half-way (not a
 * cycle in every window) and one with a stretch of shorter rows that no
 * window sees (the windows misjudge the rows: a run overflows and the store
 * appends): each reads as the same samples added one by one. */
static void test_smi_cycle_plan(void **state)
{
    (void)state;
    enum { NG = 8, TICKS = 6000 };
    for (int variant = 0; variant < 3; variant++) {
        size_t cap = (size_t)TICKS * NG * 96 + 256, len = 0;
        char *txt = malloc(cap);
        assert_non_null(txt);
        pflex_tm_t *want = pflex_tm_create(NULL);
        pflex_error_t err;
        len += (size_t)snprintf(txt, cap, "index, power.draw [W], utilization.gpu [%%]\n");
        int row = 0;   /* no time column: a row's time is its number */
        for (int k = 0; k < TICKS; k++)
            for (int g = 0; g < NG; g++) {
                if (variant == 1 && g == 5 && k >= TICKS / 2)
                    continue;
                /* variant 2: short rows between two windows (about half-way) */
                int dense = variant == 2 && k >= TICKS * 48 / 100 && k < TICKS * 53 / 100;
                double w = variant == 2 && !dense ? 100000000000.25 + k : 300.5 + g;
                int u = (k * 7 + g) % 101;
                len += (size_t)snprintf(txt + len, cap - len, "%d, %.2f W, %d %%\n", g, w, u);
                assert_int_equal(pflex_tm_add(want, NULL, "", g, NULL, PFLEX_DCGM_POWER_USAGE, row,
                                              w, &err), 0);
                assert_int_equal(pflex_tm_add(want, NULL, "", g, NULL, PFLEX_DCGM_GPU_UTIL, row,
                                              u, &err), 0);
                row++;
            }
        assert_true(len > 256 << 10 && len < cap);
        pflex_tm_t *t = pflex_tm_create(NULL);
        struct pflex_tm_read_opts o = {0};
        o.format = PFLEX_TMF_SMI;
        assert_int_equal(pflex_tm_read_mem(t, txt, len, "cycle.csv", &o, &err), 0);
        assert_int_equal(pflex_tm_sort(t, &err), 0);
        assert_int_equal(pflex_tm_sort(want, &err), 0);
        assert_same_store(t, want);
        pflex_tm_destroy(t);
        pflex_tm_destroy(want);
        free(txt);
    }
}

static void test_smi_no_data(void **state)
{
    (void)state;
    static const char text[] = "index, power.draw [W]\n0, [N/A]\n1, [N/A]\n0, [N/A]\n";
    pflex_error_t err;
    pflex_tm_t *t = pflex_tm_create(NULL);
    assert_int_equal(pflex_tm_read_mem(t, text, sizeof text - 1, "na.csv", NULL, &err), 0);
    assert_int_equal(pflex_tm_sort(t, &err), 0);
    assert_int_equal(t->nseries, 0);
    assert_int_equal(t->nsamples, 0);
    assert_int_equal(t->skipped, 3);
    pflex_tm_destroy(t);
}

/* A scrape of more series than the old default limit (1,000,000): 125,001
 * hosts x 8 GPUs, one field each, read with the default limits; the same
 * with --max-series 1000000 stops at the series past it. */
static void test_many_series(void **state)
{
    (void)state;
    enum { HOSTS = 125001, GPUS = 8 };
    size_t cap = (size_t)HOSTS * GPUS * 64, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text, cap, "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n");
    for (int h = 0; h < HOSTS; h++)
        for (int g = 0; g < GPUS; g++)
            len += (size_t)snprintf(text + len, cap - len,
                                    "DCGM_FI_DEV_GPU_TEMP{gpu=\"%d\",Hostname=\"n%06d\"} %d\n",
                                    g, h, 40 + (h + g) % 40);
    pflex_tm_t *t = pflex_tm_create(NULL);
    pflex_error_t err;
    assert_non_null(t);
    if (pflex_tm_read_mem(t, text, len, "big.prom", NULL, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(t->nseries, (size_t)HOSTS * GPUS);
    assert_int_equal(t->nsamples, (size_t)HOSTS * GPUS);
    assert_int_equal(pflex_tm_sort(t, &err), 0);
    assert_string_equal(t->series[t->nseries - 1].host, "n125000");
    assert_int_equal(t->series[t->nseries - 1].gpu, 7);
    pflex_tm_destroy(t);

    struct pflex_tm_limits lim = {0};
    lim.max_series = 1000000;
    t = pflex_tm_create(&lim);
    assert_int_equal(pflex_tm_read_mem(t, text, len, "big.prom", NULL, &err), -1);
    assert_non_null(strstr(err.text, "big.prom:1000002: more than 1000000 series"));
    assert_int_equal(t->nseries, 0);
    pflex_tm_destroy(t);
    free(text);
}

static void test_fetch(void **state)
{
    static char body[8192];
    FILE *f = fopen(DIR "prom_matrix.json", "rb");
    assert_non_null(f);
    size_t n = fread(body, 1, sizeof body - 1, f);
    fclose(f);
    body[n] = 0;
    served = body;
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
                                            answer, NULL, MHD_OPTION_CONNECTION_TIMEOUT, 5u,
                                            MHD_OPTION_END);
    if (!d)
        skip();
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    assert_non_null(info);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/query_range?query=x",
             (unsigned)info->port);
    struct pflex_tm_limits lim = {0};
    lim.timeout_ms = 5000;
    pflex_tm_t *t = pflex_tm_create(&lim);
    pflex_error_t err;
    if (pflex_tm_fetch(t, url, NULL, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(t->nsamples, 6);
    pflex_tm_destroy(t);
    /* 404 */
    snprintf(url, sizeof url, "http://127.0.0.1:%u/missing", (unsigned)info->port);
    t = pflex_tm_create(&lim);
    assert_int_equal(pflex_tm_fetch(t, url, NULL, &err), -1);
    assert_non_null(strstr(err.text, "HTTP status 404"));
    pflex_tm_destroy(t);
    /* the size limit */
    lim.max_fetch = 100;
    snprintf(url, sizeof url, "http://127.0.0.1:%u/big", (unsigned)info->port);
    t = pflex_tm_create(&lim);
    assert_int_equal(pflex_tm_fetch(t, url, NULL, &err), -1);
    assert_non_null(strstr(err.text, "larger than 100 bytes"));
    pflex_tm_destroy(t);
    MHD_stop_daemon(d);
    /* nothing listens there any more: an error, not a hang */
    t = pflex_tm_create(&lim);
    assert_int_equal(pflex_tm_fetch(t, url, NULL, &err), -1);
    assert_int_equal(pflex_tm_fetch(t, "ftp://127.0.0.1/x", NULL, &err), -1);
    pflex_tm_destroy(t);
}

/* A file of 1 MiB or more is read as it is split (streamed, in chunks);
 * the same bytes in memory are read whole.  Both must give the same store
 * or the same error, on nvidia-smi CSV with quoted fields running over
 * lines and chunk ends, comments, blank lines, CRLF, no data, and on
 * scrapes with label sets in another order, unknown metrics and blanks;
 * some inputs with an error late in the file. */
static char *stream_input(int kind, int round, size_t *len)
{
    size_t cap = (3u << 20) + (1u << 16), n = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    if (kind == 0)
        n += (size_t)snprintf(b, cap, "timestamp, index, uuid, power.draw [W], name, "
                              "utilization.gpu [%%]\n");
    size_t want = (1u << 20) + (size_t)rng_int(0, 2 << 20);
    int bad_at = round % 3 == 2 ? rng_int(1000, 20000) : -1;
    for (int r = 0; n + 512 < cap && n < want; r++) {
        int g = r % 8, k = rng_int(0, 99);
        const char *eol = k % 4 == 0 ? "\r\n" : "\n";
        if (kind == 0) {
            if (k < 2) {
                n += (size_t)snprintf(b + n, cap - n, "# comment %d%s", r, eol);
                continue;
            }
            if (k == 2) {
                n += (size_t)snprintf(b + n, cap - n, "%s", eol);
                continue;
            }
            n += (size_t)snprintf(b + n, cap - n, "%s2026/12/03 10:%02d:%02d.%03d%s, %d, GPU-%d, "
                                  "%s, %s, %d %%%s", k == 3 ? "\"" : "", r / 480 % 60, r / 8 % 60,
                                  r % 1000, k == 3 ? "\"" : "", g, g,
                                  r == bad_at ? "x W" : k == 5 ? "[N/A]" : "655.21 W",
                                  k < 12 ? "\"NVIDIA\nH200, \"\"sxm\"\"\"" : "NVIDIA H200",
                                  k, eol);
        } else {
            static const char *const metric[4] = {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL",
                                                  "OTHER_METRIC", "DCGM_FI_PROF_DRAM_ACTIVE"};
            const char *m = metric[r / 4096 % 4];
            if (k < 2) {
                n += (size_t)snprintf(b + n, cap - n, "# HELP %s x%s", m, eol);
                continue;
            }
            if (k < 10)
                n += (size_t)snprintf(b + n, cap - n, "%s{UUID=\"GPU-%d\",gpu=\"%d\",Hostname=\"n%d\"}"
                                      " %s%s", m, r % 4096, g, r % 4096 / 8,
                                      r == bad_at ? "x" : "1", eol);
            else
                n += (size_t)snprintf(b + n, cap - n, "%s{gpu=\"%d\",UUID=\"GPU-%d\",Hostname="
                                      "\"n%d\",pod=\"p\\\"%d\"} %s%s", m, g, r % 4096,
                                      r % 4096 / 8, r % 4096 / 64,
                                      r == bad_at ? "x" : k == 11 ? "NaN" : "0.5", eol);
        }
    }
    *len = n;
    return b;
}

static char stream_path[4096];

/* The streamed test's file goes even when an assertion stops the test. */
static int stream_teardown(void **state)
{
    (void)state;
    if (stream_path[0])
        unlink(stream_path);
    stream_path[0] = 0;
    return 0;
}

static void test_streamed(void **state)
{
    (void)state;
    rng_seed(20261204);
    const char *base = getenv("TMPDIR");
    char *path = stream_path;
    snprintf(path, sizeof stream_path, "%s/pflex-stream-XXXXXX", base && *base ? base : ".");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    for (int round = 0; round < 8; round++) {
        size_t len;
        char *text = stream_input(round % 2, round, &len);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
        pflex_error_t ea, eb;
        pflex_tm_t *a = pflex_tm_create(NULL), *b = pflex_tm_create(NULL);
        int ra = pflex_tm_read_file(a, path, NULL, &ea);
        int rb = pflex_tm_read_mem(b, text, len, path, NULL, &eb);
        assert_int_equal(ra, rb);
        if (ra < 0) {
            assert_string_equal(ea.text, eb.text);
            assert_int_equal(a->nsamples, 0);
        } else {
            assert_int_equal(pflex_tm_sort(a, &ea), 0);
            assert_int_equal(pflex_tm_sort(b, &eb), 0);
            assert_int_equal(a->nseries, b->nseries);
            assert_int_equal(a->nsamples, b->nsamples);
            assert_int_equal(a->skipped, b->skipped);
            assert_true(a->nsamples > 10000);
            for (size_t i = 0; i < a->nseries; i++) {
                const struct pflex_tm_series *x = &a->series[i], *y = &b->series[i];
                assert_int_equal(x->gpu, y->gpu);
                assert_int_equal(x->field, y->field);
                assert_int_equal(x->line, y->line);
                assert_string_equal(x->host, y->host);
                assert_true((x->job == NULL) == (y->job == NULL));
                if (x->job)
                    assert_string_equal(x->job, y->job);
            }
            for (size_t i = 0; i < a->nsamples; i++) {
                assert_int_equal(a->samples[i].series, b->samples[i].series);
                assert_true(a->samples[i].time_s == b->samples[i].time_s);
                assert_true(a->samples[i].value == b->samples[i].value);
            }
        }
        if (round % 3 == 2)
            assert_int_equal(ra, -1);
        pflex_tm_destroy(a);
        pflex_tm_destroy(b);
        free(text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_smi_units),
        cmocka_unit_test(test_smi_nounits),
        cmocka_unit_test(test_dmon),
        cmocka_unit_test(test_prom_text),
        cmocka_unit_test(test_prom_metric_major_order),
        cmocka_unit_test(test_prom_mig),
        cmocka_unit_test(test_prom_json),
        cmocka_unit_test(test_roundtrip_pflex_csv),
        cmocka_unit_test(test_jobmap),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_blank_sentinels),
        cmocka_unit_test(test_sorted_unsorted),
        cmocka_unit_test(test_smi_runs),
        cmocka_unit_test(test_smi_cycle_plan),
        cmocka_unit_test(test_smi_no_data),
        cmocka_unit_test(test_many_series),
        cmocka_unit_test(test_fetch),
        cmocka_unit_test_teardown(test_streamed, stream_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
