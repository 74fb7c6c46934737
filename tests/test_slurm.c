/* test_slurm.c — the job map (docs/slurm.md): hostlists, squeue and
 * scontrol output, the job map CSV, and bad input named by file:line.
 * Expectations are written out by hand from the fixtures' text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/io/slurm.h"

#define D "tests/data/slurm/"

static void expect_hosts(const char *list, const char *const *want, size_t nwant)
{
    char **h;
    size_t n;
    pflex_error_t err;
    int rc = pflex_slurm_hostlist_expand(list, strlen(list), PFLEX_SLURM_MAX_HOSTS, &h, &n,
                                         &err);
    if (rc)
        fprintf(stderr, "%s: %s\n", list, err.text);
    assert_int_equal(rc, 0);
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(h[i], want[i]);
    pflex_slurm_hostlist_free(h, n);
}

static void expect_hostlist_error(const char *list, size_t max, const char *what)
{
    char **h = (char **)1;
    size_t n = 99;
    pflex_error_t err;
    assert_int_equal(pflex_slurm_hostlist_expand(list, strlen(list), max, &h, &n, &err), -1);
    assert_null(h);
    assert_int_equal(n, 0);
    if (!strstr(err.text, what))
        fail_msg("%s: '%s' does not say '%s'", list, err.text, what);
}

static void test_hostlist(void **state)
{
    static const char *const a[] = {"gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-07"};
    expect_hosts("gpu-[01-04,07]", a, 5);
    static const char *const b[] = {"node1-ib", "node2-ib", "node3-ib"};
    expect_hosts("node[1-3]-ib", b, 3);
    static const char *const c[] = {"r1n01", "r1n02", "r2n01", "r2n02"};
    expect_hosts("r[1-2]n[01-02]", c, 4);
    static const char *const d[] = {"login", "gpu-1", "gpu-3", "x.y_z"};
    expect_hosts("login,gpu-[1,3],x.y_z", d, 4);
    static const char *const e[] = {"n8", "n9", "n10", "n11"};
    expect_hosts("n[8-11]", e, 4);
    static const char *const f[] = {"n08", "n09", "n10"};
    expect_hosts("n[08-10]", f, 3);
    expect_hosts("", NULL, 0);
    expect_hosts("(null)", NULL, 0);
    expect_hostlist_error("gpu-[01-04", 100, "'[' without ']'");
    expect_hostlist_error("gpu-[04-01]", 100, "runs backwards");
    expect_hostlist_error("gpu-[a]", 100, "not a list of numbers");
    expect_hostlist_error("gpu-[1-]", 100, "no upper bound");
    expect_hostlist_error("gpu 1", 100, "not allowed in a host name");
    expect_hostlist_error("a,,b", 100, "empty host name");
    expect_hostlist_error("a,", 100, "empty host name");
    expect_hostlist_error("n[1-10]", 5, "more than 5 hosts");
    expect_hostlist_error("n[1-3],m[1-3]", 5, "more than 5 hosts");
    expect_hostlist_error("a,b,c,d,e,f", 5, "more than 5 hosts");
    /* the bound holds before anything is allocated: 10^9 hosts asked */
    expect_hostlist_error("n[0-999]m[0-999]k[0-999]", PFLEX_SLURM_MAX_HOSTS, "more than");
    expect_hostlist_error("n[0-999999999]", PFLEX_SLURM_MAX_HOSTS, "more than");
    expect_hostlist_error("n[1][1][1][1][1][1][1][1][1]", 100, "groups");
}

static pflex_jobmap_t *read_ok(const char *squeue, const char *scontrol, const char *csv)
{
    pflex_jobmap_t *m = pflex_jobmap_create();
    pflex_error_t err;
    assert_non_null(m);
    int rc = 0;
    if (squeue)
        rc = pflex_slurm_squeue_read_file(m, squeue, &err);
    if (!rc && scontrol)
        rc = pflex_slurm_scontrol_read_file(m, scontrol, &err);
    if (!rc && csv)
        rc = pflex_jobmap_csv_read_file(m, csv, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.text);
    assert_int_equal(rc, 0);
    return m;
}

