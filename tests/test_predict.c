/* test_predict.c — the PFI models against GSL's own least squares, the
 * closed-form leave-one-out against refits, the model file round trip. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include "pflex/flex/predict.h"

#define assert_dbl(a, b, eps) do { double a_ = (a), b_ = (b); \
    if (!(fabs(a_ - b_) <= (eps))) fail_msg("%.17g != %.17g", a_, b_); } while (0)

enum { N = 60, NCUT = 2 };
static double X[N * PFLEX_FEAT_COUNT], Y[N * (1 + NCUT)];
static const double cuts[NCUT] = {0.1, 0.2};

static void make_data(void)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    for (int i = 0; i < N; i++) {
        for (int f = 0; f < PFLEX_FEAT_COUNT; f++)
            X[i * PFLEX_FEAT_COUNT + f] = NAN;
        double a = gsl_rng_uniform(r), b = gsl_ran_gaussian(r, 1);
        X[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_DRAM_COPY] = a;
        X[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_TENSOR_ACTIVE] = b;
        Y[i * 3] = 1 + 2 * a - 0.5 * b + gsl_ran_gaussian(r, 0.05);
        Y[i * 3 + 1] = 0.05 + 0.01 * a;
        Y[i * 3 + 2] = i % 7 ? 0.1 + 0.02 * a : NAN;
    }
    gsl_rng_free(r);
}

static struct pflex_model_spec spec2(enum pflex_model_kind k)
{
    struct pflex_model_spec s = {k, 2, {PFLEX_FEAT_DRAM_COPY, PFLEX_FEAT_TENSOR_ACTIVE}};
    return s;
}

static void test_ols_matches_gsl(void **state)
{
    make_data();
    struct pflex_train_data d = {N, X, Y, NCUT, cuts, NULL};
    struct pflex_model_spec s = spec2(PFLEX_MODEL_OLS);
    pflex_error_t err;
    pflex_model_t *m = pflex_model_fit(&s, &d, &err);
    if (!m)
        fail_msg("%s", err.text);
    /* GSL's least squares on the raw features */
    gsl_matrix *A = gsl_matrix_alloc(N, 3), *cov = gsl_matrix_alloc(3, 3);
    gsl_vector *y = gsl_vector_alloc(N), *c = gsl_vector_alloc(3);
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc(N, 3);
    for (int i = 0; i < N; i++) {
        gsl_matrix_set(A, i, 0, 1);
        gsl_matrix_set(A, i, 1, X[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_DRAM_COPY]);
        gsl_matrix_set(A, i, 2, X[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_TENSOR_ACTIVE]);
        gsl_vector_set(y, i, Y[i * 3]);
    }
    double chisq;
    gsl_multifit_linear(A, y, c, cov, &chisq, w);
    double probe[PFLEX_FEAT_COUNT], mean[3], se[3];
    for (int f = 0; f < PFLEX_FEAT_COUNT; f++)
        probe[f] = NAN;
    probe[PFLEX_FEAT_DRAM_COPY] = 0.3;
    probe[PFLEX_FEAT_TENSOR_ACTIVE] = -0.7;
    pflex_model_predict(m, probe, mean, se);
    double want = gsl_vector_get(c, 0) + 0.3 * gsl_vector_get(c, 1) - 0.7 * gsl_vector_get(c, 2);
    assert_dbl(mean[0], want, 1e-7);
    assert_dbl(gsl_vector_get(c, 1), 2, 0.05);
    assert_true(se[0] > 0.03 && se[0] < 0.1);
    /* the loss targets: exact linear, and the curve stays non-decreasing */
    assert_dbl(mean[1], 0.05 + 0.003, 1e-6);
    assert_true(mean[2] >= mean[1]);

    /* closed-form LOO sigma equals the RMSE of real leave-one-out refits */
    double pred[N * 3];
    int g[N];
    for (int i = 0; i < N; i++)
        g[i] = i;
    assert_int_equal(pflex_model_cv(&s, &d, g, pred, &err), 0);
    struct pflex_fit_score sc;
    pflex_fit_score(pred, Y, N, 3, &sc);
    assert_int_equal(sc.n, N);
    assert_dbl(m->t[0].sigma, sc.rmse, 1e-6);
    assert_true(sc.r2 > 0.99);
    assert_true(sc.rho > 0.99);
    gsl_matrix_free(A); gsl_matrix_free(cov); gsl_vector_free(y); gsl_vector_free(c);
    gsl_multifit_linear_free(w);
    pflex_model_destroy(m);
}

/* Each target fitted with the others is the same fit, bit for bit, as
 * that target fitted alone: a target reuses the previous one's design only
 * where their rows are the same (here the second and third targets lack as
 * many jobs, not the same ones). */
