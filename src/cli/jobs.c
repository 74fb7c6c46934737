/* jobs.c — pflex jobs: which job holds which GPU, from Slurm's squeue and
 * `scontrol show job -d` output or a job map CSV (docs/slurm.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "pflex/outfile.h"
#include "pflex/slurm.h"

static const char help[] =
    "usage: pflex jobs [--slurm-squeue FILE] [--slurm-scontrol FILE] [--map FILE]\n"
    "                  [--json | --csv] [--out FILE]\n"
    "\n"
    "The job map: each running job's hosts and GPU indices, read from what\n"
    "Slurm's commands print (recorded output; pflex runs no Slurm command):\n"
    "\n"
    "  --slurm-squeue FILE    squeue --noheader -o '%A|%T|%D|%N|%j'  (hosts only)\n"
    "                         or squeue --json                      (with GPUs)\n"
    "  --slurm-scontrol FILE  scontrol show job -d  (or -o): GPU indices from\n"
    "                         the 'Nodes=... GRES=gpu:h200:8(IDX:0-7)' lines\n"
    "  --map FILE             a job map CSV (job,name,host,gpu), as --csv writes\n"
    "\n"
    "Give one or more; a job in two of them is one job (an error where they\n"
    "disagree).  FILE '-' is standard input.  Only RUNNING jobs are mapped.\n"
    "\n"
    "  --csv         the job map CSV: job,name,host,gpu, one row per GPU, sorted\n"
    "                by job id, host, gpu; gpu empty where Slurm named the host\n"
    "                but not the GPU indices\n"
    "  --json        {\"jobs\": [{\"job\", \"name\", \"hosts\": [{\"host\", \"gpus\",\n"
    "                \"gpus_unknown\"}]}], \"rows\", \"skipped\"}\n"
    "  --out FILE    write there (atomically: a temporary file renamed) instead of\n"
    "                to standard output\n"
    "\n"
    "EXAMPLES\n"
    "  squeue --noheader -o '%A|%T|%D|%N|%j' > q.txt\n"
    "  scontrol show job -d > s.txt\n"
    "  pflex jobs --slurm-squeue q.txt --slurm-scontrol s.txt\n"
    "  pflex jobs --slurm-scontrol tests/data/slurm/scontrol_detail.txt --csv\n"
    "  squeue --json | pflex jobs --slurm-squeue - --json\n"
    "  pflex jobs --slurm-scontrol s.txt --csv --out jobmap.csv\n"
    "  pflex jobs --map jobmap.csv --json\n"
    "\n"
    "Exit: 0 ok, 1 internal error, 2 bad usage or input (file:line named).\n";

/* "0-3,5" for sorted indices g[0..n). */
static void print_ranges(FILE *f, const int *g, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && g[j + 1] == g[j] + 1)
            j++;
        fprintf(f, "%s%d", i ? "," : "", g[i]);
        if (j > i)
            fprintf(f, "-%d", g[j]);
        i = j + 1;
    }
}

/* Walks rows by (job, host) groups: rows [a, b) share job and host. */
static size_t group_end(const struct pflex_jobmap_row *r, size_t n, size_t a)
{
    size_t b = a + 1;
    while (b < n && !strcmp(r[b].job, r[a].job) && !strcmp(r[b].host, r[a].host))
        b++;
    return b;
}

