/* csv.c — CSV tokenizer; its numbers are read by the one decimal parser
 * (util/decimal.h), correctly rounded, so values read here match any
 * other reader bit for bit.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/io/csv.h"
#include "pflex/io/sweep.h"
#include "lib/io/csv_scan.h"
#include "lib/util/decimal.h"
#include "lib/util/grow.h"
#include "lib/util/utf8.h"

void pflex_csv_init(pflex_csv_t *c, const char *buf, size_t len, const char *name)
{
    memset(c, 0, sizeof *c);
    c->p = buf;
    c->end = buf + len;
    c->name = name ? name : "-";
    c->next_line = 1;
    if (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB
        && (unsigned char)buf[2] == 0xBF)
        c->p += 3;
}

int pflex_csv_load(pflex_csv_t *c, const char *path, char **buf, pflex_error_t *err)
{
    size_t len;
    if (pflex_read_all(path, buf, &len, err) < 0)
        return -1;
    pflex_csv_init(c, *buf, len, path);
    return 0;
}

void pflex_csv_fini(pflex_csv_t *c)
{
    free(c->fields);
    free(c->scratch);
    memset(c, 0, sizeof *c);
}

static int push_field(pflex_csv_t *c, const char *s, size_t len)
{
    if (c->nfields == c->cap
        && pflex_grow((void **)&c->fields, &c->cap, c->nfields + 1, sizeof *c->fields))
        return -1;
    while (len && (*s == ' ' || *s == '\t'))
        s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    c->fields[c->nfields].s = s;
    c->fields[c->nfields].len = len;
    c->fields[c->nfields].quoted = 0;
    c->fields[c->nfields].off = 0;
    c->nfields++;
    return 0;
}

/* Scratch space for unescaped quoted fields.  While a record is built a
 * quoted field holds its offset into scratch; pointers are set once the
 * record is complete, since realloc may move the block. */
static int scratch_reserve(pflex_csv_t *c, size_t extra)
{
    if (extra > SIZE_MAX - c->scratch_len)
        return -1;
    return pflex_grow((void **)&c->scratch, &c->scratch_cap, c->scratch_len + extra, 1);
}

void pflex_csv_reset(pflex_csv_t *c, const char *buf, size_t len, unsigned line)
{
    c->p = buf;
    c->end = buf + len;
    c->next_line = line;
    c->nfields = 0;
    c->truncated = 0;
}

int pflex_csv_split_line(pflex_csv_t *c, const char *s, size_t len, unsigned line,
                         pflex_error_t *err)
{
    if (len == 0 || *s == '#' || *s == '\r' || memchr(s, '"', len))
        return 0;
    const char *e = s + len;
    c->line = line;
    c->next_line = line + 1;
    c->nfields = 0;
    c->scratch_len = 0;
    for (;;) {
        const char *f = s;
        while ((s = csv_find_delim(s, e)) < e && *s != ',')
            s++;        /* a '\n' the caller left in: part of the field */
        size_t n = (size_t)(s - f);
        if (s == e && n && f[n - 1] == '\r')     /* CRLF: as pflex_csv_next */
            n--;
        if (push_field(c, f, n) < 0)
            return pflex_error_sys(err, "%s:%u: out of memory", c->name, line);
        if (s == e)
            return 1;
        s++;
    }
}

