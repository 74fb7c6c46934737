/* calib.c — the sim model against the Emerald A100 measurements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "pflex/sim/calib.h"
#include "pflex/flex/correlate.h"
#include "pflex/sim/fleet.h"
#include "pflex/flex/curve.h"
#include "pflex/flex/pfi.h"
#include "pflex/sim/sim.h"
#include "pflex/io/csv.h"
#include "pflex/io/sweep.h"

static const struct { const char *preset, *job; } pairs[] = {
    {"emerald-ft-llama-8b-dolly", "ft_llama_8b_dolly"},
    {"emerald-ft-llama-8b-p3", "ft_llama_8b_p3"},
    {"emerald-infer-llama-8b", "infer_llama_8b_48g"},
    {"emerald-pt-mpt-7b", "pt_mpt_7b_fast"},
    {"emerald-pt-mpt-13b", "pt_mpt_13b_lg"},
};

#define WINDOWS 20

static const char emerald_columns[] =
    "job=Workload,cap_w=GPU power cap,power_w=power per GPU,throughput=throughput";

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int pflex_calib_emerald_path(const char *data_dir, char *buf, size_t len)
{
    static const char *const tails[] = {"", "/data/dvfs_sweep.csv",
                                        "/emerald-demo/data/dvfs_sweep.csv"};
    for (size_t i = 0; data_dir && i < 3; i++) {
        if ((size_t)snprintf(buf, len, "%s%s", data_dir, tails[i]) < len && is_file(buf))
            return 0;
    }
    return -1;
}

/* The study's ratio PFI of a sweep (every cap; SPEC section 2). */
static int pfi_of(const struct pflex_sweep_point *pts, size_t n, double *pfi, pflex_error_t *err)
{
    struct pflex_pfi_ratio r;
    if (pflex_pfi_ratio(pts, n, NULL, 0, &r, err) < 0)
        return -1;
    *pfi = r.valid ? r.pfi : NAN;
    return 0;
}

int pflex_calibrate_emerald(const char *data_dir, uint64_t seed, struct pflex_calib_result *out,
                            size_t max, size_t *n, pflex_error_t *err)
{
    char path[4096];
    *n = 0;
    if (pflex_calib_emerald_path(data_dir, path, sizeof path) < 0)
        return pflex_error_set(err, "%s: no emerald-demo/data/dvfs_sweep.csv there",
                               data_dir ? data_dir : "(null)");
    pflex_sweep_t *sw;
    if (pflex_sweep_read_file(path, emerald_columns, &sw, err) < 0)
        return -1;
    int rc = 0;
    for (size_t p = 0; p < sizeof pairs / sizeof *pairs && *n < max; p++) {
        const struct pflex_sweep_job *mj = NULL;
        for (size_t i = 0; i < sw->njobs; i++)
            if (!strcmp(sw->jobs[i].name, pairs[p].job))
                mj = &sw->jobs[i];
        if (!mj || mj->npoints < 2 || mj->npoints > PFLEX_CALIB_MAX_CAPS)
            continue;
        struct pflex_calib_result *r = &out[*n];
        memset(r, 0, sizeof *r);
        snprintf(r->preset, sizeof r->preset, "%s", pairs[p].preset);
        snprintf(r->measured_job, sizeof r->measured_job, "%s", pairs[p].job);
        struct pflex_job_desc d;
        pflex_sim_job_t *j;
        if (pflex_job_preset_find(pairs[p].preset, &d) < 0) {
            rc = pflex_error_set(err, "calibration: no preset %s", pairs[p].preset);
            break;
        }
        if (pflex_sim_job_create(&d, seed + p, &j, err) < 0) {
            rc = -1;
            break;
        }
        struct pflex_sweep_point sim[PFLEX_CALIB_MAX_CAPS];
        r->ncaps = mj->npoints;
        for (size_t k = 0; k < mj->npoints; k++) {
            /* Windows per cap averaged, as the long Emerald runs average
             * their measurements; noise then moves the PFI by ~0.01. */
            double pw = 0, tp = 0;
            for (int rep = 0; rep < WINDOWS; rep++) {
                struct pflex_sim_measure m;
                pflex_sim_job_measure(j, mj->points[k].cap_w, &m, NULL);
                pw += m.power_w / WINDOWS;
                tp += m.throughput / WINDOWS;
            }
            sim[k] = (struct pflex_sweep_point){mj->points[k].cap_w, pw, tp, WINDOWS, 0};
            r->cap_w[k] = mj->points[k].cap_w;
            r->measured_power_w[k] = mj->points[k].power_w;
            r->simulated_power_w[k] = pw;
        }
        pflex_sim_job_destroy(j);
        double mt0 = mj->points[mj->npoints - 1].throughput, st0 = sim[mj->npoints - 1].throughput;
        double se = 0;
        int cnt = 0;
        for (size_t k = 0; k < mj->npoints; k++) {
            r->measured[k] = mj->points[k].throughput / mt0;
            r->simulated[k] = sim[k].throughput / st0;
            if (r->cap_w[k] >= PFLEX_CALIB_RMSE_MIN_W && r->cap_w[k] <= PFLEX_CALIB_RMSE_MAX_W) {
                se += (r->measured[k] - r->simulated[k]) * (r->measured[k] - r->simulated[k]);
                cnt++;
            }
        }
        r->rmse = cnt ? sqrt(se / cnt) : NAN;
        if (pfi_of(mj->points, mj->npoints, &r->pfi_measured, err) < 0
            || pfi_of(sim, mj->npoints, &r->pfi_simulated, err) < 0) {
            rc = -1;
            break;
        }
        (*n)++;
    }
    pflex_sweep_destroy(sw);
    return rc;
}

