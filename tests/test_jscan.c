/* test_jscan.c — the in-place JSON reader against jansson: the same
 * documents accepted and refused (seeded random documents, and each one
 * mutated byte by byte), the same numbers (correctly rounded, as strtod)
 * and the same strings (escapes, surrogate pairs, UTF-8), and keys and
 * strings cut at a character's boundary. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lib/util/jscan.h"
#include "support/rand.h"

static int jscan_ok(const char *s, size_t n)
{
    struct pflex_jscan js;
    pflex_jscan_init(&js, s, n);
    return pflex_jscan_skip(&js) == 0 && pflex_jscan_end(&js) == 0;
}

static int jansson_ok(const char *s, size_t n)
{
    json_t *j = json_loadb(s, n, JSON_DECODE_ANY, NULL);
    json_decref(j);
    return j != NULL;
}

/* A random document of depth at most d, appended to b at *n. */
static void gen(char *b, size_t *n, size_t cap, int d)
{
    static const char *atoms[] = {"0", "-1", "12.5", "1e3", "-0.25E-2", "true", "false", "null", "\"\"",
                                  "\"a\\\"b\"", "\"\\u00e9t\\u00E9\"", "\"\\ud83d\\ude00\"", "\"caf\xc3\xa9\"",
                                  "523.45678912339997", "1700000000.0", "\"\\n\\t\\/\\\\\""};
    if (*n + 64 > cap)
        return;
    int k = d > 0 ? rng_int(0, 9) : 9;
    if (k < 3 || k > 5) {
        *n += (size_t)snprintf(b + *n, cap - *n, "%s", atoms[rng_int(0, sizeof atoms / sizeof *atoms - 1)]);
        return;
    }
    int obj = k == 3, m = rng_int(0, 4);
    b[(*n)++] = obj ? '{' : '[';
    for (int i = 0; i < m && *n + 64 < cap; i++) {
        if (i)
            b[(*n)++] = ',';
        if (rng_int(0, 3) == 0)
            b[(*n)++] = ' ';
        if (obj)
            *n += (size_t)snprintf(b + *n, cap - *n, "\"k%d\":", rng_int(0, 5));
        gen(b, n, cap, d - 1);
    }
    b[(*n)++] = obj ? '}' : ']';
    b[*n] = '\0';
}

/* Random documents, whole and with one byte changed, cut or doubled:
 * accepted by both or refused by both. */
static void test_against_jansson(void **state)
{
    (void)state;
    rng_seed(20261204);
    static const char bytes[] = "{}[],:\"\\0123456789.eE+-tfnulrsa \x01\xc3\xa9\xff\xed\xa0\x80";
    char doc[4096], mut[4096];
    unsigned valid = 0, invalid = 0;
    for (int t = 0; t < 3000; t++) {
        size_t n = 0;
        gen(doc, &n, sizeof doc, rng_int(0, 6));
        doc[n] = '\0';
        assert_true(jansson_ok(doc, n));
        assert_true(jscan_ok(doc, n));
        for (int m = 0; m < 8 && n; m++) {
            size_t at = (size_t)rng_int(0, (int)n - 1), len = n;
            memcpy(mut, doc, n);
            int how = rng_int(0, 2);
            if (how == 0)
                mut[at] = bytes[rng_int(0, (int)sizeof bytes - 2)];
            else if (how == 1)
                len = at;
            else if (n + 1 < sizeof mut) {
                memmove(mut + at + 1, mut + at, n - at);
                len = n + 1;
            }
            int a = jansson_ok(mut, len), b = jscan_ok(mut, len);
            if (a != b)
                fail_msg("jansson %s, jscan %s: '%.*s'", a ? "accepts" : "refuses", b ? "accepts" : "refuses",
                         (int)len, mut);
            a ? valid++ : invalid++;
        }
    }
    assert_true(valid > 1000 && invalid > 1000);
}

