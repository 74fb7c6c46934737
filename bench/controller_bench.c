/* controller_bench.c — one control period of `pflex controller run` (read
 * telemetry, learn, plan, push) for N nodes of 8 simulated GPUs, the
 * agents simulated in this process: one loopback HTTP server answers for
 * all N (agent K at http://127.0.0.1:PORT/n/K, the real agent's
 * GET /v1/status and PUT /v1/caps JSON), each node a simulated 8-GPU job
 * (the public sim API).  The site follows a target of 75 % of its
 * maximum.  Prints the median and the slowest wall time of a period, the
 * first (unlimited) period left out, and the medians of its parts (reading
 * the agents, learning and planning, pushing the caps) and of its CPU time
 * (the calling thread's, the whole process's, split into the server's
 * threads and the rest, the controller's), then the same in one line for
 * scripts ("  = nodes N mode M threads T period_s S cpu_s C agents_cpu_s A
 * ctl_cpu_s K"; A and K nan with a latency).  Over loopback each side's
 * sends also run the other side's receive in the kernel, so the split is
 * close, not exact.
 * asserts nothing.  THREADS 0: the controller's default.
 * The controller talks to up to PARALLEL agents at once over kept
 * connections; the server answers on a pool of two threads, on the same
 * cores.  LATENCY_MS delays every answer (a thread per connection then),
 * as agents on other hosts with their own work would, so that what the
 * requests in flight at once buy shows on a machine of two cores.
 *
 *   controller_bench [NODES [PERIODS [PARALLEL [LATENCY_MS [THREADS [sim|table]]]]]]
 *   (defaults 1000, 12, 64, 0)
 *   controller_bench parse STATUS_FILE   (one status read, below)
 *   controller_bench ttt NODES EVENTS [sim|table] [SEED]
 *
 * ttt: time to target (docs/time-to-target.md) from an API PUT, the
 * controller run as `pflex controller run` runs it: periods of 1 s on the
 * monotonic clock, a period started at once when the targets change
 * (ctl_act_due).  EVENTS times, at a seeded random instant inside a
 * period, a target of 70 % for 5 s is put as the API puts it
 * (ctl_target_put); the site is let back up for 3 s and two periods
 * between events.  In
 * sim mode each GPU's power follows its cap with the lag of
 * pflex/sim/powerlag.h (tau 0.1 s, read as a 1 s mean), as the sim
 * agent's does, from the model's steady power at its caps (worked out
 * when the caps change, without noise, so that the simulated agents'
 * side leaves the cores to the controller); in table mode at once.  Prints each event's time to
 * target, then p50, p99 and worst, and one line for scripts
 * ("  = ttt nodes N mode M events E p50_s A p99_s B worst_s C unmet U").
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "controller/agent_client.h"
#include "controller/controller.h"
#include "controller/ctl_int.h"
#include "lib/util/clock.h"
#include "pflex/sim/powerlag.h"
#include "lib/util/jscan.h"
#include "pflex/hw/gpu.h"
#include "pflex/sim/model.h"
#include "pflex/sim/sim.h"

#define NG 8

struct node {
    pthread_mutex_t mu;
    pflex_sim_job_t *job;
    pflex_gpu_t gpu;
    const struct pflex_gpu_kind *kind;
    char name[32];
    /* ttt in sim mode: each GPU's power after its cap changed (lag_on) */
    struct pflex_power_lag lag[NG];
    int lag_on[NG];
    /* ttt in sim mode: the model's steady power of each GPU and the job's
     * rate at the caps set, worked out when they change, not at every
     * status (the simulated agents' side would take the cores) */
    double st_pw[NG], st_tput;
    int st_ok;
};
static int power_dynamics;      /* ttt in sim mode: caps followed with a lag */

/* Node n's steady powers and rate at its caps now, into its cache. */
static int steady(struct node *n)
{
    struct pflex_sim_measure m;
    pflex_error_t e;
    if (pflex_sim_job_gpus(n->job) > NG || pflex_sim_job_per_gpu(n->job, 0, n->st_pw, NULL, &m, &e) < 0)
        return -1;
    n->st_tput = m.throughput;
    n->st_ok = 1;
    return 0;
}

static struct node *nodes;
static unsigned nnodes;

