/* etcd.c — an etcd v3 client over the JSON gateway (pflex/net/etcd.h).
 *
 * Every call is one POST of a JSON body to /v3/<service>/<method> on the
 * member in use, over one kept connection (pflex/net/http.h's client); a
 * request that gets no answer (refused, reset, timed out) or a 5xx is
 * tried on the next member, each at most once.  Keys and values are
 * base64 in both directions; etcd writes int64s as strings and leaves out
 * fields at their zero value (a missing "succeeded" is false, a missing
 * "TTL" 0, a missing "kvs" none).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "pflex/net/etcd.h"
#include "pflex/net/http.h"

#define MAX_MEMBERS 16

struct pflex_etcd {
    char *url[MAX_MEMBERS];
    size_t n, cur;
    pflex_http_client_t *http;
    uint64_t cluster_id;        /* the last answer's header.cluster_id (0: none yet) */
    int64_t revision;           /* the last answer's header.revision (0: none yet) */
};

/* ---- base64 ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *pflex_etcd_b64_encode(const void *p, size_t n)
{
    const unsigned char *s = p;
    char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        *o++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? b64[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static int b64_val(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

char *pflex_etcd_b64_decode(const char *s, size_t *len)
{
    size_t n = strlen(s);
    if (n % 4)
        return NULL;
    char *out = malloc(n / 4 * 3 + 1);
    if (!out)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i += 4) {
        int last = i + 4 == n;
        int a = b64_val(s[i]), b = b64_val(s[i + 1]);
        int c = last && s[i + 2] == '=' ? -2 : b64_val(s[i + 2]);
        int d = last && s[i + 3] == '=' ? -2 : b64_val(s[i + 3]);
        if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2)) {
            free(out);
            return NULL;
        }
        unsigned v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)(c < 0 ? 0 : c) << 6
                     | (unsigned)(d < 0 ? 0 : d);
        out[m++] = (char)(v >> 16);
        if (c >= 0)
            out[m++] = (char)(v >> 8 & 255);
        if (d >= 0)
            out[m++] = (char)(v & 255);
    }
    out[m] = '\0';
    *len = m;
    return out;
}

/* ---- the handle ---- */

int pflex_etcd_create(const struct pflex_etcd_opts *o, pflex_etcd_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!o->endpoints || !*o->endpoints)
        return pflex_error_set(err, "etcd: no endpoint");
    pflex_etcd_t *e = calloc(1, sizeof *e);
    if (!e)
        return pflex_error_set(err, "out of memory");
    const char *p = o->endpoints;
    while (*p) {
        size_t l = strcspn(p, ",");
        if (l) {
            if (e->n == MAX_MEMBERS) {
                pflex_etcd_destroy(e);
                return pflex_error_set(err, "etcd: more than %d endpoints", MAX_MEMBERS);
            }
            if ((l < 8 || strncmp(p, "http://", 7)) && (l < 9 || strncmp(p, "https://", 8))) {
                pflex_etcd_destroy(e);
                return pflex_error_set(err, "etcd: endpoint '%.*s' is not an http:// or https:// URL",
                                       (int)(l > 100 ? 100 : l), p);
            }
            while (l && p[l - 1] == '/')
                l--;
            if (!(e->url[e->n++] = strndup(p, l))) {
                pflex_etcd_destroy(e);
                return pflex_error_set(err, "out of memory");
            }
        }
        p += l;
        while (*p == ',' || *p == '/')
            p++;
    }
    if (!e->n) {
        pflex_etcd_destroy(e);
        return pflex_error_set(err, "etcd: no endpoint");
    }
    struct pflex_http_client_opts ho = {.parallel = 1, .keep_conns = (unsigned)e->n,
                                        .timeout_s = o->timeout_s > 0 ? o->timeout_s : 1,
                                        .max_response = 64u << 20, .accept = "application/json",
                                        .ca_file = o->ca_file};
    if (pflex_http_client_create(&ho, &e->http, err) < 0) {
        pflex_etcd_destroy(e);
        return -1;
    }
    *out = e;
    return 0;
}

void pflex_etcd_destroy(pflex_etcd_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++)
        free(e->url[i]);
    pflex_http_client_destroy(e->http);
    free(e);
}

uint64_t pflex_etcd_cluster_id(const pflex_etcd_t *e)
{
    return e ? e->cluster_id : 0;
}

int64_t pflex_etcd_revision(const pflex_etcd_t *e)
{
    return e ? e->revision : 0;
}

const char *pflex_etcd_endpoint(const pflex_etcd_t *e)
{
    return e->url[e->cur];
}

