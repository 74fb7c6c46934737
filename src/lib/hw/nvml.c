/* nvml.c — the nvml backend: libnvidia-ml.so.1 through dlopen.
 *
 * The NVML declarations below are pflex's own, written from NVIDIA's
 * published nvml.h (types, enum values, units), so that nothing from CUDA
 * is needed to build.  Only the versioned entry points the library exports
 * today are used (nvmlInit_v2, nvmlDeviceGetCount_v2,
 * nvmlDeviceGetHandleByIndex_v2).  Functions an old driver lacks are
 * optional: their values read as NaN, never as invented numbers.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/hw/nvml.h"
#include "lib/util/clock.h"

/* ---- NVML, as declared by nvml.h ------------------------------------- */

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
};

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;   /* percent */
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };    /* KB/s */
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

/* GPM (GPU performance monitoring, Hopper and newer). */
typedef struct { struct nvmlGpmSample_st *handle; } nvmlGpmSample_t;
typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct { char *shortName, *longName, *unit; } metricInfo;
} nvmlGpmMetric_t;
/* nvml.h grew this from 98 to 333 under the same struct version 1; the
 * larger size is safe with either library (it reads numMetrics entries). */
#define NVML_GPM_METRIC_MAX 333
typedef struct {
    unsigned int version;
    unsigned int numMetrics;
    nvmlGpmSample_t sample1, sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
#define NVML_GPM_METRICS_GET_VERSION 1
typedef struct { unsigned int version, isSupportedDevice; } nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1
enum {
    NVML_GPM_METRIC_GRAPHICS_UTIL = 1,      /* percent */
    NVML_GPM_METRIC_SM_UTIL = 2,            /* percent of SMs busy */
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,       /* percent of max warps */
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,    /* percent */
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10,      /* percent of peak */
    NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,   /* MiB/s */
    NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
};

/* Every function used: X(required, return, symbol, parameters). */
#define NVML_FUNCTIONS(X) \
    X(1, const char *, nvmlErrorString, (nvmlReturn_t)) \
    X(1, nvmlReturn_t, nvmlInit_v2, (void)) \
    X(1, nvmlReturn_t, nvmlShutdown, (void)) \
    X(1, nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *)) \
    X(1, nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t *)) \
    X(1, nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned int)) \
    X(0, nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t, char *, unsigned int)) \
    X(1, nvmlReturn_t, nvmlDeviceGetPowerManagementLimitConstraints, \
      (nvmlDevice_t, unsigned int *, unsigned int *)) \
    X(0, nvmlReturn_t, nvmlDeviceGetPowerManagementDefaultLimit, (nvmlDevice_t, unsigned int *)) \
    X(0, nvmlReturn_t, nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t, unsigned int *)) \
    X(1, nvmlReturn_t, nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t, unsigned int *)) \
    X(1, nvmlReturn_t, nvmlDeviceSetPowerManagementLimit, (nvmlDevice_t, unsigned int)) \
    X(0, nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t, unsigned int *)) \
    X(0, nvmlReturn_t, nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t, unsigned long long *)) \
    X(0, nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t, int, unsigned int *)) \
    X(0, nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t *)) \
    X(0, nvmlReturn_t, nvmlDeviceGetPcieThroughput, (nvmlDevice_t, int, unsigned int *)) \
    X(0, nvmlReturn_t, nvmlGpmQueryDeviceSupport, (nvmlDevice_t, nvmlGpmSupport_t *)) \
    X(0, nvmlReturn_t, nvmlGpmSampleAlloc, (nvmlGpmSample_t *)) \
    X(0, nvmlReturn_t, nvmlGpmSampleFree, (nvmlGpmSample_t)) \
    X(0, nvmlReturn_t, nvmlGpmSampleGet, (nvmlDevice_t, nvmlGpmSample_t)) \
    X(0, nvmlReturn_t, nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t *))

/* ---- the backend ----------------------------------------------------- */

