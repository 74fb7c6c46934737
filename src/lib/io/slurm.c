/* slurm.c — Slurm's squeue (text and --json) and `scontrol show job -d`
 * output read into the job map (docs/slurm.md has the command lines and
 * the fields read).  Everything input can make large is bounded before it
 * is allocated. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "lib/io/jobmap_int.h"

static int set_hosts(pflex_jobmap_t *m, struct job *j, const char *list, size_t len,
                     const char *file, unsigned line, pflex_error_t *err)
{
    char **h;
    size_t n;
    pflex_error_t e2;
    if (pflex_slurm_hostlist_expand(list, len, PFLEX_SLURM_MAX_HOSTS, &h, &n, &e2) < 0)
        return pflex_error_set(err, "%s:%u: job %s: node list: %s", file, line, j->id,
                               e2.text);
    free(j->hosts);
    j->hosts = n ? malloc(n * sizeof *j->hosts) : NULL;
    if (n && !j->hosts) {
        pflex_slurm_hostlist_free(h, n);
        return pflex_error_set(err, "%s:%u: out of memory", file, line);
    }
    for (size_t i = 0; i < n; i++) {
        long k = pflex_strtab_intern(&m->hosts, h[i], strlen(h[i]), NULL);
        if (k < 0) {
            pflex_slurm_hostlist_free(h, n);
            return pflex_error_set(err, "%s:%u: out of memory", file, line);
        }
        j->hosts[i] = (uint32_t)k;
    }
    j->nhosts = n;
    j->has_hosts = 1;
    pflex_slurm_hostlist_free(h, n);
    return 0;
}

/* Entries for host id h from a GRES detail. */
static int add_gres(pflex_jobmap_t *m, struct job *j, uint32_t h, const char *g, size_t gl,
                    const char *file, unsigned line, int *gpus, pflex_error_t *err)
{
    unsigned char set[PFLEX_SLURM_MAX_GPUS];
    pflex_error_t e2;
    int got = pflex_jm_gres_parse(g, gl, set, &e2);
    if (got == -1)
        return pflex_error_set(err, "%s:%u: job %s: %s", file, line, j->id, e2.text);
    if (got == -2) {
        *gpus = -1;
        return pflex_jm_add_entry(m, j, h, -1, line, file, err);
    }
    for (int k = 0; k < PFLEX_SLURM_MAX_GPUS; k++)
        if (set[k] && pflex_jm_add_entry(m, j, h, k, line, file, err) < 0)
            return -1;
    if (*gpus >= 0)
        *gpus += got;
    return 0;
}

static int state_running(const char *s, size_t n)
{
    return n == 7 && memcmp(s, "RUNNING", 7) == 0;
}

/* No GPU detail: one unknown entry per host. */
static int unknown_entries(pflex_jobmap_t *m, struct job *j, const char *file,
                           pflex_error_t *err)
{
    for (size_t i = 0; i < j->nhosts; i++)
        if (pflex_jm_add_entry(m, j, j->hosts[i], -1, j->line, file, err) < 0)
            return -1;
    return 0;
}

