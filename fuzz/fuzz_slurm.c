/* fuzz_slurm.c — libFuzzer target for the job map readers: squeue (text and
 * --json), scontrol show job -d, the job map CSV and hostlists.  The first
 * byte picks the reader; the rest is its input. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/io/slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    pflex_error_t err;
    if (data[0] % 5 == 4) {
        char **h;
        size_t nh;
        if (pflex_slurm_hostlist_expand(s, n, 4096, &h, &nh, &err) == 0)
            pflex_slurm_hostlist_free(h, nh);
        return 0;
    }
    pflex_jobmap_t *m = pflex_jobmap_create();
    if (!m)
        return 0;
    int rc;
    switch (data[0] % 5) {
    case 0:
        rc = pflex_slurm_squeue_read_mem(m, s, n, "fuzz", &err);
        break;
    case 1:
        rc = pflex_slurm_scontrol_read_mem(m, s, n, "fuzz", &err);
        break;
    case 2:
        rc = pflex_jobmap_csv_read_mem(m, s, n, "fuzz", &err);
        break;
    default:    /* squeue then scontrol on the same bytes: the merge */
        rc = pflex_slurm_squeue_read_mem(m, s, n, "fuzz", &err);
        if (rc == 0)
            rc = pflex_slurm_scontrol_read_mem(m, s, n, "fuzz", &err);
        break;
    }
    const struct pflex_jobmap_row *r;
    long k = rc == 0 ? pflex_jobmap_rows(m, &r, &err) : -1;
    if (k > 0) {
        /* every GPU row is found by its host and index, for its job */
        for (long i = 0; i < k; i++)
            if (r[i].gpu >= 0) {
                const struct pflex_jobmap_row *f = pflex_jobmap_find(m, r[i].host, r[i].gpu);
                if (!f || strcmp(f->job, r[i].job))
                    abort();
            }
        /* the CSV written must read back to the same rows */
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        pflex_jobmap_t *back = pflex_jobmap_create();
        if (f && back) {
            pflex_jobmap_write_csv(r, (size_t)k, f);
            fclose(f);
            const struct pflex_jobmap_row *b;
            if (pflex_jobmap_csv_read_mem(back, buf, len, "again", &err) < 0
                || pflex_jobmap_rows(back, &b, &err) != k)
                abort();
            for (long i = 0; i < k; i++)
                if (strcmp(r[i].job, b[i].job) || strcmp(r[i].name, b[i].name)
                    || strcmp(r[i].host, b[i].host) || r[i].gpu != b[i].gpu)
                    abort();
        } else if (f) {
            fclose(f);
        }
        free(buf);
        pflex_jobmap_destroy(back);
    }
    pflex_jobmap_destroy(m);
    return 0;
}
