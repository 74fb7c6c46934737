/* test_controller_sched.c — the scheduler lever: the rule that picks the
 * jobs to pause, the contract's length, the state records, the command
 * runner (sched.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "controller/controller.h"
#include "controller/period.h"
#include "controller/sched.h"
#include "pflex/flex/target.h"
#include "pflex/io/jobpolicy.h"

static void test_pick_order(void **state)
{
    (void)state;
    struct ctl_pause_cand c[] = {
        {"a", 200, 10, 100},     /* 0.05 per W */
        {"b", 400, 10, 100},     /* 0.025 per W: first */
        {"c", 100, 0, 100},      /* free: before all */
        {"d", 300, 1, 5},        /* cheap, but its contract is too short */
        {"e", 200, 10, 100},     /* the same cost as a: the name decides */
    };
    size_t pick[5], n;
    double freed;
    n = ctl_pause_pick(c, 5, 450, 10, pick, &freed);
    assert_int_equal(n, 2);
    assert_int_equal(pick[0], 2);
    assert_int_equal(pick[1], 1);
    assert_true(freed == 500);
    n = ctl_pause_pick(c, 5, 600, 10, pick, &freed);
    assert_int_equal(n, 3);
    assert_int_equal(pick[2], 0);   /* a before e */
    assert_true(freed == 700);
    /* more than all of them free: every one allowed, short */
    n = ctl_pause_pick(c, 5, 5000, 10, pick, &freed);
    assert_int_equal(n, 4);
    assert_true(freed == 900);
    assert_int_equal(pick[3], 4);
    /* with a shorter minimum d comes in, cheapest after c */
    n = ctl_pause_pick(c, 5, 350, 1, pick, &freed);
    assert_int_equal(n, 2);
    assert_int_equal(pick[0], 2);
    assert_int_equal(pick[1], 3);
    /* no deficit, nothing */
    assert_int_equal(ctl_pause_pick(c, 5, 0, 1, pick, &freed), 0);
    assert_int_equal(ctl_pause_pick(c, 5, NAN, 1, pick, &freed), 0);
    assert_true(freed == 0);
    /* a candidate that frees nothing is never picked */
    struct ctl_pause_cand z[] = {{"z", 0, 0, 100}, {"y", -5, 0, 100}};
    assert_int_equal(ctl_pause_pick(z, 2, 10, 1, pick, &freed), 0);
}

/* Property, against the definition: the picks are the allowed candidates
 * in order of cost, and the shortest such prefix that reaches the deficit. */
static void test_pick_property(void **state)
{
    (void)state;
    srand(7);
    char names[12][8];
    for (int round = 0; round < 2000; round++) {
        size_t n = 1 + (size_t)rand() % 12;
        struct ctl_pause_cand c[12];
        for (size_t i = 0; i < n; i++) {
            snprintf(names[i], sizeof names[i], "j%zu", i);
            c[i] = (struct ctl_pause_cand){names[i], 10 + rand() % 500, rand() % 20, rand() % 100};
        }
        double deficit = rand() % 3000, min_s = 30, freed;
        size_t pick[12];
        size_t k = ctl_pause_pick(c, n, deficit, min_s, pick, &freed);
        double sum = 0, allowed_sum = 0;
        for (size_t i = 0; i < n; i++)
            if (c[i].allowed_s >= min_s)
                allowed_sum += c[i].freed_w;
        for (size_t i = 0; i < k; i++) {
            const struct ctl_pause_cand *x = &c[pick[i]];
            assert_true(x->allowed_s >= min_s);
            if (i)
                assert_true(x->lost / x->freed_w >= c[pick[i - 1]].lost / c[pick[i - 1]].freed_w);
            if (i + 1 < k)  /* not yet enough before the last */
                assert_true(sum + x->freed_w < deficit);
            sum += x->freed_w;
        }
        assert_true(sum == freed);
        /* nothing allowed left cheaper than the last picked */
        for (size_t i = 0; k && i < n; i++) {
            int taken = 0;
            for (size_t j = 0; j < k; j++)
                taken |= pick[j] == i;
            if (!taken && c[i].allowed_s >= min_s)
                assert_true(c[i].lost / c[i].freed_w >= c[pick[k - 1]].lost / c[pick[k - 1]].freed_w);
        }
        assert_true(deficit <= 0 ? k == 0 : (freed >= deficit || freed == allowed_sum));
    }
}

