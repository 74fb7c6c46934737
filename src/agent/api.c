/* api.c — the agent's HTTP API.
 *
 *   GET    /metrics                   Prometheus text (dcgm-exporter names + pflex_*)
 *   GET    /v1/status                 GPUs, limits, ranges, leases, jobs (JSON)
 *   PUT    /v1/caps                   set caps, each with a lease
 *   DELETE /v1/caps[?gpu=I|UUID][&job=J]  restore now (all by default)
 *   PUT    /v1/jobs/{job}             {"gpus": [0, 1]}: map a job to GPUs
 *   DELETE /v1/jobs/{job}             forget a job
 *   POST   /v1/jobs/{job}/progress    {"tokens_total": N} or {"tokens": n}
 *   DELETE /v1/fence                  forget the fencing token (etcd rebuilt)
 *
 * No request waits on the driver: the node's lock is taken with a
 * deadline; past it, /metrics and /v1/status get the last body rendered
 * and the rest 503 (the driver thread holds the lock through a hung
 * NVML call).
 *
 * Writes need "Authorization: Bearer TOKEN" (the token file's); reads too
 * with --auth-reads.  A cap request is checked whole before anything is
 * set: one bad entry and nothing changes.  A cap request's "fence" (a
 * standby controller's leadership token) below the highest seen is a
 * deposed leader's: 409, nothing changes.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "agent/agent.h"
#include "lib/util/clock.h"
#include "pflex/net/prom.h"

#define MAX_JSON_BODY 65536

static int authorised(struct agent *a, const struct pflex_http_request *req,
                      struct pflex_http_response *resp)
{
    const char *h = pflex_http_header(req, "Authorization");
    if (!a->have_token) {
        a->auth_failures++;
        pflex_http_respond_error(resp, 401, "this agent has no --token-file: it takes no "
                                 "writes");
        resp->www_authenticate = 1;
        return 0;
    }
    /* RFC 7235: the scheme is case-insensitive ("bearer" too), then
     * one or more spaces. */
    if (!h || strncasecmp(h, "Bearer ", 7)) {
        a->auth_failures++;
        pflex_http_respond_error(resp, 401, "missing 'Authorization: Bearer TOKEN'");
        resp->www_authenticate = 1;
        return 0;
    }
    h += 7;
    while (*h == ' ')
        h++;
    if (!pflex_http_secret_equal(a->token, h)) {
        a->auth_failures++;
        agent_log("refused a request from %s: wrong token", req->peer);
        pflex_http_respond_error(resp, 401, "wrong token");
        resp->www_authenticate = 1;
        return 0;
    }
    return 1;
}

static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *gpu_json(struct agent *a, const struct agent_gpu *d)
{
    double now = agent_mono_s();
    const struct pflex_guard_gpu *gg = d->guard ? pflex_guard_gpu_find(d->guard, d->index) : NULL;
    json_t *o = json_object();
    json_object_set_new(o, "gpu", json_integer(d->index));
    json_object_set_new(o, "uuid", json_string(d->uuid));
    json_object_set_new(o, "name", json_string(d->name));
    json_object_set_new(o, "ok", json_boolean(d->ok));
    json_object_set_new(o, "error", d->ok ? json_null() : json_string(d->error));
    json_object_set_new(o, "limit_w", real_or_null(d->limit_w));
    json_object_set_new(o, "enforced_w", real_or_null(d->enforced_w));
    json_object_set_new(o, "power_w", real_or_null(d->power_w));
    json_object_set_new(o, "min_w", real_or_null(d->guard ? d->lim.min_w : NAN));
    json_object_set_new(o, "max_w", real_or_null(d->guard ? d->lim.max_w : NAN));
    json_object_set_new(o, "default_w", real_or_null(d->guard ? d->lim.default_w : NAN));
    json_object_set_new(o, "original_w", real_or_null(gg ? gg->original_w : NAN));
    if (d->leased) {
        json_t *l = json_object();
        json_object_set_new(l, "cap_w", json_real(d->lease_cap_w));
        json_object_set_new(l, "enforced_w", json_real(d->lease_enforced_w));
        json_object_set_new(l, "lease_s", json_real(d->lease_s));
        json_object_set_new(l, "expires_in_s", json_real(d->lease_until - now));
        json_object_set_new(l, "expires_at", json_real((double)time(NULL) + d->lease_until - now));
        json_object_set_new(l, "job", d->lease_job[0] ? json_string(d->lease_job) : json_null());
        json_object_set_new(l, "fallback_w", real_or_null(d->on_fallback ? NAN : d->fb_w));
        json_object_set_new(l, "fallback_until", real_or_null(d->fb_until));
        json_object_set_new(l, "fallback", json_boolean(d->on_fallback));
        json_object_set_new(o, "lease", l);
    } else {
        json_object_set_new(o, "lease", json_null());
    }
    return o;
}

