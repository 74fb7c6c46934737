/* outfile.c — atomic output files (pflex/outfile.h): a temporary file in
 * the output's directory, fsync, rename. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pflex/outfile.h"

struct pflex_outfile {
    char *path, *tmp, *dir;
    FILE *f;
    int finished;
};

static void outfile_free(pflex_outfile_t *o)
{
    if (!o)
        return;
    if (o->f)
        fclose(o->f);
    free(o->path);
    free(o->tmp);
    free(o->dir);
    free(o);
}

int pflex_outfile_begin(const char *path, const char *const *inputs, pflex_outfile_t **out,
                        pflex_error_t *err)
{
    *out = NULL;
    struct stat st;
    int exists = lstat(path, &st) == 0;
    if (exists && S_ISLNK(st.st_mode))
        return pflex_error_set(err, "%s: is a symbolic link; refusing to write through it "
                               "(give the file it points to, or remove the link)", path);
    if (exists && S_ISDIR(st.st_mode))
        return pflex_error_set(err, "%s: is a directory (give a file to write)", path);
    if (exists && !S_ISREG(st.st_mode))
        /* a device, a FIFO or a socket: renaming a new file over it would
         * replace the node itself (as root, /dev/full or /dev/null) */
        return pflex_error_set(err, "%s: is not a regular file (a device, FIFO or socket); "
                               "give a file to write, or '-' for standard output", path);
    for (size_t i = 0; inputs && inputs[i]; i++) {
        struct stat in;
        if (strcmp(inputs[i], "-") != 0 && exists && stat(inputs[i], &in) == 0
            && in.st_dev == st.st_dev && in.st_ino == st.st_ino)
            return pflex_error_set(err, "%s: is also an input (%s); writing it would destroy "
                                   "what is read", path, inputs[i]);
    }
    pflex_outfile_t *o = calloc(1, sizeof *o);
    if (!o)
        return pflex_error_sys(err, "%s: out of memory", path);
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    const char *base = slash ? slash + 1 : path;
    o->path = strdup(path);
    o->dir = slash ? strndup(path, dlen ? dlen : 1) : strdup(".");
    o->tmp = malloc(strlen(path) + 16);
    if (!o->path || !o->dir || !o->tmp) {
        outfile_free(o);
        return pflex_error_sys(err, "%s: out of memory", path);
    }
    if (slash)
        memcpy(o->tmp, path, dlen + 1);
    sprintf(o->tmp + (slash ? dlen + 1 : 0), ".%s.XXXXXX", base);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        outfile_free(o);
        return pflex_error_sys(err, "%s: write error: cannot create a file beside it: %s", path, strerror(e));
    }
    /* The mode a plain create would give (mkstemp's is 0600), or the mode
     * of the file it replaces. */
    mode_t mode;
    if (exists) {
        mode = st.st_mode & 07777;
    } else {
        mode_t um = umask(022);
        umask(um);
        mode = 0666 & ~um;
    }
    if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        if (!o->f)
            close(fd);
        unlink(o->tmp);
        outfile_free(o);
        return pflex_error_sys(err, "%s: write error: %s", path, strerror(e));
    }
    *out = o;
    return 0;
}

FILE *pflex_outfile_stream(const pflex_outfile_t *o)
{
    return o->f;
}

const char *pflex_outfile_temp_path(const pflex_outfile_t *o)
{
    return o->tmp;
}

int pflex_outfile_finish(pflex_outfile_t *o, pflex_error_t *err)
{
    if (o->finished)
        return 0;
    int bad = ferror(o->f), e = bad ? EIO : 0;
    if (fflush(o->f) != 0 && !bad)
        bad = 1, e = errno;
    if (!bad && fsync(fileno(o->f)) != 0 && errno != EINVAL && errno != EROFS)
        bad = 1, e = errno;
    if (fclose(o->f) != 0 && !bad)
        bad = 1, e = errno;
    o->f = NULL;
    if (bad)
        return pflex_error_sys(err, "%s: write error: %s", o->path, strerror(e));
    o->finished = 1;
    return 0;
}

int pflex_outfile_commit(pflex_outfile_t *o, pflex_error_t *err)
{
    if (pflex_outfile_finish(o, err) < 0) {
        pflex_outfile_abort(o);
        return -1;
    }
    if (rename(o->tmp, o->path) != 0) {
        pflex_error_sys(err, "%s: write error: %s", o->path, strerror(errno));
        pflex_outfile_abort(o);
        return -1;
    }
    int dfd = open(o->dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);         /* the rename itself on disk; best effort */
        close(dfd);
    }
    outfile_free(o);
    return 0;
}

void pflex_outfile_abort(pflex_outfile_t *o)
{
    if (!o)
        return;
    if (o->f) {
        fclose(o->f);
        o->f = NULL;
    }
    if (o->tmp)
        unlink(o->tmp);
    outfile_free(o);
}
