/* prom_int.h — what prom_source.c (the source: its host table, the
 * queries, the judging) and prom_answer.c (the reader of the answers)
 * share inside the controller. */
#ifndef PFLEX_CONTROLLER_PROM_INT_H
#define PFLEX_CONTROLLER_PROM_INT_H

#include <stddef.h>
#include <stdint.h>
#include "controller/prom_source.h"
#include "lib/util/strtab.h"
#include "pflex/net/http.h"

#define MAX_HOSTS 100000

struct host {
    char name[64];
    size_t ngpus, njobs;
    size_t ngpus_own;           /* of ngpus, those pflex's own answer made */
    unsigned char nan[AGENT_MAX_GPUS];  /* a power, limit or range of gpu[k] was NaN */
    /* the entries past ngpus and njobs are not cleared: each is written
     * whole as it is added (a host is 29 KB, 360 MB at 12,500 nodes) */
    struct agent_gpu gpu[AGENT_MAX_GPUS];
    struct agent_job job[AGENT_MAX_JOBS];
};

/* A string of an answer: a span of the input (raw), or its text unescaped
 * into the read's scratch at off (raw NULL); on 0: absent. */
struct str {
    const char *raw;
    size_t off, n;
    int on;
};

/* A NaN sample of a GPU the DCGM answer names (host in the marks' text). */
struct mark {
    size_t off, n;
    int gpu;
};

struct prom_source {
    char url[512];
    long timeout_ms;
    double max_age_s;           /* samples older (or newer) than this are stale; <= 0: unchecked */
    struct host *hosts;
    size_t nhosts, cap;
    struct pflex_strtab names;  /* hosts[i].name is names.s[i] */
    size_t made;                /* hosts and GPUs added, counted up */
    pflex_http_client_t *http;
    /* a read's scratch, kept between reads */
    char *tmp;                  /* unescaped strings of one element */
    size_t ntmp, tmp_cap;
    char *cbuf;                 /* one string NUL-terminated for strtod */
    size_t cbuf_cap;
    struct mark *marks;
    size_t nmarks, marks_cap;
    char *mtext;                /* the marks' hosts */
    size_t nmtext, mtext_cap;
    struct keyset *keys;        /* by depth: the keys of the objects open */
};

/* The keys of one object of the DCGM answer, for duplicates (which the
 * telemetry reader refuses, as jansson's JSON_REJECT_DUPLICATES): a bit
 * per key's cheap hash, the keys compared only when their bits meet. */
struct keyref {
    const char *raw;            /* in the input, or NULL: text at off */
    size_t off, n;
};
struct keyset {
    uint64_t bits;
    struct keyref *k;
    size_t n, cap;
    char *text;                 /* escaped keys' text */
    size_t ntext, text_cap;
};

/* What a read found wrong with the answers' samples. */
struct judge {
    double now_s;
    size_t n;                   /* samples seen */
    double oldest, newest;      /* their stamps (unix s) */
};

/* The host table (prom_source.c): a read starts it afresh; a host or a
 * GPU is added when first named (NULL: no room, or a name that cannot be
 * one), p->made counted up. */
void prom_hosts_clear(prom_source_t *p);
struct host *prom_host_find(const prom_source_t *p, const char *name, size_t len);
struct host *prom_host_get(prom_source_t *p, const char *name, size_t len);
struct agent_gpu *prom_gpu_find(struct host *h, int index);
struct agent_gpu *prom_gpu_get(prom_source_t *p, struct host *h, int index);
/* One sample's stamp (unix s) into jd. */
void prom_judge_stamp(struct judge *jd, double t);

/* Both answers read into p's hosts (prom_answer.c): 0, or -1 with err.
 * The samples' stamps go into jd; *ndcgm and *nown count each answer's
 * samples (the DCGM answer's skipped ones too). */
int prom_answers_read(prom_source_t *p, const char *dcgm, size_t dlen, const char *own, size_t olen,
                      struct judge *jd, size_t *ndcgm, size_t *nown, pflex_error_t *err);

#endif
