/* test_openadr.c — OpenADR 3 events into targets, reports, and the VEN
 * against the small VTN over real HTTP on loopback (every request bounded
 * by a timeout of at most 2 s). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>
#include "pflex/net/http.h"
#include "pflex/net/openadr.h"
#include "pflex/net/vtn.h"

#define assert_near(a, b, eps) near_((a), (b), (eps), #a, __LINE__)
static void near_(double a, double b, double eps, const char *what, int line)
{
    if (a == b || fabs(a - b) <= eps)
        return;
    fail_msg("line %d: %s = %.9g, expected %.9g (within %g)", line, what, a, b, eps);
}

static double t_of(const char *s)
{
    double t;
    pflex_error_t err;
    if (pflex_target_parse_time(s, 0, &t, &err) < 0)
        fail_msg("%s", err.text);
    return t;
}

static const char *EVENTS =
    "[{\"id\":\"ev-1\",\"programID\":\"prog-a\",\"priority\":2,"
    "  \"payloadDescriptors\":[{\"objectType\":\"EVENT_PAYLOAD_DESCRIPTOR\",\"payloadType\":\"IMPORT_CAPACITY_LIMIT\",\"units\":\"KW\"},"
    "                         {\"payloadType\":\"DISPATCH_SETPOINT\",\"units\":\"MW\"}],"
    "  \"intervalPeriod\":{\"start\":\"2026-05-03T18:00:00Z\",\"duration\":\"PT15M\"},"
    "  \"intervals\":["
    "    {\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[750]}]},"
    "    {\"id\":1,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[600.5]},{\"type\":\"PRICE\",\"values\":[0.3]}]},"
    "    {\"id\":2,\"intervalPeriod\":{\"start\":\"2026-05-03T19:00:00Z\",\"duration\":\"PT1H\"},"
    "              \"payloads\":[{\"type\":\"DISPATCH_SETPOINT\",\"values\":[0.5]}]}]},"
    " {\"id\":\"ev-2\",\"programID\":\"prog-b\",\"priority\":null,"
    "  \"intervalPeriod\":{\"start\":\"0001-01-01T00:00:00Z\",\"duration\":\"P9999Y\"},"
    "  \"intervals\":[{\"id\":7,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]}]},"
    " {\"id\":\"ev-3\",\"programID\":\"prog-a\","
    "  \"intervalPeriod\":{\"start\":\"2026-05-03T18:00:00-07:00\",\"duration\":\"PT2H\"},"
    "  \"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"CONTROL_LEVEL_OFFSET_PERCENT\",\"values\":[-20]}]},"
    "                {\"id\":1,\"payloads\":[{\"type\":\"DISPATCH_SETPOINT_RELATIVE\",\"values\":[-100]}]},"
    "                {\"id\":2,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[0]}]},"
    "                {\"id\":3,\"payloads\":[{\"type\":\"PRICE\",\"values\":[0.1]}]}]}]";

static const struct pflex_target *find(const pflex_target_set_t *s, const char *id)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].id, id))
            return &s->t[i];
    fail_msg("no target %s", id);
    return NULL;
}

static void test_parse_events(void **state)
{
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 1.7e9);
    o.baseline_w = 1e6;
    o.ramp_s = 60;
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    pflex_oadr_events_t evs = {0};
    pflex_error_t err;
    if (pflex_oadr_parse_events(EVENTS, strlen(EVENTS), "t", &o, &s, &evs, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(evs.n, 3);
    assert_int_equal(evs.skipped, 0);
    assert_int_equal(s.n, 6);
    double t18 = t_of("2026-05-03T18:00:00Z");
    /* consecutive intervals of the event's duration */
    const struct pflex_target *a = find(&s, "ev-1/0"), *b = find(&s, "ev-1/1"), *c = find(&s, "ev-1/2");
    assert_near(a->start_s, t18, 0);
    assert_near(a->end_s, t18 + 900, 0);
    assert_near(a->value, 750e3, 1e-6);
    assert_int_equal(a->unit, PFLEX_TARGET_WATTS);
    assert_int_equal(a->priority, 2);
    assert_near(a->ramp_s, 60, 0);
    assert_string_equal(a->source, "openadr");
    assert_near(b->start_s, t18 + 900, 0);
    assert_near(b->value, 600.5e3, 1e-6);
    /* its own period, MW units */
    assert_near(c->start_s, t18 + 3600, 0);
    assert_near(c->end_s, t18 + 7200, 0);
    assert_near(c->value, 0.5e6, 1e-6);
    /* "now" and forever; SIMPLE 2 -> 0.75 of baseline; null priority -> lowest */
    const struct pflex_target *d = find(&s, "ev-2/7");
    assert_near(d->start_s, 1.7e9, 0);
    assert_true(isinf(d->end_s));
    assert_int_equal(d->unit, PFLEX_TARGET_FRACTION);
    assert_near(d->value, 0.75, 0);
    assert_int_equal(d->priority, 1000000);
    assert_int_equal(evs.ev[1].priority, -1);
    /* percent offset, relative setpoint; SIMPLE 0 and PRICE make none */
    double t18m7 = t18 + 7 * 3600;
    const struct pflex_target *e = find(&s, "ev-3/0"), *f = find(&s, "ev-3/1");
    assert_near(e->start_s, t18m7, 0);
    assert_near(e->value, 0.8, 1e-12);
    assert_int_equal(e->unit, PFLEX_TARGET_FRACTION);
    assert_near(f->start_s, t18m7 + 7200, 0);
    assert_near(f->value, 1e6 - 100e3, 1e-6);
    assert_int_equal(evs.ev[2].ntargets, 2);
    /* program filter */
    pflex_target_set_t s2;
    pflex_target_set_init(&s2);
    o.program_id = "prog-b";
    assert_int_equal(pflex_oadr_parse_events(EVENTS, strlen(EVENTS), "t", &o, &s2, NULL, &err), 0);
    assert_int_equal(s2.n, 1);
    assert_string_equal(s2.t[0].id, "ev-2/7");
    /* The resolved limit: ev-1 (priority 2) beats ev-2 (lowest) at 18:05. */
    assert_near(pflex_target_limit_w(&s, t18 + 300 + 60, 1e6, 2e6), 750e3, 1e-6);
    pflex_target_set_fini(&s);
    pflex_target_set_fini(&s2);
    pflex_oadr_events_fini(&evs);
}

