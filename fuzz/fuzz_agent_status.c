/* fuzz_agent_status.c — libFuzzer target for what the controller reads of
 * an agent: GET /v1/status and PUT /v1/caps answers (agent_client.c is
 * built into the target, as the controller's own objects are not in the
 * fuzzed library).  Whatever parses must be a status the controller can
 * walk: counts within their arrays, every GPU's range sane. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "controller/agent_client.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct agent_status st, copy;
    pflex_error_t err;
    if (agent_parse_status((const char *)data, size, &st, &err) == 0) {
        if (st.ngpus > AGENT_MAX_GPUS || st.njobs > AGENT_MAX_JOBS)
            abort();
        for (size_t k = 0; k < st.ngpus; k++)
            if (!(st.gpu[k].min_w > 0) || !(st.gpu[k].max_w >= st.gpu[k].min_w))
                abort();
        for (size_t m = 0; m < st.njobs; m++)
            if (st.job[m].ngpus < 0 || st.job[m].ngpus > AGENT_MAX_GPUS || !st.job[m].name[0])
                abort();
        agent_status_copy(&copy, &st);
        if (copy.ngpus != st.ngpus || copy.njobs != st.njobs)
            abort();
    }
    struct agent_cap caps[4] = {{.gpu = 0, .cap_w = 500}, {.gpu = 1, .cap_w = 400},
                                {.gpu = 2, .cap_w = 300}, {.gpu = 7, .cap_w = 700}};
    (void)agent_parse_caps_answer((const char *)data, size, caps, 4, &err);
    for (size_t k = 0; k < 4; k++)
        if (!isnan(caps[k].enforced_w) && !isfinite(caps[k].enforced_w))
            abort();
    return 0;
}
