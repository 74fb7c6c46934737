/* vtn.c — pflex vtn: a small OpenADR 3 VTN on loopback (pflex/net/vtn.h), as a
 * process, for demos and the end-to-end tests: the events the VEN of
 * `pflex controller --vtn` polls, from a JSON file. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/cli.h"
#include "pflex/io/secret.h"
#include "pflex/io/sweep.h"
#include "pflex/net/vtn.h"

#define CMD "vtn"
#define MAX_FILE (4u << 20)

static const char help[] =
"usage: pflex vtn --events FILE --client-id ID --secret-file FILE [options]\n"
"\n"
"A small OpenADR 3 VTN on 127.0.0.1, serving what a VEN (pflex controller\n"
"--vtn) uses: POST /auth/token (OAuth2 client credentials, form-encoded),\n"
"GET /events (bearer token; paged by skip and limit, programID filtered),\n"
"POST /reports and subscriptions (POST /subscriptions, GET /subscriptions,\n"
"GET|DELETE /subscriptions/ID).  An event new, changed or gone at a reread\n"
"is notified to its subscribers (a POST of {objectType, operation, object}\n"
"to their callbackUrl, with their bearerToken; see docs/openadr.md).  For\n"
"tests and demos: it serves loopback only; subscriptions live in memory.\n"
"\n"
"options:\n"
"  --events FILE        a JSON array of OpenADR 3 event objects; SIGHUP rereads\n"
"                       it (a file that does not parse is logged and the events\n"
"                       served stay as they were)\n"
"  --client-id ID       the client id a VEN must give\n"
"  --secret-file FILE   its client secret (first line; mode 0600 or stricter)\n"
"  --port N             port on 127.0.0.1 (default 0: one the system picks)\n"
"  --port-file FILE     write the port to FILE once listening\n"
"  --token-lifetime S   seconds a token lives (default 3600)\n"
"  --raw-file FILE      bytes to answer GET /events with instead, from SIGUSR1\n"
"                       until SIGUSR2 (a broken or hostile VTN, for tests)\n"
"  --raw-status N       the HTTP status of those answers (default 200)\n"
"  --reports FILE       on exit, write the reports received, a JSON array\n"
"  --callback-ca FILE   PEM CA bundle to check https:// callback URLs by\n"
"                       (default: the system's)\n"
"\n"
"Logs go to stderr.  SIGTERM or SIGINT stops it.  Exit: 0, 1 internal error,\n"
"2 bad usage or input.\n"
"\n"
"EXAMPLES\n"
"  pflex vtn --events event.json --client-id site-1 --secret-file vtn.secret \\\n"
"      --port-file vtn.port &\n"
"  pflex controller run --agent http://127.0.0.1:9410 --vtn http://127.0.0.1:$(cat vtn.port) \\\n"
"      --vtn-client-id site-1 --vtn-secret-file vtn.secret\n"
"  # notified at once: the controller subscribes with a callback to its API\n"
"  pflex vtn --events event.json --client-id site-1 --secret-file vtn.secret \\\n"
"      --port 8081 --callback-ca api.crt &\n";

static volatile sig_atomic_t stop_now, reread, raw_on, raw_off;
static void on_stop(int s) { (void)s; stop_now = 1; }
static void on_hup(int s) { (void)s; reread = 1; }
static void on_usr1(int s) { (void)s; raw_on = 1; }
static void on_usr2(int s) { (void)s; raw_off = 1; }

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vtn_log(void *ud, const char *line);
static void logmsg(const char *fmt, ...)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ldZ pflex vtn: ", when, ts.tv_nsec / 1000000);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The VTN's own lines (subscriptions, failed notifications). */
static void vtn_log(void *ud, const char *line)
{
    (void)ud;
    logmsg("%s", line);
}

/* The whole file (pflex_read_all), at most MAX_FILE bytes. */
static char *read_file(const char *path, size_t *len, pflex_error_t *err)
{
    char *buf;
    if (pflex_read_all(path, &buf, len, err) < 0)
        return NULL;
    if (*len > MAX_FILE) {
        free(buf);
        pflex_error_set(err, "%s: larger than 4 MiB", path);
        return NULL;
    }
    return buf;
}

/* The client secret: the first line of a file only its owner may read. */
static char *read_secret(const char *path, pflex_error_t *err)
{
    char *s;
    size_t n;
    unsigned mode;
    if (pflex_secret_read_file(path, &s, &n, &mode, err))
        return NULL;
    s[strcspn(s, "\r\n")] = '\0';
    if (!*s) {
        pflex_error_set(err, "%s: empty", path);
        memset(s, 0, n);
        free(s);
        return NULL;
    }
    return s;
}

static int load_events(pflex_vtn_t *v, const char *path, pflex_error_t *err)
{
    size_t n;
    char *buf = read_file(path, &n, err);
    if (!buf)
        return -1;
    int rc = pflex_vtn_set_events(v, buf, err);
    free(buf);
    return rc;
}

