/* node.c — the agent's GPUs: a limit guard per GPU, periodic samples,
 * leases that end in a restore, jobs and the throughput they report.
 *
 * One guard per GPU rather than one for all: a GPU that fails (lost at
 * start, or mid-run) must not take the others down with it.  A second
 * owner of any GPU, though, stops the agent at start: two owners of one
 * limit is exactly what the guard exists to prevent.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "agent/agent.h"
#include "lib/util/clock.h"
#include "pflex/hw/nvml.h"

int agent_log_json, agent_log_off;

void agent_log(const char *fmt, ...)
{
    if (agent_log_off)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char stamp[80], sec[40];
    strftime(sec, sizeof sec, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp, sizeof stamp, "%s.%03d", sec, (int)(ts.tv_nsec / 1000000));
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (agent_log_json) {
        json_t *o = json_pack("{s:s+, s:s}", "time", stamp, "Z", "msg", msg);
        char *line = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
        if (line)
            fprintf(stderr, "%s\n", line);
        free(line);
        json_decref(o);
        return;
    }
    fprintf(stderr, "%sZ pflex agent: %s\n", stamp, msg);
}

double agent_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void log_notes(struct agent_gpu *d)
{
    for (unsigned i = 0; i < pflex_guard_note_count(d->guard); i++)
        agent_log("%s", pflex_guard_note(d->guard, i));
    pflex_guard_notes_clear(d->guard);
}

void agent_gpu_failed(struct agent *a, struct agent_gpu *d, const char *what)
{
    d->errors++;
    if (d->ok || strcmp(d->error, what))
        agent_log("GPU %u (%s): failing: %s", d->index, d->uuid, what);
    d->ok = 0;
    snprintf(d->error, sizeof d->error, "%s", what);
}

/* ---- token and job map ------------------------------------------- */

int agent_load_token(struct agent *a, pflex_error_t *err)
{
    if (!a->cfg.token_file) {
        a->have_token = 0;
        return 0;
    }
    /* A symlink is followed (Kubernetes mounts Secrets as links to the
     * file); O_NONBLOCK so that a FIFO cannot hang start-up, and what is
     * opened, not the name, is checked: a regular file only. */
    int fd = open(a->cfg.token_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return pflex_error_set(err, "--token-file %s: %s", a->cfg.token_file, strerror(errno));
    struct stat sb = {0};
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        const char *what = S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISDIR(sb.st_mode) ? "a directory"
                         : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device"
                         : S_ISSOCK(sb.st_mode) ? "a socket" : "not a regular file";
        close(fd);
        return pflex_error_set(err, "--token-file %s: %s; want a regular file (a symlink to "
                               "one is followed)", a->cfg.token_file, what);
    }
    if (sb.st_mode & 077) {
        close(fd);
        return pflex_error_set(err, "--token-file %s: mode %04o lets others read it; "
                               "chmod 600 it", a->cfg.token_file, (unsigned)(sb.st_mode & 07777));
    }
    char buf[sizeof a->token + 1];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got < 0)
        return pflex_error_set(err, "--token-file %s: %s", a->cfg.token_file, strerror(errno));
    if ((size_t)got >= sizeof a->token)
        return pflex_error_set(err, "--token-file %s: longer than %zu bytes", a->cfg.token_file,
                               sizeof a->token - 1);
    buf[got] = '\0';
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r' || buf[got - 1] == ' '))
        buf[--got] = '\0';
    if (got < 16)
        return pflex_error_set(err, "--token-file %s: the token is %zd characters; use at "
                               "least 16 (e.g. openssl rand -hex 32)", a->cfg.token_file, got);
    for (ssize_t i = 0; i < got; i++)
        if (buf[i] <= ' ' || buf[i] > '~')
            return pflex_error_set(err, "--token-file %s: the token has a space or a "
                                   "non-printable character", a->cfg.token_file);
    memcpy(a->token, buf, (size_t)got + 1);
    a->have_token = 1;
    return 0;
}

