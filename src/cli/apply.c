/* apply.c — pflex apply: put a plan from `pflex allocate --json` into force,
 * with a lease, through a node's agent (HTTP) or locally through the limit
 * guard, and print what took (the limits read back, not the plan).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "pflex/guard.h"
#include "pflex/http.h"
#include "pflex/nvml.h"

#define CMD "apply"
#define MAX_GPUS 64

static const char help_text[] =
    "usage: pflex apply PLAN.json --agent URL [--token-file FILE] [--lease S] [--json]\n"
    "       pflex apply PLAN.json --local [--job-map FILE] [--lease S] [--json]\n"
    "\n"
    "Puts a plan into force: each job's per-GPU cap (jobs[].cap_w of 'pflex allocate\n"
    "--json') on the job's GPUs, with a lease, and prints what took: the limit each\n"
    "GPU enforces, read back.  A job's GPUs are jobs[].gpus when it is a list of GPU\n"
    "indices or UUIDs; when it is a count (as allocate writes it), the agent's job\n"
    "map (or --job-map) says which GPUs of this node the job has, and jobs with no\n"
    "GPU here are skipped and listed.\n"
    "\n"
    "--agent URL sends one PUT /v1/caps to a pflex agent: the agent checks every cap\n"
    "against its GPUs' ranges before setting any, and restores each GPU when its\n"
    "lease ends.  --local sets the caps itself through the limit guard (locks, saved\n"
    "originals, see pflex agent --help; root for real GPUs), holds them for the\n"
    "lease, then restores them; a signal restores them early.\n"
    "\n"
    "options:\n"
    "  --agent URL        the agent, e.g. http://127.0.0.1:9410\n"
    "  --token-file FILE  the agent's bearer token (mode 0600; default $PFLEX_AGENT_TOKEN)\n"
    "  --local            this node's GPUs through NVML, no agent\n"
    "  --job-map FILE     --local: {\"jobs\": {\"JOB\": [0, 1], ...}}\n"
    "  --lease S          seconds the caps hold (default 600)\n"
    "  --state-dir DIR    --local: lock and saved-limit files (default $PFLEX_STATE_DIR,\n"
    "                     else " PFLEX_GUARD_DIR_DEFAULT ")\n"
    "  --nvml-lib PATH    --local: NVML library (default $PFLEX_NVML_LIB)\n"
    "  --timeout S        --agent: HTTP timeout (default 10)\n"
    "  --json             one JSON document: {\"applied\": [{\"job\", \"gpu\", \"uuid\",\n"
    "                     \"cap_w\", \"enforced_w\", \"lease_s\"}], \"skipped\": [...]}\n"
    "  --help             this text\n"
    "\n"
    "exit: 0 every cap took; 1 a system, HTTP or NVML error (some may have taken:\n"
    "the output says which); 2 bad usage, a malformed plan, or caps the agent refused\n"
    "(nothing changed).\n"
    "\n"
    "EXAMPLES\n"
    "  pflex allocate sweep.csv --reduce 0.2 --json > plan.json\n"
    "  pflex apply plan.json --agent http://127.0.0.1:9410 --token-file agent.token \\\n"
    "              --lease 900\n"
    "  sudo pflex apply plan.json --local --job-map jobs.json --lease 300\n";

struct plan_job {
    const char *name;
    double cap_w;
    json_t *gpus;       /* borrowed: an array, or NULL (a count) */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static json_t *read_json_file(const char *path, const char *what, int *rc)
{
    json_error_t je;
    json_t *doc = !strcmp(path, "-") ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &je)
                                     : json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        cli_usage_error(CMD, "%s:%d:%d: %s (%s)", path, je.line, je.column, je.text, what);
        *rc = PFLEX_EXIT_BAD_INPUT;
    }
    return doc;
}

