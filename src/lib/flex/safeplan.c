/* safeplan.c — one control period's caps: the optimal split of the site
 * limit in the cap domain, floors kept or their breach reported, holds on
 * missing telemetry, whole-watt caps under the limit (pflex/flex/safeplan.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/util/grow.h"
#include "lib/util/interp.h"
#include "pflex/flex/safeplan.h"

/* Job j's curve in the cap domain as the last plan built it: kept while
 * the job's gen (pflex_site_job.gen), its largest cap and its GPUs' least
 * minimum are the same, since the same points give the same curve.  A
 * site's curves change a few at a time: a controller refits a job on a
 * reading that can move it, and the rest of the site's hundreds stand
 * (building them every period was a fifth of a simulated site's CPU). */
struct curve {
    unsigned long gen;      /* 0: nothing kept */
    double cmax, gmin;
    size_t npts, cy, cl, ch;    /* points; room in y, l, h */
    double *y, *l, *h;
};

struct jobstate {
    size_t n;               /* reachable GPUs */
    double cmax, cmin;      /* largest max limit (or its ceil_w: give-back), largest
                             * min limit over them */
    double cfull;           /* largest max limit over them, whatever the ceiling */
    double gmin;            /* smallest min limit over them */
    double y_hw;            /* 1 - cmin/cmax: the deepest cut the plan makes */
    double y_end;           /* 1 - gmin/cmax: where the curve must reach (a held
                             * GPU may sit as low as its own minimum) */
    double u_floor;         /* deepest y the pessimistic curve keeps the floor at */
    double step;            /* caps are whole multiples of it, W (cap_step_w) */
    const struct curve *cv;     /* its curve in the cap domain */
};

struct scratch {
    struct jobstate *js;
    struct pflex_alloc_job *aj;
    struct curve *cv;           /* per job, c_cv of them (zeroed as they grow) */
    double *need;               /* per job (spend_rounding) */
    size_t *order;
    size_t c_js, c_need, c_aj, c_cv, c_order, c_cap, c_jcap, c_jloss, c_fb, c_pcap;
    struct pflex_alloc_plan alloc;
    struct pflex_alloc_plan alloc_eq;   /* equal cuts (guard_equal) */
    struct pflex_alloc_plan alloc_up;   /* the optimum on the optimistic curves (optimist) */
    struct pflex_alloc_job *aj_up;      /* the jobs on those curves */
    double *up;                         /* their points, room for c_up */
    size_t c_ajup, c_up;
};

void pflex_safe_plan_init(struct pflex_safe_plan *p)
{
    memset(p, 0, sizeof *p);
}

void pflex_safe_plan_fini(struct pflex_safe_plan *p)
{
    struct scratch *s = p->priv;
    if (s) {
        free(s->js);
        free(s->aj);
        for (size_t j = 0; j < s->c_cv; j++) {
            free(s->cv[j].y);
            free(s->cv[j].l);
            free(s->cv[j].h);
        }
        free(s->cv);
        free(s->order);
        free(s->need);
        pflex_alloc_plan_fini(&s->alloc);
        pflex_alloc_plan_fini(&s->alloc_eq);
        pflex_alloc_plan_fini(&s->alloc_up);
        free(s->aj_up);
        free(s->up);
        free(s);
    }
    free(p->cap_w);
    free(p->job_cap_w);
    free(p->job_loss);
    free(p->floor_breached);
    free(p->probe_cap_w);
    memset(p, 0, sizeof *p);
}

/* Room for n jobs' curves, the new ones empty. */
static int grow_curves(struct scratch *s, size_t n)
{
    size_t old = s->c_cv;
    if (pflex_grow((void **)&s->cv, &s->c_cv, n, sizeof *s->cv) < 0)
        return -1;
    if (s->c_cv > old)
        memset(s->cv + old, 0, (s->c_cv - old) * sizeof *s->cv);
    return 0;
}

/* Buffers for a problem this size; nothing allocated when an earlier one
 * was as large (each job's curve grows when it is built). */
static int ensure(struct pflex_safe_plan *p, const struct pflex_safe_input *in, size_t maxpts)
{
    struct scratch *s = p->priv;
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            return -1;
        pflex_alloc_plan_init(&s->alloc);
        pflex_alloc_plan_init(&s->alloc_eq);
        pflex_alloc_plan_init(&s->alloc_up);
        p->priv = s;
    }
    if (pflex_grow((void **)&s->js, &s->c_js, in->njobs, sizeof *s->js)
        || pflex_grow((void **)&s->aj, &s->c_aj, in->njobs, sizeof *s->aj)
        || grow_curves(s, in->njobs)
        || pflex_grow((void **)&s->order, &s->c_order, maxpts > in->njobs ? maxpts : in->njobs,
                      sizeof *s->order)
        || pflex_grow((void **)&s->need, &s->c_need, in->njobs, sizeof *s->need)
        || pflex_grow((void **)&p->cap_w, &s->c_cap, in->ngpus, sizeof *p->cap_w)
        || pflex_grow((void **)&p->job_cap_w, &s->c_jcap, in->njobs, sizeof *p->job_cap_w)
        || pflex_grow((void **)&p->job_loss, &s->c_jloss, in->njobs, sizeof *p->job_loss)
        || pflex_grow((void **)&p->floor_breached, &s->c_fb, in->njobs, sizeof *p->floor_breached)
        || pflex_grow((void **)&p->probe_cap_w, &s->c_pcap, in->njobs, sizeof *p->probe_cap_w))
        return -1;
    return 0;
}

/* Linear interpolation on ascending ys, clipped to the range. */
static double at(const double *ys, const double *v, size_t n, double y)
{
    return pflex_interp_linear(ys, v, n, y);
}

