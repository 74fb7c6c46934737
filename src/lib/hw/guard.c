/* guard.c — the limit guard (pflex/hw/guard.h): locks, durable originals,
 * recovery, restores that retry.
 *
 * Files, per GPU, in the state folder:
 *   <key>.lock   flock()ed for as long as a process owns the GPU's limit;
 *                holds "PID OWNER" of the holder, for the refusal message.
 *                Never removed: removing a lock file lets two processes
 *                lock two different inodes of the same name.
 *   <key>.state  a JSON object written before the first change and removed
 *                after the restore: {"key", "index", "name", "original_w",
 *                "default_w", "found_w", "owner", "pid", "time"}.  Its
 *                presence at open means the last owner died with a cap set.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "pflex/hw/guard.h"
#include "lib/util/clock.h"
#include "pflex/hw/nvml.h"

#define MAX_NOTES 64
#define NOTE_LEN 320

struct ggpu {
    struct pflex_guard_gpu pub;
    int lock_fd;
    char lock_path[512];
    char state_path[512];
};

struct pflex_guard {
    pflex_gpu_t *g;
    char dir[400];
    char owner[32];
    int keep_found;
    unsigned tries;
    double backoff_s;
    unsigned n;
    struct ggpu *gpu;
    unsigned nnotes;
    char notes[MAX_NOTES][NOTE_LEN];
};

static void note(pflex_guard_t *gd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(pflex_guard_t *gd, const char *fmt, ...)
{
    if (gd->nnotes == MAX_NOTES) {  /* keep the newest: shift the oldest out */
        memmove(gd->notes[0], gd->notes[1], sizeof gd->notes[0] * (MAX_NOTES - 1));
        gd->nnotes--;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gd->notes[gd->nnotes++], NOTE_LEN, fmt, ap);
    va_end(ap);
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* mkdir -p, mode 0755. */
static int make_dir(const char *path, pflex_error_t *err)
{
    char buf[400];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return pflex_error_set(err, "state folder %s: %s", buf, strerror(errno));
            *p = c;
            if (!c)
                break;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return pflex_error_set(err, "state folder %s: not a folder", path);
    if (access(path, W_OK | X_OK) != 0)
        return pflex_error_set(err, "state folder %s: %s (changing power limits needs root, "
                               "or a state folder of one's own)", path, strerror(errno));
    return 0;
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* "GPU-8f0c..." stays; anything but [A-Za-z0-9._-] becomes '_'. */
static void make_key(char *out, size_t len, const char *raw)
{
    size_t k = 0;
    for (const char *p = raw; *p && k + 1 < len; p++)
        out[k++] = (strchr("._-", *p) || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')
                    || (*p >= 'A' && *p <= 'Z')) ? *p : '_';
    out[k] = '\0';
    if (out[0] == '.')
        out[0] = '_';
}

static struct ggpu *find(pflex_guard_t *gd, unsigned gpu)
{
    for (unsigned i = 0; gd && i < gd->n; i++)
        if (gd->gpu[i].pub.index == gpu)
            return &gd->gpu[i];
    return NULL;
}

/* Watts to the milliwatts NVML speaks, rounded as the nvml backend rounds
 * (to nearest, ties to even):
 * limits are compared there, never in floating-point watts (199.9999 W is
 * 200000 mW, within a 200-700 W range). */
static long long to_mw(double w)
{
    return llrint(w * 1000.0);
}

/* The power limit set now: NVML's management limit, else the enforced one. */
static int read_limit(pflex_guard_t *gd, struct ggpu *d, double *w, pflex_error_t *err)
{
    if (pflex_nvml_is(gd->g)) {
        struct pflex_nvml_info info;
        if (pflex_nvml_info(gd->g, d->pub.index, &info, err))
            return -1;
        if (isfinite(info.limit_w)) {
            *w = info.limit_w;
            return 0;
        }
    }
    return pflex_gpu_get_cap(gd->g, d->pub.index, w, err);
}

/* ---- locks ------------------------------------------------------- */

static int take_lock(pflex_guard_t *gd, struct ggpu *d, pflex_error_t *err)
{
    int fd = open(d->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return pflex_error_set(err, "GPU %u (%s): lock %s: %s", d->pub.index, d->pub.key,
                               d->lock_path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char who[96] = "";
        ssize_t got = pread(fd, who, sizeof who - 1, 0);
        close(fd);
        if (e != EWOULDBLOCK)
            return pflex_error_set(err, "GPU %u (%s): lock %s: %s", d->pub.index, d->pub.key,
                                   d->lock_path, strerror(e));
        long pid = 0;
        char owner[40] = "?";
        if (got > 0)
            sscanf(who, "%ld %39s", &pid, owner);
        pflex_error_set(err, "GPU %u (%s): its power limit is held by another pflex process "
                        "(pflex %s, pid %ld; lock %s); refusing to interleave with it",
                        d->pub.index, d->pub.key, owner, pid, d->lock_path);
        return PFLEX_GUARD_BUSY;
    }
    char who[96];
    int len = snprintf(who, sizeof who, "%ld %s\n", (long)getpid(), gd->owner);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, who, (size_t)len, 0) != len) {
        int e = errno;
        close(fd);
        return pflex_error_set(err, "GPU %u: lock %s: %s", d->pub.index, d->lock_path,
                               strerror(e));
    }
    d->lock_fd = fd;
    return 0;
}

