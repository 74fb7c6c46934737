/* pflex/sim/fleet.h — the built-in fleets of simulated sweep groups.
 *
 * The study fleet is the seed study's own experiment ("Characterizing Job
 * Power Elasticity for Power-Flexible AI Training", 2026; PAPER.md sections
 * 3-4): 25 headline H200 sweep groups (131 runs), 4 held-out validation
 * groups (24 runs) and 6 H100 groups matched to headline ones (34 runs).
 * An entry is a sweep group: one job configuration and the caps it ran at
 * (a "run" is one 30-minute training run at one cap).  The models' shapes
 * are the public ones (src/lib/sim/models_table.c); the fields the study
 * leaves open are chosen in src/lib/sim/fleet.c and documented in
 * docs/study.md.
 *
 * The extended fleet is a generated catalogue of thousands of groups over
 * sizes, tasks and GPU kinds for the studies that need more than 35.
 *
 * pflex_fleet_entry(f, i) is a pure function of (f, i): the same on every
 * machine and every call, safe from any thread.  Study groups come in a
 * fixed order: headline (PAPER.md Table 6 order), validation, H100.
 */
#ifndef PFLEX_FLEET_H
#define PFLEX_FLEET_H

#include <stddef.h>
#include "pflex/sim/model.h"

#define PFLEX_FLEET_MAIN_RUNS 131        /* headline runs (caps) */
#define PFLEX_FLEET_VALIDATION_RUNS 24
#define PFLEX_FLEET_H100_RUNS 34
#define PFLEX_FLEET_MAIN_GROUPS 25
#define PFLEX_FLEET_VALIDATION_GROUPS 4
#define PFLEX_FLEET_H100_GROUPS 6
#define PFLEX_FLEET_MAX_CAPS 8

enum pflex_fleet_split {
    PFLEX_FLEET_MAIN,           /* H200, the study's headline groups (or the extended population) */
    PFLEX_FLEET_VALIDATION,     /* H200, held out */
    PFLEX_FLEET_H100,           /* H100, matched to an H200 headline group */
};

enum pflex_fleet_set {
    PFLEX_FLEET_STUDY,          /* the study's 35 groups */
    PFLEX_FLEET_EXTENDED,       /* the generated catalogue */
};

struct pflex_fleet_run {
    struct pflex_job_desc desc;     /* what pflex_sim_job_create takes */
    enum pflex_fleet_split split;
    const char *set;                /* "headline", "validation", "h100" or "extended" */
    const char *label;              /* the study's name of the group ("Dense PT 8 x ...") */
    const char *model;              /* Hugging Face name, or the family's */
    const char *family;             /* short model name: "qwen3-32b", ... */
    const char *arch;               /* "dense" or "moe" */
    const char *task;               /* "pretrain", "finetune" (full) or "lora" */
    int is_moe;
    int is_finetune;                /* full or LoRA */
    int gpus;                       /* = desc.gpus */
    int compile;                    /* torch.compile */
    int match;                      /* H100 groups: index of the H200 group they mirror; else -1 */
    double mem_gb;                  /* coarse per-GPU memory estimate, GB */
    size_t ncaps;                   /* the group's cap grid, W, ascending */
    double caps_w[PFLEX_FLEET_MAX_CAPS];
    double measured_pfi;            /* the study's ratio PFI of the group (PAPER.md section 4);
                                     * NaN where it is not published */
};

/* Groups in a fleet (study: 35). */
size_t pflex_fleet_size(enum pflex_fleet_set f);

/* Fill *out with group i of fleet f.  0, or -1 when i is out of range. */
int pflex_fleet_entry(enum pflex_fleet_set f, size_t i, struct pflex_fleet_run *out);

/* The study fleet: pflex_fleet_size / pflex_fleet_entry of PFLEX_FLEET_STUDY. */
size_t pflex_fleet_count(void);
int pflex_fleet_get(size_t i, struct pflex_fleet_run *out);

/* "main", "validation", "h100-matched". */
const char *pflex_fleet_split_name(enum pflex_fleet_split s);

/* Model families in catalogue order (for charts and tables); NULL past
 * the end. */
const char *pflex_fleet_family_at(int i);

#endif
