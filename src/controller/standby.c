/* standby.c — the election, the replicated state and the fencing token
 * (standby.h): a thread that talks to etcd every tick, and what the
 * controller's own thread hands it (the leader's changes) or takes from
 * it (the standby's copy of the leader's state).
 *
 * The thread, each tick: renew the lease (grant one when it has none),
 * then campaign (a transaction that creates the leader key when absent,
 * else reads it): created, or found under its own lease, it leads with the
 * key's create_revision as the token; found another's, it follows (and
 * stands down if it led).  A leader then puts what was published, guarded
 * by its key's create_revision; a standby reads what changed under the
 * state prefix every half period.  Any failure to reach etcd leaves the
 * role as it is until the lease could have lapsed (deadline, counted from
 * before the last renewal sent): a leader past it stands down, and
 * may_push says no from a tick before it, whatever the thread is doing. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "controller/ctl_int.h"
#include "controller/sched.h"
#include "controller/standby.h"
#include "lib/util/clock.h"
#include "pflex/net/etcd.h"

struct standby {
    char key[320], state[320], targets_key[340], jobs_prefix[340], pauses_key[340], name[128];
    double period_s, tick_s, ttl_s;
    FILE *log;
    pflex_etcd_t *etcd;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    int stop;
    int leading;
    uint64_t fence;
    double deadline;            /* monotonic: the lease may have lapsed from here on */
    double fenced_until;        /* monotonic: no push before (an agent's 409) */
    double fenced_backoff;      /* the next wait after a 409 (1 s doubling to 60 s) */
    unsigned long fenced;       /* 409s since this leadership began */
    uint64_t cluster_id;        /* etcd's, as last seen (0: not yet) */
    int64_t last_rev;           /* etcd's revision in its last answer: never lower, but
                                 * after a rebuild */
    int took_over;
    unsigned long takeovers;
    char leader[128];
    int etcd_ok;
    char etcd_error[256];
    char endpoint[256];         /* the member last answering */
    json_t *out;                /* key -> value (a string), to put while leading */
    json_t *in;                 /* key -> value, read while standing by */
    int publish_all;            /* just won: publish every job */
    /* the thread's */
    int64_t lease;
    double lease_ttl;
    int64_t read_rev;
    double next_read;
    /* the controller's thread's */
    json_t *unseen;             /* job -> bins, of jobs the controller has not seen yet */
    char *targets_text;         /* the targets as last published */
    char *pauses_text;          /* the scheduler lever's pauses as last published */
};