int agent_load_job_map(struct agent *a, pflex_error_t *err)
{
    if (!a->cfg.job_map)
        return 0;
    json_error_t je;
    json_t *doc = json_load_file(a->cfg.job_map, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return pflex_error_set(err, "%s:%d:%d: %s", a->cfg.job_map, je.line, je.column, je.text);
    json_t *jobs = json_is_object(json_object_get(doc, "jobs")) ? json_object_get(doc, "jobs")
                                                               : doc;
    int rc = 0;
    if (!json_is_object(jobs))
        rc = pflex_error_set(err, "%s: want {\"jobs\": {\"JOB\": [GPU, ...], ...}}",
                             a->cfg.job_map);
    const char *name;
    json_t *gpus;
    json_object_foreach(jobs, name, gpus) {
        if (rc)
            break;
        pflex_error_t e;
        if (agent_job_set(a, name, gpus, &e))
            rc = pflex_error_set(err, "%s: job '%.64s': %s", a->cfg.job_map, name, e.text);
    }
    json_decref(doc);
    return rc;
}

/* ---- GPUs and jobs ----------------------------------------------- */

struct agent_gpu *agent_gpu_find(struct agent *a, const json_t *ref, pflex_error_t *err)
{
    if (json_is_integer(ref)) {
        json_int_t i = json_integer_value(ref);
        if (i < 0 || (json_int_t)a->n <= i) {
            pflex_error_set(err, "GPU %lld: no such GPU (this node has %u: 0-%u)",
                            (long long)i, a->n, a->n - 1);
            return NULL;
        }
        return &a->gpu[i];
    }
    const char *s = json_string_value(ref);
    if (!s) {
        pflex_error_set(err, "a GPU is an index (0, 1, ...) or a UUID string");
        return NULL;
    }
    for (unsigned i = 0; i < a->n; i++)
        if (!strcmp(a->gpu[i].uuid, s))
            return &a->gpu[i];
    pflex_error_set(err, "GPU '%.100s': no GPU of this node has that UUID", s);
    return NULL;
}

struct agent_job *agent_job_find(struct agent *a, const char *name)
{
    for (unsigned k = 0; k < a->njobs; k++)
        if (!strcmp(a->job[k].name, name))
            return &a->job[k];
    return NULL;
}

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= AGENT_NAME_MAX)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')
              || strchr("._-:", *p)))
            return 0;
    return 1;
}

int agent_job_set(struct agent *a, const char *name, const json_t *gpus, pflex_error_t *err)
{
    if (!valid_name(name))
        return pflex_error_set(err, "job name '%.70s': 1 to %d of A-Z a-z 0-9 . _ - :", name,
                               AGENT_NAME_MAX - 1);
    if (!json_is_array(gpus) || json_array_size(gpus) == 0)
        return pflex_error_set(err, "\"gpus\": want a non-empty list of GPU indices or UUIDs");
    unsigned idx[AGENT_MAX_GPUS], n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(gpus, i, v) {
        struct agent_gpu *d = agent_gpu_find(a, v, err);
        if (!d)
            return -1;
        for (unsigned k = 0; k < n; k++)
            if (idx[k] == d->index)
                return pflex_error_set(err, "GPU %u listed twice", d->index);
        if (n == AGENT_MAX_GPUS)
            return pflex_error_set(err, "too many GPUs");
        idx[n++] = d->index;
    }
    struct agent_job *j = agent_job_find(a, name);
    if (!j) {
        if (a->njobs == AGENT_MAX_JOBS)
            return pflex_error_set(err, "the job map is full (%d jobs)", AGENT_MAX_JOBS);
        j = &a->job[a->njobs++];
        memset(j, 0, sizeof *j);
        snprintf(j->name, sizeof j->name, "%s", name);
    }
    memcpy(j->gpu, idx, n * sizeof *idx);
    j->ngpus = n;
    return 0;
}

