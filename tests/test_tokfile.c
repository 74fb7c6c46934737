/* test_tokfile.c — the last line of a job's token counter file: comments,
 * blank and incomplete lines, a tail cut in the middle of a big file, and
 * malformed lines. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "pflex/io/tokfile.h"

static char path[] = "/tmp/pflex-test-tokfile-XXXXXX";

static void put(const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int last(const char *text, struct pflex_tokfile_mark *m, pflex_error_t *err)
{
    put(text);
    *m = (struct pflex_tokfile_mark){NAN, NAN};
    return pflex_tokfile_last(path, m, err);
}

static void test_last_complete_line(void **state)
{
    struct pflex_tokfile_mark m;
    pflex_error_t err = {{0}};
    assert_int_equal(last("1.5 100\n2.5,300 extra\n3.5 5", &m, &err), 0);
    assert_float_equal(m.t_s, 2.5, 0);
    assert_float_equal(m.tokens, 300, 0);
    assert_int_equal(last("1 10\n\t2\t20\r\n# a comment\n   \n", &m, &err), 0);
    assert_float_equal(m.t_s, 2, 0);
    assert_float_equal(m.tokens, 20, 0);
}

static void test_no_line_yet(void **state)
{
    struct pflex_tokfile_mark m;
    pflex_error_t err = {{0}};
    assert_int_equal(last("", &m, &err), 1);
    assert_int_equal(last("1 10", &m, &err), 1);       /* being written */
    assert_int_equal(last("# only\n  \n", &m, &err), 1);
    assert_true(isnan(m.t_s));
}

static void test_malformed(void **state)
{
    struct pflex_tokfile_mark m;
    pflex_error_t err = {{0}};
    assert_int_equal(last("1 10\n1 ten\n", &m, &err), PFLEX_TOKFILE_BAD);
    assert_non_null(strstr(err.text, "last line '1 ten' is not 'UNIX_TIME TOKENS_TOTAL'"));
    assert_int_equal(last("7\n", &m, &err), PFLEX_TOKFILE_BAD);
    assert_int_equal(last("1 10x\n", &m, &err), PFLEX_TOKFILE_BAD);
    assert_int_equal(last("inf 10\n", &m, &err), PFLEX_TOKFILE_BAD);
}

static void test_missing_file(void **state)
{
    struct pflex_tokfile_mark m;
    pflex_error_t err = {{0}};
    assert_int_equal(pflex_tokfile_last("/nonexistent/tokens", &m, &err), -1);
    assert_non_null(strstr(err.text, "/nonexistent/tokens: "));
}

/* A FIFO is refused at once (reading one would wait for a writer); a
 * symlink to the file is followed. */
static void test_fifo_refused_link_followed(void **state)
{
    struct pflex_tokfile_mark m;
    pflex_error_t err = {{0}};
    char fifo[64], link[64];
    snprintf(fifo, sizeof fifo, "%s.fifo", path);
    snprintf(link, sizeof link, "%s.link", path);
    unlink(fifo);
    unlink(link);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(5);   /* a blocking open would hang here: fail instead */
    assert_int_equal(pflex_tokfile_last(fifo, &m, &err), -1);
    alarm(0);
    assert_non_null(strstr(err.text, ": a FIFO; want a regular file"));
    put("# t tokens\n100 5000\n");
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(pflex_tokfile_last(link, &m, &err), 0);
    assert_float_equal(m.tokens, 5000, 0);
    unlink(fifo);
    unlink(link);
}

/* A file longer than the tail read: the cut first line is not taken. */
static void test_big_file(void **state)
{
    size_t cap = 200000, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int k = 0; len + 64 < cap; k++)
        len += (size_t)snprintf(text + len, cap - len, "%d.25 %d\n", k, 1000 * k);
    struct pflex_tokfile_mark m;
    pflex_error_t err = {{0}};
    assert_int_equal(last(text, &m, &err), 0);
    char *end = text + len - 1;
    *end = '\0';
    char *line = strrchr(text, '\n') + 1;
    assert_float_equal(m.t_s, strtod(line, NULL), 0);
    free(text);
    /* One long line: no complete line inside the tail. */
    text = calloc(cap, 1);
    assert_non_null(text);
    memset(text, '1', cap - 2);
    text[cap - 2] = '\n';
    assert_int_equal(last(text, &m, &err), 1);
    free(text);
}

int main(void)
{
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_last_complete_line),
        cmocka_unit_test(test_no_line_yet),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_fifo_refused_link_followed),
        cmocka_unit_test(test_big_file),
    };
    int failed = cmocka_run_group_tests_name("tokfile", tests, NULL, NULL);
    unlink(path);
    return failed;
}
