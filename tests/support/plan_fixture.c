/* plan_fixture.c — see plan_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "support/nvml_fixture.h"
#include "support/plan_fixture.h"

pflex_capplan_t *plan_fixture_read(const char *text)
{
    pflex_capplan_t *p = NULL;
    pflex_error_t err;
    if (pflex_capplan_read_file(nvml_fixture_file("plan.json", text), &p, &err))
        fail_msg("read: %s", err.text);
    return p;
}
