/* steps.c — the period's decisions (period.h): the site's GPUs and jobs
 * from the nodes' statuses, the limit in force, learning, planning, the
 * caps to push.  No network here: what these steps read, ctl_read_site or
 * a caller in process put in the nodes' statuses; what they decide,
 * ctl_push_caps or that caller applies. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/ctl_int.h"
#include "lib/util/clock.h"

static int resume_obs(void *ud, double t, double cap_w, double power_w, double tput)
{
    (void)t;
    (void)pflex_learn_observe(ud, cap_w, power_w, tput, NULL);
    return 0;
}

/* The job called name, created (with its learner, and what the audit
 * holds of it) when first seen; NULL with err out of memory. */
static struct ctl_job *job_get(ctl_t *c, const char *name, double min_w, double max_w,
                               pflex_error_t *err)
{
    char key[sizeof c->jobs[0].name];
    size_t len = strnlen(name, sizeof key - 1);     /* as stored: names are kept to 63 bytes */
    memcpy(key, name, len);
    key[len] = 0;
    long found = pflex_strtab_find(&c->job_names, key, strlen(key));
    if (found >= 0)
        return &c->jobs[found];
    if (c->njobs == c->cap_jobs) {
        size_t n = c->cap_jobs ? 2 * c->cap_jobs : 16;
        struct ctl_job *nj = realloc(c->jobs, n * sizeof *nj);
        if (!nj)
            return pflex_error_set(err, "out of memory"), NULL;
        c->jobs = nj;
        c->cap_jobs = n;
    }
    struct ctl_job *j = &c->jobs[c->njobs];
    memset(j, 0, sizeof *j);
    snprintf(j->name, sizeof j->name, "%s", name);
    struct pflex_learn_config lc = {.min_cap_w = min_w, .max_cap_w = max_w};
    const struct pflex_job_policy *pol = pflex_job_policy_find(c->c.policies, name);
    j->pol = pol;
    if (pol && isfinite(pol->pfi))
        lc.prior_pfi = pol->pfi;       /* L = x/PFI until the job is learned */
    if (pflex_learn_create(&lc, &j->learn, err) < 0)
        return NULL;
    pflex_learn_curve_init(&j->curve);
    /* a job seen before a restart starts from what was learned */
    if (c->audit && pflex_audit_load_observations(c->audit, j->name, 5000, resume_obs, j->learn, err) < 0) {
        pflex_learn_destroy(j->learn);
        return NULL;
    }
    j->last_cap = NAN;
    j->tput_now = NAN;
    j->cap_since = NAN;
    j->t0_read = NAN;
    j->give_w = NAN;
    j->step_cap = NAN;
    j->free_draw_w = NAN;
    j->min_w = min_w;
    j->max_w = max_w;
    /* the names' indices are the jobs': both only grow, in this order */
    if (pflex_strtab_intern(&c->job_names, key, strlen(key), NULL) != (long)c->njobs) {
        pflex_learn_destroy(j->learn);
        pflex_learn_curve_fini(&j->curve);
        return pflex_error_set(err, "out of memory"), NULL;
    }
    c->njobs++;
    return j;
}

/* The job map file's jobs on st's host, in place of the agent's own; a
 * job's throughput stays what the source measured for that name. */
static void apply_job_map(ctl_t *c, struct agent_status *st)
{
    struct agent_job jobs[AGENT_MAX_JOBS];
    size_t n = 0;
    for (size_t r = 0; r < c->c.job_map_n; r++) {
        const struct pflex_jobmap_row *row = &c->c.job_map[r];
        if (strcmp(row->host, st->host) || row->gpu < 0)
            continue;
        size_t k = 0;
        while (k < n && strcmp(jobs[k].name, row->job))
            k++;
        if (k == n) {
            if (n == AGENT_MAX_JOBS || strlen(row->job) >= sizeof jobs[0].name)
                continue;
            memset(&jobs[n], 0, sizeof jobs[n]);
            snprintf(jobs[n].name, sizeof jobs[n].name, "%s", row->job);
            jobs[n].throughput = NAN;
            for (size_t m = 0; m < st->njobs; m++)
                if (!strcmp(st->job[m].name, row->job))
                    jobs[n].throughput = st->job[m].throughput;
            n++;
        }
        if (jobs[k].ngpus < AGENT_MAX_GPUS)
            jobs[k].gpus[jobs[k].ngpus++] = row->gpu;
    }
    memcpy(st->job, jobs, n * sizeof *jobs);
    st->njobs = n;
}

/* Room in the period's per-GPU arrays for ngpus GPUs, and every job's
 * gatherings of last period cleared. */
static int map_begin(ctl_t *c, size_t ngpus, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    if (pflex_grow((void **)&p->gpus, &p->cap_gpus, ngpus + 1, sizeof *p->gpus) < 0
        || pflex_grow((void **)&p->gpu_node, &p->cap_ga, ngpus + 1, sizeof *p->gpu_node) < 0
        || pflex_grow((void **)&p->gpu_slot, &p->cap_gs, ngpus + 1, sizeof *p->gpu_slot) < 0
        || pflex_grow((void **)&p->gpu_next, &p->cap_gn, ngpus + 1, sizeof *p->gpu_next) < 0)
        return pflex_error_set(err, "out of memory");
    for (size_t j = 0; j < c->njobs; j++) {
        c->jobs[j].seen_now = 0;
        c->jobs[j].tput_sum = 0;
        c->jobs[j].have_t = 0;
    }
    return 0;
}