/* "table" mode: every node answers from node 0's simulated curve, computed
 * once at start on a 1 W grid (pflex_sim_job_expect), instead of running
 * the simulator on each request, and its status is written once each time
 * its caps change (the same JSON, numbers as jansson writes them), not at
 * every request, so that the agents' side costs little and the period
 * measures the controller's own work. */
static int table_mode;
static double *tab_power, *tab_tput;
static int tab_lo, tab_hi;
static double (*node_cap)[NG];
static char **node_text;        /* table mode: each node's status, as last written */
static size_t *node_len;

static double tab_at(const double *t, double cap)
{
    int w = (int)floor(cap + 0.5);
    w = w < tab_lo ? tab_lo : w > tab_hi ? tab_hi : w;
    return t[w - tab_lo];
}
/* A real as jansson writes it: 17 significant digits, ".0" when integral. */
static int put_real(char *p, size_t room, double v)
{
    int n = snprintf(p, room, "%.17g", v);
    if (n > 0 && (size_t)n + 3 < room && !strpbrk(p, ".eE")) {
        memcpy(p + n, ".0", 3);
        n += 2;
    }
    return n;
}

/* One GPU's entry of node k's status (table mode), at p; its length. */
static int gpu_text(char *p, size_t room, unsigned k, unsigned i)
{
    char cap[32], pw[32], lo[32], hi[32];
    double c = node_cap[k][i];
    put_real(cap, sizeof cap, c);
    put_real(pw, sizeof pw, tab_at(tab_power, c));
    put_real(lo, sizeof lo, nodes[k].kind->min_cap_w);
    put_real(hi, sizeof hi, nodes[k].kind->max_cap_w);
    return snprintf(p, room, "{\"gpu\":%u,\"uuid\":\"SIM\",\"ok\":true,\"limit_w\":%s,\"enforced_w\":%s,"
                    "\"power_w\":%s,\"min_w\":%s,\"max_w\":%s}", i, cap, cap, pw, lo, hi);
}

/* Node k's status (table mode), written again after its caps changed:
 * what the sim mode's answer holds, as one text. */
static int render(unsigned k)
{
    char buf[4096], tp[32];
    size_t n = (size_t)snprintf(buf, sizeof buf, "{\"hostname\":\"%s\",\"gpus\":[", nodes[k].name);
    double lo = INFINITY;
    for (unsigned i = 0; i < NG; i++) {
        lo = fmin(lo, node_cap[k][i]);
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", i ? "," : "");
        n += (size_t)gpu_text(buf + n, sizeof buf - n, k, i);
    }
    put_real(tp, sizeof tp, tab_at(tab_tput, lo));
    n += (size_t)snprintf(buf + n, sizeof buf - n, "],\"jobs\":[{\"job\":\"%s\",\"gpus\":[0,1,2,3,4,5,6,7],"
                          "\"throughput\":%s}]}", nodes[k].name, tp);
    char *t = malloc(n + 1);
    if (!t || n >= sizeof buf)
        return free(t), -1;
    memcpy(t, buf, n + 1);
    free(node_text[k]);
    node_text[k] = t;
    node_len[k] = n;
    return 0;
}

static unsigned latency_ms;     /* each answer this late, as from an agent on another host */

/* The server's threads (its pool of two, without a latency), each noted
 * at its first request, so that their CPU time is told apart from the
 * controller's: the process's less theirs is the controller's. */
#define MAX_SERVER_THREADS 8
static pthread_t server_th[MAX_SERVER_THREADS];
static unsigned nserver_th;
static pthread_mutex_t server_th_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int server_th_noted;

static void note_server_thread(void)
{
    if (server_th_noted || latency_ms)
        return;
    server_th_noted = 1;
    pthread_mutex_lock(&server_th_mu);
    if (nserver_th < MAX_SERVER_THREADS)
        server_th[nserver_th++] = pthread_self();
    pthread_mutex_unlock(&server_th_mu);
}

/* CPU time of the server's threads so far; NAN with a latency (a thread
 * per connection, not followed). */
