/* test_controller_steps.c — the controller's period driven in process,
 * with no HTTP: a small simulated site (period.h's ctl_node_feed in, its
 * ctl_caps out) of three nodes of four GPUs, each running one job whose
 * throughput and power under a cap are known in closed form:
 *     power per GPU = min(cap, P0),  x = 1 - power / P0,
 *     throughput = T0 (1 - a x - b x^2),
 * readings with 0.5 % (power) and 1 % (throughput) seeded noise.  The
 * caps a period hands back are applied before the next period's readings,
 * as an agent would.  The target steps down twice: to 6 kW with a ramp of
 * three periods, then to 5.4 kW at once.  Checked: after the ramp the
 * power the site draws under the caps of a period is at or under every
 * limit until the next period (the step down is met early); every cap is
 * whole watts within its GPU's range and only reachable GPUs get one; every
 * floor is kept on the true curves; the learned curves come near the true
 * ones, nearer than the prior; a node that stops answering is counted at
 * its maximum and gets no caps; the steps run one by one decide exactly
 * what ctl_period does; the audit, when asked for, holds every period. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include "controller/controller.h"
#include "controller/period.h"
#include "pflex/io/audit.h"
#include "pflex/io/jobpolicy.h"
#include "pflex/flex/learn.h"
#include "pflex/flex/target.h"
#include "support/rand.h"

#define NNODES 3
#define NG 4
#define MIN_W 200.0
#define MAX_W 700.0
#define OTHER_W 300.0
#define P 5.0                   /* seconds per period, simulated */

struct sim_job {
    const char *name;
    double p0;                  /* per-GPU draw uncapped, W */
    double t0;                  /* rate uncapped */
    double a, b;                /* L(x) = a x + b x^2 */
    double floor;               /* the floor the test holds it to */
};

/* one job a node: elastic, proportional, and one that falls off late */
static const struct sim_job jobs[NNODES] = {
    {"elastic", 600, 1000, 0.25, 0.45, 0.75},
    {"proportional", 650, 800, 1.0, 0.0, 0.5},
    {"late", 550, 1200, 0.3, 0.5, 0.5},
};

struct site {
    double cap[NNODES][NG];     /* the caps the GPUs enforce */
    int down[NNODES];           /* a node that does not answer (not fed) */
};

static double true_loss(const struct sim_job *j, double x)
{
    return x <= 0 ? 0 : j->a * x + j->b * x * x;
}

static double gpu_power(const struct sim_job *j, double cap)
{
    return cap < j->p0 ? cap : j->p0;
}

/* The job's rate as a fraction of its baseline under the node's caps. */
static double true_frac(const struct site *s, int n)
{
    double pw = 0;
    for (int g = 0; g < NG; g++)
        pw += gpu_power(&jobs[n], s->cap[n][g]);
    return 1 - true_loss(&jobs[n], 1 - pw / NG / jobs[n].p0);
}

/* What the site draws under its caps, other power included. */
static double site_power(const struct site *s)
{
    double w = OTHER_W;
    for (int n = 0; n < NNODES; n++)
        for (int g = 0; g < NG; g++)
            w += gpu_power(&jobs[n], s->cap[n][g]);
    return w;
}

/* Each answering node's status, as its agent would say it, fed in. */
static void feed(ctl_t *c, const struct site *s)
{
    static struct agent_status st;
    pflex_error_t err;
    for (int n = 0; n < NNODES; n++) {
        if (s->down[n])
            continue;
        memset(&st, 0, sizeof st);
        snprintf(st.host, sizeof st.host, "node-%d", n);
        st.ngpus = NG;
        st.njobs = 1;
        snprintf(st.job[0].name, sizeof st.job[0].name, "%s", jobs[n].name);
        st.job[0].ngpus = NG;
        for (int g = 0; g < NG; g++) {
            st.gpu[g] = (struct agent_gpu){.index = g, .power_w = gpu_power(&jobs[n], s->cap[n][g])
                                                                  * (1 + rng_unif(-0.005, 0.005)),
                                           .limit_w = s->cap[n][g], .min_w = MIN_W, .max_w = MAX_W, .ok = 1};
            st.job[0].gpus[g] = g;
        }
        st.job[0].throughput = jobs[n].t0 * true_frac(s, n) * (1 + rng_unif(-0.01, 0.01));
        if (ctl_node_feed(c, (size_t)n, &st, 1, &err) < 0)
            fail_msg("%s", err.text);
    }
}

/* The step the caps are multiples of (the controller's cap_step_w). */
static double cap_step = 1;

/* The period's caps onto the GPUs, checked: whole steps within range, to
 * answering nodes only, a cut (under the GPU's cap by half a step or more)
 * marked as one. */
static void apply(ctl_t *c, struct site *s)
{
    size_t n;
    const struct ctl_cap *caps = ctl_caps(c, &n);
    for (size_t q = 0; q < n; q++) {
        const struct ctl_cap *cp = &caps[q];
        assert_true(cp->node < NNODES && cp->gpu >= 0 && cp->gpu < NG);
        assert_false(s->down[cp->node]);
        double steps = cp->cap_w / cap_step;
        if (!(cp->cap_w >= MIN_W && cp->cap_w <= MAX_W && fabs(steps - nearbyint(steps)) < 1e-9))
            fail_msg("node %zu GPU %d: cap %g W out of [%g, %g] or not whole steps of %g W", cp->node, cp->gpu,
                     cp->cap_w, MIN_W, MAX_W, cap_step);
        assert_int_equal(cp->cut, cp->cap_w < s->cap[cp->node][cp->gpu] - cap_step / 2);
        assert_true(cp->pushed);
        /* a cap not sent is the one the GPU holds already */
        if (!cp->send && cp->cap_w != s->cap[cp->node][cp->gpu])
            fail_msg("node %zu GPU %d: %g W planned but not sent, %g W held", cp->node, cp->gpu, cp->cap_w,
                     s->cap[cp->node][cp->gpu]);
        s->cap[cp->node][cp->gpu] = cp->cap_w;
    }
}

