/* agent.h — pflex agent: the per-node daemon that owns the GPUs' power
 * limits (src/cli/agent.c parses the command line and runs the loop).
 *
 *   node.c     the GPUs: guards, samples, leases, jobs and their throughput
 *   api.c      the HTTP API: auth, /metrics, /v1/status, /v1/caps, /v1/jobs
 *   simnode.c  the sim backend: N simulated GPUs running simulated jobs
 *
 * The driver thread ticks the node (samples, lease expiry, sim progress:
 * every NVML call but a request's own); the main loop enforces the HTTP
 * server's deadlines and feeds the watchdog; the server's thread pool (or,
 * with --threads 1, the main loop itself) runs the handler.  One lock,
 * lock, covers the node: the tick, and every request but the common
 * reads; requests take it with a deadline, so none waits on a hung driver.
 * /metrics and /v1/status are rendered once per change of the node (a
 * sample, an expiry, a write: gen counts them) into shared bodies that
 * every read until the next change is answered with, without a copy.
 */
#ifndef PFLEX_AGENT_H
#define PFLEX_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "pflex/hw/gpu.h"
#include "pflex/hw/guard.h"
#include "pflex/net/http.h"

#define AGENT_MAX_GPUS 64
#define AGENT_MAX_JOBS 256
#define AGENT_TP_POINTS 64
#define AGENT_NAME_MAX 64

/* ---- the sim backend ------------------------------------------------- */

struct simnode;

/* n GPUs running copies of job (a preset or a job file; NULL: the default
 * for n); the job's GPU count must divide n. */
int simnode_create(unsigned n, const char *job, uint64_t seed, struct simnode **out,
                   pflex_error_t *err);
void simnode_destroy(struct simnode *s);
/* All n GPUs as one gpu_ops backend. */
void simnode_gpu(struct simnode *s, pflex_gpu_t *out);
unsigned simnode_job_count(const struct simnode *s);
const char *simnode_job_name(const struct simnode *s, unsigned k);
void simnode_job_gpus(const struct simnode *s, unsigned k, unsigned *first, unsigned *count);
/* Tokens/s of copy k at the caps in force (a noisy measurement). */
int simnode_job_throughput(struct simnode *s, unsigned k, double *tokens_s, pflex_error_t *err);
/* GPU i is lost from now on: every operation on it fails. */
void simnode_fail(struct simnode *s, unsigned i);
/* GPU i busy only while the process whose PID DIR/gpu<i> holds runs (not
 * stopped, not gone); idle power otherwise.  dir NULL: always busy.  The
 * node keeps a copy. */
int simnode_set_load_dir(struct simnode *s, const char *dir, pflex_error_t *err);
int simnode_gpu_busy(const struct simnode *s, unsigned i);

/* ---- the node -------------------------------------------------------- */

struct agent_gpu {
    unsigned index;
    char uuid[100], name[96];
    int ok;                     /* 0: failing; error says why */
    char error[256];
    pflex_guard_t *guard;       /* NULL when the GPU failed before its guard opened */
    struct pflex_gpu_limits lim;
    double limit_w, enforced_w, power_w, energy_j;
    double tm[PFLEX_TM_COUNT];
    /* The lease on the cap in force; none: the original limit. */
    int leased;
    double lease_cap_w, lease_enforced_w, lease_until, lease_s;
    /* The lease's fallback: the cap held from the lease's end until
     * fb_until (unix s), during a grid event; NaN: none, the lease's end
     * restores.  on_fallback: the lease in force is that fallback, whose
     * end restores. */
    double fb_w, fb_until;
    int on_fallback;
    double retry_s;             /* wait before retrying a failed lease restore */
    char lease_job[AGENT_NAME_MAX];
    unsigned long errors, sets, expiries, drifts, fallbacks;
};

struct agent_job {
    char name[AGENT_NAME_MAX];
    unsigned gpu[AGENT_MAX_GPUS];
    unsigned ngpus;
    int sim;                    /* driven by the sim backend */
    double tokens_total;
    unsigned long reports;
    /* (monotonic time, tokens_total), oldest first */
    double pt_t[AGENT_TP_POINTS], pt_n[AGENT_TP_POINTS];
    unsigned npt;
};

struct agent_config {
    const char *backend;        /* "sim" or "nvml" */
    unsigned gpus;              /* sim: how many */
    const char *sim_job;        /* sim: preset or file */
    const char *hostname;       /* the node's name in /v1/status and /metrics; NULL: gethostname */
    uint64_t seed;
    const char *nvml_lib;
    const char *state_dir;
    int keep_found;
    const char *token_file;     /* NULL: writes refused */
    int auth_reads;             /* reads need the token too */
    const char *job_map;        /* job map file or NULL */
    double max_lease_s;
    double interval_s;          /* sampling period */
    double tp_window_s;         /* throughput over this window */
    int snake_labels;           /* model_name, not dcgm-exporter's modelName */
    int restore_only;           /* open for --restore-only: holds found are left as they are */
    int sim_fail_gpu;           /* -1: none */
    double sim_fail_after_s;
    const char *sim_load_dir;   /* sim: GPUs busy only while a job process drives them */
};

