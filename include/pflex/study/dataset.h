/* pflex/study/dataset.h — jobs with features, ratio PFI, loss curves and clusters,
 * read from sweeps with telemetry columns (SPEC §3), as `pflex correlate`,
 * `pflex train` and the study's prediction sections learn from them.
 *
 * A dataset owns every array and string it holds; pflex_dataset_fini frees
 * them.  The sweeps and cluster files it was read from are not kept.
 */
#ifndef PFLEX_DATASET_H
#define PFLEX_DATASET_H

#include <stddef.h>
#include "pflex/util/error.h"
#include "pflex/flex/features.h"
#include "pflex/flex/predict.h"
#include "pflex/io/sweep.h"

/* The reductions at which whole curves are learnt and predicted. */
#define PFLEX_DATASET_NCUT 12
extern const double pflex_dataset_cuts[PFLEX_DATASET_NCUT];   /* 0.05, 0.10, ..., 0.60 */

struct pflex_dataset {
    size_t n;
    char **job, **cluster, **gpu;   /* gpu may be NULL per job */
    int *gpus;
    double *x;          /* n x PFLEX_FEAT_COUNT */
    double *pfi;        /* ratio PFI, NaN when none */
    double *loss;       /* n x PFLEX_DATASET_NCUT: L at each cut, NaN past x_max */
    double *p0_w, *t0, *cap0_w, *x_max;     /* W, tokens/s, W, fraction */
    unsigned *used, *dropped;
    /* the measured loss curves: cn[i] points cx[i][k], cl[i][k], (0, 0) first */
    size_t *cn;
    double **cx, **cl;
};

/* Read the sweeps files[0..nfiles) (none: stdin).  The metadata features
 * arch_moe and task_ft come from the cluster ("moe-..." and "...-lora" /
 * "...-ft").  clusters: NULL or a CSV with job and cluster columns, or job,
 * arch and task (the study's pfi.csv); without it a job's cluster is its
 * architecture and task read from its name (dense|moe and pt|lora|ft
 * tokens), else its name.  filter: NULL or a substring the job names must
 * hold.  need_tm: NULL, or who needs telemetry columns ("pflex train"): a
 * sweep without them is then refused with a message naming it.  Returns 0
 * and *d (free with pflex_dataset_fini), or -1 with err ("file:line: what";
 * pflex_error_is_system tells a failure of the system). */
int pflex_dataset_load(int nfiles, char **files, const char *clusters, const char *filter,
                       const char *need_tm, struct pflex_dataset *d, pflex_error_t *err);

/* The same from a sweep already read (named name in messages) and the
 * clusters CSV as text (NULL: none; clusters_name names it in messages). */
int pflex_dataset_from_sweep(const pflex_sweep_t *sw, const char *name, const char *clusters,
                             size_t clusters_len, const char *clusters_name, const char *filter,
                             const char *need_tm, struct pflex_dataset *d, pflex_error_t *err);

void pflex_dataset_fini(struct pflex_dataset *d);

/* A deep copy of the jobs i of d with keep[i] into *out (free with
 * pflex_dataset_fini).  Returns 0, or -1 with err (out of memory). */
int pflex_dataset_subset(const struct pflex_dataset *d, const unsigned char *keep,
                         struct pflex_dataset *out, pflex_error_t *err);

/* Group ids 0.. of the dataset's clusters in order of first appearance
 * (malloc'd: free it; NULL when out of memory), and how many. */
int *pflex_dataset_cluster_ids(const struct pflex_dataset *d, size_t *ngroups);

/* The training data of a dataset: targets PFI and the loss at each cut;
 * td->x points into d.  *y is malloc'd (free it; NULL when out of memory). */
void pflex_dataset_train_data(const struct pflex_dataset *d, struct pflex_train_data *td,
                              double **y);

#endif