struct nvml_dev {
    nvmlDevice_t h;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    int gpm;                        /* GPM samples allocated and working */
    nvmlGpmSample_t gpm_prev, gpm_next;
    int gpm_have_prev;
    double gpm_prev_s;              /* monotonic time gpm_prev was taken */
    int gpm_pcie;                   /* the last GPM metrics gave PCIe TX and RX */
    int changed;                    /* limit changed by us, not restored */
    unsigned orig_mw;               /* limit before our first change */
};

struct nvml {
    void *dl;
    char lib[256];
#define X(req, ret, sym, args) ret (*sym) args;
    NVML_FUNCTIONS(X)
#undef X
    int inited;
    int keep;
    unsigned n;
    struct nvml_dev *dev;
};

static const struct pflex_gpu_ops nvml_ops;

static const char *ret_name(nvmlReturn_t r)
{
    static const char *const names[] = {
        "NVML_SUCCESS", "NVML_ERROR_UNINITIALIZED", "NVML_ERROR_INVALID_ARGUMENT",
        "NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_NO_PERMISSION", "NVML_ERROR_ALREADY_INITIALIZED",
        "NVML_ERROR_NOT_FOUND", "NVML_ERROR_INSUFFICIENT_SIZE", "NVML_ERROR_INSUFFICIENT_POWER",
        "NVML_ERROR_DRIVER_NOT_LOADED", "NVML_ERROR_TIMEOUT", "NVML_ERROR_IRQ_ISSUE",
        "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML_ERROR_FUNCTION_NOT_FOUND",
        "NVML_ERROR_CORRUPTED_INFOROM", "NVML_ERROR_GPU_IS_LOST", "NVML_ERROR_RESET_REQUIRED",
        "NVML_ERROR_OPERATING_SYSTEM", "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "NVML_ERROR_IN_USE",
        "NVML_ERROR_MEMORY", "NVML_ERROR_NO_DATA",
    };
    if (r >= 0 && (size_t)r < sizeof names / sizeof *names)
        return names[r];
    return r == 999 ? "NVML_ERROR_UNKNOWN" : "NVML error";
}

/* "GPU 0 (NVIDIA H200): what: Insufficient Permissions (NVML_ERROR_NO_PERMISSION)" */
static int nv_fail(struct nvml *nv, long gpu, const char *what, nvmlReturn_t r, pflex_error_t *err)
{
    const char *s = nv->nvmlErrorString ? nv->nvmlErrorString(r) : NULL;
    const char *hint = r == NVML_ERROR_NO_PERMISSION
        ? "; changing power limits needs root (or the driver's admin setting)" : "";
    if (gpu < 0)
        return pflex_error_set(err, "NVML (%s): %s: %s (%s)%s", nv->lib, what,
                               s ? s : "error", ret_name(r), hint);
    return pflex_error_set(err, "GPU %ld (%s): %s: %s (%s)%s", gpu,
                           nv->dev && nv->dev[gpu].name[0] ? nv->dev[gpu].name : "?", what,
                           s ? s : "error", ret_name(r), hint);
}

static struct nvml *ctx_of(const pflex_gpu_t *g)
{
    return g && g->ops == &nvml_ops ? g->ctx : NULL;
}

static int check_index(struct nvml *nv, unsigned i, pflex_error_t *err)
{
    if (i >= nv->n)
        return pflex_error_set(err, "GPU %u: no such GPU (NVML sees %u)", i, nv->n);
    return 0;
}

