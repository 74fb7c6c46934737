/* telemetry_prom.c — dcgm-exporter's Prometheus text exposition (format
 * 0.0.4).
 *
 *   # HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
 *   # TYPE DCGM_FI_DEV_SM_CLOCK gauge
 *   DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-...",Hostname="n1",pod="p"} 1980 1714564800000
 *
 * Labels come in any order, values escape \\ \" and \n.  The labels pflex
 * reads: gpu (index), UUID, Hostname or hostname, hpc_job, pod, GPU_I_ID
 * (a MIG instance: gpu = 10000 + 100 x gpu + GPU_I_ID).  A sample's
 * job is its hpc_job label, else its pod label, else the read's job.
 * Metrics other than the DCGM fields pflex knows are skipped and counted, so
 * are blank sentinels and NaN.  The optional timestamp is in milliseconds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/io/telemetry_impl.h"

#define MAX_LABELS 64

struct label {
    const char *name, *value;
    size_t name_len, value_len;
};

static int is_name_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static int is_name_char(int c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

static int lname_is(const struct label *l, const char *z)
{
    size_t n = strlen(z);
    return l->name_len == n && !memcmp(l->name, z, n);
}

/* Prometheus float: a number, NaN, +Inf, -Inf. 1: number, 0: NaN or
 * infinite (no data), -1: bad. */
static int prom_value(const char *s, size_t n, double *v)
{
    if ((n == 3 && !memcmp(s, "NaN", 3)) || (n == 4 && (!memcmp(s, "+Inf", 4) ||
                                                        !memcmp(s, "-Inf", 4))) ||
        (n == 3 && !memcmp(s, "Inf", 3)))
        return 0;
    return tm_parse_double(s, n, v) < 0 ? -1 : 1;
}

/* Series in a scrape, about: one a sample line, sized by the first few
 * (a scrape names each series once).  Only sizes the store's table. */
static size_t estimate_series(const char *buf, size_t have, unsigned long long len)
{
    const char *p = buf, *end = buf + (have < (64u << 10) ? have : (64u << 10));
    size_t lines = 0, bytes = 0;
    while (p < end && lines < 64) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        if (*p != '#') {
            lines++;
            bytes += (size_t)(nl - p) + 1;
        }
        p = nl + 1;
    }
    return lines ? (size_t)(len / (bytes / lines)) : 0;
}

int tm_read_prom(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                 const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    struct tm_lines ln;
    tm_lines_init(&ln, buf, len, name, tm_limits(t)->max_line);
    return tm_read_prom_lines(t, &ln, name, o, err);
}

