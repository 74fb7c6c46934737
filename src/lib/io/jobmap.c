/* jobmap.c — the job map: jobs merged from every source, their (job, host,
 * gpu) rows, and the job map CSV read and written (docs/slurm.md).
 *
 * Hosts are interned once per map; jobs hold host ids.  A reader parses
 * into temporary jobs and merges each into the map, so that a job seen by
 * squeue and by scontrol becomes one job. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/io/jobmap_int.h"
#include "pflex/io/csv.h"
#include "pflex/io/sweep.h"
#include "lib/util/grow.h"

void pflex_jm_job_fini(struct job *j)
{
    free(j->id);
    free(j->name);
    free(j->hosts);
    free(j->e);
    memset(j, 0, sizeof *j);
}

pflex_jobmap_t *pflex_jobmap_create(void)
{
    return calloc(1, sizeof(pflex_jobmap_t));
}

void pflex_jobmap_destroy(pflex_jobmap_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->njobs; i++)
        pflex_jm_job_fini(&m->jobs[i]);
    free(m->jobs);
    pflex_strtab_fini(&m->hosts);
    pflex_strtab_fini(&m->ids);
    pflex_strtab_fini(&m->srcs);
    pflex_jm_rows_reset(m);
    free(m);
}

size_t pflex_jobmap_skipped(const pflex_jobmap_t *m)
{
    size_t k = 0;
    for (size_t i = 0; i < m->njobs; i++)
        k += !m->jobs[i].running;
    return k;
}

int pflex_jm_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->host != y->host)
        return x->host < y->host ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

int pflex_jm_in_hosts(const struct job *j, uint32_t h)
{
    return j->nhosts && bsearch(&h, j->hosts, j->nhosts, sizeof h, pflex_jm_cmp_u32) != NULL;
}

int pflex_jm_add_entry(pflex_jobmap_t *m, struct job *j, uint32_t host, int gpu, unsigned line,
                     const char *file, pflex_error_t *err)
{
    if (m->entries >= PFLEX_JOBMAP_MAX_ROWS)
        return pflex_error_set(err, "%s:%u: more than %d (job, host, gpu) rows", file, line,
                               PFLEX_JOBMAP_MAX_ROWS);
    if (pflex_grow((void **)&j->e, &j->cape, j->ne + 1, sizeof *j->e) < 0)
        return pflex_error_set(err, "%s:%u: out of memory", file, line);
    j->e[j->ne++] = (struct entry){host, gpu, line};
    m->entries++;
    return 0;
}

/* Sort a finished job's entries; a repeated (host, gpu) is an error. */
int pflex_jm_job_finish(pflex_jobmap_t *m, struct job *j, const char *file, pflex_error_t *err)
{
    if (j->ne)      /* qsort's base may not be NULL, even for no element */
        qsort(j->e, j->ne, sizeof *j->e, cmp_entry);
    for (size_t i = 1; i < j->ne; i++)
        if (cmp_entry(&j->e[i - 1], &j->e[i]) == 0) {
            unsigned a = j->e[i - 1].line, b = j->e[i].line;
            const struct entry *x = &j->e[i];
            if (x->gpu < 0)
                return pflex_error_set(err, "%s:%u: job %s: host '%s' listed twice", file,
                                       a > b ? a : b, j->id, m->hosts.s[x->host]);
            return pflex_error_set(err, "%s:%u: job %s: GPU %d of host '%s' listed twice",
                                   file, a > b ? a : b, j->id, (int)x->gpu,
                                   m->hosts.s[x->host]);
        }
    if (j->has_hosts) {
        if (j->nhosts)
            qsort(j->hosts, j->nhosts, sizeof *j->hosts, pflex_jm_cmp_u32);
        for (size_t i = 1; i < j->nhosts; i++)
            if (j->hosts[i] == j->hosts[i - 1])
                return pflex_error_set(err, "%s:%u: job %s: host '%s' twice in its node list",
                                       file, j->line, j->id, m->hosts.s[j->hosts[i]]);
    }
    return 0;
}

static int same_entries(const struct job *a, const struct job *b)
{
    if (a->ne != b->ne)
        return 0;
    for (size_t i = 0; i < a->ne; i++)
        if (a->e[i].host != b->e[i].host || a->e[i].gpu != b->e[i].gpu)
            return 0;
    return 1;
}