/* Optional reads: NOT_SUPPORTED and a missing function are "no value". */
static int unsupported(nvmlReturn_t r)
{
    return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

#define CALL(nv, fn, ...) ((nv)->fn ? (nv)->fn(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND)

static void nvml_close(void *ctx);

int pflex_nvml_open(const char *lib_path, pflex_gpu_t *out, pflex_error_t *err)
{
    out->ops = NULL;
    out->ctx = NULL;
    if (!lib_path || !*lib_path)
        lib_path = PFLEX_NVML_LIB_DEFAULT;
    struct nvml *nv = calloc(1, sizeof *nv);
    if (!nv)
        return pflex_error_set(err, "out of memory");
    snprintf(nv->lib, sizeof nv->lib, "%s", lib_path);
    nv->dl = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!nv->dl) {
        const char *why = dlerror();
        pflex_error_set(err, "cannot load NVML (%s): %s; is the NVIDIA driver installed?",
                        lib_path, why ? why : "unknown error");
        free(nv);
        return -1;
    }
    const char *missing = NULL;
    /* dlsym returns an object pointer; POSIX guarantees it converts. */
#define X(req, ret, sym, args) { \
        void *p_ = dlsym(nv->dl, #sym); \
        memcpy(&nv->sym, &p_, sizeof p_); \
        if ((req) && !p_ && !missing) \
            missing = #sym; \
    }
    NVML_FUNCTIONS(X)
#undef X
    if (missing) {
        pflex_error_set(err, "NVML (%s) lacks %s; the driver is too old", lib_path, missing);
        nvml_close(nv);
        return -1;
    }
    nvmlReturn_t r = nv->nvmlInit_v2();
    if (r != NVML_SUCCESS) {
        nv_fail(nv, -1, "nvmlInit_v2", r, err);
        nvml_close(nv);
        return -1;
    }
    nv->inited = 1;
    unsigned n = 0;
    if ((r = nv->nvmlDeviceGetCount_v2(&n)) != NVML_SUCCESS) {
        nv_fail(nv, -1, "nvmlDeviceGetCount_v2", r, err);
        nvml_close(nv);
        return -1;
    }
    nv->dev = calloc(n ? n : 1, sizeof *nv->dev);
    if (!nv->dev) {
        nvml_close(nv);
        return pflex_error_set(err, "out of memory");
    }
    nv->n = n;
    for (unsigned i = 0; i < n; i++) {
        struct nvml_dev *d = &nv->dev[i];
        char what[64];
        if ((r = nv->nvmlDeviceGetHandleByIndex_v2(i, &d->h)) != NVML_SUCCESS) {
            snprintf(what, sizeof what, "nvmlDeviceGetHandleByIndex_v2(%u)", i);
            nv_fail(nv, i, what, r, err);
            nvml_close(nv);
            return -1;
        }
        if ((r = nv->nvmlDeviceGetName(d->h, d->name, sizeof d->name)) != NVML_SUCCESS) {
            nv_fail(nv, i, "nvmlDeviceGetName", r, err);
            nvml_close(nv);
            return -1;
        }
        d->name[sizeof d->name - 1] = '\0';
        nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
        if (CALL(nv, nvmlGpmQueryDeviceSupport, d->h, &sup) == NVML_SUCCESS && sup.isSupportedDevice
            && nv->nvmlGpmSampleGet && nv->nvmlGpmMetricsGet && nv->nvmlGpmSampleFree
            && CALL(nv, nvmlGpmSampleAlloc, &d->gpm_prev) == NVML_SUCCESS) {
            if (nv->nvmlGpmSampleAlloc(&d->gpm_next) == NVML_SUCCESS)
                d->gpm = d->gpm_pcie = 1;
            else
                nv->nvmlGpmSampleFree(d->gpm_prev);
        }
    }
    out->ops = &nvml_ops;
    out->ctx = nv;
    return 0;
}

static int nvml_count(void *ctx, unsigned *n, pflex_error_t *err)
{
    *n = ((struct nvml *)ctx)->n;
    return 0;
}

static int nvml_describe(void *ctx, unsigned i, char *buf, size_t len, pflex_error_t *err)
{
    struct nvml *nv = ctx;
    if (check_index(nv, i, err))
        return -1;
    if (len)
        snprintf(buf, len, "%s", nv->dev[i].name);
    return 0;
}

static int read_constraints(struct nvml *nv, unsigned i, unsigned *min_mw, unsigned *max_mw,
                            pflex_error_t *err)
{
    nvmlReturn_t r = nv->nvmlDeviceGetPowerManagementLimitConstraints(nv->dev[i].h, min_mw, max_mw);
    if (r != NVML_SUCCESS)
        return nv_fail(nv, i, "reading the power limit constraints", r, err);
    return 0;
}

