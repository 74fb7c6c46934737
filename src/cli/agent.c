/* agent.c — pflex agent: the per-node daemon that owns the GPUs' power
 * limits and serves them over HTTP (src/agent/ holds the daemon itself).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agent/agent.h"
#include "cli/cli.h"
#include "cli/config.h"
#include "lib/util/clock.h"
#include "lib/util/sdnotify.h"
#include "pflex/hw/guard.h"
#include "pflex/hw/nvml.h"

#define CMD "agent"

static const char help_text[] =
    "usage: pflex agent --backend sim|nvml [--gpus N] [--listen ADDR:PORT]\n"
    "                   [--token-file FILE] [--state-dir DIR] [options]\n"
    "\n"
    "The per-node daemon: the one owner of this node's GPU power limits.  It serves\n"
    "an HTTP API to read telemetry and set caps, each cap with a lease: when the\n"
    "lease ends, the GPU goes back to its original limit.  So do all GPUs when the\n"
    "agent stops (SIGTERM, SIGINT, any other fatal signal it can catch; during an\n"
    "event, at the event's end: see below); after a\n"
    "crash or SIGKILL, the next start restores them from the state files first.\n"
    "Each GPU is locked (flock in --state-dir): a second agent, or a pflex sweep,\n"
    "on the same GPU is refused.  A GPU that fails is reported in /v1/status and\n"
    "/metrics (pflex_gpu_up 0) and the others keep working.  A driver call that\n"
    "hangs holds only the agent's driver thread: reads answer at once with the\n"
    "last reading (read_at says when), writes 503 \"the GPU driver is busy\".\n"
    "\n"
    "API (JSON in and out; writes need 'Authorization: Bearer TOKEN'):\n"
    "  GET    /metrics        Prometheus text: dcgm-exporter's names and labels\n"
    "                         (DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_POWER_MGMT_LIMIT,\n"
    "                         DCGM_FI_DEV_ENFORCED_POWER_LIMIT, DCGM_FI_DEV_SM_CLOCK, ...;\n"
    "                         gpu, UUID, device, modelName, Hostname) and pflex_* for\n"
    "                         leases, limit ranges, job throughput and errors\n"
    "  GET    /v1/status      GPUs, limits, ranges, leases, jobs\n"
    "  PUT    /v1/caps        {\"lease_s\": 60, \"caps\": [{\"gpu\": 0, \"cap_w\": 500},\n"
    "                         {\"job\": \"train-a\", \"cap_w\": 400, \"lease_s\": 30}]};\n"
    "                         gpu is an index or a UUID; checked whole against each\n"
    "                         device's range (400 names it), set, read back; the answer\n"
    "                         is what is now in force\n"
    "  DELETE /v1/caps        restore now: all GPUs, or ?gpu=I or ?job=NAME\n"
    "  DELETE /v1/fence       forget the fencing token held (after etcd is rebuilt\n"
    "                         and its revisions start over below it)\n"
    "  PUT    /v1/jobs/JOB    {\"gpus\": [0, 1]}: the job map (indices or UUIDs)\n"
    "  POST   /v1/jobs/JOB/progress  {\"tokens_total\": N} or {\"tokens\": n}: the agent\n"
    "                         derives the job's throughput from these reports\n"
    "\n"
    "Privileges: the nvml backend changes power limits, which NVML allows to root\n"
    "only (in a container: root with CAP_SYS_ADMIN and the /dev/nvidia* devices).\n"
    "Reading telemetry needs no privilege; the sim backend needs none at all.  Run\n"
    "it as root under the systemd unit in deploy/ (which keeps the rest locked\n"
    "down), never on a port others can reach without --token-file.\n"
    "\n"
    "options:\n"
    "  --backend sim|nvml      simulated GPUs, or the real ones through NVML\n"
    "  --gpus N                sim: number of GPUs (default 8); the nvml backend owns\n"
    "                          every GPU NVML sees\n"
    "  --sim-job NAME|FILE     sim: the job each group of GPUs runs (a preset of\n"
    "                          'pflex sweep --list-presets' or a job file; default\n"
    "                          llama-8b-pretrain-h200 when N is a multiple of 8, else\n"
    "                          llama-8b-lora-h200 on each GPU)\n"
    "  --seed N                sim: seed of silicon variation and noise (default 1)\n"
    "  --sim-fail GPU@S        sim: GPU falls off the bus S seconds after start (tests)\n"
    "  --sim-load-dir DIR      sim: GPU N is busy only while the process whose PID\n"
    "                          DIR/gpuN holds runs (not stopped); idle otherwise\n"
    "                          (a Slurm job's script writes it: docs/slurm-levers.md)\n"
    "  --hostname NAME         the node's name in /v1/status and the Hostname label of\n"
    "                          /metrics (default: the system's host name; several sim\n"
    "                          agents on one machine need one each)\n"
    "  --nvml-lib PATH         NVML library (default $PFLEX_NVML_LIB, else libnvidia-ml.so.1)\n"
    "  --listen ADDR:PORT      where to serve (default 127.0.0.1:9410; port 0: any free\n"
    "                          port, logged and written to --port-file)\n"
    "  --port-file FILE        write the port listened on to FILE\n"
    "  --token-file FILE       the bearer token (mode 0600 or stricter, >= 16 chars);\n"
    "                          without it the agent takes no writes\n"
    "  --auth-reads            GET requests need the token too\n"
    "  --tls-cert FILE         serve HTTPS with this PEM certificate (chain) ...\n"
    "  --tls-key FILE          ... and its PEM private key (mode 0600); beyond\n"
    "                          loopback the token then never crosses the wire in clear\n"
    "  --state-dir DIR         locks and saved limits (default $PFLEX_STATE_DIR, else\n"
    "                          " PFLEX_GUARD_DIR_DEFAULT ")\n"
    "  --keep-found-limit      a limit found at start that is not the default is the\n"
    "                          one to restore (default: the board's default)\n"
    "  --job-map FILE          {\"jobs\": {\"JOB\": [0, 1], ...}}; reread on SIGHUP\n"
    "  --max-lease S           longest lease accepted (default 86400)\n"
    "  --interval S            sampling period (default 1)\n"
    "  --throughput-window S   job throughput over this window (default 30)\n"
    "  --max-body BYTES        largest request body (default 65536; more: 413)\n"
    "  --client-timeout S      a connection idle this long is closed (default 10)\n"
    "  --request-timeout S     a request must arrive in full within S seconds of its\n"
    "                          connection opening or the previous answer, however its\n"
    "                          bytes trickle; else the connection is closed (default 5)\n"
    "  --max-conns N           connections at once (default 64); when all are in use, a\n"
    "                          new address gets in by closing the oldest unfinished\n"
    "                          connection of the address holding the most\n"
    "  --max-conns-per-ip N    connections from one address (default 16); refusals and\n"
    "                          closings are logged, one line per address per 10 s\n"
    "  --threads N             threads serving HTTP (default 4; 1: the main loop serves)\n"
    "  --read-rate R           GETs per second per client, burst 2R (default 100; 0: off)\n"
    "  --write-rate R          writes per second per client, burst 2R (default 20; 0: off)\n"
    "  --label-style dcgm|prometheus  the model label of DCGM_* metrics: modelName as\n"
    "                          dcgm-exporter writes it (default; promtool's lint flags\n"
    "                          its camelCase) or model_name (lints clean)\n"
    "  --json                  log JSON lines, {\"time\": ..., \"msg\": ...}, on stderr (the\n"
    "                          API itself always speaks JSON)\n"
    "  --restore-only          restore what a dead owner left in --state-dir, then exit\n"
    "                          (the systemd unit's ExecStopPost); serves nothing.  A GPU\n"
    "                          held through a stop during an event stays until its hold\n"
    "                          ends (said in the log) ...\n"
    "  --wait                  ... and with --wait, it waits for each hold's end and\n"
    "                          restores the GPU then (no lock is held meanwhile; an agent\n"
    "                          started again takes the GPUs over and it exits)\n"
    "  --at UNIX_TIME          --restore-only: begin at that time (the restore a stop\n"
    "                          arms starts at the earliest hold's end)\n"
    "  --config FILE           read options from FILE's [agent] section (INI; each\n"
    "                          key a long option: listen = 127.0.0.1:9410); flags\n"
    "                          given too override its keys (docs/install.md)\n"
    "  --print-config          print the configuration in force in that format, exit\n"
    "  --help                  this text\n"
    "\n"
    "Logs go to stderr, one timestamped line per event.  SIGHUP rereads the token\n"
    "file and the job map (and --config's file: a key changed there is logged, in\n"
    "force after a restart); SIGTERM and SIGINT restore every GPU and exit 0, but\n"
    "for the nvml backend's GPUs under an event's lease (a fallback whose end is\n"
    "ahead): those are held at the lower of cap and fallback until the event ends,\n"
    "and a restore then is armed (a systemd-run timer, or a detached\n"
    "--restore-only --wait); an agent started meanwhile takes them over as leases.\n"
    "\n"
    "exit: 0 stopped cleanly; 1 a system or NVML error, another process owns a\n"
    "GPU, or a limit could not be restored; 2 bad usage.\n"
    "\n"
    "EXAMPLES\n"
    "  umask 077; openssl rand -hex 32 > agent.token\n"
    "  pflex agent --backend sim --gpus 8 --listen 127.0.0.1:9410 \\\n"
    "              --token-file agent.token --state-dir /tmp/pflex-state\n"
    "  curl -s localhost:9410/v1/status\n"
    "  curl -s -X PUT -H \"Authorization: Bearer $(cat agent.token)\" \\\n"
    "       -d '{\"caps\": [{\"gpu\": 0, \"cap_w\": 450}], \"lease_s\": 30}' localhost:9410/v1/caps\n"
    "  sudo pflex agent --backend nvml --listen 127.0.0.1:9410 \\\n"
    "              --token-file /etc/pflex/agent.token\n"
    "  sudo pflex agent --backend nvml --restore-only --wait   # restore held GPUs at their end\n"
    "  pflex agent --config /etc/pflex/agent.conf --print-config\n";

static volatile sig_atomic_t stop_signal, reload_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

static void on_reload(int sig)
{
    reload_signal = 1;
}

/* The last line: what the limits read back, never more.  The exit code:
 * 1 when a restore that was due did not take. */
