/* fuzz_prom_source.c — libFuzzer target for the controller's Prometheus
 * telemetry: two instant-query answers (the DCGM series and pflex's own,
 * the input split at its first NUL byte), then each host read back as an
 * agent's status; prom_source.c and prom_answer.c (the streaming
 * scanner's reader) are built into the target. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "controller/prom_source.c"
#include "controller/prom_answer.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static prom_source_t *p;
    static struct agent_status st;
    pflex_error_t err;
    if (!p && prom_source_create("http://127.0.0.1:9090", 100, &p, &err) < 0)
        abort();
    const char *d = (const char *)data, *nul = memchr(d, '\0', size);
    size_t dl = nul ? (size_t)(nul - d) : size;
    const char *own = nul ? nul + 1 : "{\"status\":\"success\",\"data\":{\"result\":[]}}";
    size_t ol = nul ? size - dl - 1 : strlen(own);
    int stale;
    /* a fixed now: the samples' stamps judged the same on every run */
    if (prom_source_parse(p, d, dl, own, ol, 1.7e9, &stale, &err) == 0)
        for (size_t h = 0; h < p->nhosts && h < 64; h++) {
            if (prom_source_status(p, p->hosts[h].name, &st) == 0
                && (st.ngpus > AGENT_MAX_GPUS || st.njobs > AGENT_MAX_JOBS || strcmp(st.host, p->hosts[h].name)))
                abort();
        }
    return 0;
}
