/* metrics_server.c — a tiny loopback HTTP server for end-to-end tests: it
 * serves the contents of a file as a Prometheus metrics page.
 *
 *   metrics_server PORT_FILE METRICS_FILE [SECONDS]
 *
 * Listens on 127.0.0.1 on a port the kernel picks, writes that port to
 * PORT_FILE (atomically: a temporary file renamed), answers GET /metrics
 * with METRICS_FILE as it is at that moment (so a test can change a value
 * and watch it scraped), and GET /api/v1/query (whatever the query) the
 * same: a fake Prometheus server whose every instant query gets the file,
 * a Prometheus API answer the test writes; 404 for anything else.  Exits on SIGTERM or SIGINT,
 * or after SECONDS (default 120) so that it never outlives a test. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include "pflex/io/sweep.h"

static const char *metrics_file;

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **ctx)
{
    struct MHD_Response *r;
    unsigned status = MHD_HTTP_OK;
    char *buf = NULL;
    size_t len = 0;
    pflex_error_t err;
    if (strcmp(method, "GET") || (strcmp(url, "/metrics") && strcmp(url, "/api/v1/query"))) {
        static const char nf[] = "not found\n";
        status = MHD_HTTP_NOT_FOUND;
        r = MHD_create_response_from_buffer(sizeof nf - 1, (void *)nf, MHD_RESPMEM_PERSISTENT);
    } else if (pflex_read_all(metrics_file, &buf, &len, &err) < 0) {
        static const char ie[] = "cannot read the metrics file\n";
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        r = MHD_create_response_from_buffer(sizeof ie - 1, (void *)ie, MHD_RESPMEM_PERSISTENT);
    } else {
        r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
        if (r)
            MHD_add_response_header(r, "Content-Type", strcmp(url, "/metrics") ? "application/json"
                                                                                : "text/plain; version=0.0.4");
        else
            free(buf);
    }
    if (!r)
        return MHD_NO;
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static int write_port(const char *path, unsigned port)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fprintf(f, "%u\n", port) > 0;
    ok = (fclose(f) == 0) && ok;
    return ok && rename(tmp, path) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: metrics_server PORT_FILE METRICS_FILE [SECONDS]\n");
        return 2;
    }
    metrics_file = argv[2];
    long secs = argc == 4 ? strtol(argv[3], NULL, 10) : 120;
    if (secs < 1 || secs > 3600) {
        fprintf(stderr, "metrics_server: SECONDS must be 1-3600\n");
        return 2;
    }
    /* the signals are taken by sigtimedwait below, in every thread blocked */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                                            0, NULL, NULL, answer, NULL,
                                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                            MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                                            MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "metrics_server: cannot listen on 127.0.0.1\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port || write_port(argv[1], info->port) < 0) {
        fprintf(stderr, "metrics_server: cannot write the port to %s\n", argv[1]);
        MHD_stop_daemon(d);
        return 1;
    }
    struct timespec ts = {secs, 0};
    int sig;
    while ((sig = sigtimedwait(&set, NULL, &ts)) < 0 && errno == EINTR)
        ;
    MHD_stop_daemon(d);
    (void)sig;     /* a signal or the time limit: either way a clean stop */
    return 0;
}