static json_t *job_json(struct agent *a, const struct agent_job *j)
{
    json_t *o = json_object(), *g = json_array();
    json_object_set_new(o, "job", json_string(j->name));
    for (unsigned k = 0; k < j->ngpus; k++)
        json_array_append_new(g, json_integer(j->gpu[k]));
    json_object_set_new(o, "gpus", g);
    json_object_set_new(o, "tokens_total", json_real(j->tokens_total));
    json_object_set_new(o, "throughput", real_or_null(agent_job_throughput(a, j)));
    json_object_set_new(o, "reports", json_integer((json_int_t)j->reports));
    json_object_set_new(o, "simulated", json_boolean(j->sim));
    return o;
}

json_t *agent_status(struct agent *a)
{
    json_t *o = json_object(), *gpus = json_array(), *jobs = json_array();
    json_object_set_new(o, "hostname", json_string(a->hostname));
    json_object_set_new(o, "backend", json_string(a->cfg.backend));
    json_object_set_new(o, "uptime_s", json_real(agent_mono_s() - a->started));
    json_object_set_new(o, "max_lease_s", json_real(a->cfg.max_lease_s));
    /* When the GPUs were last read: a body served while the driver is
     * stuck is this old (age_s as of rendering; read_at says it always). */
    json_object_set_new(o, "read_at", a->read_at > 0 ? json_real(a->read_at) : json_null());
    json_object_set_new(o, "age_s", a->read_at > 0 ? json_real(pflex_real_s() - a->read_at)
                                                   : json_null());
    char fence[24];
    snprintf(fence, sizeof fence, "%llu", a->fence);
    /* a string: exact for every JSON reader, whatever its numbers */
    json_object_set_new(o, "fence", a->fence ? json_string(fence) : json_null());
    for (unsigned i = 0; i < a->n; i++)
        json_array_append_new(gpus, gpu_json(a, &a->gpu[i]));
    for (unsigned k = 0; k < a->njobs; k++)
        json_array_append_new(jobs, job_json(a, &a->job[k]));
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "jobs", jobs);
    return o;
}

/* ---- /metrics ---------------------------------------------------- */

char *agent_metrics(struct agent *a, size_t *len)
{
    static const struct { const char *name, *type, *help; int field; } dcgm[] = {
        {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", PFLEX_TM_SM_CLOCK_MHZ},
        {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).",
         PFLEX_TM_MEM_CLOCK_MHZ},
        {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", PFLEX_TM_GPU_UTIL},
        {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).",
         PFLEX_TM_MEM_COPY_UTIL},
        {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.",
         PFLEX_TM_GR_ENGINE_ACTIVE},
        {"DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp "
         "assigned.", PFLEX_TM_SM_ACTIVE},
        {"DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM.",
         PFLEX_TM_SM_OCCUPANCY},
        {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is "
         "active.", PFLEX_TM_TENSOR_ACTIVE},
        {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is "
         "active sending or receiving data.", PFLEX_TM_DRAM_ACTIVE},
        {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus "
         "- including both protocol headers and data payloads - in bytes per second.",
         PFLEX_TM_PCIE_TX_BYTES},
        {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - "
         "including both protocol headers and data payloads - in bytes per second.",
         PFLEX_TM_PCIE_RX_BYTES},
        {"DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge", "The rate of data transmitted over NVLink, "
         "not including protocol headers, in bytes per second.", PFLEX_TM_NVLINK_TX_BYTES},
        {"DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge", "The rate of data received over NVLink, not "
         "including protocol headers, in bytes per second.", PFLEX_TM_NVLINK_RX_BYTES},
    };
    pflex_prom_t *p = pflex_prom_create();
    if (!p)
        return NULL;
    char (*gpu_s)[12] = calloc(a->n ? a->n : 1, sizeof *gpu_s);
    char (*dev_s)[20] = calloc(a->n ? a->n : 1, sizeof *dev_s);
    if (!gpu_s || !dev_s) {
        free(gpu_s);
        free(dev_s);
        pflex_prom_destroy(p);
        return NULL;
    }
    for (unsigned i = 0; i < a->n; i++) {
        snprintf(gpu_s[i], sizeof gpu_s[i], "%u", i);
        snprintf(dev_s[i], sizeof dev_s[i], "nvidia%u", i);
    }
    /* dcgm-exporter's label names; its "modelName" is camelCase, which
     * promtool's lint flags: --label-style prometheus says model_name.
     * The pflex_* families carry no model label, so they lint clean. */
    const char *model = a->cfg.snake_labels ? "model_name" : "modelName";
#define LABELS(i, nm) (!strncmp(nm, "DCGM_", 5) \
    ? (const char *const[]){"gpu", gpu_s[i], "UUID", a->gpu[i].uuid, "device", dev_s[i], model, \
                            a->gpu[i].name, "Hostname", a->hostname, NULL} \
    : (const char *const[]){"gpu", gpu_s[i], "UUID", a->gpu[i].uuid, "Hostname", a->hostname, NULL})
