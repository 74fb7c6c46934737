/* fake_nvml.c — a stand-in libnvidia-ml.so.1 for the test suite.
 *
 * It exports the NVML symbols pflex's nvml backend uses and behaves like a
 * small node of GPUs whose state lives in a text file, so that it persists
 * across processes and a test can read what a command left behind:
 *
 *   FAKE_NVML_STATE=PATH   the state file ("key=value" lines); created with
 *                          the defaults below when absent.  Unset: state is
 *                          kept in memory only.
 *
 * Keys: "gpus" (count, default 2); per GPU "gpuN.KEY", or plain "KEY" for
 * every GPU: name, uuid, min_mw, max_mw, default_mw, limit_mw (the limit
 * set now), demand_mw (what the load would draw uncapped), energy_mj and
 * stamp (energy counter at unix time stamp), sm_max_mhz, mem_mhz, gpu_util,
 * mem_util (percent), pcie_tx_kbs, pcie_rx_kbs, gpm (0/1), sm_util,
 * occupancy, tensor, dram, graphics (GPM percent), nvlink_tx_mibs,
 * nvlink_rx_mibs, power (0: no power reading), energy (0: no counter),
 * ignore_sets (the next N limit sets answer NVML_SUCCESS and change
 * nothing, as when another agent or the firmware holds the limit; -1:
 * every set; each ignored set counts one down in the state), pcie_ms
 * (how long nvmlDeviceGetPcieThroughput takes: the real one counts bytes
 * over 20 ms inside the call; default 0), gpm_refresh_ms (GPM's counters
 * refresh this often, 100 ms on real GPUs: metrics between two samples of
 * one refresh period read 0, as the real ones do; default 0, every sample
 * fresh).
 *
 * The fake can also play the training job: with "tokens_file=PATH", it
 * appends "UNIX_TIME TOKENS_TOTAL" lines to PATH (the format pflex sweep
 * reads) whenever GPU 0's limit is set or its power read.  The job makes
 * tokens_rate tokens/s uncapped (default 10000) and slows with GPU 0's SM
 * clock; tokens_total and tokens_stamp hold its counter.  Its throughput
 * thus follows the cap exactly, whatever the load on the test machine.
 *
 * Physics, just enough to be useful: power is the demand, or just under
 * the limit when the limit binds; the SM clock and tensor activity fall
 * with the cube root of the power ratio; energy accumulates the power over
 * wall-clock time.  Setting a limit outside [min_mw, max_mw] returns
 * NVML_ERROR_INVALID_ARGUMENT like the real library.
 *
 *   FAKE_NVML_FAIL=RULE[,RULE...]   inject errors; RULE is
 *       OP[/GPU]:ERROR[:AFTER[:COUNT]]
 *   OP is init, count, handle, name, uuid, constraints, default_limit,
 *   limit, enforced, set_limit, power, energy, clock, util, pcie, gpm or
 *   any; ERROR is an NVML error name without NVML_ERROR_ (NO_PERMISSION,
 *   GPU_IS_LOST, DRIVER_NOT_LOADED, ...).  The rule lets AFTER matching
 *   calls succeed, then fails COUNT calls (default: all that follow).
 *   Calls are counted per process, from nvmlInit_v2, which rereads the rule.
 *   A transient error is a rule with a COUNT: "set_limit:UNKNOWN:1:1" lets
 *   the first set through and fails the second once.
 *
 *   FAKE_NVML_BLOCK=OP[/GPU]:SECONDS:PATH   a driver call that hangs: while
 *       PATH exists, the next call of OP (as above; "any" too) on GPU
 *       removes PATH and sleeps SECONDS before answering.  A test creates
 *       PATH when it wants the hang, and sees it begin when PATH is gone.
 *
 *   FAKE_NVML_RANGE=GPU:MIN_MW:MAX_MW:AFTER   the device's constraints
 *       become [MIN_MW, MAX_MW] (saved in the state) once AFTER limit sets
 *       of this process have succeeded, as after a driver reload or a
 *       change of the board's power supply: a limit set before can then be
 *       outside the range.
 *
 * Several processes may share one state file: a limit set reads, changes
 * and writes the state under an flock() of STATE.lock, so that two
 * processes setting limits at once lose neither change.
 */
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_INSUFFICIENT_SIZE = 7, NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