/* Absolute throughput: public llm-foundry benchmarks (mosaicml/llm-foundry,
 * scripts/train/benchmarking/README.md, tables "H100 80GB BF16" and "A100
 * 80GB with 1600 Gbps node-node interconnect"): MPT models (GELU MLP 4h,
 * tied embeddings, vocabulary 50432) under FSDP FULL_SHARD, bf16, 8 GPUs,
 * measured tokens/s per GPU. */
const struct pflex_calib_mfu pflex_calib_mfu_points[PFLEX_CALIB_MFU_POINTS] = {
    {"mpt-7b h100 s2048 mb6", "H100-SXM5-80GB", 32, 4096, 32, 2048, 6, 0, 10643},
    {"mpt-13b h100 s2048 mb2", "H100-SXM5-80GB", 40, 5120, 40, 2048, 2, 0, 4792},
    {"mpt-7b h100 s8192 mb8 ckpt", "H100-SXM5-80GB", 32, 4096, 32, 8192, 8, 1, 6935},
    {"mpt-13b a100 s2048 mb2", "A100-SXM4-80GB", 40, 5120, 40, 2048, 2, 0, 2262},
    {"mpt-30b a100 s2048 mb3 ckpt", "A100-SXM4-80GB", 48, 7168, 56, 2048, 3, 1, 916},
    {"mpt-13b a100 s8192 mb5 ckpt", "A100-SXM4-80GB", 40, 5120, 40, 8192, 5, 1, 1795},
};

int pflex_calib_mfu_desc(const struct pflex_calib_mfu *m, struct pflex_job_desc *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", m->name);
    snprintf(d->gpu, sizeof d->gpu, "%s", m->gpu);
    d->gpus = 8;
    d->layers = m->layers;
    d->hidden = m->hidden;
    d->heads = m->heads;
    d->ffn_hidden = 4 * m->hidden;
    d->mlp = PFLEX_MLP_GELU;
    d->vocab = 50432;
    d->tied_embeddings = 1;
    d->seq_len = m->seq_len;
    d->micro_batch = m->micro_batch;
    d->kind = PFLEX_JOB_PRETRAIN;
    d->zero = 3;
    d->act_ckpt = m->act_ckpt;
    return pflex_job_desc_resolve(d, NULL);
}

int pflex_calib_emerald_load(const char *data_dir, pflex_sweep_t **out, pflex_error_t *err)
{
    char path[4096];
    if (pflex_calib_emerald_path(data_dir, path, sizeof path) < 0)
        return pflex_error_set(err, "%s: no emerald-demo/data/dvfs_sweep.csv there",
                               data_dir ? data_dir : "(null)");
    return pflex_sweep_read_file(path, emerald_columns, out, err);
}

