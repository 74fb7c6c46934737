/* simnode.c — the agent's sim backend: a node of N simulated GPUs, each
 * belonging to a copy of a simulated job.
 *
 * The physics is the sim model's (pflex/sim/sim.h), reached only through its
 * public functions: each copy is a pflex_sim_job, its GPUs are that job's
 * gpu_ops backend, and a cap set here is a cap set there, so power,
 * telemetry and throughput follow the caps exactly as the model says.
 * This file only maps node GPU i to (copy, GPU within the copy), and makes
 * a GPU that was made to fail answer every operation with an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "pflex/sim/model.h"
#include "pflex/sim/sim.h"

struct simnode {
    unsigned n, per, copies;
    pflex_sim_job_t **job;
    pflex_gpu_t *jg;            /* each copy's gpu backend */
    char (*name)[AGENT_NAME_MAX];
    int *lost;
};

static const struct pflex_gpu_ops simnode_ops;

static int locate(struct simnode *s, unsigned i, pflex_gpu_t **g, unsigned *local,
                  pflex_error_t *err)
{
    if (i >= s->n)
        return pflex_error_set(err, "sim: no GPU %u (the node has %u)", i, s->n);
    if (s->lost[i])
        return pflex_error_set(err, "sim: GPU %u is lost (fell off the bus, as made to by "
                               "--sim-fail)", i);
    *g = &s->jg[i / s->per];
    *local = i % s->per;
    return 0;
}

static int op_count(void *ctx, unsigned *n, pflex_error_t *err)
{
    *n = ((struct simnode *)ctx)->n;
    return 0;
}

static int op_describe(void *ctx, unsigned i, char *buf, size_t len, pflex_error_t *err)
{
    pflex_gpu_t *g = NULL;
    unsigned l = 0;
    if (locate(ctx, i, &g, &l, err))
        return -1;
    return pflex_gpu_describe(g, l, buf, len, err);
}

static int op_limits(void *ctx, unsigned i, struct pflex_gpu_limits *out, pflex_error_t *err)
{
    pflex_gpu_t *g = NULL;
    unsigned l = 0;
    if (locate(ctx, i, &g, &l, err))
        return -1;
    return pflex_gpu_limits(g, l, out, err);
}

static int op_get_cap(void *ctx, unsigned i, double *cap_w, pflex_error_t *err)
{
    pflex_gpu_t *g = NULL;
    unsigned l = 0;
    if (locate(ctx, i, &g, &l, err))
        return -1;
    return pflex_gpu_get_cap(g, l, cap_w, err);
}

static int op_set_cap(void *ctx, unsigned i, double cap_w, pflex_error_t *err)
{
    pflex_gpu_t *g = NULL;
    unsigned l = 0;
    if (locate(ctx, i, &g, &l, err))
        return -1;
    return pflex_gpu_set_cap(g, l, cap_w, err);
}

static int op_sample(void *ctx, unsigned i, struct pflex_gpu_sample *out, pflex_error_t *err)
{
    pflex_gpu_t *g = NULL;
    unsigned l = 0;
    if (locate(ctx, i, &g, &l, err))
        return -1;
    return pflex_gpu_sample(g, l, out, err);
}

static const struct pflex_gpu_ops simnode_ops = {
    .name = "sim",
    .count = op_count,
    .describe = op_describe,
    .limits = op_limits,
    .get_cap = op_get_cap,
    .set_cap = op_set_cap,
    .sample = op_sample,
    .close = NULL,      /* simnode_destroy frees */
};

int simnode_create(unsigned n, const char *job, uint64_t seed, struct simnode **out,
                   pflex_error_t *err)
{
    *out = NULL;
    if (n == 0 || n > AGENT_MAX_GPUS)
        return pflex_error_set(err, "--gpus %u: the sim backend has 1 to %d GPUs", n,
                               AGENT_MAX_GPUS);
    if (!job)
        job = n % 8 == 0 ? "llama-8b-pretrain-h200" : "llama-8b-lora-h200";
    struct pflex_job_desc d;
    if (pflex_job_load(job, &d, err))
        return -1;
    if (d.gpus <= 0 || n % (unsigned)d.gpus)
        return pflex_error_set(err, "--sim-job %s runs on %d GPUs, which does not divide "
                               "--gpus %u", job, d.gpus, n);
    struct simnode *s = calloc(1, sizeof *s);
    if (!s)
        return pflex_error_set(err, "out of memory");
    s->n = n;
    s->per = (unsigned)d.gpus;
    s->copies = n / s->per;
    s->job = calloc(s->copies, sizeof *s->job);
    s->jg = calloc(s->copies, sizeof *s->jg);
    s->name = calloc(s->copies, sizeof *s->name);
    s->lost = calloc(n, sizeof *s->lost);
    if (!s->job || !s->jg || !s->name || !s->lost) {
        simnode_destroy(s);
        return pflex_error_set(err, "out of memory");
    }
    for (unsigned k = 0; k < s->copies; k++) {
        if (pflex_sim_job_create(&d, seed + k, &s->job[k], err)) {
            simnode_destroy(s);
            return -1;
        }
        pflex_sim_job_gpu(s->job[k], &s->jg[k]);
        if (s->copies == 1)
            snprintf(s->name[k], sizeof s->name[k], "%s", d.name);
        else
            snprintf(s->name[k], sizeof s->name[k], "%.50s-%u", d.name, k);
    }
    *out = s;
    return 0;
}

void simnode_destroy(struct simnode *s)
{
    if (!s)
        return;
    for (unsigned k = 0; s->job && k < s->copies; k++)
        pflex_sim_job_destroy(s->job[k]);
    free(s->job);
    free(s->jg);
    free(s->name);
    free(s->lost);
    free(s);
}

void simnode_gpu(struct simnode *s, pflex_gpu_t *out)
{
    out->ops = &simnode_ops;
    out->ctx = s;
}

unsigned simnode_job_count(const struct simnode *s)
{
    return s->copies;
}

const char *simnode_job_name(const struct simnode *s, unsigned k)
{
    return k < s->copies ? s->name[k] : NULL;
}

void simnode_job_gpus(const struct simnode *s, unsigned k, unsigned *first, unsigned *count)
{
    *first = k * s->per;
    *count = s->per;
}

int simnode_job_throughput(struct simnode *s, unsigned k, double *tokens_s, pflex_error_t *err)
{
    if (k >= s->copies)
        return pflex_error_set(err, "sim: no job copy %u", k);
    for (unsigned i = k * s->per; i < (k + 1) * s->per; i++)
        if (s->lost[i])
            return pflex_error_set(err, "sim: job %s stalls: its GPU %u is lost", s->name[k], i);
    struct pflex_sim_measure m;
    if (pflex_sim_job_measure(s->job[k], 0, &m, err))     /* at the caps in force */
        return -1;
    *tokens_s = m.throughput;
    return 0;
}

void simnode_fail(struct simnode *s, unsigned i)
{
    if (i < s->n)
        s->lost[i] = 1;
}
