/* pflex/io/pficsv.h — reading the PFI CSV of docs/contract.md §3 (`pflex pfi --csv`).
 *
 * Required columns: job, gpus, power_w (baseline per-GPU power, W),
 * throughput (baseline), pfi (empty: no cap binds).  Optional: metric (the
 * metric of pfi: ratio, area, elasticity, loss-area; ratio when absent or
 * empty), grid (the caps considered, "200/500/600/700"), range (the range
 * used by loss-area), floor, tier (flex0..flex3, sets floor where floor is
 * empty), weight, gpu (GPU model name, for its settable range), cap_w (the
 * baseline cap, kept by a job that is not cut).  Other columns are ignored
 * (one of them may be read as "by"; one close to a column the header
 * lacks is a warning, in warnings).  A column given twice is refused.  One
 * row per job.  A pfi the named
 * metric cannot produce (ratio: outside [0.01, 200]; area: outside
 * [-1, 1]; loss-area: under 1 - 2/range where range is given; any: not
 * finite) is refused with file:line, and so is a job or gpu name that
 * pflex_name_problem refuses.
 */
#ifndef PFLEX_PFICSV_H
#define PFLEX_PFICSV_H

#include <stddef.h>
#include "pflex/util/error.h"

struct pflex_pfi_row {
    const char *job;
    const char *gpu;        /* NULL when absent */
    const char *metric;     /* "ratio", "area", "elasticity" or "loss-area" (static) */
    const char *grid;       /* NULL when absent */
    int gpus;
    double power_w;         /* baseline per-GPU power, W */
    double throughput;      /* baseline throughput */
    double pfi;             /* NaN when empty */
    double range;           /* NaN when absent */
    double floor;           /* NaN when absent */
    double weight;          /* 1 when absent */
    double cap_w;           /* NaN when absent */
    double by;              /* the "by" column's value; NaN when absent */
    unsigned line;
};

typedef struct pflex_pficsv {
    size_t n;
    struct pflex_pfi_row *rows;
    int has_weight;         /* the file has a weight column */
    int has_by;             /* the file has the "by" column */
    const char *warnings;   /* a header field close to a column it lacks ("flor"):
                             * a line each, ending in '\n'; NULL when none */
    void *priv;             /* storage; do not touch */
} pflex_pficsv_t;

/* Read a PFI CSV from memory (name for messages) or a file ("-": stdin).
 * Returns 0 and *out (free with pflex_pficsv_destroy), or -1 with err set
 * as "file:line: what is wrong". */
int pflex_pficsv_read_mem(const char *buf, size_t len, const char *name,
                          pflex_pficsv_t **out, pflex_error_t *err);
int pflex_pficsv_read_file(const char *path, pflex_pficsv_t **out, pflex_error_t *err);
/* The same, also reading the numeric column named by (NULL: none) into
 * each row's by. */
int pflex_pficsv_read_mem_by(const char *buf, size_t len, const char *name, const char *by,
                             pflex_pficsv_t **out, pflex_error_t *err);
int pflex_pficsv_read_file_by(const char *path, const char *by, pflex_pficsv_t **out,
                              pflex_error_t *err);
void pflex_pficsv_destroy(pflex_pficsv_t *p);

/* The row of a job by name, or NULL. */
const struct pflex_pfi_row *pflex_pficsv_find(const pflex_pficsv_t *p, const char *job);

#endif