/* The rows of scontrol_detail.txt, written out from its text. */
static void expect_detail_rows(pflex_jobmap_t *m, size_t extra)
{
    const struct pflex_jobmap_row *r;
    pflex_error_t err;
    long n = pflex_jobmap_rows(m, &r, &err);
    assert_int_equal(n, 16 + 8 + extra);
    for (int i = 0; i < 16; i++) {
        assert_string_equal(r[i].job, "4242");
        assert_string_equal(r[i].name, "llama-8b pretrain");
        assert_string_equal(r[i].host, i < 8 ? "gpu-01" : "gpu-02");
        assert_int_equal(r[i].gpu, i % 8);
    }
    for (int i = 16; i < 24; i++) {
        assert_string_equal(r[i].job, "4243");
        assert_string_equal(r[i].name, "moe-ft");
        assert_string_equal(r[i].host, i < 20 ? "gpu-03" : "gpu-04");
        assert_int_equal(r[i].gpu, i - 16);    /* 0-3 on gpu-03, 4-7 on gpu-04 */
    }
}

static void test_scontrol_detail(void **state)
{
    pflex_jobmap_t *m = read_ok(NULL, D "scontrol_detail.txt", NULL);
    expect_detail_rows(m, 0);       /* the Nodes= in Command= and Comment= ignored */
    assert_int_equal(pflex_jobmap_skipped(m), 1);  /* 4244 pending */
    pflex_jobmap_destroy(m);
}

static void test_scontrol_oneliner(void **state)
{
    pflex_jobmap_t *m = read_ok(NULL, D "scontrol_oneliner.txt", NULL);
    const struct pflex_jobmap_row *r;
    pflex_error_t err;
    assert_int_equal(pflex_jobmap_rows(m, &r, &err), 4);  /* 5002 has no GPU: no row */
    static const char *const host[] = {"node1-ib", "node1-ib", "node3-ib", "node3-ib"};
    static const int gpu[] = {0, 2, 1, 3};
    for (int i = 0; i < 4; i++) {
        assert_string_equal(r[i].job, "5001");
        assert_string_equal(r[i].name, "ddp smoke test");
        assert_string_equal(r[i].host, host[i]);
        assert_int_equal(r[i].gpu, gpu[i]);
    }
    assert_int_equal(pflex_jobmap_skipped(m), 0);
    pflex_jobmap_destroy(m);
}

static void test_squeue_text_and_merge(void **state)
{
    pflex_jobmap_t *m = read_ok(D "squeue.txt", NULL, NULL);
    const struct pflex_jobmap_row *r;
    pflex_error_t err;
    /* hosts only: 2 + 2 + 1 unknown rows */
    assert_int_equal(pflex_jobmap_rows(m, &r, &err), 5);
    assert_string_equal(r[0].host, "gpu-01");
    assert_int_equal(r[0].gpu, -1);
    assert_string_equal(r[4].job, "4245");
    assert_string_equal(r[4].name, "quick|eval");
    assert_int_equal(pflex_jobmap_skipped(m), 1);
    /* scontrol adds the indices; 4245 keeps its unknown row */
    assert_int_equal(pflex_slurm_scontrol_read_file(m, D "scontrol_detail.txt", &err), 0);
    expect_detail_rows(m, 1);
    assert_int_equal(pflex_jobmap_rows(m, &r, &err), 25);
    assert_string_equal(r[24].job, "4245");
    assert_string_equal(r[24].host, "gpu-05");
    assert_int_equal(r[24].gpu, -1);
    assert_int_equal(pflex_jobmap_skipped(m), 1);
    pflex_jobmap_destroy(m);
    /* the other order gives the same map */
    m = read_ok(D "squeue.txt", D "scontrol_detail.txt", NULL);
    pflex_jobmap_t *m2 = pflex_jobmap_create();
    assert_int_equal(pflex_slurm_scontrol_read_file(m2, D "scontrol_detail.txt", &err), 0);
    assert_int_equal(pflex_slurm_squeue_read_file(m2, D "squeue.txt", &err), 0);
    const struct pflex_jobmap_row *r2;
    long n = pflex_jobmap_rows(m, &r, &err);
    assert_int_equal(pflex_jobmap_rows(m2, &r2, &err), n);
    for (long i = 0; i < n; i++) {
        assert_string_equal(r[i].job, r2[i].job);
        assert_string_equal(r[i].host, r2[i].host);
        assert_int_equal(r[i].gpu, r2[i].gpu);
    }
    pflex_jobmap_destroy(m);
    pflex_jobmap_destroy(m2);
}

