/* agent_client.c — talking to `pflex agent`s over HTTP (pflex/net/http.h), one
 * at a time or many at once, each batch over one client's kept connections.
 *
 * What the controller reads of the agent's API (docs/agent.md, served by
 * src/agent/api.c); nothing else in the controller parses it:
 *  - GET /v1/status answers 200 with
 *      {"hostname": str,
 *       "gpus": [{"gpu": int (the index), "uuid": str, "ok": bool,
 *                 "power_w": num|null, "limit_w": num|null (the limit set),
 *                 "enforced_w": num|null (what the driver enforces),
 *                 "min_w": num, "max_w": num (the settable range), ...}],
 *       "jobs": [{"job": str, "gpus": [int], "throughput": num|null}, ...]}
 *    Unknown fields are ignored.  A GPU without a settable range (the
 *    agent could not read it) makes the answer unusable: the agent is then
 *    counted as down, its GPUs at their last known maximum.
 *  - PUT /v1/caps takes {"lease_s": num, "caps": [{"gpu": int, "cap_w": num,
 *    "fallback_w": num, "fallback_until": num (unix s; both only during an
 *    event: what the GPU holds from the lease's end until then)}]} (and
 *    "fence": int, the leader's fencing token, under a standby: 409 when
 *    the agent has seen a higher one) with "Authorization: Bearer TOKEN";
 *    200 answers {"applied": [GPU as in
 *    the status], "errors": []}, 502 the same with the GPUs that failed in
 *    "errors" (the others were set), 400 names a cap out of range and sets
 *    nothing, 401 a bad token.  A cap is confirmed by its GPU's enforced_w
 *    in "applied".
 *  - A job's throughput is what the job reports to that agent (POST
 *    /v1/jobs/JOB/progress), over the agent's --throughput-window; a job
 *    spread over several nodes reports to each, so the controller sums it
 *    over agents.
 *  - GET /metrics (dcgm-exporter names) is read only through Prometheus
 *    (controller --prometheus), never here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "controller/agent_client.h"

#define MAX_BODY (1u << 20)

struct agent_client {
    char url[512];
    char status_url[528], caps_url[528];
    char *token;
    long timeout_ms;
    pflex_http_client_t *http;  /* for the one-agent calls; made on first use */
    char *ca_file;              /* for https:// agents; NULL: the system's CAs */
};

int agent_client_create(const char *url, const char *token, long timeout_ms,
                        agent_client_t **out, pflex_error_t *err)
{
    *out = NULL;
    if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) || strlen(url) >= 500)
        return pflex_error_set(err, "agent URL '%s' must start with http:// or https://", url ? url : "");
    agent_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return pflex_error_set(err, "out of memory");
    snprintf(c->url, sizeof c->url, "%s", url);
    size_t l = strlen(c->url);
    while (l && c->url[l - 1] == '/')
        c->url[--l] = '\0';
    snprintf(c->status_url, sizeof c->status_url, "%s/v1/status", c->url);
    snprintf(c->caps_url, sizeof c->caps_url, "%s/v1/caps", c->url);
    c->token = token ? strdup(token) : NULL;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 2000;
    *out = c;
    return 0;
}

void agent_client_destroy(agent_client_t *c)
{
    if (!c)
        return;
    if (c->token) {
        memset(c->token, 0, strlen(c->token));
        free(c->token);
    }
    pflex_http_client_destroy(c->http);
    free(c->ca_file);
    free(c);
}

const char *agent_client_url(const agent_client_t *c)
{
    return c->url;
}

int agent_client_http_create(long timeout_ms, unsigned parallel, unsigned keep_conns,
                             const char *ca_file, pflex_http_client_t **out, pflex_error_t *err)
{
    struct pflex_http_client_opts o = {.parallel = parallel, .keep_conns = keep_conns,
                                       .timeout_s = (timeout_ms > 0 ? timeout_ms : 2000) / 1e3,
                                       .max_response = MAX_BODY, .accept = "application/json",
                                       .ca_file = ca_file};
    return pflex_http_client_create(&o, out, err);
}

