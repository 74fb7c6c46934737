/* telemetry_bench.c — how fast pflex reads telemetry and fits/uses models.
 *
 *   telemetry_bench gen NODES GPUS METRICS SEED FILE
 *                         write a dcgm-exporter scrape: NODES hosts x GPUS
 *                         GPUs x METRICS DCGM fields, with HELP/TYPE lines
 *                         and the exporter's labels
 *   telemetry_bench read FILE REPS
 *                         time reading FILE into a telemetry store (median
 *                         CPU seconds of REPS runs)
 *   telemetry_bench gen-smi ROWS GPUS SEED FILE
 *                         write nvidia-smi --query-gpu CSV with units and
 *                         timestamps: ROWS rows, GPUS GPUs a tick
 *   telemetry_bench readers DIR REPS
 *                         nvidia-smi CSV and a Prometheus scrape at 100k and
 *                         1M lines (written to DIR when missing, seeded):
 *                         pflex's reading (read + sort into a store) beside
 *                         wc -l, promtool (at 100k lines: it takes 20 s
 *                         for 1M) and a Python loop, as ratios, and the
 *                         growth from 100k to 1M lines
 *   telemetry_bench once FILE
 *                         read FILE into a store and sort it, once (for
 *                         timing the whole process from outside, e.g.
 *                         /usr/bin/time, beside wc -l)
 *   telemetry_bench pairs FILE REPS
 *                         read + sort FILE in this process and `wc -l FILE`
 *                         in turn, REPS pairs (at most 15): each pair's
 *                         ratio, the median ratio
 *   telemetry_bench model JOBS PREDICT REPS
 *                         time fitting a ridge PFI + curve model on JOBS
 *                         synthetic jobs and predicting PREDICT jobs
 *
 * Times are this process's CPU time (user + system), medians.  Nothing
 * here asserts a time. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "pflex/flex/predict.h"
#include "pflex/io/sweep.h"
#include "pflex/io/telemetry.h"
#include "peers.h"

static uint64_t rs;
static double unif(void)
{
    uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int gen(int nodes, int gpus, int metrics, unsigned long seed, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    rs = seed;
    if (metrics > PFLEX_DCGM_COUNT)
        metrics = PFLEX_DCGM_COUNT;
    for (int m = 0; m < metrics; m++) {
        const struct pflex_dcgm_info *fi = pflex_dcgm_info(m);
        fprintf(f, "# HELP %s %s (in %s).\n# TYPE %s %s\n", fi->name, fi->name, fi->unit, fi->name,
                m == PFLEX_DCGM_TOTAL_ENERGY ? "counter" : "gauge");
        for (int n = 0; n < nodes; n++)
            for (int g = 0; g < gpus; g++)
                fprintf(f, "%s{gpu=\"%d\",UUID=\"GPU-%08x-%04x-0000-0000-%012d\",device=\"nvidia%d\","
                        "modelName=\"NVIDIA H200\",Hostname=\"node-%04d\",container=\"trainer\","
                        "namespace=\"ml\",pod=\"job-%d-worker-%d\"} %.6g\n",
                        fi->name, g, n, g, n * gpus + g, g, n, n / 4, n % 4, unif() * 700);
    }
    return fclose(f) ? 1 : 0;
}

/* nvidia-smi --query-gpu=timestamp,index,uuid,power.draw,clocks.sm,clocks.mem,
 * utilization.gpu,utilization.memory,memory.used,temperature.gpu --format=csv
 * -lms 100: ROWS rows, GPUS GPUs per tick, time-major as nvidia-smi loops. */
