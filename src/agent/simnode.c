/* simnode.c — the agent's sim backend: a node of N simulated GPUs, each
 * belonging to a copy of a simulated job.
 *
 * The physics is the sim model's (pflex/sim/sim.h), reached only through its
 * public functions: each copy is a pflex_sim_job, its GPUs are that job's
 * gpu_ops backend, and a cap set here is a cap set there, so power,
 * telemetry and throughput follow the caps exactly as the model says.
 * This file maps node GPU i to (copy, GPU within the copy), makes a GPU
 * that was made to fail answer every operation with an error, and gives a
 * cap's power the time a real GPU takes to follow it: the model's steady
 * power moves to the new cap's as a first-order lag (PFLEX_POWER_LAG_TAU_S)
 * and is read as NVML reads it, a mean over the last second
 * (pflex/sim/powerlag.h, docs/time-to-target.md).
 *
 * With a load folder (--sim-load-dir) a GPU is busy only while a real
 * process drives it: the file DIR/gpuN holds the PID of the process that
 * runs on GPU N (a Slurm job's script writes it), and the GPU runs its job
 * while that process exists and is not stopped; otherwise (no file, the
 * process gone, or stopped by SIGSTOP/SIGTSTP as `scontrol suspend` does)
 * it draws its kind's idle power, its utilization 0, its copy's rate 0.
 * So a suspended job's GPUs fall idle because its processes stopped, not
 * because anyone said so (docs/slurm-levers.md).
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "lib/util/clock.h"
#include "pflex/sim/model.h"
#include "pflex/sim/powerlag.h"
#include "pflex/sim/sim.h"

struct simnode {
    unsigned n, per, copies;
    pflex_sim_job_t **job;
    pflex_gpu_t *jg;            /* each copy's gpu backend */
    char (*name)[AGENT_NAME_MAX];
    int *lost;
    char *load_dir;             /* NULL: every GPU busy */
    double *energy_j, *energy_t;    /* with load_dir: each GPU's own counter, and when */
    /* each GPU's power dynamics, from its first cap change (lag_on) */
    pthread_mutex_t mu;
    struct pflex_power_lag *lag;
    int *lag_on;
};

/* The model's steady power of GPU i at the caps set now (no noise drawn,
 * no cap changed). */
static double steady_w(struct simnode *s, unsigned i)
{
    double pw[AGENT_MAX_GPUS];
    pflex_error_t e;
    if (s->per > AGENT_MAX_GPUS || pflex_sim_job_per_gpu(s->job[i / s->per], 0, pw, NULL, NULL, &e) < 0)
        return NAN;
    return pw[i % s->per];
}

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
    struct simnode *s = ctx;
    pflex_gpu_t *g = NULL;
    unsigned l = 0;
    if (locate(ctx, i, &g, &l, err))
        return -1;
    double from = steady_w(s, i);
    if (pflex_gpu_set_cap(g, l, cap_w, err))
        return -1;
    double t = pflex_mono_s(), to = steady_w(s, i);
    pthread_mutex_lock(&s->mu);
    if (!s->lag_on[i] && isfinite(from)) {
        pflex_power_lag_init(&s->lag[i], PFLEX_POWER_LAG_TAU_S, PFLEX_POWER_LAG_WINDOW_S, t, from);
        s->lag_on[i] = 1;
    }
    if (s->lag_on[i] && isfinite(to))
        pflex_power_lag_step(&s->lag[i], t, to);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* The state letter of /proc/PID/stat (after the command's closing paren,
 * which may itself hold spaces and parens); 0 when the process is gone. */
static char proc_state(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' ? rp[2] : 0;
}

int simnode_gpu_busy(const struct simnode *s, unsigned i)
{
    if (!s->load_dir)
        return 1;
    char path[4200], buf[32];
    snprintf(path, sizeof path, "%s/gpu%u", s->load_dir, i);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *end;
    long pid = strtol(buf, &end, 10);
    if (pid <= 0 || end == buf || (*end && !isspace((unsigned char)*end)))
        return 0;
    char st = proc_state(pid);
    /* T: stopped by a signal, t: by a tracer, Z/X: dead */
    return st && st != 'T' && st != 't' && st != 'Z' && st != 'X';
}

static int op_sample(void *ctx, unsigned i, struct pflex_gpu_sample *out, pflex_error_t *err)
{
    struct simnode *s = ctx;
    pflex_gpu_t *g = NULL;
    unsigned l = 0;
    if (locate(s, i, &g, &l, err) || pflex_gpu_sample(g, l, out, err))
        return -1;
    /* the model's sample (its noise kept) plus what the lag still owes */
    pthread_mutex_lock(&s->mu);
    if (s->lag_on[i]) {
        const struct pflex_power_lag *lg = &s->lag[i];
        out->power_w += pflex_power_lag_read_w(lg, pflex_mono_s()) - pflex_power_lag_target_w(lg);
    }
    pthread_mutex_unlock(&s->mu);
    if (!s->load_dir)
        return 0;
    if (!simnode_gpu_busy(s, i)) {
        out->power_w = pflex_sim_job_kind(s->job[i / s->per])->idle_w;
        for (int k = PFLEX_TM_GPU_UTIL; k <= PFLEX_TM_GR_ENGINE_ACTIVE; k++)
            if (isfinite(out->tm[k]))
                out->tm[k] = 0;
    }
    /* the energy counter follows the power this file reports, busy or idle */
    double now = pflex_mono_s();
    pthread_mutex_lock(&s->mu);
    if (s->energy_t[i] > 0)
        s->energy_j[i] += out->power_w * (now - s->energy_t[i]);
    s->energy_t[i] = now;
    out->energy_j = s->energy_j[i];
    pthread_mutex_unlock(&s->mu);
    return 0;
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
    s->lag = calloc(n, sizeof *s->lag);
    s->lag_on = calloc(n, sizeof *s->lag_on);
    pthread_mutex_init(&s->mu, NULL);
    if (!s->job || !s->jg || !s->name || !s->lost || !s->lag || !s->lag_on) {
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
    free(s->load_dir);
    free(s->energy_j);
    free(s->energy_t);
    free(s->lag);
    free(s->lag_on);
    pthread_mutex_destroy(&s->mu);
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
    /* a synchronous job waits on its slowest GPU: one idle, none moves */
    for (unsigned i = k * s->per; i < (k + 1) * s->per; i++)
        if (!simnode_gpu_busy(s, i))
            *tokens_s = 0;
    return 0;
}

int simnode_set_load_dir(struct simnode *s, const char *dir, pflex_error_t *err)
{
    if (!dir)
        return 0;
    if (strlen(dir) > 4000)
        return pflex_error_set(err, "--sim-load-dir: longer than 4000 characters");
    s->load_dir = strdup(dir);
    s->energy_j = calloc(s->n, sizeof *s->energy_j);
    s->energy_t = calloc(s->n, sizeof *s->energy_t);
    if (!s->load_dir || !s->energy_j || !s->energy_t)
        return pflex_error_set(err, "out of memory");
    return 0;
}

void simnode_fail(struct simnode *s, unsigned i)
{
    if (i < s->n)
        s->lost[i] = 1;
}