static const char *const error_names[] = {
    [0] = "SUCCESS", [1] = "UNINITIALIZED", [2] = "INVALID_ARGUMENT", [3] = "NOT_SUPPORTED",
    [4] = "NO_PERMISSION", [5] = "ALREADY_INITIALIZED", [6] = "NOT_FOUND",
    [7] = "INSUFFICIENT_SIZE", [8] = "INSUFFICIENT_POWER", [9] = "DRIVER_NOT_LOADED",
    [10] = "TIMEOUT", [11] = "IRQ_ISSUE", [12] = "LIBRARY_NOT_FOUND", [13] = "FUNCTION_NOT_FOUND",
    [14] = "CORRUPTED_INFOROM", [15] = "GPU_IS_LOST", [16] = "RESET_REQUIRED",
    [17] = "OPERATING_SYSTEM", [18] = "LIB_RM_VERSION_MISMATCH", [19] = "IN_USE", [20] = "MEMORY",
    [21] = "NO_DATA",
};

/* The strings the real nvmlErrorString returns. */
static const char *const error_strings[] = {
    [0] = "Success", [1] = "Uninitialized", [2] = "Invalid Argument", [3] = "Not Supported",
    [4] = "Insufficient Permissions", [5] = "Already Initialized", [6] = "Not Found",
    [7] = "Insufficient Size", [8] = "Insufficient External Power", [9] = "Driver Not Loaded",
    [10] = "Timeout", [11] = "Interrupt request issue", [12] = "NVML Shared Library Not Found",
    [13] = "Function Not Found", [14] = "Corrupted infoROM", [15] = "GPU is lost",
    [16] = "GPU requires restart", [17] = "The operating system has blocked the request.",
    [18] = "RM has detected an NVML/RM version mismatch.", [19] = "In use by another client",
    [20] = "Insufficient Memory", [21] = "No data",
};

#define NERR ((int)(sizeof error_names / sizeof *error_names))
#define MAX_GPUS 16

struct fake_gpu {
    char name[96], uuid[96];
    double min_mw, max_mw, default_mw, limit_mw, demand_mw;
    double energy_mj, stamp;
    double sm_max_mhz, mem_mhz, gpu_util, mem_util, pcie_tx_kbs, pcie_rx_kbs;
    double gpm, sm_util, occupancy, tensor, dram, graphics, nvlink_tx_mibs, nvlink_rx_mibs;
    double power, energy;
    double pcie_ms, gpm_refresh_ms;
    double ignore_sets;     /* sets still to answer success and ignore (-1: all) */
};

struct fake_state {
    unsigned gpus;
    struct fake_gpu gpu[MAX_GPUS];
    /* The training job the fake can also play (see the top of the file). */
    char tokens_file[1024];
    double tokens_rate, tokens_total, tokens_stamp;
};

struct nvmlDevice_st { unsigned index; };
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { struct nvmlGpmSample_st *handle; } nvmlGpmSample_t;
typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct { char *shortName, *longName, *unit; } metricInfo;
} nvmlGpmMetric_t;
typedef struct {
    unsigned int version, numMetrics;
    nvmlGpmSample_t sample1, sample2;
    nvmlGpmMetric_t metrics[333];      /* NVML_GPM_METRIC_MAX */
} nvmlGpmMetricsGet_t;
typedef struct { unsigned int version, isSupportedDevice; } nvmlGpmSupport_t;
struct nvmlGpmSample_st { unsigned index; double t; int taken; };

/* Every exported function is declared here: the build warns about
 * functions without a prototype. */
#define EXPORT __attribute__((visibility("default")))
EXPORT const char *nvmlErrorString(nvmlReturn_t r);
EXPORT nvmlReturn_t nvmlInit_v2(void);
EXPORT nvmlReturn_t nvmlShutdown(void);
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n);
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h);
EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned int len);
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned int len);
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t h, unsigned int *lo,
                                                                 unsigned int *hi);
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t h, unsigned int *mw);
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t h, unsigned int *mw);
EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int *mw);
EXPORT nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t h, unsigned int mw);
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw);
EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj);
EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int *mhz);
EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u);
EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t h, int counter, unsigned int *kbs);
EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t h, nvmlGpmSupport_t *s);
EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s);
EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s);
EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t h, nvmlGpmSample_t s);
EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *m);

