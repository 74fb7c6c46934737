/* apply.c — pflex apply: put a plan from `pflex allocate --json` into force,
 * with a lease, through a node's agent (HTTP) or locally through the limit
 * guard, and print what took (the limits read back, not the plan).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/cli.h"
#include "pflex/net/capagent.h"
#include "pflex/hw/capapply.h"
#include "pflex/io/capplan.h"
#include "pflex/hw/guard.h"
#include "pflex/hw/nvml.h"
#include "pflex/io/secret.h"

#define CMD "apply"

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
    "Skipped jobs are also named on stderr, one line per reason.\n"
    "\n"
    "exit: 0 caps took (any skipped jobs named on stderr); 1 a system, HTTP or NVML\n"
    "error (some may have taken: the output says which); 2 bad usage, a malformed\n"
    "plan, or caps the agent refused (nothing changed); 4 nothing applied: no job of\n"
    "the plan has GPUs on this node (the skipped jobs are printed and named).\n"
    "\n"
    "EXAMPLES\n"
    "  pflex allocate sweep.csv --reduce 0.2 --json > plan.json\n"
    "  pflex apply plan.json --agent http://127.0.0.1:9410 --token-file agent.token \\\n"
    "              --lease 900\n"
    "  sudo pflex apply plan.json --local --job-map jobs.json --lease 300\n";

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

static int read_token(const char *path, char *buf, size_t len)
{
    char *s;
    size_t n;
    unsigned mode;
    pflex_error_t err;
    int got = pflex_secret_read_file(path, &s, &n, &mode, &err);
    if (got == PFLEX_SECRET_OPEN) {
        cli_usage_error(CMD, "--token-file %s: mode %04o lets others read it; chmod 600 it",
                        path, mode);
        return -1;
    }
    if (got) {
        cli_usage_error(CMD, "--token-file %s", err.text);
        return -1;
    }
    size_t k = n < len - 1 ? n : len - 1;
    memcpy(buf, s, k);
    buf[k] = '\0';
    memset(s, 0, n);
    free(s);
    k = strlen(buf);
    while (k > 0 && strchr("\r\n ", buf[k - 1]))
        buf[--k] = '\0';
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

static const char *skip_field(const json_t *skipped, size_t i, const char *key)
{
    const char *v = json_string_value(json_object_get(json_array_get(skipped, i), key));
    return v ? v : "?";
}

/* Name the skipped jobs on stderr, one line per reason, so that a plan that
 * missed this node is seen under --json or a pipe too; when nothing failed
 * (rc 0) and no cap took, say so: PFLEX_EXIT_NOTHING_APPLIED.  Else rc. */
static int say_skipped(const json_t *applied, const json_t *skipped, size_t njobs, int rc)
{
    size_t ns = json_array_size(skipped);
    for (size_t i = 0; i < ns; i++) {
        const char *why = skip_field(skipped, i, "reason");
        size_t first = 0, cnt = 0;
        while (strcmp(skip_field(skipped, first, "reason"), why))
            first++;
        if (first < i)
            continue;   /* this reason's line is already out */
        for (size_t k = i; k < ns; k++)
            cnt += !strcmp(skip_field(skipped, k, "reason"), why);
        fprintf(stderr, "pflex " CMD ": skipped %zu job%s (%s):", cnt, cnt == 1 ? "" : "s", why);
        for (size_t k = i; k < ns; k++)
            if (!strcmp(skip_field(skipped, k, "reason"), why))
                fprintf(stderr, " %s", skip_field(skipped, k, "job"));
        fputc('\n', stderr);
    }
    if (rc || json_array_size(applied))
        return rc;
    cli_error(CMD, "nothing applied: no cap set (%zu of the plan's %zu job%s skipped)", ns, njobs,
              njobs == 1 ? "" : "s");
    return PFLEX_EXIT_NOTHING_APPLIED;
}

/* ---- --agent ----------------------------------------------------- */

static int via_agent(const char *url, const char *token, double timeout_s, double lease_s,
                     const pflex_capplan_t *plan, int json)
{
    struct pflex_capagent_report r;
    pflex_error_t err;
    int got = pflex_capagent_apply(url, token, timeout_s, lease_s, plan, &r, &err);
    if (got)
        cli_error(CMD, "%s", err.text);
    if (!r.applied)
        return got == PFLEX_CAPAGENT_REFUSED ? PFLEX_EXIT_BAD_INPUT : PFLEX_EXIT_INTERNAL;
    int rc = got ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_OK;
    size_t i;
    json_t *e;
    json_array_foreach(r.errors, i, e) {
        cli_error(CMD, "GPU %lld: %s", (long long)json_integer_value(json_object_get(e, "gpu")),
                  json_string_value(json_object_get(e, "error")));
        rc = PFLEX_EXIT_INTERNAL;
    }
    if (print_result(r.applied, r.skipped, json)) {
        cli_error(CMD, "writing standard output failed");
        rc = PFLEX_EXIT_INTERNAL;
    }
    rc = say_skipped(r.applied, r.skipped, plan->njobs, rc);
    pflex_capagent_report_fini(&r);
    return rc;
}

/* ---- --local ----------------------------------------------------- */

