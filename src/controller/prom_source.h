/* prom_source.h — the site's telemetry from a Prometheus server's HTTP API
 * (controller --prometheus), in place of each agent's /v1/status: the
 * metric names the agents export, the DCGM fields by the telemetry
 * readers' rules (pflex/io/telemetry.h) and pflex's own, both read in
 * place by one streaming scanner (docs/prometheus-read.md). */
#ifndef PFLEX_CONTROLLER_PROM_SOURCE_H
#define PFLEX_CONTROLLER_PROM_SOURCE_H

#include "controller/agent_client.h"
#include "pflex/util/error.h"

typedef struct prom_source prom_source_t;

/* url: "http://host:port" of the Prometheus server. */
int prom_source_create(const char *url, long timeout_ms, prom_source_t **out, pflex_error_t *err);
void prom_source_destroy(prom_source_t *p);

/* Samples stamped more than max_age_s (s) before or after the read's now
 * are stale: the read fails (<= 0, the default: unchecked). */
void prom_source_set_max_age(prom_source_t *p, double max_age_s);

/* One instant read of every GPU's power, limit and range, and every job's
 * throughput, at now_s (unix s, what the samples' stamps are judged
 * against).  0, or -1 with err (the server unreachable, an answer that is
 * not a Prometheus success, an empty result, NaN for a GPU that is up,
 * stale samples: then *stale is 1, when stale is not NULL): the caller
 * then holds. */
int prom_source_read(prom_source_t *p, double now_s, int *stale, pflex_error_t *err);

/* The GPUs of host as the last read saw them (index, power, limit, range,
 * ok from pflex_gpu_up), and its jobs (name and throughput; no GPU lists:
 * the job map comes from the agents or a file).  0, or -1 when the read
 * had no fresh series of host (its agent not scraped: down, or stale). */
int prom_source_status(const prom_source_t *p, const char *host, struct agent_status *st);

/* The parsers, exposed for tests: the DCGM fields' answer and pflex's own. */
int prom_source_parse(prom_source_t *p, const char *dcgm, size_t dlen, const char *own, size_t olen,
                      double now_s, int *stale, pflex_error_t *err);

/* Host i of the last read (in the order the answers first named it),
 * whole, for tests: its GPUs and jobs into st, nan[k] 1 where GPU k had a
 * NaN power, limit or range.  0, or -1 past the last. */
int prom_source_host_at(const prom_source_t *p, size_t i, struct agent_status *st, unsigned char *nan);

#endif
