/* cmd.c — `pflex controller run|history`: options, the timed loop,
 * signals, and the history query (controller.h, pflex/io/audit.h). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "controller/cmd.h"
#include "cli/config.h"
#include "controller/api.h"
#include "controller/controller.h"
#include "controller/sched.h"
#include "controller/standby.h"
#include "pflex/io/audit.h"
#include "pflex/net/http.h"
#include "pflex/net/openadr.h"
#include "pflex/io/slurm.h"
#include "pflex/io/sweep.h"
#include "pflex/flex/target.h"
#include "lib/util/clock.h"
#include "lib/util/sdnotify.h"

static const char help[] =
"usage: pflex controller run --agent URL [--agent URL ...] [options]\n"
"       pflex controller history --db FILE [--from TIME] [--to TIME] [--job JOB]\n"
"                                [--what TABLE] [--limit N]\n"
"       pflex controller release --db FILE [--job ID] (release --help)\n"
"\n"
"run: the site loop.  Every period it reads each agent (GET /v1/status),\n"
"learns each job's loss curve from what the job does, plans per-GPU caps so\n"
"that the plan's worst-case site power (GPUs of an agent that does not answer\n"
"counted at their maximum limit) is at or under the target once its ramp is\n"
"done, and pushes them with a lease (PUT /v1/caps).  Missing telemetry holds\n"
"or tightens, never loosens; floors are kept or their breach is reported.\n"
"Under a target a cap well over what its GPUs draw is given back (down to the\n"
"draw and two margins of max(10 W, 10 %)) before any cap that binds is cut.\n"
"When the controller stops, the caps stay until their leases expire; during\n"
"an event each then falls back to its share of the target until the event's end.\n"
"\n"
"targets (latest wins; docs/targets.md):\n"
"  --target SPEC        VALUE[,start=TIME][,end=TIME|,for=DUR][,ramp=DUR][,priority=N]\n"
"                       [,confirm=yes], e.g. 700kW,start=+5m,for=2h,ramp=10m  or\n"
"                       75%,ramp=PT15M; VALUE needs its unit (W, kW, MW: 1 W to\n"
"                       1 GW; % or x of the baseline: up to 100 %).  Checked as\n"
"                       the API checks a PUT once the first period has read the\n"
"                       site: one under its floor or a step down faster than\n"
"                       --max-step-w-per-s is not set and the controller exits 2,\n"
"                       unless it has confirm=yes\n"
"  --schedule FILE      a schedule CSV (start, end|duration, target, ramp, ...;\n"
"                       a target without a unit is W there, with a warning)\n"
"  --vtn URL            an OpenADR 3 VTN to poll for events (with the next two)\n"
"  --vtn-client-id ID   OAuth2 client id\n"
"  --vtn-secret-file F  file holding the client secret (mode 0600)\n"
"  --vtn-program ID     follow only this program's events\n"
"  --vtn-every N        poll every N periods (default 1)\n"
"  --ven-name NAME      this site's name at the VTN (reports, randomizeStart)\n"
"  --seed N             seed of the randomizeStart draw (default 1)\n"
"  --vtn-ramp DUR       ramp of each target an event makes (default 0)\n"
"  --vtn-callback URL   subscribe at the VTN with this URL of the API's POST\n"
"                       /v1/openadr/notify (needs --listen): events in force at\n"
"                       once, polling the fallback; port 0: the API's own port\n"
"                       (docs/openadr.md)\n"
"  --vtn-callback-token-file F  the token the VTN must call back with (first\n"
"                       line, mode 0600; default: a random one per run)\n"
"\n"
"site and loop:\n"
"  --agent URL          an agent (repeat for every node)\n"
"  --agents FILE        agents' URLs, one a line ('#' comments; repeatable)\n"
"  --token-file FILE    bearer token for the agents' writes (mode 0600)\n"
"  --ca-file FILE       PEM CA bundle that https:// agents and VTN are checked by\n"
"                       (default: the system's)\n"
"  --prometheus URL     telemetry from this Prometheus server's HTTP API (the\n"
"                       agents' metric names) instead of each agent's status;\n"
"                       the agents are then asked only for their host name and\n"
"                       job map, every --status-every N periods (default 10)\n"
"  --telemetry-max-age S  Prometheus samples stamped more than S seconds from\n"
"                       now are stale: telemetry down, caps held (default: 3\n"
"                       periods, at least 30 s)\n"
"  --meter QUERY        the site's power as the grid's meter sees it, a\n"
"                       Prometheus query of one series (e.g. site_meter_watts):\n"
"                       the GPUs get the target less the rest (meter less their\n"
"                       draw, filtered); a meter stale, missing or NaN falls back\n"
"                       to --other-w, logged (docs/time-to-target.md)\n"
"  --meter-url URL      the Prometheus server of --meter (default: --prometheus)\n"
"  --meter-filter N     the rest is the largest of its last N periods (default\n"
"                       3): a rise taken at once, a fall once it has lasted\n"
"                       N periods (at most 64)\n"
"  --meter-max-age S    a meter reading older than S is stale (default 3 periods)\n"
"  --job-map FILE       the job map CSV (job,name,host,gpu: what 'pflex jobs\n"
"                       --csv' writes) in place of the agents' own maps\n"
"  --period S           control period, seconds (default 5)\n"
"  --http-threads N     threads talking to the agents, each to its share of\n"
"                       them (default: one per 1,000 agents, at most 4 and the\n"
"                       CPUs); --parallel N requests in flight each (default 64)\n"
"  --lease S            lease on each cap, seconds (default 12 periods); each node's\n"
"                       leases are renewed every third of it, its caps sent at once\n"
"                       when they change\n"
"  --other-w W          non-GPU site power counted against the target (default 0)\n"
"  --baseline-w W       site baseline for fraction targets (default: all GPUs\n"
"                       at their maximum limit)\n"
"  --agent-max-w W      worst case of an agent never reached whose GPUs the\n"
"                       job map does not name (default 8000): an assumption,\n"
"                       so the site is infeasible under a target until that\n"
"                       agent answers\n"
"  --floor S            service floor of jobs the jobs file does not name, 0..1\n"
"                       (default 0)\n"
"  --jobs FILE          per-job floor (or tier), weight and prior PFI: a CSV\n"
"                       job,floor|tier,weight,pfi (include/pflex/io/jobpolicy.h)\n"
"  --objective O        throughput (default: the jobs' summed rates, SPEC 2;\n"
"                       their rates must share a unit, tokens/s) or progress\n"
"                       (each job's rate as a fraction of its own, GPU-weighted:\n"
"                       for jobs whose rates are in different units)\n"
"  --settle S           seconds a job's cap must have been seen before its\n"
"                       readings teach the learner (default: one period); set\n"
"                       it to the agents' --throughput-window plus the\n"
"                       telemetry's delay (the Prometheus scrape interval)\n"
"  --max-step-w-per-s R the fastest step down an API target may ask for, W/s,\n"
"                       over its ramp (one period without one); a faster one,\n"
"                       or one under the site's floor (every GPU at its least\n"
"                       limit plus --other-w), is refused (409) unless its\n"
"                       SPEC has confirm=yes or its body \"confirm\": true\n"
"                       (default: 2 % of the site's maximum power per second)\n"
"  --learn-between-events  probe jobs' curves while no target is in force, so\n"
"                       that an event finds them learned.  Off by default: with\n"
"                       no target in force no GPU is capped under its largest\n"
"                       limit (docs/controller-period.md, \"Probes\")\n"
"  --learn-budget P%    with --learn-between-events: what the probes may cost,\n"
"                       as a share of the site's progress over any day (each\n"
"                       probe priced on its job's pessimistic curve x GPUs x\n"
"                       time held; default 0.1%); spent, no probes until the\n"
"                       rolling day frees some\n"
"  --explore X          largest probe below the plan, as a power reduction\n"
"                       (default 0.05; 0: no exploration)\n"
"  --explore-lead S     with --learn-between-events: probe between events only\n"
"                       while a target that cuts the site starts within S\n"
"                       seconds (default 0: always, so an unannounced event\n"
"                       finds the curves learned; with scheduled events, 3600\n"
"                       lets the learning pay for itself)\n"
"  --cap-step-w W       caps are whole multiples of W watts (default 1; the\n"
"                       agents set milliwatts, so down to 0.001)\n"
"  --db FILE            state and audit database (SQLite); a restart resumes;\n"
"                       checked at start (quick_check): a damaged one is\n"
"                       refused (exit 2) unless --db-recover\n"
"  --db-recover         move a damaged --db aside (FILE.damaged-TIME) and start\n"
"                       on a new one (its targets and curves lost: give the\n"
"                       targets again)\n"
"  --periods N          stop after N periods (default: run until SIGTERM)\n"
"  --log FILE           one line per period and per problem ('-': stderr, the\n"
"                       default)\n"
"  --config FILE        read options from FILE's [controller] section (INI; each\n"
"                       key a long option, e.g. agent = URL, once per agent);\n"
"                       flags given too override its keys (docs/install.md)\n"
"  --print-config       print the configuration in force in that format, exit\n"
"                       (SIGHUP rereads the file and logs the keys changed\n"
"                       there: in force after a restart)\n"
"\n"
"scheduler (docs/slurm-levers.md):\n"
"  --scheduler slurm    pause (scontrol suspend) the jobs whose --jobs row\n"
"                       allows it when even every GPU at its least cap leaves\n"
"                       the site over the target, within each job's contract;\n"
"                       resumed on time (needs --db: what is paused is written\n"
"                       there before it is done)\n"
"  --scontrol CMD       Slurm's scontrol (default: scontrol on PATH)\n"
"  --scheduler-timeout S  each scontrol call, seconds (default 5)\n"
"  --pause-idle-w W     a paused job's GPU counted at this draw (default 100)\n"
"\n"
"standby (docs/controller-safety.md#standby):\n"
"  --etcd URL[,URL...]  elect a leader among the controllers given the same\n"
"                       etcd cluster and prefix: only the leader pushes caps\n"
"                       (with its fencing token); the others stand by with its\n"
"                       targets and curves, and one takes over when it dies\n"
"  --etcd-prefix P      the keys' prefix in etcd (default /pflex/site)\n"
"  --name ID            this controller's name in the election (default\n"
"                       HOST:PID)\n"
"\n"
"the controller's API (with --listen):\n"
"  --listen ADDR:PORT   serve GET /v1/status, GET /metrics, PUT and DELETE\n"
"                       /v1/target (port 0: any free port, see --port-file),\n"
"                       GET /healthz (503: no period's caps all confirmed in\n"
"                       3 periods) and GET /readyz (503 also: a push refused\n"
"                       or unanswered, a node never reached, telemetry stale)\n"
"  --port-file FILE     write the port listened on to FILE\n"
"  --api-token-file F   bearer token for PUT/DELETE /v1/target (mode 0600);\n"
"                       without it the API takes no writes\n"
"  --tls-cert FILE      serve the API over HTTPS with this PEM certificate\n"
"  --tls-key FILE       and its PEM private key (mode 0600)\n"
"  PUT /v1/target takes {\"target\": \"SPEC\", \"id\": \"...\"} (SPEC and its\n"
"  bounds as for --target): 401 without the token, 400 malformed or out of\n"
"  range, 409 under the floor or too fast a step, and nothing changes\n"
"\n"
"history: what happened, as JSON, from the database: TABLE is targets,\n"
"periods, caps, readings, observations, curves or notes (default: all);\n"
"TIME as for targets; the newest N rows per table (default 1000).\n"
"\n"
"EXAMPLES\n"
"  pflex controller run --agents agents.txt --token-file agent.token \\\n"
"      --target 75%,start=+5m,for=2h,ramp=10m --db controller.db\n"
"  pflex controller run --agent http://node-01:9410 --agent http://node-02:9410 \\\n"
"      --prometheus http://prometheus:9090 --jobs jobs.csv --listen 127.0.0.1:9420 \\\n"
"      --api-token-file api.token --vtn https://vtn.example/openadr3 \\\n"
"      --vtn-client-id site-1 --vtn-secret-file vtn.secret --vtn-ramp 5m\n"
"  pflex controller run --agent http://node-01:9410 --token-file agent.token \\\n"
"      --learn-between-events --learn-budget 0.2% --explore-lead 3600 \\\n"
"      --schedule events.csv\n"
"  pflex controller run --agents agents.txt --token-file agent.token --period 1 \\\n"
"      --meter 'site_meter_watts{feeder=\"a\"}' --meter-url http://prometheus:9090 \\\n"
"      --other-w 40000 --vtn https://vtn.example/openadr3 --vtn-client-id site-1 \\\n"
"      --vtn-secret-file vtn.secret\n"
"  pflex controller history --db controller.db --from -1h --what periods\n"
"  pflex controller run --agents agents.txt --db controller.db --db-recover\n"
"  pflex controller run --config /etc/pflex/controller.conf --print-config\n"
"\n"
"exit: 0 ok, 1 internal error, 2 bad usage or input.\n";

static volatile sig_atomic_t stop_now, hup_now;
static void on_signal(int sig)
{
    if (sig == SIGHUP)
        hup_now = 1;    /* not a stop: the keys --config's file changed are logged */
    else
        stop_now = 1;
}

