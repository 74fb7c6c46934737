/* capagent.c — a plan of per-job caps put into force through a
 * node's agent (pflex/capagent.h): its job map (GET /v1/jobs) says which
 * jobs have GPUs there, one PUT /v1/caps sets them with a lease, and the
 * answer says what each GPU enforces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/capagent.h"
#include "pflex/http.h"

void pflex_capagent_report_fini(struct pflex_capagent_report *r)
{
    json_decref(r->applied);
    json_decref(r->skipped);
    json_decref(r->errors);
    r->applied = r->skipped = r->errors = NULL;
}

/* The agent's job list (GET URL/v1/jobs), or NULL with err. */
static json_t *agent_jobs(const char *url, const char *token, double timeout_s,
                          pflex_error_t *err)
{
    char u[2048];
    long status;
    char *body = NULL;
    snprintf(u, sizeof u, "%s/v1/jobs", url);
    if (pflex_http_request("GET", u, token, NULL, timeout_s, &status, &body, err))
        return NULL;
    json_t *known = status == 200 ? json_loads(body, 0, NULL) : NULL;
    free(body);
    if (!known)
        pflex_error_set(err, "GET %s: HTTP %ld, not an agent's job list", u, status);
    return known;
}

/* The caps to send: a job's own GPUs, else the job by name when the
 * agent's job map has it; the rest appended to skipped. */
static json_t *caps_of(const pflex_capplan_t *p, const json_t *known, json_t *skipped)
{
    json_t *caps = json_array();
    for (size_t k = 0; k < p->njobs; k++) {
        const struct pflex_capplan_job *j = &p->jobs[k];
        size_t i;
        json_t *g;
        if (j->gpus) {
            json_array_foreach(j->gpus, i, g)
                json_array_append_new(caps, json_pack("{s:O, s:f}", "gpu", g, "cap_w", j->cap_w));
            continue;
        }
        int here = 0;
        json_array_foreach(json_object_get(known, "jobs"), i, g) {
            const char *kn = json_string_value(json_object_get(g, "job"));
            here |= kn && !strcmp(kn, j->job);
        }
        if (here)
            json_array_append_new(caps, json_pack("{s:s, s:f}", "job", j->job, "cap_w", j->cap_w));
        else
            json_array_append_new(skipped, json_pack("{s:s, s:s}", "job", j->job, "reason",
                                                     "not in the agent's job map"));
    }
    return caps;
}

/* The agent's answer to PUT /v1/caps (HTTP 200 or 502) into r. */
static void read_answer(const json_t *ans, struct pflex_capagent_report *r)
{
    size_t i;
    json_t *a, *e;
    json_array_foreach(json_object_get(ans, "applied"), i, a) {
        json_t *lease = json_object_get(a, "lease");
        const char *lj = json_string_value(json_object_get(lease, "job"));
        json_array_append_new(r->applied, json_pack(
            "{s:s, s:O, s:O, s:O, s:O, s:O}", "job", lj ? lj : "",
            "gpu", json_object_get(a, "gpu"), "uuid", json_object_get(a, "uuid"),
            "cap_w", json_object_get(lease, "cap_w"),
            "enforced_w", json_object_get(a, "enforced_w"),
            "lease_s", json_object_get(lease, "lease_s")));
    }
    json_array_foreach(json_object_get(ans, "errors"), i, e)
        json_array_append_new(r->errors, json_pack("{s:I, s:s}", "gpu",
            (json_int_t)json_integer_value(json_object_get(e, "gpu")),
            "error", json_string_value(json_object_get(e, "error"))
                         ? json_string_value(json_object_get(e, "error")) : "(null)"));
}

/* What put_caps returns when no answer came. */
#define NO_ANSWER (-4)

/* PUT URL/v1/caps; 0 with r filled, or with err: -1 (the agent answered
 * with an error), PFLEX_CAPAGENT_REFUSED, NO_ANSWER. */
static int put_caps(const char *url, const char *token, double timeout_s, double lease_s,
                    json_t *caps, struct pflex_capagent_report *r, pflex_error_t *err)
{
    char u[2048];
    long status;
    char *body = NULL;
    json_t *req = json_pack("{s:f, s:O}", "lease_s", lease_s, "caps", caps);
    char *text = json_dumps(req, JSON_PRESERVE_ORDER);
    json_decref(req);
    snprintf(u, sizeof u, "%s/v1/caps", url);
    if (!text) {
        pflex_error_sys(err, "out of memory");
        return NO_ANSWER;
    }
    int rc = pflex_http_request("PUT", u, token, text, timeout_s, &status, &body, err);
    free(text);
    if (rc)
        return NO_ANSWER;
    json_t *ans = json_loads(body, 0, NULL);
    const char *msg = json_string_value(json_object_get(ans, "error"));
    if (status == 400) {
        pflex_error_set(err, "the agent refused the plan, nothing changed: %s", msg ? msg : body);
        rc = PFLEX_CAPAGENT_REFUSED;
    } else if (status != 200 && status != 502)
        rc = pflex_error_set(err, "PUT %s: HTTP %ld: %s", u, status, msg ? msg : body);
    else
        read_answer(ans, r);
    json_decref(ans);
    free(body);
    return rc;
}

int pflex_capagent_apply(const char *url, const char *token, double timeout_s,
                         double lease_s, const pflex_capplan_t *p,
                         struct pflex_capagent_report *r, pflex_error_t *err)
{
    *r = (struct pflex_capagent_report){NULL, NULL, NULL};
    json_t *known = agent_jobs(url, token, timeout_s, err);
    if (!known)
        return -1;
    json_t *skipped = json_array();
    json_t *caps = caps_of(p, known, skipped);
    json_decref(known);
    struct pflex_capagent_report got = {json_array(), skipped, json_array()};
    int rc = json_array_size(caps) ? put_caps(url, token, timeout_s, lease_s, caps, &got, err)
                                   : 0;
    json_decref(caps);
    /* No answer, or a refusal: nothing to report. */
    if (rc == PFLEX_CAPAGENT_REFUSED || rc == NO_ANSWER)
        pflex_capagent_report_fini(&got);
    *r = got;
    return rc == NO_ANSWER ? -1 : rc;
}
