/* alloc.c — the allocation policies of docs/contract.md §2: optimal, equal,
 * proportional, pfi-weighted and pfi.
 *
 * Every policy reduces to one of two one-dimensional searches, both in
 * expected linear time, with no allocation once the plan's buffers are
 * sized:
 *
 *  - pfi and optimal are fractional knapsacks.  Each job's model (the PFI
 *    line, or the lower convex hull of its measured curve) is cut into
 *    segments; a segment saves w = n P0 dx watts at a cost of
 *    c = a dL / (n P0 dx) objective units per watt.  Within a job the costs
 *    rise (convexity), so the optimum takes every segment cheaper than a
 *    threshold lambda, part of those at lambda, and nothing dearer: lambda is
 *    the weighted quantile of the costs at the watts still to be saved.
 *    Two passes over the jobs find it and place every job: the first
 *    (which also checks and prepares each job) sums the watts into a
 *    histogram over the costs (up to 2^13 buckets); the second places each
 *    job on its segments of cheaper buckets and keeps only the segments of
 *    the bucket that holds lambda, where a weighted quickselect finds it.
 *    Segments are never stored whole: each pass rebuilds a job's few hull
 *    vertices, which is cheaper than touching memory for them (page faults
 *    dominate at scale).
 *  - optimal's repair, when a curve is not convex and the job at lambda
 *    sits where its curve lies above its hull, tries that job at the
 *    measured points around it; the others' threshold then moves only
 *    within a window of costs around lambda, gathered by the second pass,
 *    so a try costs the window, not the problem.
 *  - equal, proportional and pfi-weighted are water-filling: the level k
 *    with sum n P0 min(k c, u) = watts to save (c: each job's rate, 1 for
 *    equal), found by the same kind of selection over the breakpoints u/c.
 *
 * Segments that cost nothing or less (a curve that dips under zero loss)
 * are always taken.  Where rounding lands the plan a hair over the budget,
 * a last check nudges a job that is already cut and has slack.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/flex/alloc.h"
#include "pflex/flex/pfi.h"
#include "lib/util/bigmem.h"
#include "lib/util/grow.h"
#include "lib/util/interp.h"

struct item {
    double c;   /* cost per watt saved (equal: the limit u) */
    double w;   /* watts saved (equal: n P0) */
};

/* A segment of the bucket that holds the threshold, in job order, for
 * placing its job once the threshold is known. */
struct seg {
    double c, dx;       /* cost per watt; reduction it spans */
    double x1, l1;      /* the vertex it ends at */
    size_t j;           /* its job */
    int whole;          /* seg_solve: tied at lambda across a span its curve lies above */
};

/* A job with segments in the repair window: where it stands with none of
 * them taken, its loss where the hull optimum left it, and where the
 * current and the best try put it. */
struct wjob {
    size_t j;
    double xpre, lbase, xnew, xbest;
};

#define HIST_BITS_MAX 13

struct scratch {
    size_t jobs_cap, verts_cap, items_cap, segs_cap;
    enum pflex_policy policy;
    const struct pflex_alloc_problem *prob;
    double base;                /* sum_j n P0, W */
    int progress;               /* objective: progress (a = w n), else throughput (a = w T0) */
    int nonconvex;              /* optimal: some hull left a measured point above it */
    const struct pflex_alloc_job *jobs;
    /* Per job, in one block kept from call to call (mapped in huge pages
     * at scale: first-touch faults cost more than the planning): the
     * plan's x, limit and throughput_j, then the model slope (pfi, equal)
     * and a candidate plan (optimal's repair), touched only when used. */
    struct pflex_big mem;
    double *u;                  /* the limits: the plan's limit array */
    double *slope;              /* PFI model slope 1 / PFI (all but optimal) */
    double *xbuf;               /* a candidate plan (optimal's repair); the
                                 * rates c of the water-filling policies */
    double *hx, *hl;            /* the model vertices model_vertices last gave: in
                                 * hxbuf/hlbuf, or a job's in the hull cache */
    double *hxbuf, *hlbuf;      /* one job's model vertices (largest curve + 2) */
    /* Optimal's hulls, each built once a plan: a job's in hc at hc_off[j]
     * (x, then loss), hc_n[j] vertices (0: not built since its limit was
     * set).  Only while they fit in HULL_CACHE_MAX doubles (hc_on). */
    double *hc;
    size_t *hc_off, *hc_n;
    size_t hc_cap, hc_off_cap, hc_n_cap;
    int hc_on;
    struct item *items;         /* costs and watts of the threshold bucket (equal: every job) */
    struct seg *segs;           /* that bucket's segments, in job order */
    /* The repair window, gathered by seg_solve's second pass when some
     * curve is not its hull: the segments in cost buckets win_klo..win_khi
     * in job order, their jobs, and the watts every job saves below it. */
    int win_ok;
    unsigned win_klo, win_khi;
    struct seg *wsegs;
    size_t nwsegs, wsegs_cap;
    struct wjob *wjobs;
    size_t nwjobs, wjobs_cap;
    double wbelow;
    double *hist_w;             /* watts per cost bucket */
    size_t *hist_n;             /* segments per cost bucket */
    unsigned hist_bits;         /* buckets in use: 2^hist_bits (about one a job) */
    unsigned hist_bits_cap;
    unsigned bshift;            /* cost_bucket: shift and offset of the bits */
    int64_t bbase;
};

/* Job j's objective scale a_j and baseline power b_j = n P0, W: computed
 * where used, which costs less than memory to keep them in. */
static inline double job_a(const struct scratch *s, size_t j)
{
    const struct pflex_alloc_job *jb = &s->jobs[j];
    return jb->weight * (s->progress ? (double)jb->gpus : jb->t0);
}

static inline double job_b(const struct scratch *s, size_t j)
{
    return (double)s->jobs[j].gpus * s->jobs[j].p0_w;
}

struct solve_state {
    double lambda;      /* threshold cost; -inf: only free segments, +inf: all */
    double f;           /* fraction taken of segments at lambda */
    int feasible;
};

static const char *const policy_names[PFLEX_POLICY_COUNT] = {
    "equal", "pfi", "optimal", "pfi-weighted", "proportional",
};

int pflex_policy_parse(const char *s, enum pflex_policy *out)
{
    for (int i = 0; i < PFLEX_POLICY_COUNT; i++)
        if (strcmp(s, policy_names[i]) == 0) {
            *out = (enum pflex_policy)i;
            return 0;
        }
    return -1;
}

const char *pflex_policy_name(enum pflex_policy p)
{
    return (unsigned)p < PFLEX_POLICY_COUNT ? policy_names[p] : NULL;
}

double pflex_alloc_baseline_w(const struct pflex_alloc_problem *p)
{
    double s = 0;
    for (size_t j = 0; j < p->njobs; j++)
        s += (double)p->jobs[j].gpus * p->jobs[j].p0_w;
    return s;
}

double pflex_alloc_power_w(const struct pflex_alloc_job *j, double x)
{
    return j->p0_w * (1.0 - x);
}

static double curve_loss(const double *xs, const double *ls, size_t n, double x);

/* The cap wanted for reduction x > 0, before clamping. */
static double cap_wanted(const struct pflex_alloc_job *j,
                                       const struct pflex_alloc_capinfo *ci, double x)
{
    if (ci && ci->cap_w && j->npoints >= 2)
        return curve_loss(j->x, ci->cap_w, j->npoints, x);     /* caps over x, x > 0 */
    return j->p0_w * (1.0 - x);
}