void pflex_etcd_kvs_fini(struct pflex_etcd_kvs *k)
{
    for (size_t i = 0; k && i < k->n; i++) {
        free(k->kv[i].key);
        free(k->kv[i].value);
    }
    if (k) {
        free(k->kv);
        k->kv = NULL;
        k->n = 0;
    }
}

/* An int64 as etcd writes it (a string) or as a number; 0 when absent. */
static int64_t i64(const json_t *v)
{
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    return 0;
}

/* POST body (stolen) to path on the members, from the one in use on: the
 * answer's JSON object, or NULL with err. */
static json_t *call(pflex_etcd_t *e, const char *path, json_t *body, pflex_error_t *err)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        pflex_error_set(err, "out of memory");
        return NULL;
    }
    json_t *out = NULL;
    char why[300] = "";
    for (size_t k = 0; k < e->n && !out; k++) {
        size_t m = (e->cur + k) % e->n;
        char url[600];
        snprintf(url, sizeof url, "%s%s", e->url[m], path);
        struct pflex_http_call c = {.method = "POST", .url = url, .body = text};
        pflex_error_t e2;
        if (pflex_http_client_run(e->http, &c, 1, NULL, NULL, &e2) < 0) {
            free(c.resp);
            pflex_error_set(err, "etcd %s: %s", path, e2.text);
            break;
        }
        if (!c.ok || c.status >= 500) {
            /* no answer, or a member that cannot serve (no leader): next */
            snprintf(why, sizeof why, "%s: %s", e->url[m],
                     c.ok ? (c.resp ? c.resp : "HTTP 5xx") : c.error);
            free(c.resp);
            continue;
        }
        e->cur = m;
        json_error_t je;
        json_t *j = json_loadb(c.resp ? c.resp : "", c.resp_len, 0, &je);
        if (c.status != 200 || !json_is_object(j)) {
            const char *msg = json_string_value(json_object_get(j, "message"));
            if (!msg)
                msg = json_string_value(json_object_get(j, "error"));
            pflex_error_set(err, "etcd %s %s: HTTP %ld: %.150s", e->url[m], path, c.status,
                            msg ? msg : c.resp ? c.resp : "");
            json_decref(j);
            free(c.resp);
            free(text);
            return NULL;
        }
        free(c.resp);
        /* a uint64 as a decimal string: kept exact (a new cluster, rebuilt
         * after its data was lost, has a new id and starts its revisions over) */
        const char *cid = json_string_value(json_object_get(json_object_get(j, "header"),
                                                            "cluster_id"));
        if (cid)
            e->cluster_id = strtoull(cid, NULL, 10);
        int64_t rev = i64(json_object_get(json_object_get(j, "header"), "revision"));
        if (rev > 0)
            e->revision = rev;
        out = j;
    }
    free(text);
    if (!out && why[0])
        pflex_error_set(err, "etcd %s: no member answered (last: %.200s)", path, why);
    return out;
}

/* A JSON string of base64(p, n), or NULL out of memory. */
static json_t *b64_json(const void *p, size_t n)
{
    char *s = pflex_etcd_b64_encode(p, n);
    json_t *j = s ? json_string(s) : NULL;
    free(s);
    return j;
}

/* A string one past every key that starts with prefix: the range end of a
 * prefix (all bytes 0xff: the whole keyspace, "\0"). */
static json_t *prefix_end(const char *key)
{
    size_t n = strlen(key);
    char *end = malloc(n + 1);
    if (!end)
        return NULL;
    memcpy(end, key, n + 1);
    while (n && (unsigned char)end[n - 1] == 0xff)
        n--;
    json_t *j;
    if (!n) {
        char z = 0;
        j = b64_json(&z, 1);
    } else {
        end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
        j = b64_json(end, n);
    }
    free(end);
    return j;
}

static int lease_json(json_t *o, const char *name, int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    return json_object_set_new(o, name, json_string(b));
}

int pflex_etcd_lease_grant(pflex_etcd_t *e, double ttl_s, int64_t *id, double *granted_s,
                           pflex_error_t *err)
{
    long long ttl = (long long)ttl_s;
    if (ttl < ttl_s)
        ttl++;
    if (ttl < 1)
        ttl = 1;
    json_t *r = call(e, "/v3/lease/grant", json_pack("{s:I}", "TTL", (json_int_t)ttl), err);
    if (!r)
        return -1;
    *id = i64(json_object_get(r, "ID"));
    double g = (double)i64(json_object_get(r, "TTL"));
    json_decref(r);
    if (!*id || !(g > 0))
        return pflex_error_set(err, "etcd /v3/lease/grant: no lease in the answer");
    if (granted_s)
        *granted_s = g;
    return 0;
}