static int usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "pflex controller: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see pflex controller --help)\n");
    return 2;
}

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (e == s || *e || errno || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "pflex controller: %s: '%s' is not a number in [%g, %g]\n", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* A power (W, kW, MW; bare: W) or a share (%, or a bare fraction when
 * accept says so) in [lo, hi], by the targets' unit grammar. */
static int parse_qty(const char *opt, const char *s, unsigned accept, double lo, double hi, double *out)
{
    pflex_error_t err;
    if (pflex_quantity_parse_in(s, accept, "value", lo, hi, out, &err) < 0) {
        fprintf(stderr, "pflex controller: %s: %s\n", opt, err.text);
        return -1;
    }
    return 0;
}

/* A share given in percent ("0.5%"), in (0, 100 %], into *out as a
 * fraction: the unit is required, as for targets (0.5 is not 0.5 %). */
static int parse_percent(const char *opt, const char *s, double *out)
{
    return parse_qty(opt, s, PFLEX_QTY_SHARE, 1e-8, 1, out);
}

/* A secret from a file: first line, whitespace trimmed; refused when
 * others may read it. */
static char *read_secret(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        fprintf(stderr, "pflex controller: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (st.st_mode & 077) {
        fprintf(stderr, "pflex controller: %s: readable by others (mode %03o); chmod 600 it\n", path,
                (unsigned)(st.st_mode & 0777));
        return NULL;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "pflex controller: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char buf[4200];
    if (!fgets(buf, sizeof buf, f)) {
        fclose(f);
        fprintf(stderr, "pflex controller: %s: empty\n", path);
        return NULL;
    }
    fclose(f);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    if (!n) {
        fprintf(stderr, "pflex controller: %s: empty\n", path);
        return NULL;
    }
    return strdup(buf);
}

static int add_url(const char ***list, size_t *n, size_t *cap, const char *url)
{
    if (*n == *cap) {
        size_t c2 = *cap ? 2 * *cap : 256;
        const char **v = realloc(*list, c2 * sizeof *v);
        if (!v) {
            fprintf(stderr, "pflex controller: out of memory\n");
            return -1;
        }
        *list = v;
        *cap = c2;
    }
    (*list)[(*n)++] = url;
    return 0;
}

/* The URLs of an agents file onto *list (pointers into *buf, which the
 * caller frees): one a line, blanks and '#' comments skipped. */
static int read_agents(const char *path, char **buf, const char ***list, size_t *n, size_t *cap)
{
    size_t len;
    pflex_error_t err;
    if (pflex_read_all(path, buf, &len, &err) < 0) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return -1;
    }
    if (memchr(*buf, '\0', len)) {
        fprintf(stderr, "pflex controller: %s: not a text file (a NUL byte)\n", path);
        return -1;
    }
    long line = 0;
    for (char *p = *buf, *next; p < *buf + len; p = next) {
        char *e = memchr(p, '\n', (size_t)(*buf + len - p));
        next = e ? e + 1 : *buf + len;
        if (e)
            *e = '\0';
        line++;
        char *h = strchr(p, '#');
        if (h)
            *h = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        size_t m = strlen(p);
        while (m && (p[m - 1] == ' ' || p[m - 1] == '\t' || p[m - 1] == '\r'))
            p[--m] = '\0';
        if (!m)
            continue;
        if ((strncmp(p, "http://", 7) && strncmp(p, "https://", 8)) || strpbrk(p, " \t") || m > 500) {
            fprintf(stderr, "pflex controller: %s:%ld: '%.60s' is not an agent's http:// or https:// URL\n",
                    path, line, p);
            return -1;
        }
        if (add_url(list, n, cap, p) < 0)
            return -1;
    }
    return 0;
}

/* An option that takes a number: its name, range, and where it goes. */
struct num_opt {
    int id;
    const char *name;
    double lo, hi;
    double *dst;
    unsigned qty;               /* PFLEX_QTY_*: a power or a share; 0: a plain number */
};

enum { O_AGENT = 256, O_TOKEN, O_TARGET, O_SCHEDULE, O_VTN, O_VTN_ID, O_VTN_SECRET, O_VTN_PROGRAM,
       O_VTN_EVERY, O_VEN_NAME, O_SEED, O_PERIOD, O_LEASE, O_OTHER, O_BASELINE, O_AGENT_MAX,
       O_FLOOR, O_EXPLORE, O_DB, O_PERIODS, O_LOG, O_JOBS, O_PROM, O_STATUS_EVERY, O_JOB_MAP,
       O_LISTEN, O_PORT_FILE, O_API_TOKEN, O_VTN_RAMP, O_AGENTS, O_OBJECTIVE, O_TLS_CERT, O_TLS_KEY,
       O_CA_FILE, O_HTTP_THREADS, O_PARALLEL, O_SETTLE, O_ETCD, O_ETCD_PREFIX, O_NAME, O_MAX_STEP,
       O_CAP_STEP, O_EXPLORE_LEAD, O_LEARN_BETWEEN, O_LEARN_BUDGET, O_TELE_AGE, O_DB_RECOVER, O_VTN_CALLBACK,
       O_VTN_CB_TOKEN, O_METER, O_METER_URL, O_METER_FILTER, O_METER_AGE, O_SCHEDULER, O_SCONTROL,
       O_SCHED_TIMEOUT, O_PAUSE_IDLE };

static const struct option run_options[] = {
    {"agent", required_argument, NULL, O_AGENT}, {"token-file", required_argument, NULL, O_TOKEN},
    {"target", required_argument, NULL, O_TARGET}, {"schedule", required_argument, NULL, O_SCHEDULE},
    {"vtn", required_argument, NULL, O_VTN}, {"vtn-client-id", required_argument, NULL, O_VTN_ID},
    {"vtn-secret-file", required_argument, NULL, O_VTN_SECRET},
    {"vtn-program", required_argument, NULL, O_VTN_PROGRAM},
    {"vtn-callback", required_argument, NULL, O_VTN_CALLBACK},
    {"vtn-callback-token-file", required_argument, NULL, O_VTN_CB_TOKEN},
    {"vtn-every", required_argument, NULL, O_VTN_EVERY}, {"ven-name", required_argument, NULL, O_VEN_NAME},
    {"seed", required_argument, NULL, O_SEED}, {"period", required_argument, NULL, O_PERIOD},
    {"lease", required_argument, NULL, O_LEASE}, {"other-w", required_argument, NULL, O_OTHER},
    {"baseline-w", required_argument, NULL, O_BASELINE},
    {"agent-max-w", required_argument, NULL, O_AGENT_MAX}, {"floor", required_argument, NULL, O_FLOOR},
    {"explore", required_argument, NULL, O_EXPLORE}, {"db", required_argument, NULL, O_DB},
    {"db-recover", no_argument, NULL, O_DB_RECOVER},
    {"cap-step-w", required_argument, NULL, O_CAP_STEP},
    {"explore-lead", required_argument, NULL, O_EXPLORE_LEAD},
    {"learn-between-events", no_argument, NULL, O_LEARN_BETWEEN},
    {"learn-budget", required_argument, NULL, O_LEARN_BUDGET},
    {"periods", required_argument, NULL, O_PERIODS}, {"log", required_argument, NULL, O_LOG},
    {"jobs", required_argument, NULL, O_JOBS},
    {"prometheus", required_argument, NULL, O_PROM},
    {"meter", required_argument, NULL, O_METER}, {"meter-url", required_argument, NULL, O_METER_URL},
    {"meter-filter", required_argument, NULL, O_METER_FILTER},
    {"meter-max-age", required_argument, NULL, O_METER_AGE},
    {"status-every", required_argument, NULL, O_STATUS_EVERY},
    {"telemetry-max-age", required_argument, NULL, O_TELE_AGE},
    {"job-map", required_argument, NULL, O_JOB_MAP}, {"listen", required_argument, NULL, O_LISTEN},
    {"port-file", required_argument, NULL, O_PORT_FILE},
    {"api-token-file", required_argument, NULL, O_API_TOKEN},
    {"vtn-ramp", required_argument, NULL, O_VTN_RAMP},
    {"agents", required_argument, NULL, O_AGENTS},
    {"objective", required_argument, NULL, O_OBJECTIVE},
    {"tls-cert", required_argument, NULL, O_TLS_CERT},
    {"tls-key", required_argument, NULL, O_TLS_KEY},
    {"ca-file", required_argument, NULL, O_CA_FILE},
    {"http-threads", required_argument, NULL, O_HTTP_THREADS},
    {"parallel", required_argument, NULL, O_PARALLEL},
    {"settle", required_argument, NULL, O_SETTLE},
    {"etcd", required_argument, NULL, O_ETCD},
    {"etcd-prefix", required_argument, NULL, O_ETCD_PREFIX},
    {"name", required_argument, NULL, O_NAME},
    {"max-step-w-per-s", required_argument, NULL, O_MAX_STEP},
    {"scheduler", required_argument, NULL, O_SCHEDULER}, {"scontrol", required_argument, NULL, O_SCONTROL},
    {"scheduler-timeout", required_argument, NULL, O_SCHED_TIMEOUT},
    {"pause-idle-w", required_argument, NULL, O_PAUSE_IDLE},
    {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
};

/* What `controller run` was asked, as given (pointers into argv). */
struct run_opts {
    struct ctl_config cfg;
    const char *agents[256], *targets[64], *agent_files[8];
    size_t nagents, ntargets, nagent_files;
    const char *schedule, *token_file, *vtn, *vtn_id, *vtn_secret, *log_path, *jobs_path, *job_map_path,
               *listen, *port_file, *api_token_file, *vtn_ramp, *tls_cert, *tls_key, *etcd, *etcd_prefix,
               *name, *learn_budget, *vtn_callback, *vtn_cb_token;
    double status_every, periods, seed, every, http_threads, parallel;
    int explore_lead_given;
    int db_recover;
    cli_config_t *conf;                 /* --config FILE, --print-config */
    struct ctl_sched_config sched;      /* --scheduler slurm */
    const char *scheduler;
};

/* What `controller run` opened (run_close ends it all). */
struct run_state {
    double t0;                          /* when it started: targets' "+5m" count from here */
    pflex_target_set_t cli_targets;     /* --target and --schedule, checked before anything starts */
    pflex_target_set_t pending;         /* --target ones not confirmed: put once the first period
                                         * that reads the site has checked them (run_loop) */
    const char **pending_spec;          /* each one as given, for the message */
    const char **urls;                  /* the agents' URLs (into argv and agent_bufs) */
    size_t nurls, curls;
    char *agent_bufs[8];                /* the --agents files' text */
    pflex_job_policies_t pol;
    pflex_jobmap_t *jmap;
    char *token, *secret, *api_token;   /* wiped before they are freed */
    FILE *log;
    ctl_t *ctl;
    pflex_http_server_t *srv;
    struct ctl_api api;
    standby_t *standby;                 /* --etcd */
    ctl_sched_t *sched;                 /* --scheduler */
    char self[4096];                    /* this binary, for the release timers */
    char name[160];
    pthread_t api_thread;               /* serves srv until api_stop */
    int api_on;
    atomic_int api_stop;
};

/* An option that takes a string (or a choice): 0 taken, 1 not one of
 * those, 2 refused (said). */
static int take_text_opt(struct run_opts *o, int c, const char *arg)
{
    switch (c) {
    case O_AGENT:
        if (o->nagents == 256)
            return usage("at most %s agents", "256");
        o->agents[o->nagents++] = arg;
        return 0;
    case O_TARGET:
        if (o->ntargets == 64)
            return usage("at most %s --target options", "64");
        o->targets[o->ntargets++] = arg;
        return 0;
    case O_AGENTS:
        if (o->nagent_files == 8)
            return usage("at most %s --agents files", "8");
        o->agent_files[o->nagent_files++] = arg;
        return 0;
    case O_OBJECTIVE:
        if (strcmp(arg, "throughput") && strcmp(arg, "progress"))
            return usage("--objective %s: want throughput or progress", arg);
        o->cfg.progress = !strcmp(arg, "progress");
        return 0;
    case O_TOKEN: o->token_file = arg; return 0;
    case O_SCHEDULE: o->schedule = arg; return 0;
    case O_VTN: o->vtn = arg; return 0;
    case O_VTN_ID: o->vtn_id = arg; return 0;
    case O_VTN_SECRET: o->vtn_secret = arg; return 0;
    case O_VTN_PROGRAM: o->cfg.oadr.program_id = arg; return 0;
    case O_VTN_CALLBACK: o->vtn_callback = arg; return 0;
    case O_VTN_CB_TOKEN: o->vtn_cb_token = arg; return 0;
    case O_VEN_NAME: o->cfg.oadr.client_name = arg; return 0;
    case O_DB: o->cfg.db_path = arg; return 0;
    case O_DB_RECOVER: o->db_recover = 1; return 0;
    case O_LOG: o->log_path = arg; return 0;
    case O_JOBS: o->jobs_path = arg; return 0;
    case O_PROM: o->cfg.prometheus_url = arg; return 0;
    case O_METER: o->cfg.meter_query = arg; return 0;
    case O_METER_URL: o->cfg.meter_url = arg; return 0;
    case O_JOB_MAP: o->job_map_path = arg; return 0;
    case O_LISTEN: o->listen = arg; return 0;
    case O_PORT_FILE: o->port_file = arg; return 0;
    case O_API_TOKEN: o->api_token_file = arg; return 0;
    case O_VTN_RAMP: o->vtn_ramp = arg; return 0;
    case O_TLS_CERT: o->tls_cert = arg; return 0;
    case O_TLS_KEY: o->tls_key = arg; return 0;
    case O_LEARN_BETWEEN: o->cfg.learn_between = 1; return 0;
    case O_LEARN_BUDGET: o->learn_budget = arg; return 0;
    case O_CA_FILE: o->cfg.ca_file = arg; return 0;
    case O_ETCD: o->etcd = arg; return 0;
    case O_ETCD_PREFIX: o->etcd_prefix = arg; return 0;
    case O_NAME: o->name = arg; return 0;
    case O_SCHEDULER:
        if (strcmp(arg, "slurm"))
            return usage("--scheduler %s: want slurm", arg);
        o->scheduler = arg;
        return 0;
    case O_SCONTROL: o->sched.scontrol = arg; return 0;
    default: return 1;
    }
}

/* An option that takes a number: 0 taken, 2 refused (said). */
static int take_num_opt(struct run_opts *o, int c, const char *arg)
{
    const struct num_opt nums[] = {
        {O_VTN_EVERY, "--vtn-every", 1, 1e6, &o->every, 0},
        {O_SEED, "--seed", 0, 9e15, &o->seed, 0},
        {O_PERIOD, "--period", 0.05, 86400, &o->cfg.period_s, 0},
        {O_LEASE, "--lease", 0.1, 86400, &o->cfg.lease_s, 0},
        {O_OTHER, "--other-w", 0, 1e12, &o->cfg.other_w, PFLEX_QTY_POWER | PFLEX_QTY_BARE_W},
        {O_BASELINE, "--baseline-w", 1, 1e12, &o->cfg.baseline_w, PFLEX_QTY_POWER | PFLEX_QTY_BARE_W},
        {O_AGENT_MAX, "--agent-max-w", 1, 1e9, &o->cfg.agent_max_w, PFLEX_QTY_POWER | PFLEX_QTY_BARE_W},
        {O_FLOOR, "--floor", 0, 1, &o->cfg.floor, PFLEX_QTY_SHARE | PFLEX_QTY_BARE_FRACTION},
        {O_EXPLORE, "--explore", 0, 0.5, &o->cfg.explore_step, PFLEX_QTY_SHARE | PFLEX_QTY_BARE_FRACTION},
        {O_EXPLORE_LEAD, "--explore-lead", 0, 1e7, &o->cfg.explore_lead_s, 0},
        {O_CAP_STEP, "--cap-step-w", 0.001, 50, &o->cfg.cap_step_w, 0},
        {O_PERIODS, "--periods", 0, 1e12, &o->periods, 0},
        {O_STATUS_EVERY, "--status-every", 1, 1e6, &o->status_every, 0},
        {O_TELE_AGE, "--telemetry-max-age", 0.1, 86400, &o->cfg.telemetry_max_age_s, 0},
        {O_METER_FILTER, "--meter-filter", 1, 64, &o->cfg.meter_filter, 0},
        {O_METER_AGE, "--meter-max-age", 0.05, 86400, &o->cfg.meter_max_age_s, 0},
        {O_HTTP_THREADS, "--http-threads", 1, 16, &o->http_threads, 0},
        {O_PARALLEL, "--parallel", 1, 1024, &o->parallel, 0},
        {O_SETTLE, "--settle", 0, 86400, &o->cfg.settle_s, 0},
        {O_MAX_STEP, "--max-step-w-per-s", 0.001, 1e12, &o->cfg.max_step_w_per_s, 0},
        {O_SCHED_TIMEOUT, "--scheduler-timeout", 0.1, 600, &o->sched.timeout_s, 0},
        {O_PAUSE_IDLE, "--pause-idle-w", 0, 1e4, &o->sched.idle_w, PFLEX_QTY_POWER | PFLEX_QTY_BARE_W},
    };
    size_t i = 0;
    while (i < sizeof nums / sizeof *nums && nums[i].id != c)
        i++;
    if (i == sizeof nums / sizeof *nums)
        return usage("%s", "unknown option");
    const struct num_opt *n = &nums[i];
    if (n->qty ? parse_qty(n->name, arg, n->qty, n->lo, n->hi, n->dst) < 0
               : parse_num(n->name, arg, n->lo, n->hi, n->dst) < 0)
        return 2;
    return 0;
}

/* The options that go together, and the numbers into the config: -1 all
 * well, else the exit code (said). */
static int check_run_opts(struct run_opts *o, int argc, char **argv)
{
    struct ctl_config *cfg = &o->cfg;
    if (optind < argc)
        return usage("unexpected argument '%s'", argv[optind]);
    if (!o->nagents && !o->nagent_files)
        return usage("%s", "give at least one --agent URL (or --agents FILE)");
    if (o->vtn && (!o->vtn_id || !o->vtn_secret))
        return usage("%s", "--vtn needs --vtn-client-id and --vtn-secret-file");
    if (o->vtn_callback && (!o->vtn || !o->listen))
        return usage("%s", "--vtn-callback needs --vtn and --listen (the API receives the callbacks)");
    if (o->vtn_callback && strncmp(o->vtn_callback, "http://", 7) && strncmp(o->vtn_callback, "https://", 8))
        return usage("--vtn-callback %s: an http:// or https:// URL", o->vtn_callback);
    if (o->vtn_cb_token && !o->vtn_callback)
        return usage("%s", "--vtn-callback-token-file needs --vtn-callback");
    if (cfg->lease_s > 0 && cfg->lease_s <= cfg->period_s)
        return usage("%s", "--lease must be longer than --period (or caps lapse between periods)");
    if (cfg->prometheus_url && strncmp(cfg->prometheus_url, "http://", 7)
        && strncmp(cfg->prometheus_url, "https://", 8))
        return usage("--prometheus %s: want an http:// or https:// URL", cfg->prometheus_url);
    if (cfg->meter_query && !cfg->meter_url)
        cfg->meter_url = cfg->prometheus_url;
    if ((cfg->meter_url || cfg->meter_filter > 0 || cfg->meter_max_age_s > 0) && !cfg->meter_query)
        return usage("%s", "--meter-url, --meter-filter and --meter-max-age go with --meter");
    if (cfg->meter_query && !cfg->meter_url)
        return usage("%s", "--meter QUERY needs its Prometheus: --meter-url URL (or --prometheus URL)");
    if (cfg->meter_url && strncmp(cfg->meter_url, "http://", 7) && strncmp(cfg->meter_url, "https://", 8))
        return usage("--meter-url %s: want an http:// or https:// URL", cfg->meter_url);
    if ((o->port_file || o->api_token_file || o->tls_cert || o->tls_key) && !o->listen)
        return usage("%s", "--port-file, --api-token-file and --tls-cert/--tls-key go with --listen");
    if (!o->tls_cert != !o->tls_key)
        return usage("%s", "--tls-cert and --tls-key go together");
    if (o->scheduler && !cfg->db_path)
        return usage("%s", "--scheduler needs --db (what is paused is written there first)");
    if ((o->sched.scontrol || o->sched.timeout_s > 0 || o->sched.idle_w > 0) && !o->scheduler)
        return usage("%s", "--scontrol, --scheduler-timeout and --pause-idle-w go with --scheduler");
    if ((o->etcd_prefix || o->name) && !o->etcd)
        return usage("%s", "--etcd-prefix and --name go with --etcd");
    if (o->vtn_ramp) {
        pflex_error_t e0;
        if (pflex_target_parse_duration(o->vtn_ramp, &cfg->oadr.ramp_s, &e0) < 0)
            return usage("--vtn-ramp: %s", e0.text);
        if (!(cfg->oadr.ramp_s <= PFLEX_TARGET_MAX_RAMP_S))
            return usage("--vtn-ramp %s: a ramp is at most a day (1d)", o->vtn_ramp);
    }
    /* the learning's knobs say nothing without it: refused, not ignored */
    if ((o->learn_budget || o->explore_lead_given) && !cfg->learn_between)
        return usage("%s", "--learn-budget and --explore-lead go with --learn-between-events");
    if (o->learn_budget && parse_percent("--learn-budget", o->learn_budget, &cfg->learn_budget) < 0)
        return 2;
    cfg->status_every = (int)o->status_every;
    cfg->http_threads = (unsigned)o->http_threads;
    cfg->parallel = (unsigned)o->parallel;
    cfg->oadr.seed = (uint64_t)o->seed;
    cfg->vtn_every = (int)o->every;
    return -1;
}

/* The command line into *o: -1 to go on, else the exit code (0 for
 * --help; 2 refused, said). */
static int parse_run(int argc, char **argv, struct run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->status_every = 10;
    o->seed = 1;
    o->every = 1;
    o->parallel = 64;
    o->cfg = (struct ctl_config){.period_s = 5, .explore_step = 0.05, .timeout_ms = 2000};
    pflex_oadr_opts_default(&o->cfg.oadr, 0);
    int c = cli_config_load("controller", "controller", run_options, &argc, &argv, &o->conf);
    if (c >= 0)
        return c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", run_options, NULL)) != -1) {
        if (c == 'h') {
            fputs(help, stdout);
            return 0;
        }
        if (c == O_EXPLORE_LEAD)
            o->explore_lead_given = 1;
        int rc = take_text_opt(o, c, optarg);
        if (rc == 1)
            rc = take_num_opt(o, c, optarg);
        if (rc) {
            cli_config_blame(o->conf, optind);
            return rc;
        }
    }
    c = check_run_opts(o, argc, argv);
    if (c < 0 && cli_config_print_wanted(o->conf))
        return cli_config_print(o->conf, help, stdout);
    return c;
}

/* The agents' URLs (--agent, --agents files) into s->urls: 0 or 2. */
static int open_agents(const struct run_opts *o, struct run_state *s)
{
    for (size_t i = 0; i < o->nagents; i++)
        if (add_url(&s->urls, &s->nurls, &s->curls, o->agents[i]) < 0)
            return 2;
    for (size_t i = 0; i < o->nagent_files; i++)
        if (read_agents(o->agent_files[i], &s->agent_bufs[i], &s->urls, &s->nurls, &s->curls) < 0)
            return 2;
    if (!s->nurls) {
        fprintf(stderr, "pflex controller: the --agents files name no agent\n");
        return 2;
    }
    return 0;
}

/* The jobs file, the targets, the schedule and the job map: 0, or the
 * exit code (said). */
static int open_site_files(struct run_opts *o, struct run_state *s)
{
    pflex_error_t err;
    if (o->jobs_path) {
        if (pflex_job_policies_read(o->jobs_path, &s->pol, &err) < 0) {
            fprintf(stderr, "pflex controller: %s\n", err.text);
            return 2;
        }
        o->cfg.policies = &s->pol;
    }
    s->pending_spec = calloc(o->ntargets + 1, sizeof *s->pending_spec);
    if (!s->pending_spec) {
        fprintf(stderr, "pflex controller: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < o->ntargets; i++) {
        struct pflex_target t;
        if (pflex_target_parse(o->targets[i], s->t0, &t, &err) < 0) {
            fprintf(stderr, "pflex controller: --target %s: %s\n", o->targets[i], err.text);
            return 2;
        }
        /* a confirmed one is meant as it is: in force from the start */
        pflex_target_set_t *to = t.confirm ? &s->cli_targets : &s->pending;
        if (!t.confirm)
            s->pending_spec[s->pending.n] = o->targets[i];
        if (pflex_target_set_add(to, &t, &err) < 0) {
            fprintf(stderr, "pflex controller: --target %s: %s\n", o->targets[i], err.text);
            return 2;
        }
    }
    unsigned bare = 0;
    if (o->schedule && pflex_target_schedule_read(o->schedule, s->t0, &s->cli_targets, &bare, &err) < 0) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return 2;
    }
    if (bare)
        fprintf(stderr, "pflex controller: warning: %s:%u: a target without a unit, read as W (write "
                "its unit: W, kW, MW or %%)\n", o->schedule, bare);
    if (o->job_map_path) {
        const struct pflex_jobmap_row *rows;
        long n;
        if (!(s->jmap = pflex_jobmap_create())) {
            fprintf(stderr, "pflex controller: out of memory\n");
            return 1;
        }
        if (pflex_jobmap_csv_read_file(s->jmap, o->job_map_path, &err) < 0
            || (n = pflex_jobmap_rows(s->jmap, &rows, &err)) < 0) {
            fprintf(stderr, "pflex controller: %s\n", err.text);
            return 2;
        }
        o->cfg.job_map = rows;
        o->cfg.job_map_n = (size_t)n;
    }
    return 0;
}

/* The secrets, the CA bundle, the API's certificate and the log: 0 or 2
 * (said). */
static int open_secrets_and_log(struct run_opts *o, struct run_state *s)
{
    pflex_error_t err;
    if (o->token_file && !(s->token = read_secret(o->token_file)))
        return 2;
    if (o->api_token_file && !(s->api_token = read_secret(o->api_token_file)))
        return 2;
    if (o->vtn_secret && !(s->secret = read_secret(o->vtn_secret)))
        return 2;
    if (o->cfg.ca_file && access(o->cfg.ca_file, R_OK) < 0) {
        fprintf(stderr, "pflex controller: --ca-file %s: %s\n", o->cfg.ca_file, strerror(errno));
        return 2;
    }
    if (o->tls_cert && pflex_http_tls_check(o->tls_cert, o->tls_key, &err) < 0) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return 2;
    }
    if (o->log_path && strcmp(o->log_path, "-")) {
        FILE *f = fopen(o->log_path, "a");
        if (!f) {
            fprintf(stderr, "pflex controller: %s: %s\n", o->log_path, strerror(errno));
            return 2;
        }
        s->log = f;
    }
    o->cfg.log = s->log;
    o->cfg.nagents = s->nurls;
    o->cfg.agent_urls = s->urls;
    o->cfg.agent_token = s->token;
    return 0;
}

