/* test_powerlag.c — a GPU's power after a limit change: the first-order
 * lag's closed form against its definition, and the window's reading
 * against a brute-force mean of the true power. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "pflex/sim/powerlag.h"

#define assert_near(a, b, eps) near_((a), (b), (eps), #a, __LINE__)
static void near_(double a, double b, double eps, const char *what, int line)
{
    if (a == b || fabs(a - b) <= eps)
        return;
    fail_msg("line %d: %s = %.9g, expected %.9g (within %g)", line, what, a, b, eps);
}

static void test_step(void **state)
{
    struct pflex_power_lag l;
    pflex_power_lag_init(&l, 0.1, 1.0, 100, 700);
    assert_near(pflex_power_lag_read_w(&l, 100), 700, 1e-9);
    pflex_power_lag_step(&l, 100, 500);
    /* one tau: 63 % of the way */
    assert_near(pflex_power_lag_true_w(&l, 100.1), 500 + 200 * exp(-1), 1e-9);
    assert_near(pflex_power_lag_true_w(&l, 101), 500 + 200 * exp(-10), 1e-9);
    /* the reading a window later: 500 plus the lag's area over the window */
    assert_near(pflex_power_lag_read_w(&l, 101), 500 + 200 * 0.1 * (1 - exp(-10)), 1e-9);
    assert_near(pflex_power_lag_read_w(&l, 102), 500 + 200 * 0.1 * (exp(-10) - exp(-20)), 1e-9);
    assert_near(pflex_power_lag_target_w(&l), 500, 0);
    /* tau 0 and window 0: the step at once */
    pflex_power_lag_init(&l, 0, 0, 0, 700);
    pflex_power_lag_step(&l, 1, 400);
    assert_near(pflex_power_lag_read_w(&l, 1.0001), 400, 0);
}

/* Random steps, the reading against a Riemann mean of the true power. */
static void test_random_against_brute_force(void **state)
{
    srand(11);
    for (int round = 0; round < 50; round++) {
        struct pflex_power_lag l;
        double tau = 0.02 + (rand() % 100) / 200.0, win = 0.2 + (rand() % 10) / 5.0;
        pflex_power_lag_init(&l, tau, win, 0, 300 + rand() % 400);
        double t = 0;
        for (int k = 0; k < 10; k++) {
            t += (rand() % 100) / 100.0 * win;
            pflex_power_lag_step(&l, t, 200 + rand() % 500);
            double at = t + (rand() % 100) / 80.0 * win;
            int n = 20000;
            double sum = 0;
            for (int i = 0; i < n; i++)
                sum += pflex_power_lag_true_w(&l, at - win + (i + 0.5) * win / n);
            assert_near(pflex_power_lag_read_w(&l, at), sum / n, 0.05);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step),
        cmocka_unit_test(test_random_against_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