static void test_allowed(void **state)
{
    (void)state;
    /* an hour's event from t=1000, 10 % budget: 360 s; max_pause 600 */
    assert_true(ctl_pause_allowed_s(600, 0.1, 0, 1000, 1000, 4600) == 360);
    /* 300 s already spent: 60 left */
    assert_true(ctl_pause_allowed_s(600, 0.1, 300, 2000, 1000, 4600) == 60);
    /* max_pause the tighter */
    assert_true(ctl_pause_allowed_s(120, 0.5, 0, 1000, 1000, 4600) == 120);
    /* the event's end the tighter */
    assert_true(ctl_pause_allowed_s(600, 1, 0, 4500, 1000, 4600) == 100);
    /* spent, or over: none */
    assert_true(ctl_pause_allowed_s(600, 0.1, 400, 2000, 1000, 4600) == 0);
    assert_true(ctl_pause_allowed_s(600, 1, 0, 5000, 1000, 4600) == 0);
    /* an event without an end: max_pause alone */
    assert_true(ctl_pause_allowed_s(600, 0.1, 0, 1000, 1000, INFINITY) == 600);
}

static void test_records(void **state)
{
    (void)state;
    char dir[] = "/tmp/pflex-sched-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/ctl.db", dir);
    ctl_pause_db_t *db;
    pflex_error_t err;
    assert_int_equal(ctl_pause_db_open(path, 1, &db, &err), 0);
    struct ctl_pause_rec a = {.job = "4242", .suspended = 1, .since = 100.5, .until = 220, .paused_s = 0,
                              .event_start = 90, .event_end = 400};
    struct ctl_pause_rec b = {.job = "17_3", .suspended = 0, .since = 10, .until = 20, .paused_s = 10,
                              .event_start = 5, .event_end = INFINITY};
    assert_int_equal(ctl_pause_db_put(db, &a, &err), 0);
    assert_int_equal(ctl_pause_db_put(db, &b, &err), 0);
    a.until = 250;      /* replaced, not added */
    assert_int_equal(ctl_pause_db_put(db, &a, &err), 0);
    ctl_pause_db_close(db);
    /* what a restart reads */
    assert_int_equal(ctl_pause_db_open(path, 1, &db, &err), 0);
    struct ctl_pause_rec *r;
    size_t n;
    assert_int_equal(ctl_pause_db_load(db, &r, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(r[0].job, "17_3");    /* by job */
    assert_true(!r[0].suspended && r[0].paused_s == 10 && isinf(r[0].event_end));
    assert_string_equal(r[1].job, "4242");
    assert_true(r[1].suspended && r[1].since == 100.5 && r[1].until == 250 && r[1].event_end == 400
                && r[1].event_start == 90);
    free(r);
    assert_int_equal(ctl_pause_db_del(db, "4242", &err), 0);
    assert_int_equal(ctl_pause_db_del(db, "nobody", &err), 0);
    assert_int_equal(ctl_pause_db_load(db, &r, &n, &err), 0);
    assert_int_equal(n, 1);
    free(r);
    /* the etcd copy: to text and back, then in place of a standby's own */
    struct ctl_pause_rec two[2] = {a, b};
    char *text = ctl_pause_recs_text(two, 2);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"event_end\":null"));
    assert_int_equal(ctl_pause_recs_parse(text, &r, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_true(!strcmp(r[0].job, "4242") && r[0].suspended && r[0].until == 250 && r[0].event_end == 400);
    assert_true(!strcmp(r[1].job, "17_3") && !r[1].suspended && isinf(r[1].event_end));
    assert_int_equal(ctl_pause_db_replace(db, r, n, &err), 0);
    free(r);
    free(text);
    assert_int_equal(ctl_pause_db_load(db, &r, &n, &err), 0);
    assert_int_equal(n, 2);
    free(r);
    const char *bad_text[] = {"{}", "[{\"job\": \"x; rm\", \"suspended\": true, \"since\": 1, \"until\": 2, "
                              "\"paused_s\": 0, \"event_start\": 0, \"event_end\": null}]", "[{\"job\": \"1\"}]",
                              "not json", NULL};
    for (size_t i = 0; i < sizeof bad_text / sizeof *bad_text; i++)
        assert_int_equal(ctl_pause_recs_parse(bad_text[i], &r, &n, &err), -1);
    ctl_pause_db_close(db);
    /* one that is not there is not made unless asked */
    char none[80];
    snprintf(none, sizeof none, "%s/none.db", dir);
    assert_int_equal(ctl_pause_db_open(none, 0, &db, &err), -1);
    assert_int_equal(access(none, F_OK), -1);
    /* a file that is no database */
    char bad[80];
    snprintf(bad, sizeof bad, "%s/bad.db", dir);
    FILE *f = fopen(bad, "w");
    fputs("this is not a database, just some text long enough to be read as one\n", f);
    fclose(f);
    assert_int_equal(ctl_pause_db_open(bad, 1, &db, &err), -1);
    assert_non_null(strstr(err.text, bad));
    unlink(bad);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_job_ids(void **state)
{
    (void)state;
    assert_true(ctl_sched_job_id_ok("4242"));
    assert_true(ctl_sched_job_id_ok("17_3"));
    assert_false(ctl_sched_job_id_ok(""));
    assert_false(ctl_sched_job_id_ok("llama-8b"));
    assert_false(ctl_sched_job_id_ok("12;rm"));
    assert_false(ctl_sched_job_id_ok("-1"));
    assert_false(ctl_sched_job_id_ok("17_"));
    assert_false(ctl_sched_job_id_ok("123456789012345678901"));
}

/* A fake scontrol per case: what each answer means. */
static void test_cmd(void **state)
{
    (void)state;
    char dir[] = "/tmp/pflex-sched-XXXXXX", path[80];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/scontrol", dir);
    struct {
        const char *body;
        int rc, gone;
        const char *needle;
    } cases[] = {
        {"[ \"$1 $2\" = 'suspend 42' ] || exit 3\n", 0, 0, NULL},
        {"echo 'scontrol: error: Invalid job id specified' >&2; exit 1\n", -1, CTL_SCHED_NOTHING, "Invalid job id"},
        {"echo 'scontrol: error: Access/permission denied' >&2; exit 1\n", -1, CTL_SCHED_REFUSED, "exit 1: scontrol"},
        {"sleep 20\n", -1, CTL_SCHED_NO_ANSWER, "no answer within 0.3 s"},
        {"sleep 20 & echo started; exit 0\n", 0, 0, NULL},    /* a child holds the pipe: not waited for */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        FILE *f = fopen(path, "w");
        fprintf(f, "#!/bin/sh\n%s", cases[i].body);
        fclose(f);
        chmod(path, 0755);
        struct ctl_sched_config cfg = {.scontrol = path, .timeout_s = 0.3};
        pflex_error_t err = {{0}};
        int gone = -1;
        int rc = ctl_sched_cmd(&cfg, "suspend", "42", &gone, &err);
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d: %s", i, rc, err.text);
        if (rc)
            assert_int_equal(gone, cases[i].gone);
        if (cases[i].needle && !strstr(err.text, cases[i].needle))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.text, cases[i].needle);
    }
    struct ctl_sched_config missing = {.scontrol = "/nonexistent/scontrol", .timeout_s = 1};
    pflex_error_t err;
    int gone;
    assert_int_equal(ctl_sched_cmd(&missing, "resume", "42", &gone, &err), -1);
    assert_int_equal(gone, CTL_SCHED_DID_NOT_RUN);
    assert_non_null(strstr(err.text, "not found"));
    /* never a job id that is not one */
    assert_int_equal(ctl_sched_cmd(&missing, "resume", "42 --all", &gone, &err), -1);
    assert_non_null(strstr(err.text, "not a Slurm job id"));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* The lever in the controller's own period, in process: two nodes of four
 * GPUs, job 101 (pausable, max_pause 60 s) and job 102 (caps alone), a
 * fake scontrol that keeps each job's state in a file, and a target of
 * 1400 W under the 1600 W of every GPU at its least cap.  A paused job's
 * GPUs are fed at the idle draw, as its stopped processes would leave them. */
#define SP 5.0
static char fdir[64];

static int job_suspended(const char *job)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s.S", fdir, job);
    return access(path, F_OK) == 0;
}

static void feed_site(ctl_t *c, const double cap[2][4])
{
    static struct agent_status st;
    const char *names[2] = {"101", "102"};
    for (int n = 0; n < 2; n++) {
        memset(&st, 0, sizeof st);
        snprintf(st.host, sizeof st.host, "node-%d", n);
        st.ngpus = 4;
        st.njobs = 1;
        snprintf(st.job[0].name, sizeof st.job[0].name, "%s", names[n]);
        st.job[0].ngpus = 4;
        int idle = job_suspended(names[n]);
        for (int g = 0; g < 4; g++) {
            st.gpu[g] = (struct agent_gpu){.index = g, .power_w = idle ? 84 : fmin(cap[n][g], 600),
                                           .limit_w = cap[n][g], .min_w = 200, .max_w = 700, .ok = 1};
            st.job[0].gpus[g] = g;
        }
        st.job[0].throughput = idle ? 0 : 1000 * fmin(cap[n][0], 600) / 600;
        pflex_error_t err;
        if (ctl_node_feed(c, (size_t)n, &st, 1, &err) < 0)
            fail_msg("%s", err.text);
    }
}

static int leader_now = 1;
static int may_push(void *ud, uint64_t *fence)
{
    (void)ud;
    *fence = 1;
    return leader_now;
}

static void run_site(ctl_t *c, double cap[2][4], int k0, int k1)
{
    for (int k = k0; k < k1; k++) {
        struct ctl_period_result r;
        pflex_error_t err;
        feed_site(c, (const double (*)[4])cap);
        if (ctl_period(c, 1e6 + k * SP, &r, &err) < 0)
            fail_msg("period %d: %s", k, err.text);
        size_t n;
        const struct ctl_cap *caps = ctl_caps(c, &n);
        for (size_t q = 0; q < n; q++) {
            assert_true(caps[q].cap_w >= 200 && caps[q].cap_w <= 700);     /* never the idle draw */
            cap[caps[q].node][caps[q].gpu] = caps[q].cap_w;
        }
    }
}

static int calls(const char *line)
{
    char path[128], buf[256];
    snprintf(path, sizeof path, "%s/calls", fdir);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(buf, sizeof buf, f))
        n += !strncmp(buf, line, strlen(line));
    if (f)
        fclose(f);
    return n;
}

