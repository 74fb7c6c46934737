/* prom_read_bench.c — the CPU time of reading one period's Prometheus
 * answers (pflex controller run --prometheus): the two instant-query
 * answers of a site of NODES nodes of GPUS GPUs each, built as a
 * Prometheus server answers them (dcgm-exporter's labels on the DCGM
 * fields, the agents' own families with the labels a scrape adds), seeded,
 * then read by prom_source_parse REPS times.  Prints their size, the
 * series, and the median, fastest and slowest CPU time of a read (the
 * process's, CLOCK_PROCESS_CPUTIME_ID); with "jansson", the same for the
 * reader it replaced (jansson trees and the telemetry store, kept as the
 * tests' oracle in tests/prom_jansson_oracle.h), the same answers.
 * Asserts nothing but that both read the answers alike.
 *
 *   prom_read_bench [NODES [GPUS [REPS [jansson]]]]   (defaults 12500 8 5)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "controller/prom_source.h"
#include "../tests/prom_jansson_oracle.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static const char *const model = "NVIDIA H100 80GB HBM3";

/* The DCGM answer: power and enforced limit of every GPU. */
static char *dcgm_answer(int nodes, int gpus, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    fputs("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[", f);
    int first = 1;
    static const char *const field[2] = {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_MGMT_LIMIT"};
    for (int fi = 0; fi < 2; fi++)
        for (int n = 0; n < nodes; n++)
            for (int g = 0; g < gpus; g++) {
                double v = fi == 0 ? 350 + rnd(3500000) / 10000.0 : 700 - 50 * (int)rnd(4);
                fprintf(f, "%s{\"metric\":{\"__name__\":\"%s\",\"DCGM_FI_DRIVER_VERSION\":\"535.129.03\","
                        "\"Hostname\":\"node%05d\",\"UUID\":\"GPU-%08x-%04x-%04x-%04x-%012llx\",\"device\":\"nvidia%d\","
                        "\"gpu\":\"%d\",\"instance\":\"10.%d.%d.%d:9400\",\"job\":\"dcgm-exporter\",\"modelName\":\"%s\","
                        "\"pci_bus_id\":\"00000000:%02X:00.0\"},\"value\":[1700000000.%03u,\"%.*f\"]}",
                        first ? "" : ",", field[fi], n, rnd(1u << 31), rnd(65536), rnd(65536), rnd(65536),
                        (unsigned long long)rnd(1u << 31) << 16, g, g, n / 65536, n / 256 % 256, n % 256, model,
                        0x18 + 0x10 * g, rnd(1000), fi == 0 ? 3 : 0, v);
                first = 0;
            }
    fputs("]}}", f);
    fclose(f);
    return buf;
}

/* pflex's own answer: each GPU's range and state, each node's job. */
static char *own_answer(int nodes, int gpus, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    fputs("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[", f);
    int first = 1;
    static const char *const fam[3] = {"pflex_gpu_limit_min_watts", "pflex_gpu_limit_max_watts", "pflex_gpu_up"};
    static const char *const val[3] = {"200", "700", "1"};
    for (int fi = 0; fi < 3; fi++)
        for (int n = 0; n < nodes; n++)
            for (int g = 0; g < gpus; g++) {
                fprintf(f, "%s{\"metric\":{\"__name__\":\"%s\",\"Hostname\":\"node%05d\",\"gpu\":\"%d\","
                        "\"instance\":\"10.%d.%d.%d:9101\",\"job\":\"pflex-agent\"},\"value\":[1700000000.%03u,\"%s\"]}",
                        first ? "" : ",", fam[fi], n, g, n / 65536, n / 256 % 256, n % 256, rnd(1000), val[fi]);
                first = 0;
            }
    for (int n = 0; n < nodes; n++)
        fprintf(f, ",{\"metric\":{\"__name__\":\"pflex_job_throughput\",\"Hostname\":\"node%05d\","
                "\"exported_job\":\"train-%d\",\"instance\":\"10.%d.%d.%d:9101\",\"job\":\"pflex-agent\"},"
                "\"value\":[1700000000.%03u,\"%.3f\"]}", n, n / 8, n / 65536, n / 256 % 256, n % 256, rnd(1000),
                10000 + rnd(10000000) / 1000.0);
    fputs("]}}", f);
    fclose(f);
    return buf;
}

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int nodes = argc > 1 ? atoi(argv[1]) : 12500, gpus = argc > 2 ? atoi(argv[2]) : 8;
    int reps = argc > 3 ? atoi(argv[3]) : 5, jansson = argc > 4 && !strcmp(argv[4], "jansson");
    if (nodes < 1 || gpus < 1 || gpus > AGENT_MAX_GPUS || reps < 1) {
        fprintf(stderr, "usage: prom_read_bench [NODES [GPUS [REPS [jansson]]]]\n");
        return 2;
    }
    size_t dl, ol;
    char *d = dcgm_answer(nodes, gpus, &dl), *o = own_answer(nodes, gpus, &ol);
    if (!d || !o)
        return 1;
    size_t series = (size_t)nodes * (size_t)gpus * 5 + (size_t)nodes;
    printf("  %d nodes x %d GPUs: %zu series, answers of %.1f MB (DCGM) + %.1f MB (own) = %.1f MB\n", nodes, gpus,
           series, dl / 1e6, ol / 1e6, (dl + ol) / 1e6);
    prom_source_t *p;
    pflex_error_t err;
    if (prom_source_create("http://127.0.0.1:9090", 1000, &p, &err) < 0)
        return 1;
    double *t = calloc((size_t)reps, sizeof *t);
    struct agent_status *st = malloc(sizeof *st);
    for (int pass = 0; pass < 1 + jansson; pass++) {
        static struct oracle oracle;
        for (int r = 0; r < reps; r++) {
            double c0 = cpu_s();
            int rc = pass == 0 ? prom_source_parse(p, d, dl, o, ol, 1700000000, NULL, &err)
                               : oracle_parse(&oracle, d, dl, o, ol, 1700000000, NULL, &err);
            t[r] = cpu_s() - c0;
            if (rc < 0) {
                fprintf(stderr, "prom_read_bench: %s\n", err.text);
                return 1;
            }
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        printf("  %-34s CPU %.3f s a period (median of %d; %.3f .. %.3f)\n",
               pass == 0 ? "streaming scanner (prom_source):" : "jansson trees (the reader before):", t[reps / 2],
               reps, t[0], t[reps - 1]);
        if (pass == 1) {
            /* the same hosts: the benchmark reads what the controller would */
            unsigned char nan[AGENT_MAX_GPUS];
            size_t n = 0;
            for (; prom_source_host_at(p, n, st, nan) == 0; n++)
                if (n >= oracle.nhosts || strcmp(st->host, oracle.hosts[n].name) || st->ngpus != oracle.hosts[n].ngpus)
                    return fprintf(stderr, "prom_read_bench: the readers differ at host %zu\n", n), 1;
            if (n != oracle.nhosts)
                return fprintf(stderr, "prom_read_bench: the readers differ in hosts\n"), 1;
            oracle_fini(&oracle);
        }
    }
    size_t n = 0;
    unsigned char nan[AGENT_MAX_GPUS];
    while (prom_source_host_at(p, n, st, nan) == 0)
        n++;
    if (n != (size_t)nodes)
        return fprintf(stderr, "prom_read_bench: %zu hosts read, %d expected\n", n, nodes), 1;
    free(st);
    free(t);
    free(d);
    free(o);
    prom_source_destroy(p);
    return 0;
}