static double server_cpu_s(void)
{
    if (latency_ms)
        return NAN;
    double s = 0;
    pthread_mutex_lock(&server_th_mu);
    for (unsigned i = 0; i < nserver_th; i++) {
        clockid_t id;
        struct timespec ts;
        if (pthread_getcpuclockid(server_th[i], &id) == 0 && clock_gettime(id, &ts) == 0)
            s += ts.tv_sec + ts.tv_nsec * 1e-9;
    }
    pthread_mutex_unlock(&server_th_mu);
    return s;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of this thread, the controller's (the server has its own). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process: the controller's threads and the
 * simulated agents'. */
static double proc_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static json_t *gpu_json(struct node *n, unsigned i)
{
    pflex_error_t err;
    double cap = NAN;
    struct pflex_gpu_sample s = {.power_w = NAN};
    pflex_gpu_get_cap(&n->gpu, i, &cap, &err);
    if (!power_dynamics)
        pflex_gpu_sample(&n->gpu, i, &s, &err);
    else if (n->st_ok || steady(n) == 0) {
        /* the steady power, and what the lag still owes */
        s.power_w = n->st_pw[i];
        if (n->lag_on[i])
            s.power_w += pflex_power_lag_read_w(&n->lag[i], pflex_mono_s()) - pflex_power_lag_target_w(&n->lag[i]);
    }
    return json_pack("{s:i, s:s, s:b, s:f, s:f, s:f, s:f, s:f}", "gpu", (int)i, "uuid", "SIM", "ok", 1,
                     "limit_w", cap, "enforced_w", cap, "power_w", s.power_w, "min_w", n->kind->min_cap_w,
                     "max_w", n->kind->max_cap_w);
}

struct upload {
    char buf[16384];
    size_t len;
};

/* PUT /v1/caps of node k in table mode: the caps taken, its status
 * written again when one changed, the answer's "applied" from the same
 * text.  Caller holds the node's lock. */
/* The caps of a PUT /v1/caps body (table mode: read in place, as the
 * controller reads answers): each in-range cap into caps[gpu], taken[gpu]
 * set.  0, or -1 when the body does not parse. */
static int caps_of(const struct upload *u, unsigned k, double caps[NG], unsigned taken[NG])
{
    struct pflex_jscan js;
    char key[16];
    int r, cut;
    pflex_jscan_init(&js, u->buf, u->len);
    if (pflex_jscan_enter(&js, PFLEX_J_OBJECT) < 0)
        return -1;
    while ((r = pflex_jscan_key(&js, key, sizeof key, &cut)) == 1) {
        if (strcmp(key, "caps") || pflex_jscan_peek(&js) != PFLEX_J_ARRAY) {
            if (pflex_jscan_skip(&js) < 0)
                return -1;
            continue;
        }
        pflex_jscan_enter(&js, PFLEX_J_ARRAY);
        while ((r = pflex_jscan_item(&js)) == 1) {
            double g = -1, w = NAN, x;
            if (pflex_jscan_enter(&js, PFLEX_J_OBJECT) < 0)
                return -1;
            while ((r = pflex_jscan_key(&js, key, sizeof key, &cut)) == 1) {
                int want = !strcmp(key, "gpu") || !strcmp(key, "cap_w");
                if (want && pflex_jscan_number(&js, &x, NULL) == 0)
                    *(!strcmp(key, "gpu") ? &g : &w) = x;
                else if (want || pflex_jscan_skip(&js) < 0)
                    return -1;
            }
            if (r < 0)
                return -1;
            if (g >= 0 && g < NG && g == floor(g) && w >= nodes[k].kind->min_cap_w && w <= nodes[k].kind->max_cap_w) {
                caps[(int)g] = w;
                taken[(int)g] = 1;
            }
        }
        if (r < 0)
            return -1;
    }
    return r < 0 || pflex_jscan_end(&js) < 0 ? -1 : 0;
}

/* PUT /v1/caps of node k in table mode: the caps taken, its status
 * written again when one changed, the answer's "applied" written as the
 * status writes its GPUs.  Caller holds the node's lock. */
static enum MHD_Result put_table(struct MHD_Connection *c, unsigned k, const struct upload *u)
{
    double caps[NG];
    unsigned taken[NG] = {0};
    if (caps_of(u, k, caps, taken) < 0)
        return send_json(c, 400, json_pack("{s:s}", "error", "the body does not parse"));
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf, "{\"applied\":[");
    int changed = 0, any = 0;
    for (unsigned g = 0; g < NG; g++)
        if (taken[g]) {
            changed |= node_cap[k][g] != caps[g];
            node_cap[k][g] = caps[g];
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", any++ ? "," : "");
            n += (size_t)gpu_text(buf + n, sizeof buf - n, k, g);
        }
    if (n < sizeof buf)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "],\"errors\":[]}");
    if (n >= sizeof buf || (changed && render(k) < 0))
        return MHD_NO;
    struct MHD_Response *rs = MHD_create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result r = MHD_queue_response(c, 200, rs);
    MHD_destroy_response(rs);
    return r;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **con)
{
    (void)cls;
    (void)version;
    struct upload *u = *con;
    note_server_thread();
    if (!u) {
        *con = calloc(1, sizeof *u);
        return *con ? MHD_YES : MHD_NO;
    }
    if (*size) {
        size_t n = *size < sizeof u->buf - 1 - u->len ? *size : sizeof u->buf - 1 - u->len;
        memcpy(u->buf + u->len, data, n);
        u->len += n;
        *size = 0;
        return MHD_YES;
    }
    unsigned k;
    int off = 0;
    if (sscanf(url, "/n/%u%n", &k, &off) != 1 || k >= nnodes)
        return send_json(c, 404, json_pack("{s:s}", "error", "no such node"));
    struct node *n = &nodes[k];
    const char *path = url + off;
    if (latency_ms) {
        struct timespec d = {.tv_sec = latency_ms / 1000, .tv_nsec = (long)(latency_ms % 1000) * 1000000};
        nanosleep(&d, NULL);
    }
    pthread_mutex_lock(&n->mu);
    enum MHD_Result r;
    pflex_error_t err;
    if (!strcmp(path, "/v1/status") && table_mode) {
        struct MHD_Response *rs = MHD_create_response_from_buffer(node_len[k], node_text[k], MHD_RESPMEM_MUST_COPY);
        r = MHD_queue_response(c, 200, rs);
        MHD_destroy_response(rs);
    } else if (!strcmp(path, "/v1/status")) {
        struct pflex_sim_measure m = {0};
        if (!power_dynamics)
            pflex_sim_job_measure(n->job, 0, &m, &err);
        else if (n->st_ok || steady(n) == 0)
            m.throughput = n->st_tput;
        json_t *gpus = json_array(), *idx = json_array();
        for (unsigned i = 0; i < NG; i++) {
            json_array_append_new(gpus, gpu_json(n, i));
            json_array_append_new(idx, json_integer(i));
        }
        r = send_json(c, 200, json_pack("{s:s, s:o, s:[{s:s, s:o, s:f}]}", "hostname", n->name, "gpus", gpus,
                                        "jobs", "job", n->name, "gpus", idx, "throughput", m.throughput));
    } else if (!strcmp(path, "/v1/caps") && !strcmp(method, "PUT") && table_mode) {
        r = put_table(c, k, u);
    } else if (!strcmp(path, "/v1/caps") && !strcmp(method, "PUT")) {
        json_t *j = json_loadb(u->buf, u->len, 0, NULL), *caps = json_object_get(j, "caps"), *e;
        json_t *applied = json_array();
        size_t i;
        double from[NG];
        int set[NG] = {0};
        if (power_dynamics && (n->st_ok || steady(n) == 0))
            memcpy(from, n->st_pw, sizeof from);
        json_array_foreach(caps, i, e) {
            json_int_t g = json_integer_value(json_object_get(e, "gpu"));
            double w = json_number_value(json_object_get(e, "cap_w"));
            if (g < 0 || g >= NG || !(w >= n->kind->min_cap_w && w <= n->kind->max_cap_w))
                continue;
            if (pflex_gpu_set_cap(&n->gpu, (unsigned)g, w, &err) < 0)
                continue;
            set[g] = 1;
        }
        /* the GPUs set move from their steady power to the new one with the lag */
        if (power_dynamics && n->st_ok && steady(n) == 0) {
            double t = pflex_mono_s();
            for (unsigned g = 0; g < NG; g++)
                if (set[g]) {
                    if (!n->lag_on[g])
                        pflex_power_lag_init(&n->lag[g], PFLEX_POWER_LAG_TAU_S, PFLEX_POWER_LAG_WINDOW_S, t, from[g]);
                    n->lag_on[g] = 1;
                    pflex_power_lag_step(&n->lag[g], t, n->st_pw[g]);
                }
        }
        for (unsigned g = 0; g < NG; g++)
            if (set[g])
                json_array_append_new(applied, gpu_json(n, g));
        json_decref(j);
        r = send_json(c, 200, json_pack("{s:o, s:[]}", "applied", applied, "errors"));
    } else {
        r = send_json(c, 404, json_pack("{s:s}", "error", "not found"));
    }
    pthread_mutex_unlock(&n->mu);
    return r;
}

