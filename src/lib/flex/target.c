/* target.c — site power targets: a set, "latest wins" resolution, ramps,
 * and the text forms (values, times, durations, schedule CSV). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/io/csv.h"
#include "pflex/flex/target.h"
#include "lib/util/grow.h"

/* Deepest chain of ramps followed back to find where a ramp starts: past
 * it the ramp starts from its own target (a step), which bounds the work
 * on hostile input. */
#define RAMP_DEPTH 32

/* The last gen given to a set: each change takes the next, so no two
 * states of any sets share one (a set freed and another made at its
 * address included).  0 is no gen: a set zeroed without
 * pflex_target_set_init is read afresh by profiles each time. */
static _Atomic uint64_t gen_last;

static void touch(pflex_target_set_t *s)
{
    s->gen = atomic_fetch_add(&gen_last, 1) + 1;
}

void pflex_target_set_init(pflex_target_set_t *s)
{
    memset(s, 0, sizeof *s);
    touch(s);
}

void pflex_target_set_fini(pflex_target_set_t *s)
{
    free(s->t);
    memset(s, 0, sizeof *s);
}

static int target_check(const struct pflex_target *t, pflex_error_t *err)
{
    if (!isfinite(t->start_s))
        return pflex_error_set(err, "start is not a finite time");
    if (!(t->end_s > t->start_s))
        return pflex_error_set(err, "end must come after start");
    if (!isfinite(t->value) || t->value <= 0)
        return pflex_error_set(err, "the target must be a positive number");
    if (t->unit == PFLEX_TARGET_FRACTION && t->value > 10)
        return pflex_error_set(err, "a fraction of baseline of %g is out of range (0, 10]", t->value);
    if (t->unit == PFLEX_TARGET_WATTS && t->value > 1e12)
        return pflex_error_set(err, "%g W is out of range (at most 1 TW)", t->value);
    if (!isfinite(t->ramp_s) || t->ramp_s < 0)
        return pflex_error_set(err, "the ramp must be a duration of 0 or more");
    return 0;
}

int pflex_target_set_add(pflex_target_set_t *s, const struct pflex_target *t, pflex_error_t *err)
{
    if (target_check(t, err) < 0)
        return -1;
    if (s->n >= PFLEX_TARGET_MAX)
        return pflex_error_set(err, "too many targets (at most %d)", PFLEX_TARGET_MAX);
    if (pflex_grow((void **)&s->t, &s->cap, s->n + 1, sizeof *s->t) < 0)
        return pflex_error_set(err, "out of memory");
    s->t[s->n] = *t;
    s->t[s->n].source[sizeof s->t[s->n].source - 1] = '\0';
    s->t[s->n].id[sizeof s->t[s->n].id - 1] = '\0';
    s->t[s->n].seq = s->next_seq++;
    s->n++;
    touch(s);
    return 0;
}

void pflex_target_set_seq(pflex_target_set_t *s, size_t i, uint64_t seq)
{
    s->t[i].seq = seq;
    touch(s);
}

static int drops(const struct pflex_target *x, const char *source, double t)
{
    return source ? strcmp(x->source, source) == 0 : x->end_s <= t;
}

static size_t remove_if(pflex_target_set_t *s, const char *source, double t)
{
    /* read only up to the first to go (a loop that expires every period
     * mostly finds none), then moved down over it */
    size_t k = 0, before = s->n;
    while (k < s->n && !drops(&s->t[k], source, t))
        k++;
    for (size_t i = k; i < s->n; i++)
        if (!drops(&s->t[i], source, t))
            s->t[k++] = s->t[i];
    s->n = k;
    if (k != before)
        touch(s);
    return before - k;
}

size_t pflex_target_set_remove_source(pflex_target_set_t *s, const char *source)
{
    return remove_if(s, source, 0);
}

size_t pflex_target_set_expire(pflex_target_set_t *s, double t)
{
    return remove_if(s, NULL, t);
}

/* Whether a wins over b where both are in force: the lower priority
 * number, then the later added. */
static int beats(const struct pflex_target *a, const struct pflex_target *b)
{
    return a->priority < b->priority || (a->priority == b->priority && a->seq > b->seq);
}

const struct pflex_target *pflex_target_set_winner(const pflex_target_set_t *s, double t)
{
    const struct pflex_target *w = NULL;
    for (size_t i = 0; i < s->n; i++) {
        const struct pflex_target *c = &s->t[i];
        if (!(c->start_s <= t && t < c->end_s))
            continue;
        if (!w || beats(c, w))
            w = c;
    }
    return w;
}

double pflex_target_watts(const struct pflex_target *t, double baseline_w)
{
    return t->unit == PFLEX_TARGET_WATTS ? t->value : t->value * baseline_w;
}

/* The limit at t inside winner w's ramp to v, from prev, the limit just
 * before its start (none: the unlimited level; none known: a step). */
static double ramp_at(const struct pflex_target *w, double t, double v, double prev, double unl)
{
    if (!isfinite(prev))
        prev = unl;
    if (!isfinite(prev) || prev <= 0)
        return v;
    double f = (t - w->start_s) / w->ramp_s;
    return prev + (v - prev) * f;
}

static double limit_at(const pflex_target_set_t *s, double t, double base, double unl, int depth)
{
    const struct pflex_target *w = pflex_target_set_winner(s, t);
    if (!w)
        return INFINITY;
    double v = pflex_target_watts(w, base);
    if (w->ramp_s <= 0 || t >= w->start_s + w->ramp_s || depth >= RAMP_DEPTH)
        return v;
    return ramp_at(w, t, v, limit_at(s, nextafter(w->start_s, -INFINITY), base, unl, depth + 1), unl);
}

