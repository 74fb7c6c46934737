/* fuzz_config.c — libFuzzer target for the daemons' configuration file
 * reader (src/cli/config.c, INI through libinih).
 *
 * Input: the first byte's low bit picks the section read ([agent] or
 * [controller]); the rest is the file.  A read that succeeds gives only
 * keys of the table, at lines of the file, with the values their kind
 * allows, and reads back the same from the file its entries make; one
 * that fails says "name:line: ..." with a line of the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli/config.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct option table[] = {
    {"listen", required_argument, NULL, 1}, {"agent", required_argument, NULL, 2},
    {"json", no_argument, NULL, 3}, {"period", required_argument, NULL, 4},
    {"level", optional_argument, NULL, 5}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
};

static int lines_of(const char *t)
{
    int n = 1;
    for (; *t; t++)
        n += *t == '\n';
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    const char *section = data[0] & 1 ? "controller" : "agent";
    char *text = malloc(size);
    if (!text)
        abort();
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    struct cli_config_entry *e;
    size_t n;
    char err[300];
    int nl = lines_of(text);
    if (cli_config_parse(text, "f", section, "agent,controller", table, &e, &n, err, sizeof err) < 0) {
        char *end;
        if (strncmp(err, "f:", 2))
            abort();
        if (strcmp(err, "f: out of memory")) {
            long line = strtol(err + 2, &end, 10);
            if (end == err + 2 || *end != ':' || line < 1 || line > nl)
                abort();
        }
        free(text);
        return 0;
    }
    /* what was read, written back as a file, reads the same */
    size_t cap = 64 + 32 * n, len = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].line < 1 || e[i].line > nl || !e[i].value || e[i].opt < table
            || e[i].opt >= table + sizeof table / sizeof *table - 1 || !strcmp(e[i].opt->name, "help"))
            abort();
        if ((e[i].opt->has_arg == no_argument && *e[i].value)
            || (e[i].opt->has_arg == required_argument && !*e[i].value))
            abort();
        cap += strlen(e[i].value);
    }
    char *back = malloc(cap);
    if (!back)
        abort();
    len += (size_t)sprintf(back, "[%s]\n", section);
    int fits = 1;
    for (size_t i = 0; i < n; i++) {
        const char *v = e[i].opt->has_arg == no_argument ? "true" : e[i].value;
        int m = sprintf(back + len, "%s = %s\n", e[i].opt->name, v);
        fits &= m - 1 <= CLI_CONFIG_MAX_LINE;
        len += (size_t)m;
    }
    struct cli_config_entry *e2;
    size_t n2;
    /* a value libinih's inline-comment rule would cut (" ;") cannot be
     * read; one that fits must come back as it went */
    if (fits && cli_config_parse(back, "b", section, "", table, &e2, &n2, err, sizeof err) == 0) {
        if (n2 != n)
            abort();
        for (size_t i = 0; i < n; i++)
            if (e2[i].opt != e[i].opt || strcmp(e2[i].value, e[i].value))
                abort();
        cli_config_entries_free(e2, n2);
    } else if (fits) {
        abort();
    }
    free(back);
    cli_config_entries_free(e, n);
    free(text);
    return 0;
}