static int nvml_limits(void *ctx, unsigned i, struct pflex_gpu_limits *out, pflex_error_t *err)
{
    struct nvml *nv = ctx;
    unsigned lo, hi, def;
    if (check_index(nv, i, err) || read_constraints(nv, i, &lo, &hi, err))
        return -1;
    out->min_w = lo / 1000.0;
    out->max_w = hi / 1000.0;
    nvmlReturn_t r = CALL(nv, nvmlDeviceGetPowerManagementDefaultLimit, nv->dev[i].h, &def);
    if (r == NVML_SUCCESS)
        out->default_w = def / 1000.0;
    else if (unsupported(r))
        out->default_w = NAN;
    else
        return nv_fail(nv, i, "reading the default power limit", r, err);
    return 0;
}

static int nvml_get_cap(void *ctx, unsigned i, double *cap_w, pflex_error_t *err)
{
    struct nvml *nv = ctx;
    unsigned mw;
    if (check_index(nv, i, err))
        return -1;
    nvmlReturn_t r = nv->nvmlDeviceGetEnforcedPowerLimit(nv->dev[i].h, &mw);
    if (r != NVML_SUCCESS)
        return nv_fail(nv, i, "reading the enforced power limit", r, err);
    *cap_w = mw / 1000.0;
    return 0;
}

/* The limit to restore: the management limit, or the enforced one where
 * the driver does not report it. */
static int read_current_limit(struct nvml *nv, unsigned i, unsigned *mw, pflex_error_t *err)
{
    nvmlReturn_t r = CALL(nv, nvmlDeviceGetPowerManagementLimit, nv->dev[i].h, mw);
    if (unsupported(r))
        r = nv->nvmlDeviceGetEnforcedPowerLimit(nv->dev[i].h, mw);
    if (r != NVML_SUCCESS)
        return nv_fail(nv, i, "reading the power limit before changing it", r, err);
    return 0;
}

static int nvml_set_cap(void *ctx, unsigned i, double cap_w, pflex_error_t *err)
{
    struct nvml *nv = ctx;
    unsigned lo, hi;
    if (check_index(nv, i, err))
        return -1;
    if (!isfinite(cap_w) || cap_w <= 0)
        return pflex_error_set(err, "GPU %u (%s): power cap %g W is not a positive number", i,
                               nv->dev[i].name, cap_w);
    if (read_constraints(nv, i, &lo, &hi, err))
        return -1;
    double mw = nearbyint(cap_w * 1000.0);
    if (mw < lo || mw > hi)
        return pflex_error_set(err, "GPU %u (%s): power cap %g W is outside the device's range "
                               "%g-%g W; refused", i, nv->dev[i].name, cap_w, lo / 1000.0,
                               hi / 1000.0);
    struct nvml_dev *d = &nv->dev[i];
    if (!d->changed) {
        unsigned orig;
        if (read_current_limit(nv, i, &orig, err))
            return -1;
        d->orig_mw = orig;
    }
    char what[80];
    snprintf(what, sizeof what, "setting the power limit to %g W", cap_w);
    nvmlReturn_t r = nv->nvmlDeviceSetPowerManagementLimit(d->h, (unsigned)mw);
    if (r != NVML_SUCCESS)
        return nv_fail(nv, i, what, r, err);
    d->changed = 1;
    /* Read back: the call can succeed and leave another limiter in force. */
    unsigned enforced;
    r = nv->nvmlDeviceGetEnforcedPowerLimit(d->h, &enforced);
    if (r != NVML_SUCCESS)
        return nv_fail(nv, i, "reading back the enforced power limit", r, err);
    return 0;
}

