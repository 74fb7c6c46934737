/* jscan.c — a JSON reader that walks a document in place (jscan.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/util/decimal.h"
#include "lib/util/jscan.h"
#include "lib/util/utf8.h"

static int fail(struct pflex_jscan *s, const char *why)
{
    if (!s->err) {
        s->err = why;
        s->at = (size_t)(s->p - s->start);
    }
    return -1;
}

void pflex_jscan_init(struct pflex_jscan *s, const char *buf, size_t len)
{
    *s = (struct pflex_jscan){.p = buf, .start = buf, .end = buf + len};
}

static void ws(struct pflex_jscan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r'))
        s->p++;
}

enum pflex_jtype pflex_jscan_peek(struct pflex_jscan *s)
{
    if (s->err)
        return PFLEX_J_NONE;
    ws(s);
    if (s->p == s->end)
        return PFLEX_J_NONE;
    switch (*s->p) {
    case '{': return PFLEX_J_OBJECT;
    case '[': return PFLEX_J_ARRAY;
    case '"': return PFLEX_J_STRING;
    case 't': return PFLEX_J_TRUE;
    case 'f': return PFLEX_J_FALSE;
    case 'n': return PFLEX_J_NULL;
    default: return *s->p == '-' || (*s->p >= '0' && *s->p <= '9') ? PFLEX_J_NUMBER : PFLEX_J_NONE;
    }
}

int pflex_jscan_enter(struct pflex_jscan *s, enum pflex_jtype type)
{
    if (pflex_jscan_peek(s) != type || (type != PFLEX_J_OBJECT && type != PFLEX_J_ARRAY))
        return fail(s, type == PFLEX_J_OBJECT ? "an object expected" : "an array expected");
    if (s->depth >= PFLEX_JSCAN_DEPTH)
        return fail(s, "nested too deep");
    s->p++;
    s->first |= (uint64_t)1 << s->depth;
    s->depth++;
    return 0;
}

/* Before the next member or element of the container entered last: its
 * end (0, left), or the comma after the one before (1). */
static int next_in(struct pflex_jscan *s, char close)
{
    if (s->err || !s->depth)
        return fail(s, "not in a container");
    ws(s);
    uint64_t bit = (uint64_t)1 << (s->depth - 1);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        s->first &= ~bit;
        return 0;
    }
    if (s->first & bit)
        s->first &= ~bit;
    else if (s->p < s->end && *s->p == ',')
        s->p++;
    else
        return fail(s, close == '}' ? "',' or '}' expected" : "',' or ']' expected");
    return 1;
}

int pflex_jscan_item(struct pflex_jscan *s)
{
    return next_in(s, ']');
}

