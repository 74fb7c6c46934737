/* study_out.c — the study's output set (pflex/study/study.h): sweeps.csv,
 * pfi.csv, summary.json, report.html and the optional samples, written as
 * one set (pflex/io/outfile.h). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/study/study_int.h"
#include "pflex/io/csv.h"
#include "pflex/io/outfile.h"
#include "pflex/sim/sim.h"

/* How summary.json is written (as every pflex command writes JSON). */
#define STUDY_JSON_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12))

/* A text written by fn(f, arg) into memory: *text (malloc'd), *len. */
static int to_text(void (*fn)(FILE *f, const void *arg), const void *arg, char **text,
                   size_t *len, pflex_error_t *err)
{
    *text = NULL;
    *len = 0;
    FILE *f = open_memstream(text, len);
    if (!f)
        return pflex_error_sys(err, "out of memory");
    fn(f, arg);
    if (ferror(f) | fclose(f)) {
        free(*text);
        *text = NULL;
        return pflex_error_sys(err, "out of memory");
    }
    return 0;
}

struct tasks_arg { const struct study_task *tasks; size_t n; };

static void sweeps_fn(FILE *f, const void *arg)
{
    const struct tasks_arg *a = arg;
    fprintf(f, "# pflex study: simulated power-cap sweeps of the built-in fleet\n");
    pflex_sweep_write_header(f, 1);
    for (size_t i = 0; i < a->n; i++)
        for (size_t k = 0; k < a->tasks[i].nrows; k++) {
            const struct study_task *t = &a->tasks[i];
            const struct study_row *r = &t->rows[k];
            pflex_sweep_write_row(f, 1, t->fleet.desc.name, t->fleet.desc.gpu, t->fleet.gpus,
                                  r->cap_w, r->power_w, r->throughput, r->tm);
        }
}

int study_sweeps_text(const struct study_task *tasks, size_t n, char **text, size_t *len,
                      pflex_error_t *err)
{
    struct tasks_arg a = {tasks, n};
    return to_text(sweeps_fn, &a, text, len, err);
}

static void put_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
}

struct runs_arg { const struct pflex_report_run *runs; size_t n; };

/* A row per group: the study's columns first, then the PFI CSV columns
 * (SPEC section 3) that `pflex allocate --pfi` reads, then the layout. */
static void pfi_fn(FILE *f, const void *arg)
{
    const struct pflex_report_run *runs = ((const struct runs_arg *)arg)->runs;
    size_t n = ((const struct runs_arg *)arg)->n;
    fputs("group,set,model,arch,task,gpus,gpu,seq_len,batch,ep,compile,checkpointing,pfi,"
          "pfi_grid4,pfi_measured,job,power_w,throughput,metric,grid,cap_w,pfi_loss_area,range,"
          "shed_flex1,shed_flex2,shed_flex3,family,split,match,params_b,global_batch,dp,tp,pp,"
          "x_max,step_s\n", f);
    for (size_t i = 0; i < n; i++) {
        const struct pflex_report_run *r = &runs[i];
        const struct pflex_job_desc *d = &r->fleet.desc;
        pflex_csv_write_field(f, r->fleet.label);
        fprintf(f, ",%s,%s,%s,%s,%d,%s,%d,%d,%d,%d,%d,", r->fleet.set, r->fleet.model,
                r->fleet.arch, r->fleet.task, r->fleet.gpus, d->gpu, d->seq_len, d->micro_batch,
                d->ep, r->fleet.compile, d->act_ckpt);
        put_num(f, r->pfi_valid ? r->pfi : NAN);
        fputc(',', f);
        put_num(f, r->pfi_grid4);
        fputc(',', f);
        put_num(f, r->fleet.measured_pfi);
        fprintf(f, ",%s,%.10g,%.10g,ratio,", d->name, r->p0_w, r->t0);
        for (size_t k = 0; k < r->npoints; k++)
            fprintf(f, "%s%.0f", k ? "/" : "", r->cap_w[k]);
        fprintf(f, ",%.10g,", r->cap0_w);
        put_num(f, r->pfi_loss_area);
        fprintf(f, ",%.10g,%.10g,%.10g,%.10g,%s,%s,%s,%g,%d,%d,%d,%d,%.10g,%.6g\n",
                r->range_used, r->shed[1], r->shed[2], r->shed[3], r->fleet.family,
                pflex_fleet_split_name(r->fleet.split),
                r->partner >= 0 ? runs[r->partner].fleet.desc.name : "", d->params_b,
                d->global_batch, d->dp, d->tp, d->pp, r->x_max, r->step_s);
    }
}