static int gen_smi(long rows, int gpus, unsigned long seed, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f || gpus < 1)
        return 1;
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    rs = seed;
    fputs("timestamp, index, uuid, power.draw [W], clocks.sm [MHz], clocks.mem [MHz], "
          "utilization.gpu [%], utilization.memory [%], memory.used [MiB], temperature.gpu\n", f);
    for (long r = 0; r < rows; r++) {
        long tick = r / gpus, ms = 125 + tick * 100;
        int g = (int)(r % gpus);
        long s = ms / 1000;
        fprintf(f, "2026/12/03 %02ld:%02ld:%02ld.%03ld, %d, GPU-%08x-0000-1111-2222-%012d, "
                "%.2f W, %d MHz, 2619 MHz, %d %%, %d %%, %d MiB, %d\n",
                10 + s / 3600 % 14, s / 60 % 60, s % 60, ms % 1000, g, g, g, 300 + unif() * 400,
                1500 + (int)(unif() * 480), (int)(unif() * 100), (int)(unif() * 100),
                70000 + (int)(unif() * 10000), 40 + (int)(unif() * 40));
    }
    return fclose(f) ? 1 : 0;
}

static int bench_read(const char *path, int reps)
{
    char *buf;
    size_t len;
    pflex_error_t err;
    if (pflex_read_all(path, &buf, &len, &err) < 0) {
        fprintf(stderr, "%s\n", err.text);
        return 1;
    }
    double *t = malloc((size_t)reps * sizeof *t);
    size_t samples = 0, series = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = cpu_s();
        pflex_tm_t *tm = pflex_tm_create(NULL);
        if (pflex_tm_read_mem(tm, buf, len, path, NULL, &err) < 0) {
            fprintf(stderr, "%s\n", err.text);
            return 1;
        }
        t[r] = cpu_s() - t0;
        samples = tm->nsamples;
        series = tm->nseries;
        pflex_tm_destroy(tm);
    }
    printf("  pflex read: %zu samples, %zu series, %.1f MB: %.3f s (median of %d), %.1f MB/s\n",
           samples, series, (double)len / 1e6, median(t, reps), reps,
           (double)len / 1e6 / median(t, reps));
    free(t);
    free(buf);
    return 0;
}

/* read + sort, as `pflex telemetry` does before it prints */
static int read_store(const char *path)
{
    pflex_error_t err;
    pflex_tm_t *tm = pflex_tm_create(NULL);
    int rc = tm ? pflex_tm_read_file(tm, path, NULL, &err) : -1;
    if (rc == 0)
        rc = pflex_tm_sort(tm, &err);
    if (rc < 0)
        fprintf(stderr, "%s\n", tm ? err.text : "out of memory");
    pflex_tm_destroy(tm);
    return rc;
}

static int bench_readers(const char *dir, int reps)
{
    static const long rows[2] = {100000, 1000000};
    char path[4096];
    double t[2][2];
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 2; i++) {
            FILE *f;
            if (k == 0)
                snprintf(path, sizeof path, "%s/smi-%ld.csv", dir, rows[i]);
            else
                snprintf(path, sizeof path, "%s/scrape-%ld.prom", dir, rows[i]);
            if (!(f = fopen(path, "r"))) {
                int rc = k == 0 ? gen_smi(rows[i], 8, 20261203, path)
                                : gen((int)(rows[i] / 160), 8, 20, 20261203, path);
                if (rc)
                    return 1;
            } else {
                fclose(f);
            }
            char label[64];
            snprintf(label, sizeof label, "%s, %ld lines:", k == 0 ? "nvidia-smi CSV" :
                     "Prometheus text", rows[i]);
            if ((t[k][i] = peers_compare(label, path, reps, read_store,
                                         k == 0 ? PEER_PY_SMI : PEER_PY_PROM,
                                         k == 1 && i == 0)) < 0)
                return 1;
        }
        printf("  %-34s x%.1f per 10x lines\n", k == 0 ? "nvidia-smi CSV, growth:" :
               "Prometheus text, growth:", t[k][1] / t[k][0]);
    }
    return 0;
}