/* Node a's GPUs onto the site's, from p.ngpus on. */
static void map_gpus(ctl_t *c, size_t a)
{
    struct ctl_period_state *p = &c->p;
    const struct ctl_agent *ag = &c->agents[a];
    for (size_t k = 0; k < ag->st.ngpus; k++) {
        const struct agent_gpu *ug = &ag->st.gpu[k];
        struct pflex_site_gpu *sg = &p->gpus[p->ngpus];
        double n = ug->count ? (double)ug->count : 1;
        *sg = (struct pflex_site_gpu){.job = -1, .reachable = ag->up && ug->ok,
                                      .telemetry_ok = ag->up && ag->tele && isfinite(ug->power_w),
                                      .min_cap_w = ug->min_w, .max_cap_w = ug->max_w,
                                      .cap_w = ug->limit_w, .count = ug->count};
        if (sg->telemetry_ok) {
            p->measured_w += n * ug->power_w;
            p->any_power = 1;
        }
        p->sum_max_w += n * ug->max_w;
        p->r.gpus += ug->count ? ug->count : 1;
        p->gpu_node[p->ngpus] = a;
        p->gpu_slot[p->ngpus] = k;
        p->ngpus++;
    }
}

/* Node a's jobs (a new one gets its learner), their rates summed, their
 * GPUs (the site's [first_g, p.ngpus)) marked as theirs. */
static int map_node_jobs(ctl_t *c, size_t a, size_t first_g, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    const struct ctl_agent *ag = &c->agents[a];
    for (size_t m = 0; m < ag->st.njobs; m++) {
        const struct agent_job *aj = &ag->st.job[m];
        const struct agent_gpu *first = NULL;
        for (size_t k = 0; k < ag->st.ngpus && !first; k++)
            if (aj->ngpus && ag->st.gpu[k].index == aj->gpus[0])
                first = &ag->st.gpu[k];
        if (!first)
            continue;
        struct ctl_job *cj = job_get(c, aj->name, first->min_w, first->max_w, err);
        if (!cj)
            return -1;
        cj->seen_now = 1;
        if (ag->up && ag->tele && isfinite(aj->throughput)) {
            cj->tput_sum += aj->throughput;
            cj->have_t = 1;
        }
        size_t ji = (size_t)(cj - c->jobs);
        for (int q = 0; q < aj->ngpus; q++)
            for (size_t k = first_g; k < p->ngpus; k++)
                if (ag->st.gpu[p->gpu_slot[k]].index == aj->gpus[q])
                    p->gpus[k].job = (int)ji;
    }
    return 0;
}

/* The GPUs the job map gives the host of a node's agent URL
 * ("http://HOST:PORT"): the node never reached is known by them. */
static unsigned job_map_gpus(const ctl_t *c, const char *url)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t len = *h == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/");
    unsigned char seen[4096 / 8] = {0};
    unsigned n = 0;
    for (size_t r = 0; r < c->c.job_map_n; r++) {
        const struct pflex_jobmap_row *row = &c->c.job_map[r];
        if (row->gpu < 0 || row->gpu >= 4096 || strlen(row->host) != len || strncmp(row->host, h, len)
            || seen[row->gpu / 8] & (1u << (row->gpu % 8)))
            continue;
        seen[row->gpu / 8] |= (unsigned char)(1u << (row->gpu % 8));
        n++;
    }
    return n;
}

/* The nodes never reached: each at its GPUs' largest limit when the job
 * map says how many GPUs it has (the largest any GPU of the site has), or
 * else at agent_max_w, a default the claims mark as assumed (status.c). */
static void map_never(ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    double gmax = 0;
    for (size_t k = 0; k < p->ngpus; k++)
        gmax = p->gpus[k].max_cap_w > gmax ? p->gpus[k].max_cap_w : gmax;
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &c->agents[a];
        ag->never_w = NAN;
        ag->never_assumed = 0;
        if (ag->seen)
            continue;
        unsigned n = c->c.job_map && ag->client ? job_map_gpus(c, agent_client_url(ag->client)) : 0;
        ag->never_assumed = !(n && gmax > 0);
        ag->never_w = ag->never_assumed ? c->c.agent_max_w : n * gmax;
        p->never_w += ag->never_w;
        p->never_n += (size_t)ag->never_assumed;
    }
}

int ctl_map_jobs(ctl_t *c, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    size_t ngpus = 0;
    for (size_t a = 0; a < c->c.nagents; a++) {
        struct ctl_agent *ag = &c->agents[a];
        if (ag->up && c->c.job_map)
            apply_job_map(c, &ag->st);
        if (!ag->up)
            p->r.agents_down++;
        if (ag->seen)
            ngpus += ag->st.ngpus;
    }
    if (map_begin(c, ngpus, err) < 0)
        return -1;
    for (size_t a = 0; a < c->c.nagents; a++) {
        if (!c->agents[a].seen)
            continue;
        size_t first_g = p->ngpus;     /* this node's GPUs are [first_g, p->ngpus) */
        map_gpus(c, a);
        if (map_node_jobs(c, a, first_g, err) < 0)
            return -1;
    }
    map_never(c);
    return 0;
}

/* The lowest limit over as long as the caps pushed now may have to hold:
 * until the next period has pushed its own, at least this period and the
 * next, longer when periods have run late or long (a slow agent, a busy
 * host: gap_s, the longest gap between periods, plus run_s, the longest
 * run of one), at most 10 periods; and at least for their leases: should
 * no period follow (the controller killed, cut off), every cap pushed
 * now, or held from an earlier push under a lease that still runs, stays
 * in force until then (leases.c), its lease taken within this period's
 * run: at most a period from now, or the longest run of one when longer.
 * A step down is met early rather than late. */
double ctl_horizon_s(double period_s, double lease_s, double gap_s, double run_s)
{
    double horizon = 2 * period_s;
    if (gap_s + run_s > horizon)
        horizon = gap_s + run_s;
    if (horizon > 10 * period_s)
        horizon = 10 * period_s;
    double lease_h = lease_s + (run_s > period_s ? run_s : period_s);
    return lease_h > horizon ? lease_h : horizon;
}

