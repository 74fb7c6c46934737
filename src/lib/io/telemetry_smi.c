/* telemetry_smi.c — nvidia-smi --query-gpu=... --format=csv[,noheader is not
 * read][,nounits].
 *
 * The header names the query fields, with the unit in brackets unless
 * nounits ("power.draw [W]"); values carry the unit unless nounits
 * ("655.21 W", "1980 MHz", "45 %"); "[N/A]", "[Not Supported]" and other
 * bracketed words are no data.  Identity columns: index, uuid (gpu_uuid),
 * timestamp ("2024/05/01 12:00:00.123", read as UTC), name, pci.bus_id.
 * Rows without a timestamp get the row number as time.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "pflex/io/csv.h"
#include "lib/io/csv_scan.h"
#include "lib/io/telemetry_impl.h"
#include "lib/util/decimal.h"

enum { ID_NONE = -1, ID_TIME = -2, ID_INDEX = -3, ID_UUID = -4, ID_SWCAP = -5 };

struct smi_name {
    const char *name;
    int field;          /* enum pflex_dcgm or ID_* */
};

static const struct smi_name smi_names[] = {
    {"timestamp", ID_TIME},
    {"index", ID_INDEX},
    {"uuid", ID_UUID},
    {"gpu_uuid", ID_UUID},
    {"power.draw", PFLEX_DCGM_POWER_USAGE},
    {"power.draw.average", PFLEX_DCGM_POWER_USAGE},
    {"power.draw.instant", PFLEX_DCGM_POWER_USAGE_INSTANT},
    {"power.limit", PFLEX_DCGM_POWER_LIMIT},
    {"enforced.power.limit", PFLEX_DCGM_ENFORCED_LIMIT},
    {"power.min_limit", PFLEX_DCGM_POWER_LIMIT_MIN},
    {"power.max_limit", PFLEX_DCGM_POWER_LIMIT_MAX},
    {"clocks.sm", PFLEX_DCGM_SM_CLOCK},
    {"clocks.current.sm", PFLEX_DCGM_SM_CLOCK},
    {"clocks.mem", PFLEX_DCGM_MEM_CLOCK},
    {"clocks.current.memory", PFLEX_DCGM_MEM_CLOCK},
    {"clocks.max.sm", PFLEX_DCGM_MAX_SM_CLOCK},
    {"clocks.max.streaming_multiprocessor", PFLEX_DCGM_MAX_SM_CLOCK},
    {"utilization.gpu", PFLEX_DCGM_GPU_UTIL},
    {"utilization.memory", PFLEX_DCGM_MEM_COPY_UTIL},
    {"temperature.gpu", PFLEX_DCGM_GPU_TEMP},
    {"memory.used", PFLEX_DCGM_FB_USED},
    {"clocks_event_reasons.sw_power_cap", ID_SWCAP},
    {"clocks_throttle_reasons.sw_power_cap", ID_SWCAP},
    {"clocks_event_reasons.active", PFLEX_DCGM_CLOCKS_EVENT_REASONS},
    {"clocks_throttle_reasons.active", PFLEX_DCGM_CLOCKS_EVENT_REASONS},
};

/* nvmlClocksEventReasonSwPowerCap */
#define SW_POWER_CAP_BIT 0x4

static int smi_lookup(const char *s, size_t len)
{
    /* "power.draw [W]": the bracketed unit is not part of the name. */
    const char *br = memchr(s, '[', len);
    if (br) {
        len = (size_t)(br - s);
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
    }
    for (size_t i = 0; i < sizeof smi_names / sizeof *smi_names; i++)
        if (strlen(smi_names[i].name) == len && !strncasecmp(smi_names[i].name, s, len))
            return smi_names[i].field;
    return ID_NONE;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), linear in d as
 * timegm is: a day past the month's end runs into the next month. */
