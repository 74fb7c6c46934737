/* meter.h — the site's power as the grid's meter sees it, from a
 * Prometheus query (controller --meter), and the loop closed on it
 * (docs/time-to-target.md#the-meter).
 *
 * The transport: one instant query of a Prometheus server, its answer one
 * value (a vector of one series, or a scalar) and its stamp.  The control:
 * each period, rest = meter - the GPUs' measured draw, bounded to
 * [0, meter], filtered: the largest over the last `filter` periods (a
 * rise taken at once, a fall once it has lasted that long); the plan
 * holds the GPUs to target - rest.  A meter stale, missing or NaN: --other-w instead, said
 * in the log and the audit when it starts and when it ends. */
#ifndef PFLEX_CONTROLLER_METER_H
#define PFLEX_CONTROLLER_METER_H

#include <jansson.h>
#include <pthread.h>
#include "pflex/net/prom.h"
#include "pflex/util/error.h"

/* One answer of /api/v1/query: its value (W) and stamp (unix s).  0, or
 * -1 with err: not a successful answer, no series, more than one, or a
 * value that is not a number (NaN is a number: the caller judges it). */
int meter_parse(const char *body, size_t len, double *value, double *stamp_s, pflex_error_t *err);

/* One read of query from the server at url (http[s]://host:port). */
int meter_read(const char *url, const char *query, double timeout_s, double *value, double *stamp_s,
               pflex_error_t *err);

/* The most periods the rest's filter looks back over (--meter-filter). */
#define METER_FILTER_MAX 64

enum meter_state { METER_OFF, METER_OK, METER_STALE, METER_MISSING, METER_NAN, METER_DOWN };

/* The controller's meter (struct ctl.meter): what its thread last read
 * (under mu), and what the period made of it (under the controller's smu). */
struct ctl_meter {
    pthread_t th;
    int th_on, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* the thread's last read, under mu */
    double value, stamp_s, read_mono;   /* read_mono NaN: none yet */
    int read_ok;
    char read_why[200];
    /* the period's */
    enum meter_state state;
    char why[200];
    double site_w;              /* the meter's value used; NaN: none */
    double rest_raw_w, rest_w;  /* meter less the GPUs' draw, and filtered; NaN: none */
    double raw[METER_FILTER_MAX];       /* the last raw rests (bounded), newest at nraw - 1 */
    unsigned long nraw;
    double other_w;             /* what the plan counted for the rest (rest_w, or --other-w) */
    double age_s;
    unsigned long fallbacks;    /* periods on --other-w since start */
    int said;                   /* the fallback was logged */
};

struct ctl;
/* Start and stop the reader thread (a started controller with a meter). */
int ctl_meter_start(struct ctl *c, pflex_error_t *err);
void ctl_meter_stop(struct ctl *c);
/* The non-GPU power the plan counts this period (after ctl_map_jobs):
 * the meter's filtered rest, or --other-w.  Called once a period. */
double ctl_meter_other_w(struct ctl *c);
/* The site's power this period: the meter's when it is used, else the
 * GPUs' measured draw plus --other-w; NaN when neither is known. */
double ctl_site_w(const struct ctl *c);
json_t *ctl_meter_json(const struct ctl *c);
void ctl_meter_metrics(const struct ctl *c, pflex_prom_t *p);

#endif
