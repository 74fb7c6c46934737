/* telemetry_promjson.c — the Prometheus HTTP API's JSON (/api/v1/query:
 * resultType "vector", /api/v1/query_range: "matrix"), from a file or
 * fetched from a URL with libcurl.
 *
 *   {"status":"success","data":{"resultType":"vector","result":[
 *     {"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0",...},
 *      "value":[1714564800.123,"655.2"]}]}}
 *
 * A series' labels are read as the text reader reads them (gpu, UUID,
 * Hostname or hostname, hpc_job, pod).  Errors name the element:
 * "file: data.result[3].values[7]: ...".
 */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/io/telemetry_impl.h"

static const char *label(json_t *metric, const char *a, const char *b, size_t *len)
{
    json_t *v = json_object_get(metric, a);
    if (!json_is_string(v) && b)
        v = json_object_get(metric, b);
    if (!json_is_string(v))
        return NULL;
    *len = json_string_length(v);
    return json_string_value(v);
}

static int sample_value(json_t *pair, double *ts, double *v, int *blank)
{
    if (!json_is_array(pair) || json_array_size(pair) != 2)
        return -1;
    json_t *t = json_array_get(pair, 0), *x = json_array_get(pair, 1);
    if (!json_is_number(t) || !json_is_string(x))
        return -1;
    *ts = json_number_value(t);
    if (!isfinite(*ts))
        return -1;
    const char *s = json_string_value(x);
    size_t n = json_string_length(x);
    *blank = 0;
    if ((n == 3 && !strcmp(s, "NaN")) || (n == 4 && (!strcmp(s, "+Inf") || !strcmp(s, "-Inf")))) {
        *blank = 1;
        return 0;
    }
    if (tm_parse_double(s, n, v) < 0)
        return -1;
    if (pflex_dcgm_is_blank(*v))
        *blank = 1;
    return 0;
}

int tm_read_promjson(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                     const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    json_error_t je;
    json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    int rc = -1;
    if (!doc)
        return pflex_error_set(err, "%s:%d: %s", name, je.line, je.text);
    json_t *status = json_object_get(doc, "status");
    if (!json_is_string(status)) {
        pflex_error_set(err, "%s: not a Prometheus API response (no \"status\")", name);
        goto out;
    }
    if (strcmp(json_string_value(status), "success")) {
        json_t *e = json_object_get(doc, "error");
        pflex_error_set(err, "%s: Prometheus says %s: %s", name, json_string_value(status),
                        json_is_string(e) ? json_string_value(e) : "(no message)");
        goto out;
    }
    json_t *data = json_object_get(doc, "data");
    json_t *type = json_object_get(data, "resultType");
    json_t *result = json_object_get(data, "result");
    if (!json_is_string(type) || !json_is_array(result)) {
        pflex_error_set(err, "%s: data.resultType or data.result missing", name);
        goto out;
    }
    int matrix = !strcmp(json_string_value(type), "matrix");
    if (!matrix && strcmp(json_string_value(type), "vector")) {
        pflex_error_set(err, "%s: data.resultType '%s': pflex reads vector and matrix", name,
                        json_string_value(type));
        goto out;
    }
    size_t i;
    json_t *item;
    json_array_foreach(result, i, item) {
        json_t *metric = json_object_get(item, "metric");
        if (!json_is_object(metric)) {
            pflex_error_set(err, "%s: data.result[%zu]: no \"metric\" object", name, i);
            goto out;
        }
        size_t nlen = 0, l;
        const char *mname = label(metric, "__name__", NULL, &nlen);
        int field = mname ? pflex_dcgm_by_name(mname, nlen) : -1;
        json_t *vals = json_object_get(item, matrix ? "values" : "value");
        if (!(matrix ? json_is_array(vals) : json_is_array(vals))) {
            pflex_error_set(err, "%s: data.result[%zu]: no \"%s\"", name, i,
                            matrix ? "values" : "value");
            goto out;
        }
        if (field < 0) {
            t->skipped += matrix ? json_array_size(vals) : 1;
            continue;
        }
        struct tm_key k = {0};
        k.field = field;
        k.gpu = -1;
        const char *g = label(metric, "gpu", NULL, &l);
        if (g && tm_parse_index(g, l, &k.gpu) < 0) {
            pflex_error_set(err, "%s: data.result[%zu]: label gpu=\"%.40s\" is not a GPU index",
                            name, i, g);
            goto out;
        }
        const char *mig = label(metric, "GPU_I_ID", NULL, &l);
        if (mig && l && k.gpu >= 0) {
            long gi;
            if (tm_parse_index(mig, l, &gi) < 0 || gi > 99 || k.gpu > 999) {
                pflex_error_set(err, "%s: data.result[%zu]: label GPU_I_ID=\"%.40s\" is not a MIG "
                                "instance id (0-99)", name, i, mig);
                goto out;
            }
            k.gpu = 10000 + 100 * k.gpu + gi;
        }
        if ((k.uuid = label(metric, "UUID", "uuid", &k.uuid_len)) && !k.uuid_len)
            k.uuid = NULL;
        if (!(k.host = label(metric, "Hostname", "hostname", &k.host_len)) &&
            !(k.host = label(metric, "instance", NULL, &k.host_len))) {
            k.host = o->host ? o->host : "";
            k.host_len = strlen(k.host);
        }
        if ((!(k.job = label(metric, "hpc_job", NULL, &k.job_len)) || !k.job_len) &&
            (!(k.job = label(metric, "pod", NULL, &k.job_len)) || !k.job_len)) {
            k.job = o->job;
            k.job_len = o->job ? strlen(o->job) : 0;
        }
        size_t nv = matrix ? json_array_size(vals) : 1;
        for (size_t j = 0; j < nv; j++) {
            json_t *pair = matrix ? json_array_get(vals, j) : vals;
            double ts, v;
            int blank;
            if (sample_value(pair, &ts, &v, &blank) < 0) {
                if (matrix)
                    pflex_error_set(err, "%s: data.result[%zu].values[%zu]: not [time, \"value\"]",
                                    name, i, j);
                else
                    pflex_error_set(err, "%s: data.result[%zu].value: not [time, \"value\"]", name,
                                    i);
                goto out;
            }
            if (blank) {
                t->skipped++;
                continue;
            }
            if (tm_add(t, &k, ts, v, name, 0, err) < 0)
                goto out;
        }
    }
    rc = 0;
out:
    json_decref(doc);
    return rc;
}

