/* horizon.c — levers over an event's horizon as a mixed-integer program
 * solved by GLPK (pflex/flex/horizon.h says what is modelled). */
#include "pflex/flex/horizon.h"
#include "lib/util/grow.h"

#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Caps are set in milliwatts, NVML's unit: a plan's cap is rounded down
 * to one, and its contract and floor keep what that rounding can cost. */
#define CAP_RES_W 0.001

/* What a watt over the limit costs against progress, per W x s, in
 * weight x GPU x s: shedding a watt by any lever loses far less (a GPU's
 * whole progress is worth its own watts, some hundreds), so the excess is
 * made least first. */
#define EXCESS_PRICE 100.0

int pflex_lever_parse(const char *s, unsigned *out)
{
    static const char *names[] = {"cap", "pause", "stop", "resize"};
    unsigned m = 0;
    if (!strcasecmp(s, "all")) {
        *out = PFLEX_LEVER_ALL;
        return 0;
    }
    const char *p = s;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (unsigned i = 0; i < 4; i++)
            if (n == strlen(names[i]) && !strncasecmp(p, names[i], n)) {
                m |= 1u << i;
                found = 1;
            }
        if (!found)
            return -1;
        p += n;
        if (*p == ',')
            p++;
    }
    if (!m)
        return -1;
    *out = m | PFLEX_LEVER_CAP;
    return 0;
}

size_t pflex_horizon_levels(const double *cap_w, const double *fraction, size_t n, size_t nmax,
                            struct pflex_horizon_level *out)
{
    if (!n || !nmax)
        return 0;
    if (nmax > PFLEX_HORIZON_MAX_LEVELS)
        nmax = PFLEX_HORIZON_MAX_LEVELS;
    /* the upper concave hull of T/T0 over cap, from the largest cap down:
     * a point under the chord of its neighbours buys less per watt than
     * the chord says, so the hull's points are the planner's vertices */
    size_t *h = malloc(n * sizeof *h), nh = 0;
    if (!h)
        return 0;
    for (size_t i = 0; i < n; i++) {
        while (nh >= 2) {
            size_t a = h[nh - 2], b = h[nh - 1];
            /* b on or under the chord from a to i (caps descending) */
            double cross = (cap_w[a] - cap_w[b]) * (fraction[i] - fraction[b])
                         - (cap_w[b] - cap_w[i]) * (fraction[b] - fraction[a]);
            if (cross < 0)
                break;
            nh--;
        }
        h[nh++] = i;
    }
    /* thinned evenly over the hull's points, the first and last kept */
    size_t k = 0, want = nmax < 2 ? 2 : nmax;
    size_t *pick = malloc(want * sizeof *pick);
    if (!pick) {
        free(h);
        return 0;
    }
    for (size_t q = 0; q < want && q < nh; q++) {
        size_t idx = nh <= want ? q : (size_t)llround((double)q * (double)(nh - 1) / (double)(want - 1));
        if (k && pick[k - 1] == h[idx])
            continue;
        pick[k++] = h[idx];
    }
    for (size_t q = 0; q < k; q++) {
        size_t i = pick[q];
        out[q] = (struct pflex_horizon_level){cap_w[i], fraction[i], 0};
        if (q + 1 == k)
            break;
        /* the chord's most over the points between */
        size_t e = pick[q + 1];
        double sl = (fraction[i] - fraction[e]) / (cap_w[i] - cap_w[e]);
        for (size_t m = i + 1; m < e; m++) {
            double over = fraction[i] + sl * (cap_w[m] - cap_w[i]) - fraction[m];
            if (over > out[q].dip)
                out[q].dip = over;
        }
    }
    free(pick);
    free(h);
    return k;
}

/* One option of a job: a lever with its power and rate. */
struct opt {
    enum pflex_horizon_what what;
    double cap_w, fraction, power_w;
    int gpus, cls;              /* cls: 0 full, 1 stopped, 2 + r resized to sizes[r] */
};

#define MAX_OPTS (PFLEX_HORIZON_MAX_LEVELS + 2 + PFLEX_HORIZON_MAX_SIZES)
#define MAX_CLS (2 + PFLEX_HORIZON_MAX_SIZES)