void pflex_alloc_cap(const struct pflex_alloc_job *j, const struct pflex_alloc_capinfo *ci,
                     double x, struct pflex_alloc_cap *out)
{
    static const struct pflex_alloc_capinfo none;
    double c;
    if (!ci)
        ci = &none;
    out->kept = !(x > 0);
    if (out->kept)
        c = j->cap0_w > 0 ? j->cap0_w : j->p0_w;
    else
        c = cap_wanted(j, ci, x);
    out->wanted_w = c;
    out->clamped = 0;
    if (ci->cap_min_w > 0 && c < ci->cap_min_w) {
        c = ci->cap_min_w;
        out->clamped = 1;
    }
    if (ci->cap_max_w > 0 && c > ci->cap_max_w) {
        c = ci->cap_max_w;
        out->clamped = 1;
    }
    out->cap_w = c;
}

double pflex_alloc_cap_x_hi(const struct pflex_alloc_job *j, const struct pflex_alloc_capinfo *ci)
{
    double lo = ci ? ci->cap_min_w : 0, x = j->x_hi;
    if (!(lo > 0) || !(x > 0))
        return x;
    double cross = x;
    if (ci->cap_w && j->npoints >= 2) {
        /* the first point whose cap is under the minimum; the crossing on
         * the segment before it (caps need not fall with x on noisy sweeps) */
        const double *c = ci->cap_w, *xs = j->x;
        if (c[0] < lo)
            return 0;
        for (unsigned k = 1; k < j->npoints; k++)
            if (c[k] < lo) {
                cross = xs[k - 1] + (xs[k] - xs[k - 1]) * ((c[k - 1] - lo) / (c[k - 1] - c[k]));
                break;
            }
    } else if (j->p0_w > lo) {
        cross = 1.0 - lo / j->p0_w;
    } else {
        return 0;
    }
    if (cross < x)
        x = cross;
    /* the cap there, interpolated as pflex_alloc_cap does, may round under */
    for (int k = 0; k < 64 && x > 0 && cap_wanted(j, ci, x) < lo; k++)
        x = nextafter(x, 0);
    return x;
}

double pflex_alloc_cap_w(const struct pflex_alloc_job *j, const struct pflex_alloc_capinfo *ci,
                         double x)
{
    struct pflex_alloc_cap c;
    pflex_alloc_cap(j, ci, x, &c);
    return c.cap_w;
}

/* L on a curve given as arrays: linear interpolation, clipped. */
static double curve_loss(const double *xs, const double *ls, size_t n, double x)
{
    if (n < 2 || x <= 0)
        return 0;
    return pflex_interp_linear(xs, ls, n, x);
}

/* shed(s): first crossing of L above 1 - s (docs/contract.md §2). */
static double curve_shed(const double *xs, const double *ls, size_t n, double floor)
{
    double thr = 1.0 - floor;
    for (size_t i = 1; i < n; i++)
        if (ls[i] > thr) {
            double t = (thr - ls[i - 1]) / (ls[i] - ls[i - 1]);
            return xs[i - 1] + t * (xs[i] - xs[i - 1]);
        }
    return xs[n - 1];
}

double pflex_alloc_job_pfi(const struct pflex_alloc_job *j)
{
    double pfi = j->pfi;
    if (isnan(pfi) && j->npoints) {
        struct pflex_pfi_ratio r;
        pflex_pfi_ratio_xl(j->x, j->loss, j->npoints, &r);
        pfi = r.valid ? r.pfi : NAN;
    }
    return pfi > 0 && isfinite(pfi) ? pfi : 1.0;
}

/* The PFI model's slope: L^(x) = x / PFI. */
static double model_slope(const struct pflex_alloc_job *j)
{
    return 1.0 / pflex_alloc_job_pfi(j);
}

double pflex_alloc_measured_fraction(const struct pflex_alloc_job *j, double x)
{
    return j->npoints ? 1.0 - curve_loss(j->x, j->loss, j->npoints, x) : NAN;
}

int pflex_alloc_floor_violated(const struct pflex_alloc_job *j, double x)
{
    return j->npoints && j->floor > 0
        && 1.0 - curve_loss(j->x, j->loss, j->npoints, x) < j->floor * (1 - 1e-9);
}

double pflex_alloc_loss(const struct pflex_alloc_job *j, double x)
{
    if (j->npoints)
        return curve_loss(j->x, j->loss, j->npoints, x);
    return model_slope(j) * (x > 0 ? x : 0);
}

/* Exactly need elements (at least 1) in *p, for arrays whose room is kept
 * by another count (a curve's vertices, the histogram's bits); need * elem
 * is checked for overflow by reallocarray. */
static int grow_arr(void **p, size_t need, size_t elem)
{
    void *np = reallocarray(*p, need ? need : 1, elem);
    if (!np)
        return -1;
    *p = np;
    return 0;
}

static int items_reserve(struct scratch *s, size_t n)
{
    return pflex_grow((void **)&s->items, &s->items_cap, n ? n : 1, sizeof *s->items);
}

/* Room for one job's model vertices: a curve's points, the limit and the
 * origin.  Grows only on a longer curve than any planned before. */
static int verts_reserve(struct scratch *s, size_t npoints)
{
    size_t nverts = npoints + 2;
    if (nverts <= s->verts_cap)
        return 0;
    if (grow_arr((void **)&s->hxbuf, nverts, sizeof *s->hxbuf) < 0
        || grow_arr((void **)&s->hlbuf, nverts, sizeof *s->hlbuf) < 0)
        return -1;
    s->verts_cap = nverts;
    return 0;
}

/* The cost histogram, a bucket a job up to 2^13 (128 KiB, which stays in
 * cache while every segment of a million jobs is counted into it): small
 * problems touch little fresh memory, large ones get buckets small enough
 * that the one holding the threshold is short (see cost_bucket). */
static int hist_reserve(struct scratch *s, size_t njobs)
{
    unsigned bits = 4;
    while (bits < HIST_BITS_MAX && ((size_t)1 << bits) < njobs)
        bits++;
    s->hist_bits = bits;
    if (bits > s->hist_bits_cap) {
        if (grow_arr((void **)&s->hist_w, (size_t)1 << bits, sizeof *s->hist_w) < 0
            || grow_arr((void **)&s->hist_n, (size_t)1 << bits, sizeof *s->hist_n) < 0)
            return -1;
        s->hist_bits_cap = bits;
    }
    return 0;
}

void pflex_alloc_plan_init(struct pflex_alloc_plan *plan)
{
    memset(plan, 0, sizeof *plan);
}

void pflex_alloc_plan_fini(struct pflex_alloc_plan *plan)
{
    struct scratch *s = plan->priv;
    if (s) {
        pflex_big_free(&s->mem);
        free(s->hist_w);
        free(s->hist_n);
        free(s->hxbuf);
        free(s->hlbuf);
        free(s->hc);
        free(s->hc_off);
        free(s->hc_n);
        free(s->items);
        free(s->segs);
        free(s->wjobs);
        free(s->wsegs);
        free(s);
    }
    memset(plan, 0, sizeof *plan);
}

/* Weighted quickselect.  Among items[0..n), find the smallest cost lambda
 * with W(c <= lambda) >= need; *w_below = W(c < lambda), *w_at =
 * W(c == lambda).  Items are permuted.  Returns -1 when the total falls
 * short of need (rounding at the edge of feasibility). */
static int wselect(struct item *it, size_t n, double need, uint64_t *rng,
                   double *lambda, double *w_below, double *w_at)
{
    size_t lo = 0, hi = n;
    double acc = 0;
    while (lo < hi) {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        double p = it[lo + (size_t)(*rng % (hi - lo))].c;
        /* Three-way partition: [lo,lt) < p, [lt,i) == p, [gt,hi) > p. */
        size_t lt = lo, i = lo, gt = hi;
        double wl = 0, we = 0;
        while (i < gt) {
            double c = it[i].c;
            if (c < p) {
                wl += it[i].w;
                struct item t = it[lt];
                it[lt++] = it[i];
                it[i++] = t;
            } else if (c > p) {
                struct item t = it[--gt];
                it[gt] = it[i];
                it[i] = t;
            } else {
                we += it[i].w;
                i++;
            }
        }
        if (acc + wl >= need) {
            hi = lt;
        } else if (acc + wl + we >= need) {
            *lambda = p;
            *w_below = acc + wl;
            *w_at = we;
            return 0;
        } else {
            acc += wl + we;
            lo = gt;
        }
    }
    return -1;
}

