/* pflex/io/slurm.h — which Slurm job holds which GPU: the job map.
 *
 * Readers of what Slurm's own commands print (docs/slurm.md has the exact
 * command lines and the fields read):
 *   squeue --noheader -o '%A|%T|%D|%N|%j'    one job a line, no GPU indices
 *   squeue --json                             jobs[] with gres_detail per node
 *   scontrol show job -d [ID]                 the "Nodes=... GRES=gpu:..(IDX:..)"
 *                                             detail lines give GPU indices
 * and the job map CSV (job,name,host,gpu) that `pflex jobs --csv` writes.
 *
 * Every reader adds the jobs it reads to one pflex_jobmap_t; a job read from
 * two sources (squeue and scontrol) is merged: indices from the source that
 * has them, and an error where the two disagree.  Only RUNNING jobs are
 * mapped; the others are counted as skipped.  Bounds: PFLEX_SLURM_MAX_HOSTS
 * hosts in one hostlist, GPU indices below PFLEX_SLURM_MAX_GPUS,
 * PFLEX_JOBMAP_MAX_ROWS rows in a map; input past them is an error, never
 * a large allocation.  Errors read "file:line: what is wrong".
 */
#ifndef PFLEX_SLURM_H
#define PFLEX_SLURM_H

#include <stddef.h>
#include <stdio.h>
#include "pflex/util/error.h"

#define PFLEX_SLURM_MAX_HOSTS 65536     /* hosts one hostlist may expand to */
#define PFLEX_SLURM_MAX_GPUS 1024       /* GPU indices are 0..MAX_GPUS-1 */
#define PFLEX_JOBMAP_MAX_ROWS 1048576   /* (job, host, gpu) rows in a map */
#define PFLEX_SLURM_MAX_NAME 1024       /* bytes of a job or host name */

/* Expand a Slurm hostlist ("gpu-[01-04,07]", "node[1-3]-ib", "r[1-2]n[1-2]",
 * comma-separated expressions; zero padding kept from the lower bound) into
 * *hosts (n strings; free with pflex_slurm_hostlist_free).  An empty list or
 * "(null)" gives n = 0.  More than max hosts (max <= PFLEX_SLURM_MAX_HOSTS),
 * a bad range or a character that is not a host name's is an error (-1,
 * err without a file name: the caller adds where it came from). */
int pflex_slurm_hostlist_expand(const char *list, size_t len, size_t max, char ***hosts,
                                size_t *n, pflex_error_t *err);
void pflex_slurm_hostlist_free(char **hosts, size_t n);

/* One GPU of one job: a row of the job map.  gpu is -1 where the source
 * names the job's hosts but not its GPU indices (squeue text output, or a
 * GRES without IDX): the job holds GPUs of that host, which ones is unknown. */
struct pflex_jobmap_row {
    const char *job;        /* Slurm job id, e.g. "4242" */
    const char *name;       /* job name ("" when the source has none) */
    const char *host;
    int gpu;                /* GPU index on the host, or -1: unknown */
};

typedef struct pflex_jobmap pflex_jobmap_t;

/* An empty map, or NULL out of memory. */
pflex_jobmap_t *pflex_jobmap_create(void);
void pflex_jobmap_destroy(pflex_jobmap_t *m);

/* Read squeue output (the '|' text format above, or --json: detected by a
 * first non-blank '{') into m.  name names the buffer in messages. */
int pflex_slurm_squeue_read_mem(pflex_jobmap_t *m, const char *buf, size_t len,
                                const char *name, pflex_error_t *err);
/* Read `scontrol show job -d` output (records separated by blank lines, or
 * one record a line with -o) into m. */
int pflex_slurm_scontrol_read_mem(pflex_jobmap_t *m, const char *buf, size_t len,
                                  const char *name, pflex_error_t *err);
/* Read a job map CSV (job,host,gpu required; name optional) into m. */
int pflex_jobmap_csv_read_mem(pflex_jobmap_t *m, const char *buf, size_t len,
                              const char *name, pflex_error_t *err);

/* The same from a file ("-": standard input). */
int pflex_slurm_squeue_read_file(pflex_jobmap_t *m, const char *path, pflex_error_t *err);
int pflex_slurm_scontrol_read_file(pflex_jobmap_t *m, const char *path, pflex_error_t *err);
int pflex_jobmap_csv_read_file(pflex_jobmap_t *m, const char *path, pflex_error_t *err);

/* The map's rows, sorted by job id (numerically), host, then gpu (unknown
 * first); *rows stays valid until the next read into m or its destruction.
 * Returns the number of rows, or -1 (err set: a GPU claimed by two jobs, too
 * many rows, out of memory). */
long pflex_jobmap_rows(pflex_jobmap_t *m, const struct pflex_jobmap_row **rows,
                       pflex_error_t *err);

/* The row of the job holding GPU gpu (an index, >= 0) of host, or NULL when
 * no job is known to hold it (or the rows cannot be built: see
 * pflex_jobmap_rows).  For attributing a GPU's telemetry to its job; valid
 * as the rows are. */
const struct pflex_jobmap_row *pflex_jobmap_find(pflex_jobmap_t *m, const char *host, int gpu);

/* Jobs read but not mapped because they were not RUNNING. */
size_t pflex_jobmap_skipped(const pflex_jobmap_t *m);

/* Write the rows as the job map CSV (header "job,name,host,gpu", gpu empty
 * when unknown).  Returns 0, or -1 on a write error. */
int pflex_jobmap_write_csv(const struct pflex_jobmap_row *rows, size_t n, FILE *f);

#endif