/* The one-agent calls' client: one connection, kept. */
static pflex_http_client_t *own_http(agent_client_t *c, pflex_error_t *err)
{
    if (!c->http && agent_client_http_create(c->timeout_ms, 1, 1, c->ca_file, &c->http, err) < 0)
        return NULL;
    return c->http;
}

int agent_client_set_ca_file(agent_client_t *c, const char *ca_file, pflex_error_t *err)
{
    free(c->ca_file);
    c->ca_file = NULL;
    if (ca_file && !(c->ca_file = strdup(ca_file)))
        return pflex_error_set(err, "out of memory");
    return 0;
}

static double num_or(json_t *v, double dflt)
{
    if (json_is_integer(v))
        return (double)json_integer_value(v);
    if (json_is_real(v) && isfinite(json_real_value(v)))
        return json_real_value(v);
    return dflt;
}

static void copy_str(char *dst, size_t size, json_t *v)
{
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    snprintf(dst, size, "%.*s", (int)(size - 1), s);
}

int agent_parse_status(const char *body, size_t len, struct agent_status *out, pflex_error_t *err)
{
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return pflex_error_set(err, "/v1/status: not a JSON object (%d:%d: %s)", je.line, je.column, je.text);
    }
    /* the header only: the entries are written as they are read (a status
     * is 29 KB, most of it room for GPUs and jobs a node does not have) */
    out->ngpus = out->njobs = 0;
    copy_str(out->host, sizeof out->host, json_object_get(j, "hostname"));
    json_t *gpus = json_object_get(j, "gpus"), *jobs = json_object_get(j, "jobs");
    int rc = -1;
    if (!json_is_array(gpus) || json_array_size(gpus) > AGENT_MAX_GPUS) {
        pflex_error_set(err, "/v1/status: 'gpus' is not an array of at most %d", AGENT_MAX_GPUS);
        goto out;
    }
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        struct agent_gpu *o = &out->gpu[out->ngpus];
        json_t *idx = json_object_get(g, "gpu");
        if (!json_is_integer(idx) || json_integer_value(idx) < 0 || json_integer_value(idx) > 4096) {
            pflex_error_set(err, "/v1/status: gpus[%zu].gpu is not a GPU index", i);
            goto out;
        }
        o->index = (int)json_integer_value(idx);
        o->count = 0;           /* one GPU */
        copy_str(o->uuid, sizeof o->uuid, json_object_get(g, "uuid"));
        o->power_w = num_or(json_object_get(g, "power_w"), NAN);
        o->limit_w = num_or(json_object_get(g, "limit_w"), NAN);
        o->min_w = num_or(json_object_get(g, "min_w"), NAN);
        o->max_w = num_or(json_object_get(g, "max_w"), NAN);
        json_t *ok = json_object_get(g, "ok");
        o->ok = ok ? json_is_true(ok) : 1;
        if (!(o->min_w > 0) || !(o->max_w >= o->min_w) || o->max_w > 1e5) {
            pflex_error_set(err, "/v1/status: gpus[%zu]: limit range missing or wrong", i);
            goto out;
        }
        if (o->power_w < 0 || o->power_w > 1e5)
            o->power_w = NAN;
        out->ngpus++;
    }
    if (jobs && !json_is_null(jobs)) {
        if (!json_is_array(jobs) || json_array_size(jobs) > AGENT_MAX_JOBS) {
            pflex_error_set(err, "/v1/status: 'jobs' is not an array of at most %d", AGENT_MAX_JOBS);
            goto out;
        }
        json_t *jb;
        json_array_foreach(jobs, i, jb) {
            struct agent_job *o = &out->job[out->njobs];
            o->ngpus = 0;
            copy_str(o->name, sizeof o->name, json_object_get(jb, "job"));
            if (!o->name[0]) {
                pflex_error_set(err, "/v1/status: jobs[%zu] has no name", i);
                goto out;
            }
            json_t *jg = json_object_get(jb, "gpus"), *x;
            size_t k;
            if (!json_is_array(jg) || json_array_size(jg) > AGENT_MAX_GPUS) {
                pflex_error_set(err, "/v1/status: jobs[%zu].gpus is not an array", i);
                goto out;
            }
            json_array_foreach(jg, k, x) {
                if (!json_is_integer(x)) {
                    pflex_error_set(err, "/v1/status: jobs[%zu].gpus[%zu] is not an index", i, k);
                    goto out;
                }
                o->gpus[o->ngpus++] = (int)json_integer_value(x);
            }
            o->throughput = num_or(json_object_get(jb, "throughput"), NAN);
            if (o->throughput < 0)
                o->throughput = NAN;
            out->njobs++;
        }
    }
    rc = 0;