/* ---- state file --------------------------------------------------- */

static const struct { const char *key; size_t off; } num_keys[] = {
#define K(k) {#k, offsetof(struct fake_gpu, k)}
    K(min_mw), K(max_mw), K(default_mw), K(limit_mw), K(demand_mw), K(energy_mj), K(stamp),
    K(sm_max_mhz), K(mem_mhz), K(gpu_util), K(mem_util), K(pcie_tx_kbs), K(pcie_rx_kbs),
    K(gpm), K(sm_util), K(occupancy), K(tensor), K(dram), K(graphics), K(nvlink_tx_mibs),
    K(nvlink_rx_mibs), K(power), K(energy), K(pcie_ms), K(gpm_refresh_ms), K(ignore_sets),
#undef K
};

static struct fake_state mem_state;     /* without FAKE_NVML_STATE */
static int mem_state_ready;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void defaults(struct fake_state *st)
{
    memset(st, 0, sizeof *st);
    st->gpus = 2;
    double t = now_s();
    st->tokens_rate = 10000;
    st->tokens_stamp = t;
    for (unsigned i = 0; i < MAX_GPUS; i++) {
        struct fake_gpu *g = &st->gpu[i];
        snprintf(g->name, sizeof g->name, "NVIDIA H200");
        snprintf(g->uuid, sizeof g->uuid, "GPU-fa4e0000-0000-4000-8000-%012u", i);
        g->min_mw = 200000; g->max_mw = 700000; g->default_mw = 700000; g->limit_mw = 700000;
        g->demand_mw = 650000; g->energy_mj = 1e9; g->stamp = t;
        g->sm_max_mhz = 1980; g->mem_mhz = 2619; g->gpu_util = 100; g->mem_util = 45;
        g->pcie_tx_kbs = 2048; g->pcie_rx_kbs = 4096;
        g->gpm = 1; g->sm_util = 92; g->occupancy = 38; g->tensor = 61; g->dram = 47;
        g->graphics = 99; g->nvlink_tx_mibs = 20480; g->nvlink_rx_mibs = 20480;
        g->power = 1; g->energy = 1;
    }
}

static int set_key(struct fake_gpu *g, const char *key, const char *val)
{
    if (!strcmp(key, "name")) {
        snprintf(g->name, sizeof g->name, "%s", val);
        return 0;
    }
    if (!strcmp(key, "uuid")) {
        snprintf(g->uuid, sizeof g->uuid, "%s", val);
        return 0;
    }
    for (size_t k = 0; k < sizeof num_keys / sizeof *num_keys; k++)
        if (!strcmp(key, num_keys[k].key)) {
            *(double *)((char *)g + num_keys[k].off) = strtod(val, NULL);
            return 0;
        }
    return -1;
}

/* Two passes: keys for every GPU first, then "gpuN." keys over them. */
static void parse(struct fake_state *st, char *text)
{
    for (int pass = 0; pass < 2; pass++) {
        char *copy = strdup(text), *save = NULL;
        if (!copy)
            return;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *eq = strchr(line, '=');
            if (line[0] == '#' || !eq)
                continue;
            *eq = '\0';
            const char *key = line, *val = eq + 1;
            unsigned idx;
            int n = 0;
            if (sscanf(key, "gpu%u.%n", &idx, &n) == 1 && n > 0) {
                if (pass == 1 && idx < MAX_GPUS)
                    set_key(&st->gpu[idx], key + n, val);
            } else if (pass == 0) {
                if (!strcmp(key, "gpus")) {
                    st->gpus = (unsigned)strtoul(val, NULL, 10);
                    if (st->gpus > MAX_GPUS)
                        st->gpus = MAX_GPUS;
                } else if (!strcmp(key, "tokens_file")) {
                    snprintf(st->tokens_file, sizeof st->tokens_file, "%s", val);
                } else if (!strcmp(key, "tokens_rate")) {
                    st->tokens_rate = strtod(val, NULL);
                } else if (!strcmp(key, "tokens_total")) {
                    st->tokens_total = strtod(val, NULL);
                } else if (!strcmp(key, "tokens_stamp")) {
                    st->tokens_stamp = strtod(val, NULL);
                } else {
                    for (unsigned i = 0; i < MAX_GPUS; i++)
                        set_key(&st->gpu[i], key, val);
                }
            }
        }
        free(copy);
    }
}

