/* sweep_nvml.c — pflex sweep --backend nvml: a power-cap sweep on real GPUs.
 *
 * The command: options, help, --list, the dry run's plan, the CSV it
 * writes, and the signals.  The sweep itself is the library's
 * (pflex/hw/hwsweep.h); the limits go through the limit guard (pflex/hw/guard.h):
 * each GPU is locked against a second owner, its original limit is saved
 * durably before the first change, and a limit a dead owner left is
 * restored at start.  The originals are put back at the end, on any error,
 * and on every signal whose default would kill us (SIGPIPE of `| head`,
 * SIGUSR1 of a Slurm time limit, ...): the handler only records the signal,
 * the sweep notices it within one nap, the command restores the limits and
 * re-raises the signal so the caller sees how it ended.  SIGKILL cannot be
 * caught: the next start restores from the saved state.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "pflex/hw/guard.h"
#include "pflex/hw/hwsweep.h"
#include "pflex/hw/nvml.h"
#include "pflex/io/sweep.h"

#define CMD "sweep"
#define MAX_CAPS PFLEX_HWSWEEP_MAX_CAPS

static const char help_text[] =
    "usage: pflex sweep --backend nvml [--gpus LIST] [--caps LIST] [--window S] [--settle S]\n"
    "                   (--throughput-file PATH | --power-only) [--job NAME] [--out FILE]\n"
    "       pflex sweep --backend nvml --list [--json]\n"
    "\n"
    "Sweeps power caps on real NVIDIA GPUs while your training job runs, and writes a\n"
    "sweep CSV (job,gpu,gpus,cap_w,power_w,throughput + telemetry columns) that\n"
    "'pflex pfi' reads.  For each cap it sets the power limit on every chosen GPU,\n"
    "waits --settle seconds, then measures over --window seconds: mean board power\n"
    "per GPU (from the energy counter), clocks, utilisation, PCIe and, on Hopper and\n"
    "newer, GPM metrics (SM, occupancy, tensor and DRAM activity, NVLink).  Values a\n"
    "GPU does not report are left empty.  Setting power limits needs root.\n"
    "\n"
    "Throughput comes from your job, not from pflex: the job appends one line per\n"
    "step (or every few seconds) to a file,\n"
    "    UNIX_TIME TOKENS_TOTAL\n"
    "e.g. '1764690000.25 81920000': the wall-clock time in seconds and the job's\n"
    "cumulative count of tokens (or samples, or any unit; one unit per job).  Fields\n"
    "may be separated by spaces, tabs or a comma; more fields are ignored; lines\n"
    "starting with '#' are comments.  The throughput of a cap is the counter's\n"
    "increase divided by the time between the job's last line before the window\n"
    "and its last line at the window's end, so the job must write at least once per\n"
    "window.  In Python:  print(time.time(), tokens_seen, file=f, flush=True)\n"
    "\n"
    "Each GPU's limit has one owner at a time: a second sweep (or a pflex agent)\n"
    "on the same GPU is refused, naming the holder's pid.  The original limits are\n"
    "saved in --state-dir before the first change and restored at the end, on\n"
    "error, and on any signal that would otherwise kill the sweep (SIGINT, SIGTERM,\n"
    "SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1/2, SIGALRM, SIGXCPU, ...); after SIGKILL or\n"
    "a crash the next start restores them first and says so.  A limit found at\n"
    "start that is not the board's default is reported as a cap left behind, and\n"
    "the default is what gets restored (--keep-found-limit keeps the found one).\n"
    "\n"
    "options:\n"
    "  --backend nvml          this backend\n"
    "  --gpus LIST             GPU indices, e.g. 0,1,2,3 (default: all)\n"
    "  --caps LIST             caps in W, e.g. 700,600,500, or LO:HI:STEP (from HI down);\n"
    "                          default: six caps from the highest to the lowest limit\n"
    "                          the GPUs allow; each must be within every GPU's range\n"
    "  --window S              measurement window per cap, seconds (default 60)\n"
    "  --settle S              wait after setting a cap, seconds (default 15)\n"
    "  --throughput-file PATH  the job's token counter file (format above)\n"
    "  --power-only            no throughput source: measure power and telemetry only\n"
    "                          (the throughput column is then NaN)\n"
    "  --job NAME              job name in the CSV (default 'job')\n"
    "  --out FILE              write the CSV to FILE (default: standard output)\n"
    "  --list                  list GPUs, their power limits and constraints, and exit\n"
    "  --json                  with --list: one JSON document\n"
    "  --dry-run               check everything and print the plan; change nothing\n"
    "  --nvml-lib PATH         NVML library to load (default: $PFLEX_NVML_LIB, else\n"
    "                          libnvidia-ml.so.1 from the loader's search path)\n"
    "  --progress              (a line a cap is always on stderr)\n"
    "  --state-dir DIR         lock and saved-limit files (default: $PFLEX_STATE_DIR,\n"
    "                          else " PFLEX_GUARD_DIR_DEFAULT ")\n"
    "  --keep-found-limit      restore the limit found at start even when it is not the\n"
    "                          board's default\n"
    "  --help                  this text\n"
    "\n"
    "exit: 0 done; 1 NVML or system error (the message names the GPU and NVML's\n"
    "error, or another process owns a GPU's limit); 2 bad usage or input; killed by\n"
    "the signal after restoring on a signal.\n"
    "\n"
    "EXAMPLES\n"
    "  pflex sweep --backend nvml --list\n"
    "  sudo pflex sweep --backend nvml --gpus 0,1 --caps 700,550,400 --window 60 \\\n"
    "       --throughput-file /tmp/job.tokens --job llama8b --out sweep.csv\n"
    "  sudo pflex sweep --backend nvml --power-only --caps 700:200:100 | head -3\n";

struct opts {
    const char *lib, *gpus, *caps, *tp_path, *job, *out, *state_dir;
    double window_s, settle_s;
    int list, json, dry_run, power_only, progress, keep_found;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* ---- option values ------------------------------------------------ */

