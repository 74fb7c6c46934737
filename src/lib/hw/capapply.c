/* capapply.c — a plan of per-job caps put into force on this node's
 * GPUs through the limit guard (pflex/capapply.h): placed on GPUs, checked
 * against their ranges before anything changes, then set. */
#include <string.h>
#include "pflex/capapply.h"
#include "pflex/nvml.h"

/* The index of the GPU ref names: an index, or a UUID of one of g's GPUs. */
static int gpu_index(pflex_gpu_t *g, unsigned count, const json_t *ref, unsigned *out,
                     pflex_error_t *err)
{
    if (json_is_integer(ref)) {
        json_int_t v = json_integer_value(ref);
        if (v < 0 || v >= (json_int_t)count)
            return pflex_error_set(err, "GPU %lld does not exist (this node has %u)",
                                   (long long)v, count);
        *out = (unsigned)v;
        return 0;
    }
    const char *s = json_string_value(ref);
    for (unsigned i = 0; s && i < count; i++) {
        struct pflex_nvml_info info;
        pflex_error_t ignored;
        if (pflex_nvml_info(g, i, &info, &ignored) == 0 && !strcmp(info.uuid, s)) {
            *out = i;
            return 0;
        }
    }
    return pflex_error_set(err, "GPU '%s': no GPU of this node has that UUID", s ? s : "?");
}

int pflex_capapply_place(pflex_gpu_t *g, const pflex_capplan_t *p, const json_t *jobmap,
                         struct pflex_capapply_gpu *out, unsigned *n, json_t *skipped,
                         pflex_error_t *err)
{
    const json_t *mjobs = json_is_object(json_object_get(jobmap, "jobs"))
                              ? json_object_get(jobmap, "jobs") : jobmap;
    unsigned count = 0;
    pflex_error_t ignored;
    pflex_gpu_count(g, &count, &ignored);
    *n = 0;
    for (size_t k = 0; k < p->njobs; k++) {
        const struct pflex_capplan_job *j = &p->jobs[k];
        const json_t *gpus = j->gpus ? j->gpus : json_object_get(mjobs, j->job);
        if (!json_is_array(gpus)) {
            json_array_append_new(skipped, json_pack("{s:s, s:s}", "job", j->job, "reason",
                                                     "no GPUs of this node (see --job-map)"));
            continue;
        }
        size_t i;
        const json_t *ref;
        json_array_foreach(gpus, i, ref) {
            unsigned gi = 0;
            if (gpu_index(g, count, ref, &gi, err) < 0)
                return -1;
            for (unsigned q = 0; q < *n; q++)
                if (out[q].gpu == gi)
                    return pflex_error_set(err, "GPU %u is given to both %s and %s", gi,
                                           out[q].job, j->job);
            if (*n == PFLEX_CAPAPPLY_MAX_GPUS)
                return pflex_error_set(err, "more than %d GPUs", PFLEX_CAPAPPLY_MAX_GPUS);
            out[(*n)++] = (struct pflex_capapply_gpu){gi, j->cap_w, j->job};
        }
    }
    return 0;
}

int pflex_capapply_check(pflex_gpu_t *g, const struct pflex_capapply_gpu *a, unsigned n,
                         pflex_error_t *err)
{
    for (unsigned q = 0; q < n; q++) {
        struct pflex_gpu_limits lim;
        if (pflex_gpu_limits(g, a[q].gpu, &lim, err))
            return PFLEX_CAPAPPLY_HW;
        if (a[q].cap_w < lim.min_w || a[q].cap_w > lim.max_w)
            return pflex_error_set(err, "job %s: cap %g W is outside GPU %u's range %g-%g W",
                                   a[q].job, a[q].cap_w, a[q].gpu, lim.min_w, lim.max_w);
    }
    return 0;
}

int pflex_capapply_set(pflex_guard_t *gd, pflex_gpu_t *g, const struct pflex_capapply_gpu *a,
                       unsigned n, double lease_s, const volatile sig_atomic_t *stop,
                       json_t *applied, pflex_error_t *err)
{
    for (unsigned q = 0; q < n && !(stop && *stop); q++) {
        double enf;
        if (pflex_guard_set(gd, a[q].gpu, a[q].cap_w, &enf, err))
            return -1;
        struct pflex_nvml_info info;
        pflex_error_t ignored;
        const char *uuid = pflex_nvml_info(g, a[q].gpu, &info, &ignored) == 0 ? info.uuid : "";
        json_array_append_new(applied, json_pack("{s:s, s:i, s:s, s:f, s:f, s:f}", "job",
                                                 a[q].job, "gpu", (int)a[q].gpu, "uuid", uuid,
                                                 "cap_w", a[q].cap_w, "enforced_w", enf,
                                                 "lease_s", lease_s));
    }
    return 0;
}
