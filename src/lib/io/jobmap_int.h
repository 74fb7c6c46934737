/* jobmap_int.h — what the job map's files share (jobmap.c: the map and
 * its CSV; slurm.c: the Slurm readers; slurm_syntax.c: Slurm's notations).
 * Not a public header: include/pflex/io/slurm.h is the interface. */
#ifndef PFLEX_IO_JOBMAP_INT_H
#define PFLEX_IO_JOBMAP_INT_H

#include <stddef.h>
#include <stdint.h>
#include "lib/util/strtab.h"
#include "pflex/io/slurm.h"

#define MAX_HOST_LEN 255        /* a DNS name's limit */
#define MAX_ID_LEN 64

/* ---- text helpers (slurm_syntax.c) */
int pflex_jm_host_char(int c);
int pflex_jm_id_char(int c);
/* A printable excerpt of s[0..len) for messages into buf (48 bytes). */
const char *pflex_jm_excerpt(char *buf, const char *s, size_t len);
/* n (<= 9) decimal digits, or -1; never reads past s + n. */
long pflex_jm_num(const char *s, size_t n);
char *pflex_jm_dup(const char *s, size_t n);
/* GPUs of one node from a GRES detail string into set[PFLEX_SLURM_MAX_GPUS]:
 * their number, -2 when a gpu entry names no indices, -1 with err. */
int pflex_jm_gres_parse(const char *s, size_t n, unsigned char *set, pflex_error_t *err);

/* ---- the map (jobmap.c) */

struct entry {
    uint32_t host;
    int32_t gpu;        /* -1: unknown */
    unsigned line;
};

struct job {
    char *id, *name;
    int running;
    int has_hosts;          /* hosts[] is the job's node list */
    int detail;             /* entries[] says which GPUs (else: hosts, GPUs unknown) */
    uint32_t *hosts;        /* node list, host ids, sorted */
    size_t nhosts;
    struct entry *e;
    size_t ne, cape;
    const char *src;        /* file name (owned by the map) */
    unsigned line;
};

struct pflex_jobmap {
    struct pflex_strtab hosts;
    struct pflex_strtab ids;      /* job ids; jobs[i] is ids.s[i] */
    struct job *jobs;
    size_t njobs, capjobs;
    size_t entries;         /* across all jobs, for the row bound */
    struct pflex_strtab srcs;
    struct pflex_jobmap_row *rows;
    size_t nrows;
    const struct pflex_jobmap_row **by_gpu;  /* rows with a GPU, by host then gpu */
    size_t nby_gpu;
};

void pflex_jm_job_fini(struct job *j);
/* Forget the rows built: the map is about to change. */
void pflex_jm_rows_reset(pflex_jobmap_t *m);
int pflex_jm_cmp_u32(const void *a, const void *b);
/* Is host id h in j's (sorted) node list? */
int pflex_jm_in_hosts(const struct job *j, uint32_t h);
/* One (host, gpu) row of j, within the map's row bound. */
int pflex_jm_add_entry(pflex_jobmap_t *m, struct job *j, uint32_t host, int gpu, unsigned line,
                       const char *file, pflex_error_t *err);
/* Sort a finished job's entries and node list; a repeat is an error. */
int pflex_jm_job_finish(pflex_jobmap_t *m, struct job *j, const char *file, pflex_error_t *err);
/* Merge j into m, taking it (emptied) whatever happens. */
int pflex_jm_merge(pflex_jobmap_t *m, struct job *j, pflex_error_t *err);
/* The map's copy of a file name, for messages that outlive the read. */
const char *pflex_jm_src_name(pflex_jobmap_t *m, const char *name, pflex_error_t *err);
int pflex_jm_set_id(struct job *j, const char *s, size_t n, const char *file, unsigned line,
                    int digits_only, pflex_error_t *err);
int pflex_jm_set_name(struct job *j, const char *s, size_t n, const char *file, unsigned line,
                      pflex_error_t *err);
typedef int (*pflex_jm_reader_fn)(pflex_jobmap_t *, const char *, size_t, const char *,
                         pflex_error_t *);
/* Read path ("-": stdin) whole and hand it to fn. */
int pflex_jm_read_file(pflex_jobmap_t *m, const char *path, pflex_jm_reader_fn fn,
                       pflex_error_t *err);

#endif
