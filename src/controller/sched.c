/* sched.c — the scheduler lever (sched.h): the rule that picks the jobs to
 * pause, the state of what is paused, and Slurm's commands that act. */
#define _GNU_SOURCE     /* pipe2, qsort_r */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>
#include <sqlite3.h>
#include "controller/ctl_int.h"
#include "controller/sched.h"
#include "lib/util/clock.h"

extern char **environ;

/* ---- the rule ---------------------------------------------------------- */

static int by_cost(const void *a, const void *b, void *base)
{
    const struct ctl_pause_cand *cand = base;
    const struct ctl_pause_cand *x = &cand[*(const size_t *)a], *y = &cand[*(const size_t *)b];
    double cx = x->lost / x->freed_w, cy = y->lost / y->freed_w;
    if (cx != cy)
        return cx < cy ? -1 : 1;
    if (x->freed_w != y->freed_w)
        return x->freed_w > y->freed_w ? -1 : 1;
    return strcmp(x->job, y->job);
}

size_t ctl_pause_pick(const struct ctl_pause_cand *cand, size_t n, double deficit_w, double min_s,
                      size_t *pick, double *freed_w)
{
    *freed_w = 0;
    if (!(deficit_w > 0))
        return 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (cand[i].freed_w > 0 && cand[i].lost >= 0 && cand[i].allowed_s >= min_s)
            pick[m++] = i;
    qsort_r(pick, m, sizeof *pick, by_cost, (void *)cand);
    size_t k = 0;
    while (k < m && *freed_w < deficit_w)
        *freed_w += cand[pick[k++]].freed_w;
    return k;
}

double ctl_pause_allowed_s(double max_pause_s, double loss_budget, double paused_s, double now,
                           double event_start, double event_end)
{
    double a = max_pause_s;
    if (isfinite(event_end)) {
        double budget = loss_budget * (event_end - event_start) - paused_s;
        a = budget < a ? budget : a;
        a = event_end - now < a ? event_end - now : a;
    }
    return a > 0 ? a : 0;
}

/* ---- the state --------------------------------------------------------- */

struct ctl_pause_db {
    sqlite3 *db;
};

static int db_fail(ctl_pause_db_t *d, const char *what, pflex_error_t *err)
{
    return pflex_error_set(err, "pause state: %s: %s", what, sqlite3_errmsg(d->db));
}

int ctl_pause_db_open(const char *path, int create, ctl_pause_db_t **out, pflex_error_t *err)
{
    *out = NULL;
    ctl_pause_db_t *d = calloc(1, sizeof *d);
    if (!d)
        return pflex_error_set(err, "out of memory");
    if (sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX,
                        NULL)
        != SQLITE_OK) {
        pflex_error_set(err, "%s: %s", path, d->db ? sqlite3_errmsg(d->db) : "out of memory");
        ctl_pause_db_close(d);
        return -1;
    }
    sqlite3_busy_timeout(d->db, 5000);
    if (sqlite3_exec(d->db,
                     "PRAGMA synchronous=FULL;"
                     "CREATE TABLE IF NOT EXISTS sched_pause(job TEXT PRIMARY KEY, suspended INTEGER NOT NULL,"
                     " since REAL NOT NULL, until REAL NOT NULL, paused_s REAL NOT NULL,"
                     " event_start REAL NOT NULL, event_end REAL)",
                     NULL, NULL, NULL) != SQLITE_OK) {
        pflex_error_set(err, "%s: %s", path, sqlite3_errmsg(d->db));
        ctl_pause_db_close(d);
        return -1;
    }
    *out = d;
    return 0;
}

void ctl_pause_db_close(ctl_pause_db_t *d)
{
    if (!d)
        return;
    sqlite3_close(d->db);
    free(d);
}