static void done(void *cls, struct MHD_Connection *c, void **con, enum MHD_RequestTerminationCode t)
{
    (void)cls;
    (void)c;
    (void)t;
    free(*con);
    *con = NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* controller_bench parse FILE: one agent's GET /v1/status (FILE, as an
 * agent answered it) read as the controller reads it, in place, and as a
 * jansson tree (json_loadb alone), each 20,000 times: the CPU time of one
 * read, the median of 5 rounds. */
static int parse_bench(const char *path)
{
    FILE *f = fopen(path, "rb");
    static char buf[1 << 20];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    static struct agent_status st;
    pflex_error_t err;
    if (!n || agent_parse_status(buf, n, &st, &err) < 0) {
        fprintf(stderr, "controller_bench: %s: %s\n", path, n ? err.text : "cannot read it");
        return 1;
    }
    double a[5], b[5];
    const int reps = 20000;
    for (int r = 0; r < 5; r++) {
        double c0 = cpu_s();
        for (int k = 0; k < reps; k++)
            agent_parse_status(buf, n, &st, &err);
        double c1 = cpu_s();
        for (int k = 0; k < reps; k++)
            json_decref(json_loadb(buf, n, 0, NULL));
        a[r] = (c1 - c0) / reps;
        b[r] = (cpu_s() - c1) / reps;
    }
    qsort(a, 5, sizeof *a, cmp);
    qsort(b, 5, sizeof *b, cmp);
    printf("  an agent's status of %zu bytes (%zu GPUs, %zu jobs): read in place %.1f us, a jansson tree of it "
           "(json_loadb alone) %.1f us (CPU, medians of 5 x %d)\n", n, st.ngpus, st.njobs, a[2] * 1e6, b[2] * 1e6,
           reps);
    return 0;
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec d = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&d, NULL);
}

