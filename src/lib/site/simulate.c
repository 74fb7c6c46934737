/* simulate.c — a site driven through a grid day, every policy on the same
 * fleet, limit and noise (pflex/site/simulate.h).
 *
 * One shared pass first: the fleet's timeline (which job holds which GPUs
 * when: drawn from the seed, the same for every policy) and, per period,
 * the limit the plans meet, the limit in force and the uncapped
 * objective.  Then each policy runs the periods on its own (on its own
 * thread when asked): decide the caps (offline policies plan again only
 * when the limit or the jobs changed; the online ones run the site
 * controller's own period, handed in by the caller: pflex_sim_controller),
 * let the caps decided D periods ago act, score the period on the curves.
 * Per period the work is proportional to the jobs: a job's GPUs share one
 * cap and are one entry of the planner (pflex_site_gpu.count, through the
 * controller's node entries).  Nothing is allocated per period here. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "pflex/flex/safeplan.h"
#include "pflex/site/simulate.h"
#include "pflex/site/ttt.h"
#include "lib/util/interp.h"
#include "lib/util/mix.h"

static const char *const pol_names[PFLEX_SIM_NPOL] = {
    "equal", "eq2-measured", "eq2-predicted", "tpw", "online-cold", "online-warm", "oracle",
};

const char *pflex_sim_policy_name(enum pflex_sim_policy p)
{
    return (unsigned)p < PFLEX_SIM_NPOL ? pol_names[p] : NULL;
}

int pflex_sim_policy_parse(const char *s, enum pflex_sim_policy *out)
{
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (!strcmp(s, pol_names[p])) {
            *out = (enum pflex_sim_policy)p;
            return 0;
        }
    return -1;
}

/* ---- the truth ---- */

void pflex_sim_kind_at(const struct pflex_sim_kind *k, double cap_w, double *power_w, double *fraction)
{
    /* points descend in cap: bisection (a smooth curve has a point a
     * watt) */
    size_t n = k->n;
    if (cap_w >= k->cap_w[0]) {
        *power_w = k->power_w[0];
        *fraction = k->fraction[0];
        return;
    }
    if (cap_w <= k->cap_w[n - 1]) {
        *power_w = k->power_w[n - 1];
        *fraction = k->fraction[n - 1];
        return;
    }
    size_t lo = 0, i = n - 1;       /* cap_w[lo] > cap_w >= cap_w[i] */
    while (i - lo > 1) {
        size_t mid = lo + (i - lo) / 2;
        if (k->cap_w[mid] > cap_w)
            lo = mid;
        else
            i = mid;
    }
    /* cap_w[i] <= cap < cap_w[i - 1] */
    double f = (cap_w - k->cap_w[i]) / (k->cap_w[i - 1] - k->cap_w[i]);
    *power_w = k->power_w[i] + f * (k->power_w[i - 1] - k->power_w[i]);
    *fraction = k->fraction[i] + f * (k->fraction[i - 1] - k->fraction[i]);
}