/* ---- state files ------------------------------------------------- */

static int save_state(pflex_guard_t *gd, struct ggpu *d, pflex_error_t *err)
{
    json_t *o = json_pack("{s:s, s:i, s:s, s:f, s:o, s:o, s:s, s:I, s:I}", "key", d->pub.key,
                          "index", (int)d->pub.index, "name", d->pub.name, "original_w",
                          d->pub.original_w, "default_w",
                          isfinite(d->pub.default_w) ? json_real(d->pub.default_w) : json_null(),
                          "found_w",
                          isfinite(d->pub.found_w) ? json_real(d->pub.found_w) : json_null(),
                          "owner", gd->owner, "pid", (json_int_t)getpid(), "time",
                          (json_int_t)time(NULL));
    if (o && d->pub.held) {
        json_object_set_new(o, "hold_w", json_real(d->pub.hold_w));
        json_object_set_new(o, "hold_until", json_real(d->pub.hold_until));
    }
    char *text = o ? json_dumps(o, JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!text)
        return pflex_error_set(err, "out of memory");
    char tmp[560];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", d->state_path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int ok = fd >= 0;
    size_t len = strlen(text);
    ok = ok && write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    free(text);
    if (!ok || rename(tmp, d->state_path) != 0) {
        if (ok)
            e = errno;
        unlink(tmp);
        return pflex_error_set(err, "GPU %u (%s): saving the original limit in %s: %s; nothing "
                               "changed", d->pub.index, d->pub.key, d->state_path, strerror(e));
    }
    fsync_dir(gd->dir);
    return 0;
}

static void drop_state(pflex_guard_t *gd, struct ggpu *d)
{
    if (unlink(d->state_path) == 0)
        fsync_dir(gd->dir);
}

/* A state file left behind: 1 and its contents, 0 when there is none,
 * -1 when it cannot be read or makes no sense. */
static int load_state(struct ggpu *d, double *orig_w, char *owner, size_t olen, long *pid,
                      double *hold_w, double *hold_until, pflex_error_t *err)
{
    json_error_t je;
    json_t *o = json_load_file(d->state_path, 0, &je);
    if (!o) {
        if (access(d->state_path, F_OK) != 0 && errno == ENOENT)
            return 0;
        return pflex_error_set(err, "%s:%d:%d: %s", d->state_path, je.line, je.column,
                               je.text);
    }
    json_t *w = json_object_get(o, "original_w");
    const char *own = json_string_value(json_object_get(o, "owner"));
    json_t *p = json_object_get(o, "pid");
    int ok = json_is_number(w) && json_number_value(w) > 0 && isfinite(json_number_value(w));
    if (ok) {
        *orig_w = json_number_value(w);
        snprintf(owner, olen, "%s", own ? own : "?");
        *pid = json_is_integer(p) ? (long)json_integer_value(p) : 0;
        json_t *hw = json_object_get(o, "hold_w"), *hu = json_object_get(o, "hold_until");
        if (json_is_number(hw) && json_is_number(hu) && json_number_value(hw) > 0) {
            *hold_w = json_number_value(hw);
            *hold_until = json_number_value(hu);
        }
    }
    json_decref(o);
    if (!ok)
        return pflex_error_set(err, "%s: no positive \"original_w\"", d->state_path);
    return 1;
}