/* The run loop of `pflex controller run` (cmd.c) until the monotonic time
 * until: a period at each boundary (*next), or at once when the targets
 * changed (ctl_act_due); put_at (monotonic; NaN: none) the instant to put
 * the target t, inside the wait. */
static int run_until(ctl_t *ctl, double until, double *next, double put_at, const struct pflex_target *t)
{
    pflex_error_t err;
    struct ctl_period_result r;
    for (;;) {
        double now = pflex_mono_s();
        if (now >= until)
            return 0;
        if (now >= *next || ctl_act_due(ctl)) {
            if (ctl_period(ctl, ctl_clock_now(ctl, pflex_real_s(), pflex_mono_s()), &r, &err) < 0) {
                fprintf(stderr, "controller_bench: %s\n", err.text);
                return -1;
            }
            *next = now + 1.0;
            if (pflex_mono_s() > *next)
                *next = pflex_mono_s();
            continue;
        }
        if (isfinite(put_at) && now >= put_at) {
            struct pflex_target tt = *t;
            double wall = ctl_clock_now(ctl, pflex_real_s(), pflex_mono_s());
            tt.start_s = wall;
            tt.end_s = wall + 5;
            if (ctl_target_put(ctl, &tt, wall, &err) < 0) {
                fprintf(stderr, "controller_bench: %s\n", err.text);
                return -1;
            }
            put_at = NAN;
            continue;
        }
        double wake = fmin(*next, until);
        if (isfinite(put_at))
            wake = fmin(wake, put_at);
        sleep_s(fmin(wake - now, 0.02));
    }
}

