/* test_sdnotify.c — systemd's notify protocol without libsystemd
 * (src/lib/util/sdnotify.c): datagrams to a path and to an abstract
 * socket, the watchdog period from the environment systemd sets; and the
 * agent under a notify socket of the test's own, as systemd would run it:
 * READY=1 once it listens, WATCHDOG=1 from its main loop, none while it is
 * stopped (SIGSTOP: systemd would kill it), STOPPING=1 on SIGTERM; and
 * the controller the same way.  Every wait is bounded. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "lib/util/sdnotify.h"

/* A datagram socket bound to name ("@x": abstract); its descriptor. */
static int listener(const char *name)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    memcpy(sa.sun_path, name, n);
    if (name[0] == '@')
        sa.sun_path[0] = '\0';
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
    return fd;
}

/* The next datagram within s seconds into buf ("" when none came). */
static void next_message(int fd, char *buf, size_t size, double s)
{
    buf[0] = '\0';
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, (int)(s * 1000)) <= 0)
        return;
    ssize_t got = recv(fd, buf, size - 1, 0);
    buf[got > 0 ? got : 0] = '\0';
}

static void test_notify_path_and_abstract(void **state)
{
    char path[108], buf[256];
    snprintf(path, sizeof path, "/tmp/pflex-sdnotify-%ld.sock", (long)getpid());
    unlink(path);
    int fd = listener(path);
    pflex_error_t err;
    assert_int_equal(pflex_sd_notify(path, "READY=1\nSTATUS=up", &err), 0);
    next_message(fd, buf, sizeof buf, 2);
    assert_string_equal(buf, "READY=1\nSTATUS=up");
    close(fd);
    unlink(path);

    char abstract[64];
    snprintf(abstract, sizeof abstract, "@pflex-sdnotify-%ld", (long)getpid());
    fd = listener(abstract);
    assert_int_equal(pflex_sd_notify(abstract, "WATCHDOG=1", &err), 0);
    next_message(fd, buf, sizeof buf, 2);
    assert_string_equal(buf, "WATCHDOG=1");
    close(fd);

    /* Not under systemd: nothing to do.  A name that is neither: refused.
     * Nobody listening: an error, not a crash. */
    assert_int_equal(pflex_sd_notify(NULL, "READY=1", &err), 1);
    assert_int_equal(pflex_sd_notify("", "READY=1", &err), 1);
    assert_int_equal(pflex_sd_notify("relative/sock", "READY=1", &err), -1);
    assert_non_null(strstr(err.text, "want an absolute path or @name"));
    assert_int_equal(pflex_sd_notify(abstract, "READY=1", &err), -1);
}

static void test_watchdog_period(void **state)
{
    char me[32];
    snprintf(me, sizeof me, "%ld", (long)getpid());
    assert_float_equal(pflex_sd_watchdog_s("30000000", NULL), 30, 1e-9);
    assert_float_equal(pflex_sd_watchdog_s("250000", me), 0.25, 1e-9);
    assert_float_equal(pflex_sd_watchdog_s("30000000", "1"), 0, 0);     /* another process's */
    assert_float_equal(pflex_sd_watchdog_s(NULL, NULL), 0, 0);
    assert_float_equal(pflex_sd_watchdog_s("soon", NULL), 0, 0);
    assert_float_equal(pflex_sd_watchdog_s("0", NULL), 0, 0);
}

/* The daemon a test started, until it has reaped it: a failed assertion
 * leaves it running, so the teardown stops it. */
static pid_t child;

static int stop_child(void **state)
{
    (void)state;
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        child = 0;
    }
    return 0;
}

/* Datagrams received in s seconds that contain what. */
static int count_within(int fd, const char *what, double s)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int n = 0;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        double left = s - (t.tv_sec - t0.tv_sec) - (t.tv_nsec - t0.tv_nsec) * 1e-9;
        if (left <= 0)
            return n;
        char buf[512];
        next_message(fd, buf, sizeof buf, left);
        if (buf[0] && strstr(buf, what))
            n++;
    }
}

