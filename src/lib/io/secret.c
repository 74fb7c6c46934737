/* secret.c — a secret read from a file only its owner may read
 * (pflex/io/secret.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pflex/io/secret.h"

int pflex_secret_read_file(const char *path, char **out, size_t *len, unsigned *mode,
                           pflex_error_t *err)
{
    /* Symlinks are followed (Kubernetes Secrets are links); O_NONBLOCK so
     * that a FIFO cannot hang the caller; the file opened is what is
     * checked, so that it cannot be swapped between the check and the read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return pflex_error_set(err, "%s: %s", path, strerror(errno));
    struct stat st = {0};
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        if (!S_ISREG(st.st_mode) && st.st_mode)
            return pflex_error_set(err, "%s: %s; want a regular file (a symlink to one is "
                                   "followed)", path, S_ISFIFO(st.st_mode) ? "a FIFO"
                                   : S_ISDIR(st.st_mode) ? "a directory"
                                   : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                   : "not a regular file");
        return pflex_error_set(err, "%s: %s", path, strerror(e));
    }
    *mode = (unsigned)(st.st_mode & 07777);
    if (st.st_mode & 077) {
        close(fd);
        pflex_error_set(err, "%s: readable by others (mode %03o); chmod 600 it", path,
                        (unsigned)(st.st_mode & 0777));
        return PFLEX_SECRET_OPEN;
    }
    if ((size_t)st.st_size > PFLEX_SECRET_MAX_BYTES) {
        close(fd);
        return pflex_error_set(err, "%s: larger than 4 MiB", path);
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return pflex_error_set(err, "%s: out of memory", path);
    }
    /* Up to one byte past the size fstat gave: a file that grew meanwhile
     * is read no further than the limit. */
    for (;;) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            memset(buf, 0, n);
            free(buf);
            close(fd);
            return pflex_error_set(err, "%s: %s", path, strerror(e));
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n == cap) {
            if (cap > PFLEX_SECRET_MAX_BYTES) {
                memset(buf, 0, n);
                free(buf);
                close(fd);
                return pflex_error_set(err, "%s: larger than 4 MiB", path);
            }
            size_t ncap = cap * 2 > PFLEX_SECRET_MAX_BYTES + 1 ? PFLEX_SECRET_MAX_BYTES + 1
                                                              : cap * 2;
            char *nb = malloc(ncap + 1);
            if (!nb) {
                memset(buf, 0, n);
                free(buf);
                close(fd);
                return pflex_error_set(err, "%s: out of memory", path);
            }
            memcpy(nb, buf, n);
            memset(buf, 0, n);
            free(buf);
            buf = nb;
            cap = ncap;
        }
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}
