/* telemetry.c — pflex telemetry: read telemetry as the NVIDIA tools write
 * it into per-GPU, per-job samples (SPEC §3, §4). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/tmread.h"
#include "pflex/io/csv.h"
#include "pflex/util/fmt.h"
#include "pflex/hw/gpu.h"
#include "pflex/hw/nvml.h"
#include "pflex/io/telemetry.h"

static const char help[] =
"usage: pflex telemetry [options] FILE|URL...\n"
"       pflex telemetry --nvml [--samples N] [--interval-ms MS] [options]\n"
"\n"
"Reads GPU telemetry as the tools write it and prints per-GPU, per-job\n"
"samples with DCGM field names and units:\n"
"  nvidia-smi --query-gpu=index,power.draw,... --format=csv[,nounits]\n"
"  dcgmi dmon -e 155,203,1005,...\n"
"  dcgm-exporter's /metrics (Prometheus text exposition)\n"
"  Prometheus /api/v1/query and /api/v1/query_range JSON (file or http:// URL)\n"
"  pflex's own long CSV (what --csv writes)\n"
"The format is told from the content; --format forces it.  '-' reads stdin.\n"
"Samples belong to the job of their hpc_job (else pod) label, else to the\n"
"job --job-map gives their host and GPU, else to --job.\n"
"\n"
"options:\n"
"  --format F       auto, nvidia-smi, dcgmi, prometheus, prometheus-json, pflex\n"
"  --job NAME       every sample of these files belongs to job NAME\n"
"  --host NAME      host of inputs that name none (nvidia-smi, dcgmi)\n"
"  --job-map FILE   CSV job,gpu[,host]: gpu an index or a UUID (docs/telemetry.md)\n"
"  --job-from-file  one job per file, named by the file (runs/llama.prom: llama)\n"
"  --max-line N     longest line accepted, bytes (default 65536)\n"
"  --max-series N   most series accepted (default 10000000)\n"
"  --max-bytes N    most bytes one URL may return (default 268435456)\n"
"  --timeout-ms N   limit on one fetch (default 10000)\n"
"  --tz ZONE        zone of nvidia-smi's timestamps, which carry none: UTC\n"
"                   (default), local, +HH:MM or a zone name (Europe/Berlin)\n"
"  --nvml           sample this node's GPUs live through NVML instead (read\n"
"                   only: no limit is set), Hopper GPM metrics included\n"
"  --nvml-lib PATH  NVML library (default: $PFLEX_NVML_LIB, else libnvidia-ml.so.1)\n"
"  --samples N      --nvml: samples per GPU (default 10)\n"
"  --interval-ms MS --nvml: between samples (default 1000).  GPM refreshes\n"
"                   its counters every 100 ms: below that, GPM fields\n"
"                   (DCGM_FI_PROF_*) come only with samples 100 ms or more\n"
"                   after the last that had them (a note on stderr says so)\n"
"  --csv            every sample: job,host,gpu,uuid,time_s,field,value\n"
"  --json           one JSON document: series with their samples\n"
"  -h, --help       this help\n"
"\n"
"The default output is one line per series: samples, mean, min, max.\n"
"\n"
"EXAMPLES\n"
"  nvidia-smi --query-gpu=timestamp,index,power.draw,clocks.sm,utilization.gpu \\\n"
"      --format=csv -l 5 > smi.csv;  pflex telemetry --job llama smi.csv\n"
"  curl -s http://node1:9400/metrics | pflex telemetry --csv - > samples.csv\n"
"  pflex telemetry --json 'http://prom:9090/api/v1/query?query=DCGM_FI_DEV_POWER_USAGE'\n"
"  pflex telemetry --job-map jobs.csv dmon.txt\n"
"  pflex telemetry --nvml --samples 60 --job llama --csv > live.csv\n"
"\n"
"exit: 0 ok, 2 bad input (file:line: what is wrong on stderr), 1 system error.\n";

/* s[0..n) left-justified in w columns (printf's "%-*s") at p. */
static char *put_left(char *p, const char *s, size_t n, int w)
{
    memcpy(p, s, n);
    for (p += n; (int)n < w; n++)
        *p++ = ' ';
    return p;
}

/* s[0..n) right-justified in w columns (printf's "%*s") at p. */
static char *put_right(char *p, const char *s, size_t n, int w)
{
    for (; (int)n < w; n++)
        *p++ = ' ';
    memcpy(p, s, strlen(s));
    return p + strlen(s);
}