/* Numbers as strtod reads them (correctly rounded), in many notations. */
static void test_numbers(void **state)
{
    (void)state;
    rng_seed(7);
    char s[64];
    for (int t = 0; t < 200000; t++) {
        double x = ldexp(rng_unif(-1, 1), rng_int(-60, 80));
        int f = rng_int(0, 4);
        if (f == 0)
            snprintf(s, sizeof s, "%.17g", x);
        else if (f == 1)
            snprintf(s, sizeof s, "%.3f", x);
        else if (f == 2)
            snprintf(s, sizeof s, "%.6e", x);
        else if (f == 3)
            snprintf(s, sizeof s, "%lld", (long long)rng_int(-1000000000, 1000000000) * rng_int(0, 4000000));
        else
            snprintf(s, sizeof s, "%.15g", x);
        struct pflex_jscan js;
        pflex_jscan_init(&js, s, strlen(s));
        double v;
        int is_int;
        if (pflex_jscan_number(&js, &v, &is_int) < 0)
            fail_msg("%s: %s", s, js.err);
        assert_int_equal(pflex_jscan_end(&js), 0);
        if (v != strtod(s, NULL))
            fail_msg("%s: %.17g, strtod %.17g", s, v, strtod(s, NULL));
        assert_int_equal(is_int, strpbrk(s, ".eE") == NULL);
    }
    static const char *bad[] = {"01", "1.", ".5", "-", "1e", "1e+", "+1", "1e999", "-1e400", "0x10", "NaN"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(jscan_ok(bad[i], strlen(bad[i])));
}

/* Strings unescaped as jansson does, and cut whole characters at a time. */
static void test_strings(void **state)
{
    (void)state;
    static const char *docs[] = {"\"plain\"", "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "\"\\u00e9\\u20ac\\ud83d\\ude00\"",
                                 "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "\"\""};
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        json_t *j = json_loads(docs[i], JSON_DECODE_ANY, NULL);
        assert_non_null(j);
        char buf[64];
        struct pflex_jscan js;
        pflex_jscan_init(&js, docs[i], strlen(docs[i]));
        long n = pflex_jscan_string(&js, buf, sizeof buf, NULL);
        assert_int_equal(n, (long)json_string_length(j));
        assert_string_equal(buf, json_string_value(j));
        json_decref(j);
    }
    /* "é€😀" in 2 + 3 + 4 bytes: room for 6 keeps the first two whole */
    struct pflex_jscan js;
    const char *d = "\"\\u00e9\\u20ac\\ud83d\\ude00\"";
    char buf[7];
    int cut = 0;
    pflex_jscan_init(&js, d, strlen(d));
    assert_int_equal(pflex_jscan_string(&js, buf, sizeof buf, &cut), 9);
    assert_true(cut);
    assert_string_equal(buf, "\xc3\xa9\xe2\x82\xac");
    static const char *bad[] = {"\"\\u0000\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\x\"", "\"\xc3\"", "\"\xc0\xaf\"",
                                "\"\xed\xa0\x80\"", "\"a\nb\"", "\"open"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_false(jscan_ok(bad[i], strlen(bad[i])));
        assert_false(jansson_ok(bad[i], strlen(bad[i])));
    }
}

/* Spans: a string's bytes in the input, its text when it has escapes; a
 * run of plain ASCII cut as the characters one by one would be. */