static void test_squeue_json(void **state)
{
    pflex_jobmap_t *m = read_ok(D "squeue.json", NULL, NULL);
    expect_detail_rows(m, 0);
    assert_int_equal(pflex_jobmap_skipped(m), 1);
    /* and it agrees with scontrol: merging both is no error */
    pflex_error_t err;
    assert_int_equal(pflex_slurm_scontrol_read_file(m, D "scontrol_detail.txt", &err), 0);
    expect_detail_rows(m, 0);
    pflex_jobmap_destroy(m);
}

static void test_csv_round_trip(void **state)
{
    pflex_jobmap_t *m = read_ok(D "squeue.txt", D "scontrol_detail.txt", NULL);
    const struct pflex_jobmap_row *r;
    pflex_error_t err;
    long n = pflex_jobmap_rows(m, &r, &err);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(pflex_jobmap_write_csv(r, (size_t)n, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "job,name,host,gpu\n4242,llama-8b pretrain,gpu-01,0\n"));
    assert_non_null(strstr(buf, "\n4245,quick|eval,gpu-05,\n"));
    pflex_jobmap_t *back = pflex_jobmap_create();
    assert_int_equal(pflex_jobmap_csv_read_mem(back, buf, len, "round.csv", &err), 0);
    const struct pflex_jobmap_row *b;
    assert_int_equal(pflex_jobmap_rows(back, &b, &err), n);
    for (long i = 0; i < n; i++) {
        assert_string_equal(r[i].job, b[i].job);
        assert_string_equal(r[i].name, b[i].name);
        assert_string_equal(r[i].host, b[i].host);
        assert_int_equal(r[i].gpu, b[i].gpu);
    }
    /* the fixture job map is the same map, written by hand */
    pflex_jobmap_t *fx = read_ok(NULL, NULL, D "jobmap.csv");
    assert_int_equal(pflex_jobmap_rows(fx, &b, &err), n);
    for (long i = 0; i < n; i++) {
        assert_string_equal(r[i].job, b[i].job);
        assert_string_equal(r[i].host, b[i].host);
        assert_int_equal(r[i].gpu, b[i].gpu);
    }
    /* names quoted when they hold a comma, and read back */
    struct pflex_jobmap_row q = {"7", "a, \"b\"", "h1", 3};
    char *qb = NULL;
    size_t ql = 0;
    f = open_memstream(&qb, &ql);
    pflex_jobmap_write_csv(&q, 1, f);
    fclose(f);
    assert_string_equal(qb, "job,name,host,gpu\n7,\"a, \"\"b\"\"\",h1,3\n");
    pflex_jobmap_t *qm = pflex_jobmap_create();
    assert_int_equal(pflex_jobmap_csv_read_mem(qm, qb, ql, "q.csv", &err), 0);
    assert_int_equal(pflex_jobmap_rows(qm, &b, &err), 1);
    assert_string_equal(b[0].name, "a, \"b\"");
    pflex_jobmap_destroy(qm);
    free(qb);
    pflex_jobmap_destroy(fx);
    pflex_jobmap_destroy(back);
    pflex_jobmap_destroy(m);
    free(buf);
}

