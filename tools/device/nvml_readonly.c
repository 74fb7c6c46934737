/* nvml_readonly.c — a read-only libnvidia-ml for measuring on borrowed GPUs.
 *
 * pflex loads NVML with dlopen and looks up each function by name.  Point it
 * at this library instead (--nvml-lib or PFLEX_NVML_LIB) and every read goes
 * through to the real driver library while every setter is refused with
 * NVML_ERROR_NO_PERMISSION, so no command can change a power limit, a clock,
 * persistence or MIG on a machine we only measure.  NVML_REAL_LIB names the
 * real library (default libnvidia-ml.so.1).  Each refused call is counted on
 * stderr so a run's log shows that one was tried.  NVML_REAL_LIB naming this
 * library itself is refused (every call would forward to itself).
 *
 * Build: `make nvml-readonly` (build/nvml-readonly/libnvml_readonly.so, with
 * the project's warnings as errors), or by hand:
 *   cc -shared -fPIC -O2 -o libnvml_readonly.so nvml_readonly.c -ldl
 * tests/e2e/nvml_readonly.sh checks it against the fake NVML.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_FUNCTION_NOT_FOUND 13

/* Exported so that real() can tell this library from the real one. */
extern const int nvml_readonly_shim;
const int nvml_readonly_shim = 1;

static void *real(const char *sym)
{
    static void *dl;
    if (!dl) {
        const char *path = getenv("NVML_REAL_LIB");
        void *h = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "nvml_readonly: cannot load the real NVML: %s\n", dlerror());
            return NULL;
        }
        if (dlsym(h, "nvml_readonly_shim")) {
            fprintf(stderr, "nvml_readonly: NVML_REAL_LIB names this read-only library, "
                    "not the real NVML\n");
            dlclose(h);
            return NULL;
        }
        dl = h;
    }
    return dlsym(dl, sym);
}

/* Reads: same signature, forwarded.  Pointers are passed through untouched,
 * so the structs need no definition here. */
#define FWD(name, params, args) \
    nvmlReturn_t name params; \
    nvmlReturn_t name params \
    { \
        nvmlReturn_t (*f) params; \
        void *p = real(#name); \
        if (!p) \
            return NVML_ERROR_FUNCTION_NOT_FOUND; \
        memcpy(&f, &p, sizeof p); \
        return f args; \
    }

const char *nvmlErrorString(nvmlReturn_t r);
const char *nvmlErrorString(nvmlReturn_t r)
{
    const char *(*f)(nvmlReturn_t);
    void *p = real("nvmlErrorString");
    if (!p)
        return "unknown (nvml_readonly: no real NVML)";
    memcpy(&f, &p, sizeof p);
    return f(r);
}

FWD(nvmlInit_v2, (void), ())
FWD(nvmlShutdown, (void), ())
FWD(nvmlDeviceGetCount_v2, (unsigned int *n), (n))
FWD(nvmlDeviceGetHandleByIndex_v2, (unsigned int i, nvmlDevice_t *d), (i, d))
FWD(nvmlDeviceGetName, (nvmlDevice_t d, char *s, unsigned int n), (d, s, n))
FWD(nvmlDeviceGetUUID, (nvmlDevice_t d, char *s, unsigned int n), (d, s, n))
FWD(nvmlDeviceGetPowerManagementLimitConstraints, (nvmlDevice_t d, unsigned int *lo, unsigned int *hi),
    (d, lo, hi))
FWD(nvmlDeviceGetPowerManagementDefaultLimit, (nvmlDevice_t d, unsigned int *v), (d, v))
FWD(nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t d, unsigned int *v), (d, v))
FWD(nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t d, unsigned int *v), (d, v))
FWD(nvmlDeviceGetPowerUsage, (nvmlDevice_t d, unsigned int *v), (d, v))
FWD(nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t d, unsigned long long *v), (d, v))
FWD(nvmlDeviceGetClockInfo, (nvmlDevice_t d, int type, unsigned int *v), (d, type, v))
FWD(nvmlDeviceGetUtilizationRates, (nvmlDevice_t d, void *u), (d, u))
FWD(nvmlDeviceGetPcieThroughput, (nvmlDevice_t d, int c, unsigned int *v), (d, c, v))
FWD(nvmlGpmQueryDeviceSupport, (nvmlDevice_t d, void *s), (d, s))
FWD(nvmlGpmSampleAlloc, (void *s), (s))
FWD(nvmlGpmMetricsGet, (void *m), (m))

