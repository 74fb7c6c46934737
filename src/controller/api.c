/* api.c — the controller's HTTP API (api.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "controller/api.h"
#include "pflex/prom.h"
#include "lib/util/clock.h"

/* Targets the API takes: above nothing, at most 1 GW or 1.5 x the
 * baseline, a ramp of at most a day, and an end still to come. */
#define API_MAX_W 1e9
#define API_MAX_FRACTION 1.5
#define API_MAX_RAMP_S 86400

static int authorised(struct ctl_api *api, const struct pflex_http_request *req,
                      struct pflex_http_response *resp)
{
    const char *h = pflex_http_header(req, "Authorization");
    const char *why = !api->token ? "this controller has no --api-token-file: it takes no writes"
                    : !h || strncmp(h, "Bearer ", 7) ? "missing 'Authorization: Bearer TOKEN'"
                    : !pflex_http_secret_equal(api->token, h + 7) ? "wrong token" : NULL;
    if (!why)
        return 1;
    api->auth_failures++;
    if (api->log) {
        fprintf(api->log, "api: refused %s %s from %s: %s\n", req->method, req->path, req->peer, why);
        fflush(api->log);
    }
    pflex_http_respond_error(resp, 401, "%s", why);
    resp->www_authenticate = 1;
    return 0;
}

static void put_target(struct ctl_api *api, const struct pflex_http_request *req,
                       struct pflex_http_response *resp)
{
    pflex_error_t err;
    json_t *doc = pflex_http_json_body(req, 4096, &err);
    if (!doc) {
        api->bad_requests++;
        pflex_http_respond_error(resp, 400, "%s", err.text);
        return;
    }
    json_t *spec = json_object_get(doc, "target"), *id = json_object_get(doc, "id");
    double now = pflex_real_s();
    struct pflex_target t;
    const char *bad = NULL;
    if (!json_is_string(spec))
        bad = "want {\"target\": \"VALUE[,start=TIME][,end=TIME|,for=DUR][,ramp=DUR][,priority=N]\"}";
    else if (id && (!json_is_string(id) || strlen(json_string_value(id)) >= sizeof t.id))
        bad = "\"id\": a string of at most 63 bytes";
    else if (pflex_target_parse(json_string_value(spec), now, &t, &err) < 0)
        bad = err.text;
    else if (t.unit == PFLEX_TARGET_WATTS && !(t.value > 0 && t.value <= API_MAX_W))
        bad = "a target in watts must be in (0, 1 GW]";
    else if (t.unit == PFLEX_TARGET_FRACTION && !(t.value > 0 && t.value <= API_MAX_FRACTION))
        bad = "a target as a fraction of the baseline must be in (0, 1.5]";
    else if (!(t.ramp_s >= 0 && t.ramp_s <= API_MAX_RAMP_S))
        bad = "ramp: at most a day";
    else if (!(t.end_s > now))
        bad = "the target ends before it could start";
    if (bad) {
        api->bad_requests++;
        pflex_http_respond_error(resp, 400, "target: %s", bad);
        json_decref(doc);
        return;
    }
    snprintf(t.source, sizeof t.source, "api");
    snprintf(t.id, sizeof t.id, "%s", id ? json_string_value(id) : "");
    json_decref(doc);
    if (pflex_target_set_add(ctl_targets(api->ctl), &t, &err) < 0) {
        api->bad_requests++;
        pflex_http_respond_error(resp, 400, "target: %s", err.text);
        return;
    }
    if (api->log) {
        fprintf(api->log, "api: target %g %s from %.0f to %.0f, ramp %g s, from %s\n", t.value,
                t.unit == PFLEX_TARGET_WATTS ? "W" : "of baseline", t.start_s, t.end_s, t.ramp_s,
                req->peer);
        fflush(api->log);
    }
    pflex_http_respond_json(resp, 200, json_pack("{s:f, s:s, s:f, s:o, s:f, s:i}", "value", t.value,
                                                 "unit", t.unit == PFLEX_TARGET_WATTS ? "W" : "fraction",
                                                 "start", t.start_s,
                                                 "end", isfinite(t.end_s) ? json_real(t.end_s) : json_null(),
                                                 "ramp_s", t.ramp_s, "priority", t.priority));
}

void ctl_api_handle(void *ud, const struct pflex_http_request *req, struct pflex_http_response *resp)
{
    struct ctl_api *api = ud;
    int read = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
    if (!strcmp(req->path, "/v1/target")) {
        if (read) {
            json_t *st = ctl_status_json(api->ctl, pflex_real_s());
            json_t *t = json_incref(json_object_get(st, "target"));
            json_decref(st);
            pflex_http_respond_json(resp, 200, json_pack("{s:o}", "target", t));
            return;
        }
        if (strcmp(req->method, "PUT") && strcmp(req->method, "DELETE")) {
            pflex_http_respond_error(resp, 405, "/v1/target: GET, PUT or DELETE");
            return;
        }
        if (!authorised(api, req, resp))
            return;
        if (api->standby && !standby_leading(api->standby)) {
            json_t *sb = standby_json(api->standby);
            pflex_http_respond_error(resp, 409, "this controller stands by (its leader, %s, takes targets; "
                                     "its own would be replaced by the leader's)",
                                     json_string_value(json_object_get(sb, "leader")) ? json_string_value(json_object_get(sb, "leader")) : "none now");
            json_decref(sb);
            return;
        }
        if (!strcmp(req->method, "PUT")) {
            put_target(api, req, resp);
        } else {
            size_t n = pflex_target_set_remove_source(ctl_targets(api->ctl), "api");
            pflex_http_respond_json(resp, 200, json_pack("{s:i}", "withdrawn", (int)n));
        }
    } else if (!read) {
        pflex_http_respond_error(resp, 405, "%s: GET only", req->path);
    } else if (!strcmp(req->path, "/v1/status")) {
        json_t *st = ctl_status_json(api->ctl, pflex_real_s());
        if (api->standby)
            json_object_set_new(st, "standby", standby_json(api->standby));
        pflex_http_respond_json(resp, 200, st);
    } else if (!strcmp(req->path, "/metrics")) {
        size_t len;
        char *text = ctl_metrics(api->ctl, pflex_real_s(), &len);
        if (!text) {
            pflex_http_respond_error(resp, 500, "out of memory");
            return;
        }
        if (api->standby) {
            /* the role, for an alert on no leader or two */
            uint64_t fence = 0;
            int lead = standby_leading(api->standby);
            standby_may_push(api->standby, &fence);
            char more[400];
            int m = snprintf(more, sizeof more,
                             "# HELP pflex_controller_leader 1 while this controller leads (--etcd), 0 standing by.\n"
                             "# TYPE pflex_controller_leader gauge\npflex_controller_leader %d\n"
                             "# HELP pflex_controller_fence The fencing token of its leadership (0: never led).\n"
                             "# TYPE pflex_controller_fence gauge\npflex_controller_fence %llu\n",
                             lead, (unsigned long long)fence);
            char *t2 = m > 0 && (size_t)m < sizeof more ? realloc(text, len + (size_t)m + 1) : NULL;
            if (t2) {
                memcpy(t2 + len, more, (size_t)m + 1);
                text = t2;
                len += (size_t)m;
            }
        }
        pflex_http_respond_take(resp, 200, PFLEX_PROM_CONTENT_TYPE, text, len);
    } else if (!strcmp(req->path, "/healthz")) {
        pflex_http_respond_text(resp, 200, "text/plain", "ok\n", 3);
    } else {
        pflex_http_respond_error(resp, 404, "no such resource %s (see pflex controller --help)", req->path);
    }
}
