/* fieldpol.c — the field demonstration's four policies as baselines
 * (pflex/site/fieldpol.h; docs/levers.md restates each rule). */
#include "pflex/site/fieldpol.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Candidate sets of the staggered pauses are tried exhaustively: past
 * this many candidates only the most flexible are tried. */
#define MAX_CAND 12

const char *pflex_fieldpol_name(enum pflex_fieldpol p)
{
    static const char *n[] = {"field-dvfs", "field-dvfs-pause", "field-pause", "field-resize"};
    return (unsigned)p < PFLEX_FIELD_N ? n[p] : "?";
}

/* The share of its progress a job may lose over the event. */
static double flex_of(const struct pflex_horizon_job *h)
{
    if (isfinite(h->loss_budget))
        return h->loss_budget > 0 ? h->loss_budget : 0;
    return h->floor > 0 ? 1 - h->floor : 0;
}

/* A job's largest cap and the least cap that keeps its least throughput
 * in every period (1 - flexibility, and its floor). */
static double cap_max(const struct pflex_fieldpol_job *j) { return j->kind->cap_w[0]; }

static double cap_least(const struct pflex_fieldpol_job *j)
{
    const struct pflex_sim_kind *k = j->kind;
    double fl = 1 - flex_of(j->hz);
    if (j->hz->floor > fl)
        fl = j->hz->floor;
    if (!(j->hz->levers & PFLEX_LEVER_CAP))
        return k->cap_w[0];
    size_t e = 0;
    for (size_t i = 0; i < k->n; i++)
        if (k->fraction[i] >= fl - 1e-12)
            e = i;
    return k->cap_w[e];
}

static struct pflex_horizon_choice full(const struct pflex_fieldpol_job *j)
{
    return (struct pflex_horizon_choice){PFLEX_HZ_CAP, cap_max(j), 1, j->hz->gpus};
}

static struct pflex_horizon_choice at_cap(const struct pflex_fieldpol_job *j, double cap)
{
    double pw, f;
    pflex_sim_kind_at(j->kind, cap, &pw, &f);
    return (struct pflex_horizon_choice){PFLEX_HZ_CAP, cap, f, j->hz->gpus};
}

/* The lever that holds a job off for m periods of dt: a pause where it
 * allows one that long, else a stop; -1: neither. */
static int off_lever(const struct pflex_horizon_job *h, double run_s, enum pflex_horizon_what *w)
{
    if (h->floor > 0)           /* off is under any per-period floor */
        return -1;
    if ((h->levers & PFLEX_LEVER_PAUSE) && run_s <= h->max_pause_s) {
        *w = PFLEX_HZ_PAUSE;
        return 0;
    }
    if (h->levers & PFLEX_LEVER_STOP) {
        *w = PFLEX_HZ_STOP;
        return 0;
    }
    return -1;
}

/* What an off lever costs over a run: the time, and a stop's checkpoint
 * and restart. */
static double off_cost_s(const struct pflex_horizon_job *h, enum pflex_horizon_what w, double run_s)
{
    return run_s + (w == PFLEX_HZ_STOP ? h->ckpt_s + h->restart_s : 0);
}

static double off_power(const struct pflex_horizon_job *h, enum pflex_horizon_what w)
{
    return w == PFLEX_HZ_PAUSE ? h->idle_w * h->gpus : 0;
}

/* DVFS fair on the jobs in mask within budget_w: every job from its
 * largest cap gives the same share of its headroom (its largest cap less
 * its least, times its GPUs), the share the budget needs; caps rounded
 * down to whole watts.  1 where the budget is met. */
static int dvfs_fair(size_t n, const struct pflex_fieldpol_job *jobs, const unsigned char *mask, double budget_w,
                     struct pflex_horizon_choice *x, size_t stride)
{
    double top = 0, head = 0;
    for (size_t j = 0; j < n; j++)
        if (mask[j]) {
            top += cap_max(&jobs[j]) * jobs[j].hz->gpus;
            head += (cap_max(&jobs[j]) - cap_least(&jobs[j])) * jobs[j].hz->gpus;
        }
    double need = top - budget_w;
    double share = need <= 0 ? 0 : head > 0 ? need / head : INFINITY;
    int met = share <= 1;
    if (share > 1)
        share = 1;
    for (size_t j = 0; j < n; j++) {
        if (!mask[j])
            continue;
        double c = cap_max(&jobs[j]) - share * (cap_max(&jobs[j]) - cap_least(&jobs[j]));
        if (share > 0)
            c = floor(c);
        if (c < cap_least(&jobs[j]))
            c = cap_least(&jobs[j]);
        x[j * stride] = share > 0 ? at_cap(&jobs[j], c) : full(&jobs[j]);
    }
    return met;
}

