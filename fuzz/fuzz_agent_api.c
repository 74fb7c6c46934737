/* fuzz_agent_api.c — libFuzzer target for the agent's HTTP API: the input
 * is one request to a simulated 8-GPU agent (a route chosen by the first
 * byte, the rest as the body), authenticated, handled as the server would
 * hand it over.  Whatever arrives, the agent must answer with a status and
 * a JSON or text body, never crash, and never leave a cap outside a GPU's
 * range.  The daemon's sources are compiled in here (fuzz/run.sh links
 * libpflex's only). */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/agent/api.c"
#include "../src/agent/node.c"
#include "../src/agent/simnode.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct agent agent;
static int ready;
static char state[64];

/* At exit: restore, then remove the state folder's lock files. */
static void cleanup(void)
{
    agent_close(&agent, NULL);
    DIR *dir = opendir(state);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", state, e->d_name);
        if (e->d_name[0] != '.')
            unlink(path);
    }
    if (dir)
        closedir(dir);
    rmdir(state);
}

static void start(void)
{
    char dir[] = "/tmp/pflex-fuzz-agent-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    snprintf(state, sizeof state, "%s", dir);
    struct agent_config cfg = {.backend = "sim", .gpus = 8, .seed = 1, .state_dir = state,
                               .max_lease_s = 3600, .interval_s = 1, .tp_window_s = 30,
                               .sim_fail_gpu = -1};
    pflex_error_t err;
    agent_log_off = 1;
    if (agent_open(&agent, &cfg, &err)) {
        fprintf(stderr, "fuzz_agent_api: %s\n", err.text);
        abort();
    }
    snprintf(agent.token, sizeof agent.token, "fuzz-token-0123456789");
    agent.have_token = 1;
    atexit(cleanup);
    ready = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct { const char *method, *path; } routes[] = {
        {"PUT", "/v1/caps"}, {"DELETE", "/v1/caps"}, {"PUT", "/v1/jobs/fuzz-job"},
        {"POST", "/v1/jobs/fuzz-job/progress"}, {"POST", "/v1/jobs/llama-8b-pretrain-h200/progress"},
        {"GET", "/metrics"}, {"GET", "/v1/status"}, {"DELETE", "/v1/jobs/fuzz-job"},
    };
    if (!ready)
        start();
    if (size == 0)
        return 0;
    unsigned r = data[0] % (sizeof routes / sizeof *routes);
    char *body = malloc(size);
    if (!body)
        return 0;
    memcpy(body, data + 1, size - 1);
    body[size - 1] = '\0';
    static const char *const headers[] = {"Authorization", "Bearer fuzz-token-0123456789", NULL};
    static const char *const query[] = {"gpu", "3", NULL};
    struct pflex_http_request req = {
        .method = routes[r].method, .path = routes[r].path, .body = body,
        .body_len = size - 1, .peer = "127.0.0.1", .headers = headers,
        .query = data[0] & 0x80 ? query : NULL,
    };
    struct pflex_http_response resp = {0};
    agent_api(&agent, &req, &resp);
    if (resp.status < 200 || resp.status > 599 || (!resp.body && !resp.shared))
        abort();
    pflex_http_response_free(&resp);
    free(body);
    for (unsigned i = 0; i < agent.n; i++) {
        struct agent_gpu *d = &agent.gpu[i];
        if (d->leased && (d->lease_cap_w < d->lim.min_w || d->lease_cap_w > d->lim.max_w))
            abort();
    }
    return 0;
}
