/* pflex/net/etcd.h — a small etcd v3 client over its JSON gateway (etcd 3.4's
 * POST /v3/...; keys and values travel base64-encoded, 64-bit numbers as
 * strings), on libcurl and Jansson: leases, puts, ranges, and the
 * transactions a leader election needs (create a key when absent; act only
 * while a key's create_revision is still the one that won).
 *
 * A handle talks to one of a cluster's members at a time, and moves to the
 * next one (in the order given) when a request gets no answer from it: a
 * member that is down costs one refused connection or one timeout, and a
 * cluster that keeps its quorum keeps answering.  A handle is used by one
 * thread at a time.  Revisions and lease ids are etcd's int64s; TTLs are
 * whole seconds on the server's side (etcd raises any TTL below its minimum,
 * 2 s at its default election timeout, to that minimum).
 */
#ifndef PFLEX_ETCD_H
#define PFLEX_ETCD_H

#include <stddef.h>
#include <stdint.h>
#include "pflex/util/error.h"

typedef struct pflex_etcd pflex_etcd_t;

struct pflex_etcd_opts {
    const char *endpoints;      /* "http://10.0.0.1:2379,http://10.0.0.2:2379" (up to 16) */
    double timeout_s;           /* each request, each member; <= 0: 1 s */
    const char *ca_file;        /* PEM bundle for https:// members; NULL: the system's */
};

/* One key as a range returns it; key and value are malloc'd and
 * NUL-terminated (a value may hold NULs: value_len says). */
struct pflex_etcd_kv {
    char *key, *value;
    size_t key_len, value_len;
    int64_t create_revision, mod_revision, version, lease;
};

/* What a range read: n keys in key order, and the store's revision as of
 * the read.  fini frees them. */
struct pflex_etcd_kvs {
    struct pflex_etcd_kv *kv;
    size_t n;
    int64_t revision;
};
void pflex_etcd_kvs_fini(struct pflex_etcd_kvs *k);

/* 0, or -1 with err (no endpoint, one that is not http:// or https://,
 * out of memory).  Nothing is sent until the first request. */
int pflex_etcd_create(const struct pflex_etcd_opts *o, pflex_etcd_t **out, pflex_error_t *err);
void pflex_etcd_destroy(pflex_etcd_t *e);
/* The member the next request goes to first. */
const char *pflex_etcd_endpoint(const pflex_etcd_t *e);
/* The cluster id of the last answer's header (0: none yet): a cluster
 * created anew has another, and its revisions start over. */
uint64_t pflex_etcd_cluster_id(const pflex_etcd_t *e);
/* The store's revision in the last answer's header (0: none yet); it
 * never goes back in a cluster that kept its data. */
int64_t pflex_etcd_revision(const pflex_etcd_t *e);

/* A lease of ttl_s seconds (rounded up to a whole second): its id, and the
 * TTL the server granted (s). */
int pflex_etcd_lease_grant(pflex_etcd_t *e, double ttl_s, int64_t *id, double *granted_s,
                           pflex_error_t *err);
/* Renew a lease to its full TTL: *ttl_s the TTL it now has, 0 when the
 * lease no longer exists (expired or revoked; not an error). */
int pflex_etcd_lease_keepalive(pflex_etcd_t *e, int64_t id, double *ttl_s, pflex_error_t *err);
/* End a lease now: the keys attached to it are deleted. */
int pflex_etcd_lease_revoke(pflex_etcd_t *e, int64_t id, pflex_error_t *err);

/* key = value (len bytes), attached to lease (0: none). */
int pflex_etcd_put(pflex_etcd_t *e, const char *key, const void *value, size_t len, int64_t lease,
                   pflex_error_t *err);
/* The key (prefix 0) or every key that starts with it (prefix 1), those
 * modified at or after min_mod_revision only (0: all), into *out (the
 * caller finis it; emptied first). */
int pflex_etcd_range(pflex_etcd_t *e, const char *key, int prefix, int64_t min_mod_revision,
                     struct pflex_etcd_kvs *out, pflex_error_t *err);
/* Delete a key; *deleted (may be NULL) how many were. */
int pflex_etcd_delete(pflex_etcd_t *e, const char *key, long *deleted, pflex_error_t *err);

/* The election: create key = value under lease if no such key exists (a
 * transaction comparing its create_revision with 0).  1: created, *rev its
 * create_revision (rising with every new holder: a fencing token); 0: held
 * already, *holder (may be NULL) the key as it is; -1 with err. */
int pflex_etcd_campaign(pflex_etcd_t *e, const char *key, const char *value, int64_t lease,
                        int64_t *rev, struct pflex_etcd_kvs *holder, pflex_error_t *err);
/* Delete key if its create_revision is still rev: 1 deleted, 0 not (held
 * by another, or gone), -1 with err. */
int pflex_etcd_resign(pflex_etcd_t *e, const char *key, int64_t rev, pflex_error_t *err);

/* Puts made only while guard_key's create_revision is guard_rev (one
 * transaction, all or none; at most 128, etcd's default limit). */
struct pflex_etcd_op {
    const char *key;
    const void *value;
    size_t len;
    int64_t lease;              /* 0: none */
};
/* 1 all put, 0 none (the guard no longer holds), -1 with err. */
int pflex_etcd_put_if(pflex_etcd_t *e, const char *guard_key, int64_t guard_rev,
                      const struct pflex_etcd_op *ops, size_t n, pflex_error_t *err);

/* Standard base64 with padding (exposed for tests): the encoding of n
 * bytes into a malloc'd string, NULL out of memory; the decoding into a
 * malloc'd NUL-terminated buffer (*len its length), NULL on a malformed
 * string or out of memory. */
char *pflex_etcd_b64_encode(const void *p, size_t n);
char *pflex_etcd_b64_decode(const char *s, size_t *len);

#endif
