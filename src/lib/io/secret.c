/* secret.c — a secret read from a file only its owner may read
 * (pflex/secret.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "pflex/secret.h"
#include "pflex/sweep.h"

int pflex_secret_read_file(const char *path, char **out, size_t *len, unsigned *mode,
                           pflex_error_t *err)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return pflex_error_set(err, "%s: %s", path, strerror(errno));
    *mode = (unsigned)(st.st_mode & 07777);
    if (st.st_mode & 077) {
        pflex_error_set(err, "%s: readable by others (mode %03o); chmod 600 it", path,
                        (unsigned)(st.st_mode & 0777));
        return PFLEX_SECRET_OPEN;
    }
    char *buf;
    size_t n;
    if (pflex_read_all(path, &buf, &n, err) < 0)
        return -1;
    if (n > PFLEX_SECRET_MAX_BYTES) {
        memset(buf, 0, n);
        free(buf);
        return pflex_error_set(err, "%s: larger than 4 MiB", path);
    }
    *out = buf;
    *len = n;
    return 0;
}