static ctl_t *site_controller_lease(const char *db, pflex_job_policies_t *pol, double lease_s)
{
    const char *csv = "job,floor\nelastic,0.75\n";
    assert_int_equal(pflex_job_policies_read_mem(csv, strlen(csv), "jobs.csv", pol, NULL), 0);
    struct ctl_config cfg = {.nagents = NNODES, .in_process = 1, .period_s = P, .other_w = OTHER_W,
                             .agent_max_w = NG * MAX_W, .explore_step = 0.05, .floor = 0.5,
                             .policies = pol, .db_path = db, .lease_s = lease_s, .cap_step_w = cap_step,
                             /* these tests learn between events, all they want */
                             .learn_between = 1, .learn_budget = 1};
    if (getenv("PFLEX_DEBUG"))
        cfg.log = stderr;
    ctl_t *c;
    pflex_error_t err;
    if (ctl_create(&cfg, &c, &err) < 0)
        fail_msg("%s", err.text);
    return c;
}

static ctl_t *site_controller(const char *db, pflex_job_policies_t *pol)
{
    return site_controller_lease(db, pol, 0);
}

static void add_target(ctl_t *c, double start, double end, double w, double ramp)
{
    struct pflex_target t = {.start_s = start, .end_s = end, .value = w, .unit = PFLEX_TARGET_WATTS,
                             .ramp_s = ramp};
    snprintf(t.source, sizeof t.source, "schedule");
    pflex_error_t err;
    assert_int_equal(pflex_target_set_add(ctl_targets(c), &t, &err), 0);
}

/* The schedule: nothing, then 6 kW from period 30 (ramp 3 periods), 5.4 kW
 * from period 60 at once, nothing from period 90 on. */
static void add_schedule(ctl_t *c)
{
    add_target(c, 30 * P, 90 * P, 6000, 3 * P);
    add_target(c, 60 * P, 90 * P, 5400, 0);
}

/* The limit after the ramp at time t (INFINITY: none, or still ramping). */
static double settled_limit(double t)
{
    return t >= 33 * P && t < 60 * P ? 6000 : t >= 60 * P && t < 90 * P ? 5400 : INFINITY;
}

static void site_init(struct site *s)
{
    memset(s, 0, sizeof *s);
    for (int n = 0; n < NNODES; n++)
        for (int g = 0; g < NG; g++)
            s->cap[n][g] = MAX_W;
}

static void one_period(ctl_t *c, struct site *s, int k, struct ctl_period_result *r)
{
    pflex_error_t err;
    feed(c, s);
    if (ctl_period(c, k * P, r, &err) < 0)
        fail_msg("period %d: %s", k, err.text);
    apply(c, s);
}

/* RMS of the learned loss against the truth, and the prior's (L = x), at
 * the learned points with observations. */
static void curve_error(const struct pflex_learn_curve *cv, const struct sim_job *j, double *rms,
                        double *rms_prior, int *n, double *deepest)
{
    double s2 = 0, p2 = 0;
    *n = 0;
    *deepest = 0;
    for (size_t i = 1; i < cv->n; i++) {
        if (!cv->count[i])
            continue;
        double e = cv->loss[i] - true_loss(j, cv->x[i]), ep = cv->x[i] - true_loss(j, cv->x[i]);
        s2 += e * e;
        p2 += ep * ep;
        (*n)++;
        *deepest = fmax(*deepest, cv->x[i]);
    }
    *rms = *n ? sqrt(s2 / *n) : INFINITY;
    *rms_prior = *n ? sqrt(p2 / *n) : 0;
}

static void test_site(void **state)
{
    (void)state;
    rng_seed(17);
    char db[64];
    snprintf(db, sizeof db, "/tmp/pflex-steps-XXXXXX");
    int fd = mkstemp(db);
    assert_true(fd >= 0);
    close(fd);
    pflex_job_policies_t pol;
    ctl_t *c = site_controller(db, &pol);
    add_schedule(c);
    struct site s;
    site_init(&s);
    double closest = INFINITY, lowest[NNODES] = {1, 1, 1};
    int checked = 0, probes = 0;
    for (int k = 0; k < 100; k++) {
        struct ctl_period_result r;
        one_period(c, &s, k, &r);
        probes += (int)r.probes;
        assert_int_equal(r.gpus, NNODES * NG);
        assert_int_equal(r.agents_down, 0);
        /* the caps of period k hold until period k + 1 pushes its own */
        double lim = fmin(settled_limit(k * P), settled_limit((k + 1) * P - 1e-9));
        if (isfinite(lim)) {
            double w = site_power(&s);
            assert_true(r.feasible);
            assert_true(r.worst_w <= lim + 1e-6);
            if (w > lim + 1e-6)
                fail_msg("period %d: the site draws %.1f W over its limit %.0f W", k, w, lim);
            closest = fmin(closest, lim - w);
            checked++;
        }
        for (int n = 0; n < NNODES; n++) {
            double f = true_frac(&s, n);
            lowest[n] = fmin(lowest[n], f);
            if (!(f >= jobs[n].floor - 1e-9))
                fail_msg("period %d: %s at %.3f of its rate, under its floor %.2f", k, jobs[n].name, f,
                         jobs[n].floor);
        }
        if (k == 59)
            /* met early: the step to 5.4 kW at period 60 within the horizon */
            assert_true(r.limit_w == 5400);
    }
    print_message("  %d periods under a limit, the site at least %.1f W under it; lowest rates %.3f %.3f "
                  "%.3f of baseline; %d probes\n", checked, closest, lowest[0], lowest[1], lowest[2], probes);
    assert_int_equal(checked, 90 - 33);
    /* the target went: every GPU back at its maximum */
    for (int n = 0; n < NNODES; n++)
        for (int g = 0; g < NG; g++)
            assert_true(s.cap[n][g] == MAX_W);
    /* the site was really cut: at 5.4 kW, under what it draws uncapped */
    for (int n = 0; n < NNODES; n++)
        assert_true(lowest[n] < 0.97);
    for (int n = 0; n < NNODES; n++) {
        const struct pflex_learn_curve *cv = ctl_job_curve(c, jobs[n].name);
        assert_non_null(cv);
        assert_true(cv->has_baseline);
        assert_true(fabs(cv->p0_w - jobs[n].p0) < 0.01 * jobs[n].p0);
        assert_true(fabs(cv->t0 - jobs[n].t0) < 0.02 * jobs[n].t0);
        double rms, rms_prior, deepest;
        int pts;
        curve_error(cv, &jobs[n], &rms, &rms_prior, &pts, &deepest);
        print_message("  %s: %d learned points down to x = %.2f, rms %.4f against the truth (the prior's "
                      "%.4f)\n", jobs[n].name, pts, deepest, rms, rms_prior);
        assert_true(pts >= 3);
        assert_true(deepest >= 0.15);
        assert_true(rms < 0.02);
        if (jobs[n].b > 0)
            assert_true(rms < 0.5 * rms_prior);
    }
    ctl_destroy(c);
    pflex_job_policies_fini(&pol);
    /* the audit holds every period, and the observations */
    pflex_audit_t *au;
    pflex_error_t err;
    assert_int_equal(pflex_audit_open(db, &au, &err), 0);
    struct pflex_audit_query q = {.to_s = INFINITY, .what = "periods", .limit = 1000};
    char *h = pflex_audit_history(au, &q, &err);
    assert_non_null(h);
    json_t *doc = json_loads(h, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(doc, "periods")), 100);
    json_decref(doc);
    free(h);
    q.what = "observations";
    h = pflex_audit_history(au, &q, &err);
    doc = json_loads(h, 0, NULL);
    assert_true(json_array_size(json_object_get(doc, "observations")) > 150);
    json_decref(doc);
    free(h);
    pflex_audit_close(au);
    const char *sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[96];
        snprintf(p, sizeof p, "%s%s", db, sfx[i]);
        unlink(p);
    }
}