/* jobs[] of the plan, checked. */
static int parse_plan(const char *path, json_t *doc, struct plan_job **out, size_t *n)
{
    json_t *jobs = json_object_get(doc, "jobs");
    if (!json_is_array(jobs) || json_array_size(jobs) == 0)
        return cli_usage_error(CMD, "%s: no \"jobs\" list (a plan of 'pflex allocate --json')",
                               path);
    *n = json_array_size(jobs);
    *out = calloc(*n, sizeof **out);
    if (!*out) {
        cli_error(CMD, "out of memory");
        return PFLEX_EXIT_INTERNAL;
    }
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        json_t *name = json_object_get(j, "job"), *cap = json_object_get(j, "cap_w");
        json_t *gpus = json_object_get(j, "gpus");
        if (!json_is_string(name) || !*json_string_value(name))
            return cli_usage_error(CMD, "%s: jobs[%zu]: no \"job\" name", path, i);
        if (!json_is_number(cap) || !(json_number_value(cap) > 0)
            || !isfinite(json_number_value(cap)))
            return cli_usage_error(CMD, "%s: jobs[%zu] (%s): \"cap_w\" must be a positive "
                                   "number of watts", path, i, json_string_value(name));
        if (gpus && !json_is_array(gpus) && !json_is_integer(gpus))
            return cli_usage_error(CMD, "%s: jobs[%zu] (%s): \"gpus\" is a count or a list of "
                                   "GPU indices or UUIDs", path, i, json_string_value(name));
        (*out)[i] = (struct plan_job){json_string_value(name), json_number_value(cap),
                                      json_is_array(gpus) ? gpus : NULL};
    }
    return 0;
}

static int read_token(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        cli_usage_error(CMD, "--token-file %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (sb.st_mode & 077) {
        close(fd);
        cli_usage_error(CMD, "--token-file %s: mode %04o lets others read it; chmod 600 it",
                        path, (unsigned)(sb.st_mode & 07777));
        return -1;
    }
    ssize_t got = read(fd, buf, len - 1);
    close(fd);
    if (got < 0) {
        cli_usage_error(CMD, "--token-file %s: %s", path, strerror(errno));
        return -1;
    }
    buf[got] = '\0';
    while (got > 0 && strchr("\r\n ", buf[got - 1]))
        buf[--got] = '\0';
    return 0;
}

/* ---- output ------------------------------------------------------ */

static int print_result(json_t *applied, json_t *skipped, int json)
{
    if (json) {
        json_t *doc = json_object();
        json_object_set(doc, "applied", applied);
        json_object_set(doc, "skipped", skipped);
        return cli_json_print(doc);
    }
    printf("%-24s %4s  %-42s %8s %10s %8s\n", "JOB", "GPU", "UUID", "CAP_W", "ENFORCED_W",
           "LEASE_S");
    size_t i;
    json_t *a;
    json_array_foreach(applied, i, a) {
        printf("%-24s %4lld  %-42s %8.6g %10.6g %8.6g\n",
               json_string_value(json_object_get(a, "job")),
               (long long)json_integer_value(json_object_get(a, "gpu")),
               json_string_value(json_object_get(a, "uuid")),
               json_number_value(json_object_get(a, "cap_w")),
               json_number_value(json_object_get(a, "enforced_w")),
               json_number_value(json_object_get(a, "lease_s")));
    }
    json_array_foreach(skipped, i, a)
        printf("skipped: %s (%s)\n", json_string_value(json_object_get(a, "job")),
               json_string_value(json_object_get(a, "reason")));
    return fflush(stdout) == 0 ? 0 : -1;
}

/* ---- --agent ----------------------------------------------------- */

