/* telemetry_impl.h — what the telemetry readers share inside libpflex. */
#ifndef PFLEX_TELEMETRY_IMPL_H
#define PFLEX_TELEMETRY_IMPL_H

#include "pflex/io/telemetry.h"

/* A series key: strings point into the input, with lengths. */
struct tm_key {
    const char *job, *host, *uuid;
    size_t job_len, host_len, uuid_len;   /* job/uuid NULL: none */
    long gpu;                             /* -1: none */
    int field;
};

/* Add one sample: tm_series, then tm_sample.  name and line are for
 * messages (series and sample limits). */
int tm_add(pflex_tm_t *t, const struct tm_key *k, double time_s, double value,
           const char *name, unsigned line, pflex_error_t *err);
/* The index of k's series, added (first seen at line) when new; -1 with
 * err at the series limit or out of memory.  An index stays valid until
 * the store is sorted or mapped. */
long tm_series(pflex_tm_t *t, const struct tm_key *k, const char *name, unsigned line,
               pflex_error_t *err);
/* Add a sample of series (an index from tm_series). */
int tm_sample(pflex_tm_t *t, uint32_t series, double time_s, double value, const char *name,
              unsigned line, pflex_error_t *err);
/* tm_sample for n samples of one time, series[i] with value[i], in that
 * order: the same samples, the same error at the same sample; a row's
 * checks made once. */
int tm_samples(pflex_tm_t *t, const uint32_t *series, const double *value, size_t n,
               double time_s, const char *name, unsigned line, pflex_error_t *err);
/* Room for about series more series (an estimate from the input; bounded
 * by the limit): the table is sized once instead of grown on the way. */
void tm_reserve(pflex_tm_t *t, size_t series);
/* Series without a table lookup, for a reader that knows each key it
 * adds is new to the store (it read into an empty store and keeps every
 * key it made): tm_series_append adds one (its strings from tm_intern, h
 * = tm_key_hash_of(tm_key_hash_strings(k), gpu, field)), and the table is
 * built again when tm_series next needs it.  tm_reserve_arrays: room for
 * about series more, without a table. */
long tm_series_append(pflex_tm_t *t, const struct tm_key *k, uint64_t h, const char *name,
                      unsigned line, pflex_error_t *err);
uint64_t tm_key_hash_strings(const struct tm_key *k);
uint64_t tm_key_hash_of(uint64_t strings, long gpu, int field);
void tm_reserve_arrays(pflex_tm_t *t, size_t series);
/* A copy of s[0..len) that the store owns; NULL out of memory. */
char *tm_store_str(pflex_tm_t *t, const char *s, size_t len);
/* The store's one copy of s[0..len) (series strings: job, host, uuid; a
 * series' strings must come from here); NULL out of memory. */
const char *tm_intern(pflex_tm_t *t, const char *s, size_t len);
/* Series keys were changed in place (the job map): find them anew. */
void tm_rekey(pflex_tm_t *t);

/* The order of the series, as a reader knows it from its own tables:
 * order[0..n) the series (n = t->nseries now) in the order pflex_tm_sort
 * puts them.  The store takes order (malloc'd; NULL drops a hint) and the
 * sort checks it (each series a permutation's, strictly before the next)
 * before it uses it, else sorts as usual: it only spares the sort's work. */
void tm_order_hint(pflex_tm_t *t, uint32_t *order, size_t n);

/* Runs: a reader that can tell from a first look at its input how many
 * samples each series will have, at most, and in which order the series
 * sort, writes them straight into place (no grouping copy by
 * pflex_tm_sort).  tm_runs_begin lays out nslots runs of cap[i] samples
 * (only on an empty store: -1 otherwise, and the store appends as usual);
 * tm_runs_claim gives a new series its slot; a sample of a series without
 * one, past its run's room, or a slot claimed twice ends the runs (what
 * they hold becomes ordinary samples, appended to from then on).
 * tm_runs_end closes them up at the end of the read; a rollback drops
 * them.  Only the layout depends on the hint, never the samples. */