static void test_targets_alone(void **state)
{
    make_data();
    static double Yl[N * (1 + NCUT)];
    memcpy(Yl, Y, sizeof Yl);
    for (int i = 0; i < N; i++)
        if (i % 7 == 3)
            Yl[i * (1 + NCUT) + 1] = NAN;
    struct pflex_train_data d = {N, X, Yl, NCUT, cuts, NULL};
    struct pflex_model_spec s = spec2(PFLEX_MODEL_RIDGE2);
    pflex_error_t err;
    pflex_model_t *m = pflex_model_fit(&s, &d, &err);
    if (!m)
        fail_msg("%s", err.text);
    size_t q = m->nterms;
    for (int k = 0; k <= NCUT; k++) {
        double yk[N];
        for (int i = 0; i < N; i++)
            yk[i] = Yl[i * (1 + NCUT) + k];
        struct pflex_train_data dk = {N, X, yk, 0, cuts, NULL};
        pflex_model_t *a = pflex_model_fit(&s, &dk, &err);
        if (!a)
            fail_msg("%s", err.text);
        const struct pflex_model_target *t = &m->t[k], *u = &a->t[0];
        assert_int_equal(t->nobs, k ? N - (N + 3) / 7 : N);
        assert_int_equal(t->nobs, u->nobs);
        assert_true(t->intercept == u->intercept && t->sigma == u->sigma
                    && t->lambda == u->lambda);
        assert_memory_equal(t->coef, u->coef, q * sizeof *t->coef);
        assert_memory_equal(t->zmean, u->zmean, q * sizeof *t->zmean);
        assert_memory_equal(t->cov, u->cov, q * q * sizeof *t->cov);
        pflex_model_destroy(a);
    }
    /* three sets of rows: three sets of term means */
    assert_true(memcmp(m->t[0].zmean, m->t[1].zmean, q * sizeof *m->t[0].zmean) != 0);
    assert_true(memcmp(m->t[1].zmean, m->t[2].zmean, q * sizeof *m->t[0].zmean) != 0);
    pflex_model_destroy(m);
}

static void test_json_roundtrip(void **state)
{
    make_data();
    struct pflex_train_data d = {N, X, Y, NCUT, cuts, NULL};
    struct pflex_model_spec s = spec2(PFLEX_MODEL_RIDGE2);
    pflex_error_t err;
    pflex_model_t *m = pflex_model_fit(&s, &d, &err);
    assert_non_null(m);
    char *txt = pflex_model_to_json(m, "{\"jobs\": 60}");
    assert_non_null(txt);
    pflex_model_t *b = pflex_model_from_json(txt, strlen(txt), "m.json", &err);
    if (!b)
        fail_msg("%s", err.text);
    for (int i = 0; i < N; i++) {
        double m1[3], s1[3], m2[3], s2[3];
        pflex_model_predict(m, X + i * PFLEX_FEAT_COUNT, m1, s1);
        pflex_model_predict(b, X + i * PFLEX_FEAT_COUNT, m2, s2);
        for (int k = 0; k < 3; k++) {
            assert_dbl(m1[k], m2[k], 1e-12);
            assert_dbl(s1[k], s2[k], 1e-12);
        }
    }
    char *v2 = strdup(txt);
    char *p = strstr(v2, "\"version\": 1");
    assert_non_null(p);
    p[11] = '9';
    assert_null(pflex_model_from_json(v2, strlen(v2), "m.json", &err));
    assert_non_null(strstr(err.text, "model version 9"));
    assert_null(pflex_model_from_json("{}", 2, "e.json", &err));
    assert_null(pflex_model_from_json("[1,", 3, "t.json", &err));
    free(v2);
    free(txt);
    pflex_model_destroy(b);
    pflex_model_destroy(m);
}

/* A smooth non-linear PFI: the GP must beat OLS out of sample, and its
 * model file must give the same predictions back. */