int study_pfi_text(const struct pflex_report_run *runs, size_t n, char **text, size_t *len,
                   pflex_error_t *err)
{
    struct runs_arg a = {runs, n};
    return to_text(pfi_fn, &a, text, len, err);
}

/* --samples: every run's per-GPU 5-s samples, phases included, in fleet
 * and cap order.  Written after the sweep, one group at a time: each run's
 * noise depends only on (seed, group, cap, run), so these are the very
 * samples the sweep aggregated. */
int study_write_samples(FILE *f, const struct study_task *tasks, size_t n, uint64_t seed,
                        int repeats, pflex_error_t *err)
{
    struct pflex_sim_sample *smp = NULL;
    size_t cap_n = 0;
    fputs("# pflex study: per-GPU samples every 5 s of each 30-minute run (docs/sim-model.md)\n"
          "job,gpu,gpu_index,cap_w,run,t_s,phase,fb_used_gib,power_w,throughput", f);
    for (int k = 0; k < PFLEX_TM_COUNT; k++)
        fprintf(f, ",%s", pflex_tm_name((enum pflex_tm)k));
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        pflex_error_t e;
        pflex_sim_job_t *job;
        if (pflex_sim_job_create(&tasks[i].fleet.desc, study_job_seed(seed, tasks[i].index), &job,
                                 &e) < 0) {
            pflex_error_set(err, "%s: %s", tasks[i].fleet.desc.name, e.text);
            goto fail;
        }
        double last = -1;
        for (size_t r = 0; r < tasks[i].nrows; r++) {
            double cap = tasks[i].rows[r].cap_w;
            if (cap == last)
                continue;       /* the repeats of one cap come together */
            last = cap;
            for (int k = 0; k < repeats; k++) {
                struct pflex_sim_run_opts o = PFLEX_SIM_RUN_DEFAULTS;
                size_t want;
                o.run = (unsigned)k;
                if (pflex_sim_job_run(job, cap, &o, NULL, 0, &want, NULL, &e) < 0)
                    goto fail_job;
                if (want > cap_n) {
                    free(smp);
                    smp = malloc(want * sizeof *smp);
                    cap_n = smp ? want : 0;
                    if (!smp) {
                        pflex_error_sys(&e, "out of memory");
                        goto fail_job;
                    }
                }
                if (pflex_sim_job_run(job, cap, &o, smp, cap_n, &want, NULL, &e) < 0)
                    goto fail_job;
                for (size_t q = 0; q < want; q++) {
                    const struct pflex_sim_sample *x = &smp[q];
                    fprintf(f, "%s,%s,%u,%.10g,%d,%.0f,%s,%.3f,%.6g,%.6g",
                            tasks[i].fleet.desc.name, tasks[i].fleet.desc.gpu, x->gpu, cap, k, x->t_s,
                            pflex_sim_phase_name(x->phase), x->fb_used_gib, x->power_w,
                            x->throughput);
                    for (int t = 0; t < PFLEX_TM_COUNT; t++) {
                        fputc(',', f);
                        if (isfinite(x->tm[t]))
                            fprintf(f, "%.6g", x->tm[t]);
                    }
                    fputc('\n', f);
                }
            }
        }
        pflex_sim_job_destroy(job);
        continue;
fail_job:
        pflex_error_set(err, "%s: %s", tasks[i].fleet.desc.name, e.text);
        pflex_sim_job_destroy(job);
        goto fail;
    }
    free(smp);
    return 0;
