/* dataset.c — sweeps into jobs with features, PFI, curves and clusters. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "pflex/dataset.h"
#include "pflex/csv.h"
#include "pflex/curve.h"
#include "pflex/pfi.h"
#include "pflex/sweep.h"

const double ds_cuts[DS_NCUT] = {0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50,
                                  0.55, 0.60};

void dataset_fini(struct dataset *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->job[i]);
        free(d->cluster[i]);
        free(d->gpu[i]);
    }
    free(d->job); free(d->cluster); free(d->gpu); free(d->gpus); free(d->x); free(d->pfi);
    free(d->loss); free(d->p0_w); free(d->t0); free(d->cap0_w); free(d->x_max);
    free(d->used); free(d->dropped);
    for (size_t i = 0; i < d->n && d->cx; i++) {
        free(d->cx[i]);
        free(d->cl[i]);
    }
    free(d->cn); free(d->cx); free(d->cl);
    memset(d, 0, sizeof *d);
}

static int grow(struct dataset *d, size_t cap)
{
#define G(p, k) do { void *q = realloc(d->p, cap * (k) * sizeof *d->p); if (!q) return -1; \
                     d->p = q; } while (0)
    G(job, 1); G(cluster, 1); G(gpu, 1); G(gpus, 1); G(x, PFLEX_FEAT_COUNT); G(pfi, 1);
    G(loss, DS_NCUT); G(p0_w, 1); G(t0, 1); G(cap0_w, 1); G(x_max, 1); G(used, 1);
    G(dropped, 1); G(cn, 1); G(cx, 1); G(cl, 1);
#undef G
    return 0;
}

/* "h200-dense-llama8b-lora-..." -> "dense-lora"; NULL when the name has
 * no such tokens. */
static char *cluster_from_name(const char *name)
{
    const char *arch = NULL, *task = NULL;
    size_t al = 0, tl = 0;
    for (const char *p = name; *p;) {
        const char *e = strchr(p, '-');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (!arch && ((n == 5 && !strncmp(p, "dense", 5)) || (n == 3 && !strncmp(p, "moe", 3)))) {
            arch = p;
            al = n;
        } else if (arch && !task && ((n == 2 && (!strncmp(p, "pt", 2) || !strncmp(p, "ft", 2))) ||
                                     (n == 4 && !strncmp(p, "lora", 4)))) {
            task = p;
            tl = n;
        }
        p += n + (e ? 1 : 0);
        if (!e)
            break;
    }
    if (!arch || !task)
        return NULL;
    char *c = malloc(al + tl + 2);
    if (c)
        snprintf(c, al + tl + 2, "%.*s-%.*s", (int)al, arch, (int)tl, task);
    return c;
}

struct cmap { size_t n; char **job, **cl; };

static int load_clusters(const char *cmd, const char *path, struct cmap *m)
{
    char *buf;
    size_t len;
    pflex_error_t err;
    memset(m, 0, sizeof *m);
    if (pflex_read_all(path, &buf, &len, &err) < 0) {
        cli_error(cmd, "%s", err.text);
        return -1;
    }
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, path);
    int got, ij = -1, ic = -1, ia = -1, it = -1, rc = -1;
    size_t cap = 0;
    if ((got = pflex_csv_next(&c, &err)) <= 0) {
        cli_error(cmd, "%s: %s", path, got < 0 ? err.text : "empty file");
        goto out;
    }
    for (size_t i = 0; i < c.nfields; i++) {
        if (pflex_csv_field_is(&c.fields[i], "job")) ij = (int)i;
        if (pflex_csv_field_is(&c.fields[i], "cluster")) ic = (int)i;
        if (pflex_csv_field_is(&c.fields[i], "arch")) ia = (int)i;
        if (pflex_csv_field_is(&c.fields[i], "task")) it = (int)i;
    }
    if (ij < 0 || (ic < 0 && (ia < 0 || it < 0))) {
        cli_error(cmd, "%s:%u: needs columns job and cluster, or job, arch and task", path, c.line);
        goto out;
    }
    while ((got = pflex_csv_next(&c, &err)) > 0) {
        int need = ij > ic ? ij : ic;
        if (ia > need) need = ia;
        if (it > need) need = it;
        if ((size_t)need >= c.nfields) {
            cli_error(cmd, "%s:%u: %zu fields, the header has more", path, c.line, c.nfields);
            goto out;
        }
        if (m->n == cap) {
            cap = cap ? cap * 2 : 64;
            char **a = realloc(m->job, cap * sizeof *a), **b;
            if (!a)
                goto out;
            m->job = a;
            if (!(b = realloc(m->cl, cap * sizeof *b)))
                goto out;
            m->cl = b;
        }
        const struct pflex_csv_field *fj = &c.fields[ij];
        m->job[m->n] = strndup(fj->s, fj->len);
        if (ic >= 0) {
            m->cl[m->n] = strndup(c.fields[ic].s, c.fields[ic].len);
        } else {
            size_t n = c.fields[ia].len + c.fields[it].len + 2;
            if ((m->cl[m->n] = malloc(n)))
                snprintf(m->cl[m->n], n, "%.*s-%.*s", (int)c.fields[ia].len, c.fields[ia].s,
                         (int)c.fields[it].len, c.fields[it].s);
        }
        m->n++;
        if (!m->job[m->n - 1] || !m->cl[m->n - 1])
            goto out;
    }
    if (got < 0) {
        cli_error(cmd, "%s", err.text);
        goto out;
    }
    rc = 0;