static void test_find(void **state)
{
    pflex_jobmap_t *m = read_ok(D "squeue.txt", D "scontrol_detail.txt", NULL);
    const struct pflex_jobmap_row *r = pflex_jobmap_find(m, "gpu-04", 5);
    assert_non_null(r);
    assert_string_equal(r->job, "4243");
    assert_string_equal(r->host, "gpu-04");
    assert_int_equal(r->gpu, 5);
    r = pflex_jobmap_find(m, "gpu-02", 0);
    assert_non_null(r);
    assert_string_equal(r->job, "4242");
    assert_null(pflex_jobmap_find(m, "gpu-03", 4));    /* 4243 has 0-3 there */
    assert_null(pflex_jobmap_find(m, "gpu-05", 0));    /* 4245's indices unknown */
    assert_null(pflex_jobmap_find(m, "gpu-09", 0));
    assert_null(pflex_jobmap_find(m, "gpu-01", -1));
    /* a read after a lookup rebuilds the index */
    pflex_error_t err;
    const char *more = "9|RUNNING|1|gpu-09|late\n";
    assert_int_equal(pflex_slurm_squeue_read_mem(m, more, strlen(more), "more", &err), 0);
    assert_null(pflex_jobmap_find(m, "gpu-09", 0));
    const char *csv = "job,host,gpu\n10,gpu-10,2\n";
    assert_int_equal(pflex_jobmap_csv_read_mem(m, csv, strlen(csv), "c.csv", &err), 0);
    r = pflex_jobmap_find(m, "gpu-10", 2);
    assert_non_null(r);
    assert_string_equal(r->job, "10");
    assert_string_equal(pflex_jobmap_find(m, "gpu-04", 7)->job, "4243");
    pflex_jobmap_destroy(m);
}

static void test_rows_sorted_numerically(void **state)
{
    const char *csv = "job,host,gpu\n100,b,1\n9,b,0\n100,a,\n100,a,2\n";
    pflex_jobmap_t *m = pflex_jobmap_create();
    pflex_error_t err;
    assert_int_equal(pflex_jobmap_csv_read_mem(m, csv, strlen(csv), "s.csv", &err), 0);
    const struct pflex_jobmap_row *r;
    assert_int_equal(pflex_jobmap_rows(m, &r, &err), 4);
    assert_string_equal(r[0].job, "9");
    assert_string_equal(r[1].job, "100");
    assert_string_equal(r[1].host, "a");
    assert_int_equal(r[1].gpu, -1);     /* unknown first */
    assert_int_equal(r[2].gpu, 2);
    assert_string_equal(r[3].host, "b");
    assert_string_equal(r[0].name, "");
    pflex_jobmap_destroy(m);
}

enum reader { SQUEUE, SCONTROL, CSV };

/* Bad input: -1 and a message that starts "bad.txt:LINE: " and says what. */
static void expect_error(enum reader rd, const char *text, unsigned line, const char *what)
{
    pflex_jobmap_t *m = pflex_jobmap_create();
    pflex_error_t err;
    const struct pflex_jobmap_row *r;
    size_t len = strlen(text);
    int rc = rd == SQUEUE ? pflex_slurm_squeue_read_mem(m, text, len, "bad.txt", &err)
             : rd == SCONTROL ? pflex_slurm_scontrol_read_mem(m, text, len, "bad.txt", &err)
                              : pflex_jobmap_csv_read_mem(m, text, len, "bad.txt", &err);
    if (rc == 0)
        rc = pflex_jobmap_rows(m, &r, &err) < 0 ? -1 : 0;
    if (rc != -1)
        fail_msg("no error for:\n%s", text);
    char pre[32];
    snprintf(pre, sizeof pre, "bad.txt:%u: ", line);
    if (strncmp(err.text, pre, strlen(pre)) || !strstr(err.text, what))
        fail_msg("'%s' is not '%s...%s'", err.text, pre, what);
    pflex_jobmap_destroy(m);
}

#define REC(nodes, gres, tres)                                                             \
    "JobId=7 JobName=x\n   JobState=RUNNING Reason=None\n   NodeList=" nodes "\n"          \
    "   NumNodes=1 NumCPUs=8\n   AllocTRES=cpu=8,node=1" tres "\n"                          \
    "     Nodes=" nodes " CPU_IDs=0-7 Mem=1 GRES=" gres "\n"