static int closing_said(const struct agent_close_report *r, const char *what,
                        const char *state_dir)
{
    if (r->held) {
        char when[40];
        time_t t = (time_t)r->hold_last;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        agent_log("%s: %u GPU%s held at the event's fallback until %s at the latest (%.0f s), "
                  "then restored", what, r->held, r->held == 1 ? "" : "s", when,
                  r->hold_last - pflex_real_s());
    }
    if (!r->failed && !r->unverified && !r->untouched) {
        agent_log("%s; every GPU%s at its original limit (read back)", what,
                  r->held ? " not held" : "");
        return PFLEX_EXIT_OK;
    }
    char more[400] = "";
    size_t n = 0;
    if (r->failed)
        n += (size_t)snprintf(more + n, sizeof more - n, "; %u not restored (the originals stay "
                              "in %s for the next start)", r->failed, state_dir);
    if (r->unverified && n < sizeof more)
        n += (size_t)snprintf(more + n, sizeof more - n, "; %u not changed by this agent but "
                              "unreadable now", r->unverified);
    if (r->untouched && n < sizeof more)
        snprintf(more + n, sizeof more - n, "; %u never under its control, untouched",
                 r->untouched);
    agent_log("%s; %u GPU%s at the original limit (read back)%s", what, r->restored,
              r->restored == 1 ? "" : "s", more);
    return r->failed ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_OK;
}

