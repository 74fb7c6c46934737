/* capplan.c — reading a plan of per-job caps, the jobs[] of 'pflex
 * allocate --json' (pflex/capplan.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/capplan.h"

static json_t *load(const char *path, pflex_error_t *err)
{
    json_error_t je;
    json_t *doc = !strcmp(path, "-") ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &je)
                                     : json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        pflex_error_set(err, "%s:%d:%d: %s (a plan of 'pflex allocate --json')", path, je.line,
                        je.column, je.text);
    return doc;
}

/* jobs[] of the plan, checked. */
static int check_jobs(const char *path, pflex_capplan_t *p, pflex_error_t *err)
{
    json_t *jobs = json_object_get(p->doc, "jobs");
    if (!json_is_array(jobs) || json_array_size(jobs) == 0)
        return pflex_error_set(err, "%s: no \"jobs\" list (a plan of 'pflex allocate --json')",
                               path);
    p->njobs = json_array_size(jobs);
    p->jobs = calloc(p->njobs, sizeof *p->jobs);
    if (!p->jobs)
        return pflex_error_sys(err, "out of memory");
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        json_t *name = json_object_get(j, "job"), *cap = json_object_get(j, "cap_w");
        json_t *gpus = json_object_get(j, "gpus");
        if (!json_is_string(name) || !*json_string_value(name))
            return pflex_error_set(err, "%s: jobs[%zu]: no \"job\" name", path, i);
        if (!json_is_number(cap) || !(json_number_value(cap) > 0)
            || !isfinite(json_number_value(cap)))
            return pflex_error_set(err, "%s: jobs[%zu] (%s): \"cap_w\" must be a positive "
                                   "number of watts", path, i, json_string_value(name));
        if (gpus && !json_is_array(gpus) && !json_is_integer(gpus))
            return pflex_error_set(err, "%s: jobs[%zu] (%s): \"gpus\" is a count or a list of "
                                   "GPU indices or UUIDs", path, i, json_string_value(name));
        p->jobs[i] = (struct pflex_capplan_job){json_string_value(name), json_number_value(cap),
                                                json_is_array(gpus) ? gpus : NULL};
    }
    return 0;
}

int pflex_capplan_read_file(const char *path, pflex_capplan_t **out, pflex_error_t *err)
{
    pflex_capplan_t *p = calloc(1, sizeof *p);
    if (!p)
        return pflex_error_sys(err, "out of memory");
    if (!(p->doc = load(path, err)) || check_jobs(path, p, err) < 0) {
        pflex_capplan_destroy(p);
        return -1;
    }
    *out = p;
    return 0;
}

void pflex_capplan_destroy(pflex_capplan_t *p)
{
    if (!p)
        return;
    free(p->jobs);
    json_decref(p->doc);
    free(p);
}
