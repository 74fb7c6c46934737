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
 *    "fence": "N", the leader's fencing token as a decimal string (exact
 *    past 2^53), under a standby: 409 when the agent has seen a higher one) with "Authorization: Bearer TOKEN";
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
#include "controller/agent_client.h"
#include "lib/util/jscan.h"

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
                                       .direct_http1 = 1,
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

/* The answers are read in place (lib/util/jscan.h), only the fields
 * below converted: a jansson tree of a status (a hundred values, each
 * allocated) cost more than its request. */

/* A number, or dflt for anything else (null, a string, ...). */
static int num_or(struct pflex_jscan *js, double dflt, double *out)
{
    int is_int;
    if (pflex_jscan_peek(js) != PFLEX_J_NUMBER) {
        *out = dflt;
        return pflex_jscan_skip(js);
    }
    return pflex_jscan_number(js, out, &is_int);
}

/* A string cut to fit dst, or "" for anything else. */
static int str_or_empty(struct pflex_jscan *js, char *dst, size_t size)
{
    dst[0] = '\0';
    if (pflex_jscan_peek(js) != PFLEX_J_STRING)
        return pflex_jscan_skip(js);
    return pflex_jscan_string(js, dst, size, NULL) < 0 ? -1 : 0;
}

/* An integer written as one, within [lo, hi]: 1 with it in *v, 0 when the
 * value is something else (skipped), -1 when it does not parse. */
static int int_in(struct pflex_jscan *js, double lo, double hi, int *v)
{
    double x;
    int is_int;
    if (pflex_jscan_peek(js) != PFLEX_J_NUMBER)
        return pflex_jscan_skip(js) < 0 ? -1 : 0;
    if (pflex_jscan_number(js, &x, &is_int) < 0)
        return -1;
    if (!is_int || x < lo || x > hi)
        return 0;
    *v = (int)x;
    return 1;
}

/* "gpus"[i] of a status; 0, or -1 with err. */
static int status_gpu(struct pflex_jscan *js, size_t i, struct agent_gpu *o, pflex_error_t *err)
{
    *o = (struct agent_gpu){.index = -1, .power_w = NAN, .limit_w = NAN, .min_w = NAN, .max_w = NAN, .ok = 1};
    if (pflex_jscan_peek(js) != PFLEX_J_OBJECT) {
        if (pflex_jscan_skip(js) < 0)
            return -1;
        return pflex_error_set(err, "/v1/status: gpus[%zu].gpu is not a GPU index", i);
    }
    pflex_jscan_enter(js, PFLEX_J_OBJECT);
    char key[16];
    int r, cut, has_index = 0, rc = 0;
    while (rc == 0 && (r = pflex_jscan_key(js, key, sizeof key, &cut)) == 1) {
        if (cut)
            rc = pflex_jscan_skip(js);
        else if (!strcmp(key, "gpu")) {
            int k = int_in(js, 0, 4096, &o->index);
            rc = k < 0 ? -1 : 0;
            has_index = k == 1;
        } else if (!strcmp(key, "uuid"))
            rc = str_or_empty(js, o->uuid, sizeof o->uuid);
        else if (!strcmp(key, "power_w"))
            rc = num_or(js, NAN, &o->power_w);
        else if (!strcmp(key, "limit_w"))
            rc = num_or(js, NAN, &o->limit_w);
        else if (!strcmp(key, "min_w"))
            rc = num_or(js, NAN, &o->min_w);
        else if (!strcmp(key, "max_w"))
            rc = num_or(js, NAN, &o->max_w);
        else if (!strcmp(key, "ok")) {
            o->ok = pflex_jscan_peek(js) == PFLEX_J_TRUE;
            rc = pflex_jscan_skip(js);
        } else
            rc = pflex_jscan_skip(js);
    }
    if (rc < 0 || r < 0)
        return -1;
    if (!has_index)
        return pflex_error_set(err, "/v1/status: gpus[%zu].gpu is not a GPU index", i);
    if (!(o->min_w > 0) || !(o->max_w >= o->min_w) || o->max_w > 1e5)
        return pflex_error_set(err, "/v1/status: gpus[%zu]: limit range missing or wrong", i);
    if (o->power_w < 0 || o->power_w > 1e5)
        o->power_w = NAN;
    return 0;
}