static void http_log(void *ud, const char *line)
{
    agent_log("%s", line);
}

static int parse_rate(const char *opt, const char *s, double *out)
{
    return cli_parse_double(CMD, opt, s, 0, 1e9, out);
}

/* What the command line gives, beside the daemon's own configuration. */
struct agent_opts {
    struct agent_config cfg;
    int gpus_given, restore_only, wait, loopback;
    const char *listen, *port_file, *tls_cert, *tls_key;
    double gpus, seed, max_body, timeout, read_rate, write_rate, at;
    double req_timeout, max_conns, max_conns_ip, threads;
    cli_config_t *conf;                 /* --config FILE, --print-config */
};

/* The options' codes (agent_options' table, agent_option's cases). */
enum { O_BACKEND = 256, O_SIM_LOAD, O_GPUS, O_SIM_JOB, O_SEED, O_SIM_FAIL, O_LIB, O_LISTEN, O_PORT_FILE,
       O_TOKEN, O_AUTH_READS, O_STATE, O_KEEP, O_JOB_MAP, O_MAX_LEASE, O_INTERVAL, O_TPW,
       O_MAX_BODY, O_TIMEOUT, O_REQ_TIMEOUT, O_MAX_CONNS, O_MAX_CONNS_IP, O_THREADS, O_READ_RATE, O_WRITE_RATE, O_LABELS, O_JSON, O_RESTORE, O_WAIT, O_AT, O_HOSTNAME, O_TLS_CERT, O_TLS_KEY, O_HELP };