/* Standard normal from two counter-based uniforms (Box-Muller). */
static double normal_at(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = pflex_mix64(seed ^ pflex_mix64(a ^ pflex_mix64(b ^ pflex_mix64(c))));
    uint64_t h2 = pflex_mix64(h);
    double u1 = ((double)(h >> 11) + 0.5) / 9007199254740992.0;
    double u2 = (double)(h2 >> 11) / 9007199254740992.0;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static double uniform_at(uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t h = pflex_mix64(seed ^ pflex_mix64(a ^ pflex_mix64(b + 0x51ed27ULL)));
    return ((double)(h >> 11) + 0.5) / 9007199254740992.0;
}

/* ---- the fleet's timeline ---- */

struct inst {                   /* one job over its life in one slot */
    size_t slot, kind;
    int gpus;
    double floor, weight;
    size_t k0, k1;              /* periods [k0, k1) */
    double draw_w;              /* input-bound: its GPUs' draw until k_rise; 0: none */
    size_t k_rise;              /* the period its draw rises to its curve's (SIZE_MAX: never) */
    double edge_w;              /* its floor's edge in the cap steps (floor_edge_w) */
    char name[64];
};

/* world.pflags' bits: past the ramp of the target in force; the limit in
 * force under the jobs' least caps summed; the limit planned to feasible
 * on caps but under the floors' edges summed; the limit in force under
 * what the site draws uncapped (the event) */
#define AFTER_RAMP 1
#define INFEASIBLE 2
#define FLOOR_INFEASIBLE 4      /* (also where the caps cannot meet it) */
#define EVENT 8

struct world {
    const struct pflex_sim_config *c;
    size_t nper, nslots, ninst;
    struct inst *inst;          /* by k0, then slot */
    size_t D;                   /* delay in periods */
    double settle_s, z, explore;
    double *limit_plan, *limit_now, *uncapped, *uncapped_t0;
    unsigned char *pflags;      /* per period: AFTER_RAMP, INFEASIBLE */
    unsigned char *changed, *fleet_changed;
    double baseline_w, max_w;
    double horizon_s;           /* how far ahead every policy meets a step down */
    double *ky, *kloss;         /* per kind: its curve in the cap domain, y = 1 - cap/C */
    int any_ib;                 /* some job is input-bound (pflex_sim_config.job_draw) */
    size_t *koff;
};

static int cmp_inst(const void *a, const void *b)
{
    const struct inst *p = a, *q = b;
    if (p->k0 != q->k0)
        return p->k0 < q->k0 ? -1 : 1;
    return (p->slot > q->slot) - (p->slot < q->slot);
}

/* A floor's edge: the least cap in the controller's steps (its largest
 * cap C, the multiples of step under it, its least cap) from which no
 * step up to C puts the job under the floor on the true curve; the least
 * cap when there is no floor.  The caps a plan in those steps can hold
 * while keeping the floor are those from the edge up (on a curve that
 * dips, the highest dip under the floor bounds them). */
static double floor_edge_w(const struct pflex_sim_kind *k, double floor_f, double step)
{
    double C = k->cap_w[0], cmin = k->cap_w[k->n - 1], p, f;
    if (!(floor_f > 0))
        return cmin;
    pflex_sim_kind_at(k, C, &p, &f);
    if (f < floor_f - 1e-9)
        return C;               /* broken uncapped: no cap keeps it; held at C */
    double edge = C;
    for (double d = step * floor(C / step - 1e-9); d > cmin + 1e-9; d -= step) {
        pflex_sim_kind_at(k, d, &p, &f);
        if (f < floor_f - 1e-9)
            return edge;
        edge = d;
    }
    pflex_sim_kind_at(k, cmin, &p, &f);
    return f < floor_f - 1e-9 ? edge : cmin;
}

static size_t draw_kind(const struct pflex_sim_config *c, size_t slot, size_t gen)
{
    double u = uniform_at(c->seed, 0x6b696e64ULL + slot, gen);
    size_t k = (size_t)(u * (double)c->nkinds);
    return k < c->nkinds ? k : c->nkinds - 1;
}

static int build_fleet(struct world *w, pflex_error_t *err)
{
    const struct pflex_sim_config *c = w->c;
    size_t cap = 0;
    w->ninst = 0;
    /* slots: the given jobs, or GPUs filled with drawn sizes */
    int *slot_gpus = NULL;
    size_t nslots = 0;
    if (c->njobs) {
        nslots = c->njobs;
        slot_gpus = malloc(nslots * sizeof *slot_gpus);
        if (!slot_gpus)
            return pflex_error_set(err, "out of memory");
        for (size_t j = 0; j < nslots; j++)
            slot_gpus[j] = c->jobs[j].gpus;
    } else {
        int lo = c->gpus_lo > 0 ? c->gpus_lo : 8, hi = c->gpus_hi >= lo ? c->gpus_hi : lo;
        int step = c->gpus_step > 0 ? c->gpus_step : 1;
        size_t left = c->ngpus, cap_s = 0;
        while (left) {
            int nsteps = (hi - lo) / step + 1;
            int g = lo + step * (int)(uniform_at(c->seed, 0x73697a65ULL, nslots) * nsteps);
            if (g > hi)
                g = hi;
            if ((size_t)g > left)
                g = (int)left;
            if (nslots == cap_s) {
                cap_s = cap_s ? 2 * cap_s : 256;
                int *ng = realloc(slot_gpus, cap_s * sizeof *ng);
                if (!ng) {
                    free(slot_gpus);
                    return pflex_error_set(err, "out of memory");
                }
                slot_gpus = ng;
            }
            slot_gpus[nslots++] = g;
            left -= (size_t)g;
        }
    }
    w->nslots = nslots;
    for (size_t s = 0; s < nslots; s++) {
        size_t k0 = 0;
        for (size_t gen = 0; k0 < w->nper; gen++) {
            size_t k1 = w->nper;
            if (c->mean_job_s > 0) {
                /* a job already running at the start is part-way through its life */
                double len = -c->mean_job_s * log(uniform_at(c->seed, 0x6c656eULL + s, gen));
                size_t kl = (size_t)ceil(len / c->period_s);
                if (kl < 1)
                    kl = 1;
                if (k0 + kl < k1)
                    k1 = k0 + kl;
            }
            if (w->ninst == cap) {
                cap = cap ? 2 * cap : 256;
                struct inst *ni = realloc(w->inst, cap * sizeof *ni);
                if (!ni) {
                    free(slot_gpus);
                    return pflex_error_set(err, "out of memory");
                }
                w->inst = ni;
            }
            struct inst *in = &w->inst[w->ninst++];
            memset(in, 0, sizeof *in);
            in->slot = s;
            in->gpus = slot_gpus[s];
            in->k0 = k0;
            in->k1 = k1;
            in->k_rise = SIZE_MAX;
            if (c->njobs && gen == 0) {
                const struct pflex_sim_job *j = &c->jobs[s];
                in->kind = j->kind;
                in->floor = j->floor;
                in->weight = j->weight;
                const struct pflex_sim_job_draw *jd = c->job_draw ? &c->job_draw[s] : NULL;
                if (jd && jd->draw_w > 0) {
                    w->any_ib = 1;
                    in->draw_w = jd->draw_w;
                    double rise = jd->rise_random ? uniform_at(c->seed, 0x72697365ULL, s) * c->duration_s
                                                  : jd->rise_s;
                    if (rise >= 0)
                        in->k_rise = (size_t)ceil(rise / c->period_s - 1e-9);
                }
                snprintf(in->name, sizeof in->name, "%s", j->name ? j->name : "job");
            } else {
                in->kind = c->njobs ? c->jobs[s].kind : draw_kind(c, s, gen);
                in->floor = c->njobs ? c->jobs[s].floor : c->kinds[in->kind].floor;
                in->weight = c->njobs ? c->jobs[s].weight : 1;
                snprintf(in->name, sizeof in->name, "%.40s-%zu-%zu", c->kinds[in->kind].name, s, gen);
            }
            k0 = k1;
        }
    }
    free(slot_gpus);
    qsort(w->inst, w->ninst, sizeof *w->inst, cmp_inst);
    /* the floors' edges, once per kind and floor (a drawn fleet's jobs
     * share their kind's): a scan of the cap steps costs a curve's watts */
    double *ck = malloc(2 * c->nkinds * sizeof *ck), step = c->cap_step_w > 0 ? c->cap_step_w : 1;
    if (!ck)
        return pflex_error_set(err, "out of memory");
    for (size_t i = 0; i < c->nkinds; i++)
        ck[2 * i] = NAN;
    for (size_t i = 0; i < w->ninst; i++) {
        struct inst *in = &w->inst[i];
        double *e = &ck[2 * in->kind];
        if (!(e[0] == in->floor)) {
            e[0] = in->floor;
            e[1] = floor_edge_w(&c->kinds[in->kind], in->floor, step);
        }
        in->edge_w = e[1];
    }
    free(ck);
    return 0;
}

/* ---- one policy ---- */

struct slot {
    const struct inst *in;
    const struct pflex_sim_kind *k;
    double C, cmin;             /* the kind's largest and smallest measured cap */
    double a;                   /* objective weight x scale: w T0 or w n */
    double *ring;               /* D + 1 caps decided, by period mod (D + 1) */
    double cap;                 /* in force this period */
    double read_cap, read_p, read_t;    /* last period's, for the controller; NaN: none */
    int ib;                     /* input-bound this period (inst.draw_w, before its rise) */
    double iy[3], il[3];        /* while ib: its true curve in the cap domain (flat down to
                                 * its draw, then proportional), iy ascending from 0 */
    unsigned in_n;
};

struct run {
    struct world *w;
    enum pflex_sim_policy p;
    struct pflex_sim_result *r;
    int progress;               /* this run reports progress */
    pflex_error_t err;
    int rc;
    double done_share, share;   /* progress: the part of the whole this run is */
};

static double kind_pfi(const struct pflex_sim_kind *k, enum pflex_sim_policy p)
{
    double v = p == PFLEX_SIM_EQ2_MEASURED ? k->pfi_measured
             : p == PFLEX_SIM_EQ2_PREDICTED || p == PFLEX_SIM_ONLINE_WARM ? k->pfi_predicted : 1;
    if (p == PFLEX_SIM_ONLINE_WARM && !(v > 0))
        v = k->pfi_measured;
    return v > 0 && isfinite(v) ? v : 1;
}

static void slot_start(struct run *ru, struct slot *s, const struct inst *in)
{
    const struct pflex_sim_config *c = ru->w->c;
    s->in = in;
    s->k = &c->kinds[in->kind];
    s->C = s->k->cap_w[0];
    s->cmin = s->k->cap_w[s->k->n - 1];
    s->a = in->weight * (c->objective == PFLEX_OBJECTIVE_PROGRESS ? (double)in->gpus : s->k->t0);
    s->read_cap = s->read_p = s->read_t = NAN;
    s->ib = in->draw_w > 0 && in->k_rise > in->k0;
    if (s->ib) {
        /* no loss down to its draw; under it the cap binds, the rate in
         * proportion to the power */
        double d = in->draw_w;
        s->iy[0] = s->il[0] = 0;
        s->in_n = 1;
        if (d > s->cmin) {
            s->iy[s->in_n] = 1 - d / s->C;
            s->il[s->in_n++] = 0;
        }
        s->iy[s->in_n] = 1 - s->cmin / s->C;
        s->il[s->in_n++] = d > s->cmin ? 1 - s->cmin / d : 0;
    }
}

/* What slot q's GPUs draw (per GPU) and its T/T0 under cap_w: its
 * curve's, or while input-bound its draw at full rate (the cap, and the
 * rate in proportion, under a cap below the draw). */
static void slot_truth(const struct slot *q, double cap_w, double *power_w, double *fraction)
{
    if (q->ib) {
        double d = q->in->draw_w;
        *power_w = cap_w < d ? cap_w : d;
        *fraction = cap_w < d ? cap_w / d : 1;
        return;
    }
    pflex_sim_kind_at(q->k, cap_w, power_w, fraction);
}

struct oround {
    double score;               /* which job a step goes to (or from) first */
    size_t s;
};

struct ofree {
    double w;                   /* the watts a step down of slot s frees */
    size_t s;
    size_t m1, m2;              /* oracle_polish's least losses to here */
};

struct offline {
    struct pflex_alloc_job *aj;
    struct oround *ord;         /* per slot (offline_round) */
    double *g;                  /* 3 per slot (oracle_polish) */
    struct ofree *by_w;         /* per slot (oracle_polish) */
    unsigned char *held;        /* per slot: 1 where a floor holds the cap up a step */
    struct pflex_alloc_plan plan;
    double last_limit;
};

static int cmp_oround(const void *a, const void *b)
{
    const struct oround *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

/* The offline policies' cap step: the controller's (--cap-step-w). */
static inline double offline_step(const struct world *w)
{
    return w->c->cap_step_w > 0 ? w->c->cap_step_w : 1;
}

/* Whether slot q's job at T/T0 f is under its floor (none: never). */
static inline int under_floor(const struct slot *q, double f)
{
    return q->in->floor > 0 && f < q->in->floor - 1e-9;
}

/* Whether a step down from T/T0 f_now to f_down puts slot q's job under
 * a floor it now keeps (a floor already broken is not the step's). */
static inline int step_breaks_floor(const struct slot *q, double f_now, double f_down)
{
    return under_floor(q, f_down) && !under_floor(q, f_now);
}

/* A step up and down from cap d on slot q, within its measured caps. */
static inline double cap_up(const struct slot *q, double d, double step)
{
    return d + step > q->C ? q->C : d + step;
}

static inline double cap_dn(const struct slot *q, double d, double step)
{
    return d - step < q->cmin ? q->cmin : d - step;
}

/* The objective per watt a step between caps lo < hi wins on slot q's
 * true curve. */
static double step_gain(const struct slot *q, double lo, double hi)
{
    double p, fl, fh;
    slot_truth(q, lo, &p, &fl);
    slot_truth(q, hi, &p, &fh);
    return q->a * (fh - fl) / (q->in->gpus * (hi - lo));
}

/* The offline policies' caps as the controller sets its own: in whole
 * cap steps (--cap-step-w), so that no policy is scored against
 * baselines holding caps no controller of the run could set (an online
 * plan holding equal cuts at whole watts was under them by a hair every
 * period).  Each cap goes down to a step, but up to one where the step
 * down would put the job under a floor its exact cap keeps.  While that
 * overspends the budget, jobs go down a step at a time, as many steps as
 * it takes, first only steps that keep every floor (the target wins: at
 * the last the floors' too): the oracle's by the least the step loses per
 * watt on the true curve, the other policies' nearest their exact caps
 * first.  The watts left raise caps a step each while they cover all of
 * a job's GPUs: the oracle's by what the step wins per watt (the safe
 * plan's rule on its mean curve), the others' by the largest part of a
 * step the step down cut off (the split nearest their own).  Returns the
 * watts left. */
static double offline_round(const struct run *ru, const struct slot *sl, struct offline *o,
                            const double *exact, double budget, double *decided)
{
    const struct world *w = ru->w;
    size_t n = w->nslots;
    int oracle = ru->p == PFLEX_SIM_ORACLE;
    double step = offline_step(w), left = budget;
    for (size_t s = 0; s < n; s++) {
        const struct slot *q = &sl[s];
        double c = exact[s], d = c >= q->C - 1e-9 ? q->C : step * floor(c / step + 1e-9);
        if (d < q->cmin)
            d = q->cmin < c ? q->cmin : c;
        int fl = 0;
        if (q->in->floor > 0 && d < c) {
            double p, fc, fd;
            slot_truth(q, c, &p, &fc);
            slot_truth(q, d, &p, &fd);
            if (step_breaks_floor(q, fc, fd)) {
                d = cap_up(q, d, step);
                fl = 1;
            }
        }
        o->held[s] = (unsigned char)fl;
        decided[s] = d;
        left -= q->in->gpus * d;
    }
    /* overspent (floors' steps up): steps down a step at a time, the
     * cheapest first, as many as it takes; first only those that keep
     * every floor, so that a floor gives way only where no plan in the
     * steps keeps them all (one step a job here broke floors whose
     * steps up others' slack could have paid) */
    for (int pass = 0; pass < 2 && left < -1e-9; pass++) {
        for (;;) {
            double best = -INFINITY;
            size_t bs = SIZE_MAX;
            for (size_t s = 0; s < n; s++) {
                const struct slot *q = &sl[s];
                double d = decided[s], dn = cap_dn(q, d, step);
                if (!(dn < d - 1e-9) || (pass == 0 && o->held[s]))
                    continue;
                if (pass == 0 && q->in->floor > 0) {
                    double p, fd, fn;
                    slot_truth(q, d, &p, &fd);
                    slot_truth(q, dn, &p, &fn);
                    if (step_breaks_floor(q, fd, fn))
                        continue;
                }
                /* the least loss a watt, the nearest the exact cap */
                double sc = oracle ? -step_gain(q, dn, d) : -(exact[s] - dn);
                if (sc > best) {
                    best = sc;
                    bs = s;
                }
            }
            if (bs == SIZE_MAX)
                break;
            double d = decided[bs], dn = cap_dn(&sl[bs], d, step);
            left += sl[bs].in->gpus * (d - dn);
            decided[bs] = dn;
            if (!(left < -1e-9))
                break;
        }
    }
    return left;
}

/* The watts left raise caps a step each (see offline_round), keeping
 * every cap within a step over its exact one (exact[]). */
static double offline_spend(const struct run *ru, const struct slot *sl, struct oround *ord,
                            const double *exact, double left, double *decided)
{
    size_t n = ru->w->nslots, m = 0;
    int oracle = ru->p == PFLEX_SIM_ORACLE;
    double step = offline_step(ru->w);
    for (size_t s = 0; s < n; s++) {
        const struct slot *q = &sl[s];
        double d = decided[s], up = cap_up(q, d, step);
        if (!(exact[s] > d + 1e-9) || !(up > d + 1e-9))
            continue;
        ord[m++] = (struct oround){.score = oracle ? step_gain(q, d, up) : exact[s] - d, .s = s};
    }
    qsort(ord, m, sizeof *ord, cmp_oround);
    for (size_t i = 0; i < m; i++) {
        size_t s = ord[i].s;
        double up = cap_up(&sl[s], decided[s], step);
        double need = sl[s].in->gpus * (up - decided[s]);
        if (need <= left + 1e-9) {
            left -= need;
            decided[s] = up;
        }
    }
    return left;
}

/* Slot s's step up and down from decided[s], on the true curve: g[s] the
 * objective a step up wins (-inf: none), g[n + s] what a step down loses
 * (+inf: none, or it would put the job under its floor), g[2n + s] the
 * watts a step down frees. */
static void step_gains(const struct slot *q, size_t s, size_t n, double step, const double *decided,
                       double *g)
{
    double d = decided[s], p, f, fu, fd;
    double up = cap_up(q, d, step), dn = cap_dn(q, d, step);
    slot_truth(q, d, &p, &f);
    g[s] = -INFINITY;
    g[n + s] = INFINITY;
    g[2 * n + s] = 0;
    if (up > d + 1e-9) {
        slot_truth(q, up, &p, &fu);
        g[s] = q->a * (fu - f);
    }
    if (dn < d - 1e-9) {
        slot_truth(q, dn, &p, &fd);
        if (!step_breaks_floor(q, f, fd)) {
            g[n + s] = q->a * (f - fd);
            g[2 * n + s] = q->in->gpus * (d - dn);
        }
    }
}

static int cmp_free(const void *a, const void *b)
{
    const struct ofree *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

/* The oracle's whole steps, polished on the true curves: rounding
 * leaves up to a step a job unspent or misplaced, and the exact optimum
 * is exact only on convex curves (the fleet day of docs/simulate.md:
 * 13,339 k progress-s lost exact, 13,333 k polished).  Moved a step at a time,
 * the best move first, while one wins: a step up paid by the watts left,
 * or by a step down of another job (never under its floor); at most
 * 2n + 8 moves, each O(n log n): the steps down sorted by the watts they
 * free, most first, with the two least losses over each prefix, so that
 * each step up finds the cheapest step down that pays for it by
 * bisection. */
static double oracle_polish(const struct run *ru, const struct slot *sl, struct offline *o,
                            double left, double *decided)
{
    size_t n = ru->w->nslots;
    double step = offline_step(ru->w), *g = o->g;
    struct ofree *bw = o->by_w;
    for (size_t s = 0; s < n; s++)
        step_gains(&sl[s], s, n, step, decided, g);
    for (size_t it = 0; it < 2 * n + 8; it++) {
        size_t m = 0;
        for (size_t s = 0; s < n; s++)
            if (isfinite(g[n + s]))
                bw[m++] = (struct ofree){.w = g[2 * n + s], .s = s};
        qsort(bw, m, sizeof *bw, cmp_free);
        /* m1/m2: the slots of the least and the next least loss over
         * bw[0..k] (SIZE_MAX: none) */
        size_t m1 = SIZE_MAX, m2 = SIZE_MAX;
        for (size_t k = 0; k < m; k++) {
            size_t i = bw[k].s;
            if (m1 == SIZE_MAX || g[n + i] < g[n + m1]) {
                m2 = m1;
                m1 = i;
            } else if (m2 == SIZE_MAX || g[n + i] < g[n + m2]) {
                m2 = i;
            }
            bw[k].m1 = m1;
            bw[k].m2 = m2;
        }
        double best = 0;
        size_t bi = SIZE_MAX, bj = SIZE_MAX;
        for (size_t j = 0; j < n; j++) {
            if (!isfinite(g[j]))
                continue;
            const struct slot *q = &sl[j];
            double up = cap_up(q, decided[j], step);
            double need = q->in->gpus * (up - decided[j]);
            double tol = 1e-12 * (fabs(g[j]) + 1e-300);
            if (need <= left + 1e-9 && g[j] > best + tol) {
                best = g[j];
                bi = SIZE_MAX;
                bj = j;
            }
            /* the longest prefix whose steps down each pay for it */
            size_t lo = 0, hi = m;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (bw[mid].w + left >= need - 1e-9)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == 0)
                continue;
            size_t i = bw[lo - 1].m1 != j ? bw[lo - 1].m1 : bw[lo - 1].m2;
            if (i != SIZE_MAX && g[j] - g[n + i] > best + tol) {
                best = g[j] - g[n + i];
                bi = i;
                bj = j;
            }
        }
        if (bj == SIZE_MAX)
            break;
        const struct slot *q = &sl[bj];
        double up = cap_up(q, decided[bj], step);
        left -= q->in->gpus * (up - decided[bj]);
        decided[bj] = up;
        step_gains(q, bj, n, step, decided, g);
        if (bi != SIZE_MAX) {
            const struct slot *r = &sl[bi];
            double dn = cap_dn(r, decided[bi], step);
            left += r->in->gpus * (decided[bi] - dn);
            decided[bi] = dn;
            step_gains(r, bi, n, step, decided, g);
        }
    }
    return left;
}

/* The oracle's last pass: the best plan within K steps a job of the
 * polished one, every job moving at once (a dynamic program over the
 * watts the moves cost, in cap steps; never a new floor broken).  The
 * polish pays a step up with one step down, and the exact plan is exact
 * only on convex curves: on the test fleet's smooth curves a learner beat
 * the polished oracle by 0.014 % of the site's progress with two jobs of
 * one curve 24 W apart.  K is as wide as ORACLE_WINDOW_WORK cells allow
 * (n jobs, G GPUs: about 4 n G K^2; the field demonstration's six jobs on
 * 256 GPUs, 40 steps; a whole curve on small sites; none past n G of 2.5
 * million, where the polish stands: 10,000 GPUs in 300 jobs). */
#define ORACLE_WINDOW_WORK 1e7

static int oracle_window(const struct run *ru, const struct slot *sl, double left, double *decided,
                         pflex_error_t *err)
{
    size_t n = ru->w->nslots;
    double step = offline_step(ru->w), span = 0;
    long G = 0;
    for (size_t s = 0; s < n; s++) {
        G += sl[s].in->gpus;
        if (sl[s].C - sl[s].cmin > span)
            span = sl[s].C - sl[s].cmin;
    }
    if (!n || !G)
        return 0;
    double kw = floor(sqrt(ORACLE_WINDOW_WORK / (4.0 * (double)n * (double)G)));
    if (kw > ceil(span / step))
        kw = ceil(span / step);
    if (kw > 16000)
        kw = 16000;
    if (kw < 1)
        return 0;
    size_t K = (size_t)kw, M = 2 * K + 1;
    /* states: the steps spent so far, from -K G to K G (a job's moves
     * may overspend on the way to a plan that does not) */
    long lo = (long)K * G, U = left > 0 ? (long)floor(left / step + 1e-9) : 0;
    if (U > lo)
        U = lo;
    size_t S = (size_t)(2 * lo + 1);
    double *cur = malloc(2 * S * sizeof *cur), *cand = malloc(n * M * 2 * sizeof *cand);
    unsigned short *pick = malloc(n * S * sizeof *pick);
    long *cost = malloc(n * M * sizeof *cost);
    if (!cur || !cand || !pick || !cost) {
        free(cur);
        free(cand);
        free(pick);
        free(cost);
        return pflex_error_set(err, "out of memory");
    }
    double *nxt = cur + S;
    /* per job its candidates: cap, gain over its cap now, cost in steps
     * (rounded up: the plan never spends more than the watts left) */
    for (size_t s = 0; s < n; s++) {
        const struct slot *q = &sl[s];
        double d = decided[s], p, f, fc;
        slot_truth(q, d, &p, &f);      /* the true curve: an input-bound job's flat one */
        for (size_t m = 0; m < M; m++) {
            double c = d + ((double)m - (double)K) * step;
            c = c > q->C ? q->C : c < q->cmin ? q->cmin : c;
            slot_truth(q, c, &p, &fc);
            int dup = m != K && fabs(c - d) < 1e-9;
            cand[2 * (s * M + m)] = c;
            cand[2 * (s * M + m) + 1] = dup || step_breaks_floor(q, f, fc) ? -INFINITY : q->a * (fc - f);
            cost[s * M + m] = (long)ceil(q->in->gpus * (c - d) / step - 1e-9);
        }
    }
    for (size_t u = 0; u < S; u++)
        cur[u] = -INFINITY;
    cur[lo] = 0;
    for (size_t s = 0; s < n; s++) {
        for (size_t u = 0; u < S; u++)
            nxt[u] = -INFINITY;
        for (size_t u = 0; u < S; u++) {
            if (cur[u] == -INFINITY)
                continue;
            for (size_t m = 0; m < M; m++) {
                double g = cand[2 * (s * M + m) + 1];
                long v = (long)u + cost[s * M + m];
                if (g == -INFINITY || v < 0 || v >= (long)S)
                    continue;
                if (cur[u] + g > nxt[v]) {
                    nxt[v] = cur[u] + g;
                    pick[s * S + (size_t)v] = (unsigned short)m;
                }
            }
        }
        double *t = cur;
        cur = nxt;
        nxt = t;
    }
    size_t bu = (size_t)lo;
    double best = 0;
    for (size_t u = 0; u <= (size_t)(lo + U); u++)
        if (cur[u] > best + 1e-12 * (fabs(best) + 1)) {
            best = cur[u];
            bu = u;
        }
    if (bu != (size_t)lo || best > 0)
        for (size_t s = n; s-- > 0;) {
            size_t m = (size_t)pick[s * S + bu];
            decided[s] = cand[2 * (s * M + m)];
            bu = (size_t)((long)bu - cost[s * M + m]);
        }
    free(cur < nxt ? cur : nxt);
    free(cand);
    free(pick);
    free(cost);
    return 0;
}

/* Plan the offline policy for limit (W) into decided[]. */
static int offline_plan(struct run *ru, struct slot *sl, struct offline *o, double limit,
                        double *decided, pflex_error_t *err)
{
    struct world *w = ru->w;
    const struct pflex_sim_config *c = w->c;
    size_t n = w->nslots;
    if (!isfinite(limit)) {
        for (size_t s = 0; s < n; s++)
            decided[s] = sl[s].C;
        return 0;
    }
    static const enum pflex_policy map[PFLEX_SIM_NPOL] = {
        [PFLEX_SIM_EQUAL] = PFLEX_POLICY_EQUAL, [PFLEX_SIM_EQ2_MEASURED] = PFLEX_POLICY_PFI_WEIGHTED,
        [PFLEX_SIM_EQ2_PREDICTED] = PFLEX_POLICY_PFI_WEIGHTED, [PFLEX_SIM_TPW] = PFLEX_POLICY_PFI_WEIGHTED,
        [PFLEX_SIM_ORACLE] = PFLEX_POLICY_OPTIMAL,
    };
    for (size_t s = 0; s < n; s++) {
        const struct slot *q = &sl[s];
        size_t kk = q->in->kind, off = w->koff[kk];
        o->aj[s] = (struct pflex_alloc_job){
            .name = q->in->name, .gpus = q->in->gpus, .npoints = (unsigned)q->k->n, .p0_w = q->C,
            .t0 = q->k->t0, .cap0_w = q->C, .weight = q->in->weight, .floor = q->in->floor,
            .x_hi = w->ky[off + q->k->n - 1], .pfi = ru->p == PFLEX_SIM_EQUAL || ru->p == PFLEX_SIM_ORACLE
                                                         ? NAN : kind_pfi(q->k, ru->p),
            .x = w->ky + off, .loss = w->kloss + off};
        if (q->ib) {
            /* the true curve while input-bound (the oracle's; Eq. 2 and
             * equal cuts read no curve but for floors) */
            o->aj[s].npoints = q->in_n;
            o->aj[s].x = q->iy;
            o->aj[s].loss = q->il;
            o->aj[s].x_hi = q->iy[q->in_n - 1];
        }
    }
    struct pflex_alloc_problem prob = {.njobs = n, .jobs = o->aj, .budget_w = limit - c->other_w,
                                       .objective = c->objective};
    if (pflex_alloc_plan(&prob, map[ru->p], &o->plan, err) < 0)
        return -1;
    if (!o->plan.feasible) {
        /* the target wins: the floors give way, all by the same share and
         * no further than the limit needs (the largest phi in [0, 1] whose
         * floors phi s_j fit: the safe planner's rule on a curve known
         * without doubt) */
        double lo = 0, hi = 1;
        for (int it = 0; it < 30; it++) {
            double mid = (lo + hi) / 2;
            for (size_t s = 0; s < n; s++)
                o->aj[s].floor = mid * sl[s].in->floor;
            if (pflex_alloc_plan(&prob, map[ru->p], &o->plan, err) < 0)
                return -1;
            if (o->plan.feasible)
                lo = mid;
            else
                hi = mid;
        }
        for (size_t s = 0; s < n; s++)
            o->aj[s].floor = lo * sl[s].in->floor;
        if (pflex_alloc_plan(&prob, map[ru->p], &o->plan, err) < 0)
            return -1;
    }
    for (size_t s = 0; s < n; s++) {
        /* exact here: offline_round takes them to cap steps, raising
         * first a job its step down would put under its floor */
        double cap = sl[s].C * (1 - o->plan.x[s]);
        decided[s] = cap < sl[s].cmin ? sl[s].cmin : cap > sl[s].C ? sl[s].C : cap;
    }
    if (!c->offline_exact) {
        double *exact = o->g;   /* free until oracle_polish */
        memcpy(exact, decided, n * sizeof *exact);
        double left = offline_round(ru, sl, o, exact, limit - c->other_w, decided);
        left = offline_spend(ru, sl, o->ord, exact, left, decided);
        if (ru->p == PFLEX_SIM_ORACLE
            && oracle_window(ru, sl, oracle_polish(ru, sl, o, left, decided), decided, err) < 0)
            return -1;
    }
    return 0;
}

/* The online policies: the site controller (the caller's), one node per
 * slot, fed what each slot drew and delivered last period. */
struct online {
    void *h;
    struct pflex_sim_ctl_view *v;
    struct pflex_sim_ctl_job *jobs;
};

static int online_create(struct run *ru, struct online *o, pflex_error_t *err)
{
    struct world *w = ru->w;
    const struct pflex_sim_config *c = w->c;
    o->v = calloc(w->nslots, sizeof *o->v);
    o->jobs = calloc(w->ninst, sizeof *o->jobs);
    if (!o->v || !o->jobs)
        return pflex_error_set(err, "out of memory");
    for (size_t i = 0; i < w->ninst; i++) {
        const struct inst *in = &w->inst[i];
        o->jobs[i] = (struct pflex_sim_ctl_job){
            .name = in->name, .floor = in->floor, .weight = in->weight,
            .prior_pfi = ru->p == PFLEX_SIM_ONLINE_WARM ? kind_pfi(&c->kinds[in->kind], ru->p) : NAN};
    }
    struct pflex_sim_ctl_setup su = {.nslots = w->nslots, .njobs = w->ninst, .jobs = o->jobs,
                                     .period_s = c->period_s, .settle_s = w->settle_s, .z = w->z,
                                     .explore_step = w->explore, .explore_lead_s = c->explore_lead_s,
                                     .learn_between = c->learn_between, .learn_budget = c->learn_budget,
                                     .cap_step_w = c->cap_step_w,
                                     .other_w = c->other_w,
                                     .baseline_w = ru->r->baseline_w, .targets = c->targets,
                                     .objective = c->objective};
    return c->controller->create(&su, &o->h, err);
}

static void online_destroy(struct run *ru, struct online *o)
{
    if (o->h)
        ru->w->c->controller->destroy(o->h);
    free(o->v);
    free(o->jobs);
}

/* One period of the controller: each slot's node reports last period's
 * readings; the caps it decides go to decided[]. */
static int online_period(struct run *ru, struct slot *sl, struct online *o, double now,
                         double *decided, pflex_error_t *err)
{
    struct world *w = ru->w;
    for (size_t s = 0; s < w->nslots; s++) {
        const struct slot *q = &sl[s];
        o->v[s] = (struct pflex_sim_ctl_view){.job = q->in->name, .gpus = (unsigned)q->in->gpus,
                                              .min_cap_w = q->cmin, .max_cap_w = q->C, .cap_w = q->cap,
                                              .power_w = q->read_p, .throughput = q->read_t};
        decided[s] = q->cap;    /* held, should the controller give it no cap */
    }
    if (w->c->controller->period(o->h, now, o->v, decided, &ru->r->pol[ru->p].probes, err) < 0)
        return -1;
    ru->r->pol[ru->p].plans++;
    return 0;
}

static double now_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Long: one policy's whole run on its thread, period by period; its
 * per-period state lives on this stack so that threads share nothing. */
static void *run_policy(void *arg)
{
    struct run *ru = arg;
    struct world *w = ru->w;
    const struct pflex_sim_config *c = w->c;
    struct pflex_sim_result *r = ru->r;
    struct pflex_sim_summary *sum = &r->pol[ru->p];
    pflex_error_t *err = &ru->err;
    double cpu0 = now_cpu_s();
    size_t n = w->nslots, R = w->D + 1;
    int online = ru->p == PFLEX_SIM_ONLINE_COLD || ru->p == PFLEX_SIM_ONLINE_WARM;
    struct slot *sl = calloc(n, sizeof *sl);
    double *rings = malloc(n * R * sizeof *rings), *decided = malloc(n * sizeof *decided);
    struct offline off = {0};
    struct online on = {0};
    pflex_alloc_plan_init(&off.plan);
    off.aj = malloc(n * sizeof *off.aj);
    off.ord = malloc(n * sizeof *off.ord);
    off.g = malloc(3 * n * sizeof *off.g);
    off.by_w = malloc(n * sizeof *off.by_w);
    off.held = malloc(n);
    ru->rc = -1;
    if (!sl || !rings || !decided || !off.aj || !off.ord || !off.g || !off.by_w || !off.held) {
        pflex_error_set(err, "out of memory");
        goto out;
    }
    if (online && online_create(ru, &on, err) < 0)
        goto out;
    size_t next = 0;            /* the next instance to start */
    double *pw = r->power_w[ru->p], *ob = r->objective[ru->p];
    double last_limit = NAN;
    for (size_t k = 0; k < w->nper; k++) {
        double now = c->start_s + (double)k * c->period_s;
        /* jobs that start now take their slot's GPUs (and the caps on them) */
        int fleet = 0;
        while (next < w->ninst && w->inst[next].k0 == k) {
            const struct inst *in = &w->inst[next++];
            struct slot *q = &sl[in->slot];
            if (!q->ring) {
                q->ring = rings + in->slot * R;
                for (size_t i = 0; i < R; i++)
                    q->ring[i] = c->kinds[in->kind].cap_w[0];
                /* GPUs never capped are at their largest cap, and so the
                 * controller sees them before its first caps act (a slot's
                 * cap 0 there held its GPUs at their least cap a period) */
                q->cap = c->kinds[in->kind].cap_w[0];
            }
            slot_start(ru, q, in);
            fleet = 1;
        }
        /* input-bound jobs whose draw rises now run their curves (the
         * offline policies plan again, as for a new job) */
        if (w->any_ib)
            for (size_t s = 0; s < n; s++)
                if (sl[s].ib && k >= sl[s].in->k_rise) {
                    sl[s].ib = 0;
                    fleet = 1;
                }
        /* decide */
        double limit = w->limit_plan[k];
        if (online) {
            if (online_period(ru, sl, &on, now, decided, err) < 0)
                goto out;
        } else if (k == 0 || fleet || !(limit == last_limit)) {
            if (offline_plan(ru, sl, &off, limit, decided, err) < 0)
                goto out;
            sum->plans++;
        }
        last_limit = limit;
        for (size_t s = 0; s < n; s++)
            sl[s].ring[k % R] = decided[s];
        /* act and score */
        double power = c->other_w, obj = 0;
        int limited = isfinite(w->limit_now[k]);
        /* the caps in force were planned D periods ago: to a limit every
         * floor could be kept under, or not */
        int floors_fit = !((w->pflags[k] | w->pflags[k >= w->D ? k - w->D : k])
                           & (INFEASIBLE | FLOOR_INFEASIBLE));
        for (size_t s = 0; s < n; s++) {
            struct slot *q = &sl[s];
            double cap = k >= w->D ? q->ring[(k - w->D) % R] : q->C;
            if (cap > q->C)
                cap = q->C;
            if (cap < q->cmin)
                cap = q->cmin;
            q->cap = cap;
            double p, f;
            slot_truth(q, cap, &p, &f);
            power += q->in->gpus * p;
            obj += q->a * f;
            sum->throughput_lost += q->k->t0 * (1 - f) * c->period_s;
            if (q->in->floor > 0) {
                int under = under_floor(q, f);
                if (!limited)
                    sum->floor_breaches_free += under;
                else {
                    sum->floor_periods++;
                    sum->floor_breaches += under;
                    if (floors_fit)
                        sum->floor_breaches_feasible += under;
                    if (under && q->in->floor - f > sum->floor_worst)
                        sum->floor_worst = q->in->floor - f;
                }
            }
            q->read_cap = cap;
            if (online) {
                uint64_t id = (uint64_t)(q->in - w->inst);
                q->read_p = p * (1 + c->noise_power * normal_at(c->seed, k, id, 1));
                q->read_t = q->k->t0 * f * (1 + c->noise_tput * normal_at(c->seed, k, id, 2));
                if (q->read_t < 0)
                    q->read_t = 0;
                if (q->read_p <= 0)
                    q->read_p = p;
            }
            if (r->njobs_kept && q->in->k0 == 0 && q->in->slot < r->njobs_kept) {
                r->job_cap[ru->p][q->in->slot * w->nper + k] = cap;
                r->job_fraction[ru->p][q->in->slot * w->nper + k] = f;
            }
        }
        pw[k] = power;
        ob[k] = obj;
        sum->objective_s += obj * c->period_s;
        sum->lost_s += (w->uncapped[k] - obj) * c->period_s;
        sum->energy_kwh += power * c->period_s / 3.6e6;
        if (limited) {
            sum->periods_limited++;
            sum->lost_event_s += (w->uncapped[k] - obj) * c->period_s;
            double over = power - w->limit_now[k];
            if (over > 1e-6 * w->limit_now[k]) {
                if (w->pflags[k] & AFTER_RAMP) {
                    sum->periods_above++;
                    if (!(w->pflags[k] & INFEASIBLE))
                        sum->periods_above_feasible++;
                } else
                    sum->periods_above_ramp++;
                if (over > sum->max_over_w)
                    sum->max_over_w = over;
            }
        }
        if (ru->progress && c->progress && (k & 4095) == 0)
            c->progress(c->progress_ud, ru->done_share + ru->share * (double)k / (double)w->nper);
    }
    ru->rc = 0;
out:
    if (online)
        online_destroy(ru, &on);
    free(sl);
    free(rings);
    free(decided);
    free(off.aj);
    free(off.ord);
    free(off.g);
    free(off.by_w);
    free(off.held);
    pflex_alloc_plan_fini(&off.plan);
    sum->wall_s = now_cpu_s() - cpu0;
    sum->ran = ru->rc == 0;
    return NULL;
}

/* ---- the run ---- */

/* One thread's policies: runs first, first + step, ... */
struct lane {
    struct run *runs;
    int first, step, n;
};

static void *lane_run(void *arg)
{
    struct lane *l = arg;
    for (int i = l->first; i < l->n; i += l->step)
        run_policy(&l->runs[i]);
    return NULL;
}

void pflex_sim_result_fini(struct pflex_sim_result *r)
{
    free(r->limit_w);
    free(r->uncapped);
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        free(r->pol[p].ttt_s);
        free(r->power_w[p]);
        free(r->objective[p]);
        free(r->job_cap[p]);
        free(r->job_fraction[p]);
    }
    free(r->job_name);
    free(r->job_gpus);
    free(r->job_floor);
    memset(r, 0, sizeof *r);
}

static int check_config(const struct pflex_sim_config *c, pflex_error_t *err)
{
    if (!c->nkinds)
        return pflex_error_set(err, "simulate: no job curves");
    for (size_t i = 0; i < c->nkinds; i++) {
        const struct pflex_sim_kind *k = &c->kinds[i];
        if (k->n < 2)
            return pflex_error_set(err, "simulate: curve '%s' needs 2 or more caps", k->name);
        if (!(k->t0 > 0) || !isfinite(k->t0))
            return pflex_error_set(err, "simulate: curve '%s': baseline throughput must be positive",
                                   k->name);
        for (size_t j = 0; j < k->n; j++) {
            if (!isfinite(k->cap_w[j]) || !(k->power_w[j] > 0) || !isfinite(k->power_w[j])
                || !(k->fraction[j] >= 0) || !isfinite(k->fraction[j]))
                return pflex_error_set(err, "simulate: curve '%s': point %zu is not finite or not positive",
                                       k->name, j);
            if (j && !(k->cap_w[j] < k->cap_w[j - 1]))
                return pflex_error_set(err, "simulate: curve '%s': caps must descend strictly", k->name);
        }
        if (!(k->cap_w[k->n - 1] > 0))
            return pflex_error_set(err, "simulate: curve '%s': caps must be positive", k->name);
    }
    for (size_t j = 0; j < c->njobs; j++) {
        const struct pflex_sim_job *jb = &c->jobs[j];
        if (jb->kind >= c->nkinds || jb->gpus < 1 || !(jb->floor >= 0 && jb->floor <= 1)
            || !(jb->weight >= 0))
            return pflex_error_set(err, "simulate: job %zu ('%s'): curve, GPUs, floor or weight out of range",
                                   j, jb->name ? jb->name : "");
        const struct pflex_sim_job_draw *jd = c->job_draw ? &c->job_draw[j] : NULL;
        if (jd && (!(jd->draw_w >= 0) || (jd->draw_w > 0 && !(jd->draw_w < c->kinds[jb->kind].cap_w[0]))
                   || (jd->draw_w > 0 && isinf(jd->rise_s))))
            return pflex_error_set(err, "simulate: job %zu ('%s'): an input-bound draw must be under its "
                                   "curve's largest cap (%g W), its rise a finite time",
                                   j, jb->name ? jb->name : "", c->kinds[jb->kind].cap_w[0]);
    }
    if (!c->njobs && !c->ngpus)
        return pflex_error_set(err, "simulate: no jobs and no GPUs");
    if (!(c->period_s > 0) || !isfinite(c->period_s))
        return pflex_error_set(err, "simulate: the period must be positive");
    if (!(c->duration_s >= c->period_s) || !isfinite(c->duration_s) || c->duration_s / c->period_s > 1e8)
        return pflex_error_set(err, "simulate: the duration must be at least a period and at most 1e8 periods");
    if (!(c->delay_s >= 0) || !isfinite(c->delay_s) || !(c->noise_power >= 0) || !(c->noise_tput >= 0))
        return pflex_error_set(err, "simulate: the delay and the noise must be 0 or more");
    if (!(c->other_w >= 0) || !isfinite(c->other_w))
        return pflex_error_set(err, "simulate: other power must be 0 or more");
    return 0;
}

/* Which policies run: all asked for (all by default) less those the
 * configuration cannot run, with a note on each left out. */
static int choose_policies(const struct pflex_sim_config *c, struct pflex_sim_result *r, unsigned *want_out,
                           pflex_error_t *err)
{
    unsigned want = c->policies ? c->policies : (1u << PFLEX_SIM_NPOL) - 1;
    int have_pred = 1;
    for (size_t i = 0; i < c->nkinds; i++)
        if (!(c->kinds[i].pfi_predicted > 0))
            have_pred = 0;
    if (!have_pred) {
        if (c->policies & (1u << PFLEX_SIM_EQ2_PREDICTED))
            return pflex_error_set(err, "simulate: eq2-predicted needs a predicted PFI for every curve");
        if (!c->policies)
            snprintf(r->note, sizeof r->note,
                     "eq2-predicted left out: no predicted PFI (give --pfi); online-warm starts from the "
                     "measured PFI");
        want &= ~(1u << PFLEX_SIM_EQ2_PREDICTED);
    }
    unsigned online_bits = (1u << PFLEX_SIM_ONLINE_COLD) | (1u << PFLEX_SIM_ONLINE_WARM);
    if (!c->controller && (want & online_bits)) {
        if (c->policies & online_bits)
            return pflex_error_set(err, "simulate: the online policies need the site controller");
        size_t l = strlen(r->note);
        snprintf(r->note + l, sizeof r->note - l, "%sonline policies left out: no site controller given",
                 l ? "; " : "");
        want &= ~online_bits;
    }
    *want_out = want;
    return 0;
}

/* The kinds' curves in the cap domain and the per-period arrays of the
 * world and the result. */
static int alloc_world(struct world *w, struct pflex_sim_result *r, pflex_error_t *err)
{
    const struct pflex_sim_config *c = w->c;
    size_t tot = 0;
    w->koff = malloc(c->nkinds * sizeof *w->koff);
    for (size_t i = 0; w->koff && i < c->nkinds; i++) {
        w->koff[i] = tot;
        tot += c->kinds[i].n;
    }
    w->ky = malloc((tot + 1) * sizeof *w->ky);
    w->kloss = malloc((tot + 1) * sizeof *w->kloss);
    size_t N = w->nper;
    r->nperiods = N;
    r->period_s = c->period_s;
    r->start_s = c->start_s;
    r->limit_w = malloc(N * sizeof *r->limit_w);
    r->uncapped = malloc(N * sizeof *r->uncapped);
    w->limit_plan = malloc(N * sizeof *w->limit_plan);
    w->limit_now = r->limit_w;
    w->uncapped = r->uncapped;
    w->pflags = malloc(N);
    if (!w->koff || !w->ky || !w->kloss || !r->limit_w || !r->uncapped || !w->limit_plan || !w->pflags)
        return pflex_error_sys(err, "out of memory");
    for (size_t i = 0; i < c->nkinds; i++) {
        const struct pflex_sim_kind *k = &c->kinds[i];
        for (size_t j = 0; j < k->n; j++) {
            w->ky[w->koff[i] + j] = 1 - k->cap_w[j] / k->cap_w[0];
            w->kloss[w->koff[i] + j] = j ? 1 - k->fraction[j] / k->fraction[0] : 0;
        }
    }
    return 0;
}

/* What instance in draws a GPU at its kind's largest cap (lo = 0) or its
 * least (lo = 1), input-bound or not (ib). */
static double inst_draw(const struct inst *in, const struct pflex_sim_kind *kd, int ib, int lo)
{
    double p = kd->power_w[lo ? kd->n - 1 : 0], c = kd->cap_w[lo ? kd->n - 1 : 0];
    if (!ib)
        return p;
    return in->draw_w < c ? in->draw_w : c;
}

/* The site at start: baseline, maximum; per period the uncapped
 * objective and the limits (and whether the jobs can meet them). */
static int site_timeline(struct world *w, struct pflex_sim_result *r, pflex_error_t *err)
{
    const struct pflex_sim_config *c = w->c;
    size_t N = w->nper;
    double base = c->other_w, mx = c->other_w, unc = 0, mxw = c->other_w;
    double least = c->other_w;  /* every job at its least cap */
    double edges = c->other_w;  /* every job at its floor's edge */
    double draw = c->other_w;   /* every job uncapped, what it draws */
    size_t g = 0, next = 0;
    const struct inst **cur = calloc(w->nslots, sizeof *cur);
    if (!cur)
        return pflex_error_sys(err, "out of memory");
    /* the targets read once (rebuilt when the site's maximum moves, a
     * job in or out): a period's reads cost a bisection, not the set */
    struct pflex_target_profile prof;
    pflex_target_profile_init(&prof);
    for (size_t k = 0; k < N; k++) {
        int ch = 0;
        while (next < w->ninst && w->inst[next].k0 == k) {
            const struct inst *in = &w->inst[next++];
            const struct pflex_sim_kind *kd = &c->kinds[in->kind];
            double a = in->weight * (c->objective == PFLEX_OBJECTIVE_PROGRESS ? in->gpus : kd->t0);
            if (cur[in->slot]) {
                const struct pflex_sim_kind *ko = &c->kinds[cur[in->slot]->kind];
                unc -= cur[in->slot]->weight
                       * (c->objective == PFLEX_OBJECTIVE_PROGRESS ? cur[in->slot]->gpus : ko->t0);
                mxw -= cur[in->slot]->gpus * ko->cap_w[0];
                const struct inst *io = cur[in->slot];
                least -= io->gpus * ko->cap_w[ko->n - 1];
                edges -= io->gpus * io->edge_w;
                draw -= io->gpus * inst_draw(io, ko, io->draw_w > 0 && k <= io->k_rise, 0);
            } else if (k == 0) {
                base += in->gpus * inst_draw(in, kd, in->draw_w > 0 && in->k_rise > 0, 0);
                mx += in->gpus * kd->cap_w[0];
                g += (size_t)in->gpus;
            }
            unc += a;
            mxw += in->gpus * kd->cap_w[0];
            least += in->gpus * kd->cap_w[kd->n - 1];
            edges += in->gpus * in->edge_w;
            draw += in->gpus * inst_draw(in, kd, in->draw_w > 0 && in->k_rise > k, 0);
            cur[in->slot] = in;
            r->jobs_started++;
            ch = 1;
        }
        (void)ch;
        /* input-bound jobs rising now draw their curves' uncapped power
         * from now (the least caps, judged on caps, do not move) */
        if (w->any_ib)
            for (size_t q = 0; q < w->nslots; q++) {
                const struct inst *in = cur[q];
                if (in && in->draw_w > 0 && in->k_rise == k && k > in->k0) {
                    const struct pflex_sim_kind *kd = &c->kinds[in->kind];
                    draw += in->gpus * (inst_draw(in, kd, 0, 0) - inst_draw(in, kd, 1, 0));
                }
            }
        r->uncapped[k] = unc;
        double t = c->start_s + (double)k * c->period_s;
        double bl = c->baseline_w > 0 ? c->baseline_w : base;
        if (k == 0) {
            r->baseline_w = bl;
            r->max_w = mx;
            r->ngpus = g;
        }
        if (c->targets) {
            w->limit_plan[k] = pflex_target_profile_min_w(&prof, c->targets, t, t + w->horizon_s, bl, mxw);
            r->limit_w[k] = pflex_target_profile_limit_w(&prof, c->targets, t, bl, mxw);
            const struct pflex_target *tg = pflex_target_profile_winner(&prof, c->targets, t, bl, mxw);
            w->pflags[k] = tg && t >= tg->start_s + tg->ramp_s ? AFTER_RAMP : 0;
            /* no policy can keep the guarantee under a limit below the
             * jobs' least caps, whatever they draw there (the counts of
             * periods over it say so apart); nor every floor under one
             * below their edges (the oracle's plan to such a limit gives
             * floors way) */
            if (!pflex_safe_limit_feasible(r->limit_w[k], least)) {
                w->pflags[k] |= INFEASIBLE;
                r->periods_infeasible++;
                if (least - r->limit_w[k] > r->infeasible_max_w)
                    r->infeasible_max_w = least - r->limit_w[k];
            }
            if (!pflex_safe_limit_feasible(w->limit_plan[k], edges)) {
                w->pflags[k] |= FLOOR_INFEASIBLE;
                if (isfinite(r->limit_w[k]) && !(w->pflags[k] & INFEASIBLE)) {
                    r->periods_floor_infeasible++;
                    if (edges - w->limit_plan[k] > r->floor_infeasible_max_w)
                        r->floor_infeasible_max_w = edges - w->limit_plan[k];
                }
            }
            if (r->limit_w[k] < draw * (1 - 1e-9)) {
                w->pflags[k] |= EVENT;
                r->event_periods++;
                r->event_progress_s += unc * c->period_s;
            }
        } else {
            w->limit_plan[k] = r->limit_w[k] = INFINITY;
            w->pflags[k] = 0;
        }
    }
    free(cur);
    pflex_target_profile_fini(&prof);
    return 0;
}

/* Per policy series, and the kept jobs' (those at the start, by slot). */
static int alloc_series(const struct world *w, unsigned want, struct pflex_sim_result *r, pflex_error_t *err)
{
    size_t N = w->nper;
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (want & (1u << p)) {
            r->power_w[p] = malloc(N * sizeof **r->power_w);
            r->objective[p] = malloc(N * sizeof **r->objective);
            if (!r->power_w[p] || !r->objective[p])
                return pflex_error_sys(err, "out of memory");
        }
    if (!w->c->keep_jobs)
        return 0;
    size_t nk = 0;
    for (size_t i = 0; i < w->ninst && w->inst[i].k0 == 0; i++)
        nk++;
    r->njobs_kept = nk;
    r->job_name = calloc(nk, sizeof *r->job_name);
    r->job_gpus = calloc(nk, sizeof *r->job_gpus);
    r->job_floor = calloc(nk, sizeof *r->job_floor);
    if (!r->job_name || !r->job_gpus || !r->job_floor)
        return pflex_error_sys(err, "out of memory");
    for (size_t i = 0; i < nk; i++) {
        const struct inst *in = &w->inst[i];    /* k0 = 0, sorted by slot */
        snprintf(r->job_name[in->slot], sizeof r->job_name[0], "%s", in->name);
        r->job_gpus[in->slot] = in->gpus;
        r->job_floor[in->slot] = in->floor;
    }
    for (int p = 0; p < PFLEX_SIM_NPOL; p++)
        if (want & (1u << p)) {
            r->job_cap[p] = malloc((nk * N + 1) * sizeof **r->job_cap);
            r->job_fraction[p] = malloc((nk * N + 1) * sizeof **r->job_fraction);
            if (!r->job_cap[p] || !r->job_fraction[p])
                return pflex_error_sys(err, "out of memory");
        }
    return 0;
}

/* The policies, on up to `threads` threads: the online ones first (they
 * cost most), dealt round robin. */
static int run_policies(struct world *w, unsigned want, struct pflex_sim_result *r, pflex_error_t *err)
{
    const struct pflex_sim_config *c = w->c;
    struct run runs[PFLEX_SIM_NPOL];
    int order[PFLEX_SIM_NPOL], np = 0;
    static const int pref[PFLEX_SIM_NPOL] = {PFLEX_SIM_ONLINE_COLD, PFLEX_SIM_ONLINE_WARM,
                                              PFLEX_SIM_ORACLE, PFLEX_SIM_EQUAL, PFLEX_SIM_EQ2_MEASURED,
                                              PFLEX_SIM_EQ2_PREDICTED, PFLEX_SIM_TPW};
    for (int i = 0; i < PFLEX_SIM_NPOL; i++)
        if (want & (1u << pref[i]))
            order[np++] = pref[i];
    int T = c->threads > 1 ? c->threads : 1;
    if (T > np)
        T = np;
    for (int i = 0; i < np; i++) {
        runs[i] = (struct run){.w = w, .p = (enum pflex_sim_policy)order[i], .r = r,
                               .progress = i % T == 0, .share = 1.0 / ((np + T - 1) / T),
                               .done_share = (double)(i / T) / ((np + T - 1) / T)};
    }
    /* thread t runs runs t, t + T, ... */
    struct lane lanes[PFLEX_SIM_NPOL] = {{0}};
    pthread_t th[PFLEX_SIM_NPOL];
    int started[PFLEX_SIM_NPOL] = {0};
    for (int t = 0; t < T; t++)
        lanes[t] = (struct lane){.runs = runs, .first = t, .step = T, .n = np};
    for (int t = 1; t < T; t++)
        started[t] = pthread_create(&th[t], NULL, lane_run, &lanes[t]) == 0;
    lane_run(&lanes[0]);
    for (int t = 1; t < T; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            lane_run(&lanes[t]);
    }
    for (int i = 0; i < np; i++)
        if (runs[i].rc < 0) {
            *err = runs[i].err;
            return -1;
        }
    for (int i = 0; i < np; i++)
        r->ran |= 1u << runs[i].p;
    return 0;
}

/* A policy's objective x s over the event. */
static double event_objective_s(const struct world *w, const struct pflex_sim_result *r, int p)
{
    double acc = 0;
    for (size_t k = 0; k < w->nper; k++)
        if (w->pflags[k] & EVENT)
            acc += r->objective[p][k];
    return acc * w->c->period_s;
}

/* The scores against the oracle and equal cuts, in the site's terms (a
 * share of its objective over the event); the gap recovered where that
 * gap is wide enough to share, and period by period the settled share. */
/* Each policy's times to target on its power series (pflex_ttt_series). */
static int ttt_summaries(struct pflex_sim_result *r, pflex_error_t *err)
{
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        struct pflex_sim_summary *s = &r->pol[p];
        s->ttt_p50_s = s->ttt_p99_s = s->ttt_worst_s = NAN;
        if (!(r->ran & (1u << p)) || !r->power_w[p])
            continue;
        size_t n = pflex_ttt_series(r->start_s, r->period_s, r->limit_w, r->power_w[p], r->nperiods, r->max_w,
                                    PFLEX_TTT_HOLD_S, NULL, 0);
        double *v = malloc((n + 1) * sizeof *v), *sorted = malloc((n + 1) * sizeof *sorted);
        if (!v || !sorted) {
            free(v);
            free(sorted);
            return pflex_error_set(err, "out of memory");
        }
        pflex_ttt_series(r->start_s, r->period_s, r->limit_w, r->power_w[p], r->nperiods, r->max_w,
                         PFLEX_TTT_HOLD_S, v, n);
        memcpy(sorted, v, n * sizeof *v);
        struct pflex_ttt_summary sm;
        pflex_ttt_summarize(sorted, n, &sm);
        free(sorted);
        s->ttt_s = v;
        s->ttt_events = sm.events;
        s->ttt_met = sm.met;
        s->ttt_p50_s = sm.p50_s;
        s->ttt_p99_s = sm.p99_s;
        s->ttt_worst_s = sm.worst_s;
    }
    return 0;
}

