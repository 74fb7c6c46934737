/* sweep_read_bench.c — how reading one job's sweep grows with its rows.
 *
 * One job, rows in the order `pflex sweep --repeats R` writes them (every
 * cap R times, from the highest cap down), in ascending cap order, and
 * shuffled (seeded); with and without telemetry columns (the reader's two
 * groupings).  For 40k, 80k, 160k and 1M rows it prints the CPU time of
 * pflex_sweep_read_mem (median of a few runs) and the ratio to the size
 * before: about 2 per doubling is O(n log n) or linear, 4 is quadratic.
 * Then the same for building one job's loss curve (pflex_curve_init) from
 * that many distinct caps whose power rises as the cap falls, the order
 * that made its insertion sort quadratic.
 * Nothing here asserts a time.
 *
 *   sweep_read_bench [ROWS...]     (default 40000 80000 160000 1000000)
 *   sweep_read_bench peers DIR REPS
 *                 a sweep of jobs at 8 caps, 100k and 1M rows (written to
 *                 DIR when missing, seeded): pflex_sweep_read_file beside
 *                 wc -l and a Python csv loop summing the same columns, as
 *                 ratios, and the growth per 10x rows
 *   sweep_read_bench pairs FILE REPS
 *                 pflex_sweep_read_file(FILE) and `wc -l FILE` in turn,
 *                 REPS pairs (at most 15): each pair's ratio, the median */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "pflex/flex/curve.h"
#include "pflex/io/sweep.h"
#include "peers.h"

enum order { REPEATS, ASCENDING, SHUFFLED };
static const char *const order_name[] = {"repeats", "ascending", "shuffled"};