int pflex_csv_next(pflex_csv_t *c, pflex_error_t *err)
{
    for (;;) {
        if (c->p >= c->end)
            return 0;
        c->line = c->next_line;
        c->nfields = 0;
        c->scratch_len = 0;
        const char *p = c->p;
        /* Skip blank lines and comments. */
        if (*p == '#' || *p == '\n' || (*p == '\r' && p + 1 < c->end && p[1] == '\n')) {
            const char *nl = memchr(p, '\n', (size_t)(c->end - p));
            c->p = nl ? nl + 1 : c->end;
            c->next_line++;
            continue;
        }
        for (;;) {
            /* Leading blanks before a quote are allowed. */
            const char *q = p;
            while (q < c->end && (*q == ' ' || *q == '\t'))
                q++;
            if (q < c->end && *q == '"') {
                q++;
                size_t start_line = c->next_line;
                size_t off = c->scratch_len;
                for (;;) {
                    if (q >= c->end) {
                        c->truncated = 1;
                        return pflex_error_set(err, "%s:%zu: unterminated quoted field",
                                               c->name, start_line);
                    }
                    if (*q == '"') {
                        if (q + 1 < c->end && q[1] == '"') {
                            q += 2;
                            if (scratch_reserve(c, 1) < 0)
                                return pflex_error_sys(err, "%s:%u: out of memory", c->name, c->line);
                            c->scratch[c->scratch_len++] = '"';
                            continue;
                        }
                        q++;
                        break;
                    }
                    if (*q == '\n')
                        c->next_line++;
                    if (scratch_reserve(c, 1) < 0)
                        return pflex_error_sys(err, "%s:%u: out of memory", c->name, c->line);
                    c->scratch[c->scratch_len++] = *q++;
                }
                /* Anything up to the delimiter after the closing quote. */
                while (q < c->end && (*q == ' ' || *q == '\t' || *q == '\r'))
                    q++;
                if (q < c->end && *q != ',' && *q != '\n')
                    return pflex_error_set(err, "%s:%u: text after closing quote", c->name, c->line);
                if (push_field(c, NULL, 0) < 0)
                    return pflex_error_sys(err, "%s:%u: out of memory", c->name, c->line);
                c->fields[c->nfields - 1].off = off;
                c->fields[c->nfields - 1].len = c->scratch_len - off;
                c->fields[c->nfields - 1].quoted = 1;
                p = q;
            } else {
                const char *e = p;
                while (e < c->end && *e != ',' && *e != '\n')
                    e++;
                const char *fe = e;
                if (fe > p && fe[-1] == '\r' && (e == c->end || *e == '\n'))
                    fe--;
                if (push_field(c, p, (size_t)(fe - p)) < 0)
                    return pflex_error_sys(err, "%s:%u: out of memory", c->name, c->line);
                p = e;
            }
            if (p < c->end && *p == ',') {
                p++;
                continue;
            }
            if (p < c->end && *p == '\n')
                p++;
            c->next_line++;
            c->p = p;
            for (size_t i = 0; i < c->nfields; i++) {
                struct pflex_csv_field *f = &c->fields[i];
                if (f->quoted) {
                    f->s = c->scratch ? c->scratch + f->off : "";
                    while (f->len && (*f->s == ' ' || *f->s == '\t'))
                        f->s++, f->len--;
                    while (f->len && (f->s[f->len - 1] == ' ' || f->s[f->len - 1] == '\t'))
                        f->len--;
                }
            }
            return 1;
        }
    }
}

int pflex_csv_field_is(const struct pflex_csv_field *f, const char *s)
{
    size_t n = strlen(s);
    return f->len == n && memcmp(f->s, s, n) == 0;
}

int pflex_parse_double(const char *s, size_t len, double *out)
{
    return pflex_dec_parse(s, len, out);
}

const char *pflex_name_problem(const char *s, size_t len, size_t *at)
{
    const unsigned char *p = (const unsigned char *)s, *e = p + len;
    while (p < e) {
        *at = (size_t)(p - (const unsigned char *)s);
        unsigned c = *p;
        if (c < 0x80) {
            if (c == 0)
                return "holds a NUL byte";
            if (c < 0x20 || c == 0x7f)
                return "holds a control character";
            p++;
            continue;
        }
        unsigned cp;
        int n = pflex_utf8_char(p, e, &cp);
        if (n < 0)
            return "is not valid UTF-8";
        p += n;
    }
    return NULL;
}