#define PER_GPU(name, type, help, expr) do { \
        pflex_prom_family(p, name, type, help); \
        for (unsigned i = 0; i < a->n; i++) { \
            const struct agent_gpu *d = &a->gpu[i]; \
            (void)d; \
            pflex_prom_sample(p, name, LABELS(i, name), (expr)); \
        } \
    } while (0)
    PER_GPU("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).",
            d->ok ? d->power_w : NAN);
    PER_GPU("DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (in W).",
            d->limit_w);
    PER_GPU("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", "Effective power limit that the "
            "driver enforces after taking into account all limiters (in W).", d->enforced_w);
    for (size_t f = 0; f < sizeof dcgm / sizeof *dcgm; f++)
        PER_GPU(dcgm[f].name, dcgm[f].type, dcgm[f].help, d->ok ? d->tm[dcgm[f].field] : NAN);
    /* dcgm-exporter's DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION is a counter
     * without the _total suffix Prometheus asks for: ours is named right. */
    PER_GPU("pflex_gpu_energy_joules_total", "counter", "The GPU's energy counter (J).",
            d->ok ? d->energy_j : NAN);
    PER_GPU("pflex_gpu_up", "gauge", "1 when the GPU answers, 0 when it fails (see /v1/status).",
            d->ok ? 1 : 0);
    PER_GPU("pflex_gpu_errors_total", "counter", "Failed operations on the GPU since start.",
            (double)d->errors);
    PER_GPU("pflex_gpu_limit_min_watts", "gauge", "Lowest settable power limit.",
            d->guard ? d->lim.min_w : NAN);
    PER_GPU("pflex_gpu_limit_max_watts", "gauge", "Highest settable power limit.",
            d->guard ? d->lim.max_w : NAN);
    PER_GPU("pflex_gpu_limit_default_watts", "gauge", "The board's default power limit.",
            d->guard ? d->lim.default_w : NAN);
    PER_GPU("pflex_gpu_original_limit_watts", "gauge", "The limit a restore returns to.",
            d->guard ? pflex_guard_gpu_find(d->guard, d->index)->original_w : NAN);
    PER_GPU("pflex_lease_active", "gauge", "1 while a leased cap is in force.",
            d->leased ? 1 : 0);
    PER_GPU("pflex_lease_cap_watts", "gauge", "The leased cap in force.",
            d->leased ? d->lease_cap_w : NAN);
    PER_GPU("pflex_lease_remaining_seconds", "gauge", "Seconds until the lease ends and the "
            "original limit returns.", d->leased ? d->lease_until - agent_mono_s() : NAN);
    PER_GPU("pflex_lease_caps_set_total", "counter", "Caps set on the GPU since start.",
            (double)d->sets);
    PER_GPU("pflex_lease_expired_total", "counter", "Leases that ended by expiring.",
            (double)d->expiries);
    PER_GPU("pflex_lease_reapplied_total", "counter", "Times a leased cap was found unset "
            "(driver reload, another tool) and set again.", (double)d->drifts);
#undef PER_GPU
#undef LABELS
    pflex_prom_family(p, "pflex_job_throughput", "gauge",
                      "Throughput the job reports (tokens per second), over the window.");
    for (unsigned k = 0; k < a->njobs; k++)
        pflex_prom_sample(p, "pflex_job_throughput",
                          (const char *const[]){"job", a->job[k].name, "Hostname", a->hostname,
                                                NULL},
                          agent_job_throughput(a, &a->job[k]));
    pflex_prom_family(p, "pflex_job_tokens_total", "counter",
                      "The job's token counter, as it last reported it.");
    for (unsigned k = 0; k < a->njobs; k++)
        pflex_prom_sample(p, "pflex_job_tokens_total",
                          (const char *const[]){"job", a->job[k].name, "Hostname", a->hostname,
                                                NULL},
                          floor(a->job[k].tokens_total));
    pflex_prom_family(p, "pflex_job_gpus", "gauge", "GPUs the job map gives the job.");
    for (unsigned k = 0; k < a->njobs; k++)
        pflex_prom_sample(p, "pflex_job_gpus",
                          (const char *const[]){"job", a->job[k].name, "Hostname", a->hostname,
                                                NULL},
                          a->job[k].ngpus);
    unsigned long counts[6];
    pflex_http_server_counts(a->http, counts);
    pflex_prom_family(p, "pflex_http_responses_total", "counter",
                      "HTTP responses sent, by status class.");
    static const char *const cls[6] = {"", "1xx", "2xx", "3xx", "4xx", "5xx"};
    for (int c = 1; c <= 5; c++)
        pflex_prom_sample(p, "pflex_http_responses_total",
                          (const char *const[]){"code", cls[c], NULL}, (double)counts[c]);
    pflex_prom_family(p, "pflex_auth_failures_total", "counter",
                      "Requests refused for a missing or wrong token.");
    pflex_prom_sample(p, "pflex_auth_failures_total", NULL, (double)a->auth_failures);
    pflex_prom_family(p, "pflex_bad_requests_total", "counter",
                      "Requests refused as malformed or out of range.");
    pflex_prom_sample(p, "pflex_bad_requests_total", NULL, (double)a->bad_requests);
    pflex_prom_family(p, "pflex_agent_read_timestamp_seconds", "gauge",
                      "When the GPUs were last read (unix s): the age of these values.");
    pflex_prom_sample(p, "pflex_agent_read_timestamp_seconds", NULL,
                      a->read_at > 0 ? a->read_at : NAN);
    pflex_prom_family(p, "pflex_fenced_pushes_total", "counter",
                      "Cap pushes refused for a fencing token below the highest seen (a deposed leader's).");
    pflex_prom_sample(p, "pflex_fenced_pushes_total", NULL, (double)a->fenced);
    free(gpu_s);
    free(dev_s);
    char *text = pflex_prom_take(p, len);
    pflex_prom_destroy(p);
    return text;
}