double pflex_target_limit_w(const pflex_target_set_t *s, double t, double baseline_w,
                            double unlimited_w)
{
    return limit_at(s, t, baseline_w, unlimited_w, 0);
}

/* The instants the limit over [t0, t1] may be least at (the limit is
 * linear between them): of item 0, t0 and t1; of item i > 0, where
 * target i - 1 starts, ends or finishes its ramp, and just before its
 * start and its end, where the limit may jump.  Writes them to x (some
 * may lie outside the window); returns how many. */
static size_t item_instants(const pflex_target_set_t *s, size_t i, double t0, double t1, double x[5])
{
    if (i == 0) {
        x[0] = t0;
        x[1] = t1;
        return 2;
    }
    const struct pflex_target *c = &s->t[i - 1];
    size_t n = 0;
    x[n++] = c->start_s;
    x[n++] = nextafter(c->start_s, -INFINITY);
    x[n++] = c->start_s + c->ramp_s;
    if (isfinite(c->end_s)) {
        x[n++] = c->end_s;
        x[n++] = nextafter(c->end_s, -INFINITY);
    }
    return n;
}

/* One instant of the sweep: its time; for the instants just before a
 * ramped target's start (where its ramp starts from), that target, else
 * SIZE_MAX; whether a target ends there. */
struct sweep_q {
    double t;
    size_t ramped;
    unsigned char end;
};

static int cmp_q(const void *a, const void *b)
{
    const struct sweep_q *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->ramped > y->ramped) - (x->ramped < y->ramped);
}