static void test_in_period(void **state)
{
    (void)state;
    snprintf(fdir, sizeof fdir, "/tmp/pflex-sched-XXXXXX");
    assert_non_null(mkdtemp(fdir));
    char scontrol[128], db[128];
    snprintf(scontrol, sizeof scontrol, "%s/scontrol", fdir);
    snprintf(db, sizeof db, "%s/ctl.db", fdir);
    FILE *f = fopen(scontrol, "w");
    fprintf(f, "#!/bin/sh\necho \"$1 $2\" >>'%s/calls'\n"
               "case $1 in suspend) touch '%s/'$2.S ;; resume) rm '%s/'$2.S || exit 1 ;; esac\n",
            fdir, fdir, fdir);
    fclose(f);
    chmod(scontrol, 0755);
    const char *csv = "job,levers,loss_budget,max_pause\n101,cap+pause,50%,60\n102,cap,,\n";
    pflex_job_policies_t pol;
    pflex_error_t err;
    assert_int_equal(pflex_job_policies_read_mem(csv, strlen(csv), "jobs.csv", &pol, &err), 0);
    struct ctl_sched_config sc = {.scontrol = scontrol, .timeout_s = 5, .idle_w = 84, .db_path = db};
    ctl_sched_t *s;
    assert_int_equal(ctl_sched_create(&sc, &s, &err), 0);
    struct ctl_config cfg = {.nagents = 2, .in_process = 1, .period_s = SP, .policies = &pol, .sched = s,
                             .may_push = may_push};
    if (getenv("PFLEX_DEBUG"))
        cfg.log = stderr;
    ctl_t *c;
    assert_int_equal(ctl_create(&cfg, &c, &err), 0);
    /* 1400 W from period 4 to period 40 (200 s: a 50 % budget is 100 s) */
    struct pflex_target t = {.start_s = 1e6 + 4 * SP, .end_s = 1e6 + 40 * SP, .value = 1400,
                             .unit = PFLEX_TARGET_WATTS};
    snprintf(t.source, sizeof t.source, "schedule");
    assert_int_equal(pflex_target_set_add(ctl_targets(c), &t, &err), 0);
    double cap[2][4];
    for (int n = 0; n < 2; n++)
        for (int g = 0; g < 4; g++)
            cap[n][g] = 700;
    /* a standby never acts */
    leader_now = 0;
    run_site(c, cap, 0, 6);
    assert_int_equal(calls("suspend"), 0);
    leader_now = 1;
    /* before the event nothing; in it 101 alone is paused, its record first */
    run_site(c, cap, 6, 8);
    assert_int_equal(calls("suspend 101"), 1);
    assert_int_equal(calls("suspend 102"), 0);
    assert_true(job_suspended("101"));
    ctl_pause_db_t *d;
    struct ctl_pause_rec *r;
    size_t n;
    assert_int_equal(ctl_pause_db_open(db, 0, &d, &err), 0);
    assert_int_equal(ctl_pause_db_load(d, &r, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_true(!strcmp(r[0].job, "101") && r[0].suspended && r[0].until - r[0].since == 60);
    free(r);
    /* paused, the site plans feasible on 101's idle GPUs, their caps at the least */
    run_site(c, cap, 8, 10);
    assert_int_equal(calls("suspend"), 1);
    for (int g = 0; g < 4; g++)
        assert_true(cap[0][g] == 200);
    /* max_pause 60 s: resumed within a period of it, then not paused again
     * for min(60, 300) s; then the rest of the budget (100 - 60 s) */
    run_site(c, cap, 10, 20);
    assert_int_equal(calls("resume 101"), 1);
    assert_false(job_suspended("101"));
    run_site(c, cap, 20, 29);
    assert_int_equal(calls("suspend 101"), 1);
    run_site(c, cap, 29, 32);
    assert_int_equal(calls("suspend 101"), 2);
    assert_int_equal(ctl_pause_db_load(d, &r, &n, &err), 0);
    /* the budget counts the event from when its limit was first seen (the
     * plan's horizon ahead of its start, as a standby too) */
    assert_true(n == 1 && r[0].suspended && r[0].paused_s >= 55 && r[0].until - r[0].since <= 45 + 1e-9);
    free(r);
    /* the budget spent: resumed, and not paused again until the event ends */
    run_site(c, cap, 32, 44);
    assert_int_equal(calls("resume 101"), 2);
    assert_int_equal(calls("suspend 101"), 2);
    assert_false(job_suspended("101"));
    ctl_pause_db_close(d);
    ctl_destroy(c);
    ctl_sched_destroy(s, NULL);
    pflex_job_policies_fini(&pol);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fdir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick_order), cmocka_unit_test(test_pick_property), cmocka_unit_test(test_allowed),
        cmocka_unit_test(test_records),    cmocka_unit_test(test_job_ids),       cmocka_unit_test(test_cmd),
        cmocka_unit_test(test_in_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
