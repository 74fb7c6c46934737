/* pflex/io/csv.h — a small, fast CSV tokenizer shared by every reader.
 *
 * RFC 4180 fields (quotes, doubled quotes), LF or CRLF line ends, a UTF-8
 * byte-order mark, blank lines and lines starting with '#' skipped.  Fields
 * are trimmed of spaces and tabs.  The tokenizer points into the caller's
 * buffer; quoted fields with doubled quotes are unescaped into scratch space.
 */
#ifndef PFLEX_CSV_H
#define PFLEX_CSV_H

#include <stddef.h>
#include <stdio.h>
#include "pflex/util/error.h"

struct pflex_csv_field {
    const char *s;
    size_t len;
    size_t off;     /* internal: scratch offset of a quoted field */
    int quoted;     /* the field was quoted */
};

typedef struct pflex_csv {
    const char *p, *end;
    const char *name;       /* file name for messages */
    unsigned line;          /* line of the record last returned */
    unsigned next_line;
    size_t nfields;
    size_t cap;
    struct pflex_csv_field *fields;
    char *scratch;
    size_t scratch_cap, scratch_len;
    int truncated;          /* the last -1 was a quote still open at the end
                             * of the buffer: more input may complete it */
} pflex_csv_t;

void pflex_csv_init(pflex_csv_t *c, const char *buf, size_t len, const char *name);
/* The file at path read whole into *buf (malloc'd: free it after
 * pflex_csv_fini) and c pointed at it, path its name in messages.
 * Returns 0, or -1 with err. */
int pflex_csv_load(pflex_csv_t *c, const char *path, char **buf, pflex_error_t *err);
void pflex_csv_fini(pflex_csv_t *c);

/* Next record into c->fields.  Returns 1 with a record, 0 at end, -1 on a
 * malformed record (unterminated quote) with err set. */
int pflex_csv_next(pflex_csv_t *c, pflex_error_t *err);

/* Point c at a new buffer, keeping its field and scratch storage; the
 * buffer's first line is numbered line.  No byte-order mark is skipped: for
 * reading a stream piece by piece. */
void pflex_csv_reset(pflex_csv_t *c, const char *buf, size_t len, unsigned line);

/* The record on one line s[0..len) (its '\n' excluded) when the line needs
 * nothing but splitting: no quote, not blank, not a comment, not starting
 * with '\r'.  Returns 1 with c->fields and c->line exactly as
 * pflex_csv_next would set them, 0 when the line needs pflex_csv_next, -1
 * out of memory (err set). */
int pflex_csv_split_line(pflex_csv_t *c, const char *s, size_t len, unsigned line,
                         pflex_error_t *err);

/* Parse a field as a finite double.  Returns 0, or -1 when it is empty, not
 * a number, or not finite.  Exact (correctly rounded) like strtod. */
int pflex_parse_double(const char *s, size_t len, double *out);

/* Why s[0..len) cannot be a name (a job's, a GPU's), or NULL when it can:
 * names are UTF-8 text without control characters, so that every format
 * (CSV, JSON, a table) writes them whole.  *at is the offending byte's
 * offset. */
/* Optimal string alignment distance of two header names, case ignored (99
 * past 63 bytes): what every reader's "did you mean" goes by. */
unsigned pflex_csv_name_distance(const char *a, size_t na, const char *b, size_t nb);

const char *pflex_name_problem(const char *s, size_t len, size_t *at);

/* What the readers of job rows (the PFI CSV, a jobs file) say of a field,
 * as "file:line: column 'col': ..."; each returns -1 with err set, or 0
 * when the field is good.
 *   pflex_csv_field_error: "'<field, 40 bytes at most>' what".
 *   pflex_csv_field_name: a name pflex_name_problem refuses, what being
 *     "job name" or "GPU name".
 *   pflex_csv_field_tier: a tier pflex_tier_floor knows (flex0..flex3),
 *     its floor to *floor. */
int pflex_csv_field_error(pflex_error_t *err, const char *file, unsigned line, const char *col,
                          const struct pflex_csv_field *f, const char *what);
/* A row with another number of fields than its header: "file:line: N
 * fields, the header has M". */
int pflex_csv_row_error(pflex_error_t *err, const char *file, unsigned line, size_t nfields,
                        size_t header);
int pflex_csv_field_name(pflex_error_t *err, const char *file, unsigned line, const char *col,
                         const char *what, const struct pflex_csv_field *f);
int pflex_csv_field_tier(pflex_error_t *err, const char *file, unsigned line, const char *col,
                         const struct pflex_csv_field *f, double *floor);

/* The header checks of the row readers (PFI CSV, jobs file), as the sweep
 * reader's: cols[0..ncols) the columns the reader knows (NULL entries
 * skipped), idx[k] the field of column k or -1.  A known column given twice
 * is an error ("file:line: column 'floor' appears twice in the header
 * (fields 5 and 6)"); a field that is no column but lies within an edit or
 * two of one the header lacks ("flor") adds a line to *warn ("file:line:
 * column 'flor' is not a <kind> column and is ignored: did you mean
 * 'floor'?\n"; *warn is NULL or malloc'd, and grows).  Returns 0, or -1
 * with err set (out of memory: a system error). */
int pflex_csv_header_check(const pflex_csv_t *c, const char *file, const char *kind,
                           const char *const *cols, size_t ncols, const int *idx, char **warn,
                           pflex_error_t *err);

/* Append text to the malloc'd string *s (NULL: empty).  -1 out of memory. */
int pflex_str_append(char **s, const char *text);

/* Write s to f as one CSV field, quoted when it holds a comma, a quote or a
 * line break, or starts with '#' (else it would read back as a comment). */
void pflex_csv_write_field(FILE *f, const char *s);

/* True when the field equals the NUL-terminated string. */
int pflex_csv_field_is(const struct pflex_csv_field *f, const char *s);

#endif
