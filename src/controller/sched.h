/* sched.h — the scheduler lever: when a target is deeper than caps can
 * reach, the controller pauses (suspends) jobs whose policy allows it
 * through the batch scheduler (Slurm's `scontrol suspend|resume`), within
 * each job's contract, and resumes them on time (docs/slurm-levers.md).
 *
 * Three parts: the rule (which jobs to pause; pure, replaceable by a
 * planner), the state (what is paused and until when, in the controller's
 * SQLite database, written before every action so that a restart, or
 * `pflex controller release` with no controller at all, can resume them),
 * and the actions (the scheduler's commands, each with a timeout; one that
 * fails leaves the job to caps).  Private to the controller. */
#ifndef PFLEX_CONTROLLER_SCHED_H
#define PFLEX_CONTROLLER_SCHED_H

#include <stddef.h>
#include <stdio.h>
#include "pflex/util/error.h"

/* ---- the rule ---------------------------------------------------------- */

/* A job that may be paused now. */
struct ctl_pause_cand {
    const char *job;            /* borrowed */
    double freed_w;             /* what its pause frees in the worst case: its GPUs
                                 * at their least cap minus their idle draw, W (> 0) */
    double lost;                /* progress it loses per second paused, the
                                 * objective's unit (>= 0) */
    double allowed_s;           /* how long its contract lets it stay paused from now */
};

/* The jobs to pause to free deficit_w: of the candidates whose contract
 * allows at least min_s, the least progress lost per watt freed first
 * (ties: the more watts, then the name), until what they free reaches
 * deficit_w.  pick[] (room for n) gets their indices in that order;
 * returns how many, *freed_w what they free (short of deficit_w when all
 * of them cannot).  deficit_w <= 0: none. */
size_t ctl_pause_pick(const struct ctl_pause_cand *cand, size_t n, double deficit_w, double min_s,
                      size_t *pick, double *freed_w);

/* How long a job may stay paused from now: its max_pause_s, what is left
 * of its loss budget (budget x the event's length, minus paused_s already
 * spent in this event), and the event's end; an event with no end counts
 * max_pause alone.  <= 0: not at all. */
double ctl_pause_allowed_s(double max_pause_s, double loss_budget, double paused_s, double now,
                           double event_start, double event_end);

/* ---- the state --------------------------------------------------------- */

/* One job the controller paused (state "suspended") or paused earlier in
 * this event and resumed (state "resumed": what it spent of its budget). */
struct ctl_pause_rec {
    char job[64];
    int suspended;              /* 1: suspended now (as far as the state knows) */
    double since, until;        /* unix s: paused at, and to be resumed by */
    double paused_s;            /* seconds paused in this event, earlier pauses */
    double event_start, event_end;  /* the event it was paused for (end INFINITY: none) */
};

typedef struct ctl_pause_db ctl_pause_db_t;

/* The table `sched_pause` in the database at path (created if missing;
 * the file too when create). */
int ctl_pause_db_open(const char *path, int create, ctl_pause_db_t **out, pflex_error_t *err);
void ctl_pause_db_close(ctl_pause_db_t *db);
/* Every record (malloc'd array, *n of them; the caller frees). */
int ctl_pause_db_load(ctl_pause_db_t *db, struct ctl_pause_rec **out, size_t *n, pflex_error_t *err);
/* Write (insert or replace) one record, durably, before acting on it. */
int ctl_pause_db_put(ctl_pause_db_t *db, const struct ctl_pause_rec *r, pflex_error_t *err);
/* Forget a job's record. */
int ctl_pause_db_del(ctl_pause_db_t *db, const char *job, pflex_error_t *err);
/* Every record replaced by r[0..n) in one transaction (a standby's copy
 * of the leader's). */
int ctl_pause_db_replace(ctl_pause_db_t *db, const struct ctl_pause_rec *r, size_t n, pflex_error_t *err);
/* The records as compact JSON text, [{"job", "suspended", "since",
 * "until", "paused_s", "event_start", "event_end" (null: none)}] (the
 * etcd copy; malloc'd, NULL out of memory), and back (-1 with err on a
 * malformed text; *out malloc'd). */
char *ctl_pause_recs_text(const struct ctl_pause_rec *r, size_t n);
int ctl_pause_recs_parse(const char *text, struct ctl_pause_rec **out, size_t *n, pflex_error_t *err);

/* ---- the actions ------------------------------------------------------- */

struct ctl_sched_config {
    const char *scontrol;       /* the command; NULL: "scontrol" on PATH */
    double timeout_s;           /* each command; <= 0: 5 */
    double idle_w;              /* a paused GPU's draw as counted, W; <= 0: 100 */
    const char *db_path;        /* the state (the controller's --db); required */
    /* a fallback that needs no controller: a transient systemd timer per
     * pause runs `<self> controller release --db <db> --job ID --expired`
     * at its end.  NULL: none (systemd not running) */
    const char *systemd_run;
    const char *self;           /* this binary, absolute */
    FILE *log;                  /* the release command's log; the controller's own
                                 * goes through ctl_log */
};

/* Run `scontrol VERB JOB` (VERB suspend or resume) within the timeout;
 * 0, or -1 with why in err ("no answer within 5 s", "exit 1: scontrol:
 * error: Invalid job id specified", "scontrol: not found") and *gone
 * what the failure means: */
enum {
    CTL_SCHED_NO_ANSWER,        /* timed out, killed: it may have acted */
    CTL_SCHED_NOTHING,          /* the scheduler says the job is not there or not in
                                 * that state: nothing to undo */
    CTL_SCHED_REFUSED,          /* the scheduler answered no (exit status) */
    CTL_SCHED_DID_NOT_RUN,      /* the command is missing or could not start */
};
int ctl_sched_cmd(const struct ctl_sched_config *cfg, const char *verb, const char *job, int *gone,
                  pflex_error_t *err);

/* A Slurm job id as the job maps name it (digits, or digits_digits for an
 * array task): 1, else 0. */
int ctl_sched_job_id_ok(const char *job);

typedef struct ctl_sched ctl_sched_t;
struct ctl;

int ctl_sched_create(const struct ctl_sched_config *cfg, ctl_sched_t **out, pflex_error_t *err);
/* Resume every job this controller holds suspended (a clean stop: caps
 * alone from then on), then free. */
void ctl_sched_destroy(ctl_sched_t *s, struct ctl *c);

/* The period's hooks (controller.c).  ctl_sched_adjust, after the targets
 * and before the learner: the paused jobs' GPUs leave their jobs (no
 * readings of a stopped job teach its curve) and count as idle GPUs,
 * which the planner holds at their least cap, here their idle draw.
 * ctl_sched_act, after the plan and before the push: resume what is due
 * or no longer needed, pause what the rule picks; never holding smu. */
void ctl_sched_adjust(ctl_sched_t *s, struct ctl *c);
/* From ctl_leases_plan, once the caps are planned: a paused GPU's cap
 * (planned at its idle draw) raised to its least settable cap. */
void ctl_sched_caps(ctl_sched_t *s, struct ctl *c);
void ctl_sched_act(ctl_sched_t *s, struct ctl *c);

/* With a standby (standby.c): the leader's records as last read, as
 * text to put in etcd (malloc'd); and a standby's copy of them into its
 * own state, so that on taking over it resumes them on time. */
char *ctl_sched_state_text(const ctl_sched_t *s);
int ctl_sched_take_state(ctl_sched_t *s, const char *text, pflex_error_t *err);

/* `pflex controller release` (release.c). */
int ctl_release_command(int argc, char **argv);

#endif