/* The step caps are whole multiples of, W (cap_step_w; unset: a watt). */
static double cap_step(const struct pflex_safe_input *in)
{
    return in->cap_step_w > 0 ? in->cap_step_w : 1;
}

/* Caps are whole multiples of a step (pflex_safe_input.cap_step_w): v
 * rounded down and up to one. */
static double step_down(double v, double step)
{
    return floor(v / step + 1e-6) * step;
}

static double step_up(double v, double step)
{
    return ceil(v / step - 1e-6) * step;
}

/* The deepest cut at which job js keeps its floor, relaxed by r in [0, 2]:
 * r = 0 on the pessimistic curve h; up to 1 the pessimistic margin shrinks
 * (h - l scaled by 1 - r); past 1 the mean curve l with the floor scaled
 * by 2 - r; at 2 no floor (the hardware range).  Non-decreasing in r.  The
 * cap is rounded up to a whole step, and to a whole watt under a finer
 * step: caps of whole steps at the limit still keep the floor, with the
 * margin whole watts have always left it (the pessimistic curve's 2 sd
 * alone, at a 0.25 W step, let the flex1 job of the field demonstration
 * fall under its floor in a period of the simulated 20 % cut, seed 9,
 * online-warm). */
static double floor_cut(const struct jobstate *js, double floor, double r)
{
    if (!(floor > 0) || r >= 2)
        return js->y_hw;
    double a = r < 1 ? 1 - r : 0, lim = 1 - (r > 1 ? floor * (2 - r) : floor);
    const double *y = js->cv->y, *l = js->cv->l, *h = js->cv->h;
    size_t n = js->cv->npts;
    double u = y[n - 1];
    for (size_t i = 1; i < n; i++) {
        double v1 = l[i] + a * (h[i] - l[i]);
        if (v1 > lim) {
            double v0 = l[i - 1] + a * (h[i - 1] - l[i - 1]);
            u = v0 >= lim ? y[i - 1] : y[i - 1] + (y[i] - y[i - 1]) * (lim - v0) / (v1 - v0);
            break;
        }
    }
    double C = js->cmax, cap = step_up(C * (1 - u), js->step > 1 ? js->step : 1);
    u = cap >= C ? 0 : 1 - cap / C;
    return u < js->y_hw ? u : js->y_hw;
}

/* Power the jobs need with every floor relaxed by r (their caps at the
 * floors' cuts). */
static double floors_need(const struct scratch *s, const struct pflex_safe_input *in, double r)
{
    double w = 0;
    for (size_t j = 0; j < in->njobs; j++) {
        const struct jobstate *js = &s->js[j];
        if (!js->n)
            continue;
        double u = floor_cut(js, in->jobs[j].floor, r);
        w += (double)js->n * js->cmax * (1 - u);
    }
    return w;
}