struct agent {
    struct agent_config cfg;
    char hostname[128];
    char token[512];
    int have_token;
    pflex_gpu_t g;
    int g_open;
    struct simnode *sim;
    unsigned n;
    struct agent_gpu *gpu;
    struct agent_job job[AGENT_MAX_JOBS];
    unsigned njobs;
    double started, last_sample, last_sim;
    unsigned long auth_failures, bad_requests, lease_expired;
    unsigned long long fence;   /* the highest fencing token a push carried (0: none):
                                 * a push with a lower one is a deposed leader's */
    unsigned long fenced;       /* pushes refused for a lower token */
    pflex_http_server_t *http;  /* for the request counts in /metrics */
    pthread_mutex_t lock;       /* all of the above, while serving */
    int lock_ready;
    atomic_ulong gen;           /* changes of the node; bumped under lock */
    double read_at;             /* unix s of the last sample of every GPU (0: none yet) */
    /* The driver thread: ticks the node (every NVML call of the loop) so
     * that neither the main loop nor a request waits on the driver. */
    pthread_t driver;
    int driver_on;
    atomic_int driver_stop, reload;
    atomic_llong tick_began_ms; /* monotonic ms the current tick began; 0: idle */
    pthread_mutex_t cache_lock; /* the two below */
    pflex_http_body_t *cache[2];    /* /metrics, /v1/status as of cache_gen */
    unsigned long cache_gen[2];
};

/* Timestamped line on stderr; a JSON object per line when agent_log_json;
 * nothing when agent_log_off (the fuzzer). */
extern int agent_log_json, agent_log_off;
void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double agent_mono_s(void);

/* Open the backend and a guard per GPU; PFLEX_GUARD_BUSY when another
 * process owns a GPU, -1 on other failures (a GPU that fails alone is
 * reported and the others serve). */
/* agent_open's return for what the operator gave wrong (the token file,
 * the backend): the command exits 2 on it, 1 on the others. */
#define AGENT_BAD_INPUT (-3)     /* not PFLEX_GUARD_BUSY */
int agent_open(struct agent *a, const struct agent_config *cfg, pflex_error_t *err);
/* Periodic work: samples, lease expiry, sim jobs, injected failures
 * (under a->lock while serving). */
void agent_tick(struct agent *a);
/* The node changed (under a->lock): the cached bodies are stale. */
void agent_changed(struct agent *a);
/* What closing found, each GPU counted once. */
struct agent_close_report {
    unsigned restored;      /* at its original limit, read back */
    unsigned failed;        /* a restore was due and did not take (its original stays saved) */
    unsigned unverified;    /* no restore was due, but its limit could not be read back */
    unsigned untouched;     /* never under the agent's control (failed before its guard) */
    unsigned held;          /* left held at an event's fallback (hold_first..hold_last) */
    double hold_first, hold_last;   /* unix s: the earliest and latest hold's end */
};
/* The driver thread: agent_tick ten times a second under lock, and a
 * SIGHUP's reload (reload set) there; stopped (joined) before closing. */
int agent_driver_start(struct agent *a, pflex_error_t *err);
void agent_driver_stop(struct agent *a);
/* Seconds the driver thread's tick has been running (waiting for the
 * lock or in the driver); 0 when it is idle. */
double agent_driver_busy_s(struct agent *a);
/* Past this, the driver is taken as stuck: requests wait no more for it. */
#define AGENT_DRIVER_STUCK_S 1.0
/* Take a->lock within wait_s (at once when the driver is stuck); 0 when
 * taken, -1 when not. */
int agent_lock_within(struct agent *a, double wait_s);
/* Render /metrics and /v1/status now (under a->lock), so that a body to
 * serve exists before the driver can first get stuck. */
void agent_render_all(struct agent *a);

/* Restore every GPU (leases end), read each limit back, then close;
 * rep (may be NULL) says how that went.  With hold_events (a stop of the
 * nvml backend), a GPU under an event's lease (a fallback whose end is
 * ahead) is not restored but held, through its state file, at the lower
 * of its cap and its fallback until the fallback's end; a hold found at
 * open (--restore-only) stays too. */
void agent_close(struct agent *a, struct agent_close_report *rep);
void agent_close_holding(struct agent *a, int hold_events, struct agent_close_report *rep);
/* Read the token file (mode 0600 checked) and the job map file again. */
int agent_load_token(struct agent *a, pflex_error_t *err);
int agent_load_job_map(struct agent *a, pflex_error_t *err);

/* Node operations the API calls. */
struct agent_gpu *agent_gpu_find(struct agent *a, const json_t *ref, pflex_error_t *err);
struct agent_job *agent_job_find(struct agent *a, const char *name);
int agent_job_set(struct agent *a, const char *name, const json_t *gpus, pflex_error_t *err);
int agent_job_progress(struct agent *a, struct agent_job *j, double tokens_total);
double agent_job_throughput(const struct agent *a, const struct agent_job *j);
int agent_gpu_cap(struct agent *a, struct agent_gpu *d, double cap_w, double lease_s,
                  const char *job, pflex_error_t *err);
/* The fallback of the lease just set (agent_gpu_cap clears it): fb_w held
 * from the lease's end until fb_until (unix s), at most --max-lease. */
void agent_gpu_fallback(struct agent_gpu *d, double fb_w, double fb_until);
int agent_gpu_restore(struct agent *a, struct agent_gpu *d, const char *why, pflex_error_t *err);
void agent_gpu_failed(struct agent *a, struct agent_gpu *d, const char *what);

/* The HTTP handler (ud: struct agent *); safe to call from several threads. */
void agent_api(void *ud, const struct pflex_http_request *req, struct pflex_http_response *resp);
/* /metrics text, malloc'd; NULL when out of memory. */
char *agent_metrics(struct agent *a, size_t *len);
json_t *agent_status(struct agent *a);

#endif