void ctl_take_targets(ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    /* a target is kept a day past its end: the ramp of the one that
     * follows starts from it (pflex/flex/target.h), and an interval of an
     * event follows the one before without a gap; the audit resumes the
     * same (ctl_resume), so that expiry needs no write of its own */
    double other = ctl_meter_other_w(c);    /* before tmu: it may note to the audit */
    pthread_mutex_lock(&c->tmu);
    pflex_target_set_expire(&c->targets, p->now - 86400);
    p->other_w = other + p->never_w;
    p->baseline_w = c->c.baseline_w > 0 ? c->c.baseline_w : p->sum_max_w;
    /* the limit over the horizon (ctl_horizon_s), the periods' gaps and
     * runs over the last 16 */
    double gmax = 0, rmax = 0;
    for (unsigned i = 0; i < 16 && i < c->hist_n; i++) {
        gmax = c->gap_hist[i] > gmax ? c->gap_hist[i] : gmax;
        rmax = c->run_hist[i] > rmax ? c->run_hist[i] : rmax;
    }
    double horizon = ctl_horizon_s(c->c.period_s, c->c.lease_s, gmax, rmax);
    p->horizon_s = horizon;
    double unl = p->sum_max_w + p->other_w;
    struct pflex_target_profile *tp = &c->tprof;
    p->limit_w = pflex_target_profile_min_w(tp, &c->targets, p->now, p->now + horizon, p->baseline_w, unl);
    p->coming_w = pflex_target_profile_min_w(tp, &c->targets, p->now, p->now + 86400, p->baseline_w, unl);
    p->explore_now = !(c->c.explore_lead_s > 0)
                     || pflex_target_profile_min_w(tp, &c->targets, p->now, p->now + c->c.explore_lead_s,
                                                   p->baseline_w, unl)
                            < unl;
    pthread_mutex_unlock(&c->tmu);
}

/* Each job's GPUs this period, chained from gpu_head by gpu_next in site
 * order (for the probes), with their common enforced cap (agg_ok while
 * all answered at one cap) and summed power. */
static void learn_gather(ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        cj->gpu_head = cj->gpu_tail = SIZE_MAX;
        cj->agg_n = 0;
        cj->agg_ok = cj->seen_now;
        cj->agg_cap = NAN;
        cj->agg_power = 0;
        cj->obs_new = 0;
    }
    for (size_t k = 0; k < p->ngpus; k++) {
        p->gpu_next[k] = SIZE_MAX;
        if (p->gpus[k].job < 0)
            continue;
        struct ctl_job *cj = &c->jobs[p->gpus[k].job];
        if (cj->gpu_tail == SIZE_MAX)
            cj->gpu_head = k;
        else
            p->gpu_next[cj->gpu_tail] = k;
        cj->gpu_tail = k;
        if (!cj->agg_ok)
            continue;
        const struct agent_gpu *ug = &c->agents[p->gpu_node[k]].st.gpu[p->gpu_slot[k]];
        if (!p->gpus[k].reachable || !p->gpus[k].telemetry_ok || !isfinite(ug->limit_w))
            cj->agg_ok = 0;
        else if (cj->agg_n == 0)
            cj->agg_cap = ug->limit_w;
        else if (fabs(ug->limit_w - cj->agg_cap) > 1)
            cj->agg_ok = 0;
        cj->agg_power += (ug->count ? ug->count : 1) * ug->power_w;
        cj->agg_n += ug->count ? ug->count : 1;
    }
}

/* The job's cap has stood --settle seconds: a rate averaged over the
 * agents' window was measured under it alone (learn_job says why a tenth
 * of a period less). */
static int cap_settled(const ctl_t *c, const struct ctl_job *cj)
{
    return isfinite(cj->cap_since) && c->p.now - cj->cap_since >= c->settle_s - 0.1 * c->c.period_s;
}

/* One job: its reading to its learner when settled, its curve refitted
 * (and the pessimistic loss beside it). */
static int learn_job(ctl_t *c, struct ctl_job *cj, pflex_error_t *err)
{
    double now = c->p.now;
    double cap = cj->agg_cap, power = cj->agg_power, tput = cj->tput_sum;
    int n = (int)cj->agg_n, ok = cj->agg_ok, have_t = cj->have_t;
    /* settled: the cap moved 5 W or less since the last reading, so the
     * readings of the period were taken under it */
    int settled = ok && n > 0 && have_t && isfinite(cj->last_cap) && fabs(cj->last_cap - cap) <= 5;
    /* the cap must also have been seen for --settle seconds, so that
     * a rate averaged over the agents' throughput window (and aged by
     * the telemetry's own delay) was measured under it alone.  Less a
     * tenth of a period: periods start on a schedule, but a busy host
     * starts one a little later than the one before (a period's sleep
     * overshoots by up to milliseconds, more on a loaded host), so that a
     * cap seen for exactly one period may show as 1.998 s of a 2 s period,
     * and the job would never settle while its cap is held a period */
    if (!(ok && n > 0))
        cj->cap_since = NAN;
    else if (!isfinite(cj->last_cap) || fabs(cj->last_cap - cap) > 5 || !isfinite(cj->cap_since))
        cj->cap_since = now;
    settled = settled && cap_settled(c, cj);
    cj->tput_now = ok && n > 0 && have_t ? tput : NAN;
    cj->last_cap = ok && n > 0 ? cap : NAN;
    if (settled) {
        pflex_error_t e2;
        if (pflex_learn_observe(cj->learn, cap, power / n, tput, &e2) < 0)
            ctl_log(c, "learn %s: %s", cj->name, e2.text);
        else {
            /* refitted when the reading can move the curve: while its
             * bin holds 16 readings or fewer, when that bin's count
             * doubles, and every 32 readings of the job whatever they
             * are.  A reading in a bin of hundreds (the baseline between
             * events, a cap held through one) moves its mean by a few
             * thousandths of its noise; fitting for it every period cost
             * half the CPU of a simulated site of 10,000 GPUs */
            unsigned nb = pflex_learn_bin_count(cj->learn, cap);
            if (nb <= 16 || !(nb & (nb - 1)) || ++cj->unfitted >= 8)
                cj->fitted = 0;
            /* for the audit (ctl_record) */
            cj->obs_new = 1;
            cj->obs_cap = cap;
            cj->obs_power = power / n;
            cj->obs_tput = tput;
        }
    }
    /* refitted only on a new observation (above): the same observations
     * fit the same curve */
    if (cj->fitted)
        return 0;
    cj->gen = 0;        /* named again below, once curve and hi are whole */
    if (pflex_learn_fit(cj->learn, &cj->curve, err) < 0)
        return -1;
    cj->fitted = 1;
    cj->unfitted = 0;
    if (pflex_grow((void **)&cj->hi, &cj->hi_cap, cj->curve.n, sizeof *cj->hi) < 0)
        return pflex_error_set(err, "out of memory");
    /* where the curve is the prior's guess alone, its pessimistic side is
     * no flatter than proportional loss's: a PFI prior is a ratio read at
     * a few cuts, mostly shallow ones, and a floor needs a bound (a job
     * first seen under a target has no baseline to learn from until it
     * runs uncapped, so it may be planned on its prior for long) */
    const struct pflex_learn_curve *cv = &cj->curve;
    for (size_t i = 0; i < cv->n; i++) {
        double m = cv->loss[i];
        if (cv->sd[i] >= cv->prior_sd * (1 - 1e-9) && cv->x[i] > m)
            m = cv->x[i];
        cj->hi[i] = m + c->c.z * cv->sd[i];
    }
    cj->gen = ++c->fits;
    return 0;
}