static void gap_summaries(const struct world *w, struct pflex_sim_result *r)
{
    size_t N = w->nper;
    int have_e = (r->ran & (1u << PFLEX_SIM_EQUAL)) != 0, have_o = (r->ran & (1u << PFLEX_SIM_ORACLE)) != 0;
    double site = r->event_progress_s;
    double ee = have_e ? event_objective_s(w, r, PFLEX_SIM_EQUAL) : NAN;
    double eo = have_o ? event_objective_s(w, r, PFLEX_SIM_ORACLE) : NAN;
    r->gap_pct_of_site = site > 0 ? 100 * (eo - ee) / site : NAN;
    int share = have_e && have_o && r->gap_pct_of_site > PFLEX_SIM_GAP_MIN_PCT;
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        struct pflex_sim_summary *s = &r->pol[p];
        s->lost_vs_oracle_pct_of_site = s->lost_vs_equal_pct_of_site = NAN;
        s->gap_recovered = s->settled_mean = s->settled_min = NAN;
        if (!(r->ran & (1u << p)) || !(site > 0))
            continue;
        double ep = event_objective_s(w, r, p);
        s->lost_vs_oracle_pct_of_site = 100 * (eo - ep) / site;
        s->lost_vs_equal_pct_of_site = 100 * (ee - ep) / site;
        if (share)
            s->gap_recovered = (ep - ee) / (eo - ee);
    }
    if (!have_e || !have_o)
        return;
    const double *oe = r->objective[PFLEX_SIM_EQUAL], *oo = r->objective[PFLEX_SIM_ORACLE];
    for (int p = 0; p < PFLEX_SIM_NPOL; p++) {
        if (!(r->ran & (1u << p)))
            continue;
        struct pflex_sim_summary *s = &r->pol[p];
        double acc = 0;
        size_t since = 0;
        for (size_t k = 0; k < N; k++) {
            int lim = isfinite(w->limit_plan[k]);
            if (k == 0 || !(w->limit_plan[k] == w->limit_plan[k - 1]))
                since = 0;
            else
                since++;
            if (!lim)
                continue;
            const double *op = r->objective[p];
            /* under equal cuts while a limit is in force: in the periods
             * before a step that the plans already look to, the offline
             * policies' caps are still those of before (the delay) */
            if (isfinite(r->limit_w[k]) && op[k] < oe[k] - 1e-9 * fabs(oe[k]))
                s->below_equal++;
            if (!share || since < 10 || !(oo[k] - oe[k] > 1e-6 * fabs(oo[k])))
                continue;
            double g = (op[k] - oe[k]) / (oo[k] - oe[k]);
            s->settled_periods++;
            acc += g;
            if (!(g >= s->settled_min))
                s->settled_min = g;
            if (g >= 0.9)
                s->settled_over90++;
        }
        if (s->settled_periods)
            s->settled_mean = acc / (double)s->settled_periods;
    }
}

