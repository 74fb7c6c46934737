/* release.c — `pflex controller release`: resume the jobs the controller's
 * state says it suspended, with no controller running (the fallback of
 * the scheduler lever, sched.h; docs/slurm-levers.md). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/sched.h"
#include "lib/util/clock.h"
#include "pflex/io/csv.h"

static const char help[] =
"usage: pflex controller release --db FILE [--job ID] [--expired] [--scontrol CMD]\n"
"                                [--timeout S]\n"
"\n"
"Resumes (scontrol resume) the jobs that the state database of 'pflex\n"
"controller run --scheduler slurm' records as suspended by the controller,\n"
"or only job ID, and records them resumed.  Needs no running controller:\n"
"the transient systemd timer each pause starts runs it at the pause's end,\n"
"and an operator may run it by hand.  Jobs the controller did not suspend\n"
"are never touched.  Run as SlurmUser or root.\n"
"\n"
"  --db FILE       the controller's --db\n"
"  --job ID        only this job (an error when the state holds no pause of it)\n"
"  --expired       only pauses whose end has come (what the timers run)\n"
"  --scontrol CMD  Slurm's scontrol (default: scontrol on PATH)\n"
"  --timeout S     each scontrol call, seconds (default 5)\n"
"\n"
"One line per job to stdout: 'job ID resumed' or 'job ID: why not'.\n"
"Exit 0 when every job asked for is resumed (or none was suspended), 1 when\n"
"a resume failed (it stays recorded: run it again), 2 on bad input.\n"
"\n"
"EXAMPLES\n"
"  pflex controller release --db /var/lib/pflex/controller.db\n"
"  pflex controller release --db /var/lib/pflex/controller.db --job 4242\n";

int ctl_release_command(int argc, char **argv)
{
    enum { O_DB = 256, O_JOB, O_EXPIRED, O_SCONTROL, O_TIMEOUT };
    static const struct option opts[] = {
        {"db", required_argument, NULL, O_DB}, {"job", required_argument, NULL, O_JOB},
        {"expired", no_argument, NULL, O_EXPIRED}, {"scontrol", required_argument, NULL, O_SCONTROL},
        {"timeout", required_argument, NULL, O_TIMEOUT}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db_path = NULL, *job = NULL;
    int expired = 0;
    struct ctl_sched_config cfg = {.timeout_s = 5};
    optind = 1;
    opterr = 0;
    int o;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case O_DB: db_path = optarg; break;
        case O_JOB: job = optarg; break;
        case O_EXPIRED: expired = 1; break;
        case O_SCONTROL: cfg.scontrol = optarg; break;
        case O_TIMEOUT:
            if (pflex_parse_double(optarg, strlen(optarg), &cfg.timeout_s) < 0
                || !(cfg.timeout_s >= 0.1 && cfg.timeout_s <= 600)) {
                fprintf(stderr, "pflex controller release: --timeout %s: want 0.1 to 600 seconds\n", optarg);
                return 2;
            }
            break;
        case 'h': fputs(help, stdout); return 0;
        default:
            fprintf(stderr, "pflex controller release: unknown option '%s' (--help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc || !db_path) {
        fprintf(stderr, "pflex controller release: %s (--help)\n",
                !db_path ? "--db FILE is required" : "unexpected argument");
        return 2;
    }
    if (job && !ctl_sched_job_id_ok(job)) {
        fprintf(stderr, "pflex controller release: --job '%s': not a Slurm job id\n", job);
        return 2;
    }
    pflex_error_t err;
    ctl_pause_db_t *db;
    struct ctl_pause_rec *rec;
    size_t n;
    if (ctl_pause_db_open(db_path, 0, &db, &err) < 0) {
        fprintf(stderr, "pflex controller release: %s\n", err.text);
        return 2;
    }
    if (ctl_pause_db_load(db, &rec, &n, &err) < 0) {
        fprintf(stderr, "pflex controller release: %s\n", err.text);
        ctl_pause_db_close(db);
        return 1;
    }
    int rc = 0, found = 0;
    double now = pflex_real_s();
    for (size_t i = 0; i < n; i++) {
        struct ctl_pause_rec *r = &rec[i];
        if (job && strcmp(r->job, job))
            continue;
        found = 1;
        if (!r->suspended) {
            if (job)
                printf("job %s: not suspended (resumed at %.0f)\n", r->job, r->until);
            continue;
        }
        if (expired && now < r->until - 1) {
            printf("job %s: its pause runs until %.0f, %.0f s from now: left\n", r->job, r->until,
                   r->until - now);
            continue;
        }
        int gone;
        if (ctl_sched_cmd(&cfg, "resume", r->job, &gone, &err) < 0 && gone != CTL_SCHED_NOTHING) {
            printf("job %s: %s\n", r->job, err.text);
            rc = 1;
            continue;
        }
        r->paused_s += now - r->since;
        r->suspended = 0;
        r->until = now;
        if (ctl_pause_db_put(db, r, &err) < 0) {
            printf("job %s resumed, but %s\n", r->job, err.text);
            rc = 1;
            continue;
        }
        printf("job %s resumed%s\n", r->job, gone == CTL_SCHED_NOTHING ? " (the scheduler no longer held it suspended)" : "");
    }
    if (job && !found) {
        fprintf(stderr, "pflex controller release: job %s: the state holds no pause of it "
                        "(the controller suspended only the jobs it records)\n", job);
        rc = 2;
    }
    if (fflush(stdout) != 0)
        rc = rc ? rc : 1;
    free(rec);
    ctl_pause_db_close(db);
    return rc;
}
