/* fuzz_pfi_opts.c — libFuzzer target for pflex pfi's --metric and --grid
 * values and for pflex_pfi_eval with what they give.
 *
 * Input: line 1 is a --metric value, line 2 a --grid value, the rest (if
 * any) a sweep CSV; without one a small fixed sweep is used.  The first
 * byte's low bit sets grid_partial.  Parsed values
 * must satisfy what pfi.h promises (grid ascending, distinct, in range; the
 * metric's name parses back to it), and every result must add up. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/flex/pfi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed[] = "job,cap_w,power_w,throughput\n"
                            "a,700,650,1000\na,600,580,980\na,500,500,930\na,400,400,820\n"
                            "a,300,300,600\na,200,200,0\nb,700,650,10\nb,200,700,9\n";

static char *line(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *e = *p;
    while (e < end && *e != '\n')
        e++;
    size_t n = (size_t)(e - *p);
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, *p, n);
    s[n] = 0;
    *p = e < end ? e + 1 : e;
    return s;
}

static void check(const struct pflex_sweep_job *job, const struct pflex_pfi_opts *o)
{
    struct pflex_pfi_result r;
    pflex_error_t err;
    if (pflex_pfi_eval(job->points, job->npoints, o, &r, &err) < 0)
        return;
    if (r.points_used + r.points_dropped + r.off_grid + 1 != r.npoints)
        abort();
    if (r.valid ? !isfinite(r.pfi) || r.reason : !isnan(r.pfi) || !r.reason)
        abort();
    for (size_t i = 1; i < r.npoints; i++)
        if (!(r.points[i].cap_w > r.points[i - 1].cap_w))
            abort();
    pflex_pfi_result_fini(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char *ms = line(&p, end), *gs = line(&p, end);
    struct pflex_pfi_opts o = {PFLEX_PFI_METRIC_RATIO, NULL, 0, 0, size && (data[0] & 1)};
    double grid[PFLEX_PFI_GRID_MAX];
    size_t n = 0;
    pflex_error_t err;
    int mok = pflex_pfi_metric_parse(ms, &o.metric, &err) == 0;
    if (mok) {
        enum pflex_pfi_metric back;
        if (pflex_pfi_metric_parse(pflex_pfi_metric_name(o.metric), &back, NULL) < 0
            || back != o.metric)
            abort();
    }
    if (pflex_pfi_grid_parse(gs, grid, &n, &err) == 0) {
        if (n == 0 || n > PFLEX_PFI_GRID_MAX)
            abort();
        for (size_t i = 0; i < n; i++)
            if (!(grid[i] > 0 && grid[i] <= 1e5) || (i && !(grid[i] > grid[i - 1])))
                abort();
        o.grid_w = grid;
        o.ngrid = n;
    }
    if (mok || o.ngrid) {
        pflex_sweep_t *sw = NULL;
        int own = p < end;
        if (pflex_sweep_read_mem(own ? (const char *)p : fixed, own ? (size_t)(end - p)
                                 : sizeof fixed - 1, "fuzz", NULL, &sw, &err) == 0) {
            for (size_t j = 0; j < sw->njobs; j++)
                check(&sw->jobs[j], &o);
            pflex_sweep_destroy(sw);
        }
    }
    free(ms);
    free(gs);
    return 0;
}