static inline double seg_cost(double a, double b, double x0, double l0, double x1, double l1)
{
    return a * (l1 - l0) / (b * (x1 - x0)) + 0.0;     /* + 0.0: no -0 (bucket order) */
}

static size_t build_hull(const struct pflex_alloc_job *j, double u, double *hx, double *hl,
                         int *nonconvex);
static int prepare_job(struct scratch *s, size_t j, pflex_error_t *err);
static int hull_cache_reserve(struct scratch *s, const struct pflex_alloc_problem *p);

/* Job j's model vertices in s->hx/hl: the PFI line to its limit, or the
 * lower convex hull of its curve on [0, limit].  A PFI line is rebuilt
 * whenever needed (two points); a hull is built once a plan and kept
 * while the hulls fit in the cache (a plan reads each job's several times:
 * both passes of every seg_solve, and each try of the repair), else
 * rebuilt too. */
static size_t model_vertices(struct scratch *s, size_t j)
{
    if (s->policy == PFLEX_POLICY_OPTIMAL && s->hc_on) {
        s->hx = s->hc + s->hc_off[j];
        s->hl = s->hx + s->jobs[j].npoints + 2;
        if (!s->hc_n[j])
            s->hc_n[j] = build_hull(&s->jobs[j], s->u[j], s->hx, s->hl, &s->nonconvex);
        return s->hc_n[j];
    }
    s->hx = s->hxbuf;
    s->hl = s->hlbuf;
    if (s->policy == PFLEX_POLICY_OPTIMAL)
        return build_hull(&s->jobs[j], s->u[j], s->hx, s->hl, &s->nonconvex);
    s->hx[0] = 0;
    s->hl[0] = 0;
    if (!(s->u[j] > 0))
        return 1;
    s->hx[1] = s->u[j];
    s->hl[1] = s->slope[j] * s->u[j];
    return 2;
}

/* The bucket of a cost >= 0: its IEEE bits (ordered as the costs are)
 * shifted and offset, clamped to the histogram.  Any order-keeping map is
 * exact; a fine one keeps the bucket that holds the threshold short.  With
 * 2^6 buckets and more: 2^(bits - 5) buckets an octave over the 32 octaves
 * around a typical cost (the first job's a/b: costs are a/b times the
 * curve's slope); below that (a handful of jobs), the top bits alone. */
static void buckets_set(struct scratch *s)
{
    unsigned nbits = s->hist_bits;
    s->bshift = 64 - nbits;
    s->bbase = 0;
    if (nbits < 6 || s->prob->njobs == 0)
        return;
    double center = job_a(s, 0) / job_b(s, 0);
    if (!(center > 0) || !isfinite(center))
        center = 1;
    uint64_t bits;
    memcpy(&bits, &center, sizeof bits);
    s->bshift = 52 - (nbits - 5);
    int64_t mid = (int64_t)(bits >> s->bshift);
    s->bbase = mid - ((int64_t)1 << (nbits - 1));
}

static inline unsigned cost_bucket(const struct scratch *s, double c)
{
    uint64_t bits;
    memcpy(&bits, &c, sizeof bits);
    int64_t k = (int64_t)(bits >> s->bshift) - s->bbase;
    int64_t top = ((int64_t)1 << s->hist_bits) - 1;
    return (unsigned)(k < 0 ? 0 : k > top ? top : k);
}

/* The next segment of a job's model, in order, for threshold lambda: a
 * free or cheaper one is taken (the job moves to its end vertex x1, loss
 * l1), the fraction f of one at lambda (the job stops inside it: loss NaN),
 * a dearer one not (returns 0: the job stops before it). */
static inline int take_seg(double c, double dx, double x1, double l1, double lambda,
                           double f, double *x, double *l)
{
    if (c < 0 || c < lambda) {
        *x = x1;
        *l = l1;
    } else if (c == lambda) {
        *x += f * dx;
        *l = NAN;
    } else {
        return 0;
    }
    return 1;
}

/* Places job j on its model for the threshold: every segment cheaper
 * than lambda, the fraction f of those at lambda, nothing dearer.  *l is
 * the loss at the vertex it ends on, NaN when it ends inside a segment. */
static double place_job(struct scratch *s, size_t j, double lambda, double f, double *l)
{
    double a = job_a(s, j), b = job_b(s, j), xj = 0, lj = 0;
    size_t nv = model_vertices(s, j);
    for (size_t v = 0; v + 1 < nv; v++) {
        double c = seg_cost(a, b, s->hx[v], s->hl[v], s->hx[v + 1], s->hl[v + 1]);
        if (!take_seg(c, s->hx[v + 1] - s->hx[v], s->hx[v + 1], s->hl[v + 1], lambda, f,
                      &xj, &lj))
            break;
    }
    *l = lj;
    return xj;
}

/* Whether job g->j's curve lies above its hull segment g (ending at
 * g->x1): at the segment's middle, where a span between two hull
 * vertices that skips a measured point above it is strictly above (the
 * curve is straight between its points). */
static int span_above(const struct scratch *s, const struct seg *g)
{
    const struct pflex_alloc_job *jb = &s->jobs[g->j];
    if (!jb->npoints)
        return 0;
    double x0 = g->x1 - g->dx, xm = g->x1 - g->dx / 2;
    double l0 = curve_loss(jb->x, jb->loss, jb->npoints, x0);
    double hm = (l0 + g->l1) / 2, cm = curve_loss(jb->x, jb->loss, jb->npoints, xm);
    return cm > hm + 1e-12 * (1 + fabs(hm));
}

/* What one seg_solve is asked: the fractional knapsack over the model
 * segments of every job but skip (SIZE_MAX: none), saving at least
 * (s->base - budget) - extra watts.  It fills x[] for those jobs and,
 * where lout is given, lout[]: the model's loss at x_j when x_j is one of
 * its vertices, NaN when x_j lies inside a segment.  (A vertex is a
 * measured point, the origin or the limit, where the curve's own loss is
 * the same number.)  With prep, each job is checked and prepared
 * (prepare_job) as the first pass reaches it.  rng: the quickselect's. */
struct seg_req {
    int prep;
    size_t skip;
    double budget, extra;
    double *x, *lout;
    uint64_t *rng;
};

/* The first pass: every segment's watts into the histogram over costs
 * (cost_bucket); *wfree the watts of free segments (negative cost),
 * *total the others', *umax the most watts one job can give. */
static int seg_histogram(struct scratch *s, const struct seg_req *r, double *wfree, double *total,
                         double *umax, pflex_error_t *err)
{
    const unsigned nb = 1u << s->hist_bits;
    buckets_set(s);
    memset(s->hist_w, 0, nb * sizeof *s->hist_w);
    memset(s->hist_n, 0, nb * sizeof *s->hist_n);
    *wfree = *total = *umax = 0;
    for (size_t j = 0; j < s->prob->njobs; j++) {
        if (r->prep && prepare_job(s, j, err) < 0)
            return -1;
        if (j == r->skip)
            continue;
        double a = job_a(s, j), b = job_b(s, j);
        size_t nv = model_vertices(s, j);
        if (b * s->hx[nv - 1] > *umax)
            *umax = b * s->hx[nv - 1];
        for (size_t v = 0; v + 1 < nv; v++) {
            double c = seg_cost(a, b, s->hx[v], s->hl[v], s->hx[v + 1], s->hl[v + 1]);
            double w = b * (s->hx[v + 1] - s->hx[v]);
            if (c < 0) {
                *wfree += w;
            } else {
                unsigned k = cost_bucket(s, c);
                s->hist_w[k] += w;
                s->hist_n[k]++;
                *total += w;
            }
        }
    }
    return 0;
}