static void print_notes(pflex_guard_t *gd)
{
    for (unsigned i = 0; i < pflex_guard_note_count(gd); i++)
        cli_error(CMD, "%s", pflex_guard_note(gd, i));
    pflex_guard_notes_clear(gd);
}

/* Hold the caps for the lease (a signal ends it early). */
static void hold_lease(double lease_s)
{
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

/* The exit status of a library error: the plan's fault, or the node's. */
static int plan_error(int got, const pflex_error_t *err)
{
    if (got == -1 && !pflex_error_is_system(err))
        return cli_usage_error(CMD, "%s", err->text);
    cli_error(CMD, "%s", err->text);
    return PFLEX_EXIT_INTERNAL;
}

/* Place and check the plan on g, set it through a guard, print what took,
 * hold it for the lease; the guard restores every GPU on the way out. */
static int apply_local(pflex_gpu_t *g, const char *state_dir, const json_t *map, double lease_s,
                       const pflex_capplan_t *plan, int json)
{
    struct pflex_capapply_gpu a[PFLEX_CAPAPPLY_MAX_GPUS];
    unsigned n = 0;
    pflex_error_t err;
    int rc = 0, got;
    json_t *skipped = json_array(), *applied = json_array();
    if ((got = pflex_capapply_place(g, plan, map, a, &n, skipped, &err))
        || (got = pflex_capapply_check(g, a, n, &err)))
        rc = plan_error(got, &err);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    int sigs[16], nsig = pflex_guard_fatal_signals(NULL, sigs);
    for (int s = 0; s < nsig; s++)
        sigaction(sigs[s], &sa, NULL);
    pflex_guard_t *gd = NULL;
    if (!rc && n) {
        unsigned idx[PFLEX_CAPAPPLY_MAX_GPUS];
        for (unsigned q = 0; q < n; q++)
            idx[q] = a[q].gpu;
        struct pflex_guard_opts go = {.state_dir = state_dir, .owner = "apply"};
        if (pflex_guard_open(g, idx, n, &go, &gd, &err)) {
            cli_error(CMD, "%s", err.text);
            rc = PFLEX_EXIT_INTERNAL;
        }
        print_notes(gd);
    }
    if (!rc && pflex_capapply_set(gd, g, a, n, lease_s, &stop_signal, applied, &err)) {
        cli_error(CMD, "%s", err.text);
        rc = PFLEX_EXIT_INTERNAL;
    }
    if (rc != PFLEX_EXIT_BAD_INPUT && !stop_signal) {
        if (print_result(applied, skipped, json))
            rc = PFLEX_EXIT_INTERNAL;
        fflush(stdout);
        rc = say_skipped(applied, skipped, plan->njobs, rc);
    }
    if (!rc && n)
        hold_lease(lease_s);
    if (gd) {
        if (pflex_guard_restore_all(gd, &err)) {
            cli_error(CMD, "%s", err.text);
            rc = PFLEX_EXIT_INTERNAL;
        } else {
            /* After a failure no lease was held: say what ended it. */
            cli_error(CMD, "%s: original power limits restored",
                      stop_signal ? "lease over (signal)"
                      : rc        ? "stopped by the error"
                                  : "lease over");
        }
        print_notes(gd);
        pflex_guard_close(gd);
    }
    json_decref(applied);
    json_decref(skipped);
    return rc;
}

static int via_local(const char *lib, const char *state_dir, const char *map_path,
                     double lease_s, const pflex_capplan_t *plan, int json)
{
    int rc = 0;
    json_t *map = map_path ? read_json_file(map_path, "the job map", &rc) : NULL;
    if (rc)
        return rc;
    pflex_gpu_t g;
    pflex_error_t err;
    if (pflex_nvml_open(lib, &g, &err)) {
        json_decref(map);
        cli_error(CMD, "%s", err.text);
        return PFLEX_EXIT_INTERNAL;
    }
    rc = apply_local(&g, state_dir, map, lease_s, plan, json);
    pflex_gpu_close(&g);
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
    if (agent && strncmp(agent, "http://", 7) && strncmp(agent, "https://", 8))
        return cli_usage_error(CMD, "--agent '%s': an agent's URL starts with http:// or https://", agent);
    if (map && !local)
        return cli_usage_error(CMD, "--job-map goes with --local; an agent has its own job map");
    pflex_capplan_t *plan;
    pflex_error_t err;
    if (pflex_capplan_read_file(argv[optind], &plan, &err)) {
        if (pflex_error_is_system(&err)) {
            cli_error(CMD, "%s", err.text);
            return PFLEX_EXIT_INTERNAL;
        }
        return cli_usage_error(CMD, "%s", err.text);
    }
    int rc = 0;
    if (agent) {
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
            rc = via_agent(url, token, timeout, lease, plan, json);
    } else {
        if (!lib) {
            const char *env = getenv("PFLEX_NVML_LIB");
            lib = env && *env ? env : PFLEX_NVML_LIB_DEFAULT;
        }
        if (!state) {
            const char *env = getenv("PFLEX_STATE_DIR");
            state = env && *env ? env : PFLEX_GUARD_DIR_DEFAULT;
        }
        rc = via_local(lib, state, map, lease, plan, json);
    }
    pflex_capplan_destroy(plan);
    return rc;
}
