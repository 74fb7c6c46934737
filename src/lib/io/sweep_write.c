/* sweep_write.c — writing sweep CSV rows that pflex_sweep_read_* reads back. */
#include <math.h>
#include <string.h>
#include "pflex/io/csv.h"
#include "pflex/io/sweep.h"

int pflex_sweep_write_header(FILE *f, int telemetry)
{
    fputs("job,gpu,gpus,cap_w,power_w,throughput", f);
    if (telemetry)
        for (int k = 0; k < PFLEX_TM_COUNT; k++)
            fprintf(f, ",%s", pflex_tm_name((enum pflex_tm)k));
    return fputc('\n', f) == EOF ? -1 : 0;
}

int pflex_sweep_write_row(FILE *f, int telemetry, const char *job, const char *gpu, int gpus,
                          double cap_w, double power_w, double throughput, const double *tm)
{
    pflex_csv_write_field(f, job);
    fputc(',', f);
    pflex_csv_write_field(f, gpu ? gpu : "");
    fprintf(f, ",%d,%.10g,%.10g,", gpus, cap_w, power_w);
    if (isfinite(throughput))           /* unknown (power-only sweeps): empty */
        fprintf(f, "%.10g", throughput);
    if (telemetry)
        for (int k = 0; k < PFLEX_TM_COUNT; k++) {
            fputc(',', f);
            if (tm && isfinite(tm[k]))
                fprintf(f, "%.6g", tm[k]);
        }
    return fputc('\n', f) == EOF ? -1 : 0;
}