/* One option (getopt_long's code c, its value in optarg) into o.  -1 to
 * go on, else the exit code. */
static int agent_option(int c, char **argv, struct agent_opts *o)
{
    struct agent_config *cfg = &o->cfg;
    switch (c) {
    case O_BACKEND:
        if (strcmp(optarg, "sim") && strcmp(optarg, "nvml"))
            return cli_usage_error(CMD, "--backend %s: want sim or nvml", optarg);
        cfg->backend = optarg;
        break;
    case O_GPUS:
        if (cli_parse_double(CMD, "--gpus", optarg, 1, AGENT_MAX_GPUS, &o->gpus))
            return PFLEX_EXIT_BAD_INPUT;
        if (o->gpus != (unsigned)o->gpus)
            return cli_usage_error(CMD, "--gpus %s: a whole number", optarg);
        cfg->gpus = (unsigned)o->gpus;
        o->gpus_given = 1;
        break;
    case O_SIM_JOB: cfg->sim_job = optarg; break;
    case O_SIM_LOAD: cfg->sim_load_dir = optarg; break;
    case O_SEED:
        if (cli_parse_double(CMD, "--seed", optarg, 0, 9007199254740992.0, &o->seed))
            return PFLEX_EXIT_BAD_INPUT;
        cfg->seed = (uint64_t)o->seed;
        break;
    case O_SIM_FAIL: {
        unsigned g;
        double s;
        char tail;
        if (sscanf(optarg, "%u@%lf%c", &g, &s, &tail) != 2 || !(s >= 0))
            return cli_usage_error(CMD, "--sim-fail %s: want GPU@SECONDS, e.g. 3@5", optarg);
        cfg->sim_fail_gpu = (int)g;
        cfg->sim_fail_after_s = s;
        break;
    }
    case O_LIB: cfg->nvml_lib = optarg; break;
    case O_HOSTNAME: {
        size_t n = strlen(optarg);
        if (n == 0 || n > 63 || strspn(optarg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789-_.") != n)
            return cli_usage_error(CMD, "--hostname %s: 1 to 63 letters, digits, '-', '_' or '.'",
                                   optarg);
        cfg->hostname = optarg;
        break;
    }
    case O_LISTEN: o->listen = optarg; break;
    case O_TLS_CERT: o->tls_cert = optarg; break;
    case O_TLS_KEY: o->tls_key = optarg; break;
    case O_PORT_FILE: o->port_file = optarg; break;
    case O_TOKEN: cfg->token_file = optarg; break;
    case O_AUTH_READS: cfg->auth_reads = 1; break;
    case O_STATE: cfg->state_dir = optarg; break;
    case O_KEEP: cfg->keep_found = 1; break;
    case O_JOB_MAP: cfg->job_map = optarg; break;
    case O_MAX_LEASE:
        if (cli_parse_double(CMD, "--max-lease", optarg, 1, 31536000, &cfg->max_lease_s))
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case O_INTERVAL:
        if (cli_parse_double(CMD, "--interval", optarg, 0.01, 3600, &cfg->interval_s))
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case O_TPW:
        if (cli_parse_double(CMD, "--throughput-window", optarg, 0.1, 86400, &cfg->tp_window_s))
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case O_MAX_BODY:
        if (cli_parse_double(CMD, "--max-body", optarg, 64, 16777216, &o->max_body))
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case O_TIMEOUT:
        if (cli_parse_double(CMD, "--client-timeout", optarg, 1, 3600, &o->timeout))
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case O_REQ_TIMEOUT:
        if (cli_parse_double(CMD, "--request-timeout", optarg, 0.1, 3600, &o->req_timeout))
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case O_MAX_CONNS:
    case O_MAX_CONNS_IP:
    case O_THREADS: {
        const char *name = c == O_MAX_CONNS ? "--max-conns"
                           : c == O_MAX_CONNS_IP ? "--max-conns-per-ip" : "--threads";
        double *v = c == O_MAX_CONNS ? &o->max_conns : c == O_MAX_CONNS_IP ? &o->max_conns_ip
                                                                        : &o->threads;
        if (cli_parse_double(CMD, name, optarg, 1, c == O_THREADS ? 256 : 65536, v))
            return PFLEX_EXIT_BAD_INPUT;
        if (*v != (unsigned)*v)
            return cli_usage_error(CMD, "%s %s: a whole number", name, optarg);
        break;
    }
    case O_READ_RATE:
        if (parse_rate("--read-rate", optarg, &o->read_rate))
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case O_WRITE_RATE:
        if (parse_rate("--write-rate", optarg, &o->write_rate))
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case O_JSON: agent_log_json = 1; break;
    case O_RESTORE: o->restore_only = 1; break;
    case O_WAIT: o->wait = 1; break;
    case O_AT:
        if (cli_parse_double(CMD, "--at", optarg, 0, 1e11, &o->at))
            return PFLEX_EXIT_BAD_INPUT;
        break;
    case O_LABELS:
        if (strcmp(optarg, "dcgm") && strcmp(optarg, "prometheus"))
            return cli_usage_error(CMD, "--label-style %s: want dcgm or prometheus", optarg);
        cfg->snake_labels = !strcmp(optarg, "prometheus");
        break;
    case 'h':
    case O_HELP: return cli_help(help_text);
    case ':': return cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
    default: return cli_usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
    }
    return -1;
}

/* The options into o, checked, with the environment's defaults.  -1 to
 * go on, else the exit code (--help, a bad option). */
static int agent_options(int argc, char **argv, struct agent_opts *o)
{
    static const struct option longopts[] = {
        {"backend", required_argument, NULL, O_BACKEND},
        {"gpus", required_argument, NULL, O_GPUS},
        {"sim-job", required_argument, NULL, O_SIM_JOB},
        {"seed", required_argument, NULL, O_SEED},
        {"sim-fail", required_argument, NULL, O_SIM_FAIL},
        {"sim-load-dir", required_argument, NULL, O_SIM_LOAD},
        {"nvml-lib", required_argument, NULL, O_LIB},
        {"listen", required_argument, NULL, O_LISTEN},
        {"port-file", required_argument, NULL, O_PORT_FILE},
        {"token-file", required_argument, NULL, O_TOKEN},
        {"auth-reads", no_argument, NULL, O_AUTH_READS},
        {"state-dir", required_argument, NULL, O_STATE},
        {"keep-found-limit", no_argument, NULL, O_KEEP},
        {"job-map", required_argument, NULL, O_JOB_MAP},
        {"max-lease", required_argument, NULL, O_MAX_LEASE},
        {"interval", required_argument, NULL, O_INTERVAL},
        {"throughput-window", required_argument, NULL, O_TPW},
        {"max-body", required_argument, NULL, O_MAX_BODY},
        {"client-timeout", required_argument, NULL, O_TIMEOUT},
        {"request-timeout", required_argument, NULL, O_REQ_TIMEOUT},
        {"max-conns", required_argument, NULL, O_MAX_CONNS},
        {"max-conns-per-ip", required_argument, NULL, O_MAX_CONNS_IP},
        {"threads", required_argument, NULL, O_THREADS},
        {"read-rate", required_argument, NULL, O_READ_RATE},
        {"write-rate", required_argument, NULL, O_WRITE_RATE},
        {"label-style", required_argument, NULL, O_LABELS},
        {"json", no_argument, NULL, O_JSON},
        {"restore-only", no_argument, NULL, O_RESTORE},
        {"wait", no_argument, NULL, O_WAIT},
        {"at", required_argument, NULL, O_AT},
        {"hostname", required_argument, NULL, O_HOSTNAME},
        {"tls-cert", required_argument, NULL, O_TLS_CERT},
        {"tls-key", required_argument, NULL, O_TLS_KEY},
        {"help", no_argument, NULL, O_HELP},
        {0, 0, 0, 0},
    };
    struct agent_config *cfg = &o->cfg;
    *o = (struct agent_opts){
        .cfg = {.gpus = 8, .seed = 1, .max_lease_s = 86400, .interval_s = 1,
                .tp_window_s = 30, .sim_fail_gpu = -1},
        .listen = "127.0.0.1:9410", .gpus = 8, .seed = 1, .max_body = 65536, .timeout = 10,
        .read_rate = 100, .write_rate = 20, .req_timeout = 5, .max_conns = 64,
        .max_conns_ip = 16, .threads = 4,
    };
    int c = cli_config_load(CMD, "agent", longopts, &argc, &argv, &o->conf);
    if (c >= 0)
        return c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1)
        if ((c = agent_option(c, argv, o)) >= 0) {
            if (c)
                cli_config_blame(o->conf, optind);
            return c;
        }
    if (optind < argc)
        return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (!cfg->backend)
        return cli_usage_error(CMD, "--backend sim|nvml is required");
    if (o->gpus_given && strcmp(cfg->backend, "sim"))
        return cli_usage_error(CMD, "--gpus is the sim backend's GPU count; the nvml backend "
                               "owns every GPU NVML sees");
    if ((o->wait || o->at > 0) && !o->restore_only)
        return cli_usage_error(CMD, "--wait and --at go with --restore-only");
    o->loopback = pflex_http_listen_is_loopback(o->listen);
    if (o->loopback < 0)
        return cli_usage_error(CMD, "--listen %s: want ADDR:PORT, e.g. 127.0.0.1:9410", o->listen);
    if ((o->tls_cert || o->tls_key) && !(o->tls_cert && o->tls_key))
        return cli_usage_error(CMD, "--tls-cert and --tls-key go together");
    if (o->tls_cert) {
        pflex_error_t e0;
        if (pflex_http_tls_check(o->tls_cert, o->tls_key, &e0) < 0) {
            cli_error(CMD, "%s", e0.text);
            return PFLEX_EXIT_BAD_INPUT;
        }
    }
    if (!strcmp(cfg->backend, "nvml") && !cfg->nvml_lib) {
        const char *env = getenv("PFLEX_NVML_LIB");
        cfg->nvml_lib = env && *env ? env : PFLEX_NVML_LIB_DEFAULT;
    }
    if (!cfg->state_dir) {
        const char *env = getenv("PFLEX_STATE_DIR");
        cfg->state_dir = env && *env ? env : PFLEX_GUARD_DIR_DEFAULT;
    }
    if (cli_config_print_wanted(o->conf))
        return cli_config_print(o->conf, help_text, stdout);
    return -1;
}

/* Signals before the first limit can change: every fatal one stops
 * the loop (which restores); SIGPIPE is ignored (a client that goes
 * away is libmicrohttpd's business); SIGHUP reloads. */
static void agent_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    int sigs[16];
    int nsig = pflex_guard_fatal_signals(NULL, sigs);
    for (int s = 0; s < nsig; s++) {
        sa.sa_handler = sigs[s] == SIGPIPE ? SIG_IGN : sigs[s] == SIGHUP ? on_reload : on_stop;
        sigaction(sigs[s], &sa, NULL);
    }
}

