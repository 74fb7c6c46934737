/* api.c — the controller's HTTP API (api.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "controller/api.h"
#include "pflex/net/prom.h"
#include "lib/util/clock.h"

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
    ctl_log_to(api->log, "api: refused %s %s from %s: %s", req->method, req->path, req->peer, why);
    pflex_http_respond_error(resp, 401, "%s", why);
    resp->www_authenticate = 1;
    return 0;
}

/* A write refused: answered and logged (who, what, why). */
static void refuse(struct ctl_api *api, const struct pflex_http_request *req, struct pflex_http_response *resp,
                   int status, const char *why)
{
    api->bad_requests++;
    char body[201];
    size_t n = 0;
    for (; n < req->body_len && n < sizeof body - 1; n++) {
        unsigned char ch = (unsigned char)req->body[n];
        body[n] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;     /* one log line, whatever came */
    }
    body[n] = '\0';
    ctl_log_to(api->log, "api: refused %s %s from %s (HTTP %d): %s%s%s%s", req->method, req->path, req->peer,
               status, why, n ? " (body '" : "", body, n ? "')" : "");
    pflex_http_respond_error(resp, status, "target: %s", why);
}

static void put_target(struct ctl_api *api, const struct pflex_http_request *req,
                       struct pflex_http_response *resp)
{
    pflex_error_t err;
    json_t *doc = pflex_http_json_body(req, 4096, &err);
    if (!doc) {
        refuse(api, req, resp, 400, err.text);
        return;
    }
    json_t *spec = json_object_get(doc, "target"), *id = json_object_get(doc, "id");
    json_t *confirm = json_object_get(doc, "confirm");
    double now = pflex_real_s();
    struct pflex_target t;
    const char *bad = NULL;
    char why[400];
    if (!json_is_string(spec))
        bad = "want {\"target\": \"VALUE[,start=TIME][,end=TIME|,for=DUR][,ramp=DUR][,priority=N][,confirm=yes]\"}";
    else if (id && (!json_is_string(id) || strlen(json_string_value(id)) >= sizeof t.id))
        bad = "\"id\": a string of at most 63 bytes";
    else if (confirm && !json_is_boolean(confirm))
        bad = "\"confirm\": true or false";
    /* the command line's grammar and bounds (pflex/flex/target.h) */
    else if (pflex_target_parse(json_string_value(spec), now, &t, &err) < 0)
        bad = err.text;
    else if (!(t.end_s > now))
        bad = "the target ends before it could start";
    if (bad) {
        snprintf(why, sizeof why, "%s", bad);
        json_decref(doc);
        refuse(api, req, resp, 400, why);
        return;
    }
    if (json_is_true(confirm))
        t.confirm = 1;
    snprintf(t.source, sizeof t.source, "api");
    snprintf(t.id, sizeof t.id, "%s", id ? json_string_value(id) : "");
    json_decref(doc);
    /* a step the site cannot take, or not that fast: only when confirmed */
    if (ctl_target_check(api->ctl, &t, now, why, sizeof why)) {
        refuse(api, req, resp, 409, why);
        return;
    }
    if (ctl_target_put(api->ctl, &t, now, &err) < 0) {
        snprintf(why, sizeof why, "%s", err.text);
        refuse(api, req, resp, strstr(err.text, "audit") ? 503 : 400, why);
        return;
    }
    ctl_log_to(api->log, "api: target %g %s from %.0f to %.0f, ramp %g s%s, from %s", t.value,
               t.unit == PFLEX_TARGET_WATTS ? "W" : "of baseline", t.start_s, t.end_s, t.ramp_s,
               t.confirm ? ", confirmed" : "", req->peer);
    pflex_http_respond_json(resp, 200, json_pack("{s:f, s:s, s:f, s:o, s:f, s:i}", "value", t.value,
                                                 "unit", t.unit == PFLEX_TARGET_WATTS ? "W" : "fraction",
                                                 "start", t.start_s,
                                                 "end", isfinite(t.end_s) ? json_real(t.end_s) : json_null(),
                                                 "ramp_s", t.ramp_s, "priority", t.priority));
}

/* POST /v1/openadr/notify: the VTN's callback (docs/openadr.md); its own
 * token (not the API's), checked and logged by ctl_vtn_notify. */
static void openadr_notify(struct ctl_api *api, const struct pflex_http_request *req,
                           struct pflex_http_response *resp)
{
    if (strcmp(req->method, "POST")) {
        ctl_log_to(api->log, "api: refused %s %s from %s (HTTP 405): POST only", req->method, req->path, req->peer);
        pflex_http_respond_error(resp, 405, "%s: POST only", req->path);
        return;
    }
    if (api->standby && !standby_leading(api->standby)) {
        ctl_log_to(api->log, "api: refused POST %s from %s (HTTP 409): this controller stands by", req->path,
                   req->peer);
        pflex_http_respond_error(resp, 409, "this controller stands by: its leader takes the VTN's events");
        return;
    }
    char why[400];
    int st = ctl_vtn_notify(api->ctl, pflex_http_header(req, "Authorization"), req->body, req->body_len,
                            req->peer, why, sizeof why);
    if (st == 200) {
        pflex_http_respond_json(resp, 200, json_pack("{s:s}", "result", why));
        return;
    }
    if (st == 401)
        api->auth_failures++;
    else
        api->bad_requests++;
    pflex_http_respond_error(resp, st, "%s", why);
    if (st == 401)
        resp->www_authenticate = 1;
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
            ctl_log_to(api->log, "api: refused %s %s from %s (HTTP 405): GET, PUT or DELETE only", req->method,
                       req->path, req->peer);
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
            pflex_error_t err;
            long n = ctl_target_withdraw(api->ctl, "api", pflex_real_s(), &err);
            if (n < 0) {
                ctl_log_to(api->log, "api: DELETE %s from %s failed (HTTP 503, nothing withdrawn): %s", req->path,
                           req->peer, err.text);
                pflex_http_respond_error(resp, 503, "%s", err.text);
                return;
            }
            ctl_log_to(api->log, "api: DELETE %s from %s: %ld targets withdrawn", req->path, req->peer, n);
            pflex_http_respond_json(resp, 200, json_pack("{s:i}", "withdrawn", (int)n));
        }
    } else if (!strcmp(req->path, "/v1/openadr/notify")) {
        openadr_notify(api, req, resp);
    } else if (!read) {
        ctl_log_to(api->log, "api: refused %s %s from %s (HTTP 405): GET only", req->method, req->path, req->peer);
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
    } else if (!strcmp(req->path, "/healthz") || !strcmp(req->path, "/readyz")) {
        /* live: periods complete; ready: and the agents take their caps and
         * the telemetry is believed (status.c) */
        char why[400];
        if (ctl_health(api->ctl, !strcmp(req->path, "/readyz"), why, sizeof why) < 0)
            pflex_http_respond_error(resp, 503, "%s", why);
        else
            pflex_http_respond_text(resp, 200, "text/plain", "ok\n", 3);
    } else {
        pflex_http_respond_error(resp, 404, "no such resource %s (see pflex controller --help)", req->path);
    }
}
