/* sweep_nvml.c — pflex sweep --backend nvml: a power-cap sweep on real GPUs.
 *
 * For each cap: set it on every chosen GPU, let the job settle, then sample
 * power and telemetry over a window while reading the job's own token
 * counter, and write one sweep CSV row.  The limits go through the limit
 * guard (pflex/guard.h): each GPU is locked against a second owner, its
 * original limit is saved durably before the first change, and a limit a
 * dead owner left is restored at start.  The originals are put back at the
 * end, on any error, and on every signal whose default would kill us
 * (SIGPIPE of `| head`, SIGUSR1 of a Slurm time limit, ...): the handler
 * only records the signal, the main flow notices it within one nap, restores
 * the limits and re-raises the signal so the caller sees how it ended.
 * SIGKILL cannot be caught: the next start restores from the saved state.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "pflex/guard.h"
#include "pflex/nvml.h"
#include "pflex/sweep.h"
#include "lib/util/clock.h"

#define CMD "sweep"
#define MAX_CAPS 256

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
    "  --progress              progress on stderr even when it is not a terminal\n"
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

/* Sleep until the monotonic time `until`, in slices short enough to notice
 * a signal promptly.  Returns -1 when a signal asks us to stop. */
static int nap_until(double until)
{
    for (;;) {
        if (stop_signal)
            return -1;
        double left = until - pflex_mono_s();
        if (left <= 0)
            return 0;
        if (left > 0.05)
            left = 0.05;
        struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* ---- the job's throughput file ------------------------------------ */

struct tp_mark {
    double t;           /* the job's unix time */
    double tokens;      /* its cumulative counter */
};

/* The last complete line of the job's file.  Returns 0, 1 when the file has
 * no data line yet, or -1 with err (*bad set for malformed content). */
static int tp_last(const char *path, struct tp_mark *m, int *bad, pflex_error_t *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return pflex_error_set(err, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return pflex_error_set(err, "%s: %s", path, strerror(errno));
    }
    /* The tail is enough: only the last complete line matters. */
    char buf[65536];
    off_t from = sb.st_size > (off_t)sizeof buf - 1 ? sb.st_size - (off_t)(sizeof buf - 1) : 0;
    ssize_t got = pread(fd, buf, sizeof buf - 1, from);
    int saved = errno;
    close(fd);
    if (got < 0)
        return pflex_error_set(err, "%s: %s", path, strerror(saved));
    buf[got] = '\0';
    /* Read from the middle of the file: its first line is cut. */
    char *begin = buf;
    if (from > 0) {
        begin = strchr(buf, '\n');
        if (!begin)
            return 1;
        begin++;
    }
    /* Drop an incomplete last line (the job may be writing it now). */
    char *end = strrchr(begin, '\n');
    if (!end)
        return 1;
    *end = '\0';
    for (;;) {
        char *line = strrchr(begin, '\n');
        line = line ? line + 1 : begin;
        while (*line == ' ' || *line == '\t' || *line == '\r')
            line++;
        if (*line && *line != '#') {
            char *p = line, *q;
            double t = strtod(p, &q);
            if (q != p) {
                p = q;
                while (*p == ' ' || *p == '\t' || *p == ',')
                    p++;
                double n = strtod(p, &q);
                if (q != p && (!*q || *q == ' ' || *q == '\t' || *q == ',' || *q == '\r')
                    && isfinite(t) && isfinite(n)) {
                    m->t = t;
                    m->tokens = n;
                    return 0;
                }
            }
            *bad = 1;
            return pflex_error_set(err, "%s: last line '%.60s' is not 'UNIX_TIME TOKENS_TOTAL' "
                                   "(see pflex sweep --help)", path, line);
        }
        if (line == begin)
            return 1;
        line[-1] = '\0';
    }
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

static int parse_caps(const char *s, double lo_w, double hi_w, double *caps, unsigned *n)
{
    *n = 0;
    if (!s) {
        /* Six caps from the highest to the lowest common limit, whole watts. */
        for (int k = 0; k < 6; k++) {
            double c = floor(hi_w - (hi_w - lo_w) * k / 5.0 + 0.5);
            if (c < lo_w)
                c = ceil(lo_w);
            if (c > hi_w)
                c = floor(hi_w);
            if (*n == 0 || c != caps[*n - 1])
                caps[(*n)++] = c;
        }
        return 0;
    }
    double lo, hi, step;
    char tail;
    if (strchr(s, ':')) {
        if (sscanf(s, "%lf:%lf:%lf%c", &lo, &hi, &step, &tail) != 3 || !isfinite(lo)
            || !isfinite(hi) || !(step > 0) || !(lo > 0) || hi < lo) {
            cli_usage_error(CMD, "--caps: '%s' is not LO:HI:STEP with 0 < LO <= HI and STEP > 0",
                            s);
            return -1;
        }
        for (double c = hi; c >= lo - 1e-9; c = hi - step * *n) {
            if (*n == MAX_CAPS) {
                cli_usage_error(CMD, "--caps: more than %d caps", MAX_CAPS);
                return -1;
            }
            caps[(*n)++] = c;
        }
        return 0;
    }
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || (*end && *end != ',') || !isfinite(v) || v <= 0) {
            cli_usage_error(CMD, "--caps: '%s' is not a list of positive watts like 700,600,500",
                            s);
            return -1;
        }
        if (*n == MAX_CAPS) {
            cli_usage_error(CMD, "--caps: more than %d caps", MAX_CAPS);
            return -1;
        }
        caps[(*n)++] = v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) {
        cli_usage_error(CMD, "--caps: empty list");
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

/* ---- one cap ------------------------------------------------------ */

struct measurement {
    double power_w;             /* mean per-GPU board power */
    double throughput;          /* tokens/s, NaN with --power-only */
    double tm[PFLEX_TM_COUNT];  /* means over samples and GPUs, NaN when none */
};

enum { FAIL_SYSTEM = 1, FAIL_INPUT = 2, FAIL_SIGNAL = 3 };

static int measure(pflex_gpu_t *g, const unsigned *idx, unsigned n, const struct opts *o,
                   double cap_set_wall, struct measurement *m, pflex_error_t *err)
{
    double *e0 = calloc(n, sizeof *e0);         /* energy at the window's start, J */
    double *de = calloc(n, sizeof *de);         /* energy over the window, J */
    double *te0 = calloc(n, sizeof *te0);       /* when each counter was read first */
    double *dt = calloc(n, sizeof *dt);         /* ... and the time to its last read */
    double *psum = calloc(n, sizeof *psum);
    unsigned *pcount = calloc(n, sizeof *pcount);
    double tsum[PFLEX_TM_COUNT] = {0};
    unsigned tcount[PFLEX_TM_COUNT] = {0};
    int fail = 0, bad = 0;
    struct tp_mark start = {NAN, NAN}, stop = {NAN, NAN};
    if (!e0 || !de || !te0 || !dt || !psum || !pcount) {
        pflex_error_set(err, "out of memory");
        fail = FAIL_SYSTEM;
        goto out;
    }
    if (o->tp_path) {
        int r = tp_last(o->tp_path, &start, &bad, err);
        if (r < 0) {
            fail = bad ? FAIL_INPUT : FAIL_SYSTEM;
            goto out;
        }
        if (r == 0 && start.t < cap_set_wall - 1e-3)
            fprintf(stderr, "pflex %s: warning: the job's last line before the window is from "
                    "%.1f s before the cap was set; a longer --settle avoids mixing caps\n",
                    CMD, cap_set_wall - start.t);
    }
    /* Readings every tenth of the window (10 ms to 1 s apart); the first
     * one also primes the energy counter and the GPM interval. */
    double period = o->window_s / 10;
    period = period < 0.01 ? 0.01 : period > 1.0 ? 1.0 : period;
    double t_end = pflex_mono_s() + o->window_s;
    for (int first = 1;; first = 0) {
        double now = pflex_mono_s();
        int last = now >= t_end;
        for (unsigned k = 0; k < n; k++) {
            struct pflex_gpu_sample s;
            /* Each GPU's own read times: reading several GPUs takes time
             * that must not count against one of them. */
            double t = pflex_mono_s();
            if (pflex_gpu_sample(g, idx[k], &s, err)) {
                fail = FAIL_SYSTEM;
                goto out;
            }
            if (first) {
                e0[k] = s.energy_j;
                te0[k] = t;
            }
            if (last) {
                de[k] = s.energy_j - e0[k];     /* NaN without a counter */
                dt[k] = t - te0[k];
            }
            if (isfinite(s.power_w)) {
                psum[k] += s.power_w;
                pcount[k]++;
            }
            for (int f = 0; f < PFLEX_TM_COUNT; f++)
                if (isfinite(s.tm[f])) {
                    tsum[f] += s.tm[f];
                    tcount[f]++;
                }
        }
        if (last)
            break;
        if (nap_until(now + period < t_end ? now + period : t_end)) {
            fail = FAIL_SIGNAL;
            goto out;
        }
    }
    /* Per-GPU power: energy over time where the counter works (it sees
     * every millisecond), else the mean of the readings. */
    double total = 0;
    unsigned have = 0;
    for (unsigned k = 0; k < n; k++) {
        double p = de[k] > 0 && dt[k] > 0 ? de[k] / dt[k]
                 : pcount[k] ? psum[k] / pcount[k] : NAN;
        if (isfinite(p)) {
            total += p;
            have++;
        }
    }
    if (!have) {
        pflex_error_set(err, "GPU %u reports neither power usage nor an energy counter", idx[0]);
        fail = FAIL_SYSTEM;
        goto out;
    }
    m->power_w = total / have;
    for (int f = 0; f < PFLEX_TM_COUNT; f++)
        m->tm[f] = tcount[f] ? tsum[f] / tcount[f] : NAN;
    m->throughput = NAN;
    if (o->tp_path) {
        int r = tp_last(o->tp_path, &stop, &bad, err);
        if (r < 0) {
            fail = bad ? FAIL_INPUT : FAIL_SYSTEM;
            goto out;
        }
        if (r == 1 || isnan(start.t) || !(stop.t > start.t)) {
            pflex_error_set(err, "%s: the job wrote no new line during the %g s window; it must "
                            "append 'UNIX_TIME TOKENS_TOTAL' at least once per window (or use a "
                            "longer --window)", o->tp_path, o->window_s);
            fail = FAIL_INPUT;
            goto out;
        }
        if (stop.tokens < start.tokens) {
            pflex_error_set(err, "%s: the token counter went down (%.17g to %.17g); it must be "
                            "cumulative (did the job restart?)", o->tp_path, start.tokens,
                            stop.tokens);
            fail = FAIL_INPUT;
            goto out;
        }
        m->throughput = (stop.tokens - start.tokens) / (stop.t - start.t);
    }
out:
    free(e0);
    free(de);
    free(te0);
    free(dt);
    free(psum);
    free(pcount);
    return fail;
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

int sweep_nvml(int argc, char **argv)
{
    struct opts o;
    int help;
    int rc = parse_opts(argc, argv, &o, &help);
    if (rc)
        return rc;
    if (help)
        return cli_help(help_text);
    if (!o.lib) {
        const char *env = getenv("PFLEX_NVML_LIB");
        o.lib = env && *env ? env : PFLEX_NVML_LIB_DEFAULT;
    }

    pflex_gpu_t g;
    pflex_error_t err;
    if (pflex_nvml_open(o.lib, &g, &err)) {
        cli_error(CMD, "%s", err.text);
        return PFLEX_EXIT_INTERNAL;
    }
    unsigned count = 0;
    pflex_gpu_count(&g, &count, &err);
    if (o.list) {
        rc = list_devices(&g, count, o.lib, o.json);
        pflex_gpu_close(&g);
        return rc;
    }
    if (count == 0) {
        cli_error(CMD, "NVML (%s) sees no GPU", o.lib);
        pflex_gpu_close(&g);
        return PFLEX_EXIT_INTERNAL;
    }

    unsigned *idx = NULL, n = 0, ncaps = 0;
    double caps[MAX_CAPS];
    char gpu_name[96] = "";
    FILE *out = NULL;
    struct pflex_gpu_limits *lim = NULL;
    pflex_guard_t *gd = NULL;
    rc = PFLEX_EXIT_BAD_INPUT;
    if (parse_gpus(o.gpus, count, &idx, &n))
        goto done;
    lim = calloc(n, sizeof *lim);
    if (!lim) {
        cli_error(CMD, "out of memory");
        rc = PFLEX_EXIT_INTERNAL;
        goto done;
    }
    double lo = 0, hi = INFINITY;
    for (unsigned k = 0; k < n; k++) {
        if (pflex_gpu_limits(&g, idx[k], &lim[k], &err)) {
            cli_error(CMD, "%s", err.text);
            rc = PFLEX_EXIT_INTERNAL;
            goto done;
        }
        lo = lim[k].min_w > lo ? lim[k].min_w : lo;
        hi = lim[k].max_w < hi ? lim[k].max_w : hi;
    }
    pflex_gpu_describe(&g, idx[0], gpu_name, sizeof gpu_name, &err);
    if (!o.caps && lo > hi) {
        cli_usage_error(CMD, "the chosen GPUs have no power limit in common; choose --gpus");
        goto done;
    }
    size_t ncaps_given = 0;     /* --caps: the one syntax of every command (common.c) */
    if (o.caps ? cli_parse_caps(CMD, "--caps", o.caps, 1, caps, MAX_CAPS, &ncaps_given, NULL)
               : parse_caps(NULL, lo, hi, caps, &ncaps))
        goto done;
    if (o.caps)
        ncaps = (unsigned)ncaps_given;
    for (unsigned c = 0; c < ncaps; c++)
        for (unsigned k = 0; k < n; k++)
            if (caps[c] < lim[k].min_w || caps[c] > lim[k].max_w) {
                char name[96] = "";
                pflex_gpu_describe(&g, idx[k], name, sizeof name, &err);
                cli_usage_error(CMD, "--caps: %g W is outside GPU %u (%s) range %g-%g W", caps[c],
                                idx[k], name, lim[k].min_w, lim[k].max_w);
                goto done;
            }
    if (o.tp_path && access(o.tp_path, R_OK) != 0) {
        cli_usage_error(CMD, "--throughput-file %s: %s (start the job first)", o.tp_path,
                        strerror(errno));
        goto done;
    }

    if (o.dry_run) {
        printf("dry run: %u cap%s on %u GPU%s, %g s settle + %g s window each (about %.0f s)\n",
               ncaps, ncaps == 1 ? "" : "s", n, n == 1 ? "" : "s", o.settle_s, o.window_s,
               ncaps * (o.settle_s + o.window_s));
        for (unsigned k = 0; k < n; k++) {
            double now_w = NAN;
            pflex_gpu_get_cap(&g, idx[k], &now_w, &err);
            char name[96] = "";
            pflex_gpu_describe(&g, idx[k], name, sizeof name, &err);
            /* What the guard will restore: the default, unless the limit now
             * is the default or --keep-found-limit keeps it. */
            double back_w = !o.keep_found && isfinite(lim[k].default_w)
                            && fabs(now_w - lim[k].default_w) > 0.5 ? lim[k].default_w : now_w;
            printf("GPU %u (%s): limit now %g W, range %g-%g W, restored to %g W at the end%s\n",
                   idx[k], name, now_w, lim[k].min_w, lim[k].max_w, back_w,
                   back_w != now_w ? " (the default: the limit now is taken as a cap left "
                                     "behind)" : "");
        }
        printf("caps (W):");
        for (unsigned c = 0; c < ncaps; c++)
            printf(" %g", caps[c]);
        printf("\nthroughput: %s\n", o.tp_path ? o.tp_path : "none (--power-only)");
        rc = fflush(stdout) == 0 ? PFLEX_EXIT_OK : PFLEX_EXIT_INTERNAL;
        goto done;
    }

    /* Signals first: from the guard's first change on, every signal that
     * would kill us is caught, and the main flow restores. */
    struct sigaction sa, old[16];
    int sigs[16];
    int nsig = pflex_guard_fatal_signals(NULL, sigs);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;      /* no SA_RESTART: naps end early */
    sigemptyset(&sa.sa_mask);
    for (int s = 0; s < nsig; s++)
        sigaction(sigs[s], &sa, &old[s]);
    if (!o.state_dir) {
        const char *env = getenv("PFLEX_STATE_DIR");
        o.state_dir = env && *env ? env : PFLEX_GUARD_DIR_DEFAULT;
    }
    struct pflex_guard_opts gopts = {.state_dir = o.state_dir, .owner = "sweep",
                                     .keep_found = o.keep_found};
    int grc = pflex_guard_open(&g, idx, n, &gopts, &gd, &err);
    if (grc) {
        cli_error(CMD, "%s", err.text);
        rc = PFLEX_EXIT_INTERNAL;
        goto done;
    }
    print_notes(gd);

    out = o.out ? fopen(o.out, "w") : stdout;
    if (!out) {
        cli_error(CMD, "%s: %s", o.out, strerror(errno));
        rc = PFLEX_EXIT_INTERNAL;
        goto done;
    }
    int progress = cli_progress_wanted(o.progress);
    rc = PFLEX_EXIT_OK;
    if (pflex_sweep_write_header(out, 1) || fflush(out)) {
        cli_error(CMD, "%s: write failed", o.out ? o.out : "standard output");
        rc = PFLEX_EXIT_INTERNAL;
    }
    for (unsigned c = 0; c < ncaps && rc == PFLEX_EXIT_OK && !stop_signal; c++) {
        double set_wall = pflex_real_s();     /* the job's lines after this see the new cap */
        for (unsigned k = 0; k < n && rc == PFLEX_EXIT_OK; k++) {
            double enforced;
            if (pflex_guard_set(gd, idx[k], caps[c], &enforced, &err)) {
                cli_error(CMD, "%s", err.text);
                rc = PFLEX_EXIT_INTERNAL;
            } else if (fabs(enforced - caps[c]) > 0.5) {
                cli_error(CMD, "warning: GPU %u enforces %g W, not the %g W set (another limit "
                          "is lower)", idx[k], enforced, caps[c]);
            }
        }
        if (rc != PFLEX_EXIT_OK)
            break;
        if (progress)
            fprintf(stderr, "pflex %s: cap %g W (%u/%u): settling %g s, measuring %g s\n", CMD,
                    caps[c], c + 1, ncaps, o.settle_s, o.window_s);
        if (nap_until(pflex_mono_s() + o.settle_s))
            break;
        struct measurement m;
        int fail = measure(&g, idx, n, &o, set_wall, &m, &err);
        if (fail == FAIL_SIGNAL)
            break;
        if (fail) {
            cli_error(CMD, "cap %g W: %s", caps[c], err.text);
            rc = fail == FAIL_INPUT ? PFLEX_EXIT_BAD_INPUT : PFLEX_EXIT_INTERNAL;
            break;
        }
        if (pflex_sweep_write_row(out, 1, o.job, gpu_name, (int)n, caps[c], m.power_w,
                                  m.throughput, m.tm) || fflush(out)) {
            cli_error(CMD, "%s: write failed", o.out ? o.out : "standard output");
            rc = PFLEX_EXIT_INTERNAL;
            break;
        }
        if (progress)
            fprintf(stderr, "pflex %s: cap %g W: %.1f W per GPU, throughput %.6g\n", CMD,
                    caps[c], m.power_w, m.throughput);
    }
    if (out != stdout && fclose(out) != 0 && rc == PFLEX_EXIT_OK) {
        cli_error(CMD, "%s: write failed", o.out);
        rc = PFLEX_EXIT_INTERNAL;
    }
    out = NULL;
    rc = finish(&g, gd, rc);
    free(idx);
    free(lim);
    if (stop_signal) {
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
    for (int s = 0; s < nsig; s++)
        sigaction(sigs[s], &old[s], NULL);
    return rc;

done:
    if (out && out != stdout)
        fclose(out);
    free(idx);
    free(lim);
    return finish(&g, gd, rc);
}
