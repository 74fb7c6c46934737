/* pflex/io/sweep.h — power-cap sweeps: reading the sweep CSV (docs/contract.md §3).
 *
 * A sweep holds, per job, its measurements at several per-GPU power caps.
 * Rows at the same cap are averaged (power and throughput separately) and
 * points are kept in ascending cap order.  Jobs keep the order in which they
 * first appear in the file.  The sweep owns every string and array in it.
 */
#ifndef PFLEX_SWEEP_H
#define PFLEX_SWEEP_H

#include <stddef.h>
#include <stdio.h>
#include "pflex/util/error.h"

/* Telemetry columns of a sweep, in docs/contract.md §3 order and units. */
enum pflex_tm {
    PFLEX_TM_SM_CLOCK_MHZ, PFLEX_TM_MEM_CLOCK_MHZ, PFLEX_TM_GPU_UTIL,
    PFLEX_TM_MEM_COPY_UTIL, PFLEX_TM_SM_ACTIVE, PFLEX_TM_SM_OCCUPANCY,
    PFLEX_TM_TENSOR_ACTIVE, PFLEX_TM_DRAM_ACTIVE, PFLEX_TM_GR_ENGINE_ACTIVE,
    PFLEX_TM_PCIE_TX_BYTES, PFLEX_TM_PCIE_RX_BYTES, PFLEX_TM_NVLINK_TX_BYTES,
    PFLEX_TM_NVLINK_RX_BYTES,
    PFLEX_TM_COUNT
};

/* Column name of a telemetry field ("dram_active", ...). */
const char *pflex_tm_name(enum pflex_tm f);

struct pflex_sweep_point {
    double cap_w;       /* per-GPU power cap, W */
    double power_w;     /* mean measured per-GPU board power, W */
    double throughput;  /* mean throughput, the job's own unit */
    unsigned rows;      /* rows averaged into this point */
    unsigned line;      /* first line of this point in the file */
};

struct pflex_sweep_job {
    const char *name;
    const char *gpu;        /* GPU model name, or NULL */
    int gpus;               /* GPUs the job runs on (default 1) */
    double floor;           /* service floor 0..1, NaN when unset */
    double weight;          /* objective weight (default 1) */
    size_t npoints;
    struct pflex_sweep_point *points;   /* ascending cap_w */
    /* npoints x PFLEX_TM_COUNT means, NaN where absent; NULL when the file
     * has no telemetry column. */
    double *telemetry;
    unsigned line;          /* line of the job's first row */
};

typedef struct pflex_sweep {
    size_t njobs;
    struct pflex_sweep_job *jobs;
    int has_telemetry;
    void *priv;             /* storage; do not touch */
    /* What the reader noticed but did not refuse, one "file:line: ..."
     * message a line (each ending in '\n'), or NULL: a header that is no
     * sweep column but lies close to an optional one it lacks ("flor": did
     * you mean 'floor'?).  The caller shows them; the library never prints. */
    const char *warnings;
} pflex_sweep_t;

/* Read a sweep CSV.  name is used in messages ("file:line: ...").
 * The header must hold each column once (a known or mapped column twice
 * is refused); a header of one field holding ';' or a tab is refused with
 * a hint about the separator.
 * columns is NULL or "name=Header,..." mapping pflex names onto the file's
 * headers.  Returns 0 and *out (free with pflex_sweep_destroy), or -1 with
 * err set.  The buffer need not be NUL-terminated. */
int pflex_sweep_read_mem(const char *buf, size_t len, const char *name,
                         const char *columns, pflex_sweep_t **out,
                         pflex_error_t *err);

/* Same, from a file path; "-" reads standard input. */
int pflex_sweep_read_file(const char *path, const char *columns,
                          pflex_sweep_t **out, pflex_error_t *err);

/* Reading without keeping the sweep, for callers that turn each job into
 * something smaller at once (a million-job sweep then never holds its
 * points).  v->job is called once per job, in the order of
 * pflex_sweep_read_file, with the job as that would give it; the job, its
 * points and its strings are valid during the call only.  It returns 0, or
 * -1 with err set, which stops the reading with that error.  A job may be
 * handed over before a later row turns out to be bad: the reading then
 * fails with the error pflex_sweep_read_file gives, and what v->job kept
 * is to be dropped.  When a job's rows turn out not to stand together,
 * v->restart is called (drop every job handed over so far) and every job
 * is handed over again.  Returns 0, or -1 with err set. */