int agent_job_progress(struct agent *a, struct agent_job *j, double tokens_total)
{
    if (!isfinite(tokens_total) || tokens_total < 0)
        return -1;
    if (j->reports && tokens_total < j->tokens_total)
        j->npt = 0;         /* the job restarted: a new series */
    double now = agent_mono_s();
    if (j->npt == AGENT_TP_POINTS) {
        memmove(j->pt_t, j->pt_t + 1, sizeof j->pt_t[0] * (AGENT_TP_POINTS - 1));
        memmove(j->pt_n, j->pt_n + 1, sizeof j->pt_n[0] * (AGENT_TP_POINTS - 1));
        j->npt--;
    }
    j->pt_t[j->npt] = now;
    j->pt_n[j->npt++] = tokens_total;
    j->tokens_total = tokens_total;
    j->reports++;
    return 0;
}

/* Tokens/s over the window: the counter's rise from the oldest report in
 * the window to the newest, over the time between them.  NaN with fewer
 * than two reports in the window. */
double agent_job_throughput(const struct agent *a, const struct agent_job *j)
{
    if (j->npt < 2)
        return NAN;
    double t1 = j->pt_t[j->npt - 1];
    unsigned k = 0;
    while (k + 2 < j->npt && t1 - j->pt_t[k] > a->cfg.tp_window_s)
        k++;
    double dt = t1 - j->pt_t[k];
    return dt > 0 ? (j->pt_n[j->npt - 1] - j->pt_n[k]) / dt : NAN;
}

/* ---- caps and leases --------------------------------------------- */

int agent_gpu_cap(struct agent *a, struct agent_gpu *d, double cap_w, double lease_s,
                  const char *job, pflex_error_t *err)
{
    if (!d->guard)
        return pflex_error_set(err, "GPU %u: not under this agent's control (%s)", d->index,
                               d->error);
    double enf;
    if (pflex_guard_set(d->guard, d->index, cap_w, &enf, err)) {
        agent_gpu_failed(a, d, err->text);
        log_notes(d);
        return -1;
    }
    d->sets++;
    d->leased = 1;
    d->lease_cap_w = cap_w;
    d->lease_enforced_w = enf;
    d->enforced_w = enf;
    d->limit_w = cap_w;
    d->lease_s = lease_s;
    d->lease_until = agent_mono_s() + lease_s;
    d->fb_w = d->fb_until = NAN;
    d->on_fallback = 0;
    snprintf(d->lease_job, sizeof d->lease_job, "%s", job ? job : "");
    agent_log("GPU %u: cap %g W for %g s%s%s (enforced %g W)", d->index, cap_w, lease_s,
              job ? ", job " : "", job ? job : "", enf);
    return 0;
}

void agent_gpu_fallback(struct agent_gpu *d, double fb_w, double fb_until)
{
    d->fb_w = fb_w;
    d->fb_until = fb_until;
}

/* The limit set now (NVML's management limit; the enforced one where the
 * backend has no other). */
static int read_limit(struct agent *a, unsigned i, double *w, pflex_error_t *err)
{
    if (pflex_nvml_is(&a->g)) {
        struct pflex_nvml_info info;
        if (pflex_nvml_info(&a->g, i, &info, err))
            return -1;
        if (isfinite(info.limit_w)) {
            *w = info.limit_w;
            return 0;
        }
    }
    return pflex_gpu_get_cap(&a->g, i, w, err);
}

static int same_mw(double a_w, double b_w)
{
    return llrint(a_w * 1000.0) == llrint(b_w * 1000.0);
}

