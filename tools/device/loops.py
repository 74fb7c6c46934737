# Real LLM loops and two microbenchmarks, uncapped, on one NVIDIA GPU: what pflex's simulator is checked on.
#
# usage: python3 loops.py JOBS.json OUTDIR PFLEX_CMD...
#   JOBS.json: a list of {"name", "kind": "train"|"gemm"|"copy", "spec": {...}} (spec as the shared set's
#   train.py takes it: hidden, layers, ffn, heads, kv, seq, mb, task, experts, top_k, gen).
# For each job it builds the model on the GPU (random weights, random token ids, no download), warms up,
# then measures for MEASURE_S seconds while `PFLEX_CMD telemetry --nvml --csv` samples the GPU every 0.5 s
# through a read-only NVML (no setter can reach the driver).  It writes OUTDIR/NAME.steps (unix time,
# cumulative tokens, one line per step), OUTDIR/NAME.tm.csv (the telemetry) and one JSON line per job on
# stdout and in OUTDIR/results.jsonl.  Nothing here changes a power limit, clock or mode.
import gc, json, os, subprocess, sys, time, traceback
import torch

WARM_S = float(os.environ.get("WARM_S", "4"))
MEASURE_S = float(os.environ.get("MEASURE_S", "16"))


def build(spec):
    from transformers import LlamaConfig, LlamaForCausalLM, MixtralConfig, MixtralForCausalLM
    h, L, f, nh = spec["hidden"], spec["layers"], spec["ffn"], spec["heads"]
    kv = spec.get("kv", nh)
    common = dict(vocab_size=32000, hidden_size=h, intermediate_size=f, num_hidden_layers=L,
                  num_attention_heads=nh, num_key_value_heads=kv, max_position_embeddings=16384,
                  tie_word_embeddings=False)
    with torch.device("cuda"):
        if spec.get("experts"):
            cfg = MixtralConfig(num_local_experts=spec["experts"], num_experts_per_tok=spec.get("top_k", 2),
                                **common)
            cfg._attn_implementation = "sdpa"
            model = MixtralForCausalLM(cfg)
        else:
            cfg = LlamaConfig(**common)
            cfg._attn_implementation = "sdpa"
            model = LlamaForCausalLM(cfg)
    task = spec.get("task", "pretrain")
    if task == "lora":
        model = model.to(torch.bfloat16)
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32,
                                                 target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    if task == "inference":
        model = model.to(torch.bfloat16).eval()
    return model, cfg


def step_fn(job):
    """A closure that runs one step and returns the tokens (or bytes, flops) it did."""
    kind, spec = job.get("kind", "train"), job.get("spec", {})
    if kind == "gemm":
        n = spec.get("n", 8192)
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        reps = spec.get("reps", 20)
        def gemm():
            for _ in range(reps):
                torch.mm(a, b)
            return reps * 2 * n ** 3
        return gemm, {"unit": "flop"}
    if kind == "copy":
        n = spec.get("bytes", 2 << 30) // 2
        a = torch.empty(n, device="cuda", dtype=torch.bfloat16).normal_()
        b = torch.empty_like(a)
        reps = spec.get("reps", 50)
        def copy():
            for _ in range(reps):
                b.copy_(a)
            return reps * 2 * n * 2          # bytes read + written
        return copy, {"unit": "byte"}
    model, cfg = build(spec)
    nparam = sum(p.numel() for p in model.parameters())
    seq, mb = spec["seq"], spec["mb"]
    x = torch.randint(0, cfg.vocab_size, (mb, seq), device="cuda")
    if spec.get("task") == "inference":
        gen = spec.get("gen", 64)
        def infer():
            with torch.no_grad():
                model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=gen,
                               min_new_tokens=gen, do_sample=False, pad_token_id=0)
            return mb * gen
        return infer, {"unit": "token", "params": nparam}
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    def train():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=x, labels=x)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return mb * seq
    return train, {"unit": "token", "params": nparam}


def run(job, outdir, pflex):
    name = job["name"]
    torch.cuda.reset_peak_memory_stats()
    fn, info = step_fn(job)
    t0 = time.time()
    while time.time() - t0 < WARM_S:
        fn()
        torch.cuda.synchronize()
    nsamp = int(MEASURE_S / 0.5)
    tm = open(os.path.join(outdir, name + ".tm.csv"), "w")
    tel = subprocess.Popen(pflex + ["telemetry", "--nvml", "--job", name, "--samples", str(nsamp),
                                    "--interval-ms", "500", "--csv"], stdout=tm, stderr=subprocess.PIPE)
    steps, total = [], 0
    ts = time.time()
    with open(os.path.join(outdir, name + ".steps"), "w") as log:
        while time.time() - ts < MEASURE_S:
            total += fn()
            torch.cuda.synchronize()
            now = time.time()
            steps.append((now, total))
            print(f"{now:.4f} {total}", file=log)
    err = tel.communicate(timeout=30)[1].decode(errors="replace")
    tm.close()
    w = [s for s in steps if s[0] - ts > 0.2 * MEASURE_S]
    rate = (w[-1][1] - w[0][1]) / (w[-1][0] - w[0][0]) if len(w) > 1 else float("nan")
    dts = [b[0] - a[0] for a, b in zip(w, w[1:])]
    res = dict(name=name, kind=job.get("kind", "train"), spec=job.get("spec", {}), unit=info["unit"],
               rate_per_s=rate, steps=len(steps), step_s_median=sorted(dts)[len(dts) // 2] if dts else None,
               window=[ts, ts + MEASURE_S], params=info.get("params"),
               max_mem_gib=torch.cuda.max_memory_allocated() / 2 ** 30, telemetry_rc=tel.returncode,
               telemetry_err=err[-400:])
    del fn
    gc.collect()
    torch.cuda.empty_cache()
    return res


def main():
    jobs = json.load(open(sys.argv[1]))
    outdir, pflex = sys.argv[2], sys.argv[3:]
    os.makedirs(outdir, exist_ok=True)
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
                      "warm_s": WARM_S, "measure_s": MEASURE_S}), flush=True)
    for job in jobs:
        try:
            res = run(job, outdir, pflex)
        except Exception as e:            # one job's failure (say, out of memory) must not end the rest
            res = dict(name=job["name"], error=repr(e)[:400], trace=traceback.format_exc()[-800:])
            gc.collect()
            torch.cuda.empty_cache()
        line = json.dumps(res)
        print(line, flush=True)
        with open(os.path.join(outdir, "results.jsonl"), "a") as f:
            print(line, file=f)
        subprocess.run(["tar", "czf", os.path.join(os.environ.get("OUT", outdir), "h200.tar.gz"),
                        "-C", os.path.dirname(os.path.abspath(outdir)), os.path.basename(outdir)])


if __name__ == "__main__":
    main()
