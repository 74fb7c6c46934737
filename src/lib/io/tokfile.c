/* tokfile.c — the last line of a job's token counter file (pflex/io/tokfile.h).
 * Only the tail is read: the file grows for as long as the job runs, and
 * only its last complete line matters. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pflex/io/tokfile.h"

#define TAIL 65536

/* Read the file's last TAIL - 1 bytes into buf (NUL-terminated); *from is
 * where they start in the file.  0, or -1 with err. */
static int read_tail(const char *path, char *buf, off_t *from, pflex_error_t *err)
{
    /* O_NONBLOCK: a FIFO given by mistake must not hang the sweep; only
     * a regular file has a tail to read (a symlink to one is followed). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return pflex_error_set(err, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int saved = errno;
        close(fd);
        return pflex_error_set(err, "%s: %s", path, strerror(saved));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return pflex_error_set(err, "%s: %s; want a regular file the job appends to", path,
                               S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISDIR(sb.st_mode)
                               ? "a directory" : "not a regular file");
    }
    *from = sb.st_size > (off_t)TAIL - 1 ? sb.st_size - (off_t)(TAIL - 1) : 0;
    ssize_t got = pread(fd, buf, TAIL - 1, *from);
    int saved = errno;
    close(fd);
    if (got < 0)
        return pflex_error_set(err, "%s: %s", path, strerror(saved));
    buf[got] = '\0';
    return 0;
}

/* One data line: 1 and *m when it reads 'UNIX_TIME TOKENS_TOTAL', else 0. */
static int parse_line(const char *line, struct pflex_tokfile_mark *m)
{
    const char *p = line;
    char *q;
    double t = strtod(p, &q);
    if (q == p)
        return 0;
    p = q;
    while (*p == ' ' || *p == '\t' || *p == ',')
        p++;
    double n = strtod(p, &q);
    if (q == p || !(!*q || *q == ' ' || *q == '\t' || *q == ',' || *q == '\r')
        || !isfinite(t) || !isfinite(n))
        return 0;
    m->t_s = t;
    m->tokens = n;
    return 1;
}

int pflex_tokfile_last(const char *path, struct pflex_tokfile_mark *m, pflex_error_t *err)
{
    char *buf = malloc(TAIL);
    if (!buf)
        return pflex_error_set(err, "%s: out of memory", path);
    off_t from = 0;
    int rc = 1;
    if (read_tail(path, buf, &from, err)) {
        free(buf);
        return -1;
    }
    /* Read from the middle of the file: its first line is cut. */
    char *begin = buf;
    if (from > 0) {
        begin = strchr(buf, '\n');
        begin = begin ? begin + 1 : NULL;
    }
    /* Drop an incomplete last line (the job may be writing it now). */
    char *end = begin ? strrchr(begin, '\n') : NULL;
    if (end)
        *end = '\0';
    /* From the last line up, the first that is neither blank nor a comment. */
    while (end) {
        char *start = strrchr(begin, '\n');
        start = start ? start + 1 : begin;
        char *line = start;
        while (*line == ' ' || *line == '\t' || *line == '\r')
            line++;
        if (*line && *line != '#') {
            if (parse_line(line, m)) {
                rc = 0;
            } else {
                pflex_error_set(err, "%s: last line '%.60s' is not 'UNIX_TIME TOKENS_TOTAL' "
                                "(see pflex sweep --help)", path, line);
                rc = PFLEX_TOKFILE_BAD;
            }
            break;
        }
        if (start == begin)
            break;
        start[-1] = '\0';
    }
    free(buf);
    return rc;
}