/* "jobs"[i] of a status; 0, or -1 with err. */
static int status_job(struct pflex_jscan *js, size_t i, struct agent_job *o, pflex_error_t *err)
{
    o->ngpus = 0;
    o->name[0] = '\0';
    o->throughput = NAN;
    int has_gpus = 0, r = 0, rc = 0, cut;
    if (pflex_jscan_peek(js) != PFLEX_J_OBJECT) {
        if (pflex_jscan_skip(js) < 0)
            return -1;
        return pflex_error_set(err, "/v1/status: jobs[%zu] has no name", i);
    }
    pflex_jscan_enter(js, PFLEX_J_OBJECT);
    char key[16];
    while (rc == 0 && (r = pflex_jscan_key(js, key, sizeof key, &cut)) == 1) {
        if (cut)
            rc = pflex_jscan_skip(js);
        else if (!strcmp(key, "job"))
            rc = str_or_empty(js, o->name, sizeof o->name);
        else if (!strcmp(key, "throughput"))
            rc = num_or(js, NAN, &o->throughput);
        else if (!strcmp(key, "gpus")) {
            has_gpus = pflex_jscan_peek(js) == PFLEX_J_ARRAY;
            if (!has_gpus) {
                rc = pflex_jscan_skip(js);
                continue;
            }
            pflex_jscan_enter(js, PFLEX_J_ARRAY);
            o->ngpus = 0;
            int q = 0;
            while (rc == 0 && (q = pflex_jscan_item(js)) == 1) {
                int g = 0, k = int_in(js, -2147483647.0, 2147483647.0, &g);
                if (k < 0)
                    return -1;
                if (k == 0)
                    return pflex_error_set(err, "/v1/status: jobs[%zu].gpus[%d] is not an index", i, o->ngpus);
                if (o->ngpus == AGENT_MAX_GPUS)
                    return pflex_error_set(err, "/v1/status: jobs[%zu].gpus is not an array", i);
                o->gpus[o->ngpus++] = g;
            }
            if (q < 0)
                return -1;
        } else
            rc = pflex_jscan_skip(js);
    }
    if (rc < 0 || r < 0)
        return -1;
    if (!o->name[0])
        return pflex_error_set(err, "/v1/status: jobs[%zu] has no name", i);
    if (!has_gpus)
        return pflex_error_set(err, "/v1/status: jobs[%zu].gpus is not an array", i);
    if (o->throughput < 0)
        o->throughput = NAN;
    return 0;
}

/* The status's "gpus" (array) or "jobs" (array or null) into out; 0, or
 * -1 with err. */
static int status_list(struct pflex_jscan *js, int jobs, struct agent_status *out, pflex_error_t *err)
{
    if (jobs)
        out->njobs = 0;
    else
        out->ngpus = 0;
    if (jobs && pflex_jscan_peek(js) == PFLEX_J_NULL)
        return pflex_jscan_skip(js);
    const char *what = jobs ? "/v1/status: 'jobs' is not an array of at most %d"
                            : "/v1/status: 'gpus' is not an array of at most %d";
    if (pflex_jscan_peek(js) != PFLEX_J_ARRAY) {
        if (pflex_jscan_skip(js) < 0)
            return -1;
        return pflex_error_set(err, what, jobs ? AGENT_MAX_JOBS : AGENT_MAX_GPUS);
    }
    pflex_jscan_enter(js, PFLEX_J_ARRAY);
    int r;
    for (size_t i = 0; (r = pflex_jscan_item(js)) == 1; i++) {
        if (i == (jobs ? AGENT_MAX_JOBS : AGENT_MAX_GPUS))
            return pflex_error_set(err, what, jobs ? AGENT_MAX_JOBS : AGENT_MAX_GPUS);
        if (jobs ? status_job(js, i, &out->job[i], err) : status_gpu(js, i, &out->gpu[i], err))
            return -1;
        if (jobs)
            out->njobs++;
        else
            out->ngpus++;
    }
    return r;
}

int agent_parse_status(const char *body, size_t len, struct agent_status *out, pflex_error_t *err)
{
    struct pflex_jscan js;
    pflex_jscan_init(&js, body, len);
    pflex_error_t mine;
    if (!err)
        err = &mine;
    err->text[0] = '\0';
    /* the header only: the entries are written as they are read (a status
     * is 29 KB, most of it room for GPUs and jobs a node does not have) */
    out->ngpus = out->njobs = 0;
    out->host[0] = '\0';
    int has_gpus = 0, r = -1, rc = 0, cut;
    if (pflex_jscan_peek(&js) == PFLEX_J_OBJECT) {
        pflex_jscan_enter(&js, PFLEX_J_OBJECT);
        char key[16];
        while (rc == 0 && (r = pflex_jscan_key(&js, key, sizeof key, &cut)) == 1) {
            if (cut)
                rc = pflex_jscan_skip(&js);
            else if (!strcmp(key, "hostname"))
                rc = str_or_empty(&js, out->host, sizeof out->host);
            else if (!strcmp(key, "gpus")) {
                rc = status_list(&js, 0, out, err);
                has_gpus = 1;
            } else if (!strcmp(key, "jobs"))
                rc = status_list(&js, 1, out, err);
            else
                rc = pflex_jscan_skip(&js);
        }
    }
    if (rc == 0 && r == 0 && pflex_jscan_end(&js) == 0) {
        if (has_gpus)
            return 0;
        pflex_error_set(err, "/v1/status: 'gpus' is not an array of at most %d", AGENT_MAX_GPUS);
    } else if (!err->text[0] || js.err) {
        /* not JSON at all: that comes first, as a parser would say it */
        pflex_error_set(err, "/v1/status: not a JSON object (byte %zu: %s)", js.at,
                        js.err ? js.err : "an object expected");
    }
    out->ngpus = out->njobs = 0;
    return -1;
}