static int read_squeue_text(pflex_jobmap_t *m, const char *buf, size_t len, const char *file,
                            pflex_error_t *err)
{
    const char *p = buf, *end = buf + len;
    unsigned line = 0;
    char eb[48];
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        size_t n = (size_t)(le - p);
        if (n && p[n - 1] == '\r')
            n--;
        const char *s = p;
        p = nl ? nl + 1 : end;
        size_t b = 0;
        while (b < n && (s[b] == ' ' || s[b] == '\t'))
            b++;
        if (b == n || s[b] == '#')     /* blank, or a comment of ours */
            continue;
        const char *f[5];
        size_t fl[5], k = 0, a = b;
        for (size_t i = b; i <= n && k < 5; i++)
            if (i == n || (s[i] == '|' && k < 4)) {
                f[k] = s + a;
                fl[k++] = i - a;
                a = i + 1;
            }
        if (k < 5)
            return pflex_error_set(err, "%s:%u: %zu '|'-separated fields, expected 5 "
                                   "(squeue --noheader -o '%%A|%%T|%%D|%%N|%%j')", file, line,
                                   k);
        if (line == 1 && fl[0] == 5 && memcmp(f[0], "JOBID", 5) == 0)
            continue;       /* a header: squeue without --noheader */
        struct job j = {0};
        j.src = file;
        j.line = line;
        if (pflex_jm_set_id(&j, f[0], fl[0], file, line, 1, err) < 0
            || pflex_jm_set_name(&j, f[4], fl[4], file, line, err) < 0)
            goto fail;
        j.running = state_running(f[1], fl[1]);
        for (size_t i = 0; i < fl[1]; i++)
            if (!isupper((unsigned char)f[1][i]) && f[1][i] != '_') {
                pflex_error_set(err, "%s:%u: job %s: state '%s' is not a Slurm job state",
                                file, line, j.id, pflex_jm_excerpt(eb, f[1], fl[1]));
                goto fail;
            }
        if (j.running) {
            if (set_hosts(m, &j, f[3], fl[3], file, line, err) < 0)
                goto fail;
            long nn = pflex_jm_num(f[2], fl[2]);
            if (nn < 0) {
                pflex_error_set(err, "%s:%u: job %s: node count '%s' is not a number", file,
                                line, j.id, pflex_jm_excerpt(eb, f[2], fl[2]));
                goto fail;
            }
            if ((size_t)nn != j.nhosts) {
                pflex_error_set(err, "%s:%u: job %s: %ld nodes but its node list has %zu",
                                file, line, j.id, nn, j.nhosts);
                goto fail;
            }
            if (unknown_entries(m, &j, file, err) < 0)
                goto fail;
        }
        if (pflex_jm_job_finish(m, &j, file, err) < 0 || pflex_jm_merge(m, &j, err) < 0)
            goto fail;
        continue;
fail:
        m->entries -= j.ne;
        pflex_jm_job_fini(&j);
        return -1;
    }
    return 0;
}

/* The line of each "job_id" key in the text, in order: where each job of
 * jobs[] starts (one pass; lines[k] = 1 past the ones found). */
static void json_job_lines(const char *buf, size_t len, unsigned *lines, size_t nlines)
{
    unsigned line = 1;
    size_t seen = 0;
    for (size_t k = 0; k < nlines; k++)
        lines[k] = 1;
    for (size_t i = 0; i + 8 <= len && seen < nlines; i++) {
        if (buf[i] == '\n')
            line++;
        else if (buf[i] == '"' && memcmp(buf + i, "\"job_id\"", 8) == 0)
            lines[seen++] = line;
    }
}

/* An integer that is plain (v0.0.39) or {"set": true, "number": N} (v0.0.40+). */
static int json_number(json_t *v, long long *out)
{
    if (json_is_object(v)) {
        json_t *set = json_object_get(v, "set");
        if (set && !json_is_true(set))
            return -1;
        v = json_object_get(v, "number");
    }
    if (!json_is_integer(v))
        return -1;
    *out = json_integer_value(v);
    return 0;
}