/* Caps of a quarter watt (cap_step_w 0.25): every cap a whole number of
 * quarters, some not whole watts, a cap a quarter watt under a GPU's
 * marked a cut (pushed before the raises), the site under its limit and
 * every floor kept, period by period. */
static void test_cap_step(void **state)
{
    (void)state;
    rng_seed(5);
    pflex_job_policies_t pol;
    cap_step = 0.25;
    ctl_t *c = site_controller(NULL, &pol);
    add_schedule(c);
    struct site s;
    site_init(&s);
    int fractional = 0;
    for (int k = 0; k < 100; k++) {
        struct ctl_period_result r;
        one_period(c, &s, k, &r);
        double lim = fmin(settled_limit(k * P), settled_limit((k + 1) * P - 1e-9));
        if (isfinite(lim) && site_power(&s) > lim + 1e-6)
            fail_msg("period %d: the site draws %.2f W over its limit %.0f W", k, site_power(&s), lim);
        for (int n = 0; n < NNODES; n++) {
            if (!(true_frac(&s, n) >= jobs[n].floor - 1e-9))
                fail_msg("period %d: %s under its floor", k, jobs[n].name);
            for (int g = 0; g < NG; g++)
                fractional += s.cap[n][g] != floor(s.cap[n][g]);
        }
    }
    print_message("  %d GPU-periods at caps that are not whole watts\n", fractional);
    assert_true(fractional > 0);
    cap_step = 1;
    ctl_destroy(c);
    pflex_job_policies_fini(&pol);
}

/* A node that stops answering: counted at its maximum, no caps for it,
 * the site still under; back, it gets its caps again. */
static void test_node_down(void **state)
{
    (void)state;
    rng_seed(18);
    pflex_job_policies_t pol;
    ctl_t *c = site_controller(NULL, &pol);
    add_schedule(c);
    struct site s;
    site_init(&s);
    for (int k = 0; k < 80; k++) {
        struct ctl_period_result r;
        s.down[1] = k >= 70 && k < 74;
        one_period(c, &s, k, &r);
        const struct ctl_period_state *ps = ctl_period_state(c);
        size_t n;
        const struct ctl_cap *caps = ctl_caps(c, &n);
        if (s.down[1]) {
            assert_int_equal(r.agents_down, 1);
            assert_int_equal(n, (NNODES - 1) * NG);
            for (size_t q = 0; q < n; q++)
                assert_true(caps[q].node != 1);
            /* its GPUs at their maximum in the worst case */
            double caps_w = 0;
            for (size_t q = 0; q < n; q++)
                caps_w += caps[q].cap_w;
            assert_true(fabs(r.worst_w - (OTHER_W + NG * MAX_W + caps_w)) < 1e-6);
        } else {
            assert_int_equal(r.agents_down, 0);
            assert_int_equal(n, NNODES * NG);
        }
        assert_int_equal(ps->ngpus, NNODES * NG);
        if (k >= 33) {
            double lim = k < 59 ? 6000 : 5400;
            assert_true(r.feasible);
            assert_true(r.worst_w <= lim + 1e-6);
            assert_true(site_power(&s) <= lim + 1e-6);
        }
    }
    ctl_destroy(c);
    pflex_job_policies_fini(&pol);
}

/* The steps run one by one (period.h) decide what ctl_period decides. */
static void test_steps_are_the_period(void **state)
{
    (void)state;
    pflex_job_policies_t pol1, pol2;
    ctl_t *a = site_controller(NULL, &pol1), *b = site_controller(NULL, &pol2);
    add_schedule(a);
    add_schedule(b);
    struct site sa, sb;
    site_init(&sa);
    site_init(&sb);
    pflex_error_t err;
    for (int k = 0; k < 70; k++) {
        struct ctl_period_result ra, rb;
        rng_seed(100 + (uint64_t)k);
        one_period(a, &sa, k, &ra);
        rng_seed(100 + (uint64_t)k);
        feed(b, &sb);
        ctl_period_begin(b, k * P);
        ctl_poll_targets(b);
        assert_int_equal(ctl_read_site(b, &err), 0);
        assert_int_equal(ctl_map_jobs(b, &err), 0);
        ctl_take_targets(b);
        assert_int_equal(ctl_learn(b, &err), 0);
        assert_int_equal(ctl_plan(b, &err), 0);
        assert_int_equal(ctl_push_caps(b, &err), 0);
        assert_int_equal(ctl_record(b, &err), 0);
        ctl_period_end(b, &rb);
        ctl_report_vtn(b);
        apply(b, &sb);
        assert_true(ra.limit_w == rb.limit_w && ra.worst_w == rb.worst_w && ra.probes == rb.probes);
        assert_true(memcmp(sa.cap, sb.cap, sizeof sa.cap) == 0);
    }
    ctl_destroy(a);
    ctl_destroy(b);
    pflex_job_policies_fini(&pol1);
    pflex_job_policies_fini(&pol2);
}