void pflex_csv_write_field(FILE *f, const char *s)
{
    if (*s != '#' && !strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int pflex_csv_field_error(pflex_error_t *err, const char *file, unsigned line, const char *col,
                          const struct pflex_csv_field *f, const char *what)
{
    return pflex_error_set(err, "%s:%u: column '%s': '%.*s' %s", file, line, col,
                           (int)(f->len > 40 ? 40 : f->len), f->s, what);
}

int pflex_csv_row_error(pflex_error_t *err, const char *file, unsigned line, size_t nfields,
                        size_t header)
{
    return pflex_error_set(err, "%s:%u: %zu fields, the header has %zu", file, line, nfields,
                           header);
}

int pflex_csv_field_name(pflex_error_t *err, const char *file, unsigned line, const char *col,
                         const char *what, const struct pflex_csv_field *f)
{
    size_t at;
    const char *why = pflex_name_problem(f->s, f->len, &at);
    if (!why)
        return 0;
    return pflex_error_set(err, "%s:%u: column '%s': the %s %s (byte %zu of %zu); names are "
                           "UTF-8 text", file, line, col, what, why, at + 1, f->len);
}

int pflex_csv_field_tier(pflex_error_t *err, const char *file, unsigned line, const char *col,
                         const struct pflex_csv_field *f, double *floor)
{
    char tb[32];
    size_t n = f->len < sizeof tb - 1 ? f->len : sizeof tb - 1;
    memcpy(tb, f->s, n);
    tb[n] = 0;
    if (f->len >= sizeof tb || pflex_tier_floor(tb, floor) < 0)
        return pflex_csv_field_error(err, file, line, col, f,
                                     "is not a tier (flex0, flex1, flex2, flex3)");
    return 0;
}

int pflex_str_append(char **s, const char *text)
{
    size_t a = *s ? strlen(*s) : 0, b = strlen(text);
    char *n = realloc(*s, a + b + 1);
    if (!n)
        return -1;
    memcpy(n + a, text, b + 1);
    *s = n;
    return 0;
}

/* Optimal string alignment distance of a and b (lengths up to 63), case
 * ignored: edits, and swaps of two neighbours ("gpsu" is 1 from "gpus").
 * Every reader's rule for "did you mean", so that they guess alike. */
unsigned pflex_csv_name_distance(const char *a, size_t na, const char *b, size_t nb)
{
    if (na > 63 || nb > 63)
        return 99;
    unsigned d[64][64];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = (unsigned)i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            unsigned best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2])
                && tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb];
}

int pflex_csv_header_check(const pflex_csv_t *c, const char *file, const char *kind,
                           const char *const *cols, size_t ncols, const int *idx, char **warn,
                           pflex_error_t *err)
{
    for (size_t k = 0; k < ncols; k++) {
        if (!cols[k] || idx[k] < 0)
            continue;
        for (size_t f = (size_t)idx[k] + 1; f < c->nfields; f++)
            if (pflex_csv_field_is(&c->fields[f], cols[k]))
                return pflex_error_set(err, "%s:%u: column '%s' appears twice in the header "
                                       "(fields %d and %zu)", file, c->line, cols[k],
                                       idx[k] + 1, f + 1);
    }
    for (size_t f = 0; f < c->nfields; f++) {
        const struct pflex_csv_field *fd = &c->fields[f];
        int used = 0, best = -1;
        for (size_t k = 0; k < ncols && !used; k++)
            used = cols[k] && idx[k] == (int)f;
        if (used || fd->len == 0)
            continue;
        unsigned bd = 99;
        for (size_t k = 0; k < ncols; k++) {
            if (!cols[k] || idx[k] >= 0)
                continue;
            size_t n = strlen(cols[k]);
            unsigned d = pflex_csv_name_distance(fd->s, fd->len, cols[k], n);
            unsigned limit = (n <= 4 || fd->len <= 4) ? 1 : 2;
            /* a tie goes to the name of the same length ("gpsu": gpus, not gpu) */
            if (d <= limit && (d < bd || (d == bd && n == fd->len)))
                bd = d, best = (int)k;
        }
        if (best < 0)
            continue;
        char one[320];
        snprintf(one, sizeof one, "%s:%u: column '%.*s' is not a %s column and is ignored: "
                 "did you mean '%s'?\n", file, c->line, (int)(fd->len > 40 ? 40 : fd->len), fd->s,
                 kind, cols[best]);
        if (pflex_str_append(warn, one) < 0)
            return pflex_error_sys(err, "%s: out of memory", file);
    }
    return 0;
}