/* ---- restoring --------------------------------------------------- */

/* Set d back to target_w with retries; an out-of-range target goes to the
 * nearest settable value.  *done_w gets what was set. */
static int put_back(pflex_guard_t *gd, struct ggpu *d, double target_w, double *done_w,
                    pflex_error_t *err)
{
    pflex_error_t last = {{0}};
    double wait = gd->backoff_s;
    for (unsigned t = 0; t < gd->tries; t++) {
        if (t > 0) {
            nap(wait);
            wait = wait * 2 > 2.0 ? 2.0 : wait * 2;
        }
        struct pflex_gpu_limits lim;
        if (pflex_gpu_limits(gd->g, d->pub.index, &lim, &last))
            continue;
        double w = target_w;
        if (w < lim.min_w)
            w = lim.min_w;
        if (w > lim.max_w)
            w = lim.max_w;
        if (pflex_gpu_set_cap(gd->g, d->pub.index, w, &last))
            continue;
        /* Read back: a set that returned success is not yet a restore. */
        double got;
        if (read_limit(gd, d, &got, &last))
            continue;
        if (to_mw(got) != to_mw(w)) {
            pflex_error_set(&last, "the limit reads %g W after setting %g W (the set did not "
                            "take effect)", got, w);
            continue;
        }
        if (w != target_w)
            note(gd, "GPU %u (%s): the original limit %g W is outside the range the device "
                 "allows now (%g-%g W); restored to %g W, the nearest settable value",
                 d->pub.index, d->pub.key, target_w, lim.min_w, lim.max_w, w);
        if (t > 0)
            note(gd, "GPU %u (%s): restored to %g W after %u failed attempt%s (%s)",
                 d->pub.index, d->pub.key, w, t, t == 1 ? "" : "s", last.text);
        *done_w = w;
        return 0;
    }
    return pflex_error_set(err, "GPU %u (%s): restoring the power limit to %g W failed %u "
                           "times: %s", d->pub.index, d->pub.key, target_w, gd->tries, last.text);
}

int pflex_guard_restore(pflex_guard_t *gd, unsigned gpu, pflex_error_t *err)
{
    struct ggpu *d = find(gd, gpu);
    if (!d)
        return pflex_error_set(err, "GPU %u: not held by this guard", gpu);
    if (!d->pub.changed)
        return 0;
    double w;
    pflex_error_t e;
    if (put_back(gd, d, d->pub.original_w, &w, &e))
        return pflex_error_set(err, "%s; the original stays saved in %s for the next start",
                               e.text, d->state_path);
    d->pub.changed = 0;
    d->pub.held = 0;
    drop_state(gd, d);
    return 0;
}

int pflex_guard_hold(pflex_guard_t *gd, unsigned gpu, double hold_w, double hold_until,
                     pflex_error_t *err)
{
    struct ggpu *d = find(gd, gpu);
    if (!d)
        return pflex_error_set(err, "GPU %u: not held by this guard", gpu);
    if (!d->pub.changed)
        return pflex_error_set(err, "GPU %u: at its original limit; nothing to hold", gpu);
    int was = d->pub.held;
    double w = d->pub.hold_w, u = d->pub.hold_until;
    d->pub.held = 1;
    d->pub.hold_w = hold_w;
    d->pub.hold_until = hold_until;
    if (save_state(gd, d, err)) {
        d->pub.held = was;
        d->pub.hold_w = w;
        d->pub.hold_until = u;
        return -1;
    }
    return 0;
}

int pflex_guard_unhold(pflex_guard_t *gd, unsigned gpu, pflex_error_t *err)
{
    struct ggpu *d = find(gd, gpu);
    if (!d)
        return pflex_error_set(err, "GPU %u: not held by this guard", gpu);
    if (!d->pub.held)
        return 0;
    d->pub.held = 0;
    return save_state(gd, d, err);
}

int pflex_guard_restore_all(pflex_guard_t *gd, pflex_error_t *err)
{
    unsigned failed = 0;
    pflex_error_t first = {{0}};
    for (unsigned i = 0; gd && i < gd->n; i++) {
        pflex_error_t e;
        if (gd->gpu[i].pub.held)
            continue;
        if (pflex_guard_restore(gd, gd->gpu[i].pub.index, &e) && failed++ == 0)
            first = e;
    }
    if (failed == 0)
        return 0;
    if (failed == 1)
        return pflex_error_set(err, "%s", first.text);
    return pflex_error_set(err, "%s (and %u more GPUs not restored)", first.text, failed - 1);
}