static int read_squeue_json(pflex_jobmap_t *m, const char *buf, size_t len, const char *file,
                            pflex_error_t *err)
{
    json_error_t je;
    json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return pflex_error_set(err, "%s:%d: %s", file, je.line > 0 ? je.line : 1, je.text);
    json_t *jobs = json_object_get(doc, "jobs");
    unsigned *lines = NULL;
    int rc = -1;
    if (!json_is_array(jobs)) {
        pflex_error_set(err, "%s:1: no \"jobs\" array (expected squeue --json output)", file);
        goto done;
    }
    size_t nj = json_array_size(jobs);
    lines = malloc((nj ? nj : 1) * sizeof *lines);
    if (!lines) {
        pflex_error_set(err, "%s: out of memory", file);
        goto done;
    }
    json_job_lines(buf, len, lines, nj);
    for (size_t k = 0; k < nj; k++) {
        json_t *o = json_array_get(jobs, k);
        unsigned line = lines[k];
        struct job j = {0};
        j.src = file;
        j.line = line;
        long long id;
        char idb[32];
        if (!json_is_object(o) || json_number(json_object_get(o, "job_id"), &id) < 0 || id < 0
            || id > 4294967295LL) {
            pflex_error_set(err, "%s:%u: jobs[%zu]: no \"job_id\" number", file, line, k);
            goto fail;
        }
        snprintf(idb, sizeof idb, "%lld", id);
        if (pflex_jm_set_id(&j, idb, strlen(idb), file, line, 1, err) < 0)
            goto fail;
        json_t *nm = json_object_get(o, "name");
        if (nm && !json_is_string(nm)) {
            pflex_error_set(err, "%s:%u: job %s: \"name\" is not a string", file, line, j.id);
            goto fail;
        }
        if (pflex_jm_set_name(&j, nm ? json_string_value(nm) : "", nm ? json_string_length(nm) : 0,
                     file, line, err) < 0)
            goto fail;
        json_t *st = json_object_get(o, "job_state");   /* ["RUNNING"] or "RUNNING" */
        if (json_is_array(st)) {
            for (size_t q = 0; q < json_array_size(st); q++) {
                json_t *x = json_array_get(st, q);
                if (json_is_string(x) && strcmp(json_string_value(x), "RUNNING") == 0)
                    j.running = 1;
            }
        } else if (json_is_string(st)) {
            j.running = strcmp(json_string_value(st), "RUNNING") == 0;
        } else {
            pflex_error_set(err, "%s:%u: job %s: no \"job_state\"", file, line, j.id);
            goto fail;
        }
        if (j.running) {
            json_t *nodes = json_object_get(o, "nodes");
            if (!json_is_string(nodes)) {
                pflex_error_set(err, "%s:%u: job %s: no \"nodes\" string", file, line, j.id);
                goto fail;
            }
            if (set_hosts(m, &j, json_string_value(nodes), json_string_length(nodes), file,
                          line, err) < 0)
                goto fail;
            long long nc;
            if (json_number(json_object_get(o, "node_count"), &nc) == 0
                && nc != (long long)j.nhosts) {
                pflex_error_set(err, "%s:%u: job %s: node_count %lld but \"nodes\" has %zu",
                                file, line, j.id, nc, j.nhosts);
                goto fail;
            }
            json_t *gd = json_object_get(o, "gres_detail");
            if (!gd) {
                if (unknown_entries(m, &j, file, err) < 0)
                    goto fail;
            } else if (!json_is_array(gd)
                       || (json_array_size(gd) && json_array_size(gd) != j.nhosts)) {
                pflex_error_set(err, "%s:%u: job %s: \"gres_detail\" is not an array of one "
                                "string per node (%zu nodes)", file, line, j.id, j.nhosts);
                goto fail;
            } else {
                /* gres_detail[i] belongs to the i-th node of "nodes" */
                char **h;
                size_t n;
                pflex_error_t e2;
                if (pflex_slurm_hostlist_expand(json_string_value(nodes),
                                                json_string_length(nodes),
                                                PFLEX_SLURM_MAX_HOSTS, &h, &n, &e2) < 0) {
                    pflex_error_set(err, "%s:%u: %s", file, line, e2.text);
                    goto fail;
                }
                int gpus = 0, bad = 0;
                for (size_t q = 0; q < json_array_size(gd) && !bad; q++) {
                    json_t *x = json_array_get(gd, q);
                    long hk = pflex_strtab_intern(&m->hosts, h[q], strlen(h[q]), NULL);
                    if (!json_is_string(x)) {
                        pflex_error_set(err, "%s:%u: job %s: gres_detail[%zu] is not a "
                                        "string", file, line, j.id, q);
                        bad = 1;
                    } else if (hk < 0) {
                        pflex_error_set(err, "%s:%u: out of memory", file, line);
                        bad = 1;
                    } else if (add_gres(m, &j, (uint32_t)hk, json_string_value(x),
                                        json_string_length(x), file, line, &gpus, err) < 0) {
                        bad = 1;
                    }
                }
                pflex_slurm_hostlist_free(h, n);
                if (bad)
                    goto fail;
                j.detail = 1;
            }
        }
        if (pflex_jm_job_finish(m, &j, file, err) < 0 || pflex_jm_merge(m, &j, err) < 0)
            goto fail;
        continue;
fail:
        m->entries -= j.ne;
        pflex_jm_job_fini(&j);
        goto done;
    }
    rc = 0;
done:
    free(lines);
    json_decref(doc);
    return rc;
}

int pflex_slurm_squeue_read_mem(pflex_jobmap_t *m, const char *buf, size_t len,
                                const char *name, pflex_error_t *err)
{
    const char *file = name ? name : "-";
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    pflex_jm_rows_reset(m);
    if (!(file = pflex_jm_src_name(m, file, err)))
        return -1;
    if (i < len && buf[i] == '{')
        return read_squeue_json(m, buf, len, file, err);
    return read_squeue_text(m, buf, len, file, err);
}

struct tok {
    const char *k, *v;
    size_t kl, vl;
};

/* Next KEY=VALUE token of the line s[*i..n).  Returns 1, 0 at the end of the
 * line, -1 for a word without '='. */
