/* slow_proxy.c — a loopback TCP proxy that makes a server slow, and a
 * client that trickles, for the controller's fault tests
 * (tests/e2e/controller_faults.sh).
 *
 *   slow_proxy proxy PORT_FILE UPSTREAM_PORT MODE SECONDS_ARG [LIFE]
 *       listens on 127.0.0.1 (a port the kernel picks, written to
 *       PORT_FILE atomically) and forwards each connection to
 *       127.0.0.1:UPSTREAM_PORT.  The requests go up at once; the answers
 *       come back by MODE: "trickle" one byte every SECONDS_ARG, "delay"
 *       each SECONDS_ARG after its request, "pass" as they come.  It starts
 *       fast: SIGUSR1 turns the slowness on (kept connections too), SIGUSR2
 *       off, so that a test turns the fault on and off when it wants.
 *   slow_proxy clients HOST_PORT N SECONDS_ARG [LIFE]
 *       keeps N connections to HOST_PORT from 127.0.0.2, each sending the
 *       start of a GET one byte every SECONDS_ARG (reconnecting when the
 *       server closes).
 * Both end on SIGTERM or after LIFE seconds (default 120), so that they
 * never outlive a test. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static atomic_int slow = 0;         /* the mode's slowness on */
static int mode_trickle, mode_delay;
static double arg_s;
static int upstream_port;

static void on_usr(int sig)
{
    atomic_store(&slow, sig == SIGUSR1);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static const char *bind_addr;      /* clients: their own loopback address */

static int connect_to(const char *host, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (fd >= 0 && bind_addr) {
        struct sockaddr_in b = {.sin_family = AF_INET};
        inet_pton(AF_INET, bind_addr, &b.sin_addr);
        if (bind(fd, (struct sockaddr *)&b, sizeof b) < 0) {
            close(fd);
            return -1;
        }
    }
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One connection: requests up at once, answers down by the mode, which
 * is read at each answer (a kept connection turns slow too). */
static void *conn_main(void *arg)
{
    int cfd = (int)(intptr_t)arg, ufd = connect_to("127.0.0.1", upstream_port);
    if (ufd < 0) {
        close(cfd);
        return NULL;
    }
    char buf[65536];
    int asked = 0;      /* a request went up since the last answer began */
    for (;;) {
        struct pollfd pf[2] = {{.fd = cfd, .events = POLLIN}, {.fd = ufd, .events = POLLIN}};
        if (poll(pf, 2, 1000) < 0 && errno != EINTR)
            break;
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(cfd, buf, sizeof buf);
            if (n <= 0 || write_all(ufd, buf, (size_t)n) < 0)
                break;
            asked = 1;
        }
        if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            int on = atomic_load(&slow), trickle = on && mode_trickle;
            if (on && mode_delay && asked)
                sleep_s(arg_s);
            asked = 0;
            ssize_t n = read(ufd, buf, trickle ? 1 : sizeof buf);
            if (n <= 0 || write_all(cfd, buf, (size_t)n) < 0)
                break;
            if (trickle)
                sleep_s(arg_s);
        }
    }
    close(ufd);
    close(cfd);
    return NULL;
}

static int proxy(const char *port_file)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    socklen_t len = sizeof a;
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 64) < 0
        || getsockname(lfd, (struct sockaddr *)&a, &len) < 0) {
        perror("slow_proxy: listen");
        return 1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 || rename(tmp, port_file) < 0) {
        perror(port_file);
        return 1;
    }
    for (;;) {
        int cfd = accept(lfd, NULL, NULL);
        if (cfd < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        pthread_t th;
        if (pthread_create(&th, NULL, conn_main, (void *)(intptr_t)cfd) != 0)
            close(cfd);
        else
            pthread_detach(th);
    }
}

/* N trickling clients, forever (until LIFE). */
static int clients(const char *host_port, int n)
{
    char host[64];
    int port;
    if (sscanf(host_port, "%63[^:]:%d", host, &port) != 2)
        return 2;
    bind_addr = "127.0.0.2";    /* apart from the test's own requests (per-address limits) */
    const char req[] = "GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    int *fd = calloc((size_t)n, sizeof *fd);
    size_t *at = calloc((size_t)n, sizeof *at);
    if (!fd || !at)
        return 1;
    for (int i = 0; i < n; i++)
        fd[i] = -1;
    for (;;) {
        for (int i = 0; i < n; i++) {
            if (fd[i] < 0) {
                fd[i] = connect_to(host, port);
                at[i] = 0;
                if (fd[i] < 0)
                    continue;
            }
            char ch = at[i] < sizeof req - 1 ? req[at[i]] : 'x';    /* a header that never ends */
            if (write(fd[i], &ch, 1) != 1) {
                close(fd[i]);
                fd[i] = -1;
                continue;
            }
            at[i]++;
        }
        sleep_s(arg_s);
    }
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_usr};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    if (argc >= 6 && !strcmp(argv[1], "proxy")) {
        upstream_port = atoi(argv[3]);
        mode_trickle = !strcmp(argv[4], "trickle");
        mode_delay = !strcmp(argv[4], "delay");
        arg_s = atof(argv[5]);
        alarm(argc > 6 ? (unsigned)atoi(argv[6]) : 120);
        return proxy(argv[2]);
    }
    if (argc >= 5 && !strcmp(argv[1], "clients")) {
        arg_s = atof(argv[4]);
        alarm(argc > 5 ? (unsigned)atoi(argv[5]) : 120);
        return clients(argv[2], atoi(argv[3]));
    }
    fprintf(stderr, "usage: slow_proxy proxy PORT_FILE UPSTREAM_PORT trickle|delay|pass SECONDS [LIFE]\n"
                    "       slow_proxy clients HOST:PORT N SECONDS [LIFE]\n");
    return 2;
}