out:
    pflex_csv_fini(&c);
    free(buf);
    return rc;
}

static void cmap_fini(struct cmap *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->job[i]);
        free(m->cl[i]);
    }
    free(m->job);
    free(m->cl);
}

int dataset_load(const char *cmd, int nfiles, char **files, const char *clusters,
                 const char *filter, int need_tm, struct dataset *d)
{
    static char *stdin_only[] = {"-"};
    struct cmap cm = {0};
    size_t cap = 0;
    pflex_error_t err;
    int rc = PFLEX_EXIT_BAD_INPUT;
    memset(d, 0, sizeof *d);
    if (nfiles <= 0) {
        files = stdin_only;
        nfiles = 1;
    }
    if (clusters && load_clusters(cmd, clusters, &cm) < 0)
        return PFLEX_EXIT_BAD_INPUT;
    for (int f = 0; f < nfiles; f++) {
        pflex_sweep_t *sw;
        if (pflex_sweep_read_file(files[f], NULL, &sw, &err) < 0) {
            cli_error(cmd, "%s", err.text);
            goto out;
        }
        if (need_tm && !sw->has_telemetry) {
            cli_error(cmd, "%s: the sweep has no telemetry column (dram_active, mem_copy_util, "
                      "...): pflex %s needs them", files[f], cmd);
            pflex_sweep_destroy(sw);
            goto out;
        }
        for (size_t j = 0; j < sw->njobs; j++) {
            const struct pflex_sweep_job *sj = &sw->jobs[j];
            if (filter && !strstr(sj->name, filter))
                continue;
            if (d->n == cap) {
                cap = cap ? cap * 2 : 64;
                if (grow(d, cap) < 0) {
                    pflex_sweep_destroy(sw);
                    rc = PFLEX_EXIT_INTERNAL;
                    goto out;
                }
            }
            size_t i = d->n;
            struct pflex_job_features jf;
            pflex_features_from_sweep_job(sj, &jf);
            memcpy(&d->x[i * PFLEX_FEAT_COUNT], jf.v, sizeof jf.v);
            d->job[i] = strdup(sj->name);
            d->gpu[i] = sj->gpu ? strdup(sj->gpu) : NULL;
            d->gpus[i] = sj->gpus;
            d->cluster[i] = NULL;
            d->cx[i] = d->cl[i] = NULL;
            d->cn[i] = 0;
            for (size_t k = 0; k < cm.n && !d->cluster[i]; k++)
                if (!strcmp(cm.job[k], sj->name))
                    d->cluster[i] = strdup(cm.cl[k]);
            if (!d->cluster[i] && !(d->cluster[i] = cluster_from_name(sj->name)))
                d->cluster[i] = strdup(sj->name);
            d->n++;
            if (!d->job[i] || !d->cluster[i]) {
                pflex_sweep_destroy(sw);
                rc = PFLEX_EXIT_INTERNAL;
                goto out;
            }
            struct pflex_pfi_ratio pr;
            if (pflex_pfi_ratio(sj->points, sj->npoints, NULL, 0, &pr, &err) < 0) {
                cli_error(cmd, "%s:%u: job '%s': %s", files[f], sj->line, sj->name, err.text);
                pflex_sweep_destroy(sw);
                goto out;
            }
            d->pfi[i] = pr.valid ? pr.pfi : NAN;
            d->used[i] = pr.used;
            d->dropped[i] = pr.not_binding + pr.noise;
            struct pflex_curve c;
            if (pflex_curve_init(&c, sj->points, sj->npoints, &err) < 0) {
                cli_error(cmd, "%s:%u: job '%s': %s", files[f], sj->line, sj->name, err.text);
                pflex_sweep_destroy(sw);
                goto out;
            }
            d->p0_w[i] = c.p0_w;
            d->t0[i] = c.t0;
            d->cap0_w[i] = c.cap0_w;
            d->x_max[i] = c.x_max;
            for (int k = 0; k < DS_NCUT; k++)
                d->loss[i * DS_NCUT + k] =
                    ds_cuts[k] <= c.x_max + 1e-12 ? pflex_curve_loss(&c, ds_cuts[k]) : NAN;
            d->cx[i] = malloc(c.n * sizeof *d->cx[i]);
            d->cl[i] = malloc(c.n * sizeof *d->cl[i]);
            if (d->cx[i] && d->cl[i]) {
                memcpy(d->cx[i], c.x, c.n * sizeof *c.x);
                memcpy(d->cl[i], c.loss, c.n * sizeof *c.loss);
                d->cn[i] = c.n;
            }
            pflex_curve_fini(&c);
            const char *cl = d->cluster[i];
            d->x[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_ARCH_MOE] =
                !strncmp(cl, "moe-", 4) ? 1 : !strncmp(cl, "dense-", 6) ? 0 : NAN;
            d->x[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_TASK_FT] =
                strstr(cl, "lora") || strstr(cl, "finetune") || strstr(cl, "-ft") ? 1
                : strstr(cl, "pretrain") || strstr(cl, "-pt") ? 0 : NAN;
        }
        pflex_sweep_destroy(sw);
    }
    rc = PFLEX_EXIT_OK;
out:
    cmap_fini(&cm);
    if (rc != PFLEX_EXIT_OK)
        dataset_fini(d);
    return rc;
}