static void test_scontrol_errors(void **state)
{
    expect_error(SCONTROL, "slurm_load_jobs error: Invalid job id specified\n", 1,
                 "not part of a job record");
    expect_error(SCONTROL, REC("g1", "gpu:h200:8(IDX:0-6)", ""), 6, "counts 8 GPUs but lists 7");
    expect_error(SCONTROL, REC("g1", "gpu:h200:2(IDX:0-1)", ",gres/gpu=4"), 1,
                 "gres/gpu=4 but its detail lines list 2");
    expect_error(SCONTROL, REC("g1", "gpu:2(IDX:1,1)", ""), 6, "given twice");
    expect_error(SCONTROL, REC("g1", "gpu:1(IDX:5000)", ""), 6, "not below 1024");
    expect_error(SCONTROL, REC("g1", "gpu:1(IDX:1", ""), 6, "'(' without ')'");
    expect_error(SCONTROL, REC("g[1-", "gpu:1(IDX:1)", ""), 6, "'[' without ']'");
    expect_error(SCONTROL, "JobId=7 JobName=x\n   JobState=RUNNING\n   NodeList=g[1-2]\n"
                 "   NumNodes=3\n", 3, "NumNodes=3 but its NodeList has 2");
    expect_error(SCONTROL, "JobId=7 JobName=x\n   JobState=RUNNING\n   NodeList=g1\n"
                 "     Nodes=g2 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)\n", 1, "not in its NodeList");
    expect_error(SCONTROL, "JobId=7 JobName=x\n   JobState=RUNNING\n   NodeList=g[1-2]\n"
                 "     Nodes=g1 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)\n", 1,
                 "1 of its 2 hosts have no Nodes= detail line");
    expect_error(SCONTROL, "JobId=7 JobName=x\n   Reason=None\n", 1, "no JobState=");
    expect_error(SCONTROL, "JobId=7 JobName=x\n   JobState=RUNNING\n", 1, "no NodeList=");
    expect_error(SCONTROL, "JobId=7_1 JobName=x\n", 1, "is not a number");
    expect_error(SCONTROL, "JobId=7 JobName=x\n   JobState=RUNNING NodeList=a\n\n"
                 "JobId=8 JobName=y\n   JobState=RUNNING NodeList=b\n\n"
                 "JobId=7 JobName=z\n   JobState=RUNNING NodeList=a\n", 7,
                 "job 7 is named 'z' here but 'x' in bad.txt:1");
    expect_error(SCONTROL, REC("g1", "gpu:1(IDX:0)", "") "\n" "JobId=8 JobName=y\n"
                 "   JobState=RUNNING\n   NodeList=g1\n"
                 "     Nodes=g1 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)\n", 8,
                 "GPU 0 of host 'g1' is held by job 8 and by job 7 (bad.txt:1)");
}

static void test_squeue_errors(void **state)
{
    expect_error(SQUEUE, "1|RUNNING|1|a|x\n2|RUNNING|1\n", 2, "3 '|'-separated fields");
    expect_error(SQUEUE, "4242_1|RUNNING|1|a|x\n", 1, "use %A");
    expect_error(SQUEUE, "1|RUNNING|2|a|x\n", 1, "2 nodes but its node list has 1");
    expect_error(SQUEUE, "1|RUNNING|x|a|x\n", 1, "node count 'x' is not a number");
    expect_error(SQUEUE, "1|running|1|a|x\n", 1, "not a Slurm job state");
    expect_error(SQUEUE, "1|RUNNING|1|a b|x\n", 1, "not allowed in a host name");
    expect_error(SQUEUE, "1|RUNNING|1|a|x\x01y\n", 1, "control character");
    expect_error(SQUEUE, "1|RUNNING|2|a,a|x\n", 1, "host 'a' listed twice");
    expect_error(SQUEUE, "{\"jobs\": [\n  {\"job_id\": 1,}\n]}\n", 2, "");
    expect_error(SQUEUE, "{\"nojobs\": []}", 1, "no \"jobs\" array");
    expect_error(SQUEUE, "{\"jobs\": [\n{\"job_id\": 1, \"job_state\": \"RUNNING\","
                 " \"nodes\": \"a\"},\n{\"job_id\": 2, \"job_state\": [\"RUNNING\"],"
                 " \"nodes\": \"b[1-2]\", \"gres_detail\": [\"gpu:1(IDX:0)\"]}]}", 3,
                 "job 2: \"gres_detail\" is not an array of one string per node");
    expect_error(SQUEUE, "{\"jobs\": [{\"job_id\": 1, \"job_state\": [\"RUNNING\"], "
                 "\"nodes\": \"a\", \"node_count\": {\"set\": true, \"number\": 2}}]}", 1,
                 "node_count 2");
}