/* The database checked before it is used (docs/controller-safety.md, "The
 * database"): a damaged one is refused, or with --db-recover moved aside
 * for a new one. */
static int check_db(const struct run_opts *o, struct run_state *s)
{
    const char *db = o->cfg.db_path;
    struct stat st;
    if (!strcmp(db, ":memory:") || !db[0] || (stat(db, &st) < 0 && errno == ENOENT))
        return 0;
    char why[512], aside[4300];
    pflex_error_t err;
    int rc = pflex_audit_check(db, why, sizeof why, &err);
    if (rc < 0) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return -1;
    }
    if (rc == 0)
        return 0;
    if (!o->db_recover) {
        fprintf(stderr, "pflex controller: %s: the database is damaged (%s); --db-recover moves it aside "
                "and starts on a new one (its targets and curves lost)\n", db, why);
        return -1;
    }
    if (pflex_audit_set_aside(db, pflex_real_s(), aside, sizeof aside, &err) < 0) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return -1;
    }
    fprintf(stderr, "pflex controller: WARNING: %s was damaged (%s): moved to %s; starting on a new "
            "database, its targets and curves lost\n", db, why, aside);
    ctl_log_to(s->log, "WARNING: %s was damaged (%s): moved to %s; starting on a new database, "
               "its targets and curves lost", db, why, aside);
    return 0;
}