static int parse_gpus(const char *s, unsigned count, unsigned **idx, unsigned *n)
{
    *idx = calloc(count ? count : 1, sizeof **idx);
    if (!*idx) {
        cli_error(CMD, "out of memory");
        return -1;
    }
    *n = 0;
    if (!s || !strcmp(s, "all")) {
        for (unsigned i = 0; i < count; i++)
            (*idx)[(*n)++] = i;
        return 0;
    }
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || errno || (*end && *end != ',') || *p == '-') {
            cli_usage_error(CMD, "--gpus: '%s' is not a list of GPU indices like 0,1,2", s);
            return -1;
        }
        if (v >= count) {
            cli_usage_error(CMD, "--gpus: GPU %lu does not exist (NVML sees %u GPU%s: 0-%u)", v,
                            count, count == 1 ? "" : "s", count ? count - 1 : 0);
            return -1;
        }
        for (unsigned k = 0; k < *n; k++)
            if ((*idx)[k] == v) {
                cli_usage_error(CMD, "--gpus: GPU %lu is listed twice", v);
                return -1;
            }
        if (*n == count) {
            cli_usage_error(CMD, "--gpus: too many GPUs listed");
            return -1;
        }
        (*idx)[(*n)++] = (unsigned)v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) {
        cli_usage_error(CMD, "--gpus: empty list");
        return -1;
    }
    return 0;
}

/* ---- --list ------------------------------------------------------- */