static int via_agent(const char *url, const char *token, double timeout_s, double lease_s,
                     struct plan_job *jobs, size_t n, int json)
{
    char u[2048];
    pflex_error_t err;
    long status;
    char *body = NULL;
    /* The agent's job map: which plan jobs have GPUs on this node. */
    snprintf(u, sizeof u, "%s/v1/jobs", url);
    if (pflex_http_request("GET", u, token, NULL, timeout_s, &status, &body, &err)) {
        cli_error(CMD, "%s", err.text);
        return PFLEX_EXIT_INTERNAL;
    }
    json_t *known = status == 200 ? json_loads(body, 0, NULL) : NULL;
    free(body);
    if (!known) {
        cli_error(CMD, "GET %s: HTTP %ld, not an agent's job list", u, status);
        return PFLEX_EXIT_INTERNAL;
    }
    json_t *caps = json_array(), *skipped = json_array();
    for (size_t k = 0; k < n; k++) {
        if (jobs[k].gpus) {
            size_t i;
            json_t *g;
            json_array_foreach(jobs[k].gpus, i, g)
                json_array_append_new(caps, json_pack("{s:O, s:f}", "gpu", g, "cap_w",
                                                      jobs[k].cap_w));
            continue;
        }
        int here = 0;
        size_t i;
        json_t *kj;
        json_array_foreach(json_object_get(known, "jobs"), i, kj)
        {
            const char *kn = json_string_value(json_object_get(kj, "job"));
            here |= kn && !strcmp(kn, jobs[k].name);
        }
        if (here)
            json_array_append_new(caps, json_pack("{s:s, s:f}", "job", jobs[k].name, "cap_w",
                                                  jobs[k].cap_w));
        else
            json_array_append_new(skipped, json_pack("{s:s, s:s}", "job", jobs[k].name,
                                                     "reason", "not in the agent's job map"));
    }
    json_decref(known);
    json_t *applied = json_array();
    int rc = PFLEX_EXIT_OK;
    if (json_array_size(caps)) {
        json_t *req = json_pack("{s:f, s:O}", "lease_s", lease_s, "caps", caps);
        char *text = json_dumps(req, JSON_PRESERVE_ORDER);
        json_decref(req);
        snprintf(u, sizeof u, "%s/v1/caps", url);
        if (!text || pflex_http_request("PUT", u, token, text, timeout_s, &status, &body, &err)) {
            cli_error(CMD, "%s", text ? err.text : "out of memory");
            free(text);
            json_decref(caps);
            json_decref(skipped);
            json_decref(applied);
            return PFLEX_EXIT_INTERNAL;
        }
        free(text);
        json_t *ans = json_loads(body, 0, NULL);
        const char *msg = json_string_value(json_object_get(ans, "error"));
        if (status == 400) {
            cli_error(CMD, "the agent refused the plan, nothing changed: %s", msg ? msg : body);
            rc = PFLEX_EXIT_BAD_INPUT;
        } else if (status != 200 && status != 502) {
            cli_error(CMD, "PUT %s: HTTP %ld: %s", u, status, msg ? msg : body);
            rc = PFLEX_EXIT_INTERNAL;
        } else {
            size_t i;
            json_t *a, *e;
            json_array_foreach(json_object_get(ans, "applied"), i, a) {
                json_t *lease = json_object_get(a, "lease");
                const char *lj = json_string_value(json_object_get(lease, "job"));
                json_array_append_new(applied, json_pack(
                    "{s:s, s:O, s:O, s:O, s:O, s:O}", "job",
                    lj ? lj : "",
                    "gpu", json_object_get(a, "gpu"), "uuid", json_object_get(a, "uuid"),
                    "cap_w", json_object_get(lease, "cap_w"),
                    "enforced_w", json_object_get(a, "enforced_w"),
                    "lease_s", json_object_get(lease, "lease_s")));
            }
            json_array_foreach(json_object_get(ans, "errors"), i, e) {
                cli_error(CMD, "GPU %lld: %s", (long long)json_integer_value(json_object_get(e,
                          "gpu")), json_string_value(json_object_get(e, "error")));
                rc = PFLEX_EXIT_INTERNAL;
            }
        }
        json_decref(ans);
        free(body);
    }
    json_decref(caps);
    if (rc != PFLEX_EXIT_BAD_INPUT && print_result(applied, skipped, json)) {
        cli_error(CMD, "writing standard output failed");
        rc = PFLEX_EXIT_INTERNAL;
    }
    json_decref(applied);
    json_decref(skipped);
    return rc;
}

/* ---- --local ----------------------------------------------------- */

static int gpu_index(pflex_gpu_t *g, unsigned count, json_t *ref, unsigned *out)
{
    if (json_is_integer(ref)) {
        json_int_t v = json_integer_value(ref);
        if (v < 0 || v >= (json_int_t)count)
            return cli_usage_error(CMD, "GPU %lld does not exist (this node has %u)",
                                   (long long)v, count);
        *out = (unsigned)v;
        return 0;
    }
    const char *s = json_string_value(ref);
    for (unsigned i = 0; s && i < count; i++) {
        struct pflex_nvml_info info;
        pflex_error_t err;
        if (pflex_nvml_info(g, i, &info, &err) == 0 && !strcmp(info.uuid, s)) {
            *out = i;
            return 0;
        }
    }
    return cli_usage_error(CMD, "GPU '%s': no GPU of this node has that UUID", s ? s : "?");
}