static void test_tightest_payload(void **state)
{
    const char *js = "[{\"id\":\"x\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\"},"
                     "\"payloadDescriptors\":[{\"payloadType\":\"IMPORT_CAPACITY_LIMIT\",\"units\":\"W\"}],"
                     "\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]},"
                     "{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[800000]}]}]}]";
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 0);
    o.baseline_w = 1e6;     /* SIMPLE 1: 900 kW; the limit 800 kW is tighter */
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    pflex_error_t err;
    assert_int_equal(pflex_oadr_parse_events(js, strlen(js), "t", &o, &s, NULL, &err), 0);
    assert_int_equal(s.n, 1);
    assert_near(s.t[0].value, 800000, 0);
    assert_int_equal(s.t[0].unit, PFLEX_TARGET_WATTS);
    assert_true(isinf(s.t[0].end_s));   /* no duration: until withdrawn */
    pflex_target_set_fini(&s);
}

static void test_randomize(void **state)
{
    /* 400 events with randomizeStart PT10M: offsets in [0, 600), fixed by
     * seed and VEN name, about uniform. */
    json_t *arr = json_array();
    for (int i = 0; i < 400; i++) {
        char id[32];
        snprintf(id, sizeof id, "e%d", i);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:[{s:i, s:[{s:s, s:[i]}]}]}",
            "id", id, "programID", "p", "intervalPeriod", "start", "2026-01-01T00:00:00Z",
            "duration", "PT1H", "randomizeStart", "PT10M", "intervals", "id", 0, "payloads",
            "type", "IMPORT_CAPACITY_LIMIT", "values", 500));
    }
    char *js = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 0);
    o.client_name = "ven-a";
    pflex_oadr_events_t e1 = {0}, e2 = {0}, e3 = {0};
    pflex_target_set_t s1, s2, s3;
    pflex_target_set_init(&s1);
    pflex_target_set_init(&s2);
    pflex_target_set_init(&s3);
    pflex_error_t err;
    assert_int_equal(pflex_oadr_parse_events(js, strlen(js), "t", &o, &s1, &e1, &err), 0);
    assert_int_equal(pflex_oadr_parse_events(js, strlen(js), "t", &o, &s2, &e2, &err), 0);
    o.client_name = "ven-b";
    assert_int_equal(pflex_oadr_parse_events(js, strlen(js), "t", &o, &s3, &e3, &err), 0);
    double t0 = t_of("2026-01-01T00:00:00Z"), sum = 0;
    int differ = 0, bins[4] = {0};
    for (size_t i = 0; i < e1.n; i++) {
        double off = e1.ev[i].offset_s;
        assert_true(off >= 0 && off < 600);
        assert_near(s1.t[i].start_s, t0 + off, 1e-6);
        assert_near(s1.t[i].end_s - s1.t[i].start_s, 3600, 1e-6);
        assert_near(e2.ev[i].offset_s, off, 0);
        differ += e3.ev[i].offset_s != off;
        sum += off;
        bins[(int)(off / 150)]++;
    }
    assert_true(differ > 390);
    /* mean of 400 uniform draws on [0, 600): 300 +- 3 sd (sd = 173/20) */
    assert_true(fabs(sum / 400 - 300) < 26);
    for (int k = 0; k < 4; k++)
        assert_true(bins[k] > 60 && bins[k] < 140);
    free(js);
    pflex_target_set_fini(&s1);
    pflex_target_set_fini(&s2);
    pflex_target_set_fini(&s3);
    pflex_oadr_events_fini(&e1);
    pflex_oadr_events_fini(&e2);
    pflex_oadr_events_fini(&e3);
}