static void heap_push(const struct pflex_target **h, size_t *n, const struct pflex_target *t)
{
    size_t i = (*n)++;
    while (i > 0 && beats(t, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = t;
}

static void heap_pop(const struct pflex_target **h, size_t *n)
{
    const struct pflex_target *last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && beats(h[c + 1], h[c]))
            c++;
        if (!beats(h[c], last))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
}

static int cmp_start(const void *a, const void *b)
{
    const struct pflex_target *x = *(const struct pflex_target *const *)a;
    const struct pflex_target *y = *(const struct pflex_target *const *)b;
    return (x->start_s > y->start_s) - (x->start_s < y->start_s);
}

struct sweep {
    const pflex_target_set_t *s;
    const struct sweep_q *q;         /* the instants, ascending */
    const size_t *win;               /* the winner at each (an index of s), or SIZE_MAX */
    size_t *before;                  /* target -> its instant just before its start */
};

/* limit_at, with each instant's winner read off the sweep: the ramp's
 * start is that winner's instant just before its start. */
static double sweep_limit(const struct sweep *sw, size_t qi, double base, double unl, int depth)
{
    if (sw->win[qi] == SIZE_MAX)
        return INFINITY;
    const struct pflex_target *w = &sw->s->t[sw->win[qi]];
    double v = pflex_target_watts(w, base), t = sw->q[qi].t;
    if (w->ramp_s <= 0 || t >= w->start_s + w->ramp_s || depth >= RAMP_DEPTH)
        return v;
    return ramp_at(w, t, v, sweep_limit(sw, sw->before[w - sw->s->t], base, unl, depth + 1), unl);
}

/* Every instant of every target where the limit may change course
 * (item_instants, the ends marked), and those just before each ramped
 * target's start, into q (NULL: counted only); returns how many. */
static size_t sweep_instants(const pflex_target_set_t *s, struct sweep_q *q)
{
    size_t m = 0;
    for (size_t i = 1; i <= s->n; i++) {
        double x[5];
        size_t nx = item_instants(s, i, 0, 0, x);
        for (size_t j = 0; j < nx; j++) {
            if (q)
                q[m] = (struct sweep_q){.t = x[j], .ramped = SIZE_MAX, .end = j == 3};
            m++;
        }
        if (s->t[i - 1].ramp_s > 0) {
            if (q)
                q[m] = (struct sweep_q){.t = x[1], .ramped = i - 1};
            m++;
        }
    }
    return m;
}

/* The limit at each of the nq instants q (sorted by cmp_q) into v, the
 * index of the target winning there into win (SIZE_MAX: none), and into
 * from, by target, the limit its ramp starts from when the limit is read
 * at an instant it wins (NaN: no ramp), by one sweep over time: the
 * targets by start into a heap of the winning order, the ended ones
 * dropped from its top.  O((n + nq) log n) where reading each instant
 * afresh is O(n nq).  Returns -1 when out of memory. */
static int sweep_eval(const pflex_target_set_t *s, const struct sweep_q *q, size_t nq, double base,
                      double unl, double *v, size_t *win, double *from)
{
    size_t n = s->n;
    struct sweep sw = {.s = s, .q = q, .win = win};
    sw.before = malloc((n ? n : 1) * sizeof *sw.before);
    const struct pflex_target **by = malloc((n ? n : 1) * sizeof *by);
    const struct pflex_target **heap = malloc((n ? n : 1) * sizeof *heap);
    int rc = -1;
    if (!sw.before || !by || !heap)
        goto out;
    for (size_t i = 0; i < n; i++)
        by[i] = &s->t[i];
    qsort(by, n, sizeof *by, cmp_start);
    size_t nh = 0, next = 0;
    for (size_t i = 0; i < nq; i++) {
        double t = q[i].t;
        while (next < n && by[next]->start_s <= t)
            heap_push(heap, &nh, by[next++]);
        /* an ended target never wins again: the instants only grow */
        while (nh > 0 && !(t < heap[0]->end_s))
            heap_pop(heap, &nh);
        win[i] = nh ? (size_t)(heap[0] - s->t) : SIZE_MAX;
        if (q[i].ramped != SIZE_MAX)
            sw.before[q[i].ramped] = i;
    }
    for (size_t i = 0; i < nq; i++)
        v[i] = q[i].ramped == SIZE_MAX ? sweep_limit(&sw, i, base, unl, 0) : NAN;
    /* limit_at's read of a ramp's start, one deep */
    for (size_t j = 0; j < n; j++)
        from[j] = s->t[j].ramp_s > 0 ? sweep_limit(&sw, sw.before[j], base, unl, 1) : NAN;
    rc = 0;
out:
    free(sw.before);
    free(by);
    free(heap);
    return rc;
}

double pflex_target_limit_min_w(const pflex_target_set_t *s, double t0, double t1,
                                double baseline_w, double unlimited_w)
{
    /* The limit is linear between the instants where a target starts, ends
     * or finishes its ramp, so its least value over [t0, t1] is at one of
     * them, or just before a start or an end, where it may jump. */
    /* Each instant's winner is looked up afresh: O(n) an instant, O(n^2)
     * for a window over every target; a loop that asks every period
     * keeps a profile (below). */
    double lo = INFINITY;
    for (size_t i = 0; i <= s->n; i++) {
        double x[5];
        size_t nx = item_instants(s, i, t0, t1, x);
        for (size_t j = 0; j < nx; j++)
            if (x[j] >= t0 && x[j] <= t1) {
                double v = limit_at(s, x[j], baseline_w, unlimited_w, 0);
                if (v < lo)
                    lo = v;
            }
    }
    return lo;
}

/* ---- profiles ---- */

void pflex_target_profile_init(struct pflex_target_profile *p)
{
    memset(p, 0, sizeof *p);
}

void pflex_target_profile_fini(struct pflex_target_profile *p)
{
    free(p->t);
    free(p->v);
    free(p->end);
    free(p->win);
    free(p->free);
    free(p->from);
    memset(p, 0, sizeof *p);
}

/* Whether p was read from s, as it is, for these levels. */
static int profile_fresh(const struct pflex_target_profile *p, const pflex_target_set_t *s, double base,
                         double unl)
{
    return p->built && s->gen != 0 && p->gen == s->gen && p->base == base
           && (p->unl == unl || (isnan(p->unl) && isnan(unl)));
}

/* Brings p up to date with s; -1 when out of memory (p then empty). */
static int profile_sync(struct pflex_target_profile *p, const pflex_target_set_t *s, double base, double unl)
{
    if (profile_fresh(p, s, base, unl))
        return 0;
    pflex_target_profile_fini(p);
    size_t nq = sweep_instants(s, NULL);
    struct sweep_q *q = malloc((nq ? nq : 1) * sizeof *q);
    double *v = malloc((nq ? nq : 1) * sizeof *v);
    size_t *win = malloc((nq ? nq : 1) * sizeof *win);
    p->t = malloc((nq ? nq : 1) * sizeof *p->t);
    p->v = malloc((nq ? nq : 1) * sizeof *p->v);
    p->end = malloc(nq ? nq : 1);
    p->win = malloc((nq ? nq : 1) * sizeof *p->win);
    p->free = malloc((nq ? nq : 1) * sizeof *p->free);
    p->from = malloc((s->n ? s->n : 1) * sizeof *p->from);
    int rc = -1;
    if (q && v && win && p->t && p->v && p->end && p->win && p->free && p->from) {
        sweep_instants(s, q);
        qsort(q, nq, sizeof *q, cmp_q);
        rc = sweep_eval(s, q, nq, base, unl, v, win, p->from);
    }
    if (rc == 0) {
        for (size_t i = 0; i < nq; i++)
            if (q[i].ramped == SIZE_MAX) {
                p->t[p->n] = q[i].t;
                p->v[p->n] = v[i];
                p->win[p->n] = win[i];
                p->end[p->n++] = q[i].end;
            }
        for (size_t i = p->n, f = SIZE_MAX; i-- > 0;) {
            if (p->end[i] && isinf(p->v[i]))
                f = i;
            p->free[i] = f;
        }
        p->gen = s->gen;
        p->base = base;
        p->unl = unl;
        p->built = 1;
    } else
        pflex_target_profile_fini(p);
    free(q);
    free(v);
    free(win);
    return rc;
}

/* The first of p's instants at or after t (after: after it). */
static size_t profile_from(const struct pflex_target_profile *p, double t, int after)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->t[mid] < t || (after && p->t[mid] == t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The winner at t off p (fresh): every start and end is an instant, so the
 * targets in force, and the winner, are those of the last instant at or
 * before t. */
static const struct pflex_target *profile_win(const struct pflex_target_profile *p, const pflex_target_set_t *s,
                                              double t)
{
    if (isnan(t))
        return NULL;
    size_t i = profile_from(p, t, 1);
    return i == 0 || p->win[i - 1] == SIZE_MAX ? NULL : &s->t[p->win[i - 1]];
}

/* limit_at(s, t, base, unl, 0) off p (fresh): its winner off p, the limit
 * its ramp starts from read at the sweep. */
static double profile_limit(const struct pflex_target_profile *p, const pflex_target_set_t *s, double t)
{
    const struct pflex_target *w = profile_win(p, s, t);
    if (!w)
        return INFINITY;
    double v = pflex_target_watts(w, p->base);
    if (w->ramp_s <= 0 || t >= w->start_s + w->ramp_s)
        return v;
    return ramp_at(w, t, v, p->from[w - s->t], p->unl);
}

double pflex_target_profile_limit_w(struct pflex_target_profile *p, const pflex_target_set_t *s,
                                    double t, double baseline_w, double unlimited_w)
{
    if (profile_sync(p, s, baseline_w, unlimited_w) < 0)
        return limit_at(s, t, baseline_w, unlimited_w, 0);
    return profile_limit(p, s, t);
}

const struct pflex_target *pflex_target_profile_winner(struct pflex_target_profile *p,
                                                       const pflex_target_set_t *s, double t,
                                                       double baseline_w, double unlimited_w)
{
    if (profile_sync(p, s, baseline_w, unlimited_w) < 0)
        return pflex_target_set_winner(s, t);
    return profile_win(p, s, t);
}

double pflex_target_profile_min_w(struct pflex_target_profile *p, const pflex_target_set_t *s,
                                  double t0, double t1, double baseline_w, double unlimited_w)
{
    if (profile_sync(p, s, baseline_w, unlimited_w) < 0)
        return pflex_target_limit_min_w(s, t0, t1, baseline_w, unlimited_w);
    /* t0, t1 and the instants between: the instants
     * pflex_target_limit_min_w reads, the same values */
    if (!(t0 <= t1))
        return INFINITY;
    double lo = profile_limit(p, s, t0);
    double v1 = profile_limit(p, s, t1);
    lo = v1 < lo ? v1 : lo;
    for (size_t i = profile_from(p, t0, 0); i < p->n && p->t[i] <= t1; i++)
        if (p->v[i] < lo)
            lo = p->v[i];
    return lo;
}

double pflex_target_profile_free_end(struct pflex_target_profile *p, const pflex_target_set_t *s,
                                     double t, double baseline_w, double unlimited_w)
{
    if (profile_sync(p, s, baseline_w, unlimited_w) < 0) {
        double best = INFINITY;
        for (size_t i = 0; i < s->n; i++) {
            double e = s->t[i].end_s;
            if (e > t && e < best && isinf(limit_at(s, e, baseline_w, unlimited_w, 0)))
                best = e;
        }
        return best;
    }
    if (isnan(t))
        return INFINITY;
    size_t i = profile_from(p, t, 1);
    return i < p->n && p->free[i] != SIZE_MAX ? p->t[p->free[i]] : INFINITY;
}

/* ---- text forms ---- */

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

int pflex_target_check_value(double value, enum pflex_target_unit unit, pflex_error_t *err)
{
    if (!isfinite(value) || !(value > 0))
        return pflex_error_set(err, "a target must be a positive finite number");
    if (unit == PFLEX_TARGET_FRACTION && value > PFLEX_TARGET_MAX_FRACTION)
        return pflex_error_set(err, "%g %% is over 100 %% of the baseline (a fraction is in (0, 100 %%])",
                               value * 100);
    if (unit == PFLEX_TARGET_WATTS && value < PFLEX_TARGET_MIN_W)
        return pflex_error_set(err, "%g W is under %g W: out of range (a site target in watts is in [1 W, 1 GW])",
                               value, PFLEX_TARGET_MIN_W);
    if (unit == PFLEX_TARGET_WATTS && value > PFLEX_TARGET_MAX_W)
        return pflex_error_set(err, "%g W is over 1 GW: out of range (a site target in watts is in [1 W, 1 GW])",
                               value);
    return 0;
}

/* A plain decimal number at s ("75", "0.5", ".5", "1.2e6"): its end, or
 * NULL.  strtod alone takes hex floats, "inf", "nan" and a leading sign or
 * blank, none of which an operator means by a power target. */
static const char *scan_decimal(const char *s)
{
    const char *p = s;
    int digs = 0;
    while (isdigit((unsigned char)*p))
        p++, digs++;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            digs++;
    if (!digs)
        return NULL;
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1;
        if (*q == '+' || *q == '-')
            q++;
        if (isdigit((unsigned char)*q)) {
            while (isdigit((unsigned char)*q))
                q++;
            p = q;
        }
    }
    return p;
}

/* A number of the grammar at s into *v, its end into *end: 0, or -1 with
 * what it is not.  what names the thing for the message. */
static int read_decimal(const char *s, const char *what, double *v, const char **end, pflex_error_t *err)
{
    const char *h = s + (*s == '+' || *s == '-');
    if (h[0] == '0' && (h[1] == 'x' || h[1] == 'X') && (isxdigit((unsigned char)h[2]) || h[2] == '.'))
        return pflex_error_set(err, "'%s': a %s is a decimal number (no hexadecimal)", s, what);
    if (s[0] == '-')
        return pflex_error_set(err, "'%s': a %s cannot be negative", s, what);
    const char *e = scan_decimal(s);
    if (!e)
        return pflex_error_set(err, "'%s' is not a %s (a decimal number, e.g. 700kW or 80%%)", s, what);
    char buf[64];
    if ((size_t)(e - s) >= sizeof buf)
        return pflex_error_set(err, "'%.40s...': a %s too long", s, what);
    memcpy(buf, s, (size_t)(e - s));
    buf[e - s] = '\0';
    *v = strtod(buf, NULL);
    if (!isfinite(*v))
        return pflex_error_set(err, "'%s': out of range", s);
    *end = e;
    return 0;
}

/* A quantity's unit after its number: W, kW, MW, %, or x (a fraction
 * written as a multiple of the baseline); 0 with *mul and *u, or -1. */
static int read_unit(const char *s, const char *end, double *mul, enum pflex_target_unit *u,
                     pflex_error_t *err)
{
    *mul = 1;
    *u = PFLEX_TARGET_WATTS;
    if (!strcmp(end, "mW") || !strcmp(end, "mw"))
        return pflex_error_set(err, "'%s': mW are milliwatts (megawatts are MW)", s);
    if (ieq(end, "W"))
        return 0;
    if (ieq(end, "kW"))
        return *mul = 1e3, 0;
    if (ieq(end, "MW"))
        return *mul = 1e6, 0;
    *u = PFLEX_TARGET_FRACTION;
    if (!strcmp(end, "%"))
        return *mul = 0.01, 0;
    if (ieq(end, "x"))
        return 0;
    return pflex_error_set(err, "'%s': unknown unit '%s' (W, kW, MW, %%, x)", s, end);
}

int pflex_quantity_parse(const char *s, unsigned accept, const char *what, double *value,
                         enum pflex_target_unit *unit, pflex_error_t *err)
{
    if (!s || !*s)
        return pflex_error_set(err, "empty %s", what);
    double v, mul;
    const char *end;
    if (read_decimal(s, what, &v, &end, err) < 0)
        return -1;
    const char *num_end = end;
    while (*end == ' ')
        end++;
    enum pflex_target_unit u;
    int power = accept & PFLEX_QTY_POWER, share = accept & PFLEX_QTY_SHARE;
    if (!*end) {
        if (accept & PFLEX_QTY_BARE_W)
            u = PFLEX_TARGET_WATTS;
        else if (accept & PFLEX_QTY_BARE_FRACTION)
            u = PFLEX_TARGET_FRACTION;
        else if (power && share)
            return pflex_error_set(err, "a %s needs a unit: W or %% (e.g. %.*s%% or %.*skW)", what,
                                   (int)(num_end - s), s, (int)(num_end - s), s);
        else
            return pflex_error_set(err, "a %s needs a unit: %s (e.g. %.*s%s)", what,
                                   power ? "W, kW or MW" : "%", (int)(num_end - s), s, power ? "W" : "%");
        *value = v;
        *unit = u;
        return 0;
    }
    if (read_unit(s, end, &mul, &u, err) < 0)
        return -1;
    if (u == PFLEX_TARGET_WATTS && !power)
        return pflex_error_set(err, "'%s' is a power; a %s here is written with %% (e.g. 30%%)", s, what);
    if (u == PFLEX_TARGET_FRACTION && !share)
        return pflex_error_set(err, "'%s' is a share; a %s here is written in W, kW or MW", s, what);
    *value = v * mul;
    *unit = u;
    return 0;
}

int pflex_quantity_parse_in(const char *s, unsigned accept, const char *what, double lo, double hi,
                            double *value, pflex_error_t *err)
{
    enum pflex_target_unit u;
    double v;
    if (pflex_quantity_parse(s, accept, what, &v, &u, err) < 0)
        return -1;
    if (v >= lo && v <= hi) {
        *value = v;
        return 0;
    }
    if (u == PFLEX_TARGET_WATTS)
        return pflex_error_set(err, "%s is %g W, outside [%g, %g] W", s, v, lo, hi);
    /* a bare share over the range that fits as a percentage: 30 for 30 % */
    if (!strpbrk(s, "%xX") && v > hi && v / 100 >= lo && v / 100 <= hi)
        return pflex_error_set(err, "%s is a fraction outside [%g, %g]: did you mean %s%%?", s, lo, hi, s);
    return pflex_error_set(err, "%s is outside [%g %%, %g %%]", s, lo * 100, hi * 100);
}

/* The value grammar; bare_w: a number without a unit is W (schedule
 * files, documented so), *bare set when it was. */
static int parse_value(const char *s, int bare_w, int *bare, double *value, enum pflex_target_unit *unit,
                       pflex_error_t *err)
{
    if (!s || !*s)
        return pflex_error_set(err, "empty target (e.g. 700kW or 80%%)");
    unsigned accept = PFLEX_QTY_POWER | PFLEX_QTY_SHARE | (bare_w ? PFLEX_QTY_BARE_W : 0);
    double v;
    enum pflex_target_unit u;
    if (pflex_quantity_parse(s, accept, "target", &v, &u, err) < 0)
        return -1;
    if (bare) {
        const char *e = scan_decimal(s);
        while (e && *e == ' ')
            e++;
        *bare = e && !*e;
    }
    pflex_error_t e2;
    if (pflex_target_check_value(v, u, &e2) < 0)
        return pflex_error_set(err, "'%s': %s", s, e2.text);
    *value = v;
    *unit = u;
    return 0;
}

int pflex_target_parse_value(const char *s, double *value, enum pflex_target_unit *unit,
                             pflex_error_t *err)
{
    return parse_value(s, 0, NULL, value, unit, err);
}

/* ISO 8601 durations as OpenADR 3 writes them: P[nY][nM][nD|nW][T[nH][nM][n[.n]S]].
 * A year counts 365 days and a month 30 (no calendar is attached); 9999
 * years or more mean forever. */
static int parse_iso_duration(const char *s, double *out, pflex_error_t *err)
{
    const char *p = s + 1;      /* past 'P' */
    int in_time = 0, any = 0;
    double total = 0;
    int forever = 0;
    while (*p) {
        if (*p == 'T') {
            if (in_time)
                return pflex_error_set(err, "'%s' is not an ISO 8601 duration", s);
            in_time = 1;
            p++;
            if (!*p)
                return pflex_error_set(err, "'%s' is not an ISO 8601 duration", s);
            continue;
        }
        if (!isdigit((unsigned char)*p))
            return pflex_error_set(err, "'%s' is not an ISO 8601 duration", s);
        char *e;
        double v = strtod(p, &e);
        if (e == p || !isfinite(v) || v > 1e12)
            return pflex_error_set(err, "'%s' is not an ISO 8601 duration", s);
        double mul;
        switch (*e) {
        case 'Y': mul = in_time ? -1 : 365 * 86400.0; if (!in_time && v >= 9999) forever = 1; break;
        case 'M': mul = in_time ? 60 : 30 * 86400.0; break;
        case 'W': mul = in_time ? -1 : 7 * 86400.0; break;
        case 'D': mul = in_time ? -1 : 86400.0; break;
        case 'H': mul = in_time ? 3600 : -1; break;
        case 'S': mul = in_time ? 1 : -1; break;
        default: mul = -1;
        }
        if (mul < 0)
            return pflex_error_set(err, "'%s' is not an ISO 8601 duration", s);
        total += v * mul;
        any = 1;
        p = e + 1;
    }
    if (!any)
        return pflex_error_set(err, "'%s' is not an ISO 8601 duration", s);
    *out = forever ? INFINITY : total;
    return 0;
}

int pflex_target_parse_duration(const char *s, double *seconds, pflex_error_t *err)
{
    if (!s || !*s)
        return pflex_error_set(err, "empty duration");
    if (ieq(s, "forever") || ieq(s, "inf")) {
        *seconds = INFINITY;
        return 0;
    }
    if (s[0] == '-')
        return pflex_error_set(err, "'%s': a duration cannot be negative", s);
    if (s[0] == 'P')
        return parse_iso_duration(s, seconds, err);
    const char *p = s;
    double total = 0;
    while (*p) {
        char *e;
        errno = 0;
        double v = strtod(p, &e);
        if (e == p || errno || !isfinite(v) || v < 0 || v > 1e12)
            return pflex_error_set(err, "'%s' is not a duration (e.g. 90s, 15m, 2h, PT15M)", s);
        double mul;
        switch (*e) {
        case '\0': mul = 1; break;
        case 's': mul = 1; break;
        case 'm': mul = 60; break;
        case 'h': mul = 3600; break;
        case 'd': mul = 86400; break;
        default:
            return pflex_error_set(err, "'%s' is not a duration (e.g. 90s, 15m, 2h, PT15M)", s);
        }
        total += v * mul;
        p = *e ? e + 1 : e;
    }
    *seconds = total;
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static double days_from_civil(long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return (double)era * 146097 + (double)doe - 719468;
}

static int digits(const char *p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)p[i]))
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