struct jobopts {
    size_t n;
    struct opt o[MAX_OPTS];
    int has_cls[MAX_CLS];
    int ncls;
    int col0;                   /* first x column (1-based) */
    int tcol0;                  /* first transition column; 0: none */
    int ccol0;                  /* first cap and T/T0 columns of running (2 a period) */
    double cmin, cmax;          /* the running cap's range, W */
};

static int cls_running(int c) { return c != 1; }

static int cls_gpus(const struct pflex_horizon_job *j, int c)
{
    return c == 0 ? j->gpus : c == 1 ? 0 : j->sizes[c - 2];
}

static int job_options(const struct pflex_horizon_job *j, size_t ji, struct jobopts *jo, pflex_error_t *err)
{
    memset(jo, 0, sizeof *jo);
    if (j->gpus < 1 || !(j->weight >= 0) || j->nlevels < 1 || j->nlevels > PFLEX_HORIZON_MAX_LEVELS ||
        j->nsizes > PFLEX_HORIZON_MAX_SIZES || !(j->idle_w >= 0))
        return pflex_error_set(err, "horizon: job %zu malformed (GPUs, weight, levels, sizes or idle power)", ji);
    double fl = j->floor > 0 ? j->floor : 0;
    for (size_t l = 1; l < j->nlevels; l++)
        if (j->levels[l].cap_w >= j->levels[l - 1].cap_w || !(j->levels[l - 1].dip >= 0))
            return pflex_error_set(err, "horizon: job %zu: cap levels not descending", ji);
    /* running: its cap and T/T0 are columns of their own (a period's) */
    jo->cmax = j->levels[0].cap_w;
    jo->cmin = (j->levers & PFLEX_LEVER_CAP) ? j->levels[j->nlevels - 1].cap_w : jo->cmax;
    jo->o[jo->n++] = (struct opt){PFLEX_HZ_CAP, jo->cmax, 0, 0, j->gpus, 0};
    if ((j->levers & PFLEX_LEVER_PAUSE) && fl <= 0 && j->max_pause_s > 0)
        jo->o[jo->n++] = (struct opt){PFLEX_HZ_PAUSE, 0, 0, j->idle_w * j->gpus, 0, 0};
    if ((j->levers & PFLEX_LEVER_STOP) && fl <= 0)
        jo->o[jo->n++] = (struct opt){PFLEX_HZ_STOP, 0, 0, 0, 0, 1};
    /* a resize's checkpoint and restart take the period they fall in
     * under any floor: with a floor, caps only */
    if ((j->levers & PFLEX_LEVER_RESIZE) && fl <= 0)
        for (size_t r = 0; r < j->nsizes; r++) {
            int g = j->sizes[r];
            double f = j->resize_eff * g / j->gpus;
            if (g < 1 || g >= j->gpus)
                return pflex_error_set(err, "horizon: job %zu: resize size %d not in 1..%d", ji, g, j->gpus - 1);
            if (f < fl)
                continue;
            jo->o[jo->n++] = (struct opt){PFLEX_HZ_RESIZE, j->levels[0].cap_w, f, j->levels[0].cap_w * g, g,
                                          2 + (int)r};
        }
    for (size_t o = 0; o < jo->n; o++)
        jo->has_cls[jo->o[o].cls] = 1;
    /* the class it starts in joins, so its way back is priced */
    int sc = j->state == PFLEX_HZ_STOP ? 1 : 0;
    if (j->state == PFLEX_HZ_RESIZE)
        for (size_t r = 0; r < j->nsizes; r++)
            if (j->sizes[r] == j->state_gpus)
                sc = 2 + (int)r;
    jo->has_cls[sc] = 1;
    for (int c = 0; c < MAX_CLS; c++)
        jo->ncls += jo->has_cls[c];
    return 0;
}

