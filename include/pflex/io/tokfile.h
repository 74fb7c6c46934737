/* pflex/io/tokfile.h — a training job's token counter file, the throughput
 * source of a sweep on real GPUs (pflex sweep --backend nvml).
 *
 * The job appends one line per step (or every few seconds):
 *     UNIX_TIME TOKENS_TOTAL
 * the wall-clock time in seconds and its cumulative count of tokens (or
 * samples, or any one unit).  Fields are separated by spaces, tabs or a
 * comma; further fields are ignored; lines starting with '#' are comments;
 * an incomplete last line (the job may be writing it) is not read.
 */
#ifndef PFLEX_TOKFILE_H
#define PFLEX_TOKFILE_H

#include "pflex/util/error.h"

struct pflex_tokfile_mark {
    double t_s;         /* the job's unix time, s */
    double tokens;      /* its cumulative counter, the job's unit */
};

/* What pflex_tokfile_last returns when the last data line is malformed. */
#define PFLEX_TOKFILE_BAD (-2)

/* The last complete data line of the file at path (only its last 64 KiB
 * are read).  Returns 0 and *m; 1 when the file has no complete data line
 * yet; -1 with err when the file cannot be read; PFLEX_TOKFILE_BAD with
 * err when the last data line is not 'UNIX_TIME TOKENS_TOTAL'. */
int pflex_tokfile_last(const char *path, struct pflex_tokfile_mark *m, pflex_error_t *err);

#endif