static void say(standby_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(standby_t *s, const char *fmt, ...)
{
    if (!s->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    char line[600];
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(s->log, "standby: %s\n", line);
    fflush(s->log);
}

/* Under mu: no longer the leader, and why. */
static void stand_down_locked(standby_t *s, const char *why)
{
    if (!s->leading)
        return;
    s->leading = 0;
    say(s, "%s standing down (fence %llu): %s", s->name, (unsigned long long)s->fence, why);
}

static void stand_down(standby_t *s, const char *why)
{
    pthread_mutex_lock(&s->mu);
    stand_down_locked(s, why);
    pthread_mutex_unlock(&s->mu);
}

/* etcd did not answer: the role holds until the lease could have lapsed. */
static void trouble(standby_t *s, const pflex_error_t *err)
{
    pthread_mutex_lock(&s->mu);
    if (s->etcd_ok || strcmp(s->etcd_error, err->text))
        say(s, "etcd: %s", err->text);
    s->etcd_ok = 0;
    snprintf(s->etcd_error, sizeof s->etcd_error, "%s", err->text);
    if (s->leading && pflex_mono_s() >= s->deadline - s->tick_s)
        stand_down_locked(s, "etcd unreachable until its lease could have lapsed");
    pthread_mutex_unlock(&s->mu);
}

static void win(standby_t *s, int64_t rev)
{
    pthread_mutex_lock(&s->mu);
    if (!s->leading) {
        s->leading = 1;
        s->fence = (uint64_t)rev;
        s->took_over = 1;
        s->publish_all = 1;
        s->takeovers++;
        s->fenced_until = 0;
        s->fenced_backoff = 1;
        s->fenced = 0;
        snprintf(s->leader, sizeof s->leader, "%s", s->name);
        say(s, "%s leads (fence %lld)", s->name, (long long)rev);
    }
    pthread_mutex_unlock(&s->mu);
}

/* A standby's read of what changed under the state prefix. */
static int read_state(standby_t *s, pflex_error_t *err)
{
    struct pflex_etcd_kvs kvs = {0};
    if (pflex_etcd_range(s->etcd, s->state, 1, s->read_rev ? s->read_rev + 1 : 0, &kvs, err) < 0) {
        pflex_etcd_kvs_fini(&kvs);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < kvs.n; i++)
        json_object_set_new(s->in, kvs.kv[i].key, json_stringn(kvs.kv[i].value, kvs.kv[i].value_len));
    pthread_mutex_unlock(&s->mu);
    if (kvs.revision > s->read_rev)
        s->read_rev = kvs.revision;
    pflex_etcd_kvs_fini(&kvs);
    return 0;
}

/* A leader's puts of what was published, guarded by its key; what could
 * not be put is kept for the next tick (unless newer came meanwhile). */
static void flush(standby_t *s, uint64_t fence)
{
    pthread_mutex_lock(&s->mu);
    json_t *out = s->out;
    s->out = json_object();
    pthread_mutex_unlock(&s->mu);
    size_t n = json_object_size(out), k = 0;
    struct pflex_etcd_op ops[100];
    const char *key;
    json_t *v;
    int rc = 1;
    pflex_error_t err;
    void *it = json_object_iter(out);
    while (rc == 1 && k < n) {
        size_t m = 0;
        for (; it && m < 100; it = json_object_iter_next(out, it), k++) {
            key = json_object_iter_key(it);
            v = json_object_iter_value(it);
            ops[m++] = (struct pflex_etcd_op){key, json_string_value(v), json_string_length(v), 0};
        }
        rc = pflex_etcd_put_if(s->etcd, s->key, (int64_t)fence, ops, m, &err);
    }
    if (rc == 0)
        stand_down(s, "its leader key is gone or another's");
    else if (rc < 0) {
        trouble(s, &err);
        pthread_mutex_lock(&s->mu);
        json_object_foreach(out, key, v)
            if (!json_object_get(s->out, key))
                json_object_set(s->out, key, v);
        pthread_mutex_unlock(&s->mu);
    }
    json_decref(out);
}

static void tick(standby_t *s)
{
    pflex_error_t err;
    double t = pflex_mono_s();
    if (!s->lease) {
        if (pflex_etcd_lease_grant(s->etcd, s->ttl_s, &s->lease, &s->lease_ttl, &err) < 0) {
            s->lease = 0;
            trouble(s, &err);
            return;
        }
    } else {
        double left = 0;
        if (pflex_etcd_lease_keepalive(s->etcd, s->lease, &left, &err) < 0) {
            trouble(s, &err);
            return;
        }
        if (!(left > 0)) {
            s->lease = 0;
            stand_down(s, "its etcd lease lapsed");
            return;
        }
    }
    pthread_mutex_lock(&s->mu);
    s->deadline = t + s->lease_ttl;
    if (!s->etcd_ok)
        say(s, "etcd: answering again (%s)", pflex_etcd_endpoint(s->etcd));
    s->etcd_ok = 1;
    snprintf(s->endpoint, sizeof s->endpoint, "%s", pflex_etcd_endpoint(s->etcd));
    int leading = s->leading;
    uint64_t fence = s->fence;
    pthread_mutex_unlock(&s->mu);
    /* standing by: the leader's state, before the first campaign too */
    if (!leading && t >= s->next_read) {
        if (read_state(s, &err) < 0) {
            trouble(s, &err);
            return;
        }
        s->next_read = t + s->period_s / 2;
    }
    int64_t rev = 0;
    struct pflex_etcd_kvs h = {0};
    int r = pflex_etcd_campaign(s->etcd, s->key, s->name, s->lease, &rev, &h, &err);
    /* A rebuilt etcd (its data lost) answers with a revision below one
     * seen before, and often another cluster id (not when it is made
     * with the same names and addresses): its revisions started over. */
    uint64_t cid = pflex_etcd_cluster_id(s->etcd);
    int64_t erev = pflex_etcd_revision(s->etcd);
    if (r >= 0 && cid && erev > 0) {
        pthread_mutex_lock(&s->mu);
        if ((s->cluster_id && cid != s->cluster_id) || erev < s->last_rev)
            say(s, "etcd answers as a new cluster (id %llu, was %llu; revision %lld, was %lld): "
                "its revisions started over, so the fences the agents hold are above any new "
                "leader's; reset each agent's (DELETE /v1/fence with its token) or every push "
                "gets 409", (unsigned long long)cid, (unsigned long long)s->cluster_id,
                (long long)erev, (long long)s->last_rev);
        s->cluster_id = cid;
        s->last_rev = erev;
        pthread_mutex_unlock(&s->mu);
    }
    if (r < 0)
        trouble(s, &err);
    else if (r == 1)
        win(s, rev);
    else if (h.n && h.kv[0].lease == s->lease) {
        if (!leading)
            win(s, h.kv[0].create_revision);    /* its own key still: it leads again */
    } else {
        if (leading)
            stand_down(s, "the leader key is another's");
        pthread_mutex_lock(&s->mu);
        if (h.n && strcmp(s->leader, h.kv[0].value)) {
            snprintf(s->leader, sizeof s->leader, "%s", h.kv[0].value);
            say(s, "%s stands by; %s leads (fence %lld)", s->name, s->leader, (long long)h.kv[0].create_revision);
        }
        if (!h.n)
            s->leader[0] = '\0';
        pthread_mutex_unlock(&s->mu);
    }
    pflex_etcd_kvs_fini(&h);
    pthread_mutex_lock(&s->mu);
    leading = s->leading;
    fence = s->fence;
    pthread_mutex_unlock(&s->mu);
    if (leading)
        flush(s, fence);
}

static void *run(void *arg)
{
    standby_t *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        pthread_mutex_unlock(&s->mu);
        double t0 = pflex_mono_s();
        tick(s);
        double until = t0 + s->tick_s;
        struct timespec ts = {(time_t)until, (long)((until - floor(until)) * 1e9)};
        pthread_mutex_lock(&s->mu);
        while (!s->stop && pflex_mono_s() < until)
            if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) != 0)
                break;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int standby_create(const struct standby_config *cfg, standby_t **out, pflex_error_t *err)
{
    *out = NULL;
    const char *prefix = cfg->prefix ? cfg->prefix : "/pflex/site";
    if (!cfg->name || !*cfg->name || strlen(cfg->name) >= 128)
        return pflex_error_set(err, "standby: a name of 1 to 127 bytes is needed");
    if (!*prefix || strlen(prefix) > 256)
        return pflex_error_set(err, "standby: the etcd prefix must be 1 to 256 bytes");
    standby_t *s = calloc(1, sizeof *s);
    if (!s)
        return pflex_error_set(err, "out of memory");
    size_t pl = strlen(prefix);
    while (pl > 1 && prefix[pl - 1] == '/')
        pl--;
    snprintf(s->key, sizeof s->key, "%.*s/leader", (int)pl, prefix);
    snprintf(s->state, sizeof s->state, "%.*s/state/", (int)pl, prefix);
    snprintf(s->targets_key, sizeof s->targets_key, "%stargets", s->state);
    snprintf(s->jobs_prefix, sizeof s->jobs_prefix, "%sjobs/", s->state);
    snprintf(s->pauses_key, sizeof s->pauses_key, "%spauses", s->state);
    snprintf(s->name, sizeof s->name, "%s", cfg->name);
    s->period_s = cfg->period_s > 0 ? cfg->period_s : 5;
    s->tick_s = fmin(0.25, s->period_s / 4);
    /* the lease: a standby takes over at most this long after the
     * leader's last renewal, plus etcd's sweep of expired leases (every
     * 0.5 s), plus a tick, plus its first period's run (say 0.5 s): within
     * two periods, at periods of 2 s and more; at least etcd's own
     * minimum of 2 s */
    s->ttl_s = fmax(2, floor(2 * s->period_s - 1.25));
    s->lease_ttl = s->ttl_s;
    s->log = cfg->log;
    s->etcd_ok = 1;
    snprintf(s->endpoint, sizeof s->endpoint, "%.*s", (int)strcspn(cfg->endpoints ? cfg->endpoints : "", ","),
             cfg->endpoints ? cfg->endpoints : "");
    s->out = json_object();
    s->in = json_object();
    s->unseen = json_object();
    pthread_mutex_init(&s->mu, NULL);
    /* ticks on the monotonic clock: a step of the wall clock never holds
     * a renewal of the leadership up */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    struct pflex_etcd_opts eo = {.endpoints = cfg->endpoints, .timeout_s = fmin(1, fmax(0.1, s->period_s / 4)),
                                 .ca_file = cfg->ca_file};
    if (!s->out || !s->in || !s->unseen || pflex_etcd_create(&eo, &s->etcd, err) < 0) {
        if (!s->out || !s->in || !s->unseen)
            pflex_error_set(err, "out of memory");
        standby_destroy(s);
        return -1;
    }
    if (pthread_create(&s->th, NULL, run, s) != 0) {
        standby_destroy(s);
        return pflex_error_set(err, "standby: cannot start its thread");
    }
    s->started = 1;
    say(s, "%s campaigns at %s for %s (lease %.0f s)", s->name, cfg->endpoints, s->key, s->ttl_s);
    *out = s;
    return 0;
}

void standby_destroy(standby_t *s)
{
    if (!s)
        return;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th, NULL);
    }
    if (s->etcd && s->lease) {
        /* the lease revoked: the leader key goes with it, and a standby
         * takes over at its next tick */
        pflex_error_t err;
        if (s->leading)
            say(s, "%s resigns (fence %llu)", s->name, (unsigned long long)s->fence);
        if (pflex_etcd_lease_revoke(s->etcd, s->lease, &err) < 0)
            say(s, "etcd: %s", err.text);
    }
    pflex_etcd_destroy(s->etcd);
    json_decref(s->out);
    json_decref(s->in);
    json_decref(s->unseen);
    free(s->targets_text);
    free(s->pauses_text);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

