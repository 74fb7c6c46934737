/* agent_client.c — talking to one `pflex agent` over HTTP (libcurl).
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
 *  - PUT /v1/caps takes {"lease_s": num, "caps": [{"gpu": int, "cap_w": num}]}
 *    with "Authorization: Bearer TOKEN"; 200 answers {"applied": [GPU as in
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
#include <curl/curl.h>
#include <jansson.h>
#include "controller/agent_client.h"

#define MAX_BODY (1u << 20)

struct agent_client {
    char url[512];
    char *token;
    long timeout_ms;
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
    free(c);
}

const char *agent_client_url(const agent_client_t *c)
{
    return c->url;
}

struct body {
    char *buf;
    size_t len;
    int too_big;
};

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    struct body *b = ud;
    size_t add = size * n;
    if (b->len + add > MAX_BODY) {
        b->too_big = 1;
        return 0;
    }
    char *nb = realloc(b->buf, b->len + add + 1);
    if (!nb)
        return 0;
    b->buf = nb;
    memcpy(b->buf + b->len, p, add);
    b->len += add;
    b->buf[b->len] = '\0';
    return add;
}

static int request(agent_client_t *c, const char *method, const char *path, const char *data,
                   long *status, struct body *b, pflex_error_t *err)
{
    CURL *h = curl_easy_init();
    if (!h)
        return pflex_error_set(err, "libcurl: cannot create a handle");
    char url[600], auth[4200];
    snprintf(url, sizeof url, "%s%s", c->url, path);
    memset(b, 0, sizeof *b);
    struct curl_slist *hdr = curl_slist_append(NULL, "Accept: application/json");
    if (data)
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
    if (c->token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->token);
        hdr = curl_slist_append(hdr, auth);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    if (data) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, data);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(data));
    }
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    memset(auth, 0, sizeof auth);
    if (rc != CURLE_OK || b->too_big) {
        free(b->buf);
        b->buf = NULL;
        return pflex_error_set(err, "%s %s%s: %s", method, c->url, path,
                               b->too_big ? "answer too large" : curl_easy_strerror(rc));
    }
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
    memset(out, 0, sizeof *out);
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

int agent_client_status(agent_client_t *c, struct agent_status *out, pflex_error_t *err)
{
    long status = 0;
    struct body b;
    if (request(c, "GET", "/v1/status", NULL, &status, &b, err) < 0)
        return -1;
    int rc;
    if (status != 200)
        rc = pflex_error_set(err, "GET %s/v1/status: HTTP %ld", c->url, status);
    else
        rc = agent_parse_status(b.buf ? b.buf : "", b.len, out, err);
    free(b.buf);
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

int agent_client_put_caps(agent_client_t *c, struct agent_cap *caps, size_t n, double lease_s,
                          pflex_error_t *err)
{
    json_t *arr = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(arr, json_pack("{s:i, s:f}", "gpu", caps[k].gpu, "cap_w", caps[k].cap_w));
    json_t *doc = json_pack("{s:f, s:o}", "lease_s", lease_s, "caps", arr);
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!s)
        return pflex_error_set(err, "out of memory");
    long status = 0;
    struct body b;
    int rc = request(c, "PUT", "/v1/caps", s, &status, &b, err);
    free(s);
    if (rc < 0)
        return -1;
    if (status == 200)
        rc = agent_parse_caps_answer(b.buf ? b.buf : "", b.len, caps, n, err);
    else {
        /* 502: some GPUs failed and were restored; the others took their
         * caps, and the answer says which */
        if (status == 502)
            agent_parse_caps_answer(b.buf ? b.buf : "", b.len, caps, n, NULL);
        rc = pflex_error_set(err, "PUT %s/v1/caps: HTTP %ld%s%.200s", c->url, status,
                             b.buf ? ": " : "", b.buf ? b.buf : "");
    }
    free(b.buf);
    return rc;
}