/* Give-back (docs/controller.md): a cap well above what a job's GPUs
 * draw does not bind, and the caps' sum is the guarantee, so under a
 * limit the watts between the two are the binding jobs' first.  The
 * margin is max(10 W, a tenth of the draw): the readings' noise is a
 * fraction of a watt, but an input-bound job's draw wanders by watts from
 * one period to the next (a step's data stall or a longer batch).  A job
 * is given back when its largest cap is over its draw and three margins,
 * its ceiling its draw and two margins; the ceiling follows a draw that
 * falls by more than a margin, and goes (the job planned on its curve
 * again) as soon as the draw comes within half a margin of it: a draw
 * that rises, rises to the cap within the period, and the next reading
 * shows it there.  Given back, lowered or kept only on a reading of
 * every GPU of the job under one cap held since --settle (the draw read
 * under the cap in force, not the one before); lost readings end it. */
static double give_margin_w(double draw_w)
{
    return draw_w > 100 ? 0.1 * draw_w : 10;
}

/* The most any GPU of job cj draws (its cap is the job's), from a reading
 * of all of them under one cap: 0, or -1 when there is none. */
static int give_draw(const ctl_t *c, const struct ctl_job *cj, double *draw_w)
{
    const struct ctl_period_state *p = &c->p;
    if (!cj->agg_ok || !cj->agg_n || !isfinite(cj->agg_cap))
        return -1;
    double draw = 0;
    for (size_t k = cj->gpu_head; k != SIZE_MAX; k = p->gpu_next[k]) {
        const struct agent_gpu *ug = &c->agents[p->gpu_node[k]].st.gpu[p->gpu_slot[k]];
        if (!isfinite(ug->power_w))
            return -1;
        draw = ug->power_w > draw ? ug->power_w : draw;
    }
    *draw_w = draw;
    return 0;
}

/* A job whose draw rose three margins over what it drew under a cap that
 * did not bind changed (a data stall over, a phase of another kind), and
 * what its learner read while it drew less (no loss at caps over that
 * draw) no longer holds: kept, it had the plan hold the job at a cap
 * under a loss the readings took minutes to outweigh (a simulated job
 * rising 10 minutes into a 10 % cut, given back to 100 W: 1,219
 * job-periods under its floor; docs/simulate.md).  So the learner's bins
 * whose mean draw was a margin or more under both their cap and the new
 * draw go; those where the cap bound, or the job drew as now, stay. */
static void draw_forget(struct ctl_job *cj, double draw_w)
{
    size_t n = pflex_learn_bins(cj->learn), kept = 0;
    struct pflex_learn_bin *b = malloc((n ? n : 1) * sizeof *b);
    pflex_error_t e;
    if (!b)
        return;     /* the readings stay: the plan is as safe, only slower to learn */
    n = pflex_learn_bins_get(cj->learn, b, n);
    double m = give_margin_w(draw_w);
    for (size_t i = 0; i < n; i++)
        if (!(b[i].power_w < b[i].cap_w - give_margin_w(b[i].power_w) && b[i].power_w < draw_w - m))
            b[kept++] = b[i];
    if (kept < n && pflex_learn_bins_set(cj->learn, b, kept, &e) == 0)
        cj->fitted = 0;
    free(b);
}

/* Before the period's reading is learned (ctl_learn): a job given back
 * whose draw comes within half a margin of its ceiling is planned on its
 * curve again this period; a draw risen past what the job drew under a
 * cap that did not bind forgets that (draw_forget); a reading under a
 * cap held since --settle that does not bind is the job's free draw. */
static void draw_watch(ctl_t *c, struct ctl_job *cj)
{
    double draw;
    if (give_draw(c, cj, &draw) < 0) {
        if (isfinite(cj->give_w))
            ctl_log(c, "give back %s: ended (no reading)", cj->name);
        cj->give_w = NAN;
        return;
    }
    double m = give_margin_w(draw);
    if (isfinite(cj->give_w) && draw > cj->give_w - m / 2) {
        ctl_log(c, "give back %s: ended (its draw %.0f W against %.0f W)", cj->name, draw, cj->give_w);
        cj->give_w = NAN;
    }
    if (isfinite(cj->free_draw_w) && draw > cj->free_draw_w + 3 * give_margin_w(cj->free_draw_w)) {
        ctl_log(c, "%s: its draw rose from %.0f to %.0f W; what it read drawing less goes", cj->name,
                cj->free_draw_w, draw);
        draw_forget(cj, draw);
        cj->free_draw_w = NAN;
    }
    int settled = isfinite(cj->last_cap) && fabs(cj->last_cap - cj->agg_cap) <= 5 && cap_settled(c, cj);
    if (settled && draw < cj->agg_cap - m)
        cj->free_draw_w = draw;
}

