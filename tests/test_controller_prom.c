/* test_controller_prom.c — the controller's Prometheus reader
 * (src/controller/prom_source.c, a streaming scanner) against the reader
 * it replaced (tests/prom_jansson_oracle.h: jansson trees and the
 * telemetry store): on seeded generated answers, edge cases and mutated
 * bytes, the same outcome (read or refused, stale or not) and, when read,
 * the same hosts in the same order, their GPUs in the same order, every
 * value to the bit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "controller/prom_source.h"
#include "prom_jansson_oracle.h"

static struct oracle oracle;
static prom_source_t *scanner;
static size_t n_read, n_refused, n_stale;

static int same_double(double a, double b)
{
    return !memcmp(&a, &b, sizeof a);
}

/* Both readers on one pair of answers: the same outcome, the same hosts. */
static void compare(const char *what, unsigned long long seed, const char *d, size_t dl, const char *o, size_t ol,
                    double now, double max_age)
{
    pflex_error_t e1 = {0}, e2 = {0};
    int s1 = 0, s2 = 0;
    oracle.max_age_s = max_age;
    prom_source_set_max_age(scanner, max_age);
    int r1 = oracle_parse(&oracle, d, dl, o, ol, now, &s1, &e1);
    int r2 = prom_source_parse(scanner, d, dl, o, ol, now, &s2, &e2);
    if (r1 != r2 || s1 != s2)
        fail_msg("%s, seed %llu: jansson %d stale %d (%s), scanner %d stale %d (%s)\n--- dcgm:\n%.*s\n--- own:\n%.*s",
                 what, seed, r1, s1, e1.text, r2, s2, e2.text, (int)(dl > 4000 ? 4000 : dl), d,
                 (int)(ol > 4000 ? 4000 : ol), o);
    if (r1 < 0) {
        n_refused++;
        n_stale += s1;
        return;
    }
    n_read++;
    static struct agent_status st;
    unsigned char nan[AGENT_MAX_GPUS];
    size_t i = 0;
    for (; prom_source_host_at(scanner, i, &st, nan) == 0; i++) {
        if (i >= oracle.nhosts)
            fail_msg("%s, seed %llu: the scanner has more hosts (%s)", what, seed, st.host);
        const struct ohost *h = &oracle.hosts[i];
        if (strcmp(h->name, st.host) || h->ngpus != st.ngpus || h->njobs != st.njobs)
            fail_msg("%s, seed %llu: host %zu: jansson %s (%zu GPUs, %zu jobs), scanner %s (%zu, %zu)", what, seed,
                     i, h->name, h->ngpus, h->njobs, st.host, st.ngpus, st.njobs);
        for (size_t k = 0; k < h->ngpus; k++) {
            const struct agent_gpu *a = &h->gpu[k], *b = &st.gpu[k];
            if (a->index != b->index || !same_double(a->power_w, b->power_w) || !same_double(a->limit_w, b->limit_w)
                || !same_double(a->min_w, b->min_w) || !same_double(a->max_w, b->max_w) || a->ok != b->ok
                || h->nan[k] != nan[k])
                fail_msg("%s, seed %llu: host %s GPU entry %zu: jansson %d %.17g %.17g %.17g %.17g ok %d nan %d, "
                         "scanner %d %.17g %.17g %.17g %.17g ok %d nan %d", what, seed, h->name, k, a->index,
                         a->power_w, a->limit_w, a->min_w, a->max_w, a->ok, h->nan[k], b->index, b->power_w,
                         b->limit_w, b->min_w, b->max_w, b->ok, nan[k]);
        }
        for (size_t k = 0; k < h->njobs; k++)
            if (strcmp(h->job[k].name, st.job[k].name) || !same_double(h->job[k].throughput, st.job[k].throughput))
                fail_msg("%s, seed %llu: host %s job %zu: jansson %s %.17g, scanner %s %.17g", what, seed, h->name,
                         k, h->job[k].name, h->job[k].throughput, st.job[k].name, st.job[k].throughput);
    }
    if (i != oracle.nhosts)
        fail_msg("%s, seed %llu: jansson %zu hosts, scanner %zu", what, seed, oracle.nhosts, i);
}

/* ---- generated answers ---- */

struct rng {
    uint64_t s;
};