/* The bucket kb where the watts still needed (rest) run out, *acc the
 * watts of the cheaper ones; 0, or -1 when the buckets sum a hair under
 * rest (rounding: take everything). */
static int seg_bucket(const struct scratch *s, double rest, unsigned *kb, double *acc)
{
    const unsigned nb = 1u << s->hist_bits;
    unsigned k = 0;
    *acc = 0;
    for (; k < nb - 1; k++) {
        if (*acc + s->hist_w[k] >= rest)
            break;
        *acc += s->hist_w[k];
    }
    *kb = k;
    return *acc + s->hist_w[k] < rest ? -1 : 0;
}

/* With a curve above its hull, the repair may move one job by up to its
 * whole range (at most umax watts) and the others' threshold with it: the
 * window holds over twice that on both sides of bucket kb. */
static void seg_window(struct scratch *s, unsigned kb, double umax)
{
    const unsigned nb = 1u << s->hist_bits;
    unsigned klo = kb, khi = kb;
    double aw = 0;
    while (khi < nb - 1 && aw <= 2 * umax)
        aw += s->hist_w[++khi];
    for (aw = 0; klo > 0 && aw <= 2 * umax;)
        aw += s->hist_w[--klo];
    s->win_klo = klo;
    s->win_khi = khi;
    s->nwsegs = s->nwjobs = 0;
    s->wbelow = 0;
}

/* The second pass.  Each job's segments in order: those of cheaper buckets
 * than kb (and free ones) are taken; from its first segment in bucket kb
 * up to its first dearer one, each waits in s->segs (*ns of them) for the
 * threshold (costs rise along a hull, but rounding may reorder two nearly
 * equal ones); the segments of bucket kb go to s->items (*m), and with
 * win those of the repair window to s->wsegs, their jobs to s->wjobs. */
static int seg_place_cheap(struct scratch *s, const struct seg_req *r, unsigned kb, int win,
                           size_t *m_out, size_t *ns_out, pflex_error_t *err)
{
    const unsigned klo = win ? s->win_klo : 0, khi = win ? s->win_khi : 0;
    size_t m = 0, ns = 0;
    for (size_t j = 0; j < s->prob->njobs; j++) {
        if (j == r->skip)
            continue;
        double a = job_a(s, j), b = job_b(s, j), xj = 0, lj = 0, xpre = 0;
        size_t nv = model_vertices(s, j), nw0 = s->nwsegs;
        int waiting = 0, stopped = 0, wstop = 0;
        for (size_t v = 0; v + 1 < nv; v++) {
            double dx = s->hx[v + 1] - s->hx[v];
            double c = seg_cost(a, b, s->hx[v], s->hl[v], s->hx[v + 1], s->hl[v + 1]);
            unsigned k = c < 0 ? 0 : cost_bucket(s, c);
            if (__builtin_expect(win, 0) && !wstop) {
                int below = c < 0 || k < klo;
                if (s->nwsegs == nw0 && below) {
                    xpre = s->hx[v + 1];
                } else if (!below && k > khi) {
                    wstop = 1;
                } else {
                    /* the room checked here: this loop runs once a segment */
                    if (s->nwsegs == s->wsegs_cap
                        && pflex_grow((void **)&s->wsegs, &s->wsegs_cap, s->nwsegs + 1,
                                      sizeof *s->wsegs) < 0)
                        return pflex_error_set(err, "out of memory");
                    s->wsegs[s->nwsegs++] = (struct seg){.c = c, .dx = dx,
                                                         .x1 = s->hx[v + 1], .j = j};
                }
            }
            if (c >= 0 && k == kb) {
                s->items[m].c = c;
                s->items[m].w = b * dx;
                m++;
            }
            if (stopped || (c >= 0 && k > kb)) {
                stopped = 1;
                continue;
            }
            if (!waiting && (c < 0 || k < kb)) {
                xj = s->hx[v + 1];
                lj = s->hl[v + 1];
                continue;
            }
            waiting = 1;
            if (ns == s->segs_cap
                && pflex_grow((void **)&s->segs, &s->segs_cap, ns + 1, sizeof *s->segs) < 0)
                return pflex_error_set(err, "out of memory");
            s->segs[ns++] = (struct seg){.c = c, .dx = dx, .x1 = s->hx[v + 1],
                                         .l1 = s->hl[v + 1], .j = j};
        }
        r->x[j] = xj;
        if (r->lout)
            r->lout[j] = lj;
        if (win) {
            s->wbelow += b * xpre;
            if (s->nwsegs > nw0) {
                if (s->nwjobs == s->wjobs_cap
                    && pflex_grow((void **)&s->wjobs, &s->wjobs_cap, s->nwjobs + 1,
                                  sizeof *s->wjobs) < 0)
                    return pflex_error_set(err, "out of memory");
                s->wjobs[s->nwjobs++] = (struct wjob){.j = j, .xpre = xpre};
            }
        }
    }
    *m_out = m;
    *ns_out = ns;
    return 0;
}

/* The threshold among the m segments of bucket kb: a weighted quickselect
 * for the rest - acc watts still needed; st->lambda and st->f, the share
 * taken of the segments at lambda. */
static void seg_lambda(struct scratch *s, size_t m, double rest, double acc, uint64_t *rng,
                       struct solve_state *st)
{
    double wb = 0, wa = 0;
    if (wselect(s->items, m, rest - acc, rng, &st->lambda, &wb, &wa) < 0) {
        /* rounding at the very edge: the last segment of the bucket */
        double hi = -INFINITY;
        for (size_t i = 0; i < m; i++)
            if (s->items[i].c > hi)
                hi = s->items[i].c;
        st->lambda = hi;
        wb = 0;
        for (size_t i = 0; i < m; i++)
            if (s->items[i].c < hi)
                wb += s->items[i].w;
            else
                wa += s->items[i].w;
    }
    wb += acc;
    double f = wa > 0 ? (rest - wb) / wa : 1.0;
    st->f = f < 0 ? 0 : f > 1 ? 1 : f;
}

/* The waiting segments' jobs, placed as place_job would; but where
 * segments tie at lambda across a span their curves lie above (jobs on
 * one curve), the watts they share go to whole spans in job order and to
 * at most one part of one: the same on the hulls, and every other job on
 * a measured point, not inside a span its curve is above (on the field
 * demonstration's curves drawn into a 10,000-GPU fleet, 0.9 % less lost
 * under the limit than with every tied job inside). */
static void seg_place_waiting(struct scratch *s, const struct seg_req *r, size_t ns,
                              const struct solve_state *st)
{
    const double lambda = st->lambda, f = st->f;
    double seqw = 0;
    int seq = s->policy == PFLEX_POLICY_OPTIMAL && s->nonconvex && f > 0 && f < 1;
    if (seq)
        for (size_t i = 0; i < ns; i++) {
            struct seg *g = &s->segs[i];
            g->whole = g->c == lambda && span_above(s, g);
            if (g->whole)
                seqw += f * job_b(s, g->j) * g->dx;
        }
    for (size_t i = 0; i < ns;) {
        size_t j = s->segs[i].j;
        double xj = r->x[j], lj = r->lout ? r->lout[j] : 0;
        int open = 1;
        for (; i < ns && s->segs[i].j == j; i++) {
            const struct seg *g = &s->segs[i];
            if (seq && open && g->whole) {
                double b = job_b(s, j), w = b * g->dx, t = seqw < w ? seqw : w;
                seqw -= t;
                if (t >= w) {
                    xj = g->x1;
                    lj = g->l1;
                } else {
                    xj += t / b;
                    lj = t > 0 ? NAN : lj;
                    open = 0;
                }
                continue;
            }
            open = open && take_seg(g->c, g->dx, g->x1, g->l1, lambda, f, &xj, &lj);
        }
        r->x[j] = xj;
        if (r->lout)
            r->lout[j] = lj;
    }
}