int tm_read_prom_lines(pflex_tm_t *t, struct tm_lines *lp, const char *name,
                       const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    struct tm_lines ln = *lp;
    const char *s;
    size_t n;
    int got;
    size_t max_line = tm_limits(t)->max_line;
    /* Unescaped label values of one line: never longer than the line. */
    char *scratch = malloc(max_line + 1);
    struct label labels[MAX_LABELS];
    if (!scratch)
        return pflex_error_set(err, "%s: out of memory", name);
    tm_reserve(t, estimate_series(ln.p, (size_t)(ln.end - ln.p), tm_lines_left(&ln)));
#define FAIL(...) do { pflex_error_set(err, __VA_ARGS__); free(scratch); *lp = ln; return -1; } while (0)
    while ((got = tm_lines_next(&ln, &s, &n, err)) > 0) {
        size_t i = 0;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n || s[i] == '#')
            continue;   /* blank, HELP, TYPE, comments */
        if (!is_name_start((unsigned char)s[i]))
            FAIL("%s:%u: column %zu: a metric name must start with a letter, '_' or ':'", name,
                 ln.line, i + 1);
        size_t nb = i;
        while (i < n && is_name_char((unsigned char)s[i]))
            i++;
        const char *mname = s + nb;
        size_t mlen = i - nb;
        size_t nl = 0, used = 0;
        if (i < n && s[i] == '{') {
            i++;
            for (;;) {
                while (i < n && (s[i] == ' ' || s[i] == '\t'))
                    i++;
                if (i < n && s[i] == '}') {
                    i++;
                    break;
                }
                if (i >= n || !is_name_start((unsigned char)s[i]))
                    FAIL("%s:%u: column %zu: expected a label name or '}'", name, ln.line, i + 1);
                size_t lb = i;
                while (i < n && is_name_char((unsigned char)s[i]))
                    i++;
                size_t llen = i - lb;
                while (i < n && (s[i] == ' ' || s[i] == '\t'))
                    i++;
                if (i >= n || s[i] != '=')
                    FAIL("%s:%u: column %zu: expected '=' after label '%.*s'", name, ln.line,
                         i + 1, (int)(llen > 40 ? 40 : llen), s + lb);
                i++;
                while (i < n && (s[i] == ' ' || s[i] == '\t'))
                    i++;
                if (i >= n || s[i] != '"')
                    FAIL("%s:%u: column %zu: a label value must be quoted", name, ln.line, i + 1);
                i++;
                char *v = scratch + used;
                size_t vl = 0;
                for (;;) {
                    if (i >= n)
                        FAIL("%s:%u: unterminated label value", name, ln.line);
                    char ch = s[i++];
                    if (ch == '"')
                        break;
                    if (ch == '\\') {
                        if (i >= n)
                            FAIL("%s:%u: unterminated label value", name, ln.line);
                        char e = s[i++];
                        if (e == 'n')
                            ch = '\n';
                        else if (e == '\\' || e == '"')
                            ch = e;
                        else
                            FAIL("%s:%u: column %zu: unknown escape '\\%c' in a label value",
                                 name, ln.line, i - 1, e);
                    }
                    v[vl++] = ch;
                }
                used += vl;
                if (nl == MAX_LABELS)
                    FAIL("%s:%u: more than %d labels", name, ln.line, MAX_LABELS);
                for (size_t k = 0; k < nl; k++)
                    if (labels[k].name_len == llen && !memcmp(labels[k].name, s + lb, llen))
                        FAIL("%s:%u: label '%.*s' given twice", name, ln.line,
                             (int)(llen > 40 ? 40 : llen), s + lb);
                labels[nl].name = s + lb;
                labels[nl].name_len = llen;
                labels[nl].value = v;
                labels[nl].value_len = vl;
                nl++;
                while (i < n && (s[i] == ' ' || s[i] == '\t'))
                    i++;
                if (i < n && s[i] == ',')
                    i++;
                else if (i < n && s[i] == '}') {
                    i++;
                    break;
                } else
                    FAIL("%s:%u: column %zu: expected ',' or '}' in the labels", name, ln.line,
                         i + 1);
            }
        }
        if (i >= n || (s[i] != ' ' && s[i] != '\t'))
            FAIL("%s:%u: column %zu: expected a space and the value", name, ln.line, i + 1);
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t vb = i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        double v, ts = o->time0_s;
        int r = prom_value(s + vb, i - vb, &v);
        if (r < 0)
            FAIL("%s:%u: column %zu: '%.*s' is not a sample value", name, ln.line, vb + 1,
                 (int)(i - vb > 40 ? 40 : i - vb), s + vb);
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i < n) {
            size_t tb = i;
            while (i < n && s[i] != ' ' && s[i] != '\t')
                i++;
            double ms;
            if (tm_parse_double(s + tb, i - tb, &ms) < 0 || ms != floor(ms))
                FAIL("%s:%u: column %zu: '%.*s' is not a timestamp in milliseconds", name,
                     ln.line, tb + 1, (int)(i - tb > 40 ? 40 : i - tb), s + tb);
            ts = ms / 1000.0;
            while (i < n && (s[i] == ' ' || s[i] == '\t'))
                i++;
            if (i < n)
                FAIL("%s:%u: column %zu: text after the timestamp", name, ln.line, i + 1);
        }
        int field = pflex_dcgm_by_name(mname, mlen);
        if (field < 0 || r == 0 || pflex_dcgm_is_blank(v)) {
            t->skipped++;
            continue;
        }
        struct tm_key k = {0};
        k.gpu = -1;
        k.field = field;
        const struct label *job = NULL, *pod = NULL, *host = NULL, *instance = NULL, *mig = NULL;
        for (size_t q = 0; q < nl; q++) {
            const struct label *l = &labels[q];
            if (lname_is(l, "gpu")) {
                if (tm_parse_index(l->value, l->value_len, &k.gpu) < 0)
                    FAIL("%s:%u: label gpu=\"%.*s\" is not a GPU index", name, ln.line,
                         (int)(l->value_len > 40 ? 40 : l->value_len), l->value);
            } else if (lname_is(l, "UUID") || lname_is(l, "uuid")) {
                if (l->value_len) {
                    k.uuid = l->value;
                    k.uuid_len = l->value_len;
                }
            } else if (lname_is(l, "Hostname") || lname_is(l, "hostname")) {
                host = l;
            } else if (lname_is(l, "instance")) {
                instance = l;
            } else if (lname_is(l, "hpc_job")) {
                job = l;
            } else if (lname_is(l, "pod")) {
                pod = l;
            } else if (lname_is(l, "GPU_I_ID")) {
                mig = l;
            }
        }
        if (mig && mig->value_len && k.gpu >= 0) {
            long gi;
            if (tm_parse_index(mig->value, mig->value_len, &gi) < 0 || gi > 99 || k.gpu > 999)
                FAIL("%s:%u: label GPU_I_ID=\"%.*s\" is not a MIG instance id (0-99)", name,
                     ln.line, (int)(mig->value_len > 40 ? 40 : mig->value_len), mig->value);
            k.gpu = 10000 + 100 * k.gpu + gi;   /* a MIG instance, apart from whole GPUs */
        }
        if (!host)
            host = instance;
        if (host) {
            k.host = host->value;
            k.host_len = host->value_len;
        } else {
            k.host = o->host ? o->host : "";
            k.host_len = strlen(k.host);
        }
        if (job && job->value_len) {
            k.job = job->value;
            k.job_len = job->value_len;
        } else if (pod && pod->value_len) {
            k.job = pod->value;
            k.job_len = pod->value_len;
        } else if (o->job) {
            k.job = o->job;
            k.job_len = strlen(o->job);
        }
        if (tm_add(t, &k, ts, v, name, ln.line, err) < 0) {
            free(scratch);
            *lp = ln;
            return -1;
        }
    }
#undef FAIL
    free(scratch);
    *lp = ln;
    return got < 0 ? -1 : 0;
}