static int bench_ttt(ctl_t *ctl, unsigned events, uint64_t seed)
{
    struct pflex_target t = {.value = 0.70, .unit = PFLEX_TARGET_FRACTION, .confirm = 1};
    snprintf(t.source, sizeof t.source, "api");
    double next = pflex_mono_s();
    /* the site read and settled at full power first */
    if (run_until(ctl, pflex_mono_s() + 3.5, &next, NAN, NULL) < 0)
        return -1;
    uint64_t x = seed ? seed : 1;
    unsigned long settled0 = ctl->ttt.settled;
    for (unsigned e = 0; e < events; e++) {
        /* a seeded instant inside the coming period (xorshift) */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double put_at = next - 1.0 + (double)(x >> 11) / 9007199254740992.0;
        if (put_at < pflex_mono_s())
            put_at += 1.0;
        snprintf(t.id, sizeof t.id, "bench-%u", e);
        /* the event (5 s), then 3 s to rise again, and at least two periods
         * after its end (a slow period must see the limit rise, or the next
         * event would be no fall) */
        if (run_until(ctl, put_at + 8.0, &next, put_at, &t) < 0)
            return -1;
        unsigned long p0 = ctl->periods;
        while (ctl->periods < p0 + 2)
            if (run_until(ctl, pflex_mono_s() + 0.05, &next, NAN, NULL) < 0)
                return -1;
    }
    size_t n = ctl->ttt.settled - settled0;
    double v[CTL_TTT_KEEP];
    printf("  time to target, %zu events:", n);
    for (size_t i = 0; i < n && i < CTL_TTT_KEEP; i++) {
        v[i] = ctl->ttt.kept[(settled0 + i) % CTL_TTT_KEEP];
        printf(" %.3f", v[i]);
    }
    struct pflex_ttt_summary s;
    pflex_ttt_summarize(v, n < CTL_TTT_KEEP ? n : CTL_TTT_KEEP, &s);
    printf("\n  p50 %.3f s, p99 %.3f s, worst %.3f s, %zu of %zu met\n", s.p50_s, s.p99_s, s.worst_s, s.met, s.events);
    printf("  = ttt nodes %u mode %s events %zu p50_s %.3f p99_s %.3f worst_s %.3f unmet %zu\n", nnodes,
           table_mode ? "table" : "sim", s.events, s.p50_s, s.p99_s, s.worst_s, s.events - s.met);
    return 0;
}

/* Long: the bench's modes side by side, each a short block of arguments
 * and one call; a reader sees every mode at once. */