int agent_gpu_restore(struct agent *a, struct agent_gpu *d, const char *why, pflex_error_t *err)
{
    if (!d->guard)
        return pflex_error_set(err, "GPU %u: not under this agent's control (%s); its limit is "
                               "untouched", d->index, d->error);
    const struct pflex_guard_gpu *gg = pflex_guard_gpu_find(d->guard, d->index);
    int changed = gg->changed;
    if (pflex_guard_restore(d->guard, d->index, err)) {
        agent_gpu_failed(a, d, err->text);
        log_notes(d);
        return -1;
    }
    log_notes(d);
    /* The limit read back is what is said, whatever the guard did. */
    double w;
    if (read_limit(a, d->index, &w, err)) {
        agent_gpu_failed(a, d, err->text);
        return -1;
    }
    d->limit_w = w;
    if (!same_mw(w, gg->original_w) && !changed) {
        /* Not this agent's doing (another tool?): it owns the limit, so
         * it puts the original back, through the guard like any change. */
        agent_log("GPU %u: the limit is %g W, not its original %g W, with no cap of this agent's "
                  "in force (another tool?); setting it back", d->index, w, gg->original_w);
        changed = 1;
        if (pflex_guard_set(d->guard, d->index, gg->original_w, NULL, err)
            || pflex_guard_restore(d->guard, d->index, err) || read_limit(a, d->index, &w, err)) {
            agent_gpu_failed(a, d, err->text);
            log_notes(d);
            return -1;
        }
        d->limit_w = w;
    }
    if (!same_mw(w, gg->original_w)) {
        /* The one allowed difference: an original outside the range the
         * device allows now, restored to the nearest settable value (the
         * guard's note said so). */
        struct pflex_gpu_limits lim;
        pflex_error_t e;
        double near = gg->original_w;
        if (pflex_gpu_limits(&a->g, d->index, &lim, &e) == 0)
            near = near < lim.min_w ? lim.min_w : near > lim.max_w ? lim.max_w : near;
        if (!same_mw(w, near)) {
            pflex_error_set(err, "GPU %u: the limit reads %g W after restoring it, not the "
                            "original %g W", d->index, w, gg->original_w);
            agent_gpu_failed(a, d, err->text);
            return -1;
        }
    }
    d->leased = 0;     /* a lease whose restore failed stays, to be retried */
    d->lease_job[0] = '\0';
    d->fb_w = d->fb_until = NAN;
    d->on_fallback = 0;
    if (changed)
        agent_log("GPU %u: back to its original %g W (%s), read back", d->index, w, why);
    double enf;
    pflex_error_t e;
    if (pflex_gpu_get_cap(&a->g, d->index, &enf, &e) == 0)
        d->enforced_w = enf;
    return 0;
}

/* ---- open, tick, close ------------------------------------------- */

static void sample(struct agent *a, struct agent_gpu *d)
{
    pflex_error_t err;
    struct pflex_gpu_sample s;
    double enf;
    if (pflex_gpu_sample(&a->g, d->index, &s, &err) || pflex_gpu_get_cap(&a->g, d->index, &enf,
                                                                         &err)) {
        d->power_w = NAN;
        agent_gpu_failed(a, d, err.text);
        return;
    }
    if (!d->ok && d->guard) {
        agent_log("GPU %u (%s): answering again", d->index, d->uuid);
        d->ok = 1;
        d->error[0] = '\0';
    }
    if (!d->guard)
        return;
    d->power_w = s.power_w;
    d->energy_j = s.energy_j;
    memcpy(d->tm, s.tm, sizeof d->tm);
    d->enforced_w = enf;
    double w = NAN;
    if (pflex_nvml_is(&a->g)) {
        struct pflex_nvml_info info;
        if (pflex_nvml_info(&a->g, d->index, &info, &err) == 0)
            w = info.limit_w;
    } else if (pflex_gpu_get_cap(&a->g, d->index, &w, &err) != 0) {
        w = NAN;
    }
    if (isfinite(w))
        d->limit_w = w;
    /* A leased cap that is no longer set (a driver reload resets limits;
     * another tool may have written one): said, and set again. */
    if (d->leased && isfinite(w) && fabs(w - d->lease_cap_w) > 0.5) {
        d->drifts++;
        agent_log("GPU %u: the limit is %g W, not the leased %g W (a driver reload, or another "
                  "tool?); setting it again", d->index, w, d->lease_cap_w);
        double enf2;
        if (pflex_guard_set(d->guard, d->index, d->lease_cap_w, &enf2, &err) == 0) {
            d->limit_w = d->lease_cap_w;
            d->enforced_w = d->lease_enforced_w = enf2;
        } else {
            agent_gpu_failed(a, d, err.text);
        }
    }
}

