/* pflex/hw/guard.h — the limit guard: one owner of a GPU's power limit at a
 * time, and the original limit always put back.
 *
 * Every pflex command that changes a power limit (sweep --backend nvml,
 * agent, apply --local) goes through a guard:
 *
 *  - a lock per GPU: flock() on STATE_DIR/<key>.lock, where key is the
 *    GPU's UUID (nvml) or "<backend>-<index>"; a second owner is refused
 *    (PFLEX_GUARD_BUSY) with a message naming the holder's pid and command;
 *  - the original limit saved durably (write, fsync, rename, fsync of the
 *    folder) in STATE_DIR/<key>.state before the first change, and removed
 *    once it is restored;
 *  - recovery at open: a state file left by an owner that died (SIGKILL,
 *    crash, power loss of the process) is restored first and reported;
 *  - the default limit compared with the limit found at open: a limit that
 *    differs is named as a cap someone left behind and, unless the caller
 *    asks to keep it, the default is what is restored (a restore is due at
 *    once: the GPU counts as changed, its state file is written);
 *  - a state file that is empty or unreadable is reported and the board's
 *    default limit restored; the file is renamed <key>.state.corrupt;
 *  - every set and every restore read back: one the limit does not show
 *    (NVML answered success, the limit stayed) is a failure, never a
 *    success; limits are compared in mW, as NVML takes them;
 *  - restores retried with exponential backoff, and an original outside
 *    the device's constraints now restored to the nearest settable value
 *    (and reported).
 *
 * The library installs no signal handler and never prints: what it wants
 * the operator to know (recoveries, left-over caps, clamped restores) is
 * kept as notes, read with pflex_guard_note().  A command that must restore
 * on a signal catches pflex_guard_fatal_signals() with a handler that sets
 * a flag and restores from its main flow.
 */
#ifndef PFLEX_GUARD_H
#define PFLEX_GUARD_H

#include <signal.h>
#include "pflex/hw/gpu.h"

/* Where state and lock files live unless the caller says otherwise. */
#define PFLEX_GUARD_DIR_DEFAULT "/run/pflex"

/* pflex_guard_open's return when another process holds a GPU's lock. */
#define PFLEX_GUARD_BUSY (-2)

typedef struct pflex_guard pflex_guard_t;

struct pflex_guard_opts {
    const char *state_dir;  /* NULL: PFLEX_GUARD_DIR_DEFAULT; created when absent */
    const char *owner;      /* who holds the lock ("sweep", "agent"), in messages */
    int keep_found;         /* 1: a limit found at open that is not the default is
                             * the original (a site's own setting); 0: the default */
    unsigned tries;         /* attempts per restore (0: 6) */
    double backoff_s;       /* wait after the first failed attempt, doubling up to
                             * 2 s (0: 0.05 s) */
};

/* What the guard knows of one GPU; W, NaN where unknown. */
struct pflex_guard_gpu {
    unsigned index;         /* the backend's GPU index */
    char key[100];          /* UUID or "<backend>-<index>": names the lock and state files */
    char name[96];          /* model name */
    double found_w;         /* the limit found at open (after any recovery) */
    double default_w;       /* the board's default limit */
    double original_w;      /* what restore returns to */
    int changed;            /* a limit set through the guard is in force */
    int recovered;          /* open restored a state file a dead owner left (or, when
                             * that file was unreadable, the default limit) */
    int left_over;          /* the limit found was a cap left behind: original_w is the
                             * default, and a restore is due (changed is 1) */
    int held;               /* the limit is held at hold_w until hold_until (unix s): a
                             * hold a stopped owner left (found at open, still in force)
                             * or one pflex_guard_hold made; a restore is due at its end */
    double hold_w, hold_until;
};

/* Take the locks of GPUs idx[0..n) of g, recover their state files, read
 * their limits.  Returns 0 and *out; PFLEX_GUARD_BUSY when a GPU belongs to
 * another live process (nothing changed); -1 on any other failure (locks
 * taken so far are released; a failed recovery keeps its state file).
 * g must outlive the guard.  On an nvml backend the guard takes over the
 * backend's own restore (pflex_nvml_keep_limits). */
int pflex_guard_open(pflex_gpu_t *g, const unsigned *idx, unsigned n,
                     const struct pflex_guard_opts *opts, pflex_guard_t **out,
                     pflex_error_t *err);

/* Set GPU gpu (a backend index the guard holds) to cap_w: the original is
 * saved durably first, the cap is checked against the device's range
 * (refused outside it), set, and read back as the enforced limit
 * (*enforced_w, may be NULL). */
int pflex_guard_set(pflex_guard_t *gd, unsigned gpu, double cap_w, double *enforced_w,
                    pflex_error_t *err);

/* Put GPU gpu back to its original limit (nothing to do when unchanged),
 * retrying with backoff; an original outside today's range goes to the
 * nearest settable value, with a note.  On success the state file is
 * removed; on failure it stays for the next open to recover. */
int pflex_guard_restore(pflex_guard_t *gd, unsigned gpu, pflex_error_t *err);

/* Leave GPU gpu at the limit set now (hold_w, W) until hold_until (unix
 * s), past this guard's close: written to its state file with the
 * original, so that close skips it, the next open finds the hold (held)
 * and does not restore it before its end, and any later open restores it
 * once it has ended.  Only a changed GPU can be held; a later
 * pflex_guard_set ends the hold (the setter restores it, as any change). */
int pflex_guard_hold(pflex_guard_t *gd, unsigned gpu, double hold_w, double hold_until,
                     pflex_error_t *err);
/* A hold found at open is over for the caller (it took the GPU over as
 * its own change): cleared in memory and in the state file. */
int pflex_guard_unhold(pflex_guard_t *gd, unsigned gpu, pflex_error_t *err);

/* Restore every GPU (but those held); tries them all.  0, or -1 naming the first failure
 * and how many failed. */
int pflex_guard_restore_all(pflex_guard_t *gd, pflex_error_t *err);

/* GPUs held, and what is known of each (i in 0..count-1, in idx order). */
unsigned pflex_guard_count(const pflex_guard_t *gd);
const struct pflex_guard_gpu *pflex_guard_gpu_at(const pflex_guard_t *gd, unsigned i);
/* The same by backend index; NULL when the guard does not hold it. */
const struct pflex_guard_gpu *pflex_guard_gpu_find(const pflex_guard_t *gd, unsigned gpu);

/* Notes gathered since the last pflex_guard_notes_clear (oldest first). */
unsigned pflex_guard_note_count(const pflex_guard_t *gd);
const char *pflex_guard_note(const pflex_guard_t *gd, unsigned i);
void pflex_guard_notes_clear(pflex_guard_t *gd);

/* Restore what is changed and not held (best effort: call restore_all
 * first to see errors), release the locks, free.  NULL is fine. */
void pflex_guard_close(pflex_guard_t *gd);

/* The signals whose default action kills a process and that a guard user
 * must catch so as to restore: SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM,
 * SIGTERM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF.
 * Fills set; returns the count and, when sigs is not NULL, the numbers in
 * sigs[0..count) (at most 16). */
int pflex_guard_fatal_signals(sigset_t *set, int *sigs);

#endif
