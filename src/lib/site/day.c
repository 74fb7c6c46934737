/* day.c — a grid day's targets from a site's measured power
 * (pflex_sim_day_read, pflex/site/simulate.h): the rule of
 * scripts/srp_event.sh, in real time and for any record. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/site/simulate.h"
#include "pflex/io/csv.h"
#include "pflex/io/sweep.h"

void pflex_sim_day_fini(struct pflex_sim_day *d)
{
    free(d->t_s);
    free(d->w);
    memset(d, 0, sizeof *d);
}

/* One time field: RFC 3339 with 'T' or ' ', or HH:MM on the given date
 * ("YYYY-MM-DD+hh:mm" / "YYYY-MM-DD-hh:mm" / "YYYY-MM-DDZ"). */
static int parse_when(const char *f, const char *date, double *t, pflex_error_t *err)
{
    char buf[96];
    size_t n = strlen(f);
    if (n >= sizeof buf - 40)
        return pflex_error_set(err, "time too long");
    if (n <= 5 && strchr(f, ':')) {
        if (!date || strlen(date) < 11)
            return pflex_error_set(err, "'%s' is a time of day: give the date (YYYY-MM-DD+hh:mm)", f);
        snprintf(buf, sizeof buf, "%.10sT%s%s:00%s", date, n == 4 ? "0" : "", f, date + 10);
    } else {
        snprintf(buf, sizeof buf, "%s", f);
        if (n > 10 && buf[10] == ' ')
            buf[10] = 'T';
    }
    return pflex_target_parse_time(buf, 0, t, err);
}

int pflex_sim_day_read(const char *path, const char *date_for_hhmm, double bucket_s,
                       pflex_target_set_t *set, struct pflex_sim_day *out, pflex_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!(bucket_s >= 60) || !isfinite(bucket_s))
        return pflex_error_set(err, "%s: the bucket must be a minute or more", path);
    char *buf;
    pflex_csv_t c;
    if (pflex_csv_load(&c, path, &buf, err) < 0)
        return -1;
    size_t cap = 0;
    int got;
    while ((got = pflex_csv_next(&c, err)) > 0) {
        unsigned line = c.line;
        if (c.nfields < 2) {
            pflex_error_set(err, "%s:%u: want TIME,WATTS", path, line);
            goto fail;
        }
        const struct pflex_csv_field *tf = &c.fields[0], *wf = &c.fields[1];
        double v;
        if (pflex_parse_double(wf->s, wf->len, &v) < 0) {
            if (out->n == 0 && line == 1)
                continue;       /* the header */
            pflex_error_set(err, "%s:%u: '%.*s' is not a power in W", path, line, (int)wf->len, wf->s);
            goto fail;
        }
        if (!(v > 0)) {
            pflex_error_set(err, "%s:%u: power must be positive", path, line);
            goto fail;
        }
        char row[64];
        if (tf->len >= sizeof row) {
            pflex_error_set(err, "%s:%u: time too long", path, line);
            goto fail;
        }
        memcpy(row, tf->s, tf->len);
        row[tf->len] = '\0';
        double t;
        pflex_error_t e2;
        if (parse_when(row, date_for_hhmm, &t, &e2) < 0) {
            pflex_error_set(err, "%s:%u: %s", path, line, e2.text);
            goto fail;
        }
        if (out->n && !(t > out->t_s[out->n - 1])) {
            pflex_error_set(err, "%s:%u: times must increase", path, line);
            goto fail;
        }
        if (out->n == cap) {
            cap = cap ? 2 * cap : 512;
            double *nt = realloc(out->t_s, cap * sizeof *nt);
            if (nt)
                out->t_s = nt;
            double *nw = nt ? realloc(out->w, cap * sizeof *nw) : NULL;
            if (!nt || !nw) {
                pflex_error_sys(err, "out of memory");
                goto fail;
            }
            out->w = nw;
        }
        out->t_s[out->n] = t;
        out->w[out->n++] = v;
    }
    pflex_csv_fini(&c);
    free(buf);
    buf = NULL;
    if (got < 0)
        goto fail;
    if (out->n < 3 || out->t_s[out->n - 1] - out->t_s[0] < 3600 + 2 * bucket_s) {
        pflex_error_set(err, "%s: too few rows: want an hour before the event and more", path);
        goto fail;
    }
    double t0 = out->t_s[0], step = (out->t_s[out->n - 1] - t0) / (double)(out->n - 1);
    out->start_s = t0;
    out->end_s = out->t_s[out->n - 1] + step;
    double base = 0;
    size_t nb = 0;
    for (size_t i = 0; i < out->n && out->t_s[i] < t0 + 3600 - 1e-6; i++) {
        base += out->w[i];
        nb++;
    }
    out->baseline_w = base / (double)nb;
    size_t nbk = (size_t)floor((out->end_s - t0) / bucket_s - 1e-9) + 1;
    double *mx = calloc(nbk, sizeof *mx);
    if (!mx) {
        pflex_error_sys(err, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < out->n; i++) {
        size_t k = (size_t)floor((out->t_s[i] - t0) / bucket_s + 1e-9);
        if (k < nbk && out->w[i] > mx[k])
            mx[k] = out->w[i];
    }
    long first = -1, last = -1;
    for (size_t k = 0; k < nbk; k++)
        if (mx[k] > 0 && mx[k] / out->baseline_w < 0.95) {
            if (first < 0)
                first = (long)k;
            last = (long)k;
        }
    if (first < 0) {
        free(mx);
        pflex_error_set(err, "%s: no event: no bucket under 0.95 of the first hour's mean", path);
        goto fail;
    }
    out->event_start_s = t0 + (double)first * bucket_s;
    out->event_end_s = t0 + (double)(last + 1) * bucket_s;
    for (long k = first; k <= last; k++) {
        if (!(mx[k] > 0))
            continue;           /* a bucket without samples: none there */
        struct pflex_target tg = {.start_s = t0 + (double)k * bucket_s, .end_s = t0 + (double)(k + 1) * bucket_s,
                                  .value = ceil(mx[k] / out->baseline_w * 200 - 1e-6) / 200,
                                  .unit = PFLEX_TARGET_FRACTION};
        snprintf(tg.source, sizeof tg.source, "day");
        snprintf(tg.id, sizeof tg.id, "bucket-%ld", k);
        if (pflex_target_set_add(set, &tg, err) < 0) {
            free(mx);
            goto fail;
        }
        out->ntargets++;
    }
    free(mx);
    return 0;
fail:
    if (buf)
        pflex_csv_fini(&c);
    free(buf);
    pflex_sim_day_fini(out);
    return -1;
}
