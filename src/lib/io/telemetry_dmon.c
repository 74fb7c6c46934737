/* telemetry_dmon.c — dcgmi dmon -e FIELD,... output.
 *
 *   #Entity   GRACT        SMACT        DRAMA
 *   ID                                          (units, optional)
 *   GPU 0     1.000        0.916        0.881
 *   GPU-I 0   N/A          N/A          N/A
 *
 * The header names each column by its dmon tag (GRACT), its DCGM field id or
 * its DCGM name; "N/A" is no data.  Columns are separated by runs of spaces.
 * dmon prints no time: a row's time is the number of the tick it belongs to
 * (a tick ends when an entity comes round again).  A MIG GPU instance
 * ("GPU-I N") gets gpu = 10000 + N, apart from the GPUs (docs/telemetry.md).
 */
#include <string.h>
#include "lib/io/telemetry_impl.h"

#define MAX_COLS 128
#define GPU_I_BASE 10000

static size_t words(const char *s, size_t len, const char **w, size_t *wl, size_t max)
{
    size_t n = 0, i = 0;
    while (i < len) {
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i >= len)
            break;
        size_t b = i;
        while (i < len && s[i] != ' ' && s[i] != '\t')
            i++;
        if (n == max)
            return max + 1;
        w[n] = s + b;
        wl[n] = i - b;
        n++;
    }
    return n;
}

int tm_read_dmon(pflex_tm_t *t, const char *buf, size_t len, const char *name,
                 const struct pflex_tm_read_opts *o, pflex_error_t *err)
{
    struct tm_lines ln;
    const char *s, *w[MAX_COLS + 3];
    size_t n, wl[MAX_COLS + 3];
    int cols[MAX_COLS], ncols = -1, got;
    unsigned tick = 0;
    /* entities seen in the current tick, to tell when it ends */
    long seen[64];
    size_t nseen = 0;
    tm_lines_init(&ln, buf, len, name, tm_limits(t)->max_line);
    while ((got = tm_lines_next(&ln, &s, &n, err)) > 0) {
        size_t nw = words(s, n, w, wl, MAX_COLS + 2);
        if (nw == 0)
            continue;
        if (nw > MAX_COLS + 2)
            return pflex_error_set(err, "%s:%u: more than %d columns", name, ln.line, MAX_COLS);
        if (w[0][0] == '#') {
            /* "#Entity TAG ..." or "# Entity TAG ...": the header (dmon
             * repeats it now and then). */
            size_t first = 1;
            if (wl[0] == 1 && nw > 1 && wl[1] == 6 && !memcmp(w[1], "Entity", 6))
                first = 2;
            else if (!(wl[0] == 7 && !memcmp(w[0], "#Entity", 7)))
                continue;   /* another comment */
            int nc = 0;
            for (size_t i = first; i < nw; i++) {
                int f = pflex_dcgm_by_tag(w[i], wl[i]);
                long id;
                if (f < 0)
                    f = pflex_dcgm_by_name(w[i], wl[i]);
                if (f < 0 && tm_parse_index(w[i], wl[i], &id) == 0)
                    f = pflex_dcgm_by_id(id);
                if (nc == MAX_COLS)
                    return pflex_error_set(err, "%s:%u: more than %d columns", name, ln.line,
                                           MAX_COLS);
                cols[nc++] = f; /* -1: a field pflex does not read */
            }
            if (nc == 0)
                return pflex_error_set(err, "%s:%u: a dmon header without fields", name, ln.line);
            ncols = nc;
            continue;
        }
        if (wl[0] == 2 && !memcmp(w[0], "ID", 2))
            continue;   /* the units line under the header */
        if (ncols < 0)
            return pflex_error_set(err, "%s:%u: a row before the '#Entity' header", name,
                                   ln.line);
        int inst;
        if (wl[0] == 3 && !memcmp(w[0], "GPU", 3))
            inst = 0;
        else if (wl[0] == 5 && !memcmp(w[0], "GPU-I", 5))
            inst = 1;
        else if (wl[0] == 5 && !memcmp(w[0], "Error", 5))
            return pflex_error_set(err, "%s:%u: dcgmi reports an error: %.*s", name, ln.line,
                                   (int)(n > 120 ? 120 : n), s);
        else
            return pflex_error_set(err, "%s:%u: '%.*s' is not an entity (GPU N, GPU-I N)", name,
                                   ln.line, (int)(wl[0] > 40 ? 40 : wl[0]), w[0]);
        long gpu;
        if (nw < 2 || tm_parse_index(w[1], wl[1], &gpu) < 0 || gpu >= GPU_I_BASE)
            return pflex_error_set(err, "%s:%u: entity without a valid index", name, ln.line);
        if (inst)
            gpu += GPU_I_BASE;
        if (nw - 2 != (size_t)ncols)
            return pflex_error_set(err, "%s:%u: %zu values, the header has %d fields", name,
                                   ln.line, nw - 2, ncols);
        for (size_t i = 0; i < nseen; i++)
            if (seen[i] == gpu) {
                tick++;
                nseen = 0;
                break;
            }
        if (nseen < sizeof seen / sizeof *seen)
            seen[nseen++] = gpu;
        struct tm_key k = {0};
        if (o->job) {
            k.job = o->job;
            k.job_len = strlen(o->job);
        }
        k.host = o->host ? o->host : "";
        k.host_len = strlen(k.host);
        k.gpu = gpu;
        for (int i = 0; i < ncols; i++) {
            const char *v = w[i + 2];
            size_t vl = wl[i + 2];
            double x;
            if (cols[i] < 0 || (vl == 3 && !memcmp(v, "N/A", 3))) {
                t->skipped++;
                continue;
            }
            if (tm_parse_double(v, vl, &x) < 0)
                return pflex_error_set(err, "%s:%u: column %d: '%.*s' is not a number", name,
                                       ln.line, i + 2, (int)(vl > 40 ? 40 : vl), v);
            if (pflex_dcgm_is_blank(x)) {
                t->skipped++;
                continue;
            }
            k.field = cols[i];
            if (tm_add(t, &k, o->time0_s + tick, x, name, ln.line, err) < 0)
                return -1;
        }
    }
    if (got < 0)
        return -1;
    if (ncols < 0)
        return pflex_error_set(err, "%s: no '#Entity' header", name);
    return 0;
}