static uint64_t rnext(struct rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static int rn(struct rng *r, int n)
{
    return (int)(rnext(r) % (uint64_t)n);
}

static int chance(struct rng *r, int one_in)
{
    return rn(r, one_in) == 0;
}

struct gen {
    struct rng r;
    FILE *f;
    int chaos;          /* 0: answers both should read; 1..: more of what one refuses */
    int own;            /* writing pflex's own answer (duplicate keys allowed) */
};

static void ws(struct gen *g)
{
    if (chance(&g->r, 8))
        fputs(chance(&g->r, 2) ? " " : "\n\t ", g->f);
}

/* A JSON string of s, some characters escaped. */
static void jstr(struct gen *g, const char *s)
{
    fputc('"', g->f);
    int esc = chance(&g->r, 6);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(g->f, "\\%c", c);
        else if (c == '/' && esc)
            fputs("\\/", g->f);
        else if (c < 0x20 || (esc && c < 0x80 && chance(&g->r, 4)))
            fprintf(g->f, chance(&g->r, 2) ? "\\u%04x" : "\\u%04X", c);
        else
            fputc(c, g->f);
    }
    fputc('"', g->f);
}

static const char *pick(struct gen *g, const char *const *v, size_t n)
{
    return v[rn(&g->r, (int)n)];
}
#define PICK(g, a) pick(g, a, sizeof a / sizeof *a)

static void stamp(struct gen *g)
{
    static const char *const t[] = {"1700000000", "1700000000.123", "1.7e9", "1700000000.5e0", "17000000005e-1",
                                    "1699999990", "1700000030.25", "1700000000.000000001"};
    fputs(PICK(g, t), g->f);
}

/* A value's text: what the readers of each answer meet, and some they
 * take differently (strtod against the telemetry reader's numbers). */
static const char *value_text(struct gen *g, int power)
{
    static const char *const clean[] = {"655.2", "300", "0", "1e2", "99999.99", "250.5", "0.1", "12.25",
                                        "3.14159265358979323846", "700", "200", "1", "-0", "1234.5",
                                        "0.30000000000000004", "123456789012345678", "00012.5", "+7", ".5", "5.",
                                        "1.5e-3", "9.2233720368547758e18", "140737488355328", "140737488355330",
                                        "2.5E+2", "100000", "-5"};
    static const char *const nan[] = {"NaN", "+Inf", "-Inf"};
    static const char *const odd[] = {"nan", "inf", "abc", "", " 5", "0x10", "1e999", "Infinity", "5x", "-",
                                      "1e400", "NAN", "1_0"};
    if (chance(&g->r, g->chaos ? (power ? 40 : 60) : 400))
        return PICK(g, nan);
    if (g->chaos && chance(&g->r, (power ? 60 : 6) * (3 - g->chaos)))
        return PICK(g, odd);
    return PICK(g, clean);
}

static void gpu_text(struct gen *g, char *buf, size_t n, int gpu)
{
    static const char *const odd[] = {"", "-1", "4097", " 2", "+3", "07", "x", "1234567890", "2a", "0000000003"};
    if (g->chaos && chance(&g->r, (g->own ? 10 : 200) * (3 - g->chaos)))
        snprintf(buf, n, "%s", PICK(g, odd));
    else
        snprintf(buf, n, "%d", gpu);
}

static void host_text(struct gen *g, char *buf, size_t n, int host)
{
    if (chance(&g->r, 50))
        snprintf(buf, n, "%s", chance(&g->r, 2) ? "" : "a-host-name-far-too-long-for-the-controller-table-0123456789-abcdef");
    else if (chance(&g->r, 30))
        snprintf(buf, n, "n\xc3\xa9ud-%d", host);   /* UTF-8 */
    else
        snprintf(buf, n, "node%03d", host);
}

/* One label as "key":value, the value sometimes not a string. */
static void put_label(struct gen *g, const char *k, const char *v, int *first)
{
    if (!*first)
        fputc(',', g->f);
    *first = 0;
    ws(g);
    jstr(g, k);
    fputc(':', g->f);
    ws(g);
    if (g->chaos && chance(&g->r, 80 * (3 - g->chaos)))
        fputs(chance(&g->r, 2) ? "7" : "null", g->f);
    else
        jstr(g, v);
}