/* Merge j (finished; ownership taken whatever happens) into m. */
int pflex_jm_merge(pflex_jobmap_t *m, struct job *j, pflex_error_t *err)
{
    int added, rc = -1;
    if (pflex_grow((void **)&m->jobs, &m->capjobs, m->njobs + 1, sizeof *m->jobs) < 0) {
        pflex_error_set(err, "%s:%u: out of memory", j->src, j->line);
        goto done;
    }
    long k = pflex_strtab_intern(&m->ids, j->id, strlen(j->id), &added);
    if (k < 0) {
        pflex_error_set(err, "%s:%u: out of memory", j->src, j->line);
        goto done;
    }
    if (added) {        /* ids and jobs stay parallel: the id is ids.s[njobs] */
        m->jobs[m->njobs++] = *j;
        memset(j, 0, sizeof *j);
        return 0;
    }
    struct job *o = &m->jobs[k];
    if (*o->name && *j->name && strcmp(o->name, j->name)) {
        pflex_error_set(err, "%s:%u: job %s is named '%s' here but '%s' in %s:%u", j->src,
                        j->line, j->id, j->name, o->name, o->src, o->line);
        goto done;
    }
    if (!o->running && j->running) {
        /* it started between the two listings: the running record wins */
        struct job t = *o;
        m->entries -= o->ne;
        *o = *j;
        memset(j, 0, sizeof *j);
        if (!*o->name && *t.name) {
            free(o->name);
            o->name = t.name;
            t.name = NULL;
        }
        pflex_jm_job_fini(&t);
        return 0;
    }
    if (!j->running) {      /* ended since: the running record stands */
        rc = 0;
        goto done;
    }
    if (o->has_hosts && j->has_hosts
        && (o->nhosts != j->nhosts
                || (o->nhosts && memcmp(o->hosts, j->hosts, o->nhosts * sizeof *o->hosts)))) {
        pflex_error_set(err, "%s:%u: job %s runs on other hosts than in %s:%u", j->src,
                        j->line, j->id, o->src, o->line);
        goto done;
    }
    if (o->detail && j->detail && !same_entries(o, j)) {
        pflex_error_set(err, "%s:%u: job %s has other GPUs than in %s:%u", j->src, j->line,
                        j->id, o->src, o->line);
        goto done;
    }
    if (!*o->name && *j->name) {
        free(o->name);
        o->name = j->name;
        j->name = NULL;
    }
    if (j->detail && !o->detail) {
        m->entries -= o->ne;
        free(o->e);
        o->e = j->e;
        o->ne = j->ne;
        o->cape = j->cape;
        o->detail = 1;
        o->src = j->src;
        o->line = j->line;
        j->e = NULL;
        j->ne = 0;
    }
    if (j->has_hosts && !o->has_hosts) {
        free(o->hosts);
        o->hosts = j->hosts;
        o->nhosts = j->nhosts;
        o->has_hosts = 1;
        j->hosts = NULL;
    }
    rc = 0;
done:
    m->entries -= j->ne;
    pflex_jm_job_fini(j);
    return rc;
}

const char *pflex_jm_src_name(pflex_jobmap_t *m, const char *name, pflex_error_t *err)
{
    long k = pflex_strtab_intern(&m->srcs, name, strlen(name), NULL);
    if (k < 0) {
        pflex_error_set(err, "%s: out of memory", name);
        return NULL;
    }
    return m->srcs.s[k];
}

int pflex_jm_set_id(struct job *j, const char *s, size_t n, const char *file, unsigned line,
                  int digits_only, pflex_error_t *err)
{
    char eb[48];
    if (!n || n > MAX_ID_LEN)
        return pflex_error_set(err, "%s:%u: job id '%s' is empty or too long", file, line,
                               pflex_jm_excerpt(eb, s, n));
    for (size_t i = 0; i < n; i++)
        if (digits_only ? !isdigit((unsigned char)s[i]) : !pflex_jm_id_char((unsigned char)s[i]))
            return pflex_error_set(err, "%s:%u: job id '%s' is not %s", file, line,
                                   pflex_jm_excerpt(eb, s, n), digits_only ? "a number (squeue: use "
                                   "%A, the job id, not %i)" : "a job id");
    if (!(j->id = pflex_jm_dup(s, n)))
        return pflex_error_set(err, "%s:%u: out of memory", file, line);
    return 0;
}