/* ---- open, set, close -------------------------------------------- */

static void release(struct ggpu *d)
{
    if (d->lock_fd >= 0) {
        flock(d->lock_fd, LOCK_UN);
        close(d->lock_fd);
        d->lock_fd = -1;
    }
}

/* After the lock: recover a state file, read the limits, decide the original. */
static int survey(pflex_guard_t *gd, struct ggpu *d, pflex_error_t *err)
{
    double saved = NAN, hold_w = NAN, hold_until = NAN;
    char owner[40];
    long pid = 0;
    pflex_error_t bad;
    int r = load_state(d, &saved, owner, sizeof owner, &pid, &hold_w, &hold_until, &bad);
    if (r == 1 && hold_until > (double)time(NULL)) {
        /* A stopped owner's hold still in force (an event's plan): not
         * restored now; a restore is due at its end. */
        struct pflex_gpu_limits lim;
        if (pflex_gpu_limits(gd->g, d->pub.index, &lim, err)
            || read_limit(gd, d, &d->pub.found_w, err))
            return -1;
        d->pub.default_w = lim.default_w;
        d->pub.original_w = saved;
        d->pub.changed = 1;
        d->pub.held = 1;
        d->pub.hold_w = hold_w;
        d->pub.hold_until = hold_until;
        char when[PFLEX_UTC_TEXT_MAX];
        note(gd, "GPU %u (%s): pflex %s (pid %ld) left it held at %g W until %s (%.0f s from "
             "now; %g W found); its original %g W returns then", d->pub.index, d->pub.key,
             owner, pid, hold_w, pflex_utc_text(when, hold_until), hold_until - (double)time(NULL),
             d->pub.found_w, saved);
        return 0;
    }
    if (r < 0) {
        /* Empty or damaged (a crash mid-write, a full disk, a hand edit):
         * the original is unknown, so the board's default is restored, and
         * the file is kept aside for a look. */
        struct pflex_gpu_limits lim;
        if (pflex_gpu_limits(gd->g, d->pub.index, &lim, err))
            return -1;
        if (!isfinite(lim.default_w))
            return pflex_error_set(err, "%s; the device reports no default limit to restore "
                                   "instead", bad.text);
        double before = NAN, w;
        pflex_error_t e;
        read_limit(gd, d, &before, NULL);
        if (put_back(gd, d, lim.default_w, &w, &e))
            return pflex_error_set(err, "%s; restoring the default %g W instead: %s", bad.text,
                                   lim.default_w, e.text);
        char aside[600];
        snprintf(aside, sizeof aside, "%s.corrupt", d->state_path);
        if (rename(d->state_path, aside) == 0) {
            fsync_dir(gd->dir);
        } else {
            snprintf(aside, sizeof aside, "removed (it could not be renamed)");
            drop_state(gd, d);
        }
        d->pub.recovered = 1;
        note(gd, "GPU %u (%s): the saved original limit is unreadable (%s); restored the "
             "board's default %g W (%g W found); the file is %s", d->pub.index, d->pub.key,
             bad.text, w, before, aside);
    } else if (r == 1) {
        double before = NAN, w;
        pflex_error_t e;
        read_limit(gd, d, &before, NULL);
        if (put_back(gd, d, saved, &w, &e))
            return pflex_error_set(err, "%s; recovering %s", e.text, d->state_path);
        drop_state(gd, d);
        d->pub.recovered = 1;
        note(gd, "GPU %u (%s): pflex %s (pid %ld) ended without restoring the power limit "
             "(%g W found); restored the original %g W it had saved", d->pub.index, d->pub.key,
             owner, pid, before, w);
    }
    struct pflex_gpu_limits lim;
    if (pflex_gpu_limits(gd->g, d->pub.index, &lim, err) || read_limit(gd, d, &d->pub.found_w, err))
        return -1;
    d->pub.default_w = lim.default_w;
    d->pub.original_w = d->pub.found_w;
    if (!d->pub.recovered && isfinite(lim.default_w) && fabs(d->pub.found_w - lim.default_w) > 0.5) {
        if (gd->keep_found) {
            note(gd, "GPU %u (%s): the limit found, %g W, is not the default %g W; kept as the "
                 "limit to return to", d->pub.index, d->pub.key, d->pub.found_w, lim.default_w);
        } else {
            /* A restore is due from now on: saved like any change, so
             * that a crash before it still ends at the default. */
            d->pub.original_w = lim.default_w;
            if (save_state(gd, d, err))
                return -1;
            d->pub.changed = 1;
            d->pub.left_over = 1;
            note(gd, "GPU %u (%s): the limit found, %g W, is not the default %g W: taken as a "
                 "cap left behind, not as the original; %g W is what will be restored (keep "
                 "the found limit with --keep-found-limit)", d->pub.index, d->pub.key,
                 d->pub.found_w, lim.default_w, lim.default_w);
        }
    }
    return 0;
}