int pflex_etcd_lease_keepalive(pflex_etcd_t *e, int64_t id, double *ttl_s, pflex_error_t *err)
{
    json_t *b = json_object();
    if (!b || lease_json(b, "ID", id) < 0) {
        json_decref(b);
        return pflex_error_set(err, "out of memory");
    }
    json_t *r = call(e, "/v3/lease/keepalive", b, err);
    if (!r)
        return -1;
    /* a stream's one message: {"result": {...}} (or {"error": ...}) */
    json_t *res = json_object_get(r, "result");
    if (!json_is_object(res)) {
        json_t *er = json_object_get(r, "error");
        const char *m = json_string_value(json_object_get(er, "message"));
        pflex_error_set(err, "etcd /v3/lease/keepalive: %s", m ? m : "no result in the answer");
        json_decref(r);
        return -1;
    }
    *ttl_s = (double)i64(json_object_get(res, "TTL"));
    json_decref(r);
    return 0;
}

int pflex_etcd_lease_revoke(pflex_etcd_t *e, int64_t id, pflex_error_t *err)
{
    json_t *b = json_object();
    if (!b || lease_json(b, "ID", id) < 0) {
        json_decref(b);
        return pflex_error_set(err, "out of memory");
    }
    json_t *r = call(e, "/v3/lease/revoke", b, err);
    json_decref(r);
    return r ? 0 : -1;
}