static void plan_dvfs(size_t n, const struct pflex_fieldpol_job *jobs, size_t T, const double *limit_w,
                      double other_w, struct pflex_horizon_choice *x, unsigned char *mask)
{
    memset(mask, 1, n);
    for (size_t t = 0; t < T; t++) {
        if (!isfinite(limit_w[t])) {
            for (size_t j = 0; j < n; j++)
                x[j * T + t] = full(&jobs[j]);
            continue;
        }
        dvfs_fair(n, jobs, mask, limit_w[t] - other_w, x + t, T);
    }
}

/* Staggered pauses of the set S (bit i: cand[i]), caps on the rest by
 * DVFS fair: the watts shed over the event, or INFINITY where a period's
 * budget or a member's contract is not met.  x: the plan. */
static double try_set(size_t n, const struct pflex_fieldpol_job *jobs, const size_t *cand, unsigned S, size_t T,
                      const double *dt, const double *limit_w, double other_w, struct pflex_horizon_choice *x,
                      unsigned char *mask)
{
    size_t mem[MAX_CAND], m = 0;
    for (size_t i = 0; i < MAX_CAND; i++)
        if (S & (1u << i))
            mem[m++] = cand[i];
    double event_s = 0;
    for (size_t t = 0; t < T; t++)
        event_s += dt[t];
    /* each member's turn: the periods t with t * m / T == its place */
    enum pflex_horizon_what lev[MAX_CAND];
    for (size_t i = 0; i < m; i++) {
        double run = 0;
        for (size_t t = 0; t < T; t++)
            if (t * m / T == i)
                run += dt[t];
        const struct pflex_horizon_job *h = jobs[mem[i]].hz;
        if (off_lever(h, run, &lev[i]) < 0 || off_cost_s(h, lev[i], run) > flex_of(h) * h->event_s + 1e-9)
            return INFINITY;
    }
    memset(mask, 1, n);
    for (size_t i = 0; i < m; i++)
        mask[mem[i]] = 0;
    double shed = 0;
    for (size_t t = 0; t < T; t++) {
        double used = other_w;
        size_t on = t * m / T;
        for (size_t i = 0; i < m; i++) {
            const struct pflex_fieldpol_job *j = &jobs[mem[i]];
            if (i == on) {
                x[mem[i] * T + t] = (struct pflex_horizon_choice){lev[i], 0, 0, 0};
                used += off_power(j->hz, lev[i]);
                /* a stop's first period: its checkpoint draws idle */
                if (lev[i] == PFLEX_HZ_STOP && (t == 0 || (t - 1) * m / T != i))
                    used += j->hz->idle_w * j->hz->gpus;
            } else {
                x[mem[i] * T + t] = full(j);
                used += cap_max(j) * j->hz->gpus;
            }
        }
        if (!isfinite(limit_w[t])) {
            for (size_t j = 0; j < n; j++)
                if (mask[j])
                    x[j * T + t] = full(&jobs[j]);
            continue;
        }
        if (!dvfs_fair(n, jobs, mask, limit_w[t] - used, x + t, T))
            return INFINITY;
        for (size_t j = 0; j < n; j++) {
            const struct pflex_horizon_choice *c = &x[j * T + t];
            double pw = c->what == PFLEX_HZ_CAP ? c->cap_w * c->gpus : 0;
            shed += (cap_max(&jobs[j]) * jobs[j].hz->gpus - pw) * dt[t];
        }
    }
    return shed;
}

static int plan_dvfs_pause(size_t n, const struct pflex_fieldpol_job *jobs, size_t T, const double *dt,
                           const double *limit_w, double other_w, struct pflex_horizon_choice *x,
                           unsigned char *mask, pflex_error_t *err)
{
    size_t cand[MAX_CAND], nc = 0;
    /* the most flexible first, so that a cut keeps them */
    size_t *ord = malloc(n * sizeof *ord);
    struct pflex_horizon_choice *tmp = malloc(n * T * sizeof *tmp);
    if (!ord || !tmp) {
        free(ord);
        free(tmp);
        return pflex_error_sys(err, "out of memory");
    }
    for (size_t j = 0; j < n; j++)
        ord[j] = j;
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && flex_of(jobs[ord[b]].hz) > flex_of(jobs[ord[b - 1]].hz); b--) {
            size_t s = ord[b];
            ord[b] = ord[b - 1];
            ord[b - 1] = s;
        }
    for (size_t q = 0; q < n && nc < MAX_CAND; q++) {
        const struct pflex_horizon_job *h = jobs[ord[q]].hz;
        if (flex_of(h) > 0 && (h->levers & (PFLEX_LEVER_PAUSE | PFLEX_LEVER_STOP)))
            cand[nc++] = ord[q];
    }
    double best = INFINITY;
    for (unsigned S = 0; S < (1u << nc); S++) {
        if (__builtin_popcount(S) < 2)
            continue;
        double shed = try_set(n, jobs, cand, S, T, dt, limit_w, other_w, tmp, mask);
        if (shed < best) {
            best = shed;
            memcpy(x, tmp, n * T * sizeof *x);
        }
    }
    /* no set meets every period: caps alone, as the first policy */
    if (!isfinite(best))
        plan_dvfs(n, jobs, T, limit_w, other_w, x, mask);
    free(ord);
    free(tmp);
    return 0;
}

