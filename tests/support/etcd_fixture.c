/* etcd_fixture.c — a real etcd on loopback for the tests (etcd_fixture.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "pflex/http.h"
#include "support/etcd_fixture.h"

static pid_t etcd_pid;
static char dir[64], url[64];
static int dead_port;

/* A loopback port free now (the kernel's pick, released). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0
        || getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static const char *etcd_binary(void)
{
    static const char *paths[] = {"/usr/bin/etcd", "/usr/local/bin/etcd"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

void etcd_fixture_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int etcd_fixture_start(void)
{
    const char *bin = etcd_binary();
    if (!bin)
        return 1;
    snprintf(dir, sizeof dir, "/tmp/pflex-etcd-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    int cport = free_port(), pport = free_port();
    dead_port = free_port();
    if (cport < 0 || pport < 0 || dead_port < 0)
        return -1;
    char data[128], curl[64], purl[64], cluster[96], logf[128];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(logf, sizeof logf, "%s/etcd.log", dir);
    snprintf(curl, sizeof curl, "http://127.0.0.1:%d", cport);
    snprintf(purl, sizeof purl, "http://127.0.0.1:%d", pport);
    snprintf(cluster, sizeof cluster, "default=%s", purl);
    snprintf(url, sizeof url, "%s", curl);
    etcd_pid = fork();
    if (etcd_pid < 0)
        return -1;
    if (etcd_pid == 0) {
        if (!freopen(logf, "w", stdout) || !freopen(logf, "a", stderr))
            _exit(127);
        execl(bin, bin, "--data-dir", data, "--listen-client-urls", curl, "--advertise-client-urls", curl,
              "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl, "--initial-cluster", cluster,
              (char *)NULL);
        _exit(127);
    }
    /* up when /health answers, within 15 s */
    char hurl[96];
    snprintf(hurl, sizeof hurl, "%s/health", url);
    for (int i = 0; i < 300; i++) {
        long status = 0;
        char *resp = NULL;
        pflex_error_t err;
        if (pflex_http_request("GET", hurl, NULL, NULL, 1, &status, &resp, &err) == 0 && status == 200
            && resp && strstr(resp, "true")) {
            free(resp);
            return 0;
        }
        free(resp);
        if (waitpid(etcd_pid, NULL, WNOHANG) == etcd_pid) {
            etcd_pid = 0;
            return -1;
        }
        etcd_fixture_sleep(0.05);
    }
    etcd_fixture_stop();
    return -1;
}

void etcd_fixture_stop(void)
{
    if (etcd_pid > 0) {
        kill(etcd_pid, SIGKILL);
        waitpid(etcd_pid, NULL, 0);
        etcd_pid = 0;
    }
    if (dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "etcd fixture: could not remove %s\n", dir);
        dir[0] = '\0';
    }
}

const char *etcd_fixture_url(void)
{
    return etcd_pid > 0 ? url : NULL;
}

int etcd_fixture_dead_port(void)
{
    return dead_port;
}