int pflex_jm_set_name(struct job *j, const char *s, size_t n, const char *file, unsigned line,
                    pflex_error_t *err)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    if (n == 6 && memcmp(s, "(null)", 6) == 0)
        n = 0;
    if (n > PFLEX_SLURM_MAX_NAME)
        return pflex_error_set(err, "%s:%u: job %s: name longer than %d bytes", file, line,
                               j->id ? j->id : "?", PFLEX_SLURM_MAX_NAME);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return pflex_error_set(err, "%s:%u: job %s: a control character in its name",
                                   file, line, j->id ? j->id : "?");
    free(j->name);
    if (!(j->name = pflex_jm_dup(s, n)))
        return pflex_error_set(err, "%s:%u: out of memory", file, line);
    return 0;
}

int pflex_jobmap_csv_read_mem(pflex_jobmap_t *m, const char *buf, size_t len,
                              const char *name, pflex_error_t *err)
{
    const char *file = name ? name : "-";
    pflex_csv_t c;
    struct pflex_strtab ids = {0};
    struct job *jobs = NULL;
    size_t njobs = 0, capjobs = 0;
    int got, rc = -1, ci[4] = {-1, -1, -1, -1};
    static const char *const cols[4] = {"job", "name", "host", "gpu"};
    char eb[48];
    pflex_jm_rows_reset(m);
    if (!(file = pflex_jm_src_name(m, file, err)))
        return -1;
    pflex_csv_init(&c, buf, len, file);
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (got == 0)
            pflex_error_set(err, "%s:1: empty file: no header row", file);
        goto done;
    }
    for (size_t f = 0; f < c.nfields; f++)
        for (int k = 0; k < 4; k++)
            if (pflex_csv_field_is(&c.fields[f], cols[k]) && ci[k] < 0)
                ci[k] = (int)f;
    for (int k = 0; k < 4; k++)
        if (k != 1 && ci[k] < 0) {
            pflex_error_set(err, "%s:%u: missing column '%s' (a job map has job,name,host,"
                            "gpu)", file, c.line, cols[k]);
            goto done;
        }
    size_t need = 0;
    for (int k = 0; k < 4; k++)
        if (ci[k] >= 0 && (size_t)ci[k] + 1 > need)
            need = (size_t)ci[k] + 1;
    while ((got = pflex_csv_next(&c, err)) == 1) {
        unsigned line = c.line;
        const struct pflex_csv_field *f = c.fields;
        if (c.nfields < need) {
            pflex_csv_row_error(err, file, line, c.nfields, need);
            goto done;
        }
        const struct pflex_csv_field *jf = &f[ci[0]], *hf = &f[ci[2]], *gf = &f[ci[3]];
        int added;
        long k = pflex_strtab_intern(&ids, jf->s, jf->len, &added);
        if (k < 0) {
            pflex_error_set(err, "%s:%u: out of memory", file, line);
            goto done;
        }
        if (added) {
            if (pflex_grow((void **)&jobs, &capjobs, njobs + 1, sizeof *jobs) < 0) {
                pflex_error_set(err, "%s:%u: out of memory", file, line);
                goto done;
            }
            struct job *j = &jobs[njobs++];
            memset(j, 0, sizeof *j);
            j->src = file;
            j->line = line;
            j->running = 1;
            j->detail = 1;
            if (pflex_jm_set_id(j, jf->s, jf->len, file, line, 0, err) < 0
                || pflex_jm_set_name(j, ci[1] >= 0 ? f[ci[1]].s : "", ci[1] >= 0 ? f[ci[1]].len : 0,
                            file, line, err) < 0)
                goto done;
        }
        struct job *j = &jobs[k];
        if (ci[1] >= 0) {
            const struct pflex_csv_field *nf = &f[ci[1]];
            if (nf->len != strlen(j->name) || memcmp(nf->s, j->name, nf->len)) {
                pflex_error_set(err, "%s:%u: job %s is named '%s' on line %u", file, line,
                                j->id, j->name, j->line);
                goto done;
            }
        }
        if (!hf->len || hf->len > MAX_HOST_LEN) {
            pflex_error_set(err, "%s:%u: column 'host': empty or longer than %d bytes", file,
                            line, MAX_HOST_LEN);
            goto done;
        }
        for (size_t q = 0; q < hf->len; q++)
            if (!pflex_jm_host_char((unsigned char)hf->s[q])) {
                pflex_error_set(err, "%s:%u: column 'host': '%s' is not a host name", file,
                                line, pflex_jm_excerpt(eb, hf->s, hf->len));
                goto done;
            }
        int gpu = -1;
        if (gf->len) {
            long v = 0;
            for (size_t q = 0; q < gf->len; q++) {
                if (!isdigit((unsigned char)gf->s[q]) || q >= 5) {
                    v = -1;
                    break;
                }
                v = v * 10 + (gf->s[q] - '0');
            }
            if (v < 0 || v >= PFLEX_SLURM_MAX_GPUS) {
                pflex_error_set(err, "%s:%u: column 'gpu': '%s' is not a GPU index 0-%d "
                                "(or empty: unknown)", file, line,
                                pflex_jm_excerpt(eb, gf->s, gf->len), PFLEX_SLURM_MAX_GPUS - 1);
                goto done;
            }
            gpu = (int)v;
        }
        long hk = pflex_strtab_intern(&m->hosts, hf->s, hf->len, NULL);
        if (hk < 0) {
            pflex_error_set(err, "%s:%u: out of memory", file, line);
            goto done;
        }
        if (pflex_jm_add_entry(m, j, (uint32_t)hk, gpu, line, file, err) < 0)
            goto done;
    }
    if (got < 0)
        goto done;
    for (size_t q = 0; q < njobs; q++)
        if (pflex_jm_job_finish(m, &jobs[q], file, err) < 0)
            goto done;
    for (size_t q = 0; q < njobs; q++)      /* pflex_jm_merge empties what it takes */
        if (pflex_jm_merge(m, &jobs[q], err) < 0)
            goto done;
    rc = 0;