int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "parse"))
        return parse_bench(argv[2]);
    int ttt = argc >= 4 && !strcmp(argv[1], "ttt");
    unsigned ttt_events = 0;
    uint64_t ttt_seed = 1;
    if (ttt) {
        /* ttt NODES EVENTS [MODE [SEED]] as the plain form's NODES, MODE */
        static char *targv[8];
        ttt_events = (unsigned)atoi(argv[3]);
        ttt_seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
        if (ttt_events < 1 || ttt_events > 1000) {
            fprintf(stderr, "controller_bench ttt: EVENTS is 1 to 1000\n");
            return 2;
        }
        targv[0] = argv[0];
        targv[1] = argv[2];
        targv[2] = "2";
        targv[3] = "64";
        targv[4] = "0";
        targv[5] = "0";
        targv[6] = argc > 4 ? argv[4] : "sim";
        argv = targv;
        argc = 7;
        power_dynamics = strcmp(argv[6], "table") != 0;
    }
    nnodes = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    int periods = argc > 2 ? atoi(argv[2]) : 12;
    unsigned parallel = argc > 3 ? (unsigned)atoi(argv[3]) : 64;
    latency_ms = argc > 4 ? (unsigned)atoi(argv[4]) : 0;
    unsigned threads = argc > 5 ? (unsigned)atoi(argv[5]) : 0;     /* 0: the controller's default */
    table_mode = argc > 6 && !strcmp(argv[6], "table");
    if ((argc > 6 && !table_mode && strcmp(argv[6], "sim")) || nnodes < 1 || nnodes > 100000 || periods < 2 || parallel < 1 || latency_ms > 10000 || threads > 16) {
        fprintf(stderr, "usage: controller_bench [NODES [PERIODS [PARALLEL [LATENCY_MS [THREADS [sim|table]]]]]]\n"
                        "       controller_bench parse STATUS_FILE\n");
        return 2;
    }
    nodes = calloc(nnodes, sizeof *nodes);
    char **urls = calloc(nnodes, sizeof *urls);
    struct pflex_job_desc d;
    pflex_error_t err;
    if (!nodes || !urls || pflex_job_load("llama-8b-pretrain-h200", &d, &err) < 0) {
        fprintf(stderr, "controller_bench: setup failed\n");
        return 1;
    }
    for (unsigned k = 0; k < nnodes; k++) {
        pthread_mutex_init(&nodes[k].mu, NULL);
        if (pflex_sim_job_create(&d, 1 + k, &nodes[k].job, &err) < 0) {
            fprintf(stderr, "controller_bench: %s\n", err.text);
            return 1;
        }
        pflex_sim_job_gpu(nodes[k].job, &nodes[k].gpu);
        nodes[k].kind = pflex_sim_job_kind(nodes[k].job);
        snprintf(nodes[k].name, sizeof nodes[k].name, "node-%u", k);
    }
    if (table_mode) {
        const struct pflex_gpu_kind *kd = nodes[0].kind;
        tab_lo = (int)ceil(kd->min_cap_w);
        tab_hi = (int)floor(kd->max_cap_w);
        tab_power = malloc((size_t)(tab_hi - tab_lo + 1) * sizeof *tab_power);
        tab_tput = malloc((size_t)(tab_hi - tab_lo + 1) * sizeof *tab_tput);
        node_cap = malloc(nnodes * sizeof *node_cap);
        node_text = calloc(nnodes, sizeof *node_text);
        node_len = calloc(nnodes, sizeof *node_len);
        if (!tab_power || !tab_tput || !node_cap || !node_text || !node_len) {
            fprintf(stderr, "controller_bench: out of memory\n");
            return 1;
        }
        for (int w = tab_lo; w <= tab_hi; w++) {
            struct pflex_sim_measure m;
            if (pflex_sim_job_expect(nodes[0].job, w, &m, &err) < 0) {
                fprintf(stderr, "controller_bench: %s\n", err.text);
                return 1;
            }
            tab_power[w - tab_lo] = m.power_w;
            tab_tput[w - tab_lo] = m.throughput;
        }
        for (unsigned k = 0; k < nnodes; k++) {
            for (unsigned i = 0; i < NG; i++)
                node_cap[k][i] = kd->max_cap_w;
            if (render(k) < 0) {
                fprintf(stderr, "controller_bench: out of memory\n");
                return 1;
            }
        }
    }
    /* threads take their creator's name: the server's are "agents", the
     * controller's (this one and those it starts) "controller", so that
     * perf --sort comm tells the two sides' CPU apart */
    prctl(PR_SET_NAME, "agents");
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* two threads for all connections; with a latency, a thread per
     * connection, so that answers wait side by side as on separate hosts */
    struct MHD_Daemon *md =
        latency_ms ? MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
                                      0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                      MHD_OPTION_CONNECTION_LIMIT, 4096u, MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
                                      MHD_OPTION_END)
                   : MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, handle, NULL,
                                      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE, 2u,
                                      MHD_OPTION_CONNECTION_LIMIT, 4096u, MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
                                      MHD_OPTION_END);
    if (!md) {
        fprintf(stderr, "controller_bench: cannot start the HTTP server\n");
        return 1;
    }
    prctl(PR_SET_NAME, "controller");
    unsigned short port = MHD_get_daemon_info(md, MHD_DAEMON_INFO_BIND_PORT)->port;
    for (unsigned k = 0; k < nnodes; k++) {
        urls[k] = malloc(64);
        snprintf(urls[k], 64, "http://127.0.0.1:%u/n/%u", port, k);
    }
    struct ctl_config cfg = {.nagents = nnodes, .agent_urls = (const char *const *)urls, .period_s = ttt ? 1 : 5,
                             .explore_step = 0.05, .timeout_ms = 5000, .parallel = parallel,
                             .http_threads = threads, .log = ttt && getenv("BENCH_LOG") ? stderr : NULL};
    ctl_t *ctl;
    if (ctl_create(&cfg, &ctl, &err) < 0) {
        fprintf(stderr, "controller_bench: %s\n", err.text);
        return 1;
    }
    if (ttt) {
        int rc = bench_ttt(ctl, ttt_events, ttt_seed);
        ctl_destroy(ctl);
        MHD_stop_daemon(md);
        return rc < 0 ? 1 : 0;
    }
    struct pflex_target t = {.start_s = 0, .end_s = INFINITY, .value = 0.75, .unit = PFLEX_TARGET_FRACTION,
                             .ramp_s = 0};
    snprintf(t.source, sizeof t.source, "bench");
    pflex_target_set_add(ctl_targets(ctl), &t, &err);
    double *w = calloc((size_t)periods * 9, sizeof *w);
    double *rd = w + periods, *pl = rd + periods, *pu = pl + periods, *cpu = pu + periods, *sent = cpu + periods;
    double *pcpu = sent + periods, *scpu = pcpu + periods, *ccpu = scpu + periods;
    struct ctl_period_result r = {0};
    for (int p = 0; p < periods; p++) {
        double t0 = now_s(), c0 = cpu_s(), pc0 = proc_cpu_s(), sc0 = server_cpu_s();
        if (ctl_period(ctl, 1000 + 5.0 * p, &r, &err) < 0) {
            fprintf(stderr, "controller_bench: %s\n", err.text);
            return 1;
        }
        w[p] = now_s() - t0;
        cpu[p] = cpu_s() - c0;
        pcpu[p] = proc_cpu_s() - pc0;
        scpu[p] = server_cpu_s() - sc0;
        ccpu[p] = pcpu[p] - scpu[p];
        rd[p] = r.read_s;
        pl[p] = r.plan_s;
        pu[p] = r.push_s;
        sent[p] = (double)r.pushed_nodes;
    }
    size_t m = (size_t)periods - 1, mid = 1 + m / 2;
    qsort(w + 1, m, sizeof *w, cmp);
    qsort(rd + 1, m, sizeof *rd, cmp);
    qsort(pl + 1, m, sizeof *pl, cmp);
    qsort(pu + 1, m, sizeof *pu, cmp);
    qsort(cpu + 1, m, sizeof *cpu, cmp);
    qsort(sent + 1, m, sizeof *sent, cmp);
    qsort(pcpu + 1, m, sizeof *pcpu, cmp);
    qsort(scpu + 1, m, sizeof *scpu, cmp);
    qsort(ccpu + 1, m, sizeof *ccpu, cmp);
    printf("  %u nodes x %d GPUs (%u GPUs, %zu jobs), agents over loopback HTTP in process answering "
           "%u ms late%s, %u requests at once on %s HTTP threads: one period (read, learn, plan, push) median %.3f s, slowest %.3f s over %d periods "
           "(medians: read %.3f s, learn + plan %.3f s, push %.3f s; the CPU of the controller's calling thread %.3f s, "
           "of the whole process, simulated agents included, %.3f s: the server's threads %.3f s, the controller's "
           "(the rest) %.3f s); nodes sent caps: median %.0f of %u a period (%.0f in the first); "
           "last: limit %.0f W, worst case %.0f W, %zu agents down\n",
           nnodes, NG, nnodes * NG, r.jobs, latency_ms, table_mode ? " from a table of node 0's curve" : "", parallel, threads ? argv[5] : "the default", w[mid], w[periods - 1], periods - 1, rd[mid], pl[mid],
           pu[mid], cpu[mid], pcpu[mid], scpu[mid], ccpu[mid], sent[mid], nnodes, sent[0], r.limit_w, r.worst_w, r.agents_down);
    /* one line for scripts (bench/run.sh: the growth per 10x nodes) */
    printf("  = nodes %u mode %s threads %u period_s %.4f cpu_s %.4f agents_cpu_s %.4f ctl_cpu_s %.4f\n", nnodes,
           table_mode ? "table" : "sim", threads, w[mid], pcpu[mid], scpu[mid], ccpu[mid]);
    ctl_destroy(ctl);
    MHD_stop_daemon(md);
    for (unsigned k = 0; k < nnodes; k++) {
        pflex_sim_job_destroy(nodes[k].job);
        free(urls[k]);
    }
    free(urls);
    free(nodes);
    free(w);
    return 0;
}