struct pflex_sweep_visitor {
    void *ctx;
    int (*job)(void *ctx, const struct pflex_sweep_job *job, pflex_error_t *err);
    void (*restart)(void *ctx);
    /* NULL, or called once with the warnings pflex_sweep_t.warnings would
     * hold (when there are any), before the first job. */
    void (*warn)(void *ctx, const char *warnings);
};
int pflex_sweep_read_file_each(const char *path, const char *columns,
                               const struct pflex_sweep_visitor *v, pflex_error_t *err);

/* The same with flags.  PFLEX_SWEEP_KEEP_BAD: a bad job does not fail the
 * reading; a power or throughput that is not a number, or out of its range,
 * is read as NaN (averaged into its point), and a job measured at one cap
 * is kept; pflex_sweep_job_check then tells the bad jobs, for the caller
 * to skip.  Errors of the file (header, field counts, caps, names) still
 * fail it. */
#define PFLEX_SWEEP_KEEP_BAD 1u
int pflex_sweep_read_file_flags(const char *path, const char *columns, unsigned flags,
                                pflex_sweep_t **out, pflex_error_t *err);
int pflex_sweep_read_file_each_flags(const char *path, const char *columns, unsigned flags,
                                     const struct pflex_sweep_visitor *v, pflex_error_t *err);

/* Whether a job is one a curve or a PFI can be read from: two caps or more,
 * every power positive and every throughput >= 0, all finite.  Returns 0,
 * or -1 with err saying why ("line 9: power_w at 300 W is not ..."). */
int pflex_sweep_job_check(const struct pflex_sweep_job *j, pflex_error_t *err);

void pflex_sweep_destroy(pflex_sweep_t *s);

/* Service floors of the Emerald flex tiers: Flex 0..3 (1.0, 0.90, 0.75, 0.50). */
extern const double pflex_tier_floors[4];

/* Service floor of a tier name "flex0".."flex3" (also "Flex 2", "2"):
 * 1.0, 0.90, 0.75, 0.50.  Returns 0 and *floor, or -1. */
int pflex_tier_floor(const char *tier, double *floor);

/* What a reader holds of one input: a text line (a CSV record, quoted
 * line breaks and all) of at most PFLEX_LINE_MAX_BYTES, a whole input read
 * into memory of at most PFLEX_INPUT_MAX_BYTES.  Past either the reading
 * stops with "file:line: line longer than ..." or "file: more than ..."
 * (a bad input), so that a stream such as /dev/zero never grows memory
 * without bound.  docs/contract.md states them. */
#define PFLEX_LINE_MAX_BYTES (1u << 20)
#define PFLEX_INPUT_MAX_BYTES ((size_t)1 << 30)

/* Read a whole file ("-" = stdin) into a malloc'd buffer, NUL-terminated
 * one byte past *len (the file may hold NULs of its own).  A directory is
 * refused ("FILE: is a directory"), so are the inputs past the limits
 * above; out of memory and read errors set err->system. */
int pflex_read_all(const char *path, char **buf, size_t *len, pflex_error_t *err);
/* The same, for readers that need no NUL after the text: a regular file of
 * 1 MiB and more is mapped (read-only, its pages mapped at once) rather
 * than copied, with *mapped its length; else *mapped is 0 and the text is
 * pflex_read_all's.  Release with pflex_unmap_all.  (A mapped file cut
 * short by another process while it is read ends the reading process with
 * SIGBUS, as with any reader that maps.) */
int pflex_map_all(const char *path, const char **buf, size_t *len, size_t *mapped,
                  pflex_error_t *err);
void pflex_unmap_all(const char *buf, size_t mapped);

/* Writing sweep CSV rows (to a caller's stream).  The header is
 * job,gpu,gpus,cap_w,power_w,throughput[,telemetry columns in enum order].
 * tm may be NULL (empty telemetry fields); NaN values are written empty.
 * Return 0, or -1 on a write error. */
int pflex_sweep_write_header(FILE *f, int telemetry);
int pflex_sweep_write_row(FILE *f, int telemetry, const char *job, const char *gpu, int gpus,
                          double cap_w, double power_w, double throughput, const double *tm);

#endif
