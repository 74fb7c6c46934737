/* pflex/io/telemetry.h — GPU telemetry as the NVIDIA tools write it (SPEC §3).
 *
 * Readers for nvidia-smi --query-gpu CSV (with or without units and a
 * timestamp column), dcgmi dmon, dcgm-exporter's Prometheus text exposition,
 * the Prometheus HTTP API JSON (vector and matrix), and pflex's own long CSV
 * (what `pflex telemetry --csv` writes).  Every reader turns its input into
 * samples of series: one series per (job, host, GPU, field), fields named as
 * DCGM names them and in DCGM's units (W, MHz, %, ratios 0..1, bytes/s, mJ).
 *
 * Hostile input: lines are bounded (limits.max_line), so are the series and
 * sample counts and the bytes fetched; a reader fails with
 * "file:line: what is wrong" and never grows without bound.  The store owns
 * every string and array in it.
 */
#ifndef PFLEX_TELEMETRY_H
#define PFLEX_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "pflex/util/error.h"

/* The fields pflex understands, with DCGM's names, ids and units. */
enum pflex_dcgm {
    PFLEX_DCGM_SM_CLOCK,            /* DCGM_FI_DEV_SM_CLOCK, 100, MHz */
    PFLEX_DCGM_MEM_CLOCK,           /* DCGM_FI_DEV_MEM_CLOCK, 101, MHz */
    PFLEX_DCGM_MAX_SM_CLOCK,        /* DCGM_FI_DEV_MAX_SM_CLOCK, 110, MHz */
    PFLEX_DCGM_CLOCKS_EVENT_REASONS,/* DCGM_FI_DEV_CLOCKS_EVENT_REASONS, 112, bitmask */
    PFLEX_DCGM_GPU_TEMP,            /* DCGM_FI_DEV_GPU_TEMP, 150, C */
    PFLEX_DCGM_POWER_USAGE,         /* DCGM_FI_DEV_POWER_USAGE, 155, W */
    PFLEX_DCGM_TOTAL_ENERGY,        /* DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, 156, mJ */
    PFLEX_DCGM_POWER_USAGE_INSTANT, /* DCGM_FI_DEV_POWER_USAGE_INSTANT, 157, W */
    PFLEX_DCGM_POWER_LIMIT,         /* DCGM_FI_DEV_POWER_MGMT_LIMIT, 160, W */
    PFLEX_DCGM_POWER_LIMIT_MIN,     /* DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN, 161, W */
    PFLEX_DCGM_POWER_LIMIT_MAX,     /* DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX, 162, W */
    PFLEX_DCGM_ENFORCED_LIMIT,      /* DCGM_FI_DEV_ENFORCED_POWER_LIMIT, 164, W */
    PFLEX_DCGM_GPU_UTIL,            /* DCGM_FI_DEV_GPU_UTIL, 203, % */
    PFLEX_DCGM_MEM_COPY_UTIL,       /* DCGM_FI_DEV_MEM_COPY_UTIL, 204, % */
    PFLEX_DCGM_FB_USED,             /* DCGM_FI_DEV_FB_USED, 252, MiB */
    PFLEX_DCGM_GR_ENGINE_ACTIVE,    /* DCGM_FI_PROF_GR_ENGINE_ACTIVE, 1001, ratio */
    PFLEX_DCGM_SM_ACTIVE,           /* DCGM_FI_PROF_SM_ACTIVE, 1002, ratio */
    PFLEX_DCGM_SM_OCCUPANCY,        /* DCGM_FI_PROF_SM_OCCUPANCY, 1003, ratio */
    PFLEX_DCGM_TENSOR_ACTIVE,       /* DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, 1004, ratio */
    PFLEX_DCGM_DRAM_ACTIVE,         /* DCGM_FI_PROF_DRAM_ACTIVE, 1005, ratio */
    PFLEX_DCGM_FP64_ACTIVE,         /* DCGM_FI_PROF_PIPE_FP64_ACTIVE, 1006, ratio */
    PFLEX_DCGM_FP32_ACTIVE,         /* DCGM_FI_PROF_PIPE_FP32_ACTIVE, 1007, ratio */
    PFLEX_DCGM_FP16_ACTIVE,         /* DCGM_FI_PROF_PIPE_FP16_ACTIVE, 1008, ratio */
    PFLEX_DCGM_PCIE_TX_BYTES,       /* DCGM_FI_PROF_PCIE_TX_BYTES, 1009, bytes/s */
    PFLEX_DCGM_PCIE_RX_BYTES,       /* DCGM_FI_PROF_PCIE_RX_BYTES, 1010, bytes/s */
    PFLEX_DCGM_NVLINK_TX_BYTES,     /* DCGM_FI_PROF_NVLINK_TX_BYTES, 1011, bytes/s */
    PFLEX_DCGM_NVLINK_RX_BYTES,     /* DCGM_FI_PROF_NVLINK_RX_BYTES, 1012, bytes/s */
    PFLEX_DCGM_COUNT
};