static void test_spans(void **state)
{
    (void)state;
    static const char *docs[] = {"\"plain text\"", "\"a\\\"b\\u00e9c\"", "\"caf\xc3\xa9\"", "\"\"", "\"\\/\""};
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        json_t *j = json_loads(docs[i], JSON_DECODE_ANY, NULL);
        assert_non_null(j);
        struct pflex_jscan js;
        const char *raw;
        size_t n;
        int esc;
        pflex_jscan_init(&js, docs[i], strlen(docs[i]));
        assert_int_equal(pflex_jscan_string_span(&js, &raw, &n, &esc), 0);
        assert_int_equal(pflex_jscan_end(&js), 0);
        assert_true(raw == docs[i] + 1 && n == strlen(docs[i]) - 2);
        char text[64];
        size_t tl = esc ? pflex_jscan_unescape(raw, n, text) : n;
        if (!esc)
            memcpy(text, raw, n);
        text[tl] = '\0';
        assert_int_equal(esc, strchr(docs[i], '\\') != NULL);
        assert_int_equal(tl, json_string_length(j));
        assert_string_equal(text, json_string_value(j));
        json_decref(j);
    }
    /* a key's span, then its value */
    const char *o = "{ \"k\\u0065y\" : 1, \"b\":2}";
    struct pflex_jscan js;
    const char *raw;
    size_t n;
    int esc;
    pflex_jscan_init(&js, o, strlen(o));
    assert_int_equal(pflex_jscan_enter(&js, PFLEX_J_OBJECT), 0);
    assert_int_equal(pflex_jscan_key_span(&js, &raw, &n, &esc), 1);
    char key[16];
    assert_true(esc && pflex_jscan_unescape(raw, n, key) == 3 && !strcmp(key, "key"));
    assert_int_equal(pflex_jscan_skip(&js), 0);
    assert_int_equal(pflex_jscan_key_span(&js, &raw, &n, &esc), 1);
    assert_true(!esc && n == 1 && raw[0] == 'b');
    assert_int_equal(pflex_jscan_skip(&js), 0);
    assert_int_equal(pflex_jscan_key_span(&js, &raw, &n, &esc), 0);
    assert_int_equal(pflex_jscan_end(&js), 0);
    /* refused as the whole check refuses them */
    static const char *bad[] = {"\"a\nb\"", "\"open", "\"\\x\"", "\"\xc3\"", "\"ab\\u0000\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pflex_jscan_init(&js, bad[i], strlen(bad[i]));
        assert_int_equal(pflex_jscan_string_span(&js, &raw, &n, &esc), -1);
        assert_non_null(js.err);
    }
    /* a plain run cut at the room: every size, the bytes that fit */
    const char *d = "\"abcdefghij\"";
    for (size_t size = 1; size <= 12; size++) {
        char buf[12];
        int cut = -1;
        pflex_jscan_init(&js, d, strlen(d));
        assert_int_equal(pflex_jscan_string(&js, buf, size, &cut), 10);
        assert_int_equal(strlen(buf), size - 1 < 10 ? size - 1 : 10);
        assert_int_equal(cut, size <= 10);
        assert_memory_equal(buf, "abcdefghij", strlen(buf));
    }
}

/* Walking an object: keys in turn, values read or skipped, the end. */
static void test_walk(void **state)
{
    (void)state;
    const char *d = " {\"a\": [1, 2.5, {\"x\": null}], \"long-key-over-room\": \"v\", \"b\": true } ";
    struct pflex_jscan js;
    pflex_jscan_init(&js, d, strlen(d));
    char key[8];
    int cut;
    assert_int_equal(pflex_jscan_enter(&js, PFLEX_J_OBJECT), 0);
    assert_int_equal(pflex_jscan_key(&js, key, sizeof key, &cut), 1);
    assert_string_equal(key, "a");
    assert_false(cut);
    assert_int_equal(pflex_jscan_enter(&js, PFLEX_J_ARRAY), 0);
    double v, sum = 0;
    int is_int;
    while (pflex_jscan_item(&js) == 1) {
        if (pflex_jscan_peek(&js) == PFLEX_J_NUMBER) {
            assert_int_equal(pflex_jscan_number(&js, &v, &is_int), 0);
            sum += v;
        } else
            assert_int_equal(pflex_jscan_skip(&js), 0);
    }
    assert_true(sum == 3.5);
    assert_int_equal(pflex_jscan_key(&js, key, sizeof key, &cut), 1);
    assert_true(cut);
    assert_string_equal(key, "long-ke");
    assert_int_equal(pflex_jscan_skip(&js), 0);
    assert_int_equal(pflex_jscan_key(&js, key, sizeof key, &cut), 1);
    assert_int_equal(pflex_jscan_peek(&js), PFLEX_J_TRUE);
    assert_int_equal(pflex_jscan_skip(&js), 0);
    assert_int_equal(pflex_jscan_key(&js, key, sizeof key, &cut), 0);
    assert_int_equal(pflex_jscan_end(&js), 0);
    /* 64 levels are read, 65 refused */
    char deep[200];
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    assert_false(jscan_ok(deep, 130));
    assert_true(jscan_ok(deep + 1, 128));
    /* a failure says where */
    pflex_jscan_init(&js, "[1,]", 4);
    assert_int_equal(pflex_jscan_skip(&js), -1);
    assert_int_equal(js.at, 3);
    assert_non_null(js.err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_jansson),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_spans),
        cmocka_unit_test(test_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