/* Leases of 6 periods, renewed every other period (a third of a lease),
 * staggered by node; a node is sent its caps when they change, else only
 * by its turn.  Should the controller stop after any period, the site
 * holds: each node its caps until its lease ends, then its fallbacks until
 * the event's end, and the site's limits in force sum to at most the
 * limit at every moment of the plan's horizon, and of the event when
 * there are fallbacks; every fallback is within its GPU's range and not
 * above its cap. */
static void test_leases(void **state)
{
    (void)state;
    rng_seed(21);
    pflex_job_policies_t pol;
    const double L = 6 * P;
    ctl_t *c = site_controller_lease(NULL, &pol, L);
    add_schedule(c);
    struct site s;
    site_init(&s);
    double lease_end[NNODES] = {0}, fb[NNODES][NG], fb_until[NNODES];
    int last_sent[NNODES] = {0};
    size_t sent = 0, planned = 0;
    int with_fb = 0;
    for (int n = 0; n < NNODES; n++)
        fb_until[n] = NAN;
    for (int k = 0; k < 100; k++) {
        struct ctl_period_result r;
        one_period(c, &s, k, &r);
        const struct ctl_period_state *ps = ctl_period_state(c);
        size_t n;
        const struct ctl_cap *caps = ctl_caps(c, &n);
        assert_int_equal(n, NNODES * NG);
        int node_sent[NNODES] = {0};
        for (size_t q = 0; q < n; q++) {
            const struct ctl_cap *cp = &caps[q];
            node_sent[cp->node] = cp->send;
            if (isfinite(cp->fallback_w)) {
                assert_true(cp->fallback_w >= MIN_W && cp->fallback_w <= cp->cap_w
                            && cp->fallback_w == floor(cp->fallback_w));
                assert_true(cp->fallback_until == ps->fb_until && cp->fallback_until == 90 * P);
            } else
                assert_true(isnan(ps->fb_until));
            if (cp->send) {
                fb[cp->node][cp->gpu] = cp->fallback_w;
                fb_until[cp->node] = cp->fallback_until;
            }
        }
        assert_int_equal(r.pushed_nodes, ps->nsend);
        for (int m = 0; m < NNODES; m++) {
            if (node_sent[m]) {
                lease_end[m] = k * P + L;
                last_sent[m] = k;
                sent++;
            }
            /* renewed at least every third of its lease */
            assert_true(k - last_sent[m] <= 2);
            planned++;
        }
        if (isfinite(ps->fb_until)) {
            with_fb++;
            /* every lease lapsed: the fallbacks, other power, at most the
             * lowest limit until the event ends */
            assert_true(ps->fb_sum_w <= 5400 + 1e-6);
        }
        /* the controller stops now: what the GPUs hold, moment by moment */
        double t_end = isfinite(ps->fb_until) ? ps->fb_until : k * P + ps->horizon_s;
        for (double t = k * P; t < t_end; t += P / 4) {
            double lim = pflex_target_limit_w(ctl_targets(c), t, 0, NNODES * NG * MAX_W + OTHER_W), w = OTHER_W;
            for (int m = 0; m < NNODES; m++)
                for (int g = 0; g < NG; g++)
                    w += t < lease_end[m] ? s.cap[m][g] : t < fb_until[m] ? fb[m][g] : MAX_W;
            if (w > lim + 1e-6)
                fail_msg("stopped after period %d: at %.1f s the site holds %.0f W, over %.0f W", k, t, w, lim);
        }
    }
    print_message("  %zu of %zu node-periods sent caps; %d periods with fallbacks\n", sent, planned, with_fb);
    assert_true(sent < planned * 3 / 4);
    assert_true(with_fb > 50);
    ctl_destroy(c);
    pflex_job_policies_fini(&pol);
}

/* A node's GPUs of one job under one limit, reported as one entry that
 * stands for them (agent_gpu.count, power their mean), plan as the GPUs
 * one by one do: the same caps and worst case, period after period, as
 * the site learns, probes and meets both steps. */
