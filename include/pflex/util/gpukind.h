/* pflex/util/gpukind.h — the settable power-limit range of each known GPU kind.
 *
 * A small table that every layer may read (the planner clamps its caps to
 * it, readers resolve a gpu column with it).  The simulator's kinds
 * (pflex/sim/model.h) take their names and ranges from it;
 * the real range of a GPU comes from NVML where there is one.
 */
#ifndef PFLEX_GPUKIND_H
#define PFLEX_GPUKIND_H

struct pflex_gpu_range {
    const char *name;           /* canonical kind name, "H200-SXM-141GB", ... */
    double min_cap_w;           /* lowest settable power limit, W */
    double max_cap_w;           /* highest settable power limit, W */
};

/* Lookup by name, case-insensitive, with or without an "NVIDIA " prefix;
 * also short names ("H200", "H100", "A100", "A100-40", "A100-80", ...).
 * NULL when unknown. */
const struct pflex_gpu_range *pflex_gpu_range_find(const char *name);
const struct pflex_gpu_range *pflex_gpu_range_at(int i);   /* NULL past the end */

#endif