/* One element: its labels (in a shuffled order), its sample(s). */
static void element(struct gen *g, const char *name, const char *host, int gpu, const char *job, int matrix,
                    int power)
{
    char gs[32], uuid[64];
    gpu_text(g, gs, sizeof gs, gpu);
    snprintf(uuid, sizeof uuid, "GPU-%08x-%04d", (unsigned)(rnext(&g->r) & 0xffffffff), gpu);
    const char *keys[12], *vals[12];
    size_t n = 0;
    keys[n] = "__name__", vals[n++] = name;
    int hk = rn(&g->r, 10);
    if (hk < 7 || g->own)
        keys[n] = "Hostname", vals[n++] = host;
    else if (hk == 7)
        keys[n] = "hostname", vals[n++] = host;
    else if (hk == 8)
        keys[n] = "instance", vals[n++] = host;
    if (gpu >= 0)
        keys[n] = "gpu", vals[n++] = gs;
    if (!g->own) {
        keys[n] = "UUID", vals[n++] = uuid;
        keys[n] = "modelName", vals[n++] = "NVIDIA H100 80GB HBM3";
        keys[n] = "DCGM_FI_DRIVER_VERSION", vals[n++] = "535.129.03";
        if (chance(&g->r, 40))
            keys[n] = "GPU_I_ID", vals[n++] = chance(&g->r, 3) ? "" : g->chaos && chance(&g->r, 2) ? "120" : "3";
    }
    if (job) {
        if (chance(&g->r, 3))
            keys[n] = "exported_job", vals[n++] = job;
        keys[n] = "job", vals[n++] = chance(&g->r, 3) ? "scrape" : job;
    } else
        keys[n] = "job", vals[n++] = g->own ? "pflex-agent" : "dcgm";
    if (g->chaos && g->own && chance(&g->r, 20))
        keys[n] = "Hostname", vals[n++] = "node000";       /* a duplicate: the last counts */
    if (g->chaos > 1 && !g->own && chance(&g->r, 400))
        keys[n] = "gpu", vals[n++] = "1";                  /* a duplicate: refused */
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)rn(&g->r, (int)i + 1);
        const char *k = keys[i], *v = vals[i];
        keys[i] = keys[j], vals[i] = vals[j];
        keys[j] = k, vals[j] = v;
    }
    fputc('{', g->f);
    int mfirst = rn(&g->r, 6) != 0;
    for (int part = 0; part < 2; part++) {
        if ((part == 0) == mfirst) {
            fputs("\"metric\":{", g->f);
            int first = 1;
            for (size_t i = 0; i < n; i++)
                put_label(g, keys[i], vals[i], &first);
            fputc('}', g->f);
        } else if (matrix) {
            fputs("\"values\":[", g->f);
            int k = rn(&g->r, 4);
            for (int i = 0; i < k; i++) {
                fputs(i ? ",[" : "[", g->f);
                stamp(g);
                fputc(',', g->f);
                jstr(g, value_text(g, power));
                fputc(']', g->f);
            }
            fputc(']', g->f);
        } else {
            fputs("\"value\":", g->f);
            ws(g);
            if (g->chaos && chance(&g->r, (g->own ? 15 : 300) * (3 - g->chaos))) {
                static const char *const bad[] = {"[1700000000]", "[1700000000,\"1\",3]", "[\"1\",1700000000]",
                                                  "{}", "null", "[]", "[1700000000,5]"};
                fputs(PICK(g, bad), g->f);
            } else {
                fputc('[', g->f);
                stamp(g);
                fputc(',', g->f);
                ws(g);
                jstr(g, value_text(g, power));
                fputc(']', g->f);
            }
        }
        if (part == 0)
            fputc(',', g->f);
    }
    if (chance(&g->r, 10))
        fputs(",\"extra\":{\"a\":[1,2,{\"b\":null}],\"c\":true}", g->f);
    if (g->chaos && g->own && chance(&g->r, 15)) {
        fputs(",\"value\":[1700000000,", g->f);       /* the last "value" counts */
        jstr(g, value_text(g, 0));
        fputc(']', g->f);
    }
    fputc('}', g->f);
}

