/* nvml_fixture.c — see nvml_fixture.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/hw/nvml.h"
#include "support/nvml_fixture.h"

static char lib_path[4096];
static char dir[2048];
static char state_path[4096];

int nvml_fixture_init(const char *name)
{
    const char *build = getenv("PFLEX_BUILD");
    snprintf(lib_path, sizeof lib_path, "%s/fake-nvml/libnvidia-ml.so.1",
             build && *build ? build : "build");
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pflex-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(state_path, sizeof state_path, "%s/state", dir);
    setenv("FAKE_NVML_STATE", state_path, 1);
    return 0;
}

int nvml_fixture_fini(void)
{
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

const char *nvml_fixture_lib(void)
{
    return lib_path;
}

const char *nvml_fixture_dir(void)
{
    return dir;
}

void nvml_fixture_write(const char *contents)
{
    FILE *f = fopen(state_path, "w");
    assert_non_null(f);
    fputs(contents, f);
    fclose(f);
}

void nvml_fixture_remove(void)
{
    remove(state_path);
}

const char *nvml_fixture_file(const char *name, const char *text)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static char run_path[2100];

const char *nvml_fixture_run_dir(void)
{
    static int k;
    snprintf(run_path, sizeof run_path, "%s/run%d", dir, k++);
    return run_path;
}

int nvml_fixture_run_dir_remove(void)
{
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", run_path);
    return system(cmd) == 0 ? 0 : -1;
}

double nvml_fixture_value(const char *key)
{
    FILE *f = fopen(state_path, "r");
    if (!f)
        return NAN;
    char line[512];
    double v = NAN;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == '=')
            v = strtod(line + n + 1, NULL);
    fclose(f);
    return v;
}

void nvml_fixture_open(pflex_gpu_t *g)
{
    pflex_error_t err = {{0}};
    if (pflex_nvml_open(lib_path, g, &err))
        fail_msg("pflex_nvml_open: %s", err.text);
}