static int parse_rfc3339(const char *s, double *out, pflex_error_t *err)
{
    int Y, M, D, h = 0, mi = 0, sec = 0;
    size_t len = strlen(s);
    const char *bad = "'%s' is not a time (now, +15m, @UNIX, or RFC 3339 like 2026-05-03T18:00:00Z)";
    if (len < 10 || digits(s, 4, &Y) || s[4] != '-' || digits(s + 5, 2, &M) || s[7] != '-'
        || digits(s + 8, 2, &D))
        return pflex_error_set(err, bad, s);
    const char *p = s + 10;
    double frac = 0, off = 0;
    if (*p) {
        if (!(*p == 'T' || *p == 't' || *p == ' ') || strlen(p) < 9 || digits(p + 1, 2, &h)
            || p[3] != ':' || digits(p + 4, 2, &mi) || p[6] != ':' || digits(p + 7, 2, &sec))
            return pflex_error_set(err, bad, s);
        p += 9;
        if (*p == '.') {
            double scale = 0.1;
            p++;
            if (!isdigit((unsigned char)*p))
                return pflex_error_set(err, bad, s);
            while (isdigit((unsigned char)*p)) {
                frac += (*p - '0') * scale;
                scale /= 10;
                p++;
            }
        }
        if (*p == 'Z' || *p == 'z')
            p++;
        else if (*p == '+' || *p == '-') {
            int oh, om;
            if (strlen(p) != 6 || digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om)
                || oh > 23 || om > 59)
                return pflex_error_set(err, bad, s);
            off = (oh * 3600.0 + om * 60.0) * (*p == '-' ? -1 : 1);
            p += 6;
        } else if (*p)
            return pflex_error_set(err, bad, s);
        if (*p)
            return pflex_error_set(err, bad, s);
    }
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || mi > 59 || sec > 60)
        return pflex_error_set(err, "'%s': date or time out of range", s);
    *out = days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400.0 + h * 3600.0 + mi * 60.0 + sec
           + frac - off;
    return 0;
}