/* The VEN, the controller, its resumed state and the command line's
 * targets: 0, or the exit code (said). */
static int open_controller(struct run_opts *o, struct run_state *s)
{
    pflex_error_t err;
    if (o->vtn) {
        /* polled on its own thread: a poll never delays a period, and
         * ends within two polls' time (1 to 5 s) */
        double every_s = (o->every > 0 ? o->every : 1) * o->cfg.period_s;
        long vtn_ms = (long)(2000 * every_s);
        vtn_ms = vtn_ms < 1000 ? 1000 : vtn_ms > 5000 ? 5000 : vtn_ms;
        struct pflex_ven_config vc = {.url = o->vtn, .client_id = o->vtn_id, .client_secret = s->secret,
                                      .timeout_ms = vtn_ms, .ca_file = o->cfg.ca_file};
        if (pflex_ven_create(&vc, &o->cfg.ven, &err) < 0) {
            fprintf(stderr, "pflex controller: %s\n", err.text);
            return 2;
        }
    }
    if (o->etcd) {
        /* the election starts now: a leader found in etcd is followed from
         * the first period on */
        if (o->name)
            snprintf(s->name, sizeof s->name, "%s", o->name);
        else {
            char host[128] = "controller";
            gethostname(host, sizeof host - 1);
            snprintf(s->name, sizeof s->name, "%s:%ld", host, (long)getpid());
        }
        struct standby_config sc = {.endpoints = o->etcd, .prefix = o->etcd_prefix, .name = s->name,
                                    .period_s = o->cfg.period_s > 0 ? o->cfg.period_s : 5,
                                    .ca_file = o->cfg.ca_file, .log = s->log};
        if (standby_create(&sc, &s->standby, &err) < 0) {
            fprintf(stderr, "pflex controller: --etcd: %s\n", err.text);
            return 2;
        }
        o->cfg.may_push = standby_may_push;
        o->cfg.fenced = standby_fenced;
        o->cfg.lead_ud = s->standby;
    }
    if (o->cfg.db_path && check_db(o, s) < 0)
        return 2;
    if (o->scheduler) {
        o->sched.db_path = o->cfg.db_path;
        o->sched.log = s->log;
        /* a timer per pause resumes it with no controller, where systemd runs */
        ssize_t n = readlink("/proc/self/exe", s->self, sizeof s->self - 1);
        if (n > 0 && !access("/run/systemd/system", F_OK)) {
            s->self[n] = '\0';
            o->sched.self = s->self;
            o->sched.systemd_run = "systemd-run";
        }
        if (ctl_sched_create(&o->sched, &s->sched, &err) < 0) {
            fprintf(stderr, "pflex controller: --scheduler: %s\n", err.text);
            return 2;
        }
        o->cfg.sched = s->sched;
    }
    if (ctl_create(&o->cfg, &s->ctl, &err) < 0) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return 1;
    }
    size_t resumed = 0;
    if (ctl_resume(s->ctl, s->t0, &resumed, &err) < 0) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return 1;
    }
    if (resumed)
        ctl_log_to(s->log, "resumed %zu targets from %s", resumed, o->cfg.db_path);
    /* each one in the audit before it is in force */
    for (size_t i = 0; i < s->cli_targets.n; i++)
        if (ctl_target_put(s->ctl, &s->cli_targets.t[i], s->t0, &err) < 0) {
            fprintf(stderr, "pflex controller: %s\n", err.text);
            return 1;
        }
    if (s->pending.n)
        ctl_log_to(s->log, "%zu --target not confirmed: set once a period has read the site and the "
                   "API's check (floor, ramp rate) takes it", s->pending.n);
    return 0;
}