int standby_may_push(void *ud, uint64_t *fence)
{
    standby_t *s = ud;
    pthread_mutex_lock(&s->mu);
    double now = pflex_mono_s();
    int ok = s->leading && now < s->deadline - s->tick_s && now >= s->fenced_until;
    *fence = s->fence;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

/* An agent's 409: it has seen a higher token.  Either a newer leader
 * exists, and the next campaign (within a tick) finds the key someone
 * else's and stands down; or etcd was rebuilt and its revisions started
 * over below what the agents hold, and no leader can push until the
 * agents' fences are reset.  Resigning on the spot made leadership flap
 * (stand down, win again with the same token, push, 409: four times a
 * second); pushes wait instead, 1 s doubling to 60 s, the role to etcd. */
void standby_fenced(void *ud)
{
    standby_t *s = ud;
    pthread_mutex_lock(&s->mu);
    if (s->leading) {
        double wait = s->fenced_backoff > 0 ? s->fenced_backoff : 1;
        s->fenced_until = pflex_mono_s() + wait;
        s->fenced_backoff = wait * 2 > 60 ? 60 : wait * 2;
        if (s->fenced++ == 0 || wait >= 60)
            say(s, "%s: an agent holds a fence above ours (%llu): no push for %g s, then again "
                "(doubling to 60 s); a newer leader, or etcd rebuilt with its revisions started "
                "over: then reset each agent's fence (pflex agent docs: DELETE /v1/fence)",
                s->name, (unsigned long long)s->fence, wait);
    }
    pthread_mutex_unlock(&s->mu);
}

int standby_took_over(standby_t *s)
{
    pthread_mutex_lock(&s->mu);
    int t = s->took_over;
    s->took_over = 0;
    pthread_mutex_unlock(&s->mu);
    return t;
}

int standby_leading(standby_t *s)
{
    pthread_mutex_lock(&s->mu);
    int l = s->leading;
    pthread_mutex_unlock(&s->mu);
    return l;
}

/* ---- the state, as JSON text ---- */

static char *targets_text(const pflex_target_set_t *set)
{
    json_t *a = json_array();
    for (size_t i = 0; i < set->n; i++) {
        const struct pflex_target *t = &set->t[i];
        json_array_append_new(a, json_pack("{s:f, s:o, s:f, s:s, s:f, s:i, s:s, s:s}", "start", t->start_s, "end",
                                           isfinite(t->end_s) ? json_real(t->end_s) : json_null(), "value",
                                           t->value, "unit", t->unit == PFLEX_TARGET_WATTS ? "W" : "fraction",
                                           "ramp_s", t->ramp_s, "priority", t->priority, "source", t->source,
                                           "id", t->id));
    }
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

/* The leader's targets in place of the controller's (in their order, so
 * that latest-wins resolves as it did there). */
static void take_targets(standby_t *s, ctl_t *c, const char *text)
{
    json_t *a = json_loads(text, 0, NULL);
    if (!json_is_array(a)) {
        say(s, "the leader's targets do not parse: kept the controller's own");
        json_decref(a);
        return;
    }
    pthread_mutex_lock(&c->tmu);       /* the API's and the VTN's threads read them */
    pflex_target_set_t *set = ctl_targets(c);
    set->n = 0;
    size_t i;
    json_t *o;
    json_array_foreach(a, i, o) {
        struct pflex_target t = {.start_s = json_number_value(json_object_get(o, "start")),
                                 .end_s = json_is_number(json_object_get(o, "end"))
                                              ? json_number_value(json_object_get(o, "end")) : INFINITY,
                                 .value = json_number_value(json_object_get(o, "value")),
                                 .unit = json_is_string(json_object_get(o, "unit"))
                                                 && !strcmp(json_string_value(json_object_get(o, "unit")), "W")
                                             ? PFLEX_TARGET_WATTS : PFLEX_TARGET_FRACTION,
                                 .ramp_s = json_number_value(json_object_get(o, "ramp_s")),
                                 .priority = (int)json_integer_value(json_object_get(o, "priority"))};
        const char *src = json_string_value(json_object_get(o, "source")), *id = json_string_value(json_object_get(o, "id"));
        snprintf(t.source, sizeof t.source, "%s", src ? src : "leader");
        snprintf(t.id, sizeof t.id, "%s", id ? id : "");
        pflex_error_t err;
        if (pflex_target_set_add(set, &t, &err) < 0)
            say(s, "a target of the leader's left out: %s", err.text);
    }
    pthread_mutex_unlock(&c->tmu);
    json_decref(a);
    free(s->targets_text);
    s->targets_text = targets_text(set);
}

static json_t *bins_json(const pflex_learn_t *l)
{
    size_t n = pflex_learn_bins_get(l, NULL, 0);
    struct pflex_learn_bin *b = malloc((n ? n : 1) * sizeof *b);
    if (!b)
        return NULL;
    pflex_learn_bins_get(l, b, n);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("[I, f, f, f, f]", (json_int_t)b[i].n, b[i].cap_w, b[i].power_w,
                                           b[i].tput, b[i].m2));
    free(b);
    return a;
}

/* A job's bins from the leader into its learner: 0, or -1 when they are
 * malformed (said). */
static int take_bins(standby_t *s, struct ctl_job *cj, const json_t *a)
{
    size_t n = json_array_size(a);
    struct pflex_learn_bin *b = malloc((n ? n : 1) * sizeof *b);
    if (!b)
        return -1;
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        json_int_t cnt = json_integer_value(json_array_get(e, 0));
        b[i] = (struct pflex_learn_bin){cnt > 0 && cnt < 4000000000 ? (unsigned)cnt : 0,
                                        json_number_value(json_array_get(e, 1)),
                                        json_number_value(json_array_get(e, 2)),
                                        json_number_value(json_array_get(e, 3)),
                                        json_number_value(json_array_get(e, 4))};
    }
    pflex_error_t err;
    int rc = pflex_learn_bins_set(cj->learn, b, n, &err);
    if (rc < 0)
        say(s, "job %s: the leader's observations left out: %s", cj->name, err.text);
    free(b);
    return rc;
}