void agent_changed(struct agent *a)
{
    atomic_fetch_add(&a->gen, 1);
}

int agent_open(struct agent *a, const struct agent_config *cfg, pflex_error_t *err)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->lock, NULL);
    pthread_mutex_init(&a->cache_lock, NULL);
    atomic_init(&a->gen, 1);
    a->lock_ready = 1;
    a->cfg = *cfg;
    a->started = a->last_sample = a->last_sim = agent_mono_s();
    if (cfg->hostname)
        snprintf(a->hostname, sizeof a->hostname, "%s", cfg->hostname);
    else if (gethostname(a->hostname, sizeof a->hostname) != 0)
        snprintf(a->hostname, sizeof a->hostname, "localhost");
    a->hostname[sizeof a->hostname - 1] = '\0';
    if (agent_load_token(a, err))
        return AGENT_BAD_INPUT;
    if (!strcmp(cfg->backend, "sim")) {
        if (simnode_create(cfg->gpus, cfg->sim_job, cfg->seed, &a->sim, err)
            || simnode_set_load_dir(a->sim, cfg->sim_load_dir, err))
            return -1;
        simnode_gpu(a->sim, &a->g);
    } else if (!strcmp(cfg->backend, "nvml")) {
        if (pflex_nvml_open(cfg->nvml_lib, &a->g, err))
            return -1;
        a->g_open = 1;
    } else {
        pflex_error_set(err, "--backend %s: want sim or nvml", cfg->backend);
        return AGENT_BAD_INPUT;
    }
    if (pflex_gpu_count(&a->g, &a->n, err))
        return -1;
    if (a->n == 0)
        return pflex_error_set(err, "the %s backend sees no GPU", cfg->backend);
    if (a->n > AGENT_MAX_GPUS)
        a->n = AGENT_MAX_GPUS;
    a->gpu = calloc(a->n, sizeof *a->gpu);
    if (!a->gpu)
        return pflex_error_set(err, "out of memory");
    /* Short in-line retries (0.35 s at most): the loop retries a failed
     * lease restore later on its own. */
    struct pflex_guard_opts go = {.state_dir = cfg->state_dir, .owner = "agent",
                                  .keep_found = cfg->keep_found, .tries = 4, .backoff_s = 0.05};
    /* The state folder first: without it no GPU can be guarded, which is
     * the agent's failure, not the GPUs'. */
    pflex_guard_t *probe;
    if (pflex_guard_open(&a->g, NULL, 0, &go, &probe, err))
        return -1;
    pflex_guard_close(probe);
    for (unsigned i = 0; i < a->n; i++) {
        struct agent_gpu *d = &a->gpu[i];
        d->index = i;
        d->ok = 1;
        d->power_w = d->limit_w = d->enforced_w = d->energy_j = NAN;
        d->fb_w = d->fb_until = NAN;
        for (int k = 0; k < PFLEX_TM_COUNT; k++)
            d->tm[k] = NAN;
        snprintf(d->uuid, sizeof d->uuid, "SIM-GPU-%u", i);
        pflex_error_t e;
        if (pflex_nvml_is(&a->g)) {
            struct pflex_nvml_info info;
            if (pflex_nvml_info(&a->g, i, &info, &e)) {
                snprintf(d->uuid, sizeof d->uuid, "unknown-%u", i);
                agent_gpu_failed(a, d, e.text);
                continue;
            }
            snprintf(d->uuid, sizeof d->uuid, "%s", info.uuid);
        }
        pflex_gpu_describe(&a->g, i, d->name, sizeof d->name, NULL);
        int rc = pflex_guard_open(&a->g, &i, 1, &go, &d->guard, &e);
        if (rc == PFLEX_GUARD_BUSY) {
            pflex_error_set(err, "%s", e.text);
            return PFLEX_GUARD_BUSY;
        }
        if (rc) {
            d->guard = NULL;
            agent_gpu_failed(a, d, e.text);
            continue;
        }
        log_notes(d);
        if (pflex_gpu_limits(&a->g, i, &d->lim, &e)) {
            agent_gpu_failed(a, d, e.text);
            continue;
        }
        /* A hold a stopped agent left during an event: the event's plan
         * goes on, as a lease of this agent's that ends at the hold's end
         * (the controller's next push replaces it). */
        const struct pflex_guard_gpu *hg = pflex_guard_gpu_find(d->guard, i);
        if (hg->held && !cfg->restore_only) {
            double w = hg->hold_w, until = hg->hold_until, left = until - pflex_real_s();
            if (left > cfg->max_lease_s)
                left = cfg->max_lease_s;
            if (left > 0 && agent_gpu_cap(a, d, w, left, NULL, &e) == 0) {
                d->on_fallback = 1;     /* its end restores */
                d->fb_w = w;
                d->fb_until = until;
                agent_log("GPU %u: held at %g W by the agent stopped during an event: kept, "
                          "as a lease of %.1f s (until the event's fallback ends)", i, w, left);
            } else if (agent_gpu_restore(a, d, "a hold whose re-apply failed", &e)) {
                agent_log("GPU %u: %s", i, e.text);
            }
            if (pflex_guard_unhold(d->guard, i, &e))
                agent_log("GPU %u: %s", i, e.text);
        }
        /* A cap found at start that no state file explains is not this
         * agent's and no lease holds it: the default goes back now, before
         * serving (--keep-found-limit keeps it as the original instead). */
        if (pflex_guard_gpu_find(d->guard, i)->left_over
            && agent_gpu_restore(a, d, "a cap left behind, found at start", &e))
            agent_log("GPU %u: %s", i, e.text);
        sample(a, d);
    }
    a->read_at = pflex_real_s();
    if (a->sim) {
        for (unsigned k = 0; k < simnode_job_count(a->sim); k++) {
            unsigned first, count;
            simnode_job_gpus(a->sim, k, &first, &count);
            json_t *list = json_array();
            for (unsigned i = first; i < first + count; i++)
                json_array_append_new(list, json_integer(i));
            pflex_error_t e;
            if (agent_job_set(a, simnode_job_name(a->sim, k), list, &e) == 0) {
                struct agent_job *j = agent_job_find(a, simnode_job_name(a->sim, k));
                j->sim = 1;
                agent_job_progress(a, j, 0);
            }
            json_decref(list);
        }
    }
    if (agent_load_job_map(a, err))
        return -1;
    return 0;
}