static long days_from_civil(long y, long m, long d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits2(const char *s, int *v)
{
    unsigned a = (unsigned)(s[0] - '0'), b = (unsigned)(s[1] - '0');
    if (a > 9 || b > 9)
        return -1;
    *v = (int)(a * 10 + b);
    return 0;
}

/* "2024/05/01 12:00:00.123" (nvidia-smi's timestamp) as Unix seconds.
 * That exact shape is read here; any other the sscanf below judges. */
static int parse_stamp(const char *s, size_t len, double *out)
{
    char buf[40];
    if (len < 19 || len >= sizeof buf)
        return -1;
    int y1, y2, mo, d, h, mi, sc;
    double sec;
    if (s[4] == '/' && s[7] == '/' && s[10] == ' ' && s[13] == ':' && s[16] == ':' &&
        !digits2(s, &y1) && !digits2(s + 2, &y2) && !digits2(s + 5, &mo) &&
        !digits2(s + 8, &d) && !digits2(s + 11, &h) && !digits2(s + 14, &mi) &&
        !digits2(s + 17, &sc) && (len == 19 || (s[19] == '.' && len > 20)) &&
        pflex_parse_double(s + 17, len - 17, &sec) == 0) {
        int y = y1 * 100 + y2;
        if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec >= 61 || y < 1970)
            return -1;
        long long t = (long long)days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
        *out = (double)t + sec;
        return 0;
    }
    memcpy(buf, s, len);
    buf[len] = 0;
    struct tm tm = {0};
    int n = 0;
    if (sscanf(buf, "%4d/%2d/%2d %2d:%2d:%lf%n", &y1, &mo, &d, &h, &mi, &sec, &n) != 6 ||
        (size_t)n != len)
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61 ||
        y1 < 1970 || y1 > 9999)
        return -1;
    tm.tm_year = y1 - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    *out = (double)timegm(&tm) + sec;
    return 0;
}

/* Seconds read as if the stamp were UTC, as the local time they are:
 * mktime under the process's TZ (DST from the date; in the repeated hour
 * of a change, whichever mktime picks). */
static double local_to_utc(double wall)
{
    time_t w = (time_t)floor(wall);
    struct tm tm;
    gmtime_r(&w, &tm);
    tm.tm_isdst = -1;
    return (double)mktime(&tm) + (wall - (double)w);
}

/* The usual value, "655.21 W", "45 %", "1980": at most 15 characters of
 * an optional sign, digits and one point, then the end or a space and a
 * unit.  The short path of the one decimal parser (util/decimal.h), so
 * the value is the same bit for bit as pflex_parse_double's.  1 with *v,
 * 0 when the value is not of that shape (smi_value then judges it). */
static int smi_plain(const char *s, size_t len, double *v)
{
    const char *p = s, *e = s + len, *point;
    int neg = *p == '-';
    p += neg || *p == '+';
    uint64_t m;
    const char *q = pflex_dec_scan(p, e, &m, &point);
    size_t ndig = (size_t)(q - p) - (point != NULL);
    if (!ndig || q - s > 15)
        return 0;
    if (q < e) {
        /* a space, then exactly one of the units smi_value accepts */
        size_t ul = (size_t)(e - q) - 1;
        const char *u = q + 1;
        if (*q != ' ' ||
            !(ul == 1 ? *u == 'W' || *u == '%' || *u == 'C'
                      : ul == 3 && ((u[0] == 'M' && ((u[1] == 'H' && u[2] == 'z') ||
                                                     (u[1] == 'i' && u[2] == 'B'))) ||
                                    ((u[0] == 'K' || u[0] == 'G') && u[1] == 'i' && u[2] == 'B'))))
            return 0;
    }
    double x = pflex_dec_short((double)m, point, q);
    *v = neg ? -x : x;
    return 1;
}