/* Set, follow down or end the job's ceiling (draw_watch ends it on a
 * rising draw). */
static void give_back(ctl_t *c, struct ctl_job *cj)
{
    const struct ctl_period_state *p = &c->p;
    double was = cj->give_w, draw;
    if (!isfinite(p->limit_w) || give_draw(c, cj, &draw) < 0) {
        cj->give_w = NAN;
        return;
    }
    double m = give_margin_w(draw);
    int settled = cap_settled(c, cj);
    /* the ceiling whole steps up, never under the GPUs' least limit */
    double e = ceil((draw + 2 * m) / c->cap_step_w - 1e-6) * c->cap_step_w;
    e = e > cj->min_w ? e : cj->min_w;
    if (settled && draw < cj->agg_cap - m && cj->max_w > draw + 3 * m && cj->max_w >= e + m
        && !(cj->give_w <= draw + 3 * m))
        cj->give_w = e;
    if (isfinite(cj->give_w) && !(isfinite(was) && was == cj->give_w))
        ctl_log(c, "give back %s: its GPUs draw %.0f W, caps over %.0f W do not bind", cj->name, draw,
                cj->give_w);
}

/* A job whose GPUs all answered, at one common cap held since last
 * period (and for --settle), gives one observation. */
int ctl_learn(ctl_t *c, pflex_error_t *err)
{
    learn_gather(c);
    for (size_t j = 0; j < c->njobs; j++) {
        draw_watch(c, &c->jobs[j]);
        if (learn_job(c, &c->jobs[j], err) < 0)
            return -1;
    }
    return 0;
}

/* Each job's baseline rate T0 for the plan's objective (in t0_plan).  A
 * job seen uncapped has its own; one first seen under a cap has the rate
 * it shows divided by what its curve says that cap keeps (1 - L); one
 * with no rate yet has the per-GPU mean of the others times its GPUs (1
 * per GPU when no job is known), so that a job without data is planned
 * as a typical one, neither spared nor cut first. */
static void job_baselines(ctl_t *c)
{
    const struct ctl_period_state *p = &c->p;
    double sum_t = 0, sum_n = 0;
    for (size_t j = 0; j < c->njobs; j++)
        c->jobs[j].n_now = 0;
    for (size_t k = 0; k < p->ngpus; k++)
        if (p->gpus[k].job >= 0 && p->gpus[k].reachable)
            c->jobs[p->gpus[k].job].n_now += p->gpus[k].count ? p->gpus[k].count : 1;
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        const struct pflex_learn_curve *cv = &cj->curve;
        cj->t0_plan = NAN;
        /* A rate read back to a baseline through the cap's loss only when
         * it was measured under that cap (settled as learn_job has it): the
         * agents' rate is a mean over their window, so the period after a
         * cut it is still the higher cap's rate, and divided by the lower
         * cap's keep it overstates the baseline up to 1 / keep times; the
         * plan then gives that job the watts back, and two jobs trade caps
         * every period without either settling.  Until then the last
         * settled reading stands; a job's first reading is taken as it
         * comes (the controller has not moved its cap yet). */
        int settled = cap_settled(c, cj);
        if (cv->has_baseline && cv->t0 > 0)
            cj->t0_plan = cv->t0;
        else if ((settled || !isfinite(cj->t0_read)) && isfinite(cj->tput_now) && cj->tput_now > 0
                 && isfinite(cj->last_cap) && cj->max_w > 0) {
            double x = 1 - cj->last_cap / (cv->p0_w > 0 ? cv->p0_w : cj->max_w);
            double keep = 1 - pflex_learn_loss(cv, x > 0 ? x : 0);
            cj->t0_read = cj->tput_now / (keep > 0.05 ? keep : 0.05);
            cj->t0_plan = cj->t0_read;
        } else if (isfinite(cj->t0_read))
            cj->t0_plan = cj->t0_read;
        if (isfinite(cj->t0_plan) && cj->n_now) {
            sum_t += cj->t0_plan;
            sum_n += cj->n_now;
        }
    }
    double per_gpu = sum_n > 0 ? sum_t / sum_n : 1;
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        if (!isfinite(cj->t0_plan))
            cj->t0_plan = per_gpu * (double)(cj->n_now ? cj->n_now : 1);
    }
}

/* The planner's view of every job: its baseline, weight, floor, curve. */
static int plan_jobs(ctl_t *c, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    if (pflex_grow((void **)&p->sjobs, &p->cap_sjobs, c->njobs + 1, sizeof *p->sjobs) < 0)
        return pflex_error_set(err, "out of memory");
    job_baselines(c);
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        const struct pflex_job_policy *pol = cj->pol;
        p->sjobs[j] = (struct pflex_site_job){.name = cj->name, .t0 = cj->t0_plan,
                                              .weight = pol ? pol->weight : 1,
                                              .floor = pol && isfinite(pol->floor) ? pol->floor : c->c.floor,
                                              .n = cj->curve.n, .cap_w = cj->curve.cap_w,
                                              .loss = cj->curve.loss, .loss_hi = cj->hi,
                                              .gen = cj->gen};
        give_back(c, cj);
        if (isfinite(cj->give_w))
            p->sjobs[j].ceil_w = cj->give_w;
    }
    return 0;
}

/* Between events, a probe fills in a job's curve until every point and
 * every gap between two within the caps the next event needs is known to
 * CTL_FILL_SD of one reading's noise (half: about four readings' worth
 * at each point, readings a few bins apart; the walk's own rule, twice
 * the noise, stops at one reading every 20 W or so, and an optimum that
 * sits where the job's curve bends between two of them goes unseen), each
 * probe held for CTL_FILL_READINGS settled readings. */
#define CTL_FILL_SD 0.5
#define CTL_FILL_READINGS 4

