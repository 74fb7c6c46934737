/* test_curve.c — the loss curve's order of points in every input order.
 *
 * Points whose power does not fall with the cap (noise, or a hostile file
 * with many caps) take the heap sort past insertion's budget; either way
 * the curve must be what the definition gives: the binding points' (x, L)
 * in ascending x (ties by cap), equal x averaged.  Checked against a brute
 * force (qsort of the same points) on seeded random sweeps of every shape. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pflex/flex/curve.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static double unif(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0;
}

struct xlc {
    double x, l, cap;
};

static int by_x_cap(const void *a, const void *b)
{
    const struct xlc *p = a, *q = b;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return (p->cap > q->cap) - (p->cap < q->cap);
}

static void test_any_order(void **state)
{
    (void)state;
    for (int iter = 0; iter < 200; iter++) {
        size_t n = 2 + (size_t)(unif() * (iter < 100 ? 40 : 3000));
        int shape = iter % 4;
        struct pflex_sweep_point *pts = calloc(n, sizeof *pts);
        struct xlc *ref = calloc(n, sizeof *ref);
        assert_non_null(pts);
        assert_non_null(ref);
        for (size_t i = 0; i < n; i++) {
            pts[i].cap_w = 100 + (double)i;               /* ascending, distinct */
            double f = (double)i / (double)n;
            switch (shape) {
            case 0: pts[i].power_w = 50 + 400 * f; break;              /* falls with the cap */
            case 1: pts[i].power_w = 450 - 400 * f; break;             /* rises as it falls */
            case 2: pts[i].power_w = 50 + 400 * unif(); break;         /* noise */
            default: pts[i].power_w = 50 + 10 * floor(40 * unif()); break;  /* many equal x */
            }
            pts[i].throughput = 100 + 900 * unif();
            pts[i].rows = 1;
        }
        pts[n - 1].power_w = 500;                         /* the baseline binds them all */
        pts[n - 1].throughput = 1000;
        size_t m = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            double x = 1.0 - pts[i].power_w / 500;
            if (x > 0)
                ref[m++] = (struct xlc){x, 1.0 - pts[i].throughput / 1000, pts[i].cap_w};
        }
        qsort(ref, m, sizeof *ref, by_x_cap);
        struct pflex_curve c;
        pflex_error_t err;
        assert_int_equal(pflex_curve_init(&c, pts, n, &err), 0);
        size_t k = 1;
        for (size_t a = 0; a < m;) {
            size_t b = a;
            double ls = 0, cs = 0;
            while (b < m && ref[b].x == ref[a].x)
                ls += ref[b].l, cs += ref[b].cap, b++;
            assert_true(k < c.n);
            assert_true(c.x[k] == ref[a].x);
            if (b - a == 1) {
                assert_true(c.loss[k] == ref[a].l);
                assert_true(c.cap_w[k] == ref[a].cap);
            } else {
                assert_true(fabs(c.loss[k] - ls / (double)(b - a)) < 1e-12);
                assert_true(fabs(c.cap_w[k] - cs / (double)(b - a)) < 1e-9);
            }
            k++;
            a = b;
        }
        assert_int_equal(c.n, k);
        pflex_curve_fini(&c);
        free(pts);
        free(ref);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
