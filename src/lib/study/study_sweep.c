/* study_sweep.c — the study's sweeps (pflex/study/study.h): every group of the
 * fleet on the sim backend, worker threads over groups.  Each group's noise
 * is seeded by its fleet index, so the sweeps never depend on the number of
 * threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "lib/study/study_int.h"
#include "lib/util/mix.h"
#include "pflex/sim/sim.h"

struct pool {
    struct study_task *tasks;
    size_t ntasks;
    const struct pflex_study_config *cfg;
    atomic_size_t next;
    atomic_size_t done;
    pthread_mutex_t lock;       /* one progress call at a time */
};

uint64_t study_job_seed(uint64_t seed, size_t index)
{
    return pflex_mix64(seed ^ pflex_mix64(index));
}

/* Sweep one group: its caps (or --caps within the kind's range) from high
 * to low, `repeats` 30-minute runs at each, each aggregated as the study
 * aggregates a run (pflex_sim_job_run). */
static void sweep_one(const struct pflex_study_config *c, struct study_task *t)
{
    pflex_error_t err = {{0}};
    pflex_sim_job_t *job = NULL;
    if (pflex_sim_job_create(&t->fleet.desc, study_job_seed(c->seed, t->index), &job, &err) < 0)
        goto fail;
    const struct pflex_gpu_kind *kind = pflex_sim_job_kind(job);
    const double *caps = c->caps_given ? c->caps_w : t->fleet.caps_w;
    size_t ncaps = c->caps_given ? c->ncaps : t->fleet.ncaps;
    t->rows = calloc(ncaps * (size_t)c->repeats, sizeof *t->rows);
    if (!t->rows) {
        pflex_error_set(&err, "out of memory");
        goto fail;
    }
    for (size_t j = ncaps; j-- > 0;) {
        double cap = caps[j];
        if (cap < kind->min_cap_w - 1e-9 || cap > kind->max_cap_w + 1e-9)
            continue;
        for (int k = 0; k < c->repeats; k++) {
            struct pflex_sim_run_opts o = PFLEX_SIM_RUN_DEFAULTS;
            struct pflex_sim_measure m;
            o.run = (unsigned)k;
            if (pflex_sim_job_run(job, cap, &o, NULL, 0, NULL, &m, &err) < 0)
                goto fail;
            struct study_row *r = &t->rows[t->nrows++];
            r->cap_w = cap;
            r->power_w = m.power_w;
            r->throughput = m.throughput;
            r->step_s = m.step_s;
            memcpy(r->tm, m.tm, sizeof r->tm);
        }
    }
    pflex_sim_job_destroy(job);
    return;
fail:
    pflex_sim_job_destroy(job);
    t->failed = 1;
    snprintf(t->err, sizeof t->err, "%.63s: %.180s", t->fleet.desc.name, err.text);
}

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->ntasks)
            return NULL;
        sweep_one(p->cfg, &p->tasks[i]);
        size_t d = atomic_fetch_add(&p->done, 1) + 1;
        if (p->cfg->progress) {
            pthread_mutex_lock(&p->lock);
            p->cfg->progress(p->cfg->progress_ctx, d, p->ntasks);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

int study_sweep(const struct pflex_study_config *c, struct study_task *tasks, size_t n,
                pflex_error_t *err)
{
    struct pool p = {.tasks = tasks, .ntasks = n, .cfg = c};
    pthread_t tid[64];
    int started = 0, threads = c->threads < 1 ? 1 : c->threads > 64 ? 64 : c->threads;
    atomic_init(&p.next, 0);
    atomic_init(&p.done, 0);
    pthread_mutex_init(&p.lock, NULL);
    if ((size_t)threads > n)
        threads = (int)n;
    for (; started < threads - 1; started++)
        if (pthread_create(&tid[started], NULL, worker, &p) != 0)
            break;
    worker(&p);                 /* the calling thread works too */
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&p.lock);
    for (size_t i = 0; i < n; i++)
        if (tasks[i].failed)
            return pflex_error_set(err, "%s", tasks[i].err);
    return 0;
}
