/* pflex/io/audit.h — the controller's state and audit log, in SQLite.
 *
 * Everything the controller decides or sees is written down, so that a
 * restart resumes where it stopped and an operator can ask what happened
 * (`pflex controller history`):
 *   targets       every target received (source, name, start, end, value,
 *                 unit, ramp, priority, order), and when it was withdrawn
 *   periods       every plan: limit, worst case, least reachable, feasible,
 *                 floor breaches, holds, site power measured, throughput
 *   caps          every cap the plan set, per GPU, whether it was pushed and
 *                 what the agent read back as enforced
 *   readings      per GPU: power, cap in force, job throughput
 *   observations  per job: (cap, power, throughput), what the learner ate
 *   curves        per job: each learned curve (points as JSON)
 *   notes         anything else worth reading later (a VTN error, a breach)
 * Times are unix seconds.  Writes of one control period go in one
 * transaction (begin/commit), so a crash leaves whole periods only; the
 * database is in WAL mode, synchronous=FULL (a commit that returned is on
 * the disk: it survives a power cut), and waits up to 5 s for a lock.
 *
 * Plain records only: this room knows the storage, not the science.
 */
#ifndef PFLEX_AUDIT_H
#define PFLEX_AUDIT_H

#include <stddef.h>
#include "pflex/util/error.h"

typedef struct pflex_audit pflex_audit_t;

/* Open or create the database (schema version checked; a newer one is
 * refused).  ":memory:" works for tests. */
int pflex_audit_open(const char *path, pflex_audit_t **out, pflex_error_t *err);
void pflex_audit_close(pflex_audit_t *a);

/* Check an existing database (PRAGMA quick_check, which reads every page:
 * seconds a GB).  0 sound; 1 damaged, what is wrong in why (the check's
 * first finding, or SQLite's "malformed"/"not a database"); -1 with err
 * when it cannot be checked (missing, unreadable, locked). */
int pflex_audit_check(const char *path, char *why, size_t len, pflex_error_t *err);
/* Move a damaged database (and its -wal, -shm) aside, to
 * "PATH.damaged-YYYYMMDDTHHMMSSZ" of unix time t (its name in aside):
 * kept for a post-mortem, never deleted.  0 or -1 with err. */
int pflex_audit_set_aside(const char *path, double t, char *aside, size_t len, pflex_error_t *err);

int pflex_audit_begin(pflex_audit_t *a, pflex_error_t *err);
int pflex_audit_commit(pflex_audit_t *a, pflex_error_t *err);
int pflex_audit_rollback(pflex_audit_t *a);

struct pflex_audit_target {
    double t;                   /* when received */
    const char *source;         /* "cli", "schedule", "api", "openadr" */
    const char *name;           /* the source's id, "" when none */
    double start_s, end_s;      /* end INFINITY: none */
    double value;
    int fraction;               /* 1: value is a fraction of baseline; 0: W */
    double ramp_s;
    int priority;
    unsigned long long seq;     /* order received */
};

/* Record a target; the same (source, name, start, end, value, unit) again
 * is not a new one: its row is live again, with this t, ramp, priority and
 * seq.  Returns 0 or -1. */
int pflex_audit_target(pflex_audit_t *a, const struct pflex_audit_target *t, pflex_error_t *err);
/* Mark every live target of a source that is not in keep (names) as
 * withdrawn at t. */
int pflex_audit_targets_withdraw(pflex_audit_t *a, double t, const char *source,
                                 const char *const *keep, size_t nkeep, pflex_error_t *err);

/* In one transaction: record each of live (n of them, all of source) and
 * mark every other live target of source as withdrawn at t; n 0 withdraws
 * them all.  What the controller writes before a change of its targets
 * takes effect (a VTN's new events, the API's withdrawal).  0 or -1 (and
 * nothing written). */
int pflex_audit_targets_sync(pflex_audit_t *a, double t, const char *source,
                             const struct pflex_audit_target *live, size_t n, pflex_error_t *err);
/* One past the largest seq of any target recorded (0: none): where a
 * resumed set's order goes on from.  -1 with err. */
long long pflex_audit_targets_next_seq(pflex_audit_t *a, pflex_error_t *err);

struct pflex_audit_period {
    double t;
    double limit_w, worst_w, least_w;
    double site_power_w;        /* measured this period; NaN: no telemetry */
    double throughput;          /* the plan's estimate */
    int feasible;
    long floor_breaches, held;
};

/* Record a plan; *id gets its period number for the caps. */
int pflex_audit_period(pflex_audit_t *a, const struct pflex_audit_period *p, long long *id,
                       pflex_error_t *err);
int pflex_audit_cap(pflex_audit_t *a, long long period, const char *gpu, const char *job,
                    double cap_w, int pushed, double enforced_w, pflex_error_t *err);
int pflex_audit_reading(pflex_audit_t *a, double t, const char *gpu, const char *job,
                        double power_w, double cap_w, double throughput, pflex_error_t *err);
int pflex_audit_observation(pflex_audit_t *a, double t, const char *job, double cap_w,
                            double power_w, double throughput, pflex_error_t *err);
int pflex_audit_curve(pflex_audit_t *a, double t, const char *job, size_t n, const double *x,
                      const double *loss, const double *sd, const double *cap_w, double p0_w,
                      double t0, pflex_error_t *err);
int pflex_audit_note(pflex_audit_t *a, double t, const char *kind, const char *text,
                     pflex_error_t *err);

/* ---- resume ---- */

/* Live targets (not withdrawn, ending after now), in the order received. */
int pflex_audit_load_targets(pflex_audit_t *a, double now,
                             int (*cb)(void *ud, const struct pflex_audit_target *t), void *ud,
                             pflex_error_t *err);
/* A job's most recent max observations, oldest first. */
int pflex_audit_load_observations(pflex_audit_t *a, const char *job, size_t max,
                                  int (*cb)(void *ud, double t, double cap_w, double power_w,
                                            double throughput),
                                  void *ud, pflex_error_t *err);
/* The caps of the last recorded period, per GPU. */
int pflex_audit_last_caps(pflex_audit_t *a,
                          int (*cb)(void *ud, const char *gpu, const char *job, double cap_w),
                          void *ud, pflex_error_t *err);

/* ---- history ---- */

struct pflex_audit_query {
    double from_s, to_s;        /* time window (to INFINITY: no end) */
    const char *job;            /* NULL: every job */
    const char *what;           /* "targets", "periods", "caps", "readings",
                                 * "observations", "curves", "notes", or NULL: all */
    size_t limit;               /* most rows per table, newest kept; 0: 1000 */
};

/* The rows asked for as one JSON document {"targets": [...], "periods":
 * [...], ...} (malloc'd; free it), oldest first within each table. */
char *pflex_audit_history(pflex_audit_t *a, const struct pflex_audit_query *q, pflex_error_t *err);

#endif