/* ---- PUT /v1/caps ------------------------------------------------ */

struct planned {
    struct agent_gpu *d;
    double cap_w, lease_s;
    const char *job;
    double fb_w, fb_until;      /* NaN: no fallback */
};

static int bad(struct agent *a, struct pflex_http_response *resp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct agent *a, struct pflex_http_response *resp, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    a->bad_requests++;
    pflex_http_respond_error(resp, 400, "%s", msg);
    return -1;
}

static int plan_add(struct agent *a, struct planned *plan, unsigned *n, struct agent_gpu *d,
                    double cap, double lease, const char *job, double fb_w, double fb_until,
                    struct pflex_http_response *resp)
{
    for (unsigned k = 0; k < *n; k++)
        if (plan[k].d == d)
            return bad(a, resp, "GPU %u is given two caps in one request", d->index);
    if (!d->ok || !d->guard)
        return bad(a, resp, "GPU %u is failing (%s); no cap can be set on it", d->index,
                   d->error);
    /* In mW, as NVML takes a limit: 199.9999 W is 200000 mW, inside 200-700 W. */
    long long cap_mw = llrint(cap * 1000.0), lo_mw = llrint(d->lim.min_w * 1000.0),
              hi_mw = llrint(d->lim.max_w * 1000.0);
    if (cap_mw < lo_mw || cap_mw > hi_mw)
        return bad(a, resp, "GPU %u: cap %g W is outside the allowed range %g-%g W (%lld mW, "
                   "not in %lld-%lld mW)", d->index, cap, d->lim.min_w, d->lim.max_w, cap_mw,
                   lo_mw, hi_mw);
    long long fb_mw = isfinite(fb_w) ? llrint(fb_w * 1000.0) : 0;
    if (isfinite(fb_w) && (fb_mw < lo_mw || fb_mw > hi_mw))
        return bad(a, resp, "GPU %u: fallback %g W is outside the allowed range %g-%g W", d->index,
                   fb_w, d->lim.min_w, d->lim.max_w);
    plan[(*n)++] = (struct planned){d, cap_mw / 1000.0, lease, job,
                                    isfinite(fb_w) ? fb_mw / 1000.0 : NAN, fb_until};
    return 0;
}

/* A fencing token: a decimal string of an unsigned 64-bit integer, kept
 * exact; a JSON number only where every JSON reader holds it exactly
 * (<= 2^53), since one rounded up would lock every real leader out. */
static int parse_fence(const json_t *fj, unsigned long long *out, pflex_error_t *err)
{
    const char *sv = json_string_value(fj);
    if (sv) {
        size_t len = strlen(sv);
        if (len == 0 || len > 20 || strspn(sv, "0123456789") != len)
            return pflex_error_set(err, "\"fence\": '%.40s' is not a decimal unsigned 64-bit "
                                   "integer", sv);
        errno = 0;
        unsigned long long v = strtoull(sv, NULL, 10);
        if (errno == ERANGE)
            return pflex_error_set(err, "\"fence\": %s is above 2^64-1", sv);
        *out = v;
        return 0;
    }
    if (!json_is_integer(fj) || json_integer_value(fj) < 0)
        return pflex_error_set(err, "\"fence\" must be a decimal string (\"42\") or a "
                               "non-negative integer");
    if (json_integer_value(fj) > (json_int_t)1 << 53)
        return pflex_error_set(err, "\"fence\": %lld is above 2^53, where JSON numbers lose "
                               "digits; send it as a decimal string",
                               (long long)json_integer_value(fj));
    *out = (unsigned long long)json_integer_value(fj);
    return 0;
}