/* ---- fetching ---- */

int pflex_tm_is_url(const char *s)
{
    return !strncmp(s, "http://", 7) || !strncmp(s, "https://", 8);
}

struct body {
    char *p;
    size_t len, cap, max;
    int too_big;
};

static size_t on_data(char *data, size_t size, size_t n, void *ud)
{
    struct body *b = ud;
    size_t add = size * n;
    if (add > b->max - b->len) {
        b->too_big = 1;
        return 0;   /* stops the transfer */
    }
    if (b->len + add > b->cap) {
        size_t nc = b->cap ? b->cap : 65536;
        while (nc < b->len + add)
            nc *= 2;
        if (nc > b->max)
            nc = b->max;
        char *np = realloc(b->p, nc);
        if (!np)
            return 0;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, data, add);
    b->len += add;
    return add;
}

int pflex_tm_fetch(pflex_tm_t *t, const char *url, const struct pflex_tm_read_opts *o,
                   pflex_error_t *err)
{
    if (!pflex_tm_is_url(url))
        return pflex_error_set(err, "%s: pflex fetches only http:// and https:// URLs", url);
    const struct pflex_tm_limits *lim = tm_limits(t);
    struct body b = {NULL, 0, 0, lim->max_fetch, 0};
    CURL *c = curl_easy_init();
    if (!c)
        return pflex_error_set(err, "%s: cannot start libcurl", url);
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, lim->timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, lim->timeout_ms);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)lim->max_fetch);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "pflex-telemetry");
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    int rc = -1;
    if (b.too_big || cc == CURLE_FILESIZE_EXCEEDED)
        pflex_error_set(err, "%s: the response is larger than %zu bytes (limit)", url, b.max);
    else if (cc != CURLE_OK)
        pflex_error_set(err, "%s: %s", url, ebuf[0] ? ebuf : curl_easy_strerror(cc));
    else if (status >= 400)
        pflex_error_set(err, "%s: HTTP status %ld", url, status);
    else
        rc = pflex_tm_read_mem(t, b.p ? b.p : "", b.len, url, o, err);
    free(b.p);
    return rc;
}
