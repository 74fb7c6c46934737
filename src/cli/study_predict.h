/* study_predict.h — the study's prediction sections (pflex_study_predict,
 * pflex/study/study.h) as human tables, for `pflex study` and `pflex train
 * --study`. */
#ifndef PFLEX_CLI_STUDY_PREDICT_H
#define PFLEX_CLI_STUDY_PREDICT_H

#include <stdio.h>
#include <jansson.h>

/* The sections of doc (as pflex_study_predict makes it) as tables to f. */
void study_predict_print(FILE *f, const json_t *doc);

#endif
