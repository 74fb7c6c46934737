/* slurm_syntax.c — Slurm's notations: hostlists ("gpu-[01-04,07]"), index
 * lists ("0-3,5") and GRES detail strings ("gpu:h200:8(IDX:0-7)"), and the
 * small text helpers the job map readers share (jobmap_int.h).  Input is
 * never NUL-terminated here: every scan stops at its length. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/io/jobmap_int.h"

int pflex_jm_host_char(int c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.';
}

int pflex_jm_id_char(int c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '+';
}

/* A printable excerpt of s[0..len) for messages: at most 40 bytes, other
 * bytes as '?'. */
const char *pflex_jm_excerpt(char *buf, const char *s, size_t len)
{
    size_t n = len > 40 ? 40 : len;
    for (size_t i = 0; i < n; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    buf[n] = 0;
    if (len > 40)
        memcpy(buf + n, "...", 4);
    return buf;
}

/* The value of n (<= 9) decimal digits s[0..n), or -1 when they are not
 * all digits.  Never reads past s + n: input buffers are not terminated. */
long pflex_jm_num(const char *s, size_t n)
{
    long v = 0;
    if (!n || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

char *pflex_jm_dup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

struct group {          /* one bracket group: ranges lo..hi with a width */
    size_t first, count;
};

struct range {
    unsigned long lo, hi;
    int width;
};

/* Parse the ranges of "[...]" body s[0..n) into r[], bounded by rcap.
 * Returns the number of values, or 0 with err. */
static unsigned long parse_ranges(const char *s, size_t n, struct range *r, size_t rcap,
                                  size_t *nr, pflex_error_t *err)
{
    unsigned long total = 0;
    size_t i = 0;
    *nr = 0;
    while (i <= n) {
        size_t a = i;
        while (i < n && isdigit((unsigned char)s[i]))
            i++;
        size_t la = i - a, b = i, lb = 0;
        if (i < n && s[i] == '-') {
            b = ++i;
            while (i < n && isdigit((unsigned char)s[i]))
                i++;
            lb = i - b;
            if (!lb) {
                pflex_error_set(err, "a range has no upper bound");
                return 0;
            }
        }
        if (!la || (i < n && s[i] != ',')) {
            pflex_error_set(err, "'[%.*s]' is not a list of numbers and ranges",
                            (int)(n > 40 ? 40 : n), s);
            return 0;
        }
        if (la > 9 || lb > 9) {
            pflex_error_set(err, "a number in '[...]' has more than 9 digits");
            return 0;
        }
        if (*nr == rcap) {
            pflex_error_set(err, "too many ranges in one '[...]'");
            return 0;
        }
        struct range *x = &r[(*nr)++];
        x->lo = (unsigned long)pflex_jm_num(s + a, la);
        x->hi = lb ? (unsigned long)pflex_jm_num(s + b, lb) : x->lo;
        x->width = (int)la;
        if (x->hi < x->lo) {
            pflex_error_set(err, "range %lu-%lu runs backwards", x->lo, x->hi);
            return 0;
        }
        total += x->hi - x->lo + 1;
        if (total > PFLEX_SLURM_MAX_HOSTS) {
            pflex_error_set(err, "a '[...]' expands to more than %d values",
                            PFLEX_SLURM_MAX_HOSTS);
            return 0;
        }
        i++;    /* past ',' (or the end) */
    }
    return total;
}

void pflex_slurm_hostlist_free(char **hosts, size_t n)
{
    if (!hosts)
        return;
    for (size_t i = 0; i < n; i++)
        free(hosts[i]);
    free(hosts);
}

#define MAX_GROUPS 8
#define MAX_RANGES 256
/* Expand one expression e[0..n) (no top-level comma) onto out. */
static int expand_one(const char *e, size_t n, size_t max, char ***out, size_t *nout,
                      size_t *cap, pflex_error_t *err)
{
    struct range r[MAX_RANGES];
    struct group g[MAX_GROUPS];
    size_t lit_off[MAX_GROUPS + 1], lit_len[MAX_GROUPS + 1];
    size_t ng = 0, nrt = 0, i = 0;
    unsigned long product = 1;
    char eb[48];
    if (!n)
        return pflex_error_set(err, "empty host name in the list");
    for (;;) {
        size_t a = i;
        while (i < n && e[i] != '[') {
            if (!pflex_jm_host_char((unsigned char)e[i]))
                return pflex_error_set(err, "'%s': '%c' is not allowed in a host name",
                                       pflex_jm_excerpt(eb, e, n), isprint((unsigned char)e[i])
                                       ? e[i] : '?');
            i++;
        }
        lit_off[ng] = a;
        lit_len[ng] = i - a;
        if (i == n)
            break;
        if (ng == MAX_GROUPS)
            return pflex_error_set(err, "'%s': more than %d '[...]' groups",
                                   pflex_jm_excerpt(eb, e, n), MAX_GROUPS);
        size_t b = ++i;
        while (i < n && e[i] != ']' && e[i] != '[')
            i++;
        if (i == n || e[i] != ']')
            return pflex_error_set(err, "'%s': '[' without ']'", pflex_jm_excerpt(eb, e, n));
        size_t k;
        unsigned long c = parse_ranges(e + b, i - b, r + nrt, MAX_RANGES - nrt, &k, err);
        if (!c)
            return -1;
        g[ng].first = nrt;
        g[ng].count = k;
        nrt += k;
        product *= c;
        if (product > max || *nout + product > max)
            return pflex_error_set(err, "the list expands to more than %zu hosts", max);
        ng++;
        i++;    /* past ']' */
    }
    if (*nout + product > max)
        return pflex_error_set(err, "the list expands to more than %zu hosts", max);
    size_t len = 0;
    for (size_t q = 0; q <= ng; q++)
        len += lit_len[q];
    for (size_t q = 0; q < ng; q++) {
        int w = 0;
        for (size_t t = 0; t < g[q].count; t++) {
            const struct range *x = &r[g[q].first + t];
            int dw = 1;
            for (unsigned long v = x->hi; v >= 10; v /= 10)
                dw++;
            if (x->width > dw)
                dw = x->width;
            if (dw > w)
                w = dw;
        }
        len += (size_t)w;
    }
    if (len > MAX_HOST_LEN)
        return pflex_error_set(err, "'%s': host names longer than %d bytes",
                               pflex_jm_excerpt(eb, e, n), MAX_HOST_LEN);
    if (*nout + product > *cap) {
        size_t nc = *cap ? *cap : 16;
        while (nc < *nout + product)
            nc *= 2;
        char **no = realloc(*out, nc * sizeof *no);
        if (!no)
            return pflex_error_set(err, "out of memory");
        *out = no;
        *cap = nc;
    }
    /* odometer over the groups: pos[q] = (range index, value) */
    size_t ri[MAX_GROUPS] = {0};
    unsigned long val[MAX_GROUPS];
    for (size_t q = 0; q < ng; q++)
        val[q] = r[g[q].first].lo;
    for (unsigned long c = 0; c < product; c++) {
        char name[MAX_HOST_LEN + 16];
        size_t p = 0;
        for (size_t q = 0; q <= ng; q++) {
            memcpy(name + p, e + lit_off[q], lit_len[q]);
            p += lit_len[q];
            if (q < ng)
                p += (size_t)sprintf(name + p, "%0*lu", r[g[q].first + ri[q]].width, val[q]);
        }
        char *d = pflex_jm_dup(name, p);
        if (!d)
            return pflex_error_set(err, "out of memory");
        (*out)[(*nout)++] = d;
        for (size_t q = ng; q-- > 0;) {     /* the last group turns fastest */
            const struct range *x = &r[g[q].first + ri[q]];
            if (val[q] < x->hi) {
                val[q]++;
                break;
            }
            if (ri[q] + 1 < g[q].count) {
                ri[q]++;
                val[q] = r[g[q].first + ri[q]].lo;
                break;
            }
            ri[q] = 0;
            val[q] = r[g[q].first].lo;
        }
    }
    return 0;
}

int pflex_slurm_hostlist_expand(const char *list, size_t len, size_t max, char ***hosts,
                                size_t *n, pflex_error_t *err)
{
    char **out = NULL;
    size_t nout = 0, cap = 0, i = 0;
    *hosts = NULL;
    *n = 0;
    if (max > PFLEX_SLURM_MAX_HOSTS)
        max = PFLEX_SLURM_MAX_HOSTS;
    if (len == 0 || (len == 6 && memcmp(list, "(null)", 6) == 0))
        return 0;
    while (i <= len) {
        size_t a = i;
        int depth = 0;
        while (i < len && (depth || list[i] != ',')) {
            if (list[i] == '[')
                depth++;
            else if (list[i] == ']' && depth)
                depth--;
            i++;
        }
        if (expand_one(list + a, i - a, max, &out, &nout, &cap, err) < 0) {
            pflex_slurm_hostlist_free(out, nout);
            return -1;
        }
        i++;
    }
    *hosts = out;
    *n = nout;
    return 0;
}

/* An index list "0-7", "0,2-3" into set[] (PFLEX_SLURM_MAX_GPUS flags);
 * returns the count or -1 with err. */
static int parse_idx(const char *s, size_t n, unsigned char *set, pflex_error_t *err)
{
    struct range r[MAX_RANGES];
    size_t nr;
    int count = 0;
    if (n == 3 && memcmp(s, "N/A", 3) == 0)
        return 0;
    if (!parse_ranges(s, n, r, MAX_RANGES, &nr, err))
        return -1;
    for (size_t k = 0; k < nr; k++) {
        if (r[k].hi >= PFLEX_SLURM_MAX_GPUS)
            return pflex_error_set(err, "GPU index %lu is not below %d", r[k].hi,
                                   PFLEX_SLURM_MAX_GPUS);
        for (unsigned long v = r[k].lo; v <= r[k].hi; v++) {
            if (set[v])
                return pflex_error_set(err, "GPU index %lu given twice", v);
            set[v] = 1;
            count++;
        }
    }
    return count;
}

/* GPUs of one node from a GRES detail ("gpu:h200:8(IDX:0-7)", several
 * entries comma-separated, other GRES ignored).  Returns the number of GPUs
 * with their indices in set[], or -2 when a gpu entry names no indices
 * ("(CNT:2)" or no parenthesis), or -1 with err. */
int pflex_jm_gres_parse(const char *s, size_t n, unsigned char *set, pflex_error_t *err)
{
    size_t i = 0;
    int total = 0, unknown = 0;
    char eb[48];
    memset(set, 0, PFLEX_SLURM_MAX_GPUS);
    if (n == 0 || (n == 6 && memcmp(s, "(null)", 6) == 0))
        return 0;
    while (i < n) {
        size_t a = i;
        int depth = 0;
        while (i < n && (depth || s[i] != ',')) {
            if (s[i] == '(')
                depth++;
            else if (s[i] == ')' && depth)
                depth--;
            i++;
        }
        const char *e = s + a;
        size_t el = i - a, k = 0;
        i++;
        while (k < el && e[k] != ':' && e[k] != '(')
            k++;
        if (k == 0)
            return pflex_error_set(err, "GRES '%s' has an empty name", pflex_jm_excerpt(eb, s, n));
        if (k != 3 || memcmp(e, "gpu", 3))
            continue;
        size_t p = k;
        while (p < el && e[p] != '(')
            p++;
        /* the count: the last ':' field before '(' when it is a number */
        long count = -1;
        size_t c = p;
        while (c > k && isdigit((unsigned char)e[c - 1]))
            c--;
        if (c < p && e[c - 1] == ':' && p - c <= 6)
            count = pflex_jm_num(e + c, p - c);
        if (p == el) {
            if (count != 0)
                unknown = 1;
            continue;
        }
        if (e[el - 1] != ')')
            return pflex_error_set(err, "GRES '%s': '(' without ')'", pflex_jm_excerpt(eb, e, el));
        const char *in = e + p + 1;
        size_t inl = el - p - 2;
        if (inl >= 4 && memcmp(in, "CNT:", 4) == 0) {
            unknown = 1;
            continue;
        }
        if (inl < 4 || memcmp(in, "IDX:", 4))
            return pflex_error_set(err, "GRES '%s': expected (IDX:...) or (CNT:...)",
                                   pflex_jm_excerpt(eb, e, el));
        unsigned char one[PFLEX_SLURM_MAX_GPUS] = {0};
        int got = parse_idx(in + 4, inl - 4, one, err);
        if (got < 0)
            return -1;
        if (count >= 0 && count != got)
            return pflex_error_set(err, "GRES '%s' counts %ld GPUs but lists %d",
                                   pflex_jm_excerpt(eb, e, el), count, got);
        for (int g = 0; g < PFLEX_SLURM_MAX_GPUS; g++)
            if (one[g]) {
                if (set[g])
                    return pflex_error_set(err, "GRES '%s': GPU %d given twice",
                                           pflex_jm_excerpt(eb, s, n), g);
                set[g] = 1;
            }
        total += got;
    }
    return unknown ? -2 : total;
}
