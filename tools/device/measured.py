# The derived table of the H200 device runs: data/h200-device/measured.csv and a pflex job file per LLM loop.
#
# usage: python3 tools/device/measured.py [DIR]      (DIR: data/h200-device, holding run1/, run2/)
#
# Per job: the rate is the loop's own (results.jsonl, over the last 80 % of its window: tokens/s, or FLOP/s
# for ub_gemm*, bytes read+written per second for ub_copy*; the `unit` column says which); every other
# column is the mean of the job's `pflex telemetry --nvml --csv` samples taken while the loop ran: the first
# dropped (it can predate the load) and every sample after the loop's last step (NAME.steps) dropped (the
# sampler outlives the loop by about a second: its last two samples read the board falling to idle, 130-590 W
# and the top clock, which pulled a power-limited run's mean 15-25 W under what the board held).  The idle rows are the idle GPU's samples (no rate).  Writes both atomically (a temporary file
# renamed).  Deterministic: the same files give the same bytes.
import json, os, sys

FIELDS = [("power_w", "DCGM_FI_DEV_POWER_USAGE", 1, "%.1f"), ("sm_clock_mhz", "DCGM_FI_DEV_SM_CLOCK", 1, "%.0f"),
          ("dram_active", "DCGM_FI_PROF_DRAM_ACTIVE", 1, "%.3f"),
          ("tensor_active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1, "%.3f"),
          ("sm_active", "DCGM_FI_PROF_SM_ACTIVE", 1, "%.3f"), ("mem_copy_util", "DCGM_FI_DEV_MEM_COPY_UTIL", 1, "%.1f")]


def fail(where, what):
    print(f"{where}: {what}", file=sys.stderr)
    sys.exit(2)


def last_step(path):
    """The unix time of a loop's last step (NAME.steps: time, cumulative count), or None without the file."""
    try:
        lines = open(path).read().split("\n")
    except OSError:
        return None
    t = None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        p = line.split()
        try:
            t = max(t or 0.0, float(p[0]))
        except (ValueError, IndexError):
            fail(f"{path}:{n}", "expected: unix time, cumulative count")
    return t


def means(path, until=None):
    """Per field, the mean of the samples after the first and (with until) at or before until."""
    by = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            p = line.rstrip("\n").split(",")
            if n == 1:
                if p[:7] != ["job", "host", "gpu", "uuid", "time_s", "field", "value"]:
                    fail(f"{path}:1", "expected the header job,host,gpu,uuid,time_s,field,value")
                continue
            if len(p) != 7:
                fail(f"{path}:{n}", f"expected 7 fields, got {len(p)}")
            try:
                t, v = float(p[4]), float(p[6]) if p[6] != "" else None
            except ValueError:
                fail(f"{path}:{n}", "time_s or value is not a number")
            if v is not None:
                by.setdefault(p[5], []).append((t, v))
    out = {}
    for name, field, _, _ in FIELDS:
        s = [(t, v) for t, v in sorted(by.get(field, []))[1:] if until is None or t <= until]
        if not s:
            fail(path, f"no samples of {field} after the first and within the loop's steps")
        out[name] = sum(v for _, v in s) / len(s)
    return out


def job_file(name, spec):
    """The pflex job file of a loop (docs/job-format.md), as the shared set's jobs/ are written."""
    task = spec.get("task", "pretrain")
    model = {"layers": spec["layers"], "hidden": spec["hidden"], "heads": spec["heads"],
             "kv_heads": spec.get("kv", spec["heads"]), "ffn_hidden": spec["ffn"], "vocab": 32000}
    if spec.get("experts"):
        model["experts"], model["top_k"] = spec["experts"], spec.get("top_k", 2)
    batch = {"seq_len": spec["seq"], "micro_batch": spec["mb"], "global_batch": spec["mb"]}
    if task == "inference":
        batch["gen_len"] = spec.get("gen", 64)
    doc = {"name": name, "gpu": "H200", "gpus": 1, "task": task, "model": model, "batch": batch,
           "parallel": {"tp": 1, "pp": 1, "zero": 0}, "eager": True}
    return json.dumps(doc, separators=(",", ":")) + "\n"


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "data/h200-device"
    rows = ["# Real uncapped loops on one NVIDIA H200 (700 W limit, never changed), 2026-12-04; see README.md.",
            "# Written by tools/device/measured.py: tokens_per_s is the loop's own rate over the last 80 % of its",
            "# window (results.jsonl) in the unit the `unit` column names (token; flop: FLOP/s of ub_gemm*; byte:",
            "# bytes read+written per second of ub_copy*); the other columns are means of the pflex telemetry",
            "# --nvml samples (0.5 s apart) while the loop ran (the first and those after its last step dropped).  size: a microbenchmark's n (GEMM n x n x n, bf16)",
            "# or buffer bytes (copy).  run: which of the two runs (one machine).",
            "job,tokens_per_s,power_w,sm_clock_mhz,dram_active,tensor_active,sm_active,mem_copy_util,unit,size,run"]
    for run in ("run1", "run2"):
        d = os.path.join(top, run)
        res = os.path.join(d, "results.jsonl")
        try:
            lines = open(res).read().splitlines()
        except OSError as e:
            fail(res, e.strerror)
        for n, line in enumerate(lines, 1):
            try:
                r = json.loads(line)
            except ValueError:
                fail(f"{res}:{n}", "not a JSON object")
            if "error" in r or not isinstance(r.get("rate_per_s"), (int, float)):
                fail(f"{res}:{n}", f"job {r.get('name')} has no rate")
            m = means(os.path.join(d, r["name"] + ".tm.csv"), last_step(os.path.join(d, r["name"] + ".steps")))
            cells = [r["name"], "%.1f" % r["rate_per_s"] if r["unit"] != "token" else "%.0f" % r["rate_per_s"]]
            cells += [fmt % m[c] for c, _, _, fmt in FIELDS]
            size = r["spec"].get("n", r["spec"].get("bytes", "")) if r["kind"] != "train" else ""
            cells += [r["unit"], str(size), run]
            rows.append(",".join(cells))
            if r["kind"] == "train" and not r["name"].endswith("_r2"):
                write_atomic(os.path.join(top, "jobs", r["name"] + ".json"), job_file(r["name"], r["spec"]))
        m = means(os.path.join(d, "idle.tm.csv"))
        rows.append(",".join(["idle", ""] + [fmt % m[c] for c, _, _, fmt in FIELDS] + ["none", "", run]))
    write_atomic(os.path.join(top, "measured.csv"), "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