/* The HTTP API on o->listen, said in the log and written to --port-file.
 * -1 with *srv set, else the exit code (a is closed then). */
static int agent_serve(struct agent *a, const struct agent_opts *o, pflex_http_server_t **srv)
{
    pflex_error_t err;
    struct pflex_http_limits lim = {
        .max_body = (size_t)o->max_body, .timeout_s = (unsigned)o->timeout,
        .request_timeout_s = o->req_timeout, .max_conns = (unsigned)o->max_conns,
        .per_peer_conns = (unsigned)o->max_conns_ip, .threads = (unsigned)o->threads,
        .log = http_log,
        .read_rate = o->read_rate, .read_burst = 2 * o->read_rate,
        .write_rate = o->write_rate, .write_burst = 2 * o->write_rate,
        .tls_cert_file = o->tls_cert, .tls_key_file = o->tls_key,
    };
    /* Held until a->http is set: the pool may answer at once. */
    pthread_mutex_lock(&a->lock);
    if (pflex_http_server_start(o->listen, &lim, agent_api, a, srv, &err)) {
        pthread_mutex_unlock(&a->lock);
        cli_error(CMD, "%s", err.text);
        agent_close(a, NULL);
        return o->tls_cert ? PFLEX_EXIT_BAD_INPUT : PFLEX_EXIT_INTERNAL;
    }
    a->http = *srv;
    pthread_mutex_unlock(&a->lock);
    unsigned port = pflex_http_server_port(*srv);
    unsigned up = 0;
    for (unsigned i = 0; i < a->n; i++)
        up += a->gpu[i].ok;
    agent_log("%s backend, %u GPU%s (%u answering), state in %s; listening on %s (port %u, %s)%s",
              o->cfg.backend, a->n, a->n == 1 ? "" : "s", up, o->cfg.state_dir, o->listen, port,
              o->tls_cert ? "HTTPS" : "HTTP",
              a->have_token ? "" : "; no --token-file: read-only");
    if (!o->loopback && !a->have_token)
        agent_log("warning: listening beyond loopback with no token: anyone who reaches %s "
                  "reads this node's telemetry", o->listen);
    if (o->port_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", o->port_file, (long)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 || rename(tmp, o->port_file)) {
            cli_error(CMD, "--port-file %s: %s", o->port_file, strerror(errno));
            unlink(tmp);
            pflex_http_server_stop(*srv);
            agent_close(a, NULL);
            return PFLEX_EXIT_INTERNAL;
        }
    }
    return -1;
}