static void put_caps(struct agent *a, const struct pflex_http_request *req,
                     struct pflex_http_response *resp)
{
    pflex_error_t err;
    json_t *doc = pflex_http_json_body(req, MAX_JSON_BODY, &err);
    if (!doc) {
        bad(a, resp, "%s", err.text);
        return;
    }
    json_t *list = json_object_get(doc, "caps");
    json_t *one = NULL;
    if (!list) {
        one = json_array();
        json_array_append(one, doc);
        list = one;
    }
    json_t *top_lease = json_object_get(doc, "lease_s");
    /* A controller under a standby sends its leadership's token: one
     * lower than the highest seen is a deposed leader's, refused whole. */
    json_t *fj = json_object_get(doc, "fence");
    unsigned long long fence = 0;
    if (fj && parse_fence(fj, &fence, &err)) {
        bad(a, resp, "%s", err.text);
        json_decref(one);
        json_decref(doc);
        return;
    }
    if (fj && fence < a->fence) {
        a->fenced++;
        agent_log("refused PUT /v1/caps from %s: fence %llu is below %llu (a deposed leader)", req->peer,
                  fence, a->fence);
        pflex_http_respond_error(resp, 409, "fence %llu is below %llu: a newer leader pushes caps "
                                 "here (or etcd was rebuilt: DELETE /v1/fence with the token "
                                 "resets it)", fence, a->fence);
        json_decref(one);
        json_decref(doc);
        return;
    }
    json_t *top_fb = json_object_get(doc, "fallback_w"), *top_fbu = json_object_get(doc, "fallback_until");
    struct planned *plan = calloc(a->n ? a->n : 1, sizeof *plan);
    unsigned n = 0;
    int fail = !plan;
    if (!plan)
        pflex_http_respond_error(resp, 500, "out of memory");
    else if (!json_is_array(list) || json_array_size(list) == 0)
        fail = bad(a, resp, "\"caps\": want a non-empty list of {\"gpu\"|\"job\", \"cap_w\", "
                   "\"lease_s\"}");
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        if (fail)
            break;
        if (!json_is_object(e)) {
            fail = bad(a, resp, "caps[%zu]: want an object", i);
            break;
        }
        json_t *gpu = json_object_get(e, "gpu"), *job = json_object_get(e, "job");
        json_t *cap = json_object_get(e, "cap_w"), *lease = json_object_get(e, "lease_s");
        if (!lease)
            lease = top_lease;
        if (!!gpu == !!job) {
            fail = bad(a, resp, "caps[%zu]: give exactly one of \"gpu\" and \"job\"", i);
            break;
        }
        if (!json_is_number(cap) || !isfinite(json_number_value(cap))
            || fabs(json_number_value(cap)) > 1e9) {
            fail = bad(a, resp, "caps[%zu]: \"cap_w\" must be a number of watts", i);
            break;
        }
        if (!json_is_number(lease) || !(json_number_value(lease) > 0)
            || json_number_value(lease) > a->cfg.max_lease_s) {
            fail = bad(a, resp, "caps[%zu]: \"lease_s\" must be a number of seconds in "
                       "(0, %g]: every cap ends", i, a->cfg.max_lease_s);
            break;
        }
        /* a fallback: both or neither, the entry's own or the request's */
        json_t *fb = json_object_get(e, "fallback_w"), *fbu = json_object_get(e, "fallback_until");
        if (!fb && !fbu) {
            fb = top_fb;
            fbu = top_fbu;
        }
        if (!fb != !fbu || (fb && (!json_is_number(fb) || !isfinite(json_number_value(fb))
                                   || !json_is_number(fbu) || !isfinite(json_number_value(fbu))))) {
            fail = bad(a, resp, "caps[%zu]: \"fallback_w\" (watts) and \"fallback_until\" (unix "
                       "seconds) go together, as numbers", i);
            break;
        }
        double fw = fb ? json_number_value(fb) : NAN, fu = fbu ? json_number_value(fbu) : NAN;
        double c = json_number_value(cap), l = json_number_value(lease);
        if (gpu) {
            struct agent_gpu *d = agent_gpu_find(a, gpu, &err);
            if (!d) {
                fail = bad(a, resp, "caps[%zu]: %s", i, err.text);
                break;
            }
            fail = plan_add(a, plan, &n, d, c, l, NULL, fw, fu, resp);
        } else {
            const char *name = json_string_value(job);
            struct agent_job *j = name ? agent_job_find(a, name) : NULL;
            if (!j) {
                fail = bad(a, resp, "caps[%zu]: job '%.64s' is not in the job map (PUT "
                           "/v1/jobs/JOB or --job-map)", i, name ? name : "?");
                break;
            }
            for (unsigned k = 0; k < j->ngpus && !fail; k++)
                fail = plan_add(a, plan, &n, &a->gpu[j->gpu[k]], c, l, j->name, fw, fu, resp);
        }
    }
    if (!fail) {
        if (fence > a->fence)
            a->fence = fence;
        json_t *out = json_object(), *applied = json_array(), *errors = json_array();
        for (unsigned k = 0; k < n; k++) {
            struct planned *pl = &plan[k];
            if (agent_gpu_cap(a, pl->d, pl->cap_w, pl->lease_s, pl->job, &err)) {
                json_array_append_new(errors, json_pack("{s:i, s:s}", "gpu", (int)pl->d->index,
                                                        "error", err.text));
                pflex_error_t e2;
                agent_gpu_restore(a, pl->d, "setting the cap failed", &e2);
                continue;
            }
            if (isfinite(pl->fb_w))
                agent_gpu_fallback(pl->d, pl->fb_w, pl->fb_until);
            json_array_append_new(applied, gpu_json(a, pl->d));
        }
        json_object_set_new(out, "applied", applied);
        json_object_set_new(out, "errors", errors);
        pflex_http_respond_json(resp, json_array_size(errors) ? 502 : 200, out);
    }
    free(plan);
    json_decref(one);
    json_decref(doc);
}