/* One code point into out[size] at *w, whole or not at all (then *full). */
static void put_cp(char *out, size_t size, size_t *w, int *full, unsigned cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12);
        b[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (char)(0xF0 | cp >> 18);
        b[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        b[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (!out || *full)
        return;
    if (*w + n + 1 > size) {
        *full = 1;
        return;
    }
    memcpy(out + *w, b, n);
    *w += n;
}

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;
        if (d == 16)
            return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

/* The bytes a string holds as they are: printable ASCII but '"' and '\\'. */
static const unsigned char plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* The string at s->p (its opening quote), unescaped into out[size] (out
 * may be NULL: checked only); its unescaped length, or -1. */
static long string_at(struct pflex_jscan *s, char *out, size_t size, int *cut)
{
    if (s->p == s->end || *s->p != '"')
        return fail(s, "a string expected");
    s->p++;
    size_t w = 0, len = 0;
    int full = 0;
    for (;;) {
        if (s->p == s->end)
            return fail(s, "a string is not closed");
        unsigned char c = (unsigned char)*s->p;
        unsigned cp;
        if (c == '"') {
            s->p++;
            break;
        }
        if (plain[c]) {
            /* a run of plain ASCII: no escape, no check but the table's */
            const char *q = s->p + 1;
            while (q < s->end && plain[(unsigned char)*q])
                q++;
            size_t run = (size_t)(q - s->p);
            if (out && !full) {
                size_t room = size > w + 1 ? size - w - 1 : 0;
                size_t n = run < room ? run : room;
                memcpy(out + w, s->p, n);
                w += n;
                full = n < run;
            }
            len += run;
            s->p = q;
            continue;
        }
        if (c < 0x20)
            return fail(s, "a control character in a string");
        if (c == '\\') {
            if (s->end - s->p < 2)
                return fail(s, "a string is not closed");
            char e = s->p[1];
            s->p += 2;
            switch (e) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                if (s->end - s->p < 4 || hex4(s->p, &cp) < 0)
                    return fail(s, "a \\u escape without four hex digits");
                s->p += 4;
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return fail(s, "a lone low surrogate in a \\u escape");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' || hex4(s->p + 2, &lo) < 0
                        || lo < 0xDC00 || lo > 0xDFFF)
                        return fail(s, "a high surrogate without its low one in a \\u escape");
                    s->p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (cp == 0)
                    return fail(s, "\\u0000 in a string");
                break;
            default:
                s->p -= 1;
                return fail(s, "an invalid escape in a string");
            }
        } else if (c < 0x80) {
            cp = c;
            s->p++;
        } else {
            int n = pflex_utf8_char((const unsigned char *)s->p, (const unsigned char *)s->end, &cp);
            if (n < 0)
                return fail(s, "a string is not valid UTF-8");
            s->p += n;
        }
        put_cp(out, size, &w, &full, cp);
        len += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    }
    if (out && size)
        out[w] = '\0';
    if (cut)
        *cut = full;
    return (long)len;
}

/* The string at s->p checked, its bytes between the quotes in *raw, *n;
 * *escaped when it holds an escape (its text then differs from them). */
static int span_at(struct pflex_jscan *s, const char **raw, size_t *n, int *escaped)
{
    const char *b = s->p + 1, *q = b;
    while (q < s->end && plain[(unsigned char)*q])
        q++;
    if (q < s->end && *q == '"') {
        s->p = q + 1;
        *raw = b;
        *n = (size_t)(q - b);
        *escaped = 0;
        return 0;
    }
    /* an escape, a byte past ASCII, a control character, the end: the
     * whole check; escapes always shorten, so a text as long as its bytes
     * has none */
    long len = string_at(s, NULL, 0, NULL);
    if (len < 0)
        return -1;
    *raw = b;
    *n = (size_t)(s->p - 1 - b);
    *escaped = (size_t)len != *n;
    return 0;
}

int pflex_jscan_string_span(struct pflex_jscan *s, const char **raw, size_t *n, int *escaped)
{
    if (pflex_jscan_peek(s) != PFLEX_J_STRING)
        return fail(s, "a string expected");
    return span_at(s, raw, n, escaped);
}

int pflex_jscan_key_span(struct pflex_jscan *s, const char **raw, size_t *n, int *escaped)
{
    int r = next_in(s, '}');
    if (r <= 0)
        return r;
    ws(s);
    if (s->p == s->end || *s->p != '"')
        return fail(s, "a string expected");
    if (span_at(s, raw, n, escaped) < 0)
        return -1;
    ws(s);
    if (s->p == s->end || *s->p != ':')
        return fail(s, "':' expected after a key");
    s->p++;
    return 1;
}

size_t pflex_jscan_unescape(const char *raw, size_t n, char *out)
{
    struct pflex_jscan s = {.p = raw - 1, .start = raw - 1, .end = raw + n + 1};
    long len = string_at(&s, out, n + 1, NULL);
    return len < 0 ? 0 : (size_t)len;
}

long pflex_jscan_string(struct pflex_jscan *s, char *buf, size_t size, int *cut)
{
    if (pflex_jscan_peek(s) != PFLEX_J_STRING)
        return fail(s, "a string expected");
    return string_at(s, buf, size, cut);
}