/* Every job placed at the threshold st gives (none to find: no watts
 * needed past the free ones, or all of them). */
static void seg_fill(struct scratch *s, const struct seg_req *r, const struct solve_state *st)
{
    for (size_t j = 0; j < s->prob->njobs; j++) {
        if (j == r->skip)
            continue;
        double l;
        r->x[j] = place_job(s, j, st->lambda, st->f, &l);
        if (r->lout)
            r->lout[j] = l;
    }
}

/* The knapsack of r (struct seg_req), in two passes over the jobs.  The
 * first sums the watts into a histogram over the segments' costs and
 * finds the bucket where the watts still needed run out.  The second
 * places each job on its segments of cheaper buckets and keeps the
 * segments of that bucket: a weighted quickselect among them gives the
 * threshold, and the jobs they belong to are placed from there. */
static int seg_solve(struct scratch *s, const struct seg_req *r, struct solve_state *st,
                     pflex_error_t *err)
{
    double wfree, total, umax, acc;
    unsigned kb;
    s->win_ok = 0;
    if (seg_histogram(s, r, &wfree, &total, &umax, err) < 0)
        return -1;
    double rest = (s->base - r->budget) - r->extra - wfree;
    st->feasible = 1;
    st->f = 0;
    if (rest <= 0) {
        st->lambda = -INFINITY;
        seg_fill(s, r, st);
        return 0;
    }
    if (total < rest) {
        st->lambda = INFINITY;
        st->feasible = 0;
        seg_fill(s, r, st);
        return 0;
    }
    if (seg_bucket(s, rest, &kb, &acc) < 0) {
        st->lambda = INFINITY;
        seg_fill(s, r, st);
        return 0;
    }
    if (items_reserve(s, s->hist_n[kb]) < 0)
        return pflex_error_set(err, "out of memory");
    const int win = r->lout && s->nonconvex;
    if (win)
        seg_window(s, kb, umax);
    size_t m = 0, ns = 0;
    if (seg_place_cheap(s, r, kb, win, &m, &ns, err) < 0)
        return -1;
    s->win_ok = win;
    seg_lambda(s, m, rest, acc, r->rng, st);
    seg_place_waiting(s, r, ns, st);
    return 0;
}

/* Lower convex hull of the curve on [0, u] into hx/hl; returns the number
 * of vertices.  Sets *nonconvex when a measured point lies strictly above
 * the hull (a point on it changes nothing: the curve is the hull). */
static size_t build_hull(const struct pflex_alloc_job *j, double u, double *hx, double *hl,
                         int *nonconvex)
{
    size_t h = 0;
    hx[h] = 0;
    hl[h] = 0;
    h++;
    if (!(u > 0))
        return h;
    for (size_t k = 1; k <= j->npoints; k++) {
        double px, pl;
        if (k < j->npoints && j->x[k] < u) {
            px = j->x[k];
            pl = j->loss[k];
        } else {
            px = u;
            pl = curve_loss(j->x, j->loss, j->npoints, u);
            k = j->npoints;     /* the last vertex */
        }
        while (h >= 2) {
            double cr = (hx[h - 1] - hx[h - 2]) * (pl - hl[h - 2])
                      - (hl[h - 1] - hl[h - 2]) * (px - hx[h - 2]);
            if (cr > 0)
                break;
            if (cr < 0)
                *nonconvex = 1;
            h--;
        }
        hx[h] = px;
        hl[h] = pl;
        h++;
    }
    return h;
}

/* Model (hull) loss of job j at x. */
static double hull_loss(struct scratch *s, size_t j, double x)
{
    size_t n = model_vertices(s, j);
    return curve_loss(s->hx, s->hl, n, x);
}

static int check_job(const struct pflex_alloc_job *j, size_t i, pflex_error_t *err)
{
    const char *nm = j->name ? j->name : "?";
    if (j->gpus < 1)
        return pflex_error_set(err, "job %zu '%s': gpus %d is not positive", i + 1, nm, j->gpus);
    if (!(j->p0_w > 0) || !isfinite(j->p0_w))
        return pflex_error_set(err, "job %zu '%s': baseline power is not positive", i + 1, nm);
    if (!(j->t0 > 0) || !isfinite(j->t0))
        return pflex_error_set(err, "job %zu '%s': baseline throughput is not positive", i + 1, nm);
    if (!(j->weight >= 0) || !isfinite(j->weight))
        return pflex_error_set(err, "job %zu '%s': weight is not a non-negative number", i + 1, nm);
    if (!(j->floor >= 0 && j->floor <= 1))
        return pflex_error_set(err, "job %zu '%s': floor is not in [0, 1]", i + 1, nm);
    if (!(j->x_hi >= 0) || !(j->x_hi <= 1))
        return pflex_error_set(err, "job %zu '%s': reduction range is not in [0, 1]", i + 1, nm);
    if (j->npoints) {
        if (!j->x || !j->loss || j->x[0] != 0 || j->loss[0] != 0)
            return pflex_error_set(err, "job %zu '%s': the curve must start at (0, 0)", i + 1, nm);
        for (size_t k = 1; k < j->npoints; k++)
            if (!(j->x[k] > j->x[k - 1]) || !(j->x[k] <= 1) || !isfinite(j->loss[k]))
                return pflex_error_set(err, "job %zu '%s': curve point %zu is out of order "
                                       "or not finite", i + 1, nm, k);
    }
    return 0;
}

/* Checks job j and sets its limit (and its model slope for pfi and
 * equal); adds its baseline power to s->base. */
static int prepare_job(struct scratch *s, size_t j, pflex_error_t *err)
{
    const struct pflex_alloc_job *jb = &s->jobs[j];
    if (check_job(jb, j, err) < 0)
        return -1;
    if (verts_reserve(s, jb->npoints) < 0)
        return pflex_error_set(err, "out of memory");
    if (s->hc_on)
        s->hc_n[j] = 0;     /* its limit is set anew: its hull with it */
    s->base += job_b(s, j);
    double u = jb->x_hi;
    if (jb->npoints && jb->x[jb->npoints - 1] < u)
        u = jb->x[jb->npoints - 1];
    enum pflex_policy pol = s->policy;
    if (pol == PFLEX_POLICY_OPTIMAL && !jb->npoints)
        return pflex_error_set(err, "job %zu '%s': the optimal policy needs a "
                               "measured curve", j + 1, jb->name ? jb->name : "?");
    if (pol != PFLEX_POLICY_OPTIMAL)
        s->slope[j] = model_slope(jb);
    /* The floor as the policy sees it: on the curve for those that may
     * read it (optimal; equal and proportional where the job has one), on
     * the PFI model, x = PFI (1 - s), for the others. */
    int curve_floor = pol == PFLEX_POLICY_OPTIMAL
        || ((pol == PFLEX_POLICY_EQUAL || pol == PFLEX_POLICY_PROPORTIONAL) && jb->npoints);
    if (curve_floor) {
        if (jb->floor > 0) {
            double sh = curve_shed(jb->x, jb->loss, jb->npoints, jb->floor);
            if (sh < u)
                u = sh;
        }
    } else {
        double mf = (1.0 - jb->floor) / s->slope[j];
        if (mf < u)
            u = mf;
    }
    s->u[j] = u > 0 ? u : 0;
    if (pol == PFLEX_POLICY_PROPORTIONAL) {
        double c = s->prob->rate_by ? s->prob->rate_by[j] : 1.0;
        if (!(c >= 0) || !isfinite(c))
            return pflex_error_set(err, "job %zu '%s': its proportional share is not a "
                                   "non-negative number", j + 1, jb->name ? jb->name : "?");
        s->xbuf[j] = c;
    } else if (pol == PFLEX_POLICY_PFI_WEIGHTED) {
        /* cut_j in W ~ (n P0 / T0) PFI, so x_j ~ PFI / T0 (T0 -> n: progress) */
        double t = s->progress ? (double)jb->gpus : jb->t0;
        s->xbuf[j] = 1.0 / (s->slope[j] * t);
    } else if (pol == PFLEX_POLICY_EQUAL) {
        s->xbuf[j] = 1.0;
    }
    return 0;
}