/* ---- the rest ---------------------------------------------------- */

static void delete_caps(struct agent *a, const struct pflex_http_request *req,
                        struct pflex_http_response *resp)
{
    const char *gq = pflex_http_query(req, "gpu"), *jq = pflex_http_query(req, "job");
    int want[AGENT_MAX_GPUS] = {0};
    pflex_error_t err;
    if (!gq && !jq)
        for (unsigned i = 0; i < a->n; i++)
            want[i] = 1;
    if (gq) {
        char *end;
        long v = strtol(gq, &end, 10);
        json_t *ref = *gq && !*end ? json_integer(v) : json_string(gq);
        struct agent_gpu *d = agent_gpu_find(a, ref, &err);
        json_decref(ref);
        if (!d) {
            bad(a, resp, "%s", err.text);
            return;
        }
        want[d->index] = 1;
    }
    if (jq) {
        struct agent_job *j = agent_job_find(a, jq);
        if (!j) {
            bad(a, resp, "job '%.64s' is not in the job map", jq);
            return;
        }
        for (unsigned k = 0; k < j->ngpus; k++)
            want[j->gpu[k]] = 1;
    }
    json_t *out = json_object(), *gpus = json_array(), *errors = json_array();
    for (unsigned i = 0; i < a->n; i++) {
        if (!want[i])
            continue;
        /* "restored" lists only GPUs whose limit reads back as the original. */
        if (agent_gpu_restore(a, &a->gpu[i], "DELETE /v1/caps", &err))
            json_array_append_new(errors, json_pack("{s:i, s:s, s:o}", "gpu", (int)i, "error",
                                                    err.text, "status",
                                                    gpu_json(a, &a->gpu[i])));
        else
            json_array_append_new(gpus, gpu_json(a, &a->gpu[i]));
    }
    json_object_set_new(out, "restored", gpus);
    json_object_set_new(out, "errors", errors);
    pflex_http_respond_json(resp, json_array_size(errors) ? 502 : 200, out);
}

