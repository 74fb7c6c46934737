/* record.c — the period written down (period.h's ctl_record): the targets
 * not yet recorded, the period's figures, each job's observation, every
 * cap with its outcome and the reading it rests on, the curves now and
 * then, in one transaction of the audit database (pflex/io/audit.h).
 * Started, the record is copied and queued for the writer thread (ctl_int.h,
 * struct ctl_writer), so that the period never waits on the disk. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/ctl_int.h"
#include "lib/util/clock.h"

/* Record targets not yet in the audit: those added to the set itself
 * (ctl_targets) before it was started.  Every other change (ctl_target_put,
 * ctl_target_withdraw, the VTN's ctl_vtn_apply) is in the audit before it
 * takes effect. */
static void audit_targets(ctl_t *c, pflex_audit_t *db, double now)
{
    pflex_error_t err;
    if (c->started)
        return;
    uint64_t top = c->recorded_seq;
    for (size_t i = 0; i < c->targets.n; i++) {
        const struct pflex_target *t = &c->targets.t[i];
        if (t->seq < c->recorded_seq)
            continue;
        struct pflex_audit_target at = {.t = now, .source = t->source, .name = t->id,
                                        .start_s = t->start_s, .end_s = t->end_s, .value = t->value,
                                        .fraction = t->unit == PFLEX_TARGET_FRACTION,
                                        .ramp_s = t->ramp_s, .priority = t->priority, .seq = t->seq};
        if (pflex_audit_target(db, &at, &err) < 0)
            ctl_log(c, "audit: %s", err.text);
        if (t->seq + 1 > top)
            top = t->seq + 1;
    }
    c->recorded_seq = top;
}

/* One row of a period's record, copied off the controller's state. */
struct rec_row {
    char kind;                  /* 'o' observation, 'c' cap and reading, 'v' curve,
                                 * 'n' note (its kind in job) */
    int has_job, pushed;
    char gpu[96], job[64];
    double a, b, c, d, e;       /* 'o': cap, power, rate; 'c': cap, enforced, power,
                                 * limit; 'v': p0, t0 */
    size_t n;                   /* 'v': its points, x, loss, sd, cap (4 n in pts) */
    double *pts;
    char *text;                 /* 'n': its text */
};

struct ctl_rec {
    struct ctl_rec *next;
    double t;
    int has_period;             /* 0: notes only */
    struct pflex_audit_period ap;
    int floor_note;
    struct rec_row *rows;
    size_t n, cap;
};

static void rec_free(struct ctl_rec *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->rows[i].pts);
        free(r->rows[i].text);
    }
    free(r->rows);
    free(r);
}

static struct rec_row *rec_add(struct ctl_rec *r, char kind, const char *job)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        struct rec_row *rows = realloc(r->rows, cap * sizeof *rows);
        if (!rows)
            return NULL;
        r->rows = rows;
        r->cap = cap;
    }
    struct rec_row *w = &r->rows[r->n++];
    memset(w, 0, sizeof *w);
    w->kind = kind;
    w->has_job = job != NULL;
    snprintf(w->job, sizeof w->job, "%s", job ? job : "");
    return w;
}