int pflex_target_check_time(double unix_s, pflex_error_t *err)
{
    char buf[64] = "the time";
    /* named by its date where the calendar reaches (year 5138, not 1e11) */
    if (fabs(unix_s) < 1e14)
        pflex_target_format_time(unix_s, buf, sizeof buf);
    if (!(unix_s >= 0))
        return pflex_error_set(err, "%s is before 1970-01-01T00:00:00Z (the unix epoch): out of range", buf);
    if (!(unix_s < PFLEX_TARGET_TIME_MAX_S))
        return pflex_error_set(err, "%s is out of range (times run to 2100-01-01T00:00:00Z)", buf);
    return 0;
}

static int parse_time(const char *s, double now_s, double *unix_s, pflex_error_t *err)
{
    if (!s || !*s)
        return pflex_error_set(err, "empty time");
    if (ieq(s, "now")) {
        *unix_s = now_s;
        return 0;
    }
    if (s[0] == '+') {
        double d;
        if (pflex_target_parse_duration(s + 1, &d, err) < 0)
            return -1;
        if (!isfinite(d))
            return pflex_error_set(err, "'%s': a start cannot be forever from now", s);
        *unix_s = now_s + d;
        return 0;
    }
    if (s[0] == '@') {
        const char *e;
        if (s[1] == '-')
            return pflex_error_set(err, "'%s' is before 1970-01-01T00:00:00Z (the unix epoch): out of range", s);
        if (read_decimal(s + 1, "unix time", unix_s, &e, err) < 0)
            return -1;
        if (*e)
            return pflex_error_set(err, "'%s' is not a unix time (@ and seconds, e.g. @1700000000)", s);
        return 0;
    }
    return parse_rfc3339(s, unix_s, err);
}