int agent_parse_caps_answer(const char *body, size_t len, struct agent_cap *caps, size_t n,
                            pflex_error_t *err)
{
    for (size_t k = 0; k < n; k++)
        caps[k].enforced_w = NAN;
    /* the enforced limits are taken only once the whole answer is known good */
    double got[AGENT_MAX_GPUS];
    int idx[AGENT_MAX_GPUS];
    size_t m = 0;
    struct pflex_jscan js;
    pflex_jscan_init(&js, body, len);
    int r = -1, rc = 0, has_applied = 0, cut;
    char key[16];
    if (pflex_jscan_peek(&js) == PFLEX_J_OBJECT) {
        pflex_jscan_enter(&js, PFLEX_J_OBJECT);
        while (rc == 0 && (r = pflex_jscan_key(&js, key, sizeof key, &cut)) == 1) {
            if (cut || strcmp(key, "applied") || pflex_jscan_peek(&js) != PFLEX_J_ARRAY) {
                rc = pflex_jscan_skip(&js);
                continue;
            }
            has_applied = 1;
            m = 0;
            pflex_jscan_enter(&js, PFLEX_J_ARRAY);
            int q = 0;
            while (rc == 0 && (q = pflex_jscan_item(&js)) == 1) {
                if (pflex_jscan_peek(&js) != PFLEX_J_OBJECT) {
                    rc = pflex_jscan_skip(&js);
                    continue;
                }
                pflex_jscan_enter(&js, PFLEX_J_OBJECT);
                int gi = 0, has_g = 0, kr = 0;
                double w = NAN;
                while (rc == 0 && (kr = pflex_jscan_key(&js, key, sizeof key, &cut)) == 1) {
                    if (!cut && !strcmp(key, "gpu")) {
                        int k = int_in(&js, -2147483647.0, 2147483647.0, &gi);
                        rc = k < 0 ? -1 : 0;
                        has_g = k == 1;
                    } else if (!cut && !strcmp(key, "enforced_w"))
                        rc = num_or(&js, NAN, &w);
                    else
                        rc = pflex_jscan_skip(&js);
                }
                if (kr < 0)
                    rc = -1;
                if (rc == 0 && has_g && m < AGENT_MAX_GPUS) {
                    idx[m] = gi;
                    got[m++] = w;
                }
            }
            if (q < 0)
                rc = -1;
        }
    }
    if (rc < 0 || r != 0 || pflex_jscan_end(&js) < 0 || !has_applied)
        return pflex_error_set(err, "PUT /v1/caps: the answer has no 'applied' array");
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < n; k++)
            if (caps[k].gpu == idx[i])
                caps[k].enforced_w = got[i];
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

/* A number as jansson writes a real (so that the body is what it was when
 * jansson wrote it): an integral one under 2^53 as its digits and ".0"
 * without printf (caps and fallbacks are whole watts), any other with 17
 * significant digits. */
static size_t put_real(char *p, double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        char d[24];
        size_t n = 0, k = 0;
        unsigned long long u = (unsigned long long)fabs(v);
        do
            d[n++] = (char)('0' + u % 10);
        while ((u /= 10));
        if (v < 0)
            p[k++] = '-';
        while (n)
            p[k++] = d[--n];
        memcpy(p + k, ".0", 2);
        return k + 2;
    }
    int n = snprintf(p, 32, "%.17g", v);
    if (n > 0 && !strpbrk(p, ".eE") && isfinite(v)) {
        memcpy(p + n, ".0", 3);
        n += 2;
    }
    return n > 0 ? (size_t)n : 0;
}

static char *caps_json(const struct agent_cap *caps, size_t n, double lease_s, uint64_t fence)
{
    /* each cap at most 4 keys and 3 numbers of at most 26 bytes */
    char *s = malloc(96 + n * 160), *p = s;
    if (!s)
        return NULL;
    p += sprintf(p, "{\"lease_s\":");
    p += put_real(p, lease_s);
    p += sprintf(p, ",\"caps\":[");
    for (size_t k = 0; k < n; k++) {
        p += sprintf(p, "%s{\"gpu\":%d,\"cap_w\":", k ? "," : "", caps[k].gpu);
        p += put_real(p, caps[k].cap_w);
        if (caps[k].fallback_w > 0 && caps[k].fallback_until > 0 && isfinite(caps[k].fallback_w)
            && isfinite(caps[k].fallback_until)) {
            p += sprintf(p, ",\"fallback_w\":");
            p += put_real(p, caps[k].fallback_w);
            p += sprintf(p, ",\"fallback_until\":");
            p += put_real(p, caps[k].fallback_until);
        }
        *p++ = '}';
    }
    *p++ = ']';
    if (fence)
        p += sprintf(p, ",\"fence\":\"%llu\"", (unsigned long long)fence);   /* exact: a string */
    memcpy(p, "}", 2);
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
