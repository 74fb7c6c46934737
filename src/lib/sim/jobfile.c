/* jobfile.c — job description files (docs/job-format.md), read with
 * Jansson.  Syntax errors carry Jansson's line and column; content errors
 * name the field and the line where its key appears. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "pflex/csv.h"
#include "pflex/model.h"
#include "pflex/sweep.h"

struct ctx {
    const char *buf;
    size_t len;
    const char *name;
    pflex_error_t *err;
    /* The fields set so far and where ("" = the top level, else the group):
     * a field given twice, at the top level and in "model" say, is refused,
     * as JSON_REJECT_DUPLICATES refuses it twice in one object. */
    struct { const char *key, *group; } seen[64];
    size_t nseen;
    const char *group;  /* the group being read, or "" */
};

/* Line of the first `"key" :` in the text (1 when not found). */
static int key_line(const struct ctx *c, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl + 2 <= c->len; i++) {
        if (c->buf[i] != '"' || memcmp(c->buf + i + 1, key, kl) || c->buf[i + kl + 1] != '"')
            continue;
        size_t p = i + kl + 2;
        while (p < c->len && (c->buf[p] == ' ' || c->buf[p] == '\t' || c->buf[p] == '\r'
                              || c->buf[p] == '\n'))
            p++;
        if (p < c->len && c->buf[p] == ':') {
            int line = 1;
            for (size_t q = 0; q < i; q++)
                line += c->buf[q] == '\n';
            return line;
        }
    }
    return 1;
}

static int field_error(const struct ctx *c, const char *key, const char *what)
{
    return pflex_error_set(c->err, "%s:%d: field '%s': %s", c->name, key_line(c, key), key, what);
}

static int get_int(const struct ctx *c, const char *key, json_t *v, int lo, int *out)
{
    double x;
    if (json_is_integer(v))
        x = (double)json_integer_value(v);
    else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)))
        x = json_real_value(v);
    else
        return field_error(c, key, "must be a whole number");
    if (x < lo || x > 1e9) {
        char msg[64];
        snprintf(msg, sizeof msg, "%.0f is out of range (at least %d)", x, lo);
        return field_error(c, key, msg);
    }
    *out = (int)x;
    return 0;
}

static int set_field_once(struct ctx *c, struct pflex_job_desc *d, const char *key, json_t *v);

static int set_field(struct ctx *c, struct pflex_job_desc *d, const char *key, json_t *v)
{
    for (size_t i = 0; i < c->nseen; i++)
        if (!strcmp(c->seen[i].key, key)) {
            char msg[160];
            snprintf(msg, sizeof msg, "given twice (%s%s%s and %s%s%s)",
                     *c->seen[i].group ? "in \"" : "at the top level", c->seen[i].group,
                     *c->seen[i].group ? "\"" : "", *c->group ? "in \"" : "at the top level",
                     c->group, *c->group ? "\"" : "");
            return field_error(c, key, msg);
        }
    if (c->nseen < sizeof c->seen / sizeof *c->seen) {
        c->seen[c->nseen].key = key;
        c->seen[c->nseen].group = c->group;
        c->nseen++;
    }
    return set_field_once(c, d, key, v);
}

static int set_field_once(struct ctx *c, struct pflex_job_desc *d, const char *key, json_t *v)
{
    static const struct { const char *key; size_t off; int lo; } ints[] = {
#define F(k, lo) {#k, offsetof(struct pflex_job_desc, k), lo}
        F(gpus, 1), F(layers, 1), F(hidden, 1), F(heads, 1), F(kv_heads, 1), F(ffn_hidden, 1),
        F(vocab, 1), F(seq_len, 1), F(micro_batch, 1), F(global_batch, 1), F(gen_len, 1),
        F(experts, 0), F(top_k, 1), F(dp, 1), F(tp, 1), F(pp, 1), F(ep, 1), F(zero, 0),
#undef F
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (!strcmp(key, ints[i].key))
            return get_int(c, key, v, ints[i].lo, (int *)((char *)d + ints[i].off));
    if (!strcmp(key, "name") || !strcmp(key, "gpu")) {
        const char *s = json_string_value(v);
        if (!s || !*s)
            return field_error(c, key, "must be a non-empty string");
        size_t cap = !strcmp(key, "name") ? sizeof d->name : sizeof d->gpu;
        if (strlen(s) >= cap)
            return field_error(c, key, "is too long");
        size_t at;
        if (pflex_name_problem(s, strlen(s), &at))
            return field_error(c, key, "holds a control character (names are plain text, so "
                                       "that every output writes them whole)");
        if (!strcmp(key, "gpu") && !pflex_gpu_kind_find(s))
            return field_error(c, key, "unknown GPU kind (H100-SXM5-80GB, H200-SXM-141GB, "
                                       "A100-SXM4-40GB, A100-SXM4-80GB, A100-PCIE-80GB, A40, "
                                       "L40S, V100-SXM2-32GB, B200-SXM-180GB)");
        snprintf(!strcmp(key, "name") ? d->name : d->gpu, cap, "%s", s);
        return 0;
    }
    if (!strcmp(key, "params_b")) {
        if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e5)
            return field_error(c, key, "must be a positive number of billions");
        d->params_b = json_number_value(v);
        return 0;
    }
    if (!strcmp(key, "task")) {
        if (!json_is_string(v) || pflex_job_kind_parse(json_string_value(v), &d->kind) < 0)
            return field_error(c, key, "must be \"pretrain\", \"finetune\", \"lora\" or "
                                       "\"inference\"");
        return 0;
    }
    if (!strcmp(key, "activation_checkpointing") || !strcmp(key, "eager")) {
        if (!json_is_boolean(v))
            return field_error(c, key, "must be true or false");
        *(key[0] == 'e' ? &d->eager : &d->act_ckpt) = json_is_true(v);
        return 0;
    }
    /* The sim's further shape and software fields (pflex_job_field_set). */
    const char *why = NULL;
    int got = pflex_job_field_set(d, key, json_is_boolean(v) ? 'b' : json_is_number(v) ? 'n'
                                          : json_is_string(v) ? 's' : '?',
                                  json_is_number(v) ? json_number_value(v) : json_is_true(v),
                                  json_string_value(v), &why);
    if (got != 0)
        return got > 0 ? 0 : field_error(c, key, why);
    return field_error(c, key, "unknown field (see docs/job-format.md)");
}