static void test_count_entries(void **state)
{
    (void)state;
    pflex_job_policies_t pol1, pol2;
    ctl_t *a = site_controller(NULL, &pol1), *b = site_controller(NULL, &pol2);
    add_schedule(a);
    add_schedule(b);
    struct site s;
    site_init(&s);
    static struct agent_status st;
    pflex_error_t err;
    size_t probes = 0;
    for (int k = 0; k < 100; k++) {
        rng_seed(300 + (uint64_t)k);
        feed(a, &s);
        /* b: the same readings, each node's GPUs as one entry */
        rng_seed(300 + (uint64_t)k);
        for (int n = 0; n < NNODES; n++) {
            memset(&st, 0, sizeof st);
            snprintf(st.host, sizeof st.host, "node-%d", n);
            double pw = 0;
            for (int g = 0; g < NG; g++)
                pw += gpu_power(&jobs[n], s.cap[n][g]) * (1 + rng_unif(-0.005, 0.005));
            st.ngpus = 1;
            st.gpu[0] = (struct agent_gpu){.index = 0, .power_w = pw / NG, .limit_w = s.cap[n][0],
                                           .min_w = MIN_W, .max_w = MAX_W, .ok = 1, .count = NG};
            st.njobs = 1;
            snprintf(st.job[0].name, sizeof st.job[0].name, "%s", jobs[n].name);
            st.job[0].ngpus = 1;
            st.job[0].gpus[0] = 0;
            st.job[0].throughput = jobs[n].t0 * true_frac(&s, n) * (1 + rng_unif(-0.01, 0.01));
            assert_int_equal(ctl_node_feed(b, (size_t)n, &st, 1, &err), 0);
        }
        struct ctl_period_result ra, rb;
        assert_int_equal(ctl_period(a, k * P, &ra, &err), 0);
        assert_int_equal(ctl_period(b, k * P, &rb, &err), 0);
        size_t na, nb;
        const struct ctl_cap *ca = ctl_caps(a, &na), *cb = ctl_caps(b, &nb);
        assert_int_equal(na, NNODES * NG);
        assert_int_equal(nb, NNODES);
        for (size_t q = 0; q < na; q++)
            if (fabs(ca[q].cap_w - cb[ca[q].node].cap_w) > 1e-9)
                fail_msg("period %d: node %zu GPU %d: %g W one by one, %g W as one entry", k, ca[q].node,
                         ca[q].gpu, ca[q].cap_w, cb[ca[q].node].cap_w);
        assert_true(fabs(ra.worst_w - rb.worst_w) < 1e-6);
        assert_true(ra.limit_w == rb.limit_w && ra.probes == rb.probes && rb.gpus == NNODES * NG);
        probes += ra.probes;
        apply(a, &s);
    }
    /* it did learn and probe: the entries were not merely held */
    assert_true(probes > 0);
    ctl_destroy(a);
    ctl_destroy(b);
    pflex_job_policies_fini(&pol1);
    pflex_job_policies_fini(&pol2);
}

/* A prior PFI is no bound for a floor: the proportional job's policy
 * gives it PFI 3 (L = x/3, far flatter than its truth, L = x), the
 * others none; first seen under a cap and under a target from the start
 * (no baseline, so nothing learned), the plan cuts it first, yet keeps it
 * at its floor on the truth: where the curve is the prior's guess alone,
 * its pessimistic side is proportional loss's.  (On the PFI prior's own
 * margin, x/3 + 0.2, it would go to its minimum, 0.31 of its rate.) */
static void test_prior_pfi_keeps_floors(void **state)
{
    (void)state;
    rng_seed(19);
    const char *csv = "job,floor,pfi\nelastic,0.5,\nproportional,0.5,3\nlate,0.5,\n";
    pflex_job_policies_t pol;
    assert_int_equal(pflex_job_policies_read_mem(csv, strlen(csv), "jobs.csv", &pol, NULL), 0);
    struct ctl_config cfg = {.nagents = NNODES, .in_process = 1, .period_s = P, .other_w = OTHER_W,
                             .agent_max_w = NG * MAX_W, .explore_step = 0.05, .policies = &pol};
    ctl_t *c;
    pflex_error_t err;
    assert_int_equal(ctl_create(&cfg, &c, &err), 0);
    add_target(c, 0, 40 * P, 6700, 0);
    struct site s;
    site_init(&s);
    for (int n = 0; n < NNODES; n++)
        for (int g = 0; g < NG; g++)
            s.cap[n][g] = 450;
    double lowest = 1;
    for (int k = 0; k < 30; k++) {
        struct ctl_period_result r;
        one_period(c, &s, k, &r);
        assert_true(r.feasible && r.worst_w <= 6700 + 1e-6 && r.floor_breaches == 0);
        for (int n = 0; n < NNODES; n++) {
            double f = true_frac(&s, n);
            lowest = fmin(lowest, f);
            if (!(f >= 0.5 - 1e-9))
                fail_msg("period %d: %s at %.3f of its rate, under its floor 0.5", k, jobs[n].name, f);
        }
    }
    print_message("  lowest rate %.3f of baseline under 6.7 kW on a prior of PFI 3\n", lowest);
    assert_true(lowest < 0.9);      /* the target did cut */
    ctl_destroy(c);
    pflex_job_policies_fini(&pol);
}

/* A controller with the site's job policies, period_s, and learning
 * between events as asked (budget: its share of a day's progress). */
static ctl_t *learning_controller(pflex_job_policies_t *pol, double period_s, int learn, double budget)
{
    const char *csv = "job,floor\nelastic,0.75\n";
    assert_int_equal(pflex_job_policies_read_mem(csv, strlen(csv), "jobs.csv", pol, NULL), 0);
    struct ctl_config cfg = {.nagents = NNODES, .in_process = 1, .period_s = period_s, .other_w = OTHER_W,
                             .agent_max_w = NG * MAX_W, .explore_step = 0.05, .floor = 0.5,
                             .policies = pol, .learn_between = learn, .learn_budget = budget};
    if (getenv("PFLEX_DEBUG"))
        cfg.log = stderr;
    ctl_t *c;
    pflex_error_t err;
    if (ctl_create(&cfg, &c, &err) < 0)
        fail_msg("%s", err.text);
    return c;
}

/* Do no harm by default: with no target in force and learning between
 * events not asked for, 120 periods leave every GPU at its largest limit
 * and start no probe; asked for, the same site is probed (so the check
 * can fail). */
static void test_no_cut_between_events(void **state)
{
    (void)state;
    for (int learn = 0; learn < 2; learn++) {
        rng_seed(23);
        pflex_job_policies_t pol;
        ctl_t *c = learning_controller(&pol, P, learn, 0);
        struct site s;
        site_init(&s);
        size_t probes = 0;
        double least = MAX_W;
        for (int k = 0; k < 120; k++) {
            struct ctl_period_result r;
            one_period(c, &s, k, &r);
            assert_true(isinf(r.limit_w));
            probes += r.probes;
            for (int n = 0; n < NNODES; n++)
                for (int g = 0; g < NG; g++)
                    least = fmin(least, s.cap[n][g]);
        }
        print_message("  learning between events %s: %zu probes, least cap %.0f W\n", learn ? "on" : "off",
                      probes, least);
        if (learn)
            assert_true(probes > 0 && least < MAX_W);
        else
            assert_true(probes == 0 && least == MAX_W);
        ctl_destroy(c);
        pflex_job_policies_fini(&pol);
    }
}