/* A value with or without its unit; 1 = number, 0 = no data, -1 = bad. */
static int smi_value(const char *s, size_t len, int id, double *v)
{
    if (len == 0)
        return 0;
    if (id >= 0 && id != PFLEX_DCGM_CLOCKS_EVENT_REASONS && smi_plain(s, len, v))
        return 1;
    if (s[0] == '[' || (len == 3 && !memcmp(s, "N/A", 3)))
        return 0;
    if (id == ID_SWCAP) {
        if (len == 6 && !strncasecmp(s, "Active", 6)) {
            *v = SW_POWER_CAP_BIT;
            return 1;
        }
        if (len == 10 && !strncasecmp(s, "Not Active", 10)) {
            *v = 0;
            return 1;
        }
        return -1;
    }
    if (id == PFLEX_DCGM_CLOCKS_EVENT_REASONS && len > 2 && s[0] == '0' && (s[1] | 32) == 'x') {
        unsigned long long m = 0;
        for (size_t i = 2; i < len; i++) {
            int c = s[i] | 32, dv = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (dv < 0 || i > 17)
                return -1;
            m = m * 16 + (unsigned)dv;
        }
        *v = (double)m;
        return 1;
    }
    size_t n = len;
    const char *sp = memchr(s, ' ', len);
    if (sp) {
        static const char *const units[] = {"W", "MHz", "%", "MiB", "C", "KiB", "GiB"};
        size_t ul = len - (size_t)(sp - s) - 1;
        int ok = 0;
        for (size_t i = 0; i < sizeof units / sizeof *units; i++)
            if (strlen(units[i]) == ul && !memcmp(sp + 1, units[i], ul))
                ok = 1;
        if (!ok)
            return -1;
        n = (size_t)(sp - s);
    }
    return tm_parse_double(s, n, v) < 0 ? -1 : 1;
}

static void plain_field(struct pflex_csv_field *f, const char *b, const char *e)
{
    while (b < e && (*b == ' ' || *b == '\t'))
        b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    f->s = b;
    f->len = (size_t)(e - b);
}

/* A plain line s[0..n) (not blank, not a comment, no quote) of exactly
 * ncols fields, split where it lies into f[0..ncols), each trimmed of
 * blanks as the tokenizer trims them.  0 for any other line: the tokenizer
 * judges it (and words the error).  The commas and quotes of 64 bytes are
 * found at once (csv_marks64; readable: the end of the bytes that may be
 * read, past the line), so that no field's end waits on a byte loop. */
static int split_plain(const char *s, size_t n, const char *readable,
                       struct pflex_csv_field *f, size_t ncols)
{
    if (!n || *s == '#' || *s == '\r')
        return 0;
    const char *b = s;  /* the field's start */
    size_t k = 0;
    for (size_t off = 0; off < n; off += 64) {
        uint64_t comma, quote, nl;
        size_t left = n - off;
        if (readable - (s + off) >= 64)
            csv_marks64(s + off, &comma, &quote, &nl);
        else                /* left < 64: the line is readable */
            csv_marks_tail(s + off, left, &comma, &quote, &nl);
        if (left < 64) {
            comma &= ((uint64_t)1 << left) - 1;
            quote &= ((uint64_t)1 << left) - 1;
        }
        if (quote)
            return 0;
        for (; comma; comma &= comma - 1) {
            const char *p = s + off + csv_ctz64(comma);
            if (k + 1 >= ncols)
                return 0;   /* more fields than the header */
            plain_field(&f[k++], b, p);
            b = p + 1;
        }
    }
    if (k + 1 != ncols)
        return 0;
    plain_field(&f[k], b, s + n);
    return 1;
}

/* The next line of ln when it is a plain row of the header's width (as
 * split_plain has it) whose '\n' lies within readable: split and taken in
 * the one scan that also finds its end (no memchr for the line, and its
 * bytes are looked at once).  0, with ln untouched, for anything else
 * (and near the end of what was read): tm_lines_next takes it, with its
 * checks and messages. */