static struct ctl_job *find_job(ctl_t *c, const char *name)
{
    long j = pflex_strtab_find(&c->job_names, name, strlen(name));
    return j >= 0 ? &c->jobs[j] : NULL;
}

void standby_take_state(standby_t *s, ctl_t *c)
{
    pthread_mutex_lock(&s->mu);
    json_t *in = s->in;
    s->in = json_object();
    pthread_mutex_unlock(&s->mu);
    const char *key;
    json_t *v;
    size_t jl = strlen(s->jobs_prefix);
    json_object_foreach(in, key, v) {
        if (!strcmp(key, s->targets_key))
            take_targets(s, c, json_string_value(v));
        else if (!strcmp(key, s->pauses_key) && c->c.sched) {
            pflex_error_t err;
            if (ctl_sched_take_state(c->c.sched, json_string_value(v), &err) < 0)
                say(s, "the leader's pauses left out: %s", err.text);
        }
        else if (!strncmp(key, s->jobs_prefix, jl)) {
            json_t *bins = json_loads(json_string_value(v), 0, NULL);
            if (json_is_array(bins))
                json_object_set(s->unseen, key + jl, bins);
            json_decref(bins);
        }
    }
    json_decref(in);
    /* every job now known gets its bins */
    void *tmp;
    json_object_foreach_safe(s->unseen, tmp, key, v) {
        struct ctl_job *cj = find_job(c, key);
        if (!cj)
            continue;
        take_bins(s, cj, v);
        json_object_del(s->unseen, key);
    }
}

