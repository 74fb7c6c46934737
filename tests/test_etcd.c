/* test_etcd.c — the etcd client (src/lib/net/etcd.c) against a real etcd
 * on loopback, started here in a temporary folder on free ports and killed
 * at the end (every test skips when no etcd binary is installed: Debian's
 * etcd-server): base64 both ways, puts and ranges (a prefix, from a
 * revision on), leases (granted, renewed, revoked, left to lapse), the
 * election's transactions (one winner, a rising fencing token, puts that
 * fail once the guard's holder changed, resign), and a member down in the
 * endpoints list.  Every wait is bounded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/net/etcd.h"
#include "support/etcd_fixture.h"

static int start(void **state)
{
    (void)state;
    return etcd_fixture_start() < 0 ? -1 : 0;
}

static int stop(void **state)
{
    (void)state;
    etcd_fixture_stop();
    return 0;
}

/* A handle on the test's etcd; skips the test without one. */
static pflex_etcd_t *client(void)
{
    if (!etcd_fixture_url()) {
        print_message("etcd is not installed (Debian etcd-server): skipped\n");
        skip();
    }
    pflex_etcd_t *e;
    pflex_error_t err;
    struct pflex_etcd_opts o = {.endpoints = etcd_fixture_url(), .timeout_s = 2};
    assert_int_equal(pflex_etcd_create(&o, &e, &err), 0);
    return e;
}

static void test_base64(void **state)
{
    (void)state;
    static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        char *s = pflex_etcd_b64_encode(plain[i], strlen(plain[i]));
        assert_string_equal(s, coded[i]);
        size_t n;
        char *d = pflex_etcd_b64_decode(s, &n);
        assert_int_equal(n, strlen(plain[i]));
        assert_memory_equal(d, plain[i], n);
        free(s);
        free(d);
    }
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    char *s = pflex_etcd_b64_encode(all, 256);
    size_t n;
    char *d = pflex_etcd_b64_decode(s, &n);
    assert_int_equal(n, 256);
    assert_memory_equal(d, all, 256);
    free(s);
    free(d);
    size_t m;
    assert_null(pflex_etcd_b64_decode("Zm9", &m));
    assert_null(pflex_etcd_b64_decode("Zm=v", &m));
    assert_null(pflex_etcd_b64_decode("Z!9v", &m));
}

static void test_bad_endpoints(void **state)
{
    (void)state;
    pflex_etcd_t *e;
    pflex_error_t err;
    struct pflex_etcd_opts o = {.endpoints = ""};
    assert_int_equal(pflex_etcd_create(&o, &e, &err), -1);
    o.endpoints = "127.0.0.1:2379";
    assert_int_equal(pflex_etcd_create(&o, &e, &err), -1);
    assert_non_null(strstr(err.text, "127.0.0.1:2379"));
    o.endpoints = "http://a:1,,http://b:2/";
    assert_int_equal(pflex_etcd_create(&o, &e, &err), 0);
    assert_string_equal(pflex_etcd_endpoint(e), "http://a:1");
    pflex_etcd_destroy(e);
}

