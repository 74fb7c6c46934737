/* simulate_levers.h — pflex simulate --levers: the event with levers
 * beyond caps, the field demonstration's policies beside pflex's plan
 * (src/cli/simulate_levers.c; docs/levers.md). */
#ifndef PFLEX_CLI_SIMULATE_LEVERS_H
#define PFLEX_CLI_SIMULATE_LEVERS_H

#include <getopt.h>
#include <stdint.h>
#include "pflex/flex/target.h"
#include "pflex/site/simulate.h"

/* The options' codes in simulate's table: SIM_LEVERS_OPT_FIRST and up. */
#define SIM_LEVERS_OPT_FIRST 1100
#define SIM_LEVERS_OPTIONS                                                                     \
    {"levers", required_argument, NULL, 1100},      {"flex-as", required_argument, NULL, 1101}, \
    {"lever-period", required_argument, NULL, 1102}, {"ckpt", required_argument, NULL, 1103},   \
    {"restart", required_argument, NULL, 1104},     {"max-pause", required_argument, NULL, 1105}, \
    {"resize-eff", required_argument, NULL, 1106},  {"node-gpus", required_argument, NULL, 1107}, \
    {"gpu-kind", required_argument, NULL, 1108},    {"deepest", no_argument, NULL, 1109},       \
    {"plan-time", required_argument, NULL, 1110},   {"oracle-time", required_argument, NULL, 1111}

/* The options' help lines (a string literal, joined into simulate's help). */
#define SIM_LEVERS_HELP \
"levers (docs/levers.md):\n" \
"  --levers LIST       run the event with levers beyond caps instead: any of\n" \
"                      cap,pause,stop,resize, or all; the field\n" \
"                      demonstration's four policies, pflex's plan (a MILP\n" \
"                      over the event, re-planned every period) and the\n" \
"                      oracle side by side, with the LP bound\n" \
"  --flex-as M         floor (default: a tier is a per-period floor) or\n" \
"                      contract (Flex 0-3 = 0/10/25/50 %, read from the\n" \
"                      floor as 1 - floor, is a loss budget over the event)\n" \
"  --lever-period D    the levers' period (default 5m)\n" \
"  --ckpt D            a checkpoint's time (default 2m)\n" \
"  --restart D         a restart's time to progress (default 5m)\n" \
"  --max-pause D       the longest pause; past it a job is stopped\n" \
"                      (default 10m)\n" \
"  --resize-eff X      T/T0 on g of n GPUs = X g/n (default 0.95)\n" \
"  --node-gpus N       GPUs per node: the resize step (default 8)\n" \
"  --gpu-kind NAME     the GPUs' kind, for their idle power (default\n" \
"                      A100-SXM4-40GB, the demonstration's)\n" \
"  --deepest           replace the event's limit by the deepest constant\n" \
"                      limit the contracts allow (found and printed first)\n" \
"  --plan-time S       a re-plan's search time (default 2)\n" \
"  --oracle-time S     the oracle's (default 30)\n"

struct sim_levers_opts {
    int on;                     /* --levers given */
    unsigned levers;
    int contract;               /* --flex-as contract */
    double period_s, ckpt_s, restart_s, max_pause_s, resize_eff, plan_time_s, oracle_time_s;
    double node_gpus;
    const char *gpu_kind;
    int deepest;
};

void sim_levers_defaults(struct sim_levers_opts *lv);

/* One option (its code, its value): -1 to go on, else an exit status. */
int sim_levers_option(int c, const char *arg, struct sim_levers_opts *lv);

/* What simulate has read. */
struct sim_levers_input {
    const char *day;            /* or NULL */
    size_t njobs;
    const struct pflex_sim_job *jobs;
    const struct pflex_sim_kind *kinds;
    const pflex_target_set_t *targets;
    double start_s, duration_s, baseline_w, other_w, noise_tput;
    uint64_t seed;
    int json;
    const char *out_dir;        /* summary.json there, or NULL */
};

/* Run and print; an exit status. */
int sim_levers_run(const struct sim_levers_opts *lv, const struct sim_levers_input *in);

#endif