/* {"key": b64, "value": b64[, "lease": id]} */
static json_t *put_req(const char *key, const void *value, size_t len, int64_t lease)
{
    json_t *o = json_object();
    if (!o || json_object_set_new(o, "key", b64_json(key, strlen(key))) < 0
        || json_object_set_new(o, "value", b64_json(value, len)) < 0 || (lease && lease_json(o, "lease", lease) < 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int pflex_etcd_put(pflex_etcd_t *e, const char *key, const void *value, size_t len, int64_t lease,
                   pflex_error_t *err)
{
    json_t *b = put_req(key, value, len, lease);
    if (!b)
        return pflex_error_set(err, "out of memory");
    json_t *r = call(e, "/v3/kv/put", b, err);
    json_decref(r);
    return r ? 0 : -1;
}

/* A range answer's kvs into out. */
static int read_kvs(const json_t *r, struct pflex_etcd_kvs *out, pflex_error_t *err)
{
    pflex_etcd_kvs_fini(out);
    out->revision = i64(json_object_get(json_object_get(r, "header"), "revision"));
    json_t *kvs = json_object_get(r, "kvs");
    if (!kvs)
        return 0;
    if (!json_is_array(kvs))
        return pflex_error_set(err, "etcd: 'kvs' is not an array");
    if (!(out->kv = calloc(json_array_size(kvs) + 1, sizeof *out->kv)))
        return pflex_error_set(err, "out of memory");
    size_t i;
    json_t *kv;
    json_array_foreach(kvs, i, kv) {
        const char *k = json_string_value(json_object_get(kv, "key"));
        const char *v = json_string_value(json_object_get(kv, "value"));
        struct pflex_etcd_kv *o = &out->kv[out->n];
        if (!k || !(o->key = pflex_etcd_b64_decode(k, &o->key_len))
            || !(o->value = pflex_etcd_b64_decode(v ? v : "", &o->value_len))) {
            free(o->key);
            o->key = NULL;
            return pflex_error_set(err, "etcd: kvs[%zu]: a key or value that is not base64", i);
        }
        o->create_revision = i64(json_object_get(kv, "create_revision"));
        o->mod_revision = i64(json_object_get(kv, "mod_revision"));
        o->version = i64(json_object_get(kv, "version"));
        o->lease = i64(json_object_get(kv, "lease"));
        out->n++;
    }
    return 0;
}

/* {"key": b64[, "range_end": b64][, "min_mod_revision": rev]} */
static json_t *range_req(const char *key, int prefix, int64_t min_mod)
{
    json_t *o = json_object();
    if (!o || json_object_set_new(o, "key", b64_json(key, strlen(key))) < 0
        || (prefix && json_object_set_new(o, "range_end", prefix_end(key)) < 0)
        || (min_mod > 0 && lease_json(o, "min_mod_revision", min_mod) < 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int pflex_etcd_range(pflex_etcd_t *e, const char *key, int prefix, int64_t min_mod_revision,
                     struct pflex_etcd_kvs *out, pflex_error_t *err)
{
    pflex_etcd_kvs_fini(out);
    json_t *b = range_req(key, prefix, min_mod_revision);
    if (!b)
        return pflex_error_set(err, "out of memory");
    json_t *r = call(e, "/v3/kv/range", b, err);
    if (!r)
        return -1;
    int rc = read_kvs(r, out, err);
    json_decref(r);
    return rc;
}

int pflex_etcd_delete(pflex_etcd_t *e, const char *key, long *deleted, pflex_error_t *err)
{
    json_t *b = json_pack("{s:o}", "key", b64_json(key, strlen(key)));
    if (!b)
        return pflex_error_set(err, "out of memory");
    json_t *r = call(e, "/v3/kv/deleterange", b, err);
    if (!r)
        return -1;
    if (deleted)
        *deleted = (long)i64(json_object_get(r, "deleted"));
    json_decref(r);
    return 0;
}

/* A transaction: if key's create_revision is rev, success, else failure
 * (either may be NULL: none).  The answer, or NULL with err; *ok whether
 * the compare held. */
static json_t *txn_create_rev(pflex_etcd_t *e, const char *key, int64_t rev, json_t *success, json_t *failure,
                              int *ok, pflex_error_t *err)
{
    json_t *cmp = json_object();
    if (cmp) {
        json_object_set_new(cmp, "key", b64_json(key, strlen(key)));
        json_object_set_new(cmp, "target", json_string("CREATE"));
        json_object_set_new(cmp, "result", json_string("EQUAL"));
        lease_json(cmp, "create_revision", rev);
    }
    json_t *b = json_pack("{s:[o], s:o, s:o}", "compare", cmp, "success", success ? success : json_array(),
                          "failure", failure ? failure : json_array());
    if (!b) {
        pflex_error_set(err, "out of memory");
        return NULL;
    }
    json_t *r = call(e, "/v3/kv/txn", b, err);
    if (r)
        *ok = json_is_true(json_object_get(r, "succeeded"));
    return r;
}

int pflex_etcd_campaign(pflex_etcd_t *e, const char *key, const char *value, int64_t lease,
                        int64_t *rev, struct pflex_etcd_kvs *holder, pflex_error_t *err)
{
    json_t *put = put_req(key, value, strlen(value), lease), *rng = range_req(key, 0, 0);
    if (!put || !rng) {
        json_decref(put);
        json_decref(rng);
        return pflex_error_set(err, "out of memory");
    }
    int won = 0;
    json_t *r = txn_create_rev(e, key, 0, json_pack("[{s:o}]", "request_put", put),
                               json_pack("[{s:o}]", "request_range", rng), &won, err);
    if (!r)
        return -1;
    int rc = 1;
    if (won)
        *rev = i64(json_object_get(json_object_get(r, "header"), "revision"));
    else {
        rc = 0;
        json_t *resp = json_object_get(json_array_get(json_object_get(r, "responses"), 0), "response_range");
        if (holder && read_kvs(resp, holder, err) < 0)
            rc = -1;
    }
    json_decref(r);
    return rc;
}

int pflex_etcd_resign(pflex_etcd_t *e, const char *key, int64_t rev, pflex_error_t *err)
{
    json_t *del = json_pack("[{s:{s:o}}]", "request_delete_range", "key", b64_json(key, strlen(key)));
    if (!del)
        return pflex_error_set(err, "out of memory");
    int ok = 0;
    json_t *r = txn_create_rev(e, key, rev, del, NULL, &ok, err);
    json_decref(r);
    return r ? ok : -1;
}

int pflex_etcd_put_if(pflex_etcd_t *e, const char *guard_key, int64_t guard_rev,
                      const struct pflex_etcd_op *ops, size_t n, pflex_error_t *err)
{
    if (n > 128)
        return pflex_error_set(err, "etcd: %zu puts in one transaction (at most 128)", n);
    json_t *succ = json_array();
    for (size_t i = 0; succ && i < n; i++) {
        json_t *p = put_req(ops[i].key, ops[i].value, ops[i].len, ops[i].lease);
        if (!p || json_array_append_new(succ, json_pack("{s:o}", "request_put", p)) < 0) {
            json_decref(succ);
            succ = NULL;
        }
    }
    if (!succ)
        return pflex_error_set(err, "out of memory");
    int ok = 0;
    json_t *r = txn_create_rev(e, guard_key, guard_rev, succ, NULL, &ok, err);
    json_decref(r);
    return r ? ok : -1;
}