int pflex_guard_open(pflex_gpu_t *g, const unsigned *idx, unsigned n,
                     const struct pflex_guard_opts *opts, pflex_guard_t **out,
                     pflex_error_t *err)
{
    *out = NULL;
    struct pflex_guard_opts o = opts ? *opts : (struct pflex_guard_opts){0};
    pflex_guard_t *gd = calloc(1, sizeof *gd);
    if (!gd || !(gd->gpu = calloc(n ? n : 1, sizeof *gd->gpu))) {
        free(gd);
        return pflex_error_set(err, "out of memory");
    }
    gd->g = g;
    snprintf(gd->dir, sizeof gd->dir, "%s", o.state_dir && *o.state_dir ? o.state_dir
                                                                      : PFLEX_GUARD_DIR_DEFAULT);
    make_key(gd->owner, sizeof gd->owner, o.owner && *o.owner ? o.owner : "pflex");
    gd->keep_found = o.keep_found;
    gd->tries = o.tries ? o.tries : 6;
    gd->backoff_s = o.backoff_s > 0 ? o.backoff_s : 0.05;
    for (unsigned i = 0; i < n; i++)
        gd->gpu[i].lock_fd = -1;
    int rc = make_dir(gd->dir, err);
    unsigned count = 0;
    if (!rc)
        rc = pflex_gpu_count(g, &count, err);
    for (unsigned i = 0; i < n && !rc; i++) {
        struct ggpu *d = &gd->gpu[i];
        d->pub.index = idx[i];
        d->pub.found_w = d->pub.default_w = d->pub.original_w = NAN;
        if (idx[i] >= count) {
            rc = pflex_error_set(err, "GPU %u: no such GPU (the backend has %u)", idx[i], count);
            break;
        }
        for (unsigned k = 0; k < i; k++)
            if (idx[k] == idx[i])
                rc = pflex_error_set(err, "GPU %u: given twice", idx[i]);
        if (rc)
            break;
        char raw[100] = "";
        if (pflex_nvml_is(g)) {
            struct pflex_nvml_info info;
            if (pflex_nvml_info(g, idx[i], &info, err)) {
                rc = -1;
                break;
            }
            snprintf(raw, sizeof raw, "%s", info.uuid);
        }
        if (!raw[0])
            snprintf(raw, sizeof raw, "%s-%u", g->ops->name, idx[i]);
        make_key(d->pub.key, sizeof d->pub.key, raw);
        pflex_gpu_describe(g, idx[i], d->pub.name, sizeof d->pub.name, NULL);
        snprintf(d->lock_path, sizeof d->lock_path, "%s/%s.lock", gd->dir, d->pub.key);
        snprintf(d->state_path, sizeof d->state_path, "%s/%s.state", gd->dir, d->pub.key);
        rc = take_lock(gd, d, err);
    }
    gd->n = n;
    if (!rc && pflex_nvml_is(g))
        pflex_nvml_keep_limits(g);  /* the guard restores, not the backend */
    for (unsigned i = 0; i < n && !rc; i++)
        rc = survey(gd, &gd->gpu[i], err);
    if (rc) {
        for (unsigned i = 0; i < n; i++)
            release(&gd->gpu[i]);
        free(gd->gpu);
        free(gd);
        return rc == PFLEX_GUARD_BUSY ? PFLEX_GUARD_BUSY : -1;
    }
    *out = gd;
    return 0;
}

