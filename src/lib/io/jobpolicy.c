/* jobpolicy.c — the controller's per-job floors, weights and priors, a CSV
 * (pflex/io/jobpolicy.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/io/csv.h"
#include "pflex/io/jobpolicy.h"
#include "pflex/io/sweep.h"

#define MAX_JOBS 1000000

enum { C_JOB, C_FLOOR, C_TIER, C_WEIGHT, C_PFI, C_LEVERS, C_BUDGET, C_MAXPAUSE, C_N };
static const char *const names[C_N] = {"job", "floor", "tier", "weight", "pfi", "levers", "loss_budget",
                                       "max_pause"};

/* "cap+pause" into PFLEX_LEVER_* bits; -1 on an unknown lever or an empty list. */
static int parse_levers(const char *v, unsigned *out)
{
    unsigned bits = 0;
    const char *s = v;
    for (;;) {
        size_t n = strcspn(s, "+");
        if (n == 3 && !strncmp(s, "cap", 3))
            bits |= PFLEX_LEVER_CAP;
        else if (n == 5 && !strncmp(s, "pause", 5))
            bits |= PFLEX_LEVER_PAUSE;
        else
            return -1;
        if (!s[n])
            break;
        s += n + 1;
    }
    *out = bits;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    const struct pflex_job_policy *x = a, *y = b;
    int c = strcmp(x->job, y->job);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

void pflex_job_policies_fini(pflex_job_policies_t *p)
{
    free(p->p);
    p->p = NULL;
    p->n = 0;
}

static int field(const pflex_csv_t *c, int idx, char *buf, size_t size)
{
    if (idx < 0 || (size_t)idx >= c->nfields)
        return 0;
    const struct pflex_csv_field *f = &c->fields[idx];
    if (f->len >= size)
        return -1;
    memcpy(buf, f->s, f->len);
    buf[f->len] = '\0';
    return f->len > 0;
}

int pflex_job_policies_read_mem(const char *buf, size_t len, const char *name,
                                pflex_job_policies_t *out, pflex_error_t *err)
{
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, name);
    pflex_job_policies_t res = {0};
    size_t cap = 0;
    int idx[C_N], got, rc = -1;
    for (int k = 0; k < C_N; k++)
        idx[k] = -1;
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (!got)
            pflex_error_set(err, "%s:1: empty (expected a header: job,floor,weight,pfi)", name);
        goto out;
    }
    for (size_t f = 0; f < c.nfields; f++)
        for (int k = 0; k < C_N; k++)
            if (idx[k] < 0 && pflex_csv_field_is(&c.fields[f], names[k]))
                idx[k] = (int)f;
    if (idx[C_JOB] < 0) {
        pflex_error_set(err, "%s:%u: the header needs a 'job' column", name, c.line);
        goto out;
    }
    if (idx[C_FLOOR] >= 0 && idx[C_TIER] >= 0) {
        pflex_error_set(err, "%s:%u: give 'floor' or 'tier', not both", name, c.line);
        goto out;
    }
    while ((got = pflex_csv_next(&c, err)) == 1) {
        struct pflex_job_policy p = {.floor = NAN, .weight = 1, .pfi = NAN, .levers = PFLEX_LEVER_CAP};
        char v[128];
        int r = field(&c, idx[C_JOB], p.job, sizeof p.job);
        if (r <= 0) {
            pflex_error_set(err, "%s:%u: column 'job': %s", name, c.line, r < 0 ? "longer than 63 characters" : "missing");
            goto out;
        }
        p.line = c.line;
        for (int k = C_FLOOR; k < C_N; k++) {
            r = field(&c, idx[k], v, sizeof v);
            if (r < 0) {
                pflex_error_set(err, "%s:%u: column '%s': too long", name, c.line, names[k]);
                goto out;
            }
            if (!r)
                continue;
            if (k == C_TIER) {
                if (pflex_tier_floor(v, &p.floor) < 0) {
                    pflex_error_set(err, "%s:%u: column 'tier': '%s' is not flex0..flex3", name, c.line, v);
                    goto out;
                }
                continue;
            }
            if (k == C_LEVERS) {
                if (parse_levers(v, &p.levers) < 0) {
                    pflex_error_set(err, "%s:%u: column 'levers': '%s' is not a '+'-list of cap, pause",
                                    name, c.line, v);
                    goto out;
                }
                continue;
            }
            double x;
            size_t vl = strlen(v);
            int pct = k == C_BUDGET && vl > 1 && v[vl - 1] == '%';
            if (k == C_BUDGET || k == C_MAXPAUSE) {
                if (pflex_parse_double(v, vl - (size_t)pct, &x) < 0 || !(x >= 0)
                    || (k == C_BUDGET && !(x <= (pct ? 100 : 1))) || (k == C_MAXPAUSE && !(x <= 30 * 86400.0))) {
                    pflex_error_set(err, "%s:%u: column '%s': '%s' is out of range (%s)", name, c.line,
                                    names[k], v, k == C_BUDGET ? "0..1 or 0%..100%" : "0..2592000 s");
                    goto out;
                }
                if (k == C_BUDGET)
                    p.loss_budget = pct ? x / 100 : x;
                else
                    p.max_pause_s = x;
                continue;
            }
            if (pflex_parse_double(v, strlen(v), &x) < 0
                || (k == C_FLOOR && !(x >= 0 && x <= 1)) || (k == C_WEIGHT && !(x >= 0 && x <= 1e6))
                || (k == C_PFI && !(x > 0 && x <= 1e3))) {
                pflex_error_set(err, "%s:%u: column '%s': '%s' is out of range (%s)", name, c.line,
                                names[k], v, k == C_FLOOR ? "0..1" : k == C_WEIGHT ? "0..1e6" : "> 0");
                goto out;
            }
            if (k == C_FLOOR)
                p.floor = x;
            else if (k == C_WEIGHT)
                p.weight = x;
            else
                p.pfi = x;
        }
        if (res.n == MAX_JOBS) {
            pflex_error_set(err, "%s:%u: more than %d jobs", name, c.line, MAX_JOBS);
            goto out;
        }
        if (res.n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            struct pflex_job_policy *np = realloc(res.p, nc * sizeof *np);
            if (!np) {
                pflex_error_set(err, "out of memory");
                goto out;
            }
            res.p = np;
            cap = nc;
        }
        res.p[res.n++] = p;
    }
    if (got < 0)
        goto out;
    /* a job named twice: sorted by name, then by line, neighbours meet */
    if (res.n > 1) {
        struct pflex_job_policy *sorted = malloc(res.n * sizeof *sorted);
        if (!sorted) {
            pflex_error_set(err, "out of memory");
            goto out;
        }
        memcpy(sorted, res.p, res.n * sizeof *sorted);
        qsort(sorted, res.n, sizeof *sorted, by_name);
        for (size_t i = 1; i < res.n; i++)
            if (!strcmp(sorted[i].job, sorted[i - 1].job)) {
                pflex_error_set(err, "%s:%u: column 'job': '%s' named twice (first on line %u)", name,
                                sorted[i].line, sorted[i].job, sorted[i - 1].line);
                free(sorted);
                goto out;
            }
        free(sorted);
    }
    *out = res;
    res.p = NULL;
    rc = 0;
out:
    free(res.p);
    pflex_csv_fini(&c);
    return rc;
}

int pflex_job_policies_read(const char *path, pflex_job_policies_t *out, pflex_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return pflex_error_set(err, "%s: %s", path, strerror(errno));
    char *buf = malloc(16u << 20);
    if (!buf) {
        fclose(f);
        return pflex_error_set(err, "out of memory");
    }
    size_t len = fread(buf, 1, 16u << 20, f);
    int big = len == (16u << 20), bad = ferror(f);
    fclose(f);
    int rc;
    if (big || bad)
        rc = pflex_error_set(err, "%s: %s", path, big ? "larger than 16 MiB" : "read error");
    else
        rc = pflex_job_policies_read_mem(buf, len, path, out, err);
    free(buf);
    return rc;
}

const struct pflex_job_policy *pflex_job_policy_find(const pflex_job_policies_t *p, const char *job)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (!strcmp(p->p[i].job, job))
            return &p->p[i];
    return NULL;
}

int pflex_job_policy_pausable(const struct pflex_job_policy *p)
{
    return p && (p->levers & PFLEX_LEVER_PAUSE) && p->loss_budget > 0 && p->max_pause_s > 0;
}