/* This period's record, copied: NULL when out of memory. */
static struct ctl_rec *rec_build(ctl_t *c)
{
    const struct ctl_period_state *p = &c->p;
    struct ctl_rec *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->t = p->now;
    r->has_period = 1;
    r->ap = (struct pflex_audit_period){.t = p->now, .limit_w = p->limit_w, .worst_w = c->plan.worst_w,
                                        .least_w = c->plan.least_w,
                                        .site_power_w = ctl_site_w(c),
                                        .throughput = c->plan.throughput, .feasible = c->plan.feasible,
                                        .floor_breaches = (long)c->plan.floor_breaches,
                                        .held = (long)c->plan.held};
    r->floor_note = c->plan.floor_breaches != 0;
    for (size_t j = 0; j < c->njobs; j++) {
        const struct ctl_job *cj = &c->jobs[j];
        struct rec_row *w;
        if (!cj->obs_new)
            continue;
        if (!(w = rec_add(r, 'o', cj->name)))
            goto oom;
        w->a = cj->obs_cap, w->b = cj->obs_power, w->c = cj->obs_tput;
    }
    for (size_t q = 0; q < p->ncaps; q++) {
        const struct ctl_cap *cp = &p->caps[q];
        size_t k = cp->site;
        const struct agent_gpu *ug = &c->agents[cp->node].st.gpu[p->gpu_slot[k]];
        struct rec_row *w = rec_add(r, 'c', p->gpus[k].job >= 0 ? c->jobs[p->gpus[k].job].name : NULL);
        if (!w)
            goto oom;
        char nb[32];
        snprintf(w->gpu, sizeof w->gpu, "%s/%d", ctl_node_name(c, cp->node, nb, sizeof nb), ug->index);
        w->pushed = cp->pushed;
        w->a = cp->cap_w, w->b = cp->enforced_w, w->c = ug->power_w, w->d = ug->limit_w;
    }
    if (c->periods % 10 == 1)
        for (size_t j = 0; j < c->njobs; j++) {
            const struct pflex_learn_curve *cv = &c->jobs[j].curve;
            struct rec_row *w = rec_add(r, 'v', c->jobs[j].name);
            if (!w || (cv->n && !(w->pts = malloc(4 * cv->n * sizeof *w->pts))))
                goto oom;
            w->n = cv->n;
            w->a = cv->p0_w, w->b = cv->t0;
            for (size_t i = 0; i < cv->n; i++) {
                w->pts[i] = cv->x[i];
                w->pts[cv->n + i] = cv->loss[i];
                w->pts[2 * cv->n + i] = cv->sd ? cv->sd[i] : NAN;
                w->pts[3 * cv->n + i] = cv->cap_w ? cv->cap_w[i] : NAN;
            }
        }
    return r;
oom:
    rec_free(r);
    return NULL;
}

/* The record in one transaction of db (and, before the controller is
 * started, the targets not yet recorded: c; NULL after). */
static int rec_write(pflex_audit_t *db, const struct ctl_rec *r, ctl_t *c, pflex_error_t *err)
{
    if (pflex_audit_begin(db, err) < 0)
        return -1;
    long long id = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct rec_row *w = &r->rows[i];
        if (w->kind == 'o')
            pflex_audit_observation(db, r->t, w->job, w->a, w->b, w->c, NULL);
    }
    if (c)
        audit_targets(c, db, r->t);
    if (r->has_period && pflex_audit_period(db, &r->ap, &id, err) < 0) {
        pflex_audit_rollback(db);
        return -1;
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct rec_row *w = &r->rows[i];
        const char *job = w->has_job ? w->job : NULL;
        if (w->kind == 'c') {
            pflex_audit_cap(db, id, w->gpu, job, w->a, w->pushed, w->b, NULL);
            pflex_audit_reading(db, r->t, w->gpu, job, w->c, w->d, NAN, NULL);
        } else if (w->kind == 'v')
            pflex_audit_curve(db, r->t, job, w->n, w->pts, w->pts + w->n, w->pts + 2 * w->n,
                              w->pts + 3 * w->n, w->a, w->b, NULL);
        else if (w->kind == 'n')
            pflex_audit_note(db, r->t, job, w->text, NULL);
    }
    if (r->floor_note)
        pflex_audit_note(db, r->t, "floor", "jobs cut past their floor to keep the target", NULL);
    if (pflex_audit_commit(db, err) < 0) {
        pflex_audit_rollback(db);
        return -1;
    }
    return 0;
}

static void *writer_main(void *arg)
{
    struct ctl_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        struct ctl_rec *r = w->head;
        if (!r)
            break;
        w->head = r->next;
        if (!w->head)
            w->tail = NULL;
        w->busy_since = pflex_mono_s();
        pthread_mutex_unlock(&w->mu);
        pflex_error_t e;
        int rc = rec_write(w->db, r, NULL, &e);
        rec_free(r);
        pthread_mutex_lock(&w->mu);
        w->n--;
        w->busy_since = NAN;
        if (rc < 0) {
            w->failed++;
            w->failing = 1;
            w->err = e;
        } else {
            w->written++;
            w->failing = 0;
        }
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int ctl_writer_start(ctl_t *c, pflex_error_t *err)
{
    if (!c->audit || c->writer)
        return 0;
    struct ctl_writer *w = calloc(1, sizeof *w);
    if (!w)
        return pflex_error_set(err, "out of memory");
    w->busy_since = NAN;
    /* a connection of its own: the period's reads (a new job's past) never
     * wait on a write; a database in memory is one connection's */
    const char *path = c->c.db_path;
    if (path && path[0] && strcmp(path, ":memory:")) {
        if (pflex_audit_open(path, &w->db, err) < 0) {
            free(w);
            return -1;
        }
    } else
        w->db = c->audit;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&w->th, NULL, writer_main, w) != 0) {
        if (w->db != c->audit)
            pflex_audit_close(w->db);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        return pflex_error_set(err, "controller: no thread for the audit's writer");
    }
    c->writer = w;
    return 0;
}