static int next_tok(const char *s, size_t n, size_t *i, struct tok *t)
{
    while (*i < n && (s[*i] == ' ' || s[*i] == '\t'))
        (*i)++;
    if (*i >= n)
        return 0;
    size_t a = *i;
    while (*i < n && s[*i] != ' ' && s[*i] != '\t')
        (*i)++;
    const char *eq = memchr(s + a, '=', *i - a);
    t->k = s + a;
    if (!eq) {
        t->kl = *i - a;
        t->v = NULL;
        t->vl = 0;
        return -1;
    }
    t->kl = (size_t)(eq - (s + a));
    t->v = eq + 1;
    t->vl = (size_t)(s + *i - t->v);
    return 1;
}

static int key_is(const struct tok *t, const char *k)
{
    return t->kl == strlen(k) && memcmp(t->k, k, t->kl) == 0;
}

/* gres/gpu=N out of a TRES list "cpu=8,mem=64G,node=1,gres/gpu=8"; -1 when
 * absent. */
static long tres_gpus(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t a = i;
        while (i < n && s[i] != ',')
            i++;
        if (i - a > 9 && memcmp(s + a, "gres/gpu=", 9) == 0) {
            long v = 0;
            size_t q = a + 9;
            if (q == i || i - q > 7)
                return -1;
            for (; q < i; q++) {
                if (!isdigit((unsigned char)s[q]))
                    return -1;
                v = v * 10 + (s[q] - '0');
            }
            return v;
        }
        i++;
    }
    return -1;
}

struct srec {           /* one scontrol record being read */
    struct job j;
    int have_state, in_use;
    long tres;          /* gres/gpu of AllocTRES (or TRES), -1 unknown */
    int tres_alloc;     /* tres came from AllocTRES */
    long num_nodes;
    unsigned nodelist_line;
    const char *nodelist;
    size_t nodelist_len;
    int groups;         /* detail lines */
    int gpus;           /* GPUs with indices, -1 when some are unknown */
    uint32_t *covered;  /* hosts named by detail lines */
    size_t ncovered, capcovered;
    uint32_t pending_hosts_from, pending_hosts_to;   /* the last Nodes= group */
    unsigned pending_line;
    int pending;        /* a Nodes= group still waiting for its GRES= */
    char **group_hosts;
    size_t ngroup_hosts;
};

static void srec_reset(struct srec *r)
{
    pflex_jm_job_fini(&r->j);
    free(r->covered);
    pflex_slurm_hostlist_free(r->group_hosts, r->ngroup_hosts);
    memset(r, 0, sizeof *r);
    r->tres = -1;
    r->num_nodes = -1;
}

/* The GRES of the pending Nodes= group (empty: no GRES on those nodes;
 * NULL: the line has no GRES= field, the GPUs are unknown). */
static int close_group(pflex_jobmap_t *m, struct srec *r, const char *g, size_t gl,
                       const char *file, pflex_error_t *err)
{
    if (!r->pending)
        return 0;
    r->pending = 0;
    for (size_t q = 0; q < r->ngroup_hosts; q++) {
        long hk = pflex_strtab_intern(&m->hosts, r->group_hosts[q], strlen(r->group_hosts[q]), NULL);
        int bad;
        if (hk < 0)
            return pflex_error_set(err, "%s:%u: out of memory", file, r->pending_line);
        if (r->ncovered == r->capcovered) {
            size_t nc = r->capcovered ? r->capcovered * 2 : 16;
            uint32_t *nv = realloc(r->covered, nc * sizeof *nv);
            if (!nv)
                return pflex_error_set(err, "%s:%u: out of memory", file, r->pending_line);
            r->covered = nv;
            r->capcovered = nc;
        }
        r->covered[r->ncovered++] = (uint32_t)hk;
        if (!g) {       /* a detail line without GRES= (before Slurm 17.11): unknown */
            r->gpus = -1;
            bad = pflex_jm_add_entry(m, &r->j, (uint32_t)hk, -1, r->pending_line, file, err);
        } else {
            bad = add_gres(m, &r->j, (uint32_t)hk, g, gl, file, r->pending_line, &r->gpus,
                           err);
        }
        if (bad < 0)
            return -1;
    }
    pflex_slurm_hostlist_free(r->group_hosts, r->ngroup_hosts);
    r->group_hosts = NULL;
    r->ngroup_hosts = 0;
    return 0;
}

