/* test_cli_config.c — the daemons' configuration file reader
 * (src/cli/config.c): keys from the option table, sections, switches,
 * repeated and continued keys, comments, and each refusal's line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "cli/config.h"

static const struct option table[] = {
    {"listen", required_argument, NULL, 1}, {"agent", required_argument, NULL, 2},
    {"json", no_argument, NULL, 3}, {"period", required_argument, NULL, 4},
    {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
};

static size_t parse(const char *text, const char *section, struct cli_config_entry **e, char *err)
{
    size_t n = 0;
    if (cli_config_parse(text, "t.conf", section, "agent,controller", table, e, &n, err, 300) < 0)
        return (size_t)-1;
    return n;
}

static void test_read(void **state)
{
    (void)state;
    const char *text = "\xEF\xBB\xBF# a comment\n; another\n[agent]\r\n"
                       "listen = 127.0.0.1:9410   ; inline\n"
                       "json = yes\n"
                       "[controller]\nagent = http://a:9410\n    http://b:9410\nperiod=5\n";
    struct cli_config_entry *e;
    char err[300];
    size_t n = parse(text, "agent", &e, err);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].opt->name, "listen");
    assert_string_equal(e[0].value, "127.0.0.1:9410");
    assert_int_equal(e[0].line, 4);
    assert_string_equal(e[1].opt->name, "json");
    assert_string_equal(e[1].value, "");    /* a switch on */
    cli_config_entries_free(e, n);
    n = parse(text, "controller", &e, err);
    assert_int_equal(n, 3);
    assert_string_equal(e[0].value, "http://a:9410");
    assert_string_equal(e[1].opt->name, "agent");   /* a continued line: one more */
    assert_string_equal(e[1].value, "http://b:9410");
    assert_int_equal(e[1].line, 8);
    assert_string_equal(e[2].value, "5");
    cli_config_entries_free(e, n);
    /* a switch off is as if not given */
    n = parse("[agent]\njson = false\n", "agent", &e, err);
    assert_int_equal(n, 0);
    cli_config_entries_free(e, n);
}

static void test_refused(void **state)
{
    (void)state;
    char long_line[400];
    snprintf(long_line, sizeof long_line, "[agent]\nlisten = %0250d\n", 1);
    struct { const char *text, *want; } bad[] = {
        {"[agent]\nbogus = 1\n", "t.conf:2: unknown key 'bogus' in [agent]"},
        {"[agent]\nhelp = true\n", "t.conf:2: unknown key 'help'"},
        {"listen = x\n", "t.conf:1: 'listen' outside a section"},
        {"[agnet]\nlisten = x\n", "t.conf:2: unknown section [agnet]"},
        {"[agent]\n\njson = maybe\n", "t.conf:3: 'json' is a switch"},
        {"[agent]\nlisten =\n", "t.conf:2: 'listen' needs a value"},
        {"[agent]\nnot a pair\n", "t.conf:2: not 'key = value'"},
        {"[agent\n", "t.conf:1: not 'key = value'"},
        {"[agent]\nlisten =;x\n", "t.conf:2: 'listen': a ';'"},
        {"[agent]\nagent = a\n  b ; c\n", "t.conf:3: 'agent': a ';'"},
        {long_line, "t.conf:2: line longer than 198 characters"},
        /* the first error is the one said, whichever kind comes first */
        {"[agent]\njunk\nbogus = 1\n", "t.conf:2: not 'key = value'"},
        {"[agent]\nbogus = 1\njunk\n", "t.conf:2: unknown key 'bogus'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct cli_config_entry *e = (void *)1;
        char err[300] = "";
        size_t n = parse(bad[i].text, "agent", &e, err);
        if (n != (size_t)-1 || !strstr(err, bad[i].want))
            fail_msg("case %zu: want '%s', got '%s'", i, bad[i].want, err);
        assert_null(e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
