/* levers.c — a grid event with levers beyond caps: the field baselines,
 * pflex's re-planning policy and the oracle on the same jobs, limit and
 * noise (pflex/site/levers.h). */
#include "pflex/site/levers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/util/mix.h"

const char *pflex_levers_policy_name(enum pflex_levers_policy p)
{
    if ((int)p < PFLEX_FIELD_N)
        return pflex_fieldpol_name((enum pflex_fieldpol)p);
    return p == PFLEX_LV_PLAN ? "plan" : p == PFLEX_LV_ORACLE ? "oracle" : "?";
}

/* Standard normal from counter-based uniforms (Box-Muller), from (seed,
 * period, job): every policy that reads sees the same noise. */
static double normal_at(uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t h = pflex_mix64(seed ^ pflex_mix64(a ^ pflex_mix64(b ^ 0x1e7e25ULL)));
    uint64_t h2 = pflex_mix64(h);
    double u1 = ((double)(h >> 11) + 0.5) / 9007199254740992.0;
    double u2 = (double)(h2 >> 11) / 9007199254740992.0;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A job's size class under a choice: 0 full (caps, pause), -1 stopped,
 * g resized to g GPUs. */
static int cls_of(const struct pflex_horizon_choice *c)
{
    return c->what == PFLEX_HZ_STOP ? -1 : c->what == PFLEX_HZ_RESIZE ? c->gpus : 0;
}

/* One job's period on the truth: the power the guarantee counts and the
 * power drawn (W), and the time lost (s of its full rate). */
struct truth {
    double power_w, drawn_w, lost_s, fraction;
};

static struct truth job_period(const struct pflex_levers_job *jb, const struct pflex_horizon_choice *c, int prev,
                               double dt, int last)
{
    const struct pflex_horizon_job *h = &jb->hz;
    struct truth r = {0};
    double pw, f;
    switch (c->what) {
    case PFLEX_HZ_CAP:
        pflex_sim_kind_at(jb->kind, c->cap_w, &pw, &f);
        r.power_w = c->cap_w * h->gpus;
        r.drawn_w = pw * h->gpus;
        r.fraction = f;
        break;
    case PFLEX_HZ_RESIZE:
        pflex_sim_kind_at(jb->kind, jb->kind->cap_w[0], &pw, &f);
        r.power_w = jb->kind->cap_w[0] * c->gpus;
        r.drawn_w = pw * c->gpus;
        r.fraction = h->resize_eff * c->gpus / h->gpus;
        break;
    case PFLEX_HZ_PAUSE:
        r.power_w = r.drawn_w = h->idle_w * h->gpus;
        break;
    case PFLEX_HZ_STOP:
        break;
    }
    r.lost_s = (1 - r.fraction) * dt;
    int cl = cls_of(c);
    if (cl != prev) {
        if (prev >= 0) {        /* a checkpoint of the size it leaves */
            int g = prev ? prev : h->gpus;
            r.power_w += h->idle_w * g;
            r.drawn_w += h->idle_w * g;
            r.lost_s += h->ckpt_s;
        }
        if (cl >= 0)
            r.lost_s += h->restart_s;
    }
    if (last && cl != 0)        /* the way back to its full size after the event */
        r.lost_s += (cl > 0 ? h->ckpt_s : 0) + h->restart_s;
    return r;
}

/* The watts a period's plan leaves under its limit go to caps, a watt per
 * GPU at a time to the job it wins most on (the truth). */
static void fill(size_t n, const struct pflex_levers_job *jobs, struct pflex_horizon_choice *x, size_t T, size_t t,
                 const int *prev, double dt, double limit_w, double other_w)
{
    if (!isfinite(limit_w))
        return;
    double used = other_w;
    for (size_t j = 0; j < n; j++)
        used += job_period(&jobs[j], &x[j * T + t], prev[j], dt, t == T - 1).power_w;
    double left = limit_w - used;
    for (;;) {
        size_t pick = n;
        double best = 0;
        for (size_t j = 0; j < n; j++) {
            struct pflex_horizon_choice *c = &x[j * T + t];
            const struct pflex_levers_job *jb = &jobs[j];
            if (c->what != PFLEX_HZ_CAP || c->cap_w + 1 > jb->kind->cap_w[0] || jb->hz.gpus > left ||
                !(jb->hz.levers & PFLEX_LEVER_CAP))
                continue;
            double p0, f0, p1, f1;
            pflex_sim_kind_at(jb->kind, c->cap_w, &p0, &f0);
            pflex_sim_kind_at(jb->kind, c->cap_w + 1, &p1, &f1);
            double gain = (f1 - f0) * jb->hz.weight;     /* per watt: n W buys n (f1 - f0) */
            if (gain > best)
                best = gain, pick = j;
        }
        if (pick == n)
            break;
        struct pflex_horizon_choice *c = &x[pick * T + t];
        c->cap_w += 1;
        double p, f;
        pflex_sim_kind_at(jobs[pick].kind, c->cap_w, &p, &f);
        c->fraction = f;
        left -= jobs[pick].hz.gpus;
    }
}

void pflex_levers_result_fini(struct pflex_levers_result *r, size_t njobs)
{
    (void)njobs;
    free(r->limit_w);
    for (int p = 0; p < PFLEX_LV_NPOL; p++) {
        free(r->power_w[p]);
        free(r->x[p]);
        free(r->pol[p].job_loss);
    }
    memset(r, 0, sizeof *r);
}

/* Score a plan on the truth. */
static void score(const struct pflex_levers_config *c, struct pflex_levers_result *r, int p, const char *feasible)
{
    size_t n = c->njobs, T = r->nperiods;
    struct pflex_levers_summary *s = &r->pol[p];
    const struct pflex_horizon_choice *x = r->x[p];
    double dt = r->period_s;
    for (size_t j = 0; j < n; j++) {
        const struct pflex_levers_job *jb = &c->jobs[j];
        int prev = 0;
        double lost = 0, run = 0;
        int pause_long = 0;
        for (size_t t = 0; t < T; t++) {
            const struct pflex_horizon_choice *ch = &x[j * T + t];
            struct truth tr = job_period(jb, ch, prev, dt, t == T - 1);
            int cl = cls_of(ch);
            if (cl != prev) {
                s->stops += cl == -1;
                s->resizes += cl > 0;
            }
            if (ch->what == PFLEX_HZ_PAUSE) {
                if (!t || x[j * T + t - 1].what != PFLEX_HZ_PAUSE)
                    s->pauses++, run = 0;
                run += dt;
                if (run > jb->hz.max_pause_s + 1e-9)
                    pause_long = 1;
            }
            prev = cl;
            lost += tr.lost_s;
            r->power_w[p][t] += tr.power_w;
            s->energy_kwh += tr.drawn_w * dt / 3.6e6;
            s->progress_s += jb->hz.weight * jb->hz.gpus * (dt - tr.lost_s);
            if (jb->hz.floor > 0 && 1 - tr.lost_s / dt < jb->hz.floor - 1e-9)
                s->floor_breaches++;
        }
        double share = lost / r->event_s;
        s->job_loss[j] = share;
        double budget = isfinite(jb->hz.loss_budget) ? jb->hz.loss_budget : INFINITY;
        int kept = share <= budget + 1e-9 && !pause_long;
        if (jb->hz.floor > 0) {
            /* a floor's breach in any period breaks the contract */
            for (size_t t = 0; t < T && kept; t++) {
                int pr = t ? cls_of(&x[j * T + t - 1]) : 0;
                struct truth tr = job_period(jb, &x[j * T + t], pr, dt, t == T - 1);
                if (1 - tr.lost_s / dt < jb->hz.floor - 1e-9)
                    kept = 0;
            }
        }
        if (isfinite(budget) && budget > 0 && share / budget > s->worst_budget_use)
            s->worst_budget_use = share / budget;
        if (kept)
            s->contracts_kept++;
        else
            s->contracts_broken++;
    }
    for (size_t t = 0; t < T; t++) {
        r->power_w[p][t] += c->other_w;
        s->energy_kwh += c->other_w * dt / 3.6e6;
        double over = r->power_w[p][t] - r->limit_w[t];
        if (isfinite(r->limit_w[t]) && over > 1e-6) {
            s->periods_over++;
            s->periods_over_feasible += feasible[t];
            if (over > s->max_over_w)
                s->max_over_w = over;
        }
    }
    s->lost_pct = 100 * (r->site_progress_s - s->progress_s) / r->site_progress_s;
    s->ran = 1;
}

/* The planner's jobs at the event's start: their levels from the curves. */
static void hz_jobs(const struct pflex_levers_config *c, double event_s, struct pflex_horizon_job *hz)
{
    size_t nl = c->nlevels ? c->nlevels : PFLEX_HORIZON_MAX_LEVELS;
    for (size_t j = 0; j < c->njobs; j++) {
        const struct pflex_levers_job *jb = &c->jobs[j];
        hz[j] = jb->hz;
        hz[j].nlevels = pflex_horizon_levels(jb->kind->cap_w, jb->kind->fraction, jb->kind->n, nl, hz[j].levels);
        hz[j].event_s = event_s;
        hz[j].lost_s = 0;
        hz[j].state = PFLEX_HZ_CAP;
        hz[j].paused_s = 0;
    }
}

/* A re-plan's periods: the next PLAN_NEAR one by one, the rest in blocks
 * of equal count (at most PLAN_FAR of them), each at its lowest limit: a
 * plan keeps its size whatever the event's length, and what it decides
 * now is planned in full detail.  Returns the blocks written. */
#define PLAN_NEAR 12
#define PLAN_FAR 36
static size_t blocks(const double *dt, const double *lim, size_t T, double *bdt, double *blim)
{
    size_t nb = 0, t = 0;
    for (; t < T && t < PLAN_NEAR; t++, nb++)
        bdt[nb] = dt[t], blim[nb] = lim[t];
    size_t rest = T - t, g = (rest + PLAN_FAR - 1) / PLAN_FAR;
    while (t < T) {
        bdt[nb] = 0;
        blim[nb] = INFINITY;
        for (size_t k = 0; k < g && t < T; k++, t++) {
            bdt[nb] += dt[t];
            if (lim[t] < blim[nb])
                blim[nb] = lim[t];
        }
        nb++;
    }
    return nb;
}

/* pflex's policy: plan again at every period over the rest of the event
 * from the progress read so far. */
static int run_plan(const struct pflex_levers_config *c, struct pflex_levers_result *r, struct pflex_horizon_job *hz,
                    const double *dt, pflex_error_t *err)
{
    size_t n = c->njobs, T = r->nperiods;
    struct pflex_horizon_choice *x = r->x[PFLEX_LV_PLAN];
    int *prev = calloc(n, sizeof *prev);
    double *read_lost = calloc(n, sizeof *read_lost);
    double *bdt = malloc(T * sizeof *bdt), *blim = malloc(T * sizeof *blim);
    if (!prev || !read_lost || !bdt || !blim) {
        free(prev);
        free(read_lost);
        free(bdt);
        free(blim);
        return pflex_error_sys(err, "out of memory");
    }
    struct pflex_levers_summary *s = &r->pol[PFLEX_LV_PLAN];
    double sum_s = 0;
    int rc = 0;
    for (size_t t = 0; t < T && rc == 0; t++) {
        double margin = c->z * c->noise_tput * r->period_s * sqrt((double)t);
        for (size_t j = 0; j < n; j++)
            hz[j].lost_s = read_lost[j] + margin;
        size_t nb = blocks(dt + t, r->limit_w + t, T - t, bdt, blim);
        struct pflex_horizon_problem pr = {
            .njobs = n, .nperiods = nb, .jobs = hz, .dt_s = bdt, .limit_w = blim,
            .other_w = c->other_w, .mip_gap = c->mip_gap > 0 ? c->mip_gap : 1e-3,
            .time_limit_s = c->plan_time_s > 0 ? c->plan_time_s : 2,
        };
        struct pflex_horizon_plan pl;
        if (pflex_horizon_solve(&pr, &pl, err) < 0) {
            rc = -1;
            break;
        }
        if (pl.excess_w[0] > 0 && margin > 0) {
            /* the margin gives way before the limit does: planned again
             * on the readings as they are */
            struct pflex_horizon_plan p2;
            for (size_t j = 0; j < n; j++)
                hz[j].lost_s = read_lost[j];
            if (pflex_horizon_solve(&pr, &p2, err) < 0) {
                pflex_horizon_plan_fini(&pl);
                rc = -1;
                break;
            }
            sum_s += pl.solve_s;
            s->plans++;
            if (p2.excess_w[0] < pl.excess_w[0]) {
                pflex_horizon_plan_fini(&pl);
                pl = p2;
            } else
                pflex_horizon_plan_fini(&p2);
        }
        s->plans++;
        sum_s += pl.solve_s;
        if (pl.solve_s > s->plan_s_max)
            s->plan_s_max = pl.solve_s;
        for (size_t j = 0; j < n; j++)
            x[j * T + t] = pl.x[j * nb];
        pflex_horizon_plan_fini(&pl);
        fill(n, c->jobs, x, T, t, prev, dt[t], r->limit_w[t], c->other_w);
        /* the period runs; what is read of it feeds the next plan */
        for (size_t j = 0; j < n; j++) {
            const struct pflex_horizon_choice *ch = &x[j * T + t];
            struct truth tr = job_period(&c->jobs[j], ch, prev[j], dt[t], 0);
            double f_read = (1 - tr.lost_s / dt[t]) * (1 + c->noise_tput * normal_at(c->seed, t, j));
            read_lost[j] += dt[t] * (1 - f_read);
            int cl = cls_of(ch);
            hz[j].paused_s = ch->what == PFLEX_HZ_PAUSE ? (hz[j].state == PFLEX_HZ_PAUSE ? hz[j].paused_s : 0) + dt[t]
                                                         : 0;
            hz[j].state = ch->what;
            hz[j].state_gpus = ch->gpus;
            prev[j] = cl;
        }
    }
    s->plan_s_mean = s->plans ? sum_s / (double)s->plans : 0;
    free(prev);
    free(read_lost);
    free(bdt);
    free(blim);
    return rc;
}

static int event_span(const struct pflex_levers_config *c, struct pflex_levers_result *r, double unlimited_w,
                      pflex_error_t *err)
{
    size_t total = (size_t)ceil(c->duration_s / c->period_s - 1e-9);
    long first = -1, last = -1;
    for (size_t k = 0; k < total; k++) {
        double t = c->start_s + (double)k * c->period_s;
        double l = pflex_target_limit_min_w(c->targets, t, t + c->period_s, c->baseline_w, unlimited_w);
        if (isfinite(l) && l < unlimited_w) {
            if (first < 0)
                first = (long)k;
            last = (long)k;
        }
    }
    if (first < 0)
        return pflex_error_set(err, "levers: no limit under the site's uncapped power in the run: no event to plan");
    r->nperiods = (size_t)(last - first + 1);
    r->period_s = c->period_s;
    r->event_start_s = c->start_s + (double)first * c->period_s;
    r->event_s = (double)r->nperiods * c->period_s;
    r->limit_w = malloc(r->nperiods * sizeof *r->limit_w);
    if (!r->limit_w)
        return pflex_error_sys(err, "out of memory");
    for (size_t k = 0; k < r->nperiods; k++) {
        double t = r->event_start_s + (double)k * c->period_s;
        r->limit_w[k] = pflex_target_limit_min_w(c->targets, t, t + c->period_s, c->baseline_w, unlimited_w);
    }
    return 0;
}

int pflex_levers_run(const struct pflex_levers_config *c, struct pflex_levers_result *out, pflex_error_t *err)
{
    memset(out, 0, sizeof *out);
    size_t n = c->njobs;
    if (!n || !(c->period_s > 0) || !(c->duration_s > 0))
        return pflex_error_set(err, "levers: no jobs, or no period or duration");
    double unlimited = c->other_w;
    for (size_t j = 0; j < n; j++) {
        if (!c->jobs[j].kind || c->jobs[j].kind->n < 2 || c->jobs[j].hz.gpus < 1)
            return pflex_error_set(err, "levers: job '%s' has no curve or no GPUs", c->jobs[j].name);
        unlimited += c->jobs[j].kind->cap_w[0] * c->jobs[j].hz.gpus;
    }
    if (event_span(c, out, unlimited, err) < 0)
        return -1;
    size_t T = out->nperiods;
    struct pflex_horizon_job *hz = calloc(n, sizeof *hz);
    double *dt = malloc(T * sizeof *dt);
    char *feasible = calloc(T, 1);
    int rc = -1;
    if (!hz || !dt || !feasible)
        goto oom;
    for (size_t p = 0; p < PFLEX_LV_NPOL; p++) {
        out->power_w[p] = calloc(T, sizeof(double));
        out->x[p] = calloc(n * T, sizeof(struct pflex_horizon_choice));
        out->pol[p].job_loss = calloc(n, sizeof(double));
        if (!out->power_w[p] || !out->x[p] || !out->pol[p].job_loss)
            goto oom;
    }
    for (size_t t = 0; t < T; t++)
        dt[t] = c->period_s;
    for (size_t j = 0; j < n; j++)
        out->site_progress_s += c->jobs[j].hz.weight * c->jobs[j].hz.gpus * out->event_s;
    hz_jobs(c, out->event_s, hz);
    double ot = c->oracle_time_s > 0 ? c->oracle_time_s : 30;
    double gap = c->mip_gap > 0 ? c->mip_gap : 1e-3;
    if (c->deepest) {
        /* the planner reads its progress with noise and keeps a margin of
         * z sd of the readings' sum at the end: the deepest limit is the
         * one it can meet with that margin spent */
        double margin = c->z * c->noise_tput * c->period_s * sqrt((double)T);
        for (size_t j = 0; j < n; j++)
            hz[j].lost_s = margin;
        struct pflex_horizon_problem dp = {.njobs = n, .nperiods = T, .jobs = hz, .dt_s = dt,
                                           .limit_w = out->limit_w, .other_w = c->other_w, .deepest = 1,
                                           .mip_gap = gap / 10, .time_limit_s = ot};
        struct pflex_horizon_plan pl;
        if (pflex_horizon_solve(&dp, &pl, err) < 0)
            goto fail;
        /* whole watts, rounded up: a limit the plan found is met */
        out->deepest_w = ceil(pl.deepest_w - 1e-6);
        out->deepest_frac = c->baseline_w > 0 ? out->deepest_w / c->baseline_w : NAN;
        pflex_horizon_plan_fini(&pl);
        for (size_t t = 0; t < T; t++)
            out->limit_w[t] = out->deepest_w;
        for (size_t j = 0; j < n; j++)
            hz[j].lost_s = 0;
    }
    /* the oracle, once over the whole event on the truth; its LP
     * relaxation is the bound, its excess where the limit gives way */
    struct pflex_horizon_problem op = {.njobs = n, .nperiods = T, .jobs = hz, .dt_s = dt, .limit_w = out->limit_w,
                                       .other_w = c->other_w, .mip_gap = gap / 10, .time_limit_s = ot};
    struct pflex_horizon_plan opl;
    if (pflex_horizon_solve(&op, &opl, err) < 0)
        goto fail;
    out->bound_progress_s = out->site_progress_s - opl.bound;
    out->oracle_rows = opl.rows, out->oracle_cols = opl.cols, out->oracle_ints = opl.ints;
    out->oracle_optimal = opl.optimal;
    for (size_t t = 0; t < T; t++) {
        feasible[t] = opl.excess_w[t] <= 0;
        if (!feasible[t]) {
            out->periods_gave_way++;
            if (opl.excess_w[t] > out->gave_way_max_w)
                out->gave_way_max_w = opl.excess_w[t];
        }
    }
    unsigned want = c->policies ? c->policies : (1u << PFLEX_LV_NPOL) - 1;
    if (want & (1u << PFLEX_LV_ORACLE)) {
        memcpy(out->x[PFLEX_LV_ORACLE], opl.x, n * T * sizeof *opl.x);
        int *prev = calloc(n, sizeof *prev);
        if (!prev) {
            pflex_horizon_plan_fini(&opl);
            goto oom;
        }
        for (size_t t = 0; t < T; t++) {
            fill(n, c->jobs, out->x[PFLEX_LV_ORACLE], T, t, prev, dt[t], out->limit_w[t], c->other_w);
            for (size_t j = 0; j < n; j++)
                prev[j] = cls_of(&out->x[PFLEX_LV_ORACLE][j * T + t]);
        }
        free(prev);
        out->pol[PFLEX_LV_ORACLE].plans = 1;
        out->pol[PFLEX_LV_ORACLE].plan_s_max = out->pol[PFLEX_LV_ORACLE].plan_s_mean = opl.solve_s;
        score(c, out, PFLEX_LV_ORACLE, feasible);
    }
    pflex_horizon_plan_fini(&opl);
    if (want & (1u << PFLEX_LV_PLAN)) {
        if (run_plan(c, out, hz, dt, err) < 0)
            goto fail;
        score(c, out, PFLEX_LV_PLAN, feasible);
    }
    hz_jobs(c, out->event_s, hz);
    struct pflex_fieldpol_job *fj = calloc(n, sizeof *fj);
    if (!fj)
        goto oom;
    for (size_t j = 0; j < n; j++)
        fj[j] = (struct pflex_fieldpol_job){&hz[j], c->jobs[j].kind, c->jobs[j].node_gpus};
    for (int p = 0; p < PFLEX_FIELD_N; p++) {
        if (!(want & (1u << p)))
            continue;
        double t0 = cpu_s();
        if (pflex_fieldpol_plan((enum pflex_fieldpol)p, n, fj, T, dt, out->limit_w, c->other_w, out->x[p], err) < 0) {
            free(fj);
            goto fail;
        }
        out->pol[p].plans = 1;
        out->pol[p].plan_s_max = out->pol[p].plan_s_mean = cpu_s() - t0;
        score(c, out, p, feasible);
    }
    free(fj);
    double ref = out->pol[PFLEX_LV_PLAN].ran ? out->pol[PFLEX_LV_PLAN].progress_s : NAN;
    for (int p = 0; p < PFLEX_LV_NPOL; p++) {
        struct pflex_levers_summary *s = &out->pol[p];
        s->vs_plan_pct = 100 * (ref - s->progress_s) / out->site_progress_s;
        s->vs_bound_pct = 100 * (out->bound_progress_s - s->progress_s) / out->site_progress_s;
    }
    out->oracle_gap_pct = out->pol[PFLEX_LV_ORACLE].ran ? out->pol[PFLEX_LV_ORACLE].vs_bound_pct : NAN;
    rc = 0;
    goto done;
oom:
    pflex_error_sys(err, "out of memory");
fail:
    pflex_levers_result_fini(out, n);
done:
    free(hz);
    free(dt);
    free(feasible);
    return rc;
}
