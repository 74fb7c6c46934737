/* fuzz_sweep.c — libFuzzer target for the sweep CSV reader and the curve,
 * PFI and shed code it feeds.  The first input byte picks a column mapping
 * so that --columns parsing is fuzzed too. */
#include <stddef.h>
#include <stdint.h>
#include "pflex/flex/pfi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const maps[] = {
        NULL, "job=Workload,cap_w=GPU power cap,power_w=power per GPU",
        "job=a,cap_w=b,power_w=c,throughput=d", "tier=t,floor=f",
    };
    const char *cols = size ? maps[data[0] % 4] : NULL;
    pflex_sweep_t *sw = NULL;
    pflex_error_t err;
    if (pflex_sweep_read_mem((const char *)data + (size ? 1 : 0), size ? size - 1 : 0, "fuzz",
                             cols, &sw, &err) < 0)
        return 0;
    for (size_t j = 0; j < sw->njobs; j++) {
        struct pflex_curve c;
        struct pflex_pfi p;
        if (pflex_curve_init(&c, sw->jobs[j].points, sw->jobs[j].npoints, &err) < 0)
            continue;
        pflex_pfi_compute(&c, 0.3, &p);
        (void)pflex_pfi_at(&c, c.x_max / 2);
        pflex_curve_fini(&c);
    }
    pflex_sweep_destroy(sw);
    return 0;
}