/* The learning budget: over two simulated days with no target (periods
 * of a minute), what the probes cost on the true curves over any day
 * stays within the budget's share of the site's progress (the budget
 * prices each probe on the pessimistic curve, so the truth costs less),
 * no job goes under its floor, and a smaller budget buys fewer probes. */
static void test_learn_budget(void **state)
{
    (void)state;
    const double period = 60, budgets[2] = {0.0005, 0.05};
    const int per_day = (int)(86400 / period), n = 2 * per_day;
    size_t probes[2] = {0, 0};
    double *lost = calloc((size_t)n + 1, sizeof *lost);     /* prefix sums, GPU-s */
    assert_non_null(lost);
    for (int b = 0; b < 2; b++) {
        rng_seed(29);
        pflex_job_policies_t pol;
        ctl_t *c = learning_controller(&pol, period, 1, budgets[b]);
        struct site s;
        site_init(&s);
        pflex_error_t err;
        for (int k = 0; k < n; k++) {
            struct ctl_period_result r;
            feed(c, &s);
            if (ctl_period(c, 1.7e9 + k * period, &r, &err) < 0)
                fail_msg("period %d: %s", k, err.text);
            apply(c, &s);
            probes[b] += r.probes;
            double l = 0;
            for (int j = 0; j < NNODES; j++) {
                double f = true_frac(&s, j);
                if (!(f >= jobs[j].floor - 1e-9))
                    fail_msg("period %d: %s at %.3f, under its floor", k, jobs[j].name, f);
                l += NG * (1 - f) * period;
            }
            lost[k + 1] = lost[k] + l;
        }
        double budget = budgets[b] * NNODES * NG * 86400, worst = 0;
        for (int k = per_day; k <= n; k++)
            worst = fmax(worst, lost[k] - lost[k - per_day]);
        print_message("  budget %.2f %%: %zu probes, at most %.0f of %.0f GPU-s of progress lost in a day\n",
                      100 * budgets[b], probes[b], worst, budget);
        assert_true(worst <= budget);
        assert_true(probes[b] > 0);
        ctl_destroy(c);
        pflex_job_policies_fini(&pol);
    }
    assert_true(probes[0] < probes[1]);
    free(lost);
}

/* What an in-process controller refuses, and a daemon's. */
static void test_refusals(void **state)
{
    (void)state;
    pflex_error_t err;
    ctl_t *c;
    struct ctl_config bad = {.nagents = 2, .in_process = 1, .prometheus_url = "http://127.0.0.1:9"};
    assert_int_equal(ctl_create(&bad, &c, &err), -1);
    assert_non_null(strstr(err.text, "Prometheus"));
    struct ctl_config none = {.nagents = 0, .in_process = 1};
    assert_int_equal(ctl_create(&none, &c, &err), -1);
    struct ctl_config ok = {.nagents = 2, .in_process = 1};
    assert_int_equal(ctl_create(&ok, &c, &err), 0);
    struct agent_status st = {.ngpus = 1, .gpu = {{.index = 0, .power_w = 100, .limit_w = 700, .min_w = 200,
                                                   .max_w = 700, .ok = 1}}};
    assert_int_equal(ctl_node_feed(c, 2, &st, 1, &err), -1);
    st.njobs = 1;
    st.job[0].ngpus = -1;
    assert_int_equal(ctl_node_feed(c, 0, &st, 1, &err), -1);
    st.job[0].ngpus = 1;
    assert_int_equal(ctl_node_feed(c, 0, &st, 1, &err), 0);
    /* node 1 never fed: never reached, counted at agent_max_w (8 kW) */
    struct ctl_period_result r;
    assert_int_equal(ctl_period(c, 0, &r, &err), 0);
    assert_int_equal(r.agents_down, 1);
    assert_int_equal(r.gpus, 1);
    assert_true(fabs(ctl_period_state(c)->never_w - 8000) < 1e-9);
    ctl_destroy(c);
    const char *url = "http://127.0.0.1:9";
    struct ctl_config daemon = {.nagents = 1, .agent_urls = &url};
    assert_int_equal(ctl_create(&daemon, &c, &err), 0);
    assert_int_equal(ctl_node_feed(c, 0, &st, 1, &err), -1);
    ctl_destroy(c);
    struct ctl_config no_urls = {.nagents = 1};
    assert_int_equal(ctl_create(&no_urls, &c, &err), -1);
}

/* Give-back: two nodes, a job whose draw follows its cap up to 600 W a
 * GPU ("bound") and one whose GPUs draw 60 W whatever the cap ("input")
 * until period RISE, then as the other.  Under a limit the input job's
 * caps go to its draw and margins (here its GPUs' least, 200 W) before
 * the bound job's are cut, and stay there through the readings' noise;
 * the period its draw is read at that cap, they rise, and stay up; no
 * cap under a GPU's largest before the target; the caps' sum always under
 * the limit, and the fallbacks never above the caps: should the
 * controller stop after any period, the caps held (leases, then
 * fallbacks) stay under the limit however the draw rises.  Without
 * give-back the bound job pays for the input job's watts (its caps under
 * 550 W). */
#define GB_RISE 60
static double gb_power(int n, double cap, int k)
{
    return n == 1 && k < GB_RISE ? (cap < 60 ? cap : 60) : cap < 600 ? cap : 600;
}