static int write_table(FILE *f, const struct pflex_jobmap_row *r, size_t n, size_t skipped)
{
    int wj = 3, wn = 4, wh = 4;
    for (size_t i = 0; i < n; i++) {
        int lj = (int)strlen(r[i].job), ln = (int)strlen(r[i].name), lh = (int)strlen(r[i].host);
        if (lj > wj)
            wj = lj;
        if (ln > wn)
            wn = ln > 40 ? 40 : ln;
        if (lh > wh)
            wh = lh;
    }
    fprintf(f, "%-*s  %-*s  %-*s  gpus\n", wj, "job", wn, "name", wh, "host");
    size_t jobs = 0, hosts = 0, gpus = 0, unknown = 0;
    int *g = malloc((n ? n : 1) * sizeof *g);
    if (!g)
        return -1;
    for (size_t a = 0; a < n;) {
        size_t b = group_end(r, n, a), k = 0;
        int unk = 0;
        if (a == 0 || strcmp(r[a].job, r[a - 1].job))
            jobs++;
        for (size_t i = a; i < b; i++) {
            if (r[i].gpu < 0)
                unk = 1;
            else
                g[k++] = r[i].gpu;
        }
        fprintf(f, "%-*s  %-*.*s  %-*s  ", wj, r[a].job, wn, 40, r[a].name, wh, r[a].host);
        print_ranges(f, g, k);
        if (unk)
            fputs(k ? ",?" : "?", f);
        fputc('\n', f);
        hosts++;
        gpus += k;
        unknown += (size_t)unk;
        a = b;
    }
    free(g);
    fprintf(f, "\n%zu running job%s, %zu job-host pair%s, %zu GPUs", jobs, jobs == 1 ? "" : "s",
            hosts, hosts == 1 ? "" : "s", gpus);
    if (unknown)
        fprintf(f, "; '?': %zu host%s whose GPU indices Slurm did not give", unknown,
                unknown == 1 ? "" : "s");
    if (skipped)
        fprintf(f, "; %zu job%s not running, left out", skipped, skipped == 1 ? "" : "s");
    fputc('\n', f);
    return ferror(f) ? -1 : 0;
}

static int write_json(FILE *f, const struct pflex_jobmap_row *r, size_t n, size_t skipped)
{
    json_t *doc = json_object(), *jobs = json_array(), *job = NULL, *hosts = NULL;
    if (!doc || !jobs)
        goto oom;
    json_object_set_new(doc, "jobs", jobs);
    for (size_t a = 0; a < n;) {
        size_t b = group_end(r, n, a);
        if (a == 0 || strcmp(r[a].job, r[a - 1].job)) {
            job = json_object();
            hosts = json_array();
            if (!job || !hosts || json_array_append_new(jobs, job) < 0)
                goto oom;
            json_object_set_new(job, "job", json_string(r[a].job));
            json_object_set_new(job, "name", json_string(r[a].name));
            json_object_set_new(job, "hosts", hosts);
        }
        json_t *h = json_object(), *g = json_array();
        if (!h || !g || json_array_append_new(hosts, h) < 0)
            goto oom;
        int unk = 0;
        for (size_t i = a; i < b; i++) {
            if (r[i].gpu < 0)
                unk = 1;
            else
                json_array_append_new(g, json_integer(r[i].gpu));
        }
        json_object_set_new(h, "host", json_string(r[a].host));
        json_object_set_new(h, "gpus", g);
        json_object_set_new(h, "gpus_unknown", json_boolean(unk));
        a = b;
    }
    json_object_set_new(doc, "rows", json_integer((json_int_t)n));
    json_object_set_new(doc, "skipped", json_integer((json_int_t)skipped));
    int rc = json_dumpf(doc, f, CLI_JSON_FLAGS);
    json_decref(doc);
    if (rc == 0)
        fputc('\n', f);
    return rc < 0 || ferror(f) ? -1 : 0;
oom:
    json_decref(doc);
    return -1;
}

/* --out: buf written atomically (pflex/outfile.h), never over an input. */
static int write_out(const char *path, const char *const *inputs, const char *buf, size_t len)
{
    pflex_outfile_t *of;
    pflex_error_t err;
    if (pflex_outfile_begin(path, inputs, &of, &err) < 0) {
        cli_error("jobs", "--out %s", err.text);
        return cli_input_exit(&err);
    }
    fwrite(buf, 1, len, pflex_outfile_stream(of));
    if (pflex_outfile_commit(of, &err) < 0) {
        cli_error("jobs", "%s", err.text);
        return PFLEX_EXIT_INTERNAL;
    }
    return PFLEX_EXIT_OK;
}