static int take_plain(struct tm_lines *ln, const char *readable, struct pflex_csv_field *f,
                      size_t ncols)
{
    const char *s = ln->p, *b = s;
    if (s >= ln->end || *s == '#' || *s == '\r' || *s == '\n')
        return 0;
    size_t k = 0;
    for (size_t off = 0; off <= ln->max; off += 64) {
        if (readable - (s + off) < 64)
            return 0;
        uint64_t comma, quote, nl;
        csv_marks64(s + off, &comma, &quote, &nl);
        uint64_t line = nl ? (nl & (~nl + 1)) - 1 : ~(uint64_t)0;   /* before its '\n' */
        if (quote & line)
            return 0;
        for (comma &= line; comma; comma &= comma - 1) {
            const char *p = s + off + csv_ctz64(comma);
            if (k + 1 >= ncols)
                return 0;   /* more fields than the header */
            plain_field(&f[k++], b, p);
            b = p + 1;
        }
        if (nl) {
            const char *e = s + off + csv_ctz64(nl);
            size_t n = (size_t)(e - s) - (e[-1] == '\r');  /* the line's CR is not in it */
            if (e >= ln->end || n > ln->max || k + 1 != ncols)
                return 0;
            plain_field(&f[k], b, s + n);
            ln->p = e + 1;
            ln->line++;
            return 1;
        }
    }
    return 0;
}

/* The next CSV record of the buffer, one pass: a plain line of the
 * header's width is split where it lies into plain; any other goes to the
 * tokenizer, and every line it took is held to the line bound too.
 * Returns 1 with the record's fields in *fv (*nf of them, first line
 * *line), 0 at the end, -1 with err set. */
static int next_record(struct tm_lines *ln, pflex_csv_t *c, struct pflex_csv_field *plain,
                       size_t ncols, const struct pflex_csv_field **fv, size_t *nf,
                       unsigned *line, pflex_error_t *err)
{
    const char *s, *at;
    size_t n;
    /* the bytes that may be read past a line: the buffer's */
    const char *readable = ln->fd >= 0 ? ln->buf + ln->fill : ln->end;
    if (plain && take_plain(ln, readable, plain, ncols)) {
        *fv = plain;
        *nf = ncols;
        *line = ln->line;
        return 1;
    }
    int got = tm_lines_next(ln, &s, &n, err);
    if (got <= 0)
        return got;
    at = s;     /* where the record starts (streaming may have moved it) */
    readable = ln->fd >= 0 ? ln->buf + ln->fill : ln->end;
    if (plain && split_plain(s, n, readable, plain, ncols)) {
        *fv = plain;
        *nf = ncols;
        *line = ln->line;
        return 1;
    }
    /* pflex_csv_split_line takes the line's '\r' as pflex_csv_next would */
    size_t raw = n + (s + n < ln->end && s[n] == '\r');
    if ((got = pflex_csv_split_line(c, s, raw, ln->line, err)) == 0) {
        unsigned first = ln->line;
        for (;;) {
            pflex_csv_reset(c, at, (size_t)(ln->end - at), first);
            got = pflex_csv_next(c, err);
            /* streaming: a record (or the comments before one) may go on
             * past the lines read in so far */
            if (ln->fd < 0 || !(got == 0 || (got < 0 && c->truncated)))
                break;
            int more = tm_lines_more(ln, &at, err);
            if (more < 0)
                return -1;
            if (!more)
                break;
        }
        if (got < 0)
            return -1;
        while (ln->p < c->p)
            if (tm_lines_next(ln, &s, &n, err) < 0)
                return -1;
    }
    if (got > 0) {
        *fv = c->fields;
        *nf = c->nfields;
        *line = c->line;
    }
    return got;
}

/* The series of one GPU's row, by field, found once and kept: the rows
 * of a GPU repeat its key (job and host are the read's). */
#define ROW_CACHE 64
#define ROW_UUID_MAX 96
struct row_key {
    int used;
    long gpu;
    size_t uuid_len;                /* SIZE_MAX: no uuid */
    char uuid[ROW_UUID_MAX];
    uint32_t id[PFLEX_DCGM_COUNT];  /* UINT32_MAX: not looked up yet */
};