static void test_malformed(void **state)
{
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 0);
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    struct pflex_target keep = {.start_s = 0, .end_s = INFINITY, .value = 1000};
    assert_int_equal(pflex_target_set_add(&s, &keep, NULL), 0);
    pflex_error_t err;
    const char *whole_bad[] = {"", "{", "{}", "null", "42", "[1,2", "{\"a\":1}", "\"x\"",
                               "[{\"id\":\"a\",\"id\":\"b\"}]"};
    for (size_t i = 0; i < sizeof whole_bad / sizeof *whole_bad; i++) {
        assert_int_equal(pflex_oadr_parse_events(whole_bad[i], strlen(whole_bad[i]), "t", &o, &s, NULL, &err), -1);
        assert_int_equal(s.n, 1);
    }
    /* Bad events inside a good array are left out, the good one kept. */
    const char *mixed =
        "[1, {\"id\":\"noprog\",\"intervals\":[]},"
        " {\"id\":\"badstart\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"yesterday\"},\"intervals\":[]},"
        " {\"id\":\"baddur\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":\"1h\"},\"intervals\":[]},"
        " {\"id\":\"badval\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\"},"
        "   \"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[\"lots\"]}]}]},"
        " {\"id\":\"neg\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\"},"
        "   \"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[-5]}]}]},"
        " {\"id\":\"simple9\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\"},"
        "   \"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[9]}]}]},"
        " {\"id\":\"nostart\",\"programID\":\"p\",\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[5]}]}]},"
        " {\"id\":\"units\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\"},"
        "   \"payloadDescriptors\":[{\"payloadType\":\"IMPORT_CAPACITY_LIMIT\",\"units\":\"KWH\"}],"
        "   \"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[5]}]}]},"
        " {\"id\":\"rel\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\"},"
        "   \"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"DISPATCH_SETPOINT_RELATIVE\",\"values\":[-5]}]}]},"
        /* the bounds of a target typed by hand: 1e-300 kW would send every
         * GPU to its minimum at once; an event in the year 5138 */
        " {\"id\":\"tiny\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\"},"
        "   \"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[1e-300]}]}]},"
        " {\"id\":\"far\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"5138-11-16T09:46:40Z\"},"
        "   \"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[5]}]}]},"
        " {\"id\":\"good\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\"},"
        "   \"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[5]}]}]}]";
    pflex_oadr_events_t evs = {0};
    if (pflex_oadr_parse_events(mixed, strlen(mixed), "t", &o, &s, &evs, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(evs.n, 1);
    assert_string_equal(evs.ev[0].id, "good");
    assert_int_equal(evs.skipped, 12);
    assert_non_null(strstr(evs.note, "left out"));
    assert_int_equal(s.n, 2);
    assert_near(s.t[1].value, 5000, 0);
    pflex_oadr_events_fini(&evs);
    pflex_target_set_fini(&s);
}

static void test_report_json(void **state)
{
    struct pflex_oadr_report r = {.program_id = "prog-a", .event_id = "ev-1", .client_name = "site-1",
                                  .start_s = t_of("2026-05-03T18:00:00Z"), .duration_s = 900,
                                  .usage_wh = 187500, .demand_w = 750000};
    pflex_error_t err;
    char *s = pflex_oadr_report_json(&r, &err);
    assert_non_null(s);
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "objectType")), "REPORT");
    assert_string_equal(json_string_value(json_object_get(j, "programID")), "prog-a");
    assert_string_equal(json_string_value(json_object_get(j, "eventID")), "ev-1");
    assert_string_equal(json_string_value(json_object_get(j, "clientName")), "site-1");
    json_t *res = json_array_get(json_object_get(j, "resources"), 0);
    assert_string_equal(json_string_value(json_object_get(res, "resourceName")), "AGGREGATED_REPORT");
    json_t *ip = json_object_get(res, "intervalPeriod");
    assert_string_equal(json_string_value(json_object_get(ip, "start")), "2026-05-03T18:00:00Z");
    double dur;
    assert_int_equal(pflex_target_parse_duration(json_string_value(json_object_get(ip, "duration")), &dur, &err), 0);
    assert_near(dur, 900, 1e-9);
    json_t *pl = json_object_get(json_array_get(json_object_get(res, "intervals"), 0), "payloads");
    assert_string_equal(json_string_value(json_object_get(json_array_get(pl, 0), "type")), "USAGE");
    assert_near(json_number_value(json_array_get(json_object_get(json_array_get(pl, 0), "values"), 0)), 187.5, 1e-9);
    assert_string_equal(json_string_value(json_object_get(json_array_get(pl, 1), "type")), "DEMAND");
    assert_near(json_number_value(json_array_get(json_object_get(json_array_get(pl, 1), "values"), 0)), 750, 1e-9);
    json_t *pd = json_object_get(j, "payloadDescriptors");
    assert_string_equal(json_string_value(json_object_get(json_array_get(pd, 0), "units")), "KWH");
    assert_string_equal(json_string_value(json_object_get(json_array_get(pd, 1), "units")), "KW");
    json_decref(j);
    free(s);
    r.event_id = NULL;
    assert_null(pflex_oadr_report_json(&r, &err));
    r.event_id = "e";
    r.demand_w = NAN;
    assert_null(pflex_oadr_report_json(&r, &err));
}

/* ---- the VEN against the VTN, over loopback ---- */

struct fixture {
    pflex_vtn_t *vtn;
    pflex_ven_t *ven;
    char url[64];
};