int cmd_jobs(int argc, char **argv)
{
    const char *squeue = NULL, *scontrol = NULL, *map = NULL, *out = NULL;
    int json = 0, csv = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return cli_help(help);
        else if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--csv"))
            csv = 1;
        else if (!strcmp(a, "--slurm-squeue"))
            dst = &squeue;
        else if (!strcmp(a, "--slurm-scontrol"))
            dst = &scontrol;
        else if (!strcmp(a, "--map"))
            dst = &map;
        else if (!strcmp(a, "--out"))
            dst = &out;
        else
            return cli_usage_error("jobs", "unknown argument '%s'", a);
        if (dst) {
            if (i + 1 >= argc)
                return cli_usage_error("jobs", "%s needs a file", a);
            if (*dst)
                return cli_usage_error("jobs", "%s given twice", a);
            *dst = argv[++i];
        }
    }
    if (json && csv)
        return cli_usage_error("jobs", "--json and --csv: choose one");
    if (!squeue && !scontrol && !map)
        return cli_usage_error("jobs", "no input: give --slurm-squeue, --slurm-scontrol or "
                                       "--map");
    int stdins = (squeue && !strcmp(squeue, "-")) + (scontrol && !strcmp(scontrol, "-"))
                 + (map && !strcmp(map, "-"));
    if (stdins > 1)
        return cli_usage_error("jobs", "only one input can be standard input ('-')");
    pflex_jobmap_t *m = pflex_jobmap_create();
    pflex_error_t err;
    if (!m) {
        cli_error("jobs", "out of memory");
        return PFLEX_EXIT_INTERNAL;
    }
    if ((squeue && pflex_slurm_squeue_read_file(m, squeue, &err) < 0)
        || (scontrol && pflex_slurm_scontrol_read_file(m, scontrol, &err) < 0)
        || (map && pflex_jobmap_csv_read_file(m, map, &err) < 0)) {
        fprintf(stderr, "pflex jobs: %s\n", err.text);
        pflex_jobmap_destroy(m);
        return PFLEX_EXIT_BAD_INPUT;
    }
    const struct pflex_jobmap_row *rows;
    long n = pflex_jobmap_rows(m, &rows, &err);
    if (n < 0) {
        fprintf(stderr, "pflex jobs: %s\n", err.text);
        pflex_jobmap_destroy(m);
        return PFLEX_EXIT_BAD_INPUT;
    }
    /* the whole output in memory first: nothing is written unless all of it is */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = -1;
    if (f) {
        size_t skipped = pflex_jobmap_skipped(m);
        rc = csv ? pflex_jobmap_write_csv(rows, (size_t)n, f)
                 : json ? write_json(f, rows, (size_t)n, skipped)
                        : write_table(f, rows, (size_t)n, skipped);
        if (fclose(f) != 0)
            rc = -1;
    }
    pflex_jobmap_destroy(m);
    if (rc < 0) {
        cli_error("jobs", "out of memory");
        free(buf);
        return PFLEX_EXIT_INTERNAL;
    }
    if (out) {
        const char *given[] = {squeue, scontrol, map}, *inputs[4] = {NULL};
        for (size_t i = 0, k = 0; i < 3; i++)
            if (given[i])
                inputs[k++] = given[i];
        rc = write_out(out, inputs, buf, len);
    } else {
        rc = fwrite(buf, 1, len, stdout) == len && fflush(stdout) == 0 ? PFLEX_EXIT_OK
                                                                       : PFLEX_EXIT_INTERNAL;
        if (rc != PFLEX_EXIT_OK)
            cli_error("jobs", "standard output: %s", strerror(errno));
    }
    free(buf);
    return rc;
}