static void job_route(struct agent *a, const struct pflex_http_request *req,
                      struct pflex_http_response *resp, const char *rest)
{
    char name[AGENT_NAME_MAX + 16];
    const char *slash = strchr(rest, '/');
    size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
    if (len == 0 || len >= AGENT_NAME_MAX) {
        bad(a, resp, "job name: 1 to %d characters", AGENT_NAME_MAX - 1);
        return;
    }
    memcpy(name, rest, len);
    name[len] = '\0';
    pflex_error_t err;
    if (slash && !strcmp(slash, "/progress") && !strcmp(req->method, "POST")) {
        struct agent_job *j = agent_job_find(a, name);
        if (!j) {
            a->bad_requests++;
            pflex_http_respond_error(resp, 404, "job '%s' is not in the job map (PUT "
                                     "/v1/jobs/%s with {\"gpus\": [...]}, or --job-map)",
                                     name, name);
            return;
        }
        json_t *doc = pflex_http_json_body(req, MAX_JSON_BODY, &err);
        if (!doc) {
            bad(a, resp, "%s", err.text);
            return;
        }
        json_t *total = json_object_get(doc, "tokens_total"), *delta = json_object_get(doc,
                                                                                      "tokens");
        double v = NAN;
        if (total && !delta && json_is_number(total))
            v = json_number_value(total);
        else if (delta && !total && json_is_number(delta) && json_number_value(delta) >= 0)
            v = j->tokens_total + json_number_value(delta);
        json_decref(doc);
        if (!isfinite(v) || v < 0 || agent_job_progress(a, j, v)) {
            bad(a, resp, "want {\"tokens_total\": N} (the job's counter) or {\"tokens\": n} "
                "(processed since the last report), a number >= 0");
            return;
        }
        pflex_http_respond_json(resp, 200, job_json(a, j));
        return;
    }
    if (slash) {
        pflex_http_respond_error(resp, 404, "no such resource %s", req->path);
        return;
    }
    if (!strcmp(req->method, "PUT")) {
        json_t *doc = pflex_http_json_body(req, MAX_JSON_BODY, &err);
        if (!doc) {
            bad(a, resp, "%s", err.text);
            return;
        }
        int rc = agent_job_set(a, name, json_object_get(doc, "gpus"), &err);
        json_decref(doc);
        if (rc) {
            bad(a, resp, "job '%s': %s", name, err.text);
            return;
        }
        pflex_http_respond_json(resp, 200, job_json(a, agent_job_find(a, name)));
    } else if (!strcmp(req->method, "DELETE")) {
        struct agent_job *j = agent_job_find(a, name);
        if (!j) {
            pflex_http_respond_error(resp, 404, "job '%s' is not in the job map", name);
            return;
        }
        size_t k = (size_t)(j - a->job);
        memmove(j, j + 1, (a->njobs - k - 1) * sizeof *j);
        a->njobs--;
        pflex_http_respond_json(resp, 200, json_pack("{s:s}", "deleted", name));
    } else if (!strcmp(req->method, "GET")) {
        struct agent_job *j = agent_job_find(a, name);
        if (!j)
            pflex_http_respond_error(resp, 404, "job '%s' is not in the job map", name);
        else
            pflex_http_respond_json(resp, 200, job_json(a, j));
    } else {
        pflex_http_respond_error(resp, 405, "%s /v1/jobs/JOB: use GET, PUT or DELETE",
                                 req->method);
    }
}

/* ---- the cached reads ------------------------------------------- */

enum { BODY_METRICS, BODY_STATUS };

/* The cached body if it is current, with a reference for the caller. */
static pflex_http_body_t *cache_take(struct agent *a, int which)
{
    pflex_http_body_t *b = NULL;
    pthread_mutex_lock(&a->cache_lock);
    if (a->cache[which] && a->cache_gen[which] == atomic_load(&a->gen)) {
        b = a->cache[which];
        pflex_http_body_ref(b);
    }
    pthread_mutex_unlock(&a->cache_lock);
    return b;
}

/* Render the body as the node stands (under a->lock, so that gen cannot
 * move meanwhile), install it, and return it with a reference. */
static pflex_http_body_t *render(struct agent *a, int which)
{
    unsigned long gen = atomic_load(&a->gen);
    size_t len = 0;
    char *text;
    if (which == BODY_METRICS) {
        text = agent_metrics(a, &len);
    } else {
        json_t *st = agent_status(a);
        text = pflex_http_json_text(st, &len);
        json_decref(st);
    }
    pflex_http_body_t *b = pflex_http_body_create(which == BODY_METRICS
                                                  ? PFLEX_PROM_CONTENT_TYPE : "application/json",
                                                  text, len);
    if (!b)
        return NULL;
    pflex_http_body_ref(b);
    pthread_mutex_lock(&a->cache_lock);
    pflex_http_body_t *old = a->cache[which];
    a->cache[which] = b;
    a->cache_gen[which] = gen;
    pthread_mutex_unlock(&a->cache_lock);
    pflex_http_body_unref(old);
    return b;
}

/* The last body rendered, current or not, with a reference. */
static pflex_http_body_t *cache_last(struct agent *a, int which)
{
    pthread_mutex_lock(&a->cache_lock);
    pflex_http_body_t *b = a->cache[which];
    if (b)
        pflex_http_body_ref(b);
    pthread_mutex_unlock(&a->cache_lock);
    return b;
}

void agent_render_all(struct agent *a)
{
    for (int which = BODY_METRICS; which <= BODY_STATUS; which++) {
        pflex_http_body_t *b = cache_take(a, which);
        pflex_http_body_unref(b ? b : render(a, which));
    }
}

/* How long a read waits for the node before it takes the last body: a
 * tick or a write holds the lock for milliseconds, a stuck driver for
 * as long as its call blocks. */
#define READ_WAIT_S 0.25
/* How long a write waits before it is answered 503. */
#define WRITE_WAIT_S 1.0

/* The driver holds the node: 503, saying for how long (nothing changed). */
static void driver_busy(struct agent *a, struct pflex_http_response *resp)
{
    pflex_http_respond_error(resp, 503, "the GPU driver is busy: the agent's call into it has "
                             "not returned for %.1f s; nothing changed, try again",
                             agent_driver_busy_s(a));
    resp->retry_after_s = 1;
}

