/* pflex/io/jobpolicy.h — what the site knows of each job beyond the agents:
 * its service floor, weight and prior (a PFI, measured or predicted).
 *
 * A CSV with a header row (`#` comments allowed), one job per row:
 *   job      required: the job's name as the agents' job maps give it
 *   floor    service floor 0..1, or
 *   tier     flex0..flex3 (SPEC §2), sets the floor
 *   weight   >= 0, default 1
 *   pfi      > 0: the prior curve L = x/PFI until the job is learned
 *   levers   the levers the site may pull on it, '+'-separated: cap, pause
 *            (suspend it through the scheduler); default cap alone
 *   loss_budget  share of its progress it may lose to pauses over an
 *            event, 0..1 or a percentage ("10%"); default 0: no pause
 *   max_pause    longest it may stay suspended at once, seconds (e.g. a
 *            multi-node job's collective timeout); default 0: no pause
 * A job is paused only when its row allows pause and gives both a budget
 * and a max_pause (docs/slurm-levers.md).
 * Unknown columns are ignored; a job named twice is an error.  Errors read
 * "file:line: column 'x': what is wrong". */
#ifndef PFLEX_JOBPOLICY_H
#define PFLEX_JOBPOLICY_H

#include <stddef.h>
#include "pflex/util/error.h"

enum { PFLEX_LEVER_CAP = 1, PFLEX_LEVER_PAUSE = 2 };

struct pflex_job_policy {
    char job[64];
    double floor;       /* NaN: not given */
    double weight;      /* 1 when not given */
    double pfi;         /* NaN: not given */
    unsigned levers;    /* PFLEX_LEVER_* bits; PFLEX_LEVER_CAP when not given */
    double loss_budget; /* 0..1, 0 when not given */
    double max_pause_s; /* s, 0 when not given */
    unsigned line;      /* where it was read */
};

typedef struct pflex_job_policies {
    size_t n;
    struct pflex_job_policy *p;
} pflex_job_policies_t;

int pflex_job_policies_read_mem(const char *buf, size_t len, const char *name,
                                pflex_job_policies_t *out, pflex_error_t *err);
int pflex_job_policies_read(const char *path, pflex_job_policies_t *out, pflex_error_t *err);
void pflex_job_policies_fini(pflex_job_policies_t *p);
/* The row of a job, or NULL. */
const struct pflex_job_policy *pflex_job_policy_find(const pflex_job_policies_t *p, const char *job);

/* 1 when the row lets the site suspend the job (pause lever, a budget and
 * a max_pause above 0); 0 otherwise or for NULL. */
int pflex_job_policy_pausable(const struct pflex_job_policy *p);

#endif