struct pflex_dcgm_info {
    const char *name;   /* "DCGM_FI_PROF_DRAM_ACTIVE" */
    int id;             /* DCGM field id (dcgmi dmon -e) */
    const char *tag;    /* dcgmi dmon column tag ("DRAMA") */
    const char *unit;   /* "W", "MHz", "%", "ratio", "bytes/s", "mJ", ... */
};

const struct pflex_dcgm_info *pflex_dcgm_info(enum pflex_dcgm f);
/* Field of a DCGM name, dmon tag or numeric id (s[0..len)), or -1. */
int pflex_dcgm_by_name(const char *s, size_t len);
int pflex_dcgm_by_tag(const char *s, size_t len);
int pflex_dcgm_by_id(long id);

/* DCGM's blank sentinels (no data): int64 values at or above
 * 0x7ffffffffffffff0 and the fp64 blanks 2^47 .. 2^47 + 15. */
int pflex_dcgm_is_blank(double v);

enum pflex_tm_format {
    PFLEX_TMF_AUTO, PFLEX_TMF_SMI, PFLEX_TMF_DMON, PFLEX_TMF_PROM, PFLEX_TMF_PROMJSON,
    PFLEX_TMF_PFLEX, PFLEX_TMF_COUNT
};
/* "auto", "nvidia-smi", "dcgmi", "prometheus", "prometheus-json", "pflex". */
const char *pflex_tm_format_name(enum pflex_tm_format f);
int pflex_tm_format_parse(const char *s, enum pflex_tm_format *out);
/* The format a buffer holds, judged from its first lines; PFLEX_TMF_AUTO
 * when none fits. */
enum pflex_tm_format pflex_tm_detect(const char *buf, size_t len);

struct pflex_tm_series {
    const char *job;    /* NULL until mapped */
    const char *host;   /* "" when the input names none */
    const char *uuid;   /* NULL when the input names none */
    int gpu;            /* GPU index, -1 when the input names none */
    int field;          /* enum pflex_dcgm */
    unsigned line;      /* first line it came from */
};

struct pflex_tm_sample {
    double time_s;      /* Unix seconds, or the tick number where the tool prints no time */
    double value;       /* in the field's DCGM unit */
    uint32_t series;    /* index into series */
};

struct pflex_tm_limits {
    size_t max_line;    /* bytes in one line (default 65536) */
    size_t max_series;  /* default 10,000,000 */
    size_t max_samples; /* default 100,000,000 */
    size_t max_fetch;   /* bytes one URL may return (default 256 MiB) */
    long timeout_ms;    /* whole fetch (default 10000) */
};

typedef struct pflex_tm_store {
    size_t nseries;
    struct pflex_tm_series *series;
    size_t nsamples;
    struct pflex_tm_sample *samples;
    size_t skipped;     /* samples of metrics pflex does not know, and blanks */
    void *priv;         /* storage; do not touch */
} pflex_tm_t;

/* An empty store; lim NULL or zero fields take the defaults. */
pflex_tm_t *pflex_tm_create(const struct pflex_tm_limits *lim);
void pflex_tm_destroy(pflex_tm_t *t);