static int finish_record(pflex_jobmap_t *m, struct srec *r, const char *file,
                         pflex_error_t *err)
{
    struct job *j = &r->j;
    if (!r->in_use)
        return 0;
    if (close_group(m, r, NULL, 0, file, err) < 0)
        return -1;
    if (!r->have_state)
        return pflex_error_set(err, "%s:%u: job %s has no JobState=", file, j->line, j->id);
    if (!j->name && pflex_jm_set_name(j, "", 0, file, j->line, err) < 0)
        return -1;
    if (j->running) {
        if (!r->nodelist)
            return pflex_error_set(err, "%s:%u: running job %s has no NodeList=", file,
                                   j->line, j->id);
        if (set_hosts(m, j, r->nodelist, r->nodelist_len, file, r->nodelist_line, err) < 0)
            return -1;
        if (r->num_nodes >= 0 && (size_t)r->num_nodes != j->nhosts)
            return pflex_error_set(err, "%s:%u: job %s: NumNodes=%ld but its NodeList has "
                                   "%zu hosts", file, r->nodelist_line, j->id, r->num_nodes,
                                   j->nhosts);
        if (r->groups) {
            if (j->nhosts)
                qsort(j->hosts, j->nhosts, sizeof *j->hosts, pflex_jm_cmp_u32);
            if (r->ncovered)
                qsort(r->covered, r->ncovered, sizeof *r->covered, pflex_jm_cmp_u32);
            for (size_t q = 0; q < r->ncovered; q++) {
                if (!pflex_jm_in_hosts(j, r->covered[q]))
                    return pflex_error_set(err, "%s:%u: job %s: detail line names host '%s', "
                                           "which is not in its NodeList", file, j->line,
                                           j->id, m->hosts.s[r->covered[q]]);
                if (q && r->covered[q] == r->covered[q - 1])
                    return pflex_error_set(err, "%s:%u: job %s: host '%s' is on two detail "
                                           "lines", file, j->line, j->id,
                                           m->hosts.s[r->covered[q]]);
            }
            if (r->ncovered != j->nhosts)
                return pflex_error_set(err, "%s:%u: job %s: %zu of its %zu hosts have no "
                                       "Nodes= detail line", file, j->line, j->id,
                                       j->nhosts - r->ncovered, j->nhosts);
            j->detail = 1;
            if (r->gpus >= 0 && r->tres >= 0 && r->tres != r->gpus)
                return pflex_error_set(err, "%s:%u: job %s: %s gres/gpu=%ld but its detail "
                                       "lines list %d GPUs", file, j->line, j->id,
                                       r->tres_alloc ? "AllocTRES" : "TRES", r->tres,
                                       r->gpus);
        } else if (unknown_entries(m, j, file, err) < 0) {
            return -1;
        }
    }
    if (pflex_jm_job_finish(m, j, file, err) < 0)
        return -1;
    int rc = pflex_jm_merge(m, j, err);
    srec_reset(r);
    return rc;
}

/* Is this line the start of a record ("JobId=" its first token)? */
static int starts_record(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return n - i >= 6 && memcmp(s + i, "JobId=", 6) == 0;
}