static void test_put_range(void **state)
{
    (void)state;
    pflex_etcd_t *e = client();
    pflex_error_t err;
    struct pflex_etcd_kvs kvs = {0};
    assert_int_equal(pflex_etcd_put(e, "/t/kv/a", "1", 1, 0, &err), 0);
    assert_int_equal(pflex_etcd_put(e, "/t/kv/b", "two\0bytes", 9, 0, &err), 0);
    assert_int_equal(pflex_etcd_put(e, "/t/kw", "x", 1, 0, &err), 0);
    assert_int_equal(pflex_etcd_range(e, "/t/kv/b", 0, 0, &kvs, &err), 0);
    assert_int_equal(kvs.n, 1);
    assert_int_equal(kvs.kv[0].value_len, 9);
    assert_memory_equal(kvs.kv[0].value, "two\0bytes", 9);
    int64_t rev_b = kvs.kv[0].mod_revision;
    assert_true(rev_b > 0 && kvs.revision >= rev_b);
    /* a prefix: /t/kv/ holds a and b, not /t/kw */
    assert_int_equal(pflex_etcd_range(e, "/t/kv/", 1, 0, &kvs, &err), 0);
    assert_int_equal(kvs.n, 2);
    assert_string_equal(kvs.kv[0].key, "/t/kv/a");
    assert_string_equal(kvs.kv[1].key, "/t/kv/b");
    /* from a revision on: only what changed since */
    assert_int_equal(pflex_etcd_put(e, "/t/kv/a", "3", 1, 0, &err), 0);
    assert_int_equal(pflex_etcd_range(e, "/t/kv/", 1, rev_b + 1, &kvs, &err), 0);
    assert_int_equal(kvs.n, 1);
    assert_string_equal(kvs.kv[0].key, "/t/kv/a");
    assert_string_equal(kvs.kv[0].value, "3");
    assert_true(kvs.kv[0].version == 2);
    /* absent: no keys, not an error */
    assert_int_equal(pflex_etcd_range(e, "/t/none", 0, 0, &kvs, &err), 0);
    assert_int_equal(kvs.n, 0);
    long del = 0;
    assert_int_equal(pflex_etcd_delete(e, "/t/kv/a", &del, &err), 0);
    assert_int_equal(del, 1);
    assert_int_equal(pflex_etcd_range(e, "/t/kv/", 1, 0, &kvs, &err), 0);
    assert_int_equal(kvs.n, 1);
    pflex_etcd_kvs_fini(&kvs);
    pflex_etcd_destroy(e);
}

static void test_leases(void **state)
{
    (void)state;
    pflex_etcd_t *e = client();
    pflex_error_t err;
    int64_t id = 0;
    double ttl = 0;
    assert_int_equal(pflex_etcd_lease_grant(e, 5, &id, &ttl, &err), 0);
    assert_true(id != 0);
    assert_true(ttl == 5);
    assert_int_equal(pflex_etcd_put(e, "/t/lease/k", "v", 1, id, &err), 0);
    struct pflex_etcd_kvs kvs = {0};
    assert_int_equal(pflex_etcd_range(e, "/t/lease/k", 0, 0, &kvs, &err), 0);
    assert_int_equal(kvs.n, 1);
    assert_true(kvs.kv[0].lease == id);
    double left = 0;
    assert_int_equal(pflex_etcd_lease_keepalive(e, id, &left, &err), 0);
    assert_true(left == 5);
    /* revoked: its key goes, and a renewal says the lease is gone */
    assert_int_equal(pflex_etcd_lease_revoke(e, id, &err), 0);
    assert_int_equal(pflex_etcd_range(e, "/t/lease/k", 0, 0, &kvs, &err), 0);
    assert_int_equal(kvs.n, 0);
    assert_int_equal(pflex_etcd_lease_keepalive(e, id, &left, &err), 0);
    assert_true(left == 0);
    /* below etcd's minimum TTL the server raises it (2 s by default) */
    assert_int_equal(pflex_etcd_lease_grant(e, 0.3, &id, &ttl, &err), 0);
    assert_true(ttl >= 1);
    pflex_etcd_kvs_fini(&kvs);
    pflex_etcd_destroy(e);
}