int pflex_sim_run(const struct pflex_sim_config *c, struct pflex_sim_result *r, pflex_error_t *err)
{
    memset(r, 0, sizeof *r);
    if (check_config(c, err) < 0)
        return -1;
    struct world w = {.c = c};
    w.nper = (size_t)floor(c->duration_s / c->period_s + 1e-9);
    w.D = (size_t)ceil(c->delay_s / c->period_s - 1e-9);
    w.settle_s = c->settle_s > c->period_s ? c->settle_s : c->period_s;
    w.z = c->z > 0 ? c->z : 2;
    w.explore = c->explore_step >= 0 ? c->explore_step : 0.05;
    /* every policy meets a step down as early as the controller does (its
     * caps' leases must hold the limit), else the online ones would be
     * scored for the fail-safe and the offline ones spared it */
    w.horizon_s = c->controller && c->controller->horizon_s ? c->controller->horizon_s(c->period_s) : 0;
    if (!(w.horizon_s >= 2 * c->period_s))
        w.horizon_s = 2 * c->period_s;
    unsigned want = 0;
    if (choose_policies(c, r, &want, err) < 0)
        return -1;
    int rc = -1;
    if (build_fleet(&w, err) >= 0 && alloc_world(&w, r, err) >= 0 && site_timeline(&w, r, err) >= 0
        && alloc_series(&w, want, r, err) >= 0 && run_policies(&w, want, r, err) >= 0) {
        gap_summaries(&w, r);
        rc = ttt_summaries(r, err);
    }
    free(w.inst);
    free(w.koff);
    free(w.ky);
    free(w.kloss);
    free(w.limit_plan);
    free(w.pflags);
    if (rc < 0)
        pflex_sim_result_fini(r);
    return rc;
}
