/* client.c — one HTTP request with libcurl (pflex/http.h). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pflex/http.h"

#define MAX_RESPONSE (16u << 20)

struct sink {
    char *buf;
    size_t len, cap;
    int over;
};

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    struct sink *s = ud;
    size_t got = size * n;
    if (s->len + got > MAX_RESPONSE) {
        s->over = 1;
        return 0;
    }
    if (s->len + got + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + got + 1)
            cap *= 2;
        char *b = realloc(s->buf, cap);
        if (!b)
            return 0;
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, got);
    s->len += got;
    s->buf[s->len] = '\0';
    return got;
}

int pflex_http_request(const char *method, const char *url, const char *token, const char *body,
                       double timeout_s, long *status, char **resp, pflex_error_t *err)
{
    *status = 0;
    *resp = NULL;
    CURL *c = curl_easy_init();
    if (!c)
        return pflex_error_set(err, "%s: cannot start libcurl", url);
    struct sink s = {0};
    struct curl_slist *hdr = NULL;
    char auth[1100];
    if (token && *token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdr = curl_slist_append(hdr, auth);
    }
    if (body)
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s > 0 ? timeout_s * 1e3 : 10000));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    if (hdr)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode rc = curl_easy_perform(c);
    int fail = 0;
    if (rc != CURLE_OK) {
        pflex_error_set(err, "%s %s: %s", method, url,
                        s.over ? "answer over 16 MiB" : curl_easy_strerror(rc));
        fail = 1;
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    if (fail) {
        free(s.buf);
        return -1;
    }
    *resp = s.buf ? s.buf : strdup("");
    return 0;
}