/* GET /metrics or /v1/status: the shared body of the node's current
 * state, rendered by the first reader after a change; while the driver
 * holds the node, the last one rendered (read_at says how old). */
static void serve_cached(struct agent *a, int which, struct pflex_http_response *resp,
                         int locked)
{
    pflex_http_body_t *b = cache_take(a, which);
    if (!b) {
        if (!locked && agent_lock_within(a, READ_WAIT_S)) {
            b = cache_last(a, which);
            if (!b) {
                driver_busy(a, resp);
                return;
            }
        } else {
            b = cache_take(a, which);   /* another reader may have rendered it meanwhile */
            if (!b)
                b = render(a, which);
            if (!locked)
                pthread_mutex_unlock(&a->lock);
        }
    }
    if (!b) {
        pflex_http_respond_error(resp, 500, "out of memory");
        return;
    }
    pflex_http_respond_shared(resp, 200, b);
    pflex_http_body_unref(b);
}

static void api_locked(struct agent *a, const struct pflex_http_request *req,
                       struct pflex_http_response *resp, int read)
{
    if ((!read || a->cfg.auth_reads) && !authorised(a, req, resp))
        return;
    if (!strcmp(req->path, "/metrics")) {
        if (!read)
            pflex_http_respond_error(resp, 405, "/metrics: GET only");
        else
            serve_cached(a, BODY_METRICS, resp, 1);
    } else if (!strcmp(req->path, "/v1/status")) {
        if (!read)
            pflex_http_respond_error(resp, 405, "/v1/status: GET only");
        else
            serve_cached(a, BODY_STATUS, resp, 1);
    } else if (!strcmp(req->path, "/v1/caps")) {
        if (!strcmp(req->method, "PUT"))
            put_caps(a, req, resp);
        else if (!strcmp(req->method, "DELETE"))
            delete_caps(a, req, resp);
        else if (read) {
            json_t *st = agent_status(a);
            json_t *gpus = json_incref(json_object_get(st, "gpus"));
            json_decref(st);
            pflex_http_respond_json(resp, 200, json_pack("{s:o}", "gpus", gpus));
        } else
            pflex_http_respond_error(resp, 405, "/v1/caps: GET, PUT or DELETE");
    } else if (!strcmp(req->path, "/v1/fence")) {
        /* After etcd is rebuilt its revisions start over, below the
         * fence the agents hold: the operator's reset (the token's) lets
         * the new leaders push; the old fence is said in the log. */
        if (!strcmp(req->method, "DELETE")) {
            char was[24];
            snprintf(was, sizeof was, "%llu", a->fence);
            agent_log("fence %s reset by %s (DELETE /v1/fence): the next push's fence is "
                      "taken", a->fence ? was : "(none)", req->peer);
            pflex_http_respond_json(resp, 200, json_pack("{s:s?, s:n}", "was",
                                                         a->fence ? was : NULL, "fence"));
            a->fence = 0;
        } else {
            pflex_http_respond_error(resp, 405, "/v1/fence: DELETE (with the token) resets it");
        }
    } else if (!strncmp(req->path, "/v1/jobs/", 9)) {
        job_route(a, req, resp, req->path + 9);
    } else if (!strcmp(req->path, "/v1/jobs") && read) {
        json_t *st = agent_status(a);
        json_t *jobs = json_incref(json_object_get(st, "jobs"));
        json_decref(st);
        pflex_http_respond_json(resp, 200, json_pack("{s:o}", "jobs", jobs));
    } else if (!strcmp(req->path, "/healthz")) {
        pflex_http_respond_text(resp, 200, "text/plain", "ok\n", 3);
    } else {
        pflex_http_respond_error(resp, 404, "no such resource %s (see pflex agent --help)",
                                 req->path);
    }
}

void agent_api(void *ud, const struct pflex_http_request *req, struct pflex_http_response *resp)
{
    struct agent *a = ud;
    int read = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
    /* The reads scrapers and controllers make all the time: no lock while
     * the cached body is current. */
    if (read && !a->cfg.auth_reads) {
        if (!strcmp(req->path, "/metrics")) {
            serve_cached(a, BODY_METRICS, resp, 0);
            return;
        }
        if (!strcmp(req->path, "/v1/status")) {
            serve_cached(a, BODY_STATUS, resp, 0);
            return;
        }
    }
    if (!strcmp(req->path, "/healthz") && !a->cfg.auth_reads) {
        pflex_http_respond_text(resp, 200, "text/plain", "ok\n", 3);
        return;
    }
    if (agent_lock_within(a, read ? READ_WAIT_S : WRITE_WAIT_S)) {
        driver_busy(a, resp);
        return;
    }
    api_locked(a, req, resp, read);
    if (!read) {
        agent_changed(a);
        /* the last reading served while the driver is stuck has this write */
        agent_render_all(a);
    }
    pthread_mutex_unlock(&a->lock);
}
