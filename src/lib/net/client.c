/* client.c — the HTTP client of every daemon (pflex/net/http.h): one request,
 * or a batch of many at once, over libcurl's multi interface.
 *
 * A client owns a multi handle (and so libcurl's connection cache and DNS
 * cache) and a pool of `parallel` easy handles.  A batch feeds its calls
 * into free easy handles, so that at most `parallel` are in flight and a
 * call's timeout counts from its own start, never from time spent waiting
 * in a queue.  Connections go back to the cache when a call ends and are
 * reused by the next call to the same host and port, in this batch or a
 * later one; the cache keeps keep_conns of them and closes the oldest.
 * With opts.direct_http1, the calls to plain http:// at a numeric address
 * go over h1client.c instead (its own connections and cache), the others
 * over libcurl after them. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/net/h1client.h"
#include "lib/util/grow.h"
#include "pflex/net/http.h"

#define DEFAULT_PARALLEL 64
#define DEFAULT_MAX_RESPONSE (16u << 20)

struct sink {
    char *buf;
    size_t len, cap, max;
    int over;
};

struct slot {
    CURL *h;
    struct curl_slist *hdr;
    struct sink sink;
    struct pflex_http_call *call;   /* NULL: free */
};

struct pflex_http_client {
    struct pflex_http_client_opts o;
    char *accept;
    char *ca_file;              /* opts.ca_file, copied */
    CURLM *m;
    struct slot *slots;
    struct pflex_h1 *h1;        /* direct_http1: the engine for plain http:// */
    unsigned long requests, connects;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ok;
static void curl_init_once(void)
{
    curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    struct sink *s = ud;
    size_t got = size * n;
    if (s->len + got > s->max) {
        s->over = 1;
        return 0;       /* aborts the transfer */
    }
    if (pflex_grow((void **)&s->buf, &s->cap, s->len + got + 1, 1) < 0)
        return 0;
    memcpy(s->buf + s->len, p, got);
    s->len += got;
    s->buf[s->len] = '\0';
    return got;
}

int pflex_http_client_create(const struct pflex_http_client_opts *o, pflex_http_client_t **out,
                             pflex_error_t *err)
{
    *out = NULL;
    pthread_once(&curl_once, curl_init_once);
    if (!curl_ok)
        return pflex_error_set(err, "libcurl failed to initialise");
    pflex_http_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return pflex_error_set(err, "out of memory");
    if (o)
        c->o = *o;
    if (!c->o.parallel)
        c->o.parallel = DEFAULT_PARALLEL;
    if (!c->o.keep_conns)
        c->o.keep_conns = c->o.parallel;
    if (!(c->o.timeout_s > 0))
        c->o.timeout_s = 10;
    if (!(c->o.connect_timeout_s > 0))
        c->o.connect_timeout_s = c->o.timeout_s;
    if (!c->o.max_response)
        c->o.max_response = DEFAULT_MAX_RESPONSE;
    c->o.accept = NULL;
    if (o && o->accept) {
        size_t n = strlen(o->accept) + 9;
        c->accept = malloc(n);
        if (c->accept)
            snprintf(c->accept, n, "Accept: %s", o->accept);
    }
    c->o.ca_file = NULL;
    if (o && o->ca_file)
        c->ca_file = strdup(o->ca_file);
    c->m = curl_multi_init();
    c->slots = calloc(c->o.parallel, sizeof *c->slots);
    if (!c->m || !c->slots || (o && o->accept && !c->accept) || (o && o->ca_file && !c->ca_file)) {
        pflex_http_client_destroy(c);
        return pflex_error_set(err, "libcurl: cannot create a client (out of memory)");
    }
    curl_multi_setopt(c->m, CURLMOPT_MAXCONNECTS, (long)c->o.keep_conns);
    /* a proxy libcurl would take (http_proxy, all_proxy): libcurl alone */
    if (c->o.direct_http1 && !getenv("http_proxy") && !getenv("all_proxy") && !getenv("ALL_PROXY")
        && !(c->h1 = pflex_h1_create(&c->o, c->accept))) {
        pflex_http_client_destroy(c);
        return pflex_error_set(err, "cannot create a client (out of memory, or no epoll)");
    }
    *out = c;
    return 0;
}

void pflex_http_client_destroy(pflex_http_client_t *c)
{
    if (!c)
        return;
    for (unsigned i = 0; c->slots && i < c->o.parallel; i++)
        if (c->slots[i].h)
            curl_easy_cleanup(c->slots[i].h);
    if (c->m)
        curl_multi_cleanup(c->m);
    pflex_h1_destroy(c->h1);
    free(c->slots);
    free(c->accept);
    free(c->ca_file);
    free(c);
}

void pflex_http_client_counts(const pflex_http_client_t *c, unsigned long *requests,
                              unsigned long *connects)
{
    if (requests)
        *requests = c->requests;
    if (connects)
        *connects = c->connects;
}

static void headers_free(struct curl_slist *hdr)
{
    /* the Authorization line holds a secret: wipe it before it goes */
    for (struct curl_slist *l = hdr; l; l = l->next)
        memset(l->data, 0, strlen(l->data));
    curl_slist_free_all(hdr);
}

/* Start call on a free slot: 0, or -1 with the call failed (the slot stays
 * free). */
static int start(pflex_http_client_t *c, struct slot *s, struct pflex_http_call *call)
{
    pflex_h1_call_reset(call);
    if (!s->h)
        s->h = curl_easy_init();
    else
        curl_easy_reset(s->h);
    if (!s->h) {
        pflex_h1_call_fail(call, "cannot start libcurl");
        return -1;
    }
    CURL *h = s->h;
    s->sink = (struct sink){.max = c->o.max_response};
    struct curl_slist *hdr = NULL, *l;
    int oom = 0;
#define ADD(line)                                   \
    do {                                            \
        l = curl_slist_append(hdr, line);           \
        if (l)                                      \
            hdr = l;                                \
        else                                        \
            oom = 1;                                \
    } while (0)
    if (c->accept)
        ADD(c->accept);
    if (call->body) {
        char ct[256];
        snprintf(ct, sizeof ct, "Content-Type: %s", call->content_type ? call->content_type : "application/json");
        ADD(ct);
    }
    if (call->token && *call->token) {
        size_t n = strlen(call->token) + 32;
        char *auth = malloc(n);
        if (auth) {
            snprintf(auth, n, "Authorization: Bearer %s", call->token);
            ADD(auth);
            memset(auth, 0, n);
            free(auth);
        } else
            oom = 1;
    }
#undef ADD
    if (oom) {
        headers_free(hdr);
        pflex_h1_call_fail(call, "out of memory");
        return -1;
    }
    s->hdr = hdr;
    curl_easy_setopt(h, CURLOPT_URL, call->url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(c->o.timeout_s * 1e3));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->o.connect_timeout_s * 1e3));
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->o.max_response);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s->sink);
    curl_easy_setopt(h, CURLOPT_PRIVATE, s);
    if (hdr)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    if (call->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, call->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(call->body));
    }
    const char *method = call->method ? call->method : "GET";
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, call->body ? "POST" : "GET"))
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (curl_multi_add_handle(c->m, h) != CURLM_OK) {
        headers_free(s->hdr);
        s->hdr = NULL;
        pflex_h1_call_fail(call, "libcurl refused the request");
        return -1;
    }
    s->call = call;
    c->requests++;
    return 0;
}