static struct row_key *row_key(struct row_key *cache, const struct tm_key *k)
{
    size_t ul = k->uuid ? k->uuid_len : SIZE_MAX;
    if (k->uuid && ul > ROW_UUID_MAX)
        return NULL;
    size_t slot = k->gpu >= 0 ? (size_t)k->gpu : ul == SIZE_MAX ? 0 : (size_t)k->uuid[ul - 1];
    struct row_key *r = &cache[slot % ROW_CACHE];
    if (r->used && r->gpu == k->gpu && r->uuid_len == ul &&
        (ul == SIZE_MAX || !memcmp(r->uuid, k->uuid, ul)))
        return r;
    r->used = 1;
    r->gpu = k->gpu;
    r->uuid_len = ul;
    if (ul != SIZE_MAX)
        memcpy(r->uuid, k->uuid, ul);
    memset(r->id, 0xff, sizeof r->id);
    return r;
}

/* Where each series' samples go (tm_runs): GPU indexes below RUN_GPUS,
 * slot = rank of the GPU x fields + rank of the field, the order the
 * series sort in (the job and host are the read's). */
#define RUN_GPUS 1024
struct runs_plan {
    int on;
    size_t nf;
    int32_t gpu_rank[RUN_GPUS];         /* -1: no row */
    int32_t field_rank[PFLEX_DCGM_COUNT];
};

static int col_field(int col)
{
    return col >= 0 ? col : col == ID_SWCAP ? PFLEX_DCGM_CLOCKS_EVENT_REASONS : -1;
}

/* The GPU index of a row, from its ii-th column: 1 with *g, 0 for a line
 * that is no row (blank, comment), -1 for anything unusual. */
static int row_gpu(const char *q, const char *le, int ii, unsigned *g)
{
    if (q == le || *q == '#' || *q == '\r')
        return 0;
    for (int k = 0; k < ii && q; k++)
        if ((q = memchr(q, ',', (size_t)(le - q))))
            q++;
    if (!q)
        return -1;
    while (q < le && (*q == ' ' || *q == '\t'))
        q++;
    unsigned v = 0, nd = 0;
    for (; q < le && *q >= '0' && *q <= '9' && nd < 5; q++, nd++)
        v = v * 10 + (unsigned)(*q - '0');
    while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
        q++;
    if (!nd || v >= RUN_GPUS || (q < le && *q != ','))
        return -1;
    *g = v;
    return 1;
}

/* A look at a few windows of the rows after the header, [p, end), spread
 * over them (never the whole input: the read stays one pass): the share
 * of rows each GPU index has and the bytes a row takes, so that every
 * series' run is sized before the read (a series has about its GPU's rows
 * times the columns of its field), with room to spare, the runs closed up
 * at the end.  The room: PLAN_SLACK of the share the windows counted; or,
 * when every window lists the GPUs in one cycle (each GPU again after
 * exactly as many rows as there are GPUs: nvidia-smi's own loop), an equal
 * share, with PLAN_SLACK_CYCLE and the spread of the windows' rows per
 * byte to spare (the slack is memory the store touches: its pages are
 * shared with the next run's).  Only a hint: a run that overflows ends the
 * runs, never the read (the store then appends and pflex_tm_sort groups),
 * and anything unusual (a quote before the index, an index out of range)
 * leaves the store to append as usual. */
