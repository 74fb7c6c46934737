/* gpu.c — wrappers over struct pflex_gpu_ops that refuse missing ops. */
#include "pflex/hw/gpu.h"

#define NEED(g, op) \
    if (!(g) || !(g)->ops || !(g)->ops->op) \
        return pflex_error_set(err, "%s backend cannot " #op, \
                               (g) && (g)->ops ? (g)->ops->name : "no")

int pflex_gpu_count(pflex_gpu_t *g, unsigned *n, pflex_error_t *err)
{
    NEED(g, count);
    return g->ops->count(g->ctx, n, err);
}

int pflex_gpu_describe(pflex_gpu_t *g, unsigned i, char *buf, size_t len, pflex_error_t *err)
{
    NEED(g, describe);
    return g->ops->describe(g->ctx, i, buf, len, err);
}

int pflex_gpu_limits(pflex_gpu_t *g, unsigned i, struct pflex_gpu_limits *out, pflex_error_t *err)
{
    NEED(g, limits);
    return g->ops->limits(g->ctx, i, out, err);
}

int pflex_gpu_get_cap(pflex_gpu_t *g, unsigned i, double *cap_w, pflex_error_t *err)
{
    NEED(g, get_cap);
    return g->ops->get_cap(g->ctx, i, cap_w, err);
}

int pflex_gpu_set_cap(pflex_gpu_t *g, unsigned i, double cap_w, pflex_error_t *err)
{
    NEED(g, set_cap);
    return g->ops->set_cap(g->ctx, i, cap_w, err);
}

int pflex_gpu_sample(pflex_gpu_t *g, unsigned i, struct pflex_gpu_sample *out, pflex_error_t *err)
{
    NEED(g, sample);
    return g->ops->sample(g->ctx, i, out, err);
}

void pflex_gpu_close(pflex_gpu_t *g)
{
    if (g && g->ops && g->ops->close)
        g->ops->close(g->ctx);
    if (g) {
        g->ops = NULL;
        g->ctx = NULL;
    }
}