/* The controller's threads (ctl_start) and the API's, with SIGTERM and
 * SIGINT blocked in them: the main thread takes the signals. */
static sigset_t block_stop_signals(void)
{
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    return old;
}

static int start_controller(struct run_state *s)
{
    pflex_error_t err;
    sigset_t old = block_stop_signals();
    int rc = ctl_start(s->ctl, &err);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc < 0) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return 1;
    }
    return 0;
}

/* The API's thread: serves until api_stop, never waiting on the period. */
static void *api_main(void *arg)
{
    struct run_state *s = arg;
    pflex_error_t err;
    while (!s->api_stop)
        if (pflex_http_server_run(s->srv, 0.2, &err) < 0) {
            ctl_log_to(s->log, "api: %s", err.text);
            struct timespec ts = {0, 200000000};
            nanosleep(&ts, NULL);
        }
    return NULL;
}

static void wipe(char *secret);

/* --vtn-callback URL, its port 0 made the API's own: 0, or 2 (said). */
static int set_callback(const char *url, const char *token_file, unsigned port, ctl_t *ctl)
{
    char u[1024];
    const char *host = strstr(url, "://") + 3, *colon = strchr(host, ':');
    const char *path = strchr(host, '/');
    if (colon && (!path || colon < path) && !strncmp(colon, ":0/", 3))
        snprintf(u, sizeof u, "%.*s:%u%s", (int)(colon - url), url, port, colon + 2);
    else if (colon && (!path || colon < path) && !strcmp(colon, ":0"))
        snprintf(u, sizeof u, "%.*s:%u", (int)(colon - url), url, port);
    else
        snprintf(u, sizeof u, "%s", url);
    char *token = token_file ? read_secret(token_file) : NULL;
    if (token_file && !token)
        return 2;
    pflex_error_t err;
    int rc = ctl_set_vtn_callback(ctl, u, token, &err);
    wipe(token);
    if (rc < 0) {
        fprintf(stderr, "pflex controller: --vtn-callback: %s\n", err.text);
        return 2;
    }
    return 0;
}