/* Sets up a plan of p with a policy.  The jobs themselves are checked and
 * prepared by prepare_job: here for the water-filling policies, during the
 * first pass over the segments for pfi and optimal (one pass over the
 * curves fewer). */
static int prepare(const struct pflex_alloc_problem *p, enum pflex_policy pol,
                   struct scratch *s, pflex_error_t *err)
{
    s->policy = pol;
    s->prob = p;
    s->progress = p->objective == PFLEX_OBJECTIVE_PROGRESS;
    s->jobs = p->jobs;
    s->nonconvex = 0;
    s->base = 0;
    int fill = pol == PFLEX_POLICY_EQUAL || pol == PFLEX_POLICY_PROPORTIONAL
        || pol == PFLEX_POLICY_PFI_WEIGHTED;
    if (verts_reserve(s, 0) < 0 || hist_reserve(s, p->njobs) < 0
        || (fill && items_reserve(s, p->njobs) < 0))
        return pflex_error_set(err, "out of memory");
    s->hc_on = pol == PFLEX_POLICY_OPTIMAL && hull_cache_reserve(s, p) == 0;
    if (fill)
        for (size_t j = 0; j < p->njobs; j++)
            if (prepare_job(s, j, err) < 0)
                return -1;
    return 0;
}

/* Room in the hull cache for every job's hull (its points, the limit and
 * the origin, x and loss), offsets set and nothing built: 0, or -1 when
 * they would take more than HULL_CACHE_MAX doubles or the memory is not
 * there (the hulls are then rebuilt as needed). */
#define HULL_CACHE_MAX ((size_t)1 << 22)
static int hull_cache_reserve(struct scratch *s, const struct pflex_alloc_problem *p)
{
    size_t m = p->njobs ? p->njobs : 1, total = 0;
    if (pflex_grow((void **)&s->hc_off, &s->hc_off_cap, m, sizeof *s->hc_off) < 0
        || pflex_grow((void **)&s->hc_n, &s->hc_n_cap, m, sizeof *s->hc_n) < 0)
        return -1;
    for (size_t j = 0; j < p->njobs; j++) {
        size_t nj = p->jobs[j].npoints;
        if (nj > HULL_CACHE_MAX || total > HULL_CACHE_MAX - 2 * (nj + 2))
            return -1;
        s->hc_off[j] = total;
        s->hc_n[j] = 0;
        total += 2 * (nj + 2);
    }
    return pflex_grow((void **)&s->hc, &s->hc_cap, total ? total : 1, sizeof *s->hc) < 0 ? -1 : 0;
}

/* Make sure the plan's power (pw: as it stands) is within the budget:
 * nudge jobs with slack. */
static void enforce_budget(const struct scratch *s, size_t n, double budget, double *x,
                           double *lout, double pw)
{
    for (int pass = 0; pass < 3; pass++) {
        if (pass > 0) {
            pw = 0;
            for (size_t j = 0; j < n; j++)
                pw += job_b(s, j) * (1.0 - x[j]);
        }
        double excess = pw - budget;
        if (excess <= 0)
            return;
        /* Jobs already cut first, so that a job left alone keeps its cap. */
        for (size_t i = 0; i < 2 * n && excess > 0; i++) {
            size_t j = i < n ? i : i - n;
            double slack = s->u[j] - x[j];
            if (slack <= 0 || (i < n && x[j] <= 0))
                continue;
            double dx = excess / job_b(s, j) * (1 + 1e-9) + DBL_EPSILON;
            if (dx > slack)
                dx = slack;
            x[j] += dx;
            if (lout)
                lout[j] = NAN;
            excess -= dx * job_b(s, j);
        }
    }
}

/* Water-filling (equal, proportional, pfi-weighted): the level k with
 * sum_j b_j min(k c_j, u_j) = need, c_j the rates in s->xbuf; x_j =
 * min(k c_j, u_j).  A job with c_j = 0 or u_j = 0 is not cut.  Each job
 * joins as an item at its breakpoint u_j / c_j, where it reaches its limit,
 * weighing b_j c_j: a weighted quickselect finds the breakpoints k lies
 * between.  Returns 0 when the limits cannot save need (every job at its
 * limit), else 1. */
static int solve_fill(const struct scratch *s, size_t n, double need, double *x)
{
    const double *rate = s->xbuf;
    if (need <= 0) {
        memset(x, 0, n * sizeof *x);
        return 1;
    }
    struct item *it = s->items;
    double full = 0;
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        if (!(rate[j] > 0) || !(s->u[j] > 0))
            continue;
        it[m].c = s->u[j] / rate[j];
        it[m].w = job_b(s, j) * rate[j];
        full += job_b(s, j) * s->u[j];
        m++;
    }
    if (full < need) {
        for (size_t j = 0; j < n; j++)
            x[j] = rate[j] > 0 ? s->u[j] : 0;
        return 0;
    }
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    size_t lo = 0, hi = m;
    double acc_low = 0, b_high = 0;
    while (lo < hi) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        double p = it[lo + (size_t)(rng % (hi - lo))].c;
        size_t lt = lo, i = lo, gt = hi;
        double bl_lt = 0, b_eq = 0, b_gt = 0;
        while (i < gt) {
            double c = it[i].c;
            if (c < p) {
                bl_lt += it[i].w * c;
                struct item t = it[lt];
                it[lt++] = it[i];
                it[i++] = t;
            } else if (c > p) {
                b_gt += it[i].w;
                struct item t = it[--gt];
                it[gt] = it[i];
                it[i] = t;
            } else {
                b_eq += it[i].w;
                i++;
            }
        }
        double g = acc_low + bl_lt + p * (b_eq + b_gt + b_high);
        if (g >= need) {
            b_high += b_eq + b_gt;
            hi = lt;
        } else {
            acc_low += bl_lt + p * b_eq;
            lo = gt;
        }
    }
    double k = b_high > 0 ? (need - acc_low) / b_high : 0;
    for (size_t j = 0; j < n; j++) {
        double xj = k * rate[j];
        x[j] = !(rate[j] > 0) ? 0 : xj < s->u[j] ? xj : s->u[j];
    }
    return 1;
}

/* The repair's tries without re-planning every job.  Moving job jw from
 * where the hull optimum left it to xv shifts the watts the others must
 * save by at most its own range's watts, so the others' threshold moves
 * only across the segments whose costs lie near lambda: seg_solve's second
 * pass gathered those (the window), and each try is a knapsack over them
 * alone, every other job staying where it is.  Applies the best try that
 * beats the hull optimum's own objective.  Returns 1 when done, 0 when the
 * window cannot hold some try (rounding at its edges, or no window): the
 * caller then re-plans every job for each try.  -1: out of memory. */