/* Noise-free sweep of a description at caps (ascending). */
static int expect_sweep(const struct pflex_job_desc *d, const struct pflex_sim_fit *fit,
                        const double *caps, size_t n, struct pflex_sweep_point *pts,
                        pflex_error_t *err)
{
    pflex_sim_job_t *j;
    if (pflex_sim_job_create_fit(d, 1, fit, &j, err) < 0)
        return -1;
    for (size_t k = 0; k < n; k++) {
        struct pflex_sim_measure m;
        if (pflex_sim_job_expect(j, caps[k], &m, err) < 0) {
            pflex_sim_job_destroy(j);
            return -1;
        }
        pts[k] = (struct pflex_sweep_point){caps[k], m.power_w, m.throughput, 1, 0};
    }
    pflex_sim_job_destroy(j);
    return 0;
}

/* --- the real uncapped runs ---------------------------------------------- */

/* Read one measured.csv (header: job,tokens_per_s,power_w,sm_clock_mhz,
 * dram_active,tensor_active,sm_active,mem_copy_util, then optionally
 * unit,size,run) into out, appending; job files from jobs_dir/NAME.json.
 * machine: the host the runs were measured on; skip_repeats: rows named
 * *_r2 and idle rows are left out. */
static int read_measured(const char *path, const char *jobs_dir, int machine, int in_fit,
                         int skip_repeats, struct pflex_calib_reals *out, pflex_error_t *err)
{
    static const char *const head[] = {"job", "tokens_per_s", "power_w", "sm_clock_mhz", "dram_active",
                                       "tensor_active", "sm_active", "mem_copy_util"};
    char *buf;
    pflex_csv_t c;
    if (pflex_csv_load(&c, path, &buf, err) < 0)
        return -1;
    int got = 0, header = 0, rc = 0, extra = 0;
    while (rc == 0 && (got = pflex_csv_next(&c, err)) > 0) {
        const struct pflex_csv_field *f = c.fields;
        unsigned line = c.line;
        if (!header) {
            header = 1;
            for (size_t k = 0; k < 8; k++)
                if (c.nfields < 8 || !pflex_csv_field_is(&f[k], head[k])) {
                    rc = pflex_error_set(err, "%s:%u: unexpected header", path, line);
                    break;
                }
            extra = c.nfields >= 10 && pflex_csv_field_is(&f[8], "unit") && pflex_csv_field_is(&f[9], "size");
            continue;
        }
        struct pflex_calib_real r;
        memset(&r, 0, sizeof r);
        if (f[0].len < sizeof r.name) {
            memcpy(r.name, f[0].s, f[0].len);
            r.name[f[0].len] = '\0';
        }
        if (skip_repeats && (pflex_csv_field_is(&f[0], "idle") || strstr(r.name, "_r2")))
            continue;
        double *num[7] = {&r.tokens_per_s, &r.power_w, &r.sm_clock_mhz, &r.dram_active,
                          &r.tensor_active, &r.sm_active, &r.mem_copy_util};
        int ok = f[0].len > 0 && f[0].len < sizeof r.name && c.nfields >= (extra ? 9u : 8u);
        for (size_t k = 0; ok && k < 7; k++)
            ok = pflex_parse_double(f[k + 1].s, f[k + 1].len, num[k]) == 0;
        if (!ok || !(r.tokens_per_s > 0) || !(r.power_w > 0) || !(r.sm_clock_mhz > 0)) {
            rc = pflex_error_set(err, "%s:%u: expected %s fields, rate, power and clock positive",
                                 path, line, extra ? "10" : "8");
            break;
        }
        if (out->n >= PFLEX_CALIB_H200_MAX) {
            rc = pflex_error_set(err, "%s:%u: more than %d runs", path, line,
                                 PFLEX_CALIB_H200_MAX);
            break;
        }
        r.machine = machine;
        r.in_fit = in_fit;
        const struct pflex_csv_field *uf = extra ? &f[8] : NULL;
        if (uf && (pflex_csv_field_is(uf, "flop") || pflex_csv_field_is(uf, "byte"))) {
            r.unit = uf->s[0] == 'f' ? PFLEX_CALIB_FLOP : PFLEX_CALIB_BYTE;
            if (c.nfields < 10 || pflex_parse_double(f[9].s, f[9].len, &r.size) < 0
                || !(r.size >= 1)) {
                rc = pflex_error_set(err, "%s:%u: a %.*s loop needs its size", path, line,
                                     (int)uf->len, uf->s);
                break;
            }
        } else if (uf && !pflex_csv_field_is(uf, "token")) {
            rc = pflex_error_set(err, "%s:%u: unit %.*s is not token, flop or byte", path, line,
                                 (int)uf->len, uf->s);
            break;
        } else {
            char jp[4200];
            snprintf(jp, sizeof jp, "%s/%s.json", jobs_dir, r.name);
            if (pflex_job_read_file(jp, &r.desc, err) < 0) {
                rc = -1;
                break;
            }
        }
        out->r[out->n++] = r;
    }
    if (rc == 0 && got < 0)
        rc = -1;
    pflex_csv_fini(&c);
    free(buf);
    return rc;
}