done:
    for (size_t q = 0; q < njobs; q++) {
        m->entries -= jobs[q].ne;
        pflex_jm_job_fini(&jobs[q]);
    }
    free(jobs);
    pflex_strtab_fini(&ids);
    pflex_csv_fini(&c);
    return rc;
}

int pflex_jm_read_file(pflex_jobmap_t *m, const char *path, pflex_jm_reader_fn fn, pflex_error_t *err)
{
    char *buf;
    size_t len;
    if (pflex_read_all(path, &buf, &len, err) < 0)
        return -1;
    int rc = fn(m, buf, len, strcmp(path, "-") == 0 ? "<stdin>" : path, err);
    free(buf);
    return rc;
}

int pflex_jobmap_csv_read_file(pflex_jobmap_t *m, const char *path, pflex_error_t *err)
{
    return pflex_jm_read_file(m, path, pflex_jobmap_csv_read_mem, err);
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* A total order of job ids: numbers first, by value, then the others as
 * strings (mixing the two rules pair by pair would not be transitive). */
static int cmp_id(const char *a, const char *b)
{
    int da = all_digits(a), db = all_digits(b);
    if (da != db)
        return da ? -1 : 1;
    if (da) {
        while (*a == '0' && a[1])
            a++;
        while (*b == '0' && b[1])
            b++;
        size_t la = strlen(a), lb = strlen(b);
        if (la != lb)
            return la < lb ? -1 : 1;
    }
    return strcmp(a, b);
}

static int cmp_row(const void *x, const void *y)
{
    const struct pflex_jobmap_row *a = x, *b = y;
    int c = cmp_id(a->job, b->job);
    if (c)
        return c;
    if ((c = strcmp(a->host, b->host)))
        return c;
    return a->gpu < b->gpu ? -1 : a->gpu > b->gpu;
}

struct claim {
    uint32_t host;
    int32_t gpu;
    uint32_t job;
};

static int cmp_claim(const void *x, const void *y)
{
    const struct claim *a = x, *b = y;
    if (a->host != b->host)
        return a->host < b->host ? -1 : 1;
    if (a->gpu != b->gpu)
        return a->gpu < b->gpu ? -1 : 1;
    return a->job < b->job ? -1 : a->job > b->job;
}

void pflex_jm_rows_reset(pflex_jobmap_t *m)
{
    free(m->rows);
    free(m->by_gpu);
    m->rows = NULL;
    m->by_gpu = NULL;
    m->nrows = m->nby_gpu = 0;
}

static int cmp_host_gpu(const void *x, const void *y)
{
    const struct pflex_jobmap_row *a = *(const struct pflex_jobmap_row *const *)x;
    const struct pflex_jobmap_row *b = *(const struct pflex_jobmap_row *const *)y;
    int c = strcmp(a->host, b->host);
    if (c)
        return c;
    return a->gpu < b->gpu ? -1 : a->gpu > b->gpu;
}

long pflex_jobmap_rows(pflex_jobmap_t *m, const struct pflex_jobmap_row **rows,
                       pflex_error_t *err)
{
    if (!m->rows) {
        size_t n = 0;
        for (size_t i = 0; i < m->njobs; i++)
            if (m->jobs[i].running)
                n += m->jobs[i].ne;
        if (n > PFLEX_JOBMAP_MAX_ROWS)
            return pflex_error_set(err, "more than %d (job, host, gpu) rows",
                                   PFLEX_JOBMAP_MAX_ROWS);
        struct pflex_jobmap_row *r = malloc((n ? n : 1) * sizeof *r);
        struct claim *cl = malloc((n ? n : 1) * sizeof *cl);
        if (!r || !cl) {
            free(r);
            free(cl);
            return pflex_error_set(err, "out of memory");
        }
        size_t k = 0, nc = 0;
        for (size_t i = 0; i < m->njobs; i++) {
            const struct job *j = &m->jobs[i];
            if (!j->running)
                continue;
            for (size_t q = 0; q < j->ne; q++) {
                r[k++] = (struct pflex_jobmap_row){j->id, j->name, m->hosts.s[j->e[q].host],
                                                   j->e[q].gpu};
                if (j->e[q].gpu >= 0)
                    cl[nc++] = (struct claim){j->e[q].host, j->e[q].gpu, (uint32_t)i};
            }
        }
        qsort(cl, nc, sizeof *cl, cmp_claim);
        for (size_t q = 1; q < nc; q++)
            if (cl[q].host == cl[q - 1].host && cl[q].gpu == cl[q - 1].gpu) {
                const struct job *a = &m->jobs[cl[q - 1].job], *b = &m->jobs[cl[q].job];
                pflex_error_set(err, "%s:%u: GPU %d of host '%s' is held by job %s and by "
                                "job %s (%s:%u)", b->src, b->line, (int)cl[q].gpu,
                                m->hosts.s[cl[q].host], b->id, a->id, a->src, a->line);
                free(r);
                free(cl);
                return -1;
            }
        free(cl);
        qsort(r, k, sizeof *r, cmp_row);
        const struct pflex_jobmap_row **by = malloc((nc ? nc : 1) * sizeof *by);
        if (!by) {
            free(r);
            return pflex_error_set(err, "out of memory");
        }
        size_t nb = 0;
        for (size_t q = 0; q < k; q++)
            if (r[q].gpu >= 0)
                by[nb++] = &r[q];
        qsort(by, nb, sizeof *by, cmp_host_gpu);
        m->rows = r;
        m->nrows = k;
        m->by_gpu = by;
        m->nby_gpu = nb;
    }
    *rows = m->rows;
    return (long)m->nrows;
}

const struct pflex_jobmap_row *pflex_jobmap_find(pflex_jobmap_t *m, const char *host, int gpu)
{
    const struct pflex_jobmap_row *rows;
    pflex_error_t err;
    if (gpu < 0 || pflex_jobmap_rows(m, &rows, &err) < 0 || !m->nby_gpu)
        return NULL;
    struct pflex_jobmap_row key = {NULL, NULL, host, gpu};
    const struct pflex_jobmap_row *kp = &key, *const *hit;
    hit = bsearch(&kp, m->by_gpu, m->nby_gpu, sizeof *m->by_gpu, cmp_host_gpu);
    return hit ? *hit : NULL;
}

int pflex_jobmap_write_csv(const struct pflex_jobmap_row *rows, size_t n, FILE *f)
{
    fputs("job,name,host,gpu\n", f);
    for (size_t i = 0; i < n; i++) {
        fputs(rows[i].job, f);
        fputc(',', f);
        pflex_csv_write_field(f, rows[i].name);
        fprintf(f, ",%s,", rows[i].host);
        if (rows[i].gpu >= 0)
            fprintf(f, "%d", rows[i].gpu);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}