int pflex_target_parse_time(const char *s, double now_s, double *unix_s, pflex_error_t *err)
{
    double t;
    if (parse_time(s, now_s, &t, err) < 0)
        return -1;
    pflex_error_t e2;
    if (pflex_target_check_time(t, &e2) < 0)
        return pflex_error_set(err, "'%s': %s", s, e2.text);
    *unix_s = t;
    return 0;
}

char *pflex_target_format_time(double unix_s, char *buf, size_t size)
{
    if (!isfinite(unix_s)) {
        snprintf(buf, size, "%s", unix_s > 0 ? "forever" : "never");
        return buf;
    }
    double fl = floor(unix_s);
    long long secs = (long long)fl;
    int ms = (int)llround((unix_s - fl) * 1000);
    if (ms == 1000) {
        secs++;
        ms = 0;
    }
    long long days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    long long rem = secs - days * 86400;
    /* civil_from_days (H. Hinnant) */
    long long z = days + 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long y = (long long)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    if (ms)
        snprintf(buf, size, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", y, m, d, (int)(rem / 3600),
                 (int)(rem / 60 % 60), (int)(rem % 60), ms);
    else
        snprintf(buf, size, "%04lld-%02u-%02uT%02d:%02d:%02dZ", y, m, d, (int)(rem / 3600),
                 (int)(rem / 60 % 60), (int)(rem % 60));
    return buf;
}

