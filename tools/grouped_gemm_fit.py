# The grouped GEMMs' rate (docs/sim-model.md section 2): published bf16 grouped-GEMM kernel timings on
# Hopper (H100, one H200), each as a ratio to the rate the model's dense GEMM law gives a GEMM of the same
# rows per expert and expert width at the top clock, then fitted as a power law of the expert's size
# sqrt(hidden x expert width).  Only kernel timings enter; no step time, no PFI.  Prints the fit, its
# in-sample and leave-one-out errors, and the rival forms (one constant, rows per expert, both).
#
# usage: python3 tools/grouped_gemm_fit.py
import math

# The dense GEMM law of src/lib/sim/sim.c (gemm_work): eff_gemm (fitted, pflex_sim_fit_default) x
# width / (width + gemm_h0) x rows / (rows + gemm_m0), of GH100's 1070 TFLOP/s bf16 at 1980 MHz.
EFF_GEMM, GEMM_H0, GEMM_M0, PEAK_TFLOPS = 0.7746, 54.8, 63.9, 1070.0
SIZE_REF = 1024.0   # the fit's coefficient is stated at this expert size

# (source, kernel, rows per expert, hidden, expert width, measured TFLOP/s).  Rows per expert: the
# benchmark's tokens x top-k / experts (uniform routing) or its mean group length.
TIMINGS = [
    ("tgale96/grouped_gemm PR 37 (H100)", "CUTLASS SM90 cooperative, Qwen3-30B-A3B up_proj, 128 experts",
     512, 2048, 768, 160.5),
    ("ByteDance-Seed/VeOmni PR 460 (H100)", "torch._grouped_mm MoE forward with routing, H 2048, FFN 768, "
     "128 experts, top 8, 32768 tokens", 2048, 2048, 768, 242.12),
    ("ByteDance-Seed/VeOmni PR 460 (H100)", "torch._grouped_mm MoE forward with routing, H 2048, FFN 512, "
     "512 experts, top 10, 32768 tokens", 640, 2048, 512, 180.67),
    ("pytorch/ao PR 2490 (H100)", "torch._grouped_mm, Llama 4 17Bx16E w1: M 8192, K 5120, N 8192, 16 groups, "
     "1.31 ms", 512, 5120, 8192, 2 * 8192 * 5120 * 8192 / 1.31e-3 / 1e12),
    ("pytorch/ao PR 2490 (H100)", "torch._grouped_mm, Llama 4 17Bx16E w2: M 8192, K 8192, N 5120, 16 groups, "
     "1.26 ms", 512, 5120, 8192, 2 * 8192 * 8192 * 5120 / 1.26e-3 / 1e12),
    ("pytorch/pytorch PR 156203 (H200)", "torch._grouped_mm, 16 groups of 128000 x 7168 x 7168, 298.67 ms",
     128000, 7168, 7168, 2 * 16 * 128000 * 7168 * 7168 / 0.2986668 / 1e12),
]


def law_tflops(rows, width):
    return EFF_GEMM * width / (width + GEMM_H0) * rows / (rows + GEMM_M0) * PEAK_TFLOPS


def solve(a, b):
    n = len(b)
    a = [row[:] for row in a]
    b = b[:]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(a[r][c]))
        a[c], a[p], b[c], b[p] = a[p], a[c], b[p], b[c]
        for r in range(n):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c])]
                b[r] -= f * b[c]
    return [b[c] / a[c][c] for c in range(n)]


def ols(x, y):
    n = len(x[0])
    xtx = [[sum(r[i] * r[j] for r in x) for j in range(n)] for i in range(n)]
    return solve(xtx, [sum(r[i] * v for r, v in zip(x, y)) for i in range(n)]), xtx


FORMS = {
    "one constant": lambda m, h, w: [1.0],
    "rows per expert": lambda m, h, w: [1.0, math.log(m)],
    "expert size": lambda m, h, w: [1.0, math.log(math.sqrt(h * w) / SIZE_REF)],
    "expert size and rows": lambda m, h, w: [1.0, math.log(math.sqrt(h * w) / SIZE_REF), math.log(m)],
}


def main():
    y = []
    print("timing                                   rows  hidden width  size  TFLOP/s  law   ratio")
    for src, what, m, h, w, t in TIMINGS:
        r = t / law_tflops(m, w)
        y.append(math.log(r))
        print(f"{src:40s} {m:6d} {h:6d} {w:5d} {math.sqrt(h * w):5.0f} {t:7.1f} {law_tflops(m, w):5.0f}"
              f"  {r:.3f}")
    for name, f in FORMS.items():
        x = [f(m, h, w) for _, _, m, h, w, _ in TIMINGS]
        c, xtx = ols(x, y)
        res = [sum(a * b for a, b in zip(c, xi)) - yi for xi, yi in zip(x, y)]
        loo = []
        for k in range(len(y)):
            ck, _ = ols([x[i] for i in range(len(y)) if i != k], [y[i] for i in range(len(y)) if i != k])
            loo.append(abs(sum(a * b for a, b in zip(ck, x[k])) - y[k]))
        dof = len(y) - len(c)
        s2 = sum(e * e for e in res) / dof if dof > 0 else float("nan")
        # standard errors from the inverse of X'X (columns one at a time)
        se = []
        for j in range(len(c)):
            unit = [1.0 if i == j else 0.0 for i in range(len(c))]
            se.append(math.sqrt(s2 * solve(xtx, unit)[j]))
        coef = ", ".join(f"{v:+.3f} +- {s:.3f}" for v, s in zip(c, se))
        print(f"{name:22s} log-coefficients [{coef}]  |log error| in sample mean "
              f"{sum(map(abs, res)) / len(res):.3f}, leave one out mean {sum(loo) / len(loo):.3f} max "
              f"{max(loo):.3f}")
        if name == "expert size":
            print(f"  => ratio = {math.exp(c[0]):.3f} x (sqrt(hidden x width) / {SIZE_REF:.0f}) ^ {c[1]:.3f}, "
                  f"at most 1")


if __name__ == "__main__":
    main()