/* A lease that ends during a grid event (its fallback's end still ahead):
 * the fallback is set, as a lease of its own until then (at most
 * --max-lease), whose end restores.  1 when set; 0 when there is none or
 * it fails (the caller restores). */
static int lease_fallback(struct agent *a, struct agent_gpu *d)
{
    double wall = pflex_real_s();
    if (d->on_fallback || !isfinite(d->fb_w) || !(d->fb_until > wall))
        return 0;
    double hold = d->fb_until - wall, fb = d->fb_w, until = d->fb_until, was = d->lease_cap_w;
    if (hold > a->cfg.max_lease_s)
        hold = a->cfg.max_lease_s;
    char job[AGENT_NAME_MAX];
    snprintf(job, sizeof job, "%s", d->lease_job);
    pflex_error_t err;
    if (agent_gpu_cap(a, d, fb, hold, job[0] ? job : NULL, &err)) {
        agent_log("GPU %u: the lease on %g W ended during an event, and its fallback of %g W "
                  "failed: %s", d->index, was, fb, err.text);
        return 0;
    }
    d->on_fallback = 1;
    d->fb_until = until;
    d->fallbacks++;
    agent_log("GPU %u: the lease on %g W ended during an event: holding its fallback %g W for "
              "%.0f s, until the event ends", d->index, was, fb, hold);
    return 1;
}