/* Options of one read. */
struct pflex_tm_read_opts {
    enum pflex_tm_format format;    /* PFLEX_TMF_AUTO: detect from the content */
    const char *job;                /* every sample of this input belongs to job (or NULL) */
    const char *host;               /* host for inputs that name none (or NULL: "") */
    double time0_s;                 /* time of samples without one (a scrape's number) */
    int smi_local_time;             /* nvidia-smi's stamps are in the process's local zone
                                     * (TZ, mktime), not UTC: nvidia-smi writes its host's
                                     * local time with no zone */
};

/* Add the samples in buf[0..len) (name for messages).  Returns 0, or -1
 * with err set; on error the store keeps what earlier reads added and
 * nothing of this one. */
int pflex_tm_read_mem(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                      const struct pflex_tm_read_opts *o, pflex_error_t *err);
/* Same from a file ("-": standard input). */
int pflex_tm_read_file(pflex_tm_t *t, const char *path, const struct pflex_tm_read_opts *o,
                       pflex_error_t *err);
/* Same from an http:// or https:// URL (libcurl, bounded by the store's
 * timeout_ms and max_fetch; an HTTP status >= 400 is an error). */
int pflex_tm_fetch(pflex_tm_t *t, const char *url, const struct pflex_tm_read_opts *o,
                   pflex_error_t *err);
/* Add one sample (job, uuid may be NULL; host NULL = ""; gpu -1 = none;
 * field an enum pflex_dcgm).  Returns 0, or -1 with err (limits, memory). */
int pflex_tm_add(pflex_tm_t *t, const char *job, const char *host, int gpu, const char *uuid,
                 int field, double time_s, double value, pflex_error_t *err);

/* Live sampling through a GPU backend (pflex/hw/gpu.h: NVML with Hopper GPM
 * metrics, or any other): one sample of every GPU of g at time_s, each
 * field the backend reports (power, energy, the enforced limit, clocks,
 * utilisations, profiling ratios, PCIe/NVLink rates) added as a DCGM field.
 * Reads only; never sets a limit.  Returns 0, or -1 with err. */
struct pflex_gpu;
int pflex_tm_sample_gpus(pflex_tm_t *t, struct pflex_gpu *g, const char *host, const char *job,
                         double time_s, pflex_error_t *err);

/* n samples of every GPU of g, interval_ms apart (the first at once, no
 * wait after the last), each stamped with the wall clock, then the store
 * sorted (pflex_tm_sort).  Reads only.  Returns 0, or -1 with err. */
int pflex_tm_sample_gpus_every(pflex_tm_t *t, struct pflex_gpu *g, const char *host,
                               const char *job, long n, double interval_ms, pflex_error_t *err);

/* True when s looks like a URL pflex fetches. */
int pflex_tm_is_url(const char *s);

/* Job map (docs/telemetry.md): CSV with columns job, gpu and optional host;
 * gpu is an index ("3") or a UUID ("GPU-..."), host empty or "*" = any.
 * One row per GPU of a job. */
typedef struct pflex_tm_jobmap pflex_tm_jobmap_t;
int pflex_tm_jobmap_read_file(const char *path, pflex_tm_jobmap_t **out, pflex_error_t *err);
int pflex_tm_jobmap_read_mem(const char *buf, size_t len, const char *name,
                             pflex_tm_jobmap_t **out, pflex_error_t *err);
void pflex_tm_jobmap_destroy(pflex_tm_jobmap_t *m);
/* Give every series without a job the job the map names for its host and
 * GPU (a UUID row matches by UUID, an index row by host and index).
 * Returns the number of series still without a job. */
size_t pflex_tm_jobmap_apply(pflex_tm_t *t, const pflex_tm_jobmap_t *m);

/* Sort samples by (job, host, gpu, field, time), stable; series order too.
 * After it, samples of one series stand together in time order. */
int pflex_tm_sort(pflex_tm_t *t, pflex_error_t *err);

/* pflex's long CSV: job,host,gpu,uuid,time_s,field,value (field = DCGM
 * name).  Returns 0 or -1 on a write error. */
int pflex_tm_write_csv(const pflex_tm_t *t, FILE *f);

#endif