#define PLAN_WINDOWS 16
#define PLAN_WINDOW (16u << 10)
#define PLAN_SLACK 1.125
#define PLAN_SLACK_CYCLE 1.01
static void plan_runs(pflex_tm_t *t, const struct tm_lines *ln, int ii, const int *cols,
                      size_t ncols, struct runs_plan *pl)
{
    size_t *rows = calloc(RUN_GPUS, sizeof *rows), mult[PFLEX_DCGM_COUNT] = {0};
    /* per GPU: the window (+ 1) and the row in it where it was last seen */
    size_t *last_w = calloc(RUN_GPUS, sizeof *last_w), *last_r = calloc(RUN_GPUS, sizeof *last_r);
    size_t gap_min = SIZE_MAX, gap_max = 0;     /* rows between a GPU's rows */
    unsigned long long len = tm_lines_left(ln);
    size_t nrows = 0;
    double max_rows = 0;    /* of the whole input, from the densest window */
    double min_rows = 0;    /* the same from the sparsest */
    char *tmp = malloc(PLAN_WINDOWS * PLAN_WINDOW + 1);
    pl->on = 0;
    if (!rows || !last_w || !last_r || !tmp)
        goto out;
    for (size_t i = 0; i < ncols; i++)
        if (col_field(cols[i]) >= 0)
            mult[col_field(cols[i])]++;
    size_t nw = len <= PLAN_WINDOWS * PLAN_WINDOW ? 1 : PLAN_WINDOWS;
    for (size_t w = 0; w < nw; w++) {
        /* window w: whole lines from the first line start at or after its
         * offset (the byte before it, read too, tells); a line the window
         * cuts is not counted */
        unsigned long long off = nw == 1 ? 0 : (len - PLAN_WINDOW) / (nw - 1) * w;
        size_t wl = nw == 1 ? (size_t)len : PLAN_WINDOW, pre = off > 0;
        const char *wb = tm_lines_peek(ln, off - pre, wl + pre, tmp);
        if (!wb)
            goto out;
        const char *q = wb + pre, *we = wb + pre + wl;
        int last = off + wl >= len;     /* the window runs to the input's end */
        if (pre && q[-1] != '\n') {
            const char *nl = memchr(q, '\n', (size_t)(we - q));
            q = nl ? nl + 1 : we;
        }
        const char *w0 = q;
        size_t wrows = 0;
        while (q < we) {
            const char *nl = memchr(q, '\n', (size_t)(we - q)), *le = nl ? nl : we;
            if (!nl && !last)
                break;      /* a line the window cuts: not counted */
            unsigned g;
            int r = row_gpu(q, le, ii, &g);
            if (r < 0)
                goto out;
            if (r) {
                if (last_w[g] == w + 1) {
                    size_t gap = wrows - last_r[g];
                    gap_min = gap < gap_min ? gap : gap_min;
                    gap_max = gap > gap_max ? gap : gap_max;
                }
                last_w[g] = w + 1;
                last_r[g] = wrows;
                rows[g]++;
                wrows++;
            }
            q = nl ? nl + 1 : we;
        }
        if (wrows && q > w0) {
            double d = (double)wrows * (double)len / (double)(q - w0);
            max_rows = d > max_rows ? d : max_rows;
            min_rows = d < min_rows || min_rows == 0 ? d : min_rows;
        }
        nrows += wrows;
    }
    size_t ng = 0, nf = 0, *cap;
    for (unsigned g = 0; g < RUN_GPUS; g++)
        pl->gpu_rank[g] = rows[g] ? (int32_t)ng++ : -1;
    for (int f = 0; f < PFLEX_DCGM_COUNT; f++)
        pl->field_rank[f] = mult[f] ? (int32_t)nf++ : -1;
    if (!ng || !nf || !(cap = malloc(ng * nf * sizeof *cap)))
        goto out;
    int cycle = gap_max > 0 && gap_min == ng && gap_max == ng;
    for (unsigned g = 0; g < RUN_GPUS; g++) {
        if (pl->gpu_rank[g] < 0)
            continue;
        /* the whole input when one window held it, else an estimate */
        size_t est = nw == 1 ? rows[g] :
                     cycle ? (size_t)(max_rows * PLAN_SLACK_CYCLE * (max_rows / min_rows) /
                                      (double)ng) + 16 :
                     (size_t)(max_rows * PLAN_SLACK * (double)rows[g] / (double)nrows) + 16;
        for (int f = 0; f < PFLEX_DCGM_COUNT; f++)
            if (pl->field_rank[f] >= 0)
                cap[(size_t)pl->gpu_rank[g] * nf + (size_t)pl->field_rank[f]] = est * mult[f];
    }
    pl->nf = nf;
    pl->on = tm_runs_begin(t, ng * nf, cap) == 0;
    free(cap);
out:
    free(rows);
    free(last_w);
    free(last_r);
    free(tmp);
}