int pflex_target_parse(const char *spec, double now_s, struct pflex_target *out, pflex_error_t *err)
{
    char buf[512];
    if (!spec || strlen(spec) >= sizeof buf)
        return pflex_error_set(err, "target too long or empty");
    strcpy(buf, spec);
    /* strtok_r would skip empty fields: "70%,,," and ",70%" are typos, not targets. */
    size_t len = strlen(spec);
    const char *empty = spec[0] == ',' ? spec : strstr(spec, ",,");
    if (!empty && len && spec[len - 1] == ',')
        empty = spec + len - 1;
    if (empty)
        return pflex_error_set(err, "target '%s': an empty field (the ',' at character %d); "
                               "want VALUE[,key=value...], e.g. 70%%,for=1h", spec,
                               (int)(empty - spec) + 1);
    struct pflex_target t = {.start_s = now_s, .end_s = INFINITY, .unit = PFLEX_TARGET_WATTS};
    snprintf(t.source, sizeof t.source, "cli");
    char *save = NULL;
    char *tok = strtok_r(buf, ",", &save);
    if (!tok)
        return pflex_error_set(err, "empty target");
    if (pflex_target_parse_value(tok, &t.value, &t.unit, err) < 0)
        return -1;
    static const char *const keys[] = {"start", "end", "for", "ramp", "priority", "confirm"};
    enum { K_START, K_END, K_FOR, K_RAMP, K_PRIORITY, K_CONFIRM, K_N };
    const char *val[K_N] = {0};
    while ((tok = strtok_r(NULL, ",", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return pflex_error_set(err, "'%s': expected key=value (start, end, for, ramp, priority, confirm)", tok);
        *eq = '\0';
        int k = 0;
        while (k < K_N && strcmp(tok, keys[k]))
            k++;
        if (k == K_N)
            return pflex_error_set(err, "unknown key '%s' (start, end, for, ramp, priority, confirm)", tok);
        /* "start=+1h,start=+2h": which one was meant is a guess */
        if (val[k])
            return pflex_error_set(err, "'%s' given twice", keys[k]);
        val[k] = eq + 1;
    }
    if (val[K_START] && pflex_target_parse_time(val[K_START], now_s, &t.start_s, err) < 0)
        return -1;
    if (val[K_RAMP]) {
        if (pflex_target_parse_duration(val[K_RAMP], &t.ramp_s, err) < 0)
            return -1;
        if (!(t.ramp_s <= PFLEX_TARGET_MAX_RAMP_S))
            return pflex_error_set(err, "ramp '%s': at most a day (1d)", val[K_RAMP]);
    }
    if (val[K_PRIORITY]) {
        const char *v = val[K_PRIORITY];
        char *e;
        long p = isdigit((unsigned char)*v) ? strtol(v, &e, 10) : -1;
        if (p < 0 || *e || p > 1000000)
            return pflex_error_set(err, "priority '%s' must be a whole number 0..1000000", v);
        t.priority = (int)p;
    }
    if (val[K_CONFIRM]) {
        if (strcmp(val[K_CONFIRM], "yes"))
            return pflex_error_set(err, "confirm '%s': only confirm=yes", val[K_CONFIRM]);
        t.confirm = 1;
    }
    if (val[K_END] && val[K_FOR])
        return pflex_error_set(err, "give end= or for=, not both");
    if (val[K_END] && !ieq(val[K_END], "forever")) {
        if (pflex_target_parse_time(val[K_END], now_s, &t.end_s, err) < 0)
            return -1;
    } else if (val[K_FOR]) {
        double d;
        if (pflex_target_parse_duration(val[K_FOR], &d, err) < 0)
            return -1;
        t.end_s = t.start_s + d;
        pflex_error_t e2;
        if (isfinite(t.end_s) && pflex_target_check_time(t.end_s, &e2) < 0)
            return pflex_error_set(err, "for=%s: its end %s (for=forever: no end)", val[K_FOR], e2.text);
    }
    if (target_check(&t, err) < 0)
        return -1;
    *out = t;
    return 0;
}

/* ---- schedule CSV ---- */

enum { C_START, C_END, C_DURATION, C_TARGET, C_RAMP, C_PRIORITY, C_ID, C_N };
static const char *const col_names[C_N] = {"start", "end", "duration", "target", "ramp",
                                           "priority", "id"};

static int field_str(const struct pflex_csv_field *f, char *buf, size_t size)
{
    if (f->len >= size)
        return -1;
    memcpy(buf, f->s, f->len);
    buf[f->len] = '\0';
    return 0;
}

int pflex_target_schedule_read_mem(const char *buf, size_t len, const char *name, double now_s,
                                   pflex_target_set_t *s, unsigned *bare_line, pflex_error_t *err)
{
    unsigned first_bare = 0;
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, name);
    pflex_target_set_t tmp;
    pflex_target_set_init(&tmp);
    int idx[C_N], rc = -1, got;
    for (int k = 0; k < C_N; k++)
        idx[k] = -1;
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (got == 0)
            pflex_error_set(err, "%s:1: empty schedule (expected a header: start,end,target,ramp)", name);
        goto out;
    }
    for (size_t f = 0; f < c.nfields; f++)
        for (int k = 0; k < C_N; k++)
            if (pflex_csv_field_is(&c.fields[f], col_names[k]) && idx[k] < 0)
                idx[k] = (int)f;
    if (idx[C_START] < 0 || idx[C_TARGET] < 0) {
        pflex_error_set(err, "%s:%u: the header needs columns 'start' and 'target'", name, c.line);
        goto out;
    }
    if (idx[C_END] >= 0 && idx[C_DURATION] >= 0) {
        pflex_error_set(err, "%s:%u: give 'end' or 'duration', not both", name, c.line);
        goto out;
    }
    while ((got = pflex_csv_next(&c, err)) == 1) {
        struct pflex_target t = {.end_s = INFINITY};
        snprintf(t.source, sizeof t.source, "schedule");
        char v[256];
        pflex_error_t e2;
        int k;
        for (k = 0; k < C_N; k++) {
            if (idx[k] < 0)
                continue;
            if ((size_t)idx[k] >= c.nfields) {
                if (k == C_START || k == C_TARGET) {
                    pflex_error_set(err, "%s:%u: column '%s': missing", name, c.line, col_names[k]);
                    goto out;
                }
                continue;
            }
            if (field_str(&c.fields[idx[k]], v, sizeof v) < 0) {
                pflex_error_set(err, "%s:%u: column '%s': too long", name, c.line, col_names[k]);
                goto out;
            }
            int bad = 0;
            switch (k) {
            case C_START:
                bad = pflex_target_parse_time(v, now_s, &t.start_s, &e2);
                break;
            case C_TARGET: {
                int bare;
                bad = parse_value(v, 1, &bare, &t.value, &t.unit, &e2);
                if (!bad && bare && !first_bare)
                    first_bare = c.line;
                break;
            }
            case C_END:
                if (*v && !ieq(v, "forever"))
                    bad = pflex_target_parse_time(v, now_s, &t.end_s, &e2);
                break;
            case C_DURATION:
                if (*v) {
                    double d;
                    bad = pflex_target_parse_duration(v, &d, &e2);
                    if (!bad)
                        t.end_s = d;    /* made absolute below, once start is known */
                }
                break;
            case C_RAMP:
                if (*v) {
                    bad = pflex_target_parse_duration(v, &t.ramp_s, &e2);
                    if (!bad && !(t.ramp_s <= PFLEX_TARGET_MAX_RAMP_S))
                        bad = pflex_error_set(&e2, "'%s': a ramp is at most a day (1d)", v);
                }
                break;
            case C_PRIORITY:
                if (*v) {
                    char *e;
                    long p = strtol(v, &e, 10);
                    if (e == v || *e || p < 0 || p > 1000000)
                        bad = pflex_error_set(&e2, "'%s' is not a priority 0..1000000", v);
                    t.priority = (int)p;
                }
                break;
            case C_ID:
                if (strlen(v) >= sizeof t.id)
                    bad = pflex_error_set(&e2, "an id is at most %zu characters", sizeof t.id - 1);
                else
                    memcpy(t.id, v, strlen(v) + 1);
                break;
            }
            if (bad) {
                pflex_error_set(err, "%s:%u: column '%s': %s", name, c.line, col_names[k], e2.text);
                goto out;
            }
        }
        if (idx[C_DURATION] >= 0 && (size_t)idx[C_DURATION] < c.nfields
            && c.fields[idx[C_DURATION]].len > 0)
            t.end_s = t.start_s + t.end_s;
        if (isfinite(t.end_s) && pflex_target_check_time(t.end_s, &e2) < 0) {
            pflex_error_set(err, "%s:%u: the target's end: %s", name, c.line, e2.text);
            goto out;
        }
        if (pflex_target_set_add(&tmp, &t, &e2) < 0) {
            pflex_error_set(err, "%s:%u: %s", name, c.line, e2.text);
            goto out;
        }
    }
    if (got < 0)
        goto out;
    if (s->n + tmp.n > PFLEX_TARGET_MAX) {
        pflex_error_set(err, "%s: too many targets (at most %d)", name, PFLEX_TARGET_MAX);
        goto out;
    }
    for (size_t i = 0; i < tmp.n; i++)
        if (pflex_target_set_add(s, &tmp.t[i], err) < 0)
            goto out;
    rc = 0;
    if (bare_line)
        *bare_line = first_bare;
out:
    pflex_target_set_fini(&tmp);
    pflex_csv_fini(&c);
    return rc;
}

int pflex_target_schedule_read(const char *path, double now_s, pflex_target_set_t *s,
                               unsigned *bare_line, pflex_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return pflex_error_set(err, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return pflex_error_set(err, "out of memory");
    }
    size_t got;
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            if (cap >= (64u << 20)) {
                free(buf);
                fclose(f);
                return pflex_error_set(err, "%s: schedule larger than 64 MiB", path);
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                return pflex_error_set(err, "out of memory");
            }
            buf = nb;
            cap *= 2;
        }
    }
    int rd = ferror(f);
    fclose(f);
    if (rd) {
        free(buf);
        return pflex_error_set(err, "%s: read error", path);
    }
    int rc = pflex_target_schedule_read_mem(buf, len, path, now_s, s, bare_line, err);
    free(buf);
    return rc;
}
