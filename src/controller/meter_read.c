/* meter_read.c — one instant query of the grid meter and its answer
 * (meter.h): the transport and the parser, apart from the controller so
 * that the fuzz target builds them alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include "controller/meter.h"
#include "pflex/net/http.h"

static int num_of(json_t *v, double *out)
{
    const char *s = json_string_value(v);
    char *end;
    if (!s)
        return -1;
    *out = strtod(s, &end);
    return end == s || *end ? -1 : 0;
}

int meter_parse(const char *body, size_t len, double *value, double *stamp_s, pflex_error_t *err)
{
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root)
        return pflex_error_set(err, "meter: the answer is not JSON (line %d: %s)", je.line, je.text);
    int rc = -1;
    json_t *data = json_object_get(root, "data"), *res = json_object_get(data, "result");
    const char *type = json_string_value(json_object_get(data, "resultType"));
    json_t *pair = NULL;
    if (!json_is_string(json_object_get(root, "status"))
        || strcmp(json_string_value(json_object_get(root, "status")), "success"))
        pflex_error_set(err, "meter: the answer is not a successful query result");
    else if (type && !strcmp(type, "scalar"))
        pair = res;
    else if (!json_is_array(res))
        pflex_error_set(err, "meter: the answer has no result");
    else if (json_array_size(res) == 0)
        pflex_error_set(err, "meter: the query matched no series (the meter's series gone, or stale)");
    else if (json_array_size(res) > 1)
        pflex_error_set(err, "meter: the query matched %zu series, not one (sum them in the query)",
                        json_array_size(res));
    else
        pair = json_object_get(json_array_get(res, 0), "value");
    if (pair) {
        json_t *ts = json_array_get(pair, 0);
        if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_number(ts)
            || num_of(json_array_get(pair, 1), value) < 0)
            pflex_error_set(err, "meter: the result's value is not [time, \"number\"]");
        else {
            *stamp_s = json_number_value(ts);
            rc = 0;
        }
    }
    json_decref(root);
    return rc;
}

int meter_read(const char *url, const char *query, double timeout_s, double *value, double *stamp_s,
               pflex_error_t *err)
{
    char *q = curl_easy_escape(NULL, query, 0);
    if (!q)
        return pflex_error_set(err, "out of memory");
    size_t n = strlen(url) + strlen(q) + 32;
    char *full = malloc(n);
    if (!full) {
        curl_free(q);
        return pflex_error_set(err, "out of memory");
    }
    snprintf(full, n, "%s/api/v1/query?query=%s", url, q);
    curl_free(q);
    long status = 0;
    char *body = NULL;
    int rc = pflex_http_request("GET", full, NULL, NULL, timeout_s, &status, &body, err);
    free(full);
    if (rc == 0 && status != 200)
        rc = pflex_error_set(err, "meter: %s answered HTTP %ld", url, status);
    if (rc == 0)
        rc = meter_parse(body ? body : "", body ? strlen(body) : 0, value, stamp_s, err);
    free(body);
    return rc;
}