int pflex_calib_reals_load(const char *data_dir, struct pflex_calib_reals *out,
                           pflex_error_t *err)
{
    char path[4096], jobs[4096];
    memset(out, 0, sizeof *out);
    if (!data_dir || (size_t)snprintf(path, sizeof path, "%s/h200-uncapped/measured.csv", data_dir)
                     >= sizeof path)
        return pflex_error_set(err, "calibration: no shared data folder");
    snprintf(jobs, sizeof jobs, "%s/h200-uncapped/jobs", data_dir);
    if (read_measured(path, jobs, 0, 1, 0, out, err) < 0)
        return -1;
    if (out->n == 0)
        return pflex_error_set(err, "%s: no runs", path);
    return 0;
}

/* The fit set (docs/measurements.md, "The sim backend's calibration"): every run of the shared set,
 * the three microbenchmarks (the V-f curve's power-limited points, the
 * achieved bandwidth), the device runs of the shared set's five loops (one
 * of them host-bound: the second host's speed), and of the new jobs one of
 * each sort: a power-limited dense pretrain (d2b7_mb4), a wide GQA one
 * (w4096_gqa), a Transformers MoE block (moe_h2048), a host-bound
 * generation (infer_mb4) and a small pretrain near the host's bound
 * (d125m_mb16).  The others stay unseen: d1b3_mb4, seq8k (long sequence),
 * lora_w4096, moe_e16k1 (16 experts, top-1), infer_mb128, infer_moe_mb32
 * (MoE generation), d350m_mb2 (a launch-bound small batch). */
static const char *const device_fit_set[] = {
    "ub_gemm8192", "ub_copy2g", "ub_gemm2048", "dense", "moe", "d350m_mb16", "d950m_lora",
    "d950m_infer", "d2b7_mb4", "w4096_gqa", "moe_h2048", "infer_mb4", "d125m_mb16",
};

int pflex_calib_device_load(const char *dir, struct pflex_calib_reals *out, pflex_error_t *err)
{
    char path[4096], jobs[4096];
    if (!dir || (size_t)snprintf(path, sizeof path, "%s/measured.csv", dir) >= sizeof path)
        return pflex_error_set(err, "calibration: no device data folder");
    snprintf(jobs, sizeof jobs, "%s/jobs", dir);
    size_t n0 = out->n;
    if (read_measured(path, jobs, 1, 0, 1, out, err) < 0)
        return -1;
    if (out->n == n0)
        return pflex_error_set(err, "%s: no runs", path);
    for (size_t i = n0; i < out->n; i++)
        for (size_t k = 0; k < sizeof device_fit_set / sizeof *device_fit_set; k++)
            out->r[i].in_fit |= !strcmp(out->r[i].name, device_fit_set[k]);
    return 0;
}

/* The simulated side of one real run at the board's default limit (never
 * changed on the real runs). */
static int real_expect(const struct pflex_calib_real *r, const struct pflex_sim_fit *fit,
                       struct pflex_sim_measure *m, pflex_error_t *err)
{
    if (r->unit != PFLEX_CALIB_TOKEN) {
        const struct pflex_gpu_kind *k = pflex_gpu_kind_find("H200");
        return pflex_sim_loop_expect("H200", fit, r->unit == PFLEX_CALIB_FLOP
                                     ? PFLEX_SIM_LOOP_GEMM : PFLEX_SIM_LOOP_COPY,
                                     r->size, k->default_cap_w, m, err);
    }
    /* The device runs' host issues an operator in host_b times the
     * reference host's time (the two machines' CPUs differ). */
    struct pflex_sim_fit f = *fit;
    if (r->machine == 1)
        f.py_op_s *= f.host_b;
    pflex_sim_job_t *j;
    if (pflex_sim_job_create_fit(&r->desc, 1, &f, &j, err) < 0)
        return -1;
    int rc = pflex_sim_job_expect(j, pflex_sim_job_kind(j)->default_cap_w, m, err);
    pflex_sim_job_destroy(j);
    return rc;
}

