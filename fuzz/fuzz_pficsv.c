/* fuzz_pficsv.c — libFuzzer target for the PFI CSV reader (--pfi input). */
#include <stddef.h>
#include <stdint.h>
#include "pflex/io/pficsv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pflex_pficsv_t *p = NULL;
    pflex_error_t err;
    /* half the inputs also read a "by" column, as --by does */
    const char *by = size && (data[0] & 1) ? "dram_copy" : NULL;
    if (pflex_pficsv_read_mem_by((const char *)data, size, "fuzz", by, &p, &err) == 0) {
        if (p->n)
            (void)pflex_pficsv_find(p, p->rows[0].job);
        pflex_pficsv_destroy(p);
    }
    return 0;
}