static void test_election(void **state)
{
    (void)state;
    pflex_etcd_t *a = client(), *b = client();
    pflex_error_t err;
    int64_t la, lb, ra = 0, rb = 0;
    double ttl;
    const char *key = "/t/elect/leader";
    assert_int_equal(pflex_etcd_lease_grant(a, 2, &la, &ttl, &err), 0);
    assert_int_equal(pflex_etcd_lease_grant(b, 2, &lb, &ttl, &err), 0);
    struct pflex_etcd_kvs holder = {0};
    assert_int_equal(pflex_etcd_campaign(a, key, "ctl-a", la, &ra, &holder, &err), 1);
    assert_true(ra > 0);
    /* the second loses and sees who holds it, with the token */
    assert_int_equal(pflex_etcd_campaign(b, key, "ctl-b", lb, &rb, &holder, &err), 0);
    assert_int_equal(holder.n, 1);
    assert_string_equal(holder.kv[0].value, "ctl-a");
    assert_true(holder.kv[0].create_revision == ra);
    assert_true(holder.kv[0].lease == la);
    /* the holder's guarded puts go through; a stale token's do not */
    struct pflex_etcd_op ops[2] = {{"/t/elect/state/x", "1", 1, 0}, {"/t/elect/state/y", "2", 1, 0}};
    assert_int_equal(pflex_etcd_put_if(a, key, ra, ops, 2, &err), 1);
    assert_int_equal(pflex_etcd_put_if(b, key, ra - 1, ops, 1, &err), 0);
    /* only the holder can resign */
    assert_int_equal(pflex_etcd_resign(b, key, ra + 1, &err), 0);
    assert_int_equal(pflex_etcd_resign(a, key, ra, &err), 1);
    assert_int_equal(pflex_etcd_campaign(b, key, "ctl-b", lb, &rb, &holder, &err), 1);
    assert_true(rb > ra);
    assert_int_equal(pflex_etcd_put_if(a, key, ra, ops, 2, &err), 0);
    /* b's lease left to lapse (no renewal): its key goes, a wins again
     * with a higher token still; bounded at 10 s */
    double ttl_a;
    int won = 0;
    int64_t ra2 = 0;
    for (int i = 0; i < 100 && !won; i++) {
        assert_int_equal(pflex_etcd_lease_keepalive(a, la, &ttl_a, &err), 0);
        assert_true(ttl_a > 0);
        won = pflex_etcd_campaign(a, key, "ctl-a", la, &ra2, &holder, &err);
        assert_true(won >= 0);
        if (!won)
            etcd_fixture_sleep(0.1);
    }
    assert_int_equal(won, 1);
    assert_true(ra2 > rb);
    assert_int_equal(pflex_etcd_lease_keepalive(b, lb, &ttl, &err), 0);
    assert_true(ttl == 0);
    pflex_etcd_kvs_fini(&holder);
    pflex_etcd_destroy(a);
    pflex_etcd_destroy(b);
}

static void test_member_down(void **state)
{
    (void)state;
    if (!etcd_fixture_url())
        skip();
    const char *url = etcd_fixture_url();
    int dead_port = etcd_fixture_dead_port();
    char eps[160];
    pflex_etcd_t *e;
    pflex_error_t err;
    /* the first member refuses: the next answers, and stays in use */
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d,%s", dead_port, url);
    struct pflex_etcd_opts o = {.endpoints = eps, .timeout_s = 1};
    assert_int_equal(pflex_etcd_create(&o, &e, &err), 0);
    assert_int_equal(pflex_etcd_put(e, "/t/down", "1", 1, 0, &err), 0);
    assert_string_equal(pflex_etcd_endpoint(e), url);
    pflex_etcd_destroy(e);
    /* none answers: an error that says so */
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d", dead_port);
    assert_int_equal(pflex_etcd_create(&o, &e, &err), 0);
    assert_int_equal(pflex_etcd_put(e, "/t/down", "1", 1, 0, &err), -1);
    assert_non_null(strstr(err.text, "no member answered"));
    pflex_etcd_destroy(e);
}

/* A cluster created anew (its data lost, the documented rebuild) has a
 * new cluster id, which the client reads from every answer's header. */
static void test_new_cluster_id(void **state)
{
    (void)state;
    pflex_etcd_t *e = client();
    pflex_error_t err;
    assert_true(pflex_etcd_cluster_id(e) == 0);     /* no answer yet */
    assert_int_equal(pflex_etcd_put(e, "/t/cid", "1", 1, 0, &err), 0);
    uint64_t first = pflex_etcd_cluster_id(e);
    assert_true(first != 0);
    pflex_etcd_destroy(e);
    etcd_fixture_stop();
    assert_int_equal(etcd_fixture_start(), 0);
    e = client();
    assert_int_equal(pflex_etcd_put(e, "/t/cid", "1", 1, 0, &err), 0);
    assert_true(pflex_etcd_cluster_id(e) != 0);
    assert_true(pflex_etcd_cluster_id(e) != first);
    pflex_etcd_destroy(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_bad_endpoints),
        cmocka_unit_test(test_put_range),
        cmocka_unit_test(test_leases),
        cmocka_unit_test(test_election),
        cmocka_unit_test(test_member_down),
        cmocka_unit_test(test_new_cluster_id),
    };
    return cmocka_run_group_tests_name("etcd", tests, start, stop);
}