static void test_csv_errors(void **state)
{
    expect_error(CSV, "job,host\n1,a\n", 1, "missing column 'gpu'");
    expect_error(CSV, "job,host,gpu\n1,a,x\n", 2, "not a GPU index");
    expect_error(CSV, "job,host,gpu\n1,a,1024\n", 2, "not a GPU index");
    expect_error(CSV, "job,host,gpu\n1,a b,1\n", 2, "not a host name");
    expect_error(CSV, "job,host,gpu\n1,a,1\n2,b,1\n1,a,1\n", 4, "GPU 1 of host 'a' listed twice");
    expect_error(CSV, "job,host,gpu\n1,a,1\n2,a,1\n", 3, "held by job 2 and by job 1");
    expect_error(CSV, "job,name,host,gpu\n1,x,a,1\n1,y,a,2\n", 3, "named 'x' on line 2");
    expect_error(CSV, "job,host,gpu\n,a,1\n", 2, "job id");
    expect_error(CSV, "job,host,gpu\n1,a\n", 2, "2 fields");
    expect_error(CSV, "", 1, "empty file");
}

static void test_hostile_bounded(void **state)
{
    /* a node list of 10^9 hosts, a GRES index far out, a huge bracket: errors
     * found before anything large is allocated */
    expect_error(SQUEUE, "1|RUNNING|1|n[0-999]m[0-999]k[0-999]|x\n", 1, "more than");
    expect_error(SCONTROL, REC("n[0-99999]", "gpu:1(IDX:0)", ""), 6, "more than 65536");
    /* many hosts with 1024 GPUs each: the row bound holds */
    char *big = malloc(1 << 16);
    snprintf(big, 1 << 16, "JobId=7 JobName=x\n   JobState=RUNNING\n   NodeList=n[0-1100]\n"
             "     Nodes=n[0-1100] CPU_IDs=0 Mem=0 GRES=gpu:1024(IDX:0-1023)\n");
    expect_error(SCONTROL, big, 4, "more than 1048576");
    free(big);
}

/* A job id holding a NUL (or another byte no name may hold) is refused at
 * its line; before, two ids equal up to the NUL were compared past the end
 * of the shorter one (found by fuzz_slurm). */
static void test_csv_nul_in_id(void **state)
{
    (void)state;
    static const char csv[] = "job,name,host,gpu\n4242,a,gpu-01,1\n4242\0\0x,a,gpu-01,2\n";
    pflex_jobmap_t *m = pflex_jobmap_create();
    pflex_error_t err;
    assert_non_null(m);
    assert_int_equal(pflex_jobmap_csv_read_mem(m, csv, sizeof csv - 1, "nul.csv", &err), -1);
    assert_non_null(strstr(err.text, "nul.csv:3:"));
    pflex_jobmap_destroy(m);
}

/* The three inputs a fuzz_slurm run saved as crashes (now in its corpus,
 * fuzz/corpus/fuzz_slurm/, and read from there so that this test and the
 * fuzzer replay the same bytes).  As for the fuzzer, the first byte picks
 * the reader (0 squeue, 1 scontrol) and the rest is its input.  Each reads
 * cleanly to the rows below, and the CSV written from them reads back to
 * the same rows (what the fuzz target checks). */
struct want_row {
    const char *job, *name, *host;
    int gpu;
};

static void expect_corpus_rows(const char *file, const struct want_row *want, size_t nwant)
{
    char path[256];
    snprintf(path, sizeof path, "fuzz/corpus/fuzz_slurm/%s", file);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 14];
    size_t n = fread(buf, 1, sizeof buf, f);
    assert_int_equal(ferror(f), 0);
    fclose(f);
    assert_true(n > 1 && n < sizeof buf);
    assert_true(buf[0] == 0 || buf[0] == 1);
    pflex_jobmap_t *m = pflex_jobmap_create(), *back = pflex_jobmap_create();
    pflex_error_t err;
    assert_non_null(m);
    assert_non_null(back);
    int rc = buf[0] == 0 ? pflex_slurm_squeue_read_mem(m, buf + 1, n - 1, file, &err)
                         : pflex_slurm_scontrol_read_mem(m, buf + 1, n - 1, file, &err);
    if (rc)
        fail_msg("%s: %s", file, err.text);
    const struct pflex_jobmap_row *r, *b;
    long k = pflex_jobmap_rows(m, &r, &err);
    assert_int_equal(k, (long)nwant);
    for (size_t i = 0; i < nwant; i++) {
        assert_string_equal(r[i].job, want[i].job);
        assert_string_equal(r[i].name, want[i].name);
        assert_string_equal(r[i].host, want[i].host);
        assert_int_equal(r[i].gpu, want[i].gpu);
    }
    char *csv = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&csv, &len);
    assert_non_null(mf);
    assert_int_equal(pflex_jobmap_write_csv(r, (size_t)k, mf), 0);
    assert_int_equal(fclose(mf), 0);
    if (pflex_jobmap_csv_read_mem(back, csv, len, "again", &err))
        fail_msg("%s written as CSV: %s", file, err.text);
    assert_int_equal(pflex_jobmap_rows(back, &b, &err), k);
    for (long i = 0; i < k; i++) {
        assert_string_equal(b[i].job, r[i].job);
        assert_string_equal(b[i].name, r[i].name);
        assert_string_equal(b[i].host, r[i].host);
        assert_int_equal(b[i].gpu, r[i].gpu);
    }
    free(csv);
    pflex_jobmap_destroy(back);
    pflex_jobmap_destroy(m);
}