int pflex_jscan_key(struct pflex_jscan *s, char *key, size_t size, int *cut)
{
    int r = next_in(s, '}');
    if (r <= 0)
        return r;
    ws(s);
    if (string_at(s, key, size, cut) < 0)
        return -1;
    ws(s);
    if (s->p == s->end || *s->p != ':')
        return fail(s, "':' expected after a key");
    s->p++;
    return 1;
}

int pflex_jscan_number(struct pflex_jscan *s, double *v, int *is_int)
{
    if (pflex_jscan_peek(s) != PFLEX_J_NUMBER)
        return fail(s, "a number expected");
    const char *b = s->p, *p = s->p, *e = s->end;
    int neg = 0, digits = 0, integer = 1;
    uint64_t m = 0;
    long exp10 = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (p == e || !(*p >= '0' && *p <= '9'))
        return fail(s, "a digit expected in a number");
    if (*p == '0') {
        p++;
        if (p < e && *p >= '0' && *p <= '9')
            return fail(s, "a number with a leading zero");
    } else {
        for (; p < e && *p >= '0' && *p <= '9'; p++)
            if (digits < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                digits += m > 0;
            } else
                exp10++, digits = 20;
    }
    if (p < e && *p == '.') {
        integer = 0;
        p++;
        if (p == e || !(*p >= '0' && *p <= '9'))
            return fail(s, "a digit expected after a decimal point");
        for (; p < e && *p >= '0' && *p <= '9'; p++)
            if (digits < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                digits += m > 0;
                exp10--;
            } else
                digits = 20;
    }
    long ex = 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        integer = 0;
        p++;
        int eneg = 0;
        if (p < e && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        if (p == e || !(*p >= '0' && *p <= '9'))
            return fail(s, "a digit expected in an exponent");
        for (; p < e && *p >= '0' && *p <= '9'; p++)
            if (ex < 100000)
                ex = ex * 10 + (*p - '0');
        exp10 += eneg ? -ex : ex;
    }
    s->p = p;
    /* the one decimal parser's fast path, else its strtod (decimal.h) */
    double x;
    size_t used;
    if (pflex_dec_exact(m, digits, exp10, &x)) {
        if (neg)
            x = -x;
    } else
        x = pflex_dec_strtod(b, (size_t)(p - b), &used);
    if (!isfinite(x)) {
        s->p = b;
        return fail(s, "a number out of range");
    }
    *v = x;
    if (is_int)
        *is_int = integer;
    return 0;
}

static int literal(struct pflex_jscan *s, const char *word, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
        return fail(s, "an invalid literal");
    s->p += n;
    return 0;
}

int pflex_jscan_skip(struct pflex_jscan *s)
{
    double v;
    int r;
    switch (pflex_jscan_peek(s)) {
    case PFLEX_J_OBJECT:
        if (pflex_jscan_enter(s, PFLEX_J_OBJECT) < 0)
            return -1;
        while ((r = pflex_jscan_key(s, NULL, 0, NULL)) == 1)
            if (pflex_jscan_skip(s) < 0)
                return -1;
        return r;
    case PFLEX_J_ARRAY:
        if (pflex_jscan_enter(s, PFLEX_J_ARRAY) < 0)
            return -1;
        while ((r = pflex_jscan_item(s)) == 1)
            if (pflex_jscan_skip(s) < 0)
                return -1;
        return r;
    case PFLEX_J_STRING: return string_at(s, NULL, 0, NULL) < 0 ? -1 : 0;
    case PFLEX_J_NUMBER: return pflex_jscan_number(s, &v, NULL);
    case PFLEX_J_TRUE: return literal(s, "true", 4);
    case PFLEX_J_FALSE: return literal(s, "false", 5);
    case PFLEX_J_NULL: return literal(s, "null", 4);
    default: return fail(s, s->p == s->end ? "a value expected, the input ended" : "a value expected");
    }
}

int pflex_jscan_end(struct pflex_jscan *s)
{
    if (s->err)
        return -1;
    ws(s);
    return s->p == s->end ? 0 : fail(s, "something after the document");
}
