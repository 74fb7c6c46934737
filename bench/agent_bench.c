/* agent_bench.c — latency and requests per second of a running pflex agent
 * on loopback: GET /metrics and PUT /v1/caps, over one keep-alive
 * connection and with a new connection per request.  bench/run.sh starts
 * the agent (sim backend, rate limits off).  Prints medians and p99;
 * asserts nothing.
 *
 *   agent_bench URL TOKEN_FILE N
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t sink(char *p, size_t size, size_t n, void *ud)
{
    *(size_t *)ud += size * n;
    return size * n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* n requests; reuse: one handle (keep-alive) or a fresh one each time. */
static int run(const char *label, const char *url, const char *method, const char *body,
               const char *auth, int n, int reuse)
{
    double *lat = malloc(n * sizeof *lat);
    CURL *c = NULL;
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, auth);
    h = curl_slist_append(h, "Content-Type: application/json");
    size_t bytes = 0;
    long code = 0;
    int bad = 0;
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        if (!c || !reuse) {
            if (c)
                curl_easy_cleanup(c);
            c = curl_easy_init();
            curl_easy_setopt(c, CURLOPT_URL, url);
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
            curl_easy_setopt(c, CURLOPT_WRITEDATA, &bytes);
            curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
            if (body)
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        }
        size_t before = bytes;
        double t = now_s();
        if (curl_easy_perform(c) != CURLE_OK)
            bad++;
        lat[i] = now_s() - t;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (code != 200)
            bad++;
        if (i == n - 1)
            bytes = bytes - before;
    }
    double wall = now_s() - t0;
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    qsort(lat, n, sizeof *lat, cmp);
    printf("  %-34s %s: median %.3f ms, p99 %.3f ms, %.0f req/s (%d requests, %zu-byte answer%s)\n",
           label, reuse ? "keep-alive   " : "new connection", lat[n / 2] * 1e3,
           lat[(int)(n * 0.99)] * 1e3, n / wall, n, bytes, bad ? ", SOME FAILED" : "");
    free(lat);
    return bad != 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: agent_bench URL TOKEN_FILE N\n");
        return 2;
    }
    char tok[512] = "", auth[600], url[1024];
    FILE *f = fopen(argv[2], "r");
    if (!f || !fgets(tok, sizeof tok, f)) {
        fprintf(stderr, "agent_bench: cannot read %s\n", argv[2]);
        return 2;
    }
    fclose(f);
    tok[strcspn(tok, "\r\n")] = '\0';
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
    int n = atoi(argv[3]);
    if (n < 10)
        n = 10;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int bad = 0;
    snprintf(url, sizeof url, "%s/metrics", argv[1]);
    bad |= run("GET /metrics", url, "GET", NULL, auth, n, 1);
    bad |= run("GET /metrics", url, "GET", NULL, auth, n, 0);
    snprintf(url, sizeof url, "%s/v1/status", argv[1]);
    bad |= run("GET /v1/status", url, "GET", NULL, auth, n, 1);
    snprintf(url, sizeof url, "%s/v1/caps", argv[1]);
    const char *one = "{\"caps\": [{\"gpu\": 0, \"cap_w\": 450}], \"lease_s\": 60}";
    const char *all = "{\"caps\": [{\"gpu\": 0, \"cap_w\": 450}, {\"gpu\": 1, \"cap_w\": 450}, "
                      "{\"gpu\": 2, \"cap_w\": 450}, {\"gpu\": 3, \"cap_w\": 450}, "
                      "{\"gpu\": 4, \"cap_w\": 450}, {\"gpu\": 5, \"cap_w\": 450}, "
                      "{\"gpu\": 6, \"cap_w\": 450}, {\"gpu\": 7, \"cap_w\": 450}], "
                      "\"lease_s\": 60}";
    bad |= run("PUT /v1/caps (1 GPU)", url, "PUT", one, auth, n, 1);
    bad |= run("PUT /v1/caps (1 GPU)", url, "PUT", one, auth, n, 0);
    bad |= run("PUT /v1/caps (8 GPUs)", url, "PUT", all, auth, n, 1);
    curl_global_cleanup();
    return bad;
}