/* scontrol records with a run of NULs inside a value: the JobId behind the
 * NULs is no key (the key is "Dea\0...\1JobId"), so the record stays job
 * 4243, and its second JobName, holding the byte 0xff, is the one kept. */
static void test_corpus_scontrol_nul_run(void **state)
{
    (void)state;
    struct want_row w[24];
    size_t n = 0;
    for (int g = 0; g < 16; g++)
        w[n++] = (struct want_row){"4242", "llama-8b pretrain", g < 8 ? "gpu-01" : "gpu-02", g % 8};
    for (int g = 0; g < 8; g++)
        w[n++] = (struct want_row){"4243", "ddpdline=N\xff/A", g < 4 ? "gpu-03" : "gpu-04", g};
    expect_corpus_rows("scontrol-nul-run", w, n);
}

/* A one-line scontrol record whose name holds the byte 0xdb and whose
 * "Requeue" key is mangled: the name is kept as it is, GPUs by host. */
static void test_corpus_scontrol_byte_in_name(void **state)
{
    (void)state;
    static const struct want_row w[] = {
        {"5001", "ddp smoke te\xdbt", "node1-ib", 0}, {"5001", "ddp smoke te\xdbt", "node1-ib", 2},
        {"5001", "ddp smoke te\xdbt", "node3-ib", 1}, {"5001", "ddp smoke te\xdbt", "node3-ib", 3},
    };
    expect_corpus_rows("scontrol-byte-in-name", w, sizeof w / sizeof *w);
}

/* squeue text: a name holding four 0xff bytes, a pending job (no hosts, no
 * rows), and a name holding the separator '|' (the name is the last field,
 * so it keeps the rest of the line). */
static void test_corpus_squeue_bytes_in_name(void **state)
{
    (void)state;
    static const struct want_row w[] = {
        {"4242", "llama-8b p\xff\xff\xff\xff" "ain", "gpu-01", -1},
        {"4242", "llama-8b p\xff\xff\xff\xff" "ain", "gpu-02", -1},
        {"4243", "moe-ft", "gpu-03", -1},
        {"4243", "moe-ft", "gpu-04", -1},
        {"4245", "quick|eval", "gpu-05", -1},
    };
    expect_corpus_rows("squeue-bytes-in-name", w, sizeof w / sizeof *w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostlist),
        cmocka_unit_test(test_scontrol_detail),
        cmocka_unit_test(test_scontrol_oneliner),
        cmocka_unit_test(test_squeue_text_and_merge),
        cmocka_unit_test(test_squeue_json),
        cmocka_unit_test(test_csv_round_trip),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_rows_sorted_numerically),
        cmocka_unit_test(test_scontrol_errors),
        cmocka_unit_test(test_squeue_errors),
        cmocka_unit_test(test_csv_errors),
        cmocka_unit_test(test_hostile_bounded),
        cmocka_unit_test(test_csv_nul_in_id),
        cmocka_unit_test(test_corpus_scontrol_nul_run),
        cmocka_unit_test(test_corpus_scontrol_byte_in_name),
        cmocka_unit_test(test_corpus_squeue_bytes_in_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