static int save(const struct fake_state *st)
{
    const char *path = getenv("FAKE_NVML_STATE");
    if (!path || !*path) {
        mem_state = *st;
        mem_state_ready = 1;
        return 0;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "gpus=%u\n", st->gpus);
    if (st->tokens_file[0])
        fprintf(f, "tokens_file=%s\n", st->tokens_file);
    fprintf(f, "tokens_rate=%.17g\ntokens_total=%.17g\ntokens_stamp=%.17g\n", st->tokens_rate,
            st->tokens_total, st->tokens_stamp);
    for (unsigned i = 0; i < st->gpus; i++) {
        const struct fake_gpu *g = &st->gpu[i];
        fprintf(f, "gpu%u.name=%s\ngpu%u.uuid=%s\n", i, g->name, i, g->uuid);
        for (size_t k = 0; k < sizeof num_keys / sizeof *num_keys; k++)
            fprintf(f, "gpu%u.%s=%.17g\n", i, num_keys[k].key,
                    *(const double *)((const char *)g + num_keys[k].off));
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        remove(tmp);
        return -1;
    }
    return 0;
}

/* Load the state (creating the file with defaults when it is absent). */
static int load(struct fake_state *st)
{
    const char *path = getenv("FAKE_NVML_STATE");
    if (!path || !*path) {
        if (!mem_state_ready) {
            defaults(&mem_state);
            mem_state_ready = 1;
        }
        *st = mem_state;
        return 0;
    }
    defaults(st);
    FILE *f = fopen(path, "r");
    if (!f)
        return save(st);
    char *text = NULL;
    size_t cap = 0, len = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = (len + got + 1) * 2;
            char *grown = realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                return -1;
            }
            text = grown;
        }
        memcpy(text + len, chunk, got);
        len += got;
    }
    fclose(f);
    /* A file a test wrote may lack the energy stamp: start the counter now
     * and write it down, so that energy accumulates from here on. */
    for (unsigned i = 0; i < MAX_GPUS; i++)
        st->gpu[i].stamp = -1;
    st->tokens_stamp = -1;
    if (text) {
        text[len] = '\0';
        parse(st, text);
        free(text);
    }
    int incomplete = st->tokens_stamp < 0;
    if (incomplete)
        st->tokens_stamp = now_s();
    for (unsigned i = 0; i < MAX_GPUS; i++)
        if (st->gpu[i].stamp < 0) {
            st->gpu[i].stamp = now_s();
            incomplete |= i < st->gpus;
        }
    return incomplete ? save(st) : 0;
}

/* ---- the model ---------------------------------------------------- */

static double power_mw(const struct fake_gpu *g)
{
    return g->demand_mw <= g->limit_mw ? g->demand_mw : 0.99 * g->limit_mw;
}

/* Cube root by Newton's method: the build links this library without
 * libm, and the loader of a test may not carry it either. */
static double cube_root(double x)
{
    double y = x > 1 ? x : 1;
    for (int k = 0; k < 60; k++)
        y -= (y * y * y - x) / (3 * y * y);
    return y;
}

/* Clocks and compute activity fall with the cube root of the power ratio. */
static double slowdown(const struct fake_gpu *g)
{
    return g->demand_mw > 0 ? cube_root(power_mw(g) / g->demand_mw) : 1.0;
}

static double energy_now_mj(const struct fake_gpu *g)
{
    double dt = now_s() - g->stamp;
    return g->energy_mj + power_mw(g) * (dt > 0 ? dt : 0);
}

/* The job runs at tokens_rate uncapped and slows with GPU 0's clock. */
static double tokens_now(const struct fake_state *st)
{
    double dt = now_s() - st->tokens_stamp;
    return st->tokens_total + st->tokens_rate * slowdown(&st->gpu[0]) * (dt > 0 ? dt : 0);
}