/* " %12.6g" at p, by pflex_fmt_g: the same text, without printf's
 * multi-precision conversion. */
static char *put_g(char *p, double v)
{
    char b[PFLEX_FMT_G_MAX];
    int n = pflex_fmt_g(b, v, 6);
    *p++ = ' ';
    return put_right(p, b, (size_t)n, 12);
}

/* One series' line, as "%-24s %-12s %5s %-36s %8zu %12.6g %12.6g
 * %12.6g\n" gives it, built in a buffer and written at once. */
static void print_series(const struct pflex_tm_series *s, size_t n, double mean, double lo,
                         double hi)
{
    const char *job = s->job ? s->job : "-", *host = s->host[0] ? s->host : "-";
    const char *field = pflex_dcgm_info(s->field)->name;
    size_t lj = strlen(job), lh = strlen(host), lf = strlen(field);
    char line[512], num[32], *p = line;
    if (lj + lh + lf > sizeof line - 160) {
        char gpu[16];
        snprintf(gpu, sizeof gpu, s->gpu >= 0 ? "%d" : "-", s->gpu);
        printf("%-24s %-12s %5s %-36s %8zu %12.6g %12.6g %12.6g\n", job, host, gpu, field, n,
               mean, lo, hi);
        return;
    }
    p = put_left(p, job, lj, 24);
    *p++ = ' ';
    p = put_left(p, host, lh, 12);
    *p++ = ' ';
    int k = s->gpu >= 0 ? snprintf(num, sizeof num, "%d", s->gpu) : (int)strlen(strcpy(num, "-"));
    p = put_right(p, num, (size_t)k, 5);
    *p++ = ' ';
    p = put_left(p, field, lf, 36);
    *p++ = ' ';
    k = snprintf(num, sizeof num, "%zu", n);
    p = put_right(p, num, (size_t)k, 8);
    p = put_g(p, mean);
    p = put_g(p, lo);
    p = put_g(p, hi);
    *p++ = '\n';
    fwrite(line, 1, (size_t)(p - line), stdout);
}

static void print_table(const pflex_tm_t *t)
{
    printf("%-24s %-12s %5s %-36s %8s %12s %12s %12s\n", "job", "host", "gpu", "field", "samples",
           "mean", "min", "max");
    for (size_t i = 0, b = 0; i < t->nseries; i++) {
        size_t e = b;
        double sum = 0, lo = INFINITY, hi = -INFINITY;
        while (e < t->nsamples && t->samples[e].series == i) {
            double v = t->samples[e].value;
            sum += v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            e++;
        }
        print_series(&t->series[i], e - b, e > b ? sum / (double)(e - b) : NAN, lo, hi);
        b = e;
    }
    printf("%zu series, %zu samples, %zu skipped (unknown metrics, blanks)\n", t->nseries,
           t->nsamples, t->skipped);
}

static json_t *to_json(const pflex_tm_t *t)
{
    json_t *doc = json_object(), *arr = json_array();
    for (size_t i = 0, b = 0; i < t->nseries; i++) {
        const struct pflex_tm_series *s = &t->series[i];
        json_t *o = json_object(), *pts = json_array();
        json_object_set_new(o, "job", s->job ? json_string(s->job) : json_null());
        json_object_set_new(o, "host", json_string(s->host));
        json_object_set_new(o, "gpu", s->gpu >= 0 ? json_integer(s->gpu) : json_null());
        json_object_set_new(o, "uuid", s->uuid ? json_string(s->uuid) : json_null());
        json_object_set_new(o, "field", json_string(pflex_dcgm_info(s->field)->name));
        json_object_set_new(o, "unit", json_string(pflex_dcgm_info(s->field)->unit));
        while (b < t->nsamples && t->samples[b].series == i) {
            json_t *p = json_array();
            json_array_append_new(p, json_real(t->samples[b].time_s));
            json_array_append_new(p, json_real(t->samples[b].value));
            json_array_append_new(pts, p);
            b++;
        }
        json_object_set_new(o, "samples", pts);
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "series", arr);
    json_object_set_new(doc, "samples", json_integer((json_int_t)t->nsamples));
    json_object_set_new(doc, "skipped", json_integer((json_int_t)t->skipped));
    return doc;
}