/* nvmlGpmSample_t is a struct holding one pointer, passed by value. */
typedef struct { void *handle; } gpm_sample_t;
nvmlReturn_t nvmlGpmSampleFree(gpm_sample_t s);
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, gpm_sample_t s);
nvmlReturn_t nvmlGpmSampleFree(gpm_sample_t s)
{
    nvmlReturn_t (*f)(gpm_sample_t);
    void *p = real("nvmlGpmSampleFree");
    if (!p)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    memcpy(&f, &p, sizeof p);
    return f(s);
}
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, gpm_sample_t s)
{
    nvmlReturn_t (*f)(nvmlDevice_t, gpm_sample_t);
    void *p = real("nvmlGpmSampleGet");
    if (!p)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    memcpy(&f, &p, sizeof p);
    return f(d, s);
}

/* Every setter pflex or a careless caller might reach: refused. */
static nvmlReturn_t refuse(const char *name)
{
    static _Atomic unsigned n;
    fprintf(stderr, "nvml_readonly: refused %s (refusal %u)\n", name, ++n);
    return NVML_ERROR_NO_PERMISSION;
}
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define REFUSE(name, params) \
    nvmlReturn_t name params; \
    nvmlReturn_t name params { return refuse(#name); }
REFUSE(nvmlDeviceSetPowerManagementLimit, (nvmlDevice_t d, unsigned int mw))
REFUSE(nvmlDeviceSetPowerManagementLimit_v2, (nvmlDevice_t d, void *v))
REFUSE(nvmlDeviceSetApplicationsClocks, (nvmlDevice_t d, unsigned int m, unsigned int g))
REFUSE(nvmlDeviceResetApplicationsClocks, (nvmlDevice_t d))
REFUSE(nvmlDeviceSetGpuLockedClocks, (nvmlDevice_t d, unsigned int lo, unsigned int hi))
REFUSE(nvmlDeviceResetGpuLockedClocks, (nvmlDevice_t d))
REFUSE(nvmlDeviceSetMemoryLockedClocks, (nvmlDevice_t d, unsigned int lo, unsigned int hi))
REFUSE(nvmlDeviceResetMemoryLockedClocks, (nvmlDevice_t d))
REFUSE(nvmlDeviceSetPersistenceMode, (nvmlDevice_t d, int mode))
REFUSE(nvmlDeviceSetMigMode, (nvmlDevice_t d, unsigned int mode, nvmlReturn_t *r))
REFUSE(nvmlDeviceSetComputeMode, (nvmlDevice_t d, int mode))
REFUSE(nvmlDeviceSetEccMode, (nvmlDevice_t d, int mode))
REFUSE(nvmlDeviceSetAutoBoostedClocksEnabled, (nvmlDevice_t d, int on))
REFUSE(nvmlDeviceSetGpuOperationMode, (nvmlDevice_t d, int mode))
REFUSE(nvmlDeviceSetClockOffsets, (nvmlDevice_t d, void *info))
REFUSE(nvmlDeviceSetPowerManagementLimitConstraints, (nvmlDevice_t d, void *v))
REFUSE(nvmlDeviceClearEccErrorCounts, (nvmlDevice_t d, int type))
REFUSE(nvmlDeviceResetNvLinkErrorCounters, (nvmlDevice_t d, unsigned int link))