static uint64_t rng = 20260502;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A sweep of one job with rows rows over 250 caps (200..698 W). */
static char *make_sweep(size_t rows, enum order o, int tm, size_t *len)
{
    size_t ncaps = 250, cap = rows * 96 + 256, n = 0;
    char *buf = malloc(cap);
    size_t *cap_of = malloc(rows * sizeof *cap_of);
    if (!buf || !cap_of)
        exit(1);
    for (size_t i = 0; i < rows; i++) {
        size_t k = i / ((rows + ncaps - 1) / ncaps);    /* repeats: each cap in a block */
        cap_of[i] = o == ASCENDING ? k : ncaps - 1 - k;
    }
    if (o == SHUFFLED)
        for (size_t i = rows; i > 1; i--) {
            size_t j = next_rand() % i, t = cap_of[i - 1];
            cap_of[i - 1] = cap_of[j];
            cap_of[j] = t;
        }
    n += (size_t)snprintf(buf + n, cap - n, "job,gpus,cap_w,power_w,throughput%s\n",
                          tm ? ",dram_active" : "");
    for (size_t i = 0; i < rows; i++) {
        double c = 200 + 2.0 * (double)cap_of[i];
        double p = c * (0.95 + 0.01 * (double)(next_rand() % 100) / 100);
        double t = 1000 * (0.5 + 0.5 * c / 700) + (double)(next_rand() % 1000) / 100;
        n += (size_t)snprintf(buf + n, cap - n, "big,8,%g,%.2f,%.2f", c, p, t);
        if (tm)
            n += (size_t)snprintf(buf + n, cap - n, ",0.%02u", (unsigned)(next_rand() % 100));
        buf[n++] = '\n';
    }
    free(cap_of);
    *len = n;
    return buf;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double time_read(const char *buf, size_t len, int runs)
{
    double t[9];
    for (int r = 0; r < runs; r++) {
        pflex_sweep_t *sw;
        pflex_error_t err;
        double t0 = cpu_seconds();
        if (pflex_sweep_read_mem(buf, len, "bench", NULL, &sw, &err) < 0) {
            fprintf(stderr, "sweep_read_bench: %s\n", err.text);
            exit(1);
        }
        t[r] = cpu_seconds() - t0;
        pflex_sweep_destroy(sw);
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    return t[runs / 2];
}

static int read_sweep(const char *path)
{
    pflex_sweep_t *sw;
    pflex_error_t err;
    if (pflex_sweep_read_file(path, NULL, &sw, &err) < 0) {
        fprintf(stderr, "sweep_read_bench: %s\n", err.text);
        return -1;
    }
    pflex_sweep_destroy(sw);
    return 0;
}

static int peers(const char *dir, int reps)
{
    static const size_t rows[2] = {100000, 1000000};
    double t[2];
    for (int i = 0; i < 2; i++) {
        char path[4096], label[64];
        snprintf(path, sizeof path, "%s/sweep-%zu.csv", dir, rows[i]);
        FILE *f = fopen(path, "r");
        if (!f) {
            if (!(f = fopen(path, "w")))
                return 1;
            fputs("job,gpus,cap_w,power_w,throughput\n", f);
            for (size_t r = 0; r < rows[i]; r++) {
                double c = 700 - 50.0 * (double)(r % 8);
                fprintf(f, "job%zu,8,%g,%.2f,%.2f\n", r / 8, c,
                        c * (0.8 + 0.01 * (double)(next_rand() % 20)),
                        1000 + (double)(next_rand() % 100000) / 100);
            }
        }
        if (fclose(f))
            return 1;
        snprintf(label, sizeof label, "sweep CSV, %zu rows:", rows[i]);
        if ((t[i] = peers_compare(label, path, reps, read_sweep, PEER_PY_SWEEP, 0)) < 0)
            return 1;
    }
    printf("  %-34s x%.1f per 10x rows\n", "sweep CSV, growth:", t[1] / t[0]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "peers"))
        return peers(argv[2], atoi(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "pairs"))
        return peers_pairs(argv[2], atoi(argv[3]), read_sweep) < 0;
    size_t def[] = {40000, 80000, 160000, 1000000}, sizes[16];
    size_t nsizes = 0;
    for (int i = 1; i < argc && nsizes < 16; i++)
        sizes[nsizes++] = strtoull(argv[i], NULL, 10);
    if (!nsizes)
        for (; nsizes < 4; nsizes++)
            sizes[nsizes] = def[nsizes];
    printf("one job, 250 caps; CPU seconds to read (median of 3); ratio to the size before\n");
    printf("%-10s %-10s %10s %10s %8s\n", "order", "telemetry", "rows", "seconds", "ratio");
    for (int tm = 0; tm < 2; tm++)
        for (int o = 0; o < 3; o++) {
            double last = 0;
            size_t last_n = 0;
            for (size_t s = 0; s < nsizes; s++) {
                size_t len;
                char *buf = make_sweep(sizes[s], (enum order)o, tm, &len);
                double t = time_read(buf, len, 3);
                free(buf);
                if (last > 0)
                    printf("%-10s %-10s %10zu %10.4f %8.2f  (rows x%.2f)\n", order_name[o],
                           tm ? "yes" : "no", sizes[s], t, t / last,
                           (double)sizes[s] / (double)last_n);
                else
                    printf("%-10s %-10s %10zu %10.4f %8s\n", order_name[o], tm ? "yes" : "no",
                           sizes[s], t, "");
                last = t;
                last_n = sizes[s];
            }
        }
    printf("\nloss curve of one job, distinct caps, power rising as the cap falls\n");
    printf("%-10s %10s %10s %8s\n", "points", "", "seconds", "ratio");
    double last = 0;
    for (size_t k = 0; k < nsizes; k++) {
        size_t n = sizes[k];
        struct pflex_sweep_point *p = calloc(n, sizeof *p);
        if (!p)
            return 1;
        for (size_t i = 0; i < n; i++) {
            p[i].cap_w = 100 + (double)i * 1e-3;
            p[i].power_w = 450 - 400 * (double)i / (double)n;
            p[i].throughput = 100 + (double)(next_rand() % 900);
            p[i].rows = 1;
        }
        p[n - 1].power_w = 500;
        double t[3];
        for (int r = 0; r < 3; r++) {
            struct pflex_curve c;
            pflex_error_t err;
            double t0 = cpu_seconds();
            if (pflex_curve_init(&c, p, n, &err) < 0)
                return 1;
            t[r] = cpu_seconds() - t0;
            pflex_curve_fini(&c);
        }
        qsort(t, 3, sizeof *t, cmp_double);
        if (last > 0)
            printf("%-10zu %10s %10.4f %8.2f\n", n, "", t[1], t[1] / last);
        else
            printf("%-10zu %10s %10.4f\n", n, "", t[1]);
        last = t[1];
        free(p);
    }
    return 0;
}