/* With --listen, the controller's API, and its port in --port-file: 0 or 1
 * (said). */
static int start_api(const struct run_opts *o, struct run_state *s)
{
    if (!o->listen)
        return 0;
    pflex_error_t err;
    s->api = (struct ctl_api){.ctl = s->ctl, .token = s->api_token, .log = s->log, .standby = s->standby};
    /* a notification carries a whole event: up to 64 KiB, and twice that
     * reaches the handler, to be refused there and logged */
    struct pflex_http_limits lim = {.max_body = o->vtn_callback ? 2 * PFLEX_OADR_MAX_NOTIFICATION : 4096,
                                    .read_rate = 50, .read_burst = 100,
                                    .write_rate = 5, .write_burst = 10,
                                    .tls_cert_file = o->tls_cert, .tls_key_file = o->tls_key};
    if (pflex_http_server_start(o->listen, &lim, ctl_api_handle, &s->api, &s->srv, &err) < 0) {
        fprintf(stderr, "pflex controller: --listen %s: %s\n", o->listen, err.text);
        return 1;
    }
    ctl_log_to(s->log, "listening on %s (port %u, %s)", o->listen, pflex_http_server_port(s->srv),
               o->tls_cert ? "HTTPS" : "HTTP");
    int rc = o->vtn_callback ? set_callback(o->vtn_callback, o->vtn_cb_token, pflex_http_server_port(s->srv), s->ctl)
                             : 0;
    if (rc)
        return rc;
    if (o->port_file) {
        char tmpf[4200];
        snprintf(tmpf, sizeof tmpf, "%s.tmp", o->port_file);
        FILE *pf = fopen(tmpf, "w");
        if (!pf || fprintf(pf, "%u\n", pflex_http_server_port(s->srv)) < 0 || fclose(pf) != 0
            || rename(tmpf, o->port_file) < 0) {
            fprintf(stderr, "pflex controller: %s: %s\n", o->port_file, strerror(errno));
            return 1;
        }
    }
    sigset_t old = block_stop_signals();
    s->api_on = pthread_create(&s->api_thread, NULL, api_main, s) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!s->api_on) {
        fprintf(stderr, "pflex controller: no thread for the API\n");
        return 1;
    }
    return 0;
}

