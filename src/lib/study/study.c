/* study.c — the characterisation study on the built-in fleet
 * (pflex/study/study.h): the groups picked, swept (study_sweep.c), read back as
 * `pflex pfi` reads a sweep, each run's PFI and curve, then the sections of
 * the report and summary.json. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/study/study_int.h"
#include "lib/util/clock.h"
#include "pflex/sim/model.h"
#include "pflex/flex/pfi.h"

/* Default caps: the union of the fleet's kinds' ranges, every 50 W. */
static void default_caps(double *caps, size_t *n)
{
    const struct pflex_gpu_kind *a = pflex_gpu_kind_find("H200-SXM-141GB");
    const struct pflex_gpu_kind *b = pflex_gpu_kind_find("H100-SXM5-80GB");
    double hi = fmax(a ? a->max_cap_w : 700, b ? b->max_cap_w : 700);
    double lo = fmin(a ? a->min_cap_w : 200, b ? b->min_cap_w : 200);
    *n = 0;
    for (double c = hi; c >= lo - 1e-9 && *n < PFLEX_STUDY_MAX_CAPS; c -= 50)
        caps[(*n)++] = c;
}

void pflex_study_config_init(struct pflex_study_config *c)
{
    memset(c, 0, sizeof *c);
    c->set = PFLEX_FLEET_STUDY;
    c->seed = 1;
    default_caps(c->caps_w, &c->ncaps);
    c->cap_step_w = 50;
    c->repeats = 1;
    c->range = PFLEX_PFI_RANGE_DEFAULT;
    c->threads = 1;
}

/* A subset of n groups of the fleet at even strides, in fleet order, plus
 * the H200 partners of the H100 groups picked (so that pairs survive). */
static size_t pick_runs(enum pflex_fleet_set set, size_t total, size_t n, size_t *idx)
{
    if (n == 0 || n >= total) {
        for (size_t i = 0; i < total; i++)
            idx[i] = i;
        return total;
    }
    unsigned char *in = calloc(total, 1);
    if (!in)
        return 0;
    for (size_t i = 0; i < n; i++)
        in[i * total / n] = 1;
    for (size_t i = 0; i < total; i++) {
        struct pflex_fleet_run r;
        if (in[i] && pflex_fleet_entry(set, i, &r) == 0 && r.match >= 0
            && (size_t)r.match < total)
            in[r.match] = 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < total; i++)
        if (in[i])
            idx[k++] = i;
    free(in);
    return k;
}

/* The groups the configuration picks, as tasks (calloc'd, *n of them). */
static struct study_task *pick_tasks(const struct pflex_study_config *c, size_t *n,
                                     pflex_error_t *err)
{
    size_t total = pflex_fleet_size(c->set);
    size_t *idx = calloc(total ? total : 1, sizeof *idx);
    struct study_task *tasks = NULL;
    *n = idx ? pick_runs(c->set, total, c->njobs, idx) : 0;
    if (*n)
        tasks = calloc(*n, sizeof *tasks);
    for (size_t i = 0; tasks && i < *n; i++) {
        tasks[i].index = idx[i];
        if (pflex_fleet_entry(c->set, idx[i], &tasks[i].fleet) < 0) {
            pflex_error_set(err, "fleet entry %zu missing", idx[i]);
            free(tasks);
            free(idx);
            return NULL;
        }
    }
    free(idx);
    if (!tasks)
        pflex_error_sys(err, "out of memory");
    return tasks;
}

/* With caps given, every GPU kind of the tasks needs two caps within its
 * range. */
static int check_caps(const struct pflex_study_config *c, const struct study_task *tasks,
                      size_t n, pflex_error_t *err)
{
    for (size_t i = 0; c->caps_given && i < n; i++) {
        const struct pflex_gpu_kind *k = pflex_gpu_kind_find(tasks[i].fleet.desc.gpu);
        size_t in = 0;
        for (size_t j = 0; k && j < c->ncaps; j++)
            in += c->caps_w[j] >= k->min_cap_w - 1e-9 && c->caps_w[j] <= k->max_cap_w + 1e-9;
        if (k && in < 2)
            return pflex_error_set(err, "fewer than two caps within the %s range %.0f-%.0f W",
                                   k->name, k->min_cap_w, k->max_cap_w);
    }
    return 0;
}

int pflex_study_check(const struct pflex_study_config *c, pflex_error_t *err)
{
    size_t n;
    struct study_task *tasks = pick_tasks(c, &n, err);
    if (!tasks)
        return -1;
    int rc = check_caps(c, tasks, n, err);
    free(tasks);
    return rc;
}

/* Run i of the study from its sweep job sj (read back): PFI on the curve
 * (the study's ratio on the group's grid and on the coarse one, pflex's
 * loss-area), the averaged points, the telemetry at the highest cap and
 * the step time there. */
