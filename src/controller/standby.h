/* standby.h — two controllers (or more), one leading: the election through
 * etcd (pflex/etcd.h), the leader's state replicated there, the fencing
 * token its pushes carry.  `pflex controller run --etcd URL` (cmd.c).
 *
 * A thread of its own (never the period's) talks to etcd every tick
 * (a quarter period, at most 0.25 s): it keeps the controller's etcd lease
 * alive (2 periods less 1.25 s, whole seconds, at least etcd's 2 s
 * minimum: a standby takes over within two periods of 2 s and more) and
 * campaigns for the
 * leader key PREFIX/leader (created when absent, under that lease: the
 * first to create it leads until its lease lapses or it resigns).  The key's
 * create_revision is the fencing token: it rises with every new leader, the
 * agents keep the highest seen and refuse a lower one (409).
 *
 * The leader puts what it decides from under PREFIX/state/: "targets" (the
 * target set, when it changes) and "jobs/NAME" (each job's learner, bin by
 * bin, when it learned something), each put only while its key is still
 * the leader's (a guarded transaction).  A standby reads what changed there
 * every half period and its controller takes it before its next period:
 * the same targets and warm curves, so that on taking over it resumes
 * exactly what was in force.  A standby does everything else (reads the
 * site, learns, plans, records, serves its API) but push caps and report
 * to the VTN.
 *
 * Losing etcd: a leader that cannot renew its lease keeps leading until the
 * lease could have expired (counted from before the last renewal it sent,
 * on the monotonic clock), then stands down; the agents keep the last caps
 * until their own leases lapse.  An agent's 409 (a newer leader's token
 * seen) stands it down at once.
 *
 * Threads: standby_create starts the thread; every other call is the
 * controller's thread's (may_push and fenced are called from the period,
 * the others between periods).  Ownership: the standby owns its thread and
 * etcd handle; destroy resigns (revokes the lease) when leading. */
#ifndef PFLEX_CONTROLLER_STANDBY_H
#define PFLEX_CONTROLLER_STANDBY_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "controller/controller.h"
#include "pflex/error.h"

struct standby_config {
    const char *endpoints;      /* etcd members, "http://h:2379[,http://h2:2379...]" */
    const char *prefix;         /* keys under it; NULL: "/pflex/site" */
    const char *name;           /* this controller's name in the leader key */
    double period_s;            /* the control period */
    const char *ca_file;        /* for https:// members; NULL: the system's */
    FILE *log;                  /* role changes and etcd trouble; NULL: none */
};

typedef struct standby standby_t;

int standby_create(const struct standby_config *cfg, standby_t **out, pflex_error_t *err);
/* Stop the thread; when leading, resign (the lease revoked: a standby
 * takes over within a tick). */
void standby_destroy(standby_t *s);

/* ctl_config's hooks (ud: the standby): leads now, with *fence; and an
 * agent refused a push for a newer leader's token. */
int standby_may_push(void *ud, uint64_t *fence);
void standby_fenced(void *ud);

/* 1 once after this controller won the election (its loop then starts a
 * period at once instead of waiting for the next). */
int standby_took_over(standby_t *s);

/* Before a period: the leader's state read since the last call into c
 * (targets replaced, each known job's learner given the leader's bins; a
 * job not seen yet keeps its bins until it is). */
void standby_take_state(standby_t *s, ctl_t *c);
/* After a period, when leading: what changed (targets, the jobs that
 * learned; everything just after winning) for the thread to put. */
void standby_publish(standby_t *s, ctl_t *c);

/* {"role": "leader"|"standby", "name", "leader", "fence", "etcd",
 *  "etcd_ok", "etcd_error", "takeovers"} for the API. */
json_t *standby_json(standby_t *s);
int standby_leading(standby_t *s);

#endif
