/* dataset.h — jobs with features, ratio PFI, loss curves and clusters, as
 * `pflex correlate` and `pflex train` read them from sweeps with telemetry
 * columns (SPEC §3). */
#ifndef PFLEX_CLI_DATASET_H
#define PFLEX_CLI_DATASET_H

#include <stddef.h>
#include "pflex/features.h"

/* The reductions at which whole curves are learnt and predicted. */
#define DS_NCUT 12
extern const double ds_cuts[DS_NCUT];   /* 0.05, 0.10, ..., 0.60 */

struct dataset {
    size_t n;
    char **job, **cluster, **gpu;   /* gpu may be NULL per job */
    int *gpus;
    double *x;          /* n x PFLEX_FEAT_COUNT */
    double *pfi;        /* ratio PFI, NaN when none */
    double *loss;       /* n x DS_NCUT: L at each cut, NaN past x_max */
    double *p0_w, *t0, *cap0_w, *x_max;
    unsigned *used, *dropped;
    /* the measured loss curves: cn[i] points cx[i][k], cl[i][k], (0, 0) first */
    size_t *cn;
    double **cx, **cl;
};

/* Read the sweeps (none: stdin).  The metadata features arch_moe and
 * task_ft come from the cluster ("moe-..." and "...-lora"/"...-ft").  clusters: NULL or a CSV with job and
 * cluster columns, or job, arch and task (the study's pfi.csv); without it
 * a job's cluster is its architecture and task read from its name
 * (dense|moe and pt|lora|ft tokens), else its name.  filter: NULL or a
 * substring the job names must hold.  need_tm: fail when a sweep has no
 * telemetry.  Returns PFLEX_EXIT_OK or an exit code with the message
 * printed. */
int dataset_load(const char *cmd, int nfiles, char **files, const char *clusters,
                 const char *filter, int need_tm, struct dataset *d);
void dataset_fini(struct dataset *d);

#endif