int ctl_pause_db_load(ctl_pause_db_t *d, struct ctl_pause_rec **out, size_t *n, pflex_error_t *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->db, "SELECT job, suspended, since, until, paused_s, event_start, event_end"
                                  " FROM sched_pause ORDER BY job", -1, &st, NULL) != SQLITE_OK)
        return db_fail(d, "read", err);
    struct ctl_pause_rec *r = NULL;
    size_t m = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (m == cap) {
            size_t nc = cap ? 2 * cap : 8;
            struct ctl_pause_rec *nr = realloc(r, nc * sizeof *nr);
            if (!nr) {
                free(r);
                sqlite3_finalize(st);
                return pflex_error_set(err, "out of memory");
            }
            r = nr;
            cap = nc;
        }
        struct ctl_pause_rec *x = &r[m++];
        const unsigned char *job = sqlite3_column_text(st, 0);
        snprintf(x->job, sizeof x->job, "%s", job ? (const char *)job : "");
        x->suspended = sqlite3_column_int(st, 1);
        x->since = sqlite3_column_double(st, 2);
        x->until = sqlite3_column_double(st, 3);
        x->paused_s = sqlite3_column_double(st, 4);
        x->event_start = sqlite3_column_double(st, 5);
        x->event_end = sqlite3_column_type(st, 6) == SQLITE_NULL ? INFINITY : sqlite3_column_double(st, 6);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(r);
        return db_fail(d, "read", err);
    }
    *out = r;
    *n = m;
    return 0;
}

int ctl_pause_db_put(ctl_pause_db_t *d, const struct ctl_pause_rec *r, pflex_error_t *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->db, "INSERT OR REPLACE INTO sched_pause VALUES (?, ?, ?, ?, ?, ?, ?)", -1, &st,
                           NULL) != SQLITE_OK)
        return db_fail(d, "write", err);
    sqlite3_bind_text(st, 1, r->job, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, r->suspended);
    sqlite3_bind_double(st, 3, r->since);
    sqlite3_bind_double(st, 4, r->until);
    sqlite3_bind_double(st, 5, r->paused_s);
    sqlite3_bind_double(st, 6, r->event_start);
    if (isfinite(r->event_end))
        sqlite3_bind_double(st, 7, r->event_end);
    else
        sqlite3_bind_null(st, 7);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_fail(d, "write", err);
}

int ctl_pause_db_del(ctl_pause_db_t *d, const char *job, pflex_error_t *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->db, "DELETE FROM sched_pause WHERE job = ?", -1, &st, NULL) != SQLITE_OK)
        return db_fail(d, "delete", err);
    sqlite3_bind_text(st, 1, job, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_fail(d, "delete", err);
}