int tm_runs_begin(pflex_tm_t *t, size_t nslots, const size_t *cap);
void tm_runs_claim(pflex_tm_t *t, uint32_t series, size_t slot);
void tm_runs_end(pflex_tm_t *t);
void tm_runs_drop(pflex_tm_t *t);

/* What a read has added, to take back on failure. */
struct tm_mark {
    size_t nseries, nsamples, skipped;
    int sorted;
    uint32_t last;
    double last_time;
};
void tm_mark(const pflex_tm_t *t, struct tm_mark *m);
void tm_rollback(pflex_tm_t *t, const struct tm_mark *m);

const struct pflex_tm_limits *tm_limits(const pflex_tm_t *t);

/* Lines of a buffer, each at most max bytes (its '\n' and a '\r' before it
 * excluded).  Returns 1 with a line, 0 at the end, -1 (err set) when one is
 * longer. */
struct tm_lines {
    const char *p, *end;
    const char *name;
    unsigned line;
    size_t max;
    /* Streaming (tm_lines_stream): the input is read from fd in chunks
     * into buf (cap bytes, fill of them read), [p, end) the whole lines of
     * it not taken yet; a line taken stays valid until the next call. */
    int fd;                 /* -1: the input is all in [p, end) */
    char *buf;
    size_t cap, fill;
    int eof;
    unsigned long long size, off;   /* the file's size; its offset of buf[0] */
};
void tm_lines_init(struct tm_lines *l, const char *buf, size_t len, const char *name, size_t max);
int tm_lines_next(struct tm_lines *l, const char **s, size_t *len, pflex_error_t *err);
/* Read the file fd (size bytes) as it is taken: the first chunk, of at
 * most first bytes (whole lines), is in [p, end) on return.  0, or -1
 * with err set (memory, read error).  tm_lines_fini releases it. */
int tm_lines_stream(struct tm_lines *l, int fd, unsigned long long size, size_t first,
                    const char *name, size_t max, pflex_error_t *err);
void tm_lines_fini(struct tm_lines *l);
/* Whole lines of more input after [from, end) read in, [from, end) kept
 * (moved: *from is updated); 1 when more came, 0 at the end of the input,
 * -1 with err set.  Only when streaming. */
int tm_lines_more(struct tm_lines *l, const char **from, pflex_error_t *err);
/* Bytes of the input from p to its end. */
unsigned long long tm_lines_left(const struct tm_lines *l);
/* n bytes of the input from p + off (off + n <= tm_lines_left): a pointer
 * into the input, or tmp (n bytes) filled by reading the file; NULL on a
 * read error. */
const char *tm_lines_peek(const struct tm_lines *l, unsigned long long off, size_t n, char *tmp);

/* A finite double from s[0..len) (C locale, no trailing garbage). */
int tm_parse_double(const char *s, size_t len, double *out);
/* An integer index 0..INT32_MAX from s[0..len). */
int tm_parse_index(const char *s, size_t len, long *out);

int tm_read_smi(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                const struct pflex_tm_read_opts *o, pflex_error_t *err);
/* The same readers over lines that may be streamed (tm_lines_stream). */
int tm_read_smi_lines(pflex_tm_t *t, struct tm_lines *ln, const char *name,
                      const struct pflex_tm_read_opts *o, pflex_error_t *err);
int tm_read_prom_lines(pflex_tm_t *t, struct tm_lines *ln, const char *name,
                       const struct pflex_tm_read_opts *o, pflex_error_t *err);
int tm_read_dmon(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                 const struct pflex_tm_read_opts *o, pflex_error_t *err);
int tm_read_prom(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                 const struct pflex_tm_read_opts *o, pflex_error_t *err);
int tm_read_promjson(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                     const struct pflex_tm_read_opts *o, pflex_error_t *err);
int tm_read_pflex(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                  const struct pflex_tm_read_opts *o, pflex_error_t *err);

/* Map a Prometheus label set's job labels onto a key: hpc_job wins over
 * pod.  Shared by the text and JSON readers. */

#endif