static int fill_run(pflex_study_t *s, size_t i, const struct pflex_sweep_job *sj,
                    pflex_error_t *err)
{
    static const double grid4[] = {200, 500, 600, 700};
    const struct study_task *t = &s->tasks[i];
    struct pflex_report_run *r = &s->runs[i];
    struct pflex_curve *cv = &s->curves[i];
    struct pflex_pfi pfi;
    struct pflex_pfi_ratio ratio;
    pflex_error_t e;
    r->fleet = t->fleet;
    r->index = t->index;
    r->partner = -1;
    if (strcmp(sj->name, r->fleet.desc.name) || sj->npoints > PFLEX_REPORT_MAX_POINTS)
        return pflex_error_set(err, "sweeps.csv: job %zu is '%s', expected '%s'", i, sj->name,
                               r->fleet.desc.name);
    if (pflex_curve_init(cv, sj->points, sj->npoints, &e) < 0)
        return pflex_error_set(err, "sweeps.csv: job '%s': %s", sj->name, e.text);
    s->ncurves = i + 1;
    pflex_pfi_compute(cv, s->cfg.range, &pfi);
    r->pfi_loss_area = pfi.valid ? pfi.pfi : NAN;
    r->range_used = pfi.range_used;
    if (pflex_pfi_ratio(sj->points, sj->npoints, NULL, 0, &ratio, &e) < 0)
        return pflex_error_set(err, "sweeps.csv: job '%s': %s", sj->name, e.text);
    r->pfi_valid = ratio.valid;
    r->pfi = ratio.valid ? ratio.pfi : NAN;
    r->pfi_grid4 = NAN;
    if (pflex_pfi_ratio(sj->points, sj->npoints, grid4, 4, &ratio, NULL) == 0 && ratio.valid)
        r->pfi_grid4 = ratio.pfi;
    memcpy(r->shed, pfi.shed, sizeof r->shed);
    r->x_max = cv->x_max;
    r->p0_w = cv->p0_w;
    r->t0 = cv->t0;
    r->cap0_w = cv->cap0_w;
    r->npoints = sj->npoints;
    for (size_t k = 0; k < sj->npoints; k++) {
        r->cap_w[k] = sj->points[k].cap_w;
        r->power_w[k] = sj->points[k].power_w;
        r->throughput[k] = sj->points[k].throughput;
    }
    for (int k = 0; k < PFLEX_TM_COUNT; k++)
        r->tm[k] = sj->telemetry && sj->npoints
                   ? sj->telemetry[(sj->npoints - 1) * PFLEX_TM_COUNT + k] : NAN;
    /* Step time at the highest cap: the mean over its repeats. */
    double sum = 0;
    int cnt = 0;
    for (size_t k = 0; k < t->nrows; k++)
        if (fabs(t->rows[k].cap_w - r->cap0_w) < 1e-6) {
            sum += t->rows[k].step_s;
            cnt++;
        }
    r->step_s = cnt ? sum / cnt : NAN;
    return 0;
}

/* The runs from the sweep read back, and each H100 run's H200 partner. */
static int fill_runs(pflex_study_t *s, const pflex_sweep_t *sweep, pflex_error_t *err)
{
    size_t n = s->n;
    if (sweep->njobs != n)
        return pflex_error_set(err, "sweeps.csv: %zu jobs read back, %zu written", sweep->njobs,
                               n);
    for (size_t i = 0; i < n; i++)
        if (fill_run(s, i, &sweep->jobs[i], err) < 0)
            return -1;
    for (size_t i = 0; i < n; i++)
        if (s->runs[i].fleet.split == PFLEX_FLEET_H100)
            for (size_t k = 0; k < n; k++)
                if ((int)s->runs[k].index == s->runs[i].fleet.match)
                    s->runs[i].partner = (int)k;
    return 0;
}

/* The prediction sections on the study's own sweeps, with the clusters of
 * its pfi.csv, as `pflex train --study` would read them; a failure leaves
 * them out with the reason in the note. */
static void predict(pflex_study_t *s, const pflex_sweep_t *sweep)
{
    struct pflex_dataset d;
    pflex_error_t e;
    if (pflex_dataset_from_sweep(sweep, "sweeps.csv", s->pfi_csv, s->pfi_len, "pfi.csv", NULL,
                                 "pflex study", &d, &e) < 0) {
        snprintf(s->prediction_note, sizeof s->prediction_note, "%s", e.text);
        return;
    }
    if (pflex_study_predict(&d, "sweeps.csv", 500, (unsigned long)s->cfg.seed, &s->prediction,
                            &e) < 0)
        snprintf(s->prediction_note, sizeof s->prediction_note, "%s", e.text);
    pflex_dataset_fini(&d);
}

/* summary.json: the report's, with the comparison and the prediction
 * sections before runtime_s (which stays last). */
