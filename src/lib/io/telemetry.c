/* telemetry.c — the telemetry store: DCGM fields, series, samples, format
 * detection, the job map and pflex's long CSV (reader and writer). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include "pflex/io/csv.h"
#include "pflex/io/sweep.h"
#include "pflex/util/fmt.h"
#include "lib/io/telemetry_impl.h"
#include "lib/util/grow.h"

static const struct pflex_dcgm_info fields[PFLEX_DCGM_COUNT] = {
    [PFLEX_DCGM_SM_CLOCK] = {"DCGM_FI_DEV_SM_CLOCK", 100, "SMCLK", "MHz"},
    [PFLEX_DCGM_MEM_CLOCK] = {"DCGM_FI_DEV_MEM_CLOCK", 101, "MMCLK", "MHz"},
    [PFLEX_DCGM_MAX_SM_CLOCK] = {"DCGM_FI_DEV_MAX_SM_CLOCK", 110, "MSMCK", "MHz"},
    [PFLEX_DCGM_CLOCKS_EVENT_REASONS] = {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 112, "DVCCTR",
                                         "bitmask"},
    [PFLEX_DCGM_GPU_TEMP] = {"DCGM_FI_DEV_GPU_TEMP", 150, "TMPTR", "C"},
    [PFLEX_DCGM_POWER_USAGE] = {"DCGM_FI_DEV_POWER_USAGE", 155, "POWER", "W"},
    [PFLEX_DCGM_TOTAL_ENERGY] = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 156, "TOTEC", "mJ"},
    [PFLEX_DCGM_POWER_USAGE_INSTANT] = {"DCGM_FI_DEV_POWER_USAGE_INSTANT", 157, "POWEI", "W"},
    [PFLEX_DCGM_POWER_LIMIT] = {"DCGM_FI_DEV_POWER_MGMT_LIMIT", 160, "PMLMT", "W"},
    [PFLEX_DCGM_POWER_LIMIT_MIN] = {"DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", 161, "PMMIN", "W"},
    [PFLEX_DCGM_POWER_LIMIT_MAX] = {"DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", 162, "PMMAX", "W"},
    [PFLEX_DCGM_ENFORCED_LIMIT] = {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 164, "EPLMT", "W"},
    [PFLEX_DCGM_GPU_UTIL] = {"DCGM_FI_DEV_GPU_UTIL", 203, "GPUTL", "%"},
    [PFLEX_DCGM_MEM_COPY_UTIL] = {"DCGM_FI_DEV_MEM_COPY_UTIL", 204, "MCUTL", "%"},
    [PFLEX_DCGM_FB_USED] = {"DCGM_FI_DEV_FB_USED", 252, "FBUSD", "MiB"},
    [PFLEX_DCGM_GR_ENGINE_ACTIVE] = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1001, "GRACT", "ratio"},
    [PFLEX_DCGM_SM_ACTIVE] = {"DCGM_FI_PROF_SM_ACTIVE", 1002, "SMACT", "ratio"},
    [PFLEX_DCGM_SM_OCCUPANCY] = {"DCGM_FI_PROF_SM_OCCUPANCY", 1003, "SMOCC", "ratio"},
    [PFLEX_DCGM_TENSOR_ACTIVE] = {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004, "TENSO", "ratio"},
    [PFLEX_DCGM_DRAM_ACTIVE] = {"DCGM_FI_PROF_DRAM_ACTIVE", 1005, "DRAMA", "ratio"},
    [PFLEX_DCGM_FP64_ACTIVE] = {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", 1006, "FP64A", "ratio"},
    [PFLEX_DCGM_FP32_ACTIVE] = {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", 1007, "FP32A", "ratio"},
    [PFLEX_DCGM_FP16_ACTIVE] = {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", 1008, "FP16A", "ratio"},
    [PFLEX_DCGM_PCIE_TX_BYTES] = {"DCGM_FI_PROF_PCIE_TX_BYTES", 1009, "PCITX", "bytes/s"},
    [PFLEX_DCGM_PCIE_RX_BYTES] = {"DCGM_FI_PROF_PCIE_RX_BYTES", 1010, "PCIRX", "bytes/s"},
    [PFLEX_DCGM_NVLINK_TX_BYTES] = {"DCGM_FI_PROF_NVLINK_TX_BYTES", 1011, "NVLTX", "bytes/s"},
    [PFLEX_DCGM_NVLINK_RX_BYTES] = {"DCGM_FI_PROF_NVLINK_RX_BYTES", 1012, "NVLRX", "bytes/s"},
};

const struct pflex_dcgm_info *pflex_dcgm_info(enum pflex_dcgm f)
{
    return (unsigned)f < PFLEX_DCGM_COUNT ? &fields[f] : NULL;
}

static int eq(const char *s, size_t len, const char *z)
{
    return strlen(z) == len && memcmp(s, z, len) == 0;
}

int pflex_dcgm_by_name(const char *s, size_t len)
{
    for (int i = 0; i < PFLEX_DCGM_COUNT; i++)
        if (eq(s, len, fields[i].name))
            return i;
    /* dcgm-exporter before 3.x and DCGM itself spell it THROTTLE. */
    if (eq(s, len, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"))
        return PFLEX_DCGM_CLOCKS_EVENT_REASONS;
    return -1;
}

int pflex_dcgm_by_tag(const char *s, size_t len)
{
    for (int i = 0; i < PFLEX_DCGM_COUNT; i++)
        if (eq(s, len, fields[i].tag))
            return i;
    if (eq(s, len, "PWR"))
        return PFLEX_DCGM_POWER_USAGE;
    return -1;
}

int pflex_dcgm_by_id(long id)
{
    for (int i = 0; i < PFLEX_DCGM_COUNT; i++)
        if (fields[i].id == id)
            return i;
    return -1;
}

int pflex_dcgm_is_blank(double v)
{
    /* DCGM_INT64_BLANK = 0x7ffffffffffffff0 and up (NOT_FOUND, NOT_SUPPORTED,
     * NOT_PERMISSIONED ...); as doubles they all round to about 9.2234e18.
     * DCGM_FP64_BLANK = 2^47 and the next few. */
    if (v >= 9223372036854775792.0 * (1 - 1e-15))
        return 1;
    return v >= 140737488355328.0 && v <= 140737488355328.0 + 15;
}

static const char *const format_names[PFLEX_TMF_COUNT] = {
    "auto", "nvidia-smi", "dcgmi", "prometheus", "prometheus-json", "pflex",
};

const char *pflex_tm_format_name(enum pflex_tm_format f)
{
    return (unsigned)f < PFLEX_TMF_COUNT ? format_names[f] : "?";
}

int pflex_tm_format_parse(const char *s, enum pflex_tm_format *out)
{
    for (int i = 0; i < PFLEX_TMF_COUNT; i++)
        if (!strcmp(s, format_names[i])) {
            *out = (enum pflex_tm_format)i;
            return 0;
        }
    if (!strcmp(s, "dcgm-exporter") || !strcmp(s, "prom")) {
        *out = PFLEX_TMF_PROM;
        return 0;
    }
    if (!strcmp(s, "dmon")) {
        *out = PFLEX_TMF_DMON;
        return 0;
    }
    if (!strcmp(s, "smi")) {
        *out = PFLEX_TMF_SMI;
        return 0;
    }
    return -1;
}

/* ---- lines and numbers ---- */

void tm_lines_init(struct tm_lines *l, const char *buf, size_t len, const char *name, size_t max)
{
    memset(l, 0, sizeof *l);
    l->p = buf;
    l->end = buf + len;
    l->name = name;
    l->line = 0;
    l->max = max;
    l->fd = -1;
    l->size = len;
    /* A UTF-8 byte-order mark. */
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        l->p += 3;
}

/* Streaming: each read takes at most STREAM_CHUNK bytes, so that what is
 * split is still in the cache (and no page of the file is mapped: on the
 * machines pflex runs on, a page's first touch costs more than its
 * copy).  The buffer holds a chunk and the longest line the whole-file
 * readers let through (PFLEX_LINE_MAX_BYTES, pflex_read_all's bound). */
enum { STREAM_CHUNK = 256u << 10 };

/* Read more after fill, keeping [*keep, fill) (moved to the front); end
 * becomes the end of the last whole line.  1 more came, 0 the file ended
 * before (eof set), -1 with err. */
static int stream_fill(struct tm_lines *l, const char **keep, pflex_error_t *err)
{
    size_t k = (size_t)(*keep - l->buf), pp = (size_t)(l->p - l->buf),
           pe = (size_t)(l->end - l->buf);
    if (k) {
        memmove(l->buf, l->buf + k, l->fill - k);
        l->fill -= k;
        l->off += k;
        pp = pp > k ? pp - k : 0;
        pe = pe > k ? pe - k : 0;
    }
    if (l->eof) {
        l->p = l->buf + pp;
        l->end = l->buf + pe;
        *keep = l->buf;
        return 0;
    }
    if (l->cap - l->fill < STREAM_CHUNK) {
        size_t ncap = l->fill + STREAM_CHUNK;
        char *nb = realloc(l->buf, ncap);
        if (!nb)
            return pflex_error_set(err, "%s: out of memory", l->name);
        l->buf = nb;
        l->cap = ncap;
    }
    ssize_t got;
    do
        got = read(l->fd, l->buf + l->fill, STREAM_CHUNK);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        return pflex_error_set(err, "%s: read error: %s", l->name, strerror(errno));
    size_t from = l->fill;
    l->fill += (size_t)got;
    if (got == 0)
        l->eof = 1;
    /* whole lines only: a record the tokenizer reads never ends in a cut */
    size_t e = l->fill;
    if (!l->eof) {
        while (e > from && l->buf[e - 1] != '\n')
            e--;
        if (e == from)
            e = pe;
    }
    l->p = l->buf + pp;
    l->end = l->buf + e;
    *keep = l->buf;
    return got > 0;
}

int tm_lines_stream(struct tm_lines *l, int fd, unsigned long long size, size_t first,
                    const char *name, size_t max, pflex_error_t *err)
{
    tm_lines_init(l, "", 0, name, max);
    l->fd = fd;
    l->size = size;
    l->cap = PFLEX_LINE_MAX_BYTES + 2 + STREAM_CHUNK;
    if (!(l->buf = malloc(l->cap)))
        return pflex_error_set(err, "%s: out of memory", name);
    l->p = l->end = l->buf;
    const char *keep = l->buf;
    while (l->fill < first && !l->eof) {
        int r = stream_fill(l, &keep, err);
        if (r < 0)
            return -1;
    }
    if (l->end - l->p >= 3 && memcmp(l->p, "\xEF\xBB\xBF", 3) == 0)
        l->p += 3;
    return 0;
}

void tm_lines_fini(struct tm_lines *l)
{
    free(l->buf);
    l->buf = NULL;
}

int tm_lines_more(struct tm_lines *l, const char **from, pflex_error_t *err)
{
    size_t have = (size_t)(l->end - *from);
    for (;;) {
        int r = stream_fill(l, from, err);
        if (r < 0)
            return -1;
        if ((size_t)(l->end - *from) > have)
            return 1;
        if (r == 0)
            return 0;
    }
}

unsigned long long tm_lines_left(const struct tm_lines *l)
{
    if (l->fd < 0)
        return (unsigned long long)(l->end - l->p);
    return l->size - l->off - (unsigned long long)(l->p - l->buf);
}

const char *tm_lines_peek(const struct tm_lines *l, unsigned long long off, size_t n, char *tmp)
{
    if (l->fd < 0)
        return l->p + off;
    unsigned long long at = l->off + (unsigned long long)(l->p - l->buf) + off;
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(l->fd, tmp + got, n - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return NULL;
        got += (size_t)r;
    }
    return tmp;
}

/* Streaming: the next line is not all in [p, end) yet.  Reads until it
 * is, or the file ends; a line longer than PFLEX_LINE_MAX_BYTES is the
 * error pflex_read_all gives.  1 with a line in [p, end), 0 at the end,
 * -1 with err. */
static int stream_line(struct tm_lines *l, pflex_error_t *err)
{
    while (l->p >= l->end) {
        const char *keep = l->p;
        int r = stream_fill(l, &keep, err);
        if (r < 0)
            return -1;
        if (l->p < l->end)
            return 1;
        size_t open = l->fill - (size_t)(l->p - l->buf);
        if (open > PFLEX_LINE_MAX_BYTES)
            return pflex_error_set(err, "%s:%u: line longer than %u bytes (is it a text file?)",
                                   l->name, l->line + 1, (unsigned)PFLEX_LINE_MAX_BYTES);
        if (r == 0) {
            l->end = l->buf + l->fill;  /* the last line, without its '\n' */
            return l->p < l->end;
        }
    }
    return 1;
}

/* The line at p (numbered) is longer than max: the message; when
 * streaming, a line past PFLEX_LINE_MAX_BYTES gets pflex_read_all's, as
 * a file read whole would have. */
static int line_long(struct tm_lines *l, pflex_error_t *err)
{
    if (l->fd >= 0) {
        const char *nl = memchr(l->p, '\n', (size_t)(l->end - l->p));
        if ((size_t)((nl ? nl : l->end) - l->p) > PFLEX_LINE_MAX_BYTES)
            return pflex_error_set(err, "%s:%u: line longer than %u bytes (is it a text file?)",
                                   l->name, l->line, (unsigned)PFLEX_LINE_MAX_BYTES);
    }
    return pflex_error_set(err, "%s:%u: line longer than %zu bytes", l->name, l->line, l->max);
}

int tm_lines_next(struct tm_lines *l, const char **s, size_t *len, pflex_error_t *err)
{
    if (l->p >= l->end) {
        int r = l->fd < 0 ? 0 : stream_line(l, err);
        if (r <= 0)
            return r;
    }
    size_t room = (size_t)(l->end - l->p);
    size_t look = room < l->max + 2 ? room : l->max + 2;
    const char *nl = memchr(l->p, '\n', look);
    l->line++;
    size_t n;
    if (nl)
        n = (size_t)(nl - l->p);
    else if (room <= l->max + 1)
        n = room;
    else
        return line_long(l, err);
    *s = l->p;
    l->p += n + (nl ? 1 : 0);
    if (n && (*s)[n - 1] == '\r')
        n--;
    if (n > l->max) {
        l->p = *s;
        return line_long(l, err);
    }
    *len = n;
    return 1;
}

int tm_parse_double(const char *s, size_t len, double *out)
{
    /* Numbers only: pflex_parse_double hands what it does not read itself
     * to strtod, which would take leading spaces, hex, "inf" and "nan". */
    if (len == 0 || len >= 64)
        return -1;
    unsigned c = (unsigned char)s[0];
    if (c - '0' > 9 && c != '+' && c != '-' && c != '.')
        return -1;
    return pflex_parse_double(s, len, out);
}

int tm_parse_index(const char *s, size_t len, long *out)
{
    if (len == 0 || len > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* ---- detection and reading ---- */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

static int starts(const char *p, const char *end, const char *z)
{
    size_t n = strlen(z);
    return (size_t)(end - p) >= n && memcmp(p, z, n) == 0;
}

enum pflex_tm_format pflex_tm_detect(const char *buf, size_t len)
{
    const char *end = buf + len, *p = buf;
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    p = skip_ws(p, end);
    if (p < end && *p == '{')
        return PFLEX_TMF_PROMJSON;
    /* Look at the first lines that say something. */
    for (int lines = 0; p < end && lines < 64; lines++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (starts(p, le, "#Entity") || starts(p, le, "# Entity"))
            return PFLEX_TMF_DMON;
        if (starts(p, le, "# HELP ") || starts(p, le, "# TYPE "))
            return PFLEX_TMF_PROM;
        if (starts(p, le, "DCGM_FI_") || starts(p, le, "dcgm_"))
            return PFLEX_TMF_PROM;
        if (starts(p, le, "job,host,gpu,uuid,time_s,field,value"))
            return PFLEX_TMF_PFLEX;
        if (*p != '#' && le > p) {
            /* An nvidia-smi header names query fields: dotted names or
             * one of the identity columns. */
            const char *q = p;
            while (q < le && (isalnum((unsigned char)*q) || *q == '_' || *q == '.'))
                q++;
            size_t n = (size_t)(q - p);
            if (memchr(p, '.', n) || eq(p, n, "timestamp") || eq(p, n, "index") ||
                eq(p, n, "uuid") || eq(p, n, "name"))
                return PFLEX_TMF_SMI;
            return PFLEX_TMF_AUTO;
        }
        p = skip_ws(nl ? nl + 1 : end, end);
    }
    return PFLEX_TMF_AUTO;
}

int pflex_tm_read_mem(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                      const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    struct pflex_tm_read_opts d = {0};
    if (!o)
        o = &d;
    if (!name)
        name = "-";
    if (len == 0)
        return pflex_error_set(err, "%s: empty file", name);
    enum pflex_tm_format f = o->format;
    if (f == PFLEX_TMF_AUTO && (f = pflex_tm_detect(buf, len)) == PFLEX_TMF_AUTO)
        return pflex_error_set(err, "%s:1: not telemetry pflex knows (nvidia-smi CSV, dcgmi "
                               "dmon, Prometheus text or API JSON); --format forces one", name);
    struct tm_mark mark;
    tm_mark(t, &mark);
    int rc;
    switch (f) {
    case PFLEX_TMF_SMI: rc = tm_read_smi(t, buf, len, name, o, err); break;
    case PFLEX_TMF_DMON: rc = tm_read_dmon(t, buf, len, name, o, err); break;
    case PFLEX_TMF_PROM: rc = tm_read_prom(t, buf, len, name, o, err); break;
    case PFLEX_TMF_PROMJSON: rc = tm_read_promjson(t, buf, len, name, o, err); break;
    case PFLEX_TMF_PFLEX: rc = tm_read_pflex(t, buf, len, name, o, err); break;
    default: return pflex_error_set(err, "%s: unknown format", name);
    }
    if (rc < 0)
        tm_rollback(t, &mark);  /* nothing of a failed read stays */
    return rc;
}

/* A file of 1 MiB or more in nvidia-smi or Prometheus text (told from its
 * first MiB, or forced): read as it is split (tm_lines_stream), never
 * whole.  1 done (0 or -1 in *rc), 0 when the file is not one of those:
 * the caller reads it whole. */
static int read_streamed(pflex_tm_t *t, const char *path, const struct pflex_tm_read_opts *o,
                         int *rc, pflex_error_t *err)
{
    struct stat st;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (1 << 20) ||
        (unsigned long long)st.st_size > PFLEX_INPUT_MAX_BYTES) {
        close(fd);
        return 0;
    }
    struct tm_lines ln;
    struct pflex_tm_read_opts d = {0};
    if (!o)
        o = &d;
    if (tm_lines_stream(&ln, fd, (unsigned long long)st.st_size, 1u << 20, path,
                        tm_limits(t)->max_line, err) < 0) {
        tm_lines_fini(&ln);
        close(fd);
        *rc = -1;
        return 1;
    }
    enum pflex_tm_format f = o->format;
    if (f == PFLEX_TMF_AUTO)
        f = pflex_tm_detect(ln.buf, (size_t)(ln.end - ln.buf));
    if (f != PFLEX_TMF_SMI && f != PFLEX_TMF_PROM) {
        tm_lines_fini(&ln);
        close(fd);
        return 0;
    }
    struct tm_mark mark;
    tm_mark(t, &mark);
    *rc = f == PFLEX_TMF_SMI ? tm_read_smi_lines(t, &ln, path, o, err)
                             : tm_read_prom_lines(t, &ln, path, o, err);
    if (*rc < 0)
        tm_rollback(t, &mark);
    tm_lines_fini(&ln);
    close(fd);
    return 1;
}

int pflex_tm_read_file(pflex_tm_t *t, const char *path, const struct pflex_tm_read_opts *o,
                       pflex_error_t *err)
{
    int rc;
    if (strcmp(path, "-") && read_streamed(t, path, o, &rc, err))
        return rc;
    const char *buf;
    size_t len, mapped;
    if (pflex_map_all(path, &buf, &len, &mapped, err) < 0)
        return -1;
    rc = pflex_tm_read_mem(t, buf, len, strcmp(path, "-") ? path : "<stdin>", o, err);
    pflex_unmap_all(buf, mapped);
    return rc;
}

/* ---- pflex's long CSV ---- */

int pflex_tm_write_csv(const pflex_tm_t *t, FILE *f)
{
    fputs("job,host,gpu,uuid,time_s,field,value\n", f);
    for (size_t i = 0; i < t->nsamples; i++) {
        const struct pflex_tm_sample *m = &t->samples[i];
        const struct pflex_tm_series *s = &t->series[m->series];
        pflex_csv_write_field(f, s->job ? s->job : "");
        fputc(',', f);
        pflex_csv_write_field(f, s->host);
        if (s->gpu >= 0)
            fprintf(f, ",%d,", s->gpu);
        else
            fputs(",,", f);
        pflex_csv_write_field(f, s->uuid ? s->uuid : "");
        /* the shortest text that reads back as the same double */
        char num[PFLEX_FMT_G_MAX];
        fputc(',', f);
        fwrite(num, 1, (size_t)pflex_fmt_shortest(num, m->time_s), f);
        fputc(',', f);
        fputs(fields[s->field].name, f);
        fputc(',', f);
        fwrite(num, 1, (size_t)pflex_fmt_shortest(num, m->value), f);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

static int col_index(const pflex_csv_t *c, const char *z)
{
    for (size_t i = 0; i < c->nfields; i++)
        if (pflex_csv_field_is(&c->fields[i], z))
            return (int)i;
    return -1;
}

int tm_read_pflex(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                  const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    static const char *const cols[7] = {"job", "host", "gpu", "uuid", "time_s", "field", "value"};
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, name);
    int idx[7], got, rc = -1;
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (got == 0)
            pflex_error_set(err, "%s: empty file", name);
        goto out;
    }
    for (int i = 0; i < 7; i++)
        if ((idx[i] = col_index(&c, cols[i])) < 0) {
            pflex_error_set(err, "%s:%u: missing column '%s'", name, c.line, cols[i]);
            goto out;
        }
    while ((got = pflex_csv_next(&c, err)) > 0) {
        const struct pflex_csv_field *f = c.fields;
        for (int i = 0; i < 7; i++)
            if ((size_t)idx[i] >= c.nfields) {
                pflex_error_set(err, "%s:%u: %zu fields, the header has more", name, c.line,
                                c.nfields);
                goto out;
            }
        struct tm_key k = {0};
        const struct pflex_csv_field *fj = &f[idx[0]], *fh = &f[idx[1]], *fg = &f[idx[2]],
                                     *fu = &f[idx[3]], *ft = &f[idx[4]], *ff = &f[idx[5]],
                                     *fv = &f[idx[6]];
        if (fj->len) {
            k.job = fj->s;
            k.job_len = fj->len;
        } else if (o->job) {
            k.job = o->job;
            k.job_len = strlen(o->job);
        }
        k.host = fh->s;
        k.host_len = fh->len;
        if (fu->len) {
            k.uuid = fu->s;
            k.uuid_len = fu->len;
        }
        k.gpu = -1;
        if (fg->len && tm_parse_index(fg->s, fg->len, &k.gpu) < 0) {
            pflex_error_set(err, "%s:%u: column 'gpu': '%.*s' is not a GPU index", name, c.line,
                            (int)(fg->len > 40 ? 40 : fg->len), fg->s);
            goto out;
        }
        if ((k.field = pflex_dcgm_by_name(ff->s, ff->len)) < 0) {
            pflex_error_set(err, "%s:%u: column 'field': '%.*s' is not a DCGM field pflex knows",
                            name, c.line, (int)(ff->len > 60 ? 60 : ff->len), ff->s);
            goto out;
        }
        double tv, v;
        if (tm_parse_double(ft->s, ft->len, &tv) < 0 || tm_parse_double(fv->s, fv->len, &v) < 0) {
            pflex_error_set(err, "%s:%u: time_s or value is not a finite number", name, c.line);
            goto out;
        }
        if (tm_add(t, &k, tv, v, name, c.line, err) < 0)
            goto out;
    }
    rc = got < 0 ? -1 : 0;
out:
    pflex_csv_fini(&c);
    return rc;
}

/* ---- the job map ---- */

struct maprow {
    const char *job, *host, *uuid;  /* host "" = any */
    long gpu;                       /* -1 when the row names a UUID */
};

struct pflex_tm_jobmap {
    size_t n;
    struct maprow *rows;            /* by (host, gpu) */
    struct maprow **by_uuid;
    size_t nuuid;
    char *strings;
};

void pflex_tm_jobmap_destroy(pflex_tm_jobmap_t *m)
{
    if (!m)
        return;
    free(m->rows);
    free(m->by_uuid);
    free(m->strings);
    free(m);
}

static int row_cmp(const void *a, const void *b)
{
    const struct maprow *p = a, *q = b;
    int c = strcmp(p->host, q->host);
    if (c)
        return c;
    return (p->gpu > q->gpu) - (p->gpu < q->gpu);
}

static int uuid_cmp(const void *a, const void *b)
{
    const struct maprow *const *p = a, *const *q = b;
    return strcasecmp((*p)->uuid, (*q)->uuid);
}

int pflex_tm_jobmap_read_mem(const char *buf, size_t len, const char *name,
                             pflex_tm_jobmap_t **out, pflex_error_t *err)
{
    pflex_csv_t c;
    pflex_csv_init(&c, buf, len, name);
    pflex_tm_jobmap_t *m = calloc(1, sizeof *m);
    /* Every string of the map fits in a copy of the file. */
    char *sp = malloc(len + 1);
    size_t cap = 0, used = 0;
    int got, ij, ig, ih, rc = -1;
    *out = NULL;
    if (!m || !sp) {
        free(sp);
        free(m);
        return pflex_error_set(err, "%s: out of memory", name);
    }
    m->strings = sp;
    if ((got = pflex_csv_next(&c, err)) <= 0) {
        if (got == 0)
            pflex_error_set(err, "%s: empty file", name);
        goto out;
    }
    ij = col_index(&c, "job");
    ig = col_index(&c, "gpu");
    ih = col_index(&c, "host");
    if (ij < 0 || ig < 0) {
        pflex_error_set(err, "%s:%u: missing column '%s'", name, c.line, ij < 0 ? "job" : "gpu");
        goto out;
    }
    while ((got = pflex_csv_next(&c, err)) > 0) {
        if ((size_t)ij >= c.nfields || (size_t)ig >= c.nfields ||
            (ih >= 0 && (size_t)ih >= c.nfields)) {
            pflex_error_set(err, "%s:%u: %zu fields, the header has more", name, c.line,
                            c.nfields);
            goto out;
        }
        const struct pflex_csv_field *fj = &c.fields[ij], *fg = &c.fields[ig];
        if (!fj->len || !fg->len) {
            pflex_error_set(err, "%s:%u: empty %s", name, c.line, fj->len ? "gpu" : "job");
            goto out;
        }
        if (pflex_grow((void **)&m->rows, &cap, m->n + 1, sizeof *m->rows)) {
            pflex_error_set(err, "%s:%u: out of memory", name, c.line);
            goto out;
        }
        struct maprow *r = &m->rows[m->n];
        /* the three strings together are never longer than the line */
        r->job = sp + used;
        memcpy(sp + used, fj->s, fj->len);
        sp[used + fj->len] = 0;
        used += fj->len + 1;
        r->host = "";
        if (ih >= 0 && c.fields[ih].len && !pflex_csv_field_is(&c.fields[ih], "*")) {
            r->host = sp + used;
            memcpy(sp + used, c.fields[ih].s, c.fields[ih].len);
            sp[used + c.fields[ih].len] = 0;
            used += c.fields[ih].len + 1;
        }
        r->uuid = NULL;
        r->gpu = -1;
        if (tm_parse_index(fg->s, fg->len, &r->gpu) < 0) {
            if (fg->len < 4 || (strncasecmp(fg->s, "GPU-", 4) && strncasecmp(fg->s, "MIG-", 4))) {
                pflex_error_set(err, "%s:%u: column 'gpu': '%.*s' is neither an index nor a "
                                "UUID (GPU-...)", name, c.line, (int)(fg->len > 40 ? 40 : fg->len),
                                fg->s);
                goto out;
            }
            r->uuid = sp + used;
            memcpy(sp + used, fg->s, fg->len);
            sp[used + fg->len] = 0;
            used += fg->len + 1;
            r->gpu = -1;
        }
        m->n++;
    }
    if (got < 0)
        goto out;
    if (used > len + 1) {   /* cannot happen: fields are parts of lines */
        pflex_error_set(err, "%s: internal error", name);
        goto out;
    }
    if (m->n)
        qsort(m->rows, m->n, sizeof *m->rows, row_cmp);
    m->by_uuid = malloc((m->n ? m->n : 1) * sizeof *m->by_uuid);
    if (!m->by_uuid) {
        pflex_error_set(err, "%s: out of memory", name);
        goto out;
    }
    for (size_t i = 0; i < m->n; i++)
        if (m->rows[i].uuid)
            m->by_uuid[m->nuuid++] = &m->rows[i];
    qsort(m->by_uuid, m->nuuid, sizeof *m->by_uuid, uuid_cmp);
    /* The same GPU mapped twice is ambiguous. */
    for (size_t i = 1; i < m->n; i++)
        if (m->rows[i].gpu >= 0 && m->rows[i - 1].gpu == m->rows[i].gpu &&
            !strcmp(m->rows[i].host, m->rows[i - 1].host) &&
            strcmp(m->rows[i].job, m->rows[i - 1].job)) {
            pflex_error_set(err, "%s: GPU %ld of host '%s' is mapped to both '%s' and '%s'", name,
                            m->rows[i].gpu, m->rows[i].host, m->rows[i - 1].job, m->rows[i].job);
            goto out;
        }
    *out = m;
    m = NULL;
    rc = 0;
out:
    pflex_csv_fini(&c);
    pflex_tm_jobmap_destroy(m);
    return rc;
}

int pflex_tm_jobmap_read_file(const char *path, pflex_tm_jobmap_t **out, pflex_error_t *err)
{
    char *buf;
    size_t len;
    if (pflex_read_all(path, &buf, &len, err) < 0)
        return -1;
    int rc = pflex_tm_jobmap_read_mem(buf, len, strcmp(path, "-") ? path : "<stdin>", out, err);
    free(buf);
    return rc;
}

static const struct maprow *find_row(const pflex_tm_jobmap_t *m, const char *host, long gpu)
{
    struct maprow key = {NULL, host, NULL, gpu};
    if (!m->n)
        return NULL;
    return bsearch(&key, m->rows, m->n, sizeof *m->rows, row_cmp);
}

size_t pflex_tm_jobmap_apply(pflex_tm_t *t, const pflex_tm_jobmap_t *m)
{
    const char *last_src = NULL, *last_copy = NULL;
    size_t left = 0;
    for (size_t i = 0; i < t->nseries; i++) {
        struct pflex_tm_series *s = &t->series[i];
        if (s->job)
            continue;
        const struct maprow *r = NULL;
        if (s->uuid && m->nuuid) {
            struct maprow key = {NULL, "", s->uuid, -1}, *kp = &key;
            struct maprow **f = bsearch(&kp, m->by_uuid, m->nuuid, sizeof *m->by_uuid, uuid_cmp);
            if (f)
                r = *f;
        }
        if (!r && s->gpu >= 0 && !(r = find_row(m, s->host, s->gpu)))
            r = find_row(m, "", s->gpu);
        /* The store owns its strings: the job name is copied once. */
        if (r && r->job != last_src) {
            last_copy = tm_intern(t, r->job, strlen(r->job));
            last_src = last_copy ? r->job : NULL;
        }
        if (r && last_copy)
            s->job = last_copy;
        else
            left++;
    }
    tm_rekey(t);     /* series keys changed: the table must follow */
    return left;
}