/* Power, energy, clocks, utilisation, PCIe: the always-on counters. */
static int read_counters(struct nvml *nv, unsigned i, struct pflex_gpu_sample *out,
                         pflex_error_t *err)
{
    nvmlDevice_t h = nv->dev[i].h;
    unsigned v;
    unsigned long long e;
    nvmlReturn_t r;

#define OPTIONAL(call, what, assign) \
    if ((r = (call)) == NVML_SUCCESS) { assign; } \
    else if (!unsupported(r)) return nv_fail(nv, i, what, r, err);

    OPTIONAL(CALL(nv, nvmlDeviceGetPowerUsage, h, &v), "reading power usage",
             out->power_w = v / 1000.0)
    OPTIONAL(CALL(nv, nvmlDeviceGetTotalEnergyConsumption, h, &e), "reading the energy counter",
             out->energy_j = (double)e / 1000.0)
    OPTIONAL(CALL(nv, nvmlDeviceGetClockInfo, h, NVML_CLOCK_SM, &v), "reading the SM clock",
             out->tm[PFLEX_TM_SM_CLOCK_MHZ] = v)
    OPTIONAL(CALL(nv, nvmlDeviceGetClockInfo, h, NVML_CLOCK_MEM, &v), "reading the memory clock",
             out->tm[PFLEX_TM_MEM_CLOCK_MHZ] = v)
    nvmlUtilization_t u;
    OPTIONAL(CALL(nv, nvmlDeviceGetUtilizationRates, h, &u), "reading utilisation",
             out->tm[PFLEX_TM_GPU_UTIL] = u.gpu; out->tm[PFLEX_TM_MEM_COPY_UTIL] = u.memory)
#undef OPTIONAL
    return 0;
}

/* PCIe throughput without GPM.  NVML reports it in KB/s (1 KiB granularity)
 * and counts bytes over 20 ms inside each call: the two calls block 40 ms,
 * which is why they are skipped where GPM gives the same (nvml_sample). */
static int read_pcie(struct nvml *nv, unsigned i, struct pflex_gpu_sample *out, pflex_error_t *err)
{
    static const struct { int counter, field; const char *what; } want[] = {
        {NVML_PCIE_UTIL_TX_BYTES, PFLEX_TM_PCIE_TX_BYTES, "reading PCIe TX throughput"},
        {NVML_PCIE_UTIL_RX_BYTES, PFLEX_TM_PCIE_RX_BYTES, "reading PCIe RX throughput"},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        unsigned v;
        nvmlReturn_t r = CALL(nv, nvmlDeviceGetPcieThroughput, nv->dev[i].h, want[k].counter, &v);
        if (r == NVML_SUCCESS)
            out->tm[want[k].field] = v * 1024.0;
        else if (!unsupported(r))
            return nv_fail(nv, i, want[k].what, r, err);
    }
    return 0;
}