void ctl_writer_stop(ctl_t *c)
{
    struct ctl_writer *w = c->writer;
    if (!w)
        return;
    c->writer = NULL;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    /* what is queued written, unless the disk holds it up a second */
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 1;
    int rc = 0;
    while ((w->head || isfinite(w->busy_since)) && rc == 0)
        rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
    int stuck = w->head || isfinite(w->busy_since);
    if (stuck) {
        ctl_log(c, "audit: %zu periods' records left unwritten: the database does not answer", w->n);
        /* the thread owns w and its connection now: left to the exit */
        for (struct ctl_rec *r = w->head, *next; r; r = next) {
            next = r->next;
            rec_free(r);
            w->n--;
        }
        w->head = w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        pthread_detach(w->th);
        return;
    }
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    if (w->db != c->audit)
        pflex_audit_close(w->db);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

/* r at the queue's tail, the writer woken; with w->mu held.  -1 when the
 * queue is full: r is freed and counted dropped. */
static int rec_push(struct ctl_writer *w, struct ctl_rec *r)
{
    if (w->n >= CTL_REC_QUEUE) {
        w->dropped++;
        rec_free(r);
        return -1;
    }
    if (w->tail)
        w->tail->next = r;
    else
        w->head = r;
    w->tail = r;
    w->n++;
    pthread_cond_signal(&w->cv);
    return 0;
}

/* Queues the record for the writer: -1 (err) when it is dropped (the queue
 * full), or when the writes fail or block (degraded, but queued). */
static int rec_queue(ctl_t *c, struct ctl_rec *r, pflex_error_t *err)
{
    struct ctl_writer *w = c->writer;
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    double busy = isfinite(w->busy_since) ? pflex_mono_s() - w->busy_since : 0;
    if (rec_push(w, r) < 0)
        rc = pflex_error_set(err, "audit: %d periods' records wait on a write that blocks: "
                             "the periods' records are dropped until it returns", CTL_REC_QUEUE);
    else if (w->failing)
        rc = pflex_error_set(err, "%s", w->err.text);
    else if (busy > c->c.period_s)
        rc = pflex_error_set(err, "audit: a write blocks for more than a period: the periods' "
                             "records are queued (%d at most)", CTL_REC_QUEUE);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int ctl_record(ctl_t *c, pflex_error_t *err)
{
    if (!c->audit)
        return 0;
    struct ctl_rec *r = rec_build(c);
    if (!r)
        return pflex_error_set(err, "audit: out of memory: this period's record dropped");
    if (c->writer)
        return rec_queue(c, r, err);
    int rc = rec_write(c->audit, r, c, err);
    rec_free(r);
    return rc;
}

int ctl_writer_note(ctl_t *c, double t, const char *kind, const char *text)
{
    struct ctl_writer *w = c->writer;
    if (!w)
        return -1;
    struct ctl_rec *r = calloc(1, sizeof *r);
    struct rec_row *row = r ? rec_add(r, 'n', kind ? kind : "note") : NULL;
    if (!row || !(row->text = strdup(text ? text : ""))) {
        rec_free(r);
        return 0;
    }
    r->t = t;
    pthread_mutex_lock(&w->mu);
    (void)rec_push(w, r);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void ctl_audit_counts(const ctl_t *c, struct ctl_audit_counts *out)
{
    memset(out, 0, sizeof *out);
    out->degraded = c->audit_degraded;
    struct ctl_writer *w = c->writer;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    out->written = w->written;
    out->failed = w->failed;
    out->dropped = w->dropped;
    out->queued = w->n;
    pthread_mutex_unlock(&w->mu);
}