/* systemd (Type=notify, deploy/systemd/pflex-controller.service): READY=1 once
 * the controller runs and its API listens; WATCHDOG=1 from the loop only,
 * while its periods complete (each one that does, and during the wait
 * before the next while the last one completed within two periods);
 * STOPPING=1 on the way out.  A loop that hangs, or whose periods all
 * fail, goes silent and systemd restarts it (the caps hold on their
 * leases; the restart resumes the targets).  A period whose audit write
 * fails still completes (ctl_period). */
struct notify {
    const char *socket;         /* $NOTIFY_SOCKET; NULL: not under systemd */
    double watchdog_s;          /* 0: no watchdog */
    double pinged;              /* monotonic */
    double period_s;
};

static void notify_send(struct run_state *s, const struct notify *n, const char *state)
{
    pflex_error_t err;
    if (pflex_sd_notify(n->socket, state, &err) < 0)
        ctl_log_to(s->log, "%s", err.text);
}

static void notify_alive(struct run_state *s, struct notify *n)
{
    /* fed by the rule /healthz has: a period completed lately, its caps
     * pushed and confirmed (ctl_period_confirmed) */
    double done = ctl_period_completed_mono(s->ctl);
    if (!(pflex_mono_s() - done <= 2 * n->period_s) || !ctl_period_confirmed(s->ctl))
        return;
    if (n->watchdog_s > 0 && pflex_mono_s() - n->pinged >= n->watchdog_s / 4) {
        n->pinged = pflex_mono_s();
        notify_send(s, n, "WATCHDOG=1");
    }
}

/* Until the next period starts, wait seconds (the API and the IO run on
 * their own threads meanwhile), the watchdog fed while alive is true.
 * 1 when a standby has just won (its period is due now): with a standby
 * the wait goes in slices, so that one that has just won starts at once. */
static int wait_until(struct run_state *s, struct notify *n, int alive, double wait)
{
    double end = pflex_mono_s() + wait;
    /* in slices: a standby that has just won, or a target that has just
     * changed or come (ctl_act_due), starts its period at once */
    double slice = s->standby ? 0.05 : 0.02;
    while (!stop_now && (wait = end - pflex_mono_s()) > 0) {
        if ((s->standby && standby_took_over(s->standby)) || ctl_act_due(s->ctl))
            return 1;
        if (n->watchdog_s > 0 && wait > n->watchdog_s / 4)
            wait = n->watchdog_s / 4;
        wait = fmin(wait, slice);
        struct timespec ts = {(time_t)wait, (long)((wait - floor(wait)) * 1e9)};
        if (nanosleep(&ts, NULL) < 0 && errno != EINTR)
            break;
        if (alive)
            notify_alive(s, n);
    }
    return 0;
}

/* The --target ones not confirmed, once a period has read the site (r):
 * each through the API's check of a PUT (ctl_target_check), then in
 * force.  0 (all put, or the site not read yet: they wait), 2 one is
 * refused (said; none put), 1 the audit failed (said). */
static int put_pending(struct run_state *s, const struct ctl_period_result *r)
{
    if (!s->pending.n || !r->gpus)
        return 0;
    double now = pflex_real_s();
    char why[400];
    for (size_t i = 0; i < s->pending.n; i++)
        if (ctl_target_check(s->ctl, &s->pending.t[i], now, why, sizeof why)) {
            fprintf(stderr, "pflex controller: --target %s: %s\n", s->pending_spec[i], why);
            ctl_log_to(s->log, "--target %s refused: %s", s->pending_spec[i], why);
            return 2;
        }
    pflex_error_t err;
    for (size_t i = 0; i < s->pending.n; i++)
        if (ctl_target_put(s->ctl, &s->pending.t[i], now, &err) < 0) {
            fprintf(stderr, "pflex controller: --target %s: %s\n", s->pending_spec[i], err.text);
            return 1;
        }
    pflex_target_set_remove_source(&s->pending, "cli");
    return 0;
}

/* The tests' NTP step: $PFLEX_TEST_CLOCK_FILE, when set, names a file
 * holding seconds added to this process's wall clock, read as each period
 * begins (a missing or unreadable file changes nothing). */
static void test_clock_poll(void)
{
    const char *f = getenv("PFLEX_TEST_CLOCK_FILE");
    FILE *fp = f && f[0] ? fopen(f, "r") : NULL;
    if (!fp)
        return;
    double off;
    if (fscanf(fp, "%lf", &off) == 1 && isfinite(off))
        pflex_clock_set_wall_offset_s(off);
    fclose(fp);
}