/* GPM metrics between the previous sample and a new one. */
static int read_gpm(struct nvml *nv, unsigned i, struct pflex_gpu_sample *out, pflex_error_t *err)
{
    static const struct { unsigned id; int field; double scale; } want[] = {
        {NVML_GPM_METRIC_GRAPHICS_UTIL, PFLEX_TM_GR_ENGINE_ACTIVE, 0.01},
        {NVML_GPM_METRIC_SM_UTIL, PFLEX_TM_SM_ACTIVE, 0.01},
        {NVML_GPM_METRIC_SM_OCCUPANCY, PFLEX_TM_SM_OCCUPANCY, 0.01},
        {NVML_GPM_METRIC_ANY_TENSOR_UTIL, PFLEX_TM_TENSOR_ACTIVE, 0.01},
        {NVML_GPM_METRIC_DRAM_BW_UTIL, PFLEX_TM_DRAM_ACTIVE, 0.01},
        {NVML_GPM_METRIC_PCIE_TX_PER_SEC, PFLEX_TM_PCIE_TX_BYTES, 1048576.0},
        {NVML_GPM_METRIC_PCIE_RX_PER_SEC, PFLEX_TM_PCIE_RX_BYTES, 1048576.0},
        {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, PFLEX_TM_NVLINK_TX_BYTES, 1048576.0},
        {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, PFLEX_TM_NVLINK_RX_BYTES, 1048576.0},
    };
    struct nvml_dev *d = &nv->dev[i];
    /* GPM's counters refresh every 100 ms: two samples closer than that can
     * hold the same counters, and their metrics read 0 (or fail) whatever
     * the load.  Such a sample gets no GPM values and keeps the last one as
     * the start of the next window. */
    double now = pflex_mono_s();
    if (d->gpm_have_prev && now - d->gpm_prev_s < PFLEX_NVML_GPM_MIN_INTERVAL_MS / 1000.0)
        return 0;
    nvmlReturn_t r = nv->nvmlGpmSampleGet(d->h, d->gpm_next);
    if (r == NVML_ERROR_GPU_IS_LOST)
        return nv_fail(nv, i, "taking a GPM sample", r, err);
    if (r != NVML_SUCCESS) {
        /* GPM can be busy (profiling elsewhere) or go away: no values. */
        d->gpm_have_prev = 0;
        return 0;
    }
    if (d->gpm_have_prev) {
        nvmlGpmMetricsGet_t *mg = calloc(1, sizeof *mg);
        if (!mg)
            return pflex_error_set(err, "out of memory");
        mg->version = NVML_GPM_METRICS_GET_VERSION;
        mg->numMetrics = sizeof want / sizeof *want;
        mg->sample1 = d->gpm_prev;
        mg->sample2 = d->gpm_next;
        for (size_t k = 0; k < sizeof want / sizeof *want; k++)
            mg->metrics[k].metricId = want[k].id;
        r = nv->nvmlGpmMetricsGet(mg);
        int pcie = 0;
        if (r == NVML_SUCCESS)
            for (size_t k = 0; k < sizeof want / sizeof *want; k++)
                if (mg->metrics[k].nvmlReturn == NVML_SUCCESS && isfinite(mg->metrics[k].value)) {
                    out->tm[want[k].field] = mg->metrics[k].value * want[k].scale;
                    pcie += want[k].field == PFLEX_TM_PCIE_TX_BYTES
                            || want[k].field == PFLEX_TM_PCIE_RX_BYTES;
                }
        free(mg);
        d->gpm_pcie = pcie == 2;
        if (r == NVML_ERROR_GPU_IS_LOST)
            return nv_fail(nv, i, "computing GPM metrics", r, err);
    }
    nvmlGpmSample_t t = d->gpm_prev;
    d->gpm_prev = d->gpm_next;
    d->gpm_next = t;
    d->gpm_have_prev = 1;
    d->gpm_prev_s = now;
    return 0;
}

static int nvml_sample(void *ctx, unsigned i, struct pflex_gpu_sample *out, pflex_error_t *err)
{
    struct nvml *nv = ctx;
    if (check_index(nv, i, err))
        return -1;
    out->power_w = NAN;
    out->energy_j = NAN;
    for (int k = 0; k < PFLEX_TM_COUNT; k++)
        out->tm[k] = NAN;
    if (read_counters(nv, i, out, err))
        return -1;
    struct nvml_dev *d = &nv->dev[i];
    /* Where GPM has a window open and gave PCIe last time, it gives PCIe
     * again: the 40 ms of the plain counters would buy nothing. */
    if (!(d->gpm && d->gpm_have_prev && d->gpm_pcie) && read_pcie(nv, i, out, err))
        return -1;
    if (d->gpm)
        return read_gpm(nv, i, out, err);
    return 0;
}