int ctl_pause_db_replace(ctl_pause_db_t *d, const struct ctl_pause_rec *r, size_t n, pflex_error_t *err)
{
    if (sqlite3_exec(d->db, "BEGIN IMMEDIATE; DELETE FROM sched_pause", NULL, NULL, NULL) != SQLITE_OK) {
        db_fail(d, "replace", err);
        sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (ctl_pause_db_put(d, &r[i], err) < 0) {
            sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
    if (sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        db_fail(d, "replace", err);
        sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return 0;
}

char *ctl_pause_recs_text(const struct ctl_pause_rec *r, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *o = json_pack("{s:s, s:b, s:f, s:f, s:f, s:f}", "job", r[i].job, "suspended", r[i].suspended,
                              "since", r[i].since, "until", r[i].until, "paused_s", r[i].paused_s,
                              "event_start", r[i].event_start);
        if (!o || json_object_set_new(o, "event_end", isfinite(r[i].event_end) ? json_real(r[i].event_end)
                                                                                 : json_null()) < 0
            || json_array_append_new(a, o) < 0) {
            json_decref(o);
            json_decref(a);
            return NULL;
        }
    }
    char *t = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return t;
}

int ctl_pause_recs_parse(const char *text, struct ctl_pause_rec **out, size_t *n, pflex_error_t *err)
{
    *out = NULL;
    *n = 0;
    json_error_t je;
    json_t *a = text ? json_loads(text, 0, &je) : NULL;
    if (!json_is_array(a)) {
        json_decref(a);
        return pflex_error_set(err, "pauses: not a JSON array");
    }
    size_t m = json_array_size(a);
    struct ctl_pause_rec *r = calloc(m + 1, sizeof *r);
    if (!r) {
        json_decref(a);
        return pflex_error_set(err, "out of memory");
    }
    for (size_t i = 0; i < m; i++) {
        json_t *o = json_array_get(a, i), *end = json_object_get(o, "event_end");
        const char *job = NULL;
        int susp = 0;
        if (json_unpack(o, "{s:s, s:b, s:F, s:F, s:F, s:F}", "job", &job, "suspended", &susp, "since",
                        &r[i].since, "until", &r[i].until, "paused_s", &r[i].paused_s, "event_start",
                        &r[i].event_start) < 0
            || !ctl_sched_job_id_ok(job) || (end && !json_is_null(end) && !json_is_number(end))) {
            free(r);
            json_decref(a);
            return pflex_error_set(err, "pauses: record %zu is malformed", i);
        }
        snprintf(r[i].job, sizeof r[i].job, "%s", job);
        r[i].suspended = susp;
        r[i].event_end = end && json_is_number(end) ? json_number_value(end) : INFINITY;
    }
    json_decref(a);
    *out = r;
    *n = m;
    return 0;
}

/* ---- the actions ------------------------------------------------------- */

int ctl_sched_job_id_ok(const char *job)
{
    size_t n = strspn(job, "0123456789");
    if (n == 0 || n > 20)
        return 0;
    if (!job[n])
        return 1;
    size_t m = strspn(job + n + 1, "0123456789");
    return job[n] == '_' && m > 0 && m <= 20 && !job[n + 1 + m];
}

/* Run argv with stdout and stderr into out (the first len - 1 bytes),
 * within timeout_s; the whole process group killed past it.  Returns the
 * exit status (0..255), -2 timed out, -3 not found, -1 other (errno). */
static int run_cmd(char *const argv[], double timeout_s, char *out, size_t len)
{
    int fd[2];
    out[0] = '\0';
    if (pipe2(fd, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_init(&at);
    posix_spawnattr_setpgroup(&at, 0);  /* its own group: a timeout kills all it started */
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    posix_spawnattr_setsigdefault(&at, &def);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fd[1]);
    if (e) {
        close(fd[0]);
        errno = e;
        return e == ENOENT ? -3 : -1;
    }
    double end = pflex_mono_s() + timeout_s;
    size_t got = 0;
    int open = 1, st = 0;
    for (;;) {
        /* WNOWAIT: left a zombie, its pid (and group id) stay ours until
         * the group is killed below */
        siginfo_t si = {0};
        int w = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
        if (w == 0 && si.si_pid == pid)
            break;
        double left = end - pflex_mono_s();
        if (left <= 0 || (w < 0 && errno != EINTR)) {
            kill(-pid, SIGKILL);
            waitpid(pid, NULL, 0);
            close(fd[0]);
            return -2;
        }
        struct pollfd p = {.fd = fd[0], .events = POLLIN};
        int ms = left < 0.05 ? (int)(left * 1000) + 1 : 50;
        if (!open) {
            usleep((useconds_t)ms * 1000);
            continue;
        }
        int r = poll(&p, 1, ms);
        if (r > 0) {
            char buf[512];
            ssize_t k = read(fd[0], buf, sizeof buf);
            if (k <= 0)
                open = 0;
            else if (got + 1 < len) {
                size_t take = (size_t)k < len - 1 - got ? (size_t)k : len - 1 - got;
                memcpy(out + got, buf, take);
                got += take;
                out[got] = '\0';
            }
        }
    }
    /* what it wrote before it exited (a child of its own may hold the
     * pipe open: not waited for) */
    struct pollfd p = {.fd = fd[0], .events = POLLIN};
    while (open && got + 1 < len && poll(&p, 1, 0) > 0) {
        ssize_t k = read(fd[0], out + got, len - 1 - got);
        if (k <= 0)
            break;
        got += (size_t)k;
        out[got] = '\0';
    }
    close(fd[0]);
    kill(-pid, SIGKILL);    /* anything it left behind in its group */
    waitpid(pid, &st, 0);
    while (got && (out[got - 1] == '\n' || out[got - 1] == ' '))
        out[--got] = '\0';
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int ctl_sched_cmd(const struct ctl_sched_config *cfg, const char *verb, const char *job, int *gone,
                  pflex_error_t *err)
{
    *gone = CTL_SCHED_DID_NOT_RUN;
    const char *cmd = cfg->scontrol ? cfg->scontrol : "scontrol";
    double t = cfg->timeout_s > 0 ? cfg->timeout_s : 5;
    if (!ctl_sched_job_id_ok(job))
        return pflex_error_set(err, "job '%.64s' is not a Slurm job id", job);
    char *argv[] = {(char *)cmd, (char *)verb, (char *)job, NULL};
    char out[400];
    int rc = run_cmd(argv, t, out, sizeof out);
    for (char *q = out; *q; q++)
        if (*q == '\n' || *q == '\r')
            *q = ' ';
    if (rc == 0)
        return 0;
    if (rc == -2) {
        *gone = CTL_SCHED_NO_ANSWER;
        return pflex_error_set(err, "%s %s %s: no answer within %g s (killed)", cmd, verb, job, t);
    }
    if (rc == -3)
        return pflex_error_set(err, "%s: not found (install Slurm's client, or --scontrol)", cmd);
    if (rc == -1)
        return pflex_error_set(err, "%s %s %s: %s", cmd, verb, job, strerror(errno));
    /* what Slurm answers for a job that ended, or one not in the state the
     * verb expects: there is nothing to undo */
    *gone = CTL_SCHED_REFUSED;
    if (strstr(out, "Invalid job id") || strstr(out, "Unexpected message received") || strstr(out, "not suspended") || strstr(out, "already suspended")
        || strstr(out, "already completed") || strstr(out, "is not running") || strstr(out, "Job is pending"))
        *gone = CTL_SCHED_NOTHING;
    return pflex_error_set(err, "%s %s %s: exit %d: %.300s", cmd, verb, job, rc, out[0] ? out : "(no output)");
}

/* ---- the lever in the period ------------------------------------------- */

struct failed {
    char job[64];
};

struct ctl_sched {
    struct ctl_sched_config cfg;
    ctl_pause_db_t *db;
    struct ctl_pause_rec *rec;  /* the state as last read */
    size_t nrec;
    double *credit;             /* rec[i]'s GPUs' credit this period (ctl_sched_adjust), W */
    double ev_start;            /* when the limit in force was first finite; NaN: none */
    struct failed *failed;      /* jobs a command failed on in this event: caps alone */
    size_t nfailed;
    int standby_said, db_said, none_said;
    /* this period's GPUs (ctl_sched_adjust): a paused one's least cap, to
     * push while the planner counts it at its idle draw; NaN: not paused */
    double *real_min;
    size_t cap_real;
};

int ctl_sched_create(const struct ctl_sched_config *cfg, ctl_sched_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!cfg->db_path)
        return pflex_error_set(err, "the scheduler lever needs a state database (--db)");
    ctl_sched_t *s = calloc(1, sizeof *s);
    if (!s)
        return pflex_error_set(err, "out of memory");
    s->cfg = *cfg;
    s->ev_start = NAN;
    if (ctl_pause_db_open(cfg->db_path, 1, &s->db, err) < 0 || ctl_pause_db_load(s->db, &s->rec, &s->nrec, err) < 0) {
        ctl_pause_db_close(s->db);
        free(s);
        return -1;
    }
    s->credit = calloc(s->nrec + 1, sizeof *s->credit);
    if (!s->credit) {
        ctl_pause_db_close(s->db);
        free(s->rec);
        free(s);
        return pflex_error_set(err, "out of memory");
    }
    for (size_t i = 0; i < s->nrec; i++)    /* a restart: pick up the event where it was */
        if (s->rec[i].suspended && (isnan(s->ev_start) || s->rec[i].event_start < s->ev_start))
            s->ev_start = s->rec[i].event_start;
    *out = s;
    return 0;
}

static struct ctl_pause_rec *rec_find(ctl_sched_t *s, const char *job)
{
    for (size_t i = 0; i < s->nrec; i++)
        if (!strcmp(s->rec[i].job, job))
            return &s->rec[i];
    return NULL;
}

static void reload(ctl_sched_t *s, ctl_t *c)
{
    struct ctl_pause_rec *r;
    size_t n;
    pflex_error_t err;
    if (ctl_pause_db_load(s->db, &r, &n, &err) < 0) {
        if (!s->db_said)
            ctl_log(c, "pause: %s (acting on the state last read)", err.text);
        s->db_said = 1;
        return;
    }
    s->db_said = 0;
    double *cr = calloc(n + 1, sizeof *cr);
    if (!cr) {
        free(r);
        return;
    }
    free(s->rec);
    free(s->credit);
    s->rec = r;
    s->credit = cr;
    s->nrec = n;
}

static double gpu_credit_w(const ctl_sched_t *s, const struct pflex_site_gpu *g)
{
    double idle = s->cfg.idle_w > 0 ? s->cfg.idle_w : 100;
    double d = g->min_cap_w - idle;
    return (d > 0 ? d : 0) * (g->count ? g->count : 1);
}

void ctl_sched_adjust(ctl_sched_t *s, ctl_t *c)
{
    reload(s, c);
    struct ctl_period_state *p = &c->p;
    if (pflex_grow((void **)&s->real_min, &s->cap_real, p->ngpus + 1, sizeof *s->real_min) < 0) {
        ctl_log(c, "pause: out of memory (paused jobs' GPUs counted at their least cap)");
        s->cap_real = 0;
        return;
    }
    double idle = s->cfg.idle_w > 0 ? s->cfg.idle_w : 100;
    for (size_t k = 0; k < p->ngpus; k++)
        s->real_min[k] = NAN;
    for (size_t i = 0; i < s->nrec; i++) {
        if (!s->rec[i].suspended)
            continue;
        for (size_t j = 0; j < c->njobs; j++) {
            if (strcmp(c->jobs[j].name, s->rec[i].job))
                continue;
            /* the planner holds a GPU without a job at its least cap and
             * counts it there: a paused one's least is its idle draw */
            for (size_t k = 0; k < p->ngpus; k++)
                if (p->gpus[k].job == (int)j) {
                    struct pflex_site_gpu *g = &p->gpus[k];
                    g->job = -1;
                    if (g->reachable && idle < g->min_cap_w) {
                        s->credit[i] += gpu_credit_w(s, g);
                        s->real_min[k] = g->min_cap_w;
                        g->min_cap_w = idle;
                    }
                }
        }
    }
}

void ctl_sched_caps(ctl_sched_t *s, ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    if (p->ngpus > s->cap_real)
        return;
    /* the leases' fallbacks go by the settable range */
    for (size_t k = 0; k < p->ngpus; k++)
        if (isfinite(s->real_min[k]))
            p->gpus[k].min_cap_w = s->real_min[k];
    for (size_t i = 0; i < p->ncaps; i++) {
        struct ctl_cap *cp = &p->caps[i];
        double m = s->real_min[cp->site];
        if (!(cp->cap_w < m))
            continue;
        const struct agent_gpu *ug = &c->agents[cp->node].st.gpu[p->gpu_slot[cp->site]];
        cp->cap_w = m;
        cp->cut = !(m >= ug->limit_w - c->cap_step_w / 2);
    }
}

/* The least the site can draw under caps now: every reachable GPU at its
 * least cap (the paused ones at their idle draw), the rest at the
 * cap they hold or their largest. */
static double least_w(const ctl_sched_t *s, const ctl_t *c)
{
    const struct ctl_period_state *p = &c->p;
    double w = p->other_w, idle = s->cfg.idle_w > 0 ? s->cfg.idle_w : 100;
    for (size_t k = 0; k < p->ngpus; k++) {
        const struct pflex_site_gpu *g = &p->gpus[k];
        double n = g->count ? g->count : 1;
        if (k < s->cap_real && isfinite(s->real_min[k]))
            w += n * idle;
        else
            w += n * (g->reachable ? g->min_cap_w : isfinite(g->cap_w) ? g->cap_w : g->max_cap_w);
    }
    return w;
}

static int is_failed(const ctl_sched_t *s, const char *job)
{
    for (size_t i = 0; i < s->nfailed; i++)
        if (!strcmp(s->failed[i].job, job))
            return 1;
    return 0;
}

static void add_failed(ctl_sched_t *s, const char *job)
{
    struct failed *f = realloc(s->failed, (s->nfailed + 1) * sizeof *f);
    if (!f)
        return;
    s->failed = f;
    snprintf(f[s->nfailed++].job, sizeof f->job, "%s", job);
}

/* Fenced as the caps are: only the leader acts on the scheduler. */
static int leads(ctl_sched_t *s, ctl_t *c)
{
    uint64_t fence = 0;
    if (!c->c.may_push || c->c.may_push(c->c.lead_ud, &fence)) {
        s->standby_said = 0;
        return 1;
    }
    if (!s->standby_said)
        ctl_log(c, "pause: standing by, no scheduler actions");
    s->standby_said = 1;
    return 0;
}

/* Resume job r now: the scheduler first, then the state.  A resume that
 * fails stays recorded and is tried again next period. */
static void resume_one(ctl_sched_t *s, ctl_t *c, struct ctl_pause_rec *r, double now, const char *why)
{
    pflex_error_t err;
    int gone;
    if (ctl_sched_cmd(&s->cfg, "resume", r->job, &gone, &err) < 0 && gone != CTL_SCHED_NOTHING) {
        ctl_log(c, "pause: job %s: resume failed, tried again next period: %s", r->job, err.text);
        return;
    }
    struct ctl_pause_rec done = *r;
    done.suspended = 0;
    done.paused_s += now - r->since;
    done.until = now;
    if (ctl_pause_db_put(s->db, &done, &err) < 0)
        ctl_log(c, "pause: job %s: %s", r->job, err.text);
    *r = done;
    ctl_log(c, "pause: job %s resumed (%s) after %.0f s%s", r->job, why, now - done.since,
            gone == CTL_SCHED_NOTHING ? "; the scheduler no longer held it suspended" : "");
}

/* Start the transient timer that resumes job r with no controller. */
static void arm_timer(ctl_sched_t *s, ctl_t *c, const struct ctl_pause_rec *r, double now)
{
    if (!s->cfg.systemd_run || !s->cfg.self)
        return;
    char unit[128], when[32], t[32];
    snprintf(unit, sizeof unit, "--unit=pflex-release-%s-%.0f", r->job, r->since);
    snprintf(when, sizeof when, "--on-active=%.0f", ceil(r->until - now) + 1);
    snprintf(t, sizeof t, "%g", s->cfg.timeout_s > 0 ? s->cfg.timeout_s : 5);
    char *argv[24];
    int k = 0;
    argv[k++] = (char *)s->cfg.systemd_run;
    argv[k++] = unit;
    argv[k++] = when;
    argv[k++] = "--timer-property=AccuracySec=1s";
    argv[k++] = (char *)s->cfg.self;
    argv[k++] = "controller";
    argv[k++] = "release";
    argv[k++] = "--db";
    argv[k++] = (char *)s->cfg.db_path;
    argv[k++] = "--job";
    argv[k++] = (char *)r->job;
    argv[k++] = "--expired";
    argv[k++] = "--timeout";
    argv[k++] = t;
    if (s->cfg.scontrol) {
        argv[k++] = "--scontrol";
        argv[k++] = (char *)s->cfg.scontrol;
    }
    argv[k] = NULL;
    char out[300];
    int rc = run_cmd(argv, s->cfg.timeout_s > 0 ? s->cfg.timeout_s : 5, out, sizeof out);
    if (rc)
        ctl_log(c, "pause: job %s: no release timer (%s exit %d: %.200s); restart or "
                   "'pflex controller release' resumes it", r->job, s->cfg.systemd_run, rc, out);
}

/* Pause job j until until: the state first (so that whoever comes after
 * knows), then the scheduler; a pause that fails is undone and the job
 * left to caps for the rest of the event. */
static int pause_one(ctl_sched_t *s, ctl_t *c, const char *job, double now, double until, double ev_end)
{
    struct ctl_pause_rec *old = rec_find(s, job);
    int same = old && old->event_end == ev_end;     /* paused before in this event */
    struct ctl_pause_rec r = {.suspended = 1, .since = now, .until = until,
                              .paused_s = same ? old->paused_s : 0,
                              .event_start = same ? old->event_start : s->ev_start, .event_end = ev_end};
    snprintf(r.job, sizeof r.job, "%s", job);
    pflex_error_t err;
    if (ctl_pause_db_put(s->db, &r, &err) < 0) {
        ctl_log(c, "pause: job %s not paused, its state not written: %s", job, err.text);
        return -1;
    }
    int gone;
    if (ctl_sched_cmd(&s->cfg, "suspend", job, &gone, &err) < 0) {
        ctl_log(c, "pause: job %s not paused, left to caps: %s", job, err.text);
        add_failed(s, job);
        pflex_error_t e2;
        int g2;
        /* a command that timed out may still have suspended it; one
         * that answered no, or never ran, did not */
        if (gone == CTL_SCHED_NO_ANSWER && ctl_sched_cmd(&s->cfg, "resume", job, &g2, &e2) < 0
            && g2 != CTL_SCHED_NOTHING)
            ctl_log(c, "pause: job %s: the resume after the failed suspend failed too (%s); "
                       "its record stays, resumed next period", job, e2.text);
        else if (ctl_pause_db_del(s->db, job, &e2) < 0 || (old && ctl_pause_db_put(s->db, old, &e2) < 0))
            ctl_log(c, "pause: job %s: %s", job, e2.text);
        reload(s, c);
        return -1;
    }
    arm_timer(s, c, &r, now);
    reload(s, c);
    return 0;
}

void ctl_sched_act(ctl_sched_t *s, ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    double now = p->now, period = c->c.period_s > 0 ? c->c.period_s : 5;
    int event = isfinite(p->limit_w);
    if (!event) {
        s->ev_start = NAN;
        s->nfailed = 0;
        s->none_said = 0;
    } else if (isnan(s->ev_start))
        s->ev_start = now;      /* standing by too: a takeover counts the event whole */
    if (!leads(s, c))
        return;
    pthread_mutex_lock(&c->tmu);
    double ev_end = ctl_event_end(c, now);
    pthread_mutex_unlock(&c->tmu);
    double least = least_w(s, c);
    double deficit = least - p->limit_w;        /* -INFINITY with no limit */

    /* 1. resume what is due: no target in force, or the end of its
     * contract or of the event */
    for (size_t i = 0; i < s->nrec; i++) {
        struct ctl_pause_rec *r = &s->rec[i];
        pflex_error_t err;
        if (!r->suspended) {
            /* a pause of an event now over: its budget is spent with it */
            if ((!event || !(r->event_end >= now)) && ctl_pause_db_del(s->db, r->job, &err) < 0)
                ctl_log(c, "pause: job %s: %s", r->job, err.text);
            continue;
        }
        /* a contract's end a period early rather than late; the event's
         * end once it has come, not before */
        int due = r->until < r->event_end ? now + period >= r->until : now >= r->until;
        const char *why = !event ? "no target in force" : due ? "its contract or the event ends" : NULL;
        if (why) {
            resume_one(s, c, r, now, why);
            if (!r->suspended)
                least += s->credit[i];
        }
    }
    /* early resumes: its GPUs back at their least cap (its credit) must
     * leave the limit 2 % to spare */
    for (size_t i = 0; event && i < s->nrec; i++) {
        struct ctl_pause_rec *r = &s->rec[i];
        if (r->suspended && s->credit[i] > 0 && least + s->credit[i] <= 0.98 * p->limit_w) {
            resume_one(s, c, r, now, "the limit no longer needs it");
            if (!r->suspended)
                least += s->credit[i];
        }
    }
    deficit = least - p->limit_w;

    /* 2. pause what the rule picks when even every GPU at its least cap
     * leaves the site over the limit */
    if (!(deficit > 0))
        return;
    struct ctl_pause_cand *cand = calloc(c->njobs + 1, sizeof *cand);
    size_t *pick = calloc(c->njobs + 1, sizeof *pick);
    if (!cand || !pick) {
        free(cand);
        free(pick);
        ctl_log(c, "pause: out of memory");
        return;
    }
    size_t n = 0;
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        const struct ctl_pause_rec *r = rec_find(s, cj->name);
        if (!pflex_job_policy_pausable(cj->pol) || (r && r->suspended) || is_failed(s, cj->name)
            || !ctl_sched_job_id_ok(cj->name))
            continue;
        /* resumed, it runs at least min(max_pause, 5 min) before another
         * pause: a job whose collectives time out must get to run them */
        double run_s = cj->pol->max_pause_s < 300 ? cj->pol->max_pause_s : 300;
        if (r && !r->suspended && r->event_end == ev_end && now - r->until < run_s)
            continue;
        double freed = 0;
        for (size_t k = 0; k < p->ngpus; k++)
            if (p->gpus[k].job == (int)j && p->gpus[k].reachable)
                freed += gpu_credit_w(s, &p->gpus[k]);
        double spent = r && r->event_end == ev_end ? r->paused_s : 0;
        double start = r && r->event_end == ev_end ? r->event_start : s->ev_start;
        double rate = c->c.progress ? (double)cj->n_now : (isfinite(cj->t0_plan) ? cj->t0_plan : 1);
        cand[n++] = (struct ctl_pause_cand){
            .job = cj->name, .freed_w = freed, .lost = cj->pol->weight * rate,
            .allowed_s = ctl_pause_allowed_s(cj->pol->max_pause_s, cj->pol->loss_budget, spent, now,
                                             start, ev_end)};
    }
    double freed = 0;
    size_t m = ctl_pause_pick(cand, n, deficit, 2 * period, pick, &freed);
    if (m == 0 && !s->none_said) {    /* once an event */
        s->none_said = 1;
        ctl_log(c, "pause: every GPU at its least cap leaves the site %.0f W over %.0f W, and no job's "
                   "policy and contract let it pause now", deficit, p->limit_w);
    }
    for (size_t i = 0; i < m; i++) {
        const struct ctl_pause_cand *x = &cand[pick[i]];
        if (pause_one(s, c, x->job, now, now + x->allowed_s, ev_end) == 0)
            ctl_log(c, "pause: job %s suspended until %.0f (%.0f s): frees %.0f W of the %.0f W the "
                       "least caps leave over %.0f W", x->job, now + x->allowed_s, x->allowed_s,
                    x->freed_w, deficit, p->limit_w);
    }
    if (m && freed < deficit)
        ctl_log(c, "pause: the jobs its rule could pause free %.0f W, %.0f W short", freed, deficit - freed);
    free(cand);
    free(pick);
}

char *ctl_sched_state_text(const ctl_sched_t *s)
{
    return ctl_pause_recs_text(s->rec, s->nrec);
}

int ctl_sched_take_state(ctl_sched_t *s, const char *text, pflex_error_t *err)
{
    struct ctl_pause_rec *r;
    size_t n;
    if (ctl_pause_recs_parse(text, &r, &n, err) < 0)
        return -1;
    int rc = ctl_pause_db_replace(s->db, r, n, err);
    if (rc == 0) {
        double *cr = calloc(n + 1, sizeof *cr);
        if (cr) {
            free(s->rec);
            free(s->credit);
            s->rec = r;
            s->credit = cr;
            s->nrec = n;
            return 0;
        }
    }
    free(r);
    return rc;
}

void ctl_sched_destroy(ctl_sched_t *s, ctl_t *c)
{
    if (!s)
        return;
    if (c && leads(s, c)) {     /* a standby's copy is the leader's to resume */
        double now = pflex_real_s();
        for (size_t i = 0; i < s->nrec; i++)
            if (s->rec[i].suspended)
                resume_one(s, c, &s->rec[i], now, "the controller stops");
    }
    ctl_pause_db_close(s->db);
    free(s->rec);
    free(s->credit);
    free(s->real_min);
    free(s->failed);
    free(s);
}
