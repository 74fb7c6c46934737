/* study_predict.h — the study's prediction sections (PAPER.md §4 Table 3,
 * the H100 transfer, and the §6 allocation protocol) on a study's sweeps. */
#ifndef PFLEX_CLI_STUDY_PREDICT_H
#define PFLEX_CLI_STUDY_PREDICT_H

#include <stdio.h>
#include <jansson.h>
#include "pflex/error.h"

/* Run the sections on sweeps_csv (a sweep CSV with telemetry, as `pflex
 * study` writes it); clusters_csv NULL or a CSV with job,cluster or
 * job,arch,task (the study's pfi.csv); workloads (500) draws of 100 jobs
 * per mix, seeded by seed.  Returns 0 and *out (a new JSON object:
 * "table3", "h100_transfer", "allocation"), or an exit code (2 bad input,
 * 1 internal) with the message printed. */
int study_predict(const char *sweeps_csv, const char *clusters_csv, unsigned workloads,
                  unsigned long seed, json_t **out);

/* The sections as human tables. */
void study_predict_print(FILE *f, const json_t *doc);

#endif