static int summarise(pflex_study_t *s, pflex_error_t *err)
{
    s->summary = pflex_report_summary(&s->rep);
    if (!s->summary)
        return pflex_error_sys(err, "out of memory");
    json_t *rt = json_incref(json_object_get(s->summary, "runtime_s"));
    json_object_del(s->summary, "runtime_s");
    json_object_set_new(s->summary, "study", study_compare(s->runs, s->n, &s->pairs));
    if (s->prediction)
        json_object_set_new(s->summary, "prediction", json_incref(s->prediction));
    json_object_set_new(s->summary, "runtime_s", rt ? rt : json_null());
    return 0;
}

/* Everything after the sweep: read back, runs, sections, texts, summary. */
static int analyse(pflex_study_t *s, double t_start, pflex_error_t *err)
{
    pflex_sweep_t *sweep = NULL;
    const struct pflex_study_config *c = &s->cfg;
    pflex_error_t e;
    int rc = -1;
    if (study_sweeps_text(s->tasks, s->n, &s->sweeps_csv, &s->sweeps_len, err) < 0)
        return -1;
    /* read back exactly as `pflex pfi` would */
    if (pflex_sweep_read_mem(s->sweeps_csv, s->sweeps_len, "sweeps.csv", NULL, &sweep, &e) < 0) {
        pflex_error_set(err, "reading back %s", e.text);
        return -1;
    }
    if (fill_runs(s, sweep, err) < 0)
        goto out;
    s->rep = (struct pflex_report){.seed = c->seed, .range = c->range, .repeats = c->repeats,
                                   .cap_step_w = c->caps_given ? c->cap_step_w : -1,
                                   .ncaps = c->ncaps, .caps_w = s->cfg.caps_w, .nruns = s->n,
                                   .runs = s->runs};
    study_calibrate(c->data_dir, c->data_note ? c->data_note : "no shared data folder given",
                    c->seed, s->cal_jobs, PFLEX_REPORT_MAX_CALIB, &s->rep.calib);
    if (study_allocate(s->runs, s->curves, s->n, &s->rep.alloc) < 0) {
        pflex_error_sys(err, "out of memory");
        goto out;
    }
    s->rep.runtime_s = pflex_mono_s() - t_start;
    if (study_pfi_text(s->runs, s->n, &s->pfi_csv, &s->pfi_len, err) < 0)
        goto out;
    predict(s, sweep);
    rc = summarise(s, err);
out:
    pflex_sweep_destroy(sweep);
    return rc;
}

int pflex_study_run(const struct pflex_study_config *c, pflex_study_t **out, pflex_error_t *err)
{
    double t_start = pflex_mono_s();
    pflex_study_t *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s)
        return pflex_error_sys(err, "out of memory");
    s->cfg = *c;
    s->cfg.progress = NULL;     /* borrowed for the run only */
    s->tasks = pick_tasks(c, &s->n, err);
    if (!s->tasks || check_caps(c, s->tasks, s->n, err) < 0)
        goto fail;
    s->runs = calloc(s->n, sizeof *s->runs);
    s->curves = calloc(s->n, sizeof *s->curves);
    if (!s->runs || !s->curves) {
        pflex_error_sys(err, "out of memory");
        goto fail;
    }
    if (study_sweep(c, s->tasks, s->n, err) < 0 || analyse(s, t_start, err) < 0)
        goto fail;
    s->cfg.data_dir = s->cfg.data_note = NULL;
    *out = s;
    return 0;
fail:
    pflex_study_destroy(s);
    return -1;
}

const struct pflex_report *pflex_study_report(const pflex_study_t *s)
{
    return &s->rep;
}

const json_t *pflex_study_summary(const pflex_study_t *s)
{
    return s->summary;
}

const json_t *pflex_study_prediction(const pflex_study_t *s)
{
    return s->prediction;
}

const char *pflex_study_prediction_note(const pflex_study_t *s)
{
    return s->prediction ? NULL : s->prediction_note;
}

int pflex_study_add_section(pflex_study_t *s, const char *key, json_t *v, pflex_error_t *err)
{
    /* runtime_s stays the last key */
    json_t *rt = json_incref(json_object_get(s->summary, "runtime_s"));
    if (rt)
        json_object_del(s->summary, "runtime_s");
    int bad = !v || json_object_set_new(s->summary, key, v) < 0
              || (rt && json_object_set_new(s->summary, "runtime_s", rt) < 0);
    if (bad)
        return pflex_error_set(err, "study: out of memory");
    return 0;
}

size_t pflex_study_pairs(const pflex_study_t *s)
{
    return s->pairs;
}

void pflex_study_destroy(pflex_study_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ncurves; i++)
        pflex_curve_fini(&s->curves[i]);
    for (size_t i = 0; s->tasks && i < s->n; i++)
        free(s->tasks[i].rows);
    json_decref(s->summary);
    json_decref(s->prediction);
    free(s->sweeps_csv);
    free(s->pfi_csv);
    free(s->curves);
    free(s->runs);
    free(s->tasks);
    free(s);
}
