/* test_grow.c — pflex_grow: the room it gives, the contents it keeps, and
 * the sizes it refuses (their bytes would not fit a size_t) without
 * touching the array. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "lib/util/grow.h"

/* From empty: 16, then doubling; each element written survives every grow. */
static void test_sequence(void **state)
{
    (void)state;
    int *a = NULL;
    size_t cap = 0;
    static const size_t want[] = {16, 16, 32, 64, 64, 128, 1024};
    static const size_t need[] = {1, 16, 17, 33, 64, 100, 1000};
    size_t written = 0;
    for (size_t k = 0; k < sizeof need / sizeof *need; k++) {
        assert_int_equal(pflex_grow((void **)&a, &cap, need[k], sizeof *a), 0);
        assert_int_equal(cap, want[k]);
        for (size_t i = 0; i < written; i++)
            assert_int_equal(a[i], (int)(i * 7 + 1));
        for (; written < need[k]; written++)
            a[written] = (int)(written * 7 + 1);
    }
    free(a);
}

/* Need 0, or no more than the room: nothing allocated, nothing moved. */
static void test_zero_and_room(void **state)
{
    (void)state;
    double *a = NULL;
    size_t cap = 0;
    assert_int_equal(pflex_grow((void **)&a, &cap, 0, sizeof *a), 0);
    assert_null(a);
    assert_int_equal(cap, 0);
    assert_int_equal(pflex_grow((void **)&a, &cap, 5, sizeof *a), 0);
    double *before = a;
    assert_int_equal(pflex_grow((void **)&a, &cap, 16, sizeof *a), 0);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 16);
    /* an element of size 0 is a caller's mistake */
    errno = 0;
    assert_int_equal(pflex_grow((void **)&a, &cap, 32, 0), -1);
    assert_int_equal(errno, EINVAL);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 16);
    free(a);
}

/* need * size past SIZE_MAX: -1, ENOMEM, the array as it was. */
static void test_overflow(void **state)
{
    (void)state;
    char *a = NULL;
    size_t cap = 0;
    assert_int_equal(pflex_grow((void **)&a, &cap, 3, 8), 0);
    char *before = a;
    size_t cap0 = cap;
    static const struct { size_t need, size; } bad[] = {
        {SIZE_MAX, 2}, {SIZE_MAX / 8 + 1, 8}, {SIZE_MAX / 3 + 1, 3}, {(size_t)1 << 40, (size_t)1 << 40},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        errno = 0;
        assert_int_equal(pflex_grow((void **)&a, &cap, bad[k].need, bad[k].size), -1);
        assert_int_equal(errno, ENOMEM);
        assert_ptr_equal(a, before);
        assert_int_equal(cap, cap0);
    }
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequence),
        cmocka_unit_test(test_zero_and_room),
        cmocka_unit_test(test_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