static void test_give_back(void **state)
{
    (void)state;
    rng_seed(77);
    const char *csv = "job,floor\nbound,0.5\ninput,0.5\n";
    pflex_job_policies_t pol;
    assert_int_equal(pflex_job_policies_read_mem(csv, strlen(csv), "jobs.csv", &pol, NULL), 0);
    struct ctl_config cfg = {.nagents = 2, .in_process = 1, .period_s = P, .other_w = OTHER_W,
                             .agent_max_w = NG * MAX_W, .explore_step = 0, .floor = 0.5,
                             .policies = &pol, .cap_step_w = 1, .lease_s = 6 * P};    /* no probes */
    if (getenv("PFLEX_DEBUG"))
        cfg.log = stderr;
    ctl_t *c;
    pflex_error_t err;
    if (ctl_create(&cfg, &c, &err) < 0)
        fail_msg("%s", err.text);
    const double limit = 3300;     /* the input job at 200 W: 550 W a GPU for the bound job */
    add_target(c, 30 * P, 100 * P, limit, 0);
    double cap[2][NG];
    for (int n = 0; n < 2; n++)
        for (int g = 0; g < NG; g++)
            cap[n][g] = MAX_W;
    static const char *const names[2] = {"bound", "input"};
    static struct agent_status st;
    int held = 0;
    double lease_end[2] = {0, 0}, fb[2][NG], fb_until[2] = {NAN, NAN};
    for (int k = 0; k < 100; k++) {
        for (int n = 0; n < 2; n++) {
            memset(&st, 0, sizeof st);
            snprintf(st.host, sizeof st.host, "node-%d", n);
            st.ngpus = NG;
            st.njobs = 1;
            snprintf(st.job[0].name, sizeof st.job[0].name, "%s", names[n]);
            st.job[0].ngpus = NG;
            double pw = 0;
            for (int g = 0; g < NG; g++) {
                double p = gb_power(n, cap[n][g], k);
                pw += p;
                st.gpu[g] = (struct agent_gpu){.index = g, .power_w = p * (1 + rng_unif(-0.005, 0.005)),
                                               .limit_w = cap[n][g], .min_w = MIN_W, .max_w = MAX_W, .ok = 1};
                st.job[0].gpus[g] = g;
            }
            double frac = n == 1 && k < GB_RISE ? 1 : pw / NG / 600;
            st.job[0].throughput = 1000 * frac * (1 + rng_unif(-0.01, 0.01));
            assert_int_equal(ctl_node_feed(c, (size_t)n, &st, 1, &err), 0);
        }
        struct ctl_period_result r;
        if (ctl_period(c, k * P, &r, &err) < 0)
            fail_msg("period %d: %s", k, err.text);
        const struct ctl_period_state *ps = ctl_period_state(c);
        size_t nc;
        const struct ctl_cap *caps = ctl_caps(c, &nc);
        assert_int_equal(nc, 2 * NG);
        double sum = OTHER_W, prev_input = cap[1][0];
        for (size_t q = 0; q < nc; q++) {
            sum += caps[q].cap_w;
            if (isfinite(caps[q].fallback_w))
                assert_true(caps[q].fallback_w <= caps[q].cap_w);
            cap[caps[q].node][caps[q].gpu] = caps[q].cap_w;
            if (caps[q].send) {
                lease_end[caps[q].node] = k * P + 6 * P;
                fb[caps[q].node][caps[q].gpu] = caps[q].fallback_w;
                fb_until[caps[q].node] = caps[q].fallback_until;
            }
        }
        /* the controller stops now: the caps the GPUs hold, lease then
         * fallback, under the limit moment by moment (the input job's
         * draw may rise to its cap meanwhile: the guarantee is on caps) */
        double t_end = isfinite(ps->fb_until) ? ps->fb_until : k * P + ps->horizon_s;
        for (double t = k * P; t < t_end; t += P / 4) {
            double lim = pflex_target_limit_w(ctl_targets(c), t, 0, 2 * NG * MAX_W + OTHER_W), w = OTHER_W;
            for (int m = 0; m < 2; m++)
                for (int g = 0; g < NG; g++)
                    w += t < lease_end[m] ? cap[m][g] : t < fb_until[m] ? fb[m][g] : MAX_W;
            if (w > lim + 1e-6)
                fail_msg("stopped after period %d: at %.1f s the caps hold %.0f W, over %.0f W", k, t, w, lim);
        }
        if (isfinite(ps->limit_w) && sum > ps->limit_w + 1e-6)
            fail_msg("period %d: caps %.0f W over the limit %.0f W", k, sum, ps->limit_w);
        if (!isfinite(ps->limit_w))
            for (int n = 0; n < 2; n++)
                for (int g = 0; g < NG; g++)
                    if (cap[n][g] != MAX_W)
                        fail_msg("period %d: node %d GPU %d at %g W with no limit", k, n, g, cap[n][g]);
        if (k >= 35 && k < GB_RISE) {
            /* the input job given back to its least cap, the bound job
             * paying nothing for it, held through the readings' noise */
            if (cap[1][0] != MIN_W || cap[0][0] < 550)
                fail_msg("period %d: input job at %g W, bound job at %g W (want %g, >= 550)", k, cap[1][0],
                         cap[0][0], MIN_W);
            held += cap[1][0] == prev_input;
        }
        /* risen, never back at its least cap */
        if (k >= GB_RISE && !(cap[1][0] > MIN_W + 50))
            fail_msg("period %d: the input job's draw rose to its cap, its cap %g W", k, cap[1][0]);
    }
    assert_int_equal(held, GB_RISE - 35);
    ctl_destroy(c);
    pflex_job_policies_fini(&pol);
}

/* The API's claims (status.c) follow what the nodes confirmed: a node
 * never reached is an assumed default (infeasible under a target, not
 * ready), every GPU confirmed makes the worst case the plan's, a node that
 * stops answering counts at its GPUs' maximum, and caps whose least sum is
 * over the limit are infeasible in the status and the metrics. */
