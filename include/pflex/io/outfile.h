/* pflex/io/outfile.h — writing an output file atomically.
 *
 * An output is written to a temporary file in the same directory
 * (".NAME.XXXXXX"), flushed and fsync'd, and renamed over NAME only when it
 * is whole: a reader of NAME sees the old file or the new one, never a
 * truncated one, and a failure leaves the old file as it was.  An output
 * that is a symbolic link is refused (rename would replace the link, and
 * writing through it would change a file elsewhere), so is a directory,
 * and so is an output that is also one of the command's inputs (the same
 * file under any name).
 *
 * A set of outputs that belong together (the study's four files) is
 * written as several outfiles: each finished (pflex_outfile_finish) as it
 * is written, and all committed only once every one is whole; until then
 * the old set stands unchanged.
 */
#ifndef PFLEX_OUTFILE_H
#define PFLEX_OUTFILE_H

#include <stdio.h>
#include "pflex/util/error.h"

typedef struct pflex_outfile pflex_outfile_t;

/* Begin writing path.  inputs is NULL or a NULL-terminated list of the
 * paths the caller reads (any that do not exist are skipped).  Returns 0
 * and *out, or -1 with err set ("PATH: is a symbolic link; ...", "PATH: is
 * also an input (INPUT)", or a system error from creating the temporary
 * file, as pflex_error_sys). */
int pflex_outfile_begin(const char *path, const char *const *inputs, pflex_outfile_t **out,
                        pflex_error_t *err);

/* The stream to write to, and the temporary file's path (to read back
 * what was written before it is committed). */
FILE *pflex_outfile_stream(const pflex_outfile_t *o);
const char *pflex_outfile_temp_path(const pflex_outfile_t *o);

/* Flush, fsync and close the temporary file, reporting any write error
 * met since pflex_outfile_begin ("PATH: write error: <reason>").  The
 * output is not in place yet.  Returns 0 or -1. */
int pflex_outfile_finish(pflex_outfile_t *o, pflex_error_t *err);

/* Finish (if not yet) and rename the temporary file over the path, then
 * fsync the directory; frees o either way (on failure the temporary file
 * is removed).  Returns 0 or -1. */
int pflex_outfile_commit(pflex_outfile_t *o, pflex_error_t *err);

/* Drop the output: remove the temporary file, free o (NULL is fine). */
void pflex_outfile_abort(pflex_outfile_t *o);

#endif