/* The periods, until --periods, a signal, or a --target refused (its
 * exit code). */
static int run_loop(const struct run_opts *o, struct run_state *s)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    pflex_error_t err;
    struct notify n = {.socket = getenv("NOTIFY_SOCKET"),
                       .watchdog_s = pflex_sd_watchdog_s(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID")),
                       .pinged = pflex_mono_s(), .period_s = o->cfg.period_s > 0 ? o->cfg.period_s : 5};
    int rc = 0;
    char ready[200];
    snprintf(ready, sizeof ready, "READY=1\nSTATUS=%zu agents, a period of %g s", s->nurls, o->cfg.period_s);
    notify_send(s, &n, ready);
    /* periods run on the monotonic clock: a step of the wall clock moves
     * the targets' instants (ctl_clock_now), never the periods */
    double periods = o->periods, next = pflex_mono_s();
    for (double k = 0; !stop_now && (periods == 0 || k < periods); k++) {
        struct ctl_period_result r;
        test_clock_poll();
        if (s->standby)
            standby_take_state(s->standby, s->ctl);     /* the leader's targets and curves */
        double now = ctl_clock_now(s->ctl, pflex_real_s(), pflex_mono_s());
        int ok = ctl_period(s->ctl, now, &r, &err) == 0;
        if (!ok)
            ctl_log_to(s->log, "period failed: %s", err.text);
        else
            notify_alive(s, &n);
        if (ok && (rc = put_pending(s, &r)))
            break;
        if (s->standby)
            standby_publish(s->standby, s->ctl);
        if (hup_now) {
            hup_now = 0;
            char *changed = cli_config_changes(o->conf);
            ctl_log_to(s->log, "SIGHUP: %s", changed ? changed : "no key of --config's file changed");
            free(changed);
        }
        if (s->standby && standby_took_over(s->standby)) {
            next = pflex_mono_s();      /* just won: its first period as the leader now */
            continue;
        }
        next += o->cfg.period_s;
        double wait = next - pflex_mono_s();
        if (wait < 0) {
            next = pflex_mono_s();     /* late: start the next period now, do not pile up */
            continue;
        }
        if (periods && k + 1 >= periods)
            break;
        if (wait_until(s, &n, ok, wait))
            next = pflex_mono_s();
    }
    notify_send(s, &n, "STOPPING=1");
    if (!rc && s->pending.n)
        ctl_log_to(s->log, "%zu --target never set: no period read the site", s->pending.n);
    ctl_log_to(s->log, "stopping%s; caps stay until their leases expire", stop_now ? " on a signal" : "");
    return rc;
}

static void wipe(char *secret)
{
    if (!secret)
        return;
    memset(secret, 0, strlen(secret));
    free(secret);
}

static void run_close(struct run_opts *o, struct run_state *s)
{
    if (s->api_on) {
        s->api_stop = 1;
        pthread_join(s->api_thread, NULL);
    }
    pflex_http_server_stop(s->srv);
    ctl_sched_destroy(s->sched, s->ctl);    /* a clean stop resumes what it paused */
    standby_destroy(s->standby);        /* a leader resigns: a standby takes over at once */
    ctl_destroy(s->ctl);
    pflex_jobmap_destroy(s->jmap);
    wipe(s->api_token);
    pflex_ven_destroy(o->cfg.ven);
    pflex_target_set_fini(&s->cli_targets);
    pflex_target_set_fini(&s->pending);
    free(s->pending_spec);
    pflex_job_policies_fini(&s->pol);
    wipe(s->token);
    wipe(s->secret);
    if (s->log != stderr)
        fclose(s->log);
    free(s->urls);
    for (size_t i = 0; i < o->nagent_files; i++)
        free(s->agent_bufs[i]);
}

static int run(int argc, char **argv)
{
    struct run_opts o;
    int rc = parse_run(argc, argv, &o);
    if (rc >= 0)
        return rc;
    struct run_state s = {.t0 = pflex_real_s(), .log = stderr};
    pflex_target_set_init(&s.cli_targets);
    pflex_target_set_init(&s.pending);
    rc = open_agents(&o, &s);
    if (!rc)
        rc = open_site_files(&o, &s);
    if (!rc)
        rc = open_secrets_and_log(&o, &s);
    if (!rc)
        rc = open_controller(&o, &s);
    /* with callbacks the API first: the VTN's thread subscribes with its port */
    if (!rc && o.vtn_callback)
        rc = start_api(&o, &s);
    if (!rc)
        rc = start_controller(&s);
    if (!rc && !o.vtn_callback)
        rc = start_api(&o, &s);
    if (!rc)
        rc = run_loop(&o, &s);
    run_close(&o, &s);
    return rc;
}

static int history(int argc, char **argv)
{
    enum { H_DB = 256, H_FROM, H_TO, H_JOB, H_WHAT, H_LIMIT };
    static const struct option opts[] = {
        {"db", required_argument, NULL, H_DB}, {"from", required_argument, NULL, H_FROM},
        {"to", required_argument, NULL, H_TO}, {"job", required_argument, NULL, H_JOB},
        {"what", required_argument, NULL, H_WHAT}, {"limit", required_argument, NULL, H_LIMIT},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    const char *db = NULL;
    struct pflex_audit_query q = {.from_s = -INFINITY, .to_s = INFINITY};
    double now = pflex_real_s(), limit = 0;
    pflex_error_t err;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(help, stdout);
            return 0;
        case H_DB: db = optarg; break;
        case H_FROM:
        case H_TO: {
            double t;
            const char *s = optarg;
            /* "-1h" reads as an hour ago */
            if (s[0] == '-') {
                double d;
                if (pflex_target_parse_duration(s + 1, &d, &err) < 0) {
                    fprintf(stderr, "pflex controller: %s: %s\n", c == H_FROM ? "--from" : "--to", err.text);
                    return 2;
                }
                t = now - d;
            } else if (pflex_target_parse_time(s, now, &t, &err) < 0) {
                fprintf(stderr, "pflex controller: %s: %s\n", c == H_FROM ? "--from" : "--to", err.text);
                return 2;
            }
            if (c == H_FROM)
                q.from_s = t;
            else
                q.to_s = t;
            break;
        }
        case H_JOB: q.job = optarg; break;
        case H_WHAT: q.what = optarg; break;
        case H_LIMIT:
            if (parse_num("--limit", optarg, 1, 1e7, &limit) < 0)
                return 2;
            q.limit = (size_t)limit;
            break;
        default:
            return usage("%s", "unknown option");
        }
    }
    if (optind < argc)
        return usage("unexpected argument '%s'", argv[optind]);
    if (!db)
        return usage("%s", "history needs --db FILE");
    struct stat st;
    if (stat(db, &st) < 0) {
        fprintf(stderr, "pflex controller: %s: %s\n", db, strerror(errno));
        return 2;
    }
    pflex_audit_t *a;
    if (pflex_audit_open(db, &a, &err) < 0) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return 2;
    }
    char *s = pflex_audit_history(a, &q, &err);
    pflex_audit_close(a);
    if (!s) {
        fprintf(stderr, "pflex controller: %s\n", err.text);
        return strstr(err.text, "unknown table") ? 2 : 1;
    }
    int ok = fputs(s, stdout) >= 0 && fputc('\n', stdout) != EOF && fflush(stdout) == 0;
    free(s);
    return ok ? 0 : 1;
}

int controller_command(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(help, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "run"))
        return run(argc - 1, argv + 1);
    if (!strcmp(argv[1], "history"))
        return history(argc - 1, argv + 1);
    if (!strcmp(argv[1], "release"))
        return ctl_release_command(argc - 1, argv + 1);
    return usage("unknown subcommand '%s' (run, history, release)", argv[1]);
}