static int repair_window(struct scratch *s, size_t jw, const double *xv, size_t tries,
                         double budget, double *x, double *lout, uint64_t *rng,
                         pflex_error_t *err)
{
    if (!s->win_ok)
        return 0;
    const struct pflex_alloc_job *jbw = &s->jobs[jw];
    const unsigned nb = 1u << s->hist_bits;
    const double aw = job_a(s, jw), bw = job_b(s, jw);
    size_t m = 0, wjw = SIZE_MAX;
    double wfree = 0, wwin = 0, wbelow = s->wbelow;
    if (items_reserve(s, s->nwsegs) < 0)
        return pflex_error_set(err, "out of memory");
    for (size_t i = 0; i < s->nwsegs; i++) {
        const struct seg *g = &s->wsegs[i];
        if (g->j == jw)
            continue;
        double w = job_b(s, g->j) * g->dx;
        if (g->c < 0) {
            wfree += w;
        } else {
            s->items[m].c = g->c;
            s->items[m++].w = w;
            wwin += w;
        }
    }
    for (size_t w = 0; w < s->nwjobs; w++) {
        struct wjob *wj = &s->wjobs[w];
        if (wj->j == jw) {
            wjw = w;
            continue;
        }
        const struct pflex_alloc_job *jb = &s->jobs[wj->j];
        wj->lbase = curve_loss(jb->x, jb->loss, jb->npoints, x[wj->j]);
    }
    if (wjw == SIZE_MAX)
        return 0;               /* jw lies outside the window: not at lambda */
    wbelow -= bw * s->wjobs[wjw].xpre;
    double xmin = xv[0], xmax = xv[0];
    for (size_t t = 1; t < tries; t++) {
        xmin = xv[t] < xmin ? xv[t] : xmin;
        xmax = xv[t] > xmax ? xv[t] : xmax;
    }
    /* Every try's threshold must fall inside the window. */
    double need0 = s->base - budget;
    double lo_need = need0 - bw * xmax - wbelow - wfree;
    double hi_need = need0 - bw * xmin - wbelow - wfree;
    if ((lo_need <= 0 && s->win_klo > 0) || (hi_need > wwin && s->win_khi < nb - 1))
        return 0;
    double lbase_w = curve_loss(jbw->x, jbw->loss, jbw->npoints, x[jw]);
    double best = 0;
    size_t tbest = SIZE_MAX;
    for (size_t t = 0; t < tries; t++) {
        /* the threshold: as seg_solve finds it, over the window alone */
        double rest = (need0 - bw * xv[t]) - wbelow - wfree, lam = -INFINITY, f = 0;
        if (rest > 0) {
            double wb, wa;
            if (wselect(s->items, m, rest, rng, &lam, &wb, &wa) < 0)
                continue;       /* the others cannot save enough: infeasible */
            f = wa > 0 ? (rest - wb) / wa : 1.0;
            f = f < 0 ? 0 : f > 1 ? 1 : f;
        }
        /* each window job placed as seg_solve would; the objective's change */
        double gain = aw * (lbase_w - curve_loss(jbw->x, jbw->loss, jbw->npoints, xv[t]));
        for (size_t w = 0, si = 0; w < s->nwjobs; w++) {
            struct wjob *wj = &s->wjobs[w];
            double xj = wj->xpre, lj;
            int open = 1;
            for (; si < s->nwsegs && s->wsegs[si].j == wj->j; si++) {
                const struct seg *g = &s->wsegs[si];
                open = open && take_seg(g->c, g->dx, g->x1, g->l1, lam, f, &xj, &lj);
            }
            if (w == wjw)
                continue;
            const struct pflex_alloc_job *jb = &s->jobs[wj->j];
            wj->xnew = xj;
            gain += job_a(s, wj->j) * (wj->lbase - curve_loss(jb->x, jb->loss, jb->npoints, xj));
        }
        if (gain > best) {
            best = gain;
            tbest = t;
            for (size_t w = 0; w < s->nwjobs; w++)
                s->wjobs[w].xbest = s->wjobs[w].xnew;
        }
    }
    if (tbest != SIZE_MAX) {
        for (size_t w = 0; w < s->nwjobs; w++) {
            if (w == wjw)
                continue;
            x[s->wjobs[w].j] = s->wjobs[w].xbest;
            lout[s->wjobs[w].j] = NAN;
        }
        x[jw] = xv[tbest];
        lout[jw] = NAN;
    }
    return 1;
}

/* Optimal: the hull knapsack, then the repair of a job left inside a
 * non-convex stretch.  lout as for seg_solve (all NaN after a repair).
 * Sets the hull optimum's objective when some curve is not its hull. */
static int solve_optimal(const struct pflex_alloc_problem *p, struct scratch *s,
                         double budget, double *x, double *lout, int *feasible,
                         int *hull_error, double *hull_objective, pflex_error_t *err)
{
    size_t n = p->njobs;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    struct solve_state st;
    struct seg_req req = {.prep = 1, .skip = SIZE_MAX, .budget = budget, .extra = 0, .x = x,
                          .lout = lout, .rng = &rng};
    if (seg_solve(s, &req, &st, err) < 0)
        return -1;
    *feasible = st.feasible;
    *hull_error = 0;
    if (!s->nonconvex)          /* every curve is its own hull: the hull optimum stands */
        return 0;
    double hull_obj = 0, act_obj = 0, worst = 0;
    size_t jw = SIZE_MAX;
    for (size_t j = 0; j < n; j++) {
        const struct pflex_alloc_job *jb = &p->jobs[j];
        double lh = lout[j], la = lh;   /* at a vertex the curve is on its hull */
        if (isnan(lh)) {
            lh = hull_loss(s, j, x[j]);
            la = curve_loss(jb->x, jb->loss, jb->npoints, x[j]);
        }
        double a = job_a(s, j);
        hull_obj += a * (1.0 - lh);
        act_obj += a * (1.0 - la);
        double e = a * (la - lh);
        if (e > worst && la - lh > 1e-12) {
            worst = e;
            jw = j;
        }
    }
    *hull_error = jw != SIZE_MAX;
    *hull_objective = hull_obj;
    if (jw == SIZE_MAX || !st.feasible)
        return 0;
    /* Repair: put the worst job at each measured point of its hull segment
     * (both ends included) and let the others rebalance: at most 16 tries,
     * both ends and evenly spaced measured points between them. */
    const struct pflex_alloc_job *jb = &p->jobs[jw];
    size_t nv = model_vertices(s, jw);
    double xl = 0, xr = 0;
    for (size_t k = 0; k + 1 < nv; k++)
        if (s->hx[k] <= x[jw] && x[jw] <= s->hx[k + 1]) {
            xl = s->hx[k];
            xr = s->hx[k + 1];
            break;
        }
    size_t inside = 0, k0 = 0;
    for (size_t k = 0; k < jb->npoints; k++)
        if (jb->x[k] > xl && jb->x[k] < xr) {
            if (!inside)
                k0 = k;
            inside++;
        }
    size_t mid = inside < 14 ? inside : 14, tries = mid + 2;
    double xv[16];
    for (size_t t = 0; t < tries; t++)
        xv[t] = t == 0 ? xl : t == tries - 1 ? xr : jb->x[k0 + (t - 1) * inside / mid];
    int rc = repair_window(s, jw, xv, tries, budget, x, lout, &rng, err);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    /* The window could not hold every try: each re-plans every job. */
    double best = act_obj;
    double *cand = s->xbuf;
    int moved = 0;
    for (size_t t = 0; t < tries; t++) {
        struct solve_state cs;
        struct seg_req others = {.prep = 0, .skip = jw, .budget = budget,
                                 .extra = job_b(s, jw) * xv[t], .x = cand, .lout = NULL, .rng = &rng};
        if (seg_solve(s, &others, &cs, err) < 0)
            return -1;
        if (!cs.feasible)
            continue;
        cand[jw] = xv[t];
        double obj = 0;
        for (size_t j = 0; j < n; j++)
            obj += job_a(s, j) * (1.0 - curve_loss(p->jobs[j].x, p->jobs[j].loss,
                                                   p->jobs[j].npoints, cand[j]));
        if (obj > best) {
            best = obj;
            memcpy(x, cand, n * sizeof *x);
            moved = 1;
        }
    }
    if (moved)
        for (size_t j = 0; j < n; j++)
            lout[j] = NAN;
    return 0;
}

/* The per-job block: x, limit, throughput_j, slope, candidate (see
 * struct scratch), laid out for n jobs; kept while n fits. */