int pflex_calib_evaluate(const pflex_sweep_t *emerald, const struct pflex_calib_reals *reals,
                         const struct pflex_sim_fit *fit, struct pflex_calib_eval *out,
                         pflex_error_t *err)
{
    memset(out, 0, sizeof *out);
    for (size_t p = 0; emerald && p < PFLEX_CALIB_EMERALD_JOBS; p++) {
        const struct pflex_sweep_job *mj = NULL;
        for (size_t i = 0; i < emerald->njobs; i++)
            if (!strcmp(emerald->jobs[i].name, pairs[p].job))
                mj = &emerald->jobs[i];
        if (!mj || mj->npoints < 2 || mj->npoints > PFLEX_CALIB_MAX_CAPS)
            return pflex_error_set(err, "calibration: no usable job %s in the Emerald sweep",
                                   pairs[p].job);
        struct pflex_job_desc d;
        if (pflex_job_preset_find(pairs[p].preset, &d) < 0)
            return pflex_error_set(err, "calibration: no preset %s", pairs[p].preset);
        double caps[PFLEX_CALIB_MAX_CAPS];
        struct pflex_sweep_point pts[PFLEX_CALIB_MAX_CAPS];
        for (size_t k = 0; k < mj->npoints; k++)
            caps[k] = mj->points[k].cap_w;
        if (expect_sweep(&d, fit, caps, mj->npoints, pts, err) < 0)
            return -1;
        double mt0 = mj->points[mj->npoints - 1].throughput, st0 = pts[mj->npoints - 1].throughput;
        double se = 0, sp = 0;
        int cnt = 0;
        for (size_t k = 0; k < mj->npoints; k++) {
            if (caps[k] < PFLEX_CALIB_RMSE_MIN_W || caps[k] > PFLEX_CALIB_RMSE_MAX_W
                || out->n + 2 > PFLEX_CALIB_MAX_RESIDUALS)
                continue;
            double e = pts[k].throughput / st0 - mj->points[k].throughput / mt0;
            double ep = pts[k].power_w / mj->points[k].power_w - 1;
            se += e * e;
            sp += ep * ep;
            cnt++;
            if (k + 1 < mj->npoints) {      /* the top cap is 1 by construction */
                out->job[out->n] = (int)p;
                out->r[out->n++] = e / PFLEX_CALIB_SIGMA_T;
            }
            out->job[out->n] = (int)p;      /* the power drawn, absolute */
            out->r[out->n++] = ep / PFLEX_CALIB_SIGMA_P;
        }
        out->power_err_emerald[p] = cnt ? sqrt(sp / cnt) : NAN;
        out->rmse_emerald[p] = cnt ? sqrt(se / cnt) : NAN;
    }
    for (size_t i = 0; i < PFLEX_CALIB_MFU_POINTS; i++) {
        struct pflex_job_desc d;
        pflex_sim_job_t *j;
        struct pflex_sim_measure m;
        if (pflex_calib_mfu_desc(&pflex_calib_mfu_points[i], &d) < 0
            || pflex_sim_job_create_fit(&d, 1, fit, &j, err) < 0)
            return pflex_error_set(err, "calibration: throughput point %zu", i);
        int rc = pflex_sim_job_expect(j, pflex_sim_job_kind(j)->max_cap_w, &m, err);
        pflex_sim_job_destroy(j);
        if (rc < 0)
            return -1;
        out->tput_ratio[i] = m.throughput / d.gpus / pflex_calib_mfu_points[i].tokens_per_gpu;
        if (out->n < PFLEX_CALIB_MAX_RESIDUALS) {
            out->job[out->n] = PFLEX_CALIB_EMERALD_JOBS + (int)i;
            out->r[out->n++] = log(out->tput_ratio[i]) / PFLEX_CALIB_SIGMA_TPUT;
        }
    }
    for (size_t i = 0; reals && i < reals->n; i++) {
        const struct pflex_calib_real *r = &reals->r[i];
        struct pflex_sim_measure m;
        if (real_expect(r, fit, &m, err) < 0)
            return -1;
        struct pflex_calib_real_sim *o = &out->real[i];
        *o = (struct pflex_calib_real_sim){
            m.throughput, m.power_w, m.tm[PFLEX_TM_SM_CLOCK_MHZ], m.tm[PFLEX_TM_DRAM_ACTIVE],
            m.tm[PFLEX_TM_TENSOR_ACTIVE], m.tm[PFLEX_TM_SM_ACTIVE], m.tm[PFLEX_TM_MEM_COPY_UTIL]};
        const double res[] = {
            log(o->tokens_per_s / r->tokens_per_s) / PFLEX_CALIB_SIGMA_REAL_TPUT,
            (o->power_w / r->power_w - 1) / PFLEX_CALIB_SIGMA_REAL_P,
            (o->sm_clock_mhz / r->sm_clock_mhz - 1) / PFLEX_CALIB_SIGMA_REAL_CLK,
            (o->dram_active - r->dram_active) / PFLEX_CALIB_SIGMA_REAL_TM,
            (o->tensor_active - r->tensor_active) / PFLEX_CALIB_SIGMA_REAL_TM,
            (o->sm_active - r->sm_active) / PFLEX_CALIB_SIGMA_REAL_TM,
            (o->mem_copy_util - r->mem_copy_util) / 100 / PFLEX_CALIB_SIGMA_REAL_TM,
        };
        for (size_t k = 0; k < sizeof res / sizeof *res && out->n < PFLEX_CALIB_MAX_RESIDUALS; k++) {
            out->job[out->n] = PFLEX_CALIB_H200_FIRST + (int)i;
            out->r[out->n++] = res[k];
        }
        out->nreal = i + 1;
    }
    return 0;
}