static double jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void test_claims(void **state)
{
    (void)state;
    struct ctl_config cfg = {.nagents = 2, .in_process = 1, .period_s = P, .agent_max_w = 1400, .other_w = 100};
    ctl_t *c;
    pflex_error_t err;
    assert_int_equal(ctl_create(&cfg, &c, &err), 0);
    add_target(c, 0, 1e9, 2100, 0);
    struct agent_status st = {.ngpus = 2, .njobs = 1};
    for (int k = 0; k < 2; k++)
        st.gpu[k] = (struct agent_gpu){.index = k, .power_w = 650, .limit_w = 700, .min_w = 200, .max_w = 700,
                                       .ok = 1};
    snprintf(st.job[0].name, sizeof st.job[0].name, "j");
    st.job[0].ngpus = 2;
    st.job[0].gpus[0] = 0;
    st.job[0].gpus[1] = 1;
    st.job[0].throughput = 100;
    char why[400];
    struct ctl_period_result r;
    assert_int_equal(ctl_period_confirmed(c), 0);
    /* node 1 never reached: 1400 W assumed, its GPUs unknown */
    assert_int_equal(ctl_node_feed(c, 0, &st, 1, &err), 0);
    assert_int_equal(ctl_period(c, 0, &r, &err), 0);
    json_t *o = ctl_status_json(c, 0);
    assert_true(r.feasible && json_is_true(json_object_get(o, "planned_feasible")));
    assert_true(json_is_false(json_object_get(o, "feasible")));
    assert_int_equal((int)jnum(o, "assumed_nodes"), 1);
    assert_true(jnum(o, "assumed_w") == 1400);
    assert_true(jnum(o, "worst_w") == jnum(o, "planned_worst_w"));
    json_t *n1 = json_array_get(json_object_get(o, "nodes"), 1);
    assert_true(jnum(n1, "unreached_w") == 1400 && json_is_true(json_object_get(n1, "assumed")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "nodes"), 0), "push")),
                        "ok");
    json_decref(o);
    assert_int_equal(ctl_health(c, 0, why, sizeof why), 0);     /* its caps were all taken */
    assert_int_equal(ctl_period_confirmed(c), 1);
    assert_int_equal(ctl_health(c, 1, why, sizeof why), -1);
    assert_non_null(strstr(why, "never reached"));
    /* both reached: every GPU confirmed, the plan's worst case is the fact */
    assert_int_equal(ctl_node_feed(c, 0, &st, 1, &err), 0);
    assert_int_equal(ctl_node_feed(c, 1, &st, 1, &err), 0);
    assert_int_equal(ctl_period(c, P, &r, &err), 0);
    o = ctl_status_json(c, P);
    assert_true(json_is_true(json_object_get(o, "feasible")));
    assert_int_equal((int)jnum(o, "assumed_nodes"), 0);
    assert_int_equal((int)jnum(o, "unconfirmed_gpus"), 0);
    assert_true(fabs(jnum(o, "worst_w") - jnum(o, "planned_worst_w")) < 1e-6);
    assert_true(jnum(o, "worst_w") <= 2100);
    json_decref(o);
    assert_int_equal(ctl_health(c, 1, why, sizeof why), 0);
    /* node 1 stops answering: its two GPUs count at 700 W, confirmed none */
    assert_int_equal(ctl_node_feed(c, 0, &st, 1, &err), 0);
    assert_int_equal(ctl_period(c, 2 * P, &r, &err), 0);
    o = ctl_status_json(c, 2 * P);
    assert_int_equal((int)jnum(o, "unconfirmed_gpus"), 2);
    json_t *lim = json_object_get(json_array_get(json_object_get(o, "nodes"), 1), "limits_w");
    assert_true(json_is_null(json_array_get(lim, 0)) && json_is_null(json_array_get(lim, 1)));
    double w0 = 0;
    lim = json_object_get(json_array_get(json_object_get(o, "nodes"), 0), "limits_w");
    for (int k = 0; k < 2; k++)
        w0 += json_number_value(json_array_get(lim, k));
    assert_true(fabs(jnum(o, "worst_w") - (100 + 1400 + w0)) < 1e-6);
    assert_true(json_is_true(json_object_get(o, "feasible")) == (jnum(o, "worst_w") <= 2100 + 0.5));
    json_decref(o);
    /* under every GPU's least limit: infeasible on the caps, whatever is drawn */
    add_target(c, 3 * P, 1e9, 500, 0);
    assert_int_equal(ctl_node_feed(c, 0, &st, 1, &err), 0);
    assert_int_equal(ctl_node_feed(c, 1, &st, 1, &err), 0);
    assert_int_equal(ctl_period(c, 3 * P, &r, &err), 0);
    o = ctl_status_json(c, 3 * P);
    assert_true(json_is_false(json_object_get(o, "feasible")));
    assert_true(jnum(o, "worst_w") >= 100 + 4 * 200);
    json_decref(o);
    /* node 1's readings stale: its caps are sent every period, node 0's
     * (shown taken: every GPU at its least, 200 W) held under their lease
     * once sent */
    struct agent_status st0 = st;
    st0.gpu[0].limit_w = st0.gpu[1].limit_w = 200;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ctl_node_feed(c, 0, &st0, 1, &err), 0);
        assert_int_equal(ctl_node_feed(c, 1, &st, 0, &err), 0);
        assert_int_equal(ctl_period(c, (4 + i) * P, &r, &err), 0);
        size_t nc;
        const struct ctl_cap *cp = ctl_caps(c, &nc);
        assert_int_equal(nc, 4);
        for (size_t q = 0; q < nc; q++)
            if (cp[q].node == 1)
                assert_true(cp[q].send);
            else if (i && cp[q].send)
                fail_msg("period %d: node 0 GPU %d sent %g W", i, cp[q].gpu, cp[q].cap_w);
    }
    size_t len;
    char *text = ctl_metrics(c, 3 * P, &len);
    assert_non_null(strstr(text, "\npflex_controller_feasible 0\n"));
    assert_non_null(strstr(text, "\npflex_controller_assumed_nodes 0\n"));
    free(text);
    ctl_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_site),
        cmocka_unit_test(test_cap_step),
        cmocka_unit_test(test_node_down),
        cmocka_unit_test(test_steps_are_the_period),
        cmocka_unit_test(test_leases),
        cmocka_unit_test(test_count_entries),
        cmocka_unit_test(test_prior_pfi_keeps_floors),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_no_cut_between_events),
        cmocka_unit_test(test_learn_budget),
        cmocka_unit_test(test_give_back),
        cmocka_unit_test(test_claims),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