static int plan_reserve(struct pflex_alloc_plan *plan, size_t n, pflex_error_t *err)
{
    if (!plan->priv) {
        plan->priv = calloc(1, sizeof(struct scratch));
        if (!plan->priv)
            return pflex_error_set(err, "out of memory");
    }
    struct scratch *s = plan->priv;
    size_t m = n ? n : 1;
    if (m > s->jobs_cap) {
        if (m > SIZE_MAX / (5 * sizeof(double))
            || pflex_big_reserve(&s->mem, 5 * m * sizeof(double)) < 0)
            return pflex_error_set(err, "out of memory");
        s->jobs_cap = m;
    }
    double *d = s->mem.p;
    size_t c = s->jobs_cap;
    plan->x = d;
    plan->limit = s->u = d + c;
    plan->throughput_j = d + 2 * c;
    s->slope = d + 3 * c;
    s->xbuf = d + 4 * c;
    return 0;
}

int pflex_alloc_plan(const struct pflex_alloc_problem *p, enum pflex_policy policy,
                     struct pflex_alloc_plan *plan, pflex_error_t *err)
{
    if ((unsigned)policy >= PFLEX_POLICY_COUNT)
        return pflex_error_set(err, "unknown policy %d", (int)policy);
    if (!isfinite(p->budget_w))
        return pflex_error_set(err, "the budget is not a finite number");
    size_t n = p->njobs;
    if (plan_reserve(plan, n, err) < 0)
        return -1;
    struct scratch *s = plan->priv;
    if (prepare(p, policy, s, err) < 0)
        return -1;
    int feasible = 1, hull_error = 0;
    double hull_obj = NAN;
    double *x = plan->x;
    /* optimal: each job's loss where the knapsack left it, kept in the
     * throughput array until the job's throughput replaces it (NaN: to be
     * read off the curve) */
    double *lout = policy == PFLEX_POLICY_OPTIMAL ? plan->throughput_j : NULL;
    switch (policy) {
    case PFLEX_POLICY_EQUAL:
    case PFLEX_POLICY_PROPORTIONAL:
    case PFLEX_POLICY_PFI_WEIGHTED:
        feasible = solve_fill(s, n, s->base - p->budget_w, x);
        break;
    case PFLEX_POLICY_COUNT:
        break;
    case PFLEX_POLICY_PFI: {
        uint64_t rng = 0x9e3779b97f4a7c15ull;
        struct solve_state st;
        struct seg_req req = {.prep = 1, .skip = SIZE_MAX, .budget = p->budget_w, .extra = 0, .x = x,
                              .lout = NULL, .rng = &rng};
        if (seg_solve(s, &req, &st, err) < 0)
            return -1;
        feasible = st.feasible;
        break;
    }
    case PFLEX_POLICY_OPTIMAL:
        if (solve_optimal(p, s, p->budget_w, x, lout, &feasible, &hull_error, &hull_obj,
                          err) < 0)
            return -1;
        break;
    }
    double pw = 0;
    for (size_t j = 0; j < n; j++) {
        if (x[j] > s->u[j]) {
            x[j] = s->u[j];
            if (lout)
                lout[j] = NAN;
        }
        pw += job_b(s, j) * (1.0 - x[j]);
    }
    if (feasible)
        enforce_budget(s, n, p->budget_w, x, lout, pw);
    plan->policy = policy;
    plan->njobs = n;
    plan->baseline_w = s->base;
    plan->budget_w = p->budget_w;
    plan->power_w = 0;
    plan->throughput = 0;
    plan->objective = 0;
    plan->measured = 1;
    plan->measured_throughput = 0;
    plan->measured_objective = 0;
    plan->floor_violations = 0;
    const int model_only = policy == PFLEX_POLICY_PFI || policy == PFLEX_POLICY_PFI_WEIGHTED;
    for (size_t j = 0; j < n; j++) {
        const struct pflex_alloc_job *jb = &p->jobs[j];
        double l, lm;       /* the policy's loss; the measured one */
        if (!jb->npoints) {
            l = lm = s->slope[j] * x[j];
            plan->measured = 0;
        } else {
            if (lout && !isnan(lout[j]))
                lm = lout[j];
            else
                lm = curve_loss(jb->x, jb->loss, jb->npoints, x[j]);
            l = model_only ? s->slope[j] * x[j] : lm;
            if (jb->floor > 0 && 1.0 - lm < jb->floor * (1 - 1e-9))
                plan->floor_violations++;
        }
        plan->throughput_j[j] = jb->t0 * (1.0 - l);
        plan->throughput += plan->throughput_j[j];
        plan->objective += job_a(s, j) * (1.0 - l);
        plan->measured_throughput += jb->t0 * (1.0 - lm);
        plan->measured_objective += job_a(s, j) * (1.0 - lm);
        plan->power_w += job_b(s, j) * (1.0 - x[j]);
    }
    plan->feasible = plan->power_w <= p->budget_w;
    plan->gap_bound = 0;
    if (policy == PFLEX_POLICY_OPTIMAL && plan->feasible && hull_error) {
        double g = hull_obj - plan->objective;
        plan->gap_bound = g > 0 ? g : 0;
    }
    return 0;
}

int pflex_alloc_score(const struct pflex_alloc_problem *p, const double *x,
                      struct pflex_alloc_score *out, pflex_error_t *err)
{
    memset(out, 0, sizeof *out);
    for (size_t j = 0; j < p->njobs; j++) {
        const struct pflex_alloc_job *jb = &p->jobs[j];
        if (!jb->npoints)
            return pflex_error_set(err, "job %zu '%s': no measured curve to score on", j + 1,
                                   jb->name ? jb->name : "?");
        double l = curve_loss(jb->x, jb->loss, jb->npoints, x[j]);
        double scale = p->objective == PFLEX_OBJECTIVE_PROGRESS ? (double)jb->gpus : jb->t0;
        out->throughput += jb->t0 * (1.0 - l);
        out->objective += jb->weight * scale * (1.0 - l);
        out->power_w += (double)jb->gpus * jb->p0_w * (1.0 - x[j]);
        if (jb->floor > 0 && 1.0 - l < jb->floor * (1 - 1e-9))
            out->sla_violations++;
    }
    return 0;
}

double pflex_alloc_gap_recovered(double te, double tp, double to)
{
    double scale = fabs(to) > 0 ? fabs(to) : 1;
    return to - te > 1e-6 * scale ? (tp - te) / (to - te) : NAN;
}

int pflex_alloc_compare(const struct pflex_alloc_problem *p,
                        struct pflex_alloc_comparison *out, pflex_error_t *err)
{
    struct pflex_alloc_plan plan;
    pflex_alloc_plan_init(&plan);
    memset(out, 0, sizeof *out);
    int rc = 0;
    for (int k = 0; k < PFLEX_POLICY_COUNT && rc == 0; k++) {
        if (k == PFLEX_POLICY_PROPORTIONAL && !p->rate_by)
            continue;
        rc = pflex_alloc_plan(p, (enum pflex_policy)k, &plan, err);
        if (rc == 0)
            rc = pflex_alloc_score(p, plan.x, &out->score[k], err);
        out->feasible[k] = plan.feasible;
        out->ran[k] = 1;
        if (k == PFLEX_POLICY_OPTIMAL)
            out->gap_bound = plan.gap_bound;
    }
    pflex_alloc_plan_fini(&plan);
    if (rc < 0)
        return -1;
    double te = out->score[PFLEX_POLICY_EQUAL].objective;
    double to = out->score[PFLEX_POLICY_OPTIMAL].objective;
    for (int k = 0; k < PFLEX_POLICY_COUNT; k++) {
        out->gap_recovered[k] = out->ran[k]
            ? pflex_alloc_gap_recovered(te, out->score[k].objective, to) : NAN;
        out->per_job_recovered[k] = out->ran[k] && p->njobs
            ? (out->score[k].throughput - out->score[PFLEX_POLICY_EQUAL].throughput)
              / (double)p->njobs
            : NAN;
    }
    return 0;
}