static int write_reports(pflex_vtn_t *v, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        cli_error(CMD, "%s: %s", path, strerror(errno));
        return -1;
    }
    fputs("[", f);
    char *r;
    for (size_t i = 0; (r = pflex_vtn_report(v, i)); i++) {
        fprintf(f, "%s%s", i ? ",\n" : "\n", r);
        free(r);
    }
    fputs("\n]\n", f);
    if (fclose(f) != 0) {
        cli_error(CMD, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int cmd_vtn(int argc, char **argv)
{
    enum { O_EVENTS = 256, O_ID, O_SECRET, O_PORT, O_PORT_FILE, O_LIFE, O_RAW, O_RAW_STATUS, O_REPORTS, O_CB_CA, O_HELP };
    static const struct option opts[] = {
        {"events", required_argument, NULL, O_EVENTS}, {"client-id", required_argument, NULL, O_ID},
        {"secret-file", required_argument, NULL, O_SECRET}, {"port", required_argument, NULL, O_PORT},
        {"port-file", required_argument, NULL, O_PORT_FILE},
        {"token-lifetime", required_argument, NULL, O_LIFE}, {"raw-file", required_argument, NULL, O_RAW},
        {"raw-status", required_argument, NULL, O_RAW_STATUS},
        {"reports", required_argument, NULL, O_REPORTS}, {"callback-ca", required_argument, NULL, O_CB_CA},
        {"help", no_argument, NULL, O_HELP},
        {0, 0, 0, 0},
    };
    const char *events = NULL, *id = NULL, *secret_file = NULL, *port_file = NULL, *raw_file = NULL,
               *reports = NULL, *cb_ca = NULL;
    double port = 0, life = 3600, raw_status = 200;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_EVENTS: events = optarg; break;
        case O_ID: id = optarg; break;
        case O_SECRET: secret_file = optarg; break;
        case O_PORT:
            if (cli_parse_double(CMD, "--port", optarg, 0, 65535, &port) || port != (unsigned)port)
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_PORT_FILE: port_file = optarg; break;
        case O_LIFE:
            if (cli_parse_double(CMD, "--token-lifetime", optarg, 1, 86400 * 365, &life))
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_RAW: raw_file = optarg; break;
        case O_RAW_STATUS:
            if (cli_parse_double(CMD, "--raw-status", optarg, 100, 599, &raw_status))
                return PFLEX_EXIT_BAD_INPUT;
            break;
        case O_REPORTS: reports = optarg; break;
        case O_CB_CA: cb_ca = optarg; break;
        case 'h':
        case O_HELP:
            fputs(help, stdout);
            return PFLEX_EXIT_OK;
        default:
            return cli_bad_option(CMD, argv, opts);
        }
    }
    if (optind < argc)
        return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (!events || !id || !secret_file)
        return cli_usage_error(CMD, "--events, --client-id and --secret-file are required");
    pflex_error_t err;
    char *secret = read_secret(secret_file, &err);
    if (!secret) {
        cli_error(CMD, "%s", err.text);
        return PFLEX_EXIT_BAD_INPUT;
    }
    char *raw = NULL;
    size_t raw_len = 0;
    if (raw_file && !(raw = read_file(raw_file, &raw_len, &err))) {
        cli_error(CMD, "%s", err.text);
        free(secret);
        return PFLEX_EXIT_BAD_INPUT;
    }
    pflex_vtn_t *v = NULL;
    struct pflex_vtn_config vc = {.client_id = id, .client_secret = secret, .expires_in = (long)life,
                                  .port = (unsigned short)port, .callback_ca_file = cb_ca, .log = vtn_log};
    int rc = PFLEX_EXIT_INTERNAL;
    if (pflex_vtn_start(&vc, &v, &err) < 0) {
        cli_error(CMD, "%s", err.text);
        goto out;
    }
    if (load_events(v, events, &err) < 0) {
        cli_error(CMD, "%s", err.text);
        rc = PFLEX_EXIT_BAD_INPUT;
        goto out;
    }
    logmsg("listening on 127.0.0.1:%u, events from %s", pflex_vtn_port(v), events);
    if (port_file) {
        char tmpf[4200];
        snprintf(tmpf, sizeof tmpf, "%s.tmp", port_file);
        FILE *pf = fopen(tmpf, "w");
        if (!pf || fprintf(pf, "%u\n", pflex_vtn_port(v)) < 0 || fclose(pf) != 0 || rename(tmpf, port_file) < 0) {
            cli_error(CMD, "%s: %s", port_file, strerror(errno));
            goto out;
        }
    }
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    while (!stop_now) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        if (reread) {
            reread = 0;
            if (load_events(v, events, &err) < 0)
                logmsg("%s (the events served stay as they were)", err.text);
            else
                logmsg("events reread from %s", events);
        }
        if (raw_on) {
            raw_on = 0;
            if (!raw)
                logmsg("SIGUSR1 without --raw-file: nothing to serve instead");
            else if (pflex_vtn_set_raw(v, (unsigned)raw_status, raw, raw_len, 0) == 0)
                logmsg("GET /events now answers HTTP %u with %s (%zu bytes)", (unsigned)raw_status,
                       raw_file, raw_len);
        }
        if (raw_off) {
            raw_off = 0;
            pflex_vtn_set_raw(v, 0, NULL, 0, 0);
            logmsg("GET /events serves the events again");
        }
    }
    struct pflex_vtn_counts n;
    pflex_vtn_counts(v, &n);
    logmsg("stopping: %lu token requests, %lu event requests, %lu reports, %lu refused (401), %lu bad, "
           "%lu subscriptions, %lu notifications sent, %lu failed",
           n.token_requests, n.event_requests, n.reports, n.unauthorized, n.bad, n.subscriptions,
           n.notifications, n.notify_failed);
    rc = PFLEX_EXIT_OK;
    if (reports && write_reports(v, reports) < 0)
        rc = PFLEX_EXIT_INTERNAL;
out:
    pflex_vtn_stop(v);
    memset(secret, 0, strlen(secret));
    free(secret);
    free(raw);
    return rc;
}