int pflex_nvml_restore(pflex_gpu_t *g, pflex_error_t *err)
{
    struct nvml *nv = ctx_of(g);
    if (!nv)
        return pflex_error_set(err, "not an nvml backend");
    unsigned failed = 0;
    pflex_error_t first = {{0}};
    for (unsigned i = 0; i < nv->n; i++) {
        struct nvml_dev *d = &nv->dev[i];
        if (!d->changed)
            continue;
        char what[80];
        snprintf(what, sizeof what, "restoring the power limit to %g W", d->orig_mw / 1000.0);
        nvmlReturn_t r = nv->nvmlDeviceSetPowerManagementLimit(d->h, d->orig_mw);
        if (r == NVML_SUCCESS) {
            d->changed = 0;
        } else if (failed++ == 0) {
            nv_fail(nv, i, what, r, &first);
        }
    }
    if (failed == 0)
        return 0;
    if (failed == 1)
        return pflex_error_set(err, "%s", first.text);
    return pflex_error_set(err, "%s (and %u more GPUs not restored)", first.text, failed - 1);
}

unsigned pflex_nvml_changed(pflex_gpu_t *g)
{
    struct nvml *nv = ctx_of(g);
    unsigned n = 0;
    for (unsigned i = 0; nv && i < nv->n; i++)
        n += nv->dev[i].changed != 0;
    return n;
}

void pflex_nvml_keep_limits(pflex_gpu_t *g)
{
    struct nvml *nv = ctx_of(g);
    if (nv)
        nv->keep = 1;
}

int pflex_nvml_is(const pflex_gpu_t *g)
{
    return ctx_of(g) != NULL;
}

int pflex_nvml_info(pflex_gpu_t *g, unsigned i, struct pflex_nvml_info *out, pflex_error_t *err)
{
    struct nvml *nv = ctx_of(g);
    if (!nv)
        return pflex_error_set(err, "not an nvml backend");
    if (check_index(nv, i, err))
        return -1;
    struct nvml_dev *d = &nv->dev[i];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", d->name);
    nvmlReturn_t r = CALL(nv, nvmlDeviceGetUUID, d->h, out->uuid, sizeof out->uuid);
    if (r != NVML_SUCCESS && !unsupported(r))
        return nv_fail(nv, i, "reading the UUID", r, err);
    out->uuid[sizeof out->uuid - 1] = '\0';
    struct pflex_gpu_limits lim;
    if (nvml_limits(nv, i, &lim, err) || nvml_get_cap(nv, i, &out->enforced_w, err))
        return -1;
    out->min_w = lim.min_w;
    out->max_w = lim.max_w;
    out->default_w = lim.default_w;
    unsigned mw;
    out->limit_w = NAN;
    r = CALL(nv, nvmlDeviceGetPowerManagementLimit, d->h, &mw);
    if (r == NVML_SUCCESS)
        out->limit_w = mw / 1000.0;
    else if (!unsupported(r))
        return nv_fail(nv, i, "reading the power limit", r, err);
    out->power_w = NAN;
    r = CALL(nv, nvmlDeviceGetPowerUsage, d->h, &mw);
    if (r == NVML_SUCCESS)
        out->power_w = mw / 1000.0;
    else if (!unsupported(r))
        return nv_fail(nv, i, "reading power usage", r, err);
    out->gpm = d->gpm;
    return 0;
}

static void nvml_close(void *ctx)
{
    struct nvml *nv = ctx;
    if (!nv)
        return;
    if (nv->inited && !nv->keep) {
        pflex_gpu_t g = {&nvml_ops, nv};
        pflex_nvml_restore(&g, NULL);   /* best effort: callers restore first to see errors */
    }
    for (unsigned i = 0; nv->dev && i < nv->n; i++)
        if (nv->dev[i].gpm) {
            nv->nvmlGpmSampleFree(nv->dev[i].gpm_prev);
            nv->nvmlGpmSampleFree(nv->dev[i].gpm_next);
        }
    if (nv->inited)
        nv->nvmlShutdown();
    if (nv->dl)
        dlclose(nv->dl);
    free(nv->dev);
    free(nv);
}

static const struct pflex_gpu_ops nvml_ops = {
    .name = "nvml",
    .count = nvml_count,
    .describe = nvml_describe,
    .limits = nvml_limits,
    .get_cap = nvml_get_cap,
    .set_cap = nvml_set_cap,
    .sample = nvml_sample,
    .close = nvml_close,
};