static void test_agent_under_systemd(void **state)
{
    const char *pflex = getenv("PFLEX");
    if (!pflex || access(pflex, X_OK) != 0)
        skip();     /* tests/run.sh sets it */
    char sock[64], dir[] = "/tmp/pflex-sdnotify-agent-XXXXXX", buf[512];
    assert_non_null(mkdtemp(dir));
    snprintf(sock, sizeof sock, "@pflex-sdnotify-agent-%ld", (long)getpid());
    int fd = listener(sock);
    pid_t pid = fork();
    assert_true(pid >= 0);
    child = pid;
    if (pid == 0) {
        setenv("NOTIFY_SOCKET", sock, 1);
        setenv("WATCHDOG_USEC", "400000", 1);      /* 0.4 s: a ping every 0.1 s */
        unsetenv("WATCHDOG_PID");
        char state_dir[80];
        snprintf(state_dir, sizeof state_dir, "%s/run", dir);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        execl(pflex, pflex, "agent", "--backend", "sim", "--gpus", "2", "--listen",
              "127.0.0.1:0", "--state-dir", state_dir, "--interval", "0.1", (char *)NULL);
        _exit(127);
    }
    next_message(fd, buf, sizeof buf, 20);
    assert_non_null(strstr(buf, "READY=1"));
    assert_non_null(strstr(buf, "STATUS=serving 2 GPUs on 127.0.0.1:0 (port "));
    assert_true(count_within(fd, "WATCHDOG=1", 1.0) >= 3);
    /* Stopped: silent, as a hung agent is (systemd would kill it). */
    kill(pid, SIGSTOP);
    count_within(fd, "WATCHDOG=1", 0.2);      /* what was already on its way */
    assert_int_equal(count_within(fd, "WATCHDOG=1", 0.8), 0);
    kill(pid, SIGCONT);
    assert_true(count_within(fd, "WATCHDOG=1", 1.0) >= 2);
    kill(pid, SIGTERM);
    int stopping = 0;
    for (int i = 0; i < 50 && !stopping; i++) {
        next_message(fd, buf, sizeof buf, 0.2);
        stopping = strstr(buf, "STOPPING=1") != NULL;
    }
    assert_true(stopping);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    child = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(fd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The controller as systemd runs it (deploy/systemd/pflex-controller.service):
 * READY=1 once it runs, WATCHDOG=1 while its periods end, none while it is
 * stopped (a hung controller), STOPPING=1 on SIGTERM.  Its one agent is
 * nowhere: the periods run (the node down) all the same. */
static void test_controller_under_systemd(void **state)
{
    const char *pflex = getenv("PFLEX");
    if (!pflex || access(pflex, X_OK) != 0)
        skip();
    char sock[64], buf[512];
    snprintf(sock, sizeof sock, "@pflex-sdnotify-ctl-%ld", (long)getpid());
    int fd = listener(sock);
    pid_t pid = fork();
    assert_true(pid >= 0);
    child = pid;
    if (pid == 0) {
        setenv("NOTIFY_SOCKET", sock, 1);
        setenv("WATCHDOG_USEC", "400000", 1);
        unsetenv("WATCHDOG_PID");
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        execl(pflex, pflex, "controller", "run", "--agent", "http://127.0.0.1:9", "--period", "0.1",
              "--lease", "1", "--target", "5kW", (char *)NULL);
        _exit(127);
    }
    next_message(fd, buf, sizeof buf, 20);
    assert_non_null(strstr(buf, "READY=1"));
    assert_non_null(strstr(buf, "STATUS=1 agents, a period of 0.1 s"));
    assert_true(count_within(fd, "WATCHDOG=1", 1.0) >= 3);
    kill(pid, SIGSTOP);
    count_within(fd, "WATCHDOG=1", 0.2);
    assert_int_equal(count_within(fd, "WATCHDOG=1", 0.8), 0);
    kill(pid, SIGCONT);
    assert_true(count_within(fd, "WATCHDOG=1", 1.0) >= 2);
    kill(pid, SIGTERM);
    int stopping = 0;
    for (int i = 0; i < 50 && !stopping; i++) {
        next_message(fd, buf, sizeof buf, 0.2);
        stopping = strstr(buf, "STOPPING=1") != NULL;
    }
    assert_true(stopping);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    child = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notify_path_and_abstract),
        cmocka_unit_test(test_watchdog_period),
        cmocka_unit_test_teardown(test_agent_under_systemd, stop_child),
        cmocka_unit_test_teardown(test_controller_under_systemd, stop_child),
    };
    return cmocka_run_group_tests_name("sdnotify", tests, NULL, NULL);
}