/* A call has ended with rc: fill it in, free its slot. */
static void finish(pflex_http_client_t *c, struct slot *s, CURLcode rc)
{
    struct pflex_http_call *call = s->call;
    long connects = 0;
    if (curl_easy_getinfo(s->h, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0)
        c->connects += (unsigned long)connects;
    if (rc == CURLE_OK) {
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &call->status);
        call->resp = s->sink.buf ? s->sink.buf : strdup("");
        call->resp_len = s->sink.len;
        call->ok = call->resp != NULL;
        if (!call->ok)
            pflex_h1_call_fail(call, "out of memory");
    } else {
        free(s->sink.buf);
        if (s->sink.over || rc == CURLE_FILESIZE_EXCEEDED)
            pflex_h1_call_too_big(call, c->o.max_response);
        else
            pflex_h1_call_fail(call, curl_easy_strerror(rc));
    }
    s->sink = (struct sink){0};
    curl_multi_remove_handle(c->m, s->h);
    headers_free(s->hdr);
    s->hdr = NULL;
    s->call = NULL;
}

/* The first call from i on that is libcurl's (not mine), or n. */
static size_t curl_next(const unsigned char *mine, size_t i, size_t n)
{
    while (mine && i < n && mine[i])
        i++;
    return i;
}

/* The calls without mine[i] (every one when mine is NULL) over libcurl. */
static long curl_run(pflex_http_client_t *c, struct pflex_http_call *calls, const unsigned char *mine,
                     size_t n, pflex_http_done_fn done, void *ud, pflex_error_t *err)
{
    size_t next = curl_next(mine, 0, n);
    unsigned active = 0, free_from = 0;
    long failed = 0;
    while (next < n || active) {
        /* fill the free slots */
        for (unsigned i = free_from; i < c->o.parallel && next < n; i++) {
            if (c->slots[i].call)
                continue;
            struct pflex_http_call *call = &calls[next];
            next = curl_next(mine, next + 1, n);
            if (start(c, &c->slots[i], call) < 0) {
                failed++;
                if (done)
                    done(ud, call);
                i--;        /* the slot is still free */
                continue;
            }
            active++;
        }
        free_from = c->o.parallel;
        int running = 0;
        CURLMcode mc = curl_multi_perform(c->m, &running);
        if (mc != CURLM_OK) {
            pflex_error_set(err, "libcurl: %s", curl_multi_strerror(mc));
            for (unsigned i = 0; i < c->o.parallel; i++)
                if (c->slots[i].call) {
                    struct pflex_http_call *call = c->slots[i].call;
                    finish(c, &c->slots[i], CURLE_ABORTED_BY_CALLBACK);
                    pflex_h1_call_fail(call, err->text);
                    if (done)
                        done(ud, call);
                }
            for (; next < n; next = curl_next(mine, next + 1, n)) {
                pflex_h1_call_fail(&calls[next], err->text);
                calls[next].resp = NULL;
                if (done)
                    done(ud, &calls[next]);
            }
            return -1;
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(c->m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            char *priv = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
            struct slot *s = (struct slot *)priv;
            CURLcode rc = msg->data.result;
            struct pflex_http_call *call = s->call;
            unsigned i = (unsigned)(s - c->slots);
            finish(c, s, rc);
            active--;
            if (i < free_from)
                free_from = i;
            if (!call->ok)
                failed++;
            if (done)
                done(ud, call);
        }
        /* wait for traffic unless there is a free slot to fill */
        if (active && !(next < n && active < c->o.parallel))
            curl_multi_poll(c->m, NULL, 0, 100, NULL);
    }
    return failed;
}

long pflex_http_client_run(pflex_http_client_t *c, struct pflex_http_call *calls, size_t n,
                           pflex_http_done_fn done, void *ud, pflex_error_t *err)
{
    if (!c->h1 || !n)
        return curl_run(c, calls, NULL, n, done, ud, err);
    unsigned char *mine = malloc(n);
    if (!mine)
        return curl_run(c, calls, NULL, n, done, ud, err);
    size_t nmine = 0;
    for (size_t i = 0; i < n; i++)
        nmine += mine[i] = (unsigned char)pflex_h1_takes(&calls[i]);
    long failed = 0;
    if (nmine)
        failed = pflex_h1_run(c->h1, calls, mine, n, done, ud, &c->requests, &c->connects);
    if (nmine < n) {
        long f = curl_run(c, calls, mine, n, done, ud, err);
        failed = f < 0 ? -1 : failed + f;
    }
    free(mine);
    return failed;
}

int pflex_http_request(const char *method, const char *url, const char *token, const char *body,
                       double timeout_s, long *status, char **resp, pflex_error_t *err)
{
    *status = 0;
    *resp = NULL;
    struct pflex_http_client_opts o = {.parallel = 1, .timeout_s = timeout_s > 0 ? timeout_s : 10};
    pflex_http_client_t *c;
    if (pflex_http_client_create(&o, &c, err) < 0)
        return pflex_error_set(err, "%s: cannot start libcurl", url);
    struct pflex_http_call call = {.method = method, .url = url, .body = body, .token = token};
    long failed = pflex_http_client_run(c, &call, 1, NULL, NULL, err);
    pflex_http_client_destroy(c);
    if (failed)
        return pflex_error_set(err, "%s %s: %s", method, url, call.error);
    *status = call.status;
    *resp = call.resp;
    return 0;
}
