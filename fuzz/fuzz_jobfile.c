/* fuzz_jobfile.c — libFuzzer target for job description files; a parsed
 * job is also run through the simulator once, so that any description the
 * parser accepts is one the physics can handle. */
#include <stddef.h>
#include <stdint.h>
#include "pflex/sim/model.h"
#include "pflex/sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pflex_job_desc d;
    pflex_error_t err;
    if (pflex_job_parse((const char *)data, size, "fuzz", &d, &err) < 0)
        return 0;
    pflex_sim_job_t *j = NULL;
    if (pflex_sim_job_create(&d, 1, &j, &err) == 0) {
        struct pflex_sim_measure m;
        const struct pflex_gpu_kind *k = pflex_sim_job_kind(j);
        (void)pflex_sim_job_measure(j, k->max_cap_w, &m, &err);
        (void)pflex_sim_job_measure(j, k->min_cap_w, &m, &err);
        pflex_sim_job_destroy(j);
    }
    return 0;
}