static int plan_pause_greedy(size_t n, const struct pflex_fieldpol_job *jobs, size_t T, const double *dt,
                             const double *limit_w, double other_w, struct pflex_horizon_choice *x,
                             pflex_error_t *err)
{
    size_t *ord = malloc(n * sizeof *ord), *left = calloc(n, sizeof *left), *allow = calloc(n, sizeof *allow);
    unsigned char *used = calloc(n, 1);
    enum pflex_horizon_what *lev = calloc(n, sizeof *lev);
    if (!ord || !left || !allow || !used || !lev) {
        free(ord), free(left), free(allow), free(used), free(lev);
        return pflex_error_sys(err, "out of memory");
    }
    double mean_dt = 0;
    for (size_t t = 0; t < T; t++)
        mean_dt += dt[t] / (double)T;
    for (size_t j = 0; j < n; j++) {
        ord[j] = j;
        const struct pflex_horizon_job *h = jobs[j].hz;
        /* the allowance: the most periods off that the budget pays for,
         * a stop's checkpoint and restart included */
        double budget = flex_of(h) * h->event_s;
        size_t a = (size_t)floor(budget / mean_dt + 1e-9);
        while (a > 0 && (off_lever(h, (double)a * mean_dt, &lev[j]) < 0 ||
                         off_cost_s(h, lev[j], (double)a * mean_dt) > budget + 1e-9))
            a--;
        allow[j] = a;
    }
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && flex_of(jobs[ord[b]].hz) > flex_of(jobs[ord[b - 1]].hz); b--) {
            size_t s = ord[b];
            ord[b] = ord[b - 1];
            ord[b - 1] = s;
        }
    size_t next = 0;
    for (size_t t = 0; t < T; t++) {
        for (;;) {
            double pw = other_w;
            for (size_t j = 0; j < n; j++) {
                const struct pflex_horizon_job *h = jobs[j].hz;
                if (left[j]) {
                    pw += off_power(h, lev[j]);
                    if (lev[j] == PFLEX_HZ_STOP && left[j] == allow[j])
                        pw += h->idle_w * h->gpus;  /* its checkpoint */
                } else
                    pw += cap_max(&jobs[j]) * h->gpus;
            }
            if (!isfinite(limit_w[t]) || pw <= limit_w[t])
                break;
            /* the next most flexible job not yet off and with an allowance */
            size_t pick = n;
            for (size_t q = 0; q < n && pick == n; q++) {
                size_t j = ord[(next + q) % n];
                if (!used[j] && !left[j] && allow[j])
                    pick = j, next = (next + q + 1) % n;
            }
            if (pick == n)
                break;      /* nothing left to stop: the row stays over */
            used[pick] = 1;
            left[pick] = allow[pick];
        }
        for (size_t j = 0; j < n; j++) {
            if (left[j]) {
                x[j * T + t] = (struct pflex_horizon_choice){lev[j], 0, 0, 0};
                left[j]--;
            } else
                x[j * T + t] = full(&jobs[j]);
        }
    }
    free(ord), free(left), free(allow), free(used), free(lev);
    return 0;
}

/* The least GPUs a job may run on over the whole event within its
 * contract (the way there and back: two checkpoints and restarts). */
static int size_least(const struct pflex_fieldpol_job *j)
{
    const struct pflex_horizon_job *h = j->hz;
    if (!(h->levers & PFLEX_LEVER_RESIZE) || !(h->event_s > 0) || h->floor > 0)
        return h->gpus;
    int step = j->node_gpus > 0 ? j->node_gpus : 1;
    int best = h->gpus;
    for (int g = h->gpus - step; g >= step; g -= step) {
        double lost = (1 - h->resize_eff * g / h->gpus) * h->event_s + 2 * (h->ckpt_s + h->restart_s);
        double fl = h->floor > 0 ? h->floor : 0;
        if (lost <= flex_of(h) * h->event_s + 1e-9 && h->resize_eff * g / h->gpus >= fl)
            best = g;
    }
    return best;
}