static int via_local(const char *lib, const char *state_dir, const char *map_path,
                     double lease_s, struct plan_job *jobs, size_t n, int json)
{
    int rc = 0;
    json_t *map = map_path ? read_json_file(map_path, "the job map", &rc) : NULL;
    if (rc)
        return rc;
    json_t *mjobs = json_is_object(json_object_get(map, "jobs")) ? json_object_get(map, "jobs")
                                                                 : map;
    pflex_gpu_t g;
    pflex_error_t err;
    if (pflex_nvml_open(lib, &g, &err)) {
        json_decref(map);
        cli_error(CMD, "%s", err.text);
        return PFLEX_EXIT_INTERNAL;
    }
    unsigned count = 0;
    pflex_gpu_count(&g, &count, &err);
    unsigned idx[MAX_GPUS], nidx = 0;
    double cap[MAX_GPUS];
    const char *owner[MAX_GPUS];
    json_t *skipped = json_array(), *applied = json_array();
    for (size_t k = 0; k < n && !rc; k++) {
        json_t *gpus = jobs[k].gpus ? jobs[k].gpus : json_object_get(mjobs, jobs[k].name);
        if (!json_is_array(gpus)) {
            json_array_append_new(skipped, json_pack("{s:s, s:s}", "job", jobs[k].name, "reason",
                                                     "no GPUs of this node (see --job-map)"));
            continue;
        }
        size_t i;
        json_t *ref;
        json_array_foreach(gpus, i, ref) {
            unsigned gi = 0;
            if ((rc = gpu_index(&g, count, ref, &gi)))
                break;
            for (unsigned q = 0; q < nidx && !rc; q++)
                if (idx[q] == gi)
                    rc = cli_usage_error(CMD, "GPU %u is given to both %s and %s", gi, owner[q],
                                         jobs[k].name);
            if (!rc && nidx == MAX_GPUS)
                rc = cli_usage_error(CMD, "more than %d GPUs", MAX_GPUS);
            if (rc)
                break;
            idx[nidx] = gi;
            cap[nidx] = jobs[k].cap_w;
            owner[nidx++] = jobs[k].name;
        }
    }
    /* Every cap within its GPU's range, before anything changes. */
    for (unsigned q = 0; q < nidx && !rc; q++) {
        struct pflex_gpu_limits lim;
        if (pflex_gpu_limits(&g, idx[q], &lim, &err)) {
            cli_error(CMD, "%s", err.text);
            rc = PFLEX_EXIT_INTERNAL;
        } else if (cap[q] < lim.min_w || cap[q] > lim.max_w) {
            rc = cli_usage_error(CMD, "job %s: cap %g W is outside GPU %u's range %g-%g W",
                                 owner[q], cap[q], idx[q], lim.min_w, lim.max_w);
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    int sigs[16], nsig = pflex_guard_fatal_signals(NULL, sigs);
    for (int s = 0; s < nsig; s++)
        sigaction(sigs[s], &sa, NULL);
    pflex_guard_t *gd = NULL;
    if (!rc && nidx) {
        struct pflex_guard_opts go = {.state_dir = state_dir, .owner = "apply"};
        if (pflex_guard_open(&g, idx, nidx, &go, &gd, &err)) {
            cli_error(CMD, "%s", err.text);
            rc = PFLEX_EXIT_INTERNAL;
        }
        for (unsigned i = 0; i < pflex_guard_note_count(gd); i++)
            cli_error(CMD, "%s", pflex_guard_note(gd, i));
        pflex_guard_notes_clear(gd);
    }
    for (unsigned q = 0; q < nidx && !rc && !stop_signal; q++) {
        double enf;
        if (pflex_guard_set(gd, idx[q], cap[q], &enf, &err)) {
            cli_error(CMD, "%s", err.text);
            rc = PFLEX_EXIT_INTERNAL;
            break;
        }
        struct pflex_nvml_info info;
        const char *uuid = pflex_nvml_info(&g, idx[q], &info, &err) == 0 ? info.uuid : "";
        json_array_append_new(applied, json_pack("{s:s, s:i, s:s, s:f, s:f, s:f}", "job",
                                                 owner[q], "gpu", (int)idx[q], "uuid", uuid,
                                                 "cap_w", cap[q], "enforced_w", enf, "lease_s",
                                                 lease_s));
    }
    if (rc != PFLEX_EXIT_BAD_INPUT && !stop_signal) {
        if (print_result(applied, skipped, json))
            rc = PFLEX_EXIT_INTERNAL;
        fflush(stdout);
    }
    /* Hold the caps for the lease, then restore (a signal ends it early). */
    if (!rc && nidx) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            double left = lease_s - (now.tv_sec - t0.tv_sec) - (now.tv_nsec - t0.tv_nsec) * 1e-9;
            if (left <= 0 || stop_signal)
                break;
            struct timespec nap = {0, 50000000};
            nanosleep(&nap, NULL);
        }
    }
    if (gd) {
        if (pflex_guard_restore_all(gd, &err)) {
            cli_error(CMD, "%s", err.text);
            rc = PFLEX_EXIT_INTERNAL;
        } else {
            cli_error(CMD, "lease over%s: original power limits restored",
                      stop_signal ? " (signal)" : "");
        }
        for (unsigned i = 0; i < pflex_guard_note_count(gd); i++)
            cli_error(CMD, "%s", pflex_guard_note(gd, i));
        pflex_guard_close(gd);
    }
    pflex_gpu_close(&g);
    json_decref(applied);
    json_decref(skipped);
    json_decref(map);
    if (stop_signal) {
        int sig = stop_signal;
        signal(sig, SIG_DFL);
        raise(sig);
        return 128 + sig;
    }
    return rc;
}