fail:
    free(smp);
    return -1;
}

/* The set of outputs being written: each finished as it is written, all
 * committed together once every one is whole (pflex/io/outfile.h). */
enum { MAX_OUTS = 8 };
struct outset {
    pflex_outfile_t *o[MAX_OUTS];
    size_t n;
};

/* Begin dir/name (dir NULL: name is the path); its stream, or NULL with err. */
static FILE *set_open(struct outset *s, const char *dir, const char *name, char *path,
                      size_t len, pflex_error_t *err)
{
    if (dir)
        snprintf(path, len, "%s/%s", dir, name);
    else
        snprintf(path, len, "%s", name);
    if (s->n == MAX_OUTS) {
        pflex_error_set(err, "%s: too many output files", path);
        return NULL;
    }
    if (pflex_outfile_begin(path, NULL, &s->o[s->n], err) < 0)
        return NULL;
    return pflex_outfile_stream(s->o[s->n++]);
}

/* Finish the output opened last. */
static int set_finish(struct outset *s, pflex_error_t *err)
{
    return pflex_outfile_finish(s->o[s->n - 1], err);
}

static int set_text(struct outset *s, const char *dir, const char *name, const char *text,
                    size_t len, pflex_error_t *err)
{
    char path[PATH_MAX];
    FILE *f = set_open(s, dir, name, path, sizeof path, err);
    if (!f)
        return -1;
    fwrite(text, 1, len, f);
    return set_finish(s, err);
}

static int set_commit(struct outset *s, pflex_error_t *err)
{
    for (size_t i = 0; i < s->n; i++) {
        pflex_outfile_t *o = s->o[i];
        s->o[i] = NULL;
        if (pflex_outfile_commit(o, err) < 0)
            return -1;
    }
    s->n = 0;
    return 0;
}

static void set_drop(struct outset *s)
{
    for (size_t i = 0; i < s->n; i++)
        pflex_outfile_abort(s->o[i]);
    s->n = 0;
}

int pflex_study_write(const pflex_study_t *s, const char *dir, const char *samples,
                      const char *gnuplot, int *charts, pflex_error_t *err)
{
    struct outset set = {{0}, 0};
    char path[PATH_MAX];
    FILE *f;
    int n = 0;
    if (charts)
        *charts = 0;
    if (set_text(&set, dir, "sweeps.csv", s->sweeps_csv, s->sweeps_len, err) < 0
        || set_text(&set, dir, "pfi.csv", s->pfi_csv, s->pfi_len, err) < 0)
        goto fail;
    if (samples) {
        if (!(f = set_open(&set, NULL, samples, path, sizeof path, err))
            || study_write_samples(f, s->tasks, s->n, s->cfg.seed, s->cfg.repeats, err) < 0
            || set_finish(&set, err) < 0)
            goto fail;
    }
    if (!(f = set_open(&set, dir, "summary.json", path, sizeof path, err)))
        goto fail;
    json_dumpf(s->summary, f, STUDY_JSON_FLAGS);
    fputc('\n', f);
    if (set_finish(&set, err) < 0 || !(f = set_open(&set, dir, "report.html", path, sizeof path, err)))
        goto fail;
    pflex_error_t e;
    if (pflex_report_write_html(&s->rep, s->summary, gnuplot, f, &n, &e) < 0) {
        pflex_error_set(err, "%s: %s", path, e.text);
        goto fail;
    }
    if (set_finish(&set, err) < 0 || set_commit(&set, err) < 0)
        goto fail;
    if (charts)
        *charts = n;
    return 0;
fail:
    set_drop(&set);
    return -1;
}