static void synth(size_t n, double *x, double *y, size_t ncut, const double *cuts)
{
    for (size_t i = 0; i < n; i++) {
        double *r = x + i * PFLEX_FEAT_COUNT;
        for (int f = 0; f < PFLEX_FEAT_COUNT; f++)
            r[f] = unif();
        r[PFLEX_FEAT_MEM_COPY_UTIL] *= 100;
        r[PFLEX_FEAT_DRAM_COPY] = r[PFLEX_FEAT_DRAM_ACTIVE] * r[PFLEX_FEAT_MEM_COPY_UTIL] / 100;
        double pfi = 1 + 1.5 * r[PFLEX_FEAT_DRAM_COPY] - 0.6 * r[PFLEX_FEAT_TENSOR_ACTIVE] +
                     0.1 * (unif() - 0.5);
        if (y) {
            y[i * (1 + ncut)] = pfi;
            for (size_t k = 0; k < ncut; k++)
                y[i * (1 + ncut) + 1 + k] = cuts[k] / (pfi > 0.5 ? pfi : 0.5);
        }
    }
}

static int bench_model(size_t jobs, size_t npred, int reps)
{
    static const double cuts[8] = {0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40};
    double *x = malloc(jobs * PFLEX_FEAT_COUNT * sizeof *x), *y = malloc(jobs * 9 * sizeof *y);
    double *px = malloc(npred * PFLEX_FEAT_COUNT * sizeof *px);
    double *tf = malloc((size_t)reps * sizeof *tf), *tp = malloc((size_t)reps * sizeof *tp);
    rs = 20261203;
    synth(jobs, x, y, 8, cuts);
    synth(npred, px, NULL, 8, cuts);
    struct pflex_model_spec s = {PFLEX_MODEL_RIDGE, 14, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}};
    struct pflex_train_data d = {jobs, x, y, 8, cuts, NULL};
    double sum = 0;
    for (int r = 0; r < reps; r++) {
        pflex_error_t err;
        double t0 = cpu_s();
        pflex_model_t *m = pflex_model_fit(&s, &d, &err);
        tf[r] = cpu_s() - t0;
        if (!m) {
            fprintf(stderr, "%s\n", err.text);
            return 1;
        }
        double mean[9], se[9];
        t0 = cpu_s();
        for (size_t i = 0; i < npred; i++) {
            pflex_model_predict(m, px + i * PFLEX_FEAT_COUNT, mean, se);
            sum += mean[0];
        }
        tp[r] = cpu_s() - t0;
        pflex_model_destroy(m);
    }
    printf("  ridge, 14 features, PFI + 8 cuts: fit on %zu jobs %.3f s, predict %zu jobs %.3f s "
           "(medians of %d; checksum %.6g)\n", jobs, median(tf, reps), npred, median(tp, reps), reps,
           sum);
    free(x); free(y); free(px); free(tf); free(tp);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 7 && !strcmp(argv[1], "gen"))
        return gen(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), strtoul(argv[5], NULL, 10),
                   argv[6]);
    if (argc == 6 && !strcmp(argv[1], "gen-smi"))
        return gen_smi(atol(argv[2]), atoi(argv[3]), strtoul(argv[4], NULL, 10), argv[5]);
    if (argc == 4 && !strcmp(argv[1], "readers"))
        return bench_readers(argv[2], atoi(argv[3]));
    if (argc == 3 && !strcmp(argv[1], "once"))
        return read_store(argv[2]) < 0;
    if (argc == 4 && !strcmp(argv[1], "pairs"))
        return peers_pairs(argv[2], atoi(argv[3]), read_store) < 0;
    if (argc == 4 && !strcmp(argv[1], "read"))
        return bench_read(argv[2], atoi(argv[3]));
    if (argc == 5 && !strcmp(argv[1], "model"))
        return bench_model((size_t)atol(argv[2]), (size_t)atol(argv[3]), atoi(argv[4]));
    fprintf(stderr, "usage: telemetry_bench gen NODES GPUS METRICS SEED FILE | gen-smi ROWS GPUS SEED FILE | "
                    "read FILE REPS | readers DIR REPS | once FILE | pairs FILE REPS | "
                    "model JOBS PREDICT REPS\n");
    return 2;
}