/* The GPUs an entry stands for. */
static double gcount(const struct pflex_site_gpu *gp)
{
    return gp->count ? (double)gp->count : 1.0;
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Job j's curve as kept (NULL: none for its gen). */
static const struct curve *kept(const struct scratch *s, const struct pflex_site_job *jb, size_t j)
{
    return s && jb->gen && j < s->c_cv && s->cv[j].gen == jb->gen ? &s->cv[j] : NULL;
}

/* Check the input (a curve kept for its gen was checked when it was
 * built); *maxpts: the most points of one job's curve. */
static int check_input(const struct pflex_safe_input *in, const struct scratch *s, size_t *maxpts,
                       pflex_error_t *err)
{
    *maxpts = 1;
    for (size_t j = 0; j < in->njobs; j++) {
        const struct pflex_site_job *jb = &in->jobs[j];
        if (!(jb->t0 > 0) || !isfinite(jb->t0))
            return pflex_error_set(err, "job %zu: baseline throughput must be positive", j);
        if (!(jb->weight >= 0) || !isfinite(jb->weight))
            return pflex_error_set(err, "job %zu: weight must be 0 or more", j);
        if (!(jb->floor >= 0 && jb->floor <= 1))
            return pflex_error_set(err, "job %zu: floor must be in [0, 1]", j);
        if (jb->n && (!jb->cap_w || !jb->loss))
            return pflex_error_set(err, "job %zu: curve arrays missing", j);
        if (!kept(s, jb, j))
            for (size_t k = 0; k < jb->n; k++)
                if (!isfinite(jb->cap_w[k]) || !isfinite(jb->loss[k])
                    || (jb->loss_hi && !isfinite(jb->loss_hi[k])))
                    return pflex_error_set(err, "job %zu: curve point %zu is not finite", j, k);
        if (jb->n + 3 > *maxpts)
            *maxpts = jb->n + 3;
    }
    for (size_t g = 0; g < in->ngpus; g++) {
        const struct pflex_site_gpu *gp = &in->gpus[g];
        if (gp->job < -1 || (gp->job >= 0 && (size_t)gp->job >= in->njobs))
            return pflex_error_set(err, "GPU %zu: job %d out of range", g, gp->job);
        if (!(gp->min_cap_w > 0) || !(gp->max_cap_w >= gp->min_cap_w) || !isfinite(gp->max_cap_w))
            return pflex_error_set(err, "GPU %zu: range must satisfy 0 < min <= max", g);
    }
    if (isnan(in->limit_w) || !isfinite(in->other_w) || in->other_w < 0)
        return pflex_error_set(err, "the limit and the other power must be numbers (other >= 0)");
    return 0;
}

/* Power that the plan cannot move (*fixed: other power and unreachable
 * GPUs at their max; *idle_min: idle GPUs at their min), the least the
 * site can draw (*least), and each job's reachable GPUs and range. */
static void survey_gpus(const struct pflex_safe_input *in, struct scratch *s, double *fixed,
                        double *least, double *idle_min)
{
    *fixed = in->other_w;
    *least = in->other_w;
    *idle_min = 0;
    for (size_t j = 0; j < in->njobs; j++)
        s->js[j] = (struct jobstate){0};
    for (size_t g = 0; g < in->ngpus; g++) {
        const struct pflex_site_gpu *gp = &in->gpus[g];
        if (!gp->reachable) {
            *fixed += gcount(gp) * gp->max_cap_w;
            *least += gcount(gp) * gp->max_cap_w;
            continue;
        }
        *least += gcount(gp) * gp->min_cap_w;
        if (gp->job < 0) {
            *idle_min += gcount(gp) * gp->min_cap_w;
            continue;
        }
        struct jobstate *js = &s->js[gp->job];
        if (js->n == 0 || gp->max_cap_w > js->cmax)
            js->cmax = gp->max_cap_w;
        if (js->n == 0 || gp->min_cap_w > js->cmin)
            js->cmin = gp->min_cap_w;
        if (js->n == 0 || gp->min_cap_w < js->gmin)
            js->gmin = gp->min_cap_w;
        js->n += gp->count ? gp->count : 1;
    }
}

/* Job jb's measured points in the cap domain into y, l, h (after the
 * origin, which they hold already): caps from the highest down, the
 * curves made monotone, cut at the hardware minimum y_end.  Returns the
 * count of points, the origin included. */
static size_t curve_points(struct scratch *s, const struct jobstate *js,
                           const struct pflex_site_job *jb, double *y, double *l, double *h)
{
    size_t m = 1;
    double C = js->cmax;
    for (size_t k = 0; k < jb->n; k++)
        s->order[k] = k;
    /* caps from the highest down, ties in their given order: a learned
     * curve's caps are nearly in order already, so an insertion sort
     * (stable, as glibc's qsort is) costs about n */
    const double *key = jb->cap_w;
    for (size_t k = 1; k < jb->n; k++) {
        size_t v = s->order[k], i = k;
        while (i > 0 && key[s->order[i - 1]] < key[v]) {
            s->order[i] = s->order[i - 1];
            i--;
        }
        s->order[i] = v;
    }
    for (size_t q = 0; q < jb->n; q++) {
        size_t k = s->order[q];
        double yk = 1 - jb->cap_w[k] / C;
        double lk = jb->loss[k], hk = jb->loss_hi ? jb->loss_hi[k] : lk;
        if (hk < lk)
            hk = lk;
        if (!(yk > y[m - 1] + 1e-9))
            continue;
        lk = clampd(lk > l[m - 1] ? lk : l[m - 1], 0, 1);
        hk = clampd(hk > lk ? hk : lk, 0, 1);
        if (yk > js->y_end + 1e-9) {
            /* past the hardware minimum: the curve up to it, then stop */
            if (js->y_end > y[m - 1] + 1e-9) {
                double f = (js->y_end - y[m - 1]) / (yk - y[m - 1]);
                y[m] = js->y_end;
                l[m] = l[m - 1] + f * (lk - l[m - 1]);
                h[m] = h[m - 1] + f * (hk - h[m - 1]);
                m++;
            }
            break;
        }
        y[m] = yk;
        l[m] = lk;
        h[m] = hk;
        m++;
    }
    /* The pessimistic curve made monotone from the deep side: the loss at
     * a cut is no more than at any deeper one, so its bound is the least
     * of theirs.  From the shallow side (the largest bound above it) a
     * point read hundreds of times took the prior's doubt of the unread
     * points above it, and two well-read plans looked alike to the guard. */
    for (size_t i = m - 1; i-- > 1;)
        if (h[i] > h[i + 1])
            h[i] = h[i + 1];
    return m;
}

/* Extend a curve of m points that stops short of the hardware minimum
 * to it, pessimistically: at least one point of loss per point of cut,
 * steeper where its last segment is.  Returns the new count. */
static size_t curve_extend(const struct jobstate *js, double *y, double *l, double *h, size_t m)
{
    if (!(js->y_end > y[m - 1] + 1e-9))
        return m;
    double sl = 1, sh = 1;
    if (m >= 3) {
        double d = y[m - 1] - y[m - 2];
        double a = (l[m - 1] - l[m - 2]) / d, b = (h[m - 1] - h[m - 2]) / d;
        sl = a > 1 ? a : 1;
        sh = b > 1 ? b : 1;
    }
    double dy = js->y_end - y[m - 1];
    y[m] = js->y_end;
    l[m] = clampd(l[m - 1] + sl * dy, 0, 1);
    h[m] = clampd(h[m - 1] + sh * dy, 0, 1);
    if (h[m] < l[m])
        h[m] = l[m];
    return m + 1;
}

/* Each job's curve in the cap domain: y = 1 - cap/C, monotone, extended
 * pessimistically to the hardware minimum, and its allocation job.
 * *nactive: the count of jobs with GPUs; *floors_bind when a floor keeps
 * a job above its hardware minimum.  0, or -1 out of memory. */
static int build_curves(const struct pflex_safe_input *in, struct scratch *s, size_t *nactive_out,
                        int *floors_bind)
{
    size_t nactive = 0;
    *floors_bind = 0;
    for (size_t j = 0; j < in->njobs; j++) {
        struct jobstate *js = &s->js[j];
        const struct pflex_site_job *jb = &in->jobs[j];
        if (!js->n)
            continue;
        js->cfull = js->cmax;
        js->step = cap_step(in);
        /* give-back: the plan's largest cap for the job is its ceiling,
         * whole steps up, never under its GPUs' least limit; the curve
         * above it is flat (the cap does not bind there) and is not read */
        if (isfinite(in->limit_w) && jb->ceil_w > 0 && jb->ceil_w < js->cmax) {
            double e = step_up(jb->ceil_w, js->step);
            e = e > js->cmin ? e : js->cmin;
            js->cmax = e < js->cmax ? e : js->cmax;
        }
        double C = js->cmax;
        js->y_hw = C > js->cmin ? 1 - js->cmin / C : 0;
        js->y_end = C > js->gmin ? 1 - js->gmin / C : 0;
        struct curve *cv = &s->cv[j];
        if (!(kept(s, jb, j) && cv->cmax == C && cv->gmin == js->gmin)) {
            cv->gen = 0;
            if (pflex_grow((void **)&cv->y, &cv->cy, jb->n + 3, sizeof *cv->y)
                || pflex_grow((void **)&cv->l, &cv->cl, jb->n + 3, sizeof *cv->l)
                || pflex_grow((void **)&cv->h, &cv->ch, jb->n + 3, sizeof *cv->h))
                return -1;
            cv->y[0] = 0;
            cv->l[0] = 0;
            cv->h[0] = 0;
            cv->npts = curve_extend(js, cv->y, cv->l, cv->h, curve_points(s, js, jb, cv->y, cv->l, cv->h));
            cv->gen = jb->gen;
            cv->cmax = C;
            cv->gmin = js->gmin;
        }
        js->cv = cv;
        js->u_floor = floor_cut(js, jb->floor, 0);
        if (js->u_floor < js->y_hw - 1e-12)
            *floors_bind = 1;
        struct pflex_alloc_job *a = &s->aj[nactive++];
        *a = (struct pflex_alloc_job){
            .name = jb->name, .gpus = (int)js->n, .npoints = (unsigned)cv->npts, .p0_w = C, .t0 = jb->t0,
            .cap0_w = C, .weight = jb->weight, .floor = 0, .x_hi = js->u_floor, .pfi = NAN,
            .x = cv->y, .loss = cv->l,
        };
    }
    *nactive_out = nactive;
    return 0;
}

/* The least relaxation r in [0, 2] whose floors fit the budget (2: none
 * does, the floors are dropped), to within 2^-40. */
static double least_relax(const struct scratch *s, const struct pflex_safe_input *in,
                          double budget)
{
    double r = 2;
    if (floors_need(s, in, 2) <= budget) {
        double lo = 0;
        for (int it = 0; it < 40; it++) {
            double mid = (lo + r) / 2;
            if (floors_need(s, in, mid) <= budget)
                r = mid;
            else
                lo = mid;
        }
    }
    return r;
}

/* Split the budget over the nactive jobs with the optimal policy; the
 * cuts land in s->alloc.x.  0, or -1 with err. */
static int split_budget(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                        struct scratch *s, double budget, size_t nactive, int floors_bind,
                        pflex_error_t *err)
{
    struct pflex_alloc_problem prob = {.njobs = nactive, .jobs = s->aj, .budget_w = budget,
                                       .objective = in->objective};
    if (pflex_alloc_plan(&prob, PFLEX_POLICY_OPTIMAL, &s->alloc, err) < 0)
        return -1;
    if (s->alloc.feasible || !floors_bind)
        return 0;
    /* Safety first: the floors give way, no further than the limit needs
     * (the least relaxation r whose floors fit the budget), and the breach
     * is reported.  Dropping them outright would let the plan cut a job
     * anywhere on its mean curve, which past the deepest cut observed is
     * the prior's guess, not knowledge. */
    double r = least_relax(s, in, budget);
    out->floor_relax = r;
    size_t a = 0;
    for (size_t j = 0; j < in->njobs; j++)
        if (s->js[j].n) {
            const struct jobstate *js = &s->js[j];
            s->aj[a++].x_hi = floor_cut(js, in->jobs[j].floor, r);
        }
    return pflex_alloc_plan(&prob, PFLEX_POLICY_OPTIMAL, &s->alloc, err) < 0 ? -1 : 0;
}

/* The cut x as the plan sets it, with probe_dx (guard_equal): its cap
 * whole steps down, where the probes' readings are; a blend judged a
 * fraction of a watt off them read the curve's line to the next point,
 * tens of watts away, and its margin outweighed the gain. */
static double judged(const struct pflex_safe_input *in, const struct jobstate *js, double x)
{
    if (!(in->probe_dx > 0))
        return x;
    double c = step_down(js->cmax * (1 - x) + 1e-9, js->step);
    return c >= js->cmax ? 0 : 1 - c / js->cmax;
}

/* Job j's weight in the objective (a_j). */
static double job_w(const struct pflex_safe_input *in, const struct jobstate *js, size_t j)
{
    return in->jobs[j].weight * (in->objective == PFLEX_OBJECTIVE_PROGRESS ? (double)js->n : in->jobs[j].t0);
}

/* The optimistic probe (guard_equal, probe_dx): where no blend toward
 * the optimum on the mean curves is worth reading, the plan probes the
 * optimum on the optimistic curves (mean less margin, made monotone)
 * within probe_dx of its own cuts, the floors kept on the pessimistic
 * curves.  Jobs alike in their priors have their mean optimum at equal
 * cuts, read there and nowhere else: each job's curve past its reading
 * goes on nearer its prior's slope than its chord's, so every reading is
 * a corner the mean optimum sits on, and nothing a job shows of its own
 * slope moves the plan.  The optimistic curves differ where the readings
 * do, and their optimum near the plan is where a reading could move the
 * plan most (an upper confidence bound); its readings shrink the margins
 * it was chosen on, so the walk stops where the readings close them (the
 * controller reads a probe while one of its jobs is not known there).
 * Each job is planned in its trust region [x - probe_dx, x + probe_dx]
 * as a job of its own whose largest cap is the region's top: the caps
 * sum to the budget as the plan's do, and a cut the region's bottom
 * clamps only lowers a cap.  x: the plan's cuts; into probe_cap_w, with
 * probe_blend the share of probe_dx the probe moves the most moved job
 * (0: none).  0, or -1 with err. */
static int optimist(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                    struct scratch *s, double budget, size_t nactive, const double *x,
                    pflex_error_t *err)
{
    size_t tot = 0;
    for (size_t j = 0; j < in->njobs; j++)
        if (s->js[j].n)
            tot += 2 * (s->js[j].cv->npts + 1);
    if (pflex_grow((void **)&s->aj_up, &s->c_ajup, nactive, sizeof *s->aj_up)
        || pflex_grow((void **)&s->up, &s->c_up, tot ? tot : 1, sizeof *s->up))
        return pflex_error_set(err, "out of memory");
    double *o = s->up, dx = in->probe_dx;
    size_t a = 0;
    for (size_t j = 0; j < in->njobs; j++) {
        const struct jobstate *js = &s->js[j];
        if (!js->n)
            continue;
        const struct curve *cv = js->cv;
        size_t n = cv->npts;
        double *oy = o, *ol = o + n + 1;
        /* the optimistic curve, monotone */
        for (size_t i = 0; i < n; i++) {
            double v = 2 * cv->l[i] - cv->h[i];
            v = v > 0 ? v : 0;
            ol[i] = i && ol[i - 1] > v ? ol[i - 1] : v;
        }
        /* rebased at the region's top lo: y' = (y - lo) / (1 - lo) */
        double lo = x[a] - dx > 0 ? x[a] - dx : 0, hi = x[a] + dx;
        double l0 = at(cv->y, ol, n, lo);
        size_t m = 0;
        oy[m] = 0;
        double keep0 = 0;
        for (size_t i = 0; i < n; i++)
            if (cv->y[i] > lo + 1e-12) {
                if (!m) {
                    keep0 = l0;
                    ol[0] = 0;
                    m = 1;
                }
                oy[m] = (cv->y[i] - lo) / (1 - lo);
                ol[m] = ol[i] - keep0;
                m++;
            }
        if (!m)
            m = 1, ol[0] = 0;
        /* ol[i] for i >= m was read before it was overwritten: the points
         * ascend, so ol[m] takes ol[i] with i >= m - 1 */
        struct pflex_alloc_job *u = &s->aj_up[a];
        *u = s->aj[a];
        double xh = s->aj[a].x_hi < hi ? s->aj[a].x_hi : hi;
        u->p0_w = u->cap0_w = s->aj[a].cap0_w * (1 - lo);
        u->x = oy;
        u->loss = ol;
        u->npoints = (unsigned)m;
        u->x_hi = xh > lo ? (xh - lo) / (1 - lo) : 0;
        o += 2 * (n + 1);
        a++;
    }
    struct pflex_alloc_problem prob = {.njobs = nactive, .jobs = s->aj_up, .budget_w = budget,
                                       .objective = in->objective};
    if (pflex_alloc_plan(&prob, PFLEX_POLICY_OPTIMAL, &s->alloc_up, err) < 0)
        return -1;
    if (!s->alloc_up.feasible)
        return 0;
    double d = 0;
    a = 0;
    for (size_t j = 0; j < in->njobs; j++) {
        const struct jobstate *js = &s->js[j];
        if (!js->n)
            continue;
        double lo = x[a] - dx > 0 ? x[a] - dx : 0;
        double xp = lo + s->alloc_up.x[a] * (1 - lo);
        out->probe_cap_w[j] = js->cmax * (1 - xp);
        d = fabs(xp - x[a]) > d ? fabs(xp - x[a]) : d;
        a++;
    }
    out->probe_blend = d > 1e-9 ? d / dx : 0;
    if (!(d > 1e-9))
        for (size_t j = 0; j < in->njobs; j++)
            out->probe_cap_w[j] = NAN;
    return 0;
}

/* Equal cuts as the baseline the plan must beat (guard_equal): the cuts
 * become x_eq + t (x_opt - x_eq) for the t in {0, 1/4, .., 1} whose gain
 * over equal cuts is largest on both the mean curves and pessimistically
 * (the least of the two; sum_j a_j (L_j(x_eq) - L_j(x_t)), a_j the job's
 * weight in the objective); t = 0, equal cuts, unless some blend beats
 * them on both.  Pessimistically, each job's gain less the margin of the
 * difference of its two points, sqrt(|m_t^2 - m_eq^2|) of their margins
 * m = h - l: the learner's curve departs from its prior as a Wiener
 * process, whose increment between two points on one side of a reading
 * has the difference of their variances.  (The margins subtracted, h(x_eq)
 * - h(x_t), credited a job raised to a better-known point with the doubt
 * it left, and moved the plan to optimums of the prior's guesses.)  What
 * is as uncertain under both plans is no reason to prefer either.  Every blend meets the budget
 * and the floors, as both ends do.  out->blend is t; out->voi what
 * knowing the curves could still win this period, at most: the largest
 * gain on the optimistic curves (mean less margin) less the gain taken,
 * in the objective's units.
 *
 * With probe_dx, the blends are a step apart that moves no job's cut by
 * more than probe_dx (quarters at least, 64 at most), and the next blend
 * on from the plan's is named to probe (probe_cap_w) when it keeps more
 * on the mean curves than the plan: a blend of two plans that meet the
 * budget and the floors meets them too, so the probe moves watts from
 * the jobs the optimum cuts to those it spares and the site stays under
 * the limit, while its expected loss (the mean curves are the posterior
 * means) is no more than the plan's.  Its readings are where the next
 * plan judges the next blend: the pessimistic margin there shrinks to the
 * readings' noise, and the plan walks toward the optimum as far as the
 * readings bear it out.  0, or -1 with err. */
static int guard_equal(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                       struct scratch *s, double budget, size_t nactive, pflex_error_t *err)
{
    struct pflex_alloc_problem prob = {.njobs = nactive, .jobs = s->aj, .budget_w = budget,
                                       .objective = in->objective};
    if (pflex_alloc_plan(&prob, PFLEX_POLICY_EQUAL, &s->alloc_eq, err) < 0)
        return -1;
    if (!s->alloc_eq.feasible || !s->alloc.feasible)
        return 0;       /* the limit needs what the optimum found: no choice */
    const double *xo = s->alloc.x, *xe = s->alloc_eq.x;
    int steps = 4;
    if (in->probe_dx > 0) {
        double d = 0;
        for (size_t a = 0; a < nactive; a++)
            d = fabs(xo[a] - xe[a]) > d ? fabs(xo[a] - xe[a]) : d;
        double k = ceil(d / in->probe_dx / 4 - 1e-9) * 4;
        steps = k > 64 ? 64 : k > 4 ? (int)k : 4;
    }
    double best_t = 0, best = 0, best_mean = 0, lo_max = 0;
    int best_k = 0;
    double gm_k[65], rest_k[65];    /* per blend: its mean gain; the margin its own readings leave */
    for (int k = 1; k <= steps; k++) {
        double t = (double)k / steps, g_mean = 0, g_hi = 0, g_lo = 0, rest = 0;
        size_t a = 0;
        for (size_t j = 0; j < in->njobs; j++) {
            const struct jobstate *js = &s->js[j];
            if (!js->n)
                continue;
            const double *y = js->cv->y, *l = js->cv->l, *h = js->cv->h;
            size_t n = js->cv->npts;
            double w = job_w(in, js, j);
            double x = judged(in, js, xe[a] + t * (xo[a] - xe[a])), x0 = judged(in, js, xe[a]);
            double le = at(y, l, n, x0), lt = at(y, l, n, x);
            double me = at(y, h, n, x0) - le, mt = at(y, h, n, x) - lt;
            g_mean += w * (le - lt);
            double md = sqrt(fabs(mt * mt - me * me));
            g_hi += w * (le - lt - md);
            g_lo += w * (le - lt + md);
            if (fabs(x - x0) > 1e-12)
                rest += w * me;
            a++;
        }
        gm_k[k] = g_mean;
        rest_k[k] = rest;
        double g = g_mean < g_hi ? g_mean : g_hi;
        if (g > best) {
            best = g;
            best_t = t;
            best_k = k;
            best_mean = g_mean;
        }
        if (g_lo > lo_max)
            lo_max = g_lo;
        if (g_mean > lo_max)
            lo_max = g_mean;
    }
    /* the probe: the nearest blend on whose mean gain over the plan's,
     * less the margin at equal cuts that no reading of the blend removes,
     * would beat the plan once the blend is read */
    int kp = 0;
    for (int k = best_k + 1; in->probe_dx > 0 && k <= steps && !kp; k++)
        if (gm_k[k] - rest_k[k] > best && gm_k[k] > (best_k ? gm_k[best_k] : 0))
            kp = k;
    if (kp) {
        double tp = (double)kp / steps;
        size_t a = 0;
        for (size_t j = 0; j < in->njobs; j++) {
            const struct jobstate *js = &s->js[j];
            if (!js->n)
                continue;
            double x = xe[a] + best_t * (xo[a] - xe[a]), xp = xe[a] + tp * (xo[a] - xe[a]);
            if (fabs(xp - x) > 1e-9)
                out->probe_cap_w[j] = js->cmax * (1 - xp);
            a++;
        }
        out->probe_blend = tp;
    }
    for (size_t a = 0; a < nactive; a++)
        s->alloc.x[a] = xe[a] + best_t * (xo[a] - xe[a]);
    if (!kp && in->probe_dx > 0 && optimist(in, out, s, budget, nactive, s->alloc.x, err) < 0)
        return -1;
    out->blend = best_t;
    out->voi = lo_max > best_mean ? lo_max - best_mean : 0;
    return 0;
}

/* Per job cap from its cut x_of (NULL: no cut), then per GPU: whole steps
 * down, clamped, held. */
static void set_caps(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                     const struct scratch *s, const double *x_of, int limited)
{
    size_t a = 0;
    for (size_t j = 0; j < in->njobs; j++) {
        const struct jobstate *js = &s->js[j];
        if (!js->n) {
            out->job_cap_w[j] = NAN;
            continue;
        }
        double x = x_of ? x_of[a] : 0;
        a++;
        out->job_cap_w[j] = js->cmax * (1 - x);
    }
    double step = cap_step(in);
    for (size_t g = 0; g < in->ngpus; g++) {
        const struct pflex_site_gpu *gp = &in->gpus[g];
        if (!gp->reachable) {
            out->cap_w[g] = NAN;
            continue;
        }
        double c;
        if (gp->job < 0)
            c = limited ? gp->min_cap_w : gp->max_cap_w;
        else if (out->job_cap_w[gp->job] >= gp->max_cap_w)
            c = gp->max_cap_w;      /* uncut: the GPU's own largest limit, a step or not (a
                                     * learner reads its baseline there, none a step under it) */
        else
            c = step_down(out->job_cap_w[gp->job], step);
        c = clampd(c, gp->min_cap_w, gp->max_cap_w);
        if ((in->hold || !gp->telemetry_ok) && isfinite(gp->cap_w) && c > gp->cap_w) {
            c = clampd(step_down(gp->cap_w, step), gp->min_cap_w, gp->max_cap_w);
            out->held += gp->count ? gp->count : 1;
        }
        out->cap_w[g] = c;
    }
}

/* Rounding each job's cap down to a whole step leaves up to a step per GPU
 * of the limit unspent: on the field demonstration's six jobs at a 30 %
 * cut and whole watts, 23 W of 66,391, a tenth of what the optimum wins
 * over equal cuts.  Spent here a step a job, the jobs taken by what the watt wins per
 * watt on their mean curves, best first, each while the watts left cover
 * all its GPUs: a cap raised never loses a job throughput nor breaks a
 * floor.  A job with a GPU held (no telemetry, or the plan holding) that
 * a step more would lift above the cap it has is left as it is. */
static void spend_rounding(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                           struct scratch *s, double fixed)
{
    double left = in->limit_w - fixed, step = cap_step(in);
    for (size_t g = 0; g < in->ngpus; g++)
        if (in->gpus[g].reachable)
            left -= gcount(&in->gpus[g]) * out->cap_w[g];
    if (!(left >= step - 1e-9))
        return;
    /* each job's watts for a step more (NaN: a GPU of it is held), and
     * what the watt wins per watt (in job_loss, free until job_costs) */
    double *need = s->need, *gain = out->job_loss;
    for (size_t j = 0; j < in->njobs; j++)
        need[j] = 0;
    for (size_t g = 0; g < in->ngpus; g++) {
        const struct pflex_site_gpu *gp = &in->gpus[g];
        if (!gp->reachable || gp->job < 0)
            continue;
        if ((in->hold || !gp->telemetry_ok) && isfinite(gp->cap_w) && out->cap_w[g] + step > gp->cap_w)
            need[gp->job] = NAN;    /* held: never above the cap it has */
        else if (out->cap_w[g] + step <= gp->max_cap_w)
            need[gp->job] += gcount(gp) * step;
    }
    size_t *order = s->order, na = 0;
    for (size_t j = 0; j < in->njobs; j++) {
        const struct jobstate *js = &s->js[j];
        gain[j] = 0;
        if (!js->n || !(need[j] > 0) || !isfinite(out->job_cap_w[j]))
            continue;
        double c = step_down(out->job_cap_w[j], step);
        if (!(c + step <= js->cmax))
            continue;
        const double *y = js->cv->y, *l = js->cv->l;
        double w = in->jobs[j].weight
                   * (in->objective == PFLEX_OBJECTIVE_PROGRESS ? (double)js->n : in->jobs[j].t0);
        double d = at(y, l, js->cv->npts, 1 - c / js->cmax) - at(y, l, js->cv->npts, 1 - (c + step) / js->cmax);
        if (!(w * d > 0))
            continue;
        gain[j] = w * d / need[j];      /* need: the step's watts over the job's GPUs */
        order[na++] = j;
    }
    /* best first (insertion sort: the jobs that gain are few) */
    for (size_t k = 1; k < na; k++) {
        size_t v = order[k], i = k;
        while (i > 0 && gain[order[i - 1]] < gain[v]) {
            order[i] = order[i - 1];
            i--;
        }
        order[i] = v;
    }
    int any = 0;
    for (size_t j = 0; j < in->njobs; j++)
        gain[j] = 0;        /* now: 1 for a job that gets its watt */
    for (size_t k = 0; k < na && left >= step - 1e-9; k++) {
        size_t j = order[k];
        if (need[j] > left + 1e-9)
            continue;
        gain[j] = 1;
        any = 1;
        out->job_cap_w[j] = step_down(out->job_cap_w[j], step) + step;
        left -= need[j];
    }
    if (any)
        for (size_t g = 0; g < in->ngpus; g++) {
            const struct pflex_site_gpu *gp = &in->gpus[g];
            if (gp->reachable && gp->job >= 0 && gain[gp->job] == 1 && out->cap_w[g] + step <= gp->max_cap_w)
                out->cap_w[g] += step;
        }
}

/* Job j is given back (a ceiling under its GPUs' largest cap) and the
 * plan holds it at that ceiling. */
static int at_ceiling(const struct pflex_safe_plan *out, const struct scratch *s, size_t j, double step)
{
    const struct jobstate *js = &s->js[j];
    return js->n && js->cfull > js->cmax && out->job_cap_w[j] >= js->cmax - step;
}

/* Give-back: the watts left once every job is at the largest cap the
 * plan counts (its ceiling for a job given back) raise the jobs given
 * back toward their GPUs' largest caps, each by the same share of its
 * span: a cap lowered only as far as the limit needs, so that a job whose
 * draw rises before the next period finds as much room as the limit
 * leaves (a held GPU never above the cap it has).  Only the jobs the plan
 * holds at their ceiling: one it cut under it was cut there to pay for
 * another's watts, and lifted back to its ceiling it took them from the
 * first GPUs in site order (trim_to_limit), whatever they were worth.
 * Sets given_w. */
static void give_back_rest(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                           const struct scratch *s, double fixed)
{
    double left = in->limit_w - fixed, span = 0, step = cap_step(in);
    out->given_w = 0;
    for (size_t g = 0; g < in->ngpus; g++)
        if (in->gpus[g].reachable)
            left -= gcount(&in->gpus[g]) * out->cap_w[g];
    for (size_t j = 0; j < in->njobs; j++)
        if (at_ceiling(out, s, j, step))
            span += (double)s->js[j].n * (s->js[j].cfull - s->js[j].cmax);
    if (!(span > 0))
        goto given;
    double f = left > 0 ? left / span : 0;
    f = f < 1 ? f : 1;
    for (size_t g = 0; g < in->ngpus; g++) {
        const struct pflex_site_gpu *gp = &in->gpus[g];
        if (!gp->reachable || gp->job < 0)
            continue;
        const struct jobstate *js = &s->js[gp->job];
        if (!at_ceiling(out, s, (size_t)gp->job, step))
            continue;
        double c = step_down(js->cmax + f * (js->cfull - js->cmax), step);
        c = clampd(c, gp->min_cap_w, gp->max_cap_w);
        if ((in->hold || !gp->telemetry_ok) && isfinite(gp->cap_w) && c > gp->cap_w)
            c = clampd(step_down(gp->cap_w, step), gp->min_cap_w, gp->max_cap_w);
        if (c > out->cap_w[g])
            out->cap_w[g] = c;
    }
    for (size_t j = 0; j < in->njobs; j++)
        if (at_ceiling(out, s, j, step))
            out->job_cap_w[j] = s->js[j].cmax + f * (s->js[j].cfull - s->js[j].cmax);
given:
    for (size_t g = 0; g < in->ngpus; g++) {
        const struct pflex_site_gpu *gp = &in->gpus[g];
        if (gp->reachable && gp->job >= 0 && s->js[gp->job].cfull > s->js[gp->job].cmax)
            out->given_w += gcount(gp) * (gp->max_cap_w - out->cap_w[g]);
    }
}

/* The worst case, counted from the caps themselves; rounding can leave it
 * a hair over the limit: take it off, GPU by GPU.  Sets worst_w and
 * feasible. */
static void trim_to_limit(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                          double fixed, int limited)
{
    double worst = fixed, step = cap_step(in);
    for (size_t g = 0; g < in->ngpus; g++)
        if (in->gpus[g].reachable)
            worst += gcount(&in->gpus[g]) * out->cap_w[g];
    if (limited && worst > in->limit_w) {
        double over = worst - in->limit_w;
        for (size_t g = 0; g < in->ngpus && over > 0; g++) {
            const struct pflex_site_gpu *gp = &in->gpus[g];
            if (!gp->reachable)
                continue;
            double room = out->cap_w[g] - gp->min_cap_w, cnt = gcount(gp);
            double cut = ceil(over / cnt / step - 1e-9) * step;
            if (cut > room)
                cut = floor(room / step + 1e-9) * step;
            if (cut <= 0)
                continue;
            out->cap_w[g] -= cut;
            worst -= cnt * cut;
            over -= cnt * cut;
        }
    }
    out->worst_w = worst;
    out->feasible = !limited || worst <= in->limit_w + 1e-6;
}

/* What the plan costs each job: at the pace of its slowest GPU; the
 * throughput and the floors breached. */
static void job_costs(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                      const struct scratch *s)
{
    out->throughput = 0;
    for (size_t j = 0; j < in->njobs; j++) {
        out->floor_breached[j] = 0;
        out->job_loss[j] = NAN;
    }
    for (size_t j = 0; j < in->njobs; j++)
        if (s->js[j].n)
            out->job_loss[j] = INFINITY;    /* min cap found below */
    for (size_t g = 0; g < in->ngpus; g++) {
        const struct pflex_site_gpu *gp = &in->gpus[g];
        if (!gp->reachable || gp->job < 0)
            continue;
        /* job_loss holds the least cap until the loop below */
        if (out->cap_w[g] < out->job_loss[gp->job])
            out->job_loss[gp->job] = out->cap_w[g];
    }
    for (size_t j = 0; j < in->njobs; j++) {
        const struct jobstate *js = &s->js[j];
        if (!js->n)
            continue;
        double y = 1 - out->job_loss[j] / js->cmax;
        double lm = at(js->cv->y, js->cv->l, js->cv->npts, y);
        double lh = at(js->cv->y, js->cv->h, js->cv->npts, y);
        out->job_loss[j] = lm;
        out->throughput += in->jobs[j].t0 * (1 - lm);
        if (in->jobs[j].floor > 0 && lh > 1 - in->jobs[j].floor + 1e-9) {
            out->floor_breached[j] = 1;
            out->floor_breaches++;
        }
    }
}

int pflex_safe_plan(const struct pflex_safe_input *in, struct pflex_safe_plan *out,
                    pflex_error_t *err)
{
    size_t maxpts;
    if (check_input(in, out->priv, &maxpts, err))
        return -1;
    if (ensure(out, in, maxpts) < 0)
        return pflex_error_set(err, "out of memory");
    struct scratch *s = out->priv;
    out->ngpus = in->ngpus;
    out->njobs = in->njobs;
    out->limit_w = in->limit_w;
    out->floor_breaches = 0;
    out->floor_relax = 0;
    out->held = 0;
    out->blend = 1;
    out->voi = 0;
    out->probe_blend = 0;
    for (size_t j = 0; j < in->njobs; j++)
        out->probe_cap_w[j] = NAN;
    out->given_w = 0;

    double fixed, least, idle_min;
    survey_gpus(in, s, &fixed, &least, &idle_min);
    out->least_w = least;
    int limited = isfinite(in->limit_w);
    int floors_bind;
    size_t nactive;
    if (build_curves(in, s, &nactive, &floors_bind) < 0)
        return pflex_error_set(err, "out of memory");

    const double *x_of = NULL;
    if (limited && nactive) {
        double budget = in->limit_w - fixed - idle_min;
        if (split_budget(in, out, s, budget, nactive, floors_bind, err))
            return -1;
        if (in->guard_equal && guard_equal(in, out, s, budget, nactive, err) < 0)
            return -1;
        x_of = s->alloc.x;
    }
    set_caps(in, out, s, x_of, limited);
    if (x_of) {
        spend_rounding(in, out, s, fixed);
        give_back_rest(in, out, s, fixed);
    }
    trim_to_limit(in, out, fixed, limited);
    job_costs(in, out, s);
    return 0;
}

int pflex_safe_limit_feasible(double limit_w, double least_w)
{
    return !(limit_w < least_w - 1e-6 * fabs(least_w));
}