static size_t plan_slot(const struct runs_plan *pl, long gpu, int field)
{
    if (gpu < 0 || gpu >= RUN_GPUS || pl->gpu_rank[gpu] < 0 || pl->field_rank[field] < 0)
        return SIZE_MAX;
    return (size_t)pl->gpu_rank[gpu] * pl->nf + (size_t)pl->field_rank[field];
}

/* Long: the header's plan, then the row loop with its stamp and row
 * caches inline: the reader's whole cost on large nvidia-smi logs. */
int tm_read_smi_lines(pflex_tm_t *t, struct tm_lines *ln, const char *name,
                      const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    pflex_csv_t c;
    pflex_csv_init(&c, "", 0, name);
    int rc = -1, *cols = NULL, it = -1, ii = -1, iu = -1, known = 0, got;
    size_t ncols = 0;
    unsigned row = 0;
    struct row_key *cache = NULL;
    struct pflex_csv_field *plain = NULL;
    struct runs_plan *plan = NULL;
    uint32_t *pend_id = NULL;   /* a row's samples not added yet */
    double *pend_v = NULL;
    char stamp[40];
    size_t stamp_len = SIZE_MAX;   /* none yet */
    double stamp_time = 0;
    const struct pflex_csv_field *fv;
    size_t nf;
    unsigned line;
    if ((got = next_record(ln, &c, NULL, 0, &fv, &nf, &line, err)) <= 0) {
        if (got == 0)
            pflex_error_set(err, "%s: empty file", name);
        goto out;
    }
    ncols = c.nfields;
    cols = malloc(ncols * sizeof *cols);
    plain = malloc(ncols * sizeof *plain);
    cache = calloc(ROW_CACHE, sizeof *cache);
    pend_id = malloc(ncols * sizeof *pend_id);
    pend_v = malloc(ncols * sizeof *pend_v);
    if (!cols || !plain || !cache || !pend_id || !pend_v) {
        pflex_error_set(err, "%s: out of memory", name);
        goto out;
    }
    for (size_t i = 0; i < ncols; i++) {
        cols[i] = smi_lookup(c.fields[i].s, c.fields[i].len);
        if (cols[i] == ID_TIME)
            it = (int)i;
        else if (cols[i] == ID_INDEX)
            ii = (int)i;
        else if (cols[i] == ID_UUID)
            iu = (int)i;
        else if (cols[i] >= 0 || cols[i] == ID_SWCAP)
            known++;
    }
    if (!known) {
        pflex_error_set(err, "%s:%u: no nvidia-smi query field pflex reads (power.draw, "
                        "clocks.sm, utilization.gpu, ...) in the header", name, c.line);
        goto out;
    }
    if (ii < 0 && iu < 0) {
        pflex_error_set(err, "%s:%u: the header names neither index nor uuid: samples cannot "
                        "be told apart by GPU", name, c.line);
        goto out;
    }
    struct tm_key k = {0};
    if (o->job) {
        k.job = o->job;
        k.job_len = strlen(o->job);
    }
    k.host = o->host ? o->host : "";
    k.host_len = strlen(k.host);
    if (ii >= 0 && !t->nseries && !t->nsamples && (plan = malloc(sizeof *plan)))
        plan_runs(t, ln, ii, cols, ncols, plan);
    while ((got = next_record(ln, &c, plain, ncols, &fv, &nf, &line, err)) > 0) {
        if (nf != ncols) {
            pflex_csv_row_error(err, name, line, nf, ncols);
            goto out;
        }
        k.gpu = -1;
        k.uuid = NULL;
        k.uuid_len = 0;
        if (ii >= 0 && tm_parse_index(fv[ii].s, fv[ii].len, &k.gpu) < 0) {
            pflex_error_set(err, "%s:%u: column 'index': '%.*s' is not a GPU index", name,
                            line, (int)(fv[ii].len > 40 ? 40 : fv[ii].len),
                            fv[ii].s);
            goto out;
        }
        if (iu >= 0 && fv[iu].len && fv[iu].s[0] != '[') {
            k.uuid = fv[iu].s;
            k.uuid_len = fv[iu].len;
        }
        double time = o->time0_s + row++;
        if (it >= 0) {
            const struct pflex_csv_field *f = &fv[it];
            /* the rows of one tick share their stamp */
            if (f->len != stamp_len || memcmp(f->s, stamp, f->len)) {
                if (parse_stamp(f->s, f->len, &stamp_time) < 0) {
                    pflex_error_set(err, "%s:%u: column 'timestamp': '%.*s' is not YYYY/MM/DD "
                                    "HH:MM:SS.mmm", name, line, (int)(f->len > 40 ? 40 : f->len),
                                    f->s);
                    goto out;
                }
                if (o->smi_local_time)
                    stamp_time = local_to_utc(stamp_time);
                memcpy(stamp, f->s, f->len);    /* parse_stamp took at most 39 bytes */
                stamp_len = f->len;
            }
            time = stamp_time;
        }
        /* The row's samples are added together (tm_samples), in column
         * order; what is pending is added before anything else that could
         * fail or touch the store (a new series, a bad value), so that the
         * store and the first error are as one tm_sample a value makes. */
        struct row_key *rk = row_key(cache, &k);
        size_t npend = 0;
        for (size_t i = 0; i < ncols; i++) {
            if (cols[i] < 0 && cols[i] != ID_SWCAP)
                continue;
            double v;
            int r = smi_value(fv[i].s, fv[i].len, cols[i], &v);
            if (r < 0) {
                if (tm_samples(t, pend_id, pend_v, npend, time, name, line, err) < 0)
                    goto out;
                pflex_error_set(err, "%s:%u: column %zu: '%.*s' is not a value", name, line,
                                i + 1, (int)(fv[i].len > 40 ? 40 : fv[i].len),
                                fv[i].s);
                goto out;
            }
            if (r == 0) {
                t->skipped++;
                continue;
            }
            k.field = cols[i] == ID_SWCAP ? PFLEX_DCGM_CLOCKS_EVENT_REASONS : cols[i];
            long id = rk ? (long)rk->id[k.field] : -1;
            if (!rk || id == (long)UINT32_MAX) {
                if (tm_samples(t, pend_id, pend_v, npend, time, name, line, err) < 0)
                    goto out;
                npend = 0;
                size_t before = t->nseries;
                if ((id = tm_series(t, &k, name, line, err)) < 0)
                    goto out;
                if (plan && plan->on && t->nseries > before)
                    tm_runs_claim(t, (uint32_t)id, plan_slot(plan, k.gpu, k.field));
                if (rk)
                    rk->id[k.field] = (uint32_t)id;
            }
            pend_id[npend] = (uint32_t)id;
            pend_v[npend++] = v;
        }
        if (tm_samples(t, pend_id, pend_v, npend, time, name, line, err) < 0)
            goto out;
    }
    rc = got < 0 ? -1 : 0;
    if (rc == 0)
        tm_runs_end(t);
out:
    free(cols);
    free(plain);
    free(cache);
    free(plan);
    free(pend_id);
    free(pend_v);
    pflex_csv_fini(&c);
    return rc;
}

int tm_read_smi(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    struct tm_lines ln;
    tm_lines_init(&ln, buf, len, name, tm_limits(t)->max_line);
    return tm_read_smi_lines(t, &ln, name, o, err);
}
