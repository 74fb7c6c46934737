/* pflex/hw/gpu.h — hardware behind one small table of operations.
 *
 * Every backend (nvml: a real driver loaded with dlopen; sim: the physical
 * model of pflex/sim/sim.h; the fake NVML library of the test suite, reached
 * through the nvml backend) fills struct pflex_gpu_ops.  An operation a
 * backend cannot do is NULL, and the pflex_gpu_* wrappers then fail loudly
 * with an error; they never pretend to succeed.
 */
#ifndef PFLEX_GPU_H
#define PFLEX_GPU_H

#include <stddef.h>
#include "pflex/util/error.h"
#include "pflex/io/sweep.h"

struct pflex_gpu_limits {
    double min_w;       /* lowest settable power limit, W */
    double max_w;       /* highest settable power limit, W */
    double default_w;   /* the board's default limit, W */
};

/* One telemetry reading of one GPU; NaN where the backend has no value. */
struct pflex_gpu_sample {
    double power_w;     /* board power draw, W */
    double energy_j;    /* energy counter since an arbitrary origin, J */
    double tm[PFLEX_TM_COUNT];  /* sweep telemetry columns, docs/contract.md §3 units */
};

struct pflex_gpu_ops {
    const char *name;
    int (*count)(void *ctx, unsigned *n, pflex_error_t *err);
    /* Model name ("NVIDIA H200") into buf. */
    int (*describe)(void *ctx, unsigned i, char *buf, size_t len, pflex_error_t *err);
    int (*limits)(void *ctx, unsigned i, struct pflex_gpu_limits *out, pflex_error_t *err);
    /* The power limit in force (enforced), W. */
    int (*get_cap)(void *ctx, unsigned i, double *cap_w, pflex_error_t *err);
    int (*set_cap)(void *ctx, unsigned i, double cap_w, pflex_error_t *err);
    int (*sample)(void *ctx, unsigned i, struct pflex_gpu_sample *out, pflex_error_t *err);
    void (*close)(void *ctx);
};

typedef struct pflex_gpu {
    const struct pflex_gpu_ops *ops;
    void *ctx;
} pflex_gpu_t;

int pflex_gpu_count(pflex_gpu_t *g, unsigned *n, pflex_error_t *err);
int pflex_gpu_describe(pflex_gpu_t *g, unsigned i, char *buf, size_t len, pflex_error_t *err);
int pflex_gpu_limits(pflex_gpu_t *g, unsigned i, struct pflex_gpu_limits *out, pflex_error_t *err);
int pflex_gpu_get_cap(pflex_gpu_t *g, unsigned i, double *cap_w, pflex_error_t *err);
int pflex_gpu_set_cap(pflex_gpu_t *g, unsigned i, double cap_w, pflex_error_t *err);
int pflex_gpu_sample(pflex_gpu_t *g, unsigned i, struct pflex_gpu_sample *out, pflex_error_t *err);
void pflex_gpu_close(pflex_gpu_t *g);

#endif