/* Live samples of this node's GPUs through NVML into a new store. */
static int sample_nvml(const struct tmread *r, const char *lib, double samples, double interval_ms,
                       pflex_tm_t **out)
{
    pflex_error_t err;
    pflex_gpu_t g;
    char host[256] = "";
    const char *h = r->ro.host;
    if (!h) {
        if (gethostname(host, sizeof host - 1) != 0)
            host[0] = 0;
        h = host;
    }
    if (!lib) {
        const char *env = getenv("PFLEX_NVML_LIB");
        lib = env && *env ? env : PFLEX_NVML_LIB_DEFAULT;
    }
    if (pflex_nvml_open(lib, &g, &err) < 0) {
        cli_error("telemetry", "%s", err.text);
        return PFLEX_EXIT_INTERNAL;
    }
    pflex_tm_t *t = pflex_tm_create(&r->lim);
    int rc = t ? PFLEX_EXIT_OK : PFLEX_EXIT_INTERNAL;
    if (t && pflex_tm_sample_gpus_every(t, &g, h, r->ro.job, (long)samples, interval_ms, &err)
                 < 0) {
        cli_error("telemetry", "%s", err.text);
        rc = PFLEX_EXIT_INTERNAL;
    }
    pflex_gpu_close(&g);
    if (rc != PFLEX_EXIT_OK) {
        pflex_tm_destroy(t);
        return rc;
    }
    *out = t;
    return rc;
}

int cmd_telemetry(int argc, char **argv)
{
    static const struct option opts[] = {
        TMREAD_LONG_OPTIONS,
        {"nvml", no_argument, NULL, 'N'},
        {"nvml-lib", required_argument, NULL, 'L'},
        {"samples", required_argument, NULL, 'S'},
        {"interval-ms", required_argument, NULL, 'I'},
        {"csv", no_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct tmread r;
    int csv = 0, json = 0, nvml = 0, c;
    const char *lib = NULL;
    double samples = 10, interval_ms = 1000;
    tmread_init(&r);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int t = tmread_option(&r, "telemetry", c, optarg);
        if (t < 0)
            return PFLEX_EXIT_BAD_INPUT;
        if (t > 0)
            continue;
        switch (c) {
        case 'N': nvml = 1; break;
        case 'L': lib = optarg; break;
        case 'S':
            if (cli_parse_double("telemetry", "--samples", optarg, 1, 1e7, &samples) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case 'I':
            if (cli_parse_double("telemetry", "--interval-ms", optarg, 0, 3.6e6, &interval_ms) < 0)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case 'C': csv = 1; break;
        case 'J': json = 1; break;
        case 'h': return cli_help(help);
        default: return cli_usage_error("telemetry", "bad option");
        }
    }
    if (csv && json)
        return cli_usage_error("telemetry", "--csv and --json exclude each other");
    /* a line a series or a sample: written in large blocks */
    static char obuf[1 << 20];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    pflex_tm_t *t = NULL;
    if (nvml && optind < argc)
        return cli_usage_error("telemetry", "--nvml samples live: no FILE or URL with it");
    if (nvml && samples > 1 && interval_ms < PFLEX_NVML_GPM_MIN_INTERVAL_MS)
        fprintf(stderr, "pflex telemetry: note: --interval-ms %g is below GPM's %d ms refresh: "
                "GPM fields (DCGM_FI_PROF_*) come only with samples %d ms or more after the "
                "last that had them\n", interval_ms, PFLEX_NVML_GPM_MIN_INTERVAL_MS,
                PFLEX_NVML_GPM_MIN_INTERVAL_MS);
    int rc = nvml ? sample_nvml(&r, lib, samples, interval_ms, &t)
                  : tmread_load(&r, "telemetry", argc - optind, argv + optind, &t);
    if (rc != PFLEX_EXIT_OK)
        return rc;
    if (json)
        rc = cli_json_print(to_json(t)) < 0 ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_OK;
    else if (csv)
        rc = pflex_tm_write_csv(t, stdout) < 0 ? PFLEX_EXIT_INTERNAL : PFLEX_EXIT_OK;
    else
        print_table(t);
    if (fflush(stdout) != 0)
        rc = PFLEX_EXIT_INTERNAL;
    pflex_tm_destroy(t);
    return rc;
}
