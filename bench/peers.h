/* peers.h — a reader's time beside its peers', for the reader benchmarks.
 *
 * A peer is another program run on the same file: `wc -l` (the floor: one
 * pass that parses nothing), promtool (Prometheus' own parser) and a plain
 * Python loop that sums the same columns.  Each is timed as a child
 * process (user + system CPU from wait4, so that other load on a shared
 * machine does not count), alternating with pflex's own reading, and the
 * medians are compared.  A peer that is not installed is left out. */
#ifndef PFLEX_BENCH_PEERS_H
#define PFLEX_BENCH_PEERS_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Python: sum the value columns of FILE, csv module for CSV, a split for
 * Prometheus text. */
#define PEER_PY_SMI                                                                     \
    "import csv,sys\n"                                                                  \
    "s=0.0\n"                                                                           \
    "with open(sys.argv[1],newline='') as f:\n"                                         \
    " r=csv.reader(f,skipinitialspace=True);next(r)\n"                                  \
    " for row in r:\n"                                                                  \
    "  for v in row[3:]: s+=float(v.split()[0])\n"                                      \
    "print(s)\n"
#define PEER_PY_SWEEP                                                                   \
    "import csv,sys\n"                                                                  \
    "s=0.0\n"                                                                           \
    "with open(sys.argv[1],newline='') as f:\n"                                         \
    " r=csv.reader(f);h=next(r);i=[h.index(c) for c in ('cap_w','power_w','throughput')]\n" \
    " for row in r:\n"                                                                  \
    "  for k in i: s+=float(row[k])\n"                                                  \
    "print(s)\n"
#define PEER_PY_PROM                                                                    \
    "import sys\n"                                                                      \
    "s=0.0\n"                                                                           \
    "with open(sys.argv[1]) as f:\n"                                                    \
    " for line in f:\n"                                                                 \
    "  if line[0]!='#': s+=float(line.rsplit(' ',1)[1])\n"                              \
    "print(s)\n"

static double peer_cpu_self(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of argv run with stdin from in (or NULL) and its output
 * discarded; -1 when it cannot be run. */
static double peer_run(char *const argv[], const char *in)
{
    pid_t p = fork();
    if (p < 0)
        return -1;
    if (p == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        if (in) {
            int fd = open(in, O_RDONLY);
            if (fd < 0)
                _exit(127);
            dup2(fd, 0);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(p, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) == 127)
        return -1;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static int peer_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double peer_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, peer_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Time read(path) (pflex, in this process) and the peers on path, reps
 * times alternating, and print one line per peer with the ratio
 * pflex / peer.  py: the Python loop (NULL: none); promtool: also run
 * `promtool check metrics < path`.  Returns pflex's median, or -1. */
#define PEER_REPS_MAX 15
static double peers_compare(const char *label, const char *path, int reps,
                            int (*read)(const char *path), const char *py, int promtool)
{
    double tp[PEER_REPS_MAX], tw[PEER_REPS_MAX], tpy[PEER_REPS_MAX], tpt[PEER_REPS_MAX];
    char *wc[] = {"wc", "-l", (char *)path, NULL};
    char *pyv[] = {"python3", "-c", (char *)py, (char *)path, NULL};
    char *pt[] = {"promtool", "check", "metrics", NULL};
    int have_py = py != NULL, have_pt = promtool;
    if (reps > PEER_REPS_MAX)
        reps = PEER_REPS_MAX;
    for (int r = 0; r < reps; r++) {
        double t0 = peer_cpu_self();
        if (read(path) < 0)
            return -1;
        tp[r] = peer_cpu_self() - t0;
        tw[r] = peer_run(wc, NULL);
        if (have_py && (tpy[r] = peer_run(pyv, NULL)) < 0)
            have_py = 0;
        /* promtool's exit status (lint findings) does not matter: it read it all */
        if (have_pt && (tpt[r] = peer_run(pt, path)) < 0)
            have_pt = 0;
    }
    double p = peer_median(tp, reps), w = peer_median(tw, reps);
    printf("  %-34s pflex %7.3f s | wc -l %6.3f s: x%5.1f", label, p, w, p / w);
    if (have_pt) {
        double v = peer_median(tpt, reps);
        printf(" | promtool %6.3f s: x%.2f", v, p / v);
    }
    if (have_py) {
        double v = peer_median(tpy, reps);
        printf(" | python %6.3f s: x%.3f", v, p / v);
    }
    printf("\n");
    return p;
}

/* read(path) in this process against `wc -l path`, reps pairs in turn
 * (no other peer between them, so each pair sees about the same machine): Unused by some benchmarks.
 * each pair's ratio and the medians of the times and of the ratios. */
__attribute__((unused)) static int peers_pairs(const char *path, int reps, int (*read)(const char *path))
{
    double tp[PEER_REPS_MAX], tw[PEER_REPS_MAX], q[PEER_REPS_MAX];
    char *wc[] = {"wc", "-l", (char *)path, NULL};
    if (reps > PEER_REPS_MAX)
        reps = PEER_REPS_MAX;
    if (reps < 1)
        reps = 1;
    printf("  %s, pflex / wc -l, pair by pair:", path);
    for (int r = 0; r < reps; r++) {
        double t0 = peer_cpu_self();
        if (read(path) < 0)
            return -1;
        tp[r] = peer_cpu_self() - t0;
        if ((tw[r] = peer_run(wc, NULL)) <= 0)
            return -1;
        q[r] = tp[r] / tw[r];
        printf(" x%.1f", q[r]);
    }
    double p = peer_median(tp, reps), w = peer_median(tw, reps), m = peer_median(q, reps);
    printf("\n  medians of %d pairs: pflex %.3f s, wc -l %.3f s, ratio x%.1f "
           "(ratio of the medians x%.1f)\n", reps, p, w, m, p / w);
    return 0;
}

#endif