/* The caps of job cj the lowest limit of the next day needs, [*lo, *hi]
 * W: its equal cut there (every job the same share of its largest cap),
 * give or take twice the walk's step.  0 when no target is coming. */
static int fill_window(const ctl_t *c, const struct ctl_job *cj, double *lo, double *hi)
{
    const struct ctl_period_state *p = &c->p;
    if (!isfinite(p->coming_w) || !(p->sum_max_w > 0) || !(cj->max_w > 0))
        return 0;
    double y = 1 - (p->coming_w - p->other_w) / p->sum_max_w, w = 2 * c->c.explore_step;
    if (!(y > 0))
        return 0;
    *lo = cj->max_w * (1 - y - w);
    *hi = cj->max_w * (1 - y + w);
    return *hi > *lo;
}

/* Job j's cap in the plan the coming target would get on the curves as
 * they are (*cap_w): 0, or -1 when it has none.  Made for the first job
 * that asks, again CTL_COMING_EVERY periods later: a probe holds for
 * about that long, and a plan of the whole site each period doubled the
 * controller's CPU time between events (a site of 10,000 GPUs, some 280
 * jobs, docs/simulate.md). */
#define CTL_COMING_EVERY 8

/* What this period's site asks of a plan under limit_w (no GPU held). */
static struct pflex_safe_input plan_input(const ctl_t *c, double limit_w)
{
    const struct ctl_period_state *p = &c->p;
    return (struct pflex_safe_input){.ngpus = p->ngpus, .gpus = p->gpus, .njobs = c->njobs,
                                     .jobs = p->sjobs, .limit_w = limit_w, .other_w = p->other_w,
                                     .objective = c->c.progress ? PFLEX_OBJECTIVE_PROGRESS
                                                                : PFLEX_OBJECTIVE_THROUGHPUT,
                                     .guard_equal = !c->c.plain_optimum,
                                     .cap_step_w = c->cap_step_w,
                                     .probe_dx = c->c.explore_step};
}

static int coming_cap(ctl_t *c, size_t j, double *cap_w)
{
    struct ctl_period_state *p = &c->p;
    if (!c->coming_period || c->periods - c->coming_period >= CTL_COMING_EVERY
        || c->coming.ngpus != p->ngpus) {
        struct pflex_safe_input in = plan_input(c, p->coming_w);
        pflex_error_t err;
        c->coming_period = c->periods;
        if (pflex_safe_plan(&in, &c->coming, &err) < 0)
            c->coming.ngpus = 0;
    }
    size_t k = c->jobs[j].gpu_head;
    if (k == SIZE_MAX || k >= c->coming.ngpus || !isfinite(c->coming.cap_w[k]))
        return -1;
    *cap_w = c->coming.cap_w[k];
    return 0;
}

int ctl_probe_memo = 1;

/* The n numbers of a and b the same (NaN the same as NaN)? */
static int same_key(const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i]))))
            return 0;
    return 1;
}

/* The learning budget's ledger moved on to now: its slots older than a
 * day cleared; returns what the probes of the rolling day cost. */
static double learn_spent(ctl_t *c, double now)
{
    double slot = floor(now / CTL_LEARN_SLOT_S);
    if (slot > c->learn_slot) {
        double gap = slot - c->learn_slot;
        for (double k = 1; k <= gap && k <= CTL_LEARN_SLOTS; k++)
            c->learn_spent[(size_t)fmod(c->learn_slot + k, CTL_LEARN_SLOTS)] = 0;
        c->learn_slot = slot;
    }
    double sum = 0;
    for (size_t k = 0; k < CTL_LEARN_SLOTS; k++)
        sum += c->learn_spent[k];
    return sum;
}

/* Whether a probe of job j at cap for hold periods fits what is left of
 * the learning budget between events; if so it is charged.  Its cost is
 * what the job's pessimistic curve (loss + z sd) says it loses under the
 * probe beyond its plan, times its GPUs and the time held, so that the
 * budget holds where the curve is still a guess. */
static int learn_afford(ctl_t *c, size_t j, double planned, double cap, unsigned hold)
{
    const struct ctl_job *cj = &c->jobs[j];
    const struct pflex_learn_curve *cv = &cj->curve;
    double xp = 1 - cap / cv->p0_w, x0 = 1 - planned / cv->p0_w;
    double hi = pflex_learn_loss(cv, xp > 0 ? xp : 0) + c->c.z * pflex_learn_sd(cv, xp > 0 ? xp : 0);
    /* never under the job's floor, whatever the walk found */
    if (hi > 1 - c->p.sjobs[j].floor)
        return 0;
    double lost = hi - pflex_learn_loss(cv, x0 > 0 ? x0 : 0);
    double cost = (lost > 0 ? lost : 0) * (double)(cj->n_now ? cj->n_now : 1) * hold * c->c.period_s;
    size_t site = 0;
    for (size_t k = 0; k < c->njobs; k++)
        site += c->jobs[k].n_now;
    double share = c->c.learn_budget > 0 ? c->c.learn_budget : CTL_LEARN_BUDGET;
    double budget = share * (double)site * 86400;
    double spent = learn_spent(c, c->p.now);
    if (spent + cost > budget) {
        if (!c->learn_out)
            ctl_log(c, "learning budget spent: %.0f of %.0f GPU-s of progress over the last day; no "
                       "probes between events until it frees", spent, budget);
        c->learn_out = 1;
        return 0;
    }
    c->learn_out = 0;
    c->learn_spent[(size_t)fmod(c->learn_slot, CTL_LEARN_SLOTS)] += cost;
    return 1;
}

/* A new probe for job j when one is due and worth it: 1 (probe_cap and
 * probe_left set), else 0. */
