/* nvml_fixture.h — the fake libnvidia-ml.so.1 (tests/fake_nvml/) as the
 * nvml tests use it: the library the suite built ($PFLEX_BUILD/fake-nvml/,
 * default build/), a temporary folder of the test's own, and the fake's
 * state file in it (FAKE_NVML_STATE), which sets what the GPUs report and
 * records what was done to them. */
#ifndef PFLEX_TEST_NVML_FIXTURE_H
#define PFLEX_TEST_NVML_FIXTURE_H

#include "pflex/hw/gpu.h"

/* Finds the library, makes the folder ($TMPDIR/pflex-test-NAME-XXXXXX)
 * and points the fake at its state file.  0, or -1 (said on stderr). */
int nvml_fixture_init(const char *name);
/* Removes the folder and all in it: 0, or -1. */
int nvml_fixture_fini(void);

const char *nvml_fixture_lib(void);     /* the fake library's path */
const char *nvml_fixture_dir(void);     /* the test's folder */

/* Write a fresh state file (contents may be empty: the fake's defaults);
 * remove it. */
void nvml_fixture_write(const char *contents);
void nvml_fixture_remove(void);
/* Write text to the file name in the test's folder, failing the test when
 * it cannot; returns its path (valid until the next call). */
const char *nvml_fixture_file(const char *name, const char *text);
/* A new state folder for the limit guard, never used before: DIR/runN in
 * the test's folder (the guard makes it); valid until the next call.  And
 * its removal with all in it: 0, or -1. */
const char *nvml_fixture_run_dir(void);
int nvml_fixture_run_dir_remove(void);
/* A value from the state file ("gpu0.limit_mw"), NaN when absent. */
double nvml_fixture_value(const char *key);
/* pflex_nvml_open on the fake, failing the test when it fails. */
void nvml_fixture_open(pflex_gpu_t *g);

#endif