int cmd_apply(int argc, char **argv)
{
    enum { O_AGENT = 256, O_TOKEN, O_LOCAL, O_MAP, O_LEASE, O_STATE, O_LIB, O_TIMEOUT, O_JSON,
           O_HELP };
    static const struct option longopts[] = {
        {"agent", required_argument, NULL, O_AGENT},
        {"token-file", required_argument, NULL, O_TOKEN},
        {"local", no_argument, NULL, O_LOCAL},
        {"job-map", required_argument, NULL, O_MAP},
        {"lease", required_argument, NULL, O_LEASE},
        {"state-dir", required_argument, NULL, O_STATE},
        {"nvml-lib", required_argument, NULL, O_LIB},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, O_HELP},
        {0, 0, 0, 0},
    };
    const char *agent = NULL, *token_file = NULL, *map = NULL, *state = NULL, *lib = NULL;
    int local = 0, json = 0;
    double lease = 600, timeout = 10;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case O_AGENT: agent = optarg; break;
        case O_TOKEN: token_file = optarg; break;
        case O_LOCAL: local = 1; break;
        case O_MAP: map = optarg; break;
        case O_LEASE:
            if (cli_parse_double(CMD, "--lease", optarg, 0.001, 31536000, &lease))
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_STATE: state = optarg; break;
        case O_LIB: lib = optarg; break;
        case O_TIMEOUT:
            if (cli_parse_double(CMD, "--timeout", optarg, 0.1, 3600, &timeout))
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_JSON: json = 1; break;
        case 'h':
        case O_HELP: return cli_help(help_text);
        case ':': return cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error(CMD, optind < argc ? "one plan file, please"
                                                  : "no plan file (pflex allocate --json > plan.json)");
    if (!!agent == local)
        return cli_usage_error(CMD, "give exactly one of --agent URL and --local");
    if (map && !local)
        return cli_usage_error(CMD, "--job-map goes with --local; an agent has its own job map");
    const char *path = argv[optind];
    int rc = 0;
    json_t *doc = read_json_file(path, "a plan of 'pflex allocate --json'", &rc);
    if (!doc)
        return rc;
    struct plan_job *jobs = NULL;
    size_t n = 0;
    rc = parse_plan(path, doc, &jobs, &n);
    if (!rc && agent) {
        char token[512] = "";
        const char *env = getenv("PFLEX_AGENT_TOKEN");
        if (token_file && read_token(token_file, token, sizeof token))
            rc = PFLEX_EXIT_BAD_INPUT;
        else if (!token_file && env)
            snprintf(token, sizeof token, "%s", env);
        size_t len = strlen(agent);
        char url[1024];
        snprintf(url, sizeof url, "%.*s", (int)(len && agent[len - 1] == '/' ? len - 1 : len),
                 agent);
        if (!rc)
            rc = via_agent(url, token, timeout, lease, jobs, n, json);
    } else if (!rc) {
        if (!lib) {
            const char *env = getenv("PFLEX_NVML_LIB");
            lib = env && *env ? env : PFLEX_NVML_LIB_DEFAULT;
        }
        if (!state) {
            const char *env = getenv("PFLEX_STATE_DIR");
            state = env && *env ? env : PFLEX_GUARD_DIR_DEFAULT;
        }
        rc = via_local(lib, state, map, lease, jobs, n, json);
    }
    free(jobs);
    json_decref(doc);
    return rc;
}