/* The answer's frame around its elements (written by body). */
static void answer(struct gen *g, int matrix, void (*body)(struct gen *, int), int nonempty)
{
    int order = rn(&g->r, 3);
    const char *type = matrix ? "matrix" : "vector";
    if (g->chaos && chance(&g->r, 40))
        type = chance(&g->r, 2) ? "scalar" : "Vector";
    fputc('{', g->f);
    ws(g);
    if (order == 0 && chance(&g->r, 5))
        fputs("\"warnings\":[\"w\"],", g->f);
    const char *status = g->chaos && chance(&g->r, 40) ? "error" : "success";
    if (order != 2) {
        fprintf(g->f, "\"status\":");
        jstr(g, status);
        fputc(',', g->f);
    }
    if (g->chaos && g->own && chance(&g->r, 10))
        fputs("\"data\":{\"result\":[]},", g->f);      /* replaced by the last "data" */
    fputs("\"data\":{", g->f);
    int type_after = chance(&g->r, 5);
    if (!type_after) {
        fputs("\"resultType\":", g->f);
        jstr(g, type);
        fputc(',', g->f);
    }
    fputs("\"result\":[", g->f);
    ws(g);
    if (nonempty)
        body(g, matrix);
    fputs("]", g->f);
    if (type_after) {
        fputs(",\"resultType\":", g->f);
        jstr(g, type);
    }
    fputc('}', g->f);
    if (order == 2) {
        fputs(",\"status\":", g->f);
        jstr(g, status);
    }
    if (order == 1 && chance(&g->r, 4))
        fputs(",\"infos\":[]", g->f);
    fputc('}', g->f);
    ws(g);
}

struct site {
    int hosts, gpus;
};
static struct site site;

static void comma(struct gen *g, int *first)
{
    if (!*first)
        fputc(',', g->f);
    *first = 0;
    ws(g);
}