static void test_gp(void **state)
{
    make_data();
    for (int i = 0; i < N; i++) {
        double a = X[i * PFLEX_FEAT_COUNT + PFLEX_FEAT_DRAM_COPY];
        Y[i * 3] = 1 + sin(6 * a);
    }
    struct pflex_train_data d = {N, X, Y, NCUT, cuts, NULL};
    struct pflex_model_spec gp = spec2(PFLEX_MODEL_GP), ols = spec2(PFLEX_MODEL_OLS);
    pflex_error_t err;
    double pg[N * 3], po[N * 3];
    int g[N];
    for (int i = 0; i < N; i++)
        g[i] = i;
    assert_int_equal(pflex_model_cv(&gp, &d, g, pg, &err), 0);
    assert_int_equal(pflex_model_cv(&ols, &d, g, po, &err), 0);
    struct pflex_fit_score sg, so;
    pflex_fit_score(pg, Y, N, 3, &sg);
    pflex_fit_score(po, Y, N, 3, &so);
    assert_int_equal(sg.n, N);
    assert_true(sg.rmse < 0.5 * so.rmse);
    assert_true(sg.r2 > 0.9);
    pflex_model_t *m = pflex_model_fit(&gp, &d, &err);
    if (!m)
        fail_msg("%s", err.text);
    char *txt = pflex_model_to_json(m, NULL);
    pflex_model_t *b = pflex_model_from_json(txt, strlen(txt), "gp.json", &err);
    if (!b)
        fail_msg("%s", err.text);
    double m1[3], s1[3], m2[3], s2[3];
    for (int i = 0; i < N; i += 7) {
        pflex_model_predict(m, X + i * PFLEX_FEAT_COUNT, m1, s1);
        pflex_model_predict(b, X + i * PFLEX_FEAT_COUNT, m2, s2);
        for (int k = 0; k < 3; k++) {
            assert_dbl(m1[k], m2[k], 1e-9);
            assert_dbl(s1[k], s2[k], 1e-9);
        }
        assert_true(s1[0] > 0);
    }
    /* far from every training job the GP reverts to the mean, less sure */
    double far[PFLEX_FEAT_COUNT];
    for (int f = 0; f < PFLEX_FEAT_COUNT; f++)
        far[f] = NAN;
    far[PFLEX_FEAT_DRAM_COPY] = 50;
    far[PFLEX_FEAT_TENSOR_ACTIVE] = 50;
    pflex_model_predict(m, far, m2, s2);
    assert_true(s2[0] > s1[0]);
    assert_dbl(m2[0], m->t[0].intercept, 1e-6);
    free(txt);
    pflex_model_destroy(b);
    pflex_model_destroy(m);
}

static void test_too_few(void **state)
{
    make_data();
    struct pflex_train_data d = {3, X, Y, NCUT, cuts, NULL};
    struct pflex_model_spec s = spec2(PFLEX_MODEL_RIDGE);
    pflex_error_t err;
    assert_null(pflex_model_fit(&s, &d, &err));
    assert_non_null(strstr(err.text, "too few"));
}

/* The fewest jobs a model is fitted on: terms + 2 (ridge2 on the six
 * compact features: 27 terms, 29 jobs), 5 for a GP; one job fewer fails
 * and says how many it needs, and a leave-one-out on exactly that many
 * jobs predicts nothing (each fold has one too few), which is why the
 * commands check the folds first. */
static void test_min_jobs(void **state)
{
    make_data();
    struct pflex_model_spec r6 = {PFLEX_MODEL_RIDGE2, 6, {PFLEX_FEAT_DRAM_COPY,
        PFLEX_FEAT_ARITH_INTENSITY, PFLEX_FEAT_TENSOR_ACTIVE, PFLEX_FEAT_POWER_OVER_LIMIT,
        PFLEX_FEAT_SM_ACTIVE, PFLEX_FEAT_MEM_COPY_UTIL}};
    struct pflex_model_spec r2 = spec2(PFLEX_MODEL_RIDGE2), gp = spec2(PFLEX_MODEL_GP);
    struct pflex_model_spec ols = {PFLEX_MODEL_OLS, 1, {PFLEX_FEAT_DRAM_COPY}};
    assert_int_equal(pflex_model_min_jobs(&r6), 29);
    assert_int_equal(pflex_model_min_jobs(&r2), 7);
    assert_int_equal(pflex_model_min_jobs(&ols), 3);
    assert_int_equal(pflex_model_min_jobs(&gp), 5);
    pflex_error_t err;
    struct pflex_train_data d = {6, X, Y, NCUT, cuts, NULL};
    assert_null(pflex_model_fit(&r2, &d, &err));
    assert_non_null(strstr(err.text, "(needs 7)"));
    d.n = 7;
    pflex_model_t *m = pflex_model_fit(&r2, &d, &err);
    assert_non_null(m);
    pflex_model_destroy(m);
    int g[7];
    double pred[7 * (1 + NCUT)];
    for (int i = 0; i < 7; i++)
        g[i] = i;
    assert_int_equal(pflex_model_cv(&r2, &d, g, pred, &err), 0);
    for (int i = 0; i < 7; i++)
        assert_true(isnan(pred[i * (1 + NCUT)]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ols_matches_gsl),
        cmocka_unit_test(test_targets_alone),
        cmocka_unit_test(test_json_roundtrip),
        cmocka_unit_test(test_gp),
        cmocka_unit_test(test_too_few),
        cmocka_unit_test(test_min_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
