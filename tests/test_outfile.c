/* test_outfile.c — atomic output files (pflex/outfile.h), against the file
 * system itself: the old file stands whole until the commit, an abort
 * leaves it and no temporary file behind, the new file keeps the mode of
 * the one it replaces, and an output that is a symbolic link, a directory
 * or one of the inputs (under another name too: a hard link) is refused. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "pflex/outfile.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/pflex-test-outfile-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[400];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
    return rmdir(dir);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *get(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
    closedir(d);
    return n;
}

static void test_commit_and_abort(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/out.csv", dir);
    put(path, "old\n");
    chmod(path, 0640);
    pflex_outfile_t *o;
    pflex_error_t err;
    assert_int_equal(pflex_outfile_begin(path, NULL, &o, &err), 0);
    fputs("new\n", pflex_outfile_stream(o));
    assert_int_equal(pflex_outfile_finish(o, &err), 0);
    assert_string_equal(get(path), "old\n");                  /* not yet */
    assert_string_equal(get(pflex_outfile_temp_path(o)), "new\n");
    assert_int_equal(entries(), 2);
    assert_int_equal(pflex_outfile_commit(o, &err), 0);
    assert_string_equal(get(path), "new\n");
    assert_int_equal(entries(), 1);                           /* no temporary left */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    /* An abort leaves the old file and nothing else. */
    assert_int_equal(pflex_outfile_begin(path, NULL, &o, &err), 0);
    fputs("half", pflex_outfile_stream(o));
    pflex_outfile_abort(o);
    assert_string_equal(get(path), "new\n");
    assert_int_equal(entries(), 1);
    /* A new file in a new name. */
    snprintf(path, sizeof path, "%s/fresh.csv", dir);
    assert_int_equal(pflex_outfile_begin(path, NULL, &o, &err), 0);
    fputs("x\n", pflex_outfile_stream(o));
    assert_int_equal(pflex_outfile_commit(o, &err), 0);
    assert_string_equal(get(path), "x\n");
}

static void test_refusals(void **state)
{
    (void)state;
    char target[128], lnk[128], hard[128], sub[128];
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(lnk, sizeof lnk, "%s/link", dir);
    snprintf(hard, sizeof hard, "%s/hard", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    put(target, "keep\n");
    assert_int_equal(symlink("target", lnk), 0);
    assert_int_equal(link(target, hard), 0);
    pflex_outfile_t *o = NULL;
    pflex_error_t err;
    assert_int_equal(pflex_outfile_begin(lnk, NULL, &o, &err), -1);
    assert_non_null(strstr(err.text, "is a symbolic link"));
    assert_string_equal(get(target), "keep\n");
    const char *inputs[] = {"/no/such/file", target, NULL};
    assert_int_equal(pflex_outfile_begin(hard, inputs, &o, &err), -1);
    assert_non_null(strstr(err.text, "is also an input"));
    assert_int_equal(pflex_outfile_begin(target, inputs, &o, &err), -1);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(pflex_outfile_begin(sub, NULL, &o, &err), -1);
    assert_non_null(strstr(err.text, "is a directory"));
    rmdir(sub);
    /* a FIFO (a device would need root): never replaced by a regular file */
    assert_int_equal(mkfifo(sub, 0644), 0);
    assert_int_equal(pflex_outfile_begin(sub, NULL, &o, &err), -1);
    assert_non_null(strstr(err.text, "is not a regular file"));
    struct stat fst;
    assert_int_equal(lstat(sub, &fst), 0);
    assert_true(S_ISFIFO(fst.st_mode));
    unlink(sub);
    assert_int_equal(pflex_outfile_begin("/no/such/dir/x.csv", NULL, &o, &err), -1);
    assert_non_null(strstr(err.text, ": write error: "));
    assert_int_equal(entries(), 3);                           /* nothing left behind */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_and_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
