/* pflex/hw/hwsweep.h — a power-cap sweep on GPUs behind struct pflex_gpu_ops
 * (the nvml backend on real GPUs, the fake NVML library of the tests, the
 * sim backend): for each cap, set it on every GPU a limit guard holds, let
 * the job settle, then measure power and telemetry over a window while
 * reading the job's token counter file (pflex/io/tokfile.h).
 *
 * The caller owns the backend and the guard (pflex/hw/guard.h), and restores
 * and closes them when the sweep ends, however it ends: pflex_hwsweep_run
 * sets limits only through the guard and never restores them itself.  The
 * library installs no signal handler: a caller that must restore on a
 * signal catches pflex_guard_fatal_signals() with a handler that sets the
 * flag it passes as opts->stop, and the sweep ends within 50 ms of it.
 *
 * Units: W, s; throughput in the job's unit per second; telemetry in the
 * units of the sweep CSV (pflex/io/sweep.h, docs/contract.md §3).
 */
#ifndef PFLEX_HWSWEEP_H
#define PFLEX_HWSWEEP_H

#include <signal.h>
#include "pflex/hw/gpu.h"
#include "pflex/hw/guard.h"
#include "pflex/io/sweep.h"

/* The most caps one sweep takes. */
#define PFLEX_HWSWEEP_MAX_CAPS 256
/* How many caps pflex_hwsweep_default_caps chooses at most. */
#define PFLEX_HWSWEEP_DEFAULT_CAPS 6

/* Read the limits of GPUs idx[0..n) of g into lim[0..n) (the caller's
 * array) and the range every one of them allows: *lo_w the highest of
 * their lowest limits, *hi_w the lowest of their highest (*lo_w > *hi_w
 * when they have none in common).  0, or -1 with err. */
int pflex_hwsweep_range(pflex_gpu_t *g, const unsigned *idx, unsigned n,
                        struct pflex_gpu_limits *lim, double *lo_w, double *hi_w,
                        pflex_error_t *err);

/* The default caps: PFLEX_HWSWEEP_DEFAULT_CAPS whole watts from hi_w down
 * to lo_w, evenly spaced, repeats dropped, into caps.  Returns how many. */
unsigned pflex_hwsweep_default_caps(double lo_w, double hi_w, double *caps);

/* Check that every cap of caps[0..ncaps) lies within the limits lim[0..n)
 * of GPUs idx[0..n) of g: 0, or -1 with err naming the first cap outside
 * a GPU's range, the GPU and the range. */
int pflex_hwsweep_check_caps(pflex_gpu_t *g, const unsigned *idx, unsigned n,
                             const struct pflex_gpu_limits *lim, const double *caps,
                             unsigned ncaps, pflex_error_t *err);

/* The limit a guard opened with keep_found will restore for a GPU whose
 * limit is now_w and default default_w: the default, unless the limit now
 * is the default (within 0.5 W), keep_found is set or the default is
 * unknown (NaN), W. */
double pflex_hwsweep_restore_w(double now_w, double default_w, int keep_found);

/* What a sweep tells its caller while it runs. */
enum pflex_hwsweep_kind {
    PFLEX_HWSWEEP_WARNING,  /* text: something the operator should know */
    PFLEX_HWSWEEP_CAP_SET,  /* cap_w is set on every GPU; settling starts */
    PFLEX_HWSWEEP_MEASURED, /* the cap's measurement: one sweep CSV row */
};

struct pflex_hwsweep_event {
    enum pflex_hwsweep_kind kind;
    unsigned cap_no;            /* 0-based index of the cap in opts->caps */
    double cap_w;               /* the cap, W */
    const char *text;           /* WARNING: one line, no newline */
    /* MEASURED: */
    double power_w;             /* mean per-GPU board power over the window, W */
    double throughput;          /* the job's counter increase per second; NaN
                                 * without a token file */
    double tm[PFLEX_TM_COUNT];  /* means over readings and GPUs, NaN when none */
};

/* Called for each event; 0 to go on, anything else ends the sweep
 * (pflex_hwsweep_run then returns PFLEX_HWSWEEP_HALTED). */
typedef int (*pflex_hwsweep_cb)(void *arg, const struct pflex_hwsweep_event *ev);

struct pflex_hwsweep_opts {
    const double *caps;         /* caps in the order to sweep them, W */
    unsigned ncaps;
    double settle_s;            /* wait after setting a cap, s */
    double window_s;            /* measurement window per cap, s (> 0) */
    const char *tokens_path;    /* the job's token counter file; NULL: power only */
    volatile sig_atomic_t *stop;    /* nonzero ends the sweep; NULL: never */
    pflex_hwsweep_cb on_event;  /* may be NULL */
    void *arg;                  /* passed to on_event */
};

/* pflex_hwsweep_run's returns besides 0 (every cap measured) and -1 (a
 * failure of the system or the GPUs: err says which cap and why). */
#define PFLEX_HWSWEEP_STOPPED 1     /* *opts->stop was set */
#define PFLEX_HWSWEEP_HALTED 2      /* on_event returned nonzero */
#define PFLEX_HWSWEEP_BAD_INPUT (-2)    /* the token file is malformed or was
                                         * not written during a window: err */

/* Sweep opts->caps on every GPU gd holds (in its order), g being the
 * backend gd was opened on.  The throughput of a cap is the token
 * counter's increase divided by the time between the job's last line
 * before the window and its last line at the window's end.  Power per GPU
 * comes from the energy counter where it works, else the mean of power
 * readings taken every tenth of the window (10 ms to 1 s apart). */
int pflex_hwsweep_run(pflex_gpu_t *g, pflex_guard_t *gd, const struct pflex_hwsweep_opts *opts,
                      pflex_error_t *err);

#endif