static int list_devices(pflex_gpu_t *g, unsigned count, const char *lib, int json)
{
    pflex_error_t err;
    struct pflex_nvml_info *info = calloc(count ? count : 1, sizeof *info);
    if (!info) {
        cli_error(CMD, "out of memory");
        return PFLEX_EXIT_INTERNAL;
    }
    for (unsigned i = 0; i < count; i++)
        if (pflex_nvml_info(g, i, &info[i], &err)) {
            cli_error(CMD, "%s", err.text);
            free(info);
            return PFLEX_EXIT_INTERNAL;
        }
    int rc = 0;
    if (json) {
        json_t *doc = json_object(), *devs = json_array();
        json_object_set_new(doc, "library", json_string(lib));
        for (unsigned i = 0; i < count; i++) {
            json_t *d = json_object();
            json_object_set_new(d, "index", json_integer(i));
            json_object_set_new(d, "name", json_string(info[i].name));
            json_object_set_new(d, "uuid", info[i].uuid[0] ? json_string(info[i].uuid)
                                                           : json_null());
            json_object_set_new(d, "limit_w", cli_json_real(info[i].limit_w));
            json_object_set_new(d, "enforced_w", cli_json_real(info[i].enforced_w));
            json_object_set_new(d, "default_w", cli_json_real(info[i].default_w));
            json_object_set_new(d, "min_w", cli_json_real(info[i].min_w));
            json_object_set_new(d, "max_w", cli_json_real(info[i].max_w));
            json_object_set_new(d, "power_w", cli_json_real(info[i].power_w));
            json_object_set_new(d, "gpm", json_boolean(info[i].gpm));
            json_array_append_new(devs, d);
        }
        json_object_set_new(doc, "devices", devs);
        rc = cli_json_print(doc);
    } else {
        printf("%-4s %-24s %-40s %8s %10s %9s %7s %7s %8s %s\n", "GPU", "NAME", "UUID", "LIMIT_W",
               "ENFORCED_W", "DEFAULT_W", "MIN_W", "MAX_W", "POWER_W", "GPM");
        for (unsigned i = 0; i < count; i++)
            printf("%-4u %-24s %-40s %8.1f %10.1f %9.1f %7.1f %7.1f %8.1f %s\n", i, info[i].name,
                   info[i].uuid[0] ? info[i].uuid : "-", info[i].limit_w, info[i].enforced_w,
                   info[i].default_w, info[i].min_w, info[i].max_w, info[i].power_w,
                   info[i].gpm ? "yes" : "no");
        rc = fflush(stdout) == 0 ? 0 : -1;
    }
    free(info);
    if (rc) {
        cli_error(CMD, "writing standard output failed");
        return PFLEX_EXIT_INTERNAL;
    }
    return PFLEX_EXIT_OK;
}

/* ---- the command -------------------------------------------------- */

static int parse_opts(int argc, char **argv, struct opts *o, int *help)
{
    enum { O_BACKEND = 256, O_GPUS, O_CAPS, O_WINDOW, O_SETTLE, O_TP, O_JOB, O_OUT, O_LIST,
           O_JSON, O_DRY, O_POWER_ONLY, O_LIB, O_PROGRESS, O_STATE_DIR, O_KEEP_FOUND, O_HELP };
    static const struct option longopts[] = {
        {"backend", required_argument, NULL, O_BACKEND},
        {"gpus", required_argument, NULL, O_GPUS},
        {"caps", required_argument, NULL, O_CAPS},
        {"window", required_argument, NULL, O_WINDOW},
        {"settle", required_argument, NULL, O_SETTLE},
        {"throughput-file", required_argument, NULL, O_TP},
        {"job", required_argument, NULL, O_JOB},
        {"out", required_argument, NULL, O_OUT},
        {"list", no_argument, NULL, O_LIST},
        {"json", no_argument, NULL, O_JSON},
        {"dry-run", no_argument, NULL, O_DRY},
        {"power-only", no_argument, NULL, O_POWER_ONLY},
        {"nvml-lib", required_argument, NULL, O_LIB},
        {"progress", no_argument, NULL, O_PROGRESS},
        {"state-dir", required_argument, NULL, O_STATE_DIR},
        {"keep-found-limit", no_argument, NULL, O_KEEP_FOUND},
        {"help", no_argument, NULL, O_HELP},
        {0, 0, 0, 0},
    };
    *o = (struct opts){.job = "job", .window_s = 60, .settle_s = 15};
    *help = 0;
    optind = 0;     /* full rescan: `pflex sweep` may have scanned argv already */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case O_BACKEND:
            if (strcmp(optarg, "nvml"))
                return cli_usage_error(CMD, "--backend %s reached the nvml backend", optarg);
            break;
        case O_GPUS: o->gpus = optarg; break;
        case O_CAPS: o->caps = optarg; break;
        case O_WINDOW:
            if (cli_parse_double(CMD, "--window", optarg, 0.001, 86400, &o->window_s))
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_SETTLE:
            if (cli_parse_double(CMD, "--settle", optarg, 0, 86400, &o->settle_s))
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_TP: o->tp_path = optarg; break;
        case O_JOB:
            if (!*optarg)
                return cli_usage_error(CMD, "--job: empty name");
            o->job = optarg;
            break;
        case O_OUT: o->out = optarg; break;
        case O_LIST: o->list = 1; break;
        case O_JSON: o->json = 1; break;
        case O_DRY: o->dry_run = 1; break;
        case O_POWER_ONLY: o->power_only = 1; break;
        case O_LIB: o->lib = optarg; break;
        case O_PROGRESS: o->progress = 1; break;
        case O_STATE_DIR: o->state_dir = optarg; break;
        case O_KEEP_FOUND: o->keep_found = 1; break;
        case 'h':
        case O_HELP: *help = 1; return 0;
        case ':':
            return cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o->json && !o->list)
        return cli_usage_error(CMD, "--json goes with --list; the sweep itself writes CSV");
    if (!o->list && !o->tp_path && !o->power_only)
        return cli_usage_error(CMD, "no throughput source: give --throughput-file PATH, a file "
                               "your job appends 'UNIX_TIME TOKENS_TOTAL' lines to, or "
                               "--power-only to measure power alone");
    if (o->tp_path && o->power_only)
        return cli_usage_error(CMD, "--power-only and --throughput-file exclude each other");
    return 0;
}