void agent_tick(struct agent *a)
{
    double now = agent_mono_s();
    pflex_error_t err;
    int changed = 0;
    if (a->sim && a->cfg.sim_fail_gpu >= 0 && now - a->started >= a->cfg.sim_fail_after_s
        && (unsigned)a->cfg.sim_fail_gpu < a->n) {
        simnode_fail(a->sim, (unsigned)a->cfg.sim_fail_gpu);
        a->cfg.sim_fail_gpu = -1;
    }
    for (unsigned i = 0; i < a->n; i++) {
        struct agent_gpu *d = &a->gpu[i];
        if (d->leased && now >= d->lease_until) {
            changed = 1;
            if (lease_fallback(a, d))
                continue;
            char why[96];
            if (d->on_fallback)
                snprintf(why, sizeof why, "the event's fallback of %g W ended", d->lease_cap_w);
            else
                snprintf(why, sizeof why, "the %g s lease on %g W expired", d->lease_s,
                         d->lease_cap_w);
            if (agent_gpu_restore(a, d, why, &err) == 0) {
                d->expiries++;
                a->lease_expired++;
                d->retry_s = 0;
            } else {
                /* Try again later, less and less often (1 s to 60 s): a
                 * lost GPU must not stall the service of the others. */
                d->retry_s = d->retry_s < 1 ? 1 : d->retry_s * 2 > 60 ? 60 : d->retry_s * 2;
                d->lease_until = now + d->retry_s;
                agent_log("GPU %u: the lease ended but the restore failed; next try in %g s",
                          d->index, d->retry_s);
            }
        }
    }
    if (now - a->last_sample >= a->cfg.interval_s) {
        changed = 1;
        a->last_sample = now;
        for (unsigned i = 0; i < a->n; i++)
            sample(a, &a->gpu[i]);
        a->read_at = pflex_real_s();
    }
    /* The sim jobs run on: their counters grow at the rate the model gives
     * for the caps in force, and are reported like any job's. */
    if (a->sim && now - a->last_sim >= a->cfg.interval_s) {
        changed = 1;
        double dt = now - a->last_sim;
        a->last_sim = now;
        for (unsigned k = 0; k < simnode_job_count(a->sim); k++) {
            struct agent_job *j = agent_job_find(a, simnode_job_name(a->sim, k));
            double tps;
            if (!j)
                continue;
            if (simnode_job_throughput(a->sim, k, &tps, &err))
                tps = 0;    /* a stalled job makes no progress */
            agent_job_progress(a, j, j->tokens_total + tps * dt);
        }
    }
    if (changed)
        agent_changed(a);
}

/* ---- the driver thread ------------------------------------------- */

static long long mono_ms(void)
{
    return (long long)(agent_mono_s() * 1e3);
}