static int start_cls(const struct pflex_horizon_job *j)
{
    if (j->state == PFLEX_HZ_STOP)
        return 1;
    if (j->state == PFLEX_HZ_RESIZE)
        for (size_t r = 0; r < j->nsizes; r++)
            if (j->sizes[r] == j->state_gpus)
                return 2 + (int)r;
    return 0;
}

/* The growing coefficient lists of the constraint matrix. */
struct mat {
    int *ia, *ja;
    double *ar;
    size_t n, cap_ia, cap_ja, cap_ar;
};

static int mat_add(struct mat *m, int row, int col, double v)
{
    size_t need = m->n + 2;
    if (pflex_grow((void **)&m->ia, &m->cap_ia, need, sizeof *m->ia) < 0 ||
        pflex_grow((void **)&m->ja, &m->cap_ja, need, sizeof *m->ja) < 0 ||
        pflex_grow((void **)&m->ar, &m->cap_ar, need, sizeof *m->ar) < 0)
        return -1;
    m->n++;     /* GLPK's arrays are 1-based */
    m->ia[m->n] = row;
    m->ja[m->n] = col;
    m->ar[m->n] = v;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Column of job j's option o at period t. */
#define XCOL(jo, T, t, o) ((jo)->col0 + (int)((t) * (jo)->n + (o)))
/* Its running cap and T/T0 at t. */
#define CCOL(jo, t) ((jo)->ccol0 + (int)(2 * (t)))
#define FCOL(jo, t) (CCOL(jo, t) + 1)
/* Its class k's entry (in) and exit (out) at t. */
#define INCOL(jo, t, k) ((jo)->tcol0 + (int)(((t) * MAX_CLS + (k)) * 2))
#define OUTCOL(jo, t, k) (INCOL(jo, t, k) + 1)

struct build {
    glp_prob *lp;
    struct mat m;
    struct jobopts *jo;
    int *slack;                 /* per period, its excess column (0: none) */
    int limcol;
};

static int add_rows(glp_prob *lp, int n) { return glp_add_rows(lp, n); }

/* Columns: every job's options by period, its classes' entries and exits,
 * each period's excess, the deepest limit. */
static void build_cols(const struct pflex_horizon_problem *p, struct build *b)
{
    glp_prob *lp = b->lp;
    size_t T = p->nperiods;
    for (size_t j = 0; j < p->njobs; j++) {
        const struct pflex_horizon_job *jb = &p->jobs[j];
        struct jobopts *jo = &b->jo[j];
        jo->col0 = glp_add_cols(lp, (int)(T * jo->n));
        for (size_t t = 0; t < T; t++)
            for (size_t o = 0; o < jo->n; o++) {
                int c = XCOL(jo, T, t, o);
                const struct opt *op = &jo->o[o];
                double cost = jb->weight * jb->gpus * (1 - op->fraction) * p->dt_s[t];
                if (t == T - 1 && op->cls != 0)     /* the way back to the full size */
                    cost += jb->weight * jb->gpus * ((cls_running(op->cls) ? jb->ckpt_s : 0) + jb->restart_s);
                glp_set_obj_coef(lp, c, cost);
                if (p->relax)
                    glp_set_col_bnds(lp, c, GLP_DB, 0, 1);
                else
                    glp_set_col_kind(lp, c, GLP_BV);
            }
        jo->ccol0 = glp_add_cols(lp, (int)(2 * T));
        for (size_t t = 0; t < T; t++) {
            glp_set_col_bnds(lp, CCOL(jo, t), GLP_DB, 0, jo->cmax);
            glp_set_col_bnds(lp, FCOL(jo, t), GLP_DB, 0, 1);
            glp_set_obj_coef(lp, FCOL(jo, t), -jb->weight * jb->gpus * p->dt_s[t]);
        }
        if (jo->ncls > 1) {
            jo->tcol0 = glp_add_cols(lp, (int)(T * MAX_CLS * 2));
            for (size_t t = 0; t < T; t++)
                for (int k = 0; k < MAX_CLS; k++) {
                    int ci = INCOL(jo, t, k), co = OUTCOL(jo, t, k);
                    int used = jo->has_cls[k];
                    glp_set_col_bnds(lp, ci, used ? GLP_DB : GLP_FX, 0, used ? 1 : 0);
                    glp_set_col_bnds(lp, co, used ? GLP_DB : GLP_FX, 0, used ? 1 : 0);
                    if (used && cls_running(k)) {
                        glp_set_obj_coef(lp, ci, jb->weight * jb->gpus * jb->restart_s);
                        glp_set_obj_coef(lp, co, jb->weight * jb->gpus * jb->ckpt_s);
                    }
                }
        }
    }
    for (size_t t = 0; t < T; t++) {
        b->slack[t] = 0;
        if (isfinite(p->limit_w[t]) && !p->deepest) {
            b->slack[t] = glp_add_cols(lp, 1);
            glp_set_col_bnds(lp, b->slack[t], GLP_LO, 0, 0);
            glp_set_obj_coef(lp, b->slack[t], EXCESS_PRICE * p->dt_s[t]);
        }
    }
    if (p->deepest) {
        double span = 0;
        for (size_t t = 0; t < T; t++)
            span += p->dt_s[t];
        b->limcol = glp_add_cols(lp, 1);
        glp_set_col_bnds(lp, b->limcol, GLP_LO, 0, 0);
        glp_set_obj_coef(lp, b->limcol, EXCESS_PRICE * span);
    }
}

/* A job's class k share at period t (its options' x), into the row. */
static int add_cls(struct mat *m, int row, const struct jobopts *jo, size_t T, size_t t, int k, double sign)
{
    for (size_t o = 0; o < jo->n; o++)
        if (jo->o[o].cls == k && mat_add(m, row, XCOL(jo, T, t, o), sign) < 0)
            return -1;
    return 0;
}

/* The steepest of a job's lines, T/T0 per W. */
static double slope_max(const struct pflex_horizon_job *jb)
{
    double m = 0;
    for (size_t l = 0; l + 1 < jb->nlevels; l++) {
        double sl = (jb->levels[l].fraction - jb->levels[l + 1].fraction) / (jb->levels[l].cap_w - jb->levels[l + 1].cap_w);
        if (sl > m)
            m = sl;
    }
    return m;
}

/* T/T0 the plan counts at cap c: the least of the lowered lines, at most 1. */
static double planned_at(const struct pflex_horizon_job *jb, double c)
{
    double f = jb->nlevels == 1 ? jb->levels[0].fraction : 1;
    for (size_t l = 0; l + 1 < jb->nlevels; l++) {
        const struct pflex_horizon_level *a = &jb->levels[l], *e = &jb->levels[l + 1];
        double v = a->fraction - a->dip + (a->fraction - e->fraction) / (a->cap_w - e->cap_w) * (c - a->cap_w);
        if (v < f)
            f = v;
    }
    return f;
}

/* Running (option 0) at t: its cap within its range, its T/T0 under
 * every segment's lowered line and at most 1, over its floor. */
static int running_rows(const struct pflex_horizon_problem *p, struct build *b, size_t j, size_t t)
{
    glp_prob *lp = b->lp;
    struct mat *m = &b->m;
    size_t T = p->nperiods;
    (void)T;
    const struct pflex_horizon_job *jb = &p->jobs[j];
    const struct jobopts *jo = &b->jo[j];
    int run = XCOL(jo, T, t, 0), c = CCOL(jo, t), f = FCOL(jo, t);
    int r = add_rows(lp, 2);
    glp_set_row_bnds(lp, r, GLP_UP, 0, 0);          /* c - cmax run <= 0 */
    glp_set_row_bnds(lp, r + 1, GLP_LO, 0, 0);      /* c - cmin run >= 0 */
    if (mat_add(m, r, c, 1) < 0 || mat_add(m, r, run, -jo->cmax) < 0 || mat_add(m, r + 1, c, 1) < 0 ||
        mat_add(m, r + 1, run, -jo->cmin) < 0)
        return -1;
    r = add_rows(lp, 1);                            /* f - run <= 0 */
    glp_set_row_bnds(lp, r, GLP_UP, 0, 0);
    if (mat_add(m, r, f, 1) < 0 || mat_add(m, r, run, -1) < 0)
        return -1;
    for (size_t l = 0; l + 1 < jb->nlevels; l++) {
        const struct pflex_horizon_level *a = &jb->levels[l], *e = &jb->levels[l + 1];
        double sl = (a->fraction - e->fraction) / (a->cap_w - e->cap_w);
        double icpt = a->fraction - a->dip - sl * a->cap_w;
        r = add_rows(lp, 1);                        /* f - sl c - icpt run <= 0 */
        glp_set_row_bnds(lp, r, GLP_UP, 0, 0);
        if (mat_add(m, r, f, 1) < 0 || mat_add(m, r, c, -sl) < 0 || mat_add(m, r, run, -icpt) < 0)
            return -1;
    }
    if (jb->nlevels == 1) {                         /* one point: f <= its T/T0 */
        r = add_rows(lp, 1);
        glp_set_row_bnds(lp, r, GLP_UP, 0, 0);
        if (mat_add(m, r, f, 1) < 0 || mat_add(m, r, run, -jb->levels[0].fraction) < 0)
            return -1;
    }
    if (jb->floor > 0) {                            /* f - floor run >= 0 */
        r = add_rows(lp, 1);
        glp_set_row_bnds(lp, r, GLP_LO, 0, 0);
        double fl = jb->floor + slope_max(jb) * CAP_RES_W;
        if (mat_add(m, r, f, 1) < 0 || mat_add(m, r, run, -(fl < 1 ? fl : jb->floor)) < 0)
            return -1;
    }
    return 0;
}

static int build_job_rows(const struct pflex_horizon_problem *p, struct build *b, size_t j)
{
    glp_prob *lp = b->lp;
    struct mat *m = &b->m;
    size_t T = p->nperiods;
    const struct pflex_horizon_job *jb = &p->jobs[j];
    struct jobopts *jo = &b->jo[j];
    int sc = start_cls(jb);
    for (size_t t = 0; t < T; t++) {
        int r = add_rows(lp, 1);    /* one option a period */
        glp_set_row_bnds(lp, r, GLP_FX, 1, 1);
        for (size_t o = 0; o < jo->n; o++)
            if (mat_add(m, r, XCOL(jo, T, t, o), 1) < 0)
                return -1;
        if (running_rows(p, b, j, t) < 0)
            return -1;
        if (jo->ncls < 2)
            continue;
        for (int k = 0; k < MAX_CLS; k++) {
            if (!jo->has_cls[k])
                continue;
            /* in >= y_t - y_{t-1}; out >= y_{t-1} - y_t */
            double prev = (k == sc) ? 1 : 0;
            int ri = add_rows(lp, 1), ro = add_rows(lp, 1);
            if (mat_add(m, ri, INCOL(jo, t, k), 1) < 0 || add_cls(m, ri, jo, T, t, k, -1) < 0 ||
                mat_add(m, ro, OUTCOL(jo, t, k), 1) < 0 || add_cls(m, ro, jo, T, t, k, 1) < 0)
                return -1;
            if (t) {
                if (add_cls(m, ri, jo, T, t - 1, k, 1) < 0 || add_cls(m, ro, jo, T, t - 1, k, -1) < 0)
                    return -1;
                glp_set_row_bnds(lp, ri, GLP_LO, 0, 0);
                glp_set_row_bnds(lp, ro, GLP_LO, 0, 0);
            } else {
                glp_set_row_bnds(lp, ri, GLP_LO, -prev, 0);
                glp_set_row_bnds(lp, ro, GLP_LO, prev, 0);
            }
        }
    }
    /* the contract: progress lost over the event within its budget */
    if (isfinite(jb->loss_budget)) {
        double left = jb->loss_budget * jb->event_s - jb->lost_s;
        /* the plan's model may count a little loss at the largest cap (its
         * first segment lowered by its dip): running there throughout is
         * always within the contract */
        double floor_loss = 0, f0 = planned_at(jb, jb->levels[0].cap_w);
        for (size_t t = 0; t < T; t++)
            floor_loss += (1 - f0) * p->dt_s[t];
        if (left < floor_loss)
            left = floor_loss;
        int r = add_rows(lp, 1);
        glp_set_row_bnds(lp, r, GLP_UP, 0, left > 0 ? left : 0);
        for (size_t t = 0; t < T; t++) {
            for (size_t o = 0; o < jo->n; o++) {
                double c = (1 - jo->o[o].fraction) * p->dt_s[t];
                if (o == 0)     /* what rounding the cap down to a milliwatt can cost */
                    c += slope_max(jb) * CAP_RES_W * p->dt_s[t];
                if (t == T - 1 && jo->o[o].cls != 0)
                    c += (cls_running(jo->o[o].cls) ? jb->ckpt_s : 0) + jb->restart_s;
                if (c != 0 && mat_add(m, r, XCOL(jo, T, t, o), c) < 0)
                    return -1;
            }
            if (mat_add(m, r, FCOL(jo, t), -p->dt_s[t]) < 0)
                return -1;
            for (int k = 0; jo->ncls > 1 && k < MAX_CLS; k++)
                if (jo->has_cls[k] && cls_running(k) &&
                    (mat_add(m, r, INCOL(jo, t, k), jb->restart_s) < 0 ||
                     mat_add(m, r, OUTCOL(jo, t, k), jb->ckpt_s) < 0))
                    return -1;
        }
    }
    /* the longest pause: no run of pause periods longer than it */
    size_t po = jo->n;
    for (size_t o = 0; o < jo->n; o++)
        if (jo->o[o].what == PFLEX_HZ_PAUSE)
            po = o;
    if (po < jo->n && isfinite(jb->max_pause_s)) {
        for (size_t t = 0; t < T; t++) {
            double run = (t == 0 && jb->state == PFLEX_HZ_PAUSE) ? jb->paused_s : 0;
            size_t u = t;
            while (u < T && run + p->dt_s[u] <= jb->max_pause_s)
                run += p->dt_s[u++];
            if (u >= T)
                break;
            int r = add_rows(lp, 1);
            glp_set_row_bnds(lp, r, GLP_UP, 0, (double)(u - t));
            for (size_t v = t; v <= u; v++)
                if (mat_add(m, r, XCOL(jo, T, v, po), 1) < 0)
                    return -1;
        }
    }
    return 0;
}

static int build_power_rows(const struct pflex_horizon_problem *p, struct build *b)
{
    size_t T = p->nperiods;
    for (size_t t = 0; t < T; t++) {
        if (!isfinite(p->limit_w[t]))
            continue;
        int r = add_rows(b->lp, 1);
        if (p->deepest) {
            glp_set_row_bnds(b->lp, r, GLP_UP, 0, -p->other_w);
            if (mat_add(&b->m, r, b->limcol, -1) < 0)
                return -1;
        } else {
            glp_set_row_bnds(b->lp, r, GLP_UP, 0, p->limit_w[t] - p->other_w);
            if (mat_add(&b->m, r, b->slack[t], -1) < 0)
                return -1;
        }
        for (size_t j = 0; j < p->njobs; j++) {
            const struct jobopts *jo = &b->jo[j];
            for (size_t o = 0; o < jo->n; o++)
                if (jo->o[o].power_w != 0 && mat_add(&b->m, r, XCOL(jo, T, t, o), jo->o[o].power_w) < 0)
                    return -1;
            if (mat_add(&b->m, r, CCOL(jo, t), p->jobs[j].gpus) < 0)
                return -1;
            /* a checkpoint draws the leaving size's GPUs at idle */
            for (int k = 0; jo->ncls > 1 && k < MAX_CLS; k++)
                if (jo->has_cls[k] && cls_running(k) && p->jobs[j].idle_w > 0 &&
                    mat_add(&b->m, r, OUTCOL(jo, t, k), p->jobs[j].idle_w * cls_gpus(&p->jobs[j], k)) < 0)
                    return -1;
        }
    }
    return 0;
}

void pflex_horizon_plan_fini(struct pflex_horizon_plan *pl)
{
    free(pl->x);
    free(pl->power_w);
    free(pl->excess_w);
    memset(pl, 0, sizeof *pl);
}

/* The plan read off the solution (MIP or LP: the largest share wins). */
static void read_plan(const struct pflex_horizon_problem *p, const struct build *b, int mip,
                      struct pflex_horizon_plan *out)
{
    size_t T = p->nperiods;
    double lost = 0;
    for (size_t j = 0; j < p->njobs; j++) {
        const struct pflex_horizon_job *jb = &p->jobs[j];
        const struct jobopts *jo = &b->jo[j];
        int prev = start_cls(jb);
        for (size_t t = 0; t < T; t++) {
            size_t best = 0;
            double bv = -1;
            for (size_t o = 0; o < jo->n; o++) {
                int c = XCOL(jo, T, t, o);
                double v = mip ? glp_mip_col_val(b->lp, c) : glp_get_col_prim(b->lp, c);
                if (v > bv) {
                    bv = v;
                    best = o;
                }
            }
            const struct opt *op = &jo->o[best];
            struct pflex_horizon_choice ch = {op->what, op->cap_w, op->fraction, op->gpus};
            double pw = op->power_w;
            if (best == 0) {
                /* milliwatts down (the power planned holds), never under its range */
                double c = mip ? glp_mip_col_val(b->lp, CCOL(jo, t)) : glp_get_col_prim(b->lp, CCOL(jo, t));
                double f = mip ? glp_mip_col_val(b->lp, FCOL(jo, t)) : glp_get_col_prim(b->lp, FCOL(jo, t));
                ch.cap_w = floor(c / CAP_RES_W + 1e-6) * CAP_RES_W;
                if (ch.cap_w < jo->cmin)
                    ch.cap_w = jo->cmin;
                if (ch.cap_w > jo->cmax)
                    ch.cap_w = jo->cmax;
                ch.fraction = f;
                pw = ch.cap_w * jb->gpus;
            }
            out->x[j * T + t] = ch;
            double l = (1 - ch.fraction) * p->dt_s[t];
            if (op->cls != prev) {
                if (cls_running(prev)) {
                    pw += jb->idle_w * cls_gpus(jb, prev);
                    l += jb->ckpt_s;
                }
                if (cls_running(op->cls))
                    l += jb->restart_s;
            }
            if (t == T - 1 && op->cls != 0)
                l += (cls_running(op->cls) ? jb->ckpt_s : 0) + jb->restart_s;
            prev = op->cls;
            out->power_w[t] += pw;
            lost += jb->weight * jb->gpus * l;
        }
    }
    for (size_t t = 0; t < T; t++) {
        out->power_w[t] += p->other_w;
        double e = out->power_w[t] - p->limit_w[t];
        out->excess_w[t] = isfinite(p->limit_w[t]) && e > 1e-6 ? e : 0;
    }
    out->lost = lost;
}

int pflex_horizon_solve(const struct pflex_horizon_problem *p, struct pflex_horizon_plan *out,
                        pflex_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!p->nperiods || !p->njobs)
        return pflex_error_set(err, "horizon: no periods or no jobs to plan");
    for (size_t t = 0; t < p->nperiods; t++)
        if (!(p->dt_s[t] > 0))
            return pflex_error_set(err, "horizon: period %zu has no length", t);
    double t0 = now_s();
    size_t T = p->nperiods;
    struct build b = {0};
    b.jo = calloc(p->njobs, sizeof *b.jo);
    b.slack = calloc(T, sizeof *b.slack);
    out->x = calloc(p->njobs * T, sizeof *out->x);
    out->power_w = calloc(T, sizeof *out->power_w);
    out->excess_w = calloc(T, sizeof *out->excess_w);
    int rc = -1;
    if (!b.jo || !b.slack || !out->x || !out->power_w || !out->excess_w) {
        pflex_error_sys(err, "out of memory");
        goto done;
    }
    out->njobs = p->njobs;
    out->nperiods = T;
    for (size_t j = 0; j < p->njobs; j++) {
        if (job_options(&p->jobs[j], j, &b.jo[j], err) < 0)
            goto done;
        for (size_t t = 0; t < T; t++)
            out->total += p->jobs[j].weight * p->jobs[j].gpus * p->dt_s[t];
    }
    glp_term_out(GLP_OFF);
    b.lp = glp_create_prob();
    glp_set_obj_dir(b.lp, GLP_MIN);
    build_cols(p, &b);
    for (size_t j = 0; j < p->njobs; j++)
        if (build_job_rows(p, &b, j) < 0) {
            pflex_error_sys(err, "out of memory");
            goto done;
        }
    if (build_power_rows(p, &b) < 0) {
        pflex_error_sys(err, "out of memory");
        goto done;
    }
    glp_load_matrix(b.lp, (int)b.m.n, b.m.ia, b.m.ja, b.m.ar);
    out->rows = (size_t)glp_get_num_rows(b.lp);
    out->cols = (size_t)glp_get_num_cols(b.lp);
    out->ints = (size_t)glp_get_num_int(b.lp);
    double tl = p->time_limit_s > 0 ? p->time_limit_s : 10;
    glp_smcp sp;
    glp_init_smcp(&sp);
    sp.msg_lev = GLP_MSG_OFF;
    sp.presolve = GLP_OFF;     /* its LP presolver leaves no basis on some feasible programs */
    /* the dual simplex: several times faster than the primal on these
     * programs (0.27 s against 1.9 s of CPU on the SRP event's oracle) */
    sp.meth = GLP_DUALP;
    sp.tm_lim = (int)(tl * 10000);
    if (glp_simplex(b.lp, &sp) != 0 || glp_get_status(b.lp) != GLP_OPT) {
        /* the presolver leaves no basis where it proves infeasibility, and
         * the excess columns make every program feasible: a failure here
         * is the solver's, said as such */
        pflex_error_set(err, "horizon: the LP relaxation did not solve (GLPK status %d, %s)", glp_get_status(b.lp),
                        "a contract no plan can keep from where the job stands");
        goto done;
    }
    double lp_obj = glp_get_obj_val(b.lp);
    double lp_excess = 0;
    for (size_t t = 0; t < T; t++)
        if (b.slack[t])
            lp_excess += EXCESS_PRICE * p->dt_s[t] * glp_get_col_prim(b.lp, b.slack[t]);
    if (p->deepest)
        lp_excess = glp_get_col_prim(b.lp, b.limcol) * glp_get_obj_coef(b.lp, b.limcol);
    out->bound = lp_obj - lp_excess;
    if (p->relax) {
        read_plan(p, &b, 0, out);
        out->lost = out->bound;
        out->optimal = 1;
        if (p->deepest)
            out->deepest_w = glp_get_col_prim(b.lp, b.limcol) + p->other_w;
        rc = 0;
        goto done;
    }
    glp_iocp ip;
    glp_init_iocp(&ip);
    ip.msg_lev = GLP_MSG_OFF;
    ip.mip_gap = p->mip_gap > 0 ? p->mip_gap : 1e-4;
    ip.tm_lim = (int)(tl * 1000);
    ip.fp_heur = GLP_ON;
    ip.ps_heur = GLP_ON;
    ip.ps_tm_lim = (int)(tl * 250);
    int irc = glp_intopt(b.lp, &ip);
    int st = glp_mip_status(b.lp);
    if (st != GLP_OPT && st != GLP_FEAS) {
        pflex_error_set(err, "horizon: no plan found in %.1f s (GLPK code %d, status %d)", tl, irc, st);
        goto done;
    }
    out->optimal = st == GLP_OPT && irc == 0;
    read_plan(p, &b, 1, out);
    if (p->deepest)
        out->deepest_w = glp_mip_col_val(b.lp, b.limcol) + p->other_w;
    rc = 0;
done:
    if (b.lp)
        glp_delete_prob(b.lp);
    free(b.m.ia);
    free(b.m.ja);
    free(b.m.ar);
    free(b.jo);
    free(b.slack);
    out->solve_s = now_s() - t0;
    if (rc < 0)
        pflex_horizon_plan_fini(out);
    return rc;
}
