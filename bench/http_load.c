/* http_load.c — a small HTTP/1.1 load generator for bench/run.sh: C
 * keep-alive connections to one loopback server, each sending GET PATH and
 * waiting for the whole answer (Content-Length) before the next, for S
 * seconds after a short warm-up.  Prints one line: requests/s, the mean
 * answer size, and errors.  The same client drives the agent and nginx,
 * so that their figures compare.  Asserts nothing.
 *
 *   http_load PORT PATH CONNECTIONS SECONDS
 */
#define _GNU_SOURCE   /* memmem */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF 262144

struct conn {
    int fd;
    char *buf;
    size_t have;
    long want;          /* bytes of the whole answer once its head is in; -1 before */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int dial(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        perror("http_load: connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* The answer's total length once its head is in, else -1. */
static long answer_len(const char *b, size_t n)
{
    const char *end = memmem(b, n, "\r\n\r\n", 4);
    if (!end)
        return -1;
    long body = 0;
    for (const char *p = b; p < end; p++)
        if ((p == b || p[-1] == '\n') && !strncasecmp(p, "Content-Length:", 15))
            body = strtol(p + 15, NULL, 10);
    return (long)(end + 4 - b) + body;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: http_load PORT PATH CONNECTIONS SECONDS\n");
        return 2;
    }
    unsigned port = (unsigned)atoi(argv[1]);
    int n = atoi(argv[3]);
    double secs = atof(argv[4]);
    char req[512];
    int rlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", argv[2]);
    struct conn *c = calloc((size_t)n, sizeof *c);
    int ep = epoll_create1(0);
    if (!c || ep < 0 || n < 1)
        return 1;
    for (int i = 0; i < n; i++) {
        c[i].fd = dial(port);
        c[i].buf = malloc(BUF);
        c[i].want = -1;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (unsigned)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
        if (send(c[i].fd, req, (size_t)rlen, MSG_NOSIGNAL) != rlen)
            return 1;
    }
    double t0 = now_s(), start = t0 + 0.2 * secs, end = start + secs;
    unsigned long done = 0, bytes = 0, errors = 0;
    struct epoll_event evs[256];
    for (double t = t0; t < end; t = now_s()) {
        int k = epoll_wait(ep, evs, 256, 100);
        for (int e = 0; e < k; e++) {
            struct conn *x = &c[evs[e].data.u32];
            ssize_t got = recv(x->fd, x->buf + x->have, BUF - x->have, 0);
            if (got <= 0) {
                fprintf(stderr, "http_load: the server closed a connection (%s)\n",
                        got ? strerror(errno) : "end of stream");
                return 1;
            }
            x->have += (size_t)got;
            if (x->want < 0)
                x->want = answer_len(x->buf, x->have);
            if (x->want < 0 || x->have < (size_t)x->want)
                continue;
            if (strncmp(x->buf, "HTTP/1.1 200", 12))
                errors++;
            if (t >= start) {
                done++;
                bytes += (unsigned long)x->want;
            }
            x->have = 0;    /* one request in flight per connection: nothing follows */
            x->want = -1;
            if (send(x->fd, req, (size_t)rlen, MSG_NOSIGNAL) != rlen)
                return 1;
        }
    }
    double dt = now_s() - start;
    printf("%.0f req/s  %lu B/answer  %lu errors  (%d connections, %.1f s)\n", done / dt,
           done ? bytes / done : 0, errors, n, dt);
    for (int i = 0; i < n; i++) {
        close(c[i].fd);
        free(c[i].buf);
    }
    free(c);
    close(ep);
    return errors ? 1 : 0;
}