static int probe_start(ctl_t *c, size_t j, double planned)
{
    struct ctl_job *cj = &c->jobs[j];
    double xp = NAN, cap = NAN, lo = NAN, hi = NAN;
    if (cj->probe_wait) {
        cj->probe_wait--;
        return 0;
    }
    if (!cj->curve.has_baseline)
        return 0;
    /* under a target, with the guard, no probes: a probe's watts go to no
     * one else, so it costs the job's throughput for the periods it holds,
     * while what it could teach wins at most the gap between the optimum
     * and equal cuts, which on measured curves is within the readings'
     * noise (docs/controller-period.md, "Probes") */
    if (isfinite(c->p.limit_w) && !c->c.plain_optimum)
        return 0;
    /* no target in force: no cap under a GPU's largest unless the
     * operator asked to learn between events (a controller installed
     * ahead of the first event must not slow training for nothing) */
    if (!isfinite(c->p.limit_w) && !c->c.learn_between)
        return 0;
    /* between events, with --explore-lead, only before a target that
     * cuts: a probe costs its job throughput now, and what it teaches
     * wins only under a limit (on a simulated day of 10,000 GPUs with one
     * 4-hour event the probes of a whole day cost twice what the event
     * gained; docs/simulate.md) */
    if (!isfinite(c->p.limit_w) && !c->p.explore_now)
        return 0;
    double x_now = 1 - planned / cj->curve.p0_w;
    if (x_now < 0)
        x_now = 0;
    /* between events: walk the curve down for the next one;
     * under a target: only near the plan, where the next
     * periods' plans will look (a probe's watts are not given
     * to the others, so deep probes there cost throughput) */
    int found, fill = 0;
    if (isfinite(c->p.limit_w))
        found = pflex_learn_probe_near(&cj->curve, c->p.sjobs[j].floor, c->c.z, x_now,
                                       c->c.explore_step, 2 * cj->curve.sigma, &xp, &cap);
    else {
        int win = fill_window(c, cj, &lo, &hi);
        double key[6] = {c->p.sjobs[j].floor, c->c.z, x_now, c->c.explore_step, win ? lo : NAN,
                         win ? hi : NAN};
        if (ctl_probe_memo && cj->gen && cj->probe_memo.gen == cj->gen && same_key(cj->probe_memo.key, key, 6)) {
            found = cj->probe_memo.found;
            fill = cj->probe_memo.fill;
            xp = cj->probe_memo.xp;
            cap = cj->probe_memo.cap;
        } else {
            found = pflex_learn_probe(&cj->curve, c->p.sjobs[j].floor, c->c.z, x_now,
                                      c->c.explore_step, 2 * cj->curve.sigma, &xp, &cap);
            /* the walk done: fill the curve in over the caps the next
             * event will be planned on */
            if (!found && win) {
                found = pflex_learn_probe_fill(&cj->curve, c->p.sjobs[j].floor, c->c.z, lo, hi,
                                               CTL_FILL_SD * cj->curve.sigma, &xp, &cap);
                fill = found;
            }
            cj->probe_memo.gen = cj->gen;
            memcpy(cj->probe_memo.key, key, sizeof key);
            cj->probe_memo.found = found;
            cj->probe_memo.fill = fill;
            cj->probe_memo.xp = found ? xp : NAN;
            cj->probe_memo.cap = found ? cap : NAN;
        }
    }
    /* the curve filled in: read the chords the coming target's plan
     * values its margins by, the watt above and the watt below each
     * job's cap in it, where a bend between two readings goes unseen
     * (none by a floor's edge: the edge probes read it) */
    if (!found && !isfinite(c->p.limit_w) && isfinite(c->p.coming_w)
        && coming_cap(c, j, &lo) == 0) {
        double key[3] = {c->p.sjobs[j].floor, c->c.z, lo};
        if (!(ctl_probe_memo && cj->gen && cj->probe_memo.span_gen == cj->gen && same_key(cj->probe_memo.span_key, key, 3))) {
            found = pflex_learn_probe_span(cj->learn, &cj->curve, c->p.sjobs[j].floor, c->c.z, lo,
                                           lo + 1, &xp, &cap);
            if (!found)
                found = pflex_learn_probe_span(cj->learn, &cj->curve, c->p.sjobs[j].floor, c->c.z,
                                               lo - 1, lo, &xp, &cap);
            fill = found;
            cj->probe_memo.span_gen = found ? 0 : cj->gen;
            memcpy(cj->probe_memo.span_key, key, sizeof key);
        }
    }
    /* a probe less than 5 W below the plan teaches little the
     * plan's own readings do not */
    if (!found || planned - floor(cap) < 5)
        return 0;
    unsigned hold = 1 + (unsigned)ceil(c->settle_s / c->c.period_s - 1e-6);
    /* a reading at the floor's edge is held for several settled readings:
     * how close the floor can be planned is how precisely it is known */
    if (found == 2)
        hold += PFLEX_LEARN_EDGE_READINGS - 1;
    /* a filling probe too: the settling period is the probe's cost
     * that teaches nothing */
    else if (fill)
        hold += CTL_FILL_READINGS - 1;
    cap = floor(cap / c->cap_step_w + 1e-6) * c->cap_step_w;
    if (!isfinite(c->p.limit_w) && !learn_afford(c, j, planned, cap, hold))
        return 0;
    cj->probe_cap = cap;
    ctl_log(c, "probe %s at %.0f W (x %.3f, plan %.0f W)", cj->name, cj->probe_cap, xp, planned);
    /* held until a reading under it has settled */
    cj->probe_left = hold;
    cj->probe_wait = 3;
    c->p.r.probes++;
    return 1;
}

/* A little exploration: only deeper, only where the floor allows.  A
 * probe holds until a reading under it has settled. */
static void plan_probes(ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        double planned = c->plan.job_cap_w[j];
        if (!isfinite(planned))
            continue;
        if (!cj->probe_left && !probe_start(c, j, planned))
            continue;
        cj->probe_left--;
        for (size_t k = cj->gpu_head; k != SIZE_MAX; k = p->gpu_next[k])
            if (p->gpus[k].reachable
                && c->plan.cap_w[k] > cj->probe_cap && cj->probe_cap >= p->gpus[k].min_cap_w) {
                c->plan.worst_w -= (p->gpus[k].count ? p->gpus[k].count : 1)
                                   * (c->plan.cap_w[k] - cj->probe_cap);
                c->plan.cap_w[k] = cj->probe_cap;
            }
    }
}