static void dcgm_body(struct gen *g, int matrix)
{
    static const char *const other[] = {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK", "pflex_gpu_up",
                                        "pflex_gpu_limit_min_watts", "node_load1", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"};
    int first = 1;
    /* hosts past those of pflex's own answer, and GPUs past theirs */
    for (int h = 0; h < site.hosts + 2; h++) {
        char host[96];
        host_text(g, host, sizeof host, h);
        for (int k = 0; k < site.gpus + (chance(&g->r, 4) ? 2 : 0); k++) {
            if (chance(&g->r, 9))
                continue;
            comma(g, &first);
            element(g, "DCGM_FI_DEV_POWER_USAGE", host, k, NULL, matrix, 1);
            comma(g, &first);
            element(g, "DCGM_FI_DEV_POWER_MGMT_LIMIT", host, chance(&g->r, 30) ? -1 : k, NULL, matrix, 1);
            if (chance(&g->r, 5)) {
                comma(g, &first);
                element(g, PICK(g, other), host, k, NULL, matrix, 0);
            }
        }
    }
}

static void own_body(struct gen *g, int matrix)
{
    static const char *const fam[] = {"pflex_gpu_limit_min_watts", "pflex_gpu_limit_max_watts", "pflex_gpu_up"};
    (void)matrix;
    int first = 1;
    for (int h = 0; h < site.hosts; h++) {
        char host[96];
        host_text(g, host, sizeof host, h);
        int ngpus = site.gpus;
        if (chance(&g->r, 20))
            ngpus = 70;             /* past a host's room */
        for (int k = 0; k < ngpus; k++)
            for (int f = 0; f < 3; f++) {
                if (chance(&g->r, 12))
                    continue;
                comma(g, &first);
                element(g, fam[f], host, k, NULL, 0, 0);
            }
        for (int j = 0; j < rn(&g->r, 3); j++) {
            char job[96];
            snprintf(job, sizeof job, chance(&g->r, 20) ? "" : chance(&g->r, 20)
                     ? "a-job-name-far-too-long-for-the-controller-table-0123456789-abcdef-%d" : "train-%d", j);
            comma(g, &first);
            element(g, "pflex_job_throughput", host, -1, job, 0, 0);
        }
        if (chance(&g->r, 10)) {
            comma(g, &first);
            element(g, "something_else", host, 0, NULL, 0, 0);
        }
    }
    if (g->chaos && chance(&g->r, 5)) {
        comma(g, &first);
        fputs(chance(&g->r, 2) ? "42" : "[1,2]", g->f);   /* not an object: skipped */
    }
}

static char *gen_answer(struct rng *r, int chaos, int own, int matrix, size_t *len)
{
    char *buf = NULL;
    struct gen g = {.r = *r, .chaos = chaos, .own = own};
    g.f = open_memstream(&buf, len);
    assert_non_null(g.f);
    answer(&g, matrix, own ? own_body : dcgm_body, !chance(&g.r, 60));
    fclose(g.f);
    *r = g.r;
    return buf;
}

static void test_generated(void **state)
{
    (void)state;
    size_t read0 = n_read;
    for (unsigned long long seed = 1; seed <= 3000; seed++) {
        struct rng r = {seed * 0x9E3779B97F4A7C15ull};
        int chaos = seed % 4 == 0 ? 2 : seed % 4 == 1;
        site.hosts = 1 + rn(&r, 12);
        site.gpus = 1 + rn(&r, 8);
        int matrix = chance(&r, 8);
        size_t dl, ol;
        char *d = gen_answer(&r, chaos, 0, matrix, &dl);
        char *o = gen_answer(&r, chaos, 1, 0, &ol);
        double max_age = chance(&r, 2) ? 0 : chance(&r, 6) ? 5 : 30;
        compare("generated", seed, d, dl, o, ol, 1700000000 + rn(&r, 40) - 20, max_age);
        free(d);
        free(o);
    }
    /* the comparisons were not all of refusals */
    assert_true(n_read - read0 > 500);
}

/* Mutated bytes: a byte dropped, changed or added, the input cut. */
static void test_mutated(void **state)
{
    (void)state;
    static const char ins[] = "{}[]\",:0123456789.eE-+ \\nu\x01\xc3\xff";
    size_t refused0 = n_refused, read0 = n_read;
    for (unsigned long long seed = 1; seed <= 3000; seed++) {
        struct rng r = {seed * 0xD1B54A32D192ED03ull};
        site.hosts = 1 + rn(&r, 3);
        site.gpus = 1 + rn(&r, 3);
        size_t dl, ol;
        char *d = gen_answer(&r, 0, 0, chance(&r, 8), &dl);
        char *o = gen_answer(&r, 0, 1, 0, &ol);
        char **t = chance(&r, 2) ? &d : &o;
        size_t *tl = t == &d ? &dl : &ol;
        for (int m = 1 + rn(&r, 3); m > 0 && *tl; m--) {
            size_t at = (size_t)rn(&r, (int)*tl);
            switch (rn(&r, 4)) {
            case 0: memmove(*t + at, *t + at + 1, *tl - at - 1); (*tl)--; break;
            case 1: (*t)[at] = ins[rn(&r, (int)sizeof ins - 1)]; break;
            case 2:
                *t = realloc(*t, *tl + 2);
                memmove(*t + at + 1, *t + at, *tl - at);
                (*t)[at] = ins[rn(&r, (int)sizeof ins - 1)];
                (*tl)++;
                break;
            default: *tl = at; break;
            }
        }
        compare("mutated", seed, d, dl, o, ol, 1700000000, 0);
        free(d);
        free(o);
    }
    assert_true(n_refused - refused0 > 500 && n_read - read0 > 100);
}

#define OWN_OK "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[" \
    "{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"1\"]}]}}"
#define DCGM_OK "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[" \
    "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"500\"]}]}}"

static void test_edges(void **state)
{
    (void)state;
    static const char *const dcgm[] = {
        DCGM_OK,
        "",
        " ",
        "[]",
        "{}",
        "\xef\xbb\xbf" DCGM_OK,
        DCGM_OK "x",
        DCGM_OK " \n",
        "{\"status\":\"success\",\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
        "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error\"}",
        "{\"status\":7,\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\"}}",
        "{\"status\":\"success\",\"data\":{\"result\":[]}}",
        "{\"status\":\"success\",\"data\":[]}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"string\",\"result\":[1,\"x\"]}}",
        "{\"data\":{\"result\":[{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},"
        "\"value\":[1700000000,\"500\"]}],\"resultType\":\"vector\"},\"status\":\"success\"}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"value\":[1700000000,\"500\"],"
        "\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"}}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\",\"gpu\":\"1\"},\"value\":[1700000000,\"500\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"500\"],\"x\":{\"a\":1,\"a\":2}}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1e400,\"500\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n\\u0000\"},\"value\":[1700000000,\"500\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n\\ud800\"},\"value\":[1700000000,\"500\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"\\ud83d\\ude00\"},\"value\":[1700000000,\"500\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"1\",\"Hostname\":\"n2\"},\"value\":[1700000000,\"NaN\"]},{\"metric\":"
        "{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n3\"},\"value\":[1700000000,\"1\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"values\":[[1700000000,\"400\"],"
        "[1700000001,\"410\"]],\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},"
        "\"value\":[1700000000,\"NaN\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"values\":[],"
        "\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"}}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"values\":[[1,\"1\"],7],"
        "\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"}}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"3\",\"GPU_I_ID\":\"2\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"5\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"1000\",\"GPU_I_ID\":\"2\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"5\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"\\u005f_name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"\\u0030\",\"Hostn\\u0061me\":\"n\\u00e9\"},\"value\":[1700000000,\"5\\u0030\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"9.3e18\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"pflex_gpu_up\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"inf\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[[],{}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{}}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1,\"1\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"500\"]}]}} [",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"500\"]}]}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
        "\"DCGM_FI_DEV_POWER_USAGE\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"500\"]},]}}",
    };
    static const char *const own[] = {
        OWN_OK,
        "{\"status\":\"success\",\"data\":{\"result\":[" "{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\","
        "\"Hostname\":\"n1\"},\"value\":[1700000000,\"1\"]}],\"result\":[]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[]},\"data\":{\"result\":[{\"metric\":{\"__name__\":"
        "\"pflex_gpu_up\",\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"1\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\","
        "\"Hostname\":\"n1\"},\"value\":[1700000000,\"1\"]}]},\"data\":7}",
        "{\"status\":\"error\",\"data\":{\"result\":[]},\"status\":\"success\"}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"\","
        "\"Hostname\":\"n1\"},\"value\":[1700000000,\"\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"  +0\","
        "\"Hostname\":\"n1\"},\"value\":[1700000000,\"  0x1p0\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_gpu_limit_min_watts\","
        "\"gpu\":\"0\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"nan(0x1)\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\","
        "\"Hostname\":\"n1\"},\"metric\":7,\"value\":[1700000000,\"1\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\","
        "\"Hostname\":\"n1\",\"Hostname\":\"n2\"},\"value\":[1700000000,\"1\"],\"value\":[1700000001,\"0\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_job_throughput\","
        "\"job\":\"a\",\"exported_job\":7,\"Hostname\":\"n1\"},\"value\":[1700000000,\"12\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_job_throughput\","
        "\"job\":\"a\\\"b\\\\c\",\"Hostname\":\"n1\"},\"value\":[1700000000,\"1e-320\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\","
        "\"Hostname\":\"n1\"},\"value\":[1700000000,\"1\"]}],\"resultType\":\"nonsense\"}}",
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"__name__\":\"pflex_gpu_up\",\"gpu\":\"0\","
        "\"Hostname\":\"n1\"},\"value\":[\"1700000000\",\"1\"]}]}}",
    };
    for (size_t i = 0; i < sizeof dcgm / sizeof *dcgm; i++)
        for (size_t j = 0; j < sizeof own / sizeof *own; j++) {
            compare("edge", i * 100 + j, dcgm[i], strlen(dcgm[i]), own[j], strlen(own[j]), 1700000000, 0);
            compare("edge (stale past 30 s)", i * 100 + j, dcgm[i], strlen(dcgm[i]), own[j], strlen(own[j]),
                    1700000100, 30);
        }
}

static int setup(void **state)
{
    (void)state;
    pflex_error_t err;
    snprintf(oracle.url, sizeof oracle.url, "http://127.0.0.1:9");
    return prom_source_create("http://127.0.0.1:9", 100, &scanner, &err);
}

static int teardown(void **state)
{
    (void)state;
    prom_source_destroy(scanner);
    oracle_fini(&oracle);
    printf("compared: %zu read alike, %zu refused alike (%zu as stale)\n", n_read, n_refused, n_stale);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_generated),
        cmocka_unit_test(test_mutated),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