/* systemd (Type=notify): ready once the API listens and every limit
 * is restored or loaded; then a watchdog ping from this loop only,
 * each time it has gone round (a hung or stopped agent goes silent and
 * systemd kills it; ExecStopPost restores).  Serves until a stopping
 * signal or a server error. */
static void agent_loop(struct agent *a, const struct agent_opts *o, pflex_http_server_t *srv)
{
    pflex_error_t err;
    const char *notify = getenv("NOTIFY_SOCKET");
    double watchdog_s = pflex_sd_watchdog_s(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"));
    double pinged = pflex_mono_s();
    char ready[300];
    snprintf(ready, sizeof ready, "READY=1\nSTATUS=serving %u GPU%s on %s (port %u)", a->n,
             a->n == 1 ? "" : "s", o->listen, pflex_http_server_port(srv));
    if (pflex_sd_notify(notify, ready, &err) < 0)
        agent_log("%s", err.text);
    double stuck_said = 0;
    while (!stop_signal) {
        /* Alive means the driver thread comes round too: a call that
         * blocks for good goes silent after 3/4 of the watchdog's time
         * (a slow one, shorter than that, does not get the agent killed). */
        double busy = agent_driver_busy_s(a);
        if (watchdog_s > 0 && pflex_mono_s() - pinged >= watchdog_s / 4
            && busy < watchdog_s * 3 / 4) {
            pinged = pflex_mono_s();
            if (pflex_sd_notify(notify, "WATCHDOG=1", &err) < 0)
                agent_log("%s", err.text);
        }
        if (busy > AGENT_DRIVER_STUCK_S && pflex_mono_s() - stuck_said >= 10) {
            stuck_said = pflex_mono_s();
            agent_log("the GPU driver has not answered for %.1f s: serving the last reading, "
                      "writes answered 503", busy);
        }
        if (pflex_http_server_run(srv, 0.1, &err)) {
            agent_log("%s", err.text);
            break;
        }
        if (reload_signal) {
            reload_signal = 0;
            atomic_store(&a->reload, 1);    /* done by the driver thread, under the lock */
            char *changed = cli_config_changes(o->conf);
            if (changed)
                agent_log("SIGHUP: %s", changed);
            free(changed);
        }
    }
    pflex_sd_notify(notify, "STOPPING=1", NULL);
}

/* Restore the GPUs a stop left held, once each hold ends, without the
 * agent: under systemd a transient timer (systemd-run; a child of the
 * unit would die with its cgroup), else a detached pflex agent
 * --restore-only --wait.  Either holds no lock while it waits, so that an
 * agent started again takes the GPUs over. */
static void arm_restore(const struct agent_opts *o, const struct agent_close_report *r)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        agent_log("cannot arm the restore at the hold's end (%s): run pflex agent --backend "
                  "nvml --restore-only --wait", strerror(errno));
        return;
    }
    exe[n] = '\0';
    char after[32];
    snprintf(after, sizeof after, "--on-active=%.0fs", r->hold_last - pflex_real_s() + 1.5);
    const char *args[24];
    int k = 0;
    int systemd = getenv("INVOCATION_ID") && access("/usr/bin/systemd-run", X_OK) == 0;
    if (systemd) {
        args[k++] = "/usr/bin/systemd-run";
        args[k++] = "--quiet";
        args[k++] = "--collect";
        args[k++] = after;
        args[k++] = "--timer-property=AccuracySec=1s";
    }
    args[k++] = exe;
    args[k++] = "agent";
    args[k++] = "--backend";
    args[k++] = "nvml";
    char at[32];
    snprintf(at, sizeof at, "%.3f", r->hold_first + 0.05);
    args[k++] = "--restore-only";
    args[k++] = "--wait";       /* an agent back by then: leave the GPUs to it, exit 0 */
    if (!systemd) {
        args[k++] = "--at";
        args[k++] = at;
    }
    args[k++] = "--state-dir";
    args[k++] = o->cfg.state_dir;
    args[k++] = "--nvml-lib";
    args[k++] = o->cfg.nvml_lib;
    if (agent_log_json)
        args[k++] = "--json";
    args[k] = NULL;
    pid_t pid = fork();
    if (pid < 0) {
        agent_log("cannot arm the restore at the hold's end: fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        /* detached: its own session, out of the agent's process group */
        if (!systemd) {
            setsid();
            if (fork() != 0)
                _exit(0);
        }
        signal(SIGHUP, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        execv(args[0], (char *const *)args);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (systemd && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        agent_log("systemd-run failed (status %d): nothing restores the held GPUs at the "
                  "hold's end; run pflex agent --backend nvml --restore-only --wait", st);
    else
        agent_log("the restore at the hold's end is armed (%s)", systemd
                  ? "a systemd-run timer" : "pflex agent --restore-only --wait, detached");
}

int cmd_agent(int argc, char **argv)
{
    static struct agent_opts o;
    int rc = agent_options(argc, argv, &o);
    if (rc >= 0)
        return rc;
    agent_signals();
    static struct agent a;
    pflex_error_t err;
    o.cfg.restore_only = o.restore_only;
    struct agent_close_report rep;
    /* --at: no lock is taken before then, so that an agent restarted
     * meanwhile is not refused its GPUs */
    while (o.restore_only && o.at > pflex_real_s() && !stop_signal) {
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
    }
    while (o.restore_only && !stop_signal) {
        /* Opening the guards restored what a dead agent left (and any cap
         * left behind), but holds still in force: say what the limits read
         * now; with --wait, again at the earliest hold's end. */
        rc = agent_open(&a, &o.cfg, &err);
        if (rc == PFLEX_GUARD_BUSY && o.wait) {
            agent_close(&a, NULL);
            agent_log("--restore-only --wait: an agent owns the GPUs again (%s); it restores "
                      "them", err.text);
            return PFLEX_EXIT_OK;
        }
        if (rc) {
            cli_error(CMD, "%s", err.text);
            agent_close(&a, NULL);
            return rc == AGENT_BAD_INPUT ? PFLEX_EXIT_BAD_INPUT : PFLEX_EXIT_INTERNAL;
        }
        agent_close(&a, &rep);
        rc = closing_said(&rep, "--restore-only", o.cfg.state_dir);
        if (!o.wait || !rep.held || stop_signal)
            return rc;
        double nap = rep.hold_first - pflex_real_s() + 0.05;
        while (nap > 0 && !stop_signal) {
            struct timespec ts = {0, 50000000L};
            nanosleep(&ts, NULL);
            nap -= 0.05;
        }
        if (stop_signal)
            return rc;
    }
    if (o.restore_only) {
        agent_log("--restore-only: stopped on signal %d before the holds ended; they stay in %s",
                  (int)stop_signal, o.cfg.state_dir);
        return PFLEX_EXIT_OK;
    }
    if ((rc = agent_open(&a, &o.cfg, &err))) {
        cli_error(CMD, "%s", err.text);
        agent_close(&a, NULL);
        return rc == AGENT_BAD_INPUT ? PFLEX_EXIT_BAD_INPUT : PFLEX_EXIT_INTERNAL;
    }
    agent_render_all(&a);
    pflex_http_server_t *srv;
    if ((rc = agent_serve(&a, &o, &srv)) >= 0)
        return rc;
    if (agent_driver_start(&a, &err)) {
        cli_error(CMD, "%s", err.text);
        pflex_http_server_stop(srv);
        agent_close(&a, &rep);
        return PFLEX_EXIT_INTERNAL;
    }
    agent_loop(&a, &o, srv);
    if (stop_signal)
        agent_log("stopping on signal %d (%s): restoring every GPU%s", (int)stop_signal,
                  strsignal(stop_signal), strcmp(o.cfg.backend, "nvml") ? ""
                  : " but those under an event's lease (held until the event ends)");
    agent_driver_stop(&a);      /* a call in the driver ends first */
    pflex_http_server_stop(srv);
    /* A stop during an event keeps the site's plan: real GPUs under an
     * event's lease stay at its fallback until the event ends (a restart
     * takes them over; else the armed restore puts them back then).  The
     * sim backend's GPUs end with the process. */
    agent_close_holding(&a, stop_signal && !strcmp(o.cfg.backend, "nvml"), &rep);
    if (rep.held)
        arm_restore(&o, &rep);
    return closing_said(&rep, "stopped", o.cfg.state_dir);
}