int pflex_guard_set(pflex_guard_t *gd, unsigned gpu, double cap_w, double *enforced_w,
                    pflex_error_t *err)
{
    struct ggpu *d = find(gd, gpu);
    if (!d)
        return pflex_error_set(err, "GPU %u: not held by this guard", gpu);
    if (!isfinite(cap_w) || cap_w <= 0)
        return pflex_error_set(err, "GPU %u (%s): power cap %g W is not a positive number", gpu,
                               d->pub.key, cap_w);
    struct pflex_gpu_limits lim;
    if (pflex_gpu_limits(gd->g, gpu, &lim, err))
        return -1;
    long long cap_mw = to_mw(cap_w), lo_mw = to_mw(lim.min_w), hi_mw = to_mw(lim.max_w);
    if (cap_mw < lo_mw || cap_mw > hi_mw)
        return pflex_error_set(err, "GPU %u (%s): power cap %g W is outside the device's range "
                               "%g-%g W (%lld mW, not in %lld-%lld mW); refused", gpu,
                               d->pub.key, cap_w, lim.min_w, lim.max_w, cap_mw, lo_mw, hi_mw);
    cap_w = cap_mw / 1000.0;
    if (d->pub.held) {
        /* a set takes a held GPU over: from now on this owner restores it */
        d->pub.held = 0;
        if (save_state(gd, d, err)) {
            d->pub.held = 1;
            return -1;
        }
    }
    int first = !d->pub.changed;
    if (first) {
        if (save_state(gd, d, err))
            return -1;
        d->pub.changed = 1;     /* from here on a restore is due, even if the set fails */
    }
    if (pflex_gpu_set_cap(gd->g, gpu, cap_w, err)) {
        /* A first set that failed and left the limit as found changed
         * nothing: no restore is due (it would fail the same way). */
        double now;
        if (first && read_limit(gd, d, &now, NULL) == 0 && fabs(now - d->pub.found_w) < 0.5) {
            d->pub.changed = 0;
            drop_state(gd, d);
        }
        return -1;
    }
    /* Read back: NVML can answer success and leave the limit as it was. */
    double now_w, enf;
    if (read_limit(gd, d, &now_w, err) || pflex_gpu_get_cap(gd->g, gpu, &enf, err))
        return -1;
    if (to_mw(now_w) != cap_mw)
        return pflex_error_set(err, "GPU %u (%s): the limit reads %g W after setting %g W: the "
                               "set did not take effect", gpu, d->pub.key, now_w, cap_w);
    if (enforced_w)
        *enforced_w = enf;
    return 0;
}

unsigned pflex_guard_count(const pflex_guard_t *gd)
{
    return gd ? gd->n : 0;
}

const struct pflex_guard_gpu *pflex_guard_gpu_at(const pflex_guard_t *gd, unsigned i)
{
    return gd && i < gd->n ? &gd->gpu[i].pub : NULL;
}

const struct pflex_guard_gpu *pflex_guard_gpu_find(const pflex_guard_t *gd, unsigned gpu)
{
    struct ggpu *d = find((pflex_guard_t *)gd, gpu);
    return d ? &d->pub : NULL;
}

unsigned pflex_guard_note_count(const pflex_guard_t *gd)
{
    return gd ? gd->nnotes : 0;
}

const char *pflex_guard_note(const pflex_guard_t *gd, unsigned i)
{
    return gd && i < gd->nnotes ? gd->notes[i] : NULL;
}

void pflex_guard_notes_clear(pflex_guard_t *gd)
{
    if (gd)
        gd->nnotes = 0;
}

void pflex_guard_close(pflex_guard_t *gd)
{
    if (!gd)
        return;
    pflex_guard_restore_all(gd, NULL);
    for (unsigned i = 0; i < gd->n; i++)
        release(&gd->gpu[i]);
    free(gd->gpu);
    free(gd);
}

int pflex_guard_fatal_signals(sigset_t *set, int *sigs)
{
    static const int list[] = {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1,
                               SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF};
    int n = (int)(sizeof list / sizeof *list);
    if (set)
        sigemptyset(set);
    for (int i = 0; i < n; i++) {
        if (set)
            sigaddset(set, list[i]);
        if (sigs)
            sigs[i] = list[i];
    }
    return n;
}