static int plan_resize(size_t n, const struct pflex_fieldpol_job *jobs, size_t T, const double *dt,
                       const double *limit_w, double other_w, struct pflex_horizon_choice *x, pflex_error_t *err)
{
    int *g = malloc(n * sizeof *g), *best = malloc(n * sizeof *best), *least = malloc(n * sizeof *least);
    if (!g || !best || !least) {
        free(g), free(best), free(least);
        return pflex_error_sys(err, "out of memory");
    }
    /* one plan for the event's deepest limit (the demonstration's signal
     * had one level) */
    double lim = INFINITY;
    for (size_t t = 0; t < T; t++)
        if (limit_w[t] < lim)
            lim = limit_w[t];
    for (size_t j = 0; j < n; j++)
        least[j] = size_least(&jobs[j]);
    double best_pw = -1;
    long best_stop = -2;
    /* -1: none stopped; else the job stopped for the whole event */
    for (long s = -1; s < (long)n; s++) {
        if (s >= 0) {
            const struct pflex_horizon_job *h = jobs[s].hz;
            if (!(h->levers & PFLEX_LEVER_STOP) || flex_of(h) * h->event_s < h->event_s + h->ckpt_s + h->restart_s)
                continue;
        }
        for (size_t j = 0; j < n; j++)
            g[j] = (long)j == s ? 0 : jobs[j].hz->gpus;
        for (;;) {
            double pw = other_w;
            for (size_t j = 0; j < n; j++)
                pw += cap_max(&jobs[j]) * g[j] + (g[j] < jobs[j].hz->gpus ? jobs[j].hz->idle_w * jobs[j].hz->gpus : 0);
            if (pw <= lim) {
                if (pw > best_pw) {
                    best_pw = pw;
                    best_stop = s;
                    memcpy(best, g, n * sizeof *g);
                }
                break;
            }
            /* fair: the job cut least so far (a share of its GPUs) gives a node */
            size_t pick = n;
            double share = INFINITY;
            for (size_t j = 0; j < n; j++) {
                int step = jobs[j].node_gpus > 0 ? jobs[j].node_gpus : 1;
                if ((long)j == s || g[j] - step < least[j])
                    continue;
                double sh = 1 - (double)g[j] / jobs[j].hz->gpus;
                if (sh < share)
                    share = sh, pick = j;
            }
            if (pick == n)
                break;
            g[pick] -= jobs[pick].node_gpus > 0 ? jobs[pick].node_gpus : 1;
        }
    }
    if (best_stop == -2)        /* none meets it: every job at its least */
        for (size_t j = 0; j < n; j++)
            best[j] = least[j];
    for (size_t j = 0; j < n; j++)
        for (size_t t = 0; t < T; t++) {
            const struct pflex_horizon_job *h = jobs[j].hz;
            struct pflex_horizon_choice *c = &x[j * T + t];
            if (!isfinite(limit_w[t]) || best[j] == h->gpus)
                *c = full(&jobs[j]);
            else if (best[j] == 0)
                *c = (struct pflex_horizon_choice){PFLEX_HZ_STOP, 0, 0, 0};
            else
                *c = (struct pflex_horizon_choice){PFLEX_HZ_RESIZE, cap_max(&jobs[j]),
                                                   h->resize_eff * best[j] / h->gpus, best[j]};
        }
    (void)dt;
    free(g), free(best), free(least);
    return 0;
}

int pflex_fieldpol_plan(enum pflex_fieldpol p, size_t njobs, const struct pflex_fieldpol_job *jobs,
                        size_t nperiods, const double *dt_s, const double *limit_w, double other_w,
                        struct pflex_horizon_choice *x, pflex_error_t *err)
{
    unsigned char *mask = malloc(njobs ? njobs : 1);
    if (!mask)
        return pflex_error_sys(err, "out of memory");
    int rc = 0;
    switch (p) {
    case PFLEX_FIELD_DVFS_FAIR:
        plan_dvfs(njobs, jobs, nperiods, limit_w, other_w, x, mask);
        break;
    case PFLEX_FIELD_DVFS_PAUSE_FAIR:
        rc = plan_dvfs_pause(njobs, jobs, nperiods, dt_s, limit_w, other_w, x, mask, err);
        break;
    case PFLEX_FIELD_PAUSE_GREEDY:
        rc = plan_pause_greedy(njobs, jobs, nperiods, dt_s, limit_w, other_w, x, err);
        break;
    case PFLEX_FIELD_PAUSE_RESIZE_FAIR:
        rc = plan_resize(njobs, jobs, nperiods, dt_s, limit_w, other_w, x, err);
        break;
    default:
        rc = pflex_error_set(err, "fieldpol: unknown policy %d", (int)p);
    }
    free(mask);
    return rc;
}
