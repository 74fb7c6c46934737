/* api.h — the controller's own HTTP API (served on a thread of its own by
 * cmd.c, through pflex/net/http.h; it never takes a lock held across the
 * network, and writes a target to the audit before it takes effect):
 *   GET    /v1/status   the state after the last period (JSON)
 *   GET    /metrics     the same as Prometheus text
 *   PUT    /v1/target   {"target": "SPEC", "id": "...", "confirm": bool}
 *                       (pflex/flex/target.h's text form), bearer token; 401
 *                       without, 400 malformed or out of range, 409 a
 *                       level under the site's floor or a step faster than
 *                       its ramp rate unless confirmed (ctl_target_check),
 *                       nothing changed on any refusal (each one logged)
 *   DELETE /v1/target   withdraw every target set through the API (in the
 *                       audit first: a restart does not bring them back)
 *   GET    /healthz     ok
 *   POST   /v1/openadr/notify  an OpenADR 3 notification from the VTN
 *                       (--vtn-callback), with the token the subscription
 *                       gave it: 401 without, 400 malformed, 409 replayed or
 *                       stale, 413 over 64 KiB (ctl_vtn_notify) */
#ifndef PFLEX_CONTROLLER_API_H
#define PFLEX_CONTROLLER_API_H

#include "controller/controller.h"
#include "controller/standby.h"
#include "pflex/net/http.h"

struct ctl_api {
    ctl_t *ctl;
    const char *token;          /* NULL: the API takes no writes */
    FILE *log;
    standby_t *standby;         /* with --etcd: the role in the status; a standby
                                 * takes no target (409: its leader's replace them) */
    unsigned long auth_failures, bad_requests;
};

/* The pflex_http_handler; ud is a struct ctl_api. */
void ctl_api_handle(void *ud, const struct pflex_http_request *req, struct pflex_http_response *resp);

#endif