out:
    json_decref(j);
    return rc;
}

int agent_parse_caps_answer(const char *body, size_t len, struct agent_cap *caps, size_t n,
                            pflex_error_t *err)
{
    for (size_t k = 0; k < n; k++)
        caps[k].enforced_w = NAN;
    json_t *j = json_loadb(body, len, 0, NULL);
    json_t *arr = json_object_get(j, "applied");
    if (!json_is_array(arr)) {
        json_decref(j);
        return pflex_error_set(err, "PUT /v1/caps: the answer has no 'applied' array");
    }
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        json_t *g = json_object_get(e, "gpu"), *w = json_object_get(e, "enforced_w");
        if (!json_is_integer(g))
            continue;
        for (size_t k = 0; k < n; k++)
            if (caps[k].gpu == json_integer_value(g))
                caps[k].enforced_w = num_or(w, NAN);
    }
    json_decref(j);
    return 0;
}

void agent_status_copy(struct agent_status *dst, const struct agent_status *src)
{
    memcpy(dst->host, src->host, sizeof dst->host);
    dst->ngpus = src->ngpus;
    dst->njobs = src->njobs;
    memcpy(dst->gpu, src->gpu, src->ngpus * sizeof *src->gpu);
    for (size_t m = 0; m < src->njobs; m++) {
        const struct agent_job *a = &src->job[m];
        struct agent_job *b = &dst->job[m];
        memcpy(b->name, a->name, sizeof b->name);
        b->ngpus = a->ngpus;
        b->throughput = a->throughput;
        memcpy(b->gpus, a->gpus, (size_t)a->ngpus * sizeof *a->gpus);
    }
}

/* ---- many agents at once ---- */

/* A batch's calls are its entries with an agent, each call's ud its entry. */
struct batch {
    struct agent_status scratch;        /* a status parsed before it is known good */
};

static void read_done(void *ud, struct pflex_http_call *call)
{
    struct batch *b = ud;
    struct agent_read *r = call->ud;
    if (!call->ok)
        pflex_error_set(&r->err, "GET %s: %s", call->url, call->error);
    else if (call->status != 200)
        pflex_error_set(&r->err, "GET %s: HTTP %ld", call->url, call->status);
    else if (agent_parse_status(call->resp, call->resp_len, &b->scratch, &r->err) == 0) {
        agent_status_copy(r->out, &b->scratch);
        r->ok = 1;
    }
    free(call->resp);
    call->resp = NULL;
}

int agent_client_status_many(pflex_http_client_t *http, struct agent_read *r, size_t n,
                             pflex_error_t *err)
{
    struct batch *b = malloc(sizeof *b);
    struct pflex_http_call *calls = malloc((n ? n : 1) * sizeof *calls);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!r[i].agent)
            continue;
        r[i].ok = 0;
        r[i].err.text[0] = '\0';
        if (calls)
            calls[m++] = (struct pflex_http_call){.method = "GET", .url = r[i].agent->status_url,
                                                  .ud = &r[i]};
    }
    int rc = 0;
    if (!b || !calls) {
        rc = pflex_error_set(err, "out of memory");
        for (size_t i = 0; i < n; i++)
            if (r[i].agent)
                r[i].err = *err;
    } else {
        if (pflex_http_client_run(http, calls, m, read_done, b, err) < 0)
            rc = -1;
    }
    free(calls);
    free(b);
    return rc;
}