static void *driver_main(void *arg)
{
    struct agent *a = arg;
    while (!atomic_load(&a->driver_stop)) {
        long long began = mono_ms();
        atomic_store(&a->tick_began_ms, began ? began : 1);
        pthread_mutex_lock(&a->lock);
        agent_tick(a);
        if (atomic_exchange(&a->reload, 0)) {
            pflex_error_t err;
            if (agent_load_token(a, &err) || agent_load_job_map(a, &err))
                agent_log("SIGHUP: reload failed, keeping what was loaded: %s", err.text);
            else
                agent_log("SIGHUP: token file and job map reloaded");
            agent_changed(a);
        }
        /* Rendered here rather than by the next reader: a reader that
         * finds the driver stuck is served the last body, which must be
         * as of the last change. */
        agent_render_all(a);
        pthread_mutex_unlock(&a->lock);
        atomic_store(&a->tick_began_ms, 0);
        /* leases are checked ten times a second */
        long long left = began + 100 - mono_ms();
        if (left > 0) {
            struct timespec ts = {0, left * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

int agent_driver_start(struct agent *a, pflex_error_t *err)
{
    atomic_store(&a->driver_stop, 0);
    int e = pthread_create(&a->driver, NULL, driver_main, a);
    if (e)
        return pflex_error_set(err, "cannot start the driver thread: %s", strerror(e));
    a->driver_on = 1;
    return 0;
}

void agent_driver_stop(struct agent *a)
{
    if (!a->driver_on)
        return;
    atomic_store(&a->driver_stop, 1);
    pthread_join(a->driver, NULL);
    a->driver_on = 0;
}

double agent_driver_busy_s(struct agent *a)
{
    long long began = atomic_load(&a->tick_began_ms);
    return began ? (mono_ms() - began) / 1e3 : 0;
}

int agent_lock_within(struct agent *a, double wait_s)
{
    if (pthread_mutex_trylock(&a->lock) == 0)
        return 0;
    if (agent_driver_busy_s(a) > AGENT_DRIVER_STUCK_S || wait_s <= 0)
        return -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = ts.tv_nsec + (long long)(wait_s * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return pthread_mutex_timedlock(&a->lock, &ts) == 0 ? 0 : -1;
}

/* Stopping during an event: hold d at the lower of its cap and its
 * fallback until the fallback's end (at most --max-lease), through its
 * state file.  1 when held, 0 when not an event's lease or the hold
 * failed (the caller restores). */
static int hold_event(struct agent *a, struct agent_gpu *d, double *until_out)
{
    double wall = pflex_real_s(), mono = agent_mono_s();
    if (!d->leased || !(d->fb_until > wall) || !isfinite(d->fb_w))
        return 0;
    double w = d->on_fallback || d->fb_w > d->lease_cap_w ? d->lease_cap_w : d->fb_w;
    double until = d->on_fallback ? wall + (d->lease_until - mono) : d->fb_until;
    if (until > wall + a->cfg.max_lease_s)
        until = wall + a->cfg.max_lease_s;
    pflex_error_t err;
    if ((w < d->lease_cap_w && pflex_guard_set(d->guard, d->index, w, NULL, &err))
        || pflex_guard_hold(d->guard, d->index, w, until, &err)) {
        agent_log("GPU %u: holding it through the stop failed (%s); restoring it", d->index,
                  err.text);
        return 0;
    }
    log_notes(d);
    char when[PFLEX_UTC_TEXT_MAX];
    agent_log("GPU %u: the agent stops during an event: held at %g W until %s (%.0f s), "
              "then back to its original limit", d->index, w, pflex_utc_text(when, until), until - wall);
    *until_out = until;
    return 1;
}

void agent_close(struct agent *a, struct agent_close_report *rep)
{
    agent_close_holding(a, 0, rep);
}

void agent_close_holding(struct agent *a, int hold_events, struct agent_close_report *rep)
{
    agent_driver_stop(a);
    struct agent_close_report r = {0};
    for (unsigned i = 0; a->gpu && i < a->n; i++) {
        struct agent_gpu *d = &a->gpu[i];
        pflex_error_t err;
        if (!d->guard) {
            r.untouched++;
            continue;
        }
        const struct pflex_guard_gpu *hg = pflex_guard_gpu_find(d->guard, i);
        double until = hg->hold_until;
        if (hg->held || (hold_events && hold_event(a, d, &until))) {
            r.held++;
            if (r.held == 1 || until < r.hold_first)
                r.hold_first = until;
            if (r.held == 1 || until > r.hold_last)
                r.hold_last = until;
            pflex_guard_close(d->guard);
            d->guard = NULL;
            continue;
        }
        int due = pflex_guard_gpu_find(d->guard, i)->changed;
        if (agent_gpu_restore(a, d, "the agent stops", &err) == 0) {
            r.restored++;
        } else {
            agent_log("GPU %u: %s", i, err.text);
            if (due)
                r.failed++;
            else
                r.unverified++;
        }
        pflex_guard_close(d->guard);
        d->guard = NULL;
    }
    free(a->gpu);
    a->gpu = NULL;
    if (a->g_open)
        pflex_gpu_close(&a->g);
    a->g_open = 0;
    simnode_destroy(a->sim);
    a->sim = NULL;
    for (int k = 0; k < 2; k++) {
        pflex_http_body_unref(a->cache[k]);
        a->cache[k] = NULL;
    }
    if (a->lock_ready) {
        pthread_mutex_destroy(&a->lock);
        pthread_mutex_destroy(&a->cache_lock);
        a->lock_ready = 0;
    }
    if (rep)
        *rep = r;
}
