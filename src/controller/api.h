/* api.h — the controller's own HTTP API (served by cmd.c's loop through
 * pflex/http.h):
 *   GET    /v1/status   the state after the last period (JSON)
 *   GET    /metrics     the same as Prometheus text
 *   PUT    /v1/target   {"target": "SPEC"} (pflex/target.h's text form),
 *                       bearer token; 401 without, 400 malformed or out of
 *                       range, nothing changed either way
 *   DELETE /v1/target   withdraw every target set through the API
 *   GET    /healthz     ok
 * With a standby (standby.h), /v1/status has "standby": {"role", ...}, and
 * a standby answers the target's writes 409. */
#ifndef PFLEX_CONTROLLER_API_H
#define PFLEX_CONTROLLER_API_H

#include "controller/controller.h"
#include "controller/standby.h"
#include "pflex/http.h"

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