/* cap_w within GPU g's settable range. */
static double gpu_settable(const struct pflex_site_gpu *g, double cap_w)
{
    return cap_w < g->min_cap_w ? g->min_cap_w : cap_w > g->max_cap_w ? g->max_cap_w : cap_w;
}

/* Under a target, with the guard: a step probe (docs/controller-period.md,
 * "Probes").  The plan names the next blend of equal cuts and the
 * optimum on from its own when that keeps more on the mean curves
 * (pflex_safe_plan.probe_cap_w): the jobs the optimum cuts go down, those
 * it spares go up by the watts they give, the site as far under the limit
 * as the plan.  Held for CTL_FILL_READINGS settled readings, then three
 * periods of the plan; made while one of its jobs is known there to no
 * better than CTL_FILL_SD of a reading's noise (past that, the plan's own
 * guard is as sure of that blend as readings make it). */
static void plan_step_probe(ctl_t *c)
{
    struct ctl_period_state *p = &c->p;
    double step = c->cap_step_w;
    if (!c->step_left) {
        if (c->step_wait) {
            c->step_wait--;
            return;
        }
        if (!(c->plan.probe_blend > 0))
            return;
        int teach = 0;
        for (size_t j = 0; j < c->njobs; j++) {
            struct ctl_job *cj = &c->jobs[j];
            double pc = floor(c->plan.probe_cap_w[j] / step + 1e-6) * step, planned = c->plan.job_cap_w[j];
            cj->step_cap = NAN;
            if (!isfinite(pc) || !isfinite(planned) || fabs(pc - planned) < step || !cj->curve.has_baseline)
                continue;
            cj->step_cap = pc;
            double x = 1 - pc / cj->curve.p0_w;
            if (pflex_learn_sd(&cj->curve, x > 0 ? x : 0) > CTL_FILL_SD * cj->curve.sigma)
                teach = 1;
        }
        if (!teach)
            return;
        c->step_left = 1 + (unsigned)ceil(c->settle_s / c->c.period_s - 1e-6) + CTL_FILL_READINGS - 1;
        c->step_wait = 3;
        c->p.r.probes++;
        ctl_log(c, "step probe toward the optimum (blend %.3f, plan %.3f)", c->plan.probe_blend,
                c->plan.blend);
    }
    c->step_left--;
    /* the watts the step takes and gives, GPU by GPU; a GPU held (no
     * fresh telemetry) never rises: the probe ends */
    double worst = c->plan.worst_w;
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        if (!isfinite(cj->step_cap))
            continue;
        for (size_t k = cj->gpu_head; k != SIZE_MAX; k = p->gpu_next[k]) {
            const struct pflex_site_gpu *g = &p->gpus[k];
            if (!g->reachable)
                continue;
            double to = gpu_settable(g, cj->step_cap);
            if (to > c->plan.cap_w[k] && (!g->telemetry_ok || !p->any_power)) {
                c->step_left = 0;
                return;
            }
            worst += (g->count ? g->count : 1) * (to - c->plan.cap_w[k]);
        }
    }
    /* the limit may have moved since the probe began, or the plan spent
     * its rounding elsewhere: the probe fits under it or is not made */
    if (!(worst <= p->limit_w + 1e-6)) {
        c->step_left = 0;
        return;
    }
    for (size_t j = 0; j < c->njobs; j++) {
        struct ctl_job *cj = &c->jobs[j];
        if (!isfinite(cj->step_cap))
            continue;
        for (size_t k = cj->gpu_head; k != SIZE_MAX; k = p->gpu_next[k]) {
            const struct pflex_site_gpu *g = &p->gpus[k];
            if (g->reachable)
                c->plan.cap_w[k] = gpu_settable(g, cj->step_cap);
        }
    }
    c->plan.worst_w = worst;
}

/* The plan's caps: every reachable GPU of a node up, in site order, each
 * marked a cut when it falls under the GPU's limit now (which of them are
 * sent: ctl_leases_plan). */
static int plan_caps(ctl_t *c, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    if (pflex_grow((void **)&p->caps, &p->cap_caps, p->ngpus + 1, sizeof *p->caps) < 0)
        return pflex_error_set(err, "out of memory");
    p->ncaps = 0;
    for (size_t k = 0; k < p->ngpus; k++) {
        size_t a = p->gpu_node[k];
        if (!p->gpus[k].reachable || !c->agents[a].up)
            continue;
        const struct agent_gpu *ug = &c->agents[a].st.gpu[p->gpu_slot[k]];
        double cap = c->plan.cap_w[k];
        p->caps[p->ncaps++] = (struct ctl_cap){.node = a, .gpu = ug->index, .site = k, .cap_w = cap,
                                               .cut = !(cap >= ug->limit_w - c->cap_step_w / 2), .send = 1,
                                               .fallback_w = NAN, .fallback_until = NAN, .pushed = 0,
                                               .enforced_w = NAN};
    }
    return 0;
}

int ctl_plan(ctl_t *c, pflex_error_t *err)
{
    struct ctl_period_state *p = &c->p;
    if (plan_jobs(c, err) < 0)
        return -1;
    struct pflex_safe_input in = plan_input(c, p->limit_w);
    in.hold = p->ngpus > 0 && !p->any_power;
    if (pflex_safe_plan(&in, &c->plan, err) < 0)
        return -1;
    if (c->c.explore_step > 0)
        plan_probes(c);
    if (c->c.explore_step > 0 && isfinite(p->limit_w) && !c->c.plain_optimum)
        plan_step_probe(c);
    else
        c->step_left = 0;
    if (plan_caps(c, err) < 0)
        return -1;
    ctl_leases_plan(c);        /* the fallbacks, and which nodes are sent */
    return 0;
}
