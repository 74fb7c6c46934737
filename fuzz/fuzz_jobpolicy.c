/* fuzz_jobpolicy.c — libFuzzer target for the controller's jobs file. */
#include <stddef.h>
#include <stdint.h>
#include "pflex/io/jobpolicy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pflex_job_policies_t p;
    pflex_error_t err;
    if (pflex_job_policies_read_mem((const char *)data, size, "fuzz", &p, &err) == 0) {
        if (p.n)
            (void)pflex_job_policy_pausable(pflex_job_policy_find(&p, p.p[p.n - 1].job));
        pflex_job_policies_fini(&p);
    }
    return 0;
}