/* The job's log line "UNIX_TIME TOKENS_TOTAL", when it has a log. */
static void job_writes(const struct fake_state *st)
{
    if (!st->tokens_file[0])
        return;
    FILE *f = fopen(st->tokens_file, "a");
    if (f) {
        fprintf(f, "%.6f %.3f\n", now_s(), tokens_now(st));
        fclose(f);
    }
}

/* ---- error injection ---------------------------------------------- */

struct rule {
    char op[32];
    int gpu;            /* -1: any */
    nvmlReturn_t err;
    long after, count, seen;
};
static struct rule rules[8];
static int nrules;
static int initialised;

static void read_rules(void)
{
    nrules = 0;
    const char *env = getenv("FAKE_NVML_FAIL");
    if (!env)
        return;
    char *copy = strdup(env), *save = NULL;
    if (!copy)
        return;
    for (char *tok = strtok_r(copy, ",", &save); tok && nrules < 8;
         tok = strtok_r(NULL, ",", &save)) {
        struct rule r = {.gpu = -1, .err = NVML_ERROR_UNKNOWN, .count = -1};
        char errname[64] = "";
        long after = 0, count = -1;
        char *colon = strchr(tok, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *slash = strchr(tok, '/');
        if (slash) {
            *slash = '\0';
            r.gpu = atoi(slash + 1);
        }
        snprintf(r.op, sizeof r.op, "%s", tok);
        int n = sscanf(colon + 1, "%63[A-Z_]:%ld:%ld", errname, &after, &count);
        if (n < 1)
            continue;
        for (int e = 1; e < NERR; e++)
            if (error_names[e] && !strcmp(errname, error_names[e]))
                r.err = e;
        r.after = after;
        r.count = count;
        rules[nrules++] = r;
    }
    free(copy);
}

/* Does an injected error hit this call of op on gpu (-1: not a GPU call)? */
static nvmlReturn_t injected(const char *op, int gpu)
{
    for (int k = 0; k < nrules; k++) {
        struct rule *r = &rules[k];
        if (strcmp(r->op, op) && strcmp(r->op, "any"))
            continue;
        if (r->gpu >= 0 && r->gpu != gpu)
            continue;
        long n = r->seen++;
        if (n >= r->after && (r->count < 0 || n < r->after + r->count))
            return r->err;
    }
    return NVML_SUCCESS;
}

static struct nvmlDevice_st handles[MAX_GPUS];

/* FAKE_NVML_BLOCK: sleep in this call when the rule matches and its file
 * is there; unlink() lets exactly one caller (of any thread) take it. */
static void maybe_block(const char *op, int gpu)
{
    const char *env = getenv("FAKE_NVML_BLOCK");
    if (!env)
        return;
    char rop[32] = "", path[4096] = "";
    int rgpu = -1;
    double secs = 0;
    const char *colon = strchr(env, ':');
    if (!colon || (size_t)(colon - env) >= sizeof rop)
        return;
    memcpy(rop, env, (size_t)(colon - env));
    char *slash = strchr(rop, '/');
    if (slash) {
        *slash = '\0';
        rgpu = atoi(slash + 1);
    }
    if (sscanf(colon + 1, "%lf:%4095s", &secs, path) != 2)
        return;
    if ((strcmp(rop, op) && strcmp(rop, "any")) || (rgpu >= 0 && rgpu != gpu))
        return;
    if (unlink(path) != 0)
        return;
    struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Common entry of every device call: initialised, a valid handle, no
 * injected error; loads the state into *st. */
static nvmlReturn_t enter(const char *op, nvmlDevice_t h, struct fake_state *st,
                          struct fake_gpu **g)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!h || h < handles || h >= handles + MAX_GPUS)
        return NVML_ERROR_INVALID_ARGUMENT;
    maybe_block(op, (int)h->index);
    nvmlReturn_t r = injected(op, (int)h->index);
    if (r != NVML_SUCCESS)
        return r;
    if (load(st) != 0)
        return NVML_ERROR_UNKNOWN;
    if (h->index >= st->gpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    *g = &st->gpu[h->index];
    return NVML_SUCCESS;
}

#define ENTER(op, h) \
    struct fake_state st; \
    struct fake_gpu *g = NULL; \
    nvmlReturn_t rc_ = enter(op, h, &st, &g); \
    if (rc_ != NVML_SUCCESS) \
        return rc_;

/* ---- the API ------------------------------------------------------ */

const char *nvmlErrorString(nvmlReturn_t r)
{
    if (r >= 0 && r < NERR && error_strings[r])
        return error_strings[r];
    return "Unknown Error";
}

nvmlReturn_t nvmlInit_v2(void)
{
    read_rules();
    nvmlReturn_t r = injected("init", -1);
    if (r != NVML_SUCCESS)
        return r;
    struct fake_state st;
    if (load(&st) != 0)
        return NVML_ERROR_UNKNOWN;
    for (unsigned i = 0; i < MAX_GPUS; i++)
        handles[i].index = i;
    initialised++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    initialised--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!n)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = injected("count", -1);
    if (r != NVML_SUCCESS)
        return r;
    struct fake_state st;
    if (load(&st) != 0)
        return NVML_ERROR_UNKNOWN;
    *n = st.gpus;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t r = injected("handle", (int)i);
    if (r != NVML_SUCCESS)
        return r;
    struct fake_state st;
    if (load(&st) != 0)
        return NVML_ERROR_UNKNOWN;
    if (!h || i >= st.gpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    *h = &handles[i];
    return NVML_SUCCESS;
}

static nvmlReturn_t copy_string(char *buf, unsigned len, const char *s)
{
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned int len)
{
    ENTER("name", h)
    return copy_string(buf, len, g->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned int len)
{
    ENTER("uuid", h)
    return copy_string(buf, len, g->uuid);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t h, unsigned int *lo,
                                                          unsigned int *hi)
{
    ENTER("constraints", h)
    if (!lo || !hi)
        return NVML_ERROR_INVALID_ARGUMENT;
    *lo = (unsigned)g->min_mw;
    *hi = (unsigned)g->max_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t h, unsigned int *mw)
{
    ENTER("default_limit", h)
    if (!mw)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mw = (unsigned)g->default_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t h, unsigned int *mw)
{
    ENTER("limit", h)
    if (!mw)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mw = (unsigned)g->limit_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int *mw)
{
    ENTER("enforced", h)
    if (!mw)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mw = (unsigned)g->limit_mw;
    return NVML_SUCCESS;
}

/* The state's lock for a read-change-write; -1 without a state file. */
static int state_lock(void)
{
    const char *path = getenv("FAKE_NVML_STATE");
    if (!path || !*path)
        return -1;
    char lp[4096];
    snprintf(lp, sizeof lp, "%s.lock", path);
    int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        flock(fd, LOCK_EX);
    return fd;
}

static void state_unlock(int fd)
{
    if (fd >= 0)
        close(fd);      /* releases the flock */
}

static long sets_done;  /* successful limit sets of this process (FAKE_NVML_RANGE) */

/* FAKE_NVML_RANGE: new constraints for one GPU once enough sets are done. */
static void range_change(struct fake_state *st)
{
    const char *env = getenv("FAKE_NVML_RANGE");
    unsigned gpu;
    double lo, hi;
    long after;
    if (!env || sscanf(env, "%u:%lf:%lf:%ld", &gpu, &lo, &hi, &after) != 4 || gpu >= MAX_GPUS)
        return;
    if (sets_done == after) {
        st->gpu[gpu].min_mw = lo;
        st->gpu[gpu].max_mw = hi;
    }
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t h, unsigned int mw)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!h || h < handles || h >= handles + MAX_GPUS)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = injected("set_limit", (int)h->index);
    if (r != NVML_SUCCESS)
        return r;
    int lk = state_lock();
    struct fake_state st;
    if (load(&st) != 0) {
        state_unlock(lk);
        return NVML_ERROR_UNKNOWN;
    }
    if (h->index >= st.gpus) {
        state_unlock(lk);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    struct fake_gpu *g = &st.gpu[h->index];
    if (mw < g->min_mw || mw > g->max_mw) {
        state_unlock(lk);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (g->ignore_sets != 0) {  /* success, and nothing changes */
        if (g->ignore_sets > 0)
            g->ignore_sets--;
        int saved = save(&st);
        state_unlock(lk);
        return saved ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
    }
    /* Fold the energy drawn so far at the old limit into the counter. */
    g->energy_mj = energy_now_mj(g);
    g->stamp = now_s();
    if (h->index == 0) {
        st.tokens_total = tokens_now(&st);
        st.tokens_stamp = g->stamp;
    }
    g->limit_mw = mw;
    sets_done++;
    range_change(&st);
    int saved = save(&st);
    state_unlock(lk);
    if (saved != 0)
        return NVML_ERROR_UNKNOWN;
    if (h->index == 0)
        job_writes(&st);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw)
{
    ENTER("power", h)
    if (!mw)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!g->power)
        return NVML_ERROR_NOT_SUPPORTED;
    *mw = (unsigned)power_mw(g);
    if (h->index == 0)
        job_writes(&st);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj)
{
    ENTER("energy", h)
    if (!mj)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!g->energy)
        return NVML_ERROR_NOT_SUPPORTED;
    *mj = (unsigned long long)energy_now_mj(g);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int *mhz)
{
    ENTER("clock", h)
    if (!mhz)
        return NVML_ERROR_INVALID_ARGUMENT;
    switch (type) {
    case 0: /* graphics */
    case 1: /* SM */
        *mhz = (unsigned)(g->sm_max_mhz * slowdown(g) + 0.5);
        return NVML_SUCCESS;
    case 2: /* memory */
        *mhz = (unsigned)g->mem_mhz;
        return NVML_SUCCESS;
    default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
    ENTER("util", h)
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    u->gpu = (unsigned)g->gpu_util;
    u->memory = (unsigned)g->mem_util;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t h, int counter, unsigned int *kbs)
{
    ENTER("pcie", h)
    if (!kbs || counter < 0 || counter > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    *kbs = (unsigned)(counter == 0 ? g->pcie_tx_kbs : g->pcie_rx_kbs);
    if (g->pcie_ms > 0) {
        struct timespec d = {(time_t)(g->pcie_ms / 1000), (long)(fmod(g->pcie_ms, 1000) * 1e6)};
        while (nanosleep(&d, &d) != 0)
            ;
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t h, nvmlGpmSupport_t *s)
{
    ENTER("gpm", h)
    if (!s)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (s->version != 1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    s->isSupportedDevice = g->gpm != 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s)
{
    if (!s)
        return NVML_ERROR_INVALID_ARGUMENT;
    s->handle = calloc(1, sizeof *s->handle);
    return s->handle ? NVML_SUCCESS : 20 /* NVML_ERROR_MEMORY */;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
    if (!s.handle)
        return NVML_ERROR_INVALID_ARGUMENT;
    free(s.handle);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t h, nvmlGpmSample_t s)
{
    ENTER("gpm", h)
    if (!s.handle)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!g->gpm)
        return NVML_ERROR_NOT_SUPPORTED;
    s.handle->index = h->index;
    s.handle->t = now_s();
    s.handle->taken = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *m)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m->version != 1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    struct nvmlGpmSample_st *a = m->sample1.handle, *b = m->sample2.handle;
    if (!a || !b || !a->taken || !b->taken || a->index != b->index || m->numMetrics > 333)
        return NVML_ERROR_INVALID_ARGUMENT;
    ENTER("gpm", &handles[b->index])
    double s = slowdown(g);
    /* Both samples within one refresh: the counters did not move. */
    double r = g->gpm_refresh_ms / 1000;
    int stale = r > 0 && floor(a->t / r) == floor(b->t / r);
    for (unsigned k = 0; k < m->numMetrics; k++) {
        nvmlGpmMetric_t *x = &m->metrics[k];
        x->nvmlReturn = NVML_SUCCESS;
        switch (x->metricId) {
        case 1: x->value = g->graphics; break;
        case 2: x->value = g->sm_util; break;
        case 3: x->value = g->occupancy; break;
        case 5: x->value = g->tensor * s; break;
        case 10: x->value = g->dram; break;
        case 20: x->value = g->pcie_tx_kbs / 1024.0; break;
        case 21: x->value = g->pcie_rx_kbs / 1024.0; break;
        case 60: x->value = g->nvlink_rx_mibs; break;
        case 61: x->value = g->nvlink_tx_mibs; break;
        default: x->value = 0; x->nvmlReturn = NVML_ERROR_NOT_SUPPORTED; break;
        }
        if (stale)
            x->value = 0;
    }
    return NVML_SUCCESS;
}