void standby_publish(standby_t *s, ctl_t *c)
{
    pthread_mutex_lock(&s->mu);
    int leading = s->leading, all = s->publish_all;
    s->publish_all = 0;
    pthread_mutex_unlock(&s->mu);
    if (!leading)
        return;
    json_t *add = json_object();
    pthread_mutex_lock(&c->tmu);       /* the API's and the VTN's threads change them */
    char *tt = targets_text(ctl_targets(c));
    pthread_mutex_unlock(&c->tmu);
    if (tt && (all || !s->targets_text || strcmp(tt, s->targets_text))) {
        json_object_set_new(add, s->targets_key, json_string(tt));
        free(s->targets_text);
        s->targets_text = tt;
    } else
        free(tt);
    char *pt = c->c.sched ? ctl_sched_state_text(c->c.sched) : NULL;
    if (pt && (all || !s->pauses_text || strcmp(pt, s->pauses_text))) {
        json_object_set_new(add, s->pauses_key, json_string(pt));
        free(s->pauses_text);
        s->pauses_text = pt;
    } else
        free(pt);
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        if (!all && !cj->obs_new)
            continue;
        json_t *b = bins_json(cj->learn);
        char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
        json_decref(b);
        if (!text)
            continue;
        char k[512];
        snprintf(k, sizeof k, "%s%s", s->jobs_prefix, cj->name);
        json_object_set_new(add, k, json_string(text));
        free(text);
    }
    pthread_mutex_lock(&s->mu);
    json_object_update(s->out, add);
    pthread_mutex_unlock(&s->mu);
    json_decref(add);
}

json_t *standby_json(standby_t *s)
{
    pthread_mutex_lock(&s->mu);
    json_t *o = json_pack("{s:s, s:s, s:s?, s:I, s:s, s:b, s:s?, s:I, s:I}", "role", s->leading ? "leader" : "standby",
                          "name", s->name, "leader", s->leader[0] ? s->leader : NULL, "fence",
                          (json_int_t)s->fence, "etcd", s->endpoint, "etcd_ok", s->etcd_ok,
                          "etcd_error", s->etcd_ok ? NULL : s->etcd_error, "takeovers", (json_int_t)s->takeovers,
                          "fenced", (json_int_t)(s->leading ? s->fenced : 0));
    pthread_mutex_unlock(&s->mu);
    return o;
}