int pflex_slurm_scontrol_read_mem(pflex_jobmap_t *m, const char *buf, size_t len,
                                  const char *name, pflex_error_t *err)
{
    const char *file = name ? name : "-";
    const char *p = buf, *end = buf + len;
    unsigned line = 0;
    struct srec r;
    char eb[48];
    memset(&r, 0, sizeof r);
    srec_reset(&r);
    pflex_jm_rows_reset(m);
    if (!(file = pflex_jm_src_name(m, file, err)))
        return -1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *s = p;
        size_t n = (size_t)((nl ? nl : end) - p);
        p = nl ? nl + 1 : end;
        line++;
        if (n && s[n - 1] == '\r')
            n--;
        size_t b = 0;
        while (b < n && (s[b] == ' ' || s[b] == '\t'))
            b++;
        if (b == n) {                       /* a blank line ends a record */
            if (finish_record(m, &r, file, err) < 0)
                goto fail;
            continue;
        }
        if (s[b] == '#')                    /* a comment of ours, never Slurm's */
            continue;
        if (starts_record(s, n)) {
            if (finish_record(m, &r, file, err) < 0)
                goto fail;
            r.in_use = 1;
            r.j.src = file;
            r.j.line = line;
        } else if (!r.in_use) {
            if (n - b == 21 && memcmp(s + b, "No jobs in the system", 21) == 0)
                continue;
            pflex_error_set(err, "%s:%u: '%s' is not part of a job record (expected "
                            "'JobId=...', the output of scontrol show job -d)", file, line,
                            pflex_jm_excerpt(eb, s + b, n - b));
            goto fail;
        }
        size_t i = 0;
        struct tok t;
        int got;
        while ((got = next_tok(s, n, &i, &t)) != 0) {
            if (got < 0) {
                /* a word without '=': part of a value with spaces we do not read
                 * (Command=, WorkDir=, Comment=...); ignored */
                continue;
            }
            if (key_is(&t, "JobId")) {
                if (r.j.id) {
                    pflex_error_set(err, "%s:%u: a second JobId= in one record", file, line);
                    goto fail;
                }
                if (pflex_jm_set_id(&r.j, t.v, t.vl, file, line, 1, err) < 0)
                    goto fail;
            } else if (key_is(&t, "JobName")) {
                /* the name runs to the end of the line (it may hold spaces); one
                 * record a line (-o): to the next " UserId=" */
                size_t ve = n;
                for (size_t q = (size_t)(t.v - s); q + 8 <= n; q++)
                    if (memcmp(s + q, " UserId=", 8) == 0
                        || (q + 13 <= n && memcmp(s + q, " HetJobIdSet=", 13) == 0)) {
                        ve = q;
                        break;
                    }
                if (pflex_jm_set_name(&r.j, t.v, ve - (size_t)(t.v - s), file, line, err) < 0)
                    goto fail;
                i = ve;
            } else if (key_is(&t, "JobState")) {
                r.j.running = state_running(t.v, t.vl);
                r.have_state = 1;
            } else if (key_is(&t, "NodeList")) {
                r.nodelist = t.v;
                r.nodelist_len = t.vl;
                r.nodelist_line = line;
            } else if (key_is(&t, "NumNodes")) {
                r.num_nodes = pflex_jm_num(t.v, t.vl);
            } else if (key_is(&t, "AllocTRES") || (key_is(&t, "TRES") && !r.tres_alloc)) {
                r.tres = tres_gpus(t.v, t.vl);
                r.tres_alloc = key_is(&t, "AllocTRES");
            } else if (key_is(&t, "Nodes")) {
                if (!r.j.id) {
                    pflex_error_set(err, "%s:%u: Nodes= before JobId=", file, line);
                    goto fail;
                }
                if (close_group(m, &r, NULL, 0, file, err) < 0)
                    goto fail;
                pflex_error_t e2;
                if (pflex_slurm_hostlist_expand(t.v, t.vl, PFLEX_SLURM_MAX_HOSTS,
                                                &r.group_hosts, &r.ngroup_hosts, &e2) < 0) {
                    pflex_error_set(err, "%s:%u: job %s: Nodes=: %s", file, line, r.j.id,
                                    e2.text);
                    goto fail;
                }
                r.pending = 1;
                r.pending_line = line;
                r.groups++;
            } else if (key_is(&t, "Command") || key_is(&t, "WorkDir")
                       || key_is(&t, "Comment") || key_is(&t, "AdminComment")
                       || key_is(&t, "SystemComment") || key_is(&t, "Extra")
                       || key_is(&t, "StdErr") || key_is(&t, "StdIn")
                       || key_is(&t, "StdOut")) {
                /* free text that may hold spaces and "Key=" words: the rest of
                 * the line is its value, never fields of ours */
                i = n;
            } else if (key_is(&t, "GRES") || key_is(&t, "GRES_IDX")) {
                if (r.pending && close_group(m, &r, t.v, t.vl, file, err) < 0)
                    goto fail;
            }
        }
        if (!r.j.id) {
            pflex_error_set(err, "%s:%u: JobId= is not a job id", file, line);
            goto fail;
        }
    }
    if (finish_record(m, &r, file, err) < 0)
        goto fail;
    srec_reset(&r);
    return 0;
fail:
    m->entries -= r.j.ne;
    srec_reset(&r);
    return -1;
}

int pflex_slurm_squeue_read_file(pflex_jobmap_t *m, const char *path, pflex_error_t *err)
{
    return pflex_jm_read_file(m, path, pflex_slurm_squeue_read_mem, err);
}

int pflex_slurm_scontrol_read_file(pflex_jobmap_t *m, const char *path, pflex_error_t *err)
{
    return pflex_jm_read_file(m, path, pflex_slurm_scontrol_read_mem, err);
}