static int setup(void **state)
{
    static struct fixture f;
    memset(&f, 0, sizeof f);
    struct pflex_vtn_config vc = {.client_id = "ven-1", .client_secret = "s3cret&=%"};
    pflex_error_t err;
    if (pflex_vtn_start(&vc, &f.vtn, &err) < 0) {
        print_error("%s\n", err.text);
        return -1;
    }
    snprintf(f.url, sizeof f.url, "http://127.0.0.1:%u/", pflex_vtn_port(f.vtn));
    struct pflex_ven_config c = {.url = f.url, .client_id = "ven-1", .client_secret = "s3cret&=%",
                                 .timeout_ms = 2000, .max_body = 1 << 20};
    if (pflex_ven_create(&c, &f.ven, &err) < 0) {
        print_error("%s\n", err.text);
        return -1;
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    pflex_ven_destroy(f->ven);
    pflex_vtn_stop(f->vtn);
    return 0;
}

static void test_ven_poll(void **state)
{
    struct fixture *f = *state;
    pflex_error_t err;
    assert_int_equal(pflex_vtn_set_events(f->vtn, EVENTS, &err), 0);
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 1.7e9);
    o.baseline_w = 1e6;
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    struct pflex_target cli = {.start_s = 0, .end_s = INFINITY, .value = 2e6};
    snprintf(cli.source, sizeof cli.source, "cli");
    assert_int_equal(pflex_target_set_add(&s, &cli, NULL), 0);
    pflex_oadr_events_t evs = {0};
    if (pflex_ven_poll(f->ven, &o, &s, &evs, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(s.n, 7);
    assert_int_equal(evs.n, 3);
    uint64_t seq_before = find(&s, "ev-1/0")->seq;
    char ids[7][64];
    uint64_t seqs[7];
    for (size_t i = 0; i < 7; i++) {
        snprintf(ids[i], sizeof ids[i], "%s", s.t[i].id);
        seqs[i] = s.t[i].seq;
    }
    /* Polling again keeps the same targets, in their first order, every
     * one of them. */
    assert_int_equal(pflex_ven_poll(f->ven, &o, &s, &evs, &err), 0);
    assert_int_equal(s.n, 7);
    assert_int_equal(find(&s, "ev-1/0")->seq, seq_before);
    for (size_t i = 1; i < 7; i++)
        assert_int_equal(find(&s, ids[i])->seq, seqs[i]);
    struct pflex_vtn_counts vc;
    pflex_vtn_counts(f->vtn, &vc);
    assert_int_equal(vc.tokens_issued, 1);
    assert_int_equal(vc.token_requests, 1);     /* the token was kept */
    /* Withdrawn events disappear; the CLI target stays. */
    assert_int_equal(pflex_vtn_set_events(f->vtn, "[]", &err), 0);
    assert_int_equal(pflex_ven_poll(f->ven, &o, &s, &evs, &err), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.t[0].source, "cli");
    /* A revoked token: 401, a fresh token, the poll succeeds. */
    assert_int_equal(pflex_vtn_set_events(f->vtn, EVENTS, &err), 0);
    pflex_vtn_revoke_tokens(f->vtn);
    if (pflex_ven_poll(f->ven, &o, &s, &evs, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(s.n, 7);
    pflex_vtn_counts(f->vtn, &vc);
    assert_int_equal(vc.tokens_issued, 2);
    assert_true(vc.unauthorized >= 1);
    pflex_target_set_fini(&s);
    pflex_oadr_events_fini(&evs);
}

static void test_ven_paging(void **state)
{
    struct fixture *f = *state;
    json_t *arr = json_array();
    for (int i = 0; i < 137; i++) {
        char id[32];
        snprintf(id, sizeof id, "e%d", i);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:{s:s}, s:[{s:i, s:[{s:s, s:[i]}]}]}",
            "id", id, "programID", "p", "intervalPeriod", "start", "2026-01-01T00:00:00Z",
            "intervals", "id", 0, "payloads", "type", "IMPORT_CAPACITY_LIMIT", "values", 100 + i));
    }
    char *js = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    pflex_error_t err;
    assert_int_equal(pflex_vtn_set_events(f->vtn, js, &err), 0);
    free(js);
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 0);
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    if (pflex_ven_poll(f->ven, &o, &s, NULL, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(s.n, 137);
    for (int i = 0; i < 137; i++)
        assert_near(s.t[i].value, (100 + i) * 1e3, 0);
    pflex_target_set_fini(&s);
}

static void test_ven_hostile(void **state)
{
    struct fixture *f = *state;
    pflex_error_t err;
    assert_int_equal(pflex_vtn_set_events(f->vtn, EVENTS, &err), 0);
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 1.7e9);
    o.baseline_w = 1e6;
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    assert_int_equal(pflex_ven_poll(f->ven, &o, &s, NULL, &err), 0);
    assert_int_equal(s.n, 6);
    /* Each hostile answer: an error, the targets as they were. */
    static char huge[(1 << 20) + 100];
    memset(huge, ' ', sizeof huge);
    huge[0] = '[';
    huge[sizeof huge - 1] = ']';
    struct { unsigned status; const char *body; size_t len; unsigned delay; const char *needle; } cases[] = {
        {200, "not json at all", 15, 0, "GET /events"},
        {200, "{\"events\":[]}", 13, 0, "not a JSON array"},
        {500, "{\"title\":\"boom\"}", 16, 0, "HTTP 500"},
        {200, "[{\"id\":", 7, 0, "GET /events"},
        {200, huge, sizeof huge, 0, "larger than"},
        {200, "[]", 2, 3000, "GET /events"},        /* slower than the 2 s timeout */
        {200, "[1,2,3]\0garbage", 15, 0, "GET /events"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        assert_int_equal(pflex_vtn_set_raw(f->vtn, cases[i].status, cases[i].body, cases[i].len, cases[i].delay), 0);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        memset(&err, 0, sizeof err);
        assert_int_equal(pflex_ven_poll(f->ven, &o, &s, NULL, &err), -1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (!strstr(err.text, cases[i].needle))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.text, cases[i].needle);
        assert_int_equal(s.n, 6);
        assert_true(t1.tv_sec - t0.tv_sec < 5);     /* bounded */
    }
    assert_int_equal(pflex_vtn_set_raw(f->vtn, 0, NULL, 0, 0), 0);
    assert_int_equal(pflex_ven_poll(f->ven, &o, &s, NULL, &err), 0);
    /* Wrong credentials: refused, nothing changed. */
    struct pflex_ven_config c = {.url = f->url, .client_id = "ven-1", .client_secret = "wrong",
                                 .timeout_ms = 2000};
    pflex_ven_t *bad;
    assert_int_equal(pflex_ven_create(&c, &bad, &err), 0);
    assert_int_equal(pflex_ven_poll(bad, &o, &s, NULL, &err), -1);
    assert_non_null(strstr(err.text, "HTTP 401"));
    assert_int_equal(s.n, 6);
    pflex_ven_destroy(bad);
    /* Nobody listening: a transport error, quickly. */
    struct pflex_ven_config gone = {.url = "http://127.0.0.1:1", .client_id = "a", .client_secret = "b",
                                    .timeout_ms = 500};
    assert_int_equal(pflex_ven_create(&gone, &bad, &err), 0);
    assert_int_equal(pflex_ven_poll(bad, &o, &s, NULL, &err), -1);
    assert_int_equal(s.n, 6);
    pflex_ven_destroy(bad);
    struct pflex_ven_config notu = {.url = "ftp://x", .client_id = "a", .client_secret = "b"};
    assert_int_equal(pflex_ven_create(&notu, &bad, &err), -1);
    pflex_target_set_fini(&s);
}

static void test_ven_report(void **state)
{
    struct fixture *f = *state;
    struct pflex_vtn_counts before, after;
    pflex_vtn_counts(f->vtn, &before);
    struct pflex_oadr_report r = {.program_id = "prog-a", .event_id = "ev-1", .client_name = "site-1",
                                  .resource_name = "gpu-site", .start_s = 1.7e9, .duration_s = 60,
                                  .usage_wh = 12500, .demand_w = 750000};
    pflex_error_t err;
    if (pflex_ven_post_report(f->ven, &r, &err) < 0)
        fail_msg("%s", err.text);
    pflex_vtn_counts(f->vtn, &after);
    assert_int_equal(after.reports, before.reports + 1);
    char *got = pflex_vtn_report(f->vtn, after.reports - 1);
    char *want = pflex_oadr_report_json(&r, &err);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
}

/* An event of one interval: id, limit in kW (a string: "-5" is malformed). */
static void one_event_json(char *buf, size_t len, const char *id, const char *kw)
{
    snprintf(buf, len, "{\"id\":\"%s\",\"programID\":\"p\","
             "\"intervalPeriod\":{\"start\":\"0001-01-01T00:00:00Z\",\"duration\":\"PT1H\"},"
             "\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[%s]}]}]}",
             id, kw);
}

/* A bad update to an event in force keeps its last good version (it used
 * to release the limit: the event was left out, and its targets with it);
 * the event withdrawn, then, goes. */
static void test_ven_keeps_last_good(void **state)
{
    struct fixture *f = *state;
    pflex_error_t err;
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 1.7e9);
    char a[512], b[512], doc[1200];
    one_event_json(a, sizeof a, "shed", "500");
    one_event_json(b, sizeof b, "other", "900");
    snprintf(doc, sizeof doc, "[%s,%s]", a, b);
    assert_int_equal(pflex_vtn_set_events(f->vtn, doc, &err), 0);
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    pflex_oadr_events_t evs = {0};
    if (pflex_ven_poll(f->ven, &o, &s, &evs, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(s.n, 2);
    uint64_t seq = find(&s, "shed/0")->seq;
    /* the update is malformed (a negative limit): the event stays as it was */
    one_event_json(a, sizeof a, "shed", "-5");
    snprintf(doc, sizeof doc, "[%s,%s]", a, b);
    assert_int_equal(pflex_vtn_set_events(f->vtn, doc, &err), 0);
    if (pflex_ven_poll(f->ven, &o, &s, &evs, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(s.n, 2);
    assert_true(find(&s, "shed/0")->value == 500e3);
    assert_int_equal(find(&s, "shed/0")->seq, seq);
    assert_int_equal(evs.skipped, 1);
    assert_int_equal(evs.kept, 1);
    assert_non_null(strstr(evs.note, "shed"));
    /* a good update takes */
    one_event_json(a, sizeof a, "shed", "400");
    snprintf(doc, sizeof doc, "[%s,%s]", a, b);
    assert_int_equal(pflex_vtn_set_events(f->vtn, doc, &err), 0);
    assert_int_equal(pflex_ven_poll(f->ven, &o, &s, &evs, &err), 0);
    assert_true(find(&s, "shed/0")->value == 400e3);
    assert_int_equal(evs.kept, 0);
    /* withdrawn: gone */
    snprintf(doc, sizeof doc, "[%s]", b);
    assert_int_equal(pflex_vtn_set_events(f->vtn, doc, &err), 0);
    assert_int_equal(pflex_ven_poll(f->ven, &o, &s, &evs, &err), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.t[0].id, "other/0");
    pflex_target_set_fini(&s);
    pflex_oadr_events_fini(&evs);
}

/* Two events with one id: the first in the answer is followed, the second
 * left out and said (the second used to win silently: added last). */
static void test_duplicate_ids(void **state)
{
    (void)state;
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 1.7e9);
    char a[512], b[512], doc[1200];
    one_event_json(a, sizeof a, "twin", "300");
    one_event_json(b, sizeof b, "twin", "800");
    snprintf(doc, sizeof doc, "[%s,%s]", a, b);
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    pflex_oadr_events_t evs = {0};
    pflex_error_t err;
    if (pflex_oadr_parse_events(doc, strlen(doc), "dup", &o, &s, &evs, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(s.n, 1);
    assert_true(s.t[0].value == 300e3);
    assert_int_equal(evs.n, 1);
    assert_int_equal(evs.skipped, 1);
    assert_non_null(strstr(evs.note, "second event with this id"));
    pflex_target_set_fini(&s);
    pflex_oadr_events_fini(&evs);
}

/* ---- notifications ---- */

static const char *ONE =
    "{\"objectType\":\"EVENT\",\"operation\":\"%s\",\"object\":{\"id\":\"ev-9\",\"programID\":\"prog-a\","
    "\"modificationDateTime\":\"%s\",\"intervalPeriod\":{\"start\":\"2026-05-03T18:00:00Z\",\"duration\":\"PT1H\"},"
    "\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[%s]}]}]}}";

static void test_notification_parse(void **state)
{
    (void)state;
    char body[1024];
    struct pflex_oadr_notification n;
    pflex_error_t err;
    snprintf(body, sizeof body, ONE, "PUT", "2026-05-03T17:00:00.250Z", "40");
    if (pflex_oadr_parse_notification(body, strlen(body), &n, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(n.op, PFLEX_OADR_OP_PUT);
    assert_string_equal(n.event_id, "ev-9");
    assert_string_equal(n.modified, "2026-05-03T17:00:00.250Z");
    assert_non_null(strstr(n.object, "\"IMPORT_CAPACITY_LIMIT\""));
    pflex_oadr_notification_fini(&n);
    /* a DELETE needs no modificationDateTime */
    const char *del = "{\"objectType\":\"EVENT\",\"operation\":\"DELETE\",\"object\":{\"id\":\"ev-9\"}}";
    assert_int_equal(pflex_oadr_parse_notification(del, strlen(del), &n, &err), 0);
    assert_int_equal(n.op, PFLEX_OADR_OP_DELETE);
    assert_string_equal(n.modified, "");
    pflex_oadr_notification_fini(&n);
    struct { const char *body; const char *needle; } bad[] = {
        {"", "notification:"},
        {"[]", "not a JSON object"},
        {"{\"objectType\":\"EVENT\",\"objectType\":\"EVENT\"}", "notification:"},
        {"{\"objectType\":\"PROGRAM\",\"operation\":\"POST\",\"object\":{\"id\":\"p\"}}", "objectType"},
        {"{\"objectType\":\"EVENT\",\"operation\":\"GET\",\"object\":{\"id\":\"e\"}}", "operation"},
        {"{\"objectType\":\"EVENT\",\"operation\":\"POST\",\"object\":[]}", "object is not"},
        {"{\"objectType\":\"EVENT\",\"operation\":\"POST\",\"object\":{\"id\":7}}", "id"},
        {"{\"objectType\":\"EVENT\",\"operation\":\"POST\",\"object\":{\"id\":\"e\"}}", "no modificationDateTime"},
        {"{\"objectType\":\"EVENT\",\"operation\":\"PUT\",\"object\":{\"id\":\"e\",\"modificationDateTime\":5}}",
         "modificationDateTime"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        assert_int_equal(pflex_oadr_parse_notification(bad[i].body, strlen(bad[i].body), &n, &err), -1);
        if (!strstr(err.text, bad[i].needle))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.text, bad[i].needle);
        assert_null(n.object);
    }
    /* over the limit: refused before it is parsed */
    size_t big = PFLEX_OADR_MAX_NOTIFICATION + 1;
    char *huge = malloc(big);
    assert_non_null(huge);
    memset(huge, ' ', big);
    assert_int_equal(pflex_oadr_parse_notification(huge, big, &n, &err), -1);
    assert_non_null(strstr(err.text, "over the limit"));
    free(huge);
}

static const struct pflex_target *find_target(const pflex_target_set_t *s, const char *id)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].id, id))
            return &s->t[i];
    return NULL;
}

static void test_notification_apply(void **state)
{
    (void)state;
    struct pflex_oadr_opts o;
    pflex_oadr_opts_default(&o, 1.7e9);
    o.baseline_w = 1e6;
    pflex_target_set_t s;
    pflex_target_set_init(&s);
    struct pflex_target cli = {.start_s = 0, .end_s = INFINITY, .value = 2e6};
    snprintf(cli.source, sizeof cli.source, "cli");
    assert_int_equal(pflex_target_set_add(&s, &cli, NULL), 0);
    pflex_error_t err;
    assert_int_equal(pflex_oadr_parse_events(EVENTS, strlen(EVENTS), "t", &o, &s, NULL, &err), 0);
    size_t n0 = s.n;
    char body[1024];
    struct pflex_oadr_notification n;
    pflex_oadr_events_t evs = {0};
    /* POST: a new event's targets join, the others stay (their seq too) */
    const struct pflex_target *t1 = find_target(&s, "ev-1/0");
    assert_non_null(t1);
    uint64_t seq1 = t1->seq;
    snprintf(body, sizeof body, ONE, "POST", "2026-05-03T17:00:00Z", "40");
    assert_int_equal(pflex_oadr_parse_notification(body, strlen(body), &n, &err), 0);
    if (pflex_oadr_apply_notification(&n, &o, &s, &evs, &err) < 0)
        fail_msg("%s", err.text);
    pflex_oadr_notification_fini(&n);
    assert_int_equal(s.n, n0 + 1);
    assert_int_equal(evs.n, 1);
    assert_string_equal(evs.ev[0].modified, "2026-05-03T17:00:00Z");
    assert_near(find_target(&s, "ev-9/0")->value, 40000, 1e-9);
    assert_int_equal(find_target(&s, "ev-1/0")->seq, seq1);
    assert_non_null(find_target(&s, ""));       /* the cli one */
    /* PUT: replaced in place, not added */
    snprintf(body, sizeof body, ONE, "PUT", "2026-05-03T17:01:00Z", "30");
    assert_int_equal(pflex_oadr_parse_notification(body, strlen(body), &n, &err), 0);
    assert_int_equal(pflex_oadr_apply_notification(&n, &o, &s, &evs, &err), 0);
    pflex_oadr_notification_fini(&n);
    assert_int_equal(s.n, n0 + 1);
    assert_near(find_target(&s, "ev-9/0")->value, 30000, 1e-9);
    /* a malformed update: refused, the last good version kept */
    snprintf(body, sizeof body, ONE, "PUT", "2026-05-03T17:02:00Z", "\"x\"");
    assert_int_equal(pflex_oadr_parse_notification(body, strlen(body), &n, &err), 0);
    assert_int_equal(pflex_oadr_apply_notification(&n, &o, &s, &evs, &err), -1);
    pflex_oadr_notification_fini(&n);
    assert_non_null(strstr(err.text, "ev-9"));
    assert_near(find_target(&s, "ev-9/0")->value, 30000, 1e-9);
    /* another program's event, when the VEN follows one: nothing of it */
    o.program_id = "prog-b";
    snprintf(body, sizeof body, ONE, "POST", "2026-05-03T17:03:00Z", "20");
    assert_int_equal(pflex_oadr_parse_notification(body, strlen(body), &n, &err), 0);
    assert_int_equal(pflex_oadr_apply_notification(&n, &o, &s, &evs, &err), 0);
    pflex_oadr_notification_fini(&n);
    assert_int_equal(evs.n, 0);
    assert_null(find_target(&s, "ev-9/0"));
    o.program_id = NULL;
    /* DELETE: ev-1's targets go, the rest stays */
    size_t before = s.n, of_ev1 = 0;
    for (size_t i = 0; i < s.n; i++)
        of_ev1 += !strncmp(s.t[i].id, "ev-1/", 5);
    assert_true(of_ev1 > 0);
    const char *del = "{\"objectType\":\"EVENT\",\"operation\":\"DELETE\",\"object\":{\"id\":\"ev-1\"}}";
    assert_int_equal(pflex_oadr_parse_notification(del, strlen(del), &n, &err), 0);
    assert_int_equal(pflex_oadr_apply_notification(&n, &o, &s, &evs, &err), 0);
    pflex_oadr_notification_fini(&n);
    assert_int_equal(s.n, before - of_ev1);
    assert_null(find_target(&s, "ev-1/0"));
    assert_non_null(find_target(&s, ""));
    pflex_oadr_events_fini(&evs);
    pflex_target_set_fini(&s);
}

/* A callback receiver: the notifications' bodies and tokens. */
struct inbox {
    pthread_mutex_t mu;
    char body[8][2048];
    char auth[8][128];
    int n;
};

static void on_callback(void *ud, const struct pflex_http_request *req, struct pflex_http_response *resp)
{
    struct inbox *in = ud;
    const char *a = pflex_http_header(req, "Authorization");
    pthread_mutex_lock(&in->mu);
    if (in->n < 8) {
        snprintf(in->body[in->n], sizeof in->body[0], "%s", req->body);
        snprintf(in->auth[in->n], sizeof in->auth[0], "%s", a ? a : "");
        in->n++;
    }
    pthread_mutex_unlock(&in->mu);
    pflex_http_respond_text(resp, 200, NULL, "{}", 2);
}

static int inbox_wait(struct inbox *in, int n)
{
    for (int k = 0; k < 300; k++) {
        pthread_mutex_lock(&in->mu);
        int got = in->n;
        pthread_mutex_unlock(&in->mu);
        if (got >= n)
            return got;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return in->n;
}

static void test_vtn_subscriptions(void **state)
{
    struct fixture *f = *state;
    pflex_error_t err;
    static struct inbox in;
    memset(&in, 0, sizeof in);
    pthread_mutex_init(&in.mu, NULL);
    struct pflex_http_limits lim = {.threads = 2};
    pflex_http_server_t *srv;
    assert_int_equal(pflex_http_server_start("127.0.0.1:0", &lim, on_callback, &in, &srv, &err), 0);
    char cb[128];
    snprintf(cb, sizeof cb, "http://127.0.0.1:%u/notify", pflex_http_server_port(srv));
    assert_int_equal(pflex_vtn_set_events(f->vtn, "[]", &err), 0);
    struct pflex_ven_subscription sub = {.client_name = "ven-1", .program_id = "prog-a", .callback_url = cb,
                                         .bearer_token = "cb-token-0123456789"};
    char id[129];
    if (pflex_ven_subscribe(f->ven, &sub, id, sizeof id, &err) < 0)
        fail_msg("%s", err.text);
    assert_int_equal(strncmp(id, "sub-", 4), 0);
    assert_int_equal(pflex_ven_subscription_alive(f->ven, id, &err), 1);
    /* a new event of the program: POSTed to the callback with the token,
     * stamped as the VTN serves it; another program's: not */
    const char *two = "[{\"id\":\"e1\",\"programID\":\"prog-a\",\"intervals\":[]},"
                      "{\"id\":\"e2\",\"programID\":\"prog-z\",\"intervals\":[]}]";
    assert_int_equal(pflex_vtn_set_events(f->vtn, two, &err), 0);
    assert_int_equal(inbox_wait(&in, 1), 1);
    struct pflex_oadr_notification n;
    if (pflex_oadr_parse_notification(in.body[0], strlen(in.body[0]), &n, &err) < 0)
        fail_msg("%s: %s", err.text, in.body[0]);
    assert_int_equal(n.op, PFLEX_OADR_OP_POST);
    assert_string_equal(n.event_id, "e1");
    assert_true(strlen(n.modified) == 24 && n.modified[23] == 'Z');
    assert_string_equal(in.auth[0], "Bearer cb-token-0123456789");
    pflex_oadr_notification_fini(&n);
    /* the same set again: nothing; e1 changed: PUT; e1 gone: DELETE */
    assert_int_equal(pflex_vtn_set_events(f->vtn, two, &err), 0);
    const char *changed = "[{\"id\":\"e1\",\"programID\":\"prog-a\",\"priority\":3,\"intervals\":[]}]";
    assert_int_equal(pflex_vtn_set_events(f->vtn, changed, &err), 0);
    assert_int_equal(inbox_wait(&in, 2), 2);
    assert_non_null(strstr(in.body[1], "\"operation\":\"PUT\""));
    assert_int_equal(pflex_vtn_set_events(f->vtn, "[]", &err), 0);
    assert_int_equal(inbox_wait(&in, 3), 3);
    assert_non_null(strstr(in.body[2], "\"operation\":\"DELETE\""));
    struct pflex_vtn_counts c;
    pflex_vtn_counts(f->vtn, &c);
    assert_int_equal(c.notifications, 3);
    assert_int_equal(c.subscribers, 1);
    /* the VTN restarted (its subscriptions lost): gone, then made again */
    pflex_vtn_drop_subscriptions(f->vtn);
    assert_int_equal(pflex_ven_subscription_alive(f->ven, id, &err), 0);
    char id2[129];
    assert_int_equal(pflex_ven_subscribe(f->ven, &sub, id2, sizeof id2, &err), 0);
    assert_string_not_equal(id, id2);
    assert_int_equal(pflex_ven_unsubscribe(f->ven, id2, &err), 0);
    assert_int_equal(pflex_ven_subscription_alive(f->ven, id2, &err), 0);
    /* a subscription the VTN cannot call is refused */
    sub.callback_url = "file:///etc/passwd";
    assert_int_equal(pflex_ven_subscribe(f->ven, &sub, id, sizeof id, &err), -1);
    assert_non_null(strstr(err.text, "HTTP 400"));
    /* an id that is not URL safe never reaches a request path */
    assert_int_equal(pflex_ven_subscription_alive(f->ven, "../events", &err), -1);
    pflex_http_server_stop(srv);
    pthread_mutex_destroy(&in.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_events),
        cmocka_unit_test(test_tightest_payload),
        cmocka_unit_test(test_randomize),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_report_json),
        cmocka_unit_test(test_duplicate_ids),
        cmocka_unit_test(test_notification_parse),
        cmocka_unit_test(test_notification_apply),
    };
    const struct CMUnitTest net[] = {
        cmocka_unit_test(test_ven_poll),
        cmocka_unit_test(test_ven_paging),
        cmocka_unit_test(test_ven_hostile),
        cmocka_unit_test(test_ven_report),
        cmocka_unit_test(test_ven_keeps_last_good),
        cmocka_unit_test(test_vtn_subscriptions),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return failed + cmocka_run_group_tests_name("ven", net, setup, teardown);
}