/* --- the judge ------------------------------------------------------------- */

static double median3(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && v[k] < v[k - 1]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int pflex_calib_judge(const struct pflex_sim_fit *fit, struct pflex_calib_judge *out,
                      pflex_error_t *err)
{
    memset(out, 0, sizeof *out);
    double xs[64], ys[64], cs[3][64], cm[3][64];
    size_t nh = 0, nc[3] = {0};
    for (size_t g = 0; g < pflex_fleet_count() && g < 64; g++) {
        struct pflex_fleet_run r;
        struct pflex_sweep_point pts[PFLEX_FLEET_MAX_CAPS];
        if (pflex_fleet_get(g, &r) < 0)
            return pflex_error_set(err, "judge: no study group %zu", g);
        if (expect_sweep(&r.desc, fit, r.caps_w, r.ncaps, pts, err) < 0)
            return -1;
        struct pflex_pfi_ratio pr;
        if (pflex_pfi_ratio(pts, r.ncaps, NULL, 0, &pr, err) < 0)
            return -1;
        out->pfi_sim[g] = pr.valid ? pr.pfi : NAN;
        out->pfi_measured[g] = r.measured_pfi;
        out->split[g] = (int)r.split;
        out->n = g + 1;
        if (r.split != PFLEX_FLEET_MAIN || !isfinite(r.measured_pfi))
            continue;
        double sim = isfinite(out->pfi_sim[g]) ? out->pfi_sim[g] : 10;
        double e = sim - r.measured_pfi;
        out->headline_mae += fabs(e);
        out->headline_rmse += e * e;
        xs[nh] = sim;
        ys[nh++] = r.measured_pfi;
        int c = !r.is_moe ? 0 : r.is_finetune ? 2 : 1;
        cs[c][nc[c]] = sim;
        cm[c][nc[c]++] = r.measured_pfi;
    }
    if (nh > 0) {
        out->headline_mae /= nh;
        out->headline_rmse = sqrt(out->headline_rmse / nh);
        out->headline_rho = pflex_spearman(xs, ys, nh);
    }
    for (int c = 0; c < 3; c++) {
        out->cluster_median_sim[c] = median3(cs[c], nc[c]);
        out->cluster_median_measured[c] = median3(cm[c], nc[c]);
    }
    return 0;
}