static void push_done(void *ud, struct pflex_http_call *call)
{
    (void)ud;
    struct agent_push *p = call->ud;
    const char *body = call->resp ? call->resp : "";
    p->status = call->ok ? call->status : 0;
    if (!call->ok)
        pflex_error_set(&p->err, "PUT %s: %s", call->url, call->error);
    else if (call->status == 200)
        p->ok = agent_parse_caps_answer(body, call->resp_len, p->caps, p->n, &p->err) == 0;
    else {
        /* 502: some GPUs failed and were restored; the others took their
         * caps, and the answer says which */
        if (call->status == 502)
            agent_parse_caps_answer(body, call->resp_len, p->caps, p->n, NULL);
        pflex_error_set(&p->err, "PUT %s: HTTP %ld%s%.200s", call->url, call->status,
                        call->resp_len ? ": " : "", body);
    }
    free(call->resp);
    call->resp = NULL;
}

static char *caps_json(const struct agent_cap *caps, size_t n, double lease_s, uint64_t fence)
{
    json_t *arr = json_array();
    for (size_t k = 0; k < n; k++) {
        json_t *o = json_pack("{s:i, s:f}", "gpu", caps[k].gpu, "cap_w", caps[k].cap_w);
        if (caps[k].fallback_w > 0 && caps[k].fallback_until > 0 && isfinite(caps[k].fallback_w)
            && isfinite(caps[k].fallback_until)) {
            json_object_set_new(o, "fallback_w", json_real(caps[k].fallback_w));
            json_object_set_new(o, "fallback_until", json_real(caps[k].fallback_until));
        }
        json_array_append_new(arr, o);
    }
    json_t *doc = json_pack("{s:f, s:o}", "lease_s", lease_s, "caps", arr);
    if (doc && fence)
        json_object_set_new(doc, "fence", json_integer((json_int_t)fence));
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return s;
}

int agent_client_put_caps_many(pflex_http_client_t *http, struct agent_push *p, size_t n,
                               double lease_s, pflex_error_t *err)
{
    struct pflex_http_call *calls = malloc((n ? n : 1) * sizeof *calls);
    size_t m = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!p[i].agent)
            continue;
        p[i].ok = 0;
        p[i].status = 0;
        p[i].err.text[0] = '\0';
        for (size_t k = 0; k < p[i].n; k++)
            p[i].caps[k].enforced_w = NAN;
        char *body = calls ? caps_json(p[i].caps, p[i].n, lease_s, p[i].fence) : NULL;
        if (!body) {
            pflex_error_set(&p[i].err, "out of memory");
            continue;
        }
        calls[m++] = (struct pflex_http_call){.method = "PUT", .url = p[i].agent->caps_url, .body = body,
                                              .token = p[i].agent->token, .ud = &p[i]};
    }
    if (!calls) {
        rc = pflex_error_set(err, "out of memory");
        for (size_t i = 0; i < n; i++)
            if (p[i].agent)
                p[i].err = *err;
        return rc;
    }
    if (pflex_http_client_run(http, calls, m, push_done, NULL, err) < 0)
        rc = -1;
    for (size_t i = 0; i < m; i++)
        free((char *)calls[i].body);
    free(calls);
    return rc;
}

/* ---- one agent ---- */

int agent_client_status(agent_client_t *c, struct agent_status *out, pflex_error_t *err)
{
    pflex_http_client_t *http = own_http(c, err);
    if (!http)
        return -1;
    struct agent_read r = {.agent = c, .out = out};
    if (agent_client_status_many(http, &r, 1, err) < 0)
        return -1;
    if (!r.ok)
        *err = r.err;
    return r.ok ? 0 : -1;
}

int agent_client_put_caps(agent_client_t *c, struct agent_cap *caps, size_t n, double lease_s,
                          pflex_error_t *err)
{
    pflex_http_client_t *http = own_http(c, err);
    if (!http)
        return -1;
    struct agent_push p = {.agent = c, .caps = caps, .n = n};
    if (agent_client_put_caps_many(http, &p, 1, lease_s, err) < 0)
        return -1;
    if (!p.ok)
        *err = p.err;
    return p.ok ? 0 : -1;
}
