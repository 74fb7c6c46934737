/* pflex/secret.h — a secret (a bearer token, an OAuth2 client secret) read
 * from a file that only its owner may read.
 *
 * A secret file whose mode gives its group or others any access (mode &
 * 077) is refused before it is read: the caller names the fix (chmod 600).
 */
#ifndef PFLEX_SECRET_H
#define PFLEX_SECRET_H

#include <stddef.h>
#include "pflex/error.h"

/* The most bytes a secret file may hold. */
#define PFLEX_SECRET_MAX_BYTES ((size_t)4 << 20)

/* What pflex_secret_read_file returns for a file others may read. */
#define PFLEX_SECRET_OPEN (-2)

/* Read the secret file at path whole.  Returns 0 and *out (malloc'd,
 * NUL-terminated one byte past *len; the caller wipes and frees it);
 * PFLEX_SECRET_OPEN with *mode (the file's permission bits, st_mode &
 * 07777) and err ("PATH: readable by others (mode 644); chmod 600 it");
 * -1 with err ("PATH: <why>", "PATH: larger than 4 MiB"). */
int pflex_secret_read_file(const char *path, char **out, size_t *len, unsigned *mode,
                           pflex_error_t *err);

#endif
