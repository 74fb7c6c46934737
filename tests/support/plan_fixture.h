/* plan_fixture.h — a plan of per-job caps (pflex/io/capplan.h) from JSON
 * text, as the plan tests write them: the file plan.json in the fake
 * NVML's test folder (nvml_fixture.h), read back. */
#ifndef PFLEX_TEST_PLAN_FIXTURE_H
#define PFLEX_TEST_PLAN_FIXTURE_H

#include "pflex/io/capplan.h"

/* The plan text reads as, failing the test with the reader's message when
 * it does not read.  The caller destroys it. */
pflex_capplan_t *plan_fixture_read(const char *text);

#endif