static int set_group(struct ctx *c, struct pflex_job_desc *d, const char *group, json_t *o)
{
    if (!json_is_object(o))
        return field_error(c, group, "must be an object");
    const char *key;
    json_t *v;
    c->group = group;
    json_object_foreach(o, key, v)
        if (set_field(c, d, key, v) < 0)
            return -1;
    c->group = "";
    return 0;
}

int pflex_job_parse(const char *buf, size_t len, const char *name,
                    struct pflex_job_desc *out, pflex_error_t *err)
{
    struct ctx c = {.buf = buf, .len = len, .name = name ? name : "job", .err = err, .group = ""};
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return pflex_error_set(err, "%s:%d:%d: %s", c.name, je.line, je.column, je.text);
    int rc = -1;
    struct pflex_job_desc d;
    memset(&d, 0, sizeof d);
    if (!json_is_object(root)) {
        pflex_error_set(err, "%s:1: a job file is one JSON object", c.name);
        goto out;
    }
    json_t *preset = json_object_get(root, "preset");
    if (preset) {
        if (!json_is_string(preset) || pflex_job_preset_find(json_string_value(preset), &d) < 0) {
            field_error(&c, "preset", "unknown preset (pflex sweep --list-presets)");
            goto out;
        }
        d.dp = 0;       /* re-derived from gpus, tp and pp, which the file may change */
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "preset") || !strcmp(key, "comment"))
            continue;
        if (!strcmp(key, "model") || !strcmp(key, "batch") || !strcmp(key, "parallel")) {
            if (set_group(&c, &d, key, v) < 0)
                goto out;
        } else if (set_field(&c, &d, key, v) < 0) {
            goto out;
        }
    }
    if (!d.gpu[0]) {
        pflex_error_set(err, "%s:1: field 'gpu': missing", c.name);
        goto out;
    }
    if (!preset && !json_object_get(root, "task")) {
        pflex_error_set(err, "%s:1: field 'task': missing", c.name);
        goto out;
    }
    /* Hugging Face Transformers as is (eager) runs its own MoE block, not
     * grouped expert GEMMs, unless the file says otherwise. */
    if (d.eager && d.experts > 0 && !json_object_get(root, "moe_loop"))
        d.moe_loop = 1;
    pflex_error_t e2;
    if (pflex_job_desc_resolve(&d, &e2) < 0) {
        /* "field 'x': ..." -> "file:line: field 'x': ..." */
        char fld[64] = "";
        if (sscanf(e2.text, "field '%63[^']'", fld) == 1)
            pflex_error_set(err, "%s:%d: %s", c.name, key_line(&c, fld), e2.text);
        else
            pflex_error_set(err, "%s: %s", c.name, e2.text);
        goto out;
    }
    *out = d;
    rc = 0;
out:
    json_decref(root);
    return rc;
}

int pflex_job_read_file(const char *path, struct pflex_job_desc *out, pflex_error_t *err)
{
    char *buf;
    size_t len;
    if (pflex_read_all(path, &buf, &len, err) < 0)
        return -1;
    int rc = pflex_job_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

int pflex_job_load(const char *preset_or_path, struct pflex_job_desc *out, pflex_error_t *err)
{
    if (pflex_job_preset_find(preset_or_path, out) == 0)
        return 0;
    return pflex_job_read_file(preset_or_path, out, err);
}