static void print_notes(pflex_guard_t *gd)
{
    for (unsigned i = 0; i < pflex_guard_note_count(gd); i++)
        cli_error(CMD, "%s", pflex_guard_note(gd, i));
    pflex_guard_notes_clear(gd);
}

static const char *sig_name(int sig)
{
    static const struct { int sig; const char *name; } names[] = {
        {SIGHUP, "SIGHUP"}, {SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"}, {SIGPIPE, "SIGPIPE"},
        {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
        {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"},
        {SIGPROF, "SIGPROF"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].sig == sig)
            return names[i].name;
    return "a signal";
}

/* Restore, close and report; returns the exit status to use. */
static int finish(pflex_gpu_t *g, pflex_guard_t *gd, int status)
{
    pflex_error_t err;
    int changed = 0;
    for (unsigned i = 0; i < pflex_guard_count(gd); i++)
        changed |= pflex_guard_gpu_at(gd, i)->changed;
    if (changed) {
        if (pflex_guard_restore_all(gd, &err)) {
            cli_error(CMD, "%s", err.text);
            cli_error(CMD, "could not restore every original power limit; check with "
                      "'nvidia-smi -q -d POWER'");
            status = PFLEX_EXIT_INTERNAL;
        } else if (status != PFLEX_EXIT_OK || stop_signal) {
            cli_error(CMD, "original power limits restored");
        }
    }
    print_notes(gd);
    pflex_guard_close(gd);
    pflex_gpu_close(g);
    return status;
}

/* ---- the sweep ---------------------------------------------------- */

/* What one invocation chose and holds. */
struct run {
    struct opts o;
    pflex_gpu_t g;
    unsigned *idx, n;                   /* the chosen GPUs */
    struct pflex_gpu_limits *lim;       /* their limits, in idx order */
    double caps[MAX_CAPS];
    unsigned ncaps;
    char gpu_name[96];                  /* the first GPU's model, for the CSV */
    FILE *out;
    int progress;
    int status;                         /* exit status the event handler chose */
};

/* The GPUs, their limits and the caps from the options, each checked; the
 * throughput file must exist.  0, or the exit status with the message said. */
static int choose(struct run *r, unsigned count)
{
    pflex_error_t err;
    if (parse_gpus(r->o.gpus, count, &r->idx, &r->n))
        return PFLEX_EXIT_BAD_INPUT;
    r->lim = calloc(r->n, sizeof *r->lim);
    if (!r->lim) {
        cli_error(CMD, "out of memory");
        return PFLEX_EXIT_INTERNAL;
    }
    double lo, hi;
    if (pflex_hwsweep_range(&r->g, r->idx, r->n, r->lim, &lo, &hi, &err)) {
        cli_error(CMD, "%s", err.text);
        return PFLEX_EXIT_INTERNAL;
    }
    pflex_gpu_describe(&r->g, r->idx[0], r->gpu_name, sizeof r->gpu_name, &err);
    if (!r->o.caps && lo > hi)
        return cli_usage_error(CMD, "the chosen GPUs have no power limit in common; choose "
                               "--gpus");
    size_t ncaps_given = 0;     /* --caps: the one syntax of every command (common.c) */
    if (!r->o.caps)
        r->ncaps = pflex_hwsweep_default_caps(lo, hi, r->caps);
    else if (cli_parse_caps(CMD, "--caps", r->o.caps, 1, r->caps, MAX_CAPS, &ncaps_given, NULL))
        return PFLEX_EXIT_BAD_INPUT;
    else
        r->ncaps = (unsigned)ncaps_given;
    if (pflex_hwsweep_check_caps(&r->g, r->idx, r->n, r->lim, r->caps, r->ncaps, &err))
        return cli_usage_error(CMD, "--caps: %s", err.text);
    if (r->o.tp_path && access(r->o.tp_path, R_OK) != 0)
        return cli_usage_error(CMD, "--throughput-file %s: %s (start the job first)",
                               r->o.tp_path, strerror(errno));
    return 0;
}

/* --dry-run: what the sweep would do, and what each limit returns to. */
static int print_plan(struct run *r)
{
    pflex_error_t err;
    printf("dry run: %u cap%s on %u GPU%s, %g s settle + %g s window each (about %.0f s)\n",
           r->ncaps, r->ncaps == 1 ? "" : "s", r->n, r->n == 1 ? "" : "s", r->o.settle_s,
           r->o.window_s, r->ncaps * (r->o.settle_s + r->o.window_s));
    for (unsigned k = 0; k < r->n; k++) {
        double now_w = NAN;
        pflex_gpu_get_cap(&r->g, r->idx[k], &now_w, &err);
        char name[96] = "";
        pflex_gpu_describe(&r->g, r->idx[k], name, sizeof name, &err);
        double back_w = pflex_hwsweep_restore_w(now_w, r->lim[k].default_w, r->o.keep_found);
        printf("GPU %u (%s): limit now %g W, range %g-%g W, restored to %g W at the end%s\n",
               r->idx[k], name, now_w, r->lim[k].min_w, r->lim[k].max_w, back_w,
               back_w != now_w ? " (the default: the limit now is taken as a cap left "
                                 "behind)" : "");
    }
    printf("caps (W):");
    for (unsigned c = 0; c < r->ncaps; c++)
        printf(" %g", r->caps[c]);
    printf("\nthroughput: %s\n", r->o.tp_path ? r->o.tp_path : "none (--power-only)");
    return fflush(stdout) == 0 ? PFLEX_EXIT_OK : PFLEX_EXIT_INTERNAL;
}

/* The sweep's events: warnings and progress on stderr, a CSV row per cap. */
static int on_event(void *arg, const struct pflex_hwsweep_event *ev)
{
    struct run *r = arg;
    switch (ev->kind) {
    case PFLEX_HWSWEEP_WARNING:
        cli_error(CMD, "warning: %s", ev->text);
        break;
    case PFLEX_HWSWEEP_CAP_SET:
        if (r->progress)
            fprintf(stderr, "pflex %s: cap %g W (%u/%u): settling %g s, measuring %g s; about %.0f s left\n",
                    CMD, ev->cap_w, ev->cap_no + 1, r->ncaps, r->o.settle_s, r->o.window_s,
                    (r->ncaps - ev->cap_no) * (r->o.settle_s + r->o.window_s));
        break;
    case PFLEX_HWSWEEP_MEASURED:
        if (pflex_sweep_write_row(r->out, 1, r->o.job, r->gpu_name, (int)r->n, ev->cap_w,
                                  ev->power_w, ev->throughput, ev->tm) || fflush(r->out)) {
            cli_error(CMD, "%s: write failed", r->o.out ? r->o.out : "standard output");
            r->status = PFLEX_EXIT_INTERNAL;
            return 1;
        }
        if (r->progress)
            fprintf(stderr, "pflex %s: cap %g W: %.1f W per GPU, throughput %.6g\n", CMD,
                    ev->cap_w, ev->power_w, ev->throughput);
        break;
    }
    return 0;
}

/* Write the header and sweep every cap into r->out.  The exit status. */
static int sweep_to(struct run *r, pflex_guard_t *gd)
{
    if (pflex_sweep_write_header(r->out, 1) || fflush(r->out)) {
        cli_error(CMD, "%s: write failed", r->o.out ? r->o.out : "standard output");
        return PFLEX_EXIT_INTERNAL;
    }
    struct pflex_hwsweep_opts so = {
        .caps = r->caps, .ncaps = r->ncaps, .settle_s = r->o.settle_s,
        .window_s = r->o.window_s, .tokens_path = r->o.tp_path, .stop = &stop_signal,
        .on_event = on_event, .arg = r,
    };
    pflex_error_t err;
    r->status = PFLEX_EXIT_OK;
    int rc = pflex_hwsweep_run(&r->g, gd, &so, &err);
    if (rc == -1 || rc == PFLEX_HWSWEEP_BAD_INPUT)
        cli_error(CMD, "%s", err.text);
    return rc == -1 ? PFLEX_EXIT_INTERNAL
         : rc == PFLEX_HWSWEEP_BAD_INPUT ? PFLEX_EXIT_BAD_INPUT
         : rc == PFLEX_HWSWEEP_HALTED ? r->status : PFLEX_EXIT_OK;
}

/* After the limits are back: die of the signal that stopped us, as the
 * caller expects of a killed process. */
static int die_of_signal(void)
{
    int sig = stop_signal;
    cli_error(CMD, "stopped by %s", sig_name(sig));
    fflush(stderr);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    return 128 + sig;   /* not reached unless the signal is ignored */
}

/* Catch the signals, take the guard, sweep into the output, restore.  From
 * the guard's first change on, every signal that would kill us is caught,
 * and the limits are restored before the signal ends the process. */
static int sweep_guarded(struct run *r)
{
    struct sigaction sa, old[16];
    int sigs[16];
    int nsig = pflex_guard_fatal_signals(NULL, sigs);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;      /* no SA_RESTART: naps end early */
    sigemptyset(&sa.sa_mask);
    for (int s = 0; s < nsig; s++)
        sigaction(sigs[s], &sa, &old[s]);
    if (!r->o.state_dir) {
        const char *env = getenv("PFLEX_STATE_DIR");
        r->o.state_dir = env && *env ? env : PFLEX_GUARD_DIR_DEFAULT;
    }
    struct pflex_guard_opts gopts = {.state_dir = r->o.state_dir, .owner = "sweep",
                                     .keep_found = r->o.keep_found};
    pflex_guard_t *gd = NULL;
    pflex_error_t err;
    if (pflex_guard_open(&r->g, r->idx, r->n, &gopts, &gd, &err)) {
        cli_error(CMD, "%s", err.text);
        return finish(&r->g, NULL, PFLEX_EXIT_INTERNAL);
    }
    print_notes(gd);
    r->out = r->o.out ? fopen(r->o.out, "w") : stdout;
    if (!r->out) {
        cli_error(CMD, "%s: %s", r->o.out, strerror(errno));
        return finish(&r->g, gd, PFLEX_EXIT_INTERNAL);
    }
    r->progress = 1;    /* a line a cap: each takes seconds to minutes */
    int rc = sweep_to(r, gd);
    if (r->out != stdout && fclose(r->out) != 0 && rc == PFLEX_EXIT_OK) {
        cli_error(CMD, "%s: write failed", r->o.out);
        rc = PFLEX_EXIT_INTERNAL;
    }
    rc = finish(&r->g, gd, rc);
    if (stop_signal)
        return die_of_signal();
    for (int s = 0; s < nsig; s++)
        sigaction(sigs[s], &old[s], NULL);
    return rc;
}

int sweep_nvml(int argc, char **argv)
{
    struct run r = {0};
    int help;
    int rc = parse_opts(argc, argv, &r.o, &help);
    if (rc)
        return rc;
    if (help)
        return cli_help(help_text);
    if (!r.o.lib) {
        const char *env = getenv("PFLEX_NVML_LIB");
        r.o.lib = env && *env ? env : PFLEX_NVML_LIB_DEFAULT;
    }
    pflex_error_t err;
    if (pflex_nvml_open(r.o.lib, &r.g, &err)) {
        cli_error(CMD, "%s", err.text);
        return PFLEX_EXIT_INTERNAL;
    }
    unsigned count = 0;
    pflex_gpu_count(&r.g, &count, &err);
    int guarded = 0;    /* sweep_guarded restores and closes the backend */
    if (r.o.list) {
        rc = list_devices(&r.g, count, r.o.lib, r.o.json);
    } else if (count == 0) {
        cli_error(CMD, "NVML (%s) sees no GPU", r.o.lib);
        rc = PFLEX_EXIT_INTERNAL;
    } else if (!(rc = choose(&r, count))) {
        guarded = !r.o.dry_run;
        rc = guarded ? sweep_guarded(&r) : print_plan(&r);
    }
    if (!guarded)
        pflex_gpu_close(&r.g);
    free(r.idx);
    free(r.lim);
    return rc;
}
