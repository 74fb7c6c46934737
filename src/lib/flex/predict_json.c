/* predict_json.c — the model file: versioned JSON (docs/telemetry.md).
 *
 *   {"format": "pflex-model", "version": 1, "kind": "ridge",
 *    "features": ["dram_copy_product", ...], "center": [...], "scale": [...],
 *    "term_center": [...], "term_scale": [...], "cuts": [0.05, ...],
 *    "targets": [{"name": "pfi", "nobs", "intercept", "coef": [...],
 *                 "sigma", "lambda", "zmean": [...], "cov": [...]}, ...],
 *    "training": {...}}
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "pflex/flex/predict.h"

static json_t *reals(const double *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

char *pflex_model_to_json(const pflex_model_t *m, const char *extra)
{
    json_t *o = json_object(), *feats = json_array(), *targets = json_array();
    size_t q = m->nterms;
    json_object_set_new(o, "format", json_string("pflex-model"));
    json_object_set_new(o, "version", json_integer(PFLEX_MODEL_VERSION));
    json_object_set_new(o, "kind", json_string(pflex_model_kind_name(m->spec.kind)));
    for (size_t i = 0; i < m->spec.nfeat; i++)
        json_array_append_new(feats, json_string(pflex_feat_name(m->spec.feat[i])));
    json_object_set_new(o, "features", feats);
    json_object_set_new(o, "center", reals(m->center, m->spec.nfeat));
    json_object_set_new(o, "scale", reals(m->scale, m->spec.nfeat));
    json_object_set_new(o, "term_center", reals(m->tcenter, q));
    json_object_set_new(o, "term_scale", reals(m->tscale, q));
    json_object_set_new(o, "cuts", reals(m->cuts, m->ncut));
    for (size_t k = 0; k < m->ntarget; k++) {
        const struct pflex_model_target *t = &m->t[k];
        json_t *j = json_object();
        char name[32];
        if (k == 0)
            snprintf(name, sizeof name, "pfi");
        else
            snprintf(name, sizeof name, "loss@%.4g", m->cuts[k - 1]);
        json_object_set_new(j, "name", json_string(name));
        json_object_set_new(j, "nobs", json_integer((json_int_t)t->nobs));
        json_object_set_new(j, "intercept", json_real(t->intercept));
        json_object_set_new(j, "coef", reals(t->coef, q));
        json_object_set_new(j, "sigma", json_real(t->sigma));
        json_object_set_new(j, "lambda", json_real(t->lambda));
        json_object_set_new(j, "zmean", reals(t->zmean, q));
        json_object_set_new(j, "cov", t->cov ? reals(t->cov, q * q) : json_array());
        if (m->spec.kind == PFLEX_MODEL_GP) {
            json_object_set_new(j, "alpha", reals(t->alpha, m->ntrain));
            json_object_set_new(j, "s2", json_real(t->gp_s2));
        }
        json_array_append_new(targets, j);
    }
    json_object_set_new(o, "targets", targets);
    if (m->spec.kind == PFLEX_MODEL_GP) {
        json_t *g = json_object();
        json_object_set_new(g, "ntrain", json_integer((json_int_t)m->ntrain));
        json_object_set_new(g, "length", json_real(m->gp_length));
        json_object_set_new(g, "ratio", json_real(m->gp_ratio));
        json_object_set_new(g, "z", reals(m->gp_z, m->ntrain * q));
        json_object_set_new(g, "kinv", reals(m->gp_kinv, m->ntrain * m->ntrain));
        json_object_set_new(o, "gp", g);
    }
    if (extra) {
        json_t *e = json_loads(extra, 0, NULL);
        if (e)
            json_object_set_new(o, "training", e);
    }
    char *s = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    return s;
}

static int get_reals(json_t *o, const char *key, double *out, size_t n)
{
    json_t *a = json_object_get(o, key);
    if (!json_is_array(a) || json_array_size(a) != n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
            return -1;
        out[i] = json_number_value(v);
    }
    return 0;
}

static int get_real(json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return -1;
    *out = json_number_value(v);
    return 0;
}

pflex_model_t *pflex_model_from_json(const char *buf, size_t len, const char *name,
                                     pflex_error_t *err)
{
    json_error_t je;
    json_t *o = json_loadb(buf, len, 0, &je);
    pflex_model_t *m = NULL;
    if (!o)
        return pflex_error_set(err, "%s:%d: %s", name, je.line, je.text), NULL;
    json_t *fmt = json_object_get(o, "format"), *ver = json_object_get(o, "version");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "pflex-model")) {
        pflex_error_set(err, "%s: not a pflex model file (\"format\": \"pflex-model\")", name);
        goto fail;
    }
    if (!json_is_integer(ver) || json_integer_value(ver) != PFLEX_MODEL_VERSION) {
        pflex_error_set(err, "%s: model version %lld; this pflex reads version %d", name,
                        json_is_integer(ver) ? (long long)json_integer_value(ver) : -1LL,
                        PFLEX_MODEL_VERSION);
        goto fail;
    }
    if (!(m = calloc(1, sizeof *m))) {
        pflex_error_set(err, "%s: out of memory", name);
        goto fail;
    }
    json_t *kind = json_object_get(o, "kind");
    int k = -1;
    for (int i = 0; i < PFLEX_MODEL_KIND_COUNT && json_is_string(kind); i++)
        if (!strcmp(json_string_value(kind), pflex_model_kind_name(i)))
            k = i;
    if (k < 0) {
        pflex_error_set(err, "%s: \"kind\": ols, ridge, ridge2 or gp", name);
        goto fail;
    }
    m->spec.kind = (enum pflex_model_kind)k;
    json_t *feats = json_object_get(o, "features");
    if (!json_is_array(feats) || !json_array_size(feats) ||
        json_array_size(feats) > PFLEX_FEAT_COUNT) {
        pflex_error_set(err, "%s: \"features\": a list of 1 to %d feature names", name,
                        PFLEX_FEAT_COUNT);
        goto fail;
    }
    m->spec.nfeat = json_array_size(feats);
    for (size_t i = 0; i < m->spec.nfeat; i++) {
        json_t *f = json_array_get(feats, i);
        int fi = json_is_string(f) ? pflex_feat_by_name(json_string_value(f)) : -1;
        if (fi < 0) {
            pflex_error_set(err, "%s: features[%zu]: not a feature pflex knows", name, i);
            goto fail;
        }
        m->spec.feat[i] = fi;
    }
    size_t p = m->spec.nfeat;
    size_t q = m->spec.kind == PFLEX_MODEL_RIDGE2 ? p + p + p * (p - 1) / 2 : p;
    if (q > PFLEX_MODEL_MAX_TERMS) {
        pflex_error_set(err, "%s: too many terms", name);
        goto fail;
    }
    m->nterms = q;
    json_t *cuts = json_object_get(o, "cuts"), *targets = json_object_get(o, "targets");
    if (!json_is_array(cuts) || json_array_size(cuts) > PFLEX_MODEL_MAX_CUTS) {
        pflex_error_set(err, "%s: \"cuts\": at most %d reductions", name, PFLEX_MODEL_MAX_CUTS);
        goto fail;
    }
    m->ncut = json_array_size(cuts);
    m->ntarget = 1 + m->ncut;
    if (get_reals(o, "cuts", m->cuts, m->ncut) < 0 || get_reals(o, "center", m->center, p) < 0 ||
        get_reals(o, "scale", m->scale, p) < 0 || get_reals(o, "term_center", m->tcenter, q) < 0 ||
        get_reals(o, "term_scale", m->tscale, q) < 0) {
        pflex_error_set(err, "%s: cuts, center, scale, term_center or term_scale malformed", name);
        goto fail;
    }
    for (size_t i = 0; i < p; i++)
        if (!(m->scale[i] > 0)) {
            pflex_error_set(err, "%s: scale[%zu] is not positive", name, i);
            goto fail;
        }
    for (size_t i = 0; i < q; i++)
        if (!(m->tscale[i] > 0)) {
            pflex_error_set(err, "%s: term_scale[%zu] is not positive", name, i);
            goto fail;
        }
    if (!json_is_array(targets) || json_array_size(targets) != m->ntarget) {
        pflex_error_set(err, "%s: \"targets\": %zu expected (pfi and one per cut)", name,
                        m->ntarget);
        goto fail;
    }
    if (m->spec.kind == PFLEX_MODEL_GP) {
        json_t *g = json_object_get(o, "gp"), *nn = json_object_get(g, "ntrain");
        if (!json_is_integer(nn) || json_integer_value(nn) < 1 ||
            json_integer_value(nn) > PFLEX_GP_MAX_TRAIN || get_real(g, "length", &m->gp_length) < 0 ||
            get_real(g, "ratio", &m->gp_ratio) < 0 || !(m->gp_length > 0) || m->gp_ratio < 0) {
            pflex_error_set(err, "%s: \"gp\": ntrain (1..%d), length > 0, ratio >= 0", name,
                            PFLEX_GP_MAX_TRAIN);
            goto fail;
        }
        m->ntrain = (size_t)json_integer_value(nn);
        m->gp_z = malloc(m->ntrain * q * sizeof *m->gp_z);
        m->gp_kinv = malloc(m->ntrain * m->ntrain * sizeof *m->gp_kinv);
        if (!m->gp_z || !m->gp_kinv || get_reals(g, "z", m->gp_z, m->ntrain * q) < 0 ||
            get_reals(g, "kinv", m->gp_kinv, m->ntrain * m->ntrain) < 0) {
            pflex_error_set(err, "%s: gp.z or gp.kinv malformed", name);
            goto fail;
        }
    }
    for (size_t t = 0; t < m->ntarget; t++) {
        json_t *j = json_array_get(targets, t), *nobs = json_object_get(j, "nobs");
        struct pflex_model_target *mt = &m->t[t];
        if (!json_is_integer(nobs) || json_integer_value(nobs) < 0 ||
            get_real(j, "intercept", &mt->intercept) < 0 || get_real(j, "sigma", &mt->sigma) < 0 ||
            get_real(j, "lambda", &mt->lambda) < 0 || get_reals(j, "coef", mt->coef, q) < 0 ||
            get_reals(j, "zmean", mt->zmean, q) < 0 || mt->sigma < 0) {
            pflex_error_set(err, "%s: targets[%zu] malformed", name, t);
            goto fail;
        }
        mt->nobs = (size_t)json_integer_value(nobs);
        if (m->spec.kind == PFLEX_MODEL_GP) {
            if (!(mt->alpha = malloc(m->ntrain * sizeof *mt->alpha)) ||
                get_reals(j, "alpha", mt->alpha, m->ntrain) < 0 ||
                get_real(j, "s2", &mt->gp_s2) < 0 || mt->gp_s2 < 0) {
                pflex_error_set(err, "%s: targets[%zu]: alpha or s2 malformed", name, t);
                goto fail;
            }
        }
        json_t *cov = json_object_get(j, "cov");
        if (json_is_array(cov) && json_array_size(cov) == q * q) {
            if (!(mt->cov = malloc(q * q * sizeof *mt->cov)) ||
                get_reals(j, "cov", mt->cov, q * q) < 0) {
                pflex_error_set(err, "%s: targets[%zu].cov malformed", name, t);
                goto fail;
            }
        } else if (!json_is_array(cov) || json_array_size(cov) != 0) {
            pflex_error_set(err, "%s: targets[%zu].cov: %zu x %zu numbers", name, t, q, q);
            goto fail;
        }
    }
    json_decref(o);
    return m;
fail:
    json_decref(o);
    pflex_model_destroy(m);
    return NULL;
}
