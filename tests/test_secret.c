/* test_secret.c — secret files: read whole when only their owner may read
 * them, refused (with their mode) when others may, errors named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "pflex/io/secret.h"

static char dir[] = "/tmp/pflex-test-secret-XXXXXX";

static const char *file(const char *name, const char *text, size_t len, mode_t mode)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

static void test_private_file_read(void **state)
{
    char *s;
    size_t n;
    unsigned mode = 0;
    pflex_error_t err;
    const char *p = file("ok", "t0k\0en\n", 7, 0600);
    assert_int_equal(pflex_secret_read_file(p, &s, &n, &mode, &err), 0);
    assert_int_equal(n, 7);
    assert_memory_equal(s, "t0k\0en\n", 8);   /* NUL-terminated past the end */
    assert_int_equal(mode, 0600);
    free(s);
    p = file("ro", "x", 1, 0400);
    assert_int_equal(pflex_secret_read_file(p, &s, &n, &mode, &err), 0);
    free(s);
}

static void test_refused_or_failed(void **state)
{
    char *s = NULL;
    size_t n;
    unsigned mode = 0;
    pflex_error_t err;
    char want[300];
    const char *p = file("open", "x", 1, 0640);
    assert_int_equal(pflex_secret_read_file(p, &s, &n, &mode, &err), PFLEX_SECRET_OPEN);
    assert_int_equal(mode, 0640);
    snprintf(want, sizeof want, "%s: readable by others (mode 640); chmod 600 it", p);
    assert_string_equal(err.text, want);
    assert_null(s);
    snprintf(want, sizeof want, "%s/none", dir);
    assert_int_equal(pflex_secret_read_file(want, &s, &n, &mode, &err), -1);
    assert_non_null(strstr(err.text, "No such file or directory"));
    size_t big = PFLEX_SECRET_MAX_BYTES + 1;
    char *text = calloc(big, 1);
    assert_non_null(text);
    memset(text, 'a', big);
    for (size_t i = 100; i < big; i += 100)
        text[i] = '\n';
    p = file("big", text, big, 0600);
    free(text);
    assert_int_equal(pflex_secret_read_file(p, &s, &n, &mode, &err), -1);
    assert_non_null(strstr(err.text, "big: larger than 4 MiB"));
}

/* Kubernetes mounts a Secret as a symlink to a file: followed.  A FIFO
 * (or a device) is refused at once instead of blocking the reader. */
static void test_symlink_followed_fifo_refused(void **state)
{
    char *s = NULL;
    size_t n;
    unsigned mode = 0;
    pflex_error_t err;
    char link[300], fifo[300], want[400];
    const char *p = file("target", "s3cret\n", 7, 0600);
    snprintf(link, sizeof link, "%s/link", dir);
    assert_int_equal(symlink(p, link), 0);
    assert_int_equal(pflex_secret_read_file(link, &s, &n, &mode, &err), 0);
    assert_int_equal(n, 7);
    assert_memory_equal(s, "s3cret\n", 7);
    free(s);
    s = NULL;
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(5);   /* a blocking open would hang here: fail the test instead */
    assert_int_equal(pflex_secret_read_file(fifo, &s, &n, &mode, &err), -1);
    alarm(0);
    snprintf(want, sizeof want, "%s: a FIFO; want a regular file (a symlink to one is followed)",
             fifo);
    assert_string_equal(err.text, want);
    assert_null(s);
    assert_int_equal(pflex_secret_read_file(dir, &s, &n, &mode, &err), -1);
    assert_non_null(strstr(err.text, ": a directory; want a regular file"));
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_private_file_read),
        cmocka_unit_test(test_refused_or_failed),
        cmocka_unit_test(test_symlink_followed_fifo_refused),
    };
    int failed = cmocka_run_group_tests_name("secret", tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        failed++;
    return failed;
}
